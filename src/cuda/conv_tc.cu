/*
 * Tensor-core fused convolution for one-channel layers (C = 1): versions 7 to 10, reduced precision, opt-in.
 *
 * Per image the convolution is a GEMM on mma.sync: rows = output channels (M padded to 16s), columns = output
 * positions, inner = the K*K window. A (the weights) sits in registers for the whole kernel; B (the im2col) is
 * never built: B[k][n] is read straight from the image staged in shared memory at per-thread offsets computed
 * once. Each warp computes two n8 tiles at a time: conv rows 2i and 2i+1 over the same 8 columns, so that a
 * thread's accumulators c0/c1 (columns 2t, 2t+1 of its channel, PTX ISA's m16n8 C fragment) of both tiles are one
 * whole 2x2 pooling window: bias, max (or the activations' mean) and the activation happen in registers and the
 * pooled output is stored straight from them (staging it in shared memory for whole-line stores was measured
 * twice, and lost both times: below). Max first, then the activation: tanh, relu and 1/(1+expf(-v)) are
 * monotone, so this equals pooling the activations.
 *
 * A persistent grid: block j takes images j, j + grid, j + 2 grid, ... in groups of images_per_block (a tuning,
 * nc_conv_tc_tunings). While the warps compute one group, the next group's raw bytes are already on their way into
 * shared memory by cp.async (two raw buffers), so that the tensor cores are not left waiting for memory latency
 * between images; a group costs two barriers (raw copy landed; converted into the compute layout).
 *
 * A warp holds MW m16 tiles of weights (tc_mw): four where the layer has 49 to 64 channels, the fragments fit
 * (fp16, bf16; tf32 with K <= 5) and the output is pooled, so that every B fragment it loads from shared memory
 * feeds four tiles' MMAs (2017 layer, H100: tf32 0.39 -> 0.29 ms, fp16 0.44 -> 0.32 ms against two tiles a
 * warp); else two, or one. The epilogue switches on the pooling and the activation once a task, not once an
 * output, and max pooling scales the largest sum once (an ncu profile of the 2017 layer, 2026-11-22: 40 non-MMA
 * instructions a pooled output before, the issue slots 60% busy, 2.4% of the instructions MMAs). Staging the
 * pooled outputs in shared memory for whole-line stores: first 0.471 against 0.419 ms (version 7, an earlier
 * kernel); then, on this one, the L2 went from 74% to 21% busy and fp16 gained 13% on the 2017 layer, but the
 * extra barrier and registers cost tf32 and the 7x7 layers 30 to 50%.
 *
 *   7  tc-tf32: m16n8k8 TF32, one MMA per product, the weights rounded to TF32 (10-bit mantissa); float inputs
 *      rounded too. Reduced precision (relative error ~1e-3 of sum |w x|). A fused tanh is tanh.approx.f32
 *      (conv_act.cuh; relative error ~1e-5), as in versions 9 and 10; version 8 keeps tanhf.
 *      nanoconv eval --model M --backend cuda --precision tf32     (or --conv-kernel 7; Op Time's note: "tf32")
 *   8  tc-3xtf32: near-exact (~1e-6 of sum |w x|; not bitwise fp32). Each weight is split into a TF32 high
 *      part and the TF32 rounding of its remainder. uint8 pixels 0..255 are exact in TF32, so on the pixels only
 *      the weights need splitting: 2 MMAs (w_lo x p + w_hi x p) instead of 3xTF32's 3; float inputs are split
 *      too (3 MMAs: w_lo x x_hi + w_hi x x_lo + w_hi x x_hi).
 *      nanoconv eval --model M --backend cuda --precision 3xtf32   (or --conv-kernel 8; note: "3xtf32")
 *   9  tc-fp16: m16n8k16 with fp16 operands, fp32 accumulation: half the MMAs of version 7. The weights are
 *      rounded to fp16 (11-bit significand): |error| <= 2^-11 sum |w x| (4.9e-4) on uint8 pixels, which fp16 holds
 *      exactly; float inputs are rounded too: <= (2^-10 + 2^-22) sum |w x| (9.8e-4). fp16's range: weights below
 *      2^-14 (6.1e-5) lose bits (subnormal, absolute error <= 2^-25), float inputs beyond 65504 become inf.
 *      nanoconv eval --model M --backend cuda --precision fp16     (or --conv-kernel 9; note: "fp16")
 *  10  tc-bf16: the same with bf16 operands (8-bit significand, fp32's range): <= 2^-8 sum |w x| (3.9e-3) on
 *      pixels, <= (2^-7 + 2^-16) sum |w x| (7.8e-3) on float inputs.
 *      nanoconv eval --model M --backend cuda --precision bf16     (or --conv-kernel 10; note: "bf16")
 *
 * B for m16n8k16 holds two consecutive k in each register; k is ordered so that they are two horizontally
 * adjacent taps (p, q), (p, q+1) (a row of K taps is (K+1)/2 pairs, the last one padded with a zero weight for odd
 * K), and the image is staged as pairs: xs[r][c] = (x[r][c], x[r][c+1]), 4 bytes a position like the floats of
 * versions 7 and 8. A B register is then one aligned 4-byte load.
 *
 * On pixels the GEMM runs on the raw values p and the model's scaling is applied after: every scaling
 * (nc_scale_pixel: p, p/255, (p/255 - mean)/std) is affine, v(p) = a p + c, so sum w v(p) = a sum w p + c sum w,
 * with sum w over the weights as the GEMM has them (rounded), so that the error stays relative to sum |w v(p)|.
 * C > 1, pooling other than 2/2, K outside 3..7, M > 256, a float image's buffers over TC_SMEM_MAX or pixels not
 * 4-byte aligned go to version 6 (conv_direct.cu) unchanged.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/conv_act.cuh"
#include "cuda/conv_ladder.h"
#include "cuda/cuda_check.h"

#define TC_SMEM_MAX (192 * 1024) /* an image's buffers (images_per_block 1, float input) at most: H100 has 227 KB */
#define TC_M_MAX 256             /* 8 warps of two m16 tiles */
#define TC_IPB_MAX 16            /* the most images a tuning may give a block */

