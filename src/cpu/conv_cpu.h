/*
 * Kernels of the fast CPU backend, one family per instruction set
 * (conv_cpu_scalar.c, conv_cpu_avx2.c, conv_cpu_avx512.c), behind one
 * interface. The backend vectorises over images: activations of a group of V
 * images (V = the vector's float lanes) are stored "lane-innermost",
 * (C, H, W, V), so every vector instruction works on the same position of V
 * images. Any layer shape then fills whole vectors, pooling and activations
 * are lane-wise, and the flattened (C*H*W, V) slab is directly a packed
 * column panel of the dense layers' GEMM (gemm.h).
 *
 * Convolution kernel families (one fused layer: conv + bias + activation +
 * pooling, the full-size convolution output never written to memory), chosen
 * per layer (--conv-kernel forces one for all layers):
 *   1 "direct", for few input channels (the first layers, C = 1): a register
 *     tile of tm output channels x tw output columns x V images accumulates
 *     over the K*K taps as nested loops; each tap broadcasts tm weights and
 *     loads tw input vectors, then does tm*tw FMAs. GCC keeps the input
 *     vectors in registers from one tap of a row to the next. Conv rows go to
 *     a small band buffer (P rows, L1-resident) from which the epilogue pools,
 *     adds the bias and applies the activation.
 *   2 "implicit GEMM", for more input channels (C > 1): the same register
 *     tile, but the C*K*K reduction is one flat loop over a table of tap
 *     offsets (the rows of an im2col matrix that is never built) with the
 *     weights packed as the GEMM's A panel, so short K loops cost nothing
 *     however C and K combine (K = 3 with C = 16 runs 10-25% faster than
 *     direct; K = 5 and 7 run alike).
 * The register tile (tm, tw) is chosen per layer by a cost model
 * (nc_conv_choose_tile); NANOCONV_CPU_TILE=TMxTW overrides it for tuning.
 */
#ifndef NC_CONV_CPU_H
#define NC_CONV_CPU_H

#include <stddef.h>

#include "cpu/cpu_features.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Float lanes of the portable C path (a group of images it processes together). */
#define NC_SCALAR_LANES 4
/* Those lanes as one vector of GCC's vector extension (SSE on baseline x86-64): each operation is every lane's own,
 * a multiply and an add apart, as the reference does them; the portable GEMM and convolution work on it. */
typedef float nc_scalar_vec __attribute__((vector_size(NC_SCALAR_LANES * sizeof(float))));

enum { NC_CONV_DIRECT = 1, NC_CONV_IGEMM = 2 };

/* One fused convolution layer as the kernels see it. */
typedef struct {
    int family;        /* NC_CONV_DIRECT or NC_CONV_IGEMM */
    int C, H, W;       /* input per image */
    int M, K;          /* output channels, kernel size; conv output is (M, H-K+1, W-K+1) */
    int act;           /* NC_TANH, NC_RELU, NC_SIGMOID, or -1 for none */
    int pool;          /* NC_MAXPOOL, NC_AVGPOOL, or -1 for none */
    int P, S;          /* pooling window and stride; 1 and 1 without pooling */
    int Hp, Wp;        /* rows and columns of the (pooled) output */
    int Wn;            /* conv columns the pooling reads: (Wp - 1) * S + P */
    int tm, tw;        /* register tile: output channels, output columns */
    const float *kp;   /* packed weights (ceil(M / tm), C*K*K, tm); the last tile overlaps the one before */
    const int *taps;   /* (C*K*K) input offsets of the taps in floats, for NC_CONV_IGEMM */
    const float *bias; /* (M) or NULL */
} nc_conv_desc;

/* Floats of the band buffer a layer needs: (P, Wn, tm, V). */
size_t nc_conv_band_floats(const nc_conv_desc *d, int V);

/* Chooses the register tile (tm, tw) of a layer for an instruction set: the
 * variant that wastes the least work on tile overlap and load traffic. */
void nc_conv_choose_tile(nc_conv_desc *d, nc_cpu_isa isa);

/* Runs one fused layer on one group of V images.
 * y is (M, Hp, Wp, V), x is (C, H, W, V), band is nc_conv_band_floats(d, V) floats. */
void nc_conv_group_scalar(const nc_conv_desc *d, float *y, const float *x, float *band);
void nc_conv_group_avx2(const nc_conv_desc *d, float *y, const float *x, float *band);
void nc_conv_group_avx512(const nc_conv_desc *d, float *y, const float *x, float *band);

/* Elementwise activation (kind NC_TANH, NC_RELU or NC_SIGMOID) of n floats, n a multiple of the lanes; y may be x. */
void nc_act_scalar(int kind, float *y, const float *x, size_t n);
void nc_act_avx2(int kind, float *y, const float *x, size_t n);
void nc_act_avx512(int kind, float *y, const float *x, size_t n);

/* The tile variants each family has: tm x tw with tm * tw at most the ISA's accumulator budget. */
int nc_conv_tile_ok_avx2(int tm, int tw);
int nc_conv_tile_ok_avx512(int tm, int tw);

/* `calls` rounds of independent vector FMA chains; returns the FMAs of one round (lanes counted). */
double nc_fma_loop(nc_cpu_isa isa, long calls);
double nc_fma_loop_avx2(long calls);
double nc_fma_loop_avx512(long calls);

#ifdef __cplusplus
}
#endif
#endif
