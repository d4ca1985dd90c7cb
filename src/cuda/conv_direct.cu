/*
 * Register-tiled direct convolution with K known at compile time: versions 5 and 6.
 *
 *   5  direct: each thread computes a PT x PT patch of the output for MB output channels at once, from a
 *      (PT+K-1)^2 window of the input held in registers; K, PT and MB are template parameters, so every loop
 *      over the window and the weights unrolls and every register array is indexed by constants; pointers are
 *      __restrict__. A block takes bands of rows of one image (every input channel) in turn, with the
 *      weights (padded to float4 rows) in shared memory: each input pixel comes from global memory once per block
 *      and each weight is a broadcast 16-byte load reused PT*PT times. The next band is copied by cp.async while
 *      this one is computed, into the other of two buffers; unpooled outputs go out as float2 pairs.
 *      nanoconv eval --model M --backend cuda --conv-kernel 5
 *   6  fused: the same kernel with the epilogue on: + bias, the activation, and PT x PT pooling (P = S = PT)
 *      before the one store, so the full-size convolution output never goes to memory (4x or 16x fewer bytes
 *      written), and the input may be read as uint8 pixels (4x fewer bytes read): copied ahead as they are
 *      (where 4-byte aligned; else read as they are converted) and turned into floats through the model's
 *      scaling table after the previous band's arithmetic. Asked for a convolution alone it is version 5.
 *      nanoconv eval --model M --backend cuda --conv-kernel 6     (Op Time's note: "fused tanh+maxpool")
 * Layers of several channels on float input go to conv_directc.cu's kernel where it takes them (the zoo's second
 * layers: it is 1.2 to 1.4 times as fast there); this one keeps one-channel layers, uint8 pixels and the rest.
 *
 * Each output is summed over c, p, q in the reference's order with fused multiply-adds. For max pooling the
 * epilogue takes the window's maximum first and applies bias and activation to it once: adding a constant and
 * the three activations are monotone in floating point, so this is max(act(conv + bias)) exactly, with a
 * quarter (P = 2) of the tanh evaluations. The epilogue switches on the pooling and the activation once for a
 * thread's MB channels (conv_act.cuh), not once an output: that cut the 2017 kernel's code from about 21,000
 * instructions to 6,300 and its registers from 128 with spills to 110 without, and with the band's loads batched
 * (8 in flight a thread, since replaced by the copy ahead) took the 2017 layer fused from 0.87 to 0.70 ms and
 * 2018 fall's second layer from 9.3 to 7.8 ms (H100, 2026-11-22; ncu had put an instruction-cache stall, the
 * staging barrier and the staging loads' latency first among the stalls). Copying the next band by cp.async
 * instead of loading this one between two barriers, and storing unpooled pairs as float2, took the zoo's first
 * layers alone from 0.49-2.36 ms to 0.29-1.59 ms (the 2017 layer 1.32 -> 0.57) and fused on uint8 pixels from
 * 0.46-1.93 to 0.29-1.59 (2017 0.70 -> 0.64; H100, 2026-11-23, docs/PERFORMANCE.md).
 */
#include "cuda/conv_act.cuh"
#include "cuda/conv_ladder.h"
#include "cuda/cp_async.cuh"
#include "cuda/cuda_check.h"

/* Shared memory a block's bands are sized for (above 48 KB only with the kernel's opt-in, done at launch); a layer
 * whose band of one patch row does not fit in it takes up to the device's opt-in limit (227 KB on an H100). */
#define DIRECT_SMEM_MAX (96 * 1024)
#define DIRECT_MAX_THREADS 256
#define DIRECT_W_ALL_MAX (64 * 1024)
/* The blocks an SM each kernel must allow (__launch_bounds__), which sets ptxas's register budget: with none it
 * held kernels of 4 or 6 channels a thread to 80 registers and spilled up to 32 bytes; one block lets them take
 * 93 to 114 and spill nothing, and two keep those of 10 channels at 128 registers, without spills either. */
