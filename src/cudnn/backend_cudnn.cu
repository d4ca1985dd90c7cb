/*
 * The cudnn backend: the same network with the vendor libraries, the course's
 * milestone 1.2 baseline and nanoconv's yardstick. Convolution, its bias,
 * activations, pooling and softmax are cuDNN's (its legacy API); the dense
 * layers are cublasSgemm plus cuDNN's bias add. Everything is exact fp32:
 * convolutions are restricted to FMA math (no TF32 tensor cores) and cuBLAS
 * runs in its default math mode, which does not use TF32 either. Only the
 * algorithms that compute each output as a plain sum of products are
 * admitted (implicit_gemm, implicit_precomp_gemm, gemm, direct): FFT and
 * Winograd go through transforms whose rounding error is far larger (seen on
 * an H100: 2.7e-5 against 2e-7 on one course model's softmax outputs, enough
 * to flip 3 near-tie predictions of 10000 away from cpu-ref's).
 *
 * At load time (nc_session_create), each convolution's algorithm is the
 * fastest that cudnnFindConvolutionForwardAlgorithmEx measures for a batch of
 * min(chunk, 10000) images (the course's largest N) with a workspace of up to
 * 80% of the free device memory; then one forward pass on that batch loads
 * every cuDNN and cuBLAS kernel the run will use. So neither the search nor
 * the libraries' first-use cost lands in a run's Total Time. Runs of another
 * batch size keep the algorithms and re-size only the workspace.
 * Input upload, resize and scaling, argmax and download are gpu_plan.cu's,
 * shared with the cuda backend.
 */
#include <limits.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "cuda/cuda_check.h"
#include "cuda/gpu_plan.h"
#include "cuda/vendor_libs.h"

/* cuDNN and cuBLAS, loaded by the first dnn_create (vendor_libs.h). */
static const nc_vendor_api *lib;

/* A failed call's text without the table it went through: "cudnnCreate(&h)", not "lib->cudnnCreate(&h)". */
static const char *call_text(const char *stmt) {
    return strncmp(stmt, "lib->", 5) ? stmt : stmt + 5;
}

static int cudnn_status(cudnnStatus_t s, nc_error *err, const char *file, int line, const char *stmt) {
    if (s == CUDNN_STATUS_SUCCESS) return NC_OK;
    (void)cudaGetLastError();
    return nc_fail(err, s == CUDNN_STATUS_ALLOC_FAILED ? NC_ERR_NOMEM : NC_ERR_DEVICE, "%s:%d: %s failed: %s",
                   nc_cuda_where(file), line, call_text(stmt), lib->cudnnGetErrorString(s));
}

static int cublas_status(cublasStatus_t s, nc_error *err, const char *file, int line, const char *stmt) {
    if (s == CUBLAS_STATUS_SUCCESS) return NC_OK;
    (void)cudaGetLastError();
    return nc_fail(err, s == CUBLAS_STATUS_ALLOC_FAILED ? NC_ERR_NOMEM : NC_ERR_DEVICE, "%s:%d: %s failed: %s (%s)",
                   nc_cuda_where(file), line, call_text(stmt), lib->cublasGetStatusName(s),
                   lib->cublasGetStatusString(s));
}

