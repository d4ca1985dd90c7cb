/* nanoconv: the command-line entry point and the subcommand table. */
#include <errno.h>
#include <getopt.h>
#include <math.h> /* isfinite */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/error.h"
#include "io/atomic_file.h"
#ifdef NC_HAVE_CUDA
#include "cuda/cuda_layers.h"
#endif

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"eval", cmd_eval, "run a model on the first N test images; print Op Time and Correctness"},
    {"profile", cmd_profile, "eval under CUPTI: nvprof's tables of GPU activities and CUDA API calls"},
    {"predict", cmd_predict, "predict the class of each image of an IDX file"},
    {"info", cmd_info, "summarise a model file, one line per layer"},
    {"init", cmd_init, "write a model of a given architecture with seeded random weights"},
    {"bench", cmd_bench, "time a model or a --shape layer: every kernel against cuDNN and the floors measured now"},
    {"bench-gpu", cmd_bench_gpu, "bench with --backend cuda (the older name)"},
    {"train", cmd_train, "train a model on the CPU on the training images; write it atomically"},
    {"import-mxnet", cmd_import_mxnet, "convert an MXNet model (NAME-symbol.json, NAME-EPOCH.params) to a model file"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

int cli_fail(const nc_error *err) {
    fprintf(stderr, "nanoconv: error: %s\n", err->msg);
    return (err->code == NC_ERR_DEVICE || err->code == NC_ERR_NOMEM) ? 1 : EXIT_USAGE;
}

int cli_usage_error(const char *fmt, ...) {
    char raw[NC_ERROR_MSG_LEN], msg[NC_ERROR_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    nc_plain_text(msg, sizeof msg, raw); /* arguments are quoted as given */
    fprintf(stderr, "nanoconv: error: %s\n", msg);
    return EXIT_USAGE;
}

/* Whether s is a whole decimal integer from lo to hi (*out gets it); says nothing. */
static int parse_long_in(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    const long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

int cli_parse_int(const char *opt, const char *s, long lo, long hi, long *out) {
    if (parse_long_in(s, lo, hi, out)) return 1;
    cli_usage_error("%s takes an integer from %ld to %ld, not '%s'", opt, lo, hi, s);
    return 0;
}

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts) {
    char so[32] = ":"; /* a leading ':' tells a missing value from an unknown option */
    strncat(so, shortopts, sizeof so - 2);
    opterr = 0;
    const int before = optind;
    const int c = getopt_long(argc, argv, so, longopts, NULL);
    if (c != ':' && c != '?') return c;
    /* The argument at fault: getopt_long steps past it, but not past a cluster of short options (-zq) it is still in.
     */
    const char *arg = optind > before ? argv[optind - 1] : argv[optind];
    if (strncmp(arg, "--", 2) != 0) { /* a short option: optopt is its letter */
        if (c == ':')
            cli_usage_error("%s: option '-%c' needs a value", argv[0], optopt);
        else
            cli_usage_error("%s: unknown option '-%c' (%s --help lists them)", argv[0], optopt, argv[0]);
        return '?';
    }
    const char *name = arg + 2, *eq = strchr(name, '=');
    const int len = eq ? (int)(eq - name) : (int)strlen(name);
    if (c == ':') {
        cli_usage_error("%s: option '--%.*s' needs a value", argv[0], len, name);
    } else if (optopt) { /* a known option given a value it does not take */
        cli_usage_error("%s: option '--%.*s' takes no value", argv[0], len, name);
    } else {
        /* getopt_long takes a long option's unique beginning: several options that begin so are ambiguous. */
        int begin = 0;
        for (const struct option *o = longopts; o->name; o++) begin += len && !strncmp(o->name, name, (size_t)len);
        cli_usage_error("%s: %s option '--%.*s' (%s --help lists them)", argv[0], begin > 1 ? "ambiguous" : "unknown",
                        len, name, argv[0]);
    }
    return '?';
}

int cli_parse_number(const char *opt, const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    const double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
        cli_usage_error("%s takes a number from %g to %g, not '%s'", opt, lo, hi, s);
        return 0;
    }
    *out = v;
    return 1;
}

int cli_parse_devices(const char *s, int *out) {
    long v;
    if (!strcmp(s, "all"))
        v = NC_ALL_DEVICES;
    else if (!parse_long_in(s, 1, NC_MAX_DEVICES, &v)) {
        cli_usage_error("--devices takes a count of GPUs from 1 to %d, or all, not '%s'", NC_MAX_DEVICES, s);
        return 0;
    }
    *out = (int)v;
    return 1;
}

int cli_output_path(const char *opt, const char *path) {
    nc_error err = {0};
    if (!nc_check_output_path(path, &err)) return 1;
    cli_usage_error("%s %s", opt, err.msg);
    return 0;
}

int cli_is_gpu_backend(const char *backend) {
    return !strcmp(backend, "cuda") || !strcmp(backend, "cudnn");
}

void cli_pin_images(const char *backend, nc_dataset *ds) {
    if (!cli_is_gpu_backend(backend)) return;
    nc_error ignored = {0};
    (void)nc_dataset_pin(ds, &ignored);
}

static void usage(FILE *f) {
    fprintf(f, "usage: nanoconv COMMAND [options]   (nanoconv COMMAND --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-13s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "  %-13s %s\n", "--version", "the version, the CUDA kernels' id and the backends built");
    fprintf(f, "\nexit status: 0 success, 1 failure at run time (device, memory) or a failed bench --check, 2 bad "
               "input or usage\n");
}

static void version(void) {
    printf("nanoconv %s\n", NC_VERSION);
#ifdef NC_HAVE_CUDA
    printf("cuda kernels: %s\n", nc_cuda_kernels_id()); /* what the autotune cache keys on */
#endif
    printf("backends:"); /* the last line: tests read the backends after it */
    for (const char *const *b = nc_backend_names(); *b; b++) printf(" %s", *b);
    printf("\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        version();
        return 0;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    /* An interrupt (^C, kill, a closed terminal) while a model, --logits or --json file is being written removes its
     * temporary file. */
    (void)nc_atomic_file_cleanup_on_signals();
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    usage(stderr);
    return cli_usage_error("unknown command '%s'", argv[1]);
}