#define DIRECT_MIN_BLOCKS(PT, MB) ((PT) == 2 && (MB) == 10 ? 2 : 1)

enum { EPI_NONE = -1 };

struct direct_params {
    int C, H, W, M;
    int pr_total, pc; /* patch rows and columns of the whole output */
    int band_pr;      /* patch rows per block */
    int Ho, Wo;       /* the convolution's output */
    int Yh, Yw;       /* what is stored: the pooled output, or Ho x Wo */
    int act, pool;    /* nc_layer_kind or EPI_NONE */
    int bands, work;  /* bands per image; work items (image, band) = B * bands */
    int w_all;        /* every group's weights staged once per block (else one group at a time) */
    int RB, WS;       /* a staged band: rows, and the row stride (band_pr PT + K - 1, pc PT + K - 1) */
    int RW;       /* uint8 input: 4-byte words of a channel's raw copy (its band's bytes from the word of the first) */
    int u8_async; /* uint8 input 4-byte aligned: copied by cp.async (else read at conversion) */
    int pairs;    /* unpooled, Wo even and y 8-byte aligned: two adjacent outputs are one float2 store */
};

/* A walk over a band's (C, RB, WS) elements i = tid, tid + nt, ... without a division a step: where the thread
 * starts and, for nt elements, how many channels, rows and columns it moves. */
struct direct_walk {
    int c0, r0, s0, dc, dr, ds;
};

__device__ __forceinline__ direct_walk direct_walk_for(const direct_params &d, int tid, int nt) {
    const int plane = d.RB * d.WS;
    return {tid / plane, tid / d.WS % d.RB, tid % d.WS, nt / plane, nt / d.WS % d.RB, nt % d.WS};
}

__device__ __forceinline__ void direct_step(const direct_params &d, const direct_walk &wk, int &c, int &r, int &s) {
    s += wk.ds;
    if (s >= d.WS) s -= d.WS, r++;
    r += wk.dr;
    if (r >= d.RB) r -= d.RB, c++;
    c += wk.dc;
}

/* Issues (does not wait for) the copies of work item `item`'s band, as one cp.async group: float input straight
 * into xs (C, RB, WS), zeros past the image; uint8 pixels (4-byte aligned) into raw (C, RW words), each channel's
 * band rows from the word that holds their first byte, zeros past them. Unaligned pixels are read when converted. */
