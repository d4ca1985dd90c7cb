/*
 * Dense layers on the tensor cores: y = x w^T + b as a GEMM on mma.sync, or on wgmma where this file is built for
 * sm_90a and the device is sm_90 (dense_wg_kernel, and where B > 128 the warp-specialized dense_ws_kernel, below;
 * 3xtf32 only where that takes fewer waves), for the cuda backend's tensor-core precisions (the default, exact fp32,
 * is layers.cu's SIMT SGEMM).
 *
 *   tf32    m16n8k8 (wgmma: m64n128k8), both operands rounded to TF32 (10-bit mantissa): reduced precision.
 *   3xtf32  each operand split into a TF32 high part and the TF32 rounding of its remainder, three MMAs
 *           (lo x hi + hi x lo + hi x hi; lo x lo is below fp32's rounding): near-exact, not bitwise fp32.
 *   fp16    m16n8k16 (wgmma: m64n128k16), operands rounded to fp16 (10-bit mantissa, |v| <= 65504: larger is inf),
 *           fp32 sums.
 *   bf16    m16n8k16 (wgmma: m64n128k16), operands rounded to bf16 (7-bit mantissa, fp32's range), fp32 sums.
 *           nanoconv eval --model M --backend cuda --precision tf32 (3xtf32, fp16, bf16)
 * Per product the operand rounding costs at most 2u |x w| (u = 2^-11 for tf32 and fp16, 2^-8 for bf16), so
 * |y - exact| <= ~2u sum_k |x_k w_k| plus fp32's summation; tests/gpu/test_dense_tc.c checks these bounds.
 *
 * GEMM rows are images (x is (B, IN), row-major: PTX's "row" A), columns are outputs (w is (OUT, IN): B[k][n] =
 * w[n][k], PTX's "col" B).
 *
 * Why this shape (H100, the 2017 dense layer: B 10000, IN 7200, OUT 500). mma.sync on Hopper is limited by
 * shared memory, not by the tensor cores: an SM reads 128 bytes a clock, and a warp tile of Mw x Nw reads
 * (Mw + Nw) bytes an element of k for Mw Nw k multiply-adds. So the operands sit in shared memory already in the
 * MMA's format, and nothing but fragment loads and MMAs runs in the inner loop:
 *  - Weights are converted once, by nc_cuda_dense_tc_prepare, into the MMA's format (tf32 bit patterns, fp16 or
 *    bf16), each row zero-padded to a multiple of the 32-wide k slice; the kernel copies them with cp.async, 16
 *    bytes at a time, no bounds on k. nc_cuda_dense_tc_forward prepares a temporary copy on every call (~10 us
 *    for the 2017 layer); a backend that keeps the prepared weights calls nc_cuda_dense_tc_forward_prepared.
 *  - x is loaded into registers one slice ahead (ld.global, 32 floats a thread; tf32 in two halves), rounded, and
 *    stored into the next stage after the current slice's MMAs: fp16/bf16 then halve shared-memory writes and
 *    fragment reads, and tf32 drops its rounding from the inner loop. The load's latency hides behind MMAs.
 *  - 64 x 64 warp tiles, 2 x 2 warps a 128 x 128 block tile, 128 accumulators a thread; 32 w fragment registers,
 *    8 of x, 32 (tf32: 16) of staged x: 240-251 of 255 registers, no spills, so two blocks (8 warps) share an SM,
 *    and the 2017 layer's 316 tiles (B 10000) run on 264 slots of 132 SMs, as 1264 blocks with k split in 4.
 *  - k advances in slices of 32 through 3 shared-memory stages: the w copy runs two slices ahead, x's one.
 *  - A thread reads its fragments as 16-byte loads: the k order inside a slice is free (a dot product may be summed
 *    in any order, provided x and w agree), so lane (g, t) takes bytes 16 t .. 16 t + 15 of its w rows (fp16/bf16:
 *    halves 8t .. 8t+7, two k16 steps) or 32 t + 16 h .. (tf32, h = 0, 1: floats 8t + 4h .., two k8 steps each),
 *    and x is staged as pairs of rows (g, g + 8) interleaved, so that one 16-byte load is one A fragment, in the
 *    registers the MMA takes (see dtc_xchunk and dtc_read). w rows are 64 bytes (fp16/bf16), or 128 + 16 of padding
 *    (tf32), and x pairs 128 or 256 + 16, so the 8 lanes of a quarter warp (g in 0..1, t in 0..3) cover the 32 banks
 *    exactly once: no conflicts.
 *  - A tile's k is split among S = 2, 4 or 8 blocks of one cluster (sm_90) where the layer has at least 30 slices of
 *    32 a block: each sums its share, and the cluster adds the S partial tiles in a fixed order through distributed
 *    shared memory (dtc_reduce_store), with no partial sums in global memory and no second kernel. A 128 x 128 tile
 *    runs K / 32 slices in turn, so without it a small batch ran a few long blocks on a GPU of 264 slots (the 2017
 *    layer, B 100: 4 blocks of 225 slices, 0.20 ms at fp16; split in 4, 0.061), and a large one a partial wave as
 *    long as a whole one (the network's pieces of 1280 and 8720 images: 0.21 and 0.54 ms; split, 0.08 and 0.36).
 *  - Every precision sums each output's products in the same k order whatever B is, and S depends on IN and the
 *    device only, so a row of y is the same bit for bit whether it is computed in a batch of 10 or 10000 (the pieces
 *    of gpu_plan.cu rely on it).
 * 3xtf32 does 3 MMAs for each fragment read and needs both parts of each operand; on mma.sync it keeps the previous
 * design (x fp32 staged by cp.async and split as the fragments are read, 64 x 32 warp tiles, 2 x 4 warps;
 * dtc_split_kernel), with k split among a cluster's blocks as the others'. Its weights are prepared as two tf32
 * matrices, the high parts and the low ones, so that no kernel splits w.
 * x loads are 16 bytes where x and IN allow it, else 4; rows past B and k past IN are zeros.
 */
#include <cooperative_groups.h>
#include <cuda.h> /* CUtensorMap */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/cp_async.cuh"
#include "cuda/hopper.cuh"
#include "cuda/cuda_check.h"
#include "cuda/cuda_layers.h"

#define DTC_BM 128 /* block tile: images */
#define DTC_BN 128 /* block tile: outputs */
#define DTC_BK 32  /* k slice of one stage */
#define DTC_STAGES 3
#define DTC_THREADS 128                                                     /* 2 x 2 warps of 64 x 64 */
#define DTC_KP(IN) (((IN) + DTC_BK - 1) / DTC_BK * DTC_BK)                  /* a prepared weight row, in elements */
#define DTC_ES(P) ((P) == NC_PRECISION_TF32 ? 4 : 2)                        /* bytes an element in shared memory */
#define DTC_RS(P) ((P) == NC_PRECISION_TF32 ? 4 * DTC_BK + 16 : 2 * DTC_BK) /* bytes a staged w row */
#define DTC_XRS(P) (2 * DTC_BK * DTC_ES(P) + 16)         /* bytes a staged pair of x rows: tf32 272, fp16/bf16 144 */
#define DTC_XTILE(P) (DTC_BM / 2 * DTC_XRS(P))           /* bytes of a stage's x tile, before its w tile */
#define DTC_READS(P) (DTC_BK * DTC_ES(P) / 64)           /* 16-byte reads a lane makes of a staged row: 2, 1 */
#define DTC_STAGE(P) (DTC_XTILE(P) + DTC_BN * DTC_RS(P)) /* bytes a stage: the x tile, then the w tile */
#define DTC_SMEM(P) ((size_t)DTC_STAGES * DTC_STAGE(P))  /* tf32 107.5 KB, fp16/bf16 52.2 KB */
/* k split among a cluster's blocks (sm_90): at most DTC_MAX_KSPLITS, each at least DTC_KSPLIT_MIN slices (H100,
 * 2026-11-25, bench/ab/dense_one: on the 2017 layer 8 blocks of 28 slices took up to 9% longer than 4 of 56 on the
 * network's large piece of 8720 rows; docs/PERFORMANCE-LOG.md). */
#define DTC_MAX_KSPLITS 8
#define DTC_KSPLIT_MIN 30
/* 3xtf32 at most 2: its kernels fit one block an SM, and a cluster of 4 then leaves idle the SMs of a GPC past a
 * multiple of 4 (H100, 2026-11-26, dense_one on the 2017 layer: split in 2, 0.83 ms on the piece of 8720 on wgmma
 * against 0.86 split in 4, 1.27 against 1.30 on mma.sync; 0.171 against 0.183 on the piece of 1280). */
#define DTC_MAX_KSPLITS_3X 2

/* Round to TF32, to nearest even. sm_90's cvt.rn is one instruction (F2FP). */
__device__ __forceinline__ uint32_t dtc_tf32(float v) {
    uint32_t r;
    asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

/* 3xtf32's two TF32 parts of v: the high part rounds v (returned), the low one (*lo) rounds what it leaves. */
__device__ __forceinline__ uint32_t dtc_split(float v, uint32_t *lo) {
    const uint32_t hi = dtc_tf32(v);
    *lo = dtc_tf32(v - __uint_as_float(hi));
    return hi;
}

/* dtc_split of 4 values, as fp32 bit patterns. */
__device__ __forceinline__ void dtc_split4(uint32_t (&hi)[4], uint32_t (&lo)[4], const uint32_t (&v)[4]) {
#pragma unroll
    for (int c = 0; c < 4; c++) hi[c] = dtc_split(__uint_as_float(v[c]), &lo[c]);
}

/* Two values as one f16x2 / bf16x2 register, lo in the low half (the lower k index, as the fragments want). */
template <int P> __device__ __forceinline__ uint32_t dtc_pack(float lo, float hi) {
    if constexpr (P == NC_PRECISION_FP16) {
        const __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<const uint32_t *>(&h);
    } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<const uint32_t *>(&h);
    }
}

/* 16-byte shared-memory accesses as single instructions. volatile and "memory" keep them on their side of the
 * __syncthreads that orders a stage's writes and reads. */
__device__ __forceinline__ void dtc_lds4(uint32_t (&r)[4], const void *p) {
    asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"((uint32_t)__cvta_generic_to_shared(p))
                 : "memory");
}

__device__ __forceinline__ void dtc_sts4(void *p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
    asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};" ::"r"((uint32_t)__cvta_generic_to_shared(p)), "r"(a), "r"(b),
                 "r"(c), "r"(d)
                 : "memory");
}

/* d += a b on one m16n8k8 TF32 tile (fragments as PTX ISA's m16n8k8 .tf32 layout). */
__device__ __forceinline__ void dtc_mma8(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* d += a b on one MMA tile of precision P: m16n8k8 for tf32, m16n8k16 for fp16 and bf16, fp32 accumulators. */
template <int P>
__device__ __forceinline__ void dtc_mma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                        uint32_t b1) {
    if constexpr (P == NC_PRECISION_TF32)
        dtc_mma8(d, a0, a1, a2, a3, b0, b1);
    else if constexpr (P == NC_PRECISION_FP16)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* The byte offset of 16-byte chunk c in a staged pair of x rows. Chunk c holds the 4-byte units (a tf32, or two
 * fp16/bf16 of consecutive k) 2c and 2c + 1 of the pair's two rows, interleaved: (row g unit 2c, row g+8 unit 2c,
 * row g unit 2c+1, row g+8 unit 2c+1), an MMA's A fragment as it is loaded. Lane (g, t) of a quarter warp reads
 * chunks 4t + 2h + s (tf32) or 2t + s (fp16/bf16); tf32 swaps chunks 4t.. with 4t+2.. where t >= 2, so that its
 * four t take four distinct 16-byte bank groups, and a pair's 16 bytes of padding give g = 1 the other four. */
