/*
 * `rtmem bench`: alloc/free latency of every rtmem heap kind, TLSF and
 * halffit through their typed APIs and glibc malloc, side by side on one random workload; then
 * the cost of freeing a fill in allocation order against a random order; then
 * a sweep of alloc+free cost over block sizes. The allocators, the
 * measuring process under its watchdog and the run's sequence live here;
 * see bench.h for the other files.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "common/args.h"
#include "common/child.h"
#include "common/result.h"
#include "common/run.h"

/* tk_timer_init's calibration window. */
#define CALIBRATION_MS 60u

/* bench runs every rtmem kind at both hardening levels, the typed rows, glibc,
 * glibc-rt and the plugins unless --kinds says otherwise; a peer only when
 * named.
 * Rows come in the canonical order whatever the order of --kinds. */
static const struct tk_kinds_spec kinds_spec = {
    .by_default = TK_DEFAULT_KINDS | TK_DEFAULT_NONE | TK_DEFAULT_TYPED | TK_DEFAULT_GLIBC |
                  TK_DEFAULT_GLIBC_RT | TK_DEFAULT_PLUGINS,
};

/* The floor first, then the allocators --kinds selects (common/kinds.h),
 * the peers that did not load noted in b->skipped. Returns 0, or an exit
 * status (reported). */
static int select_allocators(struct bench *b, const struct tk_args *cli, int argc, char **argv)
{
    struct tk_kinds *k = &b->kinds;
    int rc = tk_kinds_select(k, &kinds_spec, cli, b->o.kinds_arg, b->o.plugin_paths, b->o.n_plugins,
                             argc, argv);
    if (rc != 0)
        return rc;
    struct allocator *fl = &b->al[b->n_al++];
    fl->floor = true;
    snprintf(fl->def.name, sizeof(fl->def.name), "floor");
    if (b->o.threads_only) /* no allocator's phase runs */
        return 0;
    /* glibc-rt's reserve: the largest of what the phases keep live. */
    size_t largest = b->o.max_size_bytes;
    if (!b->o.no_sweep && largest < (size_t)SWEEP_BUCKETS * SWEEP_BUCKET_BYTES)
        largest = (size_t)SWEEP_BUCKETS * SWEEP_BUCKET_BYTES;
    size_t live = (size_t)b->o.live_cap * largest;
    size_t fill = (size_t)b->o.fill_blocks * b->o.max_size_bytes;
    size_t most = live > fill ? live : fill;
    size_t blocks = b->o.live_cap > b->o.fill_blocks ? b->o.live_cap : b->o.fill_blocks;
    for (size_t i = 0; i < k->n; i++) {
        struct allocator *a = &b->al[b->n_al++];
        a->def = k->list[i];
        if (a->def.own_process)
            a->def.reserve = tk_glibc_rt_reserve(most, blocks);
    }
    for (size_t i = 0; i < k->n_skipped; i++) {
        size_t n = strlen(b->skipped);
        snprintf(b->skipped + n, sizeof(b->skipped) - n, "%s%s skipped: %s", n ? "; " : "",
                 k->skipped[i].name, k->skipped[i].why);
    }
    return 0;
}

/* One allocator's result arrays, each in shared memory (one mapping per
 * array keeps the sizes simple to give back). */
struct result_array {
    size_t offset; /* of the pointer in struct allocator */
    size_t elem;
    int count; /* of what: 0 rounds, 1 fill passes, 2 sweep buckets, 3 wide ranges x reps,
                  4 wide ranges */
};

