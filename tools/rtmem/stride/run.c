/*
 * `rtmem stride`: the run. Setup reads the measured CPU's caches and
 * decides the sizes (checked against MemAvailable); the run takes the
 * real-time setup, maps the buffer, calibrates the timer, and measures
 * every size, printing its row as soon as it is measured.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "common/pressure.h"
#include "common/result.h"
#include "common/tool.h"
#include "stride.h"

/* tk_timer_init's calibration window. */
#define TIMER_CALIBRATION_MS 50
/* Accesses between two rests during a warm-up. */
#define WARM_SLICE           ((uint64_t)1 << 20)
/* A calibration trial shorter than the repetition time is grown by the
 * factor it fell short, and this margin. */
#define CALIBRATION_MARGIN   1.1

/* One walk of a pattern over a size: where it is. */
struct walk {
    enum stride_pattern p;
    volatile uint32_t *ints;
    size_t stride_ints, pos;   /* stride patterns: pos counts accesses in a pass */
    void *at;                  /* the chase */
    uint64_t per_pass;         /* accesses in one pass over the size */
    uint64_t bytes_per_access; /* bytes of the size one access stands for */
};

static void walk_run(struct walk *w, uint64_t count)
{
    if (w->p == PAT_CHASE)
        w->at = stride_chase_walk(w->at, count);
    else
        w->pos = stride_rmw_walk(w->ints, (size_t)w->per_pass, w->stride_ints, w->pos, count);
}

static uint64_t thread_minor_faults(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? (uint64_t)ru.ru_minflt : 0;
}

/* What the buffer and the chase's order take for a largest size of bytes. */
static uint64_t memory_needed(const struct stride *st, uint64_t bytes)
{
    return bytes + bytes / st->caches.line_bytes * sizeof(uint32_t);
}

static bool fits_memory(const struct stride *st, uint64_t bytes)
{
    return !st->mem_available || memory_needed(st, bytes) <= st->mem_available / STRIDE_MEM_SHARE;
}

/* The default sizes: doubling from the start up to the top, the top
 * included. */
static void default_sizes(struct stride *st)
{
    const struct tk_cache *l1d = tk_caches_l1d(&st->caches), *llc = tk_caches_llc(&st->caches);
    uint64_t start = STRIDE_START_BYTES;
    if (l1d && l1d->bytes && l1d->bytes / 2 < start)
        start = l1d->bytes / 2 / STRIDE_SIZE_GRAIN * STRIDE_SIZE_GRAIN;
    if (start < STRIDE_SIZE_GRAIN)
        start = STRIDE_SIZE_GRAIN;
    uint64_t top = st->o.max_size;
    if (!top)
        top = llc ? STRIDE_LLC_FACTOR * llc->bytes : STRIDE_UNKNOWN_TOP;
    if (top > STRIDE_MAX_BYTES)
        top = STRIDE_MAX_BYTES;
    top = top / STRIDE_SIZE_GRAIN * STRIDE_SIZE_GRAIN;
    struct tk_sizes *s = &st->sizes;
    s->n = 0;
    for (uint64_t b = start; b < top && s->n < STRIDE_MAX_SIZES - 1; b *= 2)
        s->bytes[s->n++] = b;
    s->bytes[s->n++] = top;
}

