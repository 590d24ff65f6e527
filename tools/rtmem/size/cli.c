/*
 * `rtmem size`: its options table, --help, the set-up (the limits, the
 * kinds) and size_tool, what the bench kit's driver runs (common/tool.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cmd.h"
#include "common/opt.h"
#include "common/tool.h"
#include "size.h"

#define DEFAULT_GRANULE 64u
#define DEFAULT_SEED    1u

const char *const size_lock_names[] = { "none", "pi", "robust", NULL };

static const struct size_opts defaults = {
    .granule = DEFAULT_GRANULE,
    .seed = DEFAULT_SEED,
};

#define F(field) TK_FIELD(struct size_opts, field)

static const struct tk_opt options[] = {
    { "max-live", TK_OPT_BYTES, "B", "the most bytes live blocks ask at once (required)",
      F(max_live), .lo = 1, .hi = (uint64_t)1 << 40 },
    { "max-block", TK_OPT_BYTES, "B", "the largest request (required)", F(max_block), .lo = 1,
      .hi = (uint64_t)1 << 40 },
    { "min-block", TK_OPT_BYTES, "B", "the smallest request (default 1)", F(min_block), .lo = 1,
      .hi = (uint64_t)1 << 40 },
    { "max-align", TK_OPT_BYTES, "N", "the largest alignment aligned_alloc is given", F(max_align),
      .lo = 1, .hi = (uint64_t)1 << 30 },
    { "lock", TK_OPT_CHOICE, "none|pi|robust", "the heap's lock (default none)", F(lock),
      .choices = size_lock_names },
    TK_OPT_KIT_KINDS(F(kinds)),
    { "adversaries", TK_OPT_FLAG, NULL, "also run the adversaries against each bound",
      F(adversaries) },
    { "granule", TK_OPT_BYTES, "B", "the resolution of the adversaries' search (default %D)",
      F(granule), .lo = 8, .hi = (uint64_t)1 << 20 },
    TK_OPT_KIT_SEED(F(seed)),
    TK_OPT_KIT_JSON(F(json_path)),
};

#undef F

#define N_OPTS (sizeof(options) / sizeof(options[0]))

static const struct tk_kinds_spec kinds_spec = {
    .by_default = TK_DEFAULT_KINDS,
};

static bool given(const struct tk_session *s, const char *name)
{
    return tk_opt_given(options, N_OPTS, &s->parsed, name);
}

static int check(struct tk_session *s)
{
    const struct size_opts *o = s->opts;
    if (!given(s, "max-live") || !given(s, "max-block"))
        return tk_args_bad(&s->cli, "--max-live and --max-block are required");
    if (o->min_block > o->max_block)
        return tk_args_bad(&s->cli, "--min-block is more than --max-block");
    if (o->min_block > o->max_live)
        return tk_args_bad(&s->cli, "--min-block is more than --max-live");
    if (o->max_align & (o->max_align - 1))
        return tk_args_bad(&s->cli, "--max-align must be a power of two");
    return 0;
}

static void help_notes(FILE *f)
{
    fputc('\n', f);
    tk_opt_wrap(f,
                "--kinds takes rtmem's heap kinds (default: all of them); hardening variants "
                "share their kind's bound, and other allocators have none.",
                0, 2);
}

static size_t sat(uint64_t v)
{
    return v > SIZE_MAX ? SIZE_MAX : (size_t)v;
}

static int setup(struct tk_session *s)
{
    struct size_state *st = calloc(1, sizeof(*st));
    if (!st) {
        fprintf(stderr, "%s: out of memory\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    s->state = st;
    st->o = *(const struct size_opts *)s->opts;
    st->prog = s->cli.prog;
    tk_machine_collect(&st->mf);
    static const int locks[] = { RTM_HEAP_LOCK_NONE, RTM_HEAP_LOCK_PI,
                                 RTM_HEAP_LOCK_ROBUST_SHARED };
    /* a figure beyond size_t (a 32-bit target) saturates: its bound is
     * then beyond the address space, and said so */
    st->lim = (struct rtm_heap_limits){ .max_live = sat(st->o.max_live),
                                        .max_block = sat(st->o.max_block),
                                        .min_block = st->o.min_block ? sat(st->o.min_block) : 1,
                                        .max_align = sat(st->o.max_align),
                                        .lock = locks[st->o.lock] };
    if (st->lim.max_block > st->lim.max_live)
        st->lim.max_block = st->lim.max_live; /* as the bound counts it */
    int rc =
        tk_kinds_select(&st->kinds, &kinds_spec, &s->cli, st->o.kinds, NULL, 0, s->argc, s->argv);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < st->kinds.n; i++) {
        const struct tk_alloc *a = &st->kinds.list[i];
        const char *kind = a->from == TK_FROM_RTMEM || a->from == TK_FROM_TYPED ? a->kind : NULL;
        bool seen = false;
        for (size_t j = 0; kind && j < st->n_k; j++)
            seen |= strcmp(st->k[j].name, kind) == 0;
        if (seen)
            continue;
        struct size_kind *k = &st->k[st->n_k++];
        snprintf(k->name, sizeof(k->name), "%s", kind ? kind : a->name);
        if (!kind)
            snprintf(k->why, sizeof(k->why), "no bound: not an rtmem heap kind");
    }
    return 0;
}

static void facts(const struct tk_session *s, struct tk_facts *out)
{
    const struct size_state *st = s->state;
    *out = (struct tk_facts){ .machine = &st->mf, .has_seed = true, .seed = st->o.seed };
}

static void teardown(struct tk_session *s)
{
    free(s->state);
    s->state = NULL;
}

const struct tk_tool size_tool = {
    .name = "size",
    .summary = "the pool each heap kind needs so that no allocation within limits ever fails",
    .schema = SIZE_SCHEMA,
    .bytes_example = "4096, 64K, 64M",
    .opts = options,
    .n_opts = N_OPTS,
    .opts_size = sizeof(struct size_opts),
    .defaults = &defaults,
    .json_path_offset = offsetof(struct size_opts, json_path),
    .help_notes = help_notes,
    .check = check,
    .setup = setup,
    .run = size_run,
    .report = size_report,
    .facts = facts,
    .json = size_json,
    .teardown = teardown,
};
