/*
 * Import of models trained in MXNet: a symbol file (the network, JSON) and a params file (its weights, a list of
 * NDArrays), as MXNet's save_checkpoint writes them for the course's NAME-symbol.json and NAME-EPOCH.params.
 *
 * Symbol file: {"nodes": [NODE, ...], "arg_nodes": [...], "heads": [[node, output, version]]}
 *   NODE := {"op": "Convolution", "name": "conv0", "inputs": [[node, output, version], ...],
 *            "attrs" (MXNet 1.x) or "attr" (0.x): {"kernel": "(5, 5)", "num_filter": "50", ...}}
 *   Attribute values are strings. Nodes come in topological order: an input names an earlier node. Weights and
 *   the data are nodes of op "null"; a layer's weight is the null node of its second input, its bias the third.
 * Params file (little-endian):
 *   u64 0x112 | u64 reserved | u64 count | count arrays | u64 count | count names, each u64 length + bytes
 *   array := u32 magic, then for 0xF993FAC9 (version 2) an i32 storage type (0 = dense), for 0xF993FAC8 (version 1)
 *            nothing; u32 ndim | ndim x i64 dims | i32 device type | i32 device id | i32 dtype | the elements.
 *            An array of ndim 0 is empty and ends right after ndim.
 *   names are "arg:NODE" for the learned parameters and "aux:NODE" for auxiliary states (none of the supported
 *   ops has any, so they are ignored).
 * Both files are read whole and every length and offset is checked against what is left before use.
 */
#define _POSIX_C_SOURCE 200809L
#include "io/mxnet.h"

#include "core/error.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Float data is copied straight from the little-endian file into float arrays. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "nanoconv's MXNet import assumes a little-endian host"
#endif

#define MX_LIST_MAGIC 0x112u
#define MX_V1_MAGIC 0xF993FAC8u
#define MX_V2_MAGIC 0xF993FAC9u
#define MX_MAX_NDIM 8
#define MX_MAX_SYMBOL ((uint64_t)64 << 20) /* 64 MiB; a course symbol file is a few kB */
#define MX_MAX_PARAMS ((uint64_t)4 << 30)  /* 4 GiB; the largest course model's params are about 15 MB */
#define MX_MAX_OPS NC_MAX_LAYERS           /* ops in the chain; each makes one layer (FullyConnected at most two) */
#define MX_NAME_SHOWN 80                   /* at most this much of an array name in a message */

/* ------------------------------------------------------------------ files */

