"""The cuda backend's default convolution: the fastest exact version per layer shape, cached.

With NANOCONV_CACHE_DIR set to a fresh folder, checks that
  - the first `eval --backend cuda` (no --conv-kernel) writes conv-kernels.json with one entry per conv layer of
    the model and one more for the fused first layer, which is timed as it reads uint8 pixels (images of the model's
    size, key ending " u8") and as it reads floats (images of another size, resized and scaled), keyed by the kernels'
    id `nanoconv --version` prints (so that a build of other kernel sources measures again), each naming an fp32,
    reproducible version (1..6, 11, 13, 14 or 15) with the times it measured, and the Op Time notes say "auto vN" with
    the cached version of the form the run used;
  - its predictions equal cpu-ref's on 2000 test images (every exact version must);
  - a cache entry edited to another exact version is obeyed (the note says so): the cache is read, not only
    written; the first layer's two entries edited to two versions, a run of 28 x 28 images takes the floats' one and
    a run of images of the model's size (48 x 48, made here) the pixels' one;
  - an entry naming a reduced-precision version (7) or the atomic one (12, not reproducible) is not obeyed but
    measured again and overwritten;
  - a corrupt cache file does not fail the run and is rewritten as valid JSON;
  - NANOCONV_CACHE_DIR=off writes nothing;
  - two processes tuning two models at once into one fresh cache both keep their entries (the cache's lock makes
    them take turns; without it the last to write dropped the other's).
Skips (77) where nanoconv was built without cuda or there is no GPU.
"""
import gzip
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

exe = ncpy.nanoconv()
backends = ncpy.require_gpu()
data = ncpy.data_dir()
if not os.path.exists(os.path.join(data, "t10k-images-idx3-ubyte.gz")):
    ncpy.skip(f"no Fashion-MNIST data in {data}; set NANOCONV_DATA")

