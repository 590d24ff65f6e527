/* The undo log of robust heaps: roll back and sizing (undo.h). */
#include "undo.h"

#include "kind.h"

int rtm__undo_rollback(struct rtm_undo *u)
{
    uint32_t n = __atomic_load_n(&u->count, __ATOMIC_RELAXED);
    if (n == 0)
        return 0;
    if (u->overflow) {
        u->count = 0;
        u->overflow = 0;
        u->overflows++;
        return 1;
    }
    if (n > u->capacity)
        return -1;
    /* Every entry first: a damaged log writes nothing. */
    for (uint32_t i = 0; i < n; i++) {
        uint64_t where = u->entry[i].where, width = (uint64_t)1 << (where & 3);
        uint64_t dist = where >> 2;
        if (dist < rtm_undo_bytes(u->capacity) || dist > u->span || u->span - dist < width ||
            ((uintptr_t)u + dist) % width != 0)
            return -1;
    }
    for (uint32_t i = n; i-- > 0;) {
        const struct rtm_undo_entry *e = &u->entry[i];
        memcpy((void *)((uintptr_t)u + (e->where >> 2)), &e->old, (size_t)1 << (e->where & 3));
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the words, then the count */
    __atomic_store_n(&u->count, 0, __ATOMIC_RELAXED);
    u->rollbacks++;
    return 0;
}

/* Levels a balanced tree of at most n nodes can have (red-black: 2 log2(n + 1),
 * which covers AVL too), plus one. */
static uint32_t tree_levels(size_t n)
{
    uint32_t lg = 0;
    while (n) {
        lg++;
        n >>= 1;
    }
    return 2 * lg + 1;
}

uint32_t rtm__undo_capacity(uint32_t kind, size_t bytes)
{
    if (kind == RTM_KIND_TLSF)
        return 128;
    /* Page heaps: free runs are at most one per two pages (512 bytes). */
    return 128 + 32 * tree_levels(bytes / 1024 + 1);
}
