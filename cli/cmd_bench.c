/*
 * nanoconv bench: times a model's layers and the whole network on the test set, repeated, and reports medians with
 * GFLOP/s and the share of the machine's peak measured in the same run.
 *
 * One section per backend (the `sections` table): a backend's section may look inside its own plan to time each of
 * its ops (cpu does); a backend without one gets the generic section, which times the whole network and the
 * convolution layers' Op Times through the public session API. `--json FILE` writes everything measured.
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
#ifdef NC_HAVE_CUDA
#include "cuda/bench_gpu.h"
#endif

typedef struct {
    const char *model_path, *backend, *json_path, *data_dir;
    long n, reps, threads, chunk, conv_kernel;
    double peak_seconds;
} bench_args;

/* What every section fills: the images' data set and model are loaded; out is the JSON report. */
typedef int (*bench_section)(const bench_args *a, const nc_model *m, const nc_dataset *ds, cJSON *out, nc_error *err);

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
    int rc = nc_session_create(&s, m, a->backend, &opts, err);
    if (rc) return rc;
    int *pred = malloc((size_t)a->n * sizeof *pred);
    double total[256], conv[NC_MAX_LAYERS][256];
    nc_timing t = {0};
    const int reps = (int)a->reps;
    for (int r = -1; !rc && r < reps && pred; r++) { /* r = -1: a warm-up run, not counted */
        rc = nc_session_run(s, ds->images, (int)a->n, ds->h, ds->w, pred, NULL, &t, err);
        if (r < 0) continue;
        total[r] = t.total_s;
        for (int i = 0; i < t.n_conv; i++) conv[i][r] = t.conv_s[i];
    }
    if (!pred) rc = nc_fail(err, NC_ERR_NOMEM, "out of memory for %ld predictions", a->n);
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
                ops, row(label, name, t.conv_note[ci], nc_layer_flops(&m->layers[i]), conv[ci], reps, a->n, 0.0));
            ci++;
        }
        cJSON_AddItemToObject(
            out, "network", row("all", "network", "images in, predictions out", model_flops(m), total, reps, a->n, 0));
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

    int *pred = malloc((size_t)a->n * sizeof *pred);
    static double op_s[NC_CPU_MAX_OPS][256];
    double total[256];
    nc_cpu_op_info ops[NC_CPU_MAX_OPS];
    int n_ops = 0;
    const int reps = (int)a->reps;
    if (!pred) rc = nc_fail(err, NC_ERR_NOMEM, "out of memory for %ld predictions", a->n);
    for (int r = -1; !rc && r < reps; r++) { /* r = -1: a warm-up run, not counted */
        nc_timing t = {0};
        const double t0 = nc_now();
        rc = b->run(plan, ds->images, (int)a->n, ds->h, ds->w, pred, NULL, &t, err);
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
            cJSON *j = row(label, ops[o].name, ops[o].note, ops[o].flops, op_s[o], reps, a->n, peak);
            cJSON_AddNumberToObject(j, "first_layer", ops[o].first_layer);
            cJSON_AddNumberToObject(j, "n_layers", ops[o].n_layers);
            cJSON_AddNumberToObject(j, "conv_index", ops[o].conv_index);
            cJSON_AddItemToArray(arr, j);
        }
        cJSON_AddItemToObject(
            out, "network",
            row("all", "network", "images in, predictions out", model_flops(m), total, reps, a->n, peak));
    }
    free(pred);
    b->destroy(plan);
    return rc;
}

#ifdef NC_HAVE_CUDA
/* The cuda backend's section: the GPU ladder (src/cuda/bench_gpu.h) for this model at this N: every convolution
 * kernel version and cuDNN against the floors, and the whole network on cuda and cudnn. `nanoconv bench-gpu`
 * takes several models, layer shapes and N at once. */
static int bench_cuda(const bench_args *a, const nc_model *m, const nc_dataset *ds, cJSON *out, nc_error *err) {
    const int ns[1] = {(int)a->n};
    const nc_model *models[1] = {m};
    nc_cuda_bench_opts o = {0};
    o.models = models;
    o.n_models = 1;
    o.ns = ns;
    o.n_ns = 1;
    o.reps = (int)a->reps;
    o.data = ds;
    return nc_cuda_bench(&o, stdout, out, err);
}
#endif

static const struct {
    const char *backend;
    bench_section fn;
} sections[] = {
    {"cpu", bench_cpu},
#ifdef NC_HAVE_CUDA
    {"cuda", bench_cuda},
#endif
};

