/*
 * The GPU layers other than the convolution: activations, pooling, dense
 * (a tiled SGEMM), softmax, argmax, and the input's resize and scaling. Each
 * computes what its src/cpu/ref.c counterpart computes, in fp32 (no reduced
 * precision anywhere). Pooling, argmax, the resize and the scaling give the
 * reference's bits exactly; the others differ from it only by the rounding of
 * the device's tanhf/expf and of fused multiply-adds.
 */
#include <math.h>

#include "cuda/cp_async.cuh"
#include "cuda/cuda_check.h"
#include "cuda/cuda_layers.h"
#include "io/resize.h"

/* Threads per block of the elementwise kernels, and their most blocks (a grid-stride loop covers the rest). */
#define EW_THREADS 256
#define EW_MAX_BLOCKS 65536u

static unsigned ew_blocks(size_t n) {
    const size_t b = (n + EW_THREADS - 1) / EW_THREADS;
    return b < EW_MAX_BLOCKS ? (unsigned)b : EW_MAX_BLOCKS;
}

#define GRID_STRIDE(i, n)                                                                                              \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* ----------------------------------------------------------- activations */

__global__ void tanh_kernel(float *y, const float *x, size_t n) {
    GRID_STRIDE(i, n) y[i] = tanhf(x[i]);
}

