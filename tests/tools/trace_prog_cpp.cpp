// A C++ program for tests/tools/test_trace.py to trace: STL containers
// filled and emptied by THREADS threads in the phase "loop" (new and delete
// reach malloc and free). Prints the number of elements it made.
#include <map>
#include <string>
#include <thread>
#include <vector>
#include <cstdio>

#include <rtmem/trace.h>

static const int THREADS = 3, ITEMS = 2000;

static void work(int id, long *made)
{
    std::map<int, std::string> m;
    std::vector<std::vector<int>> v;
    for (int i = 0; i < ITEMS; i++) {
        m[i] = std::string(static_cast<size_t>(20 + (i + id) % 50), 'x');
        v.emplace_back(static_cast<size_t>(1 + i % 17), i);
    }
    *made = static_cast<long>(m.size() + v.size());
}

int main()
{
    rtm_trace_phase("loop");
    std::vector<std::thread> t;
    std::vector<long> made(THREADS);
    for (int i = 0; i < THREADS; i++)
        t.emplace_back(work, i, &made[static_cast<size_t>(i)]);
    for (auto &x : t)
        x.join();
    long total = 0;
    for (long n : made)
        total += n;
    std::printf("%ld\n", total);
    return total == 2L * THREADS * ITEMS ? 0 : 1;
}
