/*
 * The model graph: a list of layers with their shapes and parameters.
 *
 * Architecture text (stored in the model file's metadata, also taken by
 * `nanoconv train`):
 *   input  "1x28x28 raw" | "1x28x28 unit" | "1x28x28 norm MEAN STD"
 *   layers "conv 50 5; tanh; maxpool 2 2; flatten; dense 500 bias; tanh; dense 10 bias; softmax"
 * Layer i's parameters are the tensors "{i}.weight" and "{i}.bias", the names
 * PyTorch gives the same network written as an nn.Sequential.
 */
#ifndef NC_MODEL_H
#define NC_MODEL_H

#include "nanoconv.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    NC_CONV,
    NC_TANH,
    NC_RELU,
    NC_SIGMOID,
    NC_MAXPOOL,
    NC_AVGPOOL,
    NC_FLATTEN,
    NC_DENSE,
    NC_SOFTMAX,
} nc_layer_kind;

typedef enum {
    NC_SCALE_RAW,  /* x = pixel (0..255), as the course fed it */
    NC_SCALE_UNIT, /* x = pixel / 255 */
    NC_SCALE_NORM, /* x = (pixel / 255 - mean) / std */
} nc_scaling;

/* A tensor shape per image: C channels of H x W. Flattened tensors have H = W = 1. */
typedef struct {
    int c, h, w;
} nc_shape;

static inline size_t nc_shape_size(nc_shape s) {
    return (size_t)s.c * (size_t)s.h * (size_t)s.w;
}

typedef struct {
    nc_layer_kind kind;
    int m;        /* conv: output channels; dense: outputs */
    int k;        /* conv: kernel size K (square) */
    int p, s;     /* pool: window P, stride S */
    int has_bias; /* conv, dense */
    nc_shape in, out;
    float *weight; /* conv: (M, C, K, K); dense: (M, in); points into nc_model.params */
    float *bias;   /* (M) or NULL */
} nc_layer;

struct nc_model {
    char name[64];
    nc_shape input; /* c is 1 for the image data sets */
    nc_scaling scaling;
    float mean, std; /* NC_SCALE_NORM only */
    int n_layers;
    nc_layer layers[NC_MAX_LAYERS];
    float *params; /* one allocation for every layer's weight and bias */
    size_t n_params;
};

/* Parses the architecture text and infers every layer's shape; allocates
 * params (uninitialised) and points the layers into it. */
int nc_model_build(nc_model **out, const char *name, const char *input_text, const char *layers_text, nc_error *err);
/* nc_model_build in two steps. parse: the layers and their shapes, n_params counted, params and the layers' weight and
 * bias NULL (nc_model_free frees it). alloc_params: params allocated and pointed into. A file's loader checks that its
 * data holds the n_params in between, so that a short header cannot ask for terabytes. */
int nc_model_parse(nc_model **out, const char *name, const char *input_text, const char *layers_text, nc_error *err);
int nc_model_alloc_params(nc_model *m, nc_error *err);

/* Writes the architecture back as text (the inverse of nc_model_build). */
void nc_model_input_text(const nc_model *m, char *buf, size_t n);
void nc_model_layers_text(const nc_model *m, char *buf, size_t n);

const char *nc_layer_kind_name(nc_layer_kind k);
int nc_layer_is_activation(nc_layer_kind k);

/* Number of weight / bias floats of a layer (0 for layers without). */
size_t nc_layer_weight_count(const nc_layer *l);
size_t nc_layer_bias_count(const nc_layer *l);

/* Multiply-adds counted as 2 FLOPs, per image. */
double nc_layer_flops(const nc_layer *l);

/* Fills every parameter from a fixed seed (uniform in +-1/sqrt(fan_in)), so
 * that runs are reproducible without a trained file. */
void nc_model_init_seeded(nc_model *m, uint64_t seed);

/* Scales one uint8 pixel by a scaling, mean and std as a model holds them. */
static inline float nc_scale_value(nc_scaling scaling, float mean, float std, uint8_t p) {
    switch (scaling) {
    case NC_SCALE_UNIT: return (float)p / 255.0f;
    case NC_SCALE_NORM: return ((float)p / 255.0f - mean) / std;
    default: return (float)p;
    }
}

/* Scales one uint8 pixel as the model asks. */
static inline float nc_scale_pixel(const nc_model *m, uint8_t p) {
    return nc_scale_value(m->scaling, m->mean, m->std, p);
}

/* Resizes (if the model's input is larger than the images) and scales n images
 * of (h, w) into x, which is (n, 1, H, W) of the model's input. The caller has
 * checked the sizes with nc_model_check_input. Fails only for want of memory. */
int nc_prepare_input(float *x, const nc_model *m, const uint8_t *images, int n, int h, int w, nc_error *err);

/* Checks that images of (h, w) can feed the model: equal size, or 28x28 data
 * and a larger square input (resized as the course did). */
int nc_model_check_input(const nc_model *m, int h, int w, nc_error *err);

#ifdef __cplusplus
}
#endif
#endif
