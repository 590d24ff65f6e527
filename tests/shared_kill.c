/*
 * Shared heaps under attack (rtmem/shared.h, "Crash safety", "Owners"):
 *
 *   shared_kill owners          who owns each block: recorded at allocation,
 *                               kept by realloc, changed by set_owner; the
 *                               blocks of a process that exited are listed
 *                               and reclaimed, but never a published one, a
 *                               heap-owned one, or one whose owner runs
 *   shared_kill kill KIND [N]   N processes (default 1000) attach to one
 *                               heap of KIND and allocate, write and free in
 *                               a loop, each killed with SIGKILL a random 1
 *                               to 500 us after it attached, often inside a
 *                               heap call, holding the lock; meanwhile a holder
 *                               process keeps 64 patterned blocks, verifies
 *                               them continuously and reallocates them.
 *                               After each kill: the heap checks, and the
 *                               dead process's blocks are reclaimed. At the
 *                               end: the holder found nothing damaged, every
 *                               death was recovered, and once the holder's
 *                               own blocks are reclaimed the heap is empty.
 *
 * The heap's name is "shkill-<pid>-<n>": removed at the end, and on a
 * failure or a signal too (SIGALRM at 50 s, before CTest's timeout); every
 * child is killed and reaped.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rtmem/rtmem.h"
#include "../src/heap/kind.h"
#include "../src/heap/robust.h"
#include "../src/lock/lock.h"
#include "../src/heap/store.h"
#include "../src/heap/undo.h"

/* ---- names and children, removed whatever happens ---------------------------- */

static char name[64], path[96];
static int owner_pid;
static volatile pid_t kids[2]; /* the holder and the current victim */

static void cleanup_on_signal(int sig)
{
    (void)sig;
    if (getpid() == owner_pid) {
        for (int i = 0; i < 2; i++)
            if (kids[i] > 0)
                kill(kids[i], SIGKILL);
        unlink(path);
    }
    _exit(3);
}

static void new_name(int n)
{
    snprintf(name, sizeof name, "shkill-%d-%d", (int)getpid(), n);
    snprintf(path, sizeof path, "/dev/shm/rtmem-%s", name);
}

static void remove_name(void)
{
    if (getpid() == owner_pid && name[0])
        rtm_shared_unlink(name);
}

