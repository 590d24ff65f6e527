/*
 * `rtmem replay`: instructions per call, counted by valgrind's callgrind
 * where it is installed. Valgrind interprets the machine code: its counts
 * are the binary's as built, exactly, every run, where timings on a busy
 * or virtual machine are not.
 *
 * For each replayed allocator, rtmem replays the program twice more in a
 * child process under callgrind (common/grind.h), the same calls in the
 * same order, on a heap of the advised pool:
 *
 *   valgrind --tool=callgrind --collect-atstart=no
 *            --toggle-collect=rtmem_replay_count_alloc (and _aligned,
 *            _realloc; or _free) rtmem replay --no-rt --quick
 *            [--plugin FILE.so] --kinds NAME [--phase P] TRACE
 *                                             (RTMEM_REPLAY_COUNT=alloc:POOL)
 *
 * The timed calls go through the counted functions (engine.c), which hold
 * the call alone; only the instructions inside them are counted: the
 * allocator's call with the dispatch of rtm_heap_*, plus the wrapper's
 * test and jump (a handful). The child prints how many calls it made;
 * the totals over those calls give the averages. A plugin's code runs in
 * that child (under valgrind), never in the process that writes the
 * report; what it prints goes to standard error there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/progress.h"
#include "common/grind.h"
#include "replay.h"

#define COUNT_ENV              "RTMEM_REPLAY_COUNT"
/* valgrind's time: seconds to start, and about 50 times the calls' own */
#define COUNT_TIMEOUT_S        120.0
#define COUNT_TIMEOUT_S_PER_OP 0.001

bool replay_is_count_child(void)
{
    return getenv(COUNT_ENV) != NULL;
}

int replay_count_child(struct replay *r)
{
    const char *v = getenv(COUNT_ENV), *colon = strchr(v, ':');
    uint64_t pool = colon ? strtoull(colon + 1, NULL, 10) : 0;
    if (r->n_targets != 1 || r->targets[0].why_not[0])
        return 2;
    const struct replay_target *x = &r->targets[0];
    /* The counts are standard output: a plugin's prints go to stderr. */
    FILE *calls = tk_stdout_aside();
    char why[TK_WHY_MAX];
    if ((x->plugin && tk_plugin_open(x->plugin, why, sizeof(why)) != 0) ||
        (x->own && tk_alloc_bind(x->own, why, sizeof(why)) != 0)) {
        fprintf(stderr, "%s\n", why);
        return 3;
    }
    struct replay_how how = { .peer = x->peer, .counted = true };
    if (replay_bounded(x)) {
        void *mem = mmap(NULL, (size_t)pool, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (mem == MAP_FAILED || !replay_heap_open(x, mem, (size_t)pool, RTM_HEAP_LOCK_NONE, &how))
            return 3;
    }
    void **blocks = calloc(r->p.n_ids ? r->p.n_ids : 1, sizeof(*blocks));
    if (!blocks)
        return 3;
    struct replay_outcome out;
    replay_once(&r->p, &how, blocks, &out);
    fprintf(calls, "calls %llu %llu failures %llu\n", (unsigned long long)out.counted_allocs,
            (unsigned long long)out.counted_frees, (unsigned long long)out.failures);
    return fflush(calls) == 0 && out.failures == 0 ? 0 : 4;
}

static const char *const alloc_toggles[] = {
    "--toggle-collect=rtmem_replay_count_alloc",
    "--toggle-collect=rtmem_replay_count_aligned",
    "--toggle-collect=rtmem_replay_count_realloc",
    NULL,
};
static const char *const free_toggles[] = { "--toggle-collect=rtmem_replay_count_free", NULL };

/* One counted replay of x, counting one side: its instructions and calls,
 * or -1 with x->count_why. */
static int count_side(struct tk_session *s, struct tk_grind *g, struct replay_target *x, bool frees,
                      uint64_t *ir, uint64_t *calls)
{
    struct replay *r = s->state;
    char out_opt[PATH_MAX + 32], env[64];
    const char *vg[8] = { "--tool=callgrind", "--collect-atstart=no",
                          tk_grind_out_option(g, out_opt, sizeof(out_opt)) };
    size_t n = 3;
    for (const char *const *t = frees ? free_toggles : alloc_toggles; *t; t++)
        vg[n++] = *t;
    vg[n] = NULL;
    const char *args[14] = { "replay", "--no-rt", "--quick" };
    n = 3;
    if (x->plugin) {
        args[n++] = "--plugin";
        args[n++] = x->plugin->path;
    }
    args[n++] = "--kinds";
    args[n++] = x->name;
    if (r->o.phase) {
        args[n++] = "--phase";
        args[n++] = r->o.phase;
    }
    args[n++] = s->operands[0];
    args[n] = NULL;
    snprintf(env, sizeof(env), "%s:%llu", frees ? "free" : "alloc",
             (unsigned long long)(replay_bounded(x) ? x->timed_pool : 0));
    double limit = COUNT_TIMEOUT_S + COUNT_TIMEOUT_S_PER_OP * (double)r->p.n;
    if (tk_grind_run(g, vg, args, COUNT_ENV, env, limit, x->count_why, sizeof(x->count_why)) != 0)
        return -1;
    FILE *f = fopen(g->stdout_path, "r");
    unsigned long long a = 0, fr = 0, fails = 0;
    int got = f ? fscanf(f, "calls %llu %llu failures %llu", &a, &fr, &fails) : 0;
    if (f)
        fclose(f);
    if (got != 3) {
        snprintf(x->count_why, sizeof(x->count_why), "the counted replay said nothing");
        return -1;
    }
    if (tk_grind_totals(g->out, "Ir", ir) != 0) {
        snprintf(x->count_why, sizeof(x->count_why), "valgrind wrote no counts");
        return -1;
    }
    *calls = frees ? fr : a;
    if (*calls && *ir == 0) { /* no symbol to toggle on: a stripped rtmem */
        snprintf(x->count_why, sizeof(x->count_why),
                 "valgrind counted nothing: rtmem's symbols are missing (a stripped binary?)");
        return -1;
    }
    return 0;
}

void replay_count(struct tk_session *s)
{
    struct replay *r = s->state;
    if (r->o.no_count) {
        snprintf(r->count_why, sizeof(r->count_why), "not asked (--no-count)");
        return;
    }
    struct tk_grind g;
    if (tk_grind_find(&g, r->count_why, sizeof(r->count_why)) != 0)
        return;
    if (tk_grind_files(&g, "replay", r->count_why, sizeof(r->count_why)) != 0)
        return;
    snprintf(r->valgrind_version, sizeof(r->valgrind_version), "%s",
             g.version[0] ? g.version : "valgrind");
    for (size_t i = 0; i < r->n_targets; i++) {
        struct replay_target *x = &r->targets[i];
        if (!x->replayed || (replay_bounded(x) && !x->fits)) {
            if (x->replayed)
                snprintf(x->count_why, sizeof(x->count_why), "no pool fits this program");
            continue;
        }
        tk_progress_note(r->prog, "counting the instructions of %s's calls under %s", x->name,
                         r->valgrind_version);
        uint64_t ir_a = 0, ir_f = 0;
        if (count_side(s, &g, x, false, &ir_a, &x->counted_allocs) != 0 ||
            count_side(s, &g, x, true, &ir_f, &x->counted_frees) != 0)
            continue;
        x->counted = true;
        x->instr_alloc = x->counted_allocs ? (double)ir_a / (double)x->counted_allocs : 0.0;
        x->instr_free = x->counted_frees ? (double)ir_f / (double)x->counted_frees : 0.0;
    }
    tk_grind_remove(&g);
}
