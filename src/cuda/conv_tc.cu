/*
 * Tensor-core fused convolution: versions 7 to 10, reduced precision, opt-in. One-channel layers (C = 1) below;
 * layers of several input channels (the zoo's second layers) on conv_tcc_kernel, further down.
 *
 * Per image the convolution is a GEMM on mma.sync: rows = output channels (M padded to 16s), columns = output
 * positions, inner = the K*K window. A (the weights) sits in registers for the whole kernel; B (the im2col) is
 * never built: B[k][n] is read straight from the image staged in shared memory at per-thread offsets computed
 * once. Each warp computes two n8 tiles at a time: conv rows 2i and 2i+1 over the same 8 columns, so that a
 * thread's accumulators c0/c1 (columns 2t, 2t+1 of its channel, PTX ISA's m16n8 C fragment) of both tiles are one
 * whole 2x2 pooling window: bias, max (or the activations' mean) and the activation happen in registers, and the
 * pooled output is stored from them, or staged (below). Max first, then the activation: tanh, relu and
 * 1/(1+expf(-v)) are monotone, so this equals pooling the activations.
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
 * instructions a pooled output before, the issue slots 60% busy, 2.4% of the instructions MMAs).
 *
 * The zoo's six first layers (tc_fixed_layer: for the modes and inputs each was measured faster on) have kernels of
 * their own shape (FIX > 0): every stride and offset an immediate, no switch in the epilogue, the channels past M
 * known; the 2017 kernel has 40% of the general one's instructions and 107 registers against 164. Their pooled
 * outputs are staged in shared memory and written by bulk copies (tc_flush). Neither alone paid, measured side by
 * side (H100, 2017 layer, fp16, N = 10000): the fixed shape alone 0.28 -> 0.33 ms (the warps, now issuing faster,
 * queued behind their 16-byte stores: MIO throttle and the stores' register scoreboards, 40% of the stall samples),
 * staging alone 0.25 -> 0.27 (the general kernel is bound by its own instructions, issue slots 36% busy); both
 * 0.28 -> 0.135 ms. All other layers take the general kernels.
 *
 *   7  tc-tf32: m16n8k8 TF32, one MMA per product, the weights rounded to TF32 (10-bit mantissa); float inputs
 *      rounded too. Reduced precision (relative error ~1e-3 of sum |w x|). A fused tanh is tanh.approx.f32
 *      (conv_act.cuh; relative error ~1e-5), as in versions 9 and 10; version 8 keeps the exact versions' nc_tanhf.
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
 * Pooling other than 2/2, K outside 3..7, M > 256, a float image's buffers over TC_SMEM_MAX or pixels not 4-byte
 * aligned go to version 6 (conv_direct.cu) unchanged; so do, where C > 1, version 8, uint8 input, M > 32, or an
 * image's buffers and the weights over TCC_SMEM_MAX.
 */
#include <string.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/conv_act.cuh"
#include "cuda/conv_ladder.h"
#include "cuda/cp_async.cuh"
#include "cuda/cuda_check.h"
#include "cuda/st_global.cuh"

#define TC_SMEM_MAX (192 * 1024) /* an image's buffers (images_per_block 1, float input) at most: H100 has 227 KB */
#define TC_M_MAX 256             /* 8 warps of two m16 tiles */
#define TC_IPB_MAX 16            /* the most images a tuning may give a block */

enum { TC_NONE = -1 };
/* How products are formed: MODE_TF32 one m16n8k8 TF32 MMA; MODE_SPLIT_A two (B exact: pixels); MODE_SPLIT_AB
 * three; MODE_F16 and MODE_BF16 one m16n8k16 MMA on pairs of taps. */
enum { MODE_TF32 = 0, MODE_SPLIT_A = 1, MODE_SPLIT_AB = 2, MODE_F16 = 3, MODE_BF16 = 4 };

/* A layer's geometry as the kernel walks it. */
struct tc_shape {
    int H, W, M;
    int Ho, Wo;    /* the convolution's output */
    int Yh, Yw;    /* what is stored: the pooled output, or Ho x Wo */
    int PR, CG;    /* conv row pairs and 8-column groups computed */
    int RS, WS;    /* the staged image tile, zero past the image: at least (2 PR + K-1, 8 CG + K-1), and the image */
    int XS;        /* 4-byte words of one staged tile: RS WS */
    int act, pool; /* nc_layer_kind or TC_NONE */
};

__host__ __device__ constexpr tc_shape tc_shape_of(int H, int W, int M, int K, int act, int pool) {
    tc_shape s{};
    s.H = H, s.W = W, s.M = M, s.act = act, s.pool = pool;
    s.Ho = H - K + 1, s.Wo = W - K + 1;
    if (pool == TC_NONE) {
        s.Yh = s.Ho, s.Yw = s.Wo;
        s.PR = (s.Ho + 1) / 2, s.CG = (s.Wo + 7) / 8;
    } else {
        s.Yh = (s.Ho - 2) / 2 + 1, s.Yw = (s.Wo - 2) / 2 + 1;
        s.PR = s.Yh, s.CG = (2 * s.Yw + 7) / 8;
    }
    s.RS = 2 * s.PR + K - 1 > H ? 2 * s.PR + K - 1 : H;
    s.WS = 8 * s.CG + K - 1 > W ? 8 * s.CG + K - 1 : W;
    s.XS = s.RS * s.WS;
    return s;
}

/* Layers with a kernel of their own (the course's "one kernel per layer shape where that pays"): conv_tc_kernel's
 * FIX > 0 is layer FIX of this list, whose shape is then known at compile time, so that every offset and stride is
 * an immediate, the epilogue has no switch and the channels past M are known; and these kernels stage their pooled
 * outputs (tc_flush). The zoo's six first layers; measured in docs/PERFORMANCE.md. */
struct tc_layer {
    int H, W, M, K, act, pool;
    int modes;  /* bit MODE_*: the modes that take this kernel, where it was measured faster than the general one */
    int floats; /* float input takes it too (else only uint8 pixels), where that was measured faster */
};
#define TC_ALL_MODES 0x1F                                                  /* all five */
#define TC_ONE_MMA ((1 << MODE_TF32) | (1 << MODE_F16) | (1 << MODE_BF16)) /* not the split modes */
#define TC_FIXED 6                                                         /* layers in the list */
__host__ __device__ constexpr tc_layer tc_fixed_layer(int fix) {
    /* 2018 and 2019 fall: 3xtf32 was 10% and 23% slower on them; 2018 fall on float input (its network's, resized
     * to 72 x 72) took 0.64 ms a 10000-image launch against 0.39 (fp16), the stage beside two float copies of the
     * image leaving one block an SM (H100, 2026-11-22). */
    return fix == 1   ? tc_layer{28, 28, 50, 5, NC_TANH, NC_MAXPOOL, TC_ALL_MODES, 1} /* fashion-2017 */
           : fix == 2 ? tc_layer{64, 64, 6, 5, NC_TANH, NC_MAXPOOL, TC_ALL_MODES, 1}  /* fashion-2018-spring */
           : fix == 3 ? tc_layer{48, 48, 6, 5, NC_TANH, NC_MAXPOOL, TC_ALL_MODES, 1}  /* fashion-2019-spring */
           : fix == 4 ? tc_layer{86, 86, 4, 7, NC_RELU, NC_MAXPOOL, TC_ALL_MODES, 1}  /* fashion-2020 */
           : fix == 5 ? tc_layer{72, 72, 12, 7, NC_TANH, NC_MAXPOOL, TC_ONE_MMA, 0}   /* fashion-2018-fall */
           : fix == 6 ? tc_layer{70, 70, 12, 5, NC_TANH, NC_MAXPOOL, TC_ONE_MMA, 1}   /* fashion-2019-fall */
                      : tc_layer{0, 0, 0, 0, TC_NONE, TC_NONE, 0, 0};
}
/* Max-pooled, and an image's pooled output whole 16-byte words (tc_flush), from layer `fix` on. */
__host__ __device__ constexpr bool tc_fixed_ok(int fix) {
    return fix > TC_FIXED || (tc_fixed_layer(fix).pool == NC_MAXPOOL &&
                              tc_fixed_layer(fix).M * ((tc_fixed_layer(fix).H - tc_fixed_layer(fix).K + 1) / 2) *
                                      ((tc_fixed_layer(fix).W - tc_fixed_layer(fix).K + 1) / 2) % 4 ==
                                  0 &&
                              tc_fixed_ok(fix + 1));
}
static_assert(tc_fixed_ok(1), "a fixed layer's pooled output is staged in 16-byte words");

