/*
 * Bench kit: the allocators under test, one interface for every tool, so
 * that a tool's phases never ask which allocator they drive. The list of
 * what a run selects, and the --kinds parser, are in common/kinds.h.
 *
 * An allocator comes from one of five places (enum tk_alloc_from): an
 * rtmem kind through rtm_heap_* (at the default hardening level, or at
 * level none as "<kind>-none"), TLSF or halffit through its typed API
 * ("tlsf(typed)", "halffit(typed)"), glibc, a peer loaded at run time, or a user's plugin. There are two sorts of allocator:
 *
 * TK_HEAP: a bounded heap created inside memory the harness gives it (every
 *   rtmem kind, and a user's plugin, rtmem/plugin.h, driven through its own
 *   struct tk_heap_ops). "A heap of usable size H" is exact: the harness
 *   finds the memory size M for which the heap reports usable_bytes == H
 *   (struct rtm_heap_stats), by creating the heap on growing M and then a
 *   binary search (usable_bytes never decreases as M grows); M is cached per
 *   H. Every heap is created at the start of one shared arena, mapped once,
 *   prefaulted and locked when permitted, and reused by every test. If no M
 *   gives exactly H (H not a multiple of the kind's granule or page), the
 *   smallest usable size above H is used, and the heap is marked inexact:
 *   the run reports it, never silently. A heap without statistics (a plugin
 *   whose table has no stats) cannot be sized so: it gets exactly H bytes of
 *   memory (its metadata then counts as overhead), and the checks that need
 *   statistics do not apply. A fill ends on the first failing allocation.
 *
 * TK_PROCESS: a process allocator: glibc's malloc/free, and the peers
 *   jemalloc, mimalloc and tcmalloc, loaded with dlopen at run time (rtmem
 *   never links them) and called through their own entry points, beside
 *   glibc's, which stays the allocator of everything else in the process
 *   (alloc_load.c). It has no heap of a given
 *   size, so "a heap of size H" is a budget of requested bytes: a fill makes
 *   exactly floor(H / B) requests of B bytes, stopping before the request
 *   that would take the sum of requests above H. There is no failing final
 *   allocation; NRBLKS = floor(H / B) by construction, so the spec's OVRH%
 *   (100 - 100 * NRBLKS * B / H) says nothing about the allocator. For
 *   these allocators OVRH% is instead the rounding slack that their
 *   usable-size call (malloc_usable_size, mi_usable_size, tc_malloc_size)
 *   shows, 100 - 100 * sum(requested) / sum(usable);
 *   per-block headers are not visible through any portable call and are not
 *   counted. FRAG% uses the same probe as for heaps, but a probe counts as
 *   fitting only if the block it gets lies inside the address span the
 *   fill's blocks occupied: a process allocator can always get more memory
 *   from the kernel, and only reused memory says anything about
 *   fragmentation. The memory is not reset between tests (the process heap
 *   is what it is), and used-bytes and integrity checks do not apply.
 *
 * The `applies` bits say which metrics and checks hold for an allocator; the
 * report prints "-" (JSON null) for a metric that does not apply.
 */
#ifndef RTMEM_TOOLS_ALLOC_H
#define RTMEM_TOOLS_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "rtmem/halffit.h"
#include "rtmem/heap.h"
#include "rtmem/tlsf.h"

/* A build whose sanitizer replaces malloc: glibc's allocator is not the one
 * malloc reaches, and its mallopt settings reach nothing (glibc-rt is
 * skipped, as it is on a C library other than glibc: TK_NO_GLIBC_RT says
 * why). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TK_MALLOC_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define TK_MALLOC_SANITIZED 1
#endif
#endif
#if defined(TK_MALLOC_SANITIZED)
#define TK_NO_GLIBC_RT "this build's sanitizer replaces malloc"
#elif !defined(__GLIBC__)
#define TK_NO_GLIBC_RT "the C library is not glibc"
#endif

enum tk_alloc_sort {
    TK_HEAP,    /* bounded heap in memory the harness gives it */
    TK_PROCESS, /* the process allocator; "heap size" is a budget */
};

