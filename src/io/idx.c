/* IDX data set files (the MNIST / Fashion-MNIST format), raw or gzip-compressed.
 *
 * Layout (all integers big-endian):
 *   images: magic 0x00000803, n, h, w, then n*h*w pixel bytes  (header 16 bytes)
 *   labels: magic 0x00000801, n, then n label bytes           (header 8 bytes)
 * The normal magic is 0x0000 TT DD: TT the element type (only 0x08, unsigned byte,
 * is accepted), DD the number of dimensions. The course's resized test sets wrote a
 * magic of 0 instead; for those the dimensions are taken from the role the caller
 * gives the file (images: n, h, w; labels: n).
 *
 * Files are read through zlib's gz* interface, which passes uncompressed files
 * through unchanged, so raw and gzip files are told apart by content, not name.
 * The header is read and checked first, so absurd dimensions are rejected before
 * anything is allocated; then exactly the promised number of bytes is read and the
 * file must end there. */
#define _POSIX_C_SOURCE 200809L
#include "core/error.h"

#include <errno.h>
#include <limits.h> /* INT_MAX */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#ifdef NC_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define IDX_MAGIC_IMAGES 0x00000803u
#define IDX_MAGIC_LABELS 0x00000801u
#define IDX_TYPE_UBYTE 0x08u
#define IDX_MAX_SIDE 65536u             /* larger image sides are certainly a corrupt header */
#define IDX_MAX_BYTES ((size_t)1 << 31) /* 2 GiB of data: far beyond any data set this engine reads */
#define IDX_CHUNK ((unsigned)1 << 30)   /* gzread takes an unsigned and returns an int: read in pieces */
#define DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist"
#define IDX_PATH_LEN 4096 /* Linux's PATH_MAX, without depending on which headers define it */

