/*
 * What the two GPU backends (cuda and cudnn) share: choosing the device, the
 * model's parameters on it, the chunk loop over the batch with its buffers,
 * the upload of the uint8 images (through pinned host memory) and their
 * resize and scaling on the device, the argmax, the download of predictions
 * and logits, the Op Time events and the NVTX ranges. A backend supplies only
 * the forward pass of one chunk. CUDA sources only.
 *
 * A large chunk runs in pieces (NC_GPU_MAX_PIECES at most), but only the
 * network's head: the input's scaling and the layers before its second conv
 * layer or first dense layer (its first convolution, with the activation and
 * pooling after it). Piece i + 1's images are copied into pinned memory (or,
 * where the caller's are page-locked, read where they are: nc_dataset_pin) and
 * uploaded on a second stream while the head runs on piece i on g->stream;
 * once every piece has been through it, the tail (the other layers) runs once
 * on the whole chunk, where the dense GEMMs take whole waves and a second
 * convolution its full batch, then the argmax. Only the first piece's upload
 * shows.
 */
#ifndef NC_GPU_PLAN_H
#define NC_GPU_PLAN_H

#include <cuda_runtime.h>

#include "core/model.h"

#ifdef __cplusplus
extern "C" { /* C linkage, so that tests in C can drive the chunk loop */
#endif

typedef struct nc_gpu nc_gpu;

/* Runs layers [from, to) of the network (a flatten is free: it swaps no buffer) on the B images from image i0 of the
 * chunk, everything enqueued on g->stream. Each layer reads g->act[*cur] (layer 0 where g->in_u8: the pixels at
 * g->img), at i0 times its input's floats per image, writes g->act[1 - *cur] at i0 times its output's, and flips *cur;
 * a kernel that also does the layers after it writes where the last of them would. Around conv layer li it records
 * g->ev[2c] and g->ev[2c + 1] on g->stream, c = g->conv_of[li], and nothing else between them. nc_gpu_run calls it
 * for the head once a piece (from 0 to g->head) and for the tail once a chunk (g->head to the end, i0 = 0). */
typedef int (*nc_gpu_forward_fn)(void *ctx, nc_gpu *g, int from, int to, size_t i0, int B, int *cur, nc_error *err);

/* Pieces a chunk is cut into at most, and the images a piece stands for: a chunk of B runs in B / NC_GPU_PIECE_MIN
 * pieces (at least one), each a whole number of 128 images but the last (so that every piece's pixels and
 * activations start 512-byte aligned). The first is an eighth of the chunk, as its upload is the one that shows; the
 * others are equal: each one's upload goes on while the piece before it is in the head, and its head is where the
 * next one's upload hides. 10000 images run in pieces of 1280, 4480 and 4240. On the H100 (2026-11-26, net_one over
 * the 2017, 2018 fall, 2019 spring and 2020 networks) this and six other cuts were within 3% of each other on every
 * line, where the slowest was a first piece of 640 (a sixteenth) followed by larger ones (uploads of pieces the head
 * before them could not hide); pieces of 1152 made the convolutions' Op Time up to 1.7 times as long (a launch, its
 * host-side set-up and a host copy a piece) and the lines slower. */
#define NC_GPU_MAX_PIECES 8
#define NC_GPU_PIECE_MIN 3072

struct nc_gpu {
    const nc_model *m;
    int device;
    cudaStream_t stream;
    cudaStream_t upload;                     /* the pieces' host-to-device copies */
    cudaEvent_t uploaded[NC_GPU_MAX_PIECES]; /* recorded on upload when a piece's pixels are in */
    int n_conv;
    int head;                          /* layers [0, head) run a piece at a time (see the top of this file) */
    int head_convs;                    /* the conv layers among them */
    int conv_of[NC_MAX_LAYERS];        /* each layer's ordinal among the conv layers (of a conv layer) */
    cudaEvent_t ev[2 * NC_MAX_LAYERS]; /* the running piece's row of piece_ev (not owned); the tail's is row 0 */
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

/* Whether a run of images of h x w pixels gives the first layer its uint8 pixels (in_u8), not floats. */
static inline int nc_gpu_reads_pixels(const nc_gpu *g, int h, int w) {
    return g->raw_input && h == g->m->input.h && w == g->m->input.w;
}

/* How many CUDA GPUs the machine has; NC_ERR_UNAVAILABLE with "no CUDA GPU found" where none (the GPU backends'
 * device_count). */
int nc_gpu_device_count(int *count, nc_error *err);

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
 * chunk's head in pieces where it is large (see NC_GPU_PIECE_MIN); t->conv_s
 * sums each conv layer's time over the pieces and chunks. */
int nc_gpu_run(nc_gpu *g, nc_gpu_forward_fn forward, void *ctx, const uint8_t *images, int n, int h, int w, int *pred,
               float *logits, nc_timing *t, nc_error *err);

/* Frees everything nc_gpu_open and nc_gpu_run made; safe on a zeroed or half-opened g. */
void nc_gpu_close(nc_gpu *g);

#ifdef __cplusplus
}
#endif
#endif
