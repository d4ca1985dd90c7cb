/*
 * Versions 5 and 6 on layers of several input channels (C > 1, float input): conv_directc_kernel. Exact fp32,
 * the same sums in the same order as conv_direct.cu's kernel (c, then p, then q, with fused multiply-adds), and the
 * same epilogue; only the way the work is laid out differs.
 *
 * conv_direct.cu's kernel stages a whole band of every channel, then waits for it at a barrier with every thread
 * of the block: on 2018 fall's second layer that barrier and the staging loads were 41% of ncu's stall samples,
 * with two blocks an SM held there by shared memory (2026-11-22). Here
 *   - each thread keeps one tile for all the input channels: TR x TC outputs x MB channels (64 sums). Pooling
 *     P = S = 2 (or none) takes 2 x 4 tiles of 8 channels, P = 4 4 x 4 tiles of 4 channels, so that a tile holds
 *     whole pooling windows and its epilogue needs no other thread's sums; where 6 divides the columns of output
 *     that count and 4 does not, 2 x 6 tiles of 4 channels (48 sums), so that no column is computed for nothing;
 *   - the threads of a block form teams of one to four warps. A team's item is a run of consecutive tiles of the
 *     batch (image by image, each row-major) for every channel group, as many as its lanes hold, so that few lanes
 *     idle whatever the output's size: an item that reaches an image's last tile goes on into the next image's
 *     first (before 2026-11-25 an image was split into items of equal runs, and its last item's spare lanes idled).
 *     The host picks the team size that keeps the most tiles working on an SM;
 *   - a team copies its item one channel plane at a time (the input rows its tiles read: for an item across two
 *     images, the first one's rows from its first tile row to the end, then the second's from row 0) into a ring
 *     of DC_NBUF planes by cp.async, DC_NBUF - 1 planes ahead of the one it computes, across items, so that the
 *     copies run behind the arithmetic; a plane costs one barrier of the team's threads alone (bar.sync with an
 *     id a team, or __syncwarp for a team of one warp).
 *     A plane is copied a word at a time by a table of offsets, with zeros past the rows' W words; or, where it is
 *     one 16-byte aligned run of x (W even, H W a multiple of 4: the second layers of 2018 spring, 2019 spring and
 *     2020), flat, 16 bytes a copy, in rows of W words (the kernel's F = 1; F = 2 where W = 2 mod 4, its rows then
 *     read by 8 bytes);
 *   - all the weights stay in shared memory for the block's life, shared by its teams, transposed to (c, p, g, q, m)
 *     so that a tap's MB channels are MB/4 broadcast 16-byte loads; a tile's input rows are read as 16-byte words
 *     (8-byte where F = 2).
 * Measured side by side with conv_direct.cu's kernel (H100, N = 10000, 2026-11-23; docs/PERFORMANCE-LOG.md): 2018
 * fall's second layer 7.9 -> 5.8 ms alone, 7.7 -> 5.5 fused with tanh and max pooling. The copy by a table of
 * offsets, the weights' order, the unroll for K <= 5 and the 16-byte unpooled stores then took the zoo's second
 * layers from 0.56-5.54 ms to 0.53-5.13 fused and 0.68-5.84 to 0.58-5.61 alone (the same bits). The flat copies
 * took those three layers 1.4-6.1% faster (H100, 2026-11-25, bench/ab side by side: 2018 spring's 1.000 -> 0.959
 * ms, 2019 spring's 0.534 -> 0.526 fused and 0.574 -> 0.560 alone, 2020's 1.494 -> 1.433 fused and 2.079 -> 1.959
 * alone; the same bits). Items across images then took the zoo's other second layers 1.4-17% faster, alone and
 * fused (2026-11-25, bench/ab: 2019 spring's fused 0.525 -> 0.449 ms, 2018 fall's fused 5.05 -> 4.48; the same
 * bits), and 2020's, whose items never cross an image, 2% slower (docs/PERFORMANCE-LOG.md); and 2 x 6 tiles 2019
 * spring's (18 columns) 15% fused and 22% alone (0.449 -> 0.389 and 0.499 -> 0.407 ms; the same bits).
 *
 *   nanoconv eval --model M --backend cuda --conv-kernel 6     (a model whose second layer has C > 1)
 *   nanoconv bench --backend cuda --shape 12x33x33:24x7+tanh+maxpool2 --versions 5,6
 */
#include "cuda/conv_act.cuh"
#include "cuda/conv_ladder.h"
#include "cuda/cp_async.cuh"
#include "cuda/cuda_check.h"

