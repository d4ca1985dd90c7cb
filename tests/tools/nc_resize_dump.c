/* nc_resize_dump IMAGES LABELS S OUT
 *
 * A test-side tool for tests/oracle/test_resize.py: loads an IDX data set (the labels only
 * because nc_dataset_load reads the pair), resizes every image to S x S with nc_resize_u8
 * and writes the results to OUT as raw bytes, (n, S, S), with no header. Exits 2 with the
 * message on any error. */
#include "nanoconv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void) {
    fprintf(stderr, "usage: nc_resize_dump IMAGES LABELS S OUT\n"
                    "  writes every image resized to S x S as raw bytes (n, S, S) to OUT\n");
    return 2;
}

int main(int argc, char **argv) {
    if (argc != 5) return usage();
    const char *images_path = argv[1], *labels_path = argv[2], *out_path = argv[4];
    char *end = NULL;
    errno = 0;
    long S = strtol(argv[3], &end, 10);
    if (errno || end == argv[3] || *end != '\0' || S < 1 || S > 65536) {
        fprintf(stderr, "nc_resize_dump: S must be an integer in 1..65536, got \"%s\"\n", argv[3]);
        return 2;
    }

    nc_dataset ds;
    nc_error err = {0};
    if (nc_dataset_load(&ds, images_path, labels_path, &err) != NC_OK) {
        fprintf(stderr, "nc_resize_dump: %s\n", err.msg);
        return 2;
    }
    if (S < ds.h || S < ds.w) {
        fprintf(stderr, "nc_resize_dump: S = %ld is smaller than the %d x %d images; only upscaling is reproduced\n", S,
                ds.h, ds.w);
        nc_dataset_free(&ds);
        return 2;
    }

    const size_t plane = (size_t)S * (size_t)S;
    uint8_t *out = malloc(plane * (size_t)ds.n); /* (n, S, S) */
    if (!out) {
        fprintf(stderr, "nc_resize_dump: cannot allocate %zu bytes for %d images of %ld x %ld\n", plane * (size_t)ds.n,
                ds.n, S, S);
        nc_dataset_free(&ds);
        return 2;
    }
    for (int i = 0; i < ds.n; i++)
        nc_resize_u8(out + (size_t)i * plane, (int)S, ds.images + (size_t)i * ds.h * ds.w, ds.h, ds.w);

    const size_t total = plane * (size_t)ds.n;
    int rc = 0;
    FILE *f = fopen(out_path, "wb");
    if (!f) {
        fprintf(stderr, "nc_resize_dump: %s: cannot open for writing: %s\n", out_path, strerror(errno));
        rc = 2;
    } else {
        size_t wrote = fwrite(out, 1, total, f);
        if (wrote != total) {
            fprintf(stderr, "nc_resize_dump: %s: write failed after %zu of %zu bytes: %s\n", out_path, wrote, total,
                    strerror(errno));
            rc = 2;
        }
        /* fclose flushes the last buffer, so a full disk may only show here. */
        if (fclose(f) != 0 && rc == 0) {
            fprintf(stderr, "nc_resize_dump: %s: write failed on close: %s\n", out_path, strerror(errno));
            rc = 2;
        }
    }
    free(out);
    nc_dataset_free(&ds);
    return rc;
}
