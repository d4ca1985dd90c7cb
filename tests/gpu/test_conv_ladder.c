/*
 * Every convolution kernel version of the ladder (conv_kernels.cu's table, conv_ladder.h) against the CPU
 * reference nc_ref_conv, on random shapes (C = 1 and C > 1, K = 3..7, with and without bias, maps smaller and
 * larger than a tile or a band), and version 6's fused epilogue (bias, tanh / relu / sigmoid / none, max or
 * average pooling 2/2 and 4/4 or none, float or uint8 input, the pixels 4-byte aligned or not) against nc_ref_conv,
 * the activation and the pooling of src/cpu/ref.c; versions 5 and 6 run conv_directc.cu's kernel on C > 1 float
 * input where it takes the layer (checked for the zoo's), else conv_direct.cu's, and both are covered, each with
 * more work items than blocks (the copies ahead run from one item into the next) and in several bands. Each fused
 * case runs version 14's launcher too (two rows of four a thread, two 2/2 pooling windows side by side), which must
 * give version 6's bits, and version 15's (Winograd's minimal filtering) where it takes the case, within the tolerance
 * below; test_winograd runs it on every layer it has a kernel for, alone and fused, with every activation and
 * pooling it takes. Outputs are poisoned with NaN before each run, so an element never written fails. Skips (77)
 * where the build has no CUDA or the machine no GPU.
 *
 * Tolerance |gpu - ref| <= 1e-4 + 1e-4 |ref| (inputs in [-1, 1] or pixels, weights +-1/sqrt(C*K*K)): versions
 * 1 to 6 sum in the reference's order (c, p, q) but with fused multiply-adds, 11 and 12 in slices of channels
 * added at the end, all ~1e-6 apart, 15 (Winograd) about 5 times that; an indexing or synchronisation bug is O(1)
 * apart. Every version but 12 (atomic additions in the hardware's order) must give the same bits when run again. Max
 * pooling fused takes the maximum before the activation, which the activations' monotonicity makes the same value.
 */
#ifndef NC_HAVE_CUDA
#include <stdio.h>
int main(void) {
    printf("SKIP: nanoconv was built without CUDA (no nvcc found at configure time)\n");
    return 77;
}
#else
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "core/model.h"
#include "cpu/ref.h"
#include "cuda/conv_ladder.h"
#include "cuda/cuda_layers.h"
#include "nc_test.h"

#define GPU_TEST_SEED 0x2545F4914F6CDD1Dull
#include "gpu/gpu_test.h"

/* Every version on one shape; versions that do not take the shape must say so with NC_ERR_ARG. */
static void test_case(int B, int C, int H, int W, int M, int K, int with_bias) {
    conv_data d = conv_data_make(B, C, H, W, M, K, 1.0f / sqrtf((float)(C * K * K)), with_bias, 0);
    const size_t ny = d.ny;
    float *dx = d.dx, *dk = d.dk, *db = d.db, *dy = d.dy, *ref = d.ref;
    for (int v = 1; v <= nc_cuda_conv_num_versions(); v++) {
        /* The tensor-core versions have tolerances of their own: test_conv_tc.c. */
        if (nc_cuda_conv_version_precision(v) != NC_PRECISION_FP32) continue;
        nc_error err = {0};
        CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
        const int rc = nc_cuda_conv_forward(v, dy, dx, dk, with_bias ? db : NULL, B, C, H, W, M, K, stream, &err);
        char what[128];
        snprintf(what, sizeof what, "conv v%d (%s) B%d C%d H%d W%d M%d K%d%s", v, nc_cuda_conv_version_name(v), B, C, H,
                 W, M, K, with_bias ? " bias" : "");
        if (rc == NC_ERR_ARG) { /* a shape outside the version's range: said, not computed wrongly */
            printf("%s: not taken: %s\n", what, err.msg);
            CHECK(strstr(err.msg, "version") != NULL);
            /* Versions 5, 6, 13 and 14 take every K = 3..7 layer here (the largest, C = 64 of 20 x 20 with M = 64, only
             * above their usual 96 KB of shared memory: two bands and a group's weights take 133 KB). */
            if ((v == 5 || v == 6 || v == 13 || v == 14) && K >= 3 && K <= 7)
                fprintf(stderr, "%s: versions 5, 6, 13 and 14 must take it\n", what);
            CHECK(!((v == 5 || v == 6 || v == 13 || v == 14) && K >= 3 && K <= 7));
            const nc_conv_epilogue alone = {-1, -1, 1, 1};
            if (v == 15 && nc_conv_wino_takes(C, H, W, M, K, &alone, 0))
                fprintf(stderr, "%s: version 15 says it takes the layer\n", what);
            CHECK(!(v == 15 && nc_conv_wino_takes(C, H, W, M, K, &alone, 0)));
            continue;
        }
        check_rc(rc, &err, what);
        float *y = host_from(dy, ny);
        check_close(what, y, ref, ny, 1e-4, 1e-4);
        if (nc_cuda_conv_version_reproducible(v)) { /* the same bits again: no race, no order left to chance */
            CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
            check_rc(nc_cuda_conv_forward(v, dy, dx, dk, with_bias ? db : NULL, B, C, H, W, M, K, stream, &err), &err,
                     what);
            float *again = host_from(dy, ny);
            if (memcmp(again, y, ny * sizeof(float)) != 0) fprintf(stderr, "%s: a second run differs\n", what);
            CHECK(memcmp(again, y, ny * sizeof(float)) == 0);
            free(again);
        }
        free(y);
    }
    conv_data_free(&d);
}

/* Version 6's fused path on one shape: act is NC_TANH, NC_RELU, NC_SIGMOID or -1; pool NC_MAXPOOL, NC_AVGPOOL
 * or -1 with P = S; u8: the input as uint8 pixels through a scaling table (raw or /255), 16-byte aligned (1), 4, 8
 * or 12 bytes past such an address (3: conv_direct.cu copies them ahead by 4 bytes, not 16), or 1 to 3 bytes past it
 * (2: it reads them as it converts them, instead of copying them ahead by cp.async); else floats, 16-byte aligned
 * (0) or 1 to 3 floats past such an address (-1: conv_direct.cu copies them by 4 bytes, not 16), one float past it
 * (-2: not 8-byte aligned, version 15 copies a float at a time) or two (-3: 8-byte aligned, it copies pairs). */
