/* Shared heaps: names, and where each heap lives. A heap of base pages is
 * the POSIX shm object "/rtmem-<name>" (the file /dev/shm/rtmem-<name>); a
 * heap of huge pages is the file "rtmem-<name>" on a hugetlbfs mount of its
 * page size. The names form one space: a name is looked for in /dev/shm
 * first, then on every hugetlbfs mount in /proc/self/mounts' order. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "../arena/internal.h"

#define SHM_DIR "/dev/shm"

int rtm__shared_check_name(const char *name)
{
    if (!name || !*name)
        return -EINVAL;
    size_t n = 0;
    for (const char *c = name; *c; c++, n++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.';
        if (!ok)
            return -EINVAL;
    }
    return n > RTM_SHARED_NAME_MAX ? -ENAMETOOLONG : 0;
}

void rtm__shared_shm_place(const char *name, struct shared_place *pl)
{
    pl->source = RTM_ARENA_POSIX_SHM;
    snprintf(pl->path, sizeof pl->path, "/rtmem-%s", name);
}

/* "<dir>/rtmem-<name>" into pl as a hugetlbfs file: 0 or -ENAMETOOLONG. */
static int file_place(const char *dir, const char *name, struct shared_place *pl)
{
    pl->source = RTM_ARENA_FILE;
    int n = snprintf(pl->path, sizeof pl->path, "%s/rtmem-%s", dir, name);
    return n > 0 && (size_t)n < sizeof pl->path ? 0 : -ENAMETOOLONG;
}

int rtm__shared_huge_place(const char *name, size_t page_bytes, struct shared_place *pl)
{
    char dir[RTM__ARENA_MOUNT_BYTES];
    int rc = rtm__arena_hugetlbfs_dir(page_bytes, dir, sizeof dir);
    return rc ? rc : file_place(dir, name, pl);
}

/* ---- looking for a name on the hugetlbfs mounts ----------------------------------- */

struct lookup {
    const char *name;
    struct shared_place *found; /* the first place that holds the name */
    bool have_mine;             /* skip the inode below: the caller's own */
    dev_t dev;
    ino_t ino;
    bool removed; /* removal: a name was removed */
    int err;      /* removal: the first refusal */
};

/* Whether path exists (not followed), as another inode than the caller's
 * own. A place this process cannot search holds nothing it could use. */
static bool holds_other(const char *path, const struct lookup *l)
{
    struct stat st;
    if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return false;
    return !l->have_mine || st.st_dev != l->dev || st.st_ino != l->ino;
}

static int find_in_mount(const char *dir, size_t page_bytes, void *arg)
{
    (void)page_bytes;
    struct lookup *l = arg;
    struct shared_place pl;
    if (file_place(dir, l->name, &pl) != 0 || !holds_other(pl.path, l))
        return 0;
    if (l->found)
        *l->found = pl;
    return 1;
}

int rtm__shared_find_huge(const char *name, struct shared_place *pl)
{
    struct lookup l = { .name = name, .found = pl };
    return rtm__arena_hugetlbfs_each(find_in_mount, &l) ? 0 : -ENOENT;
}

bool rtm__shared_taken(const char *name, int mine_fd)
{
    struct lookup l = { .name = name };
    struct stat st;
    if (mine_fd >= 0 && fstat(mine_fd, &st) == 0) {
        l.have_mine = true;
        l.dev = st.st_dev;
        l.ino = st.st_ino;
    }
    char path[sizeof SHM_DIR "/rtmem-" + RTM_SHARED_NAME_MAX];
    snprintf(path, sizeof path, SHM_DIR "/rtmem-%s", name);
    return holds_other(path, &l) || rtm__arena_hugetlbfs_each(find_in_mount, &l) != 0;
}

static int remove_in_mount(const char *dir, size_t page_bytes, void *arg)
{
    (void)page_bytes;
    struct lookup *l = arg;
    struct shared_place pl;
    /* Only where the name is: a mount this process cannot write in but
     * that does not hold the name is no refusal. */
    if (file_place(dir, l->name, &pl) != 0 || !holds_other(pl.path, l))
        return 0;
    if (unlink(pl.path) == 0)
        l->removed = true;
    else if (errno != ENOENT && !l->err)
        l->err = errno;
    return 0;
}

int rtm__shared_remove(const char *name)
{
    struct lookup l = { .name = name };
    struct shared_place pl;
    rtm__shared_shm_place(name, &pl);
    if (shm_unlink(pl.path) == 0)
        l.removed = true;
    else if (errno != ENOENT)
        l.err = errno;
    rtm__arena_hugetlbfs_each(remove_in_mount, &l);
    return l.err ? -l.err : l.removed ? 0 : -ENOENT;
}
