/*
 * The cpu backend against cpu-ref, every code path forced: each instruction set this processor has (scalar, AVX2,
 * AVX-512), each convolution kernel family (1 direct, 2 implicit GEMM), each register tile of the instruction set,
 * on random layer shapes (C >= 1, K 3..7, non-square inputs, bias or not, every activation, max and average pooling
 * with P = S = 2, 4/4 and P != S) and on every course architecture with seeded weights.
 *
 * Tolerance on the final outputs: |cpu - ref| <= 1e-5 * max|ref| + 1e-4 * |ref|. The SIMD paths sum the same
 * products in the same order as the reference but with fused multiply-adds (one rounding instead of two per term)
 * and their own tanh / exp (within 3e-7 absolute of libm's), so they differ from it by float rounding only. Beyond
 * the tolerance: AVX2 and AVX-512 agree bit for bit (they do the same operations per image), the portable path
 * equals cpu-ref bit for bit (it does the reference's operations in its order: the check fails with a kernel's taps or
 * k taken in another order, session 69), results do not depend on the chunk size or the thread count, and
 * predictions equal cpu-ref's wherever the reference's top two outputs are not within 1e-5 of each other. The input
 * (op 0: resize and scaling, V images at once) is held to nc_resize_u8 and nc_scale_pixel bit for bit, on made-up
 * images and on every Fashion-MNIST test image at the course's sizes.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>

#include "core/backend.h"
#include "core/model.h"
#include "cpu/conv_cpu.h"
#include "cpu/cpu_features.h"
#include "cpu/input_cpu.h"
#include "nc_test.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next_u32(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}
static int irand(int lo, int hi) {
    return lo + (int)(next_u32() % (uint32_t)(hi - lo + 1));
}

/* Runs n images through a backend; returns 0 on success. */
static int run(const nc_model *m, const char *backend, const nc_run_opts *opts, const uint8_t *img, int n, int *pred,
               float *out) {
    nc_error err = {0};
    nc_session *s = NULL;
    int rc = nc_session_create(&s, m, backend, opts, &err);
    if (!rc) rc = nc_session_run(s, img, n, m->input.h, m->input.w, pred, out, NULL, &err);
    if (rc) fprintf(stderr, "  %s on %s: %s\n", backend, m->name, err.msg);
    nc_session_free(s);
    return rc;
}

/* Compares out with ref ((n, classes)) under the tolerance; prints the worst case if any is beyond it. */
static int close_enough(const float *out, const float *ref, size_t count, const char *what) {
    double mx = 0.0, worst = 0.0;
    size_t worst_i = 0, bad = 0;
    for (size_t i = 0; i < count; i++) mx = fabs(ref[i]) > mx ? fabs(ref[i]) : mx;
    for (size_t i = 0; i < count; i++) {
        const double e = fabs((double)out[i] - ref[i]);
        if (!(e <= 1e-5 * mx + 1e-4 * fabs(ref[i]))) bad++;
        if (!(e <= worst)) worst = e, worst_i = i;
    }
    if (bad)
        fprintf(stderr, "  %s: %zu of %zu outputs beyond tolerance; worst [%zu] %.9g vs ref %.9g (max|ref| %.3g)\n",
                what, bad, count, worst_i, out[worst_i], ref[worst_i], mx);
    return bad == 0;
}

/* Predictions agree wherever the reference's top two are apart. */
static int same_predictions(const int *pred, const int *ref_pred, const float *ref, int n, int classes) {
    for (int i = 0; i < n; i++) {
        float a = -INFINITY, b = -INFINITY;
        for (int j = 0; j < classes; j++) {
            const float v = ref[(size_t)i * classes + j];
            if (v > a)
                b = a, a = v;
            else if (v > b)
                b = v;
        }
        if (pred[i] != ref_pred[i] && a - b > 1e-5f * fabsf(a)) return 0;
    }
    return 1;
}

typedef struct {
    const char *input, *layers;
} arch;

