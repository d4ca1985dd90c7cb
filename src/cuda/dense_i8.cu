/*
 * The fp32 dense layer on the int8 tensor cores: y = x w^T + b, its products summed exactly in integers (the
 * splitting of Ozaki's scheme).
 *
 * Each row of x (an image's inputs) and of w (an output's weights) is scaled by a power of two and cut into three
 * signed 8-bit slices (i8_slice_rows):
 *     v = 2^(e - 7) (s0 + s1 / 254 + s2 / 254^2) + r,   |s0|, |s1|, |s2| <= 127,   |r| <= 2^(e - 7) (1/2 254^-2 +
 * 2^-21), e the least integer with max|v| 2^(7 - e) <= 127 over the row; each slice is the nearest integer to 254^q
 * times what the slices before it leave (in integers, exactly; see i8_slice_rows). A value of the row is so held to
 * about 2^-23 of the row's largest (fp32's own rounding is 2^-24 of each value).
 *
 * The tensor cores (mma.sync m16n8k32, or wgmma m64n128k32 on sm_90a: s8 x s8 -> s32) sum the slices' products over
 * k exactly: level l is the sum over qa + qb = l of x's slice qa times w's slice qb, for l = 0, 1, 2 (six products of
 * the nine; levels 3 and 4, below level 0 by 254^3 and more, are left out). Then, in fp64,
 * y = 2^(ex + ew - 14) (L0 + (L1 + L2 / 254) / 254) + b, rounded once to fp32. A level's sum is at most 3 * 127^2 * k
 * in magnitude, within int32 for k <= NC_DENSE_I8_MAX_IN.
 *
 * What it gives:
 *  - The same bits for a row whatever the batch, the kernel, the tiles or the split of k: integer sums are exact in any
 *    order, and each row's scale depends on that row alone (the pieces of gpu_plan.cu rely on it). k is split among
 *    blocks where a batch's tiles would leave SMs idle, their partial levels added by integer atomics into the scratch
 *    and combined by i8_finish: the same bits.
 *  - Errors smaller than the fp32 sums' on the zoo's layers. On the 2017 layer's shape (weights uniform in +-0.0118,
 *    inputs tanh of uniform in +-3; H200, bench/results/gpu-2026-11-28-s55-i8.log) 2.3e-9 of sum|x w| on average and
 *    2.1e-8 at most over 5 million outputs, where the sequential fmaf sums of layers.cu's SIMT kernels (and cpu-ref's)
 *    make 1.6e-8 and 1.4e-6, and cuBLAS's SGEMM 6.5e-9 and 1.5e-7; tests/gpu/test_dense_i8.c checks it on the zoo's
 *    shapes. The bound is of another shape: at most about 2^-23 (max|x_row| sum|w_col| + max|w_col| sum|x_row|) and
 *    2e-3 k 2^(ex + ew - 14) for the levels left out, where fp32's grows with sum|x w| and k, so that a row whose
 *    values span more than about 2^24 loses its smallest ones (fp32 keeps them, with its larger errors elsewhere).
 *  - Non-finite inputs: a row of x or w holding inf or NaN gives NaN outputs (its scale is marked, I8_BAD).
 *  - Its cost: x is sliced on every call (7 bytes an input through memory; 0.16 ms for the 2017 layer at B 10000 on
 *    the H200 when each row was read twice, before session 57 kept a row in registers), w once, when a backend
 *    prepares its weights; six int8 products where fp32 does one, at 16 times fp32's rate on the H100's tensor cores.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "cuda/cp_async.cuh"
#include "cuda/hopper.cuh"
#include "cuda/cuda_check.h"
#include "cuda/cuda_layers.h"

#define I8_SLICES 3
#define I8_LEVELS 3
#define I8_BK 64       /* k bytes a stage */
#define I8_PITCH 80    /* a staged row's bytes: ldmatrix's 8 rows of 16 bytes 20 words apart, in distinct banks */
#define I8_BAD INT_MIN /* the scale of a row holding inf or NaN */
#define I8_SLICE_THREADS 256

/* k padded to the stages' I8_BK: a slice's row in memory. */
static inline int i8_kp(int IN) {
    return (IN + I8_BK - 1) / I8_BK * I8_BK;
}

static size_t i8_align(size_t n) {
    return (n + 255) / 256 * 256;
}

/* ------------------------------------------------------------------ slicing */

/* Four values' slices (t 2^20 = v 2^sh, see i8_slice_rows) as byte j of word[q]; zeros where bad. */
__device__ __forceinline__ void i8_slice4(unsigned (&word)[I8_SLICES], const float (&q)[4], int sh, int bad) {
#pragma unroll
    for (int l = 0; l < I8_SLICES; l++) word[l] = 0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        int T = bad ? 0 : __float2int_rn(ldexpf(q[j], sh));
#pragma unroll
        for (int l = 0; l < I8_SLICES; l++) {
            const int d = (T + (1 << 19)) >> 20; /* nearest, halves up; |d| <= 127 */
            word[l] |= (unsigned)(d & 0xff) << (8 * j);
            T = (T - d * (1 << 20)) * 254; /* |T - d 2^20| <= 2^19: within 2^28 */
        }
    }
}

/* A row's scale exponent e from its largest |v| (m, over the block): the least with m 2^(7 - e) <= 127. */
__device__ __forceinline__ int i8_row_e(float m) {
    int e = 0;
    if (m > 0.0f) {
        e = ilogbf(m) + 1; /* m < 2^e */
        if (ldexpf(m, 7 - e) > 127.0f) e++;
    }
    return e;
}

/* Row r of v (n rows of IN floats) into s[q * plane + r * KP + k], q < I8_SLICES (k past IN zero), and its e into
 * ex[r] (I8_BAD where the row holds inf or NaN: its slices are then zero). A block a row at a time, four values a
 * thread at k = 4 (thread + I8_SLICE_THREADS i). NV > 0 (v 16-byte aligned, IN a multiple of 4, KP at most
 * 4 I8_SLICE_THREADS NV): the row read once, by 16-byte loads, its values kept in registers between the block's
 * maximum and the slicing; NV = 0: any row, read twice, a float at a time. The slices in integers: t = v 2^(7 - e)
 * (exact), T = rint(t 2^20) (|T| <= 127 2^20; t's bits below 2^-21 go, a sixteenth of the last slice's rounding),
 * then slice q = round(T_q / 2^20), halves up, with T_0 = T and T_(q+1) = 254 (T_q - 2^20 slice q), exactly. */
