/*
 * The program test_run.py runs under `rtmem run` (librtmem-malloc
 * preloaded), and linked with librtmem-malloc.a (malloc_prog_static): each
 * mode exercises the malloc family through the interposer and checks what
 * it gets, printing one line of what it did; any broken promise prints
 * "FAIL: ..." and exits 1.
 *
 *   contract N SEED   N random calls of the whole family against a shadow
 *                     model: every block inside no other, aligned as asked,
 *                     its usable size at least its request, its contents
 *                     (a pattern per block) intact until freed, calloc's
 *                     zeroed, realloc's kept; the C library's answers to bad
 *                     arguments (posix_memalign EINVAL, calloc and
 *                     reallocarray overflows ENOMEM, memalign rounding up)
 *   threads T N       T threads, each N allocations and frees of its own
 *                     blocks with their contents checked
 *   fork              blocks made, then a fork: the child checks them,
 *                     allocates and frees (its lock not held by a thread of
 *                     the parent's), exits; the parent checks them again
 *   lifetime          allocations in a constructor before main and in a
 *                     destructor after it
 *   exhaust B         blocks of B bytes until one fails: errno ENOMEM;
 *                     prints how many fit; frees them, and one fits again
 *   over B N          N blocks of B bytes that must all succeed (with
 *                     RTMEM_MALLOC_ON_FULL=fallback beyond the pool), their
 *                     contents checked, freed
 *   quick-exit S      a few blocks, then _exit(S)
 *   bad-realloc       realloc of an address inside a block, not a block:
 *                     NULL with EINVAL, the block untouched (an rtmem heap
 *                     refuses it; glibc would abort)
 *   vfork             a few blocks, then 3 vfork children that _exit at
 *                     once (they share the parent's memory: no summary of
 *                     theirs), and the parent goes on allocating
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FAIL(...)                     \
    do {                              \
        printf("FAIL: " __VA_ARGS__); \
        printf("\n");                 \
        exit(1);                      \
    } while (0)

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static unsigned char pattern(size_t id, size_t i)
{
    return (unsigned char)(id * 131 + i * 7 + 1);
}

static void fill(unsigned char *p, size_t id, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pattern(id, i);
}

static int intact(const unsigned char *p, size_t id, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern(id, i))
            return 0;
    return 1;
}

/* ---- contract ------------------------------------------------------------------------ */

#define SLOTS 512

struct slot {
    unsigned char *p;
    size_t size, align, id;
};

static size_t next_id = 1;

static void check_block(const struct slot *s, const struct slot *all)
{
    if (s->align && (uintptr_t)s->p % s->align)
        FAIL("block %p not aligned to %zu", (void *)s->p, s->align);
    if ((uintptr_t)s->p % sizeof(void *))
        FAIL("block %p below the minimum alignment", (void *)s->p);
    size_t usable = malloc_usable_size(s->p);
    if (usable < s->size)
        FAIL("usable size %zu below the request %zu", usable, s->size);
    if (usable > s->size + 4096 + s->align * 2 + s->size / 2)
        FAIL("usable size %zu absurd for a request of %zu", usable, s->size);
    for (const struct slot *o = all; o < all + SLOTS; o++)
        if (o != s && o->p && s->p < o->p + (o->size ? o->size : 1) &&
            o->p < s->p + (s->size ? s->size : 1))
            FAIL("blocks %p (%zu) and %p (%zu) overlap", (void *)s->p, s->size, (void *)o->p,
                 o->size);
}

