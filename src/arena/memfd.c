/* Arenas: a memfd, of base pages or hugetlb pages. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

int rtm__arena_memfd_obtain(struct rtm_arena *a, struct rtm__arena_plan *p)
{
    const char *name = p->cfg->name ? p->cfg->name : "rtmem";
    char b[32];
    unsigned flags = MFD_CLOEXEC;
    if (p->hugetlb)
        flags |= MFD_HUGETLB | (unsigned)rtm__arena_huge_bits(p->page);
    snprintf(p->what, sizeof p->what, "memfd \"%s\"%s%s%s", name, p->hugetlb ? " of " : "",
             p->hugetlb ? rtm__arena_bytes_text(p->page, b, sizeof b) : "",
             p->hugetlb ? " huge pages" : "");
    a->fd = memfd_create(name, flags);
    if (a->fd < 0) {
        int err = errno;
        if (p->hugetlb && err == EINVAL)
            return rtm__arena_fail(a, err,
                                   "memfd_create(MFD_HUGETLB) refused %s huge pages (EINVAL): "
                                   "the kernel lacks hugetlbfs for that size",
                                   rtm__arena_bytes_text(p->page, b, sizeof b));
        return rtm__arena_fail(a, err, "memfd_create of %s failed: %s", p->what, strerror(err));
    }
    /* A hugetlb memfd reserves its pages at mmap, which explains a refusal. */
    if (ftruncate(a->fd, (off_t)p->size) != 0)
        return rtm__arena_fail(a, errno, "ftruncate of %s to %zu bytes failed: %s", p->what,
                               p->size, strerror(errno));
    return 0;
}