template <int PT>
__device__ __forceinline__ void direct_fetch(float *xs, uint32_t *raw, const float *__restrict__ x,
                                             const uint8_t *__restrict__ xu, const direct_params &d,
                                             const direct_walk &wk, int item, int tid, int nt) {
    const size_t b = (size_t)(item / d.bands);
    const int h0 = item % d.bands * d.band_pr * PT, rows = min(d.RB, d.H - h0);
    if (xu) {
        if (d.u8_async)
            for (int i = tid; i < d.C * d.RW; i += nt) {
                const int c = i / d.RW, w = i - c * d.RW;
                const size_t start = ((b * d.C + c) * d.H + h0) * d.W, stop = start + (size_t)rows * d.W;
                const size_t at = (start & ~(size_t)3) + 4 * (size_t)w;
                const int bytes = at >= stop ? 0 : stop - at < 4 ? (int)(stop - at) : 4;
                nc_cp_async4(raw + i, bytes ? xu + at : xu, bytes);
            }
    } else {
        int c = wk.c0, r = wk.r0, s = wk.s0;
        for (int i = tid; i < d.C * d.RB * d.WS; i += nt) {
            const bool in = r < rows && s < d.W;
            nc_cp_async4(xs + i, in ? x + ((b * d.C + c) * d.H + h0 + r) * d.W + s : x, in ? 4 : 0);
            direct_step(d, wk, c, r, s);
        }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

/* uint8 input: item `item`'s band into xs (C, RB, WS) as floats through the lut sl, zeros past the image; the pixels
 * from raw (direct_fetch's copy) or, unaligned, from global memory. */
template <int PT>
__device__ __forceinline__ void direct_convert(float *xs, const uint32_t *raw, const uint8_t *__restrict__ xu,
                                               const float *sl, const direct_params &d, const direct_walk &wk, int item,
                                               int tid, int nt) {
    const size_t b = (size_t)(item / d.bands);
    const int h0 = item % d.bands * d.band_pr * PT, rows = min(d.RB, d.H - h0);
    int c = wk.c0, r = wk.r0, s = wk.s0;
    for (int i = tid; i < d.C * d.RB * d.WS; i += nt) {
        float v = 0.0f;
        if (r < rows && s < d.W) {
            const size_t start = ((b * d.C + c) * d.H + h0) * d.W;
            const int at = r * d.W + s;
            v = sl[d.u8_async ? reinterpret_cast<const uint8_t *>(raw + c * d.RW)[(start & 3) + at] : xu[start + at]];
        }
        xs[i] = v;
        direct_step(d, wk, c, r, s);
    }
}

/* A persistent grid (as many blocks as fit on the GPU at once): each block takes work items (image, band) in
 * turn; blockDim.x threads walk the band's patches. The next item's band is copied by cp.async while this one's is
 * computed, so that the copy's memory latency is behind the arithmetic (it was a barrier stall of 15% and a load
 * stall of 6% on the 2017 layer: ncu, 2026-11-22). Dynamic shared memory:
 *   ws (G, C, MB, KK4)  the weights, each (m, c) row of K*K padded with zeros to KK4 (a multiple of 4), for all
 *                       G = ceil(M / MB) groups staged once (w_all), or for one group at a time
 *   xs (2, C, RB, WS)   two bands, zero past the image: one computed, the other being copied (float input) or
 *                       converted from raw after the arithmetic (uint8)
 *   raw (2, C, RW)      uint8 input: the pixels of the next two items as copied (4-byte words)
 *   lut (256)           uint8 input only (xu not NULL; a run-time choice, as it costs only the staging) */
template <int K, int PT, int MB>
__global__ void __launch_bounds__(DIRECT_MAX_THREADS, DIRECT_MIN_BLOCKS(PT, MB))
    conv_direct_kernel(float *__restrict__ y, const float *__restrict__ x, const uint8_t *__restrict__ xu,
                       const nc_conv_lut lut, const float *__restrict__ k, const float *__restrict__ bias,
                       const direct_params d) {
    constexpr int KK = K * K, KK4 = (KK + 3) / 4 * 4, WN = PT + K - 1;
    extern __shared__ __align__(16) float smem[];
    const int C = d.C, RB = d.RB, WS = d.WS, band = C * RB * WS;
    const int G = (d.M + MB - 1) / MB;
    float *ws = smem;                                                     // (G or 1, C, MB, KK4)
    float *xs = ws + (d.w_all ? G : 1) * C * MB * KK4;                    // (2, C, RB, WS)
    uint32_t *raw = reinterpret_cast<uint32_t *>(xs + 2 * band);          // (2, C, RW), uint8 input only
    float *sl = reinterpret_cast<float *>(raw + (xu ? 2 * C * d.RW : 0)); // (256), uint8 input only
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x;
    const direct_walk wk = direct_walk_for(d, tid, nt);

    if (xu)
        for (int i = tid; i < 256; i += nt) sl[i] = lut.v[i];
    if (d.w_all) {
        for (int i = tid; i < G * C * MB * KK4; i += nt) {
            const int g = i / (C * MB * KK4), c = i / (MB * KK4) % C, mi = i / KK4 % MB, j = i % KK4;
            const int m = g * MB + mi;
            ws[i] = (m < d.M && j < KK) ? k[((size_t)m * C + c) * KK + j] : 0.0f;
        }
    }
    /* uint8 input runs one item further ahead: the next item's pixels are converted after this one's arithmetic,
     * so that an item costs one barrier whatever the input. */
    const int first = (int)blockIdx.x, second = first + (int)gridDim.x;
    if (first < d.work) direct_fetch<PT>(xs, raw, x, xu, d, wk, first, tid, nt);
    if (xu && first < d.work) {
        if (second < d.work) {
            direct_fetch<PT>(xs, raw + C * d.RW, x, xu, d, wk, second, tid, nt);
            asm volatile("cp.async.wait_group 1;" ::: "memory"); /* the first item's pixels have landed */
        } else {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        __syncthreads();
        direct_convert<PT>(xs, raw, xu, sl, d, wk, first, tid, nt);
    }
    for (int item = first, buf = 0; item < d.work; item += (int)gridDim.x, buf ^= 1) {
        const size_t b = (size_t)(item / d.bands);
        const int pr0 = item % d.bands * d.band_pr;
        /* Float input: this thread's copies of this item have landed; uint8: those of the next item's pixels. */
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        /* Everyone's have, this item's band is converted, and the last item is done with the other band and raw
         * copy (and the lut and weights are written). */
        __syncthreads();
        const int next = item + (int)gridDim.x;
        if (!xu && next < d.work) direct_fetch<PT>(xs + (buf ^ 1) * band, raw, x, xu, d, wk, next, tid, nt);
        if (xu && next + (int)gridDim.x < d.work)
            direct_fetch<PT>(xs, raw + buf * C * d.RW, x, xu, d, wk, next + (int)gridDim.x, tid, nt);
        const float *xb = xs + buf * band;
        const int band_pr = min(d.band_pr, d.pr_total - pr0);
        const int patches = band_pr * d.pc;
        for (int m0 = 0; m0 < d.M; m0 += MB) {
            const float *wg = ws; /* this group's (C, MB, KK4) */
            if (d.w_all) {
                wg = ws + (m0 / MB) * C * MB * KK4;
            } else {
                __syncthreads(); /* the previous group is done with ws */
                for (int i = tid; i < C * MB * KK4; i += nt) {
                    const int c = i / (MB * KK4), mi = i / KK4 % MB, j = i % KK4;
                    ws[i] = (m0 + mi < d.M && j < KK) ? k[((size_t)(m0 + mi) * C + c) * KK + j] : 0.0f;
                }
                __syncthreads();
            }
            for (int pi = tid; pi < patches; pi += nt) {
                const int pr = pi / d.pc, pc = pi % d.pc;
                float acc[MB][PT][PT];
#pragma unroll
                for (int mi = 0; mi < MB; mi++)
#pragma unroll
                    for (int i = 0; i < PT; i++)
#pragma unroll
                        for (int j = 0; j < PT; j++) acc[mi][i][j] = 0.0f;
                for (int c = 0; c < C; c++) {
                    const float *xw = xb + (c * RB + pr * PT) * WS + pc * PT; // the window's top left
                    float win[WN][WN];
#pragma unroll
                    for (int r = 0; r < WN; r++)
#pragma unroll
                        for (int s = 0; s < WN; s++) win[r][s] = xw[r * WS + s];
#pragma unroll
                    for (int mi = 0; mi < MB; mi++) {
                        const float4 *w4 = reinterpret_cast<const float4 *>(wg + (c * MB + mi) * KK4);
                        float wv[KK4];
#pragma unroll
                        for (int t = 0; t < KK4 / 4; t++) {
                            const float4 v = w4[t];
                            wv[4 * t] = v.x, wv[4 * t + 1] = v.y, wv[4 * t + 2] = v.z, wv[4 * t + 3] = v.w;
                        }
#pragma unroll
                        for (int p = 0; p < K; p++)
#pragma unroll
                            for (int q = 0; q < K; q++)
#pragma unroll
                                for (int i = 0; i < PT; i++)
#pragma unroll
                                    for (int j = 0; j < PT; j++)
                                        acc[mi][i][j] = fmaf(win[i + p][j + q], wv[p * K + q], acc[mi][i][j]);
                    }
                }
                /* The epilogue: pooling and activation switched once for the MB channels, not once an output. */
                const int nm = min(MB, d.M - m0), YY = d.Yh * d.Yw;
                float bm[MB];
#pragma unroll
                for (int mi = 0; mi < MB; mi++) bm[mi] = bias && mi < nm ? bias[m0 + mi] : 0.0f;
                if (d.pool == NC_MAXPOOL) {
                    float o[MB];
#pragma unroll
                    for (int mi = 0; mi < MB; mi++) {
                        float v = acc[mi][0][0];
#pragma unroll
                        for (int i = 0; i < PT; i++)
#pragma unroll
                            for (int j = 0; j < PT; j++) v = fmaxf(v, acc[mi][i][j]);
                        o[mi] = bias ? v + bm[mi] : v;
                    }
                    nc_act_n(d.act, o);
                    float *yo = y + (b * d.M + m0) * YY + (pr0 + pr) * d.Yw + pc;
#pragma unroll
                    for (int mi = 0; mi < MB; mi++)
                        if (mi < nm) yo[mi * YY] = o[mi];
                } else {
                    float v[MB][PT][PT];
#pragma unroll
                    for (int mi = 0; mi < MB; mi++)
#pragma unroll
                        for (int i = 0; i < PT; i++)
#pragma unroll
                            for (int j = 0; j < PT; j++) v[mi][i][j] = bias ? acc[mi][i][j] + bm[mi] : acc[mi][i][j];
                    nc_act_n(d.act, reinterpret_cast<float(&)[MB * PT * PT]>(v));
                    if (d.pool == NC_AVGPOOL) {
                        float *yo = y + (b * d.M + m0) * YY + (pr0 + pr) * d.Yw + pc;
#pragma unroll
                        for (int mi = 0; mi < MB; mi++) {
                            float s = 0.0f;
#pragma unroll
                            for (int i = 0; i < PT; i++)
#pragma unroll
                                for (int j = 0; j < PT; j++) s += v[mi][i][j];
                            if (mi < nm) yo[mi * YY] = s / (float)(PT * PT);
                        }
                    } else {
                        const int oh = (pr0 + pr) * PT, ow = pc * PT;
                        float *yo = y + (b * d.M + m0) * YY + oh * d.Wo + ow;
                        if (PT == 2 && d.pairs) { /* 8 aligned bytes: a warp's stores fill whole 32-byte sectors */
#pragma unroll
                            for (int i = 0; i < PT; i++)
                                if (oh + i < d.Ho)
#pragma unroll
                                    for (int mi = 0; mi < MB; mi++)
                                        if (mi < nm)
                                            *reinterpret_cast<float2 *>(yo + mi * YY + i * d.Wo) =
                                                make_float2(v[mi][i][0], v[mi][i][1]);
                        } else {
#pragma unroll
                            for (int i = 0; i < PT; i++)
#pragma unroll
                                for (int j = 0; j < PT; j++)
                                    if (oh + i < d.Ho && ow + j < d.Wo)
#pragma unroll
                                        for (int mi = 0; mi < MB; mi++)
                                            if (mi < nm) yo[mi * YY + i * d.Wo + j] = v[mi][i][j];
                        }
                    }
                }
            }
        }
        if (xu && next < d.work) /* the next item's pixels, into the band this one's arithmetic is not reading */
            direct_convert<PT>(xs + (buf ^ 1) * band, raw + (buf ^ 1) * C * d.RW, xu, sl, d, wk, next, tid, nt);
    }
}

typedef void (*direct_kernel_fn)(float *, const float *, const uint8_t *, const nc_conv_lut, const float *,
                                 const float *, const direct_params);

/* The channels per thread for M: the group size that pads M least, the larger on a tie. */
static int direct_mb(int M, int PT) {
    if (PT == 4) return 4;
    static const int choices[] = {10, 6, 4};
    int best = 4, best_pad = 1 << 30;
    for (int i = 0; i < 3; i++) {
        const int mb = choices[i], pad = (M + mb - 1) / mb * mb - M;
        if (pad < best_pad) best = mb, best_pad = pad;
    }
    return best;
}

/* Instantiated for K = 3..7; PT = 2 with MB = 4, 6, 10; PT = 4 with MB = 4 (20 kernels). */
template <int K> static direct_kernel_fn direct_pick(int PT, int MB) {
    if (PT == 4) return conv_direct_kernel<K, 4, 4>;
    switch (MB) {
    case 10: return conv_direct_kernel<K, 2, 10>;
    case 6: return conv_direct_kernel<K, 2, 6>;
    default: return conv_direct_kernel<K, 2, 4>;
    }
}

static direct_kernel_fn direct_kernel_for(int K, int PT, int MB) {
    switch (K) {
    case 3: return direct_pick<3>(PT, MB);
    case 4: return direct_pick<4>(PT, MB);
    case 5: return direct_pick<5>(PT, MB);
    case 6: return direct_pick<6>(PT, MB);
    case 7: return direct_pick<7>(PT, MB);
    default: return NULL;
    }
}

/* The words of a channel's raw copy of RB rows of W pixels: from the word that holds the first byte. */
static int direct_raw_words(long RB, int W) {
    return (int)((RB * W + 6) / 4);
}

/* A block's shared memory for its bands of RB rows (the weights and the lut apart): two float bands, and for uint8
 * pixels two raw copies. */
static size_t direct_band_bytes(int C, int W, int WS, long RB, int u8) {
    const size_t band = (size_t)C * RB * WS * sizeof(float);
    return 2 * band + (u8 ? 2 * (size_t)C * direct_raw_words(RB, W) * 4 : 0);
}

int nc_conv_direct_fuses(const nc_conv_epilogue *e, int K) {
    if (K < 3 || K > 7) return 0;
    if (e->act != EPI_NONE && e->act != NC_TANH && e->act != NC_RELU && e->act != NC_SIGMOID) return 0;
    if (e->pool == EPI_NONE) return 1;
    return (e->pool == NC_MAXPOOL || e->pool == NC_AVGPOOL) && e->P == e->S && (e->P == 2 || e->P == 4);
}

int nc_conv_launch_fused(float *y, const float *x, const uint8_t *x_u8, const nc_conv_lut *lut, const float *k,
                         const float *bias, int B, int C, int H, int W, int M, int K, const nc_conv_epilogue *e,
                         cudaStream_t stream, nc_error *err) {
    if (!nc_conv_direct_fuses(e, K))
        return nc_fail(err, NC_ERR_ARG,
                       "conv versions 5 and 6 (direct) take K = 3..7 and pooling with P = S = 2 or 4, not K = %d, "
                       "pool %d/%d (version 4 takes any K)",
                       K, e->P, e->S);
    if (!x_u8 && nc_conv_directc_takes(C, H, W, M, K, e)) /* several channels: conv_directc.cu */
        return nc_conv_launch_directc(y, x, k, bias, B, C, H, W, M, K, e, stream, err);
    direct_params d;
    d.C = C, d.H = H, d.W = W, d.M = M;
    d.Ho = H - K + 1, d.Wo = W - K + 1;
    d.act = e->act, d.pool = e->pool;
    const int PT = e->pool == EPI_NONE ? 2 : e->P;
    if (e->pool == EPI_NONE) {
        d.pr_total = (d.Ho + PT - 1) / PT, d.pc = (d.Wo + PT - 1) / PT;
        d.Yh = d.Ho, d.Yw = d.Wo;
    } else {
        d.pr_total = (d.Ho - PT) / PT + 1, d.pc = (d.Wo - PT) / PT + 1;
        d.Yh = d.pr_total, d.Yw = d.pc;
        if (d.Ho < PT || d.Wo < PT) return NC_OK; /* nothing to pool */
    }
    const int MB = direct_mb(M, PT), KK4 = (K * K + 3) / 4 * 4;
    const int WS = d.pc * PT + K - 1, G = (M + MB - 1) / MB;
    /* Every group's weights once per block where they take at most DIRECT_W_ALL_MAX and leave room for a band
     * (all the zoo's first layers; the second layers run on conv_directc.cu's kernel); else one group
     * at a time, restaged for every band. */
    const size_t w_all = (size_t)G * C * MB * KK4 * sizeof(float), lut_b = x_u8 ? 256 * sizeof(float) : 0;
    d.w_all = w_all <= DIRECT_W_ALL_MAX &&
              w_all + lut_b + direct_band_bytes(C, W, WS, PT + K - 1, x_u8 != NULL) <= DIRECT_SMEM_MAX;
    const size_t fixed = (d.w_all ? w_all : (size_t)C * MB * KK4 * sizeof(float)) + lut_b;
    int device = 0, sms = 0, optin = 0;
    CUDA_RET(cudaGetDevice(&device));
    CUDA_RET(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_RET(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    size_t cap = DIRECT_SMEM_MAX;
    if (fixed + direct_band_bytes(C, W, WS, PT + K - 1, x_u8 != NULL) > cap && (size_t)optin > cap) cap = optin;
    /* As many patch rows per block as fit, then no more than the output has. */
    long band = 0, most = d.pr_total; /* the largest that fits, by bisection */
    while (band < most) {
        const long mid = (band + most + 1) / 2;
        if (fixed + direct_band_bytes(C, W, WS, mid * PT + K - 1, x_u8 != NULL) <= cap)
            band = mid;
        else
            most = mid - 1;
    }
    if (band < 1)
        return nc_fail(err, NC_ERR_ARG,
                       "conv versions 5 and 6 (direct): two bands of C = %d rows of %d pixels do not fit in %d KB "
                       "of shared memory with the weights (version 4 takes it)",
                       C, W, (int)(cap / 1024));
    d.band_pr = (int)band;
    d.bands = (d.pr_total + d.band_pr - 1) / d.band_pr;
    d.RB = d.band_pr * PT + K - 1, d.WS = WS, d.RW = direct_raw_words(d.RB, W);
    d.u8_async = x_u8 && (uintptr_t)x_u8 % 4 == 0;
    d.pairs = e->pool == EPI_NONE && d.Wo % 2 == 0 && (uintptr_t)y % 8 == 0;
    if ((long long)B * d.bands > 0x7FFFFFFF)
        return nc_fail(err, NC_ERR_ARG, "conv versions 5 and 6 (direct): %d images of %d bands is too many at once", B,
                       d.bands);
    d.work = B * d.bands;
    const int patches = d.band_pr * d.pc;
    const size_t smem = fixed + direct_band_bytes(C, W, WS, d.RB, x_u8 != NULL);
    const direct_kernel_fn fn = direct_kernel_for(K, PT, MB);
    if (smem > 48 * 1024)
        CUDA_RET(cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int threads = (patches + 31) / 32 * 32;
    if (threads > DIRECT_MAX_THREADS) threads = DIRECT_MAX_THREADS;
    /* As many blocks as are resident at once, each taking work items in turn: the weights are staged once a
     * block. */
    int per_sm = 0;
    CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, threads, smem));
    const long resident = (long)sms * (per_sm > 0 ? per_sm : 1), blocks = resident < d.work ? resident : d.work;
    static const nc_conv_lut no_lut = {{0}};
    fn<<<(unsigned)blocks, threads, smem, stream>>>(y, x, x_u8, lut ? *lut : no_lut, k, bias, d);
    CUDA_LAUNCHED();
    return NC_OK;
}

int nc_conv_launch_direct(NC_CONV_LAUNCHER_ARGS) {
    const nc_conv_epilogue none = {EPI_NONE, EPI_NONE, 1, 1};
    return nc_conv_launch_fused(y, x, NULL, NULL, k, bias, B, C, H, W, M, K, &none, stream, err);
}
