/*
 * Register-tiled direct convolution with K known at compile time: versions 5 and 6.
 *
 *   5  direct: each thread computes a PT x PT patch of the output for MB output channels at once, from a
 *      (PT+K-1)^2 window of the input held in registers; K, PT and MB are template parameters, so every loop
 *      over the window and the weights unrolls and every register array is indexed by constants; pointers are
 *      __restrict__. A block stages a band of rows of one image (every input channel) and one group of MB
 *      channels' weights (padded to float4 rows) in shared memory: each input pixel comes from global memory
 *      once per block and each weight is a broadcast 16-byte load reused PT*PT times.
 *      nanoconv eval --model M --backend cuda --conv-kernel 5
 *   6  fused: the same kernel with the epilogue on: + bias, the activation, and PT x PT pooling (P = S = PT)
 *      before the one store, so the full-size convolution output never goes to memory (4x or 16x fewer bytes
 *      written), and the input may be read as uint8 pixels, turned into floats through the model's scaling
 *      table as they are staged in shared memory (4x fewer bytes read). Asked for a convolution alone it is
 *      version 5.
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
 * (DIRECT_STAGE) took the 2017 layer fused from 0.87 to 0.70 ms and 2018 fall's second layer from 9.3 to 7.8 ms
 * (H100, 2026-11-22; ncu had put an instruction-cache stall, the staging barrier and the staging loads' latency
 * first among the stalls).
 */
#include "cuda/conv_act.cuh"
#include "cuda/conv_ladder.h"
#include "cuda/cuda_check.h"

/* Shared memory a block may take (above 48 KB only with the kernel's opt-in, done at launch). */
#define DIRECT_SMEM_MAX (96 * 1024)
#define DIRECT_MAX_THREADS 256
#define DIRECT_W_ALL_MAX (64 * 1024)
/* The blocks an SM each kernel must allow (__launch_bounds__), which sets ptxas's register budget: with none it
 * held kernels of 4 or 6 channels a thread to 80 registers and spilled up to 32 bytes; one block lets them take
 * 93 to 114 and spill nothing, and two keep those of 10 channels at 128 registers, without spills either. */
#define DIRECT_MIN_BLOCKS(PT, MB) ((PT) == 2 && (MB) == 10 ? 2 : 1)
#define DIRECT_STAGE 8 /* input elements a thread loads before it stores them, when staging a band */

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
};

/* A persistent grid (as many blocks as fit on the GPU at once): each block takes work items (image, band) in
 * turn; blockDim.x threads walk the band's patches. Dynamic shared memory:
 *   ws (G, C, MB, KK4)  the weights, each (m, c) row of K*K padded with zeros to KK4 (a multiple of 4), for all
 *                       G = ceil(M / MB) groups staged once (w_all), or for one group at a time
 *   xs (C, RB, WS)      the band's input rows, RB = band_pr*PT + K-1, WS = pc*PT + K-1, zero past the image
 *   lut (256)           uint8 input only (xu not NULL; a run-time choice, as it costs only the staging) */
