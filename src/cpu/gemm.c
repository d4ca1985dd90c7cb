/*
 * nc_sgemm: packed, cache-blocked SGEMM.
 *
 * Loop nest (Goto's, with the roles fixed by the panel layout of gemm.h):
 *   for each block of KC steps of K           (A's block, MC x KC, stays in L2)
 *     for each pair of B panels (2V columns)  (KC x 2V floats: 64 kB for AVX-512, in L2; 32 kB for AVX2)
 *       for each row panel of A (MR rows)     (streamed from L2)
 *         micro-kernel: C tile (MR, 2V) += A panel (KC, MR) x B panels (KC, 2V), in registers.
 * The micro-kernels prefetch A and B a fixed distance ahead of their loads (A_AHEAD, B_AHEAD).
 * The micro-kernels add their products to C one k at a time, so every output is its old value plus the K products in
 * order of k: the same order as the reference dense layer, whatever the blocking. AVX-512 (MR 14, V 16) and AVX2
 * (MR 6, V 8) do the same FMAs per output and give bitwise the same results; the portable kernel (MR 4, V 4)
 * multiplies and adds separately, as the reference does.
 */
#include "cpu/gemm.h"

#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/conv_cpu.h"

/* A block's steps of K and rows of M. KC was 256 until session 68: 512 halves the micro-kernel's loads and stores of
 * its C tile, and with the prefetches below it made the dense layers of the course's networks 4-7% faster in one round
 * on the build machine (2020's, of 32 outputs, 16%; docs/PERFORMANCE.md, "The dense layers, session 68"). */
#define KC 512
#define MC_ROWS 126
/* Bytes ahead of their loads of A and of B that the micro-kernels prefetch. A's row panels are K x MR floats apart
 * and B's K x V, so that a panel's k-block is a few pages, and the hardware's prefetchers do not cross a page: where
 * the operands do not stay in the last-level cache (the 2017 network's 500 x 7200 layer: 14 MB of weights, 7.4 MB of
 * activations a thread), every page began with misses. On one thread of the build machine that layer's GEMM went
 * from 195-212 GFLOP/s to 222-234 with A's prefetch alone; the shapes whose operands stay cached, within 1%. */
#define A_AHEAD 1536
#define B_AHEAD 2048

/* A hint to fetch the line `ahead` bytes past p, which may lie past p's array: a prefetch does not fault, and the
 * address is formed as an integer, not a pointer past the array. */
#define prefetch(p, ahead) _mm_prefetch((const char *)((uintptr_t)(p) + (ahead)), _MM_HINT_T0)

/* A micro-kernel: c0[i][j] += sum over k < kc of a[k][i] * b0[k][j] and c1[i][j] likewise with b1, for i < MR,
 * j < V. a is (kc, MR), b0 and b1 are (kc, V), c0 and c1 rows of V floats at stride ldc. */
typedef void (*ukernel_fn)(int kc, const float *a, const float *b0, const float *b1, float *c0, float *c1, size_t ldc);

#define SCALAR_MR 4
#define SV NC_SCALAR_LANES
/* The largest tile of any micro-kernel, (MR, 2V): AVX-512's 14 x 32 (block's edge buffer). */
#define TILE_MAX (14 * 2 * 16)

/* On nc_scalar_vec: a multiply and an add per lane, as the reference does, one row's broadcast a step. Written with
 * arrays of floats, GCC had vectorised this loop along k with shuffles and spills, at 18% of the portable path's peak
 * (session 69). */
static void ukernel_scalar(int kc, const float *a, const float *b0, const float *b1, float *c0, float *c1, size_t ldc) {
    nc_scalar_vec acc0[SCALAR_MR], acc1[SCALAR_MR];
    for (int i = 0; i < SCALAR_MR; i++) {
        memcpy(&acc0[i], c0 + i * ldc, sizeof(nc_scalar_vec));
        memcpy(&acc1[i], c1 + i * ldc, sizeof(nc_scalar_vec));
    }
    /* Two steps of k a pass: one step's loop (121 bytes) ran 5-7% slower when the linker put it at a 64-byte boundary
     * than at one plus 32 (the 2017 dense layer, 830-845 ms against 875-898); two steps' ran at 829-856 at both. */
#pragma GCC unroll 2
    for (int k = 0; k < kc; k++) {
        nc_scalar_vec x0, x1;
        memcpy(&x0, b0 + (size_t)k * SV, sizeof x0);
        memcpy(&x1, b1 + (size_t)k * SV, sizeof x1);
#pragma GCC unroll 4
        for (int i = 0; i < SCALAR_MR; i++) {
            const float w = a[(size_t)k * SCALAR_MR + i];
            acc0[i] += w * x0;
            acc1[i] += w * x1;
        }
    }
    for (int i = 0; i < SCALAR_MR; i++) {
        memcpy(c0 + i * ldc, &acc0[i], sizeof(nc_scalar_vec));
        memcpy(c1 + i * ldc, &acc1[i], sizeof(nc_scalar_vec));
    }
}

