/*
 * Convolution version 2, "tiled": the course's tiled shared-memory kernel with
 * the weights in constant memory.
 *
 *   nanoconv eval --model M --backend cuda --conv-kernel 2
 *   nanoconv bench --model M            (its row "v2 tiled")
 *
 * A block of 16 x 16 threads computes a 16 x 16 tile of the output for
 * TILED_MB output channels of one image. For each input channel it stages the
 * (16+K-1)^2 input pixels the tile needs in shared memory once, so that each
 * is read from global memory once rather than K*K times; every thread then
 * reads its K x K window from shared memory and reuses it for its TILED_MB
 * channels. The weights are the same for every thread of the block at each
 * step, so constant memory's broadcast serves them with no shared memory.
 *
 * The weights go to constant memory with a copy on the launch's stream, so the
 * launch and the copy are ordered; two streams running version 2 on different
 * weights at once would race on the one constant buffer (the cuda backend runs
 * one stream per session, and one session per device at a time).
 */
#include "cuda/conv_ladder.h"
#include "cuda/cuda_check.h"

#define TILED_T 16
#define TILED_MB 4
/* 64 KB of constant memory: every zoo layer fits (the largest, 24 x 12 x 7 x 7, is 14112 floats). */
#define TILED_MAX_WEIGHTS 16384

__constant__ float c_tiled_weights[TILED_MAX_WEIGHTS]; // (M, C, K, K)

/* Grid (tiles, ceil(M / TILED_MB), images in this slice); dynamic shared memory (16+K-1)^2 floats. */
__global__ void __launch_bounds__(TILED_T *TILED_T)
    conv_tiled_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ bias, int C, int H,
                      int W, int M, int K, int b0) {
    extern __shared__ float tile[]; // (TILED_T+K-1, TILED_T+K-1) of one input channel
    const int Ho = H - K + 1, Wo = W - K + 1, T = TILED_T + K - 1;
    const int w_tiles = (Wo + TILED_T - 1) / TILED_T;
    const int h0 = (int)(blockIdx.x / w_tiles) * TILED_T, w0 = (int)(blockIdx.x % w_tiles) * TILED_T;
    const int ty = (int)threadIdx.y, tx = (int)threadIdx.x;
    const size_t b = (size_t)b0 + blockIdx.z;
    const int m0 = (int)blockIdx.y * TILED_MB;
    float acc[TILED_MB];
#pragma unroll
    for (int i = 0; i < TILED_MB; i++) acc[i] = 0.0f;
    for (int c = 0; c < C; c++) {
        const float *xc = x + (b * C + c) * H * W; // (H, W)
        __syncthreads();
        for (int i = ty * TILED_T + tx; i < T * T; i += TILED_T * TILED_T) {
            const int r = h0 + i / T, s = w0 + i % T;
            tile[i] = (r < H && s < W) ? xc[r * W + s] : 0.0f;
        }
        __syncthreads();
        for (int p = 0; p < K; p++) {
            for (int q = 0; q < K; q++) {
                const float v = tile[(ty + p) * T + tx + q];
#pragma unroll
                for (int i = 0; i < TILED_MB; i++) {
                    /* Channels past M read weight 0 of the first (any valid index) and are not stored. */
                    const int m = m0 + i < M ? m0 + i : 0;
                    acc[i] = fmaf(v, c_tiled_weights[((m * C + c) * K + p) * K + q], acc[i]);
                }
            }
        }
    }
    const int h = h0 + ty, w = w0 + tx;
    if (h >= Ho || w >= Wo) return;
#pragma unroll
    for (int i = 0; i < TILED_MB; i++) {
        const int m = m0 + i;
        if (m < M) y[((b * M + m) * Ho + h) * Wo + w] = bias ? acc[i] + bias[m] : acc[i];
    }
}

int nc_conv_launch_tiled(NC_CONV_LAUNCHER_ARGS) {
    const size_t nk = (size_t)M * C * K * K;
    if (nk > TILED_MAX_WEIGHTS)
        return nc_fail(err, NC_ERR_ARG,
                       "conv version 2 (tiled) keeps the weights in 64 KB of constant memory: M*C*K*K = %zu floats "
                       "is over %d (version 4 or 5 takes any size)",
                       nk, TILED_MAX_WEIGHTS);
    const int Ho = H - K + 1, Wo = W - K + 1, T = TILED_T + K - 1;
    const size_t smem = (size_t)T * T * sizeof(float);
    if (smem > 48 * 1024)
        return nc_fail(err, NC_ERR_ARG, "conv version 2 (tiled): K = %d makes a %zu-byte input tile (most 48 KB)", K,
                       smem);
    CUDA_RET(cudaMemcpyToSymbolAsync(c_tiled_weights, k, nk * sizeof(float), 0, cudaMemcpyDeviceToDevice, stream));
    const unsigned tiles = (unsigned)((Ho + TILED_T - 1) / TILED_T) * (unsigned)((Wo + TILED_T - 1) / TILED_T);
    const unsigned mgroups = (unsigned)((M + TILED_MB - 1) / TILED_MB);
    for (int b0 = 0; b0 < B; b0 += 65535) {
        const dim3 grid(tiles, mgroups, (unsigned)(B - b0 < 65535 ? B - b0 : 65535));
        conv_tiled_kernel<<<grid, dim3(TILED_T, TILED_T), smem, stream>>>(y, x, bias, C, H, W, M, K, b0);
        CUDA_LAUNCHED();
    }
    return NC_OK;
}