static void test_fused_case(int B, int C, int H, int W, int M, int K, int with_bias, int act, int pool, int P, int u8) {
    const int Ho = H - K + 1, Wo = W - K + 1;
    const int Hp = pool < 0 ? Ho : (Ho - P) / P + 1, Wp = pool < 0 ? Wo : (Wo - P) / P + 1;
    const size_t nx = (size_t)B * C * H * W, nk = (size_t)M * C * K * K;
    const size_t nc = (size_t)B * M * Ho * Wo, ny = (size_t)B * M * Hp * Wp;
    float *x = xmalloc(nx * sizeof(float)), *k = xmalloc(nk * sizeof(float)), *bias = xmalloc(M * sizeof(float));
    uint8_t *xu = xmalloc(nx);
    float *conv = xmalloc(nc * sizeof(float)), *ref = xmalloc(ny * sizeof(float));
    nc_conv_lut lut;
    const int unit = rand_int(0, 1);
    for (int p = 0; p < 256; p++) lut.v[p] = unit ? (float)p / 255.0f : (float)p;
    const float bound = 1.0f / sqrtf((float)(C * K * K));
    if (u8 > 0) {
        for (size_t i = 0; i < nx; i++) {
            xu[i] = (uint8_t)rand_int(0, 255);
            x[i] = lut.v[xu[i]];
        }
    } else {
        fill(x, nx, -1.0f, 1.0f);
    }
    fill(k, nk, -bound, bound);
    fill(bias, M, -1.0f, 1.0f);
    ref_fused(ref, conv, x, k, with_bias ? bias : NULL, B, C, H, W, M, K, act, pool, P);
    const int x_at = u8 == -2 ? 1 : u8 == -3 ? 2 : u8 < 0 ? rand_int(1, 3) : 0;
    float *dx_alloc, *dx, *dk = dev_from(k, nk * sizeof(float));
    CU(cudaMalloc((void **)&dx_alloc, (nx + x_at) * sizeof(float))); /* the input ends where the allocation does */
    dx = dx_alloc + x_at;
    CU(cudaMemcpy(dx, x, nx * sizeof(float), cudaMemcpyHostToDevice));
    float *db = dev_from(bias, M * sizeof(float)), *dy;
    const int xu_at = u8 == 2 ? rand_int(1, 3) : u8 == 3 ? 4 * rand_int(1, 3) : 0;
    uint8_t *dxu_alloc, *dxu;
    CU(cudaMalloc((void **)&dxu_alloc, nx + xu_at)); /* so that compute-sanitizer sees any read past the pixels */
    dxu = dxu_alloc + xu_at;
    CU(cudaMemcpy(dxu, xu, nx, cudaMemcpyHostToDevice));
    CU(cudaMalloc((void **)&dy, ny * sizeof(float)));
    CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
    const nc_conv_epilogue e = {act, pool, P, P};
    nc_error err = {0};
    char what[160];
    snprintf(what, sizeof what, "fused B%d C%d H%d W%d M%d K%d%s act %d pool %d/%d %s%s", B, C, H, W, M, K,
             with_bias ? " bias" : "", act, pool, P, u8 > 0 ? (unit ? "u8 unit" : "u8 raw") : "float",
             u8 == 2 ? " (pixels not 4-byte aligned)"
             : xu_at ? " (pixels not 16-byte aligned)"
             : x_at  ? " (not 16-byte aligned)"
                     : "");
    CHECK(nc_conv_direct_fuses(&e, K));
    check_rc(nc_conv_launch_fused(dy, dx, u8 > 0 ? dxu : NULL, u8 > 0 ? &lut : NULL, dk, with_bias ? db : NULL, B, C, H,
                                  W, M, K, &e, stream, &err),
             &err, what);
    float *y = host_from(dy, ny);
    /* Raw pixels make outputs up to ~255 x sqrt(C*K*K) before the activation: the same relative tolerance. */
    check_close(what, y, ref, ny, 1e-4, 1e-4);
    /* Version 14 fused (two rows of four a thread; under 2/2 pooling two windows side by side, the last of a row of
     * odd Wp alone): the same sums in the same order, so version 6's bits. */
    CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
    char what14[200];
    snprintf(what14, sizeof what14, "%s, version 14", what);
    check_rc(nc_conv_launch_fused_rows(dy, dx, u8 > 0 ? dxu : NULL, u8 > 0 ? &lut : NULL, dk, with_bias ? db : NULL, B,
                                       C, H, W, M, K, &e, 2, stream, &err),
             &err, what14);
    float *y14 = host_from(dy, ny);
    check_close(what14, y14, ref, ny, 1e-4, 1e-4);
    const int same = memcmp(y14, y, ny * sizeof(float)) == 0;
    if (!same) fprintf(stderr, "%s: not version 6's bits\n", what14);
    CHECK(same);
    /* Version 15 fused (Winograd, its own rounding): against the reference, and the same bits when run again; where
     * it does not take the layer (4/4 pooling, a shape it has no kernel for, pixels on a layer of several channels),
     * it says so. */
    char what15[200];
    snprintf(what15, sizeof what15, "%s, version 15", what);
    const int wino = nc_conv_wino_takes(C, H, W, M, K, &e, u8 > 0);
    for (int run = 0; run < (wino ? 2 : 1); run++) {
        CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
        const int rc = nc_conv_launch_fused_rows(dy, dx, u8 > 0 ? dxu : NULL, u8 > 0 ? &lut : NULL, dk,
                                                 with_bias ? db : NULL, B, C, H, W, M, K, &e, 3, stream, &err);
        if (!wino) {
            CHECK(rc == NC_ERR_ARG);
            CHECK(strstr(err.msg, "version 15") != NULL);
            break;
        }
        check_rc(rc, &err, what15);
        float *y15 = host_from(dy, ny);
        if (run == 0) {
            /* Its transforms round values up to about 12 times the inputs' (B^T's coefficients), so that its error on
             * an output near zero scales with the inputs: the bound is the exact versions' taken relative to the
             * inputs' scale, 1 for floats and unit pixels, 255 for raw pixels (2026-11-27: 1.7e-4 on one output of
             * 17.3 million, 0.0031 against 0.0032, of 2017's first layer under ReLU on raw pixels). */
            const double scale = u8 > 0 && !unit ? 255.0 : 1.0;
            check_close(what15, y15, ref, ny, 1e-4 * scale, 1e-4);
            memcpy(y14, y15, ny * sizeof(float));
        } else {
            if (memcmp(y14, y15, ny * sizeof(float)) != 0) fprintf(stderr, "%s: a second run differs\n", what15);
            CHECK(memcmp(y14, y15, ny * sizeof(float)) == 0);
        }
        free(y15);
    }
    free(y14);
    free(y);
    CU(cudaFree(dx_alloc));
    CU(cudaFree(dk));
    CU(cudaFree(db));
    CU(cudaFree(dxu_alloc));
    CU(cudaFree(dy));
    free(x);
    free(xu);
    free(k);
    free(bias);
    free(conv);
    free(ref);
}

/* The convolution alone through conv_direct.cu's launchers: 2 x 2 patches (rows 0: version 5), a row of four a thread
 * (1: version 13) or two rows of four (2: version 14). */
static int launch_alone(float *y, const float *x, const float *k, const float *bias, int B, int C, int H, int W, int M,
                        int K, int rows, nc_error *err) {
    const nc_conv_epilogue alone = {-1, -1, 1, 1};
    return rows ? nc_conv_launch_fused_rows(y, x, NULL, NULL, k, bias, B, C, H, W, M, K, &alone, rows, stream, err)
                : nc_conv_launch_fused(y, x, NULL, NULL, k, bias, B, C, H, W, M, K, &alone, stream, err);
}

/* The ny outputs written at dy + at (dy: ny + 8 words, every byte 0xFF before the run) against the reference, the
 * words before and after them untouched, and their bits against *first (the first offset's, kept there). */
static void check_at_offset(const char *what, const float *dy, const float *ref, size_t ny, int at, float **first) {
    float *all = host_from(dy, ny + 8);
    check_close(what, all + at, ref, ny, 1e-4, 1e-4);
    int guard = 1;
    for (size_t i = 0; i < ny + 8; i++) {
        uint32_t bits;
        memcpy(&bits, &all[i], 4);
        if ((i < (size_t)at || i >= ny + at) && bits != 0xFFFFFFFFu) guard = 0;
    }
    if (!guard) fprintf(stderr, "%s: a word outside the output was written\n", what);
    CHECK(guard);
    if (!*first) {
        *first = xmalloc(ny * sizeof(float));
        memcpy(*first, all + at, ny * sizeof(float));
    } else {
        const int same = memcmp(*first, all + at, ny * sizeof(float)) == 0;
        if (!same) fprintf(stderr, "%s: not the bits of y + 0\n", what);
        CHECK(same);
    }
    free(all);
}

