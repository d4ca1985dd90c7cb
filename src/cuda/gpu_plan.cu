/* The GPU backends' shared part: device, parameters, chunk loop, upload, download (gpu_plan.h). */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_layers.h"
#include "cuda/gpu_plan.h"

/* Selects the device, or says why there is none. */
static int gpu_select(int device, nc_error *err) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        return nc_fail(err, NC_ERR_UNAVAILABLE, "no CUDA GPU found (cudaGetDeviceCount: %s); use --backend cpu-ref",
                       e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    }
    if (device < 0 || device >= count)
        return nc_fail(err, NC_ERR_ARG, "--device %d: this machine has %d CUDA GPU%s (0..%d)", device, count,
                       count == 1 ? "" : "s", count - 1);
    CUDA_RET(cudaSetDevice(device));
    return NC_OK;
}

/* Bytes an image needs on the device: its pixels (at most the model's input size, as only upscaling is
 * allowed), two activation buffers of the largest tensor, its logits' argmax. 0 on overflow. */
static size_t gpu_bytes_per_image(const nc_gpu *g) {
    size_t act;
    if (!nc_mul_ok(g->largest, 2 * sizeof(float), &act)) return 0;
    const size_t pixels = nc_shape_size(g->m->input);
    if (act > (size_t)-1 - pixels - sizeof(int)) return 0;
    return act + pixels + sizeof(int);
}

