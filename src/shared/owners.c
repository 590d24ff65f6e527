/*
 * Shared heaps: who owns each block, and the blocks of processes that are
 * gone (rtmem/shared.h, "Owners"). Built on the owner records of robust
 * heaps (src/heap/robust.c). Liveness is looked up in /proc with the heap's
 * lock given back: each call walks the heap once with the lock held to
 * learn the owners (every distinct one, in a set it mallocs), then once
 * more, per batch of BATCH blocks, to act.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "../heap/robust.h"
#include "../lock/lock.h"

/* Blocks freed per hold of the lock. */
#define BATCH 256

struct owner {
    uint32_t pid, stamp;
    bool gone;
};

/* The distinct owners of the blocks a walk met: an open-addressing set,
 * malloc'd, grown as needed (a maintenance call: not on a control loop's
 * path). */
struct owners {
    struct owner *o;
    size_t cap, n;   /* slots (a power of two), owners in them */
    uint32_t filter; /* only this pid (0: every one) */
    bool nomem;
};

static size_t slot_of(const struct owners *w, uint32_t pid, uint32_t stamp)
{
    uint64_t x = ((uint64_t)pid << 32 | stamp) * 0x9e3779b97f4a7c15ull;
    return (size_t)(x >> 32) & (w->cap - 1);
}

static struct owner *owner_find(const struct owners *w, uint32_t pid, uint32_t stamp)
{
    if (!w->cap)
        return NULL;
    for (size_t i = slot_of(w, pid, stamp);; i = (i + 1) & (w->cap - 1)) {
        struct owner *o = &w->o[i];
        if (o->pid == 0)
            return NULL;
        if (o->pid == pid && o->stamp == stamp)
            return o;
    }
}

static bool owner_add(struct owners *w, uint32_t pid, uint32_t stamp)
{
    if (2 * (w->n + 1) > w->cap) { /* at most half full */
        size_t cap = w->cap ? 2 * w->cap : 64;
        struct owner *old = w->o, *o = calloc(cap, sizeof(*o));
        if (!o)
            return false;
        size_t old_cap = w->cap;
        w->o = o;
        w->cap = cap;
        w->n = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].pid)
                owner_add(w, old[i].pid, old[i].stamp);
        free(old);
    }
    size_t i = slot_of(w, pid, stamp);
    while (w->o[i].pid)
        i = (i + 1) & (w->cap - 1);
    w->o[i] = (struct owner){ pid, stamp, false };
    w->n++;
    return true;
}

/* Blocks of no known process: the heap's own (pid 0), or an overrun record. */
static bool ownerless(uint32_t pid)
{
    return pid == 0 || pid == UINT32_MAX;
}

static int learn_one(void *arg, const struct rtm_owned *b)
{
    struct owners *w = arg;
    if (ownerless(b->pid) || (w->filter && b->pid != w->filter) || owner_find(w, b->pid, b->stamp))
        return 0;
    if (!owner_add(w, b->pid, b->stamp)) {
        w->nomem = true;
        return 1;
    }
    return 0;
}

/* Every owner of a live block (of pid only, unless 0), and whether it is
 * gone: 0, -ENOMEM, or the lock's or the walk's errors. */
static int learn_owners(struct rtm_shared *s, struct owners *w, uint32_t pid)
{
    const struct rtm_heap_ops *ops = rtm__heap_ops(s->heap);
    *w = (struct owners){ .filter = pid };
    int rc = rtm__heap_lock_hold(s->heap);
    if (rc)
        return rc;
    rc = rtm__robust_walk(ops, s->heap, learn_one, w);
    rtm__heap_lock_release(s->heap);
    if (w->nomem)
        rc = -ENOMEM;
    if (rc < 0) {
        free(w->o);
        return rc;
    }
    for (size_t i = 0; i < w->cap; i++)
        if (w->o[i].pid)
            w->o[i].gone = !rtm__owner_alive(w->o[i].pid, w->o[i].stamp);
    return 0;
}

/* Whether the catalog points into [off, off + bytes): with the lock held. */
static bool published(const struct rtm_shared *s, uint64_t off, size_t bytes)
{
    for (uint32_t i = 0; i < s->header->catalog_entries; i++) {
        uint64_t e = __atomic_load_n(&s->catalog[i].offset, __ATOMIC_ACQUIRE);
        if (e && e - off < bytes)
            return true;
    }
    return false;
}

struct pick {
    struct rtm_shared *s;
    struct owners *w;
    uint32_t pid; /* 0: every owner that is gone */
    /* orphans: where to list them */
    struct rtm_shared_orphan *out;
    size_t max;
    long count;
    /* reclaim: the batch to free */
    void *batch[BATCH];
    unsigned n;
};