#define CUDNN_RET(call)                                                                                                \
    do {                                                                                                               \
        int rc_ = cudnn_status((call), err, __FILE__, __LINE__, #call);                                                \
        if (rc_) return rc_;                                                                                           \
    } while (0)

#define CUBLAS_RET(call)                                                                                               \
    do {                                                                                                               \
        int rc_ = cublas_status((call), err, __FILE__, __LINE__, #call);                                               \
        if (rc_) return rc_;                                                                                           \
    } while (0)

/* Share of the free device memory for one chunk's activations; the rest leaves room for the workspace. */
#define CUDNN_MEMORY_SHARE 0.5
/* Share of the free device memory the algorithm search may give its workspace. */
#define CUDNN_FIND_SHARE 0.8
/* Images in the batch the algorithms are searched for (at most the chunk): the course's largest N. */
#define CUDNN_FIND_BATCH 10000

/* FFT and Winograd: not a plain sum of products (see the top of this file). */
static int algo_is_transform(cudnnConvolutionFwdAlgo_t a) {
    return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}

static const char *const algo_names[] = {
    "implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling", "winograd", "winograd_nonfused"};

typedef struct {
    cudnnTensorDescriptor_t x, y; /* (B, in.c, in.h, in.w) and (B, out.c, out.h, out.w) */
    cudnnTensorDescriptor_t bias; /* (1, M, 1, 1): conv and dense with a bias */
    cudnnFilterDescriptor_t w;    /* (M, C, K, K) */
    cudnnConvolutionDescriptor_t conv;
    cudnnActivationDescriptor_t act;
    cudnnPoolingDescriptor_t pool;
    int found; /* conv: algo chosen */
    cudnnConvolutionFwdAlgo_t algo;
    size_t ws_need; /* conv: workspace bytes of algo at the current batch size */
    int batch;      /* the batch size its descriptors are set for (0: none yet) */
} dnn_layer;

typedef struct {
    nc_gpu g;
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    dnn_layer L[NC_MAX_LAYERS];
    void *ws; /* convolution workspace */
    size_t ws_size;
} dnn_plan;

static int set_4d(cudnnTensorDescriptor_t d, int B, nc_shape s, nc_error *err) {
    CUDNN_RET(lib->cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, B, s.c, s.h, s.w));
    return NC_OK;
}

/* Grows the workspace to at least `bytes`. */
static int ws_reserve(dnn_plan *p, size_t bytes, nc_error *err) {
    if (bytes <= p->ws_size) return NC_OK;
    cudaFree(p->ws);
    p->ws = NULL;
    p->ws_size = 0;
    CUDA_RET(cudaMalloc(&p->ws, bytes));
    p->ws_size = bytes;
    return NC_OK;
}

/* Sets the tensor descriptors of layers [from, to) for batch B (the head's pieces and the tail's chunk differ);
 * grows the workspace to what the found convolutions need. */
static int dnn_prepare(dnn_plan *p, int from, int to, int B, nc_error *err) {
    const nc_model *m = p->g.m;
    size_t ws = 0;
    for (int li = from; li < to; li++) {
        const nc_layer *l = &m->layers[li];
        dnn_layer *d = &p->L[li];
        if (l->kind == NC_FLATTEN || d->batch == B) continue;
        int rc = set_4d(d->x, B, l->in, err);
        if (!rc) rc = set_4d(d->y, B, l->out, err);
        if (rc) return rc;
        if (l->kind == NC_CONV) {
            int n, c, h, w;
            CUDNN_RET(lib->cudnnGetConvolution2dForwardOutputDim(d->conv, d->x, d->w, &n, &c, &h, &w));
            if (n != B || c != l->out.c || h != l->out.h || w != l->out.w)
                return nc_fail(err, NC_ERR_DEVICE,
                               "layer %d: cuDNN makes the convolution's output %dx%dx%dx%d, not %dx%dx%dx%d", li, n, c,
                               h, w, B, l->out.c, l->out.h, l->out.w);
            if (d->found) {
                CUDNN_RET(lib->cudnnGetConvolutionForwardWorkspaceSize(p->dnn, d->x, d->w, d->conv, d->y, d->algo,
                                                                       &d->ws_need));
                if (d->ws_need > ws) ws = d->ws_need;
            }
        }
        if (l->kind == NC_MAXPOOL || l->kind == NC_AVGPOOL) {
            int n, c, h, w;
            CUDNN_RET(lib->cudnnGetPooling2dForwardOutputDim(d->pool, d->x, &n, &c, &h, &w));
            if (n != B || c != l->out.c || h != l->out.h || w != l->out.w)
                return nc_fail(err, NC_ERR_DEVICE,
                               "layer %d: cuDNN makes the pooling's output %dx%dx%dx%d, not %dx%dx%dx%d", li, n, c, h,
                               w, B, l->out.c, l->out.h, l->out.w);
        }
        d->batch = B;
    }
    return ws_reserve(p, ws, err);
}

/* Times every algorithm on this layer at the current batch size (descriptors set) and keeps the fastest
 * exact-fp32 one that ran. y and x are buffers of that layer's output and input size. */
static int dnn_find(dnn_plan *p, int li, float *y, const float *x, nc_error *err) {
    dnn_layer *d = &p->L[li];
    /* The largest workspace an admitted algorithm asks for, within what the device has free. */
    size_t want = 0;
    for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; a++) {
        size_t need = 0;
        if (!algo_is_transform((cudnnConvolutionFwdAlgo_t)a) &&
            lib->cudnnGetConvolutionForwardWorkspaceSize(p->dnn, d->x, d->w, d->conv, d->y,
                                                         (cudnnConvolutionFwdAlgo_t)a, &need) == CUDNN_STATUS_SUCCESS &&
            need > want)
            want = need;
    }
    size_t free_b = 0, total_b = 0;
    CUDA_RET(cudaMemGetInfo(&free_b, &total_b));
    const size_t budget = (size_t)((double)(free_b + p->ws_size) * CUDNN_FIND_SHARE);
    if (want > budget) want = budget;
    if (want > p->ws_size) {
        cudaFree(p->ws);
        p->ws = NULL;
        p->ws_size = 0;
        CUDA_RET(cudaMalloc(&p->ws, want));
        p->ws_size = want;
    }
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    CUDNN_RET(lib->cudnnFindConvolutionForwardAlgorithmEx(p->dnn, d->x, x, d->w, p->g.weight[li], d->conv, d->y, y,
                                                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf, p->ws,
                                                          p->ws_size));
    /* Sorted fastest first. */
    for (int i = 0; i < found; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > p->ws_size) continue;
        if (algo_is_transform(perf[i].algo)) continue;
        if (perf[i].mathType != CUDNN_FMA_MATH && perf[i].mathType != CUDNN_DEFAULT_MATH) continue;
        d->algo = perf[i].algo;
        d->ws_need = perf[i].memory;
        d->found = 1;
        return NC_OK;
    }
    return nc_fail(err, NC_ERR_DEVICE, "layer %d: cuDNN found no exact fp32 convolution algorithm that runs (%d tried)",
                   li, found);
}