#pragma GCC push_options
#pragma GCC target("avx2,fma")
/* 6 x 16: 12 accumulators, 2 B vectors and a broadcast in the 16 ymm registers. The broadcast is _mm256_set1_ps of a
 * loaded float, as in the AVX-512 kernel: with _mm256_broadcast_ss (a load through a pointer) GCC 12 stored all twelve
 * accumulators to the stack on every step of k, and the kernel ran at under half the AVX2 peak. */
static void ukernel_avx2(int kc, const float *a, const float *b0, const float *b1, float *c0, float *c1, size_t ldc) {
    __m256 acc[6][2];
    for (int i = 0; i < 6; i++) {
        acc[i][0] = _mm256_loadu_ps(c0 + i * ldc);
        acc[i][1] = _mm256_loadu_ps(c1 + i * ldc);
    }
    for (int k = 0; k < kc; k++) {
        const __m256 x0 = _mm256_loadu_ps(b0 + (size_t)k * 8), x1 = _mm256_loadu_ps(b1 + (size_t)k * 8);
        prefetch(a + (size_t)k * 6, A_AHEAD);
        prefetch(b0 + (size_t)k * 8, B_AHEAD);
        prefetch(b1 + (size_t)k * 8, B_AHEAD);
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            const __m256 w = _mm256_set1_ps(a[(size_t)k * 6 + i]);
            acc[i][0] = _mm256_fmadd_ps(w, x0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(w, x1, acc[i][1]);
        }
    }
    for (int i = 0; i < 6; i++) {
        _mm256_storeu_ps(c0 + i * ldc, acc[i][0]);
        _mm256_storeu_ps(c1 + i * ldc, acc[i][1]);
    }
}
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")
/* 14 x 32: 28 accumulators, 2 B vectors and a broadcast in 31 of the 32 zmm registers. 14 rows, not 12, since session
 * 69: the same speed where M pads alike (the 2017 network's 500 rows: 36 panels against 42, both 504 rows), and 7%
 * faster on the zoo's 140-row layers, which 14 divides (12 pads them to 144, and runs the last panel through the
 * edge copy). */
