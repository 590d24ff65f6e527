/*
 * `rtmem trace`: what a trace holds (trace_stats), as a report and as
 * JSON. Live bytes are the bytes the live blocks asked for (not what an
 * allocator gives them): the program's own need, before any heap's
 * headers and rounding.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "common/child.h"
#include "common/launch.h"
#include "common/out.h"
#include "common/u64map.h"
#include "trace.h"

/* ---- the statistics ----------------------------------------------------------- */

static void count_thread(struct trace_stats *st, uint32_t tid)
{
    for (size_t i = 0; i < st->n_threads; i++)
        if (st->threads[i].tid == tid) {
            st->threads[i].calls++;
            return;
        }
    st->threads_total++;
    if (st->n_threads < TRACE_MAX_THREADS) {
        st->threads[st->n_threads].tid = tid;
        st->threads[st->n_threads++].calls = 1;
    }
}

static void count_align(struct trace_stats *st, uint64_t align)
{
    for (size_t i = 0; i < st->n_aligns; i++)
        if (st->aligns[i].align == align) {
            st->aligns[i].count++;
            return;
        }
    if (st->n_aligns < TRACE_MAX_ALIGNS) {
        st->aligns[st->n_aligns].align = align;
        st->aligns[st->n_aligns++].count = 1;
    } else
        st->aligns_more = true;
}

static void new_phase(struct trace_stats *st, const char *name, uint64_t t, uint64_t live)
{
    if (st->n_phases == TRACE_MAX_PHASES) {
        st->marks_dropped++;
        return;
    }
    if (st->n_phases)
        st->phases[st->n_phases - 1].end_ns = t;
    struct trace_phase *p = &st->phases[st->n_phases++];
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", name);
    p->start_ns = t;
    p->start_live = p->peak_live = live;
}

/* Live bytes at time t: the most of its slice of the series. */
static void note_series(struct trace_stats *st, uint64_t t, uint64_t span, uint64_t live)
{
    size_t k = t >= span ? TRACE_SERIES - 1 : (size_t)((double)t / (double)span * TRACE_SERIES);
    if (k >= TRACE_SERIES)
        k = TRACE_SERIES - 1;
    if (st->series[k] == UINT64_MAX || live > st->series[k])
        st->series[k] = live;
}

