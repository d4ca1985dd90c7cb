/*
 * Training on the CPU: forward and backward passes of every layer kind in
 * float32, the fused softmax + cross-entropy loss, SGD with momentum and Adam,
 * learning-rate schedules, and the training loop behind `nanoconv train`.
 *
 * Parallel with OpenMP over the images of a batch (per-image work: convolution
 * by im2col and nc_sgemm, pooling, activations) and inside nc_sgemm (dense
 * layers over the whole batch). Every sum whose order could depend on the
 * thread count is taken in a fixed order (per-image partial gradients summed
 * in image order), so a run is a function of its seed and options alone.
 */
#ifndef NC_TRAIN_H
#define NC_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ layers */

/* Elementwise loops are split into blocks of this many values, one block per iteration of a parallel loop; work
 * of one block or less runs on the calling thread, where a parallel region would cost more than it saves. */
#define NC_TRAIN_BLOCK 16384

/* Scratch memory of the layer functions, sized for a list of layers and a largest batch B. */
typedef struct {
    int threads;       /* the parallel regions use exactly this many threads (each has its own slice of col) */
    int batch;         /* largest B the functions may be called with */
    size_t col_floats; /* largest im2col matrix (C*K*K, Ho*Wo) of any conv layer */
    float *col;        /* (threads, 2, col_floats): per thread, im2col of one image and its gradient */
    float *per_image;  /* (batch, largest conv weight + bias count): per-image conv parameter gradients */
} nc_train_scratch;

/* Allocates scratch for layers[0..n) run on batches of up to B images by `threads` threads. */
int nc_train_scratch_init(nc_train_scratch *s, const nc_layer *layers, int n, int B, int threads, nc_error *err);
void nc_train_scratch_free(nc_train_scratch *s);

/* One layer's forward pass on B images: y is (B, l->out), x is (B, l->in). tanh is a rational approximation
 * (relative error < 4e-7, vectorised) in place of tanhf, which costs ~9 ns a value and rivalled the conv layers. */
void nc_train_forward(const nc_layer *l, float *y, const float *x, int B, nc_train_scratch *s);

/* One layer's backward pass on B images, given its input x (B, l->in), output y (B, l->out) and the gradient of
 * the loss with respect to y, dy (B, l->out). Writes (overwrites) dx (B, l->in) unless dx is NULL, and for conv
 * and dense the parameter gradients dw (l->weight's shape) and db ((M), only where the layer has a bias). */
void nc_train_backward(const nc_layer *l, float *dx, float *dw, float *db, const float *dy, const float *x,
                       const float *y, int B, nc_train_scratch *s);

/* The fused softmax + cross-entropy of logits z (B, N) against labels (B): returns the summed loss
 * sum_b (log sum_j exp z[b][j] - z[b][label_b]) and writes dz (B, N) = (softmax(z) - onehot(label)) * scale. */
double nc_train_softmax_xent(float *dz, const float *z, const uint8_t *labels, int B, int N, float scale);

/* ------------------------------------------------------------- optimisers */

typedef enum { NC_OPT_SGD, NC_OPT_ADAM } nc_optimizer;
typedef enum { NC_SCHED_CONST, NC_SCHED_STEP, NC_SCHED_COSINE } nc_schedule;

typedef struct {
    int epochs;
    int batch; /* images per step; the last step of an epoch takes what is left */
    float lr;  /* the schedule's starting learning rate */
    nc_optimizer optimizer;
    float momentum;       /* SGD: v = momentum * v + g; w -= lr * v (PyTorch's form) */
    float beta1, beta2;   /* Adam */
    float eps;            /* Adam */
    float weight_decay;   /* L2 added to the gradient of every parameter (PyTorch's weight_decay) */
    nc_schedule schedule; /* over the steps of the whole run; see nc_train_lr */
    uint64_t seed;        /* initial weights (nc_model_init_seeded) and the order of the images */
    int limit;            /* train on the first `limit` training images; 0 = all */
} nc_train_opts;

/* Adam, lr 1e-3, cosine schedule, batch 64, 10 epochs, seed 1, no weight decay, momentum 0.9 for SGD. */
void nc_train_opts_default(nc_train_opts *o);

/* The learning rate at step t of T: const: lr; step: lr, lr/10 from half way, lr/100 from three quarters;
 * cosine: lr * (1 + cos(pi t / T)) / 2. */
float nc_train_lr(const nc_train_opts *o, long t, long T);

const char *nc_optimizer_name(nc_optimizer o);
const char *nc_schedule_name(nc_schedule s);

/* One update of n parameters w from their gradient g; m and v are the optimiser's state (n each, zero at the
 * start; v is Adam's only), t the 1-based step count (Adam's bias correction). */
