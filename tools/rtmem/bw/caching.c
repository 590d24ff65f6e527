/*
 * `rtmem bw`, cache phase: a copy between the run's source and destination
 * (both prefaulted), of --size bytes and, when smaller, of a size whose
 * source and destination fit the last-level cache together (a quarter of
 * it each), in three cache states, taking turns repetition by repetition:
 *
 *   warm     one untimed memcpy, then the timed memcpy: whatever of source
 *            and destination fits in the caches is there;
 *   flushed  source and destination cleaned from the caches
 *            (tk_cache_flush: written back and evicted), then the memcpy:
 *            every line comes from memory, every destination line is
 *            fetched before it is written (write-allocate);
 *   nt       one untimed memcpy, then a copy with non-temporal stores
 *            (tk_copy_nt): the destination is written around the caches,
 *            the nearest a user-space program gets to an uncached
 *            destination. Not available off x86-64, and said.
 *
 * After the repetitions each state copies once more into a zeroed
 * destination, checked against the source.
 */
#include <string.h>

#include "bw.h"

static void bw_cache_print(FILE *f, const struct bw *b);
#include "common/tool.h"

static bool available(const struct bw *b, enum bw_cache c)
{
    if (c == BW_CACHE_NT)
        return b->cops.nt_copy;
    if (c == BW_CACHE_FLUSHED)
        return b->cops.method != TK_FLUSH_NONE;
    return true;
}

/* The untimed part of state c, then its copy of bytes, timed when st is
 * given. */
static void copy_in(struct bw *b, enum bw_cache c, size_t bytes, struct bw_stat *st)
{
    char *dst = b->dst.a.base;
    const char *src = b->src.a.base;
    if (c == BW_CACHE_FLUSHED) {
        tk_cache_flush(&b->cops, src, bytes);
        tk_cache_flush(&b->cops, dst, bytes);
    } else {
        memcpy(dst, src, bytes);
    }
    uint64_t f0 = 0, f1 = 0, t0 = 0;
    if (st) {
        bw_time_begin(b, &f0, &f1);
        t0 = tk_timer_start();
    }
    if (c == BW_CACHE_NT)
        tk_copy_nt(&b->cops, dst, src, bytes);
    else
        memcpy(dst, src, bytes);
    if (st) {
        uint64_t t1 = tk_timer_end();
        bw_time_end(b, st, t1 - t0, f0, f1);
    }
}

int bw_cache_run(struct bw *b)
{
    for (size_t i = 0; i < b->n_cache; i++) {
        size_t bytes = (size_t)b->cache_bytes[i];
        for (unsigned r = 0; r < b->o.reps; r++)
            for (int c = 0; c < BW_N_CACHES; c++)
                if (available(b, (enum bw_cache)c)) {
                    tk_rt_breather(&b->rt);
                    copy_in(b, (enum bw_cache)c, bytes, &b->cache[i][c]);
                }
        for (int c = 0; c < BW_N_CACHES; c++)
            if (available(b, (enum bw_cache)c)) {
                bw_spoil(b->dst.a.base, b->src.a.base, bytes);
                /* The spoiling leaves the destination warm: this checks the
                 * copy, not the cache state. */
                copy_in(b, (enum bw_cache)c, bytes, NULL);
                bw_verify(b, bw_cache_ids[c], b->dst.a.base, b->src.a.base, bytes);
                bw_stat_summarize(b, &b->cache[i][c]);
            }
    }
    bw_cache_print(stdout, b);
    fflush(stdout);
    return 0;
}

static void bw_cache_print(FILE *f, const struct bw *b)
{
    char sz[32], v[32], lo[32], hi[32], c1[32], c2[32];
    fprintf(f,
            "cache: a memcpy, source and destination prefaulted; flush by %s; MiB/s, median "
            "(spread), min, max\n",
            tk_flush_method_name(b->cops.method));
    fprintf(f, "%10s %-8s %10s %6s %10s %10s %8s %14s %14s\n", "size", "state", "MiB/s", "spread",
            "min", "max", "x warm", "cache-misses", "LLC-misses");
    fprintf(f, "%10s %-8s %10s %6s %10s %10s %8s %14s %14s\n", "----------", "--------",
            "----------", "------", "----------", "----------", "--------", "--------------",
            "--------------");
    for (size_t i = 0; i < b->n_cache; i++) {
        const struct bw_stat *warm = &b->cache[i][BW_CACHE_WARM];
        tk_fmt_iec(sz, sizeof(sz), b->cache_bytes[i]);
        for (int c = 0; c < BW_N_CACHES; c++) {
            const struct bw_stat *st = &b->cache[i][c];
            if (!st->measured) {
                fprintf(f, "%10s %-8s not available: %s\n", sz, bw_cache_ids[c],
                        c == BW_CACHE_NT ? "no non-temporal copy for this architecture"
                                         : "no way to clean the caches here");
                continue;
            }
            fprintf(f, "%10s %-8s %10s %5.0f%% %10s %10s %8.2f %14s %14s\n", sz, bw_cache_ids[c],
                    bw_fmt_mibs(v, sizeof(v), st->median), bw_spread_pct(st),
                    bw_fmt_mibs(lo, sizeof(lo), st->min), bw_fmt_mibs(hi, sizeof(hi), st->max),
                    warm->median > 0 ? st->median / warm->median : 0,
                    bw_fmt_counter(c1, sizeof(c1), b, st, TK_PERF_CACHE_MISSES),
                    bw_fmt_counter(c2, sizeof(c2), b, st, TK_PERF_LLC_MISSES));
        }
    }
    fprintf(f, "\n");
}

void bw_cache_json(struct tk_json *j, const struct bw *b)
{
    tk_json_key(j, "cache");
    tk_json_begin_object(j);
    tk_json_kv_string(j, "flush_method", tk_flush_method_name(b->cops.method));
    tk_json_kv_uint(j, "flush_line_bytes", b->cops.line_bytes);
    tk_json_kv_bool(j, "nt_copy", b->cops.nt_copy);
    tk_json_key(j, "points");
    tk_json_begin_array(j);
    for (size_t i = 0; i < b->n_cache; i++) {
        tk_json_begin_object(j);
        tk_json_kv_uint(j, "bytes", b->cache_bytes[i]);
        tk_json_kv_string(j, "level", tk_caches_level_of(&b->caches, 2 * b->cache_bytes[i]));
        for (int c = 0; c < BW_N_CACHES; c++)
            if (tk_json_key_or_null(j, bw_cache_ids[c], b->cache[i][c].measured))
                bw_stat_json(j, b, &b->cache[i][c]);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_end_object(j);
}
