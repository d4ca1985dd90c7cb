/*
 * The collector behind `nanoconv profile`: CUPTI's activity API records every
 * kernel (ours, cuDNN's and cuBLAS's), memory copy and memory set on the GPU,
 * and every CUDA runtime and driver API call, each with its start and end; this
 * module sums them by name into the two tables nvprof printed, GPU activities
 * and API calls.
 *
 * CUPTI is loaded with dlopen by nc_prof_start alone, so that no other command
 * pays for it, and it is never unloaded (its worker threads outlive a profile).
 * CUPTI delivers records to process-wide callbacks, so one profile at a time.
 *
 *   nc_prof *p;
 *   nc_prof_start(&p, &err);      // before the CUDA work to measure
 *   ...                           // the work: sessions created, run and freed
 *   nc_prof_stop(p, &err);        // flushes CUPTI's buffers, builds the tables
 *   rows = nc_prof_rows(p, NC_PROF_GPU, &n);
 *   nc_prof_free(p);
 */
#ifndef NC_CUDA_PROFILE_H
#define NC_CUDA_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "nanoconv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    NC_PROF_KERNEL,  /* a kernel on the GPU */
    NC_PROF_MEMCPY,  /* a memory copy done by the GPU's copy engines or a kernel of the driver */
    NC_PROF_MEMSET,  /* a memory set */
    NC_PROF_RUNTIME, /* a CUDA runtime API call (cuda*) on the host */
    NC_PROF_DRIVER,  /* a CUDA driver API call (cu*) on the host */
} nc_prof_kind;

/* The two tables: the GPU's own work (kernels, copies, sets) and the host's API calls. */
typedef enum { NC_PROF_GPU, NC_PROF_API } nc_prof_table;

/* One name's calls. Times are in nanoseconds of CUPTI's clock. */
typedef struct {
    nc_prof_kind kind;
    const char *name; /* demangled kernel name, "[CUDA memcpy HtoD]", "[CUDA memset]", or "cudaMalloc" */
    uint64_t calls;
    uint64_t total_ns, min_ns, max_ns;
} nc_prof_row;

typedef struct nc_prof nc_prof;

/* Checks that a CUDA GPU is present (NC_ERR_UNAVAILABLE, saying that a profile
 * needs one, where none is), loads CUPTI (NC_ERR_UNAVAILABLE, naming where it
 * looked, where it cannot be loaded or is of another major version than the
 * headers nanoconv was built with) and starts recording. NC_ERR_ARG if a
 * profile is already being recorded. */
int nc_prof_start(nc_prof **out, nc_error *err);

/* Stops recording, flushes CUPTI's buffers and builds both tables, each sorted
 * by total time, longest first. Fails with NC_ERR_NOMEM or NC_ERR_DEVICE. */
int nc_prof_stop(nc_prof *p, nc_error *err);

/* The rows of one table (valid once stopped, until nc_prof_free); *n gets their count. */
const nc_prof_row *nc_prof_rows(const nc_prof *p, nc_prof_table t, size_t *n);

/* The sum of the table's total times, the 100% of its percentages. */
uint64_t nc_prof_total_ns(const nc_prof *p, nc_prof_table t);

/* Records CUPTI could not deliver (its buffers were full), and records without
 * timestamps (counted in calls, not in times): both 0 in a complete profile. */
uint64_t nc_prof_dropped(const nc_prof *p);
uint64_t nc_prof_untimed(const nc_prof *p);

/* The file CUPTI was loaded from, and its API version (130001 for CUDA 13.0 Update 1). */
const char *nc_prof_library(const nc_prof *p);
uint32_t nc_prof_cupti_version(const nc_prof *p);

/* Stops recording if nc_prof_stop was not called, and frees the tables. */
void nc_prof_free(nc_prof *p);

#ifdef __cplusplus
}
#endif
#endif
