/*
 * Version 15, winograd: Winograd's minimal filtering in fp32, a kernel a layer shape: F(4 x 4, 5 x 5) for the zoo's
 * K = 5 second layers, alone or fused with bias, activation and 2/2 pooling; F(4, 5) along the rows for 2017's,
 * 2019 spring's and 2019 fall's first layers, F(6, 5) for 2018 spring's and F(4, 7) for 2018 fall's and 2020's, fused
 * as their networks run them (below, "first layers, along rows"); and F(4, 7) along the rows for the K = 7 second
 * layers, fused (below, "K = 7 second layers, along rows").
 *
 * A 4 x 4 tile of outputs of one output channel is A^T [sum over c of (G g_c G^T) . (B^T d_c B)] A, where d_c is the
 * tile's 8 x 8 input patch of channel c and g_c the 5 x 5 weights: 64 multiply-adds a tile, input channel and output
 * channel where the direct sum does 400. The transforms come from the points 0, 1, -1, 2, -2, 1/2, -1/2 and
 * infinity. Every operation is in fp32, but the sums are not the reference's: the transforms round their values on
 * the way, and the largest error measured against a double sum is about 5 times the direct fp32 sum's (2.1e-6
 * against 3.8e-7 on 2019 fall's fused layer, outputs up to 0.77, 8 images; docs/PERFORMANCE-LOG.md, 2026-11-26),
 * well within the exact versions' tolerance (1e-4 + 1e-4 |ref|). The same bits on every run: every sum has a fixed
 * order.
 *
 * A block takes items in turn, each an image's row of tiles (4 rows of outputs that count, TW tiles across):
 *   - at its start it computes U = G g G^T for every (xi, m, c) (in double, rounded once), 64 M C floats through
 *     shared memory, and keeps its threads' share in registers;
 *   - its input rows (8 of every channel, zeros past the image) are copied into shared memory by cp.async while
 *     the block computes the item before;
 *   - phase 1a: B^T down each column of those rows (a channel and column a thread); phase 1b: B across each tile
 *     (a channel, tile and row a thread), into V[xi][t][c], xi = 0..63 the transformed position;
 *   - phase 2: the products. A thread keeps U[xi][m][c] for one xi and M / MG output channels in registers for the
 *     block's life, and sums over the channels for each tile: per tile and channel one broadcast of V for M / MG
 *     multiply-adds, into P[m][t][xi];
 *   - phase 3: A^T P A for a (channel, tile) a thread, bias, activation (after the window's maximum under max
 *     pooling: bias and activations are monotone), pooling, stores. The next item's phase 1a runs in the same
 *     interval between barriers, on the threads phase 3 leaves idle first. Unpooled, where the shared memory has room
 *     (wino_ostage), phase 3 puts the outputs in shared memory, and the block stores them to y during the next item's
 *     phase 1b, in y's order (each channel's four rows are contiguous there): on the H100 (bench/ab/conv_one,
 *     2026-11-28) 2018 spring's layer 0.596 -> 0.508 ms and 2019 spring's alone 0.327 -> 0.294, with the copies of
 *     2018 spring's input rows below made a round of channels at a time.
 * Three barriers an item. Measured against version 14 (conv_directc.cu's kernel) in one call (bench/ab/conv_one, H100,
 * N = 10000, 2026-11-26 17:36, docs/PERFORMANCE-LOG.md): 2019 fall's second layer fused with tanh and max pooling
 * 2.644 -> 1.166 ms, alone 3.290 -> 1.755; 2019 spring's fused 0.385 -> 0.310, alone 0.402 -> 0.368; 2018 spring's
 * (alone, as its network runs it) 0.887 -> 0.661.
 *
 * It takes only the layers it has a kernel for (wino_for, wrow_for): 12 x 33 x 33 -> 24 (2019 fall) and 6 x 22 x 22 ->
 * 16 (2019 spring), alone or pooled 2/2, and 6 x 30 x 30 -> 16 alone (2018 spring); the K = 7 second layers pooled;
 * the six first layers above, pooled; else NC_ERR_ARG, and the backend runs version 14 there.
 *
 *   nanoconv eval --model fashion-2019-fall --backend cuda --conv-kernel 15
 *   nanoconv bench --backend cuda --shape 12x33x33:24x5+tanh+maxpool2 --versions 14,15
 */
#include <type_traits>

#include "cuda/conv_act.cuh"
#include "cuda/conv_ladder.h"
#include "cuda/cp_async.cuh"
#include "cuda/cuda_check.h"
#include "cuda/st_global.cuh"

/* G (8 x 5), rows by point: the weights' transform (constant memory; the loops that read it are unrolled, so that
 * each element is an operand of the instruction). */
__constant__ double wino_G[8][5] = {{-1.0, 0.0, 0.0, 0.0, 0.0},
                                    {-2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9},
                                    {-2.0 / 9, 2.0 / 9, -2.0 / 9, 2.0 / 9, -2.0 / 9},
                                    {1.0 / 90, 1.0 / 45, 2.0 / 45, 4.0 / 45, 8.0 / 45},
                                    {1.0 / 90, -1.0 / 45, 2.0 / 45, -4.0 / 45, 8.0 / 45},
                                    {32.0 / 45, 16.0 / 45, 8.0 / 45, 4.0 / 45, 2.0 / 45},
                                    {32.0 / 45, -16.0 / 45, 8.0 / 45, -4.0 / 45, 2.0 / 45},
                                    {0.0, 0.0, 0.0, 0.0, 1.0}};

/* v = B^T d for a line of 8 inputs, B^T's rows paired by their shared terms (26 operations). */
__device__ __forceinline__ void wino_bt(const float (&d)[8], float (&v)[8]) {
    const float p1 = fmaf(-4.25f, d[4], d[2] + d[6]), q1 = fmaf(-4.25f, d[3], d[1] + d[5]);
    const float p2 = fmaf(-1.25f, d[4], fmaf(0.25f, d[2], d[6])), q2 = fmaf(2.0f, d[5], fmaf(-2.5f, d[3], 0.5f * d[1]));
    const float p3 = fmaf(-5.0f, d[4], fmaf(4.0f, d[2], d[6])), q3 = fmaf(0.5f, d[5], fmaf(-2.5f, d[3], 2.0f * d[1]));
    v[0] = fmaf(5.25f, d[2] - d[4], d[6] - d[0]);
    v[1] = p1 + q1, v[2] = p1 - q1;
    v[3] = p2 + q2, v[4] = p2 - q2;
    v[5] = p3 + q3, v[6] = p3 - q3;
    v[7] = fmaf(5.25f, d[3] - d[5], d[7] - d[1]);
}

/* o = A^T m for a line of 8 products: 4 outputs (16 operations). */
__device__ __forceinline__ void wino_at(const float (&m)[8], float (&o)[4]) {
    const float a = m[1] + m[2], b = m[1] - m[2], c = m[3] + m[4], d = m[3] - m[4], e = m[5] + m[6], f = m[5] - m[6];
    o[0] = m[0] + a + c + e;
    o[1] = fmaf(0.5f, f, fmaf(2.0f, d, b));
    o[2] = fmaf(0.25f, e, fmaf(4.0f, c, a));
    o[3] = fmaf(0.125f, f, fmaf(8.0f, d, b)) + m[7];
}

/* F(4, 7)'s, from the points 0, 1, -1, 3, -3, 1/3, -1/3, 4/3, -4/3 and infinity (their rounding measured the least of
 * 165 sets of ten in a simulation of 2018 fall's and 2020's layers; docs/PERFORMANCE-LOG.md, 2026-11-27). B^T's rows
 * and A^T's columns are scaled to integers (exact in fp32), their scales taken into N: row xi of G is N a^j. */
__constant__ double wr10_N[10] = {1.0 / 144,   1.0 / 896,   1.0 / 896,    1.0 / 748800, 1.0 / 748800,
                                  -3.0 / 6400, -3.0 / 6400, -3.0 / 72800, -3.0 / 72800, 1.0 / 81};
__constant__ double wr10_a[10] = {0.0, 1.0, -1.0, 3.0, -3.0, 1.0 / 3, -1.0 / 3, 4.0 / 3, -4.0 / 3, 0.0};

/* v = B^T d for F(4, 7): the rows of a point pair +a, -a share their even terms E and negate their odd terms O. */
__device__ __forceinline__ void wr10_bt(const float (&d)[10], float (&v)[10]) {
    v[0] = fmaf(81.0f, d[8], fmaf(-963.0f, d[6], fmaf(2275.0f, d[4], fmaf(-1537.0f, d[2], 144.0f * d[0]))));
    v[9] = fmaf(81.0f, d[9], fmaf(-963.0f, d[7], fmaf(2275.0f, d[5], fmaf(-1537.0f, d[3], 144.0f * d[1]))));
    /* Point pair p (1, 3, 1/3, 4/3): E = e0 d2 + e1 d4 + e2 d6 + e3 d8, O = o0 d1 + o1 d3 + o2 d5 + o3 d7. */
    auto pair = [&](int p, float e0, float e1, float e2, float e3, float o0, float o1, float o2, float o3) {
        const float E = fmaf(e3, d[8], fmaf(e2, d[6], fmaf(e1, d[4], e0 * d[2])));
        const float O = fmaf(o3, d[7], fmaf(o2, d[5], fmaf(o1, d[3], o0 * d[1])));
        v[2 * p + 1] = E + O, v[2 * p + 2] = E - O;
    };
    pair(0, -144, 1393, -882, 81, -144, 1393, -882, 81);
    pair(1, -16, 169, -234, 81, -48, 507, -702, 243);
    pair(2, -432, 723, -318, 27, -144, 241, -106, 9);
    pair(3, -27, 273, -273, 27, -36, 364, -364, 36);
}

/* F(6, 5) on the same ten points (first layers, along the rows): the same B^T; A^T's columns scaled to integers by
 * 3^5 at +-1/3 and +-4/3, so N is F(4, 7)'s with those four entries over 9. */
__constant__ double wr65_N[10] = {1.0 / 144,    1.0 / 896,    1.0 / 896,     1.0 / 748800,  1.0 / 748800,
                                  -1.0 / 19200, -1.0 / 19200, -1.0 / 218400, -1.0 / 218400, 1.0 / 81};

/* U = G g for point xi of F(4, 7) (R = 7) or F(6, 5) (R = 5) and a kernel row g (R weights): N sum_j a^j g_j in
 * double, rounded once; infinity's row, N g_(R-1). */
template <int R = 7> __device__ __forceinline__ float wr10_u(const float *g, int xi) {
    const double n = R == 7 ? wr10_N[xi] : wr65_N[xi], a = wr10_a[xi];
    if (xi == 9) return (float)(n * (double)g[R - 1]);
    double s = 0.0, p = n;
#pragma unroll
    for (int j = 0; j < R; j++) s += p * (double)g[j], p *= a;
    return (float)s;
}

/* Outputs 0 to 3 of A^T m, F(4, 7)'s output transform. */
__device__ __forceinline__ void wr10_at(const float (&m)[10], float &o0, float &o1, float &o2, float &o3) {
    const float s1 = m[1] + m[2], d1 = m[1] - m[2], s3 = m[3] + m[4], d3 = m[3] - m[4];
    const float s5 = m[5] + m[6], d5 = m[5] - m[6], s7 = m[7] + m[8], d7 = m[7] - m[8];
    o0 = fmaf(27.0f, s5 + s7, m[0] + s1 + s3);
    o1 = fmaf(36.0f, d7, fmaf(9.0f, d5, fmaf(3.0f, d3, d1)));
    o2 = fmaf(48.0f, s7, fmaf(3.0f, s5, fmaf(9.0f, s3, s1)));
    o3 = fmaf(64.0f, d7, fmaf(27.0f, d3, d1) + d5) + m[9];
}

/* Outputs 0 to 5 of A^T m, F(6, 5)'s output transform (28 operations). */
__device__ __forceinline__ void wr65_at(const float (&m)[10], float (&o)[6]) {
    const float s1 = m[1] + m[2], d1 = m[1] - m[2], s3 = m[3] + m[4], d3 = m[3] - m[4];
    const float s5 = m[5] + m[6], d5 = m[5] - m[6], s7 = m[7] + m[8], d7 = m[7] - m[8];
    o[0] = fmaf(243.0f, s5 + s7, m[0] + s1 + s3);
    o[1] = fmaf(324.0f, d7, fmaf(81.0f, d5, fmaf(3.0f, d3, d1)));
    o[2] = fmaf(432.0f, s7, fmaf(27.0f, s5, fmaf(9.0f, s3, s1)));
    o[3] = fmaf(576.0f, d7, fmaf(9.0f, d5, fmaf(27.0f, d3, d1)));
    o[4] = fmaf(768.0f, s7, fmaf(3.0f, s5, fmaf(81.0f, s3, s1)));
    o[5] = fmaf(1024.0f, d7, fmaf(243.0f, d3, d1) + d5) + m[9];
}

/* A layer's outputs that count, and its tiles: TH rows of TW tiles of 4 x 4 (P = 1: no pooling; 2: 2/2). */
template <int H, int W, int P> struct wino_geom {
    static constexpr int Ho = H - 4, Wo = W - 4, Yh = P == 2 ? Ho / 2 : Ho, Yw = P == 2 ? Wo / 2 : Wo;
    static constexpr int TH = ((P == 2 ? 2 * Yh : Ho) + 3) / 4, TW = ((P == 2 ? 2 * Yw : Wo) + 3) / 4;
};

/* The shared memory of a kernel, in floats: X (raw rows), A (after phase 1a), V, P. Strides chosen so that a
 * warp's loads and stores of each phase fall in distinct banks. */
