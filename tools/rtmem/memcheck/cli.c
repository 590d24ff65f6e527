/*
 * `rtmem memcheck`: the heap test harness. Runs Xenomai smokey's memory test
 * sequence (memory_heapmem, memory_tlsf, ...) on every rtmem heap kind, on
 * glibc, on the peers that load (jemalloc, mimalloc, tcmalloc) and on a
 * user's plugins, with smokey's metrics, so its figures compare with
 * published ones, then a churn phase smokey does not have. Here: its
 * options (one table), --help, the checks of combinations, and the tool
 * the driver runs (common/tool.h); memcheck.h lists the other files.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <sys/random.h>

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

/* A number in a help line, from its macro. */
#define STR_(x) #x
#define STR(x)  STR_(x)

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

/* --seed: a whole number, or "random" (drawn now, and printed like any). */
static int parse_seed(const struct tk_args *cli, const char *arg, void *field)
{
    uint64_t *out = field;
    if (arg && strcmp(arg, "random") == 0) {
        if (getrandom(out, sizeof(*out), 0) != (ssize_t)sizeof(*out)) {
            fprintf(stderr, "%s: getrandom for --seed random: %s\n", cli->prog, strerror(errno));
            return -1;
        }
        return 0;
    }
    return tk_args_u64(cli, "--seed", arg, 0, UINT64_MAX, out);
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
    { "seq-heap-size", TK_OPT_BYTES, "B", "heaps 8k, 16k, ... below B (default %D; --quick %Q)",
      F(seq_heap_bytes), .lo = MC_SEQ_MIN_HEAP + 1, .hi = MC_MAX_HEAP_BYTES,
      .quick = QUICK_SEQ_HEAP, .flags = TK_OPTF_QUICK },
    { "random-alloc-rounds", TK_OPT_UINT, "N",
      "random-size tests per heap size and variant, from 1 (default %D; --quick %Q; --phases "
      "leaves one out)",
      F(random_rounds), .lo = 1, .hi = MC_MAX_ROUNDS, .quick = QUICK_RANDOM_ROUNDS,
      .flags = TK_OPTF_QUICK },
    { "pattern-heap-size", TK_OPT_BYTES, "B",
      "heap of the pattern phase (default %D); its cost grows about with the square of this "
      "size",
      F(pattern_heap_bytes), .lo = 4096, .hi = MC_MAX_HEAP_BYTES },
    { "pattern-check-rounds", TK_OPT_UINT, "N", "pattern tests, from 1 (default %D; --quick %Q)",
      F(pattern_rounds), .lo = 1, .hi = MC_MAX_ROUNDS, .quick = QUICK_PATTERN_ROUNDS,
      .flags = TK_OPTF_QUICK },
    { "max-results", TK_OPT_CUSTOM, "N",
      "rows per sorted table (default %D); -1: every row, sorted by heap size (as smokey); 0: "
      "no table",
      F(max_results), .parse = parse_max_results },
    { "kinds", TK_OPT_STRING, "a,b,...",
      "allocators, in this order (default all: rtmem's kinds, glibc, the peers, the plugins; "
      "the names are listed below)",
      F(kinds_arg) },
    { "plugin", TK_OPT_FILES, "FILE.so",
      "load a plugin (repeatable, up to " STR(
          TK_MAX_PLUGINS) "); a name without '/' is "
                          "looked for in the current directory first",
      F(plugin_paths), .hi = TK_MAX_PLUGINS, .count_offset = offsetof(struct mc_opts, n_plugins) },
    { "phases", TK_OPT_CUSTOM, "a,b,...",
      "phases to run (default all): pow2, random, pattern, churn", F(phases),
      .parse = parse_phases },
    { "no-churn", TK_OPT_FLAG, NULL, "skip the churn phase", F(no_churn) },
    { "churn-ops", TK_OPT_UINT, "N", "steady-state operations (default %D; --quick %Q)",
      F(churn_ops), .lo = 1, .hi = MC_MAX_CHURN_OPS, .quick = QUICK_CHURN_OPS,
      .flags = TK_OPTF_QUICK },
    { "churn-heap-size", TK_OPT_BYTES, "B", "heap of the churn phase (default %D)",
      F(churn_heap_bytes), .lo = 4096, .hi = MC_MAX_HEAP_BYTES },
    { "churn-fill", TK_OPT_UINT, "PCT", "live requested bytes held, %% of the heap (default %D)",
      F(churn_fill_pct), .lo = 1, .hi = 95 },
    { "churn-max-size", TK_OPT_BYTES, "B",
      "largest request, from 16 B; each power-of-two octave equally likely (default %D)",
      F(churn_max_bytes), .lo = 16, .hi = (uint64_t)1 << 30 },
    { "churn-sample-every", TK_OPT_UINT, "N", "ops between fragmentation samples (default ops/100)",
      F(churn_sample_every), .lo = 1, .hi = MC_MAX_CHURN_OPS },
    { "format", TK_OPT_CHOICE, "ns|smokey",
      "ns (default): rtmem's tables in nanoseconds; smokey: smokey's exact layout (us, one "
      "decimal), rtmem's own lines prefixed with '#'; with --compat for figures comparable to "
      "smokey's",
      F(format), .choices = formats },
    { "compat", TK_OPT_FLAG, NULL, "smokey's behaviour (see above)", F(compat) },
    { "true-overhead", TK_OPT_FLAG, NULL,
      "add TOVRH%% = 100 - 100 * NRBLKS * B / (H + metadata outside H, stats.overhead_bytes) "
      "to the tables",
      F(true_overhead) },
    { "subtract-timer-overhead", TK_OPT_FLAG, NULL,
      "take the timer's p50 overhead off every sample", F(subtract_overhead) },
    { "json", TK_OPT_FILE, "FILE",
      "also write every row and summary as JSON (schema " MC_SCHEMA "), a few MB per "
      "allocator in a default run; to a new file beside FILE, renamed over it once every test "
      "has its verdict (a failed one included): a run that stops early or is interrupted "
      "leaves FILE as it was. A FIFO or device (/dev/stdout) is written directly",
      F(json_path) },
    { "no-json-rows", TK_OPT_FLAG, NULL,
      "no per-test rows in the JSON (\"rows\": null; the overall lines, pattern and churn "
      "phases stay)",
      F(no_json_rows) },
    { "seed", TK_OPT_CUSTOM, "N|random", "seed of sizes and shuffles (default %D), always printed",
      F(seed), .parse = parse_seed },
    { "cpu", TK_OPT_CPU, "N", "CPU to pin to (default: the last allowed CPU)", F(cpu) },
    { "prio", TK_OPT_PRIO, "N", "SCHED_FIFO priority, 1..99 (default %D)", F(priority) },
    { "no-rt", TK_OPT_FLAG, NULL, "no pinning, no SCHED_FIFO (mlockall is still tried)", F(no_rt) },
    { "timeout", TK_OPT_UINT, "SECONDS",
      "a test process that makes no progress for this long (progress: a test; in the pattern "
      "and churn phases also slices of one) is killed and its allocator fails (default %D; 0: "
      "never)",
      F(timeout_s), .lo = 0, .hi = MC_MAX_TIMEOUT_S },
    { "progress", TK_OPT_FLAG, NULL, "progress on stderr even when it is not a terminal",
      F(progress) },
    { "quick", TK_OPT_FLAG, NULL, "the same sequence, smaller: a run of a few seconds", F(quick),
      .flags = TK_OPTF_QUICK_SWITCH },
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
    .cpu = -1,
    .priority = TK_RT_DEFAULT_PRIORITY,
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

/* ---- --help ------------------------------------------------------------------------ */

/* What memcheck does and measures: before the options. Printed in parts,
 * each string below C99's 4095 characters. */
static void help_intro(FILE *f)
{
    fputs("usage: rtmem memcheck [options]\n"
          "\n"
          "The heap test harness. Runs the sequence of Xenomai's smokey memory tests\n"
          "(memory_heapmem, memory_tlsf, ...) on each allocator, with smokey's metrics:\n",
          f);
    fputs("\n"
          "  for each heap size H = 8k, 16k, ... below --seq-heap-size:\n"
          "  1. power-of-two phase: B = 16, 32, ... below H/2, each in four variants:\n"
          "     plain, +hot, +shuffle, +shuffle +hot. A test creates a heap of usable size\n"
          "     H, allocates B-byte blocks until an allocation fails (each call timed),\n"
          "     then frees them all in allocation order or shuffled (each call timed).\n"
          "     +hot repeats the whole alloc/free pass on the same heap and reports that\n"
          "     second pass. Kinds that promise zero overhead for a size must show none.\n"
          "  2. random phase: the same four variants, --random-alloc-rounds tests per H,\n"
          "     each with one block size uniform in [1, H/2).\n"
          "  3. pattern phase: --pattern-check-rounds tests on a --pattern-heap-size heap,\n"
          "     each drawing a largest size S uniform in [1, H/2) and filling the heap\n"
          "     with blocks of sizes uniform in [1, S], each written with its own pattern\n"
          "     over its whole usable size; freed in random order, every live block\n"
          "     verified after the fill and after each free. Functional only.\n"
          "  4. churn phase (not in smokey): interleaved alloc/free of mixed sizes at a\n"
          "     steady fill level, latency percentiles and fragmentation over time\n"
          "     (FRAG% = 100 * (1 - largest request that fits / free bytes), sampled;\n"
          "     failing allocations counted apart).\n",
          f);
    fputs("\n"
          "Per test: HEAPSZ, BLOCKSZ, NRBLKS, AVG-A, AVG-F, MAX-A, MAX-F, OVRH% = 100 -\n"
          "100 * NRBLKS * B / H, FRAG% = 100 * (1 - largest_free / freed) probed once when\n"
          "half the allocated bytes are freed (largest_free: the first of freed, freed -\n"
          "B, freed - 2B, ... that can be allocated; untimed), FLAGS. Tables sorted by max\n"
          "alloc time, max free time, overhead, fragmentation (--max-results rows each),\n"
          "then the overall lines, per phase and per allocator.\n",
          f);
    fputs("\n"
          "Functional failures fail the run (exit status 1, the message and a replay\n"
          "command printed): a heap whose usable size differs from H (or from the\n"
          "nearest size reported where H cannot be made), more blocks than\n"
          "H/B, fewer than the kind documents (rtm_heap_fill_count; overhead where the\n"
          "kind promises none), a block outside the heap or misaligned, a usable size\n"
          "below the request, pattern corruption, a refused free, a different block count\n"
          "in the hot pass, bytes still used or coalescing incomplete after freeing\n"
          "everything, a failed integrity check (rtm_heap_check), or, in the churn phase,\n"
          "largest_free_bytes not allocatable. An allocator stops at its first failure;\n"
          "the others go on.\n",
          f);
    fputs("\n"
          "Every allocator's heap sizing, and each of its phases, runs in a test process\n"
          "of its own (with the real-time setup), under a watchdog in the parent: an\n"
          "allocator that crashes, or makes no progress for --timeout seconds (killed\n"
          "with its process group), fails with the phase, test and signal named and a\n"
          "replay command; the rows it finished stay in the report and the JSON, and\n"
          "the other allocators go on. Each phase starts from the parent's state: a\n"
          "process allocator is warmed once per phase. Before its first test, a test\n"
          "process also takes and frees, twice, the scratch its sorts of samples need\n"
          "(glibc's qsort mallocs it): glibc, measured, then starts every phase with the\n"
          "mmap and trim thresholds a process that freed a large block has (glibc's\n"
          "dynamic thresholds; no mallopt) and a heap that has grown once, so its fills\n"
          "do not grow and trim the heap with brk inside timed calls. The JSON gives\n"
          "each pow2 and random phase's minor page faults (\"minor_faults\").\n",
          f);
    fputs("\n"
          "Where rtmem's harness is better than smokey's:\n"
          "  - nanosecond resolution by default (smokey: us, one decimal) and per-row p99\n"
          "    as well as max; the timer's overhead is measured and printed, and\n"
          "    --subtract-timer-overhead removes it;\n"
          "  - reproducible: --seed, always printed (smokey seeds from time and pid);\n"
          "    the CPU is chosen with --cpu (smokey hard-codes CPU 0); SCHED_FIFO,\n"
          "    mlockall and affinity are requested and what was granted is printed,\n"
          "    never silently dropped;\n"
          "  - the failing final allocation of a fill is reported apart (FAIL-A) instead\n"
          "    of being mixed into the alloc times; with +shuffle +hot the hot pass frees\n"
          "    in shuffled order too (smokey frees it in order);\n"
          "  - overhead can count the metadata outside H too (--true-overhead), so kinds\n"
          "    with out-of-band page maps compare honestly;\n"
          "  - the churn phase, which is what long-running real-time systems do;\n"
          "  - --json with every row and summary, progress on stderr, --quick.\n"
          "  --compat restores smokey's behaviour for comparisons: the failing allocation\n"
          "  counted in the alloc times (max and sum, divided by NRBLKS), the hot pass\n"
          "  freed in allocation order, block sizes drawn as random() % (H/2) with 0 made\n"
          "  1, integer-ns averages, one size per pattern test filled over its request\n"
          "  only, and the overhead/fragmentation tables sorted by bytes rather than %.\n"
          "  It does not change the timer (rtmem's TSC, not clock_gettime) or the seed.\n",
          f);
    fprintf(f,
            "\n"
            "Allocators, by default all of these, in this order:\n"
            "  - rtmem's kinds (bounded heaps). A kind gets the memory size M for which its\n"
            "    statistics report usable_bytes == H exactly (found by search, printed as\n"
            "    H + metadata); if no M gives H (H not a multiple of the kind's granule or\n"
            "    page) the nearest usable size above H is used and printed as INEXACT.\n"
            "    Every heap lives in one arena, mmap'd, prefaulted and locked once.\n"
            "  - glibc, and the peers jemalloc, mimalloc and tcmalloc when installed\n"
            "    (libjemalloc.so.2: malloc, free, malloc_usable_size; libmimalloc.so.2:\n"
            "    mi_malloc, mi_free, mi_usable_size; libtcmalloc_minimal.so.4: tc_malloc,\n"
            "    tc_free, tc_malloc_size). Peers are loaded with dlopen, never linked, and\n"
            "    glibc stays the allocator of everything else in the process. A peer that\n"
            "    does not load is skipped and the report says why. jemalloc needs more\n"
            "    static TLS than glibc reserves for dlopen: memcheck then re-executes itself\n"
            "    once with GLIBC_TUNABLES=glibc.rtld.optional_static_tls=%d added.\n"
            "    These are process allocators: they have no heap of size H, so H is a\n"
            "    budget, a fill makes exactly floor(H / B) requests and has no failing\n"
            "    allocation; OVRH%% is the slack their usable-size call shows (headers are\n"
            "    invisible), FRAG%% counts a probe only if its block lies inside the fill's\n"
            "    address span (new memory from the kernel says nothing about\n"
            "    fragmentation), and FAIL-A, TOVRH%%, used-bytes and integrity checks do not\n"
            "    apply (\"-\"), nor does the churn phase's FRAG%% (their free memory is\n"
            "    whatever the process heap already holds; the raw samples are in the JSON).\n"
            "    Their memory is not reset between tests; each gets one untimed 16-byte\n"
            "    alloc and free before the first, so that its one-time set-up is in none.\n"
            "  - plugins (--plugin): a user's allocator in a shared object exporting the\n"
            "    table of <rtmem/plugin.h> (its header is the manual). A plugin is a\n"
            "    bounded heap, so every metric and check above applies, sized exactly by\n"
            "    its stats; without stats it gets H bytes of memory (its metadata counts\n"
            "    as overhead) and the checks that need statistics are not done; without\n"
            "    check, no integrity walk. No plugin has a documented fill count.\n",
            TK_STATIC_TLS_BYTES);
    fputs("\n"
          "Smokey's arguments are options of the same names (seq_heap_size:\n"
          "--seq-heap-size).\n",
          f);
}

/* After the options: the names --kinds takes, units, limits, exit status. */
static void help_notes(FILE *f)
{
    char names[512], text[640];
    snprintf(text, sizeof(text), "--kinds names: %s, and the plugins' names.",
             tk_kinds_names(names, sizeof(names)));
    tk_opt_wrap(f, text, 0, 2);
    fputs("\n"
          "\n"
          "Byte counts take a K, M, G or T suffix (powers of 1024); heaps up to 32M.\n"
          "The run needs about 32 bytes of memory per byte of its largest heap (room for\n"
          "a fill of 1-byte blocks). Exit status: 0 every check passed, 1 a functional\n"
          "failure or run-time error (or no allocator left to run, or a report that\n"
          "cannot be written to standard output), 2 bad usage (a plugin that does not\n"
          "load or whose table is refused included).\n",
          f);
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
    .help_intro = help_intro,
    .help_notes = help_notes,
    .check = check,
    .setup = mc_setup,
    .run = mc_run,
    .report = mc_report,
    .facts = mc_facts,
    .json = mc_json,
    .teardown = mc_teardown,
};
