/*
 * `rtmem bench`: the report's parts that are no phase's own: the header,
 * the notes (failures and warnings of every phase), the JSON's params,
 * floor and failures, and the JSON helpers the phases share. A figure
 * that does not exist (no sample, no glibc row to compare with) prints as
 * "-" and is written as null.
 */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "common/out.h"

static double mib(size_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

void bench_print_header(FILE *f, const struct bench *b)
{
    fprintf(f, "rtmem bench %s (schema %s)\n", RTMEM_VERSION_STRING, BENCH_SCHEMA);
    tk_machine_print(f, &b->mf);
    tk_rt_print(f, &b->rt);

    bool any_heap = false;
    for (size_t i = 0; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        if (!a->mem.mem)
            continue;
        any_heap = true;
        fprintf(f, "heap memory : %-12s %.0f MiB, mmap'd, prefaulted, mlock: %s\n", a->def.name,
                mib(a->mem.bytes), a->mem.locked ? "yes" : "NO");
        if (!a->mem.locked)
            fprintf(f, "  not permitted: mlock of the %s heap memory: %s\n", a->def.name,
                    strerror(a->mem.lock_err));
    }
    if (!any_heap && !b->o.threads_only)
        fprintf(f, "heap memory : no rtmem heap selected\n");

    tk_timer_print(f, "timer       : ", &b->timer, TK_DETAIL_FULL);
    fprintf(f, "seed        : %llu (workloads generated from it before any timing)\n",
            (unsigned long long)b->o.seed);
    if (!b->o.sweep_only && !b->o.threads_only)
        fprintf(f,
                "main phase  : sizes uniform in [%u, %u] B, live cap %u, %llu ops per pass, "
                "%u rounds (order alternates),\n              one unrecorded warm-up pass "
                "per allocator first\n",
                b->o.min_size_bytes, b->o.max_size_bytes, b->o.live_cap,
                (unsigned long long)b->o.ops, b->o.rounds);
    if (!b->o.no_free_order)
        fprintf(f,
                "free order  : fills of %u blocks, sizes uniform in [%u, %u] B, freed in "
                "allocation and in random order,\n              a fresh heap each pass, %u "
                "rounds, one unrecorded warm-up pass per order first\n",
                b->o.fill_blocks, b->o.min_size_bytes, b->o.max_size_bytes, b->o.rounds);
    if (!b->o.no_sweep)
        fprintf(f,
                "sweep       : %u buckets of %u B (0..%u B), live cap %u, %llu ops per bucket "
                "per allocator after a warm-up pass\n",
                SWEEP_BUCKETS, SWEEP_BUCKET_BYTES, SWEEP_BUCKETS * SWEEP_BUCKET_BYTES,
                b->o.live_cap, (unsigned long long)b->o.sweep_ops);
    if (!b->o.no_sweep && b->o.wide_reps)
        fprintf(f,
                "wide ranges : %u ranges of %u B (1..%u B), each run %u times on draws of its "
                "own, %llu ops per run\n",
                WIDE_RANGES, WIDE_RANGE_BYTES, WIDE_RANGES * WIDE_RANGE_BYTES, b->o.wide_reps,
                (unsigned long long)b->o.sweep_ops);
    if (b->o.threads) {
        char locks[32] = "";
        for (unsigned t = 0; t < BENCH_LOCKS; t++)
            if (b->o.locks & (1u << t))
                snprintf(locks + strlen(locks), sizeof(locks) - strlen(locks), "%s%s",
                         locks[0] ? "," : "", bench_lock_names[t]);
        fprintf(f,
                "threads     : one %s heap (%.0f MiB, mlock: %s), locks %s; lock cost "
                "uncontended over %u rounds,\n              then %u threads on CPUs",
                b->o.threads_kind, mib(b->th.mem.bytes), b->th.mem.locked ? "yes" : "NO", locks,
                b->o.rounds, b->th.n_threads);
        for (unsigned i = 0; i < b->th.n_threads; i++)
            fprintf(f, "%s%d", i ? "," : " ", b->th.cpus[i]);
        fprintf(f, " (%s), %llu ops each per lock type after a warm-up run\n",
                b->rt.fifo.granted ? "SCHED_FIFO" : "not real-time",
                (unsigned long long)b->o.thread_ops);
        if (b->o.locks & (1u << BENCH_LOCK_SHARED))
            fprintf(f,
                    "              shared: shared heaps of %s in the POSIX shm object "
                    "/rtmem-%s, unlinked as soon as made\n",
                    b->o.threads_kind, b->shm_name);
    }
    if (b->o.threads_only)
        return;
    fprintf(f, "allocators  :");
    for (size_t i = 1; i < b->n_al; i++)
        fprintf(f, " %s%s", b->al[i].def.name,
                bench_glibc(&b->al[i]) ? " (malloc/free, glibc defaults: no mallopt)" : "");
    for (size_t i = 1; i < b->n_al; i++)
        if (bench_loaded(&b->al[i]) || b->al[i].def.own_process)
            fprintf(f, "\n  %-10s: %s", b->al[i].def.name, b->al[i].def.describe);
    if (b->o.timeout_s)
        fprintf(f,
                "\nwatchdog    : the measuring runs in a child process; an allocator it "
                "dies in, or that makes no\n              progress for %u s (--timeout), is "
                "left out and the run starts again",
                b->o.timeout_s);
    fprintf(f, "\nfloor       : the same timing loop and call (through a function pointer "
               "to a wrapper that jumps),\n              to a function that does nothing\n");
}

/* Where a failed allocator's run stopped, as options that run just that
 * part again. */
static const char *replay_phase(const struct bench_running *w)
{
    switch (w->phase) {
    case PH_SETUP:
    case PH_MAIN: return " --no-free-order --no-sweep";
    case PH_FREE_ORDER: return " --no-sweep";
    case PH_SWEEP: return " --sweep-only";
    case PH_WIDE: return " --sweep-only";
    }
    return "";
}

static void print_failed(FILE *f, const struct bench *b)
{
    const struct bench_opts *o = &b->o;
    for (size_t i = 0; i < b->n_gone; i++) {
        const struct allocator *a = &b->gone[i];
        char timeout[32] = "";
        if (o->timeout_s != BENCH_DEFAULT_TIMEOUT_S)
            snprintf(timeout, sizeof(timeout), " --timeout %u", o->timeout_s);
        char words[2048];
        fprintf(f, "FAILED: %s: %s; its figures are left out\n", a->def.name, a->fail.msg);
        fprintf(f,
                "  replay: rtmem bench%s%s --seed %llu --ops %llu --rounds %u "
                "--min-size %u --max-size %u --live %u --heap-size %zu --fill %u "
                "--sweep-ops %llu%s\n",
                tk_alloc_replay_words(&a->def, words, sizeof(words)), replay_phase(&a->fail.where),
                (unsigned long long)o->seed, (unsigned long long)o->ops, o->rounds,
                o->min_size_bytes, o->max_size_bytes, o->live_cap, o->heap_bytes, o->fill_blocks,
                (unsigned long long)o->sweep_ops, timeout);
    }
    if (b->skipped[0])
        fprintf(f, "note: %s\n", b->skipped);
}

/* Failures and warnings of every phase, rests, final VmLck. */
static void print_notes(FILE *f, const struct bench *b)
{
    fputc('\n', f);
    for (size_t i = 0; i < b->n_al; i++) {
        const struct allocator *a = &b->al[i];
        uint64_t sweep_failed = 0;
        for (unsigned bk = 0; b->ran_sweep && bk < SWEEP_BUCKETS; bk++)
            sweep_failed += a->sweep_failed[bk];
        /* why: a kind whose largest request is below the workload's (xvheap:
         * a page's block) fails every request above it, and times the failure */
        char why[96] = "heap too small?";
        if (a->largest_request && a->largest_request < b->o.max_size_bytes)
            snprintf(why, sizeof(why), "every request above its largest, %zu bytes",
                     a->largest_request);
        if (a->failed_allocs)
            fprintf(f,
                    "note: %s failed %llu allocations in the measured rounds (%s); their "
                    "frees were skipped, not timed\n",
                    a->def.name, (unsigned long long)a->failed_allocs, why);
        if (a->fill_failed_allocs)
            fprintf(f,
                    "note: %s failed %llu allocations in the free-order fills (%s); their "
                    "frees were skipped, not timed\n",
                    a->def.name, (unsigned long long)a->fill_failed_allocs, why);
        if (sweep_failed) {
            bool past = a->largest_request &&
                        a->largest_request < (size_t)SWEEP_BUCKETS * SWEEP_BUCKET_BYTES;
            fprintf(f, "note: %s failed %llu allocations in the sweep%s\n", a->def.name,
                    (unsigned long long)sweep_failed,
                    past ? " (its buckets above its largest request: shown as -)" : "");
        }
        uint64_t wide_failed = 0;
        for (unsigned r = 0; b->ran_wide && r < WIDE_RANGES; r++)
            wide_failed += a->wide_failed[r];
        if (wide_failed)
            fprintf(f, "note: %s failed %llu allocations in the wide ranges%s\n", a->def.name,
                    (unsigned long long)wide_failed,
                    a->largest_request && a->largest_request < WIDE_RANGES * WIDE_RANGE_BYTES
                        ? " (those above its largest request; a range where all failed: -)"
                        : "");
        if (a->free_errors)
            fprintf(f, "WARNING: %s: %llu frees returned an error\n", a->def.name,
                    (unsigned long long)a->free_errors);
        if (a->check_failures)
            fprintf(f,
                    "WARNING: %s: heap check failed (or blocks left live) after %llu "
                    "passes\n",
                    a->def.name, (unsigned long long)a->check_failures);
    }
    char buf[192];
    for (size_t i = 0; i < b->n_al; i++)
        if (b->al[i].def.own_process)
            fprintf(f, "%s: %s\n", b->al[i].def.name,
                    tk_glibc_rt_outcome(&b->al[i].def, buf, sizeof(buf)));
    print_failed(f, b);
    if (b->rt.rests)
        fprintf(f, "rt: rested %u times between passes to keep real-time throttling off\n",
                b->rt.rests);
    fprintf(f, "VmLck at the end: %ld kB\n", b->rt.vmlck_kb);
}

static void json_params(struct tk_json *j, const struct bench *b)
{
    tk_json_key(j, "params");
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "ops", b->o.ops);
    tk_json_kv_uint(j, "rounds", b->o.rounds);
    tk_json_kv_uint(j, "warmup_passes", 1);
    if (tk_json_key_or_null(j, "test_shared_target", b->target_given))
        tk_json_double(j, b->target);
    tk_json_kv_uint(j, "min_size_bytes", b->o.min_size_bytes);
    tk_json_kv_uint(j, "max_size_bytes", b->o.max_size_bytes);
    tk_json_kv_uint(j, "live_cap", b->o.live_cap);
    tk_json_kv_uint(j, "heap_bytes", b->o.heap_bytes);
    tk_json_kv_uint(j, "seed", b->o.seed);
    tk_json_kv_uint(j, "sweep_ops", b->o.sweep_ops);
    tk_json_kv_uint(j, "wide_reps", b->o.wide_reps);
    tk_json_kv_bool(j, "quick", b->o.quick);
    tk_json_kv_bool(j, "no_rt", b->o.rt.no_rt);
    tk_json_kv_bool(j, "main_phase", b->ran_main);
    tk_json_kv_bool(j, "sweep", b->ran_sweep);
    tk_json_kv_uint(j, "threads", b->o.threads);
    tk_json_kv_uint(j, "thread_ops", b->o.thread_ops);
    tk_json_kv_string(j, "threads_kind", b->o.threads_kind);
    tk_json_kv_string(j, "glibc_config", "defaults (no mallopt)");
    tk_json_kv_string(j, "floor",
                      "the same timing loop and call as every allocator (through a function "
                      "pointer to a wrapper that jumps), to a function that does nothing");
    tk_json_end_object(j);
}

