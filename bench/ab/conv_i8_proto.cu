/*
 * A prototype, not in the library: 2018 spring's second layer (C 6 -> M 16, K 5) as an fp32 convolution on the int8
 * tensor cores (wgmma, sm_90a), its products summed exactly in integers: dense_i8.cu's splitting of Ozaki's scheme,
 * as an implicit GEMM. Built and timed by bench/ab/conv_i8_one.cu (docs/PERFORMANCE-LOG.md, 2026-11-28 10:04-10:33).
 * It gives the right sums and loses to version 15, so it stayed here.
 *
 * The slices. Each image (all of its C H W inputs) and each output channel's weights (C K K) get a power-of-two scale
 * and are cut into three signed 8-bit slices in base 254, as dense_i8.cu's rows are (the same integer arithmetic,
 * ci8_slice): v = 2^(e - 7) (s0 + s1 / 254 + s2 / 254^2) + r, each value held to about 2^-23 of its image's (or
 * channel's) largest. The weights are sliced by every block as it starts, the image as its block stages it.
 *
 * The GEMM, with A from registers (ci8_conv_kernel). Rows are output positions (64 a tile: a warpgroup's wgmma
 * m64nNk32), columns the weights' slices by output channel (w slice i of channel m is column 16 i + m), k the taps by
 * channels. The input is staged channel-last, a pixel 8 bytes (channels past C zero) a slice: k step s, lane t holds
 * tap 4 s + t, channels 0..3 in the first 16-byte half and 4..7 in the second (the weights in the same order; taps
 * past K K have zero weights), four 4-byte shared loads a k step from the row's pixel plus the tap's offset, so no
 * im2col copy is made. The six products that matter are three MMAs a k step: x's slice 0 by w's slices 0, 1, 2
 * (N 48), x's slice 1 by w's 0, 1 (N 32), x's slice 2 by w's 0 (N 16); level l = i + j sums the products of x slice j
 * and w slice i, exactly, in int32. Then y = 2^(ex + ew - 14) (254^2 L0 + 254 L1 + L2) / 254^2 + b: the integer in
 * int64 (exact), rounded once to fp32, then one fma by the scale (itself rounded) and the bias (CI8_F64: in fp64,
 * rounded once, 3% slower and no more accurate here).
 * With both operands in shared memory (ci8s_conv_kernel, below): A read by the tensor cores through descriptors whose
 * rows overlap. With A by ldmatrix and x's slices as the bytes of one integer (ci8l_conv_kernel, below; BYTES in
 * ci8_conv_kernel): fewer instructions a tile and a third of the slicing's. LEAN: one slice's fragments at a time.
 *
 * Why: wgmma with both operands in shared memory reads them at 128 bytes a cycle an SM (bench/ab/wgmma_i8.cu, H200):
 * positions by N 48 + 32 + 16 reach 2,730 multiply-adds a cycle an SM of the 4,096, where A from registers at N 48
 * reaches 4,094 with two warpgroups an SM. By that count a tile of 64 positions is 7 k steps of about 55 cycles on
 * the tensor cores (A from registers), 11 tiles an image: 0.16 ms for 10000 images on 132 SMs, with the shared
 * loads of A (about 1,900 wavefronts an image) and the weights' reads by the MMAs beside it.
 *
 * What it did (NVIDIA H200, B 10000, bench/ab/conv_i8_one.cu's variants; errors on the first 256 images against double
 * sums, over sum |x w|; bench/results/gpu-2026-11-28-s56-i8conv.log):
 *   A from registers (4-byte loads), 1 warpgroup a block, 3 blocks an SM       0.538 ms  (variant 1)
 *     one slice's fragments at a time, 4 blocks an SM (116 registers)         0.521     (12)
 *     and x's slices as bytes (ci8l_conv_kernel's), 4 blocks an SM            0.509     (15)
 *   A by ldmatrix, x's slices as bytes (ci8l_conv_kernel), 2 blocks an SM      0.578     (11)
 *   both operands from shared memory (ci8s_conv_kernel), 2 warpgroups x 2     0.640     (6)
 *   version 15 (Winograd, fp32 FFMA) on the same layer                        0.476     (session 53's conv_one)
 *   errors: base-254 slices mean 1.84e-8, largest 1.21e-7; byte slices 2.78e-8 and 1.75e-7; the sequential fmaf
 *   sums' 1.53e-8 and 2.67e-7 (150 terms: fp32's own sums are short here, and the slices' rounding weighs as much)
 * Where the time goes (CI8_PROFILE: clock64 around each phase of a block, cycles an image, variant 1 / 15): the wait
 * for the staged image 108 / 163, the image's largest value 1,342 / 1,778, its slicing 13,021 / 4,248 (base-254
 * integer slicing against bytes and permutes), the scales 837 / 1,212, the tiles 19,914 / 32,422. Making the slicing 3
 * times faster gave the tiles that time: the SM is busy, not waiting. Variant 15 without its MMAs (CI8_ABL_NOMMA)
 * takes 0.321 ms, without its epilogue (CI8_ABL_NOEPI) 0.399, without the fragments' loads (CI8_ABL_NOLOAD) 0.442:
 * what is not the MMAs already costs more than a quarter of cuDNN (0.266 ms on the H200), and the MMAs (0.16 ms
 * at the tensor cores' rate, bench/ab/wgmma_i8.cu's RS mix: 3,706 multiply-adds a cycle an SM) do not overlap it.
 * ncu (B 3000): the tensor pipe active 27% (variant 1) and 33% (6) of the cycles, issue slots 44% and 49%, 2.9 and 3.9
 * warps a scheduler; 24,400 and 32,000 warp instructions an image, where the MMAs are 924 and 1,176 (an epilogue of
 * int64 sums, conversion and stores, about 150 instructions a warp a tile, and the slicing, fragments and
 * descriptors are the rest).
 * To come under a quarter of cuDNN this would need warps specialized by phase (the slicing and the epilogues of some
 * warps under the MMAs of others) and about half of today's non-MMA instructions; not built.
 *
 * A block of NWG warpgroups takes images in turn: the bulk-copy engine stages the next images' floats (NB buffers,
 * each on an mbarrier), the block slices the staged image into its three int8 planes, and its warpgroups take the
 * image's tiles of 64 positions in turn. Non-finite input: an image holding inf or NaN gives NaN outputs, as does a
 * channel whose weights hold one.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "cuda/conv_ladder.h" /* NC_CONV_LAUNCHER_ARGS */
#include "cuda/cuda_check.h"
#include "cuda/hopper.cuh"

#ifdef CI8_ABL_NOMMA /* an ablation of bench/ab/conv_i8_one.cu: the kernels without their MMAs */
#define WG8_ABLATE
#endif
#include "wgmma_s8.cuh" /* the int8 wgmma wrappers (wg8_rsN, wg8_ssN) and wg8_desc */

#define CI8_M 16                    /* output channels */
#define CI8_MAXC 8                  /* channels a staged pixel (8 bytes a slice) */
#define CI8_BAD INT_MIN             /* the scale of an image or channel holding inf or NaN */
#define CI8_COMBINE (254.0 * 254.0) /* L0's weight in the integer sum of the levels */

