/*
 * rtmem for C++: RAII over the C API, a std::pmr::memory_resource, an STL
 * allocator, and self-relative pointers for containers in a shared heap.
 * Header-only; rtm::memory_resource needs C++17 (<memory_resource>), the
 * rest C++11. Link with librtmem as a C program would (rtmem::rtmem in
 * CMake, pkg-config rtmem). docs/cpp.md is the guide.
 *
 *   #include <rtmem/rtmem.hpp>
 *   alignas(64) static unsigned char buf[1 << 20];
 *   rtm::heap h("tlsf", buf, sizeof buf);   // h.get(): the struct rtm_heap *
 *   rtm::memory_resource mr(h);             // C++17
 *   std::pmr::vector<int> v(&mr);
 *   rtm::allocator<int> a(h);               // C++11
 *   std::vector<int, rtm::allocator<int>> w(a);
 *
 * Errors. Nothing here throws but an allocation that fails where the C++
 * contract has no other way to say so: rtm::memory_resource::allocate and
 * rtm::allocator<T>::allocate (and so a container's growth) throw
 * std::bad_alloc. Built without exceptions (-fno-exceptions), they call the
 * handler set with rtm::set_failure_handler instead, and std::terminate
 * after it, or at once when none is set. Everything else returns what the
 * C call returns (NULL, a negative errno), and a heap that could not be
 * made is false, with rtm::heap::error() saying why.
 *
 * Time. Every member is the C call it wraps (its bound is in
 * rtmem/heap.h), plus O(1). The constructors that open an arena or a
 * shared segment are start-up calls, as their C functions are.
 *
 * Threads. A heap is as thread-safe as its C heap: created with a lock
 * (rtm_heap_config.lock, or shared), every call is; without, one thread at
 * a time. The allocators and the resource hold the heap's address only.
 */
#ifndef RTMEM_RTMEM_HPP
#define RTMEM_RTMEM_HPP

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "rtmem/rtmem.h"

#if __cplusplus >= 201703L && defined(__has_include)
#if __has_include(<memory_resource>)
#include <memory_resource>
#define RTM_HPP_HAVE_PMR 1
#endif
#endif

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define RTM_HPP_EXCEPTIONS 1
#endif

namespace rtm {

/* What an allocation that fails calls when exceptions are off. It must not
 * return (std::terminate is called if it does). */
using failure_handler = void (*)();

namespace detail {
inline failure_handler &handler_slot() noexcept
{
    static failure_handler slot = nullptr;
    return slot;
}

/* A failed allocation, where C++ expects no NULL: throws std::bad_alloc,
 * or, without exceptions, calls the handler and then std::terminate. */
[[noreturn]] inline void allocation_failed()
{
#ifdef RTM_HPP_EXCEPTIONS
    throw std::bad_alloc();
#else
    if (failure_handler f = handler_slot())
        f();
    std::terminate();
#endif
}

/* n bytes aligned to align: the plain call where the heap's own alignment
 * covers it, the aligned call above. NULL when nothing fits. */
inline void *alloc_aligned(rtm_heap *h, std::size_t n, std::size_t align) noexcept
{
    return align <= RTM_HEAP_MIN_ALIGN ? rtm_heap_alloc(h, n) : rtm_heap_aligned_alloc(h, align, n);
}

/* The most objects of size t that a request can name without its byte
 * count overflowing what a pointer difference holds. */
constexpr std::size_t max_objects(std::size_t t) noexcept
{
    return static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()) / t;
}

/* An allocator's allocate: n objects of T from h, or allocation_failed. */
template <class T> T *allocate_objects(rtm_heap *h, std::size_t n)
{
    if (n > max_objects(sizeof(T)))
        allocation_failed();
    void *p = alloc_aligned(h, n * sizeof(T), alignof(T));
    if (!p)
        allocation_failed();
    return static_cast<T *>(p);
}
} // namespace detail

/* Sets the handler of failed allocations in builds without exceptions;
 * returns the previous one (nullptr: std::terminate alone). Not
 * thread-safe: set it at start-up. */
