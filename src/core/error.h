/* Error reporting: every failure is a code plus a message naming what was wrong and where. */
#ifndef NC_ERROR_H
#define NC_ERROR_H

#include "nanoconv.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define NC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define NC_PRINTF(a, b)
#endif

/* Records the failure in err (which may be NULL) and returns code, so that a
 * caller can write `return nc_fail(err, NC_ERR_FORMAT, "%s: ...", path);`. */
int nc_fail(nc_error *err, int code, const char *fmt, ...) NC_PRINTF(3, 4);

/* Prefixes err's message with a context such as a file name: "ctx: msg". */
void nc_error_prefix(nc_error *err, const char *fmt, ...) NC_PRINTF(2, 3);

/* Multiplies a * b into *out unless the product overflows size_t; returns 0 on overflow. */
static inline int nc_mul_ok(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > (size_t)-1 / a) return 0;
    *out = a * b;
    return 1;
}

/* Monotonic wall clock in seconds. */
double nc_now(void);

#ifdef __cplusplus
}
#endif
#endif
