/*
 * `rtmem replay`: per allocator, the pool search, the replay at --pool, the
 * timed replays, the memory touched.
 *
 * The pool search (rtmem kinds, plugins): a heap is created on a
 * region of P bytes (its control structure included, as a user's would
 * be) and the program replayed until an allocation fails. P doubles from
 * twice the peak of live bytes until one fits (at most --max-pool), then a
 * bisection on multiples of the granule ends with P, which fits, and P -
 * granule, which fails: both replayed. An allocator need not fit every
 * pool above one that fits (a larger pool may place blocks otherwise): the
 * timed replays, at the recommended pool, say whether it fit there too.
 *
 * Timed replays: on memory prefaulted and locked (the kit's arena), each
 * call between two reads of the kit's timer, the timer's own median
 * overhead subtracted; --reps replays, their calls pooled. Touched memory:
 * one more replay on a fresh mapping of the recommended pool, then the
 * pages mincore finds resident.
 *
 * A plugin (rtmem/plugin.h) is a bounded heap like a kind: searched,
 * replayed at --pool, timed, its touched pages counted. All of it runs in a
 * child process of its own (common/child.h), so that a plugin that
 * crashes, hangs or exits fails its own line and nothing else (one that
 * forks is replayed, what it started killed with its child): the child
 * opens the plugin, does the work, and hands the target's figures
 * back in shared memory, its progress marked after each replay (--timeout
 * without a mark: killed). The process that writes the report never runs
 * the plugin's code. A plugin has no lock of rtmem's to time.
 *
 * glibc-rt is replayed as glibc is (timed, no pool), in a child process of
 * its own in the same way: its mallopt settings are the process's, and the
 * child applies them and makes its reserve (tk_alloc_bind) before any
 * replay, then hands back whether the reserve held.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/progress.h"
#include "common/arena.h"
#include "replay.h"

uint64_t replay_recommended_pool(const struct replay *r, const struct replay_target *x)
{
    uint64_t extra =
        x->min_pool / 100 * r->o.margin_pct + (x->min_pool % 100) * r->o.margin_pct / 100;
    uint64_t p = x->min_pool + extra;
    return (p + r->page - 1) / r->page * r->page;
}

/* Memory for the search: max_pool bytes reserved, never prefaulted (only
 * what the heaps touch is ever backed). */
struct region {
    void *mem;
    size_t bytes;
};

static int region_map(struct region *g, size_t bytes)
{
    g->mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                  -1, 0);
    if (g->mem == MAP_FAILED) {
        g->mem = NULL;
        return -errno;
    }
    g->bytes = bytes;
    return 0;
}

static void region_unmap(struct region *g)
{
    if (g->mem)
        munmap(g->mem, g->bytes);
    g->mem = NULL;
}

bool replay_heap_open(const struct replay_target *x, void *mem, size_t bytes, int lock,
                      struct replay_how *how)
{
    if (x->kind) {
        struct rtm_heap_config cfg = { .hardening = x->hardening, .lock = lock };
        how->heap = rtm_heap_create_ex(x->kind, mem, bytes, &cfg);
        return how->heap != NULL;
    }
    if (x->plugin) {
        const struct rtm_heap_plugin *t = x->plugin->table;
        how->plug = t;
        how->plug_align = t->alignment ? t->alignment : RTM_HEAP_MIN_ALIGN;
        how->pheap = t->create(mem, bytes);
        return how->pheap != NULL;
    }
    return true;
}

void replay_heap_close(struct replay_how *how)
{
    if (how->heap)
        rtm_heap_destroy(how->heap);
    else if (how->plug && how->pheap)
        how->plug->destroy(how->pheap);
    how->heap = NULL;
    how->pheap = NULL;
}

/* One replay at pool bytes on mem: failures (UINT64_MAX: the heap could
 * not be created). */
static uint64_t replay_at(struct replay *r, const struct replay_target *x, void *mem,
                          uint64_t bytes, bool stop, void **blocks, struct replay_outcome *out)
{
    struct replay_how how = { .stop_at_failure = stop };
    if (!replay_heap_open(x, mem, (size_t)bytes, RTM_HEAP_LOCK_NONE, &how))
        return UINT64_MAX;
    memset(blocks, 0, r->p.n_ids * sizeof(*blocks));
    replay_once(&r->p, &how, blocks, out);
    replay_heap_close(&how);
    tk_child_beat(r->beat);
    return out->failures;
}