inline failure_handler set_failure_handler(failure_handler f) noexcept
{
    failure_handler old = detail::handler_slot();
    detail::handler_slot() = f;
    return old;
}

/*
 * A heap, owned: destroyed (or, shared, detached) when the object ends.
 * Move-only. Made on the caller's memory, on an arena it opens, or by
 * creating or attaching a shared heap. A heap that could not be made is
 * false; error() gives the errno of the C call.
 */
class heap {
public:
    heap() noexcept = default;

    /* rtm_heap_create_ex(kind, mem, size, cfg): the memory stays the
     * caller's and must outlive the heap. */
    heap(const char *kind, void *mem, std::size_t size,
         const rtm_heap_config_t *cfg = nullptr) noexcept
    {
        h_ = rtm_heap_create_ex(kind, mem, size, cfg);
        err_ = h_ ? 0 : errno;
        own_ = h_ ? owns::created : owns::none;
    }

    /* A heap of kind over an arena this object opens (rtm_arena_open with
     * acfg, then rtm_arena_heap): closed with the heap. On failure the
     * arena's message is lost; use the C calls to read it. */
    static heap on_arena(const char *kind, const rtm_arena_config_t &acfg,
                         const rtm_heap_config_t *cfg = nullptr) noexcept
    {
        heap out;
        rtm_arena *a = new (std::nothrow) rtm_arena();
        if (!a) {
            out.err_ = ENOMEM;
            return out;
        }
        int rc = rtm_arena_open(a, &acfg);
        if (rc != 0) {
            delete a;
            out.err_ = -rc;
            return out;
        }
        out.h_ = rtm_arena_heap(a, kind, cfg);
        if (!out.h_) {
            out.err_ = errno;
            rtm_arena_close(a);
            delete a;
            return out;
        }
        out.arena_ = a;
        out.own_ = owns::arena;
        return out;
    }

    /* rtm_shared_create_ex: creates the shared heap `name` and attaches to
     * it. The object detaches at its end; the name lives on until
     * rtm_shared_unlink. */
    static heap create_shared(const char *name, const char *kind, std::size_t size,
                              const rtm_shared_config_t *cfg = nullptr) noexcept
    {
        return from_shared(rtm_shared_create_ex(name, kind, size, cfg));
    }

    /* rtm_shared_attach_ex: attaches to the shared heap `name`, wherever
     * the kernel maps it. */
    static heap attach_shared(const char *name, const rtm_shared_config_t *cfg = nullptr) noexcept
    {
        return from_shared(rtm_shared_attach_ex(name, cfg));
    }

    heap(heap &&o) noexcept { take(o); }
    heap &operator=(heap &&o) noexcept
    {
        if (this != &o) {
            reset();
            take(o);
        }
        return *this;
    }
    heap(const heap &) = delete;
    heap &operator=(const heap &) = delete;
    ~heap() { reset(); }

    /* Ends the heap now (destroy, close the arena or detach); the object is
     * then false with error() 0. */
    void reset() noexcept
    {
        switch (own_) {
        case owns::created:
            rtm_heap_destroy(h_);
            break;
        case owns::arena:
            rtm_heap_destroy(h_);
            rtm_arena_close(arena_);
            delete arena_;
            break;
        case owns::shared:
            rtm_shared_detach(shared_);
            break;
        case owns::none:
            break;
        }
        h_ = nullptr;
        arena_ = nullptr;
        shared_ = nullptr;
        own_ = owns::none;
        err_ = 0;
    }

    rtm_heap *get() const noexcept { return h_; }
    explicit operator bool() const noexcept { return h_ != nullptr; }
    /* Why the heap could not be made (an errno value); 0 for a heap. */
    int error() const noexcept { return err_; }
    /* The shared segment's handle (publish, lookup, offsets), or nullptr. */
    rtm_shared *shared() const noexcept { return shared_; }
    /* The arena the heap lies in (its report: locked, huge pages), or nullptr. */
    const rtm_arena *arena() const noexcept { return arena_; }

