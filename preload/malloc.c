/*
 * librtmem-malloc: the C library's malloc family served by one rtmem heap,
 * for a program that is not changed: preloaded (LD_PRELOAD, as `rtmem run`
 * does), or linked into a dynamically linked program as librtmem-malloc.a.
 * Its manual is docs/run.md.
 *
 * The heap. At the first call of the family, the library reads its
 * configuration from the environment, opens an arena of the pool's size
 * (rtmem/arena.h: anonymous memory or huge pages, prefaulted, locked as
 * asked) and creates one heap of the kind asked on it. Every call of the
 * family is then served by that heap, under one priority-inheritance mutex
 * of the library's own: malloc, calloc, realloc, reallocarray, free,
 * memalign, posix_memalign, aligned_alloc, valloc, pvalloc and
 * malloc_usable_size, with the C library's semantics (realloc(p, 0) frees
 * p and gives NULL; memalign rounds an alignment up to a power of two;
 * posix_memalign returns EINVAL or ENOMEM).
 *
 * Blocks that are not the heap's: a call the setting-up thread makes
 * while the heap is being set up (dlsym and the C library's own calls may
 * allocate) goes to the C library's allocator (__libc_malloc and its
 * like), as does every allocation with RTMEM_MALLOC_ON_FULL=fallback once
 * the pool is exhausted; another thread's first call waits until the heap
 * is ready. A free, realloc or malloc_usable_size of a block outside the
 * pool goes to the C library, whose block it is.
 *
 * fork: the mutex is taken before the fork (pthread_atfork) and given back
 * in the parent; the child, whose one thread holds nothing, makes a new
 * one. The child's heap is its copy of the parent's, consistent.
 *
 * glibc and glibc-rt: RTMEM_MALLOC_KIND may also name the C library's own
 * allocator, so that a program is measured the same way on it: every call
 * goes to glibc (__libc_malloc and its like), counted and timed as the
 * heap's are, with no lock of the library's (glibc has its own). glibc is
 * its defaults; glibc-rt is glibc set up the way real-time guides say, at
 * the first call: mallopt M_MMAP_MAX 0, M_TRIM_THRESHOLD -1 and
 * M_ARENA_MAX 1, then a reserve of RTMEM_MALLOC_POOL bytes allocated, every
 * page written, locked as RTMEM_MALLOC_LOCK says (mlock of its pages) and
 * freed: glibc keeps it as its heap's free top, never trimmed. The summary
 * gives glibc's memory at the end (mallinfo2) in place of the pool's.
 *
 * Configuration (the environment, read once, at the first call):
 *   RTMEM_MALLOC_KIND     the heap kind (rtm_heap_kinds()), or glibc, or
 *                         glibc-rt; default tlsf
 *   RTMEM_MALLOC_POOL     the pool's bytes, with K, M, G or T (glibc-rt:
 *                         its reserve; glibc: unused); default 64M
 *   RTMEM_MALLOC_HUGE     2M or 1G: huge pages of that size (the hugetlb
 *                         pool); default base pages (not for glibc's)
 *   RTMEM_MALLOC_LOCK     try (default): locked if the kernel allows, else
 *                         not (the summary says which); must: a pool that
 *                         cannot be locked ends the program; no
 *   RTMEM_MALLOC_HARDEN   o1 (default), none or full (rtmem/heap.h; rtmem's
 *                         kinds only)
 *   RTMEM_MALLOC_ON_FULL  fail (default): an allocation the pool cannot
 *                         serve gives NULL with ENOMEM; fallback: it goes
 *                         to the C library's allocator, counted (rtmem's
 *                         kinds only). xvheap and zsheap need fallback:
 *                         they serve no block above a page's
 *                         (rtmem/xvheap.h, rtmem/zsheap.h)
 *   RTMEM_MALLOC_SUMMARY  where the summary goes at exit: none (default),
 *                         stderr, or a file
 *   RTMEM_MALLOC_JSON     a file: the summary as JSON (rtmem-malloc/1)
 *   RTMEM_MALLOC_SIGNAL   a signal number: each one received writes the
 *                         summary (to standard error when
 *                         RTMEM_MALLOC_SUMMARY is none) and the JSON then
 *                         (the program's own handler for it, if it sets
 *                         one later, wins)
 *   RTMEM_MALLOC_TIME     1 (default): each call is timed, its worst kept;
 *                         0: not timed
 *   RTMEM_MALLOC_PID      the pid whose summary goes to the files named; a
 *                         process with another pid (a forked child) writes
 *                         FILE.<pid> instead (rtmem run sets it)
 * A value the library cannot use, or a pool it cannot have as asked, ends
 * the program at its first call of the family, before anything is
 * allocated, with a message naming the cause and exit status 127: a pool
 * other than the one asked is never used silently.
 *
 * The summary is written at exit (a destructor, run after the program's
 * own exit handlers), at _exit and _Exit (interposed: the summary, then
 * the process ends), and on RTMEM_MALLOC_SIGNAL. A process killed by a
 * signal writes none.
 *
 * Cost per call: the mutex (uncontended: two atomic operations), the
 * heap's call, and with timing two reads of the CPU's counter (x86's TSC,
 * arm64's virtual counter; CLOCK_MONOTONIC elsewhere). docs/run.md gives
 * the measured figures.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rtmem/arena.h"
#include "rtmem/heap.h"
#include "rtmem/xvheap.h"
#include "rtmem/zsheap.h"

#define EXPORT __attribute__((visibility("default")))
#define TLS    __attribute__((tls_model("initial-exec"))) __thread

/* Exit status of a program whose pool cannot be had as asked. */
#define SETUP_FAILED 127

