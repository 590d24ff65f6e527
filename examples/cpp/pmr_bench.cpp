/*
 * A std::pmr workload on each rtmem kind (rtm::memory_resource over a heap
 * on a faulted-in, locked arena) against the default resource (operator new:
 * the C library's malloc), side by side in one run (make bench-cpp;
 * docs/cpp.md quotes it).
 *
 *   pmr_bench [ROUNDS]   (default 300)
 *
 * A round: a pmr::vector<int> grown to 20,000 elements by push_back; a
 * pmr::map<int, pmr::string> of 2,000 entries (40-character strings, past
 * the small-string buffer), half of it erased, then all of it dropped. The
 * resources take their rounds in turn (round-robin, so that the machine's
 * drift falls on all alike); each round is timed with CLOCK_MONOTONIC. It
 * prints, per resource, the median round time and the 10th-90th percentile
 * and worst, and the median of the per-turn ratio to the default resource's
 * round of the same turn; then the timer's own cost and an empty round (the
 * floor). Runs at SCHED_FIFO 80 on CPU 1 with memory locked when it may,
 * and says whether.
 */
#include <rtmem/rtmem.hpp>

#include <sched.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory_resource>
#include <string>
#include <vector>

namespace {

long long now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long sink; /* keeps the work observable */

void round(std::pmr::memory_resource *mr)
{
    std::pmr::vector<int> v(mr);
    for (int i = 0; i < 20000; i++)
        v.push_back(i);
    std::pmr::map<int, std::pmr::string> m(mr);
    for (int i = 0; i < 2000; i++)
        m.emplace(i * 7919 % 2000, std::pmr::string(40, char('a' + i % 26), mr));
    for (int i = 0; i < 2000; i += 2)
        m.erase(i);
    sink += v[19999] + static_cast<long>(m.size());
}

void empty_round(std::pmr::memory_resource *)
{
    sink++;
}

double pct(std::vector<double> x, double p)
{
    std::sort(x.begin(), x.end());
    return x[static_cast<std::size_t>(p * static_cast<double>(x.size() - 1) + 0.5)];
}

struct contender {
    std::string name;
    std::pmr::memory_resource *mr;
    void (*fn)(std::pmr::memory_resource *);
    std::vector<double> us;
};

} // namespace

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? std::atoi(argv[1]) : 300;
    if (rounds < 10) {
        std::fprintf(stderr, "usage: pmr_bench [ROUNDS >= 10]\n");
        return 2;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(1, &one);
    bool pinned = sched_setaffinity(0, sizeof one, &one) == 0;
    sched_param sp{};
    sp.sched_priority = 80;
    bool fifo = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
    bool locked = mlockall(MCL_CURRENT | MCL_FUTURE) == 0;

    std::vector<rtm::heap> heaps;
    std::vector<std::unique_ptr<rtm::memory_resource>> mrs;
    std::vector<contender> c;
    c.push_back({ "default (new/delete)", std::pmr::new_delete_resource(), round, {} });
    for (const char *const *k = rtm_heap_kinds(); *k; k++) {
        rtm_arena_config_t acfg{};
        acfg.size_bytes = 32 << 20;
        acfg.prefault = RTM_ARENA_PREFAULT_TOUCH;
        acfg.lock = RTM_ARENA_LOCK_TRY;
        heaps.push_back(rtm::heap::on_arena(*k, acfg));
        if (!heaps.back()) {
            std::fprintf(stderr, "pmr_bench: %s: %d\n", *k, heaps.back().error());
            return 1;
        }
        mrs.emplace_back(new rtm::memory_resource(heaps.back()));
        c.push_back({ *k, mrs.back().get(), round, {} });
    }
    c.push_back({ "empty round (floor)", nullptr, empty_round, {} });

    for (contender &x : c) /* one warm-up round each */
        x.fn(x.mr);
    for (int r = 0; r < rounds; r++)
        for (contender &x : c) {
            long long t0 = now_ns();
            x.fn(x.mr);
            x.us.push_back(static_cast<double>(now_ns() - t0) / 1000.0);
        }
    long long t0 = now_ns();
    for (int i = 0; i < 100000; i++)
        now_ns();
    double timer_ns = static_cast<double>(now_ns() - t0) / 100000.0;

    std::printf("pmr_bench: %d rounds each, in turn; %s, %s, %s\n", rounds,
                pinned ? "CPU 1" : "not pinned", fifo ? "SCHED_FIFO 80" : "SCHED_OTHER",
                locked ? "memory locked" : "memory not locked");
    std::printf("%-22s %10s %19s %10s %14s\n", "resource", "median us", "p10-p90 us", "worst us",
                "vs default");
    for (contender &x : c) {
        std::vector<double> ratio;
        for (int r = 0; r < rounds; r++)
            ratio.push_back(x.us[r] / c[0].us[r]);
        std::printf("%-22s %10.1f %8.1f - %8.1f %10.1f %13.2fx\n", x.name.c_str(), pct(x.us, 0.5),
                    pct(x.us, 0.1), pct(x.us, 0.9), pct(x.us, 1.0), pct(ratio, 0.5));
    }
    std::printf("timer: %.0f ns per clock_gettime\n", timer_ns);
    for (const rtm::heap &h : heaps)
        if (h.stats().live_blocks != 0 || h.check() != 0)
            return 1;
    return sink > 0 ? 0 : 1;
}
