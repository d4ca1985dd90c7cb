/* The parts of the convolution kernels that do not depend on the instruction set: tile choice, buffer sizes, and the
 * dispatch of the FMA peak loop. */
#include "cpu/conv_cpu.h"

size_t nc_conv_band_floats(const nc_conv_desc *d, int V) {
    return (size_t)d->P * d->Wn * d->tm * V;
}

/* Estimated cycles of one tap of one tile: the FMAs (two a cycle) or the loads (tw input vectors and tm broadcast
 * weights, two a cycle, broadcasts at half weight as they are narrow), whichever binds, plus one cycle of loop; 15%
 * more where the accumulators, the weights and the input vectors GCC keeps between taps (it reuses them across the
 * columns of a row) exceed `spill` vector registers. The bounds are the EPYC 9005 build machine's measurements:
 * - the direct family, all but two of the registers: 30 of AVX-512's 32 (for the 2017 layer, 16- and 18-accumulator
 *   tiles ran 5-15% faster than 24-accumulator ones) and 14 of AVX2's 16 (until session 69 AVX2's bound was 30 as
 *   well, so never reached: the cost chose 2x6 and 3x4 tiles for the zoo's first layers, and the 2x4 and 4x2 chosen
 *   now run them 6-17% faster);
 * - the implicit-GEMM family, 30 on either: on AVX-512 it keeps the 6x4 tile out (6-23% slower than 8x2 and 4x4 on
 *   four of the zoo's five second layers, 2.5% faster on the fifth), and no AVX2 tile reaches it (there 3x4, all 16
 *   registers, runs 2019 fall's second layer at 97-100% of the peak, where a bound of 14 chose a 2x4 that ran 18%
 *   slower). */
static double tap_cycles(int tm, int tw, int spill) {
    const double fma = tm * tw / 2.0, loads = (tw + 0.5 * tm) / 2.0;
    const double cycles = (fma > loads ? fma : loads) + 1.0;
    return tm * tw + tm + tw > spill ? 1.15 * cycles : cycles;
}

void nc_conv_choose_tile(nc_conv_desc *d, nc_cpu_isa isa) {
    d->tm = d->tw = 1;
    if (isa == NC_ISA_SCALAR) return;
    double best = 0.0;
    const int spill = d->family == NC_CONV_DIRECT && isa == NC_ISA_AVX2 ? 14 : 30;
    for (int tm = 1; tm <= 8 && tm <= d->M; tm++)
        for (int tw = 1; tw <= 12 && tw <= d->Wn; tw++) {
            if (!(isa == NC_ISA_AVX512 ? nc_conv_tile_ok_avx512(tm, tw) : nc_conv_tile_ok_avx2(tm, tw))) continue;
            /* The implicit-GEMM loop cannot reuse input vectors between taps, so wide tiles load too much: on the
             * build machine tw 6 and 8 ran 15-35% slower than tw 4 on the course's second layers. */
            if (d->family == NC_CONV_IGEMM && tw > 4) continue;
            /* Whole tiles, the last of each row and channel range moved back to overlap the one before. */
            const double tiles = (double)((d->M + tm - 1) / tm) * (double)((d->Wn + tw - 1) / tw);
            const double cost = tiles * tap_cycles(tm, tw, spill);
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
