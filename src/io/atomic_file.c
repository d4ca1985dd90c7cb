/* Files written whole or not at all (atomic_file.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "io/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Writes the parts to fd, which write_parts closes; the first step that failed, NULL if none (errno its reason). */
static const char *write_parts(int fd, const void *const *data, const size_t *size, int n, int sync) {
    const char *step = NULL;
    int why = 0;
    for (int i = 0; i < n && !step; i++)
        for (size_t done = 0; done < size[i] && !step;) {
            const ssize_t k = write(fd, (const char *)data[i] + done, size[i] - done);
            if (k > 0)
                done += (size_t)k;
            else if (k < 0 && errno == EINTR)
                continue;
            else {
                step = "write";
                why = k < 0 ? errno : EIO;
            }
        }
    if (!step && sync && fsync(fd) != 0) {
        step = "fsync";
        why = errno;
    }
    if (close(fd) != 0 && !step) {
        step = "close";
        why = errno;
    }
    errno = why;
    return step;
}

/* The temporary files being written, for the handler that nc_atomic_file_cleanup_on_signals installs: a slot is
 * free (0), being filled (1) or names a file that exists (2), created by process pending_pid (a child made by fork
 * inherits the table and the handler, and leaves its parent's files alone). The names live in static storage, so
 * that the handler, which may run on any thread at any moment, never reads memory that a writer frees. More writers
 * at once than slots go unnamed (an interrupt then leaves their temporary files), as does a name longer than
 * PATH_MAX. */
enum { PENDING_SLOTS = 8 };
static atomic_int pending_state[PENDING_SLOTS];
static pid_t pending_pid[PENDING_SLOTS];
static char pending_name[PENDING_SLOTS][PATH_MAX];

/* The signals the handler takes, blocked in the writing thread from mkstemp until the file is named in its slot, and
 * from the rename until the slot is free: an interrupt then never finds a file unnamed, nor a name whose file is
 * gone (which by then could be someone else's). One that comes meanwhile is delivered as they are unblocked; where
 * another thread takes it first (a process-wide signal goes to any thread that does not block it), the file being
 * created can be left behind. */
static void block_signals(sigset_t *old) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

/* mkstemp on tmp (its template) with the file named in a free slot as it is created, the signals blocked meanwhile
 * and as they were on return (the writer blocks them again from its rename to pending_drop). The slot's number in
 * *slot (-1: none free, or mkstemp failed). */
static int pending_mkstemp(char *tmp, int *slot, sigset_t *old) {
    *slot = -1;
    block_signals(old);
    const int fd = mkstemp(tmp);
    if (fd >= 0 && strlen(tmp) < PATH_MAX)
        for (int i = 0; i < PENDING_SLOTS && *slot < 0; i++) {
            int expect = 0;
            if (atomic_compare_exchange_strong(&pending_state[i], &expect, 1)) {
                strcpy(pending_name[i], tmp);
                pending_pid[i] = getpid();
                atomic_store(&pending_state[i], 2);
                *slot = i;
            }
        }
    pthread_sigmask(SIG_SETMASK, old, NULL);
    return fd;
}

/* The file is renamed or removed: its slot free, and the signals as they were. Called with them blocked. */
static void pending_drop(int slot, const sigset_t *old) {
    if (slot >= 0) atomic_store(&pending_state[slot], 0);
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Removes this process's temporary files being written, then takes the signal's default action (the process ends as
 * it would have, its exit status saying which signal). unlink, getpid, signal and raise are async-signal-safe, and
 * so are the atomics, being lock-free (nc_atomic_file_cleanup_on_signals checks). */
static void on_signal(int sig) {
    const pid_t self = getpid();
    for (int i = 0; i < PENDING_SLOTS; i++)
        if (atomic_load(&pending_state[i]) == 2 && pending_pid[i] == self) unlink(pending_name[i]);
    signal(sig, SIG_DFL);
    raise(sig); /* blocked until the handler returns */
}

int nc_atomic_file_cleanup_on_signals(void) {
    if (!atomic_is_lock_free(&pending_state[0])) return -1;
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask);
    int n = 0;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL) continue; /* ignored (nohup), or taken */
        if (sigaction(sigs[i], &sa, NULL) == 0) n++;
    }
    return n;
}

/* Where a write to path goes. */
typedef struct {
    int fd; /* 1 or 2: path is the process's own stdout or stderr (/dev/stdout, or the file the shell opened for it):
               written through that descriptor, after what stdio holds for it; else -1 */
    int stream; /* a character device or a FIFO (/dev/null, a pipe), which no file can replace: written into */
    char *dest; /* a symbolic link's target (realpath), replaced where it is; NULL where path is the file */
} out_target;