static const struct result_array result_arrays[] = {
    { offsetof(struct allocator, rounds[0]), sizeof(struct tk_summary), 0 },
    { offsetof(struct allocator, rounds[1]), sizeof(struct tk_summary), 0 },
    { offsetof(struct allocator, fill_alloc), sizeof(struct tk_summary), 1 },
    { offsetof(struct allocator, fill_free[FILL_IN_ORDER]), sizeof(struct tk_summary), 0 },
    { offsetof(struct allocator, fill_free[FILL_SHUFFLED]), sizeof(struct tk_summary), 0 },
    { offsetof(struct allocator, sweep_alloc_ns), sizeof(double), 2 },
    { offsetof(struct allocator, sweep_free_ns), sizeof(double), 2 },
    { offsetof(struct allocator, sweep_failed), sizeof(uint64_t), 2 },
    { offsetof(struct allocator, wide_pair_ns), sizeof(double), 3 },
    { offsetof(struct allocator, wide_failed), sizeof(uint64_t), 4 },
};

#define N_RESULT_ARRAYS (sizeof(result_arrays) / sizeof(result_arrays[0]))

static void **array_at(struct allocator *a, const struct result_array *r)
{
    return (void **)((char *)a + r->offset);
}

static size_t array_bytes(const struct bench *b, const struct result_array *r)
{
    size_t reps = b->o.wide_reps ? b->o.wide_reps : 1;
    size_t n = r->count == 0   ? b->o.rounds
               : r->count == 1 ? (size_t)FILL_ORDERS * b->o.rounds
               : r->count == 2 ? SWEEP_BUCKETS
               : r->count == 3 ? WIDE_RANGES * reps
                               : WIDE_RANGES;
    return n * r->elem;
}

static int allocate_results(struct bench *b)
{
    for (size_t i = 0; i < b->n_al; i++)
        for (size_t k = 0; k < N_RESULT_ARRAYS; k++) {
            void **p = array_at(&b->al[i], &result_arrays[k]);
            *p = tk_shared_alloc(array_bytes(b, &result_arrays[k]));
            if (!*p)
                return -ENOMEM;
        }
    return 0;
}

/* Before a measuring process: the results of its share of al[], and, for
 * the first one, the run's. */
static void reset_results(struct bench *b)
{
    for (size_t i = 0; i < b->n_al; i++) {
        struct allocator *a = &b->al[i];
        if (!bench_in_share(b, i))
            continue;
        for (size_t k = 0; k < N_RESULT_ARRAYS; k++)
            memset(*array_at(a, &result_arrays[k]), 0, array_bytes(b, &result_arrays[k]));
        a->check_failures = a->failed_allocs = a->skipped_frees = a->free_errors = 0;
        a->fill_failed_allocs = a->fill_skipped_frees = 0;
        memset(a->agg, 0, sizeof(a->agg));
        memset(&a->fill_alloc_agg, 0, sizeof(a->fill_alloc_agg));
        memset(a->fill_free_agg, 0, sizeof(a->fill_free_agg));
        memset(&a->mem, 0, sizeof(a->mem)); /* the previous process's */
        a->heap = NULL;
        a->typed = NULL;
        a->loaded_heap = NULL;
    }
    if (b->alone)
        return;
    memset(&b->th, 0, sizeof(b->th));
    b->ran_main = b->ran_free_order = b->ran_sweep = b->ran_wide = false;
    b->main_seconds = b->free_order_seconds = b->sweep_seconds = b->wide_seconds = 0;
    b->sweep_floor_ns = 0;
    memset(&b->now, 0, sizeof(b->now));
}

static void free_arrays(const struct bench *b, struct allocator *a)
{
    for (size_t k = 0; k < N_RESULT_ARRAYS; k++) {
        void **p = array_at(a, &result_arrays[k]);
        tk_shared_free(*p, array_bytes(b, &result_arrays[k]));
        *p = NULL;
    }
}

static void free_results(struct bench *b)
{
    for (size_t i = 0; i < b->n_al; i++)
        free_arrays(b, &b->al[i]);
    for (size_t i = 0; i < b->n_gone; i++)
        free_arrays(b, &b->gone[i]);
}