int stride_setup(struct tk_session *s)
{
    struct stride *st = calloc(1, sizeof(*st));
    if (!st) {
        fprintf(stderr, "%s: out of memory\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    s->state = st;
    st->o = *(const struct stride_opts *)s->opts;
    st->prog = s->cli.prog;
    s->comment = "\n";
    st->cpu = tk_rt_pinned_cpu(st->o.rt.cpu);
    tk_caches_read(&st->caches, st->cpu);
    st->mem_available = tk_pressure_mem_available();
    tk_pressure_thp(st->thp_mode, sizeof(st->thp_mode));
    if (strcmp(st->thp_mode, "unknown") == 0)
        st->thp_mode[0] = '\0';

    bool given = st->o.sizes.n > 0 || st->o.max_size > 0;
    if (st->o.sizes.n) {
        st->sizes = st->o.sizes;
    } else {
        default_sizes(st);
        if (st->o.first_touch) { /* the published program's one buffer: the top */
            st->sizes.bytes[0] = st->sizes.bytes[st->sizes.n - 1];
            st->sizes.n = 1;
        }
    }
    /* The largest size must fit: one the user named is refused, the default
     * sizes stop below. */
    while (!fits_memory(st, st->sizes.bytes[st->sizes.n - 1])) {
        char size[32], need[32], have[32];
        uint64_t top = st->sizes.bytes[st->sizes.n - 1];
        if (given || st->sizes.n == 1) {
            tk_args_bad(&s->cli,
                        "a buffer of %s (and the chase's order) needs %s: more than half of "
                        "MemAvailable (%s)",
                        tk_fmt_iec(size, sizeof(size), top),
                        tk_fmt_iec(need, sizeof(need), memory_needed(st, top)),
                        tk_fmt_iec(have, sizeof(have), st->mem_available));
            return TK_EXIT_USAGE;
        }
        st->sizes.n--;
        st->sizes_capped = true;
    }
    st->top_bytes = st->sizes.bytes[st->sizes.n - 1];
    st->n_points = st->sizes.n;
    for (size_t i = 0; i < st->n_points; i++) {
        st->points[i].bytes = st->sizes.bytes[i];
        st->points[i].level = tk_caches_level_of(&st->caches, st->sizes.bytes[i]);
        bool oom = false;
        for (int p = 0; p < N_PATTERNS; p++)
            oom |= tk_samples_init(&st->points[i].r[p].ticks, st->o.reps) != 0;
        st->first[i].bytes = st->sizes.bytes[i];
        for (int k = 0; st->o.first_touch && k < FT_LOOPS; k++)
            oom |= tk_samples_init(&st->first[i].ns[k], st->o.reps) != 0;
        if (oom) {
            fprintf(stderr, "%s: out of memory for the run's results\n", s->cli.prog);
            return TK_EXIT_FAILED;
        }
    }
    tk_machine_collect(&st->mf);
    return 0;
}

void stride_teardown(struct tk_session *s)
{
    struct stride *st = s->state;
    if (!st)
        return;
    if (st->buf_open)
        rtm_arena_close(&st->buf);
    free(st->order);
    for (size_t i = 0; i < st->n_points; i++)
        for (int p = 0; p < N_PATTERNS; p++)
            tk_samples_destroy(&st->points[i].r[p].ticks);
    for (size_t i = 0; i < st->n_points; i++)
        for (int k = 0; k < FT_LOOPS; k++)
            tk_samples_destroy(&st->first[i].ns[k]);
    free(st);
    s->state = NULL;
}

/* The warm-up: a pass, or the last-level cache's worth twice if a pass is
 * more (the cache then holds what it holds in the steady state), in slices
 * with rests between. */
static void warm_up(struct stride *st, struct walk *w)
{
    const struct tk_cache *llc = tk_caches_llc(&st->caches);
    uint64_t cover = 2 * (llc ? llc->bytes : STRIDE_UNKNOWN_TOP);
    uint64_t left = (cover + w->bytes_per_access - 1) / w->bytes_per_access;
    if (left > w->per_pass)
        left = w->per_pass;
    while (left > 0) {
        uint64_t k = left < WARM_SLICE ? left : WARM_SLICE;
        walk_run(w, k);
        left -= k;
        tk_rt_breather(&st->rt);
    }
}

/* The ticks of k accesses of w: the shorter of two trials, so that one
 * interrupted trial does not size the repetitions. */
static uint64_t trial(struct stride *st, struct walk *w, uint64_t k)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 2; i++) {
        tk_rt_breather(&st->rt);
        uint64_t t0 = tk_timer_start();
        walk_run(w, k);
        uint64_t ticks = tk_timer_end() - t0;
        best = ticks < best ? ticks : best;
    }
    return best;
}

/* Accesses per repetition: grown until trials last the repetition time,
 * then rounded up to whole passes when it holds one or more. */
static uint64_t calibrate(struct stride *st, struct walk *w)
{
    const double want_ticks = (double)st->o.rep_time_ns / st->timer.ns_per_tick;
    uint64_t k = w->per_pass < 1024 ? w->per_pass : 1024;
    for (;;) {
        uint64_t ticks = trial(st, w, k);
        if ((double)ticks >= want_ticks)
            break;
        double grow = ticks ? want_ticks / (double)ticks * CALIBRATION_MARGIN : 16.0;
        k = grow < 1.25 ? k + k / 4 : (uint64_t)((double)k * grow) + 1;
    }
    if (k >= w->per_pass)
        k = (k + w->per_pass - 1) / w->per_pass * w->per_pass;
    return k;
}

/* Repetitions of round `round` of each point: --reps shared among the
 * rounds, the first ones taking one more when they do not divide. */
static unsigned reps_in_round(const struct stride *st, unsigned round)
{
    return st->o.reps / st->o.rounds + (round < st->o.reps % st->o.rounds);
}

/* One round of a point: warm-up, the size of its repetitions (first round),
 * the repetitions, into *r. */
