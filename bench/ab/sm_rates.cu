/*
 * Rates of an SM's pipes that the Winograd kernels' designs lean on, measured rather than taken from data sheets
 * (docs/PERFORMANCE-LOG.md, 2026-11-28). Every kernel runs loops of independent work in every resident warp and
 * times itself with clock64, so the figures are a cycle an SM, whatever the clock.
 *
 * The fp64 paths, for an fp32 Winograd kernel whose products ran on the fp64 tensor cores (DMMA, exact for fp32
 * inputs): mma.sync f64 m8n8k4 and sm_90's m16n8k4 and m16n8k16, DFMA, the conversions between fp32 and fp64, FFMA for
 * scale, and DMMA issued beside conversions or DFMA (do they share a pipe?); 8 independent chains a thread (4 for the
 * m16 shapes), in operations (multiply-adds for DMMA) a cycle an SM. On the H100: m8n8k4 64, m16n8k4 and m16n8k16
 * 127, DFMA 58, FFMA 122, conversions 15; m8n8k4 beside 4 DFMA a DMMA 38 (they share a pipe), beside 2 conversions
 * 60, beside 8 FFMA 51. A tile's mix of 2018 spring's second layer in such a kernel (16 m16n8k4, the output
 * transform's rows on DFMA, 4 a DMMA a thread, and 2 conversions a DMMA a thread): 131 cycles an SM a tile; with all of
 * the output transform on DFMA (6.5 a DMMA, 1.5 conversions): 170; with both transforms in fp32 on FFMA (11 a DMMA)
 * and every conversion apart (3 a DMMA): 157. A quarter of cuDNN leaves 159 a tile for everything.
 * m16n8k4 beside FFMA (an exact GEMM on both pipes?): as many FFMA as DMMA's multiply-adds, 73.8 of each a cycle an
 * SM, 148 together; twice as many, 45.3 and 91. Beside fp32 -> fp64 conversions alone: 1 a DMMA a thread 115.5, 2
 * 100.4 (H200, the same SM: every other line here matched the H100's). docs/PERFORMANCE-LOG.md, session 54.
 *
 * What a warp's 16-byte shared-memory load costs as its lanes' addresses (16-byte words) overlap, in cycles an SM a
 * warp's load:
 *   distinct        lane l reads word l (512 bytes, 4 wavefronts at the least)
 *   8 words, x4     lane l reads word l mod 8 (each word into 4 lanes, in 4 different quarters of the warp)
 *   8 words, q      lane l reads word l / 4 (each quarter of the warp 2 words, each into 4 lanes)
 *   1 word          every lane reads word 0
 * and, for scale, a 4-byte load of 32 distinct words (1 wavefront). On the H100, with ncu's count of wavefronts
 * beside it: 4.13 (4 wavefronts), 4.13 (4: a word read by lanes of different quarters costs a wavefront each time),
 * 2.68 (2), 2.50 (2), 1.83 (1, and the loop's adds). ncu puts the pipe's most at one wavefront a cycle an SM; the
 * 16-byte loads ran at 0.97. Version 15's rows-of-products variant read V as "8 words, x4".
 *
 *   cmake --build build --target sm_rates && build/sm_rates
 */
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "sm_rates: %s: %s\n", #x, cudaGetErrorString(e_));                                         \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* ---------------------------------------------------------------------------------------------------- fp64 paths */

enum {
    K_DMMA,
    K_DMMA_M16K4,
    K_DMMA_M16K16,
    K_DFMA,
    K_FFMA,
    K_CVT,
    K_DMMA_CVT,
    K_DMMA_DFMA,
    K_DMMA_FFMA,
    K_TILE_ROWS,
    K_TILE_ALL,
    K_M16_FFMA,
    K_M16_FFMA2,
    K_M16_CVT1,
    K_M16_CVT2,
    K_TILE_F32,
    K_N
};
static const char *names[K_N] = {"dmma m8n8k4 (multiply-adds)",
                                 "dmma m16n8k4 (multiply-adds)",
                                 "dmma m16n8k16 (multiply-adds)",
                                 "dfma",
                                 "ffma",
                                 "cvt f32->f64->f32 (conversions)",
                                 "m8n8k4 + 2 cvt a dmma (dmma's MACs)",
                                 "m8n8k4 + 4 dfma a dmma (dmma's MACs)",
                                 "m8n8k4 + 8 ffma a dmma (dmma's MACs)",
                                 "tile mix, rows in fp64 (dmma's MACs)",
                                 "tile mix, all in fp64 (dmma's MACs)",
                                 "m16n8k4 + 16 ffma a dmma (dmma's MACs)",
                                 "m16n8k4 + 32 ffma a dmma (dmma's MACs)",
                                 "m16n8k4 + 1 cvt a dmma (dmma's MACs)",
                                 "m16n8k4 + 2 cvt a dmma (dmma's MACs)",
                                 "tile mix, transforms in fp32 (dmma's MACs)"};