/* One layer alone (K = 5) through launch_alone with each of rows = r0..r1 (3: version 15), y offset by 0..3 floats
 * (check_at_offset: close to the reference, the words around the output untouched, the same bits at every offset
 * and for every rows). */
static void unpooled_stores_case(int B, int C, int H, int W, int M, int K, int r0, int r1) {
    const int Ho = H - K + 1, Wo = W - K + 1;
    conv_data d = conv_data_make(B, C, H, W, M, K, 0.2f, 1, 8);
    const size_t ny = d.ny;
    float *first = NULL;
    for (int rows = r0; rows <= r1; rows++)
        for (int at = 0; at < 4; at++) {
            char what[128];
            snprintf(what, sizeof what, "unpooled stores C %d Ho %d Wo %d M %d K %d%s, y + %d floats", C, Ho, Wo, M, K,
                     rows == 1   ? " rows of four"
                     : rows == 2 ? " two rows of four"
                     : rows == 3 ? " version 15"
                                 : "",
                     at);
            CU(cudaMemset(d.dy, 0xFF, (ny + 8) * sizeof(float)));
            nc_error err = {0};
            check_rc(launch_alone(d.dy + at, d.dx, d.dk, d.db, B, C, H, W, M, K, rows, &err), &err, what);
            check_at_offset(what, d.dy, d.ref, ny, at, &first);
        }
    conv_data_free(&d);
    free(first);
}

/* The unpooled stores. conv_directc.cu's (C = 3): a tile row's four outputs as one 16-byte store, two 8-byte ones or
 * 4 + 8 + 4 bytes, as the address falls, and one at a time at the right edge. conv_direct.cu's (C = 1): 2 x 2
 * outputs a thread as float2 pairs where y is 8-byte aligned, else one at a time; and version 13's row of four
 * outputs a thread as one 16-byte store where Ho Wo is a multiple of 4 and y 16-byte aligned (Wo a multiple of 4; Wo
 * = 2 mod 4 with Ho even, H = 18: odd rows' fours two columns to the left, a row's first and last two as 8 bytes),
 * else one at a time; and version 14's two rows of four a thread, 16 bytes a row where Wo is a multiple of 4 and y
 * 16-byte aligned, else two float2 pairs (the second left out past Wo) or one at a time, the second row left out
 * past an odd Ho (H = 17); M = 10 and 12 (one group of 10 channels a thread, two of 6; version 14: 4 a thread).
 * Every width modulo 4 and every output address modulo 16 (y offset by 0..3 floats): the same bits at every offset
 * and for every kind of patch, close to the reference, and the words before and after the output untouched. */
static void test_unpooled_stores(void) {
    static const int shapes[][3] = {{3, 17, 10}, {1, 17, 10}, {1, 18, 12}, {1, 18, 10}}; /* C, H, M */
    for (int sh = 0; sh < 4; sh++)
        for (int wmod = 0; wmod < 4; wmod++) {
            const int C = shapes[sh][0], H = shapes[sh][1], M = shapes[sh][2], W = 20 + wmod;
            const nc_conv_epilogue alone = {-1, -1, 1, 1};
            CHECK(nc_conv_directc_takes(C, H, W, M, 5, &alone) == (C > 1));
            /* rows (C = 1): 2 x 2 patches, version 13's rows of four, version 14's two rows of four */
            unpooled_stores_case(3, C, H, W, M, 5, 0, C == 1 ? 2 : 0);
        }
}

/* The ny outputs at dy against the reference (every one written: dy was NaN before), and their bits against *first:
 * the first run's, kept there (named `first_name` in the message). */
static void check_run(const char *what, const float *dy, const float *ref, size_t ny, float **first,
                      const char *first_name) {
    float *y = host_from(dy, ny);
    check_close(what, y, ref, ny, 1e-4, 1e-4);
    if (!*first) {
        *first = y;
        return;
    }
    const int same = memcmp(y, *first, ny * sizeof(float)) == 0;
    if (!same) fprintf(stderr, "%s: not the bits of the %s\n", what, first_name);
    CHECK(same);
    free(y);
}

/* Versions 13 and 14 (rows of four a thread) on many images of one channel, next to version 5's 2 x 2 patches: more
 * images than blocks, so that each block's copy of its next image runs from one image into the next, in images of
 * fewer units than a block has threads (8 x 8: most threads have no unit of an image) and of many (the zoo's first
 * layers, Wo = 2 mod 4 among them, where the rows or the tiles' second rows are shifted). Against the reference,
 * every output written (the output is NaN before), and the same bits in all three (the same sums in the same
 * order). Written for a pipelined walk across images (tried and left out, docs/PERFORMANCE-LOG.md), kept for the
 * paths as they are. */
static void test_rows_many_images(int B, int H, int W, int M, int K) {
    conv_data d = conv_data_make(B, 1, H, W, M, K, 0.2f, 1, 0);
    const size_t ny = d.ny;
    float *patches = NULL;
    static const char *const patch[3] = {"2 x 2 patches", "rows of four", "two rows of four"};
    for (int rows = 0; rows <= 2; rows++) {
        char what[128];
        snprintf(what, sizeof what, "%s, %d images of 1 x %d x %d, M %d K %d", patch[rows], B, H, W, M, K);
        CU(cudaMemset(d.dy, 0xFF, ny * sizeof(float))); /* NaN: an output not written fails the comparison */
        nc_error err = {0};
        check_rc(launch_alone(d.dy, d.dx, d.dk, d.db, B, 1, H, W, M, K, rows, &err), &err, what);
        check_run(what, d.dy, d.ref, ny, &patches, "2 x 2 patches");
    }
    conv_data_free(&d);
    free(patches);
}

/* conv_directc.cu's two copies of a channel plane, on layers where a plane is one run of x (W even, H W a multiple of
 * 4): flat, 16 bytes a copy, with x 16-byte aligned (rows of W = 2 mod 4 read by 8 bytes, of W = 0 mod 4 by 16), and
 * by the table, a word a copy, with x one float further on. More items than teams, so that the planes run on from
 * item to item; H odd among them, where an item's last rows run past the channel (zeros); M not a whole number of
 * channel groups. Against the reference, every output written (NaN before), and the same bits from both copies. */
static void test_plane_copies(int B, int C, int H, int W, int M, int K, int act, int pool, int P) {
    const int Ho = H - K + 1, Wo = W - K + 1;
    const int Hp = pool < 0 ? Ho : (Ho - P) / P + 1, Wp = pool < 0 ? Wo : (Wo - P) / P + 1;
    const size_t nx = (size_t)B * C * H * W, nk = (size_t)M * C * K * K;
    const size_t nc = (size_t)B * M * Ho * Wo, ny = (size_t)B * M * Hp * Wp;
    float *x = xmalloc(nx * sizeof(float)), *k = xmalloc(nk * sizeof(float)), *bias = xmalloc(M * sizeof(float));
    float *conv = xmalloc(nc * sizeof(float)), *ref = xmalloc(ny * sizeof(float)), *flat = NULL;
    fill(x, nx, -1.0f, 1.0f);
    fill(k, nk, -1.0f / sqrtf((float)(C * K * K)), 1.0f / sqrtf((float)(C * K * K)));
    fill(bias, M, -1.0f, 1.0f);
    ref_fused(ref, conv, x, k, bias, B, C, H, W, M, K, act, pool, P);
    const nc_conv_epilogue e = {act, pool, P, P};
    CHECK(nc_conv_directc_takes(C, H, W, M, K, &e));
    float *dx_alloc, *dk = dev_from(k, nk * sizeof(float)), *db = dev_from(bias, M * sizeof(float)), *dy;
    CU(cudaMalloc((void **)&dx_alloc, (nx + 1) * sizeof(float)));
    CU(cudaMalloc((void **)&dy, ny * sizeof(float)));
    for (int at = 0; at <= 1; at++) { /* x 16-byte aligned (flat), then one float on (the table) */
        char what[160];
        snprintf(what, sizeof what, "plane copies B%d C%d H%d W%d M%d K%d act %d pool %d/%d, %s", B, C, H, W, M, K, act,
                 pool, P, at ? "by the table" : "flat");
        CU(cudaMemcpy(dx_alloc + at, x, nx * sizeof(float), cudaMemcpyHostToDevice));
        CU(cudaMemset(dy, 0xFF, ny * sizeof(float)));
        nc_error err = {0};
        check_rc(nc_conv_launch_fused(dy, dx_alloc + at, NULL, NULL, dk, db, B, C, H, W, M, K, &e, stream, &err), &err,
                 what);
        check_run(what, dy, ref, ny, &flat, "flat copies");
    }
    CU(cudaFree(dx_alloc));
    CU(cudaFree(dk));
    CU(cudaFree(db));
    CU(cudaFree(dy));
    free(x);
    free(k);
    free(bias);
    free(conv);
    free(ref);
    free(flat);
}