/* Reads the whole file into buf (len bytes plus a NUL, so that cJSON can parse it where it lies). */
static int read_whole(const char *path, uint64_t max, char **buf, size_t *len, nc_error *err) {
    *buf = NULL;
    if (!path[0]) return nc_fail(err, NC_ERR_ARG, "no MXNet file name (an empty path)");
    FILE *f = fopen(path, "rb");
    if (!f) return nc_fail(err, NC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    int rc = NC_OK;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
        rc = nc_fail(err, NC_ERR_IO, "%s: not a regular file", path);
    else if ((uint64_t)st.st_size > max)
        rc = nc_fail(err, NC_ERR_FORMAT, "%s: %" PRIu64 " bytes is too large (at most %" PRIu64 ")", path,
                     (uint64_t)st.st_size, max);
    else if (!(*buf = malloc((size_t)st.st_size + 1)))
        rc = nc_fail(err, NC_ERR_NOMEM, "%s: cannot allocate %" PRIu64 " bytes to read it", path, (uint64_t)st.st_size);
    else if (fread(*buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
        rc = nc_fail(err, NC_ERR_IO, "%s: cannot read its %" PRIu64 " bytes", path, (uint64_t)st.st_size);
    fclose(f);
    if (rc) {
        free(*buf);
        *buf = NULL;
        return rc;
    }
    *len = (size_t)st.st_size;
    (*buf)[*len] = '\0';
    return NC_OK;
}

/* ----------------------------------------------------------------- symbol */

/* One nanoconv layer made from an MXNet node (a FullyConnected on an unflattened input makes two: flatten, dense). */
typedef struct {
    int node;                  /* index in "nodes", for messages */
    const char *node_name;     /* points into the JSON tree */
    const char *op;            /* ditto */
    char text[48];             /* the layer in nanoconv's architecture text, e.g. "conv 50 5" */
    const char *weight, *bias; /* names of the null nodes feeding its parameters, or NULL */
    int pool_full;             /* Pooling with pooling_convention 'full': checked against the shapes once built */
} mx_layer;

/* The symbol being read and the node being converted, for messages. */
typedef struct {
    const char *path;
    nc_error *err;
    const cJSON *nodes;
    int n_nodes;
    int at;                /* index of the current node */
    const char *name, *op; /* of the current node */
    const cJSON *attrs;    /* of the current node, or NULL */
    const cJSON *inputs;   /* of the current node */
} sym_ctx;

static int node_fail(const sym_ctx *c, int code, const char *fmt, ...) NC_PRINTF(3, 4);

/* "PATH: node 3 'conv0' (Convolution): what" */
static int node_fail(const sym_ctx *c, int code, const char *fmt, ...) {
    char what[NC_ERROR_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return nc_fail(c->err, code, "%s: node %d '%s' (%s): %s", c->path, c->at, c->name, c->op, what);
}

static const char *json_string(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Reads node i's op, name, attributes and inputs into c. */
static int load_node(sym_ctx *c, int i) {
    const cJSON *n = cJSON_GetArrayItem(c->nodes, i);
    c->at = i;
    c->name = json_string(n, "name");
    c->op = json_string(n, "op");
    if (!c->name || !c->op)
        return nc_fail(c->err, NC_ERR_FORMAT, "%s: node %d has no \"op\" and \"name\" strings", c->path, i);
    /* MXNet 1.x writes "attrs"; 0.x wrote "attr". */
    c->attrs = cJSON_GetObjectItemCaseSensitive(n, "attrs");
    if (!c->attrs) c->attrs = cJSON_GetObjectItemCaseSensitive(n, "attr");
    if (c->attrs && !cJSON_IsObject(c->attrs)) return node_fail(c, NC_ERR_FORMAT, "its attributes are not an object");
    const cJSON *a;
    cJSON_ArrayForEach(a, c->attrs) {
        if (!cJSON_IsString(a))
            return node_fail(c, NC_ERR_FORMAT, "attribute %s is not a string (MXNet writes \"(5, 5)\", \"50\")",
                             a->string);
    }
    c->inputs = cJSON_GetObjectItemCaseSensitive(n, "inputs");
    if (!cJSON_IsArray(c->inputs)) return node_fail(c, NC_ERR_FORMAT, "no \"inputs\" list");
    return NC_OK;
}

static const char *attr(const sym_ctx *c, const char *key) {
    return json_string(c->attrs, key);
}

/* A JSON number holding an integer in 0..limit-1. */
static int json_index(const cJSON *v, int limit, int *out) {
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0.0) || v->valuedouble >= (double)limit) return 0;
    *out = (int)v->valuedouble;
    return (double)*out == v->valuedouble;
}

/* Parses an entry [node, output] or [node, output, version] that names output 0 of a node below limit. */
static int entry_node(const cJSON *e, int limit, int *node) {
    int n = cJSON_GetArraySize(e), output = -1;
    return cJSON_IsArray(e) && (n == 2 || n == 3) && json_index(cJSON_GetArrayItem(e, 0), limit, node) &&
           json_index(cJSON_GetArrayItem(e, 1), INT_MAX, &output) && output == 0;
}

/* The node that input j of the current node reads. Nodes are in topological order, so it must be an earlier one;
 * that also makes the walk from the output back to the data end. */
static int input_node(const sym_ctx *c, int j, int *src) {
    if (!entry_node(cJSON_GetArrayItem(c->inputs, j), c->at, src))
        return node_fail(c, NC_ERR_FORMAT, "input %d is not [node, 0, version] naming an earlier node", j);
    return NC_OK;
}

/* The name of the null node feeding input j (a weight or bias). */
static int param_input(const sym_ctx *c, int j, const char *what, const char **name) {
    int src = -1;
    int rc = input_node(c, j, &src);
    if (rc) return rc;
    const cJSON *n = cJSON_GetArrayItem(c->nodes, src);
    const char *op = json_string(n, "op");
    *name = json_string(n, "name");
    if (!op || !*name || strcmp(op, "null") != 0)
        return node_fail(c, NC_ERR_FORMAT, "its %s (input %d) comes from node %d (%s), not from a parameter", what, j,
                         src, op ? op : "no op");
    return NC_OK;
}

static int check_inputs(const sym_ctx *c, int lo, int hi, const char *which) {
    int n = cJSON_GetArraySize(c->inputs);
    if (n < lo || n > hi) return node_fail(c, NC_ERR_FORMAT, "has %d inputs; expected %s", n, which);
    return NC_OK;
}

/* Parses an MXNet tuple such as "(5, 5)", "[5,5]", "(2,)", "()" or "5" into at most max non-negative ints.
 * Returns how many, or -1 if s is not such a tuple. */
static int parse_tuple(const char *s, int *v, int max) {
    const char *p = s;
    while (isspace((unsigned char)*p)) p++;
    char close = *p == '(' ? ')' : *p == '[' ? ']' : '\0';
    if (close) p++;
    int n = 0;
    for (;;) {
        while (isspace((unsigned char)*p)) p++;
        if (*p == close) break; /* the closing bracket, or the end of a bare number list */
        if (!isdigit((unsigned char)*p) || n == max) return -1;
        long x = 0;
        while (isdigit((unsigned char)*p)) {
            x = x * 10 + (*p++ - '0');
            if (x > INT_MAX) return -1;
        }
        v[n++] = (int)x;
        while (isspace((unsigned char)*p)) p++;
        if (*p == ',')
            p++;
        else if (*p != close)
            return -1;
    }
    if (close) p++;
    while (isspace((unsigned char)*p)) p++;
    return *p ? -1 : n;
}

/* A 2-D attribute (kernel, stride, pad, dilate) into v[2]: absent or "()" gives (def, def). */
static int attr_pair(const sym_ctx *c, const char *key, int def, int v[2]) {
    const char *s = attr(c, key);
    int n = s ? parse_tuple(s, v, 2) : 0;
    if (n == 0)
        v[0] = v[1] = def;
    else if (n != 2)
        return node_fail(c, NC_ERR_FORMAT, "attribute %s '%s' is not a 2-D tuple such as '(2, 2)'", key, s);
    return NC_OK;
}

/* A 2-D attribute that must be (want, want). */
static int attr_pair_is(const sym_ctx *c, const char *key, int want, const char *why) {
    int v[2];
    int rc = attr_pair(c, key, want, v);
    if (!rc && (v[0] != want || v[1] != want))
        rc = node_fail(c, NC_ERR_FORMAT, "attribute %s '%s' is not supported: %s", key, attr(c, key), why);
    return rc;
}

/* A square window (kernel) into *k; required. */
static int attr_square(const sym_ctx *c, const char *key, int *k) {
    int v[2];
    int rc = attr_pair(c, key, 0, v);
    if (rc) return rc;
    if (!attr(c, key)) return node_fail(c, NC_ERR_FORMAT, "needs attribute %s, e.g. '(5, 5)'", key);
    if (v[0] <= 0 || v[1] <= 0)
        return node_fail(c, NC_ERR_FORMAT, "attribute %s '%s': a window's sides must be positive", key, attr(c, key));
    if (v[0] != v[1])
        return node_fail(c, NC_ERR_FORMAT, "attribute %s '%s' is not supported: nanoconv's windows are square", key,
                         attr(c, key));
    *k = v[0];
    return NC_OK;
}

/* A positive integer attribute (num_filter, num_hidden, num_group): absent gives def, or is an error if def is 0. */
static int attr_int(const sym_ctx *c, const char *key, int def, int *out) {
    const char *s = attr(c, key);
    if (!s) {
        if (!def) return node_fail(c, NC_ERR_FORMAT, "needs attribute %s", key);
        *out = def;
        return NC_OK;
    }
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > INT_MAX)
        return node_fail(c, NC_ERR_FORMAT, "attribute %s '%s' is not a positive integer", key, s);
    *out = (int)v;
    return NC_OK;
}

/* A boolean attribute (no_bias, global_pool, flatten) as MXNet writes them; absent gives def. */
static int attr_bool(const sym_ctx *c, const char *key, int def, int *out) {
    const char *s = attr(c, key);
    *out = def;
    if (!s) return NC_OK;
    if (!strcmp(s, "True") || !strcmp(s, "true") || !strcmp(s, "1"))
        *out = 1;
    else if (!strcmp(s, "False") || !strcmp(s, "false") || !strcmp(s, "0"))
        *out = 0;
    else
        return node_fail(c, NC_ERR_FORMAT, "attribute %s '%s' is not a boolean (True or False)", key, s);
    return NC_OK;
}

/* nanoconv computes in NCHW only. */
static int check_layout(const sym_ctx *c) {
    const char *s = attr(c, "layout");
    if (s && strcmp(s, "NCHW") != 0 && strcmp(s, "None") != 0)
        return node_fail(c, NC_ERR_FORMAT, "attribute layout '%s' is not supported: only NCHW", s);
    return NC_OK;
}

/* New (the course's own convolution: kernel, num_filter, no bias) and Convolution. */
static int convert_conv(const sym_ctx *c, int is_new, mx_layer *l) {
    int k = 0, m = 0, groups = 1, no_bias = 1, rc;
    if ((rc = attr_square(c, "kernel", &k)) || (rc = attr_int(c, "num_filter", 0, &m)) ||
        (rc = attr_pair_is(c, "stride", 1, "nanoconv convolutions have stride 1")) ||
        (rc = attr_pair_is(c, "pad", 0, "nanoconv convolutions have no padding")) ||
        (rc = attr_pair_is(c, "dilate", 1, "nanoconv convolutions have no dilation")) ||
        (rc = attr_int(c, "num_group", 1, &groups)) || (rc = check_layout(c)) ||
        (!is_new && (rc = attr_bool(c, "no_bias", 0, &no_bias))))
        return rc;
    if (groups != 1)
        return node_fail(c, NC_ERR_FORMAT, "attribute num_group '%d' is not supported: only ungrouped convolutions",
                         groups);
    if ((rc = check_inputs(c, no_bias ? 2 : 3, no_bias ? 2 : 3,
                           no_bias ? "2 (data, weight)" : "3 (data, weight, bias)")) ||
        (rc = param_input(c, 1, "weight", &l->weight)) || (!no_bias && (rc = param_input(c, 2, "bias", &l->bias))))
        return rc;
    snprintf(l->text, sizeof l->text, "conv %d %d%s", m, k, no_bias ? "" : " bias");
    return NC_OK;
}

static int convert_pool(const sym_ctx *c, mx_layer *l) {
    int p = 0, s[2] = {0, 0}, global = 0, rc;
    const char *type = attr(c, "pool_type"), *conv = attr(c, "pooling_convention");
    if (!type) type = "max"; /* MXNet's default */
    if (strcmp(type, "max") != 0 && strcmp(type, "avg") != 0)
        return node_fail(c, NC_ERR_FORMAT, "attribute pool_type '%s' is not supported: max or avg", type);
    if ((rc = check_inputs(c, 1, 1, "1 (data)")) || (rc = attr_bool(c, "global_pool", 0, &global))) return rc;
    if (global) return node_fail(c, NC_ERR_FORMAT, "attribute global_pool 'True' is not supported");
    if ((rc = attr_square(c, "kernel", &p)) || (rc = attr_pair(c, "stride", 1, s)) ||
        (rc = attr_pair_is(c, "pad", 0, "nanoconv pools have no padding")) || (rc = check_layout(c)))
        return rc;
    if (s[0] <= 0 || s[1] <= 0)
        return node_fail(c, NC_ERR_FORMAT, "attribute stride '%s': a stride must be positive", attr(c, "stride"));
    if (s[0] != s[1])
        return node_fail(c, NC_ERR_FORMAT, "attribute stride '%s' is not supported: nanoconv's strides are square",
                         attr(c, "stride"));
    /* 'valid' (the default) gives floor((H - P) / S) + 1, as nanoconv does; 'full' rounds up, which agrees only where
     * the division is exact: checked once the shapes are known. */
    if (conv && strcmp(conv, "valid") != 0) {
        if (strcmp(conv, "full") != 0)
            return node_fail(c, NC_ERR_FORMAT, "attribute pooling_convention '%s' is not supported: valid or full",
                             conv);
        l->pool_full = 1;
    }
    snprintf(l->text, sizeof l->text, "%s %d %d", type[0] == 'm' ? "maxpool" : "avgpool", p, s[0]);
    return NC_OK;
}

/* Converts the current node into one or two layers at l; flat says whether its input is already flattened. */
static int convert_node(const sym_ctx *c, mx_layer *l, int *n_layers, int *flat) {
    int rc;
    *n_layers = 1;
    l->node = c->at;
    l->node_name = c->name;
    l->op = c->op;
    if (!strcmp(c->op, "New")) return convert_conv(c, 1, l);
    if (!strcmp(c->op, "Convolution")) return convert_conv(c, 0, l);
    if (!strcmp(c->op, "Pooling")) return convert_pool(c, l);
    if (!strcmp(c->op, "Activation")) {
        const char *act = attr(c, "act_type");
        if ((rc = check_inputs(c, 1, 1, "1 (data)"))) return rc;
        if (!act) return node_fail(c, NC_ERR_FORMAT, "needs attribute act_type");
        if (strcmp(act, "tanh") != 0 && strcmp(act, "relu") != 0 && strcmp(act, "sigmoid") != 0)
            return node_fail(c, NC_ERR_FORMAT, "attribute act_type '%s' is not supported: tanh, relu or sigmoid", act);
        snprintf(l->text, sizeof l->text, "%s", act);
        return NC_OK;
    }
    if (!strcmp(c->op, "Flatten")) {
        *flat = 1;
        snprintf(l->text, sizeof l->text, "flatten");
        return check_inputs(c, 1, 1, "1 (data)");
    }
    if (!strcmp(c->op, "FullyConnected")) {
        int n, no_bias, flatten;
        if ((rc = attr_int(c, "num_hidden", 0, &n)) || (rc = attr_bool(c, "no_bias", 0, &no_bias)) ||
            (rc = attr_bool(c, "flatten", 1, &flatten)) ||
            (rc = check_inputs(c, no_bias ? 2 : 3, no_bias ? 2 : 3,
                               no_bias ? "2 (data, weight)" : "3 (data, weight, bias)")))
            return rc;
        if (!*flat) {
            /* MXNet's FullyConnected flattens a 4-D input itself (unless told not to); nanoconv says so. */
            if (!flatten)
                return node_fail(c, NC_ERR_FORMAT,
                                 "attribute flatten 'False' on an unflattened input is not supported");
            snprintf(l->text, sizeof l->text, "flatten");
            l[1] = l[0];
            l++;
            *n_layers = 2;
            *flat = 1;
        }
        if ((rc = param_input(c, 1, "weight", &l->weight)) || (!no_bias && (rc = param_input(c, 2, "bias", &l->bias))))
            return rc;
        snprintf(l->text, sizeof l->text, "dense %d%s", n, no_bias ? "" : " bias");
        return NC_OK;
    }
    if (!strcmp(c->op, "SoftmaxOutput")) {
        /* Its second input, the label, only matters in training. */
        snprintf(l->text, sizeof l->text, "softmax");
        return check_inputs(c, 1, 2, "1 or 2 (data, label)");
    }
    return node_fail(c, NC_ERR_FORMAT,
                     "op '%s' is not supported (only New, Convolution, Activation, Pooling, Flatten, FullyConnected, "
                     "SoftmaxOutput)",
                     c->op);
}

/* Reads the symbol and converts its chain of ops, from the data input to the output, into layers. */
static int parse_symbol(const char *path, const char *text, size_t len, cJSON **root, mx_layer *layers, int *n_layers,
                        nc_error *err) {
    const char *end = NULL;
    if (strlen(text) != len)
        return nc_fail(err, NC_ERR_FORMAT, "%s: a NUL byte at byte %zu: not a JSON file", path, strlen(text));
    *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!*root)
        return nc_fail(err, NC_ERR_FORMAT, "%s: not valid JSON (at byte %td)", path, end ? end - text : (ptrdiff_t)0);
    sym_ctx c = {.path = path, .err = err, .nodes = cJSON_GetObjectItemCaseSensitive(*root, "nodes")};
    const cJSON *heads = cJSON_GetObjectItemCaseSensitive(*root, "heads");
    c.n_nodes = cJSON_GetArraySize(c.nodes);
    if (!cJSON_IsArray(c.nodes) || c.n_nodes == 0 || !cJSON_IsArray(heads))
        return nc_fail(err, NC_ERR_FORMAT, "%s: not an MXNet symbol (no \"nodes\" and \"heads\" lists)", path);
    if (cJSON_GetArraySize(heads) != 1)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: the symbol has %d outputs (\"heads\"); only single-output networks are supported", path,
                       cJSON_GetArraySize(heads));
    int at;
    if (!entry_node(cJSON_GetArrayItem(heads, 0), c.n_nodes, &at))
        return nc_fail(err, NC_ERR_FORMAT, "%s: \"heads\" is not [[node, 0, version]] naming one of the %d nodes", path,
                       c.n_nodes);

    /* Walk back from the output through each op's first input (its data) to the null node that is the data. */
    int chain[MX_MAX_OPS], n_chain = 0, rc;
    for (;;) {
        if ((rc = load_node(&c, at))) return rc;
        if (!strcmp(c.op, "null")) break;
        if (n_chain == MX_MAX_OPS)
            return nc_fail(err, NC_ERR_FORMAT, "%s: more than %d ops between the output and the data", path,
                           MX_MAX_OPS);
        chain[n_chain++] = at;
        if (cJSON_GetArraySize(c.inputs) < 1) return node_fail(&c, NC_ERR_FORMAT, "has no inputs");
        if ((rc = input_node(&c, 0, &at))) return rc;
    }
    if (n_chain == 0) return nc_fail(err, NC_ERR_FORMAT, "%s: the output is the data node '%s': no ops", path, c.name);

    /* Convert forwards, tracking whether the data is flattened yet. */
    int flat = 0, n = 0;
    for (int i = n_chain - 1; i >= 0; i--) {
        int made;
        if ((rc = load_node(&c, chain[i])) || (rc = convert_node(&c, &layers[n], &made, &flat))) return rc;
        n += made;
    }
    *n_layers = n;
    return NC_OK;
}

/* ----------------------------------------------------------------- params */

/* One array of the params file. */
typedef struct {
    size_t at; /* byte offset of its magic number, for messages */
    int ndim;  /* 0: an empty array */
    int64_t dims[MX_MAX_NDIM];
    size_t count; /* product of dims */
    int dtype;
    const unsigned char *data; /* count elements of dtype, little-endian, unaligned, inside the file buffer */
    const char *name;          /* e.g. "arg:conv0_weight", name_len bytes, not NUL-terminated */
    size_t name_len;
    int used;
} mx_array;

/* A cursor over the params file that refuses to read past its end. */
typedef struct {
    const char *path;
    const unsigned char *buf;
    size_t len, off;
    char where[64]; /* what is being read: "the header", "array 3 (byte 1234)", "name 2" */
    nc_error *err;
} mx_reader;

static int rd_bytes(mx_reader *r, size_t n, const char *what, const unsigned char **p) {
    if (n > r->len - r->off)
        return nc_fail(r->err, NC_ERR_FORMAT, "%s: %s: truncated: %s at byte %zu needs %zu bytes, %zu are left",
                       r->path, r->where, what, r->off, n, r->len - r->off);
    *p = r->buf + r->off;
    r->off += n;
    return NC_OK;
}

/* Little-endian unsigned integer of n bytes (4 or 8). */
static int rd_le(mx_reader *r, size_t n, const char *what, uint64_t *v) {
    const unsigned char *p = NULL;
    int rc = rd_bytes(r, n, what, &p);
    if (rc) return rc;
    *v = 0;
    for (size_t i = 0; i < n; i++) *v |= (uint64_t)p[i] << (8 * i);
    return NC_OK;
}

/* An i32 field, as the int it is. */
static int rd_i32(mx_reader *r, const char *what, int *v) {
    uint64_t u;
    int rc = rd_le(r, 4, what, &u);
    if (rc) return rc;
    *v = (int)(int32_t)(uint32_t)u;
    return NC_OK;
}

/* mshadow's type flags: the element size of each, so that unused arrays of other types can be skipped. */
static const struct {
    const char *name;
    size_t size;
} dtypes[] = {{"float32", 4}, {"float64", 8}, {"float16", 2}, {"uint8", 1}, {"int32", 4}, {"int8", 1}, {"int64", 8}};
#define MX_N_DTYPES ((int)(sizeof dtypes / sizeof dtypes[0]))

static int parse_array(mx_reader *r, mx_array *a) {
    uint64_t magic, ndim, dim;
    a->at = r->off;
    int rc = rd_le(r, 4, "the magic number", &magic);
    if (rc) return rc;
    if (magic == MX_V2_MAGIC) {
        int stype;
        if ((rc = rd_i32(r, "the storage type", &stype))) return rc;
        if (stype != 0)
            return nc_fail(r->err, NC_ERR_FORMAT,
                           "%s: %s: storage type %d (1 row_sparse, 2 csr) is not supported; only dense (0)", r->path,
                           r->where, stype);
    } else if (magic != MX_V1_MAGIC) {
        return nc_fail(r->err, NC_ERR_FORMAT,
                       "%s: %s: bad magic 0x%08" PRIx64 " (expected 0x%08X, version 2, or 0x%08X, version 1)", r->path,
                       r->where, magic, MX_V2_MAGIC, MX_V1_MAGIC);
    }
    if ((rc = rd_le(r, 4, "ndim", &ndim))) return rc;
    if (ndim > MX_MAX_NDIM)
        return nc_fail(r->err, NC_ERR_FORMAT, "%s: %s: ndim %" PRIu64 " is absurd (at most %d)", r->path, r->where,
                       ndim, MX_MAX_NDIM);
    a->ndim = (int)ndim;
    if (ndim == 0) return NC_OK; /* an empty array: MXNet stores nothing more */
    a->count = 1;
    for (int d = 0; d < a->ndim; d++) {
        if ((rc = rd_le(r, 8, "a dimension", &dim))) return rc;
        a->dims[d] = (int64_t)dim;
        if (a->dims[d] <= 0 || !nc_mul_ok(a->count, (size_t)dim, &a->count))
            return nc_fail(r->err, NC_ERR_FORMAT, "%s: %s: dimension %d is %" PRId64 "%s", r->path, r->where, d,
                           a->dims[d], a->dims[d] <= 0 ? "" : ", too many elements");
    }
    int dev_type, dev_id; /* where the array lived when saved: says nothing about its data */
    if ((rc = rd_i32(r, "the device type", &dev_type)) || (rc = rd_i32(r, "the device id", &dev_id)) ||
        (rc = rd_i32(r, "the dtype", &a->dtype)))
        return rc;
    size_t bytes;
    if (a->dtype < 0 || a->dtype >= MX_N_DTYPES)
        return nc_fail(
            r->err, NC_ERR_FORMAT,
            "%s: %s: unknown dtype %d (the importer knows MXNet's 0 to 6, and takes its weights in float32, 0)",
            r->path, r->where, a->dtype);
    if (!nc_mul_ok(a->count, dtypes[a->dtype].size, &bytes))
        return nc_fail(r->err, NC_ERR_FORMAT, "%s: %s: too many elements", r->path, r->where);
    return rd_bytes(r, bytes, "its data", &a->data);
}

/* Reads every array and its name; *arrays is allocated (free it also on failure). */
static int parse_params(const char *path, const unsigned char *buf, size_t len, mx_array **arrays, size_t *n_arrays,
                        nc_error *err) {
    mx_reader r = {.path = path, .buf = buf, .len = len, .where = "the header", .err = err};
    uint64_t magic, reserved, n, n_names;
    int rc;
    *arrays = NULL;
    if ((rc = rd_le(&r, 8, "the magic number", &magic))) return rc;
    if (magic != MX_LIST_MAGIC)
        return nc_fail(err, NC_ERR_FORMAT, "%s: bad magic 0x%" PRIx64 " at byte 0: not an MXNet params file (0x%X)",
                       path, magic, MX_LIST_MAGIC);
    if ((rc = rd_le(&r, 8, "the reserved field", &reserved)) || (rc = rd_le(&r, 8, "the array count", &n))) return rc;
    /* Every array takes at least 8 bytes (magic and ndim): a larger count is a corrupt file, not an allocation. */
    if (n > (len - r.off) / 8)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: truncated or corrupt: byte 16: %" PRIu64 " arrays cannot fit in the %zu bytes left", path,
                       n, len - r.off);
    if (!(*arrays = calloc(n ? (size_t)n : 1, sizeof **arrays)))
        return nc_fail(err, NC_ERR_NOMEM, "%s: cannot allocate %" PRIu64 " array entries", path, n);
    *n_arrays = (size_t)n;
    for (size_t i = 0; i < n; i++) {
        snprintf(r.where, sizeof r.where, "array %zu (byte %zu)", i, r.off);
        if ((rc = parse_array(&r, &(*arrays)[i]))) return rc;
    }
    snprintf(r.where, sizeof r.where, "the names");
    if ((rc = rd_le(&r, 8, "the name count", &n_names))) return rc;
    if (n_names != n)
        return nc_fail(err, NC_ERR_FORMAT, "%s: byte %zu: %" PRIu64 " names for %" PRIu64 " arrays", path, r.off - 8,
                       n_names, n);
    for (size_t i = 0; i < n; i++) {
        mx_array *a = &(*arrays)[i];
        uint64_t name_len;
        const unsigned char *p = NULL;
        snprintf(r.where, sizeof r.where, "name %zu", i);
        size_t at = r.off;
        if ((rc = rd_le(&r, 8, "its length", &name_len))) return rc;
        if ((rc = rd_bytes(&r, (size_t)name_len, "its bytes", &p))) return rc;
        a->name = (const char *)p;
        a->name_len = (size_t)name_len;
        if (a->name_len < 4 || (memcmp(a->name, "arg:", 4) != 0 && memcmp(a->name, "aux:", 4) != 0))
            return nc_fail(err, NC_ERR_FORMAT, "%s: name %zu (byte %zu) '%.*s' starts with neither 'arg:' nor 'aux:'",
                           path, i, at, (int)(a->name_len < MX_NAME_SHOWN ? a->name_len : MX_NAME_SHOWN), a->name);
    }
    if (r.off != len)
        return nc_fail(err, NC_ERR_FORMAT, "%s: %zu unexpected bytes after the names, from byte %zu", path, len - r.off,
                       r.off);
    return NC_OK;
}

