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

static const struct stride_opts defaults = {
    .reps = DEFAULT_REPS,
    .rounds = DEFAULT_ROUNDS,
    .rep_time_ns = DEFAULT_REP_TIME_NS,
    .rt = TK_RT_OPTS_DEFAULT,
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

#define F(field) TK_FIELD(struct stride_opts, field)

static const struct tk_opt options[] = {
    TK_OPT_KIT_SIZES(F(sizes), STRIDE_SIZE_GRAIN, STRIDE_MAX_BYTES),
    { "max-size", TK_OPT_BYTES, "B", "the default sizes up to B (default: 4x the LLC)", F(max_size),
      .lo = STRIDE_SIZE_GRAIN, .hi = STRIDE_MAX_BYTES },
    { "reps", TK_OPT_UINT, "N", "repetitions per point (default %D; --quick %Q)", F(reps), .lo = 1,
      .hi = MAX_REPS, .quick = QUICK_REPS, .flags = TK_OPTF_QUICK },
    { "rounds", TK_OPT_UINT, "N", "sweeps of the sizes (default %D; --quick %Q)", F(rounds),
      .lo = 1, .hi = MAX_ROUNDS, .quick = QUICK_ROUNDS, .flags = TK_OPTF_QUICK },
    { "rep-time", TK_OPT_TIME, "T", "a repetition's least time (default %D; bare number: us)",
      F(rep_time_ns), .lo = MIN_REP_TIME_NS, .hi = MAX_REP_TIME_NS, .unit_ns = NS_PER_US },
    TK_OPT_KIT_RT(struct stride_opts, rt),
    { "thp", TK_OPT_CHOICE, "MODE", "THP advice: on, off, or default (the system's)", F(thp),
      .choices = stride_thp_choices },
    TK_OPT_KIT_SEED(F(seed)),
    { "first-touch", TK_OPT_FLAG, NULL, "the published program: loop 1 on a fresh buffer, loop 2",
      F(first_touch) },
    TK_OPT_KIT_JSON(F(json_path)),
    TK_OPT_KIT_QUICK(F(quick)),
};

#undef F

/* What the table cannot check. 0, or -1 (reported). */
static int check(struct tk_session *s)
{
    struct stride_opts *o = s->opts;
    const struct tk_opt_parse *p = &s->parsed;
    size_t n = sizeof(options) / sizeof(options[0]);
    if (!o->first_touch && o->rounds > o->reps)
        return tk_args_bad(&s->cli,
                           "--rounds (%u) is more than --reps (%u): each round times a "
                           "repetition at least",
                           o->rounds, o->reps);
    if (o->first_touch &&
        (tk_opt_given(options, n, p, "rounds") || tk_opt_given(options, n, p, "rep-time") ||
         tk_opt_given(options, n, p, "thp")))
        return tk_args_bad(&s->cli, "--first-touch times whole loops on fresh buffers: "
                                    "--rounds, --rep-time and --thp are the sweep's");
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
    .check = check,
    .setup = stride_setup,
    .run = stride_run,
    .report = stride_report,
    .facts = stride_facts,
    .json = stride_json,
    .teardown = stride_teardown,
};
