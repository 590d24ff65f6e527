/*
 * The heap interface: a registry of kinds and the rtm_heap_* entry points,
 * which verify the heap header and dispatch through the kind's operations.
 * Adds one load, one compare and one indirect call to each operation.
 */
#include <errno.h>
#include <string.h>

#include "rtmem/heap.h"
#include "kind.h"

static const struct rtm_heap_ops *const registry[RTM_KIND_COUNT] = {
    [RTM_KIND_TLSF] = &rtm__tlsf_ops,
    [RTM_KIND_HEAPMEM] = &rtm__heapmem_ops,
    [RTM_KIND_XNHEAP] = &rtm__xnheap_ops,
};

static const char *const kind_names[RTM_KIND_COUNT + 1] = {
    [RTM_KIND_TLSF] = "tlsf",
    [RTM_KIND_HEAPMEM] = "heapmem",
    [RTM_KIND_XNHEAP] = "xnheap",
    [RTM_KIND_COUNT] = NULL,
};

const char *const *rtm_heap_kinds(void)
{
    return kind_names;
}

/* The operations of a live heap, or NULL for NULL, destroyed or foreign. */
static inline const struct rtm_heap_ops *ops_of(const struct rtm_heap *h)
{
    if (__builtin_expect(!h || h->magic != RTM_HEAP_MAGIC || h->kind >= RTM_KIND_COUNT, 0))
        return NULL;
    return registry[h->kind];
}

struct rtm_heap *rtm_heap_create_ex(const char *kind, void *mem, size_t size,
                                    const struct rtm_heap_config *cfg)
{
    if (!kind || !mem) {
        errno = EINVAL;
        return NULL;
    }
    if (!(cfg = rtm_kind_config(cfg)))
        return NULL;
    for (unsigned i = 0; i < RTM_KIND_COUNT; i++)
        if (strcmp(kind, registry[i]->name) == 0)
            return registry[i]->create(mem, size, cfg);
    errno = ENOENT;
    return NULL;
}

struct rtm_heap *rtm_heap_create(const char *kind, void *mem, size_t size)
{
    return rtm_heap_create_ex(kind, mem, size, NULL);
}

int rtm_heap_set_corruption_handler(struct rtm_heap *h, rtm_heap_corruption_fn fn, void *arg)
{
    if (!ops_of(h))
        return -EINVAL;
    h->on_corruption = fn;
    h->on_corruption_arg = fn ? arg : NULL;
    return 0;
}

int rtm_heap_hardening(const struct rtm_heap *h)
{
    return ops_of(h) ? (int)h->hardening : -EINVAL;
}

uint64_t rtm__heap_new_key(const void *mem)
{
    /* atomic: heaps may be created in several threads at once */
    static uint64_t serial;
    uint64_t n = __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED);
    int local;
    uint64_t k = (uint64_t)(uintptr_t)mem ^ ((uint64_t)(uintptr_t)&local << 17) ^
                 ((uint64_t)(uintptr_t)&rtm__heap_new_key << 31) ^ n * 0x9e3779b97f4a7c15ull;
    /* splitmix64's finaliser: every input bit moves about half the output */
    k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9ull;
    k = (k ^ (k >> 27)) * 0x94d049bb133111ebull;
    k ^= k >> 31;
    return k ? k : 0x2545f4914f6cdd1dull;
}

__attribute__((noinline, cold)) void rtm__heap_corrupt(struct rtm_heap *h, const void *block,
                                                       const void *where, const char *what)
{
    h->corruptions++;
    if (h->on_corruption) {
        struct rtm_heap_corruption c = { h, block, where, what };
        h->on_corruption(&c, h->on_corruption_arg);
    }
}

__attribute__((noinline)) int rtm__heap_periodic_check(struct rtm_heap *h)
{
    if (--h->until_check != 0)
        return 0;
    h->until_check = h->check_interval;
    if (registry[h->kind]->check(h) == 0)
        return 0;
    rtm__heap_corrupt(h, NULL, NULL, "periodic full check");
    return -EFAULT;
}

void rtm_heap_destroy(struct rtm_heap *h)
{
    if (ops_of(h))
        h->magic = 0;
}

void *rtm_heap_alloc(struct rtm_heap *h, size_t size)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    return ops ? ops->alloc(h, size) : NULL;
}

void *rtm_heap_aligned_alloc(struct rtm_heap *h, size_t alignment, size_t size)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    return ops ? ops->aligned_alloc(h, alignment, size) : NULL;
}

void *rtm_heap_calloc(struct rtm_heap *h, size_t n, size_t size)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    if (!ops)
        return NULL;
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        h->failed_allocs++;
        return NULL;
    }
    void *p = ops->alloc(h, total);
    if (p)
        memset(p, 0, total);
    return p;
}

void *rtm_heap_realloc(struct rtm_heap *h, void *p, size_t size)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    return ops ? ops->realloc(h, p, size) : NULL;
}

int rtm_heap_free(struct rtm_heap *h, void *p)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    return ops ? ops->free(h, p) : -EINVAL;
}

size_t rtm_heap_usable_size(const struct rtm_heap *h, const void *p)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    return ops ? ops->usable_size(h, p) : 0;
}

int rtm_heap_add_pool(struct rtm_heap *h, void *mem, size_t size)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    return ops ? ops->add_pool(h, mem, size) : -EINVAL;
}

int rtm_heap_stats(const struct rtm_heap *h, struct rtm_heap_stats *out)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    return ops && out ? ops->stats(h, out) : -EINVAL;
}

int rtm_heap_check(const struct rtm_heap *h)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    return ops ? ops->check(h) : -EINVAL;
}

const char *rtm_heap_kind(const struct rtm_heap *h)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    return ops ? ops->name : NULL;
}

size_t rtm_heap_fill_count(const struct rtm_heap *h, size_t size)
{
    const struct rtm_heap_ops *ops = ops_of(h);
    return ops ? ops->fill_count(h, size) : 0;
}
