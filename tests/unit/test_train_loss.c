/*
 * Training end to end on small synthetic data: the loss falls on a fixed batch (Adam and SGD); a run is a
 * function of its seed alone (same seed, same parameters, bit for bit, whatever the thread count); images
 * smaller than the input are resized as eval resizes them; a trained checkpoint saved, reloaded and run through
 * the cpu-ref backend gives the same logits as the model in memory, and the trainer's own forward agrees with
 * them; bad labels, sizes and learning rates fail with a message.
 */
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <stdint.h>
#include <unistd.h>

#include "nc_test.h"
#include "train/train.h"

#define INPUT "1x12x12 raw"
#define LAYERS "conv 4 3; tanh; maxpool 2 2; flatten; dense 16 bias; tanh; dense 10 bias; softmax"

/* n synthetic images of (S, S): a class-dependent stripe pattern plus noise, labels i % 10. */
static void make_data(nc_dataset *ds, int n, int S, uint32_t seed) {
    ds->n = n;
    ds->h = ds->w = S;
    ds->images = malloc((size_t)n * S * S);
    ds->labels = malloc((size_t)n);
    for (int i = 0; i < n; i++) {
        const int label = i % 10;
        ds->labels[i] = (uint8_t)label;
        for (int p = 0; p < S * S; p++) {
            seed = seed * 1664525u + 1013904223u;
            const int stripe = ((p / S + p % S * (label % 3)) % (label / 3 + 2)) == 0;
            ds->images[(size_t)i * S * S + p] = (uint8_t)((stripe ? 160 : 20) + (seed >> 26));
        }
    }
}

static nc_model *build(const char *input, const char *layers) {
    nc_error err = {0};
    nc_model *m = NULL;
    if (nc_model_build(&m, "test-train", input, layers, &err)) fprintf(stderr, "build: %s\n", err.msg);
    return m;
}

/* Trains `steps` steps on the first B images of ds (a fixed batch); returns the first and last losses. */
static void fixed_batch(const char *what, nc_optimizer opt, float lr, const nc_dataset *ds, int B, int steps) {
    nc_model *m = build(INPUT, LAYERS);
    nc_train_opts o;
    nc_train_opts_default(&o);
    o.optimizer = opt;
    o.lr = lr;
    o.batch = B;
    nc_error err = {0};
    nc_trainer *t = NULL;
    CHECK(nc_trainer_create(&t, m, 0, &o, &err) == NC_OK);
    double first = 0.0, last = 0.0;
    for (int s = 0; s < steps; s++) {
        nc_trainer_load_images(t, ds->images, B);
        last = nc_trainer_gradient(t, ds->labels, B);
        if (s == 0) first = last;
        nc_trainer_update(t, lr);
    }
    printf("fixed batch of %d, %s: loss %.4f -> %.4f in %d steps\n", B, what, first, last, steps);
    CHECK(first > 1.5); /* about log(10) at the start */
    CHECK(last < 0.3 * first);
    nc_trainer_free(t);
    nc_model_free(m);
}

typedef struct {
    int calls, epochs_done;
    double correctness;
} progress_count;

static void count_progress(const nc_train_progress *p, void *user) {
    progress_count *c = user;
    c->calls++;
    if (p->epoch_done) {
        c->epochs_done++;
        c->correctness = p->test_correctness;
    }
}

/* Runs nc_train_run with `threads` threads and returns the trained parameters (caller frees). */
static float *train_run(const char *input, const nc_dataset *train, const nc_dataset *test, int threads, uint64_t seed,
                        progress_count *pc, nc_model **out_model) {
    omp_set_num_threads(threads);
    nc_model *m = build(input, LAYERS);
    nc_train_opts o;
    nc_train_opts_default(&o);
    o.epochs = 2;
    o.batch = 16;
    o.seed = seed;
    o.limit = 90; /* 6 steps an epoch, the last one short */
    nc_error err = {0};
    nc_trainer *t = NULL;
    int rc = nc_trainer_create(&t, m, 0, &o, &err);
    if (!rc) rc = nc_train_run(t, train, test, count_progress, pc, &err);
    CHECK(rc == NC_OK);
    if (rc) fprintf(stderr, "train: %s\n", err.msg);
    float *p = malloc(m->n_params * sizeof *p);
    if (!rc) nc_trainer_export(t, m);
    memcpy(p, m->params, m->n_params * sizeof *p);
    nc_trainer_free(t);
    if (out_model)
        *out_model = m;
    else
        nc_model_free(m);
    return p;
}

