/*
 * `rtmem pressure`: its options table, --help, the checks of combinations,
 * and pressure_tool, what the bench kit's driver runs (common/tool.h).
 */
#include <stddef.h>
#include <stdio.h>

#include "../cmd.h"
#include "common/opt.h"
#include "common/tool.h"
#include "pressure.h"

#define NS_PER_S ((uint64_t)1000000000)

static const struct pr_opts defaults = {
    .spec = TK_PRESSURE_SPEC_DEFAULTS,
    .duration_ns = 10 * NS_PER_S,
};

static const char *const alloc_choices[] = { "malloc", "mmap", NULL };

static int parse_cpus(const struct tk_args *cli, const char *value, void *field)
{
    struct tk_pressure_spec *spec = field;
    if (tk_pressure_parse_cpus(cli, "--cpus", value, &spec->cpus) != 0)
        return -1;
    spec->cpus_given = true;
    return 0;
}

#define F(field) TK_FIELD(struct pr_opts, field)

static const struct tk_opt options[] = {
    { "vm", TK_OPT_UINT, "N", "memory workers, as stress --vm (default %D)", F(spec.vm), .lo = 0,
      .hi = TK_PRESSURE_MAX_WORKERS },
    { "bytes", TK_OPT_BYTES, "B", "each allocates B bytes (default %D)", F(spec.bytes), .lo = 1,
      .hi = TK_PRESSURE_MAX_BYTES },
    { "stride", TK_OPT_BYTES, "B", "writes, then reads back, a byte every B (default %D)",
      F(spec.stride), .lo = 1, .hi = TK_PRESSURE_MAX_BYTES },
    { "hang", TK_OPT_TIME, "T", "holds the memory T before the free (default: no hold)",
      F(spec.hang_ns), .lo = 0, .hi = 3600 * NS_PER_S, .unit_ns = NS_PER_S },
    { "keep", TK_OPT_FLAG, NULL, "allocates once, writes and reads the same bytes again",
      F(spec.keep) },
    { "alloc", TK_OPT_CHOICE, "HOW", "malloc or mmap (fresh pages every round; default %D)",
      F(spec.alloc), .choices = alloc_choices },
    { "spin", TK_OPT_UINT, "N", "CPU spinners, as stress --cpu (default %D)", F(spec.spin), .lo = 0,
      .hi = TK_PRESSURE_MAX_WORKERS },
    { "sync", TK_OPT_UINT, "N", "sync() callers, as stress --io (default %D)", F(spec.sync),
      .lo = 0, .hi = TK_PRESSURE_MAX_WORKERS },
    { "hdd", TK_OPT_UINT, "N", "disk writers, as stress --hdd (default %D)", F(spec.hdd), .lo = 0,
      .hi = TK_PRESSURE_MAX_WORKERS },
    { "hdd-bytes", TK_OPT_BYTES, "B", "each writes B bytes, then again (default %D)",
      F(spec.hdd_bytes), .lo = 1, .hi = TK_PRESSURE_MAX_BYTES },
    { "dir", TK_OPT_FILE, "DIR", "where the disk writers write (default: here)", F(spec.dir) },
    { "cpus", TK_OPT_CUSTOM, "LIST", "pin the workers to these CPUs, e.g. 0-2,5", F(spec),
      .parse = parse_cpus },
    TK_OPT_KIT_FORCE(F(force)),
    TK_OPT_KIT_DURATION(F(duration_ns), NS_PER_S / 10, 86400 * NS_PER_S, 2 * NS_PER_S,
                        TK_OPTF_QUICK),
    TK_OPT_KIT_JSON(F(json_path)),
    TK_OPT_KIT_QUICK(F(quick)),
};

#undef F

static int check(struct tk_session *s)
{
    struct pr_opts *o = s->opts;
    return tk_pressure_check(&s->cli, &o->spec, o->force, "--force");
}

const struct tk_tool pressure_tool = {
    .name = "pressure",
    .summary = "memory pressure (stress --vm) and other loads, bounded, always reaped",
    .schema = PR_SCHEMA,
    .bytes_example = "4096, 64K, 128M",
    .opts = options,
    .n_opts = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(struct pr_opts),
    .defaults = &defaults,
    .json_path_offset = offsetof(struct pr_opts, json_path),
    .check = check,
    .setup = pr_setup,
    .run = pr_run,
    .report = pr_report,
    .facts = pr_facts,
    .json = pr_json,
    .teardown = pr_teardown,
};