/* ---- the C library's allocator, for the blocks that are not the heap's ----------- */

/* Weak: a program linked fully statically has none (then nothing falls
 * back, and a foreign block cannot exist). */
extern void *__libc_malloc(size_t size) __attribute__((weak));
extern void *__libc_calloc(size_t n, size_t size) __attribute__((weak));
extern void *__libc_realloc(void *p, size_t size) __attribute__((weak));
extern void *__libc_memalign(size_t alignment, size_t size) __attribute__((weak));
extern void __libc_free(void *p) __attribute__((weak));

static size_t (*libc_usable_size)(void *p); /* dlsym(RTLD_NEXT), after the set-up */

/* ---- the configuration, the heap, the statistics ----------------------------------- */

enum { OP_MALLOC, OP_CALLOC, OP_REALLOC, OP_ALIGNED, OP_FREE, N_OPS };
static const char *const op_names[N_OPS] = { "malloc", "calloc", "realloc", "aligned", "free" };

enum { RTMEM_HEAP, GLIBC, GLIBC_RT };

static struct {
    char kind[32];
    int glibc; /* RTMEM_HEAP, or GLIBC and GLIBC_RT: the C library's allocator */
    size_t pool, page;
    int lock;    /* RTM_ARENA_LOCK_* */
    int harden;  /* RTM_HEAP_HARDEN_* */
    bool fallback, timed;
    char summary[PATH_MAX], json[PATH_MAX]; /* "" none; "-" stderr (summary) */
    int signal;
    long pid; /* RTMEM_MALLOC_PID, or the pid at set-up */
} cfg;

static struct rtm_arena arena;
static int reserve_lock_err = -1; /* glibc-rt: mlock's errno for the reserve; 0 locked */
static bool forked_copy; /* a forked child: its copy of the pool is not locked (fork
                          * does not carry memory locks) */
static struct rtm_heap *heap;
static uintptr_t pool_lo, pool_bytes; /* the arena's span: the heap's blocks lie in it */
static pthread_mutex_t mutex;

enum { NOT_SET_UP, SETTING_UP, READY };
static _Atomic int state = NOT_SET_UP;
static TLS bool setting_up; /* this thread is setting up: its calls go to the C library */

/* Counted under the mutex, but for the atomic ones (calls made outside it). */
static struct {
    uint64_t calls[N_OPS];
    uint64_t failed;         /* allocations that gave NULL (ENOMEM, or a bad argument) */
    uint64_t fallbacks;      /* allocations the C library served, the pool being full */
    uint64_t fallback_bytes; /* bytes they asked */
    uint64_t refused_frees;  /* frees the heap refused (not one of its live blocks) */
    _Atomic uint64_t foreign; /* frees, reallocs of blocks that are the C library's */
    _Atomic uint64_t early;   /* calls made before the heap was ready: the C library's */
    _Atomic uint64_t contended;
    _Atomic uint64_t worst_ticks[N_OPS];
} st;

static uint64_t start_ticks, start_ns;
/* The process whose calls the counters hold: the one that set up, then
 * each forked child (fork_child_counters). A child that shares its
 * parent's memory without a fork's handlers (vfork, clone) and ends with
 * _exit sees another pid: it writes nothing, its counters being the
 * parent's. */
static long counted_pid;

/* ---- time ------------------------------------------------------------------------- */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The CPU's counter where reading it is cheap and steady; nanoseconds
 * elsewhere. */
static inline uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return mono_ns();
#endif
}

/* Nanoseconds per tick, from the two clocks since the set-up. */
static double ns_per_tick(void)
{
    uint64_t t = ticks() - start_ticks, n = mono_ns() - start_ns;
    return t ? (double)n / (double)t : 1.0;
}

static void keep_worst(int op, uint64_t t0)
{
    uint64_t d = ticks() - t0, w = atomic_load_explicit(&st.worst_ticks[op], memory_order_relaxed);
    while (d > w && !atomic_compare_exchange_weak_explicit(&st.worst_ticks[op], &w, d,
                                                          memory_order_relaxed,
                                                          memory_order_relaxed))
        ;
}

/* ---- the mutex ---------------------------------------------------------------------- */

static void mutex_make(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
    pthread_mutex_init(&mutex, &a);
    pthread_mutexattr_destroy(&a);
}

static void take(void)
{
    if (pthread_mutex_trylock(&mutex) != 0) {
        atomic_fetch_add_explicit(&st.contended, 1, memory_order_relaxed);
        pthread_mutex_lock(&mutex);
    }
}

static void give(void)
{
    pthread_mutex_unlock(&mutex);
}

static void fork_prepare(void)
{
    pthread_mutex_lock(&mutex);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&mutex);
}

/* The child's summary counts its own calls (its heap's peak is the
 * copy's: the parent's before the fork included). One thread: plain
 * stores. */
