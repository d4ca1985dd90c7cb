/*
 * nanoconv bench-gpu: the GPU ladder benchmark (src/cuda/bench_gpu.h) over several models, single layer shapes
 * and batch sizes in one run: every convolution kernel version and cuDNN's best fp32 and fp16 algorithms against
 * the floors measured in the same run, the whole network from host uint8 images to predictions, and each
 * version's predictions against cpu-ref. `nanoconv bench --backend cuda` runs the same for one model and one N.
 *
 *   nanoconv bench-gpu -m models/a.safetensors -m models/b.safetensors -n 100,1000,10000 --check 10000 \
 *       --json bench/results/gpu.json
 *   nanoconv bench-gpu --layer 1x28x28:50:5:tanh:maxpool2 -n 10000
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/error.h"
#include "core/model.h"
#ifdef NC_HAVE_CUDA
#include "cuda/bench_gpu.h"
#endif

#define MAX_MODELS 16
#define MAX_SHAPES 16
#define MAX_NS 8

#ifdef NC_HAVE_CUDA
/* "CxHxW:M:K[:tanh|relu|sigmoid][:maxpoolP|avgpoolP]" into s; 0 if it is not one. */
static int parse_layer(const char *spec, nc_bench_shape *s) {
    memset(s, 0, sizeof *s);
    s->act = s->pool = -1;
    int used = 0;
    if (sscanf(spec, "%dx%dx%d:%d:%d%n", &s->C, &s->H, &s->W, &s->M, &s->K, &used) != 5) return 0;
    if (s->C < 1 || s->M < 1 || s->K < 1 || s->H < s->K || s->W < s->K) return 0;
    const char *p = spec + used;
    while (*p == ':') {
        p++;
        const size_t len = strcspn(p, ":");
        int P = 0;
        if (len == 4 && !strncmp(p, "tanh", 4))
            s->act = NC_TANH;
        else if (len == 4 && !strncmp(p, "relu", 4))
            s->act = NC_RELU;
        else if (len == 7 && !strncmp(p, "sigmoid", 7))
            s->act = NC_SIGMOID;
        else if (sscanf(p, "maxpool%d", &P) == 1 && P > 0)
            s->pool = NC_MAXPOOL, s->P = s->S = P;
        else if (sscanf(p, "avgpool%d", &P) == 1 && P > 0)
            s->pool = NC_AVGPOOL, s->P = s->S = P;
        else
            return 0;
        p += len;
    }
    if (*p) return 0;
    snprintf(s->name, sizeof s->name, "layer %dx%dx%d m%d k%d", s->C, s->H, s->W, s->M, s->K);
    /* A one-channel layer is taken as a first layer on raw pixels: its fused row reads uint8. */
    s->input_u8 = s->C == 1;
    for (int i = 0; i < 256; i++) s->lut[i] = (float)i;
    return 1;
}

/* "100,1000,10000" into ns; the count, or 0 if it is not such a list. */
static int parse_ns(const char *list, int *ns) {
    int n = 0;
    const char *p = list;
    while (*p && n < MAX_NS) {
        char *end;
        const long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > (1L << 24)) return 0;
        ns[n++] = (int)v;
        if (*end == ',')
            end++;
        else if (*end)
            return 0;
        p = end;
    }
    return *p ? 0 : n;
}
#endif