struct tc_params {
    tc_shape s; /* read only by the kernels of no fixed shape (FIX 0) */
    int B;
    int ipb;    /* images staged and computed between two barriers */
    int RW;     /* 4-byte words of one image's raw copy */
    int C;      /* input channels: 1, or > 1 for conv_tcc_kernel */
    float a, c; /* pixel input: v(p) = (neg ? -a : a) p + c (a = 1, c = 0 for float input) */
    int neg;    /* the scaling's a was negative: the weights are negated in the fragments (tc_weights) */
    int pairs;  /* unpooled: Wo even and y 8-byte aligned, so that two adjacent outputs are one float2 store */
};

/* The shape a kernel walks: its own where FIX > 0 (constants), else the parameters'. */
template <int FIX> __device__ __forceinline__ tc_shape tc_shape_for(const tc_params &d) {
    if constexpr (FIX > 0) {
        constexpr tc_layer l = tc_fixed_layer(FIX);
        constexpr tc_shape s = tc_shape_of(l.H, l.W, l.M, l.K, l.act, l.pool);
        return s;
    } else {
        return d.s;
    }
}

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

/* The block's image j (images j0 + i of its sequence go to images blockIdx + (j0 + i) gridDim). */
__device__ __forceinline__ size_t tc_image(int j) {
    return (size_t)blockIdx.x + (size_t)j * gridDim.x;
}

/* Kernels of a fixed layer (FIX > 0) stage their pooled outputs: the tasks store an image's into shared memory,
 * one plane of PS words a channel (tc_stage_stride), and tc_flush hands them to the copy engine as bulk copies into
 * y (cp.async.bulk, sm_90, PTX ISA 8.0), which write whole 32-byte sectors and take the global stores off the
 * warps' memory pipe. Without it (2017 layer, ncu, 2026-11-22) each warp store wrote 16 bytes into each of 8
 * sectors, and the warps queued behind them (MIO throttle and their registers' scoreboards: 40% of the stall
 * samples). A bulk copy moves whole 16-byte words between 16-byte aligned addresses: where a plane (Yh Yw floats)
 * is whole words, one copy a plane, and PS is Yh Yw rounded up to 4 mod 8, so that a warp's stores (channels g at
 * PS g words, columns t) hit 32 different banks; else, where an image's M planes are whole words, one copy an
 * image, its planes packed as in y (PS = Yh Yw). */
__host__ __device__ constexpr int tc_stage_stride(int YY) {
    return YY % 4 != 0 ? YY : YY % 8 == 4 ? YY : YY + 4;
}

/* Bulk copies of the stage's n images (M planes each) to the block's images j0 .. j0+n-1 of y; this thread's, as
 * one bulk group. */
__device__ __forceinline__ void tc_flush(float *__restrict__ y, unsigned stage, int j0, int n, const tc_shape &S) {
#if __CUDA_ARCH__ >= 900
    const int YY = S.Yh * S.Yw, PS = tc_stage_stride(YY);
    const int per_image = YY % 4 != 0, copies = per_image ? n : n * S.M;
    for (int p = (int)threadIdx.x; p < copies; p += (int)blockDim.x) {
        const int i = per_image ? p : p / S.M, m = per_image ? 0 : p - i * S.M;
        float *dst = y + (tc_image(j0 + i) * S.M + m) * YY;
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst),
                     "r"(stage + 4u * (unsigned)(p * (per_image ? S.M * YY : PS))), "r"(4 * (per_image ? S.M * YY : YY))
                     : "memory");
    }
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
}

/* Until this thread's bulk copies have read the stage (WRITTEN: and written y). */
template <bool WRITTEN> __device__ __forceinline__ void tc_flush_wait() {
#if __CUDA_ARCH__ >= 900
    if constexpr (WRITTEN)
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    else
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
#endif
}

