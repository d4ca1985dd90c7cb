/*
 * The GPU part of `nanoconv bench` (bench_gpu.h): the ladder of convolution versions against cuDNN and against
 * the floors of the machine, all measured in one run, and the whole network on the cuda and cudnn backends.
 *
 *   nanoconv bench-gpu --model models/fashion-2017-high.safetensors -n 100,1000,10000 --json out.json
 *   nanoconv bench-gpu --layer 1x28x28:50:5:tanh:maxpool2 -n 10000
 */
#include <cjson/cJSON.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef NC_HAVE_CUDNN
#include <cudnn.h>
#endif

#include "core/backend.h"
#include "cuda/bench_gpu.h"
#include "cuda/conv_ladder.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_layers.h"

/* Bytes memset between timed runs, so that no run finds the last one's data in the 50 MB L2. */
#define FLUSH_BYTES (256u << 20)
/* A row's timed runs stop once they add up to about this long (but never fewer than 3). */
#define ROW_BUDGET_MS 250.0
#define MAX_REPS 50

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
    void *flush;
    int reps;
    FILE *out;
    cJSON *rows; /* "layers" array, or NULL */
    double bw;   /* bytes/s of a device-to-device copy (read + written) */
    double fp32; /* FLOP/s of FFMA */
    double tc16; /* FLOP/s of cuBLAS fp16 GEMM (fp32 accumulation) */
    double tc32; /* FLOP/s of cuBLAS TF32 GEMM */
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
    int tf32;
} gemm_ctx;

static int op_gemm(void *ctx, cudaStream_t s, nc_error *err) {
    gemm_ctx *g = (gemm_ctx *)ctx;
    const float one = 1.0f, zero = 0.0f;
    const cudaDataType_t t = g->tf32 ? CUDA_R_32F : CUDA_R_16F;
    (void)s;
    const cublasStatus_t st = cublasGemmEx(
        g->h, CUBLAS_OP_N, CUBLAS_OP_N, g->n, g->n, g->n, &one, g->a, t, g->n, g->b, t, g->n, &zero, g->c, CUDA_R_32F,
        g->n, g->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS)
        return nc_fail(err, NC_ERR_DEVICE, "cublasGemmEx (%s) failed: %s", g->tf32 ? "tf32" : "fp16",
                       cublasGetStatusString(st));
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
    gemm_ctx gc = {NULL, NULL, NULL, NULL, 8192, 0};
    const size_t gn = (size_t)gc.n * gc.n;
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
    /* Tensor cores: an 8192^3 GEMM through cuBLAS, fp16 operands and TF32, fp32 accumulation. */
    if (cublasCreate(&gc.h) != CUBLAS_STATUS_SUCCESS) {
        rc = nc_fail(err, NC_ERR_DEVICE, "cublasCreate failed");
        goto cleanup;
    }
    cublasSetStream(gc.h, b->stream);
    CUDA_TRY(cudaMalloc(&gc.a, gn * 4));
    CUDA_TRY(cudaMalloc(&gc.b, gn * 4));
    CUDA_TRY(cudaMalloc(&gc.c, gn * 4));
    bench_fill_kernel<<<grid_for(gn), 256, 0, b->stream>>>((float *)gc.a, gn, 2, -1.0f, 1.0f);
    bench_fill_kernel<<<grid_for(gn), 256, 0, b->stream>>>((float *)gc.b, gn, 3, -1.0f, 1.0f);
    CUDA_TRY(cudaGetLastError());
    gc.tf32 = 1;
    if ((rc = time_median(b, op_gemm, &gc, &ms, &runs, err))) goto cleanup;
    b->tc32 = 2.0 * (double)gn * gc.n / (ms * 1e-3);
    /* fp16 operands: the same buffers' first halves, converted. */
    bench_to_half_kernel<<<grid_for(gn), 256, 0, b->stream>>>((__half *)gc.c, (const float *)gc.a, gn);
    CUDA_TRY(cudaMemcpyAsync(gc.a, gc.c, gn * 2, cudaMemcpyDeviceToDevice, b->stream));
    bench_to_half_kernel<<<grid_for(gn), 256, 0, b->stream>>>((__half *)gc.c, (const float *)gc.b, gn);
    CUDA_TRY(cudaMemcpyAsync(gc.b, gc.c, gn * 2, cudaMemcpyDeviceToDevice, b->stream));
    CUDA_TRY(cudaGetLastError());
    gc.tf32 = 0;
    if ((rc = time_median(b, op_gemm, &gc, &ms, &runs, err))) goto cleanup;
    b->tc16 = 2.0 * (double)gn * gc.n / (ms * 1e-3);
cleanup:
    if (gc.h) cublasDestroy(gc.h);
    cudaFree(gc.a);
    cudaFree(gc.b);
    cudaFree(gc.c);
    cudaFree(fc.out);
    cudaFree(cc.dst);
    cudaFree(cc.src);
    return rc;
}