static int dnn_layer_forward(dnn_plan *p, int li, int B, float *y, const float *x, nc_error *err) {
    nc_gpu *g = &p->g;
    const nc_layer *l = &g->m->layers[li];
    dnn_layer *d = &p->L[li];
    const float one = 1.0f, zero = 0.0f;
    switch (l->kind) {
    case NC_CONV: {
        CUDA_RET(cudaEventRecord(g->ev[2 * g->conv_of[li]], g->stream));
        CUDNN_RET(lib->cudnnConvolutionForward(p->dnn, &one, d->x, x, d->w, g->weight[li], d->conv, d->algo, p->ws,
                                               p->ws_size, &zero, d->y, y));
        if (g->bias[li]) CUDNN_RET(lib->cudnnAddTensor(p->dnn, &one, d->bias, g->bias[li], &one, d->y, y));
        CUDA_RET(cudaEventRecord(g->ev[2 * g->conv_of[li] + 1], g->stream));
        break;
    }
    case NC_TANH:
    case NC_RELU:
    case NC_SIGMOID: CUDNN_RET(lib->cudnnActivationForward(p->dnn, d->act, &one, d->x, x, &zero, d->y, y)); break;
    case NC_MAXPOOL:
    case NC_AVGPOOL: CUDNN_RET(lib->cudnnPoolingForward(p->dnn, d->pool, &one, d->x, x, &zero, d->y, y)); break;
    case NC_DENSE: {
        /* Row-major y (B, OUT) = x (B, IN) w^T is column-major y^T (OUT, B) = w^T (OUT, IN) . x^T (IN, B),
         * with w read as the column-major (IN, OUT) matrix it is and transposed. */
        const int IN = (int)nc_shape_size(l->in);
        CUBLAS_RET(lib->cublasSgemm(p->blas, CUBLAS_OP_T, CUBLAS_OP_N, l->m, B, IN, &one, g->weight[li], IN, x, IN,
                                    &zero, y, l->m));
        if (g->bias[li]) CUDNN_RET(lib->cudnnAddTensor(p->dnn, &one, d->bias, g->bias[li], &one, d->y, y));
        break;
    }
    case NC_SOFTMAX:
        CUDNN_RET(lib->cudnnSoftmaxForward(p->dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, d->x, x,
                                           &zero, d->y, y));
        break;
    case NC_FLATTEN: break;
    }
    return NC_OK;
}