/* The three slices of v under the scale 2^(e - 7), dense_i8.cu's arithmetic: t = v 2^(7 - e) (exact), T = rint(t
 * 2^20), then slice q = round(T_q / 2^20), halves up, T_(q+1) = 254 (T_q - 2^20 slice q), exactly. The factor 2^(27
 * - e) is taken as two powers of two (ci8_pow2), each a normal float: v times them is exact, or too small to round
 * to anything but 0. */
__device__ __forceinline__ void ci8_slice(int (&s)[3], float v, float f1, float f2) {
    int T = __float2int_rn(v * f1 * f2);
#pragma unroll
    for (int l = 0; l < 3; l++) {
        const int d = (T + (1 << 19)) >> 20;
        s[l] = d;
        T = (T - d * (1 << 20)) * 254;
    }
}

/* 2^(27 - e) as two normal floats (e from ci8_exponent: 27 - e within [-102, 175]). */
__device__ __forceinline__ void ci8_pow2(float &f1, float &f2, int e) {
    const int sh = 27 - e, h = sh / 2;
    f1 = __int_as_float((127 + h) << 23);
    f2 = __int_as_float((127 + sh - h) << 23);
}

/* The scale's exponent for a largest magnitude m (0 where m is 0): the least e with m 2^(7 - e) <= 127. */
__device__ __forceinline__ int ci8_exponent(float m) {
    int e = 0;
    if (m > 0.0f) {
        e = ilogbf(m) + 1;
        if (ldexpf(m, 7 - e) > 127.0f) e++;
    }
    return e;
}

/* Keeps the compiler from moving accesses of the registers across the wgmma fences and waits. */
template <int R> __device__ __forceinline__ void ci8_hold(int (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; i++) asm volatile("" : "+r"(d[i])::"memory");
}

/* The bulk copy of bytes (a multiple of 16) from global src to shared dst, complete_tx on bar. */
__device__ __forceinline__ void ci8_bulk(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}

/* The shared memory of a block: the weights' slices (the B operand: 6 groups of 8 rows, SBO apart, each k step's
 * two 16-byte chunks 128 bytes apart), the image's three slices (XP bytes each), two staging buffers of FB bytes.
 */
__device__ __forceinline__ void ci8l_ldsm4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* x's value v as T = rint(v 2^(31 - e)) + 128 (f1 f2 = 2^(31 - e), two normal floats: exact, or too small to
 * matter).
 */
__device__ __forceinline__ uint32_t ci8l_bytes(float v, float f1, float f2) {
    return (uint32_t)(__float2int_rn(v * f1 * f2) + 128);
}

/* 2^(31 - e) as two normal floats (e within [-148, 129]). */
__device__ __forceinline__ void ci8l_pow2(float &f1, float &f2, int e) {
    const int sh = 31 - e, h = sh / 2;
    f1 = __int_as_float((127 + h) << 23);
    f2 = __int_as_float((127 + sh - h) << 23);
}

/* ------------------------------------------------------------------ what the three kernels share */

/* A block's start: its NB staging mbarriers, bytes [0, zero) of its shared memory zeroed, and the copies of its
 * first NB images (block b's n-th: image b + n gridDim.x) into the staging buffers at fb, fbn bytes apart. */
