/*
 * What the vendor libraries alone cost in resident memory: the floor under the cudnn backend's peak RSS.
 *
 * Prints the process's peak resident set (VmHWM) after each step of one of these sequences, each run in a fresh
 * process: `ctx` (a CUDA context), `blas` (+ dlopen cuBLAS, a handle, one 10000x7200x500 SGEMM: the 2017 dense
 * layer), `dnn` (+ dlopen cuDNN, a handle, its heuristic's algorithm for the 2017 convolution, one forward),
 * `dnnfind` (the same with cudnnFindConvolutionForwardAlgorithmEx, as the cudnn backend does). Nothing of
 * nanoconv is linked: only the CUDA runtime.
 *
 *   cc -O1 -o vendor_rss bench/vendor_rss.c -I/usr/local/cuda/include -L/usr/local/cuda/lib -lcudart -ldl \
 *      -Wl,-rpath,/usr/local/cuda/lib
 *   for m in ctx blas dnn dnnfind; do ./vendor_rss $m; done
 */
#define _GNU_SOURCE
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long peak_mb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    while (f && fgets(line, sizeof line, f)) sscanf(line, "VmHWM: %ld", &kb);
    if (f) fclose(f);
    return kb / 1024;
}

static void *open_or_die(const char *soname) {
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "%s: %s\n", soname, dlerror());
        exit(1);
    }
    printf("  after dlopen %-18s %4ld MB\n", soname, peak_mb());
    return h;
}

#define NC_STR_(x) #x
#define NC_STR(x) NC_STR_(x)
#define SYM(h, f) __typeof__(&f) p_##f = (__typeof__(&f))dlsym(h, #f)

static void blas(void) {
    void *h = open_or_die("libcublas.so." NC_STR(CUBLAS_VER_MAJOR));
    SYM(h, cublasCreate_v2);
    SYM(h, cublasSgemm_v2);
    cublasHandle_t b;
    p_cublasCreate_v2(&b);
    printf("  after cublasCreate             %4ld MB\n", peak_mb());
    const int M = 500, N = 10000, K = 7200;
    const float one = 1.0f, zero = 0.0f;
    float *A, *B, *C;
    cudaMalloc((void **)&A, sizeof(float) * M * K);
    cudaMalloc((void **)&B, sizeof(float) * K * N);
    cudaMalloc((void **)&C, sizeof(float) * M * N);
    p_cublasSgemm_v2(b, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &one, A, K, B, K, &zero, C, M);
    cudaDeviceSynchronize();
    printf("  after one SGEMM                %4ld MB\n", peak_mb());
}

static void dnn(int find) {
    void *h = open_or_die("libcudnn.so." NC_STR(CUDNN_MAJOR));
    SYM(h, cudnnCreate);
    SYM(h, cudnnCreateTensorDescriptor);
    SYM(h, cudnnSetTensor4dDescriptor);
    SYM(h, cudnnCreateFilterDescriptor);
    SYM(h, cudnnSetFilter4dDescriptor);
    SYM(h, cudnnCreateConvolutionDescriptor);
    SYM(h, cudnnSetConvolution2dDescriptor);
    SYM(h, cudnnSetConvolutionMathType);
    SYM(h, cudnnFindConvolutionForwardAlgorithmEx);
    SYM(h, cudnnGetConvolutionForwardAlgorithm_v7);
    SYM(h, cudnnConvolutionForward);
    cudnnHandle_t d;
    p_cudnnCreate(&d);
    printf("  after cudnnCreate              %4ld MB\n", peak_mb());
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t c;
    const int N = 10000;
    p_cudnnCreateTensorDescriptor(&x);
    p_cudnnCreateTensorDescriptor(&y);
    p_cudnnCreateFilterDescriptor(&w);
    p_cudnnCreateConvolutionDescriptor(&c);
    p_cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, 1, 28, 28);
    p_cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, 50, 24, 24);
    p_cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 50, 1, 5, 5);
    p_cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    p_cudnnSetConvolutionMathType(c, CUDNN_FMA_MATH);
    float *X, *Y, *W;
    void *ws;
    const size_t ws_size = (size_t)1 << 30;
    cudaMalloc((void **)&X, sizeof(float) * N * 784);
    cudaMalloc((void **)&Y, sizeof(float) * N * 28800);
    cudaMalloc((void **)&W, sizeof(float) * 1250);
    cudaMalloc(&ws, ws_size);
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    if (find)
        p_cudnnFindConvolutionForwardAlgorithmEx(d, x, X, w, W, c, y, Y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf,
                                                 ws, ws_size);
    else
        p_cudnnGetConvolutionForwardAlgorithm_v7(d, x, w, c, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf);
    printf("  after %-24s %4ld MB\n", find ? "FindConvolutionForward" : "GetConvolutionForward_v7", peak_mb());
    const float one = 1.0f, zero = 0.0f;
    p_cudnnConvolutionForward(d, &one, x, X, w, W, c, perf[0].algo, ws, ws_size, &zero, y, Y);
    cudaDeviceSynchronize();
    printf("  after one forward (algo %d)     %4ld MB\n", (int)perf[0].algo, peak_mb());
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "ctx";
    printf("%s: at start %ld MB\n", mode, peak_mb());
    cudaFree(0);
    printf("  after the CUDA context         %4ld MB\n", peak_mb());
    if (!strcmp(mode, "blas")) blas();
    if (!strcmp(mode, "dnn") || !strcmp(mode, "dnnfind")) dnn(!strcmp(mode, "dnnfind"));
    return 0;
}
