/*
 * `rtmem memcheck`: the heap test harness. Runs Xenomai smokey's memory test
 * sequence (memory_heapmem, memory_tlsf, ...) on every rtmem heap kind, on
 * glibc, on the peers that load (jemalloc, mimalloc, tcmalloc) and on a
 * user's plugins, with smokey's metrics, so its figures compare with
 * published ones, then a churn phase smokey does not have. Options and the
 * run's sequence live here; see memcheck.h for the other files.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "../cmd.h"
#include "common/args.h"
#include "common/kinds.h"
#include "common/result.h"
#include "common/run.h"
#include "memcheck.h"

/* Smokey's defaults (testsuite/smokey/memory-*). */
#define DEFAULT_SEQ_HEAP      ((size_t)2 << 20)
#define DEFAULT_RANDOM_ROUNDS 1024u
#define DEFAULT_PATTERN_HEAP  ((size_t)128 << 10)
#define DEFAULT_PATTERN_ROUNDS 128u
#define DEFAULT_MAX_RESULTS   4
/* rtmem's churn phase. */
#define DEFAULT_CHURN_OPS     1000000u
#define DEFAULT_CHURN_HEAP    ((size_t)1 << 20)
#define DEFAULT_CHURN_FILL    50u
#define DEFAULT_CHURN_MAX     4096u
#define DEFAULT_SEED          20240601u
/* --quick: the same sequence, smaller. */
#define QUICK_SEQ_HEAP        ((size_t)256 << 10)
#define QUICK_RANDOM_ROUNDS   64u
#define QUICK_PATTERN_ROUNDS  16u
#define QUICK_CHURN_OPS       100000u
#define CALIBRATION_MS        60u

#define EXIT_FAILED 1
#define EXIT_USAGE  2

#define ALL_PHASES ((1u << MC_PHASES) - 1)

/* One word of an option's description, wrapped at 80 columns under the
 * description column (28); returns the new column. */
