/*
 * The int8-slice convolution prototype (bench/ab/conv_i8_proto.cu) alone on 2018 spring's second layer
 * (6 x 30 x 30 -> 16, K 5) at B images: its errors against double sums on the first 256 images, beside the sequential
 * fmaf sums', and its median time over 20 runs, for each of its launch variants (ci8_launch's first argument; ONLY=16
 * runs variants 1 and 6):
 *   1  A from registers, 1 warpgroup a block, 3 blocks an SM (168 registers), one staging buffer
 *   2  the same, 4 blocks an SM (128 registers: ptxas serializes the MMAs)
 *   3  as 1 with two staging buffers (2 blocks an SM: shared memory)
 *   4  A from registers, 2 warpgroups a block, 2 blocks an SM
 *   5  both operands from shared memory, 1 warpgroup a block, 2 blocks an SM
 *   6  the same, 2 warpgroups a block
 *   7  the same, 3 warpgroups a block, 1 block an SM
 *   8  the same, 4 warpgroups a block, two staging buffers
 *   9  A by ldmatrix, x's slices as bytes (ci8l_conv_kernel), 3 blocks an SM (2 by shared memory)
 *  10  the same, 4 blocks an SM (128 registers: serialized)
 *  11  the same, two staging buffers
 *  12  as 1, one slice's fragments at a time (LEAN), 4 blocks an SM
 *  13  as 12, 3 blocks an SM
 *  14  as 1, x's slices as bytes (BYTES)
 *  15  as 12, x's slices as bytes
 * (ONLY names variants 10..15 as a..f.) Built with -DCI8_PROFILE, each variant also prints the cycles a block spends an
 * image in each phase; -DCI8_ABL_NOMMA, _NOEPI and _NOLOAD leave out the MMAs, the epilogue's sums or the fragments'
 * loads of ci8_conv_kernel (wrong sums: for the time of the rest).
 * One translation unit with the kernels (sm_90a only: a call carries at most 64 MiB, and no CMake target builds it):
 *   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -DCI8_VARIANTS -DCI8_VERBOSE \
 *        -I src -I include -I bench/ab -o conv_i8_one bench/ab/conv_i8_one.cu src/core/error.c && ./conv_i8_one [B]
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "conv_i8_proto.cu"

#define AB_NAME "conv_i8_one"
#include "ab_harness.h" /* CK */

static float urand(unsigned long long *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) / 16777216.0);
}

int main(int argc, char **argv) {
    const int B = argc > 1 ? atoi(argv[1]) : 10000, C = 6, H = 30, W = 30, M = 16, K = 5;
    const int Ho = H - K + 1, Wo = W - K + 1, P = Ho * Wo;
    const size_t nx = (size_t)B * C * H * W, ny = (size_t)B * M * P;
    std::vector<float> x(nx), k(M * C * K * K), b(M);
    unsigned long long seed = 1;
    for (auto &v : x) v = tanhf(6.0f * urand(&seed) - 3.0f);
    for (auto &v : k) v = 0.16f * urand(&seed) - 0.08f;
    for (auto &v : b) v = 0.2f * urand(&seed) - 0.1f;
    float *dx, *dk, *db, *dy;
    CK(cudaMalloc(&dx, nx * 4));
    CK(cudaMalloc(&dy, ny * 4));
    CK(cudaMalloc(&dk, k.size() * 4));
    CK(cudaMalloc(&db, b.size() * 4));
    CK(cudaMemcpy(dx, x.data(), nx * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dk, k.data(), k.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> y(ny);
    for (int nwg = 1; nwg <= 15; nwg++) {
        if (getenv("ONLY") && !strchr(getenv("ONLY"), nwg < 10 ? '0' + nwg : 'a' + nwg - 10)) continue;
        nc_error err = {};
        CK(cudaMemset(dy, 0xff, ny * 4));
        if (ci8_launch(nwg, dy, dx, dk, db, B, C, H, W, M, K, 0, &err)) {
            fprintf(stderr, "conv_i8_one: %s\n", err.msg);
            return 1;
        }
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(y.data(), dy, ny * 4, cudaMemcpyDeviceToHost));
        const int nchk = std::min(B, 256);
        double sum_e = 0, max_e = 0, sum_f = 0, max_f = 0;
        long n = 0, bad = 0;
        for (int i = 0; i < nchk; i++)
            for (int m = 0; m < M; m++)
                for (int p = 0; p < P; p++) {
                    const int oy = p / Wo, ox = p % Wo;
                    double s = b[m], a = fabs(b[m]);
                    float f = 0.0f;
                    for (int c = 0; c < C; c++)
                        for (int ky = 0; ky < K; ky++)
                            for (int kx = 0; kx < K; kx++) {
                                const float xv = x[(((size_t)i * C + c) * H + oy + ky) * W + ox + kx];
                                const float wv = k[((m * C + c) * K + ky) * K + kx];
                                s += (double)xv * wv, a += fabs((double)xv * wv);
                                f = fmaf(xv, wv, f);
                            }
                    f += b[m];
                    const float g = y[((size_t)i * M + m) * P + p];
                    const double eg = fabs(g - s) / a, ef = fabs(f - s) / a;
                    if (!(eg < 1e-6)) bad++;
                    sum_e += eg, max_e = std::max(max_e, eg), sum_f += ef, max_f = std::max(max_f, ef), n++;
                }
        std::vector<float> ms;
        for (int r = 0; r < 21; r++) {
            CK(cudaEventRecord(e0));
            ci8_launch(nwg, dy, dx, dk, db, B, C, H, W, M, K, 0, &err);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float t;
            CK(cudaEventElapsedTime(&t, e0, e1));
            if (r) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
#ifdef CI8_PROFILE
        {
            long long pr[6];
            CK(cudaMemcpyFromSymbol(pr, ci8_prof, sizeof pr));
            printf("  cycles an image a block: wait %.0f, max %.0f, slices %.0f, scales %.0f, tiles %.0f\n",
                   pr[0] / (double)pr[5], pr[1] / (double)pr[5], pr[2] / (double)pr[5], pr[3] / (double)pr[5],
                   pr[4] / (double)pr[5]);
            long long z[6] = {};
            CK(cudaMemcpyToSymbol(ci8_prof, z, sizeof z));
        }
#endif
        const double med = ms[ms.size() / 2];
        printf("%d warpgroups a block: %.4f ms (runs %.4f..%.4f), %.0f GB/s; errors / sum|xw| over %ld outputs: "
               "mean %.2e max %.2e (fmaf sums %.2e, %.2e); %ld over 1e-6\n",
               nwg, med, ms.front(), ms.back(), (nx + ny) * 4 / med / 1e6, n, sum_e / n, max_e, sum_f / n, max_f, bad);
    }
    return 0;
}
