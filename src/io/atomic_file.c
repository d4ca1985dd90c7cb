/* Files written whole or not at all (atomic_file.h). */
#define _POSIX_C_SOURCE 200809L
#include "io/atomic_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int nc_write_file_atomic(const char *path, const void *const *data, const size_t *size, int n, nc_error *err) {
    const size_t plen = strlen(path);
    char *tmp = malloc(plen + sizeof ".tmp.XXXXXX");
    if (!tmp) return nc_fail(err, NC_ERR_NOMEM, "%s: cannot allocate the temporary file name", path);
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    const int fd = mkstemp(tmp);
    if (fd < 0) {
        const int rc = nc_fail(err, NC_ERR_IO, "%s: cannot create a temporary file %s: %s", path, tmp, strerror(errno));
        free(tmp);
        return rc;
    }
    const char *step = NULL; /* the first step that failed, and its errno */
    int why = 0;
    FILE *f = NULL;
    if (fchmod(fd, 0644) != 0)
        step = "chmod";
    else if (!(f = fdopen(fd, "wb")))
        step = "fdopen";
    for (int i = 0; i < n && !step; i++)
        if (size[i] && fwrite(data[i], 1, size[i], f) != size[i]) step = "write";
    if (!step && fflush(f) != 0) step = "flush";
    if (!step && fsync(fileno(f)) != 0) step = "fsync";
    if (step) why = errno;
    if (!f)
        close(fd);
    else if (fclose(f) != 0 && !step)
        step = "close", why = errno;
    int rc = NC_OK;
    if (step)
        rc = nc_fail(err, NC_ERR_IO, "%s: cannot write %s: %s: %s", path, tmp, step, strerror(why));
    else if (rename(tmp, path) != 0)
        rc = nc_fail(err, NC_ERR_IO, "%s: cannot rename %s onto it: %s", path, tmp, strerror(errno));
    if (rc) unlink(tmp);
    free(tmp);
    return rc;
}
