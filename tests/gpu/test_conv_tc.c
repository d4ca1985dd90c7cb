/*
 * The tensor-core versions against the CPU reference: convolution versions 7 (tf32), 8 (3xtf32), 9 (fp16) and 10
 * (bf16) of conv_tc.cu, fused with every activation and pooling none / max 2 / avg 2, on float and uint8 input
 * (raw, /255 and mean/std scaling), random shapes (K = 3..7, M across and between multiples of 16, odd and even
 * maps), batches large enough that every block takes several groups of images (the cp.async pipeline), pixels
 * not 4-byte aligned (which they leave to version 6), each at every tuning of nc_conv_tc_tunings; the zoo's first
 * layers, which run on kernels of their own shape that stage their outputs (describe_case checks which kernel each
 * launch gets); layers of C > 1 input channels (conv_tcc_kernel: the zoo's second layers and random ones, M up to
 * 32; M beyond it, uint8 input with C > 1 and version 8 with C > 1 left to version 6).
 * Outputs are poisoned with NaN before each run. (dense_tc.cu's GEMMs: tests/gpu/test_dense_tc.c.)
 * Skips (77) where the build has no CUDA or the machine no GPU.
 *
 * Tolerance, per output: |gpu - ref| <= tol * S + 1e-5 (1 + |ref|), S = sum |w| |x| over the output's window (the
 * largest over a pooling window; the activations and pooling do not enlarge an error). Rounding to a significand of
 * p bits moves a value by at most u = 2^-p of itself: a product of a rounded weight and an exact uint8 pixel is off
 * by at most u |w x|, of a rounded weight and a rounded float input by (2u + u^2) |w x|; the fp32 sums (the tensor
 * cores' included) add at most n 2^-24 S for n = C K K terms, allowed as that or 2^-16 (C = 1: K K 2^-24 <= 3e-6),
 * whichever is larger. tf32 and fp16 keep 11 bits (u = 2^-11): tol 5.0e-4 on pixels, 9.9e-4 on floats, plus the
 * sums; bf16 8 bits (u = 2^-8): 3.9e-3 and 7.8e-3. 3xtf32 leaves ~2^-22 per product (allowed as 2^-21) plus the
 * sums: 1.6e-5 for C = 1. The pixel scaling is applied after the sum with the rounded
 * weights' sum (conv_tc.cu), so that the bound holds for it too. The run ends by printing the largest
 * |gpu - ref| / S of each, the figures quoted in docs/PERFORMANCE.md. The fp32 reference's uint8 input is lut[p],
 * the kernels' a p + c: the same to ~1 ulp. Versions 7, 9 and 10 take tanh from tanh.approx.f32 (conv_act.cuh),
 * measured on its own by tanh_case (relative error within 2^-15; at most 1.09e-5 on an H100): with it fused, 2^-15 is
 * allowed on top (|tanh| <= 1, so an absolute 2^-15 bounds it whatever the pooling); version 8 keeps tanhf.
 *
 * Tunings change only how images are grouped in a block, never the arithmetic of an output: every tuning must give
 * the default's bits exactly (compared bitwise, after the default passed the reference check).
 */
#ifndef NC_HAVE_CUDA
#include <stdio.h>
int main(void) {
    printf("SKIP: nanoconv was built without CUDA (no nvcc found at configure time)\n");
    return 77;
}
#else
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/model.h"
#include "cpu/ref.h"
#include "cuda/conv_ladder.h"
#include "cuda/cuda_layers.h"
#include "nc_test.h"

#define GPU_TEST_SEED 0x9E3779B97F4A7C15ull
#include "gpu/gpu_test.h"

#define TC_FIRST 7 /* the tensor-core versions: 7..10 */
#define TC_LAST 10

/* The largest |gpu - ref| / S by conv version (7..10). */
static double worst_conv[TC_LAST + 1];
/* Runs of fused_case on a kernel of the layer's own shape (nc_conv_tc_describe), all tensor-core runs, and those
 * of C > 1. */
static int fixed_runs, tc_runs, channel_runs;

/* The bound derived in the header comment, for version v on uint8 pixels (u8) or float input, n = C K K terms. */
static double tol_of(int v, int u8, int n) {
    const double sums = n * 0x1p-24 > 0x1p-16 ? n * 0x1p-24 : 0x1p-16;
    if (v == 8) return 0x1p-21 + sums;
    const double u = v == 10 ? 0x1p-8 : 0x1p-11; /* bf16 keeps 8 significand bits; tf32 and fp16 11 */
    return (u8 ? u : 2.0 * u + u * u) + sums;
}