#define DC_NBUF 3               /* channel planes in a team's ring: one computed, two in flight */
#define DC_THREADS_MAX 512      /* a block's threads: one tile and channel group each */
#define DC_TEAM_MAX 128         /* a team's threads: at most four warps wait at its barrier */
#define DC_TEAMS_MAX 15         /* teams of several warps: named barriers 1..15 (0 is __syncthreads') */
#define DC_SMEM_MAX (160 << 10) /* the weights and the teams' rings */

/* A thread's tile for pooling window P (1: none): TR x TC outputs of MB channels; TCW = 6 (dc_params.wide): 2 x 6
 * outputs of 4 channels (48 sums), for P = 1 and 2. */
template <int P, int TCW = 4> struct dc_tile {
    static constexpr int TR = P == 4 ? 4 : 2, TC = P == 4 ? 4 : TCW, MB = P == 4 || TCW == 6 ? 4 : 8;
};

struct dc_params {
    int C, H, W, M;
    int Ho, Wo, Yh, Yw; /* the convolution's output; what is stored (pooled, or Ho x Wo) */
    int act, pool;      /* nc_layer_kind or -1 */
    int MP;             /* M padded to whole channel groups: the weights' last dimension in shared memory */
    int tcols, tiles;   /* tiles across the output, and in all (tile rows times tcols) */
    int team_tiles;     /* an item: that many consecutive tiles of the batch's (image, then row-major) */
    int B, items;       /* images; items (the batch's tiles over team_tiles, rounded up) */
    int RB, WS;         /* a staged plane: rows, and the row stride in words (a multiple of 4, or W where flat) */
    int PS;             /* a plane's words in the ring: RB WS, or where flat RB W and the 3 words a window reads
                           past them, rounded up to 4 */
    int flat;           /* a plane copied as the one run of x that it is (W even, H W a multiple of 4, x 16-byte
                           aligned): 16 bytes a copy, rows of W words */
    int teams;          /* teams a block */
    int team_threads;   /* a team's threads (whole warps) */
    int team_units;     /* those with a tile: channel groups times team_tiles */
    int wide;           /* tiles of 2 x 6 outputs of 4 channels (P = 1 or 2; the kernel's TCW = 6) */
};

/* A column past the image in the copy's table: above every limit, so that it is zeros. */
#define DC_PAST 0x7fffffff

/* A team's copy of a channel plane's rows into dst (RB x WS words), this thread's elements i = i0 + tt, i0 + tt +
 * step, ... below n: element i is word ofs[i] - shift from src where that is below lim, else zero. ofs is the block's
 * table of r W + s for element r WS + s, DC_PAST for s >= W. The rows of an item's first image: src the channel's
 * row that the item's first tile row starts at, lim the words from there to the end of the channel, shift 0; those of
 * the next image, from element i0 = rows_a WS on: src its channel's row 0, lim H W, shift rows_a W. With the row
 * and column walked and the image's bounds checked an element (and the item's place found by two divisions a
 * plane) the copy took 31 instructions an element, a tenth of the kernel's on 2019 fall's second layer; by the
 * table 18 (ncu, H100, 2026-11-23). Committed as one cp.async group by the caller. */
__device__ __forceinline__ void dc_stage(float *dst, const float *src, int lim, const int *ofs, int shift, int i0,
                                         int n, int tt, int step) {
#pragma unroll 2
    for (int i = i0 + tt; i < n; i += step) {
        const int o = ofs[i] - shift;
        const bool in = o < lim;
        nc_cp_async4(dst + i, src + (unsigned)(in ? o : 0), in ? 4 : 0);
    }
}

/* A flat plane (d.flat): the n words from src, 16 bytes a copy, those from lim on (the channel's end: a multiple of
 * 4, as are H W and the first row's offset, so that where an item runs into the next image its rows start 16-byte
 * aligned in dst too) zero; this thread's copies i = 4 tt, 4 (tt + step), ... The last copy may write up to 3 words
 * past n, which the plane's PS leaves room for. Committed as one cp.async group by the caller. */
__device__ __forceinline__ void dc_stage_flat(float *dst, const float *src, int lim, int n, int tt, int step) {
    for (int i = 4 * tt; i < n; i += 4 * step) {
        const bool in = i < lim;
        nc_cp_async16(dst + i, src + (in ? i : 0), in ? 16 : 0);
    }
}

/* N floats from src, 16-byte aligned (A8 false: as many 16-byte loads as fit, then an 8- and a 4-byte one as needed)
 * or only 8-byte aligned (A8: by 8 bytes; the rows of a flat plane with W = 2 mod 4). */
