"""End-to-end: `nanoconv train` on a few hundred training images with a small network.

Checks the usage errors (exit 2 with a message), the per-epoch lines and the summary, that the written model
evaluates with `nanoconv eval` near the correctness the trainer reported, that a run is a function of its seed
(the same file, bit for bit, with 1 or 2 threads), --init, an input larger than the images, and that no
temporary file is left beside the output.
"""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

d = ncpy.data_dir()
if not os.path.exists(os.path.join(d, "train-images-idx3-ubyte.gz")):
    ncpy.skip(f"no Fashion-MNIST data in {d}; install dataset-fashion-mnist")

chk = ncpy.Checker("test_train")
backend = "cpu" if re.search(r"^backends:.* cpu( |$)", ncpy.run(["--version"]).stdout, re.M) else "cpu-ref"
LAYERS = "conv 4 5; tanh; maxpool 2 2; flatten; dense 10 bias; softmax"
BASE = ["train", "--arch-input", "1x28x28 raw", "--layers", LAYERS, "--name", "tiny", "--limit", "600",
        "--batch", "50", "--epochs", "2", "--lr", "0.01"]


def failing(args, fragment):
    p = ncpy.run(args, check=False)
    chk.check(p.returncode == 2, f"{args}: exit {p.returncode}, expected 2\n{p.stderr}")
    chk.check(fragment in p.stderr, f"{args}: stderr {p.stderr!r} lacks {fragment!r}")


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "tiny.safetensors")

    p = ncpy.run(["train", "--help"])
    chk.check("--arch-input" in p.stdout and "--optimizer" in p.stdout, "train --help lists the options")

    failing(["train", "--arch-input", "1x28x28 raw", "--layers", LAYERS, "--name", "x"], "-o FILE is required")
    failing(BASE + ["-o", out, "--optimizer", "rmsprop"], "--optimizer takes adam or sgd")
    failing(BASE + ["-o", out, "--lr", "-1"], "--lr takes a number")
    failing(BASE + ["-o", out, "--schedule", "linear"], "--schedule takes")
    failing(["train", "--arch-input", "1x28x28 raw", "--layers", "conv 0 5; flatten; dense 10", "--name", "x",
             "-o", out], "layer 0")
    failing(["train", "--arch-input", "1x28x28 raw", "--layers", "flatten; dense 4 bias; softmax", "--name", "x",
             "--limit", "100", "-o", out], "is not below the model's 4 classes")
    failing(["train", "--init", out, "--layers", LAYERS, "-o", out], "--init takes the architecture")
    failing(BASE + ["-o", "/nonexistent-dir/x.safetensors"], "cannot write to folder")
    failing(BASE + ["-o", out, "--data", os.path.join(tmp, "no-such-dir")], "no-such-dir")
    chk.check(not os.path.exists(out), "no output after failures")

    # A short run: one line per epoch on stderr (not a terminal), the summary on stdout.
    p = ncpy.run(BASE + ["-o", out, "--seed", "3", "--threads", "2"])
    epochs = re.findall(r"epoch (\d)/2: loss (\d+\.\d+), (\d+) images/s, .* t10k correctness (\d\.\d{4})", p.stderr)
    chk.check(len(epochs) == 2, f"two epoch lines in:\n{p.stderr}")
    chk.check("\r" not in p.stderr, "no progress bar when stderr is not a terminal")
    m = re.search(r"trained tiny: 2 epochs of 600 images in [\d.]+ s \((\d+) images/s training\), loss [\d.]+, "
                  r"t10k correctness (\d\.\d{4}); wrote ", p.stdout)
    chk.check(m is not None, f"summary line in:\n{p.stdout}")
    chk.check(os.path.exists(out), "model written")
    chk.check(sorted(os.listdir(tmp)) == ["tiny.safetensors"], f"only the model in the folder: {os.listdir(tmp)}")
    if epochs and m:
        reported = float(epochs[-1][3])
        chk.check(float(epochs[-1][1]) < float(epochs[0][1]), f"loss falls: {epochs}")
        chk.check(reported > 0.6, f"600 images give a model better than chance: {reported}")
        e = ncpy.run(["eval", "--model", out, "--backend", backend])
        got = float(re.search(r"Correctness: (\d\.\d{4}) Model: tiny", e.stdout).group(1))
        # The trainer evaluates with its own forward (pixels / 255 and a rational tanh), eval with a backend's.
        chk.check(abs(got - reported) <= 0.002, f"eval {got} ({backend}) vs trained {reported}")
        print(f"trained: t10k {reported}, eval {got}, {m.group(1)} images/s")

    # The same seed gives the same file, with 2 threads or 1; another seed does not.
    with open(out, "rb") as f:
        first = f.read()
    again = os.path.join(tmp, "again.safetensors")
    ncpy.run(BASE + ["-o", again, "--seed", "3", "--threads", "1"])
    with open(again, "rb") as f:
        chk.check(f.read() == first, "seed 3 with 1 thread gives the same file as with 2")
    ncpy.run(BASE + ["-o", again, "--seed", "4", "--threads", "2"])
    with open(again, "rb") as f:
        chk.check(f.read() != first, "seed 4 gives another model")

    # A batch past the images trained on is one step of them all, as a batch of exactly as many: the same file, and
    # the line says so (its buffers are sized for the larger of those images and the test set, not for --batch).
    one = BASE[:-6] + ["--epochs", "1", "--lr", "0.01", "--seed", "5"]
    ncpy.run(one + ["--batch", "600", "-o", again])
    with open(again, "rb") as f:
        exact = f.read()
    p = ncpy.run(one + ["--batch", "65536", "-o", again])
    chk.check(", batch 600 (--batch 65536: past the 600 images), 1 epochs" in p.stderr, p.stderr)
    with open(again, "rb") as f:
        chk.check(f.read() == exact, "--batch 65536 on 600 images gives --batch 600's model")

    # Continue from the model: SGD, one epoch; the name comes from the file.
    cont = os.path.join(tmp, "cont.safetensors")
    p = ncpy.run(["train", "--init", out, "-o", cont, "--limit", "300", "--epochs", "1", "--optimizer", "sgd",
                  "--schedule", "step", "--weight-decay", "0.0001"])
    chk.check("continuing from the given model" in p.stderr and "trained tiny:" in p.stdout, p.stderr + p.stdout)
    # ... or from --name, its control characters shown as escapes, as a file's own name would be.
    p = ncpy.run(["train", "--init", out, "-o", cont, "--limit", "100", "--epochs", "1", "--name", "re\x1b[31md"])
    chk.check("trained re\\x1b[31md:" in p.stdout and "\x1b" not in p.stdout + p.stderr, repr(p.stdout))

    # An input larger than the images: resized as eval resizes them.
    big = os.path.join(tmp, "big.safetensors")
    p = ncpy.run(["train", "--arch-input", "1x36x36 raw", "--layers", "conv 2 5; relu; maxpool 4 4; flatten; "
                  "dense 10 bias; softmax", "--name", "big", "--limit", "200", "--epochs", "1", "-o", big])
    chk.check("trained big:" in p.stdout, p.stdout)
    ncpy.run(["eval", "--model", big, "-n", "100", "--backend", backend])

chk.finish()
