/*
 * Every GPU layer kernel against the CPU reference (src/cpu/ref.c) on random
 * shapes and random inputs, the device resize against nc_resize_u8 byte for
 * byte, both GPU backends against cpu-ref on a model using every layer kind,
 * and the error paths (unknown kernel version, out of device memory).
 * Outputs are poisoned with NaN before each run, so an element never written
 * fails. Skips (77) where the build has no CUDA or the machine no GPU.
 *
 * Tolerances, |gpu - ref| <= atol + rtol |ref|:
 *   relu, pooling, argmax, resize, input scaling: exact (the same operations in the same order).
 *   tanh, sigmoid: 1e-6 + 1e-6 |ref|: the device's tanh (nc_tanhf) and expf and glibc's err by <= 2 ulp
 *     (1.2e-7 relative); nc_tanhf is also run at every float against a double tanh (test_tanh_every_float).
 *   softmax: 1e-6 + 1e-5 |ref| (outputs in 0..1): expf's ulps, then a sum of N of them and a division.
 *   conv, dense: 1e-4 + 1e-4 |ref|, with inputs in [-1, 1] and weights in +-1/sqrt(fan_in) so outputs are
 *     O(1): the device sums in the reference's order but with fused multiply-adds, which round once
 *     where the CPU rounds twice; over <= 2000 terms that moves the result by ~1e-6, and an indexing or
 *     synchronisation bug moves it by O(1).
 */
#ifndef NC_HAVE_CUDA
#include <stdio.h>
int main(void) {
    printf("SKIP: nanoconv was built without CUDA (no nvcc found at configure time)\n");
    return 77;
}
#else
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>

#include "core/backend.h"
#include "core/model.h"
#include "cpu/ref.h"
#include "cuda/cuda_layers.h"
#include "nc_test.h"

#define GPU_TEST_SEED 0x9E3779B97F4A7C15ull
#include "gpu/gpu_test.h"

/* A device copy of n floats. */
static float *dev_floats(const float *h, size_t n) {
    return dev_from(h, n * sizeof(float));
}

/* A device buffer of n floats, every one NaN (all bits set). */
static float *dev_poisoned(size_t n) {
    float *d;
    CU(cudaMalloc((void **)&d, (n ? n : 1) * sizeof(float)));
    CU(cudaMemset(d, 0xFF, (n ? n : 1) * sizeof(float)));
    return d;
}

/* Compares n outputs with the reference; prints the first mismatches and the largest error. */
static void test_conv_case(int B, int C, int H, int W, int M, int K, int with_bias) {
    conv_data d = conv_data_make(B, C, H, W, M, K, 1.0f / sqrtf((float)(C * K * K)), with_bias, 0);
    const size_t ny = d.ny;
    float *dx = d.dx, *dk = d.dk, *db = d.db, *dy = d.dy, *ref = d.ref;
    /* Version 1 here; tests/gpu/test_conv_ladder.c checks versions 2 and up the same way. */
    for (int v = 1; v <= 1; v++) {
        nc_error err = {0};
        CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
        check_rc(nc_cuda_conv_forward(v, dy, dx, dk, with_bias ? db : NULL, B, C, H, W, M, K, stream, &err), &err,
                 "conv");
        float *y = host_from(dy, ny);
        char what[128];
        snprintf(what, sizeof what, "conv v%d B%d C%d H%d W%d M%d K%d%s", v, B, C, H, W, M, K,
                 with_bias ? " bias" : "");
        check_close(what, y, ref, ny, 1e-4, 1e-4);
        free(y);
    }
    conv_data_free(&d);
}

static void test_conv(void) {
    for (int K = 3; K <= 7; K++) {
        for (int rep = 0; rep < 3; rep++) {
            const int H = rand_int(K, K + 30), W = rand_int(K, K + 30);
            test_conv_case(rand_int(1, 5), rand_int(1, 8), H, W, rand_int(1, 12), K, rep != 1);
        }
    }
    test_conv_case(2, 1, 28, 28, 50, 5, 0);  /* the 2017 layer */
    test_conv_case(3, 12, 33, 33, 24, 7, 0); /* the 2018 fall second layer */
    test_conv_case(65537, 1, 3, 4, 2, 3, 1); /* more than 65535 images: the launcher's slices */
}

static void test_activations(void) {
    const nc_layer_kind kinds[3] = {NC_TANH, NC_RELU, NC_SIGMOID};
    const char *names[3] = {"tanh", "relu", "sigmoid"};
    const size_t n = 100003;
    float *x = xmalloc(n * sizeof(float)), *ref = xmalloc(n * sizeof(float));
    fill(x, n, -10.0f, 10.0f);
    x[0] = 0.0f, x[1] = -0.0f, x[2] = 50.0f, x[3] = -50.0f;
    float *dx = dev_floats(x, n), *dy = dev_poisoned(n);
    for (int i = 0; i < 3; i++) {
        nc_error err = {0};
        if (kinds[i] == NC_TANH) nc_ref_tanh(ref, x, n);
        if (kinds[i] == NC_RELU) nc_ref_relu(ref, x, n);
        if (kinds[i] == NC_SIGMOID) nc_ref_sigmoid(ref, x, n);
        CU(cudaMemset(dy, 0xFF, n * sizeof(float)));
        check_rc(nc_cuda_activation_forward(kinds[i], dy, dx, n, stream, &err), &err, names[i]);
        float *y = host_from(dy, n);
        check_close(names[i], y, ref, n, kinds[i] == NC_RELU ? 0.0 : 1e-6, kinds[i] == NC_RELU ? 0.0 : 1e-6);
        free(y);
        /* In place. */
        float *dz = dev_floats(x, n);
        check_rc(nc_cuda_activation_forward(kinds[i], dz, dz, n, stream, &err), &err, names[i]);
        y = host_from(dz, n);
        check_close(names[i], y, ref, n, kinds[i] == NC_RELU ? 0.0 : 1e-6, kinds[i] == NC_RELU ? 0.0 : 1e-6);
        free(y);
        CU(cudaFree(dz));
    }
    nc_error err = {0};
    CHECK(nc_cuda_activation_forward(NC_DENSE, dy, dx, n, stream, &err) == NC_ERR_ARG);
    CU(cudaFree(dx));
    CU(cudaFree(dy));
    free(x);
    free(ref);
}

