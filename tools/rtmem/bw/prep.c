/*
 * `rtmem bw`, prep phase: a memcpy of --size bytes from the run's source
 * (prefaulted, warm) into a destination mapped afresh for every
 * repetition (rtm_arena_open, then rtm_arena_close after the copy), so
 * that under "none" the first touch of each page really is inside the
 * timed copy. The preparations take turns, repetition by repetition:
 *
 *   none      RTM_ARENA_PREFAULT_NONE, no lock
 *   prefault  RTM_ARENA_PREFAULT_POPULATE (MADV_POPULATE_WRITE)
 *   mlock     RTM_ARENA_LOCK_TRY, no prefault: mlock faults the pages in;
 *             the lock state and the change of VmLck are read back
 *             (rtm_arena_report) every repetition
 *   memset    no prefault, then memset of the whole destination
 *
 * The preparation is timed with CLOCK_MONOTONIC_RAW (it includes the
 * arena's mmap and its reading of /proc, the same for every mode) and its
 * page faults counted (getrusage RUSAGE_THREAD), apart from the copy's.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bw.h"

static void bw_prep_print(FILE *f, const struct bw *b);
#include "common/tool.h"

static const int prefault_of[BW_N_PREPS] = {
    [BW_PREP_NONE] = RTM_ARENA_PREFAULT_NONE,
    [BW_PREP_PREFAULT] = RTM_ARENA_PREFAULT_POPULATE,
    [BW_PREP_MLOCK] = RTM_ARENA_PREFAULT_NONE,
    [BW_PREP_MEMSET] = RTM_ARENA_PREFAULT_NONE,
};

static const int lock_of[BW_N_PREPS] = {
    [BW_PREP_MLOCK] = RTM_ARENA_LOCK_TRY,
};

/* One repetition of preparation p. 0, or -1 (reported). */
static int one(struct bw *b, enum bw_prep p, unsigned rep)
{
    struct bw_prep_result *r = &b->prep[p];
    size_t bytes = (size_t)b->o.size;
    struct rtm_arena a;
    memset(&a, 0, sizeof(a));
    tk_rt_breather(&b->rt);
    uint64_t m0, j0, m1, j1;
    bw_faults(&m0, &j0);
    uint64_t t0 = tk_clock_ns();
    int rc = bw_open_end(&a, &b->o.dst, bytes, false, prefault_of[p], lock_of[p]);
    if (rc == 0 && p == BW_PREP_MEMSET)
        memset(a.base, 0, bytes);
    uint64_t t1 = tk_clock_ns();
    bw_faults(&m1, &j1);
    if (rc != 0) {
        fprintf(stderr, "%s: prep %s: cannot map the destination: %s\n", b->prog, bw_prep_ids[p],
                a.message[0] ? a.message : strerror(-rc));
        return -1;
    }
    tk_samples_add(&r->prep_ns, t1 - t0);
    r->prep_minor += m1 - m0;
    r->prep_major += j1 - j0;
    const struct rtm_arena_report *ar = &a.report;
    r->lock_state = ar->lock_state;
    r->lock_errno = ar->lock_errno;
    if (rep == 0) {
        r->locked_min = r->locked_max = ar->locked_bytes;
        r->resident_min = ar->resident_bytes;
        r->mapped_bytes = ar->size_bytes;
        snprintf(r->message, sizeof(r->message), "%s", a.message);
    }
    r->locked_min = ar->locked_bytes < r->locked_min ? ar->locked_bytes : r->locked_min;
    r->locked_max = ar->locked_bytes > r->locked_max ? ar->locked_bytes : r->locked_max;
    /* The open read residency before the memset: count it again after. */
    size_t resident = ar->resident_bytes;
    if (p == BW_PREP_MEMSET) {
        size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = (ar->size_bytes + pg - 1) / pg;
        unsigned char *vec = malloc(n);
        if (vec && mincore(a.base, ar->size_bytes, vec) == 0) {
            resident = 0;
            for (size_t k = 0; k < n; k++)
                resident += (vec[k] & 1) ? pg : 0;
        }
        free(vec);
    }
    if (rep == 0)
        r->resident_min = resident;
    r->resident_min = resident < r->resident_min ? resident : r->resident_min;

    uint64_t f0, f1;
    bw_time_begin(b, &f0, &f1);
    uint64_t c0 = tk_timer_start();
    memcpy(a.base, b->src.a.base, bytes);
    uint64_t c1 = tk_timer_end();
    bw_time_end(b, &r->copy, c1 - c0, f0, f1);
    bw_verify(b, bw_prep_ids[p], a.base, b->src.a.base, bytes);
    rtm_arena_close(&a);
    return 0;
}

/* "VmLck +32 MiB every repetition", or what differed. */
static const char *vmlck_text(char *buf, size_t size, const struct bw_prep_result *r)
{
    char a[32], c[32];
    if (r->locked_min == r->locked_max)
        snprintf(buf, size, "%s, VmLck %s%s each time", bw_lock_name(r->lock_state),
                 r->locked_min >= 0 ? "+" : "-",
                 tk_fmt_iec(a, sizeof(a),
                            (uint64_t)(r->locked_min >= 0 ? r->locked_min : -r->locked_min)));
    else
        snprintf(buf, size, "%s, VmLck moved by %" PRId64 " to %" PRId64 " bytes (%s, %s)",
                 bw_lock_name(r->lock_state), r->locked_min, r->locked_max,
                 tk_fmt_iec(a, sizeof(a), (uint64_t)(r->locked_min > 0 ? r->locked_min : 0)),
                 tk_fmt_iec(c, sizeof(c), (uint64_t)(r->locked_max > 0 ? r->locked_max : 0)));
    return buf;
}

