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

const char *const shm_generator_choices[] = { "splitmix", "rand", NULL };

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

/* --sizes B[,B...]: multiples of 4K up to 4G, added in order, once. */
static int parse_sizes(const struct tk_args *cli, const char *value, void *field)
{
    struct shm_sizes *s = field;
    const char *p = value;
    do {
        size_t len = strcspn(p, ",");
        char item[32];
        if (len == 0 || len >= sizeof(item))
            return tk_args_bad(cli, "--sizes: '%.*s' is not a byte count (e.g. 64K, 1G)", (int)len,
                               p);
        memcpy(item, p, len);
        item[len] = '\0';
        uint64_t v;
        if (tk_args_bytes(cli, "--sizes", item, SHM_SIZE_GRAIN, SHM_MAX_BYTES, &v) != 0)
            return -1;
        if (v % SHM_SIZE_GRAIN != 0)
            return tk_args_bad(cli, "--sizes: '%s' is not a multiple of 4K", item);
        bool seen = false;
        for (size_t i = 0; i < s->n; i++)
            seen |= s->bytes[i] == v;
        if (!seen) {
            if (s->n == SHM_MAX_SIZES)
                return tk_args_bad(cli, "--sizes: at most %d sizes; '%s' is one more",
                                   SHM_MAX_SIZES, item);
            s->bytes[s->n++] = v;
        }
        p += len;
    } while (*p++ == ',');
    return 0;
}

#define F(field) TK_FIELD(struct shm_opts, field)

static const struct tk_opt options[] = {
    { "mechanisms", TK_OPT_CUSTOM, "LIST",
      "the mechanisms to measure, by name (above), comma-separated, or all (default: all; "
      "under --duration: file-disk,file-tmpfs)",
      F(mechs), .parse = parse_mechs },
    { "sizes", TK_OPT_CUSTOM, "B[,B...]",
      "region sizes, multiples of 4K up to 4G, in the order given (default 64K,1G; --quick "
      "64K,4M; under --duration: 1G)",
      F(sizes), .parse = parse_sizes },
    { "writes", TK_OPT_UINT, "N",
      "random one-byte writes per region; without this option, at most as many as fit in "
      "--budget (default %D; --quick %Q)",
      F(writes), .lo = 1, .hi = MAX_WRITES, .quick = QUICK_WRITES, .flags = TK_OPTF_QUICK },
    { "zeroings", TK_OPT_UINT, "K",
      "full zeroings (memset) per region (default: as many as fit in --budget, at least 3)",
      F(zeroings), .lo = 1, .hi = MAX_ZEROINGS },
    { "budget", TK_OPT_TIME, "T",
      "time per region for the writes and for the zeroings when --writes and --zeroings are "
      "not given (default %D; --quick %Q; a bare number is in ms)",
      F(budget_ns), .lo = NS_PER_MS, .hi = MAX_BUDGET_NS, .quick = QUICK_BUDGET_NS,
      .flags = TK_OPTF_QUICK, .unit_ns = NS_PER_MS },
    { "dir", TK_OPT_FILE, "DIR",
      "the directory of file-disk's file: a disk's, to see writeback (default: the current "
      "directory)",
      F(dir) },
    { "processes", TK_OPT_UINT, "N",
      "1, or 2: a second process attaches each shared region after the writes, touches "
      "every page (its own first-touch time and faults) and checks it reads what was "
      "written (default %D)",
      F(processes), .lo = 1, .hi = 2 },
    { "duration", TK_OPT_TIME, "T",
      "the long mode instead of the phases: write for T on each region, printing each "
      "second's writes and faults, and the system's Dirty and Writeback (a bare number is in "
      "s; at most an hour)",
      F(duration_ns), .lo = NS_PER_S, .hi = MAX_DURATION_NS, .unit_ns = NS_PER_S },
    { "cpu", TK_OPT_CPU, "N", "the CPU the run is pinned to (default: the last allowed)", F(cpu) },
    { "fifo", TK_OPT_FLAG, NULL,
      "run under SCHED_FIFO (default: SCHED_OTHER, as a program sharing memory usually "
      "runs, and so that the kernel's writeback threads on the same CPU are not starved)",
      F(fifo) },
    { "prio", TK_OPT_PRIO, "N", "the SCHED_FIFO priority of --fifo, 1..99 (default %D)",
      F(priority) },
    { "generator", TK_OPT_CHOICE, "G",
      "the writes' indices: splitmix (splitmix64, index ((z >> 32) * size) >> 32; the "
      "default) or rand (libc's rand() %% size, as the published comparison; sizes up to 2G)",
      F(generator), .choices = shm_generator_choices },
    { "seed", TK_OPT_UINT, "N", "the seed of the writes' generator (default %D)", F(seed), .lo = 0,
      .hi = UINT64_MAX },
    { "force", TK_OPT_FLAG, NULL,
      "allow a region above half of MemAvailable, or a file above half of the free space of "
      "its filesystem",
      F(force) },
    { "java", TK_OPT_FLAG, NULL,
      "also run the phases in a JVM through FileChannel.map's MappedByteBuffer, on a file "
      "in --dir (java:disk) and in /dev/shm (java:tmpfs), with the writes and zeroings the C "
      "rows did; compiled at run time from the source built into rtmem (needs a JDK 17 or "
      "later: javac and java; skipped with the reason without one; sizes up to 2G - 4K)",
      F(java) },
    { "json", TK_OPT_FILE, "FILE",
      "also write the results as JSON (schema " SHM_SCHEMA "): to a new file beside FILE, "
      "renamed over it only when the run completes; a failed or interrupted run leaves FILE as "
      "it was",
      F(json_path) },
    { "quick", TK_OPT_FLAG, NULL, "a short run for smoke tests (small sizes, few writes)", F(quick),
      .flags = TK_OPTF_QUICK_SWITCH },
};

