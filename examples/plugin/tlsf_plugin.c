/*
 * An example heap plugin (rtmem/plugin.h): rtmem's own TLSF through its typed
 * API, named "tlsf-plugin". It shows every call of the table filled in, and
 * since it is the same allocator as the built-in "tlsf" kind, memcheck must
 * give it the same fill counts: the tests check that the plugin path loses
 * nothing on the way.
 *
 * Build (the tests do it with CMake, as a MODULE library):
 *     cc -std=c11 -O2 -fPIC -shared -Iinclude -o tlsf_plugin.so \
 *        examples/plugin/tlsf_plugin.c build/librtmem.a
 * Run:
 *     rtmem memcheck --plugin ./tlsf_plugin.so --kinds tlsf,tlsf-plugin
 *
 * The wrappers exist because the table's calls take the heap as `void *`:
 * calling rtm_tlsf_alloc through a pointer of another type would be
 * undefined. Each compiles to a jump.
 */
#include <rtmem/plugin.h>
#include <rtmem/tlsf.h>

static void *tp_create(void *mem, size_t size)
{
    return rtm_tlsf_create(mem, size);
}

static void tp_destroy(void *heap)
{
    rtm_heap_destroy(rtm_tlsf_heap(heap));
}

static void *tp_alloc(void *heap, size_t size)
{
    return rtm_tlsf_alloc(heap, size);
}

static int tp_free(void *heap, void *p)
{
    return rtm_tlsf_free(heap, p);
}

static size_t tp_usable_size(void *heap, const void *p)
{
    return rtm_tlsf_usable_size(heap, p);
}

static void *tp_aligned_alloc(void *heap, size_t alignment, size_t size)
{
    return rtm_tlsf_aligned_alloc(heap, alignment, size);
}

static void *tp_realloc(void *heap, void *p, size_t size)
{
    return rtm_tlsf_realloc(heap, p, size);
}

static int tp_stats(void *heap, struct rtm_heap_stats *out)
{
    return rtm_tlsf_stats(heap, out);
}

static int tp_check(void *heap)
{
    return rtm_tlsf_check(heap);
}

const struct rtm_heap_plugin rtm_heap_plugin = {
    .abi_version = RTM_HEAP_PLUGIN_ABI_VERSION,
    .name = "tlsf-plugin",
    .description = "example: rtmem's TLSF through the plugin ABI (examples/plugin/tlsf_plugin.c)",
    .alignment = 0, /* RTM_HEAP_MIN_ALIGN, what TLSF guarantees */
    .create = tp_create,
    .destroy = tp_destroy,
    .alloc = tp_alloc,
    .free = tp_free,
    .usable_size = tp_usable_size,
    .aligned_alloc = tp_aligned_alloc,
    .realloc = tp_realloc,
    .stats = tp_stats,
    .check = tp_check,
};
