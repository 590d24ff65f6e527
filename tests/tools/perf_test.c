/*
 * The bench kit's counters (tools/common/perf.h), against its header: the
 * software page-fault counter, where the kernel has perf events, counts
 * the faults of pages first touched between start and stop (each of 64
 * fresh pages, transparent huge pages refused) and not those outside; the
 * totals add the deltas; every event that cannot be opened says why, and
 * without a CPU PMU (most virtual machines) every hardware event is
 * unavailable and the reason names the missing PMU; grouped or not, the
 * same events count; close leaves no counter open; the JSON names are
 * distinct.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "common/perf.h"

#define PAGES 64

/* Touches PAGES fresh pages between start and stop: the minor-fault delta. */
static uint64_t faults_touching(struct tk_perf *p, bool touch)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    if (m == MAP_FAILED)
        return 0;
    madvise(m, PAGES * page, MADV_NOHUGEPAGE);
    tk_perf_start(p);
    if (touch)
        for (size_t i = 0; i < PAGES; i++)
            ((volatile char *)m)[i * page] = 1;
    tk_perf_stop(p);
    munmap(m, PAGES * page);
    return p->ev[TK_PERF_MINOR_FAULTS].delta;
}

/* Every event opens or says why; the page-fault counter counts. */
static void open_and_count(bool group)
{
    struct tk_perf p;
    tk_perf_open(&p, group);
    for (int e = 0; e < TK_PERF_N_EVENTS; e++)
        CHECK(tk_perf_has(&p, (enum tk_perf_event)e) || p.ev[e].why[0] != '\0');
    if (!p.any_hardware)
        CHECK(p.hardware_why[0] != '\0');
    if (!p.cpu_pmu) {
        CHECK(!p.any_hardware);
        CHECK(strstr(p.hardware_why, "PMU") != NULL || strstr(p.hardware_why, "paranoid"));
    }
    CHECK(!p.grouped || group);
    if (tk_perf_has(&p, TK_PERF_MINOR_FAULTS)) {
        uint64_t touched = faults_touching(&p, true);
        CHECK(touched >= PAGES);
        uint64_t idle = faults_touching(&p, false);
        CHECK(idle < PAGES);
        CHECK_EQ(p.ev[TK_PERF_MINOR_FAULTS].total, touched + idle);
    } else {
        printf("tools.perf: no software page-fault event here (%s): that part not checked\n",
               p.ev[TK_PERF_MINOR_FAULTS].why);
    }
    tk_perf_close(&p);
    for (int e = 0; e < TK_PERF_N_EVENTS; e++)
        CHECK_EQ(p.ev[e].fd, -1);
}

TEST_CASE("grouped, every event counts or says why, and close leaves none open")
{
    open_and_count(true);
}

TEST_CASE("one by one, every event counts or says why, and close leaves none open")
{
    open_and_count(false);
}

TEST_CASE("the JSON names of the events are distinct")
{
    for (int a = 0; a < TK_PERF_N_EVENTS; a++)
        for (int b = a + 1; b < TK_PERF_N_EVENTS; b++)
            CHECK(strcmp(tk_perf_event_id((enum tk_perf_event)a),
                         tk_perf_event_id((enum tk_perf_event)b)) != 0);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, "tools.perf");
}
