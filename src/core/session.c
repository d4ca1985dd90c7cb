/* The backend registry and sessions: a model bound to a backend's plan. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/error.h"

/* Backends in the order `nanoconv --version` lists them; NULL where not built. */
static const nc_backend *const backends[] = {
    &nc_backend_cpu_ref,
    &nc_backend_cpu,
#ifdef NC_HAVE_CUDA
    &nc_backend_cuda,
#endif
#ifdef NC_HAVE_CUDNN
    &nc_backend_cudnn,
#endif
};
#define N_BACKENDS (sizeof backends / sizeof backends[0])

/* Names a user may know from the documentation, built here or not. */
static const char *const known_names[] = {"cpu-ref", "cpu", "cuda", "cudnn"};

static const char *names[N_BACKENDS + 1];
static void fill_names(void) {
    for (size_t i = 0; i < N_BACKENDS; i++) names[i] = backends[i]->name;
}

const char *const *nc_backend_names(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fill_names); /* written once, whatever threads ask */
    return names;
}

const nc_backend *nc_backend_find(const char *name) {
    for (size_t i = 0; i < N_BACKENDS; i++)
        if (strcmp(backends[i]->name, name) == 0) return backends[i];
    return NULL;
}

void nc_argmax_rows(int *pred, const float *x, int n, int classes) {
    for (int i = 0; i < n; i++) {
        const float *xi = x + (size_t)i * classes;
        int best = 0;
        for (int j = 1; j < classes; j++)
            if (xi[j] > xi[best]) best = j;
        pred[i] = best;
    }
}

/* A lock a GPU, which a GPU backend's plan holds while it is created, run and destroyed: sessions of their own on
 * one GPU, on several threads, take turns there. What they would share: version 2's weights in the device's constant
 * memory, each kernel's shared-memory limit (set for the whole process, and by some launches to what their shape
 * needs), the tuner's timings (each others' load) and its cache. Sessions on different GPUs, and a session's plans on
 * the GPUs of one run, go at once. */
static pthread_mutex_t gpu_locks[NC_MAX_DEVICES];
static void gpu_locks_init(void) {
    for (int i = 0; i < NC_MAX_DEVICES; i++) pthread_mutex_init(&gpu_locks[i], NULL);
}

/* The lock of GPU device where b runs on GPUs; NULL for a CPU backend (or a device past the table, which the
 * backend's own check refuses). */
static pthread_mutex_t *gpu_lock(const nc_backend *b, int device) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (!b->device_count || device < 0 || device >= NC_MAX_DEVICES) return NULL;
    pthread_once(&once, gpu_locks_init);
    return &gpu_locks[device];
}

static void lock(pthread_mutex_t *m) {
    if (m) pthread_mutex_lock(m);
}
static void unlock(pthread_mutex_t *m) {
    if (m) pthread_mutex_unlock(m);
}

/* A session: the model, its backend, and a plan a GPU where a run is spread over several (one plan otherwise). */
struct nc_session {
    const nc_model *model;
    const nc_backend *backend;
    int n_plans;
    int device0; /* the first plan's GPU (nc_run_opts.device); plan i runs on device0 + i */
    void *plan[NC_MAX_DEVICES];
};

