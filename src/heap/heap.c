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

struct rtm_heap *rtm_heap_create(const char *kind, void *mem, size_t size)
{
    if (!kind || !mem) {
        errno = EINVAL;
        return NULL;
    }
    for (unsigned i = 0; i < RTM_KIND_COUNT; i++)
        if (strcmp(kind, registry[i]->name) == 0)
            return registry[i]->create(mem, size);
    errno = ENOENT;
    return NULL;
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
