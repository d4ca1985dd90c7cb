/*
 * Reductions over the input channels: versions 11 and 12, the course's "tree" and "atomic" rungs for C > 1.
 *
 * Versions 1 to 6 give each output's whole sum over c, p, q to one thread. Here the channels are split among S
 * slices of threads (S = 2, 4 or 8, the largest that C fills; 1 for C = 1): a block computes an 8 x 8 tile of
 * outputs for SPLITC_MB output channels of one image with 64 x S threads, and thread (slice s, position) sums the
 * channels c = s, s + S, ... over the K x K window, from the block's input tile and weights in shared memory. The S
 * partial sums of each output are then added:
 *
 *   11  splitc-tree: in shared memory, halving the slices each step (log2 S steps, a barrier each); slice 0 adds
 *       the bias and stores. Deterministic: the same sum in the same order on every run.
 *       nanoconv eval --model M --backend cuda --conv-kernel 11
 *   12  splitc-atomic: every slice atomicAdd()s its partial sum (slice 0 with the bias) into the output, zeroed
 *       first. No barrier, but the order of the S additions is the hardware's: the low bits may change from run to
 *       run (fp32 throughout; not bitwise reproducible).
 *       nanoconv eval --model M --backend cuda --conv-kernel 12
 *
 * Both are exact fp32 arithmetic (no reduced precision) summed in another order than the reference's, so within
 * rounding of it; both store the full convolution output (no fused epilogue: that is version 6's rung).
 */
#include "cuda/conv_ladder.h"
#include "cuda/cuda_check.h"

#define SPLITC_T 8  /* output tile edge */
#define SPLITC_MB 4 /* output channels a block computes */
#define SPLITC_KMAX 7
#define SPLITC_SMEM_MAX (96 * 1024)

/* Dynamic shared memory: xs (C, R, R) with R = SPLITC_T + K - 1, the input tile (zero past the image);
 * ws (SPLITC_MB, C, K, K), the block's channels' weights (zero past M); red (S / 2, 64, SPLITC_MB), the tree's
 * partial sums (version 11 only). */
template <int S, bool ATOMIC>
__global__ void __launch_bounds__(64 * S)
    conv_splitc_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ k,
                       const float *__restrict__ bias, int C, int H, int W, int M, int K, int b0) {
    extern __shared__ float smem[];
    const int R = SPLITC_T + K - 1, KK = K * K;
    float *xs = smem;
    float *ws = xs + C * R * R;
    float *red = ws + SPLITC_MB * C * KK;
    const int Ho = H - K + 1, Wo = W - K + 1;
    const int tiles_w = (Wo + SPLITC_T - 1) / SPLITC_T;
    const int h0 = (int)blockIdx.x / tiles_w * SPLITC_T, w0 = (int)blockIdx.x % tiles_w * SPLITC_T;
    const int m0 = (int)blockIdx.y * SPLITC_MB;
    const size_t b = (size_t)b0 + blockIdx.z;
    const int tid = (int)threadIdx.x;

    const float *xb = x + b * C * H * W;
    for (int i = tid; i < C * R * R; i += 64 * S) {
        const int c = i / (R * R), r = i / R % R, q = i % R;
        const int h = h0 + r, w = w0 + q;
        xs[i] = h < H && w < W ? xb[((size_t)c * H + h) * W + w] : 0.0f;
    }
    for (int i = tid; i < SPLITC_MB * C * KK; i += 64 * S) {
        const int mb = i / (C * KK);
        ws[i] = m0 + mb < M ? k[(size_t)(m0 + mb) * C * KK + i % (C * KK)] : 0.0f;
    }
    __syncthreads();

    const int pos = tid % 64, s = tid / 64;
    const int ph = pos / SPLITC_T, pw = pos % SPLITC_T;
    float acc[SPLITC_MB] = {};
    for (int c = s; c < C; c += S) {
        const float *xc = xs + (c * R + ph) * R + pw;
        const float *wc = ws + c * KK;
        for (int p = 0; p < K; p++)
            for (int q = 0; q < K; q++) {
                const float v = xc[p * R + q];
#pragma unroll
                for (int mb = 0; mb < SPLITC_MB; mb++) acc[mb] = fmaf(v, wc[mb * C * KK + p * K + q], acc[mb]);
            }
    }

    const int h = h0 + ph, w = w0 + pw;
    const bool inside = h < Ho && w < Wo;
    if constexpr (ATOMIC) {
        if (!inside) return;
#pragma unroll
        for (int mb = 0; mb < SPLITC_MB; mb++) {
            if (m0 + mb >= M) break;
            const float add = s == 0 && bias ? acc[mb] + bias[m0 + mb] : acc[mb];
            atomicAdd(&y[((b * M + m0 + mb) * Ho + h) * Wo + w], add);
        }
    } else {
        /* The tree: slices [half, 2 half) hand their sums to slices [0, half). */
#pragma unroll
        for (int half = S / 2; half >= 1; half /= 2) {
            if (s >= half && s < 2 * half) {
#pragma unroll
                for (int mb = 0; mb < SPLITC_MB; mb++) red[((s - half) * 64 + pos) * SPLITC_MB + mb] = acc[mb];
            }
            __syncthreads();
            if (s < half) {
#pragma unroll
                for (int mb = 0; mb < SPLITC_MB; mb++) acc[mb] += red[(s * 64 + pos) * SPLITC_MB + mb];
            }
            __syncthreads();
        }
        if (s != 0 || !inside) return;
#pragma unroll
        for (int mb = 0; mb < SPLITC_MB; mb++)
            if (m0 + mb < M) y[((b * M + m0 + mb) * Ho + h) * Wo + w] = bias ? acc[mb] + bias[m0 + mb] : acc[mb];
    }
}

