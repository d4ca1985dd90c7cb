/*
 * The launchers of the convolution ladder's versions 2 and up, one file per
 * kernel family, registered in conv_kernels.cu's versions[] table (which keeps
 * version 1, the naive kernel, and the dispatcher). CUDA sources only.
 *
 *   conv_tiled.cu   2  tiled: shared-memory input tile, weights in constant memory
 *   conv_gemm.cu    3  unroll+gemm: im2col kernel, then a shared-memory tiled matrix multiply (two kernels)
 *                   4  implicit-gemm: the unroll fused into the multiply's shared-memory tile, 4 x 4 register tiles
 *   conv_direct.cu  5  direct: register-tiled direct convolution, K known at compile time, __restrict__, unrolled
 *                   6  fused: version 5 with bias + activation + pooling in the epilogue, input read as uint8
 *   conv_directc.cu 5, 6 on layers of several channels: channel planes copied by cp.async ahead of the arithmetic
 *   conv_tc.cu      7  tc-tf32: fused, implicit GEMM on mma.sync TF32 tensor cores (reduced precision)
 *                   8  tc-3xtf32: version 7 with split weights (and split float inputs): near-exact
 *                   9  tc-fp16: version 7 on mma.sync fp16 (m16n8k16, fp32 sums; reduced precision)
 *                  10  tc-bf16: version 7 on mma.sync bf16 (m16n8k16, fp32 sums; reduced precision)
 *   conv_wino.cu   15  winograd: F(4 x 4, 5 x 5) minimal filtering in fp32 (K = 5 second layers), F(4, 5) along
 *                      the rows (2017's, 2018 spring's and 2019 spring's first layers, fused and alone, but 2018
 *                      spring's fused, F(6, 5); 2019 fall's, fused), F(4, 7) along the rows (K = 7 second layers and
 *                      2018 fall's and 2020's first layers, fused and alone); its own bits
 *
 * Every launcher computes y (B, M, H-K+1, W-K+1) from x (B, C, H, W), k (M, C, K, K) and bias (M) or NULL,
 * enqueued on `stream` (C linkage, so that tests/gpu/test_conv_ladder.c calls them too); it fails with NC_ERR_ARG for a
 * shape it does not take (saying which version does).
 */
#ifndef NC_CONV_LADDER_H
#define NC_CONV_LADDER_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "core/model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NC_CONV_LAUNCHER_ARGS                                                                                          \
    float *y, const float *x, const float *k, const float *bias, int B, int C, int H, int W, int M, int K,             \
        cudaStream_t stream, nc_error *err

int nc_conv_launch_tiled(NC_CONV_LAUNCHER_ARGS);
int nc_conv_launch_unroll_gemm(NC_CONV_LAUNCHER_ARGS);
int nc_conv_launch_implicit_gemm(NC_CONV_LAUNCHER_ARGS);
int nc_conv_launch_direct(NC_CONV_LAUNCHER_ARGS);
int nc_conv_launch_tf32(NC_CONV_LAUNCHER_ARGS);
int nc_conv_launch_3xtf32(NC_CONV_LAUNCHER_ARGS);
int nc_conv_launch_fp16(NC_CONV_LAUNCHER_ARGS);
int nc_conv_launch_bf16(NC_CONV_LAUNCHER_ARGS);
int nc_conv_launch_splitc_tree(NC_CONV_LAUNCHER_ARGS);
int nc_conv_launch_splitc_atomic(NC_CONV_LAUNCHER_ARGS);
int nc_conv_launch_direct_rows(NC_CONV_LAUNCHER_ARGS);  /* version 13 */
int nc_conv_launch_direct_tiles(NC_CONV_LAUNCHER_ARGS); /* version 14 */
int nc_conv_launch_winograd(NC_CONV_LAUNCHER_ARGS);     /* version 15 */

/* What a fused version applies to the convolution's output before the one store: bias (in the launcher's
 * arguments), then the activation, then the pooling. */
typedef struct nc_conv_epilogue {
    int act;  /* NC_TANH, NC_RELU, NC_SIGMOID, or -1 for none */
    int pool; /* NC_MAXPOOL, NC_AVGPOOL, or -1 for none */
    int P, S; /* pooling window and stride (fused only where P == S, 2 or 4) */
} nc_conv_epilogue;

/* Whether version 6 can fuse this epilogue after a K x K convolution. */
int nc_conv_direct_fuses(const nc_conv_epilogue *e, int K);