src = os.environ.get("NANOCONV_SRC", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MODEL = os.path.join(src, "models", "fashion-2019-spring.safetensors")  # two conv layers, C = 1 and C = 6
N = "2000"
EXACT = [1, 2, 3, 4, 5, 6, 11, 13, 14, 15]  # fp32 and reproducible: what the default may pick
c = ncpy.Checker("test_autotune")


def run(args, cache):
    env = dict(os.environ, NANOCONV_CACHE_DIR=cache)
    return subprocess.run([exe] + args, capture_output=True, text=True, env=env)


def eval_notes(cache, data_dir=None):
    more = ["--data", data_dir] if data_dir else []
    p = run(["eval", "--model", MODEL, "--backend", "cuda", "-n", N, "--json"] + more, cache)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        return None, p
    return json.loads(p.stdout)["op_notes"], p


def predictions(backend, cache, data_dir=data):
    p = run(["predict", "--model", MODEL, "--backend", backend, "-n", N, "--json",
             "--images", os.path.join(data_dir, "t10k-images-idx3-ubyte.gz"),
             "--labels", os.path.join(data_dir, "t10k-labels-idx1-ubyte.gz")], cache)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        return None
    return json.loads(p.stdout)["predictions"]


with tempfile.TemporaryDirectory() as tmp:
    cache = os.path.join(tmp, "cache")
    path = os.path.join(cache, "conv-kernels.json")
    notes, p = eval_notes(cache)
    c.check(notes is not None, f"first eval ran (rc {p.returncode}: {p.stderr.strip()})")
    c.check(os.path.exists(path), "the first eval wrote the cache")
    entries = json.load(open(path)) if os.path.exists(path) else {}
    c.check(len(entries) == 3, f"one cache entry per conv layer, two for the first (got {len(entries)}: {list(entries)})")
    pixels = [k for k in entries if k.endswith(" u8")]
    floats = [k for k in entries if "| 1x48x48 " in k and not k.endswith(" u8")]
    second = [k for k in entries if "| 6x22x22 " in k]
    c.check(len(pixels) == 1 and "| 1x48x48 " in pixels[0] and len(floats) == 1 and len(second) == 1,
            f"the first layer on pixels and on floats, the second layer on floats ({list(entries)})")
    kernels = [ln.split(":", 1)[1].strip() for ln in subprocess.run([exe, "--version"], capture_output=True,
                                                                         text=True).stdout.splitlines()
               if ln.startswith("cuda kernels:")]
    c.check(len(kernels) == 1, f"--version names the kernels' id ({kernels})")
    for key, e in entries.items():
        c.check(bool(kernels) and f" kernels {kernels[0]} |" in key, f"{key}: keyed by the kernels' id {kernels}")
        c.check(e.get("version") in EXACT, f"{key}: an exact version, got {e.get('version')}")
        times = e.get("ms", {})
        c.check(str(e.get("version")) in times and all(t > 0 for t in times.values()),
                f"{key}: measured times, the chosen one among them ({times})")
        c.check(min(times, key=times.get) == str(e.get("version")), f"{key}: the chosen version is the fastest")
    if notes and len(floats) == 1 and len(second) == 1:
        picked = [int(m) for n in notes for m in re.findall(r"auto v(\d+)", n)]
        c.check(picked == [entries[floats[0]]["version"], entries[second[0]]["version"]],
                f"notes {notes} name the cache's versions, the first layer's on floats (28 x 28 images)")

    ref = predictions("cpu-ref", cache)
    got = predictions("cuda", cache)
    c.check(ref is not None and got is not None and ref == got,
            "cuda (auto versions) predicts as cpu-ref on %s images" % N)

    # Edit every entry to version 4: the run must obey.
    for e in entries.values():
        e["version"] = 4
    json.dump(entries, open(path, "w"))
    notes, p = eval_notes(cache)
    c.check(notes is not None and sum("auto v4" in n for n in notes) == 2, f"an edited cache is obeyed ({notes})")

    # The first layer's two forms edited apart (versions 14 and 6 both fuse it): each run takes its form's.
    if len(pixels) == 1 and len(floats) == 1:
        entries[pixels[0]]["version"], entries[floats[0]]["version"] = 14, 6
        json.dump(entries, open(path, "w"))
        notes, p = eval_notes(cache)
        c.check(notes is not None and "auto v6" in notes[0] and "fused" in notes[0],
                f"28 x 28 images: the first layer on floats takes the floats' entry ({notes})")
        big = os.path.join(tmp, "big")
        os.makedirs(big)
        n, rng = int(N), random.Random(5)
        with gzip.open(os.path.join(big, "t10k-images-idx3-ubyte.gz"), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, n, 48, 48) + bytes(rng.randrange(256) for _ in range(n * 48 * 48)))
        with gzip.open(os.path.join(big, "t10k-labels-idx1-ubyte.gz"), "wb") as f:
            f.write(struct.pack(">II", 0x801, n) + bytes(rng.randrange(10) for _ in range(n)))
        notes, p = eval_notes(cache, big)
        c.check(notes is not None and "auto v14" in notes[0] and "fused" in notes[0],
                f"48 x 48 images: the first layer on pixels takes the pixels' entry ({notes}, {p.stderr.strip()})")
        if notes:
            print(f"# notes on 48 x 48 images: {notes}")
        ref, got = predictions("cpu-ref", cache, big), predictions("cuda", cache, big)
        c.check(ref is not None and got is not None and ref == got,
                "cuda (version 14 on the first layer's pixels) predicts as cpu-ref on %s images of 48 x 48" % N)

    # A reduced-precision version, or the atomic one, in the cache is not trusted.
    for bad in (7, 12):
        for e in entries.values():
            e["version"] = bad
        json.dump(entries, open(path, "w"))
        notes, p = eval_notes(cache)
        after = json.load(open(path))
        c.check(notes is not None and not any(f"auto v{bad}" in n for n in notes),
                f"version {bad} from the cache refused ({notes})")
        c.check(all(e.get("version") in EXACT for e in after.values()), f"... and re-measured into the cache ({bad})")

    # A corrupt cache is measured over.
    with open(path, "w") as f:
        f.write("{ not json")
    notes, p = eval_notes(cache)
    c.check(notes is not None, f"a corrupt cache does not fail the run (rc {p.returncode}: {p.stderr.strip()})")
    try:
        c.check(len(json.load(open(path))) == 3, "the corrupt cache was rewritten")
    except ValueError as e:
        c.check(False, f"the corrupt cache was rewritten ({e})")

    # Two processes, two models, one fresh cache, at once: every layer of both in the cache at the end.
    shared = os.path.join(tmp, "shared")
    other = os.path.join(src, "models", "fashion-2017-high.safetensors")  # one conv layer: two entries
    env = dict(os.environ, NANOCONV_CACHE_DIR=shared)
    procs = [subprocess.Popen([exe, "eval", "--model", m, "--backend", "cuda", "-n", "500"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for m in (MODEL, other)]
    outs = [p.communicate() for p in procs]
    c.check(all(p.returncode == 0 for p in procs), f"two tuners at once both ran ({[o[1] for o in outs]})")
    both = json.load(open(os.path.join(shared, "conv-kernels.json")))
    c.check(len(both) == 5, f"both models' entries kept: 3 and 2, got {len(both)} ({list(both)})")
    c.check(sum("| 1x28x28 m50 " in k for k in both) == 2, f"fashion-2017-high's two entries ({list(both)})")

    # Caching off.
    off_dir = os.path.join(tmp, "off")
    p = run(["eval", "--model", MODEL, "--backend", "cuda", "-n", "100"], "off")
    c.check(p.returncode == 0 and not os.path.exists(off_dir) and not os.path.exists(os.path.join(os.getcwd(), "off")),
            "NANOCONV_CACHE_DIR=off runs and writes nothing")

c.finish()