/* The measuring process's work buffers, allocated before any timing. */
static int allocate_work(struct bench *b)
{
    size_t ops = b->o.ops > b->o.sweep_ops ? (size_t)b->o.ops : (size_t)b->o.sweep_ops;
    size_t samples = ops > b->o.fill_blocks ? ops : (size_t)b->o.fill_blocks;
    if (bench_workload_init(&b->w, ops) != 0 ||
        bench_fill_work_init(&b->fw, b->o.fill_blocks) != 0 ||
        tk_samples_init(&b->alloc_s, samples) != 0 || tk_samples_init(&b->free_s, samples) != 0)
        return -ENOMEM;
    b->slots_cap = b->o.live_cap;
    b->slots = calloc(b->slots_cap, sizeof(void *));
    return b->slots ? 0 : -ENOMEM;
}

/* How the measuring process ended, as it says in b->outcome: only what it
 * wrote there counts, never its exit status, which a plugin that calls
 * exit() chooses. */
enum {
    BENCH_OUTCOME_NONE,      /* it said nothing: it ended early, however */
    BENCH_OUTCOME_DONE,      /* every phase done, the results written */
    BENCH_OUTCOME_NO_STDOUT, /* the header could not be written (reported) */
};

/* The measuring process: the real-time setup, the heaps, the memory lock,
 * the header (first attempt only), every phase. Its results go to the
 * shared arrays; it exits after, so nothing here is freed. */
static int measure(void *arg)
{
    struct bench *b = arg;
    struct tk_rt_request req = tk_rt_request_of(&b->o.rt, false); /* locked once mapped */
    tk_rt_setup(&req, &b->rt);
    if (allocate_work(b) != 0) {
        fprintf(stderr, "rtmem bench: out of memory for the run's buffers\n");
        return 1;
    }
    for (size_t i = 0; i < b->n_al; i++) {
        if (bench_left_out(b, i))
            continue;
        bench_mark_pass(b, i, PH_SETUP, 0, false);
        char why[TK_WHY_MAX];
        if (tk_alloc_bind(&b->al[i].def, why, sizeof(why)) != 0) {
            fprintf(stderr, "rtmem bench: %s: %s\n", b->al[i].def.name, why);
            return 1;
        }
        if (bench_allocator_open(&b->al[i], b->o.heap_bytes) != 0)
            return 1;
    }
    /* Progress for the watchdog after each step of the set-up, whose time
     * grows with the memory it maps and locks. */
    b->now.set = false;
    tk_child_beat(&b->beat);
    if (b->o.threads && !b->alone && bench_threads_open(b) != 0)
        return 1;
    tk_child_beat(&b->beat);
    tk_rt_lock_memory(&b->rt);
    tk_child_beat(&b->beat);
    if (!b->header_done) {
        bench_print_header(tk_child_stdout(), b);
        b->header_done = true;
        /* A report that cannot be written is not worth measuring. */
        if (tk_stdout_check(b->prog) != 0) {
            b->outcome = BENCH_OUTCOME_NO_STDOUT;
            return 1;
        }
    }
    if (!b->o.sweep_only && !b->o.threads_only)
        bench_run_main(b);
    if (!b->o.no_free_order && bench_run_free_order(b) != 0)
        return 1;
    if (!b->o.no_sweep)
        bench_run_sweep(b);
    if (!b->o.no_sweep && b->o.wide_reps)
        bench_run_wide(b);
    if (b->o.threads && !b->alone)
        bench_run_threads(b);
    if (b->alone)
        tk_glibc_rt_check(&b->al[b->alone].def);
    b->now.set = false;
    tk_rt_refresh(&b->rt);
    b->outcome = BENCH_OUTCOME_DONE;
    return 0;
}

/* Records how the measuring process died in the allocator it was running.
 * Returns 0 if the run can go on without that allocator, else 1
 * (reported): the process died outside an allocator, or in the floor. */
