/*
 * `rtmem bw`, methods phase: each method at each size, the destination
 * prefaulted (the run's), the cache warm (one untimed copy first).
 *
 * A repetition is `copies` copies of the size, timed as a whole: one when
 * a copy lasts --rep-time or more, else as many as fill it (from the
 * shorter of two one-copy trials, which also warm the cache), so that a
 * copy of 4 KiB is not lost in the timer's overhead. The methods take
 * turns, repetition by repetition, over the same source and destination:
 * a size that fits a cache stays in it.
 * After the repetitions, each method copies once more into a zeroed
 * destination, which is checked against the source (mcblock-same: each
 * block against the source's first).
 */
#include <string.h>

#include "bw.h"
#include "common/tool.h"

/* Ticks of one copy: the shorter of two trials. */
static uint64_t trial(struct bw *b, enum bw_method m, size_t bytes)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 2; i++) {
        uint64_t t0 = tk_timer_start();
        bw_copy(m, b->dst.a.base, b->src.a.base, bytes, (size_t)b->o.block);
        uint64_t t = tk_timer_end() - t0;
        best = t < best ? t : best;
    }
    return best;
}

static uint64_t copies_per_rep(struct bw *b, enum bw_method m, size_t bytes)
{
    double want = (double)b->o.rep_time_ns / b->timer.ns_per_tick;
    double one = (double)trial(b, m, bytes);
    if (one >= want || one <= 0)
        return 1;
    return (uint64_t)(want / one) + 1;
}

static void measure_size(struct bw *b, size_t i)
{
    size_t bytes = (size_t)b->sizes.bytes[i];
    char *dst = b->dst.a.base;
    const char *src = b->src.a.base;
    for (int m = 0; m < BW_N_METHODS; m++) {
        tk_rt_breather(&b->rt);
        b->methods[i][m].copies = copies_per_rep(b, (enum bw_method)m, bytes);
    }
    for (unsigned r = 0; r < b->o.reps; r++)
        for (int m = 0; m < BW_N_METHODS; m++) {
            struct bw_stat *st = &b->methods[i][m];
            tk_rt_breather(&b->rt);
            uint64_t f0, f1;
            bw_time_begin(b, &f0, &f1);
            uint64_t t0 = tk_timer_start();
            for (uint64_t k = st->copies; k > 0; k--)
                bw_copy((enum bw_method)m, dst, src, bytes, (size_t)b->o.block);
            uint64_t t1 = tk_timer_end();
            bw_time_end(b, st, t1 - t0, f0, f1);
        }
    size_t block = (size_t)b->o.block;
    for (int m = 0; m < BW_N_METHODS; m++) {
        bw_spoil(dst, src, bytes);
        bw_copy((enum bw_method)m, dst, src, bytes, block);
        if (m != BW_MCBLOCK_SAME)
            bw_verify(b, bw_method_ids[m], dst, src, bytes);
        else /* each block of the destination holds the source's first */
            for (size_t at = 0; at < bytes; at += block)
                bw_verify(b, bw_method_ids[m], dst + at, src,
                          bytes - at < block ? bytes - at : block);
        bw_stat_summarize(b, &b->methods[i][m]);
    }
}

static void print_head(FILE *f)
{
    fprintf(f, "methods: MiB/s, median of the repetitions (spread p10-p90 / median); mbw's "
               "avg, min, max in the JSON\n");
    fprintf(f, "%10s  %-6s %10s %5s %10s %5s %10s %5s %12s %5s\n", "size", "fits", "memcpy", "spr",
            "dumb", "spr", "mcblock", "spr", "mcblock-same", "spr");
    fprintf(f, "%10s  %-6s %10s %5s %10s %5s %10s %5s %12s %5s\n", "----------", "------",
            "----------", "-----", "----------", "-----", "----------", "-----", "------------",
            "-----");
}

static void print_row(FILE *f, const struct bw *b, size_t i)
{
    char sz[32], v[BW_N_METHODS][32], sp[BW_N_METHODS][16];
    for (int m = 0; m < BW_N_METHODS; m++) {
        const struct bw_stat *st = &b->methods[i][m];
        bw_fmt_mibs(v[m], sizeof(v[m]), st->median);
        snprintf(sp[m], sizeof(sp[m]), "%.0f%%", bw_spread_pct(st));
    }
    fprintf(f, "%10s  %-6s %10s %5s %10s %5s %10s %5s %12s %5s\n",
            tk_fmt_iec(sz, sizeof(sz), b->sizes.bytes[i]),
            tk_caches_level_of(&b->caches, b->sizes.bytes[i]), v[0], sp[0], v[1], sp[1], v[2],
            sp[2], v[3], sp[3]);
}

