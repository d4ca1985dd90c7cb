/* Optimisers (SGD with momentum, Adam) and learning-rate schedules, in PyTorch's formulation. */
#include <math.h>

#include "train/train.h"

#define PI 3.14159265358979323846

void nc_train_opts_default(nc_train_opts *o) {
    *o = (nc_train_opts){
        .epochs = 10,
        .batch = 64,
        .lr = 1e-3f,
        .optimizer = NC_OPT_ADAM,
        .momentum = 0.9f,
        .beta1 = 0.9f,
        .beta2 = 0.999f,
        .eps = 1e-8f,
        .weight_decay = 0.0f,
        .schedule = NC_SCHED_COSINE,
        .seed = 1,
        .limit = 0,
    };
}

const char *nc_optimizer_name(nc_optimizer o) {
    return o == NC_OPT_ADAM ? "adam" : "sgd";
}

const char *nc_schedule_name(nc_schedule s) {
    switch (s) {
    case NC_SCHED_STEP: return "step";
    case NC_SCHED_COSINE: return "cosine";
    default: return "const";
    }
}

float nc_train_lr(const nc_train_opts *o, long t, long T) {
    switch (o->schedule) {
    case NC_SCHED_STEP: return 4 * t >= 3 * T ? o->lr * 0.01f : 2 * t >= T ? o->lr * 0.1f : o->lr;
    case NC_SCHED_COSINE: return (float)(o->lr * 0.5 * (1.0 + cos(PI * (double)t / (double)(T > 0 ? T : 1))));
    default: return o->lr;
    }
}

/* Elementwise over the parameters, so any split among threads gives the same result. */
void nc_train_update(const nc_train_opts *o, float *w, const float *g, float *m, float *v, size_t n, float lr, long t) {
    const float wd = o->weight_decay;
    if (o->optimizer == NC_OPT_SGD) {
        const float mu = o->momentum;
#pragma omp parallel for schedule(static) if (n > NC_TRAIN_BLOCK)
        for (size_t i = 0; i < n; i++) {
            m[i] = mu * m[i] + (g[i] + wd * w[i]);
            w[i] -= lr * m[i];
        }
        return;
    }
    const float b1 = o->beta1, b2 = o->beta2, eps = o->eps;
    /* Bias corrections: m / (1 - b1^t) and sqrt(v / (1 - b2^t)), folded into one step size and one eps. */
    const double c1 = 1.0 - pow(b1, (double)t), c2 = 1.0 - pow(b2, (double)t);
    const float step = (float)(lr * sqrt(c2) / c1), eps_hat = (float)(eps * sqrt(c2));
#pragma omp parallel for schedule(static) if (n > NC_TRAIN_BLOCK)
    for (size_t i = 0; i < n; i++) {
        const float gi = g[i] + wd * w[i];
        m[i] = b1 * m[i] + (1.0f - b1) * gi;
        v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
        w[i] -= step * m[i] / (sqrtf(v[i]) + eps_hat);
    }
}
