/* The fastest exact convolution version per layer shape, measured once and cached (conv_autotune.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda/conv_autotune.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_layers.h"
#include "io/atomic_file.h"

/* Images a version is timed on: enough to fill the GPU many times over for every course layer, few enough that
 * the slowest version (2, tiled) stays in the tens of milliseconds. */
#define TUNE_BATCH 2048
#define TUNE_REPS 5
/* A version whose second run takes this many times the best so far is not timed further. */
#define TUNE_CUTOFF 4.0

/* ------------------------------------------------------------------ cache */

/* The cache file's path in path[size]; 0 where caching is off or no folder can be named. */
static int cache_path(char *path, size_t size) {
    const char *dir = getenv("NANOCONV_CACHE_DIR");
    int n;
    if (dir && !strcmp(dir, "off")) return 0;
    if (dir && *dir) {
        n = snprintf(path, size, "%s/conv-kernels.json", dir);
    } else if ((dir = getenv("XDG_CACHE_HOME")) && *dir) {
        n = snprintf(path, size, "%s/nanoconv/conv-kernels.json", dir);
    } else if ((dir = getenv("HOME")) && *dir) {
        n = snprintf(path, size, "%s/.cache/nanoconv/conv-kernels.json", dir);
    } else {
        return 0;
    }
    return n > 0 && (size_t)n < size;
}

/* mkdir -p of the folder that holds path. */
static int make_parent(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return 1;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return 0;
        *p = '/';
    }
    return mkdir(dir, 0755) == 0 || errno == EEXIST;
}

/* The cache's JSON object, or an empty one where there is no readable cache. NULL only when out of memory. */
static cJSON *cache_read(const char *path) {
    FILE *f = path ? fopen(path, "rb") : NULL;
    char *text = NULL;
    if (f) {
        if (fseek(f, 0, SEEK_END) == 0) {
            const long len = ftell(f);
            if (len > 0 && len < (1L << 24) && fseek(f, 0, SEEK_SET) == 0 && (text = (char *)malloc((size_t)len + 1))) {
                if (fread(text, 1, (size_t)len, f) == (size_t)len)
                    text[len] = '\0';
                else
                    free(text), text = NULL;
            }
        }
        fclose(f);
    }
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (o && !cJSON_IsObject(o)) cJSON_Delete(o), o = NULL;
    return o ? o : cJSON_CreateObject();
}

/* Writes the cache atomically (io/atomic_file.h); quietly does nothing where it cannot: the next run measures
 * again. */
static void cache_write(const char *path, const cJSON *o) {
    char *text = make_parent(path) ? cJSON_Print(o) : NULL;
    if (!text) return;
    const void *data[1] = {text};
    const size_t size[1] = {strlen(text)};
    nc_error ignored;
    (void)nc_write_file_atomic(path, data, size, 1, &ignored);
    free(text);
}

/* How long a tuner waits for another's lock before it times without it: far longer than a zoo model's tuning takes
 * (seconds), short enough that a stopped or hung holder does not hang every session that shares the cache. */
#define LOCK_WAIT_S 60

/* Takes the cache's lock, PATH.lock beside it (flock: released when the process ends, however it ends), so that
 * tuners of several processes, or of sessions on several GPUs of one, time and write the cache one at a time: none
 * drops the entries another adds while it times, and none times its kernels under another's load. Only a tuner with
 * something to time takes it. The lock's descriptor, or -1 where it cannot be had within LOCK_WAIT_S (the run then
 * goes on without it). */
static int cache_lock(const char *path) {
    char lock[4096 + 8];
    if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock || !make_parent(path)) return -1;
    const int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    for (int waited_ms = 0; waited_ms < LOCK_WAIT_S * 1000; waited_ms += 20) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
        if (errno != EWOULDBLOCK && errno != EINTR) break;
        usleep(20 * 1000);
    }
    close(fd);
    return -1;
}

/* The cache key of a layer on this device. */
static void cache_key(char *key, size_t size, const cudaDeviceProp *prop, const nc_layer *l,
                      const nc_conv_tune_layer *t) {
    char act[24] = "", pool[32] = "";
    if (t->epi.act >= 0) snprintf(act, sizeof act, " +%s", nc_layer_kind_name((nc_layer_kind)t->epi.act));
    if (t->epi.pool >= 0)
        snprintf(pool, sizeof pool, " +%s%d/%d", nc_layer_kind_name((nc_layer_kind)t->epi.pool), t->epi.P, t->epi.S);
    snprintf(key, size, "%s sm_%d%d nanoconv %s kernels %s | %dx%dx%d m%d k%d%s%s%s", prop->name, prop->major,
             prop->minor, NC_VERSION, nc_cuda_kernels_id(), l->in.c, l->in.h, l->in.w, l->m, l->k, act, pool,
             t->u8 ? " u8" : "");
}

