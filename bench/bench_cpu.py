#!/usr/bin/python3
"""nanoconv's cpu backend against PyTorch on the CPU, in one run on one machine.

For each model (the zoo's models/*.safetensors, or with --seeded one model of each course architecture with seeded
weights):
  1. `nanoconv bench --backend cpu --json`: each fused op and the whole network, ms (median of --reps), GFLOP/s and
     the share of the FMA peak measured in that same run;
  2. PyTorch (Debian's python3-torch; oneDNN underneath for the convolutions where it is built in, which this script
     checks and reports) on the same shapes, same thread count, same N: each op the same way fused (conv + activation
     + pooling as one timed call sequence), the convolution alone, and the whole network; median of --reps after a
     warm-up; at each batch size of --torch-batches, keeping PyTorch's best;
  3. `/usr/bin/time -v nanoconv eval -n N` on every backend built (cpu-ref, cpu, and cuda/cudnn where a GPU is
     present): peak resident memory;
  4. `nanoconv predict --logits` on cpu and cpu-ref: predictions that differ on the N images, with the reference's
     top-2 gap of each, and the largest output difference.
Prints one table per model and writes everything to bench/results/cpu-YYYYmmdd-HHMMSS.json.

Run it on a quiet machine: timings of a shared machine are noise. Usage:
  bench/bench_cpu.py [--nanoconv build/nanoconv] [--models models/*.safetensors | --seeded] [-n 10000] [--reps 5]
"""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
import ncpy  # noqa: E402  (the architecture text as a torch model, shared with the oracle tests)

# The course's architectures (models/README.md's table), for --seeded.
COURSE = {
    "seeded-2017": ("1x28x28 raw", "conv 50 5; tanh; maxpool 2 2; flatten; dense 500 bias; tanh; dense 10 bias; "
                    "softmax"),
    "seeded-2018-spring": ("1x64x64 raw", "conv 6 5; tanh; maxpool 2 2; conv 16 5; flatten; dense 140 bias; tanh; "
                           "dense 10 bias; softmax"),
    "seeded-2018-fall": ("1x72x72 raw", "conv 12 7; tanh; maxpool 2 2; conv 24 7; flatten; dense 160 bias; tanh; "
                         "dense 10 bias; softmax"),
    "seeded-2019-spring": ("1x48x48 raw", "conv 6 5; tanh; maxpool 2 2; conv 16 5; tanh; maxpool 2 2; flatten; "
                           "dense 140 bias; tanh; dense 10 bias; softmax"),
    "seeded-2019-fall": ("1x70x70 raw", "conv 12 5; tanh; maxpool 2 2; conv 24 5; tanh; maxpool 2 2; flatten; "
                         "dense 160 bias; tanh; dense 10 bias; softmax"),
    "seeded-2020": ("1x86x86 raw", "conv 4 7; relu; maxpool 2 2; conv 16 7; relu; maxpool 4 4; flatten; "
                    "dense 32 bias; relu; dense 10 bias; softmax"),
}


