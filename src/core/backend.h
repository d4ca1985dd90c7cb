/*
 * A backend is a table of functions behind one interface. It receives the
 * whole model and builds its own execution plan (it may fuse a convolution
 * with its activation and pooling, or keep data on the device between
 * layers), runs batches, reports the time of each convolution layer, and frees
 * what it made. The network code never branches on the backend.
 */
#ifndef NC_BACKEND_H
#define NC_BACKEND_H

#include "core/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nc_backend {
    const char *name;
    const char *description;
    /* Builds the plan for the model; fails with NC_ERR_UNAVAILABLE where the
     * backend cannot run on this machine (no GPU), NC_ERR_ARG for options it
     * does not take (an unknown kernel version). */
    int (*create)(void **plan, const nc_model *m, const nc_run_opts *opts, nc_error *err);
    /* Runs n images of (h, w) uint8 pixels (checked by the caller against the
     * model with nc_model_check_input). pred is (n); logits (n, classes) or NULL;
     * t is zeroed by the caller and filled with conv times and notes. A session
     * on several GPUs runs its plans at once, each from a thread of its own, so
     * a backend's plans share nothing that a run writes. */
    int (*run)(void *plan, const uint8_t *images, int n, int h, int w, int *pred, float *logits, nc_timing *t,
               nc_error *err);
    void (*destroy)(void *plan);
    /* The GPU backends: how many GPUs this machine has (NC_ERR_UNAVAILABLE where none), so that a session may
     * spread a run over several, a plan each (nc_run_opts.devices). NULL for the CPU backends. */
    int (*device_count)(int *count, nc_error *err);
    /* 1 where it runs nc_run_opts.precision's reduced precisions (tf32 ... bf16) as asked, 0 where it computes in
     * fp32 only: a session refuses them there rather than run fp32 under their name. */
    int reduced_precision;
} nc_backend;

/* The backends, defined by each one's own source file. The GPU ones exist
 * only in builds with CUDA (NC_HAVE_CUDA) and cuDNN (NC_HAVE_CUDNN). */
extern const nc_backend nc_backend_cpu_ref;
extern const nc_backend nc_backend_cpu;
extern const nc_backend nc_backend_cuda;
extern const nc_backend nc_backend_cudnn;

const nc_backend *nc_backend_find(const char *name);

/* Argmax of each row of x (n, classes), ties to the lowest index. */
void nc_argmax_rows(int *pred, const float *x, int n, int classes);

#ifdef __cplusplus
}
#endif
#endif
