/* The GPU backends' shared part: device, parameters, chunk loop in pieces, upload, download (gpu_plan.h). */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_layers.h"
#include "cuda/gpu_plan.h"
#include "cuda/host_copy.h"

int nc_gpu_device_count(int *count, nc_error *err) {
    *count = 0;
    const cudaError_t e = cudaGetDeviceCount(count);
    if (e != cudaSuccess || *count == 0) {
        (void)cudaGetLastError();
        *count = 0;
        return nc_fail(err, NC_ERR_UNAVAILABLE, "no CUDA GPU found (cudaGetDeviceCount: %s); use --backend cpu",
                       e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    }
    return NC_OK;
}

/* Selects the device, or says why there is none. */
static int gpu_select(int device, nc_error *err) {
    int count;
    const int rc = nc_gpu_device_count(&count, err);
    if (rc) return rc;
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

/* Floats from one parameter array's start to the next's on the device: 32, so that every weight and bias starts
 * at a 128-byte boundary (a model file's need not even be 16-byte aligned: the 2017 dense weights start at float
 * 1250). dense_tc.cu then always gets its 16-byte copies, and every reader whole cache lines. */
#define PARAM_ALIGN 32

static size_t param_span(size_t n) {
    return (n + PARAM_ALIGN - 1) / PARAM_ALIGN * PARAM_ALIGN;
}

/* Uploads every layer's weight and bias into one allocation, each at a PARAM_ALIGN-float offset, and points
 * g->weight and g->bias into it. */
static int gpu_upload_params(nc_gpu *g, nc_error *err) {
    const nc_model *m = g->m;
    size_t total = 0;
    for (int i = 0; i < m->n_layers; i++) {
        const nc_layer *l = &m->layers[i];
        if (l->weight) total += param_span(nc_layer_weight_count(l));
        if (l->bias) total += param_span(nc_layer_bias_count(l));
    }
    if (!total) return NC_OK;
    float *h = (float *)calloc(total, sizeof(float)); /* (total), the gaps zero */
    if (!h) return nc_fail(err, NC_ERR_NOMEM, "out of host memory for the %zu parameters' device layout", total);
    int rc = NC_OK;
    size_t o = 0;
    CUDA_TRY(cudaMalloc((void **)&g->params, total * sizeof(float)));
    for (int i = 0; i < m->n_layers; i++) {
        const nc_layer *l = &m->layers[i];
        if (l->weight) {
            memcpy(h + o, l->weight, nc_layer_weight_count(l) * sizeof(float));
            g->weight[i] = g->params + o;
            o += param_span(nc_layer_weight_count(l));
        }
        if (l->bias) {
            memcpy(h + o, l->bias, nc_layer_bias_count(l) * sizeof(float));
            g->bias[i] = g->params + o;
            o += param_span(nc_layer_bias_count(l));
        }
    }
    /* On g->stream and waited for: a plain cudaMemcpy from pageable memory runs on the legacy default stream, which
     * g->stream (non-blocking) does not wait for, and may return before the copy lands. */
    CUDA_TRY(cudaMemcpyAsync(g->params, h, total * sizeof(float), cudaMemcpyHostToDevice, g->stream));
    CUDA_TRY(cudaStreamSynchronize(g->stream));
cleanup:
    free(h);
    return rc;
}

int nc_gpu_open(nc_gpu *g, const nc_model *m, const nc_run_opts *opts, double share, size_t max_chunk, nc_error *err) {
    int rc = NC_OK;
    memset(g, 0, sizeof *g);
    g->m = m;
    g->device = opts->device;
    g->n_conv = nc_model_num_conv(m);
    g->classes = nc_model_num_classes(m);
    g->head = m->n_layers;
    for (int i = 0, c = 0; i < m->n_layers; i++) {
        const nc_layer_kind k = m->layers[i].kind;
        if (g->head == m->n_layers && (k == NC_DENSE || (k == NC_CONV && c > 0))) g->head = i;
        if (k == NC_CONV) g->conv_of[i] = c++, g->head_convs += i < g->head;
    }
    if ((rc = gpu_select(opts->device, err))) return rc;
    CUDA_TRY(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    CUDA_TRY(cudaStreamCreateWithFlags(&g->upload, cudaStreamNonBlocking));
    for (int p = 0; p < NC_GPU_MAX_PIECES; p++) {
        CUDA_TRY(cudaEventCreateWithFlags(&g->uploaded[p], cudaEventDisableTiming));
        for (int i = 0; i < 2 * g->n_conv; i++) CUDA_TRY(cudaEventCreate(&g->piece_ev[p][i]));
    }
    memcpy(g->ev, g->piece_ev[0], sizeof g->ev);

    if ((rc = gpu_upload_params(g, err))) goto cleanup;
    g->largest = nc_shape_size(m->input);
    for (int i = 0; i < m->n_layers; i++) {
        const nc_layer *l = &m->layers[i];
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
    cudaFree(g->img_alloc);
    cudaFree(g->act[0]);
    cudaFree(g->pred);
    cudaFreeHost(g->h_img);
    cudaFreeHost(g->h_pred);
    cudaFreeHost(g->h_logits);
    g->img = g->img_alloc = NULL;
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
    CUDA_TRY(cudaMalloc((void **)&g->img_alloc, img_b));
    g->img = g->img_alloc;
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

/* Cuts a chunk of B images into pieces: start[p] .. start[p + 1] for p < the count returned, each a whole number of
 * 128 images but the last; one piece below 2 * NC_GPU_PIECE_MIN images, else one every NC_GPU_PIECE_MIN images up to
 * NC_GPU_MAX_PIECES: the first an eighth of the chunk (its upload is the one that shows), the others equal (see
 * gpu_plan.h). */
static int gpu_pieces(int B, int start[NC_GPU_MAX_PIECES + 1]) {
    int P = B / NC_GPU_PIECE_MIN;
    P = P < 1 ? 1 : P > NC_GPU_MAX_PIECES ? NC_GPU_MAX_PIECES : P;
    int n = 0;
    start[n++] = 0;
    if (P > 1) {
        const int first = (B / 8 + 127) / 128 * 128, each = ((B - first + P - 2) / (P - 1) + 127) / 128 * 128;
        for (int s = first; s < B; s += each) start[n++] = s;
    }
    start[n] = B;
    return n;
}

/* Whether the n bytes at p are page-locked (cudaMallocHost, cudaHostRegister: nc_dataset_pin), judged by their first
 * and last: a transfer can then read them where they are. */
static int gpu_pinned(const void *p, size_t n) {
    for (int i = 0; i < 2; i++) {
        cudaPointerAttributes a;
        if (cudaPointerGetAttributes(&a, (const char *)p + (i ? n - 1 : 0)) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
        if (a.type != cudaMemoryTypeHost) return 0;
    }
    return 1;
}

/* Piece p's images (B of them, chunk images i0.. at images) to the device on g->upload, from where they are if they
 * are page-locked, else copied into pinned memory first; g->uploaded[p] says when they are in. */
static int gpu_upload(nc_gpu *g, int p, const uint8_t *images, int pinned, int i0, int B, size_t hw, nc_error *err) {
    const size_t o = (size_t)i0 * hw, bytes = (size_t)B * hw;
    if (!pinned) nc_host_copy(g->h_img + o, images + o, bytes);
    CUDA_RET(
        cudaMemcpyAsync(g->img_alloc + o, (pinned ? images : g->h_img) + o, bytes, cudaMemcpyHostToDevice, g->upload));
    CUDA_RET(cudaEventRecord(g->uploaded[p], g->upload));
    return NC_OK;
}

/* The head of piece p (chunk images i0 .. i0 + B) on g->stream once its pixels are in: the model's input, then
 * the layers before g->head, with the piece's Op Time events. *cur: the buffer its output is in. */
static int gpu_head(nc_gpu *g, nc_gpu_forward_fn forward, void *ctx, int p, int i0, int B, int h, int w, int *cur,
                    nc_error *err) {
    CUDA_RET(cudaStreamWaitEvent(g->stream, g->uploaded[p], 0));
    g->img = g->img_alloc + (size_t)i0 * h * w;
    int rc = NC_OK;
    if (!g->in_u8)
        rc = nc_cuda_prepare_input(g->act[0] + (size_t)i0 * nc_shape_size(g->m->input), g->img, B, h, w, g->m,
                                   g->stream, err);
    memcpy(g->ev, g->piece_ev[p], sizeof g->ev);
    *cur = 0;
    if (!rc) rc = forward(ctx, g, 0, g->head, (size_t)i0, B, cur, err);
    g->img = g->img_alloc;
    return rc;
}

/* The tail of a chunk of B images whose head's output is in g->act[cur]: the layers from g->head on (Op Time events
 * in row 0), the argmax, and predictions (and logits) into the pinned buffers. */
static int gpu_tail(nc_gpu *g, nc_gpu_forward_fn forward, void *ctx, int B, int cur, int want_logits, nc_error *err) {
    memcpy(g->ev, g->piece_ev[0], sizeof g->ev);
    int rc = forward(ctx, g, g->head, g->m->n_layers, 0, B, &cur, err);
    if (!rc) rc = nc_cuda_argmax(g->pred, g->act[cur], B, g->classes, g->stream, err);
    if (rc) return rc;
    CUDA_RET(cudaMemcpyAsync(g->h_pred, g->pred, (size_t)B * sizeof(int), cudaMemcpyDeviceToHost, g->stream));
    if (want_logits)
        CUDA_RET(cudaMemcpyAsync(g->h_logits, g->act[cur], (size_t)B * g->classes * sizeof(float),
                                 cudaMemcpyDeviceToHost, g->stream));
    return NC_OK;
}

/* Waits for the chunk, then hands its predictions (and logits) over and adds its conv times: each piece's for the
 * head's layers, the tail's for the others. */
static int gpu_finish(nc_gpu *g, int pieces, int B, int *pred, float *logits, nc_timing *t, nc_error *err) {
    CUDA_RET(cudaStreamSynchronize(g->stream));
    memcpy(pred, g->h_pred, (size_t)B * sizeof(int));
    if (logits) memcpy(logits, g->h_logits, (size_t)B * g->classes * sizeof(float));
    for (int p = 0; p < pieces; p++)
        for (int i = 0; i < (p ? g->head_convs : g->n_conv); i++) {
            float ms = 0.0f;
            CUDA_RET(cudaEventElapsedTime(&ms, g->piece_ev[p][2 * i], g->piece_ev[p][2 * i + 1]));
            t->conv_s[i] += 1e-3 * (double)ms;
        }
    return NC_OK;
}

/* Host order per piece: its copy and upload are enqueued, then its head; so piece p + 1's host copy and transfer run
 * while the device runs piece p's head, and only piece 0's upload is exposed. Then the chunk's tail. */
int nc_gpu_run(nc_gpu *g, nc_gpu_forward_fn forward, void *ctx, const uint8_t *images, int n, int h, int w, int *pred,
               float *logits, nc_timing *t, nc_error *err) {
    t->n_conv = g->n_conv;
    if (n <= 0) return NC_OK;
    CUDA_RET(cudaSetDevice(g->device));
    const size_t hw = (size_t)h * w;
    const size_t chunk = g->chunk_max < (size_t)n ? g->chunk_max : (size_t)n;
    int rc = nc_gpu_reserve(g, chunk, hw, err);
    if (rc) return rc;
    g->in_u8 = nc_gpu_reads_pixels(g, h, w);
    /* The transfers read the caller's images until the chunk's end is waited for (gpu_finish, or the error path). */
    const int pinned = gpu_pinned(images, (size_t)n * hw);
    for (size_t i0 = 0; i0 < (size_t)n; i0 += chunk) {
        const int B = (int)((size_t)n - i0 < chunk ? (size_t)n - i0 : chunk);
        int start[NC_GPU_MAX_PIECES + 1];
        const int pieces = gpu_pieces(B, start);
        int cur = 0;
        for (int p = 0; p < pieces && !rc; p++) {
            nvtxRangePushA("upload");
            rc = gpu_upload(g, p, images + i0 * hw, pinned, start[p], start[p + 1] - start[p], hw, err);
            nvtxRangePop();
            if (!rc) rc = gpu_head(g, forward, ctx, p, start[p], start[p + 1] - start[p], h, w, &cur, err);
        }
        if (!rc) rc = gpu_tail(g, forward, ctx, B, cur, logits != NULL, err);
        nvtxRangePushA("download");
        if (!rc) rc = gpu_finish(g, pieces, B, pred + i0, logits ? logits + i0 * g->classes : NULL, t, err);
        nvtxRangePop();
        if (rc) {
            /* Nothing may still write the pinned buffers when the next run fills them. */
            (void)cudaStreamSynchronize(g->upload);
            (void)cudaStreamSynchronize(g->stream);
            return rc;
        }
    }
    return NC_OK;
}

void nc_gpu_close(nc_gpu *g) {
    if (!g->m) return;
    /* Nothing to report from here: after a device fault these fail too, and the process is told already. */
    gpu_free_buffers(g);
    cudaFree(g->params);
    for (int p = 0; p < NC_GPU_MAX_PIECES; p++) {
        if (g->uploaded[p]) cudaEventDestroy(g->uploaded[p]);
        for (int i = 0; i < 2 * NC_MAX_LAYERS; i++)
            if (g->piece_ev[p][i]) cudaEventDestroy(g->piece_ev[p][i]);
    }
    if (g->upload) cudaStreamDestroy(g->upload);
    if (g->stream) cudaStreamDestroy(g->stream);
    (void)cudaGetLastError();
    memset(g, 0, sizeof *g);
}
