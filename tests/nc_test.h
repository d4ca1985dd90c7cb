/* A minimal test harness: CHECK records a failure and goes on; nc_test_done
 * prints "N passed, M failed" and returns the process exit status. */
#ifndef NC_TEST_H
#define NC_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nc_test_pass, nc_test_fail;

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (cond) {                                                                                                    \
            nc_test_pass++;                                                                                            \
        } else {                                                                                                       \
            nc_test_fail++;                                                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                                   \
        }                                                                                                              \
    } while (0)

/* |a - b| <= atol + |b| * rtol, with b the reference. */
#define CHECK_CLOSE(a, b, atol, rtol)                                                                                  \
    do {                                                                                                               \
        double a_ = (a), b_ = (b);                                                                                     \
        if (fabs(a_ - b_) <= (atol) + fabs(b_) * (rtol)) {                                                             \
            nc_test_pass++;                                                                                            \
        } else {                                                                                                       \
            nc_test_fail++;                                                                                            \
            fprintf(stderr, "%s:%d: %s = %.9g, expected %s = %.9g\n", __FILE__, __LINE__, #a, a_, #b, b_);             \
        }                                                                                                              \
    } while (0)

/* Checks that an error message contains a fragment. */
#define CHECK_MSG(err, fragment)                                                                                       \
    do {                                                                                                               \
        if (strstr((err).msg, (fragment))) {                                                                           \
            nc_test_pass++;                                                                                            \
        } else {                                                                                                       \
            nc_test_fail++;                                                                                            \
            fprintf(stderr, "%s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, (err).msg, (fragment));        \
        }                                                                                                              \
    } while (0)

static inline int nc_test_done(const char *name) {
    printf("%s: %d passed, %d failed\n", name, nc_test_pass, nc_test_fail);
    return nc_test_fail ? 1 : 0;
}

#endif
