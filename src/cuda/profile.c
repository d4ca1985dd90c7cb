/*
 * nanoconv profile's collector: CUPTI activity records summed by name (see profile.h).
 *
 * cupti.h is included for its types alone; the functions come from dlsym, so
 * that the library is loaded by this command only and a build needs no CUPTI
 * library to link. Kernel names are demangled with the C++ runtime's
 * __cxa_demangle, also found with dlsym (libstdc++ is in the process already,
 * as cuBLAS and cuDNN need it), which keeps nanoconv free of C++ sources.
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cuda/profile.h"

/* The newest kernel record of CUDA 13's cupti_activity.h. CUPTI fills records
 * of the newest layout it knows, which within one major version only grows at
 * the end, so the loaded library must be of the headers' major version. */
typedef CUpti_ActivityKernel10 kernel_record;
typedef CUpti_ActivityMemcpy6 memcpy_record;
typedef CUpti_ActivityMemset4 memset_record;

/* Size of each buffer CUPTI fills: a kernel record is about 200 bytes, an API record 40. */
#define BUFFER_SIZE (4u << 20)

/* ------------------------------------------------------------ CUPTI, loaded */

typedef CUptiResult (*get_version_fn)(uint32_t *);
typedef CUptiResult (*get_result_string_fn)(CUptiResult, const char **);
typedef CUptiResult (*register_callbacks_fn)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
typedef CUptiResult (*enable_fn)(CUpti_ActivityKind);
typedef CUptiResult (*flush_all_fn)(uint32_t);
typedef CUptiResult (*next_record_fn)(uint8_t *, size_t, CUpti_Activity **);
typedef CUptiResult (*dropped_fn)(CUcontext, uint32_t, size_t *);
typedef CUptiResult (*callback_name_fn)(CUpti_CallbackDomain, uint32_t, const char **);
typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static struct {
    void *handle;
    char path[512];
    uint32_t version;
    get_version_fn get_version;
    get_result_string_fn get_result_string;
    register_callbacks_fn register_callbacks;
    enable_fn enable, disable;
    flush_all_fn flush_all;
    next_record_fn next_record;
    dropped_fn dropped;
    callback_name_fn callback_name;
} cupti;

/* The activities recorded: what nvprof's two tables held. */
static const CUpti_ActivityKind kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, /* unlike KIND_KERNEL, does not serialise the kernels it records */
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,
};
#define N_KINDS (sizeof kinds / sizeof kinds[0])

static int cupti_fail(nc_error *err, CUptiResult r, const char *what) {
    const char *s = NULL;
    if (!cupti.get_result_string || cupti.get_result_string(r, &s) != CUPTI_SUCCESS || !s) s = "unknown error";
    return nc_fail(err, NC_ERR_DEVICE, "profile: %s failed: %s (CUPTI error %d)", what, s, (int)r);
}

/* Opens the first libcupti found: by the dynamic linker's search, then in the toolkit's usual folders. */
static void *open_cupti(char *first_error, size_t n) {
    static const char *const names[] = {"libcupti.so.13", "libcupti.so"};
    const char *cuda_home = getenv("CUDA_HOME");
    const char *const dirs[] = {"", cuda_home && *cuda_home ? cuda_home : NULL, "/usr/local/cuda",
                                "/usr/local/cuda/extras/CUPTI"};
    first_error[0] = '\0';
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
        if (!dirs[d]) continue;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            char path[512];
            if (dirs[d][0])
                snprintf(path, sizeof path, "%s/lib64/%s", dirs[d], names[i]);
            else
                snprintf(path, sizeof path, "%s", names[i]);
            void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (h) return h;
            const char *e = dlerror();
            if (!first_error[0] && e) snprintf(first_error, n, "%s", e);
        }
    }
    return NULL;
}

