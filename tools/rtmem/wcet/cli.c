/*
 * `rtmem wcet`: its options table, --help, the combinations the table
 * cannot check, and wcet_tool, what the bench kit's driver runs
 * (common/tool.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../cmd.h"
#include "common/opt.h"
#include "common/tool.h"
#include "wcet.h"

#define DEFAULT_REPS 1000u
#define QUICK_REPS   50u
#define MAX_REPS     1000000u

const char *const wcet_kind_names[] = { "tlsf", "heapmem", "xnheap", "glibc", NULL };
const char *const wcet_harden_choices[] = { "o1", "none", "full", NULL };
const int wcet_harden_levels[] = { RTM_HEAP_HARDEN_O1, RTM_HEAP_HARDEN_NONE, RTM_HEAP_HARDEN_FULL };
const char *const wcet_count_choices[] = { "auto", "valgrind", "none", NULL };
#ifdef WCET_SANITIZED
const char wcet_no_glibc[] = "this build's sanitizer replaces malloc: glibc's is not reached";
#else
const char wcet_no_glibc[] = "its scenarios need glibc 2.33 or later";
#endif

static const struct wcet_opts defaults = {
    .reps = DEFAULT_REPS,
    .page_image = WCET_PAGE_IMAGE,
    .count = WCET_COUNT_AUTO,
    .harden = 0,
    .cpu = -1,
    .priority = TK_RT_DEFAULT_PRIORITY,
};

#define F(field) TK_FIELD(struct wcet_opts, field)

static const struct tk_opt options[] = {
    { "kinds", TK_OPT_STRING, "K[,K...]",
      "the kinds to analyse, among tlsf, heapmem, xnheap and glibc (default: all)", F(kinds) },
    { "plugin", TK_OPT_FILES, "FILE.so",
      "also probe your own allocator (rtmem/plugin.h; repeatable, up to 4): three black-box "
      "probes of a fragmented heap, since its code is not rtmem's to read; a name without '/' "
      "is looked for in the current directory first",
      F(plugin_paths), .hi = WCET_MAX_PLUGINS,
      .count_offset = offsetof(struct wcet_opts, n_plugins) },
    { "reps", TK_OPT_UINT, "N",
      "timed repetitions of each scenario, warm and cold each (default %D; --quick %Q)", F(reps),
      .lo = 1, .hi = MAX_REPS, .quick = QUICK_REPS, .flags = TK_OPTF_QUICK },
    { "page-image", TK_OPT_BYTES, "B",
      "the page heaps' image: more pages, more free runs, deeper trees (default %D, which "
      "stays in an L2 cache once restored; 256K to 1G)",
      F(page_image), .lo = WCET_PAGE_IMAGE_MIN, .hi = WCET_PAGE_IMAGE_MAX },
    { "harden", TK_OPT_CHOICE, "LEVEL",
      "the rtmem heaps' hardening level: o1 (the default level of rtm_heap_create), none, or "
      "full (o1 and a full check before every operation)",
      F(harden), .choices = wcet_harden_choices },
    { "count", TK_OPT_CHOICE, "HOW",
      "instructions, branches and cache lines per operation: auto (under valgrind when it is "
      "installed and this is no emulator's run (qemu-user), else not counted, saying why; and the "
      "CPU's counters where the kernel offers "
      "them; the default), valgrind (required: a run that cannot count fails), none (neither)",
      F(count), .choices = wcet_count_choices },
    { "cpu", TK_OPT_CPU, "N", "the CPU the timed run is pinned to (default: the last allowed)",
      F(cpu) },
    { "prio", TK_OPT_PRIO, "N", "its SCHED_FIFO priority, 1..99 (default %D)", F(priority) },
    { "no-rt", TK_OPT_FLAG, NULL, "no SCHED_FIFO (the run stays pinned; mlockall is still tried)",
      F(no_rt) },
    { "json", TK_OPT_FILE, "FILE",
      "also write the results as JSON (schema " WCET_SCHEMA "): to a new file beside FILE, "
      "renamed over it only when the run ends with a verdict (passed, or a scenario failed); "
      "an interrupted run, or one that could not measure, leaves FILE as it was. A FIFO or "
      "device (/dev/stdout, /dev/null) is written directly",
      F(json_path) },
    { "quick", TK_OPT_FLAG, NULL, "a short run for smoke tests (--reps reduced)", F(quick),
      .flags = TK_OPTF_QUICK_SWITCH },
};

#undef F

static void help_intro(FILE *f)
{
    fputs("usage: rtmem wcet [options]\n"
          "\n"
          "Each heap kind's worst case, built on purpose and measured three ways. For\n"
          "every kind, scenarios make the heap state in which one operation takes the\n"
          "longest path the kind's code has for it (TLSF: a search through both bitmaps,\n"
          "a free merging both neighbours, the largest alignment gap, a realloc that\n"
          "moves; heapmem and xnheap: page runs taken and given back at the deepest node\n"
          "of the trees of free runs, bucket pages taken and given back, a first use;\n"
          "glibc: fast-bin consolidation, a trim of the top, an mmap and a munmap), and\n"
          "check that the state is what they claim (classes, tree depths, merges).\n"
          "\n"
          "Each scenario is then measured:\n"
          "  warm     the state restored by a copy (in the caches), the code warm;\n"
          "  cold     the same, then the state's memory flushed from every cache level\n"
          "           (clflushopt; dc civac on arm64), the code and stack still warm;\n"
          "  counted  instructions, branches and the distinct data cache lines the\n"
          "           operation touches, under valgrind's callgrind (the same every run)\n"
          "           with a simulated cache emptied before each operation, less the\n"
          "           figures of a call that does nothing (the noop row); and, where the\n"
          "           kernel offers the CPU's counters, the instructions and branch\n"
          "           instructions the CPU retired (in the JSON).\n"
          "Times are one timer reading per operation (the timer's own overhead is in\n"
          "the header): min, median, p99 and max over the repetitions. On a virtual\n"
          "machine the maximum is often the host's noise; the counted figures do not\n"
          "depend on the machine's load.\n",
          f);
}

static void help_notes(FILE *f)
{
    fputs("--harden full checks the whole heap before every operation (check_interval 1, the\n"
          "library's default): every bound then becomes that of rtm_heap_check.\n"
          "\n"
          "glibc's scenarios pin M_MMAP_THRESHOLD and M_TRIM_THRESHOLD at their defaults\n"
          "(128K) with mallopt, so that every repetition takes the same path. Byte counts\n"
          "take K, M or G (binary: 1K = 1024).\n"
          "\n"
          "Requires root (or CAP_SYS_NICE and CAP_IPC_LOCK) for SCHED_FIFO and locked\n"
          "memory; without them it says so and still measures. valgrind, when used,\n"
          "runs as a child process under a time limit, never under SCHED_FIFO, with its\n"
          "files in a private directory under $TMPDIR that is removed afterwards.\n"
          "\n"
          "Ctrl-C, SIGTERM, SIGHUP, SIGQUIT or a closed pipe ends the run at once, with no\n"
          "report: an existing --json FILE is left as it was, valgrind is killed and its\n"
          "files removed.\n"
          "\n"
          "Exit status: 0 every scenario was built, checked and measured; 1 a scenario\n"
          "failed its check (the state was not what it claims: a change to an allocator\n"
          "turned it into another case), --count valgrind could not count, or a run-time\n"
          "failure; 2 bad usage.\n",
          f);
}

/* --kinds: each a known name, once. 0, or -1 (reported). */
static int check(struct tk_session *s)
{
    struct wcet_opts *o = s->opts;
    const struct tk_opt_parse *p = &s->parsed;
    size_t n = sizeof(options) / sizeof(options[0]);
    if (o->no_rt && tk_opt_given(options, n, p, "prio"))
        return tk_args_bad(&s->cli, "--no-rt runs under SCHED_OTHER: --prio would not be used");
    if (o->page_image % WCET_IMAGE_ALIGN != 0)
        return tk_args_bad(&s->cli, "--page-image: a multiple of 4K, please");
    if (!o->kinds)
        return 0;
    const char *k = o->kinds;
    bool seen[WCET_MAX_KINDS] = { false };
    do {
        size_t len = strcspn(k, ",");
        size_t i = 0;
        while (wcet_kind_names[i] &&
               (strlen(wcet_kind_names[i]) != len || strncmp(wcet_kind_names[i], k, len) != 0))
            i++;
        if (!wcet_kind_names[i])
            return tk_args_bad(
                &s->cli, "--kinds: '%.*s' is not one of tlsf, heapmem, xnheap, glibc", (int)len, k);
        if (seen[i])
            return tk_args_bad(&s->cli, "--kinds: '%s' is named twice", wcet_kind_names[i]);
        if (strcmp(wcet_kind_names[i], "glibc") == 0 && wcet_glibc_n == 0)
            return tk_args_bad(&s->cli, "--kinds: glibc: %s", wcet_no_glibc);
        seen[i] = true;
        k += len;
    } while (*k++ == ',');
    return 0;
}

const struct tk_tool wcet_tool = {
    .name = "wcet",
    .summary = "each heap kind's worst case: built on purpose, timed warm and cold, counted",
    .schema = WCET_SCHEMA,
    .bytes_example = "256K, 64M",
    .opts = options,
    .n_opts = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(struct wcet_opts),
    .defaults = &defaults,
    .json_path_offset = offsetof(struct wcet_opts, json_path),
    .help_intro = help_intro,
    .help_notes = help_notes,
    .check = check,
    .setup = wcet_setup,
    .run = wcet_run,
    .report = wcet_report,
    .facts = wcet_facts,
    .json = wcet_json,
    .teardown = wcet_teardown,
};