/* Bits of struct tk_alloc.applies. */
enum {
    /* Fills end on a failing allocation: NRBLKS, OVRH% against H, the
     * failing allocation's time (FAIL-A) and "more than H/B blocks". */
    TK_APPLY_FILL_TO_FAILURE = 1u << 0,
    /* Statistics (struct rtm_heap_stats): used bytes after freeing all,
     * true overhead, coalescing complete, largest_free_bytes promise. */
    TK_APPLY_STATS = 1u << 1,
    /* An integrity walk (rtm_heap_check) after every test. */
    TK_APPLY_CHECK = 1u << 2,
    /* Free returns an error for a block it refuses. */
    TK_APPLY_FREE_STATUS = 1u << 3,
    /* Every block lies in the heap's memory and is aligned to the
     * allocator's alignment, struct tk_alloc.align (checked after each
     * fill). */
    TK_APPLY_BOUNDS = 1u << 4,
    /* The allocator documents how many blocks of a size a fresh heap holds
     * (rtm_heap_fill_count); a fill must reach it. A kind whose count times
     * the size equals H promises zero overhead for that size. */
    TK_APPLY_FILL_PROMISE = 1u << 5,
};

/*
 * A bounded heap driven through function pointers: the calls of
 * rtmem/heap.h with the heap as an opaque context, so that rtmem's kinds and
 * a plugin's allocator are driven alike. create returns the heap or NULL
 * (errno set); arg is the ops' own datum (the kind's name for rtmem).
 * stats must fill usable_bytes, used_bytes, free_bytes, largest_free_bytes,
 * live_blocks and overhead_bytes as rtmem/heap.h defines them. check and
 * fill_count may be NULL (no integrity walk; no documented fill count).
 */
struct tk_heap_ops {
    void *(*create)(const void *arg, void *mem, size_t size);
    void (*destroy)(void *heap);
    void *(*alloc)(void *heap, size_t size);
    int (*free)(void *heap, void *p);
    size_t (*usable_size)(void *heap, const void *p);
    int (*stats)(void *heap, struct rtm_heap_stats *out);
    int (*check)(void *heap);
    size_t (*fill_count)(void *heap, size_t size);
};

/* What one "heap of usable size H" turned out to be. */
struct tk_heap_info {
    size_t asked_bytes;        /* H */
    size_t usable_bytes;       /* the heap's usable_bytes (== H unless inexact);
                                 * the request budget for TK_PROCESS */
    size_t mem_bytes;          /* M, the memory given to create (0: TK_PROCESS) */
    size_t overhead_bytes;     /* metadata outside usable_bytes (stats) */
    size_t largest_free_bytes; /* right after create (TK_APPLY_STATS) */
    bool exact;                /* usable_bytes == asked_bytes */
    bool sized_by_memory;      /* no statistics: mem_bytes == H, usable unknown */
};

/* H -> M found by the search, per allocator. */
#define TK_SIZE_CACHE 64

/* Where an allocator comes from. */
enum tk_alloc_from {
    TK_FROM_RTMEM, /* an rtmem kind through rtm_heap_* */
    TK_FROM_TYPED, /* a kind of tk_typed_kinds() through its typed API, rtm_<kind>_* */
    TK_FROM_GLIBC,
    TK_FROM_PEER,
    TK_FROM_PLUGIN,
};

/* What glibc-rt's set-up did in the measuring process. */
struct tk_glibc_rt {
    bool applied;       /* mallopt took every setting and the reserve was made */
    bool checked;       /* tk_glibc_rt_check ran after the measuring */
    bool locked;        /* the reserve's pages mlocked (no privilege: not) */
    size_t heap_bytes;  /* glibc's heap (mallinfo2's arena) after the reserve */
    size_t grown_bytes; /* the most it grew after that, by the checks */
    char why[96];       /* when not applied */
};

struct tk_plugin;
struct tk_alloc {
    char name[48];
    enum tk_alloc_from from;
    const char *kind; /* TK_FROM_RTMEM, TK_FROM_TYPED: the rtmem kind */
    int hardening;    /* TK_FROM_RTMEM: the RTM_HEAP_HARDEN_* it is created at */
    enum tk_alloc_sort sort;
    unsigned applies;         /* TK_APPLY_* */
    const char *describe;     /* one line for the report */
    const char *origin;       /* "rtmem", "glibc", "peer" or "plugin" */
    size_t align;             /* every block's alignment (TK_APPLY_BOUNDS) */
    const char *usable_name;  /* TK_PROCESS: the usable-size call, for the report */
    const char *plugin_path;  /* a plugin's file, for the replay command */
    struct tk_plugin *plugin; /* TK_FROM_PLUGIN: bound by tk_alloc_bind */
    /* Its settings are the process's (glibc-rt's mallopt): it is measured
     * in a process where no other allocator of the malloc family runs. */
    bool own_process;
    /* glibc-rt: the bytes its heap is grown by and every page written
     * (set by the tool before tk_alloc_bind), and what came of it in the
     * measuring process (struct tk_glibc_rt). */
    size_t reserve;
    struct tk_glibc_rt grt;