/* The plans nc_run_opts.devices asks for, checked against the backend and the machine. */
static int session_plans(const nc_backend *b, const nc_run_opts *opts, int *n, nc_error *err) {
    *n = 1;
    if (opts->devices == 0 || opts->devices == 1) return NC_OK;
    if (opts->devices < NC_ALL_DEVICES)
        return nc_fail(err, NC_ERR_ARG, "--devices %d: expected a count of GPUs, or all", opts->devices);
    if (!b->device_count)
        return nc_fail(err, NC_ERR_ARG, "--devices: backend '%s' runs on the CPU (only cuda and cudnn take GPUs)",
                       b->name);
    int count;
    const int rc = b->device_count(&count, err);
    if (rc) return rc;
    const int from = opts->device, want = opts->devices == NC_ALL_DEVICES ? count - from : opts->devices;
    if (from < 0 || from >= count || want < 1 || from + want > count) {
        char asked[32];
        if (opts->devices == NC_ALL_DEVICES)
            snprintf(asked, sizeof asked, "all");
        else
            snprintf(asked, sizeof asked, "%d", opts->devices);
        return nc_fail(err, NC_ERR_ARG, "--devices %s from --device %d: this machine has %d CUDA GPU%s (0..%d)", asked,
                       from, count, count == 1 ? "" : "s", count - 1);
    }
    if (want > NC_MAX_DEVICES)
        return nc_fail(err, NC_ERR_ARG, "--devices %d: at most %d GPUs a session", want, NC_MAX_DEVICES);
    *n = want;
    return NC_OK;
}

int nc_session_create(nc_session **out, const nc_model *m, const char *backend, const nc_run_opts *opts,
                      nc_error *err) {
    *out = NULL;
    const nc_backend *b = nc_backend_find(backend);
    if (!b) {
        for (size_t i = 0; i < sizeof known_names / sizeof known_names[0]; i++)
            if (strcmp(known_names[i], backend) == 0)
                return nc_fail(err, NC_ERR_UNAVAILABLE,
                               "backend '%s' is not built into this nanoconv (see `nanoconv --version`)", backend);
        char list[256] = "";
        for (size_t i = 0; i < N_BACKENDS; i++) {
            strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, backends[i]->name, sizeof list - strlen(list) - 1);
        }
        return nc_fail(err, NC_ERR_ARG, "unknown backend '%s' (built: %s)", backend, list);
    }
    nc_run_opts o = {0};
    if (opts) o = *opts;
    if (o.precision != 0 && !b->reduced_precision) /* 0: fp32 */
        return nc_fail(err, NC_ERR_ARG,
                       "--precision: backend '%s' computes in fp32 only (the reduced precisions "
                       "are the cuda backend's)",
                       b->name);
    if (o.device != 0 && !b->device_count)
        return nc_fail(err, NC_ERR_ARG, "--device %d: backend '%s' runs on the CPU (only cuda and cudnn take GPUs)",
                       o.device, b->name);
    int n_plans, rc = session_plans(b, &o, &n_plans, err);
    if (rc) return rc;
    nc_session *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "out of memory for a session");
    s->model = m;
    s->backend = b;
    s->device0 = o.device;
    /* One after the other: a plan's creation may time kernels (the cuda backend's tuner) and write its cache. */
    for (int i = 0; i < n_plans; i++) {
        o.device = s->device0 + i;
        o.devices = 1;
        pthread_mutex_t *l = gpu_lock(b, o.device);
        lock(l);
        rc = b->create(&s->plan[i], m, &o, err);
        unlock(l);
        if (rc) {
            if (n_plans > 1) nc_error_prefix(err, "GPU %d", o.device);
            nc_session_free(s);
            return rc;
        }
        s->n_plans = i + 1;
    }
    *out = s;
    return NC_OK;
}

/* One GPU's share of a run: the first on the calling thread, each other on a thread of its own. */
typedef struct {
    const nc_backend *backend;
    void *plan;
    int device;
    const uint8_t *images;
    int n, h, w;
    int *pred;
    float *logits;
    nc_timing t;
    nc_error err;
    int rc;
} session_share;

static void *session_share_run(void *arg) {
    session_share *sh = arg;
    pthread_mutex_t *l = gpu_lock(sh->backend, sh->device);
    lock(l);
    sh->rc = sh->backend->run(sh->plan, sh->images, sh->n, sh->h, sh->w, sh->pred, sh->logits, &sh->t, &sh->err);
    unlock(l);
    return NULL;
}

/* Runs the images split into contiguous shares, one a plan (the first n % plans shares one image larger), the
 * first on the calling thread and each other on a thread of its own, and gathers the timings: a layer's Op Time is
 * the slowest share's. */
