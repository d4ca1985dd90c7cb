/* nanoconv eval, predict, info and init. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/error.h"
#include "core/model.h"
#include "io/atomic_file.h"

/* Options shared by the commands that run a model. */
typedef struct {
    const char *model_path;
    const char *backend;
    nc_run_opts opts;
    int json;
} run_args;

enum {
    OPT_BACKEND = 1000,
    OPT_CONV_KERNEL,
    OPT_THREADS,
    OPT_JSON,
    OPT_DATA,
    OPT_SPLIT,
    OPT_IMAGES,
    OPT_LABELS,
    OPT_LOGITS,
    OPT_CHUNK,
    OPT_DEVICE,
    OPT_DEVICES,
    OPT_NAME,
    OPT_INPUT,
    OPT_LAYERS,
    OPT_SEED,
    OPT_PRECISION,
    OPT_DENSE_SUMS
};

#define RUN_LONG_OPTIONS                                                                                               \
    {"model", required_argument, 0, 'm'}, {"backend", required_argument, 0, OPT_BACKEND},                              \
        {"conv-kernel", required_argument, 0, OPT_CONV_KERNEL}, {"threads", required_argument, 0, OPT_THREADS},        \
        {"chunk", required_argument, 0, OPT_CHUNK}, {"device", required_argument, 0, OPT_DEVICE},                      \
        {"devices", required_argument, 0, OPT_DEVICES}, {"json", no_argument, 0, OPT_JSON},                            \
        {"precision", required_argument, 0, OPT_PRECISION}, {"dense-sums", required_argument, 0, OPT_DENSE_SUMS}, {    \
        "help", no_argument, 0, 'h'                                                                                    \
    }

/* The backend a plain run uses: the fastest one built. */
static const char *default_backend(void) {
    const char *best = "cpu-ref";
    for (const char *const *b = nc_backend_names(); *b; b++)
        if (!strcmp(*b, "cpu")) best = "cpu";
    return best;
}

/* Handles an option shared by the running commands; returns 1 if handled, -1 on a bad value, 0 if not ours. */
static int run_option(run_args *a, int c, const char *arg) {
    long v;
    switch (c) {
    case 'm': a->model_path = arg; return 1;
    case OPT_BACKEND: a->backend = arg; return 1;
    case OPT_JSON: a->json = 1; return 1;
    case OPT_CONV_KERNEL:
        if (!cli_parse_int("--conv-kernel", arg, 0, 1000, &v)) return -1;
        a->opts.conv_kernel = (int)v;
        return 1;
    case OPT_THREADS:
        if (!cli_parse_int("--threads", arg, 1, 1024, &v)) return -1;
        a->opts.threads = (int)v;
        return 1;
    case OPT_CHUNK:
        if (!cli_parse_int("--chunk", arg, 1, 1 << 24, &v)) return -1;
        a->opts.chunk = (size_t)v;
        return 1;
    case OPT_DEVICE:
        if (!cli_parse_int("--device", arg, 0, 1024, &v)) return -1;
        a->opts.device = (int)v;
        return 1;
    case OPT_DEVICES:
        if (!cli_parse_devices(arg, &a->opts.devices)) return -1;
        return 1;
    case OPT_PRECISION: {
        static const char *const names[] = {"fp32", "tf32", "3xtf32", "fp16", "bf16"}; /* NC_PRECISION_* order */
        for (int i = 0; i < 5; i++)
            if (!strcmp(arg, names[i])) {
                a->opts.precision = i;
                return 1;
            }
        cli_usage_error("--precision takes fp32, tf32, 3xtf32, fp16 or bf16, not '%s'", arg);
        return -1;
    }
    case OPT_DENSE_SUMS:
        if (!strcmp(arg, "slices") || !strcmp(arg, "fp32")) {
            a->opts.dense_sums = !strcmp(arg, "fp32") ? NC_DENSE_SUMS_FP32 : NC_DENSE_SUMS_SLICES;
            return 1;
        }
        cli_usage_error("--dense-sums takes slices or fp32, not '%s'", arg);
        return -1;
    }
    return 0;
}

