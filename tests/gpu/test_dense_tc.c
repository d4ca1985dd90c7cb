/*
 * dense_tc.cu's GEMM at every precision against nc_ref_dense, and gpu_plan.cu's chunk loop in pieces against one
 * piece. Skips (77) where the build has no CUDA or the machine no GPU.
 *
 * GEMM: random shapes around the zoo's dense layers (IN 7200/500/160/140/32, OUT 500/160/140/32/10), B not a
 * multiple of the 128-row tile, IN not a multiple of the 32-wide k slice, x and w at 16-, 8- and 4-byte alignment
 * (x's 16- and 4-byte load paths; 3xtf32's 16-, 8- and 4-byte copies), with and without bias; outputs poisoned
 * with NaN before each run. Weights prepared once (nc_cuda_dense_tc_prepare, then
 * nc_cuda_dense_tc_forward_prepared) must give the plain forward's bits.
 * Tolerance, per output: |gpu - ref| <= tol S + 1e-5 (1 + |ref|), S = sum_k |x_k w_k|. Rounding both operands of a
 * product to a p-bit significand (unit roundoff u = 2^-p) moves it by at most (2u + u^2) of its magnitude, so the
 * sum by at most ~2u S, plus fp32's own summation: tf32 and fp16 (11-bit significands) 2^-10 ~ 9.8e-4, tol 1.5e-3;
 * bf16 (8 bits) 2^-7 ~ 7.8e-3, tol 1.2e-2; 3xtf32 leaves ~2^-22 a product, tol 1e-5. The errors seen must also
 * rank as the formats do (bf16's largest well above fp16's, 3xtf32's well below tf32's), so that a precision
 * quietly running as another fails. A row of y must not depend on B (the chunk loop's pieces rely on it): the
 * first rows of a run on fewer images are compared bit for bit. k split among 1, 2, 4 and 8 blocks a tile (every
 * tensor-core precision; sm_90's clusters): each against the reference and bit for bit the same on fewer images, the
 * layer's own split the plain forward's bits, splits with blocks that have no slice, and bad splits refused; tf32,
 * fp16 and bf16 on mma.sync and on wgmma (sm_90a) alike, and wgmma refused where it cannot run.
 *
 * Pieces: nc_gpu_run on a chunk of >= 2 * NC_GPU_PIECE_MIN images calls the forward for the head once a piece (the
 * first the smallest, whole 128s but the last), then once for the tail on the whole chunk (logged here), and its
 * predictions and logits are bit for bit those of chunks small enough to run whole; through a session on the cuda
 * backend too (a conv model, fp32 and tf32), where Op Time must be positive.
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
#include <string.h>

#include "core/backend.h"
#include "core/model.h"
#include "cpu/ref.h"
#include "cuda/cuda_layers.h"
#include "cuda/gpu_plan.h"
#include "nc_test.h"

#define GPU_TEST_SEED 0xD1B54A32D192ED03ull
#include "gpu/gpu_test.h"

static const char *const names[] = {"fp32", "tf32", "3xtf32", "fp16", "bf16"};
static double worst[NC_PRECISION_COUNT]; /* by precision: the largest |gpu - ref| / S */

static double tol_of(int precision) {
    switch (precision) {
    case NC_PRECISION_3XTF32: return 1e-5;
    case NC_PRECISION_BF16: return 1.2e-2;
    default: return 1.5e-3; /* tf32, fp16 */
    }
}

/* out against ref within tol_of(precision) S + 1e-5 (1 + |ref|); keeps the largest error / S in worst[precision]. */
static void compare(const char *what, int precision, const float *out, const float *ref, const float *S, size_t n) {
    check_scaled(what, &worst[precision], out, ref, S, n, tol_of(precision));
}

/* y (B, OUT) at `precision` on the device copies; NaN-poisoned first. */
static float *run_dense(int precision, const float *dx, const float *dw, const float *db, int B, int IN, int OUT) {
    float *dy;
    const size_t ny = (size_t)B * OUT;
    CU(cudaMalloc((void **)&dy, ny * sizeof(float)));
    CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
    nc_error err = {0};
    check_rc(nc_cuda_dense_tc_forward(precision, dy, dx, dw, db, B, IN, OUT, stream, &err), &err, "dense_tc");
    float *y = host_from(dy, ny);
    CU(cudaFree(dy));
    return y;
}

