/* Bench kit: memory pressure and the other loads of stress (pressure.h). */
#include "common/pressure.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/child.h"
#include "common/cleanup.h"
#include "common/opt.h"
#include "common/timer.h"

#define NS_PER_S       1000000000ull
/* A disk writer writes in pieces of this size. */
#define HDD_CHUNK      ((size_t)1 << 20)
/* A vm worker looks at its deadline every this many bytes of a pass. */
#define VM_CHECK_BYTES ((uint64_t)1 << 26)

static const char *const kind_names[TK_PW_KINDS] = { "vm", "spin", "sync", "hdd" };

void tk_pressure_defaults(struct tk_pressure_spec *s)
{
    *s = (struct tk_pressure_spec)TK_PRESSURE_SPEC_DEFAULTS;
}

void tk_pressure_empty(struct tk_pressure_spec *s)
{
    tk_pressure_defaults(s);
    s->vm = 0;
}

unsigned tk_pressure_workers(const struct tk_pressure_spec *s)
{
    /* Each at most TK_PRESSURE_MAX_WORKERS (the parsers' bound): no wrap. */
    return s->vm + s->spin + s->sync + s->hdd;
}

/* "plain", "keep", "hang" or "keep+hang". */
static const char *mode_name(const struct tk_pressure_spec *s)
{
    if (s->keep)
        return s->hang_ns ? "keep+hang" : "keep";
    return s->hang_ns ? "hang" : "plain";
}

/* ---- parsing ---- */

int tk_pressure_parse_cpus(const struct tk_args *cli, const char *opt, const char *text,
                           cpu_set_t *set)
{
    cpu_set_t allowed;
    CPU_ZERO(set);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
        return tk_args_bad(cli, "%s: cannot read the CPUs this process may use: %s", opt,
                           strerror(errno));
    const char *p = text;
    do {
        char *end;
        const char *item = p;
        if (*p < '0' || *p > '9')
            return tk_args_bad(cli, "%s: '%s' is not a CPU list (e.g. 0-2,5)", opt, text);
        unsigned long lo = strtoul(p, &end, 10), hi = lo;
        if (*end == '-') {
            p = end + 1;
            if (*p < '0' || *p > '9')
                return tk_args_bad(cli, "%s: '%s' is not a CPU list (e.g. 0-2,5)", opt, text);
            hi = strtoul(p, &end, 10);
        }
        if (*end != ',' && *end != '\0')
            return tk_args_bad(cli, "%s: '%s' is not a CPU list (e.g. 0-2,5)", opt, text);
        if (hi < lo || hi >= CPU_SETSIZE)
            return tk_args_bad(cli, "%s: '%.*s' is not a range of CPUs", opt, (int)(end - item),
                               item);
        for (unsigned long c = lo; c <= hi; c++) {
            if (!CPU_ISSET(c, &allowed))
                return tk_args_bad(cli, "%s: cpu %lu is not one this process may run on", opt, c);
            CPU_SET(c, set);
        }
        p = end;
    } while (*p++ == ',');
    return 0;
}

/* "name=value" items; a bare name is a flag. */
int tk_pressure_parse(const struct tk_args *cli, const char *opt, const char *text,
                      struct tk_pressure_spec *s)
{
    if (!*text)
        return tk_args_bad(cli, "%s: empty; e.g. vm=2,bytes=128M,stride=4096", opt);
    const char *p = text;
    do {
        size_t len = strcspn(p, ",");
        char item[256];
        if (len == 0 || len >= sizeof(item))
            return tk_args_bad(cli, "%s: '%s' is not a list of name=value items", opt, text);
        memcpy(item, p, len);
        item[len] = '\0';
        char *value = strchr(item, '=');
        if (value)
            *value++ = '\0';
        char what[sizeof(item) + 64];
        snprintf(what, sizeof(what), "%s %s", opt, item);
        uint64_t v;
        if (strcmp(item, "keep") == 0 && !value) {
            s->keep = true;
        } else if (!value || !*value) {
            return tk_args_bad(cli,
                               "%s: '%s' needs a value (vm=N, bytes=B, stride=B, hang=T, keep, "
                               "alloc=malloc|mmap, spin=N, sync=N, hdd=N, hdd-bytes=B, dir=DIR)",
                               opt, item);
        } else if (strcmp(item, "vm") == 0 || strcmp(item, "spin") == 0 ||
                   strcmp(item, "sync") == 0 || strcmp(item, "hdd") == 0) {
            if (tk_args_u64(cli, what, value, 0, TK_PRESSURE_MAX_WORKERS, &v) != 0)
                return -1;
            unsigned *field = item[0] == 'v'   ? &s->vm
                              : item[1] == 'p' ? &s->spin
                              : item[1] == 'y' ? &s->sync
                                               : &s->hdd;
            *field = (unsigned)v;
        } else if (strcmp(item, "bytes") == 0) {
            if (tk_args_bytes(cli, what, value, 1, TK_PRESSURE_MAX_BYTES, &s->bytes) != 0)
                return -1;
        } else if (strcmp(item, "stride") == 0) {
            if (tk_args_bytes(cli, what, value, 1, TK_PRESSURE_MAX_BYTES, &s->stride) != 0)
                return -1;
        } else if (strcmp(item, "hdd-bytes") == 0) {
            if (tk_args_bytes(cli, what, value, 1, TK_PRESSURE_MAX_BYTES, &s->hdd_bytes) != 0)
                return -1;
        } else if (strcmp(item, "hang") == 0) {
            if (tk_args_time_ns(cli, what, value, NS_PER_S, 0, 3600 * NS_PER_S, &s->hang_ns) != 0)
                return -1;
        } else if (strcmp(item, "alloc") == 0) {
            if (strcmp(value, "malloc") == 0)
                s->alloc = TK_PRESSURE_MALLOC;
            else if (strcmp(value, "mmap") == 0)
                s->alloc = TK_PRESSURE_MMAP;
            else
                return tk_args_bad(cli, "%s: '%s' is not malloc or mmap", what, value);
        } else if (strcmp(item, "dir") == 0) {
            /* Points into text, which lives as long as argv. */
            s->dir = p + (size_t)(value - item);
            if (strchr(s->dir, ','))
                return tk_args_bad(cli,
                                   "%s: a directory with ',' in its name cannot be given "
                                   "here",
                                   what);
            return 0; /* the rest of text is the name */
        } else {
            return tk_args_bad(cli,
                               "%s: unknown item '%s' (vm, bytes, stride, hang, keep, alloc, "
                               "spin, sync, hdd, hdd-bytes, dir)",
                               opt, item);
        }
        p += len;
    } while (*p++ == ',');
    return 0;
}

