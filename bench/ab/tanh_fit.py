#!/usr/bin/python3
"""The coefficients of nc_tanhf's polynomial (src/cuda/conv_act.cuh), fitted here, and their error simulated in fp32.

nc_tanhf takes tanh x as x + x^3 p(x^2) for |x| <= 0.6 (elsewhere from e^(2|x|), on the multi-function unit), p of
degree 3, evaluated as the kernel does: s = x * x, p = fma(fma(fma(c3, s, c2), s, c1), s, c0), q = fma(p, s, 0),
tanh = fma(q, x, x). The fit weighs each point's error by the ulp of tanh x there (the error the GPU test measures):
Lawson's iteration (weighted least squares, the weights raised where the error is largest) on 2000 Chebyshev points of
s in [0, 0.36], tanh from mpmath at 120 bits. The coefficients are then rounded to fp32, and every float x in
[2^-13, 0.6] is run through the kernel's operations in numpy (an fma as a double product and sum rounded to fp32:
the product of two floats is exact in double; the sum's double rounding may differ from a true fma's in the last bit
of rare cases) against numpy's double tanh: the printed max is the polynomial branch's error in ulps. Below 2^-13,
x^3 / 3 is under 2^-27 of x. tests/gpu/test_gpu_layers.c measures the whole function on the GPU, at every float.

    /usr/bin/python3 bench/ab/tanh_fit.py          (a few seconds)
"""
import mpmath as mp
import numpy as np

T = 0.6  # the polynomial up to it, e^(2|x|) above
DEG = 3  # p's degree in s = x^2: x + x^3 .. x^9
mp.mp.prec = 120


def fit():
    n = 2000
    s = np.array([T * T * (1 - np.cos(np.pi * (i + 0.5) / n)) / 2 for i in range(n)])
    x = np.sqrt(s)
    g = np.array([float((mp.tanh(mp.sqrt(mp.mpf(v))) - mp.sqrt(mp.mpf(v))) / mp.mpf(v) ** 1.5) for v in s])
    th = np.tanh(x)
    wt = x**3 / np.ldexp(1.0, np.frexp(th)[1] - 24)  # an error of p at s, in ulps of tanh x
    a = np.vander(s, DEG + 1, increasing=True)
    w = np.full(n, 1.0 / n)
    for _ in range(200):
        r = np.sqrt(w) * wt
        c, *_ = np.linalg.lstsq(a * r[:, None], g * r, rcond=None)
        e = np.abs((a @ c - g) * wt)
        w = w * e
        w /= w.sum()
    return c, e.max()


def f32(v):
    return np.asarray(v, dtype=np.float64).astype(np.float32)


def fma(a, b, c):
    return f32(a.astype(np.float64) * b + c)


def kernel(x, c):
    s = f32(x.astype(np.float64) * x)
    p = fma(np.full_like(x, c[3]), s, np.full_like(x, c[2]))
    p = fma(p, s, np.full_like(x, c[1]))
    p = fma(p, s, np.full_like(x, c[0]))
    q = fma(p, s, np.zeros_like(x))
    return fma(q, x, x)


def main():
    c, trunc = fit()
    c32 = c.astype(np.float32)
    print(f"fit: truncation error at most {trunc:.3f} ulp; in fp32:")
    for i, v in enumerate(c32):
        print(f"  c{i} = {float(v):.9g}f  (0x{int(v.view(np.uint32)):08x})")
    xs = np.arange(np.float32(2.0**-13).view(np.uint32), np.float32(T).view(np.uint32) + 1, dtype=np.uint32)
    xs = xs.view(np.float32)
    worst, at = 0.0, 0.0
    for i in range(0, len(xs), 1 << 23):
        x = xs[i : i + (1 << 23)]
        ref = np.tanh(x.astype(np.float64))
        u = np.abs(kernel(x, c32) - ref) / np.ldexp(1.0, np.frexp(ref)[1] - 24)
        j = int(u.argmax())
        if u[j] > worst:
            worst, at = float(u[j]), float(x[j])
    print(f"fp32 kernel over the {len(xs)} floats of [2^-13, {T}]: at most {worst:.3f} ulp (at x = {at:.9g})")


if __name__ == "__main__":
    main()
