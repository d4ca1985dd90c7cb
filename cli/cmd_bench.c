/*
 * nanoconv bench: times a model, or one convolution layer shape given on the command line, and reports medians
 * of repeated runs against the floors of the machine measured in the same run.
 *
 *   --backend cpu    each op of the cpu backend's plan and the whole network, GFLOP/s and the share of the FMA
 *                    peak (the `sections` table: a backend's section may look inside its own plan; other CPU
 *                    backends, cpu-ref, get the generic one: the whole network and the convolutions' Op Times)
 *   --backend cuda   the GPU ladder (src/cuda/bench_gpu.h): every convolution kernel version, cuDNN's best fp32
 *   --backend cudnn  and fp16 algorithms, every dense layer on our GEMMs and cuBLAS, the whole network on both
 *                    GPU backends and, with --check, every version's predictions against cpu-ref
 * With no --backend: cuda where a GPU is present, else cpu. `nanoconv bench-gpu` is this command with
 * --backend cuda in front (cli/cmd_bench_gpu.c). `--json FILE` writes everything measured.
 *
 *   nanoconv bench --backend cpu --model models/fashion-2017-high.safetensors
 *   nanoconv bench --backend cuda -m models/a.safetensors -m models/b.safetensors -n 100,1000,10000 --json out.json
 *   nanoconv bench --backend cuda --shape 1x28x28:50x5+tanh+maxpool2 -n 10000 --sweep
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/backend.h"
#include "core/error.h"
#include "core/model.h"
#include "cpu/backend_cpu.h"
#include "io/atomic_file.h"
#ifdef NC_HAVE_CUDA
#include "cuda/bench_gpu.h"
#endif

#define MAX_MODELS 16
#define MAX_SHAPES 16
#define MAX_NS 8
#define MAX_N (1L << 24)

/* Bounds of --shape: larger is a typing mistake, not a LeNet layer. */
#define SHAPE_MAX_DIM 1024          /* C, H, W, M */
#define SHAPE_MAX_K 32              /* kernel size */
#define SHAPE_MAX_P 16              /* pooling window */
#define SHAPE_MAX_VALUES (1L << 22) /* an image's input (C H W) and the convolution's output (M Ho Wo), each */
#define SHAPE_MAX_GIB 16.0          /* N images' float input and output together; the GPU bench holds two copies */
#define SHAPE_SYNTAX "CxHxW:MxK[+tanh|+relu|+sigmoid][+maxpoolP|+avgpoolP], e.g. 1x28x28:50x5+tanh+maxpool2"

/* One convolution layer from --shape: valid cross-correlation, stride 1, then the fused epilogue. */
typedef struct {
    char text[48]; /* written back from the values: "1x28x28:50x5+tanh+maxpool2" (40 at most) */
    int C, H, W, M, K;
    int act;  /* NC_TANH, NC_RELU, NC_SIGMOID, or -1 */
    int pool; /* NC_MAXPOOL, NC_AVGPOOL, or -1 */
    int P;    /* pooling window and stride */
} shape_spec;

typedef struct {
    const char *models[MAX_MODELS];
    int n_models;
    shape_spec shapes[MAX_SHAPES];
    int n_shapes;
    const char *backend, *json_path, *data_dir;
    long ns[MAX_NS];
    int n_ns;
    long reps, threads, chunk, conv_kernel, check, device;
    int devices; /* --devices: the network lines' GPUs (nc_run_opts.devices) */
    int check_only, sweep, peak_set;
    unsigned versions; /* --versions: bit v for conv version v; 0: all */
    double peak_seconds;
} bench_args;

/* What every CPU section fills: the images' data set and the model are loaded; out is the JSON report. */
typedef int (*bench_section)(const bench_args *a, const nc_model *m, const nc_dataset *ds, cJSON *out, nc_error *err);

/* ------------------------------------------------------------------ parsing */

/* Reads the decimal digits at *p (up to the next 'x', ':' or '+') as an integer 1..hi into *v and moves *p past
 * them; else writes what was wrong with `field` into msg. */
static int shape_int(const char **p, const char *field, long hi, int *v, char *msg, size_t n) {
    const char *s = *p;
    const size_t tok = strcspn(s, "x:+"), digits = strspn(s, "0123456789");
    if (tok == 0) {
        snprintf(msg, n, "%s is missing", field);
        return 0;
    }
    long x = 0;
    for (size_t i = 0; i < digits && x <= hi; i++) x = 10 * x + (s[i] - '0');
    if (digits != tok || x < 1 || x > hi) {
        snprintf(msg, n, "%s must be an integer from 1 to %ld, not '%.*s'", field, hi, (int)(tok < 24 ? tok : 24), s);
        return 0;
    }
    *v = (int)x;
    *p = s + tok;
    return 1;
}

/* Moves *p past the separator c; else writes which separator was expected after `field`. */
static int shape_sep(const char **p, char c, const char *field, char *msg, size_t n) {
    if (**p == c) {
        (*p)++;
        return 1;
    }
    if (**p)
        snprintf(msg, n, "expected '%c' after %s, found '%c'", c, field, **p);
    else
        snprintf(msg, n, "it ends after %s; expected '%c' and more", field, c);
    return 0;
}

