/*
 * Checking CUDA, cuDNN and cuBLAS calls (CUDA sources only). In the style of
 * llm.c's cudaCheck, but library code never exits: a failing call becomes an
 * nc_error naming the file, the line and the statement, and the function
 * returns its code (NC_ERR_NOMEM for an allocation failure, NC_ERR_DEVICE for
 * anything else).
 *
 *   CUDA_RET(call)   return the error code at once (nothing to free)
 *   CUDA_TRY(call)   set `rc` and `goto cleanup` (the caller declares both)
 *   CUDA_LAUNCHED()  check cudaGetLastError() right after a kernel launch
 * src/cudnn/backend_cudnn.cu adds the same for cuDNN and cuBLAS.
 */
#ifndef NC_CUDA_CHECK_H
#define NC_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <string.h>

#include "core/error.h"

/* "src/cuda/x.cu" rather than the build machine's absolute path. */
static inline const char *nc_cuda_where(const char *file) {
    const char *s = strstr(file, "src/");
    return s ? s : file;
}

static inline int nc_cuda_status(cudaError_t e, nc_error *err, const char *file, int line, const char *stmt) {
    if (e == cudaSuccess) return NC_OK;
    /* Clear the error if it is not sticky, so that the next launch check sees only its own. */
    (void)cudaGetLastError();
    if (e == cudaErrorMemoryAllocation)
        return nc_fail(err, NC_ERR_NOMEM, "%s:%d: %s failed: out of device memory (%s); try a smaller --chunk",
                       nc_cuda_where(file), line, stmt, cudaGetErrorString(e));
    return nc_fail(err, NC_ERR_DEVICE, "%s:%d: %s failed: %s (%s)", nc_cuda_where(file), line, stmt,
                   cudaGetErrorName(e), cudaGetErrorString(e));
}

#define CUDA_RET(call)                                                                                                 \
    do {                                                                                                               \
        int rc_ = nc_cuda_status((call), err, __FILE__, __LINE__, #call);                                              \
        if (rc_) return rc_;                                                                                           \
    } while (0)

#define CUDA_TRY(call)                                                                                                 \
    do {                                                                                                               \
        if ((rc = nc_cuda_status((call), err, __FILE__, __LINE__, #call))) goto cleanup;                               \
    } while (0)

#define CUDA_LAUNCHED() CUDA_RET(cudaGetLastError())

/* The current device's compute capability (dense_tc.cu and dense_i8.cu ask whether their sm_90a kernels run). */
static inline int nc_cuda_device_cc(int *major, int *minor, nc_error *err) {
    int device = 0;
    CUDA_RET(cudaGetDevice(&device));
    CUDA_RET(cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, device));
    CUDA_RET(cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, device));
    return NC_OK;
}

#endif
