/*
 * The cpu-ref backend: the reference layers run one after another on chunks of
 * the batch, so memory stays bounded whatever N is. Op Time of a convolution
 * layer is the sum over chunks of the time of that layer alone.
 */
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/error.h"
#include "cpu/ref.h"

/* Images per chunk: small enough that the largest activation of the course's
 * networks (50x24x24 floats, 115 kB an image) stays near 30 MB. */
#define REF_CHUNK 256

typedef struct {
    const nc_model *m;
    int chunk;
    float *buf[2]; /* ping-pong activations, each (chunk, largest layer size) */
} ref_plan;

static int ref_create(void **out, const nc_model *m, const nc_run_opts *opts, nc_error *err) {
    if (opts->conv_kernel)
        return nc_fail(err, NC_ERR_ARG, "backend cpu-ref has a single convolution (--conv-kernel is for cuda)");
    ref_plan *p = calloc(1, sizeof *p);
    if (!p) return nc_fail(err, NC_ERR_NOMEM, "out of memory for the cpu-ref plan");
    p->m = m;
    p->chunk = opts->chunk ? (int)opts->chunk : REF_CHUNK;
    size_t largest = nc_shape_size(m->input);
    for (int i = 0; i < m->n_layers; i++) {
        const size_t s = nc_shape_size(m->layers[i].out);
        if (s > largest) largest = s;
    }
    size_t bytes;
    if (!nc_mul_ok(largest * sizeof(float), (size_t)p->chunk, &bytes) || !(p->buf[0] = malloc(bytes)) ||
        !(p->buf[1] = malloc(bytes))) {
        free(p->buf[0]);
        free(p);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory for cpu-ref activations (%d images of %zu floats)",
                       opts->chunk ? (int)opts->chunk : REF_CHUNK, largest);
    }
    *out = p;
    return NC_OK;
}

static int ref_run(void *plan, const uint8_t *images, int n, int h, int w, int *pred, float *logits, nc_timing *t,
                   nc_error *err) {
    ref_plan *p = plan;
    const nc_model *m = p->m;
    const int classes = (int)nc_shape_size(m->layers[m->n_layers - 1].out);
    t->n_conv = nc_model_num_conv(m);
    for (int i0 = 0; i0 < n; i0 += p->chunk) {
        const int B = n - i0 < p->chunk ? n - i0 : p->chunk;
        int rc = nc_prepare_input(p->buf[0], m, images + (size_t)i0 * h * w, B, h, w, err);
        if (rc) return rc;
        int cur = 0, conv = 0;
        for (int li = 0; li < m->n_layers; li++) {
            const nc_layer *l = &m->layers[li];
            const double t0 = nc_now();
            nc_ref_layer_forward(l, p->buf[1 - cur], p->buf[cur], B);
            if (l->kind == NC_CONV) t->conv_s[conv++] += nc_now() - t0;
            cur = 1 - cur;
        }
        nc_argmax_rows(pred + i0, p->buf[cur], B, classes);
        if (logits) memcpy(logits + (size_t)i0 * classes, p->buf[cur], (size_t)B * classes * sizeof(float));
    }
    return NC_OK;
}

static void ref_destroy(void *plan) {
    ref_plan *p = plan;
    if (!p) return;
    free(p->buf[0]);
    free(p->buf[1]);
    free(p);
}

const nc_backend nc_backend_cpu_ref = {
    .name = "cpu-ref",
    .description = "reference layers on the CPU (the oracle)",
    .create = ref_create,
    .run = ref_run,
    .destroy = ref_destroy,
};
