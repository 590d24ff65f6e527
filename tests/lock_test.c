/*
 * Locked heaps (rtmem/lock.h), beyond the conformance suite run on them
 * (`conformance --lock`):
 *
 *   lock_test layout          where the lock goes and what it costs in
 *                             memory, for every kind and lock type; what is
 *                             refused; a call from inside a call (EDEADLK)
 *   lock_test threads KIND    threads allocating, writing, verifying and
 *                             freeing in one heap of KIND, and a monitor
 *                             reading its statistics, for about a second
 *                             under each lock type
 *   lock_test robust          a holder that dies: a thread, a process, one
 *                             that damaged the heap, and processes killed at
 *                             random while they allocate
 *   lock_test pi              priority inheritance at work: on one CPU, a
 *                             low-priority holder is boosted while a
 *                             high-priority thread waits, so that a
 *                             middle-priority thread cannot hold the waiter
 *                             up; a plain mutex in the same scene is held up.
 *                             Needs SCHED_FIFO: without it, says so and exits
 *                             77 (CTest: skipped).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rtmem/pageheap_api.h"
#include "rtmem/rtmem.h"
#include "../src/lock/lock.h"
#include "../src/heap/undo.h"
#include "heap_layout.h"

#define SKIPPED 77

/* The kinds whose blocks carry a header (TLSF, halffit, xvheap), as
 * against heapmem and xnheap (whose free runs keep their metadata in their
 * first page). */
static bool header_kind(const char *kind)
{
    return strcmp(kind, "tlsf") == 0 || strcmp(kind, "halffit") == 0 || strcmp(kind, "xvheap") == 0;
}

/* What a kind's memory is rounded to (rtm_heap_lock_bytes): its pages. */
static size_t kind_rounding(const char *kind)
{
    if (strcmp(kind, "xvheap") == 0 || strcmp(kind, "zsheap") == 0)
        return RTM_XVHEAP_PAGE_SIZE;
    return strcmp(kind, "tlsf") == 0 || strcmp(kind, "halffit") == 0 ? 0 : RTM_PAGEHEAP_PAGE_SIZE;
}

static const int lock_types[] = { RTM_HEAP_LOCK_PI, RTM_HEAP_LOCK_ROBUST_SHARED };
#define N_LOCK_TYPES (sizeof(lock_types) / sizeof(lock_types[0]))

static const char *lock_name(int type)
{
    return type == RTM_HEAP_LOCK_PI              ? "pi"
           : type == RTM_HEAP_LOCK_ROBUST_SHARED ? "robust"
                                                 : "none";
}