template <int P> __device__ __forceinline__ int dtc_xchunk(int c) {
    if constexpr (P == NC_PRECISION_TF32)
        return 16 * (c ^ ((c >> 2) & 2));
    else
        return 16 * c;
}

/*
 * Read h of a staged k slice through a warp's 64 x 64 tile: xs is the warp's 32 pairs of x rows (DTC_XRS(P) bytes
 * apart; m16 tile i's rows g and g + 8 are pair 8i + g), ws its 64 w rows (DTC_RS(P) bytes apart). A slice is
 * DTC_READS(P) 16-byte reads of each w row; lane (g, t) takes bytes 16 (READS t + h) .. + 15 of its w rows, and
 * the chunks 2 (READS t + h) + s, s = 0, 1, of its x pairs (dtc_xchunk). A w read holds 4 registers: two MMA k
 * steps, step s taking registers 2s and 2s + 1; an x chunk is step s's A fragment whole. That maps logical k to
 * the same units of x and w, as the PTX fragment layouts show:
 *   tf32 m16n8k8:   A (a0, a1, a2, a3) = (row g k t, row g+8 k t, row g k t+4, row g+8 k t+4), B (k t, k t+4);
 *                   logical k t is unit 2 (READS t + h) + 2s of the rows, k t + 4 the unit after it.
 *   fp16/bf16 m16n8k16: A = (g k 2t.., g+8 k 2t.., g k 2t+8.., g+8 k 2t+8..), B (k 2t.., k 2t+8..); logical k
 *                   2t, 2t+1 are unit 4t + 2s of the rows, k 2t+8, 2t+9 the unit after it.
 * Over the lanes t, the reads h and the steps s every k of the slice is taken once. The w fragments of a read
 * are loaded once (32 registers), then each m16 tile's x fragments (4 a step) meet all of them. Until 2026-11-26
 * x rows were staged as w's are, and a fragment took a 16-byte read of row g and one of row g + 8: ptxas then
 * gathered each A fragment's 4 registers with moves (3.6 a tf32 MMA; 6.9 instructions an MMA in all).
 */
template <int P>
__device__ __forceinline__ void dtc_read(float (&acc)[4][8][4], const unsigned char *xs, const unsigned char *ws, int g,
                                         int t, int h) {
    constexpr int RS = DTC_RS(P), XRS = DTC_XRS(P);
    const int u = DTC_READS(P) * t + h;
    uint32_t b[8][4];
#pragma unroll
    for (int j = 0; j < 8; j++) dtc_lds4(b[j], ws + (8 * j + g) * RS + 16 * u);
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int s = 0; s < 2; s++) {
            uint32_t a[4];
            dtc_lds4(a, xs + (8 * i + g) * XRS + dtc_xchunk<P>(2 * u + s));
#pragma unroll
            for (int j = 0; j < 8; j++) dtc_mma<P>(acc[i][j], a[0], a[1], a[2], a[3], b[j][2 * s], b[j][2 * s + 1]);
        }
}

/* Part h (of PARTS) of x's slice k0 .. k0+31 of block rows r0 .. r0+127 into registers: thread tid takes floats
 * 8u + 8h / PARTS .. (u = tid % 4, 8 / PARTS of them) of 4 rows (a warp reads 8 whole 128-byte row segments over
 * the parts). PAIRS (dense_tc_kernel): both rows of the x pairs p = tid / 4 and tid / 4 + 32 (pair p: rows
 * 16 (p / 8) + p % 8 and 8 more), xr[2m + e] of pair m's row e; else (dense_wg_kernel) rows tid / 4 + 32 m.
 * Zeros past B and IN. VEC 4: x and IN are 16-byte aligned (a 4-float chunk is wholly inside k or past it); VEC 1:
 * any alignment. dense_tc_kernel's tf32 loads a slice in 2 parts, one before each read of dtc_read, to keep 16
 * registers of x in flight instead of 32 (with 32, ptxas spills). */
template <int VEC, int PARTS, bool PAIRS>
__device__ __forceinline__ void dtc_load_x(float (&xr)[4][8 / PARTS], const float *__restrict__ x, int B, int IN,
                                           int r0, int k0, int h) {
    constexpr int N = 8 / PARTS;
    const int tid = (int)threadIdx.x, k = k0 + 8 * (tid & 3) + N * h;
#pragma unroll
    for (int m = 0; m < 4; m++) {
        const int p = (tid >> 2) + 32 * (m >> 1);
        const int r = PAIRS ? r0 + 16 * (p >> 3) + (p & 7) + 8 * (m & 1) : r0 + (tid >> 2) + 32 * m;
        const float *row = x + (size_t)(r < B ? r : 0) * IN;
        if constexpr (VEC == 4) {
#pragma unroll
            for (int q = 0; q < N / 4; q++) {
                float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (r < B && k + 4 * q < IN) v = __ldg(reinterpret_cast<const float4 *>(row + k + 4 * q));
                xr[m][4 * q] = v.x, xr[m][4 * q + 1] = v.y, xr[m][4 * q + 2] = v.z, xr[m][4 * q + 3] = v.w;
            }
        } else {
#pragma unroll
            for (int e = 0; e < N; e++) xr[m][e] = r < B && k + e < IN ? __ldg(row + k + e) : 0.0f;
        }
    }
}

/* The registers of dtc_load_x's part h, rounded to P, into a stage's x tile (xs, pairs of rows DTC_XRS(P) bytes
 * apart, chunks as dtc_xchunk places them): 2 chunks a pair (tf32: units 8u + 4h .. of 2 parts; fp16/bf16: units
 * 4u .. of 1). A quarter warp writes 2 pairs' chunks, 128 distinct bytes modulo 128 (as dtc_read reads them). */
template <int P>
__device__ __forceinline__ void dtc_store_x(unsigned char *xs, const float (&xr)[4][8 / DTC_READS(P)], int h) {
    const int tid = (int)threadIdx.x, u = tid & 3;
#pragma unroll
    for (int m = 0; m < 2; m++) {
        unsigned char *p = xs + ((tid >> 2) + 32 * m) * DTC_XRS(P);
        const float(&lo)[8 / DTC_READS(P)] = xr[2 * m], (&hi)[8 / DTC_READS(P)] = xr[2 * m + 1];
#pragma unroll
        for (int q = 0; q < 2; q++) {
            if constexpr (P == NC_PRECISION_TF32)
                dtc_sts4(p + dtc_xchunk<P>(4 * u + 2 * h + q), dtc_tf32(lo[2 * q]), dtc_tf32(hi[2 * q]),
                         dtc_tf32(lo[2 * q + 1]), dtc_tf32(hi[2 * q + 1]));
            else
                dtc_sts4(p + dtc_xchunk<P>(2 * u + q), dtc_pack<P>(lo[4 * q], lo[4 * q + 1]),
                         dtc_pack<P>(hi[4 * q], hi[4 * q + 1]), dtc_pack<P>(lo[4 * q + 2], lo[4 * q + 3]),
                         dtc_pack<P>(hi[4 * q + 2], hi[4 * q + 3]));
        }
    }
}

/* Prepared w's slice k0 .. k0+31 of rows c0 .. c0+127 (rows KP elements apart) into a stage's w tile, 16 bytes a
 * cp.async; rows past OUT copy 0 bytes and zero-fill. Consecutive threads take consecutive pieces of a row. */
template <int P>
__device__ __forceinline__ void dtc_load_w(unsigned char *ws, const unsigned char *wp, int OUT, int KP, int c0,
                                           int k0) {
    constexpr int PER_ROW = DTC_BK * DTC_ES(P) / 16; /* 16-byte pieces a row: tf32 8, fp16/bf16 4 */
#pragma unroll
    for (int i = 0; i < PER_ROW; i++) {
        const int idx = (int)threadIdx.x + DTC_THREADS * i, r = idx / PER_ROW, c = idx % PER_ROW;
        const int ok = c0 + r < OUT;
        const unsigned char *src = ok ? wp + ((size_t)(c0 + r) * KP + k0) * DTC_ES(P) + 16 * c : wp;
        nc_cp_async16(ws + r * DTC_RS(P) + 16 * c, src, ok ? 16 : 0);
    }
}

/* acc[i][j] plus bias into y: rows r0 + RS i + g (+8 for e >= 2), columns c0 + 8j + 2t (+1 for odd e); an mma.sync
 * warp's 64 x 64 at (r0, c0) is RS 16, a wgmma warp's rows of two m64 tiles RS 64. Pairs go out as float2 where OUT is
 * even (the pair is then 8-byte aligned): each row's 32 bytes in one store, not two halves. */
template <int NI, int NJ, int RS>
__device__ __forceinline__ void dtc_store_y(float *__restrict__ y, const float *__restrict__ b,
                                            const float (&acc)[NI][NJ][4], int B, int OUT, int r0, int c0, int g,
                                            int t) {
    const int pairs = (OUT & 1) == 0 && ((uintptr_t)y & 7) == 0;
#pragma unroll
    for (int i = 0; i < NI; i++)
#pragma unroll
        for (int j = 0; j < NJ; j++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int r = r0 + i * RS + g + 8 * h, c = c0 + j * 8 + 2 * t;
                if (r >= B || c >= OUT) continue;
                float *dst = y + (size_t)r * OUT + c;
                const float v0 = acc[i][j][2 * h] + (b ? b[c] : 0.0f);
                if (c + 1 < OUT) {
                    const float v1 = acc[i][j][2 * h + 1] + (b ? b[c + 1] : 0.0f);
                    if (pairs)
                        *(float2 *)dst = make_float2(v0, v1);
                    else
                        dst[0] = v0, dst[1] = v1;
                } else {
                    dst[0] = v0;
                }
            }
}

/* The split of k (S > 1, sm_90): the S blocks of a cluster (grid z) each summed their share of the slices for the
 * same tile of 128 rows by BN columns. Each block writes its sums into its own shared memory (dtc_red_put, once the
 * stages are done with: 128 rows of BN + 8 floats, a quarter warp's float2 pairs on distinct banks), and after the
 * cluster's barrier block s adds up rows s 128 / S .. of all S tiles through distributed shared memory, always in
 * the order 0, 1, .., S - 1, then the bias, and stores them (dtc_red_sum; 16 bytes where y and OUT allow). The second
 * barrier keeps every block's shared memory alive until the others have read it. */
#define DTC_RED_SMEM_BN(BN) ((size_t)DTC_BM * ((BN) + 8) * sizeof(float)) /* BN 128: 69.6 KB, 256: 135.2 KB */

/* A thread's sums into red: acc in dtc_store_y's layout, the warp's rows wm + RS i (NI of 16) by 8 NJ columns from
 * wn. */
