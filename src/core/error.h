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

/* Writes in to out (cap bytes, cap >= 1) as plain text: a byte that is neither printable ASCII nor part of a
 * well-formed UTF-8 character, and every control character (newline, escape, DEL, U+0080..U+009F), becomes "\xHH"
 * (four characters); where that does not fit, out ends at the last whole character. Messages quote names and values
 * read from the files they are about, and a damaged file must not put raw bytes, or a terminal's escape sequences,
 * into them: nc_fail and nc_error_prefix pass every message through it, and a model's name is kept so. */
void nc_plain_text(char *out, size_t cap, const char *in);

/* The length (2 to 4) of the well-formed UTF-8 character of several bytes that s starts with (RFC 3629: no overlong
 * form, no surrogate, nothing above U+10FFFF), else 0 (an ASCII byte, or not UTF-8). Reads no further than the first
 * byte that does not fit, so a NUL-terminated s is never overrun. */
int nc_utf8_len(const char *s);

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