template <int N, bool A8> __device__ __forceinline__ void dc_load_row(float (&v)[N], const float *src) {
    if constexpr (A8) {
#pragma unroll
        for (int j = 0; j + 2 <= N; j += 2) {
            const float2 f = *reinterpret_cast<const float2 *>(src + j);
            v[j] = f.x, v[j + 1] = f.y;
        }
        if constexpr (N % 2 == 1) v[N - 1] = src[N - 1];
    } else {
#pragma unroll
        for (int j = 0; j + 4 <= N; j += 4) {
            const float4 f = *reinterpret_cast<const float4 *>(src + j);
            v[j] = f.x, v[j + 1] = f.y, v[j + 2] = f.z, v[j + 3] = f.w;
        }
        constexpr int j2 = N / 4 * 4;
        if constexpr (N % 4 >= 2) {
            const float2 f = *reinterpret_cast<const float2 *>(src + j2);
            v[j2] = f.x, v[j2 + 1] = f.y;
        }
        if constexpr (N % 2 == 1) v[N - 1] = src[N - 1];
    }
}

/* The barrier of team t's threads alone: __syncwarp for a team of one warp (which orders its lanes' shared memory
 * as a barrier does, and needs no named barrier, so that a block may hold 16 such teams), else named barrier t + 1
 * (barrier 0 is __syncthreads'). */
__device__ __forceinline__ void dc_team_sync(int t, int threads) {
    if (threads == 32)
        __syncwarp();
    else
        asm volatile("bar.sync %0, %1;" ::"r"(t + 1), "r"(threads) : "memory");
}

/* The epilogue of one tile, as conv_direct.cu's (the same operations in the same order): + bias, the activation,
 * the pooling, switched once for the tile; b the image, (row0, col0) the tile's first convolution output, m0 its
 * first channel. Max pooling takes the window's largest sum first (bias and activations are monotone). */
template <int P, int TR, int TC, int MB>
__device__ __forceinline__ void dc_epilogue(float (&acc)[TR][TC][MB], float *__restrict__ y,
                                            const float *__restrict__ bias, const dc_params &d, int b, int row0,
                                            int col0, int m0) {
    const int nm = min(MB, d.M - m0);
    const size_t YY = (size_t)d.Yh * d.Yw;
    float *yg = y + ((size_t)b * d.M + m0) * YY;
    float bm[MB];
#pragma unroll
    for (int m = 0; m < MB; m++) bm[m] = bias && m < nm ? bias[m0 + m] : 0.0f;
    if constexpr (P > 1) {
        constexpr int PR = TR / P, PC = TC / P; /* pooling windows down and across the tile */
        if (d.pool == NC_MAXPOOL) {
            float o[PR][PC][MB];
#pragma unroll
            for (int a = 0; a < PR; a++)
#pragma unroll
                for (int e = 0; e < PC; e++)
#pragma unroll
                    for (int m = 0; m < MB; m++) {
                        float v = acc[a * P][e * P][m];
#pragma unroll
                        for (int i = 0; i < P; i++)
#pragma unroll
                            for (int j = 0; j < P; j++) v = fmaxf(v, acc[a * P + i][e * P + j][m]);
                        o[a][e][m] = bias ? v + bm[m] : v;
                    }
            nc_act_n(d.act, reinterpret_cast<float(&)[PR * PC * MB]>(o));
#pragma unroll
            for (int a = 0; a < PR; a++)
#pragma unroll
                for (int e = 0; e < PC; e++) {
                    const int ph = row0 / P + a, pw = col0 / P + e;
                    if (ph < d.Yh && pw < d.Yw)
#pragma unroll
                        for (int m = 0; m < MB; m++)
                            if (m < nm) yg[m * YY + (size_t)ph * d.Yw + pw] = o[a][e][m];
                }
            return;
        }
    }
#pragma unroll
    for (int i = 0; i < TR; i++)
#pragma unroll
        for (int j = 0; j < TC; j++)
#pragma unroll
            for (int m = 0; m < MB; m++)
                if (bias) acc[i][j][m] += bm[m];
    nc_act_n(d.act, reinterpret_cast<float(&)[TR * TC * MB]>(acc));
    if constexpr (P > 1) { /* average pooling: the window's sum in the order i, j */
        constexpr int PR = TR / P, PC = TC / P;
#pragma unroll
        for (int a = 0; a < PR; a++)
#pragma unroll
            for (int e = 0; e < PC; e++) {
                const int ph = row0 / P + a, pw = col0 / P + e;
#pragma unroll
                for (int m = 0; m < MB; m++) {
                    float s = 0.0f;
#pragma unroll
                    for (int i = 0; i < P; i++)
#pragma unroll
                        for (int j = 0; j < P; j++) s += acc[a * P + i][e * P + j][m];
                    if (ph < d.Yh && pw < d.Yw && m < nm) yg[m * YY + (size_t)ph * d.Yw + pw] = s / (float)(P * P);
                }
            }
    } else { /* unpooled: a tile row's TC outputs of a channel by the widest stores their address allows */
        static_assert(TC == 4 || TC == 6, "the unpooled stores take rows of 4 or 6 outputs");
        const bool whole = col0 + TC <= d.Wo;
#pragma unroll
        for (int i = 0; i < TR; i++)
            if (row0 + i < d.Ho)
#pragma unroll
                for (int m = 0; m < MB; m++) {
                    if (m >= nm) continue;
                    float *o = yg + m * YY + (size_t)(row0 + i) * d.Wo + col0;
                    if constexpr (TC == 6) { /* a wide tile row: three 8-byte stores where aligned */
                        if (whole && ((uintptr_t)o & 7) == 0) {
#pragma unroll
                            for (int j = 0; j < TC; j += 2)
                                *reinterpret_cast<float2 *>(o + j) = make_float2(acc[i][j][m], acc[i][j + 1][m]);
                        } else {
#pragma unroll
                            for (int j = 0; j < TC; j++)
                                if (col0 + j < d.Wo) o[j] = acc[i][j][m];
                        }
                    } else { /* one 16-byte store where aligned (else 8- and 4-byte ones): a warp's lanes hold
                              * consecutive tiles, so that its stores fill whole sectors where they are 16-byte */
                        const float v0 = acc[i][0][m], v1 = acc[i][1][m], v2 = acc[i][2][m], v3 = acc[i][3][m];
                        const unsigned at = (unsigned)(uintptr_t)o & 15;
                        if (!whole) {
                            o[0] = v0;
                            if (col0 + 1 < d.Wo) o[1] = v1;
                            if (col0 + 2 < d.Wo) o[2] = v2;
                        } else if (at == 0) {
                            *reinterpret_cast<float4 *>(o) = make_float4(v0, v1, v2, v3);
                        } else if (at == 8) {
                            *reinterpret_cast<float2 *>(o) = make_float2(v0, v1);
                            *reinterpret_cast<float2 *>(o + 2) = make_float2(v2, v3);
                        } else { /* 4 or 12: o + 1 is 8-byte aligned */
                            o[0] = v0;
                            *reinterpret_cast<float2 *>(o + 1) = make_float2(v1, v2);
                            o[3] = v3;
                        }
                    }
                }
    }
}

