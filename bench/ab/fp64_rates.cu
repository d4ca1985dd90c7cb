/*
 * The rates of the fp64 paths an fp32 Winograd kernel would lean on if its products ran on the fp64 tensor cores
 * (DMMA, exact for fp32 inputs), measured rather than taken from the data sheet: mma.sync f64 m8n8k4 and sm_90's
 * m16n8k4 and m16n8k16, DFMA, the conversions between fp32 and fp64, FFMA for scale, and DMMA issued beside
 * conversions or DFMA (do they share a pipe?). Each kernel runs 8 independent chains a thread (4 for the m16 shapes)
 * in every resident warp and times itself with clock64, so the rates are a cycle an SM, whatever the clock.
 *
 *   cmake --build build --target fp64_rates && build/fp64_rates      (or: nvcc -O3 -arch=sm_90 bench/ab/fp64_rates.cu)
 *
 * It writes one line a kernel: operations (multiply-adds for DMMA) a cycle an SM. On the H100 (2026-11-28,
 * docs/PERFORMANCE-LOG.md): m8n8k4 64, m16n8k4 and m16n8k16 127, DFMA 58, FFMA 122, conversions 15; m8n8k4 beside 4
 * DFMA a DMMA 38 (they share a pipe), beside 2 conversions 60, beside 8 FFMA 51.
 */
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "fp64_rates: %s: %s\n", #x, cudaGetErrorString(e_));                                       \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

enum { K_DMMA, K_DMMA_M16K4, K_DMMA_M16K16, K_DFMA, K_FFMA, K_CVT, K_DMMA_CVT, K_DMMA_DFMA, K_DMMA_FFMA, K_N };
static const char *names[K_N] = {"dmma m8n8k4 (multiply-adds)",
                                 "dmma m16n8k4 (multiply-adds)",
                                 "dmma m16n8k16 (multiply-adds)",
                                 "dfma",
                                 "ffma",
                                 "cvt f32->f64->f32 (conversions)",
                                 "m8n8k4 + 2 cvt a dmma (dmma's MACs)",
                                 "m8n8k4 + 4 dfma a dmma (dmma's MACs)",
                                 "m8n8k4 + 8 ffma a dmma (dmma's MACs)"};

template <int KIND> __global__ void rates_kernel(double *out, long long *cycles, int iters) {
    double acc[8][2], q[4][4], a = 1.0 + threadIdx.x * 1e-9, b = 1.0 - threadIdx.x * 1e-9, d[8];
    float f[8], g[8];
#pragma unroll
    for (int k = 0; k < 8; k++) {
        acc[k][0] = acc[k][1] = d[k] = k * 1e-3;
        f[k] = g[k] = k * 1e-3f + threadIdx.x * 1e-7f;
        q[k / 2][k % 2 * 2] = q[k / 2][k % 2 * 2 + 1] = k * 1e-3;
    }
    __syncthreads();
    const long long t0 = clock64();
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int k = 0; k < 8; k++) {
            if (KIND == K_DMMA || KIND == K_DMMA_CVT || KIND == K_DMMA_DFMA || KIND == K_DMMA_FFMA)
                asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
                             : "+d"(acc[k][0]), "+d"(acc[k][1])
                             : "d"(a), "d"(b));
            if (KIND == K_DMMA_M16K4 && k < 4) /* 4 chains of 512 multiply-adds */
                asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
                             "{%0, %1, %2, %3};"
                             : "+d"(q[k][0]), "+d"(q[k][1]), "+d"(q[k][2]), "+d"(q[k][3])
                             : "d"(a), "d"(b), "d"(a));
            if (KIND == K_DMMA_M16K16 && k < 4) /* 4 chains of 2048 */
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
                             "{%4, %5, %4, %5, %4, %5, %4, %5}, {%6, %5, %6, %5}, {%0, %1, %2, %3};"
                             : "+d"(q[k][0]), "+d"(q[k][1]), "+d"(q[k][2]), "+d"(q[k][3])
                             : "d"(a), "d"(b), "d"(a));
            if (KIND == K_DFMA || KIND == K_DMMA_DFMA) {
                d[k] = fma(d[k], b, a);
                if (KIND == K_DMMA_DFMA) d[k] = fma(d[k], a, b), d[k] = fma(d[k], b, a), d[k] = fma(d[k], a, b);
            }
            if (KIND == K_FFMA || KIND == K_DMMA_FFMA) {
                f[k] = fmaf(f[k], 0.999f, 1e-7f);
                g[k] = fmaf(g[k], 1.001f, -1e-7f);
                if (KIND == K_DMMA_FFMA)
#pragma unroll
                    for (int r = 0; r < 3; r++) f[k] = fmaf(f[k], 0.999f, 1e-7f), g[k] = fmaf(g[k], 1.001f, -1e-7f);
            }
            if (KIND == K_CVT || KIND == K_DMMA_CVT) {
                double t;
                asm volatile("cvt.f64.f32 %0, %1;" : "=d"(t) : "f"(f[k]));
                asm volatile("cvt.rn.f32.f64 %0, %1;" : "=f"(f[k]) : "d"(t));
            }
        }
    }
    const long long t1 = clock64();
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < 8; k++) s += acc[k][0] + acc[k][1] + d[k] + f[k] + g[k] + q[k / 2][k % 2 * 2];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

