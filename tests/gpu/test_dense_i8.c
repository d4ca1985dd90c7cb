/*
 * dense_i8.cu, the fp32 dense layer on int8 slices, against a sum in double. Skips (77) where the build has no CUDA
 * or the machine no GPU.
 *
 * Accuracy: every output within the method's bound (dense_i8.cu), with each |δv| <= 2^(e - 7) (2^-21 + 1 / (2 254^2))
 * for a row of scale e, the left-out levels at most 0.001972 2^(ex + ew - 14) a k, and the final rounding:
 *     |y - exact| <= sum_k (|δx| |w| + |x| |δw| + |δx| |δw|) + 0.001972 k 2^(ex + ew - 14) + 2^-23 (|y| + |b|).
 * That bound cannot fail for the method as written; what it is for, its errors being smaller than fp32's sums, is
 * checked beside it: on the zoo's shapes (IN >= 1000) the mean error / S (S = sum |x w|) must be below
 * nc_ref_dense's (sequential fp32, the SIMT kernels' and cpu-ref's order), and the largest below 5e-8 (fp32's sums
 * make 1e-7 to 1e-6 there).
 * A method that dropped a level or a slice fails those.
 * Bits: a row is the same whatever B (the first rows of a run on fewer images), whatever the split of k (1 to 16, and
 * the layer's own), on mma.sync and on wgmma (where the build and device have it), with weights prepared once or on
 * each call, and x at any alignment (its 4-byte path against the 16-byte one); with the last wave of tiles cut into
 * pieces along k (wgmma, a batch of its own size) and without.
 * Edges: a row of x holding inf or NaN gives NaN for that row only, a row of w holding NaN NaN for that output only; a
 * zero row gives b; a row whose values span 2^40 stays within the bound; IN past NC_DENSE_I8_MAX_IN, a short scratch
 * and an unknown kernel are refused. Through the cuda backend (fp32, its default): logits against cpu-ref's, and the
 * same bits in chunks of any size, with a layer on int8 slices and one past NC_DENSE_I8_MAX_IN on the SIMT kernels.
 * NC_GPU_TEST_QUICK=1 (under compute-sanitizer): the 2017 layer on 40 images. NC_GPU_TEST_QUICK=2 (under racecheck,
 * where the quick test ran past 300 s on the H200): two small shapes only, each through every kernel and split.
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

#include "core/model.h"
#include "cpu/ref.h"
#include "cuda/cuda_layers.h"
#include "nc_test.h"

#define GPU_TEST_SEED 0x8F1BBCDCBFA53E0Bull
#include "gpu/gpu_test.h"

static int wgmma_here; /* the AUTO kernel is wgmma */

/* The scale exponent e of a row as dense_i8.cu takes it: the least with max|v| 2^(7 - e) <= 127. */
static int row_e(const float *v, int n) {
    float m = 0.0f;
    for (int i = 0; i < n; i++) m = fabsf(v[i]) > m ? fabsf(v[i]) : m;
    if (m == 0.0f) return 0;
    int e = ilogbf(m) + 1;
    if (ldexp((double)m, 7 - e) > 127.0) e++;
    return e;
}

/* y (B, OUT) on the device's x and w: prepared weights where wp, else the plain forward; NaN-poisoned first. */
static float *run_i8(const float *dx, const float *dw, const void *wp, const float *db, int B, int IN, int OUT,
                     int splits, int kernel) {
    float *dy;
    const size_t ny = (size_t)B * OUT;
    CU(cudaMalloc((void **)&dy, ny * sizeof(float) + 1));
    CU(cudaMemset(dy, 0xFF, ny * sizeof(float) + 1));
    nc_error err = {0};
    if (wp) {
        size_t sb = 0;
        void *sc;
        check_rc(nc_cuda_dense_i8_scratch_size(&sb, B, IN, OUT, splits, kernel, &err), &err, "scratch_size");
        CU(cudaMalloc(&sc, sb + 1));
        check_rc(nc_cuda_dense_i8_forward_prepared(dy, dx, wp, db, B, IN, OUT, sc, sb, splits, kernel, stream, &err),
                 &err, "dense_i8_forward_prepared");
        CU(cudaStreamSynchronize(stream));
        CU(cudaFree(sc));
    } else {
        check_rc(nc_cuda_dense_i8_forward(dy, dx, dw, db, B, IN, OUT, splits, kernel, stream, &err), &err,
                 "dense_i8_forward");
    }
    float *y = host_from(dy, ny);
    CU(cudaFree(dy));
    return y;
}

