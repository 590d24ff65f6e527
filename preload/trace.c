/*
 * librtmem-trace: records every call of a program's malloc family into a
 * trace file (trace_format.h; docs/trace-format.md), for `rtmem trace`,
 * which preloads it (LD_PRELOAD) into an unmodified, dynamically linked
 * program.
 *
 * It is configured by the environment `rtmem trace` sets:
 *   RTMEM_TRACE_DIR       the directory each process image writes its file
 *                         in, "<pid>.<generation>.trace" (created O_EXCL;
 *                         the generation counts the images of one pid:
 *                         0, then 1 after an exec, ...); unset: nothing is
 *                         recorded and every call goes straight through
 *   RTMEM_TRACE_PID       the traced program's pid: another process (a
 *                         child it forked) records only with
 *   RTMEM_TRACE_CHILDREN  "follow" (its own file); "none" (the default):
 *                         a child records nothing
 *   RTMEM_TRACE_MARK_SIGNAL  a signal number: each one received marks a
 *                         phase ("signal-1", "signal-2", ...), when the
 *                         program left that signal's disposition alone
 *
 * How it stays out of the way (bounded cost, no lock on the recording
 * path, nothing allocated through the traced malloc):
 *   - each thread encodes its events straight into the file: into a chunk
 *     of it (CHUNK_PAGES pages) mapped shared, its own until full, then
 *     another (one fallocate and one mmap per chunk); the only shared write
 *     per call is one atomic increment, the event's place in the
 *     process-wide order. Every event finished is in the file whatever
 *     ends the process, SIGKILL included (the kernel's page cache holds
 *     it);
 *   - the real functions are found with dlsym(RTLD_NEXT); dlsym's own
 *     allocations, before they are found, come from a static bootstrap
 *     area, and a free of one of those is ignored;
 *   - a call the recorder cannot record (a thread beyond MAX_THREADS, a
 *     thread past its end, a call inside the recorder, a chunk that could
 *     not be had) is made and counted as unrecorded, in the end record.
 * The end of a process image is written as an END block in the file's
 * first page: exit (the library's destructor, after the program's atexit
 * handlers), _exit, _Exit, and exec (which replaces the image: execve,
 * execv, execvp, execvpe; one that fails takes it back). A signal that
 * ends the program is not caught (the program's own handlers, and its
 * choice of handling or not, stay as they are: Python, for one, installs
 * its KeyboardInterrupt only where SIGINT is at its default): every event
 * is in the file already, and rtmem trace, which sees the signal in the
 * program's wait status, writes the CUT block.
 * fork: the child lets go of the parent's chunks (never writing them) and
 * records to a file of its own, or not at all (RTMEM_TRACE_CHILDREN).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
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
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "rtmem/trace.h"
#include "trace_format.h"

#define EXPORT      __attribute__((visibility("default")))
#define TLS         __attribute__((tls_model("initial-exec"))) __thread
#define EVENT_MAX   160 /* the longest event, encoded (a mark with its name) */
#define MAX_THREADS 4096
#define BOOT_BYTES  ((size_t)64 << 10)

/* ---- the real functions, and the bootstrap area dlsym allocates from ------- */

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static void *(*real_memalign)(size_t, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static size_t (*real_usable_size)(void *);
static void (*real_exit_)(int) __attribute__((noreturn));
static void (*real_Exit)(int) __attribute__((noreturn));
static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);

static _Alignas(64) unsigned char boot[BOOT_BYTES];
static _Atomic size_t boot_used;
static _Atomic int resolved; /* 0 not yet, 1 under way, 2 done */
static TLS bool resolving;   /* this thread is in dlsym */

static bool in_boot(const void *p)
{
    return (const unsigned char *)p >= boot && (const unsigned char *)p < boot + BOOT_BYTES;
}

/* Zeroed memory from the bootstrap area (it is never given back). */
static void *boot_alloc(size_t size, size_t align)
{
    if (align < 16)
        align = 16;
    size_t at = atomic_load(&boot_used), start, end;
    do {
        start = (at + align - 1) & ~(align - 1);
        if (start > BOOT_BYTES || size > BOOT_BYTES - start)
            return NULL;
        end = start + size;
    } while (!atomic_compare_exchange_weak(&boot_used, &at, end));
    return boot + start;
}

