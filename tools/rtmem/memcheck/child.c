/*
 * `rtmem memcheck`: each allocator's work in a process of its own.
 *
 * memcheck exists to test users' allocators, which crash and hang. So the
 * parent process never calls an allocator under test: it sizes each
 * allocator's heaps, then runs each of its phases, in a test process
 * (common/child.h) that does the real-time setup (pinning, SCHED_FIFO,
 * mlockall), maps its own arena and work buffers, and writes its rows into
 * memory shared with the parent as it goes. The parent waits with a
 * watchdog: a test that makes no progress for --timeout seconds is killed
 * with its process group. A process that dies (a signal, the timeout, a
 * setup that failed) fails its allocator, with the phase and test it was
 * in; the rows it finished stay in the report and the JSON, and the other
 * allocators go on.
 *
 * Each test process starts from the parent's state: a process allocator
 * (glibc, a peer) begins every phase as the parent left it, warmed once in
 * that process (tk_alloc_warm).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memcheck.h"

struct job {
    struct memcheck *m;
    struct mc_target *t;
    enum mc_phase phase; /* the phase to run, or the first one (sizing) */
    const size_t *heaps; /* sizing: the heap sizes */
    size_t n_heaps;
};

/* The first phase the options run. */
static enum mc_phase first_phase(const struct memcheck *m)
{
    for (int ph = 0; ph < MC_PHASES; ph++)
        if (m->o->phases & (1u << ph))
            return (enum mc_phase)ph;
    return MC_PH_POW2;
}

/* A failure of t not found by a check, recorded once. */
static void fail_as(struct mc_target *t, enum mc_fail_kind kind, enum mc_phase phase, int sig,
                    const char *what, const char *where)
{
    if (t->fail.failed)
        return;
    t->fail.failed = true;
    t->fail.kind = kind;
    t->fail.phase = phase;
    t->fail.signal = sig;
    snprintf(t->fail.msg, sizeof(t->fail.msg), "%s%s%s", where ? where : "", where ? ": " : "",
             what);
}

/* ---- in the test process ---------------------------------------------------------- */

/* Writes every page now, so no test takes a page fault in the harness.
 * Through a volatile pointer: compilers drop a memset of calloc'd memory,
 * and glibc's calloc does not write a block it mmaps. */
static void *alloc_touched(size_t n, size_t size)
{
    volatile unsigned char *p = calloc(n, size);
    if (p)
        for (size_t i = 0; i < n * size; i += 4096)
            p[i] = 0;
    return (void *)p;
}

/*
 * The scratch of a sort of a full sample store, taken and given back twice,
 * every page written: glibc's qsort mallocs a buffer as large as what it
 * sorts, and the harness sorts every test's samples. In glibc this block is
 * above the default mmap threshold; freeing it raises the threshold to its
 * size and the trim threshold to twice that (glibc's dynamic thresholds,
 * no mallopt), and the second one then grows the heap, which glibc keeps.
 * So every test process starts where a process that has sorted once is:
 * glibc, measured, fills its heaps from memory it already has, as it did
 * when every allocator ran in one process (where the first large sort did
 * this). Without it a test process keeps glibc's defaults: each fill grows
 * the heap with brk, which mlockall(MCL_FUTURE) populates inside a timed
 * malloc, and each emptied heap is trimmed again.
 */
static void take_sort_scratch(size_t bytes)
{
    for (int k = 0; k < 2; k++) {
        volatile unsigned char *p = malloc(bytes);
        if (!p)
            return;
        for (size_t i = 0; i < bytes; i += 4096)
            p[i] = 0;
        free((void *)p);
    }
}

/* The buffers a phase works in (sized by the parent: m->blocks_cap,
 * m->churn_cap), allocated and touched before any timing, and the scratch
 * of their sorts. 0 or -ENOMEM. */
static int allocate_work(struct memcheck *m)
{
    size_t samples = m->blocks_cap > m->churn_cap ? m->blocks_cap : m->churn_cap;
    m->blocks = alloc_touched(m->blocks_cap, sizeof(void *));
    m->sizes = alloc_touched(m->blocks_cap, sizeof(uint32_t));
    m->order = alloc_touched(m->blocks_cap, sizeof(uint32_t));
    m->churn_ops = alloc_touched(m->churn_cap, sizeof(uint32_t));
    if (!m->blocks || !m->sizes || !m->order || !m->churn_ops ||
        tk_samples_init(&m->alloc_s, samples) != 0 || tk_samples_init(&m->free_s, samples) != 0)
        return -ENOMEM;
    take_sort_scratch(samples * sizeof(uint64_t));
    return 0;
}

