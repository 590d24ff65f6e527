/*
 * Bench kit: a map from 64-bit keys (other than 0 and 1, which it uses
 * itself) to 64-bit values, by open addressing: the live blocks of a trace,
 * by address (rtmem trace --show, rtmem replay).
 *
 *     struct tk_u64map m = { 0 };
 *     uint64_t old;
 *     if (!tk_u64map_put(&m, addr, id, &old)) { out of memory }
 *     uint64_t id = tk_u64map_take(&m, addr);   // TK_U64MAP_NONE if absent
 *     tk_u64map_free(&m);
 *
 * put and take are O(1) on average; the table doubles at 3/4 full.
 */
#ifndef RTMEM_TOOLS_U64MAP_H
#define RTMEM_TOOLS_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TK_U64MAP_NONE UINT64_MAX

struct tk_u64map {
    uint64_t *key, *value; /* key 0: empty, 1: removed */
    size_t cap, used, n;   /* slots, slots ever filled, live entries */
};

/* Sets key (> 1) to value: *replaced is the value it had, or
 * TK_U64MAP_NONE. False when out of memory (nothing changed). */
bool tk_u64map_put(struct tk_u64map *m, uint64_t key, uint64_t value, uint64_t *replaced);
/* Removes key: its value, or TK_U64MAP_NONE if it was not there. */
uint64_t tk_u64map_take(struct tk_u64map *m, uint64_t key);
/* Calls fn(key, value, arg) for each entry, in no order. */
void tk_u64map_each(const struct tk_u64map *m, void (*fn)(uint64_t key, uint64_t value, void *arg),
                    void *arg);
void tk_u64map_free(struct tk_u64map *m);

#endif /* RTMEM_TOOLS_U64MAP_H */
