/*
 * Gradient checks: every layer's float32 backward pass (src/train/layers.c) against central finite differences
 * of a double-precision forward written here, independently of the code under test; then the whole chain of a
 * small network with every layer kind through nc_trainer_gradient, including the fused softmax + cross-entropy.
 *
 * For a layer f with inputs x and parameters w, b and a fixed random upstream gradient dy, the checked function
 * is L = sum(dy * f(x; w, b)), whose exact derivatives are what the backward pass computes. In double, with
 * step h = 1e-5, the central difference is exact to ~1e-10, so what is left is the float32 rounding of the
 * code under test: the checks allow 1e-4 relative to the largest derivative of the tensor.
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>

#include "nc_test.h"
#include "train/train.h"

#define STEP 1e-5

/* ------------------------------------------------ double-precision forward */

/* y (B, l->out) = layer l of x (B, l->in), with weights w and bias b (either may be NULL where unused). */
static void dforward(const nc_layer *l, const double *w, const double *b, double *y, const double *x, int B) {
    const int C = l->in.c, H = l->in.h, W = l->in.w, Ho = l->out.h, Wo = l->out.w;
    const size_t in = nc_shape_size(l->in), out = nc_shape_size(l->out);
    for (int n = 0; n < B; n++) {
        const double *xn = x + n * in;
        double *yn = y + n * out;
        switch (l->kind) {
        case NC_CONV:
            for (int m = 0; m < l->m; m++)
                for (int h = 0; h < Ho; h++)
                    for (int v = 0; v < Wo; v++) {
                        double acc = b ? b[m] : 0.0;
                        for (int c = 0; c < C; c++)
                            for (int p = 0; p < l->k; p++)
                                for (int q = 0; q < l->k; q++)
                                    acc += xn[(c * H + h + p) * W + v + q] * w[((m * C + c) * l->k + p) * l->k + q];
                        yn[(m * Ho + h) * Wo + v] = acc;
                    }
            break;
        case NC_TANH:
            for (size_t i = 0; i < out; i++) yn[i] = tanh(xn[i]);
            break;
        case NC_RELU:
            for (size_t i = 0; i < out; i++) yn[i] = xn[i] > 0 ? xn[i] : 0.0;
            break;
        case NC_SIGMOID:
            for (size_t i = 0; i < out; i++) yn[i] = 1.0 / (1.0 + exp(-xn[i]));
            break;
        case NC_MAXPOOL:
        case NC_AVGPOOL:
            for (int c = 0; c < C; c++)
                for (int h = 0; h < Ho; h++)
                    for (int v = 0; v < Wo; v++) {
                        double acc = l->kind == NC_MAXPOOL ? -INFINITY : 0.0;
                        for (int p = 0; p < l->p; p++)
                            for (int q = 0; q < l->p; q++) {
                                const double e = xn[(c * H + h * l->s + p) * W + v * l->s + q];
                                acc = l->kind == NC_MAXPOOL ? fmax(acc, e) : acc + e;
                            }
                        yn[(c * Ho + h) * Wo + v] = l->kind == NC_MAXPOOL ? acc : acc / (l->p * l->p);
                    }
            break;
        case NC_FLATTEN:
            for (size_t i = 0; i < out; i++) yn[i] = xn[i];
            break;
        case NC_DENSE:
            for (size_t o = 0; o < out; o++) {
                double acc = b ? b[o] : 0.0;
                for (size_t i = 0; i < in; i++) acc += w[o * in + i] * xn[i];
                yn[o] = acc;
            }
            break;
        case NC_SOFTMAX: {
            double mx = xn[0], sum = 0.0;
            for (size_t i = 1; i < out; i++) mx = fmax(mx, xn[i]);
            for (size_t i = 0; i < out; i++) sum += exp(xn[i] - mx);
            for (size_t i = 0; i < out; i++) yn[i] = exp(xn[i] - mx) / sum;
            break;
        }
        }
    }
}

/* ------------------------------------------------------------ test values */

static uint64_t rng_state = 12345;
static double uniform(double lo, double hi) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (double)(rng_state >> 40) / 16777216.0;
}

typedef enum {
    VALS_SMOOTH,   /* uniform in [-1.5, 1.5] */
    VALS_DISTINCT, /* a shuffled grid of step 0.01: no two within a finite-difference step (max pooling) */
    VALS_AWAY,     /* |v| in [0.05, 1]: no value near relu's kink */
} vals;