int bw_methods_run(struct bw *b)
{
    print_head(stdout);
    for (size_t i = 0; i < b->sizes.n; i++) {
        measure_size(b, i);
        print_row(stdout, b, i);
        fflush(stdout);
    }
    printf("\n");
    return 0;
}

void bw_methods_print(FILE *f, const struct bw *b)
{
    /* The table was printed as it was measured; the summary: glibc's steps
     * and the mbw comparisons. */
    const struct bw_glibc *g = &b->glibc;
    const uint64_t thr[] = { g->rep_movsb, g->movsb_stop, g->non_temporal };
    static const char *const names[] = { "rep movsb from", "rep movsb up to",
                                         "non-temporal stores from" };
    char a[32], c[32], x[32], y[32];
    for (size_t t = 0; t < sizeof(thr) / sizeof(thr[0]); t++) {
        /* rep movsb stopping where non-temporal stores start is one step:
         * said once, as the latter. */
        if (!thr[t] || (t == 1 && thr[1] == thr[2]))
            continue;
        size_t below = BW_MAX_SIZES, at = BW_MAX_SIZES;
        for (size_t i = 0; i < b->sizes.n; i++) {
            if (b->sizes.bytes[i] == thr[t] / BW_GRAIN * BW_GRAIN)
                at = i;
            if (b->sizes.bytes[i] == thr[t] / 8 * 7 / BW_GRAIN * BW_GRAIN)
                below = i;
        }
        if (below == BW_MAX_SIZES || at == BW_MAX_SIZES)
            continue;
        const struct bw_stat *lo = &b->methods[below][BW_MEMCPY], *hi = &b->methods[at][BW_MEMCPY];
        fprintf(f, "glibc memcpy, %s %s: %s MiB/s at %s, %s at %s (x%.2f)\n", names[t],
                tk_fmt_iec(a, sizeof(a), thr[t]), bw_fmt_mibs(x, sizeof(x), lo->median),
                tk_fmt_iec(c, sizeof(c), b->sizes.bytes[below]),
                bw_fmt_mibs(y, sizeof(y), hi->median), tk_fmt_iec(a, sizeof(a), thr[t]),
                lo->median > 0 ? hi->median / lo->median : 0);
    }
    /* mbw's own lines, at --size if measured (the study's 32 MiB), else at
     * the largest size. */
    size_t top = b->sizes.n - 1, at = top;
    for (size_t i = 0; i < b->sizes.n; i++)
        if (b->sizes.bytes[i] == b->o.size)
            at = i;
    fprintf(f,
            "as mbw gives them, at %s (MiB/s: all bytes over all time, slowest and fastest "
            "repetition):\n",
            tk_fmt_iec(a, sizeof(a), b->sizes.bytes[at]));
    for (int m = 0; m < BW_N_METHODS; m++) {
        const struct bw_stat *st = &b->methods[at][m];
        fprintf(f, "  %-13s avg %10s  min %10s  max %10s\n", bw_method_ids[m],
                bw_fmt_mibs(x, sizeof(x), st->avg), bw_fmt_mibs(y, sizeof(y), st->min),
                bw_fmt_mibs(c, sizeof(c), st->max));
    }
    const struct bw_stat *mc = &b->methods[top][BW_MCBLOCK],
                         *same = &b->methods[top][BW_MCBLOCK_SAME];
    const struct bw_stat *mem = &b->methods[top][BW_MEMCPY], *dumb = &b->methods[top][BW_DUMB];
    fprintf(f,
            "at %s: mcblock-same (Debian mbw's MCBLOCK) reports x%.2f the bandwidth of "
            "mcblock; dumb runs at x%.2f of memcpy\n",
            tk_fmt_iec(a, sizeof(a), b->sizes.bytes[top]),
            mc->median > 0 ? same->median / mc->median : 0,
            mem->median > 0 ? dumb->median / mem->median : 0);
}

void bw_methods_json(struct tk_json *j, const struct bw *b)
{
    tk_json_key(j, "methods");
    tk_json_begin_array(j);
    for (size_t i = 0; i < b->sizes.n; i++) {
        tk_json_begin_object(j);
        tk_json_kv_uint(j, "bytes", b->sizes.bytes[i]);
        tk_json_kv_string(j, "level", tk_caches_level_of(&b->caches, b->sizes.bytes[i]));
        for (int m = 0; m < BW_N_METHODS; m++) {
            tk_json_key(j, bw_method_ids[m]);
            bw_stat_json(j, b, &b->methods[i][m]);
        }
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
}
