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

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "wgmma_i8: %s: %s\n", #x, cudaGetErrorString(e_));                                         \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* A no-swizzle K-major operand at shared address a: LBO between 16-byte chunks along k, SBO between 8-row groups. */
__device__ __forceinline__ uint64_t desc(uint32_t a, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((a & 0x3FFFF) >> 4) | (uint64_t)((lbo >> 4) & 0x3FFF) << 16 |
           (uint64_t)((sbo >> 4) & 0x3FFF) << 32;
}
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

__device__ __forceinline__ void mma_ss_16(int (&d)[8], uint64_t da, uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n16k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, 1;"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7])
                 : "l"(da), "l"(db));
}
__device__ __forceinline__ void mma_rs_16(int (&d)[8], const uint32_t (&a)[4], uint64_t db) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n16k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, 1;"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

__device__ __forceinline__ void mma_ss_32(int (&d)[16], uint64_t da, uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
                 "%12, %13, %14, %15}, %16, %17, 1;"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
                   "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
                 : "l"(da), "l"(db));
}
__device__ __forceinline__ void mma_rs_32(int (&d)[16], const uint32_t (&a)[4], uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
                 "%12, %13, %14, %15}, {%16, %17, %18, %19}, %20, 1;"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
                   "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

__device__ __forceinline__ void mma_ss_48(int (&d)[24], uint64_t da, uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n48k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
                 "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23}, %24, %25, 1;"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
                   "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
                   "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]),
                   "+r"(d[23])
                 : "l"(da), "l"(db));
}
__device__ __forceinline__ void mma_rs_48(int (&d)[24], const uint32_t (&a)[4], uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n48k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
                 "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23}, {%24, %25, %26, %27}, %28, 1;"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
                   "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
                   "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]),
                   "+r"(d[23])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

__device__ __forceinline__ void mma_ss_64(int (&d)[32], uint64_t da, uint64_t db) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, "
        "%14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, 1;"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]),
          "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]),
          "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]),
          "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
        : "l"(da), "l"(db));
}
__device__ __forceinline__ void mma_rs_64(int (&d)[32], const uint32_t (&a)[4], uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
                 "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                 "{%32, %33, %34, %35}, %36, 1;"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
                   "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
                   "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]),
                   "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]),
                   "+r"(d[30]), "+r"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

__device__ __forceinline__ void mma_ss_128(int (&d)[64], uint64_t da, uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
                 "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, "
                 "%52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, 1;"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
                   "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
                   "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]),
                   "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]),
                   "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]),
                   "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]),
                   "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]),
                   "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]),
                   "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
                 : "l"(da), "l"(db));
}
__device__ __forceinline__ void mma_rs_128(int (&d)[64], const uint32_t (&a)[4], uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
                 "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, "
                 "%52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, 1;"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
                   "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
                   "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]),
                   "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]),
                   "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]),
                   "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]),
                   "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]),
                   "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]),
                   "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

__device__ __forceinline__ void mma_ss_256(int (&d)[128], uint64_t da, uint64_t db) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
        "%13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, "
        "%35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, "
        "%57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, "
        "%79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, "
        "%100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, "
        "%118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, 1;"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]),
          "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]),
          "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]),
          "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]),
          "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]),
          "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]),
          "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]),
          "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]), "+r"(d[64]),
          "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]), "+r"(d[72]),
          "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]), "+r"(d[80]),
          "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]),
          "+r"(d[89]), "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]), "+r"(d[96]),
          "+r"(d[97]), "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]), "+r"(d[104]),
          "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]),
          "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]),
          "+r"(d[119]), "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]),
          "+r"(d[126]), "+r"(d[127])
        : "l"(da), "l"(db));
}
__device__ __forceinline__ void mma_rs_256(int (&d)[128], const uint32_t (&a)[4], uint64_t db) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
        "%13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, "
        "%35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, "
        "%57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, "
        "%79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, "
        "%100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, "
        "%118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, 1;"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]),
          "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]),
          "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]),
          "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]),
          "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]),
          "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]),
          "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]),
          "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]), "+r"(d[64]),
          "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]), "+r"(d[72]),
          "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]), "+r"(d[80]),
          "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]),
          "+r"(d[89]), "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]), "+r"(d[96]),
          "+r"(d[97]), "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]), "+r"(d[104]),
          "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]),
          "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]),
          "+r"(d[119]), "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]),
          "+r"(d[126]), "+r"(d[127])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
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
    mma_ss_48(d, desc(s0 + ao, la, sa), desc(s0 + bo, lb, sb));
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
    const uint64_t db = desc(bw, 128, 256);
    int d16[8] = {}, d32[16] = {}, d48[24] = {}, d64[32] = {}, d128[64] = {}, d256[128] = {};
    long long t0 = clock64();
    for (int it = 0; it < iters; it++) {
        fence();
        if (K == SS16) {
            hold(d16);
            for (int s = 0; s < 16; s++) mma_ss_16(d16, desc(a0 + 512 * s, 128, 256), db);
        }
        if (K == SS32) {
            hold(d32);
            for (int s = 0; s < 16; s++) mma_ss_32(d32, desc(a0 + 512 * s, 128, 256), db);
        }
        if (K == SS48) {
            hold(d48);
            for (int s = 0; s < 16; s++) mma_ss_48(d48, desc(a0 + 512 * s, 128, 256), db);
        }
        if (K == SS64) {
            hold(d64);
            for (int s = 0; s < 16; s++) mma_ss_64(d64, desc(a0 + 512 * s, 128, 256), db);
        }
        if (K == SS128) {
            hold(d128);
            for (int s = 0; s < 16; s++) mma_ss_128(d128, desc(a0 + 512 * s, 128, 256), db);
        }
        if (K == SS256) {
            hold(d256);
            for (int s = 0; s < 16; s++) mma_ss_256(d256, desc(a0 + 512 * s, 128, 256), db);
        }
        if (K == RS16) {
            hold(d16);
            for (int s = 0; s < 16; s++) mma_rs_16(d16, ar, db);
        }
        if (K == RS48) {
            hold(d48);
            for (int s = 0; s < 16; s++) mma_rs_48(d48, ar, db);
        }
        if (K == RS64) {
            hold(d64);
            for (int s = 0; s < 16; s++) mma_rs_64(d64, ar, db);
        }
        if (K == RS128) {
            hold(d128);
            for (int s = 0; s < 16; s++) mma_rs_128(d128, ar, db);
        }
        if (K == MIX1) {
            hold(d48), hold(d32), hold(d16);
            for (int s = 0; s < 8; s++) { /* x's slices 0, 1, 2 of k step s: each 64 positions, overlapping rows */
                mma_ss_48(d48, desc(a0 + 32 * s, 16, 128), db);
                mma_ss_32(d32, desc(a0 + 2048 + 32 * s, 16, 128), db);
                mma_ss_16(d16, desc(a0 + 4096 + 32 * s, 16, 128), db);
            }
        }
        if (K == MIX2) {
            hold(d48), hold(d16);
            for (int s = 0; s < 13; s++) mma_ss_48(d48, desc(a0 + 32 * s, 16, 128), db);
            for (int s = 0; s < 8; s++) mma_ss_16(d16, desc(a0 + 4096 + 32 * s, 16, 128), db);
        }
        if (K == RS48D) {
            hold(d48);
            for (int s = 0; s < 16; s++) mma_rs_48(d48, ad[s], db);
        }
        if (K == MIXRS) {
            hold(d48), hold(d32), hold(d16);
            for (int s = 0; s < 7; s++) {
                mma_rs_48(d48, ad[3 * s], db);
                mma_rs_32(d32, ad[3 * s + 1], db);
                mma_rs_16(d16, ad[3 * s + 2], db);
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