static int fail_allocator(struct bench *b, const struct tk_child_result *r)
{
    char sig[64], where[96];
    const char *how = r->end == TK_CHILD_TIMED_OUT ? "hung"
                      : r->end == TK_CHILD_KILLED  ? tk_signal_describe(r->code, sig, sizeof(sig))
                                                   : "exited";
    if (!b->now.set || b->now.al == 0 || b->now.al >= b->n_al) {
        if (r->end == TK_CHILD_EXITED)
            fprintf(stderr,
                    "rtmem bench: the measuring process exited (status %d) without its "
                    "results\n",
                    r->code);
        else
            fprintf(stderr, "rtmem bench: the measuring process %s%s\n",
                    r->end == TK_CHILD_TIMED_OUT ? "made no progress: " : "died of ", how);
        return 1;
    }
    struct allocator *a = &b->al[b->now.al];
    struct bench_failure *f = &a->fail;
    f->failed = true;
    f->timed_out = r->end == TK_CHILD_TIMED_OUT;
    f->signal = r->end == TK_CHILD_KILLED ? r->code : 0;
    f->where = b->now;
    bench_where(&b->now, where, sizeof(where));
    char grt_why[sizeof(a->def.grt.why)];
    memcpy(grt_why, a->def.grt.why, sizeof(grt_why));
    grt_why[sizeof(grt_why) - 1] = '\0';
    if (a->def.own_process && !a->def.grt.applied && grt_why[0] && r->end == TK_CHILD_EXITED)
        snprintf(f->msg, sizeof(f->msg), "%s: %s", where, grt_why); /* its set-up said why */
    else if (f->timed_out)
        snprintf(f->msg, sizeof(f->msg),
                 "%s: hung: no progress for %u s (--timeout), killed "
                 "with SIGKILL",
                 where, b->o.timeout_s);
    else if (r->end == TK_CHILD_KILLED)
        snprintf(f->msg, sizeof(f->msg), "%s: crashed: killed by %s", where, how);
    else
        snprintf(f->msg, sizeof(f->msg),
                 "%s: the measuring process exited (status %d) without its results", where,
                 r->code);
    fprintf(stderr, "rtmem bench: FAILED: %s: %s; measuring again without it\n", a->def.name,
            f->msg);
    return 0;
}

/* Runs the measuring process of b->alone's share until it completes,
 * leaving out each allocator it dies in. Returns 0, or 1 (reported). */
static int measure_share(struct bench *b)
{
    /* Standard output aside: what a plugin prints goes to standard error,
     * never into the report. */
    const struct tk_child_opts co = { .timeout_s = b->o.timeout_s,
                                      .watch_priority = b->watch_priority,
                                      .stdout_aside = true };
    /* Each attempt leaves one allocator out or ends the run. */
    for (size_t attempt = 0; attempt < b->n_al; attempt++) {
        if (b->alone && b->al[b->alone].fail.failed)
            return 0; /* nothing left in its share */
        struct tk_child_result r;
        reset_results(b);
        b->outcome = BENCH_OUTCOME_NONE;
        tk_child_run(measure, b, &b->beat, &co, &r);
        bench_shared_remove(b); /* one it died before unlinking */
        switch (r.end) {
        case TK_CHILD_EXITED:
            if (r.code == 0 && b->outcome == BENCH_OUTCOME_DONE)
                return 0;
            if (b->outcome == BENCH_OUTCOME_NO_STDOUT)
                return 1;
            /* Anything else (an exit in an allocator's pass or heap, with
             * whatever status, 0 included): that allocator's failure. */
            if (fail_allocator(b, &r) != 0)
                return 1;
            break;
        case TK_CHILD_NOT_STARTED:
            fprintf(stderr, "rtmem bench: cannot start the measuring process: %s\n",
                    strerror(r.code));
            return 1;
        case TK_CHILD_KILLED:
        case TK_CHILD_TIMED_OUT:
            if (fail_allocator(b, &r) != 0)
                return 1;
            break;
        }
    }
    return 1;
}

/* The floor and the allocators measured together in one process, then
 * each one measured alone in its own (b->alone). The run's own figures
 * (its real-time state, the phases' workloads) are the first process's;
 * the phases' times add up. Returns 0, or 1 (reported). */
