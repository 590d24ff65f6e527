/* zsheap's operations that change a heap, compiled with logged stores for
 * heaps that keep an undo log (store.h, undo.h). */
#define RTM_LOGGED 1
#include "zsheap.c"
