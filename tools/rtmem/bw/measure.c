/*
 * `rtmem bw`: what every phase and the report share: the names of the
 * methods, preparations, cache states and kinds of memory; a timed copy's
 * start and end (time, page faults, counters); the check of what it
 * copied; a destination opened; a measured configuration's figures
 * (struct bw_stat) and their text and JSON.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bw.h"

static double mibs(const struct bw *b, const struct bw_stat *st, double ticks)
{
    double ns = ticks * b->timer.ns_per_tick;
    return ns > 0 ? (double)st->bytes * (double)st->copies / (double)BW_MIB / (ns / 1e9) : 0;
}

static double per_copy(const struct bw_stat *st, uint64_t total)
{
    double copies = (double)st->ticks.n * (double)st->copies;
    return copies > 0 ? (double)total / copies : 0;
}

const char *const bw_method_ids[BW_N_METHODS] = {
    [BW_MEMCPY] = "memcpy",
    [BW_DUMB] = "dumb",
    [BW_MCBLOCK] = "mcblock",
    [BW_MCBLOCK_SAME] = "mcblock-same",
};

const char *const bw_prep_ids[BW_N_PREPS] = {
    [BW_PREP_NONE] = "none",
    [BW_PREP_PREFAULT] = "prefault",
    [BW_PREP_MLOCK] = "mlock",
    [BW_PREP_MEMSET] = "memset",
};

const char *const bw_cache_ids[BW_N_CACHES] = {
    [BW_CACHE_WARM] = "warm",
    [BW_CACHE_FLUSHED] = "flushed",
    [BW_CACHE_NT] = "nt",
};

const char *const bw_kind_ids[] = {
    [BW_KIND_ANON] = "anon",
    [BW_KIND_MEMFD] = "memfd",
    [BW_KIND_HUGETLB] = "hugetlb",
    [BW_KIND_DEVICE] = "device",
};

int bw_stat_init(struct bw_stat *st, unsigned reps, uint64_t bytes)
{
    memset(st, 0, sizeof(*st));
    st->bytes = bytes;
    st->copies = 1;
    return tk_samples_init(&st->ticks, reps);
}

void bw_stat_destroy(struct bw_stat *st)
{
    tk_samples_destroy(&st->ticks);
}

void bw_stat_summarize(const struct bw *b, struct bw_stat *st)
{
    struct tk_samples *t = &st->ticks;
    if (!t->n || !st->copies)
        return;
    /* The fastest repetition is the most MiB/s: percentiles of MiB/s are
     * the opposite percentiles of ticks. */
    st->median = mibs(b, st, (double)tk_samples_percentile(t, 0.5));
    st->p10 = mibs(b, st, (double)tk_samples_percentile(t, 0.9));
    st->p90 = mibs(b, st, (double)tk_samples_percentile(t, 0.1));
    st->max = mibs(b, st, (double)t->v[0]);
    st->min = mibs(b, st, (double)t->v[t->n - 1]);
    double sum = (double)tk_samples_sum(t);
    st->avg = mibs(b, st, sum / (double)t->n);
    st->median_ns =
        (double)tk_samples_percentile(t, 0.5) * b->timer.ns_per_tick / (double)st->copies;
}

double bw_spread_pct(const struct bw_stat *st)
{
    return st->median > 0 ? 100.0 * (st->p90 - st->p10) / st->median : NAN;
}

const char *bw_fmt_mibs(char *buf, size_t size, double v)
{
    if (!(v > 0))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.*f", v < 100 ? 2 : v < 10000 ? 1 : 0, v);
    return buf;
}

const char *bw_fmt_counter(char *buf, size_t size, const struct bw *b, const struct bw_stat *st,
                           enum tk_perf_event e)
{
    if (!b->perf_open || !tk_perf_has(&b->perf, e))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.0f", per_copy(st, st->counters[e]));
    return buf;
}

