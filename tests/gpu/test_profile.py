"""GPU: `nanoconv profile` of a known run.

The seeded 2017 model (one convolution layer) on the first 1000 test images in
chunks of 250. With --conv-kernel 1 (the naive kernel, one launch per chunk)
conv_forward_kernel1 must be listed once, demangled, tagged "[v1 naive]", with
one call per chunk and one for the warm-up; with the default version, on a cold cache (a folder of the
test's own), its kernels (conv_*) must be tagged with the version eval says it chose ("auto vN", op_versions) and
called a whole number of times per chunk: the tuner's timing runs of every version stay out of the profile, and the
choice is cached. Their total time
must agree with eval's Op Time (CUDA events around the same launches) within
MARGIN_REL of it plus MARGIN_ABS_S per launch. Each table's percentages must
add up to 100; --top, --csv and the text layout are checked too. A seeded model of two convolutions (2019 spring's
architecture): each kernel is tagged with the version its layer ran on, on the default (whatever the tuner picks a
layer), on version 14 for both, and on version 8, which leaves the second layer to version 6. On the cudnn
backend, cuDNN's own kernels must be listed by readable names. Skips (77) where
nanoconv has no cuda backend or the machine has no GPU.
"""
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

# Events bracket the kernel, and also the gap between the event and the kernel's start on the GPU.
MARGIN_REL = 0.10
MARGIN_ABS_S = 20e-6
N, CHUNK = 1000, 250
# One pass per chunk, plus the cuda backend's warm-up pass of one image before a session's first run of images of
# that size's form (its first layer on pixels or on floats: it keeps lazy module loading out of the first timed
# layer, and the profile rightly shows it).
LAUNCHES = N // CHUNK + 1

exe = ncpy.nanoconv()
backends = ncpy.run(["--version"]).stdout.split("backends:")[1].split()
if "cuda" not in backends:
    ncpy.skip(f"nanoconv was built without the cuda backend ({' '.join(backends)})")
d = ncpy.data_dir()
if not os.path.exists(os.path.join(d, "t10k-images-idx3-ubyte.gz")):
    ncpy.skip(f"no Fashion-MNIST data in {d}; set NANOCONV_DATA or install dataset-fashion-mnist")

chk = ncpy.Checker("test_profile")


def profile(args):
    p = subprocess.run([exe, "profile"] + args, capture_output=True, text=True)
    if p.returncode == 2 and "needs a CUDA GPU" in p.stderr:
        ncpy.skip(f"no GPU here: {p.stderr.strip()}")
    if p.returncode != 0:
        print("command failed:", "nanoconv profile", " ".join(args), "\n", p.stdout, p.stderr)
        sys.exit(1)
    return p


def check_percent_sums(tag, prof):
    for table in ("gpu_activities", "api_calls"):
        rows = prof[table]["rows"]
        chk.check(rows, f"{tag}: the {table} table is empty")
        total = sum(r["time_percent"] for r in rows)
        chk.check(abs(total - 100) <= 0.1, f"{tag}: {table} percentages add up to {total}, not 100")
        secs = sum(r["time_s"] for r in rows)
        chk.check(abs(secs - prof[table]["total_s"]) <= 1e-9 * len(rows) + 1e-12,
                  f"{tag}: {table} times add up to {secs}, total_s says {prof[table]['total_s']}")
        times = [r["time_s"] for r in rows if r["type"] != "others"]
        chk.check(times == sorted(times, reverse=True), f"{tag}: {table} is not sorted by total time")
        for r in rows:
            chk.check(r["calls"] >= 1 and r["min_s"] <= r["avg_s"] + 1e-12 and r["avg_s"] <= r["max_s"] + 1e-12,
                      f"{tag}: {table} row {r}")