/* One number from a file, or false. */
static bool read_u64(const char *path, uint64_t *v)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    unsigned long long x;
    bool ok = fscanf(f, "%llu", &x) == 1;
    fclose(f);
    *v = x;
    return ok;
}

/* What the cgroup (v2) this process is in still allows it: memory.max less
 * memory.current, or UINT64_MAX if there is no limit or none can be read. */
static uint64_t cgroup_room(void)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return UINT64_MAX;
    char line[PATH_MAX], dir[PATH_MAX + 32] = "";
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", line + 3);
            break;
        }
    fclose(f);
    if (!dir[0])
        return UINT64_MAX;
    char path[sizeof(dir) + 32];
    uint64_t max, cur;
    snprintf(path, sizeof(path), "%s/memory.max", dir);
    if (!read_u64(path, &max)) /* "max", or no memory controller */
        return UINT64_MAX;
    snprintf(path, sizeof(path), "%s/memory.current", dir);
    if (!read_u64(path, &cur))
        return UINT64_MAX;
    return max > cur ? max - cur : 0;
}

uint64_t tk_pressure_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    fclose(f);
    uint64_t avail = (uint64_t)kb * 1024, room = cgroup_room();
    return room < avail ? room : avail;
}

int tk_pressure_check(const struct tk_args *cli, const struct tk_pressure_spec *s, bool force,
                      const char *force_opt)
{
    char a[24], b[24];
    if (tk_pressure_workers(s) == 0)
        return tk_args_bad(cli, "no workers: give vm, spin, sync or hdd workers");
    if (tk_pressure_workers(s) > TK_PRESSURE_MAX_WORKERS)
        return tk_args_bad(cli, "%u workers; at most %u", tk_pressure_workers(s),
                           TK_PRESSURE_MAX_WORKERS);
    if (s->vm && s->bytes > SIZE_MAX)
        return tk_args_bad(cli, "%s is more than this machine can address",
                           tk_opt_fmt_bytes(a, sizeof(a), s->bytes));
    if (s->vm && s->stride > s->bytes)
        return tk_args_bad(cli, "the stride (%s) is larger than the bytes allocated (%s)",
                           tk_opt_fmt_bytes(a, sizeof(a), s->stride),
                           tk_opt_fmt_bytes(b, sizeof(b), s->bytes));
    if (s->vm) {
        /* At most 256 workers of at most 1T: no wrap. */
        uint64_t total = (uint64_t)s->vm * s->bytes;
        uint64_t avail = tk_pressure_mem_available();
        if (!force && avail == 0)
            return tk_args_bad(cli,
                               "MemAvailable cannot be read from /proc/meminfo, so %s of "
                               "memory cannot be checked against it; %s runs anyway",
                               tk_opt_fmt_bytes(a, sizeof(a), total), force_opt);
        if (!force && total > avail / TK_PRESSURE_SHARE_DIV)
            return tk_args_bad(cli,
                               "%u vm workers of %s take %s, more than half of what the machine "
                               "has available (MemAvailable, or the cgroup's memory.max, %s): the "
                               "OOM killer could end "
                               "other processes. Give fewer or smaller, or %s",
                               s->vm, tk_opt_fmt_bytes(a, sizeof(a), s->bytes),
                               tk_opt_fmt_bytes(b, sizeof(b), total),
                               tk_fmt_iec_approx((char[24]){ 0 }, 24, avail), force_opt);
    }
    if (s->hdd) {
        struct stat st;
        if (stat(s->dir, &st) != 0)
            return tk_args_bad(cli, "the disk writers' directory '%s': %s", s->dir,
                               strerror(errno));
        if (!S_ISDIR(st.st_mode))
            return tk_args_bad(cli, "the disk writers' directory '%s' is not a directory", s->dir);
        if (access(s->dir, W_OK | X_OK) != 0)
            return tk_args_bad(cli, "the disk writers' directory '%s' is not writable: %s", s->dir,
                               strerror(errno));
        uint64_t total = (uint64_t)s->hdd * s->hdd_bytes;
        struct statfs fs;
        if (statfs(s->dir, &fs) == 0 && fs.f_type == TMPFS_MAGIC && !force) {
            uint64_t avail = tk_pressure_mem_available();
            uint64_t vm = (uint64_t)s->vm * s->bytes;
            if (vm + total > avail / TK_PRESSURE_SHARE_DIV)
                return tk_args_bad(cli,
                                   "'%s' is a tmpfs, whose files are memory: %s of disk writes "
                                   "and %s for vm workers take more than half of what the "
                                   "machine has available (%s). Give fewer or smaller, or %s",
                                   s->dir, tk_opt_fmt_bytes(a, sizeof(a), total),
                                   tk_opt_fmt_bytes(b, sizeof(b), vm),
                                   tk_fmt_iec_approx((char[24]){ 0 }, 24, avail), force_opt);
        }
        struct statvfs vfs;
        if (statvfs(s->dir, &vfs) == 0 && !force) {
            uint64_t free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
            if (total > free_bytes / TK_PRESSURE_SHARE_DIV)
                return tk_args_bad(cli,
                                   "%u disk writers of %s write %s, more than half of the free "
                                   "space of '%s' (%s). Give fewer or smaller, or %s",
                                   s->hdd, tk_opt_fmt_bytes(a, sizeof(a), s->hdd_bytes),
                                   tk_opt_fmt_bytes(b, sizeof(b), total), s->dir,
                                   tk_fmt_iec_approx((char[24]){ 0 }, 24, free_bytes), force_opt);
        }
    }
    return 0;
}