typedef enum { IDX_IMAGES, IDX_LABELS } idx_role;

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Reads up to len bytes into buf, stopping early only at the end of the (decompressed) data
 * or on an error; *got is the count read. base is the decompressed offset the read starts at,
 * for messages. A gzip stream cut short is not a hard error for
 * zlib: gzread returns what it could inflate and leaves Z_BUF_ERROR ("unexpected end of
 * file") in gzerror; that is reported through *cut so that the caller can word it. Read
 * errors and corrupt streams fail here. */
static int gz_read_full(gzFile gz, const char *path, size_t base, uint8_t *buf, size_t len, size_t *got, int *cut,
                        nc_error *err) {
    *got = 0;
    *cut = 0;
    while (*got < len) {
        size_t want = len - *got < IDX_CHUNK ? len - *got : IDX_CHUNK;
        int r = gzread(gz, buf + *got, (unsigned)want);
        if (r < 0) break;
        *got += (size_t)r;
        if ((size_t)r < want) break;
    }
    int errnum = Z_OK;
    const char *zmsg = gzerror(gz, &errnum);
    /* zlib words its messages "path: reason" (with strerror's text for Z_ERRNO); keep the reason. */
    size_t path_len = strlen(path);
    if (strncmp(zmsg, path, path_len) == 0 && zmsg[path_len] == ':' && zmsg[path_len + 1] == ' ') zmsg += path_len + 2;
    if (errnum == Z_ERRNO) return nc_fail(err, NC_ERR_IO, "%s: read error at offset %zu: %s", path, base + *got, zmsg);
    if (errnum == Z_BUF_ERROR) {
        *cut = 1;
        return NC_OK;
    }
    if (errnum != Z_OK) /* gzread drops the count of what it copied before such an error, so say "at or after". */
        return nc_fail(err, NC_ERR_FORMAT, "%s: corrupt gzip stream at or after decompressed offset %zu: %s", path,
                       base + *got, zmsg);
    return NC_OK;
}

/* Loads one IDX file. On success *data is (n, h, w) for images or (n) for labels, owned by
 * the caller; h and w are set to 1 for labels. On failure nothing is left allocated. */
static int idx_load(const char *path, idx_role role, uint8_t **data, int *n_out, int *h_out, int *w_out,
                    nc_error *err) {
    *data = NULL;
    errno = 0;
    gzFile gz = gzopen(path, "rb");
    if (!gz) {
        /* gzopen leaves errno 0 when zlib itself could not allocate its state. */
        if (errno == 0) return nc_fail(err, NC_ERR_NOMEM, "%s: cannot open: out of memory in zlib", path);
        return nc_fail(err, NC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    /* A larger buffer than zlib's default 8 KiB reads the 47 MB training images about 10% faster. */
    gzbuffer(gz, 1u << 17);

    const char *what = role == IDX_IMAGES ? "images" : "labels";
    const uint32_t expected_magic = role == IDX_IMAGES ? IDX_MAGIC_IMAGES : IDX_MAGIC_LABELS;
    const size_t header_len = role == IDX_IMAGES ? 16 : 8;
    const char *cut_note = " (the gzip stream is cut short)";
    uint8_t header[16];
    uint8_t *buf = NULL;
    size_t got = 0;
    int cut = 0;

    int rc = gz_read_full(gz, path, 0, header, header_len, &got, &cut, err);
    if (rc) goto done;
    if (got < 4) {
        rc = nc_fail(err, NC_ERR_FORMAT, "%s: truncated header: expected %zu bytes of IDX %s header, found %zu%s", path,
                     header_len, what, got, cut ? cut_note : "");
        goto done;
    }
    uint32_t magic = be32(header);
    if (magic != expected_magic && magic != 0) {
        if ((magic >> 16) == 0 && (magic & 0xffu) == (expected_magic & 0xffu) && ((magic >> 8) & 0xffu) != 8) {
            rc = nc_fail(err, NC_ERR_FORMAT,
                         "%s: unsupported IDX element type 0x%02x at offset 2 (magic 0x%08x); only unsigned bytes "
                         "(0x08) are read",
                         path, (unsigned)((magic >> 8) & 0xffu), (unsigned)magic);
        } else {
            rc = nc_fail(err, NC_ERR_FORMAT,
                         "%s: wrong magic number 0x%08x at offset 0: expected 0x%08x (IDX %s) or 0x00000000 (the "
                         "course's variant)",
                         path, (unsigned)magic, (unsigned)expected_magic, what);
        }
        goto done;
    }
    if (got < header_len) {
        rc = nc_fail(err, NC_ERR_FORMAT, "%s: truncated header: expected %zu bytes of IDX %s header, found %zu%s", path,
                     header_len, what, got, cut ? cut_note : "");
        goto done;
    }

    uint32_t n = be32(header + 4);
    uint32_t h = role == IDX_IMAGES ? be32(header + 8) : 1;
    uint32_t w = role == IDX_IMAGES ? be32(header + 12) : 1;
    char dims[64]; /* the header's dimensions as the messages give them */
    if (role == IDX_IMAGES)
        snprintf(dims, sizeof dims, "%u x %u x %u", (unsigned)n, (unsigned)h, (unsigned)w);
    else
        snprintf(dims, sizeof dims, "%u labels", (unsigned)n);
    size_t total = 0, hw = 0;
    if (n == 0 || h == 0 || w == 0) {
        rc = nc_fail(err, NC_ERR_FORMAT, "%s: absurd dimensions at offset 4: %s (a dimension is zero)", path, dims);
        goto done;
    }
    if (!nc_mul_ok(h, w, &hw) || !nc_mul_ok(n, hw, &total)) {
        rc = nc_fail(err, NC_ERR_FORMAT, "%s: absurd dimensions at offset 4: %s overflows size_t", path, dims);
        goto done;
    }
    if (h > IDX_MAX_SIDE || w > IDX_MAX_SIDE) {
        rc = nc_fail(err, NC_ERR_FORMAT, "%s: absurd dimensions at offset 4: image of %u x %u exceeds %u per side",
                     path, (unsigned)h, (unsigned)w, IDX_MAX_SIDE);
        goto done;
    }
    if (total > IDX_MAX_BYTES) {
        rc = nc_fail(err, NC_ERR_FORMAT, "%s: absurd dimensions at offset 4: %s is %zu bytes, over the limit of %zu",
                     path, dims, total, IDX_MAX_BYTES);
        goto done;
    }
    if (n > INT_MAX) { /* only 2^31 items of one byte pass the size limit */
        rc = nc_fail(err, NC_ERR_FORMAT, "%s: absurd dimensions at offset 4: %s is more than %d items", path, dims,
                     INT_MAX);
        goto done;
    }

    buf = malloc(total);
    if (!buf) {
        rc = nc_fail(err, NC_ERR_NOMEM, "%s: cannot allocate %zu bytes for %u %s", path, total, (unsigned)n, what);
        goto done;
    }
    rc = gz_read_full(gz, path, header_len, buf, total, &got, &cut, err);
    if (rc) goto done;
    if (got < total) {
        rc = nc_fail(err, NC_ERR_FORMAT, "%s: truncated: expected %zu bytes of %s data after offset %zu, found %zu%s",
                     path, total, role == IDX_IMAGES ? "pixel" : "label", header_len, got, cut ? cut_note : "");
        goto done;
    }
    /* The file must end here: more bytes mean a wrong header or a concatenation. Count them
     * all, so that the message says how much is there. This read also surfaces a gzip stream
     * whose data is whole but whose trailer (CRC and length) is missing or wrong. */
    uint8_t extra[4096];
    size_t n_extra = 0;
    do {
        rc = gz_read_full(gz, path, header_len + total + n_extra, extra, sizeof extra, &got, &cut, err);
        if (rc) goto done;
        n_extra += got;
    } while (got == sizeof extra);
    if (n_extra > 0) {
        rc = nc_fail(err, NC_ERR_FORMAT,
                     "%s: trailing garbage: expected the data to end at offset %zu (%s), found %zu more bytes", path,
                     header_len + total, dims, n_extra);
        goto done;
    }
    if (cut) {
        rc = nc_fail(err, NC_ERR_FORMAT,
                     "%s: truncated gzip stream: all %zu bytes of data are there but the gzip "
                     "trailer after them is missing",
                     path, header_len + total);
        goto done;
    }

    *data = buf;
    buf = NULL;
    *n_out = (int)n;
    *h_out = (int)h;
    *w_out = (int)w;
done:
    free(buf);
    gzclose(gz);
    return rc;
}

int nc_dataset_load(nc_dataset *ds, const char *images_path, const char *labels_path, nc_error *err) {
    if (!ds || !images_path || !labels_path)
        return nc_fail(err, NC_ERR_ARG, "nc_dataset_load: ds, images_path and labels_path must not be NULL");
    memset(ds, 0, sizeof *ds);

    uint8_t *images = NULL, *labels = NULL;
    int n_img = 0, h = 0, w = 0, n_lab = 0, one_h = 0, one_w = 0;
    int rc = idx_load(images_path, IDX_IMAGES, &images, &n_img, &h, &w, err);
    if (rc) return rc;
    rc = idx_load(labels_path, IDX_LABELS, &labels, &n_lab, &one_h, &one_w, err);
    if (rc) {
        free(images);
        return rc;
    }
    if (n_img != n_lab) {
        free(images);
        free(labels);
        return nc_fail(err, NC_ERR_MISMATCH, "%s: has %d images but %s has %d labels", images_path, n_img, labels_path,
                       n_lab);
    }
    ds->n = n_img;
    ds->h = h;
    ds->w = w;
    ds->images = images;
    ds->labels = labels;
    return NC_OK;
}

const char *nc_default_data_dir(void) {
    const char *env = getenv("NANOCONV_DATA");
    return env && env[0] ? env : DEFAULT_DATA_DIR;
}

/* Finds {dir}/{split}-{stem}-ubyte.gz, else the same without .gz, for the file of the named
 * kind ("images" or "labels"); path is IDX_PATH_LEN bytes. */
static int find_split_file(char *path, const char *dir, const char *split, const char *kind, const char *stem,
                           nc_error *err) {
    int len = snprintf(path, IDX_PATH_LEN, "%s/%s-%s-ubyte.gz", dir, split, stem);
    if (len < 0 || len >= IDX_PATH_LEN)
        return nc_fail(err, NC_ERR_ARG, "%s: data directory path too long (%d bytes, limit %d)", dir, len,
                       IDX_PATH_LEN);
    if (access(path, F_OK) == 0) return NC_OK;
    path[len - 3] = '\0'; /* drop ".gz" */
    if (access(path, F_OK) == 0) return NC_OK;
    return nc_fail(err, NC_ERR_IO,
                   "%s: no Fashion-MNIST %s %s here (looked for %s-%s-ubyte.gz and %s-%s-ubyte); install the data "
                   "with `apt-get install dataset-fashion-mnist` or point to it with --data DIR or NANOCONV_DATA",
                   dir, split, kind, split, stem, split, stem);
}

int nc_dataset_load_split(nc_dataset *ds, const char *dir, const char *split, nc_error *err) {
    if (!ds) return nc_fail(err, NC_ERR_ARG, "nc_dataset_load_split: ds must not be NULL");
    memset(ds, 0, sizeof *ds);
    if (!split || (strcmp(split, "t10k") != 0 && strcmp(split, "train") != 0))
        return nc_fail(err, NC_ERR_ARG, "unknown data split \"%s\": expected \"t10k\" or \"train\"",
                       split ? split : "(null)");
    if (!dir) dir = nc_default_data_dir();

    char images_path[IDX_PATH_LEN], labels_path[IDX_PATH_LEN];
    int rc = find_split_file(images_path, dir, split, "images", "images-idx3", err);
    if (rc) return rc;
    rc = find_split_file(labels_path, dir, split, "labels", "labels-idx1", err);
    if (rc) return rc;
    return nc_dataset_load(ds, images_path, labels_path, err);
}

int nc_dataset_pin(nc_dataset *ds, nc_error *err) {
    if (ds->pinned || !ds->images || ds->n <= 0) return NC_OK;
#ifdef NC_HAVE_CUDA
    const size_t bytes = (size_t)ds->n * (size_t)ds->h * (size_t)ds->w;
    /* Portable: page-locked for every GPU's context, as a session may spread a run over several */
    const cudaError_t e = cudaHostRegister(ds->images, bytes, cudaHostRegisterPortable);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return nc_fail(err, NC_ERR_UNAVAILABLE, "page-locking %zu bytes of images: %s", bytes, cudaGetErrorString(e));
    }
    ds->pinned = 1;
    return NC_OK;
#else
    return nc_fail(err, NC_ERR_UNAVAILABLE, "page-locking images: nanoconv was built without CUDA");
#endif
}

void nc_dataset_free(nc_dataset *ds) {
    if (!ds) return;
#ifdef NC_HAVE_CUDA
    if (ds->pinned) (void)cudaHostUnregister(ds->images); /* nothing to report: the memory is freed either way */
#endif
    free(ds->images);
    free(ds->labels);
    memset(ds, 0, sizeof *ds);
}
