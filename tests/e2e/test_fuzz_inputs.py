"""Seeded mutations of good input files, each run through the commands that read it: a model through `info`, `eval`
(cpu-ref and cpu) and `predict --logits`; the IDX files through `eval` and `predict`; a pair of MXNet files through
`import-mxnet`. Every run either succeeds (the mutation left a valid file) or fails with exit status 2 and one clear
message in plain text, leaves no file behind (logits, or the model at -o), and gives no sanitizer report (the suite
runs again under ASan + UBSan). A mutation that imports must give a model that evaluates.

The mutations are structured where that reaches further than random bytes: the safetensors header's JSON is parsed
and one field changed (a shape, an offset, a dtype, the input or the layers string), the IDX headers' fields are
rewritten, and so are the MXNet symbol's nodes and the params' header fields; random byte flips and truncations cover
the rest. The seed is fixed, so that a failure is reproducible; its message names the case."""
import gzip
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

import numpy as np  # noqa: E402

chk = ncpy.Checker("test_fuzz_inputs")
ARCH = "conv 4 5; tanh; maxpool 2 2; conv 6 3; relu; maxpool 2 2; flatten; dense 16 bias; tanh; dense 10 bias; softmax"
N_IMAGES = 12
# NC_FUZZ_SEED and NC_FUZZ_ROUNDS (the random cases, times ROUNDS) for a longer hunt by hand; the suite runs the
# defaults.
rnd = random.Random(int(os.environ.get("NC_FUZZ_SEED", "20261126")))
ROUNDS = int(os.environ.get("NC_FUZZ_ROUNDS", "1"))

WEIRD_INTS = [0, 1, 2, 3, -1, 7, 255, 65535, 2**31 - 1, 2**31, 2**32 + 1, 2**53, 10**30]
WEIRD_STRINGS = ["", " ", "x", "1x28x28", "1x28x28 raw", "0x28x28 raw", "1x0x28 raw", "1x28x28 resize",
                 "1x99999x99999 raw", "99999x28x28 raw", "-1x28x28 raw", "1x28x28 raw raw", "1x28x28 bogus",
                 "1x2x2 raw", "1x28x28\x00 raw", "1x28x28 \x1b[31mraw", "1x28x28 r\u0085aw"]
WEIRD_LAYERS = ["", "conv", "conv 0 5", "conv 4 0", "conv 4 99", "conv -4 5", "conv 2147483647 5", "maxpool 0 0",
                "maxpool 99 1", "dense 0 bias", "dense -1 bias", "dense 10", "flatten; flatten", "softmax; softmax",
                "tanh", "conv 4 5; frobnicate", "conv 4 5 7 9", "dense 1e9 bias", "conv 4 5;;; tanh",
                "\x1b]0;title\x07tanh", "flat\u0085ten", "conv 4 5\nrelu"]


def header(blob):
    n = struct.unpack("<Q", blob[:8])[0]
    return n, json.loads(blob[8:8 + n])


def with_header(blob, h):
    n = struct.unpack("<Q", blob[:8])[0]
    text = json.dumps(h).encode()
    return struct.pack("<Q", len(text)) + text + blob[8 + n:]


