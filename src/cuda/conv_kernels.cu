/*
 * The convolution ladder: every version of the forward convolution kernel,
 * numbered, each with its own launcher, behind one dispatcher on the version
 * number (`--conv-kernel V`). A version keeps its number for good, so that its
 * figures in docs/PERFORMANCE.md can be traced back to its code.
 *
 *   1  naive: one thread per output element, the course's first GPU kernel.
 *      nanoconv eval --model M --backend cuda --conv-kernel 1
 *   2  tiled: shared-memory input tile, weights in constant memory (conv_tiled.cu)
 *   3  unroll+gemm: im2col, then a shared-memory tiled matrix multiply, two kernels (conv_gemm.cu)
 *   4  implicit-gemm: the unroll fused into a register-tiled matrix multiply (conv_gemm.cu)
 *   5  direct: register-tiled direct convolution, K at compile time (conv_direct.cu; several channels of float
 *      input: conv_directc.cu)
 *   6  fused: version 5 with bias + activation + pooling in the epilogue and uint8 input (the same files)
 *   7  tc-tf32: C = 1 layers on TF32 tensor cores, fused; reduced precision, opt-in (conv_tc.cu)
 *   8  tc-3xtf32: version 7 with split operands, near-exact (~1e-6 relative; conv_tc.cu)
 *   9  tc-fp16: version 7 on fp16 tensor cores (m16n8k16, fp32 sums); reduced precision, opt-in (conv_tc.cu)
 *  10  tc-bf16: version 7 on bf16 tensor cores (m16n8k16, fp32 sums); reduced precision, opt-in (conv_tc.cu)
 *  11  splitc-tree: input channels split among slices of threads, partial sums added by a shared-memory tree
 *      (conv_splitc.cu)
 *  12  splitc-atomic: the same, partial sums atomicAdd()ed into the output: fp32, not bitwise reproducible
 *      (conv_splitc.cu)
 *  13  direct-rows: version 5 with each thread's outputs a row of four (2 x 2 in version 5), stored as one 16-byte
 *      word a channel, so that a warp writes whole runs of y; the convolution alone (conv_direct.cu; several
 *      channels of float input: conv_directc.cu, as version 5)
 *  14  direct-tiles: version 5 with each thread's outputs two rows of four for 4 channels, the weights tap-major (a
 *      tap's four channels one 16-byte load, for 32 multiply-adds), the window's rows loaded as the taps reach them;
 *      fused as version 6 is, a tile then two 2/2 pooling windows side by side (conv_direct.cu; 4/4 pooling as
 *      version 6; several channels of float input: conv_directc.cu, as versions 5 and 6)
 *  15  winograd: Winograd's minimal filtering in fp32, a kernel a layer shape: F(4 x 4, 5 x 5) for the zoo's K = 5
 *      second layers (64 multiply-adds a tile of 16 outputs, channel and output channel, 400 direct; errors about 5
 *      times the direct sum's), alone or fused; F(4, 5) along the rows for 2017's, 2018 spring's and 2019 spring's
 *      first layers (8 multiply-adds a kernel row and window of four outputs, 20 direct; errors about 2.5 times), on
 *      uint8 pixels too; F(4, 7) along the rows for the K = 7 second layers and 2018 fall's and 2020's first layers
 *      fused as their networks run them (10 multiply-adds a channel, kernel row and window of four outputs, 28
 *      direct; errors about 5 to 7 times); never the reference's sums (conv_wino.cu)
 *   Each file's header comment gives the command that runs its versions; conv_ladder.h declares them.
 *
 * Semantics (every version): y is (B, M, H-K+1, W-K+1), x is (B, C, H, W),
 * k is (M, C, K, K), bias is (M) or NULL;
 * y[b][m][h][w] = sum over c, p, q of x[b][c][h+p][w+q] * k[m][c][p][q] (+ bias[m]),
 * checked against nc_ref_conv by tests/gpu/test_gpu_layers.c.
 */
#include <stdio.h>
#include <string.h>

#include "cuda/conv_ladder.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_layers.h"
#include "nc_kernels_id.h" /* generated: cmake/kernels_id.cmake */

/* ------------------------------------------------------------- version 1 */

/* Output tile edge of version 1: a block of 16 x 16 threads covers a 16 x 16 tile of one output map. */
#define CONV1_TILE 16

/* One thread per output element y[b][m][h][w]: block (x, y) = (w, h) within the
 * tile, grid (tile, m - m0, b - b0). It reads its K x K window of every input
 * channel straight from global memory, as the course's naive kernel did. */
