/*
 * `rtmem memcheck`: the heap test harness. Runs Xenomai smokey's memory test
 * sequence (memory_heapmem, memory_tlsf, ...) on every rtmem heap kind, on
 * glibc, on the peers that load (jemalloc, mimalloc, tcmalloc, rpmalloc) and on a
 * user's plugins, with smokey's metrics, so its figures compare with
 * published ones, then a churn phase smokey does not have. Here: its
 * options (one table), --help, the checks of combinations, and the tool
 * the driver runs (common/tool.h); memcheck.h lists the other files.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "../cmd.h"
#include "common/kinds.h"
#include "memcheck.h"

/* Smokey's defaults (testsuite/smokey/memory-*). */
#define DEFAULT_SEQ_HEAP       ((size_t)2 << 20)
#define DEFAULT_RANDOM_ROUNDS  1024u
#define DEFAULT_PATTERN_HEAP   ((size_t)128 << 10)
#define DEFAULT_PATTERN_ROUNDS 128u
#define DEFAULT_MAX_RESULTS    4
/* rtmem's churn phase. */
#define DEFAULT_CHURN_OPS      1000000u
#define DEFAULT_CHURN_HEAP     ((size_t)1 << 20)
#define DEFAULT_CHURN_FILL     50u
#define DEFAULT_CHURN_MAX      4096u
#define DEFAULT_SEED           20240601u
/* --quick: the same sequence, smaller. */
#define QUICK_SEQ_HEAP         ((size_t)256 << 10)
#define QUICK_RANDOM_ROUNDS    64u
#define QUICK_PATTERN_ROUNDS   16u
#define QUICK_CHURN_OPS        100000u

#define ALL_PHASES ((1u << MC_PHASES) - 1)

/* ---- values the table cannot parse alone ----------------------------------------- */

