/*
 * Heap plugins for the tests in tests/tools/ (test_memcheck.py,
 * test_failures.py, kinds_test.c), built once per variant:
 *   (none)             "bump": a plugin without stats or check, which memcheck
 *                      runs, saying which checks it cannot do;
 *   PLUGIN_BAD_ABI     an ABI version this rtmem does not take;
 *   PLUGIN_BAD_TABLE   a mandatory call (free) missing;
 *   PLUGIN_BAD_NAME    a name that is already taken ("glibc");
 *   PLUGIN_CRASH       "crash": alloc loads from page 0 in a heap of
 *                      CRASH_HEAP bytes or more;
 *   PLUGIN_HANG        "hang": free never returns for a block of
 *                      HANG_SIZE bytes or more;
 *   PLUGIN_EXIT        "exit": alloc calls exit() in a heap of CRASH_HEAP
 *                      bytes or more, with the status in the environment
 *                      variable RTMEM_TEST_PLUGIN_EXIT (default 0); with
 *                      "fork" there, it forks a child that waits for ever
 *                      at each such alloc instead, and goes on; with
 *                      "hang", it never returns; with "never", it
 *                      behaves. Its constructor, with
 *                      RTMEM_TEST_PLUGIN_CTOR "exit", exits (status 0);
 *                      with "print", prints a line to standard output;
 *                      and with RTMEM_TEST_PLUGIN_PIDS set to a file's
 *                      path, appends its process's pid to that file. With
 *                      RTMEM_TEST_PLUGIN_PRINT set, create prints a line
 *                      to standard output.
 * memcheck must refuse each broken one with exit status 2 and a message
 * naming the broken rule (rtmem/plugin.h), never run it. The crashing and
 * hanging ones load, and the harness must survive them: their smaller
 * blocks pass, so they fail part-way through a phase.
 * The heap is a bump allocator that takes all its memory back when its last
 * block is freed: simple, and correct for memcheck's tests, which free every
 * block before the next one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rtmem/plugin.h>

struct bump {
    unsigned char *base;
    size_t size, top, live;
};

#define ALIGN  ((size_t)16)
/* Each block is preceded by its size, in one ALIGN-sized header. */
#define HEADER ALIGN

static void *bump_create(void *mem, size_t size)
{
    const uintptr_t a = _Alignof(struct bump);
    uintptr_t at = ((uintptr_t)mem + a - 1) & ~(a - 1);
    size_t trim = (size_t)(at - (uintptr_t)mem) + sizeof(struct bump);
    if (size < trim + ALIGN + HEADER + ALIGN)
        return NULL;
    struct bump *b = (struct bump *)at;
    uintptr_t base = ((uintptr_t)mem + trim + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1);
    b->base = (unsigned char *)base;
    b->size = (size - (size_t)(base - (uintptr_t)mem)) & ~(ALIGN - 1);
    b->top = 0;
    b->live = 0;
#ifdef PLUGIN_EXIT
    if (getenv("RTMEM_TEST_PLUGIN_PRINT")) {
        printf("PLUGIN CREATE SAYS HELLO\n");
        fflush(stdout);
    }
#endif
    return b;
}

static void bump_destroy(void *heap)
{
    (void)heap;
}

#if defined(PLUGIN_CRASH) || defined(PLUGIN_EXIT)
#define CRASH_HEAP ((size_t)16384)
#endif
#ifdef PLUGIN_CRASH
/* An address in the page no process maps, out of the compiler's sight: a
 * real load that faults (not NULL itself, which UBSan would catch first and
 * turn into an exit instead of the signal this plugin is for). */
static int *volatile null_block = (int *)(uintptr_t)64;
#endif
#ifdef PLUGIN_HANG
#define HANG_SIZE ((size_t)1024)
static volatile unsigned long spins;
#endif

#ifdef PLUGIN_EXIT
__attribute__((constructor)) static void misbehave_at_load(void)
{
    const char *what = getenv("RTMEM_TEST_PLUGIN_CTOR");
    if (what && strcmp(what, "exit") == 0)
        exit(0);
    if (what && strcmp(what, "print") == 0) {
        printf("PLUGIN CONSTRUCTOR SAYS HELLO\n");
        fflush(stdout);
    }
    const char *pids = getenv("RTMEM_TEST_PLUGIN_PIDS");
    int fd = pids ? open(pids, O_WRONLY | O_APPEND | O_CREAT, 0600) : -1;
    if (fd >= 0) {
        char line[32];
        int n = snprintf(line, sizeof line, "%ld\n", (long)getpid());
        if (n > 0 && write(fd, line, (size_t)n) != n)
            abort();
        close(fd);
    }
}
#endif

static void *bump_alloc(void *heap, size_t size)
{
    struct bump *b = heap;
#ifdef PLUGIN_CRASH
    if (b->size >= CRASH_HEAP)
        return (void *)(uintptr_t)*null_block;
#endif
#ifdef PLUGIN_EXIT
    if (b->size >= CRASH_HEAP) {
        const char *status = getenv("RTMEM_TEST_PLUGIN_EXIT");
        if (status && strcmp(status, "never") == 0)
            goto behave;
        if (status && strcmp(status, "hang") == 0)
            for (;;)
                pause();
        if (!status || strcmp(status, "fork") != 0)
            exit(status ? atoi(status) : 0);
        if (fork() == 0)
            for (;;)
                pause();
    }
behave:
#endif
    if (size > b->size)
        return NULL;
    size_t need = HEADER + ((size ? size : 1) + ALIGN - 1) / ALIGN * ALIGN;
    if (need > b->size - b->top)
        return NULL;
    unsigned char *p = b->base + b->top;
    *(size_t *)p = need - HEADER;
    b->top += need;
    b->live++;
    return p + HEADER;
}

#ifdef PLUGIN_BAD_TABLE
/* Left out of the table on purpose. */
static int bump_free(void *heap, void *p) __attribute__((unused));
#endif
static int bump_free(void *heap, void *p)
{
    struct bump *b = heap;
    if (!p)
        return 0;
    unsigned char *c = p;
    if (c < b->base + HEADER || c >= b->base + b->top || b->live == 0)
        return -EINVAL;
#ifdef PLUGIN_HANG
    if (*(const size_t *)(c - HEADER) >= HANG_SIZE)
        for (;;)
            spins++;
#endif
    if (--b->live == 0)
        b->top = 0;
    return 0;
}

static size_t bump_usable_size(void *heap, const void *p)
{
    (void)heap;
    return *(const size_t *)((const unsigned char *)p - HEADER);
}

const struct rtm_heap_plugin rtm_heap_plugin = {
#ifdef PLUGIN_BAD_ABI
    .abi_version = RTM_HEAP_PLUGIN_ABI_VERSION + 1,
#else
    .abi_version = RTM_HEAP_PLUGIN_ABI_VERSION,
#endif
#if defined(PLUGIN_BAD_NAME)
    .name = "glibc",
#elif defined(PLUGIN_CRASH)
    .name = "crash",
#elif defined(PLUGIN_HANG)
    .name = "hang",
#elif defined(PLUGIN_EXIT)
    .name = "exit",
#else
    .name = "bump",
#endif
    .description = "test: a bump allocator without stats or check (tests/bump_plugin.c)",
    .create = bump_create,
    .destroy = bump_destroy,
    .alloc = bump_alloc,
#ifndef PLUGIN_BAD_TABLE
    .free = bump_free,
#endif
    .usable_size = bump_usable_size,
};