    void *alloc(std::size_t n) noexcept { return rtm_heap_alloc(h_, n); }
    void *aligned_alloc(std::size_t align, std::size_t n) noexcept
    {
        return rtm_heap_aligned_alloc(h_, align, n);
    }
    void *calloc(std::size_t n, std::size_t size) noexcept { return rtm_heap_calloc(h_, n, size); }
    void *realloc(void *p, std::size_t n) noexcept { return rtm_heap_realloc(h_, p, n); }
    int free(void *p) noexcept { return rtm_heap_free(h_, p); }
    std::size_t usable_size(const void *p) const noexcept { return rtm_heap_usable_size(h_, p); }
    int add_pool(void *mem, std::size_t size) noexcept { return rtm_heap_add_pool(h_, mem, size); }
    int check() const noexcept { return rtm_heap_check(h_); }
    int stats(rtm_heap_stats_t &out) const noexcept { return rtm_heap_stats(h_, &out); }
    /* The statistics by value (all zero when the call fails). */
    rtm_heap_stats_t stats() const noexcept
    {
        rtm_heap_stats_t st{};
        if (rtm_heap_stats(h_, &st) != 0)
            st = rtm_heap_stats_t{};
        return st;
    }
    const char *kind() const noexcept { return rtm_heap_kind(h_); }
    int hardening() const noexcept { return rtm_heap_hardening(h_); }
    std::size_t fill_count(std::size_t size) const noexcept { return rtm_heap_fill_count(h_, size); }
    int set_corruption_handler(rtm_heap_corruption_fn fn, void *arg) noexcept
    {
        return rtm_heap_set_corruption_handler(h_, fn, arg);
    }
    int lock_type() const noexcept { return rtm_heap_lock_type(h_); }
    int lock_stats(rtm_heap_lock_stats_t &out) const noexcept
    {
        return rtm_heap_lock_stats(h_, &out);
    }
    int set_lock_timeout(std::uint32_t timeout_us) noexcept
    {
        return rtm_heap_set_lock_timeout(h_, timeout_us);
    }
    /* rtm_heap_pool_bound_ex: the region a kind needs for these limits. */
    static std::size_t pool_bound(const char *kind, const rtm_heap_limits_t &lim) noexcept
    {
        return rtm_heap_pool_bound_ex(kind, &lim);
    }

    /* Constructs a T in a block of this heap; nullptr when nothing fits
     * (a constructor that throws frees the block and the exception goes
     * on). */
    template <class T, class... Args> T *make(Args &&...args)
    {
        void *p = detail::alloc_aligned(h_, sizeof(T), alignof(T));
        if (!p)
            return nullptr;
#ifdef RTM_HPP_EXCEPTIONS
        try {
            return ::new (p) T(std::forward<Args>(args)...);
        } catch (...) {
            rtm_heap_free(h_, p);
            throw;
        }
#else
        return ::new (p) T(std::forward<Args>(args)...);
#endif
    }

    /* Destroys what make made and frees its block (nullptr: nothing). p must
     * be the pointer make returned, of the type it was made as (not a
     * base class's pointer into the object). */
    template <class T> int destroy(T *p) noexcept
    {
        if (!p)
            return 0;
        p->~T();
        return rtm_heap_free(h_, p);
    }

private:
    enum class owns { none, created, arena, shared };

    static heap from_shared(rtm_shared *s) noexcept
    {
        heap out;
        if (!s) {
            out.err_ = errno;
            return out;
        }
        out.shared_ = s;
        out.h_ = rtm_shared_heap(s);
        out.own_ = owns::shared;
        return out;
    }

    void take(heap &o) noexcept
    {
        h_ = o.h_;
        arena_ = o.arena_;
        shared_ = o.shared_;
        own_ = o.own_;
        err_ = o.err_;
        o.h_ = nullptr;
        o.arena_ = nullptr;
        o.shared_ = nullptr;
        o.own_ = owns::none;
        o.err_ = 0;
    }

    rtm_heap *h_ = nullptr;
    rtm_arena *arena_ = nullptr;
    rtm_shared *shared_ = nullptr;
    owns own_ = owns::none;
    int err_ = 0;
};

