/* One dense layer through dense_tc.cu's tensor-core GEMM with k split among S blocks a tile
 * (nc_cuda_dense_tc_forward_ksplit on weights prepared once), or through dense_i8.cu's int8 slices (PRECISION i8,
 * x's slicing included), to choose the split and the kernel: a warm-up, then REPS runs timed by CUDA events; prints
 * the median and an FNV-1a hash of the output's bits for each S given (0: the layer's own choice).
 *   dense_one PRECISION B IN OUT REPS S...      PRECISION tf32, 3xtf32, fp16, bf16 or i8; S 0, 1, 2, 4 or 8
 * DENSE_ONE_KERNEL=1 runs mma.sync, 2 wgmma, 3 wgmma warp-specialized (2 and 3 where the build and device have
 * them), 0 or unset the layer's own; at i8, NC_DENSE_I8_* (1 mma.sync, 2 wgmma, 3 wgmma on two warpgroups).
 * Built as the dense_one target of a build with CUDA. x and w are fixed pseudo-random numbers, the same in every
 * run. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_layers.h"

#define AB_NAME "dense_one"
#include "ab_harness.h"

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: dense_one tf32|3xtf32|fp16|bf16|i8 B IN OUT REPS S...\n");
        return 2;
    }
    int precision = -1;
    for (int p = 0; p < NC_PRECISION_COUNT; p++)
        if (strcmp(argv[1], nc_precision_name(p)) == 0) precision = p;
    const int i8 = strcmp(argv[1], "i8") == 0;
    const int B = atoi(argv[2]), IN = atoi(argv[3]), OUT = atoi(argv[4]), reps = atoi(argv[5]);
    if (precision < NC_PRECISION_TF32 && !i8) {
        fprintf(stderr, "dense_one: precision %s: expected tf32, 3xtf32, fp16, bf16 or i8\n", argv[1]);
        return 2;
    }
    if (B < 1 || IN < 1 || OUT < 1 || reps < 1 || reps > 1000 || (size_t)B * IN > ((size_t)1 << 32)) {
        fprintf(stderr, "dense_one: arguments out of range\n");
        return 2;
    }
    const size_t nx = (size_t)B * IN, nw = (size_t)OUT * IN, ny = (size_t)B * OUT;
    float *hx = malloc(nx * sizeof(float)), *hw = malloc(nw * sizeof(float)), *hb = malloc(OUT * sizeof(float));
    float *hy = malloc(ny * sizeof(float)), *t = malloc(reps * sizeof(float));
    if (!hx || !hw || !hb || !hy || !t) {
        fprintf(stderr, "dense_one: out of host memory\n");
        return 1;
    }
    unsigned s = 1;
    for (size_t i = 0; i < nx; i++) hx[i] = (lcg(&s) >> 8) / 16777216.0f - 0.5f;
    for (size_t i = 0; i < nw; i++) hw[i] = ((lcg(&s) >> 8) / 16777216.0f - 0.5f) * 0.05f;
    for (int i = 0; i < OUT; i++) hb[i] = (lcg(&s) >> 8) / 16777216.0f - 0.5f;
    float *x, *w, *b, *y;
    void *wp;
    cudaStream_t stream;
    cudaEvent_t e0, e1;
    CK(cudaMalloc((void **)&x, nx * sizeof(float)));
    CK(cudaMalloc((void **)&w, nw * sizeof(float)));
    CK(cudaMalloc((void **)&b, OUT * sizeof(float)));
    CK(cudaMalloc((void **)&y, ny * sizeof(float)));
    CK(cudaMalloc(&wp,
                  i8 ? nc_cuda_dense_i8_prepared_size(IN, OUT) : nc_cuda_dense_tc_prepared_size(precision, IN, OUT)));
    CK(cudaMemcpy(x, hx, nx * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(w, hw, nw * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, hb, OUT * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaStreamCreate(&stream));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    nc_error err = {0};
    if (i8 ? nc_cuda_dense_i8_prepare(wp, w, IN, OUT, stream, &err)
           : nc_cuda_dense_tc_prepare(precision, wp, w, IN, OUT, stream, &err)) {
        fprintf(stderr, "dense_one: %s\n", err.msg);
        return 1;
    }
    const char *kenv = getenv("DENSE_ONE_KERNEL");
    const int kernel = kenv ? atoi(kenv) : NC_DENSE_TC_AUTO; /* NC_DENSE_I8_AUTO at i8: 0 too */
    const int own = i8 ? 0 : nc_cuda_dense_tc_ksplits(precision, IN, &err);
    void *scratch = NULL;
    size_t scratch_bytes = 0;
    if (!i8 && own < 1) {
        fprintf(stderr, "dense_one: %s\n", err.msg);
        return 1;
    }
    for (int a = 6; a < argc; a++) {
        const int S = atoi(argv[a]);
        if (i8) {
            size_t need = 0;
            if (nc_cuda_dense_i8_scratch_size(&need, B, IN, OUT, S, kernel, &err)) {
                fprintf(stderr, "dense_one: %s\n", err.msg);
                return 1;
            }
            if (need > scratch_bytes) {
                CK(cudaFree(scratch));
                CK(cudaMalloc(&scratch, need));
                scratch_bytes = need;
            }
        }
        for (int r = -1; r < reps; r++) { /* r = -1: the warm-up */
            CK(cudaEventRecord(e0, stream));
            if (i8 ? nc_cuda_dense_i8_forward_prepared(y, x, wp, b, B, IN, OUT, scratch, scratch_bytes, S, kernel,
                                                       stream, &err)
                   : nc_cuda_dense_tc_forward_kernel(precision, y, x, wp, b, B, IN, OUT, S, kernel, stream, &err)) {
                fprintf(stderr, "dense_one: %s\n", err.msg);
                return 1;
            }
            CK(cudaEventRecord(e1, stream));
            CK(cudaEventSynchronize(e1));
            if (r >= 0) CK(cudaEventElapsedTime(&t[r], e0, e1));
        }
        qsort(t, reps, sizeof(float), cmp_float);
        CK(cudaMemcpy(hy, y, ny * sizeof(float), cudaMemcpyDeviceToHost));
        uint64_t h = 1469598103934665603ull;
        const unsigned char *p = (const unsigned char *)hy;
        for (size_t i = 0; i < ny * sizeof(float); i++) h = (h ^ p[i]) * 1099511628211ull;
        printf("dense %s B %d IN %d OUT %d  S %d%s  kernel %d  %.4f ms  %.1f TFLOP/s  bits %016llx\n", argv[1], B, IN,
               OUT, S ? S : own, S ? "" : " (own)", kernel, t[reps / 2],
               2.0 * B * IN * OUT / (t[reps / 2] * 1e-3) / 1e12, (unsigned long long)h);
    }
    CK(cudaFree(x));
    CK(cudaFree(w));
    CK(cudaFree(b));
    CK(cudaFree(y));
    CK(cudaFree(wp));
    CK(cudaFree(scratch));
    free(hx), free(hw), free(hb), free(hy), free(t);
    return 0;
}