void nc_train_update(const nc_train_opts *o, float *w, const float *g, float *m, float *v, size_t n, float lr, long t);

/* ----------------------------------------------------------------- trainer */

/* A network being trained. Raw 0..255 pixels feed a tanh network badly: PyTorch's default init, which assumes
 * inputs of order 1, saturates every first-layer unit, and the first layer's weights would have to be ~1/255 of
 * the other layers', so that a scale-free optimiser step (Adam moves each weight by ~lr) is a hundred times too
 * big for them. So where the model takes raw pixels and its first weighted layer is linear in them (only flatten,
 * pooling or relu before it), the trainer feeds it pixels / 255 and divides that layer's weights by 255 when it
 * exports the model: the same function of the raw pixels, with the first layer initialised for inputs in 0..1.
 * Everything here (params, grads) is in that internal scale. */
typedef struct nc_trainer {
    nc_model *model; /* the network in the internal scale; params are trained in place */
    nc_train_opts opts;
    int n_fwd;            /* layers the training forward runs: all but a final softmax (fused into the loss) */
    int first_weighted;   /* first layer with parameters: no gradient is needed below it */
    int classes;          /* outputs of layer n_fwd - 1, the logits */
    float in_scale;       /* internal input = the model's scaled input * in_scale */
    int fold_layer;       /* layer whose weights are multiplied by in_scale on export; -1 if none */
    float *grad;          /* (n_params), laid out like model->params */
    float *opt_m, *opt_v; /* optimiser state, (n_params) each; opt_v for Adam only */
    long steps;           /* optimiser steps taken */
    size_t act_floats;    /* floats of one image's activations, all layers */
    float *act_mem;       /* (batch, act_floats) */
    float *acts[NC_MAX_LAYERS + 1]; /* acts[i] is layer i's input (batch, l->in); acts[n_fwd] the logits */
    float *dbuf[2];                 /* (batch, largest layer): the gradient flowing back, ping-pong */
    nc_train_scratch scratch;
} nc_trainer;

/* Makes a trainer for a copy of m's architecture. With from_params, training continues from m's parameters;
 * otherwise they are initialised from opts->seed. Fails for a softmax that is not last (the builder forbids it),
 * an architecture without parameters, or want of memory. */
int nc_trainer_create(nc_trainer **out, const nc_model *m, int from_params, const nc_train_opts *opts, nc_error *err);
void nc_trainer_free(nc_trainer *t);

/* Scales n images (n <= batch) of the model's input size into the trainer's input buffer, acts[0]. */
void nc_trainer_load_images(nc_trainer *t, const uint8_t *images, int n);

/* Forward and backward on the n images in acts[0] (n <= batch) with their labels: fills t->grad with the
 * gradient of the mean loss and returns that mean loss. */
double nc_trainer_gradient(nc_trainer *t, const uint8_t *labels, int n);

/* One optimiser step from t->grad at learning rate lr. */
void nc_trainer_update(nc_trainer *t, float lr);

/* Forward only on the n images in acts[0]: returns the logits, (n, classes), in the trainer's buffers. */
const float *nc_trainer_logits(nc_trainer *t, int n);

/* Writes the trained parameters into m, which has the trainer's architecture, in the model's own input scale. */
void nc_trainer_export(const nc_trainer *t, nc_model *m);

/* Progress of a training run, passed to the callback after every step and at the end of every epoch. */
typedef struct {
    int epoch, epochs;       /* 1-based */
    long step, steps;        /* steps done in this epoch, steps per epoch */
    long images;             /* training images seen in this epoch */
    double loss;             /* mean loss over this epoch so far */
    float lr;                /* the learning rate of the last step */
    double images_per_s;     /* training throughput in this epoch so far (without the evaluation) */
    double epoch_s;          /* seconds of training in this epoch so far */
    double elapsed_s;        /* seconds since the run began, evaluations included */
    double eta_s;            /* estimated seconds left in the run */
    int epoch_done;          /* 1 once per epoch, after the evaluation */
    double test_correctness; /* share of the test images classified right (epoch_done only; -1 without a test set) */
} nc_train_progress;

typedef void (*nc_train_progress_fn)(const nc_train_progress *p, void *user);

/* Trains for opts.epochs epochs on train (the first opts.limit images, if set), in an order shuffled from the
 * seed each epoch, and after every epoch evaluates the test set (may be NULL). Images smaller than the model's
 * input are resized once at the start, as nanoconv eval resizes them. Fails on labels out of range, images
 * that do not fit the model, or a loss that is no longer finite. */
int nc_train_run(nc_trainer *t, const nc_dataset *train, const nc_dataset *test, nc_train_progress_fn progress,
                 void *user, nc_error *err);

#ifdef __cplusplus
}
#endif
#endif