/* The stage's stores so far made visible to the copy engine (the async proxy), once a barrier follows. */
__device__ __forceinline__ void tc_stage_fence() {
#if __CUDA_ARCH__ >= 900
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

/* Where a block's stage starts, in 4-byte words of its shared memory: after ipb tiles and 2 ipb raw copies. */
__host__ __device__ constexpr int tc_stage_at(int XS, int RW, int ipb) {
    return (ipb * (XS + 2 * RW) + 3) / 4 * 4;
}

/* Issues (does not wait for) the copies of the block's images j0 .. j0+n-1 into raw (n, RW): n images of floats,
 * or of pixels from the 4-byte word that holds their first byte (the image starts at byte (b H W) % 4 of its
 * copy); the batch's last word reads only the batch's bytes. */
__device__ __forceinline__ void tc_fetch(uint32_t *raw, const float *__restrict__ x, const uint8_t *__restrict__ xu,
                                         int j0, int n, const tc_shape &S, const tc_params &d) {
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x;
    const size_t HW = (size_t)S.H * S.W;
    for (int i = 0; i < n; i++) {
        const size_t b = tc_image(j0 + i);
        uint32_t *dst = raw + i * d.RW;
        if (xu) {
            const size_t w0 = b * HW / 4, end = (size_t)d.B * HW;
            const int nw = (int)(((b + 1) * HW + 3) / 4 - w0);
            for (int w = tid; w < nw; w += nt) {
                const size_t at = 4 * (w0 + w);
                nc_cp_async4(dst + w, xu + at, end - at < 4 ? (int)(end - at) : 4);
            }
        } else {
            const float *src = x + b * HW;
            for (int w = tid; w < (int)HW; w += nt) nc_cp_async4(dst + w, src + w, 4);
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
__device__ __forceinline__ void tc_convert(uint32_t *xs, const uint32_t *raw, bool u8, int j0, int n, const tc_shape &S,
                                           const tc_params &d) {
    const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5, nw = (int)blockDim.x >> 5;
    const int HW4 = S.H * S.W & 3;
    for (int i = 0; i < n; i++) {
        const uint32_t *src = raw + i * d.RW;
        const int shift = u8 ? (int)(tc_image(j0 + i) & 3) * HW4 & 3 : 0; /* (b H W) % 4 */
        for (int r = warp; r < S.H; r += nw) {
            const int e0 = r * S.W;
            uint32_t *dst = xs + i * S.XS + r * S.WS;
            for (int c = lane; c < S.W; c += 32) {
                const float v = tc_raw(src, u8, shift, e0 + c);
                if constexpr (MODE >= MODE_F16) {
                    float unused0, unused1;
                    dst[c] =
                        tc_pack<MODE>(v, c + 1 < S.W ? tc_raw(src, u8, shift, e0 + c + 1) : 0.0f, &unused0, &unused1);
                } else {
                    dst[c] = MODE == MODE_TF32 && !u8 ? tc_tf32(v) : __float_as_uint(v);
                }
            }
        }
    }
}

/* k-steps of one channel's window: 8 taps (TF32 modes) or 8 pairs of horizontally adjacent taps (16-bit modes). */
__host__ __device__ constexpr int tc_ks(int K, int mode) {
    return mode >= MODE_F16 ? (K * ((K + 1) / 2) + 7) / 8 : (K * K + 7) / 8;
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
                                           int t, const tc_shape &S, const tc_params &d) {
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
                        const bool in = m < S.M && j < K * PPR;
                        const float w0 = in ? sg * k[m * KK + p * K + q] : 0.0f;
                        const float w1 = in && q + 1 < K ? sg * k[m * KK + p * K + q + 1] : 0.0f;
                        float r0, r1;
                        ah[mi][ks][r + 2 * h] = tc_pack<MODE>(w0, w1, &r0, &r1);
                        s += r0 + r1;
                    } else {
                        const float w = m < S.M && j < KK ? sg * k[m * KK + j] : 0.0f;
                        const uint32_t hi = tc_tf32(w);
                        ah[mi][ks][r + 2 * h] = hi;
                        al[mi][ks][r + 2 * h] = tc_tf32(w - __uint_as_float(hi));
                        s += MODE == MODE_TF32 ? __uint_as_float(hi) : w;
                    }
                }
            s += __shfl_xor_sync(0xffffffffu, s, 1);
            s += __shfl_xor_sync(0xffffffffu, s, 2);
            cm[mi][r] = d.c * (sg * s) + (bias && m < S.M ? bias[m] : 0.0f);
        }
}

/* Bias, activation and pooling of one task's accumulators. acc[mi][r][2j + c]: channel m0 + 16 mi + 8 j (m0 = mg MW
 * 16 + g, this thread's first), conv row 2 pr + r, column 8 cg + 2t + c. yp: where channel m0's first output of the
 * task goes in the image's output (M, Yh, Yw): (m0, pr, 4 cg + t) pooled, else (m0, 2 pr, 8 cg + 2 t); channel
 * m0 + n is n Yh Yw floats on (an immediate offset in a kernel of fixed shape). The pooling is switched once a task,
 * the activation once a task (max pooling) or once four outputs, not once an output. Max pooling takes the maximum
 * of the raw sums and scales once: v -> a v + cm is monotone as a >= 0 (tc_weights negates the weights where the
 * scaling's a is negative), so this is exact. FAST: tanh.approx, else nc_tanhf with the inline exponential
 * (conv_act.cuh's NC_TANH_EXACT_EX2). ST2: unpooled pairs by nc_st_global2, for conv_tcc_kernel, whose float2
 * assignment nvcc 13.0 split into two 4-byte stores (up to 1.23x on 2020's second layer alone); conv_tc_kernel's came
 * out whole, and with the asm its time moved by -5% to +7% on the first layers alone (H200 bench, 2026-11-28 17:40), so
 * it keeps the assignment. */
template <int MW, bool FAST, bool STAGE, bool ST2>
__device__ __forceinline__ void tc_store(float *__restrict__ yp, unsigned sp, const float (&acc)[MW][2][4],
                                         const float (&cm)[MW][2], int m0, bool col_in, int pr, int cg, int t,
                                         const tc_shape &S, const tc_params &d) {
    constexpr nc_tanh_form TANH = FAST ? NC_TANH_APPROX : NC_TANH_EXACT_EX2;
    const int YY = S.Yh * S.Yw;
    if (S.pool == NC_MAXPOOL) {
        float o[MW * 2];
#pragma unroll
        for (int mi = 0; mi < MW; mi++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const float *a = acc[mi][0] + 2 * j, *b = acc[mi][1] + 2 * j;
                o[2 * mi + j] = fmaf(d.a, fmaxf(fmaxf(a[0], a[1]), fmaxf(b[0], b[1])), cm[mi][j]);
            }
        nc_act_n<TANH>(S.act, o);
        if (!col_in) return;
#pragma unroll
        for (int mi = 0; mi < MW; mi++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                if (m0 + 16 * mi + 8 * j >= S.M) continue;
                if constexpr (STAGE)
                    asm volatile(
                        "st.shared.f32 [%0], %1;" ::"r"(sp + 4u * (unsigned)((16 * mi + 8 * j) * tc_stage_stride(YY))),
                        "f"(o[2 * mi + j])
                        : "memory");
                else
                    yp[(16 * mi + 8 * j) * YY] = o[2 * mi + j];
            }
        return;
    }
    if constexpr (!STAGE) { /* staged kernels are max-pooled: never here */
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
                nc_act_n<TANH>(S.act, v);
                if (m0 + 16 * mi + 8 * j >= S.M) continue;
                float *ym =
                    yp + (16 * mi + 8 * j) * YY; /* one base, so that column c + 1 is an immediate offset of c's */
                if (S.pool == NC_AVGPOOL) {
                    if (col_in) *ym = (v[0] + v[1] + v[2] + v[3]) / 4.0f;
                    continue;
                }
                const int ow = cg * 8 + 2 * t;
#pragma unroll
                for (int r = 0; r < 2; r++) {
                    if (2 * pr + r >= S.Ho) continue;
                    if (d.pairs && ow + 1 < S.Wo) { /* 8 aligned bytes: a warp's store fills 32-byte sectors */
                        if constexpr (ST2)
                            nc_st_global2(ym + r * S.Wo, v[2 * r], v[2 * r + 1]);
                        else
                            *reinterpret_cast<float2 *>(ym + r * S.Wo) = make_float2(v[2 * r], v[2 * r + 1]);
                    } else
#pragma unroll
                        for (int c = 0; c < 2; c++)
                            if (ow + c < S.Wo) ym[r * S.Wo + c] = v[2 * r + c];
                }
            }
    }
}

/* Each block: its images in groups of d.ipb, group n + 1 fetched while group n is computed. smem holds xs
 * (ipb, XS), the staged tiles, then raw (2, ipb, RW), two groups' copies as fetched, and in a fixed layer's kernel
 * (FIX > 0) the stage (ipb, M, PS) from word tc_stage_at: group n's outputs, flushed after the barrier that starts
 * group n + 1 and read out before its tasks store. Warp w computes the channels of m group w % MG on the group's
 * (image, row pair, column group) tasks w / MG, + warps / MG, ... MW m16 tiles per warp; K at compile time so that
 * every fragment array has constant indices. The bounds' 1 (a block an SM at least): without it ptxas held some
 * kernels to 64, 80 or 128 registers and spilled up to 36 bytes (and 128 for the four-tile fp16 kernels, for a
 * fourth block an SM, spilled and halved their speed: docs/PERFORMANCE-LOG.md). */