/* The plane copies' shapes: the zoo's three second layers that copy flat, two small ones, items across images, and
 * wide tiles. */
static void test_plane_copies_all(void) {
    test_plane_copies(300, 6, 30, 30, 16, 5, -1, -1, 1);              /* 2018 spring conv2: W = 2 mod 4 */
    test_plane_copies(300, 6, 22, 22, 16, 5, NC_TANH, NC_MAXPOOL, 2); /* 2019 spring conv2 */
    test_plane_copies(200, 4, 40, 40, 16, 7, NC_RELU, NC_MAXPOOL, 4); /* 2020 conv2: W = 0 mod 4 */
    test_plane_copies(500, 3, 17, 20, 10, 3, -1, -1, 1);              /* H odd, M = 10 of groups of 8 */
    test_plane_copies(400, 2, 18, 26, 5, 5, -1, NC_AVGPOOL, 2);       /* W = 2 mod 4, M = 5 */
    /* Items that run from one image's last tiles into the next's first (the batch's last item short), and an image
     * alone: 2018 fall's and 2019 fall's second layers (W odd: by the table both times), 2019 spring's alone. */
    test_plane_copies(7, 12, 33, 33, 24, 7, NC_TANH, NC_MAXPOOL, 2);
    test_plane_copies(1, 12, 33, 33, 24, 7, NC_TANH, NC_MAXPOOL, 2);
    test_plane_copies(5, 12, 33, 33, 24, 5, -1, -1, 1);
    test_plane_copies(3, 6, 22, 22, 16, 5, -1, -1, 1);
    /* Tiles of 2 x 6 outputs (6 divides the columns that count, 4 does not): under average pooling with M = 7, and
     * unpooled with H odd (2019 spring's second layer, above, takes them too). */
    test_plane_copies(50, 3, 20, 22, 7, 5, NC_RELU, NC_AVGPOOL, 2);
    test_plane_copies(40, 2, 21, 34, 6, 5, -1, -1, 1);
}

static void test_versions(void) {
    for (int K = 3; K <= 7; K++) {
        for (int rep = 0; rep < 4; rep++) {
            const int C = rep < 2 ? 1 : rand_int(2, 12);
            test_case(rand_int(1, 5), C, rand_int(K, K + 40), rand_int(K, K + 40), rand_int(1, 30), K, rep % 2);
        }
    }
    /* The zoo's layers, at a few images. */
    test_case(3, 1, 28, 28, 50, 5, 0);  /* 2017 */
    test_case(2, 1, 64, 64, 6, 5, 0);   /* 2018 spring conv1 */
    test_case(2, 6, 30, 30, 16, 5, 0);  /* 2018 spring conv2 */
    test_case(2, 1, 72, 72, 12, 7, 0);  /* 2018 fall conv1 */
    test_case(2, 12, 33, 33, 24, 7, 0); /* 2018 fall conv2 */
    test_case(2, 12, 33, 33, 24, 5, 0); /* 2019 fall conv2 */
    test_case(2, 1, 86, 86, 4, 7, 0);   /* 2020 conv1 */
    test_case(2, 4, 40, 40, 16, 7, 0);  /* 2020 conv2 */
    /* Bands: a map too large for one block's shared memory in versions 5 and 6 (and several bands of
     * conv_directc.cu's). */
    test_case(2, 8, 150, 140, 5, 5, 1);
    /* One channel in several bands; Wo = 274 = 2 mod 4, so that version 13 shifts its odd rows' fours and its bands
     * hold an even number of rows; version 14 shifts its tiles' second rows. */
    test_case(2, 1, 422, 278, 6, 5, 1);
    /* K = 4 and W = 262 = 2 mod 4 (Wo = 259, no 16-byte stores): float bands copied flat where each starts 16-byte
     * aligned, bands of an even number of rows (versions 5, 6 and 14: 42 rows), and a row at a time where not
     * (version 13's bands of 43 rows). */
    test_case(2, 1, 422, 262, 6, 4, 1);
    /* Several channels: items of a few tiles of many channel groups (5 tiles of 25 groups a team), and layers that
     * conv_directc.cu leaves to conv_direct.cu's kernel: more channel groups than a team has threads, weights over
     * its shared memory. */
    test_case(1, 2, 110, 110, 200, 3, 1);
    test_case(1, 2, 12, 12, 1100, 3, 1);
    test_case(1, 64, 20, 20, 64, 7, 0);
    /* Version 3's workspace in several slices (10.5 MB of unrolled input per image). */
    test_case(30, 16, 64, 64, 4, 7, 1);
    /* K outside versions 5 and 6's range: said, and the others still right. */
    test_case(2, 2, 20, 20, 3, 9, 1);
    test_case(2, 1, 10, 10, 3, 1, 1);
}

/* A first layer fused with act and 2/2 max pooling, as its network runs it, in every form version 15's rows kernel
 * takes: pixels and floats, with and without bias, a few images; pixels 1 to 3 bytes past 16-byte alignment and
 * floats 1 to 3 floats past it; more images than blocks, on pixels and on floats. */
static void test_first_fused(int H, int M, int K, int act) {
    for (int b = 0; b <= 1; b++)
        for (int u8 = 0; u8 <= 1; u8++) test_fused_case(rand_int(1, 3), 1, H, H, M, K, b, act, NC_MAXPOOL, 2, u8);
    test_fused_case(5, 1, H, H, M, K, 0, act, NC_MAXPOOL, 2, 2);
    test_fused_case(5, 1, H, H, M, K, 1, act, NC_MAXPOOL, 2, -1);
    test_fused_case(700, 1, H, H, M, K, 0, act, NC_MAXPOOL, 2, 1);
    test_fused_case(400, 1, H, H, M, K, 1, act, NC_MAXPOOL, 2, 0);
}

/* Version 15 (conv_wino.cu) on every layer it has a kernel for (the zoo's K = 5 second layers, alone and pooled 2/2;
 * its K = 7 second layers pooled as their networks run them, and alone, an item a band of whole rows; 2017's first
 * layer, on pixels and floats, below), with every activation, max and average pooling or none, with and without bias,
 * alone and through the fused launcher (test_fused_case, which also checks versions 6 and 14 there): a few images,
 * and more items than blocks, so that each block's copy of its next item runs behind the one it computes. Its tiles
 * overhang the outputs that count on 2019 spring's layer (18 of 20 columns and rows) and 2018 spring's (26 of 28),
 * where the input past the image is read as zeros; on 2018 fall's K = 7 layer pooled the last item of a row has one
 * window of two, the other past it, and alone the last window of a row has three outputs that count. */
