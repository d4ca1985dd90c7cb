/*
 * The cpu backend: the fast CPU path (issue 8). See conv_cpu.h for the data layout and the convolution kernel
 * families, gemm.h for the dense layers.
 *
 * The plan turns the model's layers into ops, fusing conv [+ activation] [+ pooling] into one convolution op (the
 * full-size convolution output is never written) and dense [+ activation] into one GEMM op; flatten is free in the
 * lane-innermost layout. Each OpenMP thread takes a chunk of images (a multiple of 2V, V the vector lanes) through
 * all ops in its own buffers, so memory stays bounded whatever N is. Op 0 prepares the input (resize and scale, lane-
 * innermost). The threads meet at a barrier after every op, so that an op's time is the wall time of that op alone
 * over all the threads' chunks: the course's Op Time (synchronise, run the layer, synchronise), summed over rounds.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/error.h"
#include "cpu/backend_cpu.h"
#include "cpu/conv_cpu.h"
#include "cpu/gemm.h"
#include "cpu/input_cpu.h"

/* Images per thread chunk (rounded up to a multiple of 2V): enough columns that the dense layers' GEMM reuses each
 * block of weights from L2 256 times (at 32 the first dense layer of the 2017 network is bound by streaming its 14 MB
 * of weights; 128 is some 15% slower than 256), while the largest activation of the course's networks (24x27x27
 * floats) stays at 18 MB a buffer, 72 MB for two threads' two buffers. */
#define CPU_CHUNK 256
/* But all threads' activation buffers together stay within this many bytes: on a many-core machine 256 images a
 * thread would take the resident memory past the 256 MB that `nanoconv eval` is held to (16 threads x 2 buffers x
 * 256 images x 28.8 kB = 236 MB for the 2017 network); there the chunk shrinks, to no fewer than 2V images. */
#define CPU_ACT_BUDGET ((size_t)128 << 20)

typedef enum { OP_INPUT, OP_CONV, OP_ACT, OP_POOL, OP_DENSE, OP_SOFTMAX } op_kind;

typedef struct {
    op_kind kind;
    int first_layer, n_layers, conv_index;
    nc_shape in, out;
    nc_conv_desc conv; /* OP_CONV */
    int act;           /* OP_ACT, OP_DENSE: activation kind or -1 */
    int pool, P, S;    /* OP_POOL */
    float *ap;         /* OP_DENSE: weights packed for nc_sgemm_panels, (OUT, IN) */
    const float *bias; /* OP_DENSE: (OUT) or NULL */
    double flops;
    char name[64], note[48];
} cpu_op;

typedef struct {
    float *buf[2]; /* ping-pong activations, each (chunk / V, largest op size, V) */
    float *band;   /* the convolution ops' band buffer */
    void *input;   /* op 0's workspace: nc_input_ws_bytes */
    float *row;    /* one image's outputs, (classes) */
} workspace;

typedef struct {
    const nc_model *m;
    nc_cpu_isa isa;
    int V, threads, chunk, classes;
    int n_ops;
    cpu_op ops[NC_CPU_MAX_OPS];
    size_t act_floats; /* per image, the largest op input or output */
    float *packed;     /* every op's packed weights */
    int *taps;         /* every implicit-GEMM op's tap offsets */
    workspace *ws;     /* (threads) */
    double op_s[NC_CPU_MAX_OPS];
} cpu_plan;

static int conv_tile_ok(nc_cpu_isa isa, int tm, int tw) {
    return isa == NC_ISA_AVX512 ? nc_conv_tile_ok_avx512(tm, tw)
           : isa == NC_ISA_AVX2 ? nc_conv_tile_ok_avx2(tm, tw)
                                : tm == 1 && tw == 1;
}

/* Applies NANOCONV_CPU_TILE=TMxTW, a tuning override of the register tile of every convolution, where it is set.
 * A tile larger than a layer (tm > M or tw > Wn) leaves that layer with the tile chosen for it. */
static int tile_override(nc_cpu_isa isa, nc_conv_desc *d, nc_error *err) {
    const char *s = getenv("NANOCONV_CPU_TILE");
    int tm, tw;
    if (!s || !*s) return NC_OK;
    if (sscanf(s, "%dx%d", &tm, &tw) != 2 || !conv_tile_ok(isa, tm, tw))
        return nc_fail(err, NC_ERR_ARG, "NANOCONV_CPU_TILE='%s' is not a register tile TMxTW that %s has", s,
                       nc_cpu_isa_name(isa));
    if (tm <= d->M && tw <= d->Wn) {
        d->tm = tm;
        d->tw = tw;
    }
    return NC_OK;
}