template <int NV>
__global__ void __launch_bounds__(I8_SLICE_THREADS)
    i8_slice_rows(signed char *s, int *ex, const float *v, int n, int IN, int KP, size_t plane) {
    __shared__ float red[I8_SLICE_THREADS / 32];
    constexpr int STEP = 4 * I8_SLICE_THREADS;
    for (int r = blockIdx.x; r < n; r += gridDim.x) {
        const float *vr = v + (size_t)r * IN;
        float m = 0.0f;
        int bad = 0;
        float4 q[NV > 0 ? NV : 1];
        if (NV > 0) {
#pragma unroll
            for (int i = 0; i < NV; i++) {
                const int k = 4 * threadIdx.x + STEP * i;
                q[i] = k < IN ? *(const float4 *)(vr + k) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                const float a = fmaxf(fmaxf(fabsf(q[i].x), fabsf(q[i].y)), fmaxf(fabsf(q[i].z), fabsf(q[i].w)));
                bad |= !(fabsf(q[i].x) <= FLT_MAX && fabsf(q[i].y) <= FLT_MAX && fabsf(q[i].z) <= FLT_MAX &&
                         fabsf(q[i].w) <= FLT_MAX); /* inf or NaN (which fmaxf passes over) */
                m = fmaxf(m, a);
            }
        } else {
            for (int k = threadIdx.x; k < IN; k += I8_SLICE_THREADS) {
                const float a = fabsf(vr[k]);
                bad |= !(a <= FLT_MAX);
                m = fmaxf(m, a);
            }
        }
        for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(~0u, m, o));
        if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = m;
        bad = __syncthreads_or(bad);
        m = 0.0f;
        for (int i = 0; i < I8_SLICE_THREADS / 32; i++) m = fmaxf(m, red[i]);
        const int e = i8_row_e(m);
        if (threadIdx.x == 0) ex[r] = bad ? I8_BAD : e;
        const int sh = 27 - e; /* t 2^20 = v 2^(27 - e) */
        unsigned word[I8_SLICES];
        if (NV > 0) {
#pragma unroll
            for (int i = 0; i < NV; i++) {
                const int k = 4 * threadIdx.x + STEP * i;
                if (k >= KP) break;
                const float f[4] = {q[i].x, q[i].y, q[i].z, q[i].w};
                i8_slice4(word, f, sh, bad);
#pragma unroll
                for (int l = 0; l < I8_SLICES; l++) *(unsigned *)(s + l * plane + (size_t)r * KP + k) = word[l];
            }
        } else {
            for (int k = 4 * threadIdx.x; k < KP; k += STEP) {
                float f[4];
#pragma unroll
                for (int j = 0; j < 4; j++) f[j] = k + j < IN ? vr[k + j] : 0.0f;
                i8_slice4(word, f, sh, bad);
#pragma unroll
                for (int l = 0; l < I8_SLICES; l++) *(unsigned *)(s + l * plane + (size_t)r * KP + k) = word[l];
            }
        }
        __syncthreads(); /* red is read before the next row writes it */
    }
}

/* The float4s a thread holds of a row of KP bytes a slice, among the kernels built (0: none fits, the row read twice).
 */
static int i8_slice_nv(int KP) {
    const int need = (KP + 4 * I8_SLICE_THREADS - 1) / (4 * I8_SLICE_THREADS);
    return need <= 2 ? 2 : need <= 4 ? 4 : need <= 8 ? 8 : need <= 12 ? 12 : 0;
}

static int i8_slice(signed char *s, int *ex, const float *v, int n, int IN, cudaStream_t stream, nc_error *err) {
    if (n <= 0) return NC_OK;
    const unsigned grid = n < 32768 ? (unsigned)n : 32768u;
    const int KP = i8_kp(IN);
    const size_t plane = (size_t)n * KP;
    const int nv = (uintptr_t)v % 16 == 0 && IN % 4 == 0 ? i8_slice_nv(KP) : 0;
    switch (nv) {
    case 2: i8_slice_rows<2><<<grid, I8_SLICE_THREADS, 0, stream>>>(s, ex, v, n, IN, KP, plane); break;
    case 4: i8_slice_rows<4><<<grid, I8_SLICE_THREADS, 0, stream>>>(s, ex, v, n, IN, KP, plane); break;
    case 8: i8_slice_rows<8><<<grid, I8_SLICE_THREADS, 0, stream>>>(s, ex, v, n, IN, KP, plane); break;
    case 12: i8_slice_rows<12><<<grid, I8_SLICE_THREADS, 0, stream>>>(s, ex, v, n, IN, KP, plane); break;
    default: i8_slice_rows<0><<<grid, I8_SLICE_THREADS, 0, stream>>>(s, ex, v, n, IN, KP, plane); break;
    }
    CUDA_LAUNCHED();
    return NC_OK;
}

/* ------------------------------------------------------------------ the GEMM */