template <int NB>
__device__ __forceinline__ void ci8_start(unsigned char *sm, uint32_t s0, uint32_t bars, uint32_t zero, uint32_t fb,
                                          uint32_t fbn, const float *x, int B, size_t img_floats) {
    const int tid = threadIdx.x, NT = blockDim.x;
    if (tid == 0) {
        for (int n = 0; n < NB; n++) nc_bar_init(bars + 8 * n, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    for (uint32_t i = 16 * tid; i < zero; i += 16 * NT) *(uint4 *)(sm + i) = make_uint4(0, 0, 0, 0);
    __syncthreads();
    if (tid == 0)
        for (int n = 0; n < NB; n++) {
            const int img = blockIdx.x + n * gridDim.x;
            if (img >= B) break;
            nc_bar_arrive_tx(bars + 8 * n, (uint32_t)(img_floats * 4));
            ci8_bulk(s0 + fb + n * fbn, x + (size_t)img * img_floats, (uint32_t)(img_floats * 4), bars + 8 * n);
        }
}

/* The weights' slices into the B operand at sm (row 16 i + m for w slice i of channel m, 8-row groups sbo apart), a
 * warp a channel at a time; ew[m] their exponents (CI8_BAD where the channel holds inf or NaN: its slices stay 0).
 * PAIRS: chunk c = ky CR + kx / 2 of the pair layout (byte (kx % 2) 8 + ch); else k step tap / 4, lane tap % 4,
 * half ch / 4 (byte 4 (tap % 4) + ch % 4). Ends with the proxy fence the tensor cores' reads need (a barrier must
 * follow).
 */
template <int K, bool PAIRS>
__device__ __forceinline__ void ci8_weights(unsigned char *sm, const float *k, int C, uint32_t sbo, int *ew) {
    constexpr int T = K * K, CR = (K + 1) / 2;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x / 32;
    for (int m = warp; m < CI8_M; m += nw) {
        const float *km = k + (size_t)m * C * T;
        float mx = 0.0f;
        int bad = 0;
        for (int v = lane; v < C * T; v += 32) {
            const float a = fabsf(km[v]);
            bad |= !(a <= 3.402823466e38f);
            mx = fmaxf(mx, a);
        }
        for (int o = 16; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(~0u, mx, o));
        bad = __any_sync(~0u, bad);
        const int e = ci8_exponent(mx);
        float f1, f2;
        ci8_pow2(f1, f2, e);
        if (lane == 0) ew[m] = bad ? CI8_BAD : e;
        for (int v = lane; v < C * T && !bad; v += 32) {
            const int ch = v / T, tap = v % T, ky = tap / K, kx = tap % K;
            const uint32_t at = PAIRS ? (ky * CR + kx / 2) * 128 + (kx % 2) * 8 + ch
                                      : (2 * (tap / 4) + ch / 4) * 128 + 4 * (tap % 4) + ch % 4;
            int q[3];
            ci8_slice(q, km[v], f1, f2);
#pragma unroll
            for (int i = 0; i < 3; i++) {
                const int n = 16 * i + m;
                sm[(n / 8) * sbo + (n % 8) * 16 + at] = (unsigned char)q[i];
            }
        }
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/* The staged image's largest magnitude (n4 float4 at f) as its exponent, or CI8_BAD where it holds inf or NaN;
 * every thread of the block calls it (red: a float a warp). The barrier in it also tells that every warp is done
 * with the previous image. */
__device__ __forceinline__ int ci8_image_exponent(const float *f, int n4, float *red) {
    const int tid = threadIdx.x, NT = blockDim.x;
    float mx = 0.0f;
    int bad = 0;
    for (int i = tid; i < n4; i += NT) {
        const float4 q = ((const float4 *)f)[i];
        const float a = fmaxf(fmaxf(fabsf(q.x), fabsf(q.y)), fmaxf(fabsf(q.z), fabsf(q.w)));
        bad |= !(fabsf(q.x) <= 3.402823466e38f && fabsf(q.y) <= 3.402823466e38f && fabsf(q.z) <= 3.402823466e38f &&
                 fabsf(q.w) <= 3.402823466e38f);
        mx = fmaxf(mx, a);
    }
    for (int o = 16; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(~0u, mx, o));
    if ((tid & 31) == 0) red[tid >> 5] = mx;
    bad = __syncthreads_or(bad);
    mx = 0.0f;
    for (int i = 0; i < NT / 32; i++) mx = fmaxf(mx, red[i]);
    return bad ? CI8_BAD : ci8_exponent(mx);
}

/* Pixel p's C channels (planes HW floats apart at f) as its three slices' words, w[i][0] channels 0..3 and w[i][1]
 * 4..7 (a byte each; channels past C, and every channel of a bad image, 0): in base 254 (ci8_slice, f1 f2 from
 * ci8_pow2), or, ci8l_pixel_words, as bytes 3, 2 and 1 of ci8l_bytes (f1 f2 from ci8l_pow2) by byte permutes. */
__device__ __forceinline__ void ci8_pixel_words(uint32_t (&w)[3][2], const float *f, int HW, int p, int C, int bad,
                                                float f1, float f2) {
    uint32_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0}; /* not w[i][c / 4]: that index would put w in local memory */
    for (int c = 0; c < C && !bad; c++) {
        int q[3];
        ci8_slice(q, f[c * HW + p], f1, f2);
#pragma unroll
        for (int i = 0; i < 3; i++) {
            const uint32_t b = (uint32_t)(q[i] & 0xff) << (8 * (c & 3));
            if (c < 4)
                lo[i] |= b;
            else
                hi[i] |= b;
        }
    }
#pragma unroll
    for (int i = 0; i < 3; i++) w[i][0] = lo[i], w[i][1] = hi[i];
}
__device__ __forceinline__ void ci8l_pixel_words(uint32_t (&w)[3][2], const float *f, int HW, int p, int C, int bad,
                                                 float f1, float f2) {
    uint32_t v[CI8_MAXC];
#pragma unroll
    for (int c = 0; c < CI8_MAXC; c++) v[c] = c < C && !bad ? ci8l_bytes(f[c * HW + p], f1, f2) : 128u;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const uint32_t ab = __byte_perm(v[4 * h], v[4 * h + 1], 0x6273);     /* a3 b3 a2 b2 */
        const uint32_t cd = __byte_perm(v[4 * h + 2], v[4 * h + 3], 0x6273); /* c3 d3 c2 d2 */
        const uint32_t ab1 = __byte_perm(v[4 * h], v[4 * h + 1], 0x0051);    /* a1 b1 */
        const uint32_t cd1 = __byte_perm(v[4 * h + 2], v[4 * h + 3], 0x0051);
        w[0][h] = __byte_perm(ab, cd, 0x5410);
        w[1][h] = __byte_perm(ab, cd, 0x7632);
        w[2][h] = __byte_perm(ab1, cd1, 0x5410);
    }
}

/* A pixel's three slices' words (ci8_pixel_words) at index pp of the planes at xs, pb bytes apart: slice i's plane
 * 2 i at 8 pp, and its copy shifted by a pixel, plane 2 i + 1, at 8 (pp - 1) (the SS and RSL kernels' odd rows). */
__device__ __forceinline__ void ci8_store_paired(unsigned char *xs, uint32_t pb, int pp, const uint32_t (&w)[3][2]) {
#pragma unroll
    for (int i = 0; i < 3; i++) {
        *(uint2 *)(xs + 2 * i * pb + 8 * pp) = make_uint2(w[i][0], w[i][1]);
        if (pp) *(uint2 *)(xs + (2 * i + 1) * pb + 8 * (pp - 1)) = make_uint2(w[i][0], w[i][1]);
    }
}

/* The scales and biases of lane t's four output channels (8 (j / 2) + 2 t + j % 2): 2^(ex + ew - shift) / 254^2. */
__device__ __forceinline__ void ci8_scales(float (&sc)[4], float (&bs)[4], int ex, const int *ew, const float *bias,
                                           int t, int shift) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int m = 8 * (j >> 1) + 2 * t + (j & 1), e = ew[m];
        sc[j] = ex == CI8_BAD || e == CI8_BAD ? __int_as_float(0x7fc00000)
                                              : (float)ldexp(1.0 / CI8_COMBINE, ex + e - shift);
        bs[j] = bias ? bias[m] : 0.0f;
    }
}

#ifdef CI8_PROFILE
__device__ long long ci8_prof[6]; /* cycles a block: bar wait, max, slices, scales, tiles; images */
#endif

struct ci8_layout {
    int S;        /* k steps of 32: ceil(K K / 4) */
    uint32_t sbo; /* the weights' 8-row groups: 256 S bytes apart */
    uint32_t xs;  /* offset of the slices */
    uint32_t xp;  /* a slice's bytes: H W 8, rounded up to 128 */
    uint32_t fb;  /* offset of the staging buffers */
    uint32_t fbn; /* a staging buffer's bytes: C H W 4 (a multiple of 16), rounded up to 128 */
    uint32_t pix; /* offset of the positions' pixels: 2 bytes each, 64 tiles of them */
    uint32_t total;
};

__host__ __device__ inline ci8_layout ci8_layout_of(int C, int H, int W, int K, int nb) {
    ci8_layout L;
    L.S = (K * K + 3) / 4;
    L.sbo = 256u * L.S;
    L.xs = 6u * L.sbo;
    L.xp = ((uint32_t)H * W * 8 + 127) / 128 * 128;
    L.fb = L.xs + 3 * L.xp;
    L.fbn = ((uint32_t)C * H * W * 4 + 127) / 128 * 128;
    L.pix = L.fb + nb * L.fbn;
    L.total = L.pix + ((H - K + 1) * (W - K + 1) + 63) / 64 * 128;
    return L;
}

/* y (B, 16, H - K + 1, W - K + 1) from x (B, C, H, W), C <= 8, weights k (16, C, K, K), bias (16) or NULL. A
 * persistent grid: block b takes images b, b + gridDim.x, ... */
template <int K, int NWG, int MINB, int NB, bool LEAN = false, bool BYTES = false>
__global__ void __launch_bounds__(128 * NWG, MINB)
    ci8_conv_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ k,
                    const float *__restrict__ bias, int B, int C, int H, int W) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int T = K * K, S = (T + 3) / 4, NT = 128 * NWG;
    extern __shared__ __align__(128) unsigned char ci8_raw[];
    __shared__ __align__(8) uint64_t bar[NB];
    __shared__ float red[NT / 32];
    __shared__ int ew[CI8_M];
    unsigned char *sm = ci8_raw + ((128 - ((uint32_t)__cvta_generic_to_shared(ci8_raw) & 127)) & 127);
    const ci8_layout L = ci8_layout_of(C, H, W, K, NB);
    const uint32_t s0 = (uint32_t)__cvta_generic_to_shared(sm), bars = (uint32_t)__cvta_generic_to_shared(bar);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int Ho = H - K + 1, Wo = W - K + 1, P = Ho * Wo, HW = H * W, tiles = (P + 63) / 64;
    /* output position p's pixel, (p / Wo) W + p % Wo (positions past P: P - 1's) */
    uint16_t *pix = (uint16_t *)(sm + L.pix);
    const uint32_t img_bytes = (uint32_t)C * HW * 4;

    ci8_start<NB>(sm, s0, bars, L.xs, L.fb, L.fbn, x, B, (size_t)C * HW);
    for (int p = tid; p < 64 * tiles; p += NT) {
        const int q = min(p, P - 1);
        pix[p] = (uint16_t)((q / Wo) * W + q % Wo);
    }

    ci8_weights<K, false>(sm, k, C, L.sbo, ew);

    /* This thread's taps: tap 4 s + t of each k step, as a pixel offset (8 bytes a pixel); 0 past K K (zero
     * weights).
     */
    int toff[S];
