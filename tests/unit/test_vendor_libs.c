/*
 * cuBLAS and cuDNN through dlopen (src/cuda/vendor_libs.h): the libraries load without a GPU, every function the
 * table names is found, a call through it reaches the library built for, a second load is the same table, and
 * neither the nanoconv binary nor a shared libnanoconv links them (so a CPU run never maps them). Skips (77) in a
 * build without CUDA.
 */
#ifndef NC_HAVE_CUDA
#include <stdio.h>
int main(void) {
    printf("SKIP: nanoconv was built without CUDA (no vendor libraries to load)\n");
    return 77;
}
#else
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/vendor_libs.h"
#include "nc_test.h"

/* Every member of the table, as raw pointers, in the order of the lists. */
#define AS_POINTER(f) (const void *)api->f,

static void test_load(void) {
    const nc_vendor_api *api = NULL, *again = NULL;
    nc_error err = {0};
    int which = NC_VENDOR_CUBLAS;
#ifdef NC_HAVE_CUDNN
    which |= NC_VENDOR_CUDNN;
#endif
    const int rc = nc_vendor_load(&api, which, &err);
    if (rc) fprintf(stderr, "nc_vendor_load: %s\n", err.msg);
    CHECK(rc == NC_OK && api != NULL);
    if (rc || !api) return;
    const void *cublas[] = {NC_CUBLAS_FUNCTIONS(AS_POINTER) AS_POINTER(cublasGemmEx)};
    for (size_t i = 0; i < sizeof cublas / sizeof cublas[0]; i++) CHECK(cublas[i] != NULL);
#ifdef NC_HAVE_CUDNN
    const void *cudnn[] = {NC_CUDNN_FUNCTIONS(AS_POINTER)};
    for (size_t i = 0; i < sizeof cudnn / sizeof cudnn[0]; i++) CHECK(cudnn[i] != NULL);
    CHECK(api->cudnnGetVersion() / 10000 == CUDNN_MAJOR); /* a call through the table: the library we built for */
#else
    CHECK(nc_vendor_load(&again, NC_VENDOR_CUDNN, &err) == NC_ERR_UNAVAILABLE);
    CHECK_MSG(err, "without cuDNN");
#endif
    CHECK(nc_vendor_load(&again, which, &err) == NC_OK && again == api);
}

/* The dynamic libraries `path` needs (readelf -d): how many, and how many of them are cuBLAS or cuDNN. */
static void needed(const char *path, int *total, int *vendor) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "readelf -d '%s' 2>/dev/null", path);
    *total = *vendor = 0;
    FILE *p = popen(cmd, "r");
    if (!p) return;
    char line[512];
    while (fgets(line, sizeof line, p)) {
        if (!strstr(line, "(NEEDED)")) continue;
        ++*total;
        if (strstr(line, "cublas") || strstr(line, "cudnn")) {
            fprintf(stderr, "%s needs %s", path, line);
            ++*vendor;
        }
    }
    pclose(p);
}

/* Neither the command (NANOCONV_BIN, set by ctest) nor a shared libnanoconv (NANOCONV_LIB) needs them. */
static void test_not_linked(void) {
    const char *bin = getenv("NANOCONV_BIN"), *lib = getenv("NANOCONV_LIB");
    if (!bin || system("command -v readelf >/dev/null 2>&1") != 0) {
        printf("NANOCONV_BIN not set or no readelf: the link check is skipped\n");
        return;
    }
    int total, vendor;
    needed(bin, &total, &vendor);
    CHECK(total > 0); /* readelf read it: libc at least */
    CHECK(vendor == 0);
    if (lib) { /* a static libnanoconv.a has no dynamic section: nothing to find, nothing to check */
        needed(lib, &total, &vendor);
        CHECK(vendor == 0);
    }
}

int main(void) {
    test_load();
    test_not_linked();
    return nc_test_done("test_vendor_libs");
}
#endif