void bw_stat_json(struct tk_json *j, const struct bw *b, const struct bw_stat *st)
{
    tk_json_begin_object_compact(j);
    tk_json_kv_uint(j, "bytes", st->bytes);
    tk_json_kv_uint(j, "copies_per_rep", st->copies);
    tk_json_kv_uint(j, "reps", st->ticks.n);
    tk_json_kv_double(j, "avg_mib_s", st->avg);
    tk_json_kv_double(j, "min_mib_s", st->min);
    tk_json_kv_double(j, "max_mib_s", st->max);
    tk_json_kv_double(j, "median_mib_s", st->median);
    tk_json_kv_double(j, "p10_mib_s", st->p10);
    tk_json_kv_double(j, "p90_mib_s", st->p90);
    tk_json_kv_double(j, "median_ns_per_copy", st->median_ns);
    tk_json_kv_double(j, "minor_faults_per_copy", per_copy(st, st->minor_faults));
    tk_json_kv_double(j, "major_faults_per_copy", per_copy(st, st->major_faults));
    tk_json_key(j, "counters_per_copy");
    tk_json_begin_object_compact(j);
    for (int e = 0; e < TK_PERF_N_EVENTS; e++)
        if (tk_json_key_or_null(j, tk_perf_event_id((enum tk_perf_event)e),
                                b->perf_open && tk_perf_has(&b->perf, (enum tk_perf_event)e)))
            tk_json_double(j, per_copy(st, st->counters[e]));
    tk_json_end_object(j);
    tk_json_end_object(j);
}

const char *bw_lock_name(int state)
{
    switch (state) {
    case RTM_ARENA_LOCKED: return "locked";
    case RTM_ARENA_LOCKED_HUGETLB: return "locked (hugetlb)";
    case RTM_ARENA_LOCK_IGNORED: return "IGNORED";
    case RTM_ARENA_LOCKED_ON_FAULT: return "locked on fault";
    default: return "not locked";
    }
}

void bw_faults(uint64_t *minor, uint64_t *major)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0) {
        *minor = *major = 0;
        return;
    }
    *minor = (uint64_t)ru.ru_minflt;
    *major = (uint64_t)ru.ru_majflt;
}

void bw_time_begin(struct bw *b, uint64_t *f0min, uint64_t *f0maj)
{
    bw_faults(f0min, f0maj);
    if (b->perf_open)
        tk_perf_start(&b->perf);
}

void bw_time_end(struct bw *b, struct bw_stat *st, uint64_t ticks, uint64_t f0min, uint64_t f0maj)
{
    if (b->perf_open) {
        tk_perf_stop(&b->perf);
        for (int e = 0; e < TK_PERF_N_EVENTS; e++)
            st->counters[e] += b->perf.ev[e].delta;
    }
    uint64_t f1min, f1maj;
    bw_faults(&f1min, &f1maj);
    st->minor_faults += f1min - f0min;
    st->major_faults += f1maj - f0maj;
    tk_samples_add(&st->ticks, ticks);
    st->measured = true;
}

void bw_spoil(void *dst, const void *src, size_t bytes)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (size_t i = 0; i < bytes; i++)
        d[i] = (unsigned char)~s[i];
}

void bw_verify(struct bw *b, const char *what, void *dst, const void *src, size_t bytes)
{
    if (b->corrupt) /* the test hook: the check must see this */
        ((unsigned char *)dst)[bytes / 2] ^= 0xff;
    if (memcmp(dst, src, bytes) == 0) {
        b->checksum = b->checksum * 31 + ((const unsigned char *)dst)[bytes - 1];
        return;
    }
    const unsigned char *d = dst, *s = src;
    size_t at = 0;
    while (d[at] == s[at])
        at++;
    if (b->verified)
        snprintf(b->mismatch, sizeof(b->mismatch),
                 "%s: the destination differs from the source at byte %zu of %zu", what, at, bytes);
    b->verified = false;
}

int bw_open_end(struct rtm_arena *a, const struct bw_place *place, uint64_t bytes, bool read_only,
                int prefault, int lock)
{
    static const int sources[] = { [BW_KIND_ANON] = RTM_ARENA_ANON,
                                   [BW_KIND_MEMFD] = RTM_ARENA_MEMFD,
                                   [BW_KIND_HUGETLB] = RTM_ARENA_ANON,
                                   [BW_KIND_DEVICE] = RTM_ARENA_DEVICE };
    struct rtm_arena_config cfg = {
        .source = sources[place->kind],
        .page_bytes = place->kind == BW_KIND_HUGETLB ? RTM_ARENA_PAGE_2M : 0,
        .size_bytes = (size_t)bytes,
        .name = place->path,
        .offset = place->offset,
        .prefault = prefault,
        .lock = lock,
        .flags = read_only ? RTM_ARENA_READ_ONLY : 0,
    };
    return rtm_arena_open(a, &cfg);
}