#ifdef RTM_HPP_HAVE_PMR
/*
 * A std::pmr::memory_resource over a heap (C++17). allocate honours the
 * alignment asked (the aligned call above RTM_HEAP_MIN_ALIGN) and throws
 * std::bad_alloc when nothing fits (see "Errors"); deallocate frees; two
 * resources are equal only when they are the same object. The heap must
 * outlive the resource and everything allocated from it. It can be the
 * upstream of std::pmr::monotonic_buffer_resource or
 * unsynchronized_pool_resource, which then take their chunks from the heap.
 */
class memory_resource : public std::pmr::memory_resource {
public:
    explicit memory_resource(heap &h) noexcept : h_(h.get()) {}
    explicit memory_resource(rtm_heap *h) noexcept : h_(h) {}
    rtm_heap *get() const noexcept { return h_; }

private:
    void *do_allocate(std::size_t bytes, std::size_t align) override
    {
        void *p = detail::alloc_aligned(h_, bytes, align);
        if (!p)
            detail::allocation_failed();
        return p;
    }
    void do_deallocate(void *p, std::size_t, std::size_t) override { rtm_heap_free(h_, p); }
    bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override
    {
        return this == &o;
    }

    rtm_heap *h_;
};
#endif

/*
 * An STL allocator over a heap (C++11): std::vector<T, rtm::allocator<T>>,
 * std::map<K, V, std::less<K>, rtm::allocator<std::pair<const K, V>>>.
 * Copies and rebinds share the heap; two allocators are equal when their
 * heaps are the same, and a container's allocator follows it on copy
 * assignment, move assignment and swap (so that no block is ever freed to
 * a heap it does not come from). Alignments above RTM_HEAP_MIN_ALIGN are
 * honoured. The heap must outlive every container using it.
 */
template <class T> class allocator {
public:
    using value_type = T;
    using size_type = std::size_t;
    using difference_type = std::ptrdiff_t;
    using propagate_on_container_copy_assignment = std::true_type;
    using propagate_on_container_move_assignment = std::true_type;
    using propagate_on_container_swap = std::true_type;
    using is_always_equal = std::false_type;
    template <class U> struct rebind {
        using other = allocator<U>;
    };

    allocator(heap &h) noexcept : h_(h.get()) {} /* implicit: a heap is its allocator */
    explicit allocator(rtm_heap *h) noexcept : h_(h) {}
    template <class U> allocator(const allocator<U> &o) noexcept : h_(o.get()) {}

    T *allocate(std::size_t n) { return detail::allocate_objects<T>(h_, n); }
    void deallocate(T *p, std::size_t) noexcept { rtm_heap_free(h_, p); }
    /* The most objects one request can name (PTRDIFF_MAX bytes): the heap
     * itself may hold far fewer; allocate then fails as above. */
    std::size_t max_size() const noexcept { return detail::max_objects(sizeof(T)); }
    rtm_heap *get() const noexcept { return h_; }

private:
    rtm_heap *h_;
};

template <class T, class U>
bool operator==(const allocator<T> &a, const allocator<U> &b) noexcept
{
    return a.get() == b.get();
}
template <class T, class U>
bool operator!=(const allocator<T> &a, const allocator<U> &b) noexcept
{
    return a.get() != b.get();
}

/*
 * A self-relative pointer: it holds the distance from its own address to
 * its target, so that an offset_ptr inside a shared segment and pointing
 * into it is right in every process, wherever each maps the segment.
 * Copying one into another place recomputes the distance. It points only
 * within one mapping: an offset_ptr in shared memory to a process's stack
 * or heap is meaningless in any other process. Null is a distance of 1: a
 * target one byte past the pointer itself cannot be held (it reads as
 * null), and memory that was zeroed but never constructed as an
 * offset_ptr reads as a pointer to itself, not as null. A random-access
 * iterator, usable as an allocator's `pointer` (rtm::shared_allocator).
 */
