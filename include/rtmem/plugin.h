/*
 * rtmem: the heap plugin ABI.
 *
 * A plugin is a shared object that hands rtmem's tools an allocator that is
 * not rtmem's (your RTOS heap, a vendor allocator, an experiment), so that
 * `rtmem memcheck --plugin ./myheap.so` tests and measures it exactly like
 * rtmem's own heap kinds: same sequence, same metrics, same functional
 * checks, side by side in one report.
 *
 * The plugin exports one symbol, a constant operations table named
 * RTM_HEAP_PLUGIN_SYMBOL ("rtm_heap_plugin"):
 *
 *     const struct rtm_heap_plugin rtm_heap_plugin = { ... };
 *
 * A table (rather than a getter function) so that it can be inspected with
 * `nm -D` and checked by the compiler against the declaration below. The
 * tool loads the file with dlopen(RTLD_NOW | RTLD_LOCAL), looks the symbol
 * up and validates the table. It refuses the plugin (rtmem memcheck: exit
 * status 2 and a message saying which rule was broken) when:
 *   - the file cannot be loaded, or has no symbol of that name;
 *   - abi_version is not RTM_HEAP_PLUGIN_ABI_VERSION;
 *   - name is NULL, empty, longer than RTM_HEAP_PLUGIN_NAME_MAX, holds a
 *     character other than a letter, digit, '-', '_' or '.', or is already
 *     taken (an rtmem kind, "glibc", a peer such as "jemalloc", or another
 *     plugin's name);
 *   - create, destroy, alloc, free or usable_size is NULL;
 *   - alignment is neither 0 nor a power of two;
 *   - loading it ends the process (a constructor that exits, with any
 *     status, or crashes) or takes more than 30 s.
 * The plugin's code runs in the tool's child processes only, never in the
 * process that writes the report: the tool first loads it in a child to
 * read and check its table (that child's output is thrown away), and the
 * children that test or measure it load it again. What it prints to
 * standard output there goes to standard error. The library stays loaded
 * until the process exits.
 *
 * The heap is a bounded heap: create receives the memory it must live in
 * and every block it hands out must come from that memory. The contract,
 * which memcheck checks (a violation fails the run with exit status 1, the
 * message and a replay command):
 *   - create(mem, size) builds a heap inside [mem, mem + size) and returns
 *     an opaque pointer the other calls receive as `heap` (it need not point
 *     into mem), or NULL if size is too small. mem may hold any garbage:
 *     memcheck creates and destroys many heaps on the same memory, of many
 *     sizes, and a heap must not depend on what an earlier one left there
 *     (memcheck's mem is page-aligned; other callers may pass any address).
 *   - destroy(heap) ends the heap; the memory is the caller's again.
 *   - alloc(heap, size) returns a block of at least size bytes, aligned to
 *     `alignment`, lying entirely inside the heap's memory, or NULL when
 *     nothing fits. memcheck fills heaps until alloc returns NULL, so it must
 *     return NULL (not abort, not grow) when the heap is full.
 *   - free(heap, p) returns 0, or a negative value (-EINVAL by convention)
 *     for a pointer it refuses. memcheck only frees live blocks: any
 *     non-zero return fails the run.
 *   - usable_size(heap, p) is the number of bytes of the live block p that
 *     may be written: at least its request. memcheck writes a pattern over
 *     all of it and verifies every live block after each free.
 *   - stats (optional) fills *out as rtmem/heap.h defines struct
 *     rtm_heap_stats and returns 0. memcheck clears *out before each call,
 *     so fields left unwritten read as 0. It uses:
 *       usable_bytes      to size the heap exactly: a test "on a heap of
 *                         usable size H" searches the memory size for which
 *                         usable_bytes == H (must not decrease as size grows);
 *       used_bytes, live_blocks   must be 0 after every block is freed;
 *       largest_free_bytes        must equal its value after create once
 *                         every block is freed, and a request of that many
 *                         bytes must succeed whenever it is read (write 0 if
 *                         the allocator cannot tell: the checks then hold
 *                         trivially);
 *       free_bytes        fragmentation samples of the churn phase;
 *       overhead_bytes    the --true-overhead column (metadata outside H).
 *     Without stats, memcheck cannot size the heap by its usable bytes: it
 *     gives create exactly H bytes of memory, so OVRH% counts the plugin's
 *     metadata too; the used-bytes, leak and coalescing checks, the
 *     largest_free promise, TOVRH% and the churn phase's FRAG% are not done
 *     (the report and the JSON say so).
 *   - check (optional) walks the heap and returns 0 if it is consistent,
 *     non-zero if it is corrupt. memcheck calls it after every test.
 *   - aligned_alloc and realloc are optional and memcheck does not call them
 *     today; when present they follow rtm_heap_aligned_alloc and
 *     rtm_heap_realloc (rtmem/heap.h). `rtmem replay --plugin` calls them
 *     when a program's trace asks for them; without realloc it uses alloc,
 *     a copy and free instead, and without aligned_alloc it does not
 *     replay a trace that asks for more than `alignment` (docs/replay.md).
 *   - No call may print, exit or allocate from the process heap on its
 *     alloc and free paths if its timings are to mean anything; memcheck
 *     times alloc and free one call at a time.
 *
 * Threads: memcheck calls a plugin from one thread only.
 *
 * A complete plugin wrapping a fictional RTOS heap (os_heap_*):
 *
 *     // myheap.c
 *     #include <errno.h>
 *     #include <rtmem/plugin.h>
 *     #include "os_heap.h"      // your allocator
 *
 *     static void *my_create(void *mem, size_t size)
 *     {
 *         return os_heap_init(mem, size);     // struct os_heap *, or NULL
 *     }
 *     static void my_destroy(void *heap) { os_heap_deinit(heap); }
 *     static void *my_alloc(void *heap, size_t size)
 *     {
 *         return os_heap_alloc(heap, size);
 *     }
 *     static int my_free(void *heap, void *p)
 *     {
 *         return os_heap_free(heap, p) == OS_OK ? 0 : -EINVAL;
 *     }
 *     static size_t my_usable_size(void *heap, const void *p)
 *     {
 *         return os_heap_block_size(heap, p);
 *     }
 *     static int my_stats(void *heap, struct rtm_heap_stats *out)
 *     {
 *         struct os_heap_info i;
 *         os_heap_info(heap, &i);
 *         out->usable_bytes = i.total;
 *         out->used_bytes = i.used;
 *         out->free_bytes = i.total - i.used;
 *         out->largest_free_bytes = i.max_free_block;
 *         out->live_blocks = i.blocks;
 *         out->overhead_bytes = i.control_size;
 *         return 0;
 *     }
 *
 *     const struct rtm_heap_plugin rtm_heap_plugin = {
 *         .abi_version = RTM_HEAP_PLUGIN_ABI_VERSION,
 *         .name = "osheap",
 *         .description = "OS heap 3.2, first fit",
 *         .alignment = 8,                      // what os_heap guarantees
 *         .create = my_create,
 *         .destroy = my_destroy,
 *         .alloc = my_alloc,
 *         .free = my_free,
 *         .usable_size = my_usable_size,
 *         .stats = my_stats,                   // optional
 *         // aligned_alloc, realloc, check: optional, NULL here
 *     };
 *
 * Build and run (the header is all a plugin needs from rtmem):
 *
 *     cc -std=c11 -O2 -fPIC -shared -I/usr/local/include -o myheap.so \
 *        myheap.c libos_heap.a
 *     rtmem memcheck --plugin ./myheap.so --kinds tlsf,osheap
 *
 * examples/plugin/tlsf_plugin.c in rtmem's sources (installed as
 * share/doc/rtmem/examples/plugin/tlsf_plugin.c) is a plugin that the tests
 * build and run ("tlsf-plugin": rtmem's TLSF through this ABI).
 */