/* y (B, OUT) at `precision` on weights prepared once; NaN-poisoned first. */
static float *run_prepared(int precision, const float *dx, const float *dw, const float *db, int B, int IN, int OUT) {
    float *dy;
    void *wp;
    const size_t ny = (size_t)B * OUT, bytes = nc_cuda_dense_tc_prepared_size(precision, IN, OUT);
    CU(cudaMalloc((void **)&dy, ny * sizeof(float)));
    CU(cudaMalloc(&wp, bytes));
    CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
    nc_error err = {0};
    check_rc(nc_cuda_dense_tc_prepare(precision, wp, dw, IN, OUT, stream, &err), &err, "dense_tc_prepare");
    check_rc(nc_cuda_dense_tc_forward_prepared(precision, dy, dx, wp, db, B, IN, OUT, stream, &err), &err,
             "dense_tc_forward_prepared");
    float *y = host_from(dy, ny);
    CU(cudaFree(dy));
    CU(cudaFree(wp));
    return y;
}

/* A random layer (B, IN, OUT) on the host: x, w and b, the reference y (with b where with_bias) and S = sum_k
 * |x_k w_k| for the tolerance. */
typedef struct {
    float *x, *w, *b, *ref, *S;
} dense_case;

static dense_case dense_case_make(int B, int IN, int OUT, int with_bias) {
    const size_t nx = (size_t)B * IN, nw = (size_t)OUT * IN, ny = (size_t)B * OUT;
    dense_case c = {xmalloc(nx * sizeof(float)), xmalloc(nw * sizeof(float)), xmalloc(OUT * sizeof(float)),
                    xmalloc(ny * sizeof(float)), xmalloc(ny * sizeof(float))};
    float *ax = xmalloc(nx * sizeof(float)), *aw = xmalloc(nw * sizeof(float));
    fill(c.x, nx, -1.0f, 1.0f);
    fill(c.w, nw, -0.05f, 0.05f);
    fill(c.b, OUT, -1.0f, 1.0f);
    for (size_t i = 0; i < nx; i++) ax[i] = fabsf(c.x[i]);
    for (size_t i = 0; i < nw; i++) aw[i] = fabsf(c.w[i]);
    nc_ref_dense(c.ref, c.x, c.w, with_bias ? c.b : NULL, B, IN, OUT);
    nc_ref_dense(c.S, ax, aw, NULL, B, IN, OUT);
    free(ax), free(aw);
    return c;
}

static void dense_case_free(dense_case *c) {
    free(c->x), free(c->w), free(c->b), free(c->ref), free(c->S);
}

/* One shape at every reduced precision. sx, sw: x and w start that many floats into their allocations (1 or 3:
 * 4-byte aligned, 2: 8-byte, 0: 16-byte). */
static void dense_shape(int B, int IN, int OUT, int with_bias, int sx, int sw) {
    const size_t nx = (size_t)B * IN, nw = (size_t)OUT * IN, ny = (size_t)B * OUT;
    dense_case dc = dense_case_make(B, IN, OUT, with_bias);
    const float *x = dc.x, *w = dc.w, *b = dc.b, *ref = dc.ref, *S = dc.S;
    float *dx0, *dw0, *db = dev_from(b, OUT * sizeof(float));
    CU(cudaMalloc((void **)&dx0, (nx + 4) * sizeof(float)));
    CU(cudaMalloc((void **)&dw0, (nw + 4) * sizeof(float)));
    CU(cudaMemcpy(dx0 + sx, x, nx * sizeof(float), cudaMemcpyHostToDevice));
    CU(cudaMemcpy(dw0 + sw, w, nw * sizeof(float), cudaMemcpyHostToDevice));
    const int few = B > 1 ? B / 2 + 1 : 1; /* fewer images: rows 0 .. few-1 must come out the same */
    for (int pr = NC_PRECISION_TF32; pr < NC_PRECISION_COUNT; pr++) {
        char what[160];
        snprintf(what, sizeof what, "dense %s B%d IN%d OUT%d%s x+%d w+%d", names[pr], B, IN, OUT,
                 with_bias ? " bias" : "", sx, sw);
        float *y = run_dense(pr, dx0 + sx, dw0 + sw, with_bias ? db : NULL, B, IN, OUT);
        compare(what, pr, y, ref, S, ny);
        float *y2 = run_dense(pr, dx0 + sx, dw0 + sw, with_bias ? db : NULL, few, IN, OUT);
        const int same = memcmp(y, y2, (size_t)few * OUT * sizeof(float)) == 0;
        if (!same) fprintf(stderr, "%s: the first %d rows differ when run as B = %d\n", what, few, few);
        CHECK(same);
        float *y3 = run_prepared(pr, dx0 + sx, dw0 + sw, with_bias ? db : NULL, B, IN, OUT);
        const int prepared = memcmp(y, y3, ny * sizeof(float)) == 0;
        if (!prepared) fprintf(stderr, "%s: prepared weights give other bits than the plain forward\n", what);
        CHECK(prepared);
        free(y), free(y2), free(y3);
    }
    CU(cudaFree(dx0));
    CU(cudaFree(dw0));
    CU(cudaFree(db));
    dense_case_free(&dc);
}

