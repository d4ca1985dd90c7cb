/*
 * nc_sgemm: a plain, correct row-major SGEMM, parallel over the rows of C.
 * With B not transposed, each output row is a sum of scaled rows of B (a
 * contiguous axpy the compiler vectorises); with B transposed, each output is
 * a dot product of two rows.
 */
#include "cpu/gemm.h"

#include <stddef.h>

void nc_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
              int ldb, float beta, float *C, int ldc) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * ldc; // (N)
        if (trans_b) {
            for (int j = 0; j < N; j++) {
                const float *b = B + (size_t)j * ldb; // (K)
                float acc = 0.0f;
                for (int k = 0; k < K; k++) acc += (trans_a ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]) * b[k];
                c[j] = alpha * acc + (beta == 0.0f ? 0.0f : beta * c[j]);
            }
            continue;
        }
        if (beta == 0.0f)
            for (int j = 0; j < N; j++) c[j] = 0.0f;
        else if (beta != 1.0f)
            for (int j = 0; j < N; j++) c[j] *= beta;
        for (int k = 0; k < K; k++) {
            const float a = alpha * (trans_a ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]);
            const float *b = B + (size_t)k * ldb; // (N)
            for (int j = 0; j < N; j++) c[j] += a * b[j];
        }
    }
}