static void test_winograd(void) {
    static const struct {
        int C, H, W, M, K, P;
    } layers[] = {{12, 33, 33, 24, 5, 2}, {12, 33, 33, 24, 5, 1}, {6, 22, 22, 16, 5, 2},
                  {6, 22, 22, 16, 5, 1},  {6, 30, 30, 16, 5, 1},  {12, 33, 33, 24, 7, 2},
                  {4, 40, 40, 16, 7, 4},  {12, 33, 33, 24, 7, 1}, {4, 40, 40, 16, 7, 1}};
    const int acts[4] = {-1, NC_TANH, NC_RELU, NC_SIGMOID};
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        const int C = layers[i].C, H = layers[i].H, W = layers[i].W, M = layers[i].M, K = layers[i].K, P = layers[i].P;
        const nc_conv_epilogue alone = {-1, -1, 1, 1}, pooled = {NC_TANH, NC_MAXPOOL, P, P};
        const nc_conv_epilogue *e = P > 1 ? &pooled : &alone;
        CHECK(nc_conv_wino_takes(C, H, W, M, K, e, 0));
        CHECK(!nc_conv_wino_takes(C, H, W, M, K, e, 1)); /* uint8 pixels */
        CHECK(!nc_conv_wino_takes(C, H + 1, W, M, K, e, 0));
        CHECK(!nc_conv_wino_takes(C, H, W - 1, M, K, e, 0));
        if (P == 1) test_case(rand_int(1, 3), C, H, W, M, K, rand_int(0, 1));
        for (int a = 0; a < 4; a++)
            for (int k = 0; k < (P > 1 ? 2 : 1); k++)
                test_fused_case(rand_int(1, 3), C, H, W, M, K, rand_int(0, 1), acts[a],
                                P == 1 ? -1
                                : k    ? NC_AVGPOOL
                                       : NC_MAXPOOL,
                                P, 0);
    }
    /* More items than blocks: the zoo's layers as their networks run them. */
    test_fused_case(300, 12, 33, 33, 24, 5, 1, NC_TANH, NC_MAXPOOL, 2, 0); /* 2019 fall */
    test_fused_case(600, 6, 22, 22, 16, 5, 1, NC_TANH, NC_MAXPOOL, 2, 0);  /* 2019 spring */
    test_case(400, 6, 30, 30, 16, 5, 1);                                   /* 2018 spring, alone */
    test_case(200, 12, 33, 33, 24, 5, 0);                                  /* 2019 fall, alone */
    test_fused_case(300, 12, 33, 33, 24, 7, 1, NC_TANH, NC_MAXPOOL, 2, 0); /* 2018 fall */
    test_fused_case(700, 4, 40, 40, 16, 7, 1, NC_RELU, NC_MAXPOOL, 4, 0);  /* 2020 */
    test_case(300, 12, 33, 33, 24, 7, 1);                                  /* 2018 fall, alone */
    test_case(300, 4, 40, 40, 16, 7, 0);                                   /* 2020, alone */
    /* 2020's input copied two floats at a time where x is 8-byte aligned, one at a time where it is not; so the
     * K = 5 layers of even W (2019 fall's W is odd: a float at a time). */
    for (int i = 0; i < 3; i++) test_fused_case(30, 4, 40, 40, 16, 7, 1, NC_RELU, NC_MAXPOOL, 4, -1);
    for (int at = -3; at <= -2; at++) {
        test_fused_case(70, 6, 22, 22, 16, 5, 1, NC_TANH, NC_MAXPOOL, 2, at);
        test_fused_case(50, 6, 30, 30, 16, 5, 1, -1, -1, 1, at);
    }
    /* What it does not take, it says (and the backend runs version 14 there). */
    const nc_conv_epilogue tanh_max2 = {NC_TANH, NC_MAXPOOL, 2, 2}, relu_max4 = {NC_RELU, NC_MAXPOOL, 4, 4};
    const nc_conv_epilogue none = {-1, -1, 1, 1};
    const nc_conv_epilogue relu = {NC_RELU, -1, 1, 1};
    CHECK(!nc_conv_wino_takes(12, 33, 33, 24, 7, &relu, 0)); /* K = 7 unpooled: alone only */
    CHECK(!nc_conv_wino_takes(4, 40, 40, 16, 7, &relu, 0));
    CHECK(nc_conv_wino_takes(4, 40, 40, 16, 7, &none, 0));
    CHECK(!nc_conv_wino_takes(12, 33, 33, 24, 7, &relu_max4, 0)); /* 2018 fall's layer pooled 4/4 */
    CHECK(!nc_conv_wino_takes(4, 40, 40, 16, 7, &tanh_max2, 0));  /* 2020's pooled 2/2 */
    CHECK(!nc_conv_wino_takes(12, 33, 33, 20, 7, &tanh_max2, 0)); /* other output channels */
    CHECK(!nc_conv_wino_takes(12, 33, 33, 24, 3, &tanh_max2, 0)); /* K = 3 */
    CHECK(!nc_conv_wino_takes(6, 30, 30, 16, 5, &tanh_max2, 0));  /* 2018 spring's layer pooled */
    CHECK(!nc_conv_wino_takes(6, 22, 22, 16, 5, &relu_max4, 0));  /* 4/4 pooling */
    CHECK(!nc_conv_wino_takes(6, 22, 22, 12, 5, &tanh_max2, 0));  /* other output channels */
    /* 2017's first layer, F(4, 5) along the rows: pixels and floats, alone and pooled 2/2, every activation; inputs
     * not 16-byte aligned (plain loads instead of cp.async); more images than blocks. */
    const nc_conv_epilogue alone = {-1, -1, 1, 1}, avg2 = {NC_SIGMOID, NC_AVGPOOL, 2, 2};
    for (int u8 = 0; u8 <= 1; u8++) {
        CHECK(nc_conv_wino_takes(1, 28, 28, 50, 5, &tanh_max2, u8));
        CHECK(nc_conv_wino_takes(1, 28, 28, 50, 5, &avg2, u8));
        CHECK(nc_conv_wino_takes(1, 28, 28, 50, 5, &alone, u8));
        CHECK(!nc_conv_wino_takes(1, 28, 28, 50, 5, &relu_max4, u8)); /* 4/4 pooling */
        CHECK(!nc_conv_wino_takes(1, 28, 28, 48, 5, &tanh_max2, u8)); /* other output channels */
        CHECK(!nc_conv_wino_takes(1, 32, 32, 50, 5, &tanh_max2, u8)); /* another size */
        CHECK(!nc_conv_wino_takes(1, 28, 28, 50, 3, &tanh_max2, u8)); /* K = 3 */
        for (int a = 0; a < 4; a++)
            for (int p = 0; p < 3; p++)
                test_fused_case(rand_int(1, 3), 1, 28, 28, 50, 5, rand_int(0, 1), acts[a],
                                p == 0   ? -1
                                : p == 1 ? NC_MAXPOOL
                                         : NC_AVGPOOL,
                                p == 0 ? 1 : 2, u8);
    }
    test_case(rand_int(1, 3), 1, 28, 28, 50, 5, rand_int(0, 1));        /* alone, through the ladder's table */
    test_fused_case(7, 1, 28, 28, 50, 5, 1, NC_TANH, NC_MAXPOOL, 2, 2); /* pixels 1 to 3 bytes past 16 */
    test_fused_case(7, 1, 28, 28, 50, 5, 1, NC_TANH, NC_MAXPOOL, 2, 3); /* 4, 8 or 12 bytes past */
    test_fused_case(7, 1, 28, 28, 50, 5, 0, -1, -1, 1, -1);             /* floats 1 to 3 past */
    test_fused_case(1500, 1, 28, 28, 50, 5, 1, NC_TANH, NC_MAXPOOL, 2, 1);
    test_case(700, 1, 28, 28, 50, 5, 1);
    /* 2018 fall's first layer, F(4, 7) along the rows: fused as its network runs it (tanh, 2/2 max pooling), on pixels
     * or floats (the network upscales 28 x 28 images as floats), and alone on floats. Its 66 outputs a row are 16
     * windows and a half (the last window's input past the image read as zeros, its outputs past the row not
     * stored), its pooled rows of 33 stored a float at a time, its unpooled rows as 8-byte pairs. */
    CHECK(nc_conv_wino_takes(1, 72, 72, 12, 7, &tanh_max2, 1));
    CHECK(nc_conv_wino_takes(1, 72, 72, 12, 7, &tanh_max2, 0));
    CHECK(nc_conv_wino_takes(1, 72, 72, 12, 7, &alone, 0));
    CHECK(!nc_conv_wino_takes(1, 72, 72, 12, 7, &alone, 1));     /* pixels alone: version 13 or 14 */
    CHECK(!nc_conv_wino_takes(1, 72, 72, 12, 7, &avg2, 1));      /* no kernel for other epilogues */
    test_case(rand_int(1, 3), 1, 72, 72, 12, 7, rand_int(0, 1)); /* alone: a few images, more than blocks, x 1 to 3 */
    test_case(300, 1, 72, 72, 12, 7, 1);                         /* floats past 16 bytes */
    test_fused_case(5, 1, 72, 72, 12, 7, 0, -1, -1, 1, -1);
    test_first_fused(72, 12, 7, NC_TANH);
    /* 2019 fall's first layer (1 x 70 x 70 -> 12), F(4, 5) along the rows, fused as its network runs it (tanh, 2/2 max
     * pooling), on pixels (copied 4 bytes at a time: 4900 an image) or floats: three bands of 11 pairs of rows, its 66
     * outputs a row 16 windows and a half (the last window's input past the image read as zeros), its pooled rows of 33
     * staged in shared memory and stored by the block 16 bytes at a time (OS): a few images (a block's only image
     * stored after its loop), more images than blocks (each image's stored during the next one's). Alone, and under
     * other epilogues, version 14 takes it. */
    CHECK(nc_conv_wino_takes(1, 70, 70, 12, 5, &tanh_max2, 1));
    CHECK(nc_conv_wino_takes(1, 70, 70, 12, 5, &tanh_max2, 0));
    CHECK(!nc_conv_wino_takes(1, 70, 70, 12, 5, &alone, 0));
    CHECK(!nc_conv_wino_takes(1, 70, 70, 12, 5, &avg2, 1));
    CHECK(!nc_conv_wino_takes(1, 70, 70, 12, 5, &relu_max4, 0));
    test_first_fused(70, 12, 5, NC_TANH);
    /* 2018 spring's, 2019 spring's and 2020's first layers, pooled 2/2 (2020's with any activation, the others with
     * tanh and max pooling only), on pixels or floats: 2019 spring's and 2020's items (a channel, a window, two pairs
     * of rows) dealt out to the block's warps (ST: 726 to 126 threads, 1600 to 384); 2020's 86 x 86 pixels an image
     * copied 4 bytes at a time (7396 is no multiple of 8), its 80 outputs a row 20 whole windows, 2019 spring's 44
     * eleven; 2018 spring's 60 ten windows of six (F(6, 5), its three pooled outputs a window stored a float at a
     * time), in two bands of 15 pairs of rows, two at a time and the last alone. Each also alone on floats, its rows of
     * four stored as 16-byte words: 2018 spring's and 2019 spring's in one band of 30 and 22 pairs of rows, two at a
     * time (2019 spring's last pair alone), 2020's items dealt out to the block's warps. */
    const nc_conv_epilogue relu_max2 = {NC_RELU, NC_MAXPOOL, 2, 2};
    const struct { int H, M, K, act; } firsts[3] = {{64, 6, 5, NC_TANH}, {48, 6, 5, NC_TANH}, {86, 4, 7, NC_RELU}};
    for (int f = 0; f < 3; f++) {
        const int H = firsts[f].H, M = firsts[f].M, K = firsts[f].K;
        const nc_conv_epilogue *net = firsts[f].act == NC_RELU ? &relu_max2 : &tanh_max2;
        for (int u8 = 0; u8 <= 1; u8++) {
            CHECK(nc_conv_wino_takes(1, H, H, M, K, net, u8));
            CHECK(nc_conv_wino_takes(1, H, H, M, K, &tanh_max2, u8));
            CHECK(nc_conv_wino_takes(1, H, H, M, K, &alone, u8) == !u8);     /* pixels alone: version 13 or 14 */
            CHECK(!nc_conv_wino_takes(1, H, H, M, K, &relu_max4, u8));       /* 4/4 pooling */
            CHECK(!nc_conv_wino_takes(1, H, H, M + 1, K, net, u8));          /* other output channels */
            CHECK(nc_conv_wino_takes(1, H, H, M, K, &avg2, u8) == (K == 7)); /* 2020's: any epilogue */
        }
        test_first_fused(H, M, K, firsts[f].act);
        if (K == 7) test_fused_case(rand_int(1, 3), 1, H, H, M, K, 1, NC_SIGMOID, NC_AVGPOOL, 2, 1);
        /* Alone, on floats: a few images, more images than blocks, x 1 to 3 floats past 16 bytes. */
        test_case(rand_int(1, 3), 1, H, H, M, K, rand_int(0, 1));
        test_case(300, 1, H, H, M, K, 1);
        test_fused_case(5, 1, H, H, M, K, 0, -1, -1, 1, -1);
    }
    /* 2017's first layer fused: pixels (images of its size) and floats (images of another size, scaled), which the
     * tuner times apart. */
    CHECK(nc_conv_wino_takes(1, 28, 28, 50, 5, &tanh_max2, 1) && nc_conv_wino_takes(1, 28, 28, 50, 5, &tanh_max2, 0));
    nc_error err = {0};
    /* Its outputs are stored as 16- or 8-byte words: y not 16-byte aligned is refused before anything is touched. */
    float *odd_y = (float *)(uintptr_t)4;
    CHECK(nc_conv_launch_fused_rows(odd_y, NULL, NULL, NULL, NULL, NULL, 1, 1, 28, 28, 50, 5, &alone, 3, stream,
                                    &err) == NC_ERR_ARG);
    CHECK(strstr(err.msg, "version 15") != NULL && strstr(err.msg, "16-byte aligned") != NULL);
    CHECK(nc_cuda_conv_forward(15, NULL, NULL, NULL, NULL, 1, 12, 33, 33, 24, 3, stream, &err) == NC_ERR_ARG);
    CHECK(strstr(err.msg, "version 15") != NULL && strstr(err.msg, "version 14 takes any") != NULL);
}