#undef F

static void help_intro(FILE *f)
{
    fputs("usage: rtmem shm [options]\n"
          "\n"
          "Shared-memory mechanisms compared on the same workloads, each phase timed\n"
          "with the page faults the writing thread took:\n"
          "\n"
          "  touch     create the object, size it, map it, write one byte per page\n"
          "  writes    N random one-byte writes (splitmix64; the generator's own cost is\n"
          "            measured and subtracted)\n"
          "  zeroings  K memsets of the whole region\n"
          "  sync      msync(MS_SYNC) of the region (files only)\n"
          "  teardown  unmap, close, remove\n"
          "\n"
          "and the page sizes the kernel really used (/proc/self/smaps after the touch).\n"
          "Every region is an rtmem arena; a mechanism that cannot be had here (no huge\n"
          "pages reserved) is reported as skipped, with the reason and the command that\n"
          "would enable it.\n"
          "\n"
          "Mechanisms:\n",
          f);
    for (int m = 0; m < SHM_MECHS; m++)
        fprintf(f, "  %-13s %s\n", shm_mechs[m].name, shm_mechs[m].what);
    fputs("\n"
          "The default run (every mechanism, 64K and 1G, --budget 1.5s for the writes and\n"
          "for the zeroings of each region) lasts about a minute on a 2-CPU VM. Where\n"
          "the 10^8 writes of --writes take longer than the budget, they are cut there\n"
          "(the report marks them); give --writes to have them all.\n",
          f);
}

static void help_notes(FILE *f)
{
    fputs("Byte counts take K, M or G (binary). Times take a unit: ms, s.\n"
          "\n"
          "Files are created in --dir (file-disk) and /dev/shm (file-tmpfs), POSIX shm\n"
          "objects in /dev/shm, under names no one else holds (rtmem-shm-PID-RANDOM,\n"
          "created exclusively); SysV segments are IPC_PRIVATE and removed from the\n"
          "namespace at once. All are removed at the end of each region, and on Ctrl-C or\n"
          "SIGTERM; a second process, and the JVM of --java, is killed and reaped on\n"
          "every path (and dies with rtmem if rtmem is killed). With --java, the JVM's\n"
          "file is made in a directory rtmem-shm-java-RANDOM in --dir and in /dev/shm,\n"
          "and its class compiled in rtmem-java-RANDOM in $TMPDIR (or /tmp): removed\n"
          "likewise. Huge pages are never reserved by the tool.\n"
          "\n"
          "Exit status: 0 the run completed (skipped mechanisms included), 1 a check\n"
          "failed (a second process read other contents, or the JVM left them) or a\n"
          "run-time error, 2 bad usage.\n",
          f);
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
    .help_intro = help_intro,
    .help_notes = help_notes,
    .check = check,
    .setup = shm_setup,
    .run = shm_run,
    .report = shm_report,
    .facts = shm_facts,
    .json = shm_json,
    .teardown = shm_teardown,
};
