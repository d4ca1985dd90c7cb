/*
 * Dense layers on the tensor cores: y = x w^T + b as a GEMM on mma.sync.m16n8k8 TF32, for the cuda backend's
 * reduced-precision options (the default, exact fp32, is layers.cu's SIMT SGEMM).
 *
 *   tf32    one MMA per product, both operands rounded to TF32 (10-bit mantissa): reduced precision.
 *           nanoconv eval --model M --backend cuda --precision tf32
 *   3xtf32  each operand split into a TF32 high part and the TF32 rounding of its remainder, three MMAs
 *           (lo x hi + hi x lo + hi x hi; lo x lo is below fp32's rounding): near-exact, not bitwise fp32.
 *           nanoconv eval --model M --backend cuda --precision 3xtf32
 *
 * GEMM rows are images (x is (B, IN), row-major: PTX's "row" A), columns are outputs (w is (OUT, IN): B[k][n] =
 * w[n][k], PTX's "col" B). A block computes a 128 x 128 tile of y with 8 warps (2 x 4, 64 x 32 each: 4 x 4
 * m16n8 tiles, 64 accumulators a thread), over k in slices of 32 staged by cp.async into two shared-memory
 * stages (the next slice loads while this one is multiplied). Rows of a stage are padded to 36 floats so that a
 * fragment load (lanes at row g, column t: bank 4g + t) is conflict-free. Copies are 16 bytes where x, w and IN
 * allow it, else 8 or 4 (a model file's weights need not be 16-byte aligned: the 2017 dense layer's start at
 * float 1250); rows and columns past B, OUT and IN are zero-filled by the copy itself.
 */
#include "cuda/cuda_check.h"
#include "cuda/cuda_layers.h"

#define DTC_BM 128
#define DTC_BN 128
#define DTC_BK 32
#define DTC_LD (DTC_BK + 4)
#define DTC_THREADS 256
#define DTC_STAGE ((DTC_BM + DTC_BN) * DTC_LD) /* floats of one stage: the x tile, then the w tile */

__device__ __forceinline__ uint32_t dtc_tf32(float v) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

/* d += a b on one m16n8k8 tile (fragments as PTX ISA's m16n8k8 .tf32 layout; see conv_tc.cu). */
__device__ __forceinline__ void dtc_mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Copies one k slice of the x and w tiles into stage s: 128 rows x 32 floats each, in chunks of VEC floats (4, 2
 * or 1), 2 x 16 / VEC chunks a thread; a chunk past the matrix copies 0 bytes and zero-fills. */
template <int VEC>
__device__ __forceinline__ void dtc_load(float *s, const float *x, const float *w, int B, int IN, int OUT, int row0,
                                         int col0, int k0) {
    constexpr int PER_ROW = DTC_BK / VEC, PER_T = DTC_BM * PER_ROW / DTC_THREADS; // chunks: a row, a thread a tile
    const int tid = (int)threadIdx.x;
#pragma unroll
    for (int i = 0; i < 2 * PER_T; i++) {
        const int chunk = tid + (i % PER_T) * DTC_THREADS, r = chunk / PER_ROW, c = chunk % PER_ROW * VEC;
        const int tile_w = i >= PER_T, gr = (tile_w ? col0 : row0) + r, gk = k0 + c;
        const int ok = gr < (tile_w ? OUT : B) && gk < IN;
        const float *src = ok ? (tile_w ? w : x) + (size_t)gr * IN + gk : x;
        float *dst = s + (tile_w ? DTC_BM * DTC_LD : 0) + r * DTC_LD + c;
        const uint32_t sa = (uint32_t)__cvta_generic_to_shared(dst);
        if constexpr (VEC == 4)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(sa), "l"(src), "r"(ok ? 16 : 0));
        else
            asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(sa), "l"(src), "n"(VEC * 4),
                         "r"(ok ? VEC * 4 : 0));
    }
    asm volatile("cp.async.commit_group;");
}