void trace_stats(const struct tk_trace *t, struct trace_stats *st)
{
    memset(st, 0, sizeof(*st));
    struct tk_u64map l = { 0 }, taken = { 0 }; /* taken: a realloc's index + 2 -> old bytes */
    size_t *order = NULL, n_order = 0, next = 0;
    uint64_t live = 0, replaced;
    new_phase(st, "start", 0, 0);
    for (size_t k = 0; k < TRACE_SERIES; k++)
        st->series[k] = UINT64_MAX;
    uint64_t span = t->end_ns ? t->end_ns : 1;
    bool oom = tk_trace_realloc_order(t, &order, &n_order) != 0;
    for (size_t i = 0; i < t->n && !oom; i++) {
        const struct tk_trace_event *e = &t->ev[i];
        /* a realloc's old block leaves the map at its seq0 (trace.h) */
        while (next < n_order && t->ev[order[next]].seq0 < e->seq) {
            size_t j = order[next++];
            uint64_t b = tk_u64map_take(&l, t->ev[j].given);
            if (b != TK_U64MAP_NONE && !tk_u64map_put(&taken, (uint64_t)j + 2, b, &replaced))
                oom = true;
        }
        if (e->op == RTM_TRACE_MARK) {
            new_phase(st, t->marks[e->mark], e->t_ns, live);
            continue;
        }
        struct trace_phase *ph = &st->phases[st->n_phases - 1];
        st->calls++;
        ph->calls++;
        st->ops[e->op < RTM_TRACE_OPS ? e->op : 0]++;
        count_thread(st, e->tid);
        bool is_realloc = e->op == RTM_TRACE_REALLOC || e->op == RTM_TRACE_REALLOCARRAY;
        if (e->op == RTM_TRACE_FREE && e->given) {
            uint64_t b = tk_u64map_take(&l, e->given);
            if (b == TK_U64MAP_NONE)
                st->unknown_frees++;
            else
                live -= b;
            ph->frees++;
        } else if (is_realloc && e->given) {
            uint64_t b = tk_u64map_take(&taken, (uint64_t)i + 2);
            if (e->ret || e->size == 0) { /* moved, or realloc(p, 0) freed it */
                if (b == TK_U64MAP_NONE)
                    st->unknown_frees++;
                else
                    live -= b;
            } else if (b != TK_U64MAP_NONE && !tk_u64map_put(&l, e->given, b, &replaced)) {
                oom = true; /* a failed realloc leaves its block */
            }
        }
        note_series(st, e->t_ns, span, live);
        if (!tk_trace_op_allocates(e->op))
            continue;
        if (e->op == RTM_TRACE_MEMALIGN || e->op == RTM_TRACE_POSIX_MEMALIGN ||
            e->op == RTM_TRACE_ALIGNED_ALLOC)
            count_align(st, e->align);
        tk_hist_add(&st->sizes, e->size);
        if (e->size > st->largest)
            st->largest = e->size;
        ph->allocs++;
        if (!e->ret) {
            if (!(is_realloc && e->size == 0))
                st->failed++;
            continue;
        }
        if (!tk_u64map_put(&l, e->ret, e->size, &replaced)) {
            oom = true;
            break;
        }
        if (replaced != TK_U64MAP_NONE) {
            st->reused_live++;
            live -= replaced;
        }
        live += e->size;
        if (live > st->peak_live) {
            st->peak_live = live;
            st->peak_blocks = l.n;
            st->peak_ns = e->t_ns;
        }
        if (live > ph->peak_live)
            ph->peak_live = live;
        note_series(st, e->t_ns, span, live);
    }
    st->phases[st->n_phases - 1].end_ns = t->end_ns;
    st->end_live = live;
    st->end_blocks = l.n;
    tk_u64map_free(&l);
    tk_u64map_free(&taken);
    free(order);
}

/* ---- the report --------------------------------------------------------------- */

static double per_s(uint64_t n, uint64_t ns)
{
    return ns ? (double)n * 1e9 / (double)ns : 0.0;
}

static void print_ops(FILE *f, const struct trace_stats *st)
{
    fprintf(f, "calls       %" PRIu64 ":", st->calls);
    const char *sep = " ";
    for (int op = 1; op < RTM_TRACE_OPS; op++)
        if (st->ops[op] && op != RTM_TRACE_MARK) {
            fprintf(f, "%s%s %" PRIu64, sep, tk_trace_op_name(op), st->ops[op]);
            sep = ", ";
        }
    fprintf(f, "\n");
}

static void print_sizes(FILE *f, const struct trace_stats *st)
{
    char a[32], b[32];
    fprintf(f, "sizes asked (allocations by size range):\n");
    uint64_t allocs = 0;
    for (int k = 0; k < TK_HIST_BUCKETS; k++)
        allocs += st->sizes.count[k];
    for (int k = 0; k < TK_HIST_BUCKETS; k++) {
        if (!st->sizes.count[k])
            continue;
        if (k == 0)
            snprintf(a, sizeof(a), "0 B");
        else
            snprintf(a, sizeof(a), "%s..",
                     tk_fmt_bytes_short(b, sizeof(b), k == 1 ? 1 : (uint64_t)1 << (k - 1)));
        fprintf(f, "  %-12s %10" PRIu64 "  %5.1f%%\n", a, st->sizes.count[k],
                100.0 * (double)st->sizes.count[k] / (double)(allocs ? allocs : 1));
    }
}

