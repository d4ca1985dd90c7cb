/*
 * The cuda backend: the whole forward pass on the GPU with our own kernels.
 * The uint8 images go to the device once per chunk and are resized and scaled
 * there; activations stay on the device between layers (two ping-pong
 * buffers, flatten costs nothing); only the predictions (and the logits when
 * asked) come back. Each convolution runs the kernel version chosen with
 * --conv-kernel (conv_kernels.cu) or, by default, the fastest exact-fp32
 * version for its shape on this GPU (conv_autotune.cu: measured the first
 * time, then cached; Op Time's note names it). Its Op Time is measured with CUDA events
 * around that layer alone, summed over the chunks. With version 6 a
 * convolution followed by an activation and/or a pooling it can fuse runs as
 * one kernel (Op Time's note says "fused tanh+maxpool"; the time is then the
 * fused group's; version 14 fuses likewise), and a first convolution on images of the model's size reads
 * the uint8 pixels straight from the upload buffer. --precision tf32 / 3xtf32 (opts->precision) trade
 * exactness for the tensor cores: the convolutions on versions 7 / 8 (conv_tc.cu, fused likewise; Op
 * Time's note adds "tf32" / "3xtf32") and every dense layer of more than 32 outputs on dense_tc.cu's GEMM
 * (narrower ones stay exact fp32, which is faster there). At fp32 those dense layers run on the int8 tensor cores
 * (dense_i8.cu: operands cut into three 8-bit slices, sums exact in int32, errors below the fp32 sums'), the
 * narrower ones on layers.cu's SIMT kernels; --dense-sums fp32 (opts->dense_sums) keeps every one on those.
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "cuda/conv_autotune.h"
#include "cuda/conv_ladder.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_layers.h"
#include "cuda/gpu_plan.h"

/* Share of the free device memory the activations of one chunk may take. */
#define CUDA_MEMORY_SHARE 0.7

/* The conv versions that take the activation and pooling after a convolution: 6 and 14 (conv_direct.cu: 2 x 2
 * patches, or two rows of four, nc_conv_launch_fused_rows' rows 0 and 2), 15 (conv_wino.cu, rows 3; a layer it does
 * not take runs on 14, cuda_plan_fusion) and the tensor-core ones, 7 to 10 (conv_tc.cu, which leave what they do not
 * take to 6). */
static int version_is_tc(int v) {
    return nc_cuda_conv_version_precision(v) != NC_PRECISION_FP32;
}
static int version_fuses(int v) {
    return nc_conv_fused_rows_of(v) >= 0 || version_is_tc(v);
}

/* How a conv layer runs. */
typedef struct {
    int version;          /* its conv kernel version */
    int fused;            /* how many layers after it its kernel does (0..2) */
    nc_conv_epilogue epi; /* what they are */
    int ran;              /* the version whose kernels run it: version, or 6 where a tensor-core version leaves the
                             layer to version 6 */
    char note[48];        /* Op Time's note */
} cuda_conv;

typedef struct {
    nc_gpu g;
    cuda_conv conv[NC_MAX_LAYERS]; /* per conv layer, by layer index; the first layer's as it reads uint8 pixels where
                                      it fuses (images of the model's size: cuda_conv_of) */
    cuda_conv first_floats;        /* the first layer where it reads floats: images of another size, which the upload
                                      resizes and scales, or a first layer that fuses nothing */
    int warmed[2];                 /* cuda_warm_up has run the first layer on floats [0], on pixels [1] */
    int autotuned;                 /* the versions are the tuner's (--conv-kernel 0, fp32) */
    int precision;                 /* NC_PRECISION_*: of the dense layers (the conv's is its version's) */
    int dense_sums;                /* NC_DENSE_SUMS_*: at fp32, the dense layers on int8 slices or on fp32 sums */
    nc_conv_lut lut;               /* the model's pixel scaling, for a first layer reading uint8 */
    void *dense_w[NC_MAX_LAYERS];  /* per dense layer, its weights prepared for the tensor cores, or NULL */
    void *i8_scratch;              /* the fp32 dense layers' scratch on int8 slices (dense_i8.cu), grown as needed */
    size_t i8_scratch_bytes;
} cuda_plan;