static void ukernel_avx512(int kc, const float *a, const float *b0, const float *b1, float *c0, float *c1, size_t ldc) {
    __m512 acc[14][2];
    for (int i = 0; i < 14; i++) {
        acc[i][0] = _mm512_loadu_ps(c0 + i * ldc);
        acc[i][1] = _mm512_loadu_ps(c1 + i * ldc);
    }
    for (int k = 0; k < kc; k++) {
        const __m512 x0 = _mm512_loadu_ps(b0 + (size_t)k * 16), x1 = _mm512_loadu_ps(b1 + (size_t)k * 16);
        prefetch(a + (size_t)k * 14, A_AHEAD);
        prefetch(b0 + (size_t)k * 16, B_AHEAD);
        prefetch(b1 + (size_t)k * 16, B_AHEAD);
#pragma GCC unroll 14
        for (int i = 0; i < 14; i++) {
            const __m512 w = _mm512_set1_ps(a[(size_t)k * 14 + i]);
            acc[i][0] = _mm512_fmadd_ps(w, x0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(w, x1, acc[i][1]);
        }
    }
    for (int i = 0; i < 14; i++) {
        _mm512_storeu_ps(c0 + i * ldc, acc[i][0]);
        _mm512_storeu_ps(c1 + i * ldc, acc[i][1]);
    }
}
#pragma GCC pop_options

static ukernel_fn ukernel_for(nc_cpu_isa isa) {
    switch (isa) {
    case NC_ISA_AVX512: return ukernel_avx512;
    case NC_ISA_AVX2: return ukernel_avx2;
    default: return ukernel_scalar;
    }
}

int nc_sgemm_mr(nc_cpu_isa isa) {
    switch (isa) {
    case NC_ISA_AVX512: return 14;
    case NC_ISA_AVX2: return 6;
    default: return SCALAR_MR;
    }
}

size_t nc_sgemm_packed_a_floats(nc_cpu_isa isa, int M, int K) {
    const int MR = nc_sgemm_mr(isa);
    return (size_t)((M + MR - 1) / MR) * MR * (size_t)K;
}

/* Steps of k a packing loop takes at a time: a block of a panel (PACK_KB x MR or V floats) and the rows it reads stay
 * in L1, where a whole panel (7200 x 14 floats for the 2017 dense layer) does not. */
#define PACK_KB 64

/* Packs R rows of op(X), rows r0 .. r0 + R - 1 of n (those past n zero), k-major: dst[k * R + i] = alpha *
 * op(X)[r0 + i][k], where op(X)[r][k] is X[r * ld + k], or X[k * ld + r] if trans. Each element is alpha times X's,
 * whatever the loop order; the loops read X along its rows: a row of X gives a row of the panel (trans), or a row of
 * X gives one of its columns, PACK_KB steps of k at a time. Until session 69 the loops walked each panel row by row,
 * which for training's dense layers (2017: 500 x 7200 weights packed at every step) took longer than the products. */
static void pack_panel(float *dst, int R, int r0, int n, int K, int trans, float alpha, const float *X, int ld) {
    const int rows = n - r0 < R ? n - r0 : R;
    if (trans) {
        for (int k = 0; k < K; k++) {
            const float *src = X + (size_t)k * ld + r0;
            float *d = dst + (size_t)k * R;
            for (int i = 0; i < rows; i++) d[i] = alpha * src[i];
            for (int i = rows; i < R; i++) d[i] = alpha * 0.0f;
        }
        return;
    }
    for (int k0 = 0; k0 < K; k0 += PACK_KB) {
        const int kn = K - k0 < PACK_KB ? K - k0 : PACK_KB;
        for (int i = 0; i < R; i++) {
            float *d = dst + (size_t)k0 * R + i;
            if (i >= rows) { /* no pointer is formed past X */
                for (int k = 0; k < kn; k++) d[(size_t)k * R] = alpha * 0.0f;
                continue;
            }
            const float *src = X + (size_t)(r0 + i) * ld + k0;
            for (int k = 0; k < kn; k++) d[(size_t)k * R] = alpha * src[k];
        }
    }
}

/* Packs row panels [p0, p1) of alpha * op(A), each (K, MR). */
static void pack_a_panels(float *ap, int MR, int p0, int p1, int trans_a, int M, int K, float alpha, const float *A,
                          int lda) {
    for (int p = p0; p < p1; p++) pack_panel(ap + (size_t)p * K * MR, MR, p * MR, M, K, trans_a, alpha, A, lda);
}

void nc_sgemm_pack_a(nc_cpu_isa isa, float *ap, int trans_a, int M, int K, float alpha, const float *A, int lda) {
    const int MR = nc_sgemm_mr(isa);
    pack_a_panels(ap, MR, 0, (M + MR - 1) / MR, trans_a, M, K, alpha, A, lda);
}

/* Where the C tiles live: tile (panel g, row i) starts at base + g * cps + i * crs; rows at stride crs; columns of
 * panel g are valid below ncols - g * V. */
typedef struct {
    float *base;
    size_t cps, crs;
    int ncols;
} c_layout;

/* Copies the valid part (rows x cols) of a C tile between C, at c0, and edge, (MR, 2V) at row stride 2V: into edge
 * (to_c 0) or back (to_c 1), a panel's row at a time (panel h holds columns h V .. h V + n - 1). */
static void edge_copy(float *edge, float *c0, const c_layout *c, int rows, int cols, int V, int to_c) {
    for (int h = 0; h < 2; h++) {
        const int n = cols - h * V < V ? cols - h * V : V;
        for (int i = 0; n > 0 && i < rows; i++) {
            float *e = edge + i * 2 * V + h * V, *t = c0 + (size_t)i * c->crs + (size_t)h * c->cps;
            memcpy(to_c ? t : e, to_c ? e : t, n * sizeof(float));
        }
    }
}

/* One k-block of the tiles of panel pairs [g0, g1) (g0 even) and rows [i_lo, i_hi):
 * C += A[:, k0:k0+kc] B[k0:k0+kc, :] there. B's panels are at stride bs floats. */
static void block(ukernel_fn uk, int MR, int V, int M, int K, const float *ap, int np, const float *bp, size_t bs,
                  const c_layout *c, int k0, int kc, int g0, int g1, int i_lo, int i_hi) {
    float edge[TILE_MAX]; /* (MR, 2V) for tiles that overhang M or the valid columns */
    for (int g = g0; g < g1; g += 2) {
        const float *b0 = bp + (size_t)g * bs + (size_t)k0 * V;
        const float *b1 = g + 1 < np ? b0 + bs : b0; /* an odd last panel pairs with itself; its copy is dropped */
        for (int i0 = i_lo; i0 < i_hi; i0 += MR) {
            const float *a = ap + (size_t)(i0 / MR) * K * MR + (size_t)k0 * MR;
            float *c0 = c->base + (size_t)g * c->cps + (size_t)i0 * c->crs;
            const int rows = M - i0 < MR ? M - i0 : MR;
            const int cols = c->ncols - g * V < 2 * V ? c->ncols - g * V : 2 * V;
            if (rows == MR && cols == 2 * V) {
                uk(kc, a, b0, b1, c0, c0 + c->cps, c->crs);
                continue;
            }
            memset(edge, 0, sizeof edge);
            edge_copy(edge, c0, c, rows, cols, V, 0);
            uk(kc, a, b0, b1, edge, edge + V, 2 * (size_t)V);
            edge_copy(edge, c0, c, rows, cols, V, 1);
        }
    }
}

void nc_sgemm_panels(nc_cpu_isa isa, int M, int K, const float *ap, int np, const float *x, size_t xs, float *y,
                     size_t ys) {
    const int V = nc_cpu_isa_lanes(isa);
    const c_layout c = {y, ys, (size_t)V, np * V};
    const int MR = nc_sgemm_mr(isa), MC = MC_ROWS / MR * MR;
    for (int k0 = 0; k0 < K; k0 += KC)
        for (int i0 = 0; i0 < M; i0 += MC)
            block(ukernel_for(isa), MR, V, M, K, ap, np, x, xs, &c, k0, K - k0 < KC ? K - k0 : KC, 0, np, i0,
                  i0 + MC < M ? i0 + MC : M);
}

void nc_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
              int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * ldc;
        if (beta == 0.0f)
            memset(c, 0, (size_t)N * sizeof *c);
        else if (beta != 1.0f)
            for (int j = 0; j < N; j++) c[j] *= beta;
    }
    if (K <= 0 || alpha == 0.0f) return;

    nc_cpu_isa isa;
    if (nc_cpu_isa_select(&isa, NULL)) isa = nc_cpu_isa_detect();
    const int MR = nc_sgemm_mr(isa), V = nc_cpu_isa_lanes(isa);
    const int mp = (M + MR - 1) / MR, np = (N + V - 1) / V, npairs = (np + 1) / 2;
    float *ap = malloc(nc_sgemm_packed_a_floats(isa, M, K) * sizeof(float)); /* (mp, K, MR) */
    float *bp = malloc((size_t)np * K * V * sizeof(float));                  /* (np, K, V) */
    if (!ap || !bp) {
        /* Without memory for the packed copies, the unblocked product: slow, but the same result. */
        free(ap);
        free(bp);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                float acc = 0.0f;
                for (int k = 0; k < K; k++)
                    acc += (trans_a ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]) *
                           (trans_b ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
                C[(size_t)i * ldc + j] += alpha * acc;
            }
        return;
    }
    const ukernel_fn uk = ukernel_for(isa);
    const c_layout c = {C, (size_t)V, (size_t)ldc, N};
    const double flops = 2.0 * M * (double)N * K;
#pragma omp parallel if (!omp_in_parallel() && flops > 4e6)
    {
#pragma omp for schedule(static)
        for (int p = 0; p < mp; p++) pack_a_panels(ap, MR, p, p + 1, trans_a, M, K, alpha, A, lda);
#pragma omp for schedule(static)
        for (int g = 0; g < np; g++) /* panel g: op(B)'s columns g V .. g V + V - 1, (K, V), zero past column N */
            pack_panel(bp + (size_t)g * K * V, V, g * V, N, K, !trans_b, 1.0f, B, ldb);
        for (int k0 = 0; k0 < K; k0 += KC) {
            const int kc = K - k0 < KC ? K - k0 : KC;
            /* Threads split the tiles, so each writes its own; the implied barrier ends the k-block. Consecutive
             * tiles share a B panel pair. */
#pragma omp for schedule(static)
            for (int t = 0; t < npairs * mp; t++)
                block(uk, MR, V, M, K, ap, np, bp, (size_t)K * V, &c, k0, kc, 2 * (t / mp), 2 * (t / mp) + 2,
                      (t % mp) * MR, (t % mp) * MR + MR);
        }
    }
    free(ap);
    free(bp);
}
