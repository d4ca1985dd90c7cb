/*
 * The cpu backend's op 0 (input_cpu.h): nc_resize_u8's operations on V images at once.
 *
 * Per lane the operations are nc_resize_u8's, in its order and in double precision, everything 256 times its: a
 * pixel's value v (not v / 256.0) times its row's weight, times its column's weight, the four terms added in the order
 * y0x0, y0x1, y1x0, y1x1. Scaling by 2^8 commutes with every rounding here (no term comes near the ends of the double
 * range), so the sum t is 256 times nc_resize_u8's, bit for bit; nc_resize_u8 clips its sum to the image's [min, max]
 * / 256 and truncates 256 times that, which, min and max being whole numbers, is t truncated and clamped to [min,
 * max] (the GPU's resize does the same: src/cuda/layers.cu). IEEE arithmetic gives each lane the same bits as the
 * scalar code; what must not happen is a multiply and an add fused into an FMA, so this file is compiled with
 * -ffp-contract=off (CMakeLists.txt), as resize.c is. The code is written once for any V (4, 8 or 16) and each
 * instruction set's entry point below compiles it for its own vectors; only the output pixels' sums differ: GCC's
 * vector extension on AVX2 and AVX-512 (RESIZE_SUMS), a loop of lanes on the portable path.
 */
#include "cpu/input_cpu.h"

#include "core/model.h"
#include "cpu/conv_cpu.h"
#include "io/resize.h"

/* The workspace: the group's pixels (h, w, V) in at most (H, W, V) bytes; an output row's pixels, (W, V) bytes; each
 * rounded up to 64. Then the two input rows of the output row, weighted, (w, V) doubles each; then the W columns'
 * taps. */
static size_t pixels_bytes(int H, int W, int V) {
    return ((size_t)H * W * V + 63) / 64 * 64;
}

static size_t row_bytes(int W, int V) {
    return ((size_t)W * V + 63) / 64 * 64;
}

size_t nc_input_ws_bytes(int H, int W, int V) {
    return pixels_bytes(H, W, V) + row_bytes(W, V) + 2 * (size_t)W * V * sizeof(double) +
           (size_t)W * sizeof(nc_resize_tap);
}

/* Lanes of doubles, as GCC's vector extension gives them: each operation is every lane's own IEEE operation, which
 * each instruction set compiles to its own vectors. On AVX2 and AVX-512 the output pixels' sums go through them four
 * or eight lanes at a time: left to itself, GCC vectorised that loop in pairs of lanes and stored the bytes one by one
 * (session 68: op 0 36-45% faster on AVX-512 and twice as fast on AVX2; docs/PERFORMANCE.md, "The input"). */
typedef double v4d __attribute__((vector_size(32)));
typedef int v4i __attribute__((vector_size(16)));
typedef unsigned char v16b __attribute__((vector_size(16)));
typedef unsigned char v4b __attribute__((vector_size(4)));
typedef double v8d __attribute__((vector_size(64)));
typedef int v8i __attribute__((vector_size(32)));
typedef unsigned char v32b __attribute__((vector_size(32)));
typedef unsigned char v8b __attribute__((vector_size(8)));

/* Output pixel ox's sums for the V lanes, N at a time (vd, vi: N doubles and ints; vb: vi's bytes; vq: N bytes, the
 * low one of each int, whose indices in vb follow), into q's column ox. Expanded inside input_group's loop over the
 * columns, whose locals it reads: a0, a1 (b0, b1), the upper (lower) input row's weighted pixels at column cx's two
 * taps; lo and hi, the lanes' clip ranges. nc_resize_u8 starts from t = 0.0 and adds the first term: the same as
 * taking it, as no term is -0 (values and weights are >= +0). */
