/*
 * nanoconv model files: safetensors with the architecture in its metadata (docs/MODEL_FORMAT.md).
 *
 * File layout: u64 little-endian N | N bytes of JSON header (padded with spaces) | data buffer.
 * Header: {"__metadata__": {"nanoconv.input": ..., "nanoconv.layers": ..., ["nanoconv.name": ...]},
 *          "{i}.weight": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "{i}.bias": ...}
 * with offsets relative to the data buffer. The loader trusts nothing in the file: every length and offset is
 * checked against the file size before use, and, as the reference implementation requires, the tensors must tile
 * the data buffer exactly (no gaps, no overlap).
 */
#define _POSIX_C_SOURCE 200809L
#include "core/error.h"
#include "core/model.h"
#include "io/atomic_file.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Tensor data is copied straight between the file and float arrays; safetensors is little-endian. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "nanoconv's safetensors code assumes a little-endian host"
#endif

#define ST_MAX_HEADER 100000000ull /* 100 MB, the reference implementation's limit */
#define ST_MAX_DIMS 8
#define ST_MAX_INT 9007199254740992.0 /* 2^53: the largest integer a JSON double holds exactly */
#define ST_MAX_TENSORS (2 * NC_MAX_LAYERS)

/* A parameter tensor the architecture expects: layer's weight or bias. */
typedef struct {
    int layer;
    int is_bias;
    int ndim;
    size_t dims[4];
    float *dst;   /* (count) inside the model's params, once they are allocated */
    size_t count; /* product of dims */
    int seen;
    uint64_t begin; /* data_offsets[0], set when seen */
} st_tensor;

/* One header entry's byte range, for the tiling check. */
typedef struct {
    const char *name;
    uint64_t begin, end;
} st_range;

static void dims_text(const size_t *dims, int ndim, char *buf, size_t n) {
    size_t used = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%zu", i ? ", " : "", dims[i]);
    if (used < n) snprintf(buf + used, n - used, "]");
}

/* "layer 0, conv 50 5" for the messages about a tensor. */
static void tensor_owner(const nc_model *m, int i, char *buf, size_t n) {
    const nc_layer *l = &m->layers[i];
    if (l->kind == NC_CONV)
        snprintf(buf, n, "layer %d, conv %d %d%s", i, l->m, l->k, l->has_bias ? " bias" : "");
    else if (l->kind == NC_DENSE)
        snprintf(buf, n, "layer %d, dense %d%s", i, l->m, l->has_bias ? " bias" : "");
    else
        snprintf(buf, n, "layer %d, %s", i, nc_layer_kind_name(l->kind));
}

/* The tensors the architecture needs, in layer order, weight before bias. Returns how many. */
static int expected_tensors(const nc_model *m, st_tensor *t) {
    int n = 0;
    for (int i = 0; i < m->n_layers; i++) {
        const nc_layer *l = &m->layers[i];
        if (l->kind != NC_CONV && l->kind != NC_DENSE) continue;
        st_tensor w = {.layer = i, .dst = l->weight, .count = nc_layer_weight_count(l)};
        if (l->kind == NC_CONV) {
            w.ndim = 4;
            w.dims[0] = (size_t)l->m, w.dims[1] = (size_t)l->in.c, w.dims[2] = w.dims[3] = (size_t)l->k;
        } else {
            w.ndim = 2;
            w.dims[0] = (size_t)l->m, w.dims[1] = nc_shape_size(l->in);
        }
        t[n++] = w;
        if (l->has_bias)
            t[n++] = (st_tensor){
                .layer = i, .is_bias = 1, .ndim = 1, .dims = {(size_t)l->m}, .dst = l->bias, .count = (size_t)l->m};
    }
    return n;
}

/* A JSON number that is a non-negative integer a double holds exactly. */
static int json_u64(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!(d >= 0.0 && d <= ST_MAX_INT) || d != (double)(uint64_t)d) return 0;
    *out = (uint64_t)d;
    return 1;
}

/* "12.weight" -> layer 12, weight. Decimal without leading zeros, as PyTorch writes it. */
static int parse_tensor_name(const char *name, int *layer, int *is_bias) {
    int i = 0, v = 0;
    if (name[0] == '0' && name[1] != '.') return 0;
    while (name[i] >= '0' && name[i] <= '9') {
        v = v * 10 + (name[i] - '0');
        if (++i > 3) return 0;
    }
    if (i == 0) return 0;
    *layer = v;
    if (strcmp(name + i, ".weight") == 0)
        *is_bias = 0;
    else if (strcmp(name + i, ".bias") == 0)
        *is_bias = 1;
    else
        return 0;
    return 1;
}