__global__ void relu_kernel(float *y, const float *x, size_t n) {
    GRID_STRIDE(i, n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void sigmoid_kernel(float *y, const float *x, size_t n) {
    GRID_STRIDE(i, n) y[i] = 1.0f / (1.0f + expf(-x[i]));
}

extern "C" int nc_cuda_activation_forward(nc_layer_kind kind, float *y, const float *x, size_t n, cudaStream_t stream,
                                          nc_error *err) {
    if (n == 0) return NC_OK;
    const unsigned grid = ew_blocks(n);
    switch (kind) {
    case NC_TANH: tanh_kernel<<<grid, EW_THREADS, 0, stream>>>(y, x, n); break;
    case NC_RELU: relu_kernel<<<grid, EW_THREADS, 0, stream>>>(y, x, n); break;
    case NC_SIGMOID: sigmoid_kernel<<<grid, EW_THREADS, 0, stream>>>(y, x, n); break;
    default: return nc_fail(err, NC_ERR_ARG, "nc_cuda_activation_forward: layer kind %d is no activation", (int)kind);
    }
    CUDA_LAUNCHED();
    return NC_OK;
}

/* --------------------------------------------------------------- pooling */

/* One thread per output element, the window read in the reference's order. */
template <bool IS_MAX> __global__ void pool_kernel(float *y, const float *x, size_t BC, int H, int W, int P, int S) {
    const int Ho = (H - P) / S + 1, Wo = (W - P) / S + 1;
    GRID_STRIDE(i, BC * Ho * Wo) {
        const int w = (int)(i % Wo), h = (int)(i / Wo % Ho);
        const float *xp = x + i / ((size_t)Ho * Wo) * H * W; // (H, W)
        float acc = IS_MAX ? -INFINITY : 0.0f;
        for (int p = 0; p < P; p++) {
            for (int q = 0; q < P; q++) {
                const float v = xp[(h * S + p) * W + (w * S + q)];
                if (IS_MAX)
                    acc = v > acc ? v : acc;
                else
                    acc += v;
            }
        }
        y[i] = IS_MAX ? acc : acc / (float)(P * P);
    }
}

extern "C" int nc_cuda_pool_forward(nc_layer_kind kind, float *y, const float *x, int B, int C, int H, int W, int P,
                                    int S, cudaStream_t stream, nc_error *err) {
    const size_t BC = (size_t)B * C;
    const size_t n = BC * (size_t)((H - P) / S + 1) * (size_t)((W - P) / S + 1);
    if (n == 0) return NC_OK;
    if (kind == NC_MAXPOOL)
        pool_kernel<true><<<ew_blocks(n), EW_THREADS, 0, stream>>>(y, x, BC, H, W, P, S);
    else if (kind == NC_AVGPOOL)
        pool_kernel<false><<<ew_blocks(n), EW_THREADS, 0, stream>>>(y, x, BC, H, W, P, S);
    else
        return nc_fail(err, NC_ERR_ARG, "nc_cuda_pool_forward: layer kind %d is no pooling", (int)kind);
    CUDA_LAUNCHED();
    return NC_OK;
}

/* ----------------------------------------------------------------- dense */

/* y (B, OUT) = x (B, IN) . w (OUT, IN)^T + b, exact fp32 on the FFMA pipes.
 *
 * Order of the sums (what makes a row of y the same bits whatever B is): every kernel below computes each output
 * as acc = 0, acc = fmaf(x[k], w[k], acc) for k = 0, 1, .., IN-1, then acc + 0.0f, then + b. Tiles pad k past IN
 * with zeros, and fmaf(0, 0, acc) is acc + 0.0f (it only turns -0 into +0); dense_finish adds that +0 once more in
 * every kernel, so that kernels with other k slices, or none, agree bit for bit. The launcher may then pick any
 * kernel for any rows: a row's bits depend on neither B, nor the kernel, nor its place in a tile.
 *
 * Two kernels, each with 16-byte global loads (x and w 16-byte aligned and IN % 4 == 0, so that a float4 never
 * straddles a row or IN) and with 4-byte ones (any alignment, any IN):
 *   dense_kernel (DENSE_BIG): a block computes a 128 x 128 tile of y (images x outputs), each of its 256 threads
 *       8 x 8 of it from registers, stepping through IN by BK = 8. Both operand tiles are staged k-major in shared
 *       memory (rows padded by 4 floats: the transposing stores of 16 consecutive threads then hit distinct banks),
 *       in two buffers: the next slice is fetched from global memory into registers while this one is multiplied,
 *       and stored into the other buffer after it, so one __syncthreads a slice suffices. A thread's 8 rows (8
 *       columns) are groups of 4 spread 4 x (threads across) apart, so that a warp's float4 reads of a k row are
 *       contiguous. 64 FFMAs for 4 shared float4 reads a k; at <= 128 registers two blocks share an SM. For whole
 *       waves of large batches, where OUT pads to 128 columns no worse than to 64 (the 2017 layer, OUT 500).
 *   dense_pipe_kernel: smaller tiles whose slices of BK = 32 are copied by cp.async several slices ahead of the one
 *       multiplied, so that a block waits for global memory once, not once a slice: with a handful of blocks on
 *       the device (small batches) the register-staged kernels had waited a slice's global latency every 32 k
 *       (the 2017 layer at B = 100: 215 us, now 78; B = 1, the warm-up's image: 450 us, now 59; H100, 2026-11-23).
 *       Three shapes:
 *         DENSE_PIPE_L 32 x 64, 4 x 4 a thread, 3 stages: where its blocks fill the SMs and OUT pads to 64 no worse
 *                      than to 32 (the rows the big tiles leave, B of a thousand and more);
 *         DENSE_PIPE_M 32 x 32, 4 x 2 a thread, 4 stages: where its blocks fill the SMs (OUT 140, 160, 10 at large B:
 *                      1.5x faster than 128 x 64 register-staged tiles at B 10000, 64 columns padding OUT 140 to 192);
 *         DENSE_PIPE_S 16 x 16, 2 x 1 a thread, 8 stages: fewer rows (B = 1 to a few hundred), the most blocks.
 *       And two wide shapes, whose one tile spans all of OUT (so that x is read once) and whose blocks, one an SM,
 *       take the whole waves of large batches where 128 < OUT <= 160 (the zoo's OUT 140 and 160 layers):
 *         DENSE_WIDE_140 80 x 140, 8 x 4 a thread (350 threads), 3 stages: OUT 129 to 140;
 *         DENSE_WIDE_160 76 x 160, 4 x 8 a thread (380 threads), 3 stages: OUT 141 to 160.
 *       On the H100 (2026-11-26) a wave of them (10560 and 10032 rows) took 0.91 ms on 2018 spring's layer (IN
 *       10816, OUT 140) and 0.40 on 2018 fall's (4056, 160), where DENSE_PIPE_M took 1.24 and 0.48 for B = 10000:
 *       its time a row is 1.38 to 1.43 times DENSE_WIDE_140's and 1.21 to 1.23 times DENSE_WIDE_160's in whole
 *       waves. A wave takes as long however few of its blocks run, so a partial one is taken only where it holds at
 *       least 1 / DENSE_WIDE_*_COST of a wave's rows; the rows left go to the pipelined tiles above (B 10000 and 8720:
 *       one wave; 5000: DENSE_PIPE_M).
 *
 * Waves (H100: 132 SMs, two big blocks an SM; the 2017 layer, OUT 500, 4 column tiles). A wave of big tiles is 264
 * blocks, 8448 rows, and takes as long whatever the batch (1.35 ms); a partial wave still takes all of it where some
 * SM runs two blocks, and 0.55 of it where each runs one alone (0.74 ms up to 4224 rows). DENSE_PIPE_L takes 1.26
 * times as long a row as big tiles in full waves (2.0 ms for 10000 rows, 1.07 for 5120; H100, 2026-11-23). So the
 * big tiles take the whole waves, and the partial wave only where it costs less than the pipelined tiles would: B
 * 10000 takes one wave and leaves 1552 rows to DENSE_PIPE_L (1.68 ms in all); a piece of 5120 rows goes to
 * DENSE_PIPE_L alone (1.07 ms against 1.35), one of 7000 to big tiles. */
#define DENSE_BIG_ALONE 0.55     /* a partial wave of big tiles, one an SM: its time over a full wave's */
#define DENSE_PIPE_L_COST 1.26   /* DENSE_PIPE_L's time a row over big tiles' in full waves */
#define DENSE_PAD 4              /* floats padding each staged row */
#define DENSE_WIDE_140_COST 1.35 /* DENSE_PIPE_M's time a row over DENSE_WIDE_140's in whole waves, at least */
#define DENSE_WIDE_160_COST 1.2  /* and over DENSE_WIDE_160's */

/* Shapes: pipelined or not, BM, BN, BK, TM, TN, then least blocks an SM (register-staged: caps registers at 65536 /
 * (threads * blocks)) or stages (pipelined). */
#define DENSE_BIG false, 128, 128, 8, 8, 8, 2
#define DENSE_PIPE_L true, 32, 64, 32, 4, 4, 3
#define DENSE_PIPE_M true, 32, 32, 32, 4, 2, 4
#define DENSE_PIPE_S true, 16, 16, 32, 2, 1, 8
#define DENSE_WIDE_140 true, 80, 140, 32, 8, 4, 3
#define DENSE_WIDE_160 true, 76, 160, 32, 4, 8, 3

/* Global loads a thread makes of a ROWS x BK tile per slice, V floats each. */
#define DENSE_LOADS(ROWS, BK, THREADS, V) (((ROWS) * (BK) / (V) + (THREADS)-1) / (THREADS))

/* Fetches this thread's share of rows [0, ROWS) x k [k0, k0 + BK) of src (rows of IN floats, nrows of them
 * exist) into r, zeros outside. Consecutive threads take consecutive k of a row; as THREADS is a multiple of a
 * row's loads, a thread keeps one k and steps down the rows, so that one pointer and one k test serve all. */
template <int ROWS, int BK, int THREADS, bool VEC>
__device__ __forceinline__ void dense_fetch(float *r, const float *src, int nrows, int IN, int k0, int tid) {
    constexpr int V = VEC ? 4 : 1, PER_ROW = BK / V, STEP = THREADS / PER_ROW;
    static_assert(THREADS % PER_ROW == 0, "a thread's loads must share one k");
    const int row = tid / PER_ROW, k = k0 + tid % PER_ROW * V;
    const float *p = src + (size_t)row * IN + k;
    const size_t step = (size_t)STEP * IN;
#pragma unroll
    for (int i = 0; i < DENSE_LOADS(ROWS, BK, THREADS, V); i++) {
        const bool in = row + i * STEP < (nrows < ROWS ? nrows : ROWS) && k < IN;
        if (VEC) {
            const float4 v =
                in ? __ldg(reinterpret_cast<const float4 *>(p + i * step)) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            r[V * i] = v.x, r[V * i + 1] = v.y, r[V * i + 2] = v.z, r[V * i + 3] = v.w;
        } else {
            r[i] = in ? __ldg(p + i * step) : 0.0f;
        }
    }
}

/* Stores what dense_fetch fetched into s, k-major: s[k * (ROWS + DENSE_PAD) + row]. */
template <int ROWS, int BK, int THREADS, bool VEC>
__device__ __forceinline__ void dense_stage(float *s, const float *r, int tid) {
    constexpr int V = VEC ? 4 : 1, PER_ROW = BK / V, STEP = THREADS / PER_ROW;
    const int row = tid / PER_ROW, k = tid % PER_ROW * V;
#pragma unroll
    for (int i = 0; i < DENSE_LOADS(ROWS, BK, THREADS, V); i++) {
        if (ROWS % STEP != 0 && row + i * STEP >= ROWS) break;
#pragma unroll
        for (int j = 0; j < V; j++) s[(k + j) * (ROWS + DENSE_PAD) + row + i * STEP] = r[V * i + j];
    }
}

/* Index in the tile of a thread's element i of T (thread t of TC across): groups of V = min(T, 4) consecutive
 * indices, the groups 4 TC apart. */
template <int T, int TC> __device__ __forceinline__ int dense_index(int i, int t) {
    constexpr int V = T < 4 ? T : 4;
    return i / V * V * TC + t * V + i % V;
}

/* A thread's T values of one staged k row s, read V at a time. */
template <int T, int TC> __device__ __forceinline__ void dense_frag(float *f, const float *s, int t) {
    constexpr int V = T < 4 ? T : 4;
#pragma unroll
    for (int q = 0; q < T / V; q++) {
        const float *p = s + dense_index<T, TC>(q * V, t);
        if (V == 4) {
            const float4 v = *reinterpret_cast<const float4 *>(p);
            f[4 * q] = v.x, f[4 * q + 1] = v.y, f[4 * q + 2] = v.z, f[4 * q + 3] = v.w;
        } else if (V == 2) {
            const float2 v = *reinterpret_cast<const float2 *>(p);
            f[2 * q] = v.x, f[2 * q + 1] = v.y;
        } else {
            f[q] = p[0];
        }
    }
}

/* The end of every output's sum, the same in every kernel (see the order above). */
__device__ __forceinline__ float dense_finish(float acc, const float *b, int o) {
    const float s = __fadd_rn(acc, 0.0f);
    return b ? s + b[o] : s;
}

/* One tile of y; grid x runs over column tiles (fastest, so that the blocks running together share x's rows in
 * L2), grid y over row tiles. y, x point at this launch's first row; B is its rows. */
template <int BM, int BN, int BK, int TM, int TN, int MINB, bool VEC>
__global__ void __launch_bounds__(BM / TM * (BN / TN), MINB)
    dense_kernel(float *y, const float *x, const float *w, const float *b, int B, int IN, int OUT) {
    constexpr int TY = BM / TM, TX = BN / TN, THREADS = TY * TX, V = VEC ? 4 : 1;
    constexpr int LX = BM + DENSE_PAD, LW = BN + DENSE_PAD;
    __shared__ __align__(16) float xs[2][BK * LX]; // xs[s][k * LX + i] = x[i0 + i][k0 + k]
    __shared__ __align__(16) float ws[2][BK * LW]; // ws[s][k * LW + o] = w[o0 + o][k0 + k]
    const int tid = (int)threadIdx.x, tx = tid % TX, ty = tid / TX;
    const int i0 = (int)blockIdx.y * BM, o0 = (int)blockIdx.x * BN;
    const float *xt = x + (size_t)i0 * IN, *wt = w + (size_t)o0 * IN; // (BM, IN), (BN, IN)
    float xr[DENSE_LOADS(BM, BK, THREADS, V) * V], wr[DENSE_LOADS(BN, BK, THREADS, V) * V];
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;

    dense_fetch<BM, BK, THREADS, VEC>(xr, xt, B - i0, IN, 0, tid);
    dense_fetch<BN, BK, THREADS, VEC>(wr, wt, OUT - o0, IN, 0, tid);
    dense_stage<BM, BK, THREADS, VEC>(xs[0], xr, tid);
    dense_stage<BN, BK, THREADS, VEC>(ws[0], wr, tid);
    __syncthreads();
    int s = 0;
    for (int k0 = 0; k0 < IN; k0 += BK, s ^= 1) {
        const bool more = k0 + BK < IN;
        if (more) {
            dense_fetch<BM, BK, THREADS, VEC>(xr, xt, B - i0, IN, k0 + BK, tid);
            dense_fetch<BN, BK, THREADS, VEC>(wr, wt, OUT - o0, IN, k0 + BK, tid);
        }
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float a[TM], c[TN];
            dense_frag<TM, TY>(a, &xs[s][k * LX], ty);
            dense_frag<TN, TX>(c, &ws[s][k * LW], tx);
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i], c[j], acc[i][j]);
        }
        /* The other buffer was last read in the previous slice, before the __syncthreads that ended it. */
        if (more) {
            dense_stage<BM, BK, THREADS, VEC>(xs[s ^ 1], xr, tid);
            dense_stage<BN, BK, THREADS, VEC>(ws[s ^ 1], wr, tid);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; i++) {
        const int r = i0 + dense_index<TM, TY>(i, ty);
        if (r >= B) continue;
#pragma unroll
        for (int j = 0; j < TN; j++) {
            const int o = o0 + dense_index<TN, TX>(j, tx);
            if (o < OUT) y[(size_t)r * OUT + o] = dense_finish(acc[i][j], b, o);
        }
    }
}