/* Checks one model on n random images on every instruction set, kernel family, and (if all_tiles) register tile. */
/* threads: the cpu backend's thread count (one keeps the many small runs fast on a busy machine). */
static void check_model(const char *name, const char *input, const char *layers, int n, int all_tiles, int threads) {
    nc_error err = {0};
    nc_model *m = NULL;
    if (nc_model_build(&m, name, input, layers, &err)) {
        fprintf(stderr, "  %s: %s\n", name, err.msg);
        CHECK(0);
        return;
    }
    nc_model_init_seeded(m, next_u32());
    const int classes = nc_model_num_classes(m), px = m->input.h * m->input.w;
    uint8_t *img = malloc((size_t)n * px);
    float *ref = malloc(sizeof(float) * (size_t)n * classes), *out = malloc(sizeof(float) * (size_t)n * classes);
    float *first_simd = malloc(sizeof(float) * (size_t)n * classes);
    int *ref_pred = malloc(sizeof(int) * (size_t)n), *pred = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n * px; i++) img[i] = (uint8_t)next_u32();
    const nc_run_opts ref_opts = {.threads = threads};
    CHECK(run(m, "cpu-ref", &ref_opts, img, n, ref_pred, ref) == 0);
    int have_simd = 0;
    for (int isa = 0; isa < NC_ISA_COUNT; isa++) {
        if (!nc_cpu_isa_supported((nc_cpu_isa)isa)) continue;
        nc_cpu_isa_force(isa);
        for (int family = NC_CONV_DIRECT; family <= NC_CONV_IGEMM; family++) {
            /* Every tile the instruction set has (tm up to 8, tw up to 12), or just the one the plan chooses. */
            for (int tm = all_tiles ? 1 : 0; tm <= (all_tiles ? 8 : 0); tm++)
                for (int tw = all_tiles ? 1 : 0; tw <= (all_tiles ? 12 : 0); tw++) {
                    if (all_tiles) {
                        const int ok = isa == NC_ISA_AVX512 ? nc_conv_tile_ok_avx512(tm, tw)
                                       : isa == NC_ISA_AVX2 ? nc_conv_tile_ok_avx2(tm, tw)
                                                            : tm == 1 && tw == 1;
                        if (!ok) continue;
                        char t[32];
                        snprintf(t, sizeof t, "%dx%d", tm, tw);
                        setenv("NANOCONV_CPU_TILE", t, 1);
                    }
                    const nc_run_opts opts = {.conv_kernel = family, .chunk = (size_t)irand(1, 80), .threads = threads};
                    char what[512];
                    snprintf(what, sizeof what, "%s [%s] %s kernel %d tile %dx%d", name, layers,
                             nc_cpu_isa_name((nc_cpu_isa)isa), family, tm, tw);
                    const int ok_run = run(m, "cpu", &opts, img, n, pred, out) == 0;
                    CHECK(ok_run);
                    if (!ok_run) continue;
                    const int ok_close = close_enough(out, ref, (size_t)n * classes, what);
                    const int ok_pred = same_predictions(pred, ref_pred, ref, n, classes);
                    CHECK(ok_close);
                    CHECK(ok_pred);
                    if (!ok_pred) fprintf(stderr, "  %s: predictions differ from cpu-ref\n", what);
                    if (isa == NC_ISA_SCALAR) {
                        const int same = memcmp(ref, out, sizeof(float) * (size_t)n * classes) == 0;
                        CHECK(same);
                        if (!same) fprintf(stderr, "  %s: not bitwise equal to cpu-ref\n", what);
                    } else {
                        if (!have_simd) memcpy(first_simd, out, sizeof(float) * (size_t)n * classes);
                        const int same = memcmp(first_simd, out, sizeof(float) * (size_t)n * classes) == 0;
                        CHECK(same);
                        if (!same) fprintf(stderr, "  %s: not bitwise equal to the first SIMD run\n", what);
                        have_simd = 1;
                    }
                }
            unsetenv("NANOCONV_CPU_TILE");
        }
    }
    nc_cpu_isa_force(-1);
    free(img);
    free(ref);
    free(out);
    free(first_simd);
    free(ref_pred);
    free(pred);
    nc_model_free(m);
}

/* One fused layer of a random shape with an activation and a pooling, then a dense layer to mix it. */
static void test_random_layers(void) {
    static const char *const acts[] = {"", "tanh; ", "relu; ", "sigmoid; "};
    static const int pools[][2] = {{0, 0}, {2, 2}, {4, 4}, {3, 1}, {2, 3}, {3, 2}};
    for (int i = 0; i < 24; i++) {
        const int K = irand(3, 7), C = i < 8 ? 1 : irand(2, 6), M = irand(1, 20);
        const int pi = i % 6, P = pools[pi][0], S = pools[pi][1];
        const int H = K + irand(P ? P + 1 : 0, 14), W = K + irand(P ? P + 1 : 0, 20);
        char input[64], layers[256], pre[64] = "";
        snprintf(input, sizeof input, "1x%dx%d unit", H + (C > 1 ? 2 : 0), W + (C > 1 ? 2 : 0));
        /* C > 1 comes from a first convolution with C outputs (kernel 3). */
        if (C > 1) snprintf(pre, sizeof pre, "conv %d 3 bias; relu; ", C);
        char pool[32] = "";
        if (P) snprintf(pool, sizeof pool, "%s %d %d; ", i % 2 ? "avgpool" : "maxpool", P, S);
        snprintf(layers, sizeof layers, "%sconv %d %d%s; %s%sflatten; dense 10 bias", pre, M, K, i % 3 ? " bias" : "",
                 acts[i % 4], pool);
        char name[32];
        snprintf(name, sizeof name, "random-%d", i);
        check_model(name, input, layers, irand(1, i == 0 || i == 9 ? 8 : 24), i == 0 || i == 9, 1);
    }
}

