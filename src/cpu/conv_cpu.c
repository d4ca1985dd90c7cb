/* The parts of the convolution kernels that do not depend on the instruction set: tile choice, buffer sizes, and the
 * dispatch of the FMA peak loop. */
#include "cpu/conv_cpu.h"

size_t nc_conv_band_floats(const nc_conv_desc *d, int V) {
    return (size_t)d->P * d->Wn * d->tm * V;
}

/* Estimated cycles of one tap of one tile: the FMAs (two a cycle) or the loads (tw input vectors and tm broadcast
 * weights, two a cycle, broadcasts at half weight as they are narrow), whichever binds, plus one cycle of loop; 15%
 * more where the accumulators, the weights and the input vectors GCC keeps between taps (it reuses them across the
 * columns of a row) exceed 30 of the 32 vector registers and it spills. On the EPYC 9005 build machine that penalty
 * matches the measurement: for the 2017 layer, 16- and 18-accumulator tiles ran 5-15% faster than 24-accumulator
 * ones. */
static double tap_cycles(int tm, int tw) {
    const double fma = tm * tw / 2.0, loads = (tw + 0.5 * tm) / 2.0;
    const double cycles = (fma > loads ? fma : loads) + 1.0;
    return tm * tw + tm + tw > 30 ? 1.15 * cycles : cycles;
}

void nc_conv_choose_tile(nc_conv_desc *d, nc_cpu_isa isa) {
    d->tm = d->tw = 1;
    if (isa == NC_ISA_SCALAR) return;
    double best = 0.0;
    for (int tm = 1; tm <= 8 && tm <= d->M; tm++)
        for (int tw = 1; tw <= 12 && tw <= d->Wn; tw++) {
            if (!(isa == NC_ISA_AVX512 ? nc_conv_tile_ok_avx512(tm, tw) : nc_conv_tile_ok_avx2(tm, tw))) continue;
            /* The implicit-GEMM loop cannot reuse input vectors between taps, so wide tiles load too much: on the
             * build machine tw 6 and 8 ran 15-35% slower than tw 4 on the course's second layers. */
            if (d->family == NC_CONV_IGEMM && tw > 4) continue;
            /* Whole tiles, the last of each row and channel range moved back to overlap the one before. */
            const double tiles = (double)((d->M + tm - 1) / tm) * (double)((d->Wn + tw - 1) / tw);
            const double cost = tiles * tap_cycles(tm, tw);
            if (best == 0.0 || cost < best) {
                best = cost;
                d->tm = tm;
                d->tw = tw;
            }
        }
}

double nc_fma_loop(nc_cpu_isa isa, long calls) {
    switch (isa) {
    case NC_ISA_AVX512: return nc_fma_loop_avx512(calls);
    case NC_ISA_AVX2: return nc_fma_loop_avx2(calls);
    default: break;
    }
    /* Portable C: 12 chains of 4 lanes (multiply and add, as C without contraction compiles them). */
    float a[12][NC_SCALAR_LANES];
    for (int i = 0; i < 12; i++)
        for (int v = 0; v < NC_SCALAR_LANES; v++) a[i][v] = (float)(i + v);
    for (long n = 0; n < calls; n++)
        for (int k = 0; k < 64; k++)
            for (int i = 0; i < 12; i++)
                for (int v = 0; v < NC_SCALAR_LANES; v++) a[i][v] = a[i][v] * 0.999999f + 1e-7f;
    float s = 0.0f;
    for (int i = 0; i < 12; i++)
        for (int v = 0; v < NC_SCALAR_LANES; v++) s += a[i][v];
    volatile float sink = s;
    (void)sink;
    return 64.0 * 12.0 * NC_SCALAR_LANES;
}
