"""`nanoconv bench`'s command line, on any machine (no GPU needed): what it refuses and how it says so.

  - --shape text that is not CxHxW:MxK[+ACT][+POOL], a value of 0, a negative one, one past its bound, an
    image too large, or a batch too large for the shape: exit 2 and one message that quotes the text and names
    the field or the problem;
  - -n lists, options given to the other side's bench (--sweep or --versions to cpu, --threads to cuda), several
    shapes or Ns on the cpu bench, --versions lists that are not conv versions 1..31: exit 2 with a message that
    names the option;
  - `bench --backend cpu --shape ...` runs the layer on the cpu backend and writes its JSON (where the
    Fashion-MNIST test images are installed), and refuses a non-square layer clearly;
  - `bench-gpu` is an alias: its --help is bench's, word for word; without a GPU (or without CUDA) it fails as
    `bench --backend cuda` does, exit 2 with a message saying why.
Timings are printed by the commands but never checked.
Environment: NANOCONV (the CLI), NANOCONV_DATA (the Fashion-MNIST .gz files, optional).
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

exe = ncpy.nanoconv()
chk = ncpy.Checker("test_bench_cli")
tmp = tempfile.mkdtemp(prefix="nc-bench-")
version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
backends = version.split("backends:")[-1].split()


def bench(args, cmd="bench"):
    return subprocess.run([exe, cmd] + args, capture_output=True, text=True)


def refused(args, *words, what=None):
    """The command exits 2 with one error line that contains every word."""
    p = bench(args)
    what = what or " ".join(args)
    chk.check(p.returncode == 2, f"{what}: exit {p.returncode}, expected 2 (stderr {p.stderr.strip()!r})")
    chk.check(p.stderr.startswith("nanoconv: error: ") and p.stderr.count("\n") == 1,
              f"{what}: expected one 'nanoconv: error:' line, got {p.stderr!r}")
    for w in words:
        chk.check(w in p.stderr, f"{what}: the message should say {w!r}: {p.stderr.strip()!r}")
    chk.check("Traceback" not in p.stderr and "Segmentation" not in p.stderr, f"{what}: crashed: {p.stderr!r}")
    return p


# --shape: strict text, bounded values. The parse comes before anything else, so the backend does not matter.
BAD_SHAPES = [
    ("0x28x28:50x5", ["C must be an integer from 1 to 1024", "'0'"]),
    ("1x0x28:50x5", ["H must be", "'0'"]),
    ("1x-3x28:50x5", ["H must be", "'-3'"]),
    ("1x28x28:-50x5", ["M must be", "'-50'"]),
    ("1x28x28:50x0", ["K must be", "'0'"]),
    ("1x28x28:50x40", ["K must be an integer from 1 to 32", "'40'"]),
    ("2000x28x28:5x5", ["C must be an integer from 1 to 1024", "'2000'"]),
    ("1x28x99999999999:5x5", ["W must be", "99999999999"]),
    ("1x4x4:5x5", ["K 5 is larger than the 4x4 input"]),
    ("1024x1024x1024:5x5", ["more than"]),
    ("abc", ["C must be", "'abc'"]),
    ("", ["C is missing"]),
    ("1x28x28", ["expected ':'"]),
    ("1x28x28:50", ["expected 'x'"]),
    ("1x28x28:50:5", ["expected 'x' after M"]),
    ("1.5x28x28:50x5", ["C must be", "'1.5'"]),
    ("1x28x28:50x5+foo", ["unknown epilogue 'foo'"]),
    ("1x28x28:50x5+", ["nothing after a '+'"]),
    ("1x28x28:50x5+maxpool", ["'maxpool' needs a window"]),
    ("1x28x28:50x5+maxpool0", ["needs a window"]),
    ("1x28x28:50x5+avgpool99", ["needs a window"]),
    ("1x28x28:50x5+maxpool2x3", ["'maxpool2x3' needs a window"]),
    ("1x28x28:50x5x3", ["expected '+' before an epilogue, found 'x'"]),
    ("1x8x8:4x5+maxpool5", ["the pooling window 5 is larger than the convolution's 4x4 output"]),
    ("1x28x28:50x5+maxpool2+tanh", ["'tanh' comes after the pooling"]),
    ("1x28x28:50x5+tanh+relu", ["'relu' comes after another activation"]),
    ("1x28x28:50x5+maxpool2+maxpool2", ["a second pooling"]),
    ("1x28x28:50x5 ", ["K must be"]),
]
for spec, words in BAD_SHAPES:
    p = refused(["--backend", "cpu", "--shape", spec], f"--shape '{spec}'", *words, what=f"--shape {spec!r}")
    chk.check("CxHxW:MxK" in p.stderr, f"--shape {spec!r}: the message should show the syntax: {p.stderr!r}")

# A shape too large for the batch: refused before anything is allocated.
refused(["--backend", "cpu", "--shape", "1024x64x64:1024x3", "-n", "10000"], "1024x64x64:1024x3", "N = 10000", "GiB")

# -n and options that belong to the other bench.
for n in ["0", "-5", "100,", ",100", "1,x", "1,2,3,4,5,6,7,8,9", "16777217", "1e3"]:
    refused(["--backend", "cpu", "--shape", "1x28x28:8x5", "-n", n], "-n", f"'{n}'")
refused(["--backend", "cpu", "--shape", "1x28x28:8x5", "-n", "100,1000"], "-n takes one N")
# --peak-seconds: seconds, a decimal number from 0.01 to 60 (0.05 runs below).
for bad in ["0", "-1", "61", "x", "0.6s", "nan", "inf"]:
    refused(["--backend", "cpu", "--shape", "1x28x28:8x5", "--peak-seconds", bad], "--peak-seconds", f"'{bad}'")
refused(["--backend", "cpu", "--shape", "1x28x28:8x5", "--shape", "1x28x28:9x5"], "one model or one --shape")
refused(["--backend", "cpu", "--shape", "1x28x28:8x5", "--sweep"], "--sweep is for the GPU bench")
refused(["--backend", "cpu", "--shape", "1x28x28:8x5", "--versions", "5,6"], "--versions is for the GPU bench")
# --versions: conv versions 1..31, comma-separated, nothing else.
for bad in ["", "0", "32", "5,", ",5", "5,,6", "x", "5;6", "100", "-5"]:
    refused(["--backend", "cuda", "--shape", "1x28x28:8x5", "--versions", bad], "--versions takes conv versions",
            f"'{bad}'", what=f"--versions {bad!r}")
refused(["--backend", "cpu", "--shape", "1x28x28:8x5", "--check", "100"], "--check is for the GPU bench")
refused(["--backend", "cuda", "--shape", "1x28x28:8x5", "--threads", "2"], "--threads is for the cpu bench")
refused(["--backend", "cuda", "--shape", "1x28x28:8x5", "--reps", "2"], "--reps takes 3 to 50")
refused(["--backend", "cuda", "--shape", "1x28x28:8x5", "--check", "10"], "--check", "-m FILE")
refused(["--backend", "cpu-ref", "--shape", "1x28x28:8x5"], "--shape", "cpu-ref")
refused([], "-m FILE", "--shape")
refused(["--backend", "cpu", "--shape", "1x10x12:8x3"], "square", "--backend cuda")

# bench-gpu is bench under another name: the same help, word for word.
h, hg = bench(["--help"]), bench(["--help"], cmd="bench-gpu")
chk.check(h.returncode == 0 and hg.returncode == 0, f"--help: exit {h.returncode} and {hg.returncode}")
chk.check(h.stdout == hg.stdout, "bench-gpu --help differs from bench --help")
for w in ["--shape", "--sweep", "--backend", "--check", "bench-gpu", "3xtf32", "reduced precision"]:
    chk.check(w in h.stdout, f"bench --help should mention {w!r}")
top = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
alias = [line for line in top.splitlines() if line.split()[:1] == ["bench-gpu"]]
chk.check(alias and "--backend cuda" in alias[0],
          f"nanoconv --help should list bench-gpu as bench --backend cuda: {top!r}")

# The GPU bench where it cannot run: no CUDA in the build, or no GPU on the machine.
has_gpu = False
try:
    smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    has_gpu = smi.returncode == 0 and "GPU" in smi.stdout
except FileNotFoundError:
    pass
if not has_gpu:
    why = "no CUDA GPU found" if "cuda" in backends else "built without CUDA"
    for cmd, args in [("bench", ["--backend", "cuda"]), ("bench", ["--backend", "cudnn"]), ("bench-gpu", [])]:
        p = bench(args + ["--shape", "1x28x28:50x5+tanh+maxpool2", "-n", "100"], cmd=cmd)
        chk.check(p.returncode == 2 and why in p.stderr,
                  f"{cmd} {' '.join(args)} without a GPU: exit {p.returncode}, expected 2 and {why!r}: {p.stderr!r}")
    # With no --backend, bench picks cpu here: a bad -n for the cpu bench says so.
    refused(["--shape", "1x28x28:8x5", "-n", "100,1000"], "--backend cpu")

# The cpu bench on a --shape, where the test images are installed (they feed it).
if os.path.exists(os.path.join(ncpy.data_dir(), "t10k-images-idx3-ubyte.gz")):
    for spec, op_name, pre in [("1x28x28:8x5+tanh+maxpool2", "conv 8 5 + tanh + maxpool 2 2", False),
                               ("3x12x12:4x3+relu", "conv 4 3 + relu", True)]:
        out = os.path.join(tmp, "cpu.json")
        p = bench(["--backend", "cpu", "--shape", spec, "-n", "64", "--reps", "1", "--peak-seconds", "0.05",
                   "--json", out])
        chk.check(p.returncode == 0, f"bench --backend cpu --shape {spec}: exit {p.returncode}: {p.stderr}")
        if p.returncode != 0:
            continue
        with open(out) as f:
            doc = json.load(f)
        chk.check(doc.get("shape") == spec and doc.get("backend") == "cpu" and doc.get("n") == 64,
                  f"--shape {spec}: JSON header {dict((k, doc.get(k)) for k in ('shape', 'backend', 'n'))}")
        names = [o["name"] for o in doc.get("ops", [])]
        chk.check(names and names[-1] == op_name, f"--shape {spec}: the last op should be {op_name!r}: {names}")
        chk.check(len(names) == (3 if pre else 2), f"--shape {spec}: ops {names} (input, [its input's maker,] layer)")
        chk.check(("op 1 makes the layer's" in p.stdout) == pre, f"--shape {spec}: what op 1 is: {p.stdout}")
        chk.check(all(o["ms"] >= 0 for o in doc["ops"]) and doc["network"]["ms"] > 0, f"--shape {spec}: times")
else:
    print(f"no Fashion-MNIST data in {ncpy.data_dir()}: the cpu bench runs are not checked")

chk.finish()
