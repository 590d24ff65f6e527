/*
 * Bench kit: a run of this very program under valgrind, for the tools that
 * count instructions (wcet's cases, replay's calls). Valgrind interprets the
 * machine code, so its counts are those of the binary as built, exactly,
 * every run: the noise-free figures a noisy machine's timings cannot give.
 *
 * The run happens in a private directory under $TMPDIR, made with mkdtemp
 * and registered with cleanup.h (a Ctrl-C removes it): valgrind's output
 * file, the child's standard output and its log (standard error) live
 * there, and valgrind's own temporary files too (TMPDIR points there for
 * it). The child runs /proc/PID/exe (the same file even if it was rebuilt
 * since), with no standard input, no core file and --vgdb=no (no FIFOs a
 * killed valgrind would leave behind), in a process group of its own under
 * tk_child_run's watchdog; it is always reaped.
 */
#ifndef RTMEM_TOOLS_GRIND_H
#define RTMEM_TOOLS_GRIND_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tk_grind {
    char valgrind[PATH_MAX]; /* its path */
    char version[64];        /* "valgrind-3.19.0", or "" */
    char dir[PATH_MAX - 64]; /* the private directory (room for the names in it) */
    char out[PATH_MAX];      /* valgrind's output file (--<tool>-out-file) */
    char stdout_path[PATH_MAX];
    char log[PATH_MAX];
    char exe[PATH_MAX]; /* /proc/PID/exe */
    int dir_slot, slot[3];
    bool made;
    double seconds; /* the last run's, from the fork to the end */
};

/* Whether a counted run can be made here: not in a sanitized build (it
 * cannot run under valgrind), not under an emulator (the valgrind found
 * would be the host's), valgrind on $PATH. 0 (its path and version in g),
 * or -1 with why. */
int tk_grind_find(struct tk_grind *g, char *why, size_t why_len);

/* Makes the private directory ("rtmem-<tool>-XXXXXX") and registers it
 * and its files for removal. 0, or -1 with why. */
int tk_grind_files(struct tk_grind *g, const char *tool, char *why, size_t why_len);

/* Removes the directory with whatever is in it, and forgets it. */
void tk_grind_remove(struct tk_grind *g);

/* Runs valgrind with vg_args (its options, the tool and its output file
 * included) on this program with args (args[0] the subcommand), the
 * environment variable env set to value (NULL: none), its standard output
 * into g->stdout_path and its standard error into g->log; waits at most
 * timeout_s without progress. 0 when it exited with status 0, else -1 with
 * why (how it ended, and the log's last line). */
int tk_grind_run(struct tk_grind *g, const char *const *vg_args, const char *const *args,
                 const char *env, const char *value, double timeout_s, char *why, size_t why_len);

/* The "--callgrind-out-file=<g->out>" option, into buf. */
const char *tk_grind_out_option(const struct tk_grind *g, char *buf, size_t size);

/* The last line of the log, into buf ("" when none). */
void tk_grind_log_tail(const struct tk_grind *g, char *buf, size_t size);

/* From a callgrind output file: the event's figure on its last "totals:"
 * line (the whole run's, or the last part's). 0, or -1 when the file or
 * the event is missing. */
int tk_grind_totals(const char *path, const char *event, uint64_t *out);

#endif /* RTMEM_TOOLS_GRIND_H */
