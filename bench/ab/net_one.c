/* The whole network on the cuda backend, as `nanoconv bench`'s network lines time it (a session per line, a warm-up,
 * then nc_session_run on the first N test images, host uint8 to predictions), with every run's time kept: to see how
 * a line's runs spread, and whether a slow line is slow in its kernels (Op Time, CUDA events) or outside them.
 *   net_one MODEL N ROUNDS REPS PRECISION...      PRECISION fp32, tf32, 3xtf32, fp16, bf16, or cudnn (that backend)
 * Each round times a fresh session of each precision in the order given, then probes a fresh pinned buffer of the
 * N images' size: the host copy into it (nc_host_copy, as the backend does) and its upload (cudaMemcpyAsync), each
 * the median of 5. The test images come from $NANOCONV_DATA, page-locked as the bench's and eval's are
 * (nc_dataset_pin; NET_ONE_PAGEABLE=1 leaves them pageable, so that the runs copy them first). Built as the net_one
 * target of a build with CUDA. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/cuda_layers.h"
#include "cuda/host_copy.h"
#include "nanoconv.h"

#define AB_NAME "net_one"
#include "ab_harness.h"

#define MAX_REPS 200

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* One line: a fresh session of the precision (-1: the cudnn backend), a warm-up, reps timed runs. Prints min, median,
 * max and the runs over 1.2 times the min, with the mean of each run's Op Times (its kernels) and of the rest of its
 * wall time. */
static int line(const nc_model *m, const nc_dataset *ds, int n, int reps, int precision, int round, int *pred) {
    nc_run_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.precision = precision < 0 ? NC_PRECISION_FP32 : precision;
    const char *name = precision < 0 ? "cudnn" : nc_precision_name(precision);
    nc_session *s = NULL;
    nc_error err = {0};
    float t[MAX_REPS], sorted[MAX_REPS];
    double conv = 0.0, rest = 0.0;
    int rc = nc_session_create(&s, m, precision < 0 ? "cudnn" : "cuda", &opts, &err);
    if (!rc) rc = nc_session_run(s, ds->images, n, ds->h, ds->w, pred, NULL, NULL, &err);
    for (int k = 0; k < reps && !rc; k++) {
        nc_timing tm;
        memset(&tm, 0, sizeof tm);
        const double t0 = now_ms();
        rc = nc_session_run(s, ds->images, n, ds->h, ds->w, pred, NULL, &tm, &err);
        t[k] = (float)(now_ms() - t0);
        double c = 0.0;
        for (int i = 0; i < tm.n_conv; i++) c += 1e3 * tm.conv_s[i];
        conv += c, rest += t[k] - c;
    }
    nc_session_free(s);
    if (rc) {
        fprintf(stderr, "net_one: %s: %s\n", name, err.msg);
        return 1;
    }
    memcpy(sorted, t, (size_t)reps * sizeof(float));
    qsort(sorted, (size_t)reps, sizeof(float), cmp_float);
    int slow = 0;
    for (int k = 0; k < reps; k++) slow += t[k] > 1.2f * sorted[0];
    const float med = reps % 2 ? sorted[reps / 2] : 0.5f * (sorted[reps / 2 - 1] + sorted[reps / 2]);
    printf("%3d %-6s min %7.3f  median %7.3f  max %7.3f ms  slow %2d/%d  conv %6.3f  rest %6.3f ms  runs", round, name,
           sorted[0], med, sorted[reps - 1], slow, reps, conv / reps, rest / reps);
    for (int k = 0; k < reps; k++) printf(" %.2f", t[k]);
    printf("\n");
    return 0;
}

/* A fresh pinned buffer of the images' size: the host copy into it and its upload, the median of 5 each. */
static int probe(const nc_dataset *ds, int n, int round) {
    const size_t bytes = (size_t)n * ds->h * ds->w;
    uint8_t *h, *d;
    cudaEvent_t e0, e1;
    float tc[5], tu[5];
    CK(cudaMallocHost((void **)&h, bytes));
    CK(cudaMalloc((void **)&d, bytes));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int k = 0; k < 5; k++) {
        const double t0 = now_ms();
        nc_host_copy(h, ds->images, bytes);
        tc[k] = (float)(now_ms() - t0);
        CK(cudaEventRecord(e0, 0));
        CK(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, 0));
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&tu[k], e0, e1));
    }
    qsort(tc, 5, sizeof(float), cmp_float);
    qsort(tu, 5, sizeof(float), cmp_float);
    printf("%3d probe  host copy %.3f ms (%.1f GB/s)  upload %.3f ms (%.1f GB/s)\n", round, tc[2], bytes / 1e6 / tc[2],
           tu[2], bytes / 1e6 / tu[2]);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaFree(d));
    CK(cudaFreeHost(h));
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: net_one MODEL N ROUNDS REPS PRECISION...\n");
        return 2;
    }
    const int n = atoi(argv[2]), rounds = atoi(argv[3]), reps = atoi(argv[4]);
    int prec[16], np = 0;
    for (int a = 5; a < argc && np < 16; a++) {
        int p = strcmp(argv[a], "cudnn") == 0 ? -1 : -2;
        for (int q = 0; q < NC_PRECISION_COUNT; q++)
            if (strcmp(argv[a], nc_precision_name(q)) == 0) p = q;
        if (p < -1) {
            fprintf(stderr, "net_one: precision %s: expected fp32, tf32, 3xtf32, fp16, bf16 or cudnn\n", argv[a]);
            return 2;
        }
        prec[np++] = p;
    }
    if (rounds < 1 || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "net_one: arguments out of range\n");
        return 2;
    }
    nc_error err = {0};
    nc_model *m = NULL;
    nc_dataset ds;
    memset(&ds, 0, sizeof ds);
    int *pred = NULL, rc = 0;
    if (nc_model_load(&m, argv[1], &err) || nc_dataset_load_split(&ds, NULL, "t10k", &err)) {
        fprintf(stderr, "net_one: %s\n", err.msg);
        rc = 1;
    } else if (n < 1 || n > ds.n) {
        fprintf(stderr, "net_one: N %d: the test split has %d images\n", n, ds.n);
        rc = 2;
    } else if (!getenv("NET_ONE_PAGEABLE") && nc_dataset_pin(&ds, &err)) {
        fprintf(stderr, "net_one: %s\n", err.msg);
        rc = 1;
    } else if (!(pred = malloc((size_t)n * sizeof(int)))) {
        fprintf(stderr, "net_one: out of host memory\n");
        rc = 1;
    }
    for (int r = 0; r < rounds && !rc; r++) {
        for (int i = 0; i < np && !rc; i++) rc = line(m, &ds, n, reps, prec[i], r, pred);
        if (!rc) rc = probe(&ds, n, r);
        fflush(stdout);
    }
    free(pred);
    nc_dataset_free(&ds);
    nc_model_free(m);
    return rc;
}
