/*
 * The cuda backend's default convolution kernel: for each layer shape, the
 * fastest fp32, reproducible version of the ladder (1..6, 11, 13, 14 and 15),
 * measured on this GPU the
 * first time the shape is seen and remembered in a small JSON file.
 *
 * The cache is $NANOCONV_CACHE_DIR/conv-kernels.json, else
 * $XDG_CACHE_HOME/nanoconv/conv-kernels.json, else
 * ~/.cache/nanoconv/conv-kernels.json; NANOCONV_CACHE_DIR=off measures every
 * time and writes nothing. A key names the GPU, nanoconv's version, the
 * kernels' id (nc_cuda_kernels_id: a hash of src/cuda's sources) and the
 * layer (input, channels, kernel, what version 6 would fuse, uint8 input), so
 * another GPU or a build of other kernel sources measures again. A cache that
 * cannot be read or parsed is measured over and rewritten (atomically); one
 * that cannot be written only costs the measurement next time. CUDA sources
 * only.
 */
#ifndef NC_CONV_AUTOTUNE_H
#define NC_CONV_AUTOTUNE_H

#include "cuda/conv_ladder.h"
#include "cuda/gpu_plan.h"

/* A convolution layer as the tuner times it: the layer, what version 6 would fuse after it (e->act / e->pool -1
 * for nothing), whether version 6 would read its input as uint8 pixels through lut. */
typedef struct nc_conv_tune_layer {
    int li; /* layer index in g->m */
    nc_conv_epilogue epi;
    int fused_layers; /* layers after the conv that e covers (0..2) */
    int u8;
    const nc_conv_lut *lut;
} nc_conv_tune_layer;

#define NC_TUNE_MAX_VERSIONS 16

/* What the tuner decided for a layer: the version, and whether it came from the cache. ms[v - 1] is each exact
 * version's median time for `batch` images (0 where not measured, e.g. taken from the cache). */
typedef struct nc_conv_tune_result {
    int version;
    int cached;
    int batch;
    double ms[NC_TUNE_MAX_VERSIONS];
} nc_conv_tune_result;

/* Picks the fastest exact version for each of the n layers: from the cache where it knows the layer, else by
 * timing every exact version on g's buffers (which it may grow; their contents are overwritten), then records the
 * measured ones in the cache. */
int nc_conv_autotune(nc_gpu *g, const nc_conv_tune_layer *layers, int n, nc_conv_tune_result *out, nc_error *err);

#endif
