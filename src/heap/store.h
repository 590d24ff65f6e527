/*
 * Internal: how a kind writes its metadata. Every store to heap metadata in
 * a kind's code is RTM_SET(h, lvalue, value), with h the heap's common
 * header (struct rtm_heap *). The kind's code is compiled twice:
 *   - plain (RTM_LOGGED 0): RTM_SET is the assignment, and nothing else: a
 *     heap without an undo log pays nothing;
 *   - logged (RTM_LOGGED 1, the *_logged.c files): RTM_SET first records
 *     the old value in the heap's undo log (undo.h), then assigns. Robust
 *     shared heaps run these operations (heap.c).
 * A store RTM_SET does not cover is a store the undo log cannot undo: the
 * tests compare the heap's memory before and after every logged call, and
 * fail on a changed word the log did not record.
 */
#ifndef RTMEM_SRC_HEAP_STORE_H
#define RTMEM_SRC_HEAP_STORE_H

#include "kind.h"
#include "undo.h"
#include "rtmem/lock.h"

#ifndef RTM_LOGGED
#define RTM_LOGGED 0
#endif

/* The undo log of a heap that keeps one: right after its lock area. */
static inline struct rtm_undo *rtm_undo_of(const struct rtm_heap *h)
{
    return (struct rtm_undo *)((uintptr_t)h - h->lock_offset + RTM_HEAP_LOCK_AREA_BYTES);
}

/* A kind whose calls provably fit its log's capacity defines
 * RTM_UNDO_FITS before including this file: its notes skip the test. */
#if defined(RTM_UNDO_FITS) && RTM_UNDO_FITS
#define RTM_UNDO_NOTE rtm_undo_note_fits
#else
#define RTM_UNDO_NOTE rtm_undo_note
#endif

#if RTM_LOGGED
#define RTM_SET(h, lv, v)                                 \
    do {                                                  \
        __typeof__(&(lv)) rtm_p_ = &(lv);                 \
        __typeof__(*rtm_p_) rtm_v_ = (v);                 \
        struct rtm_undo *rtm_u_ = rtm_undo_of(h);         \
        RTM_UNDO_NOTE(rtm_u_, rtm_p_, sizeof(*rtm_p_));   \
        RTM_UNDO_BEFORE_STORE(rtm_u_, rtm_p_);            \
        *(volatile __typeof__(*rtm_p_) *)rtm_p_ = rtm_v_; \
    } while (0)
/* Names a function of the logged copy apart from its plain twin. */
#define RTM_LOGGED_NAME(name)       name##_logged
/* Before data goes into a block the call has just taken (undo.h). */
#define RTM_NOTE_BLOCK(h, p, bytes) rtm_undo_note_block(rtm_undo_of(h), (p), (bytes))
#else
#define RTM_NOTE_BLOCK(h, p, bytes) ((void)0)
#define RTM_SET(h, lv, v)           ((void)((lv) = (v)))
#define RTM_LOGGED_NAME(name)       name
#endif

#endif /* RTMEM_SRC_HEAP_STORE_H */
