/* The course's resize (resize.c), the part other code shares: where an output position's two taps fall. */
#ifndef NC_IO_RESIZE_H
#define NC_IO_RESIZE_H

#ifdef __cplusplus
extern "C" {
#endif

/* One output position o along an axis of n inputs upscaled by zoom = n / S (as a double): the input indices of its
 * two taps and their weights, as SciPy computes them (resize.c). A tap outside the input has weight 0 and an index
 * clamped inside it. pair: i0 + 1 before that clamp, held to 0..n: where the two taps fall in the input with a border
 * of zeros (n + 2 long), as the GPU's resize holds it (src/cuda/layers.cu). */
typedef struct nc_resize_tap {
    int i0, i1, pair;
    double w0, w1;
} nc_resize_tap;

nc_resize_tap nc_resize_axis_tap(int o, double zoom, int n);

#ifdef __cplusplus
}
#endif
#endif