/* "CxHxW:MxK[+ACT][+POOL]" into s; 0 and msg saying what was wrong if it is not one within the bounds. */
static int parse_shape(const char *spec, shape_spec *s, char *msg, size_t n) {
    memset(s, 0, sizeof *s);
    s->act = s->pool = -1;
    s->P = 1;
    const char *p = spec;
    if (!(shape_int(&p, "C", SHAPE_MAX_DIM, &s->C, msg, n) && shape_sep(&p, 'x', "C", msg, n) &&
          shape_int(&p, "H", SHAPE_MAX_DIM, &s->H, msg, n) && shape_sep(&p, 'x', "H", msg, n) &&
          shape_int(&p, "W", SHAPE_MAX_DIM, &s->W, msg, n) && shape_sep(&p, ':', "CxHxW", msg, n) &&
          shape_int(&p, "M", SHAPE_MAX_DIM, &s->M, msg, n) && shape_sep(&p, 'x', "M", msg, n) &&
          shape_int(&p, "K", SHAPE_MAX_K, &s->K, msg, n)))
        return 0;
    if (s->K > s->H || s->K > s->W) {
        snprintf(msg, n, "K %d is larger than the %dx%d input", s->K, s->H, s->W);
        return 0;
    }
    const long Ho = s->H - s->K + 1, Wo = s->W - s->K + 1;
    if ((long)s->C * s->H * s->W > SHAPE_MAX_VALUES || (long)s->M * Ho * Wo > SHAPE_MAX_VALUES) {
        snprintf(msg, n, "an image's input (%d x %d x %d) or output (%d x %ld x %ld) has more than %ld values", s->C,
                 s->H, s->W, s->M, Ho, Wo, SHAPE_MAX_VALUES);
        return 0;
    }
    while (*p) {
        if (*p != '+') {
            snprintf(msg, n, "expected '+' before an epilogue, found '%c'", *p);
            return 0;
        }
        const char *w = ++p;
        const size_t len = strcspn(w, "+");
        p += len;
        if (len == 0) {
            snprintf(msg, n, "nothing after a '+'");
            return 0;
        }
        static const struct {
            const char *name;
            int kind;
        } acts[] = {{"tanh", NC_TANH}, {"relu", NC_RELU}, {"sigmoid", NC_SIGMOID}};
        int act = -1;
        for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
            if (len == strlen(acts[i].name) && !strncmp(w, acts[i].name, len)) act = acts[i].kind;
        const int pool = !strncmp(w, "maxpool", 7) ? NC_MAXPOOL : !strncmp(w, "avgpool", 7) ? NC_AVGPOOL : -1;
        if (act >= 0) {
            if (s->act >= 0 || s->pool >= 0) {
                snprintf(msg, n, "'%.*s' comes after %s; one activation, before the pooling", (int)len, w,
                         s->pool >= 0 ? "the pooling" : "another activation");
                return 0;
            }
            s->act = act;
        } else if (pool >= 0) {
            if (s->pool >= 0) {
                snprintf(msg, n, "a second pooling '%.*s'", (int)len, w);
                return 0;
            }
            char pmsg[128];
            const char *q = w + 7;
            if (len == 7 || !shape_int(&q, "the pooling window P", SHAPE_MAX_P, &s->P, pmsg, sizeof pmsg) ||
                q != w + len) {
                snprintf(msg, n, "'%.*s' needs a window from 1 to %d, as maxpool2", (int)len, w, SHAPE_MAX_P);
                return 0;
            }
            if (s->P > Ho || s->P > Wo) {
                snprintf(msg, n, "the pooling window %d is larger than the convolution's %ldx%ld output", s->P, Ho, Wo);
                return 0;
            }
            s->pool = pool;
        } else {
            snprintf(msg, n, "unknown epilogue '%.*s' (tanh, relu, sigmoid, maxpoolP or avgpoolP)", (int)len, w);
            return 0;
        }
    }
    int used = snprintf(s->text, sizeof s->text, "%dx%dx%d:%dx%d", s->C, s->H, s->W, s->M, s->K);
    if (s->act >= 0) used += snprintf(s->text + used, sizeof s->text - (size_t)used, "+%s", nc_layer_kind_name(s->act));
    if (s->pool >= 0)
        snprintf(s->text + used, sizeof s->text - (size_t)used, "+%spool%d", s->pool == NC_MAXPOOL ? "max" : "avg",
                 s->P);
    return 1;
}

/* "100,1000,10000" (or one N) into a->ns; 0 if it is not such a list. */
static int parse_ns(const char *list, bench_args *a) {
    const char *p = list;
    for (a->n_ns = 0; a->n_ns < MAX_NS; p++) {
        const size_t digits = strspn(p, "0123456789");
        long v = 0;
        for (size_t i = 0; i < digits && v <= MAX_N; i++) v = 10 * v + (p[i] - '0');
        if (!digits || v < 1 || v > MAX_N) return 0;
        a->ns[a->n_ns++] = v;
        p += digits;
        if (*p != ',') return !*p;
    }
    return 0;
}