__device__ __forceinline__ void i8_ldsm4(unsigned (&r)[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"((unsigned)__cvta_generic_to_shared(p)));
}

__device__ __forceinline__ void i8_mma(int (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* One output from its three levels: the same arithmetic in the GEMM's epilogue and in i8_finish, so that a split
 * of k changes no bit. */
__device__ __forceinline__ float i8_combine(int l0, int l1, int l2, int ex, int ew, const float *b, int o) {
    if (ex == I8_BAD || ew == I8_BAD) return __int_as_float(0x7fc00000);
    double t = ((double)l2 * (1.0 / 254.0) + (double)l1) * (1.0 / 254.0) + (double)l0;
    t = ldexp(t, ex + ew - 14);
    if (b) t += (double)b[o];
    return (float)t;
}

/* Output (r, o)'s three levels: combined into y, or added into part[l][r][o] where k is split (i8_finish combines
 * them). */
__device__ __forceinline__ void i8_put(float *y, int *part, const int (&l)[I8_LEVELS], int B, int OUT, int r, int o,
                                       const int *ex, const int *ew, const float *b) {
    const size_t at = (size_t)r * OUT + o;
    if (part) {
#pragma unroll
        for (int q = 0; q < I8_LEVELS; q++) atomicAdd(part + q * (size_t)B * OUT + at, l[q]);
    } else {
        y[at] = i8_combine(l[0], l[1], l[2], ex[r], ew[o], b, o);
    }
}

/* A BM x BN tile of y (images x outputs) over k slices [n0, n1) of I8_BK, warps of (16 FM) x (8 FN), NS stages.
 * xs: x's slices, plane xp apart, rows KP bytes; ws: w's, plane wp apart. grid: x column tiles, y row tiles, z the
 * split of k. With part set, the levels are added into part[l][r][o] (int32, zeroed) for i8_finish; else combined. */
template <int BM, int BN, int FM, int FN, int NS, int MINB>
__global__ void __launch_bounds__(32 * (BM / (16 * FM)) * (BN / (8 * FN)), MINB)
    i8_gemm(float *y, int *part, const signed char *xs, size_t xp, const int *ex, const signed char *ws, size_t wp,
            const int *ew, const float *b, int B, int KP, int OUT, int per_split) {
    constexpr int WM = BM / (16 * FM), WN = BN / (8 * FN), NT = 32 * WM * WN;
    constexpr int SS = I8_SLICES * (BM + BN) * I8_PITCH; /* a stage's bytes: x's slices, then w's */
    static_assert(FN % 2 == 0, "w's fragments are loaded by pairs of n8 tiles");
    extern __shared__ __align__(16) unsigned char i8_smem[];
    const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5, g = lane >> 2, tg = lane & 3;
    const int wm = wid % WM, wn = wid / WM;
    const int i0 = blockIdx.y * BM, o0 = blockIdx.x * BN, nx = B - i0, nw = OUT - o0;
    const int n0 = blockIdx.z * per_split, n1 = min(KP / I8_BK, n0 + per_split), steps = n1 - n0;
    auto copy = [&](int st, int n) {
        const int k0 = (n0 + n) * I8_BK;
        unsigned char *base = i8_smem + st * SS;
#pragma unroll
        for (int e = tid; e < I8_SLICES * BM * (I8_BK / 16); e += NT) {
            const int q = e / (BM * (I8_BK / 16)), r = e / (I8_BK / 16) % BM, kq = e % (I8_BK / 16) * 16;
            const bool in = r < nx;
            nc_cp_async16(base + (q * BM + r) * I8_PITCH + kq, in ? xs + q * xp + (size_t)(i0 + r) * KP + k0 + kq : xs,
                          in ? 16 : 0);
        }
#pragma unroll
        for (int e = tid; e < I8_SLICES * BN * (I8_BK / 16); e += NT) {
            const int q = e / (BN * (I8_BK / 16)), r = e / (I8_BK / 16) % BN, kq = e % (I8_BK / 16) * 16;
            const bool in = r < nw;
            nc_cp_async16(base + (I8_SLICES * BM + q * BN + r) * I8_PITCH + kq,
                          in ? ws + q * wp + (size_t)(o0 + r) * KP + k0 + kq : ws, in ? 16 : 0);
        }
    };
#pragma unroll
    for (int n = 0; n < NS - 1; n++) {
        if (n < steps) copy(n, n);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    int acc[I8_LEVELS][FM][FN][4];
#pragma unroll
    for (int l = 0; l < I8_LEVELS; l++)
#pragma unroll
        for (int i = 0; i < FM; i++)
#pragma unroll
            for (int j = 0; j < FN; j++)
#pragma unroll
                for (int q = 0; q < 4; q++) acc[l][i][j][q] = 0;
    /* ldmatrix's lanes: x (A, m16 x k32): matrix lane / 8 is rows + 8 where odd, k + 16 where >= 2; w (B, two n8 x
     * k32): k + 16 where odd, n + 8 where >= 2. */
    const int ar = (lane & 7) + ((lane >> 3) & 1) * 8, ak = (lane >> 4) * 16;
    const int br = (lane & 7) + (lane >> 4) * 8, bk = ((lane >> 3) & 1) * 16;
    int s = 0;
    for (int n = 0; n < steps; n++) {
        asm volatile("cp.async.wait_group %0;" ::"n"(NS - 2) : "memory");
        __syncthreads();
        if (n + NS - 1 < steps) copy(s == 0 ? NS - 1 : s - 1, n + NS - 1);
        asm volatile("cp.async.commit_group;" ::: "memory");
        const unsigned char *xa = i8_smem + s * SS + (wm * 16 * FM + ar) * I8_PITCH + ak;
        const unsigned char *wb = i8_smem + s * SS + (I8_SLICES * BM + wn * 8 * FN + br) * I8_PITCH + bk;
#pragma unroll
        for (int kb = 0; kb < I8_BK; kb += 32) {
            unsigned a[I8_SLICES][FM][4], c[I8_SLICES][FN][2];
#pragma unroll
            for (int q = 0; q < I8_SLICES; q++) {
#pragma unroll
                for (int i = 0; i < FM; i++) i8_ldsm4(a[q][i], xa + (q * BM + 16 * i) * I8_PITCH + kb);
#pragma unroll
                for (int j = 0; j < FN; j += 2) {
                    unsigned t[4];
                    i8_ldsm4(t, wb + (q * BN + 8 * j) * I8_PITCH + kb);
                    c[q][j][0] = t[0], c[q][j][1] = t[1], c[q][j + 1][0] = t[2], c[q][j + 1][1] = t[3];
                }
            }
#pragma unroll
            for (int l = 0; l < I8_LEVELS; l++)
#pragma unroll
                for (int qa = 0; qa <= l; qa++)
#pragma unroll
                    for (int i = 0; i < FM; i++)
#pragma unroll
                        for (int j = 0; j < FN; j++) i8_mma(acc[l][i][j], a[qa][i], c[l - qa][j][0], c[l - qa][j][1]);
        }
        s = s + 1 == NS ? 0 : s + 1;
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
#pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int j = 0; j < FN; j++)
#pragma unroll
            for (int q = 0; q < 4; q++) {
                const int r = wm * 16 * FM + 16 * i + g + 8 * (q >> 1), o = wn * 8 * FN + 8 * j + 2 * tg + (q & 1);
                if (r >= nx || o >= nw) continue;
                const int l[I8_LEVELS] = {acc[0][i][j][q], acc[1][i][j][q], acc[2][i][j][q]};
                i8_put(y, part, l, B, OUT, i0 + r, o0 + o, ex, ew, b);
            }
}

/* ------------------------------------------------------------------ the GEMM on wgmma (sm_90a) */

/*
 * The same sums on the H100's warpgroup MMA (wgmma.mma_async m64nBNk32 s8), where this file is built for sm_90a
 * (NC_DENSE_SM90A) and the device is sm_90: a block is WG warpgroups on a tile of 64 WG rows of x by BN of w (128, or
 * 80 where that pads OUT less: the zoo's 140- and 160-wide layers take two tiles of 80 where they took two of 128),
 * each warpgroup on its 64 rows with three levels of BN / 2 int32 accumulators a thread; WG 1 runs two blocks an SM,
 * WG 2 one, whose two warpgroups read the same stages of w (half the traffic from L2 a multiply-add). A stage holds a
 * k slice of 64 bytes of x's three slices (64 WG rows) and w's (BN rows), each row 64 bytes under the 64-byte swizzle
 * (16-byte chunk c of row r at chunk c ^ (r / 2 mod 4): the K-major layout a descriptor names, 8 rows a core-matrix
 * group, groups 512 bytes apart). The tensor memory accelerator fills the stages: one thread issues a stage's two
 * copies (x's three slices as one box of 64 k by 64 WG rows by 3, w's of 64 by BN by 3; rows past B or OUT
 * zero-filled), which complete on the stage's `full` mbarrier; each thread arrives on the stage's `empty` mbarrier once
 * its warp's MMAs on it are done, and the copies into a stage wait for all. A warpgroup's 12 MMAs a stage (two k steps
 * of 32, each the six products) are issued before the previous stage's are waited for; no __syncthreads in the loop,
 * NS stages (3 of 36 KB at BN 128, WG 1; 4 of 48 KB, WG 2), the next NS - 1 in flight. Where the tiles fill the SMs
 * more than once but not a whole number of times, each tile of the last, partial wave is cut into pieces along k
 * (i8_tail), whose levels the tile's last piece adds (integers: the same bits). Integer sums: the bits are i8_gemm's.
 * Tiles of 80 (session 56, H200, bench/results/gpu-2026-11-28-h200-s56.*): 10816 x 140 0.563 ms where two tiles of 128
 * took 0.651, 4704 x 160 0.226 (0.285), 4056 x 160 0.199 (0.264), 1296 x 140 0.092 (0.112), x's slicing included.
 * Two warpgroups and the last wave in pieces (session 57, H200, bench/results/gpu-2026-11-28-s57-i8.log, call 3,
 * x's slicing included, B 10000): 7200 x 500 0.482 ms where one warpgroup took 0.581 (two, no pieces, 0.516),
 * 10816 x 140 0.459 (0.555; 0.512), 4704 x 160 0.193 (0.228; 0.216), 4056 x 160 0.179 (0.204; 0.195); 1296 x 140
 * 0.095 (0.092; 0.092). ncu (call 2) on the 2017 layer with two warpgroups and no pieces: 1.56 GB from L2 where one
 * warpgroup moved 2.46, L2 at 34% of its peak (48%), and 316 tiles on 132 SMs, 2.4 waves, the last 40% full.
 * H200, 2026-11-28, the 2017 layer at B 10000 (bench/results/gpu-2026-11-28-s55-i8.log): 0.57 ms with x's slicing
 * (0.16 of it), where i8_gemm took 1.09, the same kernel with its stages copied by cp.async from every thread (and a
 * __syncthreads a stage) 0.96, cuBLAS's int8 GEMMs on the same slices (the three levels as GEMMs over k, 2k and 3k)
 * 0.34 without the slicing, and layers.cu's SIMT kernels 1.68.
 */
/* The wgmma kernel's last, partial wave of tiles cut along k (see i8_tail_split): tiles [0, full) run whole, each
 * of the others as `split` pieces, whose levels meet in part (a slot of 3 BN / 2 ints a thread a piece) and are
 * summed by the tile's last piece to finish (count: pieces done a tile, zeroed before the launch). */
typedef struct {
    int full, split, ncol; /* tiles run whole; pieces a tile of the others (1: none); tiles along OUT */
    int *part;
    unsigned *count;
} i8_tail;

/* The wgmma kernel's geometry: WG warpgroups a block, each on 64 rows of x and the block's BN columns of w. */
template <int BN, int WG> struct i8w_geom {
    static constexpr int BM = 64 * WG, NT = 128 * WG, NS = WG == 1 ? 3 : 4; /* rows, threads, stages */
    static constexpr int MINB = WG == 1 ? 2 : 1;                            /* blocks an SM */
    static constexpr uint32_t XT = BM * I8_BK;                              /* a slice's x tile: 4 KB a warpgroup */
    static constexpr uint32_t WT = BN * I8_BK;                              /* a slice's w tile: 8 KB at BN 128 */
    static constexpr uint32_t STAGE = I8_SLICES * (XT + WT);                /* 36 KB at BN 128, WG 1; 48 KB, WG 2 */
    static constexpr int SMEM = NS * STAGE + 1024;                          /* 1 KB more to align the stages */
};

/* d += a b, m64nBNk32 (BN 128 or 80), s8 operands from shared memory (both K-major), int32 sums: thread (warp w, lane
 * 4g + t) holds d[4j + e] at row 16w + g + 8 (e >> 1), column 8j + 2t + (e & 1). */
#define I8W_D40_REGS                                                                                                   \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "  \
    "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39}"
#define I8W_D40_OPS(d)                                                                                                 \
    "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]),        \
        "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]),         \
        "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]),        \
        "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]),        \
        "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39])
template <int BN> __device__ __forceinline__ void i8w_mma(int (&d)[BN / 2], uint64_t da, uint64_t db) {
    static_assert(BN == 128 || BN == 80, "tiles of 128 or 80 columns");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    if constexpr (BN == 128)
        asm volatile("wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 " NC_WGMMA_D64_REGS ", %64, %65, 1;"
                     : NC_WGMMA_D64_OPS("+r", d)
                     : "l"(da), "l"(db));
    else
        asm volatile("wgmma.mma_async.sync.aligned.m64n80k32.s32.s8.s8 " I8W_D40_REGS ", %40, %41, 1;"
                     : I8W_D40_OPS(d)
                     : "l"(da), "l"(db));
#else
    (void)d, (void)da, (void)db;
#endif
}

/* Keeps the compiler from moving accesses of the accumulators across the wgmma fences and waits. */
template <int R> __device__ __forceinline__ void i8w_hold(int (&acc)[I8_LEVELS][R]) {
#pragma unroll
    for (int l = 0; l < I8_LEVELS; l++)
#pragma unroll
        for (int e = 0; e < R; e++) asm volatile("" : "+r"(acc[l][e])::"memory");
}

/* i8_gemm's arguments and grid on wgmma (see above), x's and w's slices through their tensor maps (i8t_map). */
template <int BN, int WG>
__global__ void __launch_bounds__(i8w_geom<BN, WG>::NT, i8w_geom<BN, WG>::MINB)
    i8t_gemm(float *y, int *part, const __grid_constant__ CUtensorMap xmap, const int *ex,
             const __grid_constant__ CUtensorMap wmap, const int *ew, const float *b, int B, int KP, int OUT,
             int per_split, const i8_tail tail) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(16) unsigned char i8t_raw[];
    __shared__ int last; /* a tail piece: whether this block is its tile's last to finish */
    using G = i8w_geom<BN, WG>;
    constexpr int NS = G::NS;
    __shared__ __align__(8) uint64_t bar[2 * NS]; /* full[NS], then empty[NS] */
    unsigned char *sm = i8t_raw + ((1024 - ((uint32_t)__cvta_generic_to_shared(i8t_raw) & 1023)) & 1023);
    const uint32_t sm0 = (uint32_t)__cvta_generic_to_shared(sm), bars = (uint32_t)__cvta_generic_to_shared(bar);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int wgi = warp >> 2; /* this thread's warpgroup: rows 64 wgi .. 64 wgi + 63 of the tile */
    constexpr uint32_t STAGE = G::STAGE;
    /* block x: tile x where x < tail.full, else piece h of tile tail.full + (x - tail.full) / tail.split */
    const int bx = blockIdx.x, piece = bx >= tail.full && tail.split > 1;
    const int tile = piece ? tail.full + (bx - tail.full) / tail.split : bx,
              h = piece ? (bx - tail.full) % tail.split : 0;
    const int i0 = tile / tail.ncol * G::BM, o0 = tile % tail.ncol * BN, nx = B - i0, nw = OUT - o0;
    int n0 = blockIdx.y * per_split, n1 = min(KP / I8_BK, n0 + per_split);
    if (piece) {
        const int len = n1 - n0;
        n1 = n0 + len * (h + 1) / tail.split;
        n0 += len * h / tail.split;
    }
    const int steps = n1 - n0;
    if (tid == 0) {
        for (int s = 0; s < NS; s++) {
            nc_bar_init(bars + 8 * s, 1);
            nc_bar_init(bars + 8 * (NS + s), G::NT);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    /* thread 0: step n's copies into stage st */
    auto fill = [&](int st, int n) {
        const uint32_t full = bars + 8 * st, dst = sm0 + st * STAGE;
        nc_bar_arrive_tx(full, STAGE);
        nc_tma3d(dst, &xmap, (n0 + n) * I8_BK, i0, 0, full);
        nc_tma3d(dst + I8_SLICES * G::XT, &wmap, (n0 + n) * I8_BK, o0, 0, full);
    };
    if (tid == 0)
        for (int n = 0; n < NS - 1 && n < steps; n++) fill(n, n);
    int acc[I8_LEVELS][BN / 2];
#pragma unroll
    for (int l = 0; l < I8_LEVELS; l++)
#pragma unroll
        for (int e = 0; e < BN / 2; e++) acc[l][e] = 0;
    int s = 0;
    for (int n = 0; n < steps; n++) {
        nc_bar_wait(bars + 8 * s, (n / NS) & 1);
        const uint32_t xa = sm0 + s * STAGE + wgi * 64 * I8_BK, wa = sm0 + s * STAGE + I8_SLICES * G::XT;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        i8w_hold(acc);
#pragma unroll
        for (int ks = 0; ks < I8_BK / 32; ks++)
#pragma unroll
            for (int l = 0; l < I8_LEVELS; l++)
#pragma unroll
                for (int qa = 0; qa <= l; qa++)
                    i8w_mma<BN>(acc[l], nc_wgmma_desc<I8_BK>(xa + qa * G::XT + 32 * ks),
                                nc_wgmma_desc<I8_BK>(wa + (l - qa) * G::WT + 32 * ks));
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); /* step n - 1's */
        i8w_hold(acc);
        const int prev = s == 0 ? NS - 1 : s - 1;
        if (n > 0) nc_bar_arrive(bars + 8 * (NS + prev));
        const int next = n + NS - 1;
        if (tid == 0 && next < steps) { /* into stage prev, once every warp is done with step n - 1 */
            if (next >= NS) nc_bar_wait(bars + 8 * (NS + prev), (next / NS - 1) & 1);
            fill(prev, next);
        }
        s = s + 1 == NS ? 0 : s + 1;
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    i8w_hold(acc);
    if (piece) { /* its levels to its slot; the tile's last piece to finish adds the others' and stores y */
        constexpr int R = I8_LEVELS * BN / 2;
        const int slot = (tile - tail.full) * tail.split;
        int *mine = tail.part + ((size_t)(slot + h) * R) * G::NT + tid;
#pragma unroll
        for (int l = 0; l < I8_LEVELS; l++)
#pragma unroll
            for (int e = 0; e < BN / 2; e++) mine[(l * BN / 2 + e) * G::NT] = acc[l][e];
        __threadfence();
        __syncthreads();
        if (tid == 0) last = atomicAdd(tail.count + tile - tail.full, 1u) == (unsigned)tail.split - 1;
        __syncthreads();
        if (!last) return;
        __threadfence();
        for (int q = 0; q < tail.split; q++) {
            if (q == h) continue;
            const int *theirs = tail.part + ((size_t)(slot + q) * R) * G::NT + tid;
#pragma unroll
            for (int l = 0; l < I8_LEVELS; l++)
#pragma unroll
                for (int e = 0; e < BN / 2; e++) acc[l][e] += __ldcg(theirs + (l * BN / 2 + e) * G::NT);
        }
    }
#pragma unroll
    for (int j = 0; j < BN / 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int r = 16 * warp + g + 8 * (e >> 1), o = 8 * j + 2 * t + (e & 1); /* warp 4 wgi + w: 64 wgi + 16 w */
            if (r >= nx || o >= nw) continue;
            const int l[I8_LEVELS] = {acc[0][4 * j + e], acc[1][4 * j + e], acc[2][4 * j + e]};
            i8_put(y, part, l, B, OUT, i0 + r, o0 + o, ex, ew, b);
        }
#else
    __trap(); /* the launcher runs it only where this file was built for sm_90a and the device is sm_90 */
#endif
}

/* The tensor map of n rows of slices (three planes of n rows of KP bytes) for a box of I8_BK by rows by 3. */
static int i8t_map(CUtensorMap *map, const signed char *s, int n, int KP, int rows, nc_error *err) {
    static const PFN_cuTensorMapEncodeTiled_v12000 encode = nc_cuda_tma_encoder();
    if (!encode) return nc_fail(err, NC_ERR_DEVICE, "dense on int8 slices: the driver has no cuTensorMapEncodeTiled");
    const cuuint64_t dims[3] = {(cuuint64_t)KP, (cuuint64_t)n, I8_SLICES},
                     strides[2] = {(cuuint64_t)KP, (cuuint64_t)KP * n};
    const cuuint32_t box[3] = {I8_BK, (cuuint32_t)rows, I8_SLICES}, steps[3] = {1, 1, 1};
    const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, const_cast<signed char *>(s), dims, strides, box,
                              steps, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_64B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return nc_fail(err, NC_ERR_DEVICE, "dense on int8 slices: cuTensorMapEncodeTiled of %d x %d: error %d", n, KP,
                       (int)r);
    return NC_OK;
}

/* y from the levels that a split GEMM added into part. */
__global__ void i8_finish(float *y, const int *part, const int *ex, const int *ew, const float *b, int B, int OUT) {
    const size_t n = (size_t)B * OUT;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const int r = (int)(i / OUT), o = (int)(i % OUT);
        y[i] = i8_combine(part[i], part[n + i], part[2 * n + i], ex[r], ew[o], b, o);
    }
}

/* The tile shape: 64 x 64, four warps of 32 x 32 (218 registers, two blocks an SM), three stages. */
#define I8_TILE 64, 64, 2, 4, 3, 2
#define I8_BM 64
#define I8_BN 64
#define I8_SMEM (3 * I8_SLICES * (I8_BM + I8_BN) * I8_PITCH)

static int i8_sms(int *sms, nc_error *err) {
    int dev;
    CUDA_RET(cudaGetDevice(&dev));
    CUDA_RET(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev));
    return NC_OK;
}