/* ----------------------------------------------------------------- weights */

static void dims_text(const int64_t *d, int n, char *buf, size_t size) {
    size_t used = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, i ? ", " : "", d[i]);
    if (used < size) snprintf(buf + used, size - used, ")");
}

/* Checks the dtype and shape, want (ndim), of the array "arg:" + param; copies it into dst where dst is not NULL. */
static int fill_param(const char *path, mx_array *arrays, size_t n, const mx_layer *l, const char *param, float *dst,
                      const int64_t *want, int ndim, const char *input, nc_error *err) {
    mx_array *a = NULL;
    const size_t plen = strlen(param);
    for (size_t i = 0; i < n; i++) {
        const mx_array *b = &arrays[i];
        if (b->name_len != plen + 4 || memcmp(b->name, "arg:", 4) != 0 || memcmp(b->name + 4, param, plen) != 0)
            continue;
        if (a)
            return nc_fail(err, NC_ERR_FORMAT, "%s: arrays %td and %zu are both named 'arg:%s'", path, a - arrays, i,
                           param);
        a = &arrays[i];
    }
    if (!a)
        return nc_fail(err, NC_ERR_FORMAT, "%s: no array named 'arg:%s', which node %d '%s' (%s) needs", path, param,
                       l->node, l->node_name, l->op);
    a->used = 1;
    const size_t i = (size_t)(a - arrays);
    if (a->ndim > 0 && a->dtype != 0)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: array %zu 'arg:%s' (byte %zu): dtype %d (%s) is not supported; only float32 (0)", path, i,
                       param, a->at, a->dtype, dtypes[a->dtype].name);
    int same = a->ndim == ndim;
    for (int d = 0; d < ndim && same; d++) same = a->dims[d] == want[d];
    if (!same) {
        char got[160], need[160];
        dims_text(a->dims, a->ndim, got, sizeof got);
        dims_text(want, ndim, need, sizeof need);
        /* A dense weight one column count off usually means the input size was not given. */
        const int dense_in = ndim == 2 && a->ndim == 2 && a->dims[0] == want[0];
        return nc_fail(err, NC_ERR_MISMATCH,
                       "%s: array %zu 'arg:%s' (byte %zu) has shape %s, but node %d '%s' (%s) needs %s with input %s%s",
                       path, i, param, a->at, got, l->node, l->node_name, l->op, need, input,
                       dense_in ? "; give the model's input size with --input" : "");
    }
    if (dst) memcpy(dst, a->data, a->count * sizeof(float));
    return NC_OK;
}

