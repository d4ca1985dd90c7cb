/* IDX loading (src/io/idx.c) and the course's resize (src/io/resize.c).
 *
 * Writes its own small IDX files, raw and gzip, into a fresh directory under /tmp and
 * removes them at the end; checks that valid files load with the right pixels and labels,
 * read from a file or through a pipe, and that every kind of bad file fails with the right
 * code and a message that names the file and says what was wrong. Checks nc_resize_u8 on
 * tiny cases computed by hand, and, where the Debian package dataset-fashion-mnist is
 * installed, the real test and training sets. The bit-for-bit comparison of the resize with
 * scikit-image on all 10000 test images is tests/oracle/test_resize.py. */
#define _POSIX_C_SOURCE 200809L
#if defined(__clang__) || !defined(__GNUC__)
#pragma STDC FP_CONTRACT OFF
#endif
#include "nanoconv.h"
#include "nc_test.h"

#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define SYSTEM_DATA_DIR "/usr/share/datasets/fashion-mnist"

static char tmp_dir[] = "/tmp/nc_test_idx_XXXXXX";

/* Full path of a file in the temporary directory; path is PATH_MAX bytes. */
static const char *tmp_file(char *path, const char *name) {
    snprintf(path, PATH_MAX, "%s/%s", tmp_dir, name);
    return path;
}

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Writes len bytes to the named temporary file, gzip-compressed if gz; returns its path. */
static const char *write_file(char *path, const char *name, const uint8_t *bytes, size_t len, int gz) {
    tmp_file(path, name);
    int ok;
    if (gz) {
        gzFile f = gzopen(path, "wb");
        ok = f && (len == 0 || gzwrite(f, bytes, (unsigned)len) == (int)len);
        ok = f && gzclose(f) == Z_OK && ok;
    } else {
        FILE *f = fopen(path, "wb");
        ok = f && fwrite(bytes, 1, len, f) == len;
        ok = f && fclose(f) == 0 && ok;
    }
    if (!ok) {
        fprintf(stderr, "test_idx: cannot write %s\n", path);
        exit(1);
    }
    return path;
}

/* An IDX images file in memory: 16-byte header (magic, n, h, w) then pixels, (n, h, w), with
 * pixel i = (i * 7 + 3) mod 256 so that any misplaced byte shows. *len gets the size. */
static uint8_t *make_images(uint32_t magic, uint32_t n, uint32_t h, uint32_t w, size_t *len) {
    size_t count = (size_t)n * h * w;
    uint8_t *b = malloc(16 + count);
    if (!b) exit(1);
    put_be32(b, magic);
    put_be32(b + 4, n);
    put_be32(b + 8, h);
    put_be32(b + 12, w);
    for (size_t i = 0; i < count; i++) b[16 + i] = (uint8_t)(i * 7 + 3);
    *len = 16 + count;
    return b;
}

/* An IDX labels file in memory: 8-byte header (magic, n) then labels (n), label i = (i * 37) mod 256,
 * so values above 9 occur (the loader must keep them). */
static uint8_t *make_labels(uint32_t magic, uint32_t n, size_t *len) {
    uint8_t *b = malloc(8 + (size_t)n);
    if (!b) exit(1);
    put_be32(b, magic);
    put_be32(b + 4, n);
    for (uint32_t i = 0; i < n; i++) b[8 + i] = (uint8_t)(i * 37);
    *len = 8 + (size_t)n;
    return b;
}

static int is_zeroed(const nc_dataset *ds) {
    return ds->n == 0 && ds->h == 0 && ds->w == 0 && ds->images == NULL && ds->labels == NULL && ds->pinned == 0;
}

/* Loads images + labels expecting failure with code; checks that the message names the
 * file at fault (bad_path) and contains each key phrase, and that ds is left zeroed. */
static void expect_fail(const char *images, const char *labels, int code, const char *bad_path, const char *key1,
                        const char *key2) {
    nc_dataset ds;
    memset(&ds, 0xab, sizeof ds); /* the loader must zero it, not rely on the caller */
    nc_error err = {0};
    int rc = nc_dataset_load(&ds, images, labels, &err);
    CHECK(rc == code);
    CHECK(err.code == code);
    if (rc != code) fprintf(stderr, "  expected code %d, got %d: %s\n", code, rc, err.msg);
    CHECK(strncmp(err.msg, bad_path, strlen(bad_path)) == 0); /* the message starts with the file */
    CHECK_MSG(err, bad_path);
    if (key1) CHECK_MSG(err, key1);
    if (key2) CHECK_MSG(err, key2);
    CHECK(is_zeroed(&ds));
    nc_dataset_free(&ds);
}