/* n float values of the given kind, also as doubles (exactly the same numbers). */
static void fill(float *f, double *d, size_t n, vals kind) {
    for (size_t i = 0; i < n; i++) {
        double v;
        if (kind == VALS_DISTINCT) {
            v = (double)i * 0.01 - (double)n * 0.005;
        } else if (kind == VALS_AWAY) {
            v = uniform(0.05, 1.0) * (uniform(0, 1) < 0.5 ? -1 : 1);
        } else {
            v = uniform(-1.5, 1.5);
        }
        f[i] = (float)v;
    }
    if (kind == VALS_DISTINCT) /* shuffle */
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = (size_t)uniform(0, (double)(i + 1));
            float t = f[i];
            f[i] = f[j];
            f[j] = t;
        }
    for (size_t i = 0; i < n; i++) d[i] = f[i];
}

/* --------------------------------------------------------- one-layer check */

typedef struct {
    const nc_layer *l;
    double *x, *w, *b, *dy, *y;
    int B;
} layer_case;

static double layer_objective(const layer_case *c) {
    dforward(c->l, c->w, c->b, c->y, c->x, c->B);
    double s = 0.0;
    for (size_t i = 0; i < (size_t)c->B * nc_shape_size(c->l->out); i++) s += c->dy[i] * c->y[i];
    return s;
}

/* Compares analytic (n floats) with the central differences of the objective in each of v's n values. */
static void compare_fd(const char *what, const float *analytic, double *v, size_t n, const layer_case *c) {
    double *num = malloc(n * sizeof *num), scale = 0.0, worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double keep = v[i];
        v[i] = keep + STEP;
        const double up = layer_objective(c);
        v[i] = keep - STEP;
        const double down = layer_objective(c);
        v[i] = keep;
        num[i] = (up - down) / (2 * STEP);
        scale = fmax(scale, fabs(num[i]));
    }
    for (size_t i = 0; i < n; i++) {
        const double e = fabs(analytic[i] - num[i]) / fmax(scale, 1e-3);
        worst = fmax(worst, e);
        CHECK_CLOSE(analytic[i], num[i], 1e-4 * fmax(scale, 1e-3), 0.0);
    }
    printf("  %-3s %5zu values, largest |d| %.3g, worst error %.2g of it\n", what, n, scale, worst);
    free(num);
}

/* Builds the model (input_text, layers_text), then checks layer li: forward against the double forward and
 * backward against finite differences in its input (if want_dx) and its parameters. */
static void check_layer(const char *label, const char *input_text, const char *layers_text, int li, int B, vals xkind) {
    nc_error err = {0};
    nc_model *m = NULL;
    if (nc_model_build(&m, "grad", input_text, layers_text, &err)) {
        fprintf(stderr, "%s: %s\n", label, err.msg);
        CHECK(0);
        return;
    }
    printf("%s: %s on %s, B = %d\n", label, layers_text, input_text, B);
    const nc_layer *l = &m->layers[li];
    const size_t nx = (size_t)B * nc_shape_size(l->in), ny = (size_t)B * nc_shape_size(l->out);
    const size_t nw = nc_layer_weight_count(l), nb = nc_layer_bias_count(l);
    float *xf = malloc(nx * sizeof *xf), *yf = malloc(ny * sizeof *yf), *dyf = malloc(ny * sizeof *dyf);
    float *dxf = malloc(nx * sizeof *dxf), *dwf = malloc((nw + 1) * sizeof *dwf), *dbf = malloc((nb + 1) * sizeof *dbf);
    double *x = malloc(nx * sizeof *x), *dy = malloc(ny * sizeof *dy), *y = malloc(ny * sizeof *y);
    double *w = malloc((nw + 1) * sizeof *w), *b = malloc((nb + 1) * sizeof *b);
    fill(xf, x, nx, xkind);
    fill(dyf, dy, ny, VALS_SMOOTH);
    if (nw) fill(l->weight, w, nw, VALS_SMOOTH);
    if (nb) fill(l->bias, b, nb, VALS_SMOOTH);

    nc_train_scratch s;
    CHECK(nc_train_scratch_init(&s, l, 1, B, omp_get_max_threads(), &err) == NC_OK);
    nc_train_forward(l, yf, xf, B, &s);
    dforward(l, nw ? w : NULL, nb ? b : NULL, y, x, B);
    double worst = 0.0;
    for (size_t i = 0; i < ny; i++) worst = fmax(worst, fabs(yf[i] - y[i]) / fmax(fabs(y[i]), 1.0));
    CHECK(worst < 1e-5);
    printf("  forward: worst error %.2g\n", worst);

    nc_train_backward(l, dxf, dwf, dbf, dyf, xf, yf, B, &s);
    layer_case c = {l, x, nw ? w : NULL, nb ? b : NULL, dy, y, B};
    compare_fd("dx", dxf, x, nx, &c);
    if (nw) compare_fd("dw", dwf, w, nw, &c);
    if (nb) compare_fd("db", dbf, b, nb, &c);

    /* Without dx the parameter gradients are the same. */
    if (nw) {
        float *dw2 = malloc(nw * sizeof *dw2), *db2 = malloc((nb + 1) * sizeof *db2);
        nc_train_backward(l, NULL, dw2, db2, dyf, xf, yf, B, &s);
        CHECK(memcmp(dw2, dwf, nw * sizeof *dw2) == 0);
        CHECK(nb == 0 || memcmp(db2, dbf, nb * sizeof *db2) == 0);
        free(dw2);
        free(db2);
    }
    nc_train_scratch_free(&s);
    free(xf), free(yf), free(dyf), free(dxf), free(dwf), free(dbf), free(x), free(dy), free(y), free(w), free(b);
    nc_model_free(m);
}