/* out bitwise equal to the default tuning's def (n floats). */
static void same_bits(const char *what, const float *out, const float *def, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&out[i], &def[i], sizeof(float)) && bad++ < 5)
            fprintf(stderr, "  %s: [%zu] %.9g, default tuning %.9g\n", what, i, out[i], def[i]);
    if (bad) fprintf(stderr, "%s: %zu of %zu differ from the default tuning\n", what, bad, n);
    CHECK(bad == 0);
}

/* One fused shape at versions 7..10, each at its default and at every tuning: act NC_TANH / NC_RELU / NC_SIGMOID /
 * -1, pool NC_MAXPOOL / NC_AVGPOOL / -1 (2/2), scaling for uint8 input: 0 none (float input), 1 raw, 2 /255,
 * 3 mean/std; the pixels start xu_at bytes into their device allocation. */
static void fused_case(int B, int C, int H, int W, int M, int K, int with_bias, int act, int pool, int scaling,
                       int xu_at) {
    const int Ho = H - K + 1, Wo = W - K + 1, P = pool < 0 ? 1 : 2;
    const int Hp = pool < 0 ? Ho : (Ho - P) / P + 1, Wp = pool < 0 ? Wo : (Wo - P) / P + 1;
    const size_t nx = (size_t)B * C * H * W, nk = (size_t)M * C * K * K;
    const size_t nc = (size_t)B * M * Ho * Wo, ny = (size_t)B * M * Hp * Wp;
    float *x = xmalloc(nx * sizeof(float)), *k = xmalloc(nk * sizeof(float)), *bias = xmalloc(M * sizeof(float));
    float *ax = xmalloc(nx * sizeof(float)), *ak = xmalloc(nk * sizeof(float));
    uint8_t *xu = xmalloc(nx);
    float *conv = xmalloc(nc * sizeof(float)), *ref = xmalloc(ny * sizeof(float));
    float *sc = xmalloc(nc * sizeof(float)), *S = xmalloc(ny * sizeof(float));
    nc_conv_lut lut;
    for (int p = 0; p < 256; p++)
        lut.v[p] = scaling == 2 ? (float)p / 255.0f : scaling == 3 ? ((float)p / 255.0f - 0.2860f) / 0.3530f : (float)p;
    const float bound = 1.0f / sqrtf((float)(C * K * K));
    if (scaling) {
        for (size_t i = 0; i < nx; i++) {
            xu[i] = (uint8_t)rand_int(0, 255);
            x[i] = lut.v[xu[i]];
        }
    } else {
        fill(x, nx, -1.0f, 1.0f);
    }
    fill(k, nk, -bound, bound);
    fill(bias, M, -1.0f, 1.0f);
    for (size_t i = 0; i < nx; i++) ax[i] = fabsf(x[i]);
    for (size_t i = 0; i < nk; i++) ak[i] = fabsf(k[i]);
    ref_fused(ref, conv, x, k, with_bias ? bias : NULL, B, C, H, W, M, K, act, pool, P);
    nc_ref_conv(sc, ax, ak, NULL, B, C, H, W, M, K);
    if (pool >= 0)
        nc_ref_maxpool(S, sc, B, M, Ho, Wo, P, P); /* S >= 0: the window's largest */
    else
        memcpy(S, sc, ny * sizeof(float));
    float *dx = dev_from(x, nx * sizeof(float)), *dk = dev_from(k, nk * sizeof(float));
    float *db = dev_from(bias, M * sizeof(float)), *dy;
    uint8_t *dxu0;
    CU(cudaMalloc((void **)&dxu0, nx + 4));
    uint8_t *dxu = dxu0 + xu_at;
    CU(cudaMemcpy(dxu, xu, nx, cudaMemcpyHostToDevice));
    CU(cudaMalloc((void **)&dy, ny * sizeof(float)));
    const nc_conv_epilogue e = {act, pool, P, P};
    int ntunings;
    const nc_conv_tc_tuning *tunings = nc_conv_tc_tunings(&ntunings);
    static const char *const scales[] = {"float", "u8 raw", "u8 unit", "u8 norm"};
    for (int v = TC_FIRST; v <= TC_LAST; v++) {
        const int tc = nc_conv_tc_takes(v, C, H, W, M, K, &e, scaling != 0) && !(scaling && xu_at % 4);
        CHECK(!tc || C == 1 || (M <= 32 && !scaling && v != 8)); /* what conv_tcc_kernel takes */
        nc_error err = {0};
        char what[200];
        snprintf(what, sizeof what, "v%d%s B%d C%d H%d W%d M%d K%d%s act %d pool %d %s%s", v, tc ? " tc" : " (v6)", B,
                 C, H, W, M, K, with_bias ? " bias" : "", act, pool, scales[scaling], xu_at ? " (shifted)" : "");
        CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
        int rc = nc_conv_launch_tc(v, dy, dx, scaling ? dxu : NULL, scaling ? &lut : NULL, dk, with_bias ? db : NULL, B,
                                   C, H, W, M, K, &e, stream, &err);
        check_rc(rc, &err, what);
        float *def = host_from(dy, ny);
        const double extra = tc && v != 8 && act == NC_TANH ? 0x1p-15 : 0.0; /* tanh.approx */
        check_scaled_extra(what, tc ? &worst_conv[v] : NULL, def, ref, S, ny,
                           tc ? tol_of(v, scaling != 0, C * K * K) : 1e-4, extra);
        for (int ti = 0; ti < ntunings; ti++) {
            char with[240];
            snprintf(with, sizeof with, "%s, images_per_block %d", what, tunings[ti].images_per_block);
            CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
            rc = nc_conv_launch_tc_tuned(v, &tunings[ti], dy, dx, scaling ? dxu : NULL, scaling ? &lut : NULL, dk,
                                         with_bias ? db : NULL, B, C, H, W, M, K, &e, stream, &err);
            check_rc(rc, &err, with);
            nc_conv_tc_launch how;
            CHECK(nc_conv_tc_describe(v, &tunings[ti], dy, scaling ? dxu : NULL, B, C, H, W, M, K, &e, &how, &err) ==
                  NC_OK);
            CHECK(how.tensor_cores == tc);
            CHECK(!tc || (how.images_per_block >= 1 && how.images_per_block <= tunings[ti].images_per_block));
            CHECK(!tc || C == 1 || how.images_per_block == 1); /* conv_tcc_kernel: an image at a time */
            fixed_runs += how.fixed_shape > 0, tc_runs += how.tensor_cores, channel_runs += how.tensor_cores && C > 1;
            float *y = host_from(dy, ny);
            same_bits(with, y, def, ny);
            free(y);
        }
        free(def);
    }
    CU(cudaFree(dx));
    CU(cudaFree(dk));
    CU(cudaFree(db));
    CU(cudaFree(dxu0));
    CU(cudaFree(dy));
    free(x), free(ax), free(xu), free(k), free(ak), free(bias), free(conv), free(sc), free(ref), free(S);
}

