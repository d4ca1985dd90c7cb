/*
 * Forward and backward passes of every layer kind for training, float32.
 *
 * conv: per image, im2col then nc_sgemm (single-threaded inside the parallel loop over images, since OpenMP
 * does not nest by default):
 *   forward   y_b (M, P)     = W (M, CKK) . col_b (CKK, P)           P = Ho*Wo, CKK = C*K*K
 *   backward  dW_b (M, CKK)  = dy_b (M, P) . col_b^T                  per image, then summed in image order
 *             dcol_b (CKK, P) = W^T . dy_b, scattered back by col2im  (skipped where dx is not wanted)
 * dense: one nc_sgemm over the whole batch (parallel inside):
 *   forward   y (B, OUT) = x (B, IN) . W^T + b
 *   backward  dW (OUT, IN) = dy^T . x,  db = column sums of dy,  dx (B, IN) = dy . W
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cpu/gemm.h"
#include "cpu/ref.h"
#include "train/train.h"

static size_t conv_col_floats(const nc_layer *l) {
    return (size_t)l->in.c * l->k * l->k * (size_t)l->out.h * l->out.w;
}

int nc_train_scratch_init(nc_train_scratch *s, const nc_layer *layers, int n, int B, int threads, nc_error *err) {
    memset(s, 0, sizeof *s);
    s->threads = threads > 0 ? threads : 1;
    s->batch = B;
    size_t per_image = 0;
    for (int i = 0; i < n; i++) {
        const nc_layer *l = &layers[i];
        if (l->kind != NC_CONV) continue;
        if (conv_col_floats(l) > s->col_floats) s->col_floats = conv_col_floats(l);
        const size_t np = nc_layer_weight_count(l) + nc_layer_bias_count(l);
        if (np > per_image) per_image = np;
    }
    size_t col_bytes, img_bytes;
    if (!nc_mul_ok(s->col_floats * sizeof(float), 2 * (size_t)s->threads, &col_bytes) ||
        !nc_mul_ok(per_image * sizeof(float), (size_t)B, &img_bytes))
        return nc_fail(err, NC_ERR_NOMEM, "training scratch size overflows (batch %d, %d threads)", B, threads);
    s->col = malloc(col_bytes ? col_bytes : 1);
    s->per_image = malloc(img_bytes ? img_bytes : 1);
    if (!s->col || !s->per_image) {
        nc_train_scratch_free(s);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory for training scratch (%zu + %zu bytes)", col_bytes, img_bytes);
    }
    return NC_OK;
}

void nc_train_scratch_free(nc_train_scratch *s) {
    free(s->col);
    free(s->per_image);
    memset(s, 0, sizeof *s);
}

/* --------------------------------------------------------------- conv */

/* col is (C*K*K, Ho*Wo): row (c, p, q) holds x[c][h+p][w+q] at column (h, w). x is (C, H, W). */
static void im2col(float *col, const float *x, int C, int H, int W, int K) {
    const int Ho = H - K + 1, Wo = W - K + 1;
    for (int c = 0; c < C; c++)
        for (int p = 0; p < K; p++)
            for (int q = 0; q < K; q++) {
                float *row = col + ((size_t)(c * K + p) * K + q) * Ho * Wo; // (Ho, Wo)
                for (int h = 0; h < Ho; h++)
                    memcpy(row + (size_t)h * Wo, x + ((size_t)c * H + h + p) * W + q, (size_t)Wo * sizeof(float));
            }
}

/* The adjoint of im2col: dx (C, H, W) = the sum of every dcol (C*K*K, Ho*Wo) entry at the pixel it came from. */
static void col2im(float *dx, const float *dcol, int C, int H, int W, int K) {
    const int Ho = H - K + 1, Wo = W - K + 1;
    memset(dx, 0, (size_t)C * H * W * sizeof(float));
    for (int c = 0; c < C; c++)
        for (int p = 0; p < K; p++)
            for (int q = 0; q < K; q++) {
                const float *row = dcol + ((size_t)(c * K + p) * K + q) * Ho * Wo; // (Ho, Wo)
                for (int h = 0; h < Ho; h++) {
                    float *d = dx + ((size_t)c * H + h + p) * W + q; // (Wo) of row h + p
                    const float *r = row + (size_t)h * Wo;
                    for (int w = 0; w < Wo; w++) d[w] += r[w];
                }
            }
}