/* ------------------------------------------------------------------ layers */

typedef struct {
    const nc_bench_shape *sh;
    int N, version;
    float *y, *x, *k, *bias;
    uint8_t *xu;
    nc_conv_epilogue epi;
    nc_conv_lut lut;
} conv_ctx;

static int op_version(void *ctx, cudaStream_t s, nc_error *err) {
    conv_ctx *c = (conv_ctx *)ctx;
    const nc_bench_shape *h = c->sh;
    return nc_cuda_conv_forward(c->version, c->y, c->x, c->k, c->bias, c->N, h->C, h->H, h->W, h->M, h->K, s, err);
}

static int op_fused(void *ctx, cudaStream_t s, nc_error *err) {
    conv_ctx *c = (conv_ctx *)ctx;
    const nc_bench_shape *h = c->sh;
    return nc_conv_launch_fused(c->y, c->x, c->xu, c->xu ? &c->lut : NULL, c->k, c->bias, c->N, h->C, h->H, h->W, h->M,
                                h->K, &c->epi, s, err);
}

static int op_tc(void *ctx, cudaStream_t s, nc_error *err) {
    conv_ctx *c = (conv_ctx *)ctx;
    const nc_bench_shape *h = c->sh;
    return nc_conv_launch_tc(c->version, c->y, c->x, c->xu, c->xu ? &c->lut : NULL, c->k, c->bias, c->N, h->C, h->H,
                             h->W, h->M, h->K, &c->epi, s, err);
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
    const cudnnStatus_t st = cudnnConvolutionForward(d->h, &one, d->xd, d->x, d->wd, d->w, d->cd, d->algo, d->ws,
                                                     d->ws_size, &zero, d->yd, d->y);
    if (st != CUDNN_STATUS_SUCCESS)
        return nc_fail(err, NC_ERR_DEVICE, "cudnnConvolutionForward failed: %s", cudnnGetErrorString(st));
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
            return nc_fail(err, NC_ERR_DEVICE, "%s failed: %s", #call, cudnnGetErrorString(st_));                      \
    } while (0)

static int dnn_setup(dnn_ctx *d, const nc_bench_shape *h, int N, int half, size_t ws_max, const char **name,
                     nc_error *err) {
    const cudnnDataType_t t = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    const int Ho = h->H - h->K + 1, Wo = h->W - h->K + 1;
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(d->xd, CUDNN_TENSOR_NCHW, t, N, h->C, h->H, h->W));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(d->yd, CUDNN_TENSOR_NCHW, t, N, h->M, Ho, Wo));
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(d->wd, t, CUDNN_TENSOR_NCHW, h->M, h->C, h->K, h->K));
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d->cd, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, t));
    CUDNN_CHECK(cudnnSetConvolutionMathType(d->cd, half ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(d->h, d->xd, d->x, d->wd, d->w, d->cd, d->yd, d->y,
                                                       CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf, d->ws, ws_max));
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

typedef struct {
    double flops, bytes, floor_ms;
} op_cost;

static op_cost cost(const bench *b, const nc_bench_shape *h, int N, int fused, int u8, int elem, double peak) {
    const int Ho = h->H - h->K + 1, Wo = h->W - h->K + 1;
    int Yh = Ho, Yw = Wo;
    if (fused && h->pool >= 0) Yh = (Ho - h->P) / h->S + 1, Yw = (Wo - h->P) / h->S + 1;
    op_cost c;
    c.flops = 2.0 * N * h->M * Ho * Wo * (double)h->C * h->K * h->K;
    c.bytes = (double)N * h->C * h->H * h->W * (u8 ? 1 : elem) + (double)N * h->M * Yh * Yw * elem +
              (double)h->M * h->C * h->K * h->K * elem;
    const double tb = c.bytes / b->bw, tf = c.flops / peak;
    c.floor_ms = 1e3 * (tb > tf ? tb : tf);
    return c;
}

static void emit_row(bench *b, const nc_bench_shape *h, int N, const char *version, const char *precision,
                     const char *note, double ms, int runs, op_cost c, double cudnn_ms) {
    const double share = c.floor_ms / ms, vs = cudnn_ms > 0.0 ? cudnn_ms / ms : 0.0;
    fprintf(b->out, "%-30s %6d  %-26s %10.4f %9.0f %8.0f %7.1f%% %8.2f  %s\n", h->name, N, version, ms,
            c.flops / (ms * 1e-3) / 1e9, c.bytes / (ms * 1e-3) / 1e9, 100.0 * share, vs, note);
    if (!b->rows) return;
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "shape", h->name);
    cJSON_AddNumberToObject(r, "C", h->C);
    cJSON_AddNumberToObject(r, "H", h->H);
    cJSON_AddNumberToObject(r, "W", h->W);
    cJSON_AddNumberToObject(r, "M", h->M);
    cJSON_AddNumberToObject(r, "K", h->K);
    cJSON_AddNumberToObject(r, "N", N);
    cJSON_AddStringToObject(r, "version", version);
    cJSON_AddStringToObject(r, "precision", precision);
    cJSON_AddStringToObject(r, "note", note);
    cJSON_AddNumberToObject(r, "ms", ms);
    cJSON_AddNumberToObject(r, "runs", runs);
    cJSON_AddNumberToObject(r, "flops", c.flops);
    cJSON_AddNumberToObject(r, "bytes", c.bytes);
    cJSON_AddNumberToObject(r, "gflops", c.flops / (ms * 1e-3) / 1e9);
    cJSON_AddNumberToObject(r, "gbs", c.bytes / (ms * 1e-3) / 1e9);
    cJSON_AddNumberToObject(r, "floor_ms", c.floor_ms);
    cJSON_AddNumberToObject(r, "floor_share", share);
    cJSON_AddNumberToObject(r, "vs_cudnn_fp32", vs);
    cJSON_AddItemToArray(b->rows, r);
}

