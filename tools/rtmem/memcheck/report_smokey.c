/*
 * `rtmem memcheck`: the text report in Xenomai smokey's exact layout
 * (--format smokey): per allocator, "memcheck started/finished" lines and
 * each sequential phase's tables and overall lines, times in us with one
 * decimal. rtmem's own lines, which smokey does not have, start with '#'.
 */
#include <stdlib.h>
#include <time.h>

#include "memcheck.h"

/* Smokey prints a block size below 1 KiB in bytes, else in KiB, truncated. */
static void smokey_row(FILE *f, const struct mc_row *r)
{
    bool small = r->block_bytes < 1024;
    fprintf(f, "%7zuk  %7zu%s  %6zu  %5.1f  %5.1f  %5.1f  %5.1f   %4.1f  %5.1f   %s%s%s\n",
            r->heap_bytes / 1024, small ? r->block_bytes : r->block_bytes / 1024, small ? " " : "k",
            r->nrblocks, r->avg_alloc_ns / 1000.0, r->avg_free_ns / 1000.0,
            r->max_alloc_ns / 1000.0, r->max_free_ns / 1000.0, r->overhead_pct, r->frag_pct,
            r->nrblocks == 0 ? "FAILED " : "", r->flags & MC_F_SHUFFLE ? "+shuffle " : "",
            r->flags & MC_F_HOT ? "+hot" : "");
}

static void smokey_sorted(FILE *f, const struct memcheck *m, const struct mc_target *t,
                          const struct mc_seq *sq, enum mc_sort_key k, size_t nr)
{
    struct mc_keyed *v = mc_sorted_rows(m, t, sq, k);
    if (!v)
        return;
    fprintf(f, "\nsorted by: max %s\n%8s  %7s  %7s  %5s  %5s  %5s  %5s   %5s  %5s  %s\n",
            mc_sort_name(k), "HEAPSZ", "BLOCKSZ", "NRBLKS", "AVG-A", "AVG-F", "MAX-A", "MAX-F",
            "OVRH%", "FRAG%", "FLAGS");
    for (size_t i = 0; i < nr; i++)
        smokey_row(f, &sq->rows[v[i].idx]);
    if (nr < sq->n)
        fprintf(f, "  ... (%zu results following) ...\n", sq->n - nr);
    free(v);
}

static void smokey_dump(FILE *f, const struct memcheck *m, const struct mc_target *t,
                        enum mc_phase ph)
{
    const struct mc_seq *sq = &t->seq[ph];
    const struct mc_overall *o = &sq->all;
    fprintf(f, "\n[%s] ON '%s'\n\n", mc_seq_title(ph), t->a.name);
    fprintf(f, "HEAPSZ\ttest heap size\nBLOCKSZ\ttested block size\n"
               "NRBLKS\tnumber of blocks allocatable in heap\n"
               "AVG-A\taverage time to allocate block (us)\n"
               "AVG-F\taverage time to free block (us)\n"
               "MAX-A\tmax time to allocate block (us)\nMAX-F\tmax time to free block (us)\n"
               "OVRH%%\toverhead\nFRAG%%\texternal fragmentation\n"
               "FLAGS\t+shuffle: randomized free\n"
               "    \t+hot: measure after initial alloc/free pass (hot heap)\n");
    if (m->o->max_results > 0) {
        size_t nr = (size_t)m->o->max_results < sq->n ? (size_t)m->o->max_results : sq->n;
        for (int k = MC_BY_ALLOC; k <= MC_BY_FRAG; k++)
            smokey_sorted(f, m, t, sq, (enum mc_sort_key)k, nr);
    } else if (m->o->max_results < 0) {
        smokey_sorted(f, m, t, sq, MC_BY_HEAP, sq->n);
    }
    fprintf(f, "\noverall:\n");
    fprintf(f, "  worst alloc time: %.1f (us)\n", o->worst_alloc_ns / 1000.0);
    fprintf(f, "  worst free time: %.1f (us)\n", o->worst_free_ns / 1000.0);
    fprintf(f, "  average of max. alloc times: %.1f (us)\n", o->avg_max_alloc_ns / 1000.0);
    fprintf(f, "  average of max. free times: %.1f (us)\n", o->avg_max_free_ns / 1000.0);
    fprintf(f, "  average alloc time: %.1f (us)\n", o->avg_alloc_ns / 1000.0);
    fprintf(f, "  average free time: %.1f (us)\n", o->avg_free_ns / 1000.0);
    fprintf(f, "  average overhead: %.1f%%\n", o->avg_overhead_pct);
    fprintf(f, "  average fragmentation: %.1f%%\n", o->avg_frag_pct);
}

/* ctime's text, newline included, as smokey prints it. */
static const char *when(const time_t *at, char *buf)
{
    if (!ctime_r(at, buf))
        snprintf(buf, 26, "?\n");
    return buf;
}

void mc_print_smokey(FILE *f, const struct memcheck *m)
{
    char tb[32];
    for (size_t i = 0; i < m->n_t; i++) {
        const struct mc_target *t = &m->t[i];
        fprintf(f, "== memcheck started for %s at %s\n", t->a.name, when(&t->started, tb));
        fprintf(f,
                "     seq_heap_size=%zuk\n     random_alloc_rounds=%u\n"
                "     pattern_heap_size=%zuk\n     pattern_check_rounds=%u\n",
                m->o->seq_heap_bytes / 1024, m->o->random_rounds, m->o->pattern_heap_bytes / 1024,
                m->o->pattern_rounds);
        if (mc_is_process(t))
            fprintf(f,
                    "# %s is a process allocator: OVRH%% is the slack %s shows, FRAG%% "
                    "counts probes inside the fill's span\n",
                    t->a.name, t->a.usable_name);
        else if (!(t->a.applies & TK_APPLY_STATS))
            fprintf(f,
                    "# %s has no stats: H is the memory given to create, OVRH%% includes "
                    "its metadata\n",
                    t->a.name);
        for (int ph = MC_PH_POW2; ph <= MC_PH_RANDOM; ph++)
            if (t->seq[ph].ran)
                smokey_dump(f, m, t, (enum mc_phase)ph);
        if (t->pattern.ran)
            fprintf(f, "\n(running the pattern check test for '%s' -- this may take some time)\n",
                    t->a.name);
        if (t->fail.failed)
            fprintf(f, "** '%s' FAILED: %s\n", t->a.name, t->fail.msg);
        fprintf(f, "\n== memcheck finished for %s at %s\n", t->a.name, when(&t->finished, tb));
    }
}