template <int C, int M, int TW> struct wino_layout {
    /* ROWS: a row of tiles' (channel, tile) pairs fit in a warp (2019 spring's 6 x 5), so that phase 1b gives each
     * warp one row of A and the block's rows take whole rounds of warps; below. */
    static constexpr bool ROWS = C * TW <= 32 && C % 2 == 0;
    static constexpr int CP = ROWS ? C : (C + 3) / 4 * 4; /* V's floats a tile: its channels, else rounded up to 4 */
    static constexpr int JN = 4 * TW + 4;                 /* input columns a row of tiles reads */
    static constexpr int XCS = ROWS ? 8 * JN + JN % 32 : 8 * JN; /* X: [c][row][j] */
    /* V: [xi][t][c], = 4 mod 8 (phase 2 reads a tile's channels 16 bytes at a time), or where CP = 2 mod 4 (8 bytes
     * at a time), = 2 mod 4 */
    static constexpr int VSTR =
        CP % 4 == 0 ? ((TW * CP) % 8 == 4 ? TW * CP : TW * CP + 4) : ((TW * CP) % 4 == 2 ? TW * CP : TW * CP + 2);
    static constexpr int ARS = ROWS ? (JN + 3) / 4 * 4 : JN + 2; /* A's rows (phase 1b, below) */
    /* A: [c][row][j]; = 4 TW mod 32 (ROWS: a row's channels follow each other in the banks), else odd */
    static constexpr int ASTR = ROWS ? 8 * ARS + ((4 * TW - 8 * ARS) % 32 + 32) % 32 : 8 * ARS + 3;
    static constexpr int PSTR = 68; /* P: [m][t][xi] */
    static_assert(!ROWS || (ARS % 4 == 0 && ASTR % 4 == 0), "ROWS: phase 1b reads A 16 bytes at a time");
    static_assert(CP % 2 == 0 && VSTR % 2 == 0, "phase 2 reads V 8 or 16 bytes at a time");
    /* Where a tile's channels take 8 floats of V (not ROWS), tiles 4 to 7 hold channels 4..7 first, then 0..3:
     * phase 1b's warps, 8 tiles of 4 channels, then store to distinct banks (tiles t and t + 4 are 32 floats apart).
     * Phase 2's 16-byte loads take the same 4 channels, from the other half. With A's rows JN + 2 floats apart (JN, a
     * multiple of 32 on 2018 spring's layer, before), phase 1b's warps that straddle two rows of A load from distinct
     * banks too. A count of a warp's accesses (bench/ab/wino_banks.py): phase 1b's loads and stores, 2018 spring's
     * layer 320 -> 224 wavefronts an item, 2019 spring's 264 -> 248 (before ROWS); 2019 fall's unchanged. */
    static __device__ __forceinline__ int vslot(int t, int c) { return !ROWS && CP == 8 ? c ^ (t & 4) : c; }
    /* Where X holds plane pl = 8 c + row. */
    static __device__ __forceinline__ int xplane(int pl) {
        return XCS == 8 * JN ? pl * JN : (pl >> 3) * XCS + (pl & 7) * JN;
    }
    static constexpr int X_F = (C * XCS + 3) / 4 * 4, A_F = (C * ASTR + 3) / 4 * 4, V_F = 64 * VSTR,
                         P_F = M * TW * PSTR;
    static constexpr size_t bytes = (size_t)(X_F + A_F + V_F + P_F) * sizeof(float);
};

/* Unpooled, a row of tiles' outputs go through shared memory, O[m][i][col], and out to y as each channel's 4 Wo
 * contiguous floats, where the block's shared memory still fits MINB blocks an SM. Stored by each tile's thread, a
 * warp's stores touched 4 rows of every channel among its tiles, a few bytes of each sector at a time (15 sectors a
 * request; 2018 spring's layer on the H100, 2026-11-28). O's rows are the row of tiles' RS = 4 TW columns (those past
 * Wo written and not stored), so that phase 3 stores a row of its tile's outputs as 16 bytes; its channels are CS
 * floats apart, CS / 4 = TW mod 8, so that the 8 lanes (m, t) of a quarter warp, t running fastest, store to distinct
 * banks. A count of a warp's accesses (bench/ab/wino_banks.py), 2018 spring's layer: phase 3's stores 208 -> 56
 * wavefronts an item (Wo floats a channel's row apart, as float pairs and, for the last tile, floats), the stores to
 * y's loads 64 -> 112 (in y's order, below). */
template <int C, int M, int H, int W, int P, int MINB> struct wino_ostage {
    static constexpr int TW = wino_geom<H, W, P>::TW, RS = 4 * TW, CS = 4 * (RS + ((TW - RS) % 8 + 8) % 8), F = M * CS;
    static_assert(CS >= 4 * RS && CS / 4 % 8 == TW % 8, "O's channels");
    static constexpr bool on = P == 1 && (wino_layout<C, M, TW>::bytes + F * sizeof(float) + 1024) * MINB <= 228 * 1024;
    static constexpr size_t bytes = on ? F * sizeof(float) : 0;
};

/* Units 0..N-1 of a phase among NT threads, from `first` (a thread's number, or NT - 1 - it). */
template <int N, int NT, typename F> __device__ __forceinline__ void wino_units(int first, F f) {
#pragma unroll
    for (int k = 0; k < (N + NT - 1) / NT; k++) {
        const int q = first + k * NT;
        if (N % NT == 0 || q < N) f(q);
    }
}

/* The same, one unit a thread at a time (phase 3: its code is long, and unrolled it left the instruction cache). */
template <int N, int NT, typename F> __device__ __forceinline__ void wino_units_rolled(int first, F f) {
#pragma unroll 1
    for (int q = first; q < N; q += NT) f(q);
}

/* Unrolled, or not. */
template <bool UNROLL, int N, int NT, typename F> __device__ __forceinline__ void wino_units_as(int first, F f) {
    if constexpr (UNROLL)
        wino_units<N, NT>(first, f);
    else
        wino_units_rolled<N, NT>(first, f);
}

/* The epilogues a kernel is built for: any (act and pool as the kernel's arguments say), or one known at compile
 * time, so that the others' code (16 inlined nc_tanhf among it) does not crowd the instruction cache: tanh then max
 * pooling (the zoo's fused layers), or nothing (a convolution alone). */
enum { WINO_EPI_ANY, WINO_EPI_TANH_MAX, WINO_EPI_NONE };

/* MG groups of M / MG output channels (64 MG threads); an H x W input (a kernel a layer shape: every size known at
 * compile time measured 1.08 times faster than H and W as arguments on 2019 fall's fused layer, 2026-11-26); P = 1
 * (no pooling) or 2 (2/2); EPI one of the above. Its name, as every kernel's of the ladder, starts with conv_, which
 * is how `nanoconv profile` tags a kernel with its version. */