/* Copies this thread's share of rows [0, ROWS) x k [k0, k0 + BK) of src (rows of IN floats, nrows of them exist)
 * into s, row-major (s[row * (BK + DENSE_PAD) + k]), by cp.async of V floats; zeros outside, without reading. */
template <int ROWS, int BK, int THREADS, bool VEC>
__device__ __forceinline__ void dense_copy(float *s, const float *src, int nrows, int IN, int k0, int tid) {
    constexpr int V = VEC ? 4 : 1, PER_ROW = BK / V, N = ROWS * PER_ROW;
#pragma unroll
    for (int e0 = 0; e0 < N; e0 += THREADS) {
        const int e = e0 + tid, row = e / PER_ROW, kq = e % PER_ROW * V, k = k0 + kq;
        if (N % THREADS != 0 && e >= N) break;
        const bool in = row < nrows && k < IN;
        const float *g = in ? src + (size_t)row * IN + k : src;
        if (VEC)
            nc_cp_async16(s + row * (BK + DENSE_PAD) + kq, g, in ? 16 : 0);
        else
            nc_cp_async4(s + row * (BK + DENSE_PAD) + kq, g, in ? 4 : 0);
    }
}

/* One tile of y, for grids too small to hide a k slice's global latency behind another block's arithmetic: a
 * block computes BM x BN of y, a thread TM x TN of it (rows ty + i TY, outputs tx + j TX), with slices of BK copied
 * by cp.async NS - 1 ahead of the one multiplied, row-major (a thread reads 4 k of a row or an output at once; rows
 * padded by 4 floats, so the 16 outputs of a warp's half hit distinct banks). One __syncthreads a slice: after it
 * every thread's copies of this slice have landed, and no thread still reads the stage the next copy refills.
 * The sums are dense_kernel's (acc = fmaf over k in order, zeros past IN), so the bits are too. */
