/*
 * `rtmem wcet`: what every family of scenarios shares: the timed call, a
 * case's heap image (made, saved and restored), the words a scenario
 * leaves for the report, and the names of kinds, levels and ways to count.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "wcet.h"

/* The names the options take, and what they stand for. */
const char *const wcet_kind_names[] = { "tlsf",   "heapmem", "xnheap", "halffit",
                                        "xvheap", "zsheap",  "glibc",  NULL };
const char *const wcet_harden_choices[] = { "o1", "none", "full", NULL };
const int wcet_harden_levels[] = { RTM_HEAP_HARDEN_O1, RTM_HEAP_HARDEN_NONE, RTM_HEAP_HARDEN_FULL };
const char *const wcet_count_choices[] = { "auto", "valgrind", "none", NULL };
#ifdef WCET_SANITIZED
const char wcet_no_glibc[] = "this build's sanitizer replaces malloc: glibc's is not reached";
#else
const char wcet_no_glibc[] = "its scenarios need glibc 2.33 or later";
#endif

/* Never inlined, cloned or specialised: callgrind counts this function by
 * name (count.c). */
#if defined(__clang__)
__attribute__((noinline, used))
#else
__attribute__((noinline, noipa, used))
#endif
void wcet_call(struct wcet_case *c)
{
    struct rtm_heap *h = c->heap;
    const struct rtm_heap_plugin *pl = c->plug;
    if (pl) {
        switch (c->op) {
        case WCET_OP_NOOP: break;
        case WCET_OP_ALLOC: c->ret = pl->alloc(c->pheap, c->size); break;
        case WCET_OP_FREE: c->rc = pl->free(c->pheap, c->ptr); break;
        case WCET_OP_ALIGNED:
        case WCET_OP_REALLOC: c->ret = NULL; break; /* no plugin scenario uses them */
        }
        __asm__ __volatile__("" : : "r"(c) : "memory");
        return;
    }
    switch (c->op) {
    case WCET_OP_NOOP: break;
    case WCET_OP_ALLOC: c->ret = h ? rtm_heap_alloc(h, c->size) : malloc(c->size); break;
    case WCET_OP_ALIGNED:
        c->ret =
            h ? rtm_heap_aligned_alloc(h, c->align, c->size) : aligned_alloc(c->align, c->size);
        break;
    case WCET_OP_REALLOC:
        c->ret = h ? rtm_heap_realloc(h, c->ptr, c->size) : realloc(c->ptr, c->size);
        break;
    case WCET_OP_FREE:
        if (h) {
            c->rc = rtm_heap_free(h, c->ptr);
        } else {
            free(c->ptr);
            c->rc = 0;
        }
        break;
    }
    /* Keeps the call a call: nothing of it may move across the timer
     * readings around it. */
    __asm__ __volatile__("" : : "r"(c) : "memory");
}

int wcet_fail(struct wcet_case *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof(c->why), fmt, ap);
    va_end(ap);
    return -1;
}

void wcet_fact(struct wcet_case *c, const char *fmt, ...)
{
    size_t used = strlen(c->facts);
    if (used + 1 >= sizeof(c->facts))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->facts + used, sizeof(c->facts) - used, fmt, ap);
    va_end(ap);
}

void wcet_num(struct wcet_case *c, const char *name, double v)
{
    if (c->n_nums < WCET_MAX_NUMS)
        c->nums[c->n_nums++] = (struct wcet_num){ name, v };
}

int wcet_case_init(struct wcet_case *c, const struct wcet_scenario *sc, const char *kind,
                   int hardening, size_t page_image_bytes)
{
    memset(c, 0, sizeof(*c));
    c->sc = sc;
    c->kind = kind;
    c->hardening = hardening;
    if (sc && (sc->family == WCET_TLSF || sc->family == WCET_HALFFIT || sc->family == WCET_XVHEAP ||
               sc->family == WCET_ZSHEAP))
        c->image_bytes = WCET_TLSF_IMAGE;
    else if (sc && sc->family == WCET_PAGEHEAP)
        c->image_bytes = page_image_bytes;
    else if (sc && sc->family == WCET_PLUGIN)
        c->image_bytes = WCET_PLUGIN_IMAGE;
    return 0;
}

/* The image and its saved copy, made when the case is built and given
 * back once it is measured: only one case's are held at a time. 0, or -1
 * (c->why). */
static int images(struct wcet_case *c)
{
    if (c->image)
        return 0;
    c->image = aligned_alloc(WCET_IMAGE_ALIGN, c->image_bytes);
    c->saved = aligned_alloc(WCET_IMAGE_ALIGN, c->image_bytes);
    if (!c->image || !c->saved) {
        wcet_case_release(c);
        return wcet_fail(c, "out of memory for a heap image of %zu bytes", c->image_bytes);
    }
    /* Touched now: no page fault in a timed repetition. */
    memset(c->image, 0, c->image_bytes);
    memset(c->saved, 0, c->image_bytes);
    return 0;
}

void wcet_case_release(struct wcet_case *c)
{
    free(c->image);
    free(c->saved);
    c->image = c->saved = NULL;
    c->heap = NULL;
}

void wcet_case_destroy(struct wcet_case *c)
{
    wcet_case_release(c);
    tk_samples_destroy(&c->warm);
    tk_samples_destroy(&c->cold);
}

