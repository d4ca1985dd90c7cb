/*
 * Reference layers on the CPU: the oracle every other backend is tested
 * against. Simple and obviously correct: float32 with float accumulation in
 * the order written, no reassociation. Shapes are per batch of B images.
 */
#ifndef NC_REF_H
#define NC_REF_H

#include <stddef.h>

#include "core/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Valid cross-correlation, stride 1, no padding.
 * y is (B, M, H-K+1, W-K+1), x is (B, C, H, W), k is (M, C, K, K), bias is (M) or NULL.
 * y[b][m][h][w] = sum over c, p, q (in that order) of x[b][c][h+p][w+q] * k[m][c][p][q], then + bias[m]. */
void nc_ref_conv(float *y, const float *x, const float *k, const float *bias, int B, int C, int H, int W, int M, int K);

/* Elementwise over n values; y may equal x. */
void nc_ref_tanh(float *y, const float *x, size_t n);
void nc_ref_relu(float *y, const float *x, size_t n);
void nc_ref_sigmoid(float *y, const float *x, size_t n);

/* Pooling with window P and stride S, no padding, output (H-P)/S+1 (floor).
 * y is (B, C, Ho, Wo), x is (B, C, H, W). */
void nc_ref_maxpool(float *y, const float *x, int B, int C, int H, int W, int P, int S);
void nc_ref_avgpool(float *y, const float *x, int B, int C, int H, int W, int P, int S);

/* y = W x + b. y is (B, OUT), x is (B, IN), w is (OUT, IN), b is (OUT) or NULL. */
void nc_ref_dense(float *y, const float *x, const float *w, const float *b, int B, int IN, int OUT);

/* Softmax over each row; y may equal x. y and x are (B, N). */
void nc_ref_softmax(float *y, const float *x, int B, int N);

/* Runs one layer of the model on a batch: y is (B, l->out), x is (B, l->in). */
void nc_ref_layer_forward(const nc_layer *l, float *y, const float *x, int B);

#ifdef __cplusplus
}
#endif
#endif