/* ---------------------------------------------------------------- k split among a cluster's blocks */

static const char *const kernel_names[] = {"auto", "mma.sync", "wgmma", "wgmma warp-specialized"};

/* y (B, OUT) at `precision` on prepared weights wp with k split among S blocks a tile, on the tensor-core kernel
 * asked for (NC_DENSE_TC_*); NaN-poisoned first. */
static float *run_ksplit(int precision, const float *dx, const void *wp, const float *db, int B, int IN, int OUT, int S,
                         int kernel) {
    float *dy;
    const size_t ny = (size_t)B * OUT;
    CU(cudaMalloc((void **)&dy, ny * sizeof(float)));
    CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
    nc_error err = {0};
    char what[64];
    snprintf(what, sizeof what, "dense_tc_forward_kernel S %d %s", S, kernel_names[kernel]);
    check_rc(nc_cuda_dense_tc_forward_kernel(precision, dy, dx, wp, db, B, IN, OUT, S, kernel, stream, &err), &err,
             what);
    float *y = host_from(dy, ny);
    CU(cudaFree(dy));
    return y;
}

/* Every split of k (1, 2, 4, 8) at every tensor-core precision against the reference, each a row's bits whatever B is,
 * and the layer's own split the plain forward's bits. Where the device has clusters (sm_90 and up); else a split above
 * 1 must be refused. Every precision on each of its kernels: mma.sync (3xtf32's own), and wgmma where the build and
 * device run it (the plain forward then runs wgmma), and on the warp-specialized wgmma kernel there, which must give
 * wgmma's bits (the same products summed in the same order). */