/*
 * The test hook RTMEM_WCET_SPOIL=ID: after the build of rtmem scenario ID,
 * the state it made is thrown away (a fresh heap, one small block taken),
 * the operation left as it was. The scenario's check must then fail: the
 * tests prove with it that a change to an allocator cannot silently turn a
 * scenario into an easy case. (glibc's scenarios check glibc as it is on
 * every run.) 0, or -1 (c->why).
 */
static int spoil(struct wcet_case *c)
{
    const char *id = getenv("RTMEM_WCET_SPOIL");
    if (!id || strcmp(id, c->sc->id) != 0 || !wcet_restored(c))
        return 0;
    struct rtm_heap_config cfg = { .hardening = c->hardening };
    c->heap = rtm_heap_create_ex(c->kind, c->image, c->image_bytes, &cfg);
    if (!c->heap || !rtm_heap_alloc(c->heap, 1))
        return wcet_fail(c, "RTMEM_WCET_SPOIL: the fresh heap could not be made");
    return 0;
}

int wcet_case_build(struct wcet_case *c)
{
    if (!c->sc) {
        c->op = WCET_OP_NOOP;
        return 0;
    }
    if (c->image_bytes && images(c) != 0)
        return -1;
    if (wcet_restored(c)) {
        struct rtm_heap_config cfg = { .hardening = c->hardening };
        c->heap = rtm_heap_create_ex(c->kind, c->image, c->image_bytes, &cfg);
        if (!c->heap)
            return wcet_fail(c, "rtm_heap_create_ex(%s, %zu bytes): %s", c->kind, c->image_bytes,
                             strerror(errno));
    }
    if (c->sc->build(c) != 0 || spoil(c) != 0)
        return -1;
    if (wcet_restored(c))
        memcpy(c->saved, c->image, c->image_bytes);
    return 0;
}

int wcet_case_prepare(struct wcet_case *c)
{
    if (!c->sc)
        return 0;
    if (wcet_restored(c)) {
        memcpy(c->image, c->saved, c->image_bytes);
        return 0;
    }
    c->ret = NULL;
    c->n_blocks = 0;
    return c->sc->build(c);
}

int wcet_regions_build(struct wcet_case *c, size_t filler)
{
    size_t big = c->image_bytes - (WCET_POOLS - 1) * WCET_SMALL_POOL;
    unsigned char *at = c->image;
    struct rtm_heap_config cfg = { .hardening = c->hardening };
    c->heap = rtm_heap_create_ex(c->kind, at, WCET_SMALL_POOL, &cfg);
    if (!c->heap)
        return wcet_fail(c, "build: the first region could not be made");
    unsigned char *lo = at + WCET_SMALL_POOL, *hi = lo + big;
    if (rtm_heap_add_pool(c->heap, lo, big) != 0)
        return wcet_fail(c, "build: the scenario's region could not be added");
    at = hi;
    for (size_t i = 2; i < WCET_POOLS; i++, at += WCET_SMALL_POOL)
        if (rtm_heap_add_pool(c->heap, at, WCET_SMALL_POOL) != 0)
            return wcet_fail(c, "build: region %zu could not be added", i);
    /* Pages are taken from the regions in the order they are searched:
     * the scenario's last. Its first page ends the filling, given back. */
    for (;;) {
        unsigned char *p = rtm_heap_alloc(c->heap, filler);
        if (!p)
            return wcet_fail(c, "build: a page filler (%zu bytes) could not be allocated", filler);
        if (p >= lo && p < hi) {
            rtm_heap_free(c->heap, p);
            break;
        }
    }
    c->expect[7] = (uintptr_t)lo;
    c->expect[8] = (uintptr_t)hi;
    return 0;
}

bool wcet_in_last_region(const struct wcet_case *c, const void *p)
{
    return (uintptr_t)p >= c->expect[7] && (uintptr_t)p < c->expect[8];
}

int wcet_heap_ok(struct wcet_case *c)
{
    int rc = rtm_heap_check(c->heap);
    if (rc != 0)
        return wcet_fail(c, "rtm_heap_check after the operation: %d", rc);
    return 0;
}

void wcet_case_finish(struct wcet_case *c)
{
    if (c->sc && c->sc->undo)
        c->sc->undo(c);
}

bool wcet_restored(const struct wcet_case *c)
{
    return c->sc && (c->sc->family == WCET_TLSF || c->sc->family == WCET_HALFFIT ||
                     c->sc->family == WCET_XVHEAP || c->sc->family == WCET_ZSHEAP ||
                     c->sc->family == WCET_PAGEHEAP);
}

bool wcet_case_on_path(struct wcet_case *c)
{
    if (!c->sc || c->sc->family != WCET_GLIBC)
        return true;
    char facts[sizeof(c->facts)];
    memcpy(facts, c->facts, sizeof(facts));
    size_t n_nums = c->n_nums;
    bool ok = c->sc->check(c) == 0;
    memcpy(c->facts, facts, sizeof(facts));
    c->n_nums = n_nums;
    if (!ok)
        snprintf(c->off_path_why, sizeof(c->off_path_why), "%s", c->why);
    c->why[0] = '\0';
    return ok;
}