template <int K, int MW, int MODE, int FIX>
__global__ void __launch_bounds__(256, 1)
    conv_tc_kernel(float *__restrict__ y, const float *__restrict__ x, const uint8_t *__restrict__ xu,
                   const float *__restrict__ k, const float *__restrict__ bias, const tc_params d) {
    constexpr bool PAIRS = MODE >= MODE_F16;
    constexpr int KS = tc_ks(K, MODE);
    const tc_shape S = tc_shape_for<FIX>(d);
    const int MG = ((S.M + 15) / 16 + MW - 1) / MW; /* groups of MW m16 tiles: warp w takes group w % MG */
    /* The fixed layers' kernels stage their pooled outputs (tc_flush): (ipb, M, PS) floats after the raw copies. */
    constexpr bool STAGE = FIX > 0;
    const int PS = tc_stage_stride(S.Yh * S.Yw);
    extern __shared__ __align__(16) uint32_t smem[];
    uint32_t *xs = smem, *raw = smem + d.ipb * S.XS;
    const unsigned stage = (unsigned)__cvta_generic_to_shared(smem + tc_stage_at(S.XS, d.RW, d.ipb));
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x;
    /* The lane through a shuffle: ptxas re-read threadIdx (S2R, tens of cycles) inside the task loop to recompute g
     * and t rather than keep them (the top stall in an ncu profile of version 10, 2026-11-22); a shuffle's result
     * it keeps. Measured side by side on the H100 (N = 10000, fused): 2017 layer tf32 0.299 -> 0.270 ms, fp16
     * 0.293 -> 0.279, 3xtf32 unchanged, and 1-4% off the 7x7 and 64x64 layers; but bf16 on the 2017 layer went
     * 0.280 -> 0.313 (other code around the MMAs), so bf16 keeps threadIdx. */
    const int lane = MODE != MODE_BF16 ? __shfl_sync(0xffffffffu, tid & 31, tid & 31) : tid & 31;
    const int warp = tid >> 5, g = lane >> 2 & 7, t = lane & 3; /* & 7: so that the compiler knows g < 8 */
    const int mg = warp % MG, wpg = (nt >> 5) / MG, wi = warp / MG;
    const int m0 = mg * MW * 16 + g; /* this thread's first channel */

    /* This block's images, and so its groups, before any work: the first group's copy starts at once. */
    const int nb = (int)((d.B - 1 - (int)blockIdx.x) / (int)gridDim.x) + 1, ngroups = (nb + d.ipb - 1) / d.ipb;
    tc_fetch(raw, x, xu, 0, nb < d.ipb ? nb : d.ipb, S, d);

    uint32_t ah[MW][KS][4], al[MW][KS][4];
    int off[KS][2];
    float cm[MW][2];
    tc_offsets<K, MODE, KS>(off, t, S.WS);
    tc_weights<K, MW, MODE, KS>(ah, al, cm, k, bias, mg, g, t, S, d);
    /* The tiles' margins stay zero: written once; each image writes only its own H x W. */
    for (int i = tid; i < d.ipb * S.XS; i += nt) xs[i] = 0u;

    const int NP = S.PR * S.CG;
    for (int gi = 0; gi < ngroups; gi++) {
        const int j0 = gi * d.ipb, n = nb - j0 < d.ipb ? nb - j0 : d.ipb;
        uint32_t *cur = raw + (gi & 1) * d.ipb * d.RW;
        if (gi + 1 < ngroups) /* into the other buffer: its last reader was the convert before the last barrier */
            tc_fetch(raw + ((gi + 1) & 1) * d.ipb * d.RW, x, xu, j0 + d.ipb,
                     nb - j0 - d.ipb < d.ipb ? nb - j0 - d.ipb : d.ipb, S, d);
        else
            asm volatile("cp.async.commit_group;" ::: "memory"); /* an empty group: wait_group 1 below stays right */
        asm volatile("cp.async.wait_group 1;" ::: "memory");     /* this thread's copies of group gi have landed */
        if constexpr (STAGE) tc_stage_fence();
        __syncthreads(); /* everyone's have, and the last group's tasks are done with xs (and the stage) */
        if constexpr (STAGE)
            if (gi > 0) tc_flush(y, stage, j0 - d.ipb, d.ipb, S); /* the last group's outputs */
        tc_convert<MODE>(xs, cur, xu != NULL, j0, n, S, d);
        if constexpr (STAGE) tc_flush_wait<false>(); /* the stage read: the tasks below may refill it */
        __syncthreads();

        /* Task w: image w / NP of the group, row pair and column group from w % NP; stepped without dividing. */
        int i = wi / NP, pr = (wi - i * NP) / S.CG, cg = wi - i * NP - pr * S.CG;
        /* Channel m0 of image i's output (M, Yh, Yw); the group's next image is the grid's next, gridDim.x images
         * on. */
        const size_t MYY = (size_t)S.M * S.Yh * S.Yw, next = (size_t)gridDim.x * MYY;
        float *yi = y + tc_image(j0 + i) * MYY + m0 * S.Yh * S.Yw;
        unsigned si = stage + 4u * (unsigned)((i * S.M + m0) * PS); /* the same in the stage (STAGE) */
        while (i < n) {
            const uint32_t *x0 = xs + i * S.XS + 2 * pr * S.WS + cg * 8 + g; // B's column g, conv row 2 pr
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
                        const uint32_t v = x0[r * S.WS + off[ks][h]]; /* TF32 already, or a pair */
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
            const bool pooled = S.pool != TC_NONE;
            const int col = pooled ? cg * 4 + t : cg * 8 + 2 * t;
            const unsigned o = (unsigned)((pooled ? pr * S.Yw : 2 * pr * S.Wo) + col);
            tc_store<MW, MODE != MODE_SPLIT_A && MODE != MODE_SPLIT_AB, STAGE, false>(
                yi + o, si + 4 * o, acc, cm, m0, !pooled || col < S.Yw, pr, cg, t, S, d);
            for (cg += wpg; cg >= S.CG;) {
                cg -= S.CG;
                if (++pr == S.PR) pr = 0, i++, yi += next, si += 4u * (unsigned)(S.M * PS);
            }
        }
    }
    if constexpr (STAGE) { /* the last group's outputs */
        tc_stage_fence();
        __syncthreads();
        const int j0 = (ngroups - 1) * d.ipb;
        tc_flush(y, stage, j0, nb - j0, S);
        tc_flush_wait<true>();
    }
}

/* C > 1: versions 7, 9 and 10 on a layer of several input channels (the zoo's second layers), float input. The
 * GEMM with k running over the channels too, and ordered so that B's loads from shared memory are free of bank
 * conflicts. A row is (channel c, tap row p), R = c K + p; the four lanes t of a B fragment's k-group read rows
 * R = 4 m + t at one column slot (a pair of taps in the 16-bit modes, a tap in the TF32 modes), and the staged rows
 * are WS = 8 or 24 (mod 32) words apart (WS K apart a channel plane), so that the four rows land 8 banks apart and a
 * warp's 32 loads (8 columns g each) hit 32 banks. (In conv_tc_kernel's order three of the four lanes read one row:
 * 2 to 3 lanes a bank.) Group G = m QW + slot, QW slots a row; a k-step takes groups 2 s and 2 s + 1 (h); the last
 * quad of rows and group past the end are padded with zero weights. Each thread finds a group's row in a small
 * table in shared memory (tcc_weights) rather than divide by K.
 *
 * The weights, NS k-steps of MT m16 tiles, are too many for registers (2018 fall's second layer: 12 channels x 7 x
 * 7 x 24) and sit in shared memory as A fragments, a lane's four registers one 16-byte word, so that a warp's load
 * of a tile is conflict-free. One image at a time a block: its C planes staged in shared memory (tcc_convert) while
 * the next image's floats are copied by cp.async into a raw buffer behind them. Each warp takes
 * TCC_T of the image's (row pair, column group) tasks at a time and computes all of the layer's MT <= 2 m16
 * tiles of channels for them, so that each A fragment it loads feeds 2 MT T MMAs; the epilogue is tc_store's. */
