/* The trainer: a network's activations, gradients and optimiser state, and the training loop. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "core/backend.h"
#include "core/error.h"
#include "train/train.h"

/* Whether the first weighted layer may absorb an input scale: only layers that commute with a positive scale
 * (x -> s x) may come before it. */
static int commutes_with_scale(nc_layer_kind k) {
    return k == NC_FLATTEN || k == NC_MAXPOOL || k == NC_AVGPOOL || k == NC_RELU;
}

int nc_trainer_create(nc_trainer **out, const nc_model *m, int from_params, const nc_train_opts *opts, nc_error *err) {
    *out = NULL;
    if (opts->batch < 1 || opts->epochs < 1 || !(opts->lr > 0.0f) || !isfinite(opts->lr))
        return nc_fail(err, NC_ERR_ARG, "training needs batch >= 1, epochs >= 1 and a positive learning rate");
    nc_trainer *t = calloc(1, sizeof *t);
    if (!t) return nc_fail(err, NC_ERR_NOMEM, "out of memory for the trainer");
    t->opts = *opts;
    t->fold_layer = -1;
    t->in_scale = 1.0f;

    /* A copy of the architecture, built (and shape-checked) from its text. */
    char in_text[256], layers_text[4096];
    nc_model_input_text(m, in_text, sizeof in_text);
    nc_model_layers_text(m, layers_text, sizeof layers_text);
    int rc = nc_model_build(&t->model, m->name, in_text, layers_text, err);
    if (rc) goto fail;
    nc_model *tm = t->model;
    tm->mean = m->mean; /* exactly, whatever digits the text kept */
    tm->std = m->std;
    const nc_layer *L = tm->layers;
    t->n_fwd = tm->n_layers - (L[tm->n_layers - 1].kind == NC_SOFTMAX);
    t->first_weighted = -1;
    for (int i = 0; i < t->n_fwd && t->first_weighted < 0; i++)
        if (L[i].weight) t->first_weighted = i;
    if (t->first_weighted < 0 || t->n_fwd < 1) {
        rc = nc_fail(err, NC_ERR_ARG, "model '%s' has no parameters to train", m->name);
        goto fail;
    }
    t->classes = (int)nc_shape_size(L[t->n_fwd - 1].out);
    if (m->scaling == NC_SCALE_RAW) {
        int i = 0;
        while (i < t->first_weighted && commutes_with_scale(L[i].kind)) i++;
        if (i == t->first_weighted) {
            t->fold_layer = i;
            t->in_scale = 1.0f / 255.0f;
        }
    }
    if (from_params) {
        memcpy(tm->params, m->params, m->n_params * sizeof(float));
        if (t->fold_layer >= 0) {
            float *w = tm->layers[t->fold_layer].weight;
            for (size_t j = 0; j < nc_layer_weight_count(&tm->layers[t->fold_layer]); j++) w[j] /= t->in_scale;
        }
    } else {
        nc_model_init_seeded(tm, opts->seed);
    }

    /* Activations: acts[0] the input, acts[i + 1] layer i's output; flatten's output is its input. */
    const int B = opts->batch;
    size_t act = nc_shape_size(tm->input), largest = act;
    for (int i = 0; i < t->n_fwd; i++) {
        const size_t s = nc_shape_size(L[i].out);
        if (L[i].kind != NC_FLATTEN) act += s;
        if (s > largest) largest = s;
    }
    t->act_floats = act;
    size_t act_bytes, d_bytes;
    if (!nc_mul_ok(act * sizeof(float), (size_t)B, &act_bytes) ||
        !nc_mul_ok(largest * sizeof(float), (size_t)B, &d_bytes)) {
        rc = nc_fail(err, NC_ERR_NOMEM, "activations of %d images overflow", B);
        goto fail;
    }
    const size_t np = tm->n_params;
    t->act_mem = malloc(act_bytes);
    t->dbuf[0] = malloc(d_bytes);
    t->dbuf[1] = malloc(d_bytes);
    t->grad = calloc(np, sizeof(float));
    t->opt_m = calloc(np, sizeof(float));
    if (opts->optimizer == NC_OPT_ADAM) t->opt_v = calloc(np, sizeof(float));
    if (!t->act_mem || !t->dbuf[0] || !t->dbuf[1] || !t->grad || !t->opt_m ||
        (opts->optimizer == NC_OPT_ADAM && !t->opt_v)) {
        rc = nc_fail(err, NC_ERR_NOMEM, "out of memory for training '%s' (batch %d: %zu MB of activations)", m->name, B,
                     act_bytes >> 20);
        goto fail;
    }
    float *p = t->act_mem;
    t->acts[0] = p;
    p += (size_t)B * nc_shape_size(tm->input);
    for (int i = 0; i < t->n_fwd; i++) {
        if (L[i].kind == NC_FLATTEN) {
            t->acts[i + 1] = t->acts[i];
        } else {
            t->acts[i + 1] = p;
            p += (size_t)B * nc_shape_size(L[i].out);
        }
    }
    rc = nc_train_scratch_init(&t->scratch, L, t->n_fwd, B, omp_get_max_threads(), err);
    if (rc) goto fail;
    *out = t;
    return NC_OK;

fail:
    nc_trainer_free(t);
    return rc;
}

