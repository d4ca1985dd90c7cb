"""End-to-end: `nanoconv profile` where it cannot profile.

A profile records the GPU's work through CUPTI. Where nanoconv was built with
CUDA but the machine has no GPU (CI), the command must say that it needs one
and exit 2; where it was built without CUDA, it must say so and exit 2. On a
machine with a GPU there is nothing to check here (tests/gpu/test_profile.py
profiles a run): skip. Everywhere: the nanoconv binary must not link CUPTI, so
that it is loaded by `nanoconv profile` alone.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

chk = ncpy.Checker("test_profile_nogpu")
exe = ncpy.nanoconv()

if shutil.which("readelf"):
    dyn = subprocess.run(["readelf", "-d", exe], capture_output=True, text=True).stdout
    chk.check("libcupti" not in dyn, f"nanoconv links CUPTI at load time:\n{dyn}")

backends = ncpy.run(["--version"]).stdout.split("backends:")[1].split()
with tempfile.TemporaryDirectory() as tmp:
    model = os.path.join(tmp, "m.safetensors")
    ncpy.run(["init", "--name", "tiny", "--input", "1x28x28 raw", "--layers", "conv 2 5; flatten; dense 10 bias",
              "-o", model])
    p = ncpy.run(["profile", "--model", model, "-n", "10"], check=False)
    if "cuda" not in backends:
        chk.check(p.returncode == 2 and "built without CUDA" in p.stderr,
                  f"without CUDA: exit {p.returncode}, stderr {p.stderr!r}")
    elif p.returncode == 0:
        ncpy.skip("this machine has a GPU: tests/gpu/test_profile.py profiles a run on it")
    else:
        chk.check(p.returncode == 2, f"no GPU: exit {p.returncode}, expected 2; stderr {p.stderr!r}")
        chk.check("needs a CUDA GPU" in p.stderr, f"no GPU: the message does not say a GPU is needed: {p.stderr!r}")
        chk.check(not p.stdout, f"no GPU: something was printed before the error: {p.stdout!r}")

chk.finish()