int cmd_bench(int argc, char **argv) {
    enum { OPT_BACKEND = 1000, OPT_THREADS, OPT_JSON, OPT_DATA, OPT_REPS, OPT_CHUNK, OPT_KERNEL, OPT_PEAK };
    static const struct option longopts[] = {{"model", required_argument, 0, 'm'},
                                             {"backend", required_argument, 0, OPT_BACKEND},
                                             {"threads", required_argument, 0, OPT_THREADS},
                                             {"chunk", required_argument, 0, OPT_CHUNK},
                                             {"conv-kernel", required_argument, 0, OPT_KERNEL},
                                             {"reps", required_argument, 0, OPT_REPS},
                                             {"peak-seconds", required_argument, 0, OPT_PEAK},
                                             {"json", required_argument, 0, OPT_JSON},
                                             {"data", required_argument, 0, OPT_DATA},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    bench_args a = {.backend = "cpu", .n = 10000, .reps = 5, .peak_seconds = 0.6};
    long v;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:n:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': a.model_path = optarg; break;
        case 'n':
            if (!cli_parse_int("-n", optarg, 1, 1L << 30, &a.n)) return EXIT_USAGE;
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
            if (!cli_parse_int("--peak-seconds", optarg, 0, 60, &v)) return EXIT_USAGE;
            a.peak_seconds = v > 0 ? (double)v : 0.6;
            break;
        case OPT_JSON: a.json_path = optarg; break;
        case OPT_DATA: a.data_dir = optarg; break;
        case 'h':
            printf(
                "usage: nanoconv bench --model FILE [--backend NAME] [-n N] [--reps R] [--json FILE] [options]\n\n"
                "Times each layer (each fused op) and the whole network on the first N test images, R times after\n"
                "a warm-up, and prints medians: ms, GFLOP/s and the share of the FMA peak measured in the same run.\n"
                "  -n N                  images (default 10000)\n"
                "      --reps R          timed repetitions (default 5)\n"
                "      --backend NAME    default cpu; backends without a bench section of their own get the\n"
                "                        whole network and Op Times only\n"
                "      --threads T       CPU threads (default: OpenMP's)\n"
                "      --chunk B         images per thread chunk (default: the backend's choice)\n"
                "      --conv-kernel V   convolution kernel (cpu: 1 direct, 2 implicit GEMM; 0 = per layer)\n"
                "      --peak-seconds S  time for the FMA peak measurement (default 0.6)\n"
                "      --data DIR        folder with the Fashion-MNIST files\n"
                "      --json FILE       also write the results as JSON\n"
                "The environment variable NANOCONV_CPU_ISA=scalar|avx2|avx512 forces the cpu backend's code path.\n");
            return 0;
        default: return EXIT_USAGE;
        }
    }
    if (optind < argc) return cli_usage_error("bench: unexpected argument '%s'", argv[optind]);
    if (!a.model_path) return cli_usage_error("bench: --model FILE is required");
    if (a.threads) omp_set_num_threads((int)a.threads);

    nc_error err = {0};
    nc_dataset ds = {0};
    nc_model *m = NULL;
    int rc = nc_dataset_load_split(&ds, a.data_dir, "t10k", &err);
    if (!rc && a.n > ds.n) rc = nc_fail(&err, NC_ERR_ARG, "-n %ld is more than the %d test images", a.n, ds.n);
    if (!rc) rc = nc_model_load(&m, a.model_path, &err);
    cJSON *out = cJSON_CreateObject();
    if (!rc) {
        printf("nanoconv bench: model %s, backend %s, N = %ld, %ld timed runs (medians)\n", nc_model_name(m), a.backend,
               a.n, a.reps);
        cJSON_AddStringToObject(out, "model", nc_model_name(m));
        cJSON_AddStringToObject(out, "model_path", a.model_path);
        cJSON_AddStringToObject(out, "backend", a.backend);
        cJSON_AddNumberToObject(out, "n", (double)a.n);
        cJSON_AddNumberToObject(out, "reps", (double)a.reps);
        machine_json(out);
        bench_section fn = bench_generic;
        for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
            if (!strcmp(sections[i].backend, a.backend)) fn = sections[i].fn;
        rc = fn(&a, m, &ds, out, &err);
    }
    if (!rc && a.json_path) {
        char *s = cJSON_Print(out);
        FILE *f = s ? fopen(a.json_path, "w") : NULL;
        if (!f || fputs(s, f) < 0 || fclose(f) != 0)
            rc = nc_fail(&err, NC_ERR_IO, "%s: could not be written", a.json_path);
        cJSON_free(s);
    }
    cJSON_Delete(out);
    nc_model_free(m);
    nc_dataset_free(&ds);
    return rc ? cli_fail(&err) : 0;
}
