/*
 * `rtmem bench`: the threads phase. One heap of one kind (--threads-kind)
 * is shared by --threads threads, under each lock type of --locks
 * (rtmem/lock.h); its run, its tables and its JSON ("threads").
 *
 * 1. Lock cost, uncontended, in the measuring thread alone. Batches of
 *    COST_PAIRS alloc+free pairs of COST_REQUEST bytes on an unlocked heap
 *    and on a locked one, and batches of as many lock+unlock pairs of a
 *    bare mutex created as rtmem/lock.h says a heap's lock is (error
 *    checking, priority inheritance; robust and process-shared for the
 *    robust and shared types), interleaved batch by batch so that all three
 *    see the same machine. Per round, the median batch of each; what the
 *    lock adds to a call is (locked - unlocked) / 2 per pair, set against
 *    the bare lock+unlock, and locked / unlocked is what a call costs
 *    against the unlocked one (the shared row's target, BENCH_SHARED_TARGET).
 *    The heap call includes the lock's code and the kind's, so the two
 *    overlap in the processor: the lock may add less than its bare cost.
 * 2. Contended: the threads, each pinned to a CPU of the process's allowed
 *    set in turn (at SCHED_FIFO --prio when the measuring process has it),
 *    run the main phase's workload (each its own draw, sizes and live cap of
 *    the main phase, --thread-ops operations) on one heap at once, every
 *    alloc and free timed; a warm-up run first, unrecorded. "none" gives
 *    each thread a heap of its own instead, unlocked: what the threads would
 *    pay without sharing. Threads beyond the CPUs share them, and at
 *    SCHED_FIFO one waits for its CPU as well as for the lock.
 *
 * The shared type's heaps are shared heaps (rtmem/shared.h) of the same
 * kind: one of COST_HEAP_BYTES for the uncontended part, kept over its
 * rounds (each batch leaves it as empty as it found it), then one of
 * --heap-size for the threads. Each is unlinked as soon as it is made, so
 * that no name outlives its mapping, whatever ends the process then. For
 * the moments before (rtm_shared_create_ex maps and prefaults before it
 * returns), the parent removes the name after a measuring process ends,
 * and on a fatal signal (bench_shared_begin): only a SIGKILL of both
 * processes in those moments leaves it. A shared heap that cannot be made
 * skips its part with the reason, and the run goes on.
 */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "common/args.h"
#include "common/cleanup.h"
#include "common/out.h"

/* Uncontended cost: batches per round, pairs per batch, request size. */
#define COST_BATCHES       400u
#define COST_PAIRS         256u
#define COST_REQUEST       64u
/* The uncontended measure's two heaps, at the start of the phase's memory. */
#define COST_HEAP_BYTES    ((size_t)1 << 20)
/* Stack of each thread (locked, with mlockall(MCL_FUTURE)). */
#define THREAD_STACK_BYTES ((size_t)256 << 10)
/* Each thread's draw: the option seed xor this xor the thread's index. */
#define THREAD_SEED_SALT   0x7468726561647321u

const char *const bench_lock_names[BENCH_LOCKS] = { "none", "pi", "robust", "shared" };
/* The heap lock of each type: a shared heap's is robust and process-shared. */
static const int lock_types[BENCH_LOCKS] = { RTM_HEAP_LOCK_NONE, RTM_HEAP_LOCK_PI,
                                             RTM_HEAP_LOCK_ROBUST_SHARED,
                                             RTM_HEAP_LOCK_ROBUST_SHARED };