#define FIND(var, name) var = (__typeof__(var))dlsym(RTLD_NEXT, name)

/* Finds the real functions once; true when they are found (false in the
 * thread that is finding them: its calls use the bootstrap area). */
static bool resolve(void)
{
    if (atomic_load_explicit(&resolved, memory_order_acquire) == 2)
        return true;
    if (resolving)
        return false;
    int expect = 0;
    if (atomic_compare_exchange_strong(&resolved, &expect, 1)) {
        resolving = true;
        FIND(real_malloc, "malloc");
        FIND(real_calloc, "calloc");
        FIND(real_realloc, "realloc");
        FIND(real_free, "free");
        FIND(real_memalign, "memalign");
        FIND(real_posix_memalign, "posix_memalign");
        FIND(real_aligned_alloc, "aligned_alloc");
        FIND(real_valloc, "valloc");
        FIND(real_pvalloc, "pvalloc");
        FIND(real_usable_size, "malloc_usable_size");
        FIND(real_exit_, "_exit");
        FIND(real_Exit, "_Exit");
        FIND(real_execve, "execve");
        FIND(real_execvpe, "execvpe");
        resolving = false;
        atomic_store_explicit(&resolved, 2, memory_order_release);
        return true;
    }
    while (atomic_load_explicit(&resolved, memory_order_acquire) != 2)
        sched_yield();
    return true;
}

/* ---- the process's recording state ------------------------------------------------ */

/* A thread's place in the file: the chunk it writes its events into (a
 * shared mapping of the file, so that they are there whatever ends the
 * process), and the encoder's state, which starts again with each chunk. */
struct tbuf {
    _Atomic int in_use;
    uint32_t tid;
    struct rtm_trace_block *chunk; /* NULL: none yet */
    uint32_t used;                 /* payload bytes encoded */
    uint32_t n;                    /* events in them */
    uint64_t prev_seq, prev_t, prev_p;
};

enum { OFF, RECORDING, FINISHED };
static _Atomic int state = OFF;
static _Atomic int inited; /* 0 not yet, 1 under way, 2 done */
static int trace_fd = -1;
static pid_t my_pid;                /* the process the state belongs to (fork, vfork) */
static uint64_t start_ns;           /* CLOCK_MONOTONIC at the start of this image */
static uint32_t chunk_bytes;        /* CHUNK_PAGES pages */
static _Atomic uint64_t file_end;   /* where the next chunk goes */
static _Atomic uint64_t chunks;     /* chunks reserved */
static _Atomic uint64_t order;      /* the next event's seq */
static _Atomic uint64_t unrecorded; /* calls not recorded */
/* The header's chunks_so_far and unrecorded_so_far in the file's first page,
 * mapped shared (NULL: not mapped), kept equal to chunks and unrecorded:
 * what rtmem trace copies into the end record of an image a signal ended. */
static struct rtm_trace_header *shown;
static size_t shown_bytes;
static _Atomic bool refused; /* a chunk could not be had: no more are tried */
static _Atomic int exit_status = -1;
static struct tbuf threads[MAX_THREADS];
static pthread_key_t thread_key;
static int mark_signal;
static _Atomic unsigned pending_marks;  /* signals received, not yet recorded */
static _Atomic uint64_t pending_mark_t; /* when the first of them came */
static _Atomic unsigned marks_made;
static TLS struct tbuf *mine;
static TLS int in_recorder; /* > 0: inside the recorder (a call it makes is not recorded) */
static TLS bool thread_gone;

#define CHUNK_PAGES 16

/* One more call not recorded, in the file too. */
static void count_unrecorded(void)
{
    uint64_t n = atomic_fetch_add(&unrecorded, 1) + 1;
    if (shown)
        atomic_store((_Atomic uint64_t *)&shown->unrecorded_so_far, n);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The clock events are timed with (trace_format.h): the CPU's counter
 * where it is one the kernel keeps time with, a few times cheaper than
 * clock_gettime; else CLOCK_MONOTONIC. */
static bool use_counter;
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static uint64_t counter(void)
{
    return __rdtsc();
}
/* The TSC counts time only where the kernel's clocksource is it. */
static bool counter_usable(void)
{
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  O_RDONLY | O_CLOEXEC);
    char buf[16] = "";
    bool ok = fd >= 0 && read(fd, buf, sizeof buf - 1) >= 3 && strncmp(buf, "tsc", 3) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}
