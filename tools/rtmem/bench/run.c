/*
 * `rtmem bench`: alloc/free latency of every rtmem heap kind, TLSF through
 * its typed API and glibc malloc, side by side on one random workload; then
 * the cost of freeing a fill in allocation order against a random order; then
 * a sweep of alloc+free cost over block sizes. Options, the allocators, the
 * measuring process under its watchdog and the run's sequence live here;
 * see bench.h for the other files.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "../cmd.h"
#include "common/args.h"
#include "common/child.h"
#include "common/result.h"
#include "common/run.h"

#define DEFAULT_OPS        200000u
#define DEFAULT_ROUNDS     5u
#define DEFAULT_MIN_BYTES  16u
#define DEFAULT_MAX_BYTES  4096u
#define DEFAULT_LIVE       1000u
#define DEFAULT_HEAP_BYTES ((size_t)64 << 20)
#define DEFAULT_SEED       20240601u
#define DEFAULT_SWEEP_OPS  4000u
#define DEFAULT_FILL       1000u
#define QUICK_OPS          20000u
#define QUICK_ROUNDS       3u
#define QUICK_SWEEP_OPS    1000u
#define CALIBRATION_MS     60u

/* Exit codes. */
#define EXIT_USAGE 2

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rtmem bench [options]\n"
            "\n"
            "Times alloc and free of every rtmem heap kind (through rtm_heap_*), of TLSF\n"
            "through its typed API (row \"tlsf(typed)\": rtm_tlsf_alloc/rtm_tlsf_free\n"
            "called through a pointer, as everything here is; the difference to \"tlsf\"\n"
            "is the dispatch cost) and of glibc malloc/free (its defaults, no mallopt), on\n"
            "the same random workload, interleaved over several rounds. One timing loop,\n"
            "compiled once, times every allocator: each call goes through one function\n"
            "pointer to a wrapper that jumps to the allocator. Every time is also shown\n"
            "minus the floor: that same loop and call, the wrapper jumping to a function\n"
            "that does nothing, so the floor takes off exactly the harness's own code,\n"
            "wherever the compiler places it.\n"
            "\n"
            "Main phase workload: sizes uniform in [min-size, max-size]; at each step free\n"
            "a random live block if the live cap is reached, allocate if none is live,\n"
            "otherwise allocate or free with probability 1/2. Generated before timing,\n"
            "fixed seed.\n"
            "\n"
            "Free-order phase: on a fresh heap, allocate N blocks (sizes uniform in\n"
            "[min-size, max-size], the same for every allocator), then free them all,\n"
            "timing each free: once in allocation order, once in a fixed random order.\n"
            "Over the same rounds as the main phase; shows what the order of frees costs\n"
            "(heapmem and xnheap merge page runs in balanced trees).\n"
            "\n"
            "Then sweeps block sizes in 64-byte buckets from 0 to 10 KiB.\n"
            "\n"
            "Peers (jemalloc, mimalloc, tcmalloc, when installed; named in --kinds) and\n"
            "plugins (--plugin, <rtmem/plugin.h>) run beside them, loaded as memcheck\n"
            "loads them. The measuring runs in a child process under a watchdog: an\n"
            "allocator that crashes, or makes no progress for --timeout seconds (a pass\n"
            "is progress), is named with where it failed and a replay command, left out,\n"
            "and the run starts again without it (exit status 1; the others' figures and\n"
            "the failure are in the report and the JSON).\n"
            "\n"
            "options:\n"
            "  --ops N           operations per pass (default %u; --quick %u)\n"
            "  --rounds N        measured rounds, order alternating (default %u; --quick %u)\n"
            "  --min-size B      smallest request in bytes (default %u)\n"
            "  --max-size B      largest request in bytes (default %u)\n"
            "  --live N          cap on live blocks (default %u)\n"
            "  --heap-size B     memory of each heap (rtmem's kinds, plugins; default 64M)\n"
            "  --seed N          workload seed (default %u)\n"
            "  --cpu N           CPU to pin to (default: the last allowed CPU)\n"
            "  --prio N          SCHED_FIFO priority, 1..99 (default %d)\n"
            "  --no-rt           no CPU pinning, no SCHED_FIFO (mlockall is still tried)\n"
            "  --kinds a,b,...   allocators to run (default all but the peers): ",
            DEFAULT_OPS, QUICK_OPS, DEFAULT_ROUNDS, QUICK_ROUNDS, DEFAULT_MIN_BYTES,
            DEFAULT_MAX_BYTES, DEFAULT_LIVE, DEFAULT_SEED, TK_RT_DEFAULT_PRIORITY);
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        fprintf(f, "%s, ", *k);
    fprintf(f,
            "tlsf(typed)\n"
            "                    (alias tlsf-typed), glibc, the plugins; the kinds again as\n"
            "                    <kind>-none, created at hardening level none (no integrity\n"
            "                    checks: the others run at the default, O(1) checks), so\n"
            "                    the table shows what the checks cost; also: jemalloc,\n"
            "                    mimalloc, tcmalloc (a peer not installed is skipped)\n"
            "  --plugin FILE.so  load a heap plugin (repeatable, up to %d)\n"
            "  --timeout SECONDS a pass without progress for this long is killed and its\n"
            "                    allocator left out (default %u; 0: never)\n"
            "  --json FILE       also write the results as JSON (schema %s):\n"
            "                    to a new file beside FILE, renamed over it only when\n"
            "                    the run completes; a failed or interrupted run leaves\n"
            "                    FILE as it was. A FIFO or device (/dev/stdout,\n"
            "                    /dev/null) is written directly\n"
            "  --quick           a short run for smoke tests (ops, rounds, sweep ops reduced)\n"
            "  --fill N          blocks per fill in the free-order phase (default %u)\n"
            "  --no-free-order   skip the free-order phase\n"
            "  --no-sweep        skip the size sweep\n"
            "  --sweep-only      run only the size sweep\n"
            "  --sweep-ops N     operations per bucket per allocator (default %u; --quick %u)\n"
            "  -h, --help        this text\n"
            "\n"
            "Byte counts take a K, M, G or T suffix (powers of 1024). Requires root (or\n"
            "CAP_SYS_NICE, CAP_IPC_LOCK) for SCHED_FIFO and locking; without them the\n"
            "run continues and reports what was refused.\n"
            "Exit status: 0 ok, 1 run-time failure (an allocator that failed, or a report\n"
            "that cannot be written to standard output, included), 2 bad usage (a plugin\n"
            "that does not load or whose table is refused included).\n",
            TK_MAX_PLUGINS, BENCH_DEFAULT_TIMEOUT_S, BENCH_SCHEMA, DEFAULT_FILL,
            DEFAULT_SWEEP_OPS, QUICK_SWEEP_OPS);
}

