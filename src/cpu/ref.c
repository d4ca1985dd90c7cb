#include "cpu/ref.h"

#include <math.h>

void nc_ref_conv(float *y, const float *x, const float *k, const float *bias, int B, int C, int H, int W, int M,
                 int K) {
    const int Ho = H - K + 1, Wo = W - K + 1;
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        for (int m = 0; m < M; m++) {
            float *yb = y + ((size_t)b * M + m) * Ho * Wo; // (Ho, Wo)
            for (int h = 0; h < Ho; h++) {
                for (int w = 0; w < Wo; w++) {
                    float acc = 0.0f;
                    for (int c = 0; c < C; c++) {
                        const float *xc = x + ((size_t)b * C + c) * H * W; // (H, W)
                        const float *kc = k + ((size_t)m * C + c) * K * K; // (K, K)
                        for (int p = 0; p < K; p++)
                            for (int q = 0; q < K; q++) acc += xc[(h + p) * W + (w + q)] * kc[p * K + q];
                    }
                    yb[h * Wo + w] = bias ? acc + bias[m] : acc;
                }
            }
        }
    }
}

void nc_ref_tanh(float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = tanhf(x[i]);
}

void nc_ref_relu(float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void nc_ref_sigmoid(float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = 1.0f / (1.0f + expf(-x[i]));
}

static void pool(float *y, const float *x, int B, int C, int H, int W, int P, int S, int is_max) {
    const int Ho = (H - P) / S + 1, Wo = (W - P) / S + 1;
    for (size_t bc = 0; bc < (size_t)B * C; bc++) {
        const float *xp = x + bc * H * W; // (H, W)
        float *yp = y + bc * Ho * Wo;     // (Ho, Wo)
        for (int h = 0; h < Ho; h++) {
            for (int w = 0; w < Wo; w++) {
                float acc = is_max ? -INFINITY : 0.0f;
                for (int p = 0; p < P; p++) {
                    for (int q = 0; q < P; q++) {
                        const float v = xp[(h * S + p) * W + (w * S + q)];
                        if (is_max)
                            acc = v > acc ? v : acc;
                        else
                            acc += v;
                    }
                }
                yp[h * Wo + w] = is_max ? acc : acc / (float)(P * P);
            }
        }
    }
}

void nc_ref_maxpool(float *y, const float *x, int B, int C, int H, int W, int P, int S) {
    pool(y, x, B, C, H, W, P, S, 1);
}

void nc_ref_avgpool(float *y, const float *x, int B, int C, int H, int W, int P, int S) {
    pool(y, x, B, C, H, W, P, S, 0);
}

void nc_ref_dense(float *y, const float *x, const float *w, const float *b, int B, int IN, int OUT) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < B; i++) {
        const float *xi = x + (size_t)i * IN; // (IN)
        for (int o = 0; o < OUT; o++) {
            const float *wo = w + (size_t)o * IN; // (IN)
            float acc = 0.0f;
            for (int j = 0; j < IN; j++) acc += wo[j] * xi[j];
            y[(size_t)i * OUT + o] = b ? acc + b[o] : acc;
        }
    }
}

void nc_ref_softmax(float *y, const float *x, int B, int N) {
    for (int i = 0; i < B; i++) {
        const float *xi = x + (size_t)i * N;
        float *yi = y + (size_t)i * N;
        float mx = xi[0];
        for (int j = 1; j < N; j++) mx = xi[j] > mx ? xi[j] : mx;
        float sum = 0.0f;
        for (int j = 0; j < N; j++) {
            yi[j] = expf(xi[j] - mx);
            sum += yi[j];
        }
        for (int j = 0; j < N; j++) yi[j] /= sum;
    }
}

void nc_ref_layer_forward(const nc_layer *l, float *y, const float *x, int B) {
    const size_t n = (size_t)B * nc_shape_size(l->out);
    switch (l->kind) {
    case NC_CONV: nc_ref_conv(y, x, l->weight, l->bias, B, l->in.c, l->in.h, l->in.w, l->m, l->k); break;
    case NC_TANH: nc_ref_tanh(y, x, n); break;
    case NC_RELU: nc_ref_relu(y, x, n); break;
    case NC_SIGMOID: nc_ref_sigmoid(y, x, n); break;
    case NC_MAXPOOL: nc_ref_maxpool(y, x, B, l->in.c, l->in.h, l->in.w, l->p, l->s); break;
    case NC_AVGPOOL: nc_ref_avgpool(y, x, B, l->in.c, l->in.h, l->in.w, l->p, l->s); break;
    case NC_FLATTEN:
        for (size_t i = 0; i < n; i++) y[i] = x[i];
        break;
    case NC_DENSE: nc_ref_dense(y, x, l->weight, l->bias, B, (int)nc_shape_size(l->in), l->m); break;
    case NC_SOFTMAX: nc_ref_softmax(y, x, B, (int)nc_shape_size(l->in)); break;
    }
}
