/* Arenas: a POSIX shared memory object (shm_open). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int rtm__arena_posix_shm_obtain(struct rtm_arena *a, struct rtm__arena_plan *p)
{
    const struct rtm_arena_config *cfg = p->cfg;
    snprintf(p->what, sizeof p->what, "POSIX shm object %s", cfg->name);
    if (!(cfg->flags & RTM_ARENA_EXISTING)) {
        a->fd = shm_open(cfg->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
                         cfg->mode ? (mode_t)cfg->mode : 0600);
        if (a->fd < 0)
            return rtm__arena_open_fail(a, p, errno);
        int rc = rtm__arena_note_object(a, p);
        if (rc) {
            shm_unlink(cfg->name); /* just created, and its identity unknown */
            return rc;
        }
        a->internal.owned = 1;
        a->internal.creator_pid = (int)getpid();
        snprintf(a->internal.name, sizeof a->internal.name, "%s", cfg->name);
        rc = rtm__arena_apply_mode(a, p);
        if (!rc)
            rc = rtm__arena_space_check(a, p);
        if (rc)
            return rc;
        if (ftruncate(a->fd, (off_t)p->size) != 0)
            return rtm__arena_fail(a, errno, "ftruncate of %s to %zu bytes failed: %s", p->what,
                                   p->size, strerror(errno));
        return 0;
    }
    a->fd = shm_open(cfg->name, (p->writable ? O_RDWR : O_RDONLY) | O_CLOEXEC, 0);
    if (a->fd < 0)
        return rtm__arena_open_fail(a, p, errno);
    struct stat st;
    if (fstat(a->fd, &st) != 0)
        return rtm__arena_fail(a, errno, "fstat of %s failed: %s", p->what, strerror(errno));
    return rtm__arena_fit(a, p, (uint64_t)st.st_size);
}

int rtm__arena_posix_shm_remove(struct rtm_arena *a)
{
    if (!a->internal.owned || a->internal.creator_pid != (int)getpid())
        return 0;
    /* Only the object this arena created: a name that now names another
     * (removed and created again by someone else) stays. Its file in
     * /dev/shm, where shm_open puts it, is stat'ed: no permission needed. */
    char path[sizeof "/dev/shm" + RTM_ARENA_NAME_BYTES];
    struct stat now;
    snprintf(path, sizeof path, "/dev/shm%s", a->internal.name);
    if (stat(path, &now) != 0 || (uint64_t)now.st_dev != a->internal.object_dev ||
        (uint64_t)now.st_ino != a->internal.object_ino)
        return 0;
    if (shm_unlink(a->internal.name) != 0 && errno != ENOENT)
        return rtm__arena_fail(a, errno, "removing POSIX shm object %s failed: %s",
                               a->internal.name, strerror(errno));
    return 0;
}
