/*
 * Tensor-core fused convolution for one-channel layers (C = 1): versions 7 and 8, reduced precision, opt-in.
 *
 * Per image the convolution is a GEMM run on mma.sync.m16n8k8 TF32: rows = output channels (M padded to 16s),
 * columns = output positions, inner = the K*K window (padded to 8s). A (the weights) sits in registers for the
 * whole kernel; B (the im2col) is never built: B[k][n] = xs[row(n) + k/K][col(n) + k%K] is read straight from the
 * image staged once in shared memory, with the per-thread offsets k/K*WS + k%K precomputed. Each warp computes
 * two n8 tiles at a time: conv rows 2i and 2i+1 over the same 8 columns, so that a thread's accumulators c0/c1
 * (columns 2t, 2t+1 of its channel, PTX ISA's m16n8 C fragment) of both tiles are one whole 2x2 pooling window:
 * bias, max (or the activations' mean), and the activation happen in registers and only the pooled output is
 * stored. Max first, then the activation: tanhf, relu and 1/(1+expf(-v)) are monotone, so this equals pooling
 * the activations. An image's pooled output (M, Yh, Yw) is one contiguous run of y: where it fits, it is gathered
 * in shared memory and written with coalesced 16-byte stores (a warp's fragment stores are 8 channels x 16 bytes,
 * half sectors, scattered). Measured: slower than the fragment stores it replaced (2017 layer, H100: 0.419 ->
 * 0.471 ms for version 7; docs/PERFORMANCE.md), so the stores were not the limit; to be removed after a run
 * confirms it.
 *
 *   7  tc-tf32: one MMA per product, the weights rounded to TF32 (10-bit mantissa); float inputs rounded too.
 *      Reduced precision (relative error ~1e-3 of sum |w x|).
 *      nanoconv eval --model M --backend cuda --precision tf32     (or --conv-kernel 7; Op Time's note: "tf32")
 *   8  tc-3xtf32: near-exact (~1e-6 of sum |w x|; not bitwise fp32). Each weight is split into a TF32 high
 *      part and the TF32 rounding of its remainder. uint8 pixels 0..255 are exact in TF32, so on the pixels only
 *      the weights need splitting: 2 MMAs (w_lo x p + w_hi x p) instead of 3xTF32's 3; float inputs are split
 *      too (3 MMAs: w_lo x x_hi + w_hi x x_lo + w_hi x x_hi).
 *      nanoconv eval --model M --backend cuda --precision 3xtf32   (or --conv-kernel 8; note: "3xtf32")
 *
 * On pixels the GEMM runs on the raw values p and the model's scaling is applied after: every scaling
 * (nc_scale_pixel: p, p/255, (p/255 - mean)/std) is affine, v(p) = a p + c, so sum w v(p) = a sum w p + c sum w.
 * C > 1, pooling other than 2/2, K outside 3..7, M > 256 or an image tile over 96 KB go to version 6
 * (conv_direct.cu) unchanged.
 */
#include "cuda/conv_ladder.h"
#include "cuda/cuda_check.h"

#define TC_SMEM_MAX (96 * 1024) /* above 48 KB with the kernel's opt-in, done at launch */
#define TC_M_MAX 256            /* 8 warps of two m16 tiles */
#define TC_STAGE_U 8            /* loads a thread has in flight while staging an image */

enum { TC_NONE = -1 };
/* How products are formed: MODE_TF32 one MMA; MODE_SPLIT_A two (B exact: pixels); MODE_SPLIT_AB three. */
enum { MODE_TF32 = 0, MODE_SPLIT_A = 1, MODE_SPLIT_AB = 2 };

