/*
 * The GPU layers other than the convolution: activations, pooling, dense
 * (a tiled SGEMM), softmax, argmax, and the input's resize and scaling. Each
 * computes what its src/cpu/ref.c counterpart computes, in fp32 (no reduced
 * precision anywhere). Pooling, argmax, the resize and the scaling give the
 * reference's bits exactly; the others differ from it only by the rounding of
 * the device's tanhf/expf and of fused multiply-adds.
 */
#include <math.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_layers.h"

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

/* y (B, OUT) = x (B, IN) . w (OUT, IN)^T + b: a block computes a DENSE_T x DENSE_T
 * tile of y (images x outputs), 256 threads each holding 4 x 4 of it, stepping
 * through IN by DENSE_K with both operands staged in shared memory (transposed,
 * so that a thread reads its 4 images and its 4 outputs as one float4 each).
 * Every output is summed over IN in order, in fp32 fused multiply-adds. */
#define DENSE_T 64
#define DENSE_K 16

__global__ void __launch_bounds__(256)
    dense_kernel(float *y, const float *x, const float *w, const float *b, int B, int IN, int OUT) {
    __shared__ __align__(16) float xs[DENSE_K][DENSE_T]; // xs[k][i] = x[i0 + i][k0 + k]
    __shared__ __align__(16) float ws[DENSE_K][DENSE_T]; // ws[k][o] = w[o0 + o][k0 + k]
    const int tid = (int)threadIdx.x;
    const int ti = tid / 16, to = tid % 16; // this thread's rows: images ti*4.., outputs to*4..
    const size_t i0 = (size_t)blockIdx.y * DENSE_T;
    const int o0 = (int)blockIdx.x * DENSE_T;
    float acc[4][4];
    for (int a = 0; a < 4; a++)
        for (int c = 0; c < 4; c++) acc[a][c] = 0.0f;
    for (int k0 = 0; k0 < IN; k0 += DENSE_K) {
        /* 16 consecutive threads read 16 consecutive k of one row (coalesced); 0 outside the matrices. */
        for (int j = 0; j < 4; j++) {
            const int e = tid + 256 * j, r = e / DENSE_K, kk = e % DENSE_K;
            const int k = k0 + kk;
            xs[kk][r] = (i0 + r < (size_t)B && k < IN) ? x[(i0 + r) * IN + k] : 0.0f;
            ws[kk][r] = (o0 + r < OUT && k < IN) ? w[(size_t)(o0 + r) * IN + k] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < DENSE_K; kk++) {
            const float4 xa = *reinterpret_cast<const float4 *>(&xs[kk][ti * 4]);
            const float4 wa = *reinterpret_cast<const float4 *>(&ws[kk][to * 4]);
            const float xv[4] = {xa.x, xa.y, xa.z, xa.w}, wv[4] = {wa.x, wa.y, wa.z, wa.w};
#pragma unroll
            for (int a = 0; a < 4; a++)
#pragma unroll
                for (int c = 0; c < 4; c++) acc[a][c] = fmaf(xv[a], wv[c], acc[a][c]);
        }
        __syncthreads();
    }
    for (int a = 0; a < 4; a++) {
        const size_t i = i0 + ti * 4 + a;
        if (i >= (size_t)B) break;
        for (int c = 0; c < 4; c++) {
            const int o = o0 + to * 4 + c;
            if (o < OUT) y[i * OUT + o] = b ? acc[a][c] + b[o] : acc[a][c];
        }
    }
}