/* Whether the wgmma kernels run: this file built for sm_90a, and an sm_90 device. */
static int i8_wgmma(int *yes, nc_error *err) {
    *yes = 0;
#if defined(NC_DENSE_SM90A)
    int major, minor;
    const int rc = nc_cuda_device_cc(&major, &minor, err);
    if (rc) return rc;
    *yes = major == 9 && minor == 0;
#else
    (void)err;
#endif
    return NC_OK;
}

/* The wgmma kernels i8t_gemm<BN, WG> and their shared memory, by WG - 1 and BN == 128. */
typedef struct {
    const void *fn;
    int smem;
} i8t_kernel;

static const i8t_kernel i8t_kernels[2][2] = {
    {{(const void *)i8t_gemm<80, 1>, i8w_geom<80, 1>::SMEM}, {(const void *)i8t_gemm<128, 1>, i8w_geom<128, 1>::SMEM}},
    {{(const void *)i8t_gemm<80, 2>, i8w_geom<80, 2>::SMEM}, {(const void *)i8t_gemm<128, 2>, i8w_geom<128, 2>::SMEM}},
};

/* The blocks k is split among for tiles of BM x BN, per_sm blocks an SM: none where the tiles fill the device's
 * blocks, else as many as fill them, at least 4 stages of k a block, at most 16. */