int bw_prep_run(struct bw *b)
{
    for (unsigned rep = 0; rep < b->o.reps; rep++)
        for (int p = 0; p < BW_N_PREPS; p++)
            if (one(b, (enum bw_prep)p, rep) != 0)
                return -1;
    for (int p = 0; p < BW_N_PREPS; p++) {
        struct bw_prep_result *r = &b->prep[p];
        bw_stat_summarize(b, &r->copy);
        r->prep_median_ns = (double)tk_samples_percentile(&r->prep_ns, 0.5);
        r->prep_p10_ns = (double)tk_samples_percentile(&r->prep_ns, 0.1);
        r->prep_p90_ns = (double)tk_samples_percentile(&r->prep_ns, 0.9);
    }
    bw_prep_print(stdout, b);
    fflush(stdout);
    return 0;
}

static void bw_prep_print(FILE *f, const struct bw *b)
{
    char sz[32];
    unsigned reps = b->o.reps;
    fprintf(f,
            "prep: a memcpy of %s into a fresh destination each repetition (%u each); "
            "medians, faults per repetition\n",
            tk_fmt_iec(sz, sizeof(sz), b->o.size), reps);
    fprintf(f, "%-9s %10s %8s %10s %8s %10s %10s  %s\n", "prepare", "prep ms", "faults", "copy ms",
            "faults", "total ms", "copy MiB/s", "lock");
    fprintf(f, "%-9s %10s %8s %10s %8s %10s %10s  %s\n", "---------", "----------", "--------",
            "----------", "--------", "----------", "----------", "----");
    for (int p = 0; p < BW_N_PREPS; p++) {
        const struct bw_prep_result *r = &b->prep[p];
        double prep_ms = r->prep_median_ns / 1e6, copy_ms = r->copy.median_ns / 1e6;
        char mibs[32], lock[200];
        if (p == BW_PREP_MLOCK)
            vmlck_text(lock, sizeof(lock), r);
        else
            snprintf(lock, sizeof(lock), "-");
        fprintf(f, "%-9s %10.3f %8.0f %10.3f %8.0f %10.3f %10s  %s\n", bw_prep_ids[p], prep_ms,
                (double)(r->prep_minor + r->prep_major) / reps, copy_ms,
                (double)(r->copy.minor_faults + r->copy.major_faults) / reps, prep_ms + copy_ms,
                bw_fmt_mibs(mibs, sizeof(mibs), r->copy.median), lock);
    }
    const struct bw_prep_result *lk = &b->prep[BW_PREP_MLOCK];
    if (lk->lock_state == RTM_ARENA_UNLOCKED)
        fprintf(f, "mlock: NOT locked (%s)%s%s\n",
                lk->lock_errno ? strerror(lk->lock_errno) : "no error", lk->message[0] ? ": " : "",
                lk->message);
    else if (lk->lock_state == RTM_ARENA_LOCK_IGNORED)
        fprintf(f, "mlock: returned success and locked NOTHING (VmLck did not move): %s\n",
                lk->message);
    else if ((lk->lock_state == RTM_ARENA_LOCKED || lk->lock_state == RTM_ARENA_LOCKED_ON_FAULT) &&
             (lk->locked_min != (int64_t)lk->mapped_bytes ||
              lk->locked_max != (int64_t)lk->mapped_bytes))
        fprintf(f, "mlock: VmLck did not move by the destination's size every time (another "
                   "thread locking?)\n");
    fprintf(f, "\n");
}

void bw_prep_json(struct tk_json *j, const struct bw *b)
{
    tk_json_key(j, "prep");
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "bytes", b->o.size);
    for (int p = 0; p < BW_N_PREPS; p++) {
        const struct bw_prep_result *r = &b->prep[p];
        tk_json_key(j, bw_prep_ids[p]);
        tk_json_begin_object(j);
        tk_json_kv_double(j, "prep_median_ns", r->prep_median_ns);
        tk_json_kv_double(j, "prep_p10_ns", r->prep_p10_ns);
        tk_json_kv_double(j, "prep_p90_ns", r->prep_p90_ns);
        tk_json_kv_uint(j, "prep_minor_faults", r->prep_minor);
        tk_json_kv_uint(j, "prep_major_faults", r->prep_major);
        tk_json_kv_string(j, "lock_state", bw_lock_name(r->lock_state));
        tk_json_kv_int(j, "lock_errno", r->lock_errno);
        tk_json_kv_int(j, "locked_bytes_min", r->locked_min);
        tk_json_kv_int(j, "locked_bytes_max", r->locked_max);
        tk_json_kv_uint(j, "resident_bytes_min", r->resident_min);
        tk_json_kv_string(j, "message", r->message);
        tk_json_key(j, "copy");
        bw_stat_json(j, b, &r->copy);
        tk_json_end_object(j);
    }
    tk_json_end_object(j);
}
