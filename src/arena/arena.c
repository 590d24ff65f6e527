/* Arenas: open, close, and a heap on an arena (rtmem/arena.h). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

static int obtain(struct rtm_arena *a, struct rtm__arena_plan *p)
{
    switch (p->cfg->source) {
    case RTM_ARENA_ANON: return rtm__arena_anon_obtain(a, p);
    case RTM_ARENA_MEMFD: return rtm__arena_memfd_obtain(a, p);
    case RTM_ARENA_POSIX_SHM: return rtm__arena_posix_shm_obtain(a, p);
    case RTM_ARENA_SYSV_SHM: return rtm__arena_sysv_shm_obtain(a, p);
    case RTM_ARENA_FILE: return rtm__arena_file_obtain(a, p);
    default: return rtm__arena_device_obtain(a, p);
    }
}

int rtm__arena_note_object(struct rtm_arena *a, const struct rtm__arena_plan *p)
{
    struct stat st;
    if (fstat(a->fd, &st) != 0) {
        int err = errno;
        close(a->fd);
        a->fd = -1;
        return rtm__arena_fail(a, err, "fstat of %s failed: %s", p->what, strerror(err));
    }
    a->internal.object_dev = (uint64_t)st.st_dev;
    a->internal.object_ino = (uint64_t)st.st_ino;
    return 0;
}

int rtm__arena_apply_mode(struct rtm_arena *a, const struct rtm__arena_plan *p)
{
    mode_t mode = p->cfg->mode ? (mode_t)p->cfg->mode : 0600;
    if (fchmod(a->fd, mode) != 0)
        return rtm__arena_fail(a, errno, "setting the mode of %s to %04o failed: %s", p->what,
                               (unsigned)mode, strerror(errno));
    return 0;
}

/* Closes the arena's descriptor if it still refers to the arena's object:
 * the caller may have closed it, and the number may now be another
 * descriptor of theirs. */
static int close_descriptor(struct rtm_arena *a)
{
    struct stat st;
    if (fstat(a->fd, &st) != 0 || (uint64_t)st.st_dev != a->internal.object_dev ||
        (uint64_t)st.st_ino != a->internal.object_ino)
        return rtm__arena_fail(a, EBADF,
                               "the arena's descriptor %d no longer refers to its object (closed "
                               "or replaced by the caller): left as it is",
                               a->fd);
    if (close(a->fd) != 0)
        return rtm__arena_fail(a, errno, "closing the arena's descriptor failed: %s",
                               strerror(errno));
    return 0;
}

/* Whether a is a copy of an open arena, not the arena itself. */
static bool is_copy(const struct rtm_arena *a)
{
    return a->base && a->internal.self != a;
}

/* Undoes every step: unmaps, closes, removes what was created. Each failure
 * is written to the message, but for a failed open's undoing (failed_open),
 * which keeps the open's message; the first is returned. The descriptor of
 * a failed open is closed as it is: the open's own, it may not be recorded
 * yet. */
static int release(struct rtm_arena *a, bool failed_open)
{
    char kept[RTM_ARENA_MESSAGE_BYTES];
    memcpy(kept, a->message, sizeof kept);
    int rc = rtm__arena_unmap(a);
    int r2 = a->report.source == RTM_ARENA_POSIX_SHM  ? rtm__arena_posix_shm_remove(a)
             : a->report.source == RTM_ARENA_SYSV_SHM ? rtm__arena_sysv_shm_remove(a)
             : a->report.source == RTM_ARENA_FILE     ? rtm__arena_file_remove(a)
                                                      : 0;
    if (!rc)
        rc = r2;
    if (a->fd >= 0 && failed_open) {
        close(a->fd);
    } else if (a->fd >= 0) {
        r2 = close_descriptor(a);
        if (!rc)
            rc = r2;
    }
    if (a->internal.dir_fd >= 0)
        close(a->internal.dir_fd);
    if (failed_open)
        memcpy(a->message, kept, sizeof kept);
    a->base = NULL;
    a->size_bytes = 0;
    a->fd = -1;
    a->shm_id = -1;
    memset(&a->internal, 0, sizeof a->internal);
    a->internal.dir_fd = -1;
    return rc;
}

/* Bytes the kernel maps at the arena's base: the arena, or all of an
 * existing SysV segment, rounded up to the page size smaps gives. */
static uint64_t mapped_bytes(const struct rtm__arena_plan *p, const struct rtm__arena_smaps *sm)
{
    if (!p->segment_bytes || !sm->page)
        return p->size;
    return (p->segment_bytes + sm->page - 1) / sm->page * sm->page;
}