#pragma unroll
    for (int s = 0; s < S; s++) {
        const int tap = 4 * s + t;
        toff[s] = tap < T ? 8 * ((tap / K) * W + tap % K) : 0;
    }
    const int wg = warp / 4, wl = warp % 4;
    const uint64_t db0 = wg8_desc(s0, 128, L.sbo);

    int it = 0;
#ifdef CI8_PROFILE
    long long prof[5] = {0, 0, 0, 0, 0};
#endif
    for (int img = blockIdx.x; img < B; img += gridDim.x, it++) {
        const int buf = it % NB;
        const float *f = (const float *)(sm + L.fb + buf * L.fbn);
#ifdef CI8_PROFILE
        const long long t0 = clock64();
#endif
        nc_bar_wait(bars + 8 * buf, (it / NB) & 1);
#ifdef CI8_PROFILE
        const long long t0w = clock64();
        if (tid == 0) prof[0] += t0w - t0;
#endif
        const int ex = ci8_image_exponent(f, C * HW / 4, red); /* its barrier: every warp is done with the last image */
        const int bad = ex == CI8_BAD;
#ifdef CI8_PROFILE
        const long long t1 = clock64();
        if (tid == 0) prof[1] += t1 - t0w;
#endif
        /* The image's slices, channel-last: pixel p of slice q at xs + q xp + 8 p, channels 0..3 then 4..7; BYTES:
         * as the bytes of T = rint(v 2^(31 - e)) + 128 (see ci8l_conv_kernel). */
        float f1, f2;
        if (BYTES)
            ci8l_pow2(f1, f2, bad ? 0 : ex);
        else
            ci8_pow2(f1, f2, bad ? 0 : ex);
        for (int p = tid; p < HW; p += NT) {
            uint32_t w[3][2];
            if (BYTES)
                ci8l_pixel_words(w, f, HW, p, C, bad, f1, f2);
            else
                ci8_pixel_words(w, f, HW, p, C, bad, f1, f2);
#pragma unroll
            for (int i = 0; i < 3; i++) *(uint2 *)(sm + L.xs + i * L.xp + 8 * p) = make_uint2(w[i][0], w[i][1]);
        }
        __syncthreads(); /* the slices are written; the staging buffer is free */
#ifdef CI8_PROFILE
        const long long t2 = clock64();
        if (tid == 0) prof[2] += t2 - t1;
#endif
        if (tid == 0 && img + NB * gridDim.x < B) {
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            nc_bar_arrive_tx(bars + 8 * buf, img_bytes);
            ci8_bulk(s0 + L.fb + buf * L.fbn, x + (size_t)(img + NB * gridDim.x) * C * HW, img_bytes, bars + 8 * buf);
        }
        float sc[4], bs[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int m = 8 * (j >> 1) + 2 * t + (j & 1);
            const int e = ew[m];
            sc[j] = ex == CI8_BAD || e == CI8_BAD ? __int_as_float(0x7fc00000)
                                                  : (float)ldexp(1.0 / CI8_COMBINE, ex + e - (BYTES ? 30 : 14));
            bs[j] = bias ? bias[m] : 0.0f;
        }
#ifdef CI8_F64
        double scd[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int m = 8 * (j >> 1) + 2 * t + (j & 1);
            scd[j] = ex == CI8_BAD || ew[m] == CI8_BAD ? __longlong_as_double(0x7ff8000000000000ll)
                                                       : ldexp(1.0 / CI8_COMBINE, ex + ew[m] - 14);
        }
#endif
#ifdef CI8_PROFILE
        const long long t3 = clock64();
        if (tid == 0) prof[3] += t3 - t2;
#endif
        for (int tile = wg; tile < tiles; tile += NWG) {
            const int p0 = 64 * tile + 16 * wl + g, p1 = p0 + 8;
            const uint32_t r0 = L.xs + 8 * pix[p0], r1 = L.xs + 8 * pix[p1];
            /* x's slice i's fragments, k step s: tap 4 s + t of rows r0 (a[s][0], [2]) and r1 ([1], [3]). */
            auto load = [&](uint32_t(&a)[S][4], int i) {
#pragma unroll
                for (int s = 0; s < S; s++) {
                    const unsigned char *u0 = sm + r0 + i * L.xp + toff[s], *u1 = sm + r1 + i * L.xp + toff[s];
#ifdef CI8_ABL_NOLOAD
                    a[s][0] = r0 + s, a[s][2] = r1 + i, a[s][1] = toff[s], a[s][3] = r0 ^ r1;
                    (void)u0, (void)u1;
#else
                    a[s][0] = *(const uint32_t *)u0, a[s][2] = *(const uint32_t *)(u0 + 4);
                    a[s][1] = *(const uint32_t *)u1, a[s][3] = *(const uint32_t *)(u1 + 4);
#endif
                }
            };
            int d0[24], d1[16], d2[8];
#pragma unroll
            for (int i = 0; i < 24; i++) d0[i] = 0;
#pragma unroll
            for (int i = 0; i < 16; i++) d1[i] = 0;
#pragma unroll
            for (int i = 0; i < 8; i++) d2[i] = 0;
            /* A slice's MMAs are issued as soon as its fragments are in; the next slice's loads overlap them. */
            /* A slice's MMAs are issued as soon as its fragments are in. Slice 1's fragments go to registers of
             * their own, loaded under slice 0's MMAs; or, LEAN, to slice 0's once those MMAs are done (one slice's
             * fragments at a time: fewer registers, more blocks an SM). Slice 2's reuse slice 0's. */
            uint32_t a0[S][4], a1[S][4];
            uint32_t(&b1)[S][4] = LEAN ? a0 : a1;
            load(a0, 0);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            ci8_hold(d0), ci8_hold(d1), ci8_hold(d2);
#pragma unroll
            for (int s = 0; s < S; s++) wg8_rs48(d0, a0[s], db0 + (uint64_t)(16 * s));
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            if constexpr (LEAN) asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            load(b1, 1);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
            for (int s = 0; s < S; s++) wg8_rs32<BYTES>(d1, b1[s], db0 + (uint64_t)(16 * s));
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(LEAN ? 0 : 1) : "memory"); /* a0 is free */
            load(a0, 2);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
            for (int s = 0; s < S; s++) wg8_rs16<BYTES>(d2, a0[s], db0 + (uint64_t)(16 * s));
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#ifdef CI8_ABL_NOEPI
            ci8_hold(d0), ci8_hold(d1), ci8_hold(d2);
            if (p0 < P) y[(size_t)img * CI8_M * P + p0] = (float)(d0[g] + d1[t] + d2[5]);
#else
            ci8_hold(d0), ci8_hold(d1), ci8_hold(d2);
            float *yi = y + (size_t)img * CI8_M * P;
#pragma unroll
            for (int jm = 0; jm < 2; jm++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int p = e >> 1 ? p1 : p0, j = 2 * jm + (e & 1);
                    const int m = 8 * jm + 2 * t + (e & 1);
                    long long T64;
                    if (BYTES) {
                        const long long hi =
                            (long long)d0[4 * jm + e] * 64516 + d0[4 * (2 + jm) + e] * 254 + d0[4 * (4 + jm) + e];
                        const long long mid = (long long)d1[4 * jm + e] * 64516 + (long long)d1[4 * (2 + jm) + e] * 254;
                        T64 = hi * 65536 + mid * 256 + (long long)d2[4 * jm + e] * 64516;
                    } else {
                        const int l0 = d0[4 * jm + e], l1 = d0[4 * (2 + jm) + e] + d1[4 * jm + e];
                        const int l2 = d0[4 * (4 + jm) + e] + d1[4 * (2 + jm) + e] + d2[4 * jm + e];
                        T64 = (long long)l0 * 64516 + (long long)l1 * 254 + l2;
                    }
#ifdef CI8_F64
                    if (p < P) yi[(size_t)m * P + p] = (float)fma((double)T64, scd[j], (double)bs[j]);
#else
                    if (p < P) yi[(size_t)m * P + p] = fmaf(__ll2float_rn(T64), sc[j], bs[j]);
#endif
                }
#endif
        }
