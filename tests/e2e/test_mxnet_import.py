"""`nanoconv import-mxnet`: MXNet symbol and params files written here (both attribute spellings, both array
layouts) are imported, and the imported model gives bitwise the same outputs as the same network written natively,
on every backend built (GPU ones where a GPU answers). Damaged or unsupported files each give one clear message
naming the file and what was wrong, exit status 2, and nothing at -o.

The writers (tests/ncpy.py) follow MXNet's formats (docs/MXNET_IMPORT.md) and share nothing with src/io/mxnet.c.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

try:
    import numpy as np
except ImportError:
    ncpy.skip("numpy missing; install python3-numpy")

chk = ncpy.Checker("test_mxnet_import")

# The test-side MXNet writers (tests/ncpy.py), which follow MXNet's formats and share nothing with src/io/mxnet.c.
Symbol, params_blob = ncpy.MxnetSymbol, ncpy.mxnet_params_blob


# ------------------------------------------------------------------ the two networks


def lenet2(attr_key="attrs"):
    """The 2019-spring network: New (the course's convolution, no bias), then the built-in Convolution."""
    return (Symbol(attr_key)
            .op("New", "new0", ["weight"], kernel="(5, 5)", num_filter=6)
            .op("Activation", "tanh0", act_type="tanh")
            .op("Pooling", "pool0", kernel="(2, 2)", stride="(2, 2)", pool_type="max")
            .op("Convolution", "conv1", ["weight"], kernel="(5, 5)", num_filter=16, no_bias="True")
            .op("Activation", "tanh1", act_type="tanh")
            .op("Pooling", "pool1", kernel="(2, 2)", stride="(2, 2)", pool_type="max")
            .op("Flatten", "flatten0")
            .op("FullyConnected", "fc0", ["weight", "bias"], num_hidden=140)
            .op("Activation", "tanh2", act_type="tanh")
            .op("FullyConnected", "fc1", ["weight", "bias"], num_hidden=10)
            .op("SoftmaxOutput", "softmax", extra=["softmax_label"]))


LENET2_NATIVE = ("conv 6 5; tanh; maxpool 2 2; conv 16 5; tanh; maxpool 2 2; flatten; dense 140 bias; tanh; "
                 "dense 10 bias; softmax")


def lenet1(attr_key="attr"):
    """A one-convolution network exercising the rest: a conv bias, relu, average pooling with the 'full' convention
    where it agrees with 'valid', a FullyConnected that flattens its 4-D input itself, sigmoid."""
    return (Symbol(attr_key)
            .op("Convolution", "conv0", ["weight", "bias"], kernel="(5, 5)", num_filter=8, stride="(1, 1)",
                pad="(0, 0)", dilate="(1, 1)", num_group=1, no_bias="False", workspace=1024)
            .op("Activation", "relu0", act_type="relu")
            .op("Pooling", "pool0", kernel="(2, 2)", stride="(2, 2)", pool_type="avg", pooling_convention="full")
            .op("FullyConnected", "fc0", ["weight", "bias"], num_hidden=32)
            .op("Activation", "sig0", act_type="sigmoid")
            .op("FullyConnected", "fc1", ["weight", "bias"], num_hidden=10)
            .op("SoftmaxOutput", "softmax", extra=["softmax_label"]))


LENET1_NATIVE = "conv 8 5 bias; relu; avgpool 2 2; flatten; dense 32 bias; sigmoid; dense 10 bias; softmax"


def weights(rng, shapes):
    """shapes: list of (mxnet name, shape) -> list of (name, float32 array), scaled like a trained net."""
    return [(n, (rng.standard_normal(s) / np.sqrt(np.prod(s[1:]) if len(s) > 1 else 4.0)).astype(np.float32))
            for n, s in shapes]


rng = np.random.default_rng(6)
W2 = weights(rng, [("arg:new0_weight", (6, 1, 5, 5)), ("arg:conv1_weight", (16, 6, 5, 5)),
                   ("arg:fc0_weight", (140, 16 * 9 * 9)), ("arg:fc0_bias", (140,)),
                   ("arg:fc1_weight", (10, 140)), ("arg:fc1_bias", (10,))])
W1 = weights(rng, [("arg:conv0_weight", (8, 1, 5, 5)), ("arg:conv0_bias", (8,)),
                   ("arg:fc0_weight", (32, 8 * 12 * 12)), ("arg:fc0_bias", (32,)),
                   ("arg:fc1_weight", (10, 32)), ("arg:fc1_bias", (10,))])
# Native tensor names: nn.Sequential's layer index of each parameter.
NATIVE2 = {"0.weight": 0, "3.weight": 1, "7.weight": 2, "7.bias": 3, "9.weight": 4, "9.bias": 5}
NATIVE1 = {"0.weight": 0, "0.bias": 1, "4.weight": 2, "4.bias": 3, "6.weight": 4, "6.bias": 5}


def backends():
    v = ncpy.run(["--version"]).stdout
    names = next(line.split(":", 1)[1].split() for line in v.splitlines() if line.startswith("backends:"))
    try:
        gpu = subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    except OSError:
        gpu = False
    return [b for b in names if gpu or b not in ("cuda", "cudnn")]


def logits(model, images, labels, backend, out):
    ncpy.run(["predict", "--model", model, "--images", images, "--labels", labels, "--backend", backend,
              "--logits", out])
    return np.fromfile(out, dtype=np.float32).reshape(-1, 10)


def torch_lenet1(x, w):
    """MXNet's semantics of lenet1, computed by PyTorch: an oracle independent of nanoconv's layer code."""
    import torch
    import torch.nn.functional as F
    t = [torch.from_numpy(a) for _, a in w]
    y = F.avg_pool2d(F.relu(F.conv2d(torch.from_numpy(x), t[0], t[1])), 2, 2).flatten(1)
    y = F.linear(torch.sigmoid(F.linear(y, t[2], t[3])), t[4], t[5])
    return torch.softmax(y, dim=1).numpy()


def stderr_clean(p, what):
    chk.check("sanitizer" not in p.stderr.lower() and "runtime error" not in p.stderr, f"{what}: {p.stderr}")


with tempfile.TemporaryDirectory() as d:
    def path(name):
        return os.path.join(d, name)

    def write(name, blob):
        with open(path(name), "wb" if isinstance(blob, bytes) else "w") as f:
            f.write(blob)
        return path(name)

    imgs = rng.integers(0, 256, (12, 28, 28), dtype=np.uint8)
    images, labels = path("images.idx"), path("labels.idx")
    ncpy.write_idx_images(images, imgs)
    ncpy.write_idx_labels(labels, rng.integers(0, 10, 12))

    # ------------------------------------------------------------ good imports, both spellings and layouts
    aux = [("aux:unused_moving_mean", np.zeros(3, np.float64))]  # aux states are ignored, whatever their dtype
    # (name, symbol, weights, arrays in the params file, layout, flags, native input, native layers, native names)
    cases = [
        ("lenet2-v2-attrs", lenet2("attrs"), W2, W2, 2, ["--input", "1x48x48"], "1x48x48 raw", LENET2_NATIVE, NATIVE2),
        ("lenet2-v1-attr", lenet2("attr"), W2, W2 + aux, 1, ["--input", "1x48x48"], "1x48x48 raw", LENET2_NATIVE,
         NATIVE2),
        ("lenet1-v1-attr", lenet1("attr"), W1, aux + W1, 1, [], "1x28x28 raw", LENET1_NATIVE, NATIVE1),
        ("lenet1-v2-attrs", lenet1("attrs"), W1, W1, 2, [], "1x28x28 raw", LENET1_NATIVE, NATIVE1),
    ]
    bks = backends()
    print("backends:", " ".join(bks))
    for name, sym, w, arrays, version, flags, native_input, native_layers, native_names in cases:
        sj, pa = write(f"{name}-symbol.json", sym.json()), write(f"{name}-0002.params", params_blob(arrays, version))
        out = path(f"{name}.safetensors")
        p = ncpy.run(["import-mxnet", sj, pa, "-o", out] + flags, check=False)
        chk.check(p.returncode == 0 and os.path.exists(out), f"{name}: import failed: {p.stderr}")
        stderr_clean(p, name)
        if p.returncode != 0:
            continue
        chk.check(f"model {name}: input {native_input}" in p.stdout, f"{name}: summary {p.stdout!r}")
        info = ncpy.run(["info", out]).stdout
        chk.check(native_layers.split("; ")[0] in info, f"{name}: info {info!r}")

        native = path(f"{name}-native.safetensors")
        ncpy.write_safetensors(native, {k: w[i][1] for k, i in native_names.items()},
                               {"nanoconv.input": native_input, "nanoconv.layers": native_layers,
                                "nanoconv.name": name})
        for b in bks:
            a = logits(out, images, labels, b, path("a.f32"))
            n = logits(native, images, labels, b, path("n.f32"))
            chk.check(a.tobytes() == n.tobytes(), f"{name} on {b}: imported and native logits differ by "
                                                  f"{np.abs(a - n).max()}")
            chk.check(np.isfinite(a).all() and np.allclose(a.sum(axis=1), 1, atol=1e-4), f"{name} on {b}: {a[:2]}")
        if name.startswith("lenet1"):
            try:
                ref = torch_lenet1(imgs.astype(np.float32)[:, None], W1)
                a = logits(out, images, labels, "cpu-ref", path("a.f32"))
                chk.check(np.allclose(a, ref, atol=1e-5, rtol=1e-4),
                          f"{name}: differs from PyTorch by {np.abs(a - ref).max()}")
            except ImportError:
                print("no PyTorch: the oracle check is skipped")

    # --name, and the default name from -o.
    p = ncpy.run(["import-mxnet", path("lenet1-v1-attr-symbol.json"), path("lenet1-v1-attr-0002.params"), "-o",
                  path("x.safetensors"), "--name", "fashion-2017"])
    chk.check("model fashion-2017:" in p.stdout, f"--name: {p.stdout!r}")

    # ------------------------------------------------------------ errors
    good_sym = path("lenet2-v2-attrs-symbol.json")
    good_par = path("lenet2-v2-attrs-0002.params")
    blob = params_blob(W2, 2)
    first_dims = 24 + 8 + 4  # list header, array 0's magic and storage type, its ndim

    def expect(sym, par, words, what, flags=("--input", "1x48x48")):
        out = path("err.safetensors")
        p = ncpy.run(["import-mxnet", sym, par, "-o", out] + list(flags), check=False)
        err = p.stderr.lower()
        chk.check(p.returncode == 2, f"{what}: exit {p.returncode}, expected 2\n{p.stderr}")
        for w in words:
            chk.check(w.lower() in err, f"{what}: message lacks {w!r}: {p.stderr.strip()}")
        chk.check("error" in err and err.count("\n") == 1, f"{what}: not one clear message: {p.stderr!r}")
        stderr_clean(p, what)
        chk.check(not os.path.exists(out), f"{what}: a file was left at -o")

    def bad_params(what, b, words):
        expect(good_sym, write("bad.params", b), ["bad.params"] + words, what)

    def bad_symbol(what, s, words, par=None, flags=("--input", "1x48x48")):
        text = s if isinstance(s, str) else s.json()
        expect(write("bad-symbol.json", text), par or good_par, ["bad-symbol.json"] + words, what, flags)

    def patch(b, off, fmt, *v):
        return b[:off] + struct.pack(fmt, *v) + b[off + struct.calcsize(fmt):]

    for cut in (5, 20, 27, first_dims + 5, first_dims + 38, 300, len(blob) // 2, len(blob) - 3):
        bad_params(f"params cut at byte {cut}", blob[:cut], ["truncated"])
    bad_params("bad list magic", patch(blob, 0, "<Q", 0x113), ["magic", "0x113"])
    bad_params("bad array magic", patch(blob, 24, "<I", 0xF993FACB), ["array 0", "magic", "0xf993facb"])
    bad_params("sparse storage", patch(blob, 28, "<i", 2), ["array 0", "storage type 2"])
    bad_params("absurd ndim", patch(blob, 32, "<I", 9), ["array 0", "ndim 9"])
    bad_params("zero dimension", patch(blob, first_dims, "<q", 0), ["array 0", "dimension 0 is 0"])
    bad_params("negative dimension", patch(blob, first_dims, "<q", -6), ["array 0", "dimension 0 is -6"])
    bad_params("huge dimension", patch(blob, first_dims, "<q", 1 << 62), ["array 0"])
    bad_params("array count beyond the file", patch(blob, 16, "<Q", 1 << 40), ["arrays"])
    bad_params("trailing bytes", blob + b"\0\0\0", ["3 unexpected bytes"])
    names_at = blob.rindex(struct.pack("<Q", len(W2)) + struct.pack("<Q", len(W2[0][0])))
    bad_params("name count differs", patch(blob, names_at, "<Q", 5), ["5 names for 6 arrays"])
    bad_params("name length beyond the file", patch(blob, names_at + 8, "<Q", 1 << 40), ["name 0", "truncated"])
    bad_params("name without arg:/aux:", blob.replace(b"arg:fc1_bias", b"xyz:fc1_bias"), ["xyz:fc1_bias"])
    bad_params("a name missing", params_blob(W2[:2] + [("arg:fc0_weights", W2[2][1])] + W2[3:]),
               ["arg:fc0_weight", "fc0", "FullyConnected"])
    bad_params("a shape mismatch", params_blob(W2[:1] + [("arg:conv1_weight", np.zeros((16, 6, 3, 3), np.float32))]
                                               + W2[2:]), ["arg:conv1_weight", "(16, 6, 3, 3)", "(16, 6, 5, 5)"])
    bad_params("float64 weights", params_blob([(n, a.astype(np.float64) if n == "arg:fc1_bias" else a)
                                               for n, a in W2]), ["arg:fc1_bias", "dtype 1", "float64"])
    bad_params("float16 weights (v1)", params_blob([(n, a.astype(np.float16) if n == "arg:new0_weight" else a)
                                                    for n, a in W2], 1), ["arg:new0_weight", "float16"])
    bad_params("an unknown dtype", patch(blob, first_dims + 32 + 8, "<i", 99), ["array 0", "dtype 99"])
    bad_params("a parameter of another network", params_blob(W2 + [("arg:fc2_weight", np.zeros((3, 3), np.float32))]),
               ["arg:fc2_weight"])
    bad_params("a name twice", params_blob(W2 + [W2[0]]), ["arg:new0_weight", "both"])
    bad_params("not a params file at all", b"hello", ["truncated"])
    expect(good_sym, path("missing.params"), ["missing.params"], "missing params file")
    expect(good_sym, good_par, ["1x28x28", "--input", "arg:fc0_weight"], "input size not given", flags=())

    bad_symbol("unsupported op", lenet2().op("Dropout", "drop0", p="0.5"), ["Dropout", "drop0"])
    bad_symbol("stride 2", lenet1("attrs").json().replace('"stride": "(1, 1)"', '"stride": "(2, 2)"'),
               ["conv0", "stride", "(2, 2)"], par=path("lenet1-v2-attrs-0002.params"), flags=())
    bad_symbol("padding", lenet1("attrs").json().replace('"pad": "(0, 0)"', '"pad": "(2, 2)"'), ["conv0", "pad"],
               par=path("lenet1-v2-attrs-0002.params"), flags=())
    bad_symbol("dilation", lenet1("attrs").json().replace('"dilate": "(1, 1)"', '"dilate": "(2, 2)"'),
               ["conv0", "dilate"], par=path("lenet1-v2-attrs-0002.params"), flags=())
    bad_symbol("groups", lenet1("attrs").json().replace('"num_group": "1"', '"num_group": "2"'),
               ["conv0", "num_group"], par=path("lenet1-v2-attrs-0002.params"), flags=())
    # A symbol whose network has 1.1e12 parameters (4.4 TB) at this input: refused by its arrays' shapes, before its
    # parameters are allocated (an attempt failed with exit 1, out of memory, and aborts under ASan).
    expect(write("huge-symbol.json", lenet2().json().replace('"num_hidden": "140"', '"num_hidden": "65536"')),
           good_par, ["lenet2-v2-attrs-0002.params", "arg:fc0_weight", "(65536, 16679056)"], "a network of terabytes",
           flags=("--input", "1x4096x4096"))
    bad_symbol("non-square kernel", lenet2().json().replace('"kernel": "(5, 5)"', '"kernel": "(5, 3)"', 1),
               ["new0", "kernel", "(5, 3)"])
    bad_symbol("tanh spelled otherwise", lenet2().json().replace('"tanh"', '"softrelu"', 1), ["tanh0", "softrelu"])
    bad_symbol("sum pooling", lenet2().json().replace('"max"', '"sum"', 1), ["pool0", "pool_type"])
    bad_symbol("global pooling", lenet2().json().replace('"pool_type"', '"global_pool": "True", "pool_type"', 1),
               ["pool0", "global_pool"])
    bad_symbol("'full' pooling that rounds up", lenet1("attrs"), ["pool0", "pooling_convention"],
               par=path("lenet1-v2-attrs-0002.params"), flags=("--input", "1x29x29"))
    bad_symbol("a kernel larger than its input", lenet2(), ["conv1", "larger"], flags=("--input", "1x12x12"))
    bad_symbol("attribute not a string", lenet2().json().replace('"num_filter": "6"', '"num_filter": 6'),
               ["new0", "num_filter"])
    bad_symbol("num_filter not a number", lenet2().json().replace('"num_filter": "6"', '"num_filter": "six"'),
               ["new0", "num_filter", "six"])
    bad_symbol("missing kernel", lenet2().json().replace('"kernel": "(5, 5)", ', '', 1), ["new0", "kernel"])
    bad_symbol("not JSON", "{\"nodes\": [", ["JSON"])
    bad_symbol("not a symbol", "{\"a\": 1}", ["nodes"])
    two_heads = json.loads(lenet2().json())
    two_heads["heads"].append([0, 0, 0])
    bad_symbol("two outputs", json.dumps(two_heads), ["2 outputs"])
    forward_ref = json.loads(lenet2().json())
    forward_ref["nodes"][2]["inputs"][0] = [5, 0, 0]  # node 2 is new0, node 5 a later one
    bad_symbol("an input naming a later node", json.dumps(forward_ref), ["new0", "input 0"])
    expect(path("missing-symbol.json"), good_par, ["missing-symbol.json"], "missing symbol file")
    expect(good_sym, good_par, ["input"], "bad --input", flags=("--input", "48x48"))
    # --input: one word is raw pixels, blanks around it or not; text too long for an input is refused, not cut.
    for given in (" 1x48x48", "1x48x48 ", "\t1x48x48"):
        out = path("blank-input.safetensors")
        p = ncpy.run(["import-mxnet", good_sym, good_par, "-o", out, "--input", given], check=False)
        info = ncpy.run(["info", out], check=False) if p.returncode == 0 else p
        chk.check(p.returncode == 0 and "1x48x48 raw" in info.stdout, f"--input {given!r}: {p.stderr}{info.stdout}")
    expect(good_sym, good_par, ["--input", "longer than"], "--input too long",
           flags=("--input", "1x48x48 unit" + " " * 160 + "junk"))
    bad_symbol("a kernel of side 0", lenet2().json().replace('"kernel": "(5, 5)"', '"kernel": "(0, 0)"', 1),
               ["new0", "kernel", "must be positive"])
    bad_symbol("a pooling stride of 0", lenet2().json().replace('"stride": "(2, 2)"', '"stride": "(0, 0)"', 1),
               ["pool0", "stride", "must be positive"])
    # -o naming an input, by another path: the input would be replaced by the model.
    for i, victim in enumerate((good_sym, good_par)):
        alias = path(f"alias-{i}")
        os.symlink(victim, alias)
        before = open(victim, "rb").read()
        expect(good_sym, good_par, ["-o", "symbol" if i == 0 else "params", "write the model elsewhere"],
               f"-o the {'symbol' if i == 0 else 'params'} file", flags=("--input", "1x48x48", "-o", alias))
        chk.check(open(victim, "rb").read() == before, f"the {victim} input is left as it was")

    p = ncpy.run(["import-mxnet", good_sym], check=False)
    chk.check(p.returncode == 2 and "import-mxnet" in p.stderr, f"usage error: {p.returncode} {p.stderr}")
    chk.check(not [f for f in os.listdir(d) if ".tmp." in f], "no temporary files left behind")

chk.finish()