static void test_course_nets(void) {
    static const arch nets[] = {
        {"1x28x28 raw", "conv 50 5; tanh; maxpool 2 2; flatten; dense 500 bias; tanh; dense 10 bias; softmax"},
        {"1x64x64 raw",
         "conv 6 5; tanh; maxpool 2 2; conv 16 5; flatten; dense 140 bias; tanh; dense 10 bias; softmax"},
        {"1x72x72 raw",
         "conv 12 7; tanh; maxpool 2 2; conv 24 7; flatten; dense 160 bias; tanh; dense 10 bias; softmax"},
        {"1x48x48 raw", "conv 6 5; tanh; maxpool 2 2; conv 16 5; tanh; maxpool 2 2; flatten; dense 140 bias; tanh; "
                        "dense 10 bias; softmax"},
        {"1x70x70 raw", "conv 12 5; tanh; maxpool 2 2; conv 24 5; tanh; maxpool 2 2; flatten; dense 160 bias; tanh; "
                        "dense 10 bias; softmax"},
        {"1x86x86 raw", "conv 4 7; relu; maxpool 2 2; conv 16 7; relu; maxpool 4 4; flatten; dense 32 bias; relu; "
                        "dense 10 bias; softmax"},
        /* Layers the fusion leaves alone: a pooling before the activation, a standalone activation and pooling. */
        {"1x20x20 norm 0.2860 0.3530", "conv 5 3; maxpool 2 2; sigmoid; conv 4 3 bias; avgpool 2 2; tanh; flatten; "
                                       "dense 12; relu; dense 10 bias"},
    };
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "net-%zu", i);
        check_model(name, nets[i].input, nets[i].layers, 6, 0, 2);
    }
}

/* Results do not depend on the chunk size or the number of threads. */
static void test_chunks_threads(void) {
    nc_error err = {0};
    nc_model *m = NULL;
    CHECK(nc_model_build(&m, "t", "1x16x16 raw", "conv 7 5; tanh; maxpool 2 2; flatten; dense 10 bias", &err) == 0);
    if (!m) return;
    nc_model_init_seeded(m, 3);
    enum { N = 101 };
    uint8_t img[N * 256];
    for (int i = 0; i < N * 256; i++) img[i] = (uint8_t)next_u32();
    float a[N * 10], b[N * 10];
    int pa[N], pb[N];
    /* One chunk; chunks of 2V (the last round's 5 images to the first thread); and one round of 64-image chunks,
     * whose 101 images the three threads share out V at a time, the last thread taking fewer. */
    const nc_run_opts one = {.threads = 1, .chunk = 1000}, many = {.threads = 3, .chunk = 1},
                      shared = {.threads = 3, .chunk = 64};
    CHECK(run(m, "cpu", &one, img, N, pa, a) == 0);
    CHECK(run(m, "cpu", &many, img, N, pb, b) == 0);
    CHECK(memcmp(a, b, sizeof a) == 0 && memcmp(pa, pb, sizeof pa) == 0);
    memset(b, 0, sizeof b);
    memset(pb, 0xff, sizeof pb);
    CHECK(run(m, "cpu", &shared, img, N, pb, b) == 0);
    CHECK(memcmp(a, b, sizeof a) == 0 && memcmp(pa, pb, sizeof pa) == 0);
    /* Timings: one Op Time per convolution, with the fusion named. */
    nc_session *s = NULL;
    nc_timing t;
    CHECK(nc_session_create(&s, m, "cpu", NULL, &err) == 0);
    if (s) {
        CHECK(nc_session_run(s, img, N, 16, 16, pa, NULL, &t, &err) == 0);
        CHECK(t.n_conv == 1 && t.conv_s[0] >= 0.0 && t.total_s > 0.0);
        CHECK(strstr(t.conv_note[0], "fused tanh+maxpool") != NULL);
    }
    nc_session_free(s);
    /* Options the backend refuses, and the instruction-set override. */
    const nc_run_opts bad = {.conv_kernel = 3};
    CHECK(nc_session_create(&s, m, "cpu", &bad, &err) == NC_ERR_ARG);
    CHECK_MSG(err, "convolution kernels");
    setenv("NANOCONV_CPU_ISA", "sse9", 1);
    CHECK(nc_session_create(&s, m, "cpu", NULL, &err) == NC_ERR_ARG);
    CHECK_MSG(err, "NANOCONV_CPU_ISA");
    setenv("NANOCONV_CPU_ISA", "scalar", 1);
    CHECK(nc_session_create(&s, m, "cpu", NULL, &err) == NC_OK);
    nc_session_free(s);
    unsetenv("NANOCONV_CPU_ISA");
    setenv("NANOCONV_CPU_TILE", "9x9", 1);
    CHECK(nc_session_create(&s, m, "cpu", NULL, &err) == NC_ERR_ARG);
    CHECK_MSG(err, "NANOCONV_CPU_TILE");
    unsetenv("NANOCONV_CPU_TILE");
    nc_model_free(m);
}

