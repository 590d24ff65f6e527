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
    { "vm", TK_OPT_UINT, "N", "memory workers (default %D; stress --vm)", F(spec.vm), .lo = 0,
      .hi = TK_PRESSURE_MAX_WORKERS },
    { "bytes", TK_OPT_BYTES, "B", "each allocates B bytes (default %D; stress --vm-bytes)",
      F(spec.bytes), .lo = 1, .hi = TK_PRESSURE_MAX_BYTES },
    { "stride", TK_OPT_BYTES, "B",
      "and writes one byte every B bytes of it (default %D; stress --vm-stride)", F(spec.stride),
      .lo = 1, .hi = TK_PRESSURE_MAX_BYTES },
    { "hang", TK_OPT_TIME, "T",
      "holds the memory T before freeing it (default: no hold; a bare number is in seconds; "
      "stress --vm-hang)",
      F(spec.hang_ns), .lo = 0, .hi = 3600 * NS_PER_S, .unit_ns = NS_PER_S },
    { "keep", TK_OPT_FLAG, NULL,
      "allocates once and writes the same bytes again and again (stress --vm-keep)", F(spec.keep) },
    { "alloc", TK_OPT_CHOICE, "HOW",
      "malloc (as stress; the default) or mmap (fresh pages every round)", F(spec.alloc),
      .choices = alloc_choices },
    { "spin", TK_OPT_UINT, "N", "CPU spinners (default %D; stress --cpu)", F(spec.spin), .lo = 0,
      .hi = TK_PRESSURE_MAX_WORKERS },
    { "sync", TK_OPT_UINT, "N", "sync() callers (default %D; stress --io)", F(spec.sync), .lo = 0,
      .hi = TK_PRESSURE_MAX_WORKERS },
    { "hdd", TK_OPT_UINT, "N", "disk writers (default %D; stress --hdd)", F(spec.hdd), .lo = 0,
      .hi = TK_PRESSURE_MAX_WORKERS },
    { "hdd-bytes", TK_OPT_BYTES, "B",
      "each writes B bytes, then starts again (default %D; stress --hdd-bytes)", F(spec.hdd_bytes),
      .lo = 1, .hi = TK_PRESSURE_MAX_BYTES },
    { "dir", TK_OPT_FILE, "DIR",
      "where the disk writers write (default: the current directory, as stress)", F(spec.dir) },
    { "cpus", TK_OPT_CUSTOM, "LIST",
      "pin the workers to these CPUs, e.g. 0-2,5 (default: where "
      "this process may run)",
      F(spec), .parse = parse_cpus },
    { "force", TK_OPT_FLAG, NULL,
      "run even above half of MemAvailable (vm) or of the free space of --dir (hdd)", F(force) },
    { "duration", TK_OPT_TIME, "T",
      "how long the load runs (default %D; --quick %Q; a bare number is in seconds)",
      F(duration_ns), .lo = NS_PER_S / 10, .hi = 86400 * NS_PER_S, .quick = 2 * NS_PER_S,
      .flags = TK_OPTF_QUICK, .unit_ns = NS_PER_S },
    { "json", TK_OPT_FILE, "FILE",
      "also write the results as JSON (schema " PR_SCHEMA "): to a new file beside FILE, "
      "renamed over it only when the run completes (a run ended by SIGINT or SIGTERM "
      "completes; so does one whose worker ended early, with \"passed\": false); a run that "
      "cannot complete (an error, a fatal signal) leaves FILE as it was",
      F(json_path) },
    { "quick", TK_OPT_FLAG, NULL, "a short run for smoke tests (--duration reduced)", F(quick),
      .flags = TK_OPTF_QUICK_SWITCH },
};

#undef F

static void help_intro(FILE *f)
{
    fputs("usage: rtmem pressure [options]\n"
          "\n"
          "Memory pressure, for a bounded time, with the semantics of stress --vm: --vm\n"
          "worker processes each allocate --bytes, write one byte every --stride bytes,\n"
          "optionally hold the memory (--hang) and free it, over and over; with --keep\n"
          "they allocate once and write the same bytes again and again. Beside them, the\n"
          "other loads of stress, so that a published load (stress -c 16 -i 4 -d 2\n"
          "--hdd-bytes 256M) can be reproduced: --spin CPU spinners, --sync callers of\n"
          "sync(), --hdd disk writers. It prints a line per second of what the workers\n"
          "really did (rounds, bytes written, their page faults) and a summary.\n"
          "\n"
          "To see what the load does to a real-time thread, give it to rtmem latency\n"
          "(--pressure vm=2,bytes=128M,stride=4096), which starts it beside its\n"
          "measuring thread, on the other CPUs.\n",
          f);
}

static void help_notes(FILE *f)
{
    fputs("Where it differs from stress and stress-ng:\n"
          "  - --bytes is per worker, as in stress (stress-ng's --vm-bytes is divided\n"
          "    among its workers), and --stride is kept (stress-ng dropped it);\n"
          "  - a byte is written at the start of every stride, as stress does; stress\n"
          "    also reads the bytes back under --vm-keep, which is not done here;\n"
          "  - --hang holds the memory for a time, never forever (stress's 0);\n"
          "  - with malloc (the default, as stress), glibc raises its mmap threshold to\n"
          "    the size of the first block freed, up to 32 MiB (16 MiB on 32-bit\n"
          "    systems): blocks below that are then served again from the heap, whose\n"
          "    pages stay present, and the workers stop faulting; larger blocks are\n"
          "    fresh mappings every round. The page faults per second show which case\n"
          "    ran; --alloc mmap gives fresh pages at every size;\n"
          "  - the disk writers write to a file that no name points to (it vanishes\n"
          "    with the run) and truncate it where stress unlinks it.\n"
          "\n"
          "Safety: the workers are one process group, killed and reaped when the run\n"
          "ends, on an error, on SIGINT or SIGTERM; each also dies with this process\n"
          "(even on SIGKILL), ends within 3 s when this process stops renewing its\n"
          "lease (stopped with Ctrl-Z, or hung), and ends by itself shortly after\n"
          "--duration. They are named rtmem-vm, rtmem-spin, rtmem-sync and rtmem-hdd,\n"
          "and are the first the OOM killer takes. Memory above half of MemAvailable\n"
          "(or of what the cgroup's memory.max leaves), or disk writes above half of\n"
          "--dir's free space (of the memory, on a tmpfs), are refused unless --force.\n"
          "\n"
          "Sizes take K, M, G or T (binary); times a unit: ms or s. SIGINT (Ctrl-C) or\n"
          "SIGTERM ends the run early as a complete one (summary and --json written).\n"
          "\n"
          "Exit status: 0 the load ran as asked, 1 a worker failed or died before the\n"
          "end (the OOM killer, an allocation refused) or a run-time error, 2 bad usage.\n",
          f);
}

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
    .help_intro = help_intro,
    .help_notes = help_notes,
    .check = check,
    .setup = pr_setup,
    .run = pr_run,
    .report = pr_report,
    .facts = pr_facts,
    .json = pr_json,
    .teardown = pr_teardown,
};
