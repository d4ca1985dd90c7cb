/*
 * The tensor-core versions against the CPU reference: convolution versions 7 (tf32) and 8 (3xtf32) of
 * conv_tc.cu, fused with every activation and pooling none / max 2 / avg 2, on float and uint8 input (raw, /255
 * and mean/std scaling), random shapes (K = 3..7, M across and between multiples of 16, odd and even maps), C > 1
 * (which they leave to versions 5 and 6); and dense_tc.cu's GEMM at both precisions against nc_ref_dense.
 * Outputs are poisoned with NaN before each run. Skips (77) where the build has no CUDA or the machine no GPU.
 *
 * Tolerance, per output: |gpu - ref| <= tol * S + 1e-5 (1 + |ref|), S = sum |w| |x| over the output's window (the
 * largest over a pooling window; the activations and pooling do not enlarge an error). tf32 rounds each product's
 * operands to 10-bit mantissas: at most 2^-10 S, tol = 1.5e-3. 3xtf32 leaves ~2^-22 per product plus fp32's own
 * summation (~K*K * 2^-24): tol = 1e-5. The run ends by printing the largest |gpu - ref| / S of each, the figures
 * quoted in docs/PERFORMANCE.md. The fp32 reference's uint8 input is lut[p], the kernels' a p + c: the same to ~1 ulp.
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

#include "core/model.h"
#include "cpu/ref.h"
#include "cuda/conv_ladder.h"
#include "cuda/cuda_layers.h"
#include "nc_test.h"

#define GPU_TEST_SEED 0x9E3779B97F4A7C15ull
#include "gpu/gpu_test.h"

static double worst_conv[9], worst_dense[3]; /* by version (7, 8) and precision: the largest |gpu - ref| / S */

/* out against ref within tol * S + 1e-5 (1 + |ref|); keeps the largest error / S in *track (where not NULL). */
static void compare(const char *what, double *track, const float *out, const float *ref, const float *S, size_t n,
                    double tol) {
    size_t bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)out[i] - (double)ref[i]);
        const int ok = d <= tol * S[i] + 1e-5 * (1.0 + fabs((double)ref[i])); /* false for NaN */
        if (!ok && bad++ < 5)
            fprintf(stderr, "  %s: [%zu] gpu %.9g, ref %.9g, S %.6g\n", what, i, out[i], ref[i], S[i]);
        const double rel = S[i] > 0.0f ? d / S[i] : d;
        if (rel > worst || d != d) worst = rel;
    }
    if (bad) fprintf(stderr, "%s: %zu of %zu outside %g S + 1e-5 (1 + |ref|)\n", what, bad, n, tol);
    if (track && worst > *track) *track = worst;
    CHECK(bad == 0);
}

static double tol_of(int v) {
    return v == 7 ? 1.5e-3 : v == 8 ? 1e-5 : 1e-4;
}

/* One fused case at version v: act NC_TANH / NC_RELU / NC_SIGMOID / -1, pool NC_MAXPOOL / NC_AVGPOOL / -1 (2/2),
 * scaling for uint8 input: 0 none (float input), 1 raw, 2 /255, 3 mean/std. */
