/*
 * The GPU layers: launchers of our own kernels, with C linkage, on device
 * pointers. The cuda backend strings them together; tests/gpu/test_gpu_layers.c
 * checks each one against the CPU reference (src/cpu/ref.h), whose semantics
 * they share. Every launcher enqueues its work on `stream`, checks the launch
 * and returns NC_OK or an error code with err filled; none synchronises.
 */
#ifndef NC_CUDA_LAYERS_H
#define NC_CUDA_LAYERS_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------ convolution (conv_kernels.cu) */

/* The version a 0 means where nothing times the versions (nc_cuda_conv_resolve: the layer API, a single layer's
 * run): 6 (fused). The cuda backend's `--conv-kernel 0` is instead the fastest exact version for each layer's shape,
 * timed once on the machine and cached (backend_cuda.cu, conv_autotune.cu). */
#define NC_CUDA_CONV_DEFAULT 6

/* Versions are numbered 1..nc_cuda_conv_num_versions(). */
int nc_cuda_conv_num_versions(void);
/* The id of the kernels this library was built from: 16 hex digits of a hash of src/cuda's sources
 * (cmake/kernels_id.cmake). The default's cache keys on it (conv_autotune.h); `nanoconv --version` prints it. */
const char *nc_cuda_kernels_id(void);
/* A version's short name ("naive"), or NULL if there is no such version. */
const char *nc_cuda_conv_version_name(int version);
/* The versions whose launches may run a kernel of this name (as CUDA's profilers give it, demangled: "void
 * conv_direct_kernel<...>(...)"), as a mask of bits 1 << version; 0 for a kernel that is none of the ladder's. */
unsigned nc_cuda_conv_kernel_versions(const char *name);
/* What Op Time's line says of a version ("fused tanh+maxpool" for one that
 * fuses them; "" for a convolution alone). */
const char *nc_cuda_conv_version_note(int version);
/* Maps 0 to the default and checks the version: NC_ERR_ARG, listing the valid
 * ones, for an unknown one. */
int nc_cuda_conv_resolve(int *version, nc_error *err);
/* Loads the version's kernel now, so that its first timed launch does not pay
 * for loading the module. */
int nc_cuda_conv_prepare(int version, nc_error *err);

/* Valid cross-correlation, stride 1, no padding, by kernel version `version`.
 * y is (B, M, H-K+1, W-K+1), x is (B, C, H, W), k is (M, C, K, K), bias is (M) or NULL. */
int nc_cuda_conv_forward(int version, float *y, const float *x, const float *k, const float *bias, int B, int C, int H,
                         int W, int M, int K, cudaStream_t stream, nc_error *err);

/* ------------------------------------------------------------ layers.cu */

/* Elementwise tanh, relu or sigmoid (kind NC_TANH, NC_RELU or NC_SIGMOID) over
 * n values; y may equal x. */
int nc_cuda_activation_forward(nc_layer_kind kind, float *y, const float *x, size_t n, cudaStream_t stream,
                               nc_error *err);

/* Max (kind NC_MAXPOOL) or average (NC_AVGPOOL) pooling, window P, stride S,
 * output (H-P)/S+1 (floor). y is (B, C, Ho, Wo), x is (B, C, H, W). */
int nc_cuda_pool_forward(nc_layer_kind kind, float *y, const float *x, int B, int C, int H, int W, int P, int S,
                         cudaStream_t stream, nc_error *err);

/* y = x w^T + b by a tiled SGEMM in exact fp32 (FFMA only). y is (B, OUT), x is (B, IN), w is (OUT, IN), b is
 * (OUT) or NULL. Any alignment of x and w and any IN. Each output is summed over k = 0..IN-1 in order, so a row of
 * y is bitwise the same whatever B is and whichever kernel the launcher picks for it. */
int nc_cuda_dense_forward(float *y, const float *x, const float *w, const float *b, int B, int IN, int OUT,
                          cudaStream_t stream, nc_error *err);

