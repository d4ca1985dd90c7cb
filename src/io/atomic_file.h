/*
 * Files written whole or not at all: the data goes to a temporary file beside the destination, is flushed to disk,
 * and is then renamed over it, so that a reader never sees half a file and a failure leaves what was there before
 * (and no temporary file) behind. Model files, --logits outputs and the convolution kernel cache use it.
 */
#ifndef NC_ATOMIC_FILE_H
#define NC_ATOMIC_FILE_H

#include <stddef.h>

#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the n parts data[i] (size[i] bytes each) one after another to path, mode 0644 (mkstemp's own 0600 is
 * widened: the files are meant to be shared like any other data file). NC_ERR_IO naming path, the temporary file
 * and the step that failed; NC_ERR_NOMEM where the temporary name cannot be made. */
int nc_write_file_atomic(const char *path, const void *const *data, const size_t *size, int n, nc_error *err);

#ifdef __cplusplus
}
#endif
#endif
