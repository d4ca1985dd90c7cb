/*
 * What dense_tc.cu's and dense_i8.cu's wgmma GEMMs share of Hopper's (sm_90) machinery: the mbarriers and bulk tensor
 * copies (the tensor memory accelerator) that fill their stages, the driver's tensor-map encoder their launchers
 * describe the copies with, and the register list of a wgmma's 64 accumulators. CUDA sources only.
 */
#ifndef NC_HOPPER_CUH
#define NC_HOPPER_CUH

#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled */
#include <stdint.h>

__device__ __forceinline__ void nc_bar_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

/* Waits for the completion of the phase of parity `parity` of the mbarrier at bar (acquire). */
__device__ __forceinline__ void nc_bar_wait(uint32_t bar, int parity) {
    asm volatile("{\n\t.reg .pred done;\n"
                 "WAIT:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
                 "@!done bra WAIT;\n}" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}

/* This thread's arrival on the mbarrier at bar (release). */
__device__ __forceinline__ void nc_bar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

/* An arrival that also expects `bytes` more of asynchronous copies before the phase completes. */
__device__ __forceinline__ void nc_bar_arrive_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

/* The box of the 3-d tensor map at map whose corner is (x0, x1, x2) into shared memory at dst, complete_tx on bar. */
__device__ __forceinline__ void nc_tma3d(uint32_t dst, const void *map, int x0, int x1, int x2, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, "
                 "%4}], [%5];" ::"r"(dst),
                 "l"(map), "r"(x0), "r"(x1), "r"(x2), "r"(bar)
                 : "memory");
}

/* The driver's cuTensorMapEncodeTiled (through the runtime: nothing links libcuda), or NULL (dense_tc.cu). */
PFN_cuTensorMapEncodeTiled_v12000 nc_cuda_tma_encoder(void);

/* The shared-memory descriptor of a K-major wgmma operand at shared address a: 8-row groups 8 rows apart, rows of ROW
 * bytes (128 or 64) under the swizzle of that width. Start address, leading byte offset (unused with these swizzles:
 * 1), stride byte offset (8 rows), and the layout (1: 128-byte swizzle, 2: 64-byte). */
template <int ROW> __device__ __forceinline__ uint64_t nc_wgmma_desc(uint32_t a) {
    static_assert(ROW == 128 || ROW == 64, "rows of 128 or 64 bytes");
    return (uint64_t)((a & 0x3FFFF) >> 4) | (uint64_t)1 << 16 | (uint64_t)(8 * ROW >> 4) << 32 |
           (uint64_t)(ROW == 128 ? 1 : 2) << 62;
}

/* A wgmma's 64 accumulators a thread (an m64n128 tile of 32-bit sums): the register list of the instruction,
 * %0 .. %63, and the asm operands d[0] .. d[63] with constraint C ("+f" for fp32 sums, "+r" for int32). */
#define NC_WGMMA_D64_REGS                                                                                              \
    "{"                                                                                                                \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                           \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                                 \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                                 \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"                                   \
    "}"
#define NC_WGMMA_D64_OPS(C, d)                                                                                         \
    C(d[0]), C(d[1]), C(d[2]), C(d[3]), C(d[4]), C(d[5]), C(d[6]), C(d[7]), C(d[8]), C(d[9]), C(d[10]), C(d[11]),      \
        C(d[12]), C(d[13]), C(d[14]), C(d[15]), C(d[16]), C(d[17]), C(d[18]), C(d[19]), C(d[20]), C(d[21]), C(d[22]),  \
        C(d[23]), C(d[24]), C(d[25]), C(d[26]), C(d[27]), C(d[28]), C(d[29]), C(d[30]), C(d[31]), C(d[32]), C(d[33]),  \
        C(d[34]), C(d[35]), C(d[36]), C(d[37]), C(d[38]), C(d[39]), C(d[40]), C(d[41]), C(d[42]), C(d[43]), C(d[44]),  \
        C(d[45]), C(d[46]), C(d[47]), C(d[48]), C(d[49]), C(d[50]), C(d[51]), C(d[52]), C(d[53]), C(d[54]), C(d[55]),  \
        C(d[56]), C(d[57]), C(d[58]), C(d[59]), C(d[60]), C(d[61]), C(d[62]), C(d[63])

#endif