/* Fills the report from what the kernel says now; refuses (-EINVAL) a
 * mapping whose page size is not the one the arena was sized for (an
 * existing SysV segment created with another). A device's page size is its
 * driver's (device DAX maps 2 MiB pages): reported, not refused. */
static int verify(struct rtm_arena *a, const struct rtm__arena_plan *p,
                  const struct rtm__arena_status *before)
{
    struct rtm_arena_report *r = &a->report;
    struct rtm__arena_status after;
    struct rtm__arena_smaps sm;
    char b1[32], b2[32];
    rtm__arena_read_status(&after);
    rtm__arena_read_smaps(a->base, &sm);
    if (sm.found && sm.page != p->page && p->cfg->source != RTM_ARENA_DEVICE)
        return rtm__arena_fail(a, EINVAL,
                               "%s is mapped with pages of %s (smaps KernelPageSize), not the %s "
                               "asked: page_bytes must say the page size it was created with",
                               p->what, rtm__arena_bytes_text(sm.page, b1, sizeof b1),
                               rtm__arena_bytes_text(p->page, b2, sizeof b2));
    /* The entry at base is the arena's only if it is all of the mapping. */
    r->verified = before->ok && after.ok && sm.found && sm.size == mapped_bytes(p, &sm);
    if (before->ok && after.ok)
        r->locked_bytes = (int64_t)after.vmlck - (int64_t)before->vmlck;
    if (sm.found) {
        r->page_bytes = (size_t)sm.page;
        r->resident_bytes = (size_t)sm.rss;
        r->anon_huge_bytes = (size_t)sm.anon_huge;
        r->shmem_pmd_bytes = (size_t)sm.shmem_pmd;
        r->file_pmd_bytes = (size_t)sm.file_pmd;
    }
    rtm__arena_lock_judge(a, p, &sm);
    rtm__arena_thp_judge(a, p, &sm);
    return 0;
}

int rtm_arena_open(struct rtm_arena *a, const struct rtm_arena_config *cfg)
{
    if (!a)
        return -EINVAL;
    if (a->base && a->internal.self == a)
        return -EBUSY; /* open: overwriting it would lose the mapping and what it created */
    memset(a, 0, sizeof(*a));
    a->internal.self = a;
    a->fd = -1;
    a->shm_id = -1;
    a->internal.dir_fd = -1;
    if (!cfg)
        return rtm__arena_fail(a, EINVAL, "no config");
    struct rtm_arena_report *r = &a->report;
    r->source = cfg->source;
    r->prefault = cfg->prefault;
    r->lock = cfg->lock;
    r->thp = cfg->thp;
    r->asked_bytes = cfg->size_bytes;

    struct rtm__arena_plan p;
    int rc = rtm__arena_plan_init(a, &p, cfg);
    if (rc)
        return rc;
    struct rtm__arena_status before;
    rtm__arena_read_status(&before);
    uint64_t minor0, major0, minor1, major1;
    rtm__arena_faults(&minor0, &major0);

    bool skip_lock = false;
    rc = obtain(a, &p);
    if (!rc && a->fd >= 0)
        rc = rtm__arena_note_object(a, &p);
    if (!rc)
        rc = rtm__arena_lock_check(a, &p, &skip_lock);
    if (!rc)
        rc = rtm__arena_map(a, &p);
    if (!rc)
        rc = rtm__arena_advise(a, &p);
    if (!rc)
        rc = rtm__arena_prefault(a, &p);
    if (!rc && !skip_lock)
        rc = rtm__arena_lock(a, &p);
    rtm__arena_faults(&minor1, &major1);
    if (!rc) {
        a->size_bytes = p.size;
        a->page_bytes = p.page;
        a->internal.read_only = !p.writable;
        r->size_bytes = p.size;
        r->page_bytes_asked = p.page;
        r->minor_faults = minor1 - minor0;
        r->major_faults = major1 - major0;
        rc = verify(a, &p, &before);
    }
    if (rc)
        release(a, true);
    return rc;
}

int rtm_arena_close(struct rtm_arena *a)
{
    if (!a)
        return -EINVAL;
    if (!a->base)
        return 0;
    if (is_copy(a))
        return rtm__arena_fail(a, EINVAL,
                               "a copy of an open arena: close the arena where rtm_arena_open "
                               "filled it");
    a->message[0] = '\0';
    return release(a, false);
}

struct rtm_heap *rtm_arena_heap(struct rtm_arena *a, const char *kind,
                                const struct rtm_heap_config *cfg)
{
    if (!a || !a->base || is_copy(a)) {
        errno = EINVAL;
        return NULL;
    }
    if (a->internal.read_only) {
        errno = EACCES;
        return NULL;
    }
    return rtm_heap_create_ex(kind, a->base, a->size_bytes, cfg);
}