/* Operations a thread an iteration of its 8 chains, as each kernel counts them (dmma: multiply-adds, 256 an
 * instruction a warp, so 8 a thread). */
static double per_thread_iter(int k) {
    switch (k) {
    case K_DMMA:
    case K_DMMA_CVT:
    case K_DMMA_DFMA:
    case K_DMMA_FFMA: return 8 * 8.0;
    case K_DMMA_M16K4: return 4 * 16.0;
    case K_DMMA_M16K16: return 4 * 64.0;
    case K_DFMA: return 8;
    case K_FFMA: return 16;
    case K_CVT: return 16;
    }
    return 0;
}

int main(void) {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    const int threads = 256, per_sm = 4, blocks = sms * per_sm, iters = 4096;
    double *out;
    long long *cyc, *h = (long long *)malloc(sizeof(long long) * blocks);
    CK(cudaMalloc(&out, sizeof(double) * blocks * threads));
    CK(cudaMalloc(&cyc, sizeof(long long) * blocks));
    printf("%s, %d SMs; %d blocks of %d threads an SM, 8 chains a thread\n", p.name, sms, per_sm, threads);
    void (*fns[K_N])(double *, long long *,
                     int) = {rates_kernel<K_DMMA>,     rates_kernel<K_DMMA_M16K4>, rates_kernel<K_DMMA_M16K16>,
                             rates_kernel<K_DFMA>,     rates_kernel<K_FFMA>,       rates_kernel<K_CVT>,
                             rates_kernel<K_DMMA_CVT>, rates_kernel<K_DMMA_DFMA>,  rates_kernel<K_DMMA_FFMA>};
    for (int k = 0; k < K_N; k++) {
        int occ = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fns[k], threads, 0));
        double best = 0.0;
        for (int rep = 0; rep < 3; rep++) {
            fns[k]<<<blocks, threads>>>(out, cyc, iters);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(h, cyc, sizeof(long long) * blocks, cudaMemcpyDeviceToHost));
            long long mx = 0;
            for (int b = 0; b < blocks; b++) mx = h[b] > mx ? h[b] : mx;
            /* an SM runs min(occ, per_sm) blocks at a time: their work over the longest block's cycles */
            const int at_once = occ < per_sm ? occ : per_sm;
            const double rate = per_thread_iter(k) * threads * at_once * (double)iters / (double)mx;
            best = rate > best ? rate : best;
        }
        printf("%-40s %8.1f a cycle an SM (%d blocks an SM at a time)\n", names[k], best, occ < per_sm ? occ : per_sm);
    }
    CK(cudaFree(out));
    CK(cudaFree(cyc));
    free(h);
    return 0;
}
