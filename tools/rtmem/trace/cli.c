/*
 * `rtmem trace`: its options table, --help, the combinations of options
 * the table cannot check, the set-up (where librtmem-trace is) and
 * trace_tool, what the bench kit's driver runs (common/tool.h).
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cmd.h"
#include "common/launch.h"
#include "common/opt.h"
#include "common/tool.h"
#include "trace.h"

const char *const trace_children_choices[] = { "none", "follow", NULL };
const char *const trace_signal_choices[] = { "usr2", "usr1", "none", NULL };

#define NS_PER_S     1000000000u
#define MAX_AFTER_NS ((uint64_t)7 * 24 * 3600 * NS_PER_S)

static const struct trace_opts defaults = {
    .output = "rtmem.trace",
};

#define F(field) TK_FIELD(struct trace_opts, field)

static const struct tk_opt options[] = {
    { "output", TK_OPT_FILE, "FILE", "the program's trace (default rtmem.trace)", F(output),
      .letter = 'o' },
    { "children", TK_OPT_CHOICE, "HOW", "the program's children: none (not traced) or follow",
      F(children), .choices = trace_children_choices },
    { "after", TK_OPT_TIME, "T", "mark a phase T after the start (bare number: s)", F(after_ns),
      .lo = 1, .hi = MAX_AFTER_NS, .unit_ns = NS_PER_S },
    { "mark-signal", TK_OPT_CHOICE, "SIG", "the phase-marking signal: usr2 (default), usr1, none",
      F(mark_signal), .choices = trace_signal_choices },
    { "show", TK_OPT_FILE, "FILE", "what the trace FILE holds (no program is run)", F(show) },
    TK_OPT_KIT_JSON(F(json_path)),
};

#undef F

#define N_OPTS (sizeof(options) / sizeof(options[0]))

static int check(struct tk_session *s)
{
    const struct trace_opts *o = s->opts;
    const struct tk_opt_parse *p = &s->parsed;
    if (o->show) {
        if (s->cmd_argc > 0)
            return tk_args_bad(&s->cli, "--show reads a trace: no program is run with it");
        static const char *const record_only[] = { "output", "children", "after", "mark-signal" };
        for (size_t i = 0; i < sizeof(record_only) / sizeof(record_only[0]); i++)
            if (tk_opt_given(options, N_OPTS, p, record_only[i]))
                return tk_args_bad(&s->cli, "--%s is for recording: --show reads a trace",
                                   record_only[i]);
        return 0;
    }
    if (s->cmd_argc == 0)
        return tk_args_bad(&s->cli, "no program to trace: rtmem trace [options] -- PROGRAM "
                                    "[ARGS...], or rtmem trace --show FILE");
    if (o->after_ns && o->mark_signal == 2)
        return tk_args_bad(&s->cli, "--after marks a phase with the mark signal: not with "
                                    "--mark-signal none");
    return 0;
}

static int setup(struct tk_session *s)
{
    struct trace_run *r = calloc(1, sizeof(*r));
    if (!r) {
        fprintf(stderr, "%s: out of memory\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    s->state = r;
    r->o = *(const struct trace_opts *)s->opts;
    r->prog = s->cli.prog;
    s->comment = "";
    tk_machine_collect(&r->mf);
    if (r->o.show)
        return 0;
    if (tk_preload_find("librtmem-trace.so", "RTMEM_TRACE_LIB", r->lib, sizeof(r->lib)) != 0) {
        fprintf(stderr,
                "%s: librtmem-trace.so not found (%s): install rtmem, or set "
                "RTMEM_TRACE_LIB to its path\n",
                s->cli.prog, r->lib);
        return TK_EXIT_FAILED;
    }
    /* The output's directory takes the run's own and the trace. */
    char dir[PATH_MAX];
    const char *slash = strrchr(r->o.output, '/');
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - r->o.output) : 1,
             slash ? (slash == r->o.output ? "/" : r->o.output) : ".");
    if (access(dir, W_OK | X_OK) != 0) {
        tk_args_bad(&s->cli, "-o %s: cannot write in %s: %s", r->o.output, dir, strerror(errno));
        return TK_EXIT_USAGE;
    }
    return 0;
}

static enum tk_run_end run(struct tk_session *s)
{
    struct trace_run *r = s->state;
    if (!r->o.show)
        return trace_record(s);
    char why[512];
    r->shown_path = r->o.show;
    if (tk_trace_read(r->o.show, &r->t, why, sizeof(why)) != 0) {
        fprintf(stderr, "%s: %s\n", r->prog, why);
        return TK_RUN_ABORTED;
    }
    r->have_trace = true;
    trace_stats(&r->t, &r->st);
    return TK_RUN_PASSED;
}

static void facts(const struct tk_session *s, struct tk_facts *out)
{
    const struct trace_run *r = s->state;
    *out = (struct tk_facts){ .machine = &r->mf };
}

static void teardown(struct tk_session *s)
{
    struct trace_run *r = s->state;
    if (!r)
        return;
    tk_trace_free(&r->t);
    free(r);
    s->state = NULL;
}

const struct tk_tool trace_tool = {
    .name = "trace",
    .summary = "record a program's malloc calls, unmodified; show what a trace holds",
    .schema = TRACE_SCHEMA,
    .bytes_example = "4096, 64K, 64M",
    .command_usage = "-- PROGRAM [ARGS...]  |  rtmem trace --show FILE",
    .opts = options,
    .n_opts = N_OPTS,
    .opts_size = sizeof(struct trace_opts),
    .defaults = &defaults,
    .json_path_offset = offsetof(struct trace_opts, json_path),
    .check = check,
    .setup = setup,
    .run = run,
    .report = trace_report,
    .facts = facts,
    .json = trace_json,
    .teardown = teardown,
};