static int load_cupti(nc_error *err) {
    if (cupti.handle) return NC_OK;
    char first_error[256];
    void *h = open_cupti(first_error, sizeof first_error);
    if (!h)
        return nc_fail(err, NC_ERR_UNAVAILABLE,
                       "profile needs CUPTI, the CUDA toolkit's profiling library, and it could not be loaded: tried "
                       "libcupti.so.13 and libcupti.so on the library path and in $CUDA_HOME/lib64, "
                       "/usr/local/cuda/lib64 and /usr/local/cuda/extras/CUPTI/lib64 (%s); add its folder to "
                       "LD_LIBRARY_PATH",
                       first_error);
    const struct {
        const char *name;
        void *slot; /* the address of the function pointer to fill */
    } syms[] = {
        {"cuptiGetVersion", &cupti.get_version},
        {"cuptiGetResultString", &cupti.get_result_string},
        {"cuptiActivityRegisterCallbacks", &cupti.register_callbacks},
        {"cuptiActivityEnable", &cupti.enable},
        {"cuptiActivityDisable", &cupti.disable},
        {"cuptiActivityFlushAll", &cupti.flush_all},
        {"cuptiActivityGetNextRecord", &cupti.next_record},
        {"cuptiActivityGetNumDroppedRecords", &cupti.dropped},
        {"cuptiGetCallbackName", &cupti.callback_name},
    };
    Dl_info info = {0};
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *f = dlsym(h, syms[i].name);
        if (!f) {
            dlclose(h);
            memset(&cupti, 0, sizeof cupti);
            return nc_fail(err, NC_ERR_UNAVAILABLE, "profile: the CUPTI library loaded lacks %s; it is too old",
                           syms[i].name);
        }
        /* POSIX guarantees that a function pointer survives a round trip through void *. */
        memcpy(syms[i].slot, &f, sizeof f);
        if (i == 0) dladdr(f, &info);
    }
    snprintf(cupti.path, sizeof cupti.path, "%s", info.dli_fname ? info.dli_fname : "libcupti");
    CUptiResult r = cupti.get_version(&cupti.version);
    if (r != CUPTI_SUCCESS || cupti.version / 10000 != CUPTI_API_VERSION / 10000) {
        const uint32_t v = r == CUPTI_SUCCESS ? cupti.version : 0;
        dlclose(h);
        memset(&cupti, 0, sizeof cupti);
        return nc_fail(err, NC_ERR_UNAVAILABLE,
                       "profile: the CUPTI library loaded (API version %u) is not of CUDA %d, whose record layouts "
                       "nanoconv was built with (API version %d); put CUDA %d's libcupti first on LD_LIBRARY_PATH",
                       v, CUPTI_API_VERSION / 10000, CUPTI_API_VERSION, CUPTI_API_VERSION / 10000);
    }
    cupti.handle = h;
    return NC_OK;
}

/* ------------------------------------------------------------- the sums */

typedef struct {
    char *key; /* the name as recorded: mangled for kernels; NULL for an empty slot */
    uint64_t hash;
    nc_prof_kind kind;
    uint64_t calls, total_ns, min_ns, max_ns;
} slot;

/* What the buffer callbacks, called on CUPTI's own thread, add to; lock held. */
static struct {
    pthread_mutex_t lock;
    int recording;
    slot *slots; /* open addressing, cap a power of two, at most half full */
    size_t cap, used;
    uint64_t dropped, untimed;
    int out_of_memory;
} rec = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t hash_key(nc_prof_kind kind, const char *s) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)kind; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int grow(void) {
    const size_t cap = rec.cap ? rec.cap * 2 : 256;
    slot *s = calloc(cap, sizeof *s);
    if (!s) return 0;
    for (size_t i = 0; i < rec.cap; i++) {
        if (!rec.slots[i].key) continue;
        size_t j = rec.slots[i].hash & (cap - 1);
        while (s[j].key) j = (j + 1) & (cap - 1);
        s[j] = rec.slots[i];
    }
    free(rec.slots);
    rec.slots = s;
    rec.cap = cap;
    return 1;
}

static void add(nc_prof_kind kind, const char *key, uint64_t start, uint64_t end) {
    if (2 * (rec.used + 1) > rec.cap && !grow()) {
        rec.out_of_memory = 1;
        return;
    }
    const uint64_t h = hash_key(kind, key);
    size_t j = h & (rec.cap - 1);
    while (rec.slots[j].key && !(rec.slots[j].hash == h && rec.slots[j].kind == kind && !strcmp(rec.slots[j].key, key)))
        j = (j + 1) & (rec.cap - 1);
    slot *s = &rec.slots[j];
    if (!s->key) {
        if (!(s->key = strdup(key))) {
            rec.out_of_memory = 1;
            return;
        }
        s->hash = h;
        s->kind = kind;
        s->min_ns = UINT64_MAX;
        rec.used++;
    }
    s->calls++;
    if (start == 0 && end == 0) { /* CUPTI could not time it */
        rec.untimed++;
        return;
    }
    const uint64_t d = end > start ? end - start : 0;
    s->total_ns += d;
    if (d < s->min_ns) s->min_ns = d;
    if (d > s->max_ns) s->max_ns = d;
}