static size_t conv_packed_floats(const nc_conv_desc *d) {
    const size_t T = (size_t)d->C * d->K * d->K;
    return (size_t)((d->M + d->tm - 1) / d->tm) * T * d->tm;
}

/* kp is (ceil(M / tm), C*K*K, tm): tile mt holds channels m0 = min(mt * tm, M - tm) .. m0 + tm - 1. */
static void conv_pack(float *kp, const nc_conv_desc *d, const float *w) {
    const int T = d->C * d->K * d->K, tm = d->tm;
    for (int mt = 0; mt < (d->M + tm - 1) / tm; mt++) {
        const int m0 = mt * tm + tm <= d->M ? mt * tm : d->M - tm;
        for (int i = 0; i < T; i++)
            for (int t = 0; t < tm; t++) kp[((size_t)mt * T + i) * tm + t] = w[(size_t)(m0 + t) * T + i];
    }
}

static const char *act_name(int kind) {
    return kind < 0 ? "" : nc_layer_kind_name((nc_layer_kind)kind);
}

/* Builds the op list; sizes the packed weights and tap tables (filled by fill_ops). */
static int build_ops(cpu_plan *p, const nc_run_opts *opts, size_t *packed_floats, size_t *tap_count, nc_error *err) {
    const nc_model *m = p->m;
    int conv_index = 0;
    *packed_floats = *tap_count = 0;
    p->act_floats = nc_shape_size(m->input);
    /* Op 0 turns the chunk's uint8 images into the model's input (resized and scaled), lane-innermost. */
    cpu_op *in = &p->ops[p->n_ops++];
    memset(in, 0, sizeof *in);
    in->kind = OP_INPUT;
    in->first_layer = in->conv_index = -1;
    in->out = m->input;
    snprintf(in->name, sizeof in->name, "input %dx%d %s", m->input.h, m->input.w,
             m->scaling == NC_SCALE_RAW    ? "raw"
             : m->scaling == NC_SCALE_UNIT ? "unit"
                                           : "norm");
    snprintf(in->note, sizeof in->note, "resize (if the images are smaller) + scale");
    for (int i = 0; i < m->n_layers;) {
        const nc_layer *l = &m->layers[i];
        if (l->kind == NC_FLATTEN) {
            i++;
            continue;
        }
        cpu_op *op = &p->ops[p->n_ops++];
        memset(op, 0, sizeof *op);
        op->first_layer = i;
        op->n_layers = 1;
        op->conv_index = -1;
        op->in = l->in;
        op->act = -1;
        switch (l->kind) {
        case NC_CONV: {
            nc_conv_desc *d = &op->conv;
            d->C = l->in.c, d->H = l->in.h, d->W = l->in.w, d->M = l->m, d->K = l->k;
            d->act = d->pool = -1;
            d->P = d->S = 1;
            d->bias = l->bias;
            int j = i + 1;
            if (j < m->n_layers && nc_layer_is_activation(m->layers[j].kind)) d->act = (int)m->layers[j++].kind;
            if (j < m->n_layers && (m->layers[j].kind == NC_MAXPOOL || m->layers[j].kind == NC_AVGPOOL)) {
                d->pool = (int)m->layers[j].kind;
                d->P = m->layers[j].p;
                d->S = m->layers[j].s;
                j++;
            }
            op->n_layers = j - i;
            op->out = m->layers[j - 1].out;
            d->Hp = op->out.h, d->Wp = op->out.w;
            d->Wn = (d->Wp - 1) * d->S + d->P;
            d->family = opts->conv_kernel ? opts->conv_kernel : d->C == 1 ? NC_CONV_DIRECT : NC_CONV_IGEMM;
            nc_conv_choose_tile(d, p->isa);
            const int rc = tile_override(p->isa, d, err);
            if (rc) return rc;
            *packed_floats += conv_packed_floats(d);
            if (d->family == NC_CONV_IGEMM) *tap_count += (size_t)d->C * d->K * d->K;
            op->kind = OP_CONV;
            op->conv_index = conv_index++;
            op->flops = nc_layer_flops(l);
            snprintf(op->name, sizeof op->name, "conv %d %d%s%s%s%s", l->m, l->k, d->act >= 0 ? " + " : "",
                     act_name(d->act), d->pool >= 0 ? " + " : "", d->pool >= 0 ? act_name(d->pool) : "");
            if (d->pool >= 0)
                snprintf(op->name + strlen(op->name), sizeof op->name - strlen(op->name), " %d %d", d->P, d->S);
            const char *fam = p->isa == NC_ISA_SCALAR ? "" : d->family == NC_CONV_DIRECT ? " direct" : " igemm";
            char fused[32] = "";
            if (d->act >= 0 || d->pool >= 0)
                snprintf(fused, sizeof fused, ", fused %s%s%s", act_name(d->act),
                         d->act >= 0 && d->pool >= 0 ? "+" : "", d->pool >= 0 ? act_name(d->pool) : "");
            snprintf(op->note, sizeof op->note, "%s%s %dx%d%s", nc_cpu_isa_name(p->isa), fam, d->tm, d->tw, fused);
            break;
        }
        case NC_DENSE: {
            op->kind = OP_DENSE;
            op->bias = l->bias;
            int j = i + 1;
            if (j < m->n_layers && nc_layer_is_activation(m->layers[j].kind)) op->act = (int)m->layers[j++].kind;
            op->n_layers = j - i;
            op->out = m->layers[j - 1].out;
            op->flops = nc_layer_flops(l);
            *packed_floats += nc_sgemm_packed_a_floats(p->isa, l->m, (int)nc_shape_size(l->in));
            snprintf(op->name, sizeof op->name, "dense %d%s%s", l->m, op->act >= 0 ? " + " : "", act_name(op->act));
            snprintf(op->note, sizeof op->note, "%s sgemm%s%s", nc_cpu_isa_name(p->isa), op->act >= 0 ? ", fused " : "",
                     act_name(op->act));
            break;
        }
        case NC_MAXPOOL:
        case NC_AVGPOOL:
            op->kind = OP_POOL;
            op->pool = (int)l->kind;
            op->P = l->p;
            op->S = l->s;
            op->out = l->out;
            snprintf(op->name, sizeof op->name, "%s %d %d", nc_layer_kind_name(l->kind), l->p, l->s);
            break;
        case NC_SOFTMAX:
            op->kind = OP_SOFTMAX;
            op->out = l->out;
            snprintf(op->name, sizeof op->name, "softmax");
            break;
        default: /* the activations */
            op->kind = OP_ACT;
            op->act = (int)l->kind;
            op->out = l->out;
            snprintf(op->name, sizeof op->name, "%s", nc_layer_kind_name(l->kind));
            break;
        }
        if (nc_shape_size(op->out) > p->act_floats) p->act_floats = nc_shape_size(op->out);
        i += op->n_layers;
    }
    return NC_OK;
}

