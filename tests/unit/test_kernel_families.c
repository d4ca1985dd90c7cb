/*
 * nc_cuda_conv_kernel_versions (src/cuda/conv_kernels.cu), which `nanoconv profile` tags kernels by: every __global__
 * function of src/cuda whose name begins with conv_ belongs to some version, and no other kernel does; a few names as
 * CUPTI gives them map to the versions that launch them. Needs no GPU; skips (77) in a build without CUDA.
 */
#ifndef NC_HAVE_CUDA
#include <stdio.h>
int main(void) {
    printf("SKIP: nanoconv was built without CUDA (no kernels to name)\n");
    return 77;
}
#else
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_layers.h"
#include "nc_test.h"

#define V(v) (1u << (v))

static const char *skip_space(const char *p) {
    while (isspace((unsigned char)*p)) p++;
    return p;
}

/* The name of the kernel a "__global__" at p declares: past "void" and a balanced "__launch_bounds__(...)". Writes
 * at most n - 1 characters; returns 0 where none is found. */
static int kernel_name(const char *p, char *name, size_t n) {
    p = skip_space(p + strlen("__global__"));
    if (!strncmp(p, "void", 4)) p = skip_space(p + 4);
    if (!strncmp(p, "__launch_bounds__", 17)) {
        p = skip_space(p + 17);
        int depth = 0;
        do {
            if (*p == '(') depth++;
            if (*p == ')') depth--;
        } while (*p && (p++, depth > 0));
        p = skip_space(p);
    }
    size_t len = 0;
    while ((isalnum((unsigned char)p[len]) || p[len] == '_') && len + 1 < n) len++;
    memcpy(name, p, len);
    name[len] = '\0';
    return len > 0;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = NULL;
    if (!fseek(f, 0, SEEK_END)) {
        const long n = ftell(f);
        if (n >= 0 && !fseek(f, 0, SEEK_SET) && (s = malloc((size_t)n + 1))) {
            const size_t got = fread(s, 1, (size_t)n, f);
            s[got] = '\0';
        }
    }
    fclose(f);
    return s;
}

/* Every kernel defined in src/cuda/ *.cu. */
static void test_sources(void) {
    const char *src = getenv("NANOCONV_SRC");
    CHECK(src != NULL);
    if (!src) return;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/src/cuda", src);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d) return;
    int conv_kernels = 0, other_kernels = 0;
    unsigned seen = 0;
    for (struct dirent *e; (e = readdir(d));) {
        const size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".cu")) continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *text = read_file(path);
        CHECK(text != NULL);
        if (!text) continue;
        for (const char *p = text; (p = strstr(p, "__global__")); p++) {
            char name[256];
            if (!kernel_name(p, name, sizeof name)) continue;
            const unsigned v = nc_cuda_conv_kernel_versions(name);
            if (!strncmp(name, "conv_", 5)) {
                conv_kernels++;
                seen |= v;
                if (!v) fprintf(stderr, "%s: kernel %s belongs to no version\n", e->d_name, name);
                CHECK(v != 0);
            } else {
                other_kernels++;
                if (v) fprintf(stderr, "%s: kernel %s is tagged %#x\n", e->d_name, name, v);
                CHECK(v == 0);
            }
        }
        free(text);
    }
    closedir(d);
    /* Each of the 15 versions runs some kernel defined here, and no bit names a version that is not there. */
    const unsigned all = (1u << (nc_cuda_conv_num_versions() + 1)) - 2;
    printf("%d conv kernels, %d others; versions %#x (all: %#x)\n", conv_kernels, other_kernels, seen, all);
    CHECK(conv_kernels >= 13 && other_kernels > 0);
    CHECK(seen == all);
}

/* Names as CUPTI gives them, demangled. */
static void test_names(void) {
    CHECK(nc_cuda_conv_kernel_versions("conv_forward_kernel1(float*, float const*, int)") == V(1));
    CHECK(nc_cuda_conv_kernel_versions("void conv_wino_rows7_kernel<12, 24, 33, 33, 2>(float*, int)") == V(15));
    CHECK(nc_cuda_conv_kernel_versions("void conv_wino_rows_kernel<50, 28, 28>(float*)") == V(15));
    CHECK(nc_cuda_conv_kernel_versions("void conv_directc_kernel<7, 2>(float*)") == (V(5) | V(6) | V(13) | V(14)));
    CHECK(nc_cuda_conv_kernel_versions("void conv_tcc_kernel<1, 5>(float*)") == (V(7) | V(8) | V(9) | V(10)));
    CHECK(nc_cuda_conv_kernel_versions("void conv_splitc_kernel<4, true>(float*)") == (V(11) | V(12)));
    CHECK(nc_cuda_conv_kernel_versions("conv_gemm3_kernel(float*)") == V(3));
    /* A name is whole: no prefix, no longer name, nobody else's kernel. */
    CHECK(nc_cuda_conv_kernel_versions("void conv_wino_rows_kernel_x<1>(float*)") == 0);
    CHECK(nc_cuda_conv_kernel_versions("void conv_wino(float*)") == 0);
    CHECK(nc_cuda_conv_kernel_versions("conv_forward_kernel") == 0);
    CHECK(nc_cuda_conv_kernel_versions("void dense_pipe_kernel<64>(float*)") == 0);
    CHECK(nc_cuda_conv_kernel_versions("") == 0);
}

int main(void) {
    test_sources();
    test_names();
    return nc_test_done("test_kernel_families");
}
#endif