static void dense_ksplit_shape(int B, int IN, int OUT, int with_bias, int major) {
    const size_t nx = (size_t)B * IN, nw = (size_t)OUT * IN, ny = (size_t)B * OUT;
    dense_case dc = dense_case_make(B, IN, OUT, with_bias);
    const float *x = dc.x, *w = dc.w, *b = dc.b, *ref = dc.ref, *S = dc.S;
    float *dx = dev_from(x, nx * sizeof(float)), *dw = dev_from(w, nw * sizeof(float));
    float *db = dev_from(b, OUT * sizeof(float));
    const int few = B > 1 ? B / 2 + 1 : 1;
    for (int pr = NC_PRECISION_TF32; pr < NC_PRECISION_COUNT; pr++) {
        void *wp;
        nc_error err = {0};
        CU(cudaMalloc(&wp, nc_cuda_dense_tc_prepared_size(pr, IN, OUT)));
        check_rc(nc_cuda_dense_tc_prepare(pr, wp, dw, IN, OUT, stream, &err), &err, "dense_tc_prepare");
        const int own = nc_cuda_dense_tc_ksplits(pr, IN, &err);
        CHECK(own == 1 || (major >= 9 && (own == 2 || own == 4 || own == 8)));
        float *plain = run_dense(pr, dx, dw, with_bias ? db : NULL, B, IN, OUT);
        const int wg = nc_cuda_dense_tc_has_wgmma(pr, &err);
        CHECK(wg == 0 || wg == 1);
        const int own_kernel = wg ? NC_DENSE_TC_WGMMA : NC_DENSE_TC_MMA;
        const int last = wg ? NC_DENSE_TC_WS : own_kernel;
        for (int kernel = NC_DENSE_TC_MMA; kernel <= last; kernel++)
            for (int ks = 1; ks <= 8; ks *= 2) {
                char what[160];
                snprintf(what, sizeof what, "dense %s B%d IN%d OUT%d%s, k split %d, %s", names[pr], B, IN, OUT,
                         with_bias ? " bias" : "", ks, kernel_names[kernel]);
                if (major < 9 && ks > 1) { /* no clusters: refused, not computed */
                    float *dy;
                    CU(cudaMalloc((void **)&dy, ny * sizeof(float)));
                    const int rc =
                        nc_cuda_dense_tc_forward_kernel(pr, dy, dx, wp, db, B, IN, OUT, ks, kernel, stream, &err);
                    CHECK(rc == NC_ERR_ARG && strstr(err.msg, "sm_90") != NULL);
                    CU(cudaFree(dy));
                    continue;
                }
                float *y = run_ksplit(pr, dx, wp, with_bias ? db : NULL, B, IN, OUT, ks, kernel);
                compare(what, pr, y, ref, S, ny);
                float *y2 = run_ksplit(pr, dx, wp, with_bias ? db : NULL, few, IN, OUT, ks, kernel);
                const int same = memcmp(y, y2, (size_t)few * OUT * sizeof(float)) == 0;
                if (!same) fprintf(stderr, "%s: the first %d rows differ when run as B = %d\n", what, few, few);
                CHECK(same);
                if (kernel == NC_DENSE_TC_WS) { /* wgmma's bits */
                    float *y3 = run_ksplit(pr, dx, wp, with_bias ? db : NULL, B, IN, OUT, ks, NC_DENSE_TC_WGMMA);
                    const int as_wg = memcmp(y, y3, ny * sizeof(float)) == 0;
                    if (!as_wg) fprintf(stderr, "%s: not wgmma's bits\n", what);
                    CHECK(as_wg);
                    free(y3);
                }
                if (ks == own && kernel == own_kernel) { /* what the plain forward runs */
                    const int as_plain = memcmp(y, plain, ny * sizeof(float)) == 0;
                    if (!as_plain) fprintf(stderr, "%s: not the plain forward's bits\n", what);
                    CHECK(as_plain);
                }
                free(y), free(y2);
            }
        free(plain);
        CU(cudaFree(wp));
    }
    CU(cudaFree(dx));
    CU(cudaFree(dw));
    CU(cudaFree(db));
    dense_case_free(&dc);
}

/* The splits the launcher takes and refuses. */
static void test_ksplit_choice(int major) {
    nc_error err = {0};
    /* The 2017 dense layer (225 slices of 32): split where clusters exist, so that the shapes above run it. */
    const int s2017 = nc_cuda_dense_tc_ksplits(NC_PRECISION_FP16, 7200, &err);
    printf("k split of the 2017 dense layer (IN 7200): %d\n", s2017);
    CHECK(major >= 9 ? s2017 > 1 : s2017 == 1);
    CHECK(nc_cuda_dense_tc_ksplits(NC_PRECISION_TF32, 7200, &err) == s2017);
    CHECK(nc_cuda_dense_tc_ksplits(NC_PRECISION_3XTF32, 7200, &err) == (s2017 < 2 ? s2017 : 2)); /* at most 2 */
    CHECK(nc_cuda_dense_tc_ksplits(NC_PRECISION_FP32, 7200, &err) == 1); /* the SIMT SGEMM: k in order */
    CHECK(nc_cuda_dense_tc_ksplits(NC_PRECISION_FP16, 32, &err) == 1);   /* one slice */
    /* Splits other than 1, 2, 4, 8, and any above 1 at fp32: NC_ERR_ARG, nothing launched. */
    const int bad[][2] = {{NC_PRECISION_FP16, 3},
                          {NC_PRECISION_TF32, 16},
                          {NC_PRECISION_BF16, -1},
                          {NC_PRECISION_3XTF32, 6},
                          {NC_PRECISION_FP32, 2}};
    for (int i = 0; i < 5; i++) {
        err.msg[0] = 0;
        const int rc =
            nc_cuda_dense_tc_forward_ksplit(bad[i][0], NULL, NULL, NULL, NULL, 1, 64, 8, bad[i][1], stream, &err);
        if (rc != NC_ERR_ARG)
            fprintf(stderr, "k split %d at %s: rc %d, expected NC_ERR_ARG\n", bad[i][1], names[bad[i][0]], rc);
        CHECK(rc == NC_ERR_ARG && strstr(err.msg, "k split") != NULL);
    }
}

