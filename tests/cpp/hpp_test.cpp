/*
 * rtmem/rtmem.hpp: rtm::heap, rtm::memory_resource, rtm::allocator,
 * rtm::offset_ptr and rtm::shared_allocator, on every kind. Built as C++11,
 * 17 and 20 with g++ and clang++, and without exceptions
 * (tests/cpp_standards.sh); the pmr cases run from C++17 on.
 *   hpp_test [CASE]   (no CASE: all of them)
 */
#include <rtmem/rtmem.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <string>
#include <vector>

namespace {

int failures = 0;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                               \
        }                                                                             \
    } while (0)

alignas(64) unsigned char pool_mem[4][1 << 20];

/* Every kind the library has, each on 1 MiB of its own. */
std::vector<std::string> kinds()
{
    std::vector<std::string> out;
    for (const char *const *k = rtm_heap_kinds(); *k; k++)
        out.push_back(*k);
    return out;
}

std::size_t live(const rtm::heap &h)
{
    return h.stats().live_blocks;
}

/* How many elements a growing vector may reach on a fresh heap: at most
 * want, and at most half the largest request (a page kind's is a page). */
int elements(const rtm::heap &h, std::size_t size, int want)
{
    std::size_t fit = h.stats().largest_free_bytes / size / 2;
    return fit < static_cast<std::size_t>(want) ? static_cast<int>(fit) : want;
}

struct alignas(128) wide {
    unsigned char bytes[40];
};

/* ---- rtm::heap ----------------------------------------------------------- */

void heap_owns_and_moves()
{
    for (const std::string &k : kinds()) {
        rtm::heap h(k.c_str(), pool_mem[0], sizeof pool_mem[0]);
        CHECK(h);
        CHECK(h.error() == 0);
        CHECK(std::strcmp(h.kind(), k.c_str()) == 0);
        CHECK(h.hardening() == RTM_HEAP_HARDEN_O1);
        void *p = h.alloc(100);
        CHECK(p != nullptr);
        CHECK(h.usable_size(p) >= 100);
        CHECK(live(h) == 1);
        rtm::heap g(std::move(h));
        CHECK(!h);
        CHECK(h.get() == nullptr);
        CHECK(g);
        CHECK(g.usable_size(p) >= 100);
        CHECK(g.free(p) == 0);
        CHECK(live(g) == 0);
        void *q = g.aligned_alloc(256, 10);
        CHECK(q != nullptr && reinterpret_cast<std::uintptr_t>(q) % 256 == 0);
        q = g.realloc(q, 3000);
        CHECK(q != nullptr && g.usable_size(q) >= 3000);
        int *z = static_cast<int *>(g.calloc(10, sizeof(int)));
        CHECK(z != nullptr && std::count(z, z + 10, 0) == 10);
        CHECK(g.free(z) == 0 && g.free(q) == 0);
        CHECK(g.check() == 0);
        CHECK(g.fill_count(64) > 0);
        rtm::heap e;
        e = std::move(g); /* move assignment ends nothing twice */
        CHECK(e && !g);
        e.reset();
        CHECK(!e && e.error() == 0);
    }
    rtm_heap_config_t cfg{};
    cfg.lock = RTM_HEAP_LOCK_PI;
    rtm::heap locked("tlsf", pool_mem[0], sizeof pool_mem[0], &cfg);
    CHECK(locked.lock_type() == RTM_HEAP_LOCK_PI);
    CHECK(locked.set_lock_timeout(1000) == 0);
    void *b = locked.alloc(10);
    CHECK(locked.free(b) == 0);
    rtm_heap_lock_stats_t ls{};
    CHECK(locked.lock_stats(ls) == 0 && ls.calls >= 2 && ls.timeout_us == 1000);
    rtm_heap_limits_t lim{};
    lim.max_live = 64 << 10; /* bytes live at most */
    lim.max_block = 256;
    CHECK(rtm::heap::pool_bound("tlsf", lim) == rtm_heap_pool_bound("tlsf", 64 << 10, 256));
    CHECK(rtm::heap::pool_bound("tlsf", lim) > lim.max_live);
    locked.reset();
    rtm::heap bad("no-such-kind", pool_mem[0], sizeof pool_mem[0]);
    CHECK(!bad);
    CHECK(bad.error() == ENOENT);
    rtm::heap tiny("tlsf", pool_mem[0], 16);
    CHECK(!tiny && tiny.error() == ENOMEM);
}

