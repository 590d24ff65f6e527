/* Bench kit: the driver every rtmem subcommand runs on (tool.h). */
#include "common/tool.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/progress.h"
#include "common/result.h"
#include "rtmem/version.h"

#ifndef RTMEM_DOCS_SOURCE_DIR
#error "RTMEM_DOCS_SOURCE_DIR must name the source tree's docs/ (tools/CMakeLists.txt)"
#endif

int tk_share_path(char *buf, size_t size, const char *rel)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    int len = snprintf(buf, size, "%s/../share/%s", exe, rel);
    return len > 0 && (size_t)len < size ? 0 : -1;
}

/* The manual of the tool named name: <prefix>/share/doc/rtmem/<name>.md
 * beside an installed binary, else docs/<name>.md of the source tree it
 * was built from. Into buf. */
static void tool_manual(char *buf, size_t size, const char *name)
{
    char rel[64];
    snprintf(rel, sizeof(rel), "doc/rtmem/%s.md", name);
    if (tk_share_path(buf, size, rel) == 0 && access(buf, R_OK) == 0)
        return;
    snprintf(buf, size, "%s/%s.md", RTMEM_DOCS_SOURCE_DIR, name);
}

void tk_tool_help(FILE *f, const struct tk_tool *t)
{
    char manual[PATH_MAX + 64];
    tool_manual(manual, sizeof(manual), t->name);
    const char *more = t->command_usage ? t->command_usage : t->operands_usage;
    fprintf(f, "usage: rtmem %s [options]%s%s\n%s.\n\noptions:\n", t->name, more ? " " : "",
            more ? more : "", t->summary);
    tk_opt_help(f, t->opts, t->n_opts, t->defaults);
    if (t->help_notes)
        t->help_notes(f);
    fprintf(f,
            "\nexit status: 0 passed, 1 a check or the run failed, 2 bad usage\n"
            "manual: %s\n",
            manual);
}

void tk_envelope_json(struct tk_json *j, const struct tk_session *s, bool passed)
{
    const struct tk_tool *t = s->tool;
    struct tk_facts facts = { 0 };
    if (t->facts)
        t->facts(s, &facts);
    tk_json_kv_string(j, "schema", t->schema);
    tk_json_kv_string(j, "tool", t->name);
    tk_json_kv_string(j, "version", RTMEM_VERSION_STRING);
    tk_json_key(j, "command_line");
    tk_json_begin_array_compact(j);
    tk_json_string(j, "rtmem");
    for (int i = 0; i < s->argc; i++)
        tk_json_string(j, s->argv[i]);
    tk_json_end_array(j);
    if (tk_json_key_or_null(j, "machine", facts.machine != NULL))
        tk_machine_json(j, facts.machine, TK_DETAIL_FULL);
    if (tk_json_key_or_null(j, "timer", facts.timer != NULL))
        tk_timer_json(j, facts.timer, TK_DETAIL_FULL);
    if (tk_json_key_or_null(j, "real_time", facts.rt != NULL))
        tk_rt_json(j, facts.rt);
    if (tk_json_key_or_null(j, "seed", facts.has_seed))
        tk_json_uint(j, facts.seed);
    tk_json_kv_double(j, "seconds", s->seconds);
    tk_json_kv_bool(j, "passed", passed);
}

/* The envelope and the tool's members into the result file, and the file
 * into place. Returns 0 or TK_EXIT_FAILED (reported). */
static int write_results(struct tk_session *s, struct tk_result *r, const char *path, bool passed)
{
    struct tk_json j;
    tk_json_init(&j, r->f);
    tk_json_begin_object(&j);
    tk_envelope_json(&j, s, passed);
    s->tool->json(s, &j);
    tk_json_end_object(&j);
    if (tk_json_finish(&j) == -EINVAL) {
        fprintf(stderr, "%s: internal error: unbalanced JSON for '%s'\n", s->cli.prog, path);
        return TK_EXIT_FAILED;
    }
    /* A write error is the commit's to report, with its cause. */
    if (tk_result_commit(r, s->cli.prog) != 0)
        return TK_EXIT_FAILED;
    fprintf(s->tool->report_on_stderr ? stderr : stdout, "%sresults written to %s\n", s->comment,
            path);
    return 0;
}