/* The kernels the launcher takes and refuses: wgmma for the tensor-core precisions only (not fp32), and only where
 * nc_cuda_dense_tc_has_wgmma says so (an sm_90a build on an sm_90 device: on the H100 it must, where the GPU suite
 * runs), and the warp-specialized one likewise; no kernel 4 or -1. */
static void test_kernel_choice(int major, int minor) {
    nc_error err = {0};
    const int wg = nc_cuda_dense_tc_has_wgmma(NC_PRECISION_TF32, &err);
    printf("tf32, 3xtf32, fp16 and bf16 on wgmma: %s\n", wg == 1 ? "yes" : "no");
    CHECK(wg == 0 || wg == 1);
    CHECK(wg == 0 || (major == 9 && minor == 0));
    const char *want = getenv("NC_TEST_WANT_WGMMA"); /* tools/gpu_suite.sh on the H100: the build must have it */
    if (want && *want == '1') CHECK(wg == 1);
    CHECK(nc_cuda_dense_tc_has_wgmma(NC_PRECISION_FP16, &err) == wg);
    CHECK(nc_cuda_dense_tc_has_wgmma(NC_PRECISION_BF16, &err) == wg);
    CHECK(nc_cuda_dense_tc_has_wgmma(NC_PRECISION_3XTF32, &err) == wg);
    CHECK(nc_cuda_dense_tc_has_wgmma(NC_PRECISION_FP32, &err) == 0);
    const int bad[][2] = {{NC_PRECISION_FP32, NC_DENSE_TC_WGMMA},
                          {NC_PRECISION_3XTF32, wg ? -2 : NC_DENSE_TC_WGMMA},
                          {NC_PRECISION_TF32, 4},
                          {NC_PRECISION_3XTF32, wg ? 5 : NC_DENSE_TC_WS},
                          {NC_PRECISION_FP32, NC_DENSE_TC_WS},
                          {NC_PRECISION_BF16, -1},
                          {NC_PRECISION_FP16, wg ? 7 : NC_DENSE_TC_WGMMA}};
    for (int i = 0; i < 7; i++) {
        err.msg[0] = 0;
        const int rc =
            nc_cuda_dense_tc_forward_kernel(bad[i][0], NULL, NULL, NULL, NULL, 1, 64, 8, 1, bad[i][1], stream, &err);
        if (rc != NC_ERR_ARG)
            fprintf(stderr, "kernel %d at %s: rc %d, expected NC_ERR_ARG\n", bad[i][1], names[bad[i][0]], rc);
        CHECK(rc == NC_ERR_ARG && (strstr(err.msg, "wgmma") != NULL || strstr(err.msg, "kernel") != NULL));
    }
}

/* ---------------------------------------------------------------- the chunk loop in pieces */

typedef struct {
    int precision, n, from[64], to[64], B[64]; /* the layers and B of each forward call */
    size_t i0[64];
} piece_log;

/* A forward for a "flatten; dense 10 bias" model on 12x12 input: logs the call, then runs the dense layer where
 * [from, to) holds it. */
static int dense_forward(void *ctx, nc_gpu *g, int from, int to, size_t i0, int B, int *cur, nc_error *err) {
    piece_log *L = (piece_log *)ctx;
    if (L->n < 64) L->from[L->n] = from, L->to[L->n] = to, L->i0[L->n] = i0, L->B[L->n++] = B;
    if (from > 1 || to <= 1) return NC_OK;
    const int rc = nc_cuda_dense_tc_forward(L->precision, g->act[1 - *cur] + i0 * 10, g->act[*cur] + i0 * 144,
                                            g->weight[1], g->bias[1], B, 144, 10, g->stream, err);
    *cur = 1 - *cur;
    return rc;
}

/* Whether a log is one chunk of N images: `pieces` head calls (layers [0, 1)), each from where the one before it
 * ends, a first smaller than the others, which are equal but the last, all but the last whole 128s, then one tail
 * call (layers [1, 2)) on all N. */