static int session_run_shares(nc_session *s, const uint8_t *images, int n, int h, int w, int *pred, float *logits,
                              nc_timing *t, nc_error *err) {
    session_share sh[NC_MAX_DEVICES];
    pthread_t tid[NC_MAX_DEVICES];
    int started[NC_MAX_DEVICES] = {0}, rc = NC_OK;
    const int classes = nc_model_num_classes(s->model);
    for (int i = 0, off = 0; i < s->n_plans; i++) {
        const int share = n / s->n_plans + (i < n % s->n_plans);
        sh[i] = (session_share){.backend = s->backend,
                                .plan = s->plan[i],
                                .device = s->device0 + i,
                                .images = images + (size_t)off * h * w,
                                .n = share,
                                .h = h,
                                .w = w,
                                .pred = pred + off,
                                .logits = logits ? logits + (size_t)off * classes : NULL};
        off += share;
        if (i == 0 || share == 0) continue; /* the first runs below, even with none (fewer images than GPUs) */
        const int e = pthread_create(&tid[i], NULL, session_share_run, &sh[i]);
        if (e) {
            rc = nc_fail(err, NC_ERR_NOMEM, "starting a thread for GPU %d: %s", s->device0 + i, strerror(e));
            break;
        }
        started[i] = 1;
    }
    if (!rc) {
        session_share_run(&sh[0]);
        started[0] = 1;
    }
    for (int i = 1; i < s->n_plans; i++)
        if (started[i]) pthread_join(tid[i], NULL);
    if (rc) return rc;
    for (int i = 0; i < s->n_plans; i++) /* the first GPU's failure, named */
        if (started[i] && sh[i].rc) {
            if (err) {
                *err = sh[i].err;
                nc_error_prefix(err, "GPU %d", s->device0 + i);
            }
            return sh[i].rc;
        }
    for (int i = 0; i < s->n_plans; i++) {
        if (!started[i]) continue;
        if (t->n_conv == 0) { /* the first share's notes and versions (every plan is the same model's) */
            *t = sh[i].t;
            t->total_s = 0.0;
            continue;
        }
        for (int c = 0; c < t->n_conv; c++)
            if (sh[i].t.conv_s[c] > t->conv_s[c]) t->conv_s[c] = sh[i].t.conv_s[c];
    }
    return NC_OK;
}

int nc_session_run(nc_session *s, const uint8_t *images, int n, int h, int w, int *pred, float *logits, nc_timing *t,
                   nc_error *err) {
    if (!s) return nc_fail(err, NC_ERR_ARG, "nc_session_run: no session (NULL)");
    if (n < 0) return nc_fail(err, NC_ERR_ARG, "negative image count %d", n);
    if (h < 1 || w < 1) return nc_fail(err, NC_ERR_ARG, "images of %dx%d pixels: a side must be at least 1", h, w);
    if (n > 0 && (!images || !pred))
        return nc_fail(err, NC_ERR_ARG, "nc_session_run: %s is NULL for %d images", images ? "pred" : "images", n);
    int rc = nc_model_check_input(s->model, h, w, err);
    if (rc) return rc;
    nc_timing local;
    if (!t) t = &local;
    memset(t, 0, sizeof *t);
    const double t0 = nc_now();
    if (s->n_plans > 1)
        rc = session_run_shares(s, images, n, h, w, pred, logits, t, err);
    else {
        pthread_mutex_t *l = gpu_lock(s->backend, s->device0);
        lock(l);
        rc = s->backend->run(s->plan[0], images, n, h, w, pred, logits, t, err);
        unlock(l);
    }
    if (t->total_s == 0.0) t->total_s = nc_now() - t0;
    return rc;
}

void nc_session_free(nc_session *s) {
    if (!s) return;
    for (int i = 0; i < s->n_plans; i++) {
        pthread_mutex_t *l = gpu_lock(s->backend, s->device0 + i);
        lock(l);
        s->backend->destroy(s->plan[i]);
        unlock(l);
    }
    free(s);
}
