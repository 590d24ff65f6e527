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

#define STR_(x) #x
#define STR(x)  STR_(x)

const char *const bw_method_ids[BW_N_METHODS] = {
    [BW_MEMCPY] = "memcpy",
    [BW_DUMB] = "dumb",
    [BW_MCBLOCK] = "mcblock",
    [BW_MCBLOCK_SAME] = "mcblock-same",
};

const char *const bw_prep_ids[BW_N_PREPS] = {
    [BW_PREP_NONE] = "none",
    [BW_PREP_PREFAULT] = "prefault",
    [BW_PREP_MLOCK] = "mlock",
    [BW_PREP_MEMSET] = "memset",
};

const char *const bw_cache_ids[BW_N_CACHES] = {
    [BW_CACHE_WARM] = "warm",
    [BW_CACHE_FLUSHED] = "flushed",
    [BW_CACHE_NT] = "nt",
};

const char *const bw_kind_ids[] = {
    [BW_KIND_ANON] = "anon",
    [BW_KIND_MEMFD] = "memfd",
    [BW_KIND_HUGETLB] = "hugetlb",
    [BW_KIND_DEVICE] = "device",
};

static const char *const only_choices[] = { "all", "methods", "prep", "cache", NULL };

static const struct bw_opts defaults = {
    .size = DEFAULT_SIZE,
    .block = DEFAULT_BLOCK,
    .reps = DEFAULT_REPS,
    .rep_time_ns = DEFAULT_REP_TIME_NS,
    .only = BW_ONLY_ALL,
    .cpu = -1,
    .priority = TK_RT_DEFAULT_PRIORITY,
};

static int grain_ok(const struct tk_args *cli, const char *opt, const char *text, uint64_t v)
{
    if (v % BW_GRAIN != 0)
        return tk_args_bad(cli, "%s: '%s' is not a multiple of %u bytes", opt, text, BW_GRAIN);
    return 0;
}

bool bw_size_insert(struct bw_sizes *s, uint64_t v)
{
    size_t i = 0;
    while (i < s->n && s->bytes[i] < v)
        i++;
    if (i < s->n && s->bytes[i] == v)
        return true;
    if (s->n == BW_MAX_SIZES)
        return false;
    memmove(&s->bytes[i + 1], &s->bytes[i], (s->n - i) * sizeof(s->bytes[0]));
    s->bytes[i] = v;
    s->n++;
    return true;
}

/* --sizes B[,B...]: added to the sizes given so far. 0, or -1 (reported). */
static int parse_sizes(const struct tk_args *cli, const char *value, void *field)
{
    struct bw_sizes *s = field;
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
        if (tk_args_bytes(cli, "--sizes", item, BW_GRAIN, BW_MAX_BYTES, &v) != 0 ||
            grain_ok(cli, "--sizes", item, v) != 0)
            return -1;
        if (!bw_size_insert(s, v))
            return tk_args_bad(cli, "--sizes: at most %d sizes; '%s' is one more", BW_MAX_SIZES,
                               item);
        p += len;
    } while (*p++ == ',');
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
    { "sizes", TK_OPT_CUSTOM, "B[,B...]",
      "the methods phase's sizes (multiples of 64 bytes, up to 16G; repeatable, up to " STR(
          BW_MAX_SIZES) ") instead of the default: doubling from 1K to the largest of 64M, 4 "
                        "times the last-level cache and twice glibc's non-temporal threshold, "
                        "with sizes just below and at each glibc threshold (--quick: 4K, 64K, "
                        "1M)",
      F(sizes), .parse = parse_sizes },
    { "size", TK_OPT_BYTES, "B",
      "the prep and cache phases' copy, a multiple of 64 bytes (default %D, the study's; "
      "--quick %Q)",
      F(size), .lo = BW_GRAIN, .hi = BW_MAX_BYTES, .quick = QUICK_SIZE, .flags = TK_OPTF_QUICK },
    { "block", TK_OPT_BYTES, "B",
      "mcblock's block, a multiple of 64 bytes (default %D, mbw's default)", F(block),
      .lo = BW_GRAIN, .hi = BW_GIB },
    { "reps", TK_OPT_UINT, "N",
      "timed repetitions per size and method, preparation or cache state: mbw's average, min "
      "and max, and the median and spread (p10 to p90) (default %D; --quick %Q)",
      F(reps), .lo = 1, .hi = MAX_REPS, .quick = QUICK_REPS, .flags = TK_OPTF_QUICK },
    { "rep-time", TK_OPT_TIME, "T",
      "a methods-phase repetition of a small size repeats the copy until it lasts T or more "
      "(sized from a trial); a copy longer than T is one repetition (default %D; a bare "
      "number is in us)",
      F(rep_time_ns), .lo = MIN_REP_TIME_NS, .hi = MAX_REP_TIME_NS, .unit_ns = US },
    { "only", TK_OPT_CHOICE, "PHASE", "run one phase: methods, prep or cache (default: all)",
      F(only), .choices = only_choices },
    { "src", TK_OPT_CUSTOM, "MEM",
      "what to copy from: anon (private anonymous memory, the default), memfd (shared memory "
      "in RAM), hugetlb (2 MiB huge pages from the pool), or PATH[:OFF], a device or kernel "
      "node at byte offset OFF (a byte count or 0x...; default 0), mapped read-only: e.g. "
      "memory reserved from the kernel through /dev/mem or a driver's node",
      F(src), .parse = parse_src },
    { "dst", TK_OPT_CUSTOM, "MEM",
      "what to copy to, as --src; a PATH is mapped shared: its memory there is OVERWRITTEN "
      "(with the source's bytes). Not a regular file (outside sysfs) nor a block device: "
      "their contents are not rtmem's to overwrite",
      F(dst), .parse = parse_dst },
    { "cpu", TK_OPT_CPU, "N", "the CPU the run is pinned to (default: the last allowed)", F(cpu) },
    { "prio", TK_OPT_PRIO, "N", "its SCHED_FIFO priority, 1..99 (default %D)", F(priority) },
    { "no-rt", TK_OPT_FLAG, NULL, "no SCHED_FIFO (the run stays pinned)", F(no_rt) },
    { "force", TK_OPT_FLAG, NULL,
      "allow source and destination beyond half of MemAvailable (the machine may swap or "
      "kill)",
      F(force) },
    { "no-group", TK_OPT_FLAG, NULL,
      "open the hardware counters one by one, not as one group (more of them may then count, "
      "each over slightly different instants)",
      F(no_group) },
    { "json", TK_OPT_FILE, "FILE",
      "also write the results as JSON (schema " BW_SCHEMA "): to a new file beside FILE, "
      "renamed over it only when the run completes; a failed or interrupted run leaves FILE as "
      "it was",
      F(json_path) },
    { "quick", TK_OPT_FLAG, NULL,
      "a short run for smoke tests (--reps, --size and the default sizes reduced)", F(quick),
      .flags = TK_OPTF_QUICK_SWITCH },
};

