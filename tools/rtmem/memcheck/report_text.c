/*
 * `rtmem memcheck`: the text report in rtmem's layout (ns), what is not a
 * phase's: the header, each allocator's phases in order, the summary across
 * allocators, the failures with their replay commands. Every figure comes
 * from the stored results; one that does not exist or does not apply
 * prints as "-".
 */
#include <stdlib.h>
#include <string.h>

#include "common/out.h"
#include "memcheck.h"

/* An allocator's sequential phases and its pattern phase. */
static void print_target(FILE *f, const struct memcheck *m, const struct mc_target *t)
{
    for (int ph = MC_PH_POW2; ph <= MC_PH_RANDOM; ph++)
        if (t->seq[ph].ran)
            mc_seq_print(f, m, t, (enum mc_phase)ph);
    if (t->pattern.ran)
        mc_pattern_print(f, t);
}

/* ---- summary across allocators ----------------------------------------------------- */

static void print_summary(FILE *f, const struct memcheck *m)
{
    struct tk_col cols[] = {
        { "phase", 6, true },     { "allocator", mc_name_width(m), true },
        { "tests", 6, false },    { "worst-A", 8, false },
        { "worst-F", 8, false },  { "avgmax-A", 8, false },
        { "avgmax-F", 8, false }, { "avg-A", 7, false },
        { "avg-F", 7, false },    { "avgp99-A", 8, false },
        { "avgp99-F", 8, false }, { "OVRH%", 6, false },
        { "TOVRH%", 6, false },   { "FRAG%", 6, false },
    };
    const size_t nc = sizeof(cols) / sizeof(cols[0]);
    fprintf(f, "\n== summary: overall lines of every allocator side by side (ns)\n");
    tk_table_header(f, cols, nc);
    for (int ph = MC_PH_POW2; ph <= MC_PH_RANDOM; ph++)
        for (size_t i = 0; i < m->n_t; i++) {
            const struct mc_seq *sq = &m->t[i].seq[ph];
            if (!sq->ran)
                continue;
            const struct mc_overall *o = &sq->all;
            char b[14][32];
            const char *cells[14] = {
                mc_phase_name((enum mc_phase)ph),
                m->t[i].a.name,
                tk_fmt_uint(b[2], 32, o->tests),
                tk_fmt_double(b[3], 32, o->worst_alloc_ns, 0),
                tk_fmt_double(b[4], 32, o->worst_free_ns, 0),
                tk_fmt_double(b[5], 32, o->avg_max_alloc_ns, 1),
                tk_fmt_double(b[6], 32, o->avg_max_free_ns, 1),
                tk_fmt_double(b[7], 32, o->avg_alloc_ns, 1),
                tk_fmt_double(b[8], 32, o->avg_free_ns, 1),
                tk_fmt_double(b[9], 32, o->avg_p99_alloc_ns, 1),
                tk_fmt_double(b[10], 32, o->avg_p99_free_ns, 1),
                tk_fmt_double(b[11], 32, o->avg_overhead_pct, 1),
                tk_fmt_double(b[12], 32, o->avg_true_overhead_pct, 1),
                tk_fmt_double(b[13], 32, o->avg_frag_pct, 1),
            };
            tk_table_row(f, cols, nc, cells);
        }
}

static void print_failures(FILE *f, const struct memcheck *m)
{
    for (size_t i = 0; i < m->n_t; i++) {
        const struct mc_target *t = &m->t[i];
        if (!t->fail.failed)
            continue;
        const struct mc_opts *o = m->o;
        char timeout[32] = "", every[48] = "";
        if (o->timeout_s != MC_DEFAULT_TIMEOUT_S)
            snprintf(timeout, sizeof(timeout), " --timeout %u", o->timeout_s);
        if (o->churn_sample_every)
            snprintf(every, sizeof(every), " --churn-sample-every %llu",
                     (unsigned long long)o->churn_sample_every);
        char words[2048];
        fprintf(f, "\nFAILED: %s: %s\n", t->a.name, t->fail.msg);
        fprintf(f,
                "  replay: rtmem memcheck%s --phases %s --seed %llu "
                "--seq-heap-size %zu --random-alloc-rounds %u --pattern-heap-size %zu "
                "--pattern-check-rounds %u --churn-ops %llu --churn-heap-size %zu "
                "--churn-fill %u --churn-max-size %zu%s%s%s\n",
                tk_alloc_replay_words(&t->a, words, sizeof(words)), mc_phase_name(t->fail.phase),
                (unsigned long long)o->seed, o->seq_heap_bytes, o->random_rounds,
                o->pattern_heap_bytes, o->pattern_rounds, (unsigned long long)o->churn_ops,
                o->churn_heap_bytes, o->churn_fill_pct, o->churn_max_bytes, every,
                o->compat ? " --compat" : "", timeout);
    }
}

