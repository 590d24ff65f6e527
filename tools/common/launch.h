/*
 * Bench kit: a user's program started with one of rtmem's interposer
 * libraries preloaded (rtmem trace, rtmem run), and waited for.
 *
 * The program runs in a child of the tool, which exec()s it with the
 * library first in LD_PRELOAD and the environment the caller's callback
 * sets. While it runs, the tool waits for it and for the signals that
 * would end the tool: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to the tool
 * alone (kill) are passed on to the program; one from the terminal reaches
 * the program by itself (its process group), and the tool waits for it to
 * end. A program still running when the tool is killed gets SIGTERM
 * (PR_SET_PDEATHSIG). Those signals are blocked (waited for, never
 * handled) from before the caller's prepare step until the program has
 * ended, so that none can end the tool between the two.
 */
#ifndef RTMEM_TOOLS_LAUNCH_H
#define RTMEM_TOOLS_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The library named file (librtmem-trace.so, librtmem-malloc.so) into buf:
 * the path in the environment variable env_var, if set; else beside an
 * installed rtmem (<bindir>/../<libdir>/rtmem/file); else in the build
 * tree. 0, or -1 when none is readable (buf holds the last path tried).
 */
int tk_preload_find(const char *file, const char *env_var, char *buf, size_t size);

struct tk_launch {
    /* Set by the caller. */
    const char *prog; /* the tool's name, for messages */
    const char *lib;  /* the library to preload: first in LD_PRELOAD */
    char **argv;      /* the program and its arguments (execvp) */
    /* Optional, each called with arg: */
    int (*prepare)(void *arg);            /* once the signals are blocked, before the
                                           * fork: 0, or -1 (reported) to give up */
    int (*set_env)(void *arg, pid_t pid); /* in the child, before exec (pid: its own):
                                           * 0, or -1 (the child exits 126) */
    void (*at)(void *arg, pid_t pid);     /* once, at_ns after the start, while the
                                           * program runs */
    uint64_t at_ns;
    void *arg;
    /* Set by tk_launch_run. */
    pid_t pid;
    int status;            /* the program's wait status, when status_known */
    bool status_known;     /* false: someone else reaped it */
    bool signaled_by_user; /* SIGINT, SIGTERM, SIGHUP or SIGQUIT came while it ran */
    double seconds;        /* from the fork to its end */
};

/*
 * Runs l's program as the header says and waits for its end. Returns 0
 * once it has ended; -1 when prepare gave up or the fork failed (reported
 * on stderr), nothing started then. A program that cannot be executed
 * exits 127 (not found) or 126, saying why on stderr.
 */
int tk_launch_run(struct tk_launch *l);

/* The program's members of a tool's JSON, into an open object: "argv",
 * "status_known", "exit_status" (-1 unless it exited), "signal" (0: none),
 * from a wait status known or not. */
struct tk_json;
void tk_launch_json(struct tk_json *j, int argc, char **argv, bool status_known, int status);

/* The exit status a tool that ran l's program ends with, as a shell gives
 * it: the program's, or 128 + the signal that ended it; 1 when unknown. */
int tk_launch_exit_status(const struct tk_launch *l);

#endif /* RTMEM_TOOLS_LAUNCH_H */