/* How conv layer li runs on a chunk whose first layer reads uint8 pixels (u8) or floats. The tuner times the first
 * layer in both forms, as each may favour another version: the pixels are a quarter of the floats' bytes. */
static const cuda_conv *cuda_conv_of(const cuda_plan *p, int li, int u8) {
    return li == 0 && !u8 ? &p->first_floats : &p->conv[li];
}

/* What version 6 would fuse after conv layer li (activation, pooling): *e, and how many layers that is. */
static int fusable_epilogue(const nc_model *m, int li, nc_conv_epilogue *e) {
    const nc_conv_epilogue none = {-1, -1, 1, 1};
    *e = none;
    int j = li + 1;
    if (j < m->n_layers && nc_layer_is_activation(m->layers[j].kind)) e->act = (int)m->layers[j++].kind;
    if (j < m->n_layers && (m->layers[j].kind == NC_MAXPOOL || m->layers[j].kind == NC_AVGPOOL))
        e->pool = (int)m->layers[j].kind, e->P = m->layers[j].p, e->S = m->layers[j].s, j++;
    if (j == li + 1 || !nc_conv_direct_fuses(e, m->layers[li].k)) {
        e->pool = -1; /* the pooling cannot be fused: perhaps the activation alone */
        j = e->act >= 0 ? li + 2 : li + 1;
    }
    if (j == li + 1 || !nc_conv_direct_fuses(e, m->layers[li].k)) {
        *e = none;
        return 0;
    }
    return j - li - 1;
}

/* Which layers after conv layer li its version fuses, and its Op Time note, as it reads uint8 pixels (u8) or floats. */
static void cuda_plan_conv(const cuda_plan *p, int li, int u8, cuda_conv *c) {
    const nc_model *m = p->g.m;
    const nc_layer *l = &m->layers[li];
    const nc_conv_epilogue none = {-1, -1, 1, 1};
    nc_conv_epilogue e;
    const int f = fusable_epilogue(m, li, &e);
    /* a layer version 15 does not take in this form, fused or alone, runs on version 14 */
    if (c->version == 15 && !nc_conv_wino_takes(l->in.c, l->in.h, l->in.w, l->m, l->k, f ? &e : &none, u8 && f))
        c->version = 14;
    const int v = c->version;
    char tuned[16] = "";
    c->ran = v;
    c->fused = 0;
    c->epi = none;
    if (p->autotuned) snprintf(tuned, sizeof tuned, "auto v%d", v);
    snprintf(c->note, sizeof c->note, "%s%s", nc_cuda_conv_version_note(v), tuned);
    if (!version_fuses(v)) return;
    if (!f) {
        if (version_is_tc(v) && !nc_conv_tc_takes(v, l->in.c, l->in.h, l->in.w, l->m, l->k, &none, 0)) c->ran = 6;
        return;
    }
    c->fused = f;
    c->epi = e;
    const int tc = version_is_tc(v) && nc_conv_tc_takes(v, l->in.c, l->in.h, l->in.w, l->m, l->k, &e, u8);
    if (version_is_tc(v) && !tc) c->ran = 6; /* else version 6 */
    snprintf(c->note, sizeof c->note, "fused %s%s%s%s%s%s%s",
             e.act >= 0 ? nc_layer_kind_name((nc_layer_kind)e.act) : "", e.act >= 0 && e.pool >= 0 ? "+" : "",
             e.pool >= 0 ? nc_layer_kind_name((nc_layer_kind)e.pool) : "", tc ? ", " : "",
             tc ? nc_cuda_conv_version_note(v) : "", *tuned ? ", " : "", tuned);
}

