/* Bench kit: what a fatal signal must undo (cleanup.h). */
#include "common/cleanup.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const int fatal_signals[] = { SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM };
#define N_FATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))

static char files[TK_CLEANUP_FILES][PATH_MAX];
static volatile sig_atomic_t file_used[TK_CLEANUP_FILES];
static volatile sig_atomic_t children[TK_CLEANUP_CHILDREN]; /* pid, 0 when free */
/* shm_open names: "/" and at most NAME_MAX bytes. */
static char shms[TK_CLEANUP_SHM][NAME_MAX + 2];
static volatile sig_atomic_t shm_used[TK_CLEANUP_SHM];
static char dirs[TK_CLEANUP_DIRS][PATH_MAX];
static volatile sig_atomic_t dir_used[TK_CLEANUP_DIRS];
static volatile sig_atomic_t dir_scratch[TK_CLEANUP_DIRS]; /* empty it first */
static volatile sig_atomic_t owner;                        /* pid that registered */
static bool installed;

/* Only async-signal-safe calls from here to the raise. */
static void on_fatal(int sig)
{
    if (getpid() == (pid_t)owner) {
        for (size_t i = 0; i < TK_CLEANUP_CHILDREN; i++) {
            pid_t pid = (pid_t)children[i];
            if (pid <= 0)
                continue;
            (void)kill(-pid, SIGKILL);
            /* Every child of ours in the group, the leader and the others
             * (a group of workers, pressure.h), until none is left. */
            for (;;) {
                if (waitpid(-pid, NULL, 0) > 0)
                    continue;
                if (errno != EINTR)
                    break;
            }
            children[i] = 0;
        }
        for (size_t i = 0; i < TK_CLEANUP_FILES; i++)
            if (file_used[i]) {
                (void)unlink(files[i]);
                file_used[i] = 0;
            }
        for (size_t i = 0; i < TK_CLEANUP_SHM; i++)
            if (shm_used[i]) {
                (void)shm_unlink(shms[i]);
                shm_used[i] = 0;
            }
        for (size_t i = 0; i < TK_CLEANUP_DIRS; i++)
            if (dir_used[i]) {
                if (dir_scratch[i])
                    (void)tk_cleanup_remove_scratch_dir(dirs[i]);
                else
                    (void)rmdir(dirs[i]);
                dir_used[i] = 0;
            }
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    (void)sigaction(sig, &dfl, NULL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    (void)sigprocmask(SIG_UNBLOCK, &s, NULL);
    (void)raise(sig);
}

void tk_cleanup_install(void)
{
    if (installed)
        return;
    installed = true;
    owner = (sig_atomic_t)getpid();
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_fatal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_FATAL; i++)
        sigaddset(&sa.sa_mask, fatal_signals[i]); /* one cleanup at a time */
    for (size_t i = 0; i < N_FATAL; i++) {
        struct sigaction old;
        if (sigaction(fatal_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        (void)sigaction(fatal_signals[i], &sa, NULL);
    }
}

void tk_cleanup_block(sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    for (size_t i = 0; i < N_FATAL; i++)
        sigaddset(&s, fatal_signals[i]);
    (void)sigprocmask(SIG_BLOCK, &s, old);
}

void tk_cleanup_restore(const sigset_t *old)
{
    (void)sigprocmask(SIG_SETMASK, old, NULL);
}

int tk_cleanup_add_file(const char *path)
{
    size_t len = strlen(path);
    if (len >= PATH_MAX)
        return -1;
    for (int i = 0; i < TK_CLEANUP_FILES; i++)
        if (!file_used[i]) {
            memcpy(files[i], path, len + 1);
            atomic_signal_fence(memory_order_seq_cst);
            file_used[i] = 1;
            return i;
        }
    return -1;
}

void tk_cleanup_forget_file(int slot)
{
    if (slot >= 0 && slot < TK_CLEANUP_FILES)
        file_used[slot] = 0;
}

int tk_cleanup_add_child(pid_t pid)
{
    for (int i = 0; i < TK_CLEANUP_CHILDREN; i++)
        if (children[i] == 0) {
            children[i] = (sig_atomic_t)pid;
            return i;
        }
    return -1;
}

void tk_cleanup_forget_child(int slot)
{
    if (slot >= 0 && slot < TK_CLEANUP_CHILDREN)
        children[slot] = 0;
}

int tk_cleanup_add_shm(const char *shm_name)
{
    size_t len = strlen(shm_name);
    if (len >= sizeof(shms[0]))
        return -1;
    for (int i = 0; i < TK_CLEANUP_SHM; i++)
        if (!shm_used[i]) {
            memcpy(shms[i], shm_name, len + 1);
            atomic_signal_fence(memory_order_seq_cst);
            shm_used[i] = 1;
            return i;
        }
    return -1;
}

void tk_cleanup_forget_shm(int slot)
{
    if (slot >= 0 && slot < TK_CLEANUP_SHM)
        shm_used[slot] = 0;
}

static int add_dir(const char *path, bool scratch)
{
    size_t len = strlen(path);
    if (len >= PATH_MAX)
        return -1;
    for (int i = 0; i < TK_CLEANUP_DIRS; i++)
        if (!dir_used[i]) {
            memcpy(dirs[i], path, len + 1);
            dir_scratch[i] = scratch;
            atomic_signal_fence(memory_order_seq_cst);
            dir_used[i] = 1;
            return i;
        }
    return -1;
}

int tk_cleanup_add_dir(const char *path)
{
    return add_dir(path, false);
}

int tk_cleanup_add_scratch_dir(const char *path)
{
    return add_dir(path, true);
}

/* The kernel's directory entry as getdents64 writes it (readdir is not
 * async-signal-safe: it may allocate). */
struct dirent64_raw {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

/* Unlinks what one pass over the directory open at fd lists. */
static void unlink_entries(int fd)
{
    /* Aligned for the entries' 64-bit members. */
    _Alignas(8) char buf[4096];
    if (lseek(fd, 0, SEEK_SET) != 0)
        return;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
        if (n <= 0)
            return;
        for (long at = 0; at < n;) {
            const struct dirent64_raw *e = (const void *)(buf + at);
            if (e->reclen == 0)
                return;
            if (strcmp(e->name, ".") != 0 && strcmp(e->name, "..") != 0)
                (void)unlinkat(fd, e->name, 0);
            at += e->reclen;
        }
    }
}

int tk_cleanup_remove_scratch_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    /* Unlinking while listing may hide an entry from the pass: list again
     * while the directory is not yet empty (a few passes, bounded). */
    int r = -1;
    for (int pass = 0; pass < 4; pass++) {
        unlink_entries(fd);
        r = rmdir(path);
        if (r == 0 || (errno != ENOTEMPTY && errno != EEXIST))
            break;
    }
    int saved = errno;
    (void)close(fd);
    errno = saved;
    return r;
}

void tk_cleanup_forget_dir(int slot)
{
    if (slot >= 0 && slot < TK_CLEANUP_DIRS)
        dir_used[slot] = 0;
}