static size_t help_word(FILE *f, size_t col, const char *word, const char *sep)
{
    size_t len = strlen(word) + strlen(sep);
    if (col + 1 + len > 80) {
        fprintf(f, "\n%28s%s%s", "", word, sep);
        return 28 + len;
    }
    fprintf(f, " %s%s", word, sep);
    return col + 1 + len;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: rtmem memcheck [options]\n"
        "\n"
        "The heap test harness. Runs the sequence of Xenomai's smokey memory tests\n"
        "(memory_heapmem, memory_tlsf, ...) on each allocator, with smokey's metrics:\n"
        "\n"
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
        "     (FRAG%% = 100 * (1 - largest request that fits / free bytes), sampled;\n"
        "     failing allocations counted apart).\n"
        "\n"
        "Per test: HEAPSZ, BLOCKSZ, NRBLKS, AVG-A, AVG-F, MAX-A, MAX-F, OVRH%% = 100 - 100 *\n"
        "NRBLKS * B / H, FRAG%% = 100 * (1 - largest_free / freed) probed once when half\n"
        "the allocated bytes are freed (largest_free: the first of freed, freed - B,\n"
        "freed - 2B, ... that can be allocated; untimed), FLAGS. Tables sorted by max\n"
        "alloc time, max free time, overhead, fragmentation (--max-results rows each),\n"
        "then the overall lines, per phase and per allocator.\n"
        "\n"
        "Functional failures fail the run (exit status 1, the message and a replay\n"
        "command printed): a heap whose usable size differs from H (or from the\n"
        "nearest size reported where H cannot be made), more blocks than\n"
        "H/B, fewer than the kind documents (rtm_heap_fill_count; overhead where the\n"
        "kind promises none), a block outside the heap or misaligned, a usable size\n"
        "below the request, pattern corruption, a refused free, a different block count\n"
        "in the hot pass, bytes still used or coalescing incomplete after freeing\n"
        "everything, a failed integrity check (rtm_heap_check), or, in the churn phase,\n"
        "largest_free_bytes not allocatable. An allocator stops at its first failure;\n"
        "the others go on.\n"
        "\n"
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
        "each pow2 and random phase's minor page faults (\"minor_faults\").\n"
        "\n"
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
        "  freed in allocation order, block sizes drawn as random() %% (H/2) with 0 made\n"
        "  1, integer-ns averages, one size per pattern test filled over its request\n"
        "  only, and the overhead/fragmentation tables sorted by bytes rather than %%.\n"
        "  It does not change the timer (rtmem's TSC, not clock_gettime) or the seed.\n"
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
        "    check, no integrity walk. No plugin has a documented fill count.\n"
        "\n"
        "options (smokey's argument names as long options):\n"
        "  --seq-heap-size B         heaps 8k, 16k, ... below B (default 2M; --quick 256K)\n"
        "  --random-alloc-rounds N   random-size tests per heap size and variant, from 1\n"
        "                            (default %u; --quick %u; --phases leaves one out)\n"
        "  --pattern-heap-size B     heap of the pattern phase (default 128K); its cost\n"
        "                            grows about with the square of this size\n"
        "  --pattern-check-rounds N  pattern tests, from 1 (default %u; --quick %u)\n"
        "  --max-results N           rows per sorted table (default %d); -1: every row,\n"
        "                            sorted by heap size (as smokey); 0: no table\n"
        "  --kinds a,b,...           allocators, in this order (default all):",
        TK_STATIC_TLS_BYTES, DEFAULT_RANDOM_ROUNDS, QUICK_RANDOM_ROUNDS, DEFAULT_PATTERN_ROUNDS,
        QUICK_PATTERN_ROUNDS, DEFAULT_MAX_RESULTS);
    size_t col = 80;
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        col = help_word(f, col, *k, ",");
    col = help_word(f, col, "glibc", ",");
    for (const char *const *k = tk_peer_names(); *k; k++)
        col = help_word(f, col, *k, ",");
    col = help_word(f, col, "plugins'", "");
    help_word(f, col, "names", "");
    fprintf(f,
        "\n"
        "  --plugin FILE.so          load a plugin (repeatable, up to %d); a name without\n"
        "                            '/' is looked for in the current directory first\n"
        "  --phases a,b,...          phases to run (default all): pow2, random, pattern, churn\n"
        "  --no-churn                skip the churn phase\n"
        "  --churn-ops N             steady-state operations (default %u; --quick %u)\n"
        "  --churn-heap-size B       heap of the churn phase (default 1M)\n"
        "  --churn-fill PCT          live requested bytes held, %% of the heap (default %u)\n"
        "  --churn-max-size B        largest request, from 16 B; each power-of-two octave\n"
        "                            equally likely (default %u)\n"
        "  --churn-sample-every N    ops between fragmentation samples (default ops/100)\n"
        "  --format ns|smokey        ns (default): rtmem's tables in nanoseconds; smokey:\n"
        "                            smokey's exact layout (us, one decimal), rtmem's own\n"
        "                            lines prefixed with '#'; with --compat for figures\n"
        "                            comparable to smokey's\n"
        "  --compat                  smokey's behaviour (see above)\n"
        "  --true-overhead           add TOVRH%% = 100 - 100 * NRBLKS * B / (H + metadata\n"
        "                            outside H, stats.overhead_bytes) to the tables\n"
        "  --subtract-timer-overhead take the timer's p50 overhead off every sample\n"
        "  --json FILE               also write every row and summary as JSON (schema\n"
        "                            %s), a few MB per allocator in a\n"
        "                            default run; to a new file beside FILE, renamed over\n"
        "                            it once every test has its verdict (a failed one\n"
        "                            included): a run that stops early or is\n"
        "                            interrupted leaves FILE as it was. A FIFO or device\n"
        "                            (/dev/stdout) is written directly\n"
        "  --no-json-rows            no per-test rows in the JSON (\"rows\": null; the\n"
        "                            overall lines, pattern and churn phases stay)\n"
        "  --seed N|random           seed of sizes and shuffles (default %u), always printed\n"
        "  --cpu N                   CPU to pin to (default: the last allowed CPU)\n"
        "  --prio N                  SCHED_FIFO priority, 1..99 (default %d)\n"
        "  --no-rt                   no pinning, no SCHED_FIFO (mlockall is still tried)\n"
        "  --timeout SECONDS         a test process that makes no progress for this long\n"
        "                            (progress: a test; in the pattern and churn phases\n"
        "                            also slices of one) is killed and its allocator\n"
        "                            fails (default %u; 0: never)\n"
        "  --progress                progress on stderr even when it is not a terminal\n"
        "  --quick                   the same sequence, smaller: a run of a few seconds\n"
        "  -h, --help                this text\n"
        "\n"
        "Byte counts take a K, M, G or T suffix (powers of 1024); heaps up to 32M.\n"
        "The run needs about 32 bytes of memory per byte of its largest heap (room for\n"
        "a fill of 1-byte blocks). Exit status: 0 every check passed, 1 a functional\n"
        "failure or run-time error (or no allocator left to run, or a report that\n"
        "cannot be written to standard output), 2 bad usage (a plugin that does not\n"
        "load or whose table is refused included).\n",
        MC_MAX_PLUGINS, DEFAULT_CHURN_OPS, QUICK_CHURN_OPS, DEFAULT_CHURN_FILL,
        DEFAULT_CHURN_MAX, MC_SCHEMA, DEFAULT_SEED, TK_RT_DEFAULT_PRIORITY,
        MC_DEFAULT_TIMEOUT_S);
}

