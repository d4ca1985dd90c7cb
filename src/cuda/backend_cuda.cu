/*
 * The cuda backend: the whole forward pass on the GPU with our own kernels.
 * The uint8 images go to the device once per chunk and are resized and scaled
 * there; activations stay on the device between layers (two ping-pong
 * buffers, flatten costs nothing); only the predictions (and the logits when
 * asked) come back. The convolution runs the kernel version chosen with
 * --conv-kernel (conv_kernels.cu); its Op Time is measured with CUDA events
 * around that layer alone, summed over the chunks. With version 6 a
 * convolution followed by an activation and/or a pooling it can fuse runs as
 * one kernel (Op Time's note says "fused tanh+maxpool"; the time is then the
 * fused group's), and a first convolution on images of the model's size reads
 * the uint8 pixels straight from the upload buffer. --precision tf32 / 3xtf32 (opts->precision) trade
 * exactness for the tensor cores: one-channel convolutions on versions 7 / 8 (conv_tc.cu, fused likewise; Op
 * Time's note adds "tf32" / "3xtf32") and every dense layer on dense_tc.cu's GEMM.
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "cuda/conv_ladder.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_layers.h"
#include "cuda/gpu_plan.h"

/* Share of the free device memory the activations of one chunk may take. */
#define CUDA_MEMORY_SHARE 0.7

/* Conv versions from which the kernel takes the activation and pooling after a convolution: 6 (conv_direct.cu),
 * 7 and 8 (conv_tc.cu, which leave what they do not take to 6). */
#define CUDA_FUSING_VERSION 6
#define CUDA_FIRST_TC_VERSION 7

typedef struct {
    nc_gpu g;
    int conv_version;
    int precision;                       /* NC_PRECISION_*: of the dense layers (the conv's is its version's) */
    int fused[NC_MAX_LAYERS];            /* per conv layer: how many layers after it its kernel does (0..2) */
    nc_conv_epilogue epi[NC_MAX_LAYERS]; /* what they are */
    char note[NC_MAX_LAYERS][48];        /* Op Time's note of each conv layer, in conv order */
    nc_conv_lut lut;                     /* the model's pixel scaling, for a first layer reading uint8 */
} cuda_plan;

/* Which layers after each convolution the chosen version fuses, and each conv layer's note. */
static void cuda_plan_fusion(cuda_plan *p) {
    const nc_model *m = p->g.m;
    for (int i = 0; i < 256; i++) p->lut.v[i] = nc_scale_pixel(m, (uint8_t)i);
    int conv = 0;
    for (int li = 0; li < m->n_layers; li++) {
        if (m->layers[li].kind != NC_CONV) continue;
        char *note = p->note[conv++];
        snprintf(note, sizeof p->note[0], "%s", nc_cuda_conv_version_note(p->conv_version));
        if (p->conv_version < CUDA_FUSING_VERSION) continue;
        nc_conv_epilogue e = {-1, -1, 1, 1};
        int j = li + 1;
        if (j < m->n_layers && nc_layer_is_activation(m->layers[j].kind)) e.act = (int)m->layers[j++].kind;
        if (j < m->n_layers && (m->layers[j].kind == NC_MAXPOOL || m->layers[j].kind == NC_AVGPOOL))
            e.pool = (int)m->layers[j].kind, e.P = m->layers[j].p, e.S = m->layers[j].s, j++;
        if (j == li + 1 || !nc_conv_direct_fuses(&e, m->layers[li].k)) {
            e.pool = -1; /* the pooling cannot be fused: perhaps the activation alone */
            j = e.act >= 0 ? li + 2 : li + 1;
        }
        if (j == li + 1 || !nc_conv_direct_fuses(&e, m->layers[li].k)) continue;
        p->fused[li] = j - li - 1;
        p->epi[li] = e;
        const nc_layer *l = &m->layers[li];
        const int tc = p->conv_version >= CUDA_FIRST_TC_VERSION &&
                       nc_conv_tc_takes(l->in.c, l->in.h, l->in.w, l->m, l->k, &e); /* else version 6 runs it */
        snprintf(note, sizeof p->note[0], "fused %s%s%s%s%s",
                 e.act >= 0 ? nc_layer_kind_name((nc_layer_kind)e.act) : "", e.act >= 0 && e.pool >= 0 ? "+" : "",
                 e.pool >= 0 ? nc_layer_kind_name((nc_layer_kind)e.pool) : "", tc ? ", " : "",
                 tc ? nc_cuda_conv_version_note(p->conv_version) : "");
    }
    /* The first layer reads the pixels itself where it is a fused convolution. */
    p->g.raw_input = m->n_layers > 0 && m->layers[0].kind == NC_CONV && p->fused[0] > 0;
}