static void fused_case(int v, int B, int C, int H, int W, int M, int K, int with_bias, int act, int pool, int scaling) {
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
    nc_ref_conv(conv, x, k, with_bias ? bias : NULL, B, C, H, W, M, K);
    nc_ref_conv(sc, ax, ak, NULL, B, C, H, W, M, K);
    if (act == NC_TANH) nc_ref_tanh(conv, conv, nc);
    if (act == NC_RELU) nc_ref_relu(conv, conv, nc);
    if (act == NC_SIGMOID) nc_ref_sigmoid(conv, conv, nc);
    if (pool == NC_MAXPOOL) nc_ref_maxpool(ref, conv, B, M, Ho, Wo, P, P);
    if (pool == NC_AVGPOOL) nc_ref_avgpool(ref, conv, B, M, Ho, Wo, P, P);
    if (pool < 0) memcpy(ref, conv, ny * sizeof(float));
    if (pool >= 0)
        nc_ref_maxpool(S, sc, B, M, Ho, Wo, P, P); /* S >= 0: the window's largest */
    else
        memcpy(S, sc, ny * sizeof(float));
    float *dx = dev_from(x, nx * sizeof(float)), *dk = dev_from(k, nk * sizeof(float));
    float *db = dev_from(bias, M * sizeof(float)), *dy;
    uint8_t *dxu = dev_from(xu, nx);
    CU(cudaMalloc((void **)&dy, ny * sizeof(float)));
    CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
    const nc_conv_epilogue e = {act, pool, P, P};
    nc_error err = {0};
    char what[200];
    static const char *const scales[] = {"float", "u8 raw", "u8 unit", "u8 norm"};
    snprintf(what, sizeof what, "v%d%s B%d C%d H%d W%d M%d K%d%s act %d pool %d %s", v,
             nc_conv_tc_takes(C, H, W, M, K, &e) ? " tc" : " (v6)", B, C, H, W, M, K, with_bias ? " bias" : "", act,
             pool, scales[scaling]);
    const int rc = nc_conv_launch_tc(v, dy, dx, scaling ? dxu : NULL, scaling ? &lut : NULL, dk, with_bias ? db : NULL,
                                     B, C, H, W, M, K, &e, stream, &err);
    if (rc) fprintf(stderr, "%s: %s\n", what, err.msg);
    CHECK(rc == NC_OK);
    float *y = host_from(dy, ny);
    compare(what, nc_conv_tc_takes(C, H, W, M, K, &e) ? &worst_conv[v] : NULL, y, ref, S, ny,
            nc_conv_tc_takes(C, H, W, M, K, &e) ? tol_of(v) : 1e-4);
    free(y);
    CU(cudaFree(dx));
    CU(cudaFree(dk));
    CU(cudaFree(db));
    CU(cudaFree(dxu));
    CU(cudaFree(dy));
    free(x), free(ax), free(xu), free(k), free(ak), free(bias), free(conv), free(sc), free(ref), free(S);
}

/* Versions 7 and 8 as the ladder's table runs them: the convolution alone (C > 1 goes to version 5). */
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
    for (int v = 7; v <= 8; v++) {
        nc_error err = {0};
        CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
        char what[128];
        snprintf(what, sizeof what, "conv v%d (%s) B%d C%d H%d W%d M%d K%d", v, nc_cuda_conv_version_name(v), B, C, H,
                 W, M, K);
        const int rc = nc_cuda_conv_forward(v, dy, dx, dk, db, B, C, H, W, M, K, stream, &err);
        if (rc) fprintf(stderr, "%s: %s\n", what, err.msg);
        CHECK(rc == NC_OK);
        float *y = host_from(dy, ny);
        compare(what, C == 1 ? &worst_conv[v] : NULL, y, ref, S, ny, C == 1 ? tol_of(v) : 1e-4);
        free(y);
    }
    CU(cudaFree(dx));
    CU(cudaFree(dk));
    CU(cudaFree(db));
    CU(cudaFree(dy));
    free(x), free(ax), free(k), free(ak), free(bias), free(ref), free(S);
}

/* shift: w starts that many floats into its allocation (a model file's weights are 4-byte aligned only). */
static void dense_case(int precision, int B, int IN, int OUT, int with_bias, int shift) {
    const size_t nx = (size_t)B * IN, nw = (size_t)OUT * IN, ny = (size_t)B * OUT;
    float *x = xmalloc(nx * sizeof(float)), *w = xmalloc(nw * sizeof(float)), *b = xmalloc(OUT * sizeof(float));
    float *ax = xmalloc(nx * sizeof(float)), *aw = xmalloc(nw * sizeof(float));
    float *ref = xmalloc(ny * sizeof(float)), *S = xmalloc(ny * sizeof(float));
    fill(x, nx, -1.0f, 1.0f);
    fill(w, nw, -0.05f, 0.05f);
    fill(b, OUT, -1.0f, 1.0f);
    for (size_t i = 0; i < nx; i++) ax[i] = fabsf(x[i]);
    for (size_t i = 0; i < nw; i++) aw[i] = fabsf(w[i]);
    nc_ref_dense(ref, x, w, with_bias ? b : NULL, B, IN, OUT);
    nc_ref_dense(S, ax, aw, NULL, B, IN, OUT);
    float *dx = dev_from(x, nx * sizeof(float)), *dw0, *dw;
    CU(cudaMalloc((void **)&dw0, (nw + 4) * sizeof(float)));
    dw = dw0 + shift;
    CU(cudaMemcpy(dw, w, nw * sizeof(float), cudaMemcpyHostToDevice));
    float *db = dev_from(b, OUT * sizeof(float)), *dy;
    CU(cudaMalloc((void **)&dy, ny * sizeof(float)));
    CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
    nc_error err = {0};
    const int rc = nc_cuda_dense_tc_forward(precision, dy, dx, dw, with_bias ? db : NULL, B, IN, OUT, stream, &err);
    if (rc) fprintf(stderr, "dense: %s\n", err.msg);
    CHECK(rc == NC_OK);
    float *y = host_from(dy, ny);
    char what[128];
    snprintf(what, sizeof what, "dense %s B%d IN%d OUT%d%s w+%d", precision == NC_PRECISION_TF32 ? "tf32" : "3xtf32", B,
             IN, OUT, with_bias ? " bias" : "", shift);
    compare(what, &worst_dense[precision], y, ref, S, ny, precision == NC_PRECISION_TF32 ? 1.5e-3 : 1e-5);
    free(y);
    CU(cudaFree(dx));
    CU(cudaFree(dw0));
    CU(cudaFree(db));
    CU(cudaFree(dy));
    free(x), free(ax), free(w), free(aw), free(b), free(ref), free(S);
}