/* --max-results: -1 (every row) or a whole number of rows, into an int. */
static int parse_max_results(const struct tk_args *cli, const char *arg, void *field)
{
    int *out = field;
    if (arg && strcmp(arg, "-1") == 0) {
        *out = -1;
        return 0;
    }
    if (arg && arg[0] == '-')
        return tk_args_bad(cli,
                           "--max-results needs -1 (every row) or a whole number of "
                           "rows, not '%s'",
                           arg);
    uint64_t v;
    if (tk_args_u64(cli, "--max-results", arg, 0, INT_MAX, &v) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* --phases: a comma-separated list of phase names, into a mask. */
static int parse_phases(const struct tk_args *cli, const char *arg, void *field)
{
    unsigned *phases = field;
    *phases = 0;
    for (const char *p = arg;;) {
        size_t len = strcspn(p, ",");
        char item[64];
        if (len == 0 || len >= sizeof(item))
            return tk_args_bad(cli, "--phases: empty or overlong name in the list");
        snprintf(item, sizeof(item), "%.*s", (int)len, p);
        int ph = 0;
        while (ph < MC_PHASES && strcmp(item, mc_phase_name((enum mc_phase)ph)) != 0)
            ph++;
        if (ph == MC_PHASES)
            return tk_args_bad(cli,
                               "--phases: unknown phase '%s' (pow2, random, pattern, "
                               "churn)",
                               item);
        *phases |= 1u << ph;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

/* ---- the options ---------------------------------------------------------------- */

static const char *const formats[] = { "ns", "smokey", NULL }; /* enum mc_format */

#define F(field) TK_FIELD(struct mc_opts, field)

/* Smokey's argument names as long options, then rtmem's. */
static const struct tk_opt opts[] = {
    { "seq-heap-size", TK_OPT_BYTES, "B", "heaps 8K to below B (default %D; --quick %Q)",
      F(seq_heap_bytes), .lo = MC_SEQ_MIN_HEAP + 1, .hi = MC_MAX_HEAP_BYTES,
      .quick = QUICK_SEQ_HEAP, .flags = TK_OPTF_QUICK },
    { "random-alloc-rounds", TK_OPT_UINT, "N", "random tests per size (default %D; --quick %Q)",
      F(random_rounds), .lo = 1, .hi = MC_MAX_ROUNDS, .quick = QUICK_RANDOM_ROUNDS,
      .flags = TK_OPTF_QUICK },
    { "pattern-heap-size", TK_OPT_BYTES, "B", "heap of the pattern phase (default %D)",
      F(pattern_heap_bytes), .lo = 4096, .hi = MC_MAX_HEAP_BYTES },
    { "pattern-check-rounds", TK_OPT_UINT, "N", "pattern tests (default %D; --quick %Q)",
      F(pattern_rounds), .lo = 1, .hi = MC_MAX_ROUNDS, .quick = QUICK_PATTERN_ROUNDS,
      .flags = TK_OPTF_QUICK },
    { "max-results", TK_OPT_CUSTOM, "N", "rows per sorted table; -1 all, 0 none (default %D)",
      F(max_results), .parse = parse_max_results },
    TK_OPT_KIT_KINDS(F(kinds_arg)),
    TK_OPT_KIT_PLUGIN(struct mc_opts, plugin_paths, n_plugins),
    { "phases", TK_OPT_CUSTOM, "a,b,...", "of pow2, random, pattern, churn (default: all)",
      F(phases), .parse = parse_phases },
    { "no-churn", TK_OPT_FLAG, NULL, "skip the churn phase", F(no_churn) },
    { "churn-ops", TK_OPT_UINT, "N", "churn operations (default %D; --quick %Q)", F(churn_ops),
      .lo = 1, .hi = MC_MAX_CHURN_OPS, .quick = QUICK_CHURN_OPS, .flags = TK_OPTF_QUICK },
    { "churn-heap-size", TK_OPT_BYTES, "B", "heap of the churn phase (default %D)",
      F(churn_heap_bytes), .lo = 4096, .hi = MC_MAX_HEAP_BYTES },
    { "churn-fill", TK_OPT_UINT, "PCT", "bytes held, %% of the heap (default %D)",
      F(churn_fill_pct), .lo = 1, .hi = 95 },
    { "churn-max-size", TK_OPT_BYTES, "B", "largest churn request (default %D)", F(churn_max_bytes),
      .lo = 16, .hi = (uint64_t)1 << 30 },
    { "churn-sample-every", TK_OPT_UINT, "N", "ops between samples (default: ops/100)",
      F(churn_sample_every), .lo = 1, .hi = MC_MAX_CHURN_OPS },
    { "format", TK_OPT_CHOICE, "ns|smokey", "tables in ns, or smokey's layout (default %D)",
      F(format), .choices = formats },
    { "compat", TK_OPT_FLAG, NULL, "smokey's behaviour, for comparable figures", F(compat) },
    { "true-overhead", TK_OPT_FLAG, NULL, "add TOVRH%%, overhead with outside metadata",
      F(true_overhead) },
    { "subtract-timer-overhead", TK_OPT_FLAG, NULL, "take the timer's overhead off samples",
      F(subtract_overhead) },
    TK_OPT_KIT_JSON(F(json_path)),
    { "no-json-rows", TK_OPT_FLAG, NULL, "no per-test rows in the JSON", F(no_json_rows) },
    TK_OPT_KIT_SEED(F(seed)),
    TK_OPT_KIT_RT(struct mc_opts, rt),
    TK_OPT_KIT_TIMEOUT(F(timeout_s), MC_MAX_TIMEOUT_S),
    { "progress", TK_OPT_FLAG, NULL, "progress on stderr, even if not a terminal", F(progress) },
    TK_OPT_KIT_QUICK(F(quick)),
};

#undef F

static const struct mc_opts defaults = {
    .seq_heap_bytes = DEFAULT_SEQ_HEAP,
    .random_rounds = DEFAULT_RANDOM_ROUNDS,
    .pattern_heap_bytes = DEFAULT_PATTERN_HEAP,
    .pattern_rounds = DEFAULT_PATTERN_ROUNDS,
    .max_results = DEFAULT_MAX_RESULTS,
    .churn_ops = DEFAULT_CHURN_OPS,
    .churn_heap_bytes = DEFAULT_CHURN_HEAP,
    .churn_fill_pct = DEFAULT_CHURN_FILL,
    .churn_max_bytes = DEFAULT_CHURN_MAX,
    .seed = DEFAULT_SEED,
    .rt = TK_RT_OPTS_DEFAULT,
    .phases = ALL_PHASES,
    .timeout_s = MC_DEFAULT_TIMEOUT_S,
    .format = MC_FORMAT_NS,
};

/* Combinations the single options cannot check; --no-churn applied. */
static int check(struct tk_session *s)
{
    struct mc_opts *o = s->opts;
    if (o->no_churn)
        o->phases &= ~(1u << MC_PH_CHURN);
    if (o->phases == 0)
        return tk_args_bad(&s->cli, "no phase left to run");
    size_t target = o->churn_heap_bytes / 100 * o->churn_fill_pct;
    if (o->churn_max_bytes > target)
        return tk_args_bad(&s->cli,
                           "--churn-max-size (%zu) is above the churn fill (%zu B = "
                           "%u%% of the churn heap)",
                           o->churn_max_bytes, target, o->churn_fill_pct);
    return 0;
}

/* After the options: the names --kinds takes, known only at run time. */
static void help_notes(FILE *f)
{
    tk_kinds_help(f, "default: all of them");
}

const struct tk_tool memcheck_tool = {
    .name = "memcheck",
    .summary = "heap test harness: smokey's memory test sequence and metrics",
    .schema = MC_SCHEMA,
    .bytes_example = "4096, 64K, 2M",
    .opts = opts,
    .n_opts = sizeof(opts) / sizeof(opts[0]),
    .opts_size = sizeof(struct mc_opts),
    .defaults = &defaults,
    .json_path_offset = offsetof(struct mc_opts, json_path),
    .own_progress = true,
    .help_notes = help_notes,
    .check = check,
    .setup = mc_setup,
    .run = mc_run,
    .report = mc_report,
    .facts = mc_facts,
    .json = mc_json,
    .teardown = mc_teardown,
};
