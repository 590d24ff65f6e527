/*
 * `rtmem stride`: its options table, --help, the combinations of options
 * the table cannot check, and stride_tool, what the bench kit's driver
 * runs (common/tool.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../cmd.h"
#include "common/opt.h"
#include "common/tool.h"
#include "stride.h"

#define DEFAULT_REPS        11u
#define QUICK_REPS          3u
#define MAX_REPS            1000u
#define DEFAULT_ROUNDS      3u
#define QUICK_ROUNDS        1u
#define MAX_ROUNDS          100u
#define DEFAULT_REP_TIME_NS ((uint64_t)NS_PER_MS)
#define MIN_REP_TIME_NS     ((uint64_t)100 * NS_PER_US)
#define MAX_REP_TIME_NS     ((uint64_t)1000 * NS_PER_MS)
#define DEFAULT_SEED        1u

/* A number in a help line, spelled where the help is a literal. */
#define STR_(x) #x
#define STR(x)  STR_(x)

const char *const stride_pattern_names[N_PATTERNS] = {
    [PAT_STRIDE_1] = "stride 1 int (4 B)",
    [PAT_STRIDE_16] = "stride 16 ints (64 B)",
    [PAT_CHASE] = "random chase",
};

const char *const stride_pattern_ids[N_PATTERNS] = {
    [PAT_STRIDE_1] = "stride_1",
    [PAT_STRIDE_16] = "stride_16",
    [PAT_CHASE] = "chase",
};

const char *const stride_thp_choices[] = { "default", "on", "off", NULL };

static const struct stride_opts defaults = {
    .reps = DEFAULT_REPS,
    .rounds = DEFAULT_ROUNDS,
    .rep_time_ns = DEFAULT_REP_TIME_NS,
    .cpu = -1,
    .priority = TK_RT_DEFAULT_PRIORITY,
    .thp = THP_DEFAULT,
    .seed = DEFAULT_SEED,
};

/* A byte count of --sizes or --max-size that every pattern can walk: 0,
 * or -1 (reported). */
static int size_ok(const struct tk_args *cli, const char *opt, const char *text, uint64_t v)
{
    if (v % STRIDE_SIZE_GRAIN != 0)
        return tk_args_bad(cli, "%s: '%s' is not a multiple of 1K (1024 bytes)", opt, text);
    return 0;
}

/* Inserts v into s, ascending, once. Returns false if s is full. */
static bool size_insert(struct stride_sizes *s, uint64_t v)
{
    size_t i = 0;
    while (i < s->n && s->bytes[i] < v)
        i++;
    if (i < s->n && s->bytes[i] == v)
        return true;
    if (s->n == STRIDE_MAX_SIZES)
        return false;
    memmove(&s->bytes[i + 1], &s->bytes[i], (s->n - i) * sizeof(s->bytes[0]));
    s->bytes[i] = v;
    s->n++;
    return true;
}

/* --sizes B[,B...]: added to the sizes given so far. 0, or -1 (reported). */
static int parse_sizes(const struct tk_args *cli, const char *value, void *field)
{
    struct stride_sizes *s = field;
    const char *p = value;
    do {
        size_t len = strcspn(p, ",");
        char item[32];
        if (len == 0 || len >= sizeof(item))
            return tk_args_bad(cli, "--sizes: '%.*s' is not a byte count (e.g. 4K, 1M)", (int)len,
                               p);
        memcpy(item, p, len);
        item[len] = '\0';
        uint64_t v;
        if (tk_args_bytes(cli, "--sizes", item, STRIDE_SIZE_GRAIN, STRIDE_MAX_BYTES, &v) != 0 ||
            size_ok(cli, "--sizes", item, v) != 0)
            return -1;
        if (!size_insert(s, v))
            return tk_args_bad(cli, "--sizes: at most %d sizes; '%s' is one more", STRIDE_MAX_SIZES,
                               item);
        p += len;
    } while (*p++ == ',');
    return 0;
}

#define F(field) TK_FIELD(struct stride_opts, field)