/* The slices C fills: the largest of 8, 4, 2 not above C (1 for C = 1). */
static int splitc_slices(int C) {
    return C >= 8 ? 8 : C >= 4 ? 4 : C >= 2 ? 2 : 1;
}

static size_t splitc_smem(int C, int K, int S, bool atomic) {
    const size_t R = SPLITC_T + K - 1;
    return sizeof(float) *
           ((size_t)C * R * R + (size_t)SPLITC_MB * C * K * K + (atomic ? 0 : (size_t)(S / 2) * 64 * SPLITC_MB));
}

template <int S, bool ATOMIC>
static int splitc_launch(float *y, const float *x, const float *k, const float *bias, int B, int C, int H, int W, int M,
                         int K, size_t smem, cudaStream_t stream, nc_error *err) {
    CUDA_RET(
        cudaFuncSetAttribute(conv_splitc_kernel<S, ATOMIC>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const int Ho = H - K + 1, Wo = W - K + 1;
    const unsigned tiles = (unsigned)((Ho + SPLITC_T - 1) / SPLITC_T) * (unsigned)((Wo + SPLITC_T - 1) / SPLITC_T);
    for (int b0 = 0; b0 < B; b0 += 65535) {
        const dim3 grid(tiles, (unsigned)((M + SPLITC_MB - 1) / SPLITC_MB),
                        (unsigned)(B - b0 < 65535 ? B - b0 : 65535));
        conv_splitc_kernel<S, ATOMIC><<<grid, 64 * S, smem, stream>>>(y, x, k, bias, C, H, W, M, K, b0);
        CUDA_LAUNCHED();
    }
    return NC_OK;
}

template <bool ATOMIC> static int splitc_forward(NC_CONV_LAUNCHER_ARGS) {
    const int version = ATOMIC ? 12 : 11;
    if (K > SPLITC_KMAX)
        return nc_fail(err, NC_ERR_ARG, "conv version %d takes K up to %d, not %d (version 1 takes any)", version,
                       SPLITC_KMAX, K);
    if (M > 65535 * SPLITC_MB)
        return nc_fail(err, NC_ERR_ARG, "conv version %d takes M up to %d, not %d", version, 65535 * SPLITC_MB, M);
    const int S = splitc_slices(C);
    const size_t smem = splitc_smem(C, K, S, ATOMIC);
    if (smem > SPLITC_SMEM_MAX)
        return nc_fail(err, NC_ERR_ARG,
                       "conv version %d stages %d channels of %dx%d input and weights in %zu bytes of shared memory, "
                       "more than its %d (version 5 takes this layer)",
                       version, C, SPLITC_T + K - 1, SPLITC_T + K - 1, smem, SPLITC_SMEM_MAX);
    if (ATOMIC) CUDA_RET(cudaMemsetAsync(y, 0, sizeof(float) * B * M * (H - K + 1) * (W - K + 1), stream));
    switch (S) {
    case 8: return splitc_launch<8, ATOMIC>(y, x, k, bias, B, C, H, W, M, K, smem, stream, err);
    case 4: return splitc_launch<4, ATOMIC>(y, x, k, bias, B, C, H, W, M, K, smem, stream, err);
    case 2: return splitc_launch<2, ATOMIC>(y, x, k, bias, B, C, H, W, M, K, smem, stream, err);
    default: return splitc_launch<1, ATOMIC>(y, x, k, bias, B, C, H, W, M, K, smem, stream, err);
    }
}

extern "C" int nc_conv_launch_splitc_tree(NC_CONV_LAUNCHER_ARGS) {
    return splitc_forward<false>(y, x, k, bias, B, C, H, W, M, K, stream, err);
}

extern "C" int nc_conv_launch_splitc_atomic(NC_CONV_LAUNCHER_ARGS) {
    return splitc_forward<true>(y, x, k, bias, B, C, H, W, M, K, stream, err);
}
