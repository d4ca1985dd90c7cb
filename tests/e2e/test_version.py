"""`nanoconv --version`: the version, then (with the cuda backend built) the CUDA kernels' id, then the backends.

The kernels' id is what the cuda backend's autotune cache keys on (src/cuda/conv_autotune.h), so that a library
built from other kernel sources measures again: it must be the hash of the tree's src/cuda files that
cmake/kernels_id.cmake defines (the first 16 hex digits of the SHA-256 of the lines "NAME SHA256\\n", one a file,
sorted by name), computed here independently. A build whose id did not follow its sources fails here.
"""
import glob
import hashlib
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

exe = ncpy.nanoconv()
src = os.environ.get("NANOCONV_SRC", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
c = ncpy.Checker("test_version")

p = subprocess.run([exe, "--version"], capture_output=True, text=True)
lines = p.stdout.splitlines()
c.check(p.returncode == 0, f"--version exits 0 (got {p.returncode})")
c.check(bool(lines) and re.fullmatch(r"nanoconv \d+\.\d+\.\d+", lines[0]) is not None,
        f"the first line is 'nanoconv X.Y.Z' ({lines[:1]})")
c.check(bool(lines) and lines[-1].startswith("backends:"), f"the last line lists the backends ({lines[-1:]})")
backends = lines[-1].split(":", 1)[1].split() if lines else []
c.check("cpu-ref" in backends and "cpu" in backends, f"cpu-ref and cpu are always built ({backends})")
ids = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("cuda kernels:")]
if "cuda" in backends:
    files = [f for pat in ("*.cu", "*.c", "*.h", "*.cuh") for f in glob.glob(os.path.join(src, "src", "cuda", pat))]
    c.check(len(files) > 10, f"src/cuda's files found under {src} ({len(files)})")
    listing = "".join(f"{os.path.basename(f)} {hashlib.sha256(open(f, 'rb').read()).hexdigest()}\n"
                      for f in sorted(files, key=os.path.basename))
    want = hashlib.sha256(listing.encode()).hexdigest()[:16]
    c.check(len(ids) == 1, f"one 'cuda kernels:' line ({ids})")
    c.check(ids == [want], f"the kernels' id is the hash of src/cuda's sources: {ids} against {want}")
else:
    c.check(ids == [], f"no kernels' id without the cuda backend ({ids})")
c.finish()
