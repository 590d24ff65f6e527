/*
 * `rtmem shm --java` (java.h): find a JDK, compile RtmemShm.java, run it in
 * a JVM under a timeout, read its output.
 */
#include "java.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/leftovers.h"
#include "common/child.h"
#include "common/cleanup.h"
#include "common/timer.h"

/* RtmemShm.java's text, built in by CMake (tools/CMakeLists.txt). */
extern const unsigned char shm_java_source[];
extern const size_t shm_java_source_len;

#define CLASS_NAME         "RtmemShm"
#define WARM_FILE          "rtmem-shm-warm" /* RtmemShm.java's WARM_FILE */
#define CRASH_LOG          "hs_err.log"
/* javac, on a small file, takes seconds; this only stops a hung one. */
#define COMPILE_TIMEOUT_NS (300 * 1000000000ull)
#define DEFAULT_TIMEOUT_NS (600 * 1000000000ull)
/* The class file is a few KiB; more means something else is there. */
#define CLASS_MAX_BYTES    (1u << 20)
/* What is kept of a child's stdout and stderr; the rest is read and
 * dropped. The protocol's output is well under a KiB. */
#define CAPTURE_BYTES      16384

const char *const shm_java_zero_methods[SHM_JAVA_ZERO_N] = { SHM_JAVA_ZERO_METHODS };
#define zero_methods   shm_java_zero_methods
#define N_ZERO_METHODS (sizeof(zero_methods) / sizeof(zero_methods[0]))

static const char *const phase_names[SHM_PHASES] = { "touch", "writes", "zeroings", "sync",
                                                     "teardown" };

/* The compiled class, once per process. */
static unsigned char *class_bytes;
static size_t class_len;

static void say(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *why, size_t size, const char *fmt, ...)
{
    if (!why || size == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
}

/* ---- the JDK's programs ---- */

struct jdk {
    char java[PATH_MAX];
    char javac[PATH_MAX];
};

/* javac from $JAVA_HOME/bin, else PATH; java beside it, else on PATH. */
static bool find_jdk(struct jdk *j, char *why, size_t size)
{
    const char *home = getenv("JAVA_HOME");
    char bin[PATH_MAX];
    bool found = false;
    if (home && *home && snprintf(bin, sizeof(bin), "%s/bin", home) < (int)sizeof(bin))
        found = tk_executable_in(bin, strlen(bin), "javac", j->javac);
    if (!found && !tk_on_path("javac", j->javac)) {
        say(why, size,
            "no javac in $JAVA_HOME/bin or on PATH: install a JDK 17 or later "
            "(openjdk-17-jdk-headless; scripts/ensure-deps.sh java)");
        return false;
    }
    const char *slash = strrchr(j->javac, '/');
    if (!tk_executable_in(j->javac, (size_t)(slash - j->javac), "java", j->java) &&
        !tk_on_path("java", j->java)) {
        say(why, size, "no java beside %s or on PATH: the JDK is incomplete", j->javac);
        return false;
    }
    return true;
}

/* ---- a private directory ---- */

struct workdir {
    char path[PATH_MAX];
    int slot; /* cleanup.h's, -1 none */
    /* Files in it, each registered with cleanup.h while it may exist. */
    char file[3][PATH_MAX];
    int file_slot[3];
    size_t files;
};

static int workdir_make(struct workdir *w, char *why, size_t size)
{
    memset(w, 0, sizeof(*w));
    w->slot = -1;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    char run[64];
    if (tk_leftover_stem("rtmem-java", run, sizeof(run)) != 0 ||
        snprintf(w->path, sizeof(w->path), "%s/%sXXXXXX", tmp, run) >= (int)sizeof(w->path)) {
        say(why, size, "TMPDIR too long");
        return -ENAMETOOLONG;
    }
    sigset_t old;
    tk_cleanup_install();
    tk_cleanup_block(&old);
    int err = mkdtemp(w->path) ? 0 : -errno;
    if (err == 0)
        w->slot = tk_cleanup_add_dir(w->path);
    tk_cleanup_restore(&old);
    if (err) {
        say(why, size, "cannot make a directory under %s: %s", tmp, strerror(-err));
        return err;
    }
    return 0;
}

/* Registers dir/name (made later, by us or the JVM) for removal; its path
 * in *out. */
static int workdir_file(struct workdir *w, const char *name, const char **out)
{
    size_t i = w->files;
    size_t dir_len = strlen(w->path), name_len = strlen(name);
    if (i >= sizeof(w->file) / sizeof(w->file[0]) || dir_len + 1 + name_len >= PATH_MAX)
        return -ENAMETOOLONG;
    memcpy(w->file[i], w->path, dir_len);
    w->file[i][dir_len] = '/';
    memcpy(w->file[i] + dir_len + 1, name, name_len + 1);
    w->file_slot[i] = tk_cleanup_add_file(w->file[i]);
    w->files++;
    *out = w->file[i];
    return 0;
}

/* Empties the directory (only we and our JVM wrote in it) and removes it. */
static void workdir_remove(struct workdir *w)
{
    if (!w->path[0])
        return;
    DIR *d = opendir(w->path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                (void)unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    (void)rmdir(w->path);
    for (size_t i = 0; i < w->files; i++)
        tk_cleanup_forget_file(w->file_slot[i]);
    tk_cleanup_forget_dir(w->slot);
    w->path[0] = '\0';
}

static int write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int err = n < 0 ? -errno : -EIO;
            close(fd);
            return err;
        }
        p += n, len -= (size_t)n;
    }
    return close(fd) == 0 ? 0 : -errno;
}