/* ---- the workers ---- */

/* What a worker is given: its record, the shared page, its deadline. */
struct worker_ctx {
    const struct tk_pressure_spec *spec;
    struct tk_pressure_shared *sh;
    struct tk_pressure_worker *w;
    uint64_t deadline;
    int fd; /* a disk writer's file */
};

static void note_faults(struct tk_pressure_worker *w)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        atomic_store_explicit(&w->minflt, (uint64_t)ru.ru_minflt, memory_order_relaxed);
        atomic_store_explicit(&w->majflt, (uint64_t)ru.ru_majflt, memory_order_relaxed);
    }
}

static _Noreturn void end_as(struct tk_pressure_worker *w, int state, int err)
{
    atomic_store(&w->err, err);
    atomic_store(&w->ended_ns, tk_monotonic_ns());
    atomic_store(&w->state, state);
    _exit(state == TK_PW_DONE ? 0 : 3);
}

/* Time to end: the run's deadline passed (done), or the tool stopped
 * renewing its lease: stopped, hung or gone (orphaned, an early end). */
static void check_time(const struct worker_ctx *c)
{
    uint64_t now = tk_monotonic_ns();
    if (now >= c->deadline)
        end_as(c->w, TK_PW_DONE, 0);
    uint64_t lease = atomic_load_explicit(&c->sh->lease_ns, memory_order_relaxed);
    if (now > lease + TK_PRESSURE_LEASE_NS)
        end_as(c->w, TK_PW_ORPHANED, 0);
}