static int cuda_layer(cuda_plan *p, int li, int B, float *y, const float *x, int *conv, nc_error *err) {
    nc_gpu *g = &p->g;
    const nc_layer *l = &g->m->layers[li];
    const size_t n = (size_t)B * nc_shape_size(l->out);
    switch (l->kind) {
    case NC_CONV: {
        int rc = NC_OK;
        CUDA_RET(cudaEventRecord(g->ev[2 * *conv], g->stream));
        if (p->fused[li]) {
            const int u8 = li == 0 && g->in_u8; /* the chunk's pixels, unscaled, in g->img */
            if (p->conv_version >= CUDA_FIRST_TC_VERSION)
                rc = nc_conv_launch_tc(p->conv_version, y, x, u8 ? g->img : NULL, u8 ? &p->lut : NULL, g->weight[li],
                                       g->bias[li], B, l->in.c, l->in.h, l->in.w, l->m, l->k, &p->epi[li], g->stream,
                                       err);
            else
                rc = nc_conv_launch_fused(y, x, u8 ? g->img : NULL, u8 ? &p->lut : NULL, g->weight[li], g->bias[li], B,
                                          l->in.c, l->in.h, l->in.w, l->m, l->k, &p->epi[li], g->stream, err);
        } else {
            rc = nc_cuda_conv_forward(p->conv_version, y, x, g->weight[li], g->bias[li], B, l->in.c, l->in.h,
                                      l->in.w, l->m, l->k, g->stream, err);
        }
        if (rc) return rc;
        CUDA_RET(cudaEventRecord(g->ev[2 * *conv + 1], g->stream));
        ++*conv;
        return NC_OK;
    }
    case NC_TANH:
    case NC_RELU:
    case NC_SIGMOID: return nc_cuda_activation_forward(l->kind, y, x, n, g->stream, err);
    case NC_MAXPOOL:
    case NC_AVGPOOL:
        return nc_cuda_pool_forward(l->kind, y, x, B, l->in.c, l->in.h, l->in.w, l->p, l->s, g->stream, err);
    case NC_DENSE:
        return nc_cuda_dense_tc_forward(p->precision, y, x, g->weight[li], g->bias[li], B, (int)nc_shape_size(l->in),
                                        l->m, g->stream, err); /* fp32: nc_cuda_dense_forward */
    case NC_SOFTMAX: return nc_cuda_softmax_forward(y, x, B, (int)nc_shape_size(l->in), g->stream, err);
    case NC_FLATTEN: break; /* the caller does not swap buffers */
    }
    return NC_OK;
}

static int cuda_forward(void *ctx, nc_gpu *g, int B, int *out, nc_error *err) {
    cuda_plan *p = (cuda_plan *)ctx;
    int cur = 0, conv = 0;
    for (int li = 0; li < g->m->n_layers; li++) {
        if (g->m->layers[li].kind == NC_FLATTEN) continue; /* same memory, (C, H, W) order */
        nvtxRangePushA(g->layer_name[li]);
        const int rc = cuda_layer(p, li, B, g->act[1 - cur], g->act[cur], &conv, err);
        nvtxRangePop();
        if (rc) {
            nc_error_prefix(err, "layer %d (%s)", li, nc_layer_kind_name(g->m->layers[li].kind));
            return rc;
        }
        cur = 1 - cur;
        li += p->fused[li]; /* the activation and pooling its kernel did */
    }
    *out = cur;
    return NC_OK;
}