static void test_valid(void) {
    char ip[PATH_MAX], lp[PATH_MAX], gip[PATH_MAX], glp[PATH_MAX], zip[PATH_MAX], zlp[PATH_MAX];
    size_t il, ll;
    uint8_t *img = make_images(0x803, 3, 2, 4, &il);
    uint8_t *lab = make_labels(0x801, 3, &ll);
    write_file(ip, "ok-images", img, il, 0);
    write_file(lp, "ok-labels", lab, ll, 0);
    write_file(gip, "ok-images.gz", img, il, 1);
    write_file(glp, "ok-labels.gz", lab, ll, 1);
    /* The course's variant: magic 0, same dimensions after it. */
    put_be32(img, 0);
    put_be32(lab, 0);
    write_file(zip, "zero-magic-images", img, il, 0);
    write_file(zlp, "zero-magic-labels.gz", lab, ll, 1);

    const char *pairs[][2] = {{ip, lp}, {gip, glp}, {ip, glp}, {zip, zlp}, {zip, lp}};
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        nc_dataset ds;
        nc_error err = {0};
        int rc = nc_dataset_load(&ds, pairs[p][0], pairs[p][1], &err);
        CHECK(rc == NC_OK);
        if (rc) {
            fprintf(stderr, "  %s + %s: %s\n", pairs[p][0], pairs[p][1], err.msg);
            continue;
        }
        CHECK(ds.n == 3 && ds.h == 2 && ds.w == 4);
        CHECK(memcmp(ds.images, img + 16, 24) == 0);
        CHECK(memcmp(ds.labels, lab + 8, 3) == 0);
        CHECK(ds.labels[1] == 37 && ds.labels[2] == 74); /* labels above 9 are kept */
        CHECK(ds.pinned == 0);
        if (p == 0) {
            /* Page-locking: done where there is a GPU (and then undone by nc_dataset_free), else refused, saying
             * why, with the images as they were. Twice is once. */
            rc = nc_dataset_pin(&ds, &err);
            const int done = rc == NC_OK && ds.pinned == 1;
            const int refused = rc == NC_ERR_UNAVAILABLE && ds.pinned == 0 && strstr(err.msg, "page-locking");
            if (!done && !refused) fprintf(stderr, "  nc_dataset_pin: rc %d, pinned %d: %s\n", rc, ds.pinned, err.msg);
            CHECK(done || refused);
            CHECK(nc_dataset_pin(&ds, &err) == rc);
            CHECK(memcmp(ds.images, img + 16, 24) == 0);
            printf("nc_dataset_pin: %s\n", done ? "page-locked" : err.msg);
        }
        nc_dataset_free(&ds);
        CHECK(is_zeroed(&ds));
    }
    nc_dataset_free(NULL); /* allowed, does nothing */

    /* Images only: no labels to load, none to check against a model's classes. */
    nc_dataset ds;
    nc_error err = {0};
    put_be32(img, 0x803);
    write_file(ip, "only-images", img, il, 0);
    CHECK(nc_dataset_load(&ds, ip, NULL, &err) == NC_OK);
    CHECK(ds.n == 3 && ds.labels == NULL && memcmp(ds.images, img + 16, 24) == 0);
    CHECK(nc_dataset_check_labels(&ds, 3, 10, "only-images", &err) == NC_ERR_ARG);
    CHECK_MSG(err, "only-images: no labels");
    nc_dataset_free(&ds);
    CHECK(is_zeroed(&ds));
    CHECK(nc_dataset_load(&ds, NULL, lp, &err) == NC_ERR_ARG);
    free(img);
    free(lab);
}

