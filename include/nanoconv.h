/*
 * nanoconv: a small inference engine for LeNet-family convolutional networks.
 *
 * Public C API. Every function that can fail returns an int status (NC_OK or
 * one of the NC_ERR_* codes) and fills the caller's nc_error with a message
 * that names the file, offset, layer or value that was wrong. Library code
 * never exits; the caller decides what to do with a failure.
 *
 * Tensors are float32, NCHW. Images are uint8, one byte per pixel, row-major.
 */
#ifndef NANOCONV_H
#define NANOCONV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NC_VERSION "0.1.0"

/* Status codes. Every non-zero code is a failure. */
enum {
    NC_OK = 0,
    NC_ERR_IO = 1,          /* a file could not be opened, read or written */
    NC_ERR_FORMAT = 2,      /* a file is truncated, corrupt or of the wrong kind */
    NC_ERR_MISMATCH = 3,    /* shapes or sizes that must agree do not */
    NC_ERR_ARG = 4,         /* a bad argument from the caller (unknown name, N out of range) */
    NC_ERR_NOMEM = 5,       /* host or device memory could not be allocated */
    NC_ERR_UNAVAILABLE = 6, /* a backend not built in, or no GPU present */
    NC_ERR_DEVICE = 7,      /* a CUDA, cuDNN or cuBLAS call failed */
};

#define NC_ERROR_MSG_LEN 512
typedef struct nc_error {
    int code;
    char msg[NC_ERROR_MSG_LEN];
} nc_error;

/* ------------------------------------------------------------------ data */

/* A set of uint8 images with their labels, as read from IDX files (labels NULL: images only). */
typedef struct nc_dataset {
    int n;           /* number of images */
    int h, w;        /* image height and width */
    uint8_t *images; /* (n, h, w) */
    uint8_t *labels; /* (n), each 0..255; NULL where the set was loaded without labels */
    int pinned;      /* images page-locked by nc_dataset_pin */
} nc_dataset;

/* Reads an IDX image file and its IDX label file, each raw or gzip-compressed
 * (detected from the content, not the name). Accepts magic 0x00000803 and
 * 0x00000801 and the course's variant whose magic number is 0. labels_path NULL:
 * the images only (ds->labels NULL). */
int nc_dataset_load(nc_dataset *ds, const char *images_path, const char *labels_path, nc_error *err);

/* Loads split "t10k" or "train" from a directory holding the four Fashion-MNIST
 * files ({split}-images-idx3-ubyte[.gz], {split}-labels-idx1-ubyte[.gz]).
 * dir NULL means $NANOCONV_DATA, else the Debian package's directory. */
int nc_dataset_load_split(nc_dataset *ds, const char *dir, const char *split, nc_error *err);

/* The directory nc_dataset_load_split uses when dir is NULL. */
const char *nc_default_data_dir(void);

/* Page-locks ds's images (cudaHostRegister), so that the GPU backends upload them from where they are instead of
 * copying them into page-locked memory of their own first; nc_dataset_free unlocks them. NC_ERR_UNAVAILABLE where
 * nanoconv was built without CUDA or the machine has no GPU: ds is then as it was, and runs work as on any memory. */
int nc_dataset_pin(nc_dataset *ds, nc_error *err);

/* Checks that the first n labels name one of a model's classes (0 .. classes - 1): a label no prediction can match
 * means a corrupt labels file or the wrong model. NC_ERR_MISMATCH naming the first that does not, prefixed by what
 * (the labels' file, say); NC_ERR_ARG where ds has no labels. */
int nc_dataset_check_labels(const nc_dataset *ds, int n, int classes, const char *what, nc_error *err);

void nc_dataset_free(nc_dataset *ds);

/* Resizes one image from (h, w) to (S, S) bit for bit as the course did:
 * skimage.transform.resize(img / 256.0, (S, S), mode='constant', cval=0) * 256,
 * truncated to uint8. dst is (S, S), src is (h, w). */
void nc_resize_u8(uint8_t *dst, int S, const uint8_t *src, int h, int w);

/* ----------------------------------------------------------------- model */

typedef struct nc_model nc_model;

/* Loads a nanoconv safetensors model file (docs/MODEL_FORMAT.md), checking
 * every tensor's presence, dtype and shape against the architecture. */
int nc_model_load(nc_model **out, const char *path, nc_error *err);

/* Writes the model atomically: to a temporary file beside path, then renamed. */
int nc_model_save(const nc_model *m, const char *path, nc_error *err);

void nc_model_free(nc_model *m);

const char *nc_model_name(const nc_model *m);
int nc_model_num_classes(const nc_model *m);
int nc_model_num_conv(const nc_model *m);

/* Writes the one-line-per-layer summary (shape in, shape out, parameters,
 * FLOPs per image) to the stream (a FILE *, passed as void * to keep stdio
 * out of this header). */
