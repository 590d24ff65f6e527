/* Bench kit: work in a child process under a watchdog (child.h). */
#include "common/child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/timer.h"

/* The process's own standard output once tk_stdout_aside moved it. */
static FILE *own_out;

FILE *tk_stdout_aside(void)
{
    if (own_out)
        return own_out;
    fflush(stdout);
    int fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        if (f)
            fclose(f);
        else if (fd >= 0)
            close(fd);
        return stdout; /* left as it was */
    }
    own_out = f;
    return f;
}

FILE *tk_child_stdout(void)
{
    return own_out ? own_out : stdout;
}

void tk_child_beat(tk_child_mark *mark)
{
    if (mark)
        atomic_store_explicit(mark, tk_clock_ns(), memory_order_relaxed);
}

const char *tk_signal_describe(int sig, char *buf, size_t size)
{
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev)
        snprintf(buf, size, "SIG%s (%s)", abbrev, strsignal(sig));
    else
        snprintf(buf, size, "signal %d", sig);
    return buf;
}

void *tk_shared_alloc(size_t bytes)
{
    void *p =
        mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    memset(p, 0, bytes);
    return p;
}

void tk_shared_free(void *p, size_t bytes)
{
    if (p)
        (void)munmap(p, bytes ? bytes : 1);
}

/* The watchdog's scheduling while it waits, and back. */
struct watch_sched {
    bool changed;
    int policy;
    struct sched_param param;
};

static void watch_raise(int priority, struct watch_sched *ws)
{
    ws->changed = false;
    if (priority <= 0)
        return;
    ws->policy = sched_getscheduler(0);
    if (ws->policy < 0 || sched_getparam(0, &ws->param) != 0)
        return;
    struct sched_param sp = { .sched_priority = priority };
    /* Refused (no privilege): the watchdog still runs, if later. */
    ws->changed = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
}

static void watch_lower(const struct watch_sched *ws)
{
    if (ws->changed)
        (void)sched_setscheduler(0, ws->policy, &ws->param);
}

/* Has the child ended? Leaves it unreaped (a zombie keeps its process
 * group's id from being reused). */
static bool child_ended(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

/* Waits for the child's end or its timeout. Returns true if it timed out. */
static bool wait_child(pid_t pid, tk_child_mark *mark, uint64_t start_ns, double timeout_s)
{
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    uint64_t timeout_ns = (uint64_t)(timeout_s * 1e9);
    for (;;) {
        if (child_ended(pid))
            return false;
        uint64_t now = tk_clock_ns();
        uint64_t last = mark ? atomic_load_explicit(mark, memory_order_relaxed) : start_ns;
        if (last < start_ns)
            last = start_ns;
        /* Without a limit, wake now and then anyway: a lost SIGCHLD costs
         * a second, never a hang. */
        uint64_t wait_ns = 1000000000u;
        if (timeout_ns) {
            if (now >= last + timeout_ns)
                return true;
            wait_ns = last + timeout_ns - now;
        }
        struct timespec ts = { .tv_sec = (time_t)(wait_ns / 1000000000u),
                               .tv_nsec = (long)(wait_ns % 1000000000u) };
        (void)sigtimedwait(&chld, NULL, &ts);
    }
}

void tk_child_run(int (*fn)(void *arg), void *arg, tk_child_mark *mark,
                  const struct tk_child_opts *o, struct tk_child_result *r)
{
    memset(r, 0, sizeof(*r));
    tk_cleanup_install();
    /* An ignored SIGCHLD would reap the child behind our back. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    (void)sigaction(SIGCHLD, &dfl, NULL);

    uint64_t start = tk_clock_ns();
    if (mark)
        atomic_store_explicit(mark, start, memory_order_relaxed);
    fflush(stdout);
    fflush(stderr);

    sigset_t old, waiting;
    tk_cleanup_block(&old);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        (void)setpgid(0, 0);
        /* Killed with the parent: a SIGKILL gives the parent no chance to
         * reap it, and it must not run on, holding what it measures. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(127); /* the parent is gone: no one reads it */
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (o->stdout_aside)
            (void)tk_stdout_aside();
        int status = fn(arg);
        fflush(stdout);
        fflush(tk_child_stdout());
        fflush(stderr);
        _exit(status & 0xff);
    }
    if (pid < 0) {
        r->end = TK_CHILD_NOT_STARTED;
        r->code = errno;
        sigprocmask(SIG_SETMASK, &old, NULL);
        return;
    }
    (void)setpgid(pid, pid); /* both sides: whichever runs first */
    int slot = tk_cleanup_add_child(pid);
    /* Fatal signals may come now (their cleanup reaps the child); SIGCHLD
     * stays blocked for sigtimedwait. */
    waiting = old;
    sigaddset(&waiting, SIGCHLD);
    sigprocmask(SIG_SETMASK, &waiting, NULL);

    struct watch_sched ws;
    watch_raise(o->watch_priority, &ws);
    bool timed_out = wait_child(pid, mark, start, o->timeout_s);
    watch_lower(&ws);

    /* Whatever the child started dies with it, then it is reaped. */
    (void)kill(-pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    r->seconds = (double)(tk_clock_ns() - start) / 1e9;
    tk_cleanup_block(NULL);
    tk_cleanup_forget_child(slot);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (timed_out) {
        r->end = TK_CHILD_TIMED_OUT;
    } else if (WIFSIGNALED(status)) {
        r->end = TK_CHILD_KILLED;
        r->code = WTERMSIG(status);
    } else {
        r->end = TK_CHILD_EXITED;
        r->code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    }
}

bool tk_executable_in(const char *dir, size_t dir_len, const char *name, char *out)
{
    if (dir_len == 0) /* an empty PATH entry: the current directory */
        dir = ".", dir_len = 1;
    int n = snprintf(out, PATH_MAX, "%.*s/%s", (int)dir_len, dir, name);
    struct stat st;
    return n > 0 && n < PATH_MAX && stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
           access(out, X_OK) == 0;
}

bool tk_on_path(const char *name, char *out)
{
    const char *path = getenv("PATH");
    if (!path)
        return false;
    for (const char *p = path;; p++) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (tk_executable_in(p, len, name, out))
            return true;
        if (!end)
            return false;
        p = end;
    }
}
