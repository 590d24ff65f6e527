/*
 * rtmem: RTM_API, the mark of the public API.
 *
 * librtmem.so is built with hidden visibility: it exports exactly the
 * functions the headers declare with RTM_API (rtm_heap_*, rtm_tlsf_*,
 * rtm_heapmem_*, rtm_xnheap_*), nothing of its internals. librtmem.a keeps
 * its internals global (a static library cannot hide them from the program
 * it is linked into), all named rtm__*; no other name is defined there.
 * rtmem/plugin.h also marks the table a plugin defines with it, so that a
 * plugin built with -fvisibility=hidden still exports that table.
 * Included by every public header; a program never needs it directly.
 */
#ifndef RTMEM_EXPORT_H
#define RTMEM_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define RTM_API __attribute__((__visibility__("default")))
#else
#define RTM_API
#endif

#endif /* RTMEM_EXPORT_H */