static int bench_shape(bench *b, const nc_bench_shape *h, int N, nc_error *err) {
    int rc = NC_OK, runs = 0;
    const int Ho = h->H - h->K + 1, Wo = h->W - h->K + 1;
    const size_t nx = (size_t)N * h->C * h->H * h->W, ny = (size_t)N * h->M * Ho * Wo;
    const size_t nk = (size_t)h->M * h->C * h->K * h->K;
    double ms = 0.0, cudnn_ms = 0.0;
    conv_ctx c;
    memset(&c, 0, sizeof c);
    uint8_t *xu = NULL; // (N, C, H, W) pixels, for the fused row that reads the model's input
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
        const int elem = half ? 2 : 4;
        if (cudnnCreate(&d.h) != CUDNN_STATUS_SUCCESS) {
            rc = nc_fail(err, NC_ERR_DEVICE, "cudnnCreate failed");
            goto cleanup;
        }
        cudnnSetStream(d.h, b->stream);
        cudnnCreateTensorDescriptor(&d.xd);
        cudnnCreateTensorDescriptor(&d.yd);
        cudnnCreateFilterDescriptor(&d.wd);
        cudnnCreateConvolutionDescriptor(&d.cd);
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
            fprintf(b->out, "%-30s %6d  cudnn %s: %s\n", h->name, N, half ? "fp16" : "fp32", err->msg);
            rc = NC_OK;
        } else {
            if (!half) cudnn_ms = ms;
            char v[48];
            snprintf(v, sizeof v, "cudnn %s %s", half ? "fp16" : "fp32", algo);
            emit_row(b, h, N, v, half ? "fp16" : "fp32", half ? "reduced precision (fp16 data and arithmetic)" : "", ms,
                     runs, cost(b, h, N, 0, 0, elem, half ? b->tc16 : b->fp32), cudnn_ms);
        }
        cudnnDestroyTensorDescriptor(d.xd);
        cudnnDestroyTensorDescriptor(d.yd);
        cudnnDestroyFilterDescriptor(d.wd);
        cudnnDestroyConvolutionDescriptor(d.cd);
        cudnnDestroy(d.h);
        cudaFree(d.x);
        cudaFree(d.w);
        cudaFree(d.y);
        cudaFree(d.ws);
        memset(&d, 0, sizeof d);
    }
