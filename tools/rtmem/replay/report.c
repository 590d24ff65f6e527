/*
 * `rtmem replay`: the table per allocator, the verdict, the JSON.
 *
 * The verdict ranks the heaps that fit (rtmem kinds, and plugins beside
 * them) by their worst call measured
 * (the larger of alloc's and free's maximum, net of the timer), then by
 * the smallest pool; it advises the first, with its pool (the smallest
 * that fits plus --margin), and says whether the program needs a locked
 * heap (more than one thread allocates or frees in what was replayed) or no heap at
 * all (no allocation in it). Each claim names the figure it rests on.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "common/out.h"
#include "replay.h"

static const char *bytes(char *buf, size_t size, uint64_t v)
{
    return tk_fmt_bytes_short(buf, size, v);
}

/* The ranking's figure: each timed replay's longest call (alloc or free),
 * the median over the replays. */
static double worst(const struct replay_target *x)
{
    return x->worst_ns;
}

/* The rtmem targets that fit, best first: their indices into order. */
static size_t ranked(const struct replay *r, size_t *order)
{
    size_t n = 0;
    if (r->p.allocs == 0)
        return 0; /* nothing allocated: no heap to advise */
    for (size_t i = 0; i < r->n_targets; i++) {
        const struct replay_target *x = &r->targets[i];
        if (replay_bounded(x) && x->replayed && x->fits && x->timed_failures == 0)
            order[n++] = i;
    }
    for (size_t i = 1; i < n; i++) /* insertion: a handful */
        for (size_t k = i; k > 0; k--) {
            const struct replay_target *a = &r->targets[order[k - 1]], *b = &r->targets[order[k]];
            bool swap = worst(b) < worst(a) || (worst(b) == worst(a) && b->min_pool < a->min_pool);
            if (!swap)
                break;
            size_t t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    return n;
}

static void program_lines(FILE *f, const struct tk_session *s, const struct replay *r)
{
    char b1[32], b2[32];
    const struct replay_program *p = &r->p;
    fprintf(f, "trace       %s: %s", s->operands[0], r->o.phase ? "" : "the whole trace");
    if (r->o.phase)
        fprintf(f, "phase '%s' (the %zu blocks live at its start made first, untimed)", r->o.phase,
                p->preamble);
    fprintf(f, "; %" PRIu64 " allocations and %" PRIu64 " frees replayed, %.3f s of the program\n",
            p->allocs, p->frees, p->seconds);
    fprintf(f,
            "peak        %s asked by live blocks; largest request %s; largest alignment %" PRIu64
            "\n",
            bytes(b1, sizeof(b1), p->peak_live), bytes(b2, sizeof(b2), p->largest), p->max_align);
    if (p->unknown_frees || p->failed_in_trace || p->reused_live)
        fprintf(f,
                "left out    %" PRIu64 " frees of blocks from before the trace or another "
                "allocator, %" PRIu64 " allocations that failed in the program; %" PRIu64
                " blocks handed out at an address still live (kept live)\n",
                p->unknown_frees, p->failed_in_trace, p->reused_live);
    fprintf(f,
            "search      the smallest pool that fits, to %" PRIu64 " bytes: it fits, and %" PRIu64
            " bytes less fails (both replayed); pools up to "
            "%s tried\n",
            r->o.granule, r->o.granule, bytes(b1, sizeof(b1), r->o.max_pool));
    if (r->rt_done)
        tk_rt_print(f, &r->rt);
    if (r->timer_ok)
        fprintf(f,
                "timer       %s, overhead %.1f ns (median, subtracted); %u timed replay%s per "
                "allocator, their calls pooled\n",
                r->timer.source, r->timer.overhead_p50_ns, r->o.reps, r->o.reps == 1 ? "" : "s");
}

static void target_line(FILE *f, const struct replay *r, const struct replay_target *x)
{
    char b1[32], b2[32], b3[32], b4[32];
    if (x->why_not[0] && !x->replayed) {
        fprintf(f, "  %-14s %s%s\n", x->name, x->failed ? "FAILED: " : "", x->why_not);
        return;
    }
    if (replay_bounded(x) && !x->fits) {
        if (x->too_large && r->p.max_align > RTM_HEAP_MIN_ALIGN)
            fprintf(f,
                    "  %-14s no pool fits this program: the kind serves no request this "
                    "large (%s) or this aligned (%" PRIu64 ")\n",
                    x->name, bytes(b1, sizeof(b1), r->p.largest), r->p.max_align);
        else if (x->too_large)
            fprintf(f,
                    "  %-14s no pool fits this program: the kind serves no request this "
                    "large (%s)\n",
                    x->name, bytes(b1, sizeof(b1), r->p.largest));
        else
            fprintf(f, "  %-14s no pool up to %s fits this program\n", x->name,
                    bytes(b1, sizeof(b1), r->o.max_pool));
        return;
    }
    char pool[64] = "-", ratio[16] = "-", advised[32] = "-", at_pool[48] = "";
    if (replay_bounded(x)) {
        bytes(pool, sizeof(pool), x->min_pool);
        snprintf(ratio, sizeof(ratio), "%.2f",
                 r->p.peak_live ? (double)x->min_pool / (double)r->p.peak_live : 0.0);
        bytes(advised, sizeof(advised), x->timed_pool);
        if (r->o.pool)
            snprintf(at_pool, sizeof(at_pool), "%s",
                     !x->pool_created   ? "no heap"
                     : x->pool_failures ? "fails"
                                        : "fits");
    }
    double max = x->alloc_ns.max > x->free_ns.max ? x->alloc_ns.max : x->free_ns.max;
    fprintf(f, "  %-14s %10s %6s %10s %8s %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f", x->name, pool,
            ratio, advised, r->o.pool ? (at_pool[0] ? at_pool : "-") : "", x->alloc_ns.mean,
            x->alloc_ns.p99, x->free_ns.mean, x->free_ns.p99, x->worst_ns, max);
    if (x->have_peak)
        fprintf(f, " %6.1f%% %10s", 100.0 * x->fragmentation,
                bytes(b3, sizeof(b3), x->at_peak.largest_free_bytes));
    else
        fprintf(f, " %7s %10s", "-", "-");
    fprintf(f, " %10s\n", replay_bounded(x) ? bytes(b4, sizeof(b4), x->touched) : "-");
    if (x->note[0])
        fprintf(f, "  %-14s   %s\n", "", x->note);
    if (x->timed_failures)
        fprintf(f,
                "  %-14s   %" PRIu64 " allocations failed at the advised pool %s: this "
                "allocator does not fit every pool above its smallest\n",
                "", x->timed_failures, bytes(b2, sizeof(b2), x->timed_pool));
    if (r->o.pool && replay_bounded(x) && x->pool_failures)
        fprintf(f, "  %-14s   at --pool %s: %" PRIu64 " allocations fail\n", "",
                bytes(b2, sizeof(b2), r->o.pool), x->pool_failures);
}

static void verdict(FILE *f, const struct replay *r)
{
    char b1[32], b2[32], b3[32];
    size_t order[TK_MAX_ALLOCS];
    size_t n = ranked(r, order);
    fprintf(f, "\nverdict:\n");
    if (r->p.allocs == 0) {
        fprintf(f,
                "  - no allocation in what was replayed (%.3f s of the program): it needs no "
                "heap there\n",
                r->p.seconds);
    }
    size_t tried = 0;
    for (size_t i = 0; i < r->n_targets; i++)
        tried += replay_bounded(&r->targets[i]) && r->targets[i].replayed;
    if (r->p.allocs == 0) {
        /* said above: no heap to advise */
    } else if (tried == 0) {
        fprintf(f, "  - no heap (an rtmem kind or a plugin) was replayed (--kinds): none to "
                   "advise\n");
    } else if (n == 0) {
        fprintf(f,
                "  - no heap fits this program within %s (the search's limit, "
                "--max-pool)\n",
                bytes(b1, sizeof(b1), r->o.max_pool));
    } else {
        const struct replay_target *best = &r->targets[order[0]];
        fprintf(f,
                "  - advised: %s, on a pool of %s: the smallest that fits this trace, %s "
                "(%.2fx its peak of %s asked), plus %u%%; its worst call %.0f ns "
                "(each replay's longest alloc or free, the median over %u replays)\n",
                best->name, bytes(b1, sizeof(b1), best->timed_pool),
                bytes(b2, sizeof(b2), best->min_pool),
                r->p.peak_live ? (double)best->min_pool / (double)r->p.peak_live : 0.0,
                bytes(b3, sizeof(b3), r->p.peak_live), r->o.margin_pct, worst(best), r->o.reps);
        fprintf(f, "  - ranked by worst call, then pool:");
        for (size_t i = 0; i < n; i++) {
            const struct replay_target *x = &r->targets[order[i]];
            fprintf(f, "%s %s (%.0f ns, %s)", i ? "," : "", x->name, worst(x),
                    bytes(b1, sizeof(b1), x->min_pool));
        }
        fprintf(f, "\n");
    }
    if (n > 0 && r->valgrind_version[0]) {
        /* the noise-free order: instructions, the alloc and free averages */
        size_t by_instr[TK_MAX_ALLOCS], m = 0;
        for (size_t i = 0; i < n; i++)
            if (r->targets[order[i]].counted)
                by_instr[m++] = order[i];
        for (size_t i = 1; i < m; i++)
            for (size_t k = i; k > 0; k--) {
                const struct replay_target *a = &r->targets[by_instr[k - 1]],
                                           *b = &r->targets[by_instr[k]];
                if (b->instr_alloc + b->instr_free >= a->instr_alloc + a->instr_free)
                    break;
                size_t t = by_instr[k];
                by_instr[k] = by_instr[k - 1];
                by_instr[k - 1] = t;
            }
        if (m > 0) {
            fprintf(f, "  - by instructions per call (alloc + free averages, counted: the same "
                       "on every run):");
            for (size_t i = 0; i < m; i++) {
                const struct replay_target *x = &r->targets[by_instr[i]];
                fprintf(f, "%s %s (%.0f)", i ? "," : "", x->name, x->instr_alloc + x->instr_free);
            }
            fprintf(f, "\n");
        }
    }
    if (r->n_others)
        fprintf(f,
                "  - no shared heap: this process's blocks are its own; %zu other process "
                "image%s of this run %s recorded beside it (%s%s): each allocates from a heap of "
                "its own, replay each for its pool (a shared heap, rtmem/shared.h, is for blocks "
                "that processes hand to one another, which malloc's never are)\n",
                r->n_others, r->n_others == 1 ? "" : "s", r->n_others == 1 ? "was" : "were",
                r->other, r->n_others > 1 ? ", ..." : "");
    else
        fprintf(f,
                "  - no shared heap: one process (pid %u) allocates, and no other process "
                "of this run was recorded beside its trace (rtmem trace --children follow "
                "records them)\n",
                (unsigned)r->t.h.pid);
    if (r->p.threads > 1)
        fprintf(f, "  - a locked heap: %zu threads allocate or free in what was replayed\n",
                r->p.threads);
    else
        fprintf(f, "  - no lock needed: %s\n",
                r->p.threads ? "one thread allocates and frees" : "no thread calls the heap");
    if (n > 0) {
        const struct replay_target *best = &r->targets[order[0]];
        if (best->bound)
            fprintf(f,
                    "  - the advised pool is enough for this trace; for every sequence within its "
                    "limits (the bound lines above), %s needs %s, %.1fx the advised pool: the "
                    "pool to give it when the trace may not show the worst case\n",
                    best->name, bytes(b1, sizeof(b1), best->bound),
                    best->timed_pool ? (double)best->bound / (double)best->timed_pool : 0.0);
        else
            fprintf(f,
                    "  - the advised pool is enough for this trace; %s has no bound for its "
                    "limits (%s)\n",
                    best->name, best->bound_why);
    }
}

/* Instructions per call, where callgrind counted them. */
static void count_lines(FILE *f, const struct replay *r)
{
    if (!r->valgrind_version[0]) {
        fprintf(f, "\ninstructions per call: not counted: %s\n", r->count_why);
        return;
    }
    fprintf(f,
            "\ninstructions per call (%s's callgrind: exact, the same every run; the average "
            "over this trace's calls, the heap's dispatch and a few of the replay's own "
            "included):\n",
            r->valgrind_version);
    for (size_t i = 0; i < r->n_targets; i++) {
        const struct replay_target *x = &r->targets[i];
        if (x->counted)
            fprintf(f, "  %-14s alloc %8.1f   free %8.1f   (%" PRIu64 " and %" PRIu64 " calls)\n",
                    x->name, x->instr_alloc, x->instr_free, x->counted_allocs, x->counted_frees);
        else if (x->count_why[0])
            fprintf(f, "  %-14s not counted: %s\n", x->name, x->count_why);
    }
}

/* The bound of each kind for the program's limits, beside the smallest
 * pool the replay found. */
static void bound_lines(FILE *f, const struct replay *r)
{
    char b1[32], b2[32], b3[32], b4[32];
    const struct rtm_heap_limits *l = &r->limits;
    if (!l->max_live)
        return;
    fprintf(f,
            "\nbound: for every sequence within this trace's limits (%s live, a realloc's old "
            "and new block counted; requests of %s to %s",
            bytes(b1, sizeof(b1), l->max_live), bytes(b2, sizeof(b2), l->min_block),
            bytes(b3, sizeof(b3), l->max_block));
    if (l->max_align)
        fprintf(f, ", aligned up to %zu", l->max_align);
    fprintf(f, "), a pool of this size never fails (rtm_heap_pool_bound_ex, docs/size.md):\n");
    for (size_t i = 0; i < r->n_targets; i++) {
        const struct replay_target *x = &r->targets[i];
        if (!replay_bounded(x) || !x->replayed)
            continue;
        if (!x->bound) {
            fprintf(f, "  %-14s no bound: %s\n", x->name, x->bound_why);
            continue;
        }
        fprintf(f, "  %-14s %10s  %.1fx the smallest pool this trace needs (%s)\n", x->name,
                bytes(b4, sizeof(b4), x->bound),
                x->fits && x->min_pool ? (double)x->bound / (double)x->min_pool : 0.0,
                x->fits ? bytes(b1, sizeof(b1), x->min_pool) : "none found");
    }
}

void replay_report(const struct tk_session *s, FILE *f)
{
    const struct replay *r = s->state;
    program_lines(f, s, r);
    fprintf(f, "\n  %-14s %10s %6s %10s %8s %8s %8s %8s %8s %8s %8s %7s %10s %10s\n", "allocator",
            "min pool", "x peak", "advised", r->o.pool ? "--pool" : "", "alloc", "p99", "free",
            "p99", "worst", "max", "frag", "largest", "touched");
    fprintf(f, "  %-14s %10s %6s %10s %8s %8s %8s %8s %8s %8s %8s %7s %10s %10s\n", "", "", "",
            "pool", "", "avg ns", "ns", "avg ns", "ns", "ns", "ns", "@peak", "free@peak", "");
    if (r->floor.replayed)
        fprintf(f,
                "  %-14s %10s %6s %10s %8s %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f   (no-op calls: "
                "the noise floor)\n",
                "floor", "", "", "", "", r->floor.alloc_ns.mean, r->floor.alloc_ns.p99,
                r->floor.free_ns.mean, r->floor.free_ns.p99, r->floor.worst_ns,
                r->floor.alloc_ns.max > r->floor.free_ns.max ? r->floor.alloc_ns.max
                                                             : r->floor.free_ns.max);
    for (size_t i = 0; i < r->n_targets; i++)
        target_line(f, r, &r->targets[i]);
    for (size_t i = 0; i < r->n_targets; i++) {
        const struct replay_target *x = &r->targets[i];
        if (x->locked_timed)
            fprintf(f,
                    "  %s with a priority-inheritance lock: alloc %.0f ns avg (%+.0f), free %.0f "
                    "ns avg (%+.0f), uncontended (one thread replays)\n",
                    x->name, x->locked_alloc_ns.mean, x->locked_alloc_ns.mean - x->alloc_ns.mean,
                    x->locked_free_ns.mean, x->locked_free_ns.mean - x->free_ns.mean);
        if (x->replayed && x->alloc_ns.count > 0 && r->p.threads > 1)
            fprintf(f,
                    "  %s: %" PRIu64 " of %" PRIu64 " calls (%.1f%%) would have found the lock "
                    "held: the trace's timing, each call lasting this allocator's average\n",
                    x->name, x->contended, r->p.allocs + r->p.frees,
                    r->p.allocs + r->p.frees
                        ? 100.0 * (double)x->contended / (double)(r->p.allocs + r->p.frees)
                        : 0.0);
    }
    fprintf(f, "  (worst: each timed replay's longest call, alloc or free, the median over the "
               "replays; max: the longest of all; floor: the same replays with every call a "
               "no-op, the timer's overhead subtracted too: what this machine adds to any call)\n");
    for (size_t i = 0; i < r->kinds.n_skipped; i++)
        fprintf(f, "  %s skipped: %s\n", r->kinds.skipped[i].name, r->kinds.skipped[i].why);
    count_lines(f, r);
    bound_lines(f, r);
    verdict(f, r);
}

/* ---- JSON ------------------------------------------------------------------------ */

void replay_json(const struct tk_session *s, struct tk_json *j)
{
    const struct replay *r = s->state;
    const struct replay_program *p = &r->p;
    tk_json_kv_string(j, "trace_path", s->operands[0]);
    if (tk_json_key_or_null(j, "phase", r->o.phase != NULL))
        tk_json_string(j, r->o.phase);
    tk_json_key(j, "program");
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "ops", p->n);
    tk_json_kv_uint(j, "preamble", p->preamble);
    tk_json_kv_uint(j, "allocs", p->allocs);
    tk_json_kv_uint(j, "frees", p->frees);
    tk_json_kv_uint(j, "peak_live_bytes", p->peak_live);
    tk_json_kv_uint(j, "largest_bytes", p->largest);
    tk_json_kv_uint(j, "max_align", p->max_align);
    tk_json_kv_uint(j, "unknown_frees", p->unknown_frees);
    tk_json_kv_uint(j, "failed_in_trace", p->failed_in_trace);
    tk_json_kv_uint(j, "reused_live", p->reused_live);
    tk_json_kv_uint(j, "threads", p->threads);
    tk_json_kv_double(j, "seconds", p->seconds);
    tk_json_key(j, "limits");
    tk_json_begin_object_compact(j);
    tk_json_kv_uint(j, "max_live", r->limits.max_live);
    tk_json_kv_uint(j, "min_block", r->limits.min_block);
    tk_json_kv_uint(j, "max_block", r->limits.max_block);
    tk_json_kv_uint(j, "max_align", r->limits.max_align);
    tk_json_end_object(j);
    tk_json_end_object(j);
    tk_json_key(j, "params");
    tk_json_begin_object_compact(j);
    tk_json_kv_uint(j, "granule", r->o.granule);
    tk_json_kv_uint(j, "max_pool", r->o.max_pool);
    tk_json_kv_uint(j, "pool", r->o.pool);
    tk_json_kv_uint(j, "reps", r->o.reps);
    tk_json_kv_uint(j, "margin_pct", r->o.margin_pct);
    tk_json_end_object(j);
    tk_json_key(j, "counts");
    tk_json_begin_object_compact(j);
    if (tk_json_key_or_null(j, "valgrind", r->valgrind_version[0] != 0))
        tk_json_string(j, r->valgrind_version);
    if (tk_json_key_or_null(j, "why", !r->valgrind_version[0]))
        tk_json_string(j, r->count_why);
    tk_json_end_object(j);
    if (tk_json_key_or_null(j, "floor", r->floor.replayed)) {
        tk_json_begin_object(j);
        tk_summary_json(j, "alloc", "mean_ns", &r->floor.alloc_ns);
        tk_summary_json(j, "free", "mean_ns", &r->floor.free_ns);
        tk_json_kv_double(j, "worst_ns", r->floor.worst_ns);
        tk_json_end_object(j);
    }
    tk_kinds_json_skipped(j, &r->kinds);
    tk_json_key(j, "allocators");
    tk_json_begin_array(j);
    for (size_t i = 0; i < r->n_targets; i++) {
        const struct replay_target *x = &r->targets[i];
        tk_json_begin_object(j);
        tk_json_kv_string(j, "name", x->name);
        tk_json_kv_string(j, "origin",
                          x->kind     ? "rtmem"
                          : x->plugin ? "plugin"
                          : x->peer   ? "peer"
                                      : "glibc");
        tk_json_kv_bool(j, "replayed", x->replayed);
        tk_json_kv_bool(j, "failed", x->failed);
        if (tk_json_key_or_null(j, "why_not", x->why_not[0] != 0))
            tk_json_string(j, x->why_not);
        if (tk_json_key_or_null(j, "note", x->note[0] != 0))
            tk_json_string(j, x->note);
        tk_glibc_rt_json(j, x->own);
        if (replay_bounded(x)) {
            tk_json_kv_bool(j, "fits", x->fits);
            tk_json_kv_bool(j, "too_large", x->too_large);
            tk_json_kv_uint(j, "min_pool", x->min_pool);
            tk_json_kv_uint(j, "below_fails", x->below_fails);
            tk_json_kv_uint(j, "search_replays", x->tries);
            tk_json_kv_uint(j, "advised_pool", x->timed_pool);
            if (r->o.pool) {
                tk_json_kv_bool(j, "pool_created", x->pool_created);
                tk_json_kv_uint(j, "pool_failures", x->pool_failures);
            }
            tk_json_kv_uint(j, "touched_bytes", x->touched);
            if (tk_json_key_or_null(j, "bound", x->bound != 0))
                tk_json_uint(j, x->bound);
            if (tk_json_key_or_null(j, "bound_why", x->bound == 0 && x->bound_why[0]))
                tk_json_string(j, x->bound_why);
        }
        tk_json_kv_uint(j, "timed_failures", x->timed_failures);
        tk_summary_json(j, "alloc", "mean_ns", &x->alloc_ns);
        tk_summary_json(j, "free", "mean_ns", &x->free_ns);
        tk_json_kv_double(j, "worst_ns", x->worst_ns);
        if (x->have_peak) {
            tk_json_kv_double(j, "fragmentation_at_peak", x->fragmentation);
            tk_json_kv_uint(j, "free_bytes_at_peak", x->at_peak.free_bytes);
            tk_json_kv_uint(j, "largest_free_at_peak", x->at_peak.largest_free_bytes);
            tk_json_kv_uint(j, "used_bytes_at_peak", x->at_peak.used_bytes);
        }
        if (x->locked_timed) {
            tk_summary_json(j, "locked_alloc", "mean_ns", &x->locked_alloc_ns);
            tk_summary_json(j, "locked_free", "mean_ns", &x->locked_free_ns);
        }
        if (r->p.threads > 1 &&
            tk_json_key_or_null(j, "contended_calls", x->replayed && x->alloc_ns.count > 0))
            tk_json_uint(j, x->contended);
        if (tk_json_key_or_null(j, "instructions", x->counted)) {
            tk_json_begin_object_compact(j);
            tk_json_kv_double(j, "alloc", x->instr_alloc);
            tk_json_kv_double(j, "free", x->instr_free);
            tk_json_kv_uint(j, "allocs", x->counted_allocs);
            tk_json_kv_uint(j, "frees", x->counted_frees);
            tk_json_end_object(j);
        }
        if (tk_json_key_or_null(j, "instructions_why", !x->counted && x->count_why[0]))
            tk_json_string(j, x->count_why);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    size_t order[TK_MAX_ALLOCS];
    size_t n = ranked(r, order);
    tk_json_key(j, "verdict");
    tk_json_begin_object(j);
    if (tk_json_key_or_null(j, "advised", n > 0)) {
        tk_json_begin_object_compact(j);
        tk_json_kv_string(j, "kind", r->targets[order[0]].name);
        tk_json_kv_string(j, "origin", r->targets[order[0]].kind ? "rtmem" : "plugin");
        tk_json_kv_uint(j, "pool", r->targets[order[0]].timed_pool);
        tk_json_kv_uint(j, "min_pool", r->targets[order[0]].min_pool);
        tk_json_kv_double(j, "worst_call_ns", worst(&r->targets[order[0]]));
        if (tk_json_key_or_null(j, "bound", r->targets[order[0]].bound != 0))
            tk_json_uint(j, r->targets[order[0]].bound);
        tk_json_end_object(j);
    }
    tk_json_key(j, "ranking");
    tk_json_begin_array_compact(j);
    for (size_t i = 0; i < n; i++)
        tk_json_string(j, r->targets[order[i]].name);
    tk_json_end_array(j);
    tk_json_kv_bool(j, "needs_lock", p->threads > 1);
    tk_json_kv_bool(j, "needs_heap", p->allocs > 0);
    tk_json_kv_bool(j, "needs_shared_heap", false);
    tk_json_kv_uint(j, "other_images", r->n_others);
    tk_json_end_object(j);
}
