/*
 * `rtmem bench`: alloc/free latency of every rtmem heap kind, TLSF through
 * its typed API and glibc malloc, side by side on one random workload; then
 * the cost of freeing a fill in allocation order against a random order; then
 * a sweep of alloc+free cost over block sizes. Options and the run's sequence
 * live here; see bench.h for the other files.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cmd.h"
#include "common/args.h"
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

static const char *const extra_names[] = {"tlsf(typed)", "glibc"};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rtmem bench [options]\n"
            "\n"
            "Times alloc and free of every rtmem heap kind (through rtm_heap_*), of TLSF\n"
            "through its typed API (row \"tlsf(typed)\": the difference is the dispatch\n"
            "cost) and of glibc malloc/free (its defaults, no mallopt), on the same random\n"
            "workload, interleaved over several rounds. Every time is also shown minus the\n"
            "floor: the same harness around a call to a function that returns its argument.\n"
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
            "options:\n"
            "  --ops N           operations per pass (default %u; --quick %u)\n"
            "  --rounds N        measured rounds, order alternating (default %u; --quick %u)\n"
            "  --min-size B      smallest request in bytes (default %u)\n"
            "  --max-size B      largest request in bytes (default %u)\n"
            "  --live N          cap on live blocks (default %u)\n"
            "  --heap-size B     memory of each rtmem heap (default 64M)\n"
            "  --seed N          workload seed (default %u)\n"
            "  --cpu N           CPU to pin to (default: the last allowed CPU)\n"
            "  --prio N          SCHED_FIFO priority, 1..99 (default %d)\n"
            "  --no-rt           no CPU pinning, no SCHED_FIFO (mlockall is still tried)\n"
            "  --kinds a,b,...   allocators to run (default all): ",
            DEFAULT_OPS, QUICK_OPS, DEFAULT_ROUNDS, QUICK_ROUNDS, DEFAULT_MIN_BYTES,
            DEFAULT_MAX_BYTES, DEFAULT_LIVE, DEFAULT_SEED, TK_RT_DEFAULT_PRIORITY);
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        fprintf(f, "%s, ", *k);
    fprintf(f,
            "tlsf(typed)\n"
            "                    (alias tlsf-typed), glibc\n"
            "  --json FILE       also write the results as JSON (schema %s): to a new\n"
            "                    file beside FILE, renamed over it only when the run\n"
            "                    completes; a failed or interrupted run leaves FILE as\n"
            "                    it was. A FIFO or device (/dev/stdout, /dev/null) is\n"
            "                    written directly\n"
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
            "Exit status: 0 ok, 1 run-time failure (a report that cannot be written to\n"
            "standard output included), 2 bad usage.\n",
            BENCH_SCHEMA, DEFAULT_FILL, DEFAULT_SWEEP_OPS, QUICK_SWEEP_OPS);
}

/* Messages name the subcommand; byte-count examples fit its sizes. */
static const struct tk_args cli = {"rtmem bench", "4096, 64K, 64M"};

enum {
    OPT_OPS = 256, OPT_ROUNDS, OPT_MIN, OPT_MAX, OPT_LIVE, OPT_HEAP, OPT_SEED, OPT_CPU,
    OPT_PRIO, OPT_NO_RT, OPT_KINDS, OPT_JSON, OPT_QUICK, OPT_NO_SWEEP, OPT_SWEEP_ONLY,
    OPT_SWEEP_OPS, OPT_FILL, OPT_NO_FREE_ORDER,
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

static void add_allocator(struct bench *b, const char *name, enum alloc_type type)
{
    struct allocator *a = &b->al[b->n_al++];
    memset(a, 0, sizeof(*a));
    a->name = name;
    a->type = type;
}

/* Canonical name of a --kinds entry, or NULL if unknown. */
static const char *canonical_kind(const char *name)
{
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        if (strcmp(name, *k) == 0)
            return *k;
    if (strcmp(name, "tlsf-typed") == 0)
        return extra_names[0];
    for (size_t i = 0; i < sizeof(extra_names) / sizeof(extra_names[0]); i++)
        if (strcmp(name, extra_names[i]) == 0)
            return extra_names[i];
    return NULL;
}

/* Is the canonical name selected by --kinds (every name if absent)? Fills
 * *unknown with the first unknown entry. */
static bool kind_selected(const char *kinds_arg, const char *name, const char **unknown,
                          char *buf, size_t buf_size)
{
    if (!kinds_arg)
        return true;
    bool hit = false;
    const char *p = kinds_arg;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= buf_size) {
            if (!*unknown) {
                snprintf(buf, buf_size, "%.*s", (int)(len < buf_size ? len : buf_size - 1), p);
                *unknown = buf;
            }
        } else {
            char item[64];
            snprintf(item, sizeof(item), "%.*s", (int)len, p);
            const char *canon = canonical_kind(item);
            if (!canon && !*unknown) {
                snprintf(buf, buf_size, "%s", item);
                *unknown = buf;
            }
            hit = hit || (canon && strcmp(canon, name) == 0);
        }
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    return hit;
}