def model_mutations(blob):
    """(name, bytes) pairs: structured header edits, then raw damage."""
    n, h = header(blob)
    tensors = [k for k in h if k != "__metadata__"]
    out = []
    for i, v in enumerate(WEIRD_STRINGS):
        g = json.loads(json.dumps(h))
        g["__metadata__"]["nanoconv.input"] = v
        out.append((f"model input {i} {v!r}", with_header(blob, g)))
    for i, v in enumerate(WEIRD_STRINGS):
        g = json.loads(json.dumps(h))
        g["__metadata__"]["nanoconv.name"] = v + "\u00e9" * 40  # and a name longer than the 63 bytes kept
        out.append((f"model name {i} {v!r}", with_header(blob, g)))
    for i, v in enumerate(WEIRD_LAYERS):
        g = json.loads(json.dumps(h))
        parts = g["__metadata__"]["nanoconv.layers"].split("; ")
        parts[rnd.randrange(len(parts))] = v
        g["__metadata__"]["nanoconv.layers"] = "; ".join(parts)
        out.append((f"model layers {i} {v!r}", with_header(blob, g)))
    for i in range(40 * ROUNDS):
        g = json.loads(json.dumps(h))
        t = rnd.choice(tensors)
        kind = rnd.choice(["shape", "offsets", "dtype", "input", "layers", "drop", "extra", "swap"])
        if kind == "shape":
            s = g[t]["shape"]
            choice = rnd.randrange(4)
            if choice == 0 and s:
                s[rnd.randrange(len(s))] = rnd.choice(WEIRD_INTS)
            elif choice == 1:
                s.append(rnd.choice(WEIRD_INTS))
            elif choice == 2 and s:
                s.pop()
            else:
                g[t]["shape"] = rnd.choice([[], "6", [1.5], [None], {"a": 1}])
        elif kind == "offsets":
            o = g[t]["data_offsets"]
            o[rnd.randrange(2)] = rnd.choice(WEIRD_INTS + [o[0] + 4, o[1] - 4, len(blob)])
        elif kind == "dtype":
            g[t]["dtype"] = rnd.choice(["F16", "F64", "I32", "U8", "BF16", "", "f32", 32, None])
        elif kind == "input":
            g["__metadata__"]["nanoconv.input"] = rnd.choice(WEIRD_STRINGS)
        elif kind == "layers":
            parts = g["__metadata__"]["nanoconv.layers"].split("; ")
            parts[rnd.randrange(len(parts))] = rnd.choice(WEIRD_LAYERS)
            g["__metadata__"]["nanoconv.layers"] = "; ".join(parts)
        elif kind == "drop":
            del g[t]
        elif kind == "extra":
            g[f"{rnd.randrange(99)}.weight"] = {"shape": [rnd.choice(WEIRD_INTS)], "dtype": "F32",
                                                 "data_offsets": [0, 4]}
        else:
            a, b = rnd.sample(tensors, 2)
            g[a], g[b] = g[b], g[a]
        out.append((f"model header {i} ({kind} of {t})", with_header(blob, g)))
    for i in range(12 * ROUNDS):
        cut = rnd.randrange(len(blob))
        out.append((f"model truncated at {cut}", blob[:cut]))
    for i in range(20 * ROUNDS):
        b = bytearray(blob)
        for _ in range(rnd.randint(1, 4)):
            p = rnd.randrange(min(len(b), 8 + n + 64))  # the length, the header, the first weights
            b[p] = rnd.randrange(256)
        out.append((f"model bytes flipped {i}", bytes(b)))
    for v in [0, 1, n - 1, n + 1, len(blob), 2**63 - 1, 2**64 - 1]:
        out.append((f"model header length {v}", struct.pack("<Q", v) + blob[8:]))
    return out


def idx_mutations(raw, dims):
    """(name, bytes, gzipped) triples for an IDX file whose header has len(dims) dimensions."""
    hl = 4 + 4 * len(dims)
    magic = struct.unpack(">I", raw[:4])[0]
    out = []
    for i in range(24 * ROUNDS):
        fields = [magic] + list(dims)
        k = rnd.randrange(len(fields))
        fields[k] = rnd.choice([0, 1, 3, 27, 29, 2**31 - 1, 2**32 - 1, 0x800, 0x801, 0x803, 0x804, 0x1803,
                                0x0d03, dims[0] + 1, dims[0] - 1]) & 0xFFFFFFFF
        blob = struct.pack(">" + "I" * len(fields), *fields) + raw[hl:]
        out.append((f"idx field {k} = {fields[k]}", blob, rnd.random() < 0.5))
    for i in range(8 * ROUNDS):
        cut = rnd.randrange(len(raw))
        out.append((f"idx truncated at {cut}", raw[:cut], rnd.random() < 0.5))
    for i in range(8 * ROUNDS):
        z = bytearray(gzip.compress(raw))
        for _ in range(rnd.randint(1, 3)):
            z[rnd.randrange(len(z))] = rnd.randrange(256)
        out.append((f"gzip bytes flipped {i}", bytes(z), None))
    return out


escaped = []  # messages that quote a control character, escaped


def run_case(what, args, logits=None):
    p = subprocess.run([ncpy.nanoconv()] + args, capture_output=True)
    for stream in ("stdout", "stderr"):  # a model's name is printed on stdout
        try:
            text = getattr(p, stream).decode("utf-8")
            plain = all(c.isprintable() or c == "\n" for c in text)
        except UnicodeDecodeError:
            text, plain = getattr(p, stream).decode("utf-8", "backslashreplace"), False
        setattr(p, stream, text)
        chk.check(plain, f"{what}: {stream} is not plain text: {text[-300:]!r}")
    err = p.stderr.lower()
    chk.check(p.returncode in (0, 2), f"{what}: {' '.join(args[:1])} exit {p.returncode}\n{p.stderr[-2000:]}")
    chk.check("sanitizer" not in err and "runtime error" not in err, f"{what}: sanitizer report: {p.stderr[-3000:]}")
    if "\\x1b" in p.stderr or "\\x1b" in p.stdout:
        escaped.append(what)
    if p.returncode == 2:
        chk.check("error" in err and err.count("\n") <= 2, f"{what}: not one clear message: {p.stderr[-500:]!r}")
        if logits:
            chk.check(not os.path.exists(logits), f"{what}: a logits file left behind after a failure")
    if logits and os.path.exists(logits):
        os.remove(logits)
    return p.returncode