/* Saves m, loads it back, and checks that both give the same cpu-ref logits on the test images, and that the
 * trainer's forward (internal scale, fast tanh) agrees with them. */
static void check_checkpoint(nc_model *m, const nc_dataset *test) {
    nc_error err = {0};
    char path[] = "/tmp/nc_test_train_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK(nc_model_save(m, path, &err) == NC_OK);
    nc_model *back = NULL;
    CHECK(nc_model_load(&back, path, &err) == NC_OK);
    remove(path);
    if (!back) {
        fprintf(stderr, "checkpoint: %s\n", err.msg);
        return;
    }
    CHECK(back->n_params == m->n_params && memcmp(back->params, m->params, m->n_params * sizeof(float)) == 0);
    const int n = test->n, classes = nc_model_num_classes(m);
    float *a = malloc((size_t)n * classes * sizeof *a), *b = malloc((size_t)n * classes * sizeof *b);
    int *pa = malloc((size_t)n * sizeof *pa), *pb = malloc((size_t)n * sizeof *pb);
    nc_session *sa = NULL, *sb = NULL;
    CHECK(nc_session_create(&sa, m, "cpu-ref", NULL, &err) == NC_OK);
    CHECK(nc_session_create(&sb, back, "cpu-ref", NULL, &err) == NC_OK);
    CHECK(nc_session_run(sa, test->images, n, test->h, test->w, pa, a, NULL, &err) == NC_OK);
    CHECK(nc_session_run(sb, test->images, n, test->h, test->w, pb, b, NULL, &err) == NC_OK);
    CHECK(memcmp(a, b, (size_t)n * classes * sizeof *a) == 0);
    CHECK(memcmp(pa, pb, (size_t)n * sizeof *pa) == 0);

    /* The trainer's forward on the same images (softmax excluded) against cpu-ref's softmax outputs. */
    nc_train_opts o;
    nc_train_opts_default(&o);
    o.batch = n;
    nc_trainer *t = NULL;
    CHECK(nc_trainer_create(&t, back, 1, &o, &err) == NC_OK);
    nc_trainer_load_images(t, test->images, n);
    const float *z = nc_trainer_logits(t, n);
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        float mx = z[i * classes], sum = 0.0f;
        for (int j = 1; j < classes; j++) mx = z[i * classes + j] > mx ? z[i * classes + j] : mx;
        for (int j = 0; j < classes; j++) sum += expf(z[i * classes + j] - mx);
        for (int j = 0; j < classes; j++) {
            const double d = fabs(expf(z[i * classes + j] - mx) / sum - a[i * classes + j]);
            worst = d > worst ? d : worst;
        }
    }
    printf("checkpoint: %zu parameters reload bit for bit; cpu-ref logits identical; trainer forward within %.2g\n",
           back->n_params, worst);
    CHECK(worst < 1e-5);
    nc_trainer_free(t);
    nc_session_free(sa);
    nc_session_free(sb);
    free(a), free(b), free(pa), free(pb);
    nc_model_free(back);
}