static bool fits(struct replay *r, struct replay_target *x, struct region *g, uint64_t bytes,
                 void **blocks)
{
    struct replay_outcome out;
    x->tries++;
    tk_rt_breather(&r->rt);
    return replay_at(r, x, g->mem, bytes, true, blocks, &out) == 0;
}

/* The smallest pool that fits, at the granule's resolution. */
static void search(struct replay *r, struct replay_target *x, struct region *g, void **blocks)
{
    uint64_t gr = r->o.granule, cap = r->o.max_pool / gr * gr; /* the region's size at most */
    uint64_t hi = (r->p.peak_live * 2 + gr - 1) / gr * gr;
    if (hi < 4096)
        hi = (4096 + gr - 1) / gr * gr;
    if (hi > cap)
        hi = cap;
    uint64_t lo = 0;
    while (!fits(r, x, g, hi, blocks)) {
        lo = hi;
        if (hi >= cap) {
            x->fits = false;
            return;
        }
        hi = hi * 2 > cap ? cap : hi * 2;
    }
    while (hi - lo > gr) {
        uint64_t mid = lo + (hi - lo) / 2 / gr * gr;
        if (mid == lo)
            mid = lo + gr;
        if (fits(r, x, g, mid, blocks))
            hi = mid;
        else
            lo = mid;
    }
    x->fits = true;
    x->min_pool = hi;
    x->below_fails = lo; /* lo == hi - granule: replayed and failed, or 0 */
}

/* Timed replays at bytes (rtmem: on a prefaulted, locked arena) with the
 * lock asked; samples in ticks into the two stores. */
static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int timed(struct replay *r, struct replay_target *x, uint64_t bytes, int lock,
                 struct tk_samples *allocs, struct tk_samples *frees, void **blocks,
                 struct replay_outcome *last, double *worst_ns)
{
    uint64_t maxima[REPLAY_MAX_REPS];
    struct tk_arena ar = { 0 };
    if (replay_bounded(x)) {
        int rc = tk_arena_open(&ar, (size_t)bytes);
        if (rc != 0) {
            snprintf(x->why_not, sizeof(x->why_not), "mmap of %llu bytes: %s",
                     (unsigned long long)bytes, strerror(-rc));
            return -1;
        }
    }
    tk_samples_reset(allocs);
    tk_samples_reset(frees);
    int rc = 0;
    for (unsigned rep = 0; rep < r->o.reps && rc == 0; rep++) {
        struct replay_how how = {
            .peer = x->peer, .noop = x->noop, .allocs = allocs, .frees = frees
        };
        if (!replay_heap_open(x, ar.mem, (size_t)bytes, lock, &how)) {
            snprintf(x->why_not, sizeof(x->why_not), "%s refused %llu bytes",
                     x->kind ? "rtm_heap_create_ex" : "the plugin's create",
                     (unsigned long long)bytes);
            rc = -1;
            break;
        }
        memset(blocks, 0, r->p.n_ids * sizeof(*blocks));
        tk_rt_breather(&r->rt);
        replay_once(&r->p, &how, blocks, last);
        maxima[rep] = last->max_ticks;
        if (last->refused_frees) {
            snprintf(x->why_not, sizeof(x->why_not),
                     "the heap refused %llu frees of live blocks: its figures would mean nothing",
                     (unsigned long long)last->refused_frees);
            rc = -1;
        }
        tk_child_beat(r->beat);
        if (replay_bounded(x)) {
            replay_heap_close(&how);
        } else if (!x->noop) {
            for (uint32_t i = 0; i < r->p.n_ids; i++) /* a process allocator's: given back */
                if (x->peer && blocks[i])
                    x->peer->free(x->peer->ctx, blocks[i]);
                else
                    free(blocks[i]);
        }
    }
    if (ar.mem)
        munmap(ar.mem, ar.bytes);
    if (rc == 0) {
        /* a replay's longest call, the median over the replays: one
         * preemption in one replay does not make it */
        qsort(maxima, r->o.reps, sizeof(maxima[0]), by_value);
        double w = (double)maxima[r->o.reps / 2] * r->timer.ns_per_tick;
        *worst_ns = w > r->timer.overhead_p50_ns ? w - r->timer.overhead_p50_ns : 0.0;
    }
    return rc;
}

