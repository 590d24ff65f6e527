/*
 * Bench kit: work in a child process under a watchdog.
 *
 * The tools run users' allocators, which crash and hang. tk_child_run runs
 * one piece of that work in a child process and waits for it:
 *
 *   - the child leads its own process group, so the watchdog kills
 *     whatever it started too, and a Ctrl-C at the terminal reaches the
 *     parent only, whose cleanup (cleanup.h) kills and reaps the child;
 *   - the child marks progress (tk_child_beat) in memory shared with the
 *     parent; when no mark is newer than the timeout, the parent kills the
 *     group with SIGKILL;
 *   - the parent always reaps the child, and says how it ended: its exit
 *     status, the signal that killed it, or the timeout.
 *
 * The child's results go to memory both processes share (tk_shared_alloc),
 * written as it goes, so whatever it finished before dying is kept. The
 * child ends with _exit: it never flushes the parent's stdio buffers (they
 * are flushed before the fork) or runs its exit handlers.
 *
 * The parent waits in sigtimedwait, not in a polling loop: it wakes when
 * the child ends, or when the latest progress mark runs out. While it
 * waits it can run at a SCHED_FIFO priority above the child's
 * (watch_priority), so that a child spinning at a real-time priority on
 * the parent's CPU cannot keep the watchdog from running.
 */
#ifndef RTMEM_TOOLS_CHILD_H
#define RTMEM_TOOLS_CHILD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A progress mark: the CLOCK_MONOTONIC time of the child's latest progress,
 * in shared memory. */
typedef _Atomic uint64_t tk_child_mark;

struct tk_child_opts {
    double timeout_s;   /* no progress for this long: killed; 0: no limit */
    int watch_priority; /* SCHED_FIFO priority while waiting; 0: unchanged */
    bool stdout_aside;  /* the child calls tk_stdout_aside first */
};

enum tk_child_end {
    TK_CHILD_EXITED,      /* returned or exited: code is its exit status */
    TK_CHILD_KILLED,      /* died of signal code */
    TK_CHILD_TIMED_OUT,   /* no progress within the timeout: killed */
    TK_CHILD_NOT_STARTED, /* fork failed: code is its errno */
};

struct tk_child_result {
    enum tk_child_end end;
    int code;
    double seconds; /* from the fork to the child's end */
};

/* Runs fn(arg) in a child process and waits for it as above; the child's
 * exit status is fn's return value. mark (shared memory, or NULL for none)
 * is set to the start time before the fork. Fills *r. */
void tk_child_run(int (*fn)(void *arg), void *arg, tk_child_mark *mark,
                  const struct tk_child_opts *o, struct tk_child_result *r);

/* Moves standard output aside, for a process that runs code it does not
 * own (a plugin's): file descriptor 1, and so stdout, then write to
 * standard error, and the stream returned writes where standard output
 * went. Later calls return the same stream; stdout, with nothing moved,
 * if it cannot be done. */
FILE *tk_stdout_aside(void);
/* The stream tk_stdout_aside returned, or stdout before it is called. */
FILE *tk_child_stdout(void);

/* Marks progress; for the child, between pieces of its work. */
void tk_child_beat(tk_child_mark *mark);

/* "SIGSEGV (Segmentation fault)" for a signal, into buf. */
const char *tk_signal_describe(int sig, char *buf, size_t size);

/* Memory shared with the children forked later: bytes, zeroed and touched.
 * NULL if mmap fails. Give it back with tk_shared_free. */
void *tk_shared_alloc(size_t bytes);
void tk_shared_free(void *p, size_t bytes);

/* Whether dir (its first dir_len bytes; empty: the current directory)
 * holds an executable regular file named name; its path into out
 * (PATH_MAX bytes). */
bool tk_executable_in(const char *dir, size_t dir_len, const char *name, char *out);
/* The first executable named name on $PATH, into out (PATH_MAX bytes):
 * true if found. O(entries of PATH) stat calls. */
bool tk_on_path(const char *name, char *out);

#endif /* RTMEM_TOOLS_CHILD_H */