static int cmp_range(const void *a, const void *b) {
    const st_range *x = a, *y = b;
    return (x->begin > y->begin) - (x->begin < y->begin);
}

/* How many times key is a member of the object o: JSON leaves a repeated key's meaning open, and cJSON would take the
 * first, so the keys this loader reads must each be there once. */
static int key_count(const cJSON *o, const char *key) {
    int n = 0;
    for (const cJSON *e = o->child; e; e = e->next) n += strcmp(e->string, key) == 0;
    return n;
}

/* Reads the metadata and parses the model it describes (nc_model_parse: its parameters not yet allocated). */
static int build_from_metadata(nc_model **out, const cJSON *root, const char *path, nc_error *err) {
    if (key_count(root, "__metadata__") > 1) return nc_fail(err, NC_ERR_FORMAT, "%s: __metadata__ appears twice", path);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    if (!meta)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: no nanoconv architecture in this file (it has no __metadata__ with 'nanoconv.input' and "
                       "'nanoconv.layers'); see docs/MODEL_FORMAT.md",
                       path);
    if (!cJSON_IsObject(meta)) return nc_fail(err, NC_ERR_FORMAT, "%s: __metadata__ is not a JSON object", path);
    for (const cJSON *e = meta->child; e; e = e->next)
        if (!cJSON_IsString(e))
            return nc_fail(err, NC_ERR_FORMAT, "%s: __metadata__ value '%s' is not a string", path, e->string);

    static const char *const keys[3] = {"nanoconv.input", "nanoconv.layers", "nanoconv.name"}; /* the last optional */
    for (int i = 0; i < 3; i++)
        if (key_count(meta, keys[i]) > 1)
            return nc_fail(err, NC_ERR_FORMAT, "%s: __metadata__ key '%s' appears twice", path, keys[i]);
    const char *vals[2];
    for (int i = 0; i < 2; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, keys[i]);
        if (!v)
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: no nanoconv architecture in this file (its __metadata__ lacks '%s'); see "
                           "docs/MODEL_FORMAT.md",
                           path, keys[i]);
        vals[i] = v->valuestring;
    }

    /* Name: the metadata's, else the file's basename without its extension; nc_model_parse cuts it to fit (at a
     * character's boundary). */
    char name[1024];
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(meta, "nanoconv.name");
    if (nm) {
        snprintf(name, sizeof name, "%s", nm->valuestring);
    } else {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        const char *dot = strrchr(base, '.'); /* the extension off first, then the name cut to fit */
        const int len = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
        snprintf(name, sizeof name, "%.*s", len, base);
    }

    int rc = nc_model_parse(out, name, vals[0], vals[1], err);
    if (rc) nc_error_prefix(err, "%s", path);
    return rc;
}