template <class T> class offset_ptr {
    struct no_ref {};
    using ref_t = typename std::conditional<std::is_void<T>::value, no_ref,
                                            typename std::add_lvalue_reference<T>::type>::type;

public:
    using element_type = T;
    using value_type = typename std::remove_cv<T>::type;
    using difference_type = std::ptrdiff_t;
    using pointer = offset_ptr;
    using reference = ref_t;
    using iterator_category = std::random_access_iterator_tag;

    offset_ptr() noexcept = default;
    offset_ptr(std::nullptr_t) noexcept {}
    offset_ptr(T *p) noexcept { set(p); }
    offset_ptr(const offset_ptr &o) noexcept { set(o.get()); }
    /* From a pointer to a derived or less qualified type (and any to void). */
    template <class U, class = typename std::enable_if<std::is_convertible<U *, T *>::value>::type>
    offset_ptr(const offset_ptr<U> &o) noexcept
    {
        set(o.get());
    }
    /* Explicit, where static_cast<T *>(U *) is (from offset_ptr<void>, to
     * a derived class): the allocator requirements' static_cast. */
    template <class U, class = typename std::enable_if<!std::is_convertible<U *, T *>::value>::type,
              class = decltype(static_cast<T *>(std::declval<U *>()))>
    explicit offset_ptr(const offset_ptr<U> &o) noexcept
    {
        set(static_cast<T *>(o.get()));
    }
    offset_ptr &operator=(const offset_ptr &o) noexcept
    {
        set(o.get());
        return *this;
    }
    offset_ptr &operator=(T *p) noexcept
    {
        set(p);
        return *this;
    }
    offset_ptr &operator=(std::nullptr_t) noexcept
    {
        off_ = 1;
        return *this;
    }

    T *get() const noexcept
    {
        return off_ == 1 ? nullptr
                         : reinterpret_cast<T *>(reinterpret_cast<std::uintptr_t>(this) +
                                                 static_cast<std::uintptr_t>(off_));
    }
    explicit operator bool() const noexcept { return off_ != 1; }
    ref_t operator*() const noexcept { return *get(); }
    T *operator->() const noexcept { return get(); }
    ref_t operator[](std::ptrdiff_t i) const noexcept { return get()[i]; }

    /* For std::pointer_traits: a pointer to r. */
    static offset_ptr pointer_to(ref_t r) noexcept { return offset_ptr(std::addressof(r)); }

    offset_ptr &operator+=(std::ptrdiff_t n) noexcept
    {
        set(get() + n);
        return *this;
    }
    offset_ptr &operator-=(std::ptrdiff_t n) noexcept
    {
        set(get() - n);
        return *this;
    }
    offset_ptr &operator++() noexcept { return *this += 1; }
    offset_ptr &operator--() noexcept { return *this -= 1; }
    offset_ptr operator++(int) noexcept
    {
        offset_ptr old(*this);
        ++*this;
        return old;
    }
    offset_ptr operator--(int) noexcept
    {
        offset_ptr old(*this);
        --*this;
        return old;
    }
    friend offset_ptr operator+(const offset_ptr &p, std::ptrdiff_t n) noexcept
    {
        return offset_ptr(p.get() + n);
    }
    friend offset_ptr operator+(std::ptrdiff_t n, const offset_ptr &p) noexcept
    {
        return offset_ptr(p.get() + n);
    }
    friend offset_ptr operator-(const offset_ptr &p, std::ptrdiff_t n) noexcept
    {
        return offset_ptr(p.get() - n);
    }
    friend std::ptrdiff_t operator-(const offset_ptr &a, const offset_ptr &b) noexcept
    {
        return a.get() - b.get();
    }

private:
    void set(T *p) noexcept
    {
        off_ = p ? static_cast<std::ptrdiff_t>(reinterpret_cast<std::uintptr_t>(p) -
                                               reinterpret_cast<std::uintptr_t>(this))
                 : 1;
    }

    std::ptrdiff_t off_ = 1;
};