/* ------------------------------------------------------------------ timing */

/* One run of layer t as version v would do it in the network: the fused kernel for v = 6, 14 and 15
 * (nc_conv_fused_rows_of), else the convolution, then its activation and pooling as their own kernels. Inputs and
 * outputs are g's buffers, contents ignored. */
static int run_version(nc_gpu *g, const nc_conv_tune_layer *t, int v, int B, nc_error *err) {
    const nc_layer *l = &g->m->layers[t->li];
    float *x = g->act[0], *y = g->act[1];
    if (nc_conv_fused_rows_of(v) >= 0 && t->fused_layers > 0)
        return nc_conv_launch_fused_rows(y, x, t->u8 ? g->img : NULL, t->u8 ? t->lut : NULL, g->weight[t->li],
                                         g->bias[t->li], B, l->in.c, l->in.h, l->in.w, l->m, l->k, &t->epi,
                                         nc_conv_fused_rows_of(v), g->stream, err);
    int rc = nc_cuda_conv_forward(v, y, x, g->weight[t->li], g->bias[t->li], B, l->in.c, l->in.h, l->in.w, l->m, l->k,
                                  g->stream, err);
    const int Ho = l->in.h - l->k + 1, Wo = l->in.w - l->k + 1;
    if (!rc && t->epi.act >= 0) { /* y to x, as the network's ping-pong buffers would */
        rc = nc_cuda_activation_forward((nc_layer_kind)t->epi.act, x, y, (size_t)B * l->m * Ho * Wo, g->stream, err);
        float *swap = x;
        x = y, y = swap;
    }
    if (!rc && t->epi.pool >= 0)
        rc =
            nc_cuda_pool_forward((nc_layer_kind)t->epi.pool, x, y, B, l->m, Ho, Wo, t->epi.P, t->epi.S, g->stream, err);
    return rc;
}

