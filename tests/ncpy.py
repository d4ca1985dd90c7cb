"""Test-side helpers: write IDX, safetensors and MXNet files, run the nanoconv CLI.

Kept small on purpose: the tests must not depend on the code they check, so
these writers are independent of src/io/.
"""
import array
import gzip
import json
import os
import struct
import subprocess
import sys

SKIP = 77


def skip(msg):
    print(f"SKIP: {msg}")
    sys.exit(SKIP)


def nanoconv():
    exe = os.environ.get("NANOCONV")
    if not exe or not os.path.exists(exe):
        skip("NANOCONV is not set to the nanoconv binary (run through ctest)")
    return exe


def backends():
    """The backends `nanoconv --version` lists."""
    out = subprocess.run([nanoconv(), "--version"], capture_output=True, text=True).stdout
    return out.split("backends:")[-1].split()


def require_gpu():
    """Skips (77), saying why, unless nanoconv has the cuda backend and nvidia-smi lists a GPU; returns backends()."""
    built = backends()
    if "cuda" not in built:
        skip(f"nanoconv was built without the cuda backend (backends: {' '.join(built)})")
    try:
        gpu = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        if gpu.returncode != 0 or "GPU" not in gpu.stdout:
            skip(f"no GPU here (nvidia-smi -L: {gpu.stdout.strip() or gpu.stderr.strip()})")
    except FileNotFoundError:
        skip("no GPU here (no nvidia-smi)")
    return built


def data_dir():
    return os.environ.get("NANOCONV_DATA") or "/usr/share/datasets/fashion-mnist"


def read_f32(path):
    """The float32 values of a raw file (nanoconv predict --logits writes one), as array('f')."""
    values = array.array("f")
    with open(path, "rb") as f:
        values.frombytes(f.read())
    return values


def test_split():
    """(data dir, t10k image file, t10k label file) of the Fashion-MNIST files; skips (77) where they are missing."""
    data = data_dir()
    images = os.path.join(data, "t10k-images-idx3-ubyte.gz")
    labels = os.path.join(data, "t10k-labels-idx1-ubyte.gz")
    if not os.path.exists(images):
        skip(f"no Fashion-MNIST data in {data}; set NANOCONV_DATA")
    return data, images, labels


def write_idx_images(path, images, magic=0x803, compress=False):
    """images: numpy uint8 array (n, h, w)."""
    n, h, w = images.shape
    blob = struct.pack(">IIII", magic, n, h, w) + images.astype("uint8").tobytes()
    with (gzip.open if compress else open)(path, "wb") as f:
        f.write(blob)


def write_idx_labels(path, labels, magic=0x801, compress=False):
    blob = struct.pack(">II", magic, len(labels)) + bytes(int(x) for x in labels)
    with (gzip.open if compress else open)(path, "wb") as f:
        f.write(blob)


# MXNet's files (docs/MXNET_IMPORT.md): a symbol's JSON and an NDArray list.
MXNET_V1_MAGIC, MXNET_V2_MAGIC = 0xF993FAC8, 0xF993FAC9
MXNET_DTYPES = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5, "int64": 6}


class MxnetSymbol:
    """A chain of MXNet nodes. attr_key is "attrs" (MXNet 1.x) or "attr" (0.x); values are strings as MXNet writes
    them. Each op's parameters become null nodes named NODE_weight / NODE_bias, as MXNet names them."""

    def __init__(self, attr_key="attrs"):
        self.key, self.nodes, self.args = attr_key, [], []
        self.head = self.var("data")

    def var(self, name):
        self.nodes.append({"op": "null", "name": name, "inputs": []})
        self.args.append(len(self.nodes) - 1)
        return len(self.nodes) - 1

    def op(self, op, name, params=(), extra=(), **attrs):
        inputs = [self.head] + [self.var(f"{name}_{p}") for p in params] + [self.var(e) for e in extra]
        node = {"op": op, "name": name, "inputs": [[i, 0, 0] for i in inputs]}
        if attrs:
            node[self.key] = {k: str(v) for k, v in attrs.items()}
        self.nodes.append(node)
        self.head = len(self.nodes) - 1
        return self

    def graph(self):
        return {"nodes": self.nodes, "arg_nodes": self.args, "node_row_ptr": list(range(len(self.nodes) + 1)),
                "heads": [[self.head, 0, 0]], "attrs": {"mxnet_version": ["int", 10500]}}

    def json(self):
        return json.dumps(self.graph())


