/* Arenas: placing the mapping between two guard pages. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/shm.h>

#include "internal.h"

#define PMD_BYTES ((size_t)2 << 20) /* where transparent huge pages can start */

/* Why mmap of `bytes` (the arena, or its reservation) failed. */
static int explain_mmap(struct rtm_arena *a, const struct rtm__arena_plan *p, int err, size_t bytes)
{
    char b1[32], b2[32], b3[32], b4[32];
    const char *size = rtm__arena_bytes_text(p->size, b1, sizeof b1);
    if (p->hugetlb && err == ENOMEM)
        return rtm__arena_huge_fail(a, p, err, "mmap");
    switch (err) {
    case EAGAIN: {
        struct rlimit rl;
        struct rtm__arena_status st;
        rtm__arena_read_status(&st);
        if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0)
            rl.rlim_cur = RLIM_INFINITY;
        return rtm__arena_fail(
            a, err,
            "mmap of %s refused (EAGAIN): mlockall(MCL_FUTURE) is in force, so every new "
            "mapping is locked: %s locked already and %s more (the arena%s) exceed "
            "RLIMIT_MEMLOCK (%s): raise the limit or grant CAP_IPC_LOCK",
            size, st.ok ? rtm__arena_bytes_text(st.vmlck, b2, sizeof b2) : "an unknown amount",
            rtm__arena_bytes_text(bytes, b3, sizeof b3),
            bytes > p->size ? " with its guard pages, reserved" : "",
            rl.rlim_cur == RLIM_INFINITY
                ? "unlimited"
                : rtm__arena_bytes_text((uint64_t)rl.rlim_cur, b4, sizeof b4));
    }
    case ENODEV: return rtm__arena_fail(a, err, "%s cannot be mapped (ENODEV)", p->what);
    case EACCES:
    case EPERM:
        return rtm__arena_fail(a, err, "mapping %s %s was refused (%s)", p->what,
                               p->writable ? "for writing" : "for reading", strerror(err));
    case EINVAL:
    case ENXIO:
    case EOVERFLOW:
        if (p->cfg->source == RTM_ARENA_DEVICE)
            return rtm__arena_fail(a, err,
                                   "the driver of %s refused to map %s at offset %" PRIu64
                                   " (%s): the range lies outside what it maps",
                                   p->what, size, p->cfg->offset, strerror(err));
        break;
    case ENOMEM:
        return rtm__arena_fail(a, err, "mmap of %s of %s: out of memory or address space", size,
                               p->what);
    default: break;
    }
    return rtm__arena_fail(a, err, "mmap of %s of %s failed: %s", size, p->what, strerror(err));
}

/* Address space of `total` bytes (PROT_NONE, MAP_NORESERVE: no memory),
 * at `hint` if the kernel takes it, unlocked. Under mlockall(MCL_FUTURE) a
 * new mapping is locked and counted against RLIMIT_MEMLOCK, this one too,
 * until munlock: only the arena mapped over it should count. */
static char *reserve_range(void *hint, size_t total)
{
    char *r = mmap(hint, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r != MAP_FAILED)
        munlock(r, total);
    return r;
}

/* Under mlockall(MCL_FUTURE), when the room for alignment does not fit
 * within RLIMIT_MEMLOCK beside the arena: reserves the arena and its guard
 * pages alone, where the kernel puts them, and then, if that address is not
 * aligned, tries the aligned one below it (address space grows down).
 * Returns the reservation, or MAP_FAILED with errno set. */
static char *reserve_tight(size_t total, size_t guard, size_t align)
{
    char *r = reserve_range(NULL, total);
    if (r == MAP_FAILED || ((uintptr_t)r + guard) % align == 0)
        return r;
    char *below = (char *)(((uintptr_t)r + guard) / align * align - guard);
    munmap(r, total);
    r = reserve_range(below, total);
    return r;
}

/* Reserves address space for the arena with a guard page on each side, the
 * arena aligned to its page size, and to 2 MiB from 2 MiB on (where THP can
 * back it); a SysV segment to SHMLBA too, where shmat wants its address
 * (four pages on 32-bit ARM, which refuses any other with EINVAL; one page
 * on x86-64 and arm64). Sets *base to the arena's address. */