/* nc_tanhf, the exact versions' tanh (src/cuda/conv_act.cuh), at all 2^32 floats: within NC_TANHF_MAX_ULP of tanh
 * in double, in [-1, 1], never decreasing (max pooling is taken before it) and odd, bit for bit; its form with the
 * exponential by inline ex2.approx.ftz (NC_TANH_EXACT_EX2, versions 8 and 15) the same bits. CUDA's tanhf, which it
 * replaced, is printed beside it. */
static void test_tanh_every_float(int quick) {
    nc_tanh_sweep s;
    nc_error err = {0};
    /* Under compute-sanitizer (quick), every 65537th float: 65536 of them, every exponent. */
    const unsigned stride = quick ? 65537u : 1u;
    check_rc(nc_cuda_tanh_sweep(&s, stride, &err), &err, "nc_cuda_tanh_sweep");
    if (quick) printf("(quick: every %u-th float)\n", stride);
    printf("tanh at every float: nc_tanhf within %.3f ulp, CUDA's tanhf %.3f; their bits differ at %llu floats; "
           "decreasing at %llu (tanhf %llu), not odd at %llu (tanhf %llu), out of [-1, 1] at %llu; the inline "
           "exponential's form differs at %llu\n",
           s.max_ulp, s.tanhf_max_ulp, s.differ, s.decreasing, s.tanhf_decreasing, s.not_odd, s.tanhf_not_odd,
           s.unbounded, s.ex2_differ);
    CHECK(s.max_ulp <= NC_TANHF_MAX_ULP);
    CHECK(s.unbounded == 0);
    CHECK(s.decreasing == 0);
    CHECK(s.not_odd == 0);
    CHECK(s.ex2_differ == 0);
}

static void test_pool_case(nc_layer_kind kind, int B, int C, int H, int W, int P, int S) {
    const int Ho = (H - P) / S + 1, Wo = (W - P) / S + 1;
    const size_t nx = (size_t)B * C * H * W, ny = (size_t)B * C * Ho * Wo;
    float *x = xmalloc(nx * sizeof(float)), *ref = xmalloc(ny * sizeof(float));
    fill(x, nx, -5.0f, 5.0f);
    if (kind == NC_MAXPOOL)
        nc_ref_maxpool(ref, x, B, C, H, W, P, S);
    else
        nc_ref_avgpool(ref, x, B, C, H, W, P, S);
    float *dx = dev_floats(x, nx), *dy = dev_poisoned(ny);
    nc_error err = {0};
    check_rc(nc_cuda_pool_forward(kind, dy, dx, B, C, H, W, P, S, stream, &err), &err, "pool");
    float *y = host_from(dy, ny);
    char what[128];
    snprintf(what, sizeof what, "%s B%d C%d H%d W%d P%d S%d", kind == NC_MAXPOOL ? "maxpool" : "avgpool", B, C, H, W, P,
             S);
    check_close(what, y, ref, ny, 0.0, 0.0);
    free(y);
    CU(cudaFree(dx));
    CU(cudaFree(dy));
    free(x);
    free(ref);
}

static void test_pool(void) {
    const int PS[][2] = {{2, 2}, {4, 4}, {3, 2}, {2, 3}, {3, 1}, {1, 1}};
    for (int kind = 0; kind < 2; kind++) {
        for (size_t i = 0; i < sizeof PS / sizeof PS[0]; i++) {
            const int P = PS[i][0], S = PS[i][1];
            test_pool_case(kind ? NC_AVGPOOL : NC_MAXPOOL, rand_int(1, 4), rand_int(1, 6), rand_int(P, P + 25),
                           rand_int(P, P + 25), P, S);
        }
    }
    test_pool_case(NC_MAXPOOL, 3, 16, 34, 34, 4, 4); /* the 2020 second pooling */
    nc_error err = {0};
    CHECK(nc_cuda_pool_forward(NC_TANH, NULL, NULL, 1, 1, 4, 4, 2, 2, stream, &err) == NC_ERR_ARG);
}

/* Guard floats around each dense output: a write outside y (a tile's padding rows or columns) changes them. */
#define DENSE_GUARD 64

/* x (B, IN), w (OUT, IN) and y (B, OUT) at xoff, woff and yoff floats past their allocation's start (1..3 make
 * them unaligned for float4), y and its guards poisoned with NaN; every output against nc_ref_dense. */
