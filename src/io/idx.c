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
 * A file that starts with gzip's magic (1f 8b) is inflated by zlib, member after member; what follows a member's end
 * must be another member or the end of the file (zlib's gzread would skip anything else as trailing garbage). Other
 * files are read as they are, so raw and gzip files are told apart by content, not name.
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
#define IDX_CHUNK ((unsigned)1 << 30)   /* inflate's avail_out is an unsigned: inflate in pieces */
#define IDX_INBUF ((size_t)1 << 17)     /* the compressed bytes read at a time */
#define DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist"
#define IDX_PATH_LEN 4096 /* Linux's PATH_MAX, without depending on which headers define it */

typedef enum { IDX_IMAGES, IDX_LABELS } idx_role;

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* An open IDX file: raw, or gzip inflated as it is read. */
typedef struct {
    FILE *f;
    const char *path;
    int gzip;     /* the file starts with gzip's magic */
    int eof;      /* the file has no more bytes to read into in */
    int between;  /* a gzip member has ended: another must follow, or the end of the file */
    int done;     /* the last member has ended at the end of the file */
    size_t taken; /* the file's bytes read into in so far */
    int members;  /* gzip members begun */
    size_t out;   /* bytes the last of them has given */
    z_stream z;
    uint8_t *in;            /* IDX_INBUF compressed bytes */
    uint8_t head[2];        /* a raw file's first bytes, read to look for gzip's magic (a pipe cannot be rewound) */
    size_t head_n, head_at; /* how many there are, and the next to be read */
} idx_file;

static int idx_open(idx_file *r, const char *path, nc_error *err) {
    memset(r, 0, sizeof *r);
    r->path = path;
    if (!path[0]) return nc_fail(err, NC_ERR_ARG, "no IDX file name (an empty path)");
    if (!(r->f = fopen(path, "rb"))) return nc_fail(err, NC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    uint8_t magic[2];
    const size_t k = fread(magic, 1, 2, r->f);
    if (k < 2 && ferror(r->f)) {
        const int rc = nc_fail(err, NC_ERR_IO, "%s: read error at offset 0: %s", path, strerror(errno));
        fclose(r->f);
        return rc;
    }
    r->gzip = k == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (r->gzip) {
        if (!(r->in = malloc(IDX_INBUF))) {
            fclose(r->f);
            return nc_fail(err, NC_ERR_NOMEM, "%s: cannot allocate the gzip input buffer", path);
        }
        memcpy(r->in, magic, 2);
        r->z.next_in = r->in;
        r->z.avail_in = 2;
        r->taken = 2;
        r->members = 1;
        const int zr = inflateInit2(&r->z, 15 + 16); /* 32 KiB window, gzip wrapper only */
        if (zr != Z_OK) {
            free(r->in);
            fclose(r->f);
            return nc_fail(err, zr == Z_MEM_ERROR ? NC_ERR_NOMEM : NC_ERR_IO, "%s: cannot start zlib's inflate: %s",
                           path, r->z.msg ? r->z.msg : zError(zr));
        }
    } else {
        memcpy(r->head, magic, k);
        r->head_n = k;
    }
    return NC_OK;
}

static void idx_close(idx_file *r) {
    if (r->gzip) inflateEnd(&r->z);
    free(r->in);
    if (r->f) fclose(r->f);
}

/* Moves what is left of in to its start and reads the file into the rest, until in holds at least want bytes or the
 * file ends. */
static int idx_fill(idx_file *r, size_t want, nc_error *err) {
    while (r->z.avail_in < want && !r->eof) {
        memmove(r->in, r->z.next_in, r->z.avail_in);
        r->z.next_in = r->in;
        const size_t k = fread(r->in + r->z.avail_in, 1, IDX_INBUF - r->z.avail_in, r->f);
        if (k == 0) {
            if (ferror(r->f))
                return nc_fail(err, NC_ERR_IO, "%s: read error at offset %zu: %s", r->path, r->taken, strerror(errno));
            r->eof = 1;
        }
        r->z.avail_in += (unsigned)k;
        r->taken += k;
    }
    return NC_OK;
}

/* Reads up to len bytes into buf, stopping early only at the end of the (decompressed) data
 * or on an error; *got is the count read. base is the decompressed offset the read starts at,
 * for messages. A gzip stream that the file cuts short is reported through *cut, so that the
 * caller can word it; read errors, corrupt streams and bytes after the last gzip member that
 * start no other member fail here. */
static int idx_read(idx_file *r, size_t base, uint8_t *buf, size_t len, size_t *got, int *cut, nc_error *err) {
    *got = 0;
    *cut = 0;
    if (!r->gzip) {
        const size_t h = r->head_n - r->head_at < len ? r->head_n - r->head_at : len;
        memcpy(buf, r->head + r->head_at, h);
        r->head_at += h;
        *got = h + fread(buf + h, 1, len - h, r->f);
        if (*got < len && ferror(r->f))
            return nc_fail(err, NC_ERR_IO, "%s: read error at offset %zu: %s", r->path, base + *got, strerror(errno));
        return NC_OK;
    }
    while (*got < len && !r->done) {
        int rc = idx_fill(r, r->between ? 2 : 1, err);
        if (rc) return rc;
        if (r->between) { /* another member, or the end of the file */
            if (r->z.avail_in == 0) {
                r->done = 1;
                break;
            }
            if (r->z.avail_in < 2 || r->z.next_in[0] != 0x1f || r->z.next_in[1] != 0x8b) {
                const size_t at = r->taken - r->z.avail_in;
                long size = -1;
                if (fseek(r->f, 0, SEEK_END) == 0) size = ftell(r->f);
                if (size < 0 || (size_t)size < at)
                    return nc_fail(err, NC_ERR_FORMAT, "%s: trailing garbage after the gzip stream, at offset %zu",
                                   r->path, at);
                return nc_fail(err, NC_ERR_FORMAT,
                               "%s: trailing garbage: %zu bytes after the gzip stream, which ends at offset %zu",
                               r->path, (size_t)size - at, at);
            }
            inflateReset(&r->z);
            r->between = 0;
            r->members++;
            r->out = 0;
        }
        const size_t want = len - *got < IDX_CHUNK ? len - *got : IDX_CHUNK;
        r->z.next_out = buf + *got;
        r->z.avail_out = (unsigned)want;
        const int zr = inflate(&r->z, Z_NO_FLUSH);
        *got += want - r->z.avail_out;
        r->out += want - r->z.avail_out;
        if (zr == Z_STREAM_END) {
            r->between = 1;
        } else if (zr == Z_BUF_ERROR) { /* no progress: the file ended inside a member (idx_fill read all of it) */
            *cut = 1;
            break;
        } else if (zr == Z_MEM_ERROR) {
            return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory in zlib's inflate", r->path);
        } else if (zr != Z_OK) {
            return nc_fail(err, NC_ERR_FORMAT, "%s: corrupt gzip stream at or after decompressed offset %zu: %s",
                           r->path, base + *got, r->z.msg ? r->z.msg : zError(zr));
        }
    }
    return NC_OK;
}

/* Loads one IDX file. On success *data is (n, h, w) for images or (n) for labels, owned by
 * the caller; h and w are set to 1 for labels. On failure nothing is left allocated. */
static int idx_load(const char *path, idx_role role, uint8_t **data, int *n_out, int *h_out, int *w_out,
                    nc_error *err) {
    *data = NULL;
    idx_file file;
    int rc = idx_open(&file, path, err);
    if (rc) return rc;

    const char *what = role == IDX_IMAGES ? "images" : "labels";
    const uint32_t expected_magic = role == IDX_IMAGES ? IDX_MAGIC_IMAGES : IDX_MAGIC_LABELS;
    const size_t header_len = role == IDX_IMAGES ? 16 : 8;
    const char *cut_note = " (the gzip stream is cut short)";
    uint8_t header[16];
    uint8_t *buf = NULL;
    size_t got = 0;
    int cut = 0;

    rc = idx_read(&file, 0, header, header_len, &got, &cut, err);
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
    rc = idx_read(&file, header_len, buf, total, &got, &cut, err);
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
        rc = idx_read(&file, header_len + total + n_extra, extra, sizeof extra, &got, &cut, err);
        if (rc) goto done;
        n_extra += got;
    } while (got == sizeof extra);
    if (n_extra > 0) {
        rc = nc_fail(err, NC_ERR_FORMAT,
                     "%s: trailing garbage: expected the data to end at offset %zu (%s), found %zu more bytes", path,
                     header_len + total, dims, n_extra);
        goto done;
    }
    if (cut && file.members > 1 && file.out == 0) {
        rc = nc_fail(err, NC_ERR_FORMAT,
                     "%s: trailing garbage: all %zu bytes of data are there, then the start of another gzip member "
                     "that the file cuts short",
                     path, header_len + total);
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
    idx_close(&file);
    return rc;
}

int nc_dataset_load(nc_dataset *ds, const char *images_path, const char *labels_path, nc_error *err) {
    if (!ds || !images_path) return nc_fail(err, NC_ERR_ARG, "nc_dataset_load: ds and images_path must not be NULL");
    memset(ds, 0, sizeof *ds);

    uint8_t *images = NULL, *labels = NULL;
    int n_img = 0, h = 0, w = 0, n_lab = 0, one_h = 0, one_w = 0;
    int rc = idx_load(images_path, IDX_IMAGES, &images, &n_img, &h, &w, err);
    if (rc) return rc;
    rc = labels_path ? idx_load(labels_path, IDX_LABELS, &labels, &n_lab, &one_h, &one_w, err) : NC_OK;
    if (rc) {
        free(images);
        return rc;
    }
    if (labels_path && n_img != n_lab) {
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

int nc_dataset_check_labels(const nc_dataset *ds, int n, int classes, const char *what, nc_error *err) {
    if (!ds->labels && n > 0 && ds->n > 0) return nc_fail(err, NC_ERR_ARG, "%s: no labels were loaded", what);
    for (int i = 0; i < n && i < ds->n; i++)
        if (ds->labels[i] >= classes)
            return nc_fail(err, NC_ERR_MISMATCH, "%s: label %d of image %d is not below the model's %d classes", what,
                           ds->labels[i], i, classes);
    return NC_OK;
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