/* The fp32 dense layer on the int8 tensor cores (dense_i8.cu): x's and w's rows each cut into three 8-bit slices
 * under a power-of-two scale, their products summed exactly in int32, combined in fp64 and rounded once. Errors
 * below the fp32 sums' on the zoo's layers (about 2^-23 max|x_row| sum|w_col| at most, see dense_i8.cu); a row of
 * y is the same bits whatever B, the tiles or the split of k; a row holding inf or NaN gives NaN. IN at most
 * NC_DENSE_I8_MAX_IN (a level's sum within int32). */
#define NC_DENSE_I8_MAX_IN 32768
/* Bytes of w (OUT, IN) prepared: its slices and scales; 0 where IN or OUT is out of range. */
size_t nc_cuda_dense_i8_prepared_size(int IN, int OUT);
/* Slices w into wp (nc_cuda_dense_i8_prepared_size bytes, 256-byte aligned as cudaMalloc's are), once a model, and
 * allows the GEMMs' shared memory on the current device: call it on the device the forward calls run on. */
int nc_cuda_dense_i8_prepare(void *wp, const float *w, int IN, int OUT, cudaStream_t stream, nc_error *err);
/* Its kernels: AUTO, WGMMA where this build has sm_90a code and the device is sm_90, else MMA; MMA (mma.sync
 * m16n8k32, any sm_80+); WGMMA (wgmma, its stages filled by the tensor memory accelerator, tiles of 64 rows);
 * WGMMA2 (the same with two warpgroups on tiles of 128 rows, sharing w's stages). The same bits. */
enum { NC_DENSE_I8_AUTO = 0, NC_DENSE_I8_MMA = 1, NC_DENSE_I8_WGMMA = 2, NC_DENSE_I8_WGMMA2 = 3 };
/* The scratch nc_cuda_dense_i8_forward_prepared needs for B rows on `kernel` with k split in `splits` (0: its own
 * choice on this device, a function of B, IN, OUT and the SM count). */
int nc_cuda_dense_i8_scratch_size(size_t *bytes, int B, int IN, int OUT, int splits, int kernel, nc_error *err);
/* y (B, OUT) = x (B, IN) w^T + b on prepared weights; scratch (256-byte aligned) of scratch_bytes, at least
 * nc_cuda_dense_i8_scratch_size's for the same splits and kernel. splits: 0 for the layer's own choice, or the
 * blocks k is split among; kernel: NC_DENSE_I8_* (tests and measurements: the bits are the same). Any alignment of
 * x. */
int nc_cuda_dense_i8_forward_prepared(float *y, const float *x, const void *wp, const float *b, int B, int IN, int OUT,
                                      void *scratch, size_t scratch_bytes, int splits, int kernel, cudaStream_t stream,
                                      nc_error *err);
/* The same with w prepared, and the scratch taken, on the stream (cudaMallocAsync) on every call. */
int nc_cuda_dense_i8_forward(float *y, const float *x, const float *w, const float *b, int B, int IN, int OUT,
                             int splits, int kernel, cudaStream_t stream, nc_error *err);

/* nc_run_opts.precision: what the cuda backend may trade for speed. FP32 is exact (every kernel in fp32, the
 * default). The others run the convolutions on a tensor-core conv version (those it takes) and the dense layers on
 * dense_tc.cu's GEMM at that precision, and are opt-in: TF32 (version 7), FP16 and BF16 are reduced precision;
 * 3XTF32 (version 8) is near-exact (~1e-6 relative, not bitwise). */
