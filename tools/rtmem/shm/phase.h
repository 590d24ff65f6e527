/*
 * `rtmem shm`: the workload phases every mechanism is measured on, in C and
 * in Java (java.h), so that the table holds both with the same meaning.
 *
 *   create+touch  obtain the region (create the object, size it, map it)
 *                 and write one byte of every page, in order
 *   writes        N random one-byte writes: index and value drawn from
 *                 splitmix64 (seed given), index = ((z >> 32) * bytes) >> 32
 *                 (regions up to 4 GiB), value = z & 0xff; timed whole,
 *                 and the generator's own cost (the same loop summing into
 *                 a sink) timed apart: the net, the store alone, is the
 *                 difference, with its precision (shm.h)
 *   zeroings      K full zeroings of the region (memset, Java: a bulk fill)
 *   sync          one msync(MS_SYNC) of the whole region (file mappings;
 *                 Java: MappedByteBuffer.force)
 *   teardown      unmap, close and remove the object
 */
#ifndef RTMEM_TOOLS_SHM_PHASE_H
#define RTMEM_TOOLS_SHM_PHASE_H

#include <stdbool.h>
#include <stdint.h>

enum shm_phase_id {
    SHM_PHASE_TOUCH, /* create + first touch */
    SHM_PHASE_WRITES,
    SHM_PHASE_ZEROINGS,
    SHM_PHASE_SYNC,
    SHM_PHASE_TEARDOWN,
    SHM_PHASES
};

/* One phase as measured. */
struct shm_phase {
    bool done;             /* measured; false: not run (sync of memory, say) */
    uint64_t ops;          /* pages touched, writes, zeroings, syncs, 1 */
    double ns;             /* wall time of the phase; writes: the loop's whole
                              time, the generator's cost included */
    uint64_t minor_faults; /* page faults taken during the phase */
    uint64_t major_faults;
};

#endif /* RTMEM_TOOLS_SHM_PHASE_H */