#endif

    for (int v = 1; v <= nc_cuda_conv_num_versions(); v++) {
        char name[48];
        snprintf(name, sizeof name, "v%d %s", v, nc_cuda_conv_version_name(v));
        c.version = v;
        rc = time_median(b, op_version, &c, &ms, &runs, err);
        if (rc == NC_ERR_ARG) { /* a shape outside the version's range */
            fprintf(b->out, "%-30s %6d  %-26s not taken: %s\n", h->name, N, name, err->msg);
            rc = NC_OK;
            continue;
        }
        if (rc) goto cleanup;
        /* Versions 7 and 8 are reduced precision where they take the shape (C = 1), against the TF32 peak. */
        const nc_conv_epilogue alone = {-1, -1, 1, 1};
        const int tc = v >= 7 && nc_conv_tc_takes(h->C, h->H, h->W, h->M, h->K, &alone);
        const char *prec = tc ? nc_cuda_conv_version_note(v) : "fp32";
        emit_row(b, h, N, name, prec, tc ? prec : "", ms, runs, cost(b, h, N, 0, 0, 4, tc ? b->tc32 : b->fp32),
                 cudnn_ms);
    }
    /* Version 6 as the network runs it: with its activation and pooling, on uint8 pixels where it reads the
     * model's input. */
    c.epi.act = h->act;
    c.epi.pool = h->pool;
    c.epi.P = h->P;
    c.epi.S = h->S;
    if ((h->act >= 0 || h->pool >= 0) && nc_conv_direct_fuses(&c.epi, h->K)) {
        char name[48], note[64];
        c.xu = h->input_u8 ? xu : NULL;
        memcpy(c.lut.v, h->lut, sizeof c.lut.v);
        snprintf(name, sizeof name, "v6 fused%s", c.xu ? " u8" : "");
        snprintf(note, sizeof note, "fused %s+%s", kind_name(h->act), kind_name(h->pool));
        if ((rc = time_median(b, op_fused, &c, &ms, &runs, err))) goto cleanup;
        emit_row(b, h, N, name, "fp32", note, ms, runs, cost(b, h, N, 1, c.xu != NULL, 4, b->fp32), cudnn_ms);
        /* The tensor-core versions, fused, where they take the layer (else they are version 6, timed above). */
        for (int v = 7; v <= 8 && nc_conv_tc_takes(h->C, h->H, h->W, h->M, h->K, &c.epi); v++) {
            const char *prec = nc_cuda_conv_version_note(v);
            snprintf(name, sizeof name, "v%d fused%s", v, c.xu ? " u8" : "");
            snprintf(note, sizeof note, "fused %s+%s, %s", kind_name(h->act), kind_name(h->pool), prec);
            c.version = v;
            if ((rc = time_median(b, op_tc, &c, &ms, &runs, err))) goto cleanup;
            emit_row(b, h, N, name, prec, note, ms, runs, cost(b, h, N, 1, c.xu != NULL, 4, b->tc32), cudnn_ms);
        }
    }