struct tc_params {
    int B, H, W, M;
    int Ho, Wo;    /* the convolution's output */
    int Yh, Yw;    /* what is stored: the pooled output, or Ho x Wo */
    int PR, CG;    /* conv row pairs and 8-column groups computed */
    int RS, WS;    /* the staged image tile, zero past the image: (RS, WS) = (2 PR + K-1, 8 CG + K-1) */
    int act, pool; /* nc_layer_kind or TC_NONE */
    int MG;        /* groups of MW m16 tiles: warp w takes group w % MG */
    int words;     /* pixel input read as 4-byte words (H W % 4 == 0 and x_u8 4-byte aligned) */
    int ys;        /* pooled output gathered in shared memory, then stored whole (else stored from registers);
                      2: in float4s (Yh Yw % 4 == 0 and y 16-byte aligned) */
    int YS;        /* channel stride of that copy: >= Yh Yw, = 4 mod 8, so the 8 channels of a store hit 8 banks */
    float a, c;    /* pixel input: v(p) = a p + c (a = 1, c = 0 for float input) */
};

__device__ __forceinline__ uint32_t tc_tf32(float v) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

/* d += a b on one m16n8k8 tile: a is the 16x8 A fragment (a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)),
 * b0 = B[t][g], b1 = B[t+4][g]; d0, d1 = D[g][2t], D[g][2t+1]; d2, d3 the same on row g+8 (g = lane/4,
 * t = lane%4). */
__device__ __forceinline__ void tc_mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float tc_act(int act, float v) {
    switch (act) {
    case NC_TANH: return tanhf(v);
    case NC_RELU: return v > 0.0f ? v : 0.0f;
    case NC_SIGMOID: return 1.0f / (1.0f + expf(-v));
    default: return v;
    }
}

/* Stages the nw words of one image's pixels (H, W) into xs (RS, WS) as floats: TC_STAGE_U independent loads a
 * thread before their stores, so that an image costs about one memory latency, not one per pixel. */
__device__ __forceinline__ void tc_stage_words(float *xs, const uint32_t *__restrict__ src, int nw, int W, int WS) {
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x;
    for (int i0 = 0; i0 < nw; i0 += TC_STAGE_U * nt) {
        uint32_t v[TC_STAGE_U];
#pragma unroll
        for (int u = 0; u < TC_STAGE_U; u++) {
            const int i = i0 + u * nt + tid;
            v[u] = i < nw ? src[i] : 0u;
        }
#pragma unroll
        for (int u = 0; u < TC_STAGE_U; u++) {
            const int i = i0 + u * nt + tid;
            if (i >= nw) break;
            int r = 4 * i / W, s = 4 * i - r * W;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                xs[r * WS + s] = (float)((v[u] >> (8 * j)) & 0xFFu);
                if (++s == W) s = 0, r++;
            }
        }
    }
}

/* The same for HW float inputs (rounded to TF32 where round) or unaligned pixels, one element a load. */
__device__ __forceinline__ void tc_stage_elems(float *xs, const float *__restrict__ x, const uint8_t *__restrict__ xu,
                                               int HW, int W, int WS, bool round) {
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x;
    for (int i0 = 0; i0 < HW; i0 += TC_STAGE_U * nt) {
        float v[TC_STAGE_U];
#pragma unroll
        for (int u = 0; u < TC_STAGE_U; u++) {
            const int i = i0 + u * nt + tid;
            v[u] = i >= HW ? 0.0f : xu ? (float)xu[i] : x[i];
        }
#pragma unroll
        for (int u = 0; u < TC_STAGE_U; u++) {
            const int i = i0 + u * nt + tid;
            if (i >= HW) break;
            const int r = i / W;
            xs[r * WS + i - r * W] = round && !xu ? __uint_as_float(tc_tf32(v[u])) : v[u];
        }
    }
}

/* A persistent grid: each block takes images in turn, stages one in shared memory (xs, (RS, WS) floats: the
 * raw pixel values, or the float input; then ys, (M, YS) floats, the pooled output where d.ys), and its warps walk the
 * (row pair, column group) tiles, warp w on the channels of m group w % MG. MW m16 tiles per warp; K at compile time so
 * every fragment array has constant indices. */
