/*
 * Bench kit: a user's program started with a library preloaded, and waited
 * for (launch.h).
 */
#include "common/launch.h"
#include "common/out.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int tk_preload_find(const char *file, const char *env_var, char *buf, size_t size)
{
    const char *env = getenv(env_var);
    if (env && *env) {
        snprintf(buf, size, "%s", env);
        return access(buf, R_OK) == 0 ? 0 : -1;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            if (snprintf(buf, size, "%s/../%s/rtmem/%s", exe, RTMEM_INSTALL_LIBDIR, file) <
                    (int)size &&
                access(buf, R_OK) == 0)
                return 0;
        }
    }
    snprintf(buf, size, "%s/%s", RTMEM_PRELOAD_BUILD_DIR, file);
    return access(buf, R_OK) == 0 ? 0 : -1;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The program's process, after fork: the library preloaded, the caller's
 * environment, then exec. Returns only on failure (the exit status). */
static int exec_program(const struct tk_launch *l, pid_t parent)
{
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
        return 126; /* the tool died before: no one would wait for it */
    char preload[8192];
    const char *old = getenv("LD_PRELOAD");
    if (old && *old)
        snprintf(preload, sizeof(preload), "%s:%s", l->lib, old);
    else
        snprintf(preload, sizeof(preload), "%s", l->lib);
    if (setenv("LD_PRELOAD", preload, 1) != 0 || (l->set_env && l->set_env(l->arg, getpid()) != 0))
        return 126;
    execvp(l->argv[0], l->argv);
    int err = errno;
    fprintf(stderr, "%s: cannot run %s: %s\n", l->prog, l->argv[0], strerror(err));
    return err == ENOENT ? 127 : 126;
}

/* Waits for the program, passing on the signals meant for it, and calls
 * l->at at its time. */
static void wait_program(struct tk_launch *l, const sigset_t *waited, uint64_t start)
{
    bool done_at = l->at == NULL;
    for (;;) {
        int st;
        pid_t got = waitpid(l->pid, &st, WNOHANG);
        if (got == l->pid) {
            l->status = st;
            l->status_known = true;
            return;
        }
        if (got < 0 && errno != EINTR) {
            l->status_known = false; /* reaped by someone else: how it ended is not known */
            return;
        }
        struct timespec wait = { 1, 0 };
        if (!done_at) {
            uint64_t now = mono_ns(), at = start + l->at_ns;
            if (now >= at) {
                l->at(l->arg, l->pid);
                done_at = true;
                continue;
            }
            uint64_t left = at - now;
            if (left < 1000000000u)
                wait = (struct timespec){ 0, (long)left };
        }
        siginfo_t si;
        int sig = sigtimedwait(waited, &si, &wait);
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT) {
            l->signaled_by_user = true;
            /* the terminal's reaches the program by itself, when the
             * program is still in the tool's process group */
            if (si.si_code != SI_KERNEL || getpgid(l->pid) != getpgrp())
                kill(l->pid, sig);
        }
    }
}

int tk_launch_run(struct tk_launch *l)
{
    l->status_known = false;
    l->signaled_by_user = false;
    sigset_t waited, old;
    sigemptyset(&waited);
    sigaddset(&waited, SIGINT);
    sigaddset(&waited, SIGTERM);
    sigaddset(&waited, SIGHUP);
    sigaddset(&waited, SIGQUIT);
    sigaddset(&waited, SIGCHLD);
    sigprocmask(SIG_BLOCK, &waited, &old);
    if (l->prepare && l->prepare(l->arg) != 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        return -1;
    }
    /* A SIGCHLD ignored by whoever started the tool would reap the program
     * by itself, and its status would be lost. */
    struct sigaction dfl = { .sa_handler = SIG_DFL }, old_chld;
    sigaction(SIGCHLD, &dfl, &old_chld);
    pid_t parent = getpid();
    fflush(NULL);
    uint64_t start = mono_ns();
    l->pid = fork();
    if (l->pid == 0) {
        sigaction(SIGCHLD, &old_chld, NULL); /* the program gets what the tool got */
        sigprocmask(SIG_SETMASK, &old, NULL);
        _exit(exec_program(l, parent));
    }
    if (l->pid < 0) {
        fprintf(stderr, "%s: fork: %s\n", l->prog, strerror(errno));
        sigaction(SIGCHLD, &old_chld, NULL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return -1;
    }
    wait_program(l, &waited, start);
    l->seconds = (double)(mono_ns() - start) / 1e9;
    /* what came meanwhile and was passed on is not for the tool */
    struct timespec none = { 0, 0 };
    while (sigtimedwait(&waited, NULL, &none) > 0)
        ;
    sigaction(SIGCHLD, &old_chld, NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return 0;
}

void tk_launch_json(struct tk_json *j, int argc, char **argv, bool status_known, int status)
{
    tk_json_key(j, "argv");
    tk_json_begin_array_compact(j);
    for (int i = 0; i < argc; i++)
        tk_json_string(j, argv[i]);
    tk_json_end_array(j);
    tk_json_kv_bool(j, "status_known", status_known);
    tk_json_kv_int(j, "exit_status", status_known && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    tk_json_kv_int(j, "signal", status_known && WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int tk_launch_exit_status(const struct tk_launch *l)
{
    if (!l->status_known)
        return 1;
    if (WIFEXITED(l->status))
        return WEXITSTATUS(l->status);
    if (WIFSIGNALED(l->status))
        return 128 + WTERMSIG(l->status);
    return 1;
}
