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

static void owners_of(const char *kind, int n)
{
    char ctx[64];
    snprintf(ctx, sizeof ctx, "owners %s", kind);
    test_context = ctx;
    new_name(n);
    struct rtm_shared *s = rtm_shared_create(name, kind, 1u << 20);
    CHECK(s != NULL);
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

    /* A child allocates ten blocks, publishes one, gives one to the heap,
     * and exits without freeing any. */
    size_t live_before = stats(h).live_blocks;
    pid_t child = fork();
    if (child == 0) {
        void *p[10];
        for (int i = 0; i < 10; i++) {
            p[i] = rtm_heap_alloc(h, 50 + 300 * (size_t)i);
            if (!p[i])
                _exit(1);
            memset(p[i], i, 50);
        }
        if (rtm_shared_publish(s, "kept", (char *)p[3] + 8) != 0)
            _exit(2);
        if (rtm_shared_set_owner(s, p[5], 0) != 0 || rtm_shared_owner(s, p[5]) != 0)
            _exit(3);
        _exit(0);
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

    /* A realloc by another process keeps the owner; so does one that
     * moves the block. alloc(0) has a usable byte (0 would mean no block). */
    child = fork();
    if (child == 0) {
        char *q = rtm_heap_realloc(h, mine, 20000); /* grows past its neighbours: moves */
        _exit(q && rtm_shared_owner(s, q) == me && rtm_shared_publish(s, "moved", q) == 0 ? 0 : 1);
    }
    CHECK_EQ(reap(child, NULL), 0);
    mine = rtm_shared_lookup(s, "moved");
    CHECK(mine != NULL);
    CHECK_EQ(rtm_shared_owner(s, mine), me);
    CHECK_EQ(rtm_shared_unpublish(s, "moved"), 0);
    void *zero = rtm_heap_alloc(h, 0);
    CHECK(zero && rtm_heap_usable_size(h, zero) >= 1);
    CHECK_EQ(rtm_heap_free(h, zero), 0);

    /* set_owner: to the heap, to a process that is gone (refused) */
    CHECK_EQ(rtm_shared_set_owner(s, mine, 0), 0);
    CHECK_EQ(rtm_shared_owner(s, mine), 0);
    CHECK_EQ(rtm_shared_set_owner(s, mine, (int)child), -ESRCH);
    CHECK_EQ(rtm_shared_set_owner(s, mine, me), 0);
    CHECK_EQ(rtm_shared_owner(s, mine), me);

    /* A pid the system gave to a new process: the record's start time
     * tells it from the one that allocated the block. */
    void *reused = rtm_heap_alloc(h, 64);
    CHECK(reused != NULL);
    uint32_t pid, stamp;
    rtm__owner_self(&pid, &stamp);
    CHECK_EQ(rtm__robust_set_owner(rtm__heap_ops(h), h, reused, pid, stamp + 1), 0);
    CHECK_EQ(rtm_shared_orphans(s, out, 16), 1);
    CHECK_EQ(out[0].offset, rtm_shared_to_offset(s, reused));
    CHECK_EQ(rtm_shared_reclaim(s, 0), 1);
    CHECK_EQ(rtm_heap_usable_size(h, reused), 0);

    /* A record its user overran: no owner known, never reclaimed, and the
     * block frees as any other. */
    char *over = rtm_heap_alloc(h, 40);
    CHECK(over != NULL);
    size_t u = rtm_heap_usable_size(h, over);
    memset(over, 0x5a, u + 16);
    CHECK_EQ(rtm_shared_owner(s, over), -EBADMSG);
    CHECK_EQ(rtm_shared_orphans(s, NULL, 0), 0);
    CHECK_EQ(rtm_heap_free(h, over), 0);
    CHECK_EQ(rtm_heap_check(h), 0);

    /* refusals */
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

    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
    test_context = NULL;
}

/* Many owners: 300 processes that run and hold a block each, then one
 * that exits holding five. Reclaiming that one finds its five however many
 * others own blocks. */
#define MANY 300

static void many_owners(void)
{
    test_context = "owners many";
    new_name(50);
    struct rtm_shared *s = rtm_shared_create(name, "tlsf", 1u << 20);
    CHECK(s != NULL);
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
                _exit(1);
            char c;
            (void)!read(go[0], &c, 1); /* until the parent closes the pipe */
            _exit(0);
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
                _exit(1);
        _exit(0);
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
        _exit(1);
    char c;
    (void)!write(go[1], "r", 1); /* allocated */
    (void)!read(go[2], &c, 1);   /* until the parent has tried to reclaim */
    memset(p, 0x77, 64);         /* still its block */
    _exit(rtm_heap_free(h, p) == 0 ? 0 : 2);
}

static void leader_gone(void)
{
    test_context = "owners zombie leader";
    new_name(60);
    struct rtm_shared *s = rtm_shared_create(name, "tlsf", 1u << 20);
    CHECK(s != NULL);
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
            _exit(3);
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
    test_context = NULL;
}

/* A segment whose log names an added pool: a shared heap takes none, so
 * attach refuses it, untouched. */
static void crafted_pool(void)
{
    test_context = "owners crafted pool";
    new_name(70);
    struct rtm_shared *s = rtm_shared_create(name, "heapmem", 1u << 20);
    CHECK(s != NULL);
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
    test_context = NULL;
}

static void test_owners(void)
{
    const char *const *kinds = rtm_heap_kinds();
    for (int k = 0; kinds[k]; k++)
        owners_of(kinds[k], k);
    many_owners();
    leader_gone();
    crafted_pool();
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
    _exit(code);
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
    _exit(0); /* its blocks stay: the parent reclaims them */
}

/* A victim: attaches (at its own address) and churns until killed. */
static void victim(struct control *c, uint64_t seed)
{
    struct rtm_shared *s = rtm_shared_attach(name);
    if (!s)
        _exit(10);
    __atomic_fetch_add(&c->attached, 1, __ATOMIC_RELEASE);
    struct rtm_heap *h = rtm_shared_heap(s);
    void *p[32] = { 0 };
    uint64_t rng = seed;
    for (;;) {
        size_t k = tk_rng_below(&rng, 32);
        if (p[k] && tk_rng_below(&rng, 2)) {
            if (rtm_heap_free(h, p[k]) != 0)
                _exit(11);
            p[k] = NULL;
            continue;
        }
        size_t want = 1 + tk_rng_below(&rng, tk_rng_below(&rng, 4) ? 512 : 8192);
        void *q = p[k] ? rtm_heap_realloc(h, p[k], want) : rtm_heap_alloc(h, want);
        if (!q) {
            if (errno == ENOTRECOVERABLE)
                _exit(12);
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

static void test_kill(const char *kind, unsigned long kills)
{
    char ctx[64];
    snprintf(ctx, sizeof ctx, "kill %s", kind);
    test_context = ctx;
    new_name(100);
    struct rtm_shared *s = rtm_shared_create(name, kind, 8u << 20);
    CHECK(s != NULL);
    if (!s)
        return;
    struct rtm_heap *h = rtm_shared_heap(s);
    struct control *c =
        mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(c != MAP_FAILED);
    if (c == MAP_FAILED)
        return;
    memset(c, 0, sizeof *c);
    struct rtm_heap_lock_stats l0;
    CHECK_EQ(rtm_heap_lock_stats(h, &l0), 0);
    uint64_t rollbacks0 = rtm_undo_of(h)->rollbacks;

    pid_t hp = fork();
    if (hp == 0)
        holder(h, c);
    kids[0] = hp;
    sleep_us(20000); /* the holder's blocks first */

    uint64_t rng = 0x6b111u ^ (uint64_t)kills;
    unsigned long killed = 0, not_killed = 0, check_failed = 0, reclaimed = 0;
    for (unsigned long i = 0; i < kills && !__atomic_load_n(&c->failed, __ATOMIC_ACQUIRE); i++) {
        pid_t v = fork();
        if (v == 0)
            victim(c, rng + i);
        kids[1] = v;
        /* Killed a random 1 to 500 us into its churn, once it has attached
         * (or after 2 s, if attach never returns: a failure below). */
        for (int wait = 0; __atomic_load_n(&c->attached, __ATOMIC_ACQUIRE) == i && wait < 20000;
             wait++)
            sleep_us(100);
        sleep_us(1 + tk_rng_below(&rng, 500));
        kill(v, SIGKILL);
        int st = 0;
        reap(v, &st);
        kids[1] = 0;
        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
            killed++;
        else
            not_killed++;
        /* The next call takes the lock: it recovers a death, then checks. */
        if (rtm_heap_check(h) != 0)
            check_failed++;
        long r = rtm_shared_reclaim(s, v);
        if (r >= 0)
            reclaimed += (unsigned long)r;
        else
            check_failed++;
    }
    __atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
    int hst = reap(hp, NULL);
    kids[0] = 0;
    if (hst != 0)
        fprintf(stderr, "[%s] %s\n", ctx, c->why[0] ? c->why : "holder died");
    CHECK_EQ(hst, 0);
    CHECK_EQ(not_killed, 0);
    CHECK_EQ(killed, kills);
    CHECK_EQ(check_failed, 0);

    struct rtm_heap_lock_stats l1;
    CHECK_EQ(rtm_heap_lock_stats(h, &l1), 0);
    uint64_t deaths = l1.owner_deaths - l0.owner_deaths;
    uint64_t recovered = l1.recovered - l0.recovered;
    uint64_t rolled = rtm_undo_of(h)->rollbacks - rollbacks0;
    CHECK_EQ(l1.recoverable, 1);
    CHECK_EQ(recovered, deaths);
    CHECK(deaths > kills / 4); /* the kills did land inside calls */
    CHECK_EQ(rtm_undo_of(h)->overflows, 0);

    /* The holder exited without freeing: its blocks go back too, and then
     * the heap holds nothing at all. */
    long holder_blocks = rtm_shared_reclaim(s, 0);
    CHECK_EQ(holder_blocks, HOLDER_BLOCKS);
    struct rtm_heap_stats st = stats(h);
    CHECK_EQ(st.live_blocks, 0);
    CHECK_EQ(st.used_bytes, 0);
    CHECK_EQ(rtm_heap_check(h), 0);
    bool empty = st.live_blocks == 0 && st.used_bytes == 0;
    printf("%-8s %lu processes killed: %llu holding the heap's lock (%llu mid-call, rolled back), "
           "%llu recovered, %llu unrecoverable; holder: %llu verifications, %llu reallocs, %s; "
           "%lu blocks of the dead reclaimed; heap %s at the end\n",
           kind, killed, (unsigned long long)deaths, (unsigned long long)rolled,
           (unsigned long long)recovered, (unsigned long long)(deaths - recovered),
           (unsigned long long)c->verified, (unsigned long long)c->reallocs,
           hst == 0 ? "nothing damaged" : "FAILED", reclaimed, empty ? "empty" : "NOT empty");
    munmap(c, sizeof *c);
    CHECK_EQ(rtm_shared_detach(s), 0);
    CHECK_EQ(rtm_shared_unlink(name), 0);
    test_context = NULL;
}

int main(int argc, char **argv)
{
    if (test_emulated() && argc >= 2)
        return test_skip_emulated(
            "shared_kill",
            "owners that die are found through the kernel's robust futex list, which qemu-user "
            "does not implement: this needs a real kernel (a board, or qemu-system)");
    owner_pid = (int)getpid();
    atexit(remove_name);
    static const int fatal[] = {
        SIGALRM, SIGTERM, SIGINT, SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE
    };
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        signal(fatal[i], cleanup_on_signal);
    alarm(50); /* CTest's timeout for these is 60 s */
    if (argc == 2 && strcmp(argv[1], "owners") == 0)
        test_owners();
    else if ((argc == 3 || argc == 4) && strcmp(argv[1], "kill") == 0)
        test_kill(argv[2], argc == 4 ? strtoul(argv[3], NULL, 10) : 1000);
    else {
        fprintf(stderr, "usage: shared_kill owners | kill KIND [KILLS]\n");
        return 2;
    }
    return test_summary("shared_kill");
}