static int i8_splits(int B, int IN, int OUT, int sms, int BM, int BN, int per_sm) {
    const long long tiles = (long long)((B + BM - 1) / BM) * ((OUT + BN - 1) / BN);
    const int steps = i8_kp(IN) / I8_BK;
    long long s = (long long)per_sm * sms / (tiles > 0 ? tiles : 1);
    if (s > 16) s = 16;
    if (s > steps / 4) s = steps / 4;
    return s < 2 ? 1 : (int)s;
}

/* The wgmma kernel's tile width for OUT outputs: 80 where its tiles pad OUT less than 128's, else 128. */
static int i8t_bn(int OUT) {
    return (OUT + 79) / 80 * 80 < (OUT + 127) / 128 * 128 ? 80 : 128;
}

/* AUTO's kernel: on wgmma, tiles of 128 rows (two warpgroups, w's stages read by both: half the traffic from L2) where
 * they fill every SM without a split of k, else of 64 (more blocks, for small batches); else mma.sync. */
static int i8_auto(int wg, int B, int OUT, int sms) {
    if (!wg) return NC_DENSE_I8_MMA;
    const long long tiles = (long long)((B + 127) / 128) * ((OUT + i8t_bn(OUT) - 1) / i8t_bn(OUT));
    return tiles >= sms ? NC_DENSE_I8_WGMMA2 : NC_DENSE_I8_WGMMA;
}