static void print_phases(FILE *f, const struct tk_trace *t, const struct trace_stats *st)
{
    char b1[32], b2[32];
    fprintf(f, "phases:\n  %-20s %10s %10s %12s %10s %10s %12s\n", "phase", "from s", "for s",
            "calls", "allocs", "calls/s", "peak live");
    for (size_t i = 0; i < st->n_phases; i++) {
        const struct trace_phase *p = &st->phases[i];
        uint64_t len = p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0;
        fprintf(f, "  %-20s %10.3f %10.3f %12" PRIu64 " %10" PRIu64 " %10s %12s\n", p->name,
                (double)p->start_ns / 1e9, (double)len / 1e9, p->calls, p->allocs,
                tk_fmt_double(b1, sizeof(b1), per_s(p->calls, len), 0),
                tk_fmt_bytes_short(b2, sizeof(b2), p->peak_live));
    }
    if (st->marks_dropped)
        fprintf(f, "  (%" PRIu64 " later phases counted in the last one: at most %d are listed)\n",
                st->marks_dropped, TRACE_MAX_PHASES);
    /* The steady state: the last phase the program or the user marked. */
    if (st->n_phases > 1) {
        const struct trace_phase *p = &st->phases[st->n_phases - 1];
        uint64_t len = p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0;
        if (p->allocs == 0 && p->calls == 0)
            fprintf(f,
                    "steady state ('%s', the last phase): no call of the malloc family in "
                    "%.3f s: it needs no heap in its loop\n",
                    p->name, (double)len / 1e9);
        else
            fprintf(f,
                    "steady state ('%s', the last phase): %" PRIu64 " calls (%s per second), "
                    "%" PRIu64 " of them allocations\n",
                    p->name, p->calls, tk_fmt_double(b1, sizeof(b1), per_s(p->calls, len), 0),
                    p->allocs);
    } else {
        fprintf(f, "steady state: no phase marked (rtm_trace_phase(), --after, or the mark "
                   "signal mark one)\n");
    }
    (void)t;
}

static void print_trace(FILE *f, const char *path, const struct tk_trace *t,
                        const struct trace_stats *st)
{
    char b1[32], b2[32], end[160];
    time_t secs = (time_t)(t->h.start_real_ns / 1000000000u);
    struct tm tm;
    char when[64] = "?";
    if (gmtime_r(&secs, &tm))
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
    fprintf(f, "trace       %s (format %u, %s): pid %u, parent %u, image %u, started %s\n", path,
            t->h.version, tk_fmt_bytes_short(b1, sizeof(b1), t->file_bytes), t->h.pid, t->h.ppid,
            t->h.generation, when);
    fprintf(f, "ended       %s, after %.3f s\n", tk_trace_ending_text(t, end, sizeof(end)),
            (double)t->end_ns / 1e9);
    print_ops(f, st);
    if (t->unrecorded || t->torn_bytes || t->duplicates)
        fprintf(f,
                "not in it   %" PRIu64 " calls the recorder could not record, %" PRIu64
                " bytes of a chunk cut short; %" PRIu64 " events found twice (kept once)\n",
                t->unrecorded, t->torn_bytes, t->duplicates);
    fprintf(f, "rate        %s calls per second over the whole run\n",
            tk_fmt_double(b1, sizeof(b1), per_s(st->calls, t->end_ns), 0));
    fprintf(f, "threads     %zu:", st->threads_total);
    for (size_t i = 0; i < st->n_threads; i++)
        fprintf(f, "%s tid %u %" PRIu64, i ? "," : "", st->threads[i].tid, st->threads[i].calls);
    fprintf(f, "%s\n", st->n_threads < st->threads_total ? ", ..." : "");
    fprintf(f,
            "live bytes  peak %s in %" PRIu64 " blocks, at %.3f s; at the end %s in %" PRIu64
            " blocks (asked bytes: before any heap's headers and rounding)\n",
            tk_fmt_bytes_short(b1, sizeof(b1), st->peak_live), st->peak_blocks,
            (double)st->peak_ns / 1e9, tk_fmt_bytes_short(b2, sizeof(b2), st->end_live),
            st->end_blocks);
    fprintf(f, "largest     %s asked in one call; %" PRIu64 " allocations failed\n",
            tk_fmt_bytes_short(b1, sizeof(b1), st->largest), st->failed);
    if (st->n_aligns) {
        fprintf(f, "alignments ");
        for (size_t i = 0; i < st->n_aligns; i++)
            fprintf(f, "%s %" PRIu64 " (x%" PRIu64 ")", i ? "," : "", st->aligns[i].align,
                    st->aligns[i].count);
        fprintf(f, "%s\n", st->aligns_more ? ", ..." : "");
    }
    if (st->unknown_frees || st->reused_live)
        fprintf(f,
                "unmatched   %" PRIu64 " frees of blocks handed out before the trace began "
                "(or by another allocator); %" PRIu64 " blocks handed out while still live in "
                "the trace\n",
                st->unknown_frees, st->reused_live);
    print_sizes(f, st);
    print_phases(f, t, st);
}

