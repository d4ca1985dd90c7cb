"""GPU: `nanoconv bench --backend cuda` produces the whole report, in JSON, with nothing left out.

1. A layer given on the command line, `--shape 1x28x28:50x5+tanh+maxpool2 -n 100 --reps 3 --sweep --json F`:
   "versions" lists 1..V (V >= 8: the table grows, the test does not hard-code it), each with a name and a
   precision; "layers" has a row, alone (unfused), for every one of them (version 15, Winograd, along the rows on
   this layer), and cuDNN fp32 rows; every row has a
   positive time, FLOPs, bytes, floor and share of it; rows of a version below fp32 (where the tensor cores take
   the layer: they do this one, C = 1, K = 5) carry its precision and say "reduced precision" or "near-exact";
   versions 6, 14 and 15 have a fused fp32 row; "floors" has the copy bandwidth and the fp32, tf32, fp16 and bf16
   peaks, all positive; "sweep" has one row per tensor-core version and tuning of "tunings", exactly one of each
   version's marked fastest.
   Then 2019 spring's second layer, `--shape 6x22x22:16x5+tanh+maxpool2 --versions 14,15`: version 15 has an fp32
   row alone and one fused, as version 14 does; and 2020's, `--shape 4x40x40:16x7+relu+maxpool4 --versions 15`, where
   version 15 has a kernel fused as the network runs it and none alone: one fused row, and "not_taken" gives the
   reason for the other.
2. A model (the zoo's 2019-spring, or a seeded one of its architecture), `-n 1000 --reps 3 --check 2000`:
   "dense" has, for each dense layer, cuBLAS fp32 and TF32 rows and our SIMT fp32 row; "networks" has the cuda
   backend at fp32 (twice: the dense layers on int8 slices, and on fp32 sums) and the cudnn backend, each line's
   median between its min and max; "checks" has every version,
   and every exact (fp32) version gives cpu-ref's predictions. Reduced-precision versions are held to the bench's
   own rule (correctness loss at most 0.002), and the exit status must agree with the checks: 1 where one failed,
   else 0.
Never a timing threshold: times are only checked to be positive. Skips (77) where nanoconv was built without the
cuda backend or there is no GPU. Environment: NANOCONV (the CLI), NANOCONV_DATA, NANOCONV_SRC (the zoo).
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

exe = ncpy.nanoconv()
backends = ncpy.require_gpu()

PRECISIONS = {"fp32", "tf32", "3xtf32", "fp16", "bf16"}
SHAPE = "1x28x28:50x5+tanh+maxpool2"
chk = ncpy.Checker("test_bench_gpu")
tmp = tempfile.mkdtemp(prefix="nc-benchgpu-")


def bench(args):
    p = subprocess.run([exe, "bench", "--backend", "cuda"] + args, capture_output=True, text=True)
    print(f"$ nanoconv bench --backend cuda {' '.join(args)}: exit {p.returncode}")
    print(p.stdout[-6000:], p.stderr)
    return p


def positive(r, keys, what):
    bad = [k for k in keys if not (isinstance(r.get(k), (int, float)) and r[k] > 0)]
    chk.check(not bad, f"{what}: {bad} should be positive numbers: {r}")


# ------------------------------------------------------------------ 1. one layer shape
out = os.path.join(tmp, "shape.json")
p = bench(["--shape", SHAPE, "-n", "100", "--reps", "3", "--sweep", "--json", out])
chk.check(p.returncode == 0, f"--shape {SHAPE}: exit {p.returncode}: {p.stderr}")
if p.returncode != 0 or not os.path.exists(out):
    chk.finish()
with open(out) as f:
    doc = json.load(f)

floors = doc.get("floors", {})
positive(floors, ["copy_bytes_per_s", "fp32_flops_per_s", "tensor_tf32_flops_per_s", "tensor_fp16_flops_per_s",
                  "tensor_bf16_flops_per_s"], "floors")
versions = doc.get("versions", [])
numbers = [v.get("version") for v in versions]
V = len(versions)
chk.check(V >= 8 and numbers == list(range(1, V + 1)), f"versions should be 1..V, V >= 8: {numbers}")
for v in versions:
    chk.check(v.get("name") and v.get("precision") in PRECISIONS, f"version {v}: a name and a known precision")
precision_of = {v["version"]: v["precision"] for v in versions}

rows = [r for r in doc.get("layers", []) if r.get("shape") == SHAPE and r.get("N") == 100]
chk.check(rows, f"no layer rows for {SHAPE} at N = 100")
for r in rows:
    positive(r, ["ms", "runs", "flops", "bytes", "gflops", "gbs", "floor_ms", "floor_share", "peak_flops_per_s"],
             f"row {r.get('version')}")
    chk.check(r.get("precision") in PRECISIONS, f"row {r.get('version')}: precision {r.get('precision')!r}")
    if r.get("precision") != "fp32":
        chk.check("reduced precision" in r.get("note", "") or "near-exact" in r.get("note", ""),
                  f"row {r.get('version')} ({r.get('precision')}) should say so: note {r.get('note')!r}")
for v in range(1, V + 1):
    alone = [r for r in rows if r.get("version_number") == v and not r.get("fused")]
    why = [r.get("reason") for r in doc.get("not_taken", []) if r.get("version_number") == v]
    chk.check(len(alone) == 1, f"version {v}: {len(alone)} unfused rows, expected 1 (not taken: {why})")
    if alone:
        r = alone[0]
        chk.check(r["version"].startswith(f"v{v} "), f"version {v}: label {r['version']!r}")
        # The tensor cores take this layer (C = 1, K = 5, M = 50): the row is in the version's own precision.
        chk.check(r["precision"] == precision_of[v], f"version {v}: row precision {r['precision']!r}, "
                                                     f"version's {precision_of[v]!r}")
dnn = [r for r in rows if r["version"].startswith("cudnn fp32")]
chk.check(len(dnn) == 1, f"one cuDNN fp32 row expected: {[r['version'] for r in rows]}")
if dnn:
    chk.check(abs(dnn[0]["vs_cudnn_fp32"] - 1.0) < 1e-9, f"cuDNN fp32 against itself: {dnn[0]['vs_cudnn_fp32']}")
    chk.check(all(r["vs_cudnn_fp32"] > 0 for r in rows), "every row has a ratio to cuDNN fp32")
fused = [r for r in rows if r.get("fused")]
chk.check(any(r["version_number"] == 6 for r in fused), "version 6 fused with tanh + maxpool: no row")
for v in (14, 15):
    chk.check(any(r["version_number"] == v and r["precision"] == "fp32" for r in fused),
              f"version {v} fused with tanh + maxpool: no fp32 row")
chk.check("reduced precision" in p.stdout, "the table should say which rows are reduced precision")

tunings = doc.get("tunings", [])
chk.check(tunings and all(t.get("images_per_block", 0) > 0 for t in tunings), f"tunings: {tunings}")
sweep = [r for r in doc.get("sweep", []) if r.get("shape") == SHAPE and r.get("N") == 100]
tc_versions = [v for v in range(1, V + 1) if precision_of[v] != "fp32"]
chk.check(tc_versions, "no tensor-core versions in the table")
for v in tc_versions:
    mine = [r for r in sweep if r.get("version_number") == v]
    chk.check(sorted(r.get("tuning") for r in mine) == list(range(len(tunings))),
              f"sweep v{v}: tunings {[r.get('tuning') for r in mine]}, expected one row per tuning of {len(tunings)}")
    chk.check(sum(1 for r in mine if r.get("fastest")) == 1, f"sweep v{v}: exactly one row marked fastest")
    for r in mine:
        positive(r, ["ms", "floor_ms", "floor_share"], f"sweep v{v} tuning {r.get('tuning')}")
        chk.check(r.get("precision") == precision_of[v], f"sweep v{v}: precision {r.get('precision')!r}")

# Version 15 where it has a kernel: 2019 spring's second layer, alone and fused, next to version 14.
WSHAPE = "6x22x22:16x5+tanh+maxpool2"
wout = os.path.join(tmp, "wino.json")
p = bench(["--shape", WSHAPE, "-n", "100", "--reps", "3", "--versions", "14,15", "--json", wout])
chk.check(p.returncode == 0 and os.path.exists(wout), f"--shape {WSHAPE}: exit {p.returncode}: {p.stderr}")
if os.path.exists(wout):
    with open(wout) as f:
        wrows = [r for r in json.load(f).get("layers", []) if r.get("shape") == WSHAPE and r.get("N") == 100]
    for v in (14, 15):
        for fused_row in (False, True):
            mine = [r for r in wrows if r.get("version_number") == v and bool(r.get("fused")) == fused_row]
            chk.check(len(mine) == 1 and mine[0]["precision"] == "fp32",
                      f"{WSHAPE}: version {v} {'fused' if fused_row else 'alone'}: one fp32 row expected, got {mine}")
            for r in mine:
                positive(r, ["ms", "flops", "floor_ms", "floor_share"], f"{WSHAPE} version {v}")
# Version 15 on 2020's second layer (K = 7): kernels alone and fused as its network runs it, one fp32 row each; on
# 2019 fall's first layer fused only (version 14 runs it alone): one row, and the reason for the other form.
NSHAPE, XSHAPE = "4x40x40:16x7+relu+maxpool4", "1x70x70:12x5+tanh+maxpool2"
for shape, forms in ((NSHAPE, [False, True]), (XSHAPE, [True])):
    rows = len(forms)
    nout = os.path.join(tmp, "wino7.json")
    p = bench(["--shape", shape, "-n", "100", "--reps", "3", "--versions", "15", "--json", nout])
    chk.check(p.returncode == 0 and os.path.exists(nout), f"--shape {shape}: exit {p.returncode}: {p.stderr}")
    if not os.path.exists(nout):
        continue
    with open(nout) as f:
        ndoc = json.load(f)
    os.remove(nout)
    mine = [r for r in ndoc.get("layers", []) if r.get("version_number") == 15]
    why = [r.get("reason") or "" for r in ndoc.get("not_taken", []) if r.get("version_number") == 15]
    chk.check(len(mine) == rows and sorted(bool(r.get("fused")) for r in mine) == forms and
              all(r.get("precision") == "fp32" for r in mine),
              f"version 15 on {shape}: fp32 rows expected, fused {forms}, got {mine}")
    chk.check(len(why) == 2 - rows and all("version 15" in w for w in why),
              f"version 15 on {shape}: {2 - rows} forms not taken, with their reasons, expected (reasons {why})")

# ------------------------------------------------------------------ 2. a model
data = ncpy.data_dir()
if not os.path.exists(os.path.join(data, "t10k-images-idx3-ubyte.gz")):
    print(f"no Fashion-MNIST data in {data}: the model part is not run")
    chk.finish()
model = os.path.join(os.environ.get("NANOCONV_SRC", ""), "models", "fashion-2019-spring.safetensors")
if not os.path.exists(model):
    model = os.path.join(tmp, "m.safetensors")
    ncpy.run(["init", "--name", "fashion-2019-spring", "--input", "1x48x48 raw", "--layers",
              "conv 6 5; tanh; maxpool 2 2; conv 16 5; flatten; dense 140 bias; tanh; dense 10 bias; softmax",
              "--seed", "1", "-o", model])
out = os.path.join(tmp, "model.json")
p = bench(["-m", model, "-n", "1000", "--reps", "3", "--check", "2000", "--json", out])
chk.check(p.returncode in (0, 1) and os.path.exists(out), f"-m {model}: exit {p.returncode}: {p.stderr}")
if not os.path.exists(out):
    chk.finish()
with open(out) as f:
    doc = json.load(f)

dense = doc.get("dense", [])
for layer in sorted({r["layer"] for r in dense}) or [None]:
    mine = [r for r in dense if r.get("layer") == layer and r.get("N") == 1000]
    impls = {(r["impl"], r["precision"]) for r in mine}
    for want in [("cublas sgemm default math", "fp32"), ("cublas sgemm tf32 math", "tf32"), ("ours simt", "fp32"),
                 ("ours int8 slices", "fp32")]:
        chk.check(want in impls, f"dense layer {layer}: no {want} row: {sorted(impls)}")
    for r in mine:
        positive(r, ["ms", "flops", "bytes", "floor_ms", "floor_share", "vs_cublas_fp32"], f"dense {r.get('impl')}")
chk.check(len({r["layer"] for r in dense}) == 2, f"two dense layers expected: {sorted({r['layer'] for r in dense})}")

nets = doc.get("networks", [])
have = {(r["backend"], r["precision"]) for r in nets}
for want in [("cuda", "fp32"), ("cudnn", "fp32")]:
    chk.check(want in have, f"network line {want} missing: {sorted(have)}")
sums = [r.get("dense_sums") for r in nets if r["backend"] == "cuda" and r["precision"] == "fp32"]
chk.check(sorted(sums) == ["fp32", "slices"], f"cuda fp32 network lines on int8 slices and on fp32 sums: {sums}")
for r in nets:
    positive(r, ["ms", "min_ms", "max_ms"], f"network {r['backend']} {r['precision']}")
    chk.check(r.get("min_ms", 0) <= r.get("ms", -1) <= r.get("max_ms", 0),
              f"network {r['backend']} {r['precision']}: median {r.get('ms')} outside "
              f"{r.get('min_ms')}-{r.get('max_ms')}")
    chk.check(0 <= r.get("correctness", -1) <= 1, f"network {r['backend']} {r['precision']}: correctness")

checks = doc.get("checks", [])
chk.check(sorted(r["conv_kernel"] for r in checks) == list(range(1, V + 1)),
          f"checks: versions {[r['conv_kernel'] for r in checks]}, expected 1..{V}")
failed = 0
for r in checks:
    if "error" in r:
        failed += 1
        chk.check(r["precision"] != "fp32", f"check v{r['conv_kernel']} (exact) did not run: {r['error']}")
        continue
    if r["precision"] == "fp32":
        chk.check(r["differ_from_cpu_ref"] == 0, f"check v{r['conv_kernel']}: {r['differ_from_cpu_ref']} predictions "
                                                 "differ from cpu-ref (exact versions must not)")
    should_pass = r["differ_from_cpu_ref"] == 0 or (r["precision"] != "fp32" and r["correctness_loss"] <= 0.002)
    chk.check(r["passed"] == should_pass,
              f"check v{r['conv_kernel']}: passed {r['passed']}, the rule says {should_pass}")
    failed += not r["passed"]
chk.check(p.returncode == (1 if failed else 0), f"exit {p.returncode} with {failed} failed checks")

chk.finish()