static void conv_forward(const nc_layer *l, float *y, const float *x, int B, nc_train_scratch *s) {
    const int C = l->in.c, H = l->in.h, W = l->in.w, M = l->m, K = l->k;
    const int P = l->out.h * l->out.w, CKK = C * K * K;
#pragma omp parallel for schedule(static) num_threads(s->threads) if (B > 1)
    for (int b = 0; b < B; b++) {
        float *col = s->col + (size_t)omp_get_thread_num() * 2 * s->col_floats; // (CKK, P)
        float *yb = y + (size_t)b * M * P;                                      // (M, P)
        im2col(col, x + (size_t)b * C * H * W, C, H, W, K);
        nc_sgemm(0, 0, M, P, CKK, 1.0f, l->weight, CKK, col, P, 0.0f, yb, P);
        if (l->bias)
            for (int m = 0; m < M; m++)
                for (int p = 0; p < P; p++) yb[(size_t)m * P + p] += l->bias[m];
    }
}

/* Sums B per-image gradients g (B, n) in image order into the parameter gradients: dw gets the first nw
 * values, db the rest. Blocks of values go to the threads; each value's sum runs over b in order. */
static void sum_per_image(float *dw, float *db, const float *g, int B, size_t nw, size_t n, int threads) {
    const long blocks = (long)((n + NC_TRAIN_BLOCK - 1) / NC_TRAIN_BLOCK);
#pragma omp parallel for schedule(static) num_threads(threads) if (blocks > 1)
    for (long blk = 0; blk < blocks; blk++) {
        const size_t j0 = (size_t)blk * NC_TRAIN_BLOCK, j1 = j0 + NC_TRAIN_BLOCK < n ? j0 + NC_TRAIN_BLOCK : n;
        for (size_t j = j0; j < j1; j++) {
            float acc = 0.0f;
            for (int b = 0; b < B; b++) acc += g[(size_t)b * n + j];
            if (j < nw)
                dw[j] = acc;
            else
                db[j - nw] = acc;
        }
    }
}

static void conv_backward(const nc_layer *l, float *dx, float *dw, float *db, const float *dy, const float *x, int B,
                          nc_train_scratch *s) {
    const int C = l->in.c, H = l->in.h, W = l->in.w, M = l->m, K = l->k;
    const int P = l->out.h * l->out.w, CKK = C * K * K;
    const size_t nw = nc_layer_weight_count(l), n = nw + nc_layer_bias_count(l);
#pragma omp parallel for schedule(static) num_threads(s->threads) if (B > 1)
    for (int b = 0; b < B; b++) {
        float *col = s->col + (size_t)omp_get_thread_num() * 2 * s->col_floats; // (CKK, P)
        float *dcol = col + s->col_floats;                                      // (CKK, P)
        const float *dyb = dy + (size_t)b * M * P;                              // (M, P)
        float *g = s->per_image + (size_t)b * n;                                // (M, CKK) then (M)
        im2col(col, x + (size_t)b * C * H * W, C, H, W, K);
        nc_sgemm(0, 1, M, CKK, P, 1.0f, dyb, P, col, P, 0.0f, g, CKK);
        if (l->bias)
            for (int m = 0; m < M; m++) {
                float acc = 0.0f;
                for (int p = 0; p < P; p++) acc += dyb[(size_t)m * P + p];
                g[nw + m] = acc;
            }
        if (dx) {
            nc_sgemm(1, 0, CKK, P, M, 1.0f, l->weight, CKK, dyb, P, 0.0f, dcol, P);
            col2im(dx + (size_t)b * C * H * W, dcol, C, H, W, K);
        }
    }
    sum_per_image(dw, db, s->per_image, B, nw, n, s->threads);
}

/* ---------------------------------------------------------- dense */

static void dense_forward(const nc_layer *l, float *y, const float *x, int B) {
    const int IN = (int)nc_shape_size(l->in), OUT = l->m;
    nc_sgemm(0, 1, B, OUT, IN, 1.0f, x, IN, l->weight, IN, 0.0f, y, OUT);
    if (l->bias)
        for (int b = 0; b < B; b++)
            for (int o = 0; o < OUT; o++) y[(size_t)b * OUT + o] += l->bias[o];
}

static void dense_backward(const nc_layer *l, float *dx, float *dw, float *db, const float *dy, const float *x, int B) {
    const int IN = (int)nc_shape_size(l->in), OUT = l->m;
    nc_sgemm(1, 0, OUT, IN, B, 1.0f, dy, OUT, x, IN, 0.0f, dw, IN);
    if (l->bias)
        for (int o = 0; o < OUT; o++) {
            float acc = 0.0f;
            for (int b = 0; b < B; b++) acc += dy[(size_t)b * OUT + o];
            db[o] = acc;
        }
    if (dx) nc_sgemm(0, 0, B, IN, OUT, 1.0f, dy, OUT, l->weight, IN, 0.0f, dx, IN);
}

/* ---------------------------------------------------- activations */