/* Every conv layer's plan; the first layer's in both forms. */
static void cuda_plan_fusion(cuda_plan *p) {
    const nc_model *m = p->g.m;
    for (int li = 0; li < m->n_layers; li++)
        if (m->layers[li].kind == NC_CONV) cuda_plan_conv(p, li, li == 0, &p->conv[li]);
    if (m->n_layers > 0 && m->layers[0].kind == NC_CONV) cuda_plan_conv(p, 0, 0, &p->first_floats);
    /* The first layer reads the pixels itself where it is a fused convolution. */
    p->g.raw_input = m->n_layers > 0 && m->layers[0].kind == NC_CONV && p->conv[0].fused > 0;
}

/* An fp32 dense layer on int8 slices (dense_i8.cu), its scratch grown to what B rows need (once a chunk size: the
 * stream is waited for before the old one is freed). */
static int cuda_dense_i8(cuda_plan *p, int li, float *y, const float *x, int B, nc_error *err) {
    nc_gpu *g = &p->g;
    const nc_layer *l = &g->m->layers[li];
    const int IN = (int)nc_shape_size(l->in);
    size_t need = 0;
    int rc = nc_cuda_dense_i8_scratch_size(&need, B, IN, l->m, 0, NC_DENSE_I8_AUTO, err);
    if (rc) return rc;
    if (need > p->i8_scratch_bytes) {
        CUDA_RET(cudaStreamSynchronize(g->stream));
        cudaFree(p->i8_scratch);
        p->i8_scratch = NULL;
        p->i8_scratch_bytes = 0;
        CUDA_RET(cudaMalloc(&p->i8_scratch, need));
        p->i8_scratch_bytes = need;
    }
    return nc_cuda_dense_i8_forward_prepared(y, x, p->dense_w[li], g->bias[li], B, IN, l->m, p->i8_scratch,
                                             p->i8_scratch_bytes, 0, NC_DENSE_I8_AUTO, g->stream, err);
}

static int cuda_layer(cuda_plan *p, int li, int B, float *y, const float *x, nc_error *err) {
    nc_gpu *g = &p->g;
    const nc_layer *l = &g->m->layers[li];
    const size_t n = (size_t)B * nc_shape_size(l->out);
    switch (l->kind) {
    case NC_CONV: {
        int rc = NC_OK;
        const int c = g->conv_of[li];
        const int u8 = li == 0 && g->in_u8; /* the chunk's pixels, unscaled, in g->img */
        const cuda_conv *cv = cuda_conv_of(p, li, g->in_u8);
        CUDA_RET(cudaEventRecord(g->ev[2 * c], g->stream));
        if (cv->fused) {
            if (version_is_tc(cv->version))
                rc = nc_conv_launch_tc(cv->version, y, x, u8 ? g->img : NULL, u8 ? &p->lut : NULL, g->weight[li],
                                       g->bias[li], B, l->in.c, l->in.h, l->in.w, l->m, l->k, &cv->epi, g->stream, err);
            else
                rc = nc_conv_launch_fused_rows(y, x, u8 ? g->img : NULL, u8 ? &p->lut : NULL, g->weight[li],
                                               g->bias[li], B, l->in.c, l->in.h, l->in.w, l->m, l->k, &cv->epi,
                                               nc_conv_fused_rows_of(cv->version), g->stream, err);
        } else {
            rc = nc_cuda_conv_forward(cv->version, y, x, g->weight[li], g->bias[li], B, l->in.c, l->in.h, l->in.w, l->m,
                                      l->k, g->stream, err);
        }
        if (rc) return rc;
        CUDA_RET(cudaEventRecord(g->ev[2 * c + 1], g->stream));
        return NC_OK;
    }
    case NC_TANH:
    case NC_RELU:
    case NC_SIGMOID: return nc_cuda_activation_forward(l->kind, y, x, n, g->stream, err);
    case NC_MAXPOOL:
    case NC_AVGPOOL:
        return nc_cuda_pool_forward(l->kind, y, x, B, l->in.c, l->in.h, l->in.w, l->p, l->s, g->stream, err);
    case NC_DENSE:
        if (!p->dense_w[li]) /* a layer too narrow for the tensor cores, or too wide for int8 slices */
            return nc_cuda_dense_forward(y, x, g->weight[li], g->bias[li], B, (int)nc_shape_size(l->in), l->m,
                                         g->stream, err);
        if (p->precision == NC_PRECISION_FP32) return cuda_dense_i8(p, li, y, x, B, err);
        return nc_cuda_dense_tc_forward_prepared(p->precision, y, x, p->dense_w[li], g->bias[li], B,
                                                 (int)nc_shape_size(l->in), l->m, g->stream, err);
    case NC_SOFTMAX: return nc_cuda_softmax_forward(y, x, B, (int)nc_shape_size(l->in), g->stream, err);
    case NC_FLATTEN: break; /* the caller does not swap buffers */
    }
    return NC_OK;
}

