/*
 * The model graph: parsing the architecture text, shape inference, parameter
 * layout, seeded initialisation and the per-layer summary.
 *
 * Architecture grammar (tokens are separated by blanks; layers by ';'):
 *   input  := DIMS SCALING
 *   DIMS   := C 'x' H 'x' W            e.g. "1x28x28"; each 1..4096, no blanks inside
 *   SCALING:= 'raw' | 'unit' | 'norm' MEAN STD   (MEAN finite, STD finite and > 0)
 *   layers := LAYER (';' LAYER)*       1..NC_MAX_LAYERS layers, none empty (no trailing ';')
 *   LAYER  := 'conv' M K ['bias']      M 1..65536, K 1..64; valid, stride 1, no padding
 *           | 'tanh' | 'relu' | 'sigmoid'
 *           | 'maxpool' P S | 'avgpool' P S    P, S 1..4096; out = (H - P) / S + 1, floor
 *           | 'flatten'                (C, H, W) -> (C*H*W, 1, 1)
 *           | 'dense' N ['bias']       N 1..65536; needs a flattened input
 *           | 'softmax'                last layer only, on a flattened input
 * Numbers are plain decimal digits (no sign). conv and pool need an unflattened
 * input; flatten on a flattened input is a no-op. Keywords are lower case, as
 * nc_model_layers_text writes them, so that text round-trips exactly.
 */
#include "core/model.h"

#include "core/error.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NC_MAX_DIM 4096  /* input C, H, W and pool P, S */
#define NC_MAX_OUT 65536 /* conv M and dense N */
#define NC_MAX_K 64      /* conv K */
#define NC_MAX_TOKENS 8  /* more than any layer needs, so extra tokens can be named */

static const char *const kind_names[] = {
    [NC_CONV] = "conv",       [NC_TANH] = "tanh",       [NC_RELU] = "relu",
    [NC_SIGMOID] = "sigmoid", [NC_MAXPOOL] = "maxpool", [NC_AVGPOOL] = "avgpool",
    [NC_FLATTEN] = "flatten", [NC_DENSE] = "dense",     [NC_SOFTMAX] = "softmax",
};
#define NC_N_KINDS ((int)(sizeof kind_names / sizeof kind_names[0]))

const char *nc_layer_kind_name(nc_layer_kind k) {
    if ((int)k < 0 || (int)k >= NC_N_KINDS) return "?";
    return kind_names[k];
}

int nc_layer_is_activation(nc_layer_kind k) {
    return k == NC_TANH || k == NC_RELU || k == NC_SIGMOID;
}

/* ------------------------------------------------------------- tokenizer */

/* A token is a slice of the text (not NUL-terminated). */
typedef struct {
    const char *s;
    int len;
} token;

static int is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Splits [s, end) at blanks into at most max tokens; returns how many there were (may exceed max). */
static int tokenize(const char *s, const char *end, token *tok, int max) {
    int n = 0;
    while (s < end) {
        while (s < end && is_blank(*s)) s++;
        if (s == end) break;
        const char *b = s;
        while (s < end && !is_blank(*s)) s++;
        if (n < max) tok[n] = (token){b, (int)(s - b)};
        n++;
    }
    return n;
}

static int tok_is(token t, const char *word) {
    size_t n = strlen(word);
    return (size_t)t.len == n && memcmp(t.s, word, n) == 0;
}

/* Parses a positive decimal integer of at most max; returns 0 on anything else (sign, junk, zero, too big). */
static int parse_pos_int(const char *s, int len, int max, int *out) {
    if (len <= 0) return 0;
    long v = 0;
    for (int i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i])) return 0;
        v = v * 10 + (s[i] - '0');
        if (v > max) return 0;
    }
    if (v < 1) return 0;
    *out = (int)v;
    return 1;
}

/* Parses a float token with strtof; the whole token must be consumed and the value finite. */
static int parse_float(token t, float *out) {
    char buf[64];
    if (t.len <= 0 || t.len >= (int)sizeof buf) return 0;
    memcpy(buf, t.s, (size_t)t.len);
    buf[t.len] = '\0';
    char *end;
    float v = strtof(buf, &end);
    if (end != buf + t.len || !isfinite(v)) return 0;
    *out = v;
    return 1;
}