template <int K, int PT, int MB>
__global__ void __launch_bounds__(DIRECT_MAX_THREADS, DIRECT_MIN_BLOCKS(PT, MB))
    conv_direct_kernel(float *__restrict__ y, const float *__restrict__ x, const uint8_t *__restrict__ xu,
                       const nc_conv_lut lut, const float *__restrict__ k, const float *__restrict__ bias,
                       const direct_params d) {
    constexpr int KK = K * K, KK4 = (KK + 3) / 4 * 4, WN = PT + K - 1;
    extern __shared__ __align__(16) float smem[];
    const int C = d.C, H = d.H, W = d.W;
    const int RB = d.band_pr * PT + K - 1, WS = d.pc * PT + K - 1;
    const int G = (d.M + MB - 1) / MB;
    float *ws = smem;                                  // (G or 1, C, MB, KK4)
    float *xs = ws + (d.w_all ? G : 1) * C * MB * KK4; // (C, RB, WS)
    float *sl = xs + C * RB * WS;                      // (256), uint8 input only
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x;

    if (xu)
        for (int i = tid; i < 256; i += nt) sl[i] = lut.v[i];
    if (d.w_all) {
        for (int i = tid; i < G * C * MB * KK4; i += nt) {
            const int g = i / (C * MB * KK4), c = i / (MB * KK4) % C, mi = i / KK4 % MB, j = i % KK4;
            const int m = g * MB + mi;
            ws[i] = (m < d.M && j < KK) ? k[((size_t)m * C + c) * KK + j] : 0.0f;
        }
    }
    for (int item = (int)blockIdx.x; item < d.work; item += (int)gridDim.x) {
        const size_t b = (size_t)(item / d.bands);
        const int pr0 = item % d.bands * d.band_pr, r0 = pr0 * PT;
        __syncthreads(); /* the last item is done with xs (and the lut and weights are written) */
        /* DIRECT_STAGE loads a thread in flight at once, then their stores: one memory latency per batch instead
         * of one per element (the staging's wait on each load was the largest stall after the barrier: ncu, 2018
         * fall conv2, 2026-11-22). */
        for (int i0 = tid; i0 < C * RB * WS; i0 += DIRECT_STAGE * nt) {
            float v[DIRECT_STAGE];
#pragma unroll
            for (int u = 0; u < DIRECT_STAGE; u++) {
                const int i = i0 + u * nt;
                const int c = i / (RB * WS), r = i / WS % RB, s = i % WS, h = r0 + r;
                v[u] = 0.0f;
                if (i < C * RB * WS && h < H && s < W) {
                    const size_t at = ((b * C + c) * H + h) * W + s;
                    v[u] = xu ? sl[xu[at]] : x[at];
                }
            }
#pragma unroll
            for (int u = 0; u < DIRECT_STAGE; u++)
                if (i0 + u * nt < C * RB * WS) xs[i0 + u * nt] = v[u];
        }
        const int band_pr = min(d.band_pr, d.pr_total - pr0);
        const int patches = band_pr * d.pc;
        for (int m0 = 0; m0 < d.M; m0 += MB) {
            const float *wg = ws; /* this group's (C, MB, KK4) */
            if (d.w_all) {
                wg = ws + (m0 / MB) * C * MB * KK4;
                if (m0 == 0) __syncthreads(); /* xs is written */
            } else {
                __syncthreads(); /* the previous group is done with ws (and xs is written) */
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
                    const float *xw = xs + (c * RB + pr * PT) * WS + pc * PT; // the window's top left
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
    const size_t per_row = (size_t)C * WS * sizeof(float);
    /* Every group's weights once per block where they take at most DIRECT_W_ALL_MAX and leave room for a band
     * (all the zoo's first layers; the second layers run on conv_directc.cu's kernel); else one group
     * at a time, restaged for every band. */
    const size_t w_all = (size_t)G * C * MB * KK4 * sizeof(float), lut_b = x_u8 ? 256 * sizeof(float) : 0;
    d.w_all = w_all <= DIRECT_W_ALL_MAX && w_all + lut_b + per_row * (PT + K - 1) <= DIRECT_SMEM_MAX;
    const size_t fixed = (d.w_all ? w_all : (size_t)C * MB * KK4 * sizeof(float)) + lut_b;
    /* As many patch rows per block as fit, then no more than the output has. */
    long band = fixed + per_row * (PT + K - 1) <= DIRECT_SMEM_MAX
                    ? (long)((DIRECT_SMEM_MAX - fixed) / per_row - (K - 1)) / PT
                    : 0;
    if (band < 1)
        return nc_fail(err, NC_ERR_ARG,
                       "conv versions 5 and 6 (direct): one band of C = %d rows of %d pixels does not fit in %d KB "
                       "of shared memory (version 4 takes it)",
                       C, W, DIRECT_SMEM_MAX / 1024);
    if (band > d.pr_total) band = d.pr_total;
    d.band_pr = (int)band;
    d.bands = (d.pr_total + d.band_pr - 1) / d.band_pr;
    if ((long long)B * d.bands > 0x7FFFFFFF)
        return nc_fail(err, NC_ERR_ARG, "conv versions 5 and 6 (direct): %d images of %d bands is too many at once", B,
                       d.bands);
    d.work = B * d.bands;
    const int patches = d.band_pr * d.pc;
    int threads = (patches + 31) / 32 * 32;
    if (threads > DIRECT_MAX_THREADS) threads = DIRECT_MAX_THREADS;
    const size_t smem = fixed + per_row * (size_t)(d.band_pr * PT + K - 1);
    const direct_kernel_fn fn = direct_kernel_for(K, PT, MB);
    if (smem > 48 * 1024)
        CUDA_RET(cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    /* As many blocks as are resident at once, each taking work items in turn: the weights are staged once a
     * block, and one block's staging overlaps the others' arithmetic. */
    int device = 0, sms = 0, per_sm = 0;
    CUDA_RET(cudaGetDevice(&device));
    CUDA_RET(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, threads, smem));
    const long blocks = (long)sms * (per_sm > 0 ? per_sm : 1);
    static const nc_conv_lut no_lut = {{0}};
    fn<<<(unsigned)(blocks < d.work ? blocks : d.work), threads, smem, stream>>>(y, x, x_u8, lut ? *lut : no_lut, k,
                                                                                 bias, d);
    CUDA_LAUNCHED();
    return NC_OK;
}

int nc_conv_launch_direct(NC_CONV_LAUNCHER_ARGS) {
    const nc_conv_epilogue none = {EPI_NONE, EPI_NONE, 1, 1};
    return nc_conv_launch_fused(y, x, NULL, NULL, k, bias, B, C, H, W, M, K, &none, stream, err);
}