static int dnn_forward(void *ctx, nc_gpu *g, int from, int to, size_t i0, int B, int *cur, nc_error *err) {
    dnn_plan *p = (dnn_plan *)ctx;
    const nc_model *m = g->m;
    int rc = dnn_prepare(p, from, to, B, err);
    if (rc) return rc;
    for (int li = from; li < to; li++) {
        if (m->layers[li].kind == NC_FLATTEN) continue;
        const size_t out = nc_shape_size(m->layers[li].out), in = nc_shape_size(m->layers[li].in);
        nvtxRangePushA(g->layer_name[li]);
        rc = dnn_layer_forward(p, li, B, g->act[1 - *cur] + i0 * out, g->act[*cur] + i0 * in, err);
        nvtxRangePop();
        if (rc) {
            nc_error_prefix(err, "layer %d (%s)", li, nc_layer_kind_name(m->layers[li].kind));
            return rc;
        }
        *cur = 1 - *cur;
    }
    return NC_OK;
}

static void dnn_destroy(void *plan) {
    dnn_plan *p = (dnn_plan *)plan;
    if (!p) return;
    /* Teardown reports nothing: after a device fault these fail too, and the run already said why. */
    for (int i = 0; i < NC_MAX_LAYERS; i++) {
        dnn_layer *d = &p->L[i];
        if (d->x) lib->cudnnDestroyTensorDescriptor(d->x);
        if (d->y) lib->cudnnDestroyTensorDescriptor(d->y);
        if (d->bias) lib->cudnnDestroyTensorDescriptor(d->bias);
        if (d->w) lib->cudnnDestroyFilterDescriptor(d->w);
        if (d->conv) lib->cudnnDestroyConvolutionDescriptor(d->conv);
        if (d->act) lib->cudnnDestroyActivationDescriptor(d->act);
        if (d->pool) lib->cudnnDestroyPoolingDescriptor(d->pool);
    }
    if (p->blas) lib->cublasDestroy(p->blas);
    if (p->dnn) lib->cudnnDestroy(p->dnn);
    cudaFree(p->ws);
    nc_gpu_close(&p->g);
    free(p);
}