static void test_bad_files(void) {
    char ip[PATH_MAX], lp[PATH_MAX], p[PATH_MAX];
    size_t il, ll, len;
    uint8_t *img = make_images(0x803, 3, 2, 4, &il);
    uint8_t *lab = make_labels(0x801, 3, &ll);
    write_file(ip, "good-images", img, il, 0);
    write_file(lp, "good-labels", lab, ll, 0);

    /* Missing file: I/O error with the system's reason. */
    tmp_file(p, "no-such-images");
    expect_fail(p, lp, NC_ERR_IO, p, "cannot open", "No such file");
    tmp_file(p, "no-such-labels");
    expect_fail(ip, p, NC_ERR_IO, p, "cannot open", "No such file");
    /* A directory opens but cannot be read. */
    expect_fail(tmp_dir, lp, NC_ERR_IO, tmp_dir, "read error", "directory");

    /* Wrong magic: found and expected, in hex. */
    uint8_t *b = make_images(0x804, 3, 2, 4, &len);
    write_file(p, "magic-804", b, len, 0);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "wrong magic number 0x00000804", "expected 0x00000803");
    free(b);
    /* The labels file given as images, and the other way round. */
    expect_fail(lp, lp, NC_ERR_FORMAT, lp, "wrong magic number 0x00000801", "expected 0x00000803");
    expect_fail(ip, ip, NC_ERR_FORMAT, ip, "wrong magic number 0x00000803", "expected 0x00000801");
    /* Not an IDX file at all. */
    static const char pgm[] = "P5\n28 28\n255\n......................";
    write_file(p, "not-idx.pgm", (const uint8_t *)pgm, sizeof pgm - 1, 0);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "wrong magic number 0x50350a32", NULL);
    /* Right layout, unsupported element type (0x0D, float). */
    b = make_images(0x0d03, 3, 2, 4, &len);
    write_file(p, "float-images", b, len, 0);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "element type 0x0d", "0x08");
    free(b);

    /* Truncated header: 10 of 16 bytes, 2 of 16 bytes, 5 of 8 bytes. */
    write_file(p, "short-header-images", img, 10, 0);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "truncated header", "expected 16 bytes of IDX images header, found 10");
    write_file(p, "tiny-images.gz", img, 2, 1);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "truncated header", "found 2");
    write_file(p, "short-header-labels", lab, 5, 0);
    expect_fail(ip, p, NC_ERR_FORMAT, p, "truncated header", "expected 8 bytes of IDX labels header, found 5");
    write_file(p, "empty-images", img, 0, 0);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "truncated header", "found 0");

    /* Truncated data, raw and gzip. */
    write_file(p, "short-images", img, il - 4, 0);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "truncated: expected 24 bytes of pixel data after offset 16, found 20", NULL);
    write_file(p, "short-images.gz", img, il - 1, 1);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "truncated: expected 24 bytes of pixel data after offset 16, found 23", NULL);
    write_file(p, "short-labels", lab, ll - 1, 0);
    expect_fail(ip, p, NC_ERR_FORMAT, p, "truncated: expected 3 bytes of label data after offset 8, found 2", NULL);

    /* Trailing garbage, raw and inside a gzip stream. */
    uint8_t *longer = calloc(il + 5, 1);
    if (!longer) exit(1);
    memcpy(longer, img, il);
    write_file(p, "long-images", longer, il + 5, 0);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "trailing garbage", "end at offset 40 (3 x 2 x 4), found 5 more bytes");
    write_file(p, "long-images.gz", longer, il + 5, 1);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "trailing garbage", "found 5 more bytes");
    free(longer);
    longer = calloc(ll + 9000, 1); /* more than one read of the counting loop */
    if (!longer) exit(1);
    memcpy(longer, lab, ll);
    write_file(p, "long-labels", longer, ll + 9000, 0);
    expect_fail(ip, p, NC_ERR_FORMAT, p, "trailing garbage", "found 9000 more bytes");
    free(longer);

    /* Absurd dimensions, rejected from the header alone (no data follows them). */
    static const struct {
        uint32_t n, h, w;
        const char *key;
    } absurd[] = {
        {0, 28, 28, "a dimension is zero"},
        {10, 0, 28, "a dimension is zero"},
        {10, 28, 0, "a dimension is zero"},
        {0xffffffffu, 0xffffffffu, 0xffffffffu, "overflows size_t"},
        {1, 70000, 1, "exceeds 65536 per side"},
        {1, 1, 65537, "exceeds 65536 per side"},
        {65536, 65536, 1, "over the limit"},
        {3000, 1000, 1000, "over the limit"},
        {0x80000000u, 1, 1, "more than 2147483647 items"},
    };
    for (size_t i = 0; i < sizeof absurd / sizeof absurd[0]; i++) {
        uint8_t head[16];
        put_be32(head, 0x803);
        put_be32(head + 4, absurd[i].n);
        put_be32(head + 8, absurd[i].h);
        put_be32(head + 12, absurd[i].w);
        write_file(p, "absurd-images", head, sizeof head, 0);
        expect_fail(p, lp, NC_ERR_FORMAT, p, "absurd dimensions", absurd[i].key);
    }
    uint8_t lhead[8];
    put_be32(lhead, 0x801);
    put_be32(lhead + 4, 0);
    write_file(p, "zero-labels", lhead, sizeof lhead, 0);
    expect_fail(ip, p, NC_ERR_FORMAT, p, "absurd dimensions at offset 4: 0 labels", "zero");

    /* Image count differs from label count: both files named. */
    b = make_labels(0x801, 2, &len);
    write_file(p, "two-labels", b, len, 0);
    expect_fail(ip, p, NC_ERR_MISMATCH, ip, "has 3 images", "has 2 labels");
    expect_fail(ip, p, NC_ERR_MISMATCH, ip, p, NULL);
    free(b);

    free(img);
    free(lab);
}

