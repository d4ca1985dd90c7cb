#!/usr/bin/env python3
"""The fp32 error of 2-D Winograd F(m x m, 5 x 5) on the zoo's K = 5 second layers, simulated in numpy, against the
exact versions' tolerance (1e-4 + 1e-4 |ref|, tests/gpu/test_conv_ladder.c): whether a larger tile than version 15's
F(4 x 4, 5 x 5) could stay exact. Not the kernel's arithmetic (its transforms share terms, in another order) and not
its measured error (2.1e-6 on 2019 fall's layer fused, after tanh: conv_wino.cu's head), so read the ratios between
tiles and the "V once" floor below, not the absolute errors.

    python3 bench/ab/wino_error.py [--images 8]

Each layer's real weights (models/*.safetensors), inputs in [-1, 1] as a tanh of raw pixels gives them (60% of them
saturated to +-1, the rest uniform), outputs against a double direct sum. The transforms come from Toom-Cook on the
points given plus infinity (exact rationals), B^T's rows and A^T's columns scaled to integers, their scales taken into
G, U = G g G^T in double rounded once, as conv_wino.cu does. Modes: "fp32" everything in fp32 (V = B^T d B and the
output transform as two fp32 matrix products, the products summed over the channels in fp32); "V once, out double"
V rounded once from double and the output transform in double: what is left is U's and V's rounding and the products'
sums, which no order of the transforms' operations removes.
"""
import argparse
import os
import sys
from fractions import Fraction as F
from math import lcm

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))
from bench_cpu import read_safetensors  # noqa: E402


def toom_cook(m, r, pts):
    """A^T (m x n), G (n x r), B^T (n x n) of F(m, r), n = m + r - 1, for y_i = sum_k g_k d_(i+k): the finite points
    pts and infinity."""
    n = m + r - 1
    assert len(pts) == n - 1
    pts = [F(a) for a in pts]

    def polymul(p, q):
        out = [F(0)] * (len(p) + len(q) - 1)
        for i, a in enumerate(p):
            for j, b in enumerate(q):
                out[i + j] += a * b
        return out

    AT = [[a ** i for a in pts] + [F(int(i == m - 1))] for i in range(m)]
    G = []
    for j, a in enumerate(pts):
        N = F(1)
        for k, b in enumerate(pts):
            if k != j:
                N *= a - b
        G.append([a ** i / N for i in range(r)])
    G.append([F(int(i == r - 1)) for i in range(r)])
    BT = []
    for j in range(n - 1):
        p = [F(1)]
        for k, b in enumerate(pts):
            if k != j:
                p = polymul(p, [-b, F(1)])
        BT.append(p + [F(0)])
    p = [F(1)]
    for b in pts:
        p = polymul(p, [-b, F(1)])
    BT.append(p)
    for j in range(n):  # B^T's rows and A^T's columns to integers, G's rows taking both scales
        s = lcm(*[x.denominator for x in BT[j]])
        c = lcm(*[AT[i][j].denominator for i in range(m)])
        BT[j] = [x * s for x in BT[j]]
        for i in range(m):
            AT[i][j] *= c
        G[j] = [x / (s * c) for x in G[j]]
    AT, G, BT = (np.array(X, np.float64) for X in (AT, G, BT))
    rng = np.random.default_rng(0)  # the identity, checked in double
    g, d = rng.standard_normal(r), rng.standard_normal(n)
    ref = np.array([g @ d[i:i + r] for i in range(m)])
    assert np.abs(AT @ ((G @ g) * (BT @ d)) - ref).max() < 1e-9, "Toom-Cook"
    return AT, G, BT


def winograd(m, pts, w, x, mode):
    AT, G, BT = toom_cook(m, 5, pts)
    n = m + 4
    U = np.einsum("ak,mckl,bl->mcab", G, w.astype(np.float64), G).astype(np.float32)
    B, C, H, W = x.shape
    Ho = H - 4
    T = -(-Ho // m)
    xp = np.zeros((B, C, T * m + 4, T * m + 4), np.float32)
    xp[:, :, :H, :W] = x
    y = np.zeros((B, w.shape[0], T * m, T * m))
    BT32, AT32 = BT.astype(np.float32), AT.astype(np.float32)
    for ti in range(T):
        for tj in range(T):
            d = xp[:, :, ti * m:ti * m + n, tj * m:tj * m + n]
            if mode == "fp32":
                V = np.einsum("ai,zcij->zcaj", BT32, d).astype(np.float32)
                V = np.einsum("zcaj,bj->zcab", V, BT32).astype(np.float32)
            else:
                V = np.einsum("ai,zcij,bj->zcab", BT, d.astype(np.float64), BT).astype(np.float32)
            P = np.zeros((B, w.shape[0], n, n), np.float32)
            for c in range(C):  # the channels in order, as phase 2 sums them
                P = (P + U[None, :, c] * V[:, None, c]).astype(np.float32)
            if mode == "fp32":
                o = np.einsum("ia,zmab->zmib", AT32, P).astype(np.float32)
                o = np.einsum("zmib,jb->zmij", o, AT32).astype(np.float32)
            else:
                o = np.einsum("ia,zmab,jb->zmij", AT, P.astype(np.float64), AT)
            y[:, :, ti * m:ti * m + m, tj * m:tj * m + m] = o
    return y[:, :, :Ho, :Ho]


def direct(w, x):
    B, C, H, W = x.shape
    Ho = H - 4
    y = np.zeros((B, w.shape[0], Ho, Ho))
    for c in range(C):
        for kh in range(5):
            for kw in range(5):
                y += w[None, :, c, kh, kw, None, None].astype(np.float64) * x[:, c:c + 1, kh:kh + Ho, kw:kw + Ho]
    return y


TILES = [("F(4x4, 5x5), version 15's points", 4, [0, 1, -1, 2, -2, F(1, 2), F(-1, 2)]),
         ("F(6x6, 5x5), F(4, 7)'s points", 6, [0, 1, -1, 3, -3, F(1, 3), F(-1, 3), F(4, 3), F(-4, 3)]),
         ("F(6x6, 5x5), 0 +-1 +-2 +-1/2 +-3/2", 6, [0, 1, -1, 2, -2, F(1, 2), F(-1, 2), F(3, 2), F(-3, 2)])]
LAYERS = [("fashion-2019-spring", 6, 22), ("fashion-2018-spring", 6, 30), ("fashion-2019-fall", 12, 33)]

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=8)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    for model, C, H in LAYERS:
        w = read_safetensors(os.path.join(ROOT, "models", model + ".safetensors"))[0]["3.weight"]
        shape = (args.images, C, H, H)
        x = np.where(rng.random(shape) < 0.6, np.sign(rng.standard_normal(shape)), rng.uniform(-1, 1, shape))
        x = x.astype(np.float32)
        ref = direct(w, x)
        tol = 1e-4 + 1e-4 * np.abs(ref)
        print(f"{model}'s second layer ({C}x{H}x{H} -> {w.shape[0]}), {args.images} images: max |error|, its share "
              "of the tolerance at the worst output")
        for name, m, pts in TILES:
            for mode in ("fp32", "V once, out double"):
                e = np.abs(winograd(m, pts, w, x, mode) - ref)
                print(f"  {name:38s} {mode:19s} {e.max():.2e}  {(e / tol).max():6.3f}")
