/*
 * Which instruction set the fast CPU backend uses, chosen at run time so that
 * one baseline x86-64 binary runs everywhere: AVX-512 (F, BW, DQ, VL) where
 * the processor has it, else AVX2 + FMA, else portable C. The environment
 * variable NANOCONV_CPU_ISA=scalar|avx2|avx512 forces one path (to test or
 * compare it); nc_cpu_isa_force does the same from code.
 */
#ifndef NC_CPU_FEATURES_H
#define NC_CPU_FEATURES_H

#include "nanoconv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    NC_ISA_SCALAR = 0, /* portable C, any x86-64 (or any other processor) */
    NC_ISA_AVX2 = 1,   /* AVX2 + FMA, 8 float lanes */
    NC_ISA_AVX512 = 2, /* AVX-512 F/BW/DQ/VL, 16 float lanes */
} nc_cpu_isa;

#define NC_ISA_COUNT 3

/* The best instruction set this processor (and its operating system) supports. */
nc_cpu_isa nc_cpu_isa_detect(void);

/* Whether this processor can run the given instruction set. */
int nc_cpu_isa_supported(nc_cpu_isa isa);

/* The instruction set to use now: the one forced by nc_cpu_isa_force, else the
 * one NANOCONV_CPU_ISA names, else nc_cpu_isa_detect(). Fails (NC_ERR_ARG) for
 * an unknown name in the variable and (NC_ERR_UNAVAILABLE) for a forced set
 * this processor lacks. */
int nc_cpu_isa_select(nc_cpu_isa *out, nc_error *err);

/* Forces the instruction set nc_cpu_isa_select returns (tests use it to run
 * every code path); -1 undoes the forcing. Not thread-safe: call it between
 * sessions. */
void nc_cpu_isa_force(int isa);

/* "scalar", "avx2", "avx512". */
const char *nc_cpu_isa_name(nc_cpu_isa isa);

/* Parses a name as above; returns 0 if it is not one. */
int nc_cpu_isa_parse(const char *s, nc_cpu_isa *out);

/* Floats in one vector of the instruction set (the batch lanes of the cpu backend). */
int nc_cpu_isa_lanes(nc_cpu_isa isa);

/* Measures the peak single-precision rate of the instruction set: each of
 * `threads` threads runs independent chains of vector FMAs for about `seconds`.
 * Returns GFLOP/s (an FMA counted as 2 FLOPs) for all threads together. */
double nc_cpu_fma_peak_gflops(nc_cpu_isa isa, int threads, double seconds);

#ifdef __cplusplus
}
#endif
#endif
