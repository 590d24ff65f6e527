/* Arenas: a SysV shared memory segment (shmget, shmat). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <unistd.h>

#include "internal.h"

static int explain_shmget(struct rtm_arena *a, const struct rtm__arena_plan *p, int err)
{
    uint64_t v = 0, gid = 0;
    char b[32];
    key_t key = (key_t)p->cfg->sysv_key;
    switch (err) {
    case EEXIST:
        return rtm__arena_fail(a, err,
                               "%s exists: set RTM_ARENA_EXISTING to use it (it is then never "
                               "removed), or remove it (ipcrm -M 0x%x)",
                               p->what, (unsigned)key);
    case ENOENT:
        return rtm__arena_fail(a, err, "no %s to use (RTM_ARENA_EXISTING): create it first",
                               p->what);
    case EINVAL:
        if (rtm__arena_read_u64("/proc/sys/kernel/shmmax", &v) && p->size > v)
            return rtm__arena_fail(a, err,
                                   "%s: %zu bytes asked, above SHMMAX (%" PRIu64
                                   "): raise /proc/sys/kernel/shmmax",
                                   p->what, p->size, v);
        return rtm__arena_fail(a, err,
                               "shmget refused %s of %zu bytes (EINVAL): below SHMMIN, or a "
                               "segment with that key exists and is smaller",
                               p->what, p->size);
    case ENOSPC:
        return rtm__arena_fail(a, err,
                               "shmget: no room for %s: every segment id "
                               "(/proc/sys/kernel/shmmni) or the total of pages "
                               "(/proc/sys/kernel/shmall) is taken",
                               p->what);
    case EPERM:
        if (p->hugetlb) {
            (void)rtm__arena_read_u64("/proc/sys/vm/hugetlb_shm_group", &gid);
            return rtm__arena_fail(a, err,
                                   "SHM_HUGETLB needs CAP_IPC_LOCK, or membership of the group "
                                   "/proc/sys/vm/hugetlb_shm_group names (gid %" PRIu64 ")",
                                   gid);
        }
        break;
    case EACCES:
        return rtm__arena_fail(a, err, "no permission to use %s (its mode forbids it)", p->what);
    case ENOMEM:
        if (p->hugetlb)
            return rtm__arena_huge_fail(a, p, err, "shmget(SHM_HUGETLB)");
        break;
    default: break;
    }
    return rtm__arena_fail(a, err, "shmget of %s (%s) failed: %s", p->what,
                           rtm__arena_bytes_text(p->size, b, sizeof b), strerror(err));
}

int rtm__arena_sysv_shm_obtain(struct rtm_arena *a, struct rtm__arena_plan *p)
{
    const struct rtm_arena_config *cfg = p->cfg;
    char b[32];
    key_t key = (key_t)cfg->sysv_key;
    if (key == IPC_PRIVATE)
        snprintf(p->what, sizeof p->what, "a private SysV segment");
    else
        snprintf(p->what, sizeof p->what, "SysV segment of key 0x%x", (unsigned)key);
    if (p->hugetlb) {
        size_t n = strlen(p->what);
        snprintf(p->what + n, sizeof p->what - n, " of %s huge pages",
                 rtm__arena_bytes_text(p->page, b, sizeof b));
    }
    if (!(cfg->flags & RTM_ARENA_EXISTING)) {
        int flags = IPC_CREAT | IPC_EXCL | (int)(cfg->mode ? cfg->mode : 0600);
        if (p->hugetlb)
            flags |= SHM_HUGETLB | rtm__arena_huge_bits(p->page);
        a->shm_id = shmget(key, p->size, flags);
        if (a->shm_id < 0)
            return explain_shmget(a, p, errno);
        a->internal.owned = 1;
        a->internal.creator_pid = (int)getpid();
        a->internal.sysv_key = (int)key;
        return 0;
    }
    a->shm_id = shmget(key, 0, 0);
    if (a->shm_id < 0)
        return explain_shmget(a, p, errno);
    struct shmid_ds ds;
    if (shmctl(a->shm_id, IPC_STAT, &ds) != 0)
        return rtm__arena_fail(a, errno, "shmctl(IPC_STAT) of %s failed: %s", p->what,
                               strerror(errno));
    p->segment_bytes = (uint64_t)ds.shm_segsz;
    return rtm__arena_fit(a, p, (uint64_t)ds.shm_segsz);
}

int rtm__arena_sysv_shm_attach(struct rtm_arena *a, const struct rtm__arena_plan *p, void *at)
{
    /* At the reserved address (replacing the reservation: SHM_REMAP), or
     * where the kernel puts it. */
    int flags = (p->writable ? 0 : SHM_RDONLY) | (at ? SHM_REMAP : 0);
    void *m = shmat(a->shm_id, at, flags);
    if (m == (void *)-1) {
        int err = errno;
        return rtm__arena_fail(a, err, "shmat of %s failed: %s", p->what, strerror(err));
    }
    a->base = m;
    a->internal.attached = 1;
    /* A private segment leaves the namespace at once: it then lasts exactly
     * as long as a process has it attached, even if this one is killed. */
    if (p->cfg->sysv_key == IPC_PRIVATE && a->internal.owned) {
        if (shmctl(a->shm_id, IPC_RMID, NULL) != 0)
            return rtm__arena_fail(a, errno, "shmctl(IPC_RMID) of %s failed: %s", p->what,
                                   strerror(errno));
        a->internal.owned = 0;
    }
    return 0;
}

int rtm__arena_sysv_shm_remove(struct rtm_arena *a)
{
    if (!a->internal.owned || a->internal.creator_pid != (int)getpid() || a->shm_id < 0)
        return 0;
    /* Only the segment this arena created: gone already (removed by
     * someone else, destroyed at the detach), its id may name another. */
    struct shmid_ds ds;
    if (shmctl(a->shm_id, IPC_STAT, &ds) != 0 || ds.shm_cpid != a->internal.creator_pid ||
        ds.shm_perm.__key != (key_t)a->internal.sysv_key)
        return 0;
    if (shmctl(a->shm_id, IPC_RMID, NULL) != 0 && errno != EINVAL && errno != EIDRM)
        return rtm__arena_fail(a, errno, "removing SysV segment %d failed: %s", a->shm_id,
                               strerror(errno));
    return 0;
}