/* --versions: a comma-separated list of conv versions 1..31 into a bit set. */
static int parse_versions(const char *list, unsigned *mask) {
    *mask = 0;
    for (const char *p = list;; p++) {
        const size_t digits = strspn(p, "0123456789");
        if (!digits || digits > 2) return 0;
        const int v = digits == 1 ? p[0] - '0' : 10 * (p[0] - '0') + (p[1] - '0');
        if (v < 1 || v > 31) return 0;
        *mask |= 1u << v;
        p += digits;
        if (*p != ',') return !*p;
    }
}

/* ------------------------------------------------------------------ the CPU bench */

static int cmp_double(const void *x, const void *y) {
    const double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double median(const double *v, int n) {
    double s[256];
    if (n > 256) n = 256;
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

/* A JSON array of n values times scale. */
static cJSON *number_array(const double *v, int n, double scale) {
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, cJSON_CreateNumber(v[i] * scale));
    return arr;
}

/* The processor's name and the cores this process may use. */
static void machine_json(cJSON *out) {
    char name[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
                snprintf(name, sizeof name, "%s", strchr(line, ':') + 2);
                name[strcspn(name, "\n")] = 0;
                break;
            }
        fclose(f);
    }
    cJSON *mach = cJSON_AddObjectToObject(out, "machine");
    cJSON_AddStringToObject(mach, "cpu", name);
    cJSON_AddNumberToObject(mach, "cores", (double)omp_get_num_procs());
    printf("machine: %s, %d cores\n", name, omp_get_num_procs());
}

/* One row of the table and its JSON object. flops is per image; peak in GFLOP/s (0: no share printed). */
static cJSON *row(const char *label, const char *name, const char *note, double flops, const double *s, int reps,
                  long n, double peak) {
    const double med = median(s, reps), gflops = med > 0 ? flops * (double)n / med * 1e-9 : 0.0;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "kernel", note);
    cJSON_AddNumberToObject(o, "flops_per_image", flops);
    cJSON_AddNumberToObject(o, "ms", med * 1e3);
    cJSON_AddItemToObject(o, "ms_all", number_array(s, reps, 1e3));
    cJSON_AddNumberToObject(o, "gflops", gflops);
    if (peak > 0) cJSON_AddNumberToObject(o, "pct_peak", 100.0 * gflops / peak);
    printf("%-4s %-34s %-42s %10.3f %9.1f", label, name, note, med * 1e3, gflops);
    if (peak > 0 && flops > 0)
        printf(" %7.1f%%\n", 100.0 * gflops / peak);
    else
        printf("\n");
    return o;
}

static void table_header(void) {
    printf("%-4s %-34s %-42s %10s %9s %8s\n", "op", "layers", "kernel", "ms", "GFLOP/s", "of peak");
}

static double model_flops(const nc_model *m) {
    double f = 0.0;
    for (int i = 0; i < m->n_layers; i++)
        if (m->layers[i].kind == NC_CONV || m->layers[i].kind == NC_DENSE) f += nc_layer_flops(&m->layers[i]);
    return f;
}

/* The generic section: any backend, through the session API. */
static int bench_generic(const bench_args *a, const nc_model *m, const nc_dataset *ds, cJSON *out, nc_error *err) {
    nc_run_opts opts = {.threads = (int)a->threads, .chunk = (size_t)a->chunk, .conv_kernel = (int)a->conv_kernel};
    nc_session *s = NULL;
    const long n = a->ns[0];
    int rc = nc_session_create(&s, m, a->backend, &opts, err);
    if (rc) return rc;
    int *pred = malloc((size_t)n * sizeof *pred);
    double total[256], conv[NC_MAX_LAYERS][256];
    nc_timing t = {0};
    const int reps = (int)a->reps;
    for (int r = -1; !rc && r < reps && pred; r++) { /* r = -1: a warm-up run, not counted */
        rc = nc_session_run(s, ds->images, (int)n, ds->h, ds->w, pred, NULL, &t, err);
        if (r < 0) continue;
        total[r] = t.total_s;
        for (int i = 0; i < t.n_conv; i++) conv[i][r] = t.conv_s[i];
    }
    if (!pred) rc = nc_fail(err, NC_ERR_NOMEM, "out of memory for %ld predictions", n);
    if (!rc) {
        table_header();
        cJSON *ops = cJSON_AddArrayToObject(out, "ops");
        int ci = 0;
        for (int i = 0; i < m->n_layers; i++) {
            if (m->layers[i].kind != NC_CONV) continue;
            char label[16], name[32];
            snprintf(label, sizeof label, "c%d", ci);
            snprintf(name, sizeof name, "conv %d %d (layer %d)", m->layers[i].m, m->layers[i].k, i);
            cJSON_AddItemToArray(
                ops, row(label, name, t.conv_note[ci], nc_layer_flops(&m->layers[i]), conv[ci], reps, n, 0.0));
            ci++;
        }
        cJSON_AddItemToObject(out, "network",
                              row("all", "network", "images in, predictions out", model_flops(m), total, reps, n, 0));
    }
    free(pred);
    nc_session_free(s);
    return rc;
}