static void cuda_destroy(void *plan) {
    cuda_plan *p = (cuda_plan *)plan;
    if (!p) return;
    nc_gpu_close(&p->g);
    free(p);
}

/* One image through the whole plan at load time, so that CUDA's lazy module loading happens here and not
 * inside the first timed convolution (it cost 120 ms of a 1 ms Op Time on an H100). */
static int cuda_warm_up(cuda_plan *p, nc_error *err) {
    const int H = p->g.m->input.h, W = p->g.m->input.w;
    uint8_t *img = (uint8_t *)calloc((size_t)H * W, 1); // (1, H, W)
    if (!img) return nc_fail(err, NC_ERR_NOMEM, "out of memory for the warm-up image");
    int pred;
    nc_timing t;
    memset(&t, 0, sizeof t);
    nvtxRangePushA("warm-up");
    const int rc = nc_gpu_run(&p->g, cuda_forward, p, img, 1, H, W, &pred, NULL, &t, err);
    nvtxRangePop();
    free(img);
    return rc;
}

static int cuda_create(void **out, const nc_model *m, const nc_run_opts *opts, nc_error *err) {
    *out = NULL;
    int version = opts->conv_kernel;
    if (opts->precision < NC_PRECISION_FP32 || opts->precision > NC_PRECISION_3XTF32)
        return nc_fail(err, NC_ERR_ARG, "precision %d: expected 0 (fp32), 1 (tf32) or 2 (3xtf32)", opts->precision);
    /* A reduced precision without a version picks its tensor-core version for the convolutions. */
    if (version == 0 && opts->precision == NC_PRECISION_TF32) version = CUDA_FIRST_TC_VERSION;
    if (version == 0 && opts->precision == NC_PRECISION_3XTF32) version = CUDA_FIRST_TC_VERSION + 1;
    int rc = nc_cuda_conv_resolve(&version, err);
    if (rc) return rc;
    cuda_plan *p = (cuda_plan *)calloc(1, sizeof *p);
    if (!p) return nc_fail(err, NC_ERR_NOMEM, "out of memory for the cuda plan");
    p->conv_version = version;
    p->precision = opts->precision;
    if ((rc = nc_gpu_open(&p->g, m, opts, CUDA_MEMORY_SHARE, 0, err)) || (rc = nc_cuda_conv_prepare(version, err))) {
        cuda_destroy(p);
        return rc;
    }
    cuda_plan_fusion(p);
    if ((rc = cuda_warm_up(p, err))) {
        cuda_destroy(p);
        return rc;
    }
    *out = p;
    return NC_OK;
}

static int cuda_run(void *plan, const uint8_t *images, int n, int h, int w, int *pred, float *logits, nc_timing *t,
                    nc_error *err) {
    cuda_plan *p = (cuda_plan *)plan;
    for (int i = 0; i < p->g.n_conv; i++) {
        strncpy(t->conv_note[i], p->note[i], sizeof t->conv_note[i] - 1);
        t->conv_note[i][sizeof t->conv_note[i] - 1] = '\0';
    }
    return nc_gpu_run(&p->g, cuda_forward, p, images, n, h, w, pred, logits, t, err);
}

/* Positional, as C++17 has no designated initialisers: name, description, create, run, destroy. */
extern "C" const nc_backend nc_backend_cuda = {
    "cuda",
    "our own CUDA kernels for every layer (--conv-kernel picks the convolution)",
    cuda_create,
    cuda_run,
    cuda_destroy,
};