/* Fills every layer's weight and bias from the arrays (where m's parameters are not allocated yet, only checks that
 * the arrays fit them), then refuses arrays the network does not use. */
static int fill_weights(nc_model *m, const mx_layer *layers, const char *path, mx_array *arrays, size_t n,
                        const char *input, nc_error *err) {
    int rc;
    for (int j = 0; j < m->n_layers; j++) {
        const nc_layer *nl = &m->layers[j];
        const mx_layer *l = &layers[j];
        int64_t w[4] = {nl->m, nl->in.c, nl->k, nl->k}, b[1] = {nl->m};
        if (nl->kind == NC_DENSE) w[1] = (int64_t)nc_shape_size(nl->in);
        if (l->weight &&
            (rc = fill_param(path, arrays, n, l, l->weight, nl->weight, w, nl->kind == NC_CONV ? 4 : 2, input, err)))
            return rc;
        if (l->bias && (rc = fill_param(path, arrays, n, l, l->bias, nl->bias, b, 1, input, err))) return rc;
    }
    for (size_t i = 0; i < n; i++) {
        const mx_array *a = &arrays[i];
        if (!a->used && memcmp(a->name, "arg:", 4) == 0)
            return nc_fail(err, NC_ERR_MISMATCH,
                           "%s: array %zu '%.*s' is not a parameter of the symbol's network (are the two files of "
                           "the same model?)",
                           path, i, (int)(a->name_len < MX_NAME_SHOWN ? a->name_len : MX_NAME_SHOWN), a->name);
    }
    return NC_OK;
}

