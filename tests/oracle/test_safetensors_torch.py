"""A model file written from PyTorch loads in nanoconv, and one written by nanoconv loads in PyTorch.

Writes an nn.Sequential's state_dict with the dependency-free safetensors writer that docs/MODEL_FORMAT.md shows
(this interpreter has torch but not the `safetensors` package), then runs `$NANOCONV info MODEL`: exit 0 and a
summary naming every layer. A corrupted copy must give exit 2 with the file name on stderr. Finally
`$NANOCONV init` writes a file that a plain Python reader parses and `load_state_dict(strict=True)` accepts.
Exits 77 (ctest skip) when the CLI has not been built.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import torch
from torch import nn


def save_safetensors(tensors, path, metadata):
    """The fallback writer of docs/MODEL_FORMAT.md: u64 header length, JSON header, then the raw F32 data."""
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        data = t.detach().to(torch.float32).contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)  # data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.write(b"".join(blobs))


def load_safetensors(path):
    """A plain reader: returns (metadata, {name: tensor})."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    tensors = {}
    for name, e in header.items():
        assert e["dtype"] == "F32", (name, e["dtype"])
        b, end = e["data_offsets"]
        tensors[name] = torch.frombuffer(bytearray(data[b:end]), dtype=torch.float32).reshape(e["shape"])
    return meta, tensors


FAILED = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED.append(what)


def run(*args):
    return subprocess.run([os.environ["NANOCONV"], *args], capture_output=True, text=True, timeout=120)


def main():
    exe = os.environ.get("NANOCONV")
    if not exe or not os.path.isfile(exe) or not os.access(exe, os.X_OK):
        print("skip: NANOCONV is not set or not an executable (%r); build the nanoconv CLI first" % exe)
        return 77

    torch.manual_seed(0)
    # Layer indices as in nn.Sequential: 0 conv, 1 tanh, 2 maxpool, 3 conv, 4 relu, 5 avgpool, 6 flatten,
    # 7 dense, 8 sigmoid, 9 dense, 10 softmax.
    layers = ("conv 6 5; tanh; maxpool 2 2; conv 16 5 bias; relu; avgpool 2 2; flatten; dense 40 bias; sigmoid; "
              "dense 10 bias; softmax")
    model = nn.Sequential(
        nn.Conv2d(1, 6, 5, bias=False), nn.Tanh(), nn.MaxPool2d(2, 2),
        nn.Conv2d(6, 16, 5, bias=True), nn.ReLU(), nn.AvgPool2d(2, 2), nn.Flatten(),
        nn.Linear(16 * 4 * 4, 40), nn.Sigmoid(), nn.Linear(40, 10), nn.Softmax(dim=1))
    meta = {"nanoconv.name": "torch-small", "nanoconv.input": "1x28x28 unit", "nanoconv.layers": layers}

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "small.safetensors")
        save_safetensors(model.state_dict(), path, meta)

        r = run("info", path)
        check(r.returncode == 0, "info exits 0 (got %d: %s)" % (r.returncode, r.stderr.strip()))
        out = r.stdout
        check("torch-small" in out and "1x28x28 unit" in out, "summary names the model and its input")
        for text in ("conv 6 5", "tanh", "maxpool 2 2", "conv 16 5 bias", "relu", "avgpool 2 2", "flatten",
                     "dense 40 bias", "sigmoid", "dense 10 bias", "softmax"):
            check(text in out, "summary names layer '%s'" % text)
        n_params = sum(p.numel() for p in model.parameters())
        check(str(n_params) in out, "summary gives the parameter total %d" % n_params)

        # A copy cut short inside its data buffer.
        bad = os.path.join(d, "cut.safetensors")
        with open(path, "rb") as f:
            raw = f.read()
        with open(bad, "wb") as f:
            f.write(raw[:-10])
        r = run("info", bad)
        check(r.returncode == 2, "a truncated file gives exit 2 (got %d)" % r.returncode)
        check(bad in r.stderr, "the error names the file: %s" % r.stderr.strip())

        # A state_dict that does not match its architecture: the file's tensors say dense 40, the text dense 41.
        wrong = os.path.join(d, "wrong.safetensors")
        save_safetensors(model.state_dict(), wrong, dict(meta, **{"nanoconv.layers": layers.replace("40", "41")}))
        r = run("info", wrong)
        check(r.returncode == 2 and "7.weight" in r.stderr and "expected" in r.stderr,
              "a shape mismatch gives exit 2 naming the tensor: %s" % r.stderr.strip())

        # The other way: nanoconv writes, PyTorch reads.
        out_path = os.path.join(d, "init.safetensors")
        r = run("init", "--name", "from-c", "--input", "1x28x28 unit", "--layers", layers, "--seed", "3",
                "-o", out_path)
        check(r.returncode == 0, "nanoconv init exits 0 (got %d: %s)" % (r.returncode, r.stderr.strip()))
        if r.returncode == 0:
            with open(out_path, "rb") as f:
                (n,) = struct.unpack("<Q", f.read(8))
            check((8 + n) % 8 == 0, "nanoconv's header is padded to 8 bytes")
            meta2, tensors = load_safetensors(out_path)
            check(meta2.get("nanoconv.layers") == layers and meta2.get("nanoconv.name") == "from-c",
                  "nanoconv's metadata round-trips: %r" % meta2)
            try:
                model.load_state_dict(tensors, strict=True)
                loaded = True
            except RuntimeError as e:
                print(e)
                loaded = False
            check(loaded, "load_state_dict(strict=True) accepts nanoconv's file")
            bound = 1.0 / (6 * 25) ** 0.5
            check(float(tensors["3.weight"].abs().max()) <= bound, "init stays inside 1/sqrt(fan_in)")

    if FAILED:
        print("%d check(s) failed" % len(FAILED))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