/* Sleeps for ns, a second at a time, minding the deadline and the lease. */
static void hold(const struct worker_ctx *c, uint64_t ns)
{
    uint64_t until = tk_monotonic_ns() + ns;
    for (;;) {
        check_time(c);
        uint64_t now = tk_monotonic_ns();
        if (now >= until)
            return;
        uint64_t t = until - now < NS_PER_S ? until : now + NS_PER_S;
        struct timespec ts = { .tv_sec = (time_t)(t / NS_PER_S), .tv_nsec = (long)(t % NS_PER_S) };
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
}

/* Writes a byte every stride bytes of p[0, bytes), as stress does,
 * counting the bytes written and the range they cover as it goes. */
static void touch(volatile char *p, const struct worker_ctx *c)
{
    const uint64_t bytes = c->spec->bytes, stride = c->spec->stride;
    uint64_t next_check = VM_CHECK_BYTES, written = 0, from = 0;
    for (uint64_t off = 0; off < bytes; off += stride) {
        p[off] = 'Z';
        written++;
        if (off >= next_check) {
            atomic_fetch_add_explicit(&c->w->bytes, written, memory_order_relaxed);
            atomic_fetch_add_explicit(&c->w->swept, off - from, memory_order_relaxed);
            written = 0;
            from = off;
            next_check = off + VM_CHECK_BYTES;
            note_faults(c->w); /* a pass of a large block may outlast the run */
            check_time(c);
        }
    }
    atomic_fetch_add_explicit(&c->w->bytes, written, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->w->swept, bytes - from, memory_order_relaxed);
}

/* Reads back every byte touch wrote, as stress does in every mode: a round
 * is the write and the read. A byte read back that is not the one written
 * ends the worker (the memory does not hold what it was given). */
static void read_back(const volatile char *p, const struct worker_ctx *c)
{
    const uint64_t bytes = c->spec->bytes, stride = c->spec->stride;
    uint64_t next_check = VM_CHECK_BYTES, read = 0;
    for (uint64_t off = 0; off < bytes; off += stride) {
        if (p[off] != 'Z') {
            atomic_fetch_add_explicit(&c->w->read, read, memory_order_relaxed);
            end_as(c->w, TK_PW_CORRUPT, 0);
        }
        read++;
        if (off >= next_check) {
            atomic_fetch_add_explicit(&c->w->read, read, memory_order_relaxed);
            read = 0;
            next_check = off + VM_CHECK_BYTES;
            check_time(c);
        }
    }
    atomic_fetch_add_explicit(&c->w->read, read, memory_order_relaxed);
}

static void *vm_alloc(const struct tk_pressure_spec *s)
{
    if (s->alloc == TK_PRESSURE_MMAP) {
        void *p = mmap(NULL, (size_t)s->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    return malloc((size_t)s->bytes);
}

static void vm_free(const struct tk_pressure_spec *s, void *p)
{
    if (s->alloc == TK_PRESSURE_MMAP)
        (void)munmap(p, (size_t)s->bytes);
    else
        free(p);
}

static _Noreturn void vm_worker(const struct worker_ctx *c)
{
    const struct tk_pressure_spec *s = c->spec;
    void *kept = NULL;
    for (;;) {
        void *p = kept ? kept : vm_alloc(s);
        if (!p)
            end_as(c->w, TK_PW_FAILED, ENOMEM);
        touch(p, c);
        note_faults(c->w);
        if (s->hang_ns)
            hold(c, s->hang_ns);
        read_back(p, c);
        if (s->keep)
            kept = p;
        else
            vm_free(s, p);
        note_faults(c->w);
        atomic_fetch_add_explicit(&c->w->ops, 1, memory_order_relaxed);
        check_time(c);
    }
}

static _Noreturn void spin_worker(const struct worker_ctx *c)
{
    volatile uint64_t x = 1;
    for (;;) {
        for (unsigned i = 0; i < (1u << 20); i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        atomic_fetch_add_explicit(&c->w->ops, 1, memory_order_relaxed);
        check_time(c);
    }
}

static _Noreturn void sync_worker(const struct worker_ctx *c)
{
    for (;;) {
        sync();
        atomic_fetch_add_explicit(&c->w->ops, 1, memory_order_relaxed);
        check_time(c);
    }
}

static _Noreturn void hdd_worker(const struct worker_ctx *c)
{
    char *buf = malloc(HDD_CHUNK);
    if (!buf)
        end_as(c->w, TK_PW_FAILED, ENOMEM);
    memset(buf, 'Z', HDD_CHUNK);
    for (;;) {
        if (lseek(c->fd, 0, SEEK_SET) != 0)
            end_as(c->w, TK_PW_FAILED, errno);
        for (uint64_t left = c->spec->hdd_bytes; left > 0;) {
            size_t n = left < HDD_CHUNK ? (size_t)left : HDD_CHUNK;
            ssize_t r = write(c->fd, buf, n);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                end_as(c->w, TK_PW_FAILED, r < 0 ? errno : ENOSPC);
            left -= (uint64_t)r;
            atomic_fetch_add_explicit(&c->w->bytes, (uint64_t)r, memory_order_relaxed);
            check_time(c);
        }
        /* Gives the blocks back, as stress's unlink does. */
        if (ftruncate(c->fd, 0) != 0)
            end_as(c->w, TK_PW_FAILED, errno);
        atomic_fetch_add_explicit(&c->w->ops, 1, memory_order_relaxed);
    }
}

static const int handled_signals[] = { SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM };
#define N_HANDLED (sizeof(handled_signals) / sizeof(handled_signals[0]))

/* In the child, right after the fork (signals blocked): dies with the
 * parent; takes no signal meant for the tool; SCHED_OTHER, the first the
 * OOM killer takes, pinned; nothing open but its own file; then works. */
static _Noreturn void worker_main(struct tk_pressure *p, size_t i, pid_t parent, uint64_t deadline,
                                  const sigset_t *mask)
{
    struct tk_pressure_worker *w = &p->sh->w[i];
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(4);
    /* A signal sent to the tool's group (a Ctrl-C) before this worker left
     * it is pending here: ignoring discards it, then the defaults. */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    for (size_t k = 0; k < N_HANDLED; k++) {
        sa.sa_handler = SIG_IGN;
        (void)sigaction(handled_signals[k], &sa, NULL);
        sa.sa_handler = SIG_DFL;
        (void)sigaction(handled_signals[k], &sa, NULL);
    }
    sigprocmask(SIG_SETMASK, mask, NULL);
    struct sched_param sp = { .sched_priority = 0 };
    (void)sched_setscheduler(0, SCHED_OTHER, &sp);
    int adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (adj >= 0) {
        (void)!write(adj, "1000", 4);
        (void)close(adj);
    }
    if (p->spec.cpus_given && sched_setaffinity(0, sizeof(p->spec.cpus), &p->spec.cpus) != 0)
        end_as(w, TK_PW_FAILED, errno);
    /* Standard input and output on /dev/null (a pipe the tool writes to
     * closes when the tool ends, not when its workers do); its own file as
     * descriptor 3; nothing else the tool had open. */
    int fd = -1;
    if (p->fds[i] >= 0 && (fd = dup2(p->fds[i], 3)) < 0)
        end_as(w, TK_PW_FAILED, errno);
    if (close_range(fd >= 0 ? 4 : 3, ~0u, 0) != 0)
        for (int k = fd >= 0 ? 4 : 3; k < 1024; k++)
            (void)close(k);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        for (int k = 0; k <= 2; k++)
            (void)dup2(null, k);
        if (null > 2 && null != fd)
            (void)close(null);
    }
    /* Named last: a worker seen under its name is set up (pinned, its
     * descriptors closed). */
    static const char *const names[TK_PW_KINDS] = { "rtmem-vm", "rtmem-spin", "rtmem-sync",
                                                    "rtmem-hdd" };
    (void)prctl(PR_SET_NAME, names[w->kind], 0, 0, 0);
    struct worker_ctx c = { .spec = &p->spec, .sh = p->sh, .w = w, .deadline = deadline, .fd = fd };
    atomic_store(&w->state, TK_PW_RUNNING);
    switch (w->kind) {
    case TK_PW_VM: vm_worker(&c);
    case TK_PW_SPIN: spin_worker(&c);
    case TK_PW_SYNC: sync_worker(&c);
    default: hdd_worker(&c);
    }
}

/* A file in dir that no name points to: O_TMPFILE (O_EXCL: never to be
 * linked), or, where the file system has no O_TMPFILE, made and unlinked
 * at once (signals are blocked: nothing of ours comes between). */
static int unnamed_file(const char *dir)
{
    int fd = open(dir, O_TMPFILE | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/.rtmem-pressure-XXXXXX", dir) >= (int)sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (unlink(path) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static void release(struct tk_pressure *p)
{
    if (p->fds)
        for (size_t i = 0; i < p->n_fds; i++)
            if (p->fds[i] >= 0)
                close(p->fds[i]);
    free(p->fds);
    free(p->reaped);
    tk_shared_free(p->sh, p->sh_bytes);
    p->fds = NULL;
    p->reaped = NULL;
    p->sh = NULL;
}

void tk_pressure_beat(struct tk_pressure *p)
{
    if (p->sh)
        atomic_store_explicit(&p->sh->lease_ns, tk_monotonic_ns(), memory_order_relaxed);
}

int tk_pressure_start(struct tk_pressure *p, const struct tk_pressure_spec *s, uint64_t bound_ns,
                      char *why, size_t why_len)
{
    memset(p, 0, sizeof(*p));
    p->spec = *s;
    p->slot = -1;
    size_t n = tk_pressure_workers(s);
    p->sh_bytes = sizeof(*p->sh) + n * sizeof(p->sh->w[0]);
    p->sh = tk_shared_alloc(p->sh_bytes);
    p->fds = malloc(n * sizeof(*p->fds));
    p->reaped = calloc(n, sizeof(*p->reaped));
    if (!p->sh || !p->fds || !p->reaped) {
        release(p);
        snprintf(why, why_len, "out of memory for the workers' records");
        return -ENOMEM;
    }
    p->n_fds = n;
    for (size_t i = 0; i < n; i++) {
        p->fds[i] = -1;
        p->sh->w[i].kind = i < s->vm                               ? TK_PW_VM
                           : i < (size_t)s->vm + s->spin           ? TK_PW_SPIN
                           : i < (size_t)s->vm + s->spin + s->sync ? TK_PW_SYNC
                                                                   : TK_PW_HDD;
    }
    tk_cleanup_install();
    fflush(NULL); /* before the signals are blocked: a blocked stdout stays killable */
    /* An ignored SIGCHLD would reap the workers behind our back, and free
     * their group's id while we may still kill it. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    (void)sigaction(SIGCHLD, &dfl, NULL);
    sigset_t old;
    tk_cleanup_block(&old);
    int err = 0;
    for (size_t i = 0; i < n && !err; i++)
        if (p->sh->w[i].kind == TK_PW_HDD && (p->fds[i] = unnamed_file(s->dir)) < 0) {
            err = errno;
            snprintf(why, why_len, "cannot make a file in '%s' for the disk writers: %s", s->dir,
                     strerror(err));
        }
    p->start_ns = tk_monotonic_ns();
    tk_pressure_beat(p);
    uint64_t deadline = p->start_ns + bound_ns;
    pid_t parent = getpid();
    for (size_t i = 0; i < n && !err; i++) {
        tk_pressure_beat(p); /* each fork copies the tool's page tables: time */
        pid_t pid = fork();
        if (pid == 0) {
            (void)setpgid(0, p->pgid);
            worker_main(p, i, parent, deadline, &old);
        }
        if (pid < 0) {
            err = errno;
            snprintf(why, why_len, "cannot start worker %zu of %zu: fork: %s", i + 1, n,
                     strerror(err));
            break;
        }
        /* Both sides set the group, so it is set whichever runs first. */
        (void)setpgid(pid, p->pgid ? p->pgid : pid);
        p->sh->w[i].pid = pid;
        p->n = i + 1;
        if (i == 0) {
            p->pgid = pid;
            p->slot = tk_cleanup_add_child(pid);
            if (p->slot < 0) {
                err = EBUSY;
                snprintf(why, why_len, "the cleanup table is full: cannot start workers");
            }
        }
    }
    tk_cleanup_restore(&old);
    if (err) {
        /* The workers started so far (p->n) are stopped. */
        tk_pressure_release(p);
        return -err;
    }
    return 0;
}

bool tk_pressure_wait_running(struct tk_pressure *p, uint64_t timeout_ns)
{
    uint64_t until = tk_monotonic_ns() + timeout_ns;
    for (;;) {
        bool all = true;
        for (size_t i = 0; i < p->n; i++)
            if (atomic_load(&p->sh->w[i].state) != TK_PW_RUNNING)
                all = false;
        if (all || tk_monotonic_ns() >= until || tk_pressure_poll(p) > 0)
            return all;
        tk_pressure_beat(p);
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
}

/* Records worker i's end (status of waitpid). */
static void record_end(struct tk_pressure *p, size_t i, int status)
{
    p->reaped[i] = true;
    uint64_t at = atomic_load(&p->sh->w[i].ended_ns);
    if (!at)
        at = tk_monotonic_ns(); /* killed: when it was found */
    if (p->n_ended < TK_PRESSURE_MAX_ENDS)
        p->ended[p->n_ended] = (struct tk_pressure_end){
            .worker = i,
            .status = status,
            .at_s = (double)(at - p->start_ns) / 1e9,
        };
    p->n_ended++;
}

/* Worker i reaped with status: an end of its own before the stop, unless
 * it reached its deadline (done as asked). */
static void reaped(struct tk_pressure *p, size_t i, int status)
{
    if (atomic_load(&p->sh->w[i].state) == TK_PW_DONE)
        p->reaped[i] = true;
    else
        record_end(p, i, status);
}

/* Once every worker is reaped the group is gone and its id free for
 * another: no kill may name it again. Called with the handled signals
 * blocked, so that the cleanup handler never runs in between. */
static void forget_if_reaped(struct tk_pressure *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (!p->reaped[i])
            return;
    tk_cleanup_forget_child(p->slot);
    p->slot = -1;
    p->pgid = 0;
}

size_t tk_pressure_poll(struct tk_pressure *p)
{
    if (!p->sh)
        return p->n_ended;
    sigset_t old;
    tk_cleanup_block(&old);
    for (size_t i = 0; i < p->n; i++) {
        if (p->reaped[i])
            continue;
        int status = 0;
        if (waitpid(p->sh->w[i].pid, &status, WNOHANG) == p->sh->w[i].pid)
            reaped(p, i, status);
    }
    forget_if_reaped(p);
    tk_cleanup_restore(&old);
    return p->n_ended;
}

void tk_pressure_stop(struct tk_pressure *p)
{
    if (!p->sh || p->stop_ns)
        return;
    /* The ends before the stop first: a worker the OOM killer took dies of
     * the same SIGKILL as ours. */
    tk_pressure_poll(p);
    p->stop_ns = tk_monotonic_ns();
    sigset_t old;
    tk_cleanup_block(&old);
    /* A worker not reaped keeps the group, so the id is still its. */
    if (p->pgid > 0)
        (void)kill(-p->pgid, SIGKILL);
    for (size_t i = 0; i < p->n; i++) {
        if (p->reaped[i])
            continue;
        int status = 0;
        pid_t r;
        while ((r = waitpid(p->sh->w[i].pid, &status, 0)) < 0 && errno == EINTR)
            ;
        if (r != p->sh->w[i].pid) {
            p->reaped[i] = true; /* not ours to wait for: nothing to know */
            continue;
        }
        int state = atomic_load(&p->sh->w[i].state);
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
            (state == TK_PW_RUNNING || state == TK_PW_STARTING))
            p->reaped[i] = true; /* ours */
        else
            reaped(p, i, status);
    }
    forget_if_reaped(p);
    tk_cleanup_restore(&old);
    for (size_t i = 0; i < p->n_fds; i++)
        if (p->fds[i] >= 0) {
            close(p->fds[i]);
            p->fds[i] = -1;
        }
}

void tk_pressure_release(struct tk_pressure *p)
{
    tk_pressure_stop(p);
    release(p);
}

void tk_pressure_totals(const struct tk_pressure *p, struct tk_pressure_totals *t)
{
    memset(t, 0, sizeof(*t));
    uint64_t end = p->stop_ns ? p->stop_ns : tk_monotonic_ns();
    t->seconds = p->start_ns ? (double)(end - p->start_ns) / 1e9 : 0;
    for (size_t i = 0; p->sh && i < p->n; i++) {
        const struct tk_pressure_worker *w = &p->sh->w[i];
        int k = w->kind;
        t->ops[k] += atomic_load_explicit(&w->ops, memory_order_relaxed);
        t->bytes[k] += atomic_load_explicit(&w->bytes, memory_order_relaxed);
        if (k == TK_PW_VM) {
            t->swept += atomic_load_explicit(&w->swept, memory_order_relaxed);
            t->read += atomic_load_explicit(&w->read, memory_order_relaxed);
            t->minflt += atomic_load_explicit(&w->minflt, memory_order_relaxed);
            t->majflt += atomic_load_explicit(&w->majflt, memory_order_relaxed);
        }
    }
}

/* ---- what the load was and did ---- */

const char *tk_pressure_thp(char *buf, size_t size)
{
    snprintf(buf, size, "unknown");
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return buf;
    char line[128];
    if (fgets(line, sizeof(line), f)) {
        char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b)
            snprintf(buf, size, "%.*s", (int)(b - a - 1), a + 1);
    }
    fclose(f);
    return buf;
}

void tk_pressure_print_spec(FILE *f, const char *indent, const struct tk_pressure_spec *s)
{
    char a[24], b[24], c[24];
    if (s->vm) {
        fprintf(f, "%s%u vm worker%s: %s each, a byte written and read back every %s, %s, %s",
                indent, s->vm, s->vm == 1 ? "" : "s", tk_opt_fmt_bytes(a, sizeof(a), s->bytes),
                tk_opt_fmt_bytes(b, sizeof(b), s->stride),
                s->alloc == TK_PRESSURE_MMAP ? "mmap'd" : "malloc'd",
                s->keep ? "kept and written again" : "then freed");
        if (s->hang_ns)
            fprintf(f, ", held %s before %s", tk_args_fmt_time(c, sizeof(c), s->hang_ns),
                    s->keep ? "the next pass" : "the free");
        char thp[32];
        fprintf(f, " (%s)\n%s  (transparent huge pages: %s)\n", mode_name(s), indent,
                tk_pressure_thp(thp, sizeof(thp)));
    }
    if (s->spin)
        fprintf(f, "%s%u CPU spinner%s\n", indent, s->spin, s->spin == 1 ? "" : "s");
    if (s->sync)
        fprintf(f, "%s%u sync() caller%s\n", indent, s->sync, s->sync == 1 ? "" : "s");
    if (s->hdd)
        fprintf(f, "%s%u disk writer%s: %s each, in '%s', over and over\n", indent, s->hdd,
                s->hdd == 1 ? "" : "s", tk_opt_fmt_bytes(a, sizeof(a), s->hdd_bytes), s->dir);
    if (s->cpus_given) {
        fprintf(f, "%spinned to cpus", indent);
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
            if (CPU_ISSET(cpu, &s->cpus))
                fprintf(f, " %d", cpu);
        fprintf(f, "\n");
    }
}

static double rate(uint64_t v, double s)
{
    return s > 0 ? (double)v / s : 0;
}

void tk_pressure_print_rates(FILE *f, const char *indent, const struct tk_pressure_spec *s,
                             const struct tk_pressure_totals *t)
{
    char a[TK_FMT_MAX], b[TK_FMT_MAX], c[TK_FMT_MAX];
    double sec = t->seconds;
    if (s->vm)
        fprintf(f, "%svm: %s rounds/s, %s MiB/s swept, %s page faults/s (major %llu)\n", indent,
                tk_fmt_double(a, sizeof(a), rate(t->ops[TK_PW_VM], sec), 1),
                tk_fmt_double(b, sizeof(b), rate(t->swept, sec) / (1 << 20), 1),
                tk_fmt_double(c, sizeof(c), rate(t->minflt + t->majflt, sec), 0),
                (unsigned long long)t->majflt);
    if (s->spin)
        fprintf(f, "%sspin: %s M loops/s\n", indent,
                tk_fmt_double(a, sizeof(a), rate(t->ops[TK_PW_SPIN], sec) * 1.048576, 1));
    if (s->sync)
        fprintf(f, "%ssync: %s calls/s\n", indent,
                tk_fmt_double(a, sizeof(a), rate(t->ops[TK_PW_SYNC], sec), 1));
    if (s->hdd)
        fprintf(f, "%shdd: %s MiB/s written (to the page cache)\n", indent,
                tk_fmt_double(a, sizeof(a), rate(t->bytes[TK_PW_HDD], sec) / (1 << 20), 1));
}

static void describe_end(char *buf, size_t size, const struct tk_pressure *p,
                         const struct tk_pressure_end *e)
{
    char sig[96];
    const struct tk_pressure_worker *w = &p->sh->w[e->worker];
    int err = atomic_load(&w->err);
    int state = atomic_load(&w->state);
    /* Its own record first: one that failed or lost its lease may have been
     * caught by the stop's SIGKILL before its _exit. */
    if (state == TK_PW_FAILED)
        snprintf(buf, size, "failed: %s", strerror(err));
    else if (state == TK_PW_CORRUPT)
        snprintf(buf, size, "failed: read back a byte other than the one it wrote");
    else if (state == TK_PW_ORPHANED)
        snprintf(buf, size,
                 "ended: the tool stopped renewing its lease (it was stopped, or blocked, "
                 "e.g. writing to a paused terminal)");
    else if (WIFEXITED(e->status))
        snprintf(buf, size, "exited with status %d", WEXITSTATUS(e->status));
    else if (WIFSIGNALED(e->status))
        snprintf(buf, size, "died of %s%s",
                 tk_signal_describe(WTERMSIG(e->status), sig, sizeof(sig)),
                 WTERMSIG(e->status) == SIGKILL ? " (the OOM killer?)" : "");
    else
        snprintf(buf, size, "ended (status 0x%x)", (unsigned)e->status);
}

void tk_pressure_print_ended(FILE *f, const char *indent, const struct tk_pressure *p)
{
    char how[160], at[TK_FMT_MAX];
    size_t shown = p->n_ended < TK_PRESSURE_MAX_ENDS ? p->n_ended : TK_PRESSURE_MAX_ENDS;
    for (size_t i = 0; i < shown; i++) {
        const struct tk_pressure_end *e = &p->ended[i];
        describe_end(how, sizeof(how), p, e);
        fprintf(f, "%sWORKER ENDED EARLY: worker %zu (%s, pid %d) %s after %s s\n", indent,
                e->worker + 1, kind_names[p->sh->w[e->worker].kind], (int)p->sh->w[e->worker].pid,
                how, tk_fmt_double(at, sizeof(at), e->at_s, 1));
    }
    if (p->n_ended > shown)
        fprintf(f, "%s... and %zu more\n", indent, p->n_ended - shown);
}

void tk_pressure_spec_json(struct tk_json *j, const struct tk_pressure_spec *s, bool shape)
{
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "vm", s->vm);
    if (shape) {
        tk_json_kv_uint(j, "bytes", s->bytes);
        tk_json_kv_uint(j, "stride", s->stride);
        tk_json_kv_string(j, "mode", mode_name(s));
        tk_json_kv_bool(j, "keep", s->keep);
    }
    tk_json_kv_uint(j, "hang_ns", s->hang_ns);
    tk_json_kv_string(j, "alloc", s->alloc == TK_PRESSURE_MMAP ? "mmap" : "malloc");
    tk_json_kv_uint(j, "spin", s->spin);
    tk_json_kv_uint(j, "sync", s->sync);
    tk_json_kv_uint(j, "hdd", s->hdd);
    tk_json_kv_uint(j, "hdd_bytes", s->hdd_bytes);
    tk_json_kv_string(j, "dir", s->dir);
    char thp[32];
    tk_json_kv_string(j, "transparent_hugepages", tk_pressure_thp(thp, sizeof(thp)));
    if (tk_json_key_or_null(j, "cpus", s->cpus_given)) {
        tk_json_begin_array_compact(j);
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &s->cpus))
                tk_json_int(j, c);
        tk_json_end_array(j);
    }
    tk_json_end_object(j);
}