enum { TC_NONE = -1 };
/* How products are formed: MODE_TF32 one m16n8k8 TF32 MMA; MODE_SPLIT_A two (B exact: pixels); MODE_SPLIT_AB
 * three; MODE_F16 and MODE_BF16 one m16n8k16 MMA on pairs of taps. */
enum { MODE_TF32 = 0, MODE_SPLIT_A = 1, MODE_SPLIT_AB = 2, MODE_F16 = 3, MODE_BF16 = 4 };

struct tc_params {
    int B, H, W, M;
    int Ho, Wo;    /* the convolution's output */
    int Yh, Yw;    /* what is stored: the pooled output, or Ho x Wo */
    int PR, CG;    /* conv row pairs and 8-column groups computed */
    int RS, WS;    /* the staged image tile, zero past the image: (RS, WS) = (2 PR + K-1, 8 CG + K-1) */
    int act, pool; /* nc_layer_kind or TC_NONE */
    int MG;        /* groups of MW m16 tiles: warp w takes group w % MG */
    int ipb;       /* images staged and computed between two barriers */
    int XS, RW;    /* 4-byte words of one staged tile (RS WS) and of one image's raw copy */
    float a, c;    /* pixel input: v(p) = (neg ? -a : a) p + c (a = 1, c = 0 for float input) */
    int neg;       /* the scaling's a was negative: the weights are negated in the fragments (tc_weights) */
    int pairs;     /* unpooled: Wo even and y 8-byte aligned, so that two adjacent outputs are one float2 store */
};

__device__ __forceinline__ uint32_t tc_tf32(float v) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

/* d += a b on one m16n8k8 TF32 tile: a is the 16x8 A fragment (a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)),
 * b0 = B[t][g], b1 = B[t+4][g]; d0, d1 = D[g][2t], D[g][2t+1]; d2, d3 the same on row g+8 (g = lane/4,
 * t = lane%4). */
__device__ __forceinline__ void tc_mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* The same on one m16n8k16 tile of fp16 or bf16 pairs (the lower half the lower k): a0 = A[g][2t, 2t+1],
 * a1 = A[g+8][2t, 2t+1], a2 and a3 the same at k + 8; b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g]; d as above. */
template <int MODE>
__device__ __forceinline__ void tc_mma16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    if constexpr (MODE == MODE_F16)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* (lo, hi) rounded to fp16 or bf16, lo in the lower half; *rlo and *rhi get the rounded values back. */
template <int MODE> __device__ __forceinline__ uint32_t tc_pack(float lo, float hi, float *rlo, float *rhi) {
    if constexpr (MODE == MODE_F16) {
        const __half2 p = __floats2half2_rn(lo, hi);
        *rlo = __low2float(p), *rhi = __high2float(p);
        return *reinterpret_cast<const uint32_t *>(&p);
    } else {
        const __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);
        *rlo = __low2float(p), *rhi = __high2float(p);
        return *reinterpret_cast<const uint32_t *>(&p);
    }
}

/* One 4-byte cp.async: the first `bytes` (0..4) of src, zeros after. */
__device__ __forceinline__ void tc_cp4(uint32_t *dst, const void *src, int bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(__cvta_generic_to_global(src)), "r"(bytes)
                 : "memory");
}

/* The block's image j (images j0 + i of its sequence go to images blockIdx + (j0 + i) gridDim). */
__device__ __forceinline__ size_t tc_image(int j) {
    return (size_t)blockIdx.x + (size_t)j * gridDim.x;
}

/* Issues (does not wait for) the copies of the block's images j0 .. j0+n-1 into raw (n, RW): n images of floats,
 * or of pixels from the 4-byte word that holds their first byte (the image starts at byte (b H W) % 4 of its
 * copy); the batch's last word reads only the batch's bytes. */