static void check_errors(const nc_dataset *train) {
    nc_error err = {0};
    nc_train_opts o;
    nc_train_opts_default(&o);
    o.batch = 8;
    o.limit = 16;
    o.epochs = 1;
    nc_trainer *t = NULL;

    /* Labels 0..9 against a model of 5 classes. */
    nc_model *m = build(INPUT, "flatten; dense 5 bias; softmax");
    CHECK(nc_trainer_create(&t, m, 0, &o, &err) == NC_OK);
    CHECK(nc_train_run(t, train, NULL, NULL, NULL, &err) == NC_ERR_MISMATCH);
    CHECK_MSG(err, "label 5 of image 5");
    nc_trainer_free(t);
    nc_model_free(m);

    /* 12x12 images for an 8x8 model. */
    m = build("1x8x8 raw", "flatten; dense 10 bias; softmax");
    CHECK(nc_trainer_create(&t, m, 0, &o, &err) == NC_OK);
    CHECK(nc_train_run(t, train, NULL, NULL, NULL, &err) == NC_ERR_MISMATCH);
    CHECK_MSG(err, "training data");
    nc_trainer_free(t);
    nc_model_free(m);

    /* A learning rate that makes the loss overflow. */
    m = build(INPUT, "flatten; dense 10 bias; softmax");
    o.optimizer = NC_OPT_SGD;
    o.lr = 1e38f;
    CHECK(nc_trainer_create(&t, m, 0, &o, &err) == NC_OK);
    CHECK(nc_train_run(t, train, NULL, NULL, NULL, &err) == NC_ERR_ARG);
    CHECK_MSG(err, "the loss became");
    nc_trainer_free(t);

    /* Nothing to train. */
    nc_model_free(m);
    m = build(INPUT, "maxpool 2 2; flatten; softmax");
    CHECK(nc_trainer_create(&t, m, 0, &o, &err) == NC_ERR_ARG);
    CHECK_MSG(err, "no parameters");
    nc_model_free(m);
}

int main(void) {
    nc_dataset train = {0}, test = {0}, small = {0}, big = {0};
    make_data(&train, 120, 12, 1);
    make_data(&test, 50, 12, 2);

    fixed_batch("adam", NC_OPT_ADAM, 0.01f, &train, 20, 30);
    fixed_batch("sgd, momentum 0.9", NC_OPT_SGD, 0.2f, &train, 20, 30);

    /* The same seed gives the same parameters with 1 thread or 2; another seed does not. */
    progress_count c1 = {0}, c2 = {0}, c3 = {0};
    nc_model *trained = NULL;
    float *p1 = train_run(INPUT, &train, &test, 1, 5, &c1, NULL);
    float *p2 = train_run(INPUT, &train, &test, 2, 5, &c2, &trained);
    float *p3 = train_run(INPUT, &train, &test, 2, 6, &c3, NULL);
    const size_t np = trained->n_params;
    CHECK(memcmp(p1, p2, np * sizeof *p1) == 0);
    CHECK(memcmp(p1, p3, np * sizeof *p1) != 0);
    CHECK(c1.calls == 2 * 6 + 2 && c1.epochs_done == 2);
    CHECK(c1.correctness >= 0.0 && c1.correctness <= 1.0 && c1.correctness == c2.correctness);
    printf("nc_train_run: 2 epochs, seed 5: identical with 1 and 2 threads; t10k-like correctness %.2f\n",
           c1.correctness);

    /* A 16x16 model on 12x12 images trains exactly as on the same images resized beforehand. */
    make_data(&small, 100, 12, 3);
    big.n = small.n;
    big.h = big.w = 16;
    big.images = malloc((size_t)small.n * 16 * 16);
    big.labels = malloc((size_t)small.n);
    memcpy(big.labels, small.labels, (size_t)small.n);
    for (int i = 0; i < small.n; i++) nc_resize_u8(big.images + (size_t)i * 256, 16, small.images + i * 144, 12, 12);
    progress_count c4 = {0}, c5 = {0};
    float *q1 = train_run("1x16x16 raw", &small, NULL, 2, 9, &c4, NULL);
    float *q2 = train_run("1x16x16 raw", &big, NULL, 2, 9, &c5, NULL);
    nc_model *m16 = build("1x16x16 raw", LAYERS);
    CHECK(memcmp(q1, q2, m16->n_params * sizeof *q1) == 0);
    CHECK(c4.correctness == -1.0);
    nc_model_free(m16);

    check_checkpoint(trained, &test);
    check_errors(&train);

    free(p1), free(p2), free(p3), free(q1), free(q2);
    nc_model_free(trained);
    nc_dataset_free(&train);
    nc_dataset_free(&test);
    nc_dataset_free(&small);
    nc_dataset_free(&big);
    return nc_test_done("test_train_loss");
}