static void fork_child_counters(void)
{
    counted_pid = (long)getpid();
    forked_copy = true;
    memset(st.calls, 0, sizeof(st.calls));
    st.failed = st.fallbacks = st.fallback_bytes = st.refused_frees = 0;
    atomic_store(&st.foreign, 0);
    atomic_store(&st.early, 0);
    atomic_store(&st.contended, 0);
    for (int i = 0; i < N_OPS; i++)
        atomic_store(&st.worst_ticks[i], 0);
}

static void fork_child(void)
{
    mutex_make(); /* the parent's holder is not in this process */
    fork_child_counters();
}

/* ---- the set-up --------------------------------------------------------------------- */

/* Says why the program cannot go on, and ends it. */
__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof(buf) - 2)
        n = (int)sizeof(buf) - 2;
    buf[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, (size_t)n);
    (void)w;
    _exit(SETUP_FAILED);
}

/* "64M" and its like: bytes, or 0 when malformed or overflowing. */
static size_t parse_bytes(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return 0;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (*end == 'i' && end[1] == 'B')
        end += 2;
    else if (*end == 'B')
        end++;
    if (*end || (shift && v > (ULLONG_MAX >> shift)) || (v << shift) > SIZE_MAX)
        return 0;
    return (size_t)(v << shift);
}

static const char *env(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

static void read_config(void)
{
    const char *v = env("RTMEM_MALLOC_KIND", "tlsf");
    bool known = false;
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        known |= strcmp(*k, v) == 0;
    cfg.glibc = strcmp(v, "glibc") == 0 ? GLIBC : strcmp(v, "glibc-rt") == 0 ? GLIBC_RT : RTMEM_HEAP;
    if ((!known && !cfg.glibc) || strlen(v) >= sizeof(cfg.kind))
        die("librtmem-malloc: RTMEM_MALLOC_KIND=%s: no such heap kind (rtmem kinds lists them; "
            "or glibc, glibc-rt)",
            v);
    if (cfg.glibc && !__libc_malloc)
        die("librtmem-malloc: RTMEM_MALLOC_KIND=%s: this program has no C library allocator "
            "to measure (linked statically)",
            v);
    snprintf(cfg.kind, sizeof(cfg.kind), "%s", v);
    v = env("RTMEM_MALLOC_POOL", "64M");
    if (!(cfg.pool = parse_bytes(v)) || cfg.pool < 4096)
        die("librtmem-malloc: RTMEM_MALLOC_POOL=%s: a size of 4K or more, please (64M, 1G)", v);
    v = env("RTMEM_MALLOC_HUGE", "");
    if (!*v)
        cfg.page = 0;
    else if (strcmp(v, "2M") == 0)
        cfg.page = RTM_ARENA_PAGE_2M;
    else if (strcmp(v, "1G") == 0)
        cfg.page = RTM_ARENA_PAGE_1G;
    else
        die("librtmem-malloc: RTMEM_MALLOC_HUGE=%s: 2M or 1G, please", v);
    if (cfg.page && cfg.glibc)
        die("librtmem-malloc: RTMEM_MALLOC_HUGE=%s: not for %s, whose heap is glibc's", v,
            cfg.kind);
    v = env("RTMEM_MALLOC_LOCK", "try");
    if (strcmp(v, "try") == 0)
        cfg.lock = RTM_ARENA_LOCK_TRY;
    else if (strcmp(v, "must") == 0)
        cfg.lock = RTM_ARENA_LOCK_MUST;
    else if (strcmp(v, "no") == 0)
        cfg.lock = RTM_ARENA_LOCK_NONE;
    else
        die("librtmem-malloc: RTMEM_MALLOC_LOCK=%s: try, must or no, please", v);
    v = env("RTMEM_MALLOC_HARDEN", "o1");
    if (strcmp(v, "o1") == 0)
        cfg.harden = RTM_HEAP_HARDEN_O1;
    else if (strcmp(v, "none") == 0)
        cfg.harden = RTM_HEAP_HARDEN_NONE;
    else if (strcmp(v, "full") == 0)
        cfg.harden = RTM_HEAP_HARDEN_FULL;
    else
        die("librtmem-malloc: RTMEM_MALLOC_HARDEN=%s: o1, none or full, please", v);
    v = env("RTMEM_MALLOC_ON_FULL", "fail");
    if (strcmp(v, "fail") != 0 && strcmp(v, "fallback") != 0)
        die("librtmem-malloc: RTMEM_MALLOC_ON_FULL=%s: fail or fallback, please", v);
    cfg.fallback = strcmp(v, "fallback") == 0;
    if (cfg.fallback && !__libc_malloc)
        die("librtmem-malloc: RTMEM_MALLOC_ON_FULL=fallback: this program has no C library "
            "allocator to fall back on (linked statically)");
    /* the page kinds serve blocks of a page at most */
    size_t most = strcmp(cfg.kind, "xvheap") == 0   ? rtm_xvheap_max_request(RTM_XVHEAP_PAGE_SIZE)
                  : strcmp(cfg.kind, "zsheap") == 0 ? RTM_ZSHEAP_MAX_REQUEST
                                                    : 0;
    if (most && !cfg.fallback)
        die("librtmem-malloc: RTMEM_MALLOC_KIND=%s serves blocks of at most %zu bytes (a "
            "page's): set RTMEM_MALLOC_ON_FULL=fallback to take larger ones from the C "
            "library, or pick another kind",
            cfg.kind, most);
    v = env("RTMEM_MALLOC_SUMMARY", "none");
    if (strcmp(v, "none") == 0)
        cfg.summary[0] = '\0';
    else if (strcmp(v, "stderr") == 0)
        snprintf(cfg.summary, sizeof(cfg.summary), "-");
    else if (strlen(v) + 24 < sizeof(cfg.summary))
        snprintf(cfg.summary, sizeof(cfg.summary), "%s", v);
    else
        die("librtmem-malloc: RTMEM_MALLOC_SUMMARY: a path too long");
    v = env("RTMEM_MALLOC_JSON", "");
    if (strlen(v) + 24 >= sizeof(cfg.json))
        die("librtmem-malloc: RTMEM_MALLOC_JSON: a path too long");
    snprintf(cfg.json, sizeof(cfg.json), "%s", v);
    v = env("RTMEM_MALLOC_SIGNAL", "");
    char *end;
    cfg.signal = *v ? (int)strtol(v, &end, 10) : 0;
    if (*v && (*end || cfg.signal <= 0 || cfg.signal >= NSIG || cfg.signal == SIGKILL ||
               cfg.signal == SIGSTOP))
        die("librtmem-malloc: RTMEM_MALLOC_SIGNAL=%s: a signal number, please (10 for "
            "SIGUSR1)",
            v);
    v = env("RTMEM_MALLOC_TIME", "1");
    if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
        die("librtmem-malloc: RTMEM_MALLOC_TIME=%s: 1 or 0, please", v);
    cfg.timed = strcmp(v, "1") == 0;
    v = env("RTMEM_MALLOC_PID", "");
    cfg.pid = *v ? strtol(v, NULL, 10) : (long)getpid();
}

static void write_reports(bool signalled);

static void on_signal(int sig)
{
    (void)sig;
    int saved = errno;
    write_reports(true);
    errno = saved;
}

static void signal_set_up(void)
{
    struct sigaction old;
    /* a signal the program was started ignoring stays ignored */
    if (!cfg.signal || (sigaction(cfg.signal, NULL, &old) == 0 && old.sa_handler == SIG_IGN))
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(cfg.signal, &sa, NULL);
}

/* glibc-rt's settings and reserve (glibc: nothing), by the thread setting
 * up: its own calls go to glibc. A forked child's counters start again
 * (there is no mutex to remake). */
static void glibc_set_up(void)
{
    pthread_atfork(NULL, NULL, fork_child_counters);
    if (cfg.glibc != GLIBC_RT)
        return;
    if (mallopt(M_MMAP_MAX, 0) != 1 || mallopt(M_TRIM_THRESHOLD, -1) != 1 ||
        mallopt(M_ARENA_MAX, 1) != 1)
        die("librtmem-malloc: glibc-rt: glibc's mallopt refused a setting");
    volatile unsigned char *p = __libc_malloc(cfg.pool);
    if (!p)
        die("librtmem-malloc: glibc-rt: a reserve of %zu bytes cannot be had", cfg.pool);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < cfg.pool; i += page)
        p[i] = 0;
    if (cfg.lock != RTM_ARENA_LOCK_NONE) {
        reserve_lock_err = mlock((const void *)p, cfg.pool) == 0 ? 0 : errno;
        if (reserve_lock_err && cfg.lock == RTM_ARENA_LOCK_MUST)
            die("librtmem-malloc: glibc-rt: its reserve of %zu bytes cannot be locked: %s",
                cfg.pool, strerror(reserve_lock_err));
    }
    __libc_free((void *)p);
}