/* "cudaMemcpyAsync_ptsz_v7000" -> "cudaMemcpyAsync": CUPTI names each entry point version; nvprof named the API. */
static void api_name(char *buf, size_t n, CUpti_CallbackDomain domain, uint32_t cbid) {
    const char *raw = NULL;
    if (cupti.callback_name(domain, cbid, &raw) != CUPTI_SUCCESS || !raw) {
        snprintf(buf, n, "%s API call %u", domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "runtime" : "driver", cbid);
        return;
    }
    snprintf(buf, n, "%s", raw);
    for (char *u; (u = strrchr(buf, '_')) && u != buf;) {
        const char *sfx = u + 1;
        int version = sfx[0] == 'v' && sfx[1] && strspn(sfx + 1, "0123456789") == strlen(sfx + 1);
        if (!version && strcmp(sfx, "ptsz") && strcmp(sfx, "ptds")) break;
        *u = '\0';
    }
}

static const char *memcpy_name(uint8_t copy_kind) {
    switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "[CUDA memcpy HtoD]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "[CUDA memcpy DtoH]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "[CUDA memcpy DtoD]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "[CUDA memcpy HtoH]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "[CUDA memcpy PtoP]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "[CUDA memcpy HtoA]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "[CUDA memcpy AtoH]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "[CUDA memcpy AtoA]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "[CUDA memcpy AtoD]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "[CUDA memcpy DtoA]";
    default: return "[CUDA memcpy]";
    }
}

static void add_record(const CUpti_Activity *r) {
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const kernel_record *k = (const kernel_record *)r;
        add(NC_PROF_KERNEL, k->name ? k->name : "[unnamed kernel]", k->start, k->end);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const memcpy_record *m = (const memcpy_record *)r;
        add(NC_PROF_MEMCPY, memcpy_name(m->copyKind), m->start, m->end);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const memset_record *m = (const memset_record *)r;
        add(NC_PROF_MEMSET, "[CUDA memset]", m->start, m->end);
        break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
        const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)r;
        const int runtime = r->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
        char name[128];
        api_name(name, sizeof name, runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid);
        add(runtime ? NC_PROF_RUNTIME : NC_PROF_DRIVER, name, a->start, a->end);
        break;
    }
    default: break;
    }
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    /* CUPTI asks for 8-byte alignment; without a buffer it drops the records and counts them. */
    *buffer = aligned_alloc(8, BUFFER_SIZE);
    *size = *buffer ? BUFFER_SIZE : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    (void)size;
    pthread_mutex_lock(&rec.lock);
    if (rec.recording) {
        CUpti_Activity *r = NULL;
        while (cupti.next_record(buffer, valid, &r) == CUPTI_SUCCESS) add_record(r);
        size_t dropped = 0;
        if (cupti.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS) rec.dropped += dropped;
    }
    pthread_mutex_unlock(&rec.lock);
    free(buffer);
}

/* ----------------------------------------------------------------- tables */

struct nc_prof {
    int stopped;
    nc_prof_row *rows[2];
    size_t n[2];
    uint64_t total_ns[2];
    uint64_t dropped, untimed;
};

static void clear_slots(void) {
    for (size_t i = 0; i < rec.cap; i++) free(rec.slots[i].key);
    free(rec.slots);
    rec.slots = NULL;
    rec.cap = rec.used = 0;
    rec.dropped = rec.untimed = 0;
    rec.out_of_memory = 0;
}

int nc_prof_start(nc_prof **out, nc_error *err) {
    *out = NULL;
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0)
        return nc_fail(err, NC_ERR_UNAVAILABLE, "profile needs a CUDA GPU, and none was found (%s)",
                       e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device");
    int rc = load_cupti(err);
    if (rc) return rc;
    nc_prof *p = calloc(1, sizeof *p);
    if (!p) return nc_fail(err, NC_ERR_NOMEM, "profile: out of memory");
    pthread_mutex_lock(&rec.lock);
    const int busy = rec.recording;
    if (!busy) {
        clear_slots();
        rec.recording = 1;
    }
    pthread_mutex_unlock(&rec.lock);
    if (busy) {
        free(p);
        return nc_fail(err, NC_ERR_ARG, "profile: a profile is already being recorded in this process");
    }
    CUptiResult r = cupti.register_callbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) rc = cupti_fail(err, r, "cuptiActivityRegisterCallbacks");
    for (size_t i = 0; i < N_KINDS && !rc; i++)
        if ((r = cupti.enable(kinds[i])) != CUPTI_SUCCESS) rc = cupti_fail(err, r, "cuptiActivityEnable");
    if (rc) {
        nc_prof_free(p);
        return rc;
    }
    *out = p;
    return NC_OK;
}