/* Messages name the subcommand; byte-count examples fit its sizes. */
static const struct tk_args cli = {"rtmem bench", "4096, 64K, 64M"};

enum {
    OPT_OPS = 256, OPT_ROUNDS, OPT_MIN, OPT_MAX, OPT_LIVE, OPT_HEAP, OPT_SEED, OPT_CPU,
    OPT_PRIO, OPT_NO_RT, OPT_KINDS, OPT_JSON, OPT_QUICK, OPT_NO_SWEEP, OPT_SWEEP_ONLY,
    OPT_SWEEP_OPS, OPT_FILL, OPT_NO_FREE_ORDER, OPT_PLUGIN, OPT_TIMEOUT,
};

static const struct option long_opts[] = {
    {"ops", required_argument, NULL, OPT_OPS},
    {"rounds", required_argument, NULL, OPT_ROUNDS},
    {"min-size", required_argument, NULL, OPT_MIN},
    {"max-size", required_argument, NULL, OPT_MAX},
    {"live", required_argument, NULL, OPT_LIVE},
    {"heap-size", required_argument, NULL, OPT_HEAP},
    {"seed", required_argument, NULL, OPT_SEED},
    {"cpu", required_argument, NULL, OPT_CPU},
    {"prio", required_argument, NULL, OPT_PRIO},
    {"no-rt", no_argument, NULL, OPT_NO_RT},
    {"kinds", required_argument, NULL, OPT_KINDS},
    {"json", required_argument, NULL, OPT_JSON},
    {"quick", no_argument, NULL, OPT_QUICK},
    {"no-sweep", no_argument, NULL, OPT_NO_SWEEP},
    {"sweep-only", no_argument, NULL, OPT_SWEEP_ONLY},
    {"sweep-ops", required_argument, NULL, OPT_SWEEP_OPS},
    {"fill", required_argument, NULL, OPT_FILL},
    {"no-free-order", no_argument, NULL, OPT_NO_FREE_ORDER},
    {"plugin", required_argument, NULL, OPT_PLUGIN},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* One option's value into o. Returns 0 or -1 (message printed). */
static int apply_option(int c, const char *arg, struct bench_opts *o, bool *set_ops,
                        bool *set_rounds, bool *set_sweep_ops)
{
    uint64_t v = 0;
    int rc = 0;
    switch (c) {
    case OPT_OPS:
        rc = tk_args_u64(&cli, "--ops", arg, 1, BENCH_MAX_OPS, &v);
        o->ops = v;
        *set_ops = true;
        break;
    case OPT_ROUNDS:
        rc = tk_args_u64(&cli, "--rounds", arg, 1, BENCH_MAX_ROUNDS, &v);
        o->rounds = (unsigned)v;
        *set_rounds = true;
        break;
    case OPT_MIN:
        rc = tk_args_bytes(&cli, "--min-size", arg, 0, BENCH_MAX_SIZE_BYTES, &v);
        o->min_size_bytes = (uint32_t)v;
        break;
    case OPT_MAX:
        rc = tk_args_bytes(&cli, "--max-size", arg, 0, BENCH_MAX_SIZE_BYTES, &v);
        o->max_size_bytes = (uint32_t)v;
        break;
    case OPT_LIVE:
        rc = tk_args_u64(&cli, "--live", arg, 1, BENCH_MAX_LIVE, &v);
        o->live_cap = (uint32_t)v;
        break;
    case OPT_HEAP:
        rc = tk_args_bytes(&cli, "--heap-size", arg, BENCH_MIN_HEAP_BYTES, BENCH_MAX_HEAP_BYTES,
                           &v);
        o->heap_bytes = (size_t)v;
        break;
    case OPT_SEED:
        rc = tk_args_u64(&cli, "--seed", arg, 0, UINT64_MAX, &v);
        o->seed = v;
        break;
    case OPT_CPU: return tk_args_cpu(&cli, arg, &o->cpu);
    case OPT_PRIO: return tk_args_priority(&cli, arg, &o->priority);
    case OPT_NO_RT: o->no_rt = true; break;
    case OPT_KINDS: o->kinds_arg = arg; break;
    case OPT_JSON: return tk_args_file(&cli, "--json", arg, &o->json_path);
    case OPT_QUICK: o->quick = true; break;
    case OPT_NO_SWEEP: o->no_sweep = true; break;
    case OPT_SWEEP_ONLY: o->sweep_only = true; break;
    case OPT_SWEEP_OPS:
        rc = tk_args_u64(&cli, "--sweep-ops", arg, 1, BENCH_MAX_OPS, &v);
        o->sweep_ops = v;
        *set_sweep_ops = true;
        break;
    case OPT_FILL:
        rc = tk_args_u64(&cli, "--fill", arg, 1, BENCH_MAX_LIVE, &v);
        o->fill_blocks = (uint32_t)v;
        break;
    case OPT_NO_FREE_ORDER: o->no_free_order = true; break;
    case OPT_PLUGIN:
        if (tk_args_file(&cli, "--plugin", arg, &arg) != 0)
            return -1;
        if (o->n_plugins == TK_MAX_PLUGINS) {
            char msg[96];
            snprintf(msg, sizeof(msg), "--plugin: at most %d plugins; '%%s' is one more",
                     TK_MAX_PLUGINS);
            return tk_args_bad(&cli, msg, arg);
        }
        o->plugin_paths[o->n_plugins++] = arg;
        break;
    case OPT_TIMEOUT:
        rc = tk_args_u64(&cli, "--timeout", arg, 0, BENCH_MAX_TIMEOUT_S, &v);
        o->timeout_s = (unsigned)v;
        break;
    default:
        return -1;
    }
    return rc;
}

/* Returns 0 to run, 1 if --help was shown, -1 for bad usage (reported). */
static int parse_options(int argc, char **argv, struct bench_opts *o)
{
    *o = (struct bench_opts){
        .ops = DEFAULT_OPS, .rounds = DEFAULT_ROUNDS, .min_size_bytes = DEFAULT_MIN_BYTES,
        .max_size_bytes = DEFAULT_MAX_BYTES, .live_cap = DEFAULT_LIVE,
        .heap_bytes = DEFAULT_HEAP_BYTES, .seed = DEFAULT_SEED, .sweep_ops = DEFAULT_SWEEP_OPS,
        .fill_blocks = DEFAULT_FILL, .cpu = -1, .priority = TK_RT_DEFAULT_PRIORITY,
        .timeout_s = BENCH_DEFAULT_TIMEOUT_S,
    };
    bool set_ops = false, set_rounds = false, set_sweep_ops = false;

    tk_args_begin();
    int c;
    while ((c = tk_args_next(&cli, argc, argv, long_opts)) > 0) {
        if (c == 'h') {
            usage(stdout);
            return 1;
        }
        if (apply_option(c, optarg, o, &set_ops, &set_rounds, &set_sweep_ops) != 0)
            return -1;
    }
    if (c < 0)
        return -1;

    if (o->quick) {
        if (!set_ops)
            o->ops = QUICK_OPS;
        if (!set_rounds)
            o->rounds = QUICK_ROUNDS;
        if (!set_sweep_ops)
            o->sweep_ops = QUICK_SWEEP_OPS;
    }
    if (o->min_size_bytes > o->max_size_bytes) {
        char msg[96];
        snprintf(msg, sizeof(msg), "--min-size (%u) is larger than --max-size (%u)%%s",
                 o->min_size_bytes, o->max_size_bytes);
        return tk_args_bad(&cli, msg, "");
    }
    if (o->no_sweep && o->sweep_only)
        return tk_args_bad(&cli, "--no-sweep and --sweep-only exclude each other%s", "");
    if (o->sweep_only)
        o->no_free_order = true;
    return 0;
}

/* bench runs every rtmem kind at both hardening levels, tlsf(typed), glibc
 * and the plugins unless --kinds says otherwise; a peer only when named.
 * Rows come in the canonical order whatever the order of --kinds. */
static const struct tk_kinds_spec kinds_spec = {
    .by_default = TK_DEFAULT_KINDS | TK_DEFAULT_NONE | TK_DEFAULT_TYPED | TK_DEFAULT_GLIBC |
                  TK_DEFAULT_PLUGINS,
    .listed_order = false,
};

/* The floor first, then the allocators --kinds selects (common/kinds.h),
 * the peers that did not load noted in b->skipped. Returns 0, or an exit
 * status (reported). */
static int select_allocators(struct bench *b, int argc, char **argv)
{
    struct tk_kinds *k = &b->kinds;
    int rc = tk_kinds_select(k, &kinds_spec, &cli, b->o.kinds_arg, b->o.plugin_paths,
                             b->o.n_plugins, argc, argv);
    if (rc != 0)
        return rc;
    struct allocator *fl = &b->al[b->n_al++];
    fl->floor = true;
    snprintf(fl->def.name, sizeof(fl->def.name), "floor");
    for (size_t i = 0; i < k->n; i++)
        b->al[b->n_al++].def = k->list[i];
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
    size_t offset;     /* of the pointer in struct allocator */
    size_t elem;
    int count;         /* of what: 0 rounds, 1 fill passes, 2 sweep buckets */
};

static const struct result_array result_arrays[] = {
    {offsetof(struct allocator, rounds[0]), sizeof(struct tk_summary), 0},
    {offsetof(struct allocator, rounds[1]), sizeof(struct tk_summary), 0},
    {offsetof(struct allocator, fill_alloc), sizeof(struct tk_summary), 1},
    {offsetof(struct allocator, fill_free[FILL_IN_ORDER]), sizeof(struct tk_summary), 0},
    {offsetof(struct allocator, fill_free[FILL_SHUFFLED]), sizeof(struct tk_summary), 0},
    {offsetof(struct allocator, sweep_alloc_ns), sizeof(double), 2},
    {offsetof(struct allocator, sweep_free_ns), sizeof(double), 2},
    {offsetof(struct allocator, sweep_failed), sizeof(uint64_t), 2},
};

#define N_RESULT_ARRAYS (sizeof(result_arrays) / sizeof(result_arrays[0]))

static void **array_at(struct allocator *a, const struct result_array *r)
{
    return (void **)((char *)a + r->offset);
}

static size_t array_bytes(const struct bench *b, const struct result_array *r)
{
    size_t n = r->count == 0   ? b->o.rounds
               : r->count == 1 ? (size_t)FILL_ORDERS * b->o.rounds
                               : SWEEP_BUCKETS;
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

static void reset_results(struct bench *b)
{
    for (size_t i = 0; i < b->n_al; i++) {
        struct allocator *a = &b->al[i];
        for (size_t k = 0; k < N_RESULT_ARRAYS; k++)
            memset(*array_at(a, &result_arrays[k]), 0, array_bytes(b, &result_arrays[k]));
        a->check_failures = a->failed_allocs = a->skipped_frees = a->free_errors = 0;
        a->fill_failed_allocs = a->fill_skipped_frees = 0;
        memset(a->agg, 0, sizeof(a->agg));
        memset(&a->fill_alloc_agg, 0, sizeof(a->fill_alloc_agg));
        memset(a->fill_free_agg, 0, sizeof(a->fill_free_agg));
        memset(&a->mem, 0, sizeof(a->mem));   /* the previous process's */
        a->heap = NULL;
        a->tlsf = NULL;
        a->loaded_heap = NULL;
    }
    b->ran_main = b->ran_free_order = b->ran_sweep = false;
    b->main_seconds = b->free_order_seconds = b->sweep_seconds = 0;
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

/* Before a pass: which allocator and where, for the parent to name should
 * the process die in it, and progress for the watchdog. */
void bench_mark_pass(struct bench *b, size_t al, enum bench_phase phase, unsigned round,
                     bool warmup)
{
    b->now = (struct bench_running){.set = true, .al = al, .phase = phase, .round = round,
                                    .warmup = warmup};
    tk_child_beat(&b->beat);
}

/* The measuring process's exit statuses beyond 0 and 1. */
#define MEASURE_NO_STDOUT 3   /* the header could not be written (reported) */

/* The measuring process: the real-time setup, the heaps, the memory lock,
 * the header (first attempt only), every phase. Its results go to the
 * shared arrays; it exits after, so nothing here is freed. */
static int measure(void *arg)
{
    struct bench *b = arg;
    struct tk_rt_request req = {
        .pin = !b->o.no_rt, .cpu = b->o.cpu, .fifo = !b->o.no_rt,
        .priority = b->o.priority, .lock = false,   /* once mapped, below */
    };
    tk_rt_setup(&req, &b->rt);
    if (allocate_work(b) != 0) {
        fprintf(stderr, "rtmem bench: out of memory for the run's buffers\n");
        return 1;
    }
    for (size_t i = 0; i < b->n_al; i++) {
        if (bench_left_out(b, i))
            continue;
        bench_mark_pass(b, i, PH_SETUP, 0, false);
        if (bench_allocator_open(&b->al[i], b->o.heap_bytes) != 0)
            return 1;
    }
    b->now.set = false;
    tk_rt_lock_memory(&b->rt);
    if (!b->header_done) {
        bench_print_header(stdout, b);
        b->header_done = true;
        /* A report that cannot be written is not worth measuring. */
        if (tk_stdout_check(cli.prog) != 0)
            return MEASURE_NO_STDOUT;
    }
    if (!b->o.sweep_only)
        bench_run_main(b);
    if (!b->o.no_free_order && bench_run_free_order(b) != 0)
        return 1;
    if (!b->o.no_sweep)
        bench_run_sweep(b);
    b->now.set = false;
    tk_rt_refresh(&b->rt);
    return 0;
}

static const char *const phase_names[] = {"setup", "main phase", "free-order phase", "sweep"};

const char *bench_where(const struct bench_running *w, char *buf, size_t size)
{
    if (w->phase == PH_SETUP)
        snprintf(buf, size, "creating its heap");
    else if (w->warmup)
        snprintf(buf, size, "%s, warm-up pass", phase_names[w->phase]);
    else if (w->phase == PH_SWEEP)
        snprintf(buf, size, "sweep, bucket %u..%u B", w->round * SWEEP_BUCKET_BYTES,
                 (w->round + 1) * SWEEP_BUCKET_BYTES - 1);
    else
        snprintf(buf, size, "%s, round %u", phase_names[w->phase], w->round + 1);
    return buf;
}

/* Records how the measuring process died in the allocator it was running.
 * Returns 0 if the run can go on without that allocator, else 1
 * (reported): the process died outside an allocator, or in the floor. */
static int fail_allocator(struct bench *b, const struct tk_child_result *r)
{
    char sig[64], where[96];
    const char *how = r->end == TK_CHILD_TIMED_OUT ? "hung"
                      : r->end == TK_CHILD_KILLED
                          ? tk_signal_describe(r->code, sig, sizeof(sig))
                          : "exited";
    if (!b->now.set || b->now.al == 0 || b->now.al >= b->n_al) {
        if (r->end == TK_CHILD_EXITED)
            fprintf(stderr, "rtmem bench: the measuring process failed (exit status %d)\n",
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
    if (f->timed_out)
        snprintf(f->msg, sizeof(f->msg), "%s: hung: no progress for %u s (--timeout), killed "
                 "with SIGKILL", where, b->o.timeout_s);
    else if (r->end == TK_CHILD_KILLED)
        snprintf(f->msg, sizeof(f->msg), "%s: crashed: killed by %s", where, how);
    else
        snprintf(f->msg, sizeof(f->msg), "%s: the measuring process exited with status %d",
                 where, r->code);
    fprintf(stderr, "rtmem bench: FAILED: %s: %s; measuring again without it\n", a->def.name,
            f->msg);
    return 0;
}

/* Runs the measuring process until it completes, leaving out each
 * allocator it dies in. Returns 0, or 1 (reported). */
static int measure_all(struct bench *b)
{
    const struct tk_child_opts co = {.timeout_s = b->o.timeout_s,
                                     .watch_priority = b->watch_priority};
    /* Each attempt leaves one allocator out or ends the run. */
    for (size_t attempt = 0; attempt < b->n_al; attempt++) {
        struct tk_child_result r;
        reset_results(b);
        tk_child_run(measure, b, &b->beat, &co, &r);
        switch (r.end) {
        case TK_CHILD_EXITED:
            if (r.code == 0 || r.code == MEASURE_NO_STDOUT)
                return r.code == 0 ? 0 : 1;
            /* In an allocator's pass or heap: that allocator's failure. */
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

/* Moves the allocators that failed from al[] to gone[], in order. */
static void set_aside_failed(struct bench *b)
{
    size_t kept = 0;
    for (size_t i = 0; i < b->n_al; i++) {
        if (bench_left_out(b, i))
            b->gone[b->n_gone++] = b->al[i];
        else
            b->al[kept++] = b->al[i];
    }
    b->n_al = kept;
}

/* The JSON into the result file and the file into place. Returns 0 or 1
 * (reported). */
static int write_results(struct bench *b, struct tk_result *json)
{
    if (bench_write_json(json->f, b) == -EINVAL) {
        fprintf(stderr, "rtmem bench: internal error: unbalanced JSON for '%s'\n",
                b->o.json_path);
        return 1;
    }
    /* A write error is the commit's to report, with its cause. */
    if (tk_result_commit(json, cli.prog) != 0)
        return 1;
    printf("\nresults written to %s\n", b->o.json_path);
    return 0;
}

/* The watchdog's priority: above the measuring process's, so that one
 * spinning at its real-time priority on the parent's CPU cannot starve it. */
static int watch_priority(const struct bench *b, bool fifo_granted)
{
    if (b->o.no_rt || !fifo_granted)
        return 0;
    int max = sched_get_priority_max(SCHED_FIFO);
    return b->o.priority < max ? b->o.priority + 1 : max;
}

/* Everything after option parsing. Returns the exit status. */
static int bench_run(struct bench *b)
{
    struct tk_result json;
    bool have_json = b->o.json_path != NULL;
    if (have_json && tk_result_open(&json, cli.prog, b->o.json_path) != 0)
        return EXIT_USAGE;

    /* The timer is calibrated under the real-time setup the measuring gets;
     * then the parent, which only waits, gives it up. */
    struct tk_rt_state parent_rt;
    const struct tk_run_opts ro = {cli.prog, b->o.no_rt, b->o.cpu, b->o.priority, CALIBRATION_MS};
    int status = tk_run_setup(&ro, &parent_rt, &b->timer, &b->mf) == 0 ? 0 : 1;
    b->watch_priority = watch_priority(b, parent_rt.fifo.granted);
    tk_rt_undo(&parent_rt);
    if (status == 0 && allocate_results(b) != 0) {
        fprintf(stderr, "rtmem bench: out of memory for the run's results\n");
        status = 1;
    }
    if (status == 0)
        status = measure_all(b);
    if (status == 0)
        set_aside_failed(b);

    if (status == 0) {
        bench_aggregate_main(b);
        bench_aggregate_free_order(b);
        bench_aggregate_sweep(b);
        bench_report(stdout, b);
        if (tk_stdout_check(cli.prog) != 0)
            status = 1;
        /* A complete run replaces the result file; allocators that failed
         * are in it, with their failure. */
        if (have_json && status == 0)
            status = write_results(b, &json);
        if (b->n_gone > 0)
            status = 1;
    }
    if (have_json)
        tk_result_abandon(&json);   /* nothing once committed */
    free_results(b);
    return status;
}

int rtm_cmd_bench(int argc, char **argv)
{
    /* Shared with the measuring process, which writes its results here. */
    struct bench *b = tk_shared_alloc(sizeof(*b));
    if (!b) {
        fprintf(stderr, "rtmem bench: out of memory\n");
        return 1;
    }
    int rc = parse_options(argc, argv, &b->o);
    int status;
    if (rc > 0) {
        status = 0;
    } else if (rc < 0) {
        status = EXIT_USAGE;
    } else {
        status = select_allocators(b, argc, argv);
        if (status == 0)
            status = bench_run(b);
    }
    tk_shared_free(b, sizeof(*b));
    return status;
}
