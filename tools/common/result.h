/*
 * Bench kit: result files that a failed or interrupted run never damages.
 *
 * Users run the tools as root and name the result file themselves, so the
 * rule is that a tool never deletes, truncates or overwrites anything it did
 * not create, and that an existing file is replaced only by a complete one:
 *
 *   - a regular file, or a name that does not exist yet: the results go to a
 *     new temporary file in the same directory (created with O_EXCL, named
 *     ".<name>.XXXXXX"), which tk_result_commit flushes, fsyncs and renames
 *     over the name. Until then the name is untouched; tk_result_abandon,
 *     a failure or a fatal signal (cleanup.h) removes the temporary file and
 *     nothing else. The new file keeps the mode (and, for root, the owner)
 *     of the one it replaces; a new name gets 0666 less the umask;
 *   - a symbolic link to a regular file: the same, at the link's target (the
 *     link stays). Except a link (any component of the path) in a sticky
 *     directory writable by everyone (/tmp) that belongs neither to this
 *     user nor to the directory's owner: another user may have planted it,
 *     so it is refused, as the kernel's fs.protected_symlinks would, whatever
 *     the machine's setting;
 *   - the file standard output or standard error already is (--json
 *     /dev/stdout, or the name stdout is redirected to): written into that
 *     stream, in order with the report;
 *   - anything else that is not a directory (a FIFO, a terminal, a device
 *     such as /dev/null or /dev/full, a pipe through /dev/fd/N): opened for
 *     writing as it is, never created, truncated or removed. A write error
 *     there fails the run.
 *
 * The first write error is kept with its errno, so a full disk is reported
 * as "No space left on device", whichever write met it.
 *
 *     struct tk_result r;
 *     if (tk_result_open(&r, "rtmem bench", path) != 0) ... bad usage (reported)
 *     ... write to r.f; on failure: tk_result_abandon(&r) ...
 *     if (tk_result_commit(&r, "rtmem bench") != 0) ... failed (reported)
 */
#ifndef RTMEM_TOOLS_RESULT_H
#define RTMEM_TOOLS_RESULT_H

#include <limits.h>
#include <stdio.h>

enum tk_result_how {
    TK_RESULT_TEMP,   /* temporary file, renamed over target on commit */
    TK_RESULT_DIRECT, /* a non-regular file, written in place */
    TK_RESULT_STREAM, /* stdout or stderr itself */
};

struct tk_result {
    FILE *f;          /* where the results are written; NULL once done */
    const char *path; /* as the user gave it, for messages */
    enum tk_result_how how;
    char target[PATH_MAX]; /* TK_RESULT_TEMP: the name the rename replaces */
    char tmp[PATH_MAX];    /* TK_RESULT_TEMP: the temporary file */
    int fd;                /* the file f writes to; -1 for TK_RESULT_STREAM */
    int err;               /* errno of the first failed write, 0 if none */
    int cleanup_slot;      /* the temporary file's entry in cleanup.h, or -1 */
};

/* Opens path for results as above, installing the cleanup handler first.
 * Returns 0, or -1 after reporting "<prog>: cannot write '<path>': <why>";
 * nothing is left behind then. */
int tk_result_open(struct tk_result *r, const char *prog, const char *path);

/* Completes the results: flush (and, for a temporary file, fsync and
 * rename into place). Returns 0, or -1 after reporting "<prog>: writing
 * '<path>' failed: <reason>"; the temporary file is then removed and an
 * existing file at path is untouched. */
int tk_result_commit(struct tk_result *r, const char *prog);

/* Gives the results up: closes them and removes the temporary file; the
 * name is untouched. Nothing for a result already committed or abandoned. */
void tk_result_abandon(struct tk_result *r);

/* Flushes standard output, the report. Returns 0, or -1 after reporting,
 * once per process, "<prog>: writing to standard output failed: <reason>"
 * (the reason left out when the failed write was an earlier, buffered one
 * whose errno is gone). */
int tk_stdout_check(const char *prog);

#endif /* RTMEM_TOOLS_RESULT_H */