#elif defined(__aarch64__)
static uint64_t counter(void)
{
    uint64_t v;
    __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v)::"memory");
    return v;
}
static bool counter_usable(void)
{
    return true; /* the generic timer's virtual counter: constant rate */
}
#else
static uint64_t counter(void)
{
    return now_ns();
}
static bool counter_usable(void)
{
    return false;
}
#endif

static uint64_t ticks(void)
{
    return use_counter ? counter() : now_ns();
}

static uint64_t start_ticks; /* the events' clock at the start of this image */

/* An event's time: ticks since the start (0 on a CPU whose counter lags
 * the one the start was read on). */
static uint64_t since_start(void)
{
    uint64_t t = ticks();
    return t > start_ticks ? t - start_ticks : 0;
}

/* pwrite(2) of all of it at off, retried on EINTR and short writes. */
static bool pwrite_all(const void *p, size_t n, uint64_t off)
{
    const unsigned char *c = p;
    while (n > 0) {
        ssize_t w = pwrite(trace_fd, c, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        c += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return true;
}

/* Writes the block that ends the image (END, or CUT with a signal) in the
 * first page, once; nothing is recorded after. Every event is in the file
 * already. Async-signal safe (pwrite, clock_gettime). */
static void finish(int type, int how)
{
    int expect = RECORDING;
    if (!atomic_compare_exchange_strong(&state, &expect, FINISHED))
        return;
    int saved = errno;
    struct {
        struct rtm_trace_block h;
        struct rtm_trace_end e;
    } end = { .h = { .type = (uint8_t)type,
                     .space_bytes = sizeof end.e,
                     .payload_bytes = sizeof end.e },
              .e = { .end_ticks = ticks(),
                     .end_ns = now_ns() - start_ns,
                     .chunks = atomic_load(&chunks),
                     .unrecorded = atomic_load(&unrecorded),
                     .how = how } };
    pwrite_all(&end, sizeof end, RTM_TRACE_END_AT);
    errno = saved;
}

/* The end block taken back: an exec that failed, the image goes on. */
static void unfinish(void)
{
    static const unsigned char zeros[sizeof(struct rtm_trace_block) + sizeof(struct rtm_trace_end)];
    if (pwrite_all(zeros, sizeof zeros, RTM_TRACE_END_AT))
        atomic_store(&state, RECORDING);
}

static void drop_chunk(struct tbuf *b)
{
    if (b->chunk)
        munmap(b->chunk, chunk_bytes);
    b->chunk = NULL;
}

/* A new chunk of the file for b: reserved, its blocks allocated
 * (fallocate; where the filesystem has none, a byte written at its end:
 * neither ever shrinks the file, whichever thread extends it last),
 * mapped, its header written. False if that fails: the thread's calls are
 * then unrecorded, and no chunk is tried again (each call would pay for
 * the attempt). */
static bool new_chunk(struct tbuf *b)
{
    drop_chunk(b);
    if (atomic_load_explicit(&refused, memory_order_relaxed))
        return false; /* the file took no more: every later call is counted, none retried */
    uint64_t off = atomic_fetch_add(&file_end, chunk_bytes);
    /* Past the process's file size limit, extending the file would raise
     * SIGXFSZ in it: the calls go unrecorded instead. */
    struct rlimit fsize;
    if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
        off + chunk_bytes > (uint64_t)fsize.rlim_cur) {
        atomic_store(&refused, true);
        return false;
    }
    /* The chunk's blocks allocated now: a full filesystem is a refusal
     * here, never a SIGBUS when the mapping is written. fallocate never
     * shrinks the file, whichever thread extends it last; where the
     * filesystem has no fallocate, a byte written at the chunk's end
     * extends it (and that never shrinks it either). */
    if (fallocate(trace_fd, 0, (off_t)off, (off_t)chunk_bytes) != 0) {
        static const unsigned char zero;
        if ((errno != EOPNOTSUPP && errno != ENOSYS) ||
            !pwrite_all(&zero, 1, off + chunk_bytes - 1)) {
            atomic_store(&refused, true);
            return false;
        }
    }
    void *m = mmap(NULL, chunk_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, trace_fd, (off_t)off);
    if (m == MAP_FAILED) {
        atomic_store(&refused, true);
        return false;
    }
    uint64_t made = atomic_fetch_add(&chunks, 1) + 1;
    if (shown)
        atomic_store((_Atomic uint64_t *)&shown->chunks_so_far, made);
    b->chunk = m;
    b->chunk->ticks = ticks();
    b->chunk->ns = now_ns();
    b->chunk->tid = b->tid;
    b->chunk->space_bytes = chunk_bytes - (uint32_t)sizeof *b->chunk;
    b->used = b->n = 0;
    b->prev_seq = b->prev_t = b->prev_p = 0;
    atomic_store_explicit((_Atomic uint8_t *)&b->chunk->type, RTM_TRACE_EVENTS,
                          memory_order_release);
    return true;
}

static void thread_ended(void *arg)
{
    struct tbuf *b = arg;
    in_recorder++;
    if (getpid() == my_pid) {
        drop_chunk(b); /* its events stay in the file */
        atomic_store(&b->in_use, 0);
    }
    mine = NULL;
    thread_gone = true; /* its last frees, in the thread's own end, are not recorded */
    in_recorder--;
}

/* This thread's place, taken on its first event; NULL if none can be. */
static struct tbuf *buffer(void)
{
    if (mine)
        return mine;
    if (thread_gone)
        return NULL;
    for (int i = 0; i < MAX_THREADS; i++) {
        int free_slot = 0;
        if (atomic_compare_exchange_strong(&threads[i].in_use, &free_slot, 1)) {
            struct tbuf *b = &threads[i];
            b->tid = (uint32_t)syscall(SYS_gettid);
            b->chunk = NULL;
            if (!new_chunk(b)) {
                atomic_store(&b->in_use, 0);
                break;
            }
            mine = b;
            pthread_setspecific(thread_key, b);
            return b;
        }
    }
    thread_gone = true; /* no slot, or no chunk: this thread is not recorded */
    return NULL;
}

/* ---- the encoder ------------------------------------------------------------------- */

static unsigned char *put_u(unsigned char *o, uint64_t v)
{
    while (v >= 0x80) {
        *o++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *o++ = (unsigned char)v;
    return o;
}

static unsigned char *put_p(unsigned char *o, struct tbuf *b, const void *p)
{
    uint64_t v = (uint64_t)(uintptr_t)p;
    int64_t d = (int64_t)(v - b->prev_p);
    b->prev_p = v;
    return put_u(o, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63)); /* zigzag */
}

static unsigned char *payload(struct tbuf *b)
{
    return (unsigned char *)(b->chunk + 1);
}

/* Where an event goes that no chunk could be had for: encoded, never
 * published. */
static TLS unsigned char scratch[EVENT_MAX];

/* The event being encoded: begin() gives its place, end() publishes it. */
static unsigned char *begin(struct tbuf *b, int op, uint64_t seq, uint64_t t)
{
    if ((!b->chunk || b->used + EVENT_MAX > b->chunk->space_bytes) && !new_chunk(b)) {
        count_unrecorded();
        return scratch;
    }
    unsigned char *o = payload(b) + b->used;
    if (b->n == 0)
        b->chunk->first_seq = seq;
    *o++ = (unsigned char)op;
    o = put_u(o, seq - b->prev_seq);
    o = put_u(o, t - b->prev_t);
    b->prev_seq = seq;
    b->prev_t = t;
    return o;
}

/* The payload's length first, then the count: a reader that finds n
 * events finds their bytes. */
static void end(struct tbuf *b, unsigned char *o)
{
    if (o >= scratch && o <= scratch + EVENT_MAX)
        return;
    b->used = (uint32_t)(o - payload(b));
    atomic_store_explicit((_Atomic uint32_t *)&b->chunk->payload_bytes, b->used,
                          memory_order_relaxed);
    atomic_store_explicit((_Atomic uint32_t *)&b->chunk->n_events, ++b->n, memory_order_release);
}

static void mark_into(struct tbuf *b, const char *name, uint64_t t)
{
    size_t len = strnlen(name, RTM_TRACE_MARK_MAX);
    unsigned char *o = begin(b, RTM_TRACE_MARK, atomic_fetch_add(&order, 1), t);
    o = put_u(o, len);
    memcpy(o, name, len);
    end(b, o + len);
}

/* Marks of signals received since, recorded before this thread's event. */
static void pending(struct tbuf *b)
{
    unsigned n = atomic_exchange(&pending_marks, 0);
    uint64_t at = atomic_load(&pending_mark_t);
    uint64_t t = at > start_ticks ? at - start_ticks : 0;
    for (unsigned i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "signal-%u", atomic_fetch_add(&marks_made, 1) + 1);
        mark_into(b, name, t);
    }
}