static int cuda_forward(void *ctx, nc_gpu *g, int from, int to, size_t i0, int B, int *cur, nc_error *err) {
    cuda_plan *p = (cuda_plan *)ctx;
    const nc_model *m = g->m;
    for (int li = from; li < to; li++) {
        if (m->layers[li].kind == NC_FLATTEN) continue; /* same memory, (C, H, W) order */
        const int fused = m->layers[li].kind == NC_CONV ? cuda_conv_of(p, li, g->in_u8)->fused : 0;
        const size_t out = nc_shape_size(m->layers[li + fused].out), in = nc_shape_size(m->layers[li].in);
        nvtxRangePushA(g->layer_name[li]);
        const int rc = cuda_layer(p, li, B, g->act[1 - *cur] + i0 * out, g->act[*cur] + i0 * in, err);
        nvtxRangePop();
        if (rc) {
            nc_error_prefix(err, "layer %d (%s)", li, nc_layer_kind_name(m->layers[li].kind));
            return rc;
        }
        *cur = 1 - *cur;
        li += fused; /* the activation and pooling its kernel did */
    }
    return NC_OK;
}

/* Outputs a dense layer needs for the tensor cores to pay. Narrower ones (the zoo's last layers, 10 and 32 wide) fill
 * at most a quarter of the GEMM's 128 columns, and the SIMT fp32 kernel was faster on every one of them at every
 * precision (the 2017 model's 500x10 layer at N = 10000: 0.021 ms against 0.029 at tf32 and 0.038 at 3xtf32); on
 * every layer of 140 outputs or more it was slower (bench of 2026-11-26 03:28, H100). The int8 slices at fp32 likewise
 * (H200, 2026-11-28: 1024x32 0.063 against 0.037, 500x10 0.045 against 0.021; 1296x140 0.112 against 0.119, and
 * 1.4 to 2.9 times as fast on the wider zoo layers). */
#define DENSE_TC_MIN_OUT 33

/* The dense layers' weights prepared once, for layers of DENSE_TC_MIN_OUT outputs or more (the others run on
 * layers.cu's SIMT kernels: dense_w stays NULL): at fp32 cut into int8 slices (dense_i8.cu; a layer of more than
 * NC_DENSE_I8_MAX_IN inputs, and every layer under --dense-sums fp32, stays on the SIMT kernels), at the reduced
 * precisions in the tensor cores' format (dense_tc.cu). Which kernel runs a layer depends on its shape only, never on
 * B, so that a row of logits is the same bits in a chunk of any size. */
