/* Files written whole or not at all (src/io/atomic_file.c).
 *
 * In a fresh directory under /tmp: a new file and a replaced one hold exactly the parts written, mode 0644, and no
 * temporary file is left beside them; a symbolic link's target is replaced and the link stays; a directory, a link
 * to nothing and an empty name are refused with what was there left as it was; a write that fails (/dev/full) says
 * which step failed.
 *
 * Interrupts: a child process installs nc_atomic_file_cleanup_on_signals and writes 16 MiB files over and over;
 * the parent sends it SIGINT, SIGTERM or SIGHUP while it writes, and checks that the child ended by that signal and
 * left no temporary file. Without the handler the signal nearly always lands in a write or an fsync, leaving one. A
 * signal the child ignored before installing stays ignored. A process made by fork inherits the handler: signalled,
 * it must leave the files its parent is writing alone. */
#define _POSIX_C_SOURCE 200809L
#include "io/atomic_file.h"
#include "nc_test.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmp_dir[] = "/tmp/nc_test_atomic.XXXXXX";

static const char *in_dir(char *buf, const char *name) {
    snprintf(buf, PATH_MAX, "%s/%s", tmp_dir, name);
    return buf;
}

/* How many names in tmp_dir contain ".tmp.". */
static int count_temporaries(void) {
    DIR *d = opendir(tmp_dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

/* Whether path holds exactly want (len bytes). */
static int holds(const char *path, const char *want, size_t len) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char buf[256];
    const size_t got = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return got == len && memcmp(buf, want, len) == 0;
}

static int write_text(const char *path, const char *a, const char *b, nc_error *err) {
    const void *data[2] = {a, b};
    const size_t size[2] = {strlen(a), strlen(b)};
    return nc_write_file_atomic(path, data, size, 2, err);
}

static void test_writes(void) {
    char p[PATH_MAX], link[PATH_MAX], dangling[PATH_MAX];
    nc_error err = {0};

    CHECK(write_text(in_dir(p, "new.txt"), "hello ", "world", &err) == NC_OK);
    CHECK(holds(p, "hello world", 11));
    struct stat st;
    CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0644);
    CHECK(write_text(p, "", "again", &err) == NC_OK); /* replaced */
    CHECK(holds(p, "again", 5));
    CHECK(nc_check_output_path(p, &err) == NC_OK);

    /* A symbolic link: the file it points to is replaced, the link stays a link. */
    symlink(p, in_dir(link, "link.txt"));
    CHECK(write_text(link, "through ", "the link", &err) == NC_OK);
    CHECK(holds(p, "through the link", 16));
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));

    /* Refused, and what was there stays. */
    CHECK(write_text(tmp_dir, "x", "", &err) == NC_ERR_IO);
    CHECK_MSG(err, "is a directory");
    CHECK(nc_check_output_path(tmp_dir, &err) == NC_ERR_IO);
    symlink(in_dir(p, "nothing-there"), in_dir(dangling, "dangling"));
    CHECK(write_text(dangling, "x", "", &err) == NC_ERR_IO);
    CHECK_MSG(err, "does not exist");
    CHECK(lstat(dangling, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(write_text("", "x", "", &err) == NC_ERR_ARG);
    CHECK(nc_check_output_path("", &err) == NC_ERR_ARG);
    CHECK(write_text(in_dir(p, "no-such-folder/f.txt"), "x", "", &err) == NC_ERR_IO);
    CHECK_MSG(err, "no-such-folder");
    CHECK(nc_check_output_path(p, &err) == NC_ERR_IO);

    /* A character device that takes nothing: written into, and the failure names the step. */
    struct stat full;
    if (stat("/dev/full", &full) == 0 && S_ISCHR(full.st_mode)) {
        CHECK(write_text("/dev/full", "x", "", &err) == NC_ERR_IO);
        CHECK_MSG(err, "/dev/full: cannot write: write");
        CHECK(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode)); /* not replaced by a file */
    }
    CHECK(count_temporaries() == 0);
}

/* The child of interrupt(): installs the handler (after setting the three signals to their default, or sig to
 * ignored), says so through fd, then writes until the signal ends it. Exit 3: the handler did not take the signals. */
