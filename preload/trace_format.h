/*
 * The trace file format of `rtmem trace` (docs/trace-format.md is its
 * manual): shared by the interposer that writes it (preload/trace.c) and
 * the reader (tools/common/trace.c). Version 1.
 *
 * A file is pages of the size its header gives (page_bytes):
 *   the first page   the header (struct rtm_trace_header, 128 bytes), then
 *                    at byte 128 the end block, zeros until the image ends:
 *                    a struct rtm_trace_block of type RTM_TRACE_END (ended
 *                    by exit, _exit or exec: the recorder writes it) or
 *                    RTM_TRACE_CUT (ended by a signal: rtmem trace writes
 *                    it, from the program's wait status), and its struct
 *                    rtm_trace_end
 *   then chunks      each chunk_bytes long (a multiple of the page), one
 *                    thread's: a struct rtm_trace_block of type
 *                    RTM_TRACE_EVENTS and its events (space_bytes of room,
 *                    payload_bytes of them used, n_events in them). A chunk
 *                    of zeros was reserved by a process that died before it
 *                    wrote its header.
 * The recorder writes the events into the file's pages (a shared mapping),
 * so that every event it finished is in the file whatever ends the
 * process, SIGKILL included; a file with no end block was cut so.
 *
 * Integers are in the byte order of the machine that wrote the file (the
 * header's byte_order field tells a reader); an event is an opcode byte
 * then unsigned LEB128 varints:
 *   seq delta    from the previous event of the chunk (from 0 for its
 *                first): the process-wide order
 *   time delta   ticks of the header's clock, from the previous event of
 *                the chunk (from the header's start_ticks for the first)
 * then the operation's fields (p: a pointer, as the zigzag varint of its
 * difference from the previous pointer of the chunk, starting at 0):
 *   MALLOC, VALLOC, PVALLOC   size, p returned (0: failed)
 *   CALLOC                    nmemb, size, p returned
 *   REALLOC                   p given, size, p returned, seq - seq0
 *   REALLOCARRAY              p given, nmemb, size, p returned, seq - seq0
 *   FREE                      p given
 *   MEMALIGN, ALIGNED_ALLOC   alignment, size, p returned
 *   POSIX_MEMALIGN            alignment, size, p returned, its return value
 *   USABLE_SIZE               p given, its result
 *   MARK                      length, then that many bytes: a phase's name
 * Order: an allocation's seq is taken after the call returns, a free's
 * before it is made, so that an address handed out again always comes
 * later than its free; realloc's seq0, taken before the call, is when its
 * old block stopped being the caller's.
 */
#ifndef RTMEM_PRELOAD_TRACE_FORMAT_H
#define RTMEM_PRELOAD_TRACE_FORMAT_H

#include <stdint.h>

#define RTM_TRACE_MAGIC      "RTMTRACE"
#define RTM_TRACE_VERSION    1u
#define RTM_TRACE_BYTE_ORDER 0x01020304u
#define RTM_TRACE_MARK_MAX   63 /* bytes of a phase's name */
#define RTM_TRACE_END_AT     128 /* the end block's offset, in the first page */

struct rtm_trace_header {
    char magic[8];          /* RTM_TRACE_MAGIC, without its NUL */
    uint16_t version;       /* RTM_TRACE_VERSION */
    uint16_t header_bytes;  /* 128 */
    uint32_t byte_order;    /* RTM_TRACE_BYTE_ORDER as written */
    uint32_t pid, ppid;     /* the process that wrote it, and its parent */
    uint64_t start_ns;      /* CLOCK_MONOTONIC at the start: times count from it */
    uint64_t start_real_ns; /* CLOCK_REALTIME at the start */
    uint32_t page_bytes;    /* the base page size: the first chunk starts there */
    uint32_t generation;    /* 0 for a process's first image, then 1 per exec */
    uint32_t chunk_bytes;   /* every chunk's size, its block header included */
    uint32_t clock;         /* what event times count: enum rtm_trace_clock */
    uint64_t start_ticks;   /* the clock at start_ns */
    uint64_t calib_ns;      /* CLOCK_MONOTONIC and the clock read again shortly */
    uint64_t calib_ticks;   /* after the start: the clock's rate */
    /* Kept up to date while the image runs (the recorder maps this page
     * shared), for rtmem trace to copy into a CUT record when a signal ends
     * the image: the end record's chunks and unrecorded, so far. */
    uint64_t chunks_so_far;
    uint64_t unrecorded_so_far;
    uint64_t reserved[4];
};

/* Event times count ticks of a clock: nanoseconds of CLOCK_MONOTONIC, or
 * the CPU's own counter (x86's TSC where the kernel keeps time with it,
 * arm64's virtual counter), a few times cheaper to read. Its rate is the
 * header's two readings of both (start, calib), refined by any later pair:
 * each chunk's and the end record's. */
enum rtm_trace_clock {
    RTM_TRACE_CLOCK_NS = 0,
    RTM_TRACE_CLOCK_COUNTER = 1,
};

enum rtm_trace_block_type {
    RTM_TRACE_EVENTS = 1,
    RTM_TRACE_END = 2,
    RTM_TRACE_CUT = 3,
};

struct rtm_trace_block {
    uint8_t type; /* enum rtm_trace_block_type; 0: none written */
    uint8_t reserved8;
    uint16_t reserved16;
    uint32_t space_bytes;   /* room after this header */
    uint32_t payload_bytes; /* of it, used: the events, or the end record */
    uint32_t n_events;      /* EVENTS: the events in the payload */
    uint32_t tid;           /* EVENTS: the thread whose events these are */
    uint32_t reserved32;
    uint64_t first_seq; /* EVENTS: its first event's seq */
    uint64_t ticks, ns; /* EVENTS: the clock and CLOCK_MONOTONIC when it was made */
};

struct rtm_trace_end {
    uint64_t end_ns;     /* since start_ns */
    uint64_t chunks;     /* chunks reserved in the file, all threads */
    uint64_t unrecorded; /* calls made while the recorder could not record them */
    int32_t how;         /* END: the exit status, or -1 (not known); CUT: the signal */
    uint32_t reserved;
    uint64_t end_ticks; /* the clock at end_ns */
    uint64_t reserved2;
};

enum rtm_trace_op {
    RTM_TRACE_MALLOC = 1,
    RTM_TRACE_CALLOC = 2,
    RTM_TRACE_REALLOC = 3,
    RTM_TRACE_REALLOCARRAY = 4,
    RTM_TRACE_FREE = 5,
    RTM_TRACE_MEMALIGN = 6,
    RTM_TRACE_POSIX_MEMALIGN = 7,
    RTM_TRACE_ALIGNED_ALLOC = 8,
    RTM_TRACE_VALLOC = 9,
    RTM_TRACE_PVALLOC = 10,
    RTM_TRACE_USABLE_SIZE = 11,
    RTM_TRACE_MARK = 12,
    RTM_TRACE_OPS /* one past the last */
};

_Static_assert(sizeof(struct rtm_trace_header) == 128, "the header is 128 bytes");
_Static_assert(sizeof(struct rtm_trace_block) == 48, "a block header is 48 bytes");
_Static_assert(sizeof(struct rtm_trace_end) == 48, "an end record is 48 bytes");

#endif /* RTMEM_PRELOAD_TRACE_FORMAT_H */