template <int C, int M, int MG, int H, int W, int P, int EPI, int MINB>
__global__ void __launch_bounds__(64 * MG, MINB)
    conv_wino_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ k,
                     const float *__restrict__ bias, int B, int act_arg, int pool_arg) {
    const int act = EPI == WINO_EPI_TANH_MAX ? NC_TANH : EPI == WINO_EPI_NONE ? -1 : act_arg;
    const int pool = EPI == WINO_EPI_TANH_MAX ? NC_MAXPOOL : EPI == WINO_EPI_NONE ? -1 : pool_arg;
    using G = wino_geom<H, W, P>;
    constexpr int TW = G::TW, TH = G::TH, Yh = G::Yh, Yw = G::Yw;
    using L = wino_layout<C, M, TW>;
    using OS = wino_ostage<C, M, H, W, P, MINB>;
    constexpr int NT = 64 * MG, MPT = M / MG, JN = L::JN;
    extern __shared__ float4 wino_smem[];
    float *Xs = (float *)wino_smem, *As = Xs + L::X_F, *Vs = As + L::A_F, *Ps = Vs + L::V_F, *Os = Ps + L::P_F;
    const int tid = threadIdx.x, xi = tid & 63, mg = tid >> 6;
    const int items = B * TH;

    /* U = G g G^T for every (xi, m, c), in double and rounded once, into shared memory (before its buffers are used):
     * a thread a weights' plane g = k[m][c] at a time, G g first (8 x 5), then its rows by G^T. Then this thread's
     * share (its xi, its M / MG channels) into registers, for the block's life. */
    static_assert(64 * M * C * sizeof(float) <= L::bytes, "U passes through the buffers' shared memory");
    float u[MPT][C];
    {
        float *Us = (float *)wino_smem; /* [xi][m][c] */
#pragma unroll 1
        for (int mc = tid; mc < M * C; mc += NT) {
            float g[25];
#pragma unroll
            for (int i = 0; i < 25; i++) g[i] = k[(size_t)mc * 25 + i];
                /* A row of G g at a time, not unrolled: 5 doubles live, not G g's 40, which set the six-channel
                 * kernels' register count (149 on 2019 spring's fused layer, three blocks an SM; now 123, four; 0.314
                 * -> 0.288 ms on the H100, 2026-11-27). G's rows by a run-time index: the prologue runs once a block.
                 */
#pragma unroll 1
            for (int a = 0; a < 8; a++) {
                double t[5];
#pragma unroll
                for (int l = 0; l < 5; l++) {
                    double s = 0.0;
#pragma unroll
                    for (int p = 0; p < 5; p++) s += wino_G[a][p] * (double)g[p * 5 + l];
                    t[l] = s;
                }
#pragma unroll
                for (int b = 0; b < 8; b++) {
                    double s = 0.0;
#pragma unroll
                    for (int l = 0; l < 5; l++) s += t[l] * wino_G[b][l];
                    Us[(a * 8 + b) * M * C + mc] = (float)s;
                }
            }
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < MPT; j++)
#pragma unroll
            for (int c = 0; c < C; c++) u[j][c] = Us[(xi * M + mg * MPT + j) * C + c];
        __syncthreads();
    }
    /* The input rows 4 ti .. 4 ti + 7 of every channel of item `it`, columns 0..JN-1, zeros outside the image. Where
     * W is even and x 8-byte aligned (then every pair of columns is), a thread a pair of columns of a (channel, row)
     * plane at a time; where W is odd, a column at a time; else (x misaligned) a warp a plane, a lane a column. On
     * the H100 (2026-11-27, docs/PERFORMANCE-LOG.md) the pairs took 2019 spring's fused layer from 0.287 to 0.258 ms
     * and the single columns 2019 fall's from 1.170 to 1.114; a warp a plane, as every layer had it, leaves lanes
     * idle (JN is 24 to 36). */
    const bool pairs = W % 2 == 0 && ((uintptr_t)x & 7) == 0;
    auto stage = [&](int it) {
        if (it < items) {
            const int n = it / TH, ti = it % TH;
            const float *xn = x + (size_t)n * C * H * W; /* an image's offsets fit an int: C H W is a kernel's */
            if constexpr (W % 2 == 0 && NT % (8 * JN / 2) == 0) {
                if (pairs) {
                    /* Each round of the block's threads copies NT / (8 JN / 2) whole channels: a thread's row and
                     * columns are the same in every round, its channel a round further on (its addresses computed
                     * once an item, not once a copy). */
                    constexpr int QP = 8 * JN / 2, CR = NT / QP;
                    const int j = 2 * (tid % (JN / 2)), r = tid / (JN / 2) % 8, c0 = tid / QP, row = 4 * ti + r;
                    const bool in = row < H && j < W;
                    /* outside the image, the start of the channel's plane, copying nothing */
                    const float *src = xn + c0 * H * W + (in ? row * W + j : 0);
                    float *dst = Xs + L::xplane(c0 * 8 + r) + j;
#pragma unroll
                    for (int k = 0; k < (C + CR - 1) / CR; k++)
                        if (C % CR == 0 || c0 + k * CR < C)
                            nc_cp_async8(dst + k * CR * L::XCS, src + k * CR * H * W, in ? 8 : 0);
                    asm volatile("cp.async.commit_group;" ::: "memory");
                    return;
                }
            }
            if (pairs) {
#pragma unroll 2
                for (int q = tid; q < C * 8 * JN / 2; q += NT) {
                    const int j = 2 * (q % (JN / 2)), pl = q / (JN / 2), row = 4 * ti + (pl & 7);
                    const bool in = row < H && j < W; /* j + 1 < W too */
                    nc_cp_async8(Xs + L::xplane(pl) + j, xn + (in ? ((pl >> 3) * H + row) * W + j : 0), in ? 8 : 0);
                }
            } else if constexpr (W % 2 == 1) {
#pragma unroll 4
                for (int q = tid; q < C * 8 * JN; q += NT) {
                    const int j = q % JN, pl = q / JN, row = 4 * ti + (pl & 7);
                    const bool in = row < H && j < W;
                    nc_cp_async4(Xs + L::xplane(pl) + j, xn + (in ? ((pl >> 3) * H + row) * W + j : 0), in ? 4 : 0);
                }
            } else {
                const int lane = tid & 31;
#pragma unroll 2
                for (int pl = tid >> 5; pl < C * 8; pl += NT / 32) {
                    const int row = 4 * ti + (pl & 7), off = ((pl >> 3) * H + row) * W;
#pragma unroll
                    for (int jj = 0; jj < (JN + 31) / 32; jj++) {
                        const int j = lane + 32 * jj;
                        if (JN % 32 == 0 || j < JN) {
                            const bool in = row < H && j < W;
                            nc_cp_async4(Xs + L::xplane(pl) + j, xn + (in ? off + j : 0), in ? 4 : 0);
                        }
                    }
                }
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    /* Phase 1a: B^T down each column, X -> A; from the last thread down, as phase 3 leaves the last ones idle. */
    auto phase1a = [&]() {
        wino_units<C * JN, NT>(NT - 1 - tid, [&](int q) {
            const int c = q / JN, j = q % JN;
            float d[8], v[8];
#pragma unroll
            for (int r = 0; r < 8; r++) d[r] = Xs[L::xplane(c * 8 + r) + j];
            wino_bt(d, v);
#pragma unroll
            for (int r = 0; r < 8; r++) As[c * L::ASTR + r * L::ARS + j] = v[r];
        });
    };
    /* Phase 3: A^T P A for (m, t), the epilogue, the stores. */
    auto phase3 = [&](int it) {
        const int n = it / TH, ti = it % TH;
        wino_units_as<EPI == WINO_EPI_TANH_MAX, M * TW, NT>(tid, [&](int q) {
            const int m = q / TW, t = q % TW;
            const float *pp = Ps + q * L::PSTR;
            float o[4][4], r1[4], r2[4], line[8];
            auto row = [&](int i) {
                const float4 a = *(const float4 *)(pp + 8 * i), b = *(const float4 *)(pp + 8 * i + 4);
                line[0] = a.x, line[1] = a.y, line[2] = a.z, line[3] = a.w;
                line[4] = b.x, line[5] = b.y, line[6] = b.z, line[7] = b.w;
            };
            /* A^T down the columns as the rows' A^T come: rows 0, (1, 2), (3, 4), (5, 6), 7 */
            row(0);
            wino_at(line, r1);
#pragma unroll
            for (int j = 0; j < 4; j++) o[0][j] = r1[j];
#pragma unroll
            for (int pr = 0; pr < 3; pr++) {
                row(2 * pr + 1);
                wino_at(line, r1);
                row(2 * pr + 2);
                wino_at(line, r2);
                const float s1 = pr == 0 ? 1.0f : pr == 1 ? 2.0f : 0.5f;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const float s = r1[j] + r2[j], d = r1[j] - r2[j];
                    o[0][j] += s;
                    if (pr == 0) {
                        o[1][j] = d, o[2][j] = s, o[3][j] = d;
                    } else {
                        o[1][j] = fmaf(s1, d, o[1][j]);
                        o[2][j] = fmaf(s1 * s1, s, o[2][j]);
                        o[3][j] = fmaf(s1 * s1 * s1, d, o[3][j]);
                    }
                }
            }
            row(7);
            wino_at(line, r1);
#pragma unroll
            for (int j = 0; j < 4; j++) o[3][j] += r1[j];
            const float bm = bias ? bias[m] : 0.0f;
            float *yn = y + ((size_t)n * M + m) * Yh * Yw;
            if (P == 2 && pool == NC_MAXPOOL) {
                float v[4];
#pragma unroll
                for (int w = 0; w < 4; w++) {
                    const int pi = w >> 1, pj = w & 1;
                    v[w] = fmaxf(fmaxf(fmaxf(o[2 * pi][2 * pj], o[2 * pi][2 * pj + 1]), o[2 * pi + 1][2 * pj]),
                                 o[2 * pi + 1][2 * pj + 1]);
                    if (bias) v[w] += bm;
                }
                nc_act_n<NC_TANH_EXACT_EX2>(act, v);
#pragma unroll
                for (int w = 0; w < 4; w++) {
                    const int yr = 2 * ti + (w >> 1), yc = 2 * t + (w & 1);
                    if (yr < Yh && yc < Yw) yn[(size_t)yr * Yw + yc] = v[w];
                }
            } else {
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        if (bias) o[i][j] += bm;
                nc_act_n<NC_TANH_EXACT_EX2>(act, reinterpret_cast<float(&)[16]>(o));
                if (P == 2) { /* average pooling: the window's sum in the order i, j */
#pragma unroll
                    for (int w = 0; w < 4; w++) {
                        const int pi = w >> 1, pj = w & 1, yr = 2 * ti + pi, yc = 2 * t + pj;
                        const float s = o[2 * pi][2 * pj] + o[2 * pi][2 * pj + 1] + o[2 * pi + 1][2 * pj] +
                                        o[2 * pi + 1][2 * pj + 1];
                        if (yr < Yh && yc < Yw) yn[(size_t)yr * Yw + yc] = s / 4.0f;
                    }
                } else if constexpr (OS::on) { /* into O: rows past Ho and columns past Wo written, not stored */
                    float *on = Os + m * OS::CS + 4 * t;
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        *(float4 *)(on + i * OS::RS) = make_float4(o[i][0], o[i][1], o[i][2], o[i][3]);
                } else {
#pragma unroll
                    for (int i = 0; i < 4; i++)
#pragma unroll
                        for (int j = 0; j < 4; j++) {
                            const int yr = 4 * ti + i, yc = 4 * t + j;
                            if (yr < Yh && yc < Yw) yn[(size_t)yr * Yw + yc] = o[i][j];
                        }
                }
            }
        });
    };

    /* O of item `it` to y (OS::on): y holds a channel's rows 4 ti .. 4 ti + rows - 1 as rows Wo contiguous floats.
     * Where Wo is even and y 8-byte aligned (then every pair of a row is), a warp takes a channel at a time, its lanes
     * that channel's float pairs in y's order: 256 contiguous bytes of y a store. On the H200 (bench/ab/conv_one,
     * 2026-11-28) 2018 spring's layer with O as above 0.4866 -> 0.4763 ms, 2019 spring's alone 0.2907 -> 0.2863; a
     * lane a row of 16 bytes of O (its loads in distinct banks, but each store half of every sector of the channel's
     * rows) 0.4826 and 0.2984. Else a float a thread. */
    const bool y8 = ((uintptr_t)y & 7) == 0;
    auto flush = [&](int it) {
        const int n = it / TH, ti = it % TH, rows = Yh - 4 * ti < 4 ? Yh - 4 * ti : 4;
        float *yb = y + ((size_t)n * M * Yh + 4 * ti) * Yw;
        if (Yw % 2 == 0 && y8) {
            constexpr int PR = Yw / 2; /* pairs a row */
#pragma unroll
            for (int h = 0; h < (4 * PR + 31) / 32; h++) {
                const int u = (tid & 31) + 32 * h, r = u / PR, c = 2 * (u % PR);
                if (r < rows) {
#pragma unroll
                    for (int k = 0; k < (M + NT / 32 - 1) / (NT / 32); k++) {
                        const int m = tid / 32 + k * (NT / 32);
                        if (M % (NT / 32) != 0 && m >= M) break;
                        *(float2 *)(yb + (m * Yh + r) * Yw + c) = *(const float2 *)(Os + m * OS::CS + r * OS::RS + c);
                    }
                }
            }
        } else {
#pragma unroll 2
            for (int q = tid; q < M * 4 * Yw; q += NT) {
                const int m = q / (4 * Yw), e = q % (4 * Yw), r = e / Yw, c = e % Yw;
                if (r < rows) yb[(m * Yh + r) * Yw + c] = Os[m * OS::CS + r * OS::RS + c];
            }
        }
    };

    int it = blockIdx.x;
    stage(it);
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
    phase1a();
    for (; it < items; it += gridDim.x) {
        __syncthreads(); /* A holds this item; X and P are free */
        stage(it + gridDim.x);
        if constexpr (OS::on)
            if (it != (int)blockIdx.x) flush(it - gridDim.x); /* O holds the item before */
        /* Phase 1b: B across each tile, A -> V; a (channel, tile, row) a thread. Where it takes no more rounds of the
         * block's threads, a warp's lanes go through 8 tiles (those past TW idle) of 4 channels, else the channels
         * first, t next: with A's channels 8 rows and 3 floats apart (1 before), its loads and V's stores then
         * touch fewer banks twice (a count of a warp's accesses: 2019 fall's fused layer 688 -> 384 wavefronts an
         * item, alone 768 -> 384, 2018 spring's 344 -> 320, 2019 spring's 272 -> 264). On the H100 (bench/ab/conv_one,
         * 2026-11-28) 2019 fall's fused layer 1.120 -> 1.081 ms, alone 1.564 -> 1.512; the others within 1.3%.
         * ROWS (2019 spring's layer): a warp takes a row, its lanes (c, t), t first: each lane reads its tile's 8
         * floats of A as two 16-byte words, the 8 lanes of each quarter warp 8 consecutive words (A's channels 4 TW
         * mod 32 floats apart), and writes V's C TW consecutive floats of a row (V a tile's C channels, unpadded).
         * With X's channels JN mod 32 floats further apart, phase 1a's loads of a warp fall in distinct banks too. A
         * count of a warp's accesses (bench/ab/wino_banks.py --no-rows): 872 -> 680 wavefronts an item fused, 992 ->
         * 800 alone (phase 1a's loads 72 -> 40, 1b's 112 -> 64 and stores 136 -> 64, phase 2's loads 160 -> 120).
         * On the H200 (bench/ab/conv_one, 2026-11-28 21:05) the fused layer 0.2588 -> 0.2432 ms, alone 0.2874 ->
         * 0.2762, the same bits (the layout for every layer, at 21:01: 2018 spring's 0.5% slower, 2019 fall's fused
         * 5% slower, so only where C TW <= 32); ncu: shared-memory loads 26.4 -> 20.3 million wavefronts, stores
         * 18.8 -> 15.3. */
        if constexpr (L::ROWS) {
            wino_units<8 * 32, NT>(tid, [&](int q) {
                const int r = q / 32, e = q % 32, c = e / TW, t = e % TW;
                if (C * TW < 32 && e >= C * TW) return;
                const float *a = As + c * L::ASTR + r * L::ARS + 4 * t;
                const float4 a0 = *(const float4 *)a, a1 = *(const float4 *)(a + 4);
                const float d[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
                float v[8];
                wino_bt(d, v);
#pragma unroll
                for (int i = 0; i < 8; i++) Vs[(r * 8 + i) * L::VSTR + t * L::CP + c] = v[i];
            });
        } else {
            constexpr bool T8 = TW <= 8 && (C * 64 + NT - 1) / NT == (C * TW * 8 + NT - 1) / NT;
            constexpr int TP = T8 ? 8 : TW; /* tiles a row of units */
            wino_units<C * TP * 8, NT>(tid, [&](int q) {
                const int c = T8 ? q / 8 % C : q % C, t = T8 ? q % 8 : q / C % TW, r = q / (C * TP);
                if (TP > TW && t >= TW) return;
                float d[8], v[8];
#pragma unroll
                for (int i = 0; i < 8; i++) d[i] = As[c * L::ASTR + r * L::ARS + 4 * t + i];
                wino_bt(d, v);
#pragma unroll
                for (int i = 0; i < 8; i++) Vs[(r * 8 + i) * L::VSTR + t * L::CP + L::vslot(t, c)] = v[i];
            });
        }
        __syncthreads();
        /* Phase 2: P[m][t][xi] = sum over c of U[xi][m][c] V[xi][t][c], the channels in order. */
        {
            float *po = Ps + mg * MPT * TW * L::PSTR + xi;
            const float *vi = Vs + xi * L::VSTR;
#pragma unroll
            for (int t = 0; t < TW; t++) {
                float v[L::CP];
                if constexpr (L::CP % 4 == 0) {
#pragma unroll
                    for (int c4 = 0; c4 < L::CP / 4; c4++) {
                        const float4 f = *(const float4 *)(vi + t * L::CP + L::vslot(t, 4 * c4));
                        v[4 * c4] = f.x, v[4 * c4 + 1] = f.y, v[4 * c4 + 2] = f.z, v[4 * c4 + 3] = f.w;
                    }
                } else {
#pragma unroll
                    for (int c2 = 0; c2 < L::CP / 2; c2++) {
                        const float2 f = *(const float2 *)(vi + t * L::CP + 2 * c2);
                        v[2 * c2] = f.x, v[2 * c2 + 1] = f.y;
                    }
                }
#pragma unroll
                for (int j = 0; j < MPT; j++) {
                    float s = u[j][0] * v[0];
#pragma unroll
                    for (int c = 1; c < C; c++) s = fmaf(u[j][c], v[c], s);
                    po[(j * TW + t) * L::PSTR] = s;
                }
            }
        }
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        __syncthreads(); /* P holds this item, X the next */
        phase3(it);
        if (it + (int)gridDim.x < items) phase1a();
    }
    if constexpr (OS::on) {
        __syncthreads();
        flush(it - gridDim.x);
    }
}

/* ------------------------------------------------------------------------------------ first layers, along rows */

/*
 * A first layer (C = 1) has no input channels to share a 2-D tile's output transform among, so there version 15
 * applies F(4, 5) or F(4, 7) along the rows only, the kernel's K rows taking the part of the input channels: outputs
 * 4 p .. 4 p + 3 of row y and channel m are A^T [sum over kh of (G g_m,kh) . (B^T x[y + kh][4 p .. 4 p + K + 2])],
 * K + 3 multiply-adds a kernel row and window where the direct sum does 4 K, and one output transform for the K.
 * K = 5 has the 2-D kernels' points, B^T, A^T and G; K = 7 those of the K = 7 second layers (below).
 *
 * OW = 6: F(6, 5), on the ten points of F(4, 7) (the same B^T; wr65_at, wr65_N), a window of six outputs, 10
 * multiply-adds a kernel row and window where the direct sum does 30 (F(4, 5): 8 for 20), and A^T's 28 operations for
 * six outputs where F(4, 5)'s 16 give four; pooled 2/2 only, three pooled outputs a window and row, stored a float at
 * a time. Its rounding, simulated with the zoo's weights on test images (bench/ab/wino_rows_error.py), is at most 1.2%
 * of the exact tolerance on 2018 spring's first layer (F(4, 5) 0.5%, the direct fp32 sum 0.3%; its mean error 1.6
 * times F(4, 5)'s), 1.4% to 3.5% on the others. 2018
 * spring's layer (60 outputs a row: ten windows of six, fifteen of four) runs it in two bands of rows, two pairs at a
 * time, fused on pixels / floats 0.2440 / 0.2540 ms -> 0.2296 / 0.2254 (H200, N = 10000, 2026-11-28 23:44,
 * bench/results/gpu-2026-11-28-s64-ab.log; F(4, 5) in two bands 0.2611 on pixels, F(6, 5) in one band or a pair at a
 * time 0.239-0.250). Measured there and left out: 2019 fall's (66 outputs a row, eleven windows; 0.631 / 0.611 ->
 * 0.637 / 0.608 at best: the FFMAs' share of the instructions rose from 41% to 47%, but ncu's barrier stalls went
 * from 0.36 to 0.87 an issue and the issue slots' use from 71% to 59%, likely as three bands of 132 threads are 13
 * warps, four on one of an SM's schedulers and three on the others, where F(4, 5)'s 20 are five on each), 2019
 * spring's (44 outputs a row, eight windows with four outputs past the row: 0.160 -> 0.180 at best) and 2017's
 * (24: 0.293 -> 0.296).
 *
 * A block takes images in turn. Their pixels (uint8, turned into floats through the lut) or floats are copied by
 * cp.async, 16 bytes a copy (8 or 4 where an image's bytes are no multiple of 16; by plain loads where the input is not
 * 16-byte aligned), while the block computes the image before. V = B^T of every window of every input row goes to
 * shared memory, a window a thread. Then a thread takes one output channel m and one window column p: it keeps U = G g
 * for its channel (5 x 8 floats, in double rounded once; K = 7 or OW = 6: K x 10) in registers for the block's life,
 * and walks down the rows 2 Q at a time, K + 2 Q - 1 rows of V (two 16-byte loads each; ten points: and an 8-byte one)
 * for 2 Q K (K + OW - 1) multiply-adds, A^T, the epilogue and the stores; where a layer's (channel, window) pairs are
 * too few threads for its block (2018 spring's 60, 2019 fall's 204), R threads take a pair, each a band of Ho / R rows
 * (2019 spring's 66 and 2020's 80 deal their items out instead: ST, below; 2020's took four bands until session 73).
 * Q = 2 or 3 (four or six rows an iteration, where a band's rows allow) loads fewer rows of V an output row: 4 16-byte
 * loads where Q = 1 takes 6 (K = 5, Q = 2). In
 * session 58 (H200, N = 10000, bench/ab conv_one, docs/PERFORMANCE-LOG.md, 2026-11-28 13:50) that took, fused on pixels
 * / floats, 2017's first layer 0.313 -> 0.290 ms (Q = 2; under ReLU and 2/2 max pooling 0.309 -> 0.275), 2018 spring's
 * 0.262 -> 0.242 (Q = 2; on floats two bands instead of one, 0.315 -> 0.256), 2018 fall's 1.094 / 1.071 -> 0.980 /
 * 0.954 (Q = 3), 2020's 0.570 / 0.526 -> 0.517 / 0.478 (Q = 2); 2019 spring's went from 3 to 4 blocks an SM (96
 * registers, 24 bytes spilled), 0.170 / 0.161 -> 0.163 / 0.159. Q = 3 on 2017's and 2018 spring's, and Q = 4 or 5, were
 * slower (spills, or fewer blocks). Where a band's pairs are no multiple of Q (2018 spring's 15, and 2019 spring's 11
 * until ST, with Q = 2), those left over go one at a time: on 2019 spring's 0.1644 / 0.1587 -> 0.1629 / 0.1542 ms
 * (session 59, H200, the same bits, no spills). Measured there and left out: two or four images a block on 2019
 * spring's layer (92% of the lanes busy, where one image's two bands fill 82%), as fast as one image or slower; V in
 * two buffers, one barrier an image, at most 1% faster on any first layer and 19% slower on 2018 spring's (fewer blocks
 * an SM) (bench/results/gpu-2026-11-28-s59-ab.log). A warp's loads of V touch few windows and are broadcast to its
 * channels: a thread's window is its number mod the row's windows (6 on 2017's layer), or, where a row has many (17 on
 * 2018 fall's), its number over the channels. A row of windows may overhang the outputs that count (2018 fall's 66
 * columns: 16 windows and a half), the input past the image read as zeros. Two barriers an image (one under DV, below).
 *
 * ST (2019 spring's fused layer; 2020's fused and alone since session 73): a warp issues every instruction of a step
 * however few of its lanes work, and two bands of that layer's 66 (channel, window) threads took five warps, the fifth
 * with 4 working lanes: a fifth of the block's issue slots for 3% of its outputs. A throwaway variant that left those 4
 * threads' outputs undone ran in 0.125 ms against 0.156 (H200, N = 10000, 2026-11-29 16:00,
 * bench/results/gpu-2026-11-29-s72-ab.log: so much for session 59's reading that the idle lanes were not what held the
 * kernel; its blocks of two images had two blocks an SM where this has four). With ST the image's 726 items (a channel,
 * a window, four rows: Q = 2) are dealt out in turn to the block's first ST / M * M threads, 126 of ST = 128, each
 * keeping its channel (and U): five rounds of four warps and a sixth of three, 23 warp steps an image where the bands
 * took 25 steps of two pairs and 5 of one. In the same call, on pixels / floats, 0.1558 / 0.1547 ms -> 0.1289 / 0.1239
 * with four blocks an SM (MINB 4: 121 / 126 registers, no spills), 0.1331 / 0.1285 with five (MINB 5: 96, 16-24 bytes
 * spilled), 0.1492 / 0.1412 with ST = 192 (three of six); the same bits. A warp's items sit in one or two groups of
 * rows and five or six windows, so that its loads of V touch few of them, as the bands' do (2.39 shared-memory
 * wavefronts a load against 2.05). The other first layers' last warps are fuller or their blocks fewer an SM: with
 * their part-filled warps idle they ran 0.2-2.2% faster (2018 spring's, F(6, 5), 2% slower). Dealt out (session 73,
 * H200, N = 10000, bench/results/gpu-2026-11-29-s73-ab.log) three of them ran slower, and keep their bands: 2018 fall's
 * fused 0.4-6% in eight to ten warps (ST = 256-320; nine and ten hold it to 168 registers, three warps on some of an
 * SM's four schedulers, and spill), 2019 fall's 2-11% in 18 to 20 (likely as an image's last round of items leaves
 * warps idle at the barrier, where each band's threads take 11 pairs of rows alike: ncu's barrier stalls 0.42 ->
 * 0.51-0.90 an issue), 2018 spring's 4-24% in four to eight. 2020's four bands of 80 threads had filled ten warps at
 * 168 registers (spilling 80-84 bytes); its 1600 items (a channel, a window, four rows) in twelve warps (ST = 384), at
 * the same registers (72-80 bytes spilled), took, fused with ReLU and 2/2 max pooling on pixels / floats, 0.5140 /
 * 0.4770 ms -> 0.4809 / 0.4515, and alone on floats 0.4690 -> 0.4368 (its warps' 16-byte stores four channels' rows of
 * eight windows each); eleven warps (352) 3% faster, ten (320) 1% slower; a pair of rows at a time in twelve warps
 * within 2%, in 14 or 16 (held to 128 registers, 420-440 bytes spilled) 4-7% slower or within 3%; the same bits.
 *
 * OS: the pooled outputs of an image go to shared memory, in y's order, and the block stores them to y as 16-byte
 * words during the next image's V (after the loop, the last image's). Stored by the threads that compute them, a
 * warp's stores of a row of odd width (2019 fall's pooled 33: a float at a time) touched 12 channels' rows, 17 sectors
 * a request (ncu, 95 million L2 write sectors where y is 16 million). On 2019 fall's layer (its row's windows taken
 * by three bands of rows, a pair at a time: 640 threads, one block an SM) that took, fused on pixels / floats, 0.807 /
 * 0.824 ms to 0.664 / 0.631 (H200, N = 10000, 2026-11-28 22:16-22:26, bench/results/gpu-2026-11-28-s63-ab.log; the
 * same bits), against version 14's 0.853 / 0.815: ncu's issue slots busy 59% -> 68%, stalls on the MIO queue 1.57 ->
 * 0.33 an issue. Measured there and left out: channels' planes padded so that the warps' stores into shared memory
 * fall in fewer banks (3.5 -> 2.4 wavefronts a store, but copied out a float at a time: 2% slower); the activation and
 * stores of a pair of rows deferred to the next pair's multiply-adds (5-7% slower); other blocks, unstaged (one band
 * of rows, two to four blocks an SM: 18-38% slower; three bands, two pairs of rows at a time: 2-3%). On the other
 * pooled first layers staging was slower (2018 spring's on pixels 0.246 -> 0.304 ms; 2018 fall's, whose pooled rows
 * are 33 wide too but whose block is seven warps, 0.98 -> 1.05; 2020's 3-5%) or no faster (2019 spring's), and they
 * keep their stores.
 *
 * DV (2019 fall's, 2018 fall's and 2020's fused layers, since session 73; 2017's and 2018 spring's fused on pixels and
 * 2019 spring's and 2020's alone since session 74): V, and under OS the staged outputs, in two buffers each, so that an
 * image's rows, the next image's V and (OS) the stores of the image before share one interval between barriers: one
 * barrier an image where one buffer takes two. In one call (H200, N = 10000, 2026-11-29 17:37,
 * bench/results/gpu-2026-11-29-s73-ab.log; the same bits), fused on pixels / floats: 2019 fall's 0.6164 / 0.5859 ms ->
 * 0.5823 / 0.5740, 2018 fall's 0.9030 / 0.8869 -> 0.8777 / 0.8323, 2020's 0.4818 / 0.4505 -> 0.4775 / 0.4438. ncu on
 * 2019 fall's on pixels: the issue slots 69% -> 73% busy; stalls a issue on the short scoreboard (shared-memory loads)
 * 1.18 -> 0.75 and on the MIO queue 0.54 -> 0.27, the barrier's 0.42 -> 0.41: what the single buffers cost was the V
 * phase's shared-memory traffic all at once, between two barriers, more than the waits at them. Session 59 had measured
 * V in two buffers at most 1% faster on the first layers it had (2019 fall's had no kernel until session 63) and 19%
 * slower on 2018 spring's (fewer blocks an SM). On the rest, in one call (session 74: H200, N = 10000, 2026-11-29
 * 18:21, bench/results/gpu-2026-11-29-s74-ab.log; the same bits), faster and kept: 2017's fused on pixels 0.3003 ->
 * 0.2868 ms (two blocks an SM either way, held by registers), 2018 spring's fused on pixels 0.2333 -> 0.2264 (three,
 * held by registers), 2019 spring's alone 0.1745 -> 0.1710 (five blocks -> four), 2020's alone 0.4410 -> 0.4333; left
 * out: 2018 spring's fused on floats 0.2261 -> 0.2430 (three blocks -> two, held by shared memory), 2019 spring's fused
 * on pixels / floats 0.1295 / 0.1240 -> 0.1282 / 0.1246, 2018 fall's alone 0.8408 -> 0.8350, 2017's alone 0.3416 ->
 * 0.3424 (the rows of identical machine code moved by up to 0.6%). Shared memory a block, pixels / floats: 2019 fall's
 * 187 / 215 KiB, 2018 fall's 126 / 155, 2020's 177 / 219 (of 227); 2017's 13 KiB on pixels, 2018 spring's 69, 2019
 * spring's alone 51, 2020's 219.
 *
 * Measured against version 14 in one call (a prototype of this kernel; H100, N = 10000, 2026-11-26 19:30,
 * docs/PERFORMANCE-LOG.md): 2017's first layer fused with tanh and 2/2 max pooling on uint8 pixels 0.308 ms against
 * 0.456. 2018 fall's first layer (1 x 72 x 72 -> 12, K = 7) fused with tanh and 2/2 max pooling on uint8 pixels
 * (2026-11-27 21:58): 1.087 ms against version 6's 1.382 and version 14's 1.455, at 206 registers, one block of
 * 224 threads an SM (two blocks, held to 128 registers and spilling, 1.162). Alone, on floats, it took 1.429 against
 * version 14's 1.288 then (2026-11-27; F(2, 7), 1.26 against 1.28 at best, 17 variants of two designs, 2026-11-26);
 * with its rows' 8-byte pairs stored whole (st_global.cuh; nvcc had split them into floats) and three pairs of rows
 * at a time, 0.834 ms against version 14's 1.289 (H200, 2026-11-28 19:35, bench/results/gpu-2026-11-28-s61-ab.log;
 * two pairs at a time 0.96, one 1.35). The other first layers fused (A/B in one call
 * against versions 6 and 14, bench/ab/conv_one, 2026-11-27 23:42, pixels / floats): 2018 spring's (1 x 64 x 64 -> 6)
 * 0.269 / 0.314 ms against version 6's 0.394 / 0.363; 2019 spring's (48 x 48 -> 6, R = 2) 0.171 / 0.163 against
 * 0.228 / 0.207; 2020's (86 x 86 -> 4, K = 7, ReLU, R = 4) on floats 0.528 against version 14's 0.651 (on pixels not
 * measured there: an image's 7396 bytes were copied 16 at a time, misaligned). 2019 fall's (70 x 70 -> 12) took
 * 0.93 ms at best against version 14's 0.81 and had no kernel until its outputs were staged (OS, below).
 */
/* Pooled outputs c and c + 1 of a row of Yw (y: the row's output c): those that count (c < Yw), as one 8-byte store
 * where both do and Yw and c are even (the row's start 8-byte aligned), else a float at a time. */
template <int Yw> __device__ __forceinline__ void wrow_store_pair(float *y, int c, float v0, float v1) {
    if (Yw % 2 == 0 && c + 1 < Yw) {
        nc_st_global2(y, v0, v1); /* whole: st_global.cuh */
    } else {
        if (c < Yw) y[0] = v0;
        if (c + 1 < Yw) y[1] = v1;
    }
}

/* A window's N pooled outputs c .. c + N - 1 of a row of Yw, those that count (c < Yw): a pair as wrow_store_pair; into
 * shared memory (OS: y's order, no alignment to keep), or N = 3, a float at a time. */
template <int Yw, bool OS, int N> __device__ __forceinline__ void wrow_out(float *y, int c, const float (&v)[N]) {
    if constexpr (OS || N != 2) {
#pragma unroll
        for (int i = 0; i < N; i++)
            if (c + i < Yw) y[i] = v[i];
    } else {
        wrow_store_pair<Yw>(y, c, v[0], v[1]);
    }
}

/* OW: a window's outputs, 4 (F(4, 5), F(4, 7)) or 6 (F(6, 5): K = 5, pooled 2/2 only). ST: the block's threads where
 * an image's items are dealt out (conv_wino_rows_kernel's ST), else 0. */
template <int M, int H, int W, int K, int R = 1, int OW = 4, int ST = 0> struct wrow_geom {
    static constexpr int Ho = H - K + 1, Wo = W - K + 1, NP = (Wo + OW - 1) / OW; /* windows a row */
    static constexpr int YF = M * (Ho / 2) * (Wo / 2);                            /* an image's outputs pooled 2/2 */
    static constexpr int NPT = K + OW - 1, VQ = (NPT + 3) / 4;                    /* points; V's float4s a window */
    static constexpr int NT = ST ? ST : (M * NP * R + 31) / 32 * 32, VF = H * VQ * NP * 4; /* threads; V's floats */
    /* An image's floats in shared memory, rounded up to 16 bytes (what follows it is stored as float4s). */
    static constexpr __host__ __device__ int xf(bool u8) { return (H * W * (u8 ? 1 : 4) + 15) / 16 * 4; }
};

template <int M, int H, int W, int K, int P, int EPI, bool U8, int MINB, int R = 1, int Q = 1, bool OS = false,
          int OW = 4, int ST = 0, bool DV = false>
__global__ void __launch_bounds__(wrow_geom<M, H, W, K, R, OW, ST>::NT, MINB)
    conv_wino_rows_kernel(float *__restrict__ y, const float *__restrict__ x, const uint8_t *__restrict__ xu,
                          const nc_conv_lut lut, const float *__restrict__ k, const float *__restrict__ bias, int B,
                          int act_arg, int pool_arg, int aligned) {
    using G = wrow_geom<M, H, W, K, R, OW, ST>;
    constexpr int NP = G::NP, NT = G::NT, Ho = G::Ho, Wo = G::Wo, Yh = P == 2 ? Ho / 2 : Ho, Yw = P == 2 ? Wo / 2 : Wo;
    constexpr int NPT = G::NPT, VQ = G::VQ;
    constexpr int XB = H * W * (U8 ? 1 : 4), XF = G::xf(U8), VF = G::VF; /* an image's bytes; floats */
    constexpr int CG = XB % 16 == 0 ? 16 : XB % 8 == 0 ? 8 : 4;          /* bytes a copy: every image's start aligned */
    constexpr bool EDGE = OW * NP + NPT - OW > W;           /* the last window reads past the row: zeros there */
    constexpr bool PART = OW * NP > (P == 2 ? 2 * Yw : Wo); /* the last window's outputs past those that count */
    static_assert((K == 5 || K == 7) && (OW == 4 || (OW == 6 && K == 5 && P == 2)), "F(4, 5), F(4, 7) or F(6, 5)");
    static_assert(Ho % (2 * R) == 0 && XB % 4 == 0, "bands of pairs of rows, 4-, 8- or 16-byte copies");
    constexpr int BR = Ho / R, BQ = BR / (2 * Q) * 2 * Q; /* a band's rows; those taken Q pairs at a time */
    static_assert(P == 2 || Wo % 2 == 0, "unpooled rows: 16-byte words, or 8-byte pairs where Wo = 2 mod 4");
    constexpr int YF = G::YF, OF = OS ? YF : 0; /* an image's outputs; those staged in shared memory */
    static_assert(!OS || (P == 2 && YF % 4 == 0), "OS: pooled outputs, an image's a whole number of 16-byte words");
    const int act = EPI == WINO_EPI_TANH_MAX ? NC_TANH : EPI == WINO_EPI_NONE ? -1 : act_arg;
    const int pool = EPI == WINO_EPI_TANH_MAX ? NC_MAXPOOL : EPI == WINO_EPI_NONE ? -1 : pool_arg;
    extern __shared__ float4 wino_smem[];
    float *X0 = (float *)wino_smem, *X1 = X0 + XF, *V0 = X1 + XF, *V1 = V0 + (DV ? VF : 0), *O0 = V1 + VF;
    float *O1 = O0 + (DV ? OF : 0), *ls = O1 + OF;
    /* ST: an image's items (a channel, a window, 2 Q rows) dealt out in turn to the block's first TS threads, TS a
     * multiple of M (so that a thread keeps its channel), window first: item i is channel i mod M, window i / M mod
     * NP, rows 2 Q (i / M / NP) on. */
    constexpr int TS = ST / M * M, ITEMS = M * NP * (Ho / (2 * Q));
    static_assert(!ST || (R == 1 && TS >= 32 && Ho % (2 * Q) == 0), "ST: one band, whole groups of 2 Q rows");
    /* Else a thread's band of rows (R of them, Ho / R rows each) and its number within the band. */
    const int tid = threadIdx.x, band = R == 1 ? 0 : tid / (M * NP), bt = R == 1 ? tid : tid % (M * NP);
    const bool active = ST ? tid < TS : tid < M * NP * R;
    /* A thread's channel m and window p: p first (a warp's stores to a row run on), but m first where a row has many
     * windows and the outputs are pooled (a warp's loads of V then touch few windows). ST: m first, p an item's. */
    constexpr bool MF = ST || (NP > 8 && P == 2);
    const int m = active ? (MF ? bt % M : bt / NP) : 0;
    int p = active && !ST ? (MF ? bt / M : bt % NP) : 0;
    if (U8)
        for (int i = tid; i < 256; i += NT) ls[i] = lut.v[i];
    float u[K][NPT];
#pragma unroll
    for (int kh = 0; kh < K; kh++) {
        float g[K];
#pragma unroll
        for (int i = 0; i < K; i++) g[i] = k[(m * K + kh) * K + i];
#pragma unroll
        for (int a = 0; a < NPT; a++) {
            if constexpr (NPT == 8) {
                double s = 0.0;
#pragma unroll
                for (int i = 0; i < 5; i++) s += wino_G[a][i] * (double)g[i];
                u[kh][a] = (float)s;
            } else {
                u[kh][a] = wr10_u<K>(g, a);
            }
        }
    }
    const float bm = bias ? bias[m] : 0.0f;
    /* An image into dst: by cp.async, 16 bytes a copy, where the input is 16-byte aligned (an image's bytes are a
     * multiple of 16); else by plain loads and stores, a pixel or a float at a time. */
    auto stage = [&](int n, float *dst) {
        if (n < B) {
            const char *src = (const char *)(U8 ? (const void *)xu : (const void *)x) + (size_t)n * XB;
            if (aligned) { /* x is 16-byte aligned, so every image is CG-byte aligned */
                for (int i = tid; i < XB / CG; i += NT) {
                    if constexpr (CG == 16)
                        nc_cp_async16((char *)dst + 16 * i, src + 16 * i, 16);
                    else if constexpr (CG == 8)
                        nc_cp_async8((char *)dst + 8 * i, src + 8 * i, 8);
                    else
                        nc_cp_async4((char *)dst + 4 * i, src + 4 * i, 4);
                }
            } else if (U8) {
                for (int i = tid; i < XB; i += NT) ((uint8_t *)dst)[i] = ((const uint8_t *)src)[i];
            } else {
                for (int i = tid; i < XF; i += NT) dst[i] = ((const float *)src)[i];
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    /* OS: image nf's outputs, staged in Os, out to y 16 bytes at a time (y is 16-byte aligned: the launcher's check,
     * and YF a multiple of 4) */
    auto flush = [&](int nf, const float *Os) {
        if (nf < 0) return;
        float *yo = y + (size_t)nf * YF;
        for (int i = tid; i < YF / 4; i += NT) {
            const float4 v = *(const float4 *)&Os[4 * i];
            nc_st_global4(yo + 4 * i, v.x, v.y, v.z, v.w);
        }
    };
    /* V = B^T of every window of image X into Vs: [row][quarter][window][4] */
    auto vphase = [&](const float *X, float *Vs) {
        for (int q = tid; q < H * NP; q += NT) {
            const int r = q / NP, j = q % NP;
            float d[NPT], v[VQ * 4];
#pragma unroll
            for (int i = 0; i < NPT; i++) {
                const int col = OW * j + i;
                if (EDGE && col >= W)
                    d[i] = 0.0f;
                else if (U8)
                    d[i] = ls[((const uint8_t *)X)[r * W + col]];
                else
                    d[i] = X[r * W + col];
            }
            if constexpr (NPT == 8)
                wino_bt(d, reinterpret_cast<float(&)[8]>(v));
            else
                wr10_bt(d, reinterpret_cast<float(&)[10]>(v));
#pragma unroll
            for (int h = 0; h < VQ; h++)
                if (h < NPT / 4)
                    *(float4 *)&Vs[((VQ * r + h) * NP + j) * 4] =
                        make_float4(v[4 * h], v[4 * h + 1], v[4 * h + 2], v[4 * h + 3]);
                else
                    *(float2 *)&Vs[((VQ * r + h) * NP + j) * 4] = make_float2(v[4 * h], v[4 * h + 1]);
        }
    };
    /* Image n's outputs from its V (Vs), into y or (OS) Os */
    auto image = [&](int n, const float *Vs, float *Os) {
        float *yn = OS ? Os + m * Yh * Yw : y + ((size_t)n * M + m) * Yh * Yw;
        /* Output rows y0 .. y0 + 2 QQ - 1. */
        auto rows = [&](auto qq, int y0) {
            constexpr int QQ = decltype(qq)::value;
            float acc[2 * QQ][NPT];
#pragma unroll
            for (int i = 0; i < K + 2 * QQ - 1; i++) { /* input row y0 + i: kernel row i - j of output row y0 + j */
                float v[VQ * 4];
#pragma unroll
                for (int h = 0; h < VQ; h++) {
                    const float *vp = &Vs[((VQ * (y0 + i) + h) * NP + p) * 4];
                    if (h < NPT / 4) {
                        const float4 a = *(const float4 *)vp;
                        v[4 * h] = a.x, v[4 * h + 1] = a.y, v[4 * h + 2] = a.z, v[4 * h + 3] = a.w;
                    } else {
                        const float2 a = *(const float2 *)vp;
                        v[4 * h] = a.x, v[4 * h + 1] = a.y;
                    }
                }
#pragma unroll
                for (int j = 0; j < 2 * QQ; j++) {
                    const int kh = i - j;
                    if (kh < 0 || kh > K - 1) continue;
#pragma unroll
                    for (int e = 0; e < NPT; e++)
                        acc[j][e] = kh == 0 ? u[0][e] * v[e] : fmaf(u[kh][e], v[e], acc[j][e]);
                }
            }
#pragma unroll
            for (int q = 0; q < QQ; q++) { /* output rows y0 + 2 q and y0 + 2 q + 1 */
                const int yq = y0 + 2 * q;
                float o[2][OW];
#pragma unroll
                for (int j = 0; j < 2; j++)
                    if constexpr (OW == 6)
                        wr65_at(reinterpret_cast<float(&)[10]>(acc[2 * q + j]), o[j]);
                    else if constexpr (K == 5)
                        wino_at(reinterpret_cast<float(&)[8]>(acc[2 * q + j]), o[j]);
                    else
                        wr10_at(reinterpret_cast<float(&)[10]>(acc[2 * q + j]), o[j][0], o[j][1], o[j][2], o[j][3]);
                constexpr int PW = OW / 2; /* a window's pooled outputs a row */
                if (P == 2 && pool == NC_MAXPOOL) {
                    float v[PW];
#pragma unroll
                    for (int w = 0; w < PW; w++) {
                        v[w] = fmaxf(fmaxf(fmaxf(o[0][2 * w], o[0][2 * w + 1]), o[1][2 * w]), o[1][2 * w + 1]);
                        if (bias) v[w] += bm;
                    }
                    nc_act_n<NC_TANH_EXACT_EX2>(act, v);
                    wrow_out<Yw, OS>(&yn[(yq / 2) * Yw + PW * p], PART ? PW * p : 0, v);
                } else {
#pragma unroll
                    for (int i = 0; i < 2; i++)
#pragma unroll
                        for (int j = 0; j < OW; j++)
                            if (bias) o[i][j] += bm;
                    nc_act_n<NC_TANH_EXACT_EX2>(act, reinterpret_cast<float(&)[2 * OW]>(o));
                    if (P == 2) { /* average pooling: the window's sum in the order i, j */
                        float v[PW];
#pragma unroll
                        for (int w = 0; w < PW; w++)
                            v[w] = (o[0][2 * w] + o[0][2 * w + 1] + o[1][2 * w] + o[1][2 * w + 1]) / 4.0f;
                        wrow_out<Yw, OS>(&yn[(yq / 2) * Yw + PW * p], PART ? PW * p : 0, v);
                    } else if constexpr (Wo % 4 == 0) {
#pragma unroll
                        for (int i = 0; i < 2; i++)
                            nc_st_global4(&yn[(yq + i) * Yw + 4 * p], o[i][0], o[i][1], o[i][2], o[i][3]);
                    } else { /* rows 8-byte aligned: two pairs, the last window's second past the row */
#pragma unroll
                        for (int i = 0; i < 2; i++) {
                            float *yr = &yn[(yq + i) * Yw + 4 * p];
                            nc_st_global2(yr, o[i][0], o[i][1]);
                            if (!PART || 4 * p + 2 < Wo) nc_st_global2(yr + 2, o[i][2], o[i][3]);
                        }
                    }
                }
            }
        };
        if constexpr (ST) {
#pragma unroll 1
            for (int i = tid; i < ITEMS; i += TS) {
                p = i / M % NP;
                rows(std::integral_constant<int, Q>(), i / (M * NP) * 2 * Q);
            }
        } else {
#pragma unroll 1
            for (int y0 = band * BR; y0 < band * BR + BQ; y0 += 2 * Q) rows(std::integral_constant<int, Q>(), y0);
            if constexpr (BQ < BR) /* the pairs left over, one at a time */
#pragma unroll 1
                for (int y0 = band * BR + BQ; y0 < (band + 1) * BR; y0 += 2) rows(std::integral_constant<int, 1>(), y0);
        }
    };
    if constexpr (!DV) {
        int n = blockIdx.x, buf = 0;
        stage(n, X0);
        for (; n < B; n += gridDim.x, buf ^= 1) {
            const float *X = buf ? X1 : X0;
            asm volatile("cp.async.wait_group 0;" ::: "memory");
            __syncthreads(); /* this image staged; V free */
            stage(n + gridDim.x, buf ? X0 : X1);
            if constexpr (OS) flush(n - (int)gridDim.x, O0); /* the image before, whose outputs Os holds */
            vphase(X, V0);
            __syncthreads(); /* V holds this image */
            if (!active) continue;
            image(n, V0, O0);
        }
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        if constexpr (OS) {
            __syncthreads(); /* the last image's outputs in Os */
            flush(n - (int)gridDim.x, O0);
        }
    } else {
        const int GS = gridDim.x;
        int n = blockIdx.x;
        /* DV: V and Os in two buffers each, one barrier an image: image n's rows (from V[b]), image n + GS's V (from
         * X[!b] into V[!b]) and the outputs of image n - GS (from O[!b]) between the same two barriers. */
        stage(n, X0);
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        __syncthreads(); /* the first image staged, the lut loaded */
        stage(n + GS, X1);
        if (n < B) vphase(X0, V0);
        int b = 0;
        for (; n < B; n += GS, b ^= 1) {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
            __syncthreads(); /* V[b] holds image n, X[!b] image n + GS; X[b], V[!b], O[b] free */
            stage(n + 2 * GS, b ? X1 : X0);
            if (n + GS < B) vphase(b ? X0 : X1, b ? V0 : V1);
            if (active) image(n, b ? V1 : V0, b ? O1 : O0);
            if constexpr (OS) flush(n - GS, b ? O0 : O1);
        }
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        if constexpr (OS) {
            __syncthreads(); /* the last image's outputs in O[!b] */
            flush(n - GS, b ? O0 : O1);
        }
    }
}

/* -------------------------------------------------------------------------------- K = 7 second layers, along rows */

/*
 * 2018 fall's and 2020's second layers have K = 7, where F(4 x 4, 7 x 7) would take ten points in each direction
 * (F(2 x 2, 7 x 7), eight, was measured slower than version 14). Along the rows, F(4, 7) takes ten points once:
 * outputs 4 w .. 4 w + 3 of row y and channel m are A^T [sum over c and kh of (G g_m,c,kh) . (B^T x_c[y + kh][4 w
 * .. 4 w + 9])], 10 multiply-adds an input channel, kernel row and window where the direct sum does 28; the C K rows
 * share one output transform and each window's input transform serves the M output channels. Its rounding, in a
 * simulation of the two layers, is about 5 and 7 times the direct fp32 sum's (mean error; F(2, 7), which this
 * kernel ran until 2026-11-27, 2.3 and 3 times; docs/PERFORMANCE-LOG.md, 2026-11-27 21:20).
 *
 * A block takes items in turn, each an image's group of NW windows (all its rows; alone, its band of rows, below):
 *   - the item's input columns (4 NW + 6, zeros past the image) of the rows that count are copied into shared memory
 *     by cp.async while the block computes the item before;
 *   - phase 1: B^T of every (window, channel, row), into V[window][row][xi][channel];
 *   - phase 2: a thread takes one point xi, one output channel m, WT windows and C / CS input channels (CS = 2: the
 *     two halves in adjacent lanes, their sums added by a shuffle). It keeps U = G g for them (C / CS x 7 floats, in
 *     double rounded once) in registers for the block's life, and walks down the rows a band of R output rows at a
 *     time: each input row's V (16- or 8-byte loads that a warp's output channels share) feeds the seven output rows
 *     it reaches, C / CS multiply-adds each and window; an output row done goes to P[window][m][row][xi];
 *   - phase 3: for each unit of a window's pooled outputs in a row (two under 2/2 pooling, one under 4/4; alone, its
 *     four outputs), A^T of its rows, bias, activation (after the maximum under max pooling), pooling, the stores;
 *     the next item's phase 1 in the same interval between barriers.
 * Two barriers an item. The sums are in a fixed order: the same bits on every run.
 *
 * Measured against F(2, 7) in one call (bench/ab/conv_one, H100, N = 10000, 2026-11-27 21:35,
 * docs/PERFORMANCE-LOG.md): 2018 fall's second layer fused with tanh and 2/2 max pooling 3.330 -> 2.880 ms, 2020's
 * with ReLU and 4/4 max pooling 1.075 -> 0.818 (version 6: 4.46 and 1.44). 2018 fall's kernel, 480 threads at two
 * blocks an SM, was held to 64 registers and spilled 72-80 bytes; one block an SM (128 registers) took 2.98 ms, blocks
 * of a third of the channels (each computing the item's V) 3.44–3.75. Since its lanes take output channels before
 * points (below), one block an SM (106 registers, no spills) is the faster, and phase 2's rows in two bands of 13:
 * on the H200 (bench/ab/conv_one, one call, 2026-11-29), with tanh 2.882 ms -> 2.796 (channels first, one block) ->
 * 2.765 (bands of 13), with ReLU 2.899 -> 2.799 -> 2.767, the same bits (two windows a thread: 2.93 and 2.97).
 *
 * Alone (P = 1), an item is an image's band of rows with all its windows (BANDS bands an image), and phase 3's lanes
 * take a row's windows first, so that a warp's stores run along the channel's plane (8-byte pairs where the row's
 * width is even). F(2, 7) alone had been no faster than version 14 on 2018 fall's layer (5.26 against 5.21 ms) and
 * 2.4 times slower on 2020's (2026-11-26); F(4, 7) alone with the pooled kernels' items (a window group's every row,
 * channels first in phase 3: a warp's stores 16 bytes in 32 places) took 4.04 and 2.87-2.99 ms against version 5's
 * 5.20 and 1.88. With items of whole rows (H200, N = 10000, 2026-11-28 19:30, bench/results/gpu-2026-11-28-s61-ab.log):
 * 2018 fall's 2.879 ms in three bands of nine rows, seven windows a thread (version 5: 5.211; one band of a window
 * group, 3.87; rows of three, 4.13), 2020's 1.034 in two bands of 17 rows, three windows a thread (version 5: 1.888;
 * a band of four windows, 1.44; of three, 1.20). 2020's fused layer in such bands was slower (0.853-1.043 ms
 * against 0.794).
 */

/* A layer's outputs that count (P = 2 or 4: pooled P/P; P = 1: alone), its items, its threads and its shared memory
 * (floats). BANDS: the bands of rows an image's items split its rows into (each band's input rows and the six below
 * them staged, so that an item of a whole row's windows fits shared memory). */
template <int C, int M, int H, int W, int P, int NW, int WT, int CS, int BANDS = 1> struct wr7_geom {
    static constexpr int OW = 4, NP = 10, RS = 12; /* a window's outputs; its points; P's row stride (16-byte loads) */
    static constexpr int Ho = H - 6, Wo = W - 6, Yh = Ho / P, Yw = Wo / P;
    static constexpr int ROWS = P * Yh, COLS = P * Yw;                               /* outputs that count */
    static constexpr int NWIN = (COLS + OW - 1) / OW, GROUPS = (NWIN + NW - 1) / NW; /* windows of OW; items a band */
    static constexpr int BR = ROWS / BANDS, BY = BR / P;          /* output rows a band; pooled rows */
    static constexpr int RIN = BR + 6, XC = OW * NW + 6;          /* input rows and columns an item */
    static constexpr int XCS = W % 2 ? (RIN * XC) | 1 : RIN * XC; /* X: [c][row][XC]; odd, or even for 8-byte copies */
    static constexpr int CC = C / CS;                             /* input channels a thread */
    static constexpr int VRS = NP * C + 4;                        /* V: [w][row][xi][c] */
    /* P: [w][m][row][xi] pooled, [m][w][row][xi] alone (phase 3's lanes: channels first, or windows first); its
     * planes PS floats apart, 4 mod 8, so that phase 3's loads spread over the banks. */
    static constexpr int PS = BR * RS + (BR * RS % 8 == 0 ? 4 : 0);
    /* The plane of window w and output channel m; the stride of windows. */
    static constexpr __device__ int plane(int w, int m) { return P == 1 ? (m * NW + w) * PS : (w * M + m) * PS; }
    static constexpr int PW = P == 1 ? PS : M * PS;
    static constexpr int NT = NP * CS * M * (NW / WT);
    static constexpr int X_F = (C * XCS + 3) / 4 * 4, V_F = NW * RIN * VRS, P_F = NW * M * PS;
    static constexpr size_t bytes = (size_t)(X_F + V_F + P_F) * sizeof(float);
    static_assert(bytes <= 227 * 1024, "a block's shared memory");
};

template <int C, int M, int H, int W, int P, int EPI, int NW, int WT, int CS, int R, int MINB, int BANDS = 1>
__global__ void __launch_bounds__(wr7_geom<C, M, H, W, P, NW, WT, CS, BANDS>::NT, MINB)
    conv_wino_rows7_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ k,
                           const float *__restrict__ bias, int B, int act_arg, int pool_arg) {
    using G = wr7_geom<C, M, H, W, P, NW, WT, CS, BANDS>;
    constexpr int NT = G::NT, RIN = G::RIN, XC = G::XC, XCS = G::XCS, BR = G::BR, VRS = G::VRS;
    constexpr int CC = G::CC, GROUPS = G::GROUPS, Yh = G::Yh, Yw = G::Yw, NP = G::NP, RS = G::RS, OW = G::OW;
    constexpr int BY = G::BY, PW = G::PW;
    constexpr int PO = OW / P; /* a window's pooled outputs a row */
    static_assert(P == 1 || P == 2 || P == 4, "alone, or pooled 2/2 or 4/4");
    static_assert(C % CS == 0 && CC % 2 == 0 && NT % 32 == 0, "V in 8- or 16-byte loads; whole warps");
    static_assert(CS == 1 || CS == 2, "a thread's channels: all, or a half (the other in a lane of its warp)");
    static_assert(G::ROWS % BANDS == 0 && BR % P == 0 && BR % R == 0 && NW % WT == 0, "bands; windows");
    static_assert(G::NWIN % WT <= 1, "a thread's windows past the row: all or all but one");
    static_assert(NW == WT || (NP * CS * M) % 32 == 0, "a warp's threads take the same windows (its shuffles)");
    const int act = EPI == WINO_EPI_TANH_MAX ? NC_TANH : EPI == WINO_EPI_NONE ? -1 : act_arg;
    const int pool = EPI == WINO_EPI_TANH_MAX ? NC_MAXPOOL : EPI == WINO_EPI_NONE ? -1 : pool_arg;
    extern __shared__ float4 wino_smem[];
    float *Xs = (float *)wino_smem, *Vs = Xs + G::X_F, *Ps = Vs + G::V_F;
    /* A thread's half cs (adjacent lanes), point xi and output channel m; w1, its first window in the item. With
     * CS = 2 (2018 fall's layer), output channels before points: the lanes of a half warp then read V at two addresses
     * (one point's two halves) where with points first they read 16 (10 points' halves, and the next channel's) in 3
     * wavefronts an 8-byte load, not 2. ncu on the layer fused (H200, 2026-11-29): shared-memory loads 357 -> 135
     * million wavefronts; bench/ab/conv_one, 2.890 -> 2.827 ms fused, 2.883 -> 2.644 alone, the same bits. (CS = 1,
     * 2020's layer, reads 16 bytes a lane: a wavefront a quarter warp either way.) */
    const int tid = threadIdx.x, cs = tid % CS;
    const int xi = CS == 2 ? tid / (CS * M) % NP : tid / CS % NP, m = CS == 2 ? tid / CS % M : tid / (NP * CS) % M;
    const int w1 = tid / (NP * CS * M) * WT;
    const int items = B * BANDS * GROUPS;    /* an item: (image, band, group of windows), the group first */
    const bool y8 = ((uintptr_t)y & 7) == 0; /* alone, where Wo is even: a window's outputs as 8-byte pairs */

    /* U = G g for this thread's point, channel and input channels: each a double sum rounded once. */
    float u[CC][7];
#pragma unroll
    for (int c = 0; c < CC; c++)
#pragma unroll
        for (int kh = 0; kh < 7; kh++) u[c][kh] = wr10_u(k + ((size_t)(m * C + cs * CC + c) * 7 + kh) * 7, xi);
    /* Item it's input: C x RIN rows of XC columns from its first window's, zeros past the image; two columns a copy
     * where W is even and x 8-byte aligned (then every pair is). */
    const bool pairs = W % 2 == 0 && ((uintptr_t)x & 7) == 0;
    auto stage = [&](int it) {
        if (it < items) {
            const int n = it / (BANDS * GROUPS), col0 = (it % GROUPS) * NW * OW;
            /* the band's first input row (an image's offsets fit an int: C H W is a kernel's) */
            const float *xn = x + (size_t)n * C * H * W + (BANDS == 1 ? 0 : it / GROUPS % BANDS * BR * W);
            if (pairs) {
#pragma unroll 4
                for (int q = tid; q < C * RIN * XC / 2; q += NT) {
                    const int j = 2 * (q % (XC / 2)), r = (q / (XC / 2)) % RIN, c = q / (XC / 2 * RIN), col = col0 + j;
                    const bool in = col < W;
                    nc_cp_async8(Xs + c * XCS + r * XC + j, xn + (in ? (c * H + r) * W + col : 0), in ? 8 : 0);
                }
            } else {
#pragma unroll 4
                for (int q = tid; q < C * RIN * XC; q += NT) {
                    const int j = q % XC, r = (q / XC) % RIN, c = q / (XC * RIN), col = col0 + j;
                    const bool in = col < W;
                    nc_cp_async4(Xs + c * XCS + r * XC + j, xn + (in ? (c * H + r) * W + col : 0), in ? 4 : 0);
                }
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    /* Phase 1: V = B^T of each window of each (channel, row), X -> V. */
    auto phase1 = [&]() {
#pragma unroll 1
        for (int q = tid; q < NW * C * RIN; q += NT) {
            const int c = q % C, r = (q / C) % RIN, w = q / (C * RIN);
            float d[NP], v[NP];
#pragma unroll
            for (int i = 0; i < NP; i++) d[i] = Xs[c * XCS + r * XC + OW * w + i];
            wr10_bt(d, v);
            float *vo = Vs + (w * RIN + r) * VRS + c;
#pragma unroll
            for (int i = 0; i < NP; i++) vo[i * C] = v[i];
        }
    };
    /* Phase 2: P[w][m][row][xi] = sum over input rows, then channels, of U[c][kh] V[w][row + kh][xi][c]; with CS = 2,
     * each half's sum, then the two added. For WT windows, or the first alone (the last item of a row of an odd number
     * of windows: no multiply-adds for the one past the row). */
    auto phase2 = [&](auto wt) {
        constexpr int T = decltype(wt)::value;
        const float *vw = Vs + w1 * RIN * VRS + xi * C + cs * CC;
        float *pw = Ps + G::plane(w1, m) + xi;
#pragma unroll 1
        for (int b = 0; b < BR / R; b++) {
            float acc[T][R];
#pragma unroll
            for (int i = 0; i < R + 6; i++) { /* input row b R + i */
                float v[T][CC];
#pragma unroll
                for (int t = 0; t < T; t++) {
                    const float *vr = vw + (t * RIN + b * R + i) * VRS;
#pragma unroll
                    for (int c = 0; c < CC; c += (CC % 4 == 0 ? 4 : 2)) {
                        if (CC % 4 == 0) {
                            const float4 f = *(const float4 *)(vr + c);
                            v[t][c] = f.x, v[t][c + 1] = f.y, v[t][c + 2] = f.z, v[t][c + 3] = f.w;
                        } else {
                            const float2 f = *(const float2 *)(vr + c);
                            v[t][c] = f.x, v[t][c + 1] = f.y;
                        }
                    }
                }
#pragma unroll
                for (int c = 0; c < CC; c++)
#pragma unroll
                    for (int t = 0; t < T; t++)
#pragma unroll
                        for (int kh = 0; kh < 7; kh++) {
                            const int j = i - kh; /* the output row it reaches */
                            if (j < 0 || j >= R) continue;
                            acc[t][j] = kh == 0 && c == 0 ? u[0][0] * v[t][0] : fmaf(u[c][kh], v[t][c], acc[t][j]);
                        }
                if (i >= 6) {
#pragma unroll
                    for (int t = 0; t < T; t++) {
                        float s = acc[t][i - 6];
                        if (CS == 2) s += __shfl_xor_sync(0xffffffffu, s, 1);
                        if (CS == 1 || cs == 0) pw[t * PW + (b * R + i - 6) * RS] = s;
                    }
                }
            }
        }
    };
    /* Phase 3: A^T, the epilogue and the stores. Pooled, a unit is a window's PO pooled outputs of a row (its P rows),
     * the channel first, so that a warp's loads of P spread over the banks; alone, a window's four outputs of a row,
     * the windows first, so that a warp's stores run along the rows (with a whole row's windows an item, along the
     * channel's plane). */
    /* A^T of the ten points of P at pp */
    auto at_row = [&](const float *pp, float(&o)[OW]) {
        const float4 a = *(const float4 *)pp, b = *(const float4 *)(pp + 4);
        const float2 c = *(const float2 *)(pp + 8);
        const float t[NP] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y};
        wr10_at(t, o[0], o[1], o[2], o[3]);
    };
    auto phase3 = [&](int it) {
        const int n = it / (BANDS * GROUPS), w0 = (it % GROUPS) * NW;
        const int y0 = BANDS == 1 ? 0 : it / GROUPS % BANDS * BY; /* the band's first row of y */
        if constexpr (P == 1) {
            constexpr int UNITS = NW * BR * M;
#pragma unroll 1
            for (int q = tid; q < UNITS; q += NT) {
                const int wp = q % NW, r = q / NW % BR, mq = q / (NW * BR);
                const int col = OW * (w0 + wp); /* the window's first output column */
                if (col >= G::COLS) continue;   /* a window past the row */
                float o[OW];
                at_row(Ps + G::plane(wp, mq) + r * RS, o);
                if (bias) {
                    const float bm = bias[mq];
#pragma unroll
                    for (int j = 0; j < OW; j++) o[j] += bm;
                }
                nc_act_n<NC_TANH_EXACT_EX2>(act, o);
                float *yr = y + (((size_t)n * M + mq) * Yh + y0 + r) * Yw + col;
                if (Yw % 2 == 0 && y8) { /* rows 8-byte aligned: two pairs, the last window's second past the row */
                    nc_st_global2(yr, o[0], o[1]);
                    if (col + 2 < Yw) nc_st_global2(yr + 2, o[2], o[3]);
                } else {
#pragma unroll
                    for (int j = 0; j < OW; j++)
                        if (col + j < Yw) yr[j] = o[j];
                }
            }
            return;
        }
        constexpr int UNITS = NW * M * BY;
#pragma unroll 1
        for (int q = tid; q < UNITS; q += NT) {
            const int mq = q % M, r = (q / M) % BY, wp = q / (BY * M);
            const int col = OW * (w0 + wp); /* the window's first output column */
            if (col >= G::COLS) break;      /* windows past the row (units go by window last) */
            float o[P][OW];
#pragma unroll
            for (int i = 0; i < P; i++) at_row(Ps + G::plane(wp, mq) + (r * P + i) * RS, o[i]);
            const float bm = bias ? bias[mq] : 0.0f;
            float *yr = y + (((size_t)n * M + mq) * Yh + y0 + r) * Yw + col / P;
            if (pool == NC_MAXPOOL) {
#pragma unroll
                for (int p = 0; p < PO; p++) {
                    float v[1] = {o[0][p * P]};
#pragma unroll
                    for (int i = 0; i < P; i++)
#pragma unroll
                        for (int j = p * P; j < p * P + P; j++) v[0] = fmaxf(v[0], o[i][j]);
                    if (bias) v[0] += bm;
                    nc_act_n<NC_TANH_EXACT_EX2>(act, v);
                    if (col / P + p < Yw) yr[p] = v[0];
                }
            } else { /* average pooling: bias and activation on each output, then the window's sum in the order i, j */
#pragma unroll
                for (int i = 0; i < P; i++)
#pragma unroll
                    for (int j = 0; j < OW; j++)
                        if (bias) o[i][j] += bm;
                nc_act_n<NC_TANH_EXACT_EX2>(act, reinterpret_cast<float(&)[P * OW]>(o));
#pragma unroll
                for (int p = 0; p < PO; p++) {
                    float s = 0.0f;
#pragma unroll
                    for (int i = 0; i < P; i++)
#pragma unroll
                        for (int j = p * P; j < p * P + P; j++) s += o[i][j];
                    if (col / P + p < Yw) yr[p] = s / (float)(P * P);
                }
            }
        }
    };

    int it = blockIdx.x;
    stage(it);
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
    phase1();
    for (; it < items; it += gridDim.x) {
        __syncthreads(); /* V holds this item; X and P are free */
        stage(it + gridDim.x);
        const int left = G::NWIN - (it % GROUPS) * NW - w1; /* windows of the row from this thread's first */
        if (left >= WT)
            phase2(std::integral_constant<int, WT>());
        else if (WT > 1 && left == 1)
            phase2(std::integral_constant<int, 1>());
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        __syncthreads(); /* P holds this item, X the next */
        phase3(it);
        if (it + (int)gridDim.x < items) phase1();
    }
}

/* ---------------------------------------------------------------------------------------------------- launchers */

typedef void (*wino_fn)(float *, const float *, const float *, const float *, int, int, int);

/* What a kernel's launches need of a device, found at its first launch there: a slot a device, so that sessions
 * running on several GPUs at once, a host thread each (nc_session_run), never share one. A device past
 * NC_MAX_DEVICES asks the runtime at every launch. */
typedef struct {
    int blocks[NC_MAX_DEVICES]; /* resident blocks on the whole device; 0: not yet */
} wino_fit;

typedef struct {
    int C, H, W, M, K, P; /* the layer: channels, input size, output channels, kernel size and pooling (1, 2, 4) */
    int epi;              /* WINO_EPI_* */
    int per_image;        /* items an image: rows of tiles (K = 5), groups of windows (K = 7) */
    int threads;
    size_t smem;
    wino_fn fn;
    wino_fit *fit;
} wino_entry;

template <int C, int H, int W, int M, int MG, int P, int EPI, int MINB> static wino_entry wino_make() {
    static wino_fit fit; /* one a kernel */
    return wino_entry{C,
                      H,
                      W,
                      M,
                      5,
                      P,
                      EPI,
                      wino_geom<H, W, P>::TH,
                      64 * MG,
                      wino_layout<C, M, wino_geom<H, W, P>::TW>::bytes + wino_ostage<C, M, H, W, P, MINB>::bytes,
                      conv_wino_kernel<C, M, MG, H, W, P, EPI, MINB>,
                      &fit};
}

template <int C, int H, int W, int M, int P, int EPI, int NW, int WT, int CS, int R, int MINB, int BANDS = 1>
static wino_entry wr7_make() {
    static wino_fit fit;
    using G = wr7_geom<C, M, H, W, P, NW, WT, CS, BANDS>;
    return wino_entry{C,
                      H,
                      W,
                      M,
                      7,
                      P,
                      EPI,
                      BANDS * G::GROUPS,
                      G::NT,
                      G::bytes,
                      conv_wino_rows7_kernel<C, M, H, W, P, EPI, NW, WT, CS, R, MINB, BANDS>,
                      &fit};
}

/* The kernels: the zoo's K = 5 second layers alone and as their networks fuse them, each also for any other
 * epilogue (MG = 2 measured faster than 4 on each; docs/PERFORMANCE-LOG.md, 2026-11-26); its K = 7 second layers as
 * their networks fuse them (2018 fall's also for any other activation and 2/2 pooling, 2020's for any activation
 * and 4/4 pooling) and alone (no epilogue: as the bench times a layer alone). NW, WT, CS, R and BANDS were chosen
 * among 3 to 6 variants each (docs/PERFORMANCE-LOG.md, 2026-11-27 21:20-21:40 and 2026-11-28 19:20-19:35), MINB and R
 * of 2018 fall's fused kernels again on 2026-11-29 (two blocks an SM to one, a band of 26 rows to 13). */
static const wino_entry *wino_for(int C, int H, int W, int M, int K, const nc_conv_epilogue *e) {
    static const wino_entry kernels[] = {
        wino_make<12, 33, 33, 24, 2, 2, WINO_EPI_TANH_MAX, 2>(), /* 2019 fall, fused */
        wino_make<12, 33, 33, 24, 2, 2, WINO_EPI_ANY, 2>(),
        wino_make<12, 33, 33, 24, 2, 1, WINO_EPI_NONE, 2>(), /* 2019 fall, alone */
        wino_make<12, 33, 33, 24, 2, 1, WINO_EPI_ANY, 2>(),
        wino_make<6, 22, 22, 16, 2, 2, WINO_EPI_TANH_MAX, 3>(), /* 2019 spring, fused */
        wino_make<6, 22, 22, 16, 2, 2, WINO_EPI_ANY, 3>(),
        wino_make<6, 22, 22, 16, 2, 1, WINO_EPI_NONE, 3>(), /* 2019 spring, alone */
        wino_make<6, 22, 22, 16, 2, 1, WINO_EPI_ANY, 3>(),
        wino_make<6, 30, 30, 16, 2, 1, WINO_EPI_NONE, 3>(), /* 2018 spring (its network runs it alone) */
        wino_make<6, 30, 30, 16, 2, 1, WINO_EPI_ANY, 3>(),
        wr7_make<12, 33, 33, 24, 2, WINO_EPI_TANH_MAX, 1, 1, 2, 13, 1>(), /* 2018 fall, fused */
        wr7_make<12, 33, 33, 24, 2, WINO_EPI_ANY, 1, 1, 2, 13, 1>(),
        wr7_make<4, 40, 40, 16, 4, WINO_EPI_ANY, 4, 1, 1, 32, 1>(),     /* 2020, fused (ReLU, 4/4 max pooling) */
        wr7_make<12, 33, 33, 24, 1, WINO_EPI_NONE, 7, 7, 2, 9, 1, 3>(), /* 2018 fall, alone: three bands */
        wr7_make<4, 40, 40, 16, 1, WINO_EPI_NONE, 9, 3, 1, 17, 1, 2>(), /* 2020, alone: two bands */
    };
    if ((K != 5 && K != 7) || !nc_conv_direct_fuses(e, K)) return nullptr;
    const int P = e->pool < 0 ? 1 : e->P;
    const int epi = e->act == NC_TANH && e->pool == NC_MAXPOOL ? WINO_EPI_TANH_MAX
                    : e->act < 0 && e->pool < 0                ? WINO_EPI_NONE
                                                               : WINO_EPI_ANY;
    const wino_entry *any = nullptr;
    for (const wino_entry &k : kernels) {
        if (k.C != C || k.H != H || k.W != W || k.M != M || k.K != K || k.P != P) continue;
        if (k.epi == epi) return &k;
        if (k.epi == WINO_EPI_ANY) any = &k;
    }
    return any;
}

/* First layers: a kernel for each input form (uint8 pixels as a network's first layer reads them, or floats) and
 * epilogue. */
typedef void (*wrow_fn)(float *, const float *, const uint8_t *, const nc_conv_lut, const float *, const float *, int,
                        int, int, int);

typedef struct {
    int H, W, M, K, P; /* the layer (C = 1) */
    int epi;           /* WINO_EPI_* */
    int u8;            /* 1: uint8 pixels; 0: floats */
    int threads;
    size_t smem;
    wrow_fn fn;
    wino_fit *fit;
} wrow_entry;

template <int M, int H, int W, int K, int P, int EPI, bool U8, int MINB, int R = 1, int Q = 1, bool OS = false,
          int OW = 4, int ST = 0, bool DV = false>
static wrow_entry wrow_make() {
    static wino_fit fit;
    using G = wrow_geom<M, H, W, K, R, OW, ST>;
    /* two images, V, the outputs staged (OS) and the pixels' lut */
    constexpr size_t smem =
        (size_t)(2 * G::xf(U8) + (DV ? 2 : 1) * (G::VF + (OS ? G::YF : 0)) + (U8 ? 256 : 0)) * sizeof(float);
    static_assert(smem <= 227 * 1024, "a block's shared memory");
    const wrow_fn fn = conv_wino_rows_kernel<M, H, W, K, P, EPI, U8, MINB, R, Q, OS, OW, ST, DV>;
    return wrow_entry{H, W, M, K, P, EPI, U8, G::NT, smem, fn, &fit};
}

/* 2017's first layer, 1 x 28 x 28 -> 50: on pixels fused as its network runs it (tanh, 2/2 max pooling) or with any
 * other epilogue; on floats alone (as the bench times a layer alone) or with any epilogue. 2018 fall's, 1 x 72 x 72
 * -> 12, K = 7, 2018 spring's, 1 x 64 x 64 -> 6 (fused: F(6, 5)), and 2019 spring's, 1 x 48 x 48 -> 6: fused as their
 * networks run them (tanh, 2/2 max pooling), and the last two on floats alone too (one band of rows, two pairs at a
 * time: on the H200, B 10000, 0.1731 and 0.3066 ms against version 13's 0.2238 and 0.3900; two bands, or one pair at a
 * time, 0.1874-0.2003 and 0.3071-0.3222; bench/results/gpu-2026-11-28-s60-ab.log); 2020's, 1 x 86 x 86 -> 4, K = 7,
 * with any activation and 2/2 pooling (its network: ReLU), and alone on floats (four bands, two pairs at a time: 0.4713
 * ms against version 14's 0.6545; two bands 0.5763, one 0.6751; its items dealt out to twelve warps since session 73,
 * ST). 2018 fall's alone on floats too, its 66 outputs a row
 * 16 windows and a half stored as 8-byte pairs (one band, three pairs at a time: 0.834 ms against version 14's
 * 1.289; bench/results/gpu-2026-11-28-s61-ab.log). 2019 fall's, 1 x 70 x 70 -> 12, fused as its network runs it,
 * its outputs staged (OS). Fused, each on pixels (images of its size) or floats (the
 * 28 x 28 test images, which the network upscales). The tuner times a fused first layer in both forms, and the run
 * takes the pick of the form it gives (src/cuda/backend_cuda.cu); a form version 15 does not take runs on version 14.
 * The zoo's networks run no first layer alone; the bench times each so. */
static const wrow_entry *wrow_for(int H, int W, int M, int K, const nc_conv_epilogue *e, int pixels) {
    static const wrow_entry kernels[] = {
        /* fused on pixels: two pairs of rows an iteration, V in two buffers (DV) */
        wrow_make<50, 28, 28, 5, 2, WINO_EPI_TANH_MAX, true, 2, 1, 2, false, 4, 0, true>(),
        wrow_make<50, 28, 28, 5, 2, WINO_EPI_ANY, true, 2, 1, 2>(),
        wrow_make<50, 28, 28, 5, 1, WINO_EPI_ANY, true, 2>(),
        wrow_make<50, 28, 28, 5, 1, WINO_EPI_NONE, false, 2>(),
        wrow_make<50, 28, 28, 5, 1, WINO_EPI_ANY, false, 2>(),
        wrow_make<50, 28, 28, 5, 2, WINO_EPI_ANY, false, 2>(),
        /* 2018 fall, fused: pixels of its size, floats (28 x 28 images upscaled); V in two buffers (DV) */
        wrow_make<12, 72, 72, 7, 2, WINO_EPI_TANH_MAX, true, 1, 1, 3, false, 4, 0, true>(),
        wrow_make<12, 72, 72, 7, 2, WINO_EPI_TANH_MAX, false, 1, 1, 3, false, 4, 0, true>(),
        /* 2018 spring: F(6, 5), two bands, two pairs at a time; on pixels V in two buffers (DV) */
        wrow_make<6, 64, 64, 5, 2, WINO_EPI_TANH_MAX, true, 1, 2, 2, false, 6, 0, true>(),
        wrow_make<6, 64, 64, 5, 2, WINO_EPI_TANH_MAX, false, 1, 2, 2, false, 6>(),
        /* 2019 spring: its items (a channel, a window, two pairs of rows) dealt out to four warps (ST) */
        wrow_make<6, 48, 48, 5, 2, WINO_EPI_TANH_MAX, true, 4, 1, 2, false, 4, 128>(),
        wrow_make<6, 48, 48, 5, 2, WINO_EPI_TANH_MAX, false, 4, 1, 2, false, 4, 128>(),
        /* 2019 spring alone: one band, two pairs at a time, V in two buffers (DV) */
        wrow_make<6, 48, 48, 5, 1, WINO_EPI_NONE, false, 2, 1, 2, false, 4, 0, true>(),
        wrow_make<6, 64, 64, 5, 1, WINO_EPI_NONE, false, 1, 1, 2>(), /* 2018 spring alone */
        /* 2020 (ReLU), fused and alone: its items dealt out to twelve warps (ST), V in two buffers (DV) */
        wrow_make<4, 86, 86, 7, 2, WINO_EPI_ANY, true, 1, 1, 2, false, 4, 384, true>(),
        wrow_make<4, 86, 86, 7, 2, WINO_EPI_ANY, false, 1, 1, 2, false, 4, 384, true>(),
        wrow_make<4, 86, 86, 7, 1, WINO_EPI_NONE, false, 1, 1, 2, false, 4, 384, true>(),
        wrow_make<12, 72, 72, 7, 1, WINO_EPI_NONE, false, 1, 1, 3>(), /* 2018 fall alone: three pairs at a time */
        /* 2019 fall: three bands, a pair at a time, the outputs staged (OS), V and the outputs in two buffers (DV) */
        wrow_make<12, 70, 70, 5, 2, WINO_EPI_TANH_MAX, true, 1, 3, 1, true, 4, 0, true>(),
        wrow_make<12, 70, 70, 5, 2, WINO_EPI_TANH_MAX, false, 1, 3, 1, true, 4, 0, true>(),
    };
    if ((K != 5 && K != 7) || !nc_conv_direct_fuses(e, K) || (e->pool >= 0 && e->P != 2)) return nullptr;
    const int P = e->pool < 0 ? 1 : 2;
    const int epi = e->act == NC_TANH && e->pool == NC_MAXPOOL ? WINO_EPI_TANH_MAX
                    : e->act < 0 && e->pool < 0                ? WINO_EPI_NONE
                                                               : WINO_EPI_ANY;
    const wrow_entry *any = nullptr;
    for (const wrow_entry &k : kernels) {
        if (k.H != H || k.W != W || k.M != M || k.K != K || k.P != P || k.u8 != (pixels != 0)) continue;
        if (k.epi == epi) return &k;
        if (k.epi == WINO_EPI_ANY) any = &k;
    }
    return any;
}

/* The blocks the device holds of a kernel, asked of the runtime once a kernel and device (with its shared memory
 * allowed), not at every launch: the kernel waits for the host's calls. */
static int wino_blocks(const void *fn, int threads, size_t smem, wino_fit *fit, int *blocks, nc_error *err) {
    int device = 0;
    CUDA_RET(cudaGetDevice(&device));
    int *slot = device < NC_MAX_DEVICES ? &fit->blocks[device] : blocks;
    if (device >= NC_MAX_DEVICES || *slot == 0) {
        int sms = 0, per_sm = 0;
        CUDA_RET(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        CUDA_RET(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, threads, smem));
        *slot = sms * (per_sm < 1 ? 1 : per_sm);
    }
    *blocks = *slot;
    return NC_OK;
}

int nc_conv_wino_takes(int C, int H, int W, int M, int K, const nc_conv_epilogue *e, int pixels) {
    if (C == 1) return wrow_for(H, W, M, K, e, pixels) != nullptr;
    return !pixels && wino_for(C, H, W, M, K, e) != nullptr;
}

int nc_conv_launch_wino_fused(float *y, const float *x, const uint8_t *x_u8, const nc_conv_lut *lut, const float *k,
                              const float *bias, int B, int C, int H, int W, int M, int K, const nc_conv_epilogue *e,
                              cudaStream_t stream, nc_error *err) {
    if (!nc_conv_wino_takes(C, H, W, M, K, e, x_u8 != NULL))
        return nc_fail(
            err, NC_ERR_ARG,
            "conv version 15 (winograd) does not take %s C = %d, %dx%d, M = %d, K = %d, pool %d/%d: it has "
            "kernels for the zoo's layers only, as their networks fuse them and alone on float input (2019 fall's "
            "first layer fused only); version 14 takes any",
            x_u8 ? "uint8 pixels," : "float input,", C, H, W, M, K, e->pool < 0 ? 1 : e->P, e->pool < 0 ? 1 : e->S);
    if (B <= 0) return NC_OK;
    int blocks = 0;
    if (C == 1) {
        const wrow_entry *w = wrow_for(H, W, M, K, e, x_u8 != NULL);
        if (((uintptr_t)y & 15) != 0) /* a thread's outputs go out as one 16- or 8-byte word a row, or OS's 16 */
            return nc_fail(err, NC_ERR_ARG, "conv version 15 (winograd): on a first layer y must be 16-byte aligned");
        const int rc = wino_blocks((const void *)w->fn, w->threads, w->smem, w->fit, &blocks, err);
        if (rc) return rc;
        static const nc_conv_lut no_lut = {{0}};
        const int grid = B < blocks ? B : blocks;
        const int aligned = ((uintptr_t)(x_u8 ? (const void *)x_u8 : (const void *)x) & 15) == 0;
        w->fn<<<grid, w->threads, w->smem, stream>>>(y, x, x_u8, x_u8 ? *lut : no_lut, k, bias, B, e->act, e->pool,
                                                     aligned);
        CUDA_LAUNCHED();
        return NC_OK;
    }
    const wino_entry *w = wino_for(C, H, W, M, K, e);
    const long long items = (long long)B * w->per_image;
    if (items > 0x7fffffff) /* the kernel counts its items in an int */
        return nc_fail(err, NC_ERR_ARG, "conv version 15 (winograd): %d images are too many items", B);
    const int rc = wino_blocks((const void *)w->fn, w->threads, w->smem, w->fit, &blocks, err);
    if (rc) return rc;
    const int grid = (int)(items < blocks ? items : blocks);
    w->fn<<<grid, w->threads, w->smem, stream>>>(y, x, k, bias, B, e->act, e->pool);
    CUDA_LAUNCHED();
    return NC_OK;
}

extern "C" int nc_conv_launch_winograd(float *y, const float *x, const float *k, const float *bias, int B, int C, int H,
                                       int W, int M, int K, cudaStream_t stream, nc_error *err) {
    const nc_conv_epilogue none = {-1, -1, 1, 1};
    return nc_conv_launch_wino_fused(y, x, NULL, NULL, k, bias, B, C, H, W, M, K, &none, stream, err);
}