/* ---- a child process, its output through pipes, under a timeout ---- */

struct capture {
    char text[CAPTURE_BYTES];
    size_t len;
};

struct proc_end {
    bool timed_out;
    int status; /* waitpid's */
};

static void capture_add(struct capture *c, const char *buf, size_t n)
{
    size_t room = sizeof(c->text) - 1 - c->len;
    if (n > room)
        n = room;
    memcpy(c->text + c->len, buf, n);
    c->len += n;
    c->text[c->len] = '\0';
}

static bool ended(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

/* The child's side: its own process group, killed if rtmem dies (a
 * SIGKILL gives rtmem no chance to reap it), the pipes as stdout and
 * stderr, stdin from /dev/null, cwd the private directory. */
static void child_exec(char *const argv[], const char *cwd, int out_fd, int err_fd,
                       const sigset_t *mask, pid_t parent)
{
    (void)setpgid(0, 0);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(127);
    /* The JVM runs as a Java program would: SCHED_OTHER, whatever policy
     * the caller measures under (under SCHED_FIFO its compiler and
     * collector threads could starve the CPU's kernel threads). It keeps
     * the caller's CPU affinity, the CPU the C rows are measured on. */
    struct sched_param normal = { .sched_priority = 0 };
    (void)sched_setscheduler(0, SCHED_OTHER, &normal);
    sigprocmask(SIG_SETMASK, mask, NULL);
    int in = open("/dev/null", O_RDONLY);
    if (in < 0 || dup2(in, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0 || chdir(cwd) != 0)
        _exit(127);
    /* Nothing else of ours reaches the JVM (a lock's descriptor would be
     * held for as long as it runs). */
    (void)close_range(3, ~0u, 0);
    execv(argv[0], argv);
    dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Reads both pipes until they close or the deadline passes. Returns true
 * if the deadline passed. */
static bool read_until(int fds[2], struct capture *caps[2], uint64_t deadline_ns)
{
    char buf[4096];
    int open_fds = 2;
    while (open_fds > 0) {
        uint64_t now = tk_clock_ns();
        if (now >= deadline_ns)
            return true;
        uint64_t left_ms = (deadline_ns - now) / 1000000u + 1;
        struct pollfd p[2] = { { .fd = fds[0], .events = POLLIN },
                               { .fd = fds[1], .events = POLLIN } };
        int n = poll(p, 2, left_ms > INT_MAX ? INT_MAX : (int)left_ms);
        if (n < 0 && errno != EINTR)
            return false;
        for (int i = 0; n > 0 && i < 2; i++) {
            if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t got = read(fds[i], buf, sizeof(buf));
            if (got > 0) {
                capture_add(caps[i], buf, (size_t)got);
            } else if (got == 0 || errno != EINTR) {
                close(fds[i]);
                fds[i] = -1; /* poll skips a negative fd */
                open_fds--;
            }
        }
    }
    return false;
}

/* Runs argv (an absolute program path) in cwd, capturing stdout and
 * stderr, killed (its whole group) at timeout_ns; always reaped. Returns
 * 0, or a negative errno if it could not be started. */
static int run_child(char *const argv[], const char *cwd, uint64_t timeout_ns, struct capture *out,
                     struct capture *err, struct proc_end *end)
{
    memset(end, 0, sizeof(*end));
    out->len = err->len = 0;
    out->text[0] = err->text[0] = '\0';
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) != 0)
        return -errno;
    if (pipe2(pe, O_CLOEXEC) != 0) {
        int e = -errno;
        close(po[0]), close(po[1]);
        return e;
    }
    /* An ignored SIGCHLD would reap the child behind our back. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    (void)sigaction(SIGCHLD, &dfl, NULL);

    tk_cleanup_install();
    fflush(stdout);
    fflush(stderr);
    sigset_t old;
    tk_cleanup_block(&old);
    uint64_t start = tk_clock_ns();
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        child_exec(argv, cwd, po[1], pe[1], &old, parent);
    int fork_err = pid < 0 ? -errno : 0;
    int slot = -1;
    if (pid > 0) {
        (void)setpgid(pid, pid); /* both sides: whichever runs first */
        slot = tk_cleanup_add_child(pid);
    }
    tk_cleanup_restore(&old);
    close(po[1]), close(pe[1]);
    if (fork_err) {
        close(po[0]), close(pe[0]);
        return fork_err;
    }

    uint64_t deadline = start + timeout_ns;
    int fds[2] = { po[0], pe[0] };
    struct capture *caps[2] = { out, err };
    end->timed_out = read_until(fds, caps, deadline);
    /* Output closed: the child is ending; it gets until the deadline. */
    while (!end->timed_out && !ended(pid)) {
        if (tk_clock_ns() >= deadline) {
            end->timed_out = true;
            break;
        }
        struct timespec ts = { 0, 2000000 };
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    /* Whatever it started dies with it (the zombie keeps the group's id
     * ours until it is reaped), then it is reaped. */
    (void)kill(-pid, SIGKILL);
    while (waitpid(pid, &end->status, 0) < 0 && errno == EINTR)
        ;
    tk_cleanup_block(&old);
    tk_cleanup_forget_child(slot);
    tk_cleanup_restore(&old);
    return 0;
}

/* The last non-empty line of a child's stderr, for a message. */
static const char *last_line(struct capture *c)
{
    while (c->len > 0 && (c->text[c->len - 1] == '\n' || c->text[c->len - 1] == '\r'))
        c->text[--c->len] = '\0';
    char *nl = strrchr(c->text, '\n');
    return c->len == 0 ? "(nothing on stderr)" : nl ? nl + 1 : c->text;
}

/* "exited with status 1" / "died of SIGSEGV (...)" / "ran past ...". */
static int describe_end(const char *what, const struct proc_end *e, uint64_t timeout_ns,
                        struct capture *err, char *why, size_t size)
{
    char sig[64];
    if (e->timed_out) {
        say(why, size, "%s ran past its timeout of %.0f s: killed", what, (double)timeout_ns / 1e9);
        return -ETIMEDOUT;
    }
    if (WIFSIGNALED(e->status)) {
        say(why, size, "%s died of %s", what,
            tk_signal_describe(WTERMSIG(e->status), sig, sizeof(sig)));
        return -ECHILD;
    }
    if (!WIFEXITED(e->status) || WEXITSTATUS(e->status) != 0) {
        say(why, size, "%s exited with status %d: %s", what,
            WIFEXITED(e->status) ? WEXITSTATUS(e->status) : -1, last_line(err));
        return -ECHILD;
    }
    return 0;
}

/* ---- compiling, once ---- */

static int read_class(const char *dir, char *why, size_t size)
{
    /* javac must have made exactly one file: RtmemShm.class (a nested
     * class would be a second file, which a run does not write). */
    DIR *d = opendir(dir);
    if (!d) {
        say(why, size, "%s: %s", dir, strerror(errno));
        return -EIO;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            strcmp(e->d_name, CLASS_NAME ".class") != 0 &&
            strcmp(e->d_name, CLASS_NAME ".java") != 0) {
            say(why, size, "javac made %s: RtmemShm.java must stay one class", e->d_name);
            closedir(d);
            return -EPROTO;
        }
    closedir(d);

    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/" CLASS_NAME ".class", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_size > (off_t)CLASS_MAX_BYTES) {
        say(why, size, "javac made no usable %s", path);
        if (fd >= 0)
            close(fd);
        return -EIO;
    }
    unsigned char *b = malloc((size_t)st.st_size);
    size_t got = 0;
    while (b && got < (size_t)st.st_size) {
        ssize_t n = read(fd, b + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (!b || got != (size_t)st.st_size) {
        free(b);
        say(why, size, "cannot read %s", path);
        return -EIO;
    }
    class_bytes = b;
    class_len = got;
    return 0;
}

static int compile(const struct jdk *j, char *why, size_t size)
{
    struct workdir w;
    int rc = workdir_make(&w, why, size);
    if (rc)
        return rc;
    const char *src, *cls;
    if ((rc = workdir_file(&w, CLASS_NAME ".java", &src)) != 0 ||
        (rc = workdir_file(&w, CLASS_NAME ".class", &cls)) != 0) {
        say(why, size, "the private directory's path is too long");
        goto out;
    }
    if ((rc = write_file(src, shm_java_source, shm_java_source_len)) != 0) {
        say(why, size, "%s: %s", src, strerror(-rc));
        goto out;
    }
    /* -XDstringConcat=inline: string concatenation through StringBuilder,
     * not invokedynamic, whose first use binds call sites and compiles
     * method handles in the JVM under measurement. The C1-only javac
     * starts faster; -nowarn: sun.misc.Unsafe's warnings are expected. */
    char *argv[] = { (char *)j->javac,
                     "-J-XX:-UsePerfData",
                     "-J-XX:TieredStopAtLevel=1",
                     "-J-Xmx256m",
                     "-nowarn",
                     "-XDstringConcat=inline",
                     "-d",
                     w.path,
                     (char *)src,
                     NULL };
    struct capture *out = malloc(sizeof(*out)), *err = malloc(sizeof(*err));
    struct proc_end end;
    if (!out || !err) {
        rc = -ENOMEM;
        say(why, size, "out of memory");
    } else if ((rc = run_child(argv, w.path, COMPILE_TIMEOUT_NS, out, err, &end)) != 0) {
        say(why, size, "cannot start %s: %s", j->javac, strerror(-rc));
    } else if ((rc = describe_end(j->javac, &end, COMPILE_TIMEOUT_NS, err, why, size)) == 0) {
        rc = read_class(w.path, why, size);
    }
    free(out);
    free(err);
out:
    workdir_remove(&w);
    return rc;
}

bool shm_java_available(char *why, size_t size)
{
    struct jdk j;
    if (!find_jdk(&j, why, size))
        return false;
    return class_bytes || compile(&j, why, size) == 0;
}

/* ---- the protocol ---- */

/* A decimal u64, the whole of s; false on anything else or an overflow. */
static bool parse_u64(const char *s, uint64_t *v)
{
    if (!*s)
        return false;
    uint64_t x = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return false;
        x = x * 10 + (uint64_t)(*s - '0');
    }
    *v = x;
    return true;
}

/* "key=<u64>" as the next space-separated word of *cur, key as given. */
static bool take_kv(char **cur, const char *key, uint64_t *v)
{
    char *w = *cur;
    size_t klen = strlen(key);
    if (strncmp(w, key, klen) != 0 || w[klen] != '=')
        return false;
    char *sp = strchr(w, ' ');
    if (sp)
        *sp = '\0';
    bool ok = parse_u64(w + klen + 1, v);
    *cur = sp ? sp + 1 : w + strlen(w);
    return ok;
}

static bool parse_phase(char *s, int i, struct shm_java_result *r)
{
    size_t n = strlen(phase_names[i]);
    if (strncmp(s, "phase ", 6) != 0 || strncmp(s + 6, phase_names[i], n) != 0 || s[6 + n] != ' ')
        return false;
    char *cur = s + 7 + n;
    uint64_t ns;
    struct shm_phase *p = &r->phase[i];
    if (!take_kv(&cur, "ops", &p->ops) || !take_kv(&cur, "ns", &ns) ||
        !take_kv(&cur, "minflt", &p->minor_faults) || !take_kv(&cur, "majflt", &p->major_faults) ||
        !take_kv(&cur, "jit-ms", &r->jit_ms[i]) || !take_kv(&cur, "gcs", &r->gcs[i]) || *cur)
        return false;
    p->ns = (double)ns;
    p->done = true;
    return true;
}

static bool parse_line(char *s, int line, uint64_t writes, uint64_t rng_ns[2],
                       struct shm_java_result *r)
{
    uint64_t v, sink;
    char *cur;
    switch (line) {
    case 0: return strcmp(s, "rtmem-shm-java 2") == 0;
    case 1:
        if (strncmp(s, "runtime ", 8) != 0 || !s[8] || strlen(s + 8) >= sizeof(r->runtime))
            return false;
        strcpy(r->runtime, s + 8);
        return true;
    case 2:
        if (strncmp(s, "zero-method ", 12) != 0)
            return false;
        for (size_t i = 0; i < N_ZERO_METHODS; i++)
            if (strcmp(s + 12, zero_methods[i]) == 0) {
                snprintf(r->zero_method, sizeof(r->zero_method), "%s", zero_methods[i]);
                return true;
            }
        return false;
    case 3:
        if (strncmp(s, "rng ", 4) != 0)
            return false;
        cur = s + 4;
        return take_kv(&cur, "ops", &v) && v == writes && take_kv(&cur, "ns", &rng_ns[0]) &&
               take_kv(&cur, "max", &rng_ns[1]) && rng_ns[1] >= rng_ns[0] &&
               take_kv(&cur, "sink", &sink) && sink <= 1 && !*cur;
    case 4: return strncmp(s, "checksum ", 9) == 0 && parse_u64(s + 9, &r->checksum);
    case 5: return strcmp(s, "zeroed 1") == 0;
    case 6 + SHM_PHASES: return strcmp(s, "end") == 0;
    default: return line >= 6 && line < 6 + SHM_PHASES && parse_phase(s, line - 6, r);
    }
}

int shm_java_parse(const char *text, uint64_t writes, struct shm_java_result *r, char *why,
                   size_t size)
{
    static const char *const expected[] = {
        "rtmem-shm-java 2",
        "runtime <name> <version>",
        "zero-method <name>",
        "rng ops=<writes> ns=<fastest> max=<slowest> sink=<0|1>",
        "checksum <n>",
        "zeroed 1 (every byte 0 after the zeroings)",
        "phase touch ops= ns= minflt= majflt= jit-ms= gcs=",
        "phase writes ...",
        "phase zeroings ...",
        "phase sync ...",
        "phase teardown ...",
        "end",
    };
    memset(r, 0, sizeof(*r));
    uint64_t rng_ns[2] = { 0, 0 };
    int line = 0;
    const char *p = text;
    char buf[512];
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (line >= (int)(sizeof(expected) / sizeof(expected[0]))) {
            say(why, size, "the JVM's output, line %d: '%.*s' after the end", line + 1,
                (int)(len > 200 ? 200 : len), p);
            return -EPROTO;
        }
        bool ok = nl && len < sizeof(buf);
        if (ok) {
            memcpy(buf, p, len);
            buf[len] = '\0';
            ok = strlen(buf) == len && parse_line(buf, line, writes, rng_ns, r);
        }
        if (!ok) {
            say(why, size, "the JVM's output, line %d: '%.*s' is not '%s'%s", line + 1,
                (int)(len > 200 ? 200 : len), p, expected[line], nl ? "" : " (no newline)");
            return -EPROTO;
        }
        line++;
        p = nl + 1;
    }
    if (line < (int)(sizeof(expected) / sizeof(expected[0]))) {
        say(why, size, "the JVM's output ends at line %d: '%s' missing", line + 1, expected[line]);
        return -EPROTO;
    }
    r->rng_ns_per_write = writes ? (double)rng_ns[0] / (double)writes : 0;
    r->rng_spread_ns = writes ? (double)(rng_ns[1] - rng_ns[0]) / (double)writes : 0;
    return 0;
}

