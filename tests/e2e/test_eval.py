"""End-to-end: `nanoconv eval` on a model with known weights over a subset of t10k.

The model is a nearest-class-mean classifier built here from the *training*
split (a dense layer whose rows are the class means), followed by a small
random convolutional model. The test computes the correctness itself with numpy
and checks the printed format line by line.
"""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

try:
    import numpy as np
except ImportError:
    ncpy.skip("numpy missing; install python3-numpy")

d = ncpy.data_dir()
if not os.path.exists(os.path.join(d, "t10k-images-idx3-ubyte.gz")):
    ncpy.skip(f"no Fashion-MNIST data in {d}; install dataset-fashion-mnist")

chk = ncpy.Checker("test_eval")
test_x = ncpy.read_idx(os.path.join(d, "t10k-images-idx3-ubyte.gz")).astype(np.float64)
test_y = ncpy.read_idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
train_x = ncpy.read_idx(os.path.join(d, "train-images-idx3-ubyte.gz")).astype(np.float64) / 255.0
train_y = ncpy.read_idx(os.path.join(d, "train-labels-idx1-ubyte.gz")).astype(np.int64)

FORMAT = [r"Loading fashion-mnist data\.\.\. done", r"Loading model\.\.\. done"]


def expected_correct(logits, labels):
    """Correct count, and how many images are too close to call (top two within float32 rounding)."""
    top2 = np.sort(logits, axis=1)[:, -2:]
    close = (top2[:, 1] - top2[:, 0]) <= 1e-4 * np.abs(top2[:, 1]) + 1e-6
    return int((logits.argmax(axis=1) == labels).sum()), int(close.sum())


def check_eval(name, model, n, logits, n_conv):
    labels = test_y[:n]
    correct, close = expected_correct(logits, labels)
    p = ncpy.run(["eval", "--model", model, "-n", str(n), "--backend", "cpu-ref"])
    lines = p.stdout.strip().split("\n")
    pattern = FORMAT + [r"Op Time: \d+\.\d{6}"] * n_conv + [r"Total Time: \d+\.\d{6}",
                                                            rf"Correctness: \d\.\d{{4}} Model: {re.escape(name)}"]
    chk.check(len(lines) == len(pattern), f"{name}: {len(lines)} lines, expected {len(pattern)}:\n{p.stdout}")
    for line, pat in zip(lines, pattern):
        chk.check(re.fullmatch(pat, line) is not None, f"{name}: line {line!r} does not match {pat!r}")
    got = float(lines[-1].split()[1])
    lo, hi = (correct - close) / n, (correct + close) / n
    chk.check(lo - 5e-5 <= got <= hi + 5e-5, f"{name}: printed {got}, numpy says {correct}/{n} (+-{close})")
    print(f"{name}: nanoconv {got:.4f}, numpy {correct / n:.4f} ({close} near-ties)")

    q = ncpy.run(["eval", "--model", model, "-n", str(n), "--backend", "cpu-ref", "--json"])
    j = json.loads(q.stdout)
    chk.check(j["n"] == n and j["model"] == name and len(j["op_times"]) == n_conv, f"{name}: json {j}")
    chk.check(abs(j["correctness"] - got) < 5e-5, f"{name}: json correctness {j['correctness']} vs {got}")


with tempfile.TemporaryDirectory() as tmp:
    # 1. Class means of the training split, as a dense layer over unit-scaled pixels.
    means = np.stack([train_x[train_y == c].reshape(-1, 784).mean(axis=0) for c in range(10)])
    w = means / np.linalg.norm(means, axis=1, keepdims=True)
    b = np.zeros(10)
    model = os.path.join(tmp, "means.safetensors")
    ncpy.write_safetensors(model, {"1.weight": w.astype(np.float32), "1.bias": b.astype(np.float32)},
                           {"nanoconv.name": "class-means", "nanoconv.input": "1x28x28 unit",
                            "nanoconv.layers": "flatten; dense 10 bias"})
    n = 2000
    x = (test_x[:n].reshape(n, 784) / 255.0).astype(np.float32).astype(np.float64)
    check_eval("class-means", model, n, x @ w.astype(np.float32).astype(np.float64).T, 0)

    # 2. A random convolutional model: conv 4 5; relu; maxpool 2 2; flatten; dense 10 bias.
    rng = np.random.default_rng(7)
    k = rng.normal(0, 0.2, (4, 1, 5, 5)).astype(np.float32)
    w2 = rng.normal(0, 0.05, (10, 4 * 12 * 12)).astype(np.float32)
    b2 = rng.normal(0, 0.1, 10).astype(np.float32)
    model2 = os.path.join(tmp, "conv.safetensors")
    ncpy.write_safetensors(model2, {"0.weight": k, "4.weight": w2, "4.bias": b2},
                           {"nanoconv.name": "random-conv", "nanoconv.input": "1x28x28 unit",
                            "nanoconv.layers": "conv 4 5; relu; maxpool 2 2; flatten; dense 10 bias"})
    n = 500
    x = test_x[:n] / 255.0
    x = x.astype(np.float32).astype(np.float64)
    y = np.zeros((n, 4, 24, 24))
    for p in range(5):
        for q in range(5):
            y += x[:, None, p:p + 24, q:q + 24] * k[None, :, 0, p, q, None, None]
    y = np.maximum(y, 0).reshape(n, 4, 12, 2, 12, 2).max(axis=(3, 5)).reshape(n, -1)
    check_eval("random-conv", model2, n, y @ w2.T.astype(np.float64) + b2, 1)

    # 3. The whole test set runs by default and -n counts from the start.
    p = ncpy.run(["eval", "--model", model, "--backend", "cpu-ref", "--json"])
    chk.check(json.loads(p.stdout)["n"] == 10000, "eval without -n evaluates all 10000 images")

chk.finish()
