/* Bench kit: mapped, prefaulted, locked memory for heaps (arena.h). */
#include "common/arena.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

int tk_arena_open(struct tk_arena *ar, size_t bytes)
{
    memset(ar, 0, sizeof(*ar));
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return -errno;
    ar->mem = mem;
    ar->bytes = bytes;
    /* Prefault: every page is written now, not by the first heap using it. */
    memset(mem, 0, bytes);
    ar->locked = mlock(mem, bytes) == 0;
    ar->lock_err = ar->locked ? 0 : errno;
    return 0;
}