static int reserve(struct rtm_arena *a, const struct rtm__arena_plan *p, char **base_out)
{
    size_t guard = p->base_page;
    size_t align = p->page;
    if (p->size >= PMD_BYTES && align < PMD_BYTES)
        align = PMD_BYTES;
    if (p->cfg->source == RTM_ARENA_SYSV_SHM && align < (size_t)SHMLBA)
        align = (size_t)SHMLBA;
    size_t slack = align - p->base_page;
    if (p->size > SIZE_MAX - 2 * guard - slack)
        return rtm__arena_fail(a, EOVERFLOW, "%zu bytes and their guard pages overflow", p->size);
    size_t total = p->size + 2 * guard + slack;
    char *r = reserve_range(NULL, total);
    if (r == MAP_FAILED && errno == EAGAIN && slack) {
        total -= slack;
        r = reserve_tight(total, guard, align);
    }
    if (r == MAP_FAILED)
        return explain_mmap(a, p, errno, total);
    uintptr_t first = (uintptr_t)r + guard;
    char *base = (char *)((first + align - 1) / align * align);
    if (base + p->size + guard > r + total) {
        /* Placed without the room to align (MCL_FUTURE, above). */
        char b[32];
        base = (char *)first;
        if (p->page > p->base_page ||
            (p->cfg->source == RTM_ARENA_SYSV_SHM && (uintptr_t)base % SHMLBA != 0)) {
            munmap(r, total);
            return rtm__arena_fail(
                a, EAGAIN,
                "no address on a %s boundary for %s: mlockall(MCL_FUTURE) is "
                "in force, and RLIMIT_MEMLOCK leaves no room to reserve the "
                "alignment beside the arena",
                rtm__arena_bytes_text(p->page > p->base_page ? p->page : (size_t)SHMLBA, b,
                                      sizeof b),
                p->what);
        }
        rtm__arena_warn(a, "placed not on a 2 MiB boundary (transparent huge pages cannot back its "
                           "ends): mlockall(MCL_FUTURE) is in force, and RLIMIT_MEMLOCK leaves no "
                           "room to reserve the alignment beside the arena");
    }
    char *start = base - guard, *end = base + p->size + guard;
    if (start > r)
        munmap(r, (size_t)(start - r));
    if (end < r + total)
        munmap(end, (size_t)(r + total - end));
    a->internal.map_start = start;
    a->internal.map_bytes = (size_t)(end - start);
    *base_out = base;
    return 0;
}

int rtm__arena_map(struct rtm_arena *a, const struct rtm__arena_plan *p)
{
    /* An existing segment may map more than its size says (a hugetlb one
     * is rounded up to its pages): only the kernel can place it safely. */
    bool sysv = p->cfg->source == RTM_ARENA_SYSV_SHM;
    if (sysv && !a->internal.owned)
        return rtm__arena_sysv_shm_attach(a, p, NULL);
    char *base = NULL;
    int rc = reserve(a, p, &base);
    if (rc)
        return rc;
    if (sysv)
        return rtm__arena_sysv_shm_attach(a, p, base);

    int prot = PROT_READ | (p->writable ? PROT_WRITE : 0);
    int flags = MAP_FIXED | (p->shared ? MAP_SHARED : MAP_PRIVATE) | p->map_flags;
    if (rtm__arena_map_populates(p))
        flags |= MAP_POPULATE;
    if (mmap(base, p->size, prot, flags, a->fd, p->offset) == MAP_FAILED) {
        int err = errno;
        rtm__arena_unmap(a);
        return explain_mmap(a, p, err, p->size);
    }
    a->base = base;
    return 0;
}

int rtm__arena_unmap(struct rtm_arena *a)
{
    void *start = a->internal.map_start;
    size_t bytes = a->internal.map_bytes;
    int rc = 0;
    a->internal.map_start = NULL;
    a->internal.map_bytes = 0;
    if (a->internal.attached && shmdt(a->base) != 0)
        rc = rtm__arena_fail(a, errno, "detaching the SysV segment failed: %s", strerror(errno));
    a->internal.attached = 0;
    /* The reservation around a mapping, or around a segment (detached: the
     * range left is the guards and the hole). */
    if (start && munmap(start, bytes) != 0 && !rc)
        rc = rtm__arena_fail(a, errno, "unmapping the arena failed: %s", strerror(errno));
    return rc;
}