void heap_make_destroy()
{
    rtm::heap h("tlsf", pool_mem[0], sizeof pool_mem[0]);
    static int reported = 0;
    struct on_damage {
        static void fn(const rtm_heap_corruption_t *, void *arg) { ++*static_cast<int *>(arg); }
    };
    CHECK(h.set_corruption_handler(on_damage::fn, &reported) == 0);
    unsigned char *a = static_cast<unsigned char *>(h.alloc(100));
    void *after = h.alloc(100);
    a[h.usable_size(a)] = 0x41; /* one byte past: the next block's header */
    CHECK(h.free(a) == -EFAULT && reported == 1 && h.stats().corruptions == 1);
    (void)after;
    rtm::heap fresh("tlsf", pool_mem[3], sizeof pool_mem[3]);
    h = std::move(fresh);
    wide *w = h.make<wide>();
    CHECK(w != nullptr && reinterpret_cast<std::uintptr_t>(w) % alignof(wide) == 0);
    std::string *s = h.make<std::string>("made in the heap");
    CHECK(s != nullptr && *s == "made in the heap");
    CHECK(live(h) == 2);
    CHECK(h.destroy(w) == 0 && h.destroy(s) == 0);
    CHECK(h.destroy<wide>(nullptr) == 0);
    CHECK(live(h) == 0);
}

void heap_on_arena()
{
    rtm_arena_config_t acfg{};
    acfg.size_bytes = 1 << 20;
    acfg.prefault = RTM_ARENA_PREFAULT_TOUCH;
    rtm::heap h = rtm::heap::on_arena("tlsf", acfg);
    CHECK(h);
    CHECK(h.arena() != nullptr && h.arena()->base != nullptr);
    CHECK(h.arena()->size_bytes >= acfg.size_bytes); /* (residency: tests/arena_test.c) */
    char *p = static_cast<char *>(h.alloc(1000));
    CHECK(p >= static_cast<char *>(h.arena()->base) &&
          p + 1000 <= static_cast<char *>(h.arena()->base) + h.arena()->size_bytes);
    CHECK(h.free(p) == 0);
    rtm_arena_config_t none{}; /* size 0: refused */
    rtm::heap bad = rtm::heap::on_arena("tlsf", none);
    CHECK(!bad && bad.error() == EINVAL);
}

/* ---- rtm::allocator --------------------------------------------------------- */

void allocator_containers()
{
    for (const std::string &k : kinds()) {
        rtm::heap h(k.c_str(), pool_mem[1], sizeof pool_mem[1]);
        CHECK(h);
        {
            rtm::allocator<int> a(h);
            std::vector<int, rtm::allocator<int>> v(a);
            const int n = elements(h, sizeof(int), 10000);
            for (int i = 0; i < n; i++)
                v.push_back(i);
            CHECK(live(h) == 1);
            CHECK(h.usable_size(v.data()) >= v.capacity() * sizeof(int));
            using map_alloc = rtm::allocator<std::pair<const int, std::string>>;
            std::map<int, std::string, std::less<int>, map_alloc> m{ map_alloc(h) };
            for (int i = 0; i < 200; i++)
                m[i] = std::to_string(i);
            std::list<double, rtm::allocator<double>> l(a); /* rebinds */
            l.assign(100, 2.5);
            CHECK(live(h) == 1 + 200 + 100);
            CHECK(m[150] == "150" && v[n - 1] == n - 1);
            std::vector<wide, rtm::allocator<wide>> ws(5, wide{}, rtm::allocator<wide>(h));
            CHECK(reinterpret_cast<std::uintptr_t>(ws.data()) % alignof(wide) == 0);
        }
        CHECK(live(h) == 0);
        CHECK(h.check() == 0);
    }
}