/* Versions 7..10 as the ladder's table runs them: the convolution alone, float input (what the tensor cores do not
 * take goes to version 5). */
static void alone_case(int B, int C, int H, int W, int M, int K) {
    const int Ho = H - K + 1, Wo = W - K + 1;
    const size_t nx = (size_t)B * C * H * W, nk = (size_t)M * C * K * K, ny = (size_t)B * M * Ho * Wo;
    float *x = xmalloc(nx * sizeof(float)), *k = xmalloc(nk * sizeof(float)), *bias = xmalloc(M * sizeof(float));
    float *ax = xmalloc(nx * sizeof(float)), *ak = xmalloc(nk * sizeof(float));
    float *ref = xmalloc(ny * sizeof(float)), *S = xmalloc(ny * sizeof(float));
    fill(x, nx, -1.0f, 1.0f);
    fill(k, nk, -0.3f, 0.3f);
    fill(bias, M, -1.0f, 1.0f);
    for (size_t i = 0; i < nx; i++) ax[i] = fabsf(x[i]);
    for (size_t i = 0; i < nk; i++) ak[i] = fabsf(k[i]);
    nc_ref_conv(ref, x, k, bias, B, C, H, W, M, K);
    nc_ref_conv(S, ax, ak, NULL, B, C, H, W, M, K);
    float *dx = dev_from(x, nx * sizeof(float)), *dk = dev_from(k, nk * sizeof(float));
    float *db = dev_from(bias, M * sizeof(float)), *dy;
    CU(cudaMalloc((void **)&dy, ny * sizeof(float)));
    const nc_conv_epilogue none = {-1, -1, 1, 1};
    for (int v = TC_FIRST; v <= TC_LAST; v++) {
        const int tc = nc_conv_tc_takes(v, C, H, W, M, K, &none, 0);
        nc_error err = {0};
        CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
        char what[128];
        snprintf(what, sizeof what, "conv v%d (%s) B%d C%d H%d W%d M%d K%d", v, nc_cuda_conv_version_name(v), B, C, H,
                 W, M, K);
        const int rc = nc_cuda_conv_forward(v, dy, dx, dk, db, B, C, H, W, M, K, stream, &err);
        check_rc(rc, &err, what);
        float *y = host_from(dy, ny);
        check_scaled(what, tc ? &worst_conv[v] : NULL, y, ref, S, ny, tc ? tol_of(v, 0, C * K * K) : 1e-4);
        free(y);
    }
    CU(cudaFree(dx));
    CU(cudaFree(dk));
    CU(cudaFree(db));
    CU(cudaFree(dy));
    free(x), free(ax), free(k), free(ak), free(bias), free(ref), free(S);
}