/* tanh as a rational function of x: odd polynomial of degree 13 over even of degree 6 (the coefficients of
 * Eigen's float tanh), within 4e-7 of tanh, relative, over the clamped range, tiny x included. The clamp to
 * +-7.905 (where the fit ends and tanh is 1 in float) is an integer min on the magnitude's bits: a float compare
 * and select would be turned into a branch that keeps GCC (with -ftrapping-math) from vectorising the loop, and
 * the vector loop is ~20 times faster than tanhf. A NaN input clamps to +-1. */
static void fast_tanh(float *restrict y, const float *restrict x, size_t n) {
    const uint32_t clamp = 0x40fcf84fu; /* 7.90531110763549805f */
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], sizeof bits);
        const uint32_t mag = bits & 0x7fffffffu;
        const uint32_t clamped = (mag > clamp ? clamp : mag) | (bits & 0x80000000u);
        float v;
        memcpy(&v, &clamped, sizeof v);
        const float v2 = v * v;
        float p = -2.76076847742355e-16f;
        p = p * v2 + 2.00018790482477e-13f;
        p = p * v2 + -8.60467152213735e-11f;
        p = p * v2 + 5.12229709037114e-08f;
        p = p * v2 + 1.48572235717979e-05f;
        p = p * v2 + 6.37261928875436e-04f;
        p = p * v2 + 4.89352455891786e-03f;
        float q = 1.19825839466702e-06f;
        q = q * v2 + 1.18534705686654e-04f;
        q = q * v2 + 2.26843463243900e-03f;
        q = q * v2 + 4.89352518554385e-03f;
        y[i] = v * p / q;
    }
}

static void activation_forward(nc_layer_kind kind, float *y, const float *x, size_t n, int threads) {
    const long blocks = (long)((n + NC_TRAIN_BLOCK - 1) / NC_TRAIN_BLOCK);
#pragma omp parallel for schedule(static) num_threads(threads) if (blocks > 1)
    for (long blk = 0; blk < blocks; blk++) {
        const size_t i0 = (size_t)blk * NC_TRAIN_BLOCK, len = i0 + NC_TRAIN_BLOCK < n ? NC_TRAIN_BLOCK : n - i0;
        switch (kind) {
        case NC_TANH: fast_tanh(y + i0, x + i0, len); break;
        case NC_RELU: nc_ref_relu(y + i0, x + i0, len); break;
        default: nc_ref_sigmoid(y + i0, x + i0, len); break;
        }
    }
}

/* dx from dy and the activation's output y, all (n): tanh' = 1 - y^2, sigmoid' = y (1 - y), relu' = [y > 0]. */
static void activation_backward(nc_layer_kind kind, float *dx, const float *dy, const float *y, size_t n, int threads) {
    const long blocks = (long)((n + NC_TRAIN_BLOCK - 1) / NC_TRAIN_BLOCK);
#pragma omp parallel for schedule(static) num_threads(threads) if (blocks > 1)
    for (long blk = 0; blk < blocks; blk++) {
        const size_t i0 = (size_t)blk * NC_TRAIN_BLOCK, i1 = i0 + NC_TRAIN_BLOCK < n ? i0 + NC_TRAIN_BLOCK : n;
        switch (kind) {
        case NC_TANH:
            for (size_t i = i0; i < i1; i++) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
            break;
        case NC_RELU:
            for (size_t i = i0; i < i1; i++) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
            break;
        default:
            for (size_t i = i0; i < i1; i++) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
            break;
        }
    }
}

/* ------------------------------------------------------------- pooling */

static void pool_forward(const nc_layer *l, float *y, const float *x, int B, int threads) {
    const size_t xs = nc_shape_size(l->in), ys = nc_shape_size(l->out);
#pragma omp parallel for schedule(static) num_threads(threads) if ((size_t)B * xs > NC_TRAIN_BLOCK)
    for (int b = 0; b < B; b++) {
        if (l->kind == NC_MAXPOOL)
            nc_ref_maxpool(y + b * ys, x + b * xs, 1, l->in.c, l->in.h, l->in.w, l->p, l->s);
        else
            nc_ref_avgpool(y + b * ys, x + b * xs, 1, l->in.c, l->in.h, l->in.w, l->p, l->s);
    }
}

/* Max pooling passes each output's gradient to the first maximum of its window in the forward's scan order
 * (the one nc_ref_maxpool keeps); average pooling spreads it evenly. Windows may overlap (S < P): dx sums. */