/* Messages name the subcommand; byte-count examples fit its sizes. */
static const struct tk_args cli = {"rtmem memcheck", "4096, 64K, 2M"};

/* Each comma-separated item of list through fn; -1 on an empty item or
 * one fn refuses (reported). */
static int for_each_item(const char *opt, const char *list, int (*fn)(const char *, void *),
                         void *arg)
{
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        char item[64];
        if (len == 0 || len >= sizeof(item))
            return tk_args_bad(&cli, "%s: empty or overlong name in the list", opt);
        snprintf(item, sizeof(item), "%.*s", (int)len, p);
        if (fn(item, arg) != 0)
            return -1;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

static int add_phase(const char *name, void *arg)
{
    unsigned *phases = arg;
    for (int ph = 0; ph < MC_PHASES; ph++)
        if (strcmp(name, mc_phase_name((enum mc_phase)ph)) == 0) {
            *phases |= 1u << ph;
            return 0;
        }
    return tk_args_bad(&cli, "--phases: unknown phase '%s' (pow2, random, pattern, churn)",
                       name);
}

enum {
    OPT_SEQ_HEAP = 256, OPT_RANDOM_ROUNDS, OPT_PATTERN_HEAP, OPT_PATTERN_ROUNDS, OPT_MAX_RESULTS,
    OPT_KINDS, OPT_PHASES, OPT_NO_CHURN, OPT_CHURN_OPS, OPT_CHURN_HEAP, OPT_CHURN_FILL,
    OPT_CHURN_MAX, OPT_CHURN_EVERY, OPT_FORMAT, OPT_COMPAT, OPT_TRUE_OVERHEAD, OPT_SUBTRACT,
    OPT_JSON, OPT_SEED, OPT_CPU, OPT_PRIO, OPT_NO_RT, OPT_PROGRESS, OPT_QUICK, OPT_PLUGIN,
    OPT_NO_JSON_ROWS, OPT_TIMEOUT,
};

static const struct option long_opts[] = {
    {"seq-heap-size", required_argument, NULL, OPT_SEQ_HEAP},
    {"random-alloc-rounds", required_argument, NULL, OPT_RANDOM_ROUNDS},
    {"pattern-heap-size", required_argument, NULL, OPT_PATTERN_HEAP},
    {"pattern-check-rounds", required_argument, NULL, OPT_PATTERN_ROUNDS},
    {"max-results", required_argument, NULL, OPT_MAX_RESULTS},
    {"kinds", required_argument, NULL, OPT_KINDS},
    {"plugin", required_argument, NULL, OPT_PLUGIN},
    {"phases", required_argument, NULL, OPT_PHASES},
    {"no-churn", no_argument, NULL, OPT_NO_CHURN},
    {"churn-ops", required_argument, NULL, OPT_CHURN_OPS},
    {"churn-heap-size", required_argument, NULL, OPT_CHURN_HEAP},
    {"churn-fill", required_argument, NULL, OPT_CHURN_FILL},
    {"churn-max-size", required_argument, NULL, OPT_CHURN_MAX},
    {"churn-sample-every", required_argument, NULL, OPT_CHURN_EVERY},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"compat", no_argument, NULL, OPT_COMPAT},
    {"true-overhead", no_argument, NULL, OPT_TRUE_OVERHEAD},
    {"subtract-timer-overhead", no_argument, NULL, OPT_SUBTRACT},
    {"json", required_argument, NULL, OPT_JSON},
    {"no-json-rows", no_argument, NULL, OPT_NO_JSON_ROWS},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"seed", required_argument, NULL, OPT_SEED},
    {"cpu", required_argument, NULL, OPT_CPU},
    {"prio", required_argument, NULL, OPT_PRIO},
    {"no-rt", no_argument, NULL, OPT_NO_RT},
    {"progress", no_argument, NULL, OPT_PROGRESS},
    {"quick", no_argument, NULL, OPT_QUICK},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Which options were given, so --quick changes only the others. */