#ifndef RTMEM_PLUGIN_H
#define RTMEM_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "rtmem/heap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The layout of struct rtm_heap_plugin below. A change to it (a member
 * added, removed or retyped) bumps this number, and a tool refuses a plugin
 * built against another. */
#define RTM_HEAP_PLUGIN_ABI_VERSION 1u

/* The name of the symbol a plugin exports, for dlsym. */
#define RTM_HEAP_PLUGIN_SYMBOL "rtm_heap_plugin"

/* Longest plugin name, in bytes (the terminating NUL not counted). */
#define RTM_HEAP_PLUGIN_NAME_MAX 32

/*
 * The operations table. Every function takes the heap as the opaque pointer
 * create returned; the calls mirror rtm_heap_* in rtmem/heap.h.
 */
struct rtm_heap_plugin {
    /* RTM_HEAP_PLUGIN_ABI_VERSION, as compiled into the plugin. */
    uint32_t abi_version;
    /* Short name: selects the plugin (`--kinds NAME`) and labels its rows.
     * Letters, digits, '-', '_', '.'; at most RTM_HEAP_PLUGIN_NAME_MAX. */
    const char *name;
    /* One line for the report (optional, may be NULL). */
    const char *description;
    /* Power of two every block from alloc is aligned to; 0 means
     * RTM_HEAP_MIN_ALIGN (alignof(max_align_t)). */
    size_t alignment;

    /* Mandatory. */
    void *(*create)(void *mem, size_t size);
    void (*destroy)(void *heap);
    void *(*alloc)(void *heap, size_t size);
    int (*free)(void *heap, void *p);
    size_t (*usable_size)(void *heap, const void *p);

    /* Optional: NULL when the allocator has no such call. */
    void *(*aligned_alloc)(void *heap, size_t alignment, size_t size);
    void *(*realloc)(void *heap, void *p, size_t size);
    int (*stats)(void *heap, struct rtm_heap_stats *out);
    int (*check)(void *heap);
};
typedef struct rtm_heap_plugin rtm_heap_plugin_t;

/* What a plugin defines (and nothing else in rtmem does). Declared here so
 * that the compiler checks a plugin's definition against it. */
RTM_API extern const struct rtm_heap_plugin rtm_heap_plugin;

#ifdef __cplusplus
}
#endif

#endif /* RTMEM_PLUGIN_H */