void nc_model_print_summary(const nc_model *m, void *file);

/* -------------------------------------------------------------- backends */

#define NC_MAX_LAYERS 32

/* Timings of one run. conv_s[i] is the Op Time of the i-th convolution layer
 * (the course's rule: synchronise, time the layer alone over the whole batch,
 * synchronise), summed over the chunks the batch was split into. */
typedef struct nc_timing {
    int n_conv;
    double conv_s[NC_MAX_LAYERS];
    char conv_note[NC_MAX_LAYERS][48]; /* e.g. "fused tanh+maxpool", or "" */
    int conv_version[NC_MAX_LAYERS];   /* cuda backend: the kernel version whose kernels ran each layer (a layer
                                          that --conv-kernel's version leaves to another, that one's); else 0 */
    double total_s;                    /* the whole run, images in to predictions out */
} nc_timing;

/* Options a backend may honour. Zero-initialise and set what you need. */
typedef struct nc_run_opts {
    int threads;     /* CPU threads; 0 = OpenMP's default */
    int conv_kernel; /* convolution kernel version; 0 = the backend's default (cuda: the fastest exact version
                        for each layer shape, measured once and cached) */
    int device;      /* GPU index (GPU backends; the others refuse any but 0) */
    int devices;     /* GPU backends: the GPUs a run's images are spread over, from `device` on: 0 or 1, one; N > 1,
                        N of them; NC_ALL_DEVICES, every one from `device` on. nc_session_run splits the images into
                        as many contiguous shares, runs them at once, one GPU each, and gathers the results */
    size_t chunk;    /* images per chunk; 0 = the backend chooses */
    int precision;   /* cuda backend: 0 fp32 (exact, default); on the tensor cores: 1 tf32, 3 fp16, 4 bf16
                        (reduced precision), 2 3xtf32 (near-exact); --precision; the other backends refuse any but 0 */
    int dense_sums;  /* cuda backend at fp32: NC_DENSE_SUMS_SLICES (0, default) the dense layers of more than 32
                        outputs on the int8 tensor cores, their operands cut into three 8-bit slices and the products
                        summed exactly in integers; NC_DENSE_SUMS_FP32 every dense layer on fp32 fma sums in k's order
                        (the SIMT kernels); --dense-sums; ignored at the other precisions and by other backends */
} nc_run_opts;

#define NC_DENSE_SUMS_SLICES 0 /* nc_run_opts.dense_sums */
#define NC_DENSE_SUMS_FP32 1

#define NC_ALL_DEVICES (-1) /* nc_run_opts.devices: every GPU from `device` on */
#define NC_MAX_DEVICES 64   /* the most GPUs a session spreads a run over */

/* Threads: a session is one thread's at a time (its plan holds the run's buffers and, on a GPU, its stream).
 * Sessions of their own, on one model or several and on any backends, may be created, run and freed from several
 * threads at once; sessions only read their model. The cuda and cudnn sessions on one GPU take turns there (a lock a
 * GPU, held while one is created, runs or is freed: they would share the device's constant memory, kernels'
 * shared-memory limits and the tuner's timings), and those on different GPUs go at once. A cpu run uses OpenMP
 * threads of its own, nc_run_opts.threads (by default every core), and a cpu-ref run the calling thread's OpenMP
 * default: sessions at once multiply them. */
typedef struct nc_session nc_session;

/* Names of the backends built into this library, NULL-terminated. */
const char *const *nc_backend_names(void);

/* Binds a model to a backend ("cpu-ref", "cpu", "cuda", "cudnn"), which builds
 * its execution plan. Fails with NC_ERR_ARG for an unknown name and with
 * NC_ERR_UNAVAILABLE where the backend cannot run here (no GPU). The session
 * keeps a pointer to m: free it only after nc_session_free. */
int nc_session_create(nc_session **out, const nc_model *m, const char *backend, const nc_run_opts *opts, nc_error *err);

/* Runs the network on n images of (h, w) pixels. The images are resized and
 * scaled as the model says: a model of one input channel takes images of its
 * input size, or, where its input is square, images no larger in either side,
 * upscaled as the course did (NC_ERR_MISMATCH otherwise; NC_ERR_ARG for h or w
 * under 1, or images or pred NULL where n > 0). pred is (n), the argmax of each
 * output (ties to the lowest index); logits, if not NULL, is (n, classes), the
 * final layer's output. t, if not NULL, receives the timings. On several GPUs
 * (nc_run_opts.devices) each GPU takes a contiguous share of the images, and a
 * layer's Op Time is the slowest GPU's time for its share. */
int nc_session_run(nc_session *s, const uint8_t *images, int n, int h, int w, int *pred, float *logits, nc_timing *t,
                   nc_error *err);

void nc_session_free(nc_session *s);

#ifdef __cplusplus
}
#endif
#endif /* NANOCONV_H */