int bench_parse_locks(const struct tk_args *cli, const char *arg, unsigned *locks)
{
    *locks = 0;
    if (!arg) {
        *locks = (1u << BENCH_LOCKS) - 1;
        return 0;
    }
    const char *p = arg;
    for (;;) {
        size_t n = strcspn(p, ",");
        if (n == 0)
            return tk_args_bad(cli, "--locks: empty name in '%s'", arg);
        unsigned t = 0;
        while (t < BENCH_LOCKS &&
               !(strlen(bench_lock_names[t]) == n && strncmp(p, bench_lock_names[t], n) == 0))
            t++;
        if (t == BENCH_LOCKS)
            return tk_args_bad(cli, "--locks: unknown lock type '%.*s' (none, pi, robust, shared)",
                               (int)n, p);
        *locks |= 1u << t;
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

/* What a thread of the contended run has: its heap, work and samples,
 * allocated before any timing (bench_threads_open). */
struct worker {
    struct bench *b;
    unsigned index;
    pthread_t tid;
    struct rtm_heap *heap;
    struct workload w;
    void **slots;
    struct tk_samples alloc_s, free_s;
    uint64_t failed_allocs, skipped_frees, free_errors;
};

static struct worker *workers;
/* The threads start together: each waits, spinning, until the measuring
 * thread has started them all (go), or gives up (stop). */
static _Atomic bool go, stop;

int bench_threads_open(struct bench *b)
{
    struct bench_threads *th = &b->th;
    unsigned n = b->o.threads;
    int rc = tk_arena_open(&th->mem, b->o.heap_bytes);
    if (rc != 0) {
        fprintf(stderr, "rtmem bench: mmap of %zu bytes for the threads phase: %s\n",
                b->o.heap_bytes, strerror(-rc));
        return -1;
    }
    workers = calloc(n, sizeof(*workers));
    if (!workers)
        goto oom;
    for (unsigned i = 0; i < n; i++) {
        struct worker *w = &workers[i];
        w->b = b;
        w->index = i;
        w->slots = calloc(b->o.live_cap, sizeof(void *));
        if (!w->slots || bench_workload_init(&w->w, b->o.thread_ops) != 0 ||
            tk_samples_init(&w->alloc_s, b->o.thread_ops) != 0 ||
            tk_samples_init(&w->free_s, b->o.thread_ops) != 0)
            goto oom;
        bench_workload_generate(&w->w, b->o.thread_ops, b->o.min_size_bytes, b->o.max_size_bytes,
                                b->o.live_cap, b->o.seed ^ THREAD_SEED_SALT ^ i);
    }
    /* Thread i on the i-th CPU the process was allowed before pinning. */
    cpu_set_t set = b->rt.old_mask;
    if (!b->rt.have_old_mask && sched_getaffinity(0, sizeof(set), &set) != 0)
        CPU_ZERO(&set);
    int cpus[CPU_SETSIZE], ncpus = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            cpus[ncpus++] = c;
    th->n_threads = n;
    for (unsigned i = 0; i < n; i++)
        th->cpus[i] = ncpus ? cpus[i % (unsigned)ncpus] : -1;
    return 0;
oom:
    fprintf(stderr, "rtmem bench: out of memory for the threads phase's buffers\n");
    return -1;
}

/* ---- uncontended cost ---------------------------------------------------------------- */

/* Timed batches: one compiled copy each, never inlined into the callers. */
static __attribute__((noinline)) uint64_t time_heap_pairs(struct rtm_heap *h)
{
    uint64_t t0 = tk_timer_start();
    for (unsigned i = 0; i < COST_PAIRS; i++) {
        void *p = rtm_heap_alloc(h, COST_REQUEST);
        (void)rtm_heap_free(h, p);
    }
    return tk_timer_end() - t0;
}

static __attribute__((noinline)) uint64_t time_bare_pairs(pthread_mutex_t *m)
{
    uint64_t t0 = tk_timer_start();
    for (unsigned i = 0; i < COST_PAIRS; i++) {
        (void)pthread_mutex_lock(m);
        (void)pthread_mutex_unlock(m);
    }
    return tk_timer_end() - t0;
}

/* A mutex as rtmem/lock.h says a heap's lock of type t is made. */
static int bare_mutex_init(pthread_mutex_t *m, int type)
{
    pthread_mutexattr_t a;
    int rc = pthread_mutexattr_init(&a);
    if (rc)
        return rc;
    rc = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    if (!rc)
        rc = pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
    if (!rc && type == RTM_HEAP_LOCK_ROBUST_SHARED) {
        rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
        if (!rc)
            rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    }
    if (!rc)
        rc = pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
    return rc;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static double median_ticks(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_u64);
    return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

static void set_error(struct bench *b, const char *what, int err)
{
    snprintf(b->th.error, sizeof(b->th.error), "%s: %s", what, strerror(err));
}

/* ---- shared heaps ---------------------------------------------------------------------- */

/* The parent's entry in the fatal-signal cleanup (common/cleanup.h). */
static int shm_cleanup_slot = -1;

void bench_shared_begin(struct bench *b)
{
    if (!b->o.threads || !(b->o.locks & (1u << BENCH_LOCK_SHARED)))
        return;
    /* The pid makes the name this run's: whatever holds it is ours to remove. */
    snprintf(b->shm_name, sizeof(b->shm_name), "bench-%ld", (long)getpid());
    /* The object's name, as rtmem/shared.h gives it. A full table (never,
     * with one entry) leaves bench_shared_remove to do it alone. */
    char object[sizeof("/rtmem-") + BENCH_SHM_NAME_MAX];
    snprintf(object, sizeof(object), "/rtmem-%s", b->shm_name);
    tk_cleanup_install();
    shm_cleanup_slot = tk_cleanup_add_shm(object);
}

void bench_shared_remove(const struct bench *b)
{
    if (!b->shm_name[0])
        return;
    int rc = rtm_shared_unlink(b->shm_name);
    if (rc != 0 && rc != -ENOENT)
        fprintf(stderr, "rtmem bench: cannot remove the shared heap '%s': %s\n", b->shm_name,
                strerror(-rc));
}

void bench_shared_end(void)
{
    tk_cleanup_forget_shm(shm_cleanup_slot);
    shm_cleanup_slot = -1;
}

/* A shared heap of bytes in all, of the phase's kind, under the run's name,
 * and the name unlinked at once: the mapping lives until the detach, or
 * the process's end, whatever it is. Prefaulted; locked if permitted (and
 * by mlockall's MCL_FUTURE anyway when that was granted). Returns it, or
 * NULL with the reason in why. */
static struct rtm_shared *shared_open(const struct bench *b, size_t bytes, char *why,
                                      size_t why_size)
{
    const struct rtm_shared_config cfg = { .prefault = RTM_ARENA_PREFAULT_TOUCH,
                                           .lock = RTM_ARENA_LOCK_TRY };
    struct rtm_shared *s = rtm_shared_create_ex(b->shm_name, b->o.threads_kind, bytes, &cfg);
    if (!s) {
        snprintf(why, why_size, "rtm_shared_create_ex('%s', %zu bytes): %s", b->shm_name, bytes,
                 strerror(errno));
        return NULL;
    }
    int rc = rtm_shared_unlink(b->shm_name);
    if (rc != 0) {
        snprintf(why, why_size, "rtm_shared_unlink('%s'): %s", b->shm_name, strerror(-rc));
        (void)rtm_shared_detach(s);
        return NULL;
    }
    return s;
}

/* Detaches s (NULL: nothing); a failure stops the phase. */
static void shared_close(struct bench *b, struct rtm_shared *s)
{
    int rc = s ? rtm_shared_detach(s) : 0;
    if (rc != 0 && !b->th.error[0])
        set_error(b, "rtm_shared_detach", -rc);
}

/* One round of lock type t: its three per-call figures in ns. shared: the
 * shared heap, for type shared. Returns 0, or -1 (b->th.error says why). */
static int cost_round(struct bench *b, unsigned t, unsigned round, struct rtm_heap *shared)
{
    static uint64_t heap_u[COST_BATCHES], heap_l[COST_BATCHES], bare[COST_BATCHES];
    unsigned char *mem = b->th.mem.mem;
    bool locked = lock_types[t] != RTM_HEAP_LOCK_NONE; /* none: the unlocked call alone */
    bool own = locked && t != BENCH_LOCK_SHARED;       /* a locked heap of the round's own */
    struct rtm_heap_config cfg = { .lock = lock_types[t] };
    struct rtm_heap *u = rtm_heap_create(b->o.threads_kind, mem, COST_HEAP_BYTES);
    struct rtm_heap *l =
        !locked ? u
        : own ? rtm_heap_create_ex(b->o.threads_kind, mem + COST_HEAP_BYTES, COST_HEAP_BYTES, &cfg)
              : shared;
    pthread_mutex_t m;
    int rc = locked ? bare_mutex_init(&m, lock_types[t]) : 0;
    if (!u || !l || rc) {
        set_error(b, rc ? "pthread_mutex_init" : "rtm_heap_create_ex", rc ? rc : errno);
        return -1;
    }
    struct bench_lock_cost *c = &b->th.cost[t];
    (void)time_heap_pairs(u); /* warm: the blocks and the code in cache */
    (void)time_heap_pairs(l);
    for (unsigned i = 0; i < COST_BATCHES; i++) {
        heap_u[i] = time_heap_pairs(u);
        if (locked) {
            heap_l[i] = time_heap_pairs(l);
            bare[i] = time_bare_pairs(&m);
        }
    }
    double tick = b->timer.ns_per_tick;
    c->unlocked_ns[round] = median_ticks(heap_u, COST_BATCHES) * tick / (2.0 * COST_PAIRS);
    if (locked) {
        c->locked_ns[round] = median_ticks(heap_l, COST_BATCHES) * tick / (2.0 * COST_PAIRS);
        c->bare_ns[round] = median_ticks(bare, COST_BATCHES) * tick / COST_PAIRS;
        pthread_mutex_destroy(&m);
        if (own)
            rtm_heap_destroy(l);
    }
    rtm_heap_destroy(u);
    return 0;
}

/* ---- contended ------------------------------------------------------------------------ */

/* The main phase's loop (pass.c's timed_pass), each call made directly. */
static void *worker_run(void *arg)
{
    struct worker *w = arg;
    struct rtm_heap *h = w->heap;
    size_t live = 0;
    while (!atomic_load_explicit(&go, memory_order_acquire))
        if (atomic_load_explicit(&stop, memory_order_relaxed))
            return NULL;
    for (size_t i = 0; i < w->w.n; i++) {
        uint32_t op = w->w.ops[i];
        if (op & OP_FREE) {
            uint32_t victim = op & ~OP_FREE;
            void *p = w->slots[victim];
            w->slots[victim] = w->slots[--live];
            if (!p) {
                w->skipped_frees++;
                continue;
            }
            uint64_t t0 = tk_timer_start();
            (void)rtm_heap_free(h, p);
            uint64_t t1 = tk_timer_end();
            tk_samples_add(&w->free_s, t1 - t0);
        } else {
            uint64_t t0 = tk_timer_start();
            void *p = rtm_heap_alloc(h, op);
            uint64_t t1 = tk_timer_end();
            tk_samples_add(&w->alloc_s, t1 - t0);
            if (!p)
                w->failed_allocs++;
            else if (op != 0)
                *(volatile unsigned char *)p = (unsigned char)i;
            w->slots[live++] = p;
        }
    }
    while (live > 0) {
        void *p = w->slots[--live];
        if (p && rtm_heap_free(h, p) != 0)
            w->free_errors++;
    }
    return NULL;
}

/* Starts worker w on its CPU (at SCHED_FIFO --prio if fifo). */
static int start_worker(struct bench *b, struct worker *w)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, THREAD_STACK_BYTES);
    int cpu = b->th.cpus[w->index];
    if (cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        pthread_attr_setaffinity_np(&a, sizeof(one), &one);
    }
    if (b->th.fifo) {
        struct sched_param sp = { .sched_priority = b->o.rt.priority };
        pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
        pthread_attr_setschedpolicy(&a, SCHED_FIFO);
        pthread_attr_setschedparam(&a, &sp);
    }
    int rc = pthread_create(&w->tid, &a, worker_run, w);
    pthread_attr_destroy(&a);
    return rc;
}

/* The shared heap of the contended run of type shared, between open_heaps
 * and close_heaps. */
static struct rtm_shared *contended_shm;

/* The heaps of lock type t: one over the phase's memory, or with no lock
 * one per thread on equal parts of it, or for shared a shared heap of as
 * much. Returns 0; 1 if the shared heap could not be made (the reason in
 * contended_skipped); or -1 (error set). */
static int open_heaps(struct bench *b, unsigned t)
{
    unsigned n = b->th.n_threads;
    if (t == BENCH_LOCK_SHARED) {
        contended_shm = shared_open(b, b->th.mem.bytes, b->th.contended_skipped[t],
                                    sizeof(b->th.contended_skipped[t]));
        if (!contended_shm)
            return 1;
        for (unsigned i = 0; i < n; i++)
            workers[i].heap = rtm_shared_heap(contended_shm);
        return 0;
    }
    struct rtm_heap_config cfg = { .lock = lock_types[t] };
    size_t part = lock_types[t] == RTM_HEAP_LOCK_NONE ? b->th.mem.bytes / n : b->th.mem.bytes;
    for (unsigned i = 0; i < n; i++) {
        struct rtm_heap *h = workers[0].heap;
        if (i == 0 || lock_types[t] == RTM_HEAP_LOCK_NONE)
            h = rtm_heap_create_ex(b->o.threads_kind, (unsigned char *)b->th.mem.mem + i * part,
                                   part, &cfg);
        if (!h) {
            set_error(b, "rtm_heap_create_ex", errno);
            return -1;
        }
        workers[i].heap = h;
    }
    return 0;
}

static void close_heaps(struct bench *b, unsigned t)
{
    for (unsigned i = 0; i < b->th.n_threads; i++) {
        struct rtm_heap *h = workers[i].heap;
        struct rtm_heap_stats st;
        if (i == 0 || lock_types[t] == RTM_HEAP_LOCK_NONE) {
            if (rtm_heap_check(h) != 0 || rtm_heap_stats(h, &st) != 0 || st.live_blocks != 0)
                b->th.check_failures[t]++;
            if (t != BENCH_LOCK_SHARED) /* a shared heap goes with its detach */
                rtm_heap_destroy(h);
        }
        workers[i].heap = NULL;
    }
    if (t == BENCH_LOCK_SHARED) {
        shared_close(b, contended_shm);
        contended_shm = NULL;
    }
}

/* One run of every thread on the heaps of lock type t. Returns 0, or -1
 * (error set). */
static int contended_run(struct bench *b)
{
    unsigned n = b->th.n_threads, started = 0;
    int rc = 0;
    atomic_store(&go, false);
    atomic_store(&stop, false);
    for (unsigned i = 0; i < n; i++) {
        struct worker *w = &workers[i];
        tk_samples_reset(&w->alloc_s);
        tk_samples_reset(&w->free_s);
        w->failed_allocs = w->skipped_frees = w->free_errors = 0;
    }
    for (; started < n; started++)
        if ((rc = start_worker(b, &workers[started])) != 0)
            break;
    if (started < n) {
        set_error(b, "pthread_create", rc);
        atomic_store(&stop, true);
    } else {
        atomic_store_explicit(&go, true, memory_order_release);
    }
    for (unsigned i = 0; i < started; i++)
        pthread_join(workers[i].tid, NULL);
    return started < n ? -1 : 0;
}

static void record_rows(struct bench *b, unsigned t)
{
    for (unsigned i = 0; i < b->th.n_threads; i++) {
        struct worker *w = &workers[i];
        struct bench_thread_row *row = &b->th.rows[t][i];
        row->cpu = b->th.cpus[i];
        tk_samples_summarize(&w->alloc_s, b->timer.ns_per_tick, &row->alloc);
        tk_samples_summarize(&w->free_s, b->timer.ns_per_tick, &row->free);
        row->failed_allocs = w->failed_allocs;
        row->skipped_frees = w->skipped_frees;
        row->free_errors = w->free_errors;
    }
}

/* Lock type t under contention: a warm-up run, then the recorded one.
 * Returns 0 (run, or skipped with the reason), or -1 (error set). */
static int contended(struct bench *b, unsigned t)
{
    int open = open_heaps(b, t);
    if (open != 0)
        return open < 0 ? -1 : 0;
    struct rtm_heap_lock_stats before, after;
    int rc = contended_run(b);
    rtm_heap_lock_stats(workers[0].heap, &before);
    tk_child_beat(&b->beat);
    tk_rt_breather(&b->rt);
    if (rc == 0)
        rc = contended_run(b);
    rtm_heap_lock_stats(workers[0].heap, &after);
    if (rc == 0) {
        record_rows(b, t);
        b->th.lock_calls[t] = after.calls - before.calls;
        b->th.lock_contended[t] = after.contended - before.contended;
    }
    close_heaps(b, t);
    return rc;
}

void bench_run_threads(struct bench *b)
{
    struct bench_threads *th = &b->th;
    uint64_t t0 = tk_clock_ns();
    th->fifo = b->rt.fifo.granted;
    for (unsigned t = 0; t < BENCH_LOCKS; t++)
        for (unsigned r = 0; r < BENCH_MAX_ROUNDS; r++)
            th->cost[t].unlocked_ns[r] = th->cost[t].locked_ns[r] = th->cost[t].bare_ns[r] = NAN;
    b->now.set = false; /* a death here is no allocator's */
    struct rtm_shared *cost_shm = NULL;
    if (b->o.locks & (1u << BENCH_LOCK_SHARED)) {
        char *why = th->cost_skipped[BENCH_LOCK_SHARED];
        tk_child_beat(&b->beat);
        cost_shm = shared_open(b, COST_HEAP_BYTES, why, sizeof(th->cost_skipped[0]));
    }
    for (unsigned r = 0; r < b->o.rounds && !th->error[0]; r++)
        for (unsigned k = 0; k < BENCH_LOCKS && !th->error[0]; k++) {
            unsigned t = (unsigned)bench_order_index(k, BENCH_LOCKS, r);
            if (!(b->o.locks & (1u << t)) || th->cost_skipped[t][0])
                continue;
            tk_child_beat(&b->beat);
            tk_rt_breather(&b->rt);
            cost_round(b, t, r, rtm_shared_heap(cost_shm));
        }
    shared_close(b, cost_shm);
    for (unsigned t = 0; t < BENCH_LOCKS && !th->error[0]; t++) {
        if (!(b->o.locks & (1u << t)))
            continue;
        tk_child_beat(&b->beat);
        tk_rt_breather(&b->rt);
        contended(b, t);
    }
    th->seconds = (double)(tk_clock_ns() - t0) / 1e9;
    th->ran = true;
}

/* ---- aggregates, report, JSON ----------------------------------------------------- */

void bench_aggregate_threads(struct bench *b)
{
    if (!b->th.ran)
        return;
    unsigned n = b->o.rounds;
    for (unsigned t = 0; t < BENCH_LOCKS; t++) {
        struct bench_lock_cost *c = &b->th.cost[t];
        double added[BENCH_MAX_ROUNDS], ratio[BENCH_MAX_ROUNDS], lo, hi;
        for (unsigned r = 0; r < n; r++) {
            added[r] = c->locked_ns[r] - c->unlocked_ns[r]; /* NaN for none */
            ratio[r] = bench_ratio(added[r], c->bare_ns[r]);
        }
        bench_median_min_max(c->unlocked_ns, n, &c->unlocked, &lo, &hi);
        bench_median_min_max(c->locked_ns, n, &c->locked, &lo, &hi);
        bench_median_min_max(c->bare_ns, n, &c->bare, &lo, &hi);
        bench_median_min_max(added, n, &c->added, &c->added_min, &c->added_max);
        bench_median_min_max(ratio, n, &c->ratio, &c->ratio_min, &c->ratio_max);
        for (unsigned r = 0; r < n; r++)
            ratio[r] = bench_ratio(c->locked_ns[r], c->unlocked_ns[r]); /* NaN for none */
        bench_median_min_max(ratio, n, &c->over_unlocked, &c->over_unlocked_min,
                             &c->over_unlocked_max);
    }
}

static bool lock_ran(const struct bench *b, unsigned t)
{
    return (b->o.locks & (1u << t)) != 0;
}

bool bench_target_unmet(const struct bench *b)
{
    const struct bench_lock_cost *c = &b->th.cost[BENCH_LOCK_SHARED];
    return b->th.ran && lock_ran(b, BENCH_LOCK_SHARED) &&
           !b->th.cost_skipped[BENCH_LOCK_SHARED][0] && isfinite(c->over_unlocked) &&
           c->over_unlocked > b->target;
}

static const char *spread(char *buf, size_t size, double v, double lo, double hi, int decimals)
{
    char a[TK_FMT_MAX], l[TK_FMT_MAX], h[TK_FMT_MAX];
    if (!isfinite(v))
        return "-";
    snprintf(buf, size, "%s (%s..%s)", tk_fmt_double(a, sizeof(a), v, decimals),
             tk_fmt_double(l, sizeof(l), lo, decimals), tk_fmt_double(h, sizeof(h), hi, decimals));
    return buf;
}

/* The shared row's verdict on its target, from the median ratio. */
static const char *target_verdict(const struct bench *b, const struct bench_lock_cost *c)
{
    if (!isfinite(c->over_unlocked))
        return "-";
    return c->over_unlocked <= b->target ? "met" : "not met";
}

static void print_cost(FILE *f, const struct bench *b)
{
    char target[32];
    snprintf(target, sizeof(target), "target <=%.2fx", b->target);
    const struct tk_col cols[8] = {
        { "lock", 7, true },
        { "bare lock+unlock", 16, false },
        { "call unlocked", 13, false },
        { "call locked", 11, false },
        { "added by the lock", 20, false },
        { "added/bare", 19, false },
        { "locked/unlocked", 19, false },
        { target, 14, false },
    };
    fprintf(f,
            "\nlock cost, uncontended (one thread), ns per call: median over %u rounds of the "
            "median of %u\nbatches of %u alloc(%u)+free pairs, (round min..max); a bare "
            "lock+unlock of a mutex\nof the heap lock's type in the same batches. shared: the "
            "locked heap is a shared heap\n(rtmem/shared.h, in a POSIX shm segment), against "
            "the same unlocked private heap; its\ntarget: a call at most %.2fx the unlocked "
            "one (locked/unlocked, median over the rounds)\n",
            b->o.rounds, COST_BATCHES, COST_PAIRS, COST_REQUEST, b->target);
    tk_table_header(f, cols, 8);
    for (unsigned t = 0; t < BENCH_LOCKS; t++) {
        if (!lock_ran(b, t))
            continue;
        const struct bench_lock_cost *c = &b->th.cost[t];
        const char *verdict = NULL;
        if (t == BENCH_LOCK_SHARED)
            verdict = b->th.cost_skipped[t][0] ? "skipped" : target_verdict(b, c);
        char buf[6][48];
        const char *cells[8] = {
            bench_lock_names[t],
            tk_fmt_double(buf[0], sizeof(buf[0]), c->bare, 1),
            tk_fmt_double(buf[1], sizeof(buf[1]), c->unlocked, 1),
            tk_fmt_double(buf[2], sizeof(buf[2]), c->locked, 1),
            spread(buf[3], sizeof(buf[3]), c->added, c->added_min, c->added_max, 1),
            spread(buf[4], sizeof(buf[4]), c->ratio, c->ratio_min, c->ratio_max, 2),
            spread(buf[5], sizeof(buf[5]), c->over_unlocked, c->over_unlocked_min,
                   c->over_unlocked_max, 2),
            verdict,
        };
        tk_table_row(f, cols, 8, cells);
    }
    if (!lock_ran(b, BENCH_LOCK_SHARED))
        return;
    const struct bench_lock_cost *c = &b->th.cost[BENCH_LOCK_SHARED];
    char r[TK_FMT_MAX], lo[TK_FMT_MAX];
    if (b->th.cost_skipped[BENCH_LOCK_SHARED][0])
        fprintf(f, "shared: skipped: %s\n", b->th.cost_skipped[BENCH_LOCK_SHARED]);
    else if (!isfinite(c->over_unlocked))
        fprintf(f, "shared: not measured (the phase stopped first)\n");
    else
        fprintf(f,
                "shared: a call on the shared heap costs %sx the unlocked private heap's; "
                "target <= %.2fx: %s\n",
                tk_fmt_double(r, sizeof(r), c->over_unlocked, 2), b->target, target_verdict(b, c));
    if (bench_target_unmet(b))
        fprintf(f,
                "TARGET NOT MET: the shared heap's call is more than %.2fx the unlocked one "
                "(rounds %s..%sx): the run fails (exit status 1)\n",
                b->target, tk_fmt_double(r, sizeof(r), c->over_unlocked_min, 2),
                tk_fmt_double(lo, sizeof(lo), c->over_unlocked_max, 2));
}

static void print_contended(FILE *f, const struct bench *b)
{
    enum {
        C_LOCK,
        C_THREAD,
        C_CPU,
        C_A50,
        C_A99,
        C_A999,
        C_AMAX,
        C_F50,
        C_F99,
        C_F999,
        C_FMAX,
        C_FAILED,
        N
    };
    static const struct tk_col cols[N] = {
        [C_LOCK] = { "lock", 7, true }, [C_THREAD] = { "thread", 6, false },
        [C_CPU] = { "cpu", 3, false },  [C_A50] = { "alloc p50", 9, false },
        [C_A99] = { "p99", 7, false },  [C_A999] = { "p99.9", 8, false },
        [C_AMAX] = { "max", 9, false }, [C_F50] = { "free p50", 8, false },
        [C_F99] = { "p99", 7, false },  [C_F999] = { "p99.9", 8, false },
        [C_FMAX] = { "max", 9, false }, [C_FAILED] = { "failed", 6, false },
    };
    fprintf(f,
            "\n%u threads on one %s heap (none: a heap per thread, unlocked; shared: a shared "
            "heap),\n%llu operations each, latency in ns (timer overhead included)\n",
            b->th.n_threads, b->o.threads_kind, (unsigned long long)b->o.thread_ops);
    tk_table_header(f, cols, N);
    for (unsigned t = 0; t < BENCH_LOCKS; t++) {
        if (!lock_ran(b, t) || b->th.contended_skipped[t][0])
            continue;
        for (unsigned i = 0; i < b->th.n_threads; i++) {
            const struct bench_thread_row *r = &b->th.rows[t][i];
            char buf[N][TK_FMT_MAX];
            const char *cells[N] = {
                [C_LOCK] = i == 0 ? bench_lock_names[t] : "",
                [C_THREAD] = tk_fmt_uint(buf[C_THREAD], TK_FMT_MAX, i),
                [C_CPU] = r->cpu >= 0 ? tk_fmt_uint(buf[C_CPU], TK_FMT_MAX, (unsigned)r->cpu) : "-",
                [C_A50] = tk_fmt_double(buf[C_A50], TK_FMT_MAX, r->alloc.p50, 1),
                [C_A99] = tk_fmt_double(buf[C_A99], TK_FMT_MAX, r->alloc.p99, 1),
                [C_A999] = tk_fmt_double(buf[C_A999], TK_FMT_MAX, r->alloc.p999, 1),
                [C_AMAX] = tk_fmt_double(buf[C_AMAX], TK_FMT_MAX, r->alloc.max, 1),
                [C_F50] = tk_fmt_double(buf[C_F50], TK_FMT_MAX, r->free.p50, 1),
                [C_F99] = tk_fmt_double(buf[C_F99], TK_FMT_MAX, r->free.p99, 1),
                [C_F999] = tk_fmt_double(buf[C_F999], TK_FMT_MAX, r->free.p999, 1),
                [C_FMAX] = tk_fmt_double(buf[C_FMAX], TK_FMT_MAX, r->free.max, 1),
                [C_FAILED] = tk_fmt_uint(buf[C_FAILED], TK_FMT_MAX, r->failed_allocs),
            };
            tk_table_row(f, cols, N, cells);
        }
    }
    for (unsigned t = 1; t < BENCH_LOCKS; t++)
        if (lock_ran(b, t) && b->th.lock_calls[t])
            fprintf(f, "lock %s: %llu of %llu calls found the lock held and waited (%.1f%%)\n",
                    bench_lock_names[t], (unsigned long long)b->th.lock_contended[t],
                    (unsigned long long)b->th.lock_calls[t],
                    100.0 * (double)b->th.lock_contended[t] / (double)b->th.lock_calls[t]);
    for (unsigned t = 0; t < BENCH_LOCKS; t++)
        if (lock_ran(b, t) && b->th.contended_skipped[t][0])
            fprintf(f, "%s: skipped: %s\n", bench_lock_names[t], b->th.contended_skipped[t]);
}

void bench_print_threads(FILE *f, const struct bench *b)
{
    const struct bench_threads *th = &b->th;
    if (!th->ran)
        return;
    fprintf(f, "\nthreads phase: %.2f s, heap kind %s\n", th->seconds, b->o.threads_kind);
    if (th->error[0])
        fprintf(f, "threads phase stopped: %s; its figures are incomplete\n", th->error);
    print_cost(f, b);
    print_contended(f, b);
    for (unsigned t = 0; t < BENCH_LOCKS; t++) {
        uint64_t failed = 0, errors = 0;
        for (unsigned i = 0; i < th->n_threads; i++) {
            failed += th->rows[t][i].failed_allocs;
            errors += th->rows[t][i].free_errors;
        }
        if (failed)
            fprintf(f, "note: threads phase, %s: %llu allocations failed (heap too small?)\n",
                    bench_lock_names[t], (unsigned long long)failed);
        if (errors)
            fprintf(f, "WARNING: threads phase, %s: %llu frees returned an error\n",
                    bench_lock_names[t], (unsigned long long)errors);
        if (th->check_failures[t])
            fprintf(f, "WARNING: threads phase, %s: heap check failed (or blocks left live)\n",
                    bench_lock_names[t]);
    }
}

static void json_rounds(struct tk_json *j, const char *key, const double *v, unsigned n)
{
    tk_json_key(j, key);
    tk_json_begin_array_compact(j);
    for (unsigned r = 0; r < n; r++)
        tk_json_double(j, v[r]);
    tk_json_end_array(j);
}

void bench_json_threads(struct tk_json *j, const struct bench *b)
{
    const struct bench_threads *th = &b->th;
    if (!tk_json_key_or_null(j, "threads", th->ran))
        return;
    tk_json_begin_object(j);
    tk_json_kv_string(j, "kind", b->o.threads_kind);
    tk_json_kv_uint(j, "threads", th->n_threads);
    tk_json_kv_uint(j, "ops_per_thread", b->o.thread_ops);
    tk_json_kv_bool(j, "sched_fifo", th->fifo);
    tk_json_kv_double(j, "seconds", th->seconds);
    tk_json_kv_string(j, "error", th->error[0] ? th->error : NULL);
    tk_json_key(j, "cpus");
    tk_json_begin_array_compact(j);
    for (unsigned i = 0; i < th->n_threads; i++)
        tk_json_int(j, th->cpus[i]);
    tk_json_end_array(j);

    tk_json_key(j, "uncontended");
    tk_json_begin_object(j);
    tk_json_kv_uint(j, "batches", COST_BATCHES);
    tk_json_kv_uint(j, "pairs_per_batch", COST_PAIRS);
    tk_json_kv_uint(j, "request_bytes", COST_REQUEST);
    tk_json_key(j, "locks");
    tk_json_begin_array(j);
    for (unsigned t = 0; t < BENCH_LOCKS; t++) {
        if (!lock_ran(b, t))
            continue;
        const struct bench_lock_cost *c = &th->cost[t];
        tk_json_begin_object(j);
        tk_json_kv_string(j, "lock", bench_lock_names[t]);
        tk_json_kv_string(j, "skipped", th->cost_skipped[t][0] ? th->cost_skipped[t] : NULL);
        tk_json_kv_double(j, "bare_lock_unlock_ns", c->bare);
        tk_json_kv_double(j, "call_unlocked_ns", c->unlocked);
        tk_json_kv_double(j, "call_locked_ns", c->locked);
        tk_json_kv_double(j, "added_per_call_ns", c->added);
        tk_json_kv_double(j, "added_per_call_ns_round_min", c->added_min);
        tk_json_kv_double(j, "added_per_call_ns_round_max", c->added_max);
        tk_json_kv_double(j, "added_over_bare", c->ratio);
        tk_json_kv_double(j, "added_over_bare_round_min", c->ratio_min);
        tk_json_kv_double(j, "added_over_bare_round_max", c->ratio_max);
        tk_json_kv_double(j, "call_locked_over_unlocked", c->over_unlocked);
        tk_json_kv_double(j, "call_locked_over_unlocked_round_min", c->over_unlocked_min);
        tk_json_kv_double(j, "call_locked_over_unlocked_round_max", c->over_unlocked_max);
        if (tk_json_key_or_null(j, "target", t == BENCH_LOCK_SHARED)) {
            tk_json_begin_object(j);
            tk_json_kv_double(j, "call_locked_over_unlocked_max", b->target);
            tk_json_key(j, "met");
            if (isfinite(c->over_unlocked))
                tk_json_bool(j, c->over_unlocked <= b->target);
            else
                tk_json_null(j);
            tk_json_end_object(j);
        }
        json_rounds(j, "rounds_bare_lock_unlock_ns", c->bare_ns, b->o.rounds);
        json_rounds(j, "rounds_call_unlocked_ns", c->unlocked_ns, b->o.rounds);
        json_rounds(j, "rounds_call_locked_ns", c->locked_ns, b->o.rounds);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_end_object(j);

    tk_json_key(j, "contended");
    tk_json_begin_array(j);
    for (unsigned t = 0; t < BENCH_LOCKS; t++) {
        if (!lock_ran(b, t))
            continue;
        tk_json_begin_object(j);
        tk_json_kv_string(j, "lock", bench_lock_names[t]);
        tk_json_kv_string(j, "heap", t == BENCH_LOCK_NONE ? "one per thread" : "shared");
        const char *skipped = th->contended_skipped[t][0] ? th->contended_skipped[t] : NULL;
        tk_json_kv_string(j, "skipped", skipped);
        tk_json_kv_uint(j, "lock_calls", th->lock_calls[t]);
        tk_json_kv_uint(j, "lock_contended", th->lock_contended[t]);
        tk_json_kv_uint(j, "heap_check_failures", th->check_failures[t]);
        tk_json_key(j, "threads");
        tk_json_begin_array(j);
        for (unsigned i = 0; i < (skipped ? 0 : th->n_threads); i++) {
            const struct bench_thread_row *r = &th->rows[t][i];
            tk_json_begin_object(j);
            tk_json_kv_uint(j, "thread", i);
            tk_json_kv_int(j, "cpu", r->cpu);
            tk_json_kv_uint(j, "failed_allocs", r->failed_allocs);
            tk_json_kv_uint(j, "skipped_frees", r->skipped_frees);
            tk_json_kv_uint(j, "free_errors", r->free_errors);
            tk_summary_json(j, "alloc", "avg_ns", &r->alloc);
            tk_summary_json(j, "free", "avg_ns", &r->free);
            tk_json_end_object(j);
        }
        tk_json_end_array(j);
        tk_json_end_object(j);
    }
    tk_json_end_array(j);
    tk_json_end_object(j);
}