/* ------------------------------------------------------------------ import */

/* Parses the model of the layers (nc_model_parse: its parameters not yet allocated), naming the MXNet node behind any
 * layer the parser refuses. */
static int parse_model(nc_model **m, const char *path, const mx_layer *layers, int n, const char *name,
                       const char *input, nc_error *err) {
    char text[2 * MX_MAX_OPS * (sizeof layers->text + 2)]; /* every layer and its "; " */
    size_t used = 0;
    text[0] = '\0';
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%s", i ? "; " : "", layers[i].text);
    int rc = nc_model_parse(m, name, input, text, err);
    int li;
    if (rc && err && sscanf(err->msg, "layer %d:", &li) == 1 && li >= 0 && li < n)
        nc_error_prefix(err, "%s: node %d '%s' (%s), with input %s", path, layers[li].node, layers[li].node_name,
                        layers[li].op, input);
    if (rc) return rc;
    for (int i = 0; i < n; i++) {
        const nc_layer *l = &(*m)->layers[i];
        if (layers[i].pool_full && ((l->in.h - l->p) % l->s || (l->in.w - l->p) % l->s))
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: node %d '%s' (%s): attribute pooling_convention 'full' rounds the "
                           "output of window %d, stride %d on %dx%d up, where nanoconv rounds down; not supported",
                           path, layers[i].node, layers[i].node_name, layers[i].op, l->p, l->s, l->in.h, l->in.w);
    }
    return NC_OK;
}