static int one_chunk(const piece_log *L, int N, int pieces) {
    int ok = L->n == pieces + 1 && pieces > 1 && L->B[0] < L->B[1];
    size_t next = 0;
    for (int i = 0; ok && i < pieces; i++) {
        ok = L->from[i] == 0 && L->to[i] == 1 && L->i0[i] == next && (i + 1 == pieces || L->B[i] % 128 == 0) &&
             (i < 2 || i + 1 == pieces || L->B[i] == L->B[1]);
        next += (size_t)L->B[i];
    }
    return ok && next == (size_t)N && L->from[pieces] == 1 && L->to[pieces] == 2 && L->i0[pieces] == 0 &&
           L->B[pieces] == N;
}

/* n images through nc_gpu_run with chunks of `chunk`: predictions, logits and the forward's log. */
static void run_plan(const nc_model *m, int precision, size_t chunk, const uint8_t *img, int n, int *pred,
                     float *logits, piece_log *L) {
    nc_gpu g;
    nc_error err = {0};
    nc_run_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.chunk = chunk;
    memset(L, 0, sizeof *L);
    L->precision = precision;
    nc_timing t;
    memset(&t, 0, sizeof t);
    int rc = nc_gpu_open(&g, m, &opts, 0.5, 0, &err);
    check_rc(rc, &err, "nc_gpu_open");
    if (rc) return;
    check_rc(nc_gpu_run(&g, dense_forward, L, img, n, 12, 12, pred, logits, &t, &err), &err, "nc_gpu_run");
    nc_gpu_close(&g);
}

static void test_plan_pieces(void) {
    nc_error err = {0};
    nc_model *m = NULL;
    const int rc = nc_model_build(&m, "pieces", "1x12x12 unit", "flatten; dense 10 bias", &err);
    check_rc(rc, &err, "nc_model_build");
    if (rc) return;
    nc_model_init_seeded(m, 11);
    const int N = 5 * NC_GPU_PIECE_MIN + 123; /* 5 pieces in one chunk */
    uint8_t *img = xmalloc((size_t)N * 144);
    for (size_t i = 0; i < (size_t)N * 144; i++) img[i] = (uint8_t)next_u32();
    int *pa = xmalloc(N * sizeof(int)), *pb = xmalloc(N * sizeof(int));
    float *la = xmalloc((size_t)N * 10 * sizeof(float)), *lb = xmalloc((size_t)N * 10 * sizeof(float));
    float *x = xmalloc((size_t)N * 144 * sizeof(float)), *ref = xmalloc((size_t)N * 10 * sizeof(float));
    check_rc(nc_prepare_input(x, m, img, N, 12, 12, &err), &err, "nc_prepare_input");
    nc_ref_dense(ref, x, m->layers[1].weight, m->layers[1].bias, N, 144, 10);
    for (int pr = NC_PRECISION_FP32; pr <= NC_PRECISION_TF32; pr++) {
        piece_log A, B;
        run_plan(m, pr, (size_t)N, img, N, pa, la, &A);
        run_plan(m, pr, NC_GPU_PIECE_MIN - 1, img, N, pb, lb, &B); /* every chunk one piece */
        const int split = one_chunk(&A, N, 5);
        if (!split) {
            fprintf(stderr, "pieces %s: %d forward calls over %d images:", names[pr], A.n, N);
            for (int i = 0; i < A.n && i < 64; i++)
                fprintf(stderr, " [%d,%d) %zu+%d", A.from[i], A.to[i], A.i0[i], A.B[i]);
            fprintf(stderr, "\n");
        }
        CHECK(split);
        /* Chunks of NC_GPU_PIECE_MIN - 1 images: one head and one tail call each. */
        CHECK(B.n == 2 * ((N + NC_GPU_PIECE_MIN - 2) / (NC_GPU_PIECE_MIN - 1)));
        const int same = memcmp(pa, pb, N * sizeof(int)) == 0 && memcmp(la, lb, (size_t)N * 10 * sizeof(float)) == 0;
        if (!same) fprintf(stderr, "pieces %s: predictions or logits differ from whole chunks\n", names[pr]);
        CHECK(same);
        /* And they are the right answers, not the same wrong ones: 144 products of |x| <= 1 and |w| <= 1/12, so
         * S <= 12 and tf32's error <= 1.5e-3 S. */
        check_close(pr ? "pieces tf32 vs ref" : "pieces fp32 vs ref", la, ref, (size_t)N * 10, pr ? 1.8e-2 : 1e-5,
                    1e-5);
    }
    free(img), free(pa), free(pb), free(la), free(lb), free(x), free(ref);
    nc_model_free(m);
}