static void measure_point(struct stride *st, struct walk *w, struct stride_result *r,
                          unsigned round)
{
    warm_up(st, w);
    if (!r->accesses)
        r->accesses = calibrate(st, w);
    for (unsigned i = reps_in_round(st, round); i > 0; i--) {
        tk_rt_breather(&st->rt);
        uint64_t f0 = thread_minor_faults();
        uint64_t t0 = tk_timer_start();
        walk_run(w, r->accesses);
        uint64_t t1 = tk_timer_end();
        r->minor_faults += thread_minor_faults() - f0;
        tk_samples_add(&r->ticks, t1 - t0);
    }
    st->checksum =
        st->checksum * 31 + (uint64_t)w->pos + (uint64_t)((char *)w->at - (char *)st->buf.base);
}

/* A point's figures from all its repetitions. */
static void summarize(struct stride *st, struct stride_result *r)
{
    struct tk_samples *t = &r->ticks;
    double per = st->timer.ns_per_tick / (double)r->accesses;
    r->reps = (unsigned)t->n;
    r->median = (double)tk_samples_percentile(t, 0.5) * per;
    r->p10 = (double)tk_samples_percentile(t, 0.1) * per;
    r->p90 = (double)tk_samples_percentile(t, 0.9) * per;
    r->min = (double)t->v[0] * per;
    r->max = (double)t->v[t->n - 1] * per;
    r->rep_ns_min = (double)t->v[0] * st->timer.ns_per_tick;
    if (st->rep_ns_min == 0 || r->rep_ns_min < st->rep_ns_min)
        st->rep_ns_min = r->rep_ns_min;
}

/* One round of every pattern over the first bytes of the buffer: point i. */
static void measure_size(struct stride *st, size_t i, unsigned round)
{
    struct stride_point *pt = &st->points[i];
    uint64_t bytes = pt->bytes;
    char *base = st->buf.base;
    static const size_t stride_ints[] = { [PAT_STRIDE_1] = 1, [PAT_STRIDE_16] = STRIDE_WIDE_INTS };
    for (enum stride_pattern p = PAT_STRIDE_1; p <= PAT_STRIDE_16; p++) {
        struct walk w = {
            .p = p,
            .ints = (volatile uint32_t *)base,
            .stride_ints = stride_ints[p],
            .at = base,
            .per_pass = bytes / sizeof(uint32_t) / stride_ints[p],
            .bytes_per_access = stride_ints[p] * sizeof(uint32_t),
        };
        measure_point(st, &w, &pt->r[p], round);
    }
    /* The chase last: its pointers overwrite the ints the others change.
     * Each round links the lines in another random order. */
    size_t line = st->caches.line_bytes, lines = (size_t)(bytes / line);
    stride_chase_build(base, line, lines, st->order, &st->rng, &st->rt);
    tk_rt_breather(&st->rt);
    struct walk w = { .p = PAT_CHASE, .at = base, .per_pass = lines, .bytes_per_access = line };
    measure_point(st, &w, &pt->r[PAT_CHASE], round);
}

/* The buffer, after the pinning so that its pages are the measured CPU's
 * memory. 0, or -1 (reported). */
static int map_buffer(struct stride *st)
{
    static const int thp[] = { [THP_DEFAULT] = RTM_ARENA_THP_DEFAULT,
                               [THP_ON] = RTM_ARENA_THP_ON,
                               [THP_OFF] = RTM_ARENA_THP_OFF };
    struct rtm_arena_config cfg = {
        .source = RTM_ARENA_ANON,
        .size_bytes = (size_t)st->top_bytes,
        .prefault = RTM_ARENA_PREFAULT_TOUCH,
        .lock = RTM_ARENA_LOCK_TRY,
        .thp = thp[st->o.thp],
    };
    int rc = rtm_arena_open(&st->buf, &cfg);
    if (rc != 0) {
        fprintf(stderr, "%s: cannot map the buffer: %s\n", st->prog,
                st->buf.message[0] ? st->buf.message : strerror(-rc));
        return -1;
    }
    st->buf_open = true;
    size_t lines = (size_t)(st->top_bytes / st->caches.line_bytes);
    st->order = calloc(lines, sizeof(st->order[0]));
    if (!st->order) {
        fprintf(stderr, "%s: out of memory for the chase's order\n", st->prog);
        return -1;
    }
    return 0;
}

/* One loop of --first-touch over ints: its time in ns, its faults. */
static void first_loop(struct stride *st, volatile uint32_t *ints, uint64_t bytes, size_t stride,
                       struct stride_first *ft, int k)
{
    size_t per_pass = (size_t)(bytes / sizeof(uint32_t) / stride);
    tk_rt_breather(&st->rt);
    uint64_t f0 = thread_minor_faults();
    uint64_t t0 = tk_timer_start();
    size_t at = stride_rmw_walk(ints, per_pass, stride, 0, per_pass);
    uint64_t t1 = tk_timer_end();
    ft->faults[k] += thread_minor_faults() - f0;
    tk_samples_add(&ft->ns[k], (uint64_t)tk_timer_ns(&st->timer, t1 - t0));
    st->checksum = st->checksum * 31 + at + ints[per_pass / 2 * stride];
}