def sh(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"bench_cpu: failed: {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    return p


def read_safetensors(path):
    """Returns ({name: float32 array}, metadata)."""
    import numpy as np
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        blob = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, t in header.items():
        a, b = t["data_offsets"]
        tensors[name] = np.frombuffer(blob[a:b], dtype=np.float32).reshape(t["shape"]).copy()
    return tensors, meta


def torch_net(layers_text, in_shape, tensors):
    """The model as an nn.Sequential whose module i is layer i (flatten included), weights loaded."""
    import torch
    net = ncpy.torch_sequential(layers_text, in_shape).eval()
    with torch.no_grad():
        for name, p in net.named_parameters():
            p.copy_(torch.from_numpy(tensors[name]))
    return net


def model_input(meta_input, images):
    """The model's float input (N, 1, S, S) from the uint8 test images, as the course made it (resize by
    scikit-image where the model is larger, when it is installed; for timing, any resize of the same shape would do)."""
    import numpy as np
    import torch
    tok = meta_input.split()
    _, S, _ = (int(v) for v in tok[0].split("x"))
    x = images.astype(np.float64)
    if S != images.shape[1]:
        try:
            from skimage.transform import resize
            x = np.stack([np.floor(resize(im / 256.0, (S, S), mode="constant", cval=0) * 256) for im in images])
        except ImportError:
            x = torch.nn.functional.interpolate(torch.from_numpy(x)[:, None], size=(S, S), mode="bilinear")[:, 0]
            x = x.numpy()
    if tok[1] == "unit":
        x = x / 255.0
    elif tok[1] == "norm":
        x = (x / 255.0 - float(tok[2])) / float(tok[3])
    return torch.from_numpy(np.asarray(x, dtype=np.float32)).reshape(len(images), 1, S, S)


def time_torch(fn, x, batches, reps):
    """Median seconds of fn over x in batches of each size in batches (after one warm-up); the best batch size."""
    import torch
    best = None
    for bs in batches:
        bs = min(bs, len(x))
        runs = []
        for r in range(reps + 1):
            t0 = time.perf_counter()
            with torch.no_grad():
                for i in range(0, len(x), bs):
                    fn(x[i:i + bs])
            dt = time.perf_counter() - t0
            if r:
                runs.append(dt)
        runs.sort()
        med = runs[len(runs) // 2] if len(runs) % 2 else 0.5 * (runs[len(runs) // 2 - 1] + runs[len(runs) // 2])
        if best is None or med < best[0]:
            best = (med, bs, runs)
    return best


def torch_kernels(fn, x):
    """The aten ops PyTorch runs for fn(x) (to report mkldnn_convolution vs a fallback)."""
    import torch
    with torch.no_grad(), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn(x)
    names = [e.key for e in prof.key_averages()]
    return sorted({n for n in names if "conv" in n or "mkldnn" in n or "addmm" in n or "linear" in n})


def peak_rss(exe, backend, model, n, data):
    """Peak resident set of `nanoconv eval` (kB) and its elapsed seconds, from /usr/bin/time -v."""
    p = subprocess.run(["/usr/bin/time", "-v", exe, "eval", "-m", model, "-n", str(n), "--backend", backend,
                        "--data", data], capture_output=True, text=True)
    if p.returncode != 0:
        return None, None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed"
    kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    el = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", p.stderr).group(1)
    secs = sum(float(v) * 60 ** i for i, v in enumerate(reversed(el.split(":"))))
    return kb, secs, None


def agreement(exe, model, n, data):
    """Predictions of cpu vs cpu-ref on the first n test images."""
    import numpy as np
    out = {}
    with tempfile.TemporaryDirectory() as d:
        for be in ("cpu-ref", "cpu"):
            lp = os.path.join(d, be + ".f32")
            p = sh([exe, "predict", "-m", model, "--images", os.path.join(data, "t10k-images-idx3-ubyte.gz"),
                    "--labels", os.path.join(data, "t10k-labels-idx1-ubyte.gz"), "-n", str(n), "--backend", be,
                    "--logits", lp])
            out[be] = (np.array([int(v) for v in p.stdout.split()]), np.fromfile(lp, dtype=np.float32).reshape(n, -1))
    (pr, lr), (pc, lc) = out["cpu-ref"], out["cpu"]
    top2 = np.sort(lr, axis=1)[:, -2:]
    diff = [{"image": int(i), "ref": int(pr[i]), "cpu": int(pc[i]), "ref_top2_gap": float(top2[i, 1] - top2[i, 0])}
            for i in np.nonzero(pr != pc)[0]]
    return {"n": n, "disagreements": len(diff), "cases": diff[:20],
            "max_abs_output_diff": float(np.abs(lc - lr).max()),
            "max_rel_output_diff": float((np.abs(lc - lr) / np.maximum(np.abs(lr), 1e-30)).max())}


def bench_model(a, model):
    import numpy as np
    import torch
    tensors, meta = read_safetensors(model)
    name = meta.get("nanoconv.name", os.path.basename(model))
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "nc.json")
        cmd = [a.nanoconv, "bench", "--backend", "cpu", "-m", model, "-n", str(a.n), "--reps", str(a.reps),
               "--threads", str(a.threads), "--data", a.data, "--json", js]
        print("+", " ".join(cmd), flush=True)
        sh(cmd)
        with open(js) as f:
            nc = json.load(f)

    # PyTorch on the same shapes and data.
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import ncpy
    images = ncpy.read_idx(os.path.join(a.data, "t10k-images-idx3-ubyte.gz"))[:a.n]
    x = model_input(meta["nanoconv.input"], images)
    net = torch_net(meta["nanoconv.layers"], tuple(x.shape[1:]), tensors)
    ops = []
    for op in nc["ops"]:
        f, k = op["first_layer"], op["n_layers"]
        if f < 0:  # the input preparation: PyTorch is given its input ready
            ops.append({"name": op["name"], "kernel": op["kernel"], "ms": op["ms"], "gflops": op["gflops"],
                        "pct_peak": None})
            continue
        with torch.no_grad():
            xin = torch.cat([net[:f](x[i:i + 1000]) for i in range(0, len(x), 1000)]) if f else x
        sub = net[f:f + k]
        t_fused = time_torch(sub, xin, a.torch_batches, a.reps)
        row = {"name": op["name"], "kernel": op["kernel"], "ms": op["ms"], "gflops": op["gflops"],
               "pct_peak": op.get("pct_peak"), "torch_ms": t_fused[0] * 1e3, "torch_batch": t_fused[1],
               "torch_ms_all": [v * 1e3 for v in t_fused[2]], "ratio": t_fused[0] * 1e3 / op["ms"]}
        if op["conv_index"] >= 0:
            conv = net[f]
            t_conv = time_torch(conv, xin, a.torch_batches, a.reps)
            row.update(torch_conv_ms=t_conv[0] * 1e3, torch_conv_batch=t_conv[1],
                       ratio_conv=t_conv[0] * 1e3 / op["ms"],
                       torch_conv_gflops=op["flops_per_image"] * a.n / t_conv[0] * 1e-9,
                       torch_ops=torch_kernels(conv, xin[:64]))
        ops.append(row)
    t_net = time_torch(net, x, a.torch_batches, a.reps)
    network = {"ms": nc["network"]["ms"], "gflops": nc["network"]["gflops"], "pct_peak": nc["network"].get("pct_peak"),
               "torch_ms": t_net[0] * 1e3, "torch_batch": t_net[1], "torch_ms_all": [v * 1e3 for v in t_net[2]],
               "ratio": t_net[0] * 1e3 / nc["network"]["ms"]}

    backends = sh([a.nanoconv, "--version"]).stdout.split("backends:")[1].split()
    rss = {}
    for be in backends:
        if be in ("cuda", "cudnn") and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode != 0:
            rss[be] = {"skipped": "no GPU on this machine"}
            continue
        if be == "cpu-ref" and a.skip_ref:
            rss[be] = {"skipped": "--skip-ref"}
            continue
        kb, secs, err = peak_rss(a.nanoconv, be, model, a.n, a.data)
        rss[be] = {"max_rss_mb": kb / 1024.0, "elapsed_s": secs} if kb else {"failed": err}
    agree = None if a.skip_ref else agreement(a.nanoconv, model, a.n, a.data)
    return {"model": name, "path": model, "nanoconv": nc, "ops": ops, "network": network, "peak_rss": rss,
            "agreement": agree}


def print_table(r, n):
    nc = r["nanoconv"]
    pk = nc["peak"]
    print(f"\n== {r['model']}  (N = {n}; nanoconv cpu {pk['isa']}, {pk['threads']} threads; FMA peak measured in the "
          f"same run {pk['gflops']:.1f} GFLOP/s)")
    print(f"{'op':34s} {'nanoconv ms':>11s} {'GFLOP/s':>8s} {'% peak':>7s} {'torch ms':>9s} {'ratio':>6s} "
          f"{'torch conv ms':>13s} {'ratio':>6s}")
    for o in r["ops"] + [dict(r["network"], name="network (images in, predictions out)")]:
        pct = f"{o['pct_peak']:6.1f}%" if o.get("pct_peak") is not None else ""
        conv = f"{o['torch_conv_ms']:13.2f} {o['ratio_conv']:6.2f}" if "torch_conv_ms" in o else ""
        torch = f"{o['torch_ms']:9.2f} {o['ratio']:6.2f}" if "torch_ms" in o else f"{'-':>9s} {'-':>6s}"
        print(f"{o['name'][:34]:34s} {o['ms']:11.2f} {o['gflops']:8.1f} {pct:>7s} {torch} {conv}")
    print("ratio = PyTorch time / nanoconv time (above 1: nanoconv is faster); PyTorch's network time starts from the "
          "float input, nanoconv's from the uint8 images (its op 'input' is the difference)")
    rss = [f"{be} {v['max_rss_mb']:.1f} MB ({v['elapsed_s']:.2f} s)" if "max_rss_mb" in v
           else f"{be} {list(v.values())[0]}" for be, v in r["peak_rss"].items()]
    print(f"peak RSS of `nanoconv eval -n {n}`: " + ", ".join(rss))
    ag = r["agreement"]
    if ag:
        print(f"cpu vs cpu-ref on {ag['n']} images: {ag['disagreements']} predictions differ; max output difference "
              f"{ag['max_abs_output_diff']:.3g} (relative {ag['max_rel_output_diff']:.3g})")
        for c in ag["cases"]:
            print(f"   image {c['image']}: cpu-ref {c['ref']}, cpu {c['cpu']}, "
                  f"reference top-2 gap {c['ref_top2_gap']:.3g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nanoconv", default=None, help="the nanoconv binary (default: build/nanoconv, build-cpu/...)")
    ap.add_argument("--models", nargs="*", default=None, help="model files (default: models/*.safetensors)")
    ap.add_argument("--seeded", action="store_true", help="bench a seeded model of each course architecture")
    ap.add_argument("-n", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--torch-batches", type=int, nargs="+", default=[10000, 1000, 128],
                    help="PyTorch batch sizes to try (its best is kept)")
    ap.add_argument("--data", default=os.environ.get("NANOCONV_DATA", "/usr/share/datasets/fashion-mnist"))
    ap.add_argument("--skip-ref", action="store_true", help="skip cpu-ref (its peak RSS and the agreement check)")
    ap.add_argument("--out", default=None, help="JSON file (default: bench/results/cpu-YYYYmmdd-HHMMSS.json)")
    a = ap.parse_args()
    load_before, started = os.getloadavg(), datetime.datetime.now()
    if not a.nanoconv:
        a.nanoconv = next((p for p in (os.path.join(ROOT, b, "nanoconv") for b in ("build", "build-cpu"))
                           if os.path.exists(p)), None)
        if not a.nanoconv:
            sys.exit("bench_cpu: no nanoconv binary found; build it (make build) or pass --nanoconv")

    import torch
    torch.set_num_threads(a.threads)
    cfg = torch.__config__.show()
    torch_info = {"version": torch.__version__, "threads": torch.get_num_threads(),
                  "mkldnn_available": torch.backends.mkldnn.is_available(),
                  "mkldnn_enabled": torch.backends.mkldnn.enabled,
                  "onednn": (re.search(r"MKL-DNN v[\d.]+", cfg) or re.search(r"oneDNN v[\d.]+", cfg) or [None])[0],
                  "cpu_capability": (re.search(r"CPU capability usage: (\w+)", cfg) or [None, None])[1],
                  "blas": os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")}
    print(f"PyTorch {torch_info['version']}: {torch_info['threads']} threads, oneDNN (mkldnn) available "
          f"{torch_info['mkldnn_available']} ({torch_info['onednn']}), CPU capability {torch_info['cpu_capability']}, "
          f"BLAS {torch_info['blas']}")

    tmp = None
    if a.seeded:
        tmp = tempfile.TemporaryDirectory()
        models = []
        for name, (inp, layers) in COURSE.items():
            path = os.path.join(tmp.name, name + ".safetensors")
            sh([a.nanoconv, "init", "--name", name, "--input", inp, "--layers", layers, "--seed", "1", "-o", path])
            models.append(path)
    else:
        models = a.models if a.models is not None else sorted(glob.glob(os.path.join(ROOT, "models", "*.safetensors")))
    if not models:
        sys.exit("bench_cpu: no models (models/*.safetensors is empty); pass --models FILE... or --seeded")

    results = []
    for m in models:
        r = bench_model(a, m)
        print_table(r, a.n)
        results.append(r)
        for op in r["ops"]:
            if op.get("torch_ops"):
                print(f"   PyTorch ran for {op['name']}: {', '.join(op['torch_ops'])}")

    out = a.out or os.path.join(HERE, "results", started.strftime("cpu-%Y%m%d-%H%M%S.json"))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    doc = {"date": started.isoformat(timespec="seconds"),
           "finished": datetime.datetime.now().isoformat(timespec="seconds"), "host": platform.node(),
           "load_average_before_and_after": [load_before, os.getloadavg()], "torch": torch_info, "n": a.n,
           "reps": a.reps, "threads": a.threads, "results": results}
    with open(out + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(out + ".tmp", out)
    print(f"\nwrote {out}")
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
