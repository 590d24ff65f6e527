/* Arenas: a regular file, created or existing (on a hugetlbfs mount, of its
 * huge pages). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "internal.h"

#define HUGETLBFS_MAGIC 0x958458f6 /* linux/magic.h */

int rtm__arena_space_check(struct rtm_arena *a, const struct rtm__arena_plan *p)
{
    struct statfs fs;
    char b1[32], b2[32];
    if (fstatfs(a->fd, &fs) != 0 || (uint32_t)fs.f_type == HUGETLBFS_MAGIC || fs.f_blocks == 0)
        return 0; /* hugetlbfs reserves at mmap; a size-less filesystem cannot tell */
    uint64_t room = (uint64_t)fs.f_bavail * (uint64_t)fs.f_bsize;
    if (room < p->size)
        return rtm__arena_fail(a, ENOSPC,
                               "the filesystem of %s has %s free, %s asked: its pages would "
                               "fault with SIGBUS once it is full",
                               p->what, rtm__arena_bytes_text(room, b1, sizeof b1),
                               rtm__arena_bytes_text(p->size, b2, sizeof b2));
    return 0;
}

/* A file on hugetlbfs has that mount's page size, which page_bytes must be
 * 0 or equal to; the size is rounded to it. */
static int take_fs_pages(struct rtm_arena *a, struct rtm__arena_plan *p)
{
    struct statfs fs;
    char b1[32], b2[32];
    if (fstatfs(a->fd, &fs) != 0 || (uint32_t)fs.f_type != HUGETLBFS_MAGIC) {
        if (p->page != p->base_page)
            return rtm__arena_fail(a, EINVAL,
                                   "%s is not on a hugetlbfs mount: page_bytes %s cannot be had "
                                   "(0 for base pages)",
                                   p->what, rtm__arena_bytes_text(p->page, b1, sizeof b1));
        return 0;
    }
    size_t fs_page = (size_t)fs.f_bsize;
    if (p->cfg->page_bytes && p->cfg->page_bytes != fs_page)
        return rtm__arena_fail(a, EINVAL,
                               "%s is on a hugetlbfs mount of %s pages, not %s: page_bytes must "
                               "be 0 or that size",
                               p->what, rtm__arena_bytes_text(fs_page, b1, sizeof b1),
                               rtm__arena_bytes_text(p->cfg->page_bytes, b2, sizeof b2));
    p->page = fs_page;
    p->hugetlb = true;
    if (p->cfg->thp != RTM_ARENA_THP_DEFAULT)
        return rtm__arena_fail(a, EINVAL, "THP advice is for base pages; %s is on hugetlbfs",
                               p->what);
    return rtm__arena_round(a, p);
}

/* Opens the directory of path (O_PATH) into a->internal.dir_fd and copies
 * its last component into a->internal.name. */
static int open_parent(struct rtm_arena *a, const struct rtm__arena_plan *p)
{
    const char *path = p->cfg->name;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return rtm__arena_fail(a, EINVAL, "%s does not name a file", p->what);
    if (strlen(base) > NAME_MAX)
        return rtm__arena_fail(a, ENAMETOOLONG,
                               "the last component of %s is longer than %d "
                               "bytes",
                               p->what, NAME_MAX);
    snprintf(a->internal.name, sizeof a->internal.name, "%s", base);
    char dir[PATH_MAX];
    size_t len = slash ? (size_t)(slash - path) : 0;
    if (len >= sizeof dir)
        return rtm__arena_fail(a, ENAMETOOLONG, "the directory of %s is too long", p->what);
    if (slash && len == 0)
        snprintf(dir, sizeof dir, "/");
    else if (slash)
        snprintf(dir, sizeof dir, "%.*s", (int)len, path);
    else
        snprintf(dir, sizeof dir, ".");
    a->internal.dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (a->internal.dir_fd < 0)
        return rtm__arena_open_fail(a, p, errno);
    return 0;
}

static int create_file(struct rtm_arena *a, struct rtm__arena_plan *p)
{
    int rc = open_parent(a, p);
    if (rc)
        return rc;
    a->fd = openat(a->internal.dir_fd, a->internal.name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
                   p->cfg->mode ? (mode_t)p->cfg->mode : 0600);
    if (a->fd < 0)
        return rtm__arena_open_fail(a, p, errno);
    rc = rtm__arena_note_object(a, p);
    if (rc) {
        unlinkat(a->internal.dir_fd, a->internal.name, 0); /* just created, identity unknown */
        return rc;
    }
    a->internal.owned = 1;
    a->internal.creator_pid = (int)getpid();
    rc = rtm__arena_apply_mode(a, p);
    if (!rc)
        rc = take_fs_pages(a, p);
    if (!rc)
        rc = rtm__arena_space_check(a, p);
    if (rc)
        return rc;
    if (ftruncate(a->fd, (off_t)p->size) != 0)
        return rtm__arena_fail(a, errno, "ftruncate of %s to %zu bytes failed: %s", p->what,
                               p->size, strerror(errno));
    return 0;
}

int rtm__arena_file_obtain(struct rtm_arena *a, struct rtm__arena_plan *p)
{
    const struct rtm_arena_config *cfg = p->cfg;
    snprintf(p->what, sizeof p->what, "file %s", cfg->name);
    if (!(cfg->flags & RTM_ARENA_EXISTING))
        return create_file(a, p);
    /* A private mapping never writes the file: reading is all it needs. */
    bool write = p->writable && p->shared;
    a->fd = open(cfg->name, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (a->fd < 0)
        return rtm__arena_open_fail(a, p, errno);
    struct stat st;
    if (fstat(a->fd, &st) != 0)
        return rtm__arena_fail(a, errno, "fstat of %s failed: %s", p->what, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return rtm__arena_fail(a, EISDIR, "%s is a directory", p->what);
    if (!S_ISREG(st.st_mode))
        return rtm__arena_fail(a, EINVAL,
                               "%s is not a regular file: map a device with "
                               "RTM_ARENA_DEVICE",
                               p->what);
    int rc = take_fs_pages(a, p);
    if (rc)
        return rc;
    return rtm__arena_fit(a, p, (uint64_t)st.st_size);
}

int rtm__arena_file_remove(struct rtm_arena *a)
{
    if (!a->internal.owned || a->internal.creator_pid != (int)getpid() || a->internal.dir_fd < 0)
        return 0;
    /* Only the file this arena created: a name that now names another file
     * (moved away and replaced) stays. */
    struct stat now;
    if (fstatat(a->internal.dir_fd, a->internal.name, &now, AT_SYMLINK_NOFOLLOW) != 0 ||
        (uint64_t)now.st_dev != a->internal.object_dev ||
        (uint64_t)now.st_ino != a->internal.object_ino)
        return 0;
    if (unlinkat(a->internal.dir_fd, a->internal.name, 0) != 0 && errno != ENOENT)
        return rtm__arena_fail(a, errno, "removing file %s failed: %s", a->internal.name,
                               strerror(errno));
    return 0;
}
