/*
 * `rtmem run`: the report (on standard error, common/tool.h's
 * report_on_stderr) and the JSON.
 */
#include <inttypes.h>
#include <string.h>
#include <sys/wait.h>

#include "common/out.h"
#include "run.h"

static void ended(FILE *f, const struct tk_session *s, const struct run *r)
{
    const struct tk_launch *l = &r->l;
    fprintf(f, "%s: %s", r->prog, s->cmd_argv[0]);
    if (!l->status_known)
        fprintf(f, " ended, how is not known (someone else reaped it)");
    else if (WIFEXITED(l->status))
        fprintf(f, " exited with status %d", WEXITSTATUS(l->status));
    else if (WIFSIGNALED(l->status))
        fprintf(f, " was ended by signal %d (%s)", WTERMSIG(l->status),
                strsignal(WTERMSIG(l->status)));
    fprintf(f, " after %.3f s%s\n", l->seconds,
            l->signaled_by_user ? " (a signal sent to rtmem run was passed on to it)" : "");
}

/* The worst call of each operation the process made. */
static void worst(FILE *f, const struct run_summary *m, const char *indent, const char *wait)
{
    if (!m->timed) {
        fprintf(f, "%sworst       not timed (--no-time)\n", indent);
        return;
    }
    fprintf(f, "%sworst      ", indent);
    for (int i = 0; i < RUN_OPS; i++)
        if (m->calls[i])
            fprintf(f, " %s %.0f ns", run_op_names[i], m->worst_ns[i]);
    fprintf(f, " (each call's whole time, %s)\n", wait);
}

/* glibc's or glibc-rt's summary. */
static void glibc_summary(FILE *f, const struct run_summary *m, const char *indent)
{
    char b1[32], b2[32];
    if (strcmp(m->kind, "glibc-rt") == 0)
        fprintf(f,
                "%sallocator   glibc-rt: glibc's malloc, mallopt M_MMAP_MAX 0, M_TRIM_THRESHOLD "
                "-1, M_ARENA_MAX 1, a reserve of %s prefaulted (%s)\n",
                indent, tk_fmt_bytes_short(b1, sizeof(b1), m->pool_bytes), m->locked);
    else
        fprintf(f, "%sallocator   glibc: glibc's malloc at its defaults\n", indent);
    fprintf(f, "%scalls      ", indent);
    for (int i = 0; i < RUN_OPS; i++)
        fprintf(f, " %s %" PRIu64 "%s", run_op_names[i], m->calls[i], i + 1 < RUN_OPS ? "," : "\n");
    if (m->glibc_memory_known)
        fprintf(f, "%smemory      glibc's heap %s at the end; %s in %" PRIu64 " mmapped blocks\n",
                indent, tk_fmt_bytes_short(b1, sizeof(b1), m->glibc_heap_bytes),
                tk_fmt_bytes_short(b2, sizeof(b2), m->glibc_mmapped_bytes),
                m->glibc_mmapped_blocks);
    else
        fprintf(f, "%smemory      not read (the summary was written in a signal handler)\n",
                indent);
    fprintf(f, "%sfailed      %" PRIu64 " allocations\n", indent, m->failed);
    worst(f, m, indent, "glibc's own locking included");
}

static void summary(FILE *f, const struct run_summary *m, const char *indent)
{
    if (m->glibc) {
        glibc_summary(f, m, indent);
        return;
    }
    char b1[32], b2[32], b3[32];
    fprintf(f, "%sheap        %s on a pool of %s (%s, %s), hardening %s, when full: %s\n", indent,
            m->kind, tk_fmt_bytes_short(b1, sizeof(b1), m->pool_bytes),
            m->huge_page_bytes ? "huge pages" : "base pages", m->locked, m->hardening,
            strcmp(m->when_full, "fallback") == 0 ? "fall back to the C library"
                                                  : "fail (NULL, ENOMEM)");
    fprintf(f, "%scalls      ", indent);
    for (int i = 0; i < RUN_OPS; i++)
        fprintf(f, " %s %" PRIu64 "%s", run_op_names[i], m->calls[i], i + 1 < RUN_OPS ? "," : ";");
    fprintf(f,
            " %" PRIu64 " of the C library's blocks freed or resized, %" PRIu64
            " calls before the heap was ready\n",
            m->foreign, m->before_ready);
    fprintf(f, "%speak        %s used of %s usable (%.1f%%); %" PRIu64 " blocks live at the end\n",
            indent, tk_fmt_bytes_short(b2, sizeof(b2), m->peak_used_bytes),
            tk_fmt_bytes_short(b3, sizeof(b3), m->usable_bytes),
            m->usable_bytes ? 100.0 * (double)m->peak_used_bytes / (double)m->usable_bytes : 0.0,
            m->live_blocks);
    fprintf(f,
            "%sfailed      %" PRIu64 " allocations; %" PRIu64
            " fallbacks (%s from the C library); %" PRIu64 " frees refused (not a live block)\n",
            indent, m->failed, m->fallbacks, tk_fmt_bytes_short(b1, sizeof(b1), m->fallback_bytes),
            m->refused_frees);
    fprintf(f, "%slock        %" PRIu64 " calls, %" PRIu64 " found it held (%.2f%%)\n", indent,
            m->lock_calls, m->contended,
            m->lock_calls ? 100.0 * (double)m->contended / (double)m->lock_calls : 0.0);
    worst(f, m, indent, "its wait for the lock included");
}

