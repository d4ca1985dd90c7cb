/* Sessions and the backend interface: argmax ties, chunking, timings, input checks, --devices, backend names, and
 * sessions of their own run at once from several threads. */
#include <pthread.h>
#include <stdint.h>

#include "core/backend.h"
#include "core/model.h"
#include "nc_test.h"

static void test_argmax(void) {
    const float x[12] = {1, 3, 3, 0, /* tie: lowest index */ -5, -4, -4, -9, 2, 2, 2, 2};
    int pred[3];
    nc_argmax_rows(pred, x, 3, 4);
    CHECK(pred[0] == 1 && pred[1] == 1 && pred[2] == 0);
}

static void test_chunks_and_timing(void) {
    nc_error err = {0};
    nc_model *m = NULL;
    int rc = nc_model_build(&m, "t", "1x12x12 unit",
                            "conv 3 3; tanh; maxpool 2 2; conv 4 3 bias; flatten; dense 10 bias", &err);
    CHECK(rc == NC_OK);
    if (rc) return;
    nc_model_init_seeded(m, 5);
    enum { N = 37 };
    uint8_t img[N * 144];
    for (int i = 0; i < N * 144; i++) img[i] = (uint8_t)((i * 2654435761u) >> 24);
    float a[N * 10], b[N * 10];
    int pa[N], pb[N];
    nc_timing t;
    nc_session *s1 = NULL, *s2 = NULL;
    nc_run_opts small = {.chunk = 5};
    CHECK(nc_session_create(&s1, m, "cpu-ref", NULL, &err) == NC_OK);
    CHECK(nc_session_create(&s2, m, "cpu-ref", &small, &err) == NC_OK);
    if (s1 && s2) {
        CHECK(nc_session_run(s1, img, N, 12, 12, pa, a, &t, &err) == NC_OK);
        CHECK(t.n_conv == 2 && t.conv_s[0] >= 0.0 && t.conv_s[1] >= 0.0 && t.total_s > 0.0);
        CHECK(nc_session_run(s2, img, N, 12, 12, pb, b, NULL, &err) == NC_OK);
        /* Chunks of 5 images give bitwise the same answers as one chunk. */
        CHECK(memcmp(a, b, sizeof a) == 0 && memcmp(pa, pb, sizeof pa) == 0);
        int ok = 1;
        for (int i = 0; i < N; i++) {
            int best = 0;
            for (int j = 1; j < 10; j++)
                if (a[i * 10 + j] > a[i * 10 + best]) best = j;
            ok &= best == pa[i];
        }
        CHECK(ok);
        /* 28x28 data cannot feed a 12x12 model (shrinking is not defined). */
        uint8_t big[784] = {0};
        CHECK(nc_session_run(s1, big, 1, 28, 28, pa, NULL, NULL, &err) == NC_ERR_MISMATCH);
        CHECK_MSG(err, "12x12");
        /* Sides under 1 (an upscaling from nothing, which read no pixel), and no images or predictions. */
        static const int sides[][2] = {{0, 0}, {0, 12}, {12, 0}, {-3, 12}, {12, -3}};
        for (int i = 0; i < 5; i++) {
            CHECK(nc_session_run(s1, big, 1, sides[i][0], sides[i][1], pa, NULL, NULL, &err) == NC_ERR_ARG);
            CHECK_MSG(err, "a side must be at least 1");
        }
        CHECK(nc_session_run(s1, NULL, 1, 12, 12, pa, NULL, NULL, &err) == NC_ERR_ARG);
        CHECK_MSG(err, "images is NULL");
        CHECK(nc_session_run(s1, big, 1, 12, 12, NULL, NULL, NULL, &err) == NC_ERR_ARG);
        CHECK_MSG(err, "pred is NULL");
        CHECK(nc_session_run(s1, NULL, 0, 12, 12, NULL, NULL, NULL, &err) == NC_OK);
    }
    nc_session_free(s1);
    nc_session_free(s2);

    nc_session *s3 = NULL;
    CHECK(nc_session_create(&s3, m, "no-such-backend", NULL, &err) == NC_ERR_ARG);
    CHECK_MSG(err, "no-such-backend");
    CHECK(s3 == NULL);
    nc_run_opts kv = {.conv_kernel = 3};
    CHECK(nc_session_create(&s3, m, "cpu-ref", &kv, &err) == NC_ERR_ARG);
    nc_model_free(m);
}

/* nc_run_opts.devices: one GPU's worth (0, 1) runs as without it on any backend; more, or all, only on a GPU backend
 * (tests/gpu/test_devices.py runs them there); a CPU backend and a count below "all" are refused, naming the option.
 * Without a GPU (CI) a GPU backend says so. */