def check_conv(tag, j, version):
    prof = j["profile"]
    rows = prof["gpu_activities"]["rows"]
    kernels = [r for r in rows if r["type"] == "kernel"]
    chk.check(not [r for r in kernels if r["name"].startswith("_Z")], f"{tag}: mangled kernel names in {kernels}")
    conv = [r for r in kernels if "conv_versions" in r]
    untagged = [r["name"] for r in kernels if "conv_versions" not in r and r["short_name"].startswith("conv_")]
    chk.check(conv and not untagged, f"{tag}: convolution kernels {conv}, untagged {untagged}")
    if not conv:
        return
    # The version eval says the layer ran on, in op_versions and (the default) in Op Time's note.
    ran = j.get("op_versions", [0])[0]
    auto = re.search(r"auto v(\d+)", j["op_notes"][0])
    chk.check(ran == (version or (int(auto.group(1)) if auto else -1)),
              f"{tag}: op_versions {j.get('op_versions')}, note {j['op_notes'][0]!r}")
    versions = {v for r in conv for v in r["conv_versions"]}
    chk.check(versions == {ran} and all(r.get("conv_version") == ran for r in conv),
              f"{tag}: versions {versions} listed, v{ran} ran")
    if version == 1:
        chk.check(len(conv) == 1 and conv[0]["short_name"] == "conv_forward_kernel1"
                  and conv[0]["conv_version_name"] == "naive", f"{tag}: {conv}")
        chk.check(conv[0]["calls"] == LAUNCHES, f"{tag}: called {conv[0]['calls']} times, expected {LAUNCHES}")
    for r in conv:
        chk.check(r["calls"] >= LAUNCHES and r["calls"] % LAUNCHES == 0,
                  f"{tag}: {r['short_name']} called {r['calls']} times over {LAUNCHES} chunks")
    op = j["op_times"][0]
    cupti = sum(r["time_s"] for r in conv)
    margin = MARGIN_REL * op + MARGIN_ABS_S * sum(r["calls"] for r in conv)
    chk.check(abs(cupti - op) <= margin,
              f"{tag}: conv kernels {cupti * 1e3:.4f} ms by CUPTI, Op Time {op * 1e3:.4f} ms by events "
              f"(margin {margin * 1e3:.4f} ms)")
    names = ", ".join(f"{r['short_name']} x{r['calls']}" for r in conv)
    print(f"{tag}: v{conv[0]['conv_version']} {names}: CUPTI {cupti * 1e3:.4f} ms, events {op * 1e3:.4f} ms")
    s = prof["summary"]
    chk.check(s["percent"] >= 90 and s["names"] and s["names"] == [r["name"] for r in rows[:len(s["names"])]],
              f"{tag}: summary {s}")
    chk.check(prof["dropped_records"] == 0, f"{tag}: {prof['dropped_records']} records dropped")
    api = [r["name"] for r in prof["api_calls"]["rows"]]
    chk.check(any(a.startswith("cudaMalloc") for a in api) and not [a for a in api if re.search(r"_v\d+$", a)],
              f"{tag}: API names {api}")