static const char run_options_help[] =
    "  -m, --model FILE      model file (.safetensors; docs/MODEL_FORMAT.md)\n"
    "      --backend NAME    cpu-ref, cpu, cuda or cudnn, as built (nanoconv --version); default: %s\n"
    "      --conv-kernel V   convolution kernel version (cuda: 1..15, cpu: 1 direct, 2 implicit GEMM); 0, the\n"
    "                        default: cuda the fastest fp32 version for each layer shape (measured once on this\n"
    "                        GPU and cached in $NANOCONV_CACHE_DIR, else $XDG_CACHE_HOME/nanoconv or\n"
    "                        ~/.cache/nanoconv), cpu by a cost model\n"
    "      --threads T       CPU threads (default: OpenMP's, i.e. OMP_NUM_THREADS or all cores)\n"
    "      --chunk B         images per chunk (default: the backend's choice)\n"
    "      --device D        GPU index\n"
    "      --devices N       GPU backends: spread the images over N GPUs from --device on (all: every one),\n"
    "                        a contiguous share each, run at once; Op Time is the slowest GPU's\n"
    "      --precision P     cuda backend: fp32 (default; dense layers of more than 32 outputs on int8 slices\n"
    "                        summed exactly, errors below fp32's sums); on the tensor cores, opt-in: tf32,\n"
    "                        fp16 or bf16 (reduced precision) or 3xtf32 (near-exact)\n"
    "      --dense-sums S    cuda backend at fp32: slices (default; as above) or fp32: every dense layer on fp32\n"
    "                        fma sums in k's order, the SIMT kernels (slower on the wide layers)\n"
    "      --json            print the results as one JSON object\n";

/* Loads the model, checks the labels of ds's first n images against its classes where labels names them (before a
 * GPU session's first timing of kernels), and opens a session on it for those n images; prints the course's "Loading
 * model... done" unless quiet. The cpu backends size their buffers for the chunk when the session opens, so a --chunk
 * past the images is cut to them there (one chunk of them all either way); the GPU backends size theirs for what a
 * run needs, and time kernels on min(chunk, 2048) images, which is left as asked. */
static int open_session(const run_args *a, const nc_dataset *ds, long n, const char *labels, nc_model **m,
                        nc_session **s, int quiet, nc_error *err) {
    if (!quiet) {
        printf("Loading model... ");
        fflush(stdout);
    }
    nc_run_opts opts = a->opts;
    if ((!strcmp(a->backend, "cpu") || !strcmp(a->backend, "cpu-ref")) && opts.chunk > (size_t)n)
        opts.chunk = (size_t)n;
    int rc = nc_model_load(m, a->model_path, err);
    if (!rc && labels) rc = nc_dataset_check_labels(ds, (int)n, nc_model_num_classes(*m), labels, err);
    const int bad_labels = rc && *m; /* the model loaded; the data's labels are wrong */
    if (!rc) rc = nc_session_create(s, *m, a->backend, &opts, err);
    if (rc) {
        if (!quiet) printf(bad_labels ? "done\n" : "failed\n");
        nc_model_free(*m);
        *m = NULL;
        return rc;
    }
    if (!quiet) printf("done\n");
    return NC_OK;
}

static void print_op_times(const nc_timing *t) {
    for (int i = 0; i < t->n_conv; i++) {
        if (t->conv_note[i][0])
            printf("Op Time: %.6f (%s)\n", t->conv_s[i], t->conv_note[i]);
        else
            printf("Op Time: %.6f\n", t->conv_s[i]);
    }
}

static cJSON *timing_json(const nc_timing *t) {
    cJSON *o = cJSON_CreateObject();
    cJSON *ops = cJSON_AddArrayToObject(o, "op_times");
    cJSON *notes = cJSON_AddArrayToObject(o, "op_notes");
    for (int i = 0; i < t->n_conv; i++) {
        cJSON_AddItemToArray(ops, cJSON_CreateNumber(t->conv_s[i]));
        cJSON_AddItemToArray(notes, cJSON_CreateString(t->conv_note[i]));
    }
    int any = 0;
    for (int i = 0; i < t->n_conv; i++) any = any || t->conv_version[i] != 0;
    if (any) { /* the cuda backend's: the kernel version each convolution ran on */
        cJSON *v = cJSON_AddArrayToObject(o, "op_versions");
        for (int i = 0; i < t->n_conv; i++) cJSON_AddItemToArray(v, cJSON_CreateNumber(t->conv_version[i]));
    }
    cJSON_AddNumberToObject(o, "total_time", t->total_s);
    return o;
}