void allocator_traits_and_equality()
{
    rtm::heap h1("tlsf", pool_mem[0], sizeof pool_mem[0]);
    rtm::heap h2("halffit", pool_mem[1], sizeof pool_mem[1]);
    rtm::allocator<int> a1(h1), b1(h1), a2(h2);
    rtm::allocator<double> d1(a1);
    CHECK(a1 == b1 && a1 != a2 && d1 == a1);
    CHECK(a1.max_size() == static_cast<std::size_t>(PTRDIFF_MAX) / sizeof(int));
    using tr = std::allocator_traits<rtm::allocator<int>>;
    static_assert(tr::propagate_on_container_swap::value, "swap propagates");
    static_assert(!tr::is_always_equal::value, "allocators of two heaps differ");
    static_assert(std::is_same<tr::rebind_alloc<char>, rtm::allocator<char>>::value, "rebind");
    /* swap moves each vector's heap with it: every block is freed where it came from */
    std::vector<int, rtm::allocator<int>> v1(100, 1, a1), v2(50, 2, a2);
    std::swap(v1, v2);
    CHECK(v1.get_allocator() == a2 && v2.get_allocator() == a1);
    v1 = v2; /* copy assignment takes v2's heap */
    CHECK(v1.get_allocator() == a1);
    std::vector<int, rtm::allocator<int>> v3(10, 3, a2);
    v1 = std::move(v3); /* and move assignment v3's, with its block */
    CHECK(v1.get_allocator() == a2 && v1.size() == 10);
    v1 = std::vector<int, rtm::allocator<int>>(a1); /* gives h2's block back */
    CHECK(live(h2) == 0 && live(h1) == 1);
}

#ifdef RTM_HPP_EXCEPTIONS
void failures_throw()
{
    rtm::heap h("tlsf", pool_mem[2], 64 << 10);
    rtm::allocator<int> a(h);
    bool thrown = false;
    try {
        std::vector<int, rtm::allocator<int>> v(1 << 20, 0, a);
    } catch (const std::bad_alloc &) {
        thrown = true;
    }
    CHECK(thrown);
    thrown = false;
    try {
        a.allocate(a.max_size() + 1);
    } catch (const std::bad_alloc &) {
        thrown = true;
    }
    CHECK(thrown);
    CHECK(live(h) == 0);
}
#else
void exit_42()
{
    _exit(42);
}

/* Without exceptions: the handler runs, in a child (it ends the process). */
void failures_call_handler()
{
    pid_t pid = fork();
    if (pid == 0) {
        rtm::heap h("tlsf", pool_mem[2], 64 << 10);
        rtm::allocator<int> a(h);
        CHECK(rtm::set_failure_handler(exit_42) == nullptr);
        a.allocate(1 << 20);
        _exit(1);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42);
}
#endif

/* ---- rtm::memory_resource ------------------------------------------------- */

#ifdef RTM_HPP_HAVE_PMR
void pmr_containers()
{
    for (const std::string &k : kinds()) {
        rtm::heap h(k.c_str(), pool_mem[1], sizeof pool_mem[1]);
        rtm::memory_resource mr(h);
        CHECK(mr.get() == h.get());
        {
            std::pmr::vector<int> v(&mr);
            const int n = elements(h, sizeof(int), 5000);
            for (int i = 0; i < n; i++)
                v.push_back(i);
            std::pmr::map<int, std::pmr::string> m(&mr);
            for (int i = 0; i < 100; i++)
                m[i] = std::pmr::string(40, char('a' + i % 26)); /* past SSO: in the heap */
            CHECK(live(h) == 1 + 100 + 100);
            CHECK(v[n - 1] == n - 1 && m[99][0] == char('a' + 99 % 26));
        }
        CHECK(live(h) == 0);
        void *p = mr.allocate(100, 512); /* over-aligned */
        CHECK(reinterpret_cast<std::uintptr_t>(p) % 512 == 0 && h.usable_size(p) >= 100);
        mr.deallocate(p, 100, 512);
        CHECK(live(h) == 0);
        rtm::memory_resource other(h);
        CHECK(mr.is_equal(mr) && !mr.is_equal(other));
        CHECK(h.check() == 0);
    }
}

void pmr_upstream()
{
    rtm::heap h("tlsf", pool_mem[1], sizeof pool_mem[1]);
    rtm::memory_resource mr(h);
    {
        std::pmr::monotonic_buffer_resource mono(4096, &mr);
        std::pmr::vector<long> v(&mono);
        for (long i = 0; i < 10000; i++)
            v.push_back(i);
        CHECK(live(h) > 0);
        CHECK(v[9999] == 9999);
    }
    CHECK(live(h) == 0);
    {
        std::pmr::unsynchronized_pool_resource pool(&mr);
        std::pmr::list<int> l(&pool);
        for (int i = 0; i < 1000; i++)
            l.push_back(i);
        CHECK(live(h) > 0 && l.back() == 999);
    }
    CHECK(live(h) == 0);
#ifdef RTM_HPP_EXCEPTIONS
    rtm::heap small("tlsf", pool_mem[2], 64 << 10);
    rtm::memory_resource smr(small);
    bool thrown = false;
    try {
        void *p = smr.allocate(1 << 20);
        (void)p;
    } catch (const std::bad_alloc &) {
        thrown = true;
    }
    CHECK(thrown);
#endif
}
#endif