static unsigned char *map_shared(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static struct rtm_heap *create_locked(const char *kind, void *mem, size_t size, int lock)
{
    struct rtm_heap_config cfg = { .lock = lock };
    return rtm_heap_create_ex(kind, mem, size, &cfg);
}

static struct rtm_heap_stats stats_of(const struct rtm_heap *h)
{
    struct rtm_heap_stats st;
    memset(&st, 0, sizeof(st));
    CHECK_EQ(rtm_heap_stats(h, &st), 0);
    return st;
}

static struct rtm_heap_lock_stats lock_stats_of(const struct rtm_heap *h)
{
    struct rtm_heap_lock_stats ls;
    memset(&ls, 0, sizeof(ls));
    CHECK_EQ(rtm_heap_lock_stats(h, &ls), 0);
    return ls;
}

static uint64_t now_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- layout ------------------------------------------------------------------------ */

static unsigned char arena[1u << 20] __attribute__((aligned(4096)));

static uintptr_t align_up(uintptr_t v, size_t a)
{
    return (v + a - 1) & ~(uintptr_t)(a - 1);
}

/* What rtm_heap_lock_bytes promises: a heap of kind under lock has at most
 * that many usable bytes fewer than an unlocked one in the same memory, at
 * every size (sizes from 4 KiB up, a few bytes apart, cross every
 * rounding of the page heaps). */
static void lock_bytes_bound(const char *kind, int lock, size_t trim)
{
    (void)trim; /* the same memory at every trim, as before */
    static unsigned char mem[64u << 10] __attribute__((aligned(64)));
    for (size_t sz = 4096; sz < sizeof mem; sz = sz * 9 / 8 + 8) {
        struct rtm_heap *a = rtm_heap_create(kind, mem, sz);
        struct rtm_heap_stats sa = { 0 };
        if (a) {
            sa = stats_of(a);
            rtm_heap_destroy(a);
        }
        struct rtm_heap *b = create_locked(kind, mem, sz, lock);
        if (!b) { /* too small: then the unlocked one had little room too */
            CHECK(!a || sa.usable_bytes <= rtm_heap_lock_bytes(kind, lock, sz) + 1024);
            continue;
        }
        struct rtm_heap_stats sb = stats_of(b);
        rtm_heap_destroy(b);
        CHECK(a != NULL);
        CHECK(sa.usable_bytes - sb.usable_bytes <= rtm_heap_lock_bytes(kind, lock, sz));
    }
}

static unsigned handler_calls;
static int handler_alloc_errno, handler_stats_rc, handler_free_rc;

/* Calls back into the heap it was called for: each call must refuse. */
static void call_back(const struct rtm_heap_corruption *c, void *arg)
{
    struct rtm_heap *h = arg;
    struct rtm_heap_stats st;
    handler_calls++;
    CHECK(c->heap == h);
    errno = 0;
    CHECK(rtm_heap_alloc(h, 16) == NULL);
    handler_alloc_errno = errno;
    handler_stats_rc = rtm_heap_stats(h, &st);
    handler_free_rc = rtm_heap_free(h, NULL);
}

/* A locked heap's memory at a trim: the lock area first, aligned; on a
 * robust heap its undo log next, sized for its kind and memory (and an
 * owner record of rec bytes in every block); then the kind's heap exactly
 * as an unlocked heap created on the rest of the memory. */
struct locked_layout {
    unsigned char *mem, *rest;
    size_t size, log, rec, rest_size;
    uintptr_t area;
};

static struct locked_layout layout_at(const char *kind, int lock, size_t trim)
{
    struct locked_layout l = { .mem = arena + trim, .size = (256u << 10) - trim };
    l.area = align_up((uintptr_t)l.mem, RTM_HEAP_LOCK_ALIGN);
    uint32_t kind_id = 0;
    while (strcmp(rtm_heap_kinds()[kind_id], kind) != 0)
        kind_id++;
    bool robust = lock == RTM_HEAP_LOCK_ROBUST_SHARED;
    l.log = robust ? rtm_undo_bytes(rtm__undo_capacity(kind_id, l.size)) : 0;
    l.rec = robust ? 16 : 0;
    l.rest = (unsigned char *)l.area + RTM_HEAP_LOCK_AREA_BYTES + l.log;
    l.rest_size = (size_t)(l.mem + l.size - l.rest);
    return l;
}

static void layout_figures(const char *kind, int lock, size_t trim)
{
    struct locked_layout l = layout_at(kind, lock, trim);
    /* The kind's heap on the rest, unlocked: the figures to match. */
    struct rtm_heap *u = rtm_heap_create(kind, l.rest, l.rest_size);
    REQUIRE(u != NULL, );
    struct rtm_heap_stats us = stats_of(u);
    size_t fills[] = { 0, 16, 100, 300, 1000, 5000 };
    size_t ufill[6];
    for (int i = 0; i < 6; i++)
        ufill[i] = rtm_heap_fill_count(u, fills[i] + l.rec);
    ptrdiff_t uoff = (unsigned char *)u - l.rest;
    rtm_heap_destroy(u);

    struct rtm_heap *h = create_locked(kind, l.mem, l.size, lock);
    REQUIRE(h != NULL, );
    CHECK_EQ((unsigned char *)h - l.rest, uoff); /* the same place in the rest */
    CHECK_EQ(rtm_heap_lock_type(h), lock);
    struct rtm_heap_stats st = stats_of(h);
    CHECK_EQ(st.usable_bytes, us.usable_bytes);
    CHECK_EQ(st.overhead_bytes, us.overhead_bytes + (size_t)(l.rest - l.mem));
    CHECK_EQ(st.usable_bytes + st.overhead_bytes, l.size);
    CHECK(st.overhead_bytes - us.overhead_bytes <= RTM_HEAP_LOCK_OVERHEAD_MAX + l.log);
    CHECK_EQ(rtm__heap_undo_bytes(h), l.log);
    size_t rounding = kind_rounding(kind);
    CHECK_EQ(rtm_heap_lock_bytes(kind, lock, l.size),
             RTM_HEAP_LOCK_OVERHEAD_MAX + l.log + rounding);
    for (int i = 0; i < 6; i++)
        CHECK_EQ(rtm_heap_fill_count(h, fills[i]), ufill[i]);
    rtm_heap_destroy(h);
}

static void layout_stats_and_pools(const char *kind, int lock, size_t trim)
{
    struct locked_layout l = layout_at(kind, lock, trim);
    struct rtm_heap *h = create_locked(kind, l.mem, l.size, lock);
    REQUIRE(h != NULL, );
    struct rtm_heap_lock_stats ls = lock_stats_of(h);
    CHECK_EQ(ls.type, lock);
    CHECK_EQ(ls.recoverable, 1);
    CHECK_EQ(ls.owner_deaths, 0);
    CHECK_EQ(ls.contended, 0);
    uint64_t calls = ls.calls;
    void *p = rtm_heap_alloc(h, 100);
    CHECK(p != NULL);
    CHECK_EQ(rtm_heap_free(h, p), 0);
    CHECK_EQ(lock_stats_of(h).calls, calls + 2);

    /* A pool may not overlap the lock area, nor the trim before it. */
    CHECK_EQ(rtm_heap_add_pool(h, (void *)l.area, 4096), -EINVAL);
    CHECK_EQ(rtm_heap_add_pool(h, (void *)(l.area + RTM_HEAP_LOCK_AREA_BYTES - 1), 4096), -EINVAL);
    if (l.area > (uintptr_t)l.mem)
        CHECK_EQ(rtm_heap_add_pool(h, l.mem - 4096, 4097), -EINVAL);
    CHECK_EQ(rtm_heap_add_pool(h, arena + (512u << 10), 64u << 10), 0);
    CHECK_EQ(stats_of(h).pool_count, 2);
    CHECK_EQ(rtm_heap_check(h), 0);
    rtm_heap_destroy(h);
    CHECK_EQ(rtm_heap_lock_type(h), -EINVAL);
}

/* Runs a check for every kind and lock type, at trims of 0 to 78 bytes. */
static void each_kind_and_lock(void (*check)(const char *kind, int lock, size_t trim))
{
    static char ctx[64];
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        for (size_t t = 0; t < N_LOCK_TYPES; t++) {
            snprintf(ctx, sizeof(ctx), "layout %s/%s", *k, lock_name(lock_types[t]));
            test_context = ctx;
            for (size_t trim = 0; trim < 80; trim += 13)
                check(*k, lock_types[t], trim);
        }
}

TEST_CASE_IN("layout", "a locked heap is the kind's heap on the memory after its lock area")
{
    each_kind_and_lock(layout_figures);
}

TEST_CASE_IN("layout", "a lock costs at most rtm_heap_lock_bytes at every size")
{
    each_kind_and_lock(lock_bytes_bound);
}

TEST_CASE_IN("layout", "a locked heap counts its calls and keeps pools off its lock area")
{
    each_kind_and_lock(layout_stats_and_pools);
}

/* Runs a check for every kind, the kind as its context. */
static void each_kind(void (*check)(const char *kind))
{
    static char ctx[64];
    for (const char *const *k = rtm_heap_kinds(); *k; k++) {
        snprintf(ctx, sizeof(ctx), "layout %s", *k);
        test_context = ctx;
        check(*k);
    }
}

/* No lock: rtm_heap_create's heap, at the same place, same figures. */
static void no_lock(const char *kind)
{
    struct rtm_heap_config none = { .lock = RTM_HEAP_LOCK_NONE };
    struct rtm_heap *a = rtm_heap_create(kind, arena + 3, 100000);
    REQUIRE(a != NULL, );
    struct rtm_heap_stats sa = stats_of(a);
    rtm_heap_destroy(a);
    struct rtm_heap *b = rtm_heap_create_ex(kind, arena + 3, 100000, &none);
    REQUIRE(b != NULL, );
    CHECK(a == b);
    struct rtm_heap_stats sb = stats_of(b);
    CHECK(memcmp(&sa, &sb, sizeof(sa)) == 0);
    CHECK_EQ(rtm_heap_lock_type(b), RTM_HEAP_LOCK_NONE);
    struct rtm_heap_lock_stats ls = lock_stats_of(b);
    CHECK(ls.type == RTM_HEAP_LOCK_NONE && ls.recoverable == 1 && ls.calls == 0);
    CHECK_EQ(rtm__heap_lock_hold(b), -EINVAL);
    rtm_heap_destroy(b);
}

TEST_CASE_IN("layout", "no lock gives the heap rtm_heap_create gives")
{
    each_kind(no_lock);
}

/* Refused: unknown lock types; memory too small for the lock area and a
 * heap. */
static void refused_locks(const char *kind)
{
    for (int bad = -1; bad <= 3; bad += 4) {
        struct rtm_heap_config c = { .lock = bad };
        errno = 0;
        CHECK(rtm_heap_create_ex(kind, arena, sizeof(arena), &c) == NULL && errno == EINVAL);
    }
    errno = 0;
    CHECK(create_locked(kind, arena, RTM_HEAP_LOCK_AREA_BYTES, RTM_HEAP_LOCK_PI) == NULL &&
          errno == ENOMEM);
    errno = 0;
    CHECK(create_locked(kind, arena, 100, RTM_HEAP_LOCK_PI) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(create_locked(kind, NULL, 4096, RTM_HEAP_LOCK_PI) == NULL && errno == EINVAL);
}

TEST_CASE_IN("layout", "unknown lock types and memory too small for a lock are refused")
{
    each_kind(refused_locks);
}

TEST_CASE_IN("layout", "the typed fronts refuse a lock")
{
    struct rtm_heap_config pi = { .lock = RTM_HEAP_LOCK_PI };
    errno = 0;
    CHECK(rtm_tlsf_create_ex(arena, sizeof(arena), &pi) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(rtm_heapmem_create_ex(arena, sizeof(arena), &pi) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(rtm_xnheap_create_ex(arena, sizeof(arena), &pi) == NULL && errno == EINVAL);
}

/* A thread that holds the lock and calls the heap gets EDEADLK, never a
 * deadlock: through the test hook here, and from a corruption handler
 * below. */
TEST_CASE_IN("layout", "a call from inside a call gets EDEADLK")
{
    struct rtm_heap *h = create_locked("tlsf", arena, 64u << 10, RTM_HEAP_LOCK_ROBUST_SHARED);
    REQUIRE(h != NULL, );
    CHECK_EQ(rtm__heap_lock_hold(h), 0);
    errno = 0;
    CHECK(rtm_heap_alloc(h, 16) == NULL && errno == EDEADLK);
    CHECK_EQ(rtm_heap_free(h, NULL), -EDEADLK);
    CHECK_EQ(rtm_heap_check(h), -EDEADLK);
    CHECK_EQ(rtm_heap_usable_size(h, arena), 0);
    CHECK_EQ(rtm_heap_set_corruption_handler(h, NULL, NULL), -EDEADLK);
    CHECK_EQ(rtm__heap_lock_release(h), 0);
    CHECK_EQ(rtm_heap_check(h), 0);
    rtm_heap_destroy(h);
}

/* A thread that holds a PI heap's lock and does not give it back: with a
 * timeout, another thread's call gives up after it (never sooner),
 * counted; a timeout needs a lock. */
struct sitter {
    struct rtm_heap *h;
    pthread_mutex_t m;
    pthread_cond_t c;
    int held, done;
};

static void *hold_until_done(void *arg)
{
    struct sitter *t = arg;
    int rc = rtm__heap_lock_hold(t->h);
    pthread_mutex_lock(&t->m);
    t->held = rc == 0 ? 1 : -1;
    pthread_cond_broadcast(&t->c);
    while (!t->done)
        pthread_cond_wait(&t->c, &t->m);
    pthread_mutex_unlock(&t->m);
    if (rc == 0)
        rtm__heap_lock_release(t->h);
    return NULL;
}

TEST_CASE_IN("layout", "a call that waits longer than the heap's timeout gives up, counted")
{
    struct rtm_heap_config cfg = { .lock = RTM_HEAP_LOCK_PI, .lock_timeout_us = 20000 };
    struct rtm_heap *h = rtm_heap_create_ex("tlsf", arena, 64u << 10, &cfg);
    REQUIRE(h != NULL, );
    alarm(30); /* a timeout that does not work must not hang the suite */
    struct sitter t = { .h = h, .m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER };
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, hold_until_done, &t) == 0, );
    pthread_mutex_lock(&t.m);
    while (!t.held)
        pthread_cond_wait(&t.c, &t.m);
    pthread_mutex_unlock(&t.m);
    CHECK_EQ(t.held, 1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    errno = 0;
    CHECK(rtm_heap_alloc(h, 16) == NULL && errno == ETIMEDOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK((t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000 >= 20000);
    CHECK_EQ(rtm_heap_free(h, NULL), -ETIMEDOUT);
    struct rtm_heap_lock_stats ls = lock_stats_of(h);
    CHECK_EQ(ls.timeout_us, 20000);
    CHECK_EQ(ls.timeouts, 2);
    pthread_mutex_lock(&t.m);
    t.done = 1;
    pthread_cond_broadcast(&t.c);
    pthread_mutex_unlock(&t.m);
    pthread_join(th, NULL);
    void *p = rtm_heap_alloc(h, 16);
    CHECK(p != NULL);
    CHECK_EQ(rtm_heap_free(h, p), 0);
    CHECK_EQ(lock_stats_of(h).timeouts, 2);
    CHECK_EQ(rtm_heap_set_lock_timeout(h, 0), 0);
    CHECK_EQ(lock_stats_of(h).timeout_us, 0);
    rtm_heap_destroy(h);
    /* no lock, no timeout */
    struct rtm_heap_config unlocked = { .lock_timeout_us = 1000 };
    errno = 0;
    CHECK(rtm_heap_create_ex("tlsf", arena, 64u << 10, &unlocked) == NULL && errno == EINVAL);
    struct rtm_heap *u = rtm_heap_create("tlsf", arena, 64u << 10);
    REQUIRE(u != NULL, );
    CHECK_EQ(rtm_heap_set_lock_timeout(u, 1000), -EINVAL);
    rtm_heap_destroy(u);
    alarm(0);
}

/* A handler is an address in one process: a heap shared between processes
 * takes none, at create or later; clearing is allowed. */
TEST_CASE_IN("layout", "a heap shared between processes takes no corruption handler")
{
    struct rtm_heap *h = create_locked("tlsf", arena, 64u << 10, RTM_HEAP_LOCK_ROBUST_SHARED);
    REQUIRE(h != NULL, );
    CHECK_EQ(rtm_heap_set_corruption_handler(h, call_back, h), -EINVAL);
    CHECK_EQ(rtm_heap_set_corruption_handler(h, NULL, NULL), 0);
    struct rtm_heap_config with_handler = { .lock = RTM_HEAP_LOCK_ROBUST_SHARED,
                                            .on_corruption = call_back };
    static unsigned char other[64u << 10];
    errno = 0;
    CHECK(rtm_heap_create_ex("tlsf", other, sizeof(other), &with_handler) == NULL &&
          errno == EINVAL);
    rtm_heap_destroy(h);
}

/* TLSF: a header overwritten past the block before calls the handler,
 * whose calls back into the heap are refused. */
TEST_CASE_IN("layout", "a corruption handler calling its heap gets EDEADLK")
{
    struct rtm_heap *h = create_locked("tlsf", arena, 64u << 10, RTM_HEAP_LOCK_PI);
    REQUIRE(h != NULL, );
    CHECK_EQ(rtm_heap_set_corruption_handler(h, call_back, h), 0);
    unsigned char *p = rtm_heap_alloc(h, 24), *q = rtm_heap_alloc(h, 24);
    REQUIRE(p && q, );
    /* q's header (right after p's payload) now claims a block past the
     * pool (its low word: on 32-bit the tag's word stays as it was) */
    size_t bad = (size_t)1 << 30;
    memcpy(p + rtm_heap_usable_size(h, p), &bad, sizeof(bad));
    CHECK_EQ(rtm_heap_free(h, q), -EFAULT);
    CHECK_EQ(handler_calls, 1);
    CHECK_EQ(handler_alloc_errno, EDEADLK);
    CHECK_EQ(handler_stats_rc, -EDEADLK);
    CHECK_EQ(handler_free_rc, -EDEADLK);
    CHECK_EQ(stats_of(h).corruptions, 1);
    rtm_heap_destroy(h);
}

/* ---- threads ------------------------------------------------------------------------ */

#define WORKERS        4
#define WORKER_LIVE    48
#define THREADS_HEAP   (2u << 20)
#define THREADS_NS     1000000000ull /* per lock type */
#define MAX_WORKER_REQ 3000

struct worker {
    pthread_t tid;
    struct rtm_heap *h;
    unsigned id;
    uint64_t seed;
    _Atomic bool *stop;
    /* results, read after join */
    uint64_t ops, failed_allocs, bad_contents, bad_frees, bad_usable;
};

struct live_block {
    unsigned char *p;
    size_t size;
    uint8_t tag;
};

static uint8_t tag_of(unsigned id, uint64_t seq)
{
    return (uint8_t)(id * 61 + seq * 7 + 1);
}

static void fill(unsigned char *p, size_t n, uint8_t tag)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(tag + i);
}

static bool intact(const unsigned char *p, size_t n, uint8_t tag)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (uint8_t)(tag + i))
            return false;
    return true;
}

/* Allocates (one of alloc, aligned_alloc, calloc), writes and keeps; or
 * verifies and frees (or reallocs) a block it holds. Each block's contents
 * name their owner and allocation: another thread's block overlapping it
 * would change them. */
static void *worker_run(void *arg)
{
    struct worker *w = arg;
    struct live_block live[WORKER_LIVE];
    size_t n = 0;
    uint64_t seq = 0;
    while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
        uint64_t r = rng_next(&w->seed);
        bool take = n == 0 || (n < WORKER_LIVE && (r & 1));
        if (take) {
            size_t size = (size_t)(r >> 8) % MAX_WORKER_REQ;
            unsigned char *p;
            switch ((r >> 4) % 4) {
            case 0: p = rtm_heap_aligned_alloc(w->h, (size_t)64 << (r >> 40) % 4, size); break;
            case 1:
                p = rtm_heap_calloc(w->h, 1, size);
                for (size_t i = 0; p && i < size; i++)
                    w->bad_contents += p[i] != 0;
                break;
            default: p = rtm_heap_alloc(w->h, size); break;
            }
            if (!p) {
                w->failed_allocs++;
                continue;
            }
            w->bad_usable += rtm_heap_usable_size(w->h, p) < size;
            uint8_t tag = tag_of(w->id, ++seq);
            fill(p, size, tag);
            live[n++] = (struct live_block){ p, size, tag };
        } else {
            size_t i = (size_t)(r >> 8) % n;
            struct live_block *b = &live[i];
            w->bad_contents += !intact(b->p, b->size, b->tag);
            if ((r >> 4) % 8 == 0) {
                size_t size = (size_t)(r >> 24) % MAX_WORKER_REQ;
                unsigned char *q = rtm_heap_realloc(w->h, b->p, size);
                if (q) {
                    size_t kept = size < b->size ? size : b->size;
                    w->bad_contents += !intact(q, kept, b->tag);
                    b->tag = tag_of(w->id, ++seq);
                    fill(q, size, b->tag);
                    b->p = q;
                    b->size = size;
                } else {
                    w->failed_allocs++;
                }
            } else {
                w->bad_frees += rtm_heap_free(w->h, b->p) != 0;
                live[i] = live[--n];
            }
        }
        w->ops++;
    }
    for (size_t i = 0; i < n; i++) {
        w->bad_contents += !intact(live[i].p, live[i].size, live[i].tag);
        w->bad_frees += rtm_heap_free(w->h, live[i].p) != 0;
    }
    return NULL;
}

struct monitor {
    struct rtm_heap *h;
    size_t given;
    _Atomic bool *stop;
    uint64_t reads, bad;
};

/* Reads the statistics while the workers allocate: every snapshot must be
 * consistent in itself, and the counters that never decrease must not. */
static void *monitor_run(void *arg)
{
    struct monitor *m = arg;
    uint64_t peak = 0, failed = 0, calls = 0;
    while (!atomic_load_explicit(m->stop, memory_order_relaxed)) {
        struct rtm_heap_stats st;
        struct rtm_heap_lock_stats ls;
        if (rtm_heap_stats(m->h, &st) != 0 || rtm_heap_lock_stats(m->h, &ls) != 0) {
            m->bad++;
            continue;
        }
        m->bad += st.used_bytes + st.free_bytes != st.usable_bytes;
        m->bad += st.usable_bytes + st.overhead_bytes != m->given;
        m->bad += st.used_bytes > st.peak_used_bytes || st.peak_used_bytes < peak;
        m->bad += st.failed_allocs < failed || st.corruptions != 0;
        m->bad += st.live_blocks > WORKERS * WORKER_LIVE;
        m->bad += (st.live_blocks == 0) != (st.used_bytes == 0);
        m->bad += ls.calls < calls || ls.contended > ls.calls || ls.owner_deaths != 0;
        peak = st.peak_used_bytes;
        failed = st.failed_allocs;
        calls = ls.calls;
        m->reads++;
        sched_yield();
    }
    return NULL;
}

static void threads_one(const char *kind, int lock, uint64_t seed)
{
    unsigned char *mem = map_shared(THREADS_HEAP);
    REQUIRE(mem != NULL, );
    struct rtm_heap *h = create_locked(kind, mem, THREADS_HEAP, lock);
    REQUIRE(h != NULL, );
    _Atomic bool stop = false;
    struct worker w[WORKERS];
    struct monitor m = { h, THREADS_HEAP, &stop, 0, 0 };
    pthread_t mt;
    for (unsigned i = 0; i < WORKERS; i++) {
        w[i] = (struct worker){ .h = h, .id = i, .seed = seed + i, .stop = &stop };
        REQUIRE(pthread_create(&w[i].tid, NULL, worker_run, &w[i]) == 0, );
    }
    REQUIRE(pthread_create(&mt, NULL, monitor_run, &m) == 0, );
    struct timespec run = { (time_t)(THREADS_NS / 1000000000u), (long)(THREADS_NS % 1000000000u) };
    nanosleep(&run, NULL);
    atomic_store(&stop, true);
    uint64_t ops = 0, failed = 0;
    for (unsigned i = 0; i < WORKERS; i++) {
        pthread_join(w[i].tid, NULL);
        CHECK_EQ(w[i].bad_contents, 0);
        CHECK_EQ(w[i].bad_frees, 0);
        CHECK_EQ(w[i].bad_usable, 0);
        CHECK(w[i].ops > 0);
        ops += w[i].ops;
        failed += w[i].failed_allocs;
    }
    pthread_join(mt, NULL);
    CHECK_EQ(m.bad, 0);
    CHECK(m.reads > 0);
    struct rtm_heap_stats st = stats_of(h);
    CHECK_EQ(st.used_bytes, 0);
    CHECK_EQ(st.live_blocks, 0);
    CHECK_EQ(st.failed_allocs, failed);
    CHECK_EQ(rtm_heap_check(h), 0);
    struct rtm_heap_lock_stats ls = lock_stats_of(h);
    CHECK(ls.calls >= ops);
    printf("  %-8s %-7s %u threads: %llu operations, %llu failed allocations, %llu monitor "
           "reads; the lock taken %llu times, %llu of them after a wait\n",
           kind, lock_name(lock), WORKERS, (unsigned long long)ops, (unsigned long long)failed,
           (unsigned long long)m.reads, (unsigned long long)ls.calls,
           (unsigned long long)ls.contended);
    rtm_heap_destroy(h);
    munmap(mem, THREADS_HEAP);
}

/* The kind is the argument after the group: lock_test threads KIND (main
 * has checked that it names one). */
static void threads_under(int lock, uint64_t seed)
{
    static char ctx[64];
    const char *kind = test_argv[0];
    snprintf(ctx, sizeof(ctx), "threads %s/%s", kind, lock_name(lock));
    test_context = ctx;
    threads_one(kind, lock, seed);
}

TEST_CASE_IN("threads", "threads share a PI-locked heap and lose nothing")
{
    threads_under(RTM_HEAP_LOCK_PI, 0x10c4);
}

TEST_CASE_IN("threads", "threads share a robust-locked heap and lose nothing")
{
    threads_under(RTM_HEAP_LOCK_ROBUST_SHARED, 0x10c5);
}

/* ---- robust: a holder that dies ------------------------------------------------------ */

#define ROBUST_HEAP (64u << 10)

struct holder {
    struct rtm_heap *h;
    int rc;
};

static void *hold_then_end(void *arg)
{
    struct holder *t = arg;
    t->rc = rtm__heap_lock_hold(t->h);
    return NULL; /* ends holding the lock */
}

/* The heap works after a dead holder that left it intact. */
static void expect_recovered(struct rtm_heap *h, uint64_t deaths)
{
    void *p = rtm_heap_alloc(h, 200);
    CHECK(p != NULL);
    struct rtm_heap_lock_stats ls = lock_stats_of(h);
    CHECK_EQ(ls.owner_deaths, deaths);
    CHECK_EQ(ls.recovered, deaths);
    CHECK_EQ(ls.recoverable, 1);
    CHECK_EQ(rtm_heap_free(h, p), 0);
    CHECK_EQ(rtm_heap_check(h), 0);
}

/* Every call of a heap whose dead holder damaged it fails (block: one of
 * its blocks). */
static void expect_unrecoverable(struct rtm_heap *h, void *block)
{
    errno = 0;
    CHECK(rtm_heap_alloc(h, 16) == NULL && errno == ENOTRECOVERABLE);
    CHECK_EQ(lock_stats_of(h).recoverable, 0);
    struct rtm_heap_stats st;
    CHECK_EQ(rtm_heap_stats(h, &st), -ENOTRECOVERABLE);
    CHECK_EQ(rtm_heap_free(h, block), -ENOTRECOVERABLE);
    CHECK_EQ(rtm_heap_check(h), -ENOTRECOVERABLE);
    CHECK_EQ(rtm_heap_add_pool(h, arena, sizeof(arena)), -ENOTRECOVERABLE);
    errno = 0;
    CHECK(rtm_heap_calloc(h, 2, 8) == NULL && errno == ENOTRECOVERABLE);
    CHECK(rtm_heap_realloc(h, block, 8) == NULL);
    CHECK_EQ(rtm_heap_usable_size(h, block), 0);
    CHECK_EQ(rtm_heap_fill_count(h, 16), 0);
}

/* Damage that the kind's check finds, as a holder dying halfway through an
 * operation leaves: TLSF and halffit, a live block's header (its tagged
 * word, the last before the block); heapmem and xnheap, the guard of a
 * free page run between two live ones; zsheap, a zspage's bitmap. */
static void damage(const char *kind, struct rtm_heap *h, void **blocks, size_t n)
{
    if (header_kind(kind)) {
        memset((unsigned char *)blocks[n / 2] - 8, 0x77, 8);
        return;
    }
    if (strcmp(kind, "zsheap") == 0) {
        /* no metadata in its pages: the first word of the descriptors of
         * the block's page and the three before it, one of which is its
         * zspage's first page's (its bitmap of free objects) */
        struct heap_layout l;
        REQUIRE(heap_layout_find(h, &l), );
        size_t page =
            ((size_t)((unsigned char *)blocks[n / 2] - (unsigned char *)h) - *l.xv.first) /
            RTM_ZSHEAP_PAGE_SIZE;
        for (size_t i = page > 3 ? page - 3 : 0; i <= page; i++)
            memset((unsigned char *)h + *l.xv.stack + i * RTM_ZSHEAP_PAGE_DESC, 0x77, 8);
        return;
    }
    memset(blocks[n / 2], 0x77, 8); /* freed by the caller: a run's first page */
}

/* Runs a check for every kind, the kind as its context. */
static void each_robust_kind(void (*check)(const char *kind))
{
    static char ctx[64];
    for (const char *const *k = rtm_heap_kinds(); *k; k++) {
        snprintf(ctx, sizeof(ctx), "robust %s", *k);
        test_context = ctx;
        check(*k);
    }
}

/* A thread ends holding the lock: the heap has seen deaths owner deaths,
 * all recovered from, since it was made. */
static void thread_dies_holding(struct rtm_heap *h, uint64_t deaths)
{
    struct holder t = { h, -1 };
    pthread_t tid;
    REQUIRE(pthread_create(&tid, NULL, hold_then_end, &t) == 0, );
    pthread_join(tid, NULL);
    CHECK_EQ(t.rc, 0);
    expect_recovered(h, deaths);
}

/* A process dies holding it: exits (sig 0), or killed by sig. */
static void process_dies_holding(struct rtm_heap *h, int sig, uint64_t deaths)
{
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0, );
    if (pid == 0) {
        if (rtm__heap_lock_hold(h) != 0)
            test_exit(3);
        if (sig)
            raise(sig);
        test_exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(sig ? WIFSIGNALED(status) : WIFEXITED(status) && WEXITSTATUS(status) == 0);
    expect_recovered(h, deaths);
}

static void thread_death(const char *kind)
{
    unsigned char *mem = map_shared(ROBUST_HEAP);
    REQUIRE(mem != NULL, );
    struct rtm_heap *h = create_locked(kind, mem, ROBUST_HEAP, RTM_HEAP_LOCK_ROBUST_SHARED);
    REQUIRE(h != NULL, );
    thread_dies_holding(h, 1);
    munmap(mem, ROBUST_HEAP);
}

TEST_CASE_IN("robust", "a thread that ends holding the lock is recovered from")
{
    each_robust_kind(thread_death);
}

static void process_death(const char *kind)
{
    unsigned char *mem = map_shared(ROBUST_HEAP);
    REQUIRE(mem != NULL, );
    struct rtm_heap *h = create_locked(kind, mem, ROBUST_HEAP, RTM_HEAP_LOCK_ROBUST_SHARED);
    REQUIRE(h != NULL, );
    process_dies_holding(h, 0, 1);
    process_dies_holding(h, SIGKILL, 2);
    munmap(mem, ROBUST_HEAP);
}

TEST_CASE_IN("robust", "a process that exits or is killed holding the lock is recovered from")
{
    each_robust_kind(process_death);
}

/* A heap in use, every block it could give of 600 bytes held (*n of them,
 * in blocks); the page heaps then use every page and free one run: a free
 * run between live ones. */
static bool fill_for_damage(const char *kind, struct rtm_heap *h, void **blocks, size_t *n)
{
    *n = 0;
    while (*n < 256 && (blocks[*n] = rtm_heap_alloc(h, 600)) != NULL)
        (*n)++;
    REQUIRE(*n >= 8, false);
    if (!header_kind(kind)) {
        while (rtm_heap_alloc(h, 300) || rtm_heap_alloc(h, 16))
            ;
        CHECK_EQ(rtm_heap_free(h, blocks[*n / 2]), 0);
    }
    CHECK_EQ(rtm_heap_check(h), 0);
    return true;
}

/* A process dies holding the lock, the heap damaged (after three deaths
 * recovered from): the next caller finds the damage, every call fails from
 * then on, and the counters say why. */
static void damaged_death(const char *kind)
{
    unsigned char *mem = map_shared(ROBUST_HEAP);
    REQUIRE(mem != NULL, );
    struct rtm_heap *h = create_locked(kind, mem, ROBUST_HEAP, RTM_HEAP_LOCK_ROBUST_SHARED);
    REQUIRE(h != NULL, );
    thread_dies_holding(h, 1);
    process_dies_holding(h, 0, 2);
    process_dies_holding(h, SIGKILL, 3);
    void *blocks[256];
    size_t n;
    if (!fill_for_damage(kind, h, blocks, &n))
        return;
    /* A shared heap takes no corruption handler (an address in one
     * process): the damage shows in the lock's state. */
    CHECK_EQ(rtm_heap_set_corruption_handler(h, call_back, NULL), -EINVAL);
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0, );
    if (pid == 0) {
        if (rtm__heap_lock_hold(h) != 0)
            test_exit(3);
        damage(kind, h, blocks, n);
        test_exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    expect_unrecoverable(h, blocks[0]);
    struct rtm_heap_lock_stats ls = lock_stats_of(h);
    CHECK_EQ(ls.recoverable, 0);
    CHECK_EQ(ls.owner_deaths, 4);
    CHECK_EQ(ls.recovered, 3);
    CHECK_EQ(rtm_heap_lock_type(h), RTM_HEAP_LOCK_ROBUST_SHARED);
    rtm_heap_destroy(h);
    CHECK_EQ(rtm_heap_lock_type(h), -EINVAL);
    munmap(mem, ROBUST_HEAP);
}

TEST_CASE_IN("robust", "a holder that dies after damaging the heap makes every call fail")
{
    each_robust_kind(damaged_death);
}

/* Allocates and frees in h until killed, saying first that it started. */
static void churn(struct rtm_heap *h, int round, int *started) __attribute__((noreturn));
static void churn(struct rtm_heap *h, int round, int *started)
{
    void *live[32] = { 0 };
    uint64_t s = (uint64_t)round;
    __atomic_store_n(started, 1, __ATOMIC_RELEASE);
    for (;;) {
        uint64_t r = rng_next(&s);
        void **slot = &live[r % 32];
        if (*slot)
            rtm_heap_free(h, *slot);
        *slot = rtm_heap_alloc(h, (size_t)(r >> 16) % 2000);
    }
}

/* What 40 kills left: deaths while holding the lock, heaps found intact
 * after them, heaps found damaged. */
struct kills {
    unsigned deaths, recovered, damaged;
};

/* After a kill: the next call either goes on (the heap checked
 * consistent) or fails for good (damaged); never anything in between. */
static void after_kill(struct rtm_heap *h, struct kills *k)
{
    struct rtm_heap_stats st;
    int rc = rtm_heap_stats(h, &st);
    struct rtm_heap_lock_stats ls = lock_stats_of(h);
    k->deaths += (unsigned)ls.owner_deaths;
    if (rc == 0) {
        CHECK_EQ(ls.owner_deaths, ls.recovered);
        CHECK_EQ(rtm_heap_check(h), 0);
        k->recovered += (unsigned)ls.recovered;
        void *p = rtm_heap_alloc(h, 32);
        CHECK(p != NULL || st.largest_free_bytes < 32);
        if (p)
            CHECK_EQ(rtm_heap_free(h, p), 0);
    } else {
        CHECK_EQ(rc, -ENOTRECOVERABLE);
        CHECK(ls.owner_deaths == 1 && ls.recovered == 0 && ls.recoverable == 0);
        CHECK(rtm_heap_alloc(h, 16) == NULL);
        k->damaged++;
    }
}

/* Processes killed at random while they allocate and free in a shared heap. */
static void robust_kills(const char *kind)
{
    unsigned char *mem = map_shared(ROBUST_HEAP);
    REQUIRE(mem != NULL, );
    /* each child says when it has started: a kill that lands before the
     * child's first call proves nothing */
    int *started =
        mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    REQUIRE(started != MAP_FAILED, );
    uint64_t rng = 0x6b111;
    struct kills k = { 0 };
    for (int round = 0; round < 40; round++) {
        __atomic_store_n(started, 0, __ATOMIC_RELAXED);
        struct rtm_heap *h = create_locked(kind, mem, ROBUST_HEAP, RTM_HEAP_LOCK_ROBUST_SHARED);
        REQUIRE(h != NULL, );
        fflush(NULL);
        pid_t pid = fork();
        REQUIRE(pid >= 0, );
        if (pid == 0)
            churn(h, round, started);
        for (int wait = 0; !__atomic_load_n(started, __ATOMIC_ACQUIRE) && wait < 20000; wait++) {
            struct timespec w = { 0, 100000 };
            nanosleep(&w, NULL);
        }
        struct timespec d = { 0, (long)rng_range(&rng, 20000, 2000000) };
        nanosleep(&d, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        after_kill(h, &k);
        rtm_heap_destroy(h);
    }
    printf("  %-8s 40 processes killed while allocating: %u died holding the lock, the heap "
           "intact after %u, damaged after %u\n",
           kind, k.deaths, k.recovered, k.damaged);
    CHECK(k.deaths > 0);
    CHECK_EQ(k.damaged, 0); /* the undo log rolls every death back */
    munmap(started, sizeof(int));
    munmap(mem, ROBUST_HEAP);
}

TEST_CASE_IN("robust", "processes killed at random while allocating leave the heap intact")
{
    each_robust_kind(robust_kills);
}

/* ---- pi: priority inheritance at work ----------------------------------------------- */

/* Priorities (SCHED_FIFO) of the scene; the main thread directs it from above. */
#define PRIO_MAIN   50
#define PRIO_HIGH   30
#define PRIO_MEDIUM 20
#define PRIO_LOW    10
#define HOLD_NS     20000000ull  /* the low thread's work while it holds the lock (CPU time) */
#define SPIN_NS     100000000ull /* the medium thread's work (CPU time) */

/* One scene's lock: a heap's (taken by the low thread through the test
 * hook, wanted by the high thread's rtm_heap_alloc) or a plain mutex. */
struct scene {
    struct rtm_heap *h;
    pthread_mutex_t *plain;
    int cpu;
    uint64_t t0;
    _Atomic bool held;
    uint64_t high_got_ns, medium_done_ns; /* since t0 */
    int err;
};

static void spin_cpu(uint64_t ns)
{
    uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
    while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
        ;
}

static void *low_run(void *arg)
{
    struct scene *s = arg;
    int rc = s->h ? rtm__heap_lock_hold(s->h) : pthread_mutex_lock(s->plain);
    if (rc) {
        s->err = rc;
        return NULL;
    }
    atomic_store(&s->held, true);
    spin_cpu(HOLD_NS);
    if (s->h)
        rtm__heap_lock_release(s->h);
    else
        pthread_mutex_unlock(s->plain);
    return NULL;
}

static void *high_run(void *arg)
{
    struct scene *s = arg;
    if (s->h) {
        void *p = rtm_heap_alloc(s->h, 64);
        s->high_got_ns = now_ns(CLOCK_MONOTONIC) - s->t0;
        if (!p)
            s->err = ENOMEM;
        else
            rtm_heap_free(s->h, p);
    } else {
        pthread_mutex_lock(s->plain);
        s->high_got_ns = now_ns(CLOCK_MONOTONIC) - s->t0;
        pthread_mutex_unlock(s->plain);
    }
    return NULL;
}

static void *medium_run(void *arg)
{
    struct scene *s = arg;
    spin_cpu(SPIN_NS);
    s->medium_done_ns = now_ns(CLOCK_MONOTONIC) - s->t0;
    return NULL;
}

static int start(pthread_t *t, void *(*fn)(void *), struct scene *s, int prio)
{
    pthread_attr_t a;
    struct sched_param sp = { .sched_priority = prio };
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(s->cpu, &one);
    pthread_attr_init(&a);
    pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&a, SCHED_FIFO);
    pthread_attr_setschedparam(&a, &sp);
    pthread_attr_setaffinity_np(&a, sizeof(one), &one);
    int rc = pthread_create(t, &a, fn, s);
    pthread_attr_destroy(&a);
    return rc;
}

static void pause_ms(long ms)
{
    struct timespec d = { 0, ms * 1000000 };
    nanosleep(&d, NULL);
}

/*
 * On one CPU: the low thread takes the lock and works; the high thread
 * wants it and waits; then the medium thread starts its long work. With
 * priority inheritance the low thread runs at the high one's priority until
 * it gives the lock back, so the high thread gets it before the medium one
 * ends. Without, the medium thread preempts the holder and the high thread
 * waits for all of its work (priority inversion).
 */
static int run_scene(struct scene *s)
{
    pthread_t low, high, medium;
    s->t0 = now_ns(CLOCK_MONOTONIC);
    if (start(&low, low_run, s, PRIO_LOW) != 0)
        return -1;
    while (!atomic_load(&s->held) && !s->err)
        pause_ms(1);
    if (start(&high, high_run, s, PRIO_HIGH) != 0)
        return -1;
    pause_ms(2); /* the high thread runs, and waits for the lock */
    if (start(&medium, medium_run, s, PRIO_MEDIUM) != 0)
        return -1;
    pthread_join(low, NULL);
    pthread_join(high, NULL);
    pthread_join(medium, NULL);
    return s->err ? -1 : 0;
}

/* The CPU the pi scene runs on, the last this process may use; main puts
 * the process there at SCHED_FIFO PRIO_MAIN before the group runs. */
static int pi_cpu = -1;

/* 0, SKIPPED when SCHED_FIFO on one CPU is not granted, or 1. */
static int pi_setup(void)
{
    struct sched_param sp = { .sched_priority = PRIO_MAIN };
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        perror("sched_getaffinity");
        return 1;
    }
    int cpu = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            cpu = c;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0 ||
        sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
        printf("lock_test pi: SKIPPED: SCHED_FIFO on one CPU not granted (%s); the "
               "priority-inheritance scene needs root or CAP_SYS_NICE\n",
               strerror(errno));
        return SKIPPED;
    }
    printf("  on CPU %d, SCHED_FIFO: low %d holds the lock for %llu ms of work, high %d "
           "waits for it, medium %d works %llu ms\n",
           cpu, PRIO_LOW, HOLD_NS / 1000000, PRIO_HIGH, PRIO_MEDIUM, SPIN_NS / 1000000);
    pi_cpu = cpu;
    return 0;
}