static int cuda_prepare_dense(cuda_plan *p, nc_error *err) {
    const nc_model *m = p->g.m;
    for (int li = 0; li < m->n_layers; li++) {
        const nc_layer *l = &m->layers[li];
        if (l->kind != NC_DENSE || l->m < DENSE_TC_MIN_OUT) continue;
        const int IN = (int)nc_shape_size(l->in);
        int rc;
        if (p->precision == NC_PRECISION_FP32) {
            if (IN > NC_DENSE_I8_MAX_IN || p->dense_sums == NC_DENSE_SUMS_FP32) continue;
            CUDA_RET(cudaMalloc(&p->dense_w[li], nc_cuda_dense_i8_prepared_size(IN, l->m)));
            rc = nc_cuda_dense_i8_prepare(p->dense_w[li], p->g.weight[li], IN, l->m, p->g.stream, err);
        } else {
            CUDA_RET(cudaMalloc(&p->dense_w[li], nc_cuda_dense_tc_prepared_size(p->precision, IN, l->m)));
            rc = nc_cuda_dense_tc_prepare(p->precision, p->dense_w[li], p->g.weight[li], IN, l->m, p->g.stream, err);
        }
        if (rc) return rc;
    }
    return NC_OK;
}

static void cuda_destroy(void *plan) {
    cuda_plan *p = (cuda_plan *)plan;
    if (!p) return;
    for (int li = 0; li < NC_MAX_LAYERS; li++)
        if (p->dense_w[li]) cudaFree(p->dense_w[li]);
    cudaFree(p->i8_scratch);
    nc_gpu_close(&p->g);
    free(p);
}

/* One image through the whole plan before the first run of a form (the first layer on pixels or on floats: each has
 * its own kernels), so that CUDA's lazy loading of the kernels happens there and not inside the first timed
 * convolution (it cost 120 ms of a 1 ms Op Time on an H100). Floats where the first layer reads pixels: an image one
 * pixel larger than the model's, which the upload resizes. */
static int cuda_warm_up(cuda_plan *p, int u8, nc_error *err) {
    if (p->warmed[u8]) return NC_OK;
    const int grow = !u8 && p->g.raw_input, H = p->g.m->input.h + grow, W = p->g.m->input.w + grow;
    uint8_t *img = (uint8_t *)calloc((size_t)H * W, 1); // (1, H, W)
    if (!img) return nc_fail(err, NC_ERR_NOMEM, "out of memory for the warm-up image");
    int pred;
    nc_timing t;
    memset(&t, 0, sizeof t);
    nvtxRangePushA("warm-up");
    const int rc = nc_gpu_run(&p->g, cuda_forward, p, img, 1, H, W, &pred, NULL, &t, err);
    nvtxRangePop();
    free(img);
    p->warmed[u8] = !rc;
    return rc;
}

/* The tensor-core conv version of each reduced precision (none for fp32). */
static int precision_version(int precision) {
    switch (precision) {
    case NC_PRECISION_TF32: return 7;
    case NC_PRECISION_3XTF32: return 8;
    case NC_PRECISION_FP16: return 9;
    case NC_PRECISION_BF16: return 10;
    default: return 0;
    }
}

/* Each conv layer's version: --conv-kernel's, else a reduced precision's, else the tuner's pick for its shape. */
static int cuda_choose_versions(cuda_plan *p, int asked, nc_error *err) {
    const nc_model *m = p->g.m;
    int version = asked ? asked : precision_version(p->precision);
    if (version) {
        int rc = nc_cuda_conv_resolve(&version, err);
        if (rc || (rc = nc_cuda_conv_prepare(version, err))) return rc;
        for (int li = 0; li < m->n_layers; li++) p->conv[li].version = version;
        p->first_floats.version = version;
        return NC_OK;
    }
    /* Each conv layer as nc_gpu_run gives it its input; a fused first layer twice: on pixels of the model's own size,
     * unscaled, and on floats (images of another size, resized and scaled by the upload). */
    nc_conv_tune_layer layers[NC_MAX_LAYERS + 1];
    nc_conv_tune_result picked[NC_MAX_LAYERS + 1];
    int n = 0;
    for (int li = 0; li < m->n_layers; li++) {
        if (m->layers[li].kind != NC_CONV) continue;
        nc_conv_tune_layer *t = &layers[n++];
        t->li = li;
        t->fused_layers = fusable_epilogue(m, li, &t->epi);
        t->u8 = 0;
        t->lut = &p->lut;
        if (li == 0 && t->fused_layers > 0) {
            layers[n] = *t;
            layers[n++].u8 = 1;
        }
    }
    int rc = nc_conv_autotune(&p->g, layers, n, picked, err);
    for (int i = 0; !rc && i < n; i++) {
        const int li = layers[i].li, v = picked[i].version;
        if ((rc = nc_cuda_conv_prepare(v, err))) break;
        if (li != 0 || layers[i].u8) {
            p->conv[li].version = v;
        } else { /* the first layer on floats; where it fuses nothing, its only form (conv[0] too, as with a version
                    given: cuda_plan_fusion plans both) */
            p->first_floats.version = v;
            if (layers[i].fused_layers == 0) p->conv[0].version = v;
        }
    }
    p->autotuned = 1;
    return rc;
}