/* The fused tanh of versions 7, 9 and 10 (tanh.approx.f32) measured on its own: all weights zero, so that every
 * output is tanh(bias) exactly but for the activation; biases over 1e-4 .. 9 in magnitude, both signs, log-spread.
 * Its error must stay within 2^-15 of |tanh| (fused_case allows 2^-15 absolute for it); the largest relative
 * error is printed. Version 8 (tanhf on the device, 2 ulps at most) is held to 2^-22 of |tanh|. */
static double worst_tanh;

static void tanh_case(void) {
    const int M = 256, H = 6, W = 6, K = 3, Ho = H - K + 1, Wo = W - K + 1, reps = 20;
    const size_t ny = (size_t)M * Ho * Wo;
    float *x = xmalloc(H * W * sizeof(float)), *k = xmalloc((size_t)M * K * K * sizeof(float));
    float *bias = xmalloc(M * sizeof(float));
    fill(x, H * W, -1.0f, 1.0f);
    memset(k, 0, (size_t)M * K * K * sizeof(float));
    float *dx = dev_from(x, H * W * sizeof(float)), *dk = dev_from(k, (size_t)M * K * K * sizeof(float)), *db, *dy;
    CU(cudaMalloc((void **)&db, M * sizeof(float)));
    CU(cudaMalloc((void **)&dy, ny * sizeof(float)));
    const nc_conv_epilogue e = {NC_TANH, -1, 1, 1};
    for (int rep = 0; rep < reps; rep++) {
        for (int m = 0; m < M; m++)
            bias[m] = (rand_int(0, 1) ? 1.0f : -1.0f) * powf(10.0f, rand_float(-4.0f, 0.954f)); /* to 9 */
        CU(cudaMemcpy(db, bias, M * sizeof(float), cudaMemcpyHostToDevice));
        for (int v = TC_FIRST; v <= TC_LAST; v++) {
            nc_error err = {0};
            char what[64];
            snprintf(what, sizeof what, "tanh of v%d, rep %d", v, rep);
            CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
            check_rc(nc_conv_launch_tc(v, dy, dx, NULL, NULL, dk, db, 1, 1, H, W, M, K, &e, stream, &err), &err, what);
            float *y = host_from(dy, ny);
            size_t bad = 0;
            for (size_t i = 0; i < ny; i++) {
                const double ref = tanh((double)bias[i / (Ho * Wo)]), d = fabs((double)y[i] - ref);
                const double rel = d / fabs(ref), allowed = (v == 8 ? 0x1p-22 : 0x1p-15) * fabs(ref) + 0x1p-30;
                if (!(d <= allowed) && bad++ < 3)
                    fprintf(stderr, "  %s: tanh(%.9g) = %.9g, got %.9g (relative error %.3g)\n", what,
                            bias[i / (Ho * Wo)], ref, y[i], rel);
                if (v != 8 && rel > worst_tanh) worst_tanh = rel;
            }
            CHECK(bad == 0);
            free(y);
        }
    }
    CU(cudaFree(dx));
    CU(cudaFree(dk));
    CU(cudaFree(db));
    CU(cudaFree(dy));
    free(x), free(k), free(bias);
}