int nc_mxnet_import(nc_model **out, const char *symbol_path, const char *params_path, const char *input_text,
                    const char *name, nc_error *err) {
    *out = NULL;
    char *sym = NULL, *par = NULL, input[160];
    size_t sym_len = 0, par_len = 0, n_arrays = 0;
    cJSON *root = NULL;
    mx_array *arrays = NULL;
    nc_model *m = NULL;
    mx_layer layers[2 * MX_MAX_OPS] = {0};
    int n_layers = 0;

    /* A bare "CxHxW" (one word) means raw pixels, as the course fed its networks. */
    if (!input_text) input_text = "1x28x28";
    const char *first = input_text + strspn(input_text, " \t"), *after = first + strcspn(first, " \t");
    const int one_word = *first && after[strspn(after, " \t")] == '\0';
    const int len = snprintf(input, sizeof input, "%s%s", input_text, one_word ? " raw" : "");
    if (len < 0 || (size_t)len >= sizeof input)
        return nc_fail(err, NC_ERR_ARG, "--input: '%.40s...' is longer than an input's %zu characters", input_text,
                       sizeof input - 1);

    int rc = read_whole(symbol_path, MX_MAX_SYMBOL, &sym, &sym_len, err);
    if (!rc) rc = parse_symbol(symbol_path, sym, sym_len, &root, layers, &n_layers, err);
    if (!rc) rc = parse_model(&m, symbol_path, layers, n_layers, name, input, err);
    if (!rc) rc = read_whole(params_path, MX_MAX_PARAMS, &par, &par_len, err);
    if (!rc) rc = parse_params(params_path, (const unsigned char *)par, par_len, &arrays, &n_arrays, err);
    /* Every array checked against its layer first, m's parameters not yet allocated: so that they are allocated only
     * once the params file is known to hold them (a symbol file cannot ask for terabytes); then copied in. */
    if (!rc) rc = fill_weights(m, layers, params_path, arrays, n_arrays, input, err);
    if (!rc) rc = nc_model_alloc_params(m, err);
    if (!rc) rc = fill_weights(m, layers, params_path, arrays, n_arrays, input, err);

    free(arrays);
    free(par);
    cJSON_Delete(root);
    free(sym);
    if (rc) {
        nc_model_free(m);
        return rc;
    }
    *out = m;
    return NC_OK;
}