enum {
    NC_PRECISION_FP32 = 0,
    NC_PRECISION_TF32 = 1,
    NC_PRECISION_3XTF32 = 2,
    NC_PRECISION_FP16 = 3,
    NC_PRECISION_BF16 = 4,
    NC_PRECISION_COUNT
};
/* "fp32", "tf32", "3xtf32", "fp16", "bf16"; NULL out of range. */
const char *nc_precision_name(int precision);
/* The precision a conv version computes in (NC_PRECISION_FP32 for versions 1..6). */
int nc_cuda_conv_version_precision(int version);
/* Whether a conv version gives the same bits on every run (all but version 12, whose atomics order its sums). */
int nc_cuda_conv_version_reproducible(int version);

/* nc_cuda_dense_forward on the tensor cores (dense_tc.cu) at precision NC_PRECISION_TF32, 3XTF32, FP16 or BF16
 * (operands rounded from fp32, fp32 sums; error <= ~2u sum|x w|, u = 2^-11 for tf32 and fp16, 2^-8 for bf16; fp16
 * operands beyond 65504 become inf); NC_PRECISION_FP32 runs nc_cuda_dense_forward. Any alignment of x and w; each
 * row of y is bitwise the same whatever B is. tf32, 3xtf32, fp16 and bf16 convert w into a temporary (stream-ordered
 * cudaMallocAsync) on every call: the same as nc_cuda_dense_tc_prepare then nc_cuda_dense_tc_forward_prepared,
 * bit for bit. */
int nc_cuda_dense_tc_forward(int precision, float *y, const float *x, const float *w, const float *b, int B, int IN,
                             int OUT, cudaStream_t stream, nc_error *err);

/* Bytes of a dense layer's weights prepared for `precision`: (OUT, IN rounded up to 32) tf32 bit patterns (4
 * bytes), fp16 or bf16 (2) for TF32, FP16 and BF16; two such of tf32 for 3XTF32 (w's high parts, then the tf32
 * rounding of what they leave); (OUT, IN) fp32, a plain copy, for FP32. */
size_t nc_cuda_dense_tc_prepared_size(int precision, int IN, int OUT);
/* Converts w (OUT, IN) fp32 into wp, nc_cuda_dense_tc_prepared_size bytes, 16-byte aligned (cudaMalloc's are):
 * once at model load, so that each forward skips the conversion. */
int nc_cuda_dense_tc_prepare(int precision, void *wp, const float *w, int IN, int OUT, cudaStream_t stream,
                             nc_error *err);
/* nc_cuda_dense_tc_forward on weights prepared for the same precision, IN and OUT. */
int nc_cuda_dense_tc_forward_prepared(int precision, float *y, const float *x, const void *wp, const float *b, int B,
                                      int IN, int OUT, cudaStream_t stream, nc_error *err);
/* The same with k split among `splits` blocks a 128 x 128 tile (1, 2, 4 or 8; the tensor-core precisions on sm_90
 * and later), which sum their shares of k and add them up in a fixed order through a cluster's shared memory; 0: the
 * layer's own choice, nc_cuda_dense_tc_ksplits, which nc_cuda_dense_tc_forward_prepared takes. For tests and
 * measurements: other splits give other (equally rounded) sums. */
int nc_cuda_dense_tc_forward_ksplit(int precision, float *y, const float *x, const void *wp, const float *b, int B,
                                    int IN, int OUT, int splits, cudaStream_t stream, nc_error *err);
/* The tensor-core kernel nc_cuda_dense_tc_forward_kernel runs: AUTO, wgmma where nc_cuda_dense_tc_has_wgmma says so
 * (warp-specialized where B > 128, and at 3xtf32 where its waves are few enough), else mma.sync; MMA, mma.sync
 * (dense_tc_kernel; 3xtf32's dtc_split_kernel); WGMMA, wgmma (dense_wg_kernel); WS, wgmma with the warps specialized
 * (dense_ws_kernel; the same bits as WGMMA). */
enum { NC_DENSE_TC_AUTO = 0, NC_DENSE_TC_MMA = 1, NC_DENSE_TC_WGMMA = 2, NC_DENSE_TC_WS = 3 };
/* nc_cuda_dense_tc_forward_ksplit on the kernel asked for (NC_DENSE_TC_*): for tests and measurements. WGMMA where it
 * cannot run, or for another precision, is NC_ERR_ARG. The two kernels round the same products in other orders. */