static void writer_child(int fd, int ignore, int sig) {
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) signal(sigs[i], ignore && sigs[i] == sig ? SIG_IGN : SIG_DFL);
    if (nc_atomic_file_cleanup_on_signals() != (ignore ? 2 : 3)) _exit(3);
    const size_t n = (size_t)16 << 20;
    char *big = calloc(n, 1);
    if (!big) _exit(4);
    char p[PATH_MAX];
    in_dir(p, "interrupted.bin");
    const void *data[1] = {big};
    const size_t size[1] = {n};
    nc_error err = {0};
    (void)!write(fd, "w", 1);
    for (int i = 0; i < (ignore ? 4 : 100000); i++)
        if (nc_write_file_atomic(p, data, size, 1, &err) != NC_OK) _exit(5);
    free(big);
    _exit(0);
}

/* Sends sig to a child writing files (ignored there first, where ignore is set) and returns its wait status. */
static int interrupt(int sig, int ignore) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        close(fds[0]);
        writer_child(fds[1], ignore, sig);
    }
    close(fds[1]);
    char c;
    const ssize_t got = read(fds[0], &c, 1);
    close(fds[0]);
    const struct timespec wait = {0, 30 * 1000 * 1000}; /* into the writes */
    nanosleep(&wait, NULL);
    if (got == 1) kill(pid, sig);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
}

static void test_interrupts(void) {
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) {
        const int status = interrupt(sigs[i], 0);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == sigs[i]);
        if (!WIFSIGNALED(status)) fprintf(stderr, "signal %d: the child exited %d\n", sigs[i], WEXITSTATUS(status));
        CHECK(count_temporaries() == 0);
    }
    /* Ignored before: the child writes its four files and exits 0. */
    const int status = interrupt(SIGTERM, 1);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(count_temporaries() == 0);
}

/* A thread writing 16 MiB files over and over until told to stop; counts the writes that failed. */
static atomic_int stop_writing, write_failures;

static void *writer_thread(void *arg) {
    (void)arg;
    const size_t n = (size_t)16 << 20;
    char *big = calloc(n, 1), p[PATH_MAX];
    const void *data[1] = {big};
    const size_t size[1] = {n};
    in_dir(p, "forked.bin");
    while (big && !atomic_load(&stop_writing)) {
        nc_error err = {0};
        if (nc_write_file_atomic(p, data, size, 1, &err) != NC_OK) {
            atomic_fetch_add(&write_failures, 1);
            fprintf(stderr, "the parent's write: %s\n", err.msg);
        }
    }
    free(big);
    return NULL;
}

/* In a child: the handler installed, a thread writing, and a grandchild forked (no exec) while it writes, then sent
 * SIGTERM. Exit 0 where the grandchild died of it and every write of the thread succeeded; without the handler's
 * check of its process, the grandchild removed the temporary file being written, whose rename then failed. */
static void fork_child(void) {
    signal(SIGTERM, SIG_DFL);
    if (nc_atomic_file_cleanup_on_signals() < 1) _exit(3);
    pthread_t th;
    if (pthread_create(&th, NULL, writer_thread, NULL) != 0) _exit(4);
    int bad = 0;
    for (int i = 0; i < 5; i++) {
        const struct timespec wait = {0, 20 * 1000 * 1000};
        nanosleep(&wait, NULL);
        const pid_t g = fork();
        if (g == 0) {
            for (;;) pause();
        }
        int status = 0;
        if (g < 0 || kill(g, SIGTERM) != 0 || waitpid(g, &status, 0) != g || !WIFSIGNALED(status) ||
            WTERMSIG(status) != SIGTERM)
            bad = 1;
    }
    atomic_store(&stop_writing, 1);
    pthread_join(th, NULL);
    _exit(bad ? 5 : atomic_load(&write_failures) ? 6 : 0);
}

static void test_fork(void) {
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) fork_child();
    int status = -1;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    CHECK(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status)) fprintf(stderr, "fork case: wait status %#x\n", status);
    CHECK(count_temporaries() == 0);
}

int main(void) {
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_writes();
    test_interrupts();
    test_fork();
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_dir);
    return nc_test_done("test_atomic_file");
}
