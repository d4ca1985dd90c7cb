/* nanoconv train: trains a model on the CPU on the 60000 training images, evaluating t10k after each epoch. */
#define _GNU_SOURCE
#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/error.h"
#include "core/model.h"
#include "train/train.h"

enum {
    OPT_ARCH_INPUT = 1000,
    OPT_LAYERS,
    OPT_NAME,
    OPT_EPOCHS,
    OPT_BATCH,
    OPT_LR,
    OPT_OPTIMIZER,
    OPT_MOMENTUM,
    OPT_WEIGHT_DECAY,
    OPT_SCHEDULE,
    OPT_SEED,
    OPT_THREADS,
    OPT_DATA,
    OPT_LIMIT,
    OPT_INIT
};

static const char train_help[] =
    "usage: nanoconv train --arch-input '1x28x28 raw' --layers 'conv 50 5; tanh; ...' --name NAME -o FILE\n"
    "                      [options]\n"
    "       nanoconv train --init MODEL -o FILE [options]\n\n"
    "Trains on the CPU on the 60000 Fashion-MNIST training images (never on t10k), reports the t10k\n"
    "correctness after each epoch, and writes the model atomically at the end.\n\n"
    "      --arch-input TEXT  input shape and scaling, as in model files: '1x28x28 raw', '1x64x64 unit', ...\n"
    "      --layers TEXT      layers, as in model files (docs/MODEL_FORMAT.md)\n"
    "      --name NAME        the model's name (default with --init: the file's)\n"
    "  -o, --output FILE      where to write the trained model (.safetensors)\n"
    "      --init MODEL       continue training from a model file (its architecture and weights)\n"
    "      --epochs E         passes over the training images (default 10)\n"
    "      --batch B          images per step (default 64)\n"
    "      --lr LR            learning rate at the start (default 0.001 for adam, 0.01 for sgd)\n"
    "      --optimizer O      adam (default) or sgd (with momentum)\n"
    "      --momentum M       sgd momentum (default 0.9)\n"
    "      --weight-decay WD  L2 weight decay added to the gradients (default 0)\n"
    "      --schedule S       cosine (default), step (lr/10 at 50%%, lr/100 at 75%% of the steps) or const\n"
    "      --seed S           initial weights and image order (default 1); a run is a function of its options\n"
    "      --threads T        CPU threads (default: OpenMP's, i.e. OMP_NUM_THREADS or all cores)\n"
    "      --data DIR         folder with the Fashion-MNIST IDX files, raw or .gz (default: $NANOCONV_DATA or %s)\n"
    "      --limit N          train on the first N training images only (for tests)\n\n"
    "Progress goes to stderr: a progress bar on a terminal, else one line per epoch.\n";

/* cli_parse_number, as a float. */
static int parse_float(const char *opt, const char *s, double lo, double hi, float *out) {
    double v;
    if (!cli_parse_number(opt, s, lo, hi, &v)) return 0;
    *out = (float)v;
    return 1;
}