static void test_dense_at(int B, int IN, int OUT, int with_bias, int xoff, int woff, int yoff) {
    const size_t nx = (size_t)B * IN, nw = (size_t)OUT * IN, ny = (size_t)B * OUT;
    float *x = xmalloc(nx * sizeof(float)), *w = xmalloc(nw * sizeof(float)), *b = xmalloc(OUT * sizeof(float));
    float *ref = xmalloc(ny * sizeof(float));
    const float bound = 1.0f / sqrtf((float)IN);
    fill(x, nx, -1.0f, 1.0f);
    fill(w, nw, -bound, bound);
    fill(b, OUT, -1.0f, 1.0f);
    nc_ref_dense(ref, x, w, with_bias ? b : NULL, B, IN, OUT);
    float *dx = dev_poisoned(nx + xoff), *dw = dev_poisoned(nw + woff), *db = dev_floats(b, OUT);
    float *dy = dev_poisoned(ny + yoff + 2 * DENSE_GUARD);
    CU(cudaMemcpy(dx + xoff, x, nx * sizeof(float), cudaMemcpyHostToDevice));
    CU(cudaMemcpy(dw + woff, w, nw * sizeof(float), cudaMemcpyHostToDevice));
    float *y0 = dy + yoff + DENSE_GUARD;
    nc_error err = {0};
    check_rc(nc_cuda_dense_forward(y0, dx + xoff, dw + woff, with_bias ? db : NULL, B, IN, OUT, stream, &err), &err,
             "dense");
    float *y = host_from(y0, ny);
    char what[128];
    snprintf(what, sizeof what, "dense B%d IN%d OUT%d%s offsets x%d w%d y%d", B, IN, OUT, with_bias ? " bias" : "",
             xoff, woff, yoff);
    check_close(what, y, ref, ny, 1e-4, 1e-4);
    uint32_t guard[2][DENSE_GUARD];
    CU(cudaMemcpy(guard[0], y0 - DENSE_GUARD, sizeof guard[0], cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(guard[1], y0 + ny, sizeof guard[1], cudaMemcpyDeviceToHost));
    int kept = 1;
    for (int i = 0; i < DENSE_GUARD; i++) kept &= guard[0][i] == 0xFFFFFFFFu && guard[1][i] == 0xFFFFFFFFu;
    if (!kept) fprintf(stderr, "%s: wrote outside y\n", what);
    CHECK(kept);
    free(y);
    CU(cudaFree(dx));
    CU(cudaFree(dw));
    CU(cudaFree(db));
    CU(cudaFree(dy));
    free(x);
    free(w);
    free(b);
    free(ref);
}

static void test_dense_case(int B, int IN, int OUT, int with_bias) {
    test_dense_at(B, IN, OUT, with_bias, 0, 0, 0);
}

/* Rows [r0, r0 + n) of y (n, OUT) against nc_ref_dense row by row; x is (>= r0 + n, IN). */
static void check_dense_rows(const char *what, const float *y, const float *x, const float *w, const float *b, int r0,
                             int n, int IN, int OUT) {
    float *ref = xmalloc((size_t)OUT * sizeof(float));
    for (int r = 0; r < n; r++) {
        nc_ref_dense(ref, x + (size_t)(r0 + r) * IN, w, b, 1, IN, OUT);
        check_close(what, y + (size_t)r * OUT, ref, (size_t)OUT, 1e-4, 1e-4);
    }
    free(ref);
}

/* A layer of B 10000 (the 2017 one: IN 7200, OUT 500; 2019 spring's: 1296, 140; 2018 fall's: 4056, 160), whole and
 * in pieces: a row's bits must not depend on B, on where the piece starts, or on which kernel the launcher picks for
 * it (big tiles, the wide ones, DENSE_PIPE_L, _M or _S; layers.cu). A sample of rows is checked against
 * nc_ref_dense too (all of them would take the CPU minutes). */
static void test_dense_rows_independent(int IN, int OUT) {
    const int B = 10000;
    const size_t nx = (size_t)B * IN, nw = (size_t)OUT * IN, ny = (size_t)B * OUT;
    float *x = xmalloc(nx * sizeof(float)), *w = xmalloc(nw * sizeof(float)), *b = xmalloc(OUT * sizeof(float));
    fill(x, nx, -1.0f, 1.0f);
    fill(w, nw, -1.0f / sqrtf((float)IN), 1.0f / sqrtf((float)IN));
    fill(b, OUT, -1.0f, 1.0f);
    float *dx = dev_floats(x, nx), *dw = dev_floats(w, nw), *db = dev_floats(b, OUT);
    float *dall = dev_poisoned(ny), *dpart = dev_poisoned(ny);
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        const float *bb = with_bias ? db : NULL;
        nc_error err = {0};
        CU(cudaMemset(dall, 0xFF, ny * sizeof(float)));
        check_rc(nc_cuda_dense_forward(dall, dx, dw, bb, B, IN, OUT, stream, &err), &err, "dense whole");
        float *all = host_from(dall, ny);
        char what[96];
        snprintf(what, sizeof what, "dense %dx%d whole%s", IN, OUT, with_bias ? " bias" : "");
        for (int r = 0; r < B; r += 97)
            check_dense_rows(what, all + (size_t)r * OUT, x, w, with_bias ? b : NULL, r, 1, IN, OUT);
        check_dense_rows(what, all + (size_t)(B - 3) * OUT, x, w, with_bias ? b : NULL, B - 3, 3, IN, OUT);
        /* Pieces {first row, rows}; on an H100, OUT 500: the whole batch takes a wave of big tiles and DENSE_PIPE_L
         * after it (9000 rows too), and the pieces: halves and 2500 rows DENSE_PIPE_L, 7000 and 4224 rows big tiles
         * (a partial wave), 300 rows DENSE_PIPE_M, a few rows DENSE_PIPE_S; OUT 140 and 160: the whole batch and
         * 9000 rows a wave of wide tiles, halves, 7000, 4224, 2500 and 300 rows DENSE_PIPE_M; across tile
         * boundaries. */
        const int pieces[][2] = {{0, 4999},    {4999, 5001}, {0, 1},      {1, 1},       {129, 3},
                                 {130, 4},     {9993, 7},    {1000, 129}, {3333, 2500}, {0, 7000},
                                 {1500, 4224}, {2000, 300},  {1000, 9000}};
        for (size_t p = 0; p < sizeof pieces / sizeof pieces[0]; p++) {
            const int r0 = pieces[p][0], n = pieces[p][1];
            CU(cudaMemset(dpart, 0xFF, ny * sizeof(float)));
            check_rc(nc_cuda_dense_forward(dpart, dx + (size_t)r0 * IN, dw, bb, n, IN, OUT, stream, &err), &err,
                     "dense piece");
            float *part = host_from(dpart, (size_t)n * OUT);
            const int same = memcmp(part, all + (size_t)r0 * OUT, (size_t)n * OUT * sizeof(float)) == 0;
            if (!same)
                fprintf(stderr, "dense %dx%d%s: rows %d..%d alone differ from the whole batch's bits\n", IN, OUT,
                        with_bias ? " bias" : "", r0, r0 + n - 1);
            CHECK(same);
            free(part);
        }
        free(all);
    }
    CU(cudaFree(dx));
    CU(cudaFree(dw));
    CU(cudaFree(db));
    CU(cudaFree(dall));
    CU(cudaFree(dpart));
    free(x);
    free(w);
    free(b);
}