/* The place to record into, or NULL (the call is counted unrecorded when
 * the recorder is on). */
static struct tbuf *recorder(void)
{
    int st = atomic_load_explicit(&state, memory_order_relaxed);
    if (st != RECORDING || in_recorder) {
        /* a call while the recorder starts, or between an exec's end
         * record and its failure, is counted */
        if (!in_recorder && (st == FINISHED || atomic_load(&inited) == 1))
            count_unrecorded();
        return NULL;
    }
    in_recorder++; /* a handler's malloc while this thread takes its slot */
    struct tbuf *b = buffer();
    in_recorder--;
    if (!b) {
        count_unrecorded();
        return NULL;
    }
    if (atomic_load_explicit(&pending_marks, memory_order_relaxed)) {
        in_recorder++;
        pending(b);
        in_recorder--;
    }
    return b;
}

/* ---- start: the file, the thread key, the signals -------------------------------- */

static void mark_by_signal(int sig)
{
    (void)sig;
    if (atomic_fetch_add(&pending_marks, 1) == 0)
        atomic_store(&pending_mark_t, ticks());
}

/* Installs handler for sig if the program left sig at its default. */
static void take_signal(int sig, void (*handler)(int))
{
    struct sigaction old;
    if (sigaction(sig, NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
        (old.sa_flags & SA_SIGINFO))
        return;
    struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESTART };
    sigfillset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

/* Opens "<dir>/<pid>.<generation>.trace", the first generation free, and
 * writes its header: true, or false (nothing recorded). */
static bool open_file(void)
{
    const char *dir = getenv("RTMEM_TRACE_DIR");
    if (!dir || !*dir)
        return false;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || page > (1L << 20))
        return false;
    chunk_bytes = (uint32_t)page * CHUNK_PAGES;
    char path[4096];
    for (uint32_t gen = 0; gen < 1000; gen++) {
        if (snprintf(path, sizeof path, "%s/%d.%u.trace", dir, (int)my_pid, gen) >=
            (int)sizeof path)
            return false;
        trace_fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (trace_fd >= 0) {
            struct timespec real;
            clock_gettime(CLOCK_REALTIME, &real);
            use_counter = counter_usable();
            start_ticks = ticks();
            start_ns = now_ns();
            /* a second reading 200 us later: the counter's rate, to 0.1% */
            uint64_t calib_ns = start_ns, calib_ticks = start_ticks;
            while (use_counter && calib_ns < start_ns + 200000) {
                calib_ticks = ticks();
                calib_ns = now_ns();
            }
            struct rtm_trace_header h = {
                .version = RTM_TRACE_VERSION,
                .header_bytes = sizeof h,
                .byte_order = RTM_TRACE_BYTE_ORDER,
                .pid = (uint32_t)my_pid,
                .ppid = (uint32_t)getppid(),
                .start_ns = start_ns,
                .start_real_ns = (uint64_t)real.tv_sec * 1000000000u + (uint64_t)real.tv_nsec,
                .page_bytes = (uint32_t)page,
                .generation = gen,
                .chunk_bytes = chunk_bytes,
                .clock = use_counter ? RTM_TRACE_CLOCK_COUNTER : RTM_TRACE_CLOCK_NS,
                .start_ticks = start_ticks,
                .calib_ns = calib_ns,
                .calib_ticks = calib_ticks,
            };
            memcpy(h.magic, RTM_TRACE_MAGIC, sizeof h.magic);
            static const unsigned char zero;
            atomic_store(&file_end, (uint64_t)page);
            atomic_store(&chunks, 0);
            atomic_store(&refused, false);
            struct rlimit fsize;
            bool room = getrlimit(RLIMIT_FSIZE, &fsize) != 0 || fsize.rlim_cur == RLIM_INFINITY ||
                        (uint64_t)fsize.rlim_cur >= (uint64_t)page;
            if (room && pwrite_all(&h, sizeof h, 0) && pwrite_all(&zero, 1, (uint64_t)page - 1)) {
                void *m = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, trace_fd, 0);
                if (shown)
                    munmap(shown, shown_bytes);
                shown = m == MAP_FAILED ? NULL : m;
                shown_bytes = (size_t)page;
                return true;
            }
            close(trace_fd);
            trace_fd = -1;
            return false;
        }
        if (errno != EEXIST)
            return false;
    }
    return false;
}

