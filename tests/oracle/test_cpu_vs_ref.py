"""The cpu backend against cpu-ref through the CLI, on the real test images, every code path forced.

For a seeded model of each course architecture: `nanoconv predict` on the first N test images with cpu-ref, then
with cpu under NANOCONV_CPU_ISA=scalar, avx2 and avx512 (those this processor has), under AVX-512 with each
convolution kernel family forced (--conv-kernel 1 direct, 2 implicit GEMM). For every zoo model in
models/*.safetensors: cpu-ref against cpu on its default path.

Checks: predictions identical to cpu-ref's (a flip is allowed only where the reference's top two outputs are within
1e-5 of each other, and is printed); outputs within |cpu - ref| <= 1e-5 * max|ref| + 1e-4 * |ref| (the SIMD paths
use fused multiply-adds and their own tanh and exp, so they differ from the reference by float rounding); the scalar
path, which does the reference's operations in the reference's order, equal to it bit for bit on networks whose
activations are relu (with tanh it takes libm's tanhf of the maximum instead of the maximum of the tanhf, equal
wherever tanhf is monotone, so there it is held to the tolerance only); AVX2 and AVX-512 equal bit for bit.
The 10000-image comparison of the zoo models is bench/bench_cpu.py's (it is too slow for a test under ASan).
"""
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

try:
    import numpy as np
except ImportError as e:
    ncpy.skip(f"numpy missing ({e})")

N = 24  # enough to exercise every path on real images, few enough for seconds under ASan
ARCHS = {
    "2017": ("1x28x28 raw", "conv 50 5; tanh; maxpool 2 2; flatten; dense 500 bias; tanh; dense 10 bias; softmax"),
    "2018-spring": ("1x64x64 raw", "conv 6 5; tanh; maxpool 2 2; conv 16 5; flatten; dense 140 bias; tanh; "
                    "dense 10 bias; softmax"),
    "2018-fall": ("1x72x72 raw", "conv 12 7; tanh; maxpool 2 2; conv 24 7; flatten; dense 160 bias; tanh; "
                  "dense 10 bias; softmax"),
    "2019-spring": ("1x48x48 raw", "conv 6 5; tanh; maxpool 2 2; conv 16 5; tanh; maxpool 2 2; flatten; "
                    "dense 140 bias; tanh; dense 10 bias; softmax"),
    "2019-fall": ("1x70x70 raw", "conv 12 5; tanh; maxpool 2 2; conv 24 5; tanh; maxpool 2 2; flatten; "
                  "dense 160 bias; tanh; dense 10 bias; softmax"),
    "2020": ("1x86x86 raw", "conv 4 7; relu; maxpool 2 2; conv 16 7; relu; maxpool 4 4; flatten; dense 32 bias; "
             "relu; dense 10 bias; softmax"),
}

chk = ncpy.Checker("test_cpu_vs_ref")
data = ncpy.data_dir()
images = os.path.join(data, "t10k-images-idx3-ubyte.gz")
labels = os.path.join(data, "t10k-labels-idx1-ubyte.gz")
if not os.path.exists(images):
    ncpy.skip(f"no Fashion-MNIST test set in {data} (install dataset-fashion-mnist)")


def predict(model, backend, d, isa=None, kernel=0):
    out = os.path.join(d, f"logits-{backend}-{isa}-{kernel}.f32")
    env = dict(os.environ)
    env.pop("NANOCONV_CPU_ISA", None)
    if isa:
        env["NANOCONV_CPU_ISA"] = isa
    p = subprocess.run([ncpy.nanoconv(), "predict", "-m", model, "--images", images, "--labels", labels, "-n", str(N),
                        "--backend", backend, "--conv-kernel", str(kernel), "--logits", out],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return None, p.stderr.strip()
    return (np.array([int(v) for v in p.stdout.split()]), np.fromfile(out, dtype=np.float32).reshape(N, -1)), None


def check_model(name, model, relu_only, d, paths=(("scalar", 0), ("avx2", 0), ("avx512", 1), ("avx512", 2))):
    (pr, lr), err = predict(model, "cpu-ref", d)
    chk.check(err is None, f"{name}: cpu-ref failed: {err}")
    top2 = np.sort(lr, axis=1)[:, -2:]
    near_tie = (top2[:, 1] - top2[:, 0]) <= 1e-5 * np.abs(top2[:, 1])
    simd = None
    for isa, kernel in paths:
        res, err = predict(model, "cpu", d, isa, kernel)
        if res is None and "not supported by this processor" in err:
            print(f"{name}: {isa} not supported by this processor: not tested here")
            continue
        chk.check(res is not None, f"{name} {isa} kernel {kernel}: cpu failed: {err}")
        if res is None:
            continue
        pc, lc = res
        what = f"{name} {isa or 'default'} kernel {kernel}"
        flips = np.nonzero(pc != pr)[0]
        for i in flips:
            print(f"{what}: image {i} predicted {pc[i]}, cpu-ref {pr[i]}; reference top-2 gap "
                  f"{top2[i, 1] - top2[i, 0]:.3g}")
        chk.check(all(near_tie[i] for i in flips), f"{what}: {len(flips)} predictions differ from cpu-ref")
        e = np.abs(lc.astype(np.float64) - lr)
        bad = int((e > 1e-5 * np.abs(lr).max() + 1e-4 * np.abs(lr)).sum())
        chk.check(bad == 0, f"{what}: {bad} outputs beyond tolerance, max error {e.max():.3g}")
        if isa == "scalar" and relu_only:
            chk.check(np.array_equal(lc, lr), f"{what}: not bitwise equal to cpu-ref")
        if isa in ("avx2", "avx512"):
            if simd is None:
                simd = lc
            chk.check(np.array_equal(lc, simd), f"{what}: not bitwise equal to the other SIMD runs")
        print(f"{what:34s} max|err| {e.max():.2e}  predictions differing {len(flips)}")


with tempfile.TemporaryDirectory() as d:
    for arch, (inp, layers) in ARCHS.items():
        model = os.path.join(d, f"seeded-{arch}.safetensors")
        ncpy.run(["init", "--name", f"seeded-{arch}", "--input", inp, "--layers", layers, "--seed", "7", "-o", model])
        check_model(f"seeded-{arch}", model, "tanh" not in layers and "sigmoid" not in layers, d)
    src = os.environ.get("NANOCONV_SRC", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    # The zoo's trained weights, on the path this processor takes by default (the seeded models above cover every
    # path; trained weights add realistic near-ties).
    for model in sorted(glob.glob(os.path.join(src, "models", "*.safetensors"))):
        check_model(os.path.basename(model), model, False, d, paths=((None, 0),))
chk.finish()