/* Summaries in ns, net of the timer's median overhead. */
static void net(struct replay *r, struct tk_samples *s, struct tk_summary *out)
{
    tk_samples_summarize(s, r->timer.ns_per_tick, out);
    double o = r->timer.overhead_p50_ns;
    double *v[] = {
        &out->min, &out->mean, &out->p50, &out->p99, &out->p999, &out->p9999, &out->max
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        *v[i] = *v[i] > o ? *v[i] - o : 0.0;
}

/* Pages of the pool the allocator touched: a replay on a fresh mapping. */
static uint64_t touched(struct replay *r, struct replay_target *x, uint64_t bytes, void **blocks)
{
    struct region g;
    if (region_map(&g, (size_t)bytes) != 0)
        return 0;
    struct replay_outcome out;
    uint64_t n = 0;
    if (replay_at(r, x, g.mem, bytes, false, blocks, &out) != UINT64_MAX) {
        size_t pages = ((size_t)bytes + r->page - 1) / r->page;
        unsigned char *vec = malloc(pages);
        if (vec && mincore(g.mem, (size_t)bytes, vec) == 0)
            for (size_t i = 0; i < pages; i++)
                n += vec[i] & 1;
        free(vec);
    }
    region_unmap(&g);
    return n * r->page;
}

static void one_target(struct replay *r, struct replay_target *x, struct region *g, void **blocks,
                       struct tk_samples *allocs, struct tk_samples *frees)
{
    struct replay_outcome out;
    if (replay_bounded(x)) {
        if (!x->too_large) /* else no pool fits: nothing to search */
            search(r, x, g, blocks);
        if (r->o.pool) {
            uint64_t f = replay_at(r, x, g->mem, r->o.pool, false, blocks, &out);
            x->pool_created = f != UINT64_MAX;
            x->pool_failures = x->pool_created ? f : 0;
        }
        if (!x->fits) {
            x->replayed = true;
            return;
        }
        x->timed_pool = replay_recommended_pool(r, x);
    }
    if (timed(r, x, x->timed_pool, RTM_HEAP_LOCK_NONE, allocs, frees, blocks, &out, &x->worst_ns) !=
        0)
        return;
    x->replayed = true;
    x->timed_failures = out.failures;
    net(r, allocs, &x->alloc_ns);
    net(r, frees, &x->free_ns);
    if (out.have_peak) {
        x->have_peak = true;
        x->at_peak = out.at_peak;
        x->fragmentation = out.at_peak.free_bytes ? 1.0 - (double)out.at_peak.largest_free_bytes /
                                                              (double)out.at_peak.free_bytes
                                                  : 0.0;
    }
    if (replay_bounded(x))
        x->touched = touched(r, x, x->timed_pool, blocks);
    /* Threads allocate in the program: what a priority-inheritance lock
     * adds to an rtmem kind, the same calls in the same order on one
     * thread. */
    if (x->kind && r->p.threads > 1 &&
        timed(r, x, x->timed_pool, RTM_HEAP_LOCK_PI, allocs, frees, blocks, &out,
              &x->locked_worst_ns) == 0) {
        x->locked_timed = true;
        net(r, allocs, &x->locked_alloc_ns);
        net(r, frees, &x->locked_free_ns);
    }
    if (r->p.threads > 1) {
        uint64_t c = replay_contended(&r->p, x->alloc_ns.mean, x->free_ns.mean);
        x->contended = c == UINT64_MAX ? 0 : c;
    }
}

/* ---- a plugin or glibc-rt, in a child process of its own ------------------------------ */

/* What the child hands back, in memory both share: the target as the
 * child filled it, written as it goes. */
struct plugin_out {
    tk_child_mark beat;
    long pid;  /* the child's: a copy the plugin forks cannot say it is done */
    bool done; /* the child's last act: an end before it is a failure */
    struct replay_target x;
};

struct plugin_job {
    struct replay *r;
    struct plugin_out *out;
    struct region *g;
    void **blocks;
    struct tk_samples *allocs, *frees;
    int fifo; /* SCHED_FIFO priority the child measures at, as the kinds were; 0: none */
};

static int target_child(void *arg)
{
    struct plugin_job *j = arg;
    struct replay_target *x = &j->out->x;
    j->out->pid = (long)getpid();
    j->r->beat = &j->out->beat;
    if (j->fifo) {
        struct sched_param sp = { .sched_priority = j->fifo };
        if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
            char said[sizeof(x->note)];
            memcpy(said, x->note, sizeof(said));
            snprintf(x->note, sizeof(x->note), "%s%stimed under SCHED_OTHER (SCHED_FIFO %d: %s)",
                     said, said[0] ? "; " : "", j->fifo, strerror(errno));
        }
    }
    char why[TK_WHY_MAX];
    if (x->plugin && tk_plugin_open(x->plugin, why, sizeof(why)) != 0) {
        snprintf(x->why_not, sizeof(x->why_not), "%s", why);
    } else if (x->own && tk_alloc_bind(x->own, why, sizeof(why)) != 0) {
        snprintf(x->why_not, sizeof(x->why_not), "%s", why);
        x->grt = x->own->grt; /* why, for the JSON */
    } else {
        one_target(j->r, x, j->g, j->blocks, j->allocs, j->frees);
        if (x->own) {
            tk_glibc_rt_check(x->own);
            x->grt = x->own->grt;
            char said[sizeof(x->note)], held[192];
            memcpy(said, x->note, sizeof(said));
            snprintf(x->note, sizeof(x->note), "%s%s%s", said, said[0] ? "; " : "",
                     tk_glibc_rt_outcome(x->own, held, sizeof(held)));
        }
    }
    if ((long)getpid() == j->out->pid)
        j->out->done = true;
    return 0;
}