#undef F

static void help_intro(FILE *f)
{
    fputs("usage: rtmem bw [options]\n"
          "\n"
          "Copy bandwidth in MiB/s, and what a copy's time is made of. Three phases:\n"
          "\n"
          "methods  mbw's methods done right, at sizes around the caches and glibc's\n"
          "         memcpy thresholds (destination prefaulted, cache warm):\n"
          "           memcpy        one memcpy of the whole array;\n"
          "           dumb          an 8-byte element loop the compiler cannot turn\n"
          "                         into a memcpy call;\n"
          "           mcblock       memcpy in blocks of --block, through the array;\n"
          "           mcblock-same  the source's first block to each destination\n"
          "                         block in turn: what Debian's mbw runs as MCBLOCK.\n"
          "prep     a copy of --size into a fresh destination each repetition,\n"
          "         prepared four ways: none (its pages fault inside the copy),\n"
          "         prefault (MADV_POPULATE_WRITE, as MAP_POPULATE), mlock (VmLck\n"
          "         read back each time), memset; the preparation's time and page\n"
          "         faults apart from the copy's.\n"
          "cache    a memcpy of --size with the cache warm, after cleaning source and\n"
          "         destination from the caches (clflushopt/clflush on x86-64, dc civac\n"
          "         on arm64), and with non-temporal stores (x86-64).\n"
          "\n"
          "Each figure: mbw's average (all bytes over all time), min and max MiB/s,\n"
          "and the median with its spread (p10 to p90); page faults and, where the\n"
          "kernel offers them, hardware cache counters per copy. After the timed copies,\n"
          "one copy per method and state is checked (the destination, first filled with\n"
          "the source's complement, holds the source's bytes). Pinned to one CPU, under\n"
          "SCHED_FIFO unless --no-rt; never mlockall (it would lock every destination).\n",
          f);
}

static void help_notes(FILE *f)
{
    fputs("Byte counts take K, M or G (binary: 1K = 1024). Source and destination of the\n"
          "largest size must fit in half of MemAvailable unless --force. Times take a\n"
          "unit: ns, us, ms or s.\n"
          "\n"
          "Requires root (or CAP_SYS_NICE, CAP_IPC_LOCK) for SCHED_FIFO and mlock, and\n"
          "CAP_PERFMON or a low perf_event_paranoid for hardware counters; without them\n"
          "it says so and still measures. Virtual machines rarely have hardware\n"
          "counters: the report says so once.\n"
          "\n"
          "Ctrl-C (or any fatal signal) ends the run at once, with no report: an existing\n"
          "--json FILE is left as it was, and nothing is left behind.\n"
          "\n"
          "Exit status: 0 the run completed and every copy was right, 1 a copy was wrong\n"
          "or a run-time failure (a mapping refused, the report or --json not written),\n"
          "2 bad usage.\n",
          f);
}

/* What the table cannot check. 0, or -1 (reported). */
static int check(struct tk_session *s)
{
    struct bw_opts *o = s->opts;
    const struct tk_opt_parse *p = &s->parsed;
    size_t n = sizeof(options) / sizeof(options[0]);
    char text[32];
    if (o->no_rt && tk_opt_given(options, n, p, "prio"))
        return tk_args_bad(&s->cli, "--no-rt runs under SCHED_OTHER: --prio would not be used");
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
    .help_intro = help_intro,
    .help_notes = help_notes,
    .check = check,
    .setup = bw_setup,
    .run = bw_run,
    .report = bw_report,
    .facts = bw_facts,
    .json = bw_json,
    .teardown = bw_teardown,
};
