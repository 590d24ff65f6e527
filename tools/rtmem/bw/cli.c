/*
 * `rtmem bw`: its options table, --help, the combinations of options the
 * table cannot check, and bw_tool, what the bench kit's driver runs
 * (common/tool.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cmd.h"
#include "bw.h"
#include "common/opt.h"
#include "common/tool.h"

#define DEFAULT_REPS        11u
#define QUICK_REPS          3u
#define MAX_REPS            1000u
#define DEFAULT_SIZE        (32 * BW_MIB) /* the study's copy */
#define QUICK_SIZE          BW_MIB
#define DEFAULT_BLOCK       (256 * BW_KIB) /* mbw's default block (-b 262144) */
#define DEFAULT_REP_TIME_NS ((uint64_t)200 * 1000)
#define MIN_REP_TIME_NS     ((uint64_t)10 * 1000)
#define MAX_REP_TIME_NS     ((uint64_t)1000 * 1000 * 1000)
#define US                  1000u

static const char *const only_choices[] = { "all", "methods", "prep", "cache", NULL };

static const struct bw_opts defaults = {
    .size = DEFAULT_SIZE,
    .block = DEFAULT_BLOCK,
    .reps = DEFAULT_REPS,
    .rep_time_ns = DEFAULT_REP_TIME_NS,
    .only = BW_ONLY_ALL,
    .rt = TK_RT_OPTS_DEFAULT,
};

static int grain_ok(const struct tk_args *cli, const char *opt, const char *text, uint64_t v)
{
    if (v % BW_GRAIN != 0)
        return tk_args_bad(cli, "%s: '%s' is not a multiple of %u bytes", opt, text, BW_GRAIN);
    return 0;
}

/* PATH[:OFFSET] into a place: the offset is what follows the last ':' when
 * it is a byte count, else the whole value is the path. */
static int parse_place(const struct tk_args *cli, const char *opt, const char *value,
                       struct bw_place *pl)
{
    if (!value[0])
        return tk_args_bad(cli, "%s needs a path, e.g. /dev/mem:0x80000000 or /dev/uio0", opt);
    pl->path = NULL;
    pl->offset = 0;
    for (int k = BW_KIND_ANON; k < BW_KIND_DEVICE; k++)
        if (strcmp(value, bw_kind_ids[k]) == 0) {
            pl->kind = k;
            return 0;
        }
    if (value[0] != '/')
        return tk_args_bad(cli, "%s: '%s' is neither anon, memfd, hugetlb nor a path (from /)", opt,
                           value);
    pl->kind = BW_KIND_DEVICE;
    pl->path = value;
    const char *colon = strrchr(value, ':');
    /* A suffix with a '/' is part of the path (PCI addresses such as
     * /sys/bus/pci/devices/0000:00:02.0/resource0 hold ':'). */
    if (!colon || colon[1] < '0' || colon[1] > '9' || strchr(colon, '/'))
        return 0;
    /* A hexadecimal offset, as device tree and /proc/iomem write them. */
    char *end;
    unsigned long long v;
    if (colon[1] == '0' && (colon[2] == 'x' || colon[2] == 'X')) {
        if (!isxdigit((unsigned char)colon[3]))
            return tk_args_bad(cli, "%s: '%s' is not an offset (a byte count or 0x...)", opt,
                               colon + 1);
        errno = 0;
        v = strtoull(colon + 3, &end, 16);
        if (errno == ERANGE || v > UINT64_MAX / 2)
            return tk_args_bad(cli, "%s: offset '%s' is too large", opt, colon + 1);
    } else {
        uint64_t b;
        if (tk_args_bytes(cli, opt, colon + 1, 0, UINT64_MAX / 2, &b) != 0)
            return -1;
        v = b;
        end = (char *)colon + strlen(colon);
    }
    if (*end != '\0')
        return tk_args_bad(cli, "%s: '%s' is not an offset (a byte count or 0x...)", opt,
                           colon + 1);
    static char paths[2][4096];
    char *path = paths[strcmp(opt, "--src") == 0 ? 0 : 1];
    size_t len = (size_t)(colon - value);
    if (len == 0 || len >= sizeof(paths[0]))
        return tk_args_bad(cli, "%s: '%s' has no path before the offset", opt, value);
    memcpy(path, value, len);
    path[len] = '\0';
    pl->path = path;
    pl->offset = v;
    return 0;
}