#ifdef CI8_PROFILE
        if (tid == 0) prof[4] += clock64() - t3;
#endif
    }
#ifdef CI8_PROFILE
    if (tid == 0)
        for (int i = 0; i < 5; i++) atomicAdd((unsigned long long *)&ci8_prof[i], (unsigned long long)prof[i]);
    if (tid == 0) atomicAdd((unsigned long long *)&ci8_prof[5], (unsigned long long)it);
#endif
#else
    __trap(); /* the launcher runs it only where this file was built for sm_90a and the device is sm_90 */
#endif
}

/* ------------------------------------------------------------------ both operands from shared memory (SS) */

/*
 * The same sums with A read by the tensor cores from the image's slices through descriptors whose rows overlap
 * (bench/ab/wgmma_i8.cu checked such layouts): a pixel is 8 bytes a slice, a 16-byte chunk of k two pixels side by
 * side (taps kx = 2 j, 2 j + 1 of kernel row ky, channels 0..7), and row r of a core matrix is 16 bytes after row
 * r - 1: two pixels, so that a tile's 64 rows are every other position. Positions are pixels of the image flattened
 * with an even row pitch Wp (q = oy Wp + ox; those with ox >= Wo are computed and dropped), tiles are 64 positions
 * of one parity (base, base + 2, .., base + 126, base = 128 n or 128 n + 1), and the odd ones read a second copy of
 * each slice shifted by one pixel, so that every descriptor starts 16-byte aligned. A k step is two chunks, whose
 * distance is the descriptor's LBO (16 bytes along a kernel row, more across rows); 8-row groups are 128 bytes
 * apart (SBO). No fragment loads and no im2col: a tile is 24 MMAs (8 k steps of the three products) and its
 * epilogue. The tensor cores read both operands at 128 bytes a cycle an SM (bench/ab/wgmma_i8.cu: N 48 + 32 + 16 at
 * 2,730 multiply-adds a cycle an SM), so a tile costs about 72 cycles a k step; tiles of accumulators alternate, so
 * that a tile's epilogue runs under the next tile's MMAs.
 */
struct ci8s_layout {
    int CR, S;    /* chunks (pixel pairs) a kernel row, k steps: ceil(K CR / 2) */
    int Wp, Q;    /* the even row pitch; positions (Ho - 1) Wp + Wo */
    int npix;     /* pixels a plane, with the over-reads of the last tiles */
    uint32_t sbo; /* the weights' 8-row groups */
    uint32_t xs;  /* offset of the six planes (slice q, parity r: plane 2 q + r) */
    uint32_t pb;  /* a plane's bytes */
    uint32_t fb;  /* the staging buffer(s) */
    uint32_t fbn; /* a staging buffer's bytes */
    uint32_t total;
};

__host__ __device__ inline ci8s_layout ci8s_layout_of(int C, int H, int W, int K, int nb) {
    ci8s_layout L;
    L.CR = (K + 1) / 2;
    L.S = (K * L.CR + 1) / 2;
    L.Wp = W + (W & 1);
    L.Q = (H - K) * L.Wp + (W - K + 1);
    L.npix = (L.Q + 127) / 128 * 128 + (K - 1) * L.Wp + 2 * L.CR + 4;
    L.sbo = 256u * L.S;
    L.xs = 6u * L.sbo;
    L.pb = ((uint32_t)L.npix * 8 + 127) / 128 * 128;
    L.fb = L.xs + 6 * L.pb;
    L.fbn = ((uint32_t)C * H * W * 4 + 127) / 128 * 128;
    L.total = L.fb + nb * L.fbn;
    return L;
}

