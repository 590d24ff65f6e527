/*
 * `rtmem memcheck`: the run's sequence, on the bench kit's driver
 * (common/tool.h). Setup selects the allocators and the memory shared with
 * the test processes; the run calibrates the timer, sizes every heap (in
 * test processes), prints the header, then runs each allocator's phases,
 * each in a test process of its own (child.c), and computes what the
 * reports need; teardown gives the memory back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/kinds.h"
#include "common/result.h"
#include "common/run.h"
#include "memcheck.h"

/* The timer's calibration window. */
#define CALIBRATION_MS 60u

/* ---- allocators ----------------------------------------------------------------- */

/* memcheck runs, by default, every rtmem kind, glibc, the peers that load
 * and the plugins; --kinds chooses and orders them. */
static const struct tk_kinds_spec kinds_spec = {
    .by_default = TK_DEFAULT_KINDS | TK_DEFAULT_GLIBC | TK_DEFAULT_GLIBC_RT | TK_DEFAULT_PEERS |
                  TK_DEFAULT_PLUGINS,
};

/* The selected allocators become the targets, in shared memory. glibc-rt
 * reserves room for the largest heap's fill of the smallest blocks. */
static void set_targets(struct memcheck *m)
{
    size_t h = m->o->seq_heap_bytes;
    if (m->o->pattern_heap_bytes > h)
        h = m->o->pattern_heap_bytes;
    if (m->o->churn_heap_bytes > h)
        h = m->o->churn_heap_bytes;
    for (size_t i = 0; i < m->kinds.n; i++) {
        m->t[i].a = m->kinds.list[i];
        if (m->t[i].a.own_process)
            m->t[i].a.reserve = tk_glibc_rt_reserve(h, h / MC_POW2_MIN_BLOCK);
    }
    m->n_t = m->kinds.n;
}

/* ---- storage ----------------------------------------------------------------------- */

static bool runs(const struct memcheck *m, enum mc_phase ph)
{
    return m->o->phases & (1u << ph);
}

static size_t largest_heap(const struct memcheck *m)
{
    size_t h = 0;
    if (runs(m, MC_PH_POW2) || runs(m, MC_PH_RANDOM))
        h = m->heap_sizes[m->n_heap_sizes - 1];
    if (runs(m, MC_PH_PATTERN) && m->o->pattern_heap_bytes > h)
        h = m->o->pattern_heap_bytes;
    if (runs(m, MC_PH_CHURN) && m->o->churn_heap_bytes > h)
        h = m->o->churn_heap_bytes;
    return h;
}

/* The heap sizes the run will create, into list (room for
 * MC_MAX_HEAP_SIZES + 2); returns how many. */
static size_t heap_list(const struct memcheck *m, size_t *list)
{
    size_t n = 0;
    if (runs(m, MC_PH_POW2) || runs(m, MC_PH_RANDOM))
        for (size_t i = 0; i < m->n_heap_sizes; i++)
            list[n++] = m->heap_sizes[i];
    if (runs(m, MC_PH_PATTERN))
        list[n++] = m->o->pattern_heap_bytes;
    if (runs(m, MC_PH_CHURN))
        list[n++] = m->o->churn_heap_bytes;
    return n;
}

/* Sizes every heap of every allocator (a heap's tests then only create),
 * each allocator in a test process of its own: one that fails to is failed
 * (reported with the others' results). Returns the largest usable size. */
static size_t size_heaps(struct memcheck *m)
{
    size_t list[MC_MAX_HEAP_SIZES + 2], n = heap_list(m, list), largest = 0;
    for (size_t i = 0; i < m->n_t; i++) {
        struct mc_target *t = &m->t[i];
        if (mc_child_size(m, t, list, n) != 0)
            continue;
        /* A process allocator's heap of H is a budget of H bytes
         * (tk_alloc_size), cached nowhere. */
        if (t->a.sort == TK_PROCESS)
            for (size_t k = 0; k < n; k++)
                if (list[k] > largest)
                    largest = list[k];
        for (size_t k = 0; k < t->a.n_cache; k++)
            if (t->a.cache[k].usable_bytes > largest)
                largest = t->a.cache[k].usable_bytes;
    }
    return largest;
}

