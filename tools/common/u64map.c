/* Bench kit: a map of 64-bit keys to values (u64map.h). */
#include "common/u64map.h"

#include <stdlib.h>

static size_t slot_of(uint64_t k, size_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

static bool grow(struct tk_u64map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    uint64_t *key = calloc(cap, sizeof(*key)), *value = calloc(cap, sizeof(*value));
    if (!key || !value) {
        free(key);
        free(value);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->key[i] > 1) {
            size_t s = slot_of(m->key[i], cap);
            while (key[s])
                s = (s + 1) & (cap - 1);
            key[s] = m->key[i];
            value[s] = m->value[i];
        }
    free(m->key);
    free(m->value);
    m->key = key;
    m->value = value;
    m->cap = cap;
    m->used = m->n;
    return true;
}

/* The slot of k, or where it would go (the first removed slot on its way,
 * else the empty one that ends it). */
static size_t find(const struct tk_u64map *m, uint64_t k, bool *found)
{
    size_t s = slot_of(k, m->cap), hole = SIZE_MAX;
    while (m->key[s]) {
        if (m->key[s] == k) {
            *found = true;
            return s;
        }
        if (m->key[s] == 1 && hole == SIZE_MAX)
            hole = s;
        s = (s + 1) & (m->cap - 1);
    }
    *found = false;
    return hole != SIZE_MAX ? hole : s;
}

bool tk_u64map_put(struct tk_u64map *m, uint64_t key, uint64_t value, uint64_t *replaced)
{
    *replaced = TK_U64MAP_NONE;
    if (key <= 1)
        return true; /* not a key this map holds: nothing to keep */
    if ((m->used + 1) * 4 > m->cap * 3 && !grow(m))
        return false;
    bool found;
    size_t s = find(m, key, &found);
    if (found) {
        *replaced = m->value[s];
    } else {
        if (m->key[s] == 0)
            m->used++;
        m->n++;
        m->key[s] = key;
    }
    m->value[s] = value;
    return true;
}

uint64_t tk_u64map_take(struct tk_u64map *m, uint64_t key)
{
    if (!m->cap || key <= 1)
        return TK_U64MAP_NONE;
    bool found;
    size_t s = find(m, key, &found);
    if (!found)
        return TK_U64MAP_NONE;
    m->key[s] = 1;
    m->n--;
    return m->value[s];
}

void tk_u64map_each(const struct tk_u64map *m, void (*fn)(uint64_t key, uint64_t value, void *arg),
                    void *arg)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->key[i] > 1)
            fn(m->key[i], m->value[i], arg);
}

void tk_u64map_free(struct tk_u64map *m)
{
    free(m->key);
    free(m->value);
    *m = (struct tk_u64map){ 0 };
}
