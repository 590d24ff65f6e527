/*
 * `rtmem replay`: its options table, --help, the set-up (the trace read,
 * the program built, the allocators chosen) and replay_tool, what the bench
 * kit's driver runs (common/tool.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cmd.h"
#include "common/opt.h"
#include "common/tool.h"
#include "replay.h"

#define DEFAULT_GRANULE  64u
#define DEFAULT_MAX_POOL ((uint64_t)1 << 30)
#define DEFAULT_REPS     5u
#define DEFAULT_MARGIN   25u
#define DEFAULT_TIMEOUT  60u
#define MAX_TIMEOUT      86400u

static const struct replay_opts defaults = {
    .granule = DEFAULT_GRANULE,
    .max_pool = DEFAULT_MAX_POOL,
    .reps = DEFAULT_REPS,
    .margin_pct = DEFAULT_MARGIN,
    .timeout_s = DEFAULT_TIMEOUT,
    .rt = TK_RT_OPTS_DEFAULT,
};

#define F(field) TK_FIELD(struct replay_opts, field)

static const struct tk_opt options[] = {
    TK_OPT_KIT_KINDS(F(kinds)),
    TK_OPT_KIT_PLUGIN(struct replay_opts, plugin_paths, n_plugins),
    TK_OPT_KIT_TIMEOUT(F(timeout_s), MAX_TIMEOUT),
    { "phase", TK_OPT_STRING, "NAME", "replay that phase alone (its live blocks made first)",
      F(phase) },
    { "pool", TK_OPT_BYTES, "B", "also replay on a pool of B bytes: its failures", F(pool),
      .lo = 4096, .hi = (uint64_t)1 << 40 },
    { "granule", TK_OPT_BYTES, "B", "the pool search's resolution (default %D)", F(granule),
      .lo = 8, .hi = (uint64_t)1 << 20 },
    { "max-pool", TK_OPT_BYTES, "B", "the largest pool the search tries (default %D)", F(max_pool),
      .lo = 4096, .hi = (uint64_t)1 << 40 },
    { "reps", TK_OPT_UINT, "N", "timed replays per allocator (default %D; --quick %Q)", F(reps),
      .lo = 1, .hi = REPLAY_MAX_REPS, .quick = 1, .flags = TK_OPTF_QUICK },
    { "margin", TK_OPT_UINT, "PCT", "the pool advised: the smallest fit + PCT%% (default %D)",
      F(margin_pct), .lo = 0, .hi = 1000 },
    { "no-count", TK_OPT_FLAG, NULL, "no instruction counts under valgrind", F(no_count) },
    TK_OPT_KIT_RT(struct replay_opts, rt),
    TK_OPT_KIT_JSON(F(json_path)),
    TK_OPT_KIT_QUICK(F(quick)),
};

#undef F

#define N_OPTS (sizeof(options) / sizeof(options[0]))

/* Every rtmem kind, glibc, glibc-rt and the plugins given, unless --kinds
 * says otherwise. */
static const struct tk_kinds_spec kinds_spec = {
    .by_default = TK_DEFAULT_KINDS | TK_DEFAULT_GLIBC | TK_DEFAULT_GLIBC_RT | TK_DEFAULT_PLUGINS,
};

static int check(struct tk_session *s)
{
    if (s->n_operands != 1)
        return tk_args_bad(&s->cli, s->n_operands ? "one trace at a time, please"
                                                  : "the trace to replay: rtmem replay FILE");
    const struct replay_opts *o = s->opts;
    if (o->pool && o->pool > o->max_pool)
        return tk_args_bad(&s->cli, "--pool is more than --max-pool");
    return 0;
}

/* The kit's names: which it replays, and which it lists as not
 * replayed. */
static void help_notes(FILE *f)
{
    char names[512], text[1000];
    snprintf(text, sizeof(text),
             "--kinds names: %s, and each --plugin's name (default: every rtmem kind, glibc, "
             "glibc-rt and the plugins; typed rows are not replayed). Plugins are replayed "
             "like kinds, glibc-rt as glibc, each in a child of its own.",
             tk_kinds_names(names, sizeof(names)));
    fputc('\n', f);
    tk_opt_wrap(f, text, 0, 2);
}

/* The timed calls of the program that are reallocs. */
static uint64_t reallocs(const struct replay_program *p)
{
    uint64_t n = 0;
    for (size_t i = 0; i < p->n; i++)
        n += p->ops[i].timed && p->ops[i].op == RO_REALLOC;
    return n;
}

