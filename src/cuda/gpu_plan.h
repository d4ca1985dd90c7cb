/*
 * What the two GPU backends (cuda and cudnn) share: choosing the device, the
 * model's parameters on it, the chunk loop over the batch with its buffers,
 * the upload of the uint8 images (through pinned host memory) and their
 * resize and scaling on the device, the argmax, the download of predictions
 * and logits, the Op Time events and the NVTX ranges. A backend supplies only
 * the forward pass of one chunk. CUDA sources only.
 *
 * A large chunk runs in pieces (NC_GPU_MAX_PIECES at most): piece i + 1's
 * images are copied into pinned memory and uploaded on a second stream while
 * piece i is computed on g->stream, so only the first piece's upload shows.
 */
#ifndef NC_GPU_PLAN_H
#define NC_GPU_PLAN_H

#include <cuda_runtime.h>

#include "core/model.h"

#ifdef __cplusplus
extern "C" { /* C linkage, so that tests in C can drive the chunk loop */
#endif

typedef struct nc_gpu nc_gpu;

/* Runs the network on the B images whose input is in g->act[0] (or, where
 * g->in_u8, their pixels in g->img): records g->ev[2i] and g->ev[2i+1] on
 * g->stream around the i-th convolution layer (and nothing else between them),
 * leaves the final layer's output (B, classes) in g->act[*out] and enqueues
 * everything on g->stream. nc_gpu_run calls it once a piece of a chunk. */
typedef int (*nc_gpu_forward_fn)(void *ctx, nc_gpu *g, int B, int *out, nc_error *err);

/* Pieces a chunk is cut into at most, and the images a piece stands for (a chunk of B runs in B / NC_GPU_PIECE_MIN
 * pieces, at least one): the first an eighth of the chunk, since its upload is the only one that shows, the others
 * equal, large enough for the dense GEMM's big tiles to take whole waves (8448 images on an H100). 10000 images run
 * in pieces of 1280 and 8720, 60000 in 7552, 17536, 17536 and 17376. Against two halves of 10000 this took 2.5 to
 * 14% off five zoo networks (2017's 3.15 -> 2.72 ms, its dense layer's wave whole), 2019 spring's within its noise
 * (1.49 -> 1.48 and 1.55 ms); one piece was slower than it on all six (H100, 2026-11-23). */
#define NC_GPU_MAX_PIECES 4
#define NC_GPU_PIECE_MIN 4096

struct nc_gpu {
    const nc_model *m;
    int device;
    cudaStream_t stream;
    cudaStream_t upload;                     /* the pieces' host-to-device copies */
    cudaEvent_t uploaded[NC_GPU_MAX_PIECES]; /* recorded on upload when a piece's pixels are in */
    int n_conv;
    cudaEvent_t ev[2 * NC_MAX_LAYERS];                          /* the running piece's row of piece_ev (not owned) */
    cudaEvent_t piece_ev[NC_GPU_MAX_PIECES][2 * NC_MAX_LAYERS]; /* start and stop of each conv layer, by piece */
    char layer_name[NC_MAX_LAYERS][40];                         /* NVTX range names, "layer 0 conv" */
    float *params; /* all the model's parameters, each layer's weight and bias at a 128-byte boundary */
    const float *weight[NC_MAX_LAYERS]; /* each layer's weight in params, or NULL */
    const float *bias[NC_MAX_LAYERS];   /* each layer's bias in params, or NULL */
    size_t largest;                     /* floats per image of the largest tensor, the input included */
    int classes;
    size_t chunk_max; /* images per chunk: opts->chunk, or sized from free device memory */
    /* Buffers for cap images of cap_hw pixels, (re)allocated by the run that needs more. */
    size_t cap, cap_hw;
    uint8_t *img;       /* (cap, h, w) on the device; during a forward, the running piece's pixels within it */
    uint8_t *img_alloc; /* the allocation img points into */
    float *act[2];      /* ping-pong activations, each (cap, largest), in one allocation */
    int *pred;          /* (cap) on the device */
    uint8_t *h_img;     /* (cap, h, w), pinned */
    int *h_pred;        /* (cap), pinned */
    float *h_logits;    /* (cap, classes), pinned */
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

/* Runs n images through the chunk loop with the backend's forward pass, a
 * chunk in pieces where it is large (see NC_GPU_PIECE_MIN); t->conv_s sums
 * each conv layer's time over the pieces. */
int nc_gpu_run(nc_gpu *g, nc_gpu_forward_fn forward, void *ctx, const uint8_t *images, int n, int h, int w, int *pred,
               float *logits, nc_timing *t, nc_error *err);

/* Frees everything nc_gpu_open and nc_gpu_run made; safe on a zeroed or half-opened g. */
void nc_gpu_close(nc_gpu *g);

#ifdef __cplusplus
}
#endif
#endif
