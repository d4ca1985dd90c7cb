/* A large host memcpy shared by a few OpenMP threads: the GPU backends' copy of the images into pinned memory
 * before their upload (gpu_plan.cu). In C, because nvcc compiles the CUDA sources without OpenMP. */
#ifndef NC_HOST_COPY_H
#define NC_HOST_COPY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* memcpy(dst, src, n), split among up to 4 threads (one per MB, at most OpenMP's thread count). */
void nc_host_copy(void *dst, const void *src, size_t n);

#ifdef __cplusplus
}
#endif
#endif