template <int K, int NWG, int MINB, int NB>
__global__ void __launch_bounds__(128 * NWG, MINB)
    ci8s_conv_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ k,
                     const float *__restrict__ bias, int B, int C, int H, int W) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int NT = 128 * NWG;
    extern __shared__ __align__(128) unsigned char ci8_raw[];
    __shared__ __align__(8) uint64_t bar[NB];
    __shared__ float red[NT / 32];
    __shared__ int ew[CI8_M];
    unsigned char *sm = ci8_raw + ((128 - ((uint32_t)__cvta_generic_to_shared(ci8_raw) & 127)) & 127);
    const ci8s_layout L = ci8s_layout_of(C, H, W, K, NB);
    constexpr int CR = (K + 1) / 2, S = (K * CR + 1) / 2; /* ci8s_layout_of's */
    const int Wp = L.Wp, Q = L.Q;
    const uint32_t s0 = (uint32_t)__cvta_generic_to_shared(sm), bars = (uint32_t)__cvta_generic_to_shared(bar);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int Wo = W - K + 1, P = (H - K + 1) * Wo, HW = H * W, tiles = (Q + 127) / 128 * 2;
    const uint32_t img_bytes = (uint32_t)C * HW * 4;

    ci8_start<NB>(sm, s0, bars, L.fb, L.fb, L.fbn, x, B, (size_t)C * HW);
    ci8_weights<K, true>(sm, k, C, L.sbo, ew);

    const uint64_t db0 = wg8_desc(s0, 128, L.sbo);
    const int wg = warp >> 2;
    /* Tile n: positions base + 2 r, base = 128 (n / 2) + n % 2; its descriptors for slice q at k step s. */
    auto adesc = [&](int n, int q, int s) {
        const int par = n & 1, base = 128 * (n >> 1);
        const int c0 = 2 * s, c1 = 2 * s + 1;
        const int o0 = (c0 / CR) * Wp + 2 * (c0 % CR);
        const int o1 = c1 < K * CR ? (c1 / CR) * Wp + 2 * (c1 % CR) : o0 + 2;
        const uint32_t a = s0 + L.xs + (2 * q + par) * L.pb + 8 * (base + o0);
        return wg8_desc(a, 8 * (o1 - o0), 128);
    };
    int dA0[24], dA1[16], dA2[8];
    auto issue = [&](int(&d0)[24], int(&d1)[16], int(&d2)[8], int n) {
#pragma unroll
        for (int i = 0; i < 24; i++) d0[i] = 0;
#pragma unroll
        for (int i = 0; i < 16; i++) d1[i] = 0;
#pragma unroll
        for (int i = 0; i < 8; i++) d2[i] = 0;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        ci8_hold(d0), ci8_hold(d1), ci8_hold(d2);
#pragma unroll
        for (int s = 0; s < S; s++) {
            const uint64_t db = db0 + (uint64_t)(16 * s);
            wg8_ss48(d0, adesc(n, 0, s), db);
            wg8_ss32(d1, adesc(n, 1, s), db);
            wg8_ss16(d2, adesc(n, 2, s), db);
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    };
    int it = 0;
    for (int img = blockIdx.x; img < B; img += gridDim.x, it++) {
        const int buf = it % NB;
        const float *f = (const float *)(sm + L.fb + buf * L.fbn);
        nc_bar_wait(bars + 8 * buf, (it / NB) & 1);
        const int ex = ci8_image_exponent(f, C * HW / 4, red); /* its barrier: every warp is done with the last image */
        const int bad = ex == CI8_BAD;
        float f1, f2;
        ci8_pow2(f1, f2, bad ? 0 : ex);
        /* pixel (r, c) of slice q: plane 2 q at 8 (r Wp + c), plane 2 q + 1 (shifted) at 8 (r Wp + c - 1) */
        for (int p = tid; p < HW; p += NT) {
            uint32_t w[3][2];
            ci8_pixel_words(w, f, HW, p, C, bad, f1, f2);
            ci8_store_paired(sm + L.xs, L.pb, p / W * Wp + p % W, w);
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); /* the slices, for the tensor cores */
        __syncthreads();
        if (tid == 0 && img + NB * gridDim.x < B) {
            nc_bar_arrive_tx(bars + 8 * buf, img_bytes);
            ci8_bulk(s0 + L.fb + buf * L.fbn, x + (size_t)(img + NB * gridDim.x) * C * HW, img_bytes, bars + 8 * buf);
        }
        float sc[4], bs[4];
        ci8_scales(sc, bs, ex, ew, bias, t, 14);
        float *yi = y + (size_t)img * CI8_M * P;
        auto epilogue = [&](int(&d0)[24], int(&d1)[16], int(&d2)[8], int n) {
            ci8_hold(d0), ci8_hold(d1), ci8_hold(d2);
            const int q0 = 128 * (n >> 1) + (n & 1) + 32 * (warp & 3) + 2 * g;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int q = q0 + 16 * h, oy = q / Wp, ox = q - oy * Wp;
                if (q >= Q || ox >= Wo) continue;
                const int p = oy * Wo + ox;
#pragma unroll
                for (int jm = 0; jm < 2; jm++)
#pragma unroll
                    for (int u = 0; u < 2; u++) {
                        const int e = 2 * h + u, j = 2 * jm + u, m = 8 * jm + 2 * t + u;
                        const int l0 = d0[4 * jm + e], l1 = d0[4 * (2 + jm) + e] + d1[4 * jm + e];
                        const int l2 = d0[4 * (4 + jm) + e] + d1[4 * (2 + jm) + e] + d2[4 * jm + e];
                        const long long T64 = (long long)l0 * 64516 + (long long)l1 * 254 + l2;
                        yi[(size_t)m * P + p] = fmaf(__ll2float_rn(T64), sc[j], bs[j]);
                    }
            }
        };
        for (int n = wg; n < tiles; n += NWG) {
            issue(dA0, dA1, dA2, n);
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            epilogue(dA0, dA1, dA2, n);
        }
        __syncthreads(); /* the MMAs (done: waited) and every warp's reads of the slices before the next image's */
    }
#else
    __trap();
#endif
}

template <int K, int NWG, int MINB, int NB>
static int ci8s_run(float *y, const float *x, const float *k, const float *bias, int B, int C, int H, int W,
                    cudaStream_t stream, nc_error *err) {
    const ci8s_layout L = ci8s_layout_of(C, H, W, K, NB);
    const size_t smem = L.total + 128;
    int dev, sms, per_sm = 0;
    CUDA_RET(cudaGetDevice(&dev));
    CUDA_RET(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_RET(cudaFuncSetAttribute(ci8s_conv_kernel<K, NWG, MINB, NB>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  (int)smem));
    CUDA_RET(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ci8s_conv_kernel<K, NWG, MINB, NB>, 128 * NWG, smem));
    if (per_sm < 1) return nc_fail(err, NC_ERR_ARG, "conv i8 SS: %zu bytes of shared memory do not fit", smem);
    const int grid = B < per_sm * sms ? B : per_sm * sms;
#ifdef CI8_VERBOSE
    static int told;
    if (!told++)
        printf("  (SS: %d warpgroups, %d blocks an SM, %zu bytes of shared memory a block)\n", NWG, per_sm, smem);
#endif
    ci8s_conv_kernel<K, NWG, MINB, NB><<<grid, 128 * NWG, smem, stream>>>(y, x, k, bias, B, C, H, W);
    CUDA_LAUNCHED();
    return NC_OK;
}

/* ------------------------------------------------------------------ A by ldmatrix, x in bytes (RSL) */

/*
 * Fewer instructions: x's slices are the bytes of one integer, and A's fragments come by ldmatrix.
 *  - x: T = rint(v 2^(31 - e)) + 128 (|v 2^(7 - e)| <= 127, so T stays within int32); its byte 3 (signed) is slice
 * 0, bytes 2 and 1 (unsigned, 0..255) slices 1 and 2: v = 2^(e - 31) (2^24 s0 + 2^16 s1 + 2^8 s2) + r, |r| <= 2^(e
 * - 31) 128.5: as close as the base-254 slices (2^(e - 7) / 2 / 254^2 = 2^(e - 31) 130). A pixel's four channels
 * become a slice's word with byte permutes (7 for three slices), no shifts, masks or multiplies.
 *  - w: the base-254 slices as above (signed). The MMAs: x0 (s8) by w0, w1, w2 (N 48), x1 (u8) by w0, w1 (N 32, u8
 * x s8), x2 (u8) by w0 (N 16). Then y = 2^(ex + ew - 30) / 254^2 T64 + b with T64 = 2^16 (254^2 D00 + 254 D01 +
 * D02)
 *    + 2^8 (254^2 D10 + 254 D11) + 254^2 D20, exact in int64.
 *  - A: a 16-byte chunk of k is two pixels side by side (taps kx = 2 j, 2 j + 1 of kernel row ky), a k step two
 * chunks, as in the SS kernel's layout; ldmatrix.x4 loads a warp's m16 x k32 fragment from 32 row addresses (lane
 * l: row l % 8 + 8 (l / 8 % 2), half l / 16), each a 16-byte aligned chunk: a position of even pixel reads the
 * slice's plane, one of odd pixel the plane's copy shifted by a pixel. The image is staged with an even row pitch
 * Wp, so a tap's offset keeps the parity. One ldmatrix and one MMA a slice a k step (8 k steps for K = 5: 15 chunks
 * and a zero one).
 */
