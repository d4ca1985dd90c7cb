/* cuBLAS and cuDNN through dlopen: see vendor_libs.h. */
#include "cuda/vendor_libs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define NC_STR_(x) #x
#define NC_STR(x) NC_STR_(x)

static nc_vendor_api api;
static int loaded; /* NC_VENDOR_* bits of the libraries whose functions are all in api */
static pthread_mutex_t loading = PTHREAD_MUTEX_INITIALIZER; /* sessions created at once on several threads */

/* dlopen by soname (the loader's search path: LD_LIBRARY_PATH, the cache, the executable's RUNPATH), then from
 * the folder the build found it in. On failure, *why gets the first attempt's reason (the usual one to see). */
static void *open_library(const char *soname, const char *build_dir, char *why, size_t why_size) {
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    const char *e = dlerror();
    snprintf(why, why_size, "%s", e ? e : "unknown reason");
    if (build_dir && *build_dir) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", build_dir, soname) < (int)sizeof path)
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    return h;
}

/* Opens `what` (soname, else in build_dir) and points each of the n slots at the function of the same index in
 * names; NC_ERR_UNAVAILABLE naming the library and the missing function where it lacks one. */
static int load_library(const char *what, const char *soname, const char *build_dir, const char *const *names,
                        void **const *slots, int n, nc_error *err) {
    char why[512];
    void *h = open_library(soname, build_dir, why, sizeof why);
    if (!h) return nc_fail(err, NC_ERR_UNAVAILABLE, "%s (%s) could not be loaded: %s", what, soname, why);
    for (int i = 0; i < n; i++)
        if (!(*slots[i] = dlsym(h, names[i]))) {
            dlclose(h);
            return nc_fail(err, NC_ERR_UNAVAILABLE, "%s (%s) has no function %s", what, soname, names[i]);
        }
    return NC_OK; /* h stays open for the life of the process */
}

#define NC_VENDOR_NAME(f) #f,
#define NC_VENDOR_SLOT(f) (void **)&api.f,

static int load_cublas(nc_error *err) {
    static const char *const names[] = {NC_CUBLAS_FUNCTIONS(NC_VENDOR_NAME) NC_VENDOR_NAME(cublasGemmEx)};
    void **const slots[] = {NC_CUBLAS_FUNCTIONS(NC_VENDOR_SLOT) NC_VENDOR_SLOT(cublasGemmEx)};
    return load_library("cuBLAS", "libcublas.so." NC_STR(CUBLAS_VER_MAJOR), NC_CUBLAS_DIR, names, slots,
                        (int)(sizeof names / sizeof names[0]), err);
}

#ifdef NC_HAVE_CUDNN
static int load_cudnn(nc_error *err) {
    static const char *const names[] = {NC_CUDNN_FUNCTIONS(NC_VENDOR_NAME)};
    void **const slots[] = {NC_CUDNN_FUNCTIONS(NC_VENDOR_SLOT)};
    return load_library("cuDNN", "libcudnn.so." NC_STR(CUDNN_MAJOR), NC_CUDNN_DIR, names, slots,
                        (int)(sizeof names / sizeof names[0]), err);
}
#endif

static int load_locked(int which, nc_error *err) {
    int rc;
    if ((which & NC_VENDOR_CUBLAS) && !(loaded & NC_VENDOR_CUBLAS)) {
        if ((rc = load_cublas(err))) return rc;
        loaded |= NC_VENDOR_CUBLAS;
    }
    if ((which & NC_VENDOR_CUDNN) && !(loaded & NC_VENDOR_CUDNN)) {
#ifdef NC_HAVE_CUDNN
        if ((rc = load_cudnn(err))) return rc;
        loaded |= NC_VENDOR_CUDNN;
#else
        return nc_fail(err, NC_ERR_UNAVAILABLE, "this nanoconv was built without cuDNN");
#endif
    }
    return NC_OK;
}

int nc_vendor_load(const nc_vendor_api **out, int which, nc_error *err) {
    pthread_mutex_lock(&loading);
    const int rc = load_locked(which, err);
    if (!rc && *out != &api) *out = &api; /* a caller's static pointer written once, under the lock */
    pthread_mutex_unlock(&loading);
    return rc;
}