/* A layer on the host: x, w, b and, in double, the exact outputs, S = sum |x w| and the method's bound. */
typedef struct {
    int B, IN, OUT, with_bias;
    float *x, *w, *b;
    double *exact, *S, *bound;
} i8_case;

static void i8_case_sums(i8_case *c) {
    const int B = c->B, IN = c->IN, OUT = c->OUT;
    const double c0 = ldexp(1.0, -21) + 0.5 / (254.0 * 254.0), drop = 0.001972;
    int *ew = xmalloc(OUT * sizeof(int));
    double *sw = xmalloc(OUT * sizeof(double));
    for (int o = 0; o < OUT; o++) {
        ew[o] = row_e(c->w + (size_t)o * IN, IN);
        sw[o] = 0.0;
        for (int k = 0; k < IN; k++) sw[o] += fabs((double)c->w[(size_t)o * IN + k]);
    }
    for (int r = 0; r < B; r++) {
        const float *xr = c->x + (size_t)r * IN;
        const int ex = row_e(xr, IN);
        double sx = 0.0;
        for (int k = 0; k < IN; k++) sx += fabs((double)xr[k]);
        const double dx = ldexp(c0, ex - 7);
        for (int o = 0; o < OUT; o++) {
            const float *wo = c->w + (size_t)o * IN;
            const double dw = ldexp(c0, ew[o] - 7);
            double s = 0.0, a = 0.0;
            for (int k = 0; k < IN; k++) {
                s += (double)xr[k] * wo[k];
                a += fabs((double)xr[k] * wo[k]);
            }
            const double b = c->with_bias ? (double)c->b[o] : 0.0;
            const size_t i = (size_t)r * OUT + o;
            c->exact[i] = s + b;
            c->S[i] = a;
            c->bound[i] = dx * sw[o] + dw * sx + dx * dw * IN + drop * IN * ldexp(1.0, ex + ew[o] - 14) +
                          ldexp(fabs(s + b) + fabs(b), -23);
        }
    }
    free(ew), free(sw);
}

static i8_case i8_case_make(int B, int IN, int OUT, int with_bias) {
    i8_case c;
    memset(&c, 0, sizeof c);
    c.B = B, c.IN = IN, c.OUT = OUT, c.with_bias = with_bias;
    c.x = xmalloc((size_t)B * IN * sizeof(float)), c.w = xmalloc((size_t)OUT * IN * sizeof(float));
    c.b = xmalloc(OUT * sizeof(float));
    c.exact = xmalloc((size_t)B * OUT * sizeof(double)), c.S = xmalloc((size_t)B * OUT * sizeof(double));
    c.bound = xmalloc((size_t)B * OUT * sizeof(double));
    for (size_t i = 0; i < (size_t)B * IN; i++) c.x[i] = tanhf(3.0f * rand_float(-1.0f, 1.0f)); /* a tanh layer's */
    fill(c.w, (size_t)OUT * IN, -0.05f, 0.05f);
    fill(c.b, OUT, -1.0f, 1.0f);
    return c;
}

static void i8_case_free(i8_case *c) {
    free(c->x), free(c->w), free(c->b), free(c->exact), free(c->S), free(c->bound);
}