struct given {
    bool seq_heap, random_rounds, pattern_rounds, churn_ops, phases;
};

static int parse_max_results(const char *arg, int *out)
{
    if (arg && strcmp(arg, "-1") == 0) {
        *out = -1;
        return 0;
    }
    if (arg && arg[0] == '-')
        return tk_args_bad(&cli, "--max-results needs -1 (every row) or a whole number of "
                                 "rows, not '%s'", arg);
    uint64_t v;
    if (tk_args_u64(&cli, "--max-results", arg, 0, INT_MAX, &v) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_seed(const char *arg, uint64_t *out)
{
    if (arg && strcmp(arg, "random") == 0) {
        if (getrandom(out, sizeof(*out), 0) != (ssize_t)sizeof(*out)) {
            perror("rtmem memcheck: getrandom for --seed random");
            return -1;
        }
        return 0;
    }
    return tk_args_u64(&cli, "--seed", arg, 0, UINT64_MAX, out);
}

/* Options about sizes and counts. Returns 0, -1 (reported) or 1 (not one). */
static int apply_size_option(int c, const char *arg, struct mc_opts *o, struct given *g)
{
    uint64_t v = 0;
    int rc;
    switch (c) {
    case OPT_SEQ_HEAP:
        rc = tk_args_bytes(&cli, "--seq-heap-size", arg, MC_SEQ_MIN_HEAP + 1, MC_MAX_HEAP_BYTES,
                           &v);
        o->seq_heap_bytes = (size_t)v;
        g->seq_heap = true;
        return rc;
    case OPT_RANDOM_ROUNDS:
        rc = tk_args_u64(&cli, "--random-alloc-rounds", arg, 1, MC_MAX_ROUNDS, &v);
        o->random_rounds = (uint32_t)v;
        g->random_rounds = true;
        return rc;
    case OPT_PATTERN_HEAP:
        rc = tk_args_bytes(&cli, "--pattern-heap-size", arg, 4096, MC_MAX_HEAP_BYTES, &v);
        o->pattern_heap_bytes = (size_t)v;
        return rc;
    case OPT_PATTERN_ROUNDS:
        rc = tk_args_u64(&cli, "--pattern-check-rounds", arg, 1, MC_MAX_ROUNDS, &v);
        o->pattern_rounds = (uint32_t)v;
        g->pattern_rounds = true;
        return rc;
    case OPT_CHURN_OPS:
        rc = tk_args_u64(&cli, "--churn-ops", arg, 1, MC_MAX_CHURN_OPS, &v);
        o->churn_ops = v;
        g->churn_ops = true;
        return rc;
    case OPT_CHURN_HEAP:
        rc = tk_args_bytes(&cli, "--churn-heap-size", arg, 4096, MC_MAX_HEAP_BYTES, &v);
        o->churn_heap_bytes = (size_t)v;
        return rc;
    case OPT_CHURN_FILL:
        rc = tk_args_u64(&cli, "--churn-fill", arg, 1, 95, &v);
        o->churn_fill_pct = (unsigned)v;
        return rc;
    case OPT_CHURN_MAX:
        rc = tk_args_bytes(&cli, "--churn-max-size", arg, 16, (uint64_t)1 << 30, &v);
        o->churn_max_bytes = (size_t)v;
        return rc;
    case OPT_TIMEOUT:
        rc = tk_args_u64(&cli, "--timeout", arg, 0, MC_MAX_TIMEOUT_S, &v);
        o->timeout_s = (unsigned)v;
        return rc;
    case OPT_CHURN_EVERY:
        rc = tk_args_u64(&cli, "--churn-sample-every", arg, 1, MC_MAX_CHURN_OPS, &v);
        o->churn_sample_every = v;
        return rc;
    default:
        return 1;
    }
}

/* One option's value into o. Returns 0 or -1 (message printed). */
static int apply_option(int c, const char *arg, struct mc_opts *o, struct given *g)
{
    int rc = apply_size_option(c, arg, o, g);
    if (rc <= 0)
        return rc;
    switch (c) {
    case OPT_MAX_RESULTS: return parse_max_results(arg, &o->max_results);
    case OPT_KINDS: o->kinds_arg = arg; break;
    case OPT_PLUGIN:
        if (tk_args_file(&cli, "--plugin", arg, &arg) != 0)
            return -1;
        if (o->n_plugins == MC_MAX_PLUGINS) {
            char msg[96];
            snprintf(msg, sizeof(msg), "--plugin: at most %d plugins; '%%s' is one more",
                     MC_MAX_PLUGINS);
            return tk_args_bad(&cli, msg, arg);
        }
        o->plugin_paths[o->n_plugins++] = arg;
        break;
    case OPT_PHASES:
        g->phases = true;
        o->phases = 0;
        return for_each_item("--phases", arg, add_phase, &o->phases);
    case OPT_NO_CHURN: o->phases &= ~(1u << MC_PH_CHURN); break;
    case OPT_FORMAT:
        if (strcmp(arg, "ns") == 0)
            o->format = MC_FORMAT_NS;
        else if (strcmp(arg, "smokey") == 0)
            o->format = MC_FORMAT_SMOKEY;
        else
            return tk_args_bad(&cli, "--format: '%s' is neither ns nor smokey", arg);
        break;
    case OPT_COMPAT: o->compat = true; break;
    case OPT_TRUE_OVERHEAD: o->true_overhead = true; break;
    case OPT_SUBTRACT: o->subtract_overhead = true; break;
    case OPT_JSON: return tk_args_file(&cli, "--json", arg, &o->json_path);
    case OPT_SEED: return parse_seed(arg, &o->seed);
    case OPT_CPU: return tk_args_cpu(&cli, arg, &o->cpu);
    case OPT_PRIO: return tk_args_priority(&cli, arg, &o->priority);
    case OPT_NO_RT: o->no_rt = true; break;
    case OPT_PROGRESS: o->progress = true; break;
    case OPT_QUICK: o->quick = true; break;
    case OPT_NO_JSON_ROWS: o->no_json_rows = true; break;
    default: return -1;
    }
    return 0;
}

/* Combinations the single options cannot check. */
static int check_options(struct mc_opts *o, bool no_churn)
{
    if (no_churn)
        o->phases &= ~(1u << MC_PH_CHURN);
    if (o->phases == 0)
        return tk_args_bad(&cli, "no phase left to run%s", "");
    size_t target = o->churn_heap_bytes / 100 * o->churn_fill_pct;
    if (o->churn_max_bytes > target) {
        char msg[160];
        snprintf(msg, sizeof(msg), "--churn-max-size (%zu) is above the churn fill (%zu B = "
                 "%u%% of the churn heap)", o->churn_max_bytes, target, o->churn_fill_pct);
        return tk_args_bad(&cli, "%s", msg);
    }
    return 0;
}

/* Returns 0 to run, 1 if --help was shown, -1 for bad usage (reported). */
static int parse_options(int argc, char **argv, struct mc_opts *o)
{
    *o = (struct mc_opts){
        .seq_heap_bytes = DEFAULT_SEQ_HEAP, .random_rounds = DEFAULT_RANDOM_ROUNDS,
        .pattern_heap_bytes = DEFAULT_PATTERN_HEAP, .pattern_rounds = DEFAULT_PATTERN_ROUNDS,
        .max_results = DEFAULT_MAX_RESULTS, .churn_ops = DEFAULT_CHURN_OPS,
        .churn_heap_bytes = DEFAULT_CHURN_HEAP, .churn_fill_pct = DEFAULT_CHURN_FILL,
        .churn_max_bytes = DEFAULT_CHURN_MAX, .seed = DEFAULT_SEED, .cpu = -1,
        .priority = TK_RT_DEFAULT_PRIORITY, .phases = ALL_PHASES,
        .timeout_s = MC_DEFAULT_TIMEOUT_S,
    };
    struct given g = {0};
    bool no_churn = false;

    tk_args_begin();
    int c;
    while ((c = tk_args_next(&cli, argc, argv, long_opts)) > 0) {
        if (c == 'h') {
            usage(stdout);
            return 1;
        }
        no_churn = no_churn || c == OPT_NO_CHURN;
        if (apply_option(c, optarg, o, &g) != 0)
            return -1;
    }
    if (c < 0)
        return -1;
    if (o->quick) {
        if (!g.seq_heap)
            o->seq_heap_bytes = QUICK_SEQ_HEAP;
        if (!g.random_rounds)
            o->random_rounds = QUICK_RANDOM_ROUNDS;
        if (!g.pattern_rounds)
            o->pattern_rounds = QUICK_PATTERN_ROUNDS;
        if (!g.churn_ops)
            o->churn_ops = QUICK_CHURN_OPS;
    }
    return check_options(o, no_churn);
}

/* ---- allocators ----------------------------------------------------------------- */

/* memcheck runs, by default, every rtmem kind, glibc, the peers that load
 * and the plugins; --kinds chooses and orders them. */
static const struct tk_kinds_spec kinds_spec = {
    .by_default = TK_DEFAULT_KINDS | TK_DEFAULT_GLIBC | TK_DEFAULT_PEERS | TK_DEFAULT_PLUGINS,
    .listed_order = true,
};

/* The allocators the options select (common/kinds.h; peers first, as
 * loading one may execute the process again), into m->kinds. Returns 0, or
 * an exit status (reported). */
static int select_allocators(struct memcheck *m, int argc, char **argv)
{
    return tk_kinds_select(&m->kinds, &kinds_spec, &cli, m->o.kinds_arg, m->o.plugin_paths,
                           m->o.n_plugins, argc, argv);
}

/* The selected allocators become the targets, in shared memory. */
static void set_targets(struct memcheck *m)
{
    for (size_t i = 0; i < m->kinds.n; i++)
        m->t[i].a = m->kinds.list[i];
    m->n_t = m->kinds.n;
}

/* ---- storage ----------------------------------------------------------------------- */

static bool runs(const struct memcheck *m, enum mc_phase ph)
{
    return m->o.phases & (1u << ph);
}

static size_t largest_heap(const struct memcheck *m)
{
    size_t h = 0;
    if (runs(m, MC_PH_POW2) || runs(m, MC_PH_RANDOM))
        h = m->heap_sizes[m->n_heap_sizes - 1];
    if (runs(m, MC_PH_PATTERN) && m->o.pattern_heap_bytes > h)
        h = m->o.pattern_heap_bytes;
    if (runs(m, MC_PH_CHURN) && m->o.churn_heap_bytes > h)
        h = m->o.churn_heap_bytes;
    return h;
}

/* The heap sizes the run will create, into list (room for
 * MC_MAX_HEAP_SIZES + 2); returns how many. */
static size_t heap_list(const struct memcheck *m, size_t *list)
{
    size_t n = 0;
    if (runs(m, MC_PH_POW2) || runs(m, MC_PH_RANDOM))
        for (size_t i = 0; i < m->n_heap_sizes; i++)
            list[n++] = m->heap_sizes[i];
    if (runs(m, MC_PH_PATTERN))
        list[n++] = m->o.pattern_heap_bytes;
    if (runs(m, MC_PH_CHURN))
        list[n++] = m->o.churn_heap_bytes;
    return n;
}

/* Sizes every heap of every allocator (a heap's tests then only create),
 * each allocator in a test process of its own: one that fails to is failed
 * (reported with the others' results). Returns the largest usable size. */
static size_t size_heaps(struct memcheck *m)
{
    size_t list[MC_MAX_HEAP_SIZES + 2], n = heap_list(m, list), largest = 0;
    for (size_t i = 0; i < m->n_t; i++) {
        struct mc_target *t = &m->t[i];
        if (mc_child_size(m, t, list, n) != 0)
            continue;
        /* A process allocator's heap of H is a budget of H bytes
         * (tk_alloc_size), cached nowhere. */
        if (t->a.sort == TK_PROCESS)
            for (size_t k = 0; k < n; k++)
                if (list[k] > largest)
                    largest = list[k];
        for (size_t k = 0; k < t->a.n_cache; k++)
            if (t->a.cache[k].usable_bytes > largest)
                largest = t->a.cache[k].usable_bytes;
    }
    return largest;
}

/* Memory shared with the test processes: the targets, then their rows and
 * churn samples. The targets are needed before any is selected. */
static int allocate_shared(struct memcheck *m)
{
    m->sh = tk_shared_alloc(sizeof(*m->sh));
    if (!m->sh)
        return -ENOMEM;
    m->t = m->sh->t;
    return 0;
}

static size_t rows_bytes(const struct mc_seq *sq)
{
    return (sq->cap + 1) * sizeof(struct mc_row);
}

static size_t samples_bytes(const struct mc_churn *ch)
{
    return ch->cap_samples * sizeof(struct mc_frag_sample);
}

static int allocate_results(struct memcheck *m)
{
    uint64_t every = m->o.churn_sample_every ? m->o.churn_sample_every
                                             : (m->o.churn_ops >= 100 ? m->o.churn_ops / 100 : 1);
    for (size_t i = 0; i < m->n_t; i++) {
        struct mc_target *t = &m->t[i];
        for (int ph = MC_PH_POW2; ph <= MC_PH_RANDOM; ph++) {
            struct mc_seq *sq = &t->seq[ph];
            sq->cap = runs(m, (enum mc_phase)ph) ? mc_seq_tests(m, (enum mc_phase)ph) : 0;
            sq->rows = tk_shared_alloc(rows_bytes(sq));
            if (!sq->rows)
                return -ENOMEM;
        }
        t->churn.cap_samples = (size_t)(m->o.churn_ops / every) + 1;
        t->churn.samples = tk_shared_alloc(samples_bytes(&t->churn));
        if (!t->churn.samples)
            return -ENOMEM;
    }
    return 0;
}

static void free_shared(struct memcheck *m)
{
    if (!m->sh)
        return;
    for (size_t i = 0; i < m->n_t; i++) {
        struct mc_target *t = &m->t[i];
        for (int ph = MC_PH_POW2; ph <= MC_PH_RANDOM; ph++)
            tk_shared_free(t->seq[ph].rows, rows_bytes(&t->seq[ph]));
        tk_shared_free(t->churn.samples, samples_bytes(&t->churn));
    }
    tk_shared_free(m->sh, sizeof(*m->sh));
    m->sh = NULL;
    m->t = NULL;
}

/* ---- the run ------------------------------------------------------------------------ */

static void heap_sequence(struct memcheck *m)
{
    m->n_heap_sizes = 0;
    for (size_t h = MC_SEQ_MIN_HEAP; h < m->o.seq_heap_bytes && m->n_heap_sizes <
         MC_MAX_HEAP_SIZES; h <<= 1)
        m->heap_sizes[m->n_heap_sizes++] = h;
}

/* Every phase of one allocator, each in a test process of its own,
 * stopping at its first failure (a failed sizing included). */
static void run_target(struct memcheck *m, struct mc_target *t)
{
    if (time(&t->started) == (time_t)-1)
        t->started = 0;
    for (int ph = 0; ph < MC_PHASES && !t->fail.failed; ph++)
        if (runs(m, (enum mc_phase)ph))
            mc_child_phase(m, t, (enum mc_phase)ph);
    if (time(&t->finished) == (time_t)-1)
        t->finished = 0;
    /* At once on stderr too, where a long run's log shows it. */
    if (t->fail.failed)
        fprintf(stderr, "rtmem memcheck: FAILED: %s: %s\n", t->a.name, t->fail.msg);
}

/* Prints text with prefix at the start of every line. */
static void print_prefixed(FILE *f, const char *text, const char *prefix)
{
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        fprintf(f, "%s%.*s\n", prefix, (int)len, p);
        p += len + (p[len] == '\n');
    }
}

/* The header as is (ns format) or as '#' lines before smokey's layout. */
static void print_preamble(struct memcheck *m)
{
    if (m->o.format == MC_FORMAT_NS) {
        mc_print_header(stdout, m);
        return;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) {
        perror("rtmem memcheck: open_memstream");
        return;
    }
    mc_print_header(mem, m);
    if (fclose(mem) == 0 && text)
        print_prefixed(stdout, text, "# ");
    free(text);
}

static void print_end(const struct memcheck *m)
{
    const char *pre = m->o.format == MC_FORMAT_SMOKEY ? "# " : "";
    printf("\n%sseed %llu; %.1f s; throttle rests %u (real-time throttling avoided between "
           "tests); VmLck at the end of the last test process %ld kB\n",
           pre, (unsigned long long)m->o.seed, m->seconds, m->sh->rt.rests,
           m->sh->rt.vmlck_kb);
}

static void report(const struct memcheck *m)
{
    if (m->o.format == MC_FORMAT_NS) {
        mc_print_results(stdout, m);
        mc_print_failures(stdout, m);
    } else {
        mc_print_smokey(stdout, m);
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len);
        if (mem) {
            mc_print_failures(mem, m);
            if (fclose(mem) == 0 && text)
                print_prefixed(stdout, text, "# ");
            free(text);
        }
    }
    print_end(m);
}