#define TCC_M_MAX 32              /* two m16 tiles */
#define TCC_THREADS 512           /* at most (so at most 128 registers); tcc_make_plan picks 256, 512 or 128 */
#define TCC_SMEM_MAX (227 * 1024) /* Hopper's most a block: one image's buffers with the weights */

/* Tasks a warp computes at once, each A fragment it loads feeding 2 MT T MMAs: 2 (4 held more registers and slowed
 * the small layers; measured side by side on the H100, 2026-11-23). */
#define TCC_T 2

/* raw (the C H W floats of an image, as copied) -> xs, row c H + r of raw into row r of plane c, converted as
 * tc_convert does. Thread i takes elements i, i + threads, ... of raw, its row and column stepped, not divided: a
 * warp a row (tc_convert's way) left 31 of 32 lanes idle on a 33-wide row's second pass. */
template <int MODE>
__device__ __forceinline__ void tcc_convert(uint32_t *xs, const uint32_t *raw, int C, const tc_shape &S) {
    const int nt = (int)blockDim.x, W = S.W, n = C * S.H * W, dr = nt / W, dc = nt - dr * W;
    int e = (int)threadIdx.x, r = e / W, c = e - r * W, p = r / S.H;
    r -= p * S.H;
    for (; e < n; e += nt) {
        const float v = __uint_as_float(raw[e]);
        uint32_t o;
        if constexpr (MODE >= MODE_F16) {
            float unused0, unused1;
            o = tc_pack<MODE>(v, c + 1 < W ? __uint_as_float(raw[e + 1]) : 0.0f, &unused0, &unused1);
        } else {
            o = tc_tf32(v);
        }
        xs[p * S.XS + r * S.WS + c] = o;
        c += dc, r += dr;
        if (c >= W) c -= W, r++;
        while (r >= S.H) r -= S.H, p++;
    }
}

/* The k order's sizes: QW column slots a row (pairs or taps), Q quads of rows, NS k-steps. */
struct tcc_k {
    int QW, Q, NS;
};
__host__ __device__ constexpr tcc_k tcc_k_of(int C, int K, int mode) {
    return tcc_k{mode >= MODE_F16 ? (K + 1) / 2 : K, (C * K + 3) / 4,
                 ((C * K + 3) / 4 * (mode >= MODE_F16 ? (K + 1) / 2 : K) + 1) / 2};
}

/* The staged planes' strides for conv_tcc_kernel: WS up to 8 or 24 (mod 32) words, XS (a plane) up to WS K
 * (mod 32), so that rows R and R + 1 are WS apart mod 32 across planes too. */
__host__ __device__ constexpr tc_shape tcc_shape_of(int H, int W, int M, int K, int act, int pool) {
    tc_shape s = tc_shape_of(H, W, M, K, act, pool);
    while (s.WS % 32 != 8 && s.WS % 32 != 24) s.WS++;
    s.XS = s.RS * s.WS;
    while ((s.XS - s.WS * K) % 32 != 0) s.XS++;
    return s;
}

/* conv_tcc_kernel's shared memory, in 4-byte words: the weight fragments (NS MT 32 lanes x 4 words), the rows'
 * offsets (4 (Q + 1)), one image's C staged planes (XS words each), the next image's raw copy (C H W floats), each
 * 16-byte aligned. */
struct tcc_layout {
    int rows, xs, raw, words;
};
__host__ __device__ constexpr tcc_layout tcc_layout_of(int C, int MT, tcc_k k, int XS, int HW) {
    return tcc_layout{k.NS * MT * 128, k.NS * MT * 128 + 4 * (k.Q + 1),
                      k.NS * MT * 128 + 4 * (k.Q + 1) + (C * XS + 3) / 4 * 4,
                      k.NS * MT * 128 + 4 * (k.Q + 1) + (C * XS + 3) / 4 * 4 + (C * HW + 3) / 4 * 4};
}

/* Issues (does not wait for) the copy of image b's n floats into raw: 16 bytes at a time where they are whole
 * aligned 16-byte words. */