extern "C" int nc_cuda_dense_forward(float *y, const float *x, const float *w, const float *b, int B, int IN, int OUT,
                                     cudaStream_t stream, nc_error *err) {
    if (B <= 0 || OUT <= 0) return NC_OK;
    /* Grid y is limited to 65535 tiles of images: a larger batch goes in slices. */
    const int slice = 65535 * DENSE_T;
    for (int b0 = 0; b0 < B; b0 += slice) {
        const int nb = B - b0 < slice ? B - b0 : slice;
        const dim3 grid((unsigned)((OUT + DENSE_T - 1) / DENSE_T), (unsigned)((nb + DENSE_T - 1) / DENSE_T));
        dense_kernel<<<grid, 256, 0, stream>>>(y + (size_t)b0 * OUT, x + (size_t)b0 * IN, w, b, nb, IN, OUT);
        CUDA_LAUNCHED();
    }
    return NC_OK;
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

/* One output position along an axis: its two taps' input indices and weights. */
struct resize_tap {
    int i0, i1;
    double w0, w1;
};

__device__ static resize_tap resize_axis_tap(int o, double zoom, int n) {
    double cc = (double)o;
    cc = __dadd_rn(cc, 0.5);
    cc = __dmul_rn(cc, zoom);
    cc = __dadd_rn(cc, -0.5);
    const double start = floor(cc);
    const double f = __dadd_rn(cc, -start);
    resize_tap t;
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

/* (v / 256.0 * wy) * wx, as the CPU rounds it (v / 256.0 is exact). */
__device__ static double resize_term(uint8_t v, double wy, double wx) {
    return __dmul_rn(__dmul_rn(__ddiv_rn((double)v, 256.0), wy), wx);
}

/* One output pixel of a (h, w) image src resized to (S, S), clipped to [lo, hi] (the input's range / 256). */
__device__ static uint8_t resize_pixel(const uint8_t *src, int h, int w, int S, double lo, double hi, int oy, int ox) {
    const resize_tap ry = resize_axis_tap(oy, __ddiv_rn((double)h, (double)S), h);
    const resize_tap cx = resize_axis_tap(ox, __ddiv_rn((double)w, (double)S), w);
    const uint8_t *row0 = src + (size_t)ry.i0 * w; // (w)
    const uint8_t *row1 = src + (size_t)ry.i1 * w; // (w)
    double t = 0.0;
    t = __dadd_rn(t, resize_term(row0[cx.i0], ry.w0, cx.w0));
    t = __dadd_rn(t, resize_term(row0[cx.i1], ry.w0, cx.w1));
    t = __dadd_rn(t, resize_term(row1[cx.i0], ry.w1, cx.w0));
    t = __dadd_rn(t, resize_term(row1[cx.i1], ry.w1, cx.w1));
    t = t < lo ? lo : t;
    t = t > hi ? hi : t;
    return (uint8_t)__dmul_rn(t, 256.0);
}

/* The float each uint8 pixel becomes (nc_scale_pixel, tabulated on the host so that the bits are the CPU's). */
struct scale_lut {
    float v[256];
};

/* One block per image: the image's min and max first (the clip range), then its S x S outputs.
 * Writes uint8 (dst8, for the tests) or the scaled floats (dstf). */
__global__ void resize_kernel(uint8_t *dst8, float *dstf, scale_lut lut, const uint8_t *images, int h, int w, int S) {
    __shared__ int lo8, hi8;
    const uint8_t *src = images + (size_t)blockIdx.x * h * w; // (h, w)
    if (threadIdx.x == 0) {
        lo8 = 255;
        hi8 = 0;
    }
    __syncthreads();
    int lo = 255, hi = 0;
    for (int i = (int)threadIdx.x; i < h * w; i += (int)blockDim.x) {
        lo = min(lo, (int)src[i]);
        hi = max(hi, (int)src[i]);
    }
    atomicMin(&lo8, lo);
    atomicMax(&hi8, hi);
    __syncthreads();
    const double dlo = __ddiv_rn((double)lo8, 256.0), dhi = __ddiv_rn((double)hi8, 256.0);
    const size_t base = (size_t)blockIdx.x * S * S;
    for (int i = (int)threadIdx.x; i < S * S; i += (int)blockDim.x) {
        const uint8_t v = resize_pixel(src, h, w, S, dlo, dhi, i / S, i % S);
        if (dst8)
            dst8[base + i] = v;
        else
            dstf[base + i] = lut.v[v];
    }
}

/* No resize: scaling alone. x is (n), images is (n). */
__global__ void scale_kernel(float *x, scale_lut lut, const uint8_t *images, size_t n) {
    GRID_STRIDE(i, n) x[i] = lut.v[images[i]];
}

#define RESIZE_THREADS 256

extern "C" int nc_cuda_resize_u8(uint8_t *dst, const uint8_t *src, int B, int h, int w, int S, cudaStream_t stream,
                                 nc_error *err) {
    if (B <= 0 || S <= 0 || h <= 0 || w <= 0) return NC_OK;
    const scale_lut none = {};
    resize_kernel<<<(unsigned)B, RESIZE_THREADS, 0, stream>>>(dst, NULL, none, src, h, w, S);
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
        resize_kernel<<<(unsigned)B, RESIZE_THREADS, 0, stream>>>(NULL, x, lut, images, h, w, H);
    }
    CUDA_LAUNCHED();
    return NC_OK;
}

extern "C" int nc_cuda_layers_prepare(nc_error *err) {
    const void *kernels[] = {
        (const void *)tanh_kernel,       (const void *)relu_kernel,        (const void *)sigmoid_kernel,
        (const void *)pool_kernel<true>, (const void *)pool_kernel<false>, (const void *)dense_kernel,
        (const void *)softmax_kernel,    (const void *)argmax_kernel,      (const void *)resize_kernel,
        (const void *)scale_kernel,
    };
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        cudaFuncAttributes attr;
        CUDA_RET(cudaFuncGetAttributes(&attr, kernels[i]));
    }
    return NC_OK;
}
