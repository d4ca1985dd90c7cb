#define _POSIX_C_SOURCE 200809L
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int nc_fail(nc_error *err, int code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

void nc_error_prefix(nc_error *err, const char *fmt, ...) {
    if (!err) return;
    char out[NC_ERROR_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, sizeof out, fmt, ap);
    va_end(ap);
    strncat(out, ": ", sizeof out - strlen(out) - 1);
    strncat(out, err->msg, sizeof out - strlen(out) - 1);
    memcpy(err->msg, out, sizeof out);
}

double nc_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