/* The cuda backend through sessions: one chunk of 3 pieces against chunks of one piece, bit for bit, on a model of
 * n_conv conv layers (with two, the second is in the tail, which runs once on the whole chunk). */
static void test_session_pieces(int precision, const char *layers, int n_conv) {
    nc_error err = {0};
    nc_model *m = NULL;
    int rc = nc_model_build(&m, "small", "1x28x28 raw", layers, &err);
    check_rc(rc, &err, "nc_model_build");
    if (rc) return;
    nc_model_init_seeded(m, 3);
    const int N = 3 * NC_GPU_PIECE_MIN + 77;
    uint8_t *img = xmalloc((size_t)N * 784);
    for (size_t i = 0; i < (size_t)N * 784; i++) img[i] = (uint8_t)next_u32();
    int *pa = xmalloc(N * sizeof(int)), *pb = xmalloc(N * sizeof(int));
    float *la = xmalloc((size_t)N * 10 * sizeof(float)), *lb = xmalloc((size_t)N * 10 * sizeof(float));
    nc_run_opts one, small;
    memset(&one, 0, sizeof one);
    one.precision = precision;
    one.conv_kernel = precision == NC_PRECISION_FP32 ? 6 : 0; /* not the tuner's pick, which may differ by session */
    one.chunk = (size_t)N;
    small = one;
    small.chunk = NC_GPU_PIECE_MIN - 1;
    nc_session *s1 = NULL, *s2 = NULL;
    nc_timing t1, t2;
    check_rc(nc_session_create(&s1, m, "cuda", &one, &err), &err, "session (one chunk)");
    check_rc(nc_session_create(&s2, m, "cuda", &small, &err), &err, "session (small chunks)");
    if (s1 && s2) {
        check_rc(nc_session_run(s1, img, N, 28, 28, pa, la, &t1, &err), &err, "run (one chunk)");
        check_rc(nc_session_run(s2, img, N, 28, 28, pb, lb, &t2, &err), &err, "run (small chunks)");
        const int same = memcmp(pa, pb, N * sizeof(int)) == 0 && memcmp(la, lb, (size_t)N * 10 * sizeof(float)) == 0;
        if (!same) fprintf(stderr, "session %s: pieces differ from whole chunks\n", names[precision]);
        CHECK(same);
        CHECK(t1.n_conv == n_conv && t2.n_conv == n_conv && t1.total_s > 0.0);
        /* The same images page-locked (nc_dataset_pin): uploaded from where they are, the same bits. */
        nc_dataset ds = {N, 28, 28, xmalloc((size_t)N * 784), xmalloc((size_t)N), 0};
        memcpy(ds.images, img, (size_t)N * 784);
        check_rc(nc_dataset_pin(&ds, &err), &err, "nc_dataset_pin");
        CHECK(ds.pinned == 1);
        memset(pb, 0xFF, N * sizeof(int));
        check_rc(nc_session_run(s1, ds.images, N, 28, 28, pb, lb, NULL, &err), &err, "run (pinned images)");
        const int pinned = memcmp(pa, pb, N * sizeof(int)) == 0 && memcmp(la, lb, (size_t)N * 10 * sizeof(float)) == 0;
        if (!pinned) fprintf(stderr, "session %s: page-locked images give other bits\n", names[precision]);
        CHECK(pinned);
        nc_dataset_free(&ds);
        for (int i = 0; i < n_conv; i++) {
            CHECK(t1.conv_s[i] > 0.0 && t2.conv_s[i] > 0.0);
            printf("session %s, %d conv layers, %d images: conv %d Op Time %.3f ms in pieces, %.3f ms in chunks\n",
                   names[precision], n_conv, N, i, t1.conv_s[i] * 1e3, t2.conv_s[i] * 1e3);
        }
    }
    nc_session_free(s1);
    nc_session_free(s2);
    free(img), free(pa), free(pb), free(la), free(lb);
    nc_model_free(m);
}