/* The vector activations against libm over the whole range, including the extremes. */
static void test_activations(void) {
    enum { N = 4096 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = -30.0f + 60.0f * (float)i / (N - 1);
    const float special[] = {0.0f, -0.0f, 1e-8f, -1e-8f, 1e-3f, 100.0f, -100.0f, 88.0f, -88.0f, 1e30f, -1e30f};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) x[i] = special[i];
    for (int isa = NC_ISA_AVX2; isa < NC_ISA_COUNT; isa++) {
        if (!nc_cpu_isa_supported((nc_cpu_isa)isa)) continue;
        void (*act)(int, float *, const float *, size_t) = isa == NC_ISA_AVX2 ? nc_act_avx2 : nc_act_avx512;
        double worst_tanh = 0.0, worst_sig = 0.0;
        act(NC_TANH, y, x, N);
        for (int i = 0; i < N; i++) worst_tanh = fmax(worst_tanh, fabs((double)y[i] - tanh((double)x[i])));
        CHECK(y[0] == 0.0f && y[5] == 1.0f && y[6] == -1.0f && y[9] == 1.0f && y[10] == -1.0f);
        act(NC_SIGMOID, y, x, N);
        /* Relative error where the result is a normal float; below that (x < -87) an absolute 1e-38. */
        for (int i = 0; i < N; i++) {
            const double r = 1.0 / (1.0 + exp(-(double)x[i])), e = fabs((double)y[i] - r);
            worst_sig = fmax(worst_sig, r >= 0x1p-126 ? e / r : e > 1e-38 ? INFINITY : 0.0);
        }
        act(NC_RELU, y, x, N);
        int relu_ok = 1;
        for (int i = 0; i < N; i++) relu_ok &= y[i] == (x[i] > 0.0f ? x[i] : 0.0f);
        CHECK(relu_ok);
        printf("test_cpu_backend: %s tanh max abs error %.2g, sigmoid max rel error %.2g\n",
               nc_cpu_isa_name((nc_cpu_isa)isa), worst_tanh, worst_sig);
        CHECK(worst_tanh <= 3e-7);
        CHECK(worst_sig <= 1e-6);
    }
}

/* nc_input_group of nb images against nc_resize_u8 and nc_scale_pixel, one image at a time: the same bits, and 0 in
 * the lanes past nb. Returns the number of floats that differ. */
static size_t input_differs(nc_cpu_isa isa, const nc_model *m, const uint8_t *img, int nb, int h, int w, int S) {
    const int V = nc_cpu_isa_lanes(isa);
    const size_t hw = (size_t)S * S;
    float *x = malloc(hw * V * sizeof(float));
    uint8_t *one = malloc(hw), *in = malloc((size_t)nb * h * w); /* the nb images alone: a read past them is ASan's */
    void *ws = malloc(nc_input_ws_bytes(S, S, V));
    if (!x || !one || !in || !ws) exit(1);
    memcpy(in, img, (size_t)nb * h * w);
    for (size_t i = 0; i < hw * V; i++) x[i] = NAN;
    nc_input_group(isa, x, in, nb, h, w, S, S, m, ws);
    size_t bad = 0;
    for (int v = 0; v < V; v++) {
        if (v < nb) {
            if (h == S && w == S)
                memcpy(one, img + (size_t)v * h * w, hw);
            else
                nc_resize_u8(one, S, img + (size_t)v * h * w, h, w);
        }
        for (size_t j = 0; j < hw; j++) {
            const float want = v < nb ? nc_scale_pixel(m, one[j]) : 0.0f;
            bad += memcmp(&x[j * V + v], &want, sizeof want) != 0;
        }
    }
    free(x);
    free(one);
    free(in);
    free(ws);
    return bad;
}