/* The scene first with a plain mutex: the inversion must show, or the
 * scene proves nothing. */
TEST_CASE_IN("pi", "a plain mutex lets the medium thread hold the high one up")
{
    REQUIRE(pi_cpu >= 0, );
    pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;
    struct scene s = { .plain = &plain, .cpu = pi_cpu };
    REQUIRE(run_scene(&s) == 0, );
    printf("  %-26s the high thread got the lock at %6.1f ms, the medium one ended at "
           "%6.1f ms\n",
           "plain mutex (no PI):", s.high_got_ns / 1e6, s.medium_done_ns / 1e6);
    CHECK(s.high_got_ns > s.medium_done_ns);
}

TEST_CASE_IN("pi", "a heap's holder is boosted so the high thread gets in before the medium ends")
{
    REQUIRE(pi_cpu >= 0, );
    static char ctx[64];
    for (size_t t = 0; t < N_LOCK_TYPES; t++) {
        snprintf(ctx, sizeof(ctx), "pi: heap, lock %s", lock_name(lock_types[t]));
        test_context = ctx;
        struct rtm_heap *h = create_locked("tlsf", arena, 64u << 10, lock_types[t]);
        REQUIRE(h != NULL, );
        struct scene s = { .h = h, .cpu = pi_cpu };
        REQUIRE(run_scene(&s) == 0, );
        printf("  heap, lock %-15s the high thread got the lock at %6.1f ms, the medium one "
               "ended at %6.1f ms\n",
               lock_name(lock_types[t]), s.high_got_ns / 1e6, s.medium_done_ns / 1e6);
        /* The order, not a bound in milliseconds: a task of higher
         * priority elsewhere on the machine delays the whole scene. */
        CHECK(s.high_got_ns < s.medium_done_ns);
        CHECK_EQ(lock_stats_of(h).contended, 1);
        rtm_heap_destroy(h);
    }
}