/* The cpu section: the FMA peak, then each op of the plan and the whole network. */
static int bench_cpu(const bench_args *a, const nc_model *m, const nc_dataset *ds, cJSON *out, nc_error *err) {
    const nc_backend *b = nc_backend_find("cpu");
    nc_run_opts opts = {.threads = (int)a->threads, .chunk = (size_t)a->chunk, .conv_kernel = (int)a->conv_kernel};
    void *plan = NULL;
    const long n = a->ns[0];
    int rc = nc_model_check_input(m, ds->h, ds->w, err);
    if (!rc) rc = b->create(&plan, m, &opts, err);
    if (rc) return rc;
    const nc_cpu_isa isa = nc_cpu_plan_isa(plan);
    const int threads = nc_cpu_plan_threads(plan);
    printf("backend cpu: %s, %d threads, %d images a chunk\n", nc_cpu_isa_name(isa), threads, nc_cpu_plan_chunk(plan));
    const double peak = nc_cpu_fma_peak_gflops(isa, threads, a->peak_seconds);
    printf("FMA peak (%s, %d threads, measured now): %.1f GFLOP/s\n\n", nc_cpu_isa_name(isa), threads, peak);
    cJSON *pk = cJSON_AddObjectToObject(out, "peak");
    cJSON_AddStringToObject(pk, "isa", nc_cpu_isa_name(isa));
    cJSON_AddNumberToObject(pk, "threads", threads);
    cJSON_AddNumberToObject(pk, "gflops", peak);
    cJSON_AddNumberToObject(out, "chunk", nc_cpu_plan_chunk(plan));

    int *pred = malloc((size_t)n * sizeof *pred);
    static double op_s[NC_CPU_MAX_OPS][256];
    double total[256];
    nc_cpu_op_info ops[NC_CPU_MAX_OPS];
    int n_ops = 0;
    const int reps = (int)a->reps;
    if (!pred) rc = nc_fail(err, NC_ERR_NOMEM, "out of memory for %ld predictions", n);
    for (int r = -1; !rc && r < reps; r++) { /* r = -1: a warm-up run, not counted */
        nc_timing t = {0};
        const double t0 = nc_now();
        rc = b->run(plan, ds->images, (int)n, ds->h, ds->w, pred, NULL, &t, err);
        const double dt = nc_now() - t0;
        if (r < 0) continue;
        total[r] = dt;
        n_ops = nc_cpu_plan_ops(plan, ops, NC_CPU_MAX_OPS);
        for (int o = 0; o < n_ops; o++) op_s[o][r] = ops[o].seconds;
    }
    if (!rc) {
        table_header();
        cJSON *arr = cJSON_AddArrayToObject(out, "ops");
        for (int o = 0; o < n_ops; o++) {
            char label[16];
            snprintf(label, sizeof label, "%d", o);
            cJSON *j = row(label, ops[o].name, ops[o].note, ops[o].flops, op_s[o], reps, n, peak);
            cJSON_AddNumberToObject(j, "first_layer", ops[o].first_layer);
            cJSON_AddNumberToObject(j, "n_layers", ops[o].n_layers);
            cJSON_AddNumberToObject(j, "conv_index", ops[o].conv_index);
            cJSON_AddItemToArray(arr, j);
        }
        cJSON_AddItemToObject(
            out, "network", row("all", "network", "images in, predictions out", model_flops(m), total, reps, n, peak));
    }
    free(pred);
    b->destroy(plan);
    return rc;
}

static const struct {
    const char *backend;
    bench_section fn;
} sections[] = {
    {"cpu", bench_cpu},
};

/* A model whose last layer is the --shape layer, for the CPU bench, which is fed the 28x28 test images: they are
 * upscaled to a square input of 28 pixels or more, and where that is not the layer's input (C > 1, or H < 28), a
 * first convolution from one channel makes it (op 1 of the plan; the layer is then op 2). *pre gets whether it
 * did. Random weights from a fixed seed. */
static int shape_model(const shape_spec *s, nc_model **m, int *pre, nc_error *err) {
    if (s->H != s->W)
        return nc_fail(err, NC_ERR_ARG,
                       "bench: --shape %s: the cpu bench takes square layers (H = W) only, as the square test images "
                       "feed them; --backend cuda takes any",
                       s->text);
    const int side = s->H < 28 ? 28 : s->H;
    char input[32], layers[160];
    int used = 0;
    *pre = s->C > 1 || side != s->H;
    if (*pre) used = snprintf(layers, sizeof layers, "conv %d %d; ", s->C, side - s->H + 1);
    used += snprintf(layers + used, sizeof layers - (size_t)used, "conv %d %d", s->M, s->K);
    if (s->act >= 0) used += snprintf(layers + used, sizeof layers - (size_t)used, "; %s", nc_layer_kind_name(s->act));
    if (s->pool >= 0)
        snprintf(layers + used, sizeof layers - (size_t)used, "; %s %d %d", nc_layer_kind_name(s->pool), s->P, s->P);
    snprintf(input, sizeof input, "1x%dx%d raw", side, side);
    char name[64];
    snprintf(name, sizeof name, "shape %s", s->text);
    int rc = nc_model_build(m, name, input, layers, err);
    if (rc) return rc;
    nc_model_init_seeded(*m, 1);
    return NC_OK;
}