/* --first-touch at size i: per repetition a fresh mapping, never touched
 * (no prefault, no lock: mlockall was not asked for), walked by loop 1,
 * loop 2, and loop 1 again, then unmapped. 0, or -1 (reported). */
static int first_touch(struct stride *st, size_t i)
{
    struct stride_first *ft = &st->first[i];
    for (unsigned r = 0; r < st->o.reps; r++) {
        void *p = mmap(NULL, (size_t)ft->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (p == MAP_FAILED) {
            fprintf(stderr, "%s: cannot map a fresh buffer of %" PRIu64 " bytes: %s\n", st->prog,
                    ft->bytes, strerror(errno));
            ft->failed = true;
            return -1;
        }
        volatile uint32_t *ints = p;
        first_loop(st, ints, ft->bytes, 1, ft, FT_LOOP1_FIRST);
        first_loop(st, ints, ft->bytes, STRIDE_WIDE_INTS, ft, FT_LOOP2);
        first_loop(st, ints, ft->bytes, 1, ft, FT_LOOP1_AGAIN);
        munmap(p, (size_t)ft->bytes);
    }
    for (int k = 0; k < FT_LOOPS; k++) {
        ft->median[k] = (double)tk_samples_percentile(&ft->ns[k], 0.5);
        ft->p10[k] = (double)tk_samples_percentile(&ft->ns[k], 0.1);
        ft->p90[k] = (double)tk_samples_percentile(&ft->ns[k], 0.9);
    }
    return 0;
}

/* --first-touch: the setup without the memory lock (which would fault a
 * fresh buffer in at its mapping), then each size's repetitions. */
static enum tk_run_end run_first_touch(struct stride *st)
{
    struct tk_rt_request req = tk_rt_request_of(&st->o.rt, false);
    req.cpu = st->cpu;
    tk_rt_setup(&req, &st->rt);
    enum tk_run_end end = TK_RUN_ABORTED;
    int rc = tk_timer_init(&st->timer, TIMER_CALIBRATION_MS);
    if (rc != 0) {
        fprintf(stderr, "%s: the timer cannot be calibrated: %s\n", st->prog, strerror(-rc));
        goto out;
    }
    st->timer_ok = true;
    stride_print_header(stdout, st);
    if (tk_stdout_check(st->prog) != 0)
        goto out;
    for (size_t i = 0; i < st->n_points; i++)
        if (first_touch(st, i) != 0)
            goto out;
    end = TK_RUN_PASSED;
out:
    tk_rt_refresh(&st->rt);
    struct tk_rt_state rt = st->rt;
    tk_rt_undo(&rt);
    return end;
}

enum tk_run_end stride_run(struct tk_session *s)
{
    struct stride *st = s->state;
    if (st->o.first_touch)
        return run_first_touch(st);
    struct tk_rt_request req = tk_rt_request_of(&st->o.rt, false); /* locked once mapped */
    req.cpu = st->cpu; /* resolved in the setup: the caches read are this CPU's */
    struct tk_rt_state rt;
    tk_rt_setup(&req, &rt);
    st->rt = rt;
    enum tk_run_end end = TK_RUN_ABORTED;
    if (map_buffer(st) != 0)
        goto out;
    tk_rt_lock_memory(&st->rt);
    int rc = tk_timer_init(&st->timer, TIMER_CALIBRATION_MS);
    if (rc != 0) {
        fprintf(stderr, "%s: the timer cannot be calibrated: %s\n", st->prog, strerror(-rc));
        goto out;
    }
    st->timer_ok = true;
    st->rng = st->o.seed;
    stride_print_header(stdout, st);
    /* A report that cannot be written is not worth measuring. */
    if (tk_stdout_check(st->prog) != 0)
        goto out;
    uint64_t t0 = tk_clock_ns();
    for (unsigned round = 0; round < st->o.rounds; round++) {
        for (size_t i = 0; i < st->n_points; i++)
            measure_size(st, i, round);
        printf("round %u of %u: every size measured (%.1f s)\n", round + 1, st->o.rounds,
               (double)(tk_clock_ns() - t0) / 1e9);
        fflush(stdout);
    }
    for (size_t i = 0; i < st->n_points; i++)
        for (int p = 0; p < N_PATTERNS; p++)
            summarize(st, &st->points[i].r[p]);
    end = TK_RUN_PASSED;
out:
    tk_rt_refresh(&st->rt);
    /* Given back on a copy: the report shows what the run had. */
    rt = st->rt;
    tk_rt_undo(&rt);
    return end;
}