static void print_json(cJSON *o) {
    char *s = cJSON_Print(o);
    if (s) puts(s);
    cJSON_free(s);
    cJSON_Delete(o);
}

int cmd_eval(int argc, char **argv) {
    return eval_main(argc, argv, NULL);
}

int eval_main(int argc, char **argv, const eval_hook *hook) {
    static const struct option longopts[] = {RUN_LONG_OPTIONS,
                                             {"data", required_argument, 0, OPT_DATA},
                                             {"split", required_argument, 0, OPT_SPLIT},
                                             {0, 0, 0, 0}};
    run_args a = {.backend = default_backend()};
    const char *data_dir = NULL, *split = "t10k";
    long n = -1;
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "m:n:h", longopts)) != -1) {
        int r = run_option(&a, c, optarg);
        if (r < 0) return EXIT_USAGE;
        if (r) continue;
        switch (c) {
        case 'n':
            if (!cli_parse_int("-n", optarg, 1, 1L << 30, &n)) return EXIT_USAGE;
            break;
        case OPT_DATA: data_dir = optarg; break;
        case OPT_SPLIT: split = optarg; break;
        case 'h':
            printf("usage: nanoconv eval --model FILE [-n N] [--data DIR] [--split t10k|train] [options]\n\n"
                   "  -n N                  evaluate the first N images (default: all)\n"
                   "      --data DIR        folder with the Fashion-MNIST IDX files, raw or .gz (default: "
                   "$NANOCONV_DATA or %s)\n"
                   "      --split S         t10k (default) or train\n",
                   nc_default_data_dir());
            printf(run_options_help, default_backend());
            return 0;
        default: return EXIT_USAGE;
        }
    }
    if (optind < argc) return cli_usage_error("eval: unexpected argument '%s'", argv[optind]);
    if (!a.model_path) return cli_usage_error("eval: --model FILE is required");
    if (hook && a.opts.devices != 0 && a.opts.devices != 1)
        return cli_usage_error("profile: --devices: a profile follows one GPU (--device)");
    if (a.opts.threads) omp_set_num_threads(a.opts.threads);

    nc_error err = {0};
    nc_dataset ds = {0};
    nc_model *m = NULL;
    nc_session *s = NULL;
    int *pred = NULL;
    int status = 0;
    if (!a.json) {
        printf("Loading fashion-mnist data... ");
        fflush(stdout);
    }
    int rc = nc_dataset_load_split(&ds, data_dir, split, &err);
    if (!a.json) printf(rc ? "failed\n" : "done\n");
    if (rc) return cli_fail(&err);
    if (n < 0) n = ds.n;
    if (n > ds.n) {
        const int have = ds.n;
        nc_dataset_free(&ds);
        return cli_usage_error("-n %ld is more than the %d images of the %s split in %s", n, have, split,
                               data_dir ? data_dir : nc_default_data_dir());
    }
    char what[4200]; /* the labels' split, and a folder name of up to 4096 bytes */
    snprintf(what, sizeof what, "the %s labels in %s", split, data_dir ? data_dir : nc_default_data_dir());
    if (hook && hook->start) {
        /* The default's choice of kernels made (and cached) by a session of its own, before start(): a profile
         * then records the evaluation, not the tuner's timing runs of every version. */
        if (!strcmp(a.backend, "cuda") && !a.opts.conv_kernel && a.opts.precision == 0) { /* fp32 */
            rc = open_session(&a, &ds, n, what, &m, &s, 1, &err);
            nc_session_free(s);
            nc_model_free(m);
            s = NULL;
            m = NULL;
        }
        if (!rc) rc = hook->start(hook->ctx, &err);
        if (rc) {
            nc_dataset_free(&ds);
            return cli_fail(&err);
        }
    }
    rc = open_session(&a, &ds, n, what, &m, &s, a.json, &err);
    if (!rc) cli_pin_images(a.backend, &ds);
    if (!rc && !(pred = malloc((size_t)n * sizeof *pred))) rc = nc_fail(&err, NC_ERR_NOMEM, "out of memory");
    nc_timing t;
    if (!rc) rc = nc_session_run(s, ds.images, (int)n, ds.h, ds.w, pred, NULL, &t, &err);
    /* Freed before the hook, so that a profile also sees the session's teardown. */
    nc_session_free(s);
    cJSON *o = NULL;
    if (rc) {
        status = cli_fail(&err);
    } else {
        long correct = 0;
        for (long i = 0; i < n; i++) correct += pred[i] == ds.labels[i];
        const double acc = (double)correct / (double)n;
        if (a.json) {
            o = timing_json(&t);
            cJSON_AddStringToObject(o, "model", nc_model_name(m));
            cJSON_AddStringToObject(o, "backend", a.backend);
            cJSON_AddStringToObject(o, "split", split);
            cJSON_AddNumberToObject(o, "n", (double)n);
            cJSON_AddNumberToObject(o, "correct", (double)correct);
            cJSON_AddNumberToObject(o, "correctness", acc);
        } else {
            print_op_times(&t);
            printf("Total Time: %.6f\n", t.total_s);
            printf("Correctness: %.4f Model: %s\n", acc, nc_model_name(m));
        }
        if (hook) status = hook->done(hook->ctx, &t, o);
        if (o) print_json(o);
    }
    free(pred);
    nc_model_free(m);
    nc_dataset_free(&ds);
    return status;
}