/* gzip streams cut short or damaged: zlib only reports these through gzerror. */
static void test_bad_gzip(void) {
    char lp[PATH_MAX], p[PATH_MAX], gp[PATH_MAX];
    size_t il, ll;
    /* Enough varied data (100 images of 28 x 28) that the compressed stream is long. */
    uint8_t *img = make_images(0x803, 100, 28, 28, &il);
    uint8_t *lab = make_labels(0x801, 100, &ll);
    for (size_t i = 16; i < il; i++) img[i] = (uint8_t)((i * 2654435761u) >> 13);
    write_file(lp, "gz-labels", lab, ll, 0);
    write_file(gp, "gz-images.gz", img, il, 1);

    FILE *f = fopen(gp, "rb");
    if (!f) exit(1);
    uint8_t *gz = malloc(il + 1024);
    if (!gz) exit(1);
    size_t gzlen = fread(gz, 1, il + 1024, f);
    fclose(f);
    CHECK(gzlen > 1000 && gzlen < il + 1024);

    /* Cut in the middle of the deflate data. */
    write_file(p, "cut-images.gz", gz, gzlen / 2, 0);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "truncated: expected 78400 bytes of pixel data after offset 16",
                "gzip stream is cut short");
    /* All the data there, the 8-byte trailer (CRC-32, length) gone. */
    write_file(p, "no-trailer-images.gz", gz, gzlen - 8, 0);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "truncated gzip stream", "trailer");
    /* A byte of the trailer's CRC changed. */
    gz[gzlen - 6] ^= 0x5a;
    write_file(p, "bad-crc-images.gz", gz, gzlen, 0);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "corrupt gzip stream", NULL);
    gz[gzlen - 6] ^= 0x5a;
    /* The compressed data damaged. */
    memset(gz + gzlen / 3, 0xff, 64);
    write_file(p, "damaged-images.gz", gz, gzlen, 0);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "gzip stream", NULL);

    f = fopen(gp, "rb"); /* undamaged again */
    if (!f || fread(gz, 1, gzlen, f) != gzlen) exit(1);
    fclose(f);

    /* Bytes after the gzip stream that start no other member: zlib's gzread skips them, the loader must not. Text,
     * zeros (a padded file), and a lone byte; each message gives the stream's end and the count after it. */
    uint8_t *tail = malloc(gzlen + 100);
    if (!tail) exit(1);
    memcpy(tail, gz, gzlen);
    static const struct {
        const char *bytes;
        size_t n;
    } trailing[] = {{"GARBAGE\nGARBAGE\n", 16}, {"\0\0\0\0\0\0\0\0", 8}, {"\x1f", 1}};
    for (size_t i = 0; i < sizeof trailing / sizeof trailing[0]; i++) {
        memcpy(tail + gzlen, trailing[i].bytes, trailing[i].n);
        write_file(p, "tail-images.gz", tail, gzlen + trailing[i].n, 0);
        char key[96];
        snprintf(key, sizeof key, "%zu bytes after the gzip stream, which ends at offset %zu", trailing[i].n, gzlen);
        expect_fail(p, lp, NC_ERR_FORMAT, p, "trailing garbage", key);
    }
    /* Bytes that begin like another gzip member (1f 8b 08 00) and end there: not the first member's trailer missing. */
    memcpy(tail + gzlen, "\x1f\x8b\x08\x00junk", 8);
    write_file(p, "tail-images.gz", tail, gzlen + 8, 0);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "trailing garbage", "then the start of another gzip member");
    /* A second gzip member: what gzip -c a b > c writes. Its data continues the first's. */
    const size_t half = il / 2;
    write_file(p, "half1.gz", img, half, 1);
    f = fopen(p, "rb");
    if (!f) exit(1);
    const size_t m1 = fread(tail, 1, gzlen + 100, f);
    fclose(f);
    write_file(p, "half2.gz", img + half, il - half, 1);
    f = fopen(p, "rb");
    if (!f) exit(1);
    uint8_t *two = malloc(m1 + il + 1024);
    if (!two) exit(1);
    memcpy(two, tail, m1);
    const size_t m2 = fread(two + m1, 1, il + 1024, f);
    fclose(f);
    write_file(p, "two-members-images.gz", two, m1 + m2, 0);
    nc_dataset ds;
    nc_error err = {0};
    CHECK(nc_dataset_load(&ds, p, lp, &err) == NC_OK);
    CHECK(ds.n == 100 && ds.images && memcmp(ds.images, img + 16, il - 16) == 0);
    nc_dataset_free(&ds);
    /* ... and a second member cut short. */
    write_file(p, "two-members-cut-images.gz", two, m1 + m2 / 2, 0);
    expect_fail(p, lp, NC_ERR_FORMAT, p, "truncated", "gzip stream is cut short");
    free(two);
    free(tail);

    /* The intact file loads. */
    CHECK(nc_dataset_load(&ds, gp, lp, &err) == NC_OK);
    CHECK(ds.n == 100 && ds.h == 28 && ds.w == 28 && ds.images && memcmp(ds.images, img + 16, il - 16) == 0);
    nc_dataset_free(&ds);
    free(gz);
    free(img);
    free(lab);
}

