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
#define DEFAULT_THREADS    2u
#define DEFAULT_THREAD_OPS 20000u
#define QUICK_THREAD_OPS   2000u

/* A number in a help line, spelled where the help is a literal. */
#define STR_(x) #x
#define STR(x)  STR_(x)

static const struct bench_opts defaults = {
    .ops = DEFAULT_OPS,
    .rounds = DEFAULT_ROUNDS,
    .min_size_bytes = DEFAULT_MIN_BYTES,
    .max_size_bytes = DEFAULT_MAX_BYTES,
    .live_cap = DEFAULT_LIVE,
    .heap_bytes = DEFAULT_HEAP_BYTES,
    .seed = DEFAULT_SEED,
    .sweep_ops = DEFAULT_SWEEP_OPS,
    .fill_blocks = DEFAULT_FILL,
    .cpu = -1,
    .priority = TK_RT_DEFAULT_PRIORITY,
    .timeout_s = BENCH_DEFAULT_TIMEOUT_S,
    .threads = DEFAULT_THREADS,
    .thread_ops = DEFAULT_THREAD_OPS,
    .threads_kind = "tlsf",
};

#define F(field) TK_FIELD(struct bench_opts, field)

static const struct tk_opt options[] = {
    { "ops", TK_OPT_UINT, "N", "operations per pass (default %D; --quick %Q)", F(ops), .lo = 1,
      .hi = BENCH_MAX_OPS, .quick = QUICK_OPS, .flags = TK_OPTF_QUICK },
    { "rounds", TK_OPT_UINT, "N", "measured rounds, order alternating (default %D; --quick %Q)",
      F(rounds), .lo = 1, .hi = BENCH_MAX_ROUNDS, .quick = QUICK_ROUNDS, .flags = TK_OPTF_QUICK },
    { "min-size", TK_OPT_BYTES, "B", "smallest request in bytes (default %D)", F(min_size_bytes),
      .lo = 0, .hi = BENCH_MAX_SIZE_BYTES },
    { "max-size", TK_OPT_BYTES, "B", "largest request in bytes (default %D)", F(max_size_bytes),
      .lo = 0, .hi = BENCH_MAX_SIZE_BYTES },
    { "live", TK_OPT_UINT, "N", "cap on live blocks (default %D)", F(live_cap), .lo = 1,
      .hi = BENCH_MAX_LIVE },
    { "heap-size", TK_OPT_BYTES, "B", "memory of each heap (rtmem's kinds, plugins; default %D)",
      F(heap_bytes), .lo = BENCH_MIN_HEAP_BYTES, .hi = BENCH_MAX_HEAP_BYTES },
    { "seed", TK_OPT_UINT, "N", "workload seed (default %D)", F(seed), .lo = 0, .hi = UINT64_MAX },
    { "cpu", TK_OPT_CPU, "N", "CPU to pin to (default: the last allowed CPU)", F(cpu) },
    { "prio", TK_OPT_PRIO, "N", "SCHED_FIFO priority, 1..99 (default %D)", F(priority) },
    { "no-rt", TK_OPT_FLAG, NULL, "no CPU pinning, no SCHED_FIFO (mlockall is still tried)",
      F(no_rt) },
    { "kinds", TK_OPT_STRING, "a,b,...",
      "allocators to run (default all but the peers; the names are listed below)", F(kinds_arg) },
    { "plugin", TK_OPT_FILES, "FILE.so",
      "load a heap plugin (repeatable, up to " STR(TK_MAX_PLUGINS) ")", F(plugin_paths),
      .hi = TK_MAX_PLUGINS, .count_offset = offsetof(struct bench_opts, n_plugins) },
    { "timeout", TK_OPT_UINT, "SECONDS",
      "a pass without progress for this long is killed and its allocator left out (default %D; "
      "0: never)",
      F(timeout_s), .lo = 0, .hi = BENCH_MAX_TIMEOUT_S },
    { "json", TK_OPT_FILE, "FILE",
      "also write the results as JSON (schema " BENCH_SCHEMA "): to a new file beside FILE, "
      "renamed over it only when the run completes; a failed or interrupted run leaves FILE as "
      "it was. A FIFO or device (/dev/stdout, /dev/null) is written directly",
      F(json_path) },
    { "quick", TK_OPT_FLAG, NULL, "a short run for smoke tests (ops, rounds, sweep ops reduced)",
      F(quick), .flags = TK_OPTF_QUICK_SWITCH },
    { "fill", TK_OPT_UINT, "N", "blocks per fill in the free-order phase (default %D)",
      F(fill_blocks), .lo = 1, .hi = BENCH_MAX_LIVE },
    { "no-free-order", TK_OPT_FLAG, NULL, "skip the free-order phase", F(no_free_order) },
    { "no-sweep", TK_OPT_FLAG, NULL, "skip the size sweep", F(no_sweep) },
    { "sweep-only", TK_OPT_FLAG, NULL, "run only the size sweep", F(sweep_only) },
    { "sweep-ops", TK_OPT_UINT, "N", "operations per bucket per allocator (default %D; --quick %Q)",
      F(sweep_ops), .lo = 1, .hi = BENCH_MAX_OPS, .quick = QUICK_SWEEP_OPS,
      .flags = TK_OPTF_QUICK },
    { "threads", TK_OPT_UINT, "N",
      "threads sharing one heap in the threads phase (default %D; 0: no threads phase)", F(threads),
      .lo = 0, .hi = BENCH_MAX_THREADS },
    { "thread-ops", TK_OPT_UINT, "N",
      "operations per thread per lock type in the threads phase (default %D; --quick %Q)",
      F(thread_ops), .lo = 1, .hi = BENCH_MAX_OPS, .quick = QUICK_THREAD_OPS,
      .flags = TK_OPTF_QUICK },
    { "locks", TK_OPT_STRING, "a,b,...",
      "lock types of the threads phase: none, pi, robust, shared (default: all four)",
      F(locks_arg) },
    { "threads-kind", TK_OPT_STRING, "KIND",
      "the heap kind of the threads phase (default tlsf; rtmem kinds only)", F(threads_kind) },
    { "threads-only", TK_OPT_FLAG, NULL, "run only the threads phase", F(threads_only) },
};