static int contract(size_t n, uint64_t seed)
{
    static struct slot slots[SLOTS];
    rng_state = seed * 2654435761u + 1;
    size_t calls = 0, aligned = 0, reallocs = 0, frees = 0;
    for (size_t k = 0; k < n; k++) {
        struct slot *s = &slots[rnd() % SLOTS];
        if (s->p) {
            if (!intact(s->p, s->id, s->size))
                FAIL("block %zu changed while live", s->id);
            if (rnd() % 3 == 0) { /* realloc: contents kept up to the smaller size */
                size_t size = rnd() % 3000, keep = size < s->size ? size : s->size;
                unsigned char *q = realloc(s->p, size ? size : 1);
                if (!q)
                    FAIL("realloc to %zu failed", size);
                if (!intact(q, s->id, keep))
                    FAIL("realloc lost the contents");
                s->p = q;
                s->size = size ? size : 1;
                s->align = 0;
                fill(q, s->id, s->size);
                check_block(s, slots);
                reallocs++;
            } else {
                free(s->p);
                s->p = NULL;
                frees++;
            }
            continue;
        }
        size_t size = rnd() % 4000, how = rnd() % 8;
        s->align = 0;
        s->id = next_id++;
        if (how == 0) {
            size_t nmemb = 1 + rnd() % 8;
            s->size = nmemb * (size / 8 + 1);
            s->p = calloc(nmemb, size / 8 + 1);
            if (s->p)
                for (size_t i = 0; i < s->size; i++)
                    if (s->p[i])
                        FAIL("calloc's block not zeroed at %zu", i);
        } else if (how == 1) {
            s->align = (size_t)16 << (rnd() % 17); /* up to 1 MiB */
            s->size = size;
            void *p = NULL;
            int rc = posix_memalign(&p, s->align, size);
            if (rc)
                FAIL("posix_memalign(%zu, %zu): %d", s->align, size, rc);
            s->p = p;
            aligned++;
        } else if (how == 2) {
            s->align = (size_t)8 << (rnd() % 10);
            s->size = size;
            s->p = aligned_alloc(s->align, size);
            aligned++;
        } else if (how == 3) {
            s->align = (size_t)sysconf(_SC_PAGESIZE);
            s->size = size;
            s->p = rnd() % 2 ? valloc(size) : memalign(s->align, size);
            aligned++;
        } else {
            s->size = size;
            s->p = malloc(size);
        }
        if (!s->p)
            FAIL("allocation of %zu (how %zu) failed", size, how);
        fill(s->p, s->id, s->size);
        check_block(s, slots);
        calls++;
    }
    for (struct slot *s = slots; s < slots + SLOTS; s++)
        if (s->p) {
            if (!intact(s->p, s->id, s->size))
                FAIL("block %zu changed while live", s->id);
            free(s->p);
            frees++;
        }
    /* the C library's answers to bad arguments */
    void *p = (void *)1;
    if (posix_memalign(&p, 24, 16) != EINVAL || p != (void *)1)
        FAIL("posix_memalign(24): not EINVAL, or *memptr written");
    volatile size_t huge = SIZE_MAX / 2; /* out of the compiler's sight */
    errno = 0;
    if (calloc(huge, 4) != NULL || errno != ENOMEM)
        FAIL("calloc overflow: not NULL and ENOMEM");
    errno = 0;
    if (reallocarray(NULL, huge, 4) != NULL || errno != ENOMEM)
        FAIL("reallocarray overflow: not NULL and ENOMEM");
    volatile size_t odd = 48;
    unsigned char *m = memalign(odd, 100); /* rounded up to 64 */
    if (!m || (uintptr_t)m % 64)
        FAIL("memalign(48): not aligned to 64");
    free(m);
    unsigned char *pv = pvalloc(1);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!pv || (uintptr_t)pv % page || malloc_usable_size(pv) < page)
        FAIL("pvalloc(1): not a whole page");
    free(pv);
    unsigned char *r = malloc(10);
    if (realloc(r, 0) != NULL)
        FAIL("realloc(p, 0): not NULL");
    free(NULL);
    if (malloc_usable_size(NULL) != 0)
        FAIL("malloc_usable_size(NULL) not 0");
    printf("contract: %zu allocations (%zu aligned), %zu reallocs, %zu frees: all kept\n", calls,
           aligned, reallocs, frees);
    return 0;
}

/* ---- threads --------------------------------------------------------------------------- */