/* The test process's setup: real time as asked, its arena, its buffers
 * (work), the allocator bound (tk_alloc_bind), the memory lock. Reports it to the parent. 0, or -1 after
 * recording the failure. The process exits after its job: nothing here is
 * freed. */
static int child_begin(struct job *j, bool work)
{
    struct memcheck *m = j->m;
    struct tk_rt_request req = tk_rt_request_of(&m->o->rt, false); /* locked once mapped */
    bool carried = m->sh->have_rt;
    uint64_t busy_since = m->sh->rt.busy_since_ns;
    tk_rt_setup(&req, &m->rt);
    /* Real-time throttling counts the CPU's real-time time, not this
     * process's: go on from where the previous test process left the
     * count, so that tk_rt_breather rests in time (a fresh count lets the
     * throttle stop a test for the rest of its period, and that pause would
     * be taken for the allocator's). */
    if (carried)
        m->rt.busy_since_ns = busy_since;
    int rc = tk_arena_open(&m->arena, m->arena_bytes);
    if (rc != 0) {
        char what[128];
        snprintf(what, sizeof(what), "mmap of a %zu-byte arena: %s", m->arena_bytes, strerror(-rc));
        fail_as(j->t, MC_FAIL_ERROR, j->phase, 0, what, NULL);
        return -1;
    }
    if (work && allocate_work(m) != 0) {
        fail_as(j->t, MC_FAIL_ERROR, j->phase, 0, "out of memory for the test's buffers", NULL);
        return -1;
    }
    /* After the buffers: glibc-rt's reserve is then the tests' alone. */
    char why[TK_WHY_MAX];
    if (tk_alloc_bind(&j->t->a, why, sizeof(why)) != 0) {
        fail_as(j->t, MC_FAIL_ERROR, j->phase, 0, why, NULL);
        return -1;
    }
    tk_rt_lock_memory(&m->rt);
    m->sh->rt = m->rt;
    m->sh->arena = m->arena;
    m->sh->have_rt = true;
    return 0;
}

static void child_end(struct memcheck *m)
{
    tk_rt_refresh(&m->rt);
    m->sh->rests += m->rt.rests;
    m->rt.rests = 0;
    m->sh->rt = m->rt;
}

static int size_job(void *arg)
{
    struct job *j = arg;
    struct mc_target *t = j->t;
    if (child_begin(j, false) != 0)
        return 1;
    t->now = (struct mc_running){ .set = true, .sizing = true, .phase = j->phase };
    for (size_t k = 0; k < j->n_heaps; k++) {
        struct tk_heap_info info;
        tk_child_beat(&t->beat);
        int rc = tk_alloc_size(&t->a, &j->m->arena, j->heaps[k], &info);
        if (rc != 0) {
            char what[256];
            snprintf(what, sizeof(what),
                     "no heap of usable size %zu fits the arena of %zu "
                     "bytes: %s",
                     j->heaps[k], j->m->arena.bytes, strerror(-rc));
            fail_as(t, MC_FAIL_ERROR, j->phase, 0, what, "sizing its heaps");
            break;
        }
    }
    child_end(j->m);
    t->job_done = true;
    return 0;
}

/* Maps every page of [p, p + bytes) into this process now. Memory shared
 * with the parent is not mapped in a forked child until it is touched. */
static void map_pages(const void *p, size_t bytes)
{
    const volatile unsigned char *c = p;
    for (size_t i = 0; i < bytes; i += 4096)
        (void)c[i];
}

/* The shared memory the phase writes its results into. */
static void map_results(struct mc_target *t, enum mc_phase phase)
{
    if (phase == MC_PH_POW2 || phase == MC_PH_RANDOM)
        map_pages(t->seq[phase].rows, (t->seq[phase].cap + 1) * sizeof(struct mc_row));
    if (phase == MC_PH_CHURN)
        map_pages(t->churn.samples, t->churn.cap_samples * sizeof(struct mc_frag_sample));
}

static int phase_job(void *arg)
{
    struct job *j = arg;
    struct memcheck *m = j->m;
    struct mc_target *t = j->t;
    if (child_begin(j, true) != 0)
        return 1;
    map_results(t, j->phase);
    tk_alloc_warm(&t->a, MC_POW2_MIN_BLOCK);
    switch (j->phase) {
    case MC_PH_POW2:
    case MC_PH_RANDOM: mc_run_seq(m, t, j->phase); break;
    case MC_PH_PATTERN: mc_run_pattern(m, t); break;
    case MC_PH_CHURN: mc_run_churn(m, t); break;
    default: break;
    }
    tk_glibc_rt_check(&t->a);
    child_end(m);
    t->job_done = true;
    return 0;
}