/* How uint8 pixels become the floats the model computes on: lut[p] is nc_scale_pixel(m, p), so that the bits are
 * the CPU's. */
typedef struct nc_conv_lut {
    float v[256];
} nc_conv_lut;

/* Version 6: the convolution, bias, activation and pooling in one kernel; the full-size convolution output never
 * goes to memory. Input either float x (B, C, H, W) or, where x_u8 is not NULL, uint8 pixels x_u8 (B, C, H, W)
 * turned into floats through lut as they are staged (x is then ignored). y is (B, M, Hp, Wp) with
 * Hp = (H-K+1-P)/S+1, Wp likewise (or the convolution's own size without pooling). */
int nc_conv_launch_fused(float *y, const float *x, const uint8_t *x_u8, const nc_conv_lut *lut, const float *k,
                         const float *bias, int B, int C, int H, int W, int M, int K, const nc_conv_epilogue *e,
                         cudaStream_t stream, nc_error *err);
/* The same with other patches: rows = 0, version 6 (nc_conv_launch_fused); rows = 1, a row of four outputs a thread
 * where the layer is unpooled (version 13's; pooled, version 6's patches); rows = 2, version 14 fused: two rows of
 * four a thread, unpooled or under 2/2 pooling (two pooling windows side by side; 4/4 pooling and several channels
 * on float input as version 6). The same bits as version 6. rows = 3: version 15, Winograd's minimal filtering
 * (nc_conv_launch_wino_fused: its own bits; NC_ERR_ARG for what nc_conv_wino_takes refuses). */
int nc_conv_launch_fused_rows(float *y, const float *x, const uint8_t *x_u8, const nc_conv_lut *lut, const float *k,
                              const float *bias, int B, int C, int H, int W, int M, int K, const nc_conv_epilogue *e,
                              int rows, cudaStream_t stream, nc_error *err);
/* The fp32 versions that fuse an epilogue, 6, 14 and 15: their rows for nc_conv_launch_fused_rows (0, 2 and 3), else
 * -1. */
int nc_conv_fused_rows_of(int version);

/* Versions 5 and 6 on layers of several channels (conv_directc.cu; nc_conv_launch_fused calls it for float input
 * where it takes the layer): C > 1, K = 3..7, an epilogue nc_conv_direct_fuses takes, a tile of every channel group
 * within a team of at most 128 threads (M up to 1024, or 512 under 4/4 pooling), and the weights (C K K M floats, M
 * rounded up to 8 or 4) with a team's ring of three planes of one tile row within 160 KB of shared memory. The
 * launcher takes nc_conv_launch_fused's arguments and result, float input only; NC_ERR_ARG for a layer it does not
 * take. */
int nc_conv_directc_takes(int C, int H, int W, int M, int K, const nc_conv_epilogue *e);
int nc_conv_launch_directc(float *y, const float *x, const float *k, const float *bias, int B, int C, int H, int W,
                           int M, int K, const nc_conv_epilogue *e, cudaStream_t stream, nc_error *err);

/* Version 15 (conv_wino.cu): Winograd's minimal filtering in fp32, its own bits (errors 2 to 7 times the direct
 * sum's). It takes the layers it has a kernel for, with any activation version 6 fuses: F(4 x 4, 5 x 5) on float
 * input (pixels 0) of 12 x 33 x 33 -> 24 and 6 x 22 x 22 -> 16, K = 5, alone or pooled 2/2 (max or average), and
 * 6 x 30 x 30 -> 16 alone; F(4, 7) along the rows on 12 x 33 x 33 -> 24 pooled 2/2 and 4 x 40 x 40 -> 16 pooled
 * 4/4, K = 7 (max or average), and on both alone (no activation); F(4, 5) along the rows on 2017's first layer,
 * 1 x 28 x 28 -> 50, on uint8 pixels (pixels 1) or floats, alone or pooled 2/2; on uint8 pixels or floats, fused as
 * their networks run them, F(6, 5) along the rows on 2018 spring's, 1 x 64 x 64 -> 6 (alone: F(4, 5)), F(4, 5) on
 * 2019 spring's, 1 x 48 x 48 -> 6, and F(4, 7) on 2018 fall's, 1 x 72 x 72 -> 12 (tanh and 2/2 max pooling only), and
 * 2020's, 1 x 86 x 86 -> 4 (any activation, 2/2 pooling), and each of these four alone on floats; F(4, 5) along the
 * rows on 2019 fall's, 1 x 70 x 70 -> 12, on uint8 pixels or floats, fused only (tanh and 2/2 max pooling). The
 * launcher takes nc_conv_launch_fused's arguments; NC_ERR_ARG for a layer it does not take, and on a first layer for y
 * not 16-byte aligned. */