/* The descriptors that do not depend on the batch size. */
static int dnn_describe(dnn_plan *p, nc_error *err) {
    const nc_model *m = p->g.m;
    for (int li = 0; li < m->n_layers; li++) {
        const nc_layer *l = &m->layers[li];
        dnn_layer *d = &p->L[li];
        if (l->kind == NC_FLATTEN) continue;
        CUDNN_RET(lib->cudnnCreateTensorDescriptor(&d->x));
        CUDNN_RET(lib->cudnnCreateTensorDescriptor(&d->y));
        if (l->bias) {
            CUDNN_RET(lib->cudnnCreateTensorDescriptor(&d->bias));
            CUDNN_RET(lib->cudnnSetTensor4dDescriptor(d->bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, l->m, 1, 1));
        }
        switch (l->kind) {
        case NC_CONV:
            CUDNN_RET(lib->cudnnCreateFilterDescriptor(&d->w));
            CUDNN_RET(
                lib->cudnnSetFilter4dDescriptor(d->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, l->m, l->in.c, l->k, l->k));
            CUDNN_RET(lib->cudnnCreateConvolutionDescriptor(&d->conv));
            CUDNN_RET(lib->cudnnSetConvolution2dDescriptor(d->conv, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                                           CUDNN_DATA_FLOAT));
            /* Exact fp32: no TF32 tensor-core algorithms. */
            CUDNN_RET(lib->cudnnSetConvolutionMathType(d->conv, CUDNN_FMA_MATH));
            break;
        case NC_TANH:
        case NC_RELU:
        case NC_SIGMOID:
            CUDNN_RET(lib->cudnnCreateActivationDescriptor(&d->act));
            CUDNN_RET(lib->cudnnSetActivationDescriptor(d->act,
                                                        l->kind == NC_TANH   ? CUDNN_ACTIVATION_TANH
                                                        : l->kind == NC_RELU ? CUDNN_ACTIVATION_RELU
                                                                             : CUDNN_ACTIVATION_SIGMOID,
                                                        CUDNN_NOT_PROPAGATE_NAN, 0.0));
            break;
        case NC_MAXPOOL:
        case NC_AVGPOOL:
            CUDNN_RET(lib->cudnnCreatePoolingDescriptor(&d->pool));
            /* No padding, so "include padding" changes nothing: the divisor is always P * P. */
            CUDNN_RET(lib->cudnnSetPooling2dDescriptor(
                d->pool, l->kind == NC_MAXPOOL ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                CUDNN_NOT_PROPAGATE_NAN, l->p, l->p, 0, 0, l->s, l->s));
            break;
        default: break;
        }
    }
    return NC_OK;
}

/* The algorithm search and a warm-up pass, at load time, on the chunk buffers filled with a constant
 * (0x3c bytes: 0.0115 as floats; no algorithm's speed depends on the values, but zeros could flatter one). */
static int dnn_search(dnn_plan *p, nc_error *err) {
    nc_gpu *g = &p->g;
    const nc_model *m = g->m;
    const int B = (int)(g->chunk_max < CUDNN_FIND_BATCH ? g->chunk_max : CUDNN_FIND_BATCH);
    int rc = nc_gpu_reserve(g, (size_t)B, nc_shape_size(m->input), err);
    if (!rc) rc = dnn_prepare(p, 0, m->n_layers, B, err);
    if (rc) return rc;
    CUDA_RET(cudaMemsetAsync(g->act[0], 0x3c, 2 * (size_t)B * g->largest * sizeof(float), g->stream));
    size_t ws = 0;
    for (int li = 0; li < m->n_layers; li++) {
        if (m->layers[li].kind != NC_CONV) continue;
        if ((rc = dnn_find(p, li, g->act[1], g->act[0], err))) {
            nc_error_prefix(err, "layer %d (conv)", li);
            return rc;
        }
        if (p->L[li].ws_need > ws) ws = p->L[li].ws_need;
    }
    /* Keep only the workspace the chosen algorithms need. */
    cudaFree(p->ws);
    p->ws = NULL;
    p->ws_size = 0;
    if ((rc = ws_reserve(p, ws, err))) return rc;
    nvtxRangePushA("warm-up");
    int cur = 0;
    rc = dnn_forward(p, g, 0, m->n_layers, 0, B, &cur, err);
    nvtxRangePop();
    if (rc) return rc;
    CUDA_RET(cudaStreamSynchronize(g->stream));
    return NC_OK;
}

