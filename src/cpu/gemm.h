/*
 * Single-precision matrix product on the CPU: packed, cache-blocked, with
 * AVX-512 and AVX2 micro-kernels chosen at run time (cpu_features.h) and a
 * portable C one.
 *
 * The kernels work on column panels of V floats (V = the instruction set's
 * lanes): B is packed as (ceil(N / V), K, V), A as row panels (ceil(M / MR),
 * K, MR), and the micro-kernel adds an MR x 2V tile of C over a block of KC
 * steps of K. The cpu backend's activations are already such panels (a group
 * of V images, lane-innermost), so its dense layers call nc_sgemm_panels on
 * them with the weights packed once.
 */
#ifndef NC_GEMM_H
#define NC_GEMM_H

#include <stddef.h>

#include "cpu/cpu_features.h"

#ifdef __cplusplus
extern "C" {
#endif

/* C = alpha * op(A) * op(B) + beta * C, all row-major.
 * op(A) is (M, K): A is (M, K) with leading dimension lda, or (K, M) if trans_a.
 * op(B) is (K, N): B is (K, N) with leading dimension ldb, or (N, K) if trans_b.
 * C is (M, N) with leading dimension ldc. beta == 0 ignores C's old contents (NaN too).
 * Parallel (OpenMP) when called outside a parallel region, serial inside one. Uses the instruction set
 * nc_cpu_isa_select gives (the best one, if that fails). */
void nc_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
              int ldb, float beta, float *C, int ldc);

/* Rows of the micro-kernel's tile for an instruction set (its columns are 2 panels of nc_cpu_isa_lanes). */
int nc_sgemm_mr(nc_cpu_isa isa);

/* Floats of A packed for an instruction set: (ceil(M / MR), K, MR). */
size_t nc_sgemm_packed_a_floats(nc_cpu_isa isa, int M, int K);

/* Packs alpha * op(A), op(A) (M, K) as in nc_sgemm, into ap ((ceil(M / MR), K, MR), the last panel zero-padded). */
void nc_sgemm_pack_a(nc_cpu_isa isa, float *ap, int trans_a, int M, int K, float alpha, const float *A, int lda);

/* Y += Ap * X on np column panels of V = nc_cpu_isa_lanes(isa) lanes, serially (the caller parallelises).
 * ap is A packed by nc_sgemm_pack_a (M, K); x is (np, K, V) with panel stride xs floats; y is (np, M, V) with panel
 * stride ys floats. Every output is the sum of its K products in order of k, added to its old value. */
void nc_sgemm_panels(nc_cpu_isa isa, int M, int K, const float *ap, int np, const float *x, size_t xs, float *y,
                     size_t ys);

#ifdef __cplusplus
}
#endif
#endif