#undef F

static void help_intro(FILE *f)
{
    fputs("usage: rtmem bench [options]\n"
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
          "fixed seed.\n",
          f);
    fputs("\n"
          "Free-order phase: on a fresh heap, allocate N blocks (sizes uniform in\n"
          "[min-size, max-size], the same for every allocator), then free them all,\n"
          "timing each free: once in allocation order, once in a fixed random order.\n"
          "Over the same rounds as the main phase; shows what the order of frees costs\n"
          "(heapmem and xnheap merge page runs in balanced trees).\n"
          "\n"
          "Then sweeps block sizes in 64-byte buckets from 0 to 10 KiB.\n"
          "\n"
          "Then the threads phase (short; --threads 0 skips it): one heap of\n"
          "--threads-kind under each lock type of --locks (rtmem/lock.h). First what\n"
          "the lock adds to a call, uncontended, next to a bare lock+unlock of a mutex\n"
          "of the same type, measured in the same batches, and the locked call over the\n"
          "unlocked one; then --threads threads, each pinned to a CPU in turn, running\n"
          "the main phase's workload on the one heap at once, with per-thread latency\n"
          "percentiles (lock none: a heap per thread). Lock shared is a shared heap\n"
          "(rtmem/shared.h: its robust lock, in the POSIX shm object rtmem-bench-<pid>,\n"
          "unlinked as soon as it is made; removed too if the measuring process dies\n"
          "before, or on Ctrl-C), set against the same unlocked private heap, with its\n",
          f);
    fprintf(f, "target (a call at most %.1fx the unlocked one: met or not met); its threads\n",
            BENCH_SHARED_TARGET);
    fputs("share that heap. If it cannot be made (no /dev/shm, no room), its rows are\n"
          "skipped with the reason.\n"
          "\n"
          "Peers (jemalloc, mimalloc, tcmalloc, when installed; named in --kinds) and\n"
          "plugins (--plugin, <rtmem/plugin.h>) run beside them, loaded as memcheck\n"
          "loads them. The measuring runs in a child process under a watchdog: an\n"
          "allocator that crashes, or makes no progress for --timeout seconds (a pass\n"
          "is progress), is named with where it failed and a replay command, left out,\n"
          "and the run starts again without it (exit status 1; the others' figures and\n"
          "the failure are in the report and the JSON).\n",
          f);
}

/* After the options: the names --kinds takes, byte counts, privileges,
 * exit status. */
static void help_notes(FILE *f)
{
    char names[512], text[1024];
    snprintf(text, sizeof(text),
             "--kinds names: %s, the plugins' names. By default every one but the peers "
             "runs. <kind>-none is the kind created at hardening level none (no integrity "
             "checks: the others run at the default, O(1) checks), so the table shows what the "
             "checks cost. A peer not installed is skipped.",
             tk_kinds_names(names, sizeof(names)));
    tk_opt_wrap(f, text, 0, 0);
    fputs("\n"
          "Byte counts take a K, M, G or T suffix (powers of 1024). Requires root (or\n"
          "CAP_SYS_NICE, CAP_IPC_LOCK) for SCHED_FIFO and locking; without them the\n"
          "run continues and reports what was refused.\n"
          "Exit status: 0 ok, 1 run-time failure (an allocator that failed, no allocator\n"
          "left to run, or a report that cannot be written to standard output,\n"
          "included), 2 bad usage (a plugin that does not load or whose table is\n"
          "refused included).\n",
          f);
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
    .help_intro = help_intro,
    .help_notes = help_notes,
    .check = check,
    .setup = bench_setup,
    .run = bench_run,
    .report = bench_report,
    .facts = bench_facts,
    .json = bench_json,
    .teardown = bench_teardown,
};