int cmd_predict(int argc, char **argv) {
    static const struct option longopts[] = {RUN_LONG_OPTIONS,
                                             {"images", required_argument, 0, OPT_IMAGES},
                                             {"labels", required_argument, 0, OPT_LABELS},
                                             {"logits", required_argument, 0, OPT_LOGITS},
                                             {0, 0, 0, 0}};
    run_args a = {.backend = default_backend()};
    const char *images = NULL, *labels = NULL, *logits_path = NULL;
    long n = -1;
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "m:n:h", longopts)) != -1) {
        int r = run_option(&a, c, optarg);
        if (r < 0) return EXIT_USAGE;
        if (r) continue;
        switch (c) {
        case 'n':
            if (!cli_parse_int("-n", optarg, 1, 1L << 30, &n)) return EXIT_USAGE;
            break;
        case OPT_IMAGES: images = optarg; break;
        case OPT_LABELS: labels = optarg; break;
        case OPT_LOGITS:
            if (!cli_output_path("--logits", optarg)) return EXIT_USAGE;
            logits_path = optarg;
            break;
        case 'h':
            printf(
                "usage: nanoconv predict --model FILE --images IDX [--labels IDX] [-n N] [--logits OUT] [options]\n\n"
                "Prints the predicted class of each image, one a line (or one JSON object with --json).\n"
                "      --images FILE     IDX image file, raw or gzip\n"
                "      --labels FILE     its IDX label file, each label one of the model's classes: --json then\n"
                "                        counts the predictions that match them\n"
                "      --logits OUT      also write the final layer's outputs, float32 (N, classes)\n"
                "  -n N                  the first N images (default: all)\n");
            printf(run_options_help, default_backend());
            return 0;
        default: return EXIT_USAGE;
        }
    }
    if (optind < argc) return cli_usage_error("predict: unexpected argument '%s'", argv[optind]);
    if (!a.model_path || !images) return cli_usage_error("predict: --model and --images are required");
    if (a.opts.threads) omp_set_num_threads(a.opts.threads);

    nc_error err = {0};
    nc_dataset ds = {0};
    nc_model *m = NULL;
    nc_session *s = NULL;
    int *pred = NULL;
    float *logits = NULL;
    int rc = nc_dataset_load(&ds, images, labels, &err);
    if (rc) return cli_fail(&err);
    if (n < 0) n = ds.n;
    if (n > ds.n) {
        const int have = ds.n;
        nc_dataset_free(&ds);
        return cli_usage_error("-n %ld is more than the %d images in %s", n, have, images);
    }
    rc = open_session(&a, &ds, n, labels, &m, &s, 1, &err);
    if (!rc) cli_pin_images(a.backend, &ds);
    const int classes = rc ? 0 : nc_model_num_classes(m);
    if (!rc && (!(pred = malloc((size_t)n * sizeof *pred)) ||
                !(logits = malloc((size_t)n * (size_t)classes * sizeof *logits))))
        rc = nc_fail(&err, NC_ERR_NOMEM, "out of memory for %ld predictions", n);
    nc_timing t;
    if (!rc) rc = nc_session_run(s, ds.images, (int)n, ds.h, ds.w, pred, logits, &t, &err);
    if (!rc && logits_path) {
        const void *data[1] = {logits};
        const size_t size[1] = {(size_t)n * classes * sizeof(float)};
        rc = nc_write_file_atomic(logits_path, data, size, 1, &err);
    }
    int status = 0;
    if (rc) {
        status = cli_fail(&err);
    } else if (a.json) {
        cJSON *o = timing_json(&t);
        cJSON_AddStringToObject(o, "model", nc_model_name(m));
        cJSON_AddStringToObject(o, "backend", a.backend);
        cJSON *arr = cJSON_AddArrayToObject(o, "predictions");
        long correct = 0;
        for (long i = 0; i < n; i++) {
            cJSON_AddItemToArray(arr, cJSON_CreateNumber(pred[i]));
            if (ds.labels) correct += pred[i] == ds.labels[i];
        }
        if (ds.labels) { /* what the predictions are judged against; without --labels, nothing */
            cJSON_AddNumberToObject(o, "correct", (double)correct);
            cJSON_AddNumberToObject(o, "correctness", (double)correct / (double)n);
        }
        print_json(o);
    } else {
        for (long i = 0; i < n; i++) printf("%d\n", pred[i]);
    }
    free(pred);
    free(logits);
    nc_session_free(s);
    nc_model_free(m);
    nc_dataset_free(&ds);
    return status;
}