/* Version 15's unpooled stores (2018 spring's and 2019 spring's layers alone): a row of tiles' outputs go through
 * shared memory and out as each channel's rows, 8 bytes a lane where y is 8-byte aligned, else a float at a time;
 * 2019 fall's layer alone (whose shared memory holds no room for them) stores each tile's outputs itself. The K = 7
 * second layers alone: a window's four outputs of a row as two 8-byte pairs where the rows' width is even (2020's 34,
 * its last window's second pair past the row) and y 8-byte aligned, else a float at a time (2018 fall's 27, the last
 * window's fourth past the row). y offset by 0..3 floats, more items than blocks: close to the reference, the same
 * bits at every offset, and the words before and after the output untouched. */
static void test_winograd_unpooled_stores(void) {
    static const int layers[][5] = {
        {6, 30, 30, 16, 5}, {6, 22, 22, 16, 5}, {12, 33, 33, 24, 5}, {4, 40, 40, 16, 7}, {12, 33, 33, 24, 7},
    }; /* C, H, W, M, K */
    for (int l = 0; l < 5; l++) {
        const nc_conv_epilogue alone = {-1, -1, 1, 1};
        const int C = layers[l][0], H = layers[l][1], W = layers[l][2], M = layers[l][3], K = layers[l][4];
        CHECK(nc_conv_wino_takes(C, H, W, M, K, &alone, 0));
        unpooled_stores_case(100, C, H, W, M, K, 3, 3);
    }
}

