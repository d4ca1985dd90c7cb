/*
 * The int8 warpgroup MMAs (wgmma m64nNk32, int32 sums, sm_90a) that bench/ab's int8 benchmarks share (wgmma_i8.cu and
 * conv_i8_proto.cu), and the no-swizzle K-major descriptor they address shared memory with. CUDA sources only, built
 * for sm_90a: elsewhere (the host pass, another architecture) the MMAs only touch d[0], and so do they where
 * WG8_ABLATE is defined before this is included (an ablation: the kernel's time without its MMAs).
 *
 *   wg8_ssN(d, da, db)       d += a b, a (s8) and b (s8) from shared memory through their descriptors
 *   wg8_rsN<U>(d, a, db)     the same with a from registers, s8 (or u8 where U)
 * N = 16, 32, 48, 64, 128, 256 (d: N / 2 registers a thread). a from registers, thread (warp w, lane 4 g + t): a[0]
 * row 16 w + g, k 4 t..4 t + 3; a[1] row + 8; a[2], a[3] the same at k + 16. d[4 j + e]: row 16 w + g + 8 (e >> 1),
 * column 8 j + 2 t + (e & 1).
 */
#ifndef NC_AB_WGMMA_S8_CUH
#define NC_AB_WGMMA_S8_CUH

#include <stdint.h>

/* A no-swizzle K-major operand at shared address a: 16-byte chunks lbo apart along k, 8-row groups sbo apart. */
__device__ __forceinline__ uint64_t wg8_desc(uint32_t a, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((a & 0x3FFFF) >> 4) | (uint64_t)((lbo >> 4) & 0x3FFF) << 16 |
           (uint64_t)((sbo >> 4) & 0x3FFF) << 32;
}

/* The register lists of R accumulators and their operands, d[b] .. d[b + R - 1]. */
#define WG8_R8 "{%0, %1, %2, %3, %4, %5, %6, %7}"
#define WG8_R16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define WG8_R24                                                                                                        \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23}"
#define WG8_R32                                                                                                        \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "  \
    "%24, %25, %26, %27, %28, %29, %30, %31}"
#define WG8_R64                                                                                                        \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "  \
    "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "   \
    "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define WG8_R128                                                                                                       \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "  \
    "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "   \
    "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, "   \
    "%68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, "   \
    "%90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, "   \
    "%110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define WG8_O8(d, b)                                                                                                   \
    "+r"(d[(b) + 0]), "+r"(d[(b) + 1]), "+r"(d[(b) + 2]), "+r"(d[(b) + 3]), "+r"(d[(b) + 4]), "+r"(d[(b) + 5]),        \
        "+r"(d[(b) + 6]), "+r"(d[(b) + 7])
#define WG8_O16(d, b) WG8_O8(d, b), WG8_O8(d, (b) + 8)
#define WG8_O24(d, b) WG8_O16(d, b), WG8_O8(d, (b) + 16)
#define WG8_O32(d, b) WG8_O16(d, b), WG8_O16(d, (b) + 16)
#define WG8_O64(d, b) WG8_O32(d, b), WG8_O32(d, (b) + 32)
#define WG8_O128(d, b) WG8_O64(d, b), WG8_O64(d, (b) + 64)

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(WG8_ABLATE)
#define WG8_DO(d, v, ...) asm volatile(__VA_ARGS__)
#else
#define WG8_DO(d, v, ...) (d[0] += (int)(v))
#endif
#define WG8_INSN(N, AT) "wgmma.mma_async.sync.aligned.m64n" #N "k32.s32." AT ".s8 "

/* wg8_ssN and wg8_rsN for N, from the register list R of N / 2 registers, its operands O, and the operand numbers
 * that follow them: SS's (two descriptors, scale-d) and RS's (a's four registers, b's descriptor, scale-d). */
#define WG8_DEFINE(N, R, O, SS, RS)                                                                                    \
    __device__ __forceinline__ void wg8_ss##N(int(&d)[N / 2], uint64_t da, uint64_t db) {                              \
        WG8_DO(d, da ^ db, WG8_INSN(N, "s8") R ", " SS ";" : O(d, 0) : "l"(da), "l"(db));                              \
    }                                                                                                                  \
    template <bool U = false>                                                                                          \
    __device__ __forceinline__ void wg8_rs##N(int(&d)[N / 2], const uint32_t(&a)[4], uint64_t db) {                    \
        if (U)                                                                                                         \
            WG8_DO(d, a[0] ^ a[1] ^ a[2] ^ a[3] ^ db, WG8_INSN(N, "u8") R ", " RS ";"                                  \
                   : O(d, 0)                                                                                           \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));                                             \
        else                                                                                                           \
            WG8_DO(d, a[0] ^ a[1] ^ a[2] ^ a[3] ^ db, WG8_INSN(N, "s8") R ", " RS ";"                                  \
                   : O(d, 0)                                                                                           \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));                                             \
    }
WG8_DEFINE(16, WG8_R8, WG8_O8, "%8, %9, 1", "{%8, %9, %10, %11}, %12, 1")
WG8_DEFINE(32, WG8_R16, WG8_O16, "%16, %17, 1", "{%16, %17, %18, %19}, %20, 1")
WG8_DEFINE(48, WG8_R24, WG8_O24, "%24, %25, 1", "{%24, %25, %26, %27}, %28, 1")
WG8_DEFINE(64, WG8_R32, WG8_O32, "%32, %33, 1", "{%32, %33, %34, %35}, %36, 1")
WG8_DEFINE(128, WG8_R64, WG8_O64, "%64, %65, 1", "{%64, %65, %66, %67}, %68, 1")
WG8_DEFINE(256, WG8_R128, WG8_O128, "%128, %129, 1", "{%128, %129, %130, %131}, %132, 1")

#endif