int cmd_info(int argc, char **argv) {
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: nanoconv info MODEL\n\nPrints the model's layers: shape in, shape out, parameters, FLOPs.\n");
        return 0;
    }
    if (argc != 2) return cli_usage_error("info takes one model file (usage: nanoconv info MODEL)");
    nc_error err = {0};
    nc_model *m = NULL;
    if (nc_model_load(&m, argv[1], &err)) return cli_fail(&err);
    nc_model_print_summary(m, stdout);
    nc_model_free(m);
    return 0;
}

int cmd_init(int argc, char **argv) {
    static const struct option longopts[] = {{"name", required_argument, 0, OPT_NAME},
                                             {"input", required_argument, 0, OPT_INPUT},
                                             {"layers", required_argument, 0, OPT_LAYERS},
                                             {"seed", required_argument, 0, OPT_SEED},
                                             {"output", required_argument, 0, 'o'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    const char *name = NULL, *input = NULL, *layers = NULL, *out = NULL;
    long seed = 1;
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "o:h", longopts)) != -1) {
        switch (c) {
        case OPT_NAME: name = optarg; break;
        case OPT_INPUT: input = optarg; break;
        case OPT_LAYERS: layers = optarg; break;
        case OPT_SEED:
            if (!cli_parse_int("--seed", optarg, 0, 1L << 62, &seed)) return EXIT_USAGE;
            break;
        case 'o':
            if (!cli_output_path("-o", optarg)) return EXIT_USAGE;
            out = optarg;
            break;
        case 'h':
            printf("usage: nanoconv init --name NAME --input '1x28x28 raw' --layers 'conv 50 5; tanh; ...' "
                   "[--seed S] -o FILE\n\nWrites an untrained model with seeded random weights "
                   "(docs/MODEL_FORMAT.md gives the grammar).\n");
            return 0;
        default: return EXIT_USAGE;
        }
    }
    if (optind < argc) return cli_usage_error("init: unexpected argument '%s'", argv[optind]);
    if (!name || !input || !layers || !out)
        return cli_usage_error("init: --name, --input, --layers and -o are required");
    nc_error err = {0};
    nc_model *m = NULL;
    if (nc_model_build(&m, name, input, layers, &err)) return cli_fail(&err);
    nc_model_init_seeded(m, (uint64_t)seed);
    int rc = nc_model_save(m, out, &err);
    nc_model_free(m);
    return rc ? cli_fail(&err) : 0;
}