__device__ __forceinline__ void tc_fetch(uint32_t *raw, const float *__restrict__ x, const uint8_t *__restrict__ xu,
                                         int j0, int n, const tc_params &d) {
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x;
    const size_t HW = (size_t)d.H * d.W;
    for (int i = 0; i < n; i++) {
        const size_t b = tc_image(j0 + i);
        uint32_t *dst = raw + i * d.RW;
        if (xu) {
            const size_t w0 = b * HW / 4, end = (size_t)d.B * HW;
            const int nw = (int)(((b + 1) * HW + 3) / 4 - w0);
            for (int w = tid; w < nw; w += nt) {
                const size_t at = 4 * (w0 + w);
                tc_cp4(dst + w, xu + at, end - at < 4 ? (int)(end - at) : 4);
            }
        } else {
            const float *src = x + b * HW;
            for (int w = tid; w < (int)HW; w += nt) tc_cp4(dst + w, src + w, 4);
        }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

/* Pixel or float e of an image's raw copy (pixels from byte `shift`). */
__device__ __forceinline__ float tc_raw(const uint32_t *raw, bool u8, int shift, int e) {
    return u8 ? (float)reinterpret_cast<const uint8_t *>(raw)[shift + e] : __uint_as_float(raw[e]);
}

/* raw (n, RW) -> xs (n, XS): each image's (H, W) into its (RS, WS) tile (the margin stays zero). TF32 modes: floats,
 * rounded to TF32 for MODE_TF32 (pixels are already exact); 16-bit modes: the pairs (x[r][c], x[r][c+1]) rounded,
 * 0 past the row. Warp w converts rows w, w + warps, ... */
template <int MODE>
__device__ __forceinline__ void tc_convert(uint32_t *xs, const uint32_t *raw, bool u8, int j0, int n,
                                           const tc_params &d) {
    const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5, nw = (int)blockDim.x >> 5;
    const int HW4 = d.H * d.W & 3;
    for (int i = 0; i < n; i++) {
        const uint32_t *src = raw + i * d.RW;
        const int shift = u8 ? (int)(tc_image(j0 + i) & 3) * HW4 & 3 : 0; /* (b H W) % 4 */
        for (int r = warp; r < d.H; r += nw) {
            const int e0 = r * d.W;
            uint32_t *dst = xs + i * d.XS + r * d.WS;
            for (int c = lane; c < d.W; c += 32) {
                const float v = tc_raw(src, u8, shift, e0 + c);
                if constexpr (MODE >= MODE_F16) {
                    float unused0, unused1;
                    dst[c] =
                        tc_pack<MODE>(v, c + 1 < d.W ? tc_raw(src, u8, shift, e0 + c + 1) : 0.0f, &unused0, &unused1);
                } else {
                    dst[c] = MODE == MODE_TF32 && !u8 ? tc_tf32(v) : __float_as_uint(v);
                }
            }
        }
    }
}

/* Where B's k = 8 ks + t + 4 h (TF32 modes: the tap k; 16-bit modes: the tap pair k, KS k-steps of 8 pairs) is in
 * the staged tile, from the position of its column: off[ks][h]. Padded k read offset 0: A is 0 there. */
template <int K, int MODE, int KS> __device__ __forceinline__ void tc_offsets(int (&off)[KS][2], int t, int WS) {
    constexpr int PPR = (K + 1) / 2; /* pairs a row of taps */
#pragma unroll
    for (int ks = 0; ks < KS; ks++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int j = ks * 8 + t + 4 * h;
            if constexpr (MODE >= MODE_F16)
                off[ks][h] = j < K * PPR ? j / PPR * WS + 2 * (j % PPR) : 0;
            else
                off[ks][h] = j < K * K ? j / K * WS + j % K : 0;
        }
}

/* This warp's weights as A fragments (high parts, and the remainders for the split modes) of its MW m16 tiles
 * (channels (mg MW + mi) 16 + g + 8 r), and per channel the constant added after the GEMM: c sum w + bias. Where
 * d.neg, the fragments hold -w (the scaling's a < 0; d.a is |a|, so that a sum scales by a >= 0); rounding is
 * symmetric, so they are the negated fragments of w and s is the same sum. */
template <int K, int MW, int MODE, int KS>
__device__ __forceinline__ void tc_weights(uint32_t (&ah)[MW][KS][4], uint32_t (&al)[MW][KS][4], float (&cm)[MW][2],
                                           const float *__restrict__ k, const float *__restrict__ bias, int mg, int g,
                                           int t, const tc_params &d) {
    constexpr int KK = K * K, PPR = (K + 1) / 2;
#pragma unroll
    for (int mi = 0; mi < MW; mi++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int m = (mg * MW + mi) * 16 + g + 8 * r;
            float s = 0.0f; /* the weights as the GEMM has them */
            const float sg = d.neg ? -1.0f : 1.0f;
#pragma unroll
            for (int ks = 0; ks < KS; ks++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int j = ks * 8 + t + 4 * h;
                    if constexpr (MODE >= MODE_F16) {
                        const int p = j / PPR, q = 2 * (j % PPR);
                        const bool in = m < d.M && j < K * PPR;
                        const float w0 = in ? sg * k[m * KK + p * K + q] : 0.0f;
                        const float w1 = in && q + 1 < K ? sg * k[m * KK + p * K + q + 1] : 0.0f;
                        float r0, r1;
                        ah[mi][ks][r + 2 * h] = tc_pack<MODE>(w0, w1, &r0, &r1);
                        s += r0 + r1;
                    } else {
                        const float w = m < d.M && j < KK ? sg * k[m * KK + j] : 0.0f;
                        const uint32_t hi = tc_tf32(w);
                        ah[mi][ks][r + 2 * h] = hi;
                        al[mi][ks][r + 2 * h] = tc_tf32(w - __uint_as_float(hi));
                        s += MODE == MODE_TF32 ? __uint_as_float(hi) : w;
                    }
                }
            s += __shfl_xor_sync(0xffffffffu, s, 1);
            s += __shfl_xor_sync(0xffffffffu, s, 2);
            cm[mi][r] = d.c * (sg * s) + (bias && m < d.M ? bias[m] : 0.0f);
        }
}

/* Where this thread's channels (mg MW + mi) 16 + g + 8 j start in an image's output (M, Yh, Yw); ~0u past M.
 * Unsigned, so that a store's address is one wide multiply-add. */
template <int MW>
__device__ __forceinline__ void tc_planes(unsigned (&plane)[MW][2], int mg, int g, const tc_params &d) {
#pragma unroll
    for (int mi = 0; mi < MW; mi++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const int m = (mg * MW + mi) * 16 + g + 8 * j;
            plane[mi][j] = m < d.M ? (unsigned)(m * d.Yh * d.Yw) : ~0u;
        }
}

/* Bias, activation and pooling of one task's accumulators. yp: the task's first output in the image's output (M,
 * Yh, Yw): (0, pr, 4 cg + t) pooled, else (0, 2 pr, 8 cg + 2 t). acc[mi][r][2j + c]: channel (mg MW + mi) 16 + g +
 * 8j, conv row 2 pr + r, column 8 cg + 2t + c. The pooling is switched once a task, the activation once a task
 * (max pooling) or once four outputs, not once an output. Max pooling takes the maximum of the raw sums and
 * scales once: v -> a v + cm is monotone as a >= 0 (tc_weights negates the weights where the scaling's a is
 * negative), so this is exact. FAST: tanh.approx (conv_act.cuh). */
template <int MW, bool FAST>
__device__ __forceinline__ void tc_store(float *__restrict__ yp, const float (&acc)[MW][2][4], const float (&cm)[MW][2],
                                         const unsigned (&plane)[MW][2], bool col_in, int pr, int cg, int t,
                                         const tc_params &d) {
    if (d.pool == NC_MAXPOOL) {
        float o[MW * 2];
#pragma unroll
        for (int mi = 0; mi < MW; mi++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const float *a = acc[mi][0] + 2 * j, *b = acc[mi][1] + 2 * j;
                o[2 * mi + j] = fmaf(d.a, fmaxf(fmaxf(a[0], a[1]), fmaxf(b[0], b[1])), cm[mi][j]);
            }
        nc_act_n<FAST>(d.act, o);
        if (!col_in) return;
#pragma unroll
        for (int mi = 0; mi < MW; mi++)
#pragma unroll
            for (int j = 0; j < 2; j++)
                if (plane[mi][j] != ~0u) yp[plane[mi][j]] = o[2 * mi + j];
        return;
    }
    /* Average pooling or none: a channel's four values at a time, so that few are live at once (the full-size
     * output is bound by its stores, which want as many warps resident as the registers allow). */
#pragma unroll
    for (int mi = 0; mi < MW; mi++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
            float v[4]; /* [r][c] */
#pragma unroll
            for (int r = 0; r < 2; r++)
#pragma unroll
                for (int c = 0; c < 2; c++) v[2 * r + c] = fmaf(d.a, acc[mi][r][2 * j + c], cm[mi][j]);
            nc_act_n<FAST>(d.act, v);
            if (plane[mi][j] == ~0u) continue;
            if (d.pool == NC_AVGPOOL) {
                if (col_in) yp[plane[mi][j]] = (v[0] + v[1] + v[2] + v[3]) / 4.0f;
                continue;
            }
            float *ym = yp + plane[mi][j]; /* one base, so that column c + 1 is an immediate offset of c's store */
            const int ow = cg * 8 + 2 * t;
#pragma unroll
            for (int r = 0; r < 2; r++) {
                if (2 * pr + r >= d.Ho) continue;
                if (d.pairs && ow + 1 < d.Wo) /* 8 aligned bytes: a warp's store fills 32-byte sectors */
                    *reinterpret_cast<float2 *>(ym + r * d.Wo) = make_float2(v[2 * r], v[2 * r + 1]);
                else
#pragma unroll
                    for (int c = 0; c < 2; c++)
                        if (ow + c < d.Wo) ym[r * d.Wo + c] = v[2 * r + c];
            }
        }
}

/* Each block: its images in groups of d.ipb, group n + 1 fetched while group n is computed. smem holds xs
 * (ipb, XS), the staged tiles, then raw (2, ipb, RW), two groups' copies as fetched. Warp w computes the channels
 * of m group w % MG on the group's (image, row pair, column group) tasks w / MG, + warps / MG, ... MW m16 tiles per
 * warp; K at compile time so that every fragment array has constant indices. The bounds' 1 (a block an SM at
 * least): without it ptxas held some kernels to 64, 80 or 128 registers and spilled up to 36 bytes. */
template <int K, int MW, int MODE>
__global__ void __launch_bounds__(256, 1)
    conv_tc_kernel(float *__restrict__ y, const float *__restrict__ x, const uint8_t *__restrict__ xu,
                   const float *__restrict__ k, const float *__restrict__ bias, const tc_params d) {
    constexpr bool PAIRS = MODE >= MODE_F16;
    constexpr int KS = PAIRS ? (K * ((K + 1) / 2) + 7) / 8 : (K * K + 7) / 8;
    extern __shared__ __align__(16) uint32_t smem[];
    uint32_t *xs = smem, *raw = smem + d.ipb * d.XS;
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x;
    /* The lane through a shuffle: ptxas re-read threadIdx (S2R, tens of cycles) inside the task loop to recompute g
     * and t rather than keep them (the top stall in an ncu profile of version 10, 2026-11-22); a shuffle's result
     * it keeps. Measured side by side on the H100 (N = 10000, fused): 2017 layer tf32 0.299 -> 0.270 ms, fp16
     * 0.293 -> 0.279, 3xtf32 unchanged, and 1-4% off the 7x7 and 64x64 layers; but bf16 on the 2017 layer went
     * 0.280 -> 0.313 (other code around the MMAs), so bf16 keeps threadIdx. */
    const int lane = MODE != MODE_BF16 ? __shfl_sync(0xffffffffu, tid & 31, tid & 31) : tid & 31;
    const int warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int mg = warp % d.MG, wpg = (nt >> 5) / d.MG, wi = warp / d.MG;

    /* This block's images, and so its groups, before any work: the first group's copy starts at once. */
    const int nb = (int)((d.B - 1 - (int)blockIdx.x) / (int)gridDim.x) + 1, ngroups = (nb + d.ipb - 1) / d.ipb;
    tc_fetch(raw, x, xu, 0, nb < d.ipb ? nb : d.ipb, d);

    uint32_t ah[MW][KS][4], al[MW][KS][4];
    int off[KS][2];
    float cm[MW][2];
    unsigned plane[MW][2];
    tc_offsets<K, MODE, KS>(off, t, d.WS);
    tc_weights<K, MW, MODE, KS>(ah, al, cm, k, bias, mg, g, t, d);
    tc_planes<MW>(plane, mg, g, d);
    /* The tiles' margins stay zero: written once; each image writes only its own H x W. */
    for (int i = tid; i < d.ipb * d.XS; i += nt) xs[i] = 0u;

    const int NP = d.PR * d.CG;
    for (int gi = 0; gi < ngroups; gi++) {
        const int j0 = gi * d.ipb, n = nb - j0 < d.ipb ? nb - j0 : d.ipb;
        uint32_t *cur = raw + (gi & 1) * d.ipb * d.RW;
        if (gi + 1 < ngroups) /* into the other buffer: its last reader was the convert before the last barrier */
            tc_fetch(raw + ((gi + 1) & 1) * d.ipb * d.RW, x, xu, j0 + d.ipb,
                     nb - j0 - d.ipb < d.ipb ? nb - j0 - d.ipb : d.ipb, d);
        else
            asm volatile("cp.async.commit_group;" ::: "memory"); /* an empty group: wait_group 1 below stays right */
        asm volatile("cp.async.wait_group 1;" ::: "memory");     /* this thread's copies of group gi have landed */
        __syncthreads(); /* everyone's have, and the last group's tasks are done with xs */
        tc_convert<MODE>(xs, cur, xu != NULL, j0, n, d);
        __syncthreads();

        /* Task w: image w / NP of the group, row pair and column group from w % NP; stepped without dividing. */
        int i = wi / NP, pr = (wi - i * NP) / d.CG, cg = wi - i * NP - pr * d.CG;
        /* Image i's output (M, Yh, Yw); the group's next image is the grid's next, gridDim.x images on. */
        const size_t MYY = (size_t)d.M * d.Yh * d.Yw, next = (size_t)gridDim.x * MYY;
        float *yi = y + tc_image(j0 + i) * MYY;
        while (i < n) {
            const uint32_t *x0 = xs + i * d.XS + 2 * pr * d.WS + cg * 8 + g; // B's column g, conv row 2 pr
            float acc[MW][2][4];
#pragma unroll
            for (int mi = 0; mi < MW; mi++)
#pragma unroll
                for (int r = 0; r < 2; r++)
#pragma unroll
                    for (int e = 0; e < 4; e++) acc[mi][r][e] = 0.0f;
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
                uint32_t bh[2][2], bl[2][2];
#pragma unroll
                for (int r = 0; r < 2; r++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const uint32_t v = x0[r * d.WS + off[ks][h]]; /* TF32 already, or a pair */
                        if constexpr (MODE == MODE_SPLIT_AB) {
                            bh[r][h] = tc_tf32(__uint_as_float(v));
                            bl[r][h] = tc_tf32(__uint_as_float(v) - __uint_as_float(bh[r][h]));
                        } else {
                            bh[r][h] = v;
                        }
                    }
#pragma unroll
                for (int mi = 0; mi < MW; mi++)
#pragma unroll
                    for (int r = 0; r < 2; r++) {
                        if constexpr (PAIRS) {
                            tc_mma16<MODE>(acc[mi][r], ah[mi][ks], bh[r][0], bh[r][1]);
                        } else { /* the small terms first, then the large one */
                            if constexpr (MODE != MODE_TF32) tc_mma(acc[mi][r], al[mi][ks], bh[r][0], bh[r][1]);
                            if constexpr (MODE == MODE_SPLIT_AB) tc_mma(acc[mi][r], ah[mi][ks], bl[r][0], bl[r][1]);
                            tc_mma(acc[mi][r], ah[mi][ks], bh[r][0], bh[r][1]);
                        }
                    }
            }
            const bool pooled = d.pool != TC_NONE;
            const int col = pooled ? cg * 4 + t : cg * 8 + 2 * t;
            float *yp = yi + (unsigned)((pooled ? pr * d.Yw : 2 * pr * d.Wo) + col);
            tc_store<MW, MODE != MODE_SPLIT_A && MODE != MODE_SPLIT_AB>(yp, acc, cm, plane, !pooled || col < d.Yw, pr,
                                                                        cg, t, d);
            for (cg += wpg; cg >= d.CG;) {
                cg -= d.CG;
                if (++pr == d.PR) pr = 0, i++, yi += next;
            }
        }
    }
}

typedef void (*tc_kernel_fn)(float *, const float *, const uint8_t *, const float *, const float *, const tc_params);

template <int K, int MW> static tc_kernel_fn tc_pick(int mode) {
    if constexpr (MW < 4) { /* four tiles a warp only where the fragments fit: tc_mw */
        if (mode == MODE_SPLIT_A) return conv_tc_kernel<K, MW, MODE_SPLIT_A>;
        if (mode == MODE_SPLIT_AB) return conv_tc_kernel<K, MW, MODE_SPLIT_AB>;
    }
    switch (mode) {
    case MODE_TF32:
        if constexpr (MW == 4 && K > 5)
            return NULL;
        else
            return conv_tc_kernel<K, MW, MODE_TF32>;
    case MODE_F16: return conv_tc_kernel<K, MW, MODE_F16>;
    case MODE_BF16: return conv_tc_kernel<K, MW, MODE_BF16>;
    default: return NULL;
    }
}

/* Instantiated for K = 3..7, MW = 1, 2 and the five modes, and MW = 4 for fp16 and bf16, and tf32 with K <= 5 (63
 * kernels); images_per_block is a run-time value. */
template <int K> static tc_kernel_fn tc_pick_mw(int MW, int mode) {
    return MW == 1 ? tc_pick<K, 1>(mode) : MW == 2 ? tc_pick<K, 2>(mode) : tc_pick<K, 4>(mode);
}

static tc_kernel_fn tc_kernel_for(int K, int MW, int mode) {
    switch (K) {
    case 3: return tc_pick_mw<3>(MW, mode);
    case 4: return tc_pick_mw<4>(MW, mode);
    case 5: return tc_pick_mw<5>(MW, mode);
    case 6: return tc_pick_mw<6>(MW, mode);
    case 7: return tc_pick_mw<7>(MW, mode);
    default: return NULL;
    }
}

/* m16 tiles a warp: all of a layer's up to four (M <= 64) where their fragments fit in registers (one MMA a
 * product: fp16 and bf16, and tf32 with K <= 5) and the output is pooled, so that each B fragment loaded from
 * shared memory feeds four tiles' MMAs instead of two; else two, or one for M <= 16. Not for a full-size output:
 * that is bound by its stores, which want more warps in flight than four tiles' registers leave (2017 layer
 * unpooled, H100: 1.90 ms against 0.79 with two tiles a warp). */
static int tc_mw(int MT, int K, int mode, int pooled) {
    if (pooled && MT >= 4 && MT % 4 == 0 && (mode == MODE_F16 || mode == MODE_BF16 || (mode == MODE_TF32 && K <= 5)))
        return 4;
    return MT >= 2 ? 2 : 1;
}

/* The staged image tile's rows and columns: what the row pairs and column groups read, and at least the image
 * (which is staged whole). */
static void tc_tile(int H, int W, int K, const nc_conv_epilogue *e, int *RS, int *WS) {
    const int Ho = H - K + 1, Wo = W - K + 1;
    const int pooled = e->pool != TC_NONE;
    const int PR = pooled ? (Ho - 2) / 2 + 1 : (Ho + 1) / 2, Wc = pooled ? ((Wo - 2) / 2 + 1) * 2 : Wo;
    *RS = 2 * PR + K - 1 > H ? 2 * PR + K - 1 : H;
    *WS = (Wc + 7) / 8 * 8 + K - 1 > W ? (Wc + 7) / 8 * 8 + K - 1 : W;
}

/* Shared memory of a block taking ipb images: their tiles (XS words each) and two groups of raw copies. */
static size_t tc_bytes(int XS, int RW, int ipb) {
    return (size_t)ipb * (size_t)(XS + 2 * RW) * sizeof(uint32_t);
}

int nc_conv_tc_takes(int C, int H, int W, int M, int K, const nc_conv_epilogue *e) {
    if (C != 1 || K < 3 || K > 7 || M < 1 || M > TC_M_MAX || H < K || W < K) return 0;
    if (e->act != TC_NONE && e->act != NC_TANH && e->act != NC_RELU && e->act != NC_SIGMOID) return 0;
    if (e->pool != TC_NONE && !((e->pool == NC_MAXPOOL || e->pool == NC_AVGPOOL) && e->P == 2 && e->S == 2)) return 0;
    if (e->pool != TC_NONE && (H - K + 1 < 2 || W - K + 1 < 2)) return 0; /* nothing to pool: version 6 says so */
    if ((size_t)H * W > TC_SMEM_MAX) return 0;                            /* and no int overflow below */
    int RS, WS;
    tc_tile(H, W, K, e, &RS, &WS);
    return tc_bytes(RS * WS, H * W, 1) <= TC_SMEM_MAX; /* float input, the larger raw copy */
}

/* Blocks of `threads` that fit an SM with `bytes` of shared memory each (0 where none). */
static int tc_per_sm(tc_kernel_fn fn, int threads, size_t bytes, int *per_sm, nc_error *err) {
    CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, fn, threads, bytes));
    return NC_OK;
}

