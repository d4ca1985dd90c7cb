"""Bad input through the command line: each case gets one clear message naming
the file and what was wrong, exit status 2, and no output file left behind."""
import gzip
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

import numpy as np  # noqa: E402

chk = ncpy.Checker("test_errors")
ARCH = "conv 2 3; tanh; maxpool 2 2; flatten; dense 10 bias; softmax"


def expect(args, words, what, status=2):
    p = ncpy.run(args, check=False)
    err = p.stderr.lower()
    chk.check(p.returncode == status, f"{what}: exit {p.returncode}, expected {status}\n{p.stderr}")
    for w in words:
        chk.check(w.lower() in err, f"{what}: message lacks {w!r}: {p.stderr.strip()}")
    chk.check("error" in err and err.count("\n") <= 2, f"{what}: not one clear message: {p.stderr!r}")
    chk.check("sanitizer" not in err and "runtime error" not in err, f"{what}: sanitizer report: {p.stderr}")


with tempfile.TemporaryDirectory() as d:
    rng = np.random.default_rng(1)
    # A good data directory of 20 images and a good model, then damaged copies of each.
    good = os.path.join(d, "good")
    os.mkdir(good)
    imgs = rng.integers(0, 256, (20, 28, 28), dtype=np.uint8)
    ncpy.write_idx_images(os.path.join(good, "t10k-images-idx3-ubyte.gz"), imgs, compress=True)
    ncpy.write_idx_labels(os.path.join(good, "t10k-labels-idx1-ubyte.gz"), rng.integers(0, 10, 20), compress=True)
    model = os.path.join(d, "m.safetensors")
    ncpy.run(["init", "--name", "m", "--input", "1x28x28 raw", "--layers", ARCH, "-o", model])
    ok = ncpy.run(["eval", "--model", model, "--data", good, "--backend", "cpu-ref"], check=False)
    chk.check(ok.returncode == 0, f"good files evaluate: {ok.stderr}")

    def data_dir_with(name, blob):
        dd = tempfile.mkdtemp(dir=d)
        for f in os.listdir(good):
            shutil.copy(os.path.join(good, f), dd)
        with open(os.path.join(dd, name), "wb") as f:
            f.write(blob)
        return dd

    raw = gzip.decompress(open(os.path.join(good, "t10k-images-idx3-ubyte.gz"), "rb").read())
    img = "t10k-images-idx3-ubyte.gz"
    cases = [
        ("truncated IDX", raw[:16 + 700], ["truncated", img]),
        ("truncated gzip stream", gzip.compress(raw)[:300], [img]),
        ("wrong magic", struct.pack(">I", 0x1234) + raw[4:], ["magic", img]),
        ("header cut short", raw[:10], [img]),
        ("absurd dimensions", struct.pack(">IIII", 0x803, 0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF) + raw[16:], [img]),
        ("zero-sized images", struct.pack(">IIII", 0x803, 20, 0, 28) + raw[16:], [img]),
    ]
    for what, blob, words in cases:
        expect(["eval", "--model", model, "--data", data_dir_with(img, gzip.compress(blob) if "gzip" not in what
                                                                  else blob)], words, what)
    lab = "t10k-labels-idx1-ubyte.gz"
    expect(["eval", "--model", model, "--data", data_dir_with(lab, gzip.compress(struct.pack(">II", 0x801, 19) +
                                                                                  bytes(19)))],
           ["19", "20"], "label count differs from image count")
    # A label that no prediction can match (the model has 10 classes): an error, not a lower Correctness.
    bad_labels = rng.integers(0, 10, 20).astype(np.uint8)
    bad_labels[7] = 255
    expect(["eval", "--model", model, "--data", data_dir_with(lab, gzip.compress(struct.pack(">II", 0x801, 20) +
                                                                                  bad_labels.tobytes()))],
           ["t10k labels", "label 255 of image 7", "10 classes"], "a label past the model's classes")
    # predict too, and with -n only the labels it counts; without --labels it predicts and counts nothing.
    bad_dir = data_dir_with(lab, gzip.compress(struct.pack(">II", 0x801, 20) + bad_labels.tobytes()))
    pred = ["predict", "--model", model, "--backend", "cpu-ref", "--images", os.path.join(good, img)]
    expect(pred + ["--labels", os.path.join(bad_dir, lab), "--json"], [lab, "label 255 of image 7", "10 classes"],
           "predict with a label past the model's classes")
    seven = ncpy.run(pred + ["--labels", os.path.join(bad_dir, lab), "-n", "7", "--json"], check=False)
    chk.check(seven.returncode == 0 and '"correct"' in seven.stdout, f"-n 7 stops before the bad label: {seven.stderr}")
    bare = ncpy.run(pred + ["--json"], check=False)
    chk.check(bare.returncode == 0 and '"predictions"' in bare.stdout and '"correct"' not in bare.stdout,
              f"predict without --labels: {bare.stdout} {bare.stderr}")
    lines = ncpy.run(pred, check=False).stdout.split()
    chk.check(len(lines) == 20 and all(x.isdigit() and int(x) < 10 for x in lines), f"20 classes: {lines}")
    expect(["eval", "--model", model, "--data", os.path.join(d, "nowhere")], ["nowhere"], "missing data directory")

    # Model files.
    mblob = open(model, "rb").read()
    hlen = struct.unpack("<Q", mblob[:8])[0]
    bad_models = [
        ("truncated model", mblob[:len(mblob) // 2], []),
        ("model under 8 bytes", mblob[:5], []),
        ("header length beyond the file", struct.pack("<Q", len(mblob) * 4) + mblob[8:], ["header"]),
        ("corrupt JSON", mblob[:8] + b"{" * hlen + mblob[8 + hlen:], []),
        ("tensor renamed", mblob.replace(b'"0.weight"', b'"9.weight"'), ["9.weight"]),
    ]
    for what, blob, words in bad_models:
        path = os.path.join(d, what.replace(" ", "_") + ".safetensors")
        open(path, "wb").write(blob)
        expect(["eval", "--model", path, "--data", good], [os.path.basename(path)] + words, what)

    # A model of the wrong shape for its tensors: same tensors, a different architecture.
    wrong = os.path.join(d, "wrong_shape.safetensors")
    w = rng.normal(size=(3, 1, 3, 3)).astype(np.float32)
    ncpy.write_safetensors(wrong, {"0.weight": w, "4.weight": np.zeros((10, 2 * 13 * 13), np.float32),
                                   "4.bias": np.zeros(10, np.float32)},
                           {"nanoconv.input": "1x28x28 raw", "nanoconv.layers": ARCH})
    expect(["eval", "--model", wrong, "--data", good], ["wrong_shape.safetensors", "0.weight"], "tensor of wrong shape")

    # A tensor missing altogether.
    missing = os.path.join(d, "missing.safetensors")
    ncpy.write_safetensors(missing, {"0.weight": np.zeros((2, 1, 3, 3), np.float32),
                                     "4.weight": np.zeros((10, 2 * 13 * 13), np.float32)},
                           {"nanoconv.input": "1x28x28 raw", "nanoconv.layers": ARCH})
    expect(["eval", "--model", missing, "--data", good], ["missing.safetensors", "4.bias", "missing"],
           "tensor missing")

    # A plan no machine here holds (chunks of 2^20 images of 64 x 512 x 512 activations: 70 TB a buffer, for 2^20
    # images of one pixel each): the cpu backend fails to allocate it, exit 1, and says how much it wanted (read from
    # the plan after it was freed, until session 65). Under ASan, allocator_may_return_null lets the failure reach
    # that path instead of aborting.
    many = os.path.join(d, "many")
    os.mkdir(many)
    ncpy.write_idx_images(os.path.join(many, img), rng.integers(0, 256, (1 << 20, 1, 1), dtype=np.uint8),
                          compress=True)
    ncpy.write_idx_labels(os.path.join(many, lab), rng.integers(0, 10, 1 << 20), compress=True)
    vast = os.path.join(d, "vast.safetensors")
    ncpy.run(["init", "--name", "vast", "--input", "1x512x512 raw", "--layers",
              "conv 64 1; maxpool 512 512; flatten; dense 10 bias; softmax", "-o", vast])
    env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":allocator_may_return_null=1")
    r = subprocess.run([ncpy.nanoconv(), "eval", "--model", vast, "--data", many, "-n", str(1 << 20), "--backend",
                        "cpu", "--threads", "2", "--chunk", "1048576"], capture_output=True, text=True, env=env)
    chk.check(r.returncode == 1 and "out of memory for the cpu plan (2 threads x 2 x 1048576 images x " in r.stderr
              and "ERROR: AddressSanitizer" not in r.stderr, f"a plan too large for memory: exit {r.returncode}: {r.stderr}")
    # A --chunk past the images run is one chunk of them: the same model on two images takes 128 MB a buffer, not
    # the 70 TB above (which a machine that overcommits memory hands out for a smaller plan, untouched).
    for cmd in (["eval", "--model", vast, "--data", good], ["predict", "--model", vast, "--images",
                                                              os.path.join(good, img), "--json"]):
        r = subprocess.run([ncpy.nanoconv()] + cmd + ["-n", "2", "--backend", "cpu", "--threads", "2", "--chunk",
                                                      "1048576"], capture_output=True, text=True, env=env)
        chk.check(r.returncode == 0, f"{cmd[0]} --chunk 1048576 on two images: exit {r.returncode}: {r.stderr}")

    # A model whose input does not match the data (smaller than the images).
    small = os.path.join(d, "small.safetensors")
    ncpy.run(["init", "--name", "small", "--input", "1x20x20 raw", "--layers", ARCH, "-o", small])
    expect(["eval", "--model", small, "--data", good], ["20x20", "28x28"], "model input does not match the data")

    # N larger than the data, an unknown backend, a missing model.
    expect(["eval", "--model", model, "--data", good, "-n", "21"], ["21", "20"], "N larger than the data")
    expect(["eval", "--model", model, "--data", good, "--backend", "tpu"], ["tpu"], "unknown backend")
    expect(["eval", "--model", os.path.join(d, "none.safetensors"), "--data", good], ["none.safetensors"],
           "missing model file")
    expect(["eval", "--model", model, "--data", good, "-n", "zero"], ["-n"], "bad -n")
    # Options the command does not know, or whose value is missing, in nanoconv's words (not getopt's own).
    for args, words in [(["eval", "--frob"], ["nanoconv: error: eval: unknown option '--frob'"]),
                        (["eval", "-x"], ["nanoconv: error: eval: unknown option '-x'"]),
                        (["eval", "--dev", "1"], ["ambiguous option '--dev'"]),
                        (["predict", "--model"], ["nanoconv: error: predict: option '--model' needs a value"]),
                        (["bench", "-n"], ["option '-n' needs a value"]),
                        (["bench", "--sweep", "-zq"], ["bench: unknown option '-z'"]),
                        (["bench", "--sweep=1"], ["bench: option '--sweep' takes no value"]),
                        (["bench", "--backend", "tpu", "--shape", "1x28x28:8x5"], ["bench: unknown backend 'tpu'"]),
                        (["info"], ["nanoconv: error: info takes one model file"]),
                        (["info", model, model], ["info takes one model file"])]:
        expect(args, words, " ".join(args))
    # --dense-sums: slices or fp32 (the cuda backend's; the others run as without it).
    for bad in ("int8", "FP32", ""):
        expect(["eval", "--model", model, "--data", good, "--dense-sums", bad], ["--dense-sums"], f"--dense-sums {bad!r}")
    for good_sums in ("slices", "fp32"):
        r = ncpy.run(["eval", "--model", model, "--data", good, "--backend", "cpu-ref", "--dense-sums", good_sums],
                     check=False)
        chk.check(r.returncode == 0 and ok.stdout.splitlines()[-1] == r.stdout.splitlines()[-1],
                  f"--dense-sums {good_sums} on cpu-ref runs as without it: {r.stderr}")

    # --devices: a count of GPUs or all, for the GPU backends only (tests/gpu/test_devices.py runs it on GPUs).
    for bad in ("0", "-1", "two", "65"):
        expect(["eval", "--model", model, "--data", good, "--devices", bad], ["--devices", bad], f"--devices {bad}")
    expect(["eval", "--model", model, "--data", good, "--backend", "cpu", "--devices", "2"],
           ["--devices", "backend 'cpu' runs on the cpu"], "--devices on a CPU backend")
    expect(["bench", "--model", model, "--backend", "cpu", "--devices", "2"], ["--devices"], "bench --devices on the cpu")
    # What a CPU backend cannot do is refused, not run as fp32 or on the CPU under the option's name.
    for backend in ("cpu", "cpu-ref"):
        expect(["eval", "--model", model, "--data", good, "--backend", backend, "--precision", "fp16"],
               ["--precision", f"backend '{backend}' computes in fp32 only"], f"--precision fp16 on {backend}")
        expect(["eval", "--model", model, "--data", good, "--backend", backend, "--device", "5"],
               ["--device 5", f"backend '{backend}' runs on the cpu"], f"--device 5 on {backend}")
    fp32 = ncpy.run(["eval", "--model", model, "--data", good, "--backend", "cpu", "--precision", "fp32", "--device",
                     "0"], check=False)
    chk.check(fp32.returncode == 0 and ok.stdout.splitlines()[-1] == fp32.stdout.splitlines()[-1],
              f"--precision fp32 --device 0 on the cpu backend runs as without them: {fp32.stderr}")
    one = ncpy.run(["eval", "--model", model, "--data", good, "--backend", "cpu-ref", "--devices", "1"], check=False)
    chk.check(one.returncode == 0 and ok.stdout.splitlines()[-1] == one.stdout.splitlines()[-1],
              f"--devices 1 on a CPU backend runs as without it: {one.stderr}")

    # predict writes no partial logits file when it fails.
    out = os.path.join(d, "logits.f32")
    expect(["predict", "--model", small, "--images", os.path.join(good, img), "--labels", os.path.join(good, lab),
            "--logits", out], ["20x20"], "predict with a mismatched model")
    chk.check(not os.path.exists(out), "no logits file after a failed predict")
    chk.check(not [f for f in os.listdir(d) if ".tmp." in f], "no temporary files left behind")

    # Output paths, refused before any work: empty, a directory, a folder that is not there.
    predict = ["predict", "--model", model, "--images", os.path.join(good, img), "--labels", os.path.join(good, lab)]
    expect(predict + ["--logits", ""], ["--logits", "file name"], "an empty --logits")
    expect(predict + ["--logits", d], ["--logits", "is a directory"], "--logits a directory")
    expect(predict + ["--logits", os.path.join(d, "no-dir", "x.f32")], ["--logits", "no-dir", "cannot write to folder"],
           "--logits in a missing folder")
    expect(["init", "--name", "m", "--input", "1x28x28 raw", "--layers", ARCH, "-o", ""], ["-o", "file name"],
           "an empty init -o")
    stray = os.path.join(d, "stray.safetensors")
    expect(["init", "--name", "m", "--input", "1x28x28 raw", "--layers", ARCH, "-o", stray, "extra"],
           ["init", "unexpected argument 'extra'"], "init with a stray argument")
    chk.check(not os.path.exists(stray), "no model written by an init with a stray argument")
    expect(["bench", "--model", model, "--backend", "cpu", "--json", os.path.join(d, "no-dir", "b.json")],
           ["--json", "no-dir"], "bench --json in a missing folder")
    chk.check(not os.path.exists(os.path.join(d, "no-dir")), "no folder made for a refused output")
    dangling = os.path.join(d, "dangling")
    os.symlink(os.path.join(d, "nothing-there.f32"), dangling)
    expect(predict + ["--logits", dangling], ["--logits", "symbolic link to a file that does not exist"],
           "--logits a link to nothing")
    chk.check(not os.path.exists(os.path.join(d, "nothing-there.f32")), "no file made where a refused link points")

    # Through a symbolic link: the file it points to is replaced, the link stays. Into a FIFO: written into as it is
    # (a reader thread takes the 80 bytes of 2 images' logits), the FIFO not replaced by a file.
    ncpy.run(predict + ["-n", "2", "--logits", out])
    want = open(out, "rb").read()
    link = os.path.join(d, "logits-link")
    os.symlink(out, link)
    os.remove(out)
    open(out, "wb").write(b"old")
    r = ncpy.run(predict + ["-n", "2", "--logits", link], check=False)
    chk.check(r.returncode == 0 and os.path.islink(link) and open(out, "rb").read() == want,
              f"--logits through a symbolic link: exit {r.returncode}, {r.stderr}")
    fifo = os.path.join(d, "logits-fifo")
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    r = ncpy.run(predict + ["-n", "2", "--logits", fifo], check=False)
    reader.join(timeout=10)
    chk.check(r.returncode == 0 and got == [want] and stat.S_ISFIFO(os.lstat(fifo).st_mode),
              f"--logits into a FIFO: exit {r.returncode}, read {[len(g) for g in got]} bytes, {r.stderr}")
    chk.check(len(want) == 80, f"2 images' logits are 80 bytes, not {len(want)}")
    # /dev/stdout where stdout is a file the shell opened: written through the descriptor, so that the logits and the
    # predictions printed after them follow each other in the file (a file opened anew would start at its offset 0).
    both = os.path.join(d, "stdout.bin")
    with open(both, "wb") as f:
        r = subprocess.run([ncpy.nanoconv()] + predict + ["-n", "2", "--logits", "/dev/stdout"], stdout=f,
                           stderr=subprocess.PIPE, text=True)
    got = open(both, "rb").read()
    chk.check(r.returncode == 0 and got[:80] == want and got[80:].decode().split() == [str(i) for i in np.argmax(
        np.frombuffer(want, np.float32).reshape(2, 10), axis=1)],
              f"--logits /dev/stdout > file: exit {r.returncode}, {len(got)} bytes, {r.stderr}")

chk.finish()