/* The first call of the family, in any thread: sets the heap up, or waits
 * for the thread that does. Returns true when the heap serves this call;
 * false for a call of the thread setting up (the C library serves it). */
static bool set_up(void)
{
    if (setting_up)
        return false;
    int expect = NOT_SET_UP;
    if (!atomic_compare_exchange_strong(&state, &expect, SETTING_UP)) {
        while (atomic_load(&state) != READY)
            sched_yield();
        return true;
    }
    setting_up = true;
    counted_pid = (long)getpid();
    read_config();
    start_ticks = ticks();
    start_ns = mono_ns();
    libc_usable_size = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
    if (cfg.glibc) {
        glibc_set_up();
        signal_set_up();
        setting_up = false;
        atomic_store(&state, READY);
        return true;
    }
    struct rtm_arena_config ac = {
        .source = RTM_ARENA_ANON,
        .size_bytes = cfg.pool,
        .page_bytes = cfg.page,
        .prefault = RTM_ARENA_PREFAULT_TOUCH,
        .lock = cfg.lock,
    };
    int rc = rtm_arena_open(&arena, &ac);
    if (rc != 0)
        die("librtmem-malloc: the pool of %zu bytes cannot be had: %s", cfg.pool, arena.message);
    struct rtm_heap_config hc = { .hardening = cfg.harden };
    heap = rtm_arena_heap(&arena, cfg.kind, &hc);
    if (!heap)
        die("librtmem-malloc: no %s heap on the pool: %s", cfg.kind, strerror(errno));
    pool_lo = (uintptr_t)arena.base;
    pool_bytes = arena.size_bytes;
    mutex_make();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    signal_set_up();
    setting_up = false;
    atomic_store(&state, READY);
    return true;
}