static void fill_ops(cpu_plan *p) {
    float *kp = p->packed;
    int *taps = p->taps;
    for (int o = 1; o < p->n_ops; o++) { /* op 0, the input, has no weights */
        cpu_op *op = &p->ops[o];
        const nc_layer *l = &p->m->layers[op->first_layer];
        if (op->kind == OP_CONV) {
            nc_conv_desc *d = &op->conv;
            conv_pack(kp, d, l->weight);
            d->kp = kp;
            kp += conv_packed_floats(d);
            if (d->family == NC_CONV_IGEMM) {
                for (int c = 0; c < d->C; c++)
                    for (int r = 0; r < d->K; r++)
                        for (int q = 0; q < d->K; q++)
                            taps[(c * d->K + r) * d->K + q] = ((c * d->H + r) * d->W + q) * p->V;
                d->taps = taps;
                taps += d->C * d->K * d->K;
            }
        } else if (op->kind == OP_DENSE) {
            const int IN = (int)nc_shape_size(l->in);
            nc_sgemm_pack_a(p->isa, kp, 0, l->m, IN, 1.0f, l->weight, IN);
            op->ap = kp;
            kp += nc_sgemm_packed_a_floats(p->isa, l->m, IN);
        }
    }
}

static void cpu_destroy(void *plan) {
    cpu_plan *p = plan;
    if (!p) return;
    if (p->ws)
        for (int t = 0; t < p->threads; t++) {
            free(p->ws[t].buf[0]);
            free(p->ws[t].buf[1]);
            free(p->ws[t].band);
            free(p->ws[t].input);
            free(p->ws[t].row);
        }
    free(p->ws);
    free(p->packed);
    free(p->taps);
    free(p);
}