cleanup:
#ifdef NC_HAVE_CUDNN
    if (d.h) cudnnDestroy(d.h);
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

/* Median wall time in ms of nc_session_run on the first n test images, host uint8 to predictions. */
static int time_network(const nc_model *m, const char *backend, int version, int precision, const nc_dataset *ds, int n,
                        int reps, int *pred, double *ms, nc_error *err) {
    nc_run_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.conv_kernel = version;
    opts.precision = precision;
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
    *ms = k % 2 ? t[k / 2] : 0.5 * (t[k / 2 - 1] + t[k / 2]);
    return NC_OK;
}

static double correctness(const int *pred, const nc_dataset *ds, int n) {
    int ok = 0;
    for (int i = 0; i < n; i++) ok += pred[i] == ds->labels[i];
    return (double)ok / n;
}

static int bench_network(bench *b, const nc_model *m, const nc_dataset *ds, int n, cJSON *nets, nc_error *err) {
    int *pred = (int *)malloc((size_t)n * sizeof(int));
    if (!pred) return nc_fail(err, NC_ERR_NOMEM, "out of host memory");
    /* cudnn last: the cuda lines are compared with it. Precisions 1, 2: tf32 and 3xtf32 (versions 7, 8). */
    const char *backends[5] = {"cuda", "cuda", "cuda", "cuda", "cudnn"};
    const int versions[5] = {6, 0, 0, 0, 0}, precisions[5] = {0, 0, 1, 2, 0};
    static const char *const prec_names[3] = {"fp32", "tf32", "3xtf32"};
    double t[5] = {0, 0, 0, 0, 0};
    int rc = NC_OK;
    for (int i = 0; i < 5 && !rc; i++) {
        rc = time_network(m, backends[i], versions[i], precisions[i], ds, n, b->reps < 10 ? b->reps : 10, pred, &t[i],
                          err);
        if (rc == NC_ERR_UNAVAILABLE && i == 4) { /* no cudnn built */
            rc = NC_OK;
            continue;
        }
        if (rc) break;
        const double acc = correctness(pred, ds, n);
        fprintf(b->out, "%-30s %6d  network %s --conv-kernel %d --precision %s: %.3f ms, correctness %.4f\n", m->name,
                n, backends[i], versions[i], prec_names[precisions[i]], t[i], acc);
        if (nets) {
            cJSON *r = cJSON_CreateObject();
            cJSON_AddStringToObject(r, "model", m->name);
            cJSON_AddNumberToObject(r, "N", n);
            cJSON_AddStringToObject(r, "backend", backends[i]);
            cJSON_AddNumberToObject(r, "conv_kernel", versions[i]);
            cJSON_AddStringToObject(r, "precision", prec_names[precisions[i]]);
            cJSON_AddNumberToObject(r, "ms", t[i]);
            cJSON_AddNumberToObject(r, "correctness", acc);
            cJSON_AddItemToArray(nets, r);
        }
    }
    for (int i = 0; i < 4 && !rc && t[4] > 0.0; i++)
        fprintf(b->out, "%-30s %6d  network: cuda --conv-kernel %d --precision %s is %.2fx the cudnn backend\n",
                m->name, n, versions[i], prec_names[precisions[i]], t[4] / t[i]);
    free(pred);
    return rc;
}

