/*
 * Convolution as a matrix multiply: versions 3 and 4.
 *
 * Per image b, with KK = C*K*K and N = Ho*Wo:
 *   y_b (M, N) = k (M, KK) . U_b (KK, N),   U_b[(c*K + p)*K + q][h*Wo + w] = x[b][c][h+p][w+q]
 * U_b is the input "unrolled" (im2col). Both versions sum over kk in order, the reference's order.
 *
 *   3  unroll+gemm: one kernel writes U for a slice of images to a workspace, a second multiplies with a
 *      classic 16 x 16 shared-memory tiled matrix multiply (one output per thread). U is K*K times the input:
 *      the extra write and read of it is what version 4 removes.
 *      nanoconv eval --model M --backend cuda --conv-kernel 3
 *   4  implicit-gemm: one kernel; each 64 x 64 output tile (channels x positions, positions running across
 *      images so that small maps still fill the tile) builds its 16 x 64 slices of U in shared memory straight
 *      from x, through a table of the offsets of (c, p, q), and each of 256 threads keeps a 4 x 4 tile of the
 *      output in registers.
 *      nanoconv eval --model M --backend cuda --conv-kernel 4
 */
#include "cuda/conv_ladder.h"
#include "cuda/cuda_check.h"

/* ---------------------------------------------------------------- version 3 */

#define GEMM3_T 16
/* Workspace bytes for U: the launcher unrolls as many images at a time as fit. */
#define GEMM3_WORKSPACE (256u << 20)

/* One thread per element of U for images b0.. of the slice: u is (Bs, KK, N), x is (B, C, H, W). */
__global__ void conv_unroll_kernel(float *__restrict__ u, const float *__restrict__ x, int C, int H, int W, int K,
                                   size_t b0, size_t total) {
    const int Ho = H - K + 1, Wo = W - K + 1, N = Ho * Wo, KK = C * K * K;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        const int n = (int)(i % N), kk = (int)(i / N % KK);
        const size_t b = b0 + i / ((size_t)N * KK);
        const int c = kk / (K * K), p = kk / K % K, q = kk % K;
        u[i] = x[((b * C + c) * H + n / Wo + p) * W + n % Wo + q];
    }
}

/* y_b (M, N) = k (M, KK) . u_b (KK, N) for the slice's images (grid z); one output per thread. */
__global__ void __launch_bounds__(GEMM3_T *GEMM3_T)
    conv_gemm3_kernel(float *__restrict__ y, const float *__restrict__ k, const float *__restrict__ u,
                      const float *__restrict__ bias, int M, int KK, int N, size_t b0) {
    __shared__ float ks[GEMM3_T][GEMM3_T]; // ks[i][j] = k[m0 + i][kk0 + j]
    __shared__ float us[GEMM3_T][GEMM3_T]; // us[i][j] = u_b[kk0 + i][n0 + j]
    const int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
    const int n = (int)blockIdx.x * GEMM3_T + tx, m = (int)blockIdx.y * GEMM3_T + ty;
    const float *ub = u + (size_t)blockIdx.z * KK * N; // (KK, N)
    float acc = 0.0f;
    for (int kk0 = 0; kk0 < KK; kk0 += GEMM3_T) {
        ks[ty][tx] = (m < M && kk0 + tx < KK) ? k[(size_t)m * KK + kk0 + tx] : 0.0f;
        us[ty][tx] = (kk0 + ty < KK && n < N) ? ub[(size_t)(kk0 + ty) * N + n] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int j = 0; j < GEMM3_T; j++) acc = fmaf(ks[ty][j], us[j][tx], acc);
        __syncthreads();
    }
    if (m < M && n < N) {
        const size_t b = b0 + blockIdx.z;
        y[(b * M + m) * N + n] = bias ? acc + bias[m] : acc;
    }
}