/* The priority the parent waits for a plugin's child at: above the
 * child's, so that a child spinning at its real-time priority on the
 * parent's CPU cannot keep the watchdog from running; 0 when there is
 * none above it (the parent then waits under SCHED_OTHER, run when the
 * kernel's real-time throttling leaves the CPU to it). */
static int watch_priority(const struct replay *r)
{
    if (r->o.rt.no_rt || !r->rt.fifo.granted)
        return 0;
    int max = sched_get_priority_max(SCHED_FIFO);
    return r->o.rt.priority < max ? r->o.rt.priority + 1 : 0;
}

/* s's last byte a NUL: a string the child wrote is read with %s. */
#define TERMINATE(s) ((s)[sizeof(s) - 1] = '\0')

/* one_target for a plugin or glibc-rt, in a child under the watchdog
 * (--timeout): its figures into *x, or x->why_not with how the child ended. The parent
 * waits at a priority above the child's, or under SCHED_OTHER when it
 * cannot (never at the child's own: a child spinning there would starve
 * it); the child takes back the parent's SCHED_FIFO priority itself. */
static void target_in_child(struct replay *r, struct replay_target *x, struct region *g,
                            void **blocks, struct tk_samples *allocs, struct tk_samples *frees)
{
    struct plugin_out *o = tk_shared_alloc(sizeof(*o));
    if (!o) {
        snprintf(x->why_not, sizeof(x->why_not), "out of memory to hand its figures back");
        return;
    }
    o->x = *x;
    struct plugin_job j = { r, o, g, blocks, allocs, frees, 0 };
    struct sched_param keep;
    int policy = sched_getscheduler(0);
    bool fifo = policy == SCHED_FIFO && sched_getparam(0, &keep) == 0;
    if (fifo) {
        struct sched_param other = { .sched_priority = 0 };
        j.fifo = keep.sched_priority;
        fifo = sched_setscheduler(0, SCHED_OTHER, &other) == 0;
    }
    /* Standard output aside: what a plugin prints goes to standard error,
     * never into the report. */
    const struct tk_child_opts co = { .timeout_s = r->o.timeout_s,
                                      .watch_priority = r->watch_priority,
                                      .stdout_aside = true };
    struct tk_child_result res;
    tk_child_run(target_child, &j, &o->beat, &co, &res);
    if (fifo)
        (void)sched_setscheduler(0, SCHED_FIFO, &keep);
    char sig[64];
    if (res.end == TK_CHILD_EXITED && o->done) {
        /* The figures, and nothing the parent acts on: its own pointers and
         * name kept, the strings ended. */
        struct replay_target mine = *x;
        *x = o->x;
        memcpy(x->name, mine.name, sizeof(x->name));
        x->kind = mine.kind;
        x->plugin = mine.plugin;
        x->peer = mine.peer;
        x->own = mine.own;
        if (x->own)
            x->own->grt = x->grt;
        x->noop = mine.noop;
        TERMINATE(x->why_not);
        TERMINATE(x->note);
        TERMINATE(x->bound_why);
        TERMINATE(x->count_why);
    } else {
        x->replayed = false;
        if (res.end == TK_CHILD_KILLED)
            snprintf(x->why_not, sizeof(x->why_not), "crashed: killed by %s",
                     tk_signal_describe(res.code, sig, sizeof(sig)));
        else if (res.end == TK_CHILD_TIMED_OUT)
            snprintf(x->why_not, sizeof(x->why_not),
                     "hung: no progress for %u s (--timeout), killed with SIGKILL", r->o.timeout_s);
        else if (res.end == TK_CHILD_NOT_STARTED)
            snprintf(x->why_not, sizeof(x->why_not), "cannot start its process: %s",
                     strerror(res.code));
        else
            snprintf(x->why_not, sizeof(x->why_not),
                     "its process exited (status %d) without its figures", res.code);
    }
    tk_shared_free(o, sizeof(*o));
}