static void test_fused(void) {
    const int acts[4] = {-1, NC_TANH, NC_RELU, NC_SIGMOID};
    const int pools[3][2] = {{-1, 1}, {NC_MAXPOOL, 2}, {NC_AVGPOOL, 2}};
    for (int a = 0; a < 4; a++) {
        for (int p = 0; p < 3; p++) {
            for (int u8 = -1; u8 < 4; u8++) {
                for (int several = 0; several < 2; several++) { /* C > 1 on float input: conv_directc.cu */
                    const int K = rand_int(3, 7), C = several ? rand_int(2, 6) : 1;
                    test_fused_case(rand_int(1, 4), C, rand_int(K + 1, K + 40), rand_int(K + 1, K + 40),
                                    rand_int(1, 24), K, rand_int(0, 1), acts[a], pools[p][0], pools[p][1], u8);
                }
            }
        }
    }
    for (int rep = 0; rep < 8; rep++) /* pooling 4/4, as in the 2020 model */
        test_fused_case(2, rep < 4 ? rand_int(2, 5) : 1, rand_int(10, 50), rand_int(10, 50), rand_int(1, 17),
                        rand_int(3, 7), rep % 2, rep % 2 ? NC_RELU : NC_TANH, rep < 2 ? NC_MAXPOOL : NC_AVGPOOL, 4,
                        rep % 2);
    test_fused_case(5, 1, 28, 28, 50, 5, 0, NC_TANH, NC_MAXPOOL, 2, 1);     /* the 2017 layer as its network runs it */
    test_fused_case(2, 12, 33, 33, 24, 7, 0, NC_TANH, NC_MAXPOOL, 2, 0);    /* C > 1 */
    test_fused_case(2, 4, 40, 40, 16, 7, 0, NC_RELU, NC_MAXPOOL, 4, 0);     /* 2020 conv2 */
    test_fused_case(2, 3, 160, 150, 7, 5, 1, NC_SIGMOID, NC_AVGPOOL, 2, 1); /* several bands */
    test_fused_case(3, 3, 160, 150, 7, 5, 1, NC_SIGMOID, NC_AVGPOOL, 2, 0); /* several bands of conv_directc.cu */
    /* One channel in several bands (two float bands, or a float band and two raw copies, in a block's shared
     * memory), pixels aligned or not. */
    test_fused_case(2, 1, 420, 300, 6, 5, 1, -1, -1, 1, 0);
    test_fused_case(2, 1, 420, 301, 6, 5, 1, NC_TANH, NC_MAXPOOL, 2, 1);
    test_fused_case(2, 1, 421, 300, 6, 5, 1, NC_RELU, -1, 1, 2);
    /* More items than blocks, so that the copy of a block's next item (conv_direct.cu), or its ring of channel
     * planes (conv_directc.cu), runs from one item into the next. */
    test_fused_case(3000, 1, 28, 28, 50, 5, 1, NC_TANH, NC_MAXPOOL, 2, 1);
    test_fused_case(2000, 1, 29, 27, 12, 5, 1, NC_TANH, NC_MAXPOOL, 2, 2);
    test_fused_case(2000, 1, 32, 32, 12, 5, 1, -1, -1, 1, 0);
    test_fused_case(2000, 1, 32, 32, 12, 5, 1, -1, -1, 1, -1);
    test_fused_case(2000, 1, 31, 32, 6, 4, 1, NC_SIGMOID, -1, 1, 0);
    /* The zoo's first layers as their networks run them (rows of 4k + 2 pixels among them) and alone on floats,
     * aligned or not; and one of weights too large to stage every group's at once (one group at a time). */
    test_fused_case(700, 1, 86, 86, 4, 7, 1, NC_RELU, NC_MAXPOOL, 2, 1);
    test_fused_case(700, 1, 70, 70, 12, 5, 1, NC_TANH, NC_MAXPOOL, 2, 1);
    test_fused_case(700, 1, 70, 70, 12, 5, 1, NC_TANH, NC_MAXPOOL, 2, 3);
    test_fused_case(700, 1, 72, 72, 12, 7, 1, NC_TANH, NC_MAXPOOL, 2, 1);
    test_fused_case(700, 1, 72, 72, 12, 7, 1, -1, -1, 1, 0);
    test_fused_case(700, 1, 64, 64, 6, 5, 1, -1, -1, 1, -1);
    test_fused_case(30, 1, 30, 30, 400, 7, 1, NC_TANH, NC_MAXPOOL, 2, 1);
    test_fused_case(5000, 3, 12, 12, 5, 3, 1, NC_RELU, NC_MAXPOOL, 2, 0);
    test_fused_case(300, 12, 33, 33, 24, 7, 1, NC_TANH, NC_MAXPOOL, 2, 0);

    /* Which layers conv_directc.cu takes: the zoo's second layers, alone or with their epilogues; not one channel,
     * K outside 3..7, more channel groups than a team's 128 threads, or weights over its shared memory. */
    const nc_conv_epilogue alone = {-1, -1, 1, 1}, tanh_max2 = {NC_TANH, NC_MAXPOOL, 2, 2};
    const nc_conv_epilogue relu_max4 = {NC_RELU, NC_MAXPOOL, 4, 4};
    CHECK(nc_conv_directc_takes(12, 33, 33, 24, 7, &alone));
    CHECK(nc_conv_directc_takes(12, 33, 33, 24, 7, &tanh_max2));
    CHECK(nc_conv_directc_takes(12, 33, 33, 24, 5, &tanh_max2));
    CHECK(nc_conv_directc_takes(6, 30, 30, 16, 5, &alone));
    CHECK(nc_conv_directc_takes(6, 22, 22, 16, 5, &tanh_max2));
    CHECK(nc_conv_directc_takes(4, 40, 40, 16, 7, &relu_max4));
    CHECK(!nc_conv_directc_takes(1, 28, 28, 50, 5, &tanh_max2));
    CHECK(!nc_conv_directc_takes(2, 20, 20, 3, 9, &alone));
    CHECK(nc_conv_directc_takes(2, 110, 110, 200, 3, &alone));
    CHECK(!nc_conv_directc_takes(2, 12, 12, 1100, 3, &alone));
    CHECK(!nc_conv_directc_takes(64, 20, 20, 64, 7, &alone));

    /* What it cannot fuse, it says. */
    const nc_conv_epilogue odd = {NC_TANH, NC_MAXPOOL, 3, 2};
    CHECK(!nc_conv_direct_fuses(&odd, 5));
    nc_error err = {0};
    CHECK(nc_conv_launch_fused(NULL, NULL, NULL, NULL, NULL, NULL, 1, 1, 10, 10, 1, 5, &odd, stream, &err) ==
          NC_ERR_ARG);
    CHECK_MSG(err, "version 4");
}