template <int BM, int BN, int BK, int TM, int TN, int NS, bool VEC>
__global__ void __launch_bounds__(BM / TM * (BN / TN))
    dense_pipe_kernel(float *y, const float *x, const float *w, const float *b, int B, int IN, int OUT) {
    constexpr int TY = BM / TM, TX = BN / TN, THREADS = TY * TX, L = BK + DENSE_PAD;
    static_assert(BK % 4 == 0 && NS >= 2, "slices of whole float4s, two stages at least");
    extern __shared__ __align__(16) float dense_smem[]; /* dense_smem_bytes(): NS stages of x's rows, then w's */
    float(*xs)[BM * L] = reinterpret_cast<float(*)[BM * L]>(dense_smem); // xs[s][i * L + k] = x[i0 + i][k0 + k]
    float(*ws)[BN * L] = reinterpret_cast<float(*)[BN * L]>(dense_smem + NS * BM * L); // ws[s][o * L + k]: w's
    const int tid = (int)threadIdx.x, tx = tid % TX, ty = tid / TX;
    const int i0 = (int)blockIdx.y * BM, o0 = (int)blockIdx.x * BN;
    const int nx = B - i0, nw = OUT - o0, slices = (IN + BK - 1) / BK;
    const float *xt = x + (size_t)i0 * IN, *wt = w + (size_t)o0 * IN; // (BM, IN), (BN, IN)
#pragma unroll
    for (int n = 0; n < NS - 1; n++) {
        if (n < slices) {
            dense_copy<BM, BK, THREADS, VEC>(xs[n], xt, nx, IN, n * BK, tid);
            dense_copy<BN, BK, THREADS, VEC>(ws[n], wt, nw, IN, n * BK, tid);
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;
    int s = 0; /* slice n's stage */
    for (int n = 0; n < slices; n++) {
        asm volatile("cp.async.wait_group %0;" ::"n"(NS - 2) : "memory");
        __syncthreads();
        const int next = n + NS - 1, sn = s == 0 ? NS - 1 : s - 1; /* the stage slice n - 1 was in */
        if (next < slices) {
            dense_copy<BM, BK, THREADS, VEC>(xs[sn], xt, nx, IN, next * BK, tid);
            dense_copy<BN, BK, THREADS, VEC>(ws[sn], wt, nw, IN, next * BK, tid);
        }
        asm volatile("cp.async.commit_group;" ::: "memory"); /* perhaps empty: the count stays right */
        const float *xn = xs[s] + ty * L, *wn = ws[s] + tx * L;
#pragma unroll
        for (int k = 0; k < BK; k += 4) {
            float4 a[TM], c[TN];
#pragma unroll
            for (int i = 0; i < TM; i++) a[i] = *reinterpret_cast<const float4 *>(xn + i * TY * L + k);
#pragma unroll
            for (int j = 0; j < TN; j++) c[j] = *reinterpret_cast<const float4 *>(wn + j * TX * L + k);
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) {
                    acc[i][j] = fmaf(a[i].x, c[j].x, acc[i][j]);
                    acc[i][j] = fmaf(a[i].y, c[j].y, acc[i][j]);
                    acc[i][j] = fmaf(a[i].z, c[j].z, acc[i][j]);
                    acc[i][j] = fmaf(a[i].w, c[j].w, acc[i][j]);
                }
        }
        s = s + 1 == NS ? 0 : s + 1;
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory"); /* the empty groups, for form's sake */
#pragma unroll
    for (int i = 0; i < TM; i++) {
        const int r = ty + i * TY;
        if (r >= nx) continue;
#pragma unroll
        for (int j = 0; j < TN; j++) {
            const int o = tx + j * TX;
            if (o < nw) y[(size_t)(i0 + r) * OUT + o0 + o] = dense_finish(acc[i][j], b, o0 + o);
        }
    }
}

/* The dynamic shared memory a shape's kernel takes: dense_pipe_kernel's stages (0 for dense_kernel's static). */
template <bool PIPE, int BM, int BN, int BK, int TM, int TN, int X> static constexpr int dense_smem_bytes() {
    return PIPE ? X * (BM + BN) * (BK + DENSE_PAD) * (int)sizeof(float) : 0;
}

/* A shape's kernel, with 16-byte global loads or not. */
template <bool PIPE, int BM, int BN, int BK, int TM, int TN, int X, bool VEC> static const void *dense_fn() {
    if constexpr (PIPE)
        return (const void *)dense_pipe_kernel<BM, BN, BK, TM, TN, X, VEC>;
    else
        return (const void *)dense_kernel<BM, BN, BK, TM, TN, X, VEC>;
}

/* Rows [r0, r1) of y by one shape's kernel, in launches of at most 65535 row tiles (grid y's limit). */
template <bool PIPE, int BM, int BN, int BK, int TM, int TN, int X>
static int dense_tiles(float *y, const float *x, const float *w, const float *b, int r0, int r1, int IN, int OUT,
                       bool vec, cudaStream_t stream, nc_error *err) {
    const void *fn;
    if constexpr (PIPE && BN > 128) /* the wide shapes: the launcher takes them with 16-byte loads only */
        fn = dense_fn<PIPE, BM, BN, BK, TM, TN, X, true>();
    else
        fn = vec ? dense_fn<PIPE, BM, BN, BK, TM, TN, X, true>() : dense_fn<PIPE, BM, BN, BK, TM, TN, X, false>();
    constexpr int smem = dense_smem_bytes<PIPE, BM, BN, BK, TM, TN, X>();
    if (smem > 48 * 1024) CUDA_RET(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    for (int s0 = r0; s0 < r1;) {
        int nb = r1 - s0 < 65535 * BM ? r1 - s0 : 65535 * BM;
        const dim3 grid((unsigned)((OUT + BN - 1) / BN), (unsigned)((nb + BM - 1) / BM));
        float *ys = y + (size_t)s0 * OUT;
        const float *xs = x + (size_t)s0 * IN;
        void *args[] = {&ys, &xs, &w, &b, &nb, &IN, &OUT};
        CUDA_RET(cudaLaunchKernel(fn, grid, dim3(BM / TM * (BN / TN)), args, smem, stream));
        s0 += nb;
    }
    return NC_OK;
}

/* Rows of y that big tiles take: their whole waves, and the partial wave where it costs less than DENSE_PIPE_L (see
 * the waves above); the rest go to the pipelined tiles. */
static int dense_big_rows(int *rows, int B, int OUT, bool vec, int sms, nc_error *err) {
    int per_sm;
    CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, vec ? dense_fn<DENSE_BIG, true>() : dense_fn<DENSE_BIG, false>(), 256, 0));
    const long long cols = (OUT + 127) / 128, tiles = (B + 127) / 128 * cols, slots = (long long)sms * per_sm;
    if (slots <= 0) return *rows = 0, NC_OK;
    long long waves = tiles / slots;
    const long long partial = tiles % slots;
    const double wave = per_sm > 1 && partial <= sms ? DENSE_BIG_ALONE : 1.0;
    if (partial > 0 && wave <= DENSE_PIPE_L_COST * (double)partial / (double)slots) waves++;
    const long long r = waves * slots / cols * 128;
    *rows = r < B ? (int)r : B;
    return NC_OK;
}

/* Rows of y that a wide shape (BM rows a tile, OUT in one tile) takes: its whole waves, and a partial one where it
 * holds at least 1 / cost of a wave's rows, cost being DENSE_PIPE_M's time a row over the shape's (see above); none
 * on a GPU whose blocks cannot have its shared memory (about 100 KB: more than sm_75's 64 KB). */
template <bool PIPE, int BM, int BN, int BK, int TM, int TN, int X>
static int dense_wide_rows(int *rows, int B, double cost, int dev, int sms, nc_error *err) {
    constexpr int smem = dense_smem_bytes<PIPE, BM, BN, BK, TM, TN, X>();
    const void *fn = dense_fn<PIPE, BM, BN, BK, TM, TN, X, true>();
    int per_sm, optin;
    *rows = 0;
    if ((double)B * cost < (double)sms * BM) return NC_OK; /* short of a wave of one block an SM: no driver calls */
    CUDA_RET(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (optin < smem) return NC_OK;
    CUDA_RET(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, BM / TM * (BN / TN), smem));
    const long long wave = (long long)sms * per_sm * BM;
    if (wave <= 0) return NC_OK;
    long long r = B / wave * wave;
    if ((double)(B - r) * cost >= (double)wave) r = B;
    *rows = (int)r;
    return NC_OK;
}

extern "C" int nc_cuda_dense_forward(float *y, const float *x, const float *w, const float *b, int B, int IN, int OUT,
                                     cudaStream_t stream, nc_error *err) {
    if (B <= 0 || OUT <= 0) return NC_OK;
    const bool vec = ((uintptr_t)x | (uintptr_t)w) % 16 == 0 && IN % 4 == 0;
    int dev, sms, rows = 0, rc = NC_OK;
    CUDA_RET(cudaGetDevice(&dev));
    CUDA_RET(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    if (vec && OUT > 128 && OUT <= 160) {
        /* Wide tiles, one across OUT, for whole waves. */
        if (OUT <= 140) {
            if ((rc = dense_wide_rows<DENSE_WIDE_140>(&rows, B, DENSE_WIDE_140_COST, dev, sms, err))) return rc;
            if (rows > 0 && (rc = dense_tiles<DENSE_WIDE_140>(y, x, w, b, 0, rows, IN, OUT, vec, stream, err)))
                return rc;
        } else {
            if ((rc = dense_wide_rows<DENSE_WIDE_160>(&rows, B, DENSE_WIDE_160_COST, dev, sms, err))) return rc;
            if (rows > 0 && (rc = dense_tiles<DENSE_WIDE_160>(y, x, w, b, 0, rows, IN, OUT, vec, stream, err)))
                return rc;
        }
    } else if ((OUT + 127) / 128 * 2 == (OUT + 63) / 64) {
        /* Big tiles where 128 columns pad OUT no more than 64 do, for whole waves. */
        if ((rc = dense_big_rows(&rows, B, OUT, vec, sms, err))) return rc;
        if (rows > 0 && (rc = dense_tiles<DENSE_BIG>(y, x, w, b, 0, rows, IN, OUT, vec, stream, err))) return rc;
    }
    if (rows == B) return NC_OK;
    /* The rest: the largest pipelined tiles whose blocks still fill the SMs, else the smallest. */
    const long long row_tiles = (B - rows + 31) / 32;
    if (row_tiles * ((OUT + 31) / 32) < sms)
        return dense_tiles<DENSE_PIPE_S>(y, x, w, b, rows, B, IN, OUT, vec, stream, err);
    if ((OUT + 63) / 64 * 2 == (OUT + 31) / 32 && row_tiles * ((OUT + 63) / 64) >= sms)
        return dense_tiles<DENSE_PIPE_L>(y, x, w, b, rows, B, IN, OUT, vec, stream, err);
    return dense_tiles<DENSE_PIPE_M>(y, x, w, b, rows, B, IN, OUT, vec, stream, err);
}

/* --------------------------------------------------- softmax and argmax */

/* One thread per row, in the reference's order (rows are short: the classes). */
__global__ void softmax_kernel(float *y, const float *x, int B, int N) {
    GRID_STRIDE(i, (size_t)B) {
        const float *xi = x + i * N; // (N)
        float *yi = y + i * N;       // (N)
        float mx = xi[0];
        for (int j = 1; j < N; j++) mx = xi[j] > mx ? xi[j] : mx;
        float sum = 0.0f;
        for (int j = 0; j < N; j++) {
            yi[j] = expf(xi[j] - mx);
            sum += yi[j];
        }
        for (int j = 0; j < N; j++) yi[j] /= sum;
    }
}

extern "C" int nc_cuda_softmax_forward(float *y, const float *x, int B, int N, cudaStream_t stream, nc_error *err) {
    if (B <= 0) return NC_OK;
    softmax_kernel<<<ew_blocks((size_t)B), EW_THREADS, 0, stream>>>(y, x, B, N);
    CUDA_LAUNCHED();
    return NC_OK;
}

__global__ void argmax_kernel(int *pred, const float *x, int B, int N) {
    GRID_STRIDE(i, (size_t)B) {
        const float *xi = x + i * N; // (N)
        int best = 0;
        for (int j = 1; j < N; j++)
            if (xi[j] > xi[best]) best = j;
        pred[i] = best;
    }
}

extern "C" int nc_cuda_argmax(int *pred, const float *x, int B, int N, cudaStream_t stream, nc_error *err) {
    if (B <= 0) return NC_OK;
    argmax_kernel<<<ew_blocks((size_t)B), EW_THREADS, 0, stream>>>(pred, x, B, N);
    CUDA_LAUNCHED();
    return NC_OK;
}

/* ------------------------------------------------------ resize and scale */

/* nc_resize_u8 (src/io/resize.c) on the device, operation for operation: the
 * same double-precision steps, each written as an explicitly rounded
 * intrinsic so that nvcc cannot contract a multiply and an add into an FMA
 * (that alone changes thousands of pixels at the course's sizes). */

/* nc_resize_axis_tap (src/io/resize.c): one output position along an axis, its two taps' input indices and weights. */
__device__ static nc_resize_tap resize_axis_tap(int o, double zoom, int n) {
    double cc = (double)o;
    cc = __dadd_rn(cc, 0.5);
    cc = __dmul_rn(cc, zoom);
    cc = __dadd_rn(cc, -0.5);
    const double start = floor(cc);
    const double f = __dadd_rn(cc, -start);
    nc_resize_tap t;
    t.w0 = __dadd_rn(1.0, -f);
    t.w1 = __dadd_rn(1.0, -t.w0);
    t.i0 = (int)start;
    t.i1 = t.i0 + 1;
    if (t.i0 < 0 || t.i0 >= n) {
        t.i0 = t.i0 < 0 ? 0 : n - 1;
        t.w0 = 0.0;
    }
    if (t.i1 < 0 || t.i1 >= n) {
        t.i1 = t.i1 < 0 ? 0 : n - 1;
        t.w1 = 0.0;
    }
    return t;
}

/* (v / 256.0 * wy) * wx, as the CPU rounds it, from p = v / 256.0: exact, and the same number as v * 2^-8. */
__device__ static double resize_term(double p, double wy, double wx) {
    return __dmul_rn(__dmul_rn(p, wy), wx);
}

/* The float each uint8 pixel becomes (nc_scale_pixel, tabulated on the host so that the bits are the CPU's). */
struct scale_lut {
    float v[256];
};

/* Rows of an image whose taps a block holds at once. */
#define RESIZE_ROWS 256
/* Pixels of the largest image whose values a block holds in shared memory, as doubles (32 KB). */
#define RESIZE_SV_PIXELS 4096

/* One block per image, its threads CT columns by RL lanes of rows (blockDim.x = CT RL). First the image's min and
 * max (the clip range) and, SV, its pixels / 256 as doubles into shared memory (else each term reads its byte and
 * converts it); then its S x S outputs, RESIZE_ROWS rows at a time, their taps computed once into shared memory: a
 * thread computes its column's taps once a batch of rows and walks down the rows of its lane. zoom_y and zoom_x are
 * h / S and w / S as the host rounds them. An output pixel's terms are added in nc_resize_u8's order; it starts its
 * sum from 0.0 and adds the first term, the same as taking it, as no term is -0 (pixels and weights are >= +0).
 * Writes uint8 (dst8, for the tests) or the scaled floats (dstf): a warp's stores run along a row.
 * Until session 67 each thread computed an output pixel alone: its two taps (two divisions for the zooms) and its
 * four terms from the image's bytes (a division each). On the 2020 network (10000 images to 86 x 86, H200) the
 * resize took 0.43 ms of its 1.82 and takes 0.21 of 1.61 (`nanoconv profile`'s sum of the kernel's launches; the
 * networks' times with the old layers.cu preloaded, in the same call: docs/PERFORMANCE-LOG.md, 2026-11-29 05:51). */
template <bool SV>
__global__ void __launch_bounds__(512) resize_kernel(uint8_t *dst8, float *dstf, scale_lut lut, const uint8_t *images,
                                                     int h, int w, int S, double zoom_y, double zoom_x, int CT) {
    __shared__ int lo8, hi8;
    __shared__ float slut[256];
    __shared__ nc_resize_tap rows[RESIZE_ROWS]; /* i0 and i1 as the offsets of their rows (PX a pixel) */
    extern __shared__ double sv[];              /* SV: (h, w) */
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x, RL = nt / CT;
    const uint8_t *src = images + (size_t)blockIdx.x * h * w; // (h, w)
    if (tid == 0) {
        lo8 = 255;
        hi8 = 0;
    }
    for (int i = tid; i < 256; i += nt) slut[i] = lut.v[i];
    __syncthreads();
    int lo = 255, hi = 0;
    for (int i = tid; i < h * w; i += nt) {
        const int v = src[i];
        lo = min(lo, v);
        hi = max(hi, v);
        if (SV) sv[i] = __dmul_rn((double)v, 0x1p-8);
    }
    atomicMin(&lo8, lo);
    atomicMax(&hi8, hi);
    __syncthreads();
    const double dlo = __dmul_rn((double)lo8, 0x1p-8), dhi = __dmul_rn((double)hi8, 0x1p-8); /* / 256, exact */
    /* A pixel / 256 at an offset: in bytes from sv (SV), else in pixels from src. */
    constexpr int PX = SV ? (int)sizeof(double) : 1;
    auto pixel = [&](int off) {
        return SV ? *(const double *)((const char *)sv + off) : __dmul_rn((double)__ldg(src + off), 0x1p-8);
    };
    for (int r0 = 0; r0 < S; r0 += RESIZE_ROWS) {
        const int nr = min(RESIZE_ROWS, S - r0);
        __syncthreads(); /* the batch before is done with rows */
        for (int i = tid; i < nr; i += nt) {
            nc_resize_tap t = resize_axis_tap(r0 + i, zoom_y, h);
            t.i0 *= w * PX, t.i1 *= w * PX;
            rows[i] = t;
        }
        __syncthreads();
        for (int c0 = 0; c0 < S; c0 += CT) {
            const int ox = c0 + tid % CT;
            if (ox >= S) continue;
            nc_resize_tap cx = resize_axis_tap(ox, zoom_x, w);
            cx.i0 *= PX, cx.i1 *= PX;
            /* The thread's outputs: (r0 + r, ox) for r = tid / CT, + RL, ... */
            const size_t o = ((size_t)blockIdx.x * S + r0 + tid / CT) * S + ox, step = (size_t)RL * S;
            uint8_t *y8 = dst8 ? dst8 + o : NULL;
            float *yf = dstf ? dstf + o : NULL;
            for (int r = tid / CT; r < nr; r += RL) {
                const nc_resize_tap ry = rows[r];
                double t = resize_term(pixel(ry.i0 + cx.i0), ry.w0, cx.w0);
                t = __dadd_rn(t, resize_term(pixel(ry.i0 + cx.i1), ry.w0, cx.w1));
                t = __dadd_rn(t, resize_term(pixel(ry.i1 + cx.i0), ry.w1, cx.w0));
                t = __dadd_rn(t, resize_term(pixel(ry.i1 + cx.i1), ry.w1, cx.w1));
                t = t < dlo ? dlo : t;
                t = t > dhi ? dhi : t;
                const unsigned v = __double2uint_rz(__dmul_rn(t, 256.0)); /* 0..255, truncated as by the cast */
                if (y8) {
                    *y8 = (uint8_t)v;
                    y8 += step;
                } else {
                    *yf = slut[v];
                    yf += step;
                }
            }
        }
    }
}

/* resize_kernel's launch: CT = min(S, 256) columns by enough lanes of rows to take 256 threads or more (510 at most,
 * at S = 255: the kernel's launch bounds); the image's
 * pixels in shared memory where they fit. */
static void resize_launch(uint8_t *dst8, float *dstf, const scale_lut &lut, const uint8_t *images, int B, int h, int w,
                          int S, cudaStream_t stream) {
    const int CT = S < 256 ? S : 256, RL = (256 + CT - 1) / CT;
    const double zy = (double)h / (double)S, zx = (double)w / (double)S;
    if ((size_t)h * w <= RESIZE_SV_PIXELS)
        resize_kernel<true><<<(unsigned)B, (unsigned)(CT * RL), (size_t)h * w * sizeof(double), stream>>>(
            dst8, dstf, lut, images, h, w, S, zy, zx, CT);
    else
        resize_kernel<false>
            <<<(unsigned)B, (unsigned)(CT * RL), 0, stream>>>(dst8, dstf, lut, images, h, w, S, zy, zx, CT);
}

/* No resize: scaling alone. x is (n), images is (n). */
__global__ void scale_kernel(float *x, scale_lut lut, const uint8_t *images, size_t n) {
    GRID_STRIDE(i, n) x[i] = lut.v[images[i]];
}

extern "C" int nc_cuda_resize_u8(uint8_t *dst, const uint8_t *src, int B, int h, int w, int S, cudaStream_t stream,
                                 nc_error *err) {
    if (B <= 0 || S <= 0 || h <= 0 || w <= 0) return NC_OK;
    const scale_lut none = {};
    resize_launch(dst, NULL, none, src, B, h, w, S, stream);
    CUDA_LAUNCHED();
    return NC_OK;
}

extern "C" int nc_cuda_prepare_input(float *x, const uint8_t *images, int B, int h, int w, const nc_model *m,
                                     cudaStream_t stream, nc_error *err) {
    if (B <= 0) return NC_OK;
    scale_lut lut;
    for (int p = 0; p < 256; p++) lut.v[p] = nc_scale_pixel(m, (uint8_t)p);
    const int H = m->input.h, W = m->input.w;
    if (h == H && w == W) {
        const size_t n = (size_t)B * H * W;
        scale_kernel<<<ew_blocks(n), EW_THREADS, 0, stream>>>(x, lut, images, n);
    } else {
        /* nc_model_check_input admits only upscaling to a square input. */
        resize_launch(NULL, x, lut, images, B, h, w, H, stream);
    }
    CUDA_LAUNCHED();
    return NC_OK;
}

extern "C" int nc_cuda_layers_prepare(nc_error *err) {
    const void *kernels[] = {
        (const void *)tanh_kernel,       (const void *)relu_kernel,         (const void *)sigmoid_kernel,
        (const void *)pool_kernel<true>, (const void *)pool_kernel<false>,  (const void *)softmax_kernel,
        (const void *)argmax_kernel,     (const void *)resize_kernel<true>, (const void *)resize_kernel<false>,
        (const void *)scale_kernel,
    };
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        cudaFuncAttributes attr;
        CUDA_RET(cudaFuncGetAttributes(&attr, kernels[i]));
    }
    const void *dense[] = {dense_fn<DENSE_BIG, true>(),      dense_fn<DENSE_BIG, false>(),
                           dense_fn<DENSE_PIPE_L, true>(),   dense_fn<DENSE_PIPE_L, false>(),
                           dense_fn<DENSE_PIPE_M, true>(),   dense_fn<DENSE_PIPE_M, false>(),
                           dense_fn<DENSE_PIPE_S, true>(),   dense_fn<DENSE_PIPE_S, false>(),
                           dense_fn<DENSE_WIDE_140, true>(), dense_fn<DENSE_WIDE_160, true>()};
    for (size_t i = 0; i < sizeof dense / sizeof dense[0]; i++) {
        cudaFuncAttributes attr;
        CUDA_RET(cudaFuncGetAttributes(&attr, dense[i]));
    }
    return NC_OK;
}