int nc_conv_launch_unroll_gemm(NC_CONV_LAUNCHER_ARGS) {
    const int Ho = H - K + 1, Wo = W - K + 1, N = Ho * Wo, KK = C * K * K;
    const size_t per_image = (size_t)KK * N * sizeof(float);
    size_t slice = GEMM3_WORKSPACE / per_image;
    if (slice < 1) slice = 1;
    if (slice > (size_t)B) slice = (size_t)B;
    if (slice > 65535) slice = 65535; /* grid z */
    /* Stream-ordered, from the device's pool; keep what the pool holds between calls, so that repeated launches
     * do not go back to the driver for the workspace each time. */
    int device = 0;
    CUDA_RET(cudaGetDevice(&device));
    cudaMemPool_t pool;
    CUDA_RET(cudaDeviceGetDefaultMemPool(&pool, device));
    uint64_t keep = GEMM3_WORKSPACE + (64u << 20);
    CUDA_RET(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    float *u = NULL; // (slice, KK, N)
    CUDA_RET(cudaMallocAsync((void **)&u, slice * per_image, stream));
    int rc = NC_OK;
    for (size_t b0 = 0; b0 < (size_t)B; b0 += slice) {
        const size_t nb = (size_t)B - b0 < slice ? (size_t)B - b0 : slice;
        const size_t total = nb * KK * N;
        const size_t blocks = (total + 255) / 256;
        conv_unroll_kernel<<<(unsigned)(blocks < 65536 ? blocks : 65536), 256, 0, stream>>>(u, x, C, H, W, K, b0,
                                                                                            total);
        if ((rc = nc_cuda_status(cudaGetLastError(), err, __FILE__, __LINE__, "conv_unroll_kernel"))) break;
        const dim3 grid((unsigned)((N + GEMM3_T - 1) / GEMM3_T), (unsigned)((M + GEMM3_T - 1) / GEMM3_T), (unsigned)nb);
        conv_gemm3_kernel<<<grid, dim3(GEMM3_T, GEMM3_T), 0, stream>>>(y, k, u, bias, M, KK, N, b0);
        if ((rc = nc_cuda_status(cudaGetLastError(), err, __FILE__, __LINE__, "conv_gemm3_kernel"))) break;
    }
    const int rc_free = nc_cuda_status(cudaFreeAsync(u, stream), rc ? NULL : err, __FILE__, __LINE__, "cudaFreeAsync");
    return rc ? rc : rc_free;
}

/* ---------------------------------------------------------------- version 4 */

#define IGEMM_TM 64 /* output channels per tile */
#define IGEMM_TN 64 /* output positions per tile (across images) */
#define IGEMM_TK 16 /* steps of kk per shared-memory stage */
/* Largest C*K*K whose offset table fits beside the tiles in 48 KB (every zoo layer: at most 588). */
#define IGEMM_MAX_KK 8192

/* Grid (ceil(B*N / 64), ceil(M / 64)); dynamic shared memory: the offset table, KK ints. */
__global__ void __launch_bounds__(256)
    conv_igemm_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ k,
                      const float *__restrict__ bias, int B, int C, int H, int W, int M, int K) {
    __shared__ __align__(16) float ks[IGEMM_TK][IGEMM_TM]; // ks[j][i] = k[m0 + i][kk0 + j]
    __shared__ __align__(16) float us[IGEMM_TK][IGEMM_TN]; // us[j][i] = U[kk0 + j][n0 + i], n across images
    extern __shared__ int off[];                           // off[kk] = c*H*W + p*W + q, (KK)
    const int Ho = H - K + 1, Wo = W - K + 1, N = Ho * Wo, KK = C * K * K;
    const int tid = (int)threadIdx.x;
    for (int kk = tid; kk < KK; kk += 256) off[kk] = (kk / (K * K)) * H * W + (kk / K % K) * W + kk % K;
    const size_t total = (size_t)B * N;
    const size_t n0 = (size_t)blockIdx.x * IGEMM_TN;
    const int m0 = (int)blockIdx.y * IGEMM_TM;
    /* The position this thread stages (column tid % 64 of us) never changes: its image and pixel base once. */
    const size_t ln = n0 + tid % IGEMM_TN;
    const bool ln_ok = ln < total;
    const size_t lb = ln_ok ? ln / N : 0;
    const int lr = ln_ok ? (int)(ln % N) : 0;
    const float *xb = x + lb * C * H * W + (lr / Wo) * W + lr % Wo; // x[lb][0][h][w]
    const int tm = tid / 16, tn = tid % 16; // this thread's outputs: channels m0+tm*4.., positions n0+tn*4..
    float acc[4][4];
#pragma unroll
    for (int a = 0; a < 4; a++)
#pragma unroll
        for (int c = 0; c < 4; c++) acc[a][c] = 0.0f;
    __syncthreads();
    for (int kk0 = 0; kk0 < KK; kk0 += IGEMM_TK) {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int e = tid + 256 * j;
            /* Weights: 16 consecutive threads read 16 consecutive kk of one channel's row. */
            const int wr = e / IGEMM_TK, wk = e % IGEMM_TK;
            ks[wk][wr] = (m0 + wr < M && kk0 + wk < KK) ? k[(size_t)(m0 + wr) * KK + kk0 + wk] : 0.0f;
            /* U: 64 consecutive threads read one kk at 64 consecutive positions. */
            const int uk = e / IGEMM_TN;
            us[uk][tid % IGEMM_TN] = (ln_ok && kk0 + uk < KK) ? xb[off[kk0 + uk]] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < IGEMM_TK; j++) {
            const float4 kv = *reinterpret_cast<const float4 *>(&ks[j][tm * 4]);
            const float4 uv = *reinterpret_cast<const float4 *>(&us[j][tn * 4]);
            const float ka[4] = {kv.x, kv.y, kv.z, kv.w}, ua[4] = {uv.x, uv.y, uv.z, uv.w};
#pragma unroll
            for (int a = 0; a < 4; a++)
#pragma unroll
                for (int c = 0; c < 4; c++) acc[a][c] = fmaf(ka[a], ua[c], acc[a][c]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int c = 0; c < 4; c++) {
        const size_t n = n0 + tn * 4 + c;
        if (n >= total) break;
        const size_t b = n / N;
        const int r = (int)(n % N);
#pragma unroll
        for (int a = 0; a < 4; a++) {
            const int m = m0 + tm * 4 + a;
            if (m < M) y[(b * M + m) * N + r] = bias ? acc[a][c] + bias[m] : acc[a][c];
        }
    }
}

int nc_conv_launch_implicit_gemm(NC_CONV_LAUNCHER_ARGS) {
    const int KK = C * K * K;
    if (KK > IGEMM_MAX_KK)
        return nc_fail(err, NC_ERR_ARG, "conv version 4 (implicit-gemm): C*K*K = %d is over %d (version 3 takes it)",
                       KK, IGEMM_MAX_KK);
    const size_t total = (size_t)B * (H - K + 1) * (W - K + 1);
    const dim3 grid((unsigned)((total + IGEMM_TN - 1) / IGEMM_TN), (unsigned)((M + IGEMM_TM - 1) / IGEMM_TM));
    conv_igemm_kernel<<<grid, 256, (size_t)KK * sizeof(int), stream>>>(y, x, k, bias, B, C, H, W, M, K);
    CUDA_LAUNCHED();
    return NC_OK;
}