template <int KIND> __global__ void rates_kernel(double *out, long long *cycles, int iters) {
    double acc[8][2], q[4][4], a = 1.0 + threadIdx.x * 1e-9, b = 1.0 - threadIdx.x * 1e-9, d[8];
    float f[8], g[8];
    int bits = 0; /* the conversions' results, folded */
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
            if ((KIND == K_DMMA_M16K4 || KIND == K_TILE_ROWS || KIND == K_TILE_ALL || KIND == K_M16_FFMA ||
                 KIND == K_M16_FFMA2 || KIND == K_M16_CVT1 || KIND == K_M16_CVT2 || KIND == K_TILE_F32) &&
                k < 4) /* 4 chains of 512 */
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
            /* FFMA beside m16n8k4 (an exact GEMM on both pipes?): as many multiply-adds a thread as DMMA's, or twice */
            if (KIND == K_M16_FFMA || KIND == K_M16_FFMA2)
#pragma unroll
                for (int r = 0; r < (KIND == K_M16_FFMA ? 4 : 8); r++)
                    f[k] = fmaf(f[k], 0.999f, 1e-7f), g[k] = fmaf(g[k], 1.001f, -1e-7f);
            if (KIND == K_FFMA || KIND == K_DMMA_FFMA) {
                f[k] = fmaf(f[k], 0.999f, 1e-7f);
                g[k] = fmaf(g[k], 1.001f, -1e-7f);
                if (KIND == K_DMMA_FFMA)
#pragma unroll
                    for (int r = 0; r < 3; r++) f[k] = fmaf(f[k], 0.999f, 1e-7f), g[k] = fmaf(g[k], 1.001f, -1e-7f);
            }
            /* The fp64 tensor cores' design for 2018 spring's second layer, a tile's mix of work an SM (2026-11-28):
             * 16 m16n8k4, the output transform's rows on DFMA (2,048 a tile: 4 a DMMA a thread) or all of it (3,264:
             * 6.4), and the conversions (896 or 640: 1.75 or 1.25 a DMMA a thread; run here as 2 and 1.5). */
            if (KIND == K_TILE_ROWS || KIND == K_TILE_ALL) {
                const int n = KIND == K_TILE_ROWS ? 2 : k < 2 ? 4 : 3; /* 16 or 26 an iteration */
#pragma unroll
                for (int r = 0; r < n; r++) d[k] = fma(d[k], r & 1 ? a : b, r & 1 ? b : a);
                if (k < (KIND == K_TILE_ROWS ? 4 : 3)) { /* 8 or 6 conversions an iteration */
                    double t;
                    asm volatile("cvt.f64.f32 %0, %1;" : "=d"(t) : "f"(f[k]));
                    asm volatile("cvt.rn.f32.f64 %0, %1;" : "=f"(f[k]) : "d"(t));
                }
            }
            /* The same tile with both transforms in fp32 on FFMA (5,568 a tile: 10.9 a DMMA a thread, run as 11) and
             * every conversion on its own (V's 512 to fp64, D's 1,024 to fp32: 3 a DMMA a thread). */
            if (KIND == K_TILE_F32) {
#pragma unroll
                for (int r = 0; r < (k < 4 ? 6 : 5); r++) f[k] = fmaf(f[k], 0.999f, 1e-7f);
                if (k < 6) {
                    double t;
                    float u;
                    asm volatile("cvt.f64.f32 %0, %1;" : "=d"(t) : "f"(f[k]));
                    asm volatile("cvt.rn.f32.f64 %0, %1;" : "=f"(u) : "d"(q[k & 3][k >> 2]));
                    bits ^= __double2hiint(t) ^ __float_as_int(u);
                }
            }
            /* f32 -> f64 only, 1 or 2 a DMMA a thread, of values that change every iteration (integer adds, off the
             * FMA pipe), each result folded into an integer: ptxas drops a conversion whose result is unused, asm
             * volatile or not (this session's first measurement of these lines had none left in its loop). */
            if ((KIND == K_M16_CVT1 && k < 4) || KIND == K_M16_CVT2) {
                double t;
                asm volatile("cvt.f64.f32 %0, %1;" : "=d"(t) : "f"(__int_as_float(0x3f800000 + (i << 3) + k)));
                bits ^= __double2hiint(t);
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
    s += bits;
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
    case K_DMMA_M16K4:
    case K_TILE_ROWS:
    case K_TILE_ALL:
    case K_M16_FFMA:
    case K_M16_FFMA2:
    case K_M16_CVT1:
    case K_M16_CVT2:
    case K_TILE_F32: return 4 * 16.0;
    case K_DMMA_M16K16: return 4 * 64.0;
    case K_DFMA: return 8;
    case K_FFMA: return 16;
    case K_CVT: return 16;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------- shared-memory loads */

enum { P_DISTINCT, P_8X4, P_8Q, P_1, P_SCALAR, P_N };
static const char *lds_names[P_N] = {"16 bytes, 32 distinct words", "16 bytes, 8 words, lane mod 8",
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

/* ------------------------------------------------------------------------------------------------------- harness */

enum { THREADS = 256, PER_SM = 4, ITERS = 4096 };

/* fn on PER_SM blocks an SM, three times: the fewest cycles its longest block took, and how many blocks an SM ran at a
 * time (the figures count their work over those cycles). */
template <typename T>
static long long longest_block(void (*fn)(T *, long long *, int), void *out, long long *cyc, long long *h, int blocks,
                               int *at_once) {
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fn, THREADS, 0));
    *at_once = occ < PER_SM ? occ : PER_SM;
    long long best = -1;
    for (int rep = 0; rep < 3; rep++) {
        fn<<<blocks, THREADS>>>((T *)out, cyc, ITERS);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(h, cyc, sizeof(long long) * blocks, cudaMemcpyDeviceToHost));
        long long mx = 0;
        for (int b = 0; b < blocks; b++) mx = h[b] > mx ? h[b] : mx;
        best = best < 0 || mx < best ? mx : best;
    }
    return best;
}