static int by_total(const void *a, const void *b) {
    const nc_prof_row *x = a, *y = b;
    if (x->total_ns != y->total_ns) return x->total_ns < y->total_ns ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* The demangled name as a new string, or a copy of the name where it is not a mangled C++ one (extern "C" kernels). */
static char *demangled(const char *name) {
    static demangle_fn demangle;
    if (!demangle) {
        void *f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
        if (!f) {
            void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
            if (h) f = dlsym(h, "__cxa_demangle");
        }
        memcpy(&demangle, &f, sizeof f);
    }
    int status = -1;
    char *d = demangle && !strncmp(name, "_Z", 2) ? demangle(name, NULL, NULL, &status) : NULL;
    if (d && status == 0) return d;
    free(d);
    return strdup(name);
}

/* Stops CUPTI and moves the sums out of the recorder; returns the first failure. */
static int stop_recording(nc_error *err) {
    int rc = NC_OK;
    CUptiResult r;
    for (size_t i = 0; i < N_KINDS; i++)
        if ((r = cupti.disable(kinds[i])) != CUPTI_SUCCESS && !rc) rc = cupti_fail(err, r, "cuptiActivityDisable");
    /* FORCED also hands over the buffers that are not full yet: every record made so far. */
    if ((r = cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)) != CUPTI_SUCCESS && !rc)
        rc = cupti_fail(err, r, "cuptiActivityFlushAll");
    return rc;
}

int nc_prof_stop(nc_prof *p, nc_error *err) {
    if (p->stopped) return NC_OK;
    p->stopped = 1;
    int rc = stop_recording(err);
    pthread_mutex_lock(&rec.lock);
    rec.recording = 0;
    if (!rc && rec.out_of_memory) rc = nc_fail(err, NC_ERR_NOMEM, "profile: out of memory while recording");
    for (int t = 0; t < 2 && !rc; t++) {
        if (!(p->rows[t] = calloc(rec.used ? rec.used : 1, sizeof *p->rows[t]))) {
            rc = nc_fail(err, NC_ERR_NOMEM, "profile: out of memory for the tables");
            break;
        }
        for (size_t i = 0; i < rec.cap; i++) {
            const slot *s = &rec.slots[i];
            const int api = s->kind == NC_PROF_RUNTIME || s->kind == NC_PROF_DRIVER;
            if (!s->key || api != (t == NC_PROF_API)) continue;
            char *name = s->kind == NC_PROF_KERNEL ? demangled(s->key) : strdup(s->key);
            if (!name) {
                rc = nc_fail(err, NC_ERR_NOMEM, "profile: out of memory for the tables");
                break;
            }
            p->rows[t][p->n[t]++] = (nc_prof_row){.kind = s->kind,
                                                  .name = name,
                                                  .calls = s->calls,
                                                  .total_ns = s->total_ns,
                                                  .max_ns = s->max_ns,
                                                  .min_ns = s->min_ns == UINT64_MAX ? 0 : s->min_ns};
            p->total_ns[t] += s->total_ns;
        }
        qsort(p->rows[t], p->n[t], sizeof *p->rows[t], by_total);
    }
    p->dropped = rec.dropped;
    p->untimed = rec.untimed;
    clear_slots();
    pthread_mutex_unlock(&rec.lock);
    return rc;
}

const nc_prof_row *nc_prof_rows(const nc_prof *p, nc_prof_table t, size_t *n) {
    *n = p->n[t];
    return p->rows[t];
}

uint64_t nc_prof_total_ns(const nc_prof *p, nc_prof_table t) {
    return p->total_ns[t];
}
uint64_t nc_prof_dropped(const nc_prof *p) {
    return p->dropped;
}
uint64_t nc_prof_untimed(const nc_prof *p) {
    return p->untimed;
}
const char *nc_prof_library(const nc_prof *p) {
    (void)p;
    return cupti.path;
}
uint32_t nc_prof_cupti_version(const nc_prof *p) {
    (void)p;
    return cupti.version;
}

void nc_prof_free(nc_prof *p) {
    if (!p) return;
    if (!p->stopped) {
        nc_error ignored;
        nc_prof_stop(p, &ignored);
    }
    for (int t = 0; t < 2; t++) {
        for (size_t i = 0; i < p->n[t]; i++) free((char *)p->rows[t][i].name);
        free(p->rows[t]);
    }
    free(p);
}