uint64_t shm_java_checksum(const uint8_t *bytes, size_t size)
{
    uint64_t h = 0xcbf29ce484222325u;
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        uint64_t word = 0;
        for (int k = 7; k >= 0; k--)
            word = word << 8 | bytes[i + (size_t)k];
        h = (h ^ word) * 0x100000001b3u;
    }
    for (; i < size; i++)
        h = (h ^ bytes[i]) * 0x100000001b3u;
    return h;
}

/* ---- a run ---- */

static int check_job(const struct shm_java_job *job, char *why, size_t size)
{
    if (!job->path || !*job->path) {
        say(why, size, "no path");
        return -EINVAL;
    }
    if (job->bytes == 0 || job->bytes > SHM_JAVA_MAX_BYTES) {
        say(why, size, "%llu bytes: Java maps 1 to %u bytes in one MappedByteBuffer",
            (unsigned long long)job->bytes, SHM_JAVA_MAX_BYTES);
        return -EINVAL;
    }
    if (job->writes > INT64_MAX || job->zeroings > INT64_MAX || job->zero_budget_ns > INT64_MAX) {
        say(why, size, "writes, zeroings and the budget: at most 2^63 - 1 (a Java long)");
        return -EINVAL;
    }
    if (job->zero_method) {
        size_t i = 0;
        while (i < N_ZERO_METHODS && strcmp(job->zero_method, zero_methods[i]) != 0)
            i++;
        if (i == N_ZERO_METHODS) {
            say(why, size, "zero method '%s': not one of bytes, direct, longs, unsafe, loop",
                job->zero_method);
            return -EINVAL;
        }
    }
    struct stat st;
    if (lstat(job->path, &st) == 0) {
        say(why, size, "%s: exists already: the job makes its own file", job->path);
        return -EEXIST;
    }
    if (errno != ENOENT) {
        int err = errno;
        say(why, size, "%s: %s", job->path, strerror(err));
        return -err;
    }
    return 0;
}