/* The CPU bench: one model or one shape, one N. */
static int bench_on_cpu(const bench_args *a, cJSON *out, nc_error *err) {
    nc_dataset ds = {0};
    nc_model *m = NULL;
    int pre = 0;
    const long n = a->ns[0];
    int rc = nc_dataset_load_split(&ds, a->data_dir, "t10k", err);
    if (!rc && n > ds.n) rc = nc_fail(err, NC_ERR_ARG, "-n %ld is more than the %d test images", n, ds.n);
    if (!rc) rc = a->n_models ? nc_model_load(&m, a->models[0], err) : shape_model(&a->shapes[0], &m, &pre, err);
    if (!rc) {
        printf("nanoconv bench: %s %s, backend %s, N = %ld, %ld timed runs (medians)\n",
               a->n_models ? "model" : "layer", a->n_models ? nc_model_name(m) : a->shapes[0].text, a->backend, n,
               a->reps);
        if (pre)
            printf("op 1 makes the layer's %dx%dx%d input from the test images; the layer is op 2\n", a->shapes[0].C,
                   a->shapes[0].H, a->shapes[0].W);
        cJSON_AddStringToObject(out, "model", nc_model_name(m));
        if (a->n_models)
            cJSON_AddStringToObject(out, "model_path", a->models[0]);
        else
            cJSON_AddStringToObject(out, "shape", a->shapes[0].text);
        cJSON_AddStringToObject(out, "backend", a->backend);
        cJSON_AddNumberToObject(out, "n", (double)n);
        cJSON_AddNumberToObject(out, "reps", (double)a->reps);
        machine_json(out);
        bench_section fn = bench_generic;
        for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
            if (!strcmp(sections[i].backend, a->backend)) fn = sections[i].fn;
        rc = fn(a, m, &ds, out, err);
    }
    nc_model_free(m);
    nc_dataset_free(&ds);
    return rc;
}

/* ------------------------------------------------------------------ the GPU bench */

/* cuda where this build has it and a GPU is present, else cpu. */
static const char *default_backend(void) {
#ifdef NC_HAVE_CUDA
    if (nc_cuda_gpu_count() > 0) return "cuda";
#endif
    return "cpu";
}

#ifdef NC_HAVE_CUDA
/* The ladder (src/cuda/bench_gpu.h) on every model and shape at every N. A failed check (NC_ERR_MISMATCH) comes
 * back after the whole report, which the JSON then holds. */
static int bench_on_gpu(const bench_args *a, cJSON *out, nc_error *err) {
    static nc_bench_shape shapes[MAX_SHAPES];
    nc_model *models[MAX_MODELS] = {0};
    nc_dataset ds = {0};
    int ns[MAX_NS], rc = NC_OK;
    for (int i = 0; i < a->n_ns; i++) ns[i] = (int)a->ns[i];
    for (int i = 0; i < a->n_shapes; i++) {
        const shape_spec *s = &a->shapes[i];
        nc_bench_shape *h = &shapes[i];
        memset(h, 0, sizeof *h);
        snprintf(h->name, sizeof h->name, "%s", s->text);
        h->C = s->C, h->H = s->H, h->W = s->W, h->M = s->M, h->K = s->K;
        h->act = s->act, h->pool = s->pool, h->P = h->S = s->P;
        /* A one-channel layer is taken as a first layer on raw pixels: its fused rows read uint8. */
        h->input_u8 = s->C == 1;
        for (int p = 0; p < 256; p++) h->lut[p] = (float)p;
    }
    if (nc_cuda_gpu_count() == 0)
        return nc_fail(err, NC_ERR_UNAVAILABLE,
                       "bench --backend %s: no CUDA GPU found; --backend cpu runs the CPU bench", a->backend);
    for (int i = 0; i < a->n_models && !rc; i++) rc = nc_model_load(&models[i], a->models[i], err);
    if (!rc && a->n_models) rc = nc_dataset_load_split(&ds, a->data_dir, "t10k", err);
    if (!rc && a->n_models) cli_pin_images(a->backend, &ds); /* as eval's are */
    if (!rc) {
        printf("nanoconv bench: backend %s, N =", a->backend);
        for (int i = 0; i < a->n_ns; i++) printf("%s%d", i ? "," : " ", ns[i]);
        printf("%s, up to %ld timed runs (medians)\n", a->n_ns ? "" : " none (--check-only)", a->reps);
        for (int i = 0; i < a->n_models; i++) printf("model %s (%s)\n", nc_model_name(models[i]), a->models[i]);
        for (int i = 0; i < a->n_shapes; i++) printf("layer %s\n", a->shapes[i].text);
        cJSON_AddStringToObject(out, "backend", a->backend);
        cJSON_AddNumberToObject(out, "reps", (double)a->reps);
        cJSON *jm = cJSON_AddArrayToObject(out, "models"), *js = cJSON_AddArrayToObject(out, "shapes");
        for (int i = 0; i < a->n_models; i++) cJSON_AddItemToArray(jm, cJSON_CreateString(a->models[i]));
        for (int i = 0; i < a->n_shapes; i++) cJSON_AddItemToArray(js, cJSON_CreateString(a->shapes[i].text));
        cJSON *jn = cJSON_AddArrayToObject(out, "ns");
        for (int i = 0; i < a->n_ns; i++) cJSON_AddItemToArray(jn, cJSON_CreateNumber(ns[i]));
        machine_json(out);
        nc_cuda_bench_opts o = {0};
        o.models = (const nc_model *const *)models;
        o.n_models = a->n_models;
        o.shapes = shapes;
        o.n_shapes = a->n_shapes;
        o.ns = ns;
        o.n_ns = a->n_ns;
        o.reps = (int)a->reps;
        o.device = (int)a->device;
        o.devices = a->devices;
        o.data = a->n_models ? &ds : NULL;
        o.check_n = (int)a->check;
        o.sweep = a->sweep;
        o.versions = a->versions;
        rc = nc_cuda_bench(&o, stdout, out, err);
    }
    for (int i = 0; i < a->n_models; i++) nc_model_free(models[i]);
    nc_dataset_free(&ds);
    return rc;
}
#endif