/* Whether this process records, by the environment: the traced program
 * does; a child of it only with RTMEM_TRACE_CHILDREN=follow. */
static bool wanted(void)
{
    const char *root = getenv("RTMEM_TRACE_PID");
    if (!root || atoi(root) == (int)my_pid)
        return true;
    const char *children = getenv("RTMEM_TRACE_CHILDREN");
    return children && strcmp(children, "follow") == 0;
}

static void forked_child(void);

/* Starts recording, once, on the first call after the real functions are
 * found. */
static void start(void)
{
    int expect = 0;
    if (!atomic_compare_exchange_strong(&inited, &expect, 1))
        return;
    in_recorder++;
    my_pid = getpid();
    if (pthread_key_create(&thread_key, thread_ended) == 0 &&
        pthread_atfork(NULL, NULL, forked_child) == 0 && wanted() && open_file()) {
        const char *ms = getenv("RTMEM_TRACE_MARK_SIGNAL");
        mark_signal = ms ? atoi(ms) : 0;
        if (mark_signal > 0 && mark_signal < NSIG)
            take_signal(mark_signal, mark_by_signal);
        atomic_store(&state, RECORDING);
    }
    in_recorder--;
    atomic_store(&inited, 2);
}

/* In a child after fork: the parent's chunks are the parent's (mapped
 * here too: let go of, never written); the child records to a file of its
 * own, or not at all. */
