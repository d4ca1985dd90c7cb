/*
 * Register-tiled direct convolution with K known at compile time: versions 5, 6, 13 and 14.
 *
 *   5  direct: each thread computes a PT x PT patch of the output for MB output channels at once, from a
 *      (PT+K-1)^2 window of the input held in registers; K, PT (the kernel's PH = PW) and MB are template
 *      parameters, so every loop
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
 *  13  direct-rows: version 5 with each thread's patch a row of four outputs (PH = 1, PW = 4: a (K, K + 3)
 *      window) instead of 2 x 2, stored as one 16-byte word a channel where y's planes are 16-byte aligned (on rows
 *      of Wo = 2 mod 4, odd rows' fours start two columns to the left, and a row's first or last two outputs go as
 *      8 bytes), so that a warp's stores are whole runs of y. The 2 x 2 patches' two float2 rows a channel wrote
 *      2019 fall's first layer alone at half a memset's rate: its stores alone (the sums cut to one tap) took 1.28
 *      ms, a memset of its output 0.65, the same stores laid out as 16 bytes a lane in lane order 0.90 (H100,
 *      2026-11-25, bench/results/gpu-2026-11-25-h100-s19-ab.log). Rows of four took that layer from 1.35 to 0.99
 *      ms and 2018 spring's from 0.47 to 0.44, but 2017's from 0.48 to 0.53 and 2018 fall's from 1.41 to 1.53: a
 *      version of its own, which the default takes where it is faster. The convolution alone: the network's
 *      pooled layers are version 6's.
 *      nanoconv eval --model M --backend cuda --conv-kernel 13
 *  14  direct-tiles: each thread's patch two rows of four outputs (PH = 2, PW = 4) for 4 channels, with the
 *      weights staged tap-major, so that one 16-byte load gives a tap's 4 channels for 32 multiply-adds (16 in
 *      versions 5 and 13), and the window's K + 1 rows loaded as the taps reach them (rows p and p + 1 for tap row
 *      p), which keeps it within 128 registers; every output keeps its sums' order, so the bits are version 5's.
 *      Stored as 16-byte words a row: where Wo = 2 mod 4, a tile's second row is shifted two columns to the left
 *      (the window two columns wider), so that both rows' words are aligned. ncu put version 5's instructions on
 *      2018 fall's first layer at 76% FFMA, the rest the window, the weights and the epilogue; version 14's are
 *      82.5% FFMA, and the layer alone took 1.41 -> 1.30 ms, 2020's 0.74 -> 0.66, 2017's 0.48 -> 0.45 (H100,
 *      2026-11-25). A version of its own, as the default times it with the others: 2019 spring's first layer is
 *      slower (M = 6: two groups of 4, a quarter of the sums padding, though 2018 spring's, also M = 6, gains).
 *      Fused as version 6 is where the pooling is 2/2 or none: a tile is then two pooling windows side by side, both
 *      taken from the sums in registers (the last tile of a row of odd Wp computes its second for nothing), 8
 *      pooled outputs stored a thread; 4/4 pooling takes version 6's 4 x 4 patches.
 *      nanoconv eval --model M --backend cuda --conv-kernel 14   (Op Time's note: "fused tanh+maxpool")
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
 * 0.46-1.93 to 0.29-1.59 (2017 0.70 -> 0.64; H100, 2026-11-23, docs/PERFORMANCE-LOG.md). Then the copies went to 16
 * bytes where the addresses allow (float rows of whole quads; uint8 pixels in 16-byte chunks, converted four at a
 * time by a funnel shift across two words, the lut read once a pixel), the bias to shared memory, and a block's
 * threads to one walk over a band's (group, patch) units instead of one group's patches at a time (the 2017 layer's
 * 144 patches left the last of 5 warps half idle for each of its 5 groups): the zoo's first layers fused on uint8
 * pixels 0.29-1.61 -> 0.23-1.38 ms (2017 0.635 -> 0.475; H100, 2026-11-24).
 */
#include "cuda/conv_act.cuh"
#include "cuda/conv_ladder.h"
#include "cuda/cp_async.cuh"
#include "cuda/cuda_check.h"
#include "cuda/st_global.cuh"

/* Shared memory a block's bands are sized for (above 48 KB only with the kernel's opt-in, done at launch); a layer
 * whose band of one patch row does not fit in it takes up to the device's opt-in limit (227 KB on an H100). */
#define DIRECT_SMEM_MAX (96 * 1024)
#define DIRECT_MAX_THREADS 256
#define DIRECT_W_ALL_MAX (64 * 1024)
/* The blocks an SM each kernel must allow (__launch_bounds__), which sets ptxas's register budget: with none it
 * held kernels of 4 or 6 channels a thread to 80 registers and spilled up to 32 bytes; one block lets them take
 * 93 to 114 and spill nothing, and two keep those of 10 channels at 128 registers, without spills either. */
#define DIRECT_MIN_BLOCKS(PH, PW, MB) ((PH) * (PW) == 4 && (MB) == 10 ? 2 : 1)

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
    int RB, WS;       /* a staged band: rows, and the row stride (band_pr PH + K - 1; pc PW + K - 1, or W where flat) */
    int CS;           /* a staged band's channel stride: RB WS, or where flat RB W and up to 3 floats, rounded to 4 */
    int flat;     /* float input whose band is one 16-byte aligned run of x a channel: copied as it is (row stride W) */
    int WQ;       /* quads (4 floats) a staged row: ceil(WS / 4) */
    int RW;       /* uint8 input: 4-byte words of a channel's raw copy (its band's bytes from the word of the first) */
    int u8_align; /* uint8 input 16- or 4-byte aligned: copied by cp.async in chunks of that many bytes (else 0: read
                     at conversion) */
    int pairs;    /* unpooled 2 x 2 patches, Wo even and y 8-byte aligned: two adjacent outputs are one float2 store */
    int quad_out; /* unpooled rows of four, Ho Wo even and a multiple of 4, y 16-byte aligned: a thread's four outputs
                     are one 16-byte store (1: Wo a multiple of 4; 2: Wo = 2 mod 4, odd rows' fours two columns to the
                     left) */
    int cw;       /* float input: 4, 2 or 1 floats a cp.async (W and WS multiples of cw, x 4 cw-byte aligned) */
};

/* A thread's walk over a band's rows of n elements or quads, i = tid, tid + nt, ...: its first row and column, and
 * the rows and columns a step of nt moves. Found once a kernel, so that a step costs no division. */
struct direct_walk {
    int r, s, dr, ds;
};