static const struct tk_opt options[] = {
    { "sizes", TK_OPT_CUSTOM, "B[,B...]",
      "measure these buffer sizes (multiples of 1K, up to 4G; repeatable, up to " STR(
          STRIDE_MAX_SIZES) ") instead of the default sizes",
      F(sizes), .parse = parse_sizes },
    { "max-size", TK_OPT_BYTES, "B",
      "the default sizes, doubling from 4K (or half the L1d if smaller) up to B, B included "
      "(default: 4 times the last-level cache; 256M if no cache is known)",
      F(max_size), .lo = STRIDE_SIZE_GRAIN, .hi = STRIDE_MAX_BYTES },
    { "reps", TK_OPT_UINT, "N",
      "timed repetitions per size and pattern: the report gives their median and spread (p10 "
      "to p90), the JSON their min and max too (default %D; --quick %Q)",
      F(reps), .lo = 1, .hi = MAX_REPS, .quick = QUICK_REPS, .flags = TK_OPTF_QUICK },
    { "rounds", TK_OPT_UINT, "N",
      "sweep the sizes N times, each point's repetitions shared among the sweeps, so that a "
      "slowdown of the machine touches only some of them (default %D; --quick %Q)",
      F(rounds), .lo = 1, .hi = MAX_ROUNDS, .quick = QUICK_ROUNDS, .flags = TK_OPTF_QUICK },
    { "rep-time", TK_OPT_TIME, "T",
      "how long a repetition lasts at least, sized from trials: whole passes over the size, or "
      "a slice of the walk when one pass is longer; the shortest measured is reported (default "
      "%D; a bare number is in us)",
      F(rep_time_ns), .lo = MIN_REP_TIME_NS, .hi = MAX_REP_TIME_NS, .unit_ns = NS_PER_US },
    { "cpu", TK_OPT_CPU, "N",
      "the CPU the run is pinned to, and whose caches it reads (default: the last allowed)",
      F(cpu) },
    { "prio", TK_OPT_PRIO, "N", "its SCHED_FIFO priority, 1..99 (default %D)", F(priority) },
    { "no-rt", TK_OPT_FLAG, NULL,
      "no SCHED_FIFO (the run stays pinned: the caches measured are one CPU's; mlockall is "
      "still tried)",
      F(no_rt) },
    { "thp", TK_OPT_CHOICE, "MODE",
      "transparent huge pages for the buffer: default (as the system is set; the default), on "
      "(MADV_HUGEPAGE: the chase beyond the TLB's reach then walks fewer page tables), off "
      "(MADV_NOHUGEPAGE)",
      F(thp), .choices = stride_thp_choices },
    { "seed", TK_OPT_UINT, "N", "the seed of the chase's random order (default %D)", F(seed),
      .lo = 0, .hi = UINT64_MAX },
    { "json", TK_OPT_FILE, "FILE",
      "also write the results as JSON (schema " STRIDE_SCHEMA "): to a new file beside FILE, "
      "renamed over it only when the run completes; a failed or interrupted run leaves FILE as "
      "it was. A FIFO or device (/dev/stdout, /dev/null) is written directly",
      F(json_path) },
    { "quick", TK_OPT_FLAG, NULL, "a short run for smoke tests (--reps and --rounds reduced)",
      F(quick), .flags = TK_OPTF_QUICK_SWITCH },
};

#undef F

