/*
 * The model graph and its file: architecture parsing (good text and every error), the shapes, parameter and FLOP
 * counts of the course's networks, text round-trips, seeded init, save -> load round-trip, and the loader's answer
 * to each kind of corrupt safetensors file (written by this test into a mkdtemp directory), and the messages' plain
 * text (nc_plain_text: what a damaged file's names and values become when a message quotes them).
 */
#define _POSIX_C_SOURCE 200809L
#include "core/error.h"
#include "core/model.h"
#include "nc_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmp_dir[] = "/tmp/nc_test_model.XXXXXX";

/* ------------------------------------------------------------ helpers */

static nc_model *build_ok(const char *input, const char *layers) {
    nc_model *m = NULL;
    nc_error err = {0};
    int rc = nc_model_build(&m, "t", input, layers, &err);
    CHECK(rc == NC_OK);
    if (rc) fprintf(stderr, "  build('%s', '%s'): %s\n", input, layers, err.msg);
    return m;
}

/* Builds text that must fail with code and a message containing fragment. */
static void build_fails(const char *input, const char *layers, int code, const char *fragment) {
    nc_model *m = (nc_model *)&m; /* not NULL, so the check that failure sets NULL can fail */
    nc_error err = {0};
    int rc = nc_model_build(&m, "t", input, layers, &err);
    CHECK(rc == code);
    CHECK(err.code == code);
    CHECK(m == NULL);
    CHECK_MSG(err, fragment);
    if (rc != code) fprintf(stderr, "  build('%s', '%s') gave %d: %s\n", input, layers, rc, err.msg);
}

static int shape_is(nc_shape s, int c, int h, int w) {
    return s.c == c && s.h == h && s.w == w;
}

/* ------------------------------------------------------------ parsing */

static void test_course_2017(void) {
    nc_model *m = build_ok("1x28x28 raw", "conv 50 5; tanh; maxpool 2 2; flatten; dense 500 bias; tanh; dense 10 bias; "
                                          "softmax");
    if (!m) return;
    CHECK(m->n_layers == 8);
    CHECK(m->scaling == NC_SCALE_RAW);
    CHECK(shape_is(m->input, 1, 28, 28));
    const nc_layer *l = m->layers;
    CHECK(l[0].kind == NC_CONV && l[0].m == 50 && l[0].k == 5 && !l[0].has_bias && l[0].bias == NULL);
    CHECK(shape_is(l[0].in, 1, 28, 28) && shape_is(l[0].out, 50, 24, 24));
    CHECK(l[1].kind == NC_TANH && shape_is(l[1].out, 50, 24, 24));
    CHECK(l[2].kind == NC_MAXPOOL && l[2].p == 2 && l[2].s == 2 && shape_is(l[2].out, 50, 12, 12));
    CHECK(l[3].kind == NC_FLATTEN && shape_is(l[3].out, 7200, 1, 1));
    CHECK(l[4].kind == NC_DENSE && l[4].m == 500 && l[4].has_bias && shape_is(l[4].out, 500, 1, 1));
    CHECK(l[5].kind == NC_TANH && shape_is(l[5].out, 500, 1, 1));
    CHECK(l[6].kind == NC_DENSE && shape_is(l[6].in, 500, 1, 1) && shape_is(l[6].out, 10, 1, 1));
    CHECK(l[7].kind == NC_SOFTMAX && shape_is(l[7].out, 10, 1, 1));

    /* Parameters: 50*1*5*5; 500*7200 + 500; 10*500 + 10. */
    CHECK(nc_layer_weight_count(&l[0]) == 1250 && nc_layer_bias_count(&l[0]) == 0);
    CHECK(nc_layer_weight_count(&l[4]) == 3600000 && nc_layer_bias_count(&l[4]) == 500);
    CHECK(nc_layer_weight_count(&l[6]) == 5000 && nc_layer_bias_count(&l[6]) == 10);
    CHECK(nc_layer_weight_count(&l[1]) == 0 && nc_layer_weight_count(&l[3]) == 0);
    CHECK(m->n_params == 1250 + 3600500 + 5010);

    /* Pointers into the one allocation, in layer order, weight before bias. */
    CHECK(l[0].weight == m->params);
    CHECK(l[4].weight == m->params + 1250 && l[4].bias == l[4].weight + 3600000);
    CHECK(l[6].weight == l[4].bias + 500 && l[6].bias == l[6].weight + 5000);
    CHECK(l[6].bias + 10 == m->params + m->n_params);

    /* FLOPs per image: 2 * MACs for conv and dense, one per output element for the rest, 0 for flatten. */
    CHECK(nc_layer_flops(&l[0]) == 2.0 * 50 * 24 * 24 * 25);
    CHECK(nc_layer_flops(&l[1]) == 50.0 * 24 * 24);
    CHECK(nc_layer_flops(&l[2]) == 50.0 * 12 * 12);
    CHECK(nc_layer_flops(&l[3]) == 0.0);
    CHECK(nc_layer_flops(&l[4]) == 2.0 * 500 * 7200);
    CHECK(nc_layer_flops(&l[6]) == 2.0 * 10 * 500);
    CHECK(nc_layer_flops(&l[7]) == 10.0);

    CHECK(nc_model_num_classes(m) == 10);
    CHECK(nc_model_num_conv(m) == 1);
    CHECK(strcmp(nc_model_name(m), "t") == 0);
    nc_model_free(m);
}

/* 2019 spring as models/README.md's table has it: both convolutions followed by tanh and maxpool 2. */
static void test_course_2019_spring(void) {
    nc_model *m = build_ok("1x48x48 raw", "conv 6 5; tanh; maxpool 2 2; conv 16 5; tanh; maxpool 2 2; flatten; "
                                          "dense 140 bias; tanh; dense 10 bias; softmax");
    if (!m) return;
    const nc_layer *l = m->layers;
    CHECK(m->n_layers == 11);
    CHECK(shape_is(l[0].out, 6, 44, 44));
    CHECK(shape_is(l[2].out, 6, 22, 22));
    CHECK(shape_is(l[3].in, 6, 22, 22) && shape_is(l[3].out, 16, 18, 18));
    CHECK(shape_is(l[5].out, 16, 9, 9));
    CHECK(shape_is(l[6].out, 1296, 1, 1));
    CHECK(shape_is(l[7].out, 140, 1, 1));
    CHECK(shape_is(l[9].out, 10, 1, 1));
    CHECK(nc_layer_weight_count(&l[3]) == 16 * 6 * 25);
    CHECK(m->n_params == 150 + 2400 + (140 * 1296 + 140) + (10 * 140 + 10));
    CHECK(nc_layer_flops(&l[3]) == 2.0 * 16 * 18 * 18 * 6 * 25);
    CHECK(nc_model_num_conv(m) == 2);
    CHECK(nc_model_num_classes(m) == 10);
    nc_model_free(m);
}