__device__ __forceinline__ void tcc_fetch(uint32_t *raw, const float *__restrict__ x, size_t b, int n) {
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x;
    const float *src = x + b * (size_t)n;
    if (n % 4 == 0 && (uintptr_t)x % 16 == 0) {
        for (int w = tid; w < n / 4; w += nt) nc_cp_async16(raw + 4 * w, src + 4 * w, 16);
    } else {
        for (int w = tid; w < n; w += nt) nc_cp_async4(raw + w, src + w, 4);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

/* The layer's weights into shared memory as A fragments in the k order above: word e = (s MT + mi) 128 + 4 lane +
 * (r + 2 h) holds, for the lane's (g, t), channel m = 16 mi + g + 8 r of group G = 2 s + h, row R = 4 (G / QW) + t,
 * slot G % QW (16-bit modes: a rounded pair; tf32: rounded); the rows' offsets in the staged planes (rows past
 * C K: 0, their weights are 0); and this thread's per-channel constants (the bias). */
template <int K, int MT, int MODE>
__device__ __forceinline__ void tcc_weights(uint32_t *wf, int *rows, float (&cm)[MT][2], const float *__restrict__ k,
                                            const float *__restrict__ bias, int g, const tc_shape &S, int C) {
    constexpr int KK = K * K;
    const tcc_k q = tcc_k_of(C, K, MODE);
    for (int e = (int)threadIdx.x; e < q.NS * MT * 128; e += (int)blockDim.x) {
        const int w = e & 3, ln = e >> 2 & 31, f = e >> 7, mi = f % MT, s = f / MT;
        const int m = mi * 16 + (ln >> 2) + 8 * (w & 1), G = 2 * s + (w >> 1);
        const int R = 4 * (G / q.QW) + (ln & 3), slot = G % q.QW, c = R / K, p = R - c * K;
        const bool in = m < S.M && R < C * K;               /* the padded quad's rows and group read 0 */
        const size_t at = ((size_t)m * C + c) * KK + p * K; /* row p of channel c of output channel m, where in */
        if constexpr (MODE >= MODE_F16) {
            float unused0, unused1;
            wf[e] = tc_pack<MODE>(in ? k[at + 2 * slot] : 0.0f, in && 2 * slot + 1 < K ? k[at + 2 * slot + 1] : 0.0f,
                                  &unused0, &unused1);
        } else {
            const float v = in ? k[at + slot] : 0.0f;
            wf[e] = tc_tf32(v);
        }
    }
    for (int R = (int)threadIdx.x; R < 4 * (q.Q + 1); R += (int)blockDim.x)
        rows[R] = R < C * K ? R / K * S.XS + R % K * S.WS : 0;
#pragma unroll
    for (int mi = 0; mi < MT; mi++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int m = mi * 16 + g + 8 * r;
            cm[mi][r] = bias && m < S.M ? bias[m] : 0.0f;
        }
}

template <int K, int MT, int MODE>
__global__ void __launch_bounds__(TCC_THREADS, 1)
    conv_tcc_kernel(float *__restrict__ y, const float *__restrict__ x, const uint8_t *__restrict__ xu,
                    const float *__restrict__ k, const float *__restrict__ bias, const tc_params d) {
    (void)xu; /* float input only */
    constexpr bool PAIRS = MODE >= MODE_F16;
    constexpr int T = TCC_T, QW = PAIRS ? (K + 1) / 2 : K, STEP = PAIRS ? 2 : 1; /* a slot's columns */
    const tc_shape S = d.s;
    const int C = d.C, HW = S.H * S.W;
    const tcc_k q = tcc_k_of(C, K, MODE);
    const tcc_layout L = tcc_layout_of(C, MT, q, S.XS, HW);
    extern __shared__ __align__(16) uint32_t smem[];
    int *rows = reinterpret_cast<int *>(smem + L.rows);
    uint32_t *xs = smem + L.xs, *raw = smem + L.raw;
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x, lane = tid & 31, warp = tid >> 5, nw = nt >> 5;
    const int g = lane >> 2 & 7, t = lane & 3;
    const int nb = (int)((d.B - 1 - (int)blockIdx.x) / (int)gridDim.x) + 1; /* this block's images */
    tcc_fetch(raw, x, tc_image(0), C * HW);

    float cm[MT][2];
    tcc_weights<K, MT, MODE>(smem, rows, cm, k, bias, g, S, C);
    for (int i = tid; i < C * S.XS; i += nt) xs[i] = 0u; /* the margins stay zero */

    const int NP = S.PR * S.CG, YY = S.Yh * S.Yw;
    const bool pooled = S.pool != TC_NONE;
    const uint4 *wl = reinterpret_cast<const uint4 *>(smem) + lane;
    const int *rt = rows + t; /* this lane's rows: 4 m + t */
    for (int j = 0; j < nb; j++) {
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        __syncthreads();                  /* image j landed; the last image's tasks are done with xs */
        tcc_convert<MODE>(xs, raw, C, S); /* its C planes as C tiles */
        __syncthreads();
        if (j + 1 < nb) tcc_fetch(raw, x, tc_image(j + 1), C * HW);
        float *yi = y + tc_image(j) * S.M * YY + g * YY;
        for (int w0 = warp * T; w0 < NP; w0 += nw * T) { /* tasks w0 .. w0 + T - 1 */
            int at[T];                                   /* B's column g, conv row 2 pr */
#pragma unroll
            for (int tt = 0; tt < T; tt++) {
                const int w = w0 + tt < NP ? w0 + tt : w0, pr = w / S.CG; /* past NP: task w0 again, not stored */
                at[tt] = 2 * pr * S.WS + (w - pr * S.CG) * 8 + g;
            }
            float acc[T][MT][2][4];
#pragma unroll
            for (int tt = 0; tt < T; tt++)
#pragma unroll
                for (int mi = 0; mi < MT; mi++)
#pragma unroll
                    for (int r = 0; r < 2; r++)
#pragma unroll
                        for (int e = 0; e < 4; e++) acc[tt][mi][r][e] = 0.0f;
            for (int s = 0; s < q.NS; s++) {
                uint32_t a[MT][4];
#pragma unroll
                for (int mi = 0; mi < MT; mi++) {
                    const uint4 w = wl[(s * MT + mi) * 32];
                    a[mi][0] = w.x, a[mi][1] = w.y, a[mi][2] = w.z, a[mi][3] = w.w;
                }
                int ob[2]; /* where this lane's k of groups 2 s and 2 s + 1 is, from a column's first */
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int G = 2 * s + h, m = G / QW;
                    ob[h] = rt[4 * m] + STEP * (G - m * QW);
                }
#pragma unroll
                for (int tt = 0; tt < T; tt++) {
                    uint32_t b[2][2];
#pragma unroll
                    for (int r = 0; r < 2; r++)
#pragma unroll
                        for (int h = 0; h < 2; h++) b[r][h] = xs[at[tt] + r * S.WS + ob[h]];
#pragma unroll
                    for (int mi = 0; mi < MT; mi++)
#pragma unroll
                        for (int r = 0; r < 2; r++) {
                            if constexpr (PAIRS)
                                tc_mma16<MODE>(acc[tt][mi][r], a[mi], b[r][0], b[r][1]);
                            else
                                tc_mma(acc[tt][mi][r], a[mi], b[r][0], b[r][1]);
                        }
                }
            }
#pragma unroll
            for (int tt = 0; tt < T; tt++) {
                if (w0 + tt >= NP) break;
                const int pr = (w0 + tt) / S.CG, cg = w0 + tt - pr * S.CG;
                const int col = pooled ? cg * 4 + t : cg * 8 + 2 * t;
                const int o = (pooled ? pr * S.Yw : 2 * pr * S.Wo) + col;
                tc_store<MT, true, false, true>(yi + o, 0u, acc[tt], cm, g, !pooled || col < S.Yw, pr, cg, t, S, d);
            }
        }
    }
}

typedef void (*tc_kernel_fn)(float *, const float *, const uint8_t *, const float *, const float *, const tc_params);

/* m16 tiles a warp: all of a layer's up to four (M <= 64) where their fragments fit in registers (one MMA a
 * product: fp16 and bf16, and tf32 with K <= 5) and the output is pooled, so that each B fragment loaded from
 * shared memory feeds four tiles' MMAs instead of two; else two, or one for M <= 16. Not for a full-size output:
 * that is bound by its stores, which want more warps in flight than four tiles' registers leave (2017 layer
 * unpooled, H100: 1.90 ms against 0.79 with two tiles a warp). */
__host__ __device__ constexpr int tc_mw(int MT, int K, int mode, int pooled) {
    if (pooled && MT >= 4 && MT % 4 == 0 && (mode == MODE_F16 || mode == MODE_BF16 || (mode == MODE_TF32 && K <= 5)))
        return 4;
    return MT >= 2 ? 2 : 1;
}

/* The kernel, where FIX (a fixed layer) takes MODE at this MW (tc_mw's for it): else NULL, and nothing
 * instantiated. */
template <int K, int MW, int MODE, int FIX> static tc_kernel_fn tc_if() {
    constexpr tc_layer l = tc_fixed_layer(FIX);
    if constexpr (FIX > 0 && (!(l.modes >> MODE & 1) || MW != tc_mw((l.M + 15) / 16, l.K, MODE, l.pool != TC_NONE)))
        return NULL;
    else
        return conv_tc_kernel<K, MW, MODE, FIX>;
}

template <int K, int MW, int FIX> static tc_kernel_fn tc_pick(int mode) {
    if constexpr (MW < 4) { /* four tiles a warp only where the fragments fit: tc_mw */
        if (mode == MODE_SPLIT_A) return tc_if<K, MW, MODE_SPLIT_A, FIX>();
        if (mode == MODE_SPLIT_AB) return tc_if<K, MW, MODE_SPLIT_AB, FIX>();
    }
    switch (mode) {
    case MODE_TF32:
        if constexpr (MW == 4 && K > 5)
            return NULL;
        else
            return tc_if<K, MW, MODE_TF32, FIX>();
    case MODE_F16: return tc_if<K, MW, MODE_F16, FIX>();
    case MODE_BF16: return tc_if<K, MW, MODE_BF16, FIX>();
    default: return NULL;
    }
}

/* Instantiated for K = 3..7, MW = 1, 2 and the five modes, and MW = 4 for fp16 and bf16, and tf32 with K <= 5 (63
 * kernels), and for the fixed layers (FIX > 0) at their K, the modes they take and the MW tc_mw gives each (tc_if);
 * images_per_block is a run-time value. */
template <int K, int FIX = 0> static tc_kernel_fn tc_pick_mw(int MW, int mode) {
    return MW == 1 ? tc_pick<K, 1, FIX>(mode) : MW == 2 ? tc_pick<K, 2, FIX>(mode) : tc_pick<K, 4, FIX>(mode);
}

/* conv_tcc_kernel for K = 3..7, MT = 1, 2 and the one-MMA modes (30 kernels). */
template <int K> static tc_kernel_fn tcc_pick(int MT, int mode) {
    switch (mode) {
    case MODE_TF32: return MT == 1 ? conv_tcc_kernel<K, 1, MODE_TF32> : conv_tcc_kernel<K, 2, MODE_TF32>;
    case MODE_F16: return MT == 1 ? conv_tcc_kernel<K, 1, MODE_F16> : conv_tcc_kernel<K, 2, MODE_F16>;
    case MODE_BF16: return MT == 1 ? conv_tcc_kernel<K, 1, MODE_BF16> : conv_tcc_kernel<K, 2, MODE_BF16>;
    default: return NULL;
    }
}

static tc_kernel_fn tcc_kernel_for(int K, int MT, int mode) {
    switch (K) {
    case 3: return tcc_pick<3>(MT, mode);
    case 4: return tcc_pick<4>(MT, mode);
    case 5: return tcc_pick<5>(MT, mode);
    case 6: return tcc_pick<6>(MT, mode);
    case 7: return tcc_pick<7>(MT, mode);
    default: return NULL;
    }
}

static tc_kernel_fn tc_kernel_for(int K, int MW, int mode, int fix) {
    static_assert(TC_FIXED == 6, "instantiate the new fixed layer here");
    switch (fix) {
    case 1: return tc_pick_mw<tc_fixed_layer(1).K, 1>(MW, mode);
    case 2: return tc_pick_mw<tc_fixed_layer(2).K, 2>(MW, mode);
    case 3: return tc_pick_mw<tc_fixed_layer(3).K, 3>(MW, mode);
    case 4: return tc_pick_mw<tc_fixed_layer(4).K, 4>(MW, mode);
    case 5: return tc_pick_mw<tc_fixed_layer(5).K, 5>(MW, mode);
    case 6: return tc_pick_mw<tc_fixed_layer(6).K, 6>(MW, mode);
    default: break;
    }
    switch (K) {
    case 3: return tc_pick_mw<3>(MW, mode);
    case 4: return tc_pick_mw<4>(MW, mode);
    case 5: return tc_pick_mw<5>(MW, mode);
    case 6: return tc_pick_mw<6>(MW, mode);
    case 7: return tc_pick_mw<7>(MW, mode);
    default: return NULL;
    }
}

/* Shared memory of a block taking ipb images: their tiles (XS words each), two groups of raw copies (RW), and
 * where the outputs are staged (SW words an image, tc_flush; 0: not) one group's stage, 16-byte aligned. */
static size_t tc_bytes(int XS, int RW, int ipb, int SW) {
    return ((size_t)tc_stage_at(XS, RW, ipb) + (size_t)ipb * (size_t)SW) * sizeof(uint32_t);
}

int nc_conv_tc_takes(int version, int C, int H, int W, int M, int K, const nc_conv_epilogue *e, int pixels) {
    if (version < 7 || version > 10) return 0;
    /* 3xtf32 on conv_tcc_kernel (three MMAs a product, the operands split as loaded) was no faster than version 6's
     * exact fp32 on the zoo's second layers (H100, 2026-11-23: 2 to 9% faster on the 12-channel ones, 15 to 18%
     * slower on the 6-channel ones), so version 8 leaves C > 1 to version 6. */
    if (C > 1 && (version == 8 || pixels)) return 0; /* and conv_tcc_kernel reads floats */
    if (C < 1 || K < 3 || K > 7 || M < 1 || M > (C == 1 ? TC_M_MAX : TCC_M_MAX) || H < K || W < K) return 0;
    if (e->act != TC_NONE && e->act != NC_TANH && e->act != NC_RELU && e->act != NC_SIGMOID) return 0;
    if (e->pool != TC_NONE && !((e->pool == NC_MAXPOOL || e->pool == NC_AVGPOOL) && e->P == 2 && e->S == 2)) return 0;
    if (e->pool != TC_NONE && (H - K + 1 < 2 || W - K + 1 < 2)) return 0; /* nothing to pool: version 6 says so */
    if ((size_t)C * H * W > TC_SMEM_MAX) return 0;                        /* and no int overflow below */
    if (C > 1) {                                                          /* the TF32 modes' fragments, the larger */
        const tc_shape s = tcc_shape_of(H, W, M, K, e->act, e->pool);
        return (size_t)tcc_layout_of(C, (M + 15) / 16, tcc_k_of(C, K, MODE_TF32), s.XS, H * W).words * 4 <=
               TCC_SMEM_MAX;
    }
    return tc_bytes(tc_shape_of(H, W, M, K, e->act, e->pool).XS, H * W, 1, 0) <= TC_SMEM_MAX; /* float: larger */
}

/* Blocks of `threads` that fit an SM with `bytes` of shared memory each (0 where none). */
static int tc_per_sm(tc_kernel_fn fn, int threads, size_t bytes, int *per_sm, nc_error *err) {
    CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, fn, threads, bytes));
    return NC_OK;
}

