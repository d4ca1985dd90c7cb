/* The GPU tests' shared harness: a seeded random stream, CUDA checks that end the test (nothing after a failed
 * harness call would mean anything), copies between host and device, and the comparisons. Include after
 * nc_test.h, with GPU_TEST_SEED defined to pick the test's own random stream. */
#ifndef NC_GPU_TEST_H
#define NC_GPU_TEST_H

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "cpu/ref.h"

static cudaStream_t stream;
static uint64_t rng = GPU_TEST_SEED;

static uint32_t next_u32(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}
static int rand_int(int lo, int hi) {
    return lo + (int)(next_u32() % (uint32_t)(hi - lo + 1));
}
static float rand_float(float lo, float hi) {
    return lo + (hi - lo) * (float)(next_u32() >> 8) / 16777216.0f;
}
static void fill(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = rand_float(lo, hi);
}

#define CU(call)                                                                                                       \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));              \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* The start of every GPU test's main: 0 where there is a GPU, with `stream` made; else prints SKIP and returns 77.
 * A blocking stream: the harness's cudaMemcpy and cudaMemset run on the legacy default stream, and a pageable
 * host-to-device cudaMemcpy may return before its data lands; a blocking stream's kernels wait for that stream's
 * earlier work, a non-blocking one's do not. */
