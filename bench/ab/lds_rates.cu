/*
 * What a warp's 16-byte shared-memory load costs as its lanes' addresses overlap: the cycles an SM takes for one such
 * load of a warp, in loops of independent loads in every resident warp, for each pattern of the 32 lanes' addresses
 * (16-byte words):
 *   distinct        lane l reads word l (512 bytes, 4 wavefronts at the least)
 *   8 words, x4     lane l reads word l mod 8 (each word into 4 lanes, in 4 different quarters of the warp)
 *   8 words, q      lane l reads word l / 4 (each quarter of the warp 2 words, each into 4 lanes)
 *   1 word          every lane reads word 0
 * and, for scale, a 4-byte load of 32 distinct words (1 wavefront). Version 15's variants on 2018 spring's second
 * layer (docs/PERFORMANCE-LOG.md, 2026-11-28) read V as "8 words, x4".
 *
 *   cmake --build build --target lds_rates && build/lds_rates
 *
 * On the H100 (2026-11-28, with ncu's count of wavefronts beside it; docs/PERFORMANCE-LOG.md), cycles an SM a warp's
 * load: 32 distinct words 4.13 (4 wavefronts), 8 words lane mod 8 4.13 (4: a word read by lanes in different
 * quarters of the warp costs a wavefront each time), lane / 4 2.68 (2), 1 word 2.50 (2), 4-byte loads 1.83 (1, and
 * the loop's adds). ncu puts the pipe's most at one wavefront a cycle an SM; the 16-byte loads ran at 0.97.
 */
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "lds_rates: %s: %s\n", #x, cudaGetErrorString(e_));                                        \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

enum { P_DISTINCT, P_8X4, P_8Q, P_1, P_SCALAR, P_N };
static const char *names[P_N] = {"16 bytes, 32 distinct words", "16 bytes, 8 words, lane mod 8",
                                 "16 bytes, 8 words, lane / 4", "16 bytes, 1 word", "4 bytes, 32 distinct words"};

template <int PAT> __global__ void lds_kernel(float *out, long long *cycles, int iters) {
    __shared__ float4 s[256];
    const int lane = threadIdx.x & 31;
    for (int i = threadIdx.x; i < 256; i += blockDim.x) s[i] = make_float4(i, 1.0f, 2.0f, 3.0f);
    __syncthreads();
    const int w = PAT == P_DISTINCT ? lane : PAT == P_8X4 ? lane % 8 : PAT == P_8Q ? lane / 4 : 0;
    /* 8 loads a thread an iteration, each 512 bytes (32 words) from the others, so that they fall in the same banks as
     * the pattern's and are independent; which load takes which block of 32 words turns with the iteration (ptxas
     * merges repeated shared loads, asm volatile or not). */
    float acc = 0.0f;
    const long long t0 = clock64();
#pragma unroll 1 /* unrolled, ptxas merges the loads of one iteration with the same ones of the next */
    for (int i = 0; i < iters; i++) {
        float4 v[8];
        float f[8];
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const int blk = 32 * ((k + i) & 7);
            if (PAT == P_SCALAR)
                asm volatile("ld.shared.f32 %0, [%1];"
                             : "=f"(f[k])
                             : "r"((unsigned)__cvta_generic_to_shared((float *)s + lane + 4 * blk)));
            else
                asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                             : "=f"(v[k].x), "=f"(v[k].y), "=f"(v[k].z), "=f"(v[k].w)
                             : "r"((unsigned)__cvta_generic_to_shared(s + w + blk)));
        }
#pragma unroll
        for (int k = 0; k < 8; k++) acc += PAT == P_SCALAR ? f[k] : (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    const long long t1 = clock64();
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

int main(void) {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    const int threads = 256, per_sm = 4, blocks = sms * per_sm, iters = 4096;
    float *out;
    long long *cyc, *h = (long long *)malloc(sizeof(long long) * blocks);
    CK(cudaMalloc(&out, sizeof(float) * blocks * threads));
    CK(cudaMalloc(&cyc, sizeof(long long) * blocks));
    printf("%s, %d SMs; %d blocks of %d threads an SM, 8 loads an iteration\n", p.name, sms, per_sm, threads);
    void (*fns[P_N])(float *, long long *, int) = {lds_kernel<P_DISTINCT>, lds_kernel<P_8X4>, lds_kernel<P_8Q>,
                                                   lds_kernel<P_1>, lds_kernel<P_SCALAR>};
    for (int k = 0; k < P_N; k++) {
        int occ = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fns[k], threads, 0));
        const int at_once = occ < per_sm ? occ : per_sm;
        double best = 1e30;
        for (int rep = 0; rep < 3; rep++) {
            fns[k]<<<blocks, threads>>>(out, cyc, iters);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(h, cyc, sizeof(long long) * blocks, cudaMemcpyDeviceToHost));
            long long mx = 0;
            for (int b = 0; b < blocks; b++) mx = h[b] > mx ? h[b] : mx;
            /* an SM's warps' loads at a time: min(occ, per_sm) blocks of threads / 32 warps, 8 a warp an iteration */
            const double loads = (double)at_once * threads / 32 * 8 * iters;
            const double cpl = (double)mx / loads;
            best = cpl < best ? cpl : best;
        }
        printf("%-34s %6.2f cycles an SM a warp's load\n", names[k], best);
    }
    CK(cudaFree(out));
    CK(cudaFree(cyc));
    free(h);
    return 0;
}