/* How versions 7..10 run a layer: the kernel, its parameters but the scaling's (a, c, neg), its grid. */
struct tc_plan {
    int taken; /* 0: not on the tensor cores (version 6 runs it) */
    int fix;   /* the kernel's fixed layer (tc_fixed_layer), 0: none */
    tc_kernel_fn fn;
    tc_params d;
    int blocks, threads;
    size_t bytes;
};

/* The plan of a layer with C > 1 (p->d filled in but for ipb): conv_tcc_kernel, one image a block at a time. */
static int tcc_make_plan(tc_plan *p, int mode, int K, int sms, size_t limit, nc_error *err) {
    tc_params &d = p->d;
    const int MT = (d.s.M + 15) / 16;
    d.s = tcc_shape_of(d.s.H, d.s.W, d.s.M, K, d.s.act, d.s.pool);
    const size_t bytes = (size_t)tcc_layout_of(d.C, MT, tcc_k_of(d.C, K, mode), d.s.XS, d.s.H * d.s.W).words * 4;
    if (bytes > limit) return NC_OK; /* a GPU with less shared memory than Hopper's */
    p->fn = tcc_kernel_for(K, MT, mode);
    CUDA_RET(cudaFuncSetAttribute((const void *)p->fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)limit));
    /* 8 warps a block, or 16 or 4 where those leave more warps an SM (the shared memory of an image's buffers often
     * leaves one block an SM, and a block's warps wait at its barriers while the image is staged); where they leave
     * as many, 8 (the order was not measured on its own). */
    static const int sizes[3] = {256, 512, 128};
    int best = 0;
    for (int i = 0; i < 3; i++) {
        const int threads = sizes[i];
        int per = 0;
        const int rc = tc_per_sm(p->fn, threads, bytes, &per, err);
        if (rc) return rc;
        if (per * threads > best) best = per * threads, p->threads = threads;
    }
    if (best == 0) p->threads = 128, best = 128;
    const long resident = (long)sms * (best / p->threads);
    p->blocks = (int)(resident < d.B ? resident : d.B);
    d.ipb = 1;
    p->bytes = bytes;
    p->taken = 1;
    return NC_OK;
}