#define RESIZE_SUMS(N, vd, vi, vb, vq, ...)                                                                            \
    for (int v = 0; v < V; v += N) {                                                                                   \
        vd p00, p01, p10, p11;                                                                                         \
        vi l, u;                                                                                                       \
        __builtin_memcpy(&p00, a0 + v, sizeof p00);                                                                    \
        __builtin_memcpy(&p01, a1 + v, sizeof p01);                                                                    \
        __builtin_memcpy(&p10, b0 + v, sizeof p10);                                                                    \
        __builtin_memcpy(&p11, b1 + v, sizeof p11);                                                                    \
        __builtin_memcpy(&l, lo + v, sizeof l);                                                                        \
        __builtin_memcpy(&u, hi + v, sizeof u);                                                                        \
        vd t = p00 * cx.w0;                                                                                            \
        t += p01 * cx.w1;                                                                                              \
        t += p10 * cx.w0;                                                                                              \
        t += p11 * cx.w1;                                                                                              \
        vi c = __builtin_convertvector(t, vi), below = c < l, above; /* truncated, as by the cast; masks */            \
        c = (l & below) | (c & ~below);                                                                                \
        above = c > u;                                                                                                 \
        c = (u & above) | (c & ~above);                                                                                \
        const vb b = (vb)c;                                                                                            \
        const vq p = __builtin_shufflevector(b, b, __VA_ARGS__);                                                       \
        __builtin_memcpy(q + (size_t)ox * V + v, &p, sizeof p);                                                        \
    }

/* x[i] = q[i] scaled, for i < n: the scaling's case chosen once, so that the loop is a vector one. */
static inline __attribute__((always_inline)) void scale_pixels(float *restrict x, const uint8_t *restrict q, size_t n,
                                                               nc_scaling scaling, float mean, float sd) {
    switch (scaling) {
    case NC_SCALE_UNIT:
        for (size_t i = 0; i < n; i++) x[i] = nc_scale_value(NC_SCALE_UNIT, mean, sd, q[i]);
        break;
    case NC_SCALE_NORM:
        for (size_t i = 0; i < n; i++) x[i] = nc_scale_value(NC_SCALE_NORM, mean, sd, q[i]);
        break;
    default:
        for (size_t i = 0; i < n; i++) x[i] = nc_scale_value(NC_SCALE_RAW, mean, sd, q[i]);
        break;
    }
}