/* Memory shared with the test processes: the targets, then their rows and
 * churn samples. The targets are needed before any is selected. */
static int allocate_shared(struct memcheck *m)
{
    m->sh = tk_shared_alloc(sizeof(*m->sh));
    if (!m->sh)
        return -ENOMEM;
    m->t = m->sh->t;
    return 0;
}

static size_t rows_bytes(const struct mc_seq *sq)
{
    return (sq->cap + 1) * sizeof(struct mc_row);
}

static size_t samples_bytes(const struct mc_churn *ch)
{
    return ch->cap_samples * sizeof(struct mc_frag_sample);
}

static int allocate_results(struct memcheck *m)
{
    uint64_t every = m->o->churn_sample_every
                         ? m->o->churn_sample_every
                         : (m->o->churn_ops >= 100 ? m->o->churn_ops / 100 : 1);
    for (size_t i = 0; i < m->n_t; i++) {
        struct mc_target *t = &m->t[i];
        for (int ph = MC_PH_POW2; ph <= MC_PH_RANDOM; ph++) {
            struct mc_seq *sq = &t->seq[ph];
            sq->cap = runs(m, (enum mc_phase)ph) ? mc_seq_tests(m, (enum mc_phase)ph) : 0;
            sq->rows = tk_shared_alloc(rows_bytes(sq));
            if (!sq->rows)
                return -ENOMEM;
        }
        t->churn.cap_samples = (size_t)(m->o->churn_ops / every) + 1;
        t->churn.samples = tk_shared_alloc(samples_bytes(&t->churn));
        if (!t->churn.samples)
            return -ENOMEM;
    }
    return 0;
}

static void free_shared(struct memcheck *m)
{
    if (!m->sh)
        return;
    for (size_t i = 0; i < m->n_t; i++) {
        struct mc_target *t = &m->t[i];
        for (int ph = MC_PH_POW2; ph <= MC_PH_RANDOM; ph++)
            tk_shared_free(t->seq[ph].rows, rows_bytes(&t->seq[ph]));
        tk_shared_free(t->churn.samples, samples_bytes(&t->churn));
    }
    tk_shared_free(m->sh, sizeof(*m->sh));
    m->sh = NULL;
    m->t = NULL;
}

/* ---- the run ------------------------------------------------------------------------ */

static void heap_sequence(struct memcheck *m)
{
    m->n_heap_sizes = 0;
    for (size_t h = MC_SEQ_MIN_HEAP;
         h < m->o->seq_heap_bytes && m->n_heap_sizes < MC_MAX_HEAP_SIZES; h <<= 1)
        m->heap_sizes[m->n_heap_sizes++] = h;
}

/* Every phase of one allocator, each in a test process of its own,
 * stopping at its first failure (a failed sizing included). */
static void run_target(struct memcheck *m, struct mc_target *t)
{
    if (time(&t->started) == (time_t)-1)
        t->started = 0;
    for (int ph = 0; ph < MC_PHASES && !t->fail.failed; ph++)
        if (runs(m, (enum mc_phase)ph))
            mc_child_phase(m, t, (enum mc_phase)ph);
    if (time(&t->finished) == (time_t)-1)
        t->finished = 0;
    /* At once on stderr too, where a long run's log shows it. */
    if (t->fail.failed)
        fprintf(stderr, "rtmem memcheck: FAILED: %s: %s\n", t->a.name, t->fail.msg);
}

/* The watchdog's priority: above the test processes', so that one spinning
 * at its real-time priority on the parent's CPU cannot starve it. */
static int watch_priority(const struct memcheck *m, bool fifo_granted)
{
    if (m->o->rt.no_rt || !fifo_granted)
        return 0;
    int max = sched_get_priority_max(SCHED_FIFO);
    return m->o->rt.priority < max ? m->o->rt.priority + 1 : max;
}

/* What the tests need before the first: timer, results, the heaps' sizes
 * (in test processes). Returns 0, or -1 (reported). */