/* What a call runs: its kernel (NC_DENSE_I8_MMA, _WGMMA or _WGMMA2), its tiles, the blocks k is split among (all
 * tiles, their levels added by atomics into part and combined by i8_finish), and, on wgmma, the pieces each tile of a
 * last, partial wave is cut into (i8_tail). */
typedef struct {
    int kernel, wg, BM, BN, splits;
    long long tiles; /* BM x BN tiles */
    int rest, split; /* tiles of the partial wave cut into `split` pieces (split 1: none) */
} i8_planned;

/* The pieces a tile of the last wave is cut into where `tiles` fill `slots` blocks more than once but not a whole
 * number of times: as many as the slots hold (at most 8, at least 8 stages of k a piece), 1 where fewer than 2.
 * The 2017 layer at B 10000 on 132 SMs: 316 tiles of 128 x 128, the last 52 in 2 pieces each (2.5 waves' time
 * where it took 3). */
static int i8_tail_split(long long tiles, int slots, int steps) {
    const long long rest = tiles % slots;
    if (tiles < slots || rest == 0) return 1;
    long long s = slots / rest;
    if (s > 8) s = 8;
    if (s > steps / 8) s = steps / 8;
    return s < 2 ? 1 : (int)s;
}

/* splits 0: the call's own choice (a split of k where the tiles leave SMs idle, else the last wave's pieces); 1 or
 * more: that split and no pieces. */