static int reap(pid_t pid, int *status)
{
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    if (status)
        *status = st;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static struct rtm_heap_stats stats(struct rtm_heap *h)
{
    struct rtm_heap_stats st;
    memset(&st, 0, sizeof st);
    CHECK_EQ(rtm_heap_stats(h, &st), 0);
    return st;
}

/* ---- owners ------------------------------------------------------------------------ */

/* A fresh shared heap of the kind, 1 MiB, under a name of its own. */
static struct rtm_shared *owners_heap(const char *kind)
{
    static int serial;
    new_name(++serial);
    struct rtm_shared *s = rtm_shared_create(name, kind, 1u << 20);
    REQUIRE(s != NULL, NULL);
    return s;
}

/* Its end: detached and unlinked. */
static void owners_done(struct rtm_shared *s)
{
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

/* Runs a check for every kind, the kind as its context. */
static void each_kind(void (*check)(const char *kind))
{
    static char ctx[64];
    for (const char *const *k = rtm_heap_kinds(); *k; k++) {
        snprintf(ctx, sizeof ctx, "owners %s", *k);
        test_context = ctx;
        check(*k);
    }
}

static void owner_recorded(const char *kind)
{
    struct rtm_shared *s = owners_heap(kind);
    if (!s)
        return;
    struct rtm_heap *h = rtm_shared_heap(s);
    int me = (int)getpid();
    char *mine = rtm_heap_alloc(h, 100);
    CHECK(mine != NULL);
    CHECK_EQ(rtm_shared_owner(s, mine), me);
    CHECK(rtm_heap_usable_size(h, mine) >= 100);
    /* realloc keeps the owner, moved or not */
    mine = rtm_heap_realloc(h, mine, 3000);
    CHECK(mine != NULL);
    CHECK_EQ(rtm_shared_owner(s, mine), me);
    owners_done(s);
}

TEST_CASE_IN("owners", "a block's owner is recorded at allocation and kept by realloc")
{
    each_kind(owner_recorded);
}

/* A child allocates ten blocks, publishes one, gives one to the heap, and
 * exits without freeing any; this process holds one of its own. */
static void exited_child_blocks(const char *kind)
{
    struct rtm_shared *s = owners_heap(kind);
    if (!s)
        return;
    struct rtm_heap *h = rtm_shared_heap(s);
    int me = (int)getpid();
    REQUIRE(rtm_heap_alloc(h, 3000) != NULL, );
    size_t live_before = stats(h).live_blocks;
    pid_t child = fork();
    if (child == 0) {
        void *p[10];
        for (int i = 0; i < 10; i++) {
            p[i] = rtm_heap_alloc(h, 50 + 300 * (size_t)i);
            if (!p[i])
                test_exit(1);
            memset(p[i], i, 50);
        }
        if (rtm_shared_publish(s, "kept", (char *)p[3] + 8) != 0)
            test_exit(2);
        if (rtm_shared_set_owner(s, p[5], 0) != 0 || rtm_shared_owner(s, p[5]) != 0)
            test_exit(3);
        test_exit(0);
    }
    CHECK_EQ(reap(child, NULL), 0);
    CHECK_EQ(stats(h).live_blocks, live_before + 10);
    struct rtm_shared_orphan out[16];
    CHECK_EQ(rtm_shared_orphans(s, out, 16), 8);
    for (int i = 0; i < 8; i++) {
        CHECK_EQ(out[i].pid, child);
        void *p = rtm_shared_from_offset(s, out[i].offset);
        CHECK_EQ(rtm_shared_owner(s, p), child);
        CHECK_EQ(rtm_heap_usable_size(h, p), out[i].bytes);
    }
    CHECK_EQ(rtm_shared_orphans(s, NULL, 0), 8);
    CHECK_EQ(rtm_shared_reclaim(s, me), -EBUSY); /* running: its blocks stay */
    CHECK_EQ(rtm_shared_reclaim(s, child), 8);
    CHECK_EQ(rtm_shared_orphans(s, NULL, 0), 0);
    CHECK_EQ(rtm_shared_reclaim(s, 0), 0);
    CHECK_EQ(stats(h).live_blocks, live_before + 2); /* the published and the heap's */
    CHECK(rtm_shared_lookup(s, "kept") != NULL);
    CHECK_EQ(rtm_heap_check(h), 0);
    owners_done(s);
}

TEST_CASE_IN("owners", "an exited process's blocks are listed and reclaimed, but not the "
                       "published or the heap's")
{
    each_kind(exited_child_blocks);
}

/* A realloc by another process keeps the owner; so does one that moves the
 * block (a neighbour below keeps it from growing in place). alloc(0) has a
 * usable byte (0 would mean no block). */
static void realloc_elsewhere(const char *kind)
{
    struct rtm_shared *s = owners_heap(kind);
    if (!s)
        return;
    struct rtm_heap *h = rtm_shared_heap(s);
    int me = (int)getpid();
    char *mine = rtm_heap_realloc(h, rtm_heap_alloc(h, 100), 3000);
    REQUIRE(mine != NULL, );
    void *neighbour = rtm_heap_alloc(h, 3000);
    CHECK(neighbour != NULL);
    /* past its neighbours: moves (a page kind's largest request may fit in place) */
    struct rtm_heap_stats st;
    REQUIRE(rtm_heap_stats(h, &st) == 0, );
    size_t grow = st.largest_free_bytes < 20000 ? st.largest_free_bytes : 20000;
    pid_t child = fork();
    if (child == 0) {
        char *q = rtm_heap_realloc(h, mine, grow);
        test_exit(q && rtm_shared_owner(s, q) == me && rtm_shared_publish(s, "moved", q) == 0 ? 0
                                                                                              : 1);
    }
    CHECK_EQ(reap(child, NULL), 0);
    mine = rtm_shared_lookup(s, "moved");
    CHECK(mine != NULL);
    CHECK_EQ(rtm_shared_owner(s, mine), me);
    CHECK_EQ(rtm_shared_unpublish(s, "moved"), 0);
    void *zero = rtm_heap_alloc(h, 0);
    CHECK(zero && rtm_heap_usable_size(h, zero) >= 1);
    CHECK_EQ(rtm_heap_free(h, zero), 0);
    owners_done(s);
}

TEST_CASE_IN("owners", "a realloc by another process keeps the owner, moved or not")
{
    each_kind(realloc_elsewhere);
}

/* set_owner: to the heap, to a process that is gone (refused). */
static void set_owner(const char *kind)
{
    struct rtm_shared *s = owners_heap(kind);
    if (!s)
        return;
    int me = (int)getpid();
    char *mine = rtm_heap_alloc(rtm_shared_heap(s), 100);
    REQUIRE(mine != NULL, );
    pid_t child = fork();
    if (child == 0)
        test_exit(0);
    CHECK_EQ(reap(child, NULL), 0);
    CHECK_EQ(rtm_shared_set_owner(s, mine, 0), 0);
    CHECK_EQ(rtm_shared_owner(s, mine), 0);
    CHECK_EQ(rtm_shared_set_owner(s, mine, (int)child), -ESRCH);
    CHECK_EQ(rtm_shared_set_owner(s, mine, me), 0);
    CHECK_EQ(rtm_shared_owner(s, mine), me);
    owners_done(s);
}

TEST_CASE_IN("owners", "set_owner gives a block to the heap and back, never to a process gone")
{
    each_kind(set_owner);
}

/* A pid the system gave to a new process: the record's start time tells it
 * from the one that allocated the block. */
static void reused_pid(const char *kind)
{
    struct rtm_shared *s = owners_heap(kind);
    if (!s)
        return;
    struct rtm_heap *h = rtm_shared_heap(s);
    struct rtm_shared_orphan out[16];
    void *reused = rtm_heap_alloc(h, 64);
    CHECK(reused != NULL);
    uint32_t pid, stamp;
    rtm__owner_self(&pid, &stamp);
    CHECK_EQ(rtm__robust_set_owner(rtm__heap_ops(h), h, reused, pid, stamp + 1), 0);
    CHECK_EQ(rtm_shared_orphans(s, out, 16), 1);
    CHECK_EQ(out[0].offset, rtm_shared_to_offset(s, reused));
    CHECK_EQ(rtm_shared_reclaim(s, 0), 1);
    CHECK_EQ(rtm_heap_usable_size(h, reused), 0);
    owners_done(s);
}

TEST_CASE_IN("owners", "a reused pid is told from the process that allocated by its start time")
{
    each_kind(reused_pid);
}

/* A record its user overran: no owner known, never reclaimed, and the block
 * frees as any other. */
static void overrun_record(const char *kind)
{
    struct rtm_shared *s = owners_heap(kind);
    if (!s)
        return;
    struct rtm_heap *h = rtm_shared_heap(s);
    char *over = rtm_heap_alloc(h, 40);
    CHECK(over != NULL);
    size_t u = rtm_heap_usable_size(h, over);
    memset(over, 0x5a, u + 16);
    CHECK_EQ(rtm_shared_owner(s, over), -EBADMSG);
    CHECK_EQ(rtm_shared_orphans(s, NULL, 0), 0);
    CHECK_EQ(rtm_heap_free(h, over), 0);
    CHECK_EQ(rtm_heap_check(h), 0);
    owners_done(s);
}

TEST_CASE_IN("owners", "an overrun owner record names no owner and is never reclaimed")
{
    each_kind(overrun_record);
}

static void owner_refusals(const char *kind)
{
    struct rtm_shared *s = owners_heap(kind);
    if (!s)
        return;
    struct rtm_heap *h = rtm_shared_heap(s);
    char *mine = rtm_heap_alloc(h, 100);
    REQUIRE(mine != NULL, );
    static unsigned char elsewhere[64u << 10] __attribute__((aligned(64)));
    CHECK_EQ(rtm_heap_add_pool(h, elsewhere, sizeof elsewhere), -ENOTSUP); /* all its memory */
    CHECK_EQ(rtm_shared_orphans(NULL, NULL, 0), -EINVAL);
    CHECK_EQ(rtm_shared_orphans(s, NULL, 1), -EINVAL);
    CHECK_EQ(rtm_shared_reclaim(NULL, 0), -EINVAL);
    CHECK_EQ(rtm_shared_reclaim(s, -1), -EINVAL);
    CHECK_EQ(rtm_shared_set_owner(s, mine, -2), -EINVAL);
    CHECK_EQ(rtm_shared_set_owner(s, mine + 8, 0), -EINVAL);
    CHECK_EQ(rtm_shared_owner(s, NULL), -EINVAL);
    CHECK_EQ(rtm_shared_owner(s, mine + 16), -EINVAL);
    CHECK_EQ(rtm_shared_owner(NULL, mine), -EINVAL);
    owners_done(s);
}

TEST_CASE_IN("owners", "the owner calls refuse bad arguments, and a shared heap takes no pool")
{
    each_kind(owner_refusals);
}

/* Many owners: 300 processes that run and hold a block each, then one
 * that exits holding five. Reclaiming that one finds its five however many
 * others own blocks. */
#define MANY 300

TEST_CASE_IN("owners", "reclaiming a dead process finds its blocks among 300 live owners")
{
    struct rtm_shared *s = owners_heap("tlsf");
    if (!s)
        return;
    struct rtm_heap *h = rtm_shared_heap(s);
    int go[2];
    CHECK_EQ(pipe(go), 0);
    static pid_t kid[MANY];
    int started = 0;
    for (int i = 0; i < MANY; i++) {
        kid[i] = fork();
        if (kid[i] == 0) {
            close(go[1]);
            if (!rtm_heap_alloc(h, 32))
                test_exit(1);
            char c;
            (void)!read(go[0], &c, 1); /* until the parent closes the pipe */
            test_exit(0);
        }
        started += kid[i] > 0;
    }
    CHECK_EQ(started, MANY);
    /* wait until all 300 hold their block */
    for (int wait = 0; stats(h).live_blocks < (size_t)started && wait < 20000; wait++)
        usleep(100);
    CHECK_EQ(stats(h).live_blocks, (size_t)started);
    pid_t last = fork();
    if (last == 0) {
        for (int i = 0; i < 5; i++)
            if (!rtm_heap_alloc(h, 100))
                test_exit(1);
        test_exit(0);
    }
    CHECK_EQ(reap(last, NULL), 0);
    CHECK_EQ(rtm_shared_orphans(s, NULL, 0), 5);
    CHECK_EQ(rtm_shared_reclaim(s, last), 5);
    CHECK_EQ(rtm_shared_reclaim(s, kid[0]), -EBUSY);
    close(go[0]);
    close(go[1]); /* the 300 exit */
    for (int i = 0; i < MANY; i++)
        if (kid[i] > 0)
            CHECK_EQ(reap(kid[i], NULL), 0);
    CHECK_EQ(rtm_shared_orphans(s, NULL, 0), started);
    CHECK_EQ(rtm_shared_reclaim(s, 0), started);
    CHECK_EQ(stats(h).live_blocks, 0);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
    test_context = NULL;
}

/* A process whose main thread has exited while another thread runs shows
 * as a zombie in /proc: it is alive, and its blocks are not reclaimed. */
static void *leader_gone_worker(void *arg)
{
    void **args = arg;
    struct rtm_heap *h = args[0];
    int *go = args[1];
    char *p = rtm_heap_alloc(h, 64);
    if (!p)
        test_exit(1);
    char c;
    (void)!write(go[1], "r", 1); /* allocated */
    (void)!read(go[2], &c, 1);   /* until the parent has tried to reclaim */
    memset(p, 0x77, 64);         /* still its block */
    test_exit(rtm_heap_free(h, p) == 0 ? 0 : 2);
}

TEST_CASE_IN("owners", "a process whose leader thread exited is alive, its blocks kept")
{
    struct rtm_shared *s = owners_heap("tlsf");
    if (!s)
        return;
    struct rtm_heap *h = rtm_shared_heap(s);
    int up[2], down[2];
    CHECK_EQ(pipe(up), 0);
    CHECK_EQ(pipe(down), 0);
    pid_t child = fork();
    if (child == 0) {
        static int go[3];
        go[1] = up[1];
        go[2] = down[0];
        static void *args[2];
        args[0] = h;
        args[1] = go;
        pthread_t t;
        if (pthread_create(&t, NULL, leader_gone_worker, args) != 0)
            test_exit(3);
        pthread_exit(NULL); /* the leader goes; the worker runs on */
    }
    char c = 0;
    CHECK_EQ(read(up[0], &c, 1), 1);
    usleep(20000); /* the leader's exit shows in /proc */
    CHECK_EQ(rtm_shared_reclaim(s, child), -EBUSY);
    CHECK_EQ(rtm_shared_orphans(s, NULL, 0), 0);
    CHECK_EQ(write(down[1], "g", 1), 1);
    CHECK_EQ(reap(child, NULL), 0);
    CHECK_EQ(stats(h).live_blocks, 0);
    close(up[0]), close(up[1]), close(down[0]), close(down[1]);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

/* A segment whose log names an added pool: a shared heap takes none, so
 * attach refuses it, untouched. */
TEST_CASE_IN("owners", "a segment whose undo log names an added pool is refused untouched")
{
    struct rtm_shared *s = owners_heap("heapmem");
    if (!s)
        return;
    struct rtm_undo *u = rtm_undo_of(rtm_shared_heap(s));
    u->pools = 1;
    u->pool[0].at = 1u << 20;
    u->pool[0].len = 4096;
    errno = 0;
    CHECK(rtm_shared_attach(name) == NULL);
    CHECK_EQ(errno, EINVAL);
    u->pools = 0;
    struct rtm_shared *again = rtm_shared_attach(name);
    CHECK(again != NULL);
    if (again)
        CHECK_EQ(rtm_shared_detach(again), 0);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

/* ---- kill -------------------------------------------------------------------------- */

#define HOLDER_BLOCKS 64

struct control {
    int stop;
    int failed;
    uint64_t verified;
    uint64_t reallocs;
    uint64_t attached; /* victims that have attached */
    char why[200];
};

static unsigned char pattern(uint64_t tag, size_t i)
{
    uint64_t x = (tag + i) * 0x9e3779b97f4a7c15ull;
    return (unsigned char)(x >> 56);
}

static void fill(unsigned char *p, size_t n, uint64_t tag)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pattern(tag, i);
}

static bool intact(const unsigned char *p, size_t n, uint64_t tag)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern(tag, i))
            return false;
    return true;
}

static void holder_fail(struct control *c, int code, const char *what, size_t k)
{
    snprintf(c->why, sizeof c->why, "holder: %s (block %zu, errno %d)", what, k, errno);
    __atomic_store_n(&c->failed, code, __ATOMIC_RELEASE);
    test_exit(code);
}

/* The holder: its blocks must never change but by its own hand. */
static void holder(struct rtm_heap *h, struct control *c)
{
    unsigned char *p[HOLDER_BLOCKS];
    size_t n[HOLDER_BLOCKS];
    uint64_t tag[HOLDER_BLOCKS], rng = 0x401de7u, gen = 1;
    for (size_t k = 0; k < HOLDER_BLOCKS; k++) {
        n[k] = 16 + tk_rng_below(&rng, 3000);
        tag[k] = gen++;
        p[k] = rtm_heap_alloc(h, n[k]);
        if (!p[k])
            holder_fail(c, 2, "alloc failed", k);
        fill(p[k], n[k], tag[k]);
    }
    while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
        size_t k = tk_rng_below(&rng, HOLDER_BLOCKS);
        if (!intact(p[k], n[k], tag[k]))
            holder_fail(c, 1, "a block changed", k);
        __atomic_fetch_add(&c->verified, 1, __ATOMIC_RELAXED);
        unsigned dice = (unsigned)tk_rng_below(&rng, 8);
        if (dice == 0) { /* realloc: the prefix stays */
            size_t m = 16 + tk_rng_below(&rng, 3000);
            unsigned char *q = rtm_heap_realloc(h, p[k], m);
            if (!q)
                holder_fail(c, 2, "realloc failed", k);
            if (!intact(q, m < n[k] ? m : n[k], tag[k]))
                holder_fail(c, 1, "realloc lost the contents", k);
            p[k] = q;
            n[k] = m;
            tag[k] = gen++;
            fill(q, m, tag[k]);
            __atomic_fetch_add(&c->reallocs, 1, __ATOMIC_RELAXED);
        } else if (dice == 1) { /* free and take another */
            if (rtm_heap_free(h, p[k]) != 0)
                holder_fail(c, 2, "free failed", k);
            n[k] = 16 + tk_rng_below(&rng, 3000);
            p[k] = rtm_heap_alloc(h, n[k]);
            if (!p[k])
                holder_fail(c, 2, "alloc failed", k);
            tag[k] = gen++;
            fill(p[k], n[k], tag[k]);
        }
    }
    for (size_t k = 0; k < HOLDER_BLOCKS; k++)
        if (!intact(p[k], n[k], tag[k]))
            holder_fail(c, 1, "a block changed", k);
    test_exit(0); /* its blocks stay: the parent reclaims them */
}