static void pool_backward(const nc_layer *l, float *dx, const float *dy, const float *x, int B, int threads) {
    const int H = l->in.h, W = l->in.w, Ho = l->out.h, Wo = l->out.w, P = l->p, S = l->s;
    const float inv_area = 1.0f / (float)(P * P);
    const long planes = (long)B * l->in.c;
#pragma omp parallel for schedule(static) num_threads(threads) if ((size_t)planes * H * W > NC_TRAIN_BLOCK)
    for (long bc = 0; bc < planes; bc++) {
        const float *xp = x + (size_t)bc * H * W;     // (H, W)
        const float *dyp = dy + (size_t)bc * Ho * Wo; // (Ho, Wo)
        float *dxp = dx + (size_t)bc * H * W;         // (H, W)
        memset(dxp, 0, (size_t)H * W * sizeof(float));
        for (int h = 0; h < Ho; h++)
            for (int w = 0; w < Wo; w++) {
                const float g = dyp[h * Wo + w];
                const int base = h * S * W + w * S;
                if (l->kind == NC_MAXPOOL) {
                    int best = base;
                    for (int p = 0; p < P; p++)
                        for (int q = 0; q < P; q++)
                            if (xp[base + p * W + q] > xp[best]) best = base + p * W + q;
                    dxp[best] += g;
                } else {
                    for (int p = 0; p < P; p++)
                        for (int q = 0; q < P; q++) dxp[base + p * W + q] += g * inv_area;
                }
            }
    }
}

/* ------------------------------------------------------------- softmax */

/* Softmax's Jacobian-vector product: dx = y * (dy - sum_j y_j dy_j), per row. y, dy and dx are (B, N). */
static void softmax_backward(float *dx, const float *dy, const float *y, int B, int N) {
    for (int b = 0; b < B; b++) {
        const float *yb = y + (size_t)b * N, *dyb = dy + (size_t)b * N;
        float dot = 0.0f;
        for (int j = 0; j < N; j++) dot += yb[j] * dyb[j];
        for (int j = 0; j < N; j++) dx[(size_t)b * N + j] = yb[j] * (dyb[j] - dot);
    }
}

double nc_train_softmax_xent(float *dz, const float *z, const uint8_t *labels, int B, int N, float scale) {
    double loss = 0.0;
    for (int b = 0; b < B; b++) {
        const float *zb = z + (size_t)b * N; // (N)
        float *db = dz + (size_t)b * N;      // (N)
        float mx = zb[0];
        for (int j = 1; j < N; j++) mx = zb[j] > mx ? zb[j] : mx;
        float sum = 0.0f;
        for (int j = 0; j < N; j++) {
            db[j] = expf(zb[j] - mx);
            sum += db[j];
        }
        loss += log((double)sum) + (double)mx - (double)zb[labels[b]];
        for (int j = 0; j < N; j++) db[j] = (db[j] / sum - (j == labels[b] ? 1.0f : 0.0f)) * scale;
    }
    return loss;
}

/* -------------------------------------------------------------- dispatch */

void nc_train_forward(const nc_layer *l, float *y, const float *x, int B, nc_train_scratch *s) {
    const size_t n = (size_t)B * nc_shape_size(l->out);
    switch (l->kind) {
    case NC_CONV: conv_forward(l, y, x, B, s); break;
    case NC_TANH:
    case NC_RELU:
    case NC_SIGMOID: activation_forward(l->kind, y, x, n, s->threads); break;
    case NC_MAXPOOL:
    case NC_AVGPOOL: pool_forward(l, y, x, B, s->threads); break;
    case NC_FLATTEN:
        if (y != x) memcpy(y, x, n * sizeof(float));
        break;
    case NC_DENSE: dense_forward(l, y, x, B); break;
    case NC_SOFTMAX: nc_ref_softmax(y, x, B, (int)nc_shape_size(l->in)); break;
    }
}

void nc_train_backward(const nc_layer *l, float *dx, float *dw, float *db, const float *dy, const float *x,
                       const float *y, int B, nc_train_scratch *s) {
    const size_t n = (size_t)B * nc_shape_size(l->out);
    switch (l->kind) {
    case NC_CONV: conv_backward(l, dx, dw, db, dy, x, B, s); break;
    case NC_DENSE: dense_backward(l, dx, dw, db, dy, x, B); break;
    default:
        if (!dx) break; /* layers without parameters have nothing else to compute */
        switch (l->kind) {
        case NC_TANH:
        case NC_RELU:
        case NC_SIGMOID: activation_backward(l->kind, dx, dy, y, n, s->threads); break;
        case NC_MAXPOOL:
        case NC_AVGPOOL: pool_backward(l, dx, dy, x, B, s->threads); break;
        case NC_SOFTMAX: softmax_backward(dx, dy, y, B, (int)nc_shape_size(l->in)); break;
        default:
            if (dx != dy) memcpy(dx, dy, n * sizeof(float)); /* flatten */
            break;
        }
    }
}