/* ----------------------------------------------------------------- input */

static int parse_input(nc_model *m, const char *text, nc_error *err) {
    if (!text) return nc_fail(err, NC_ERR_FORMAT, "input: no input description (expected e.g. '1x28x28 raw')");
    token t[NC_MAX_TOKENS];
    int n = tokenize(text, text + strlen(text), t, NC_MAX_TOKENS);
    if (n == 0) return nc_fail(err, NC_ERR_FORMAT, "input: empty (expected e.g. '1x28x28 raw')");

    /* "CxHxW": three positive integers joined by 'x'. */
    int dims[3];
    const char *p = t[0].s, *end = t[0].s + t[0].len;
    for (int d = 0; d < 3; d++) {
        const char *q = p;
        while (q < end && *q != 'x') q++;
        if ((d < 2 && q == end) || (d == 2 && q != end) || !parse_pos_int(p, (int)(q - p), NC_MAX_DIM, &dims[d]))
            return nc_fail(err, NC_ERR_FORMAT, "input: bad shape '%.*s' (expected CxHxW, each 1..%d)", t[0].len, t[0].s,
                           NC_MAX_DIM);
        if (d < 2) p = q + 1;
    }
    m->input = (nc_shape){dims[0], dims[1], dims[2]};
    if (nc_shape_size(m->input) > (size_t)INT_MAX)
        return nc_fail(err, NC_ERR_FORMAT, "input: %dx%dx%d has too many elements per image", dims[0], dims[1],
                       dims[2]);

    if (n < 2)
        return nc_fail(err, NC_ERR_FORMAT, "input: missing scaling after '%.*s' (raw, unit or norm MEAN STD)", t[0].len,
                       t[0].s);
    int want = 2;
    if (tok_is(t[1], "raw")) {
        m->scaling = NC_SCALE_RAW;
    } else if (tok_is(t[1], "unit")) {
        m->scaling = NC_SCALE_UNIT;
    } else if (tok_is(t[1], "norm")) {
        m->scaling = NC_SCALE_NORM;
        want = 4;
        if (n < 4) return nc_fail(err, NC_ERR_FORMAT, "input: norm needs MEAN and STD");
        if (!parse_float(t[2], &m->mean))
            return nc_fail(err, NC_ERR_FORMAT, "input: bad norm mean '%.*s'", t[2].len, t[2].s);
        if (!parse_float(t[3], &m->std) || !(m->std > 0.0f))
            return nc_fail(err, NC_ERR_FORMAT, "input: bad norm std '%.*s' (must be a positive number)", t[3].len,
                           t[3].s);
    } else {
        return nc_fail(err, NC_ERR_FORMAT, "input: unknown scaling '%.*s' (raw, unit or norm MEAN STD)", t[1].len,
                       t[1].s);
    }
    if (n > want)
        return nc_fail(err, NC_ERR_FORMAT, "input: unexpected '%.*s' after the scaling", t[want].len, t[want].s);
    return NC_OK;
}

/* ---------------------------------------------------------------- layers */