template <int K, int MW, int MODE>
__global__ void __launch_bounds__(256)
    conv_tc_kernel(float *__restrict__ y, const float *__restrict__ x, const uint8_t *__restrict__ xu,
                   const float *__restrict__ k, const float *__restrict__ bias, const tc_params d) {
    constexpr int KK = K * K, KS = (KK + 7) / 8;
    extern __shared__ __align__(16) float xs[]; // (RS, WS), then ys
    float *ys = xs + (d.RS * d.WS + 3) / 4 * 4; // (M, YS) where d.ys, 16-byte aligned
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x;
    const int lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int mg = warp % d.MG, wpg = (nt >> 5) / d.MG, wi = warp / d.MG;

    /* This warp's weights as A fragments, high parts and (split modes) remainders; per channel g + 8r of each
     * m tile, sum w (for the pixel offset c) and the constant added after the GEMM. */
    uint32_t ah[MW][KS][4], al[MW][KS][4];
    int off[KS][2]; /* B[k][n] of k = 8 ks + t + 4h is xs[base(n) + off[ks][h]] */
    float cm[MW][2];
#pragma unroll
    for (int ks = 0; ks < KS; ks++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int kk = ks * 8 + t + 4 * h;
            off[ks][h] = kk < KK ? kk / K * d.WS + kk % K : 0; /* padded k: A is 0 there, any finite B does */
        }
#pragma unroll
    for (int mi = 0; mi < MW; mi++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int m = (mg * MW + mi) * 16 + g + 8 * r;
            float s = 0.0f;
#pragma unroll
            for (int ks = 0; ks < KS; ks++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int kk = ks * 8 + t + 4 * h;
                    const float w = m < d.M && kk < KK ? k[m * KK + kk] : 0.0f;
                    s += w;
                    const uint32_t hi = tc_tf32(w);
                    ah[mi][ks][r + 2 * h] = hi;
                    al[mi][ks][r + 2 * h] = tc_tf32(w - __uint_as_float(hi));
                }
            s += __shfl_xor_sync(0xffffffffu, s, 1);
            s += __shfl_xor_sync(0xffffffffu, s, 2);
            cm[mi][r] = d.c * s + (bias && m < d.M ? bias[m] : 0.0f);
        }

    const int NP = d.PR * d.CG, HW = d.H * d.W;
    /* The tile's margin past the image stays zero: written once; each image writes only its own H x W. */
    for (int i = tid; i < d.RS * d.WS; i += nt) xs[i] = 0.0f;
    for (int b = (int)blockIdx.x; b < d.B; b += (int)gridDim.x) {
        __syncthreads(); /* the last image is done with xs (and the margin is written) */
        const size_t img = (size_t)b * HW;
        if (d.words)
            tc_stage_words(xs, reinterpret_cast<const uint32_t *>(xu + img), HW / 4, d.W, d.WS);
        else
            tc_stage_elems(xs, xu ? NULL : x + img, xu ? xu + img : NULL, HW, d.W, d.WS, MODE == MODE_TF32);
        __syncthreads();
        for (int np = wi; np < NP; np += wpg) {
            const int pr = np / d.CG, cg = np % d.CG;
            const float *x0 = xs + 2 * pr * d.WS + cg * 8 + g; // B's column g of conv row 2 pr; row 2 pr + 1 is + WS
            float acc[MW][2][4];
#pragma unroll
            for (int mi = 0; mi < MW; mi++)
#pragma unroll
                for (int r = 0; r < 2; r++)
#pragma unroll
                    for (int j = 0; j < 4; j++) acc[mi][r][j] = 0.0f;
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
                uint32_t bh[2][2], bl[2][2];
#pragma unroll
                for (int r = 0; r < 2; r++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const float v = x0[r * d.WS + off[ks][h]];
                        if constexpr (MODE == MODE_SPLIT_AB) {
                            bh[r][h] = tc_tf32(v);
                            bl[r][h] = tc_tf32(v - __uint_as_float(bh[r][h]));
                        } else {
                            bh[r][h] = __float_as_uint(v); /* already TF32: a pixel, or rounded when staged */
                        }
                    }
#pragma unroll
                for (int mi = 0; mi < MW; mi++)
#pragma unroll
                    for (int r = 0; r < 2; r++) {
                        /* The small terms first, then the large one. */
                        if constexpr (MODE != MODE_TF32) tc_mma(acc[mi][r], al[mi][ks], bh[r][0], bh[r][1]);
                        if constexpr (MODE == MODE_SPLIT_AB) tc_mma(acc[mi][r], ah[mi][ks], bl[r][0], bl[r][1]);
                        tc_mma(acc[mi][r], ah[mi][ks], bh[r][0], bh[r][1]);
                    }
            }
            /* acc[mi][r][2j + c]: channel (mg MW + mi) 16 + g + 8j, conv row 2 pr + r, column 8 cg + 2t + c. */
#pragma unroll
            for (int mi = 0; mi < MW; mi++)
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    const int m = (mg * MW + mi) * 16 + g + 8 * j;
                    if (m >= d.M) continue;
                    float v[2][2];
#pragma unroll
                    for (int r = 0; r < 2; r++)
#pragma unroll
                        for (int c = 0; c < 2; c++) v[r][c] = fmaf(d.a, acc[mi][r][2 * j + c], cm[mi][j]);
                    float *ym = y + ((size_t)b * d.M + m) * d.Yh * d.Yw; // (Yh, Yw)
                    if (d.pool == NC_MAXPOOL || d.pool == NC_AVGPOOL) {
                        const int pc = cg * 4 + t;
                        if (pc >= d.Yw) continue;
                        float o;
                        if (d.pool == NC_MAXPOOL)
                            o = tc_act(d.act, fmaxf(fmaxf(v[0][0], v[0][1]), fmaxf(v[1][0], v[1][1])));
                        else
                            o = (tc_act(d.act, v[0][0]) + tc_act(d.act, v[0][1]) + tc_act(d.act, v[1][0]) +
                                 tc_act(d.act, v[1][1])) /
                                4.0f;
                        if (d.ys)
                            ys[m * d.YS + pr * d.Yw + pc] = o;
                        else
                            ym[pr * d.Yw + pc] = o;
                    } else {
#pragma unroll
                        for (int r = 0; r < 2; r++)
#pragma unroll
                            for (int c = 0; c < 2; c++) {
                                const int oh = 2 * pr + r, ow = cg * 8 + 2 * t + c;
                                if (oh < d.Ho && ow < d.Wo) ym[oh * d.Wo + ow] = tc_act(d.act, v[r][c]);
                            }
                    }
                }
        }
        if (d.ys) { /* the image's (M, Yh, Yw) from ys, 16 bytes a store where d.ys == 2 */
            __syncthreads();
            const int per = d.Yh * d.Yw;
            float *yb = y + (size_t)b * d.M * per;
            if (d.ys == 2) {
                const int per4 = per / 4, ys4 = d.YS / 4;
                for (int i = tid; i < d.M * per4; i += nt) {
                    const int m = i / per4;
                    reinterpret_cast<float4 *>(yb)[i] = reinterpret_cast<const float4 *>(ys)[i + m * (ys4 - per4)];
                }
            } else {
                for (int i = tid; i < d.M * per; i += nt) yb[i] = ys[i + i / per * (d.YS - per)];
            }
        }
    }
}

