/*
 * cuBLAS and cuDNN, loaded with dlopen when a command first needs them, not
 * linked. Only the cudnn backend and the GPU bench use them; linked, their
 * libraries were mapped and relocated at start-up by every run, the CPU ones
 * included (libcublasLt alone added 62 MB of resident memory to
 * `nanoconv eval --backend cpu`).
 *
 * Call nc_vendor_load() (it is cheap after the first time) and then the
 * functions through the table it fills:
 *
 *     const nc_vendor_api *v = NULL;
 *     if ((rc = nc_vendor_load(&v, NC_VENDOR_CUDNN | NC_VENDOR_CUBLAS, err))) return rc;
 *     v->cudnnCreate(&handle);
 *
 * Each member has the type of the library function of the same name. cuBLAS's
 * header maps cublasCreate to cublasCreate_v2 and so on, so `v->cublasCreate`
 * names the _v2 member. CUDA sources and C alike.
 */
#ifndef NC_VENDOR_LIBS_H
#define NC_VENDOR_LIBS_H

#include <cublas_v2.h>
#ifdef NC_HAVE_CUDNN
#include <cudnn.h>
#endif

#include "core/error.h"

#ifdef __cplusplus
#define NC_VENDOR_FN(f) decltype(&f) f;
extern "C" {
#else
#define NC_VENDOR_FN(f) __typeof__(&f) f;
#endif

/* Every cuBLAS function nanoconv calls, by its exported name. */
#define NC_CUBLAS_FUNCTIONS(X)                                                                                         \
    X(cublasCreate_v2)                                                                                                 \
    X(cublasDestroy_v2)                                                                                                \
    X(cublasSetStream_v2)                                                                                              \
    X(cublasSetMathMode)                                                                                               \
    X(cublasSgemm_v2)                                                                                                  \
    X(cublasGetStatusName)                                                                                             \
    X(cublasGetStatusString)

/* Every cuDNN function nanoconv calls (its legacy API). */
#define NC_CUDNN_FUNCTIONS(X)                                                                                          \
    X(cudnnGetVersion)                                                                                                 \
    X(cudnnGetErrorString)                                                                                             \
    X(cudnnCreate)                                                                                                     \
    X(cudnnDestroy)                                                                                                    \
    X(cudnnSetStream)                                                                                                  \
    X(cudnnCreateTensorDescriptor)                                                                                     \
    X(cudnnSetTensor4dDescriptor)                                                                                      \
    X(cudnnDestroyTensorDescriptor)                                                                                    \
    X(cudnnCreateFilterDescriptor)                                                                                     \
    X(cudnnSetFilter4dDescriptor)                                                                                      \
    X(cudnnDestroyFilterDescriptor)                                                                                    \
    X(cudnnCreateConvolutionDescriptor)                                                                                \
    X(cudnnSetConvolution2dDescriptor)                                                                                 \
    X(cudnnSetConvolutionMathType)                                                                                     \
    X(cudnnDestroyConvolutionDescriptor)                                                                               \
    X(cudnnGetConvolution2dForwardOutputDim)                                                                           \
    X(cudnnGetConvolutionForwardWorkspaceSize)                                                                         \
    X(cudnnFindConvolutionForwardAlgorithmEx)                                                                          \
    X(cudnnConvolutionForward)                                                                                         \
    X(cudnnAddTensor)                                                                                                  \
    X(cudnnCreateActivationDescriptor)                                                                                 \
    X(cudnnSetActivationDescriptor)                                                                                    \
    X(cudnnDestroyActivationDescriptor)                                                                                \
    X(cudnnActivationForward)                                                                                          \
    X(cudnnCreatePoolingDescriptor)                                                                                    \
    X(cudnnSetPooling2dDescriptor)                                                                                     \
    X(cudnnGetPooling2dForwardOutputDim)                                                                               \
    X(cudnnDestroyPoolingDescriptor)                                                                                   \
    X(cudnnPoolingForward)                                                                                             \
    X(cudnnSoftmaxForward)

/* cublasGemmEx has a C++ overload (cudaDataType for the compute type), so its pointer type is spelled out: the
 * C function's. */
typedef cublasStatus_t (*nc_cublas_gemm_ex_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                               const void *, const void *, cudaDataType, int, const void *,
                                               cudaDataType, int, const void *, void *, cudaDataType, int,
                                               cublasComputeType_t, cublasGemmAlgo_t);

typedef struct nc_vendor_api {
    NC_CUBLAS_FUNCTIONS(NC_VENDOR_FN)
    nc_cublas_gemm_ex_fn cublasGemmEx;
#ifdef NC_HAVE_CUDNN
    NC_CUDNN_FUNCTIONS(NC_VENDOR_FN)
#endif
} nc_vendor_api;

/* Which libraries nc_vendor_load must load. */
enum { NC_VENDOR_CUBLAS = 1, NC_VENDOR_CUDNN = 2 };

/* Loads the libraries `which` names (once; later calls only check) and points *api at the table, whose members
 * for those libraries are then all set; *api is left as it was on failure, and written, under a lock, only where it
 * does not yet point at the table (so that a static pointer that runs on other threads read is written once: the
 * cudnn backend's). NC_ERR_UNAVAILABLE, naming the library and the loader's reason, where one cannot be loaded or
 * lacks a function (and for NC_VENDOR_CUDNN in a build without cuDNN). Thread-safe. */
int nc_vendor_load(const nc_vendor_api **api, int which, nc_error *err);

#ifdef __cplusplus
}
#endif
#endif
