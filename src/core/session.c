/* The backend registry and sessions: a model bound to a backend's plan. */
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

const char *const *nc_backend_names(void) {
    static const char *names[N_BACKENDS + 1];
    for (size_t i = 0; i < N_BACKENDS; i++) names[i] = backends[i]->name;
    names[N_BACKENDS] = NULL;
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

struct nc_session {
    const nc_model *model;
    const nc_backend *backend;
    void *plan;
};

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
    nc_run_opts defaults = {0};
    nc_session *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "out of memory for a session");
    s->model = m;
    s->backend = b;
    int rc = b->create(&s->plan, m, opts ? opts : &defaults, err);
    if (rc) {
        free(s);
        return rc;
    }
    *out = s;
    return NC_OK;
}

int nc_session_run(nc_session *s, const uint8_t *images, int n, int h, int w, int *pred, float *logits, nc_timing *t,
                   nc_error *err) {
    if (n < 0) return nc_fail(err, NC_ERR_ARG, "negative image count %d", n);
    int rc = nc_model_check_input(s->model, h, w, err);
    if (rc) return rc;
    nc_timing local;
    if (!t) t = &local;
    memset(t, 0, sizeof *t);
    const double t0 = nc_now();
    rc = s->backend->run(s->plan, images, n, h, w, pred, logits, t, err);
    if (t->total_s == 0.0) t->total_s = nc_now() - t0;
    return rc;
}

void nc_session_free(nc_session *s) {
    if (!s) return;
    s->backend->destroy(s->plan);
    free(s);
}