int nc_gpu_open(nc_gpu *g, const nc_model *m, const nc_run_opts *opts, double share, size_t max_chunk, nc_error *err) {
    int rc = NC_OK;
    memset(g, 0, sizeof *g);
    g->m = m;
    g->device = opts->device;
    g->n_conv = nc_model_num_conv(m);
    g->classes = nc_model_num_classes(m);
    if ((rc = gpu_select(opts->device, err))) return rc;
    CUDA_TRY(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    for (int i = 0; i < 2 * g->n_conv; i++) CUDA_TRY(cudaEventCreate(&g->ev[i]));

    if (m->n_params) {
        CUDA_TRY(cudaMalloc((void **)&g->params, m->n_params * sizeof(float)));
        /* On g->stream and waited for: a plain cudaMemcpy from pageable memory runs on the legacy default
         * stream, which g->stream (non-blocking) does not wait for, and may return before the copy lands. */
        CUDA_TRY(cudaMemcpyAsync(g->params, m->params, m->n_params * sizeof(float), cudaMemcpyHostToDevice, g->stream));
        CUDA_TRY(cudaStreamSynchronize(g->stream));
    }
    g->largest = nc_shape_size(m->input);
    for (int i = 0; i < m->n_layers; i++) {
        const nc_layer *l = &m->layers[i];
        if (l->weight) g->weight[i] = g->params + (l->weight - m->params);
        if (l->bias) g->bias[i] = g->params + (l->bias - m->params);
        if (nc_shape_size(l->out) > g->largest) g->largest = nc_shape_size(l->out);
        snprintf(g->layer_name[i], sizeof g->layer_name[i], "layer %d %s", i, nc_layer_kind_name(l->kind));
    }

    if ((rc = nc_cuda_layers_prepare(err))) goto cleanup;

    if (opts->chunk) {
        g->chunk_max = opts->chunk;
    } else {
        size_t free_b = 0, total_b = 0;
        CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
        const size_t per_image = gpu_bytes_per_image(g);
        g->chunk_max = per_image ? (size_t)((double)free_b * share) / per_image : 0;
        if (g->chunk_max < 1) g->chunk_max = 1; /* the allocation then fails and says so */
    }
    if (max_chunk && g->chunk_max > max_chunk) g->chunk_max = max_chunk;
    return NC_OK;
cleanup:
    nc_gpu_close(g);
    return rc;
}

static void gpu_free_buffers(nc_gpu *g) {
    cudaFree(g->img);
    cudaFree(g->act[0]);
    cudaFree(g->pred);
    cudaFreeHost(g->h_img);
    cudaFreeHost(g->h_pred);
    cudaFreeHost(g->h_logits);
    g->img = NULL;
    g->act[0] = g->act[1] = NULL;
    g->pred = NULL;
    g->h_img = NULL;
    g->h_pred = NULL;
    g->h_logits = NULL;
    g->cap = g->cap_hw = 0;
}

int nc_gpu_reserve(nc_gpu *g, size_t B, size_t hw, nc_error *err) {
    if (B <= g->cap && hw <= g->cap_hw) return NC_OK;
    int rc = NC_OK;
    gpu_free_buffers(g);
    size_t img_b = 0, act_f = 0, act_b = 0, logit_b = 0;
    if (!nc_mul_ok(B, hw, &img_b) || !nc_mul_ok(B, g->largest, &act_f) ||
        !nc_mul_ok(act_f, 2 * sizeof(float), &act_b) || !nc_mul_ok(B, (size_t)g->classes * sizeof(float), &logit_b))
        return nc_fail(err, NC_ERR_NOMEM,
                       "a chunk of %zu images of %zu floats overflows memory sizes; use a smaller --chunk", B,
                       g->largest);
    CUDA_TRY(cudaMalloc((void **)&g->img, img_b));
    CUDA_TRY(cudaMalloc((void **)&g->act[0], act_b));
    g->act[1] = g->act[0] + act_f;
    CUDA_TRY(cudaMalloc((void **)&g->pred, B * sizeof(int)));
    CUDA_TRY(cudaMallocHost((void **)&g->h_img, img_b));
    CUDA_TRY(cudaMallocHost((void **)&g->h_pred, B * sizeof(int)));
    CUDA_TRY(cudaMallocHost((void **)&g->h_logits, logit_b));
    g->cap = B;
    g->cap_hw = hw;
    return NC_OK;
cleanup:
    gpu_free_buffers(g);
    nc_error_prefix(err, "%zu images per chunk (%.1f MB of activations)", B, (double)act_b / 1e6);
    return rc;
}

/* Bytes of images copied into the pinned buffer before their transfer starts: each piece's transfer runs while
 * the next piece is copied (7.8 MB of Fashion-MNIST: the transfer hides behind the host copy). */
#define UPLOAD_PIECE ((size_t)1 << 20)

/* Uploads B images through the pinned buffer and turns them into the model's input in act[0]. */
static int gpu_upload(nc_gpu *g, const uint8_t *images, int B, int h, int w, nc_error *err) {
    const size_t bytes = (size_t)B * h * w;
    for (size_t o = 0; o < bytes; o += UPLOAD_PIECE) {
        const size_t n = bytes - o < UPLOAD_PIECE ? bytes - o : UPLOAD_PIECE;
        memcpy(g->h_img + o, images + o, n);
        CUDA_RET(cudaMemcpyAsync(g->img + o, g->h_img + o, n, cudaMemcpyHostToDevice, g->stream));
    }
    g->in_u8 = g->raw_input && h == g->m->input.h && w == g->m->input.w;
    if (g->in_u8) return NC_OK;
    return nc_cuda_prepare_input(g->act[0], g->img, B, h, w, g->m, g->stream, err);
}

/* Argmax on the device, predictions (and logits) back, then the chunk's conv times. */
static int gpu_download(nc_gpu *g, int B, int out, int *pred, float *logits, nc_timing *t, nc_error *err) {
    int rc = nc_cuda_argmax(g->pred, g->act[out], B, g->classes, g->stream, err);
    if (rc) return rc;
    const size_t logit_b = (size_t)B * g->classes * sizeof(float);
    CUDA_RET(cudaMemcpyAsync(g->h_pred, g->pred, (size_t)B * sizeof(int), cudaMemcpyDeviceToHost, g->stream));
    if (logits) CUDA_RET(cudaMemcpyAsync(g->h_logits, g->act[out], logit_b, cudaMemcpyDeviceToHost, g->stream));
    CUDA_RET(cudaStreamSynchronize(g->stream));
    memcpy(pred, g->h_pred, (size_t)B * sizeof(int));
    if (logits) memcpy(logits, g->h_logits, logit_b);
    for (int i = 0; i < g->n_conv; i++) {
        float ms = 0.0f;
        CUDA_RET(cudaEventElapsedTime(&ms, g->ev[2 * i], g->ev[2 * i + 1]));
        t->conv_s[i] += 1e-3 * (double)ms;
    }
    return NC_OK;
}

int nc_gpu_run(nc_gpu *g, nc_gpu_forward_fn forward, void *ctx, const uint8_t *images, int n, int h, int w, int *pred,
               float *logits, nc_timing *t, nc_error *err) {
    t->n_conv = g->n_conv;
    if (n <= 0) return NC_OK;
    CUDA_RET(cudaSetDevice(g->device));
    const size_t hw = (size_t)h * w;
    const size_t chunk = g->chunk_max < (size_t)n ? g->chunk_max : (size_t)n;
    int rc = nc_gpu_reserve(g, chunk, hw, err);
    if (rc) return rc;
    for (size_t i0 = 0; i0 < (size_t)n; i0 += chunk) {
        const int B = (int)((size_t)n - i0 < chunk ? (size_t)n - i0 : chunk);
        nvtxRangePushA("upload");
        rc = gpu_upload(g, images + i0 * hw, B, h, w, err);
        nvtxRangePop();
        if (rc) return rc;
        int out = 0;
        if ((rc = forward(ctx, g, B, &out, err))) return rc;
        nvtxRangePushA("download");
        rc = gpu_download(g, B, out, pred + i0, logits ? logits + i0 * g->classes : NULL, t, err);
        nvtxRangePop();
        if (rc) return rc;
    }
    return NC_OK;
}

void nc_gpu_close(nc_gpu *g) {
    if (!g->m) return;
    /* Nothing to report from here: after a device fault these fail too, and the process is told already. */
    gpu_free_buffers(g);
    cudaFree(g->params);
    for (int i = 0; i < 2 * NC_MAX_LAYERS; i++)
        if (g->ev[i]) cudaEventDestroy(g->ev[i]);
    if (g->stream) cudaStreamDestroy(g->stream);
    (void)cudaGetLastError();
    memset(g, 0, sizeof *g);
}
