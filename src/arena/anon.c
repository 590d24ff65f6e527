/* Arenas: private anonymous memory, of base pages or hugetlb pages. */
#include <stdio.h>
#include <sys/mman.h>

#include "internal.h"

int rtm__arena_anon_obtain(struct rtm_arena *a, struct rtm__arena_plan *p)
{
    char b[32];
    (void)a;
    p->map_flags = MAP_ANONYMOUS;
    if (p->hugetlb) {
        p->map_flags |= MAP_HUGETLB | rtm__arena_huge_bits(p->page);
        snprintf(p->what, sizeof p->what, "anonymous %s huge pages",
                 rtm__arena_bytes_text(p->page, b, sizeof b));
    } else {
        snprintf(p->what, sizeof p->what, "anonymous memory");
    }
    return 0;
}