/* Checks every header entry against the architecture; fills t[].seen/.begin and ranges (n_ranges entries). */
static int check_entries(const cJSON *root, const nc_model *m, st_tensor *t, int nt, st_range *ranges, int *n_ranges,
                         uint64_t data_len, const char *path, nc_error *err) {
    int nr = 0;
    for (const cJSON *e = root->child; e; e = e->next) {
        const char *name = e->string;
        if (strcmp(name, "__metadata__") == 0) continue;
        if (!cJSON_IsObject(e))
            return nc_fail(err, NC_ERR_FORMAT, "%s: tensor '%s': entry is not an object", path, name);
        static const char *const fields[] = {"dtype", "shape", "data_offsets"};
        for (int i = 0; i < 3; i++)
            if (key_count(e, fields[i]) > 1)
                return nc_fail(err, NC_ERR_FORMAT, "%s: tensor '%s': \"%s\" appears twice", path, name, fields[i]);

        const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(e, "dtype");
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
        const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
        if (!cJSON_IsString(dtype))
            return nc_fail(err, NC_ERR_FORMAT, "%s: tensor '%s': missing or invalid \"dtype\"", path, name);
        if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > ST_MAX_DIMS)
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: tensor '%s': missing or invalid \"shape\" (an array of at most %d "
                           "integers)",
                           path, name, ST_MAX_DIMS);
        size_t dims[ST_MAX_DIMS], count = 1;
        int ndim = 0;
        for (const cJSON *d = shape->child; d; d = d->next, ndim++) {
            uint64_t v;
            if (!json_u64(d, &v))
                return nc_fail(err, NC_ERR_FORMAT, "%s: tensor '%s': shape entry %d is not an integer from 0 to 2^53",
                               path, name, ndim);
            dims[ndim] = (size_t)v;
            if (!nc_mul_ok(count, dims[ndim], &count))
                return nc_fail(err, NC_ERR_FORMAT, "%s: tensor '%s': shape product overflows", path, name);
        }
        uint64_t b, en;
        if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || !json_u64(offs->child, &b) ||
            !json_u64(offs->child->next, &en))
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: tensor '%s': missing or invalid \"data_offsets\" (two integers from 0 to 2^53)", path,
                           name);
        if (en < b)
            return nc_fail(err, NC_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] end before they begin", path,
                           name, (unsigned long long)b, (unsigned long long)en);
        if (en > data_len)
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: tensor '%s': data_offsets [%llu, %llu] run past the data buffer (%llu bytes)", path,
                           name, (unsigned long long)b, (unsigned long long)en, (unsigned long long)data_len);

        /* Which parameter is it? Anything else means the file and the architecture disagree. */
        int layer, is_bias, k = -1;
        if (parse_tensor_name(name, &layer, &is_bias))
            for (int j = 0; j < nt; j++)
                if (t[j].layer == layer && t[j].is_bias == is_bias) k = j;
        if (k < 0) {
            char owner[64] = "";
            if (parse_tensor_name(name, &layer, &is_bias) && layer < m->n_layers) {
                tensor_owner(m, layer, owner, sizeof owner);
                return nc_fail(err, NC_ERR_MISMATCH,
                               "%s: unexpected tensor '%s' (%s%s): the file does not match "
                               "its architecture",
                               path, name, owner,
                               is_bias && (m->layers[layer].kind == NC_CONV || m->layers[layer].kind == NC_DENSE)
                                   ? " has no 'bias' flag"
                                   : " has no such parameter");
            }
            return nc_fail(err, NC_ERR_MISMATCH,
                           "%s: unexpected tensor '%s' (the architecture has %d layers): the "
                           "file does not match its architecture",
                           path, name, m->n_layers);
        }
        if (t[k].seen) return nc_fail(err, NC_ERR_FORMAT, "%s: tensor '%s' appears twice", path, name);

        if (strcmp(dtype->valuestring, "F32") != 0)
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: tensor '%s' has dtype %s; nanoconv reads F32 only (convert with "
                           "tensor.float() before saving)",
                           path, name, dtype->valuestring);
        size_t bytes;
        if (!nc_mul_ok(count, sizeof(float), &bytes) || en - b != (uint64_t)bytes)
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes, but its "
                           "shape and dtype need %zu x 4",
                           path, name, (unsigned long long)b, (unsigned long long)en, (unsigned long long)(en - b),
                           count);
        if (ndim != t[k].ndim || memcmp(dims, t[k].dims, (size_t)ndim * sizeof dims[0]) != 0) {
            char found[128], want[128], owner[64];
            dims_text(dims, ndim, found, sizeof found);
            dims_text(t[k].dims, t[k].ndim, want, sizeof want);
            tensor_owner(m, layer, owner, sizeof owner);
            return nc_fail(err, NC_ERR_MISMATCH, "%s: tensor '%s' (%s) has shape %s, expected %s", path, name, owner,
                           found, want);
        }
        t[k].seen = 1;
        t[k].begin = b;
        ranges[nr++] = (st_range){name, b, en};
    }
    *n_ranges = nr;

    for (int j = 0; j < nt; j++) {
        if (t[j].seen) continue;
        char owner[64];
        tensor_owner(m, t[j].layer, owner, sizeof owner);
        return nc_fail(err, NC_ERR_MISMATCH, "%s: tensor '%d.%s' (%s) is missing", path, t[j].layer,
                       t[j].is_bias ? "bias" : "weight", owner);
    }
    return NC_OK;
}

/* The tensors must tile [0, data_len): sorted by begin, each starts where the previous ended. */
static int check_tiling(st_range *r, int n, uint64_t data_len, const char *path, nc_error *err) {
    qsort(r, (size_t)n, sizeof *r, cmp_range);
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        if (r[i].begin < at)
            return nc_fail(err, NC_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap in the data buffer", path,
                           r[i - 1].name, r[i].name);
        if (r[i].begin > at)
            return nc_fail(err, NC_ERR_FORMAT, "%s: data buffer bytes [%llu, %llu) belong to no tensor", path,
                           (unsigned long long)at, (unsigned long long)r[i].begin);
        at = r[i].end;
    }
    if (at != data_len)
        return nc_fail(err, NC_ERR_FORMAT, "%s: data buffer bytes [%llu, %llu) belong to no tensor", path,
                       (unsigned long long)at, (unsigned long long)data_len);
    return NC_OK;
}