/* ------------------------------------------------- softmax + cross-entropy */

static double xent_d(const double *z, const uint8_t *labels, int B, int N) {
    double loss = 0.0;
    for (int b = 0; b < B; b++) {
        double mx = z[b * N], sum = 0.0;
        for (int j = 1; j < N; j++) mx = fmax(mx, z[b * N + j]);
        for (int j = 0; j < N; j++) sum += exp(z[b * N + j] - mx);
        loss += log(sum) + mx - z[b * N + labels[b]];
    }
    return loss;
}

static void check_xent(void) {
    enum { B = 5, N = 7 };
    float zf[B * N], dz[B * N];
    double z[B * N], worst = 0.0;
    const uint8_t labels[B] = {0, 6, 3, 3, 1};
    fill(zf, z, B * N, VALS_SMOOTH);
    z[2] = zf[2] = 40.0f; /* a large logit: the fused form must not overflow */
    const float scale = 1.0f / B;
    const double loss = nc_train_softmax_xent(dz, zf, labels, B, N, scale);
    CHECK_CLOSE(loss, xent_d(z, labels, B, N), 1e-6, 1e-6);
    for (int i = 0; i < B * N; i++) {
        const double keep = z[i];
        z[i] = keep + STEP;
        const double up = xent_d(z, labels, B, N);
        z[i] = keep - STEP;
        const double down = xent_d(z, labels, B, N);
        z[i] = keep;
        const double num = (up - down) / (2 * STEP) * scale;
        worst = fmax(worst, fabs(dz[i] - num));
        CHECK_CLOSE(dz[i], num, 1e-6, 1e-4);
    }
    printf("softmax + cross-entropy (fused): loss %.6f, worst gradient error %.2g\n", loss, worst);
}

/* ---------------------------------------------------- whole network check */

/* The mean cross-entropy of the model (params p, double) on x (B, input) against labels; a final softmax is the
 * loss's own, and without one the last layer's outputs are the logits. */
static double net_loss_d(const nc_model *m, const double *p, const double *x, const uint8_t *labels, int B) {
    size_t largest = nc_shape_size(m->input);
    for (int i = 0; i < m->n_layers; i++)
        if (nc_shape_size(m->layers[i].out) > largest) largest = nc_shape_size(m->layers[i].out);
    double *a = malloc((size_t)B * largest * sizeof *a), *c = malloc((size_t)B * largest * sizeof *c);
    memcpy(a, x, (size_t)B * nc_shape_size(m->input) * sizeof *a);
    const int n = m->n_layers - (m->layers[m->n_layers - 1].kind == NC_SOFTMAX);
    for (int i = 0; i < n; i++) {
        const nc_layer *l = &m->layers[i];
        dforward(l, l->weight ? p + (l->weight - m->params) : NULL, l->bias ? p + (l->bias - m->params) : NULL, c, a,
                 B);
        double *t = a;
        a = c;
        c = t;
    }
    const double loss = xent_d(a, labels, B, (int)nc_shape_size(m->layers[n - 1].out)) / B;
    free(a);
    free(c);
    return loss;
}