static void test_input(void) {
    nc_model m = {0};
    const nc_scaling scalings[] = {NC_SCALE_RAW, NC_SCALE_UNIT, NC_SCALE_NORM};
    m.mean = 0.2860f, m.std = 0.3530f;
    /* Made-up images: noise over the whole byte range, noise in [40, 200] (the clip to the image's range lifts the
     * border), flat ones, and patches of 3 x 3 pixels of one value (there an output's four terms can sum to a whole
     * number in reals, and the last bit of their double sum decides its truncation); square and not, the course's
     * sizes, the identity, 1 x 1, and wider than nc_resize_u8's block of 256 columns. */
    static const int shapes[][3] = {{28, 28, 86}, {28, 28, 48}, {28, 28, 28}, {3, 5, 9},
                                    {1, 1, 3},    {5, 4, 5},    {7, 7, 8},    {28, 28, 300}};
    for (int isa = 0; isa < NC_ISA_COUNT; isa++) {
        if (!nc_cpu_isa_supported((nc_cpu_isa)isa)) continue;
        const int V = nc_cpu_isa_lanes((nc_cpu_isa)isa);
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            const int h = shapes[k][0], w = shapes[k][1], S = shapes[k][2];
            uint8_t *img = malloc((size_t)V * h * w);
            if (!img) exit(1);
            for (int v = 0; v < V; v++)
                for (int j = 0; j < h * w; j++) {
                    const uint32_t r = next_u32() >> 24;
                    const uint32_t patch = (uint32_t)((j / w / 3 * 7 + j % w / 3 * 13 + v * 29) * 37 % 256);
                    img[(size_t)v * h * w + j] = (uint8_t)(v % 4 == 3   ? patch
                                                           : v % 3 == 0 ? r
                                                           : v % 3 == 1 ? 40 + r % 161
                                                                        : 90);
                }
            for (size_t c = 0; c < 3; c++) {
                m.scaling = scalings[c];
                const int counts[] = {V, 1, V - 1};
                for (int i = 0; i < 3; i++) {
                    const size_t bad = input_differs((nc_cpu_isa)isa, &m, img, counts[i], h, w, S);
                    if (bad)
                        fprintf(stderr, "  input %s %dx%d -> %d, scaling %d, %d images: %zu floats differ\n",
                                nc_cpu_isa_name((nc_cpu_isa)isa), h, w, S, (int)scalings[c], counts[i], bad);
                    CHECK(bad == 0);
                }
            }
            free(img);
        }
    }
    /* Every test image at each of the course's input sizes, raw as the course fed them. */
    nc_dataset ds;
    nc_error err = {0};
    if (nc_dataset_load_split(&ds, nc_default_data_dir(), "t10k", &err) != NC_OK) {
        printf("test_cpu_backend: %s; the input's checks on the test set skipped\n", err.msg);
        return;
    }
    m.scaling = NC_SCALE_RAW;
    static const int sizes[] = {48, 64, 70, 72, 86};
    for (int isa = 0; isa < NC_ISA_COUNT; isa++) {
        if (!nc_cpu_isa_supported((nc_cpu_isa)isa)) continue;
        const int V = nc_cpu_isa_lanes((nc_cpu_isa)isa);
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t bad = 0;
            for (int i = 0; i < ds.n; i += V) {
                const int nb = ds.n - i < V ? ds.n - i : V;
                bad +=
                    input_differs((nc_cpu_isa)isa, &m, ds.images + (size_t)i * ds.h * ds.w, nb, ds.h, ds.w, sizes[k]);
            }
            if (bad)
                fprintf(stderr, "  input %s, the %d test images -> %d: %zu floats differ\n",
                        nc_cpu_isa_name((nc_cpu_isa)isa), ds.n, sizes[k], bad);
            CHECK(bad == 0);
        }
    }
    nc_dataset_free(&ds);
}

int main(void) {
    for (int isa = 0; isa < NC_ISA_COUNT; isa++)
        printf("test_cpu_backend: %s %s\n", nc_cpu_isa_name((nc_cpu_isa)isa),
               nc_cpu_isa_supported((nc_cpu_isa)isa) ? "tested" : "not supported by this processor: not tested here");
    test_activations();
    test_input();
    test_random_layers();
    test_course_nets();
    test_chunks_threads();
    return nc_test_done("test_cpu_backend");
}