static inline bool ours(const void *p)
{
    return (uintptr_t)p - pool_lo < pool_bytes;
}

static inline bool ready(void)
{
    return atomic_load_explicit(&state, memory_order_acquire) == READY || set_up();
}

/* ---- the C library's, for what the heap does not serve ------------------------------ */

static void *early_alloc(size_t alignment, size_t size, bool zero)
{
    atomic_fetch_add_explicit(&st.early, 1, memory_order_relaxed);
    if (!__libc_malloc) {
        errno = ENOMEM;
        return NULL;
    }
    if (zero)
        return __libc_calloc(1, size);
    return alignment ? __libc_memalign(alignment, size) : __libc_malloc(size);
}

/* An allocation the full pool could not serve: NULL and ENOMEM, or the C
 * library's block. Called under the mutex. */
static void *full(size_t alignment, size_t size, bool zero)
{
    if (!cfg.fallback) {
        st.failed++;
        errno = ENOMEM;
        return NULL;
    }
    void *p = zero ? __libc_calloc(1, size)
              : alignment ? __libc_memalign(alignment, size)
                          : __libc_malloc(size);
    if (p) {
        st.fallbacks++;
        st.fallback_bytes += size;
    } else {
        st.failed++;
    }
    return p;
}

/* ---- glibc and glibc-rt: the C library's calls, counted and timed -------------------- */

static inline void count(uint64_t *c)
{
    __atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

static void *glibc_allocate(int op, size_t alignment, size_t size)
{
    uint64_t t0 = cfg.timed ? ticks() : 0;
    void *p = alignment         ? __libc_memalign(alignment, size)
              : op == OP_CALLOC ? __libc_calloc(1, size)
                                : __libc_malloc(size);
    count(&st.calls[op]);
    if (!p)
        count(&st.failed);
    if (cfg.timed)
        keep_worst(op, t0);
    return p;
}

static void glibc_free(void *p)
{
    uint64_t t0 = cfg.timed ? ticks() : 0;
    __libc_free(p);
    count(&st.calls[OP_FREE]);
    if (cfg.timed)
        keep_worst(OP_FREE, t0);
}

static void *glibc_realloc(void *p, size_t size)
{
    uint64_t t0 = cfg.timed ? ticks() : 0;
    void *q = __libc_realloc(p, size);
    count(&st.calls[OP_REALLOC]);
    if (!q)
        count(&st.failed);
    if (cfg.timed)
        keep_worst(OP_REALLOC, t0);
    return q;
}

/* ---- the family ---------------------------------------------------------------------- */

static void *allocate(int op, size_t alignment, size_t size)
{
    if (!ready())
        return early_alloc(alignment, size, op == OP_CALLOC);
    if (cfg.glibc)
        return glibc_allocate(op, alignment, size);
    uint64_t t0 = cfg.timed ? ticks() : 0;
    take();
    void *p = alignment ? rtm_heap_aligned_alloc(heap, alignment, size)
              : op == OP_CALLOC ? rtm_heap_calloc(heap, 1, size)
                                : rtm_heap_alloc(heap, size);
    st.calls[op]++;
    if (!p)
        p = full(alignment, size, op == OP_CALLOC);
    give();
    if (cfg.timed)
        keep_worst(op, t0);
    return p;
}

EXPORT void *malloc(size_t size)
{
    return allocate(OP_MALLOC, 0, size);
}

EXPORT void *calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return allocate(OP_CALLOC, 0, n * size);
}

EXPORT void free(void *p)
{
    if (!p)
        return;
    bool is_ready = atomic_load_explicit(&state, memory_order_acquire) == READY;
    if (is_ready && cfg.glibc) {
        glibc_free(p);
        return;
    }
    if (!is_ready || !ours(p)) {
        atomic_fetch_add_explicit(&st.foreign, 1, memory_order_relaxed);
        if (__libc_free)
            __libc_free(p);
        return;
    }
    uint64_t t0 = cfg.timed ? ticks() : 0;
    take();
    st.calls[OP_FREE]++;
    if (rtm_heap_free(heap, p) != 0)
        st.refused_frees++;
    give();
    if (cfg.timed)
        keep_worst(OP_FREE, t0);
}

/* The usable size of a block of either allocator. */
static size_t usable(const void *p)
{
    if (!cfg.glibc && ours(p)) {
        take();
        size_t n = rtm_heap_usable_size(heap, p);
        give();
        return n;
    }
    return libc_usable_size ? libc_usable_size((void *)p) : 0;
}

EXPORT void *realloc(void *p, size_t size)
{
    if (!p)
        return malloc(size);
    if (size == 0) { /* the C library's: p freed, NULL */
        free(p);
        return NULL;
    }
    bool is_ready = atomic_load_explicit(&state, memory_order_acquire) == READY;
    if (is_ready && cfg.glibc)
        return glibc_realloc(p, size);
    if (!is_ready || !ours(p)) {
        atomic_fetch_add_explicit(&st.foreign, 1, memory_order_relaxed);
        return __libc_realloc ? __libc_realloc(p, size) : NULL;
    }
    uint64_t t0 = cfg.timed ? ticks() : 0;
    take();
    st.calls[OP_REALLOC]++;
    if (rtm_heap_usable_size(heap, p) == 0) { /* not one of its live blocks */
        st.refused_frees++;
        give();
        errno = EINVAL;
        return NULL;
    }
    void *q = rtm_heap_realloc(heap, p, size);
    if (!q && cfg.fallback) { /* the pool is full: the block moves to the C library */
        q = full(0, size, false);
        if (q) {
            size_t have = rtm_heap_usable_size(heap, p);
            memcpy(q, p, have < size ? have : size);
            if (rtm_heap_free(heap, p) != 0)
                st.refused_frees++;
        }
    } else if (!q) {
        st.failed++;
        errno = ENOMEM;
    }
    give();
    if (cfg.timed)
        keep_worst(OP_REALLOC, t0);
    return q;
}

EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n * size);
}

/* The next power of two of a (at least a), or 0 beyond size_t. */
static size_t power_of_two(size_t a)
{
    size_t p = 1;
    while (p < a) {
        if (p > SIZE_MAX / 2)
            return 0;
        p <<= 1;
    }
    return p;
}

EXPORT void *memalign(size_t alignment, size_t size)
{
    size_t a = power_of_two(alignment ? alignment : 1);
    if (!a) {
        errno = EINVAL;
        return NULL;
    }
    return allocate(OP_ALIGNED, a, size);
}

EXPORT void *aligned_alloc(size_t alignment, size_t size)
{
    return memalign(alignment, size);
}

EXPORT int posix_memalign(void **out, size_t alignment, size_t size)
{
    if (!alignment || (alignment & (alignment - 1)) || alignment % sizeof(void *))
        return EINVAL;
    int saved = errno;
    void *p = allocate(OP_ALIGNED, alignment, size);
    if (!p) {
        errno = saved;
        return ENOMEM;
    }
    *out = p;
    return 0;
}

EXPORT void *valloc(size_t size)
{
    return memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

EXPORT void *pvalloc(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (size > SIZE_MAX - (page - 1)) {
        errno = ENOMEM;
        return NULL;
    }
    size_t rounded = size ? (size + page - 1) / page * page : page;
    return memalign(page, rounded);
}

EXPORT size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    if (atomic_load_explicit(&state, memory_order_acquire) != READY)
        return libc_usable_size ? libc_usable_size(p) : 0;
    return usable(p);
}

/* ---- the summary ---------------------------------------------------------------------- */