/* Every version's predictions on the first n images against cpu-ref's. Versions 7 and 8 run as --precision tf32
 * and 3xtf32 do (their dense layers on the tensor cores too): reduced precision, so their differences are
 * reported and fail the check only where they cost more than 0.002 of correctness. */
static int check_network(bench *b, const nc_model *m, const nc_dataset *ds, int n, cJSON *checks, int *bad_total,
                         nc_error *err) {
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
        opts.precision = v == 7 ? NC_PRECISION_TF32 : v == 8 ? NC_PRECISION_3XTF32 : NC_PRECISION_FP32;
        if ((rc = nc_session_create(&s, m, "cuda", &opts, err))) goto done;
        rc = nc_session_run(s, ds->images, n, ds->h, ds->w, pred, NULL, NULL, err);
        nc_session_free(s);
        if (rc) goto done;
        int differ = 0;
        for (int i = 0; i < n; i++) differ += pred[i] != ref[i];
        const double loss = correctness(ref, ds, n) - correctness(pred, ds, n);
        if (opts.precision == NC_PRECISION_FP32 || loss > 0.002) *bad_total += differ;
        fprintf(b->out, "%-30s %6d  check v%d %-14s predictions differing from cpu-ref: %d", m->name, n, v,
                nc_cuda_conv_version_name(v), differ);
        if (opts.precision != NC_PRECISION_FP32)
            fprintf(b->out, " (%s, correctness loss %.4f)", nc_cuda_conv_version_note(v), loss);
        fprintf(b->out, "\n");
        if (checks) {
            cJSON *r = cJSON_CreateObject();
            cJSON_AddStringToObject(r, "model", m->name);
            cJSON_AddNumberToObject(r, "N", n);
            cJSON_AddNumberToObject(r, "conv_kernel", v);
            cJSON_AddNumberToObject(r, "differ_from_cpu_ref", differ);
            cJSON_AddStringToObject(r, "precision", opts.precision ? nc_cuda_conv_version_note(v) : "fp32");
            cJSON_AddNumberToObject(r, "correctness", correctness(pred, ds, n));
            cJSON_AddItemToArray(checks, r);
        }
    }
done:
    free(ref);
    free(pred);
    return rc;
}

/* ------------------------------------------------------------------ entry */

static const char header[] = "%-30s %6s  %-26s %10s %9s %8s %8s %8s\n";

int nc_cuda_bench(const nc_cuda_bench_opts *o, FILE *out, cJSON *json, nc_error *err) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        return nc_fail(err, NC_ERR_UNAVAILABLE, "bench: no CUDA GPU found");
    }
    int rc = NC_OK;
    bench b;
    memset(&b, 0, sizeof b);
    b.out = out;
    b.reps = o->reps < 3 ? 3 : o->reps;
    CUDA_RET(cudaSetDevice(o->device));
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
    fprintf(out, ", cuDNN %zu", cudnnGetVersion());