/* Every kernel nc_cuda_dense_forward picks (layers.cu; on an H100: big tiles for the waves of large B where OUT
 * pads to 128 no worse than to 64, wide tiles for those where 128 < OUT <= 160 (16-byte loads only); then
 * DENSE_PIPE_L where OUT pads to 64 no worse than to 32 and its blocks fill the SMs (B 10000, OUT 500), DENSE_PIPE_M
 * where its blocks do (B 10000, OUT 1, 10; 129, 160 with 4-byte loads), DENSE_PIPE_S below (B up to a few hundred)),
 * each with 16-byte loads (IN % 4 == 0, aligned) and 4-byte ones, and every tail of IN, OUT and B. */
static void test_dense(void) {
    for (int rep = 0; rep < 12; rep++)
        test_dense_case(rand_int(1, 200), rand_int(1, 1200), rand_int(1, 300), rep % 3 != 0);
    test_dense_case(64, 64, 64, 1);           /* exact tiles */
    test_dense_case(257, 2000, 10, 1);        /* a final layer */
    test_dense_case(65535 * 64 + 3, 1, 1, 1); /* more than 65535 tiles of images: the launcher's slices */
    const int ins[] = {7200, 500, 33, 1}, outs[] = {500, 10, 1, 129}, bs[] = {1, 4, 7, 128, 129};
    for (size_t i = 0; i < sizeof ins / sizeof ins[0]; i++)
        for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++)
            for (size_t j = 0; j < sizeof bs / sizeof bs[0]; j++)
                test_dense_case(bs[j], ins[i], outs[o], (i + o + j) % 2);
    /* B 10000 (on an H100): big tiles for a wave and DENSE_PIPE_L for the rest (OUT 500), DENSE_PIPE_M (OUT 1, 10;
     * OUT 129 and 160 where IN % 4 != 0), a wave of wide tiles (OUT 129 and 160 where IN % 4 == 0); B 30000 x OUT
     * 160: three waves of DENSE_WIDE_160 (the third partial); B 60000 x OUT 140: five waves of DENSE_WIDE_140 and
     * DENSE_PIPE_M for the 7200 rows left; B 10037 x OUT 133: a wave of wide tiles whose last tile is partial,
     * padding columns (OUT 150: see below); B 12000: a wave, then DENSE_PIPE_M. */
    /* NC_GPU_TEST_QUICK=1 (tools/gpu_suite.sh, under compute-sanitizer's racecheck, which follows every shared
     * memory access) keeps the large batches to small IN: every kernel still runs, on a few GFLOP instead of 170. */
    const char *quick_env = getenv("NC_GPU_TEST_QUICK");
    const int quick = quick_env && *quick_env == '1';
    const int big_outs[] = {500, 10, 1, 129, 160};
    for (size_t o = 0; o < sizeof big_outs / sizeof big_outs[0]; o++) {
        test_dense_case(10000, 33, big_outs[o], 1);
        if (!quick) test_dense_case(10000, 500, big_outs[o], (int)o % 2);
        test_dense_case(10000, 1, big_outs[o], 1);
        test_dense_case(10000, 32, big_outs[o], 0); /* the 16-byte loads */
    }
    test_dense_case(30000, 36, 160, 1);
    test_dense_case(60000, 32, 140, 1);
    test_dense_case(10037, 52, 133, 1);
    test_dense_case(10037, 36, 150, 0); /* a wave of 10032 rows, then 5 rows of DENSE_PIPE_M */
    test_dense_case(12000, 40, 140, 1);
    test_dense_case(12000, 40, 160, 0);
    /* Unaligned x, w and y: the scalar loads (and the vector ones again with only y moved). */
    const int big_in = quick ? 32 : 500;
    for (int off = 1; off <= 3; off++) {
        test_dense_at(10000, big_in, 500, 1, off, 0, 0);
        test_dense_at(10000, big_in, 500, 0, 0, off, off);
        test_dense_at(129, 7200, 129, 1, off, off, 0);
        test_dense_at(3, 500, 500, 1, off, off, off);
        test_dense_at(200, 32, 10, 1, off, 0, 0);
    }
    test_dense_at(10000, big_in, 500, 1, 0, 0, 1);
    if (!quick) {
        test_dense_rows_independent(7200, 500);
        test_dense_rows_independent(1296, 140);
        test_dense_rows_independent(4056, 160);
    }
}