    /* The calls timed by the harness; ctx is the current heap, or the
     * allocator's own data for TK_PROCESS. usable_size is never timed. */
    void *(*alloc)(void *ctx, size_t size);
    int (*free)(void *ctx, void *p);
    size_t (*usable_size)(void *ctx, const void *p);
    void *ctx;
    /* A peer's: the rest of the malloc family, its own entry points, for a
     * tool that replays a program's calls (rtmem replay). realloc as
     * realloc(3); aligned as aligned_alloc with any power of two, NULL when
     * it fails. NULL for the other allocators. */
    void *(*realloc)(void *ctx, void *p, size_t size);
    void *(*aligned)(void *ctx, size_t alignment, size_t size);

    /* TK_HEAP only. */
    const struct tk_heap_ops *hops;
    const void *hops_arg;
    struct tk_heap_info cache[TK_SIZE_CACHE];
    size_t n_cache;
    struct tk_arena *arena; /* of the current heap */

    struct tk_heap_info cur; /* the current heap */
    bool live;               /* a heap is created and not destroyed */
};

/* An rtmem kind (a name from rtm_heap_kinds()) through rtm_heap_*, created
 * at the given hardening level: RTM_HEAP_HARDEN_O1 (the default; named as
 * the kind) or RTM_HEAP_HARDEN_NONE (named "<kind>-none"). */
void tk_alloc_rtmem(struct tk_alloc *a, const char *kind, int hardening);
/* The kinds a tool can also drive through their typed API, rtm_<kind>_*,
 * without the generic interface's dispatch: "tlsf" and "halffit" (the two
 * picked for speed), NULL-terminated. */
const char *const *tk_typed_kinds(void);
/* kind (one of tk_typed_kinds()) through its typed API, at the default
 * hardening level: named "<kind>(typed)". */
void tk_alloc_typed(struct tk_alloc *a, const char *kind);
/* glibc malloc/free, its defaults (no mallopt). */
void tk_alloc_glibc(struct tk_alloc *a);

/*
 * "glibc-rt": glibc malloc/free set up the way real-time guides say, the
 * best glibc can do for a real-time program: mallopt M_MMAP_MAX 0 (every
 * block from the heap, none from mmap), M_TRIM_THRESHOLD -1 (free memory
 * never given back, which also stops glibc moving its thresholds) and
 * M_ARENA_MAX 1 (one arena for every thread); then its heap grown by
 * a->reserve bytes, every page written and locked (mlock, where the
 * process may), and given back to glibc, which keeps it. tk_alloc_bind applies all of it, in the
 * measuring process; since mallopt is process-wide, a->own_process is set
 * and the tools measure it in a process of its own.
 */
void tk_alloc_glibc_rt(struct tk_alloc *a);
#define TK_GLIBC_RT_NAME "glibc-rt"

/* The reserve a tool gives glibc-rt for a workload whose live requested
 * bytes peak at live_bytes in at most live_blocks blocks: room for glibc's
 * chunk header and rounding of every block, a quarter more for the holes
 * between them, and 1 MiB. SIZE_MAX on overflow. */
size_t tk_glibc_rt_reserve(size_t live_bytes, size_t live_blocks);

/* glibc-rt's mallopt settings and reserve, in this process, recorded in
 * a->grt: 0, or -1 with why set (a sanitizer's malloc, a setting refused,
 * no memory for the reserve). Through tk_alloc_bind. */
int tk_glibc_rt_apply(struct tk_alloc *a, char *why, size_t why_len);

/* After the measuring, in the same process: records in a->grt whether
 * glibc's heap grew beyond the reserve (it should not: every growth is a
 * system call and new pages in a timed call). Nothing for the others. */