/* Item `item`'s place: its image b0, h0 the input row its first tile row starts at; rows_a the plane's rows from
 * image b0 (from h0), and where the item runs into image b0 + 1 (span) the rows from there on are that image's from
 * row 0. */
struct dc_item {
    int b0, h0, rows_a, rows;
    bool span;
};

/* The place of an item of n tiles from tile t0 of image b0: the item's tile rows, TR outputs each, and K - 1 more;
 * or, where it runs past the image's last tile and another image follows, the rest of the image from its first tile
 * row, then the next image's tile rows that its other tiles touch, and K - 1 more. For the kernel (dc_item_at) and
 * the host's plane size (dc_rows). */
__host__ __device__ __forceinline__ dc_item dc_item_rows(const dc_params &d, int b0, int t0, int n, int TR, int K) {
    dc_item it;
    const int tr0 = t0 / d.tcols, na = min(n, d.tiles - t0);
    it.b0 = b0, it.h0 = tr0 * TR;
    it.span = na < n && b0 + 1 < d.B;
    it.rows_a = it.span ? d.H - it.h0 : ((t0 + na - 1) / d.tcols - tr0 + 1) * TR + K - 1;
    it.rows = it.rows_a + (it.span ? ((n - na - 1) / d.tcols + 1) * TR + K - 1 : 0);
    return it;
}

template <int TR, int K> __device__ __forceinline__ dc_item dc_item_at(const dc_params &d, int item) {
    /* 64-bit, though the host holds B tiles + team_tiles below 2^31: with int arithmetic here and below, ptxas
     * spilled more in the unpooled kernels, and 2020's second layer alone ran 11% slower (H100, 2026-11-25). */
    const long long g0 = (long long)item * d.team_tiles;
    const int b0 = (int)(g0 / d.tiles);
    const int t0 = (int)(g0 - (long long)b0 * d.tiles); /* the item's first tile in image b0 */
    return dc_item_rows(d, b0, t0, d.team_tiles, TR, K);
}

/* A persistent grid of blocks of `teams` teams. Team t of block j takes items (j teams + t) + i (gridDim teams), i =
 * 0, 1, ...: the teams share the weights and nothing else, and each keeps its own ring and barrier, so that no warp
 * waits for more than its team's few warps (with one barrier for a block of five warps, ncu put 29% of the stall
 * samples of 2018 fall's second layer at it, 2026-11-23). Dynamic shared memory:
 *   ws (C, K, G, K, MB)           the weights, zero past M: for a row p of taps, a channel group's K taps of MB
 *                                 channels are contiguous, so that their loads take constant offsets
 *   rings (teams, DC_NBUF, PS)    channel planes of RB rows of WS words (W where flat); plane u of a team's sequence
 *                                 (item u / C, channel u % C) in slot u % DC_NBUF
 *   ofs (RB, WS)                  the copy's table (dc_stage), but where flat (dc_stage_flat) */
