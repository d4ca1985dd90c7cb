/*
 * The cpu backend's plan as `nanoconv bench` sees it: the ops it runs (the
 * input preparation, then each fused group of model layers) with their FLOPs
 * and their time in the last run. The plan is what nc_backend_cpu.create
 * returns.
 */
#ifndef NC_BACKEND_CPU_H
#define NC_BACKEND_CPU_H

#include "cpu/cpu_features.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Op 0 prepares the input; the others each cover one or more model layers. */
#define NC_CPU_MAX_OPS (NC_MAX_LAYERS + 1)

typedef struct {
    int first_layer, n_layers; /* the model layers the op covers (-1, 0 for the input) */
    int conv_index;            /* its index among the convolution layers, or -1 */
    char name[64];             /* e.g. "conv 50 5 + tanh + maxpool 2 2" */
    char note[48];             /* kernel and fusion, e.g. "avx512 direct 3x8, fused tanh+maxpool" */
    double flops;              /* per image: 2 per multiply-add of its conv or dense layer, else 0 */
    double seconds;            /* wall time in the last run, summed over its rounds */
} nc_cpu_op_info;

/* Fills up to max ops of the plan; returns how many it has. */
int nc_cpu_plan_ops(const void *plan, nc_cpu_op_info *ops, int max);

/* The instruction set and the threads the plan runs with, and its images per thread chunk. */
nc_cpu_isa nc_cpu_plan_isa(const void *plan);
int nc_cpu_plan_threads(const void *plan);
int nc_cpu_plan_chunk(const void *plan);

#ifdef __cplusplus
}
#endif
#endif
