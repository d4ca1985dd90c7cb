/*
 * What the int8 tensor cores' warpgroup MMA (wgmma m64nNk32 s8, sm_90a) can do for an implicit-GEMM convolution on
 * int8 slices (2018 spring's second layer: C 6, M 16, K 5), measured (docs/PERFORMANCE-LOG.md, session 56):
 *  1. Whether a no-swizzle K-major descriptor may name rows that overlap: A's row i of a core matrix is 16 bytes
 *     after row i - 1, whatever the leading byte offset (LBO, between 16-byte chunks along k) and the stride byte
 *     offset (SBO, between groups of 8 rows). With the input stored channel-last (8 bytes a pixel) and LBO = 16, row i
 *     chunk c is pixels 2i + 2c and 2i + 2c + 1: a convolution's im2col rows read straight out of the input tile.
 *     The kernel computes A B^T with A and B through descriptors of given LBO/SBO and the host checks every sum
 *     against A and B read through the same addresses (and through LBO and SBO swapped, to tell which is which).
 *  2. The MMA's rate with both operands in shared memory (SS) or A in registers (RS), for N = 16 .. 256, with 1, 2 or
 *     4 warpgroups an SM (in one block or two); and the mixes of a k step that such a convolution issues: positions
 *     as A (64 a tile) and the weights' slices as B, N 48 + 32 + 16 (x's three slices, 8-byte pixels), or
 *     13 x N 48 + 8 x N 16 (x's first two slices in 16-byte pixels, its third in 8-byte ones). In multiply-adds a
 *     cycle an SM (clock64 spans).
 * H200, 2026-11-28 (bench/results/gpu-2026-11-28-s56-i8conv.log): every layout as described (LBO along k, SBO along
 * rows, rows overlapping or not). With two or more warpgroups an SM, SS reached 1,637 (N 16), 2,729 (32), 3,509 (48)
 * and 4,095 (64 and up) of the 4,096: A and B read at 128 bytes a cycle an SM. RS: 2,510 (N 16), 4,094 (48 and up).
 * The mixes: 2,730 and 2,938. RS with 16 distinct fragments (RS48D): 4,088; RS's mix of a k step, 48 + 32 + 16 with
 * distinct fragments (MIXRS): 3,706 (53 cycles a k step). One warpgroup an SM: 10 to 20% less.
 *   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o wgmma_i8 bench/ab/wgmma_i8.cu && ./wgmma_i8
 * (the rates' loop: 16 MMAs into one accumulator, then a wait, 2,000 times)
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "wgmma_s8.cuh"

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "wgmma_i8: %s: %s\n", #x, cudaGetErrorString(e_));                                         \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

__device__ __forceinline__ void fence() {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void commit() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wait0() {
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}
template <int R> __device__ __forceinline__ void hold(int (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; i++) asm volatile("" : "+r"(d[i])::"memory");
}

/* ------------------------------------------------------------------------------------------ 1. overlapping rows */