enum tk_run_end replay_run(struct tk_session *s)
{
    struct replay *r = s->state;
    /* Pinned and SCHED_FIFO as asked (the kit's defaults) before the timer
     * is calibrated; memory locked as the arenas are mapped. */
    struct tk_rt_request req = tk_rt_request_of(&r->o.rt, false);
    tk_rt_setup(&req, &r->rt);
    r->rt_done = true;
    r->watch_priority = watch_priority(r);
    int rc = tk_timer_init(&r->timer, 20);
    if (rc != 0) {
        fprintf(stderr, "%s: the timer cannot be calibrated: %s\n", r->prog, strerror(-rc));
        return TK_RUN_ABORTED;
    }
    r->timer_ok = true;
    void **blocks = calloc(r->p.n_ids ? r->p.n_ids : 1, sizeof(*blocks));
    struct tk_samples allocs = { 0 }, frees = { 0 };
    struct region g = { 0 };
    size_t per_rep = r->p.n ? r->p.n : 1;
    if (!blocks || tk_samples_init(&allocs, per_rep * r->o.reps) != 0 ||
        tk_samples_init(&frees, per_rep * r->o.reps) != 0 ||
        region_map(&g, (size_t)r->o.max_pool) != 0) {
        fprintf(stderr, "%s: out of memory for the replay (%llu blocks, %zu calls)\n", r->prog,
                (unsigned long long)r->p.n_ids, r->p.n);
        free(blocks);
        tk_samples_destroy(&allocs);
        tk_samples_destroy(&frees);
        region_unmap(&g);
        return TK_RUN_ABORTED;
    }
    /* The floor first: what the replay's own path and the timer cost a
     * call that does nothing. */
    struct replay_target *fl = &r->floor;
    snprintf(fl->name, sizeof(fl->name), "floor");
    fl->noop = true;
    struct replay_outcome out;
    if (timed(r, fl, 0, RTM_HEAP_LOCK_NONE, &allocs, &frees, blocks, &out, &fl->worst_ns) == 0) {
        fl->replayed = true;
        net(r, &allocs, &fl->alloc_ns);
        net(r, &frees, &fl->free_ns);
    }
    bool failed = false;
    if (replay_program_limits(&r->p, &r->limits) != 0) {
        fprintf(stderr, "%s: out of memory for the program's limits\n", r->prog);
        failed = true;
    }
    for (size_t i = 0; i < r->n_targets; i++) {
        struct replay_target *x = &r->targets[i];
        if (x->why_not[0])
            continue;
        if (x->plugin)
            snprintf(x->bound_why, sizeof(x->bound_why), "rtmem derives none for a plugin");
        if (x->kind && r->limits.max_live) {
            errno = 0;
            x->bound = rtm_heap_pool_bound_ex(x->kind, &r->limits);
            int err = errno;
            if (!x->bound && err == E2BIG) {
                /* one block of the largest request: refused too, and it is
                 * the request the kind never serves, not the pool */
                struct rtm_heap_limits one = r->limits;
                one.max_live = one.min_block = one.max_block;
                errno = 0;
                x->too_large = !rtm_heap_pool_bound_ex(x->kind, &one) && errno == E2BIG;
            }
            if (!x->bound)
                snprintf(x->bound_why, sizeof(x->bound_why), "%s",
                         err == EOVERFLOW ? "beyond the address space"
                         : x->too_large   ? "the kind serves no request this large or aligned"
                         : err == E2BIG   ? "beyond the kind's largest pool"
                                          : strerror(err));
        }
        tk_progress_note(r->prog, "replaying on %s", x->name);
        if (x->plugin || x->own)
            target_in_child(r, x, &g, blocks, &allocs, &frees);
        else
            one_target(r, x, &g, blocks, &allocs, &frees);
        if (!x->replayed)
            failed = x->failed = true;
    }
    free(blocks);
    tk_samples_destroy(&allocs);
    tk_samples_destroy(&frees);
    region_unmap(&g);
    tk_rt_refresh(&r->rt);
    /* Given back on a copy (the report shows what the run had): the
     * counted replays' children must not inherit SCHED_FIFO. */
    struct tk_rt_state rt = r->rt;
    tk_rt_undo(&rt);
    replay_count(s);
    return failed ? TK_RUN_FAILED : TK_RUN_PASSED;
}
