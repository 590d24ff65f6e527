/* Shared heaps: creating, attaching to, detaching from and unlinking a
 * named segment, and the offsets that hold in every process. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "../heap/kind.h"
#include "../heap/robust.h"
#include "../lock/lock.h"

#define TRUST_ALL (RTM_SHARED_TRUST_ANY_OWNER | RTM_SHARED_TRUST_WORLD_WRITABLE)

/* The heap starts on this boundary after header and catalog. */
#define HEAP_ALIGN 64u

static void *fail_null(int err)
{
    errno = err;
    return NULL;
}

/* The handle's arena config: the segment's place with cfg's mapping
 * options (and, creating a heap of huge pages, its page size). */
static struct rtm_arena_config arena_config(const struct shared_place *pl, size_t size,
                                            unsigned flags, const struct rtm_shared_config *cfg)
{
    struct rtm_arena_config ac = {
        .source = pl->source, .size_bytes = size, .name = pl->path, .flags = flags
    };
    if (cfg) {
        ac.mode = cfg->mode;
        ac.prefault = cfg->prefault;
        ac.lock = cfg->lock;
        ac.thp = cfg->thp;
        if (!(flags & RTM_ARENA_EXISTING) && pl->source == RTM_ARENA_FILE)
            ac.page_bytes = cfg->page_bytes;
    }
    return ac;
}

static size_t align_up(size_t n, size_t a)
{
    return (n + a - 1) & ~(a - 1);
}

/* Writes the header and the empty catalog, and builds the heap; the state
 * stays "initialising". 0 or an errno. */
static int build(struct rtm_shared *s, const char *kind, const struct rtm_shared_config *cfg)
{
    uint32_t entries =
        cfg && cfg->catalog_entries ? cfg->catalog_entries : RTM_SHARED_CATALOG_DEFAULT;
    char *base = s->arena.base;
    size_t size = s->arena.size_bytes;
    size_t catalog = sizeof(struct shared_header);
    size_t heap_at = align_up(catalog + (size_t)entries * sizeof(struct shared_entry), HEAP_ALIGN);
    if (heap_at >= size)
        return ENOMEM;
    struct shared_header *hd = (struct shared_header *)(void *)base;
    hd->magic = SHARED_MAGIC;
    hd->version = RTM_SHARED_LAYOUT_VERSION;
    hd->size_bytes = size;
    hd->attach_count = 1;
    hd->catalog_entries = entries;
    hd->catalog_offset = catalog;
    hd->creator_pid = (int32_t)getpid();
    snprintf(hd->kind, sizeof hd->kind, "%s", kind);
    /* a new object is all zeros: every catalog entry is free already */
    struct rtm_heap_config hc = { .lock = RTM_HEAP_LOCK_ROBUST_SHARED };
    if (cfg) {
        hc.hardening = cfg->hardening;
        hc.check_interval = cfg->check_interval;
        hc.lock_timeout_us = cfg->lock_timeout_us;
    }
    struct rtm_heap *h = rtm_heap_create_ex(kind, base + heap_at, size - heap_at, &hc);
    if (!h)
        return errno;
    rtm__heap_fix(h); /* the segment is all its memory: no add_pool */
    /* What attach will ask of it. */
    RTM_ASSERT(rtm__heap_validate(h, size - (size_t)((char *)h - base)) == 0);
    hd->heap_offset = (uint64_t)((char *)h - base);
    s->header = hd;
    s->catalog = (struct shared_entry *)(void *)(base + catalog);
    s->heap = h;
    return 0;
}

void (*rtm__shared_attach_hook)(int where, const char *name);

/* Why an object too short to map (less than a page) is refused, looked at
 * again: EBUSY when it is empty (a creator between creating and sizing it,
 * or one that died there) or has grown since (a creator sized it in
 * between: a heap being created is always EBUSY); EINVAL only for a size
 * no creator leaves (rtmem sizes in one step, to whole pages). */