/* The GPU's compute capability, major. */
static int sm_major(void) {
    int dev = 0, major = 0;
    CU(cudaGetDevice(&dev));
    CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    return major;
}

/* What nc_conv_tc_describe says of a launch: the zoo's six first layers on kernels of their own shape (on sm_90
 * and up, which their bulk copies need), at most the tuning's images a block; any other activation, pooling, size
 * or M, or y not 16-byte aligned, on the general kernels; C > 1 on floats with M <= 32 on conv_tcc_kernel (one
 * image a block) but at version 8; C > 1 on pixels or with M > 32, and pixels not 4-byte aligned, not on the tensor
 * cores. */
static void describe_case(void) {
    const nc_conv_tc_tuning one = {1}, four = {4};
    const nc_conv_epilogue tanh_max = {NC_TANH, NC_MAXPOOL, 2, 2}, relu = {NC_RELU, NC_MAXPOOL, 2, 2};
    const nc_conv_epilogue none = {-1, -1, 1, 1};
    float *y = (float *)(uintptr_t)4096; /* only alignments are looked at */
    uint8_t *xu = (uint8_t *)(uintptr_t)4096;
    /* Which kernel a batch of 100 gets. */
    const struct shape {
        int C, H, W, M, K;
        const nc_conv_epilogue *e;
        int y_at, xu_at; /* y (floats) and the pixels (bytes) this far off their aligned address; -1: float input */
        int tc, fixed;   /* expected: on the tensor cores, on fixed layer `fixed` (0: none) */
        int v8;          /* version 8 too on the fixed layer */
    } cases[] = {
        {1, 64, 64, 6, 5, &tanh_max, 0, 0, 1, 2, 1},    /* 2018 spring */
        {1, 48, 48, 6, 5, &tanh_max, 0, 0, 1, 3, 1},    /* 2019 spring */
        {1, 86, 86, 4, 7, &relu, 0, 0, 1, 4, 1},        /* 2020 */
        {1, 72, 72, 12, 7, &tanh_max, 0, 0, 1, 5, 0},   /* 2018 fall: 33 x 33 planes, an image's copied whole */
        {1, 70, 70, 12, 5, &tanh_max, 0, 0, 1, 6, 0},   /* 2019 fall */
        {1, 72, 72, 12, 7, &tanh_max, 0, -1, 1, 0, 0},  /* 2018 fall on float input: the general kernel */
        {1, 70, 70, 11, 5, &tanh_max, 0, 0, 1, 0, 0},   /* another M */
        {1, 28, 28, 50, 5, &tanh_max, 2, 0, 1, 0, 0},   /* y 8-byte aligned only: no bulk copies */
        {1, 28, 28, 50, 5, &relu, 0, 0, 1, 0, 0},       /* another activation */
        {1, 28, 28, 50, 5, &none, 0, 0, 1, 0, 0},       /* not pooled */
        {1, 28, 28, 49, 5, &tanh_max, 0, 0, 1, 0, 0},   /* another M */
        {1, 29, 28, 50, 5, &tanh_max, 0, 0, 1, 0, 0},   /* another H */
        {3, 28, 28, 50, 5, &tanh_max, 0, -1, 0, 0, 0},  /* C > 1, M > 32: version 6 */
        {6, 30, 30, 16, 5, &tanh_max, 0, -1, 1, 0, 0},  /* 2018 spring's second layer: conv_tcc_kernel but v8 */
        {12, 33, 33, 24, 7, &tanh_max, 0, -1, 1, 0, 0}, /* 2018 fall's */
        {4, 40, 40, 32, 7, &none, 2, -1, 1, 0, 0},      /* C > 1 unpooled, y 8-byte aligned only */
        {6, 30, 30, 16, 5, &tanh_max, 0, 0, 0, 0, 0},   /* C > 1 on pixels: version 6 */
        {1, 28, 28, 50, 5, &tanh_max, 0, 1, 0, 0, 0},   /* pixels not 4-byte aligned: version 6 */
    };
    nc_error err = {0};
    nc_conv_tc_launch how;
    const int sm90 = sm_major() >= 9; /* the fixed shapes' bulk copies */
    for (int v = TC_FIRST; v <= TC_LAST; v++) {
        CHECK(nc_conv_tc_describe(v, &four, y, xu, 10000, 1, 28, 28, 50, 5, &tanh_max, &how, &err) == NC_OK);
        CHECK(how.tensor_cores == 1 && how.fixed_shape == sm90 && how.blocks > 0 && how.threads >= 128);
        CHECK(how.images_per_block >= 1 && how.images_per_block <= 4 && how.shared_bytes > 0);
        CHECK(nc_conv_tc_describe(v, &one, y, NULL, 3, 1, 28, 28, 50, 5, &tanh_max, &how, &err) == NC_OK); /* floats */
        CHECK(how.tensor_cores == 1 && how.fixed_shape == sm90 && how.images_per_block == 1 && how.blocks <= 3);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            const struct shape *h = &cases[c];
            CHECK(nc_conv_tc_describe(v, NULL, y + h->y_at, h->xu_at < 0 ? NULL : xu + h->xu_at, 100, h->C, h->H, h->W,
                                      h->M, h->K, h->e, &how, &err) == NC_OK);
            const int fixed = sm90 && (v != 8 || h->v8) ? h->fixed : 0;
            const int tc = h->tc && (h->C == 1 || v != 8); /* version 8 leaves C > 1 to version 6 */
            if (how.tensor_cores != tc || how.fixed_shape != fixed)
                fprintf(stderr, "describe v%d case %zu: tensor cores %d, fixed %d; expected %d, %d\n", v, c,
                        how.tensor_cores, how.fixed_shape, tc, fixed);
            CHECK(how.tensor_cores == tc && how.fixed_shape == fixed);
            CHECK(tc ? how.blocks > 0 : how.blocks == 0);
            CHECK(!tc || h->C == 1 ||
                  (how.images_per_block == 1 && (how.threads == 128 || how.threads == 256 || how.threads == 512)));
        }
    }
    CHECK(nc_conv_tc_describe(11, NULL, y, xu, 100, 1, 28, 28, 50, 5, &tanh_max, &how, &err) == NC_ERR_ARG);
}