struct ci8l_layout {
    int CR, S;    /* chunks (pixel pairs) a kernel row; k steps: ceil(K CR / 2) */
    int Wp;       /* the staged rows' even pitch */
    uint32_t sbo; /* the weights' 8-row groups */
    uint32_t xs;  /* offset of the six planes: slice i, parity r at xs + (2 i + r) pb */
    uint32_t pb;  /* a plane's bytes (= 64 mod 128: a matrix's even and odd rows in distinct banks) */
    uint32_t fb;  /* the staging buffer */
    uint32_t fbn; /* its bytes */
    uint32_t pix; /* the positions' pixels (2 bytes each, tiles of 64) */
    uint32_t total;
};

__host__ __device__ inline ci8l_layout ci8l_layout_of(int C, int H, int W, int K, int nb) {
    ci8l_layout L;
    L.CR = (K + 1) / 2;
    L.S = (K * L.CR + 1) / 2;
    L.Wp = W + (W & 1);
    L.sbo = 256u * L.S;
    L.xs = 6u * L.sbo;
    L.pb = ((uint32_t)(H * L.Wp + 2 * L.CR + 2) * 8 + 127) / 128 * 128 + 64;
    L.fb = L.xs + 6 * L.pb;
    L.fbn = ((uint32_t)C * H * W * 4 + 127) / 128 * 128;
    L.pix = L.fb + nb * L.fbn;
    L.total = L.pix + ((H - K + 1) * (W - K + 1) + 63) / 64 * 128;
    return L;
}

template <int K, int MINB, int NB>
__global__ void __launch_bounds__(128, MINB)
    ci8l_conv_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ k,
                     const float *__restrict__ bias, int B, int C, int H, int W) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int NT = 128, CR = (K + 1) / 2, S = (K * CR + 1) / 2; /* ci8l_layout_of's */
    extern __shared__ __align__(128) unsigned char ci8_raw[];
    __shared__ __align__(8) uint64_t bar[NB];
    __shared__ float red[NT / 32];
    __shared__ int ew[CI8_M];
    unsigned char *sm = ci8_raw + ((128 - ((uint32_t)__cvta_generic_to_shared(ci8_raw) & 127)) & 127);
    const ci8l_layout L = ci8l_layout_of(C, H, W, K, NB);
    const int Wp = L.Wp;
    const uint32_t s0 = (uint32_t)__cvta_generic_to_shared(sm), bars = (uint32_t)__cvta_generic_to_shared(bar);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int Wo = W - K + 1, P = (H - K + 1) * Wo, HW = H * W, tiles = (P + 63) / 64;
    const uint32_t img_bytes = (uint32_t)C * HW * 4;
    uint16_t *pix = (uint16_t *)(sm + L.pix);

    ci8_start<NB>(sm, s0, bars, L.fb, L.fb, L.fbn, x, B, (size_t)C * HW);
    for (int p = tid; p < 64 * tiles; p += NT) {
        const int q = min(p, P - 1);
        pix[p] = (uint16_t)((q / Wo) * Wp + q % Wo);
    }
    ci8_weights<K, true>(sm, k, C, L.sbo, ew);

    /* This lane's ldmatrix row: row rr of the warp's 16, k half hh; its chunks' pixel offsets, k step s. */
    const int rr = (lane & 7) + ((lane >> 3) & 1) * 8, hh = lane >> 4;
    int coff[S];
#pragma unroll
    for (int s = 0; s < S; s++) {
        const int c = 2 * s + hh;
        coff[s] = c < K * CR ? 8 * ((c / CR) * Wp + 2 * (c % CR)) : 0;
    }
    const uint64_t db0 = wg8_desc(s0, 128, L.sbo);

    int it = 0;
    for (int img = blockIdx.x; img < B; img += gridDim.x, it++) {
        const int buf = it % NB;
        const float *f = (const float *)(sm + L.fb + buf * L.fbn);
        nc_bar_wait(bars + 8 * buf, (it / NB) & 1);
        const int ex = ci8_image_exponent(f, C * HW / 4, red); /* its barrier: every warp is done with the last image */
        const int bad = ex == CI8_BAD;
        float f1, f2;
        ci8l_pow2(f1, f2, bad ? 0 : ex);
        /* pixel (r, c) of slice i: plane 2 i at 8 (r Wp + c), plane 2 i + 1 (shifted) at 8 (r Wp + c - 1) */
        for (int p = tid; p < HW; p += NT) {
            uint32_t w[3][2];
            ci8l_pixel_words(w, f, HW, p, C, bad, f1, f2);
            ci8_store_paired(sm + L.xs, L.pb, p / W * Wp + p % W, w);
        }
        __syncthreads(); /* the slices are written; the staging buffer is free */
        if (tid == 0 && img + NB * gridDim.x < B) {
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            nc_bar_arrive_tx(bars + 8 * buf, img_bytes);
            ci8_bulk(s0 + L.fb + buf * L.fbn, x + (size_t)(img + NB * gridDim.x) * C * HW, img_bytes, bars + 8 * buf);
        }
        float sc[4], bs[4];
        ci8_scales(sc, bs, ex, ew, bias, t, 30);
        float *yi = y + (size_t)img * CI8_M * P;
        for (int tile = 0; tile < tiles; tile++) {
            const int pi = pix[64 * tile + 16 * warp + rr];
            const uint32_t a0 = s0 + L.xs + (pi & 1) * L.pb + 8 * (pi & ~1);
            uint32_t fa[S][4], fb[S][4];
            int d0[24], d1[16], d2[8];
#pragma unroll
            for (int i = 0; i < 24; i++) d0[i] = 0;
#pragma unroll
            for (int i = 0; i < 16; i++) d1[i] = 0;
#pragma unroll
            for (int i = 0; i < 8; i++) d2[i] = 0;
#pragma unroll
            for (int s = 0; s < S; s++) ci8l_ldsm4(fa[s], a0 + coff[s]);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            ci8_hold(d0), ci8_hold(d1), ci8_hold(d2);
#pragma unroll
            for (int s = 0; s < S; s++) wg8_rs48(d0, fa[s], db0 + (uint64_t)(16 * s));
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#pragma unroll
            for (int s = 0; s < S; s++) ci8l_ldsm4(fb[s], a0 + 2 * L.pb + coff[s]);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
            for (int s = 0; s < S; s++) wg8_rs32<true>(d1, fb[s], db0 + (uint64_t)(16 * s));
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); /* slice 0's: fa is free */
#pragma unroll
            for (int s = 0; s < S; s++) ci8l_ldsm4(fa[s], a0 + 4 * L.pb + coff[s]);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
            for (int s = 0; s < S; s++) wg8_rs16<true>(d2, fa[s], db0 + (uint64_t)(16 * s));
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            ci8_hold(d0), ci8_hold(d1), ci8_hold(d2);
            const int p0 = 64 * tile + 16 * warp + g;
#pragma unroll
            for (int jm = 0; jm < 2; jm++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int p = e >> 1 ? p0 + 8 : p0, j = 2 * jm + (e & 1), m = 8 * jm + 2 * t + (e & 1);
                    const long long hi =
                        (long long)d0[4 * jm + e] * 64516 + d0[4 * (2 + jm) + e] * 254 + d0[4 * (4 + jm) + e];
                    const long long mid = (long long)d1[4 * jm + e] * 64516 + (long long)d1[4 * (2 + jm) + e] * 254;
                    const long long T64 = hi * 65536 + mid * 256 + (long long)d2[4 * jm + e] * 64516;
                    if (p < P) yi[(size_t)m * P + p] = fmaf(__ll2float_rn(T64), sc[j], bs[j]);
                }
        }
    }
