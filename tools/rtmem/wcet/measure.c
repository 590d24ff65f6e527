/*
 * `rtmem wcet`: the timed repetitions of one scenario, a warm one and a
 * cold one in turn (so that a slow stretch of the machine falls on both
 * alike), each a restore of the state (or, for glibc, a build), then for
 * the cold one a flush of the state's memory from every cache level, then
 * the call between two timer readings.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/tool.h"
#include "wcet.h"

/* /proc/self/maps, read without malloc: glibc's stdio would allocate its
 * buffer, and an allocation between a glibc scenario's build and its call
 * changes the state measured (a large-bin one consolidates the fast bins). */
static char maps[256 << 10];

/* The mappings a glibc scenario's state lives in: the brk heap and libc's
 * writable data (its arena, its parameters), flushed from the caches.
 * Re-read each repetition: the heap grows and shrinks with the scenario. */
static void flush_glibc(const struct wcet *w, const struct wcet_case *c)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    size_t len = 0;
    if (fd >= 0) {
        ssize_t n;
        while (len < sizeof(maps) - 1 && (n = read(fd, maps + len, sizeof(maps) - 1 - len)) > 0)
            len += (size_t)n;
        close(fd);
    }
    maps[len] = '\0';
    bool after_libc = false; /* the line before was libc's writable data */
    for (char *line = maps; line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *end;
        uintptr_t lo = (uintptr_t)strtoull(line, &end, 16);
        uintptr_t hi = *end == '-' ? (uintptr_t)strtoull(end + 1, &end, 16) : 0;
        const char *perms = end + (*end == ' ');
        bool heap = strstr(line, "[heap]") != NULL;
        bool rw = perms[0] == 'r' && perms[1] == 'w';
        bool libc_data = rw && strstr(line, "/libc.so");
        /* libc's .bss goes on in an anonymous mapping right after. */
        bool libc_bss = rw && after_libc && !strchr(line, '/') && !strchr(line, '[');
        if (hi > lo && (heap || libc_data || libc_bss))
            tk_cache_flush(&w->cops, (const void *)lo, (size_t)(hi - lo));
        after_libc = libc_data;
        line = next;
    }
    /* The chunk headers the scenario holds (an mmap chunk's lies outside
     * the heap). */
    for (size_t i = 0; i < c->n_blocks; i++)
        if (c->blocks[i])
            tk_cache_flush(&w->cops, (const char *)c->blocks[i] - 16, 16);
    if (c->ptr)
        tk_cache_flush(&w->cops, (const char *)c->ptr - 16, 16);
}

static void flush_state(const struct wcet *w, const struct wcet_case *c)
{
    if (c->image) /* a plugin's state may lie outside it too: not flushed */
        tk_cache_flush(&w->cops, c->image, c->image_bytes);
    else if (c->sc)
        flush_glibc(w, c);
}

/* One repetition into s: 0, or -1 (c->why). */
static int one(struct wcet *w, struct wcet_case *c, bool cold, struct tk_samples *s)
{
    tk_rt_breather(&w->rt);
    if (wcet_case_prepare(c) != 0)
        return -1;
    if (cold)
        flush_state(w, c);
    uint64_t t0 = tk_timer_start();
    wcet_call(c);
    uint64_t t1 = tk_timer_end();
    if (!wcet_case_on_path(c)) {
        c->off_path++; /* left out */
        wcet_case_finish(c);
        return 0;
    }
    tk_samples_add(s, t1 - t0);
    /* A restored image must take the same path every time: same block,
     * same answer. (glibc's addresses move with its history.) */
    if (wcet_restored(c) && c->ret != c->first_ret)
        c->path_changed = true;
    if (c->op == WCET_OP_FREE && c->rc != 0)
        c->path_changed = true;
    wcet_case_finish(c);
    return 0;
}

int wcet_measure(struct wcet *w, struct wcet_case *c)
{
    if (tk_samples_init(&c->warm, w->o.reps) != 0 || tk_samples_init(&c->cold, w->o.reps) != 0)
        return wcet_fail(c, "out of memory for the samples");
    for (unsigned i = 0; i < w->o.reps; i++)
        if (one(w, c, false, &c->warm) != 0 || one(w, c, true, &c->cold) != 0)
            return -1;
    if (c->path_changed)
        return wcet_fail(c, "a repetition did not return what the first run did: the state "
                            "was not restored exactly");
    if (c->off_path > w->o.reps) /* more than half of the 2 * reps */
        return wcet_fail(c, "%u of %u repetitions missed the path (%s)", c->off_path, 2 * w->o.reps,
                         c->off_path_why);
    tk_samples_summarize(&c->warm, w->timer.ns_per_tick, &c->warm_s);
    tk_samples_summarize(&c->cold, w->timer.ns_per_tick, &c->cold_s);
    return 0;
}