/* The table's entries for versions 9 and 10, and a tuning outside 1..16 refused (before anything runs). */
static void table_and_arguments(void) {
    CHECK(nc_cuda_conv_num_versions() >= TC_LAST);
    CHECK(nc_cuda_conv_version_name(9) && strcmp(nc_cuda_conv_version_name(9), "tc-fp16") == 0);
    CHECK(nc_cuda_conv_version_name(10) && strcmp(nc_cuda_conv_version_name(10), "tc-bf16") == 0);
    CHECK(nc_cuda_conv_version_precision(9) == NC_PRECISION_FP16);
    CHECK(nc_cuda_conv_version_precision(10) == NC_PRECISION_BF16);
    int n = 0;
    const nc_conv_tc_tuning *t = nc_conv_tc_tunings(&n);
    CHECK(n >= 1 && t != NULL);
    const nc_conv_tc_tuning bad = {0};
    const nc_conv_epilogue e = {NC_TANH, NC_MAXPOOL, 2, 2};
    nc_error err = {0};
    const int rc =
        nc_conv_launch_tc_tuned(9, &bad, NULL, NULL, NULL, NULL, NULL, NULL, 1, 1, 28, 28, 50, 5, &e, stream, &err);
    CHECK(rc == NC_ERR_ARG);
    CHECK_MSG(err, "images_per_block 0");
    CHECK(nc_conv_launch_tc(6, NULL, NULL, NULL, NULL, NULL, NULL, 1, 1, 28, 28, 50, 5, &e, stream, &err) ==
          NC_ERR_ARG);
}