__global__ void conv_forward_kernel1(float *y, const float *x, const float *k, const float *bias, int C, int H, int W,
                                     int M, int K, int b0, int m0) {
    const int Ho = H - K + 1, Wo = W - K + 1;
    const int w_tiles = (Wo + CONV1_TILE - 1) / CONV1_TILE;
    const int h = (int)(blockIdx.x / w_tiles) * CONV1_TILE + (int)threadIdx.y;
    const int w = (int)(blockIdx.x % w_tiles) * CONV1_TILE + (int)threadIdx.x;
    const size_t b = (size_t)b0 + blockIdx.z;
    const int m = m0 + (int)blockIdx.y;
    if (h >= Ho || w >= Wo) return;
    float acc = 0.0f;
    for (int c = 0; c < C; c++) {
        const float *xc = x + (b * C + c) * H * W;         // (H, W)
        const float *kc = k + ((size_t)m * C + c) * K * K; // (K, K)
        for (int p = 0; p < K; p++)
            for (int q = 0; q < K; q++) acc += xc[(h + p) * W + (w + q)] * kc[p * K + q];
    }
    y[((b * M + m) * Ho + h) * Wo + w] = bias ? acc + bias[m] : acc;
}

/* Grid y and z are limited to 65535, so a large batch (or M) is covered in slices. */
static int conv_launch1(float *y, const float *x, const float *k, const float *bias, int B, int C, int H, int W, int M,
                        int K, cudaStream_t stream, nc_error *err) {
    const int Ho = H - K + 1, Wo = W - K + 1;
    const unsigned tiles =
        (unsigned)((Ho + CONV1_TILE - 1) / CONV1_TILE) * (unsigned)((Wo + CONV1_TILE - 1) / CONV1_TILE);
    const dim3 block(CONV1_TILE, CONV1_TILE);
    for (int b0 = 0; b0 < B; b0 += 65535) {
        for (int m0 = 0; m0 < M; m0 += 65535) {
            const dim3 grid(tiles, (unsigned)(M - m0 < 65535 ? M - m0 : 65535),
                            (unsigned)(B - b0 < 65535 ? B - b0 : 65535));
            conv_forward_kernel1<<<grid, block, 0, stream>>>(y, x, k, bias, C, H, W, M, K, b0, m0);
            CUDA_LAUNCHED();
        }
    }
    return NC_OK;
}

/* ------------------------------------------------------------ dispatcher */

typedef int (*conv_launcher)(float *y, const float *x, const float *k, const float *bias, int B, int C, int H, int W,
                             int M, int K, cudaStream_t stream, nc_error *err);

typedef struct {
    const char *name;
    const char *note; /* Op Time's note: says "fused ..." only where the kernel fuses */
    int precision;    /* NC_PRECISION_*: what the tensor cores round to; fp32 for the exact versions */
    int reproducible; /* the same bits on every run (not so where atomics decide the order of a sum) */
    conv_launcher launch;
    const void *kernel; /* loaded by nc_cuda_conv_prepare */
} conv_version;

static const conv_version versions[] = {
    {"naive", "", NC_PRECISION_FP32, 1, conv_launch1, (const void *)conv_forward_kernel1},
    /* Versions 2..15 pick among several kernels at launch: no one kernel to load ahead (kernel NULL). */
    {"tiled", "", NC_PRECISION_FP32, 1, nc_conv_launch_tiled, NULL},
    {"unroll+gemm", "", NC_PRECISION_FP32, 1, nc_conv_launch_unroll_gemm, NULL},
    {"implicit-gemm", "", NC_PRECISION_FP32, 1, nc_conv_launch_implicit_gemm, NULL},
    {"direct", "", NC_PRECISION_FP32, 1, nc_conv_launch_direct, NULL},
    {"fused", "", NC_PRECISION_FP32, 1, nc_conv_launch_direct, NULL}, /* the backend notes each layer it fuses */
    /* Reduced precision: the note says so (C > 1 layers are version 5's and 6's, in fp32). */
    {"tc-tf32", "tf32", NC_PRECISION_TF32, 1, nc_conv_launch_tf32, NULL},
    {"tc-3xtf32", "3xtf32", NC_PRECISION_3XTF32, 1, nc_conv_launch_3xtf32, NULL},
    {"tc-fp16", "fp16", NC_PRECISION_FP16, 1, nc_conv_launch_fp16, NULL},
    {"tc-bf16", "bf16", NC_PRECISION_BF16, 1, nc_conv_launch_bf16, NULL},
    /* Reductions over the input channels, fp32. */
    {"splitc-tree", "", NC_PRECISION_FP32, 1, nc_conv_launch_splitc_tree, NULL},
    {"splitc-atomic", "", NC_PRECISION_FP32, 0, nc_conv_launch_splitc_atomic, NULL},
    /* Version 5 with a row of four outputs a thread, one layer at a time (not fused). */
    {"direct-rows", "", NC_PRECISION_FP32, 1, nc_conv_launch_direct_rows, NULL},
    /* Version 5 with two rows of four outputs a thread and the weights tap-major; the backend fuses its epilogue as
     * version 6's (nc_conv_launch_fused_rows). */
    {"direct-tiles", "", NC_PRECISION_FP32, 1, nc_conv_launch_direct_tiles, NULL},
    /* Winograd's minimal filtering, fp32 with its own rounding; fused by the backend as version 14 is (rows 3). */
    {"winograd", "", NC_PRECISION_FP32, 1, nc_conv_launch_winograd, NULL},
};
#define N_VERSIONS ((int)(sizeof versions / sizeof versions[0]))