/* Parses one layer's tokens (no shapes yet). */
static int parse_layer(nc_layer *l, int i, const token *t, int n, nc_error *err) {
    memset(l, 0, sizeof *l);
    if (n == 0) return nc_fail(err, NC_ERR_FORMAT, "layer %d: empty (two ';' in a row or a trailing ';')", i);
    if (n > NC_MAX_TOKENS) n = NC_MAX_TOKENS; /* the extra-token check below names the first extra one */
    int k;
    for (k = 0; k < NC_N_KINDS; k++)
        if (tok_is(t[0], kind_names[k])) break;
    if (k == NC_N_KINDS) return nc_fail(err, NC_ERR_FORMAT, "layer %d: unknown layer '%.*s'", i, t[0].len, t[0].s);
    l->kind = (nc_layer_kind)k;

    int used = 1;
    switch (l->kind) {
    case NC_CONV:
        if (n < 3) return nc_fail(err, NC_ERR_FORMAT, "layer %d: conv needs M and K (e.g. 'conv 50 5')", i);
        if (!parse_pos_int(t[1].s, t[1].len, NC_MAX_OUT, &l->m))
            return nc_fail(err, NC_ERR_FORMAT, "layer %d: conv M '%.*s' is not an integer in 1..%d", i, t[1].len,
                           t[1].s, NC_MAX_OUT);
        if (!parse_pos_int(t[2].s, t[2].len, NC_MAX_K, &l->k))
            return nc_fail(err, NC_ERR_FORMAT, "layer %d: conv K '%.*s' is not an integer in 1..%d", i, t[2].len,
                           t[2].s, NC_MAX_K);
        used = 3;
        if (n > 3 && tok_is(t[3], "bias")) {
            l->has_bias = 1;
            used = 4;
        }
        break;
    case NC_DENSE:
        if (n < 2) return nc_fail(err, NC_ERR_FORMAT, "layer %d: dense needs N (e.g. 'dense 10 bias')", i);
        if (!parse_pos_int(t[1].s, t[1].len, NC_MAX_OUT, &l->m))
            return nc_fail(err, NC_ERR_FORMAT, "layer %d: dense N '%.*s' is not an integer in 1..%d", i, t[1].len,
                           t[1].s, NC_MAX_OUT);
        used = 2;
        if (n > 2 && tok_is(t[2], "bias")) {
            l->has_bias = 1;
            used = 3;
        }
        break;
    case NC_MAXPOOL:
    case NC_AVGPOOL:
        if (n < 3)
            return nc_fail(err, NC_ERR_FORMAT, "layer %d: %s needs P and S (e.g. '%s 2 2')", i, kind_names[k],
                           kind_names[k]);
        if (!parse_pos_int(t[1].s, t[1].len, NC_MAX_DIM, &l->p))
            return nc_fail(err, NC_ERR_FORMAT, "layer %d: %s P '%.*s' is not an integer in 1..%d", i, kind_names[k],
                           t[1].len, t[1].s, NC_MAX_DIM);
        if (!parse_pos_int(t[2].s, t[2].len, NC_MAX_DIM, &l->s))
            return nc_fail(err, NC_ERR_FORMAT, "layer %d: %s S '%.*s' is not an integer in 1..%d", i, kind_names[k],
                           t[2].len, t[2].s, NC_MAX_DIM);
        used = 3;
        break;
    default: break;
    }
    if (n > used)
        return nc_fail(err, NC_ERR_FORMAT, "layer %d: unexpected '%.*s' after %s", i, t[used].len, t[used].s,
                       kind_names[k]);
    return NC_OK;
}

/* Infers layer i's output shape from its input, or says why it cannot run on that input.
 * flat: whether the input has been flattened (by a flatten layer, possibly followed by dense/activations). */
