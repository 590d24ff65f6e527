/* Arenas: an existing device or kernel node mapped at an offset (memory
 * reserved from the kernel through /dev/mem or a driver, /dev/uioN,
 * /dev/zero, a sysfs resource file). Never created, truncated or removed. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int rtm__arena_device_obtain(struct rtm_arena *a, struct rtm__arena_plan *p)
{
    const struct rtm_arena_config *cfg = p->cfg;
    snprintf(p->what, sizeof p->what, "device %s", cfg->name);
    bool write = p->writable && p->shared;
    a->fd = open(cfg->name, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (a->fd < 0)
        return rtm__arena_open_fail(a, p, errno);
    struct stat st;
    if (fstat(a->fd, &st) != 0)
        return rtm__arena_fail(a, errno, "fstat of %s failed: %s", p->what, strerror(errno));
    /* The size of what the node maps, when it has one: a block device's,
     * or a file's (sysfs resource files have the size of their region). A
     * character device has none: its driver refuses a bad offset or size at
     * mmap. */
    uint64_t bytes = UINT64_MAX;
    if (S_ISBLK(st.st_mode)) {
        uint64_t blk;
        if (ioctl(a->fd, BLKGETSIZE64, &blk) == 0)
            bytes = blk;
    } else if (S_ISREG(st.st_mode)) {
        if (st.st_size > 0)
            bytes = (uint64_t)st.st_size;
    } else if (S_ISDIR(st.st_mode)) {
        return rtm__arena_fail(a, EISDIR, "%s is a directory", p->what);
    } else if (!S_ISCHR(st.st_mode)) {
        return rtm__arena_fail(a, EINVAL,
                               "%s is neither a device nor a file: it cannot be "
                               "mapped",
                               p->what);
    }
    if (bytes == UINT64_MAX) {
        if (p->size == 0)
            return rtm__arena_fail(a, EINVAL,
                                   "%s does not tell its size: size_bytes must say how much of "
                                   "it to map",
                                   p->what);
        if (cfg->offset % p->page)
            return rtm__arena_fail(a, EINVAL,
                                   "offset %llu of %s is not a multiple of the page "
                                   "size (%zu)",
                                   (unsigned long long)cfg->offset, p->what, p->page);
        return 0;
    }
    return rtm__arena_fit(a, p, bytes);
}