template <int NI, int NJ, int RS, int BN>
__device__ __forceinline__ void dtc_red_put(float *red, const float (&acc)[NI][NJ][4], int wm, int wn, int g, int t) {
#pragma unroll
    for (int i = 0; i < NI; i++)
#pragma unroll
        for (int j = 0; j < NJ; j++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                *reinterpret_cast<float2 *>(red + (wm + RS * i + g + 8 * h) * (BN + 8) + wn + 8 * j + 2 * t) =
                    make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
}

/* Every thread of every block of the cluster, once each has put its sums into red (dtc_red_put). */
template <int BN>
__device__ __forceinline__ void dtc_red_sum(float *__restrict__ y, const float *__restrict__ b, float *red, int B,
                                            int OUT, int row0, int col0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    const int S = (int)cluster.num_blocks(), s = (int)cluster.block_rank(), R = DTC_BM / S;
    const int quads = (OUT & 3) == 0 && ((uintptr_t)y & 15) == 0;
    for (int e = (int)threadIdx.x; e < R * BN / 4; e += (int)blockDim.x) {
        const int r = s * R + e / (BN / 4), c = 4 * (e % (BN / 4)), off = r * (BN + 8) + c;
        float4 v = *reinterpret_cast<const float4 *>(cluster.map_shared_rank(red, 0) + off);
        for (int q = 1; q < S; q++) {
            const float4 u = *reinterpret_cast<const float4 *>(cluster.map_shared_rank(red, q) + off);
            v.x += u.x, v.y += u.y, v.z += u.z, v.w += u.w;
        }
        const int yr = row0 + r, yc = col0 + c;
        if (yr >= B || yc >= OUT) continue;
        float o[4] = {v.x, v.y, v.z, v.w};
        float *dst = y + (size_t)yr * OUT + yc;
        if (quads) { /* yc + 3 < OUT: OUT and yc are multiples of 4 */
#pragma unroll
            for (int k = 0; k < 4; k++) o[k] += b ? b[yc + k] : 0.0f;
            *reinterpret_cast<float4 *>(dst) = make_float4(o[0], o[1], o[2], o[3]);
        } else {
#pragma unroll
            for (int k = 0; k < 4; k++)
                if (yc + k < OUT) dst[k] = o[k] + (b ? b[yc + k] : 0.0f);
        }
    }
    cluster.sync();
#else
    __trap(); /* the launcher splits k only on sm_90 and later */
#endif
}

/* Both, for a 128 x 128 tile. */
template <int NI, int NJ, int RS>
__device__ __forceinline__ void dtc_reduce_store(float *__restrict__ y, const float *__restrict__ b,
                                                 const float (&acc)[NI][NJ][4], float *red, int B, int OUT, int row0,
                                                 int col0, int wm, int wn, int g, int t) {
    dtc_red_put<NI, NJ, RS, DTC_BN>(red, acc, wm, wn, g, t);
    dtc_red_sum<DTC_BN>(y, b, red, B, OUT, row0, col0);
}

/* acc = 0, a thread's accumulators (unrolled: every index constant, so that they stay in registers). */
template <int NI, int NJ> __device__ __forceinline__ void dtc_zero(float (&acc)[NI][NJ][4]) {
#pragma unroll
    for (int i = 0; i < NI; i++)
#pragma unroll
        for (int j = 0; j < NJ; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;
}

/* The k slices of 32 this block sums: grid z splits the T = DTC_KP(IN) / 32 among S blocks, block z taking
 * slices z T / S .. (z + 1) T / S - 1. Returns their count; *kb is the first one's k. */
__device__ __forceinline__ int dtc_block_slices(int IN, int *kb) {
    const int all = DTC_KP(IN) / DTC_BK, S = (int)gridDim.z, z = (int)blockIdx.z;
    const int first = (int)((long)all * z / S);
    *kb = first * DTC_BK;
    return (int)((long)all * (z + 1) / S) - first;
}

/* tf32, fp16, bf16. y is (B, OUT), x is (B, IN), wp is (OUT, DTC_KP(IN)) prepared at P, b is (OUT) or NULL.
 * Dynamic shared memory: DTC_STAGES stages of (x tile (128, 32), w tile (128, 32)) in P's format. Slice kt reads
 * stage kt % 3; meanwhile this thread's x of slice kt + 1 goes through registers into stage kt + 1 (part h loaded
 * before read h, stored after it) and the w copies of slice kt + 2 fill stage kt + 2. One __syncthreads a slice:
 * before it, every thread has stored its x of slice kt + 1 and waited for its w copies of kt + 1; after it, every
 * thread is done with stage kt, which the next slice's w copies (slice kt + 3) refill. Grid z splits k: block z
 * takes slices z T / S .. (z + 1) T / S - 1 of the T = DTC_KP(IN) / 32, and where S > 1 the cluster's S blocks add
 * their sums (dtc_reduce_store). */
template <int P, int VEC>
__global__ void __launch_bounds__(DTC_THREADS, 2)
    dense_tc_kernel(float *__restrict__ y, const float *__restrict__ x, const unsigned char *__restrict__ wp,
                    const float *__restrict__ b, int B, int IN, int OUT) {
    constexpr int RS = DTC_RS(P), XRS = DTC_XRS(P), XT = DTC_XTILE(P), STAGE = DTC_STAGE(P), READS = DTC_READS(P);
    extern __shared__ __align__(16) unsigned char dsm[];
    const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int wm = (warp >> 1) * 64, wn = (warp & 1) * 64; /* the warp's 64 x 64 within the block tile */
    const int row0 = (int)blockIdx.y * DTC_BM, col0 = (int)blockIdx.x * DTC_BN, KP = DTC_KP(IN), S = (int)gridDim.z;
    int kb;                                      /* the first k of this block's slices */
    const int tiles = dtc_block_slices(IN, &kb); /* and how many */
    float acc[4][8][4];
    dtc_zero(acc);
    float xr[4][8 / READS];
    /* w of slices 0 and 1 in flight, a commit group each (empty past the last, to keep wait_group's count); x of
     * slice 0 stored. */
    if (tiles > 0) {
        dtc_load_w<P>(dsm + XT, wp, OUT, KP, col0, kb);
        asm volatile("cp.async.commit_group;");
        if (tiles > 1) dtc_load_w<P>(dsm + STAGE + XT, wp, OUT, KP, col0, kb + DTC_BK);
        asm volatile("cp.async.commit_group;");
#pragma unroll
        for (int h = 0; h < READS; h++) {
            dtc_load_x<VEC, READS, true>(xr, x, B, IN, row0, kb, h);
            dtc_store_x<P>(dsm, xr, h);
        }
        asm volatile("cp.async.wait_group 1;");
        __syncthreads();
    }
    int cur = 0; /* stage of slice kt */
    for (int kt = 0; kt < tiles; kt++) {
        const int nx = cur == DTC_STAGES - 1 ? 0 : cur + 1, nw = nx == DTC_STAGES - 1 ? 0 : nx + 1;
        const int more = kt + 1 < tiles;
        const unsigned char *s = dsm + cur * STAGE;
#pragma unroll
        for (int h = 0; h < READS; h++) {
            if (more) dtc_load_x<VEC, READS, true>(xr, x, B, IN, row0, kb + (kt + 1) * DTC_BK, h);
            if (h == 0) {
                if (kt + 2 < tiles) dtc_load_w<P>(dsm + nw * STAGE + XT, wp, OUT, KP, col0, kb + (kt + 2) * DTC_BK);
                asm volatile("cp.async.commit_group;");
            }
            dtc_read<P>(acc, s + wm / 2 * XRS, s + XT + wn * RS, g, t, h);
            if (more) dtc_store_x<P>(dsm + nx * STAGE, xr, h);
        }
        asm volatile("cp.async.wait_group 1;"); /* this thread's w copies of slice kt + 1 */
        __syncthreads();
        cur = nx;
    }
    if (S == 1) {
        dtc_store_y<4, 8, 16>(y, b, acc, B, OUT, row0 + wm, col0 + wn, g, t);
        return;
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory"); /* (groups past the last slice are empty) */
    dtc_reduce_store<4, 8, 16>(y, b, acc, reinterpret_cast<float *>(dsm), B, OUT, row0, col0, wm, wn, g, t);
}

/* Weights in P's format, rows zero-padded to KP: wp is (OUT, KP) of tf32 bit patterns, fp16 or bf16, or for 3xtf32
 * two of tf32, w's high parts then its low parts; w is (OUT, IN) fp32. */
template <int P>
__global__ void dense_tc_prepare_kernel(void *__restrict__ wp, const float *__restrict__ w, int IN, int KP, int OUT) {
    const size_t n = (size_t)OUT * KP;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t o = i / KP;
        const int k = (int)(i - o * KP);
        const float v = k < IN ? w[o * IN + k] : 0.0f;
        if constexpr (P == NC_PRECISION_TF32) {
            ((uint32_t *)wp)[i] = dtc_tf32(v);
        } else if constexpr (P == NC_PRECISION_3XTF32) { /* the high parts, then the low parts */
            ((uint32_t *)wp)[i] = dtc_split(v, (uint32_t *)wp + n + i);
        } else if constexpr (P == NC_PRECISION_FP16) {
            ((__half *)wp)[i] = __float2half_rn(v);
        } else {
            ((__nv_bfloat16 *)wp)[i] = __float2bfloat16_rn(v);
        }
    }
}

/* ---------------------------------------------------------------- wgmma (sm_90a) */

/*
 * tf32, 3xtf32, fp16 and bf16 on the H100's warpgroup MMA (wgmma.mma_async, sm_90a), where this file is built for it
 * (NC_DENSE_SM90A: the build compiles it for sm_90a in place of sm_90) and the device is sm_90. The block is one
 * warpgroup (128 threads) on the same 128 x 128 tile as dense_tc_kernel, with the same split of k among a cluster's
 * blocks, stages and loads; what differs is who reads shared memory. mma.sync has every warp load its fragments into
 * registers (a 64 x 64 warp tile: 16 loads a k step, and 240-250 registers, so two warps a scheduler); wgmma reads both
 * operands from shared memory itself, asynchronously, through descriptors, so that the warps only stage the next slice
 * meanwhile.
 *  - A stage holds x's 128 rows, then w's 128, each row a slice's 32 tf32 (128 bytes) under the 128-byte swizzle
 *    (16-byte chunk c of row r at chunk c ^ (r mod 8)), or 32 fp16/bf16 (64 bytes) under the 64-byte swizzle (chunk
 *    c ^ (r / 2 mod 4)); the stages 1024-byte aligned: the layouts a K-major wgmma operand's descriptor names (8 rows
 *    a core matrix group, groups 8 rows apart).
 *  - A slice is 4 k steps of 8 (fp16/bf16: 2 of 16), each two m64n128 MMAs (the block's rows 0-63 and 64-127) on 64
 *    accumulators a thread.
 *  - x goes through registers as in dense_tc_kernel (rounded to P to nearest there), loaded two slices ahead;
 *    w by cp.async. Both are generic-proxy writes, so each thread fences them to the async proxy before the
 *    barrier that hands the stage to the MMAs. A slice's MMAs are issued before the previous slice's are waited
 *    for (wgmma.wait_group 1), so that the tensor cores always have the next slice queued.
 * The k order: a slice's k steps in turn, each 8 (16) consecutive k (dense_tc_kernel permutes k inside a slice), and
 * the same slices a block, so the sums differ in rounding from dense_tc_kernel's and are as independent of B.
 * 3xtf32: a stage holds four tiles, x's high and low parts (x split as it is stored, dtc_split), then w's (copied
 * as prepared), 64 KB, so one block an SM; each k step is three MMAs on each half, the small terms first.
 * H100, 2026-11-26, bench/ab/dense_one on the 2017 dense layer at its split of 4: 0.385 ms on the network's piece
 * of 8720 images against mma.sync's 0.571, 0.083 against 0.120 on the piece of 1280 (docs/PERFORMANCE-LOG.md). What
 * holds it then is x's loads (x is read as fp32 by the 4 blocks of its rows; w by the 69 of its columns: 2 GB from
 * L2 at 8720 images), not the tensor cores (busy 41% of the cycles). 3xtf32 at its split of 2: 0.83 ms on the piece
 * of 8720 against mma.sync's 1.27; ncu: the tensor pipe busy 55%, one warp a scheduler issuing 697 instructions a
 * slice at 3.8 cycles each (fewer, 486, by descriptors built with one add each, took longer: 0.90 ms).
 */
#define DWG_IS32(P) ((P) == NC_PRECISION_TF32 || (P) == NC_PRECISION_3XTF32) /* operands as tf32 */
#define DWG_SPLIT(P) ((P) == NC_PRECISION_3XTF32)              /* each operand as two tiles: high and low parts */
#define DWG_ROW(P) (DTC_BK * (DWG_IS32(P) ? 4 : 2))            /* bytes a staged row: 128, 64 */
#define DWG_TILE(P) (DTC_BM * DWG_ROW(P))                      /* one part of one operand: 128 rows */
#define DWG_WAT(P) ((DWG_SPLIT(P) ? 2 : 1) * DWG_TILE(P))      /* w's tile(s) in a stage, after x's */
#define DWG_STAGE(P) (2 * DWG_WAT(P))                          /* tf32 32 KB, fp16/bf16 16 KB, 3xtf32 64 KB */
#define DWG_SMEM(P) ((size_t)DTC_STAGES * DWG_STAGE(P) + 1024) /* 1 KB more to align the stages */
#define DWG_K(P) (DWG_IS32(P) ? 8 : 16)                        /* k of one MMA: 32 bytes a row */

/* The byte offset of 16-byte chunk c of row r in a staged tile: tf32's 128-byte rows under the 128-byte swizzle
 * (chunk c ^ (r mod 8)), fp16/bf16's 64-byte rows under the 64-byte swizzle (chunk c ^ (r / 2 mod 4)). */
template <int P> __device__ __forceinline__ int dwg_at(int r, int c) {
    if constexpr (DWG_IS32(P))
        return r * DWG_ROW(P) + ((c ^ (r & 7)) << 4);
    else
        return r * DWG_ROW(P) + ((c ^ ((r >> 1) & 3)) << 4);
}

/* A K-major operand at shared address a, rows DWG_ROW(P) bytes under the swizzle of that width (hopper.cuh). */
template <int P> __device__ __forceinline__ uint64_t dwg_desc(uint32_t a) {
    return nc_wgmma_desc<DWG_ROW(P)>(a);
}

/* wgmma's 64 accumulators, fp32 sums: the asm operands d[0] .. d[63] (hopper.cuh). */
#define DWG_D_OPS(d) NC_WGMMA_D64_OPS("+f", d)

/* One wgmma (instr) on the accumulators d and the descriptors da, db, with tail's immediates after them. */
#define DWG_MMA(instr, tail)                                                                                           \
    asm volatile(instr " " NC_WGMMA_D64_REGS ", %64, %65, " tail ";" : DWG_D_OPS(d) : "l"(da), "l"(db))

/* d += a b on one m64n128 tile (k 8 of tf32, 16 of fp16 or bf16) from shared memory, both K-major, fp32
 * accumulators: thread (warp w, lane 4g + t) holds d[4j + e] at row 16w + g + 8 (e >> 1), column 8j + 2t + (e & 1).
 * The immediates: D += A B (scale-d 1), A and B not negated (1, 1), and for fp16/bf16 neither transposed (0, 0). */
template <int P> __device__ __forceinline__ void dwg_mma(float (&d)[64], uint64_t da, uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    if constexpr (DWG_IS32(P))
        DWG_MMA("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32", "1, 1, 1");
    else if constexpr (P == NC_PRECISION_FP16)
        DWG_MMA("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", "1, 1, 1, 0, 0");
    else
        DWG_MMA("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "1, 1, 1, 0, 0");
#else
    (void)d, (void)da, (void)db;
#endif
}

/* Keeps the compiler from moving accesses of the accumulators across the wgmma fences and waits around them. */
__device__ __forceinline__ void dwg_hold(float (&acc)[2][16][4]) {
#pragma unroll
    for (int h = 0; h < 2; h++)
#pragma unroll
        for (int j = 0; j < 16; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) asm volatile("" : "+f"(acc[h][j][e])::"memory");
}

/* The registers of dtc_load_x<VEC, 1, false> (rows tid / 4 + 32 m, floats 8u .. 8u + 7), rounded to P, into a stage's
 * x tile at xs: tf32 chunks 2u and 2u + 1 of each of the thread's rows, fp16/bf16 chunk u (a quarter warp's stores
 * take 8 distinct chunks of 128 bytes); 3xtf32 the high parts so (dtc_split) and the low parts into the tile after. */
template <int P> __device__ __forceinline__ void dwg_store_x(unsigned char *xs, const float (&v)[4][8]) {
    const int tid = (int)threadIdx.x, u = tid & 3;
#pragma unroll
    for (int m = 0; m < 4; m++) {
        const int r = (tid >> 2) + 32 * m;
        if constexpr (DWG_SPLIT(P)) {
#pragma unroll
            for (int q = 0; q < 2; q++) {
                uint32_t hi[4], lo[4];
#pragma unroll
                for (int e = 0; e < 4; e++) hi[e] = dtc_split(v[m][4 * q + e], &lo[e]);
                dtc_sts4(xs + dwg_at<P>(r, 2 * u + q), hi[0], hi[1], hi[2], hi[3]);
                dtc_sts4(xs + DWG_TILE(P) + dwg_at<P>(r, 2 * u + q), lo[0], lo[1], lo[2], lo[3]);
            }
        } else if constexpr (P == NC_PRECISION_TF32) {
#pragma unroll
            for (int q = 0; q < 2; q++)
                dtc_sts4(xs + dwg_at<P>(r, 2 * u + q), dtc_tf32(v[m][4 * q]), dtc_tf32(v[m][4 * q + 1]),
                         dtc_tf32(v[m][4 * q + 2]), dtc_tf32(v[m][4 * q + 3]));
        } else {
            dtc_sts4(xs + dwg_at<P>(r, u), dtc_pack<P>(v[m][0], v[m][1]), dtc_pack<P>(v[m][2], v[m][3]),
                     dtc_pack<P>(v[m][4], v[m][5]), dtc_pack<P>(v[m][6], v[m][7]));
        }
    }
}

/* Prepared w's slice k0 .. k0+31 of rows c0 .. c0+127 into a stage's w tile, 16 bytes a cp.async; rows past OUT
 * copy 0 bytes and zero-fill. 3xtf32: the high parts' tile, then the low parts' (OUT rows of KP after them). */
template <int P>
__device__ __forceinline__ void dwg_load_w(unsigned char *ws, const unsigned char *wp, int OUT, int KP, int c0,
                                           int k0) {
    constexpr int PER_ROW = DWG_ROW(P) / 16; /* 16-byte chunks a row: 8, 4 */
#pragma unroll
    for (int part = 0; part < (DWG_SPLIT(P) ? 2 : 1); part++) {
        const unsigned char *w = wp + (size_t)part * OUT * KP * 4;
#pragma unroll
        for (int i = 0; i < DTC_BN * PER_ROW / DTC_THREADS; i++) {
            const unsigned idx = threadIdx.x + DTC_THREADS * i; /* unsigned: / and % by a power of 2 are shifts */
            const int r = (int)(idx / PER_ROW), c = (int)(idx % PER_ROW), ok = c0 + r < OUT;
            const unsigned char *src = ok ? w + ((size_t)(c0 + r) * KP + k0) * (DWG_IS32(P) ? 4 : 2) + 16 * c : w;
            nc_cp_async16(ws + part * DWG_TILE(P) + dwg_at<P>(r, c), src, ok ? 16 : 0);
        }
    }
}

/* One slice kt of dense_wg_kernel, stage cur = kt % DTC_STAGES: its MMAs issued; x of slice kt + 1, loaded into
 * `now` a slice ago, rounded and stored, and x of slice kt + 2 loaded into `next` (its latency behind a whole slice's
 * MMAs); once slice kt - 1's MMAs are done (wgmma.wait_group 1), w's copies of slice kt + 2 into that slice's stage.
 * The x step goes before the wait, so that slice kt - 1's MMAs have its time to finish in: on the 2017 dense layer
 * (H100, bench/ab/dense_one, 2026-11-26; docs/PERFORMANCE-LOG.md) tf32, fp16 and bf16 took 2-4% less so; 3xtf32,
 * whose x step splits and stores twice as much, 0-1.5% more, and keeps it after the copies. One __syncthreads at the
 * end: every thread has stored its x of slice kt + 1, waited for its w copies of it and fenced both to the async
 * proxy, so that the next slice's MMAs may read the stage. */
template <int P, int VEC>
__device__ __forceinline__ void dwg_slice(float (&acc)[2][16][4], float (&now)[4][8], float (&next)[4][8],
                                          unsigned char *dsm, uint32_t sm0, const float *__restrict__ x,
                                          const unsigned char *__restrict__ wp, int B, int IN, int OUT, int KP,
                                          int row0, int col0, int kb, int kt, int tiles, int cur) {
    const int n1 = cur == DTC_STAGES - 1 ? 0 : cur + 1, n2 = n1 == DTC_STAGES - 1 ? 0 : n1 + 1;
    const uint32_t xa = sm0 + cur * DWG_STAGE(P), wa = xa + DWG_WAT(P);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    dwg_hold(acc);
#pragma unroll
    for (int ks = 0; ks < DTC_BK / DWG_K(P); ks++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float(&d)[64] = reinterpret_cast<float(&)[64]>(acc[h]);
            const uint32_t xk = xa + h * 64 * DWG_ROW(P) + 32 * ks, wk = wa + 32 * ks;
            if constexpr (DWG_SPLIT(P)) { /* the small terms first: x lo w hi, x hi w lo */
                dwg_mma<P>(d, dwg_desc<P>(xk + DWG_TILE(P)), dwg_desc<P>(wk));
                dwg_mma<P>(d, dwg_desc<P>(xk), dwg_desc<P>(wk + DWG_TILE(P)));
            }
            dwg_mma<P>(d, dwg_desc<P>(xk), dwg_desc<P>(wk));
        }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    if constexpr (!DWG_SPLIT(P)) { /* stage n1's MMAs (slice kt - 2's) were waited for a slice ago */
        if (kt + 1 < tiles) dwg_store_x<P>(dsm + n1 * DWG_STAGE(P), now);
        if (kt + 2 < tiles) dtc_load_x<VEC, 1, false>(next, x, B, IN, row0, kb + (kt + 2) * DTC_BK, 0);
    }
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); /* slice kt - 1's: stage n2 is free */
    dwg_hold(acc);
    if (kt + 2 < tiles) dwg_load_w<P>(dsm + n2 * DWG_STAGE(P) + DWG_WAT(P), wp, OUT, KP, col0, kb + (kt + 2) * DTC_BK);
    asm volatile("cp.async.commit_group;");
    if constexpr (DWG_SPLIT(P)) {
        if (kt + 1 < tiles) dwg_store_x<P>(dsm + n1 * DWG_STAGE(P), now);
        if (kt + 2 < tiles) dtc_load_x<VEC, 1, false>(next, x, B, IN, row0, kb + (kt + 2) * DTC_BK, 0);
    }
    asm volatile("cp.async.wait_group 1;"); /* this thread's w copies of slice kt + 1 */
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
}

/* wgmma at precision P (tf32, 3xtf32, fp16, bf16): dense_tc_kernel's arguments, grid and split of k. Slices in pairs,
 * so that the two register sets of x (the next slice's, to store, and the one after, loading) have fixed names.
 * 3xtf32's 193 KB of shared memory leave one block an SM. */
template <int P, int VEC>
__global__ void __launch_bounds__(DTC_THREADS, DWG_SPLIT(P) ? 1 : 2)
    dense_wg_kernel(float *__restrict__ y, const float *__restrict__ x, const unsigned char *__restrict__ wp,
                    const float *__restrict__ b, int B, int IN, int OUT) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(16) unsigned char wsm[];
    unsigned char *dsm = wsm + ((1024 - ((uint32_t)__cvta_generic_to_shared(wsm) & 1023)) & 1023);
    const uint32_t sm0 = (uint32_t)__cvta_generic_to_shared(dsm);
    const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int row0 = (int)blockIdx.y * DTC_BM, col0 = (int)blockIdx.x * DTC_BN, KP = DTC_KP(IN), S = (int)gridDim.z;
    int kb;                                      /* the first k of this block's slices */
    const int tiles = dtc_block_slices(IN, &kb); /* and how many */
    float acc[2][16][4];
    dtc_zero(acc);
    float xa[4][8], xb[4][8];
    /* w of slices 0 and 1 in flight, a commit group each (empty past the last); x of slice 0 stored, slice 1's
     * loading into xb. */
    if (tiles > 0) {
        dwg_load_w<P>(dsm + DWG_WAT(P), wp, OUT, KP, col0, kb);
        asm volatile("cp.async.commit_group;");
        if (tiles > 1) dwg_load_w<P>(dsm + DWG_STAGE(P) + DWG_WAT(P), wp, OUT, KP, col0, kb + DTC_BK);
        asm volatile("cp.async.commit_group;");
        dtc_load_x<VEC, 1, false>(xa, x, B, IN, row0, kb, 0);
        dwg_store_x<P>(dsm, xa);
        if (tiles > 1) dtc_load_x<VEC, 1, false>(xb, x, B, IN, row0, kb + DTC_BK, 0);
        asm volatile("cp.async.wait_group 1;");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
    }
    int cur = 0; /* stage of slice kt */
    for (int kt = 0; kt < tiles; kt += 2) {
        dwg_slice<P, VEC>(acc, xb, xa, dsm, sm0, x, wp, B, IN, OUT, KP, row0, col0, kb, kt, tiles, cur);
        cur = cur == DTC_STAGES - 1 ? 0 : cur + 1;
        if (kt + 1 < tiles)
            dwg_slice<P, VEC>(acc, xa, xb, dsm, sm0, x, wp, B, IN, OUT, KP, row0, col0, kb, kt + 1, tiles, cur);
        cur = cur == DTC_STAGES - 1 ? 0 : cur + 1;
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    dwg_hold(acc);
    if (S == 1) {
        dtc_store_y<2, 16, 64>(y, b, acc, B, OUT, row0 + 16 * warp, col0, g, t);
        return;
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory"); /* (groups past the last slice are empty) */
    __syncthreads(); /* every warpgroup's MMAs are done with the stages the sums go into */
    dtc_reduce_store<2, 16, 64>(y, b, acc, reinterpret_cast<float *>(dsm), B, OUT, row0, col0, 16 * warp, 0, g, t);
#else
    __trap(); /* the launcher runs it only where this file was built for sm_90a and the device is sm_90 */
#endif
}

/* ---------------------------------------------------------------- wgmma, warp-specialized (sm_90a) */

/*
 * wgmma with the warps specialized (dense_ws_kernel), where dense_wg_kernel runs and B > 128: a block of three
 * warpgroups on a tile of 128 rows (images) by 256 columns (outputs), one block an SM.
 *  - Warpgroup 0 is the producer. It fills a ring of DWS_STAGES(P) stages (192 KB): w's tile of a slice by one TMA
 *    copy a part (cp.async.bulk.tensor; the tensor map, made by the launcher over the prepared weights, swizzles as
 *    dwg_at does and zero-fills rows past OUT), x's through registers as dense_wg_kernel's (rounded to P, or split
 *    into 3xtf32's two parts, stored, fenced to the async proxy), loaded DWS_XSETS(P) slices ahead.
 *  - Warpgroups 1 and 2 are the consumers, rows 0-63 and 64-127 of the tile: one m64n256 MMA a k step each (3xtf32
 *    three, in dense_wg_kernel's order), 128 accumulators a thread.
 *  - No __syncthreads in the loop. Each stage has two mbarriers: `full` takes the 128 producer threads' arrivals
 *    after their x stores, and one more that expects the TMA copy's bytes; `empty` takes the 256 consumer threads'
 *    arrivals once the stage's MMAs are done (after the next slice's wgmma.wait_group 1).
 * Against dense_wg_kernel: x is read from L2 half as often (the 2017 layer's 500 outputs make 2 column tiles, not 4),
 * and the producer runs up to the ring's depth ahead of the MMAs where dense_wg_kernel's warps stage one slice
 * between two barriers. The k order and the split of k are dense_wg_kernel's (the same slices a block, each slice's
 * k steps in turn, the cluster's sums in the same order), so the outputs are the same bits (tests/gpu/test_dense_tc.c
 * checks it), and the launcher may choose between the two by B.
 * H100, 2026-11-26, bench/ab/dense_one on the 2017 dense layer in one call (docs/PERFORMANCE-LOG.md): tf32 0.323 ms
 * at B 10000 against dense_wg_kernel's 0.419, fp16 and bf16 0.26 against 0.36. ncu on the first version (x two slices
 * ahead, two m64n128 a k step): the consumers waited on `full`, the producer on x's loads; x four slices ahead took
 * 5-10% less, and m64n256 (A read once a k step) 2-6% less again. Left out: w's tile shared by the blocks of two tiles
 * of rows (a cluster's pair, each copying half by TMA multicast: half the L2 traffic of w), the same time at tf32 and
 * 3-6% more at fp16; x prefetched into L2 further ahead, within 2%.
 * 3xtf32 (since 2026-11-26 08:55): a stage is x's two parts and w's two (96 KB), so the ring has two stages, and x is
 * loaded two slices ahead (four would take more registers than the 168 a thread has). On the 2017 layer at B 10000,
 * 0.763 ms against dense_wg_kernel's 0.829 (its split of 2: 316 blocks against 632); the 2017 network at 3xtf32 in
 * 1.20 ms against 1.26 (bench/ab/net_one, the same call). Where its blocks are fewer it loses (dws_3x_wins).
 */
#define DWS_BN 256                             /* block tile: outputs */
#define DWS_THREADS 384                        /* the producer warpgroup, then two consumers */
#define DWS_PARTS(P) (DWG_SPLIT(P) ? 2 : 1)    /* tiles an operand: 3xtf32's high parts, then its low parts */
#define DWS_XT(P) (DWS_PARTS(P) * DWG_TILE(P)) /* x's tile(s): tf32 16 KB, fp16/bf16 8 KB, 3xtf32 32 KB */
#define DWS_WT(P) (DWS_BN * DWG_ROW(P))        /* one part of w's tile: tf32 and 3xtf32 32 KB, fp16/bf16 16 KB */
#define DWS_STAGE(P) (DWS_XT(P) + DWS_PARTS(P) * DWS_WT(P))    /* x's, then w's: 48 KB, 24 KB, 3xtf32 96 KB */
#define DWS_STAGES(P) (DWG_SPLIT(P) ? 2 : DWG_IS32(P) ? 4 : 8) /* 192 KB of shared memory */
#define DWS_MAX_STAGES 8
#define DWS_XSETS(P) (DWG_SPLIT(P) ? 2 : 4) /* x's register sets: the producer loads x this many slices ahead */
#define DWS_SMEM(P) ((size_t)DWS_STAGES(P) * DWS_STAGE(P) + 1024) /* 1 KB more to align the stages */

/* m64n256's 128 accumulators: the register list, %0 .. %127 (the operands: DWG_D_OPS of each half). */
#define DWS_D_REGS                                                                                                     \
    "{"                                                                                                                \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                           \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                                 \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                                 \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                                 \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                                 \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                                 \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "                     \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"                   \
    "}"
#define DWS_MMA(instr, tail)                                                                                           \
    asm volatile(instr " " DWS_D_REGS ", %128, %129, " tail ";" : DWG_D_OPS(d0), DWG_D_OPS(d1) : "l"(da), "l"(db))

/* dwg_mma on one m64n256 tile: columns 0-127 of it in acc[0], 128-255 in acc[1] (dwg_mma's layout each), so that
 * A is read once for both halves. */
template <int P> __device__ __forceinline__ void dws_mma(float (&acc)[2][16][4], uint64_t da, uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    float(&d0)[64] = reinterpret_cast<float(&)[64]>(acc[0]);
    float(&d1)[64] = reinterpret_cast<float(&)[64]>(acc[1]);
    if constexpr (DWG_IS32(P))
        DWS_MMA("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32", "1, 1, 1");
    else if constexpr (P == NC_PRECISION_FP16)
        DWS_MMA("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16", "1, 1, 1, 0, 0");
    else
        DWS_MMA("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "1, 1, 1, 0, 0");
#else
    (void)acc, (void)da, (void)db;
#endif
}

/* The producer's slice kt (of `tiles`), stage st, its n-th use: waits for the stage to be free (the consumers'
 * arrivals after its n - 1-th use; the first use passes at once), starts w's copy, stores x of slice kt (in now,
 * loaded DWS_XSETS slices ago), and loads x of slice kt + DWS_XSETS into now. */
template <int P, int VEC>
__device__ __forceinline__ void dws_produce(float (&now)[4][8], unsigned char *dsm, uint32_t sm0, uint32_t bars,
                                            const void *map, const float *__restrict__ x, int B, int IN, int row0,
                                            int col0, int kb, int kt, int tiles, int st, int n) {
    const uint32_t full = bars + 8 * st, empty = bars + 8 * (DWS_MAX_STAGES + st);
    nc_bar_wait(empty, (n & 1) ^ 1);
    if (threadIdx.x == 0) {
        nc_bar_arrive_tx(full, DWS_PARTS(P) * DWS_WT(P));
#pragma unroll
        for (int part = 0; part < DWS_PARTS(P); part++)
            nc_tma3d(sm0 + st * DWS_STAGE(P) + DWS_XT(P) + part * DWS_WT(P), map, kb + kt * DTC_BK, col0, part, full);
    }
    dwg_store_x<P>(dsm + st * DWS_STAGE(P), now);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    nc_bar_arrive(full);
    if (kt + DWS_XSETS(P) < tiles) dtc_load_x<VEC, 1, false>(now, x, B, IN, row0, kb + (kt + DWS_XSETS(P)) * DTC_BK, 0);
}

/* y = x w^T + b at precision P (tf32, 3xtf32, fp16, bf16): dense_wg_kernel's arguments and split of k, and map, the
 * tensor map of the prepared weights (dws_map: rows of DTC_KP(IN) in one or two parts, a box of 32 k by 256 rows of
 * one part, P's swizzle). */
template <int P, int VEC>
__global__ void __launch_bounds__(DWS_THREADS, 1)
    dense_ws_kernel(float *__restrict__ y, const float *__restrict__ x, const __grid_constant__ CUtensorMap map,
                    const float *__restrict__ b, int B, int IN, int OUT) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int ST = DWS_STAGES(P);
    extern __shared__ __align__(16) unsigned char wsm[];
    __shared__ __align__(8) uint64_t bar[2 * DWS_MAX_STAGES]; /* full[ST], then empty[ST] from DWS_MAX_STAGES */
    unsigned char *dsm = wsm + ((1024 - ((uint32_t)__cvta_generic_to_shared(wsm) & 1023)) & 1023);
    const uint32_t sm0 = (uint32_t)__cvta_generic_to_shared(dsm), bars = (uint32_t)__cvta_generic_to_shared(bar);
    const int wg = (int)threadIdx.x >> 7;
    const int row0 = (int)blockIdx.y * DTC_BM, col0 = (int)blockIdx.x * DWS_BN, S = (int)gridDim.z;
    int kb;                                      /* the first k of this block's slices */
    const int tiles = dtc_block_slices(IN, &kb); /* and how many */
    if (threadIdx.x == 0) {
        for (int s = 0; s < ST; s++) {
            nc_bar_init(bars + 8 * s, DTC_THREADS + 1);
            nc_bar_init(bars + 8 * (DWS_MAX_STAGES + s), 2 * DTC_THREADS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (wg == 0) { /* the producer: slices in groups of DWS_XSETS, so that x's register sets have fixed names */
        float xr[DWS_XSETS(P)][4][8];
#pragma unroll
        for (int j = 0; j < DWS_XSETS(P); j++)
            if (j < tiles) dtc_load_x<VEC, 1, false>(xr[j], x, B, IN, row0, kb + j * DTC_BK, 0);
        int st = 0, n = 0; /* slice kt's stage and its use of it */
        for (int k0 = 0; k0 < tiles; k0 += DWS_XSETS(P))
#pragma unroll
            for (int j = 0; j < DWS_XSETS(P); j++) {
                if (k0 + j >= tiles) break;
                dws_produce<P, VEC>(xr[j], dsm, sm0, bars, &map, x, B, IN, row0, col0, kb, k0 + j, tiles, st, n);
                if (++st == ST) st = 0, n++;
            }
    } else { /* a consumer: rows 64 (wg - 1) .. of the tile */
        const int warp = ((int)threadIdx.x >> 5) & 3, lane = (int)threadIdx.x & 31, g = lane >> 2, t = lane & 3;
        float acc[2][16][4]; /* [h]: columns 128 h .. */
        dtc_zero(acc);
        int st = 0, n = 0, prev = -1; /* slice kt's stage, its use of it, and slice kt - 1's stage */
        for (int kt = 0; kt < tiles; kt++) {
            nc_bar_wait(bars + 8 * st, n & 1);
            const uint32_t xa = sm0 + st * DWS_STAGE(P) + (wg - 1) * 64 * DWG_ROW(P),
                           wa = sm0 + st * DWS_STAGE(P) + DWS_XT(P);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            dwg_hold(acc);
#pragma unroll
            for (int ks = 0; ks < DTC_BK / DWG_K(P); ks++) {
                const uint32_t xk = xa + 32 * ks, wk = wa + 32 * ks;
                if constexpr (DWG_SPLIT(P)) { /* dwg_slice's order: x lo w hi, x hi w lo, then x hi w hi */
                    dws_mma<P>(acc, dwg_desc<P>(xk + DWG_TILE(P)), dwg_desc<P>(wk));
                    dws_mma<P>(acc, dwg_desc<P>(xk), dwg_desc<P>(wk + DWS_WT(P)));
                }
                dws_mma<P>(acc, dwg_desc<P>(xk), dwg_desc<P>(wk));
            }
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); /* slice kt - 1's */
            dwg_hold(acc);
            if (prev >= 0) nc_bar_arrive(bars + 8 * (DWS_MAX_STAGES + prev));
            prev = st;
            if (++st == ST) st = 0, n++;
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        dwg_hold(acc);
        const int r0 = 64 * (wg - 1) + 16 * warp;
        if (S == 1) {
#pragma unroll
            for (int h = 0; h < 2; h++)
                dtc_store_y<1, 16, 64>(y, b, reinterpret_cast<const float(&)[1][16][4]>(acc[h]), B, OUT, row0 + r0,
                                       col0 + 128 * h, g, t);
            return;
        }
        asm volatile("bar.sync 1, 256;" ::: "memory"); /* the consumers': their MMAs are done with the stages */
#pragma unroll
        for (int h = 0; h < 2; h++)
            dtc_red_put<1, 16, 64, DWS_BN>(reinterpret_cast<float *>(dsm),
                                           reinterpret_cast<const float(&)[1][16][4]>(acc[h]), r0, 128 * h, g, t);
    }
    if (S == 1) return;
    dtc_red_sum<DWS_BN>(y, b, reinterpret_cast<float *>(dsm), B, OUT, row0, col0);
#else
    __trap(); /* the launcher runs it only where this file was built for sm_90a and the device is sm_90 */
#endif
}

/* ---------------------------------------------------------------- 3xtf32 */

#define DTC_SPLIT_LD (DTC_BK + 4) /* floats a staged row: 16-byte aligned, and conflict-free float4 reads */
#define DTC_SPLIT_STAGE ((DTC_BM + 2 * DTC_BN) * DTC_SPLIT_LD)                /* x, w's high parts, w's low parts */
#define DTC_SPLIT_SMEM ((size_t)DTC_STAGES * DTC_SPLIT_STAGE * sizeof(float)) /* 165.9 KB */
#define DTC_SPLIT_THREADS 256                                                 /* 2 x 4 warps of 64 x 32 */

/* One staged k slice through a warp's 64 x 32 tile, rows DTC_SPLIT_LD floats apart: x fp32, split as it is read; w's
 * high and low parts as prepared (wh, wl). Fragments as dtc_read maps tf32's (lane (g, t) reads floats 8t + 4h .. of
 * its rows); the small terms first. */
__device__ __forceinline__ void dtc_split_slice(float (&acc)[4][4][4], const float *xs, const float *wh,
                                                const float *wl, int g, int t) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int c = 8 * t + 4 * h;
        uint32_t bh[4][4], bl[4][4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            dtc_lds4(bh[j], wh + (8 * j + g) * DTC_SPLIT_LD + c);
            dtc_lds4(bl[j], wl + (8 * j + g) * DTC_SPLIT_LD + c);
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            uint32_t r0[4], r8[4], h0[4], l0[4], h8[4], l8[4];
            dtc_lds4(r0, xs + (16 * i + g) * DTC_SPLIT_LD + c);
            dtc_lds4(r8, xs + (16 * i + g + 8) * DTC_SPLIT_LD + c);
            dtc_split4(h0, l0, r0);
            dtc_split4(h8, l8, r8);
#pragma unroll
            for (int s = 0; s < 2; s++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int e = 2 * s;
                    dtc_mma8(acc[i][j], l0[e], l8[e], l0[e + 1], l8[e + 1], bh[j][e], bh[j][e + 1]);
                    dtc_mma8(acc[i][j], h0[e], h8[e], h0[e + 1], h8[e + 1], bl[j][e], bl[j][e + 1]);
                    dtc_mma8(acc[i][j], h0[e], h8[e], h0[e + 1], h8[e + 1], bh[j][e], bh[j][e + 1]);
                }
        }
    }
}

/* Copies one k slice of 128 rows of m (rows r0.. of `rows`, each IN floats) into s (stride DTC_SPLIT_LD), in
 * chunks of VEC floats. A chunk past the matrix copies 0 bytes and zero-fills. VEC divides IN (the launcher's
 * choice), so a chunk is wholly inside k or wholly past it. */
template <int VEC>
__device__ __forceinline__ void dtc_split_load(float *s, const float *m, int rows, int IN, int r0, int k0) {
    constexpr int PER_ROW = DTC_BK / VEC, STEP = DTC_SPLIT_THREADS / PER_ROW; /* chunks a row; rows a pass */
    const int tid = (int)threadIdx.x, c = tid % PER_ROW * VEC, k_ok = k0 + c < IN;
#pragma unroll
    for (int i = 0; i < DTC_BM / STEP; i++) {
        const int r = tid / PER_ROW + i * STEP, ok = k_ok && r0 + r < rows;
        const float *src = ok ? m + (size_t)(r0 + r) * IN + k0 + c : m;
        if constexpr (VEC == 4) {
            nc_cp_async16(s + r * DTC_SPLIT_LD + c, src, ok ? 16 : 0);
        } else {
            const uint32_t sa = (uint32_t)__cvta_generic_to_shared(s + r * DTC_SPLIT_LD + c);
            asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(sa), "l"(src), "n"(VEC * 4),
                         "r"(ok ? VEC * 4 : 0));
        }
    }
}

/* 3xtf32 on fp32 x and prepared w (wp: w's high parts (OUT, KP), then its low parts). Dynamic shared memory:
 * DTC_STAGES stages of (x tile, w high tile, w low tile, each (128, 36)). One __syncthreads a slice: after it, slice kt
 * is in for every thread and every thread is done with the stage of slice kt - 1, which is the one refilled next (with
 * slice kt + 2). Grid z splits k as in dense_tc_kernel.
 */
template <int VEC>
__global__ void __launch_bounds__(DTC_SPLIT_THREADS, 1)
    dtc_split_kernel(float *__restrict__ y, const float *__restrict__ x, const unsigned char *__restrict__ wp,
                     const float *__restrict__ b, int B, int IN, int OUT) {
    extern __shared__ __align__(16) float fsm[];
    const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int wm = warp / 4 * 64, wn = warp % 4 * 32; /* the warp's 64 x 32 within the block tile */
    const int row0 = (int)blockIdx.y * DTC_BM, col0 = (int)blockIdx.x * DTC_BN, S = (int)gridDim.z;
    const int KP = DTC_KP(IN);
    const float *wh = reinterpret_cast<const float *>(wp), *wl = wh + (size_t)OUT * KP; /* prepared: 16-byte rows */
    int kb;                                      /* the first k of this block's slices */
    const int tiles = dtc_block_slices(IN, &kb); /* and how many */
    float acc[4][4][4];
    dtc_zero(acc);
    for (int s = 0; s < DTC_STAGES - 1; s++) {
        if (s < tiles) {
            float *st = fsm + s * DTC_SPLIT_STAGE;
            dtc_split_load<VEC>(st, x, B, IN, row0, kb + s * DTC_BK);
            dtc_split_load<4>(st + DTC_BM * DTC_SPLIT_LD, wh, OUT, KP, col0, kb + s * DTC_BK);
            dtc_split_load<4>(st + (DTC_BM + DTC_BN) * DTC_SPLIT_LD, wl, OUT, KP, col0, kb + s * DTC_BK);
        }
        asm volatile("cp.async.commit_group;");
    }
    for (int kt = 0; kt < tiles; kt++) {
        asm volatile("cp.async.wait_group %0;" ::"n"(DTC_STAGES - 2)); /* this thread's copies of slice kt */
        __syncthreads();
        const int next = kt + DTC_STAGES - 1;
        if (next < tiles) {
            float *st = fsm + next % DTC_STAGES * DTC_SPLIT_STAGE;
            dtc_split_load<VEC>(st, x, B, IN, row0, kb + next * DTC_BK);
            dtc_split_load<4>(st + DTC_BM * DTC_SPLIT_LD, wh, OUT, KP, col0, kb + next * DTC_BK);
            dtc_split_load<4>(st + (DTC_BM + DTC_BN) * DTC_SPLIT_LD, wl, OUT, KP, col0, kb + next * DTC_BK);
        }
        asm volatile("cp.async.commit_group;");
        const float *st = fsm + kt % DTC_STAGES * DTC_SPLIT_STAGE;
        dtc_split_slice(acc, st + wm * DTC_SPLIT_LD, st + (DTC_BM + wn) * DTC_SPLIT_LD,
                        st + (DTC_BM + DTC_BN + wn) * DTC_SPLIT_LD, g, t);
    }
    if (S == 1) {
        dtc_store_y<4, 4, 16>(y, b, acc, B, OUT, row0 + wm, col0 + wn, g, t);
        return;
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory"); /* (groups past the last slice are empty) */
    __syncthreads();                                     /* every warp is done with the stages */
    dtc_reduce_store<4, 4, 16>(y, b, acc, fsm, B, OUT, row0, col0, wm, wn, g, t);
}

/* ---------------------------------------------------------------- launchers */

typedef void (*dtc_kernel_fn)(float *, const float *, const unsigned char *, const float *, int, int, int);

/* fn on grid (its z the split of k, S) of `threads` threads and smem bytes of dynamic shared memory, the S blocks of
 * a tile one cluster where S > 1. */
template <typename... P, typename... A>
static int dtc_launch(void (*fn)(P...), dim3 grid, int threads, size_t smem, int S, cudaStream_t stream, nc_error *err,
                      A... args) {
    if (S == 1) {
        fn<<<grid, threads, smem, stream>>>(args...);
    } else {
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = 1, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = (unsigned)S;
        cfg.gridDim = grid, cfg.blockDim = dim3((unsigned)threads), cfg.dynamicSmemBytes = smem, cfg.stream = stream;
        cfg.attrs = attr, cfg.numAttrs = 1;
        CUDA_RET(cudaLaunchKernelEx(&cfg, fn, args...));
    }
    CUDA_LAUNCHED();
    return NC_OK;
}

template <int P> static dtc_kernel_fn dwg_pick(int vec) {
    return vec == 4 ? dense_wg_kernel<P, 4> : dense_wg_kernel<P, 1>;
}

typedef void (*dws_kernel_fn)(float *, const float *, CUtensorMap, const float *, int, int, int);

template <int P> static dws_kernel_fn dws_pick(int vec) {
    return vec == 4 ? dense_ws_kernel<P, 4> : dense_ws_kernel<P, 1>;
}

PFN_cuTensorMapEncodeTiled_v12000 nc_cuda_tma_encoder(void) {
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return (PFN_cuTensorMapEncodeTiled_v12000)fn;
}

/* The tensor map dense_ws_kernel copies w's tiles by: the prepared weights wp at precision (tf32, 3xtf32, fp16,
 * bf16), parts (3xtf32's high parts, then its low parts; one part else) of OUT rows of KP elements, a box of one slice
 * (32 k) by DWS_BN rows of one part under the swizzle of dwg_at, rows past OUT zeros. */
static int dws_map(CUtensorMap *map, int precision, const void *wp, int OUT, int KP, nc_error *err) {
    static const PFN_cuTensorMapEncodeTiled_v12000 encode = nc_cuda_tma_encoder();
    if (!encode) return nc_fail(err, NC_ERR_DEVICE, "dense: the driver has no cuTensorMapEncodeTiled");
    const int is32 = precision == NC_PRECISION_TF32 || precision == NC_PRECISION_3XTF32,
              parts = precision == NC_PRECISION_3XTF32 ? 2 : 1;
    const cuuint64_t row = (cuuint64_t)KP * (is32 ? 4 : 2);
    const cuuint64_t dims[3] = {(cuuint64_t)KP, (cuuint64_t)OUT, (cuuint64_t)parts}, strides[2] = {row, row * OUT};
    const cuuint32_t box[3] = {DTC_BK, DWS_BN, 1}, steps[3] = {1, 1, 1};
    const CUresult r = encode(map, is32 ? CU_TENSOR_MAP_DATA_TYPE_UINT32 : CU_TENSOR_MAP_DATA_TYPE_UINT16, 3,
                              const_cast<void *>(wp), dims, strides, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
                              is32 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return nc_fail(err, NC_ERR_DEVICE, "dense: cuTensorMapEncodeTiled of %d x %d weights: error %d", OUT, KP,
                       (int)r);
    return NC_OK;
}

template <int P> static dtc_kernel_fn dtc_pick(int vec) {
    return vec == 4 ? dense_tc_kernel<P, 4> : dense_tc_kernel<P, 1>;
}

static int dtc_check_precision(int precision, nc_error *err) {
    if (precision < NC_PRECISION_FP32 || precision >= NC_PRECISION_COUNT)
        return nc_fail(err, NC_ERR_ARG, "dense: precision %d: expected 0..%d", precision, NC_PRECISION_COUNT - 1);
    return NC_OK;
}

/* Whether precision's prepared weights are a converted copy (else they are w itself, fp32): the tensor-core
 * precisions, which are also those that wgmma runs. */
static int dtc_converts(int precision) {
    return precision > NC_PRECISION_FP32 && precision < NC_PRECISION_COUNT;
}

extern "C" size_t nc_cuda_dense_tc_prepared_size(int precision, int IN, int OUT) {
    if (IN <= 0 || OUT <= 0) return 0;
    if (!dtc_converts(precision)) return (size_t)OUT * IN * sizeof(float);
    const size_t n = (size_t)OUT * DTC_KP(IN);
    return precision == NC_PRECISION_3XTF32 ? 2 * n * 4 : n * (precision == NC_PRECISION_TF32 ? 4 : 2);
}

extern "C" int nc_cuda_dense_tc_prepare(int precision, void *wp, const float *w, int IN, int OUT, cudaStream_t stream,
                                        nc_error *err) {
    int rc = dtc_check_precision(precision, err);
    if (rc) return rc;
    const size_t bytes = nc_cuda_dense_tc_prepared_size(precision, IN, OUT);
    if (bytes == 0) return NC_OK;
    if (!dtc_converts(precision)) {
        CUDA_RET(cudaMemcpyAsync(wp, w, bytes, cudaMemcpyDeviceToDevice, stream));
        return NC_OK;
    }
    const size_t n = (size_t)OUT * DTC_KP(IN);
    const unsigned blocks = (unsigned)(n / 256 + 1 < 4096 ? n / 256 + 1 : 4096);
    switch (precision) {
    case NC_PRECISION_TF32:
        dense_tc_prepare_kernel<NC_PRECISION_TF32><<<blocks, 256, 0, stream>>>(wp, w, IN, DTC_KP(IN), OUT);
        break;
    case NC_PRECISION_3XTF32:
        dense_tc_prepare_kernel<NC_PRECISION_3XTF32><<<blocks, 256, 0, stream>>>(wp, w, IN, DTC_KP(IN), OUT);
        break;
    case NC_PRECISION_FP16:
        dense_tc_prepare_kernel<NC_PRECISION_FP16><<<blocks, 256, 0, stream>>>(wp, w, IN, DTC_KP(IN), OUT);
        break;
    default: dense_tc_prepare_kernel<NC_PRECISION_BF16><<<blocks, 256, 0, stream>>>(wp, w, IN, DTC_KP(IN), OUT);
    }
    CUDA_LAUNCHED();
    return NC_OK;
}

/* The blocks k is split among (grid z, a cluster) for a layer of IN inputs on a device of compute capability major:
 * the most, up to DTC_MAX_KSPLITS (3xtf32: DTC_MAX_KSPLITS_3X) and a power of 2, that leave each at least
 * DTC_KSPLIT_MIN slices of 32; 1 for fp32 and before sm_90. A function of the layer, the precision and the device
 * only, never of B, so that a row's sums and their order do not depend on B. */
static int dtc_auto_ksplits(int precision, int IN, int major) {
    int S = 1;
    if (precision == NC_PRECISION_FP32 || major < 9) return S;
    const int slices = DTC_KP(IN) / DTC_BK,
              most = precision == NC_PRECISION_3XTF32 ? DTC_MAX_KSPLITS_3X : DTC_MAX_KSPLITS;
    while (S < most && slices / (2 * S) >= DTC_KSPLIT_MIN) S *= 2;
    return S;
}

/* 1 where the tensor-core precisions (tf32, 3xtf32, fp16, bf16) run on wgmma: this file built for sm_90a
 * (NC_DENSE_SM90A, CMakeLists.txt) and the device sm_90 (the machine code of sm_90a runs on no other). */
static int dwg_runs(int major, int minor) {
#if defined(NC_DENSE_SM90A)
    return major == 9 && minor == 0;
#else
    (void)major, (void)minor;
    return 0;
#endif
}

extern "C" int nc_cuda_dense_tc_has_wgmma(int precision, nc_error *err) {
    int major = 0, minor = 0;
    const int rc = nc_cuda_device_cc(&major, &minor, err);
    return rc ? -rc : dtc_converts(precision) && dwg_runs(major, minor);
}

extern "C" int nc_cuda_dense_tc_ksplits(int precision, int IN, nc_error *err) {
    int major = 0, minor = 0;
    const int rc = precision == NC_PRECISION_FP32 ? NC_OK : nc_cuda_device_cc(&major, &minor, err);
    return rc ? -rc : dtc_auto_ksplits(precision, IN, major);
}

/* Whether 3xtf32 goes faster on dense_ws_kernel than on dense_wg_kernel, both one block an SM and k split among S
 * blocks: a warp-specialized tile has twice the columns and took 1.5 times as long (H100, the 2017 dense layer at B
 * 1280, where either kernel's blocks are one wave), so it wins where its waves are fewer than 0.675 (1.35 / 2) of
 * dense_wg_kernel's. On the H100 (bench/ab/dense_one, 2026-11-26; docs/PERFORMANCE-LOG.md) that took the 2017 layer at
 * B 10000 (3 waves against 5) 1.09 times as fast and 2019 spring's 1296 x 140 (1 against 2) 1.36, and left B 1280 and
 * below (1 against 1), 1.5 times as fast on dense_wg_kernel, to it. */
static int dws_3x_wins(int B, int OUT, int S, int sms) {
    const long rows = (B + DTC_BM - 1) / DTC_BM;
    const long ws = (OUT + DWS_BN - 1) / DWS_BN * rows * S, wg = (OUT + DTC_BN - 1) / DTC_BN * rows * S;
    return 40 * ((ws + sms - 1) / sms) < 27 * ((wg + sms - 1) / sms);
}

/* dense_ws_kernel at precision (tf32, 3xtf32, fp16, bf16) on B rows of x, k split among S blocks, x's loads VEC
 * wide. */
static int dws_forward(int precision, float *y, const float *x, const void *wp, const float *b, int B, int IN, int OUT,
                       int S, int vec, cudaStream_t stream, nc_error *err) {
    CUtensorMap map;
    int rc = dws_map(&map, precision, wp, OUT, DTC_KP(IN), err);
    if (rc) return rc;
    dws_kernel_fn fn;
    size_t smem;
    switch (precision) {
    case NC_PRECISION_TF32: fn = dws_pick<NC_PRECISION_TF32>(vec), smem = DWS_SMEM(NC_PRECISION_TF32); break;
    case NC_PRECISION_3XTF32: fn = dws_pick<NC_PRECISION_3XTF32>(vec), smem = DWS_SMEM(NC_PRECISION_3XTF32); break;
    case NC_PRECISION_FP16: fn = dws_pick<NC_PRECISION_FP16>(vec), smem = DWS_SMEM(NC_PRECISION_FP16); break;
    default: fn = dws_pick<NC_PRECISION_BF16>(vec), smem = DWS_SMEM(NC_PRECISION_BF16);
    }
    if (S > 1 && smem < DTC_RED_SMEM_BN(DWS_BN) + 1024) smem = DTC_RED_SMEM_BN(DWS_BN) + 1024;
    CUDA_RET(cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const int slice = 65535 * DTC_BM; /* grid y's limit, as dense_tc_kernel's */
    for (int b0 = 0; b0 < B; b0 += slice) {
        const int nb = B - b0 < slice ? B - b0 : slice;
        const dim3 grid((unsigned)((OUT + DWS_BN - 1) / DWS_BN), (unsigned)((nb + DTC_BM - 1) / DTC_BM), (unsigned)S);
        rc = dtc_launch(fn, grid, DWS_THREADS, smem, S, stream, err, y + (size_t)b0 * OUT, x + (size_t)b0 * IN, map, b,
                        nb, IN, OUT);
        if (rc) return rc;
    }
    return NC_OK;
}

extern "C" int nc_cuda_dense_tc_forward_prepared(int precision, float *y, const float *x, const void *wp,
                                                 const float *b, int B, int IN, int OUT, cudaStream_t stream,
                                                 nc_error *err) {
    return nc_cuda_dense_tc_forward_ksplit(precision, y, x, wp, b, B, IN, OUT, 0, stream, err);
}

extern "C" int nc_cuda_dense_tc_forward_ksplit(int precision, float *y, const float *x, const void *wp, const float *b,
                                               int B, int IN, int OUT, int splits, cudaStream_t stream, nc_error *err) {
    return nc_cuda_dense_tc_forward_kernel(precision, y, x, wp, b, B, IN, OUT, splits, NC_DENSE_TC_AUTO, stream, err);
}

extern "C" int nc_cuda_dense_tc_forward_kernel(int precision, float *y, const float *x, const void *wp, const float *b,
                                               int B, int IN, int OUT, int splits, int kernel, cudaStream_t stream,
                                               nc_error *err) {
    int rc = dtc_check_precision(precision, err);
    if (rc) return rc;
    if (kernel < NC_DENSE_TC_AUTO || kernel > NC_DENSE_TC_WS)
        return nc_fail(err, NC_ERR_ARG,
                       "dense: tensor-core kernel %d: expected 0 (auto), 1 (mma.sync), 2 (wgmma) or 3 (wgmma, "
                       "warp-specialized)",
                       kernel);
    int major = 0, minor = 0; /* asked once a call: the split and the kernel both depend on it */
    if (precision != NC_PRECISION_FP32 && (rc = nc_cuda_device_cc(&major, &minor, err))) return rc;
    const int wg = kernel != NC_DENSE_TC_MMA && dtc_converts(precision) && dwg_runs(major, minor); /* on wgmma */
    if (kernel == NC_DENSE_TC_WGMMA && !wg)
        return nc_fail(err, NC_ERR_ARG,
                       "dense: %s on wgmma needs tf32, 3xtf32, fp16 or bf16, a build for sm_90a and an sm_90 device",
                       nc_precision_name(precision));
    /* The warp-specialized kernel on wgmma: asked for, or by default where B fills more than one tile of rows (on
     * one, it has half dense_wg_kernel's blocks: H100, B 100, tf32 0.057 ms against 0.051), and at 3xtf32 where its
     * waves are few enough (dws_3x_wins). The two give the same bits, so that the choice may depend on B. */
    int ws = wg && (kernel == NC_DENSE_TC_WS || (kernel == NC_DENSE_TC_AUTO && B > DTC_BM));
    if (kernel == NC_DENSE_TC_WS && !ws)
        return nc_fail(err, NC_ERR_ARG,
                       "dense: %s on warp-specialized wgmma needs tf32, 3xtf32, fp16 or bf16, a build for sm_90a and "
                       "an sm_90 device",
                       nc_precision_name(precision));
    int S = splits;
    if (S == 0) { /* the layer's own split, which already heeds the precision and the device */
        S = dtc_auto_ksplits(precision, IN, major);
    } else if (S < 1 || S > DTC_MAX_KSPLITS || (S & (S - 1)) || (S > 1 && precision == NC_PRECISION_FP32)) {
        return nc_fail(err, NC_ERR_ARG, "dense: k split among %d blocks: expected 1, 2, 4 or 8 (1 for fp32)", splits);
    } else if (S > 1 && major < 9) { /* asked for: clusters */
        return nc_fail(err, NC_ERR_ARG, "dense: k split among %d blocks needs sm_90 or later", S);
    }
    if (precision == NC_PRECISION_FP32)
        return nc_cuda_dense_forward(y, x, (const float *)wp, b, B, IN, OUT, stream, err);
    if (B <= 0 || OUT <= 0) return NC_OK;
    /* Grid y is limited to 65535 tiles of images: a larger batch goes in slices. */
    const int slice = 65535 * DTC_BM;
    if ((uintptr_t)wp % 16 != 0)
        return nc_fail(err, NC_ERR_ARG, "dense: prepared weights at %p: expected 16-byte alignment", wp);
    /* x's loads: the widest that every row start allows (16 or 4 bytes; 3xtf32 on mma.sync 8 as well). */
    const uintptr_t starts = (uintptr_t)x | ((uintptr_t)IN * sizeof(float));
    const int vec = starts % 16 == 0 ? 4 : 1;
    if (ws && kernel == NC_DENSE_TC_AUTO && precision == NC_PRECISION_3XTF32) {
        int device = 0, sms = 0;
        CUDA_RET(cudaGetDevice(&device));
        CUDA_RET(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        ws = dws_3x_wins(B, OUT, S, sms);
    }
    if (ws) return dws_forward(precision, y, x, wp, b, B, IN, OUT, S, vec, stream, err);
    dtc_kernel_fn fn = NULL;
    size_t smem = 0;
    int threads = DTC_THREADS;
    switch (precision + (wg ? NC_PRECISION_COUNT : 0)) {
    case NC_PRECISION_TF32: fn = dtc_pick<NC_PRECISION_TF32>(vec), smem = DTC_SMEM(NC_PRECISION_TF32); break;
    case NC_PRECISION_3XTF32:
        fn = vec == 4 ? dtc_split_kernel<4> : starts % 8 == 0 ? dtc_split_kernel<2> : dtc_split_kernel<1>;
        smem = DTC_SPLIT_SMEM, threads = DTC_SPLIT_THREADS;
        break;
    case NC_PRECISION_FP16: fn = dtc_pick<NC_PRECISION_FP16>(vec), smem = DTC_SMEM(NC_PRECISION_FP16); break;
    case NC_PRECISION_BF16: fn = dtc_pick<NC_PRECISION_BF16>(vec), smem = DTC_SMEM(NC_PRECISION_BF16); break;
    case NC_PRECISION_COUNT + NC_PRECISION_TF32:
        fn = dwg_pick<NC_PRECISION_TF32>(vec), smem = DWG_SMEM(NC_PRECISION_TF32);
        break;
    case NC_PRECISION_COUNT + NC_PRECISION_3XTF32:
        fn = dwg_pick<NC_PRECISION_3XTF32>(vec), smem = DWG_SMEM(NC_PRECISION_3XTF32);
        break;
    case NC_PRECISION_COUNT + NC_PRECISION_FP16:
        fn = dwg_pick<NC_PRECISION_FP16>(vec), smem = DWG_SMEM(NC_PRECISION_FP16);
        break;
    default: fn = dwg_pick<NC_PRECISION_BF16>(vec), smem = DWG_SMEM(NC_PRECISION_BF16);
    }
    /* A split k's sums take 69.6 KB once the stages are done with (wgmma: from the stages' 1024-byte aligned start). */
    const size_t red = DTC_RED_SMEM_BN(DTC_BN) + (wg ? 1024 : 0);
    if (S > 1 && smem < red) smem = red;
    /* Up to 193 KB a block (3xtf32 on wgmma), and the largest shared-memory carveout: two blocks an SM where they
     * fit (tf32's 107.5 KB on mma.sync). */
    CUDA_RET(cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CUDA_RET(cudaFuncSetAttribute((const void *)fn, cudaFuncAttributePreferredSharedMemoryCarveout,
                                  cudaSharedmemCarveoutMaxShared));
    for (int b0 = 0; b0 < B; b0 += slice) {
        const int nb = B - b0 < slice ? B - b0 : slice;
        const dim3 grid((unsigned)((OUT + DTC_BN - 1) / DTC_BN), (unsigned)((nb + DTC_BM - 1) / DTC_BM), (unsigned)S);
        rc = dtc_launch(fn, grid, threads, smem, S, stream, err, y + (size_t)b0 * OUT, x + (size_t)b0 * IN,
                        (const unsigned char *)wp, b, nb, IN, OUT);
        if (rc) return rc;
    }
    return NC_OK;
}

extern "C" int nc_cuda_dense_tc_forward(int precision, float *y, const float *x, const float *w, const float *b, int B,
                                        int IN, int OUT, cudaStream_t stream, nc_error *err) {
    int rc = dtc_check_precision(precision, err);
    if (rc) return rc;
    if (!dtc_converts(precision) || B <= 0 || OUT <= 0)
        return nc_cuda_dense_tc_forward_prepared(precision, y, x, w, b, B, IN, OUT, stream, err);
    /* The prepared copy, stream-ordered: allocated, filled, used and freed in the stream's order, so that no
     * host synchronisation is needed and the pool reuses the block on the next call. */
    void *wp = NULL;
    const size_t bytes = nc_cuda_dense_tc_prepared_size(precision, IN, OUT);
    if (bytes > 0) CUDA_RET(cudaMallocAsync(&wp, bytes, stream));
    rc = nc_cuda_dense_tc_prepare(precision, wp, w, IN, OUT, stream, err);
    if (!rc) rc = nc_cuda_dense_tc_forward_prepared(precision, y, x, wp, b, B, IN, OUT, stream, err);
    if (wp) {
        const int frc = nc_cuda_status(cudaFreeAsync(wp, stream), err, __FILE__, __LINE__, "cudaFreeAsync(wp, stream)");
        if (!rc) rc = frc;
    }
    return rc;
}