static void files_report(FILE *f, const struct trace_run *r)
{
    char sig[64];
    if (!r->status_known)
        fprintf(f, "program     ended, how not known (another process reaped it)\n");
    else if (WIFEXITED(r->status))
        fprintf(f, "program     exited with status %d\n", WEXITSTATUS(r->status));
    else if (WIFSIGNALED(r->status))
        fprintf(f, "program     ended by %s\n",
                tk_signal_describe(WTERMSIG(r->status), sig, sizeof(sig)));
    if (r->mark_not_sent)
        fprintf(f, "not marked  --after's phase: the program did not catch the mark signal "
                   "then (the recorder was not in it, or the program handles that signal "
                   "itself), and it was not sent\n");
    for (size_t i = 0; i < r->n_files; i++)
        fprintf(f, "written     %s (pid %d, image %u)\n", r->files[i].path, (int)r->files[i].pid,
                r->files[i].generation);
    if (r->files_left)
        fprintf(f, "left        %zu more files in %s (at most %d are moved)\n", r->files_left,
                r->dir, TRACE_MAX_FILES);
}

void trace_report(const struct tk_session *s, FILE *f)
{
    const struct trace_run *r = s->state;
    if (!r->o.show)
        files_report(f, r);
    if (r->have_trace)
        print_trace(f, r->shown_path, &r->t, &r->st);
}

/* ---- JSON ----------------------------------------------------------------------- */