static int infer_shape(nc_layer *l, int i, int last, int *flat, nc_error *err) {
    nc_shape in = l->in;
    switch (l->kind) {
    case NC_CONV:
        if (*flat)
            return nc_fail(err, NC_ERR_MISMATCH, "layer %d: conv after flatten (input %dx%dx%d)", i, in.c, in.h, in.w);
        if (l->k > in.h || l->k > in.w)
            return nc_fail(err, NC_ERR_MISMATCH, "layer %d: conv kernel %d is larger than its input %dx%dx%d", i, l->k,
                           in.c, in.h, in.w);
        l->out = (nc_shape){l->m, in.h - l->k + 1, in.w - l->k + 1};
        break;
    case NC_MAXPOOL:
    case NC_AVGPOOL:
        if (*flat)
            return nc_fail(err, NC_ERR_MISMATCH, "layer %d: %s after flatten (input %dx%dx%d)", i, kind_names[l->kind],
                           in.c, in.h, in.w);
        if (l->p > in.h || l->p > in.w)
            return nc_fail(err, NC_ERR_MISMATCH, "layer %d: %s window %d is larger than its input %dx%dx%d", i,
                           kind_names[l->kind], l->p, in.c, in.h, in.w);
        l->out = (nc_shape){in.c, (in.h - l->p) / l->s + 1, (in.w - l->p) / l->s + 1};
        break;
    case NC_FLATTEN:
        *flat = 1;
        l->out = (nc_shape){(int)nc_shape_size(in), 1, 1};
        break;
    case NC_DENSE:
        if (!*flat)
            return nc_fail(err, NC_ERR_MISMATCH,
                           "layer %d: dense needs a flattened input; add 'flatten' before it (input %dx%dx%d)", i, in.c,
                           in.h, in.w);
        l->out = (nc_shape){l->m, 1, 1};
        break;
    case NC_SOFTMAX:
        if (!last) return nc_fail(err, NC_ERR_MISMATCH, "layer %d: softmax must be the last layer", i);
        if (!*flat)
            return nc_fail(err, NC_ERR_MISMATCH,
                           "layer %d: softmax needs a flattened input; add 'flatten' before it (input %dx%dx%d)", i,
                           in.c, in.h, in.w);
        l->out = in;
        break;
    default: /* activations keep the shape */ l->out = in; break;
    }
    /* Backends index a whole image with int; every shape above has positive dims. */
    if (nc_shape_size(l->out) > (size_t)INT_MAX)
        return nc_fail(err, NC_ERR_MISMATCH, "layer %d: output %dx%dx%d has too many elements per image", i, l->out.c,
                       l->out.h, l->out.w);
    return NC_OK;
}

size_t nc_layer_weight_count(const nc_layer *l) {
    switch (l->kind) {
    case NC_CONV: return (size_t)l->m * (size_t)l->in.c * (size_t)l->k * (size_t)l->k;
    case NC_DENSE: return (size_t)l->m * nc_shape_size(l->in);
    default: return 0;
    }
}

size_t nc_layer_bias_count(const nc_layer *l) {
    return ((l->kind == NC_CONV || l->kind == NC_DENSE) && l->has_bias) ? (size_t)l->m : 0;
}

/* Weight count with overflow checking (nc_layer_weight_count assumes a model that was built). */
static int weight_count_ok(const nc_layer *l, size_t *out) {
    size_t a;
    *out = 0;
    switch (l->kind) {
    case NC_CONV: return nc_mul_ok((size_t)l->m, (size_t)l->in.c, &a) && nc_mul_ok(a, (size_t)l->k * (size_t)l->k, out);
    case NC_DENSE: return nc_mul_ok((size_t)l->m, nc_shape_size(l->in), out);
    default: return 1;
    }
}

int nc_model_build(nc_model **out, const char *name, const char *input_text, const char *layers_text, nc_error *err) {
    int rc = nc_model_parse(out, name, input_text, layers_text, err);
    if (!rc && (rc = nc_model_alloc_params(*out, err))) {
        nc_model_free(*out);
        *out = NULL;
    }
    return rc;
}

int nc_model_parse(nc_model **out, const char *name, const char *input_text, const char *layers_text, nc_error *err) {
    *out = NULL;
    nc_model *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "cannot allocate the model");
    nc_plain_text(m->name, sizeof m->name, name ? name : "model"); /* printed as it is by eval, info, ... */

    int rc = parse_input(m, input_text, err);
    if (rc) goto fail;
    if (!layers_text) {
        rc = nc_fail(err, NC_ERR_FORMAT, "layers: no layer list");
        goto fail;
    }

    /* Split at ';' and parse each layer. */
    const char *p = layers_text;
    int n = 0;
    for (;;) {
        const char *e = strchr(p, ';');
        if (!e) e = p + strlen(p);
        if (n == NC_MAX_LAYERS) {
            rc = nc_fail(err, NC_ERR_FORMAT, "layer %d: too many layers (at most %d)", n, NC_MAX_LAYERS);
            goto fail;
        }
        token t[NC_MAX_TOKENS];
        int nt = tokenize(p, e, t, NC_MAX_TOKENS);
        if (nt == 0 && n == 0 && *e == '\0') {
            rc = nc_fail(err, NC_ERR_FORMAT, "layers: no layers");
            goto fail;
        }
        rc = parse_layer(&m->layers[n], n, t, nt, err);
        if (rc) goto fail;
        n++;
        if (*e == '\0') break;
        p = e + 1;
    }
    m->n_layers = n;

    /* Shape inference and parameter count, layer by layer. */
    nc_shape cur = m->input;
    int flat = 0;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        nc_layer *l = &m->layers[i];
        l->in = cur;
        rc = infer_shape(l, i, i == n - 1, &flat, err);
        if (rc) goto fail;
        cur = l->out;
        size_t w;
        if (!weight_count_ok(l, &w) || w > SIZE_MAX / sizeof(float) - total ||
            nc_layer_bias_count(l) > SIZE_MAX / sizeof(float) - total - w) {
            rc = nc_fail(err, NC_ERR_MISMATCH, "layer %d: parameter count overflows", i);
            goto fail;
        }
        total += w + nc_layer_bias_count(l);
    }

    m->n_params = total;
    *out = m;
    return NC_OK;

