/* Bench kit: result files that a failed or interrupted run never damages
 * (result.h). */
#include "common/result.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/child.h"
#include "common/cleanup.h"

/* Longest part of the target's name kept in the temporary file's name, so
 * that ".<name>.XXXXXX" stays within NAME_MAX. */
#define TMP_NAME_KEEP 200

static int cannot_write(const char *prog, const char *path, const char *why)
{
    fprintf(stderr, "%s: cannot write '%s': %s\n", prog, path, why);
    return -1;
}

/* Writes everything or records the first error: stdio would keep only a
 * flag, and the report must say why the write failed. */
static ssize_t result_write(void *cookie, const char *buf, size_t n)
{
    struct tk_result *r = cookie;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(r->fd, buf + done, n - done);
        if (w > 0) {
            done += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (r->err == 0)
            r->err = w < 0 ? errno : EIO;
        return 0; /* fopencookie's convention for an error */
    }
    return (ssize_t)n;
}

static int open_stream(struct tk_result *r)
{
    static const cookie_io_functions_t io = { .write = result_write };
    r->f = fopencookie(r, "w", io);
    return r->f ? 0 : -errno;
}

/* Is st the file descriptor fd refers to? */
static bool same_file(const struct stat *st, int fd)
{
    struct stat fs;
    return fstat(fd, &fs) == 0 && fs.st_dev == st->st_dev && fs.st_ino == st->st_ino;
}

/* Removes the temporary file, if there is one: the only file a result ever
 * removes. */
static void remove_temp(struct tk_result *r)
{
    if (!r->tmp[0])
        return;
    sigset_t old;
    tk_cleanup_block(&old);
    (void)unlink(r->tmp);
    tk_cleanup_forget_file(r->cleanup_slot);
    r->cleanup_slot = -1;
    r->tmp[0] = '\0';
    tk_cleanup_restore(&old);
}

/* The new file's permissions: those of the file it replaces (and, for
 * root, its owner), else what creating it would have given. Best effort:
 * a refusal leaves the temporary file's own. */
static void set_mode(int fd, const struct stat *old)
{
    if (old) {
        if (geteuid() == 0)
            (void)fchown(fd, old->st_uid, old->st_gid);
        (void)fchmod(fd, old->st_mode & 07777);
        return;
    }
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
}

/* A temporary file beside r->target, registered for removal on a fatal
 * signal. 0 or -errno. */
static int open_temp(struct tk_result *r, const struct stat *old)
{
    const char *slash = strrchr(r->target, '/');
    const char *base = slash ? slash + 1 : r->target;
    int dir_len = slash ? (int)(slash - r->target + 1) : 0;
    int n = snprintf(r->tmp, sizeof(r->tmp), "%.*s.%.*s.XXXXXX", dir_len, r->target, TMP_NAME_KEEP,
                     base);
    if (n < 0 || (size_t)n >= sizeof(r->tmp)) {
        r->tmp[0] = '\0';
        return -ENAMETOOLONG;
    }
    sigset_t mask;
    tk_cleanup_block(&mask);
    int fd = mkostemp(r->tmp, O_CLOEXEC);
    int err = errno;
    if (fd >= 0)
        r->cleanup_slot = tk_cleanup_add_file(r->tmp);
    tk_cleanup_restore(&mask);
    if (fd < 0) {
        r->tmp[0] = '\0';
        return -err;
    }
    set_mode(fd, old);
    r->fd = fd;
    return 0;
}

/* The kernel's rule for symbolic links in shared directories
 * (fs.protected_symlinks), kept whatever the machine's setting: a link in
 * a sticky, world-writable directory (/tmp) is followed only when it
 * belongs to this user or to the directory's owner. Else another user
 * planted it, and following it would make this run (often root's) replace
 * a file that user chose. Looks at every component of path as written.
 * 0, or -1 with why set. */
static int planted_link(const char *path, char *why, size_t why_size)
{
    char prefix[PATH_MAX];
    size_t len = strlen(path);
    if (len >= sizeof(prefix))
        return 0; /* too long for any call below: they fail with their own cause */
    uid_t me = geteuid();
    for (size_t end = 1; end <= len; end++) {
        if (end < len && path[end] != '/')
            continue;
        memcpy(prefix, path, end);
        prefix[end] = '\0';
        struct stat link, dir;
        if (lstat(prefix, &link) != 0 || !S_ISLNK(link.st_mode))
            continue;
        /* its directory: what precedes its last component */
        char parent[PATH_MAX];
        const char *slash = strrchr(prefix, '/');
        if (!slash)
            snprintf(parent, sizeof(parent), ".");
        else if (slash == prefix)
            snprintf(parent, sizeof(parent), "/");
        else
            snprintf(parent, sizeof(parent), "%.*s", (int)(slash - prefix), prefix);
        if (stat(parent, &dir) != 0 || !(dir.st_mode & S_ISVTX) || !(dir.st_mode & S_IWOTH))
            continue;
        if (link.st_uid == me || link.st_uid == dir.st_uid)
            continue;
        snprintf(why, why_size,
                 "'%s' is a symbolic link in the shared directory '%s' (sticky, writable by "
                 "everyone) that user %u made, neither you nor the directory's owner: not "
                 "followed (another user may have planted it to make this run replace a file "
                 "of its choosing); write elsewhere",
                 prefix, parent, (unsigned)link.st_uid);
        return -1;
    }
    return 0;
}

/* Opens a non-regular file for writing as it is. A FIFO with no reader
 * yet would block the open without a word: the wait is said first (the
 * run starts once something reads it; Ctrl-C ends it). -1 with errno. */