/* Versions 7..10 with images_per_block ipb (at most: halved until the blocks an SM are those of one image). */
static int tc_launch(int version, int ipb, float *y, const float *x, const uint8_t *x_u8, const nc_conv_lut *lut,
                     const float *k, const float *bias, int B, int C, int H, int W, int M, int K,
                     const nc_conv_epilogue *e, cudaStream_t stream, nc_error *err) {
    if (version < 7 || version > 10)
        return nc_fail(err, NC_ERR_ARG, "conv version %d is not a tensor-core version (7 to 10)", version);
    if (ipb < 1 || ipb > TC_IPB_MAX)
        return nc_fail(err, NC_ERR_ARG, "conv version %d: images_per_block %d is outside 1..%d", version, ipb,
                       TC_IPB_MAX);
    /* cp.async copies pixels in aligned 4-byte words: other pixel buffers go to version 6. */
    if (!nc_conv_tc_takes(C, H, W, M, K, e) || (x_u8 && (uintptr_t)x_u8 % 4 != 0))
        return nc_conv_launch_fused(y, x, x_u8, lut, k, bias, B, C, H, W, M, K, e, stream, err);
    if (B <= 0) return NC_OK;
    tc_params d;
    d.B = B, d.H = H, d.W = W, d.M = M;
    d.Ho = H - K + 1, d.Wo = W - K + 1;
    d.act = e->act, d.pool = e->pool;
    if (e->pool == TC_NONE) {
        d.Yh = d.Ho, d.Yw = d.Wo;
        d.PR = (d.Ho + 1) / 2, d.CG = (d.Wo + 7) / 8;
    } else {
        d.Yh = (d.Ho - 2) / 2 + 1, d.Yw = (d.Wo - 2) / 2 + 1;
        d.PR = d.Yh, d.CG = (2 * d.Yw + 7) / 8;
    }
    tc_tile(H, W, K, e, &d.RS, &d.WS);
    d.RW = x_u8 ? (H * W + 3) / 4 + 1 : H * W; /* pixels: a shifted image spans one word more */
    d.a = 1.0f, d.c = 0.0f, d.neg = 0;
    d.pairs = d.Wo % 2 == 0 && (uintptr_t)y % 8 == 0;
    if (x_u8) { /* the table is affine (see the header): its ends give a and c */
        d.c = lut->v[0];
        d.a = (float)(((double)lut->v[255] - (double)lut->v[0]) / 255.0);
        d.neg = d.a < 0.0f;
        d.a = fabsf(d.a);
    }
    const int MT = (M + 15) / 16;
    const int mode = version == 7   ? MODE_TF32
                     : version == 8 ? (x_u8 ? MODE_SPLIT_A : MODE_SPLIT_AB)
                     : version == 9 ? MODE_F16
                                    : MODE_BF16;
    d.XS = d.RS * d.WS;
    const int MW = tc_mw(MT, K, mode, e->pool != TC_NONE);
    d.MG = (MT + MW - 1) / MW;
    /* A multiple of MG warps a block, at least 4 (MG <= 8, so at most 8). */
    const int threads = 32 * d.MG * ((4 + d.MG - 1) / d.MG);
    const tc_kernel_fn fn = tc_kernel_for(K, MW, mode);
    int device = 0, sms = 0, optin = 0, per1 = 0, per = 0;
    CUDA_RET(cudaGetDevice(&device));
    CUDA_RET(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_RET(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    const size_t limit = (size_t)optin < TC_SMEM_MAX ? (size_t)optin : TC_SMEM_MAX;
    if (tc_bytes(d.XS, d.RW, 1) > limit) /* a GPU with less shared memory than Hopper's */
        return nc_conv_launch_fused(y, x, x_u8, lut, k, bias, B, C, H, W, M, K, e, stream, err);
    CUDA_RET(cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)limit));
    int rc = tc_per_sm(fn, threads, tc_bytes(d.XS, d.RW, 1), &per1, err);
    if (rc) return rc;
    const long resident = (long)sms * (per1 > 0 ? per1 : 1);
    const int blocks = (int)(resident < B ? resident : B), most = (B + blocks - 1) / blocks; /* images a block */
    /* More images a block only where each block still has two groups (one's copy overlapping the other's tasks),
     * and they cost no resident block nor more shared memory than allowed. */
    for (; ipb > 1; ipb /= 2) {
        if (2 * ipb > most || tc_bytes(d.XS, d.RW, ipb) > limit) continue;
        if ((rc = tc_per_sm(fn, threads, tc_bytes(d.XS, d.RW, ipb), &per, err))) return rc;
        if (per >= per1) break;
    }
    d.ipb = ipb;
    fn<<<(unsigned)blocks, threads, tc_bytes(d.XS, d.RW, ipb), stream>>>(y, x, x_u8, k, bias, d);
    CUDA_LAUNCHED();
    return NC_OK;
}