static void print_results(FILE *f, const struct memcheck *m)
{
    mc_seq_print_legend(f, m);
    for (size_t i = 0; i < m->n_t; i++)
        print_target(f, m, &m->t[i]);
    mc_churn_print(f, m);
    print_summary(f, m);
}

/* ---- header ---------------------------------------------------------------------- */

static void print_sizes(FILE *f, const struct memcheck *m)
{
    bool any_heap = false, all_exact = true;
    for (size_t i = 0; i < m->n_t; i++)
        any_heap = any_heap || m->t[i].a.sort == TK_HEAP;
    if (!any_heap)
        return;
    fprintf(f, "heap of usable size H: memory given to create, as H + metadata outside H (B)\n");
    fprintf(f, "  %8s", "H");
    for (size_t i = 0; i < m->n_t; i++)
        if (m->t[i].a.sort == TK_HEAP)
            fprintf(f, " %*s", mc_name_width(m) + 1, m->t[i].a.name);
    fputc('\n', f);
    const struct tk_alloc *first = NULL;
    for (size_t i = 0; i < m->n_t && !first; i++)
        if (m->t[i].a.sort == TK_HEAP)
            first = &m->t[i].a;
    for (size_t k = 0; k < first->n_cache; k++) {
        char sz[32];
        fprintf(f, "  %8s", mc_fmt_size(sz, sizeof(sz), first->cache[k].asked_bytes));
        for (size_t i = 0; i < m->n_t; i++) {
            const struct tk_alloc *a = &m->t[i].a;
            if (a->sort != TK_HEAP)
                continue;
            const struct tk_heap_info *h = k < a->n_cache ? &a->cache[k] : NULL;
            if (!h) {
                fprintf(f, " %*s", mc_name_width(m) + 1, "-");
                continue;
            }
            char cell[32];
            if (h->sized_by_memory)
                snprintf(cell, sizeof(cell), "mem=H");
            else
                snprintf(cell, sizeof(cell), "+%zu%s", h->mem_bytes - h->usable_bytes,
                         h->exact ? "" : "!");
            fprintf(f, " %*s", mc_name_width(m) + 1, cell);
            all_exact = all_exact && h->exact;
        }
        fputc('\n', f);
    }
    bool any_by_memory = false, any_by_stats = false;
    for (size_t i = 0; i < m->n_t; i++)
        if (m->t[i].a.sort == TK_HEAP) {
            bool stats = m->t[i].a.applies & TK_APPLY_STATS;
            any_by_memory = any_by_memory || !stats;
            any_by_stats = any_by_stats || stats;
        }
    if (any_by_memory)
        fprintf(f, "  mem=H: no statistics (a plugin without stats), so the heap gets exactly H "
                   "bytes of memory, its metadata included\n");
    if (all_exact) {
        if (any_by_stats)
            fprintf(f, "  every %sheap has usable_bytes == H exactly\n",
                    any_by_memory ? "other " : "");
        return;
    }
    for (size_t i = 0; i < m->n_t; i++)
        for (size_t k = 0; k < m->t[i].a.n_cache; k++) {
            const struct tk_heap_info *h = &m->t[i].a.cache[k];
            if (!h->exact)
                fprintf(f,
                        "  INEXACT (!): %s cannot make a heap of usable size %zu; its tests "
                        "use the nearest above, %zu\n",
                        m->t[i].a.name, h->asked_bytes, h->usable_bytes);
        }
}