int main(void) {
    const int start = gpu_test_start();
    if (start) return start;
    printf("%d convolution versions\n", nc_cuda_conv_num_versions());
    /* NC_GPU_TEST_QUICK=1 (tools/gpu_suite.sh, under compute-sanitizer's memcheck, racecheck and synccheck):
     * conv_directc.cu's cp.async rings and team barriers, with more items than teams, on the zoo's second layers'
     * shapes and a small one, its unpooled stores at every alignment and its two plane copies; conv_direct.cu's copies
     * of a block's next item, pixels aligned or not, and floats; version 15's unpooled stores at every alignment (the
     * K = 7 second layers alone among them: bands of whole rows). */
    const char *quick_env = getenv("NC_GPU_TEST_QUICK");
    if (quick_env && *quick_env == '1') {
        test_fused_case(1500, 1, 28, 28, 50, 5, 1, NC_TANH, NC_MAXPOOL, 2, 1); /* version 15's: V in 2 buffers */
        test_fused_case(1500, 1, 29, 27, 12, 5, 1, NC_TANH, NC_MAXPOOL, 2, 2);
        test_fused_case(1500, 1, 32, 32, 12, 5, 1, -1, -1, 1, 0);
        test_fused_case(1500, 1, 32, 32, 12, 5, 1, -1, -1, 1, -1);
        test_fused_case(400, 1, 86, 86, 4, 7, 1, NC_RELU, NC_MAXPOOL, 2, 1);  /* 2020's items dealt out (ST), pixels */
        test_fused_case(200, 1, 86, 86, 4, 7, 0, NC_RELU, NC_MAXPOOL, 2, 0);  /* floats */
        test_fused_case(200, 1, 86, 86, 4, 7, 1, -1, -1, 1, 0);               /* and alone, V in 2 buffers */
        test_fused_case(400, 1, 70, 70, 12, 5, 1, NC_TANH, NC_MAXPOOL, 2, 3); /* staged outputs, V in 2 buffers */
        test_fused_case(200, 1, 70, 70, 12, 5, 0, NC_TANH, NC_MAXPOOL, 2, 0); /* and floats, 16 bytes a copy */
        test_fused_case(400, 1, 64, 64, 6, 5, 1, NC_TANH, NC_MAXPOOL, 2, 1);  /* F(6, 5)'s rows, pixels, 2 V buffers */
        test_fused_case(200, 1, 64, 64, 6, 5, 0, NC_TANH, NC_MAXPOOL, 2, -1); /* and floats, plain loads */
        test_fused_case(400, 1, 48, 48, 6, 5, 1, NC_TANH, NC_MAXPOOL, 2, 1); /* items dealt out to warps (ST), pixels */
        test_fused_case(200, 1, 48, 48, 6, 5, 0, NC_TANH, NC_MAXPOOL, 2, 0); /* and floats */
        test_fused_case(200, 1, 48, 48, 6, 5, 1, -1, -1, 1, 0);              /* alone: V in 2 buffers */
        test_fused_case(30, 1, 30, 30, 400, 7, 1, NC_TANH, NC_MAXPOOL, 2, 2);
        test_fused_case(2, 1, 421, 300, 6, 5, 1, NC_RELU, -1, 1, 1);
        test_fused_case(4000, 3, 12, 12, 5, 3, 1, NC_RELU, NC_MAXPOOL, 2, 0);
        test_fused_case(300, 12, 33, 33, 24, 7, 1, NC_TANH, NC_MAXPOOL, 2, 0);
        test_fused_case(200, 4, 40, 40, 16, 7, 1, NC_RELU, NC_MAXPOOL, 4, 0);
        test_fused_case(200, 6, 30, 30, 16, 5, 1, -1, -1, 1, 0);
        test_fused_case(300, 6, 22, 22, 16, 5, 0, NC_SIGMOID, NC_AVGPOOL, 2, 0);
        test_fused_case(100, 6, 22, 22, 16, 5, 1, NC_TANH, NC_MAXPOOL, 2, -2); /* version 15's, a float at a time */
        test_fused_case(300, 12, 33, 33, 24, 5, 1, NC_TANH, NC_MAXPOOL, 2, 0); /* version 15's kernels, with these */
        test_fused_case(600, 1, 28, 28, 50, 5, 0, NC_RELU, -1, 1, 2);         /* and its rows', pixels by plain loads */
        test_fused_case(400, 1, 72, 72, 12, 7, 0, NC_TANH, NC_MAXPOOL, 2, 1); /* F(4, 7)'s rows, two V buffers */
        test_fused_case(50, 1, 72, 72, 12, 7, 0, NC_TANH, NC_MAXPOOL, 2, 3);  /* and plain loads */
        test_fused_case(50, 1, 72, 72, 12, 7, 0, NC_TANH, NC_MAXPOOL, 2, -1); /* floats, plain loads */
        test_fused_case(300, 1, 72, 72, 12, 7, 1, -1, -1, 1, 0);              /* alone, rows of 8-byte pairs */
        test_fused_case(300, 4, 40, 40, 16, 7, 1, NC_RELU, NC_MAXPOOL, 4, -1); /* K = 7's, copies of 1 or 2 floats */
        test_unpooled_stores();
        test_winograd_unpooled_stores();
        test_case(2, 1, 422, 278, 6, 5, 1); /* every version; version 13's shifted rows in several bands */
        test_case(2, 1, 422, 262, 6, 4, 1); /* flat copies in bands of an even number of rows, or a row at a time */
        test_rows_many_images(1200, 8, 8, 4, 5); /* rows of four, many images a block */
        test_rows_many_images(600, 72, 72, 12, 7);
        test_rows_many_images(600, 38, 38, 12, 5); /* Wo = 34 = 2 mod 4 */
        test_plane_copies_all();
        CU(cudaStreamDestroy(stream));
        return nc_test_done("test_conv_ladder (quick)");
    }
    test_versions();
    test_fused();
    test_winograd();
    test_winograd_unpooled_stores();
    test_unpooled_stores();
    test_rows_many_images(3000, 8, 8, 4, 5);    /* 4 x 4 outputs: 2 to 4 units an image, 32 threads */
    test_rows_many_images(2000, 32, 32, 12, 5); /* Wo = 28 */
    test_rows_many_images(1000, 28, 28, 50, 5); /* 2017 */
    test_rows_many_images(1000, 72, 72, 12, 7); /* 2018 fall: Wo = 66 = 2 mod 4 */
    test_rows_many_images(1000, 86, 86, 4, 7);  /* 2020 */
    test_rows_many_images(700, 70, 70, 12, 5);  /* 2019 fall: Wo = 66 */
    test_rows_many_images(800, 38, 38, 12, 5);  /* Wo = 34 = 2 mod 4 */
    /* Every K, Ho odd and even (version 14's second row past Ho left out), Wo = 2 mod 4 with y's planes 16-byte
     * aligned (Ho even: shifted second rows) or not (Ho odd: a float at a time), and Wo = 0 mod 4; M not a whole
     * number of groups of 4. Then several bands with Wo = 2 mod 4, shifted (Ho Wo a multiple of 4) or not. */
    for (int K = 3; K <= 7; K++)
        for (int hm = 0; hm < 4; hm++) /* Ho = 24 + hm; Wo = 18, 18, 20, 20 */
            test_rows_many_images(200 + 20 * K, 23 + K + hm, 17 + K + 2 * (hm / 2), 5 + K % 4, K);
    test_case(2, 1, 422, 274, 6, 5, 1);
    test_case(2, 1, 301, 422, 5, 5, 1);
    test_plane_copies_all();
    CU(cudaStreamDestroy(stream));
    return nc_test_done("test_conv_ladder");
}
#endif