/* The floor first, then the rtmem kinds, tlsf(typed), glibc. -1 on bad --kinds. */
static int select_allocators(struct bench *b)
{
    const char *unknown = NULL;
    char buf[64];
    add_allocator(b, "floor", ALLOC_FLOOR);
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        if (b->n_al < BENCH_MAX_ALLOCATORS - 2 &&
            kind_selected(b->o.kinds_arg, *k, &unknown, buf, sizeof(buf)))
            add_allocator(b, *k, ALLOC_HEAP);
    if (kind_selected(b->o.kinds_arg, extra_names[0], &unknown, buf, sizeof(buf)))
        add_allocator(b, extra_names[0], ALLOC_TLSF_TYPED);
    if (kind_selected(b->o.kinds_arg, extra_names[1], &unknown, buf, sizeof(buf)))
        add_allocator(b, extra_names[1], ALLOC_GLIBC);
    if (unknown && !*unknown)
        return tk_args_bad(&cli, "--kinds: empty name in '%s'", b->o.kinds_arg);
    if (unknown) {
        fprintf(stderr, "rtmem bench: --kinds: unknown allocator '%s'; known: ", unknown);
        for (const char *const *k = rtm_heap_kinds(); *k; k++)
            fprintf(stderr, "%s, ", *k);
        fprintf(stderr, "tlsf(typed) (or tlsf-typed), glibc\nTry 'rtmem bench --help'.\n");
        return -1;
    }
    if (b->n_al < 2)
        return tk_args_bad(&cli, "--kinds selects no allocator%s", "");
    return 0;
}

/* Storage for the whole run, allocated before any timing. */
static int allocate_run_storage(struct bench *b)
{
    size_t ops = b->o.ops > b->o.sweep_ops ? (size_t)b->o.ops : (size_t)b->o.sweep_ops;
    size_t samples = ops > b->o.fill_blocks ? ops : (size_t)b->o.fill_blocks;
    if (workload_init(&b->w, ops) != 0 || fill_work_init(&b->fw, b->o.fill_blocks) != 0 ||
        tk_samples_init(&b->alloc_s, samples) != 0 || tk_samples_init(&b->free_s, samples) != 0)
        return -ENOMEM;
    b->slots_cap = b->o.live_cap;
    b->slots = calloc(b->slots_cap, sizeof(void *));
    if (!b->slots)
        return -ENOMEM;
    for (size_t i = 0; i < b->n_al; i++) {
        struct allocator *a = &b->al[i];
        a->rounds[0] = calloc(b->o.rounds, sizeof(struct tk_summary));
        a->rounds[1] = calloc(b->o.rounds, sizeof(struct tk_summary));
        a->sweep_alloc_ns = calloc(SWEEP_BUCKETS, sizeof(double));
        a->sweep_free_ns = calloc(SWEEP_BUCKETS, sizeof(double));
        a->sweep_failed = calloc(SWEEP_BUCKETS, sizeof(uint64_t));
        a->fill_alloc = calloc((size_t)FILL_ORDERS * b->o.rounds, sizeof(struct tk_summary));
        for (int o = 0; o < FILL_ORDERS; o++)
            a->fill_free[o] = calloc(b->o.rounds, sizeof(struct tk_summary));
        if (!a->rounds[0] || !a->rounds[1] || !a->sweep_alloc_ns || !a->sweep_free_ns ||
            !a->sweep_failed || !a->fill_alloc || !a->fill_free[FILL_IN_ORDER] ||
            !a->fill_free[FILL_SHUFFLED])
            return -ENOMEM;
    }
    return 0;
}

