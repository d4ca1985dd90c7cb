#!/usr/bin/env python3
"""The fp32 error of Winograd on the zoo's K = 7 second layers (2018 fall's 12x33x33 -> 24, 2020's 4x40x40 -> 16),
simulated in numpy against a double direct sum, as a share of the exact versions' tolerance (1e-4 + 1e-4 |ref|,
tests/gpu/test_conv_ladder.c): version 15's F(4, 7) along the rows (the kernel's ten points), and 2-D tiles that would
do fewer multiply-adds: F(4, 7) along the rows by F(2, 7) down the columns, and F(4 x 4, 7 x 7) on the ten points in
both directions, each also with V rounded once from double and A^T in double (what is left is U's and V's rounding
and the products' sums, which no order of a kernel's operations removes). Not the kernels' arithmetic (their
transforms share terms, in another order), so read the ratios between the rows, with the direct fp32 sum for scale.

    python3 bench/ab/wino7_error.py [--images 4] [--search]

--search instead ranks sets of F(2, 7)'s points (0 and three pairs +-a from SEARCH) for the mixed tile by its worst
output's share of the tolerance over both layers.

Inputs as bench/ab/wino_error.py makes them (60% saturated to +-1, the rest uniform in [-1, 1], as a tanh of the first
layer's sums gives them), the layers' real weights (models/*.safetensors). Transforms from wino_error.py's Toom-Cook
(B^T's rows and A^T's columns scaled to integers, their scales taken into G), U in double rounded once, V = B^T d (B)
in fp32, the products summed over the channels (and, along the rows, the kernel's rows) in fp32, A^T in fp32.
"""
import argparse
import itertools
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

P10 = [0, 1, -1, 3, -3, F(1, 3), F(-1, 3), F(4, 3), F(-4, 3)]  # F(4, 7)'s finite points (conv_wino.cu's wr10)
P8 = [0, 1, -1, 2, -2, F(1, 2), F(-1, 2)]                       # F(2, 7)'s: the usual eight


def direct(w, x, dtype):
    B, C, H, W = x.shape
    Ho, Wo = H - 6, W - 6
    y = np.zeros((B, w.shape[0], Ho, Wo), dtype)
    for c in range(C):
        for kh in range(7):
            for kw in range(7):
                y = (y + w[None, :, c, kh, kw, None, None].astype(dtype) * x[:, c:c + 1, kh:kh + Ho, kw:kw + Wo]
                     .astype(dtype)).astype(dtype)
    return y