fail:
    nc_model_free(m);
    return rc;
}

int nc_model_alloc_params(nc_model *m, nc_error *err) {
    /* One allocation for every parameter: layer 0's weight, its bias, layer 1's weight, ... in order. */
    const size_t total = m->n_params;
    m->params = malloc(total ? total * sizeof(float) : 1);
    if (!m->params)
        return nc_fail(err, NC_ERR_NOMEM, "cannot allocate %zu parameters (%zu bytes)", total, total * sizeof(float));
    float *q = m->params;
    for (int i = 0; i < m->n_layers; i++) {
        nc_layer *l = &m->layers[i];
        size_t w = nc_layer_weight_count(l), b = nc_layer_bias_count(l);
        l->weight = w ? q : NULL;
        q += w;
        l->bias = b ? q : NULL;
        q += b;
    }
    return NC_OK;
}

void nc_model_free(nc_model *m) {
    if (!m) return;
    free(m->params);
    free(m);
}

const char *nc_model_name(const nc_model *m) {
    return m->name;
}

int nc_model_num_classes(const nc_model *m) {
    nc_shape s = m->n_layers ? m->layers[m->n_layers - 1].out : m->input;
    return (int)nc_shape_size(s);
}

int nc_model_num_conv(const nc_model *m) {
    int n = 0;
    for (int i = 0; i < m->n_layers; i++) n += m->layers[i].kind == NC_CONV;
    return n;
}

/* ------------------------------------------------------------ text back */

void nc_model_input_text(const nc_model *m, char *buf, size_t n) {
    if (n == 0) return;
    const nc_shape s = m->input;
    switch (m->scaling) {
    case NC_SCALE_UNIT: snprintf(buf, n, "%dx%dx%d unit", s.c, s.h, s.w); break;
    /* %.9g keeps every bit of a float, so strtof gives back the same value. */
    case NC_SCALE_NORM:
        snprintf(buf, n, "%dx%dx%d norm %.9g %.9g", s.c, s.h, s.w, (double)m->mean, (double)m->std);
        break;
    default: snprintf(buf, n, "%dx%dx%d raw", s.c, s.h, s.w); break;
    }
}

/* One layer as text, e.g. "conv 50 5 bias". */
static void layer_text(const nc_layer *l, char *buf, size_t n) {
    const char *name = nc_layer_kind_name(l->kind);
    switch (l->kind) {
    case NC_CONV: snprintf(buf, n, "%s %d %d%s", name, l->m, l->k, l->has_bias ? " bias" : ""); break;
    case NC_DENSE: snprintf(buf, n, "%s %d%s", name, l->m, l->has_bias ? " bias" : ""); break;
    case NC_MAXPOOL:
    case NC_AVGPOOL: snprintf(buf, n, "%s %d %d", name, l->p, l->s); break;
    default: snprintf(buf, n, "%s", name); break;
    }
}

/* Layers joined by "; ". At most 20 characters a layer ("conv 65536 64 bias; "), so 1024 bytes hold any model;
 * a smaller buffer gets a truncated, NUL-terminated text. */