int cmd_bench_gpu(int argc, char **argv) {
#ifndef NC_HAVE_CUDA
    (void)argc;
    (void)argv;
    return cli_usage_error("bench-gpu: nanoconv was built without CUDA");
#else
    enum { OPT_LAYER = 1000, OPT_REPS, OPT_CHECK, OPT_CHECK_ONLY, OPT_JSON, OPT_DATA, OPT_DEVICE };
    static const struct option longopts[] = {{"model", required_argument, 0, 'm'},
                                             {"layer", required_argument, 0, OPT_LAYER},
                                             {"reps", required_argument, 0, OPT_REPS},
                                             {"check", required_argument, 0, OPT_CHECK},
                                             {"check-only", required_argument, 0, OPT_CHECK_ONLY},
                                             {"json", required_argument, 0, OPT_JSON},
                                             {"data", required_argument, 0, OPT_DATA},
                                             {"device", required_argument, 0, OPT_DEVICE},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    const char *paths[MAX_MODELS], *json_path = NULL, *data_dir = NULL;
    static nc_bench_shape shapes[MAX_SHAPES];
    int n_paths = 0, n_shapes = 0, ns[MAX_NS] = {100, 1000, 10000}, n_ns = 3;
    long reps = 20, check = 0, device = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:n:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (n_paths == MAX_MODELS) return cli_usage_error("bench-gpu: at most %d models", MAX_MODELS);
            paths[n_paths++] = optarg;
            break;
        case OPT_LAYER:
            if (n_shapes == MAX_SHAPES) return cli_usage_error("bench-gpu: at most %d layers", MAX_SHAPES);
            if (!parse_layer(optarg, &shapes[n_shapes++]))
                return cli_usage_error(
                    "bench-gpu: --layer '%s' is not CxHxW:M:K[:tanh|relu|sigmoid][:maxpoolP|avgpoolP]", optarg);
            break;
        case 'n':
            if (!(n_ns = parse_ns(optarg, ns)))
                return cli_usage_error("bench-gpu: -n takes a list of up to %d batch sizes, as 100,1000,10000", MAX_NS);
            break;
        case OPT_REPS:
            if (!cli_parse_int("--reps", optarg, 3, 50, &reps)) return EXIT_USAGE;
            break;
        case OPT_CHECK:
        case OPT_CHECK_ONLY:
            if (!cli_parse_int(c == OPT_CHECK ? "--check" : "--check-only", optarg, 0, 1L << 24, &check))
                return EXIT_USAGE;
            if (c == OPT_CHECK_ONLY) n_ns = 0; /* no layer or network timings */
            break;
        case OPT_DEVICE:
            if (!cli_parse_int("--device", optarg, 0, 1024, &device)) return EXIT_USAGE;
            break;
        case OPT_JSON: json_path = optarg; break;
        case OPT_DATA: data_dir = optarg; break;
        case 'h':
            printf("usage: nanoconv bench-gpu [-m MODEL]... [--layer SPEC]... [-n 100,1000,10000] [--reps R]\n"
                   "                          [--check N | --check-only N] [--json FILE] [--data DIR] [--device D]\n\n"
                   "Every convolution kernel version and cuDNN's best fp32 and fp16 algorithms on each convolution\n"
                   "layer of each model (and each --layer CxHxW:M:K[:tanh|relu|sigmoid][:maxpoolP|avgpoolP]), for\n"
                   "each N: medians of up to R runs (default 20) after a warm-up, as ms, GFLOP/s, GB/s, the share\n"
                   "of the floor measured in the same run and the ratio to cuDNN fp32; then the whole network, host\n"
                   "uint8 images to predictions, on the cuda and cudnn backends; with --check N, every version's\n"
                   "predictions on the first N test images against cpu-ref (exit status 1 if any differs); "
                   "--check-only N\n"
                   "does that alone.\n");
            return 0;
        default: return EXIT_USAGE;
        }
    }
    if (optind < argc) return cli_usage_error("bench-gpu: unexpected argument '%s'", argv[optind]);
    if (!n_paths && !n_shapes) return cli_usage_error("bench-gpu: give at least one -m MODEL or --layer SPEC");

    nc_error err = {0};
    nc_dataset ds = {0};
    nc_model *models[MAX_MODELS] = {0};
    int rc = NC_OK, have_data = 0;
    for (int i = 0; i < n_paths && !rc; i++) rc = nc_model_load(&models[i], paths[i], &err);
    if (!rc && n_paths) {
        rc = nc_dataset_load_split(&ds, data_dir, "t10k", &err);
        have_data = !rc;
    }
    cJSON *out = cJSON_CreateObject();
    if (!rc) {
        nc_cuda_bench_opts o = {0};
        o.models = (const nc_model *const *)models;
        o.n_models = n_paths;
        o.shapes = shapes;
        o.n_shapes = n_shapes;
        o.ns = ns;
        o.n_ns = n_ns;
        o.reps = (int)reps;
        o.device = (int)device;
        o.data = have_data ? &ds : NULL;
        o.check_n = (int)check;
        rc = nc_cuda_bench(&o, stdout, out, &err);
    }
    /* The JSON is written also when a check failed: it holds what differed. */
    if ((!rc || err.code == NC_ERR_MISMATCH) && json_path) {
        char *s = cJSON_Print(out);
        FILE *f = s ? fopen(json_path, "w") : NULL;
        int ok = f && fputs(s, f) >= 0;
        if (f && fclose(f) != 0) ok = 0;
        if (!ok && !rc) rc = nc_fail(&err, NC_ERR_IO, "%s: could not be written", json_path);
        cJSON_free(s);
    }
    cJSON_Delete(out);
    for (int i = 0; i < n_paths; i++) nc_model_free(models[i]);
    nc_dataset_free(&ds);
    if (rc == NC_ERR_MISMATCH) {
        fprintf(stderr, "nanoconv: error: %s\n", err.msg);
        return 1;
    }
    return rc ? cli_fail(&err) : 0;
#endif
}