static inline int gpu_test_start(void) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        printf("SKIP: no CUDA GPU here (cudaGetDeviceCount: %s)\n", e ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    CU(cudaStreamCreate(&stream));
    return 0;
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of host memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

/* A device copy of `bytes` bytes of h. */
static void *dev_from(const void *h, size_t bytes) {
    void *d;
    CU(cudaMalloc(&d, bytes ? bytes : 1));
    CU(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* A host copy of n floats of d, once the stream's work is done. */
static float *host_from(const float *d, size_t n) {
    float *h = xmalloc(n * sizeof(float));
    CU(cudaStreamSynchronize(stream));
    CU(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
}

/* A convolution's test data: x (B, C, H, W) in [-1, 1], k (M, C, K, K) in [-kb, kb] and bias (M) in [-1, 1], drawn
 * from the test's random stream in that order; ref, nc_ref_conv's output (B, M, Ho, Wo) with the bias, or without it
 * where with_bias is 0; the device copies of x, k and bias; and dy, ny + extra floats, every one NaN (all bits set). */
typedef struct {
    size_t nx, nk, ny;
    float *x, *k, *bias, *ref;
    float *dx, *dk, *db, *dy;
} conv_data;

static inline conv_data conv_data_make(int B, int C, int H, int W, int M, int K, float kb, int with_bias,
                                       size_t extra) {
    conv_data d;
    d.nx = (size_t)B * C * H * W, d.nk = (size_t)M * C * K * K, d.ny = (size_t)B * M * (H - K + 1) * (W - K + 1);
    d.x = (float *)xmalloc(d.nx * sizeof(float)), d.k = (float *)xmalloc(d.nk * sizeof(float));
    d.bias = (float *)xmalloc(M * sizeof(float)), d.ref = (float *)xmalloc(d.ny * sizeof(float));
    fill(d.x, d.nx, -1.0f, 1.0f);
    fill(d.k, d.nk, -kb, kb);
    fill(d.bias, M, -1.0f, 1.0f);
    nc_ref_conv(d.ref, d.x, d.k, with_bias ? d.bias : NULL, B, C, H, W, M, K);
    d.dx = (float *)dev_from(d.x, d.nx * sizeof(float)), d.dk = (float *)dev_from(d.k, d.nk * sizeof(float));
    d.db = (float *)dev_from(d.bias, M * sizeof(float));
    CU(cudaMalloc((void **)&d.dy, (d.ny + extra) * sizeof(float)));
    CU(cudaMemset(d.dy, 0xFF, (d.ny + extra) * sizeof(float)));
    return d;
}

static inline void conv_data_free(conv_data *d) {
    CU(cudaFree(d->dx));
    CU(cudaFree(d->dk));
    CU(cudaFree(d->db));
    CU(cudaFree(d->dy));
    free(d->x);
    free(d->k);
    free(d->bias);
    free(d->ref);
}

/* out against ref, elementwise within atol + rtol |ref| (NaN never passes): one CHECK, the first misses printed. */
static inline void check_close(const char *what, const float *out, const float *ref, size_t n, double atol,
                               double rtol) {
    size_t bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)out[i] - (double)ref[i]);
        const int ok = d <= atol + rtol * fabs((double)ref[i]); /* false for NaN */
        if (!ok && bad++ < 5) fprintf(stderr, "  %s: [%zu] gpu %.9g, ref %.9g\n", what, i, out[i], ref[i]);
        if (d > worst || d != d) worst = d;
    }
    if (bad)
        fprintf(stderr, "%s: %zu of %zu outside %g + %g|ref| (largest error %g)\n", what, bad, n, atol, rtol, worst);
    CHECK(bad == 0);
}

/* A library call that must succeed: one CHECK, its message printed if it did not. */
/* The convolution tests' expected output of a fused layer, into ref (B, M, pooled Ho x Wo): nc_ref_conv into conv
 * (B, M, Ho, Wo), then src/cpu/ref.c's activation (act < 0: none) and P x P pooling (pool < 0: none). */
static inline void ref_fused(float *ref, float *conv, const float *x, const float *k, const float *bias, int B, int C,
                             int H, int W, int M, int K, int act, int pool, int P) {
    const int Ho = H - K + 1, Wo = W - K + 1;
    const size_t nc = (size_t)B * M * Ho * Wo;
    nc_ref_conv(conv, x, k, bias, B, C, H, W, M, K);
    if (act == NC_TANH) nc_ref_tanh(conv, conv, nc);
    if (act == NC_RELU) nc_ref_relu(conv, conv, nc);
    if (act == NC_SIGMOID) nc_ref_sigmoid(conv, conv, nc);
    if (pool == NC_MAXPOOL) nc_ref_maxpool(ref, conv, B, M, Ho, Wo, P, P);
    if (pool == NC_AVGPOOL) nc_ref_avgpool(ref, conv, B, M, Ho, Wo, P, P);
    if (pool < 0) memcpy(ref, conv, nc * sizeof(float));
}

static inline void check_rc(int rc, const nc_error *err, const char *what) {
    if (rc) fprintf(stderr, "%s: %s\n", what, err->msg);
    CHECK(rc == NC_OK);
}

/* out against ref within tol S + extra + 1e-5 (1 + |ref|), S[i] = sum |w| |x| of output i (the reduced-precision
 * tests' bound: rounding error scales with S, not with the result, which cancellation can make small; extra: an
 * absolute allowance, e.g. for an approximate activation); keeps the largest (|out - ref| - extra) / S in *track
 * (where not NULL). */
static inline void check_scaled_extra(const char *what, double *track, const float *out, const float *ref,
                                      const float *S, size_t n, double tol, double extra) {
    size_t bad = 0;
    double largest = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)out[i] - (double)ref[i]);
        const int ok = d <= tol * S[i] + extra + 1e-5 * (1.0 + fabs((double)ref[i])); /* false for NaN */
        if (!ok && bad++ < 5)
            fprintf(stderr, "  %s: [%zu] gpu %.9g, ref %.9g, S %.6g\n", what, i, out[i], ref[i], S[i]);
        const double e = d > extra ? d - extra : 0.0, rel = S[i] > 0.0f ? e / S[i] : e;
        if (rel > largest || d != d) largest = rel;
    }
    if (bad) fprintf(stderr, "%s: %zu of %zu outside %g S + %g + 1e-5 (1 + |ref|)\n", what, bad, n, tol, extra);
    if (track && largest > *track) *track = largest;
    CHECK(bad == 0);
}

static inline void check_scaled(const char *what, double *track, const float *out, const float *ref, const float *S,
                                size_t n, double tol) {
    check_scaled_extra(what, track, out, ref, S, n, tol, 0.0);
}

#endif
