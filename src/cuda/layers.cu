/*
 * The GPU layers other than the convolution: activations, pooling, dense
 * (a tiled SGEMM), softmax, argmax, and the input's resize and scaling. Each
 * computes what its src/cpu/ref.c counterpart computes, in fp32 (no reduced
 * precision anywhere). Pooling, argmax, the resize and the scaling give the
 * reference's bits exactly; the others differ from it only by the rounding of
 * the device's tanh (nc_tanhf, src/cuda/conv_act.cuh) and expf and of fused
 * multiply-adds.
 */
#include <math.h>

#include "cuda/conv_act.cuh"
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
    GRID_STRIDE(i, n) y[i] = nc_tanhf(x[i]);
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

/* nc_tanhf at every float, and its inline-exponential form and CUDA's tanhf beside it (nc_cuda_tanh_sweep): a thread a
 * bit pattern u (every stride-th), its error in ulps of the float binade of tanh in double (2^-149 at least), and for
 * u's of x >= 0 whether the next float's tanh is below (decreasing) and whether -x's is not -tanh x's bits (odd).
 * Maxima as the bits of non-negative floats (ordered as unsigned ints), counts by one atomic a warp. */
__global__ void tanh_sweep_kernel(nc_tanh_sweep *r, unsigned long long base, unsigned stride) {
    const unsigned long long v = (base + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) * stride;
    const unsigned u = (unsigned)v;
    const float x = __uint_as_float(u);
    float e[2] = {0.0f, 0.0f};
    /* differ, out of [-1, 1], decreasing, not odd, tanhf's two, the two forms differ */
    unsigned long long c[7] = {0, 0, 0, 0, 0, 0, 0};
    if (v < (1ull << 32) && x == x) {
        const float y[2] = {nc_tanhf(x), tanhf(x)};
        c[6] = __float_as_uint(nc_tanhf<true>(x)) != __float_as_uint(y[0]);
        const double t = tanh((double)x);
        int ex;
        (void)frexp(t, &ex);
        const double ulp = ldexp(1.0, ex - 24 < -149 ? -149 : ex - 24);
        for (int i = 0; i < 2; i++) e[i] = (float)(fabs((double)y[i] - t) / ulp);
        c[0] = __float_as_uint(y[0]) != __float_as_uint(y[1]);
        c[1] = !(fabsf(y[0]) <= 1.0f);
        if (!(u >> 31) && u < 0x7f800000u) {
            const float xn = __uint_as_float(u + 1);
            c[2] = nc_tanhf(xn) < y[0];
            c[3] = __float_as_uint(nc_tanhf(-x)) != (__float_as_uint(y[0]) ^ 0x80000000u);
            c[4] = tanhf(xn) < y[1];
            c[5] = __float_as_uint(tanhf(-x)) != (__float_as_uint(y[1]) ^ 0x80000000u);
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        for (int i = 0; i < 2; i++) e[i] = fmaxf(e[i], __shfl_xor_sync(0xffffffffu, e[i], o));
        for (int i = 0; i < 7; i++) c[i] += __shfl_xor_sync(0xffffffffu, c[i], o);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicMax(&r->max_ulp_bits[0], __float_as_uint(e[0]));
        atomicMax(&r->max_ulp_bits[1], __float_as_uint(e[1]));
        unsigned long long *n[7] = {&r->differ,           &r->unbounded,     &r->decreasing, &r->not_odd,
                                    &r->tanhf_decreasing, &r->tanhf_not_odd, &r->ex2_differ};
        for (int i = 0; i < 7; i++)
            if (c[i]) atomicAdd(n[i], c[i]);
    }
}

extern "C" int nc_cuda_tanh_sweep(nc_tanh_sweep *out, unsigned stride, nc_error *err) {
    if (stride == 0) return nc_fail(err, NC_ERR_ARG, "nc_cuda_tanh_sweep: stride 0");
    nc_tanh_sweep *d = NULL;
    int rc = NC_OK;
    /* A thread a float: launches of at most 2^22 blocks of 256. */
    const unsigned long long n = ((1ull << 32) + stride - 1) / stride;
    unsigned long long t;
    CUDA_TRY(cudaMalloc((void **)&d, sizeof *d));
    CUDA_TRY(cudaMemset(d, 0, sizeof *d));
    for (unsigned long long base = 0; base < n; base += 1ull << 30) {
        t = n - base < (1ull << 30) ? n - base : 1ull << 30;
        tanh_sweep_kernel<<<(unsigned)((t + 255) / 256), 256>>>(d, base, stride);
        CUDA_TRY(cudaGetLastError());
    }
    CUDA_TRY(cudaMemcpy(out, d, sizeof *out, cudaMemcpyDeviceToHost));
    memcpy(&out->max_ulp, &out->max_ulp_bits[0], sizeof(float));
    memcpy(&out->tanhf_max_ulp, &out->max_ulp_bits[1], sizeof(float));
cleanup:
    if (d) cudaFree(d);
    return rc;
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
    t.pair = min(max(t.i1, 0), n);
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

/* The float each uint8 pixel becomes (nc_scale_pixel, tabulated on the host so that the bits are the CPU's). */
struct scale_lut {
    float v[256];
};

/* What a resize kernel writes: bytes (nc_cuda_resize_u8, for the tests), or the model's floats: the byte itself (raw
 * scaling: (float)p, nc_scale_value's) or through the table (unit, norm). */
enum { RESIZE_U8, RESIZE_RAW, RESIZE_LUT };

/* An output pixel from its taps' terms in nc_resize_u8's order, everything 256 times nc_resize_u8's: the pixels are
 * the bytes v, not v / 256, which scales every product and sum by 2^8 exactly (no term comes near the ends of the
 * double range), so that t is 256 times nc_resize_u8's sum, bit for bit. nc_resize_u8 clips its sum to the image's
 * [lo8, hi8] / 256 and truncates 256 times that; as lo8 and hi8 are whole numbers, that is t truncated (t >= 0) and
 * clamped to [lo8, hi8]. The sum starts from the first term, as nc_resize_u8's 0.0 + term does (no term is -0). */
__device__ __forceinline__ int resize_pixel(double a0, double a1, double b0, double b1, double wy0, double wy1,
                                            double wx0, double wx1, int lo8, int hi8) {
    double t = __dmul_rn(__dmul_rn(a0, wy0), wx0);
    t = __dadd_rn(t, __dmul_rn(__dmul_rn(a1, wy0), wx1));
    t = __dadd_rn(t, __dmul_rn(__dmul_rn(b0, wy1), wx0));
    t = __dadd_rn(t, __dmul_rn(__dmul_rn(b1, wy1), wx1));
    return min(max(__double2int_rz(t), lo8), hi8);
}

/* Output pixel v to y8 (RESIZE_U8) or to yf, as the model's float. */
template <int OUT> __device__ __forceinline__ void resize_store(uint8_t *y8, float *yf, int v, const float *lut) {
    if (OUT == RESIZE_U8)
        *y8 = (uint8_t)v;
    else
        *yf = OUT == RESIZE_RAW ? (float)v : lut[v];
}

/* The most output rows resize_pairs_kernel takes: their taps are among its parameters, which with the table must stay
 * under 4 KB. */
#define RESIZE_PAIRS_ROWS 120
/* The most shared memory resize_pairs_kernel takes (what a block may have without asking); larger images go to
 * resize_kernel. */
#define RESIZE_PAIRS_SMEM (48 * 1024)

/* The output rows' taps, as kernel parameters: in the constant bank, where a warp's lanes, all on one row, read them
 * at once (from shared memory a warp's 16-byte load of one address takes four wavefronts, one a quarter warp). */
struct resize_rows {
    double w[RESIZE_PAIRS_ROWS][2]; /* row o's weights, wy0 and wy1 */
    int pair[RESIZE_PAIRS_ROWS];    /* the index in P's pairs of pair 0 of its first tap's row */
};
static_assert(sizeof(resize_rows) + sizeof(scale_lut) + 128 <= 4096, "resize_pairs_kernel's parameters within 4 KB");

/* The resize of images whose pairs fit in shared memory and S <= RESIZE_PAIRS_ROWS (the test set's 28 x 28 to every
 * size of the course). A block takes images b = blockIdx.x, + gridDim.x, ... (as many blocks as the device holds).
 * Each image: its bytes (copied by cp.async behind the image before, where `aligned`: images 16-byte aligned and h w
 * a multiple of 16; else read from global memory when needed) as doubles into P, the image with a border of zeros
 * (h + 2 rows of w + 2), held as pairs (P[r][k], P[r][k + 1]), so that an output pixel's four taps are two 16-byte
 * loads (the taps nc_resize_u8 clamps have weight 0, and so do their terms here: a zero of the border, or the
 * weight); its [min, max], by warp reductions; then its S x S outputs. A thread takes an output column ox and a band
 * of BR rows: its column's taps in registers, each row's from the parameters; a warp's lanes are on one row (or two,
 * across bands), their stores along it. The block's threads are RL bands of S columns rounded up to whole warps,
 * which reduce [min, max] whole. Held to 40 registers (three blocks of 512 threads an SM).
 * Measured (H200, the 2020 network's three launches, `nanoconv profile`; docs/PERFORMANCE-LOG.md, "Calls of 2026-11-29
 * 12:14-12:38"):
 * session 67's kernel (an image a block, its taps made per image; an output's four pixels and its row's taps from
 * shared memory, 8-byte loads; the image's bytes waited for before its outputs) 201 us; this one with the two pairs
 * reloaded only where a row's first tap moves to another input row, 166 us, then its image's bytes copied behind the
 * image before, 158 (ncu: 40 instructions a warp and pixel, 59% of the issue slots busy; the reload's branch kept
 * each pixel's double arithmetic from overlapping the next's); the pairs loaded for every row, 177, and held to 40
 * registers, 141 (the committed kernel); the reload predicated instead of branched, 147-153; two or four adjacent
 * columns a thread, 149-430. */
template <int OUT>
__global__ void __launch_bounds__(512, 3)
    resize_pairs_kernel(uint8_t *dst8, float *dstf, scale_lut lut, const resize_rows rows, const uint8_t *images, int B,
                        int h, int w, int S, double zoom_x, int RL, int aligned) {
    extern __shared__ double2 pairs[]; /* P as (h + 2, w + 1) pairs; aligned: two images' bytes; LUT: the table */
    const int WP = w + 1, HW = h * w, XB = (HW + 15) / 16 * 16;
    uint8_t *raw = (uint8_t *)(pairs + (h + 2) * WP);      /* aligned: (2, XB), the images of either parity */
    float *slut = (float *)(raw + (aligned ? 2 * XB : 0)); /* LUT: (256) */
    __shared__ int lohi[2][2]; /* an image's [min, max]: images of either parity, so that one barrier does */
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x;
    /* Image b's bytes into dst, by cp.async (aligned); a group committed either way. */
    auto stage = [&](int b, uint8_t *dst) {
        if (aligned && b < B)
            for (int i = tid; i < HW / 16; i += nt) nc_cp_async16(dst + 16 * i, images + (size_t)b * HW + 16 * i, 16);
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    stage((int)blockIdx.x, raw);
    for (int i = tid; i < (h + 2) * WP; i += nt) pairs[i] = make_double2(0.0, 0.0); /* the border stays zero */
    if (OUT == RESIZE_LUT)
        for (int i = tid; i < 256; i += nt) slut[i] = lut.v[i];
    if (tid < 2) lohi[tid][0] = 255, lohi[tid][1] = 0;
    const int BR = (S + RL - 1) / RL, ox = tid % S, r_begin = tid / S * BR, r_end = min(S, r_begin + BR);
    const nc_resize_tap cx = resize_axis_tap(ox, zoom_x, w);
    const double2 *pc = pairs + cx.pair; /* the column's pair in P's row 0 */
    /* The pixels a thread stages: i = tid, + nt, ..., at row r and column c. */
    const int sr = tid / w, sc = tid % w, dr = nt / w, dc = nt % w;
    for (int b = (int)blockIdx.x, par = 0; b < B; b += (int)gridDim.x, par ^= 1) {
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        __syncthreads(); /* image b's bytes copied (aligned); P free */
        stage(b + (int)gridDim.x, raw + (par ^ 1) * XB);
        const uint8_t *src = aligned ? raw + par * XB : images + (size_t)b * HW; /* (h, w) */
        int lo = 255, hi = 0;
        for (int i = tid, r = sr, c = sc; i < HW; i += nt) {
            const int v = src[i];
            lo = min(lo, v), hi = max(hi, v);
            double *row = (double *)(pairs + (r + 1) * WP); /* P's row r + 1 */
            row[2 * (c + 1)] = (double)v;                   /* P[r + 1][c + 1]: pair c + 1's first */
            row[2 * c + 1] = (double)v;                     /* and pair c's second */
            c += dc, r += dr;
            if (c >= w) c -= w, r++;
        }
        lo = (int)__reduce_min_sync(0xffffffffu, (unsigned)lo);
        hi = (int)__reduce_max_sync(0xffffffffu, (unsigned)hi);
        if ((tid & 31) == 0) atomicMin(&lohi[par][0], lo), atomicMax(&lohi[par][1], hi);
        __syncthreads(); /* P and [min, max] hold image b */
        const int lo8 = lohi[par][0], hi8 = lohi[par][1];
        if (tid == 0) lohi[par ^ 1][0] = 255, lohi[par ^ 1][1] = 0; /* the next image's: read before this barrier */
        const size_t o = ((size_t)b * S + min(r_begin, S - 1)) * S + ox; /* (r_begin, ox) where the band has rows */
        uint8_t *y8 = OUT == RESIZE_U8 ? dst8 + o : NULL;
        float *yf = OUT == RESIZE_U8 ? NULL : dstf + o;
        for (int r = r_begin; r < r_end; r++) {
            const double2 a = pc[rows.pair[r]], c = pc[rows.pair[r] + WP]; /* the pairs of the row's two taps */
            resize_store<OUT>(
                y8, yf, resize_pixel(a.x, a.y, c.x, c.y, rows.w[r][0], rows.w[r][1], cx.w0, cx.w1, lo8, hi8), slut);
            if (OUT == RESIZE_U8)
                y8 += S;
            else
                yf += S;
        }
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory"); /* no copy in flight at the block's end */
}

/* Rows of an image whose taps a block of resize_kernel holds at once. */
#define RESIZE_ROWS 256

/* The resize of any other images (more pixels than resize_pairs_kernel holds, or S > RESIZE_PAIRS_ROWS): a block an
 * image, its threads CT columns by RL lanes of rows (blockDim.x = CT RL), its bytes read from global memory. First
 * the image's min and max; then its S x S outputs, RESIZE_ROWS rows at a time, their taps computed once into shared
 * memory: a thread computes its column's taps once a batch of rows and walks down the rows of its lane. */
template <int OUT>
__global__ void __launch_bounds__(512) resize_kernel(uint8_t *dst8, float *dstf, scale_lut lut, const uint8_t *images,
                                                     int h, int w, int S, double zoom_y, double zoom_x, int CT) {
    __shared__ int lo8, hi8;
    __shared__ float slut[256];
    __shared__ nc_resize_tap rows[RESIZE_ROWS]; /* i0 and i1 as the offsets of their rows */
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x, RL = nt / CT;
    const uint8_t *src = images + (size_t)blockIdx.x * h * w; // (h, w)
    if (tid == 0) {
        lo8 = 255;
        hi8 = 0;
    }
    if (OUT == RESIZE_LUT)
        for (int i = tid; i < 256; i += nt) slut[i] = lut.v[i];
    __syncthreads();
    int lo = 255, hi = 0;
    for (int i = tid; i < h * w; i += nt) {
        const int v = src[i];
        lo = min(lo, v);
        hi = max(hi, v);
    }
    atomicMin(&lo8, lo);
    atomicMax(&hi8, hi);
    __syncthreads();
    for (int r0 = 0; r0 < S; r0 += RESIZE_ROWS) {
        const int nr = min(RESIZE_ROWS, S - r0);
        __syncthreads(); /* the batch before is done with rows */
        for (int i = tid; i < nr; i += nt) {
            nc_resize_tap t = resize_axis_tap(r0 + i, zoom_y, h);
            t.i0 *= w, t.i1 *= w;
            rows[i] = t;
        }
        __syncthreads();
        for (int c0 = 0; c0 < S; c0 += CT) {
            const int ox = c0 + tid % CT;
            if (ox >= S) continue;
            const nc_resize_tap cx = resize_axis_tap(ox, zoom_x, w);
            /* The thread's outputs: (r0 + r, ox) for r = tid / CT, + RL, ... */
            const size_t o = ((size_t)blockIdx.x * S + r0 + tid / CT) * S + ox;
            uint8_t *y8 = OUT == RESIZE_U8 ? dst8 + o : NULL;
            float *yf = OUT == RESIZE_U8 ? NULL : dstf + o;
            for (int r = tid / CT; r < nr; r += RL) {
                const nc_resize_tap ry = rows[r];
                auto v = [&](int off) { return (double)__ldg(src + off); };
                resize_store<OUT>(y8, yf,
                                  resize_pixel(v(ry.i0 + cx.i0), v(ry.i0 + cx.i1), v(ry.i1 + cx.i0), v(ry.i1 + cx.i1),
                                               ry.w0, ry.w1, cx.w0, cx.w1, lo8, hi8),
                                  slut);
                if (OUT == RESIZE_U8)
                    y8 += (size_t)RL * S;
                else
                    yf += (size_t)RL * S;
            }
        }
    }
}

/* The blocks of a resize_pairs_kernel the device holds at once, asked of the runtime once a device and block shape,
 * not at every launch (a slot a device: sessions on several GPUs run a host thread each). The grid's size never
 * decides a result, only how the images are shared out. */
template <int OUT> static int resize_pairs_blocks(int threads, size_t smem, int *blocks, nc_error *err) {
    static struct {
        int threads, blocks;
        size_t smem;
    } fit[NC_MAX_DEVICES];
    int device = 0;
    CUDA_RET(cudaGetDevice(&device));
    if (device < NC_MAX_DEVICES && fit[device].threads == threads && fit[device].smem == smem) {
        *blocks = fit[device].blocks;
        return NC_OK;
    }
    int sms = 0, per_sm = 0;
    CUDA_RET(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, resize_pairs_kernel<OUT>, threads, smem));
    *blocks = sms * (per_sm < 1 ? 1 : per_sm);
    if (device < NC_MAX_DEVICES) fit[device].threads = threads, fit[device].smem = smem, fit[device].blocks = *blocks;
    return NC_OK;
}

/* The resize of B images of h x w to S x S, into dst8 (OUT = RESIZE_U8) or dstf. resize_pairs_kernel where S is at
 * most RESIZE_PAIRS_ROWS and its shared memory at most RESIZE_PAIRS_SMEM, in RL = 384 / S bands of rows (at least 1,
 * at most S: 4 at the course's 86, 5 at 70 and 72, 6 at 64, 8 at 48); else resize_kernel, CT = min(S, 256) columns
 * by enough lanes of rows to take 256 threads or more (510 at most, at S = 255: its launch bounds). */
template <int OUT>
static int resize_launch(uint8_t *dst8, float *dstf, const scale_lut &lut, const uint8_t *images, int B, int h, int w,
                         int S, cudaStream_t stream, nc_error *err) {
    const double zy = (double)h / (double)S, zx = (double)w / (double)S;
    const int aligned = (uintptr_t)images % 16 == 0 && h * w % 16 == 0;
    const size_t smem = (size_t)(h + 2) * (w + 1) * sizeof(double2) + (aligned ? 2 * (size_t)h * w : 0) +
                        (OUT == RESIZE_LUT ? sizeof lut.v : 0);
    if (S <= RESIZE_PAIRS_ROWS && smem <= RESIZE_PAIRS_SMEM) {
        resize_rows rows;
        for (int o = 0; o < S; o++) {
            const nc_resize_tap t = nc_resize_axis_tap(o, zy, h);
            rows.w[o][0] = t.w0, rows.w[o][1] = t.w1;
            rows.pair[o] = t.pair * (w + 1);
        }
        const int RL = max(1, min(S, 384 / S)), threads = (RL * S + 31) / 32 * 32;
        int blocks;
        const int rc = resize_pairs_blocks<OUT>(threads, smem, &blocks, err);
        if (rc) return rc;
        resize_pairs_kernel<OUT><<<(unsigned)min(B, blocks), (unsigned)threads, smem, stream>>>(
            dst8, dstf, lut, rows, images, B, h, w, S, zx, RL, aligned);
    } else {
        const int CT = S < 256 ? S : 256, RL = (256 + CT - 1) / CT;
        resize_kernel<OUT>
            <<<(unsigned)B, (unsigned)(CT * RL), 0, stream>>>(dst8, dstf, lut, images, h, w, S, zy, zx, CT);
    }
    return NC_OK;
}

/* No resize: scaling alone. x is (n), images is (n). */
__global__ void scale_kernel(float *x, scale_lut lut, const uint8_t *images, size_t n) {
    GRID_STRIDE(i, n) x[i] = lut.v[images[i]];
}

extern "C" int nc_cuda_resize_u8(uint8_t *dst, const uint8_t *src, int B, int h, int w, int S, cudaStream_t stream,
                                 nc_error *err) {
    if (B <= 0 || S <= 0 || h <= 0 || w <= 0) return NC_OK;
    const scale_lut none = {};
    const int rc = resize_launch<RESIZE_U8>(dst, NULL, none, src, B, h, w, S, stream, err);
    if (rc) return rc;
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
        const int rc = m->scaling == NC_SCALE_RAW
                           ? resize_launch<RESIZE_RAW>(NULL, x, lut, images, B, h, w, H, stream, err)
                           : resize_launch<RESIZE_LUT>(NULL, x, lut, images, B, h, w, H, stream, err);
        if (rc) return rc;
    }
    CUDA_LAUNCHED();
    return NC_OK;
}

extern "C" int nc_cuda_layers_prepare(nc_error *err) {
    const void *kernels[] = {
        (const void *)tanh_kernel,
        (const void *)relu_kernel,
        (const void *)sigmoid_kernel,
        (const void *)pool_kernel<true>,
        (const void *)pool_kernel<false>,
        (const void *)softmax_kernel,
        (const void *)argmax_kernel,
        (const void *)scale_kernel,
        (const void *)resize_pairs_kernel<RESIZE_U8>,
        (const void *)resize_pairs_kernel<RESIZE_RAW>,
        (const void *)resize_pairs_kernel<RESIZE_LUT>,
        (const void *)resize_kernel<RESIZE_U8>,
        (const void *)resize_kernel<RESIZE_RAW>,
        (const void *)resize_kernel<RESIZE_LUT>,
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