static size_t per_thread;

static void *churn(void *arg)
{
    size_t t = (size_t)arg;
    unsigned char *mine[64] = { 0 };
    size_t sizes[64] = { 0 };
    uint64_t x = t * 7919 + 1;
    for (size_t k = 0; k < per_thread; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t i = x % 64;
        if (mine[i]) {
            if (!intact(mine[i], t * 64 + i, sizes[i]))
                return (void *)1;
            free(mine[i]);
            mine[i] = NULL;
        } else {
            sizes[i] = 16 + x % 2000;
            mine[i] = malloc(sizes[i]);
            if (!mine[i])
                return (void *)1;
            fill(mine[i], t * 64 + i, sizes[i]);
        }
    }
    for (size_t i = 0; i < 64; i++)
        free(mine[i]);
    return NULL;
}

static int threads(size_t n_threads, size_t n)
{
    pthread_t th[64];
    per_thread = n;
    if (n_threads > 64)
        n_threads = 64;
    for (size_t t = 0; t < n_threads; t++)
        if (pthread_create(&th[t], NULL, churn, (void *)t) != 0)
            FAIL("pthread_create");
    for (size_t t = 0; t < n_threads; t++) {
        void *rv;
        pthread_join(th[t], &rv);
        if (rv)
            FAIL("thread %zu: a block changed or an allocation failed", t);
    }
    printf("threads: %zu threads, %zu calls each: all kept\n", n_threads, n);
    return 0;
}

/* ---- fork ------------------------------------------------------------------------------ */

/* A thread that holds the heap busy while the parent forks. */
static volatile int stop_busy;

static void *busy(void *arg)
{
    (void)arg;
    while (!stop_busy)
        free(malloc(64));
    return NULL;
}

static int forking(void)
{
    unsigned char *b[32];
    for (size_t i = 0; i < 32; i++) {
        b[i] = malloc(100 + i * 10);
        fill(b[i], i, 100 + i * 10);
    }
    pthread_t th;
    pthread_create(&th, NULL, busy, NULL);
    for (int round = 0; round < 20; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            for (size_t i = 0; i < 32; i++)
                if (!intact(b[i], i, 100 + i * 10))
                    _exit(2);
            for (int k = 0; k < 1000; k++) {
                void *p = malloc(32 + (size_t)k);
                if (!p)
                    _exit(3);
                free(p);
            }
            exit(0);
        }
        int st = -1;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            FAIL("fork round %d: the child failed (status %d)", round, st);
    }
    stop_busy = 1;
    pthread_join(th, NULL);
    for (size_t i = 0; i < 32; i++) {
        if (!intact(b[i], i, 100 + i * 10))
            FAIL("parent's block %zu changed", i);
        free(b[i]);
    }
    printf("fork: 20 children checked the parent's blocks and allocated: all kept\n");
    return 0;
}

/* ---- lifetime ---------------------------------------------------------------------------- */

static char *made_before_main;

__attribute__((constructor)) static void before_main(void)
{
    made_before_main = strdup("made before main");
}

static int lifetime_mode;

__attribute__((destructor)) static void after_main(void)
{
    if (!lifetime_mode)
        return;
    char *late = malloc(1000);
    if (!late) {
        printf("FAIL: no allocation in a destructor\n");
        fflush(stdout);
        _exit(1);
    }
    snprintf(late, 1000, "%s, freed after main", made_before_main);
    printf("lifetime: %s\n", late);
    fflush(stdout);
    free(late);
    free(made_before_main);
}

/* ---- exhaustion ---------------------------------------------------------------------------- */