/* Reads path (a FIFO) while a child process writes bytes into it: what `--images /dev/stdin` or `<(zcat ...)` gives,
 * which cannot be rewound. Returns the load's code; ds as loaded. */
static int load_through_pipe(const char *fifo, const uint8_t *bytes, size_t len, const char *labels, nc_dataset *ds,
                             nc_error *err) {
    fflush(NULL);
    const pid_t child = fork();
    if (child == 0) {
        alarm(10); /* not left waiting where the loader never opens the FIFO */
        FILE *f = fopen(fifo, "wb");
        _exit(f && fwrite(bytes, 1, len, f) == len && fclose(f) == 0 ? 0 : 1);
    }
    const int rc = nc_dataset_load(ds, fifo, labels, err);
    int status = -1;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    return rc;
}

static void test_pipe(void) {
    char lp[PATH_MAX], fifo[PATH_MAX], gp[PATH_MAX];
    size_t il, ll;
    uint8_t *img = make_images(0x803, 3, 2, 4, &il);
    uint8_t *lab = make_labels(0x801, 3, &ll);
    write_file(lp, "pipe-labels", lab, ll, 0);
    tmp_file(fifo, "images-fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    nc_dataset ds;
    nc_error err = {0};
    /* Raw: the two bytes read to look for gzip's magic are the header's first. */
    CHECK(load_through_pipe(fifo, img, il, lp, &ds, &err) == NC_OK);
    CHECK(ds.n == 3 && ds.h == 2 && ds.w == 4 && ds.images && memcmp(ds.images, img + 16, 24) == 0);
    nc_dataset_free(&ds);
    /* gzip. */
    write_file(gp, "pipe-images.gz", img, il, 1);
    uint8_t gz[4096];
    FILE *f = fopen(gp, "rb");
    const size_t gzlen = f ? fread(gz, 1, sizeof gz, f) : 0;
    if (f) fclose(f);
    CHECK(gzlen > 20 && gzlen < sizeof gz);
    CHECK(load_through_pipe(fifo, gz, gzlen, lp, &ds, &err) == NC_OK);
    CHECK(ds.n == 3 && ds.images && memcmp(ds.images, img + 16, 24) == 0);
    nc_dataset_free(&ds);
    unlink(fifo);
    free(img);
    free(lab);
}

static void test_split(void) {
    char p[PATH_MAX];
    size_t il, ll;
    uint8_t *img = make_images(0x803, 5, 3, 3, &il);
    uint8_t *lab = make_labels(0x801, 5, &ll);
    /* Raw images beside gzip labels: each file is looked for as .gz, then raw. */
    write_file(p, "t10k-images-idx3-ubyte", img, il, 0);
    write_file(p, "t10k-labels-idx1-ubyte.gz", lab, ll, 1);

    nc_dataset ds;
    nc_error err = {0};
    CHECK(nc_dataset_load_split(&ds, tmp_dir, "t10k", &err) == NC_OK);
    CHECK(ds.n == 5 && ds.h == 3 && ds.w == 3 && ds.images && memcmp(ds.images, img + 16, 45) == 0);
    CHECK(ds.labels && memcmp(ds.labels, lab + 8, 5) == 0);
    nc_dataset_free(&ds);

    /* Unknown split. */
    memset(&ds, 0xab, sizeof ds);
    CHECK(nc_dataset_load_split(&ds, tmp_dir, "test", &err) == NC_ERR_ARG);
    CHECK_MSG(err, "\"test\"");
    CHECK_MSG(err, "\"t10k\" or \"train\"");
    CHECK(is_zeroed(&ds));
    CHECK(nc_dataset_load_split(&ds, tmp_dir, NULL, &err) == NC_ERR_ARG);

    /* No train files here: the message names the directory and how to get the data. */
    memset(&ds, 0xab, sizeof ds);
    CHECK(nc_dataset_load_split(&ds, tmp_dir, "train", &err) == NC_ERR_IO);
    CHECK(strncmp(err.msg, tmp_dir, strlen(tmp_dir)) == 0);
    CHECK_MSG(err, "no Fashion-MNIST train images here (looked for train-images-idx3-ubyte.gz and "
                   "train-images-idx3-ubyte)");
    CHECK_MSG(err, "apt-get install dataset-fashion-mnist");
    CHECK_MSG(err, "--data");
    CHECK_MSG(err, "NANOCONV_DATA");
    CHECK(is_zeroed(&ds));
    /* Images there, labels missing. */
    write_file(p, "train-images-idx3-ubyte.gz", img, il, 1);
    CHECK(nc_dataset_load_split(&ds, tmp_dir, "train", &err) == NC_ERR_IO);
    CHECK_MSG(err, "no Fashion-MNIST train labels here (looked for train-labels-idx1-ubyte.gz");
    CHECK(is_zeroed(&ds));

    /* The default directory: $NANOCONV_DATA if set and not empty. */
    setenv("NANOCONV_DATA", tmp_dir, 1);
    CHECK(strcmp(nc_default_data_dir(), tmp_dir) == 0);
    CHECK(nc_dataset_load_split(&ds, NULL, "t10k", &err) == NC_OK);
    CHECK(ds.n == 5);
    nc_dataset_free(&ds);
    setenv("NANOCONV_DATA", "", 1);
    CHECK(strcmp(nc_default_data_dir(), SYSTEM_DATA_DIR) == 0);
    unsetenv("NANOCONV_DATA");
    CHECK(strcmp(nc_default_data_dir(), SYSTEM_DATA_DIR) == 0);

    /* Bad arguments. */
    CHECK(nc_dataset_load(NULL, p, p, &err) == NC_ERR_ARG);
    CHECK(nc_dataset_load(&ds, NULL, p, &err) == NC_ERR_ARG);
    CHECK(nc_dataset_load_split(NULL, tmp_dir, "t10k", &err) == NC_ERR_ARG);
    CHECK(nc_dataset_load(&ds, p, p, NULL) == NC_ERR_FORMAT); /* err may be NULL */
    free(img);
    free(lab);
}

/* The SciPy formula (see src/io/resize.c) transcribed pixel by pixel, without tables or
 * blocks; dst is (S, S), src is (h, w). Like the library, it must not be contracted into
 * FMAs: clang honours the pragma at the top of this file; GCC does not contract in ISO C
 * mode (-std=c11, which CMake sets). */
static void resize_plain(uint8_t *dst, int S, const uint8_t *src, int h, int w) {
    int lo = 255, hi = 0;
    for (int i = 0; i < h * w; i++) {
        lo = src[i] < lo ? src[i] : lo;
        hi = src[i] > hi ? src[i] : hi;
    }
    const double zy = (double)h / S, zx = (double)w / S;
    for (int oy = 0; oy < S; oy++)
        for (int ox = 0; ox < S; ox++) {
            double cy = ((oy + 0.5) * zy) - 0.5, cx = ((ox + 0.5) * zx) - 0.5;
            double fy = floor(cy), fx = floor(cx);
            double wy[2] = {1.0 - (cy - fy), 0}, wx[2] = {1.0 - (cx - fx), 0};
            wy[1] = 1.0 - wy[0];
            wx[1] = 1.0 - wx[0];
            double t = 0.0;
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 2; b++) {
                    int y = (int)fy + a, x = (int)fx + b;
                    double v = y >= 0 && y < h && x >= 0 && x < w ? src[y * w + x] / 256.0 : 0.0;
                    t += (v * wy[a]) * wx[b];
                }
            t = t < lo / 256.0 ? lo / 256.0 : t;
            t = t > hi / 256.0 ? hi / 256.0 : t;
            dst[oy * S + ox] = (uint8_t)(t * 256.0);
        }
}