static void test_course_2020(void) {
    nc_model *m = build_ok("1x86x86 raw", "conv 4 7; relu; maxpool 2 2; conv 16 7; relu; maxpool 4 4; flatten; "
                                          "dense 32 bias; relu; dense 10 bias; softmax");
    if (!m) return;
    const nc_layer *l = m->layers;
    CHECK(m->n_layers == 11);
    CHECK(shape_is(l[0].out, 4, 80, 80)); /* 86 - 7 + 1 */
    CHECK(l[1].kind == NC_RELU && shape_is(l[1].out, 4, 80, 80));
    CHECK(shape_is(l[2].out, 4, 40, 40));  /* (80 - 2) / 2 + 1 */
    CHECK(shape_is(l[3].out, 16, 34, 34)); /* 40 - 7 + 1 */
    CHECK(shape_is(l[5].out, 16, 8, 8));   /* (34 - 4) / 4 + 1, floor */
    CHECK(shape_is(l[6].out, 1024, 1, 1));
    CHECK(shape_is(l[7].out, 32, 1, 1));
    CHECK(shape_is(l[8].out, 32, 1, 1));
    CHECK(shape_is(l[9].out, 10, 1, 1));
    CHECK(shape_is(l[10].out, 10, 1, 1));
    CHECK(m->n_params == 196 + 3136 + 32800 + 330);
    CHECK(nc_layer_flops(&l[0]) == 2.0 * 4 * 80 * 80 * 49);
    CHECK(nc_layer_flops(&l[3]) == 2.0 * 16 * 34 * 34 * 4 * 49);
    CHECK(nc_layer_flops(&l[7]) == 2.0 * 32 * 1024);
    CHECK(nc_model_num_conv(m) == 2);
    nc_model_free(m);
}

static void test_other_layers(void) {
    nc_model *m = build_ok("3x10x9 unit", "conv 2 3 bias; sigmoid; avgpool 3 2; flatten; flatten; dense 5; softmax");
    if (!m) return;
    const nc_layer *l = m->layers;
    CHECK(m->scaling == NC_SCALE_UNIT);
    CHECK(shape_is(l[0].out, 2, 8, 7) && l[0].has_bias && l[0].bias == l[0].weight + 2 * 3 * 9);
    CHECK(l[1].kind == NC_SIGMOID);
    CHECK(l[2].kind == NC_AVGPOOL && shape_is(l[2].out, 2, 3, 3)); /* (8-3)/2+1 = 3, (7-3)/2+1 = 3 */
    CHECK(shape_is(l[3].out, 18, 1, 1) && shape_is(l[4].out, 18, 1, 1));
    CHECK(l[5].bias == NULL && nc_layer_bias_count(&l[5]) == 0);
    CHECK(m->n_params == 54 + 2 + 90);
    CHECK(nc_layer_is_activation(NC_TANH) && nc_layer_is_activation(NC_RELU) && nc_layer_is_activation(NC_SIGMOID));
    CHECK(!nc_layer_is_activation(NC_SOFTMAX) && !nc_layer_is_activation(NC_CONV));
    CHECK(strcmp(nc_layer_kind_name(NC_AVGPOOL), "avgpool") == 0);
    nc_model_free(m);

    /* A network without parameters and one that does not end in a flat output are legal. */
    m = build_ok("1x8x8 raw", "maxpool 2 2; relu");
    if (m) {
        CHECK(m->n_params == 0 && nc_model_num_classes(m) == 16 && nc_model_num_conv(m) == 0);
        nc_model_free(m);
    }
    /* Exactly NC_MAX_LAYERS layers. */
    char many[NC_MAX_LAYERS * 8] = "";
    for (int i = 0; i < NC_MAX_LAYERS; i++) strcat(many, i ? "; relu" : "relu");
    m = build_ok("1x2x2 raw", many);
    if (m) {
        CHECK(m->n_layers == NC_MAX_LAYERS);
        nc_model_free(m);
    }
}