template <int K, int P, int F, int TCW>
__global__ void __launch_bounds__(DC_THREADS_MAX, 1)
    conv_directc_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ k,
                        const float *__restrict__ bias, const dc_params d) {
    constexpr int TR = dc_tile<P, TCW>::TR, TC = dc_tile<P, TCW>::TC, MB = dc_tile<P, TCW>::MB;
    constexpr int KK = K * K, RN = TC + K - 1; /* a tile row's input: RN floats */
    extern __shared__ __align__(16) float smem[];
    constexpr bool FLAT = F > 0, A8 = F == 2 || TC == 6; /* the plane copied flat; its rows (tiles) 8-byte aligned */
    const int C = d.C, MP = d.MP, PS = d.PS;
    const int tid = (int)threadIdx.x, team = tid / d.team_threads, tt = tid - team * d.team_threads;
    float *ws = smem, *ring = smem + C * KK * MP + team * DC_NBUF * PS;
    int *ofs = reinterpret_cast<int *>(smem + C * KK * MP + d.teams * DC_NBUF * PS);

    for (int i = tid; i < C * KK * MP; i += (int)blockDim.x) {
        /* i = ((cp G + g) K + q) MB + mi, cp = c K + p */
        const int mi = i % MB, q = i / MB % K, gq = i / (MB * K), g = gq % (MP / MB), cp = gq / (MP / MB);
        const int m = g * MB + mi;
        ws[i] = m < d.M ? k[(size_t)m * C * KK + cp * K + q] : 0.0f;
    }
    for (int i = tid; i < (FLAT ? 0 : PS); i += (int)blockDim.x) {
        const int r = i / d.WS, s = i - r * d.WS;
        ofs[i] = s < d.W ? r * d.W + s : DC_PAST;
    }
    __syncthreads(); /* the weights and the copy's table are written */
    const int first = (int)blockIdx.x * d.teams + team, stride = (int)gridDim.x * d.teams;
    const int my_items = first < d.items ? (d.items - first + stride - 1) / stride : 0;
    const size_t HW = (size_t)d.H * d.W;
    /* The next plane to copy: the team's item pn, channel pc; sx its channel 0's first row to copy, slim the words
     * from there to the end of a channel; split the plane's words from image b0, n_copy all its words. */
    int pn = 0, pc = 0, slim = 0, split = 0, n_copy = 0;
    const float *sx = x;
    auto stage_item = [&]() {
        const dc_item it = dc_item_at<TR, K>(d, first + pn * stride);
        sx = x + (size_t)it.b0 * C * HW + (size_t)it.h0 * d.W;
        slim = (d.H - it.h0) * d.W;
        split = it.rows_a * d.WS, n_copy = it.rows * d.WS;
    };
    if (my_items > 0) stage_item();
    auto stage = [&](float *dst, int c) {
        const float *src = sx + c * HW;
        if constexpr (FLAT)
            dc_stage_flat(dst, src, slim, split, tt, d.team_threads);
        else
            dc_stage(dst, src, slim, ofs, 0, 0, split, tt, d.team_threads);
        if (split < n_copy) { /* the rest from the next image's channel c, row 0 on */
            const float *next = src + (C - 1) * HW + slim;
            if constexpr (FLAT)
                dc_stage_flat(dst + split, next, (int)HW, n_copy - split, tt, d.team_threads);
            else
                dc_stage(dst, next, (int)HW, ofs, slim, split, n_copy, tt, d.team_threads);
        }
    };
    for (int u = 0; u < DC_NBUF - 1; u++) {
        if (pn < my_items) stage(ring + u * PS, pc);
        asm volatile("cp.async.commit_group;" ::: "memory");
        if (++pc == C && ++pn < my_items) pc = 0, stage_item();
    }

    /* This thread's channel group g (slowest, so a warp's weight loads are mostly one broadcast) and tile t of each
     * item. */
    const int g = tt / d.team_tiles, t = tt - g * d.team_tiles;
    float acc[TR][TC][MB];
    int slot = 0; /* ring slot of the plane being computed */
    for (int n = 0; n < my_items; n++) {
        const int item = first + n * stride;
        const dc_item it = dc_item_at<TR, K>(d, item);
        const long long gt = (long long)item * d.team_tiles + t; /* this thread's tile of the batch */
        const int b = (int)(gt / d.tiles), tile = (int)(gt - (long long)b * d.tiles);
        const int tr = tile / d.tcols, tc = tile - tr * d.tcols;
        const bool on = tt < d.team_units && b < d.B; /* a tile of this item */
        const int x_at = (b == it.b0 ? tr * TR - it.h0 : it.rows_a + tr * TR) * d.WS + tc * TC; /* its window */
#pragma unroll
        for (int i = 0; i < TR; i++)
#pragma unroll
            for (int j = 0; j < TC; j++)
#pragma unroll
                for (int m = 0; m < MB; m++) acc[i][j][m] = 0.0f;
        for (int c = 0; c < C; c++) {
            /* This thread's copies of the plane have landed (DC_NBUF - 2 younger groups may be in flight); after
             * the barrier the team's have, and the team is done with the slot the next copy overwrites. */
            asm volatile("cp.async.wait_group %0;" ::"n"(DC_NBUF - 2) : "memory");
            dc_team_sync(team, d.team_threads);
            if (pn < my_items) stage(ring + (slot + DC_NBUF - 1) % DC_NBUF * PS, pc);
            asm volatile("cp.async.commit_group;" ::: "memory"); /* perhaps empty: the count stays right */
            if (++pc == C && ++pn < my_items) pc = 0, stage_item();
            if (on) {
                const float *xb = ring + slot * PS + x_at;
                /* Tap (p, q)'s weights at wb + p K MP + q MB. The loop over p is unrolled for K <= 5 (the next
                 * rows' loads go among this one's multiply-adds: 1-4% faster on the zoo's layers of K = 5, same
                 * bits); a K = 7 kernel so unrolled outgrew the instruction cache (25-45% slower). */
                const float *wb = ws + (c * K * MP + g * MB) * K;
#pragma unroll(K <= 5 ? K : 1)
                for (int p = 0; p < K; p++, xb += d.WS, wb += K * MP) {
                    float row[TR][RN];
#pragma unroll
                    for (int i = 0; i < TR; i++) dc_load_row<RN, A8>(row[i], xb + i * d.WS);
#pragma unroll
                    for (int q = 0; q < K; q++) {
                        float w[MB];
#pragma unroll
                        for (int v = 0; v < MB / 4; v++) {
                            const float4 f = *reinterpret_cast<const float4 *>(wb + q * MB + 4 * v);
                            w[4 * v] = f.x, w[4 * v + 1] = f.y, w[4 * v + 2] = f.z, w[4 * v + 3] = f.w;
                        }
                        /* The same multiply-adds in either order (each sum's terms stay in tap order), which
                         * ptxas allocates and schedules by: where the tap rows are a loop (K > 5), channels outside
                         * a row's columns took the zoo's K = 7 layers 1-4% faster; K = 5's were 0-2.5% slower so
                         * (H100, 2026-11-25, docs/PERFORMANCE-LOG.md; K = 6 not measured). */
                        if constexpr (K > 5) {
#pragma unroll
                            for (int i = 0; i < TR; i++)
#pragma unroll
                                for (int m = 0; m < MB; m++)
#pragma unroll
                                    for (int j = 0; j < TC; j++) acc[i][j][m] = fmaf(row[i][j + q], w[m], acc[i][j][m]);
                        } else {
#pragma unroll
                            for (int i = 0; i < TR; i++)
#pragma unroll
                                for (int j = 0; j < TC; j++)
#pragma unroll
                                    for (int m = 0; m < MB; m++) acc[i][j][m] = fmaf(row[i][j + q], w[m], acc[i][j][m]);
                        }
                    }
                }
            }
            slot = slot + 1 == DC_NBUF ? 0 : slot + 1;
        }
        if (on) dc_epilogue<P>(acc, y, bias, d, b, tr * TR, tc * TC, g * MB);
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory"); /* no copy outlives the block (all were empty by now) */
}

typedef void (*dc_kernel_fn)(float *, const float *, const float *, const float *, const dc_params);

template <int P, int F, int TCW> static dc_kernel_fn dc_pick(int K) {
    switch (K) {
    case 3: return conv_directc_kernel<3, P, F, TCW>;
    case 4: return conv_directc_kernel<4, P, F, TCW>;
    case 5: return conv_directc_kernel<5, P, F, TCW>;
    case 6: return conv_directc_kernel<6, P, F, TCW>;
    case 7: return conv_directc_kernel<7, P, F, TCW>;
    default: return NULL;
    }
}

template <int F> static dc_kernel_fn dc_pick_p(int K, int P) {
    return P == 4 ? dc_pick<4, F, 4>(K) : P == 2 ? dc_pick<2, F, 4>(K) : dc_pick<1, F, 4>(K);
}

template <int F> static dc_kernel_fn dc_pick_wide(int K, int P) {
    return P == 2 ? dc_pick<2, F, 6>(K) : dc_pick<1, F, 6>(K);
}

/* Instantiated for K = 3..7, P = 1 (no pooling), 2 and 4, and F: planes copied by the table (0) or flat, with rows
 * 16-byte (1) or 8-byte aligned (2) (45 kernels); and with wide tiles for P = 1 and 2, F = 0 and 2 (20 more: a tile
 * of six columns starts 8-byte aligned, whatever the rows). */
static dc_kernel_fn dc_kernel_for(int K, int P, int F, int wide) {
    if (wide) return F ? dc_pick_wide<2>(K, P) : dc_pick_wide<0>(K, P); /* wide tiles read rows by 8 bytes */
    return F == 2 ? dc_pick_p<2>(K, P) : F == 1 ? dc_pick_p<1>(K, P) : dc_pick_p<0>(K, P);
}

/* A plane's words in a team's ring for RB rows (dc_params.PS). */
static int dc_plane(const dc_params *d, int RB) {
    return d->flat ? (RB * d->W + 3 + 3) / 4 * 4 : RB * d->WS;
}

/* The shape's fixed part of the plan (everything but the team); 0 where this kernel does not take the layer. */
static int dc_shape(dc_params *d, int *P, int C, int H, int W, int M, int K, const nc_conv_epilogue *e) {
    if (C < 2 || K < 3 || K > 7 || H < K || W < K || M < 1 || !nc_conv_direct_fuses(e, K)) return 0;
    if ((long long)(2 * H + 8) * W >= DC_PAST) return 0; /* the copy's table holds offsets within two channels */
    *P = e->pool < 0 ? 1 : e->P;
    d->C = C, d->H = H, d->W = W, d->M = M;
    d->Ho = H - K + 1, d->Wo = W - K + 1;
    d->act = e->act, d->pool = e->pool;
    d->Yh = *P == 1 ? d->Ho : d->Ho >= *P ? (d->Ho - *P) / *P + 1 : 0;
    d->Yw = *P == 1 ? d->Wo : d->Wo >= *P ? (d->Wo - *P) / *P + 1 : 0;
    const int rows = *P == 1 ? d->Ho : d->Yh * *P, cols = *P == 1 ? d->Wo : d->Yw * *P; /* outputs that count */
    /* Tiles of 2 x 6 outputs of 4 channels where 6 divides the columns that count and 4 does not (2019 spring's
     * second layer, 18 columns: 1.15x fused and 1.22x alone against 2 x 4 tiles, which compute 20; H100,
     * 2026-11-25). Where both leave columns over they were no faster (2019 fall's alone, 29 columns: 0.999x). */
    d->wide = *P != 4 && cols % 6 == 0 && cols % 4 != 0;
    const int TR = *P == 4 ? 4 : 2, TC = d->wide ? 6 : 4, MB = *P == 4 || d->wide ? 4 : 8;
    d->tcols = (cols + TC - 1) / TC, d->tiles = (rows + TR - 1) / TR * d->tcols;
    d->MP = (M + MB - 1) / MB * MB;
    d->WS = (d->tcols * TC + K - 1 + 3) / 4 * 4;
    const size_t w_bytes = (size_t)C * K * K * d->MP * sizeof(float);
    const size_t ring_row = (size_t)(DC_NBUF + 1) * d->WS * sizeof(float);
    /* A tile of every channel group a team at least, and the weights with one team's ring (and the copy's table) of
     * one tile row. */
    return d->MP / MB <= DC_TEAM_MAX && w_bytes + ring_row * (TR + K - 1) <= DC_SMEM_MAX;
}

/* Input rows a plane holds at most for items of n consecutive tiles of the batch, which start at its tiles 0, n, 2n,
 * ... (an image's tile i n mod tiles), as dc_item_rows counts them in image 0 (which has a next image where d->B > 1,
 * as every image but the last has). */
static int dc_rows(const dc_params *d, int n, int TR, int K) {
    int rb = 0, t0 = 0;
    do {
        const int rows = dc_item_rows(*d, 0, t0, n, TR, K).rows;
        if (rows > rb) rb = rows;
        t0 = (t0 + n) % d->tiles;
    } while (t0 != 0);
    return rb;
}

int nc_conv_directc_takes(int C, int H, int W, int M, int K, const nc_conv_epilogue *e) {
    dc_params d;
    int P;
    return dc_shape(&d, &P, C, H, W, M, K, e);
}

int nc_conv_launch_directc(float *y, const float *x, const float *k, const float *bias, int B, int C, int H, int W,
                           int M, int K, const nc_conv_epilogue *e, cudaStream_t stream, nc_error *err) {
    dc_params d;
    int P;
    if (!dc_shape(&d, &P, C, H, W, M, K, e))
        return nc_fail(err, NC_ERR_ARG,
                       "conv versions 5, 6 and 13 (direct, several channels) do not take C = %d, %dx%d, M = %d, K = %d "
                       "(version 4 takes any)",
                       C, H, W, M, K);
    if (B <= 0 || d.Yh <= 0 || d.Yw <= 0) return NC_OK; /* nothing to compute, or nothing to pool */
    const int TR = P == 4 ? 4 : 2, MB = P == 4 || d.wide ? 4 : 8;
    /* A plane copied flat where it is one 16-byte aligned run of x: H W a multiple of 4, and W even, so that an item's
     * first row (a multiple of TR = 2 or 4) starts at a multiple of 4 words; its rows then 16-byte aligned where W is a
     * multiple of 4, else 8 (the kernel's F = 1 or 2); else by the table (dc_stage). */
    d.flat = W % 2 == 0 && (long)H * W % 4 == 0 && (uintptr_t)x % 16 == 0;
    if (d.flat) d.WS = W;
    const dc_kernel_fn fn = dc_kernel_for(K, P, !d.flat ? 0 : W % 4 == 0 ? 1 : 2, d.wide);
    const size_t w_bytes = (size_t)C * K * K * d.MP * sizeof(float);
    CUDA_RET(cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, DC_SMEM_MAX));
    int device = 0, sms = 0;
    CUDA_RET(cudaGetDevice(&device));
    CUDA_RET(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    /* A team's tiles: for a team of w = 1..4 warps, as many as its lanes hold for every channel group (at most an
     * image's, so that an item touches two images at most); with as many teams a block as its threads and shared
     * memory allow (they share the weights). The candidate that keeps the most tiles working on an SM at once
     * (blocks an SM times their teams times an item's tiles) wins; on a tie the larger team (fewer items, fewer
     * halo rows copied; measured faster on 2019 fall's and 2019 spring's second layers when items stayed in an
     * image). */
    const int G = d.MP / MB;
    d.B = B; /* dc_rows: items run into a next image only where there is one */
    double best = -1.0;
    int best_tiles = 1, best_teams = 1, best_blocks = 1;
    for (int w = 1; w <= DC_TEAM_MAX / 32; w++) {
        const int n = 32 * w / G < d.tiles ? 32 * w / G : d.tiles;
        if (n < 1) continue;
        const int team_threads = (G * n + 31) / 32 * 32;
        if (team_threads < 32 * w) continue; /* a smaller team did as much */
        const int rb = dc_rows(&d, n, TR, K);
        const size_t plane = (size_t)dc_plane(&d, rb) * sizeof(float), ring = DC_NBUF * plane;
        const size_t table = d.flat ? 0 : (size_t)rb * d.WS * sizeof(int);
        int teams = DC_THREADS_MAX / team_threads;
        if (team_threads > 32 && teams > DC_TEAMS_MAX) teams = DC_TEAMS_MAX;
        while (teams > 1 && w_bytes + teams * ring + table > DC_SMEM_MAX) teams--;
        if (w_bytes + teams * ring + table > DC_SMEM_MAX) continue;
        int per_sm = 0;
        CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, teams * team_threads,
                                                               w_bytes + teams * ring + table));
        const double score = (double)per_sm * teams * G * n;
        if (score >= best) best = score, best_tiles = n, best_teams = teams, best_blocks = per_sm > 0 ? per_sm : 1;
    }
    d.team_tiles = best_tiles;
    if ((long long)B * d.tiles + best_tiles > 0x7FFFFFFF)
        return nc_fail(err, NC_ERR_ARG, "conv versions 5, 6 and 13 (direct): %d images of %d tiles is too many at once",
                       B, d.tiles);
    d.items = (B * d.tiles + best_tiles - 1) / best_tiles;
    d.team_units = G * best_tiles;
    d.team_threads = (d.team_units + 31) / 32 * 32;
    d.RB = dc_rows(&d, best_tiles, TR, K), d.PS = dc_plane(&d, d.RB);
    /* No more teams than items, in as few blocks as hold them. */
    d.teams = best_teams < d.items ? best_teams : d.items;
    const long grid = (long)sms * best_blocks, needed = (d.items + d.teams - 1) / d.teams;
    const size_t smem = w_bytes + (size_t)d.teams * DC_NBUF * d.PS * sizeof(float) +
                        (d.flat ? 0 : (size_t)d.RB * d.WS * sizeof(int)); /* the rings, the copy's table */
    fn<<<(unsigned)(grid < needed ? grid : needed), d.teams * d.team_threads, smem, stream>>>(y, x, k, bias, d);
    CUDA_LAUNCHED();
    return NC_OK;
}