/* ------------------------------------------------------------------ the command */

static void usage(void) {
    printf(
        "usage: nanoconv bench (-m MODEL | --shape SPEC)... [--backend cpu|cuda|cudnn|cpu-ref] [-n N[,N...]]\n"
        "                      [--reps R] [--json FILE] [--data DIR] [options]\n\n"
        "Times a model, or one convolution layer given as --shape, on N images: medians of R runs after a warm-up,\n"
        "against the machine's floors measured in the same run.\n"
        "  cpu         each op of the plan (fused layers) and the whole network: ms, GFLOP/s, share of the FMA peak\n"
        "  cuda, cudnn the GPU ladder: every conv kernel version (label vN NAME PRECISION) and cuDNN's best fp32\n"
        "              and fp16 algorithms, each dense layer on our SIMT and tensor-core GEMMs and on cuBLAS fp32 and\n"
        "              TF32; ms, GFLOP/s, GB/s, share of the floor (bytes over the measured copy bandwidth, or FLOPs\n"
        "              over the peak of the row's precision: FFMA for fp32, cuBLAS TF32 for tf32 and 3xtf32 (its\n"
        "              2 or 3 MMAs a product counted), cuBLAS fp16 and bf16), ratio to cuDNN fp32 (cuBLAS fp32 for\n"
        "              dense); then per model and N the whole network, host uint8 images (page-locked, as eval's) to\n"
        "              predictions, on cuda at each --precision (fp32 twice: the dense layers on int8 slices,\n"
        "              the default, and with --dense-sums fp32) and on cudnn. Rows below fp32 say \"reduced\n"
        "              precision\".\n"
        "  cpu-ref     (any other backend) the whole network and the convolutions' Op Times\n"
        "  -m, --model FILE      a model (several: GPU only)\n"
        "      --shape SPEC      a layer, " SHAPE_SYNTAX "\n"
        "                        (several: GPU only; cpu: square layers, fed from the test images)\n"
        "      --backend NAME    default: cuda where a GPU is present, else cpu\n"
        "  -n N[,N...]           images (cpu: one N, default 10000; GPU: up to %d, default 100,1000,10000)\n"
        "      --reps R          timed runs (cpu: 1 to 256, default 5; GPU: at most R, 3 to 50, default 20)\n"
        "      --json FILE       also write the results as JSON\n"
        "      --data DIR        folder with the Fashion-MNIST files\n"
        "GPU bench:\n"
        "      --sweep           also time every tuning of the tensor-core versions (nc_conv_tc_tunings) on each\n"
        "                        layer they take, marking the fastest\n"
        "      --check N         every version's predictions on the first N test images against cpu-ref: exact\n"
        "                        versions must equal it, reduced precision may lose 0.002 of correctness (else exit "
        "1)\n"
        "      --check-only N    that check alone\n"
        "      --versions V[,V...]  time only these conv versions (layer rows and --sweep; cuDNN is always timed)\n"
        "      --device D        GPU index\n"
        "      --devices N       the whole-network lines on N GPUs from --device on (all: every one), a share of\n"
        "                        the images each (the layer rows stay on --device)\n"
        "cpu bench:\n"
        "      --threads T       CPU threads (default: OpenMP's)\n"
        "      --chunk B         images per thread chunk (default: the backend's choice)\n"
        "      --conv-kernel V   convolution kernel (1 direct, 2 implicit GEMM; 0 = per layer)\n"
        "      --peak-seconds S  seconds for the FMA peak measurement, 0.01 to 60 (default 0.6)\n"
        "The environment variable NANOCONV_CPU_ISA=scalar|avx2|avx512 forces the cpu backend's code path.\n"
        "`nanoconv bench-gpu` is this command with --backend cuda in front.\n",
        MAX_NS);
}