static void test_parse_errors(void) {
    const char *in = "1x28x28 raw";
    /* Layer text. */
    build_fails(in, "conv 50 5; tanh; maxpool 2 2; maxpoo 2 2", NC_ERR_FORMAT, "layer 3: unknown layer 'maxpoo'");
    build_fails(in, "Conv 50 5", NC_ERR_FORMAT, "layer 0: unknown layer 'Conv'");
    build_fails(in, "conv 50", NC_ERR_FORMAT, "layer 0: conv needs M and K");
    build_fails(in, "conv", NC_ERR_FORMAT, "layer 0: conv needs M and K");
    build_fails(in, "conv -5 5", NC_ERR_FORMAT, "layer 0: conv M '-5'");
    build_fails(in, "conv 0 5", NC_ERR_FORMAT, "layer 0: conv M '0'");
    build_fails(in, "conv +5 5", NC_ERR_FORMAT, "layer 0: conv M '+5'");
    build_fails(in, "conv 65537 5", NC_ERR_FORMAT, "conv M '65537' is not an integer in 1..65536");
    build_fails(in, "conv 99999999999999999999 5", NC_ERR_FORMAT, "conv M '99999999999999999999'");
    build_fails(in, "conv 5 65", NC_ERR_FORMAT, "layer 0: conv K '65' is not an integer in 1..64");
    build_fails(in, "conv 5 5.0", NC_ERR_FORMAT, "conv K '5.0'");
    build_fails(in, "conv 5 5 nobias", NC_ERR_FORMAT, "layer 0: unexpected 'nobias' after conv");
    build_fails(in, "conv 5 5 bias bias", NC_ERR_FORMAT, "layer 0: unexpected 'bias' after conv");
    build_fails(in, "conv 5 5; tanh 3", NC_ERR_FORMAT, "layer 1: unexpected '3' after tanh");
    build_fails(in, "conv 5 5; maxpool 2", NC_ERR_FORMAT, "layer 1: maxpool needs P and S");
    build_fails(in, "conv 5 5; avgpool 2 x", NC_ERR_FORMAT, "layer 1: avgpool S 'x'");
    build_fails(in, "conv 5 5; maxpool 2 2 2", NC_ERR_FORMAT, "layer 1: unexpected '2' after maxpool");
    build_fails(in, "flatten; dense", NC_ERR_FORMAT, "layer 1: dense needs N");
    build_fails(in, "flatten; dense 0 bias", NC_ERR_FORMAT, "layer 1: dense N '0'");
    build_fails(in, "flatten; dense 10 bias x y z w v u t s r q", NC_ERR_FORMAT, "layer 1: unexpected 'x' after dense");
    build_fails(in, "", NC_ERR_FORMAT, "no layers");
    build_fails(in, "  \t ", NC_ERR_FORMAT, "no layers");
    build_fails(in, NULL, NC_ERR_FORMAT, "layers");
    build_fails(in, "conv 5 5;; tanh", NC_ERR_FORMAT, "layer 1: empty");
    build_fails(in, "conv 5 5; tanh;", NC_ERR_FORMAT, "layer 2: empty");
    build_fails(in, ";", NC_ERR_FORMAT, "layer 0: empty");
    char many[(NC_MAX_LAYERS + 1) * 8] = "";
    for (int i = 0; i <= NC_MAX_LAYERS; i++) strcat(many, i ? "; relu" : "relu");
    build_fails("1x2x2 raw", many, NC_ERR_FORMAT, "too many layers (at most 32)");

    /* Input text. */
    const char *ly = "flatten";
    build_fails("28x28 raw", ly, NC_ERR_FORMAT, "input: bad shape '28x28'");
    build_fails("1x28x28x3 raw", ly, NC_ERR_FORMAT, "input: bad shape '1x28x28x3'");
    build_fails("1x28x raw", ly, NC_ERR_FORMAT, "input: bad shape '1x28x'");
    build_fails("0x28x28 raw", ly, NC_ERR_FORMAT, "input: bad shape '0x28x28'");
    build_fails("1x4097x28 raw", ly, NC_ERR_FORMAT, "each 1..4096");
    build_fails("1 x 28 x 28 raw", ly, NC_ERR_FORMAT, "input: bad shape '1'");
    build_fails("1x28x28", ly, NC_ERR_FORMAT, "input: missing scaling");
    build_fails("1x28x28 RAW", ly, NC_ERR_FORMAT, "input: unknown scaling 'RAW'");
    build_fails("1x28x28 raw 3", ly, NC_ERR_FORMAT, "input: unexpected '3'");
    build_fails("1x28x28 norm 0.5", ly, NC_ERR_FORMAT, "input: norm needs MEAN and STD");
    build_fails("1x28x28 norm x 0.5", ly, NC_ERR_FORMAT, "input: bad norm mean 'x'");
    build_fails("1x28x28 norm 0.5 0", ly, NC_ERR_FORMAT, "input: bad norm std '0'");
    build_fails("1x28x28 norm 0.5 -1", ly, NC_ERR_FORMAT, "input: bad norm std '-1'");
    build_fails("1x28x28 norm 0.5 nan", ly, NC_ERR_FORMAT, "input: bad norm std 'nan'");
    build_fails("1x28x28 norm inf 1", ly, NC_ERR_FORMAT, "input: bad norm mean 'inf'");
    build_fails("1x28x28 norm 0.5 1 2", ly, NC_ERR_FORMAT, "input: unexpected '2'");
    build_fails("", ly, NC_ERR_FORMAT, "input: empty");
    build_fails(NULL, ly, NC_ERR_FORMAT, "input:");
    build_fails("4096x4096x4096 raw", ly, NC_ERR_FORMAT, "too many elements");

    /* Shapes. */
    build_fails("1x5x5 raw", "conv 3 7", NC_ERR_MISMATCH, "layer 0: conv kernel 7 is larger than its input 1x5x5");
    build_fails("1x9x5 raw", "conv 3 6", NC_ERR_MISMATCH, "layer 0: conv kernel 6 is larger than its input 1x9x5");
    build_fails("1x28x28 raw", "conv 4 5; maxpool 25 25", NC_ERR_MISMATCH,
                "layer 1: maxpool window 25 is larger than its input 4x24x24");
    build_fails("1x28x28 raw", "conv 50 5; tanh; maxpool 2 2; relu; dense 10", NC_ERR_MISMATCH,
                "layer 4: dense needs a flattened input; add 'flatten' before it");
    build_fails("1x28x28 raw", "flatten; conv 2 1", NC_ERR_MISMATCH, "layer 1: conv after flatten");
    build_fails("1x28x28 raw", "flatten; relu; avgpool 1 1", NC_ERR_MISMATCH, "layer 2: avgpool after flatten");
    build_fails("1x28x28 raw", "flatten; softmax; relu", NC_ERR_MISMATCH, "layer 1: softmax must be the last layer");
    build_fails("1x28x28 raw", "conv 2 5; softmax", NC_ERR_MISMATCH, "layer 1: softmax needs a flattened input");
    build_fails("1x4096x4096 raw", "conv 65536 1", NC_ERR_MISMATCH, "layer 0: output 65536x4096x4096 has too many");
}

/* ---------------------------------------------------------- text back */

static void check_round_trip(const char *input, const char *layers, const char *want_in, const char *want_layers) {
    nc_model *m = build_ok(input, layers);
    if (!m) return;
    char a[256], b[1024];
    nc_model_input_text(m, a, sizeof a);
    nc_model_layers_text(m, b, sizeof b);
    CHECK(strcmp(a, want_in) == 0);
    CHECK(strcmp(b, want_layers) == 0);
    if (strcmp(a, want_in) || strcmp(b, want_layers)) fprintf(stderr, "  got '%s' / '%s'\n", a, b);

    /* And back again: the same model, field for field. */
    nc_model *m2 = build_ok(a, b);
    if (m2) {
        CHECK(m2->n_layers == m->n_layers && m2->scaling == m->scaling && m2->n_params == m->n_params);
        CHECK(memcmp(&m2->mean, &m->mean, sizeof m->mean) == 0 && memcmp(&m2->std, &m->std, sizeof m->std) == 0);
        for (int i = 0; i < m->n_layers; i++) {
            const nc_layer *x = &m->layers[i], *y = &m2->layers[i];
            CHECK(x->kind == y->kind && x->m == y->m && x->k == y->k && x->p == y->p && x->s == y->s &&
                  x->has_bias == y->has_bias && shape_is(y->out, x->out.c, x->out.h, x->out.w));
        }
        char a2[256], b2[1024];
        nc_model_input_text(m2, a2, sizeof a2);
        nc_model_layers_text(m2, b2, sizeof b2);
        CHECK(strcmp(a, a2) == 0 && strcmp(b, b2) == 0);
        nc_model_free(m2);
    }
    nc_model_free(m);
}

static void test_text(void) {
    const char *l17 = "conv 50 5; tanh; maxpool 2 2; flatten; dense 500 bias; tanh; dense 10 bias; softmax";
    check_round_trip("1x28x28 raw", l17, "1x28x28 raw", l17);
    check_round_trip("  1x28x28\traw  ",
                     " conv  50 5 ;tanh;maxpool 2  2;\nflatten;dense 500 bias ;tanh; dense 10 bias;softmax ",
                     "1x28x28 raw", l17);
    check_round_trip("3x10x9 unit", "conv 2 3 bias; sigmoid; avgpool 3 2; flatten; dense 5; softmax", "3x10x9 unit",
                     "conv 2 3 bias; sigmoid; avgpool 3 2; flatten; dense 5; softmax");
    /* norm: %.9g keeps every bit of the float. */
    check_round_trip("1x28x28 norm 0.2860 0.3530", "flatten", "1x28x28 norm 0.286000013 0.352999985", "flatten");
    check_round_trip("1x28x28 norm -1e-3 3", "flatten", "1x28x28 norm -0.00100000005 3", "flatten");

    /* A short buffer gets a truncated, terminated text. */
    nc_model *m = build_ok("1x28x28 raw", l17);
    if (m) {
        char small[12];
        memset(small, 'x', sizeof small);
        nc_model_layers_text(m, small, sizeof small);
        CHECK(strcmp(small, "conv 50 5; ") == 0);
        nc_model_input_text(m, small, 4);
        CHECK(strcmp(small, "1x2") == 0);
        nc_model_free(m);
    }
}