int nc_cuda_dense_tc_forward_kernel(int precision, float *y, const float *x, const void *wp, const float *b, int B,
                                    int IN, int OUT, int splits, int kernel, cudaStream_t stream, nc_error *err);
/* 1 where precision is tf32, 3xtf32, fp16 or bf16 and this build and device run it on wgmma (dense_tc.cu built for
 * sm_90a, an sm_90 device), 0 where not, or minus an error code. */
int nc_cuda_dense_tc_has_wgmma(int precision, nc_error *err);
/* The blocks k is split among for a layer of IN inputs on this device (1 for fp32 and before sm_90), or minus
 * an error code. Never a function of B: a row's sums are the same whatever B is. */
int nc_cuda_dense_tc_ksplits(int precision, int IN, nc_error *err);

/* nc_tanhf (src/cuda/conv_act.cuh: the exact versions' tanh and the tanh layer's) run at every stride-th of the 2^32
 * floats' bit patterns (stride 1: all of them) against tanh in double, its inline-exponential form
 * (NC_TANH_EXACT_EX2) and CUDA's tanhf beside it: for
 * tests/gpu/test_gpu_layers.c and the figures in conv_act.cuh. Errors in ulps of the float binade of the double
 * result; NaNs left out; decreasing and not_odd counted at x >= 0 (x against the next float, and -x). */
typedef struct {
    unsigned max_ulp_bits[2];          /* the device's maxima, as the bits of floats (nc_tanhf's, tanhf's) */
    unsigned long long differ;         /* floats where nc_tanhf's bits are not tanhf's */
    unsigned long long unbounded;      /* where |nc_tanhf x| > 1 */
    unsigned long long decreasing;     /* where nc_tanhf(next float) < nc_tanhf x */
    unsigned long long not_odd;        /* where nc_tanhf(-x) is not -nc_tanhf(x), bit for bit */
    unsigned long long ex2_differ;     /* where the inline-exponential form's bits are not nc_tanhf's */
    unsigned long long tanhf_decreasing, tanhf_not_odd;
    float max_ulp, tanhf_max_ulp;      /* max_ulp_bits as floats, filled on the host */
} nc_tanh_sweep;
int nc_cuda_tanh_sweep(nc_tanh_sweep *out, unsigned stride, nc_error *err);
#define NC_TANHF_MAX_ULP 2.0 /* nc_tanhf's error bound, CUDA's for tanhf */

/* Softmax over each row; y may equal x. y and x are (B, N). */
int nc_cuda_softmax_forward(float *y, const float *x, int B, int N, cudaStream_t stream, nc_error *err);

/* Argmax of each row, ties to the lowest index. pred is (B), x is (B, N). */
int nc_cuda_argmax(int *pred, const float *x, int B, int N, cudaStream_t stream, nc_error *err);

/* The course's resize on the device, bit for bit nc_resize_u8 of each image.
 * dst is (B, S, S), src is (B, h, w). */
int nc_cuda_resize_u8(uint8_t *dst, const uint8_t *src, int B, int h, int w, int S, cudaStream_t stream, nc_error *err);

/* nc_prepare_input on the device: resizes (where the model's input is larger
 * than the images) and scales B images, bit for bit as the CPU does.
 * x is (B, 1, H, W) of the model's input, images is (B, h, w). */
int nc_cuda_prepare_input(float *x, const uint8_t *images, int B, int h, int w, const nc_model *m, cudaStream_t stream,
                          nc_error *err);

/* Loads every kernel of this file now (CUDA loads modules lazily, at a kernel's first launch), so that a
 * run's time does not include it. */
int nc_cuda_layers_prepare(nc_error *err);

#ifdef __cplusplus
}
#endif
#endif