static int out_classify(const char *path, out_target *t, nc_error *err) {
    memset(t, 0, sizeof *t);
    t->fd = -1;
    if (!path || !path[0]) return nc_fail(err, NC_ERR_ARG, "no file name to write to (an empty path)");
    struct stat st, lst;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT) return nc_fail(err, NC_ERR_IO, "%s: %s", path, strerror(errno));
        if (lstat(path, &lst) == 0)
            return nc_fail(err, NC_ERR_IO, "%s: is a symbolic link to a file that does not exist; not replaced", path);
        return NC_OK; /* a new file */
    }
    for (int fd = 1; fd <= 2; fd++) {
        struct stat fs;
        if (fstat(fd, &fs) == 0 && fs.st_dev == st.st_dev && fs.st_ino == st.st_ino) {
            t->fd = fd;
            return NC_OK;
        }
    }
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
        t->stream = 1;
        return NC_OK;
    }
    if (S_ISDIR(st.st_mode)) return nc_fail(err, NC_ERR_IO, "%s: is a directory, not a file name", path);
    if (!S_ISREG(st.st_mode))
        return nc_fail(err, NC_ERR_IO, "%s: is not a regular file (a socket or a block device); not replaced", path);
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode) && !(t->dest = realpath(path, NULL)))
        return nc_fail(err, NC_ERR_IO, "%s: cannot resolve the symbolic link: %s", path, strerror(errno));
    return NC_OK;
}

int nc_check_output_path(const char *path, nc_error *err) {
    out_target t;
    int rc = out_classify(path, &t, err);
    if (rc || t.fd >= 0 || t.stream) return rc;
    /* A file, new or replaced: its folder (that of the file a symbolic link points to) must take a new file. */
    const char *p = t.dest ? t.dest : path, *slash = strrchr(p, '/');
    char *dir = slash ? strndup(p, slash == p ? 1 : (size_t)(slash - p)) : strdup(".");
    if (!dir)
        rc = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", path);
    else if (access(dir, W_OK | X_OK) != 0)
        rc = nc_fail(err, NC_ERR_IO, "%s: cannot write to folder '%s': %s", path, dir, strerror(errno));
    free(dir);
    free(t.dest);
    return rc;
}

int nc_write_file_atomic(const char *path, const void *const *data, const size_t *size, int n, nc_error *err) {
    out_target t;
    int rc = out_classify(path, &t, err);
    if (rc) return rc;
    if (t.fd >= 0 || t.stream) {
        int fd = -1;
        if (t.fd >= 0) {
            fflush(t.fd == 1 ? stdout : stderr);
            fd = dup(t.fd);
        } else {
            fd = open(path, O_WRONLY);
        }
        if (fd < 0) return nc_fail(err, NC_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
        const char *step = write_parts(fd, data, size, n, 0);
        return step ? nc_fail(err, NC_ERR_IO, "%s: cannot write: %s: %s", path, step, strerror(errno)) : NC_OK;
    }
    const char *target = t.dest ? t.dest : path;

    const size_t plen = strlen(target);
    char *tmp = malloc(plen + sizeof ".tmp.XXXXXX");
    if (!tmp) {
        free(t.dest);
        return nc_fail(err, NC_ERR_NOMEM, "%s: cannot allocate the temporary file name", path);
    }
    memcpy(tmp, target, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    rc = NC_OK;
    int slot;
    sigset_t old;
    const int fd = pending_mkstemp(tmp, &slot, &old);
    if (fd < 0) {
        rc = nc_fail(err, NC_ERR_IO, "%s: cannot create a temporary file %s: %s", path, tmp, strerror(errno));
    } else {
        const char *step = fchmod(fd, 0644) != 0 ? "chmod" : NULL;
        if (step) {
            const int why = errno;
            close(fd);
            errno = why;
        } else {
            step = write_parts(fd, data, size, n, 1);
        }
        if (step) rc = nc_fail(err, NC_ERR_IO, "%s: cannot write %s: %s: %s", path, tmp, step, strerror(errno));
        block_signals(&old);
        if (!rc && rename(tmp, target) != 0)
            rc = nc_fail(err, NC_ERR_IO, "%s: cannot rename %s onto %s: %s", path, tmp, t.dest ? t.dest : "it",
                         strerror(errno));
        if (rc) unlink(tmp);
        pending_drop(slot, &old);
    }
    free(tmp);
    free(t.dest);
    return rc;
}