/* Hand-computed resizes. For n = 2 -> S = 4, zoom = 0.5 and cc = (o + 0.5) * 0.5 - 0.5:
 *   o = 0: cc = -0.25, taps -1 (outside, weight 0.25) and 0 (weight 0.75)
 *   o = 1: cc =  0.25, taps  0 (0.75) and 1 (0.25)
 *   o = 2: cc =  0.75, taps  0 (0.25) and 1 (0.75)
 *   o = 3: cc =  1.25, taps  1 (0.75) and 2 (outside, 0.25)
 * so along each axis the weights on (pixel 0, pixel 1) are (.75, 0), (.75, .25), (.25, .75), (0, .75).
 * All products are exact in double, so the result is the truncation of the exact value
 * clipped to the image's [min, max]. */
static void test_resize(void) {
    static const double wa[4][2] = {{0.75, 0}, {0.75, 0.25}, {0.25, 0.75}, {0, 0.75}};

    /* src = [[0, 64], [128, 255]], min 0, max 255: e.g. out[1][1] = .5625*0 + .1875*64 + .1875*128 +
     * .0625*255 = 51.9375 -> 51; out[0][0] = .5625*0 = 0; out[3][3] = .5625*255 = 143.4375 -> 143. */
    const uint8_t src[4] = {0, 64, 128, 255};
    uint8_t dst[16];
    nc_resize_u8(dst, 4, src, 2, 2);
    CHECK(dst[1 * 4 + 1] == 51);
    CHECK(dst[0] == 0);
    CHECK(dst[15] == 143);
    CHECK(dst[1 * 4 + 2] == 91); /* .1875*0 + .5625*64 + .0625*128 + .1875*255 = 91.8125 */
    int all_ok = 1;
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) {
            double v = 0;
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 2; b++) v += src[a * 2 + b] * wa[y][a] * wa[x][b];
            all_ok &= dst[y * 4 + x] == (uint8_t)v;
        }
    CHECK(all_ok);

    /* A flat image of 100: the border weighs in zeros from outside (out[0][0] = .5625 * 100 = 56.25,
     * out[0][1] = .75 * 100 = 75), but skimage clips to the image's [min, max] = [100, 100]. */
    const uint8_t flat[4] = {100, 100, 100, 100};
    nc_resize_u8(dst, 4, flat, 2, 2);
    all_ok = 1;
    for (int i = 0; i < 16; i++) all_ok &= dst[i] == 100;
    CHECK(all_ok);

    /* [[10, 10], [10, 200]]: out[2][2] = .0625*10 + .1875*10 + .1875*10 + .5625*200 = 116.875 -> 116,
     * out[3][3] = .5625 * 200 = 112.5 -> 112; out[0][0] = out[0][3] = .5625 * 10 = 5.625, clipped up to 10. */
    const uint8_t corner[4] = {10, 10, 10, 200};
    nc_resize_u8(dst, 4, corner, 2, 2);
    CHECK(dst[2 * 4 + 2] == 116);
    CHECK(dst[15] == 112);
    CHECK(dst[0] == 10);
    CHECK(dst[3] == 10);

    /* 1 x 1 -> 3 x 3: zoom 1/3, cc = (o + .5)/3 - .5 = -1/3, 0, 1/3. The centre is the pixel; the
     * rest mix in zeros and are clipped back up to it. */
    const uint8_t one = 77;
    uint8_t d9[9];
    nc_resize_u8(d9, 3, &one, 1, 1);
    all_ok = 1;
    for (int i = 0; i < 9; i++) all_ok &= d9[i] == 77;
    CHECK(all_ok);

    /* Same size: zoom 1, cc = o, weights (1, 0): the identity. */
    uint8_t same[9], back[9];
    for (int i = 0; i < 9; i++) same[i] = (uint8_t)(i * 31);
    nc_resize_u8(back, 3, same, 3, 3);
    CHECK(memcmp(same, back, 9) == 0);

    /* Outputs wider than the block of columns nc_resize_u8 works on at once (256), square and
     * not, and a shrink whose taps span more input columns than a block holds (512): the same
     * bytes as the plain per-pixel formula. (A shrink is only the formula, not skimage, which
     * blurs first; it is here to exercise the blocking.) */
    static const int shapes[][3] = {{28, 28, 300}, {3, 5, 300}, {20, 33, 257}, {28, 28, 86}, {4, 1500, 300}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int h = shapes[k][0], w = shapes[k][1], S = shapes[k][2];
        uint8_t *in = malloc((size_t)h * w), *out = malloc((size_t)S * S), *ref = malloc((size_t)S * S);
        if (!in || !out || !ref) exit(1);
        for (int i = 0; i < h * w; i++) in[i] = (uint8_t)(((unsigned)i * 2654435761u) >> 11);
        nc_resize_u8(out, S, in, h, w);
        resize_plain(ref, S, in, h, w);
        CHECK(memcmp(out, ref, (size_t)S * S) == 0);
        free(in);
        free(out);
        free(ref);
    }
}