/* The watchdog's priority: above the test processes', so that one spinning
 * at its real-time priority on the parent's CPU cannot starve it. */
static int watch_priority(const struct memcheck *m, bool fifo_granted)
{
    if (m->o.no_rt || !fifo_granted)
        return 0;
    int max = sched_get_priority_max(SCHED_FIFO);
    return m->o.priority < max ? m->o.priority + 1 : max;
}

/* Setup before any test: timer, results, the heaps' sizes (in test
 * processes). Returns 0 or an exit status (reported). */
static int prepare(struct memcheck *m)
{
    /* The timer is calibrated under the real-time setup the tests get;
     * then the parent, which only waits, gives it up. */
    const struct tk_run_opts ro = {cli.prog, m->o.no_rt, m->o.cpu, m->o.priority, CALIBRATION_MS};
    if (tk_run_setup(&ro, &m->rt, &m->timer, &m->mf) != 0)
        return EXIT_FAILED;
    m->watch_priority = watch_priority(m, m->rt.fifo.granted);
    tk_rt_undo(&m->rt);
    m->sub_ticks = m->o.subtract_overhead ? m->timer.overhead_p50_ticks : 0;
    heap_sequence(m);
    /* Room for any kind's metadata: twice the largest heap and a MiB. */
    m->arena_bytes = 2 * largest_heap(m) + ((size_t)1 << 20);
    if (allocate_results(m) != 0) {
        fprintf(stderr, "rtmem memcheck: out of memory for the run's results\n");
        return EXIT_FAILED;
    }
    m->progress.on = m->o.progress || isatty(STDERR_FILENO);
    /* A fill holds at most usable / 1 blocks (1-byte requests, and one
     * over for "more than H/B"); the churn keeps at most fill / 16 live. */
    m->blocks_cap = size_heaps(m) + 2;
    m->churn_cap = runs(m, MC_PH_CHURN) ? mc_churn_capacity(m) : 1;
    return 0;
}

