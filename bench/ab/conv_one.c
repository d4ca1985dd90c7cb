/* One convolution layer through nc_conv_launch_fused (versions 5 and 6: conv_direct.cu, conv_directc.cu), for side by
 * side runs of kernel variants (bench/ab/run.sh preloads each variant's library over libnanoconv.so): a warm-up, then
 * REPS runs timed by CUDA events; prints the median and an FNV-1a hash of the output's bits, so that two variants
 * that compute the same sums in the same order print the same hash.
 *   conv_one C H W M K POOL ACT U8 B REPS
 *     POOL 0 (none), 2 or 4 (max pooling, P = S); ACT -1 (none), 0 (tanh), 1 (relu); U8 1: uint8 pixels through a
 *     /255 lut (one channel, as a network's first layer runs), 0: float input
 *   NC_AB_MEMSET=1 conv_one ...   times cudaMemsetAsync of the layer's output instead: what writing it alone costs
 *   NC_AB_ROWS=1 conv_one ...     through nc_conv_launch_fused_rows: unpooled, version 13's rows of four a thread
 *   NC_AB_ROWS=2 conv_one ...     the same with version 14's two rows of four a thread
 *   NC_AB_ROWS=3 conv_one ...     version 15 (conv_wino.cu), called directly, so that a variant of that file preloaded
 *                                 over the library takes the call
 * Built as the conv_one target of a build with CUDA. Inputs, weights and bias are fixed pseudo-random numbers, the
 * same in every run. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda/conv_ladder.h"

#define AB_NAME "conv_one"
#include "ab_harness.h"

int main(int argc, char **argv) {
    if (argc != 11) {
        fprintf(stderr, "usage: conv_one C H W M K POOL(0,2,4) ACT(-1,0 tanh,1 relu) U8(0,1) B REPS\n");
        return 2;
    }
    const int C = atoi(argv[1]), H = atoi(argv[2]), W = atoi(argv[3]), M = atoi(argv[4]), K = atoi(argv[5]);
    const int pool = atoi(argv[6]), act = atoi(argv[7]), u8 = atoi(argv[8]), B = atoi(argv[9]), reps = atoi(argv[10]);
    if (C < 1 || H < K || W < K || M < 1 || K < 1 || (pool != 0 && pool != 2 && pool != 4) || act < -1 || act > 1 ||
        (u8 && C != 1) || B < 1 || reps < 1 || reps > 1000) {
        fprintf(stderr, "conv_one: arguments out of range\n");
        return 2;
    }
    const int Ho = H - K + 1, Wo = W - K + 1, Yh = pool ? Ho / pool : Ho, Yw = pool ? Wo / pool : Wo;
    const size_t nx = (size_t)B * C * H * W, nk = (size_t)M * C * K * K, ny = (size_t)B * M * Yh * Yw;
    unsigned char *hx = malloc(nx);
    float *hxf = malloc(nx * sizeof(float)), *hk = malloc(nk * sizeof(float)), *hb = malloc(M * sizeof(float));
    float *hy = malloc(ny * sizeof(float)), *t = malloc(reps * sizeof(float));
    if (!hx || !hxf || !hk || !hb || !hy || !t) {
        fprintf(stderr, "conv_one: out of host memory\n");
        return 1;
    }
    unsigned s = 1;
    for (size_t i = 0; i < nx; i++) hx[i] = lcg(&s) >> 24, hxf[i] = hx[i] / 255.0f - 0.5f;
    for (size_t i = 0; i < nk; i++) hk[i] = ((lcg(&s) >> 8) / 16777216.0f - 0.5f) * 0.1f;
    for (int i = 0; i < M; i++) hb[i] = ((lcg(&s) >> 8) / 16777216.0f - 0.5f) * 0.1f;
    nc_conv_lut lut;
    for (int p = 0; p < 256; p++) lut.v[p] = p / 255.0f;
    unsigned char *dx = NULL;
    float *dxf = NULL, *dk, *db, *dy;
    if (u8) {
        CK(cudaMalloc((void **)&dx, nx));
        CK(cudaMemcpy(dx, hx, nx, cudaMemcpyHostToDevice));
    } else {
        CK(cudaMalloc((void **)&dxf, nx * sizeof(float)));
        CK(cudaMemcpy(dxf, hxf, nx * sizeof(float), cudaMemcpyHostToDevice));
    }
    CK(cudaMalloc((void **)&dk, nk * sizeof(float)));
    CK(cudaMalloc((void **)&db, M * sizeof(float)));
    CK(cudaMalloc((void **)&dy, ny * sizeof(float)));
    CK(cudaMemcpy(dk, hk, nk * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, hb, M * sizeof(float), cudaMemcpyHostToDevice));
    const int act_kind = act == 0 ? NC_TANH : act == 1 ? NC_RELU : -1, pool_kind = pool ? NC_MAXPOOL : -1;
    const nc_conv_epilogue e = {act_kind, pool_kind, pool ? pool : 1, pool ? pool : 1};
    const int memset_only = getenv("NC_AB_MEMSET") != NULL,
              rows = getenv("NC_AB_ROWS") ? atoi(getenv("NC_AB_ROWS")) : 0;
    nc_error err = {0};
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int r = -1; r < reps; r++) { /* r = -1: the warm-up */
        CK(cudaEventRecord(a, 0));
        if (memset_only) {
            CK(cudaMemsetAsync(dy, r & 1, ny * sizeof(float), 0));
        } else if (rows == 3
                       ? nc_conv_launch_wino_fused(dy, dxf, dx, u8 ? &lut : NULL, dk, db, B, C, H, W, M, K, &e, 0, &err)
                   : rows
                       ? nc_conv_launch_fused_rows(dy, dxf, dx, u8 ? &lut : NULL, dk, db, B, C, H, W, M, K, &e, rows, 0,
                                                   &err)
                       : nc_conv_launch_fused(dy, dxf, dx, u8 ? &lut : NULL, dk, db, B, C, H, W, M, K, &e, 0, &err)) {
            fprintf(stderr, "conv_one: %s\n", err.msg);
            return 1;
        }
        CK(cudaEventRecord(b, 0));
        CK(cudaEventSynchronize(b));
        if (r >= 0) CK(cudaEventElapsedTime(&t[r], a, b));
    }
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hy, dy, ny * sizeof(float), cudaMemcpyDeviceToHost));
    unsigned long long h = 1469598103934665603ull;
    const unsigned char *yb = (const unsigned char *)hy;
    for (size_t i = 0; i < ny * sizeof(float); i++) h = (h ^ yb[i]) * 1099511628211ull;
    qsort(t, reps, sizeof(float), cmp_float);
    printf("c%d %dx%d m%d k%d p%d %s %s B %d  %.4f ms  hash %016llx\n", C, H, W, M, K, pool,
           act == 0   ? "tanh"
           : act == 1 ? "relu"
                      : "none",
           u8 ? "u8" : "f32", B, t[reps / 2], h);
    cudaFree(dx), cudaFree(dxf), cudaFree(dk), cudaFree(db), cudaFree(dy);
    free(hx), free(hxf), free(hk), free(hb), free(hy), free(t);
    return 0;
}
