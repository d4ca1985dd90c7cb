"""--devices: a run spread over several GPUs gives one GPU's answers, bit for bit.

nc_session_run splits the images into contiguous shares, one a GPU, and runs them at once (src/core/session.c).
Every exact kernel computes an image's outputs the same way whatever the batch and its place in it (the dense
layers' sums have a fixed order: layers.cu), so on GPUs of one kind the logits of `--devices N` must equal those of
one GPU exactly, for the default kernels (the tuner's choice, cached by the first GPU's plan) and for fixed versions.
Checked with `nanoconv predict --logits` on the zoo's 2017 model and a seeded two-convolution model:
  - --devices 2 and all (and 3 where there are 3 GPUs) against --devices 1, at N = 10000, 4999 (unequal shares)
    and 1 (the second GPU's share empty);
  - eval --json --devices 2: one Op Time a convolution layer, and the correctness of one GPU;
  - the cudnn backend on two GPUs: the same predictions as on one (its algorithms may differ with the batch size,
    so the logits within the GPU backends' tolerance).
The errors, on any number of GPUs: more GPUs than the machine has (from --device 0, or past the last from
--device), --devices 0, --devices with a CPU backend, and with `profile` (it follows one GPU): each exits 2 with a
message naming what was wrong, and prints no results.
Skips (77) without a GPU; with one GPU it checks the errors and --devices all (that one GPU), and says that the
rest was not run.
Environment: NANOCONV (the CLI), NANOCONV_DATA (the Fashion-MNIST .gz files).
"""
import array
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

exe = ncpy.nanoconv()
backends = ncpy.require_gpu()
data, images, labels = ncpy.test_split()
src = os.environ.get("NANOCONV_SRC") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
zoo = os.path.join(src, "models", "fashion-2017-high.safetensors")
gpus = len([l for l in subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.splitlines()
            if l.startswith("GPU ")])
CLASSES = 10
chk = ncpy.Checker("test_devices")
tmp = tempfile.mkdtemp(prefix="nc-devices-")
print(f"{gpus} GPU(s)")


def run(args):
    return subprocess.run([exe] + args, capture_output=True, text=True)


def predict(model, n, extra, backend="cuda"):
    """(predictions, logits) of `predict -n n` with extra options, or (None, None) with the failure counted."""
    out = os.path.join(tmp, "logits.f32")
    if os.path.exists(out):
        os.remove(out)
    p = run(["predict", "--model", model, "--images", images, "--labels", labels, "-n", str(n), "--logits", out,
             "--backend", backend, "--json", *extra])
    chk.check(p.returncode == 0, f"predict {backend} -n {n} {' '.join(extra)}: exit {p.returncode}: {p.stderr}")
    if p.returncode != 0:
        return None, None
    pred = [int(x) for x in json.loads(p.stdout)["predictions"]]
    logits = ncpy.read_f32(out)
    return pred, logits


def same(what, a, b, exact=True):
    """a, b: (predictions, logits). Exact: the logits' bits; else predictions equal, logits within 1e-4 (1 + |row|)."""
    if a[0] is None or b[0] is None:
        return
    chk.check(len(a[0]) == len(b[0]) and len(a[1]) == len(b[1]), f"{what}: {len(b[0])} predictions, not {len(a[0])}")
    differ = sum(x != y for x, y in zip(a[0], b[0]))
    chk.check(differ == 0, f"{what}: {differ} predictions differ")
    if exact:
        bits = sum(x != y for x, y in zip(array.array("I", a[1].tobytes()), array.array("I", b[1].tobytes())))
        chk.check(bits == 0, f"{what}: {bits} logits differ in their bits")
        print(f"  {what}: {len(a[0])} images, predictions and logits bit for bit the same ({differ}, {bits})")
    else:
        bad = 0
        for i in range(len(a[0])):
            row = a[1][i * CLASSES:(i + 1) * CLASSES]
            bound = 1e-4 * (1 + max(abs(v) for v in row))
            bad += sum(not abs(b[1][i * CLASSES + j] - row[j]) <= bound for j in range(CLASSES))
        chk.check(bad == 0, f"{what}: {bad} logits outside 1e-4 (1 + max|row|)")
        print(f"  {what}: {len(a[0])} images, {differ} predictions differ, {bad} logits outside the tolerance")