static int prepare(struct memcheck *m)
{
    /* The timer is calibrated under the real-time setup the tests get;
     * then the parent, which only waits, gives it up. */
    const struct tk_run_opts ro = { "rtmem memcheck", m->o->rt, CALIBRATION_MS };
    if (tk_run_setup(&ro, &m->rt, &m->timer, &m->mf) != 0)
        return -1;
    m->watch_priority = watch_priority(m, m->rt.fifo.granted);
    tk_rt_undo(&m->rt);
    m->sub_ticks = m->o->subtract_overhead ? m->timer.overhead_p50_ticks : 0;
    heap_sequence(m);
    /* Room for any kind's metadata: twice the largest heap and a MiB. */
    m->arena_bytes = 2 * largest_heap(m) + ((size_t)1 << 20);
    if (allocate_results(m) != 0) {
        fprintf(stderr, "rtmem memcheck: out of memory for the run's results\n");
        return -1;
    }
    /* its own progress line, not the kit's (tool.h: own_progress) */
    m->progress.on = m->o->progress || (isatty(STDERR_FILENO) && !m->quiet);
    /* A fill holds at most usable / 1 blocks (1-byte requests, and one
     * over for "more than H/B"); the churn keeps at most fill / 16 live. */
    m->blocks_cap = size_heaps(m) + 2;
    m->churn_cap = runs(m, MC_PH_CHURN) ? mc_churn_capacity(m) : 1;
    return 0;
}

/* ---- the driver's steps ---------------------------------------------------------- */

int mc_setup(struct tk_session *s)
{
    struct memcheck *m = calloc(1, sizeof(*m));
    if (!m) {
        fprintf(stderr, "%s: out of memory\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    s->state = m;
    m->o = s->opts;
    m->quiet = s->parsed.quiet;
    if (m->o->format == MC_FORMAT_SMOKEY)
        s->comment = "# ";
    /* The peers first (common/kinds.h): loading one may execute the
     * process again, and nothing else should have happened yet. */
    int status = tk_kinds_select(&m->kinds, &kinds_spec, &s->cli, m->o->kinds_arg,
                                 m->o->plugin_paths, m->o->n_plugins, s->argc, s->argv);
    if (status != 0)
        return status;
    if (allocate_shared(m) != 0) {
        fprintf(stderr, "%s: out of memory for the run's results\n", s->cli.prog);
        return TK_EXIT_FAILED;
    }
    set_targets(m);
    return 0;
}

enum tk_run_end mc_run(struct tk_session *s)
{
    struct memcheck *m = s->state;
    if (prepare(m) != 0)
        return TK_RUN_ABORTED;
    mc_print_preamble(stdout, m);
    /* A report that cannot be written is not worth measuring. */
    if (tk_stdout_check(s->cli.prog) != 0)
        return TK_RUN_ABORTED;
    uint64_t t0 = tk_clock_ns();
    for (size_t i = 0; i < m->n_t; i++)
        if (!m->t[i].fail.failed) /* else it could not size its heaps */
            run_target(m, &m->t[i]);
        else
            fprintf(stderr, "rtmem memcheck: FAILED: %s: %s\n", m->t[i].a.name, m->t[i].fail.msg);
    m->seconds = (double)(tk_clock_ns() - t0) / 1e9;
    /* What the reports print, computed once: they only read. */
    mc_compute_overall(m);
    m->sh->rt.rests = m->sh->rests;
    for (size_t i = 0; i < m->n_t; i++)
        if (m->t[i].fail.failed)
            return TK_RUN_FAILED;
    return TK_RUN_PASSED;
}

/* The envelope's facts: the parent's timer and machine, and the real-time
 * setup of the test processes (the latest one's record). */
void mc_facts(const struct tk_session *s, struct tk_facts *out)
{
    const struct memcheck *m = s->state;
    out->machine = &m->mf;
    out->timer = &m->timer;
    out->rt = m->sh->have_rt ? &m->sh->rt : NULL;
    out->has_seed = true;
    out->seed = m->o->seed;
}

void mc_teardown(struct tk_session *s)
{
    struct memcheck *m = s->state;
    if (!m)
        return;
    free_shared(m);
    free(m);
    s->state = NULL;
}