static void stats_json(struct tk_json *j, const struct tk_trace *t, const struct trace_stats *st)
{
    char end[160];
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "format_version", t->h.version);
    tk_json_kv_uint(j, "pid", t->h.pid);
    tk_json_kv_uint(j, "ppid", t->h.ppid);
    tk_json_kv_uint(j, "generation", t->h.generation);
    tk_json_kv_uint(j, "start_realtime_ns", t->h.start_real_ns);
    static const char *const endings[] = { "exited", "execed", "signaled", "no_end" };
    tk_json_kv_string(j, "ending", endings[t->ending]);
    tk_json_kv_int(j, "ending_how", t->how);
    tk_json_kv_string(j, "ending_text", tk_trace_ending_text(t, end, sizeof(end)));
    tk_json_kv_double(j, "seconds", (double)t->end_ns / 1e9);
    tk_json_kv_uint(j, "file_bytes", t->file_bytes);
    tk_json_kv_uint(j, "unrecorded", t->unrecorded);
    tk_json_kv_uint(j, "chunks", t->chunks);
    tk_json_kv_uint(j, "torn_bytes", t->torn_bytes);
    tk_json_kv_uint(j, "duplicates", t->duplicates);
    tk_json_kv_uint(j, "calls", st->calls);
    tk_json_key(j, "ops");
    tk_json_begin_object_compact(j);
    for (int op = 1; op < RTM_TRACE_OPS; op++)
        if (op != RTM_TRACE_MARK)
            tk_json_kv_uint(j, tk_trace_op_name(op), st->ops[op]);
    tk_json_end_object(j);
    tk_json_kv_uint(j, "failed", st->failed);
    tk_json_kv_uint(j, "unknown_frees", st->unknown_frees);
    tk_json_kv_uint(j, "reused_live", st->reused_live);
    tk_json_kv_uint(j, "largest_bytes", st->largest);
    tk_json_kv_uint(j, "peak_live_bytes", st->peak_live);
    tk_json_kv_uint(j, "peak_live_blocks", st->peak_blocks);
    tk_json_kv_double(j, "peak_at_s", (double)st->peak_ns / 1e9);
    tk_json_kv_uint(j, "end_live_bytes", st->end_live);
    tk_json_kv_uint(j, "end_live_blocks", st->end_blocks);
    tk_json_kv_uint(j, "threads", st->threads_total);
    tk_json_key(j, "size_histogram"); /* {lo_bytes, hi_bytes, count}, by powers of two */
    tk_hist_json(j, &st->sizes, "bytes");
    tk_json_key(j, "alignments");
    tk_json_begin_array(j);
    for (size_t i = 0; i < st->n_aligns; i++) {
        tk_json_begin_object_compact(j);
        tk_json_kv_uint(j, "align", st->aligns[i].align);
        tk_json_kv_uint(j, "count", st->aligns[i].count);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_key(
        j, "live_series"); /* the most live bytes in each equal slice of the run; null: no call */
    tk_json_begin_array_compact(j);
    for (size_t k = 0; k < TRACE_SERIES; k++) {
        if (st->series[k] == UINT64_MAX)
            tk_json_null(j);
        else
            tk_json_uint(j, st->series[k]);
    }
    tk_json_end_array(j);
    tk_json_key(j, "phases");
    tk_json_begin_array(j);
    for (size_t i = 0; i < st->n_phases; i++) {
        const struct trace_phase *p = &st->phases[i];
        tk_json_begin_object_compact(j);
        tk_json_kv_string(j, "name", p->name);
        tk_json_kv_double(j, "start_s", (double)p->start_ns / 1e9);
        tk_json_kv_double(j, "end_s", (double)p->end_ns / 1e9);
        tk_json_kv_uint(j, "calls", p->calls);
        tk_json_kv_uint(j, "allocs", p->allocs);
        tk_json_kv_uint(j, "frees", p->frees);
        tk_json_kv_uint(j, "start_live_bytes", p->start_live);
        tk_json_kv_uint(j, "peak_live_bytes", p->peak_live);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_end_object(j);
}

void trace_json(const struct tk_session *s, struct tk_json *j)
{
    const struct trace_run *r = s->state;
    tk_json_kv_string(j, "mode", r->o.show ? "show" : "record");
    if (!r->o.show) {
        tk_json_key(j, "program");
        tk_json_begin_object(j);
        tk_launch_json(j, s->cmd_argc, s->cmd_argv, r->status_known, r->status);
        tk_json_end_object(j);
        tk_json_key(j, "files");
        tk_json_begin_array(j);
        for (size_t i = 0; i < r->n_files; i++) {
            tk_json_begin_object_compact(j);
            tk_json_kv_string(j, "path", r->files[i].path);
            tk_json_kv_int(j, "pid", r->files[i].pid);
            tk_json_kv_uint(j, "generation", r->files[i].generation);
            tk_json_end_object(j);
        }
        tk_json_end_array(j);
    }
    tk_json_kv_string(j, "trace_path", r->have_trace ? r->shown_path : "");
    if (tk_json_key_or_null(j, "trace", r->have_trace))
        stats_json(j, &r->t, &r->st);
}