static void *alloc_floats(size_t n) {
    size_t bytes;
    if (!nc_mul_ok(n ? n : 1, sizeof(float), &bytes)) return NULL;
    bytes = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, bytes);
}

static int cpu_create(void **out, const nc_model *m, const nc_run_opts *opts, nc_error *err) {
    *out = NULL;
    if (opts->conv_kernel < 0 || opts->conv_kernel > NC_CONV_IGEMM)
        return nc_fail(err, NC_ERR_ARG, "backend cpu has convolution kernels 1 (direct) and 2 (implicit GEMM), not %d",
                       opts->conv_kernel);
    cpu_plan *p = calloc(1, sizeof *p);
    if (!p) return nc_fail(err, NC_ERR_NOMEM, "out of memory for the cpu plan");
    p->m = m;
    int rc = nc_cpu_isa_select(&p->isa, err);
    if (rc) {
        free(p);
        return rc;
    }
    p->V = nc_cpu_isa_lanes(p->isa);
    p->threads = opts->threads > 0 ? opts->threads : omp_get_max_threads();
    const int unit = 2 * p->V;
    const int want = opts->chunk ? (int)(opts->chunk < (size_t)1 << 20 ? opts->chunk : (size_t)1 << 20) : CPU_CHUNK;
    p->chunk = (want + unit - 1) / unit * unit;
    p->classes = (int)nc_shape_size(m->layers[m->n_layers - 1].out);
    size_t packed_floats, tap_count;
    rc = build_ops(p, opts, &packed_floats, &tap_count, err);
    if (rc) {
        free(p);
        return rc;
    }
    if (!opts->chunk) { /* an explicit --chunk is taken as asked */
        const size_t per_image = (size_t)p->threads * 2 * p->act_floats * sizeof(float);
        const size_t fit = CPU_ACT_BUDGET / per_image / (size_t)unit * (size_t)unit;
        if (fit < (size_t)p->chunk) p->chunk = fit > (size_t)unit ? (int)fit : unit;
    }
    size_t band = 1;
    for (int o = 0; o < p->n_ops; o++)
        if (p->ops[o].kind == OP_CONV && nc_conv_band_floats(&p->ops[o].conv, p->V) > band)
            band = nc_conv_band_floats(&p->ops[o].conv, p->V);
    size_t act;
    int ok = nc_mul_ok(p->act_floats, (size_t)p->chunk, &act);
    ok = ok && (p->packed = alloc_floats(packed_floats)) &&
         (p->taps = malloc((tap_count ? tap_count : 1) * sizeof(int)));
    ok = ok && (p->ws = calloc((size_t)p->threads, sizeof *p->ws));
    for (int t = 0; ok && t < p->threads; t++) {
        workspace *w = &p->ws[t];
        ok = (w->buf[0] = alloc_floats(act)) && (w->buf[1] = alloc_floats(act)) && (w->band = alloc_floats(band)) &&
             (w->input = alloc_floats((nc_input_ws_bytes(m->input.h, m->input.w, p->V) + 3) / 4)) &&
             (w->row = malloc((size_t)p->classes * sizeof(float)));
    }
    if (!ok) { /* the message first: cpu_destroy frees p */
        nc_fail(err, NC_ERR_NOMEM, "out of memory for the cpu plan (%d threads x 2 x %d images x %zu floats)",
                opts->threads > 0 ? opts->threads : omp_get_max_threads(), p->chunk, p->act_floats);
        cpu_destroy(p);
        return NC_ERR_NOMEM;
    }
    fill_ops(p);
    *out = p;
    return NC_OK;
}

/* Writes B images (resized and scaled as the model says) into x, (ceil(B / V), 1, H, W, V); lanes past B are 0. */
static void prepare_chunk(const cpu_plan *p, float *x, void *input_ws, const uint8_t *images, int B, int h, int w) {
    const int V = p->V, H = p->m->input.h, W = p->m->input.w;
    for (int g = 0; g * V < B; g++) {
        const int nb = B - g * V < V ? B - g * V : V;
        nc_input_group(p->isa, x + (size_t)g * H * W * V, images + (size_t)g * V * h * w, nb, h, w, H, W, p->m,
                       input_ws);
    }
}