static void test_devices(void) {
    nc_error err = {0};
    nc_model *m = NULL;
    if (nc_model_build(&m, "t", "1x8x8 unit", "conv 2 3; flatten; dense 10", &err)) {
        CHECK(0);
        return;
    }
    nc_model_init_seeded(m, 3);
    uint8_t img[3 * 64] = {0};
    int pred[3];
    for (int d = 0; d <= 1; d++) {
        nc_session *s = NULL;
        const nc_run_opts one = {.devices = d};
        CHECK(nc_session_create(&s, m, "cpu-ref", &one, &err) == NC_OK);
        CHECK(s && nc_session_run(s, img, 3, 8, 8, pred, NULL, NULL, &err) == NC_OK);
        nc_session_free(s);
    }
    const int bad[] = {2, NC_ALL_DEVICES, NC_ALL_DEVICES - 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nc_session *s = NULL;
        const nc_run_opts o = {.devices = bad[i]};
        CHECK(nc_session_create(&s, m, "cpu", &o, &err) == NC_ERR_ARG && s == NULL);
        CHECK_MSG(err, "--devices");
    }
    if (nc_backend_find("cuda")) {
        nc_session *s = NULL;
        const nc_run_opts two = {.devices = 2, .device = 1000};
        const int rc = nc_session_create(&s, m, "cuda", &two, &err);
        /* no GPU: unavailable; GPUs: device 1000 is past them */
        CHECK((rc == NC_ERR_UNAVAILABLE || rc == NC_ERR_ARG) && s == NULL);
    }
    nc_model_free(m);
}

static void test_backend_names(void) {
    const char *const *names = nc_backend_names();
    CHECK(names[0] && !strcmp(names[0], "cpu-ref"));
    int n = 0;
    for (; names[n]; n++) CHECK(nc_backend_find(names[n]) != NULL);
    CHECK(n >= 1);
}

/* Several threads at once, each creating, running and freeing a session of its own on one model (nanoconv.h: a
 * session is one thread's at a time; sessions of their own may run at once). Each thread's outputs must be, bit for
 * bit, those of the same backend run alone: a shared buffer or a race on the plans would mix images up. */
enum { CONC_THREADS = 4, CONC_N = 53 };
typedef struct {
    const nc_model *m;
    const char *backend;
    const uint8_t *img;
    int pred[CONC_N];
    float logits[CONC_N * 10];
    int rc;
} conc_job;

static void *conc_run(void *arg) {
    conc_job *j = arg;
    nc_error err = {0};
    nc_session *s = NULL;
    const nc_run_opts opts = {.threads = 2, .chunk = 8};
    j->rc = nc_session_create(&s, j->m, j->backend, &opts, &err);
    for (int rep = 0; rep < 3 && !j->rc; rep++)
        j->rc = nc_session_run(s, j->img, CONC_N, 16, 16, j->pred, j->logits, NULL, &err);
    if (j->rc) fprintf(stderr, "%s in a thread: %s\n", j->backend, err.msg);
    nc_session_free(s);
    return NULL;
}

static void test_concurrent_sessions(void) {
    nc_error err = {0};
    nc_model *m = NULL;
    if (nc_model_build(&m, "t", "1x16x16 unit",
                       "conv 6 5 bias; tanh; maxpool 2 2; conv 8 3; relu; flatten; dense 10 bias", &err)) {
        CHECK(0);
        return;
    }
    nc_model_init_seeded(m, 11);
    static uint8_t img[CONC_THREADS][CONC_N * 256];
    for (int t = 0; t < CONC_THREADS; t++) /* each thread its own images */
        for (int i = 0; i < CONC_N * 256; i++) img[t][i] = (uint8_t)(((unsigned)(i + 977 * t) * 2654435761u) >> 24);
    const char *backends[] = {"cpu-ref", "cpu"};
    for (int b = 0; b < 2; b++) {
        static conc_job alone[CONC_THREADS], together[CONC_THREADS];
        for (int t = 0; t < CONC_THREADS; t++) {
            alone[t] = (conc_job){.m = m, .backend = backends[b], .img = img[t]};
            together[t] = alone[t];
            conc_run(&alone[t]);
        }
        pthread_t th[CONC_THREADS];
        for (int t = 0; t < CONC_THREADS; t++) CHECK(pthread_create(&th[t], NULL, conc_run, &together[t]) == 0);
        for (int t = 0; t < CONC_THREADS; t++) pthread_join(th[t], NULL);
        for (int t = 0; t < CONC_THREADS; t++) {
            CHECK(alone[t].rc == NC_OK && together[t].rc == NC_OK);
            CHECK(memcmp(alone[t].pred, together[t].pred, sizeof alone[t].pred) == 0);
            CHECK(memcmp(alone[t].logits, together[t].logits, sizeof alone[t].logits) == 0);
        }
        /* The threads' images differ, and so do their logits: the comparison above could fail. */
        CHECK(memcmp(alone[0].logits, alone[1].logits, sizeof alone[0].logits) != 0);
    }
    nc_model_free(m);
}

int main(void) {
    test_argmax();
    test_chunks_and_timing();
    test_devices();
    test_backend_names();
    test_concurrent_sessions();
    return nc_test_done("test_session");
}
