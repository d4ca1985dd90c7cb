#define _POSIX_C_SOURCE 200809L
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int nc_utf8_len(const char *str) {
    const unsigned char *s = (const unsigned char *)str;
    const unsigned c = s[0];
    int n;
    unsigned lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else
        return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (int i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return n;
}

void nc_plain_text(char *out, size_t cap, const char *in) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)in;
    size_t o = 0;
    while (*s) {
        int n = *s >= 0x20 && *s < 0x7F ? 1 : nc_utf8_len((const char *)s);
        if (n == 2 && s[0] == 0xC2 && s[1] < 0xA0) n = 0; /* U+0080..U+009F, the C1 controls */
        if (n) {
            if (o + n >= cap) break;
            memcpy(out + o, s, n);
            o += n, s += n;
        } else {
            if (o + 4 >= cap) break;
            out[o] = '\\', out[o + 1] = 'x', out[o + 2] = hex[*s >> 4], out[o + 3] = hex[*s & 15];
            o += 4, s++;
        }
    }
    out[o] = '\0';
}

int nc_fail(nc_error *err, int code, const char *fmt, ...) {
    if (err) {
        char raw[NC_ERROR_MSG_LEN];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        nc_plain_text(err->msg, sizeof err->msg, raw);
        err->code = code;
    }
    return code;
}

void nc_error_prefix(nc_error *err, const char *fmt, ...) {
    if (!err) return;
    char raw[NC_ERROR_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    strncat(raw, ": ", sizeof raw - strlen(raw) - 1);
    strncat(raw, err->msg, sizeof raw - strlen(raw) - 1);
    nc_plain_text(err->msg, sizeof err->msg, raw);
}

double nc_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
