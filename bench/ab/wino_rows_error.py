#!/usr/bin/env python3
"""The fp32 error of Winograd along the rows (version 15's first-layer kernels: conv_wino.cu, "first layers, along
rows") on the zoo's K = 5 first layers, simulated in numpy against a double direct sum, as a share of the exact
versions' tolerance (1e-4 + 1e-4 |ref|, tests/gpu/test_conv_ladder.c): F(4, 5) on its eight points, F(6, 5) on
F(4, 7)'s ten (the kernel's OW = 6), and the direct fp32 sum for scale. Not the kernel's arithmetic (its transforms
share terms, in another order), so read the ratios between the rows.

    python3 bench/ab/wino_rows_error.py [--images 32]

Each layer's real weights (models/*.safetensors) on test images (NANOCONV_DATA, else the Debian package's folder)
upscaled to the layer's input by repeating pixels, as raw pixels (the zoo's first layers take them so). The transforms
come from bench/ab/wino_error.py's Toom-Cook (B^T's rows and A^T's columns scaled to integers, their scales taken into
G), U = G g in double rounded once, V = B^T d in fp32, the products summed over the kernel's rows in fp32, A^T in fp32.
"""
import argparse
import gzip
import os
import sys
from fractions import Fraction as F

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, HERE)
from bench_cpu import read_safetensors  # noqa: E402
from wino_error import toom_cook  # noqa: E402

TILES = [("F(4, 5)", 4, [0, 1, -1, 2, -2, F(1, 2), F(-1, 2)]),
         ("F(6, 5), F(4, 7)'s points", 6, [0, 1, -1, 3, -3, F(1, 3), F(-1, 3), F(4, 3), F(-4, 3)])]
LAYERS = [("fashion-2017-high", 28), ("fashion-2018-spring", 64), ("fashion-2019-spring", 48), ("fashion-2019-fall", 70)]


def rows(m, pts, w, x):
    AT, G, BT = toom_cook(m, 5, pts)
    n = m + 4
    U = np.einsum("ak,mhk->mha", G, w[:, 0].astype(np.float64)).astype(np.float32)  # M, kernel row, point
    B, H, W = x.shape
    Ho, M = H - 4, w.shape[0]
    T = -(-Ho // m)
    xp = np.zeros((B, H, T * m + 4), np.float32)
    xp[:, :, :W] = x
    y = np.zeros((B, M, Ho, T * m))
    BT32, AT32 = BT.astype(np.float32), AT.astype(np.float32)
    for t in range(T):
        V = np.einsum("ai,zri->zra", BT32, xp[:, :, t * m:t * m + n]).astype(np.float32)
        for r in range(Ho):
            P = np.zeros((B, M, n), np.float32)
            for kh in range(5):  # the kernel's rows in order, as the kernel sums them
                P = (P + U[None, :, kh, :] * V[:, None, r + kh, :]).astype(np.float32)
            y[:, :, r, t * m:t * m + m] = np.einsum("ia,zma->zmi", AT32, P).astype(np.float32)
    return y[:, :, :, :Ho]


def direct(w, x, dtype):
    B, H, W = x.shape
    Ho = H - 4
    y = np.zeros((B, w.shape[0], Ho, Ho), dtype)
    for kh in range(5):
        for kw in range(5):
            y = (y + w[None, :, 0, kh, kw, None, None].astype(dtype) * x[:, None, kh:kh + Ho, kw:kw + Ho]).astype(dtype)
    return y


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=32)
    args = ap.parse_args()
    data = os.environ.get("NANOCONV_DATA") or "/usr/share/datasets/fashion-mnist"
    with gzip.open(os.path.join(data, "t10k-images-idx3-ubyte.gz")) as f:
        img = np.frombuffer(f.read()[16:16 + 784 * args.images], np.uint8).reshape(args.images, 28, 28)
    for model, H in LAYERS:
        w = read_safetensors(os.path.join(ROOT, "models", model + ".safetensors"))[0]["0.weight"]
        r = -(-H // 28)
        x = np.kron(img, np.ones((r, r), np.uint8))[:, :H, :H].astype(np.float32)
        ref = direct(w, x, np.float64)
        tol = 1e-4 + 1e-4 * np.abs(ref)
        print(f"{model}'s first layer (1x{H}x{H} -> {w.shape[0]}), {args.images} images: max |error|, its share of "
              "the tolerance at the worst output, mean |error|")
        for name, y in [("direct fp32", direct(w, x, np.float32))] + [(n, rows(m, p, w, x)) for n, m, p in TILES]:
            e = np.abs(y - ref)
            print(f"  {name:28s} {e.max():.2e}  {(e / tol).max():6.4f}  {e.mean():.2e}")