static int exhaust(size_t size)
{
    size_t cap = 1 << 20, n = 0;
    void **blocks = NULL;
    for (;;) {
        if (n % 1024 == 0) { /* the list itself from the heap too */
            void **more = realloc(blocks, (n + 1024) * sizeof(*blocks));
            if (!more)
                break;
            blocks = more;
        }
        errno = 0;
        void *p = malloc(size);
        if (!p) {
            if (errno != ENOMEM)
                FAIL("a failed malloc left errno %d, not ENOMEM", errno);
            break;
        }
        blocks[n++] = p;
        if (n == cap)
            FAIL("%zu blocks of %zu bytes and no failure", n, size);
    }
    for (size_t i = 0; i < n; i++)
        free(blocks[i]);
    void *again = malloc(size);
    if (!again)
        FAIL("nothing fits after every block was freed");
    free(again);
    free(blocks);
    printf("exhaust: %zu blocks of %zu bytes fit, then ENOMEM; after the frees one fits again\n", n,
           size);
    return 0;
}

static int over(size_t size, size_t n)
{
    unsigned char **b = calloc(n, sizeof(*b));
    if (!b)
        FAIL("calloc of the list");
    for (size_t i = 0; i < n; i++) {
        b[i] = malloc(size);
        if (!b[i])
            FAIL("block %zu of %zu bytes failed", i, size);
        fill(b[i], i, size);
    }
    for (size_t i = 0; i < n; i++) {
        if (!intact(b[i], i, size))
            FAIL("block %zu changed", i);
        b[i] = realloc(b[i], size + 10);
        if (!b[i] || !intact(b[i], i, size))
            FAIL("realloc of block %zu", i);
    }
    for (size_t i = 0; i < n; i++)
        free(b[i]);
    free(b);
    printf("over: %zu blocks of %zu bytes, all served and kept\n", n, size);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "contract") == 0 && argc == 4)
        return contract(strtoul(argv[2], NULL, 10), strtoull(argv[3], NULL, 10));
    if (strcmp(mode, "threads") == 0 && argc == 4)
        return threads(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10));
    if (strcmp(mode, "fork") == 0)
        return forking();
    if (strcmp(mode, "lifetime") == 0) {
        lifetime_mode = 1;
        printf("lifetime: main sees \"%s\"\n", made_before_main);
        return 0;
    }
    if (strcmp(mode, "exhaust") == 0 && argc == 3)
        return exhaust(strtoul(argv[2], NULL, 10));
    if (strcmp(mode, "over") == 0 && argc == 4)
        return over(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10));
    if (strcmp(mode, "quick-exit") == 0 && argc == 3) {
        void *kept[10]; /* made (-fno-builtin: each call is made), then left live */
        for (int i = 0; i < 10; i++)
            kept[i] = malloc(100);
        printf("quick-exit: %d blocks made\n", kept[9] ? 10 : 9);
        fflush(stdout);
        _exit(atoi(argv[2]));
    }
    if (strcmp(mode, "bad-realloc") == 0) {
        char *p = malloc(100);
        if (!p)
            return 1;
        memset(p, 7, 100);
        errno = 0;
        void *q = realloc(p + 16, 200);
        if (q || errno != EINVAL || p[99] != 7) {
            fprintf(stderr, "FAIL: realloc of an inner address gave %p, errno %d\n", q, errno);
            return 1;
        }
        free(p);
        printf("bad-realloc: refused, EINVAL\n");
        return 0;
    }
    if (strcmp(mode, "vfork") == 0) {
        void *kept[10];
        for (int k = 0; k < 3; k++) {
            pid_t pid = vfork();
            if (pid == 0)
                _exit(0);
            if (pid < 0 || waitpid(pid, NULL, 0) != pid) {
                fprintf(stderr, "FAIL: vfork\n");
                return 1;
            }
        }
        for (int i = 0; i < 10; i++)
            kept[i] = malloc(100);
        printf("vfork: 3 children ended, %d blocks made after\n", kept[9] ? 10 : 9);
        for (int i = 0; i < 10; i++)
            free(kept[i]);
        return 0;
    }
    fprintf(stderr, "usage: malloc_prog contract N SEED | threads T N | fork | lifetime | "
                    "exhaust B | over B N | quick-exit S | vfork | bad-realloc\n");
    return 2;
}