/* Fashion-MNIST as the Debian package installs it: 10000 test and 60000 training images of
 * 28 x 28, classes 0..9 balanced (1000 and 6000 of each). */
static void test_system_data(void) {
    if (access(SYSTEM_DATA_DIR, F_OK) != 0) {
        printf("test_idx: %s not found; skipping the real-data checks\n", SYSTEM_DATA_DIR);
        return;
    }
    static const struct {
        const char *split;
        int n;
    } splits[] = {{"t10k", 10000}, {"train", 60000}};
    for (size_t s = 0; s < 2; s++) {
        nc_dataset ds;
        nc_error err = {0};
        int rc = nc_dataset_load_split(&ds, SYSTEM_DATA_DIR, splits[s].split, &err);
        CHECK(rc == NC_OK);
        if (rc) {
            fprintf(stderr, "  %s\n", err.msg);
            continue;
        }
        CHECK(ds.n == splits[s].n && ds.h == 28 && ds.w == 28);
        int count[256] = {0};
        for (int i = 0; i < ds.n; i++) count[ds.labels[i]]++;
        int balanced = 1;
        for (int c = 0; c < 256; c++) balanced &= count[c] == (c < 10 ? splits[s].n / 10 : 0);
        CHECK(balanced);
        /* Pixels span the full byte range; every image has some ink. */
        int lo = 255, hi = 0;
        for (size_t i = 0; i < (size_t)ds.n * 784; i++) {
            lo = ds.images[i] < lo ? ds.images[i] : lo;
            hi = ds.images[i] > hi ? ds.images[i] : hi;
        }
        CHECK(lo == 0 && hi == 255);
        nc_dataset_free(&ds);
    }
}

/* Removes every file in the temporary directory, then the directory. */
static void remove_tmp_dir(void) {
    DIR *d = opendir(tmp_dir);
    if (!d) return;
    struct dirent *e;
    char p[PATH_MAX];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (unlink(tmp_file(p, e->d_name)) != 0) fprintf(stderr, "test_idx: cannot remove %s\n", p);
    }
    closedir(d);
    if (rmdir(tmp_dir) != 0) fprintf(stderr, "test_idx: cannot remove %s\n", tmp_dir);
}

int main(void) {
    if (!mkdtemp(tmp_dir)) {
        perror("test_idx: mkdtemp");
        return 1;
    }
    test_valid();
    test_bad_files();
    test_bad_gzip();
    test_pipe();
    test_split();
    test_resize();
    test_system_data();
    remove_tmp_dir();
    return nc_test_done("test_idx");
}