#else
    __trap();
#endif
}

template <int K, int MINB, int NB>
static int ci8l_run(float *y, const float *x, const float *k, const float *bias, int B, int C, int H, int W,
                    cudaStream_t stream, nc_error *err) {
    const ci8l_layout L = ci8l_layout_of(C, H, W, K, NB);
    const size_t smem = L.total + 128;
    int dev, sms, per_sm = 0;
    CUDA_RET(cudaGetDevice(&dev));
    CUDA_RET(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_RET(
        cudaFuncSetAttribute(ci8l_conv_kernel<K, MINB, NB>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ci8l_conv_kernel<K, MINB, NB>, 128, smem));
    if (per_sm < 1) return nc_fail(err, NC_ERR_ARG, "conv on int8 slices: %zu bytes of shared memory do not fit", smem);
    const int grid = B < per_sm * sms ? B : per_sm * sms;
#ifdef CI8_VERBOSE
    static int told;
    if (!told++) printf("  (RSL: %d blocks an SM, %zu bytes of shared memory a block)\n", per_sm, smem);
#endif
    ci8l_conv_kernel<K, MINB, NB><<<grid, 128, smem, stream>>>(y, x, k, bias, B, C, H, W);
    CUDA_LAUNCHED();
    return NC_OK;
}

/* ------------------------------------------------------------------ the launcher */

template <int K, int NWG, int MINB, int NB, bool LEAN = false, bool BYTES = false>
static int ci8_run(float *y, const float *x, const float *k, const float *bias, int B, int C, int H, int W,
                   cudaStream_t stream, nc_error *err) {
    const ci8_layout L = ci8_layout_of(C, H, W, K, NB);
    const size_t smem = L.total + 128;
    int dev, sms, per_sm = 0;
    CUDA_RET(cudaGetDevice(&dev));
    CUDA_RET(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_RET(cudaFuncSetAttribute(ci8_conv_kernel<K, NWG, MINB, NB, LEAN, BYTES>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ci8_conv_kernel<K, NWG, MINB, NB, LEAN, BYTES>,
                                                           128 * NWG, smem));
    if (per_sm < 1) return nc_fail(err, NC_ERR_ARG, "conv on int8 slices: %zu bytes of shared memory do not fit", smem);
    const int grid = B < per_sm * sms ? B : per_sm * sms;
#ifdef CI8_VERBOSE
    static int told;
    if (!told++) printf("  (%d warpgroups, %d blocks an SM, %zu bytes of shared memory a block)\n", NWG, per_sm, smem);
#endif
    ci8_conv_kernel<K, NWG, MINB, NB, LEAN, BYTES><<<grid, 128 * NWG, smem, stream>>>(y, x, k, bias, B, C, H, W);
    CUDA_LAUNCHED();
    return NC_OK;
}

/* Whether the prototype takes the layer; *why says what it refuses. */
static int ci8_takes(const char **why, int C, int H, int W, int M, int K) {
    if (M != CI8_M) return *why = "16 output channels", 0;
    if (C < 1 || C > CI8_MAXC) return *why = "1 to 8 input channels", 0;
    if (K != 5) return *why = "K = 5", 0;
    if (H < K || W < K) return *why = "an image at least K x K", 0;
    if ((long long)C * H * W % 4) return *why = "C H W a multiple of 4", 0;
    const ci8_layout L = ci8_layout_of(C, H, W, K, 1);
    if ((long long)H * W > 4096 || L.total + 128 > 200 * 1024) return *why = "an image of at most 4096 pixels", 0;
    return 1;
}

static int ci8_launch(int nwg, NC_CONV_LAUNCHER_ARGS) {
    /* Built for sm_90a alone (bench/ab/conv_i8_one.cu's command): on another device a launch fails with CUDA's
     * "no kernel image", through CUDA_LAUNCHED. */
    const char *why = "";
    if (!ci8_takes(&why, C, H, W, M, K))
        return nc_fail(err, NC_ERR_ARG, "conv on int8 slices takes %s (this layer: C %d, %d x %d, M %d, K %d)", why, C,
                       H, W, M, K);
    if ((uintptr_t)x % 16) return nc_fail(err, NC_ERR_ARG, "conv on int8 slices takes x 16-byte aligned");
    if (B <= 0) return NC_OK;
#ifdef CI8_VARIANTS
    if (nwg == 14) return ci8_run<5, 1, 3, 1, false, true>(y, x, k, bias, B, C, H, W, stream, err);
    if (nwg == 15) return ci8_run<5, 1, 4, 1, true, true>(y, x, k, bias, B, C, H, W, stream, err);
    if (nwg == 12) return ci8_run<5, 1, 4, 1, true>(y, x, k, bias, B, C, H, W, stream, err);
    if (nwg == 13) return ci8_run<5, 1, 3, 1, true>(y, x, k, bias, B, C, H, W, stream, err);
    if (nwg == 9) return ci8l_run<5, 3, 1>(y, x, k, bias, B, C, H, W, stream, err);
    if (nwg == 10) return ci8l_run<5, 4, 1>(y, x, k, bias, B, C, H, W, stream, err);
    if (nwg == 11) return ci8l_run<5, 2, 2>(y, x, k, bias, B, C, H, W, stream, err);
    if (nwg == 5) return ci8s_run<5, 1, 2, 1>(y, x, k, bias, B, C, H, W, stream, err);
    if (nwg == 6) return ci8s_run<5, 2, 2, 1>(y, x, k, bias, B, C, H, W, stream, err);
    if (nwg == 7) return ci8s_run<5, 3, 1, 1>(y, x, k, bias, B, C, H, W, stream, err);
    if (nwg == 8) return ci8s_run<5, 4, 1, 2>(y, x, k, bias, B, C, H, W, stream, err);
    if (nwg == 1) return ci8_run<5, 1, 3, 1>(y, x, k, bias, B, C, H, W, stream, err);
    if (nwg == 2) return ci8_run<5, 1, 4, 1>(y, x, k, bias, B, C, H, W, stream, err);
    if (nwg == 3) return ci8_run<5, 1, 3, 2>(y, x, k, bias, B, C, H, W, stream, err);
    if (nwg == 4) return ci8_run<5, 2, 2, 1>(y, x, k, bias, B, C, H, W, stream, err);
#endif
    return ci8_run<5, 1, 3, 1>(y, x, k, bias, B, C, H, W, stream, err); /* variant 1, the fastest */
}
