/* Turning uint8 images into the model's float input: resize as the course did, then scale. */
#include <stdlib.h>

#include "core/error.h"
#include "core/model.h"

int nc_model_check_input(const nc_model *m, int h, int w, nc_error *err) {
    const nc_shape in = m->input;
    if (in.c != 1)
        return nc_fail(err, NC_ERR_MISMATCH, "model '%s' expects %d input channels, but the images have 1", m->name,
                       in.c);
    if (h == in.h && w == in.w) return NC_OK;
    /* Larger inputs are made from smaller images by the course's upscaling resize; shrinking is not defined. */
    if (in.h == in.w && h <= in.h && w <= in.w) return NC_OK;
    return nc_fail(err, NC_ERR_MISMATCH,
                   "model '%s' expects %dx%d images; the data has %dx%d (only upscaling to a square input is defined)",
                   m->name, in.h, in.w, h, w);
}

int nc_prepare_input(float *x, const nc_model *m, const uint8_t *images, int n, int h, int w, nc_error *err) {
    const int H = m->input.h, W = m->input.w;
    const size_t hw = (size_t)H * W;
    const int resize = (h != H || w != W);
    uint8_t *tmp = NULL; // (H, W): one resized image
    if (resize && !(tmp = malloc(hw)))
        return nc_fail(err, NC_ERR_NOMEM, "out of memory for a %dx%d resize buffer", H, W);
    for (int i = 0; i < n; i++) {
        const uint8_t *src = images + (size_t)i * h * w;
        if (resize) {
            nc_resize_u8(tmp, H, src, h, w);
            src = tmp;
        }
        for (size_t j = 0; j < hw; j++) x[(size_t)i * hw + j] = nc_scale_pixel(m, src[j]);
    }
    free(tmp);
    return NC_OK;
}
