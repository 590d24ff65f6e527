/*
 * `rtmem shm`: the run's rows, shared by the C mechanisms (run.c) and the
 * Java contender (java_rows.c): taking the next one, and its progress line.
 */
#include <stdio.h>
#include <string.h>

#include "common/out.h"
#include "common/timer.h"
#include "shm.h"

struct shm_row *shm_row_add(struct shm *sh)
{
    if (!sh->rows || sh->n_rows == sh->rows_capacity)
        return NULL;
    struct shm_row *row = &sh->rows[sh->n_rows++];
    memset(row, 0, sizeof(*row));
    return row;
}

void shm_print_progress(const struct shm_row *row, uint64_t start_ns)
{
    char b[32];
    printf("%-13s %8s  %s (%.1f s)\n", row->mech, tk_fmt_iec(b, sizeof(b), row->bytes),
           row->skipped  ? "skipped"
           : row->failed ? "FAILED"
                         : "measured",
           (double)(tk_clock_ns() - start_ns) / 1e9);
    fflush(stdout);
}
