/*
 * The cpu backend's op 0: uint8 images into the model's input, a group of V images at a time, lane-innermost
 * (H, W, V), resized as the course did where the images are smaller than the input. nc_resize_u8 works on one image
 * in double precision, pixel by pixel; here the same operations run on V images at once, one image a lane, so that
 * the input is the same bit for bit (tests/unit/test_cpu_backend.c) at a fraction of the time.
 */
#ifndef NC_INPUT_CPU_H
#define NC_INPUT_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/cpu_features.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of the workspace nc_input_group needs for an input of (H, W) and V lanes (any images that fit it). */
size_t nc_input_ws_bytes(int H, int W, int V);

/* Images 0 .. nb - 1 of `images` (1 <= nb <= V, each (h, w) with h <= H and w <= W, H == W where they differ) into
 * x, (H, W, V), V = nc_cpu_isa_lanes(isa): each image resized to (H, W) exactly as nc_resize_u8 does where its size
 * differs, then each pixel scaled as the model m says (nc_scale_pixel); lanes nb .. V - 1 are 0. ws:
 * nc_input_ws_bytes(H, W, V) bytes. */
void nc_input_group(nc_cpu_isa isa, float *x, const uint8_t *images, int nb, int h, int w, int H, int W,
                    const nc_model *m, void *ws);

#ifdef __cplusplus
}
#endif
#endif