__device__ __forceinline__ direct_walk direct_walk_for(int n, int tid, int nt) {
    return {tid / n, tid % n, nt / n, nt % n};
}

/* Work item `item`: its image, its band's first patch row and first input row, and the image's rows in the band. */
struct direct_item {
    size_t b;
    int pr0, h0, rows;
};

template <int PH> __device__ __forceinline__ direct_item direct_item_at(const direct_params &d, int item) {
    const int b = d.bands == 1 ? item : item / d.bands, pr0 = (item - b * d.bands) * d.band_pr, h0 = pr0 * PH;
    return {(size_t)b, pr0, h0, min(d.RB, d.H - h0)};
}

/* The first output column of patch (pr, pc) of the image, computed where it is used rather than held across the
 * arithmetic. A row of four on an odd row starts two columns to the left where Wo = 2 mod 4 (d.quad_out 2), so that
 * its outputs are an aligned 16 bytes of y; a row's first four are then columns -2..1, whose window starts with the
 * staged row before's last two floats (in the band: bands start at even rows), and those two are not stored. */
template <int PH, int PW> __device__ __forceinline__ int direct_col(const direct_params &d, int pr, int pc) {
    return pc * PW - (PH == 1 && d.quad_out == 2 && (pr & 1) ? 2 : 0);
}

/* Issues (does not wait for) the copies of work item `item`'s band, as one cp.async group, a channel at a time:
 * float input straight into xs (C, CS), where flat as the one run of rows x W floats that a channel's band is in x,
 * by 16 bytes (the last copy short and zero-filled); else a row at a time into (RB, WS), zeros past the image, by
 * 4 d.cw bytes (16, 8 or 4). A flat band's rows past the image (the last band's) are left as they are, and a
 * window's columns past W read the next row's first floats: either feeds only outputs past Ho or Wo, which are
 * never stored, as an output at (oh, ow) < (Ho, Wo) reads rows oh..oh + K - 1 < H and columns ow..ow + K - 1 < W.
 * Flat, each copy is a few instructions; a row at a time it was about 40 (its walk and address), which on 2020's
 * first layer alone (rows of 86 floats, copied 8 bytes at a time) were 8% of the kernel's instructions. uint8
 * pixels (d.u8_align = 16 or 4: the pixels' alignment) into raw (C, RW words), each channel's band rows from the
 * 16- or 4-byte chunk that holds their first byte, zeros past them (a last partial chunk by plain loads and stores,
 * which the barrier before its conversion makes visible). Unaligned pixels are read when converted. */