/* --------------------------------------------------------------- init */

static void test_init(void) {
    const char *ly = "conv 4 7; relu; maxpool 2 2; conv 16 7; relu; maxpool 4 4; flatten; dense 32 bias; relu; "
                     "dense 10 bias; softmax";
    nc_model *a = build_ok("1x86x86 raw", ly), *b = build_ok("1x86x86 raw", ly);
    if (!a || !b) {
        nc_model_free(a);
        nc_model_free(b);
        return;
    }
    nc_model_init_seeded(a, 42);
    nc_model_init_seeded(b, 42);
    CHECK(memcmp(a->params, b->params, a->n_params * sizeof(float)) == 0);
    nc_model_init_seeded(b, 43);
    CHECK(memcmp(a->params, b->params, a->n_params * sizeof(float)) != 0);

    /* Every value inside +-1/sqrt(fan_in) of its layer, and the values spread over that range. */
    for (int i = 0; i < a->n_layers; i++) {
        const nc_layer *l = &a->layers[i];
        size_t w = nc_layer_weight_count(l), nb = nc_layer_bias_count(l);
        if (!w) continue;
        double fan_in = l->kind == NC_CONV ? (double)l->in.c * l->k * l->k : (double)nc_shape_size(l->in);
        float bound = (float)(1.0 / sqrt(fan_in));
        float lo = 0, hi = 0;
        int inside = 1;
        double sum = 0;
        for (size_t j = 0; j < w + nb; j++) {
            float v = j < w ? l->weight[j] : l->bias[j - w];
            inside &= fabsf(v) <= bound;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            sum += v;
        }
        CHECK(inside);
        CHECK(lo < -0.8f * bound && hi > 0.8f * bound);
        CHECK(fabs(sum / (double)(w + nb)) < 0.2 * bound);
    }
    nc_model_free(a);
    nc_model_free(b);
}

/* ---------------------------------------------------------- summary */

static void test_summary(void) {
    nc_model *m = build_ok("1x86x86 raw", "conv 4 7; relu; maxpool 2 2; conv 16 7; relu; maxpool 4 4; flatten; "
                                          "dense 32 bias; relu; dense 10 bias; softmax");
    if (!m) return;
    char path[256];
    snprintf(path, sizeof path, "%s/summary.txt", tmp_dir);
    FILE *f = fopen(path, "w+");
    CHECK(f != NULL);
    if (f) {
        nc_model_print_summary(m, f);
        char text[4096] = "";
        rewind(f);
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
        CHECK(strstr(text, "model t: input 1x86x86 raw, 11 layers") != NULL);
        CHECK(strstr(text, "conv 16 7") != NULL && strstr(text, "4x40x40") != NULL && strstr(text, "16x34x34") != NULL);
        CHECK(strstr(text, "maxpool 4 4") != NULL && strstr(text, "dense 32 bias") != NULL);
        CHECK(strstr(text, "36462") != NULL); /* total parameters */
        CHECK(strstr(text, "total") != NULL);
        int lines = 0;
        for (char *p = text; *p; p++) lines += *p == '\n';
        CHECK(lines == 2 + 11 + 1);
        if (lines != 14) fputs(text, stderr);
    }
    unlink(path);
    nc_model_free(m);
}

/* ------------------------------------------------------- files: good */

static void path_in_dir(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", tmp_dir, name);
}

static void test_save_load(void) {
    nc_model *m = build_ok("1x12x12 norm 0.286 0.353", "conv 3 5 bias; tanh; maxpool 2 2; flatten; dense 7 bias; "
                                                       "sigmoid; dense 4; softmax");
    if (!m) return;
    snprintf(m->name, sizeof m->name, "my-net");
    nc_model_init_seeded(m, 7);
    char path[256];
    path_in_dir(path, sizeof path, "net.safetensors");
    nc_error err = {0};
    int rc = nc_model_save(m, path, &err);
    CHECK(rc == NC_OK);
    if (rc) fprintf(stderr, "  save: %s\n", err.msg);

    /* The header is padded so the data starts 8-byte aligned; the data is every parameter, in layer order. */
    struct stat st;
    CHECK(stat(path, &st) == 0);
    CHECK((st.st_mode & 0777) == 0644);
    FILE *f = fopen(path, "rb");
    unsigned char len8[8] = {0};
    CHECK(f && fread(len8, 1, 8, f) == 8);
    if (f) fclose(f);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | len8[i];
    CHECK((8 + hlen) % 8 == 0);
    CHECK((uint64_t)st.st_size == 8 + hlen + m->n_params * sizeof(float));

    nc_model *m2 = (nc_model *)&m2;
    rc = nc_model_load(&m2, path, &err);
    CHECK(rc == NC_OK);
    if (rc) fprintf(stderr, "  load: %s\n", err.msg);
    if (rc == NC_OK) {
        CHECK(strcmp(nc_model_name(m2), "my-net") == 0);
        CHECK(m2->n_params == m->n_params);
        CHECK(memcmp(m2->params, m->params, m->n_params * sizeof(float)) == 0);
        CHECK(memcmp(&m2->mean, &m->mean, sizeof m->mean) == 0 && memcmp(&m2->std, &m->std, sizeof m->std) == 0);
        char a[1024], b[1024];
        nc_model_layers_text(m, a, sizeof a);
        nc_model_layers_text(m2, b, sizeof b);
        CHECK(strcmp(a, b) == 0);
        CHECK(m2->layers[0].bias == m2->layers[0].weight + 75 && m2->layers[6].bias == NULL);
        nc_model_free(m2);
    }

    /* Saving over an existing file replaces it. */
    nc_model_init_seeded(m, 8);
    CHECK(nc_model_save(m, path, &err) == NC_OK);
    rc = nc_model_load(&m2, path, &err);
    CHECK(rc == NC_OK);
    if (rc == NC_OK) {
        CHECK(memcmp(m2->params, m->params, m->n_params * sizeof(float)) == 0);
        nc_model_free(m2);
    }
    unlink(path);
    nc_model_free(m);
}

/* Lists names in tmp_dir that contain fragment; returns how many. */
static int count_files_with(const char *fragment) {
    DIR *d = opendir(tmp_dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, fragment) != NULL;
    closedir(d);
    return n;
}

