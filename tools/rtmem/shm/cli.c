/*
 * `rtmem shm`: its options table, --help, the combinations the table
 * cannot check, and shm_tool, what the bench kit's driver runs
 * (common/tool.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../cmd.h"
#include "common/opt.h"
#include "common/tool.h"
#include "java.h"
#include "shm.h"

#define DEFAULT_WRITES    100000000u
#define QUICK_WRITES      100000u
#define MAX_WRITES        ((uint64_t)1 << 40)
#define MAX_ZEROINGS      ((uint64_t)1 << 32)
#define DEFAULT_BUDGET_NS ((uint64_t)1500 * NS_PER_MS)
#define QUICK_BUDGET_NS   ((uint64_t)20 * NS_PER_MS)
#define MAX_BUDGET_NS     ((uint64_t)3600 * NS_PER_S)
#define MAX_DURATION_NS   ((uint64_t)SHM_MAX_TICKS * NS_PER_S)
#define DEFAULT_SEED      1u

static const struct shm_opts defaults = {
    .writes = DEFAULT_WRITES,
    .budget_ns = DEFAULT_BUDGET_NS,
    .dir = ".",
    .processes = 1,
    .cpu = -1,
    .priority = TK_RT_DEFAULT_PRIORITY,
    .seed = DEFAULT_SEED,
};

/* --mechanisms NAME[,NAME...] or all: added to those given so far. */
static int parse_mechs(const struct tk_args *cli, const char *value, void *field)
{
    unsigned *set = field;
    const char *p = value;
    do {
        size_t len = strcspn(p, ",");
        char item[32];
        if (len == 0 || len >= sizeof(item))
            return tk_args_bad(cli, "--mechanisms: '%.*s' is not a mechanism (see --help)",
                               (int)len, p);
        memcpy(item, p, len);
        item[len] = '\0';
        if (strcmp(item, "all") == 0) {
            *set |= (1u << SHM_MECHS) - 1;
        } else {
            int m = shm_mech_find(item);
            if (m < 0)
                return tk_args_bad(cli, "--mechanisms: '%s' is not a mechanism (see --help)", item);
            *set |= 1u << m;
        }
        p += len;
    } while (*p++ == ',');
    return 0;
}

/* --java-zero M[,M...]: the Java rows' fills, added to those given so far. */
static int parse_java_zero(const struct tk_args *cli, const char *value, void *field)
{
    unsigned *set = field;
    const char *p = value;
    do {
        size_t len = strcspn(p, ",");
        int m = 0;
        while (m < SHM_JAVA_ZERO_N && !(strlen(shm_java_zero_methods[m]) == len &&
                                        strncmp(p, shm_java_zero_methods[m], len) == 0))
            m++;
        if (m == SHM_JAVA_ZERO_N)
            return tk_args_bad(cli,
                               "--java-zero: '%.*s' is not longs, loop, bytes, direct or unsafe",
                               (int)len, p);
        *set |= 1u << m;
        p += len;
    } while (*p++ == ',');
    return 0;
}

#define F(field) TK_FIELD(struct shm_opts, field)