int main(void) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        printf("SKIP: no CUDA GPU here (cudaGetDeviceCount: %s)\n", e ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const int acts[4] = {-1, NC_TANH, NC_RELU, NC_SIGMOID}, pools[3] = {-1, NC_MAXPOOL, NC_AVGPOOL};
    for (int v = 7; v <= 8; v++) {
        for (int a = 0; a < 4; a++)
            for (int p = 0; p < 3; p++)
                for (int s = 0; s < 4; s++) {
                    const int K = rand_int(3, 7);
                    const int M = rand_int(0, 2) ? rand_int(1, 70) : 16 * rand_int(1, 4);
                    fused_case(v, rand_int(1, 4), 1, rand_int(K + 1, K + 45), rand_int(K + 1, K + 45), M, K,
                               rand_int(0, 1), acts[a], pools[p], s);
                }
        fused_case(v, 5, 1, 28, 28, 50, 5, 0, NC_TANH, NC_MAXPOOL, 1);  /* the 2017 layer as its network runs it */
        fused_case(v, 3, 1, 28, 28, 50, 5, 1, NC_TANH, NC_MAXPOOL, 2);  /* with bias, /255 */
        fused_case(v, 2, 1, 72, 72, 12, 7, 1, NC_TANH, NC_MAXPOOL, 1);  /* 2018 fall */
        fused_case(v, 2, 1, 27, 29, 200, 3, 1, NC_RELU, NC_MAXPOOL, 0); /* M in 13 tiles, odd maps */
        fused_case(v, 2, 3, 30, 30, 16, 5, 1, NC_TANH, NC_MAXPOOL, 0);  /* C > 1: version 6 */
        fused_case(v, 2, 1, 9, 8, 33, 7, 1, NC_SIGMOID, NC_AVGPOOL, 3); /* a 3 x 2 conv output: one window */
        fused_case(v, 2, 1, 120, 120, 8, 5, 0, NC_TANH, NC_MAXPOOL, 1); /* output too large to gather: direct */
        fused_case(v, 1, 1, 160, 160, 4, 3, 0, NC_TANH, NC_MAXPOOL, 1); /* 102 KB to stage: version 6 */
        fused_case(v, 3, 1, 15, 45, 33, 7, 1, NC_TANH, NC_MAXPOOL, 0);  /* W beyond the last column group */
    }
    for (int rep = 0; rep < 6; rep++) {
        const int K = rand_int(3, 7);
        alone_case(rand_int(1, 3), rep < 4 ? 1 : rand_int(2, 5), rand_int(K, K + 40), rand_int(K, K + 40),
                   rand_int(1, 40), K);
    }
    for (int pr = NC_PRECISION_TF32; pr <= NC_PRECISION_3XTF32; pr++) {
        dense_case(pr, 300, 7200, 500, 1, 2); /* the 2017 dense layer, 300 images, its weights 8-byte aligned */
        dense_case(pr, 300, 7200, 500, 1, 0); /* 16-byte copies */
        dense_case(pr, 129, 500, 10, 1, 2);
        dense_case(pr, 1000, 32, 10, 0, 0);
        dense_case(pr, rand_int(1, 300), 4 * rand_int(1, 100), rand_int(1, 300), 1, 0);
        dense_case(pr, 77, 141, 33, 1, 1); /* 4-byte copies */
    }
    printf("largest |gpu - ref| / sum|w x|: conv v7 tf32 %.3g, v8 3xtf32 %.3g; dense tf32 %.3g, 3xtf32 %.3g\n",
           worst_conv[7], worst_conv[8], worst_dense[NC_PRECISION_TF32], worst_dense[NC_PRECISION_3XTF32]);
    CU(cudaStreamDestroy(stream));
    return nc_test_done("test_conv_tc");
}
#endif
