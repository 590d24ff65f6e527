// A C++17 program against an installed rtmem: rtmem/rtmem.hpp's heap, pmr
// resource and STL allocator (tests/consumer_run.sh builds and runs it).
#include <rtmem/rtmem.hpp>

#include <cstdio>
#include <memory_resource>
#include <vector>

alignas(64) static unsigned char buf[1 << 20];

int main()
{
    rtm::heap h("tlsf", buf, sizeof buf);
    if (!h)
        return 1;
    rtm::memory_resource mr(h);
    std::pmr::vector<int> v(&mr);
    rtm::allocator<int> a(h);
    std::vector<int, rtm::allocator<int>> w(a);
    for (int i = 0; i < 1000; i++) {
        v.push_back(i);
        w.push_back(i);
    }
    std::size_t live = h.stats().live_blocks;
    std::printf("consumer (C++): %zu live blocks, rtmem %s\n", live, RTMEM_VERSION_STRING);
    return live == 2 && v[999] == w[999] ? 0 : 1;
}
