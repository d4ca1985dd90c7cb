/*
 * The GPU part of `nanoconv bench` (--backend cuda or cudnn): every convolution kernel version and cuDNN's best
 * fp32 and fp16 algorithms on each convolution layer shape, each dense layer on our GEMMs and cuBLAS, against the
 * floors of the machine measured in the same run, the tensor-core versions' launch tunings (--sweep), and the
 * whole network from host uint8 images to predictions on the cuda backend at each precision and on cudnn.
 *
 * Each row is the median of repeated runs after a warm-up, L2 flushed before each run, with random inputs
 * (never zeros). Floors: bytes (each input read once, each output written once, the weights once) over the
 * bandwidth of a large device-to-device copy; FLOPs (a multiply-add is 2) over the peak of the row's precision,
 * all measured: fp32 an FFMA microbenchmark, tf32, fp16 and bf16 an 8192^3 cuBLAS GEMM (fp32 accumulation).
 * 3xtf32 issues 3 TF32 MMAs a product (2 where one operand is exact in TF32: uint8 pixels), and its floor counts
 * them all against the TF32 peak. Share of the floor is floor time over measured time; "x cudnn" is cuDNN fp32's
 * time over the row's ("x cublas", cuBLAS fp32's, for dense layers).
 */
#ifndef NC_BENCH_GPU_H
#define NC_BENCH_GPU_H

#include <stdio.h>

#include "core/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One convolution layer shape, and what follows it that the fused versions (6 and the tensor-core ones) may fuse. */
typedef struct nc_bench_shape {
    char name[64];
    int C, H, W, M, K;
    int act;        /* NC_TANH, NC_RELU, NC_SIGMOID after the convolution, or -1 */
    int pool;       /* NC_MAXPOOL or NC_AVGPOOL after that, or -1 */
    int P, S;       /* its window and stride */
    int input_u8;   /* the layer reads the model's input: the fused row reads it as uint8 pixels */
    float lut[256]; /* how those pixels scale (nc_scale_pixel), input_u8 only */
} nc_bench_shape;

/* The shapes of a model's convolution layers, with what follows each; *n gets their count (<= max). */
void nc_bench_shapes_of(const nc_model *m, nc_bench_shape *shapes, int max, int *n);

typedef struct nc_cuda_bench_opts {
    const nc_model *const *models; /* every convolution layer of each, and the whole network */
    int n_models;
    const nc_bench_shape *shapes; /* single layer shapes (from the command line) */
    int n_shapes;
    const int *ns; /* batch sizes */
    int n_ns;
    int reps;               /* most timed runs a row (fewer where one run takes long); at least 3 */
    int device;             /* GPU index */
    int devices;            /* the network lines on this many GPUs from device on (nc_run_opts.devices; 0: one) */
    const nc_dataset *data; /* test images for the whole-network lines and the check; NULL: neither */
    int check_n;            /* images on which each version's predictions are compared with cpu-ref (0: none) */
    int sweep;              /* also time every nc_conv_tc_tunings() tuning of the tensor-core versions */
    unsigned versions;      /* bit v: time conv version v (layers and sweep); 0: every version */
} nc_cuda_bench_opts;

/* The CUDA GPUs present: 0 where there is none, or no driver. */
int nc_cuda_gpu_count(void);

/* Runs the benchmark, printing tables to out and, where json (a cJSON object) is not NULL, adding to it
 * "device", "floors", "versions" (number, name, precision of each), "tunings", "layers" (one row per shape, N
 * and version or cuDNN algorithm), "dense" (one row per dense layer, N and GEMM), "sweep" (one row per shape, N,
 * tensor-core version and tuning), "not_taken" (a version that refused a shape, and why), "networks" and
 * "checks". Fails with NC_ERR_UNAVAILABLE where there is no GPU (or cuBLAS cannot be loaded), NC_ERR_DEVICE on
 * a CUDA, cuDNN or cuBLAS failure, and NC_ERR_MISMATCH where a version's predictions differ from cpu-ref beyond
 * what its precision allows, or it could not run (after the whole report). */
struct cJSON;
int nc_cuda_bench(const nc_cuda_bench_opts *o, FILE *out, struct cJSON *json, nc_error *err);

#ifdef __cplusplus
}
#endif
#endif