typedef void (*tc_kernel_fn)(float *, const float *, const uint8_t *, const float *, const float *, const tc_params);

template <int K> static tc_kernel_fn tc_pick(int MW, int mode) {
    if (MW == 1)
        return mode == MODE_TF32      ? conv_tc_kernel<K, 1, MODE_TF32>
               : mode == MODE_SPLIT_A ? conv_tc_kernel<K, 1, MODE_SPLIT_A>
                                      : conv_tc_kernel<K, 1, MODE_SPLIT_AB>;
    return mode == MODE_TF32      ? conv_tc_kernel<K, 2, MODE_TF32>
           : mode == MODE_SPLIT_A ? conv_tc_kernel<K, 2, MODE_SPLIT_A>
                                  : conv_tc_kernel<K, 2, MODE_SPLIT_AB>;
}

/* Instantiated for K = 3..7, MW = 1, 2 and the three modes (30 kernels). */
static tc_kernel_fn tc_kernel_for(int K, int MW, int mode) {
    switch (K) {
    case 3: return tc_pick<3>(MW, mode);
    case 4: return tc_pick<4>(MW, mode);
    case 5: return tc_pick<5>(MW, mode);
    case 6: return tc_pick<6>(MW, mode);
    case 7: return tc_pick<7>(MW, mode);
    default: return NULL;
    }
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

static size_t tc_smem(int H, int W, int K, const nc_conv_epilogue *e) {
    int RS, WS;
    tc_tile(H, W, K, e, &RS, &WS);
    return (size_t)RS * WS * sizeof(float);
}

int nc_conv_tc_takes(int C, int H, int W, int M, int K, const nc_conv_epilogue *e) {
    if (C != 1 || K < 3 || K > 7 || M < 1 || M > TC_M_MAX || H < K || W < K) return 0;
    if (e->act != TC_NONE && e->act != NC_TANH && e->act != NC_RELU && e->act != NC_SIGMOID) return 0;
    if (e->pool != TC_NONE && !((e->pool == NC_MAXPOOL || e->pool == NC_AVGPOOL) && e->P == 2 && e->S == 2)) return 0;
    if (e->pool != TC_NONE && (H - K + 1 < 2 || W - K + 1 < 2)) return 0; /* nothing to pool: version 6 says so */
    return tc_smem(H, W, K, e) <= TC_SMEM_MAX;
}

int nc_conv_launch_tc(int version, float *y, const float *x, const uint8_t *x_u8, const nc_conv_lut *lut,
                      const float *k, const float *bias, int B, int C, int H, int W, int M, int K,
                      const nc_conv_epilogue *e, cudaStream_t stream, nc_error *err) {
    if (version != 7 && version != 8)
        return nc_fail(err, NC_ERR_ARG, "conv version %d is not a tensor-core version (7 or 8)", version);
    if (!nc_conv_tc_takes(C, H, W, M, K, e))
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
    d.YS = (d.Yh * d.Yw + 3) / 4 * 4;
    if (d.YS % 8 == 0) d.YS += 4;
    const int ys_at = (d.RS * d.WS + 3) / 4 * 4; /* floats before ys */
    d.ys = e->pool != TC_NONE && (size_t)(ys_at + M * d.YS) * sizeof(float) <= TC_SMEM_MAX;
    if (d.ys && (d.Yh * d.Yw) % 4 == 0 && (uintptr_t)y % 16 == 0) d.ys = 2;
    d.a = 1.0f, d.c = 0.0f;
    d.words = x_u8 && (H * W) % 4 == 0 && (uintptr_t)x_u8 % 4 == 0;
    if (x_u8) { /* the table is affine (see the header): its ends give a and c */
        d.c = lut->v[0];
        d.a = (float)(((double)lut->v[255] - (double)lut->v[0]) / 255.0);
    }
    const int MT = (M + 15) / 16, MW = MT >= 2 ? 2 : 1;
    d.MG = (MT + MW - 1) / MW;
    const int mode = version == 7 ? MODE_TF32 : x_u8 ? MODE_SPLIT_A : MODE_SPLIT_AB;
    /* A multiple of MG warps a block, at least 4 (MG <= 8, so at most 8). */
    const int warps = d.MG * ((4 + d.MG - 1) / d.MG);
    const size_t smem = (size_t)(d.ys ? ys_at + M * d.YS : d.RS * d.WS) * sizeof(float);
    const tc_kernel_fn fn = tc_kernel_for(K, MW, mode);
    if (smem > 48 * 1024)
        CUDA_RET(cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int device = 0, sms = 0, per_sm = 0;
    CUDA_RET(cudaGetDevice(&device));
    CUDA_RET(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, 32 * warps, smem));
    const long blocks = (long)sms * (per_sm > 0 ? per_sm : 1);
    fn<<<(unsigned)(blocks < B ? blocks : B), 32 * warps, smem, stream>>>(y, x, x_u8, k, bias, d);
    CUDA_LAUNCHED();
    return NC_OK;
}

/* The convolution alone (versions 7 and 8 in conv_kernels.cu's table); what they do not take goes to version 5. */
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