void tk_glibc_rt_check(struct tk_alloc *a);

/* One line on glibc-rt's reserve for a report ("64.0 MiB reserved, held: the
 * heap never grew"; "... grew 1.2 MiB past it"; "not applied: why"), into buf.
 * Returns buf. */
const char *tk_glibc_rt_outcome(const struct tk_alloc *a, char *buf, size_t size);

/* Its JSON, as the member "glibc_rt" of an open object: null for another
 * allocator (or a NULL a), else {"settings", "reserve_bytes", "applied", "why",
 * "heap_bytes", "grown_bytes" (null when not checked)}. */
struct tk_json;
void tk_glibc_rt_json(struct tk_json *j, const struct tk_alloc *a);

/* The words that select a in a replay command, as a shell takes them:
 * " --kinds NAME", after " --plugin PATH" for a plugin, each quoted where a
 * shell would not take it as one word (tlsf(typed), a path with a space).
 * Into buf (2 KiB is enough for any name and plugin path). Returns buf. */
const char *tk_alloc_replay_words(const struct tk_alloc *a, char *buf, size_t size);

/* ---- allocators loaded at run time (alloc_load.c) ------------------------- */

/* Room for why a peer or plugin was not loaded. */
#define TK_WHY_MAX 320

/* The peers rtmem knows, in the order it runs them, NULL-terminated:
 * "jemalloc", "mimalloc", "tcmalloc". */
const char *const *tk_peer_names(void);

/* tk_alloc_peer's result when the peer's library needs more static TLS than
 * the process has (jemalloc, which uses initial-exec TLS, on glibc): only a
 * process started with more, tk_reexec_static_tls, can load it. */
#define TK_PEER_NEEDS_STATIC_TLS 1

/*
 * Sets *a up to drive the named peer as a process allocator. The library is
 * loaded (dlopen, RTLD_LOCAL) on the first call and stays loaded; every
 * entry point must resolve inside that library (a symbol found elsewhere,
 * e.g. glibc's malloc, is refused). Returns 0; TK_PEER_NEEDS_STATIC_TLS
 * (why set); or -1 with why set: "not installed (...)" or the dynamic
 * linker's message.
 */
int tk_alloc_peer(struct tk_alloc *a, const char *name, char *why, size_t why_len);

/*
 * Re-executes this process (/proc/self/exe) with argv, adding
 * glibc.rtld.optional_static_tls=TK_STATIC_TLS_BYTES to GLIBC_TUNABLES
 * (after any tunables already there) and marking the environment (with the
 * peer it is done for, whose report line says so) so that it happens at
 * most once. Returns only if it did not happen, with why set: already
 * re-executed once, or exec failed.
 */
#define TK_STATIC_TLS_BYTES 16384
void tk_reexec_static_tls(char **argv, const char *peer, char *why, size_t why_len);

/* tk_reexec_static_tls for an rtmem subcommand: argv as the subcommand got
 * it (argv[0] its name), run again as "rtmem argv...". */
void tk_reexec_command(int argc, char **argv, const char *peer, char *why, size_t why_len);

/* True in a process that tk_reexec_static_tls started. */
bool tk_reexeced(void);

/*
 * A user's allocator loaded from a shared object (rtmem/plugin.h).
 *
 * A plugin's code runs only in the tools' children, never in the process
 * that writes the report: tk_plugin_load loads it in a child of its own (a
 * trial load, under a watchdog, its output sent nowhere) and keeps what
 * its table says (name, description, alignment, which calls it has); the
 * children that measure it load it again themselves (tk_alloc_bind,
 * tk_plugin_open), with what it prints to standard output sent to
 * standard error. A constructor that exits, crashes or hangs is the trial
 * load's refusal, not the tool's end.
 */
struct rtm_heap_plugin;
struct tk_plugin {
    char path[256];
    char name[33]; /* RTM_HEAP_PLUGIN_NAME_MAX + 1 */
    char description[160];
    size_t alignment; /* the table's: 0 is RTM_HEAP_MIN_ALIGN */
    bool has_stats, has_check;
    bool has_aligned, has_realloc; /* the optional aligned_alloc, realloc */
    char describe[576];            /* room for all of it: path, description, the notes */
    /* Set by tk_plugin_open, in the process that opened it. */
    const struct rtm_heap_plugin *table;
    struct tk_heap_ops hops; /* the table's calls, as the harness calls them */
    long opened_in;          /* that process's pid; 0: not opened */
};