static void act_run(nc_cpu_isa isa, int kind, float *x, size_t n) {
    switch (isa) {
    case NC_ISA_AVX512: nc_act_avx512(kind, x, x, n); break;
    case NC_ISA_AVX2: nc_act_avx2(kind, x, x, n); break;
    default: nc_act_scalar(kind, x, x, n); break;
    }
}

/* Pooling on G groups: y is (G, C, Ho, Wo, V), x is (G, C, H, W, V); the reference's order of operations. */
static void pool_run(const cpu_op *op, int V, float *y, const float *x, int G) {
    const int C = op->in.c, H = op->in.h, W = op->in.w, Ho = op->out.h, Wo = op->out.w, P = op->P, S = op->S;
    for (size_t gc = 0; gc < (size_t)G * C; gc++)
        for (int h = 0; h < Ho; h++)
            for (int w = 0; w < Wo; w++)
                for (int v = 0; v < V; v++) {
                    const float *xw = x + ((gc * H + (size_t)h * S) * W + (size_t)w * S) * V + v;
                    float acc = op->pool == NC_MAXPOOL ? -INFINITY : 0.0f;
                    for (int r = 0; r < P; r++)
                        for (int q = 0; q < P; q++) {
                            const float e = xw[((size_t)r * W + q) * V];
                            acc = op->pool == NC_MAXPOOL ? (e > acc ? e : acc) : acc + e;
                        }
                    y[((gc * Ho + h) * Wo + w) * V + v] = op->pool == NC_MAXPOOL ? acc : acc / (float)(P * P);
                }
}

/* Softmax over each image's N values in place; x is (G, N, V). The reference's order of operations. */
static void softmax_run(int V, float *x, int G, int N) {
    for (int g = 0; g < G; g++)
        for (int v = 0; v < V; v++) {
            float *xv = x + (size_t)g * N * V + v; /* (N) at stride V */
            float mx = xv[0];
            for (int j = 1; j < N; j++) mx = xv[(size_t)j * V] > mx ? xv[(size_t)j * V] : mx;
            float sum = 0.0f;
            for (int j = 0; j < N; j++) {
                xv[(size_t)j * V] = expf(xv[(size_t)j * V] - mx);
                sum += xv[(size_t)j * V];
            }
            for (int j = 0; j < N; j++) xv[(size_t)j * V] /= sum;
        }
}

/* Runs one op on G groups from x into y (or in place in x); returns the buffer holding its output. */
static float *op_run(const cpu_plan *p, const cpu_op *op, float *y, float *x, float *band, int G) {
    const int V = p->V;
    const size_t in = nc_shape_size(op->in), out = nc_shape_size(op->out);
    switch (op->kind) {
    case OP_CONV:
        for (int g = 0; g < G; g++) {
            float *yg = y + (size_t)g * out * V;
            const float *xg = x + (size_t)g * in * V;
            switch (p->isa) {
            case NC_ISA_AVX512: nc_conv_group_avx512(&op->conv, yg, xg, band); break;
            case NC_ISA_AVX2: nc_conv_group_avx2(&op->conv, yg, xg, band); break;
            default: nc_conv_group_scalar(&op->conv, yg, xg, band); break;
            }
        }
        return y;
    case OP_DENSE: {
        /* Sum of the products in order of k from 0, then the bias: the reference's order. */
        memset(y, 0, (size_t)G * out * V * sizeof *y);
        nc_sgemm_panels(p->isa, (int)out, (int)in, op->ap, G, x, in * V, y, out * V);
        if (op->bias)
            for (int g = 0; g < G; g++)
                for (size_t o = 0; o < out; o++) {
                    float *yo = y + ((size_t)g * out + o) * V; /* (V) */
                    for (int v = 0; v < V; v++) yo[v] += op->bias[o];
                }
        if (op->act >= 0) act_run(p->isa, op->act, y, (size_t)G * out * V);
        return y;
    }
    case OP_POOL: pool_run(op, V, y, x, G); return y;
    case OP_SOFTMAX: softmax_run(V, x, G, (int)out); return x;
    case OP_ACT: act_run(p->isa, op->act, x, (size_t)G * out * V); return x;
    case OP_INPUT: break; /* cpu_run prepares the input, from the images */
    }
    return x;
}

