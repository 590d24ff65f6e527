/*
 * Fault injection for `rtmem memcheck` (tests/tools/test_failures.py): preloaded
 * into the rtmem command, this malloc_usable_size reports 0 bytes for every
 * block, i.e. an allocator breaking its contract that a block's usable size
 * is at least its request. memcheck must catch it in its first glibc test,
 * fail the run with a clear message and still test the other allocators.
 * Nothing else in the process calls malloc_usable_size.
 */
#include <stddef.h>

size_t malloc_usable_size(void *p);

size_t malloc_usable_size(void *p)
{
    (void)p;
    return 0;
}