static void forked_child(void)
{
    in_recorder++;
    if (shown) /* the parent's header page: never written here */
        munmap(shown, shown_bytes);
    shown = NULL;
    struct tbuf *keep = mine;
    for (int i = 0; i < MAX_THREADS; i++) {
        struct tbuf *b = &threads[i];
        if (atomic_load(&b->in_use)) {
            drop_chunk(b);
            if (b != keep)
                atomic_store(&b->in_use, 0); /* the other threads do not exist here */
        }
    }
    if (keep)
        keep->tid = (uint32_t)syscall(SYS_gettid);
    if (trace_fd >= 0)
        close(trace_fd); /* the parent's file */
    trace_fd = -1;
    atomic_store(&unrecorded, 0);
    atomic_store(&pending_marks, 0);
    atomic_store(&marks_made, 0);
    my_pid = getpid();
    bool on = atomic_load(&state) != OFF && wanted() && open_file();
    if (on && keep && !new_chunk(keep)) {
        atomic_store(&keep->in_use, 0);
        mine = NULL;
    }
    atomic_store(&state, on ? RECORDING : OFF);
    in_recorder--;
}

/* Ready to record this call: the real functions found, the recorder
 * started. False only in the thread that is finding them. */
static bool ready(void)
{
    if (!resolve())
        return false;
    if (atomic_load_explicit(&inited, memory_order_acquire) != 2)
        start();
    return true;
}

/* ---- the malloc family ----------------------------------------------------------- */

EXPORT void *malloc(size_t size)
{
    if (!ready())
        return boot_alloc(size, 16);
    void *p = real_malloc(size);
    int saved = errno; /* the call's, whatever recording does */
    struct tbuf *b = recorder();
    if (b) {
        in_recorder++;
        uint64_t seq = atomic_fetch_add(&order, 1);
        unsigned char *o = begin(b, RTM_TRACE_MALLOC, seq, since_start());
        o = put_u(o, size);
        end(b, put_p(o, b, p));
        in_recorder--;
    }
    errno = saved;
    return p;
}