static void test_save_failures(void) {
    nc_model *m = build_ok("1x4x4 raw", "conv 2 3; relu; flatten; dense 3 bias; softmax");
    if (!m) return;
    nc_model_init_seeded(m, 1);
    nc_error err = {0};
    char path[256];

    /* Into a directory that does not exist: nothing is created. */
    path_in_dir(path, sizeof path, "no-such-dir/m.safetensors");
    CHECK(nc_model_save(m, path, &err) == NC_ERR_IO);
    CHECK(err.code == NC_ERR_IO);
    CHECK(strncmp(err.msg, path, strlen(path)) == 0);
    CHECK(access(path, F_OK) != 0);
    char sub[256];
    path_in_dir(sub, sizeof sub, "no-such-dir");
    CHECK(access(sub, F_OK) != 0);

    /* Onto a directory: refused, nothing left behind. */
    path_in_dir(path, sizeof path, "a-dir");
    CHECK(mkdir(path, 0755) == 0);
    CHECK(nc_model_save(m, path, &err) == NC_ERR_IO);
    CHECK_MSG(err, "is a directory");
    CHECK(strncmp(err.msg, path, strlen(path)) == 0);
    CHECK(count_files_with(".tmp.") == 0);
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));

    /* Loading a directory or a missing file is an I/O error naming the path. */
    nc_model *m2 = (nc_model *)&m2;
    CHECK(nc_model_load(&m2, path, &err) == NC_ERR_IO);
    CHECK(m2 == NULL);
    CHECK(strncmp(err.msg, path, strlen(path)) == 0);
    rmdir(path);
    path_in_dir(path, sizeof path, "missing.safetensors");
    CHECK(nc_model_load(&m2, path, &err) == NC_ERR_IO);
    CHECK_MSG(err, "cannot open");
    CHECK(strncmp(err.msg, path, strlen(path)) == 0);
    nc_model_free(m);
}

/* Whether the file at path loads as m's parameters. */
static int loads_as(const nc_model *m, const char *path) {
    nc_error err = {0};
    nc_model *m2 = NULL;
    const int ok = nc_model_load(&m2, path, &err) == NC_OK && m2->n_params == m->n_params &&
                   memcmp(m2->params, m->params, m->n_params * sizeof(float)) == 0;
    if (!ok) fprintf(stderr, "  %s: %s\n", path, err.msg);
    nc_model_free(m2);
    return ok;
}

/* What the destination is: a symbolic link (its file replaced, the link kept), a FIFO (written into, not replaced), a
 * link to nothing, an empty path. */
static void test_save_targets(void) {
    nc_model *m = build_ok("1x4x4 raw", "conv 2 3; relu; flatten; dense 3 bias; softmax");
    if (!m) return;
    nc_model_init_seeded(m, 3);
    nc_error err = {0};
    char file[256], link[256], fifo[256];
    struct stat st;

    path_in_dir(file, sizeof file, "target.safetensors");
    path_in_dir(link, sizeof link, "link.safetensors");
    CHECK(nc_model_save(m, file, &err) == NC_OK && loads_as(m, file));
    CHECK(symlink("target.safetensors", link) == 0);
    nc_model_init_seeded(m, 4);
    CHECK(nc_model_save(m, link, &err) == NC_OK);
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(loads_as(m, file) && count_files_with(".tmp.") == 0);
    unlink(link);

    /* A link to nothing: refused, no file made where it points. */
    CHECK(symlink("nothing-here.safetensors", link) == 0);
    CHECK(nc_model_save(m, link, &err) == NC_ERR_IO);
    CHECK_MSG(err, "symbolic link to a file that does not exist");
    CHECK(strncmp(err.msg, link, strlen(link)) == 0);
    CHECK(count_files_with("nothing-here") == 0 && count_files_with(".tmp.") == 0);
    unlink(link);

    /* A FIFO: a child reads what the save writes into it (alarm: it is not left waiting if the save replaced the FIFO
     * instead); the FIFO stays one. */
    path_in_dir(fifo, sizeof fifo, "a-fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    struct stat fst;
    CHECK(stat(file, &fst) == 0);
    fflush(NULL);
    const pid_t child = fork();
    if (child == 0) {
        alarm(10);
        const int fd = open(fifo, O_RDONLY);
        size_t got = 0;
        char buf[4096];
        for (ssize_t k; fd >= 0 && (k = read(fd, buf, sizeof buf)) > 0;) got += (size_t)k;
        _exit(fd >= 0 && got == (size_t)fst.st_size ? 0 : 1);
    }
    CHECK(child > 0);
    const int rc = nc_model_save(m, fifo, &err);
    CHECK(rc == NC_OK);
    if (rc) fprintf(stderr, "  fifo: %s\n", err.msg);
    int status = -1;
    CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    unlink(fifo);
    unlink(file);

    CHECK(nc_model_save(m, "", &err) == NC_ERR_ARG);
    CHECK_MSG(err, "empty path");
    nc_model_free(m);
}

/* ---------------------------------------------------- files: corrupt */

/* The small model these files describe: 0.weight (2,1,3,3) = 72 bytes, 3.weight (3,8) = 96, 3.bias (3) = 12. */
#define META                                                                                                           \
    "\"__metadata__\":{\"nanoconv.input\":\"1x4x4 raw\",\"nanoconv.layers\":\"conv 2 3; relu; flatten; dense 3 "       \
    "bias; softmax\"}"
#define T0 "\"0.weight\":{\"dtype\":\"F32\",\"shape\":[2,1,3,3],\"data_offsets\":[0,72]}"
#define T3W "\"3.weight\":{\"dtype\":\"F32\",\"shape\":[3,8],\"data_offsets\":[72,168]}"
#define T3B "\"3.bias\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[168,180]}"
#define GOOD "{" META "," T0 "," T3W "," T3B "}"

/* Writes u64 hlen, the header text and data_len bytes of float data (k * 0.5 - 10 for float k). */
static void write_file(const char *path, uint64_t hlen, const char *header, size_t data_len) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)(hlen >> (8 * i));
    fwrite(len8, 1, 8, f);
    fwrite(header, 1, strlen(header), f);
    for (size_t k = 0; k < data_len / 4; k++) {
        float v = (float)k * 0.5f - 10.0f;
        fwrite(&v, sizeof v, 1, f);
    }
    for (size_t k = 0; k < data_len % 4; k++) fputc(0, f);
    fclose(f);
}

/* Writes a file of this header and data, then checks that loading fails with code and a message starting with the
 * path and containing fragment. */
static void load_fails(const char *name, const char *header, size_t data_len, int code, const char *fragment) {
    char path[256];
    path_in_dir(path, sizeof path, name);
    write_file(path, strlen(header), header, data_len);
    nc_model *m = (nc_model *)&m;
    nc_error err = {0};
    int rc = nc_model_load(&m, path, &err);
    CHECK(rc == code);
    CHECK(m == NULL);
    CHECK(strncmp(err.msg, path, strlen(path)) == 0);
    CHECK_MSG(err, fragment);
    if (rc != code) fprintf(stderr, "  %s gave %d: %s\n", name, rc, err.msg);
    if (rc == NC_OK) nc_model_free(m);
    unlink(path);
}