/* y against the case: every output within its bound; returns the mean and largest error / S. */
static void check_bound(const char *what, const i8_case *c, const float *y, double *mean, double *largest) {
    size_t bad = 0, n = (size_t)c->B * c->OUT;
    double sum = 0.0, big = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)y[i] - c->exact[i]);
        const int ok = d <= c->bound[i]; /* false for NaN */
        if (!ok && bad++ < 5)
            fprintf(stderr, "  %s: [%zu] gpu %.9g, exact %.12g, bound %.3g\n", what, i, y[i], c->exact[i], c->bound[i]);
        const double rel = c->S[i] > 0.0 ? d / c->S[i] : d;
        sum += rel;
        if (rel > big || d != d) big = rel;
    }
    if (bad) fprintf(stderr, "%s: %zu of %zu outside the bound\n", what, bad, n);
    CHECK(bad == 0);
    *mean = sum / (double)n, *largest = big;
}

/* A run that must give the first run's bits: B rows, k split (0: the layer's own), kernel, weights prepared or
 * not, x that many floats into its allocation. */
typedef struct {
    int B, splits, kernel, prepared, shift;
} variant;

/* One shape: the bound, the comparison with fp32's sums (where IN >= 1000, as the zoo's layers: with few products
 * fp32's sums are within a rounding or two, and the slices' 2^-23 of a row's largest need not beat them), and the
 * bits under every variation. */
static void i8_shape(int B, int IN, int OUT, int with_bias) {
    i8_case c = i8_case_make(B, IN, OUT, with_bias);
    i8_case_sums(&c);
    const size_t nx = (size_t)B * IN, nw = (size_t)OUT * IN, ny = (size_t)B * OUT;
    float *dx0, *dw = dev_from(c.w, nw * sizeof(float)), *db = dev_from(c.b, OUT * sizeof(float));
    CU(cudaMalloc((void **)&dx0, (nx + 4) * sizeof(float)));
    CU(cudaMemcpy(dx0, c.x, nx * sizeof(float), cudaMemcpyHostToDevice));
    const float *bias = with_bias ? db : NULL;
    char what[160];
    snprintf(what, sizeof what, "dense i8 B%d IN%d OUT%d%s", B, IN, OUT, with_bias ? " bias" : "");

    void *wp;
    nc_error err = {0};
    CU(cudaMalloc(&wp, nc_cuda_dense_i8_prepared_size(IN, OUT)));
    check_rc(nc_cuda_dense_i8_prepare(wp, dw, IN, OUT, stream, &err), &err, "dense_i8_prepare");
    float *y = run_i8(dx0, dw, wp, bias, B, IN, OUT, 0, NC_DENSE_I8_AUTO);
    double mean, largest;
    check_bound(what, &c, y, &mean, &largest);

    /* fp32's sequential sums on the same layer, for scale */
    float *ref = xmalloc(ny * sizeof(float));
    nc_ref_dense(ref, c.x, c.w, with_bias ? c.b : NULL, B, IN, OUT);
    double rmean = 0.0, rbig = 0.0;
    for (size_t i = 0; i < ny; i++) {
        const double rel = fabs((double)ref[i] - c.exact[i]) / (c.S[i] > 0.0 ? c.S[i] : 1.0);
        rmean += rel;
        rbig = rel > rbig ? rel : rbig;
    }
    rmean /= (double)ny;
    printf("%s: error / S mean %.2e, largest %.2e; fp32 sums (nc_ref_dense) %.2e, %.2e\n", what, mean, largest, rmean,
           rbig);
    if (IN >= 1000) {
        if (!(mean < rmean && largest < 5e-8))
            fprintf(stderr, "%s: errors not below fp32's (mean %.2e against %.2e, largest %.2e)\n", what, mean, rmean,
                    largest);
        CHECK(mean < rmean && largest < 5e-8);
    }

    /* the same bits: fewer images, every split, each kernel, unprepared weights, x at 4-, 8- and 12-byte offsets */
    const int few = B > 1 ? B / 2 + 1 : 1;
    variant v[20];
    int nv = 0;
    v[nv++] = (variant){few, 0, NC_DENSE_I8_AUTO, 1, 0};
    for (int s = 1; s <= 16; s *= 2) v[nv++] = (variant){B, s, NC_DENSE_I8_MMA, 1, 0};
    if (wgmma_here)
        for (int s = 1; s <= 4; s *= 2) {
            v[nv++] = (variant){B, s, NC_DENSE_I8_WGMMA, 1, 0};
            v[nv++] = (variant){B, s, NC_DENSE_I8_WGMMA2, 1, 0};
        }
    v[nv++] = (variant){B, 0, NC_DENSE_I8_AUTO, 0, 0};
    for (int sh = 1; sh <= 3; sh++) v[nv++] = (variant){B, 0, NC_DENSE_I8_AUTO, 1, sh};
    for (int i = 0; i < nv; i++) {
        if (v[i].shift) {
            CU(cudaMemcpy(dx0 + v[i].shift, c.x, nx * sizeof(float), cudaMemcpyHostToDevice));
            CU(cudaStreamSynchronize(stream));
        }
        float *y2 =
            run_i8(dx0 + v[i].shift, dw, v[i].prepared ? wp : NULL, bias, v[i].B, IN, OUT, v[i].splits, v[i].kernel);
        const int same = memcmp(y, y2, (size_t)v[i].B * OUT * sizeof(float)) == 0;
        if (!same)
            fprintf(stderr, "%s: other bits with B %d, split %d, kernel %d, %s weights, x + %d floats\n", what, v[i].B,
                    v[i].splits, v[i].kernel, v[i].prepared ? "prepared" : "plain", v[i].shift);
        CHECK(same);
        free(y2);
        if (v[i].shift) CU(cudaMemcpy(dx0, c.x, nx * sizeof(float), cudaMemcpyHostToDevice));
    }
    free(y), free(ref);
    CU(cudaFree(wp));
    CU(cudaFree(dx0));
    CU(cudaFree(dw));
    CU(cudaFree(db));
    i8_case_free(&c);
}