EXPORT void *calloc(size_t n, size_t size)
{
    if (!ready()) {
        size_t total;
        return __builtin_mul_overflow(n, size, &total) ? NULL : boot_alloc(total, 16);
    }
    void *p = real_calloc(n, size);
    int saved = errno;
    struct tbuf *b = recorder();
    if (b) {
        in_recorder++;
        uint64_t seq = atomic_fetch_add(&order, 1);
        unsigned char *o = begin(b, RTM_TRACE_CALLOC, seq, since_start());
        o = put_u(o, n);
        o = put_u(o, size);
        end(b, put_p(o, b, p));
        in_recorder--;
    }
    errno = saved;
    return p;
}

/* realloc and reallocarray: seq0 before the call (the old block is the
 * caller's no more), seq after it. */
static void *record_realloc(void *old, size_t n, size_t size, bool array)
{
    int before = errno;
    struct tbuf *b = recorder();
    uint64_t seq0 = b ? atomic_fetch_add(&order, 1) : 0;
    errno = before; /* what recording did is not the call's */
    /* reallocarray through realloc, as glibc's own does (its inner call to
     * realloc would come back here and be recorded twice) */
    size_t total = 0;
    void *p;
    if (array && __builtin_mul_overflow(n, size, &total)) {
        p = NULL;
        errno = ENOMEM;
    } else {
        p = real_realloc(old, array ? total : size);
    }
    if (b) {
        in_recorder++;
        int saved = errno;
        uint64_t seq = atomic_fetch_add(&order, 1);
        unsigned char *o =
            begin(b, array ? RTM_TRACE_REALLOCARRAY : RTM_TRACE_REALLOC, seq, since_start());
        o = put_p(o, b, old);
        if (array)
            o = put_u(o, n);
        o = put_u(o, size);
        o = put_p(o, b, p);
        end(b, put_u(o, seq - seq0));
        errno = saved;
        in_recorder--;
    }
    return p;
}

EXPORT void *realloc(void *old, size_t size)
{
    bool started = ready();
    if (!started || in_boot(old)) {
        /* dlsym's own (from the bootstrap area), or a block it had, moved
         * to the real allocator once there is one (a malloc, recorded) */
        void *p = started ? malloc(size) : boot_alloc(size, 16);
        size_t room = old ? (size_t)(boot + BOOT_BYTES - (unsigned char *)old) : 0;
        if (p && old)
            memcpy(p, old, room < size ? room : size);
        return p;
    }
    return record_realloc(old, 1, size, false);
}

EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
    size_t total;
    if (!ready() || in_boot(old)) {
        if (__builtin_mul_overflow(n, size, &total)) {
            errno = ENOMEM;
            return NULL;
        }
        return realloc(old, total);
    }
    return record_realloc(old, n, size, true);
}

EXPORT void free(void *p)
{
    if (!p || in_boot(p))
        return;
    if (!ready())
        return;
    int saved = errno;
    struct tbuf *b = recorder();
    if (b) {
        in_recorder++;
        uint64_t seq = atomic_fetch_add(&order, 1);
        unsigned char *o = begin(b, RTM_TRACE_FREE, seq, since_start());
        end(b, put_p(o, b, p));
        in_recorder--;
    }
    errno = saved;
    real_free(p);
}

/* memalign, aligned_alloc, valloc, pvalloc: align (0 when the call has
 * none of its own), size, the block. */
static void record_aligned(int op, size_t align, size_t size, void *p, bool with_align)
{
    int saved = errno;
    struct tbuf *b = recorder();
    if (!b) {
        errno = saved;
        return;
    }
    in_recorder++;
    uint64_t seq = atomic_fetch_add(&order, 1);
    unsigned char *o = begin(b, op, seq, since_start());
    if (with_align)
        o = put_u(o, align);
    o = put_u(o, size);
    end(b, put_p(o, b, p));
    errno = saved;
    in_recorder--;
}