def rows(w, x):
    """F(4, 7) along the rows: outputs 4 p .. 4 p + 3 of row y = A^T sum over kh, c of (G g[m, c, kh]) . V."""
    AT, G, BT = toom_cook(4, 7, P10)
    B, C, H, W = x.shape
    Ho, Wo = H - 6, W - 6
    T = -(-Wo // 4)
    xp = np.zeros((B, C, H, T * 4 + 6), np.float32)
    xp[:, :, :, :W] = x
    U = np.einsum("ak,mchk->mcha", G, w.astype(np.float64)).astype(np.float32)  # M, C, kernel row, point
    BT32, AT32 = BT.astype(np.float32), AT.astype(np.float32)
    y = np.zeros((B, w.shape[0], Ho, T * 4), np.float32)
    for t in range(T):
        V = np.einsum("ai,zcyi->zcya", BT32, xp[:, :, :, 4 * t:4 * t + 10]).astype(np.float32)  # z, c, row, point
        P = np.zeros((B, w.shape[0], Ho, 10), np.float32)
        for kh in range(7):  # the kernel's rows, then the channels, as phase 2 sums them
            for c in range(C):
                P = (P + U[None, :, c, kh, None, :] * V[:, None, c, kh:kh + Ho, :]).astype(np.float32)
        y[:, :, :, 4 * t:4 * t + 4] = np.einsum("ia,zmya->zmyi", AT32, P).astype(np.float32)
    return y[:, :, :, :Wo]


def tiles2d(mr, pr, mc, pc, w, x, floor=False):
    """F(mc, 7) down the columns by F(mr, 7) along the rows: Y = A_c^T [sum over c of U . V] A_r. floor: V rounded once
    from double and A^T in double, so that what is left is U's and V's rounding and the products' sums, which no order
    of the transforms' operations removes."""
    ATr, Gr, BTr = toom_cook(mr, 7, pr)
    ATc, Gc, BTc = toom_cook(mc, 7, pc)
    nr, nc = mr + 6, mc + 6
    U = np.einsum("ak,mckl,bl->mcab", Gc, w.astype(np.float64), Gr).astype(np.float32)
    B, C, H, W = x.shape
    Ho, Wo = H - 6, W - 6
    Ti, Tj = -(-Ho // mc), -(-Wo // mr)
    xp = np.zeros((B, C, Ti * mc + 6, Tj * mr + 6), np.float32)
    xp[:, :, :H, :W] = x
    y = np.zeros((B, w.shape[0], Ti * mc, Tj * mr), np.float32)
    BTc32, BTr32, ATc32, ATr32 = (a.astype(np.float32) for a in (BTc, BTr, ATc, ATr))
    for ti in range(Ti):
        for tj in range(Tj):
            d = xp[:, :, ti * mc:ti * mc + nc, tj * mr:tj * mr + nr]
            if floor:
                V = np.einsum("ai,zcij,bj->zcab", BTc, d.astype(np.float64), BTr).astype(np.float32)
            else:
                V = np.einsum("ai,zcij->zcaj", BTc32, d).astype(np.float32)
                V = np.einsum("zcaj,bj->zcab", V, BTr32).astype(np.float32)
            P = np.zeros((B, w.shape[0], nc, nr), np.float32)
            for c in range(C):
                P = (P + U[None, :, c] * V[:, None, c]).astype(np.float32)
            if floor:
                o = np.einsum("ia,zmab,jb->zmij", ATc, P.astype(np.float64), ATr)
            else:
                o = np.einsum("ia,zmab->zmib", ATc32, P).astype(np.float32)
                o = np.einsum("zmib,jb->zmij", o, ATr32).astype(np.float32)
            y[:, :, ti * mc:ti * mc + mc, tj * mr:tj * mr + mr] = o
    return y[:, :, :Ho, :Wo]


LAYERS = [("fashion-2018-fall", 12, 33), ("fashion-2020", 4, 40)]
SEARCH = [F(1), F(2), F(1, 2), F(3), F(1, 3), F(3, 2), F(2, 3), F(4, 3), F(3, 4), F(5, 4), F(4, 5)]


def search(data):
    """The mixed tile's worst share of the tolerance for each set of F(2, 7)'s points, the least first."""
    out = []
    for trip in itertools.combinations(SEARCH, 3):
        pts = [F(0)] + [s * a for a in trip for s in (1, -1)]
        worst = max((np.abs(tiles2d(4, P10, 2, pts, w, x) - ref) / tol).max() for w, x, ref, tol in data)
        out.append((worst, " ".join("+-" + str(a) for a in trip)))
    for worst, name in sorted(out)[:8]:
        print(f"  0 {name:24s} {worst:7.3f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=4)
    ap.add_argument("--search", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    data = []
    for model, C, H in LAYERS:
        w = read_safetensors(os.path.join(ROOT, "models", model + ".safetensors"))[0]["3.weight"]
        shape = (args.images, C, H, H)
        x = np.where(rng.random(shape) < 0.6, np.sign(rng.standard_normal(shape)), rng.uniform(-1, 1, shape))
        x = x.astype(np.float32)
        ref = direct(w, x, np.float64)
        tol = 1e-4 + 1e-4 * np.abs(ref)
        if args.search:
            data.append((w, x, ref, tol))
            continue
        print(f"{model}'s second layer ({C}x{H}x{H} -> {w.shape[0]}), {args.images} images: max |error|, its share of "
              "the tolerance at the worst output, mean |error| over the direct fp32 sum's")
        base = np.abs(direct(w, x, np.float32) - ref)
        runs = [("direct fp32 sum", None), ("F(4, 7) along the rows (version 15)", lambda: rows(w, x)),
                ("F(4, 7) rows x F(2, 7) columns", lambda: tiles2d(4, P10, 2, P8, w, x)),
                ("  the same, V once and A^T in double", lambda: tiles2d(4, P10, 2, P8, w, x, True)),
                ("F(4 x 4, 7 x 7), ten points", lambda: tiles2d(4, P10, 4, P10, w, x)),
                ("  the same, V once and A^T in double", lambda: tiles2d(4, P10, 4, P10, w, x, True))]
        for name, f in runs:
            e = base if f is None else np.abs(f() - ref)
            print(f"  {name:38s} {e.max():.2e}  {(e / tol).max():7.3f}  {e.mean() / base.mean():7.1f}")
    if args.search:
        print(f"F(4, 7) along the rows by F(2, 7) down the columns, {args.images} images: the worst output's share of "
              "the tolerance over both layers, by F(2, 7)'s finite points")
        search(data)
