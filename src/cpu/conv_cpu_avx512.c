/* The cpu backend's kernels for AVX-512 (F, BW, DQ, VL): 16 images per vector. Compiled for that instruction set
 * by the target pragma alone, so the rest of the binary stays baseline x86-64; called only where
 * nc_cpu_isa_select chose AVX-512. */
#include <immintrin.h>

#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")

typedef __m512 vf;
#define VL 16
#define SFX(name) name##_avx512
#define vf_zero() _mm512_setzero_ps()
#define vf_set1(f) _mm512_set1_ps(f)
#define vf_load(p) _mm512_loadu_ps(p)
#define vf_store(p, v) _mm512_storeu_ps((p), (v))
#define vf_fmadd(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define vf_add(a, b) _mm512_add_ps((a), (b))
#define vf_sub(a, b) _mm512_sub_ps((a), (b))
#define vf_mul(a, b) _mm512_mul_ps((a), (b))
#define vf_div(a, b) _mm512_div_ps((a), (b))
#define vf_max(a, b) _mm512_max_ps((a), (b))
#define vf_min(a, b) _mm512_min_ps((a), (b))
#define vf_and(a, b) _mm512_and_ps((a), (b))
#define vf_or(a, b) _mm512_or_ps((a), (b))
#define vf_xor(a, b) _mm512_xor_ps((a), (b))
#define vf_round(v) _mm512_roundscale_ps((v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define vf_pow2(n)                                                                                                     \
    _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23))

/* 32 zmm registers: tm*tw accumulators + tm weights + 1 input <= 32, tm*tw <= 24. A row of tiles for each tm. */
/* clang-format off */
#define TILE_LIST(X)                                          \
    X(1, 1) X(1, 2) X(1, 3) X(1, 4) X(1, 6) X(1, 8) X(1, 12)  \
    X(2, 1) X(2, 2) X(2, 3) X(2, 4) X(2, 6) X(2, 8) X(2, 12)  \
    X(3, 1) X(3, 2) X(3, 3) X(3, 4) X(3, 6) X(3, 8)           \
    X(4, 1) X(4, 2) X(4, 3) X(4, 4) X(4, 6)                   \
    X(6, 1) X(6, 2) X(6, 3) X(6, 4)                           \
    X(8, 1) X(8, 2)
/* clang-format on */

#include "cpu/conv_cpu_simd.h"