/* The plan for images_per_block ipb at most (halved until the blocks an SM are those of one image). */
static int tc_make_plan(int version, int ipb, const void *y, const uint8_t *x_u8, int B, int C, int H, int W, int M,
                        int K, const nc_conv_epilogue *e, tc_plan *p, nc_error *err) {
    if (version < 7 || version > 10)
        return nc_fail(err, NC_ERR_ARG, "conv version %d is not a tensor-core version (7 to 10)", version);
    if (ipb < 1 || ipb > TC_IPB_MAX)
        return nc_fail(err, NC_ERR_ARG, "conv version %d: images_per_block %d is outside 1..%d", version, ipb,
                       TC_IPB_MAX);
    memset(p, 0, sizeof *p);
    /* cp.async copies pixels in aligned 4-byte words: other pixel buffers go to version 6. */
    if (!nc_conv_tc_takes(version, C, H, W, M, K, e, x_u8 != NULL) || (x_u8 && (uintptr_t)x_u8 % 4 != 0) || B <= 0)
        return NC_OK;
    tc_params &d = p->d;
    d.s = tc_shape_of(H, W, M, K, e->act, e->pool);
    d.B = B;
    d.RW = x_u8 ? (H * W + 3) / 4 + 1 : H * W; /* pixels: a shifted image spans one word more */
    d.C = C;
    d.a = 1.0f, d.c = 0.0f, d.neg = 0;
    d.pairs = d.s.Wo % 2 == 0 && (uintptr_t)y % 8 == 0;
    const int mode = version == 7   ? MODE_TF32
                     : version == 8 ? (x_u8 ? MODE_SPLIT_A : MODE_SPLIT_AB)
                     : version == 9 ? MODE_F16
                                    : MODE_BF16;
    const int MT = (M + 15) / 16, MW = tc_mw(MT, K, mode, e->pool != TC_NONE), MG = (MT + MW - 1) / MW;
    int device = 0, sms = 0, optin = 0, major = 0, per1 = 0, per = 0;
    CUDA_RET(cudaGetDevice(&device));
    CUDA_RET(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_RET(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    CUDA_RET(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    if (C > 1) return tcc_make_plan(p, mode, K, sms, (size_t)optin < TCC_SMEM_MAX ? (size_t)optin : TCC_SMEM_MAX, err);
    const size_t limit = (size_t)optin < TC_SMEM_MAX ? (size_t)optin : TC_SMEM_MAX;
    /* A fixed layer's kernel where its stage's bulk copies can run: sm_90 and up, y 16-byte aligned. */
    for (int f = 1; f <= TC_FIXED && major >= 9 && (uintptr_t)y % 16 == 0; f++) {
        const tc_layer l = tc_fixed_layer(f);
        if (l.H == H && l.W == W && l.M == M && l.K == K && l.act == e->act && l.pool == e->pool &&
            (l.modes >> mode & 1) && (x_u8 || l.floats))
            p->fix = f;
    }
    const int SW = p->fix ? M * tc_stage_stride(d.s.Yh * d.s.Yw) : 0; /* the stage: an image's words */
    /* A multiple of MG warps a block, at least 4 (MG <= 8, so at most 8). */
    p->threads = 32 * MG * ((4 + MG - 1) / MG);
    p->fn = tc_kernel_for(K, MW, mode, p->fix);
    if (tc_bytes(d.s.XS, d.RW, 1, SW) > limit) return NC_OK; /* a GPU with less shared memory than Hopper's */
    CUDA_RET(cudaFuncSetAttribute((const void *)p->fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)limit));
    int rc = tc_per_sm(p->fn, p->threads, tc_bytes(d.s.XS, d.RW, 1, SW), &per1, err);
    if (rc) return rc;
    const long resident = (long)sms * (per1 > 0 ? per1 : 1);
    p->blocks = (int)(resident < B ? resident : B);
    const int most = (B + p->blocks - 1) / p->blocks; /* images a block */
    /* More images a block only where each block still has two groups (one's copy overlapping the other's tasks),
     * and they cost no resident block nor more shared memory than allowed. */
    for (; ipb > 1; ipb /= 2) {
        if (2 * ipb > most || tc_bytes(d.s.XS, d.RW, ipb, SW) > limit) continue;
        if ((rc = tc_per_sm(p->fn, p->threads, tc_bytes(d.s.XS, d.RW, ipb, SW), &per, err))) return rc;
        if (per >= per1) break;
    }
    d.ipb = ipb;
    p->bytes = tc_bytes(d.s.XS, d.RW, ipb, SW);
    p->taken = 1;
    return NC_OK;
}

static int tc_launch(int version, int ipb, float *y, const float *x, const uint8_t *x_u8, const nc_conv_lut *lut,
                     const float *k, const float *bias, int B, int C, int H, int W, int M, int K,
                     const nc_conv_epilogue *e, cudaStream_t stream, nc_error *err) {
    tc_plan p;
    const int rc = tc_make_plan(version, ipb, y, x_u8, B, C, H, W, M, K, e, &p, err);
    if (rc) return rc;
    if (!p.taken)
        return B <= 0 ? NC_OK : nc_conv_launch_fused(y, x, x_u8, lut, k, bias, B, C, H, W, M, K, e, stream, err);
    if (x_u8) { /* the table is affine (see the header): its ends give a and c */
        p.d.c = lut->v[0];
        p.d.a = (float)(((double)lut->v[255] - (double)lut->v[0]) / 255.0);
        p.d.neg = p.d.a < 0.0f;
        p.d.a = fabsf(p.d.a);
    }
    p.fn<<<(unsigned)p.blocks, p.threads, p.bytes, stream>>>(y, x, x_u8, k, bias, p.d);
    CUDA_LAUNCHED();
    return NC_OK;
}

/* The tunings, the default first. Measured by `nanoconv bench --sweep` on an H100 (N = 10000, the six first
 * layers of the zoo, fused with uint8 input; docs/PERFORMANCE-LOG.md). With the kernel of 03:20 UTC, 2026-11-22, 2
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

extern "C" int nc_conv_tc_describe(int version, const nc_conv_tc_tuning *tuning, const float *y, const uint8_t *x_u8,
                                   int B, int C, int H, int W, int M, int K, const nc_conv_epilogue *e,
                                   nc_conv_tc_launch *out, nc_error *err) {
    tc_plan p;
    const int rc = tc_make_plan(version, (tuning ? tuning : &tc_tunings[0])->images_per_block, y, x_u8, B, C, H, W, M,
                                K, e, &p, err);
    if (rc) return rc;
    out->tensor_cores = p.taken;
    out->fixed_shape = p.taken ? p.fix : 0;
    out->images_per_block = p.taken ? p.d.ipb : 0;
    out->blocks = p.blocks, out->threads = p.threads;
    out->shared_bytes = p.bytes;
    return NC_OK;
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
