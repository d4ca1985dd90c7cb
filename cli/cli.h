/* The nanoconv command: one function per subcommand, each returning the exit status. */
#ifndef NC_CLI_H
#define NC_CLI_H

#include "nanoconv.h"

/* Exit statuses: 0 success, 1 a failure at run time (device, memory), 2 bad input or usage. */
#define EXIT_USAGE 2

/* Prints "nanoconv: error: MSG" and returns the exit status for err's code. */
int cli_fail(const nc_error *err);
/* Prints "nanoconv: error: ..." for a usage problem and returns EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Parses a non-negative int option value; returns 0 and prints the error if it is not one. */
int cli_parse_int(const char *opt, const char *s, long lo, long hi, long *out);
/* getopt_long with nanoconv's own messages: an unknown option or a missing value prints "nanoconv: error: COMMAND:
 * ..." (argv[0] is the command) and returns '?'. */
struct option;
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);
/* Parses a decimal number option value from lo to hi; returns 0 and prints the error if it is not one. */
int cli_parse_number(const char *opt, const char *s, double lo, double hi, double *out);
/* Parses --devices: a count of GPUs from 1 to NC_MAX_DEVICES, or "all" (NC_ALL_DEVICES); returns 0 and prints the
 * error if it is neither. */
int cli_parse_devices(const char *s, int *out);
/* Checks an output file's name as the option gives it, before minutes of work that could not be saved
 * (nc_check_output_path). Returns 0 and prints the error if it will not do. */
int cli_output_path(const char *opt, const char *path);
/* Whether a backend name is one of the GPU backends (cuda, cudnn). */
int cli_is_gpu_backend(const char *backend);
/* For a GPU backend, page-locks ds's images (nc_dataset_pin), so that a run uploads them from where they are. Where
 * that fails the runs copy them into pinned memory of their own, as on any memory: not an error. */
void cli_pin_images(const char *backend, nc_dataset *ds);

int cmd_eval(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_bench_gpu(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_import_mxnet(int argc, char **argv);

/* What a command wraps around an evaluation (nanoconv profile). start() (or NULL) is called once the images are
 * loaded, just before the session that runs them opens, its kernels chosen: where the cuda backend's default would
 * choose them by timing every exact version (a layer its cache has not seen, conv_autotune.cu), a first session,
 * opened and freed before start(), makes that choice and caches it. A failure of start() ends the evaluation with its
 * error. After a successful run, once the session is freed and eval's lines are printed, done() gets the run's
 * timing (with the version each convolution ran on) and the result object (with --json, to add its own members
 * before eval prints it; NULL otherwise) and returns the exit status. */
struct cJSON;
typedef struct eval_hook {
    int (*start)(void *ctx, nc_error *err);
    int (*done)(void *ctx, const nc_timing *t, struct cJSON *json);
    void *ctx;
} eval_hook;
/* nanoconv eval itself (cmd_eval is eval_main without a hook). */
int eval_main(int argc, char **argv, const eval_hook *hook);

#endif