/* Dynamic shared memory: two stages of (x tile (128, 36), w tile (128, 36)). SPLIT: 3xTF32; VEC: floats a copy. */
template <int SPLIT, int VEC>
__global__ void __launch_bounds__(DTC_THREADS)
    dense_tc_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ w,
                    const float *__restrict__ b, int B, int IN, int OUT) {
    extern __shared__ __align__(16) float dsm[];
    const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32; // the warp's 64 x 32 within the block tile
    const int row0 = (int)blockIdx.y * DTC_BM, col0 = (int)blockIdx.x * DTC_BN;
    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;
    const int tiles = (IN + DTC_BK - 1) / DTC_BK;
    dtc_load<VEC>(dsm, x, w, B, IN, OUT, row0, col0, 0);
    for (int kt = 0; kt < tiles; kt++) {
        if (kt + 1 < tiles) {
            dtc_load<VEC>(dsm + ((kt + 1) & 1) * DTC_STAGE, x, w, B, IN, OUT, row0, col0, (kt + 1) * DTC_BK);
            asm volatile("cp.async.wait_group 1;");
        } else {
            asm volatile("cp.async.wait_group 0;");
        }
        __syncthreads(); /* stage kt & 1 is in for every thread */
        const float *xs = dsm + (kt & 1) * DTC_STAGE, *ws = xs + DTC_BM * DTC_LD;
#pragma unroll
        for (int kk = 0; kk < DTC_BK; kk += 8) {
            uint32_t ah[4][4], al[4][4], bh[4][2], bl[4][2];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int e = 0; e < 4; e++) { /* a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4) */
                    const float v = xs[(wm + i * 16 + g + 8 * (e & 1)) * DTC_LD + kk + t + 4 * (e >> 1)];
                    ah[i][e] = dtc_tf32(v);
                    if constexpr (SPLIT) al[i][e] = dtc_tf32(v - __uint_as_float(ah[i][e]));
                }
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int e = 0; e < 2; e++) { /* b0 (k = t, n = g), b1 (k = t+4, n = g) */
                    const float v = ws[(wn + j * 8 + g) * DTC_LD + kk + t + 4 * e];
                    bh[j][e] = dtc_tf32(v);
                    if constexpr (SPLIT) bl[j][e] = dtc_tf32(v - __uint_as_float(bh[j][e]));
                }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    if constexpr (SPLIT) {
                        dtc_mma(acc[i][j], al[i], bh[j]);
                        dtc_mma(acc[i][j], ah[i], bl[j]);
                    }
                    dtc_mma(acc[i][j], ah[i], bh[j]);
                }
        }
        __syncthreads(); /* everyone is done with stage kt & 1 before it is loaded again */
    }
    /* acc[i][j]: rows wm + 16i + g (+8 for e >= 2), columns wn + 8j + 2t (+1 for odd e). */
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int r = row0 + wm + i * 16 + g + 8 * (e >> 1), c = col0 + wn + j * 8 + 2 * t + (e & 1);
                if (r < B && c < OUT) y[(size_t)r * OUT + c] = acc[i][j][e] + (b ? b[c] : 0.0f);
            }
}

typedef void (*dtc_kernel_fn)(float *, const float *, const float *, const float *, int, int, int);

template <int SPLIT> static dtc_kernel_fn dtc_pick(int vec) {
    return vec == 4 ? dense_tc_kernel<SPLIT, 4> : vec == 2 ? dense_tc_kernel<SPLIT, 2> : dense_tc_kernel<SPLIT, 1>;
}

extern "C" int nc_cuda_dense_tc_forward(int precision, float *y, const float *x, const float *w, const float *b, int B,
                                        int IN, int OUT, cudaStream_t stream, nc_error *err) {
    if (precision != NC_PRECISION_TF32 && precision != NC_PRECISION_3XTF32)
        return nc_cuda_dense_forward(y, x, w, b, B, IN, OUT, stream, err);
    if (B <= 0 || OUT <= 0) return NC_OK;
    /* The widest copy that every row start allows: 16, 8 or 4 bytes. */
    const uintptr_t starts = (uintptr_t)x | (uintptr_t)w | ((uintptr_t)IN * sizeof(float));
    const int vec = starts % 16 == 0 ? 4 : starts % 8 == 0 ? 2 : 1;
    const dtc_kernel_fn fn = precision == NC_PRECISION_TF32 ? dtc_pick<0>(vec) : dtc_pick<1>(vec);
    const size_t smem = 2 * DTC_STAGE * sizeof(float);
    CUDA_RET(cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    /* Grid y is limited to 65535 tiles of images: a larger batch goes in slices. */
    const int slice = 65535 * DTC_BM;
    for (int b0 = 0; b0 < B; b0 += slice) {
        const int nb = B - b0 < slice ? B - b0 : slice;
        const dim3 grid((unsigned)((OUT + DTC_BN - 1) / DTC_BN), (unsigned)((nb + DTC_BM - 1) / DTC_BM));
        fn<<<grid, DTC_THREADS, smem, stream>>>(y + (size_t)b0 * OUT, x + (size_t)b0 * IN, w, b, nb, IN, OUT);
        CUDA_LAUNCHED();
    }
    return NC_OK;
}