void nc_trainer_free(nc_trainer *t) {
    if (!t) return;
    nc_train_scratch_free(&t->scratch);
    nc_model_free(t->model);
    free(t->act_mem);
    free(t->dbuf[0]);
    free(t->dbuf[1]);
    free(t->grad);
    free(t->opt_m);
    free(t->opt_v);
    free(t);
}

/* Scales images (the model's input size) into acts[0]: image idx[j] (or j, if idx is NULL) into row j. */
static void load_rows(nc_trainer *t, const uint8_t *images, const int *idx, int n) {
    const nc_model *m = t->model;
    const size_t hw = (size_t)m->input.h * m->input.w;
    float lut[256]; /* the internal input value of each pixel value */
    for (int v = 0; v < 256; v++) lut[v] = nc_scale_pixel(m, (uint8_t)v) * t->in_scale;
#pragma omp parallel for schedule(static) if ((size_t)n * hw > NC_TRAIN_BLOCK)
    for (int j = 0; j < n; j++) {
        const uint8_t *src = images + (size_t)(idx ? idx[j] : j) * hw;
        float *dst = t->acts[0] + (size_t)j * hw;
        for (size_t i = 0; i < hw; i++) dst[i] = lut[src[i]];
    }
}

void nc_trainer_load_images(nc_trainer *t, const uint8_t *images, int n) {
    load_rows(t, images, NULL, n);
}

const float *nc_trainer_logits(nc_trainer *t, int n) {
    for (int i = 0; i < t->n_fwd; i++)
        nc_train_forward(&t->model->layers[i], t->acts[i + 1], t->acts[i], n, &t->scratch);
    return t->acts[t->n_fwd];
}

double nc_trainer_gradient(nc_trainer *t, const uint8_t *labels, int n) {
    nc_model *m = t->model;
    float *d = t->dbuf[0], *other = t->dbuf[1];
    const double loss = nc_train_softmax_xent(d, nc_trainer_logits(t, n), labels, n, t->classes, 1.0f / (float)n);
    for (int i = t->n_fwd - 1; i >= t->first_weighted; i--) {
        const nc_layer *l = &m->layers[i];
        if (l->kind == NC_FLATTEN) continue; /* its input and output share a buffer, and so do their gradients */
        float *dw = l->weight ? t->grad + (l->weight - m->params) : NULL;
        float *db = l->bias ? t->grad + (l->bias - m->params) : NULL;
        nc_train_backward(l, i > t->first_weighted ? other : NULL, dw, db, d, t->acts[i], t->acts[i + 1], n,
                          &t->scratch);
        float *tmp = d;
        d = other;
        other = tmp;
    }
    return loss / n;
}

void nc_trainer_update(nc_trainer *t, float lr) {
    nc_train_update(&t->opts, t->model->params, t->grad, t->opt_m, t->opt_v, t->model->n_params, lr, ++t->steps);
}

void nc_trainer_export(const nc_trainer *t, nc_model *m) {
    memcpy(m->params, t->model->params, m->n_params * sizeof(float));
    if (t->fold_layer >= 0) {
        float *w = m->layers[t->fold_layer].weight;
        for (size_t j = 0; j < nc_layer_weight_count(&m->layers[t->fold_layer]); j++) w[j] *= t->in_scale;
    }
}

/* ------------------------------------------------------------------ loop */

/* The first n images of ds at the model's input size: ds's own pixels, or (*owned) a resized copy. */
static int fit_images(const uint8_t **out, uint8_t **owned, const nc_dataset *ds, int n, const nc_model *m,
                      const char *what, nc_error *err) {
    *owned = NULL;
    int rc = nc_model_check_input(m, ds->h, ds->w, err);
    if (rc) {
        nc_error_prefix(err, "%s", what);
        return rc;
    }
    const int S = m->input.h;
    if (ds->h == S && ds->w == m->input.w) {
        *out = ds->images;
        return NC_OK;
    }
    uint8_t *r = malloc((size_t)n * S * S);
    if (!r) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for %d images resized to %dx%d", what, n, S, S);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        nc_resize_u8(r + (size_t)i * S * S, S, ds->images + (size_t)i * ds->h * ds->w, ds->h, ds->w);
    *out = *owned = r;
    return NC_OK;
}