static void test_hand_written_file(void) {
    char path[256];
    path_in_dir(path, sizeof path, "hand.model.safetensors");
    write_file(path, strlen(GOOD "   "), GOOD "   ", 180); /* padding spaces are allowed */
    nc_model *m = NULL;
    nc_error err = {0};
    int rc = nc_model_load(&m, path, &err);
    CHECK(rc == NC_OK);
    if (rc) fprintf(stderr, "  hand-written file: %s\n", err.msg);
    if (m) {
        CHECK(strcmp(nc_model_name(m), "hand.model") == 0); /* no nanoconv.name: the basename less its extension */
        CHECK(m->n_params == 45);
        int ok = 1;
        for (size_t k = 0; k < m->n_params; k++) ok &= m->params[k] == (float)k * 0.5f - 10.0f;
        CHECK(ok);
        CHECK(m->layers[3].bias[0] == 42 * 0.5f - 10.0f);
        nc_model_free(m);
    }
    unlink(path);
    /* A long file name: the extension off, then the name cut to its first 63 bytes (not cut first, which left the
     * name before the first dot, "my"). */
    char longer[] = "my.model-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.safetensors";
    path_in_dir(path, sizeof path, longer);
    write_file(path, strlen(GOOD), GOOD, 180);
    m = NULL;
    CHECK(nc_model_load(&m, path, &err) == NC_OK);
    if (m) {
        CHECK(strlen(nc_model_name(m)) == 63 && strncmp(nc_model_name(m), longer, 63) == 0);
        nc_model_free(m);
    }
    unlink(path);
}

/* nc_plain_text: printable ASCII and well-formed UTF-8 kept, everything else as \xHH, cut at a whole character. */
static void plain_is(const char *in, const char *want) {
    char out[NC_ERROR_MSG_LEN];
    nc_plain_text(out, sizeof out, in);
    CHECK(strcmp(out, want) == 0);
    if (strcmp(out, want)) fprintf(stderr, "  nc_plain_text gave \"%s\", want \"%s\"\n", out, want);
}

static void test_plain_text(void) {
    plain_is("tensor '3.weight' (conv 16 5)", "tensor '3.weight' (conv 16 5)");
    plain_is("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
             "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");                             /* é, €, an emoji */
    plain_is("\x1b[31mred\x7f", "\\x1b[31mred\\x7f");                                  /* escape and DEL */
    plain_is("a\nb\tc\rd", "a\\x0ab\\x09c\\x0dd");                                     /* one line */
    plain_is("\xc2\x85|\xc2\xa0", "\\xc2\\x85|\xc2\xa0");                              /* C1 NEL escaped; U+00A0 kept */
    plain_is("\xc0\xaf \xe0\x80\xaf", "\\xc0\\xaf \\xe0\\x80\\xaf");                   /* overlong forms */
    plain_is("\xed\xa0\x80 \xf4\x90\x80\x80", "\\xed\\xa0\\x80 \\xf4\\x90\\x80\\x80"); /* a surrogate; > U+10FFFF */
    plain_is("x\xe2\x82", "x\\xe2\\x82");       /* a character cut short by the end */
    plain_is("\xb1rel\xffu", "\\xb1rel\\xffu"); /* stray continuation byte; 0xff */
    CHECK(nc_utf8_len("\xc3\xa9") == 2 && nc_utf8_len("\xe2\x82\xac") == 3 && nc_utf8_len("\xf0\x9f\x98\x80") == 4);
    CHECK(nc_utf8_len("a") == 0 && nc_utf8_len("\xc3") == 0 && nc_utf8_len("\xf8\x88\x80\x80\x80") == 0);

    /* Escapes that do not fit end at a whole one: 600 control bytes give 127 escapes (508 of the 511 characters). */
    char in[601], out[NC_ERROR_MSG_LEN];
    memset(in, 1, 600);
    in[600] = '\0';
    nc_plain_text(out, sizeof out, in);
    CHECK(strlen(out) == 508 && strncmp(out + 504, "\\x01", 4) == 0);
    /* A multi-byte character that does not fit is left out whole. */
    memset(in, 'a', 509);
    memcpy(in + 509, "\xe2\x82\xac", 4);
    nc_plain_text(out, sizeof out, in);
    CHECK(strlen(out) == 509);

    /* Any cap: a 6-byte buffer has no room for an escape after "ab", a 7-byte one has. */
    char small[7];
    nc_plain_text(small, 6, "ab\x1b");
    CHECK(strcmp(small, "ab") == 0);
    nc_plain_text(small, 7, "ab\x1b");
    CHECK(strcmp(small, "ab\\x1b") == 0);

    /* A model's name, as eval and info print it: escaped, and never cut inside a character. */
    nc_model *m = NULL;
    nc_error e = {0};
    CHECK(nc_model_build(&m, "n\x1b[2Jx", "1x4x4 raw", "flatten; dense 10 bias; softmax", &e) == NC_OK);
    CHECK(m && strcmp(m->name, "n\\x1b[2Jx") == 0);
    nc_model_free(m);
    memset(in, 'a', 62);
    memcpy(in + 62, "\xc3\xa9", 3); /* é takes bytes 62 and 63 of a 64-byte name: left out whole */
    m = NULL;
    CHECK(nc_model_build(&m, in, "1x4x4 raw", "flatten; dense 10 bias; softmax", &e) == NC_OK);
    CHECK(m && strlen(m->name) == 62);
    nc_model_free(m);

    /* nc_fail and nc_error_prefix pass the whole message through it. */
    nc_error err = {0};
    CHECK(nc_fail(&err, NC_ERR_FORMAT, "layer '%s'", "\x1b]0;title\x07") == NC_ERR_FORMAT);
    CHECK(strcmp(err.msg, "layer '\\x1b]0;title\\x07'") == 0);
    nc_error_prefix(&err, "%s", "dir\n/m.safetensors");
    CHECK(strcmp(err.msg, "dir\\x0a/m.safetensors: layer '\\x1b]0;title\\x07'") == 0);
}