static int measure_all(struct bench *b)
{
    b->alone = 0;
    if (measure_share(b) != 0)
        return 1;
    for (size_t i = 1; i < b->n_al; i++) {
        if (!b->al[i].def.own_process || b->al[i].fail.failed)
            continue;
        struct tk_rt_state rt = b->rt;
        double main_s = b->main_seconds, fo_s = b->free_order_seconds, sw_s = b->sweep_seconds;
        double wd_s = b->wide_seconds;
        b->main_seconds = b->free_order_seconds = b->sweep_seconds = b->wide_seconds = 0;
        b->alone = i;
        int rc = measure_share(b);
        b->alone = 0;
        b->rt = rt;
        b->main_seconds += main_s;
        b->free_order_seconds += fo_s;
        b->sweep_seconds += sw_s;
        b->wide_seconds += wd_s;
        if (rc != 0)
            return 1;
    }
    return 0;
}

/* Moves the allocators that failed from al[] to gone[], in order. */
static void set_aside_failed(struct bench *b)
{
    size_t kept = 0;
    for (size_t i = 0; i < b->n_al; i++) {
        if (b->al[i].fail.failed)
            b->gone[b->n_gone++] = b->al[i];
        else
            b->al[kept++] = b->al[i];
    }
    b->n_al = kept;
}

/* The watchdog's priority: above the measuring process's, so that one
 * spinning at its real-time priority on the parent's CPU cannot starve it. */
static int watch_priority(const struct bench *b, bool fifo_granted)
{
    if (b->o.rt.no_rt || !fifo_granted)
        return 0;
    int max = sched_get_priority_max(SCHED_FIFO);
    return b->o.rt.priority < max ? b->o.rt.priority + 1 : max;
}

int bench_setup(struct tk_session *s)
{
    /* Shared with the measuring process, which writes its results here. */
    struct bench *b = tk_shared_alloc(sizeof(*b));
    if (!b) {
        fprintf(stderr, "%s: out of memory\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    s->state = b;
    b->o = *(const struct bench_opts *)s->opts;
    b->prog = s->cli.prog;
    b->target = BENCH_SHARED_TARGET;
    const char *hook = getenv(BENCH_TEST_TARGET_ENV);
    if (hook && *hook) {
        char *end;
        double v = strtod(hook, &end);
        if (*end == '\0' && v > 0 && v < 1e6) {
            b->target = v;
            b->target_given = true;
        }
    }
    /* The report's last line, "results written to", follows a blank line. */
    s->comment = "\n";
    return select_allocators(b, &s->cli, s->argc, s->argv);
}

enum tk_run_end bench_run(struct tk_session *s)
{
    struct bench *b = s->state;
    /* The timer is calibrated under the real-time setup the measuring gets;
     * then the parent, which only waits, gives it up. */
    struct tk_rt_state parent_rt;
    const struct tk_run_opts ro = { b->prog, b->o.rt, CALIBRATION_MS };
    int status = tk_run_setup(&ro, &parent_rt, &b->timer, &b->mf) == 0 ? 0 : 1;
    b->watch_priority = watch_priority(b, parent_rt.fifo.granted);
    tk_rt_undo(&parent_rt);
    if (status == 0 && allocate_results(b) != 0) {
        fprintf(stderr, "rtmem bench: out of memory for the run's results\n");
        status = 1;
    }
    if (status == 0) {
        bench_shared_begin(b);
        status = measure_all(b);
        bench_shared_end();
    }
    if (status != 0)
        return TK_RUN_ABORTED;
    set_aside_failed(b);
    bench_aggregate_main(b);
    bench_aggregate_free_order(b);
    bench_aggregate_sweep(b);
    bench_aggregate_threads(b);
    /* Allocators that failed are in the report and the JSON, with their
     * failure, and fail the run; so does a target not met. */
    return b->n_gone > 0 || bench_target_unmet(b) ? TK_RUN_FAILED : TK_RUN_PASSED;
}

void bench_teardown(struct tk_session *s)
{
    struct bench *b = s->state;
    if (!b)
        return;
    free_results(b);
    tk_shared_free(b, sizeof(*b));
    s->state = NULL;
}
