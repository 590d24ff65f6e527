/*
 * `rtmem bench`: its options table, --help, the combinations of options the
 * table cannot check, and bench_tool, what the bench kit's driver runs
 * (common/tool.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../cmd.h"
#include "bench.h"
#include "common/opt.h"
#include "common/tool.h"

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
#define DEFAULT_WIDE_REPS  20u
#define QUICK_WIDE_REPS    3u
#define DEFAULT_THREADS    2u
#define DEFAULT_THREAD_OPS 20000u
#define QUICK_THREAD_OPS   2000u

static const struct bench_opts defaults = {
    .ops = DEFAULT_OPS,
    .rounds = DEFAULT_ROUNDS,
    .min_size_bytes = DEFAULT_MIN_BYTES,
    .max_size_bytes = DEFAULT_MAX_BYTES,
    .live_cap = DEFAULT_LIVE,
    .heap_bytes = DEFAULT_HEAP_BYTES,
    .seed = DEFAULT_SEED,
    .sweep_ops = DEFAULT_SWEEP_OPS,
    .wide_reps = DEFAULT_WIDE_REPS,
    .fill_blocks = DEFAULT_FILL,
    .rt = TK_RT_OPTS_DEFAULT,
    .timeout_s = BENCH_DEFAULT_TIMEOUT_S,
    .threads = DEFAULT_THREADS,
    .thread_ops = DEFAULT_THREAD_OPS,
    .threads_kind = "tlsf",
};

#define F(field) TK_FIELD(struct bench_opts, field)

static const struct tk_opt options[] = {
    { "ops", TK_OPT_UINT, "N", "operations per pass (default %D; --quick %Q)", F(ops), .lo = 1,
      .hi = BENCH_MAX_OPS, .quick = QUICK_OPS, .flags = TK_OPTF_QUICK },
    { "rounds", TK_OPT_UINT, "N", "measured rounds (default %D; --quick %Q)", F(rounds), .lo = 1,
      .hi = BENCH_MAX_ROUNDS, .quick = QUICK_ROUNDS, .flags = TK_OPTF_QUICK },
    { "min-size", TK_OPT_BYTES, "B", "smallest request (default %D)", F(min_size_bytes), .lo = 0,
      .hi = BENCH_MAX_SIZE_BYTES },
    { "max-size", TK_OPT_BYTES, "B", "largest request (default %D)", F(max_size_bytes), .lo = 0,
      .hi = BENCH_MAX_SIZE_BYTES },
    { "live", TK_OPT_UINT, "N", "cap on live blocks (default %D)", F(live_cap), .lo = 1,
      .hi = BENCH_MAX_LIVE },
    { "heap-size", TK_OPT_BYTES, "B", "memory of each heap (default %D)", F(heap_bytes),
      .lo = BENCH_MIN_HEAP_BYTES, .hi = BENCH_MAX_HEAP_BYTES },
    TK_OPT_KIT_SEED(F(seed)),
    TK_OPT_KIT_RT(struct bench_opts, rt),
    TK_OPT_KIT_KINDS(F(kinds_arg)),
    TK_OPT_KIT_PLUGIN(struct bench_opts, plugin_paths, n_plugins),
    TK_OPT_KIT_TIMEOUT(F(timeout_s), BENCH_MAX_TIMEOUT_S),
    TK_OPT_KIT_JSON(F(json_path)),
    TK_OPT_KIT_QUICK(F(quick)),
    { "fill", TK_OPT_UINT, "N", "blocks per fill, free-order phase (default %D)", F(fill_blocks),
      .lo = 1, .hi = BENCH_MAX_LIVE },
    { "no-free-order", TK_OPT_FLAG, NULL, "skip the free-order phase", F(no_free_order) },
    { "no-sweep", TK_OPT_FLAG, NULL, "skip the size sweep", F(no_sweep) },
    { "sweep-only", TK_OPT_FLAG, NULL, "run only the size sweep", F(sweep_only) },
    { "sweep-ops", TK_OPT_UINT, "N", "operations per size bucket (default %D; --quick %Q)",
      F(sweep_ops), .lo = 1, .hi = BENCH_MAX_OPS, .quick = QUICK_SWEEP_OPS,
      .flags = TK_OPTF_QUICK },
    { "wide-reps", TK_OPT_UINT, "N", "runs per wide range (default %D; --quick %Q; 0: none)",
      F(wide_reps), .lo = 0, .hi = BENCH_MAX_WIDE_REPS, .quick = QUICK_WIDE_REPS,
      .flags = TK_OPTF_QUICK },
    { "threads", TK_OPT_UINT, "N", "threads on one heap (default %D; 0: no threads phase)",
      F(threads), .lo = 0, .hi = BENCH_MAX_THREADS },
    { "thread-ops", TK_OPT_UINT, "N", "operations per thread (default %D; --quick %Q)",
      F(thread_ops), .lo = 1, .hi = BENCH_MAX_OPS, .quick = QUICK_THREAD_OPS,
      .flags = TK_OPTF_QUICK },
    { "locks", TK_OPT_STRING, "a,b,...", "lock types: none, pi, robust, shared (default: all)",
      F(locks_arg) },
    { "threads-kind", TK_OPT_STRING, "KIND", "the threads phase's heap kind (default tlsf)",
      F(threads_kind) },
    { "threads-only", TK_OPT_FLAG, NULL, "run only the threads phase", F(threads_only) },
};

#undef F

/* After the options: the names --kinds takes, known only at run time. */
static void help_notes(FILE *f)
{
    tk_kinds_help(f, "default: all but the peers");
}

/* What the table cannot check. 0, or -1 (reported). */
static int check(struct tk_session *s)
{
    struct bench_opts *o = s->opts;
    if (o->min_size_bytes > o->max_size_bytes)
        return tk_args_bad(&s->cli, "--min-size (%u) is larger than --max-size (%u)",
                           o->min_size_bytes, o->max_size_bytes);
    if (o->no_sweep && o->sweep_only)
        return tk_args_bad(&s->cli, "--no-sweep and --sweep-only exclude each other");
    if (o->threads_only && o->sweep_only)
        return tk_args_bad(&s->cli, "--threads-only and --sweep-only exclude each other");
    if (o->threads_only && o->threads == 0)
        return tk_args_bad(&s->cli, "--threads-only needs threads (--threads is 0)");
    if (bench_parse_locks(&s->cli, o->locks_arg, &o->locks) != 0)
        return -1;
    bool known = false;
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        known |= strcmp(*k, o->threads_kind) == 0;
    if (!known)
        return tk_args_bad(&s->cli,
                           "--threads-kind: no heap kind '%s' (rtmem kinds: see "
                           "'rtmem kinds')",
                           o->threads_kind);
    if (o->sweep_only) {
        o->no_free_order = true;
        o->threads = 0;
    }
    if (o->threads_only)
        o->no_free_order = o->no_sweep = true;
    return 0;
}

const struct tk_tool bench_tool = {
    .name = "bench",
    .summary = "alloc/free latency of every heap kind, side by side with glibc",
    .schema = BENCH_SCHEMA,
    .bytes_example = "4096, 64K, 64M",
    .opts = options,
    .n_opts = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(struct bench_opts),
    .defaults = &defaults,
    .json_path_offset = offsetof(struct bench_opts, json_path),
    .help_notes = help_notes,
    .check = check,
    .setup = bench_setup,
    .run = bench_run,
    .report = bench_report,
    .facts = bench_facts,
    .json = bench_json,
    .teardown = bench_teardown,
};
