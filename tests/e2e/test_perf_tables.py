"""bench/perf_tables.py --targets: the issue's targets judged from a bench's JSON (no GPU needed).

  - on a made-up bench whose answers are known: the best exact version of each form (a faster reduced-precision row
    is not it), 1.5 times the floor met at 1.5 and missed at 1.57, a layer with no fused form, the share of the lower
    floor that a quarter of cuDNN's time needs (45%, 80% and 120%), 4x missed at 3.96 and met at 4.08, the 2017 layer
    fused under 0.25 ms, the 2017 network at three precisions (one under 1.5 ms and short of 3x) and at fp32 on fp32
    dense sums (its own line, not standing for the default fp32 one), and a prediction check with a differing exact
    version and a reduced one past the 0.002 allowed;
  - the same bench gzipped, read alike;
  - on every bench the GPU machine wrote (bench/results) in the format read: one row a zoo layer, each with every
    column.
Environment: NANOCONV_SRC (the source tree).
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

src = os.environ.get("NANOCONV_SRC") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
script = os.path.join(src, "bench", "perf_tables.py")
chk = ncpy.Checker("test_perf_tables")
tmp = tempfile.mkdtemp(prefix="nc-perf-tables-")
PEAK, COPY = 64e12, 3e12


def row(shape, v, name, ms, flops, nbytes, fused=False, precision="fp32"):
    floor = max(flops / PEAK, nbytes / COPY) * 1e3
    return {"shape": shape, "N": 10000, "version": (f"v{v} {name}" if v else name), "version_number": v,
            "version_name": name, "fused": fused, "precision": precision, "ms": ms, "flops": flops, "bytes": nbytes,
            "peak_flops_per_s": PEAK, "floor_ms": floor, "floor_share": floor / ms}


A, B, C = "fashion-2017-high c0 1x28x28 m50 k5", "fashion-x c1 6x22x22 m16 k5", "fashion-y c0 1x48x48 m6 k5"
bench = {
    "ns": [100, 10000],
    "device": {"gpu": "made up"},
    "floors": {"copy_bytes_per_s": COPY, "fp32_flops_per_s": PEAK},
    "versions": [{"version": 5, "name": "direct", "precision": "fp32"},
                 {"version": 9, "name": "tc-fp16", "precision": "fp16"}],
    "layers": [
        # A alone: bound by its 1.2 GB (0.4 ms); v5 at 1.5 times that. Fused: FP32-bound (0.2 ms), v5 at 0.45,
        # 3.96 times cuDNN.
        row(A, 0, "cudnn fp32 implicit_gemm", 1.78, 12.8e9, 1.2e9),
        row(A, 5, "direct", 0.6, 12.8e9, 1.2e9),
        row(A, 5, "direct", 0.45, 12.8e9, 0.3e9, fused=True),
        row(A, 9, "tc-fp16", 0.2, 12.8e9, 0.3e9, fused=True, precision="fp16"),
        dict(row(A, 5, "direct", 9.0, 12.8e9, 1.2e9), N=100),  # another N: not judged
        # B: FP32-bound (0.3 ms), no fused form; v5 just past 1.5 times (1.57); a faster fp16 row that is not exact.
        row(B, 0, "cudnn fp32 fft", 1.0, 19.2e9, 0.3e9),
        row(B, 5, "direct", 0.47, 19.2e9, 0.3e9),
        row(B, 9, "tc-fp16", 0.1, 19.2e9, 0.3e9, precision="fp16"),
        # C: alone only, 4.08 times cuDNN.
        row(C, 0, "cudnn fp32 fft", 2.0, 12.8e9, 1.2e9),
        row(C, 5, "direct", 0.49, 12.8e9, 1.2e9),
    ],
    "networks": [
        # The bench's --dense-sums fp32 line, first: it must not stand for the default fp32 line.
        {"model": "fashion-2017-high", "N": 10000, "backend": "cuda", "precision": "fp32", "dense_sums": "fp32",
         "ms": 1.4},
        {"model": "fashion-2017-high", "N": 10000, "backend": "cuda", "precision": "fp32", "ms": 1.6},
        {"model": "fashion-2017-high", "N": 10000, "backend": "cuda", "precision": "fp16", "ms": 1.0, "min_ms": 0.9,
         "max_ms": 3.25},
        {"model": "fashion-2017-high", "N": 10000, "backend": "cuda", "precision": "bf16", "ms": 1.45},
        {"model": "fashion-2017-high", "N": 10000, "backend": "cudnn", "precision": "fp32", "ms": 4.2},
        {"model": "fashion-2020", "N": 10000, "backend": "cuda", "precision": "fp32", "ms": 0.1},
    ],
}
check = {"checks": [
    {"model": "m1", "conv_kernel": 5, "precision": "fp32", "differ_from_cpu_ref": 0, "correctness_loss": 0,
     "passed": True},
    {"model": "m2", "conv_kernel": 5, "precision": "fp32", "differ_from_cpu_ref": 1, "correctness_loss": 0.0001,
     "passed": False},
    {"model": "m1", "conv_kernel": 9, "precision": "fp16", "differ_from_cpu_ref": 7, "correctness_loss": 0.0025,
     "passed": False},
]}


def targets(*files):
    p = subprocess.run([sys.executable, script, *files, "--targets"], capture_output=True, text=True)
    chk.check(p.returncode == 0, f"perf_tables.py {' '.join(files)} --targets: exit {p.returncode} ({p.stderr})")
    rows = {}
    for line in p.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and not set(cells[1]) <= set("-: "):
            rows[cells[0]] = cells[1:]
    return rows


bench_path, check_path = os.path.join(tmp, "bench.json"), os.path.join(tmp, "check.json")
json.dump(bench, open(bench_path, "w"))
json.dump(check, open(check_path, "w"))
with gzip.open(bench_path + ".gz", "wt") as f:
    json.dump(bench, f)

for path in (bench_path, bench_path + ".gz"):
    t = targets(path, check_path)
    a, b, c = t.get(A), t.get(B), t.get(C)
    chk.check(a and b and c, f"{path}: a row for each layer ({sorted(t)})")
    if a and b and c:
        # floor alone | best alone | share | met | floor fused | best fused | share | met | either | cuDNN | 4x needs |
        # best x cuDNN | 4x met
        chk.check(a[:4] == ["0.400 (memory)", "v5: 0.600", "67%", "yes"], f"A alone at 1.5x its floor: {a[:4]}")
        chk.check(a[4:8] == ["0.200 (FP32)", "v5: 0.450", "44%", "**no**"], f"A fused past 1.5x: {a[4:8]}")
        chk.check(a[8] == "yes", f"A met in one form: {a[8]}")
        chk.check(a[9:] == ["1.780", "45%", "3.96 (fused)", "**no**"], f"A against cuDNN: {a[9:]}")
        chk.check(b[:4] == ["0.300 (FP32)", "v5: 0.470", "64%", "**no**"], f"B alone, v5 not fp16: {b[:4]}")
        chk.check(b[4:9] == ["—", "—", "—", "—", "**no**"], f"B has no fused form: {b[4:9]}")
        chk.check(b[9:] == ["1.000", "120%", "2.13 (alone)", "**no**"], f"B against cuDNN: {b[9:]}")
        chk.check(c == ["0.400 (memory)", "v5: 0.490", "82%", "yes", "—", "—", "—", "—", "yes", "2.000", "80%",
                        "4.08 (alone)", "yes"], f"C: {c}")
    fused = next((v for k, v in t.items() if k.startswith("the 2017 layer fused")), None)
    chk.check(fused == ["v9 fp16 0.200 ms; exact fp32 v5 0.450 ms", "yes"], f"the 2017 layer fused: {fused}")
    fp32 = t.get("the 2017 network at fp32 under 1.5 ms and 3× the cudnn backend")
    sums = t.get("the 2017 network at fp32 with the dense layers on fp32 sums (--dense-sums fp32) under 1.5 ms and "
                 "3× the cudnn backend")
    fp16 = next((v for k, v in t.items() if k.startswith("the 2017 network at fp16")), None)
    bf16 = next((v for k, v in t.items() if k.startswith("the 2017 network at bf16")), None)
    chk.check(fp32 == ["1.600 ms, 2.62× (4.200)", "**no**"], f"the 2017 network at fp32: {fp32}")
    chk.check(sums == ["1.400 ms, 3.00× (4.200)", "yes"], f"the 2017 network at fp32 on fp32 dense sums: {sums}")
    chk.check(fp16 == ["1.000 ms (runs 0.900–3.250), 4.20× (4.200)", "yes"], f"the 2017 network at fp16: {fp16}")
    chk.check(bf16 == ["1.450 ms, 2.90× (4.200)", "**no**"], f"the 2017 network at bf16, under 1.5 ms, 2.9x: {bf16}")
    chk.check(not any("fashion-2020" in k or "network at" in k and "2017" not in k for k in t), "other models' lines")
    exact = next((v for k, v in t.items() if k.startswith("exact versions")), None)
    reduced = next((v for k, v in t.items() if k.startswith("reduced precisions")), None)
    chk.check(exact == ["1 differing predictions over 2 (version, model) pairs of 2 models", "**no**"],
              f"exact predictions: {exact}")
    chk.check(reduced == ["at most 0.0025 over 1 pairs", "**no**"], f"reduced precisions: {reduced}")

# Without a prediction check there are no prediction lines.
t = targets(bench_path)
chk.check(not any(k.startswith(("exact versions", "reduced")) for k in t), "no CHECK.json: no prediction lines")

# The benches the H100 wrote (those in the format the script reads: the first two, of 2026-11-22, have no "ns"):
# a row a zoo layer, each of 14 cells, with a verdict.
results = os.path.join(src, "bench", "results")
real = []
for f in sorted(os.listdir(results)) if os.path.isdir(results) else []:
    if f.startswith("gpu-") and f.endswith(".json.gz"):
        with gzip.open(os.path.join(results, f), "rt") as g:
            if "ns" in json.load(g):
                real.append(f)
chk.check(len(real) >= 1, f"a bench JSON in {results}")
for f in real:
    t = targets(os.path.join(results, f))
    layers = {k: v for k, v in t.items() if k.startswith("fashion-")}
    chk.check(len(layers) == 11, f"{f}: {len(layers)} zoo layers, expected 11")
    chk.check(all(len(v) == 13 for v in layers.values()), f"{f}: 14 cells a row")
    chk.check(all(v[3] in ("yes", "**no**") and v[12] in ("yes", "**no**") for v in layers.values()),
              f"{f}: a verdict in every row")
chk.finish()