int nc_conv_wino_takes(int C, int H, int W, int M, int K, const nc_conv_epilogue *e, int pixels);
int nc_conv_launch_wino_fused(float *y, const float *x, const uint8_t *x_u8, const nc_conv_lut *lut, const float *k,
                              const float *bias, int B, int C, int H, int W, int M, int K, const nc_conv_epilogue *e,
                              cudaStream_t stream, nc_error *err);

/* Whether version `version` (7..10, conv_tc.cu) runs this layer on the tensor cores: K = 3..7, pooling none or 2/2,
 * and either C = 1, M <= 256 and one float image's buffers (its staged tile and two copies) within 192 KB, or
 * C > 1 at versions 7, 9 and 10 on float input (pixels 0: not uint8 pixels), M <= 32 and the weights' fragments
 * with an image's staged tiles and copy within 227 KB. */
int nc_conv_tc_takes(int version, int C, int H, int W, int M, int K, const nc_conv_epilogue *e, int pixels);

/* Versions 7 (tf32), 8 (3xtf32), 9 (fp16) and 10 (bf16): nc_conv_launch_fused's arguments and result, on the
 * tensor cores where nc_conv_tc_takes says so and x_u8 (where not NULL) is 4-byte aligned, else by version 6 itself.
 * The default tuning (the first of nc_conv_tc_tunings). */
int nc_conv_launch_tc(int version, float *y, const float *x, const uint8_t *x_u8, const nc_conv_lut *lut,
                      const float *k, const float *bias, int B, int C, int H, int W, int M, int K,
                      const nc_conv_epilogue *e, cudaStream_t stream, nc_error *err);

/* Launch parameters of the tensor-core versions that `nanoconv bench --sweep` varies. Results do not depend on
 * them: every tuning gives the same bits (tests/gpu/test_conv_tc.c checks it). */
typedef struct nc_conv_tc_tuning {
    int images_per_block; /* images a block stages and computes between two barriers, 1..16; an upper bound: halved
                             at launch until every block has two such groups (where the batch allows) and it costs no
                             resident block an SM against 1 */
} nc_conv_tc_tuning;

/* The tunings the tensor-core versions are built with, *n of them; the first is nc_conv_launch_tc's. */
const nc_conv_tc_tuning *nc_conv_tc_tunings(int *n);

/* How nc_conv_launch_tc_tuned would run a layer (nc_conv_tc_describe). */
typedef struct nc_conv_tc_launch {
    int tensor_cores;     /* 0: version 6 runs it (the other fields 0) */
    int fixed_shape;      /* > 0: the layer runs on a kernel compiled for its shape (conv_tc.cu's tc_fixed_layer) */
    int images_per_block; /* the tuning's, as lowered for the batch and the shared memory */
    int blocks, threads;  /* the grid */
    size_t shared_bytes;  /* a block's dynamic shared memory */
} nc_conv_tc_launch;

/* What version 7..10 with `tuning` (NULL: the default) would launch for these arguments of nc_conv_launch_tc (y and
 * x_u8 only for their alignment; x_u8 NULL: float input); launches nothing. An error only for a bad version or
 * tuning, or from CUDA. */
int nc_conv_tc_describe(int version, const nc_conv_tc_tuning *tuning, const float *y, const uint8_t *x_u8, int B, int C,
                        int H, int W, int M, int K, const nc_conv_epilogue *e, nc_conv_tc_launch *out, nc_error *err);

/* nc_conv_launch_tc with the given tuning (one of nc_conv_tc_tunings'; NULL: the default). */
int nc_conv_launch_tc_tuned(int version, const nc_conv_tc_tuning *tuning, float *y, const float *x, const uint8_t *x_u8,
                            const nc_conv_lut *lut, const float *k, const float *bias, int B, int C, int H, int W,
                            int M, int K, const nc_conv_epilogue *e, cudaStream_t stream, nc_error *err);

#ifdef __cplusplus
}
#endif
#endif