with tempfile.TemporaryDirectory() as d:
    rng = np.random.default_rng(7)
    good = os.path.join(d, "good")
    os.mkdir(good)
    imgs = rng.integers(0, 256, (N_IMAGES, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, N_IMAGES)
    img_gz, lab_gz = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"
    ncpy.write_idx_images(os.path.join(good, img_gz), imgs, compress=True)
    ncpy.write_idx_labels(os.path.join(good, lab_gz), labels, compress=True)
    model = os.path.join(d, "m.safetensors")
    ncpy.run(["init", "--name", "m", "--input", "1x28x28 raw", "--layers", ARCH, "--seed", "3", "-o", model])
    blob = open(model, "rb").read()
    logits = os.path.join(d, "logits.bin")
    base = ["--data", good, "-n", str(N_IMAGES)]
    chk.check(run_case("good files", ["eval", "--model", model, "--backend", "cpu-ref"] + base) == 0,
              "good files evaluate")

    bad = os.path.join(d, "bad.safetensors")
    fails = 0
    for what, b in model_mutations(blob):
        with open(bad, "wb") as f:
            f.write(b)
        rc = run_case(what, ["info", bad])
        for be in ("cpu-ref", "cpu"):
            rc |= run_case(f"{what}, {be}", ["eval", "--model", bad, "--backend", be] + base)
        rc |= run_case(what, ["predict", "--model", bad, "--images", os.path.join(good, img_gz), "--labels",
                              os.path.join(good, lab_gz), "--logits", logits], logits)
        fails += rc != 0
    chk.check(fails > 0, "some model mutations are rejected (else the cases test nothing)")
    chk.check(len(escaped) > 0, "some messages quote an escape character from the file (as \\x1b)")

    raw_img = gzip.decompress(open(os.path.join(good, img_gz), "rb").read())
    raw_lab = gzip.decompress(open(os.path.join(good, lab_gz), "rb").read())
    fails = 0
    for name, raw, dims in ((img_gz, raw_img, (N_IMAGES, 28, 28)), (lab_gz, raw_lab, (N_IMAGES,))):
        for what, b, compress in idx_mutations(raw, dims):
            dd = tempfile.mkdtemp(dir=d)
            for f in os.listdir(good):
                if f != name:
                    os.symlink(os.path.join(good, f), os.path.join(dd, f))
            with open(os.path.join(dd, name), "wb") as f:
                f.write(gzip.compress(b) if compress else b)
            what = f"{name}: {what}"
            rc = run_case(what, ["eval", "--model", model, "--backend", "cpu-ref", "--data", dd])
            rc |= run_case(what, ["predict", "--model", model, "--images", os.path.join(dd, img_gz), "--labels",
                                  os.path.join(dd, lab_gz), "--logits", logits], logits)
            fails += rc != 0
    chk.check(fails > 0, "some IDX mutations are rejected (else the cases test nothing)")

    # MXNet's two files through import-mxnet (the network: conv 4 5 bias, tanh, max pool, a dense layer of 10).
    sym = (ncpy.MxnetSymbol()
           .op("Convolution", "conv0", ["weight", "bias"], kernel="(5, 5)", num_filter=4)
           .op("Activation", "tanh0", act_type="tanh")
           .op("Pooling", "pool0", kernel="(2, 2)", stride="(2, 2)", pool_type="max")
           .op("Flatten", "flatten0")
           .op("FullyConnected", "fc0", ["weight", "bias"], num_hidden=10)
           .op("SoftmaxOutput", "softmax", extra=["softmax_label"])).graph()
    arrays = [(f"arg:{n}", (rng.standard_normal(shape) * 0.1).astype(np.float32))
              for n, shape in (("conv0_weight", (4, 1, 5, 5)), ("conv0_bias", (4,)), ("fc0_weight", (10, 576)),
                               ("fc0_bias", (10,)))]
    params = ncpy.mxnet_params_blob(arrays)
    names_at = len(params) - 8 - sum(8 + len(n) for n, _ in arrays)
    mx_sym, mx_par, out = (os.path.join(d, f) for f in ("n-symbol.json", "n-0002.params", "imported.safetensors"))

    def import_case(what, text, blob):
        with open(mx_sym, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
        with open(mx_par, "wb") as f:
            f.write(blob)
        rc = run_case(what, ["import-mxnet", mx_sym, mx_par, "-o", out, "--input", "1x28x28"])
        chk.check(rc == 0 or not os.path.exists(out), f"{what}: a file left at -o after a failure")
        if rc == 0:  # a mutation that is still a network: the model must load and run
            rc2 = run_case(f"{what}, its model", ["eval", "--model", out, "--backend", "cpu-ref"] + base)
            chk.check(rc2 == 0, f"{what}: import-mxnet wrote a model that does not evaluate")
            os.remove(out)
        return rc

    chk.check(import_case("MXNet files", json.dumps(sym), params) == 0, "the good MXNet files import")
    WEIRD_ATTRS = ["(5, 5)", "(0, 0)", "(99999, 99999)", "(-1, 2)", "(2,)", "(", "", "True", "xyz", "(5, 5, 5)", "1e9",
                   "4294967297", "\x1b[31m(2, 2)", "avg", "full", "relu", "NHWC"]
    fails = 0
    for i in range(60 * ROUNDS):
        g = json.loads(json.dumps(sym))
        nodes = g["nodes"]
        k = rnd.randrange(len(nodes))
        kind = rnd.choice(["op", "attr", "attr key", "inputs", "heads", "args", "name", "drop", "dup", "type"])
        if kind == "op":
            nodes[k]["op"] = rnd.choice(["", "Convolution", "Pooling", "Activation", "null", "Deconvolution", "frob",
                                         "FullyConnected", 5, None])
        elif kind == "attr":
            ops = [n for n in nodes if "attrs" in n]
            node = rnd.choice(ops)
            node["attrs"][rnd.choice(list(node["attrs"]))] = rnd.choice(WEIRD_ATTRS)
        elif kind == "attr key":
            ops = [n for n in nodes if "attrs" in n]
            node = rnd.choice(ops)
            if rnd.random() < 0.5:
                del node["attrs"][rnd.choice(list(node["attrs"]))]
            else:
                node["attrs"][rnd.choice(["pad", "stride", "dilate", "num_group", "layout", "flatten", "x\x07"])] = \
                    rnd.choice(WEIRD_ATTRS)
        elif kind == "inputs":
            if nodes[k]["inputs"]:
                e = nodes[k]["inputs"][rnd.randrange(len(nodes[k]["inputs"]))]
                e[rnd.randrange(3)] = rnd.choice([-1, k, k + 1, len(nodes), 10**9, 2**31, "0", None])
            else:
                nodes[k]["inputs"] = rnd.choice([[[0, 0, 0]], [[k, 0, 0]], [0], "x"])
        elif kind == "heads":
            g["heads"] = rnd.choice([[], [[len(nodes), 0, 0]], [[-1, 0, 0]], [[0, 0, 0]], "x", [[1, 5, 0]]])
        elif kind == "args":
            g["arg_nodes"] = rnd.choice([[], [len(nodes)], [-1], "x", list(range(len(nodes)))])
        elif kind == "name":
            nodes[k]["name"] = rnd.choice(["", "data", "conv0_weight", "a" * 300, "\x1b[2J", "n\u0085", 7])
        elif kind == "drop":
            del nodes[k]
        elif kind == "dup":
            nodes.insert(k, json.loads(json.dumps(nodes[k])))
        else:
            g[rnd.choice(["nodes", "heads", "arg_nodes", "attrs"])] = rnd.choice([None, 3, "x", {}, []])
        fails += import_case(f"MXNet symbol {i} ({kind} at node {k})", json.dumps(g), params) != 0
    for i in range(40 * ROUNDS):
        b = bytearray(params)
        kind = rnd.choice(["list header", "array 0", "names", "flip", "cut"])
        if kind == "list header":
            at = 8 * rnd.randrange(3)
            b[at:at + 8] = struct.pack("<Q", rnd.choice([0, 1, 3, 5, 0x111, 0x113, 2**31, 2**63, 2**64 - 1]))
        elif kind == "array 0":  # magic, storage type, ndim, 4 dims, device type and id, dtype
            at, size = rnd.choice([(24, 4), (28, 4), (32, 4), (36, 8), (44, 8), (52, 8), (60, 8), (68, 4), (72, 4),
                                   (76, 4)])
            v = rnd.choice([0, 1, 2, 3, 4, 5, 6, 7, -1, 2**31 - 1, 10**12, -(2**40)])
            b[at:at + size] = struct.pack("<q" if size == 8 else "<i", v if size == 8 else max(min(v, 2**31 - 1),
                                                                                               -(2**31)))
        elif kind == "names":
            at = names_at + rnd.choice([0, 8])
            b[at:at + 8] = struct.pack("<Q", rnd.choice([0, 3, 5, 17, 2**32, 2**63, 2**64 - 1]))
        elif kind == "flip":
            for _ in range(rnd.randint(1, 4)):
                b[rnd.randrange(len(b))] = rnd.randrange(256)
        else:
            b = b[:rnd.randrange(len(b))]
        fails += import_case(f"MXNet params {i} ({kind})", json.dumps(sym), bytes(b)) != 0
    chk.check(fails > 0, "some MXNet mutations are rejected (else the cases test nothing)")

chk.finish()