template <int PH>
__device__ __forceinline__ void direct_fetch(float *xs, uint32_t *raw, const float *__restrict__ x,
                                             const uint8_t *__restrict__ xu, const direct_params &d, int item,
                                             const direct_walk &fw, int tid, int nt) {
    const direct_item it = direct_item_at<PH>(d, item);
    const size_t b = it.b;
    const int h0 = it.h0, rows = it.rows;
    for (int c = 0; c < d.C; c++) {
        const size_t start = ((b * d.C + c) * d.H + h0) * d.W; /* the band's first pixel */
        if (xu) {
            const int A = d.u8_align;
            if (!A) break;
            const size_t a0 = start & ~(size_t)(A - 1);
            const int have = (int)(start - a0) + rows * d.W; /* bytes from a0 to the band's end */
            uint32_t *rc = raw + c * d.RW;
            const int chunks = A == 16 ? d.RW / 4 : d.RW;
            for (int i = tid; i < chunks; i += nt) {
                const int left = have - A * i, bytes = left <= 0 ? 0 : left < A ? left : A;
                if (bytes == A || bytes == 0) {
                    if (A == 16)
                        nc_cp_async16(rc + 4 * i, bytes ? xu + a0 + 16 * i : xu, bytes);
                    else
                        nc_cp_async4(rc + i, bytes ? xu + a0 + 4 * i : xu, bytes);
                } else { /* the band's last bytes: loaded as they are, so that nothing past the pixels is read */
                    const uint8_t *src = xu + a0 + A * i;
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        uint32_t w = 0;
#pragma unroll
                        for (int t = 0; t < 4; t++)
                            if (4 * j + t < bytes) w |= (uint32_t)src[4 * j + t] << 8 * t;
                        if (4 * j < A) rc[A / 4 * i + j] = w;
                    }
                }
            }
        } else if (d.flat) {
            const float *xg = x + start;
            float *xc = xs + c * d.CS;
            const int n = rows * d.W;
            for (int i = 4 * tid; i < n; i += 4 * nt) nc_cp_async16(xc + i, xg + i, n - i >= 4 ? 16 : 4 * (n - i));
        } else {
            const float *xg = x + start;
            float *xc = xs + c * d.CS;
            const int n = d.WS / d.cw; /* copies a row (fw walks them) */
            for (int r = fw.r, s = fw.s; r < d.RB;) {
                if (d.cw == 4) { /* W and WS multiples of 4: a quad is in the image or past it */
                    const bool in = r < rows && 4 * s < d.W;
                    nc_cp_async16(xc + r * d.WS + 4 * s, in ? xg + r * d.W + 4 * s : x, in ? 16 : 0);
                } else if (d.cw == 2) { /* the same by pairs */
                    const bool in = r < rows && 2 * s < d.W;
                    nc_cp_async8(xc + r * d.WS + 2 * s, in ? xg + r * d.W + 2 * s : x, in ? 8 : 0);
                } else {
                    const bool in = r < rows && s < d.W;
                    nc_cp_async4(xc + r * d.WS + s, in ? xg + r * d.W + s : x, in ? 4 : 0);
                }
                s += fw.ds, r += fw.dr;
                if (s >= n) s -= n, r++;
            }
        }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

/* uint8 input: item `item`'s band into xs (C, RB, WS) as floats through the lut sl, zeros past the image, four
 * pixels of a row at a time: from raw (direct_fetch's copy; two words and a funnel shift, which is why a channel's
 * raw copy has words to spare past its last pixel) or, unaligned, from global memory. */
template <int PH>
__device__ __forceinline__ void direct_convert(float *xs, const uint32_t *raw, const uint8_t *__restrict__ xu,
                                               const float *sl, const direct_params &d, int item,
                                               const direct_walk &cw) {
    const direct_item it = direct_item_at<PH>(d, item);
    const size_t b = it.b;
    const int h0 = it.h0, rows = it.rows;
    for (int c = 0; c < d.C; c++) {
        const size_t start = ((b * d.C + c) * d.H + h0) * d.W;
        const int lead = d.u8_align ? (int)(start & (size_t)(d.u8_align - 1)) : 0; /* in raw, the first pixel's byte */
        const uint32_t *rc = raw + c * d.RW;
        const uint8_t *xg = xu + start;
        float *xc = xs + c * d.CS;
        for (int r = cw.r, q = cw.s; r < d.RB;) {
            const int s0 = 4 * q;
            uint32_t px = 0; /* four pixels, the first in the low byte */
            if (r < rows) {
                const int at = r * d.W + s0;
                if (d.u8_align) {
                    const int o = lead + at;
                    px = __funnelshift_r(rc[o >> 2], rc[(o >> 2) + 1], 8 * (o & 3));
                } else {
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        if (s0 + j < d.W) px |= (uint32_t)xg[at + j] << 8 * j;
                }
            }
            float v[4]; /* the lut read for every pixel (past the image too), then the zeros chosen */
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const float t = sl[px >> 8 * j & 255];
                v[j] = r < rows && s0 + j < d.W ? t : 0.0f;
            }
            float *o = xc + r * d.WS + s0;
            if (d.WS % 4 == 0) {
                *reinterpret_cast<float4 *>(o) = make_float4(v[0], v[1], v[2], v[3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (s0 + j < d.WS) o[j] = v[j];
            }
            q += cw.ds, r += cw.dr;
            if (q >= d.WQ) q -= d.WQ, r++;
        }
    }
}

/* N floats of a window row from the staged band: by 8-byte loads where PAIRS (the window's width even: then N, the
 * band's row stride and the offset are even too), else one float at a time. */
template <int N, bool PAIRS> __device__ __forceinline__ void direct_window_part(float *row, const float *src) {
    if constexpr (PAIRS) {
        static_assert(N % 2 == 0, "pairs of floats");
#pragma unroll
        for (int s = 0; s < N; s += 2) {
            const float2 v = *reinterpret_cast<const float2 *>(src + s);
            row[s] = v.x, row[s + 1] = v.y;
        }
    } else {
#pragma unroll
        for (int s = 0; s < N; s++) row[s] = src[s];
    }
}

/* Element i of group g's staged weights (C, WGC), zeros past M and in the padding: a (channel, output channel) row of
 * K K taps padded to KK4, or tap-major (TAPS: C, K K, MB4) with a tap's MB output channels padded to MB4. */
template <int K, int MB, bool TAPS>
__device__ __forceinline__ float direct_weight(const float *__restrict__ k, const direct_params &d, int g, int i) {
    constexpr int KK = K * K, KK4 = (KK + 3) / 4 * 4, MB4 = (MB + 3) / 4 * 4;
    int c, mi, t;
    if constexpr (TAPS)
        c = i / (KK * MB4), t = i / MB4 % KK, mi = i % MB4;
    else
        c = i / (MB * KK4), mi = i / KK4 % MB, t = i % KK4;
    const int m = g * MB + mi;
    return mi < MB && m < d.M && t < KK ? k[((size_t)m * d.C + c) * KK + t] : 0.0f;
}

/* A persistent grid (as many blocks as fit on the GPU at once): each block takes work items (image, band) in
 * turn; blockDim.x threads walk the band's patches. The next item's band is copied by cp.async while this one's is
 * computed, so that the copy's memory latency is behind the arithmetic (it was a barrier stall of 15% and a load
 * stall of 6% on the 2017 layer: ncu, 2026-11-22). Dynamic shared memory:
 *   ws (G, C, WGC)      the weights (direct_weight), each (m, c) row of K*K padded with zeros to KK4 (a multiple of
 *                       4), or for two rows of four tap-major (K*K, MB4), for all G = ceil(M / MB) groups staged
 *                       once (w_all), or for one group at a time
 *   bs (G MB)           the bias, zeros past M (where there is one), rounded up to 4 floats
 *   xs (2, C, CS)       two bands, each channel's RB rows of stride WS (W where flat), zero past the image but where
 *                       flat: one computed, the other being copied (float input) or converted from raw after the
 *                       arithmetic (uint8); rounded up to 4 floats
 *   raw (2, C, RW)      uint8 input: the pixels of the next two items as copied (4-byte words)
 *   lut (256)           uint8 input only (xu not NULL; a run-time choice, as it costs only the staging)
 * Each of them starts 16-byte aligned. */
template <int K, int PH, int PW, int MB, int SH = 0, bool TP = false>
__global__ void __launch_bounds__(DIRECT_MAX_THREADS, DIRECT_MIN_BLOCKS(PH, PW, MB))
    conv_direct_kernel(float *__restrict__ y, const float *__restrict__ x, const uint8_t *__restrict__ xu,
                       const nc_conv_lut lut, const float *__restrict__ k, const float *__restrict__ bias,
                       const direct_params d) {
    constexpr int KK = K * K, KK4 = (KK + 3) / 4 * 4, WH = PH + K - 1, WW = PW + K - 1;
    static_assert(PH == PW || (PW == 4 && (PH == 1 || PH == 2)), "pooling windows, or rows of four");
    static_assert(SH == 0 || (SH == 2 && PH == 2 && PW == 4), "only two rows of four shift their second row");
    static_assert(!TP || (PH == 2 && PW == 4 && SH == 0), "only unshifted two rows of four pool as two windows");
    /* Tiles of two rows of four (version 14) take the weights tap-major: a tap's MB channels (padded to MB4) are one
     * or two 16-byte loads, each used for 8 outputs a channel; the other shapes take a channel's K K taps a row. */
    constexpr bool TAPS = PH == 2 && PW == 4, PAIRS = WW % 2 == 0; /* PAIRS: the window read by 8-byte loads */
    /* The kernels that pool (P = S = PH): a square patch is one pooling window; two rows of four pool as two windows
     * side by side (NP a channel) in a kernel of their own (TP), which has no unpooled stores, so that the kernels of
     * the convolution alone keep their code; rows of four do not pool. */
    constexpr bool POOLS = PH == PW || TP;
    constexpr int NP = PW / PH;
    constexpr int MB4 = (MB + 3) / 4 * 4, WGC = TAPS ? KK * MB4 : MB * KK4; /* floats a (group, channel) */
    extern __shared__ __align__(16) float smem[];
    const int C = d.C, WS = d.WS, band = C * d.CS;
    const int G = (d.M + MB - 1) / MB;
    float *ws = smem;                                                          // (G or 1, C, WGC)
    float *bs = ws + (d.w_all ? G : 1) * C * WGC;                              // (G MB)
    float *xs = bs + (G * MB + 3) / 4 * 4;                                     // (2, C, CS)
    uint32_t *raw = reinterpret_cast<uint32_t *>(xs + (2 * band + 3) / 4 * 4); // (2, C, RW), uint8 input only
    float *sl = reinterpret_cast<float *>(raw + (xu ? 2 * C * d.RW : 0));      // (256), uint8 input only
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x;
    /* The walks over a band's quads (conversion), its copies (float input), and its patches (rows, columns). */
    const direct_walk cw = direct_walk_for(d.WQ, tid, nt), fw = direct_walk_for(d.WS / d.cw, tid, nt);
    const direct_walk pw = direct_walk_for(d.pc, tid, nt);

    if (xu)
        for (int i = tid; i < 256; i += nt) sl[i] = lut.v[i];
    if (bias)
        for (int i = tid; i < G * MB; i += nt) bs[i] = i < d.M ? bias[i] : 0.0f;
    if (d.w_all) {
        for (int i = tid; i < G * C * WGC; i += nt)
            ws[i] = direct_weight<K, MB, TAPS>(k, d, i / (C * WGC), i % (C * WGC));
    }
    /* uint8 input runs one item further ahead: the next item's pixels are converted after this one's arithmetic,
     * so that an item costs one barrier whatever the input. */
    const int first = (int)blockIdx.x, second = first + (int)gridDim.x;
    if (first < d.work) direct_fetch<PH>(xs, raw, x, xu, d, first, fw, tid, nt);
    if (xu && first < d.work) {
        if (second < d.work) {
            direct_fetch<PH>(xs, raw + C * d.RW, x, xu, d, second, fw, tid, nt);
            asm volatile("cp.async.wait_group 1;" ::: "memory"); /* the first item's pixels have landed */
        } else {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        __syncthreads();
        direct_convert<PH>(xs, raw, xu, sl, d, first, cw);
    }
    const int YY = d.Yh * d.Yw;
    for (int item = first, buf = 0; item < d.work; item += (int)gridDim.x, buf ^= 1) {
        const direct_item it = direct_item_at<PH>(d, item);
        const int pr0 = it.pr0;
        float *yb = y + it.b * d.M * YY; /* this image's output: offsets in it fit an int (the launcher checks) */
        /* Float input: this thread's copies of this item have landed; uint8: those of the next item's pixels. */
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        /* Everyone's have, this item's band is converted, and the last item is done with the other band and raw
         * copy (and the lut and weights are written). */
        __syncthreads();
        const int next = item + (int)gridDim.x;
        if (!xu && next < d.work) direct_fetch<PH>(xs + (buf ^ 1) * band, raw, x, xu, d, next, fw, tid, nt);
        if (xu && next + (int)gridDim.x < d.work)
            direct_fetch<PH>(xs, raw + buf * C * d.RW, x, xu, d, next + (int)gridDim.x, fw, tid, nt);
        const float *xb = xs + buf * band;
        const int band_pr = min(d.band_pr, d.pr_total - pr0);
        /* With every group's weights at hand (w_all) the threads take (group, patch) units of all G groups in one
         * walk, so that only the item's last units leave lanes idle (the 2017 layer's 144 patches took 5 warps, the
         * last half idle, for each of its 5 groups); else one group at a time, its weights staged in turn. */
        const int span = d.w_all ? G : 1; /* the groups one walk covers */
        for (int g0 = 0; g0 < G; g0 += span) {
            if (!d.w_all) {
                __syncthreads(); /* the previous group is done with ws */
                for (int i = tid; i < C * WGC; i += nt) ws[i] = direct_weight<K, MB, TAPS>(k, d, g0, i);
                __syncthreads();
            }
            /* Each thread's first unit, then steps of nt units without a division. */
            int pr = pw.r, pc = pw.s, g = g0;
            if (pr >= band_pr) g += pr / band_pr, pr -= (g - g0) * band_pr;
            while (g < g0 + span) {
                const int m0 = g * MB;
                const float *wg = ws + (d.w_all ? g : 0) * C * WGC; /* this group's (C, WGC) */
                float acc[MB][PH][PW];
#pragma unroll
                for (int mi = 0; mi < MB; mi++)
#pragma unroll
                    for (int i = 0; i < PH; i++)
#pragma unroll
                        for (int j = 0; j < PW; j++) acc[mi][i][j] = 0.0f;
                int c = 0;
                do { /* C >= 1: a do-while, so that ptxas zeroes the sums on one path only */
                    const float *xw =
                        xb + c * d.CS + pr * PH * WS + direct_col<PH, PW>(d, pr0 + pr, pc) - SH; // top left
                    float win[WH][WW + SH];
                    if constexpr (TAPS) {
                        /* A window row as it is first needed: rows p and p + 1 for the taps of row p. Shifted (SH =
                         * 2), the tile's second row of outputs is columns -2..1 of its first's: the window is SH
                         * columns wider on the left, of which its first row (the first output row's alone) and its
                         * last (the second's alone) load only what their output row reads, so that no row reads
                         * before the band (rows 1.. of the window read the staged row before's last floats). */
                        const float4 *w4 = reinterpret_cast<const float4 *>(wg + c * WGC);
                        direct_window_part<WW, PAIRS>(win[0] + SH, xw + SH);
#pragma unroll
                        for (int p = 0; p < K; p++) {
                            if (p + 1 < K)
                                direct_window_part<WW + SH, PAIRS>(win[p + 1], xw + (p + 1) * WS);
                            else
                                direct_window_part<WW, PAIRS>(win[p + 1], xw + (p + 1) * WS);
#pragma unroll
                            for (int q = 0; q < K; q++) {
                                float wv[MB4];
#pragma unroll
                                for (int t = 0; t < MB4 / 4; t++) {
                                    const float4 v = w4[(p * K + q) * (MB4 / 4) + t];
                                    wv[4 * t] = v.x, wv[4 * t + 1] = v.y, wv[4 * t + 2] = v.z, wv[4 * t + 3] = v.w;
                                }
#pragma unroll
                                for (int mi = 0; mi < MB; mi++)
#pragma unroll
                                    for (int i = 0; i < PH; i++)
#pragma unroll
                                        for (int j = 0; j < PW; j++)
                                            acc[mi][i][j] =
                                                fmaf(win[i + p][j + q + (i == 0 ? SH : 0)], wv[mi], acc[mi][i][j]);
                            }
                        }
                    } else {
#pragma unroll
                        for (int r = 0; r < WH; r++) direct_window_part<WW, PAIRS>(win[r], xw + r * WS);
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
                                    for (int i = 0; i < PH; i++)
#pragma unroll
                                        for (int j = 0; j < PW; j++)
                                            acc[mi][i][j] = fmaf(win[i + p][j + q], wv[p * K + q], acc[mi][i][j]);
                        }
                    }
                } while (++c < C);
                /* The epilogue: pooling and activation switched once for the MB channels, not once an output. The
                 * bias from shared memory (zeros past M), the stores unpredicated where the group is whole. */
                const int nm = min(MB, d.M - m0);
                float bm[MB];
#pragma unroll
                for (int mi = 0; mi < MB; mi++) bm[mi] = bias ? bs[m0 + mi] : 0.0f;
                if (d.pool == NC_MAXPOOL && POOLS) {
                    float o[MB][NP]; /* each pooling window's maximum, then its bias and activation */
#pragma unroll
                    for (int mi = 0; mi < MB; mi++)
#pragma unroll
                        for (int n = 0; n < NP; n++) {
                            float v = acc[mi][0][n * PH];
#pragma unroll
                            for (int i = 0; i < PH; i++)
#pragma unroll
                                for (int j = 0; j < PH; j++) v = fmaxf(v, acc[mi][i][n * PH + j]);
                            o[mi][n] = bias ? v + bm[mi] : v;
                        }
                    nc_act_n(d.act, reinterpret_cast<float(&)[MB * NP]>(o));
                    float *yo = yb + m0 * YY + (pr0 + pr) * d.Yw + pc * NP;
                    const int np = NP == 1 ? 1 : min(NP, d.Yw - pc * NP); /* a row's last tile: Yw odd */
                    if (nm == MB && np == NP) {
#pragma unroll
                        for (int mi = 0; mi < MB; mi++)
#pragma unroll
                            for (int n = 0; n < NP; n++) yo[mi * YY + n] = o[mi][n];
                    } else {
#pragma unroll
                        for (int mi = 0; mi < MB; mi++)
#pragma unroll
                            for (int n = 0; n < NP; n++)
                                if (mi < nm && n < np) yo[mi * YY + n] = o[mi][n];
                    }
                } else {
                    float v[MB][PH][PW];
#pragma unroll
                    for (int mi = 0; mi < MB; mi++)
#pragma unroll
                        for (int i = 0; i < PH; i++)
#pragma unroll
                            for (int j = 0; j < PW; j++) v[mi][i][j] = bias ? acc[mi][i][j] + bm[mi] : acc[mi][i][j];
                    nc_act_n(d.act, reinterpret_cast<float(&)[MB * PH * PW]>(v));
                    if (d.pool == NC_AVGPOOL && POOLS) {
                        float *yo = yb + m0 * YY + (pr0 + pr) * d.Yw + pc * NP;
                        const int np = NP == 1 ? 1 : min(NP, d.Yw - pc * NP);
#pragma unroll
                        for (int mi = 0; mi < MB; mi++)
#pragma unroll
                            for (int n = 0; n < NP; n++) {
                                float s = 0.0f;
#pragma unroll
                                for (int i = 0; i < PH; i++)
#pragma unroll
                                    for (int j = 0; j < PH; j++) s += v[mi][i][n * PH + j];
                                if (mi < nm && n < np) yo[mi * YY + n] = s / (float)(PH * PH);
                            }
                    } else if constexpr (!TP) { /* unpooled: the PH x PW outputs at (oh, ow) */
                        const int oh = (pr0 + pr) * PH, ow = direct_col<PH, PW>(d, pr0 + pr, pc);
                        float *yo = yb + m0 * YY + oh * d.Wo + ow;
                        if (PH == 1 && d.quad_out) {
                            /* A row of four: one 16-byte store a channel, so that a warp's lanes (consecutive fours of
                             * a row, rows one after the other) write whole runs of y; where Wo = 2 mod 4 a row's first
                             * or last four has two outputs in the row: 8 bytes. */
                            const bool whole = ow >= 0 && ow + PW <= d.Wo;
                            const int h = ow < 0 ? 2 : 0; /* else: the two in the row */
#pragma unroll
                            for (int mi = 0; mi < MB; mi++) {
                                if (mi >= nm) continue;
                                if (whole) /* whole: st_global.cuh (as a float4 assignment it came out split) */
                                    nc_st_global4(yo + mi * YY, v[mi][0][0], v[mi][0][1], v[mi][0][2], v[mi][0][3]);
                                else if (h)
                                    nc_st_global2(yo + mi * YY + h, v[mi][0][2], v[mi][0][3]);
                                else
                                    nc_st_global2(yo + mi * YY, v[mi][0][0], v[mi][0][1]);
                            }
                        } else if (PH == 2 && PW == 4 && SH) {
                            /* Two rows of four, the second shifted (Wo = 2 mod 4, Ho even, y 16-byte aligned): each
                             * row's four one aligned 16-byte store a channel, but the first row's last four and the
                             * second row's first, which have two outputs in the row: 8 bytes. */
#pragma unroll
                            for (int mi = 0; mi < MB; mi++) {
                                if (mi >= nm) continue;
                                float *o = yo + mi * YY;
                                if (ow + 4 <= d.Wo)
                                    *reinterpret_cast<float4 *>(o) =
                                        make_float4(v[mi][0][0], v[mi][0][1], v[mi][0][2], v[mi][0][3]);
                                else
                                    *reinterpret_cast<float2 *>(o) = make_float2(v[mi][0][0], v[mi][0][1]);
                                if (ow > 0)
                                    *reinterpret_cast<float4 *>(o + d.Wo - SH) =
                                        make_float4(v[mi][1][0], v[mi][1][1], v[mi][1][2], v[mi][1][3]);
                                else
                                    *reinterpret_cast<float2 *>(o + d.Wo) = make_float2(v[mi][1][2], v[mi][1][3]);
                            }
                        } else if (PH == 2 && PW == 4) {
                            /* Two rows of four: a 16-byte store a row and channel where Wo is a multiple of 4 and y
                             * 16-byte aligned (d.quad_out), else two 8-byte pairs (d.pairs: Wo even, the second past
                             * Wo where Wo = 2 mod 4 left out), else a float at a time; a row past Ho is not stored. */
#pragma unroll
                            for (int i = 0; i < PH; i++)
                                if (oh + i < d.Ho)
#pragma unroll
                                    for (int mi = 0; mi < MB; mi++) {
                                        if (mi >= nm) continue;
                                        float *o = yo + mi * YY + i * d.Wo;
                                        if (d.quad_out) {
                                            *reinterpret_cast<float4 *>(o) =
                                                make_float4(v[mi][i][0], v[mi][i][1], v[mi][i][2], v[mi][i][3]);
                                        } else if (d.pairs) {
                                            *reinterpret_cast<float2 *>(o) = make_float2(v[mi][i][0], v[mi][i][1]);
                                            if (ow + 2 < d.Wo)
                                                *reinterpret_cast<float2 *>(o + 2) =
                                                    make_float2(v[mi][i][2], v[mi][i][3]);
                                        } else {
#pragma unroll
                                            for (int j = 0; j < PW; j++)
                                                if (ow + j < d.Wo) o[j] = v[mi][i][j];
                                        }
                                    }
                        } else if (PH == 2 && PW == 2 && d.pairs) {
                            /* 8 aligned bytes: a warp's stores fill whole 32-byte sectors */
#pragma unroll
                            for (int i = 0; i < PH; i++)
                                if (oh + i < d.Ho)
#pragma unroll
                                    for (int mi = 0; mi < MB; mi++)
                                        if (mi < nm)
                                            *reinterpret_cast<float2 *>(yo + mi * YY + i * d.Wo) =
                                                make_float2(v[mi][i][0], v[mi][i][1]);
                        } else {
#pragma unroll
                            for (int i = 0; i < PH; i++)
#pragma unroll
                                for (int j = 0; j < PW; j++)
                                    if (oh + i < d.Ho && ow + j < d.Wo) /* ow >= 0: no shift without d.quad_out */
#pragma unroll
                                        for (int mi = 0; mi < MB; mi++)
                                            if (mi < nm) yo[mi * YY + i * d.Wo + j] = v[mi][i][j];
                        }
                    }
                }
                pc += pw.ds, pr += pw.dr; /* the next unit */
                if (pc >= d.pc) pc -= d.pc, pr++;
                while (pr >= band_pr) pr -= band_pr, g++;
            }
        }
        if (xu && next < d.work) /* the next item's pixels, into the band this one's arithmetic is not reading */
            direct_convert<PH>(xs + (buf ^ 1) * band, raw + (buf ^ 1) * C * d.RW, xu, sl, d, next, cw);
    }
}

typedef void (*direct_kernel_fn)(float *, const float *, const uint8_t *, const nc_conv_lut, const float *,
                                 const float *, const direct_params);

/* The channels per thread for M: the group size that pads M least, the larger on a tie (4 for 4 x 4 patches). */
static int direct_mb(int M, int PH) {
    if (PH == 4) return 4;
    static const int choices[] = {10, 6, 4};
    int best = 4, best_pad = 1 << 30;
    for (int i = 0; i < 3; i++) {
        const int mb = choices[i], pad = (M + mb - 1) / mb * mb - M;
        if (pad < best_pad) best = mb, best_pad = pad;
    }
    return best;
}

/* Instantiated for K = 3..7: 2 x 2 patches (pooling 2/2) and rows of four (unpooled) with MB = 4, 6, 10; two rows
 * of four (unpooled, the second row shifted or not, and under 2/2 pooling) and 4 x 4 patches (pooling 4/4) with
 * MB = 4 (50 kernels). */
template <int K> static direct_kernel_fn direct_pick(int PH, int PW, int MB, int SH, int TP) {
    if (PH == 4) return conv_direct_kernel<K, 4, 4, 4>;
    if (PH == 2 && PW == 4)
        return SH   ? conv_direct_kernel<K, 2, 4, 4, 2>
               : TP ? conv_direct_kernel<K, 2, 4, 4, 0, true>
                    : conv_direct_kernel<K, 2, 4, 4>;
    if (PH == 1) switch (MB) {
        case 10: return conv_direct_kernel<K, 1, 4, 10>;
        case 6: return conv_direct_kernel<K, 1, 4, 6>;
        default: return conv_direct_kernel<K, 1, 4, 4>;
        }
    switch (MB) {
    case 10: return conv_direct_kernel<K, 2, 2, 10>;
    case 6: return conv_direct_kernel<K, 2, 2, 6>;
    default: return conv_direct_kernel<K, 2, 2, 4>;
    }
}

static direct_kernel_fn direct_kernel_for(int K, int PH, int PW, int MB, int SH, int TP) {
    switch (K) {
    case 3: return direct_pick<3>(PH, PW, MB, SH, TP);
    case 4: return direct_pick<4>(PH, PW, MB, SH, TP);
    case 5: return direct_pick<5>(PH, PW, MB, SH, TP);
    case 6: return direct_pick<6>(PH, PW, MB, SH, TP);
    case 7: return direct_pick<7>(PH, PW, MB, SH, TP);
    default: return NULL;
    }
}

/* The words of a channel's raw copy of RB rows of W pixels copied in chunks of A = 16 or 4 bytes (0: no copy), from
 * the chunk that holds the first byte (up to A - 1 bytes in): those chunks, and past them the most that
 * direct_convert's reads of a row's last quad (4 ceil(WS / 4) bytes from the row's first, and the word after) can
 * reach; a whole number of chunks, so that each channel's copy starts A-byte aligned. */
static int direct_raw_words(long RB, int W, int WS, int A) {
    if (!A) return 0;
    const long copied = (A - 1 + RB * W + A - 1) / A * A / 4;
    const long read = (A - 1 + (RB - 1) * W + 4 * ((WS + 3) / 4 - 1)) / 4 + 2;
    return (int)(((copied > read ? copied : read) + A / 4 - 1) / (A / 4) * (A / 4));
}

/* A staged band's channel stride in floats: RB rows of WS, or flat RB rows of W and the 3 floats past them that the
 * last window's columns and the last short copy may reach, rounded up to 4 (so that each channel starts 16-byte
 * aligned). */
static long direct_channel_floats(long RB, int W, int WS, int flat) {
    return flat ? (RB * W + 3 + 3) / 4 * 4 : RB * WS;
}

/* A block's shared memory for its bands of RB rows (the weights, bias and lut apart): two float bands (rounded up to
 * 16 bytes), for either layout where flat may be taken (flat = 1: the larger), and for uint8 pixels copied in chunks
 * of A bytes two raw copies. */
static size_t direct_band_bytes(int C, int W, int WS, long RB, int A, int flat) {
    long cs = direct_channel_floats(RB, W, WS, 0);
    if (flat && direct_channel_floats(RB, W, WS, 1) > cs) cs = direct_channel_floats(RB, W, WS, 1);
    const size_t bands = ((size_t)2 * C * cs + 3) / 4 * 4 * sizeof(float);
    return bands + 2 * (size_t)C * direct_raw_words(RB, W, WS, A) * 4;
}

int nc_conv_direct_fuses(const nc_conv_epilogue *e, int K) {
    if (K < 3 || K > 7) return 0;
    if (e->act != EPI_NONE && e->act != NC_TANH && e->act != NC_RELU && e->act != NC_SIGMOID) return 0;
    if (e->pool == EPI_NONE) return 1;
    return (e->pool == NC_MAXPOOL || e->pool == NC_AVGPOOL) && e->P == e->S && (e->P == 2 || e->P == 4);
}

/* Versions 5 and 6 (rows = 0), 13 (rows = 1: unpooled outputs a row of four a thread; pooled layers as version 6)
 * and 14 (rows = 2: two rows of four, unpooled or under 2/2 pooling; 4/4 pooling as version 6); several channels on
 * float input as versions 5 and 6 (conv_directc.cu): nc_conv_launch_fused's arguments and result. */
static int direct_launch(float *y, const float *x, const uint8_t *x_u8, const nc_conv_lut *lut, const float *k,
                         const float *bias, int B, int C, int H, int W, int M, int K, const nc_conv_epilogue *e,
                         int rows, cudaStream_t stream, nc_error *err) {
    if (!nc_conv_direct_fuses(e, K))
        return nc_fail(
            err, NC_ERR_ARG,
            "conv versions 5, 6, 13 and 14 (direct) take K = 3..7 and pooling with P = S = 2 or 4, not K = %d, "
            "pool %d/%d (version 4 takes any K)",
            K, e->P, e->S);
    if (!x_u8 && nc_conv_directc_takes(C, H, W, M, K, e)) /* several channels: conv_directc.cu */
        return nc_conv_launch_directc(y, x, k, bias, B, C, H, W, M, K, e, stream, err);
    direct_params d;
    d.C = C, d.H = H, d.W = W, d.M = M;
    d.Ho = H - K + 1, d.Wo = W - K + 1;
    d.act = e->act, d.pool = e->pool;
    /* A thread's patch: unpooled 2 x 2 outputs, a row of four (version 13) or two rows of four (version 14); pooled,
     * the P x P pooling window, or for version 14 under 2/2 pooling two rows of four, two windows side by side. */
    int PH = 2, PW = 2;
    if (e->pool != EPI_NONE) PH = PW = e->P;
    if (rows == 1 && e->pool == EPI_NONE) PH = 1, PW = 4;
    if (rows == 2 && PH == 2) PW = 4;
    if (e->pool == EPI_NONE) {
        d.pr_total = (d.Ho + PH - 1) / PH, d.pc = (d.Wo + PW - 1) / PW;
        d.Yh = d.Ho, d.Yw = d.Wo;
    } else {
        if (d.Ho < PH || d.Wo < PH) return NC_OK; /* nothing to pool */
        d.Yh = (d.Ho - PH) / PH + 1, d.Yw = (d.Wo - PH) / PH + 1;
        d.pr_total = d.Yh, d.pc = (d.Yw + PW / PH - 1) / (PW / PH); /* a tile of two windows: the last may be one */
    }
    /* Two rows of four take 4 channels a thread: with 6, ptxas needs 178 registers (one block an SM) or spills. */
    const int MB = PH == 2 && PW == 4 ? 4 : direct_mb(M, PH), KK4 = (K * K + 3) / 4 * 4, MB4 = (MB + 3) / 4 * 4;
    const int wgc = PH == 2 && PW == 4 ? K * K * MB4 : MB * KK4; /* the kernel's WGC */
    const int WS = d.pc * PW + K - 1, G = (M + MB - 1) / MB;
    /* Every group's weights once per block where they take at most DIRECT_W_ALL_MAX and leave room for a band
     * (all the zoo's first layers; the second layers run on conv_directc.cu's kernel); else one group
     * at a time, restaged for every band. */
    const int A = !x_u8 ? 0 : (uintptr_t)x_u8 % 16 == 0 ? 16 : (uintptr_t)x_u8 % 4 == 0 ? 4 : 0;
    /* Float input copied flat (direct_fetch) where every channel's band starts 16-byte aligned in x and its rows'
     * starts are 8-byte aligned for the window's 8-byte loads: x 16-byte aligned, H W a multiple of 4, W even, and
     * (below) bands of an even number of rows where W = 2 mod 4 and an image takes several. */
    int flat = !x_u8 && (uintptr_t)x % 16 == 0 && (long)H * W % 4 == 0 && W % 2 == 0;
    const size_t w_all = (size_t)G * C * wgc * sizeof(float), lut_b = x_u8 ? 256 * sizeof(float) : 0;
    const size_t bias_b = (size_t)(G * MB + 3) / 4 * 4 * sizeof(float);
    d.w_all = w_all <= DIRECT_W_ALL_MAX &&
              w_all + bias_b + lut_b + direct_band_bytes(C, W, WS, PH + K - 1, A, flat) <= DIRECT_SMEM_MAX;
    const size_t fixed = (d.w_all ? w_all : (size_t)C * wgc * sizeof(float)) + bias_b + lut_b;
    int device = 0, sms = 0, optin = 0;
    CUDA_RET(cudaGetDevice(&device));
    CUDA_RET(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_RET(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    size_t cap = DIRECT_SMEM_MAX;
    if (fixed + direct_band_bytes(C, W, WS, PH + K - 1, A, flat) > cap && (size_t)optin > cap) cap = optin;
    /* As many patch rows per block as fit, then no more than the output has. */
    long band = 0, most = d.pr_total; /* the largest that fits, by bisection */
    while (band < most) {
        const long mid = (band + most + 1) / 2;
        if (fixed + direct_band_bytes(C, W, WS, mid * PH + K - 1, A, flat) <= cap)
            band = mid;
        else
            most = mid - 1;
    }
    if (band < 1)
        return nc_fail(
            err, NC_ERR_ARG,
            "conv versions 5, 6, 13 and 14 (direct): two bands of C = %d rows of %d pixels do not fit in %d KB "
            "of shared memory with the weights (version 4 takes it)",
            C, W, (int)(cap / 1024));
    d.quad_out = PH == 1 && e->pool == EPI_NONE && d.Wo % 2 == 0 && (long)d.Ho * d.Wo % 4 == 0 && (uintptr_t)y % 16 == 0
                     ? (d.Wo % 4 == 0 ? 1 : 2)
                     : 0;
    /* Two rows of four: where Wo = 2 mod 4, the second row's four two columns to the left (the kernel's SH = 2); each
     * tile's first row is even, so that nothing depends on where a band starts. */
    if (PH == 2 && PW == 4)
        d.quad_out = e->pool == EPI_NONE && d.Wo % 2 == 0 && (long)d.Ho * d.Wo % 4 == 0 && (uintptr_t)y % 16 == 0
                         ? (d.Wo % 4 == 0 ? 1 : 2)
                         : 0;
    /* Odd rows' fours shifted left read two floats before their window: bands of an even number of rows, so that a
     * band's first row is even and those two floats are in the band (a band of one row: unshifted, 4-byte stores). */
    if (PH == 1 && d.quad_out == 2 && band < d.pr_total) {
        if (band >= 2)
            band &= ~1L;
        else
            d.quad_out = 0;
    }
    if (flat && W % 4 != 0 && band < d.pr_total && band * PH % 2 != 0) flat = 0;
    d.band_pr = (int)band;
    d.bands = (d.pr_total + d.band_pr - 1) / d.band_pr;
    d.RB = d.band_pr * PH + K - 1, d.WS = flat ? W : WS, d.WQ = (WS + 3) / 4, d.RW = direct_raw_words(d.RB, W, WS, A);
    d.flat = flat, d.CS = (int)direct_channel_floats(d.RB, W, WS, flat);
    d.u8_align = A;
    d.pairs = e->pool == EPI_NONE && d.Wo % 2 == 0 && (uintptr_t)y % 8 == 0;
    /* Float input copied by the widest cp.async that the row length, the staged stride and x's alignment allow. */
    d.cw = 1;
    for (int cw = 4; cw > 1 && d.cw == 1; cw /= 2)
        if (W % cw == 0 && WS % cw == 0 && (uintptr_t)x % (4 * cw) == 0) d.cw = cw;
    if ((long long)M * d.Yh * d.Yw > 0x7FFFFFFF)
        return nc_fail(err, NC_ERR_ARG,
                       "conv versions 5, 6, 13 and 14 (direct): an image's output of %d x %d x %d is too large", M,
                       d.Yh, d.Yw);
    if ((long long)B * d.bands > 0x7FFFFFFF)
        return nc_fail(err, NC_ERR_ARG,
                       "conv versions 5, 6, 13 and 14 (direct): %d images of %d bands is too many at once", B, d.bands);
    d.work = B * d.bands;
    const int patches = d.band_pr * d.pc;
    const size_t smem = fixed + ((size_t)2 * C * d.CS + 3) / 4 * 4 * sizeof(float) + 2 * (size_t)C * d.RW * 4;
    const direct_kernel_fn fn =
        direct_kernel_for(K, PH, PW, MB, d.quad_out == 2 && PH == 2 ? 2 : 0, PW == 4 && e->pool != EPI_NONE);
    if (smem > 48 * 1024)
        CUDA_RET(cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    /* Pooled layers: blocks of half the threads where four of them fit on an SM (as many warps as two whole ones,
     * and a barrier holds up half as many: the zoo's first layers fused 2-6% faster, H100, 2026-11-24); else whole
     * ones, as a layer whose band takes most of the shared memory would lose half its warps. Unpooled layers, which
     * store four times as much, keep whole blocks: with half ones three of the zoo's first layers alone were 4-14%
     * slower, two 2% faster (the same day; not explained). */
    const int units = d.w_all ? G * patches : patches; /* (group, patch) units of a band, or patches of a group */
    int threads = (units + 31) / 32 * 32, per_sm = 0;
    if (threads > DIRECT_MAX_THREADS) threads = DIRECT_MAX_THREADS;
    if (e->pool != EPI_NONE && threads > DIRECT_MAX_THREADS / 2) {
        int half_sm = 0;
        CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&half_sm, fn, DIRECT_MAX_THREADS / 2, smem));
        if (half_sm >= 4) threads = DIRECT_MAX_THREADS / 2, per_sm = half_sm;
    }
    /* As many blocks as are resident at once, each taking work items in turn: the weights are staged once a
     * block. */
    if (!per_sm) CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, threads, smem));
    const long resident = (long)sms * (per_sm > 0 ? per_sm : 1), blocks = resident < d.work ? resident : d.work;
    static const nc_conv_lut no_lut = {{0}};
    fn<<<(unsigned)blocks, threads, smem, stream>>>(y, x, x_u8, lut ? *lut : no_lut, k, bias, d);
    CUDA_LAUNCHED();
    return NC_OK;
}

int nc_conv_launch_fused(float *y, const float *x, const uint8_t *x_u8, const nc_conv_lut *lut, const float *k,
                         const float *bias, int B, int C, int H, int W, int M, int K, const nc_conv_epilogue *e,
                         cudaStream_t stream, nc_error *err) {
    return direct_launch(y, x, x_u8, lut, k, bias, B, C, H, W, M, K, e, 0, stream, err);
}

int nc_conv_fused_rows_of(int version) {
    return version == 6 ? 0 : version == 14 ? 2 : version == 15 ? 3 : -1;
}

int nc_conv_launch_fused_rows(float *y, const float *x, const uint8_t *x_u8, const nc_conv_lut *lut, const float *k,
                              const float *bias, int B, int C, int H, int W, int M, int K, const nc_conv_epilogue *e,
                              int rows, cudaStream_t stream, nc_error *err) {
    if (rows < 0 || rows > 3) return nc_fail(err, NC_ERR_ARG, "conv: rows of four a thread: 0 to 3, not %d", rows);
    if (rows == 3) { /* version 15 (conv_wino.cu) */
        return nc_conv_launch_wino_fused(y, x, x_u8, lut, k, bias, B, C, H, W, M, K, e, stream, err);
    }
    return direct_launch(y, x, x_u8, lut, k, bias, B, C, H, W, M, K, e, rows, stream, err);
}

int nc_conv_launch_direct_rows(NC_CONV_LAUNCHER_ARGS) {
    const nc_conv_epilogue none = {EPI_NONE, EPI_NONE, 1, 1};
    return direct_launch(y, x, NULL, NULL, k, bias, B, C, H, W, M, K, &none, 1, stream, err);
}

int nc_conv_launch_direct_tiles(NC_CONV_LAUNCHER_ARGS) {
    const nc_conv_epilogue none = {EPI_NONE, EPI_NONE, 1, 1};
    return direct_launch(y, x, NULL, NULL, k, bias, B, C, H, W, M, K, &none, 2, stream, err);
}

int nc_conv_launch_direct(NC_CONV_LAUNCHER_ARGS) {
    const nc_conv_epilogue none = {EPI_NONE, EPI_NONE, 1, 1};
    return nc_conv_launch_fused(y, x, NULL, NULL, k, bias, B, C, H, W, M, K, &none, stream, err);
}