static inline __attribute__((always_inline)) void input_group(const int V, float *restrict x,
                                                              const uint8_t *restrict images, int nb, int h, int w,
                                                              int H, int W, const nc_model *m, void *ws) {
    const size_t hw = (size_t)h * w;
    const nc_scaling scaling = m->scaling; /* in locals, which the stores into x cannot change */
    const float mean = m->mean, sd = m->std;
    uint8_t *restrict u = ws; /* (h, w, V): lane v is image v, zeros past nb */
    for (int v = 0; v < V; v++)
        if (v < nb) {
            const uint8_t *src = images + (size_t)v * hw;
            for (size_t j = 0; j < hw; j++) u[j * V + v] = src[j];
        } else {
            for (size_t j = 0; j < hw; j++) u[j * V + v] = 0;
        }
    if (h == H && w == W) {
        scale_pixels(x, u, hw * V, scaling, mean, sd);
    } else {
        uint8_t *restrict q = (uint8_t *)ws + pixels_bytes(H, W, V); /* (W, V): a row resized */
        double *restrict s0 = (double *)((char *)ws + pixels_bytes(H, W, V) + row_bytes(W, V)); /* (w, V) */
        double *restrict s1 = s0 + (size_t)w * V;                                               /* (w, V) */
        nc_resize_tap *restrict cols = (nc_resize_tap *)(s1 + (size_t)w * V);                   /* (W) */
        /* Each image's clip range, [min, max] of its pixels (resize.c says why). */
        uint8_t lo8[16], hi8[16]; /* V <= 16 */
        int lo[16], hi[16];
        for (int v = 0; v < V; v++) lo8[v] = 255, hi8[v] = 0;
        for (size_t j = 0; j < hw; j++)
            for (int v = 0; v < V; v++) {
                const uint8_t p = u[j * V + v];
                lo8[v] = p < lo8[v] ? p : lo8[v];
                hi8[v] = p > hi8[v] ? p : hi8[v];
            }
        for (int v = 0; v < V; v++) lo[v] = lo8[v], hi[v] = hi8[v];
        const double zoom_y = (double)h / (double)H, zoom_x = (double)w / (double)W;
        for (int ox = 0; ox < W; ox++) cols[ox] = nc_resize_axis_tap(ox, zoom_x, w);
        for (int oy = 0; oy < H; oy++) {
            const nc_resize_tap ry = nc_resize_axis_tap(oy, zoom_y, h);
            const uint8_t *r0 = u + (size_t)ry.i0 * w * V, *r1 = u + (size_t)ry.i1 * w * V;
            for (size_t k = 0; k < (size_t)w * V; k++) {
                s0[k] = r0[k] * ry.w0;
                s1[k] = r1[k] * ry.w1;
            }
            float *xr = x + (size_t)oy * W * V;
            for (int ox = 0; ox < W; ox++) {
                const nc_resize_tap cx = cols[ox];
                const double *a0 = s0 + (size_t)cx.i0 * V, *a1 = s0 + (size_t)cx.i1 * V;
                const double *b0 = s1 + (size_t)cx.i0 * V, *b1 = s1 + (size_t)cx.i1 * V;
                /* The portable path, a lane at a time: baseline x86-64 has no compares of doubles into 64-bit
                 * masks, and the vector code below ran 6 times slower there. */
                if (V == NC_SCALAR_LANES) {
                    for (int v = 0; v < V; v++) { /* RESIZE_SUMS's operations, a lane at a time */
                        double t = a0[v] * cx.w0;
                        t += a1[v] * cx.w1;
                        t += b0[v] * cx.w0;
                        t += b1[v] * cx.w1;
                        int c = (int)t; /* truncated */
                        c = c < lo[v] ? lo[v] : c;
                        c = c > hi[v] ? hi[v] : c;
                        q[(size_t)ox * V + v] = (uint8_t)c;
                    }
                    continue;
                }
                /* AVX2 and AVX-512: the same operations, several lanes at a time. */
                if (V == 16) {
                    RESIZE_SUMS(8, v8d, v8i, v32b, v8b, 0, 4, 8, 12, 16, 20, 24, 28)
                } else {
                    RESIZE_SUMS(4, v4d, v4i, v16b, v4b, 0, 4, 8, 12)
                }
            }
            scale_pixels(xr, q, (size_t)W * V, scaling, mean, sd);
        }
    }
    for (size_t j = 0; j < (size_t)H * W; j++)
        for (int v = nb; v < V; v++) x[j * V + v] = 0.0f;
}

_Static_assert(NC_SCALAR_LANES <= 16, "input_group's per-lane arrays hold 16 lanes");

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) static void
input_group_avx512(float *x, const uint8_t *images, int nb, int h, int w, int H, int W, const nc_model *m, void *ws) {
    input_group(16, x, images, nb, h, w, H, W, m, ws);
}

__attribute__((target("avx2,fma"))) static void input_group_avx2(float *x, const uint8_t *images, int nb, int h, int w,
                                                                 int H, int W, const nc_model *m, void *ws) {
    input_group(8, x, images, nb, h, w, H, W, m, ws);
}

static void input_group_scalar(float *x, const uint8_t *images, int nb, int h, int w, int H, int W, const nc_model *m,
                               void *ws) {
    input_group(NC_SCALAR_LANES, x, images, nb, h, w, H, W, m, ws);
}

void nc_input_group(nc_cpu_isa isa, float *x, const uint8_t *images, int nb, int h, int w, int H, int W,
                    const nc_model *m, void *ws) {
    switch (isa) {
    case NC_ISA_AVX512: input_group_avx512(x, images, nb, h, w, H, W, m, ws); break;
    case NC_ISA_AVX2: input_group_avx2(x, images, nb, h, w, H, W, m, ws); break;
    default: input_group_scalar(x, images, nb, h, w, H, W, m, ws); break;
    }
}