static int i8_plan(i8_planned *P, int kernel, int splits, int B, int IN, int OUT, nc_error *err) {
    int wg, sms, rc;
    if ((rc = i8_wgmma(&wg, err))) return rc;
    if (kernel != NC_DENSE_I8_AUTO && kernel != NC_DENSE_I8_MMA && kernel != NC_DENSE_I8_WGMMA &&
        kernel != NC_DENSE_I8_WGMMA2)
        return nc_fail(err, NC_ERR_ARG, "dense on int8 slices: kernel %d", kernel);
    if ((kernel == NC_DENSE_I8_WGMMA || kernel == NC_DENSE_I8_WGMMA2) && !wg)
        return nc_fail(err, NC_ERR_ARG,
                       "dense on int8 slices: the wgmma kernel needs an sm_90 device and a build for "
                       "sm_90a");
    if ((rc = i8_sms(&sms, err))) return rc;
    P->kernel = kernel == NC_DENSE_I8_AUTO ? i8_auto(wg, B, OUT, sms) : kernel;
    P->wg = P->kernel == NC_DENSE_I8_WGMMA ? 1 : P->kernel == NC_DENSE_I8_WGMMA2 ? 2 : 0;
    P->BM = P->wg ? 64 * P->wg : I8_BM;
    P->BN = P->wg ? i8t_bn(OUT) : I8_BN;
    const int per_sm = P->wg == 2 ? 1 : 2, steps = i8_kp(IN) / I8_BK;
    P->tiles = (long long)((B + P->BM - 1) / P->BM) * ((OUT + P->BN - 1) / P->BN);
    P->splits = splits > 0 ? splits : i8_splits(B, IN, OUT, sms, P->BM, P->BN, per_sm);
    if (P->splits > steps) P->splits = steps;
    P->split = splits <= 0 && P->wg && P->splits == 1 ? i8_tail_split(P->tiles, per_sm * sms, steps) : 1;
    P->rest = P->split > 1 ? (int)(P->tiles % (per_sm * sms)) : 0;
    return NC_OK;
}

/* Where the scratch's parts lie: x's slices, x's scales, the split's partial levels (where k is split), and the last
 * wave's pieces' levels and counts (where its tiles are cut). */
typedef struct {
    size_t xs, ex, part, tail, count, total;
} i8_layout;

static i8_layout i8_scratch_layout(const i8_planned *P, int B, int IN, int OUT) {
    i8_layout L;
    L.xs = 0;
    L.ex = i8_align((size_t)I8_SLICES * B * i8_kp(IN));
    L.part = L.ex + i8_align((size_t)B * sizeof(int));
    L.tail = L.part + (P->splits > 1 ? i8_align((size_t)I8_LEVELS * B * OUT * sizeof(int)) : 0);
    /* a piece: 3 BN / 2 ints a thread, 128 wg threads */
    L.count = L.tail + i8_align((size_t)P->rest * P->split * I8_LEVELS * (P->BN / 2) * 128 * P->wg * sizeof(int));
    L.total = L.count + (P->rest ? i8_align((size_t)P->rest * sizeof(unsigned)) : 0);
    return L;
}

static int i8_check(int B, int IN, int OUT, nc_error *err) {
    if (B < 0 || IN <= 0 || OUT <= 0 || IN > NC_DENSE_I8_MAX_IN)
        return nc_fail(err, NC_ERR_ARG, "dense on int8 slices: B %d, IN %d, OUT %d (IN at most %d)", B, IN, OUT,
                       NC_DENSE_I8_MAX_IN);
    return NC_OK;
}

/* ------------------------------------------------------------------ the API (cuda_layers.h) */

extern "C" size_t nc_cuda_dense_i8_prepared_size(int IN, int OUT) {
    if (IN <= 0 || OUT <= 0 || IN > NC_DENSE_I8_MAX_IN) return 0;
    return i8_align((size_t)I8_SLICES * OUT * i8_kp(IN)) + i8_align((size_t)OUT * sizeof(int));
}

extern "C" int nc_cuda_dense_i8_prepare(void *wp, const float *w, int IN, int OUT, cudaStream_t stream, nc_error *err) {
    int rc = i8_check(0, IN, OUT, err), wg;
    if (rc || (rc = i8_wgmma(&wg, err))) return rc;
    /* The GEMMs' shared memory, allowed here on the device the forward calls run on, not at every launch. */
    CUDA_RET(
        cudaFuncSetAttribute((const void *)i8_gemm<I8_TILE>, cudaFuncAttributeMaxDynamicSharedMemorySize, I8_SMEM));
    if (wg)
        for (const auto &row : i8t_kernels)
            for (const i8t_kernel &k : row)
                CUDA_RET(cudaFuncSetAttribute(k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, k.smem));
    signed char *s = (signed char *)wp;
    return i8_slice(s, (int *)(s + i8_align((size_t)I8_SLICES * OUT * i8_kp(IN))), w, OUT, IN, stream, err);
}