/* A victim: attaches (at its own address) and churns until killed. */
static void victim(struct control *c, uint64_t seed)
{
    struct rtm_shared *s = rtm_shared_attach(name);
    if (!s)
        test_exit(10);
    __atomic_fetch_add(&c->attached, 1, __ATOMIC_RELEASE);
    struct rtm_heap *h = rtm_shared_heap(s);
    void *p[32] = { 0 };
    uint64_t rng = seed;
    for (;;) {
        size_t k = tk_rng_below(&rng, 32);
        if (p[k] && tk_rng_below(&rng, 2)) {
            if (rtm_heap_free(h, p[k]) != 0)
                test_exit(11);
            p[k] = NULL;
            continue;
        }
        size_t want = 1 + tk_rng_below(&rng, tk_rng_below(&rng, 4) ? 512 : 8192);
        void *q = p[k] ? rtm_heap_realloc(h, p[k], want) : rtm_heap_alloc(h, want);
        if (!q) {
            if (errno == ENOTRECOVERABLE)
                test_exit(12);
            continue; /* full for now */
        }
        memset(q, 0xa5, want < 64 ? want : 64);
        p[k] = q;
    }
}

static void sleep_us(uint64_t us)
{
    struct timespec t = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* What a run of kills came to, for the checks and the report. */
struct kill_run {
    unsigned long killed, not_killed, check_failed, reclaimed;
    uint64_t deaths, recovered, rolled; /* of the heap's lock, and its undo log */
};

/* Victims one at a time, each killed a random 1 to 500 us into its churn
 * once it has attached (or after 2 s, if attach never returns: a failure
 * below); after each, the next call takes the lock (it recovers a death,
 * then checks) and the dead one's blocks are reclaimed. Stops early when
 * the holder has failed. */
static void kill_victims(struct rtm_shared *s, struct control *c, unsigned long kills,
                         struct kill_run *r)
{
    struct rtm_heap *h = rtm_shared_heap(s);
    uint64_t rng = 0x6b111u ^ (uint64_t)kills;
    for (unsigned long i = 0; i < kills && !__atomic_load_n(&c->failed, __ATOMIC_ACQUIRE); i++) {
        pid_t v = fork();
        if (v == 0)
            victim(c, rng + i);
        kids[1] = v;
        for (int wait = 0; __atomic_load_n(&c->attached, __ATOMIC_ACQUIRE) == i && wait < 20000;
             wait++)
            sleep_us(100);
        sleep_us(1 + tk_rng_below(&rng, 500));
        kill(v, SIGKILL);
        int st = 0;
        reap(v, &st);
        kids[1] = 0;
        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
            r->killed++;
        else
            r->not_killed++;
        if (rtm_heap_check(h) != 0)
            r->check_failed++;
        long n = rtm_shared_reclaim(s, v);
        if (n >= 0)
            r->reclaimed += (unsigned long)n;
        else
            r->check_failed++;
    }
}

/* Every death the lock saw since l0 was recovered (rolled back by the undo
 * log where it fell mid-call), and the kills did land inside calls. */
static void deaths_recovered(struct rtm_heap *h, const struct rtm_heap_lock_stats *l0,
                             uint64_t rollbacks0, unsigned long kills, struct kill_run *r)
{
    struct rtm_heap_lock_stats l1;
    CHECK_EQ(rtm_heap_lock_stats(h, &l1), 0);
    r->deaths = l1.owner_deaths - l0->owner_deaths;
    r->recovered = l1.recovered - l0->recovered;
    r->rolled = rtm_undo_of(h)->rollbacks - rollbacks0;
    CHECK_EQ(l1.recoverable, 1);
    CHECK_EQ(r->recovered, r->deaths);
    CHECK(r->deaths > kills / 4);
    CHECK_EQ(rtm_undo_of(h)->overflows, 0);
}

/* The holder exited without freeing: its blocks go back too, and then the
 * heap holds nothing at all. True if it is empty. */
static bool holder_reclaimed(struct rtm_shared *s)
{
    struct rtm_heap *h = rtm_shared_heap(s);
    long holder_blocks = rtm_shared_reclaim(s, 0);
    CHECK_EQ(holder_blocks, HOLDER_BLOCKS);
    struct rtm_heap_stats st = stats(h);
    CHECK_EQ(st.live_blocks, 0);
    CHECK_EQ(st.used_bytes, 0);
    CHECK_EQ(rtm_heap_check(h), 0);
    return st.live_blocks == 0 && st.used_bytes == 0;
}

/* shared_kill kill KIND [KILLS]: the kind and the number of kills are the
 * arguments after the group. */
TEST_CASE_IN("kill", "processes killed at random leave the heap whole, the holder's blocks intact")
{
    const char *kind = test_argv[0];
    unsigned long kills = test_argc > 1 ? strtoul(test_argv[1], NULL, 10) : 1000;
    static char ctx[64];
    snprintf(ctx, sizeof ctx, "kill %s", kind);
    test_context = ctx;
    new_name(100);
    struct rtm_shared *s = rtm_shared_create(name, kind, 8u << 20);
    REQUIRE(s != NULL, );
    struct rtm_heap *h = rtm_shared_heap(s);
    struct control *c =
        mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    REQUIRE(c != MAP_FAILED, );
    memset(c, 0, sizeof *c);
    struct rtm_heap_lock_stats l0;
    CHECK_EQ(rtm_heap_lock_stats(h, &l0), 0);
    uint64_t rollbacks0 = rtm_undo_of(h)->rollbacks;

    pid_t hp = fork();
    if (hp == 0)
        holder(h, c);
    kids[0] = hp;
    sleep_us(20000); /* the holder's blocks first */
    struct kill_run r = { 0 };
    kill_victims(s, c, kills, &r);
    __atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
    int hst = reap(hp, NULL);
    kids[0] = 0;
    if (hst != 0)
        fprintf(stderr, "[%s] %s\n", ctx, c->why[0] ? c->why : "holder died");
    CHECK_EQ(hst, 0);
    CHECK_EQ(r.not_killed, 0);
    CHECK_EQ(r.killed, kills);
    CHECK_EQ(r.check_failed, 0);
    deaths_recovered(h, &l0, rollbacks0, kills, &r);
    bool empty = holder_reclaimed(s);
    printf("%-8s %lu processes killed: %llu holding the heap's lock (%llu mid-call, rolled back), "
           "%llu recovered, %llu unrecoverable; holder: %llu verifications, %llu reallocs, %s; "
           "%lu blocks of the dead reclaimed; heap %s at the end\n",
           kind, r.killed, (unsigned long long)r.deaths, (unsigned long long)r.rolled,
           (unsigned long long)r.recovered, (unsigned long long)(r.deaths - r.recovered),
           (unsigned long long)c->verified, (unsigned long long)c->reallocs,
           hst == 0 ? "nothing damaged" : "FAILED", r.reclaimed, empty ? "empty" : "NOT empty");
    munmap(c, sizeof *c);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
}

/* The group is the first argument (owners, or kill KIND [KILLS]); main
 * arranges the cleanup, on a signal too, and skips under an emulator. */
int main(int argc, char **argv)
{
    if (test_emulated() && argc >= 2)
        return test_skip_emulated(
            "shared_kill",
            "owners that die are found through the kernel's robust futex list, which qemu-user "
            "does not implement: this needs a real kernel (a board, or qemu-system)");
    if (!(argc == 2 && strcmp(argv[1], "owners") == 0) &&
        !((argc == 3 || argc == 4) && strcmp(argv[1], "kill") == 0)) {
        fprintf(stderr, "usage: shared_kill owners | kill KIND [KILLS]\n");
        return 2;
    }
    owner_pid = (int)getpid();
    atexit(remove_name);
    static const int fatal[] = {
        SIGALRM, SIGTERM, SIGINT, SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE
    };
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        signal(fatal[i], cleanup_on_signal);
    alarm(50); /* CTest's timeout for these is 60 s */
    return test_main(argc, argv, "shared_kill");
}