#define BUF 8192
/* D (64 x 48) = A B^T over k 32: A and B through descriptors at byte offsets ao, bo of the 8 KB buffer. */
__global__ void check_kernel(int *out, const signed char *src, int ao, int la, int sa, int bo, int lb, int sb) {
    __shared__ __align__(128) signed char buf[BUF];
    for (int i = threadIdx.x; i < BUF; i += 128) buf[i] = src[i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const uint32_t s0 = (uint32_t)__cvta_generic_to_shared(buf);
    int d[24];
    for (int i = 0; i < 24; i++) d[i] = 0;
    fence();
    hold(d);
    wg8_ss48(d, wg8_desc(s0 + ao, la, sa), wg8_desc(s0 + bo, lb, sb));
    commit();
    wait0();
    hold(d);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    for (int j = 0; j < 6; j++)
        for (int e = 0; e < 4; e++) out[(16 * warp + g + 8 * (e >> 1)) * 48 + 8 * j + 2 * t + (e & 1)] = d[4 * j + e];
}

static int at(const signed char *b, int off, int lbo, int sbo, int r, int k) {
    return b[off + (r / 8) * sbo + (r % 8) * 16 + (k / 16) * lbo + k % 16];
}

/* Returns 1 if every sum matches the layout (LBO along k, SBO along rows); prints what matched. */
static int check(const char *what, int ao, int la, int sa, int bo, int lb, int sb) {
    std::vector<signed char> h(BUF);
    for (int i = 0; i < BUF; i++) h[i] = (signed char)(rand() % 255 - 127);
    signed char *dsrc;
    int *dout;
    CK(cudaMalloc(&dsrc, BUF));
    CK(cudaMalloc(&dout, 64 * 48 * 4));
    CK(cudaMemcpy(dsrc, h.data(), BUF, cudaMemcpyHostToDevice));
    check_kernel<<<1, 128>>>(dout, dsrc, ao, la, sa, bo, lb, sb);
    CK(cudaGetLastError());
    std::vector<int> d(64 * 48);
    CK(cudaMemcpy(d.data(), dout, d.size() * 4, cudaMemcpyDeviceToHost));
    int bad = 0, bad_swapped = 0;
    for (int r = 0; r < 64; r++)
        for (int n = 0; n < 48; n++) {
            int s = 0, s2 = 0;
            for (int k = 0; k < 32; k++) {
                s += at(h.data(), ao, la, sa, r, k) * at(h.data(), bo, lb, sb, n, k);
                s2 += at(h.data(), ao, sa, la, r, k) * at(h.data(), bo, sb, lb, n, k);
            }
            bad += d[r * 48 + n] != s;
            bad_swapped += d[r * 48 + n] != s2;
        }
    printf("layout %-44s A lbo %4d sbo %4d, B lbo %4d sbo %4d: %4d of 3072 sums differ (%4d with lbo/sbo swapped)\n",
           what, la, sa, lb, sb, bad, bad_swapped);
    CK(cudaFree(dsrc));
    CK(cudaFree(dout));
    return bad == 0;
}

/* ------------------------------------------------------------------------------------------------------ 2. rates */

enum { SS16, SS32, SS48, SS64, SS128, SS256, RS16, RS48, RS64, RS128, MIX1, MIX2, RS48D, MIXRS, NK };
static const char *kname[NK] = {"SS m64n16k32",
                                "SS m64n32k32",
                                "SS m64n48k32",
                                "SS m64n64k32",
                                "SS m64n128k32",
                                "SS m64n256k32",
                                "RS m64n16k32",
                                "RS m64n48k32",
                                "RS m64n64k32",
                                "RS m64n128k32",
                                "mix 48+32+16 (8-byte pixels)",
                                "mix 13x48 + 8x16 (16-byte pixels)",
                                "RS m64n48k32, 16 distinct A",
                                "mix RS 48+32+16, distinct A"};
/* multiply-adds a warpgroup's step of 16 MMAs (the mixes: 8 k steps of 3, and 21 MMAs) */
static double step_macs(int k) {
    const int n[] = {16, 32, 48, 64, 128, 256, 16, 48, 64, 128};
    if (k < MIX1) return 16.0 * 64 * n[k] * 32;
    if (k == MIX1) return 8.0 * 64 * 96 * 32;
    if (k == RS48D) return 16.0 * 64 * 48 * 32;
    if (k == MIXRS) return 7.0 * 64 * 96 * 32;
    return (13.0 * 48 + 8.0 * 16) * 64 * 32;
}

#define RSMEM (48 * 1024)
template <int K> __global__ void rate_kernel(long long *span, int *smid, const signed char *src, int iters) {
    extern __shared__ __align__(128) signed char sm[];
    for (int i = threadIdx.x; i < RSMEM; i += blockDim.x) sm[i] = src[i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const uint32_t s0 = (uint32_t)__cvta_generic_to_shared(sm);
    const uint32_t bw = s0 + 40 * 1024; /* B: 8 KB at the end (N 256 x 32 bytes) */
    const int wg = threadIdx.x >> 7;
    const uint32_t a0 = s0 + (wg & 1) * 8192; /* each warpgroup its A region */
    uint32_t ar[4];
    for (int i = 0; i < 4; i++) ar[i] = *(const uint32_t *)(sm + 16 * (threadIdx.x & 127) + 4 * i);
    uint32_t ad[21][4]; /* distinct fragments (RS48D: the first 16; MIXRS: 7 k steps of 3) */
    if (K == RS48D || K == MIXRS)
        for (int j = 0; j < 21; j++)
            for (int i = 0; i < 4; i++)
                ad[j][i] = *(const uint32_t *)(sm + 2048 * j + 16 * (threadIdx.x & 127) + 4 * i);
    const uint64_t db = wg8_desc(bw, 128, 256);
    int d16[8] = {}, d32[16] = {}, d48[24] = {}, d64[32] = {}, d128[64] = {}, d256[128] = {};
    long long t0 = clock64();
    for (int it = 0; it < iters; it++) {
        fence();
        if (K == SS16) {
            hold(d16);
            for (int s = 0; s < 16; s++) wg8_ss16(d16, wg8_desc(a0 + 512 * s, 128, 256), db);
        }
        if (K == SS32) {
            hold(d32);
            for (int s = 0; s < 16; s++) wg8_ss32(d32, wg8_desc(a0 + 512 * s, 128, 256), db);
        }
        if (K == SS48) {
            hold(d48);
            for (int s = 0; s < 16; s++) wg8_ss48(d48, wg8_desc(a0 + 512 * s, 128, 256), db);
        }
        if (K == SS64) {
            hold(d64);
            for (int s = 0; s < 16; s++) wg8_ss64(d64, wg8_desc(a0 + 512 * s, 128, 256), db);
        }
        if (K == SS128) {
            hold(d128);
            for (int s = 0; s < 16; s++) wg8_ss128(d128, wg8_desc(a0 + 512 * s, 128, 256), db);
        }
        if (K == SS256) {
            hold(d256);
            for (int s = 0; s < 16; s++) wg8_ss256(d256, wg8_desc(a0 + 512 * s, 128, 256), db);
        }
        if (K == RS16) {
            hold(d16);
            for (int s = 0; s < 16; s++) wg8_rs16(d16, ar, db);
        }
        if (K == RS48) {
            hold(d48);
            for (int s = 0; s < 16; s++) wg8_rs48(d48, ar, db);
        }
        if (K == RS64) {
            hold(d64);
            for (int s = 0; s < 16; s++) wg8_rs64(d64, ar, db);
        }
        if (K == RS128) {
            hold(d128);
            for (int s = 0; s < 16; s++) wg8_rs128(d128, ar, db);
        }
        if (K == MIX1) {
            hold(d48), hold(d32), hold(d16);
            for (int s = 0; s < 8; s++) { /* x's slices 0, 1, 2 of k step s: each 64 positions, overlapping rows */
                wg8_ss48(d48, wg8_desc(a0 + 32 * s, 16, 128), db);
                wg8_ss32(d32, wg8_desc(a0 + 2048 + 32 * s, 16, 128), db);
                wg8_ss16(d16, wg8_desc(a0 + 4096 + 32 * s, 16, 128), db);
            }
        }
        if (K == MIX2) {
            hold(d48), hold(d16);
            for (int s = 0; s < 13; s++) wg8_ss48(d48, wg8_desc(a0 + 32 * s, 16, 128), db);
            for (int s = 0; s < 8; s++) wg8_ss16(d16, wg8_desc(a0 + 4096 + 32 * s, 16, 128), db);
        }
        if (K == RS48D) {
            hold(d48);
            for (int s = 0; s < 16; s++) wg8_rs48(d48, ad[s], db);
        }
        if (K == MIXRS) {
            hold(d48), hold(d32), hold(d16);
            for (int s = 0; s < 7; s++) {
                wg8_rs48(d48, ad[3 * s], db);
                wg8_rs32(d32, ad[3 * s + 1], db);
                wg8_rs16(d16, ad[3 * s + 2], db);
            }
        }
        commit();
        wait0();
    }
    hold(d16), hold(d32), hold(d48), hold(d64), hold(d128), hold(d256);
    long long t1 = clock64();
    int acc = 0;
    for (int i = 0; i < 8; i++) acc += d16[i];
    for (int i = 0; i < 16; i++) acc += d32[i];
    for (int i = 0; i < 24; i++) acc += d48[i];
    for (int i = 0; i < 32; i++) acc += d64[i];
    for (int i = 0; i < 64; i++) acc += d128[i];
    for (int i = 0; i < 128; i++) acc += d256[i];
    if (acc == 0x7fffffff) span[0] = -1; /* keeps the sums */
    if (threadIdx.x == 0) {
        unsigned id;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
        span[2 * blockIdx.x] = t0, span[2 * blockIdx.x + 1] = t1;
        smid[blockIdx.x] = (int)id;
    }
}

template <int K> static void rate(int wgs, int bps, int nsm, const signed char *src) {
    const int threads = 128 * wgs, iters = 2000;
    CK(cudaFuncSetAttribute(rate_kernel<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, RSMEM));
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, rate_kernel<K>, threads, RSMEM));
    if (occ < bps) {
        printf("%-36s %d warpgroups a block, %d blocks an SM: does not fit (%d)\n", kname[K], wgs, bps, occ);
        return;
    }
    const int nb = nsm * bps;
    long long *span;
    int *smid;
    CK(cudaMalloc(&span, 16 * nb));
    CK(cudaMalloc(&smid, 4 * nb));
    rate_kernel<K><<<nb, threads, RSMEM>>>(span, smid, src, 50); /* warm-up */
    rate_kernel<K><<<nb, threads, RSMEM>>>(span, smid, src, iters);
    CK(cudaDeviceSynchronize());
    std::vector<long long> s(2 * nb);
    std::vector<int> id(nb);
    CK(cudaMemcpy(s.data(), span, 16 * nb, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(id.data(), smid, 4 * nb, cudaMemcpyDeviceToHost));
    std::vector<long long> lo(nsm, -1), hi(nsm, -1);
    std::vector<int> cnt(nsm, 0);
    for (int b = 0; b < nb; b++) {
        int m = id[b];
        if (lo[m] < 0 || s[2 * b] < lo[m]) lo[m] = s[2 * b];
        if (s[2 * b + 1] > hi[m]) hi[m] = s[2 * b + 1];
        cnt[m]++;
    }
    double sum = 0;
    int used = 0;
    for (int m = 0; m < nsm; m++)
        if (cnt[m]) sum += step_macs(K) * iters * wgs * cnt[m] / (double)(hi[m] - lo[m]), used++;
    printf("%-36s %d warpgroups a block, %d blocks an SM: %7.0f multiply-adds a cycle an SM\n", kname[K], wgs, bps,
           sum / used);
    CK(cudaFree(span));
    CK(cudaFree(smid));
}

template <int K> static void rates(int nsm, const signed char *src) {
    rate<K>(1, 1, nsm, src);
    rate<K>(1, 2, nsm, src);
    rate<K>(2, 1, nsm, src);
    rate<K>(2, 2, nsm, src);
}

int main() {
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
    int ok = 1;
    /* B canonical in both: 48 rows, 16-byte chunks 128 bytes apart along k, 8-row groups 256 apart */
    ok &= check("canonical", 0, 128, 256, 4096, 128, 256);
    ok &= check("overlapping: 8-byte pixels, even positions", 0, 16, 128, 4096, 128, 256);
    ok &= check("overlapping: 16-byte pixels", 16, 16, 128, 4096, 128, 256);
    ok &= check("overlapping, chunks across rows", 32, 208, 128, 4096, 128, 256);
    ok &= check("overlapping, 8-row groups 240 apart", 48, 16, 240, 4096, 128, 256);
    printf("layouts: %s\n", ok ? "all as described" : "SOME DIFFER");
    signed char *src;
    std::vector<signed char> h(RSMEM);
    for (int i = 0; i < RSMEM; i++) h[i] = (signed char)(rand() % 255 - 127);
    CK(cudaMalloc(&src, RSMEM));
    CK(cudaMemcpy(src, h.data(), RSMEM, cudaMemcpyHostToDevice));
    const int n = p.multiProcessorCount;
    rates<SS16>(n, src);
    rates<SS32>(n, src);
    rates<SS48>(n, src);
    rates<SS64>(n, src);
    rates<SS128>(n, src);
    rates<SS256>(n, src);
    rates<RS16>(n, src);
    rates<RS48>(n, src);
    rates<RS64>(n, src);
    rates<RS128>(n, src);
    rates<MIX1>(n, src);
    rates<MIX2>(n, src);
    rates<RS48D>(n, src);
    rates<MIXRS>(n, src);
    CK(cudaFree(src));
    return ok ? 0 : 1;
}
