/*
 * Files written whole or not at all: the data goes to a temporary file beside the destination, is flushed to disk,
 * and is then renamed over it, so that a reader never sees half a file and a failure leaves what was there before
 * (and no temporary file) behind. Where the destination is a symbolic link, the file it points to is replaced and the
 * link stays. What no file can replace is written into as it is: the process's own stdout or stderr (/dev/stdout, or
 * the file the shell opened for it: through the descriptor, after what stdio holds for it), a character device or a
 * FIFO (/dev/null, a pipe). A directory, a socket, a block device or a link to nothing is refused. Model files,
 * --logits and bench --json outputs and the convolution kernel cache use it.
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
 * and the step that failed, or what path is where it cannot be replaced; NC_ERR_ARG for an empty path; NC_ERR_NOMEM
 * where the temporary name cannot be made. */
int nc_write_file_atomic(const char *path, const void *const *data, const size_t *size, int n, nc_error *err);

/* Whether nc_write_file_atomic could write to path, as far as can be told before the data exists: not empty, not a
 * directory, socket, block device or link to nothing, and where it is a file (new, or replaced), its folder one this
 * process may create files in. For the commands to check their outputs before minutes of work. NC_ERR_IO naming path
 * and what is wrong; NC_ERR_ARG for an empty path. */
int nc_check_output_path(const char *path, nc_error *err);

/* Makes SIGINT, SIGTERM and SIGHUP remove the temporary files that nc_write_file_atomic is writing when they come, and
 * then end the process as they would have. Signals already ignored (nohup) or already handled are left as they are.
 * For programs, not the library: the CLI calls it first thing. A child made by fork keeps the handler, and removes
 * only the files it writes itself (the slots of its parent's writes under way stay taken there). At most 8 files at
 * once are covered (more writers at once leave theirs), and a signal that a thread other than the writer's takes while
 * the file is being created can leave it. Returns how many of the three it took, or -1 where the platform's atomics are
 * not lock-free (the handler could not read them safely; nothing installed). */
int nc_atomic_file_cleanup_on_signals(void);

#ifdef __cplusplus
}
#endif
#endif