/* ---- rtm::offset_ptr -------------------------------------------------------- */

void offset_ptr_arithmetic()
{
    int a[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    rtm::offset_ptr<int> p(a), q;
    CHECK(!q && q == nullptr && q.get() == nullptr);
    CHECK(p && p.get() == a && *p == 0 && p[3] == 3);
    q = p + 5;
    CHECK(*q == 5 && q - p == 5 && p < q && q > p && p <= p && q >= p && p != q);
    ++q;
    q--;
    q -= 2;
    CHECK(q.get() == a + 3);
    /* a copy somewhere else still points to the same object */
    unsigned char place[2 * sizeof(rtm::offset_ptr<int>)];
    auto *moved = ::new (place + sizeof(rtm::offset_ptr<int>)) rtm::offset_ptr<int>(q);
    CHECK(moved->get() == a + 3);
    rtm::offset_ptr<const int> c(q);
    CHECK(c == q && *c == 3);
    rtm::offset_ptr<void> vp(q);
    CHECK(vp.get() == static_cast<void *>(a + 3));
    CHECK(rtm::offset_ptr<int>::pointer_to(a[6]).get() == a + 6);
    std::vector<int> seen(p, p + 8); /* a random-access iterator */
    CHECK(seen.size() == 8 && seen[7] == 7);
    rtm::offset_ptr<void> vq(p + 2);
    rtm::offset_ptr<int> back(vq); /* static_cast from void_pointer */
    CHECK(back.get() == a + 2);
    q = nullptr;
    CHECK(!q);
}

/* ---- rtm::shared_allocator in a shared heap: a vector and a deque ------------ */

using shared_vec = std::vector<int, rtm::shared_allocator<int>>;
using shared_deque = std::deque<int, rtm::shared_allocator<int>>;

/* A shared heap of this test's own (its name carries the pid), unlinked at
 * the end of the scope; one that cannot be made fails the case. */
struct scratch_shared {
    char name[64];
    rtm::heap h;
    explicit scratch_shared(const char *what, std::size_t size)
    {
        std::snprintf(name, sizeof name, "rtmem-hpp-%s-%d", what, static_cast<int>(getpid()));
        rtm_shared_unlink(name); /* left by a killed run of this test */
        h = rtm::heap::create_shared(name, "tlsf", size);
        if (!h)
            std::fprintf(stderr, "shared heap %s: %s\n", name, std::strerror(h.error()));
        CHECK(h); /* a case that did not run is a failure, not a pass */
    }
    ~scratch_shared() { rtm_shared_unlink(name); }
};

/* The child: attaches (a second mapping, at another address than the
 * parent's), finds the vector, checks it, grows it. Exit status 0 when all
 * of that held. */
int shared_child(const char *name, void *parent_base, rtm_shared *inherited)
{
    rtm::heap h = rtm::heap::attach_shared(name);
    if (!h)
        return 10;
    /* The view fork gave this process goes: only this process's own
     * mapping, at another address, is left to reach the containers by. */
    if (rtm_shared_detach(inherited) != 0)
        return 16;
    rtm_shared_info_t info{};
    rtm_shared_get_info(h.shared(), &info);
    if (info.base == parent_base)
        return 11;
    auto *v = static_cast<shared_vec *>(rtm_shared_lookup(h.shared(), "numbers"));
    if (!v || v->size() != 1000)
        return 12;
    for (int i = 0; i < 1000; i++)
        if ((*v)[i] != i)
            return 13;
    for (int i = 1000; i < 5000; i++)
        v->push_back(i); /* reallocates in the shared heap, from this mapping */
    auto *d = static_cast<shared_deque *>(rtm_shared_lookup(h.shared(), "deque"));
    if (!d || d->size() != 1000 || d->front() != -999)
        return 14;
    for (int i = 0; i < 1000; i++)
        d->push_back(i); /* new chunks and a new map, from this mapping */
    return h.check() == 0 ? 0 : 15;
}

void shared_vector_across_processes()
{
    scratch_shared seg("vector", 4 << 20);
    rtm::heap &h = seg.h;
    const char *name = seg.name;
    if (!h)
        return;
    std::size_t before = live(h);
    shared_vec *v = h.make<shared_vec>(rtm::shared_allocator<int>(h));
    CHECK(v != nullptr);
    for (int i = 0; i < 1000; i++)
        v->push_back(i);
    CHECK(rtm_shared_publish(h.shared(), "numbers", v) == 0);
    shared_deque *d = h.make<shared_deque>(rtm::shared_allocator<int>(h));
    CHECK(d != nullptr);
    for (int i = 0; i < 1000; i++)
        d->push_front(-i);
    CHECK(rtm_shared_publish(h.shared(), "deque", d) == 0);
    rtm_shared_info_t info{};
    rtm_shared_get_info(h.shared(), &info);
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0)
        _exit(shared_child(name, info.base, h.shared()));
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(v->size() == 5000);
    bool in_order = true;
    for (int i = 0; i < 5000; i++)
        in_order = in_order && (*v)[i] == i;
    CHECK(in_order);
    char *data = reinterpret_cast<char *>(v->data());
    CHECK(data > static_cast<char *>(info.base) &&
          data < static_cast<char *>(info.base) + info.size_bytes);
    CHECK(h.check() == 0);
    long sum = 0;
    for (int x : *d)
        sum += x;
    CHECK(d->size() == 2000 && d->front() == -999 && d->back() == 999 && sum == 0);
    CHECK(rtm_shared_unpublish(h.shared(), "numbers") == 0);
    CHECK(rtm_shared_unpublish(h.shared(), "deque") == 0);
    CHECK(h.destroy(v) == 0);
    CHECK(h.destroy(d) == 0);
    CHECK(live(h) == before);
}

