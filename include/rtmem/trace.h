/*
 * rtmem: phases in a program that `rtmem trace` records.
 *
 * A real-time program's steady state (its control loop) is what its memory
 * budget is about, not its start-up. The program says where a phase
 * begins, and `rtmem trace --show` and `rtmem replay` can take that phase
 * alone:
 *
 *     #include <rtmem/trace.h>
 *     ...
 *     rtm_trace_phase("loop");   // the control loop starts here
 *
 * rtm_trace_mark is defined by librtmem-trace, the library `rtmem trace`
 * preloads into the program; the reference here is weak, so a program
 * that is not traced (or runs where rtmem is not installed) links and runs
 * without it, and the call costs a test of a null address. Nothing else of
 * rtmem is needed: this header declares no function of librtmem (and
 * rtmem/rtmem.h does not include it).
 */
#ifndef RTMEM_TRACE_H
#define RTMEM_TRACE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Records the start of a phase named name (its first 63 bytes) in the
 * trace, in the process-wide order of the calling thread's allocations.
 * Defined only when the program is traced. O(length of name); it may
 * take a new chunk of the trace file for the thread (a fallocate and an
 * mmap). */
extern void rtm_trace_mark(const char *name) __attribute__((weak));

/* rtm_trace_mark when the program is traced; nothing otherwise. */
static inline void rtm_trace_phase(const char *name)
{
    if (rtm_trace_mark)
        rtm_trace_mark(name);
}

#ifdef __cplusplus
}
#endif

#endif /* RTMEM_TRACE_H */