/* The options that only one side takes: the first one given to the other side's bench, or NULL. */
static const char *misplaced_option(const bench_args *a, int gpu) {
    if (gpu) {
        if (a->threads) return "--threads";
        if (a->chunk) return "--chunk";
        if (a->conv_kernel) return "--conv-kernel";
        if (a->peak_set) return "--peak-seconds";
        return NULL;
    }
    if (a->sweep) return "--sweep";
    if (a->versions) return "--versions";
    if (a->check) return a->check_only ? "--check-only" : "--check";
    if (a->device) return "--device";
    if (a->devices) return "--devices";
    return NULL;
}

int cmd_bench(int argc, char **argv) {
    enum {
        OPT_BACKEND = 1000,
        OPT_THREADS,
        OPT_JSON,
        OPT_DATA,
        OPT_REPS,
        OPT_CHUNK,
        OPT_KERNEL,
        OPT_PEAK,
        OPT_SHAPE,
        OPT_SWEEP,
        OPT_CHECK,
        OPT_CHECK_ONLY,
        OPT_DEVICE,
        OPT_DEVICES,
        OPT_VERSIONS
    };
    static const struct option longopts[] = {{"model", required_argument, 0, 'm'},
                                             {"shape", required_argument, 0, OPT_SHAPE},
                                             {"backend", required_argument, 0, OPT_BACKEND},
                                             {"threads", required_argument, 0, OPT_THREADS},
                                             {"chunk", required_argument, 0, OPT_CHUNK},
                                             {"conv-kernel", required_argument, 0, OPT_KERNEL},
                                             {"reps", required_argument, 0, OPT_REPS},
                                             {"peak-seconds", required_argument, 0, OPT_PEAK},
                                             {"sweep", no_argument, 0, OPT_SWEEP},
                                             {"check", required_argument, 0, OPT_CHECK},
                                             {"check-only", required_argument, 0, OPT_CHECK_ONLY},
                                             {"device", required_argument, 0, OPT_DEVICE},
                                             {"devices", required_argument, 0, OPT_DEVICES},
                                             {"versions", required_argument, 0, OPT_VERSIONS},
                                             {"json", required_argument, 0, OPT_JSON},
                                             {"data", required_argument, 0, OPT_DATA},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    static bench_args a;
    memset(&a, 0, sizeof a);
    a.peak_seconds = 0.6;
    const char *n_text = NULL;
    int c;
    char msg[192];
    optind = 1;
    while ((c = cli_getopt(argc, argv, "m:n:h", longopts)) != -1) {
        switch (c) {
        case 'm':
            if (a.n_models == MAX_MODELS) return cli_usage_error("bench: at most %d models", MAX_MODELS);
            a.models[a.n_models++] = optarg;
            break;
        case OPT_SHAPE:
            if (a.n_shapes == MAX_SHAPES) return cli_usage_error("bench: at most %d --shape", MAX_SHAPES);
            if (!parse_shape(optarg, &a.shapes[a.n_shapes++], msg, sizeof msg))
                return cli_usage_error("bench: --shape '%s': %s (expected " SHAPE_SYNTAX ")", optarg, msg);
            break;
        case 'n':
            n_text = optarg;
            if (!parse_ns(optarg, &a))
                return cli_usage_error("bench: -n takes a batch size or a list of up to %d, as 100,1000,10000 (each "
                                       "1 to %ld), not '%s'",
                                       MAX_NS, MAX_N, optarg);
            break;
        case OPT_BACKEND: a.backend = optarg; break;
        case OPT_THREADS:
            if (!cli_parse_int("--threads", optarg, 1, 1024, &a.threads)) return EXIT_USAGE;
            break;
        case OPT_CHUNK:
            if (!cli_parse_int("--chunk", optarg, 1, 1 << 20, &a.chunk)) return EXIT_USAGE;
            break;
        case OPT_KERNEL:
            if (!cli_parse_int("--conv-kernel", optarg, 0, 1000, &a.conv_kernel)) return EXIT_USAGE;
            break;
        case OPT_REPS:
            if (!cli_parse_int("--reps", optarg, 1, 256, &a.reps)) return EXIT_USAGE;
            break;
        case OPT_PEAK:
            if (!cli_parse_number("--peak-seconds", optarg, 0.01, 60, &a.peak_seconds)) return EXIT_USAGE;
            a.peak_set = 1;
            break;
        case OPT_SWEEP: a.sweep = 1; break;
        case OPT_CHECK:
        case OPT_CHECK_ONLY:
            if (!cli_parse_int(c == OPT_CHECK ? "--check" : "--check-only", optarg, 1, MAX_N, &a.check))
                return EXIT_USAGE;
            a.check_only = c == OPT_CHECK_ONLY;
            break;
        case OPT_DEVICE:
            if (!cli_parse_int("--device", optarg, 0, 1024, &a.device)) return EXIT_USAGE;
            break;
        case OPT_DEVICES:
            if (!cli_parse_devices(optarg, &a.devices)) return EXIT_USAGE;
            break;
        case OPT_VERSIONS:
            if (!parse_versions(optarg, &a.versions))
                return cli_usage_error("bench: --versions takes conv versions 1 to 31 as 5,6,9, not '%s'", optarg);
            break;
        case OPT_JSON:
            if (!cli_output_path("--json", optarg)) return EXIT_USAGE;
            a.json_path = optarg;
            break;
        case OPT_DATA: a.data_dir = optarg; break;
        case 'h': usage(); return 0;
        default: return EXIT_USAGE;
        }
    }
    if (optind < argc) return cli_usage_error("bench: unexpected argument '%s'", argv[optind]);
    if (!a.n_models && !a.n_shapes) return cli_usage_error("bench: give a model (-m FILE) or a layer (--shape SPEC)");
    if (!a.backend) a.backend = default_backend();
    if (!cli_is_gpu_backend(a.backend) && !nc_backend_find(a.backend)) /* before the data loads and the header */
        return cli_usage_error("bench: unknown backend '%s' (nanoconv --version lists those built)", a.backend);
    const int gpu = cli_is_gpu_backend(a.backend);
    const char *other = misplaced_option(&a, gpu);
    if (other)
        return cli_usage_error("bench: %s is for the %s bench, not --backend %s", other, gpu ? "cpu" : "GPU",
                               a.backend);
    if (gpu) {
        if (!n_text) a.n_ns = 3, a.ns[0] = 100, a.ns[1] = 1000, a.ns[2] = 10000;
        if (a.check_only) a.n_ns = 0; /* no layer or network timings */
        if (!a.reps) a.reps = 20;
        if (a.reps < 3 || a.reps > 50)
            return cli_usage_error("bench: --reps takes 3 to 50 on the GPU, not %ld", a.reps);
        if (a.check && !a.n_models)
            return cli_usage_error("bench: --check compares a model's predictions: give -m FILE");
#ifndef NC_HAVE_CUDA
        return cli_usage_error("bench --backend %s: nanoconv was built without CUDA (nanoconv --version lists the "
                               "backends)",
                               a.backend);
#endif
    } else {
        if (a.n_models + a.n_shapes > 1)
            return cli_usage_error("bench --backend %s: one model or one --shape (several: --backend cuda)", a.backend);
        if (a.n_ns > 1)
            return cli_usage_error("bench --backend %s: -n takes one N (a list: --backend cuda)", a.backend);
        if (!n_text) a.n_ns = 1, a.ns[0] = 10000;
        if (!a.reps) a.reps = 5;
        if (a.n_shapes && strcmp(a.backend, "cpu"))
            return cli_usage_error("bench: --shape is for the cpu and GPU benches, not --backend %s", a.backend);
    }
    /* A shape's buffers at the largest N, before anything is allocated. */
    for (int s = 0; s < a.n_shapes; s++)
        for (int i = 0; i < a.n_ns; i++) {
            const shape_spec *h = &a.shapes[s];
            const double values = (double)h->C * h->H * h->W + (double)h->M * (h->H - h->K + 1) * (h->W - h->K + 1);
            const double gib = 4.0 * values * (double)a.ns[i] / (1024.0 * 1024 * 1024);
            if (gib > SHAPE_MAX_GIB)
                return cli_usage_error("bench: --shape %s at N = %ld needs %.1f GiB of float input and output; at "
                                       "most %.0f GiB (a smaller -n)",
                                       h->text, a.ns[i], gib, SHAPE_MAX_GIB);
        }
    if (a.threads) omp_set_num_threads((int)a.threads);

    nc_error err = {0};
    cJSON *out = cJSON_CreateObject();
    int rc = NC_OK;
#ifdef NC_HAVE_CUDA
    if (gpu) rc = bench_on_gpu(&a, out, &err);
#endif
    if (!gpu) rc = bench_on_cpu(&a, out, &err);
    /* The JSON is written also when a check failed: it holds what differed. Whole or not at all, as --logits. */
    if ((!rc || (gpu && rc == NC_ERR_MISMATCH)) && a.json_path) {
        char *s = cJSON_Print(out);
        nc_error werr = {0};
        const void *part = s;
        const size_t len = s ? strlen(s) : 0;
        const int wrc = s ? nc_write_file_atomic(a.json_path, &part, &len, 1, &werr)
                          : nc_fail(&werr, NC_ERR_NOMEM, "%s: cannot format the JSON: out of memory", a.json_path);
        if (wrc && !rc) {
            rc = wrc;
            err = werr;
        } else if (wrc) { /* the check's failure is the exit status; say this too */
            fprintf(stderr, "nanoconv: error: %s\n", werr.msg);
        }
        cJSON_free(s);
    }
    cJSON_Delete(out);
    if (rc == NC_ERR_MISMATCH && gpu) {
        fprintf(stderr, "nanoconv: error: %s\n", err.msg);
        return 1;
    }
    return rc ? cli_fail(&err) : 0;
}
