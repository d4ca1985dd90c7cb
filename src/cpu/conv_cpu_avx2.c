/* The cpu backend's kernels for AVX2 + FMA: 8 images per vector. Compiled for that instruction set by the target
 * pragma alone, so the rest of the binary stays baseline x86-64; called only where nc_cpu_isa_select chose AVX2. */
#include <immintrin.h>

#pragma GCC target("avx2,fma")

typedef __m256 vf;
#define VL 8
#define SFX(name) name##_avx2
#define vf_zero() _mm256_setzero_ps()
#define vf_set1(f) _mm256_set1_ps(f)
#define vf_load(p) _mm256_loadu_ps(p)
#define vf_store(p, v) _mm256_storeu_ps((p), (v))
#define vf_fmadd(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define vf_add(a, b) _mm256_add_ps((a), (b))
#define vf_sub(a, b) _mm256_sub_ps((a), (b))
#define vf_mul(a, b) _mm256_mul_ps((a), (b))
#define vf_div(a, b) _mm256_div_ps((a), (b))
#define vf_max(a, b) _mm256_max_ps((a), (b))
#define vf_min(a, b) _mm256_min_ps((a), (b))
#define vf_and(a, b) _mm256_and_ps((a), (b))
#define vf_or(a, b) _mm256_or_ps((a), (b))
#define vf_xor(a, b) _mm256_xor_ps((a), (b))
#define vf_round(v) _mm256_round_ps((v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define vf_pow2(n)                                                                                                     \
    _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23))

/* 16 ymm registers: tm*tw accumulators + tm weights + 1 input <= 16, tm*tw <= 12. A row of tiles for each tm. */
/* clang-format off */
#define TILE_LIST(X)                                          \
    X(1, 1) X(1, 2) X(1, 3) X(1, 4) X(1, 6) X(1, 8) X(1, 12)  \
    X(2, 1) X(2, 2) X(2, 3) X(2, 4) X(2, 6)                   \
    X(3, 1) X(3, 2) X(3, 3) X(3, 4)                           \
    X(4, 1) X(4, 2)                                           \
    X(6, 1)
/* clang-format on */

#include "cpu/conv_cpu_simd.h"