with tempfile.TemporaryDirectory() as tmp:
    model = os.path.join(tmp, "m.safetensors")
    ncpy.run(["init", "--name", "fashion-2017-seeded", "--input", "1x28x28 raw", "--layers",
              "conv 50 5; tanh; maxpool 2 2; flatten; dense 500 bias; tanh; dense 10 bias; softmax",
              "--seed", "2017", "-o", model])
    base = ["--model", model, "-n", str(N), "--chunk", str(CHUNK)]
    # The default's choice of versions (conv_autotune.cu) on a cold cache of the test's own: made before the recording
    # starts, so that the tuner's runs of every version (version 1's naive kernel among them) are not in the profile;
    # and cached.
    cache = os.path.join(tmp, "cache")
    os.environ["NANOCONV_CACHE_DIR"] = cache

    # 1. The default kernel and version 1 (which stays in the tree for good), as JSON.
    for version in (0, 1):
        tag = f"cuda --conv-kernel {version}"
        j = json.loads(profile(base + ["--backend", "cuda", "--conv-kernel", str(version), "--json"]).stdout)
        chk.check(j["n"] == N and j["backend"] == "cuda" and len(j["op_times"]) == 1, f"{tag}: eval's fields {j}")
        check_percent_sums(tag, j["profile"])
        check_conv(tag, j, version)
        if version == 0:
            kernels = [r["short_name"] for r in j["profile"]["gpu_activities"]["rows"] if r["type"] == "kernel"]
            chk.check("conv_forward_kernel1" not in kernels, f"{tag}: the tuner's runs in the profile: {kernels}")
            chk.check(os.path.exists(os.path.join(cache, "conv-kernels.json")), f"{tag}: no cache written in {cache}")

    # 1b. Two convolutions: each kernel tagged with the version of the layer that ran it.
    model2 = os.path.join(tmp, "m2.safetensors")
    ncpy.run(["init", "--name", "fashion-2019-spring-seeded", "--input", "1x48x48 raw", "--layers",
              "conv 6 5; tanh; maxpool 2 2; conv 16 5; flatten; dense 140 bias; tanh; dense 10 bias; softmax",
              "--seed", "2019", "-o", model2])
    for version in (0, 14, 8):
        tag = f"two layers, --conv-kernel {version}"
        j = json.loads(profile(["--model", model2, "-n", str(N), "--chunk", str(CHUNK), "--conv-kernel", str(version),
                                "--json"]).stdout)
        ran = j.get("op_versions", [])
        chk.check(len(ran) == 2 and (not version or ran[0] == version), f"{tag}: op_versions {ran}")
        if version == 8:  # 3xtf32 leaves layers of several channels to version 6 (conv_tc.cu, nc_conv_tc_takes)
            chk.check(ran == [8, 6], f"{tag}: op_versions {ran}, not [8, 6]")
            direct = [r for r in j["profile"]["gpu_activities"]["rows"] if r["short_name"].startswith("conv_direct")]
            chk.check(direct and all(r.get("conv_versions") == [6] for r in direct),
                      f"{tag}: version 6's kernels {direct}")
        if version == 0:
            chk.check([int(x) for x in re.findall(r"auto v(\d+)", " ".join(j["op_notes"]))] == ran,
                      f"{tag}: notes {j['op_notes']}, op_versions {ran}")
        kernels = [r for r in j["profile"]["gpu_activities"]["rows"] if r["type"] == "kernel"]
        conv = [r for r in kernels if r["short_name"].startswith("conv_")]
        chk.check(conv and all(r.get("conv_versions") and set(r["conv_versions"]) <= set(ran) for r in conv),
                  f"{tag}: kernels {[(r['short_name'], r.get('conv_versions')) for r in conv]}, layers ran {ran}")
        tagged = {v for r in conv for v in r.get("conv_versions", [])}
        chk.check(tagged == set(ran), f"{tag}: tags {tagged}, layers ran {ran}")
        for r in conv:  # the family's own versions: the tc kernels are 7..10's, the winograd ones 15's
            fam = ({7, 8, 9, 10} if r["short_name"].startswith("conv_tc") else
                   {15} if r["short_name"].startswith("conv_wino") else None)
            chk.check(fam is None or set(r.get("conv_versions", [])) <= fam, f"{tag}: {r['short_name']} tagged "
                      f"{r.get('conv_versions')}")
            multi = len(r.get("conv_versions", [])) > 1
            chk.check(multi == ("conv_version" not in r), f"{tag}: {r['short_name']}: {r}")
        print(f"{tag}: layers on {ran}:", ", ".join(f"{r['short_name']} {r.get('conv_versions')}" for r in conv))

    # 2. The text layout, with --top 3: eval's lines, then the tables, then the summary; the backend defaults to cuda.
    out = profile(base + ["--conv-kernel", "1", "--top", "3"]).stdout.splitlines()
    head = out.index("==PROF== Profiling result:") if "==PROF== Profiling result:" in out else -1
    chk.check(head > 0 and any(x.startswith("Op Time: ") for x in out[:head])
              and any(x.startswith("Correctness: ") for x in out[:head]), f"text: eval's lines first:\n{out}")
    chk.check(re.fullmatch(r" +Type +Time\(%\) +Time +Calls +Avg +Min +Max +Name", out[head + 1] if head >= 0 else ""),
              f"text: header line {out[head + 1:head + 2]}")
    row = re.compile(r"( GPU activities:|      API calls:|                )\s+(\d+\.\d\d)% +\d+(\.\d+)?(s|ms|us|ns)"
                     r" +(\d+)( +\d+(\.\d+)?(s|ms|us|ns)){3}  (.+)")
    tables, cur = {}, None
    for line in out[head + 2:]:
        m = row.fullmatch(line)
        if not m:
            break
        if m.group(1).strip():
            cur = m.group(1).strip()
            tables[cur] = []
        tables[cur].append((float(m.group(2)), m.group(9)))
    chk.check(set(tables) == {"GPU activities:", "API calls:"}, f"text: tables {list(tables)}:\n" + "\n".join(out))
    chk.check(any(n.startswith("[v1 naive] conv_forward_kernel1(") for _, n in tables.get("GPU activities:", [])),
              "text: the conv kernel's row, tagged with its version:\n" + "\n".join(out))
    for name, rows in tables.items():
        chk.check(len(rows) <= 4, f"text: {name} has {len(rows)} rows with --top 3")
        total = sum(p for p, _ in rows)
        chk.check(abs(total - 100) <= 0.1, f"text: {name} printed percentages add up to {total}")
    chk.check(re.match(r"==PROF== 90% of the GPU time is in \d+ of \d+ activities", out[-1]),
              f"text: summary line {out[-1]!r}")

    # 3. CSV: the same rows, machine-readably.
    text = profile(base + ["--conv-kernel", "1", "--csv"]).stdout
    body = text.split("==PROF== Profiling result:\n")[1].split("\n==PROF== ")[0]
    recs = list(csv.DictReader(io.StringIO(body)))
    for t in ("GPU activities", "API calls"):
        total = sum(float(r["Time(%)"]) for r in recs if r["Type"] == t)
        chk.check(abs(total - 100) <= 0.1, f"csv: {t} percentages add up to {total}")
    chk.check(any(r["Name"].startswith("[v1 naive] conv_forward_kernel1(") and int(r["Calls"]) == LAUNCHES
                  for r in recs), "csv: the conv kernel row")

    # 4. cuDNN and cuBLAS kernels by readable names.
    if "cudnn" in backends:
        j = json.loads(profile(base + ["--backend", "cudnn", "--json"]).stdout)
        check_percent_sums("cudnn", j["profile"])
        kernels = [r["name"] for r in j["profile"]["gpu_activities"]["rows"] if r["type"] == "kernel"]
        chk.check(kernels and not [k for k in kernels if k.startswith("_Z")], f"cudnn: kernels {kernels}")
        tagged = [r for r in j["profile"]["gpu_activities"]["rows"] if "conv_version" in r]
        chk.check(not tagged, f"cudnn: rows tagged with a version of our kernels: {tagged}")
        print("cudnn kernels:", *kernels[:5], sep="\n  ")

chk.finish()
