/*
 * The cpu backend's portable C kernels: any processor, NC_SCALAR_LANES images per group. Per lane they do the
 * reference's operations in the reference's order (the sum over c, p, q of separate multiplies and adds, the
 * bias, libm's tanhf and expf), so this path reproduces cpu-ref bit for bit except where max pooling is taken
 * before the activation (equal wherever tanhf and expf are monotone).
 */
#include <math.h>
#include <string.h>

#include "core/model.h"
#include "cpu/conv_cpu.h"

#define SV NC_SCALAR_LANES

static float act1(int kind, float x) {
    switch (kind) {
    case NC_TANH: return tanhf(x);
    case NC_RELU: return x > 0.0f ? x : 0.0f;
    case NC_SIGMOID: return 1.0f / (1.0f + expf(-x));
    default: return x;
    }
}

void nc_act_scalar(int kind, float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = act1(kind, x[i]);
}

/* Columns of a conv row summed at once: independent sums, so that the adds do not wait on each other. One column at a
 * time, each tap's add waited for the one before, at 11-17% of the path's peak (session 69). */
#define COLS 8

/* Conv columns w0 .. w0 + n - 1 (n <= COLS) of row h of one channel into band (Wn, SV): band[w][v] = the sum over c,
 * p, q in that order of x[c][h+p][w+q][v] * k[c][p][q]. x is (C, H, W, SV); k is (C, K, K). */
static inline __attribute__((always_inline)) void conv_cols(const nc_conv_desc *d, float *band, const float *x,
                                                            const float *k, int h, int w0, const int n) {
    const int K = d->K;
    nc_scalar_vec acc[COLS];
    for (int j = 0; j < n; j++) acc[j] = (nc_scalar_vec){0};
    for (int c = 0; c < d->C; c++)
        for (int p = 0; p < K; p++) {
            const float *xr = x + (((size_t)c * d->H + h + p) * d->W + w0) * SV; /* row h+p from column w0 */
            const float *kr = k + ((size_t)c * K + p) * K;
            for (int q = 0; q < K; q++) {
                const float kq = kr[q];
                for (int j = 0; j < n; j++) {
                    nc_scalar_vec xv;
                    memcpy(&xv, xr + (size_t)(q + j) * SV, sizeof xv);
                    acc[j] += xv * kq;
                }
            }
        }
    for (int j = 0; j < n; j++) memcpy(band + (size_t)(w0 + j) * SV, &acc[j], sizeof acc[j]);
}

/* One conv row: COLS columns at a time, then the columns left in one block of their own (a block for each count, so
 * that its loops are unrolled as the full blocks' are; moving the last block back instead, to end at Wn, computed up
 * to a third of a row twice: 2019 spring's second layer, 18 columns, 24). */
static void conv_row(const nc_conv_desc *d, float *band, const float *x, const float *k, int h) {
    int w0 = 0;
    for (; w0 + COLS <= d->Wn; w0 += COLS) conv_cols(d, band, x, k, h, w0, COLS);
    switch (d->Wn - w0) {
    case 7: conv_cols(d, band, x, k, h, w0, 7); break;
    case 6: conv_cols(d, band, x, k, h, w0, 6); break;
    case 5: conv_cols(d, band, x, k, h, w0, 5); break;
    case 4: conv_cols(d, band, x, k, h, w0, 4); break;
    case 3: conv_cols(d, band, x, k, h, w0, 3); break;
    case 2: conv_cols(d, band, x, k, h, w0, 2); break;
    case 1: conv_cols(d, band, x, k, h, w0, 1); break;
    default: break;
    }
}

void nc_conv_group_scalar(const nc_conv_desc *d, float *y, const float *x, float *band) {
    const int P = d->P, S = d->S, Wn = d->Wn, T = d->C * d->K * d->K;
    for (int m = 0; m < d->M; m++) {
        const float *k = d->kp + (size_t)m * T; /* tm is 1 here: the packed weights are k itself, (M, C, K, K) */
        const float b = d->bias ? d->bias[m] : 0.0f;
        for (int hp = 0; hp < d->Hp; hp++) {
            for (int r = 0; r < P; r++) conv_row(d, band + (size_t)r * Wn * SV, x, k, hp * S + r);
            float *yr = y + ((size_t)m * d->Hp + hp) * d->Wp * SV; /* (Wp, SV) */
            for (int wp = 0; wp < d->Wp; wp++)
                for (int v = 0; v < SV; v++) {
                    const float *bw = band + (size_t)wp * S * SV + v; /* window's top-left; band is (P, Wn, SV) */
                    float o;
                    if (d->pool == NC_AVGPOOL) {
                        o = 0.0f;
                        for (int r = 0; r < P; r++)
                            for (int j = 0; j < P; j++) {
                                float e = bw[((size_t)r * Wn + j) * SV];
                                if (d->bias) e += b;
                                o += act1(d->act, e);
                            }
                        o /= (float)(P * P);
                    } else {
                        o = bw[0];
                        for (int r = 0; r < P; r++)
                            for (int j = 0; j < P; j++) {
                                const float e = bw[((size_t)r * Wn + j) * SV];
                                o = e > o ? e : o;
                            }
                        if (d->bias) o += b;
                        o = act1(d->act, o);
                    }
                    yr[(size_t)wp * SV + v] = o;
                }
        }
    }
}
