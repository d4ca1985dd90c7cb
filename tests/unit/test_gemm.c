/* nc_sgemm against a naive triple loop in double, for every instruction set this processor has, every trans_a /
 * trans_b, alpha and beta (0 with NaN in C, 1, other), leading dimensions larger than the matrices, and sizes on
 * both sides of the micro-kernel's MR rows, its 2V columns and the KC block of K. Also nc_sgemm_panels, on which the
 * cpu backend's dense layers run.
 *
 * Tolerance per output: |C - ref| <= 4 * (K + 2) * 2^-24 * (|alpha| * sum_k |a_ik b_kj| + |beta c_ij|) + 1e-30, the
 * standard error bound of a float sum of products (with room for the alpha and beta roundings). */
#include <stdint.h>

#include "cpu/cpu_features.h"
#include "cpu/gemm.h"
#include "nc_test.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static int check_case(int ta, int tb, int M, int N, int K, float alpha, float beta, int pad) {
    const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    const int arows = ta ? K : M, brows = tb ? N : K;
    float *A = malloc(sizeof(float) * (size_t)arows * lda), *B = malloc(sizeof(float) * (size_t)brows * ldb);
    float *C = malloc(sizeof(float) * (size_t)M * ldc), *C0 = malloc(sizeof(float) * (size_t)M * ldc);
    for (int i = 0; i < arows * lda; i++) A[i] = frand();
    for (int i = 0; i < brows * ldb; i++) B[i] = frand();
    for (int i = 0; i < M * ldc; i++) C0[i] = C[i] = beta == 0.0f ? NAN : frand();
    nc_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    int bad = 0;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < ldc; j++) {
            const float got = C[(size_t)i * ldc + j];
            if (j >= N) { /* padding columns are not C's: untouched */
                bad += memcmp(&got, &C0[(size_t)i * ldc + j], sizeof got) != 0;
                continue;
            }
            double ref = 0.0, mag = 0.0;
            for (int k = 0; k < K; k++) {
                const double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                const double b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                ref += a * b;
                mag += fabs(a * b);
            }
            ref *= alpha;
            mag *= fabs(alpha);
            if (beta != 0.0f) {
                ref += (double)beta * C0[(size_t)i * ldc + j];
                mag += fabs((double)beta * C0[(size_t)i * ldc + j]);
            }
            const double tol = 4.0 * (K + 2) * 0x1p-24 * mag + 1e-30;
            if (!(fabs(got - ref) <= tol)) {
                if (bad < 3)
                    fprintf(stderr,
                            "  ta %d tb %d M %d N %d K %d alpha %g beta %g pad %d: C[%d][%d] = %.9g, expected %.9g\n",
                            ta, tb, M, N, K, alpha, beta, pad, i, j, got, ref);
                bad++;
            }
        }
    }
    free(A);
    free(B);
    free(C);
    free(C0);
    return bad;
}

static void test_sgemm(void) {
    /* K about gemm.c's KC (512 since session 68; 256 before): one block, one past it, a step short of two. M about
     * the micro-kernels' rows (MR: 14 for AVX-512 since session 69, 6 for AVX2): 28 two whole panels, 29 an edge. */
    static const int sizes[][3] = {{1, 1, 1},     {3, 5, 7},     {12, 32, 16},  {13, 33, 17}, {6, 16, 1},
                                   {25, 47, 300}, {11, 8, 257},  {40, 70, 513}, {2, 100, 64}, {100, 3, 9},
                                   {14, 20, 511}, {7, 40, 1023}, {28, 32, 16},  {29, 48, 40}};
    static const float ab[][2] = {{1.0f, 0.0f}, {1.0f, 1.0f}, {-0.5f, 0.25f}, {2.0f, -1.0f}, {0.0f, 0.5f}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (size_t k = 0; k < sizeof ab / sizeof ab[0]; k++) {
                    const int pad = (int)((s + k) % 3);
                    CHECK(check_case(ta, tb, sizes[s][0], sizes[s][1], sizes[s][2], ab[k][0], ab[k][1], pad) == 0);
                }
    /* M or N of 0 leaves C alone; K of 0 scales C by beta. */
    float c[4] = {1, 2, 3, 4};
    nc_sgemm(0, 0, 0, 2, 3, 1.0f, c, 1, c, 1, 0.0f, c, 2);
    CHECK(c[0] == 1 && c[3] == 4);
    nc_sgemm(0, 0, 2, 2, 0, 1.0f, c, 1, c, 1, 0.5f, c, 2);
    CHECK(c[0] == 0.5f && c[3] == 2.0f);
}

/* nc_sgemm_panels: Y += A X on column panels, against the same double loop, and exactly in order of k for one
 * output (the property the backend relies on). */
static void test_panels(nc_cpu_isa isa) {
    const int V = nc_cpu_isa_lanes(isa);
    static const int shapes[][3] = {{10, 300, 3}, {500, 40, 4}, {13, 7, 1}, {1, 600, 2}, {25, 1100, 3}, {140, 300, 2}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int M = shapes[s][0], K = shapes[s][1], np = shapes[s][2];
        float *A = malloc(sizeof(float) * (size_t)M * K), *X = malloc(sizeof(float) * (size_t)np * K * V);
        float *Y = malloc(sizeof(float) * (size_t)np * M * V);
        float *ap = malloc(sizeof(float) * nc_sgemm_packed_a_floats(isa, M, K));
        for (int i = 0; i < M * K; i++) A[i] = frand();
        for (int i = 0; i < np * K * V; i++) X[i] = frand();
        for (int i = 0; i < np * M * V; i++) Y[i] = 1.0f;
        nc_sgemm_pack_a(isa, ap, 0, M, K, 1.0f, A, K);
        nc_sgemm_panels(isa, M, K, ap, np, X, (size_t)K * V, Y, (size_t)M * V);
        int bad = 0;
        for (int g = 0; g < np; g++)
            for (int i = 0; i < M; i++)
                for (int v = 0; v < V; v++) {
                    double ref = 1.0, mag = 1.0;
                    for (int k = 0; k < K; k++) {
                        ref += (double)A[i * K + k] * X[((size_t)g * K + k) * V + v];
                        mag += fabs((double)A[i * K + k] * X[((size_t)g * K + k) * V + v]);
                    }
                    bad += !(fabs(Y[((size_t)g * M + i) * V + v] - ref) <= 4.0 * (K + 2) * 0x1p-24 * mag);
                }
        CHECK(bad == 0);
        /* Output (0, 0, lane 0) is 1 + the products in order of k, each rounded as the instruction set rounds. */
        float acc = 1.0f;
        for (int k = 0; k < K; k++)
            acc = isa == NC_ISA_SCALAR ? acc + A[k] * X[(size_t)k * V] : fmaf(A[k], X[(size_t)k * V], acc);
        CHECK(Y[0] == acc);
        free(A);
        free(X);
        free(Y);
        free(ap);
    }
}

int main(void) {
    for (int isa = 0; isa < NC_ISA_COUNT; isa++) {
        if (!nc_cpu_isa_supported((nc_cpu_isa)isa)) {
            printf("test_gemm: %s not supported by this processor: not tested here\n",
                   nc_cpu_isa_name((nc_cpu_isa)isa));
            continue;
        }
        nc_cpu_isa_force(isa);
        const int before = nc_test_fail;
        test_sgemm();
        test_panels((nc_cpu_isa)isa);
        printf("test_gemm: %s %s\n", nc_cpu_isa_name((nc_cpu_isa)isa), nc_test_fail == before ? "ok" : "FAILED");
    }
    nc_cpu_isa_force(-1);
    return nc_test_done("test_gemm");
}