/* The ops the JVM must report, as asked. */
static int check_ops(const struct shm_java_job *job, uint64_t page, const struct shm_java_result *r,
                     char *why, size_t size)
{
    uint64_t want[SHM_PHASES] = { (job->bytes + page - 1) / page, job->writes, job->zeroings, 1,
                                  1 };
    for (int i = 0; i < SHM_PHASES; i++) {
        uint64_t got = r->phase[i].ops;
        bool ok = i == SHM_PHASE_ZEROINGS && job->zeroings == 0 ? got >= 3 : got == want[i];
        if (!ok) {
            say(why, size, "the JVM reported %llu ops for %s, not %llu", (unsigned long long)got,
                phase_names[i], (unsigned long long)want[i]);
            return -EPROTO;
        }
    }
    return 0;
}

int shm_java_run(const struct shm_java_job *job, struct shm_java_result *r, char *why, size_t size)
{
    memset(r, 0, sizeof(*r));
    struct jdk j;
    if (!find_jdk(&j, why, size))
        return -ENOENT;
    int rc = check_job(job, why, size);
    if (rc)
        return rc;
    if (!class_bytes && (rc = compile(&j, why, size)) != 0)
        return rc;

    /* The JVM runs in the private directory: the job's path absolute. */
    char path[PATH_MAX], cwd[PATH_MAX];
    if (job->path[0] == '/')
        rc = snprintf(path, sizeof(path), "%s", job->path) < (int)sizeof(path) ? 0 : -1;
    else
        rc = getcwd(cwd, sizeof(cwd)) &&
                     snprintf(path, sizeof(path), "%s/%s", cwd, job->path) < (int)sizeof(path)
                 ? 0
                 : -1;
    if (rc) {
        say(why, size, "%s: path too long", job->path);
        return -ENAMETOOLONG;
    }

    struct workdir w;
    if ((rc = workdir_make(&w, why, size)) != 0)
        return rc;
    const char *cls, *warm, *crash;
    struct capture *out = NULL, *err = NULL;
    if ((rc = workdir_file(&w, CLASS_NAME ".class", &cls)) != 0 ||
        (rc = workdir_file(&w, WARM_FILE, &warm)) != 0 ||
        (rc = workdir_file(&w, CRASH_LOG, &crash)) != 0) {
        say(why, size, "the private directory's path is too long");
        goto out;
    }
    if ((rc = write_file(cls, class_bytes, class_len)) != 0) {
        say(why, size, "%s: %s", cls, strerror(-rc));
        goto out;
    }
    /* The job's file: the JVM makes it (O_EXCL), we remove what is left. */
    int mapped_slot = tk_cleanup_add_file(path);

    long page = sysconf(_SC_PAGESIZE);
    char a_bytes[24], a_page[24], a_writes[24], a_zeroings[24], a_budget[24], a_seed[24];
    char a_crash[PATH_MAX + 16], a_tmp[PATH_MAX + 24];
    snprintf(a_bytes, sizeof(a_bytes), "%llu", (unsigned long long)job->bytes);
    snprintf(a_page, sizeof(a_page), "%ld", page > 0 ? page : 4096);
    snprintf(a_writes, sizeof(a_writes), "%llu", (unsigned long long)job->writes);
    snprintf(a_zeroings, sizeof(a_zeroings), "%llu", (unsigned long long)job->zeroings);
    snprintf(a_budget, sizeof(a_budget), "%llu", (unsigned long long)job->zero_budget_ns);
    snprintf(a_seed, sizeof(a_seed), "%llu", (unsigned long long)job->seed);
    snprintf(a_crash, sizeof(a_crash), "-XX:ErrorFile=%s", crash);
    snprintf(a_tmp, sizeof(a_tmp), "-Djava.io.tmpdir=%s", w.path);
    /* A bounded heap, touched at start (its faults before the phases); the
     * serial collector (no collector threads); no hsperfdata file in /tmp;
     * no core file; direct buffers bounded (the program's are 64 KiB). */
    char *argv[] = { j.java,
                     "-Xms64m",
                     "-Xmx64m",
                     "-XX:+AlwaysPreTouch",
                     "-XX:+UseSerialGC",
                     "-XX:MaxMetaspaceSize=64m",
                     "-XX:MaxDirectMemorySize=16m",
                     "-XX:-UsePerfData",
                     "-XX:-CreateCoredumpOnCrash",
                     a_crash,
                     a_tmp,
                     "-cp",
                     w.path,
                     CLASS_NAME,
                     path,
                     a_bytes,
                     a_page,
                     a_writes,
                     a_zeroings,
                     a_budget,
                     a_seed,
                     (char *)(job->zero_method ? job->zero_method : SHM_JAVA_ZERO_DEFAULT),
                     NULL };
    uint64_t timeout = job->timeout_ns ? job->timeout_ns : DEFAULT_TIMEOUT_NS;
    out = malloc(sizeof(*out));
    err = malloc(sizeof(*err));
    struct proc_end end;
    if (!out || !err) {
        rc = -ENOMEM;
        say(why, size, "out of memory");
    } else if ((rc = run_child(argv, w.path, timeout, out, err, &end)) != 0) {
        say(why, size, "cannot start %s: %s", j.java, strerror(-rc));
    } else if ((rc = describe_end("the JVM", &end, timeout, err, why, size)) == 0 &&
               (rc = shm_java_parse(out->text, job->writes, r, why, size)) == 0) {
        rc = check_ops(job, (uint64_t)(page > 0 ? page : 4096), r, why, size);
    }
    if (rc)
        memset(r, 0, sizeof(*r));
    (void)unlink(path); /* the JVM's, or nothing there */
    tk_cleanup_forget_file(mapped_slot);
out:
    free(out);
    free(err);
    workdir_remove(&w);
    return rc;
}