static void test_softmax_argmax(void) {
    const int B = 1000, N = 10;
    const size_t n = (size_t)B * N;
    float *x = xmalloc(n * sizeof(float)), *ref = xmalloc(n * sizeof(float));
    fill(x, n, -30.0f, 30.0f);
    /* Ties: row 0 all equal, row 1 a tie for the maximum at 3 and 7, row 2 one huge logit. */
    for (int j = 0; j < N; j++) x[j] = 1.5f;
    x[N + 3] = x[N + 7] = 100.0f;
    x[2 * N + 9] = 1e4f;
    nc_ref_softmax(ref, x, B, N);
    float *dx = dev_floats(x, n), *dy = dev_poisoned(n);
    nc_error err = {0};
    check_rc(nc_cuda_softmax_forward(dy, dx, B, N, stream, &err), &err, "softmax");
    float *y = host_from(dy, n);
    check_close("softmax", y, ref, n, 1e-6, 1e-5);
    free(y);

    int *pref = xmalloc(B * sizeof(int)), *pred = xmalloc(B * sizeof(int)), *dp;
    nc_argmax_rows(pref, x, B, N);
    CU(cudaMalloc((void **)&dp, B * sizeof(int)));
    CU(cudaMemset(dp, 0xFF, B * sizeof(int)));
    check_rc(nc_cuda_argmax(dp, dx, B, N, stream, &err), &err, "argmax");
    CU(cudaStreamSynchronize(stream));
    CU(cudaMemcpy(pred, dp, B * sizeof(int), cudaMemcpyDeviceToHost));
    int same = 1;
    for (int i = 0; i < B; i++) same &= pred[i] == pref[i];
    CHECK(same);
    CHECK(pred[0] == 0 && pred[1] == 3 && pred[2] == 9);
    CU(cudaFree(dp));
    CU(cudaFree(dx));
    CU(cudaFree(dy));
    free(pref);
    free(pred);
    free(x);
    free(ref);
}

/* Device resize against nc_resize_u8 byte for byte, and the whole input preparation (resize and scaling)
 * against nc_prepare_input bit for bit, for each scaling. */