int main(void) {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    const int blocks = sms * PER_SM;
    void *out;
    long long *cyc, *h = (long long *)malloc(sizeof(long long) * blocks);
    CK(cudaMalloc(&out, sizeof(double) * blocks * THREADS));
    CK(cudaMalloc(&cyc, sizeof(long long) * blocks));
    printf("%s, %d SMs; %d blocks of %d threads an SM\n", p.name, sms, PER_SM, THREADS);
    void (*fns[K_N])(double *, long long *,
                     int) = {rates_kernel<K_DMMA>,     rates_kernel<K_DMMA_M16K4>, rates_kernel<K_DMMA_M16K16>,
                             rates_kernel<K_DFMA>,     rates_kernel<K_FFMA>,       rates_kernel<K_CVT>,
                             rates_kernel<K_DMMA_CVT>, rates_kernel<K_DMMA_DFMA>,  rates_kernel<K_DMMA_FFMA>,
                             rates_kernel<K_TILE_ROWS>, rates_kernel<K_TILE_ALL>,  rates_kernel<K_M16_FFMA>,
                             rates_kernel<K_M16_FFMA2>, rates_kernel<K_M16_CVT1>, rates_kernel<K_M16_CVT2>,
                             rates_kernel<K_TILE_F32>};
    for (int k = 0; k < K_N; k++) {
        int at_once = 0;
        const long long c = longest_block(fns[k], out, cyc, h, blocks, &at_once);
        const double rate = per_thread_iter(k) * THREADS * at_once * (double)ITERS / (double)c;
        printf("%-40s %8.1f a cycle an SM (%d blocks an SM at a time)", names[k], rate, at_once);
        if (k == K_TILE_ROWS || k == K_TILE_ALL || k == K_TILE_F32) /* a tile: 8,192 of DMMA's multiply-adds */
            printf(": %.1f cycles a tile", 8192.0 / rate);
        printf("\n");
    }
    void (*lds[P_N])(float *, long long *, int) = {lds_kernel<P_DISTINCT>, lds_kernel<P_8X4>, lds_kernel<P_8Q>,
                                                   lds_kernel<P_1>, lds_kernel<P_SCALAR>};
    for (int k = 0; k < P_N; k++) {
        int at_once = 0;
        const long long c = longest_block(lds[k], out, cyc, h, blocks, &at_once);
        /* 8 loads a warp an iteration */
        printf("%-40s %8.2f cycles an SM a warp's load\n", lds_names[k],
               (double)c / ((double)at_once * THREADS / 32 * 8 * ITERS));
    }
    CK(cudaFree(out));
    CK(cudaFree(cyc));
    free(h);
    return 0;
}