/* The tunings, the default first. Measured by `nanoconv bench --sweep` on an H100 (N = 10000, the six first
 * layers of the zoo, fused with uint8 input; docs/PERFORMANCE.md). With the kernel of 03:20 UTC, 2026-11-22, 2
 * images a block was fastest or within 2% everywhere. With four tiles a warp (05:01 UTC) 1 was 2-5% faster on the
 * 2017 layer and within 2.2% elsewhere, but a build that made 1 the default (with other changes) timed erratically
 * and was not kept: 2 stays. Several images a block never bought what was hoped: the next group's copy overlaps
 * the tasks anyway. tc_launch lowers it where the batch is small or the images large. */
static const nc_conv_tc_tuning tc_tunings[] = {{2}, {4}, {1}, {8}};

extern "C" const nc_conv_tc_tuning *nc_conv_tc_tunings(int *n) {
    *n = (int)(sizeof tc_tunings / sizeof tc_tunings[0]);
    return tc_tunings;
}

extern "C" int nc_conv_launch_tc_tuned(int version, const nc_conv_tc_tuning *tuning, float *y, const float *x,
                                       const uint8_t *x_u8, const nc_conv_lut *lut, const float *k, const float *bias,
                                       int B, int C, int H, int W, int M, int K, const nc_conv_epilogue *e,
                                       cudaStream_t stream, nc_error *err) {
    const int ipb = (tuning ? tuning : &tc_tunings[0])->images_per_block;
    return tc_launch(version, ipb, y, x, x_u8, lut, k, bias, B, C, H, W, M, K, e, stream, err);
}

