/* Run-time choice of the instruction set, its override, and the FMA peak microbenchmark. */
#include "cpu/cpu_features.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cpu/conv_cpu.h"

static const char *const isa_names[NC_ISA_COUNT] = {"scalar", "avx2", "avx512"};

/* -1 when nothing is forced. */
static int forced_isa = -1;

int nc_cpu_isa_supported(nc_cpu_isa isa) {
    switch (isa) {
    case NC_ISA_SCALAR: return 1;
#if defined(__x86_64__) && defined(__GNUC__)
    /* libgcc's checks include the operating system's support (XGETBV) for the wider register state. */
    case NC_ISA_AVX2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case NC_ISA_AVX512:
        return nc_cpu_isa_supported(NC_ISA_AVX2) && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vl");
#endif
    default: return 0;
    }
}

nc_cpu_isa nc_cpu_isa_detect(void) {
    if (nc_cpu_isa_supported(NC_ISA_AVX512)) return NC_ISA_AVX512;
    if (nc_cpu_isa_supported(NC_ISA_AVX2)) return NC_ISA_AVX2;
    return NC_ISA_SCALAR;
}

const char *nc_cpu_isa_name(nc_cpu_isa isa) {
    return (unsigned)isa < NC_ISA_COUNT ? isa_names[isa] : "?";
}

int nc_cpu_isa_parse(const char *s, nc_cpu_isa *out) {
    for (int i = 0; i < NC_ISA_COUNT; i++)
        if (!strcmp(s, isa_names[i])) {
            *out = (nc_cpu_isa)i;
            return 1;
        }
    return 0;
}

void nc_cpu_isa_force(int isa) {
    forced_isa = (isa >= 0 && isa < NC_ISA_COUNT) ? isa : -1;
}

int nc_cpu_isa_select(nc_cpu_isa *out, nc_error *err) {
    nc_cpu_isa isa = nc_cpu_isa_detect();
    const char *why = NULL;
    if (forced_isa >= 0) {
        isa = (nc_cpu_isa)forced_isa;
        why = "forced by the caller";
    } else {
        const char *env = getenv("NANOCONV_CPU_ISA");
        if (env && *env) {
            if (!nc_cpu_isa_parse(env, &isa))
                return nc_fail(err, NC_ERR_ARG, "NANOCONV_CPU_ISA='%s' is not one of scalar, avx2, avx512", env);
            why = "NANOCONV_CPU_ISA";
        }
    }
    if (!nc_cpu_isa_supported(isa))
        return nc_fail(err, NC_ERR_UNAVAILABLE, "instruction set %s (%s) is not supported by this processor (best: %s)",
                       nc_cpu_isa_name(isa), why, nc_cpu_isa_name(nc_cpu_isa_detect()));
    *out = isa;
    return NC_OK;
}

int nc_cpu_isa_lanes(nc_cpu_isa isa) {
    switch (isa) {
    case NC_ISA_AVX512: return 16;
    case NC_ISA_AVX2: return 8;
    default: return NC_SCALAR_LANES;
    }
}

double nc_cpu_fma_peak_gflops(nc_cpu_isa isa, int threads, double seconds) {
    if (threads < 1) threads = omp_get_max_threads();
    double fmas_per_call = 0.0;
    /* Calibrate the call count on one thread, then time all threads together; the best of three runs is the peak. */
    long calls = 16;
    for (;;) {
        const double t0 = nc_now();
        fmas_per_call = nc_fma_loop(isa, calls);
        const double dt = nc_now() - t0;
        if (dt > seconds / 8 || calls > (1L << 40)) {
            calls = (long)((double)calls * (seconds / 3) / (dt > 1e-9 ? dt : 1e-9)) + 1;
            break;
        }
        calls *= 4;
    }
    double best = 0.0;
    for (int rep = 0; rep < 3; rep++) {
        const double t0 = nc_now();
#pragma omp parallel num_threads(threads)
        nc_fma_loop(isa, calls);
        const double dt = nc_now() - t0;
        const double gflops = 2.0 * fmas_per_call * (double)calls * threads / dt * 1e-9;
        if (gflops > best) best = gflops;
    }
    return best;
}