/* Why owner death is not tried under an emulator. */
#define ROBUST_WHY                                                                          \
    "qemu-user implements no robust futex list (set_robust_list), so glibc cannot recover " \
    "a lock whose owner died: this needs a real kernel (a board, or qemu-system)"

static bool is_kind(const char *kind)
{
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        if (strcmp(*k, kind) == 0)
            return true;
    return false;
}

/* The section is the group (its cases above); robust is skipped under an
 * emulator, and pi puts the process on one CPU at SCHED_FIFO first. */
int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    if (strcmp(what, "threads") == 0 && argc == 3 && !is_kind(argv[2])) {
        fprintf(stderr, "lock_test: no kind '%s'\n", argv[2]);
        return 2;
    }
    if (!(strcmp(what, "layout") == 0 || (strcmp(what, "threads") == 0 && argc == 3) ||
          strcmp(what, "robust") == 0 || strcmp(what, "pi") == 0)) {
        fprintf(stderr, "usage: lock_test layout | threads KIND | robust | pi\n");
        return 2;
    }
    if (strcmp(what, "robust") == 0 && test_emulated())
        return test_skip_emulated("lock.robust", ROBUST_WHY);
    if (strcmp(what, "pi") == 0) {
        int rc = pi_setup();
        if (rc)
            return rc;
    }
    return test_main(argc, argv, "lock_test");
}