/* Steps 3 to 6 of tool.h: the result file, run, report, JSON. */
static int run_and_report(struct tk_session *s)
{
    const struct tk_tool *t = s->tool;
    const char *path = NULL;
    if (t->json_path_offset != TK_NO_JSON)
        path = *(const char *const *)((const char *)s->opts + t->json_path_offset);
    struct tk_result r;
    if (path && tk_result_open(&r, s->cli.prog, path) != 0)
        return TK_EXIT_USAGE;

    uint64_t t0 = tk_clock_ns();
    /* (not for a tool that runs a program: that program's output is the
     * terminal's) */
    tk_progress_start(s->cli.prog, s->parsed.quiet || t->command_usage != NULL || t->own_progress);
    enum tk_run_end end = t->run(s);
    tk_progress_stop(); /* the line cleared before the report */
    s->seconds = (double)(tk_clock_ns() - t0) / 1e9;
    int status = end == TK_RUN_PASSED ? TK_EXIT_OK : TK_EXIT_FAILED;
    if (end != TK_RUN_ABORTED) {
        t->report(s, t->report_on_stderr ? stderr : stdout);
        /* A run that could not report leaves the result file as it was; a
         * verdict, failed or not, is written. */
        if (tk_stdout_check(s->cli.prog) != 0)
            status = TK_EXIT_FAILED;
        else if (path && write_results(s, &r, path, end == TK_RUN_PASSED) != 0)
            status = TK_EXIT_FAILED;
        else if (s->exit_status >= 0)
            status = s->exit_status;
    }
    if (path)
        tk_result_abandon(&r); /* nothing once committed */
    return status;
}

int tk_tool_main(const struct tk_tool *t, int argc, char **argv)
{
    char prog[64];
    snprintf(prog, sizeof(prog), "rtmem %s", t->name);
    struct tk_session s = {
        .tool = t,
        .cli = { prog, t->bytes_example },
        .argc = argc,
        .argv = argv,
        .comment = "",
        .exit_status = -1,
    };
    /* A table that would parse wrongly or state a wrong default in --help
     * is the tool's bug: it stops here, in every run and every test. */
    char why[160];
    if (tk_opt_check(t->opts, t->n_opts, t->defaults, why, sizeof(why)) != 0) {
        fprintf(stderr, "%s: internal error: options table: %s\n", prog, why);
        return TK_EXIT_FAILED;
    }
    s.opts = malloc(t->opts_size);
    if (!s.opts) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return TK_EXIT_FAILED;
    }
    memcpy(s.opts, t->defaults, t->opts_size);

    /* A tool that runs a command takes it after "--": the options end there. */
    int opt_argc = argc;
    for (int i = 1; t->command_usage && i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            opt_argc = i;
            s.cmd_argc = argc - i - 1;
            s.cmd_argv = argv + i + 1;
            break;
        }
    int first = opt_argc;
    int parsed = tk_opt_parse_operands(&s.cli, t->opts, t->n_opts, opt_argc, argv, s.opts,
                                       &s.parsed, t->operands_usage ? &first : NULL);
    s.operands = argv + first;
    s.n_operands = opt_argc - first;
    int status;
    if (parsed != 0) {
        status = TK_EXIT_USAGE;
    } else if (s.parsed.help) {
        tk_tool_help(stdout, t);
        status = TK_EXIT_OK;
    } else if (tk_opt_given(t->opts, t->n_opts, &s.parsed, "no-rt") &&
               tk_opt_given(t->opts, t->n_opts, &s.parsed, "prio")) {
        tk_args_bad(&s.cli, "--no-rt runs under SCHED_OTHER: --prio would not be used");
        status = TK_EXIT_USAGE;
    } else if (t->check && t->check(&s) != 0) {
        status = TK_EXIT_USAGE;
    } else {
        status = t->setup(&s);
        if (status == 0)
            status = run_and_report(&s);
        if (t->teardown)
            t->teardown(&s);
    }
    free(s.opts);
    return status;
}