static int cpu_run(void *plan, const uint8_t *images, int n, int h, int w, int *pred, float *logits, nc_timing *t,
                   nc_error *err) {
    (void)err;
    cpu_plan *p = plan;
    const int T = p->threads, V = p->V, per_round = T * p->chunk, rounds = (n + per_round - 1) / per_round;
    memset(p->op_s, 0, sizeof p->op_s);
    t->n_conv = nc_model_num_conv(p->m);
    for (int o = 0; o < p->n_ops; o++)
        if (p->ops[o].kind == OP_CONV) snprintf(t->conv_note[p->ops[o].conv_index], 48, "%s", p->ops[o].note);
#pragma omp parallel num_threads(T)
    {
        const int tid = omp_get_thread_num();
        workspace *ws = &p->ws[tid];
        double t0 = 0.0;
        for (int round = 0; round < rounds; round++) {
            /* A round is a chunk a thread, but the last round's images are shared out evenly, V at a time: with
             * whole chunks the other threads would wait at every barrier of that round for the one or two that got
             * images (10000 images on 2 threads: 256 and 16; on 16 threads, half of them idle). */
            const int r0 = round * per_round, rn = n - r0 < per_round ? n - r0 : per_round;
            const int share = rn == per_round ? p->chunk : ((rn + T - 1) / T + V - 1) / V * V;
            const int i0 = r0 + tid * share, left = rn - tid * share;
            const int B = left <= 0 ? 0 : left < share ? left : share, G = (B + V - 1) / V;
            /* One barrier after each op: it ends that op on every thread and starts the next, so each op's time is
             * the wall time from the barrier before it to the one after it. Op 0 is the input preparation. */
            float *cur = ws->buf[0];
#pragma omp barrier
#pragma omp master
            t0 = nc_now();
            for (int o = 0; o < p->n_ops; o++) {
                float *next = cur == ws->buf[0] ? ws->buf[1] : ws->buf[0];
                if (B && o == 0)
                    prepare_chunk(p, cur, ws->input, images + (size_t)i0 * h * w, B, h, w);
                else if (B)
                    cur = op_run(p, &p->ops[o], next, cur, ws->band, G);
#pragma omp barrier
#pragma omp master
                {
                    const double t1 = nc_now();
                    p->op_s[o] += t1 - t0;
                    t0 = t1;
                }
            }
            for (int b = 0; b < B; b++) {
                const float *src = cur + (size_t)(b / V) * p->classes * V + b % V; /* (classes) at stride V */
                for (int j = 0; j < p->classes; j++) ws->row[j] = src[(size_t)j * V];
                nc_argmax_rows(pred + i0 + b, ws->row, 1, p->classes);
                if (logits) memcpy(logits + (size_t)(i0 + b) * p->classes, ws->row, (size_t)p->classes * sizeof(float));
            }
        }
    }
    for (int o = 0; o < p->n_ops; o++)
        if (p->ops[o].kind == OP_CONV) t->conv_s[p->ops[o].conv_index] = p->op_s[o];
    return NC_OK;
}

int nc_cpu_plan_ops(const void *plan, nc_cpu_op_info *ops, int max) {
    const cpu_plan *p = plan;
    for (int o = 0; o < p->n_ops && o < max; o++) {
        const cpu_op *op = &p->ops[o];
        nc_cpu_op_info *i = &ops[o];
        i->first_layer = op->first_layer;
        i->n_layers = op->n_layers;
        i->conv_index = op->conv_index;
        snprintf(i->name, sizeof i->name, "%s", op->name);
        snprintf(i->note, sizeof i->note, "%s", op->note);
        i->flops = op->flops;
        i->seconds = p->op_s[o];
    }
    return p->n_ops;
}

nc_cpu_isa nc_cpu_plan_isa(const void *plan) {
    return ((const cpu_plan *)plan)->isa;
}
int nc_cpu_plan_threads(const void *plan) {
    return ((const cpu_plan *)plan)->threads;
}
int nc_cpu_plan_chunk(const void *plan) {
    return ((const cpu_plan *)plan)->chunk;
}

const nc_backend nc_backend_cpu = {
    .name = "cpu",
    .description = "fast CPU path: SIMD (AVX-512, AVX2 or portable C, chosen at run time), fused layers, OpenMP",
    .create = cpu_create,
    .run = cpu_run,
    .destroy = cpu_destroy,
};
