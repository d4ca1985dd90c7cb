/*
 * What the two GPU backends (cuda and cudnn) share: choosing the device, the
 * model's parameters on it, the chunk loop over the batch with its buffers,
 * the upload of the uint8 images (through pinned host memory) and their
 * resize and scaling on the device, the argmax, the download of predictions
 * and logits, the Op Time events and the NVTX ranges. A backend supplies only
 * the forward pass of one chunk. CUDA sources only.
 */
#ifndef NC_GPU_PLAN_H
#define NC_GPU_PLAN_H

#include <cuda_runtime.h>

#include "core/model.h"

typedef struct nc_gpu nc_gpu;

/* Runs the network on the chunk of B images whose input is in g->act[0]:
 * records g->ev[2i] and g->ev[2i+1] on g->stream around the i-th convolution
 * layer (and nothing else between them), leaves the final layer's output
 * (B, classes) in g->act[*out] and enqueues everything on g->stream. */
typedef int (*nc_gpu_forward_fn)(void *ctx, nc_gpu *g, int B, int *out, nc_error *err);

struct nc_gpu {
    const nc_model *m;
    int device;
    cudaStream_t stream;
    int n_conv;
    cudaEvent_t ev[2 * NC_MAX_LAYERS];  /* start and stop of each convolution layer */
    char layer_name[NC_MAX_LAYERS][40]; /* NVTX range names, "layer 0 conv" */
    float *params;                      /* all the model's parameters, laid out as m->params */
    const float *weight[NC_MAX_LAYERS]; /* each layer's weight in params, or NULL */
    const float *bias[NC_MAX_LAYERS];   /* each layer's bias in params, or NULL */
    size_t largest;                     /* floats per image of the largest tensor, the input included */
    int classes;
    size_t chunk_max; /* images per chunk: opts->chunk, or sized from free device memory */
    /* Buffers for cap images of cap_hw pixels, (re)allocated by the run that needs more. */
    size_t cap, cap_hw;
    uint8_t *img;    /* (cap, h, w) on the device */
    float *act[2];   /* ping-pong activations, each (cap, largest), in one allocation */
    int *pred;       /* (cap) on the device */
    uint8_t *h_img;  /* (cap, h, w), pinned */
    int *h_pred;     /* (cap), pinned */
    float *h_logits; /* (cap, classes), pinned */
    /* Set by a backend whose first layer reads the uint8 pixels itself (conv version 6): where no resize is
     * needed, the upload leaves them in img, unscaled, and sets in_u8 for the chunk (act[0] is then unused). */
    int raw_input, in_u8;
};

/* Selects the device (NC_ERR_UNAVAILABLE with "no CUDA GPU found" where there
 * is none), creates the stream and events, uploads the parameters and sizes
 * the chunks: opts->chunk, else as many images as fit in `share` of the free
 * device memory at 4 * largest + ... bytes an image, capped at max_chunk
 * (0 = no cap). On failure everything made is freed. */
int nc_gpu_open(nc_gpu *g, const nc_model *m, const nc_run_opts *opts, double share, size_t max_chunk, nc_error *err);

/* Makes the chunk buffers hold B images of hw pixels (nc_gpu_run calls it; a
 * backend may call it ahead, to search or warm up on buffers of that size). */
int nc_gpu_reserve(nc_gpu *g, size_t B, size_t hw, nc_error *err);

/* Runs n images through the chunk loop with the backend's forward pass. */
int nc_gpu_run(nc_gpu *g, nc_gpu_forward_fn forward, void *ctx, const uint8_t *images, int n, int h, int w, int *pred,
               float *logits, nc_timing *t, nc_error *err);

/* Frees everything nc_gpu_open and nc_gpu_run made; safe on a zeroed or half-opened g. */
void nc_gpu_close(nc_gpu *g);

#endif