static int dnn_create(void **out, const nc_model *m, const nc_run_opts *opts, nc_error *err) {
    *out = NULL;
    if (opts->conv_kernel)
        return nc_fail(err, NC_ERR_ARG,
                       "backend cudnn chooses its own convolution algorithm (--conv-kernel is for --backend cuda)");
    /* cuDNN's tensors hold fewer than 2^31 elements: that caps the chunk. */
    size_t largest = nc_shape_size(m->input);
    for (int i = 0; i < m->n_layers; i++)
        if (nc_shape_size(m->layers[i].out) > largest) largest = nc_shape_size(m->layers[i].out);
    const size_t max_chunk = largest < (size_t)INT_MAX ? (size_t)INT_MAX / largest : 1;

    dnn_plan *p = (dnn_plan *)calloc(1, sizeof *p);
    if (!p) return nc_fail(err, NC_ERR_NOMEM, "out of memory for the cudnn plan");
    int rc = nc_gpu_open(&p->g, m, opts, CUDNN_MEMORY_SHARE, max_chunk, err);
    if (rc || (rc = nc_vendor_load(&lib, NC_VENDOR_CUDNN | NC_VENDOR_CUBLAS, err))) goto fail;
    if ((rc = cudnn_status(lib->cudnnCreate(&p->dnn), err, __FILE__, __LINE__, "cudnnCreate(&p->dnn)"))) goto fail;
    if ((rc = cudnn_status(lib->cudnnSetStream(p->dnn, p->g.stream), err, __FILE__, __LINE__,
                           "cudnnSetStream(p->dnn, p->g.stream)")))
        goto fail;
    if ((rc = cublas_status(lib->cublasCreate(&p->blas), err, __FILE__, __LINE__, "cublasCreate(&p->blas)"))) goto fail;
    if ((rc = cublas_status(lib->cublasSetStream(p->blas, p->g.stream), err, __FILE__, __LINE__,
                            "cublasSetStream(p->blas, p->g.stream)")))
        goto fail;
    /* The default math mode computes in full fp32 (TF32 only with CUBLAS_TF32_TENSOR_OP_MATH). */
    if ((rc = cublas_status(lib->cublasSetMathMode(p->blas, CUBLAS_DEFAULT_MATH), err, __FILE__, __LINE__,
                            "cublasSetMathMode(p->blas, CUBLAS_DEFAULT_MATH)")))
        goto fail;
    if ((rc = dnn_describe(p, err)) || (rc = dnn_search(p, err))) goto fail;
    *out = p;
    return NC_OK;
fail:
    dnn_destroy(p);
    return rc;
}

static int dnn_run(void *plan, const uint8_t *images, int n, int h, int w, int *pred, float *logits, nc_timing *t,
                   nc_error *err) {
    dnn_plan *p = (dnn_plan *)plan;
    const int rc = nc_gpu_run(&p->g, dnn_forward, p, images, n, h, w, pred, logits, t, err);
    /* Op Time's note names the algorithm cuDNN chose for each convolution. */
    int conv = 0;
    for (int li = 0; li < p->g.m->n_layers; li++) {
        if (p->g.m->layers[li].kind != NC_CONV) continue;
        const dnn_layer *d = &p->L[li];
        if (d->found && (int)d->algo >= 0 && (int)d->algo < (int)(sizeof algo_names / sizeof algo_names[0]))
            snprintf(t->conv_note[conv], sizeof t->conv_note[conv], "cudnn %s", algo_names[d->algo]);
        conv++;
    }
    return rc;
}

/* Positional, as C++17 has no designated initialisers: name, description, create, run, destroy, device_count; fp32
 * only (reduced_precision 0). */
extern "C" const nc_backend nc_backend_cudnn = {
    "cudnn",     "cuDNN convolution, activation, pooling and softmax, cuBLAS dense layers (the vendor baseline)",
    dnn_create,  dnn_run,
    dnn_destroy, nc_gpu_device_count,
};