static void check_network(const char *input_text, const char *layers_text) {
    enum { B = 4 };
    nc_error err = {0};
    nc_model *m = NULL;
    nc_trainer *t = NULL;
    nc_train_opts o;
    nc_train_opts_default(&o);
    o.batch = B;
    o.seed = 7;
    CHECK(nc_model_build(&m, "net", input_text, layers_text, &err) == NC_OK);
    CHECK(nc_trainer_create(&t, m, 0, &o, &err) == NC_OK);
    if (!t) {
        fprintf(stderr, "%s\n", err.msg);
        nc_model_free(m);
        return;
    }
    const nc_model *tm = t->model;
    const size_t nin = (size_t)B * nc_shape_size(tm->input), np = tm->n_params;
    uint8_t *images = malloc(nin);
    for (size_t i = 0; i < nin; i++) images[i] = (uint8_t)uniform(0, 256);
    uint8_t labels[B];
    for (int j = 0; j < B; j++) labels[j] = (uint8_t)((2 * j + 2) % t->classes);
    nc_trainer_load_images(t, images, B);
    double *x = malloc(nin * sizeof *x), *p = malloc(np * sizeof *p);
    for (size_t i = 0; i < nin; i++) x[i] = t->acts[0][i];
    for (size_t i = 0; i < np; i++) p[i] = tm->params[i];
    const double loss = nc_trainer_gradient(t, labels, B);
    const double loss_d = net_loss_d(tm, p, x, labels, B);
    CHECK_CLOSE(loss, loss_d, 1e-6, 1e-5);

    double scale = 0.0, worst = 0.0;
    double *num = malloc(np * sizeof *num);
    for (size_t i = 0; i < np; i++) {
        const double keep = p[i];
        p[i] = keep + STEP;
        const double up = net_loss_d(tm, p, x, labels, B);
        p[i] = keep - STEP;
        const double down = net_loss_d(tm, p, x, labels, B);
        p[i] = keep;
        num[i] = (up - down) / (2 * STEP);
        scale = fmax(scale, fabs(num[i]));
    }
    for (size_t i = 0; i < np; i++) {
        worst = fmax(worst, fabs(t->grad[i] - num[i]) / scale);
        CHECK_CLOSE(t->grad[i], num[i], 1e-4 * scale, 0.0);
    }
    printf("network %s | %s: loss %.6f (double %.6f), %zu parameters, largest |d| %.3g, worst error %.2g of it\n",
           input_text, layers_text, loss, loss_d, np, scale, worst);
    free(num);
    free(images);
    free(x);
    free(p);
    nc_trainer_free(t);
    nc_model_free(m);
}

int main(void) {
    check_layer("conv, no bias", "2x7x6 unit", "conv 3 3", 0, 2, VALS_SMOOTH);
    check_layer("conv, bias", "3x6x8 unit", "conv 4 2 bias", 0, 3, VALS_SMOOTH);
    check_layer("conv, 1x1", "2x4x4 unit", "conv 3 1 bias", 0, 2, VALS_SMOOTH);
    check_layer("tanh", "2x5x5 unit", "tanh", 0, 2, VALS_SMOOTH);
    check_layer("relu", "2x5x5 unit", "relu", 0, 2, VALS_AWAY);
    check_layer("sigmoid", "2x5x5 unit", "sigmoid", 0, 2, VALS_SMOOTH);
    check_layer("maxpool 2 2", "2x6x6 unit", "maxpool 2 2", 0, 2, VALS_DISTINCT);
    check_layer("maxpool 3 2 (overlapping)", "2x7x7 unit", "maxpool 3 2", 0, 2, VALS_DISTINCT);
    check_layer("maxpool 4 4 (odd size)", "1x9x9 unit", "maxpool 4 4", 0, 2, VALS_DISTINCT);
    check_layer("avgpool 2 2", "2x6x6 unit", "avgpool 2 2", 0, 2, VALS_SMOOTH);
    check_layer("avgpool 3 1 (overlapping)", "2x5x5 unit", "avgpool 3 1", 0, 2, VALS_SMOOTH);
    check_layer("flatten", "2x3x3 unit", "flatten", 0, 2, VALS_SMOOTH);
    check_layer("dense, bias", "2x3x3 unit", "flatten; dense 5 bias", 1, 3, VALS_SMOOTH);
    check_layer("dense, no bias", "1x1x7 unit", "flatten; dense 4", 1, 2, VALS_SMOOTH);
    check_layer("softmax", "1x1x6 unit", "flatten; softmax", 1, 3, VALS_SMOOTH);
    check_xent();
    /* Every layer kind in one chain; raw input, so the trainer's input scale is in the path. */
    check_network("1x10x10 raw", "conv 3 3 bias; tanh; maxpool 2 2; conv 4 2; relu; avgpool 2 1; flatten; "
                                 "dense 6 bias; sigmoid; dense 5; softmax");
    /* A dense first layer after flatten, and a network without a final softmax. */
    check_network("1x6x6 unit", "flatten; dense 8 bias; tanh; dense 3 bias");
    return nc_test_done("test_train_grad");
}