void run_report(const struct tk_session *s, FILE *f)
{
    const struct run *r = s->state;
    ended(f, s, r);
    if (!r->have_main) {
        fprintf(f, "  no summary: %s\n", r->why_none);
        return;
    }
    summary(f, &r->main, "  ");
    if (r->n_children || r->children_left)
        fprintf(f, "  %zu forked process%s used %s own copy of the heap%s:\n",
                r->n_children + r->children_left, r->n_children + r->children_left == 1 ? "" : "es",
                r->n_children + r->children_left == 1 ? "its" : "their",
                r->children_left ? " (the first ones below)" : "");
    for (size_t i = 0; i < r->n_children; i++) {
        fprintf(f, "  child %ld:\n", r->children[i].pid);
        summary(f, &r->children[i], "    ");
    }
}

static void summary_json(struct tk_json *j, const struct run_summary *m)
{
    tk_json_begin_object(j);
    tk_json_kv_int(j, "pid", m->pid);
    tk_json_kv_string(j, "kind", m->kind);
    tk_json_kv_uint(j, "pool_bytes", m->pool_bytes);
    tk_json_kv_uint(j, "huge_page_bytes", m->huge_page_bytes);
    tk_json_kv_string(j, "locked", m->locked);
    tk_json_kv_string(j, "hardening", m->hardening);
    tk_json_kv_string(j, "when_full", m->when_full);
    tk_json_key(j, "calls");
    tk_json_begin_object_compact(j);
    for (int i = 0; i < RUN_OPS; i++)
        tk_json_kv_uint(j, run_op_names[i], m->calls[i]);
    tk_json_end_object(j);
    tk_json_kv_uint(j, "foreign", m->foreign);
    tk_json_kv_uint(j, "before_ready", m->before_ready);
    tk_json_kv_uint(j, "usable_bytes", m->usable_bytes);
    tk_json_kv_uint(j, "peak_used_bytes", m->peak_used_bytes);
    tk_json_kv_uint(j, "live_blocks", m->live_blocks);
    tk_json_kv_uint(j, "failed", m->failed);
    tk_json_kv_uint(j, "fallbacks", m->fallbacks);
    tk_json_kv_uint(j, "fallback_bytes", m->fallback_bytes);
    tk_json_kv_uint(j, "refused_frees", m->refused_frees);
    if (tk_json_key_or_null(j, "glibc", m->glibc)) {
        tk_json_begin_object_compact(j);
        tk_json_kv_string(j, "settings",
                          strcmp(m->kind, "glibc-rt") == 0
                              ? "mallopt M_MMAP_MAX 0, M_TRIM_THRESHOLD -1, M_ARENA_MAX 1; the "
                                "reserve prefaulted"
                              : "defaults");
        if (tk_json_key_or_null(j, "heap_bytes", m->glibc_memory_known))
            tk_json_uint(j, m->glibc_heap_bytes);
        if (tk_json_key_or_null(j, "mmapped_bytes", m->glibc_memory_known))
            tk_json_uint(j, m->glibc_mmapped_bytes);
        if (tk_json_key_or_null(j, "mmapped_blocks", m->glibc_memory_known))
            tk_json_uint(j, m->glibc_mmapped_blocks);
        tk_json_end_object(j);
    }
    tk_json_key(j, "lock");
    tk_json_begin_object_compact(j);
    tk_json_kv_uint(j, "calls", m->lock_calls);
    tk_json_kv_uint(j, "contended", m->contended);
    tk_json_end_object(j);
    if (tk_json_key_or_null(j, "worst_ns", m->timed)) {
        tk_json_begin_object_compact(j);
        for (int i = 0; i < RUN_OPS; i++)
            tk_json_kv_double(j, run_op_names[i], m->worst_ns[i]);
        tk_json_end_object(j);
    }
    tk_json_end_object(j);
}

void run_json(const struct tk_session *s, struct tk_json *j)
{
    const struct run *r = s->state;
    const struct tk_launch *l = &r->l;
    tk_json_key(j, "program");
    tk_json_begin_object(j);
    tk_launch_json(j, s->cmd_argc, s->cmd_argv, l->status_known, l->status);
    tk_json_kv_double(j, "seconds", l->seconds);
    tk_json_end_object(j);
    if (tk_json_key_or_null(j, "heap", r->have_main))
        summary_json(j, &r->main);
    if (tk_json_key_or_null(j, "why_no_heap", !r->have_main))
        tk_json_string(j, r->why_none);
    tk_json_key(j, "children");
    tk_json_begin_array(j);
    for (size_t i = 0; i < r->n_children; i++)
        summary_json(j, &r->children[i]);
    tk_json_end_array(j);
    tk_json_kv_uint(j, "children_not_listed", r->children_left);
}
