/* Single-precision matrix product on the CPU, row-major, OpenMP-parallel. */
#ifndef NC_GEMM_H
#define NC_GEMM_H

#ifdef __cplusplus
extern "C" {
#endif

/* C = alpha * op(A) * op(B) + beta * C, all row-major.
 * op(A) is (M, K): A is (M, K) with leading dimension lda, or (K, M) if trans_a.
 * op(B) is (K, N): B is (K, N) with leading dimension ldb, or (N, K) if trans_b.
 * C is (M, N) with leading dimension ldc. beta == 0 ignores C's old contents (NaN too). */
void nc_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
              int ldb, float beta, float *C, int ldc);

#ifdef __cplusplus
}
#endif
#endif