/* The JSON into the result file and the file into place. Returns 0 or
 * EXIT_FAILED (reported). */
static int write_results(struct memcheck *m, struct tk_result *json)
{
    if (mc_write_json(json->f, m) == -EINVAL) {
        fprintf(stderr, "rtmem memcheck: internal error: unbalanced JSON for '%s'\n",
                m->o.json_path);
        return EXIT_FAILED;
    }
    /* A write error is the commit's to report, with its cause. */
    if (tk_result_commit(json, cli.prog) != 0)
        return EXIT_FAILED;
    printf("%sresults written to %s\n", m->o.format == MC_FORMAT_SMOKEY ? "# " : "",
           m->o.json_path);
    return 0;
}

static int memcheck_run(struct memcheck *m)
{
    struct tk_result json;
    bool have_json = m->o.json_path != NULL;
    if (have_json && tk_result_open(&json, cli.prog, m->o.json_path) != 0)
        return EXIT_USAGE;
    int status = prepare(m);
    if (status == 0) {
        print_preamble(m);
        /* A report that cannot be written is not worth measuring. */
        if (tk_stdout_check(cli.prog) != 0)
            status = EXIT_FAILED;
    }
    if (status == 0) {
        uint64_t t0 = tk_clock_ns();
        for (size_t i = 0; i < m->n_t; i++)
            if (!m->t[i].fail.failed)   /* else it could not size its heaps */
                run_target(m, &m->t[i]);
            else
                fprintf(stderr, "rtmem memcheck: FAILED: %s: %s\n", m->t[i].a.name,
                        m->t[i].fail.msg);
        m->seconds = (double)(tk_clock_ns() - t0) / 1e9;
        mc_compute_overall(m);
        m->sh->rt.rests = m->sh->rests;
        report(m);
        bool report_ok = tk_stdout_check(cli.prog) == 0;
        for (size_t i = 0; i < m->n_t; i++)
            if (m->t[i].fail.failed)
                status = EXIT_FAILED;
        /* A run whose tests all reached a verdict writes its results, a
         * failed verdict included: the failure is one. A run that could not
         * report leaves the file as it was. */
        if (!report_ok)
            status = EXIT_FAILED;
        else if (have_json && write_results(m, &json) != 0)
            status = EXIT_FAILED;
    }
    if (have_json)
        tk_result_abandon(&json);   /* nothing once committed */
    return status;
}

int rtm_cmd_memcheck(int argc, char **argv)
{
    struct memcheck *m = calloc(1, sizeof(*m));
    if (!m) {
        fprintf(stderr, "rtmem memcheck: out of memory\n");
        return EXIT_FAILED;
    }
    int rc = parse_options(argc, argv, &m->o);
    int status;
    if (rc > 0) {
        status = 0;
    } else if (rc < 0) {
        status = EXIT_USAGE;
    } else {
        status = select_allocators(m, argc, argv);
        if (status == 0 && allocate_shared(m) != 0) {
            fprintf(stderr, "rtmem memcheck: out of memory for the run's results\n");
            status = EXIT_FAILED;
        }
        if (status == 0)
            set_targets(m);
        if (status == 0)
            status = memcheck_run(m);
        free_shared(m);
    }
    free(m);
    return status;
}