int main(void) {
    const int start = gpu_test_start();
    if (start) return start;
    /* NC_GPU_TEST_QUICK=1 (tools/gpu_suite.sh, under compute-sanitizer's racecheck, which follows every shared
     * memory access: the whole test took more than 280 s under it on an H100) keeps to layers of at most 2000
     * inputs, which still split k 1 to 8 ways, and leaves out the chunk loop's pieces. */
    const char *quick_env = getenv("NC_GPU_TEST_QUICK");
    const int quick = quick_env && *quick_env == '1';
    int device = 0, major = 0, minor = 0;
    CU(cudaGetDevice(&device));
    CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    CU(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    test_ksplit_choice(major);
    test_kernel_choice(major, minor);
    dense_ksplit_shape(129, 2000, 140, 1, major); /* 63 slices: its own split 2, and 8 blocks of 7 or 8 */
    dense_ksplit_shape(129, 100, 140, 0, major);  /* 4 slices: split 8 leaves blocks with none */
    if (quick) {
        dense_shape(131, 160, 140, 1, 0, 0);
        dense_shape(77, 141, 33, 1, 1, 3);
        CU(cudaStreamDestroy(stream));
        return nc_test_done("test_dense_tc");
    }
    dense_ksplit_shape(300, 7200, 500, 1, major); /* the 2017 dense layer: 16-byte stores of the sums */
    dense_ksplit_shape(131, 3000, 33, 1, major);  /* OUT odd: the sums stored a float at a time */
    dense_ksplit_shape(rand_int(1, 300), rand_int(1, 5000), rand_int(1, 300), rand_int(0, 1), major);
    dense_shape(300, 7200, 500, 1, 0, 0); /* the 2017 dense layer, 16-byte copies */
    dense_shape(257, 7200, 500, 1, 0, 2); /* weights 8-byte aligned (as a model file's), B past a tile */
    dense_shape(129, 500, 10, 1, 0, 0);   /* the 2017 output layer */
    dense_shape(200, 500, 160, 1, 2, 2);
    dense_shape(131, 160, 140, 1, 0, 0);
    dense_shape(1000, 140, 32, 0, 0, 0);
    dense_shape(1000, 32, 10, 1, 0, 0); /* one k slice */
    dense_shape(77, 141, 33, 1, 1, 3);  /* 4-byte copies, IN past a slice */
    dense_shape(1, 36, 129, 1, 0, 0);   /* one image, a column tile of one output */
    dense_shape(rand_int(1, 400), 4 * rand_int(1, 300), rand_int(1, 300), 1, 0, 0);
    dense_shape(rand_int(1, 400), rand_int(1, 700), rand_int(1, 300), rand_int(0, 1), rand_int(0, 3), rand_int(0, 3));
    printf("largest |gpu - ref| / sum|x w|: tf32 %.3g, 3xtf32 %.3g, fp16 %.3g, bf16 %.3g\n", worst[NC_PRECISION_TF32],
           worst[NC_PRECISION_3XTF32], worst[NC_PRECISION_FP16], worst[NC_PRECISION_BF16]);
    /* Each format's errors where its significand puts them: bf16 has 3 bits fewer than fp16 (8x the error). */
    CHECK(worst[NC_PRECISION_BF16] > 3.0 * worst[NC_PRECISION_FP16]);
    CHECK(worst[NC_PRECISION_3XTF32] * 20.0 < worst[NC_PRECISION_TF32]);
    CHECK(worst[NC_PRECISION_TF32] > 0.0 && worst[NC_PRECISION_FP16] > 0.0);
    test_plan_pieces();
    const char *one = "conv 8 5; tanh; maxpool 2 2; flatten; dense 64 bias; tanh; dense 10 bias";
    const char *two = "conv 6 5; relu; maxpool 2 2; conv 16 5; tanh; maxpool 2 2; flatten; dense 40 bias; relu; "
                      "dense 10 bias";
    for (int pr = NC_PRECISION_FP32; pr <= NC_PRECISION_TF32; pr++) {
        test_session_pieces(pr, one, 1);
        test_session_pieces(pr, two, 2);
    }
    CU(cudaStreamDestroy(stream));
    return nc_test_done("test_dense_tc");
}
#endif