/* ---- in the parent ---------------------------------------------------------------- */

/* Where the test process was: "pow2 phase, test #3: heap 8192 B, block 64 B
 * +hot". */
static void describe_where(const struct mc_running *now, enum mc_phase phase, char *buf,
                           size_t size)
{
    if (!now->set)
        snprintf(buf, size, "%s phase, before its first test", mc_phase_name(phase));
    else if (now->sizing)
        snprintf(buf, size, "sizing its heaps, before the %s phase", mc_phase_name(phase));
    else if (now->phase == MC_PH_CHURN)
        snprintf(buf, size, "churn phase, heap %zu B", now->heap);
    else
        snprintf(buf, size, "%s phase, test #%zu: heap %zu B, block %zu B%s%s",
                 mc_phase_name(now->phase), now->index, now->heap, now->block,
                 now->flags & MC_F_SHUFFLE ? " +shuffle" : "",
                 now->flags & MC_F_HOT ? " +hot" : "");
}

/* A phase cut short keeps what it had, with the time it ran. */
static void close_phase(struct mc_target *t, enum mc_phase phase, double seconds)
{
    if ((phase == MC_PH_POW2 || phase == MC_PH_RANDOM) && t->seq[phase].ran &&
        t->seq[phase].seconds == 0)
        t->seq[phase].seconds = seconds;
    if (phase == MC_PH_PATTERN && t->pattern.ran && t->pattern.seconds == 0)
        t->pattern.seconds = seconds;
}

/* What the end of a test process means for t. */
static void record_end(struct memcheck *m, struct mc_target *t, enum mc_phase phase,
                       const struct tk_child_result *r)
{
    char where[256], what[256], sig[64];
    /* The process may have died in the middle of a progress line. */
    if (m->progress.on && r->end != TK_CHILD_EXITED)
        fprintf(stderr, "\r%60s\r", "");
    enum mc_phase in = t->now.set && !t->now.sizing ? t->now.phase : phase;
    describe_where(&t->now, phase, where, sizeof(where));
    switch (r->end) {
    case TK_CHILD_EXITED:
        if ((r->code != 0 || !t->job_done) && !t->fail.failed) {
            snprintf(what, sizeof(what), "its test process exited (status %d) without its results",
                     r->code);
            fail_as(t, MC_FAIL_ERROR, in, 0, what, where);
        }
        break;
    case TK_CHILD_KILLED:
        snprintf(what, sizeof(what), "crashed: killed by %s",
                 tk_signal_describe(r->code, sig, sizeof(sig)));
        fail_as(t, MC_FAIL_CRASH, in, r->code, what, where);
        break;
    case TK_CHILD_TIMED_OUT:
        snprintf(what, sizeof(what),
                 "hung: no progress for %u s (--timeout), killed with "
                 "SIGKILL",
                 m->o->timeout_s);
        fail_as(t, MC_FAIL_TIMEOUT, in, 0, what, where);
        break;
    case TK_CHILD_NOT_STARTED:
        snprintf(what, sizeof(what), "cannot start its test process: %s", strerror(r->code));
        fail_as(t, MC_FAIL_ERROR, in, 0, what, where);
        break;
    }
    close_phase(t, phase, r->seconds);
}

static int run_job(struct memcheck *m, struct job *j, int (*fn)(void *))
{
    /* Standard output aside: what a plugin prints goes to standard error,
     * never into the report. */
    const struct tk_child_opts co = { .stdout_aside = true,
                                      .timeout_s = m->o->timeout_s,
                                      .watch_priority = m->watch_priority };
    struct tk_child_result r;
    memset(&j->t->now, 0, sizeof(j->t->now));
    j->t->job_done = false;
    tk_child_run(fn, j, &j->t->beat, &co, &r);
    record_end(m, j->t, j->phase, &r);
    return j->t->fail.failed ? -1 : 0;
}

int mc_child_size(struct memcheck *m, struct mc_target *t, const size_t *heaps, size_t n)
{
    struct job j = { .m = m, .t = t, .phase = first_phase(m), .heaps = heaps, .n_heaps = n };
    return run_job(m, &j, size_job);
}

int mc_child_phase(struct memcheck *m, struct mc_target *t, enum mc_phase phase)
{
    struct job j = { .m = m, .t = t, .phase = phase };
    return run_job(m, &j, phase_job);
}