/* The last wave cut into pieces (wgmma; dense_i8.cu's i8_tail_split): a batch whose tiles of 128 rows fill the
 * device's SMs once and a quarter, so that its own plan cuts each tile of the last quarter into pieces of k (its
 * scratch then holds the pieces' slots: larger than with no split). The same bits as with no split, and as on
 * mma.sync, twice in a row (the pieces' counts zeroed by each call). The bound and the comparison with fp32 are
 * i8_shape's, on mma.sync's bits, on smaller batches. */
static void i8_tail_pieces(void) {
    int dev, sms;
    CU(cudaGetDevice(&dev));
    CU(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const int IN = 1000, OUT = 100, B = 128 * (sms + sms / 4) - 37;
    i8_case c = i8_case_make(1, IN, OUT, 1); /* its w and b; x below */
    float *x = xmalloc((size_t)B * IN * sizeof(float));
    fill(x, (size_t)B * IN, -1.0f, 1.0f);
    float *dx = dev_from(x, (size_t)B * IN * sizeof(float)), *dw = dev_from(c.w, (size_t)OUT * IN * sizeof(float));
    float *db = dev_from(c.b, OUT * sizeof(float));
    void *wp;
    nc_error err = {0};
    CU(cudaMalloc(&wp, nc_cuda_dense_i8_prepared_size(IN, OUT)));
    check_rc(nc_cuda_dense_i8_prepare(wp, dw, IN, OUT, stream, &err), &err, "dense_i8_prepare");
    size_t own = 0, whole = 0;
    check_rc(nc_cuda_dense_i8_scratch_size(&own, B, IN, OUT, 0, NC_DENSE_I8_AUTO, &err), &err, "scratch_size");
    check_rc(nc_cuda_dense_i8_scratch_size(&whole, B, IN, OUT, 1, NC_DENSE_I8_WGMMA2, &err), &err, "scratch_size");
    if (!(own > whole)) fprintf(stderr, "dense i8 B%d: no pieces planned (scratch %zu, %zu)\n", B, own, whole);
    CHECK(own > whole);
    float *y = run_i8(dx, dw, wp, db, B, IN, OUT, 0, NC_DENSE_I8_AUTO);
    const struct {
        int splits, kernel;
    } v[] = {{0, NC_DENSE_I8_AUTO}, {1, NC_DENSE_I8_WGMMA2}, {1, NC_DENSE_I8_WGMMA}, {1, NC_DENSE_I8_MMA}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        float *y2 = run_i8(dx, dw, wp, db, B, IN, OUT, v[i].splits, v[i].kernel);
        const int same = memcmp(y, y2, (size_t)B * OUT * sizeof(float)) == 0;
        if (!same)
            fprintf(stderr, "dense i8 B%d: the last wave in pieces: other bits than split %d, kernel %d\n", B,
                    v[i].splits, v[i].kernel);
        CHECK(same);
        free(y2);
    }
    printf("dense i8 B%d IN%d OUT%d: the last wave in pieces, %zu bytes of scratch (%zu without)\n", B, IN, OUT, own,
           whole);
    free(y), free(x);
    CU(cudaFree(wp));
    CU(cudaFree(dx));
    CU(cudaFree(dw));
    CU(cudaFree(db));
    i8_case_free(&c);
}

/* inf and NaN rows, a zero row, and a row spanning 2^40. */
static void i8_edges(void) {
    const int B = 6, IN = 300, OUT = 40;
    i8_case c = i8_case_make(B, IN, OUT, 1);
    c.x[1 * IN + 17] = INFINITY;
    c.x[2 * IN + 5] = NAN;
    memset(c.x + 3 * IN, 0, IN * sizeof(float));
    for (int k = 0; k < IN; k++) c.x[4 * IN + k] = ldexpf(c.x[4 * IN + k], -(k % 41)); /* 2^0 .. 2^-40 */
    c.w[7 * IN + 3] = NAN;
    i8_case_sums(&c);
    float *dx = dev_from(c.x, (size_t)B * IN * sizeof(float)), *dw = dev_from(c.w, (size_t)OUT * IN * sizeof(float));
    float *db = dev_from(c.b, OUT * sizeof(float));
    float *y = run_i8(dx, dw, NULL, db, B, IN, OUT, 0, NC_DENSE_I8_AUTO);
    int ok_nan = 1, ok_zero = 1, ok_rest = 1;
    for (int r = 0; r < B; r++)
        for (int o = 0; o < OUT; o++) {
            const float v = y[r * OUT + o];
            const size_t i = (size_t)r * OUT + o;
            if (r == 1 || r == 2 || o == 7)
                ok_nan &= v != v;
            else if (r == 3)
                ok_zero &= v == c.b[o];
            else
                ok_rest &= fabs((double)v - c.exact[i]) <= c.bound[i];
        }
    if (!(ok_nan && ok_zero && ok_rest))
        fprintf(stderr, "dense i8 edges: NaN rows and column %s, zero row %s, the rest %s\n", ok_nan ? "ok" : "WRONG",
                ok_zero ? "ok" : "WRONG", ok_rest ? "ok" : "WRONG");
    CHECK(ok_nan && ok_zero && ok_rest);
    free(y);

    /* refusals: nothing launched, NC_ERR_ARG */
    nc_error err = {0};
    size_t sb = 0;
    CHECK(nc_cuda_dense_i8_prepared_size(NC_DENSE_I8_MAX_IN + 1, 10) == 0);
    CHECK(nc_cuda_dense_i8_scratch_size(&sb, 4, NC_DENSE_I8_MAX_IN + 1, 10, 0, 0, &err) == NC_ERR_ARG);
    CHECK(nc_cuda_dense_i8_forward(NULL, NULL, NULL, NULL, 4, IN, OUT, 0, NC_DENSE_I8_WGMMA2 + 1, stream, &err) ==
          NC_ERR_ARG);
    CHECK(strstr(err.msg, "kernel") != NULL);
    if (!wgmma_here) {
        for (int k = NC_DENSE_I8_WGMMA; k <= NC_DENSE_I8_WGMMA2; k++) {
            CHECK(nc_cuda_dense_i8_forward(NULL, NULL, NULL, NULL, 4, IN, OUT, 0, k, stream, &err) == NC_ERR_ARG);
            CHECK(strstr(err.msg, "wgmma") != NULL);
        }
    }
    check_rc(nc_cuda_dense_i8_scratch_size(&sb, B, IN, OUT, 1, NC_DENSE_I8_MMA, &err), &err, "scratch_size");
    err.msg[0] = 0;
    CHECK(nc_cuda_dense_i8_forward_prepared(NULL, dx, NULL, db, B, IN, OUT, NULL, sb - 1, 1, NC_DENSE_I8_MMA, stream,
                                            &err) == NC_ERR_ARG);
    CHECK(strstr(err.msg, "scratch") != NULL);
    CU(cudaFree(dx));
    CU(cudaFree(dw));
    CU(cudaFree(db));
    i8_case_free(&c);
}

/* Through the cuda backend at fp32 (the default): a 40-output dense layer on int8 slices (IN 784), and one of IN 33856,
 * past NC_DENSE_I8_MAX_IN, on the SIMT kernels; then 10 outputs (SIMT). Logits against cpu-ref's within 1e-4 (1 +
 * |ref|), and chunks of 7 images the bits of one chunk of all (the slices' scratch grown, k split otherwise). */
static void i8_backend(int side) {
    nc_error err = {0};
    nc_model *m = NULL;
    char input[32];
    snprintf(input, sizeof input, "1x%dx%d raw", side, side);
    int rc = nc_model_build(&m, "dense", input, "flatten; dense 40 bias; tanh; dense 10 bias", &err);
    check_rc(rc, &err, "nc_model_build");
    if (rc) return;
    nc_model_init_seeded(m, 5);
    const int N = 300, px = side * side;
    uint8_t *img = xmalloc((size_t)N * px);
    for (size_t i = 0; i < (size_t)N * px; i++) img[i] = (uint8_t)next_u32();
    /* cpu-ref; cuda at fp32 in one chunk and in chunks of 7; the same two under --dense-sums fp32 */
    enum { RUNS = 5 };
    int *p[RUNS];
    float *l[RUNS];
    nc_run_opts o[RUNS];
    const char *backend[RUNS] = {"cpu-ref", "cuda", "cuda", "cuda", "cuda"};
    for (int i = 0; i < RUNS; i++) {
        p[i] = xmalloc(N * sizeof(int)), l[i] = xmalloc((size_t)N * 10 * sizeof(float));
        memset(&o[i], 0, sizeof o[i]);
        o[i].chunk = i == 2 || i == 4 ? 7 : (size_t)N;
        o[i].dense_sums = i >= 3 ? NC_DENSE_SUMS_FP32 : NC_DENSE_SUMS_SLICES;
        nc_session *s = NULL;
        check_rc(nc_session_create(&s, m, backend[i], &o[i], &err), &err, backend[i]);
        if (s) check_rc(nc_session_run(s, img, N, side, side, p[i], l[i], NULL, &err), &err, "run");
        nc_session_free(s);
    }
    const size_t n = (size_t)N * 10, bytes = n * sizeof(float);
    for (int f = 0; f < 2; f++) {
        const int a = 1 + 2 * f;
        char what[96];
        snprintf(what, sizeof what, "cuda fp32%s, dense IN %d, against cpu-ref", f ? " --dense-sums fp32" : "", px);
        check_close(what, l[a], l[0], n, 1e-4, 1e-4);
        const int same = memcmp(l[a], l[a + 1], bytes) == 0;
        if (!same) fprintf(stderr, "%s: chunks of 7 give other bits\n", what);
        CHECK(same);
    }
    /* The switch took: where the first layer is on int8 slices (IN within NC_DENSE_I8_MAX_IN), the fp32 sums round
     * otherwise somewhere among the 3000 logits; past the limit both runs are the SIMT kernels', the same bits. */
    const int differ = memcmp(l[1], l[3], bytes) != 0;
    if (differ != (px <= NC_DENSE_I8_MAX_IN))
        fprintf(stderr, "dense IN %d: --dense-sums fp32 gives %s bits\n", px, differ ? "other" : "the same");
    CHECK(differ == (px <= NC_DENSE_I8_MAX_IN));
    nc_run_opts bad;
    memset(&bad, 0, sizeof bad);
    bad.dense_sums = 7;
    nc_session *s = NULL;
    CHECK(nc_session_create(&s, m, "cuda", &bad, &err) == NC_ERR_ARG && strstr(err.msg, "dense_sums 7"));
    nc_session_free(s);
    for (int i = 0; i < RUNS; i++) free(p[i]), free(l[i]);
    free(img);
    nc_model_free(m);
}

int main(void) {
    const int start = gpu_test_start();
    if (start) return start;
    int dev, major, minor;
    CU(cudaGetDevice(&dev));
    CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CU(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (major < 8) {
        printf("SKIP: int8 mma.sync needs sm_80 or later (this GPU is sm_%d%d)\n", major, minor);
        return 77;
    }
    nc_error err = {0};
    size_t s1 = 0;
    /* wgmma where AUTO plans it: a scratch for kernel 2 is planned only where it can run */
    wgmma_here = nc_cuda_dense_i8_scratch_size(&s1, 64, 64, 64, 1, NC_DENSE_I8_WGMMA, &err) == NC_OK;
    printf("dense on int8 slices, wgmma: %s\n", wgmma_here ? "yes" : "no");
    const char *want = getenv("NC_TEST_WANT_WGMMA"); /* tools/gpu_suite.sh on the H100: the build must have it */
    if (want && *want == '1') CHECK(wgmma_here);
    const char *quick = getenv("NC_GPU_TEST_QUICK"); /* under compute-sanitizer: fewer images of the 2017 layer */
    if (quick && *quick == '2') {                    /* under racecheck: the kernels' shared memory on small shapes */
        i8_shape(9, 200, 80, 0);
        i8_shape(67, 1296, 140, 1);
        return nc_test_done("test_dense_i8");
    }
    i8_shape(quick && *quick == '1' ? 40 : 300, 7200, 500, 1); /* the 2017 layer */
    i8_shape(131, 1296, 140, 0);                               /* 2019 spring's: two wgmma tiles of 80 columns */
    i8_shape(67, 4056, 160, 1);                                /* 2018 fall's: two of 80 */
    i8_shape(9, 200, 80, 0);                                   /* one tile of 80 (81 outputs take one of 128) */
    i8_shape(5, 10816, 140, 1); /* 2018 spring's: x's rows of 12 float4s a thread, the most held in registers */
    i8_shape(4, 13000, 40, 0);  /* wider: its rows read twice */
    i8_shape(1, 500, 33, 1);    /* the narrowest a backend sends, one image */
    for (int rep = 0; rep < 4; rep++) i8_shape(rand_int(1, 200), rand_int(1, 900), rand_int(1, 300), rep % 2);
    if (wgmma_here) i8_tail_pieces();
    i8_edges();
    i8_backend(28);  /* 784 inputs: int8 slices */
    i8_backend(184); /* 33856: past NC_DENSE_I8_MAX_IN, the SIMT kernels */
    return nc_test_done("test_dense_i8");
}
#endif