/* Trial-loads the plugin at path (in a child) and validates its table.
 * taken(name, arg) says whether a name is already used. Returns 0, or -1
 * with why set. Never runs the plugin's code in this process. */
int tk_plugin_load(struct tk_plugin *pl, const char *path,
                   bool (*taken)(const char *name, void *arg), void *arg, char *why,
                   size_t why_len);

/* Loads a plugin tk_plugin_load accepted into this process (once per
 * process), sets pl->table and pl->hops, and checks the table is the one
 * the trial load saw. What its constructors print to standard output goes
 * to standard error. 0, or -1 with why set. For the tools' children. */
int tk_plugin_open(struct tk_plugin *pl, char *why, size_t why_len);

/* Sets *a up to drive a plugin as a bounded heap: its name, what it
 * applies, its description. Its calls are set by tk_alloc_bind, in the
 * process that runs them. pl must outlive a. */
void tk_alloc_plugin(struct tk_alloc *a, struct tk_plugin *pl);

/* Makes a's calls callable in this process: for a plugin, tk_plugin_open
 * and its calls into *a; for glibc-rt, its settings and reserve
 * (tk_glibc_rt_apply); nothing for the others. 0, or -1 with why set. */
int tk_alloc_bind(struct tk_alloc *a, char *why, size_t why_len);

/* ---- heaps in the arena ------------------------------------------------------------ */

/* The arena every bounded heap is created in is a struct tk_arena
 * (common/arena.h), opened by the tool. */

/*
 * Memory M that gives a heap of usable size H in the arena (TK_HEAP; search
 * cached), without leaving a heap behind. Fills *info. Returns 0, -ENOSPC if
 * even the whole arena gives less than H, or -errno from create for a kind
 * that refuses every size. TK_PROCESS: always 0, the budget H.
 */
int tk_alloc_size(struct tk_alloc *a, struct tk_arena *ar, size_t heap_bytes,
                  struct tk_heap_info *info);

/* A fresh heap of usable size H (tk_alloc_size), ready in a->ctx; a->cur
 * describes it. 0 or -errno as tk_alloc_size. O(search) the first time per
 * H, then one create. */
int tk_alloc_create(struct tk_alloc *a, struct tk_arena *ar, size_t heap_bytes);

/* TK_PROCESS: one untimed alloc of size bytes and its free, so that the
 * allocator's one-time set-up (a thread heap, a first segment; glibc's was
 * done long before by the process itself) falls in no test. Call it once
 * the memory lock is in force, with the size the sequence's first test asks
 * for (the smallest power-of-two block): the allocator is then as that
 * call would leave it: jemalloc's later figures depend on the first size it
 * ever serves, so a warm-up of another size would change what the first
 * tests measure. Nothing for TK_HEAP. */
void tk_alloc_warm(struct tk_alloc *a, size_t size);

/* Ends the current heap (TK_HEAP); nothing for TK_PROCESS. */
void tk_alloc_destroy(struct tk_alloc *a);

/* Statistics of the current heap: 0, or -ENOTSUP without TK_APPLY_STATS. */
int tk_alloc_stats(const struct tk_alloc *a, struct rtm_heap_stats *out);
/* The bytes a heap holds now into *out (rtmem's kinds: rtm_heap_held_bytes,
 * which a page heap lowers as it gives pages back; another heap with
 * statistics: all it was given, usable + overhead): true, or false for an
 * allocator without a heap of its own or without statistics. */
bool tk_alloc_held(const struct tk_alloc *a, size_t *out);

/* Integrity walk of the current heap: 0, -EFAULT if corrupt, -ENOTSUP. */
int tk_alloc_check(const struct tk_alloc *a);

/* Blocks of size bytes a fresh heap like the current one is documented to
 * hold; 0 when there is no such promise. */
size_t tk_alloc_fill_count(const struct tk_alloc *a, size_t size);

/* Does [p, p + size) lie in the current heap's memory, at the allocator's
 * alignment? Always true without TK_APPLY_BOUNDS. */
bool tk_alloc_block_ok(const struct tk_alloc *a, const void *p, size_t size);

#endif /* RTMEM_TOOLS_ALLOC_H */
