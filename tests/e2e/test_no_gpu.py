"""Without a GPU, the GPU backends say so and exit 2 (NC_ERR_UNAVAILABLE), whatever the build.

Runs where nanoconv was built with CUDA (the CI machines have nvcc but no GPU); skips (77) where
the cuda backend is not built or a GPU is present (tests/gpu/ covers that machine).
"""
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

exe = ncpy.nanoconv()
version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
backends = version.split("backends:")[-1].split()
if "cuda" not in backends:
    ncpy.skip(f"the cuda backend is not built here ({version.strip()!r})")
try:
    smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    if smi.returncode == 0 and "GPU" in smi.stdout:
        ncpy.skip("a GPU is present (nvidia-smi -L lists one); tests/gpu/ checks the GPU backends")
except FileNotFoundError:
    pass

chk = ncpy.Checker("test_no_gpu")
tmp = tempfile.mkdtemp(prefix="nc-nogpu-")
model = os.path.join(tmp, "m.safetensors")
ncpy.run(["init", "--name", "m", "--input", "1x28x28 raw", "--layers", "conv 4 5; tanh; maxpool 2 2; flatten; dense 10 bias",
          "-o", model])
# Four blank 28x28 images and their labels, as IDX (written here: no data set needed).
images, labels = os.path.join(tmp, "img.idx"), os.path.join(tmp, "lab.idx")
with open(images, "wb") as f:
    f.write(struct.pack(">IIII", 0x803, 4, 28, 28) + bytes(4 * 28 * 28))
with open(labels, "wb") as f:
    f.write(struct.pack(">II", 0x801, 4) + bytes(4))

for b in [b for b in ("cuda", "cudnn") if b in backends]:
    p = subprocess.run([exe, "predict", "--model", model, "--images", images, "--labels", labels, "--backend", b],
                       capture_output=True, text=True)
    if p.returncode == 0:
        ncpy.skip(f"--backend {b} ran, so there is a GPU here after all")
    chk.check(p.returncode == 2, f"--backend {b} without a GPU: exit {p.returncode}, expected 2: {p.stderr}")
    chk.check("no CUDA GPU found" in p.stderr and "--backend cpu" in p.stderr,
              f"--backend {b}: the message should say there is no GPU and what to use: {p.stderr!r}")
    print(f"--backend {b}: exit {p.returncode}: {p.stderr.strip()}")
    if os.path.exists(os.path.join(ncpy.data_dir(), "t10k-images-idx3-ubyte.gz")):
        p = subprocess.run([exe, "eval", "--model", model, "-n", "10", "--backend", b], capture_output=True, text=True)
        chk.check(p.returncode == 2 and "GPU" in p.stderr, f"eval --backend {b}: exit {p.returncode}: {p.stderr}")

chk.finish()