/* Index of the k-th allocator to run in a round: forward in even rounds,
 * backward in odd ones, so no allocator always runs right after another. */
static size_t order_index(size_t k, size_t n, unsigned round)
{
    return round % 2 == 0 ? k : n - 1 - k;
}

static void run_main(struct bench *b)
{
    struct pass_out out;
    uint64_t t0 = tk_clock_ns();
    workload_generate(&b->w, b->o.ops, b->o.min_size_bytes, b->o.max_size_bytes, b->o.live_cap,
                      b->o.seed);
    /* Warm-up: one unrecorded pass each (caches, glibc's arenas, page tables). */
    for (size_t k = 0; k < b->n_al; k++) {
        tk_rt_breather(&b->rt);
        run_pass(b, &b->al[k], &out);
    }
    for (unsigned r = 0; r < b->o.rounds; r++) {
        for (size_t k = 0; k < b->n_al; k++) {
            struct allocator *a = &b->al[order_index(k, b->n_al, r)];
            tk_rt_breather(&b->rt);
            run_pass(b, a, &out);
            tk_samples_summarize(out.alloc_ticks, b->timer.ns_per_tick, &a->rounds[0][r]);
            tk_samples_summarize(out.free_ticks, b->timer.ns_per_tick, &a->rounds[1][r]);
            a->failed_allocs += out.failed_allocs;
            a->skipped_frees += out.skipped_frees;
            a->free_errors += out.free_errors;
        }
    }
    b->main_seconds = (double)(tk_clock_ns() - t0) / 1e9;
    b->ran_main = true;
}

/* Free-order phase: per round, every allocator (order alternating as in the
 * main phase) runs both orders, the one going first alternating by round.
 * 0, or -1 if a heap could not be created again (reported). */
static int run_free_order(struct bench *b)
{
    struct pass_out out;
    uint64_t t0 = tk_clock_ns();
    fill_work_generate(&b->fw, b->o.fill_blocks, b->o.min_size_bytes, b->o.max_size_bytes,
                       b->o.seed ^ FILL_SEED_SALT);
    /* Warm-up: one unrecorded pass of each order per allocator. */
    for (size_t k = 0; k < b->n_al; k++)
        for (int o = 0; o < FILL_ORDERS; o++) {
            tk_rt_breather(&b->rt);
            if (run_fill_pass(b, &b->al[k], (enum fill_order)o, &out) != 0)
                return -1;
        }
    for (unsigned r = 0; r < b->o.rounds; r++) {
        for (size_t k = 0; k < b->n_al; k++) {
            struct allocator *a = &b->al[order_index(k, b->n_al, r)];
            for (unsigned i = 0; i < FILL_ORDERS; i++) {
                enum fill_order o = (enum fill_order)((r + i) % FILL_ORDERS);
                tk_rt_breather(&b->rt);
                if (run_fill_pass(b, a, o, &out) != 0)
                    return -1;
                tk_samples_summarize(out.alloc_ticks, b->timer.ns_per_tick,
                                     &a->fill_alloc[o * b->o.rounds + r]);
                tk_samples_summarize(out.free_ticks, b->timer.ns_per_tick, &a->fill_free[o][r]);
                a->fill_failed_allocs += out.failed_allocs;
                a->fill_skipped_frees += out.skipped_frees;
                a->free_errors += out.free_errors;
            }
        }
    }
    b->free_order_seconds = (double)(tk_clock_ns() - t0) / 1e9;
    b->ran_free_order = true;
    return 0;
}

static double mean_ns(const struct bench *b, const struct tk_samples *s)
{
    if (s->n == 0)
        return NAN;
    return (double)tk_samples_sum(s) / (double)s->n * b->timer.ns_per_tick;
}