EXPORT void *memalign(size_t align, size_t size)
{
    if (!ready())
        return boot_alloc(size, align);
    void *p = real_memalign(align, size);
    record_aligned(RTM_TRACE_MEMALIGN, align, size, p, true);
    return p;
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
    if (!ready())
        return boot_alloc(size, align);
    void *p = real_aligned_alloc(align, size);
    record_aligned(RTM_TRACE_ALIGNED_ALLOC, align, size, p, true);
    return p;
}

EXPORT void *valloc(size_t size)
{
    if (!ready())
        return boot_alloc(size, 4096);
    void *p = real_valloc(size);
    record_aligned(RTM_TRACE_VALLOC, 0, size, p, false);
    return p;
}

EXPORT void *pvalloc(size_t size)
{
    if (!ready())
        return boot_alloc(size, 4096);
    void *p = real_pvalloc(size);
    record_aligned(RTM_TRACE_PVALLOC, 0, size, p, false);
    return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    if (!ready()) {
        void *p = boot_alloc(size, align);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    int rc = real_posix_memalign(out, align, size);
    int before = errno; /* posix_memalign returns its error: errno is the caller's */
    struct tbuf *b = recorder();
    if (b) {
        in_recorder++;
        int saved = errno;
        uint64_t seq = atomic_fetch_add(&order, 1);
        unsigned char *o = begin(b, RTM_TRACE_POSIX_MEMALIGN, seq, since_start());
        o = put_u(o, align);
        o = put_u(o, size);
        o = put_p(o, b, rc == 0 ? *out : NULL);
        end(b, put_u(o, (uint64_t)rc));
        errno = saved;
        in_recorder--;
    }
    errno = before;
    return rc;
}

EXPORT size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    if (in_boot(p) || !ready())
        return 0;
    size_t n = real_usable_size(p);
    int saved = errno;
    struct tbuf *b = recorder();
    if (b) {
        in_recorder++;
        uint64_t seq = atomic_fetch_add(&order, 1);
        unsigned char *o = begin(b, RTM_TRACE_USABLE_SIZE, seq, since_start());
        o = put_p(o, b, p);
        end(b, put_u(o, n));
        in_recorder--;
    }
    errno = saved;
    return n;
}

/* ---- phases, and the ends of an image --------------------------------------------- */

/* A phase begins here: what rtmem/trace.h's rtm_trace_phase calls. */
EXPORT void rtm_trace_mark(const char *name)
{
    if (!name || !ready())
        return;
    int saved = errno;
    struct tbuf *b = recorder();
    if (b) {
        in_recorder++;
        mark_into(b, name, since_start());
        in_recorder--;
    }
    errno = saved;
}

/* The end of this image, when this process owns the recorder (not in a
 * vfork child, which shares the parent's memory). */
static void image_ends(int how)
{
    if (atomic_load(&state) == RECORDING && getpid() == my_pid)
        finish(RTM_TRACE_END, how);
}

/* Started at load too: a program that never allocates leaves a trace
 * that says so. */
__attribute__((constructor)) static void at_load(void)
{
    ready();
}

__attribute__((destructor)) static void at_exit(void)
{
    image_ends(atomic_load(&exit_status));
}

EXPORT void exit(int status)
{
    static void (*real_exit)(int) __attribute__((noreturn));
    atomic_store(&exit_status, status);
    if (!real_exit)
        FIND(real_exit, "exit");
    real_exit(status);
}

EXPORT void _exit(int status)
{
    resolve();
    image_ends(status);
    real_exit_(status);
}

EXPORT void _Exit(int status)
{
    resolve();
    image_ends(status);
    real_Exit(status);
}

/* exec replaces the image: its trace ends here (how -2); if the exec
 * fails, the end is taken back and the image goes on recording. */
static void before_exec(void)
{
    resolve();
    image_ends(-2);
}

static void after_failed_exec(void)
{
    int saved = errno;
    if (atomic_load(&state) == FINISHED && getpid() == my_pid)
        unfinish();
    errno = saved;
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    before_exec();
    int rc = real_execve(path, argv, envp);
    after_failed_exec();
    return rc;
}

EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    before_exec();
    int rc = real_execvpe(file, argv, envp);
    after_failed_exec();
    return rc;
}

EXPORT int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}