/* A stream for the image order, apart from the one nc_model_init_seeded draws the weights from. */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Share of the n images classified right, in batches through the training forward. */
static double evaluate(nc_trainer *t, const uint8_t *images, const uint8_t *labels, int n, int *pred) {
    const size_t hw = (size_t)t->model->input.h * t->model->input.w;
    long correct = 0;
    for (int i0 = 0; i0 < n; i0 += t->opts.batch) {
        const int nb = n - i0 < t->opts.batch ? n - i0 : t->opts.batch;
        load_rows(t, images + (size_t)i0 * hw, NULL, nb);
        nc_argmax_rows(pred, nc_trainer_logits(t, nb), nb, t->classes);
        for (int j = 0; j < nb; j++) correct += pred[j] == labels[i0 + j];
    }
    return (double)correct / (double)n;
}

int nc_train_run(nc_trainer *t, const nc_dataset *train, const nc_dataset *test, nc_train_progress_fn progress,
                 void *user, nc_error *err) {
    const nc_train_opts *o = &t->opts;
    const int n = o->limit > 0 && o->limit < train->n ? o->limit : train->n;
    if (n < 1) return nc_fail(err, NC_ERR_ARG, "no training images");
    const uint8_t *train_img = NULL, *test_img = NULL;
    uint8_t *train_owned = NULL, *test_owned = NULL;
    int *order = malloc((size_t)n * sizeof *order);
    uint8_t *labels = malloc((size_t)o->batch);
    int *pred = malloc((size_t)o->batch * sizeof *pred);
    int rc = (!order || !labels || !pred) ? nc_fail(err, NC_ERR_NOMEM, "out of memory for %d image indices", n) : 0;
    if (!rc) rc = nc_dataset_check_labels(train, n, t->classes, "training data", err);
    if (!rc && test) rc = nc_dataset_check_labels(test, test->n, t->classes, "test data", err);
    if (!rc) rc = fit_images(&train_img, &train_owned, train, n, t->model, "training data", err);
    if (!rc && test) rc = fit_images(&test_img, &test_owned, test, test->n, t->model, "test data", err);
    if (rc) goto done;

    const long steps = (n + o->batch - 1) / o->batch, total_steps = steps * o->epochs;
    const double total_images = (double)n * o->epochs;
    uint64_t rng = o->seed ^ 0x6E616E6F636F6E76ull; /* "nanoconv" */
    for (int i = 0; i < n; i++) order[i] = i;
    const double t0 = nc_now();
    nc_train_progress p = {.epochs = o->epochs, .steps = steps, .test_correctness = -1.0};
    for (int e = 1; e <= o->epochs; e++) {
        for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
            const int j = (int)(next_random(&rng) % (uint64_t)(i + 1));
            const int tmp = order[i];
            order[i] = order[j];
            order[j] = tmp;
        }
        const double te = nc_now();
        double loss_sum = 0.0;
        p.epoch = e;
        p.epoch_done = 0;
        for (long s = 0; s < steps; s++) {
            const int i0 = (int)(s * o->batch), nb = n - i0 < o->batch ? n - i0 : o->batch;
            load_rows(t, train_img, order + i0, nb);
            for (int j = 0; j < nb; j++) labels[j] = train->labels[order[i0 + j]];
            const float lr = nc_train_lr(o, (e - 1) * steps + s, total_steps);
            const double loss = nc_trainer_gradient(t, labels, nb);
            if (!isfinite(loss)) {
                rc = nc_fail(err, NC_ERR_ARG, "the loss became %g at epoch %d, step %ld (learning rate %g too high?)",
                             loss, e, s + 1, (double)lr);
                goto done;
            }
            nc_trainer_update(t, lr);
            loss_sum += loss * nb;
            const double now = nc_now();
            p.step = s + 1;
            p.images = (long)i0 + nb;
            p.loss = loss_sum / (double)p.images;
            p.lr = lr;
            p.epoch_s = now - te;
            p.images_per_s = (double)p.images / (p.epoch_s > 0.0 ? p.epoch_s : 1e-9);
            p.elapsed_s = now - t0;
            const double done_images = (double)(e - 1) * n + (double)p.images;
            p.eta_s = p.elapsed_s / done_images * (total_images - done_images);
            if (progress) progress(&p, user);
        }
        if (test) p.test_correctness = evaluate(t, test_img, test->labels, test->n, pred);
        p.elapsed_s = nc_now() - t0;
        p.eta_s = p.elapsed_s / ((double)e * n) * (total_images - (double)e * n);
        p.epoch_done = 1;
        if (progress) progress(&p, user);
    }

done:
    free(order);
    free(labels);
    free(pred);
    free(train_owned);
    free(test_owned);
    return rc;
}