static int cuda_create(void **out, const nc_model *m, const nc_run_opts *opts, nc_error *err) {
    *out = NULL;
    if (opts->precision < NC_PRECISION_FP32 || opts->precision >= NC_PRECISION_COUNT)
        return nc_fail(err, NC_ERR_ARG, "precision %d: expected 0 (fp32), 1 (tf32), 2 (3xtf32), 3 (fp16) or 4 (bf16)",
                       opts->precision);
    if (opts->dense_sums != NC_DENSE_SUMS_SLICES && opts->dense_sums != NC_DENSE_SUMS_FP32)
        return nc_fail(err, NC_ERR_ARG, "dense_sums %d: expected 0 (int8 slices) or 1 (fp32)", opts->dense_sums);
    if (opts->conv_kernel) { /* said before any GPU work */
        int version = opts->conv_kernel;
        const int rc = nc_cuda_conv_resolve(&version, err);
        if (rc) return rc;
    }
    cuda_plan *p = (cuda_plan *)calloc(1, sizeof *p);
    if (!p) return nc_fail(err, NC_ERR_NOMEM, "out of memory for the cuda plan");
    p->precision = opts->precision;
    p->dense_sums = opts->dense_sums;
    for (int i = 0; i < 256; i++) p->lut.v[i] = nc_scale_pixel(m, (uint8_t)i);
    int rc = nc_gpu_open(&p->g, m, opts, CUDA_MEMORY_SHARE, 0, err);
    if (!rc) rc = cuda_choose_versions(p, opts->conv_kernel, err);
    if (!rc) rc = cuda_prepare_dense(p, err);
    if (!rc) cuda_plan_fusion(p);
    if (rc) {
        cuda_destroy(p);
        return rc;
    }
    *out = p;
    return NC_OK;
}

static int cuda_run(void *plan, const uint8_t *images, int n, int h, int w, int *pred, float *logits, nc_timing *t,
                    nc_error *err) {
    cuda_plan *p = (cuda_plan *)plan;
    const nc_model *m = p->g.m;
    const int u8 = nc_gpu_reads_pixels(&p->g, h, w);
    const int rc = cuda_warm_up(p, u8, err);
    if (rc) return rc;
    for (int li = 0; li < m->n_layers; li++) {
        if (m->layers[li].kind != NC_CONV) continue;
        const cuda_conv *cv = cuda_conv_of(p, li, u8);
        const int i = p->g.conv_of[li];
        strncpy(t->conv_note[i], cv->note, sizeof t->conv_note[i] - 1);
        t->conv_note[i][sizeof t->conv_note[i] - 1] = '\0';
        t->conv_version[i] = cv->ran;
    }
    return nc_gpu_run(&p->g, cuda_forward, p, images, n, h, w, pred, logits, t, err);
}

/* Positional, as C++17 has no designated initialisers: name, description, create, run, destroy, device_count,
 * reduced_precision. */
extern "C" const nc_backend nc_backend_cuda = {
    "cuda",       "our own CUDA kernels for every layer (--conv-kernel picks the convolution)",
    cuda_create,  cuda_run,
    cuda_destroy, nc_gpu_device_count,
    1,
};
