/* Bench kit: shuffles on the workload generator (rng.h). */
#include "common/rng.h"

#include <string.h>

_Static_assert(sizeof(void *) <= TK_RNG_MAX_ELEM, "a pointer array can be shuffled");

void tk_rng_shuffle(void *v, size_t n, size_t elem_size, uint64_t *state)
{
    unsigned char *base = v, tmp[TK_RNG_MAX_ELEM];
    if (elem_size == 0 || elem_size > TK_RNG_MAX_ELEM)
        return;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)tk_rng_below(state, i);
        unsigned char *a = base + (i - 1) * elem_size, *b = base + j * elem_size;
        memcpy(tmp, a, elem_size);
        memcpy(a, b, elem_size);
        memcpy(b, tmp, elem_size);
    }
}
