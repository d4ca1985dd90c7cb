/*
 * The GPU part of `nanoconv bench` (bench_gpu.h): the ladder of convolution versions against cuDNN, the dense
 * layers against cuBLAS, both against the floors of the machine, all measured in one run; the tensor-core
 * versions' launch tunings (--sweep); the whole network on the cuda backend at each precision and on cudnn.
 *
 *   nanoconv bench --backend cuda -m models/fashion-2017-high.safetensors -n 100,1000,10000 --json out.json
 *   nanoconv bench --backend cuda --shape 1x28x28:50x5+tanh+maxpool2 -n 10000 --sweep
 *
 * Everything is table-driven: the conv versions are 1..nc_cuda_conv_num_versions(), each computing in
 * nc_cuda_conv_version_precision(v), held to the peak of that precision (peak_of); the dense GEMMs are ours at
 * every NC_PRECISION_* that nc_cuda_dense_tc_forward takes; the network lines are every NC_PRECISION_*, and fp32
 * again with --dense-sums fp32 (the dense layers on fp32 sums rather than int8 slices).
 */
#include <cjson/cJSON.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/backend.h"
#include "cuda/bench_gpu.h"
#include "cuda/conv_ladder.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_layers.h"
#include "cuda/vendor_libs.h"

/* cuBLAS (the GEMM peaks and the dense baseline) and cuDNN (the conv baseline), loaded by nc_cuda_bench
 * (vendor_libs.h). */
static const nc_vendor_api *lib;

/* Bytes memset between timed runs, so that no run finds the last one's data in the 50 MB L2. */
#define FLUSH_BYTES (256u << 20)
/* A row's timed runs stop once they add up to about this long (but never fewer than 3). */
#define ROW_BUDGET_MS 250.0
#define MAX_REPS 50
/* Dense layer shapes (IN, OUT, N) timed once a run, however many models have them. */
#define MAX_DENSE_SEEN 64

/* ------------------------------------------------------------------ helpers */

/* Uniform in [lo, hi) from a hash of the index: random, reproducible, never all zeros. */
__device__ static float bench_hash01(size_t i, uint32_t seed) {
    uint32_t h = (uint32_t)i * 0x9E3779B1u ^ (uint32_t)(i >> 32) * 0x85EBCA77u ^ seed * 0xC2B2AE3Du;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    h *= 0x297A2D39u;
    h ^= h >> 15;
    return (float)(h >> 8) / 16777216.0f;
}

__global__ void bench_fill_kernel(float *x, size_t n, uint32_t seed, float lo, float hi) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = lo + (hi - lo) * bench_hash01(i, seed);
}

__global__ void bench_fill_u8_kernel(uint8_t *x, size_t n, uint32_t seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = (uint8_t)(256.0f * bench_hash01(i, seed));
}

__global__ void bench_to_half_kernel(__half *y, const float *x, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = __float2half(x[i]);
}

__global__ void bench_to_bf16_kernel(__nv_bfloat16 *y, const float *x, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = __float2bfloat16(x[i]);
}

/* 16 independent FFMA chains per thread, so that latency never limits issue: 32 FLOPs per thread per step. */
#define FFMA_CHAINS 16
__global__ void __launch_bounds__(256) bench_ffma_kernel(float *out, int steps, float a, float b) {
    float r[FFMA_CHAINS];
#pragma unroll
    for (int j = 0; j < FFMA_CHAINS; j++) r[j] = (float)(threadIdx.x + j);
    for (int i = 0; i < steps; i++)
#pragma unroll
        for (int j = 0; j < FFMA_CHAINS; j++) r[j] = fmaf(r[j], a, b);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < FFMA_CHAINS; j++) s += r[j];
    if (s == 1234.5f) out[threadIdx.x] = s; /* keeps the chains alive; practically never stores */
}

