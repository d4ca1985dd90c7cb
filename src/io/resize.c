/* Bilinear upscaling that reproduces, bit for bit, what the course did to make its larger
 * inputs:
 *     (skimage.transform.resize(img / 256.0, (S, S), mode='constant', cval=0) * 256).astype(np.uint8)
 * with scikit-image 0.19 on SciPy >= 1.6. There resize() calls
 *     scipy.ndimage.zoom(image, S / n, order=1, mode='grid-constant', cval=0, grid_mode=True)
 * and clips the result to the input's range. SciPy's NI_ZoomShift (ni_interpolation.c) and
 * get_spline_interpolation_weights (ni_splines.c) compute, in double precision, per axis of
 * input length n and output length S:
 *     zoom  = n / S                          (rounded once, by numpy, before the C code)
 *     cc    = ((o + 0.5) * zoom) - 0.5       (three roundings, in this order)
 *     start = floor(cc), f = cc - start
 *     w0    = 1 - f, w1 = 1 - w0             (w1 is not f: SciPy makes the weights sum to 1)
 * and for each output pixel, over the taps in row-major order (y0x0, y0x1, y1x0, y1x1):
 *     t += (value * wy) * wx                 (value first, then the row weight, then the column)
 * with value 0 (cval) for a tap outside the image. Every detail above changes some of the
 * 10000 Fashion-MNIST test images at some of the course's sizes (tests/oracle/test_resize.py):
 * computing cc as (o + 0.5) * n / S, or multiplying value * (wy * wx), gives thousands of
 * wrong pixels. So does letting the compiler fuse a multiply and an add into an FMA; hence
 * the pragma below for compilers that honour it (clang) and -ffp-contract=off in
 * CMakeLists.txt for GCC, which ignores the pragma and warns about it (-Wunknown-pragmas).
 * (GCC in ISO C mode, -std=c11 as CMake sets it, does not contract either.) */
#if defined(__clang__) || !defined(__GNUC__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "io/resize.h"

#include <math.h>

#include "nanoconv.h"

/* The work is done in blocks of output columns, with everything on the stack, so that any S
 * works without an allocation this function could not report failing: at most RESIZE_BLOCK
 * output columns, whose taps span at most RESIZE_SPAN input columns. When upscaling, 256
 * output columns span at most 258 input columns, so the course's sizes (at most 86) take
 * one block. */
#define RESIZE_BLOCK 256
#define RESIZE_SPAN 512

/* A tap outside the input gets weight 0 and an index clamped inside it: (value * 0) * w is +0, and adding +0 to the
 * sum changes nothing, exactly as SciPy's cval = 0 term does. */
nc_resize_tap nc_resize_axis_tap(int o, double zoom, int n) {
    double cc = (double)o;
    cc += 0.5;
    cc *= zoom;
    cc -= 0.5;
    double start = floor(cc);
    double f = cc - start;
    nc_resize_tap t;
    t.w0 = 1.0 - f;
    t.w1 = 1.0 - t.w0;
    t.i0 = (int)start;
    t.i1 = t.i0 + 1;
    t.pair = t.i1 < 0 ? 0 : t.i1 > n ? n : t.i1;
    if (t.i0 < 0 || t.i0 >= n) {
        t.i0 = t.i0 < 0 ? 0 : n - 1;
        t.w0 = 0.0;
    }
    if (t.i1 < 0 || t.i1 >= n) {
        t.i1 = t.i1 < 0 ? 0 : n - 1;
        t.w1 = 0.0;
    }
    return t;
}

/* dst is (S, S), src is (h, w). Only upscaling (S >= h and S >= w) reproduces scikit-image:
 * when shrinking, resize() first blurs the image with a Gaussian (anti_aliasing), which is
 * not done here; the caller checks S against the image size. S <= 0 writes nothing. */
void nc_resize_u8(uint8_t *dst, int S, const uint8_t *src, int h, int w) {
    if (S <= 0 || h <= 0 || w <= 0) return;

    /* resize() clips to the input's own [min, max] (skimage's _clip_warp_output). With
     * mode='constant' it widens that range to include cval = 0 when 0 lies outside the input's
     * range but inside the output's; pixels are never negative, so that needs an output
     * pixel <= 0 from an input whose minimum is > 0. That cannot happen: every output pixel
     * has a tap inside the image with weight > 0 (cc lies in (-0.5, n - 0.5), so w0 > 0 for
     * the tap at floor(cc), and w1 > 0 when floor(cc) is -1), so it is > 0. The clip therefore
     * is to [min, max] of the input; it lifts the border, where taps fall outside, up to the
     * minimum of an image whose minimum is > 0. */
    uint8_t lo8 = 255, hi8 = 0;
    for (size_t i = 0; i < (size_t)h * (size_t)w; i++) {
        if (src[i] < lo8) lo8 = src[i];
        if (src[i] > hi8) hi8 = src[i];
    }
    const double lo = lo8 / 256.0, hi = hi8 / 256.0;
    const double zoom_y = (double)h / (double)S, zoom_x = (double)w / (double)S;

    nc_resize_tap cols[RESIZE_BLOCK];                  /* taps of the block's output columns, indices from x0 */
    double scaled0[RESIZE_SPAN], scaled1[RESIZE_SPAN]; /* (value * wy) of the two input rows, from x0 */
    for (int x_begin = 0; x_begin < S;) {
        /* Take output columns while their taps stay within RESIZE_SPAN input columns of the
         * first one's (tap indices never decrease along an axis). */
        const int x0 = nc_resize_axis_tap(x_begin, zoom_x, w).i0;
        int count = 0;
        while (count < RESIZE_BLOCK && x_begin + count < S) {
            nc_resize_tap t = nc_resize_axis_tap(x_begin + count, zoom_x, w);
            if (t.i1 - x0 >= RESIZE_SPAN) break;
            t.i0 -= x0;
            t.i1 -= x0;
            cols[count++] = t;
        }
        const int span = cols[count - 1].i1 + 1;

        for (int oy = 0; oy < S; oy++) {
            const nc_resize_tap ry = nc_resize_axis_tap(oy, zoom_y, h);
            const uint8_t *row0 = src + (size_t)ry.i0 * (size_t)w + x0; /* (span) */
            const uint8_t *row1 = src + (size_t)ry.i1 * (size_t)w + x0; /* (span) */
            /* value * wy is the first product of every term, shared by all the output columns
             * that use the input column; pixel values are v / 256.0, exact, as numpy's img / 256.0. */
            for (int k = 0; k < span; k++) {
                scaled0[k] = row0[k] / 256.0 * ry.w0;
                scaled1[k] = row1[k] / 256.0 * ry.w1;
            }
            uint8_t *out = dst + (size_t)oy * (size_t)S + (size_t)x_begin;
            for (int j = 0; j < count; j++) {
                const nc_resize_tap cx = cols[j];
                double t = 0.0;
                t += scaled0[cx.i0] * cx.w0;
                t += scaled0[cx.i1] * cx.w1;
                t += scaled1[cx.i0] * cx.w0;
                t += scaled1[cx.i1] * cx.w1;
                t = t < lo ? lo : t;
                t = t > hi ? hi : t;
                /* * 256 is exact; the conversion truncates, as numpy's astype(np.uint8). */
                out[j] = (uint8_t)(t * 256.0);
            }
        }
        x_begin += count;
    }
}