static int open_direct(const char *prog, const char *path, const struct stat *st)
{
    int flags = O_WRONLY | O_NOCTTY | O_CLOEXEC;
    if (!S_ISFIFO(st->st_mode))
        return open(path, flags);
    int fd = open(path, flags | O_NONBLOCK);
    if (fd < 0 && errno == ENXIO) {
        fprintf(stderr,
                "%s: '%s' is a FIFO with no reader yet: waiting for one to open it "
                "(Ctrl-C to give up)\n",
                prog, path);
        fd = open(path, flags);
    }
    if (fd >= 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

int tk_result_open(struct tk_result *r, const char *prog, const char *path)
{
    memset(r, 0, sizeof(*r));
    r->path = path;
    r->fd = -1;
    r->cleanup_slot = -1;
    tk_cleanup_install();

    char planted[PATH_MAX * 2 + 256];
    if (planted_link(path, planted, sizeof(planted)) != 0)
        return cannot_write(prog, path, planted);
    struct stat st;
    bool exists = stat(path, &st) == 0; /* follows symbolic links */
    if (!exists && errno != ENOENT)
        return cannot_write(prog, path, strerror(errno));
    if (!exists && lstat(path, &st) == 0)
        return cannot_write(prog, path, "a symbolic link to a file that does not exist");

    if (exists && (same_file(&st, STDOUT_FILENO) || same_file(&st, STDERR_FILENO))) {
        r->how = TK_RESULT_STREAM;
        r->f = same_file(&st, STDOUT_FILENO) ? stdout : stderr;
        return 0;
    }
    if (exists && S_ISDIR(st.st_mode))
        return cannot_write(prog, path, strerror(EISDIR));
    if (exists && !S_ISREG(st.st_mode)) {
        /* A FIFO, a device, a terminal: written as it is, never created,
         * truncated or removed. */
        r->how = TK_RESULT_DIRECT;
        r->fd = open_direct(prog, path, &st);
        if (r->fd < 0)
            return cannot_write(prog, path, strerror(errno));
    } else {
        r->how = TK_RESULT_TEMP;
        if (exists ? !realpath(path, r->target)
                   : snprintf(r->target, sizeof(r->target), "%s", path) >= (int)sizeof(r->target))
            return cannot_write(prog, path, strerror(exists ? errno : ENAMETOOLONG));
        int rc = open_temp(r, exists ? &st : NULL);
        if (rc != 0) {
            char why[PATH_MAX + 96];
            snprintf(why, sizeof(why), "cannot create a temporary file beside it: %s",
                     strerror(-rc));
            return cannot_write(prog, path, why);
        }
    }
    int rc = open_stream(r);
    if (rc != 0) {
        close(r->fd);
        r->fd = -1;
        remove_temp(r);
        return cannot_write(prog, path, strerror(-rc));
    }
    return 0;
}

/* Renames the temporary file over the target, unless the target has become
 * something other than a regular file meanwhile. 0, -errno, or 1 for that
 * change. */
static int move_into_place(struct tk_result *r)
{
    sigset_t mask;
    struct stat st;
    int rc = 0;
    tk_cleanup_block(&mask);
    if (lstat(r->target, &st) == 0 && !S_ISREG(st.st_mode))
        rc = 1;
    else if (rename(r->tmp, r->target) != 0)
        rc = -errno;
    if (rc == 0) {
        tk_cleanup_forget_file(r->cleanup_slot);
        r->cleanup_slot = -1;
        r->tmp[0] = '\0';
    }
    tk_cleanup_restore(&mask);
    return rc;
}

/* The rename is durable once the directory is synced; best effort. */
static void sync_directory(const char *target)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(target, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else
        snprintf(dir, sizeof(dir), "%.*s", slash == target ? 1 : (int)(slash - target), target);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int tk_result_commit(struct tk_result *r, const char *prog)
{
    if (!r->f)
        return -1;
    int err = 0;
    if (r->how == TK_RESULT_STREAM) {
        errno = 0;
        if (fflush(r->f) != 0 || ferror(r->f))
            err = errno ? errno : EIO;
        r->f = NULL;
    } else {
        if (fflush(r->f) != 0 || ferror(r->f))
            err = r->err ? r->err : EIO;
        if (err == 0 && r->how == TK_RESULT_TEMP && fsync(r->fd) != 0)
            err = errno;
        fclose(r->f);
        r->f = NULL;
        if (close(r->fd) != 0 && err == 0)
            err = errno;
        r->fd = -1;
    }
    const char *why = err ? strerror(err) : NULL;
    if (err == 0 && r->how == TK_RESULT_TEMP) {
        int rc = move_into_place(r);
        if (rc == 1)
            why = "it is no longer a regular file; left as it is";
        else if (rc < 0)
            why = strerror(-rc);
        else
            sync_directory(r->target);
    }
    if (!why)
        return 0;
    remove_temp(r);
    fprintf(stderr, "%s: writing '%s' failed: %s\n", prog, r->path, why);
    return -1;
}

void tk_result_abandon(struct tk_result *r)
{
    if (r->f && r->how != TK_RESULT_STREAM) {
        __fpurge(r->f); /* no partial result into a FIFO or device */
        fclose(r->f);
    }
    r->f = NULL;
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    remove_temp(r);
}

int tk_stdout_check(const char *prog)
{
    /* Said once: the checks that follow a failure would only repeat it. */
    static bool reported;
    FILE *out = tk_child_stdout(); /* stdout, or where it went (child.h) */
    errno = 0;
    bool failed = fflush(out) != 0;
    int err = errno;
    if (!failed && !ferror(out))
        return 0;
    if (reported)
        return -1;
    reported = true;
    if (failed && err)
        fprintf(stderr, "%s: writing to standard output failed: %s\n", prog, strerror(err));
    else
        fprintf(stderr, "%s: writing to standard output failed\n", prog);
    return -1;
}