def refused(args, words):
    """A run that must fail as bad usage (exit 2), saying `words`, with no results on stdout."""
    p = run(args)
    chk.check(p.returncode == 2, f"{' '.join(args)}: exit {p.returncode}, not 2 ({p.stderr.strip()})")
    chk.check(all(w in p.stderr for w in words), f"{' '.join(args)}: stderr '{p.stderr.strip()}' lacks {words}")
    chk.check("Op Time" not in p.stdout and "Correctness" not in p.stdout, f"{' '.join(args)}: printed results")
    print(f"  refused: {' '.join(args[3:])}: {p.stderr.strip()}")


# The errors, whatever the GPU count.
ev = ["eval", "--model", zoo, "-n", "100", "--data", data]
refused(ev + ["--backend", "cuda", "--devices", str(gpus + 1)], [f"--devices {gpus + 1}", f"has {gpus} CUDA GPU"])
refused(ev + ["--backend", "cuda", "--device", str(gpus - 1), "--devices", "2"],
        [f"from --device {gpus - 1}", f"has {gpus} CUDA GPU"])
refused(ev + ["--backend", "cpu", "--devices", "2"], ["backend 'cpu' runs on the CPU"])
refused(ev + ["--backend", "cuda", "--devices", "0"], ["--devices takes a count of GPUs"])
refused(["profile", "--model", zoo, "-n", "100", "--data", data, "--devices", "2"], ["a profile follows one GPU"])

one = predict(zoo, 10000, ["--devices", "1"])
same("2017 zoo model, --devices all against one GPU", one, predict(zoo, 10000, ["--devices", "all"]))

if gpus < 2:
    print(f"SKIP (part): {gpus} GPU here: the runs on several GPUs need two")
    chk.finish()

model = os.path.join(tmp, "two-conv.safetensors")
p = run(["init", "--name", "two-conv", "--input", "1x28x28 raw", "--layers",
         "conv 12 5; tanh; maxpool 2 2; conv 24 5; tanh; maxpool 2 2; flatten; dense 160 bias; tanh; dense 10 bias",
         "--seed", "7", "-o", model])
chk.check(p.returncode == 0, f"init: {p.stderr}")
for name, m in (("2017 zoo model", zoo), ("seeded two-conv model", model)):
    for kernel in ("0", "6", "15"):
        for n in (10000, 4999, 1):
            base = predict(m, n, ["--conv-kernel", kernel])
            for devices in ["2", "all"] + (["3"] if gpus >= 3 else []):
                same(f"{name} --conv-kernel {kernel} -n {n} --devices {devices} against one GPU", base,
                     predict(m, n, ["--conv-kernel", kernel, "--devices", devices]))

# eval on two GPUs: the course's lines, one Op Time a convolution layer, one GPU's correctness.
outs = {}
for devices in ("1", "2"):
    p = run(["eval", "--model", model, "--data", data, "--backend", "cuda", "--json", "--devices", devices])
    chk.check(p.returncode == 0, f"eval --devices {devices}: exit {p.returncode}: {p.stderr}")
    if p.returncode == 0:
        outs[devices] = json.loads(p.stdout)
if len(outs) == 2:
    a, b = outs["1"], outs["2"]
    chk.check(len(b["op_times"]) == 2 and all(t > 0 for t in b["op_times"]), f"eval --devices 2: {b['op_times']}")
    chk.check(a["correctness"] == b["correctness"], f"eval: correctness {b['correctness']} on two GPUs, "
              f"{a['correctness']} on one")
    print(f"  eval --devices 2: Op Times {b['op_times']} (one GPU: {a['op_times']}), correctness {b['correctness']}")

if "cudnn" in backends:
    same("seeded two-conv model, cudnn --devices 2 against one GPU", predict(model, 10000, [], "cudnn"),
         predict(model, 10000, ["--devices", "2"], "cudnn"), exact=False)
chk.finish()