extern "C" int nc_cuda_conv_num_versions(void) {
    return N_VERSIONS;
}

extern "C" const char *nc_cuda_kernels_id(void) {
    return NC_CUDA_KERNELS_ID;
}

extern "C" const char *nc_cuda_conv_version_name(int version) {
    return version >= 1 && version <= N_VERSIONS ? versions[version - 1].name : NULL;
}

/* The versions whose launches run a kernel of each name (conv_ladder.h's families): 5, 6, 13 and 14 share
 * conv_direct.cu's and conv_directc.cu's kernels. The tensor-core versions leave the layers they do not take to
 * version 6's kernels, and the cuda backend says so (nc_timing's conv_version is 6 there). */
#define V(v) (1u << (v))
static const struct {
    const char *name;
    unsigned versions;
} kernel_families[] = {
    {"conv_forward_kernel1", V(1)},
    {"conv_tiled_kernel", V(2)},
    {"conv_unroll_kernel", V(3)},
    {"conv_gemm3_kernel", V(3)},
    {"conv_igemm_kernel", V(4)},
    {"conv_direct_kernel", V(5) | V(6) | V(13) | V(14)},
    {"conv_directc_kernel", V(5) | V(6) | V(13) | V(14)},
    {"conv_tc_kernel", V(7) | V(8) | V(9) | V(10)},
    {"conv_tcc_kernel", V(7) | V(8) | V(9) | V(10)},
    {"conv_splitc_kernel", V(11) | V(12)},
    {"conv_wino_kernel", V(15)},
    {"conv_wino_rows_kernel", V(15)},
    {"conv_wino_rows7_kernel", V(15)},
};
#undef V

extern "C" unsigned nc_cuda_conv_kernel_versions(const char *name) {
    if (!strncmp(name, "void ", 5)) name += 5;
    const size_t len = strcspn(name, "<(");
    for (size_t i = 0; i < sizeof kernel_families / sizeof kernel_families[0]; i++)
        if (strlen(kernel_families[i].name) == len && !strncmp(name, kernel_families[i].name, len))
            return kernel_families[i].versions;
    return 0;
}

extern "C" const char *nc_cuda_conv_version_note(int version) {
    return version >= 1 && version <= N_VERSIONS ? versions[version - 1].note : "";
}

extern "C" int nc_cuda_conv_version_precision(int version) {
    return version >= 1 && version <= N_VERSIONS ? versions[version - 1].precision : NC_PRECISION_FP32;
}

extern "C" int nc_cuda_conv_version_reproducible(int version) {
    return version >= 1 && version <= N_VERSIONS && versions[version - 1].reproducible;
}

extern "C" const char *nc_precision_name(int precision) {
    static const char *const names[NC_PRECISION_COUNT] = {"fp32", "tf32", "3xtf32", "fp16", "bf16"};
    return precision >= 0 && precision < NC_PRECISION_COUNT ? names[precision] : NULL;
}

extern "C" int nc_cuda_conv_resolve(int *version, nc_error *err) {
    if (*version == 0) *version = NC_CUDA_CONV_DEFAULT;
    if (*version >= 1 && *version <= N_VERSIONS) return NC_OK;
    char list[256] = "";
    for (int v = 1; v <= N_VERSIONS; v++) {
        const size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%d (%s)", v > 1 ? ", " : "", v, versions[v - 1].name);
    }
    return nc_fail(err, NC_ERR_ARG,
                   "--conv-kernel %d: no such convolution kernel version (valid: %s; 0, the default: the fastest "
                   "exact version for each layer's shape, timed once and cached)",
                   *version, list);
}

extern "C" int nc_cuda_conv_prepare(int version, nc_error *err) {
    int rc = nc_cuda_conv_resolve(&version, err);
    if (rc) return rc;
    cudaFuncAttributes attr;
    if (versions[version - 1].kernel) CUDA_RET(cudaFuncGetAttributes(&attr, versions[version - 1].kernel));
    return NC_OK;
}

extern "C" int nc_cuda_conv_forward(int version, float *y, const float *x, const float *k, const float *bias, int B,
                                    int C, int H, int W, int M, int K, cudaStream_t stream, nc_error *err) {
    int rc = nc_cuda_conv_resolve(&version, err);
    if (rc) return rc;
    if (B <= 0) return NC_OK;
    return versions[version - 1].launch(y, x, k, bias, B, C, H, W, M, K, stream, err);
}