/* The versions the default may pick: exact fp32, and the same bits on every run. */
static int tune_candidate(int v) {
    return nc_cuda_conv_version_precision(v) == NC_PRECISION_FP32 && nc_cuda_conv_version_reproducible(v);
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median time of version v on layer t, in ms; *ms is 0 where its second run says it is out of the race. Not its
 * first: that one loads the version's kernels (CUDA's lazy loading), and until 2026-11-26 it put version 15 out of
 * the race on the layers where it is fastest (2018 spring's second layer: 0.66 ms at N = 10000 against version
 * 14's 0.86, yet the tuner kept 14). */
static int time_version(nc_gpu *g, const nc_conv_tune_layer *t, int v, int B, double best, cudaEvent_t e0,
                        cudaEvent_t e1, double *ms, nc_error *err) {
    double runs[TUNE_REPS];
    *ms = 0.0;
    for (int r = 0; r < TUNE_REPS; r++) {
        CUDA_RET(cudaEventRecord(e0, g->stream));
        int rc = run_version(g, t, v, B, err);
        if (rc) return rc;
        CUDA_RET(cudaEventRecord(e1, g->stream));
        CUDA_RET(cudaEventSynchronize(e1));
        float f = 0.0f;
        CUDA_RET(cudaEventElapsedTime(&f, e0, e1));
        runs[r] = f;
        if (r == 1 && best > 0.0 && f > TUNE_CUTOFF * best) return NC_OK;
    }
    /* The first run loads the kernel's module (CUDA's lazy loading): the median of the others. */
    qsort(runs + 1, TUNE_REPS - 1, sizeof runs[0], cmp_double);
    *ms = runs[1 + (TUNE_REPS - 1) / 2];
    return NC_OK;
}

/* Times every exact version on layer t; out->version is the fastest. */
static int tune_layer(nc_gpu *g, const nc_conv_tune_layer *t, int B, nc_conv_tune_result *out, nc_error *err) {
    cudaEvent_t e0 = NULL, e1 = NULL;
    int rc = NC_OK;
    double best = 0.0;
    CUDA_TRY(cudaEventCreate(&e0));
    CUDA_TRY(cudaEventCreate(&e1));
    out->batch = B;
    for (int v = 1; v <= nc_cuda_conv_num_versions() && v <= NC_TUNE_MAX_VERSIONS; v++) {
        if (!tune_candidate(v)) continue;
        rc = nc_cuda_conv_prepare(v, err);
        if (!rc) rc = time_version(g, t, v, B, best, e0, e1, &out->ms[v - 1], err);
        if (rc == NC_ERR_ARG || rc == NC_ERR_NOMEM) { /* a shape it does not take, a workspace that does not fit */
            out->ms[v - 1] = 0.0;
            rc = NC_OK;
            continue;
        }
        if (rc) break;
        if (out->ms[v - 1] > 0.0 && (best == 0.0 || out->ms[v - 1] < best)) best = out->ms[v - 1], out->version = v;
    }
cleanup:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (!rc && !out->version)
        rc = nc_fail(err, NC_ERR_DEVICE, "layer %d: no convolution version could be timed", t->li);
    return rc;
}

/* ------------------------------------------------------------------ entry */

/* Grows g's buffers to *B = TUNE_BATCH images, or the chunk if smaller, halving *B while the device cannot hold
 * them: the session's own chunk may not fit either (it is sized before anything runs), and it is the run, not
 * the choice of a kernel, that should say so. */
static int reserve_batch(nc_gpu *g, int *B, nc_error *err) {
    const size_t hw = (size_t)g->m->input.h * g->m->input.w;
    *B = (int)(g->chunk_max < TUNE_BATCH ? g->chunk_max : TUNE_BATCH);
    for (;;) {
        const int rc = nc_gpu_reserve(g, (size_t)*B, hw, err);
        if (rc != NC_ERR_NOMEM || *B == 1) return rc;
        *B /= 2;
    }
}

/* The version the cache holds for key, where it is one the default may run; else 0. */
static int cache_version(const cJSON *cache, const char *key) {
    const cJSON *hit = cJSON_GetObjectItemCaseSensitive(cache, key);
    const cJSON *v = hit ? cJSON_GetObjectItemCaseSensitive(hit, "version") : NULL;
    return cJSON_IsNumber(v) && v->valueint >= 1 && v->valueint <= nc_cuda_conv_num_versions() &&
                   tune_candidate(v->valueint)
               ? v->valueint
               : 0;
}

int nc_conv_autotune(nc_gpu *g, const nc_conv_tune_layer *layers, int n, nc_conv_tune_result *out, nc_error *err) {
    cudaDeviceProp prop;
    CUDA_RET(cudaGetDeviceProperties(&prop, g->device));
    char path[4096];
    const int caching = cache_path(path, sizeof path);
    cJSON *cache = cache_read(caching ? path : NULL);
    if (!cache) return nc_fail(err, NC_ERR_NOMEM, "out of memory for the convolution kernel cache");
    /* Something to time: the lock, then the cache again (another tuner may have written it meanwhile). */
    int miss = 0, lock = -1;
    for (int i = 0; i < n && caching && !miss; i++) {
        char key[512];
        cache_key(key, sizeof key, &prop, &g->m->layers[layers[i].li], &layers[i]);
        miss = !cache_version(cache, key);
    }
    if (miss && (lock = cache_lock(path)) >= 0) {
        cJSON_Delete(cache);
        if (!(cache = cache_read(path))) {
            close(lock);
            return nc_fail(err, NC_ERR_NOMEM, "out of memory for the convolution kernel cache");
        }
    }
    int rc = NC_OK, measured = 0;
    for (int i = 0; i < n && !rc; i++) {
        const nc_conv_tune_layer *t = &layers[i];
        memset(&out[i], 0, sizeof out[i]);
        char key[512];
        cache_key(key, sizeof key, &prop, &g->m->layers[t->li], t);
        if ((out[i].version = cache_version(cache, key))) {
            out[i].cached = 1;
            continue;
        }
        const nc_layer *l = &g->m->layers[t->li];
        int B;
        if ((rc = reserve_batch(g, &B, err))) break;
        /* Zeros in: the timing does not depend on the values, but NaN from uninitialised memory might. */
        const size_t in = (size_t)B * nc_shape_size(l->in);
        const size_t hw = (size_t)g->m->input.h * g->m->input.w;
        if (cudaMemsetAsync(g->act[0], 0, in * sizeof(float), g->stream) != cudaSuccess ||
            cudaMemsetAsync(g->img, 0, (size_t)B * hw, g->stream) != cudaSuccess) {
            rc = nc_fail(err, NC_ERR_DEVICE, "cudaMemsetAsync failed before timing layer %d", t->li);
            break;
        }
        if ((rc = tune_layer(g, t, B, &out[i], err))) break;
        cJSON *entry = cJSON_CreateObject(), *times = cJSON_CreateObject();
        cJSON_AddNumberToObject(entry, "version", out[i].version);
        cJSON_AddNumberToObject(entry, "batch", B);
        for (int vv = 1; vv <= NC_TUNE_MAX_VERSIONS; vv++)
            if (out[i].ms[vv - 1] > 0.0) {
                char name[8];
                snprintf(name, sizeof name, "%d", vv);
                cJSON_AddNumberToObject(times, name, out[i].ms[vv - 1]);
            }
        cJSON_AddItemToObject(entry, "ms", times);
        cJSON_DeleteItemFromObjectCaseSensitive(cache, key);
        cJSON_AddItemToObject(cache, key, entry);
        measured = 1;
    }
    if (!rc && measured && caching) cache_write(path, cache);
    if (lock >= 0) close(lock); /* the lock goes with it */
    cJSON_Delete(cache);
    return rc;
}