/* Seconds as m:ss, or h:mm:ss from an hour. */
static void format_duration(char *buf, size_t n, double s) {
    const long t = s > 0 ? (long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

typedef struct {
    int tty;          /* stderr is a terminal: draw the bar */
    double last_draw; /* when the bar was last drawn (elapsed seconds) */
    double train_s;   /* seconds of training in the finished epochs, evaluations excluded */
    long images;      /* training images of the finished epochs */
    double loss, correctness;
} progress_state;

static void on_progress(const nc_train_progress *p, void *user) {
    progress_state *st = user;
    if (p->epoch_done) {
        st->train_s += p->epoch_s;
        st->images += p->images;
        st->loss = p->loss;
        st->correctness = p->test_correctness;
        fprintf(stderr, "%sepoch %d/%d: loss %.4f, %.0f images/s, %.1f s, lr %.3g", st->tty ? "\r\033[K" : "", p->epoch,
                p->epochs, p->loss, p->images_per_s, p->epoch_s, (double)p->lr);
        if (p->test_correctness >= 0) fprintf(stderr, ", t10k correctness %.4f", p->test_correctness);
        fprintf(stderr, "\n");
        return;
    }
    if (!st->tty || (p->elapsed_s - st->last_draw < 0.1 && p->step != p->steps)) return;
    st->last_draw = p->elapsed_s;
    enum { WIDTH = 30 };
    char bar[WIDTH + 1], eta[32];
    const int filled = (int)((double)p->step / (double)p->steps * WIDTH);
    for (int i = 0; i < WIDTH; i++) bar[i] = i < filled ? '#' : '-';
    bar[WIDTH] = '\0';
    format_duration(eta, sizeof eta, p->eta_s);
    fprintf(stderr, "\r\033[Kepoch %d/%d [%s] %3d%%  loss %.4f  %.0f img/s  time left %s", p->epoch, p->epochs, bar,
            (int)(100 * p->step / p->steps), p->loss, p->images_per_s, eta);
    fflush(stderr);
}

int cmd_train(int argc, char **argv) {
    static const struct option longopts[] = {{"arch-input", required_argument, 0, OPT_ARCH_INPUT},
                                             {"layers", required_argument, 0, OPT_LAYERS},
                                             {"name", required_argument, 0, OPT_NAME},
                                             {"output", required_argument, 0, 'o'},
                                             {"init", required_argument, 0, OPT_INIT},
                                             {"epochs", required_argument, 0, OPT_EPOCHS},
                                             {"batch", required_argument, 0, OPT_BATCH},
                                             {"lr", required_argument, 0, OPT_LR},
                                             {"optimizer", required_argument, 0, OPT_OPTIMIZER},
                                             {"momentum", required_argument, 0, OPT_MOMENTUM},
                                             {"weight-decay", required_argument, 0, OPT_WEIGHT_DECAY},
                                             {"schedule", required_argument, 0, OPT_SCHEDULE},
                                             {"seed", required_argument, 0, OPT_SEED},
                                             {"threads", required_argument, 0, OPT_THREADS},
                                             {"data", required_argument, 0, OPT_DATA},
                                             {"limit", required_argument, 0, OPT_LIMIT},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    nc_train_opts o;
    nc_train_opts_default(&o);
    const char *arch_input = NULL, *layers = NULL, *name = NULL, *out = NULL, *init = NULL, *data_dir = NULL;
    int lr_given = 0;
    long v, threads = 0;
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "o:h", longopts)) != -1) {
        switch (c) {
        case OPT_ARCH_INPUT: arch_input = optarg; break;
        case OPT_LAYERS: layers = optarg; break;
        case OPT_NAME: name = optarg; break;
        case 'o':
            if (!cli_output_path("-o", optarg)) return EXIT_USAGE;
            out = optarg;
            break;
        case OPT_INIT: init = optarg; break;
        case OPT_DATA: data_dir = optarg; break;
        case OPT_EPOCHS:
            if (!cli_parse_int("--epochs", optarg, 1, 100000, &v)) return EXIT_USAGE;
            o.epochs = (int)v;
            break;
        case OPT_BATCH:
            if (!cli_parse_int("--batch", optarg, 1, 65536, &v)) return EXIT_USAGE;
            o.batch = (int)v;
            break;
        case OPT_LIMIT:
            if (!cli_parse_int("--limit", optarg, 1, 1L << 30, &v)) return EXIT_USAGE;
            o.limit = (int)v;
            break;
        case OPT_SEED:
            if (!cli_parse_int("--seed", optarg, 0, 1L << 62, &v)) return EXIT_USAGE;
            o.seed = (uint64_t)v;
            break;
        case OPT_THREADS:
            if (!cli_parse_int("--threads", optarg, 1, 1024, &threads)) return EXIT_USAGE;
            break;
        case OPT_LR:
            if (!parse_float("--lr", optarg, 1e-12, 100.0, &o.lr)) return EXIT_USAGE;
            lr_given = 1;
            break;
        case OPT_MOMENTUM:
            if (!parse_float("--momentum", optarg, 0.0, 0.999999, &o.momentum)) return EXIT_USAGE;
            break;
        case OPT_WEIGHT_DECAY:
            if (!parse_float("--weight-decay", optarg, 0.0, 1.0, &o.weight_decay)) return EXIT_USAGE;
            break;
        case OPT_OPTIMIZER:
            if (!strcmp(optarg, "adam"))
                o.optimizer = NC_OPT_ADAM;
            else if (!strcmp(optarg, "sgd"))
                o.optimizer = NC_OPT_SGD;
            else
                return cli_usage_error("--optimizer takes adam or sgd, not '%s'", optarg);
            break;
        case OPT_SCHEDULE:
            if (!strcmp(optarg, "cosine"))
                o.schedule = NC_SCHED_COSINE;
            else if (!strcmp(optarg, "step"))
                o.schedule = NC_SCHED_STEP;
            else if (!strcmp(optarg, "const"))
                o.schedule = NC_SCHED_CONST;
            else
                return cli_usage_error("--schedule takes cosine, step or const, not '%s'", optarg);
            break;
        case 'h': printf(train_help, nc_default_data_dir()); return 0;
        default: return EXIT_USAGE;
        }
    }
    if (optind < argc) return cli_usage_error("train: unexpected argument '%s'", argv[optind]);
    if (!out) return cli_usage_error("train: -o FILE is required");
    if (init && (arch_input || layers))
        return cli_usage_error("train: --init takes the architecture from the model file; leave out --arch-input "
                               "and --layers");
    if (!init && (!arch_input || !layers || !name))
        return cli_usage_error("train: --arch-input, --layers and --name are required (or --init MODEL)");
    if (!lr_given && o.optimizer == NC_OPT_SGD) o.lr = 0.01f;
    if (threads) omp_set_num_threads((int)threads);

    nc_error err = {0};
    nc_model *m = NULL;
    nc_trainer *t = NULL;
    nc_dataset train = {0}, test = {0};
    int rc = init ? nc_model_load(&m, init, &err) : nc_model_build(&m, name, arch_input, layers, &err);
    if (!rc && init && name)
        nc_plain_text(m->name, sizeof m->name, name); /* as a file's name: control characters shown */
    if (!rc) rc = nc_dataset_load_split(&train, data_dir, "train", &err);
    if (!rc) rc = nc_dataset_load_split(&test, data_dir, "t10k", &err);
    if (rc) goto done;
    /* A batch larger than both the images trained on and the test set's is the same as one of the larger of the two:
     * the trainer's buffers are sized for that many, not for what --batch says. */
    const int n = o.limit && o.limit < train.n ? o.limit : train.n, most = n > test.n ? n : test.n;
    /* What a step takes: the batch, or every image where --batch is past them. */
    const int step = o.batch < n ? o.batch : n;
    char asked[80] = "";
    if (o.batch > n) snprintf(asked, sizeof asked, " (--batch %d: past the %d images)", o.batch, n);
    if (o.batch > most) o.batch = most;
    rc = nc_trainer_create(&t, m, init != NULL, &o, &err);
    if (rc) goto done;

    char in_text[256];
    nc_model_input_text(m, in_text, sizeof in_text);
    fprintf(stderr,
            "training %s (input %s, %zu parameters) on %d training images, evaluating on %d t10k images\n"
            "%s, lr %g with %s schedule, batch %d%s, %d epochs, seed %llu, %d threads%s\n",
            m->name, in_text, m->n_params, n, test.n, nc_optimizer_name(o.optimizer), (double)o.lr,
            nc_schedule_name(o.schedule), step, asked, o.epochs, (unsigned long long)o.seed, omp_get_max_threads(),
            init ? ", continuing from the given model" : "");
    progress_state st = {.tty = isatty(STDERR_FILENO), .correctness = -1.0};
    const double t0 = nc_now();
    rc = nc_train_run(t, &train, &test, on_progress, &st, &err);
    if (rc && st.last_draw > 0.0) fputc('\n', stderr); /* end the progress bar's line before the error */
    if (rc) goto done;
    const double total_s = nc_now() - t0;
    nc_trainer_export(t, m);
    rc = nc_model_save(m, out, &err);
    if (rc) goto done;
    printf("trained %s: %d epochs of %d images in %.1f s (%.0f images/s training), loss %.4f, t10k correctness "
           "%.4f; wrote %s\n",
           m->name, o.epochs, n, total_s, (double)st.images / st.train_s, st.loss, st.correctness, out);

done:
    nc_trainer_free(t);
    nc_model_free(m);
    nc_dataset_free(&train);
    nc_dataset_free(&test);
    return rc ? cli_fail(&err) : 0;
}