/* Whether block b belongs to a process that is gone, and is not published. */
static bool orphan(struct pick *k, const struct rtm_owned *b)
{
    if (ownerless(b->pid) || (k->pid && b->pid != k->pid))
        return false;
    const struct owner *o = owner_find(k->w, b->pid, b->stamp);
    if (!o || !o->gone)
        return false;
    return !published(k->s, rtm_shared_to_offset(k->s, b->p), b->bytes + RTM_OWNER_BYTES);
}

static int list_one(void *arg, const struct rtm_owned *b)
{
    struct pick *k = arg;
    if (!orphan(k, b))
        return 0;
    if ((size_t)k->count < k->max)
        k->out[k->count] =
            (struct rtm_shared_orphan){ rtm_shared_to_offset(k->s, b->p), b->bytes, (int)b->pid };
    k->count++;
    return 0;
}

static int batch_one(void *arg, const struct rtm_owned *b)
{
    struct pick *k = arg;
    if (!orphan(k, b))
        return 0;
    k->batch[k->n++] = b->p;
    return k->n == BATCH; /* full: free these, then walk again */
}

long rtm_shared_orphans(struct rtm_shared *s, struct rtm_shared_orphan *out, size_t max)
{
    if (!s || (!out && max))
        return -EINVAL;
    struct owners w;
    int rc = learn_owners(s, &w, 0);
    if (rc)
        return rc;
    struct pick k = { .s = s, .w = &w, .out = out, .max = max };
    rc = rtm__heap_lock_hold(s->heap);
    if (rc == 0) {
        rc = rtm__robust_walk(rtm__heap_ops(s->heap), s->heap, list_one, &k);
        rtm__heap_lock_release(s->heap);
    }
    free(w.o);
    return rc ? rc : k.count;
}

long rtm_shared_reclaim(struct rtm_shared *s, int pid)
{
    if (!s || pid < 0)
        return -EINVAL;
    struct owners w;
    int rc = learn_owners(s, &w, (uint32_t)pid);
    if (rc)
        return rc;
    if (pid > 0) {
        for (size_t i = 0; i < w.cap; i++)
            if (w.o[i].pid && !w.o[i].gone) {
                free(w.o);
                return -EBUSY; /* it runs: its blocks stay */
            }
    }
    const struct rtm_heap_ops *ops = rtm__heap_ops(s->heap);
    struct pick k = { .s = s, .w = &w, .pid = (uint32_t)pid };
    long freed = 0;
    for (;;) {
        k.n = 0;
        rc = rtm__heap_lock_hold(s->heap);
        if (rc)
            break;
        rc = rtm__robust_walk(ops, s->heap, batch_one, &k);
        long before = freed;
        for (unsigned i = 0; i < k.n; i++)
            if (rtm__robust_free(ops, s->heap, k.batch[i]) == 0)
                freed++;
        rtm__heap_lock_release(s->heap);
        /* a full batch: walk again; stop when one frees nothing (blocks the
         * heap refuses to free would fill every batch) */
        if (rc < 0 || k.n < BATCH || freed == before)
            break;
    }
    free(w.o);
    if (rc < 0 && freed == 0)
        return rc;
    return freed;
}
int rtm_shared_set_owner(struct rtm_shared *s, void *p, int pid)
{
    if (!s || pid < 0)
        return -EINVAL;
    uint32_t stamp = 0;
    if (pid > 0) {
        uint32_t self;
        rtm__owner_self(&self, &stamp);
        if ((uint32_t)pid != self && !rtm__owner_stamp((uint32_t)pid, &stamp))
            return -ESRCH;
    }
    int rc = rtm__heap_lock_hold(s->heap);
    if (rc)
        return rc;
    rc = rtm__robust_set_owner(rtm__heap_ops(s->heap), s->heap, p, (uint32_t)pid, stamp);
    rtm__heap_lock_release(s->heap);
    return rc;
}

int rtm_shared_owner(struct rtm_shared *s, const void *p)
{
    if (!s)
        return -EINVAL;
    int rc = rtm__heap_lock_hold(s->heap);
    if (rc)
        return rc;
    uint32_t pid, stamp;
    rc = rtm__robust_owner(rtm__heap_ops(s->heap), s->heap, p, &pid, &stamp);
    rtm__heap_lock_release(s->heap);
    if (rc)
        return rc;
    return pid == UINT32_MAX ? -EBADMSG : (int)pid;
}