int nc_model_load(nc_model **out, const char *path, nc_error *err) {
    *out = NULL;
    nc_model *m = NULL;
    char *header = NULL;
    cJSON *root = NULL;
    int rc;

    if (!path[0]) return nc_fail(err, NC_ERR_ARG, "no model file name (an empty path)");
    FILE *f = fopen(path, "rb");
    if (!f) return nc_fail(err, NC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        rc = nc_fail(err, NC_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = nc_fail(err, NC_ERR_IO, "%s: not a regular file", path);
        goto done;
    }
    uint64_t size = (uint64_t)st.st_size;
    unsigned char len8[8];
    if (size < 8 || fread(len8, 1, 8, f) != 8) {
        rc = nc_fail(err, NC_ERR_FORMAT, "%s: %llu bytes, too short for a safetensors file (8-byte header length)",
                     path, (unsigned long long)size);
        goto done;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | len8[i];
    if (hlen > ST_MAX_HEADER) {
        rc = nc_fail(err, NC_ERR_FORMAT,
                     "%s: header length %llu is absurd (more than %llu bytes); not a "
                     "safetensors file?",
                     path, (unsigned long long)hlen, ST_MAX_HEADER);
        goto done;
    }
    if (hlen > size - 8) {
        rc = nc_fail(err, NC_ERR_FORMAT, "%s: header length %llu runs past the end of the file (%llu bytes)", path,
                     (unsigned long long)hlen, (unsigned long long)size);
        goto done;
    }
    uint64_t data_len = size - 8 - hlen;

    /* header is (hlen + 1): the JSON text, NUL-terminated for the messages. */
    header = malloc((size_t)hlen + 1);
    if (!header) {
        rc = nc_fail(err, NC_ERR_NOMEM, "%s: cannot allocate a %llu-byte header", path, (unsigned long long)hlen);
        goto done;
    }
    if (fread(header, 1, (size_t)hlen, f) != (size_t)hlen) {
        rc = nc_fail(err, NC_ERR_IO, "%s: short read of the header", path);
        goto done;
    }
    header[hlen] = '\0';
    if (hlen == 0 || header[0] != '{') {
        rc = nc_fail(err, NC_ERR_FORMAT, "%s: header does not start with '{' (not a safetensors file?)", path);
        goto done;
    }
    /* The format's header is UTF-8 JSON, and cJSON does not check the encoding. */
    for (const char *p = header; p < header + hlen;) {
        const int n = (unsigned char)*p < 0x80 ? 1 : nc_utf8_len(p);
        if (!n) {
            rc = nc_fail(err, NC_ERR_FORMAT, "%s: header is not UTF-8 text (byte %lld of the header)", path,
                         (long long)(p - header));
            goto done;
        }
        p += n;
    }
    /* A NUL character, as a byte or as \u0000, would end a name or value where cJSON stores it, so that
     * "0.weight\u0000x" read as "0.weight". A backslash starts an escape: in JSON only inside a string, which the
     * parse below checks. */
    for (const char *p = header; p < header + hlen; p++) {
        const int escaped = *p == '\\' && p + 5 < header + hlen && p[1] == 'u' && !memcmp(p + 2, "0000", 4);
        if (*p == '\0' || escaped) {
            rc = nc_fail(err, NC_ERR_FORMAT, "%s: header has a NUL character%s at byte %lld", path,
                         escaped ? " (\\u0000)" : "", (long long)(p - header));
            goto done;
        }
        if (*p == '\\') p++; /* the escaped character: not the start of another escape */
    }
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(header, (size_t)hlen, &end, 0);
    if (!root) {
        rc = nc_fail(err, NC_ERR_FORMAT, "%s: header JSON parse error near byte %lld of the header", path,
                     end ? (long long)(end - header) : -1LL);
        goto done;
    }
    /* Only the spaces that writers pad with may follow the JSON object. */
    for (const char *p = end; p < header + hlen; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            rc = nc_fail(err, NC_ERR_FORMAT, "%s: header JSON parse error: junk after the object at byte %lld", path,
                         (long long)(p - header));
            goto done;
        }
    }
    if (!cJSON_IsObject(root)) {
        rc = nc_fail(err, NC_ERR_FORMAT, "%s: header is not a JSON object", path);
        goto done;
    }

    rc = build_from_metadata(&m, root, path, err);
    if (rc) goto done;

    st_tensor t[ST_MAX_TENSORS];
    int nt = expected_tensors(m, t);
    st_range ranges[ST_MAX_TENSORS];
    int nr = 0;
    /* Every accepted entry matches a distinct expected tensor, so nr <= nt <= ST_MAX_TENSORS. */
    rc = check_entries(root, m, t, nt, ranges, &nr, data_len, path, err);
    if (rc) goto done;
    rc = check_tiling(ranges, nr, data_len, path, err);
    if (rc) goto done;
    /* The tensors tile the data buffer: its data_len bytes are the parameters, which can now be allocated. */
    rc = nc_model_alloc_params(m, err);
    if (rc) {
        nc_error_prefix(err, "%s", path);
        goto done;
    }
    for (int j = 0; j < nt; j++) /* where each tensor goes in them */
        t[j].dst = t[j].is_bias ? m->layers[t[j].layer].bias : m->layers[t[j].layer].weight;

    /* Data straight into the parameters: tensor j is (count) floats at file offset 8 + hlen + begin. */
    for (int j = 0; j < nt; j++) {
        if (fseeko(f, (off_t)(8 + hlen + t[j].begin), SEEK_SET) != 0 ||
            fread(t[j].dst, sizeof(float), t[j].count, f) != t[j].count) {
            rc = nc_fail(err, NC_ERR_IO, "%s: short read of tensor '%d.%s'", path, t[j].layer,
                         t[j].is_bias ? "bias" : "weight");
            goto done;
        }
    }
    *out = m;
    m = NULL;
    rc = NC_OK;

done:
    nc_model_free(m);
    cJSON_Delete(root);
    free(header);
    fclose(f);
    return rc;
}

/* ------------------------------------------------------------------ save */

/* The header JSON for m: metadata, then tensors in layer order with contiguous data_offsets. NULL if out of memory. */
static char *header_json(const nc_model *m) {
    char input[160], layers[1024];
    nc_model_input_text(m, input, sizeof input);
    nc_model_layers_text(m, layers, sizeof layers);

    cJSON *root = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
    int ok = meta && cJSON_AddStringToObject(meta, "nanoconv.name", m->name) &&
             cJSON_AddStringToObject(meta, "nanoconv.input", input) &&
             cJSON_AddStringToObject(meta, "nanoconv.layers", layers);

    st_tensor t[ST_MAX_TENSORS];
    int nt = expected_tensors(m, t);
    uint64_t off = 0;
    for (int j = 0; j < nt && ok; j++) {
        char name[32];
        snprintf(name, sizeof name, "%d.%s", t[j].layer, t[j].is_bias ? "bias" : "weight");
        cJSON *e = cJSON_AddObjectToObject(root, name);
        cJSON *shape = cJSON_AddArrayToObject(e, "shape");
        cJSON *offs = cJSON_AddArrayToObject(e, "data_offsets");
        ok = e && shape && offs && cJSON_AddStringToObject(e, "dtype", "F32");
        for (int d = 0; d < t[j].ndim && ok; d++)
            ok = cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[j].dims[d]));
        uint64_t end = off + (uint64_t)t[j].count * sizeof(float);
        ok = ok && cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off)) &&
             cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)end));
        off = end;
    }
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

int nc_model_save(const nc_model *m, const char *path, nc_error *err) {
    char *json = header_json(m);
    if (!json) return nc_fail(err, NC_ERR_NOMEM, "%s: cannot build the header", path);

    /* Pad the header with spaces so that the data starts 8-byte aligned (the safetensors convention). */
    size_t jlen = strlen(json);
    size_t hlen = jlen + (8 - (8 + jlen) % 8) % 8;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));

    /* The 8-byte length, the header, its padding, then every tensor in header order. */
    static const char spaces[8] = "       ";
    st_tensor t[ST_MAX_TENSORS];
    const int nt = expected_tensors(m, t);
    const void *data[ST_MAX_TENSORS + 3] = {len8, json, spaces};
    size_t size[ST_MAX_TENSORS + 3] = {8, jlen, hlen - jlen};
    for (int j = 0; j < nt; j++) {
        data[3 + j] = t[j].dst;
        size[3 + j] = t[j].count * sizeof(float);
    }
    const int rc = nc_write_file_atomic(path, data, size, 3 + nt, err);
    free(json);
    return rc;
}
