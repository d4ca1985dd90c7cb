/* What bench/ab's harnesses (conv_one.c, dense_one.c, net_one.c) share: a CUDA check that ends the harness with a
 * message naming it (AB_NAME, defined before this is included), a float comparison for qsort's medians, and the
 * fixed pseudo-random stream their inputs come from. */
#ifndef NC_AB_HARNESS_H
#define NC_AB_HARNESS_H

#include <cuda_runtime.h>
#include <stdio.h>

#define CK(call)                                                                                                       \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, AB_NAME ": %s: %s\n", #call, cudaGetErrorString(e_));                                      \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

static inline int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static inline unsigned lcg(unsigned *s) {
    return *s = *s * 1664525u + 1013904223u;
}

#endif