extern "C" int nc_cuda_dense_i8_scratch_size(size_t *bytes, int B, int IN, int OUT, int splits, int kernel,
                                             nc_error *err) {
    i8_planned P;
    int rc = i8_check(B, IN, OUT, err);
    if (!rc) rc = i8_plan(&P, kernel, splits, B, IN, OUT, err);
    if (rc) return rc;
    *bytes = i8_scratch_layout(&P, B, IN, OUT).total;
    return NC_OK;
}

extern "C" int nc_cuda_dense_i8_forward_prepared(float *y, const float *x, const void *wp, const float *b, int B,
                                                 int IN, int OUT, void *scratch, size_t scratch_bytes, int splits,
                                                 int kernel, cudaStream_t stream, nc_error *err) {
    i8_planned P;
    int rc = i8_check(B, IN, OUT, err);
    if (rc || B == 0) return rc;
    if ((rc = i8_plan(&P, kernel, splits, B, IN, OUT, err))) return rc;
    const int KP = i8_kp(IN), steps = KP / I8_BK, wg = P.wg, BM = P.BM, BN = P.BN;
    const i8_layout L = i8_scratch_layout(&P, B, IN, OUT);
    if (scratch_bytes < L.total)
        return nc_fail(err, NC_ERR_ARG, "dense on int8 slices: %zu bytes of scratch for %zu", scratch_bytes, L.total);
    unsigned char *sc = (unsigned char *)scratch;
    signed char *xs = (signed char *)(sc + L.xs);
    int *ex = (int *)(sc + L.ex), *part = P.splits > 1 ? (int *)(sc + L.part) : NULL;
    const signed char *ws = (const signed char *)wp;
    const int *ew = (const int *)(ws + i8_align((size_t)I8_SLICES * OUT * KP));
    if ((rc = i8_slice(xs, ex, x, B, IN, stream, err))) return rc;
    if (part) CUDA_RET(cudaMemsetAsync(part, 0, (size_t)I8_LEVELS * B * OUT * sizeof(int), stream));
    const int per = (steps + P.splits - 1) / P.splits, kblocks = (steps + per - 1) / per;
    const int row_tiles = (B + BM - 1) / BM, ncol = (OUT + BN - 1) / BN;
    if (wg) {
        i8_tail tail = {(int)(P.tiles - P.rest), P.split, ncol, (int *)(sc + L.tail), (unsigned *)(sc + L.count)};
        if (P.rest) CUDA_RET(cudaMemsetAsync(tail.count, 0, (size_t)P.rest * sizeof(unsigned), stream));
        const long long blocks = P.tiles - P.rest + (long long)P.rest * P.split;
        if (blocks > INT_MAX)
            return nc_fail(err, NC_ERR_ARG, "dense on int8 slices: B %d: %lld tiles", B, (long long)P.tiles);
        CUtensorMap xmap, wmap;
        if ((rc = i8t_map(&xmap, xs, B, KP, BM, err)) || (rc = i8t_map(&wmap, ws, OUT, KP, BN, err))) return rc;
        const i8t_kernel k = i8t_kernels[wg - 1][BN == 128]; /* its shared memory allowed by prepare */
        void *args[] = {&y,         &part, &xmap,       &ex,  &wmap,        (void *)&ew,
                        (void *)&b, &B,    (void *)&KP, &OUT, (void *)&per, &tail};
        CUDA_RET(
            cudaLaunchKernel(k.fn, dim3((unsigned)blocks, (unsigned)kblocks), dim3(128 * wg), args, k.smem, stream));
    } else {
        if (row_tiles > 65535)
            return nc_fail(err, NC_ERR_ARG, "dense on int8 slices: B %d is more than %d rows", B, 65535 * BM);
        const size_t xp = (size_t)B * KP, wpl = (size_t)OUT * KP;
        const void *fn = (const void *)i8_gemm<I8_TILE>;
        void *args[] = {&y,          &part,      &xs, (void *)&xp, &ex,  (void *)&ws, (void *)&wpl,
                        (void *)&ew, (void *)&b, &B,  (void *)&KP, &OUT, (void *)&per};
        CUDA_RET(cudaLaunchKernel(fn, dim3((unsigned)ncol, (unsigned)row_tiles, (unsigned)kblocks), dim3(128), args,
                                  I8_SMEM, stream));
    }
    if (part) {
        const size_t n = (size_t)B * OUT;
        const unsigned blocks = (unsigned)(n / 256 + 1 < 4096 ? n / 256 + 1 : 4096);
        i8_finish<<<blocks, 256, 0, stream>>>(y, part, ex, ew, b, B, OUT);
        CUDA_LAUNCHED();
    }
    return NC_OK;
}

extern "C" int nc_cuda_dense_i8_forward(float *y, const float *x, const float *w, const float *b, int B, int IN,
                                        int OUT, int splits, int kernel, cudaStream_t stream, nc_error *err) {
    int rc = i8_check(B, IN, OUT, err);
    if (rc || B == 0) return rc;
    size_t sb = 0;
    if ((rc = nc_cuda_dense_i8_scratch_size(&sb, B, IN, OUT, splits, kernel, err))) return rc;
    const size_t wb = nc_cuda_dense_i8_prepared_size(IN, OUT);
    void *wp = NULL, *sc = NULL;
    CUDA_TRY(cudaMallocAsync(&wp, wb, stream));
    CUDA_TRY(cudaMallocAsync(&sc, sb, stream));
    rc = nc_cuda_dense_i8_prepare(wp, w, IN, OUT, stream, err);
    if (!rc) rc = nc_cuda_dense_i8_forward_prepared(y, x, wp, b, B, IN, OUT, sc, sb, splits, kernel, stream, err);
cleanup:
    if (wp) cudaFreeAsync(wp, stream);
    if (sc) cudaFreeAsync(sc, stream);
    return rc;
}
