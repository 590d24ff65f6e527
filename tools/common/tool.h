/*
 * Bench kit: the driver every rtmem subcommand runs on.
 *
 * A tool is a folder tools/rtmem/<tool>/ with a file per phase, one options
 * table (opt.h) and one struct tk_tool, which rtmem's main lists. The
 * driver does the same things for every tool, in this order:
 *
 *   1. options: the table checked (tk_opt_check: a bad table is an internal
 *      error, exit 1), the defaults, then the command line through it;
 *      -h/--help prints the synopsis (tk_tool_help); then the checks of
 *      combinations: --no-rt with --prio is refused for every tool, then
 *      the tool's own. Bad usage exits 2.
 *   2. setup: the tool's own (load the allocators, size its buffers); may
 *      end the run with an exit status (reported by the tool).
 *   3. the result file (--json), opened before the run so that a name that
 *      cannot be written is bad usage, found before minutes of measuring
 *      (result.h: a temporary file, renamed into place only on success).
 *   4. run: the tool measures and checks, printing its header and progress.
 *      It returns TK_RUN_PASSED, TK_RUN_FAILED (a verdict was reached: a
 *      check failed, an allocator crashed) or TK_RUN_ABORTED (no verdict;
 *      the tool reported why). The driver times it.
 *   5. report: the tool's human report on standard output, unless aborted.
 *   6. JSON: when a verdict was reached and the report could be written,
 *      the envelope below and the tool's members go to the result file,
 *      which is then committed: "results written to FILE".
 *   7. teardown: the tool gives back what setup took, whatever happened.
 *
 * Exit status (args.h): 0 passed, 1 a functional failure or a run-time
 * error, 2 bad usage; a tool that runs a program may exit with the
 * program's status instead (tk_session.exit_status).
 *
 * The JSON envelope, the same members first in every tool's document:
 *   "schema"        "rtmem-<tool>/<layout version>"
 *   "tool"          the subcommand ("bench")
 *   "version"       rtmem's version (rtmem/version.h)
 *   "command_line"  the arguments, from "rtmem" on, as given
 *   "machine"       CPU, kernel, libc (describe.h)
 *   "timer"         the timer, its resolution and overhead (timer.h, describe.h)
 *   "real_time"     the real-time setup the measuring process was granted
 *                   (rt.h), or null if the tool has none on record
 *   "seed"          the seed of the run's random draws, or null
 *   "seconds"       how long the run (step 4) took
 *   "passed"        every check passed (the exit status was 0)
 * then the tool's own members (docs/json.md lists them, per tool).
 */
#ifndef RTMEM_TOOLS_TOOL_H
#define RTMEM_TOOLS_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/args.h"
#include "common/describe.h"
#include "common/opt.h"
#include "common/out.h"
#include "common/rt.h"
#include "common/timer.h"

/* What a tool's run returns. */
enum tk_run_end {
    TK_RUN_PASSED,  /* a verdict: every check passed */
    TK_RUN_FAILED,  /* a verdict: a check or an allocator failed (reported) */
    TK_RUN_ABORTED, /* no verdict: the run could not be done (reported) */
};

/* The envelope's measured members, as the tool has them (tk_tool.facts). */
struct tk_facts {
    const struct tk_machine *machine;
    const struct tk_timer *timer;
    const struct tk_rt_state *rt; /* NULL: no record */
    bool has_seed;
    uint64_t seed;
};

struct tk_tool;

/* One run of a tool: what the driver and the tool's phases share. */
struct tk_session {
    const struct tk_tool *tool;
    struct tk_args cli; /* "rtmem <tool>": starts every message */
    int argc;           /* the subcommand's arguments, argv[0] its name */
    char **argv;
    void *opts;                 /* the tool's options struct, parsed */
    struct tk_opt_parse parsed; /* which options were given */
    void *state;                /* the tool's own, set by its setup */
    int cmd_argc;               /* a command after "--" (tk_tool.command_usage); 0: none */
    char **cmd_argv;
    int n_operands; /* arguments that are no option (tk_tool.operands_usage) */
    char **operands;
    /* Starts the driver's own lines in the report ("results written to"):
     * "" by default; a tool whose report has another layout sets it. */
    const char *comment;
    double seconds; /* the run's duration, once run */
    /* A tool whose exit status is its command's (rtmem run) sets it in its
     * run: when a verdict was reached and its results written, the driver
     * exits with it instead of 0 or 1. -1 (the default): not set. */
    int exit_status;
};

struct tk_tool {
    const char *name;          /* the subcommand: "bench"; its manual docs/<name>.md */
    const char *summary;       /* one line, no final period: `rtmem --help`, and its own */
    const char *schema;        /* of its JSON: "rtmem-bench/2" */
    const char *bytes_example; /* byte counts in messages: "4096, 64K, 64M" */
    /* A tool that runs a command: what --help's usage line shows after
     * the options ("[-- PROGRAM [ARGS...]]"); the arguments after "--" are
     * the session's cmd_argc, cmd_argv. NULL: none. */
    const char *command_usage;
    /* A tool that takes operands (arguments that are no option): what
     * --help's usage line shows for them ("FILE"); they are the session's
     * operands. NULL: an operand is bad usage. */
    const char *operands_usage;
    /* The report, and the driver's own lines, on standard error instead of
     * standard output: a tool that runs a program whose standard output
     * must stay the program's alone (rtmem run). */
    bool report_on_stderr;
    /* The tool draws its own progress on standard error (memcheck): the
     * kit's line (progress.h) stays off. */
    bool own_progress;

    const struct tk_opt *opts; /* the options table */
    size_t n_opts;
    size_t opts_size;        /* sizeof the options struct */
    const void *defaults;    /* an options struct holding the defaults */
    size_t json_path_offset; /* of the const char * --json field; TK_NO_JSON: none */

    /* --help, after the options: a line or two that only the run time
     * knows (the names --kinds takes); may be NULL. The rest is the
     * manual's. */
    void (*help_notes)(FILE *f);
    /* Combinations of options the table cannot check: 0, or -1 after
     * tk_args_bad. May be NULL. */
    int (*check)(struct tk_session *s);

    /* The phases (see above). setup returns 0 or an exit status (reported);
     * teardown may be NULL. */
    int (*setup)(struct tk_session *s);
    enum tk_run_end (*run)(struct tk_session *s);
    void (*report)(const struct tk_session *s, FILE *f);
    void (*facts)(const struct tk_session *s, struct tk_facts *out);
    void (*json)(const struct tk_session *s, struct tk_json *j);
    void (*teardown)(struct tk_session *s);
};

#define TK_NO_JSON ((size_t)-1)

/* Runs tool t on argv (argv[0] the subcommand's name) through the steps
 * above. Returns the exit status. */
int tk_tool_main(const struct tk_tool *t, int argc, char **argv);

/* The envelope's members (see above), into an open object. */
void tk_envelope_json(struct tk_json *j, const struct tk_session *s, bool passed);

/* --help of tool t on f, a synopsis: the usage line and summary, each
 * option on a line (opt.h), the notes, the exit status and where the
 * manual is: <prefix>/share/doc/rtmem/<name>.md beside an installed
 * binary, else docs/<name>.md of the source tree it was built from. */
void tk_tool_help(FILE *f, const struct tk_tool *t);

/* <the binary's directory>/../share/<rel> into buf: 0, or -1 when
 * /proc/self/exe cannot be read or the name does not fit. */
int tk_share_path(char *buf, size_t size, const char *rel);

#endif /* RTMEM_TOOLS_TOOL_H */