static void json_failed(struct tk_json *j, const struct bench *b)
{
    tk_json_key(j, "failed_allocators");
    tk_json_begin_array(j);
    for (size_t i = 0; i < b->n_gone; i++) {
        const struct allocator *a = &b->gone[i];
        char where[96], sig[16] = "";
        if (a->fail.signal && sigabbrev_np(a->fail.signal))
            snprintf(sig, sizeof(sig), "SIG%s", sigabbrev_np(a->fail.signal));
        tk_json_begin_object(j);
        tk_json_kv_string(j, "name", a->def.name);
        tk_json_kv_string(j, "api", bench_api_name(a));
        tk_json_kv_string(j, "kind",
                          a->fail.timed_out ? "timeout"
                          : a->fail.signal  ? "crash"
                                            : "error");
        tk_json_kv_string(j, "signal", sig[0] ? sig : NULL);
        tk_json_kv_string(j, "where", bench_where(&a->fail.where, where, sizeof(where)));
        tk_json_kv_string(j, "message", a->fail.msg);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    /* Peers named but not loaded, as memcheck lists them. */
    tk_kinds_json_skipped(j, &b->kinds);
}

void bench_report(const struct tk_session *s, FILE *f)
{
    const struct bench *b = s->state;
    bench_print_main(f, b);
    bench_print_free_order(f, b);
    bench_print_sweep(f, b);
    bench_print_wide(f, b);
    bench_print_threads(f, b);
    print_notes(f, b);
}

void bench_facts(const struct tk_session *s, struct tk_facts *out)
{
    const struct bench *b = s->state;
    *out = (struct tk_facts){
        .machine = &b->mf, .timer = &b->timer, .rt = &b->rt, .has_seed = true, .seed = b->o.seed
    };
}

void bench_json(const struct tk_session *s, struct tk_json *j)
{
    const struct bench *b = s->state;
    json_params(j, b);
    tk_json_key(j, "floor");
    tk_json_begin_object(j);
    tk_json_kv_double(j, "alloc_avg_ns", b->ran_main ? b->al[0].agg[0].avg_ns : NAN);
    tk_json_kv_double(j, "free_avg_ns", b->ran_main ? b->al[0].agg[1].avg_ns : NAN);
    tk_json_kv_double(j, "sweep_alloc_free_ns", b->ran_sweep ? b->sweep_floor_ns : NAN);
    tk_json_end_object(j);
    bench_json_allocators(j, b);
    bench_json_ratios(j, b);
    bench_json_free_order(j, b);
    bench_json_sweep(j, b);
    bench_json_wide(j, b);
    bench_json_threads(j, b);
    json_failed(j, b);
}