def mxnet_params_blob(arrays, version=2):
    """arrays: list of (name, numpy array). MXNet's NDArray list: header, arrays, names; little-endian."""
    import numpy as np
    b = struct.pack("<QQQ", 0x112, 0, len(arrays))
    for _, a in arrays:
        a = np.ascontiguousarray(a)
        b += struct.pack("<Ii", MXNET_V2_MAGIC, 0) if version == 2 else struct.pack("<I", MXNET_V1_MAGIC)
        b += struct.pack(f"<I{a.ndim}q", a.ndim, *a.shape) + struct.pack("<iii", 1, 0, MXNET_DTYPES[a.dtype.name])
        b += a.astype(a.dtype.newbyteorder("<")).tobytes()
    b += struct.pack("<Q", len(arrays))
    for name, _ in arrays:
        b += struct.pack("<Q", len(name.encode())) + name.encode()
    return b


def read_idx(path):
    import numpy as np
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        blob = f.read()
    magic, n = struct.unpack(">II", blob[:8])
    if magic & 0xFF == 3:
        h, w = struct.unpack(">II", blob[8:16])
        return np.frombuffer(blob[16:], dtype=np.uint8).reshape(n, h, w)
    return np.frombuffer(blob[8:], dtype=np.uint8)


def write_safetensors(path, tensors, metadata):
    """tensors: dict name -> numpy float32 array. The plain format: u64 header length, JSON, data."""
    import numpy as np
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        b = np.ascontiguousarray(arr, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = metadata
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def torch_sequential(layers_text, in_shape):
    """The architecture text as a torch nn.Sequential whose module i is layer i (flatten included), with torch's
    default initial weights: the oracle tests and bench/bench_cpu.py set their own."""
    import torch
    mods, (c, h, w) = [], in_shape
    flat = None
    for tok in [t.split() for t in layers_text.split(";")]:
        kind = tok[0]
        if kind == "conv":
            m, k = int(tok[1]), int(tok[2])
            mods.append(torch.nn.Conv2d(c, m, k, bias="bias" in tok))
            c, h, w = m, h - k + 1, w - k + 1
        elif kind in ("maxpool", "avgpool"):
            p, s = int(tok[1]), int(tok[2])
            mods.append((torch.nn.MaxPool2d if kind == "maxpool" else torch.nn.AvgPool2d)(p, s))
            h, w = (h - p) // s + 1, (w - p) // s + 1
        elif kind == "flatten":
            mods.append(torch.nn.Flatten())
            flat = c * h * w
        elif kind == "dense":
            n = int(tok[1])
            mods.append(torch.nn.Linear(flat, n, bias="bias" in tok))
            flat = n
        else:
            mods.append({"tanh": torch.nn.Tanh(), "relu": torch.nn.ReLU(), "sigmoid": torch.nn.Sigmoid(),
                         "softmax": torch.nn.Softmax(dim=1)}[kind])
    return torch.nn.Sequential(*mods)


def run(args, check=True):
    """Runs nanoconv with args; returns the CompletedProcess (text mode)."""
    p = subprocess.run([nanoconv()] + args, capture_output=True, text=True)
    if check and p.returncode != 0:
        print("command failed:", " ".join(args), "\n", p.stdout, p.stderr)
        sys.exit(1)
    return p


class Checker:
    """Counts checks; finish() prints 'N passed, M failed' and exits 1 on any failure."""

    def __init__(self, name):
        self.name, self.passed, self.failed = name, 0, 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAILED: {what}")

    def finish(self):
        print(f"{self.name}: {self.passed} passed, {self.failed} failed")
        sys.exit(1 if self.failed or not self.passed else 0)