static void print_header(FILE *f, const struct memcheck *m)
{
    const struct tk_timer *t = &m->timer;
    const struct mc_opts *o = m->o;
    fprintf(f, "rtmem memcheck %s (schema %s): Xenomai smokey's memory test sequence\n",
            RTMEM_VERSION_STRING, MC_SCHEMA);
    tk_machine_print(f, &m->mf);
    const struct tk_arena *ar = &m->sh->arena;
    if (m->sh->have_rt) {
        fprintf(f, "test processes (one per allocator and phase): ");
        tk_rt_print(f, &m->sh->rt);
        fprintf(f, "arena: %zu KiB for every heap, mmap'd, prefaulted, mlock: %s%s%s\n",
                ar->bytes / 1024, ar->locked ? "yes" : "NO", ar->locked ? "" : " -- ",
                ar->locked ? "" : strerror(ar->lock_err));
    } else {
        fprintf(f, "test processes: none ran its setup\n");
    }
    if (o->timeout_s)
        fprintf(f,
                "watchdog: a test process without progress for %u s is killed "
                "(--timeout)\n",
                o->timeout_s);
    else
        fprintf(f, "watchdog: none (--timeout 0)\n");
    tk_timer_print(f, "timer: ", t, TK_DETAIL_BRIEF);
    if (o->subtract_overhead)
        fprintf(f,
                "  --subtract-timer-overhead: %.1f ns (the p50) taken off every sample, "
                "clamped at 0\n",
                tk_timer_ns(t, m->sub_ticks));
    else
        fprintf(f, "  every time below includes it (--subtract-timer-overhead removes it)\n");
    fprintf(f, "seed: %llu\n", (unsigned long long)o->seed);
    fprintf(f, "behaviour: %s\n",
            o->compat ? "--compat: smokey's (failing alloc in the alloc times, hot pass freed in "
                        "order, smokey's size draw and sort keys, one size per pattern test)"
                      : "rtmem's (failing alloc apart, +shuffle +hot frees shuffled; --compat "
                        "for smokey's)");
    fprintf(f,
            "sequence: seq_heap_size=%zuk random_alloc_rounds=%u pattern_heap_size=%zuk "
            "pattern_check_rounds=%u max_results=%d\n",
            o->seq_heap_bytes / 1024, o->random_rounds, o->pattern_heap_bytes / 1024,
            o->pattern_rounds, o->max_results);
    fprintf(f, "phases:");
    for (int ph = 0; ph < MC_PHASES; ph++)
        if (o->phases & (1u << ph))
            fprintf(f, " %s", mc_phase_name((enum mc_phase)ph));
    fprintf(f, "\nallocators:\n");
    for (size_t i = 0; i < m->n_t; i++)
        fprintf(f, "  %-*s %s\n", mc_name_width(m), m->t[i].a.name, m->t[i].a.describe);
    for (size_t i = 0; i < m->kinds.n_skipped; i++)
        fprintf(f, "  %-*s SKIPPED: %s\n", mc_name_width(m), m->kinds.skipped[i].name,
                m->kinds.skipped[i].why);
    print_sizes(f, m);
}

/* ---- the report ---------------------------------------------------------------------- */

/* What print writes, each line starting with "# ": rtmem's own lines in
 * smokey's layout. */
static void print_commented(FILE *f, const struct memcheck *m,
                            void (*print)(FILE *, const struct memcheck *))
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) {
        perror("rtmem memcheck: open_memstream");
        return;
    }
    print(mem, m);
    if (fclose(mem) == 0 && text)
        for (const char *p = text; *p;) {
            size_t n = strcspn(p, "\n");
            fprintf(f, "# %.*s\n", (int)n, p);
            p += n + (p[n] == '\n');
        }
    free(text);
}

void mc_print_preamble(FILE *f, const struct memcheck *m)
{
    if (m->o->format == MC_FORMAT_NS)
        print_header(f, m);
    else
        print_commented(f, m, print_header);
}

static void print_end(FILE *f, const struct memcheck *m)
{
    const char *pre = m->o->format == MC_FORMAT_SMOKEY ? "# " : "";
    fprintf(f,
            "\n%sseed %llu; %.1f s; throttle rests %u (real-time throttling avoided "
            "between tests); VmLck at the end of the last test process %ld kB\n",
            pre, (unsigned long long)m->o->seed, m->seconds, m->sh->rt.rests, m->sh->rt.vmlck_kb);
    char buf[192];
    for (size_t i = 0; i < m->n_t; i++)
        if (m->t[i].a.own_process)
            fprintf(f, "%s%s: %s\n", pre, m->t[i].a.name,
                    tk_glibc_rt_outcome(&m->t[i].a, buf, sizeof(buf)));
}

void mc_report(const struct tk_session *s, FILE *f)
{
    const struct memcheck *m = s->state;
    if (m->o->format == MC_FORMAT_NS) {
        print_results(f, m);
        print_failures(f, m);
    } else {
        mc_print_smokey(f, m);
        print_commented(f, m, print_failures);
    }
    print_end(f, m);
}
