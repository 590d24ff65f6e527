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

static const struct wcet_opts defaults = {
    .reps = DEFAULT_REPS,
    .page_image = WCET_PAGE_IMAGE,
    .count = WCET_COUNT_AUTO,
    .harden = 0,
    .rt = TK_RT_OPTS_DEFAULT,
    .timeout_s = 60,
};

#define F(field) TK_FIELD(struct wcet_opts, field)

static const struct tk_opt options[] = {
    TK_OPT_KIT_KINDS(F(kinds)),
    TK_OPT_KIT_PLUGIN(struct wcet_opts, plugin_paths, n_plugins),
    { "reps", TK_OPT_UINT, "N", "repetitions per scenario (default %D; --quick %Q)", F(reps),
      .lo = 1, .hi = MAX_REPS, .quick = QUICK_REPS, .flags = TK_OPTF_QUICK },
    { "page-image", TK_OPT_BYTES, "B", "the page heaps' image, 256K to 1G (default %D)",
      F(page_image), .lo = WCET_PAGE_IMAGE_MIN, .hi = WCET_PAGE_IMAGE_MAX },
    { "harden", TK_OPT_CHOICE, "LEVEL", "hardening: o1, none or full (default %D)", F(harden),
      .choices = wcet_harden_choices },
    { "count", TK_OPT_CHOICE, "HOW", "count with valgrind: auto, valgrind, none (default %D)",
      F(count), .choices = wcet_count_choices },
    TK_OPT_KIT_RT(struct wcet_opts, rt),
    TK_OPT_KIT_TIMEOUT(F(timeout_s), 86400u),
    TK_OPT_KIT_JSON(F(json_path)),
    TK_OPT_KIT_QUICK(F(quick)),
};

#undef F

static void help_notes(FILE *f)
{
    fputs("\n--kinds names: tlsf, heapmem, xnheap, halffit, xvheap, zsheap, glibc\n"
          "  (default: all)\n",
          f);
}

/* --kinds: each a known name, once. 0, or -1 (reported). */
static int check(struct tk_session *s)
{
    struct wcet_opts *o = s->opts;
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
                &s->cli,
                "--kinds: '%.*s' is not one of tlsf, heapmem, xnheap, halffit, xvheap, zsheap, "
                "glibc",
                (int)len, k);
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
    .help_notes = help_notes,
    .check = check,
    .setup = wcet_setup,
    .run = wcet_run,
    .report = wcet_report,
    .facts = wcet_facts,
    .json = wcet_json,
    .teardown = wcet_teardown,
};