static const struct tk_opt options[] = {
    { "mechanisms", TK_OPT_CUSTOM, "LIST", "the mechanisms, by name (below), or all", F(mechs),
      .parse = parse_mechs },
    TK_OPT_KIT_SIZES(F(sizes), SHM_SIZE_GRAIN, SHM_MAX_BYTES),
    { "writes", TK_OPT_UINT, "N", "random one-byte writes per region (--quick %Q)", F(writes),
      .lo = 1, .hi = MAX_WRITES, .quick = QUICK_WRITES, .flags = TK_OPTF_QUICK },
    { "zeroings", TK_OPT_UINT, "K", "zeroings per region (default: what fits, at least 3)",
      F(zeroings), .lo = 1, .hi = MAX_ZEROINGS },
    { "budget", TK_OPT_TIME, "T", "time per region and phase (default %D; --quick %Q)",
      F(budget_ns), .lo = NS_PER_MS, .hi = MAX_BUDGET_NS, .quick = QUICK_BUDGET_NS,
      .flags = TK_OPTF_QUICK, .unit_ns = NS_PER_MS },
    { "dir", TK_OPT_FILE, "DIR", "the directory of file-disk's file (default: here)", F(dir) },
    { "processes", TK_OPT_UINT, "N", "2: a second process attaches and reads (default %D)",
      F(processes), .lo = 1, .hi = 2 },
    TK_OPT_KIT_DURATION(F(duration_ns), NS_PER_S, MAX_DURATION_NS, 0, 0),
    TK_OPT_KIT_CPU(F(cpu)),
    { "fifo", TK_OPT_FLAG, NULL, "run under SCHED_FIFO (default: SCHED_OTHER)", F(fifo) },
    TK_OPT_KIT_PRIO(F(priority)),
    { "generator", TK_OPT_CHOICE, "G", "the writes' indices: splitmix or rand (default %D)",
      F(generator), .choices = shm_generator_choices },
    TK_OPT_KIT_SEED(F(seed)),
    TK_OPT_KIT_FORCE(F(force)),
    { "java", TK_OPT_FLAG, NULL, "also the phases in a JVM (MappedByteBuffer)", F(java) },
    { "java-zero", TK_OPT_CUSTOM, "M[,M...]",
      "Java zeroing: longs (default), loop (docs/shm-java.md)", F(java_zero),
      .parse = parse_java_zero },
    TK_OPT_KIT_JSON(F(json_path)),
    TK_OPT_KIT_QUICK(F(quick)),
};

#undef F

/* After the options: the mechanisms' names, from their table. */
static void help_notes(FILE *f)
{
    char text[512];
    size_t len = (size_t)snprintf(text, sizeof(text), "--mechanisms names:");
    for (int m = 0; m < SHM_MECHS && len < sizeof(text); m++)
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s %s", m ? "," : "",
                                shm_mechs[m].name);
    fputc('\n', f);
    tk_opt_wrap(f, text, 0, 2);
}

static int check(struct tk_session *s)
{
    struct shm_opts *o = s->opts;
    size_t n = sizeof(options) / sizeof(options[0]);
    const struct tk_opt_parse *p = &s->parsed;
    if (!o->fifo && tk_opt_given(options, n, p, "prio"))
        return tk_args_bad(&s->cli, "--prio is the priority of --fifo: give --fifo too");
    if (o->generator == SHM_GEN_RAND)
        for (size_t i = 0; i < o->sizes.n; i++)
            if (o->sizes.bytes[i] > 2 * GIB)
                return tk_args_bad(&s->cli, "--generator rand draws 31 bits: sizes up to 2G");
    if (o->duration_ns && o->processes > 1)
        return tk_args_bad(&s->cli, "--duration writes on one region at a time: --processes "
                                    "2 applies to the phases only");
    if (o->java && o->duration_ns)
        return tk_args_bad(&s->cli, "--java runs the phases: not with --duration");
    if (o->java_zero && !o->java)
        return tk_args_bad(&s->cli, "--java-zero is the Java rows' fill: give --java too");
    if (o->java && o->generator == SHM_GEN_RAND)
        return tk_args_bad(&s->cli, "--java draws with splitmix64 only: not with --generator rand");
    return 0;
}

const struct tk_tool shm_tool = {
    .name = "shm",
    .summary = "shared-memory mechanisms: random writes, zeroing, faults, page sizes",
    .schema = SHM_SCHEMA,
    .bytes_example = "4096, 64K, 1G",
    .opts = options,
    .n_opts = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(struct shm_opts),
    .defaults = &defaults,
    .json_path_offset = offsetof(struct shm_opts, json_path),
    .help_notes = help_notes,
    .check = check,
    .setup = shm_setup,
    .run = shm_run,
    .report = shm_report,
    .facts = shm_facts,
    .json = shm_json,
    .teardown = shm_teardown,
};