void tk_pressure_totals_json(struct tk_json *j, const struct tk_pressure_totals *t,
                             const struct tk_pressure *p)
{
    tk_json_begin_object(j);
    tk_json_kv_double(j, "seconds", t->seconds);
    tk_json_kv_uint(j, "vm_rounds", t->ops[TK_PW_VM]);
    tk_json_kv_uint(j, "vm_bytes_written", t->bytes[TK_PW_VM]);
    tk_json_kv_uint(j, "vm_bytes_swept", t->swept);
    tk_json_kv_uint(j, "vm_bytes_read", t->read);
    tk_json_kv_uint(j, "vm_minor_faults", t->minflt);
    tk_json_kv_uint(j, "vm_major_faults", t->majflt);
    tk_json_kv_uint(j, "spin_loops", t->ops[TK_PW_SPIN] << 20);
    tk_json_kv_uint(j, "sync_calls", t->ops[TK_PW_SYNC]);
    tk_json_kv_uint(j, "hdd_bytes_written", t->bytes[TK_PW_HDD]);
    tk_json_key(j, "ended_early");
    tk_json_begin_array(j);
    size_t shown = !p ? 0 : p->n_ended < TK_PRESSURE_MAX_ENDS ? p->n_ended : TK_PRESSURE_MAX_ENDS;
    for (size_t i = 0; i < shown; i++) {
        char how[160];
        const struct tk_pressure_end *e = &p->ended[i];
        describe_end(how, sizeof(how), p, e);
        tk_json_begin_object_compact(j);
        tk_json_kv_uint(j, "worker", e->worker + 1);
        tk_json_kv_string(j, "kind", kind_names[p->sh->w[e->worker].kind]);
        tk_json_kv_string(j, "how", how);
        tk_json_kv_double(j, "at_s", e->at_s);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_kv_uint(j, "ended_early_count", p ? p->n_ended : 0);
    tk_json_end_object(j);
}
