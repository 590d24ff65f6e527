/*
 * The calls of a robust heap (RTM_HEAP_LOCK_ROBUST_SHARED), lock held: the
 * kind's logged operations (store.h), the undo log emptied at the end of
 * each (undo.h), and an owner record at the end of every block.
 *
 * Owner records. Every block a robust heap hands out ends with 16 bytes
 * the caller never sees: the owner's pid and start-time stamp
 * (rtm__owner_self) and a tag over both that tells a record from anything
 * else. The caller's address is the kind's block; the dispatcher asks the
 * kind for 16 bytes more and reports 16 bytes less as usable, so the
 * record sits at the block's address + the kind's usable size - 16, found
 * in O(1) from the kind's own lookup. Nothing but reclaim reads it: a
 * caller that overruns its block damages its record first, and the block
 * then has no known owner (never reclaimed), while free, realloc and the
 * heap's checks go on as for any block. A realloc keeps the owner. The
 * record is written inside the kind's block; the words it covers are
 * logged first (undo.h), because in a block just taken they held a free
 * block's metadata (TLSF's footer) that a roll back must restore.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "robust.h"
#include "store.h"
#include "../lock/lock.h"

static const struct rtm_heap_wops *const logged[RTM_KIND_COUNT] = {
    [RTM_KIND_TLSF] = &rtm__tlsf_logged_ops,     [RTM_KIND_HEAPMEM] = &rtm__heapmem_logged_ops,
    [RTM_KIND_XNHEAP] = &rtm__xnheap_logged_ops, [RTM_KIND_HALFFIT] = &rtm__halffit_logged_ops,
    [RTM_KIND_XVHEAP] = &rtm__xvheap_logged_ops, [RTM_KIND_ZSHEAP] = &rtm__zsheap_logged_ops,
};

struct owner_rec {
    uint32_t pid;
    uint32_t stamp;
    uint32_t zero;
    uint32_t tag;
};

_Static_assert(sizeof(struct owner_rec) == RTM_OWNER_BYTES, "the record is RTM_OWNER_BYTES");

static inline uint32_t rec_tag(uint32_t pid, uint32_t stamp)
{
    uint64_t x = ((uint64_t)pid << 32 | stamp) * 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(x >> 32) ^ 0x574f5452u; /* "RTOW" */
}

static inline void rec_write(void *at, uint32_t pid, uint32_t stamp)
{
    struct owner_rec r = { pid, stamp, 0, rec_tag(pid, stamp) };
    memcpy(at, &r, sizeof(r));
}

static inline bool rec_read(const void *at, struct owner_rec *r)
{
    memcpy(r, at, sizeof(*r));
    return r->zero == 0 && r->tag == rec_tag(r->pid, r->stamp);
}

/* ---- this process --------------------------------------------------------------- */

static uint32_t self_pid, self_stamp; /* atomics; 0: not learnt yet */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* Field 22 of /proc/<pid>/stat (starttime), and whether the process is a
 * zombie or dead: 1 running (*start set), 0 a zombie (with no thread left
 * running), -1 unknown (no such
 * file, which is also what a /proc mounted hidepid= shows for another
 * user's live process; or unreadable). No malloc, no stdio:
 * async-signal-safe, for the fork handler. */
static int read_stat(uint32_t pid, uint64_t *start)
{
    char path[32] = "/proc/";
    char digits[12];
    int n = 0;
    uint32_t v = pid;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    size_t at = 6;
    while (n)
        path[at++] = digits[--n];
    memcpy(path + at, "/stat", 6);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[1024];
    ssize_t len = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (len <= 0)
        return -1;
    buf[len] = 0;
    char *p = strrchr(buf, ')'); /* the command may hold spaces and ')' */
    if (!p || p[1] != ' ')
        return -1;
    char state = p[2];
    /* fields 3 (state) .. 22 (starttime), 20 (num_threads) on the way */
    p += 2;
    uint64_t threads = 0;
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (!p)
            return -1;
        p++;
        if (field + 1 == 20)
            for (const char *q = p; *q >= '0' && *q <= '9'; q++)
                threads = threads * 10 + (uint64_t)(*q - '0');
    }
    /* A zombie is gone, unless it is a leader that called pthread_exit
     * while its other threads run (it shows Z with their count). */
    if ((state == 'Z' || state == 'X' || state == 'x') && threads <= 1)
        return 0;
    uint64_t s = 0;
    while (*p >= '0' && *p <= '9')
        s = s * 10 + (uint64_t)(*p++ - '0');
    *start = s;
    return 1;
}

static void learn_self(void)
{
    uint32_t pid = (uint32_t)getpid();
    uint64_t start = 0;
    uint32_t stamp = read_stat(pid, &start) == 1 ? (uint32_t)start : 0;
    __atomic_store_n(&self_stamp, stamp, __ATOMIC_RELAXED);
    __atomic_store_n(&self_pid, pid, __ATOMIC_RELEASE);
}