static unsigned grid_for(size_t n) {
    const size_t b = (n + 255) / 256;
    return b < 65536 ? (unsigned)b : 65536u;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const char *kind_name(int kind) {
    return kind < 0 ? "none" : nc_layer_kind_name((nc_layer_kind)kind);
}

typedef struct {
    cudaStream_t stream;
    cudaEvent_t e0, e1;
    cublasHandle_t blas; /* on stream */
    void *flush;
    int reps, sweep;
    int device, devices; /* nc_cuda_bench_opts': the GPU, and the GPUs the network lines spread their images over */
    unsigned versions;   /* bit v: version v is timed; 0: all */
    FILE *out;
    cJSON *rows, *dense, *sweeps; /* the "layers", "dense" and "sweep" arrays, or NULL */
    cJSON *not_taken;             /* "not_taken": versions that refused a layer shape, or NULL */
    double bw;                    /* bytes/s of a device-to-device copy (read + written) */
    double fp32;                  /* FLOP/s of FFMA */
    double tc32;                  /* FLOP/s of cuBLAS TF32 GEMM (fp32 accumulation) */
    double tc16;                  /* FLOP/s of cuBLAS fp16 GEMM (fp32 accumulation) */
    double tcbf16;                /* FLOP/s of cuBLAS bf16 GEMM (fp32 accumulation) */
} bench;

/* One operation under test: enqueues itself on the stream. */
typedef int (*bench_fn)(void *ctx, cudaStream_t s, nc_error *err);

/* Median time in ms of fn over up to b->reps runs after one warm-up, each after an L2 flush. */
static int time_median(bench *b, bench_fn fn, void *ctx, double *ms, int *runs, nc_error *err) {
    int rc = fn(ctx, b->stream, err); /* warm-up: module load, workspace pools */
    if (rc) return rc;
    CUDA_RET(cudaStreamSynchronize(b->stream));
    double t[MAX_REPS];
    int n = 0;
    double spent = 0.0;
    while (n < b->reps && n < MAX_REPS && (n < 3 || spent < ROW_BUDGET_MS)) {
        CUDA_RET(cudaMemsetAsync(b->flush, n & 0xFF, FLUSH_BYTES, b->stream));
        CUDA_RET(cudaEventRecord(b->e0, b->stream));
        if ((rc = fn(ctx, b->stream, err))) return rc;
        CUDA_RET(cudaEventRecord(b->e1, b->stream));
        CUDA_RET(cudaEventSynchronize(b->e1));
        float f = 0.0f;
        CUDA_RET(cudaEventElapsedTime(&f, b->e0, b->e1));
        t[n++] = f;
        spent += f;
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    *ms = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    *runs = n;
    return NC_OK;
}

/* ------------------------------------------------------------------ precisions */

/* The measured peak (FLOP/s) a row computing in this precision is held to. */
static double peak_of(const bench *b, int precision) {
    switch (precision) {
    case NC_PRECISION_TF32:
    case NC_PRECISION_3XTF32: return b->tc32;
    case NC_PRECISION_FP16: return b->tc16;
    case NC_PRECISION_BF16: return b->tcbf16;
    default: return b->fp32;
    }
}

/* Tensor-core products issued per multiply-add: 3xTF32 splits each operand into a TF32 high part and the TF32
 * rounding of its remainder and issues 3 MMAs (hi lo + lo hi + hi hi), 2 where one operand is exact in TF32 (uint8
 * pixels, conv_tc.cu). The floor counts every one of them against the TF32 peak; GFLOP/s counts the useful 1. */
static double mma_per_product(int precision, int exact_operand) {
    return precision == NC_PRECISION_3XTF32 ? (exact_operand ? 2.0 : 3.0) : 1.0;
}

static const char *prec_name(int precision) {
    const char *s = nc_precision_name(precision);
    return s ? s : "?";
}

/* What a row of this precision says of it: nothing for fp32. */
static void precision_note(int precision, char *buf, size_t n) {
    if (precision == NC_PRECISION_FP32)
        buf[0] = 0;
    else if (precision == NC_PRECISION_3XTF32)
        snprintf(buf, n, "near-exact (3xtf32 tensor cores, not bitwise fp32)");
    else
        snprintf(buf, n, "reduced precision (%s tensor cores)", prec_name(precision));
}

/* ------------------------------------------------------------------ floors */

typedef struct {
    void *dst, *src;
    size_t bytes;
} copy_ctx;

static int op_copy(void *ctx, cudaStream_t s, nc_error *err) {
    copy_ctx *c = (copy_ctx *)ctx;
    CUDA_RET(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, s));
    return NC_OK;
}

typedef struct {
    float *out;
    int blocks, steps;
} ffma_ctx;

static int op_ffma(void *ctx, cudaStream_t s, nc_error *err) {
    ffma_ctx *c = (ffma_ctx *)ctx;
    bench_ffma_kernel<<<c->blocks, 256, 0, s>>>(c->out, c->steps, 0.999f, 0.001f);
    CUDA_LAUNCHED();
    return NC_OK;
}

typedef struct {
    cublasHandle_t h;
    void *a, *b, *c;
    int n;
    int precision; /* NC_PRECISION_TF32, FP16 or BF16 */
} gemm_ctx;

static int op_gemm(void *ctx, cudaStream_t s, nc_error *err) {
    gemm_ctx *g = (gemm_ctx *)ctx;
    const float one = 1.0f, zero = 0.0f;
    const cudaDataType_t t = g->precision == NC_PRECISION_TF32   ? CUDA_R_32F
                             : g->precision == NC_PRECISION_FP16 ? CUDA_R_16F
                                                                 : CUDA_R_16BF;
    (void)s; /* the handle is on the bench's stream */
    const cublasStatus_t st = lib->cublasGemmEx(
        g->h, CUBLAS_OP_N, CUBLAS_OP_N, g->n, g->n, g->n, &one, g->a, t, g->n, g->b, t, g->n, &zero, g->c, CUDA_R_32F,
        g->n, g->precision == NC_PRECISION_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS)
        return nc_fail(err, NC_ERR_DEVICE, "cublasGemmEx (%s) failed: %s", prec_name(g->precision),
                       lib->cublasGetStatusString(st));
    return NC_OK;
}

static int measure_floors(bench *b, nc_error *err) {
    int rc = NC_OK, runs = 0;
    double ms = 0.0;
    int dev = 0;
    cudaDeviceProp prop;
    CUDA_RET(cudaGetDevice(&dev));
    CUDA_RET(cudaGetDeviceProperties(&prop, dev));
    /* Bandwidth: 1 GiB copied, 2 GiB moved. */
    copy_ctx cc = {NULL, NULL, (size_t)1 << 30};
    ffma_ctx fc = {NULL, prop.multiProcessorCount * 8, 8192};
    gemm_ctx gc = {b->blas, NULL, NULL, NULL, 8192, NC_PRECISION_TF32};
    const size_t gn = (size_t)gc.n * gc.n;
    void *fa = NULL, *fb = NULL; /* the operands in fp32, (gn) each */
    CUDA_TRY(cudaMalloc(&cc.dst, cc.bytes));
    CUDA_TRY(cudaMalloc(&cc.src, cc.bytes));
    bench_fill_kernel<<<grid_for(cc.bytes / 4), 256, 0, b->stream>>>((float *)cc.src, cc.bytes / 4, 1, -1.0f, 1.0f);
    CUDA_TRY(cudaGetLastError());
    if ((rc = time_median(b, op_copy, &cc, &ms, &runs, err))) goto cleanup;
    b->bw = 2.0 * (double)cc.bytes / (ms * 1e-3);
    /* FP32: FFMA at full occupancy. */
    CUDA_TRY(cudaMalloc((void **)&fc.out, 256 * sizeof(float)));
    if ((rc = time_median(b, op_ffma, &fc, &ms, &runs, err))) goto cleanup;
    b->fp32 = 2.0 * FFMA_CHAINS * (double)fc.steps * 256.0 * fc.blocks / (ms * 1e-3);
    /* Tensor cores: an 8192^3 GEMM through cuBLAS, TF32, then fp16 and bf16 operands, fp32 accumulation. */
    CUDA_TRY(cudaMalloc(&fa, gn * 4));
    CUDA_TRY(cudaMalloc(&fb, gn * 4));
    CUDA_TRY(cudaMalloc(&gc.a, gn * 2));
    CUDA_TRY(cudaMalloc(&gc.b, gn * 2));
    CUDA_TRY(cudaMalloc(&gc.c, gn * 4));
    bench_fill_kernel<<<grid_for(gn), 256, 0, b->stream>>>((float *)fa, gn, 2, -1.0f, 1.0f);
    bench_fill_kernel<<<grid_for(gn), 256, 0, b->stream>>>((float *)fb, gn, 3, -1.0f, 1.0f);
    CUDA_TRY(cudaGetLastError());
    {
        gemm_ctx g32 = gc;
        g32.a = fa, g32.b = fb;
        if ((rc = time_median(b, op_gemm, &g32, &ms, &runs, err))) goto cleanup;
        b->tc32 = 2.0 * (double)gn * gc.n / (ms * 1e-3);
    }
    bench_to_half_kernel<<<grid_for(gn), 256, 0, b->stream>>>((__half *)gc.a, (const float *)fa, gn);
    bench_to_half_kernel<<<grid_for(gn), 256, 0, b->stream>>>((__half *)gc.b, (const float *)fb, gn);
    CUDA_TRY(cudaGetLastError());
    gc.precision = NC_PRECISION_FP16;
    if ((rc = time_median(b, op_gemm, &gc, &ms, &runs, err))) goto cleanup;
    b->tc16 = 2.0 * (double)gn * gc.n / (ms * 1e-3);
    bench_to_bf16_kernel<<<grid_for(gn), 256, 0, b->stream>>>((__nv_bfloat16 *)gc.a, (const float *)fa, gn);
    bench_to_bf16_kernel<<<grid_for(gn), 256, 0, b->stream>>>((__nv_bfloat16 *)gc.b, (const float *)fb, gn);
    CUDA_TRY(cudaGetLastError());
    gc.precision = NC_PRECISION_BF16;
    if ((rc = time_median(b, op_gemm, &gc, &ms, &runs, err))) goto cleanup;
    b->tcbf16 = 2.0 * (double)gn * gc.n / (ms * 1e-3);
cleanup:
    cudaFree(fa);
    cudaFree(fb);
    cudaFree(gc.a);
    cudaFree(gc.b);
    cudaFree(gc.c);
    cudaFree(fc.out);
    cudaFree(cc.dst);
    cudaFree(cc.src);
    return rc;
}

/* ------------------------------------------------------------------ costs and rows */

typedef struct {
    double flops;     /* useful: 2 per multiply-add */
    double mma_flops; /* what the floor counts: flops times the MMAs issued per product */
    double bytes, floor_ms, peak;
} op_cost;

/* Bytes moved and FLOPs done, and the floor: the larger of bytes over the copy bandwidth and MMA FLOPs over the
 * precision's peak. */
static op_cost make_cost(const bench *b, double flops, double bytes, int precision, int exact_operand) {
    op_cost c;
    c.flops = flops;
    c.mma_flops = flops * mma_per_product(precision, exact_operand);
    c.bytes = bytes;
    c.peak = peak_of(b, precision);
    const double tb = bytes / b->bw, tf = c.mma_flops / c.peak;
    c.floor_ms = 1e3 * (tb > tf ? tb : tf);
    return c;
}

/* A conv row's cost: each input read once (1 byte a pixel where u8), each output written once (pooled where
 * fused), the weights once, in elem bytes. */
static op_cost conv_cost(const bench *b, const nc_bench_shape *h, int N, int fused, int u8, int elem, int precision) {
    const int Ho = h->H - h->K + 1, Wo = h->W - h->K + 1;
    int Yh = Ho, Yw = Wo;
    if (fused && h->pool >= 0) Yh = (Ho - h->P) / h->S + 1, Yw = (Wo - h->P) / h->S + 1;
    const double flops = 2.0 * N * h->M * Ho * Wo * (double)h->C * h->K * h->K;
    const double bytes = (double)N * h->C * h->H * h->W * (u8 ? 1 : elem) + (double)N * h->M * Yh * Yw * elem +
                         (double)h->M * h->C * h->K * h->K * elem;
    return make_cost(b, flops, bytes, precision, u8);
}

/* The table's columns: what was run, ms, GFLOP/s, GB/s, share of the floor, ratio to the baseline, note. */
static const char header[] = "%-30s %6s  %-28s %-6s %10s %9s %8s %8s %8s  %s\n";

static void print_row(const bench *b, const char *what, int N, const char *label, int precision, double ms,
                      const op_cost *c, double base_ms, const char *note) {
    fprintf(b->out, "%-30s %6d  %-28s %-6s %10.4f %9.0f %8.0f %7.1f%% %8.2f  %s\n", what, N, label,
            prec_name(precision), ms, c->flops / (ms * 1e-3) / 1e9, c->bytes / (ms * 1e-3) / 1e9,
            100.0 * c->floor_ms / ms, base_ms > 0.0 ? base_ms / ms : 0.0, note);
}

/* The members every timed row's JSON object has. */
static void row_json(cJSON *r, int N, int precision, const char *note, double ms, int runs, const op_cost *c) {
    cJSON_AddNumberToObject(r, "N", N);
    cJSON_AddStringToObject(r, "precision", prec_name(precision));
    cJSON_AddBoolToObject(r, "exact", precision == NC_PRECISION_FP32);
    cJSON_AddStringToObject(r, "note", note);
    cJSON_AddNumberToObject(r, "ms", ms);
    cJSON_AddNumberToObject(r, "runs", runs);
    cJSON_AddNumberToObject(r, "flops", c->flops);
    cJSON_AddNumberToObject(r, "mma_flops", c->mma_flops);
    cJSON_AddNumberToObject(r, "bytes", c->bytes);
    cJSON_AddNumberToObject(r, "gflops", c->flops / (ms * 1e-3) / 1e9);
    cJSON_AddNumberToObject(r, "gbs", c->bytes / (ms * 1e-3) / 1e9);
    cJSON_AddNumberToObject(r, "peak_flops_per_s", c->peak);
    cJSON_AddNumberToObject(r, "floor_ms", c->floor_ms);
    cJSON_AddNumberToObject(r, "floor_share", c->floor_ms / ms);
}

static void shape_json(cJSON *r, const nc_bench_shape *h) {
    cJSON_AddStringToObject(r, "shape", h->name);
    cJSON_AddNumberToObject(r, "C", h->C);
    cJSON_AddNumberToObject(r, "H", h->H);
    cJSON_AddNumberToObject(r, "W", h->W);
    cJSON_AddNumberToObject(r, "M", h->M);
    cJSON_AddNumberToObject(r, "K", h->K);
    cJSON_AddStringToObject(r, "act", kind_name(h->act));
    cJSON_AddStringToObject(r, "pool", kind_name(h->pool));
    cJSON_AddNumberToObject(r, "P", h->pool >= 0 ? h->P : 0);
}

/* One conv row: printed and added to "layers". version is 0 for cuDNN; label is "v7 tc-tf32" or "cudnn fp32 ALGO",
 * fused whether the activation and pooling are done in the same kernel. */
static void emit_row(bench *b, const nc_bench_shape *h, int N, int version, const char *label, int precision, int fused,
                     const char *note, double ms, int runs, op_cost c, double cudnn_ms) {
    print_row(b, h->name, N, label, precision, ms, &c, cudnn_ms, note);
    if (!b->rows) return;
    cJSON *r = cJSON_CreateObject();
    shape_json(r, h);
    cJSON_AddStringToObject(r, "version", label);
    cJSON_AddNumberToObject(r, "version_number", version);
    cJSON_AddStringToObject(r, "version_name", version ? nc_cuda_conv_version_name(version) : "cudnn");
    cJSON_AddBoolToObject(r, "fused", fused);
    row_json(r, N, precision, note, ms, runs, &c);
    cJSON_AddNumberToObject(r, "vs_cudnn_fp32", cudnn_ms > 0.0 ? cudnn_ms / ms : 0.0);
    cJSON_AddItemToArray(b->rows, r);
}

/* ------------------------------------------------------------------ convolution layers */

typedef struct {
    const nc_bench_shape *sh;
    int N, version;
    float *y, *x, *k, *bias;
    uint8_t *xu;
    nc_conv_epilogue epi;
    nc_conv_lut lut;
    const nc_conv_tc_tuning *tuning; /* NULL: the default */
} conv_ctx;

static int op_version(void *ctx, cudaStream_t s, nc_error *err) {
    conv_ctx *c = (conv_ctx *)ctx;
    const nc_bench_shape *h = c->sh;
    return nc_cuda_conv_forward(c->version, c->y, c->x, c->k, c->bias, c->N, h->C, h->H, h->W, h->M, h->K, s, err);
}

/* A version that does not take a shape (NC_ERR_ARG): said, and kept in the JSON's "not_taken". */
static void not_taken(bench *b, const nc_bench_shape *h, int N, int v, const char *label, const nc_error *err) {
    fprintf(b->out, "%-30s %6d  %-28s not taken: %s\n", h->name, N, label, err->msg);
    if (!b->not_taken) return;
    cJSON *r = cJSON_CreateObject();
    shape_json(r, h);
    cJSON_AddNumberToObject(r, "N", N);
    cJSON_AddStringToObject(r, "version", label);
    cJSON_AddNumberToObject(r, "version_number", v);
    cJSON_AddStringToObject(r, "reason", err->msg);
    cJSON_AddItemToArray(b->not_taken, r);
}

/* An fp32 version with its epilogue fused (6, 14 or 15: nc_conv_fused_rows_of). */
static int op_fused(void *ctx, cudaStream_t s, nc_error *err) {
    conv_ctx *c = (conv_ctx *)ctx;
    const nc_bench_shape *h = c->sh;
    return nc_conv_launch_fused_rows(c->y, c->x, c->xu, c->xu ? &c->lut : NULL, c->k, c->bias, c->N, h->C, h->H, h->W,
                                     h->M, h->K, &c->epi, nc_conv_fused_rows_of(c->version), s, err);
}

static int op_tc(void *ctx, cudaStream_t s, nc_error *err) {
    conv_ctx *c = (conv_ctx *)ctx;
    const nc_bench_shape *h = c->sh;
    return nc_conv_launch_tc_tuned(c->version, c->tuning, c->y, c->x, c->xu, c->xu ? &c->lut : NULL, c->k, c->bias,
                                   c->N, h->C, h->H, h->W, h->M, h->K, &c->epi, s, err);
}

#ifdef NC_HAVE_CUDNN
typedef struct {
    cudnnHandle_t h;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnConvolutionFwdAlgo_t algo;
    void *x, *w, *y, *ws;
    size_t ws_size;
} dnn_ctx;

static int op_cudnn(void *ctx, cudaStream_t s, nc_error *err) {
    dnn_ctx *d = (dnn_ctx *)ctx;
    const float one = 1.0f, zero = 0.0f;
    (void)s;
    const cudnnStatus_t st = lib->cudnnConvolutionForward(d->h, &one, d->xd, d->x, d->wd, d->w, d->cd, d->algo, d->ws,
                                                          d->ws_size, &zero, d->yd, d->y);
    if (st != CUDNN_STATUS_SUCCESS)
        return nc_fail(err, NC_ERR_DEVICE, "cudnnConvolutionForward failed: %s", lib->cudnnGetErrorString(st));
    return NC_OK;
}

static const char *const dnn_algo_names[] = {
    "implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling", "winograd", "winograd_nonfused"};

/* Sets up cuDNN on x (N, C, H, W) in fp32 (FMA math: no TF32) or fp16 (fp16 data and arithmetic, tensor-op math)
 * and finds its fastest algorithm with cudnnFindConvolutionForwardAlgorithmEx; *name gets it. */
#define CUDNN_CHECK(call)                                                                                              \
    do {                                                                                                               \
        const cudnnStatus_t st_ = (call);                                                                              \
        if (st_ != CUDNN_STATUS_SUCCESS)                                                                               \
            return nc_fail(err, NC_ERR_DEVICE, "%s failed: %s", #call, lib->cudnnGetErrorString(st_));                 \
    } while (0)

static int dnn_setup(dnn_ctx *d, const nc_bench_shape *h, int N, int half, size_t ws_max, const char **name,
                     nc_error *err) {
    const cudnnDataType_t t = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    const int Ho = h->H - h->K + 1, Wo = h->W - h->K + 1;
    CUDNN_CHECK(lib->cudnnSetTensor4dDescriptor(d->xd, CUDNN_TENSOR_NCHW, t, N, h->C, h->H, h->W));
    CUDNN_CHECK(lib->cudnnSetTensor4dDescriptor(d->yd, CUDNN_TENSOR_NCHW, t, N, h->M, Ho, Wo));
    CUDNN_CHECK(lib->cudnnSetFilter4dDescriptor(d->wd, t, CUDNN_TENSOR_NCHW, h->M, h->C, h->K, h->K));
    CUDNN_CHECK(lib->cudnnSetConvolution2dDescriptor(d->cd, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, t));
    CUDNN_CHECK(lib->cudnnSetConvolutionMathType(d->cd, half ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    CUDNN_CHECK(lib->cudnnFindConvolutionForwardAlgorithmEx(d->h, d->xd, d->x, d->wd, d->w, d->cd, d->yd, d->y,
                                                            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf, d->ws,
                                                            ws_max));
    for (int i = 0; i < found; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ws_max) continue;
        if (!half && perf[i].mathType != CUDNN_FMA_MATH && perf[i].mathType != CUDNN_DEFAULT_MATH) continue;
        d->algo = perf[i].algo;
        d->ws_size = perf[i].memory;
        *name = (int)d->algo >= 0 && (int)d->algo < 8 ? dnn_algo_names[d->algo] : "?";
        return NC_OK;
    }
    return nc_fail(err, NC_ERR_DEVICE, "cuDNN found no %s algorithm for %s at N = %d", half ? "fp16" : "fp32", h->name,
                   N);
}
#endif

/* Whether --versions leaves version v in. */
static int wanted(const bench *b, int v) {
    return b->versions == 0 || (b->versions >> v & 1u);
}

/* --sweep: every tuning of each tensor-core version that takes the layer, with the layer's epilogue where they
 * fuse it (as the network runs it), else the convolution alone; the fastest of each version is marked. */
static int sweep_shape(bench *b, conv_ctx *c, double cudnn_ms, nc_error *err) {
    const nc_bench_shape *h = c->sh;
    int n_tunings = 0, rc = NC_OK;
    const nc_conv_tc_tuning *tunings = nc_conv_tc_tunings(&n_tunings);
    const nc_conv_epilogue fused = {h->act, h->pool, h->pool >= 0 ? h->P : 1, h->pool >= 0 ? h->S : 1};
    const nc_conv_epilogue alone = {-1, -1, 1, 1};
    for (int v = 1; v <= nc_cuda_conv_num_versions(); v++) {
        const int p = nc_cuda_conv_version_precision(v);
        if (p == NC_PRECISION_FP32 || !wanted(b, v)) continue;
        const int fuse =
            (h->act >= 0 || h->pool >= 0) && nc_conv_tc_takes(v, h->C, h->H, h->W, h->M, h->K, &fused, c->xu != NULL);
        if (!fuse && !nc_conv_tc_takes(v, h->C, h->H, h->W, h->M, h->K, &alone, c->xu != NULL)) {
            fprintf(b->out, "%-30s %6d  sweep v%d %s: not taken by the tensor cores (version 6 runs it)\n", h->name,
                    c->N, v, nc_cuda_conv_version_name(v));
            continue;
        }
        c->epi = fuse ? fused : alone;
        c->version = v;
        double ms[64];
        int nr[64], best = 0;
        nc_conv_tc_launch how[64];
        const int n = n_tunings < 64 ? n_tunings : 64;
        for (int t = 0; t < n; t++) {
            c->tuning = &tunings[t];
            if ((rc = nc_conv_tc_describe(v, c->tuning, c->y, c->xu, c->N, h->C, h->H, h->W, h->M, h->K, &c->epi,
                                          &how[t], err)))
                return rc;
            if ((rc = time_median(b, op_tc, c, &ms[t], &nr[t], err))) return rc;
            if (ms[t] < ms[best]) best = t;
        }
        c->tuning = NULL;
        char note[96], label[48];
        precision_note(p, note, sizeof note);
        for (int t = 0; t < n; t++) {
            /* What ran: images a block as asked for, and as lowered for the batch and the shared memory. */
            snprintf(label, sizeof label, "sweep v%d ipb %d->%d", v, tunings[t].images_per_block,
                     how[t].images_per_block);
            const op_cost cost = conv_cost(b, h, c->N, fuse, c->xu != NULL, 4, p);
            char line[160];
            snprintf(line, sizeof line, "%s%s%s%s", fuse ? "fused, " : "alone, ", note, t == 0 ? ", default" : "",
                     t == best ? "  <- fastest" : "");
            print_row(b, h->name, c->N, label, p, ms[t], &cost, cudnn_ms, line);
            if (!b->sweeps) continue;
            cJSON *r = cJSON_CreateObject();
            shape_json(r, h);
            cJSON_AddNumberToObject(r, "version_number", v);
            cJSON_AddStringToObject(r, "version_name", nc_cuda_conv_version_name(v));
            cJSON_AddNumberToObject(r, "tuning", t);
            cJSON_AddNumberToObject(r, "images_per_block", tunings[t].images_per_block);
            cJSON_AddNumberToObject(r, "images_per_block_run", how[t].images_per_block);
            cJSON_AddBoolToObject(r, "fixed_shape", how[t].fixed_shape > 0);
            cJSON_AddBoolToObject(r, "default", t == 0);
            cJSON_AddBoolToObject(r, "fastest", t == best);
            cJSON_AddBoolToObject(r, "fused", fuse);
            row_json(r, c->N, p, note, ms[t], nr[t], &cost);
            cJSON_AddNumberToObject(r, "vs_cudnn_fp32", cudnn_ms > 0.0 ? cudnn_ms / ms[t] : 0.0);
            cJSON_AddItemToArray(b->sweeps, r);
        }
    }
    return NC_OK;
}

static int bench_shape(bench *b, const nc_bench_shape *h, int N, nc_error *err) {
    int rc = NC_OK, runs = 0;
    const int Ho = h->H - h->K + 1, Wo = h->W - h->K + 1;
    const size_t nx = (size_t)N * h->C * h->H * h->W, ny = (size_t)N * h->M * Ho * Wo;
    const size_t nk = (size_t)h->M * h->C * h->K * h->K;
    double ms = 0.0, cudnn_ms = 0.0;
    conv_ctx c;
    memset(&c, 0, sizeof c);
    uint8_t *xu = NULL; // (N, C, H, W) pixels, for the fused rows that read the model's input
    c.sh = h;
    c.N = N;
    const float bound = 1.0f / sqrtf((float)(h->C * h->K * h->K));
#ifdef NC_HAVE_CUDNN
    dnn_ctx d;
    memset(&d, 0, sizeof d);
    const size_t ws_max = (size_t)2 << 30;
#endif
    CUDA_TRY(cudaMalloc((void **)&c.x, nx * sizeof(float)));
    CUDA_TRY(cudaMalloc((void **)&xu, nx));
    CUDA_TRY(cudaMalloc((void **)&c.y, ny * sizeof(float)));
    CUDA_TRY(cudaMalloc((void **)&c.k, nk * sizeof(float)));
    bench_fill_kernel<<<grid_for(nx), 256, 0, b->stream>>>(c.x, nx, 11, -1.0f, 1.0f);
    bench_fill_u8_kernel<<<grid_for(nx), 256, 0, b->stream>>>(xu, nx, 12);
    bench_fill_kernel<<<grid_for(nk), 256, 0, b->stream>>>(c.k, nk, 13, -bound, bound);
    CUDA_TRY(cudaGetLastError());

#ifdef NC_HAVE_CUDNN
    /* cuDNN first: its fp32 time is every row's yardstick. */
    for (int half = 0; half < 2; half++) {
        const char *algo = "";
        const int elem = half ? 2 : 4, precision = half ? NC_PRECISION_FP16 : NC_PRECISION_FP32;
        if (lib->cudnnCreate(&d.h) != CUDNN_STATUS_SUCCESS) {
            rc = nc_fail(err, NC_ERR_DEVICE, "cudnnCreate failed");
            goto cleanup;
        }
        lib->cudnnSetStream(d.h, b->stream);
        lib->cudnnCreateTensorDescriptor(&d.xd);
        lib->cudnnCreateTensorDescriptor(&d.yd);
        lib->cudnnCreateFilterDescriptor(&d.wd);
        lib->cudnnCreateConvolutionDescriptor(&d.cd);
        CUDA_TRY(cudaMalloc(&d.x, nx * elem));
        CUDA_TRY(cudaMalloc(&d.w, nk * elem));
        CUDA_TRY(cudaMalloc(&d.y, ny * elem));
        CUDA_TRY(cudaMalloc(&d.ws, ws_max));
        if (half) {
            bench_to_half_kernel<<<grid_for(nx), 256, 0, b->stream>>>((__half *)d.x, c.x, nx);
            bench_to_half_kernel<<<grid_for(nk), 256, 0, b->stream>>>((__half *)d.w, c.k, nk);
            CUDA_TRY(cudaGetLastError());
        } else {
            CUDA_TRY(cudaMemcpyAsync(d.x, c.x, nx * 4, cudaMemcpyDeviceToDevice, b->stream));
            CUDA_TRY(cudaMemcpyAsync(d.w, c.k, nk * 4, cudaMemcpyDeviceToDevice, b->stream));
        }
        CUDA_TRY(cudaStreamSynchronize(b->stream));
        rc = dnn_setup(&d, h, N, half, ws_max, &algo, err);
        if (!rc) rc = time_median(b, op_cudnn, &d, &ms, &runs, err);
        if (rc) {
            /* Report and go on: a shape cuDNN cannot take in fp16 does not end the benchmark. */
            fprintf(b->out, "%-30s %6d  cudnn %s: %s\n", h->name, N, prec_name(precision), err->msg);
            rc = NC_OK;
        } else {
            if (!half) cudnn_ms = ms;
            char label[48];
            snprintf(label, sizeof label, "cudnn %s %s", prec_name(precision), algo);
            emit_row(b, h, N, 0, label, precision, 0, half ? "reduced precision (fp16 data and arithmetic)" : "", ms,
                     runs, conv_cost(b, h, N, 0, 0, elem, precision), cudnn_ms);
        }
        lib->cudnnDestroyTensorDescriptor(d.xd);
        lib->cudnnDestroyTensorDescriptor(d.yd);
        lib->cudnnDestroyFilterDescriptor(d.wd);
        lib->cudnnDestroyConvolutionDescriptor(d.cd);
        lib->cudnnDestroy(d.h);
        cudaFree(d.x);
        cudaFree(d.w);
        cudaFree(d.y);
        cudaFree(d.ws);
        memset(&d, 0, sizeof d);
    }
#endif

    /* Every version on the convolution alone, in float, as nc_cuda_conv_forward runs it. The tensor-core versions
     * run a layer they do not take (C > 1, say) on version 6's fp32 kernel: such a row is fp32. */
    for (int v = 1; v <= nc_cuda_conv_num_versions(); v++) {
        char label[48], note[96];
        if (!wanted(b, v)) continue;
        snprintf(label, sizeof label, "v%d %s", v, nc_cuda_conv_version_name(v));
        c.version = v;
        rc = time_median(b, op_version, &c, &ms, &runs, err);
        if (rc == NC_ERR_ARG) { /* a shape outside the version's range */
            not_taken(b, h, N, v, label, err);
            rc = NC_OK;
            continue;
        }
        if (rc) goto cleanup;
        const nc_conv_epilogue alone = {-1, -1, 1, 1};
        int p = nc_cuda_conv_version_precision(v);
        if (p != NC_PRECISION_FP32 && !nc_conv_tc_takes(v, h->C, h->H, h->W, h->M, h->K, &alone, 0)) {
            snprintf(note, sizeof note, "not taken by the tensor cores: version 6's fp32 kernel");
            p = NC_PRECISION_FP32;
        } else {
            precision_note(p, note, sizeof note);
        }
        emit_row(b, h, N, v, label, p, 0, note, ms, runs, conv_cost(b, h, N, 0, 0, 4, p), cudnn_ms);
    }
    /* Versions 6, 14 and the tensor-core ones as the network runs them: with the activation and pooling, on uint8
     * pixels where the layer reads the model's input. */
    c.epi.act = h->act;
    c.epi.pool = h->pool;
    c.epi.P = h->pool >= 0 ? h->P : 1;
    c.epi.S = h->pool >= 0 ? h->S : 1;
    c.xu = h->input_u8 ? xu : NULL;
    memcpy(c.lut.v, h->lut, sizeof c.lut.v);
    if ((h->act >= 0 || h->pool >= 0) && nc_conv_direct_fuses(&c.epi, h->K)) {
        char label[48], note[160], pnote[96];
        snprintf(note, sizeof note, "fused %s+%s", kind_name(h->act), kind_name(h->pool));
        /* The fp32 versions that fuse: 6, 14 (version 6's kernel where it takes neither the pooling nor the
         * channels: 4/4 pooling, and several channels on float input) and 15 (the shapes it has kernels for). */
        for (int v = 1; v <= nc_cuda_conv_num_versions(); v++) {
            if (nc_conv_fused_rows_of(v) < 0 || !wanted(b, v)) continue;
            if (v == 6)
                snprintf(label, sizeof label, "v6 fused%s", c.xu ? " u8" : "");
            else
                snprintf(label, sizeof label, "v%d %s fused%s", v, nc_cuda_conv_version_name(v), c.xu ? " u8" : "");
            c.version = v;
            rc = time_median(b, op_fused, &c, &ms, &runs, err);
            if (rc == NC_ERR_ARG) { /* version 15 on a shape it has no kernel for */
                not_taken(b, h, N, v, label, err);
                rc = NC_OK;
                continue;
            }
            if (rc) goto cleanup;
            emit_row(b, h, N, v, label, NC_PRECISION_FP32, 1, note, ms, runs,
                     conv_cost(b, h, N, 1, c.xu != NULL, 4, NC_PRECISION_FP32), cudnn_ms);
        }
        /* The tensor-core versions, fused, where they take the layer (else they are version 6, timed above). */
        for (int v = 1; v <= nc_cuda_conv_num_versions(); v++) {
            const int p = nc_cuda_conv_version_precision(v);
            if (p == NC_PRECISION_FP32 || !wanted(b, v) ||
                !nc_conv_tc_takes(v, h->C, h->H, h->W, h->M, h->K, &c.epi, c.xu != NULL))
                continue;
            precision_note(p, pnote, sizeof pnote);
            snprintf(label, sizeof label, "v%d %s fused%s", v, nc_cuda_conv_version_name(v), c.xu ? " u8" : "");
            snprintf(note, sizeof note, "fused %s+%s, %s", kind_name(h->act), kind_name(h->pool), pnote);
            c.version = v;
            if ((rc = time_median(b, op_tc, &c, &ms, &runs, err))) goto cleanup;
            emit_row(b, h, N, v, label, p, 1, note, ms, runs, conv_cost(b, h, N, 1, c.xu != NULL, 4, p), cudnn_ms);
        }
    }
    if (b->sweep) rc = sweep_shape(b, &c, cudnn_ms, err);
cleanup:
#ifdef NC_HAVE_CUDNN
    if (d.h) lib->cudnnDestroy(d.h);
    cudaFree(d.x);
    cudaFree(d.w);
    cudaFree(d.y);
    cudaFree(d.ws);
#endif
    cudaFree(c.x);
    cudaFree(c.y);
    cudaFree(c.k);
    cudaFree(xu);
    return rc;
}

/* ------------------------------------------------------------------ dense layers */

typedef struct {
    cublasHandle_t h;
    int precision; /* ours: the GEMM's NC_PRECISION_*; cuBLAS: FP32 (default math) or TF32 (tensor-op math) */
    int blas;      /* cuBLAS rather than ours */
    int i8;        /* ours at fp32 on int8 slices (dense_i8.cu) rather than the SIMT kernels */
    float *y, *x, *w, *bias;
    void *wp; /* w prepared for precision (ours on the tensor cores, or in int8 slices): once, outside the timing */
    void *scratch; /* the int8 slices' */
    size_t scratch_bytes;
    int B, IN, OUT;
} dense_ctx;

static int op_dense(void *ctx, cudaStream_t s, nc_error *err) {
    dense_ctx *g = (dense_ctx *)ctx;
    if (!g->blas) {
        if (g->i8)
            return nc_cuda_dense_i8_forward_prepared(g->y, g->x, g->wp, g->bias, g->B, g->IN, g->OUT, g->scratch,
                                                     g->scratch_bytes, 0, NC_DENSE_I8_AUTO, s, err);
        if (g->precision == NC_PRECISION_FP32)
            return nc_cuda_dense_forward(g->y, g->x, g->w, g->bias, g->B, g->IN, g->OUT, s, err);
        return nc_cuda_dense_tc_forward_prepared(g->precision, g->y, g->x, g->wp, g->bias, g->B, g->IN, g->OUT, s, err);
    }
    /* Row-major y (B, OUT) = x (B, IN) w^T, w (OUT, IN): column-major y^T (OUT, B) = (w^T)^T x^T, no bias. */
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st = lib->cublasSetMathMode(g->h, g->precision == NC_PRECISION_TF32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                                       : CUBLAS_DEFAULT_MATH);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = lib->cublasSgemm(g->h, CUBLAS_OP_T, CUBLAS_OP_N, g->OUT, g->B, g->IN, &one, g->w, g->IN, g->x, g->IN,
                              &zero, g->y, g->OUT);
    if (st != CUBLAS_STATUS_SUCCESS)
        return nc_fail(err, NC_ERR_DEVICE, "cublasSgemm (%s) failed: %s", prec_name(g->precision),
                       lib->cublasGetStatusString(st));
    return NC_OK;
}

/* Dense layer li of m alone at batch N: cuBLAS fp32 first (the yardstick) and TF32, then our fp32 GEMMs (SIMT, and
 * on int8 slices where the layer has IN <= NC_DENSE_I8_MAX_IN: the cuda backend's at fp32 where OUT > 32) and our
 * tensor-core GEMM at every precision it takes. Random x and w, bias for ours. */
static int bench_dense(bench *b, const nc_model *m, int li, int N, nc_error *err) {
    const nc_layer *l = &m->layers[li];
    const int IN = (int)nc_shape_size(l->in), OUT = l->m;
    dense_ctx g;
    memset(&g, 0, sizeof g);
    g.h = b->blas;
    g.B = N, g.IN = IN, g.OUT = OUT;
    int rc = NC_OK, runs = 0;
    double ms = 0.0, blas_ms = 0.0;
    char what[48];
    snprintf(what, sizeof what, "%.20s d%d %dx%d", m->name, li, IN, OUT);
    CUDA_TRY(cudaMalloc((void **)&g.x, (size_t)N * IN * sizeof(float)));
    CUDA_TRY(cudaMalloc((void **)&g.w, (size_t)OUT * IN * sizeof(float)));
    CUDA_TRY(cudaMalloc((void **)&g.bias, (size_t)OUT * sizeof(float)));
    CUDA_TRY(cudaMalloc((void **)&g.y, (size_t)N * OUT * sizeof(float)));
    bench_fill_kernel<<<grid_for((size_t)N * IN), 256, 0, b->stream>>>(g.x, (size_t)N * IN, 21, -1.0f, 1.0f);
    bench_fill_kernel<<<grid_for((size_t)OUT * IN), 256, 0, b->stream>>>(
        g.w, (size_t)OUT * IN, 22, -1.0f / sqrtf((float)IN), 1.0f / sqrtf((float)IN));
    bench_fill_kernel<<<grid_for(OUT), 256, 0, b->stream>>>(g.bias, OUT, 23, -0.1f, 0.1f);
    CUDA_TRY(cudaGetLastError());
    {
        const double flops = 2.0 * N * (double)IN * OUT;
        const double bytes = 4.0 * ((double)N * IN + (double)OUT * IN + (double)N * OUT);
        /* Rows: (blas, precision), cuBLAS fp32 first; then ours in fp32 (SIMT, int8 slices) and at every other
         * precision. */
        for (int i = 0; i < 3 + NC_PRECISION_COUNT; i++) {
            g.blas = i < 2;
            g.i8 = i == 3;
            g.precision = i == 0 ? NC_PRECISION_FP32 : i == 1 ? NC_PRECISION_TF32 : i < 4 ? NC_PRECISION_FP32 : i - 3;
            if (g.i8 && IN > NC_DENSE_I8_MAX_IN) continue;
            char label[48], note[96];
            if (g.blas)
                snprintf(label, sizeof label, "cublas sgemm %s", g.precision ? "tf32 math" : "default math");
            else
                snprintf(label, sizeof label, "ours %s", g.precision ? "tensor cores" : g.i8 ? "int8 slices" : "simt");
            if (g.i8) { /* as the backend does at load time, and its scratch */
                cudaFree(g.wp);
                g.wp = NULL;
                CUDA_TRY(cudaMalloc(&g.wp, nc_cuda_dense_i8_prepared_size(IN, OUT)));
                rc = nc_cuda_dense_i8_prepare(g.wp, g.w, IN, OUT, b->stream, err);
                if (!rc) rc = nc_cuda_dense_i8_scratch_size(&g.scratch_bytes, N, IN, OUT, 0, NC_DENSE_I8_AUTO, err);
                if (!rc) CUDA_TRY(cudaMalloc(&g.scratch, g.scratch_bytes));
            } else if (!g.blas && g.precision != NC_PRECISION_FP32) { /* as the backend does at load time */
                cudaFree(g.wp);
                g.wp = NULL;
                CUDA_TRY(cudaMalloc(&g.wp, nc_cuda_dense_tc_prepared_size(g.precision, IN, OUT)));
                rc = nc_cuda_dense_tc_prepare(g.precision, g.wp, g.w, IN, OUT, b->stream, err);
            }
            if (!rc) rc = time_median(b, op_dense, &g, &ms, &runs, err);
            if (rc == NC_ERR_ARG) { /* a precision our tensor-core GEMM does not take */
                fprintf(b->out, "%-30s %6d  %-28s %-6s not taken: %s\n", what, N, label, prec_name(g.precision),
                        err->msg);
                rc = NC_OK;
                continue;
            }
            if (rc) goto cleanup;
            if (i == 0) blas_ms = ms;
            precision_note(g.precision, note, sizeof note);
            if (g.blas) snprintf(note + strlen(note), sizeof note - strlen(note), "%sno bias", note[0] ? ", " : "");
            if (g.i8) snprintf(note, sizeof note, "fp32 in three int8 slices, exact int32 sums");
            const op_cost c = make_cost(b, flops, bytes + (g.blas ? 0.0 : 4.0 * OUT), g.precision, 0);
            print_row(b, what, N, label, g.precision, ms, &c, blas_ms, note);
            if (!b->dense) continue;
            cJSON *r = cJSON_CreateObject();
            cJSON_AddStringToObject(r, "model", m->name);
            cJSON_AddNumberToObject(r, "layer", li);
            cJSON_AddNumberToObject(r, "IN", IN);
            cJSON_AddNumberToObject(r, "OUT", OUT);
            cJSON_AddStringToObject(r, "impl", label);
            cJSON_AddBoolToObject(r, "cublas", g.blas);
            row_json(r, N, g.precision, note, ms, runs, &c);
            cJSON_AddNumberToObject(r, "vs_cublas_fp32", blas_ms > 0.0 ? blas_ms / ms : 0.0);
            cJSON_AddItemToArray(b->dense, r);
        }
    }
cleanup:
    lib->cublasSetMathMode(b->blas, CUBLAS_DEFAULT_MATH);
    cudaFree(g.x);
    cudaFree(g.w);
    cudaFree(g.wp);
    cudaFree(g.scratch);
    cudaFree(g.bias);
    cudaFree(g.y);
    return rc;
}

/* ------------------------------------------------------------------ networks */

void nc_bench_shapes_of(const nc_model *m, nc_bench_shape *shapes, int max, int *n) {
    *n = 0;
    int ci = 0;
    for (int li = 0; li < m->n_layers && *n < max; li++) {
        const nc_layer *l = &m->layers[li];
        if (l->kind != NC_CONV) continue;
        nc_bench_shape *s = &shapes[(*n)++];
        memset(s, 0, sizeof *s);
        snprintf(s->name, sizeof s->name, "%.20s c%d %dx%dx%d m%d k%d", m->name, ci++, l->in.c, l->in.h, l->in.w, l->m,
                 l->k);
        s->C = l->in.c, s->H = l->in.h, s->W = l->in.w, s->M = l->m, s->K = l->k;
        s->act = s->pool = -1;
        int j = li + 1;
        if (j < m->n_layers && nc_layer_is_activation(m->layers[j].kind)) s->act = (int)m->layers[j++].kind;
        if (j < m->n_layers && (m->layers[j].kind == NC_MAXPOOL || m->layers[j].kind == NC_AVGPOOL)) {
            s->pool = (int)m->layers[j].kind;
            s->P = m->layers[j].p, s->S = m->layers[j].s;
        }
        s->input_u8 = li == 0;
        for (int p = 0; p < 256; p++) s->lut[p] = nc_scale_pixel(m, (uint8_t)p);
    }
}

/* Wall times in ms of nc_session_run on the first n test images, host uint8 to predictions, after a warm-up: the
 * median, min and max of reps runs (ms[0..2]), so that a line's text shows whether it was slow in all its runs or
 * in a few. */
static int time_network(const bench *b, const nc_model *m, const char *backend, int version, int precision,
                        int dense_sums, const nc_dataset *ds, int n, int reps, int *pred, double ms[3], nc_error *err) {
    nc_run_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.conv_kernel = version;
    opts.precision = precision;
    opts.dense_sums = dense_sums;
    opts.device = b->device;
    opts.devices = b->devices;
    nc_session *s = NULL;
    int rc = nc_session_create(&s, m, backend, &opts, err);
    if (rc) return rc;
    double t[MAX_REPS];
    int k = 0;
    rc = nc_session_run(s, ds->images, n, ds->h, ds->w, pred, NULL, NULL, err); /* warm-up */
    while (!rc && k < reps && k < MAX_REPS) {
        const double t0 = nc_now();
        rc = nc_session_run(s, ds->images, n, ds->h, ds->w, pred, NULL, NULL, err);
        t[k++] = 1e3 * (nc_now() - t0);
    }
    nc_session_free(s);
    if (rc) return rc;
    qsort(t, (size_t)k, sizeof t[0], cmp_double);
    ms[0] = k % 2 ? t[k / 2] : 0.5 * (t[k / 2 - 1] + t[k / 2]);
    ms[1] = t[0], ms[2] = t[k - 1];
    return NC_OK;
}

static double correctness(const int *pred, const nc_dataset *ds, int n) {
    int ok = 0;
    for (int i = 0; i < n; i++) ok += pred[i] == ds->labels[i];
    return (double)ok / n;
}

/* The whole network, host uint8 images to predictions: the cuda backend at every precision (its default conv
 * kernels: --conv-kernel 0) and at fp32 with --dense-sums fp32, then the cudnn backend, which every cuda line is
 * compared with. Line i: cuda at precision i for i < NC_PRECISION_COUNT, then cuda fp32 on fp32 dense sums, then
 * cudnn. */
static int bench_network(bench *b, const nc_model *m, const nc_dataset *ds, int n, cJSON *nets, nc_error *err) {
    enum { SUMS = NC_PRECISION_COUNT, LINES = NC_PRECISION_COUNT + 2 }; /* the last: cudnn */
    int *pred = (int *)malloc((size_t)n * sizeof(int));
    if (!pred) return nc_fail(err, NC_ERR_NOMEM, "out of host memory");
    double t[LINES] = {0}, spread[LINES][3] = {{0}}, acc[LINES] = {0};
    cJSON *rows[LINES] = {0};
    int rc = NC_OK, gpus = 1;
    char on[32] = ""; /* " --devices N" where the lines run on several GPUs */
    if (b->devices == NC_ALL_DEVICES || b->devices > 1) {
        gpus = b->devices == NC_ALL_DEVICES ? nc_cuda_gpu_count() - b->device : b->devices;
        snprintf(on, sizeof on, " --devices %d", gpus);
    }
    for (int i = 0; i < LINES && !rc; i++) {
        const char *backend = i < LINES - 1 ? "cuda" : "cudnn";
        const int precision = i < NC_PRECISION_COUNT ? i : NC_PRECISION_FP32;
        const int sums = i == SUMS ? NC_DENSE_SUMS_FP32 : NC_DENSE_SUMS_SLICES;
        rc = time_network(b, m, backend, 0, precision, sums, ds, n, b->reps < 10 ? b->reps : 10, pred, spread[i],
                          err);
        t[i] = spread[i][0];
        if (rc == NC_ERR_UNAVAILABLE && i == LINES - 1) { /* no cudnn built */
            rc = NC_OK;
            continue;
        }
        if (rc == NC_ERR_ARG) { /* a precision this build's backend refuses */
            fprintf(b->out, "%-30s %6d  network %s --precision %s%s%s: not run: %s\n", m->name, n, backend,
                    prec_name(precision), i == SUMS ? " --dense-sums fp32" : "", on, err->msg);
            t[i] = 0.0, rc = NC_OK;
            continue;
        }
        if (rc) break;
        acc[i] = correctness(pred, ds, n);
        if (nets) {
            rows[i] = cJSON_CreateObject();
            cJSON_AddStringToObject(rows[i], "model", m->name);
            cJSON_AddNumberToObject(rows[i], "N", n);
            cJSON_AddStringToObject(rows[i], "backend", backend);
            cJSON_AddNumberToObject(rows[i], "conv_kernel", 0);
            cJSON_AddStringToObject(rows[i], "precision", prec_name(precision));
            if (i < LINES - 1) cJSON_AddStringToObject(rows[i], "dense_sums", i == SUMS ? "fp32" : "slices");
            cJSON_AddBoolToObject(rows[i], "exact", precision == NC_PRECISION_FP32);
            cJSON_AddNumberToObject(rows[i], "devices", gpus);
            cJSON_AddNumberToObject(rows[i], "ms", t[i]);
            cJSON_AddNumberToObject(rows[i], "min_ms", spread[i][1]);
            cJSON_AddNumberToObject(rows[i], "max_ms", spread[i][2]);
            cJSON_AddNumberToObject(rows[i], "correctness", acc[i]);
            cJSON_AddItemToArray(nets, rows[i]);
        }
    }
    const double dnn = t[LINES - 1];
    for (int i = 0; i < LINES && !rc; i++) {
        if (t[i] <= 0.0) continue;
        const int precision = i < NC_PRECISION_COUNT ? i : NC_PRECISION_FP32;
        char note[96];
        precision_note(precision, note, sizeof note);
        if (i == SUMS) snprintf(note, sizeof note, "dense layers on fp32 sums (--dense-sums fp32)");
        fprintf(b->out, "%-30s %6d  network %-5s --precision %-6s%s %10.3f ms (%.3f-%.3f)  correctness %.4f", m->name,
                n, i < LINES - 1 ? "cuda" : "cudnn", prec_name(precision), on, t[i], spread[i][1], spread[i][2],
                acc[i]);
        if (i < LINES - 1 && dnn > 0.0) fprintf(b->out, "  %.2fx the cudnn backend", dnn / t[i]);
        fprintf(b->out, "%s%s\n", note[0] ? "  " : "", note);
        if (rows[i]) cJSON_AddNumberToObject(rows[i], "vs_cudnn_backend", dnn > 0.0 ? dnn / t[i] : 0.0);
    }
    free(pred);
    return rc;
}

/* Every version's predictions on the first n images against cpu-ref's, run as --conv-kernel v --precision of the
 * version (so the reduced-precision ones have their dense layers on the tensor cores too). Exact versions must
 * equal cpu-ref; the others fail the check only where they cost more than 0.002 of correctness. A version the
 * backend will not run counts in *unrun. */
static int check_network(bench *b, const nc_model *m, const nc_dataset *ds, int n, cJSON *checks, int *bad_total,
                         int *unrun, nc_error *err) {
    int *ref = (int *)malloc((size_t)n * sizeof(int)), *pred = (int *)malloc((size_t)n * sizeof(int));
    int rc = NC_OK;
    nc_session *s = NULL;
    if (!ref || !pred) {
        rc = nc_fail(err, NC_ERR_NOMEM, "out of host memory");
        goto done;
    }
    if ((rc = nc_session_create(&s, m, "cpu-ref", NULL, err))) goto done;
    rc = nc_session_run(s, ds->images, n, ds->h, ds->w, ref, NULL, NULL, err);
    nc_session_free(s);
    if (rc) goto done;
    for (int v = 1; v <= nc_cuda_conv_num_versions(); v++) {
        nc_run_opts opts;
        memset(&opts, 0, sizeof opts);
        opts.conv_kernel = v;
        opts.precision = nc_cuda_conv_version_precision(v);
        opts.device = b->device;
        rc = nc_session_create(&s, m, "cuda", &opts, err);
        if (!rc) {
            rc = nc_session_run(s, ds->images, n, ds->h, ds->w, pred, NULL, NULL, err);
            nc_session_free(s);
        }
        if (rc == NC_ERR_ARG) {
            fprintf(b->out, "%-30s %6d  check v%d %-14s not run: %s\n", m->name, n, v, nc_cuda_conv_version_name(v),
                    err->msg);
            if (checks) {
                cJSON *r = cJSON_CreateObject();
                cJSON_AddStringToObject(r, "model", m->name);
                cJSON_AddNumberToObject(r, "N", n);
                cJSON_AddNumberToObject(r, "conv_kernel", v);
                cJSON_AddStringToObject(r, "precision", prec_name(opts.precision));
                cJSON_AddStringToObject(r, "error", err->msg);
                cJSON_AddItemToArray(checks, r);
            }
            ++*unrun;
            rc = NC_OK;
            continue;
        }
        if (rc) goto done;
        int differ = 0;
        for (int i = 0; i < n; i++) differ += pred[i] != ref[i];
        const double loss = correctness(ref, ds, n) - correctness(pred, ds, n);
        const int exact = opts.precision == NC_PRECISION_FP32;
        const int failed = differ && (exact || loss > 0.002);
        if (failed) *bad_total += differ;
        fprintf(b->out, "%-30s %6d  check v%d %-14s predictions differing from cpu-ref: %d", m->name, n, v,
                nc_cuda_conv_version_name(v), differ);
        if (!exact) fprintf(b->out, " (%s, correctness loss %.4f)", prec_name(opts.precision), loss);
        fprintf(b->out, "%s\n", failed ? "  FAILED" : "");
        if (checks) {
            cJSON *r = cJSON_CreateObject();
            cJSON_AddStringToObject(r, "model", m->name);
            cJSON_AddNumberToObject(r, "N", n);
            cJSON_AddNumberToObject(r, "conv_kernel", v);
            cJSON_AddStringToObject(r, "precision", prec_name(opts.precision));
            cJSON_AddNumberToObject(r, "differ_from_cpu_ref", differ);
            cJSON_AddNumberToObject(r, "correctness", correctness(pred, ds, n));
            cJSON_AddNumberToObject(r, "correctness_loss", loss);
            cJSON_AddBoolToObject(r, "passed", !failed);
            cJSON_AddItemToArray(checks, r);
        }
    }
done:
    free(ref);
    free(pred);
    return rc;
}

/* ------------------------------------------------------------------ entry */

int nc_cuda_gpu_count(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return count;
}

static int same_shape(const nc_bench_shape *a, const nc_bench_shape *b) {
    return a->C == b->C && a->H == b->H && a->W == b->W && a->M == b->M && a->K == b->K && a->act == b->act &&
           a->pool == b->pool && a->P == b->P && a->input_u8 == b->input_u8;
}

/* Whether an earlier model has this convolution shape (2017 high and low, say): it is timed once. */
static int shape_seen(const nc_cuda_bench_opts *o, int model, const nc_bench_shape *s) {
    for (int e = 0; e < model; e++) {
        nc_bench_shape prev[NC_MAX_LAYERS];
        int np = 0;
        nc_bench_shapes_of(o->models[e], prev, NC_MAX_LAYERS, &np);
        for (int q = 0; q < np; q++)
            if (same_shape(&prev[q], s)) return 1;
    }
    return 0;
}

static void versions_json(cJSON *json) {
    cJSON *vs = cJSON_AddArrayToObject(json, "versions");
    for (int v = 1; v <= nc_cuda_conv_num_versions(); v++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "version", v);
        cJSON_AddStringToObject(r, "name", nc_cuda_conv_version_name(v));
        cJSON_AddStringToObject(r, "precision", prec_name(nc_cuda_conv_version_precision(v)));
        cJSON_AddItemToArray(vs, r);
    }
    int n = 0;
    const nc_conv_tc_tuning *t = nc_conv_tc_tunings(&n);
    cJSON *ts = cJSON_AddArrayToObject(json, "tunings");
    for (int i = 0; i < n; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "tuning", i);
        cJSON_AddNumberToObject(r, "images_per_block", t[i].images_per_block);
        cJSON_AddItemToArray(ts, r);
    }
}

int nc_cuda_bench(const nc_cuda_bench_opts *o, FILE *out, cJSON *json, nc_error *err) {
    if (nc_cuda_gpu_count() == 0) return nc_fail(err, NC_ERR_UNAVAILABLE, "bench: no CUDA GPU found");
    int rc = NC_OK;
    bench b;
    memset(&b, 0, sizeof b);
    b.out = out;
    b.reps = o->reps < 3 ? 3 : o->reps;
    b.sweep = o->sweep;
    b.versions = o->versions;
    b.device = o->device;
    b.devices = o->devices;
    CUDA_RET(cudaSetDevice(o->device));
#ifdef NC_HAVE_CUDNN
    rc = nc_vendor_load(&lib, NC_VENDOR_CUBLAS | NC_VENDOR_CUDNN, err);
#else
    rc = nc_vendor_load(&lib, NC_VENDOR_CUBLAS, err);
#endif
    if (rc) return rc;
    cudaDeviceProp prop;
    CUDA_RET(cudaGetDeviceProperties(&prop, o->device));
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    char date[32];
    const time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    fprintf(out, "GPU: %s (%d SMs, %.0f MB L2), CUDA driver API %d, runtime %d", prop.name, prop.multiProcessorCount,
            prop.l2CacheSize / 1e6, drv, rt);
#ifdef NC_HAVE_CUDNN
    fprintf(out, ", cuDNN %zu", lib->cudnnGetVersion());
#endif
    fprintf(out, ", %s\n", date);
    fprintf(out, "conv versions:");
    for (int v = 1; v <= nc_cuda_conv_num_versions(); v++)
        fprintf(out, " v%d %s (%s)%s", v, nc_cuda_conv_version_name(v), prec_name(nc_cuda_conv_version_precision(v)),
                v < nc_cuda_conv_num_versions() ? "," : "\n");
    cJSON *nets = NULL, *checks = NULL;
    if (json) {
        cJSON *dj = cJSON_AddObjectToObject(json, "device");
        cJSON_AddStringToObject(dj, "gpu", prop.name);
        cJSON_AddNumberToObject(dj, "sms", prop.multiProcessorCount);
        cJSON_AddNumberToObject(dj, "cuda_driver_api", drv);
        cJSON_AddNumberToObject(dj, "cuda_runtime", rt);
#ifdef NC_HAVE_CUDNN
        cJSON_AddNumberToObject(dj, "cudnn", (double)lib->cudnnGetVersion());
#endif
        cJSON_AddStringToObject(dj, "date", date);
        versions_json(json);
        b.rows = cJSON_AddArrayToObject(json, "layers");
        b.dense = cJSON_AddArrayToObject(json, "dense");
        b.sweeps = cJSON_AddArrayToObject(json, "sweep");
        b.not_taken = cJSON_AddArrayToObject(json, "not_taken");
        nets = cJSON_AddArrayToObject(json, "networks");
        checks = cJSON_AddArrayToObject(json, "checks");
    }
    CUDA_TRY(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    CUDA_TRY(cudaEventCreate(&b.e0));
    CUDA_TRY(cudaEventCreate(&b.e1));
    CUDA_TRY(cudaMalloc(&b.flush, FLUSH_BYTES));
    if (lib->cublasCreate(&b.blas) != CUBLAS_STATUS_SUCCESS) {
        b.blas = NULL;
        rc = nc_fail(err, NC_ERR_DEVICE, "cublasCreate failed");
        goto cleanup;
    }
    lib->cublasSetStream(b.blas, b.stream);
    if ((rc = measure_floors(&b, err))) goto cleanup;
    fprintf(out,
            "floors: copy %.0f GB/s (read + written), FFMA %.1f TFLOP/s, tensor tf32 %.0f, fp16 %.0f, bf16 %.0f "
            "TFLOP/s (3xtf32: 3 MMAs a product, 2 on uint8 pixels, against tf32's)\n",
            b.bw / 1e9, b.fp32 / 1e12, b.tc32 / 1e12, b.tc16 / 1e12, b.tcbf16 / 1e12);
    if (json) {
        cJSON *fj = cJSON_AddObjectToObject(json, "floors");
        cJSON_AddNumberToObject(fj, "copy_bytes_per_s", b.bw);
        cJSON_AddNumberToObject(fj, "fp32_flops_per_s", b.fp32);
        cJSON_AddNumberToObject(fj, "tensor_tf32_flops_per_s", b.tc32);
        cJSON_AddNumberToObject(fj, "tensor_fp16_flops_per_s", b.tc16);
        cJSON_AddNumberToObject(fj, "tensor_bf16_flops_per_s", b.tcbf16);
    }
    if (o->n_ns && (o->n_models || o->n_shapes))
        fprintf(out, header, "layer", "N", "version", "prec", "ms", "GFLOP/s", "GB/s", "floor", "x cudnn", "note");
    for (int i = 0; i < o->n_models; i++) {
        nc_bench_shape shapes[NC_MAX_LAYERS];
        int n = 0;
        nc_bench_shapes_of(o->models[i], shapes, NC_MAX_LAYERS, &n);
        for (int s = 0; s < n; s++)
            for (int j = 0; j < o->n_ns && !shape_seen(o, i, &shapes[s]); j++)
                if ((rc = bench_shape(&b, &shapes[s], o->ns[j], err))) goto cleanup;
    }
    for (int s = 0; s < o->n_shapes; s++)
        for (int j = 0; j < o->n_ns; j++)
            if ((rc = bench_shape(&b, &o->shapes[s], o->ns[j], err))) goto cleanup;
    {
        int seen[MAX_DENSE_SEEN][3], n_seen = 0, header_done = 0;
        for (int i = 0; i < o->n_models; i++)
            for (int li = 0; li < o->models[i]->n_layers; li++) {
                const nc_layer *l = &o->models[i]->layers[li];
                if (l->kind != NC_DENSE) continue;
                for (int j = 0; j < o->n_ns; j++) {
                    const int key[3] = {(int)nc_shape_size(l->in), l->m, o->ns[j]};
                    int dup = 0;
                    for (int q = 0; q < n_seen && !dup; q++)
                        dup = seen[q][0] == key[0] && seen[q][1] == key[1] && seen[q][2] == key[2];
                    if (dup) continue;
                    if (n_seen < MAX_DENSE_SEEN) memcpy(seen[n_seen++], key, sizeof key);
                    if (!header_done++)
                        fprintf(out, header, "dense layer", "N", "gemm", "prec", "ms", "GFLOP/s", "GB/s", "floor",
                                "x cublas", "note");
                    if ((rc = bench_dense(&b, o->models[i], li, o->ns[j], err))) goto cleanup;
                }
            }
    }
    if (o->data) {
        for (int i = 0; i < o->n_models; i++)
            for (int j = 0; j < o->n_ns; j++)
                if (o->ns[j] <= o->data->n && (rc = bench_network(&b, o->models[i], o->data, o->ns[j], nets, err)))
                    goto cleanup;
        int bad = 0, unrun = 0;
        for (int i = 0; i < o->n_models && o->check_n > 0; i++) {
            const int n = o->check_n < o->data->n ? o->check_n : o->data->n;
            if ((rc = check_network(&b, o->models[i], o->data, n, checks, &bad, &unrun, err))) goto cleanup;
        }
        if (bad || unrun)
            rc = nc_fail(err, NC_ERR_MISMATCH,
                         "bench: %d predictions differ from cpu-ref beyond their precision's allowance, %d versions "
                         "could not run (lines 'check')",
                         bad, unrun);
    }
cleanup:
    if (b.blas) lib->cublasDestroy(b.blas);
    if (b.flush) cudaFree(b.flush);
    if (b.e0) cudaEventDestroy(b.e0);
    if (b.e1) cudaEventDestroy(b.e1);
    if (b.stream) cudaStreamDestroy(b.stream);
    return rc;
}