static void run_sweep(struct bench *b)
{
    struct pass_out out;
    uint64_t t0 = tk_clock_ns();
    double floor_sum = 0;
    for (unsigned bk = 0; bk < SWEEP_BUCKETS; bk++) {
        uint32_t lo = bk * SWEEP_BUCKET_BYTES, hi = lo + SWEEP_BUCKET_BYTES - 1;
        workload_generate(&b->w, b->o.sweep_ops, lo, hi, b->o.live_cap,
                          b->o.seed ^ ((uint64_t)(bk + 1) * 0x9e3779b97f4a7c15u));
        for (size_t k = 0; k < b->n_al; k++) {
            struct allocator *a = &b->al[order_index(k, b->n_al, bk)];
            tk_rt_breather(&b->rt);
            run_pass(b, a, &out);   /* warm-up for this size range */
            run_pass(b, a, &out);
            a->sweep_alloc_ns[bk] = mean_ns(b, out.alloc_ticks);
            a->sweep_free_ns[bk] = mean_ns(b, out.free_ticks);
            a->sweep_failed[bk] = out.failed_allocs;
            a->free_errors += out.free_errors;
        }
        floor_sum += b->al[0].sweep_alloc_ns[bk] + b->al[0].sweep_free_ns[bk];
    }
    b->sweep_floor_ns = floor_sum / SWEEP_BUCKETS;
    b->sweep_seconds = (double)(tk_clock_ns() - t0) / 1e9;
    b->ran_sweep = true;
}

static void free_run(struct bench *b)
{
    for (size_t i = 0; i < b->n_al; i++)
        allocator_close(&b->al[i]);
    free(b->slots);
    workload_destroy(&b->w);
    fill_work_destroy(&b->fw);
    tk_samples_destroy(&b->alloc_s);
    tk_samples_destroy(&b->free_s);
}

/* The JSON into the result file and the file into place. Returns 0 or 1
 * (reported). */
static int write_results(struct bench *b, struct tk_result *json)
{
    if (write_json(json->f, b) == -EINVAL) {
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

/* Everything after option parsing. Returns the exit status. */
static int bench_run(struct bench *b)
{
    struct tk_result json;
    bool have_json = b->o.json_path != NULL;
    if (have_json && tk_result_open(&json, cli.prog, b->o.json_path) != 0)
        return EXIT_USAGE;

    /* Memory is locked below, once mapped. */
    const struct tk_run_opts ro = {cli.prog, b->o.no_rt, b->o.cpu, b->o.priority, CALIBRATION_MS};
    int status = tk_run_setup(&ro, &b->rt, &b->timer, &b->mf) == 0 ? 0 : 1;
    if (status == 0 && allocate_run_storage(b) != 0) {
        fprintf(stderr, "rtmem bench: out of memory for the run's buffers\n");
        status = 1;
    }
    for (size_t i = 0; status == 0 && i < b->n_al; i++)
        if (allocator_open(&b->al[i], b->o.heap_bytes) != 0)
            status = 1;

    if (status == 0) {
        tk_rt_lock_memory(&b->rt);
        print_header(stdout, b);
        /* A report that cannot be written is not worth measuring. */
        if (tk_stdout_check(cli.prog) != 0)
            status = 1;
    }
    if (status == 0) {
        if (!b->o.sweep_only)
            run_main(b);
        if (!b->o.no_free_order && run_free_order(b) != 0)
            status = 1;
        if (status == 0 && !b->o.no_sweep)
            run_sweep(b);
        tk_rt_refresh(&b->rt);
        aggregate_main(b);
        aggregate_free_order(b);
        print_main(stdout, b);
        print_free_order(stdout, b);
        print_sweep(stdout, b);
        print_notes(stdout, b);
        if (tk_stdout_check(cli.prog) != 0)
            status = 1;
        /* Only a complete run replaces the result file. */
        if (have_json && status == 0)
            status = write_results(b, &json);
    }
    if (have_json)
        tk_result_abandon(&json);   /* nothing once committed */
    free_run(b);
    tk_rt_undo(&b->rt);
    return status;
}

int rtm_cmd_bench(int argc, char **argv)
{
    struct bench *b = calloc(1, sizeof(*b));
    if (!b) {
        fprintf(stderr, "rtmem bench: out of memory\n");
        return 1;
    }
    int rc = parse_options(argc, argv, &b->o);
    int status;
    if (rc > 0)
        status = 0;
    else if (rc < 0 || select_allocators(b) != 0)
        status = EXIT_USAGE;
    else
        status = bench_run(b);
    free(b);
    return status;
}