int nc_conv_launch_tc(int version, float *y, const float *x, const uint8_t *x_u8, const nc_conv_lut *lut,
                      const float *k, const float *bias, int B, int C, int H, int W, int M, int K,
                      const nc_conv_epilogue *e, cudaStream_t stream, nc_error *err) {
    return nc_conv_launch_tc_tuned(version, NULL, y, x, x_u8, lut, k, bias, B, C, H, W, M, K, e, stream, err);
}

/* The convolution alone (versions 7..10 in conv_kernels.cu's table); what they do not take goes to version 5. */
static int tc_alone(int version, NC_CONV_LAUNCHER_ARGS) {
    const nc_conv_epilogue none = {TC_NONE, TC_NONE, 1, 1};
    return nc_conv_launch_tc(version, y, x, NULL, NULL, k, bias, B, C, H, W, M, K, &none, stream, err);
}

int nc_conv_launch_tf32(NC_CONV_LAUNCHER_ARGS) {
    return tc_alone(7, y, x, k, bias, B, C, H, W, M, K, stream, err);
}

int nc_conv_launch_3xtf32(NC_CONV_LAUNCHER_ARGS) {
    return tc_alone(8, y, x, k, bias, B, C, H, W, M, K, stream, err);
}

int nc_conv_launch_fp16(NC_CONV_LAUNCHER_ARGS) {
    return tc_alone(9, y, x, k, bias, B, C, H, W, M, K, stream, err);
}

int nc_conv_launch_bf16(NC_CONV_LAUNCHER_ARGS) {
    return tc_alone(10, y, x, k, bias, B, C, H, W, M, K, stream, err);
}