static void register_atfork(void)
{
    (void)pthread_atfork(NULL, NULL, learn_self);
}

void rtm__owner_self(uint32_t *pid, uint32_t *stamp)
{
    uint32_t p = __atomic_load_n(&self_pid, __ATOMIC_ACQUIRE);
    if (__builtin_expect(p == 0, 0)) {
        (void)pthread_once(&atfork_once, register_atfork);
        learn_self();
        p = __atomic_load_n(&self_pid, __ATOMIC_ACQUIRE);
    }
    *pid = p;
    *stamp = __atomic_load_n(&self_stamp, __ATOMIC_RELAXED);
}

bool rtm__owner_stamp(uint32_t pid, uint32_t *stamp)
{
    uint64_t start = 0;
    if (pid == 0 || pid > (uint32_t)INT32_MAX)
        return false;
    int st = read_stat(pid, &start);
    if (st == 1) {
        *stamp = (uint32_t)start;
        return true;
    }
    /* /proc cannot say: a pid kill(2) finds runs, start time unknown (0) */
    *stamp = 0;
    return st < 0 && !(kill((pid_t)pid, 0) != 0 && errno == ESRCH);
}

int rtm__owner_alive(uint32_t pid, uint32_t stamp)
{
    if (pid == 0 || pid > (uint32_t)INT32_MAX)
        return 0;
    uint64_t start = 0;
    int st = read_stat(pid, &start);
    if (st == 1) /* running: the same process if it started when the record says */
        return stamp == 0 || (uint32_t)start == stamp;
    if (st == 0)
        return 0; /* a zombie: gone */
    /* /proc cannot say (not mounted, or hidepid=): only ESRCH means gone; a
     * pid in use counts as alive, reused or not (its blocks stay). */
    return !(kill((pid_t)pid, 0) != 0 && errno == ESRCH);
}

static inline struct rtm_undo *undo(const struct rtm_heap *h)
{
    return rtm_undo_of(h);
}

/* Where the record of block p lies, given the kind's usable size n. */
static inline char *rec_at(const void *p, size_t n)
{
    return (char *)(uintptr_t)p + n - RTM_OWNER_BYTES;
}

/* ---- the calls ----------------------------------------------------------------------------- */

/* Writes the record of p, a block the call has just taken or moved (after
 * logging the words it covers), and returns p; NULL for NULL. */
static void *own(struct rtm_heap *h, void *p, uint32_t pid, uint32_t stamp)
{
    if (!p)
        return NULL;
    char *at = rec_at(p, logged[h->kind]->taken_size(h, p));
    rtm_undo_note_block(undo(h), at, RTM_OWNER_BYTES);
    rec_write(at, pid, stamp);
    return p;
}

static void *count_failed(struct rtm_heap *h)
{
    rtm_undo_note(undo(h), &h->failed_allocs, sizeof(h->failed_allocs));
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the note, then the store */
    h->failed_allocs++;
    rtm_undo_commit(undo(h));
    return NULL;
}

void *rtm__robust_alloc(const struct rtm_heap_ops *ops, struct rtm_heap *h, size_t size)
{
    (void)ops; /* the same arguments as every call of this file */
    uint32_t pid, stamp;
    rtm__owner_self(&pid, &stamp);
    if (size > SIZE_MAX - RTM_OWNER_BYTES)
        return count_failed(h);
    /* alloc(0) too gets a usable byte: a usable size of 0 means "no block" */
    size += size == 0;
    void *p = own(h, logged[h->kind]->alloc(h, size + RTM_OWNER_BYTES), pid, stamp);
    rtm_undo_commit(undo(h));
    return p;
}

void *rtm__robust_aligned_alloc(const struct rtm_heap_ops *ops, struct rtm_heap *h,
                                size_t alignment, size_t size)
{
    (void)ops;
    uint32_t pid, stamp;
    rtm__owner_self(&pid, &stamp);
    if (size > SIZE_MAX - RTM_OWNER_BYTES)
        return count_failed(h);
    size += size == 0;
    void *p =
        own(h, logged[h->kind]->aligned_alloc(h, alignment, size + RTM_OWNER_BYTES), pid, stamp);
    rtm_undo_commit(undo(h));
    return p;
}

void *rtm__robust_realloc(const struct rtm_heap_ops *ops, struct rtm_heap *h, void *p, size_t size)
{
    if (!p)
        return rtm__robust_alloc(ops, h, size);
    size_t n = ops->usable_size(h, p);
    if (n < RTM_OWNER_BYTES || size > SIZE_MAX - RTM_OWNER_BYTES) {
        /* no block (the kind refuses and counts it), or a size too large */
        void *q = n < RTM_OWNER_BYTES ? logged[h->kind]->realloc(h, p, size) : count_failed(h);
        rtm_undo_commit(undo(h));
        return q;
    }
    size += size == 0;
    /* The owner stays: read before the kind moves or grows the block. */
    struct owner_rec r;
    if (!rec_read(rec_at(p, n), &r))
        r = (struct owner_rec){ UINT32_MAX, 0, 0, 0 }; /* overrun: owner unknown */
    void *q = own(h, logged[h->kind]->realloc(h, p, size + RTM_OWNER_BYTES), r.pid, r.stamp);
    rtm_undo_commit(undo(h));
    return q;
}