int main(void) {
    const int start = gpu_test_start();
    if (start) return start;
    table_and_arguments();
    /* NC_GPU_TEST_QUICK=1 (tools/gpu_suite.sh, under compute-sanitizer's memcheck and racecheck): the zoo's first
     * layers, the fixed-shape kernels with their staged outputs and bulk copies among them, on a few hundred
     * images (every block several groups), and one general kernel. */
    const char *quick_env = getenv("NC_GPU_TEST_QUICK");
    if (quick_env && *quick_env == '1') {
        fused_case(400, 1, 28, 28, 50, 5, 1, NC_TANH, NC_MAXPOOL, 1, 0);
        fused_case(300, 1, 48, 48, 6, 5, 1, NC_TANH, NC_MAXPOOL, 2, 0);
        fused_case(140, 1, 86, 86, 4, 7, 1, NC_RELU, NC_MAXPOOL, 3, 0);
        fused_case(200, 1, 72, 72, 12, 7, 1, NC_TANH, NC_MAXPOOL, 1, 0);
        fused_case(150, 1, 70, 70, 12, 5, 1, NC_TANH, NC_MAXPOOL, 2, 0);
        fused_case(100, 1, 48, 48, 6, 5, 1, NC_TANH, NC_MAXPOOL, 0, 0);     /* float input */
        fused_case(150, 12, 33, 33, 24, 7, 1, NC_TANH, NC_MAXPOOL, 0, 0);   /* C > 1: 2018 fall's second layer */
        fused_case(200, 5, 19, 21, 13, 4, 1, NC_SIGMOID, NC_AVGPOOL, 0, 0); /* and one of the general shape */
        describe_case();
        CU(cudaStreamDestroy(stream));
        return nc_test_done("test_conv_tc (quick)");
    }
    const int acts[4] = {-1, NC_TANH, NC_RELU, NC_SIGMOID}, pools[3] = {-1, NC_MAXPOOL, NC_AVGPOOL};
    for (int a = 0; a < 4; a++)
        for (int p = 0; p < 3; p++)
            for (int s = 0; s < 4; s++) {
                const int K = rand_int(3, 7);
                const int M = rand_int(0, 2) ? rand_int(1, 70) : 16 * rand_int(1, 4);
                fused_case(rand_int(1, 4), 1, rand_int(K + 1, K + 45), rand_int(K + 1, K + 45), M, K, rand_int(0, 1),
                           acts[a], pools[p], s, 0);
            }
    fused_case(5, 1, 28, 28, 50, 5, 0, NC_TANH, NC_MAXPOOL, 1, 0);   /* the 2017 layer as its network runs it */
    fused_case(3, 1, 28, 28, 50, 5, 1, NC_TANH, NC_MAXPOOL, 2, 0);   /* with bias, /255 */
    fused_case(2, 1, 72, 72, 12, 7, 1, NC_TANH, NC_MAXPOOL, 1, 0);   /* 2018 fall: a kernel of its own */
    fused_case(3, 1, 64, 64, 6, 5, 1, NC_TANH, NC_MAXPOOL, 1, 0);    /* 2018 spring: the same */
    fused_case(700, 1, 48, 48, 6, 5, 1, NC_TANH, NC_MAXPOOL, 2, 0);  /* 2019 spring: the same, several groups */
    fused_case(3, 1, 86, 86, 4, 7, 1, NC_RELU, NC_MAXPOOL, 3, 0);    /* 2020: the same */
    fused_case(301, 1, 70, 70, 12, 5, 0, NC_TANH, NC_MAXPOOL, 1, 0); /* 2019 fall: the same, whole images copied */
    fused_case(60, 1, 28, 28, 50, 5, 1, NC_TANH, NC_MAXPOOL, 0, 0);  /* 2017 on float input: its kernel too */
    fused_case(3, 1, 86, 86, 4, 7, 0, NC_RELU, NC_MAXPOOL, 0, 0);    /* 2020 on floats: the same */
    fused_case(3, 1, 72, 72, 12, 7, 1, NC_TANH, NC_MAXPOOL, 0, 0);   /* 2018 fall on floats: the general kernel */
    fused_case(2, 1, 27, 29, 200, 3, 1, NC_RELU, NC_MAXPOOL, 0, 0);  /* M in 13 tiles, odd maps */
    /* C > 1 (conv_tcc_kernel): the zoo's second layers as their networks run them, several images a block. */
    fused_case(500, 6, 30, 30, 16, 5, 1, NC_TANH, NC_MAXPOOL, 0, 0);  /* 2018 spring */
    fused_case(300, 12, 33, 33, 24, 7, 1, NC_TANH, NC_MAXPOOL, 0, 0); /* 2018 fall */
    fused_case(600, 6, 22, 22, 16, 5, 1, NC_TANH, NC_MAXPOOL, 0, 0);  /* 2019 spring */
    fused_case(300, 12, 33, 33, 24, 5, 1, NC_TANH, NC_MAXPOOL, 0, 0); /* 2019 fall */
    fused_case(400, 4, 40, 40, 16, 7, 1, NC_RELU, NC_MAXPOOL, 0, 0);  /* 2020 (its network pools 4/4: version 6) */
    for (int a = 0; a < 4; a++) /* every activation and pooling, odd maps, M across and between tiles */
        for (int p = 0; p < 3; p++) {
            const int K = rand_int(3, 7);
            fused_case(rand_int(1, 300), rand_int(2, 9), rand_int(K + 1, K + 30), rand_int(K + 1, K + 30),
                       rand_int(1, 32), K, rand_int(0, 1), acts[a], pools[p], 0, 0);
        }
    fused_case(2, 3, 30, 30, 40, 5, 1, NC_TANH, NC_MAXPOOL, 0, 0);  /* C > 1, M > 32: version 6 */
    fused_case(2, 3, 30, 30, 16, 5, 1, NC_TANH, NC_MAXPOOL, 2, 0);  /* C > 1 on pixels: version 6 */
    fused_case(2, 1, 9, 8, 33, 7, 1, NC_SIGMOID, NC_AVGPOOL, 3, 0); /* a 3 x 2 conv output: one window */
    fused_case(2, 1, 120, 120, 8, 5, 0, NC_TANH, NC_MAXPOOL, 1, 0); /* a large image: one block an SM for floats */
    fused_case(1, 1, 160, 160, 4, 3, 0, NC_TANH, NC_MAXPOOL, 1, 0); /* 308 KB for a float image: version 6 */
    fused_case(3, 1, 15, 45, 33, 7, 1, NC_TANH, NC_MAXPOOL, 0, 0);  /* W beyond the last column group */
    fused_case(3, 1, 28, 28, 50, 5, 1, NC_TANH, NC_MAXPOOL, 1, 1);  /* pixels not 4-byte aligned: version 6 */
    fused_case(3, 1, 28, 28, 50, 5, 1, NC_TANH, NC_MAXPOOL, 3, 4);  /* 4-byte but not 16-byte aligned: tc */
    /* Batches of many images a block (an H100 holds ~130 x 4..16 blocks): several groups each, the last one short,
     * the next group's copy in flight, images starting inside a 4-byte word (H W odd), the batch ending inside one. */
    fused_case(19999, 1, 11, 9, 20, 3, 1, NC_TANH, NC_MAXPOOL, 3, 0);
    fused_case(9001, 1, 10, 13, 40, 4, 1, NC_RELU, NC_AVGPOOL, 0, 0);
    fused_case(12345, 1, 9, 10, 7, 5, 0, NC_SIGMOID, -1, 2, 0);
    fused_case(2001, 1, 28, 28, 50, 5, 1, NC_TANH, NC_MAXPOOL, 1, 0); /* the 2017 layer, ~4 images a block */
    for (int rep = 0; rep < 6; rep++) {
        const int K = rand_int(3, 7);
        alone_case(rand_int(1, 3), rep < 4 ? 1 : rand_int(2, 5), rand_int(K, K + 40), rand_int(K, K + 40),
                   rand_int(1, 40), K);
    }
    alone_case(3001, 1, 14, 15, 24, 5); /* float input through the pipeline */
    alone_case(150, 12, 33, 33, 24, 7); /* 2018 fall's second layer unpooled (conv_tcc_kernel) */
    tanh_case();
    describe_case();
    /* The 2017 layer's cases above ran on its own kernel, the others on the general ones. */
    printf("fused runs on the tensor cores: %d, on a kernel of the layer's own shape: %d, of C > 1: %d\n", tc_runs,
           fixed_runs, channel_runs);
    CHECK(tc_runs > 0 && (sm_major() >= 9 ? fixed_runs > 0 : fixed_runs == 0) && fixed_runs < tc_runs);
    CHECK(channel_runs > 0 && channel_runs < tc_runs);
    printf("largest relative error of the fused tanh.approx (versions 7, 9, 10): %.3g (2^%.2f)\n", worst_tanh,
           log2(worst_tanh));
    printf("largest |gpu - ref| / sum|w x|: conv v7 tf32 %.3g, v8 3xtf32 %.3g, v9 fp16 %.3g, v10 bf16 %.3g\n",
           worst_conv[7], worst_conv[8], worst_conv[9], worst_conv[10]);
    CU(cudaStreamDestroy(stream));
    return nc_test_done("test_conv_tc");
}
#endif