static void test_corrupt_files(void) {
    char path[256];
    nc_model *m = (nc_model *)&m;
    nc_error err = {0};

    /* Shorter than the 8-byte length. */
    path_in_dir(path, sizeof path, "short.safetensors");
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fwrite("\x10\0\0\0\0", 1, 5, f);
        fclose(f);
    }
    CHECK(nc_model_load(&m, path, &err) == NC_ERR_FORMAT);
    CHECK(m == NULL && strncmp(err.msg, path, strlen(path)) == 0);
    CHECK_MSG(err, "5 bytes, too short");
    unlink(path);

    /* Header length beyond the file, and absurd. */
    path_in_dir(path, sizeof path, "long.safetensors");
    write_file(path, strlen(GOOD) + 181, GOOD, 180);
    CHECK(nc_model_load(&m, path, &err) == NC_ERR_FORMAT);
    CHECK_MSG(err, "runs past the end of the file");
    CHECK(strncmp(err.msg, path, strlen(path)) == 0);
    write_file(path, (uint64_t)1 << 40, GOOD, 180);
    CHECK(nc_model_load(&m, path, &err) == NC_ERR_FORMAT);
    CHECK_MSG(err, "is absurd");
    unlink(path);

    /* The JSON. */
    load_fails("json.safetensors", "{\"__metadata__\": {", 0, NC_ERR_FORMAT, "JSON parse error");
    load_fails("json2.safetensors", GOOD " x", 180, NC_ERR_FORMAT, "junk after the object");
    load_fails("json3.safetensors", "[" GOOD "]", 180, NC_ERR_FORMAT, "does not start with '{'");
    load_fails("empty.safetensors", "", 0, NC_ERR_FORMAT, "does not start with '{'");

    /* The metadata. */
    load_fails("nometa.safetensors", "{" T0 "," T3W "," T3B "}", 180, NC_ERR_FORMAT, "no nanoconv architecture");
    load_fails("nometa2.safetensors", "{" T0 "," T3W "," T3B "}", 180, NC_ERR_FORMAT, "docs/MODEL_FORMAT.md");
    load_fails("nolayers.safetensors", "{\"__metadata__\":{\"nanoconv.input\":\"1x4x4 raw\"}," T0 "," T3W "," T3B "}",
               180, NC_ERR_FORMAT, "lacks 'nanoconv.layers'");
    load_fails("metanum.safetensors", "{\"__metadata__\":{\"nanoconv.input\":1}," T0 "}", 72, NC_ERR_FORMAT,
               "__metadata__ value 'nanoconv.input' is not a string");
    load_fails("badarch.safetensors",
               "{\"__metadata__\":{\"nanoconv.input\":\"1x4x4 raw\",\"nanoconv.layers\":\"conv 2 3; relux\"}," T0 "}",
               72, NC_ERR_FORMAT, "layer 1: unknown layer 'relux'");
    /* A byte that is not UTF-8 (the format's header is UTF-8 JSON), and a name with a terminal's escape sequence in
     * it, quoted with the sequence escaped. */
    load_fails("utf8.safetensors",
               "{\"__metadata__\":{\"nanoconv.input\":\"1x4x4 raw\",\"nanoconv.layers\":\"conv 2 3; relu\xb1\"}," T0
               "}",
               72, NC_ERR_FORMAT, "header is not UTF-8 text (byte 79 of the header)");
    load_fails(
        "esc.safetensors",
        "{\"__metadata__\":{\"nanoconv.input\":\"1x4x4 raw\",\"nanoconv.layers\":\"conv 2 3; \\u001b[31mrelu\"}," T0
        "}",
        72, NC_ERR_FORMAT, "layer 1: unknown layer '\\x1b[31mrelu'");
    /* A key twice where the loader reads it (cJSON would take the first), and NUL characters, which would cut a name
     * or value short ("0.weight\u0000x" read as "0.weight"). */
    load_fails("dupmeta.safetensors", "{" META "," META "," T0 "," T3W "," T3B "}", 180, NC_ERR_FORMAT,
               "__metadata__ appears twice");
    load_fails("dupkey.safetensors",
               "{\"__metadata__\":{\"nanoconv.input\":\"1x4x4 raw\",\"nanoconv.input\":\"5\",\"nanoconv.layers\":"
               "\"conv 2 3; relu; flatten; dense 3 bias; softmax\"}," T0 "," T3W "," T3B "}",
               180, NC_ERR_FORMAT, "__metadata__ key 'nanoconv.input' appears twice");
    load_fails("dupfield.safetensors",
               "{" META ",\"0.weight\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[2,1,3,3],\"data_offsets\":[0,"
               "72]}," T3W "," T3B "}",
               180, NC_ERR_FORMAT, "tensor '0.weight': \"dtype\" appears twice");
    load_fails("nul.safetensors",
               "{" META ",\"0.weight\\u0000x\":{\"dtype\":\"F32\",\"shape\":[2,1,3,3],\"data_offsets\":[0,72]}," T3W
               "," T3B "}",
               180, NC_ERR_FORMAT, "header has a NUL character (\\u0000) at byte 123");
    /* An escaped backslash, then "u0000": no NUL (the entry's member "x\\u0000" is one the loader does not read). */
    path_in_dir(path, sizeof path, "notnul.safetensors");
    static const char notnul[] =
        "{" META ",\"0.weight\":{\"dtype\":\"F32\",\"shape\":[2,1,3,3],\"data_offsets\":[0,72],"
        "\"x\\\\u0000\":1}," T3W "," T3B "}";
    write_file(path, strlen(notnul), notnul, 180);
    CHECK(nc_model_load(&m, path, &err) == NC_OK && m != NULL);
    nc_model_free(m);
    m = NULL;
    unlink(path);
    {
        char hdr[] = "{" META "," T0 "," T3W "," T3B "}";
        *strstr(hdr, "relu") = '\0'; /* a NUL byte in nanoconv.layers */
        path_in_dir(path, sizeof path, "nulbyte.safetensors");
        FILE *nf = fopen(path, "wb");
        const uint64_t hl = sizeof hdr - 1;
        unsigned char l8[8];
        for (int i = 0; i < 8; i++) l8[i] = (unsigned char)(hl >> (8 * i));
        static const float zeros[45];
        CHECK(nf && fwrite(l8, 1, 8, nf) == 8 && fwrite(hdr, 1, hl, nf) == hl && fwrite(zeros, 4, 45, nf) == 45);
        if (nf) fclose(nf);
        CHECK(nc_model_load(&m, path, &err) == NC_ERR_FORMAT && m == NULL);
        CHECK_MSG(err, "header has a NUL character at byte");
        unlink(path);
    }

    /* Entries. */
    load_fails("notobj.safetensors", "{" META ",\"0.weight\":5," T3W "," T3B "}", 180, NC_ERR_FORMAT,
               "tensor '0.weight': entry is not an object");
    load_fails("noshape.safetensors",
               "{" META ",\"0.weight\":{\"dtype\":\"F32\",\"data_offsets\":[0,72]}," T3W "," T3B "}", 180,
               NC_ERR_FORMAT, "tensor '0.weight': missing or invalid \"shape\"");
    load_fails("nodtype.safetensors",
               "{" META ",\"0.weight\":{\"shape\":[2,1,3,3],\"data_offsets\":[0,72]}," T3W "," T3B "}", 180,
               NC_ERR_FORMAT, "tensor '0.weight': missing or invalid \"dtype\"");
    load_fails("nooffs.safetensors", "{" META ",\"0.weight\":{\"dtype\":\"F32\",\"shape\":[2,1,3,3]}," T3W "," T3B "}",
               180, NC_ERR_FORMAT, "tensor '0.weight': missing or invalid \"data_offsets\"");
    load_fails("negdim.safetensors",
               "{" META ",\"0.weight\":{\"dtype\":\"F32\",\"shape\":[2,1,3,-3],"
               "\"data_offsets\":[0,72]}," T3W "," T3B "}",
               180, NC_ERR_FORMAT, "shape entry 3 is not");
    load_fails("fracdim.safetensors",
               "{" META ",\"0.weight\":{\"dtype\":\"F32\",\"shape\":[2,1,3,2.5],"
               "\"data_offsets\":[0,72]}," T3W "," T3B "}",
               180, NC_ERR_FORMAT, "shape entry 3 is not");
    load_fails("overflow.safetensors",
               "{" META ",\"0.weight\":{\"dtype\":\"F32\",\"shape\":[4294967296,"
               "4294967296,2],\"data_offsets\":[0,72]}," T3W "," T3B "}",
               180, NC_ERR_FORMAT, "shape product overflows");
    load_fails("dtype.safetensors",
               "{" META ",\"0.weight\":{\"dtype\":\"F16\",\"shape\":[2,1,3,3],"
               "\"data_offsets\":[0,36]},\"3.weight\":{\"dtype\":\"F32\",\"shape\":[3,8],\"data_offsets\":[36,132]},"
               "\"3.bias\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[132,144]}}",
               144, NC_ERR_FORMAT,
               "tensor '0.weight' has dtype F16; nanoconv reads F32 only (convert with tensor.float()");
    load_fails("shape.safetensors",
               "{" META ",\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2,3,3],"
               "\"data_offsets\":[0,72]}," T3W "," T3B "}",
               180, NC_ERR_MISMATCH,
               "tensor '0.weight' (layer 0, conv 2 3) has shape [1, 2, 3, 3], expected [2, 1, 3, 3]");
    load_fails("rank.safetensors",
               "{" META "," T0 ",\"3.weight\":{\"dtype\":\"F32\",\"shape\":[24],"
               "\"data_offsets\":[72,168]}," T3B "}",
               180, NC_ERR_MISMATCH, "has shape [24], expected [3, 8]");
    load_fails("missing.safetensors", "{" META "," T0 "," T3W "}", 168, NC_ERR_MISMATCH,
               "tensor '3.bias' (layer 3, dense 3 bias) is missing");
    load_fails("missing0.safetensors", "{" META "," T3W "}", 168, NC_ERR_MISMATCH,
               "tensor '0.weight' (layer 0, conv 2 3) is missing");
    /* A header alone whose architecture has 2^40 parameters (4 TiB): refused from the header, before anything the
     * size of its parameters is allocated (an attempt would fail here with NC_ERR_NOMEM, and abort under ASan). */
    load_fails("huge.safetensors",
               "{\"__metadata__\":{\"nanoconv.input\":\"1x4096x4096 raw\",\"nanoconv.layers\":\"flatten; dense "
               "65536\"}}",
               0, NC_ERR_MISMATCH, "tensor '1.weight' (layer 1, dense 65536) is missing");
    load_fails("huge2.safetensors",
               "{\"__metadata__\":{\"nanoconv.input\":\"1x4096x4096 raw\",\"nanoconv.layers\":\"flatten; dense "
               "65536\"},\"1.weight\":{\"dtype\":\"F32\",\"shape\":[65536,16777216],\"data_offsets\":[0,"
               "4398046511104]},\"1.bias\":{\"dtype\":\"F32\",\"shape\":[65536],\"data_offsets\":[4398046511104,"
               "4398046773248]}}",
               8, NC_ERR_FORMAT, "run past the data buffer (8 bytes)");
    load_fails("extra.safetensors",
               "{" META "," T0 "," T3W "," T3B ",\"5.weight\":{\"dtype\":\"F32\",\"shape\":[1],"
               "\"data_offsets\":[180,184]}}",
               184, NC_ERR_MISMATCH, "unexpected tensor '5.weight'");
    load_fails("extra2.safetensors",
               "{" META "," T0 "," T3W "," T3B ",\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[1],"
               "\"data_offsets\":[180,184]}}",
               184, NC_ERR_MISMATCH, "unexpected tensor 'fc.weight'");
    load_fails("extra3.safetensors",
               "{" META "," T0 "," T3W "," T3B ",\"1.weight\":{\"dtype\":\"F32\",\"shape\":[1],"
               "\"data_offsets\":[180,184]}}",
               184, NC_ERR_MISMATCH, "'1.weight' (layer 1, relu has no such");
    load_fails("bias.safetensors",
               "{" META "," T0 "," T3W "," T3B ",\"0.bias\":{\"dtype\":\"F32\",\"shape\":[2],"
               "\"data_offsets\":[180,188]}}",
               188, NC_ERR_MISMATCH, "unexpected tensor '0.bias' (layer 0, conv 2 3 has no 'bias' flag)");
    load_fails("twice.safetensors", "{" META "," T0 "," T0 "," T3W "," T3B "}", 180, NC_ERR_FORMAT,
               "tensor '0.weight' appears twice");

    /* Offsets. */
    load_fails("beyond.safetensors", GOOD, 176, NC_ERR_FORMAT,
               "tensor '3.bias': data_offsets [168, 180] run past the data buffer (176 bytes)");
    load_fails("backwards.safetensors",
               "{" META ",\"0.weight\":{\"dtype\":\"F32\",\"shape\":[2,1,3,3],"
               "\"data_offsets\":[72,0]}," T3W "," T3B "}",
               180, NC_ERR_FORMAT, "end before they begin");
    load_fails("size.safetensors",
               "{" META ",\"0.weight\":{\"dtype\":\"F32\",\"shape\":[2,1,3,3],"
               "\"data_offsets\":[0,68]}," T3W "," T3B "}",
               180, NC_ERR_FORMAT, "hold 68 bytes");
    load_fails("gap.safetensors", GOOD, 184, NC_ERR_FORMAT, "bytes [180, 184) belong to no tensor");
    load_fails("gap2.safetensors",
               "{" META "," T0 ",\"3.weight\":{\"dtype\":\"F32\",\"shape\":[3,8],"
               "\"data_offsets\":[76,172]},\"3.bias\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[172,184]}}",
               184, NC_ERR_FORMAT, "bytes [72, 76) belong to no tensor");
    load_fails("overlap.safetensors",
               "{" META "," T0 ",\"3.weight\":{\"dtype\":\"F32\",\"shape\":[3,8],"
               "\"data_offsets\":[64,160]},\"3.bias\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[160,172]}}",
               172, NC_ERR_FORMAT, "tensors '0.weight' and '3.weight' overlap");
    load_fails("offsneg.safetensors",
               "{" META ",\"0.weight\":{\"dtype\":\"F32\",\"shape\":[2,1,3,3],"
               "\"data_offsets\":[-8,64]}," T3W "," T3B "}",
               180, NC_ERR_FORMAT, "invalid \"data_offsets\"");
}

static void remove_tmp_dir(void) {
    DIR *d = opendir(tmp_dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", tmp_dir, e->d_name);
        fprintf(stderr, "test_model: left behind: %s\n", p);
        nc_test_fail++;
        unlink(p);
    }
    closedir(d);
    rmdir(tmp_dir);
}

int main(void) {
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_course_2017();
    test_course_2019_spring();
    test_course_2020();
    test_other_layers();
    test_parse_errors();
    test_text();
    test_init();
    test_summary();
    test_save_load();
    test_save_failures();
    test_save_targets();
    test_hand_written_file();
    test_plain_text();
    test_corrupt_files();
    remove_tmp_dir();
    return nc_test_done("test_model");
}
