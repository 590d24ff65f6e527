/*
 * Internal: defines a page-and-bucket kind (its typed API and its entry in
 * the registry) over pageheap.c, given its name, registry id and tree
 * operations. heapmem.c and xnheap.c are one line of it each.
 */
#ifndef RTMEM_SRC_HEAP_PAGEHEAP_KIND_H
#define RTMEM_SRC_HEAP_PAGEHEAP_KIND_H

#include <errno.h>

#include "pageheap.h"

#define PH_T(h)  ((struct ph_heap *)(void *)(h))
#define PH_CT(h) ((const struct ph_heap *)(const void *)(h))

#define RTM_PAGEHEAP_DEFINE(kname, KIND, TREE, LTREE)                                         \
    struct rtm_##kname *rtm_##kname##_create_ex(void *mem, size_t size,                       \
                                                const struct rtm_heap_config *cfg)            \
    {                                                                                         \
        if (!(cfg = rtm_kind_config(cfg)))                                                    \
            return NULL;                                                                      \
        return (struct rtm_##kname *)(void *)rtm__ph_create(mem, size, KIND, TREE, cfg);      \
    }                                                                                         \
    struct rtm_##kname *rtm_##kname##_create(void *mem, size_t size)                          \
    {                                                                                         \
        return rtm_##kname##_create_ex(mem, size, NULL);                                      \
    }                                                                                         \
    struct rtm_heap *rtm_##kname##_heap(struct rtm_##kname *h)                                \
    {                                                                                         \
        return h ? &PH_T(h)->base : NULL;                                                     \
    }                                                                                         \
    int rtm_##kname##_add_pool(struct rtm_##kname *h, void *mem, size_t size)                 \
    {                                                                                         \
        return h ? rtm__ph_add_pool(PH_T(h), mem, size, TREE) : -EINVAL;                      \
    }                                                                                         \
    void *rtm_##kname##_alloc(struct rtm_##kname *h, size_t size)                             \
    {                                                                                         \
        return rtm__ph_alloc(PH_T(h), size, TREE);                                            \
    }                                                                                         \
    void *rtm_##kname##_aligned_alloc(struct rtm_##kname *h, size_t alignment, size_t size)   \
    {                                                                                         \
        return rtm__ph_aligned_alloc(PH_T(h), alignment, size, TREE);                         \
    }                                                                                         \
    void *rtm_##kname##_realloc(struct rtm_##kname *h, void *p, size_t size)                  \
    {                                                                                         \
        return rtm__ph_realloc(PH_T(h), p, size, TREE);                                       \
    }                                                                                         \
    int rtm_##kname##_free(struct rtm_##kname *h, void *p)                                    \
    {                                                                                         \
        return rtm__ph_free(PH_T(h), p, TREE);                                                \
    }                                                                                         \
    size_t rtm_##kname##_usable_size(const struct rtm_##kname *h, const void *p)              \
    {                                                                                         \
        return h ? rtm__ph_usable_size(PH_CT(h), p) : 0;                                      \
    }                                                                                         \
    int rtm_##kname##_stats(const struct rtm_##kname *h, struct rtm_heap_stats *out)          \
    {                                                                                         \
        if (!h || !out || PH_CT(h)->base.magic != RTM_HEAP_MAGIC)                             \
            return -EINVAL;                                                                   \
        return rtm__ph_stats(PH_CT(h), out);                                                  \
    }                                                                                         \
    int rtm_##kname##_check(const struct rtm_##kname *h)                                      \
    {                                                                                         \
        return rtm__ph_check(PH_CT(h), KIND, TREE);                                           \
    }                                                                                         \
    static struct rtm_heap *kname##_ops_create(void *mem, size_t size,                        \
                                               const struct rtm_heap_config *cfg)             \
    {                                                                                         \
        return rtm_##kname##_heap(rtm_##kname##_create_ex(mem, size, cfg));                   \
    }                                                                                         \
    static void *kname##_ops_alloc(struct rtm_heap *h, size_t n)                              \
    {                                                                                         \
        return rtm__ph_alloc(PH_T(h), n, TREE);                                               \
    }                                                                                         \
    static void *kname##_ops_aligned(struct rtm_heap *h, size_t a, size_t n)                  \
    {                                                                                         \
        return rtm__ph_aligned_alloc(PH_T(h), a, n, TREE);                                    \
    }                                                                                         \
    static void *kname##_ops_realloc(struct rtm_heap *h, void *p, size_t n)                   \
    {                                                                                         \
        return rtm__ph_realloc(PH_T(h), p, n, TREE);                                          \
    }                                                                                         \
    static int kname##_ops_free(struct rtm_heap *h, void *p)                                  \
    {                                                                                         \
        return rtm__ph_free(PH_T(h), p, TREE);                                                \
    }                                                                                         \
    static size_t kname##_ops_usable(const struct rtm_heap *h, const void *p)                 \
    {                                                                                         \
        return rtm__ph_usable_size(PH_CT(h), p);                                              \
    }                                                                                         \
    static int kname##_ops_add_pool(struct rtm_heap *h, void *m, size_t n)                    \
    {                                                                                         \
        return rtm__ph_add_pool(PH_T(h), m, n, TREE);                                         \
    }                                                                                         \
    static int kname##_ops_stats(const struct rtm_heap *h, struct rtm_heap_stats *o)          \
    {                                                                                         \
        return rtm__ph_stats(PH_CT(h), o);                                                    \
    }                                                                                         \
    static int kname##_ops_check(const struct rtm_heap *h)                                    \
    {                                                                                         \
        return rtm__ph_check(PH_CT(h), KIND, TREE);                                           \
    }                                                                                         \
    static size_t kname##_ops_fill_count(const struct rtm_heap *h, size_t n)                  \
    {                                                                                         \
        return rtm__ph_fill_count(PH_CT(h), n);                                               \
    }                                                                                         \
    static int kname##_ops_walk(const struct rtm_heap *h, int (*fn)(void *, void *), void *a) \
    {                                                                                         \
        return rtm__ph_walk(PH_CT(h), fn, a);                                                 \
    }                                                                                         \
    static int kname##_ops_validate(const struct rtm_heap *h, size_t bytes)                   \
    {                                                                                         \
        return rtm__ph_validate(PH_CT(h), bytes);                                             \
    }                                                                                         \
    const struct rtm_heap_ops rtm__##kname##_ops = {                                          \
        .name = #kname,                                                                       \
        .create = kname##_ops_create,                                                         \
        .alloc = kname##_ops_alloc,                                                           \
        .aligned_alloc = kname##_ops_aligned,                                                 \
        .realloc = kname##_ops_realloc,                                                       \
        .free = kname##_ops_free,                                                             \
        .usable_size = kname##_ops_usable,                                                    \
        .add_pool = kname##_ops_add_pool,                                                     \
        .stats = kname##_ops_stats,                                                           \
        .check = kname##_ops_check,                                                           \
        .fill_count = kname##_ops_fill_count,                                                 \
        .walk = kname##_ops_walk,                                                             \
        .validate = kname##_ops_validate,                                                     \
        .pool_bound = rtm__ph_pool_bound,                                                     \
    };                                                                                        \
    static void *kname##_logged_alloc(struct rtm_heap *h, size_t n)                           \
    {                                                                                         \
        return rtm__ph_alloc_logged(PH_T(h), n, LTREE);                                       \
    }                                                                                         \
    static void *kname##_logged_aligned(struct rtm_heap *h, size_t a, size_t n)               \
    {                                                                                         \
        return rtm__ph_aligned_alloc_logged(PH_T(h), a, n, LTREE);                            \
    }                                                                                         \
    static void *kname##_logged_realloc(struct rtm_heap *h, void *p, size_t n)                \
    {                                                                                         \
        return rtm__ph_realloc_logged(PH_T(h), p, n, LTREE);                                  \
    }                                                                                         \
    static int kname##_logged_free(struct rtm_heap *h, void *p)                               \
    {                                                                                         \
        return rtm__ph_free_logged(PH_T(h), p, LTREE);                                        \
    }                                                                                         \
    static int kname##_logged_add_pool(struct rtm_heap *h, void *m, size_t n)                 \
    {                                                                                         \
        return rtm__ph_add_pool_logged(PH_T(h), m, n, LTREE);                                 \
    }                                                                                         \
    const struct rtm_heap_wops rtm__##kname##_logged_ops = {                                  \
        .alloc = kname##_logged_alloc,                                                        \
        .aligned_alloc = kname##_logged_aligned,                                              \
        .realloc = kname##_logged_realloc,                                                    \
        .free = kname##_logged_free,                                                          \
        .add_pool = kname##_logged_add_pool,                                                  \
        .taken_size = kname##_ops_usable,                                                     \
    }

#endif /* RTMEM_SRC_HEAP_PAGEHEAP_KIND_H */