static void help_intro(FILE *f)
{
    fputs("usage: rtmem stride [options]\n"
          "\n"
          "The cost of touching memory with a stride, per access, from a buffer that fits\n"
          "the L1 data cache to one several times the last-level cache: where each\n"
          "access starts to miss a cache. For each buffer size, three patterns:\n"
          "\n"
          "  stride 1 int (4 B)     read-modify-write of every int, in order;\n"
          "  stride 16 ints (64 B)  the same, one int every 64 bytes;\n"
          "  random chase           one load per cache line, each loading the address\n"
          "                         of the next line in a random cyclic order: dependent\n"
          "                         loads no prefetcher can predict, each costing the\n"
          "                         load-to-use latency of the level it hits.\n"
          "\n"
          "The ints are volatile: one load and one store per access, never vectorised or\n"
          "dropped. Each walk wraps at the end of the size and goes on where it stopped.\n"
          "A size and pattern is a warm-up, then repetitions, each timed as a whole and\n"
          "sized to last at least --rep-time; the sizes are swept --rounds times, the\n"
          "--reps repetitions of each shared among the sweeps. The report gives ns per\n"
          "access, the median over the repetitions with their spread, and the ratio of\n"
          "stride 16 to stride 1. Then, for each pattern, the sizes at which its cost\n"
          "jumps, computed from the figures and set against the caches' sizes.\n"
          "\n"
          "The caches are those sysfs lists for the measured CPU\n"
          "(/sys/devices/system/cpu/cpuN/cache); where they are missing the report says\n"
          "unknown and assumes 64-byte lines. The buffer is one mapping of the largest\n"
          "size, prefaulted and locked (if permitted) before any timing. The run is\n"
          "pinned to one CPU, under SCHED_FIFO unless --no-rt, resting between\n"
          "repetitions so that RT throttling never stops a timed one.\n",
          f);
}

static void help_notes(FILE *f)
{
    fputs("Byte counts take K, M or G (binary: 1K = 1024). The largest size, and the\n"
          "chase's order (4 bytes per line), must fit in half of MemAvailable. Times take\n"
          "a unit: ns, us, ms or s. No cycle counts are reported: the timer counts time,\n"
          "and a core's clock rate is not known to it.\n"
          "\n"
          "Requires root (or CAP_SYS_NICE and CAP_IPC_LOCK) for SCHED_FIFO and locked\n"
          "memory; without them it says so and still measures.\n"
          "\n"
          "Ctrl-C (or any fatal signal) ends the run at once, with no report: an existing\n"
          "--json FILE is left as it was, and nothing is left behind.\n"
          "\n"
          "Exit status: 0 the run completed, 1 a run-time failure (the buffer could not be\n"
          "mapped, the report or --json could not be written), 2 bad usage.\n",
          f);
}

/* What the table cannot check. 0, or -1 (reported). */
static int check(struct tk_session *s)
{
    struct stride_opts *o = s->opts;
    const struct tk_opt_parse *p = &s->parsed;
    size_t n = sizeof(options) / sizeof(options[0]);
    if (o->no_rt && tk_opt_given(options, n, p, "prio"))
        return tk_args_bad(&s->cli, "--no-rt runs under SCHED_OTHER: --prio would not be used");
    if (o->rounds > o->reps)
        return tk_args_bad(&s->cli,
                           "--rounds (%u) is more than --reps (%u): each round times a "
                           "repetition at least",
                           o->rounds, o->reps);
    if (tk_opt_given(options, n, p, "sizes") && tk_opt_given(options, n, p, "max-size"))
        return tk_args_bad(&s->cli, "--max-size bounds the default sizes; --sizes names them: "
                                    "give one or the other");
    if (tk_opt_given(options, n, p, "max-size")) {
        char text[32];
        tk_opt_fmt_bytes(text, sizeof(text), o->max_size);
        if (size_ok(&s->cli, "--max-size", text, o->max_size) != 0)
            return -1;
    }
    return 0;
}

const struct tk_tool stride_tool = {
    .name = "stride",
    .summary = "the cost per access of strided and random walks, L1 to beyond the LLC",
    .schema = STRIDE_SCHEMA,
    .bytes_example = "4096, 64K, 64M",
    .opts = options,
    .n_opts = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(struct stride_opts),
    .defaults = &defaults,
    .json_path_offset = offsetof(struct stride_opts, json_path),
    .help_intro = help_intro,
    .help_notes = help_notes,
    .check = check,
    .setup = stride_setup,
    .run = stride_run,
    .report = stride_report,
    .facts = stride_facts,
    .json = stride_json,
    .teardown = stride_teardown,
};
