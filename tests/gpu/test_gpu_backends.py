"""The GPU backends give cpu-ref's answers: every course architecture, all 10000 test images.

For each architecture of the course, as models/README.md's table has it (seeded weights: the zoo did not exist
yet), runs `nanoconv predict` on t10k with --backend cpu-ref, cuda and cudnn and checks that
  - the predictions are identical (any disagreement is counted and shown with the reference's top-2 gap);
  - the logits agree: per image, |gpu - ref| <= 1e-4 * (1 + max_j |ref_j|).
    Why this tolerance: each logit is a sum of hundreds to tens of thousands of fp32 products. The GPU
    sums in another order (cuDNN, cuBLAS) or with fused multiply-adds (our kernels), and CUDA's
    tanhf/expf differ from glibc's by an ulp or two; together that moves a logit by ~1e-6 of the
    magnitude of its row, while a wrong index or a race moves it by O(1). The scale is the row's
    largest logit, not the logit itself, because cancellation can make one logit small while its
    rounding error stays proportional to the terms it was summed from. Where the model ends in
    softmax the "logits" are its outputs, in 0..1, and the bound is then 2e-4 at most.
Then: --chunk 777 gives the default's predictions (cuda: bit-identical logits too; cudnn may pick
another algorithm for another batch size, so within the tolerance), `eval --split train` on
60000 images agrees between cuda and cudnn, and the error paths (unknown kernel version, out of
device memory) fail cleanly with the right exit status.

Seeded random weights on raw 0..255 pixels saturate tanh: the accuracy is meaningless, but the
comparison is not. Skips (77) where nanoconv was built without cuda or there is no GPU.
Environment: NANOCONV (the CLI), NANOCONV_DATA (the Fashion-MNIST .gz files).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

exe = ncpy.nanoconv()
backends = ncpy.require_gpu()
data, images, labels = ncpy.test_split()
gpu_backends = [b for b in ("cuda", "cudnn") if b in backends]

# The course's architectures (models/README.md's table). Two end without softmax so that raw logits are compared too.
ARCHS = [
    ("fashion-2017", "1x28x28 raw",
     "conv 50 5; tanh; maxpool 2 2; flatten; dense 500 bias; tanh; dense 10 bias; softmax"),
    ("fashion-2018-spring", "1x64x64 raw",
     "conv 6 5; tanh; maxpool 2 2; conv 16 5; flatten; dense 140 bias; tanh; dense 10 bias; softmax"),
    ("fashion-2018-fall", "1x72x72 raw",
     "conv 12 7; tanh; maxpool 2 2; conv 24 7; flatten; dense 160 bias; tanh; dense 10 bias"),
    ("fashion-2019-spring", "1x48x48 raw",
     "conv 6 5; tanh; maxpool 2 2; conv 16 5; flatten; dense 140 bias; tanh; dense 10 bias; softmax"),
    ("fashion-2019-fall", "1x70x70 raw",
     "conv 12 5; tanh; maxpool 2 2; conv 24 5; flatten; dense 160 bias; tanh; dense 10 bias"),
    ("fashion-2020", "1x86x86 raw",
     "conv 4 7; relu; maxpool 2 2; conv 16 7; relu; maxpool 4 4; flatten; dense 32 bias; relu; dense 10 bias; softmax"),
]
N, CLASSES = 10000, 10
ATOL = RTOL = 1e-4

chk = ncpy.Checker("test_gpu_backends")
tmp = tempfile.mkdtemp(prefix="nc-gpu-")


def run(args):
    t0 = time.time()
    p = subprocess.run([exe] + args, capture_output=True, text=True)
    return p, time.time() - t0


def predict(model, backend, extra=()):
    """Predictions (list) and logits (array of N * CLASSES floats), or (None, None) with the failure checked."""
    out = os.path.join(tmp, f"logits-{backend}.f32")
    p, secs = run(["predict", "--model", model, "--images", images, "--labels", labels, "--logits", out,
                   "--backend", backend, "--json", *extra])
    chk.check(p.returncode == 0, f"predict --backend {backend} {' '.join(extra)}: exit {p.returncode}: {p.stderr}")
    if p.returncode != 0:
        return None, None
    j = json.loads(p.stdout)
    pred = [int(x) for x in j["predictions"]]
    logits = ncpy.read_f32(out)
    ops = ", ".join(f"{t * 1e3:.3f} ms" + (f" ({n})" if n else "") for t, n in zip(j["op_times"], j["op_notes"]))
    print(f"  {backend:8} {' '.join(extra):12} {secs:6.2f} s  Op Times: {ops}")
    return pred, logits


def compare(name, what, ref_pred, ref_logits, pred, logits, exact=False):
    chk.check(len(pred) == N and len(logits) == N * CLASSES, f"{name} {what}: {len(pred)} predictions")
    if len(pred) != N or len(logits) != N * CLASSES:
        return
    differ = [i for i in range(N) if pred[i] != ref_pred[i]]
    for i in differ[:10]:
        row = sorted(ref_logits[i * CLASSES:(i + 1) * CLASSES])
        print(f"    image {i}: ref {ref_pred[i]}, {what} {pred[i]}, ref top-2 gap {row[-1] - row[-2]:.3g}")
    chk.check(not differ, f"{name} {what}: {len(differ)} of {N} predictions differ from the reference")
    worst, worst_i, bad = 0.0, -1, 0
    for i in range(N):
        row = ref_logits[i * CLASSES:(i + 1) * CLASSES]
        bound = ATOL + RTOL * max(abs(v) for v in row)
        for j in range(CLASSES):
            d = abs(logits[i * CLASSES + j] - row[j])
            if not d <= (0.0 if exact else bound):  # NaN fails
                bad += 1
            if d > worst or d != d:
                worst, worst_i = d, i
    rule = "bit for bit" if exact else f"{ATOL:g} * (1 + max|row|)"
    chk.check(bad == 0, f"{name} {what}: {bad} logits outside {rule} (largest error {worst:.3g} at image {worst_i})")
    print(f"  {name} {what}: {len(differ)} predictions differ, largest logit error {worst:.3g}")


for name, inp, layers in ARCHS:
    model = os.path.join(tmp, f"{name}.safetensors")
    p, _ = run(["init", "--name", name, "--input", inp, "--layers", layers, "--seed", "2024", "-o", model])
    chk.check(p.returncode == 0, f"init {name}: {p.stderr}")
    if p.returncode != 0:
        continue
    print(f"{name}:")
    ref_pred, ref_logits = predict(model, "cpu-ref")
    if ref_pred is None:
        continue
    for b in gpu_backends:
        pred, logits = predict(model, b)
        if pred is not None:
            compare(name, b, ref_pred, ref_logits, pred, logits)
        if name == "fashion-2019-spring" and pred is not None:
            pred2, logits2 = predict(model, b, ("--chunk", "777"))
            if pred2 is not None:
                compare(name, f"{b} --chunk 777 vs default", pred, logits, pred2, logits2, exact=(b == "cuda"))

# The training split: 60000 images, more than one chunk with --chunk, the same answer on both GPU backends.
model = os.path.join(tmp, "fashion-2017.safetensors")
if not os.path.exists(os.path.join(data, "train-images-idx3-ubyte.gz")):
    # The device machine gets the data as files carried with the tree, and the training split (26 MB) may not be.
    print(f"SKIP (part): no training split in {data}: eval --split train not checked")
elif os.path.exists(model):
    lines = {}
    for b, extra in [(b, ()) for b in gpu_backends] + [("cuda", ("--chunk", "7777"))]:
        p, secs = run(["eval", "--model", model, "--split", "train", "--backend", b, *extra])
        chk.check(p.returncode == 0, f"eval --split train --backend {b}: exit {p.returncode}: {p.stderr}")
        last = p.stdout.strip().split("\n")[-1] if p.returncode == 0 else ""
        chk.check(re.fullmatch(r"Correctness: \d\.\d{4} Model: fashion-2017", last) is not None,
                  f"eval --split train --backend {b}: last line {last!r}")
        print(f"train {b} {' '.join(extra)}: {last} ({secs:.2f} s)")
        lines[(b, extra)] = last
    chk.check(len(set(lines.values())) == 1, f"train correctness differs between runs: {lines}")

# Error paths: a bad kernel version is a usage error (2); running out of device memory is a failure (1).
if os.path.exists(model):
    p, _ = run(["eval", "--model", model, "-n", "100", "--backend", "cuda", "--conv-kernel", "99"])
    chk.check(p.returncode == 2 and "valid: 1 (naive)" in p.stderr, f"--conv-kernel 99: exit {p.returncode}: {p.stderr}")
huge = os.path.join(tmp, "huge.safetensors")
p, _ = run(["init", "--name", "huge", "--input", "1x4096x4096 raw",
            "--layers", "conv 64 3; maxpool 4094 4094; flatten; dense 10 bias", "-o", huge])
chk.check(p.returncode == 0, f"init huge: {p.stderr}")
p, _ = run(["eval", "--model", huge, "-n", "64", "--chunk", "64", "--backend", "cuda"])
chk.check(p.returncode == 1 and "out of device memory" in p.stderr,
          f"64 images of 8.6 GB each: exit {p.returncode}: {p.stderr}")
print(f"out of memory: exit {p.returncode}: {p.stderr.strip()}")

chk.finish()