static int parse_src(const struct tk_args *cli, const char *value, void *field)
{
    return parse_place(cli, "--src", value, field);
}

static int parse_dst(const struct tk_args *cli, const char *value, void *field)
{
    return parse_place(cli, "--dst", value, field);
}

#define F(field) TK_FIELD(struct bw_opts, field)

static const struct tk_opt options[] = {
    TK_OPT_KIT_SIZES(F(sizes), BW_GRAIN, BW_MAX_BYTES),
    { "size", TK_OPT_BYTES, "B", "the prep and cache phases' copy (default %D; --quick %Q)",
      F(size), .lo = BW_GRAIN, .hi = BW_MAX_BYTES, .quick = QUICK_SIZE, .flags = TK_OPTF_QUICK },
    { "block", TK_OPT_BYTES, "B", "mcblock's block (default %D)", F(block), .lo = BW_GRAIN,
      .hi = BW_GIB },
    { "reps", TK_OPT_UINT, "N", "repetitions per point (default %D; --quick %Q)", F(reps), .lo = 1,
      .hi = MAX_REPS, .quick = QUICK_REPS, .flags = TK_OPTF_QUICK },
    { "rep-time", TK_OPT_TIME, "T", "a repetition's least time (default %D; bare number: us)",
      F(rep_time_ns), .lo = MIN_REP_TIME_NS, .hi = MAX_REP_TIME_NS, .unit_ns = US },
    { "only", TK_OPT_CHOICE, "PHASE", "one phase: methods, prep or cache (default %D)", F(only),
      .choices = only_choices },
    { "src", TK_OPT_CUSTOM, "MEM", "copy from: anon, memfd, hugetlb or PATH[:OFF]", F(src),
      .parse = parse_src },
    { "dst", TK_OPT_CUSTOM, "MEM", "copy to, as --src (a PATH is OVERWRITTEN)", F(dst),
      .parse = parse_dst },
    TK_OPT_KIT_RT(struct bw_opts, rt),
    TK_OPT_KIT_FORCE(F(force)),
    { "no-group", TK_OPT_FLAG, NULL, "open the hardware counters one by one", F(no_group) },
    TK_OPT_KIT_JSON(F(json_path)),
    TK_OPT_KIT_QUICK(F(quick)),
};

#undef F

/* What the table cannot check. 0, or -1 (reported). */
static int check(struct tk_session *s)
{
    struct bw_opts *o = s->opts;
    const struct tk_opt_parse *p = &s->parsed;
    size_t n = sizeof(options) / sizeof(options[0]);
    char text[32];
    tk_opt_fmt_bytes(text, sizeof(text), o->size);
    if (grain_ok(&s->cli, "--size", text, o->size) != 0)
        return -1;
    tk_opt_fmt_bytes(text, sizeof(text), o->block);
    if (grain_ok(&s->cli, "--block", text, o->block) != 0)
        return -1;
    if (o->only != BW_ONLY_ALL && o->only != BW_ONLY_METHODS &&
        (tk_opt_given(options, n, p, "sizes") || tk_opt_given(options, n, p, "block")))
        return tk_args_bad(&s->cli,
                           "--sizes and --block are the methods phase's: --only %s "
                           "does not run it",
                           only_choices[o->only]);
    if (o->only == BW_ONLY_METHODS && tk_opt_given(options, n, p, "size"))
        return tk_args_bad(&s->cli, "--size is the prep and cache phases': --only methods "
                                    "does not run them");
    return 0;
}

const struct tk_tool bw_tool = {
    .name = "bw",
    .summary = "copy bandwidth: memcpy, element loop, blocks; prefault, mlock, cache",
    .schema = BW_SCHEMA,
    .bytes_example = "4096, 64K, 32M",
    .opts = options,
    .n_opts = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(struct bw_opts),
    .defaults = &defaults,
    .json_path_offset = offsetof(struct bw_opts, json_path),
    .check = check,
    .setup = bw_setup,
    .run = bw_run,
    .report = bw_report,
    .facts = bw_facts,
    .json = bw_json,
    .teardown = bw_teardown,
};
