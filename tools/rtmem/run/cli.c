/*
 * `rtmem run`: its options table, --help, the set-up (where
 * librtmem-malloc is) and run_tool, what the bench kit's driver runs
 * (common/tool.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cmd.h"
#include "common/opt.h"
#include "rtmem/heap.h"
#include "rtmem/xvheap.h"
#include "rtmem/zsheap.h"
#include "run.h"

const char *const run_huge_choices[] = { "no", "2M", "1G", NULL };
const char *const run_lock_choices[] = { "try", "must", "no", NULL };
const char *const run_harden_choices[] = { "o1", "none", "full", NULL };
const char *const run_full_choices[] = { "fail", "fallback", NULL };
const char *const run_signal_choices[] = { "none", "usr1", "usr2", NULL };

#define DEFAULT_POOL ((uint64_t)64 << 20)

static const struct run_opts defaults = {
    .kind = "tlsf",
    .pool = DEFAULT_POOL,
};

#define F(field) TK_FIELD(struct run_opts, field)

static const struct tk_opt options[] = {
    { "kind", TK_OPT_STRING, "NAME", "a kind (rtmem kinds; default tlsf), glibc or glibc-rt",
      F(kind) },
    { "pool", TK_OPT_BYTES, "B", "the pool's size; glibc-rt's reserve (default %D)", F(pool),
      .lo = 4096, .hi = (uint64_t)1 << 40 },
    { "huge", TK_OPT_CHOICE, "SIZE", "huge pages: no (default), 2M or 1G", F(huge),
      .choices = run_huge_choices },
    { "lock", TK_OPT_CHOICE, "HOW", "lock the pool: try (default), must, no", F(lock),
      .choices = run_lock_choices },
    { "harden", TK_OPT_CHOICE, "LEVEL", "the heap's checks: o1 (default), none, full", F(harden),
      .choices = run_harden_choices },
    { "on-full", TK_OPT_CHOICE, "WHAT", "the pool exhausted: fail (ENOMEM, default), fallback",
      F(on_full), .choices = run_full_choices },
    { "signal", TK_OPT_CHOICE, "SIG", "summary on this signal too: none (default), usr1, usr2",
      F(signal), .choices = run_signal_choices },
    { "no-time", TK_OPT_FLAG, NULL, "do not time each call (no worst call)", F(no_time) },
    TK_OPT_KIT_JSON(F(json_path)),
};

#undef F

#define N_OPTS (sizeof(options) / sizeof(options[0]))

static int check(struct tk_session *s)
{
    const struct run_opts *o = s->opts;
    if (s->cmd_argc == 0)
        return tk_args_bad(&s->cli, "no program to run: rtmem run [options] -- PROGRAM [ARGS...]");
    for (const char *const *k = rtm_heap_kinds(); *k; k++) {
        if (strcmp(*k, o->kind) != 0)
            continue;
        /* the page kinds serve blocks of a page at most */
        size_t most = strcmp(*k, "xvheap") == 0   ? rtm_xvheap_max_request(RTM_XVHEAP_PAGE_SIZE)
                      : strcmp(*k, "zsheap") == 0 ? RTM_ZSHEAP_MAX_REQUEST
                                                  : 0;
        if (most && o->on_full != 1)
            return tk_args_bad(&s->cli,
                               "--kind %s serves blocks of at most %zu bytes (a page's): add "
                               "--on-full fallback to take larger ones from the C library, or "
                               "pick another kind",
                               *k, most);
        return 0;
    }
    if (strcmp(o->kind, "glibc") != 0 && strcmp(o->kind, "glibc-rt") != 0) {
        char kinds[256] = "";
        for (const char *const *k = rtm_heap_kinds(); *k; k++)
            snprintf(kinds + strlen(kinds), sizeof(kinds) - strlen(kinds), "%s, ", *k);
        return tk_args_bad(&s->cli, "--kind %s: no such heap kind (%sor glibc, glibc-rt)", o->kind,
                           kinds);
    }
    /* glibc's heap is glibc's: what shapes an rtmem heap does not apply. */
    static const char *const heap_only[] = { "huge", "harden", "on-full" };
    for (size_t i = 0; i < sizeof(heap_only) / sizeof(heap_only[0]); i++)
        if (tk_opt_given(options, N_OPTS, &s->parsed, heap_only[i]))
            return tk_args_bad(&s->cli, "--%s is for rtmem's heap kinds, not --kind %s",
                               heap_only[i], o->kind);
    static const char *const reserve_only[] = { "pool", "lock" };
    for (size_t i = 0; i < 2 && strcmp(o->kind, "glibc") == 0; i++)
        if (tk_opt_given(options, N_OPTS, &s->parsed, reserve_only[i]))
            return tk_args_bad(&s->cli,
                               "--%s: glibc at its defaults has no pool (glibc-rt's is its "
                               "reserve)",
                               reserve_only[i]);
    return 0;
}

static int setup(struct tk_session *s)
{
    struct run *r = calloc(1, sizeof(*r));
    if (!r) {
        fprintf(stderr, "%s: out of memory\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    s->state = r;
    r->o = *(const struct run_opts *)s->opts;
    r->prog = s->cli.prog;
    s->comment = "";
    tk_machine_collect(&r->mf);
    if (tk_preload_find("librtmem-malloc.so", "RTMEM_MALLOC_LIB", r->lib, sizeof(r->lib)) != 0) {
        fprintf(stderr,
                "%s: librtmem-malloc.so not found (%s): install rtmem, or set "
                "RTMEM_MALLOC_LIB to its path\n",
                s->cli.prog, r->lib);
        return TK_EXIT_FAILED;
    }
    return 0;
}

static void facts(const struct tk_session *s, struct tk_facts *out)
{
    const struct run *r = s->state;
    *out = (struct tk_facts){ .machine = &r->mf };
}

static void teardown(struct tk_session *s)
{
    free(s->state);
    s->state = NULL;
}

const struct tk_tool run_tool = {
    .name = "run",
    .summary = "a program, unmodified, on an rtmem heap: what its malloc calls came to",
    .schema = RUN_SCHEMA,
    .bytes_example = "4096, 64K, 64M",
    .command_usage = "-- PROGRAM [ARGS...]",
    .report_on_stderr = true,
    .opts = options,
    .n_opts = N_OPTS,
    .opts_size = sizeof(struct run_opts),
    .defaults = &defaults,
    .json_path_offset = offsetof(struct run_opts, json_path),
    .check = check,
    .setup = setup,
    .run = run_run,
    .report = run_report,
    .facts = facts,
    .json = run_json,
    .teardown = teardown,
};