#ifdef RTM_HPP_HAVE_PMR
/* A pmr vector in a shared heap, with its resource there too: right in a
 * forked child, which maps the segment at the parent's address and runs the
 * same executable (raw pointers and the resource's virtual table hold), and
 * only there (docs/cpp.md). */
void pmr_vector_across_fork()
{
    scratch_shared seg("pmr", 1 << 20);
    rtm::heap &h = seg.h;
    if (!h)
        return;
    auto *mr = h.make<rtm::memory_resource>(h.get());
    auto *v = h.make<std::pmr::vector<int>>(mr);
    CHECK(mr != nullptr && v != nullptr);
    v->assign(100, 7);
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 1000; i++)
            v->push_back(i); /* through the inherited mapping: the same address */
        _exit(v->size() == 1100 ? 0 : 1);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(v->size() == 1100 && (*v)[99] == 7 && v->back() == 999);
    CHECK(h.check() == 0);
    CHECK(h.destroy(v) == 0 && h.destroy(mr) == 0);
}
#endif

struct test_case {
    const char *name;
    void (*fn)();
};

const test_case cases[] = {
    { "heap_owns_and_moves", heap_owns_and_moves },
    { "heap_make_destroy", heap_make_destroy },
    { "heap_on_arena", heap_on_arena },
    { "allocator_containers", allocator_containers },
    { "allocator_traits_and_equality", allocator_traits_and_equality },
#ifdef RTM_HPP_EXCEPTIONS
    { "failures_throw", failures_throw },
#else
    { "failures_call_handler", failures_call_handler },
#endif
#ifdef RTM_HPP_HAVE_PMR
    { "pmr_containers", pmr_containers },
    { "pmr_upstream", pmr_upstream },
    { "pmr_vector_across_fork", pmr_vector_across_fork },
#endif
    { "offset_ptr_arithmetic", offset_ptr_arithmetic },
    { "shared_vector_across_processes", shared_vector_across_processes },
};

} // namespace

int main(int argc, char **argv)
{
    int ran = 0;
    for (const test_case &c : cases) {
        if (argc > 1 && std::strcmp(argv[1], c.name) != 0)
            continue;
        int before = failures;
        c.fn();
        std::printf("%s %s\n", failures == before ? "ok  " : "FAIL", c.name);
        ran++;
    }
    if (ran == 0) {
        std::fprintf(stderr, "hpp_test: no case %s\n", argc > 1 ? argv[1] : "");
        return 2;
    }
    std::printf("%d cases, %d failed checks (C++ %ld%s%s)\n", ran, failures, __cplusplus,
#ifdef RTM_HPP_HAVE_PMR
                ", pmr",
#else
                "",
#endif
#ifdef RTM_HPP_EXCEPTIONS
                ", exceptions");
#else
                ", no exceptions");
#endif
    return failures == 0 ? 0 : 1;
}