static void test_resize_case(int B, int h, int w, int S) {
    const size_t nin = (size_t)B * h * w, nout = (size_t)B * S * S;
    uint8_t *img = xmalloc(nin), *ref = xmalloc(nout), *out = xmalloc(nout), *dimg, *dout;
    for (int b = 0; b < B; b++) {
        /* Some images span 0..255, some have a minimum above 0 (the clip lifts their border), some are flat, some
         * are patches of 3 x 3 pixels of one value: there an output's four terms sum to a whole number in reals, and
         * the last bit of their double sum decides its truncation. */
        const int lo = b % 3 == 1 ? rand_int(1, 120) : 0, hi = b % 5 == 4 ? lo : rand_int(lo, 255);
        uint8_t *x = img + (size_t)b * h * w;
        for (int i = 0; i < h * w; i++)
            x[i] = b % 4 == 3 && (i % w) % 3 + (i / w) % 3 ? x[i / w / 3 * 3 * w + i % w / 3 * 3]
                                                           : (uint8_t)rand_int(lo, hi);
        nc_resize_u8(ref + (size_t)b * S * S, S, x, h, w);
    }
    CU(cudaMalloc((void **)&dimg, nin));
    CU(cudaMalloc((void **)&dout, nout));
    CU(cudaMemcpy(dimg, img, nin, cudaMemcpyHostToDevice));
    CU(cudaMemset(dout, 0xAB, nout));
    nc_error err = {0};
    check_rc(nc_cuda_resize_u8(dout, dimg, B, h, w, S, stream, &err), &err, "resize");
    CU(cudaStreamSynchronize(stream));
    CU(cudaMemcpy(out, dout, nout, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < nout; i++) bad += out[i] != ref[i];
    if (bad) fprintf(stderr, "resize %dx%d -> %d: %zu of %zu bytes differ\n", h, w, S, bad, nout);
    CHECK(bad == 0);

    /* The floats through a model of that input (its dense layer 10 S^2 weights: up to S = 1024). */
    const char *inputs[3] = {"raw", "unit", "norm 0.2860 0.3530"};
    for (int s = 0; s < 3 && S <= 1024; s++) {
        char in_text[64];
        snprintf(in_text, sizeof in_text, "1x%dx%d %s", S, S, inputs[s]);
        nc_model *m = NULL;
        check_rc(nc_model_build(&m, "resize", in_text, "flatten; dense 10", &err), &err, "nc_model_build");
        if (!m) continue;
        float *xref = xmalloc(nout * sizeof(float)), *dx = dev_poisoned(nout);
        check_rc(nc_prepare_input(xref, m, img, B, h, w, &err), &err, "nc_prepare_input");
        check_rc(nc_cuda_prepare_input(dx, dimg, B, h, w, m, stream, &err), &err, "nc_cuda_prepare_input");
        float *x = host_from(dx, nout);
        CHECK(memcmp(x, xref, nout * sizeof(float)) == 0);
        free(x);
        free(xref);
        CU(cudaFree(dx));
        nc_model_free(m);
    }
    CU(cudaFree(dimg));
    CU(cudaFree(dout));
    free(img);
    free(ref);
    free(out);
}

/* Every Fashion-MNIST test image at each of the course's input sizes, byte for byte against nc_resize_u8. */
static void test_resize_data(void) {
    nc_dataset ds;
    nc_error err = {0};
    if (nc_dataset_load_split(&ds, NULL, "t10k", &err) != NC_OK) {
        printf("test_gpu_layers: %s; the resize of the test set not checked\n", err.msg);
        return;
    }
    const int sizes[] = {48, 64, 70, 72, 86};
    const size_t nin = (size_t)ds.n * ds.h * ds.w;
    uint8_t *dimg, *dout;
    CU(cudaMalloc((void **)&dimg, nin));
    CU(cudaMemcpy(dimg, ds.images, nin, cudaMemcpyHostToDevice));
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const int S = sizes[k];
        const size_t nout = (size_t)ds.n * S * S;
        uint8_t *ref = xmalloc(nout), *out = xmalloc(nout);
        for (int b = 0; b < ds.n; b++)
            nc_resize_u8(ref + (size_t)b * S * S, S, ds.images + (size_t)b * ds.h * ds.w, ds.h, ds.w);
        CU(cudaMalloc((void **)&dout, nout));
        CU(cudaMemset(dout, 0xAB, nout));
        check_rc(nc_cuda_resize_u8(dout, dimg, ds.n, ds.h, ds.w, S, stream, &err), &err, "resize");
        CU(cudaStreamSynchronize(stream));
        CU(cudaMemcpy(out, dout, nout, cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (size_t i = 0; i < nout; i++) bad += out[i] != ref[i];
        if (bad) fprintf(stderr, "resize of the %d test images to %d: %zu of %zu bytes differ\n", ds.n, S, bad, nout);
        CHECK(bad == 0);
        CU(cudaFree(dout));
        free(ref);
        free(out);
    }
    CU(cudaFree(dimg));
    nc_dataset_free(&ds);
}

static void test_resize(void) {
    const int sizes[] = {28, 29, 48, 64, 70, 72, 86, 100, 129};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) test_resize_case(40, 28, 28, sizes[i]);
    /* More images than the blocks a GPU holds of resize_pairs_kernel (about four an SM): blocks take several, each
     * image's bytes copied while the block resizes the one before. */
    test_resize_case(2000, 28, 28, 48);
    test_resize_case(5, 28, 28, 255); /* the largest block of resize_kernel: 255 columns by 2 lanes of rows */
    test_resize_case(5, 28, 28, 257); /* more columns than a block's threads, more rows than its taps at once */
    test_resize_case(5, 28, 28, 600);
    test_resize_case(7, 20, 28, 64);    /* non-square images into a square input */
    test_resize_case(3, 1, 1, 3);       /* one pixel */
    test_resize_case(3, 70, 66, 100);   /* too large for shared memory: the pixels read from global memory */
    test_resize_case(1, 3, 1500, 1500); /* the same, in six passes of a block's columns */
    test_resize_case(3, 29, 29, 28);    /* a shrink, as the cuda backend's warm-up does: nc_resize_u8's formula */
    test_resize_case(2, 65, 65, 64);
    /* Under compute-sanitizer (NC_GPU_TEST_QUICK=1, above) the made-up images only. */
    const char *quick_env = getenv("NC_GPU_TEST_QUICK");
    if (!(quick_env && *quick_env == '1')) test_resize_data();
}

/* Both GPU backends against cpu-ref on one model with every layer kind, over chunks of 128 images
 * (the last one partial), with logits. */
static void test_backends(void) {
    nc_error err = {0};
    nc_model *m = NULL;
    check_rc(nc_model_build(&m, "every-layer", "1x32x32 unit",
                            "conv 6 5 bias; sigmoid; avgpool 3 2; conv 8 3; relu; maxpool 2 2; conv 4 3 bias; tanh; "
                            "flatten; dense 40 bias; relu; dense 10 bias; softmax",
                            &err),
             &err, "nc_model_build");
    if (!m) return;
    nc_model_init_seeded(m, 7);
    const int n = 300, classes = 10;
    uint8_t *img = xmalloc((size_t)n * 28 * 28);
    for (size_t i = 0; i < (size_t)n * 28 * 28; i++) img[i] = (uint8_t)rand_int(0, 255);
    int *pref = xmalloc(n * sizeof(int)), *pred = xmalloc(n * sizeof(int));
    float *lref = xmalloc((size_t)n * classes * sizeof(float)), *logits = xmalloc((size_t)n * classes * sizeof(float));
    nc_session *s = NULL;
    check_rc(nc_session_create(&s, m, "cpu-ref", NULL, &err), &err, "cpu-ref session");
    check_rc(nc_session_run(s, img, n, 28, 28, pref, lref, NULL, &err), &err, "cpu-ref run");
    nc_session_free(s);
    const char *backends[2] = {"cuda", "cudnn"};
    for (int bi = 0; bi < 2; bi++) {
        nc_run_opts opts = {0};
        opts.chunk = 128;
        s = NULL;
        int rc = nc_session_create(&s, m, backends[bi], &opts, &err);
        if (rc == NC_ERR_UNAVAILABLE && bi == 1) {
            printf("cudnn not built: %s\n", err.msg);
            continue;
        }
        check_rc(rc, &err, backends[bi]);
        if (rc) continue;
        nc_timing t;
        memset(pred, 0xFF, n * sizeof(int));
        for (size_t i = 0; i < (size_t)n * classes; i++) logits[i] = NAN;
        check_rc(nc_session_run(s, img, n, 28, 28, pred, logits, &t, &err), &err, backends[bi]);
        int same = 0;
        for (int i = 0; i < n; i++) same += pred[i] == pref[i];
        if (same != n) fprintf(stderr, "%s: %d of %d predictions differ from cpu-ref\n", backends[bi], n - same, n);
        CHECK(same == n);
        check_close(backends[bi], logits, lref, (size_t)n * classes, 1e-5, 1e-4);
        CHECK(t.n_conv == 3);
        CHECK(t.conv_s[0] > 0.0 && t.conv_s[1] > 0.0 && t.conv_s[2] > 0.0);
        /* A second run on the same plan, with n not a multiple of anything. */
        check_rc(nc_session_run(s, img, 77, 28, 28, pred, logits, &t, &err), &err, backends[bi]);
        same = 0;
        for (int i = 0; i < 77; i++) same += pred[i] == pref[i];
        CHECK(same == 77);
        nc_session_free(s);
    }
    free(img);
    free(pref);
    free(pred);
    free(lref);
    free(logits);
    nc_model_free(m);
}

/* Sessions of their own, created, run and freed from four threads at once on one device (nanoconv.h: a session is
 * one thread's at a time; sessions of their own may be used at once, taking turns on one GPU), each on images of its
 * own: every thread's predictions are cpu-ref's and its logits within the layer tolerance of them; and on a fixed
 * exact version (6, no tuning, the same sums), bit for bit those of the same session run alone. */
enum { GC_THREADS = 4, GC_N = 211 };
typedef struct {
    const nc_model *m;
    const char *backend;
    int conv_kernel;
    const uint8_t *img;
    int *pred;
    float *logits;
    int rc;
    nc_error err;
} gc_job;

static void *gc_run(void *arg) {
    gc_job *j = arg;
    nc_session *s = NULL;
    nc_run_opts opts = {0};
    opts.conv_kernel = j->conv_kernel;
    opts.chunk = 64;
    j->rc = nc_session_create(&s, j->m, j->backend, &opts, &j->err);
    for (int rep = 0; rep < 2 && !j->rc; rep++)
        j->rc = nc_session_run(s, j->img, GC_N, 28, 28, j->pred, j->logits, NULL, &j->err);
    nc_session_free(s);
    return NULL;
}

static void test_concurrent_sessions(void) {
    nc_error err = {0};
    nc_model *m = NULL;
    check_rc(nc_model_build(&m, "concurrent", "1x28x28 raw",
                            "conv 12 5 bias; tanh; maxpool 2 2; conv 16 5 bias; tanh; maxpool 2 2; flatten; "
                            "dense 64 bias; tanh; dense 10 bias; softmax",
                            &err),
             &err, "nc_model_build");
    if (!m) return;
    nc_model_init_seeded(m, 21);
    const size_t per = (size_t)GC_N * 28 * 28, nl = (size_t)GC_N * 10;
    uint8_t *img = xmalloc(GC_THREADS * per);
    for (size_t i = 0; i < GC_THREADS * per; i++) img[i] = (uint8_t)rand_int(0, 255);
    int *pref = xmalloc(GC_THREADS * GC_N * sizeof(int));
    float *lref = xmalloc(GC_THREADS * nl * sizeof(float));
    nc_session *s = NULL;
    check_rc(nc_session_create(&s, m, "cpu-ref", NULL, &err), &err, "cpu-ref session");
    if (s) check_rc(nc_session_run(s, img, GC_THREADS * GC_N, 28, 28, pref, lref, NULL, &err), &err, "cpu-ref run");
    nc_session_free(s);
    const struct {
        const char *backend;
        int conv_kernel;
    } cases[] = {{"cuda", 0}, {"cuda", 6}, {"cudnn", 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (!strcmp(cases[c].backend, "cudnn") && !nc_backend_find("cudnn")) continue;
        gc_job alone[GC_THREADS], together[GC_THREADS];
        for (int t = 0; t < GC_THREADS; t++) {
            alone[t] = (gc_job){
                .m = m, .backend = cases[c].backend, .conv_kernel = cases[c].conv_kernel, .img = img + t * per};
            alone[t].pred = xmalloc(GC_N * sizeof(int)), alone[t].logits = xmalloc(nl * sizeof(float));
            together[t] = alone[t];
            together[t].pred = xmalloc(GC_N * sizeof(int)), together[t].logits = xmalloc(nl * sizeof(float));
            if (cases[c].conv_kernel) gc_run(&alone[t]);
        }
        pthread_t th[GC_THREADS];
        for (int t = 0; t < GC_THREADS; t++) CHECK(pthread_create(&th[t], NULL, gc_run, &together[t]) == 0);
        for (int t = 0; t < GC_THREADS; t++) pthread_join(th[t], NULL);
        char what[64];
        snprintf(what, sizeof what, "%s v%d, four threads at once", cases[c].backend, cases[c].conv_kernel);
        for (int t = 0; t < GC_THREADS; t++) {
            check_rc(together[t].rc, &together[t].err, what);
            int same = 0;
            for (int i = 0; i < GC_N; i++) same += together[t].pred[i] == pref[t * GC_N + i];
            if (same != GC_N)
                fprintf(stderr, "%s: thread %d: %d of %d predictions differ\n", what, t, GC_N - same, GC_N);
            CHECK(same == GC_N);
            check_close(what, together[t].logits, lref + t * nl, nl, 1e-5, 1e-4);
            if (cases[c].conv_kernel) {
                check_rc(alone[t].rc, &alone[t].err, "alone");
                CHECK(memcmp(alone[t].logits, together[t].logits, nl * sizeof(float)) == 0);
            }
            free(alone[t].pred), free(alone[t].logits), free(together[t].pred), free(together[t].logits);
        }
    }
    free(img);
    free(pref);
    free(lref);
    nc_model_free(m);
}

static void test_errors(void) {
    nc_error err = {0};
    int v = 99;
    CHECK(nc_cuda_conv_resolve(&v, &err) == NC_ERR_ARG);
    CHECK_MSG(err, "--conv-kernel 99");
    CHECK_MSG(err, "1 (naive)");
    v = 0;
    CHECK(nc_cuda_conv_resolve(&v, &err) == NC_OK && v == NC_CUDA_CONV_DEFAULT);
    CHECK(nc_cuda_conv_forward(42, NULL, NULL, NULL, NULL, 1, 1, 3, 3, 1, 3, stream, &err) == NC_ERR_ARG);

    nc_model *m = NULL;
    /* One image's activations are 64 x 4094 x 4094 floats (4.3 GB): 64 images in a chunk cannot fit. */
    check_rc(
        nc_model_build(&m, "huge", "1x4096x4096 raw", "conv 64 3; maxpool 4094 4094; flatten; dense 10 bias", &err),
        &err, "nc_model_build");
    if (!m) return;
    nc_model_init_seeded(m, 1);
    nc_run_opts opts = {0};
    opts.conv_kernel = 99;
    nc_session *s = NULL;
    CHECK(nc_session_create(&s, m, "cuda", &opts, &err) == NC_ERR_ARG);
    CHECK_MSG(err, "valid: 1 (naive)");
    if (nc_backend_find("cudnn")) {
        opts.conv_kernel = 1;
        CHECK(nc_session_create(&s, m, "cudnn", &opts, &err) == NC_ERR_ARG);
        CHECK_MSG(err, "--conv-kernel");
        opts.conv_kernel = 0;
        opts.precision = 3; /* fp16: the cuda backend's, not cuDNN's fp32 baseline */
        CHECK(nc_session_create(&s, m, "cudnn", &opts, &err) == NC_ERR_ARG);
        CHECK_MSG(err, "backend 'cudnn' computes in fp32 only");
        opts.precision = 0;
    }
    opts.conv_kernel = 0;
    opts.device = 1000;
    CHECK(nc_session_create(&s, m, "cuda", &opts, &err) == NC_ERR_ARG);
    CHECK_MSG(err, "--device 1000");

    opts.device = 0;
    opts.chunk = 64;
    int rc = nc_session_create(&s, m, "cuda", &opts, &err);
    check_rc(rc, &err, "cuda session on the huge model");
    if (!rc) {
        uint8_t img[64 * 28 * 28] = {0};
        int pred[64];
        rc = nc_session_run(s, img, 64, 28, 28, pred, NULL, NULL, &err);
        printf("out of memory, as expected: %s\n", err.msg);
        CHECK(rc == NC_ERR_NOMEM);
        CHECK_MSG(err, "out of device memory");
        nc_session_free(s);
    }
    nc_model_free(m);
    /* The device is still good afterwards. */
    CU(cudaGetLastError());
    test_dense_case(5, 7, 3, 1);
}

int main(void) {
    const int start = gpu_test_start();
    if (start) return start;
    test_conv();
    test_activations();
    const char *quick = getenv("NC_GPU_TEST_QUICK");
    test_tanh_every_float(quick && *quick && *quick != '0');
    test_pool();
    test_dense();
    test_softmax_argmax();
    test_resize();
    test_backends();
    test_concurrent_sessions();
    test_errors();
    CU(cudaStreamDestroy(stream));
    return nc_test_done("test_gpu_layers");
}
#endif