int rtm__robust_free(const struct rtm_heap_ops *ops, struct rtm_heap *h, void *p)
{
    (void)ops;
    int rc = logged[h->kind]->free(h, p);
    rtm_undo_commit(undo(h));
    return rc;
}

size_t rtm__robust_usable_size(const struct rtm_heap_ops *ops, const struct rtm_heap *h,
                               const void *p)
{
    size_t n = ops->usable_size(h, p);
    return n > RTM_OWNER_BYTES ? n - RTM_OWNER_BYTES : 0;
}

size_t rtm__robust_fill_count(const struct rtm_heap_ops *ops, const struct rtm_heap *h, size_t size)
{
    return size > SIZE_MAX - RTM_OWNER_BYTES ? 0 : ops->fill_count(h, size + RTM_OWNER_BYTES);
}

/* The pool's memory is named in the log first (logged itself), so that a
 * roll back may write there, and unnamed again when the kind refuses it. */
int rtm__robust_add_pool(struct rtm_heap *h, void *mem, size_t size)
{
    struct rtm_undo *u = undo(h);
    uint32_t i = u->pools;
    if (i >= RTM_UNDO_POOLS)
        return -ENOSPC;
    if (!mem || size == 0 || (uintptr_t)mem + size - 1 < (uintptr_t)mem)
        return -EINVAL;
    uint64_t at = (uint64_t)((uintptr_t)mem - (uintptr_t)u), len = size;
    /* the count first, so that a roll back gives it back last: the pool's
     * entries stay valid until every one of them is undone */
    rtm_undo_note(u, &u->pools, sizeof(u->pools));
    rtm_undo_note(u, &u->pool[i].at, sizeof(u->pool[i].at));
    rtm_undo_note(u, &u->pool[i].len, sizeof(u->pool[i].len));
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the notes, then the stores */
    *(volatile uint64_t *)&u->pool[i].at = at;
    *(volatile uint64_t *)&u->pool[i].len = len;
    *(volatile uint32_t *)&u->pools = i + 1;
    int rc = logged[h->kind]->add_pool(h, mem, size);
    if (rc != 0)
        (void)rtm__undo_rollback(u, h->lock_offset - RTM_HEAP_LOCK_AREA_BYTES, 0);
    else
        rtm_undo_commit(u);
    return rc;
}

/* ---- owners ------------------------------------------------------------------------------ */

int rtm__robust_set_owner(const struct rtm_heap_ops *ops, const struct rtm_heap *h, void *p,
                          uint32_t pid, uint32_t stamp)
{
    size_t n = p ? ops->usable_size(h, p) : 0;
    if (n < RTM_OWNER_BYTES)
        return -EINVAL;
    /* logged, so that a death inside the write leaves the old record, not
     * a torn one */
    struct rtm_heap *w = (struct rtm_heap *)(uintptr_t)h;
    char *at = rec_at(p, n);
    rtm_undo_note_block(undo(w), at, RTM_OWNER_BYTES);
    rec_write(at, pid, stamp);
    rtm_undo_commit(undo(w));
    return 0;
}

int rtm__robust_owner(const struct rtm_heap_ops *ops, const struct rtm_heap *h, const void *p,
                      uint32_t *pid, uint32_t *stamp)
{
    size_t n = p ? ops->usable_size(h, p) : 0;
    struct owner_rec r;
    if (n < RTM_OWNER_BYTES)
        return -EINVAL;
    if (!rec_read(rec_at(p, n), &r))
        r = (struct owner_rec){ UINT32_MAX, 0, 0, 0 };
    *pid = r.pid;
    *stamp = r.stamp;
    return 0;
}

struct walk_ctx {
    const struct rtm_heap_ops *ops;
    const struct rtm_heap *h;
    int (*fn)(void *arg, const struct rtm_owned *b);
    void *arg;
};

static int walk_one(void *arg, void *block)
{
    struct walk_ctx *c = arg;
    size_t n = c->ops->usable_size(c->h, block);
    if (n < RTM_OWNER_BYTES)
        return -EFAULT;
    struct owner_rec r;
    if (!rec_read(rec_at(block, n), &r))
        r = (struct owner_rec){ UINT32_MAX, 0, 0, 0 }; /* overrun: no owner known */
    struct rtm_owned b = { block, n - RTM_OWNER_BYTES, r.pid, r.stamp };
    return c->fn(c->arg, &b);
}

int rtm__robust_walk(const struct rtm_heap_ops *ops, const struct rtm_heap *h,
                     int (*fn)(void *arg, const struct rtm_owned *b), void *arg)
{
    struct walk_ctx c = { ops, h, fn, arg };
    return ops->walk(h, walk_one, &c);
}