void nc_model_layers_text(const nc_model *m, char *buf, size_t n) {
    if (n == 0) return;
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->n_layers && used < n; i++) {
        char one[48];
        layer_text(&m->layers[i], one, sizeof one);
        int w = snprintf(buf + used, n - used, "%s%s", i ? "; " : "", one);
        if (w < 0) break;
        used += (size_t)w;
    }
}

/* ----------------------------------------------------------------- FLOPs */

/* Conv and dense: 2 FLOPs per multiply-add (bias adds are not counted). Activations, pooling and softmax: one op
 * per output element, a rough figure that keeps them visible in the summary without pretending to precision.
 * Flatten is a view: 0. */
double nc_layer_flops(const nc_layer *l) {
    double out = (double)nc_shape_size(l->out);
    switch (l->kind) {
    case NC_CONV: return 2.0 * out * (double)l->in.c * (double)l->k * (double)l->k;
    case NC_DENSE: return 2.0 * out * (double)nc_shape_size(l->in);
    case NC_FLATTEN: return 0.0;
    default: return out;
    }
}

/* ------------------------------------------------------------------ init */

/* splitmix64: a fixed, well-mixed sequence from any seed (including 0). */
static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [-bound, bound): 24 random bits give every float in [0, 1) of step 2^-24. */
static float uniform(uint64_t *state, float bound) {
    float u = (float)(splitmix64(state) >> 40) * (1.0f / 16777216.0f);
    return (2.0f * u - 1.0f) * bound;
}

/* PyTorch's default for Conv2d and Linear (kaiming_uniform with a = sqrt(5)) reduces to U(-1/sqrt(fan_in),
 * 1/sqrt(fan_in)) for weights, and its bias init uses the same bound. fan_in = C*K*K (conv) or in (dense).
 * One stream over the layers in order, weights before biases, so a seed names one parameter set. */
void nc_model_init_seeded(nc_model *m, uint64_t seed) {
    uint64_t state = seed;
    for (int i = 0; i < m->n_layers; i++) {
        const nc_layer *l = &m->layers[i];
        size_t w = nc_layer_weight_count(l), b = nc_layer_bias_count(l);
        if (!w) continue;
        double fan_in = l->kind == NC_CONV ? (double)l->in.c * l->k * l->k : (double)nc_shape_size(l->in);
        float bound = (float)(1.0 / sqrt(fan_in));
        for (size_t j = 0; j < w; j++) l->weight[j] = uniform(&state, bound);
        for (size_t j = 0; j < b; j++) l->bias[j] = uniform(&state, bound);
    }
}

/* --------------------------------------------------------------- summary */

static void shape_text(nc_shape s, char *buf, size_t n) {
    snprintf(buf, n, "%dx%dx%d", s.c, s.h, s.w);
}

void nc_model_print_summary(const nc_model *m, void *file) {
    FILE *f = file;
    char in_text[160], a[32], b[32], desc[48];
    nc_model_input_text(m, in_text, sizeof in_text);
    fprintf(f, "model %s: input %s, %d layers\n", m->name, in_text, m->n_layers);
    fprintf(f, "%3s  %-20s %-16s %-16s %12s %12s\n", "#", "layer", "in", "out", "params", "MFLOP");
    double flops = 0.0;
    for (int i = 0; i < m->n_layers; i++) {
        const nc_layer *l = &m->layers[i];
        layer_text(l, desc, sizeof desc);
        shape_text(l->in, a, sizeof a);
        shape_text(l->out, b, sizeof b);
        size_t np = nc_layer_weight_count(l) + nc_layer_bias_count(l);
        double fl = nc_layer_flops(l);
        flops += fl;
        fprintf(f, "%3d  %-20s %-16s %-16s %12zu %12.3f\n", i, desc, a, b, np, fl * 1e-6);
    }
    shape_text(m->input, a, sizeof a);
    shape_text(m->n_layers ? m->layers[m->n_layers - 1].out : m->input, b, sizeof b);
    fprintf(f, "%3s  %-20s %-16s %-16s %12zu %12.3f\n", "", "total", a, b, m->n_params, flops * 1e-6);
}