static int short_object(const struct shared_place *pl)
{
    int fd = pl->source == RTM_ARENA_POSIX_SHM ? shm_open(pl->path, O_RDONLY | O_CLOEXEC, 0)
                                               : open(pl->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    struct stat st;
    int rc = fstat(fd, &st);
    close(fd);
    if (rc != 0)
        return EBUSY;
    long page = sysconf(_SC_PAGESIZE);
    bool part_page = st.st_size > 0 && page > 0 && st.st_size < (off_t)page;
    return part_page ? EINVAL : EBUSY;
}

/* Why an object this process may not open is refused, looked at again:
 * EBUSY when it is empty, as in short_object (a creator between creating
 * it, with its mode masked by the umask, and setting the mode it was asked
 * for, which would admit this process a moment later); else EACCES. Its
 * size is asked of the file (stat needs no permission on the object). */
static int refused_object(const struct shared_place *pl)
{
    char path[sizeof "/dev/shm" + sizeof pl->path];
    snprintf(path, sizeof path, "%s%s", pl->source == RTM_ARENA_POSIX_SHM ? "/dev/shm" : "",
             pl->path);
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 ? EBUSY : EACCES;
}

/* Whether the config asks only what an attach may (mapping options, whom
 * to trust). */
static bool attach_config_ok(const struct rtm_shared_config *cfg)
{
    return !cfg ||
           (!cfg->mode && !cfg->catalog_entries && !cfg->hardening && !cfg->check_interval &&
            !cfg->lock_timeout_us && !cfg->page_bytes && !(cfg->trust & ~TRUST_ALL));
}

/* Whether this process trusts the object (rtmem/shared.h, "Who can attach
 * what"): owned by its own effective user, root, the config's trusted_uid,
 * or anyone under RTM_SHARED_TRUST_ANY_OWNER; and not writable by every
 * user unless RTM_SHARED_TRUST_WORLD_WRITABLE. Asked of the object itself
 * (fstat), never of anything in it. 0 or EPERM. */
static int trusted(const struct stat *st, const struct rtm_shared_config *cfg)
{
    unsigned trust = cfg ? cfg->trust : 0;
    uid_t me = geteuid();
    if (st->st_uid != me && st->st_uid != 0 && !(trust & RTM_SHARED_TRUST_ANY_OWNER) &&
        !(cfg && cfg->trusted_uid && st->st_uid == (uid_t)cfg->trusted_uid))
        return EPERM;
    if ((st->st_mode & S_IWOTH) && !(trust & RTM_SHARED_TRUST_WORLD_WRITABLE))
        return EPERM;
    return 0;
}

/* Opens the place read-only and looks at it, before anything is mapped:
 * 0 with *st, or the errno of the open (the arena's open then says it). */
static int look(const struct shared_place *pl, struct stat *st)
{
    int fd = pl->source == RTM_ARENA_POSIX_SHM ? shm_open(pl->path, O_RDONLY | O_CLOEXEC, 0)
                                               : open(pl->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno;
    int rc = fstat(fd, st) == 0 ? 0 : errno;
    close(fd);
    return rc;
}

/* Where a new heap goes: /dev/shm for base pages (page_bytes 0 or the base
 * page size), else a hugetlbfs mount of that page size. 0 or an errno. */
static int create_place(const char *name, size_t page_bytes, struct shared_place *pl)
{
    long base = sysconf(_SC_PAGESIZE);
    if (page_bytes == 0 || (base > 0 && page_bytes == (size_t)base)) {
        rtm__shared_shm_place(name, pl);
        return 0;
    }
    if ((page_bytes & (page_bytes - 1)) != 0 || (base > 0 && page_bytes < (size_t)base))
        return EINVAL;
    return -rtm__shared_huge_place(name, page_bytes, pl);
}

struct rtm_shared *rtm_shared_create_ex(const char *name, const char *kind, size_t size,
                                        const struct rtm_shared_config *cfg)
{
    int rc = rtm__shared_check_name(name);
    if (rc)
        return fail_null(-rc);
    uint32_t self, stamp; /* this process's owner identity: learnt now, not under the lock */
    rtm__owner_self(&self, &stamp);
    if (!kind ||
        (cfg && (cfg->catalog_entries > RTM_SHARED_CATALOG_MAX || cfg->trust || cfg->trusted_uid)))
        return fail_null(EINVAL);
    bool known = false;
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        known |= strcmp(*k, kind) == 0;
    if (!known)
        return fail_null(ENOENT);
    if (size == 0)
        return fail_null(ENOMEM);
    struct shared_place pl;
    int err = create_place(name, cfg ? cfg->page_bytes : 0, &pl);
    if (err)
        return fail_null(err);
    /* The name is one space over /dev/shm and the hugetlbfs mounts: taken
     * in another place than the one to create in, it is EEXIST too. */
    if (rtm__shared_taken(name, -1))
        return fail_null(EEXIST);
    struct rtm_shared *s = calloc(1, sizeof *s);
    if (!s)
        return fail_null(ENOMEM);
    s->pid = (int)getpid();
    struct rtm_arena_config ac = arena_config(&pl, size, 0, cfg);
    /* O_CREAT | O_EXCL: an existing name, live or stale, is EEXIST */
    rc = rtm_arena_open(&s->arena, &ac);
    if (rc) {
        free(s);
        return fail_null(-rc);
    }
    /* Looked for again now that this segment exists: of two creates of one
     * name in two places at once, at least one finds the other's here (each
     * looks after its own file exists), and gives its own up. */
    err = rtm__shared_taken(name, s->arena.fd) ? EEXIST : build(s, kind, cfg);
    if (err) {
        rtm_arena_close(&s->arena); /* removes the object it created */
        free(s);
        return fail_null(err);
    }
    /* From now on the object outlives this attachment: detach unmaps only. */
    s->arena.internal.owned = 0;
    __atomic_store_n(&s->header->state, SHARED_READY, __ATOMIC_RELEASE);
    return s;
}

struct rtm_shared *rtm_shared_create(const char *name, const char *kind, size_t size)
{
    return rtm_shared_create_ex(name, kind, size, NULL);
}

/* Checks the mapped segment before anything is trusted: 0 or an errno.
 * Reads only. */
static int validate(struct rtm_shared *s)
{
    char *base = s->arena.base;
    size_t size = s->arena.size_bytes;
    if (size < sizeof(struct shared_header))
        return EINVAL;
    struct shared_header *hd = (struct shared_header *)(void *)base;
    /* the state first (acquire): "ready" makes everything written before it
     * visible, the magic included */
    uint32_t state = __atomic_load_n(&hd->state, __ATOMIC_ACQUIRE);
    uint64_t magic = __atomic_load_n(&hd->magic, __ATOMIC_RELAXED);
    /* Still being written (its creator at work, or killed at it): the
     * zeros of a new object, or a header part-written, version included. */
    if ((magic == 0 || magic == SHARED_MAGIC) && state == SHARED_INITIALISING)
        return EBUSY;
    if (magic != SHARED_MAGIC)
        return EINVAL;
    if (hd->version != RTM_SHARED_LAYOUT_VERSION)
        return EPROTO;
    if (state != SHARED_READY)
        return EINVAL;
    uint64_t catalog_end =
        hd->catalog_offset + (uint64_t)hd->catalog_entries * sizeof(struct shared_entry);
    if (hd->size_bytes != size || hd->catalog_offset != sizeof(struct shared_header) ||
        hd->catalog_entries == 0 || hd->catalog_entries > RTM_SHARED_CATALOG_MAX ||
        hd->heap_offset < catalog_end || hd->heap_offset >= size ||
        memchr(hd->kind, 0, sizeof hd->kind) == NULL)
        return EINVAL;
    if (hd->heap_offset > size - sizeof(struct rtm_heap) ||
        hd->heap_offset % _Alignof(struct rtm_heap) != 0)
        return EINVAL;
    struct rtm_heap *h = (struct rtm_heap *)(void *)(base + hd->heap_offset);
    /* Before any call reads through it: the lock area lies inside the
     * segment, after the catalog, and no handler address is stored (a
     * robust shared heap takes none: one here would be called). */
    if (h->lock_offset < RTM_HEAP_LOCK_AREA_BYTES || h->lock_offset > hd->heap_offset ||
        hd->heap_offset - h->lock_offset < catalog_end || h->on_corruption || h->on_corruption_arg)
        return EINVAL;
    /* The lock itself, before any call takes it: a crafted mutex must be a
     * refused attach, never an abort inside the C library. */
    if (rtm__lock_validate(
            (const struct rtm_lock *)(const void *)(base + hd->heap_offset - h->lock_offset)) != 0)
        return EINVAL;
    const char *kind = rtm_heap_kind(h);
    if (!kind || strcmp(kind, hd->kind) != 0 ||
        rtm_heap_lock_type(h) != RTM_HEAP_LOCK_ROBUST_SHARED ||
        rtm__heap_features(h) != (RTM_LOCKF_UNDO | RTM_LOCKF_OWNERS | RTM_LOCKF_FIXED) ||
        rtm_heap_hardening(h) < RTM_HEAP_HARDEN_O1 || rtm_heap_hardening(h) > RTM_HEAP_HARDEN_FULL)
        return EINVAL;
    /* The kind's layout: its control structure, its pools and the ranges
     * they name lie inside the segment (what lies in the pools is
     * rtm_heap_check's to verify, rtmem/shared.h). */
    if (rtm__heap_validate(h, size - hd->heap_offset) != 0)
        return EINVAL;
    s->header = hd;
    s->catalog = (struct shared_entry *)(void *)(base + hd->catalog_offset);
    s->heap = h;
    return 0;
}

struct rtm_shared *rtm_shared_attach_ex(const char *name, const struct rtm_shared_config *cfg)
{
    int rc = rtm__shared_check_name(name);
    if (rc)
        return fail_null(-rc);
    if (!attach_config_ok(cfg))
        return fail_null(EINVAL);
    uint32_t self, stamp; /* this process's owner identity: learnt now, not under the lock */
    rtm__owner_self(&self, &stamp);
    struct rtm_shared *s = calloc(1, sizeof *s);
    if (!s)
        return fail_null(ENOMEM);
    s->pid = (int)getpid();
    /* /dev/shm first, then the hugetlbfs mounts; a file there is mapped with
     * its mount's page size. */
    struct shared_place pl;
    rtm__shared_shm_place(name, &pl);
    /* Whom it belongs to is asked before it is mapped (or prefaulted, or
     * locked): a segment another user controls is never touched. */
    struct stat seen;
    int looked = look(&pl, &seen);
    if (looked == ENOENT && rtm__shared_find_huge(name, &pl) == 0)
        looked = look(&pl, &seen);
    if (looked == 0 && trusted(&seen, cfg) != 0) {
        free(s);
        return fail_null(EPERM);
    }
    if (rtm__shared_attach_hook)
        rtm__shared_attach_hook(RTM__ATTACH_LOOKED, name);
    struct rtm_arena_config ac = arena_config(&pl, 0, RTM_ARENA_EXISTING, cfg);
    rc = rtm_arena_open(&s->arena, &ac);
    if (rc) {
        free(s);
        if (rc == -ENXIO && rtm__shared_attach_hook)
            rtm__shared_attach_hook(RTM__ATTACH_SHORT, name);
        return fail_null(rc == -ENXIO    ? short_object(&pl)
                         : rc == -EACCES ? refused_object(&pl)
                                         : -rc);
    }
    /* The object mapped must be the one looked at (a name removed and made
     * again in between is busy: attach again), and trusted. */
    struct stat now;
    int err = fstat(s->arena.fd, &now) != 0 ? errno : 0;
    if (!err && looked == 0 && (now.st_dev != seen.st_dev || now.st_ino != seen.st_ino))
        err = EBUSY;
    if (!err)
        err = trusted(&now, cfg);
    if (!err)
        err = validate(s);
    if (err) {
        rtm_arena_close(&s->arena); /* existing: unmapped, never removed */
        free(s);
        return fail_null(err);
    }
    __atomic_add_fetch(&s->header->attach_count, 1, __ATOMIC_ACQ_REL);
    return s;
}

struct rtm_shared *rtm_shared_attach(const char *name)
{
    return rtm_shared_attach_ex(name, NULL);
}

struct rtm_heap *rtm_shared_heap(struct rtm_shared *s)
{
    return s ? s->heap : NULL;
}

int rtm_shared_detach(struct rtm_shared *s)
{
    if (!s)
        return -EINVAL;
    /* a fork's copy of the handle was never counted */
    if (s->pid == (int)getpid())
        __atomic_sub_fetch(&s->header->attach_count, 1, __ATOMIC_ACQ_REL);
    int rc = rtm_arena_close(&s->arena);
    free(s);
    return rc;
}

int rtm_shared_unlink(const char *name)
{
    int rc = rtm__shared_check_name(name);
    return rc ? rc : rtm__shared_remove(name);
}

uint64_t rtm_shared_to_offset(const struct rtm_shared *s, const void *p)
{
    if (!s || !p)
        return 0;
    uintptr_t base = (uintptr_t)s->arena.base, at = (uintptr_t)p;
    return at > base && at - base < s->arena.size_bytes ? (uint64_t)(at - base) : 0;
}

void *rtm_shared_from_offset(const struct rtm_shared *s, uint64_t off)
{
    if (!s || off == 0 || off >= s->arena.size_bytes)
        return NULL;
    return (char *)s->arena.base + off;
}

int rtm_shared_get_info(const struct rtm_shared *s, struct rtm_shared_info *out)
{
    if (!s || !out)
        return -EINVAL;
    const struct shared_header *hd = s->header;
    *out = (struct rtm_shared_info){
        .size_bytes = (size_t)hd->size_bytes,
        /* what smaps says (KernelPageSize), or as mapped without /proc */
        .page_bytes = s->arena.report.page_bytes ? s->arena.report.page_bytes : s->arena.page_bytes,
        .heap_offset = hd->heap_offset,
        .attach_count = __atomic_load_n(&hd->attach_count, __ATOMIC_RELAXED),
        .catalog_entries = hd->catalog_entries,
        .creator_pid = hd->creator_pid,
        .kind = rtm_heap_kind(s->heap),
        .base = s->arena.base,
    };
    return 0;
}