#endif
    fprintf(out, ", %s\n", date);
    cJSON *rows = NULL, *nets = NULL, *checks = NULL;
    if (json) {
        cJSON *dj = cJSON_AddObjectToObject(json, "device");
        cJSON_AddStringToObject(dj, "gpu", prop.name);
        cJSON_AddNumberToObject(dj, "sms", prop.multiProcessorCount);
        cJSON_AddNumberToObject(dj, "cuda_driver_api", drv);
        cJSON_AddNumberToObject(dj, "cuda_runtime", rt);
#ifdef NC_HAVE_CUDNN
        cJSON_AddNumberToObject(dj, "cudnn", (double)cudnnGetVersion());
#endif
        cJSON_AddStringToObject(dj, "date", date);
        rows = cJSON_AddArrayToObject(json, "layers");
        nets = cJSON_AddArrayToObject(json, "networks");
        checks = cJSON_AddArrayToObject(json, "checks");
    }
    b.rows = rows;
    CUDA_TRY(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    CUDA_TRY(cudaEventCreate(&b.e0));
    CUDA_TRY(cudaEventCreate(&b.e1));
    CUDA_TRY(cudaMalloc(&b.flush, FLUSH_BYTES));
    if ((rc = measure_floors(&b, err))) goto cleanup;
    fprintf(out,
            "floors: copy %.0f GB/s (read + written), FFMA %.1f TFLOP/s, tensor fp16 %.0f TFLOP/s, tf32 %.0f "
            "TFLOP/s\n",
            b.bw / 1e9, b.fp32 / 1e12, b.tc16 / 1e12, b.tc32 / 1e12);
    if (json) {
        cJSON *fj = cJSON_AddObjectToObject(json, "floors");
        cJSON_AddNumberToObject(fj, "copy_bytes_per_s", b.bw);
        cJSON_AddNumberToObject(fj, "fp32_flops_per_s", b.fp32);
        cJSON_AddNumberToObject(fj, "tensor_fp16_flops_per_s", b.tc16);
        cJSON_AddNumberToObject(fj, "tensor_tf32_flops_per_s", b.tc32);
    }
    fprintf(out, header, "layer", "N", "version", "ms", "GFLOP/s", "GB/s", "floor", "x cudnn");
    for (int i = 0; i < o->n_models; i++) {
        nc_bench_shape shapes[NC_MAX_LAYERS];
        int n = 0;
        nc_bench_shapes_of(o->models[i], shapes, NC_MAX_LAYERS, &n);
        for (int s = 0; s < n; s++) {
            /* A shape an earlier model had (2017 high and low, say) is timed once. */
            int seen = 0;
            for (int e = 0; e < i && !seen; e++) {
                nc_bench_shape prev[NC_MAX_LAYERS];
                int np = 0;
                nc_bench_shapes_of(o->models[e], prev, NC_MAX_LAYERS, &np);
                for (int q = 0; q < np && !seen; q++)
                    seen = prev[q].C == shapes[s].C && prev[q].H == shapes[s].H && prev[q].W == shapes[s].W &&
                           prev[q].M == shapes[s].M && prev[q].K == shapes[s].K && prev[q].act == shapes[s].act &&
                           prev[q].pool == shapes[s].pool && prev[q].P == shapes[s].P &&
                           prev[q].input_u8 == shapes[s].input_u8;
            }
            for (int j = 0; j < o->n_ns && !seen; j++)
                if ((rc = bench_shape(&b, &shapes[s], o->ns[j], err))) goto cleanup;
        }
    }
    for (int s = 0; s < o->n_shapes; s++)
        for (int j = 0; j < o->n_ns; j++)
            if ((rc = bench_shape(&b, &o->shapes[s], o->ns[j], err))) goto cleanup;
    if (o->data) {
        for (int i = 0; i < o->n_models; i++)
            for (int j = 0; j < o->n_ns; j++)
                if (o->ns[j] <= o->data->n && (rc = bench_network(&b, o->models[i], o->data, o->ns[j], nets, err)))
                    goto cleanup;
        int bad = 0;
        for (int i = 0; i < o->n_models && o->check_n > 0; i++) {
            const int n = o->check_n < o->data->n ? o->check_n : o->data->n;
            if ((rc = check_network(&b, o->models[i], o->data, n, checks, &bad, err))) goto cleanup;
        }
        if (bad) rc = nc_fail(err, NC_ERR_MISMATCH, "bench: %d predictions differ from cpu-ref (lines 'check')", bad);
    }
cleanup:
    if (b.flush) cudaFree(b.flush);
    if (b.e0) cudaEventDestroy(b.e0);
    if (b.e1) cudaEventDestroy(b.e1);
    if (b.stream) cudaStreamDestroy(b.stream);
    return rc;
}