/* Appends to a buffer, never past its end. */
struct out {
    char *buf;
    size_t size, len;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
    if (o->len >= o->size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len = o->len + (size_t)n < o->size ? o->len + (size_t)n : o->size - 1;
}

static const char *lock_word(void)
{
    if (forked_copy && cfg.lock != RTM_ARENA_LOCK_NONE &&
        arena.report.lock_state != RTM_ARENA_LOCKED_HUGETLB)
        return "NOT locked (a forked copy)";
    if (cfg.glibc == GLIBC)
        return "not locked (glibc's defaults)";
    if (cfg.glibc == GLIBC_RT)
        return reserve_lock_err == -1 ? "not locked (not asked)"
               : reserve_lock_err != 0 ? "reserve NOT locked"
               : forked_copy           ? "reserve NOT locked (a forked copy)"
                                       : "reserve locked";
    switch (arena.report.lock_state) {
    case RTM_ARENA_LOCKED: return "locked";
    case RTM_ARENA_LOCKED_HUGETLB: return "huge pages (never paged out)";
    case RTM_ARENA_LOCK_IGNORED: return "lock ignored by the kernel";
    case RTM_ARENA_LOCKED_ON_FAULT: return "locked on fault";
    default: return cfg.lock == RTM_ARENA_LOCK_NONE ? "not locked (not asked)" : "NOT locked";
    }
}

/* glibc's memory now (mallinfo2): its heap, and its mmapped blocks. Not
 * in a signal handler, which may have stopped glibc holding its lock:
 * false then. */
static bool glibc_memory(bool signalled, size_t *heap_bytes, size_t *mmapped_bytes,
                         size_t *mmapped_blocks)
{
    *heap_bytes = *mmapped_bytes = *mmapped_blocks = 0;
    if (signalled)
        return false;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 m = mallinfo2();
    *heap_bytes = m.arena;
    *mmapped_bytes = m.hblkhd;
    *mmapped_blocks = m.hblks;
    return true;
#else
    return false;
#endif
}

/* The summary's worst line: each operation's worst call, what it includes. */
static void put_worst(struct out *o, const char *includes)
{
    if (!cfg.timed) {
        put(o, "  worst      not timed (RTMEM_MALLOC_TIME=0)\n");
        return;
    }
    double npt = ns_per_tick();
    put(o, "  worst     ");
    for (int i = 0; i < N_OPS; i++)
        put(o, " %s %.0f ns", op_names[i], (double)atomic_load(&st.worst_ticks[i]) * npt);
    put(o, " (a call's whole time, %s)\n", includes);
}

static const char *const glibc_settings =
    "mallopt M_MMAP_MAX 0, M_TRIM_THRESHOLD -1, M_ARENA_MAX 1; the reserve prefaulted";

/* glibc's summary (text) into o. */
static void glibc_summary_text(struct out *o, bool signalled)
{
    if (cfg.glibc == GLIBC_RT)
        put(o, "librtmem-malloc (pid %ld): glibc-rt: glibc's malloc, %s: %zu bytes (%s)\n",
            (long)getpid(), glibc_settings, cfg.pool, lock_word());
    else
        put(o, "librtmem-malloc (pid %ld): glibc: glibc's malloc at its defaults\n",
            (long)getpid());
    put(o, "  calls     ");
    for (int i = 0; i < N_OPS; i++)
        put(o, " %s %" PRIu64, op_names[i], st.calls[i]);
    put(o, "; %" PRIu64 " calls before the set-up was done\n", atomic_load(&st.early));
    size_t heap_bytes, mmapped_bytes, mmapped_blocks;
    if (glibc_memory(signalled, &heap_bytes, &mmapped_bytes, &mmapped_blocks))
        put(o, "  memory     glibc's heap %zu bytes at the end; %zu bytes in %zu mmapped blocks\n",
            heap_bytes, mmapped_bytes, mmapped_blocks);
    else
        put(o, "  memory     glibc's not read (in a signal handler)\n");
    put(o, "  failed     %" PRIu64 " allocations\n", st.failed);
    put_worst(o, "glibc's own locking included");
}

/* The summary (text) into o. Reads the counters without the mutex: a
 * signal may have stopped a call holding it. */
static void summary_text(struct out *o, bool signalled)
{
    if (cfg.glibc) {
        glibc_summary_text(o, signalled);
        return;
    }
    struct rtm_heap_stats hs;
    memset(&hs, 0, sizeof(hs));
    rtm_heap_stats(heap, &hs);
    uint64_t locked = 0;
    for (int i = 0; i < N_OPS; i++)
        locked += st.calls[i];
    put(o, "librtmem-malloc (pid %ld): %s on a pool of %zu bytes (%s pages, %s), hardening %s, "
           "when full: %s\n",
        (long)getpid(), cfg.kind, cfg.pool, cfg.page ? "huge" : "base", lock_word(),
        cfg.harden == RTM_HEAP_HARDEN_NONE ? "none"
        : cfg.harden == RTM_HEAP_HARDEN_FULL ? "full"
                                             : "o1",
        cfg.fallback ? "fallback to the C library" : "fail (ENOMEM)");
    put(o, "  calls     ");
    for (int i = 0; i < N_OPS; i++)
        put(o, " %s %" PRIu64, op_names[i], st.calls[i]);
    put(o, "; %" PRIu64 " of the C library's blocks freed or resized, %" PRIu64
           " calls before the heap was ready\n",
        atomic_load(&st.foreign), atomic_load(&st.early));
    put(o, "  peak       %zu bytes used of %zu usable (%.1f%%); %zu blocks live now\n",
        hs.peak_used_bytes, hs.usable_bytes,
        hs.usable_bytes ? 100.0 * (double)hs.peak_used_bytes / (double)hs.usable_bytes : 0.0,
        hs.live_blocks);
    put(o, "  failed     %" PRIu64 " allocations; fallbacks %" PRIu64 " (%" PRIu64
           " bytes from the C library); %" PRIu64 " frees refused (not a live block)\n",
        st.failed, st.fallbacks, st.fallback_bytes, st.refused_frees);
    put(o, "  lock       %" PRIu64 " calls, %" PRIu64 " found it held\n", locked,
        atomic_load(&st.contended));
    put_worst(o, "its wait for the lock included");
}

static void summary_json(struct out *o, bool signalled)
{
    struct rtm_heap_stats hs;
    memset(&hs, 0, sizeof(hs));
    if (heap)
        rtm_heap_stats(heap, &hs);
    double npt = ns_per_tick();
    put(o, "{\"schema\": \"rtmem-malloc/1\", \"pid\": %ld, \"kind\": \"%s\", \"pool_bytes\": %zu, "
           "\"huge_page_bytes\": %zu, \"locked\": \"%s\", \"hardening\": \"%s\", "
           "\"when_full\": \"%s\",\n",
        (long)getpid(), cfg.kind, cfg.glibc == GLIBC ? (size_t)0 : cfg.pool, cfg.page, lock_word(),
        cfg.glibc                            ? "-"
        : cfg.harden == RTM_HEAP_HARDEN_NONE ? "none"
        : cfg.harden == RTM_HEAP_HARDEN_FULL ? "full"
                                             : "o1",
        cfg.fallback ? "fallback" : "fail");
    if (cfg.glibc) {
        size_t heap_bytes, mmapped_bytes, mmapped_blocks;
        if (glibc_memory(signalled, &heap_bytes, &mmapped_bytes, &mmapped_blocks))
            put(o,
                " \"glibc\": {\"settings\": \"%s\", \"heap_bytes\": %zu, \"mmapped_bytes\": %zu, "
                "\"mmapped_blocks\": %zu},\n",
                cfg.glibc == GLIBC_RT ? glibc_settings : "defaults", heap_bytes, mmapped_bytes,
                mmapped_blocks);
        else
            put(o, " \"glibc\": {\"settings\": \"%s\", \"heap_bytes\": null},\n",
                cfg.glibc == GLIBC_RT ? glibc_settings : "defaults");
    } else {
        put(o, " \"glibc\": null,\n");
    }
    put(o, " \"calls\": {");
    for (int i = 0; i < N_OPS; i++)
        put(o, "%s\"%s\": %" PRIu64, i ? ", " : "", op_names[i], st.calls[i]);
    put(o, "},\n \"foreign\": %" PRIu64 ", \"before_ready\": %" PRIu64 ",\n",
        atomic_load(&st.foreign), atomic_load(&st.early));
    put(o, " \"usable_bytes\": %zu, \"peak_used_bytes\": %zu, \"live_blocks\": %zu,\n",
        hs.usable_bytes, hs.peak_used_bytes, hs.live_blocks);
    put(o, " \"failed\": %" PRIu64 ", \"fallbacks\": %" PRIu64 ", \"fallback_bytes\": %" PRIu64
           ", \"refused_frees\": %" PRIu64 ",\n",
        st.failed, st.fallbacks, st.fallback_bytes, st.refused_frees);
    uint64_t locked = 0; /* glibc's calls take none of the library's */
    for (int i = 0; i < N_OPS && !cfg.glibc; i++)
        locked += st.calls[i];
    put(o, " \"lock\": {\"calls\": %" PRIu64 ", \"contended\": %" PRIu64 "},\n", locked,
        atomic_load(&st.contended));
    if (cfg.timed) {
        put(o, " \"worst_ns\": {");
        for (int i = 0; i < N_OPS; i++)
            put(o, "%s\"%s\": %.0f", i ? ", " : "", op_names[i],
                (double)atomic_load(&st.worst_ticks[i]) * npt);
        put(o, "}}\n");
    } else {
        put(o, " \"worst_ns\": null}\n");
    }
}

/* Writes text to a new file beside path, then puts it in place: renamed
 * over path itself (the name the user gave), but never over another file
 * at a name the library makes: a process other than cfg.pid (a forked
 * child) writes path.<pid>, or path.<pid>.<n> for the first n from 1 to 9
 * free, and nothing when none is. */
static void write_file(const char *path, const char *text, size_t len)
{
    char final[PATH_MAX + 48], tmp[PATH_MAX + 80];
    bool derived = (long)getpid() != cfg.pid;
    if (derived)
        snprintf(final, sizeof(final), "%s.%ld", path, (long)getpid());
    else
        snprintf(final, sizeof(final), "%s", path);
    /* A device or a FIFO (/dev/null, /dev/stderr) is written, never
     * replaced by a file. */
    struct stat sb;
    if (!derived && stat(final, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        int fd = open(final, O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t w = write(fd, text, len);
            (void)w;
            close(fd);
        }
        return;
    }
    /* A derived name this process made before (a summary on a signal, then
     * at exit) is its own: replaced from then on. */
    static struct {
        const char *path;
        long pid;
        char final[PATH_MAX + 48];
    } made[2];
    int slot = path == cfg.json ? 1 : 0;
    bool mine = derived && made[slot].path == path && made[slot].pid == (long)getpid();
    if (mine)
        snprintf(final, sizeof(final), "%s", made[slot].final);
    static _Atomic unsigned seq; /* two writers at once (a signal, the exit) */
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld.%u", final, (long)getpid(),
             atomic_fetch_add(&seq, 1));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    bool ok = write(fd, text, len) == (ssize_t)len;
    ok = close(fd) == 0 && ok;
    if (ok && (!derived || mine)) {
        ok = rename(tmp, final) == 0;
    } else if (ok) {
        /* link() fails with EEXIST rather than replace */
        ok = link(tmp, final) == 0;
        for (int n = 1; !ok && errno == EEXIST && n <= 9; n++) {
            snprintf(final, sizeof(final), "%s.%ld.%d", path, (long)getpid(), n);
            ok = link(tmp, final) == 0;
        }
        if (ok) {
            made[slot].path = path;
            made[slot].pid = (long)getpid();
            snprintf(made[slot].final, sizeof(made[slot].final), "%s", final);
        }
        ok = false; /* the temporary name goes either way */
    }
    if (!ok)
        unlink(tmp);
}

/* The summary where RTMEM_MALLOC_SUMMARY says (on a signal, standard
 * error when it says none), and the JSON. */
static void write_reports(bool signalled)
{
    if (atomic_load(&state) != READY || (long)getpid() != counted_pid)
        return;
    char buf[4096]; /* a signal may write while the exit path does */
    struct out o = { buf, sizeof(buf), 0 };
    if (cfg.summary[0] || signalled) {
        summary_text(&o, signalled);
        if (!cfg.summary[0] || strcmp(cfg.summary, "-") == 0) {
            ssize_t w = write(STDERR_FILENO, buf, o.len);
            (void)w;
        } else {
            write_file(cfg.summary, buf, o.len);
        }
    }
    if (cfg.json[0]) {
        o.len = 0;
        summary_json(&o, signalled);
        write_file(cfg.json, buf, o.len);
    }
}

/* After the program's exit handlers and its libraries' destructors (a
 * preloaded library is finalised last). The heap stays: a destructor that
 * runs later still allocates from it. */
__attribute__((destructor)) static void at_exit(void)
{
    write_reports(false);
}

/* A program that ends with _exit or _Exit (no destructor runs then): the
 * summary first, then the process ends as the C library's would end it. */
EXPORT void _exit(int status)
{
    write_reports(false);
    for (;;)
        syscall(SYS_exit_group, status);
}

EXPORT void _Exit(int status)
{
    _exit(status);
}