template <class T, class U> bool operator==(const offset_ptr<T> &a, const offset_ptr<U> &b) noexcept
{
    return a.get() == b.get();
}
template <class T, class U> bool operator!=(const offset_ptr<T> &a, const offset_ptr<U> &b) noexcept
{
    return a.get() != b.get();
}
template <class T, class U> bool operator<(const offset_ptr<T> &a, const offset_ptr<U> &b) noexcept
{
    return std::less<const volatile void *>()(a.get(), b.get());
}
template <class T, class U> bool operator>(const offset_ptr<T> &a, const offset_ptr<U> &b) noexcept
{
    return b < a;
}
template <class T, class U> bool operator<=(const offset_ptr<T> &a, const offset_ptr<U> &b) noexcept
{
    return !(b < a);
}
template <class T, class U> bool operator>=(const offset_ptr<T> &a, const offset_ptr<U> &b) noexcept
{
    return !(a < b);
}
template <class T> bool operator==(const offset_ptr<T> &a, std::nullptr_t) noexcept { return !a; }
template <class T> bool operator==(std::nullptr_t, const offset_ptr<T> &a) noexcept { return !a; }
template <class T> bool operator!=(const offset_ptr<T> &a, std::nullptr_t) noexcept
{
    return static_cast<bool>(a);
}
template <class T> bool operator!=(std::nullptr_t, const offset_ptr<T> &a) noexcept
{
    return static_cast<bool>(a);
}

/*
 * An allocator for containers that live in a shared heap and are used by
 * every process attached, each mapping it at its own address: its pointer
 * type is offset_ptr, and it finds its heap through an offset_ptr too.
 * Place the container itself in the heap (heap::make) and publish it
 * (rtm_shared_publish); another process looks it up (rtm_shared_lookup).
 * Works with the containers whose standard library keeps the allocator's
 * pointer type inside them: std::vector and std::deque with libstdc++
 * (tested); not node containers (list, map: libstdc++ keeps raw pointers
 * in their nodes), strings or std::pmr (docs/cpp.md). The heap's lock serialises
 * the allocations; the container itself needs a lock of its own when
 * processes use it at the same time.
 */
template <class T> class shared_allocator {
public:
    using value_type = T;
    using pointer = offset_ptr<T>;
    using const_pointer = offset_ptr<const T>;
    using void_pointer = offset_ptr<void>;
    using const_void_pointer = offset_ptr<const void>;
    using size_type = std::size_t;
    using difference_type = std::ptrdiff_t;
    using propagate_on_container_copy_assignment = std::true_type;
    using propagate_on_container_move_assignment = std::true_type;
    using propagate_on_container_swap = std::true_type;
    using is_always_equal = std::false_type;
    template <class U> struct rebind {
        using other = shared_allocator<U>;
    };

    /* h: a heap inside the segment the allocator will be stored in
     * (rtm_shared_heap, or heap::get of a shared heap). */
    explicit shared_allocator(rtm_heap *h) noexcept : h_(h) {}
    shared_allocator(const heap &h) noexcept : h_(h.get()) {}
    shared_allocator(const shared_allocator &o) noexcept : h_(o.get()) {}
    template <class U> shared_allocator(const shared_allocator<U> &o) noexcept : h_(o.get()) {}
    shared_allocator &operator=(const shared_allocator &o) noexcept
    {
        h_ = o.get();
        return *this;
    }

    pointer allocate(std::size_t n) { return pointer(detail::allocate_objects<T>(h_.get(), n)); }
    void deallocate(pointer p, std::size_t) noexcept { rtm_heap_free(h_.get(), p.get()); }
    std::size_t max_size() const noexcept { return detail::max_objects(sizeof(T)); }
    rtm_heap *get() const noexcept { return h_.get(); }

private:
    offset_ptr<rtm_heap> h_;
};

template <class T, class U>
bool operator==(const shared_allocator<T> &a, const shared_allocator<U> &b) noexcept
{
    return a.get() == b.get();
}
template <class T, class U>
bool operator!=(const shared_allocator<T> &a, const shared_allocator<U> &b) noexcept
{
    return a.get() != b.get();
}

} // namespace rtm

#endif /* RTMEM_RTMEM_HPP */