/* A plugin as a target: what its table lacks that the program needs. */
static void set_plugin(const struct replay *r, struct replay_target *x, struct tk_plugin *pl)
{
    x->plugin = pl;
    size_t align = pl->alignment ? pl->alignment : RTM_HEAP_MIN_ALIGN;
    if (!pl->has_aligned && r->p.max_align > align)
        snprintf(x->why_not, sizeof(x->why_not),
                 "not replayed: the program asks for blocks aligned to %llu bytes; the "
                 "plugin's alloc aligns to %zu and its table has no aligned_alloc",
                 (unsigned long long)r->p.max_align, align);
    uint64_t n = pl->has_realloc ? 0 : reallocs(&r->p);
    if (n)
        snprintf(x->note, sizeof(x->note),
                 "its table has no realloc: the %llu reallocs are its alloc, a copy and its free",
                 (unsigned long long)n);
}

/* The allocators become targets; those replay cannot drive are listed with
 * why. */
static void set_targets(struct replay *r)
{
    for (size_t i = 0; i < r->kinds.n; i++) {
        struct tk_alloc *a = &r->kinds.list[i];
        struct replay_target *x = &r->targets[r->n_targets++];
        memset(x, 0, sizeof(*x));
        snprintf(x->name, sizeof(x->name), "%s", a->name);
        if (a->from == TK_FROM_RTMEM) {
            x->kind = a->kind;
            x->hardening = a->hardening;
        } else if (a->from == TK_FROM_PEER && a->realloc && a->aligned) {
            x->peer = a; /* its own malloc family, as glibc's */
        } else if (a->from == TK_FROM_PLUGIN) {
            set_plugin(r, x, a->plugin);
        } else if (a->own_process) {
            /* glibc-rt: room for the program's peak (a realloc's old and
             * new block both counted, as the bound counts them) and a block
             * header each */
            struct rtm_heap_limits l;
            uint64_t live = replay_program_limits(&r->p, &l) == 0 && l.max_live > r->p.peak_live
                                ? l.max_live
                                : r->p.peak_live;
            x->own = a;
            a->reserve = tk_glibc_rt_reserve(live > SIZE_MAX ? SIZE_MAX : (size_t)live,
                                             replay_peak_blocks(&r->p));
        } else if (a->from != TK_FROM_GLIBC) {
            snprintf(x->why_not, sizeof(x->why_not),
                     "not replayed: replay drives realloc and aligned allocation, which %s "
                     "is not driven through here",
                     a->name);
        }
    }
}

static int setup(struct tk_session *s)
{
    struct replay *r = calloc(1, sizeof(*r));
    if (!r) {
        fprintf(stderr, "%s: out of memory\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    s->state = r;
    r->o = *(const struct replay_opts *)s->opts;
    r->prog = s->cli.prog;
    r->page = (size_t)sysconf(_SC_PAGESIZE);
    tk_machine_collect(&r->mf);
    int rc = tk_kinds_select(&r->kinds, &kinds_spec, &s->cli, r->o.kinds, r->o.plugin_paths,
                             r->o.n_plugins, s->argc, s->argv);
    if (rc != 0)
        return rc;
    char why[512];
    if (tk_trace_read(s->operands[0], &r->t, why, sizeof(why)) != 0) {
        fprintf(stderr, "%s: %s\n", s->cli.prog, why);
        return TK_EXIT_FAILED;
    }
    if (replay_program_build(&r->t, r->o.phase, &r->p, why, sizeof(why)) != 0) {
        fprintf(stderr, "%s: %s\n", s->cli.prog, why);
        return r->o.phase && strstr(why, "no phase") ? TK_EXIT_USAGE : TK_EXIT_FAILED;
    }
    replay_find_others(r, s->operands[0]);
    set_targets(r);
    if (replay_is_count_child()) { /* under valgrind: the counted replay alone */
        int status = replay_count_child(r);
        fflush(NULL);
        _exit(status);
    }
    return 0;
}

static void facts(const struct tk_session *s, struct tk_facts *out)
{
    const struct replay *r = s->state;
    *out = (struct tk_facts){ .machine = &r->mf,
                              .timer = r->timer_ok ? &r->timer : NULL,
                              .rt = r->rt_done ? &r->rt : NULL };
}

static void teardown(struct tk_session *s)
{
    struct replay *r = s->state;
    if (!r)
        return;
    replay_program_free(&r->p);
    tk_trace_free(&r->t);
    free(r);
    s->state = NULL;
}

const struct tk_tool replay_tool = {
    .name = "replay",
    .summary = "a trace replayed on every heap: the pool it needs, its cost, a verdict",
    .schema = REPLAY_SCHEMA,
    .bytes_example = "4096, 64K, 64M",
    .operands_usage = "FILE",
    .opts = options,
    .n_opts = N_OPTS,
    .opts_size = sizeof(struct replay_opts),
    .defaults = &defaults,
    .json_path_offset = offsetof(struct replay_opts, json_path),
    .help_notes = help_notes,
    .check = check,
    .setup = setup,
    .run = replay_run,
    .report = replay_report,
    .facts = facts,
    .json = replay_json,
    .teardown = teardown,
};
