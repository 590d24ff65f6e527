//! Deterministic heaps for real-time Rust, over rtmem's C library.
//!
//! A real-time loop cannot call the system allocator: its time is unbounded,
//! it faults pages in and it fragments. rtmem's heaps take memory reserved up
//! front (a static buffer, or an arena locked in RAM) and serve every call in
//! bounded time: TLSF and half-fit in O(1), Xenomai's heapmem and xnheap.
//!
//! - [`Heap`]: a heap with a priority-inheritance lock (`Send + Sync`), on a
//!   `&'static mut [u8]`, on a locked arena, or shared between processes;
//!   [`LocalHeap`]: the same without a lock, for one thread at a time.
//! - Both implement `allocator_api2::alloc::Allocator` (by reference), for
//!   collections on stable Rust: `allocator_api2::vec::Vec::new_in(&heap)`.
//! - [`GlobalHeap`]: `#[global_allocator]` on a locked arena, opened at the
//!   first allocation (or by [`GlobalHeap::init`]).
//!
//! ```
//! use allocator_api2::vec::Vec;
//!
//! let mem: &'static mut [u8] = Box::leak(vec![0u8; 1 << 20].into_boxed_slice());
//! let heap = rtmem::Heap::new("tlsf", mem).unwrap();   // or "halffit", ...
//! let mut v = Vec::new_in(&heap);                        // allocator-api2's Vec
//! v.extend(0..1000u32);
//! assert_eq!(heap.stats().live_blocks, 1);               // O(1), as in C
//! ```
//!
//! Time: every call is the C call it wraps (bounds in `rtmem/heap.h` and
//! each kind's header) plus O(1); a locked heap adds its mutex. Opening an
//! arena or a shared heap is a start-up call: O(size) to fault and lock.
//! What this crate does not wrap (lock timeouts and statistics, the
//! corruption handler, add_pool, a shared heap's orphans): `rtmem::sys`
//! with `as_ptr()`.
use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ffi::{c_char, c_void, CStr};
use core::marker::PhantomData;
use core::mem::MaybeUninit;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicPtr, AtomicU8, Ordering};
use std::ffi::CString;
use std::fmt;

use allocator_api2::alloc::{AllocError, Allocator};
pub use rtmem_sys as sys;

/// The alignment every block has without asking (`RTM_HEAP_MIN_ALIGN`).
pub const MIN_ALIGN: usize = sys::RTM_HEAP_MIN_ALIGN;

/// An errno value from the C library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error(i32);

impl Error {
    pub fn errno(self) -> i32 {
        self.0
    }
    fn last() -> Error {
        Error(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
    fn from_rc(rc: i32) -> Result<(), Error> {
        if rc < 0 {
            Err(Error(-rc))
        } else {
            Ok(())
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", std::io::Error::from_raw_os_error(self.0))
    }
}

impl std::error::Error for Error {}

/// A heap's statistics (`struct rtm_heap_stats`): O(1) counters.
pub type Stats = sys::rtm_heap_stats;

/// What a heap checks before it trusts its metadata (rtmem/heap.h,
/// "Hardening"). `O1` is the default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Hardening {
    #[default]
    O1,
    None,
    /// O(1) checks, and a full check every `check_interval` operations.
    Full {
        check_interval: u32,
    },
}

/// How an arena's memory is locked in RAM (`RTM_ARENA_LOCK_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ArenaLock {
    None,
    /// Lock if the process may (root, CAP_IPC_LOCK or RLIMIT_MEMLOCK); go on
    /// unlocked otherwise ([`Heap::arena_report`] says which).
    #[default]
    Try,
    /// Fail when the memory cannot be locked.
    Must,
}

/// An arena for a heap: private anonymous memory, every page faulted in.
#[derive(Clone, Copy, Debug)]
pub struct ArenaOptions {
    pub size_bytes: usize,
    pub lock: ArenaLock,
    /// 0: base pages; else a huge page size (2 MiB, 1 GiB) from the
    /// hugetlb pool.
    pub huge_page_bytes: usize,
}

impl ArenaOptions {
    pub fn new(size_bytes: usize) -> Self {
        ArenaOptions {
            size_bytes,
            lock: ArenaLock::Try,
            huge_page_bytes: 0,
        }
    }
}

/// The names of the heap kinds the library has ("tlsf" first).
pub fn kinds() -> Vec<&'static str> {
    let mut out = Vec::new();
    unsafe {
        let mut k = sys::rtm_heap_kinds();
        while !(*k).is_null() {
            out.push(CStr::from_ptr(*k).to_str().unwrap_or("?"));
            k = k.add(1);
        }
    }
    out
}

fn c_name(s: &str) -> Result<CString, Error> {
    CString::new(s).map_err(|_| Error(libc_einval()))
}

const fn libc_einval() -> i32 {
    22
}

fn config(h: Hardening, lock: i32) -> sys::rtm_heap_config {
    let mut cfg = sys::rtm_heap_config {
        lock,
        ..Default::default()
    };
    match h {
        Hardening::O1 => cfg.hardening = sys::RTM_HEAP_HARDEN_O1,
        Hardening::None => cfg.hardening = sys::RTM_HEAP_HARDEN_NONE,
        Hardening::Full { check_interval } => {
            cfg.hardening = sys::RTM_HEAP_HARDEN_FULL;
            cfg.check_interval = check_interval;
        }
    }
    cfg
}

fn arena_config(o: &ArenaOptions) -> sys::rtm_arena_config {
    sys::rtm_arena_config {
        size_bytes: o.size_bytes,
        page_bytes: o.huge_page_bytes,
        prefault: sys::RTM_ARENA_PREFAULT_TOUCH,
        lock: match o.lock {
            ArenaLock::None => sys::RTM_ARENA_LOCK_NONE,
            ArenaLock::Try => sys::RTM_ARENA_LOCK_TRY,
            ArenaLock::Must => sys::RTM_ARENA_LOCK_MUST,
        },
        ..Default::default()
    }
}

/// A shared heap's mapping in this process: every page faulted in, locked
/// as asked.
fn shared_config(lock: ArenaLock) -> sys::rtm_shared_config {
    sys::rtm_shared_config {
        prefault: sys::RTM_ARENA_PREFAULT_TOUCH,
        lock: arena_config(&ArenaOptions {
            size_bytes: 0,
            lock,
            huge_page_bytes: 0,
        })
        .lock,
        ..Default::default()
    }
}

/// n bytes aligned to `align` from h: the plain call where the heap's own
/// alignment covers it.
unsafe fn alloc_layout(h: *mut sys::rtm_heap, layout: Layout) -> *mut u8 {
    let p = if layout.align() <= MIN_ALIGN {
        sys::rtm_heap_alloc(h, layout.size())
    } else {
        sys::rtm_heap_aligned_alloc(h, layout.align(), layout.size())
    };
    p.cast()
}

unsafe fn realloc_layout(h: *mut sys::rtm_heap, p: *mut u8, layout: Layout, new: usize) -> *mut u8 {
    if layout.align() <= MIN_ALIGN {
        return sys::rtm_heap_realloc(h, p.cast(), new).cast();
    }
    let Ok(to) = Layout::from_size_align(new, layout.align()) else {
        return ptr::null_mut(); // no such layout: the block stays as it was
    };
    let q = alloc_layout(h, to);
    if !q.is_null() {
        ptr::copy_nonoverlapping(p, q, layout.size().min(new));
        sys::rtm_heap_free(h, p.cast());
    }
    q
}

enum Backing {
    Memory,
    Arena(Box<MaybeUninit<sys::rtm_arena>>),
    Shared(NonNull<sys::rtm_shared>),
}

struct Raw {
    h: NonNull<sys::rtm_heap>,
    backing: Backing,
}

impl Raw {
    fn on_memory(
        kind: &str,
        mem: &'static mut [u8],
        cfg: &sys::rtm_heap_config,
    ) -> Result<Raw, Error> {
        let kind = c_name(kind)?;
        let h = unsafe {
            sys::rtm_heap_create_ex(kind.as_ptr(), mem.as_mut_ptr().cast(), mem.len(), cfg)
        };
        NonNull::new(h)
            .map(|h| Raw {
                h,
                backing: Backing::Memory,
            })
            .ok_or_else(Error::last)
    }

    fn on_arena(kind: &str, o: &ArenaOptions, cfg: &sys::rtm_heap_config) -> Result<Raw, Error> {
        let kind = c_name(kind)?;
        // Boxed: an open arena knows its own address and must not move.
        let mut arena: Box<MaybeUninit<sys::rtm_arena>> = Box::new(MaybeUninit::zeroed());
        let a = arena.as_mut_ptr();
        let acfg = arena_config(o);
        unsafe {
            Error::from_rc(sys::rtm_arena_open(a, &acfg))?;
            match NonNull::new(sys::rtm_arena_heap(a, kind.as_ptr(), cfg)) {
                Some(h) => Ok(Raw {
                    h,
                    backing: Backing::Arena(arena),
                }),
                None => {
                    let e = Error::last();
                    sys::rtm_arena_close(a);
                    Err(e)
                }
            }
        }
    }

    fn shared(s: *mut sys::rtm_shared) -> Result<Raw, Error> {
        let s = NonNull::new(s).ok_or_else(Error::last)?;
        let h = unsafe { sys::rtm_shared_heap(s.as_ptr()) };
        Ok(Raw {
            h: NonNull::new(h).expect("a shared heap's handle has a heap"),
            backing: Backing::Shared(s),
        })
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        unsafe {
            match &mut self.backing {
                Backing::Memory => sys::rtm_heap_destroy(self.h.as_ptr()),
                Backing::Arena(a) => {
                    sys::rtm_heap_destroy(self.h.as_ptr());
                    sys::rtm_arena_close(a.as_mut_ptr());
                }
                Backing::Shared(s) => {
                    sys::rtm_shared_detach(s.as_ptr());
                }
            }
        }
    }
}

/// What both heap types offer: the C calls on their heap.
macro_rules! heap_calls {
    () => {
        /// The kind's name ("tlsf", "halffit", ...).
        pub fn kind(&self) -> &'static str {
            unsafe {
                CStr::from_ptr(sys::rtm_heap_kind(self.as_ptr()))
                    .to_str()
                    .unwrap_or("?")
            }
        }

        /// The C heap, for the calls of `rtmem_sys`.
        pub fn as_ptr(&self) -> *mut sys::rtm_heap {
            self.raw.h.as_ptr()
        }

        /// A block for `layout` (its size and alignment), or None when
        /// nothing fits.
        pub fn alloc(&self, layout: Layout) -> Option<NonNull<u8>> {
            NonNull::new(unsafe { alloc_layout(self.as_ptr(), layout) })
        }

        /// Frees a block of this heap. Err(EFAULT) when the hardening
        /// checks found its metadata damaged (the block then stays);
        /// Err(EINVAL) for what is no live block.
        ///
        /// # Safety
        /// `p` came from this heap and is not used afterwards.
        pub unsafe fn free(&self, p: NonNull<u8>) -> Result<(), Error> {
            Error::from_rc(sys::rtm_heap_free(self.as_ptr(), p.as_ptr().cast()))
        }

        /// Resizes a block allocated for `layout` to `new_size` bytes (the
        /// same alignment); None leaves it as it was.
        ///
        /// # Safety
        /// `p` came from this heap with `layout`.
        pub unsafe fn realloc(
            &self,
            p: NonNull<u8>,
            layout: Layout,
            new_size: usize,
        ) -> Option<NonNull<u8>> {
            NonNull::new(realloc_layout(self.as_ptr(), p.as_ptr(), layout, new_size))
        }

        /// The bytes a live block can hold (at least what was asked).
        ///
        /// # Safety
        /// `p` is a live block of this heap.
        pub unsafe fn usable_size(&self, p: NonNull<u8>) -> usize {
            sys::rtm_heap_usable_size(self.as_ptr(), p.as_ptr().cast())
        }

        /// The heap's statistics. O(1).
        pub fn stats(&self) -> Stats {
            let mut st = Stats::default();
            unsafe { sys::rtm_heap_stats(self.as_ptr(), &mut st) };
            st
        }

        /// A full integrity check: O(heap), never in a control loop.
        pub fn check(&self) -> Result<(), Error> {
            Error::from_rc(unsafe { sys::rtm_heap_check(self.as_ptr()) })
        }

        /// How many blocks of `size` bytes the heap's free memory holds now.
        pub fn fill_count(&self, size: usize) -> usize {
            unsafe { sys::rtm_heap_fill_count(self.as_ptr(), size) }
        }

        /// The arena the heap lies in (locked? huge pages?), if it has one.
        pub fn arena_report(&self) -> Option<&sys::rtm_arena_report> {
            match &self.raw.backing {
                Backing::Arena(a) => Some(unsafe { &(*a.as_ptr()).report }),
                _ => None,
            }
        }
    };
}

/// A heap with a lock (priority inheritance; robust and process-shared for
/// a shared heap): every call may come from any thread.
pub struct Heap {
    raw: Raw,
}

unsafe impl Send for Heap {}
unsafe impl Sync for Heap {}

impl Heap {
    /// A heap of `kind` on `mem`, with a priority-inheritance lock and the
    /// default hardening.
    pub fn new(kind: &str, mem: &'static mut [u8]) -> Result<Heap, Error> {
        Heap::with_hardening(kind, mem, Hardening::O1)
    }

    pub fn with_hardening(kind: &str, mem: &'static mut [u8], h: Hardening) -> Result<Heap, Error> {
        Raw::on_memory(kind, mem, &config(h, sys::RTM_HEAP_LOCK_PI)).map(|raw| Heap { raw })
    }

    /// A heap of `kind` on an arena it opens (faulted in, locked as asked),
    /// closed with the heap.
    pub fn on_arena(kind: &str, arena: &ArenaOptions) -> Result<Heap, Error> {
        Raw::on_arena(kind, arena, &config(Hardening::O1, sys::RTM_HEAP_LOCK_PI))
            .map(|raw| Heap { raw })
    }

    /// Creates the shared heap `name` (rtm_shared_create_ex) and attaches
    /// to it, this process's mapping faulted in and locked as `lock` says.
    /// Dropping the Heap detaches; the name lives until [`Heap::unlink`].
    /// Other settings (mode, huge pages, lock timeout): `rtmem::sys`.
    pub fn create_shared(
        name: &str,
        kind: &str,
        size: usize,
        lock: ArenaLock,
    ) -> Result<Heap, Error> {
        let (n, k) = (c_name(name)?, c_name(kind)?);
        let cfg = shared_config(lock);
        Raw::shared(unsafe { sys::rtm_shared_create_ex(n.as_ptr(), k.as_ptr(), size, &cfg) })
            .map(|raw| Heap { raw })
    }

    /// Attaches to the shared heap `name`, wherever the kernel maps it,
    /// faulted in and locked as `lock` says.
    pub fn attach_shared(name: &str, lock: ArenaLock) -> Result<Heap, Error> {
        let n = c_name(name)?;
        let cfg = shared_config(lock);
        Raw::shared(unsafe { sys::rtm_shared_attach_ex(n.as_ptr(), &cfg) }).map(|raw| Heap { raw })
    }

    /// Removes a shared heap's name (rtm_shared_unlink).
    pub fn unlink(name: &str) -> Result<(), Error> {
        let n = c_name(name)?;
        Error::from_rc(unsafe { sys::rtm_shared_unlink(n.as_ptr()) })
    }

    /// A shared heap's handle, for the rtm_shared_* calls; None otherwise.
    pub fn shared(&self) -> Option<*mut sys::rtm_shared> {
        match self.raw.backing {
            Backing::Shared(s) => Some(s.as_ptr()),
            _ => None,
        }
    }

    /// Publishes `p` (inside the shared segment) under `name`.
    pub fn publish(&self, name: &str, p: *const u8) -> Result<(), Error> {
        let s = self.shared().ok_or(Error(libc_einval()))?;
        let n = c_name(name)?;
        Error::from_rc(unsafe { sys::rtm_shared_publish(s, n.as_ptr(), p.cast()) })
    }

    /// The address in this process of what is published under `name`.
    pub fn lookup(&self, name: &str) -> Result<NonNull<u8>, Error> {
        let s = self.shared().ok_or(Error(libc_einval()))?;
        let n = c_name(name)?;
        NonNull::new(unsafe { sys::rtm_shared_lookup(s, n.as_ptr()) }.cast())
            .ok_or_else(Error::last)
    }

    /// Where this process maps the shared segment, and its size.
    pub fn shared_mapping(&self) -> Option<(*mut u8, usize)> {
        let s = self.shared()?;
        let mut info = MaybeUninit::<sys::rtm_shared_info>::zeroed();
        unsafe {
            sys::rtm_shared_get_info(s, info.as_mut_ptr());
            let info = info.assume_init();
            Some((info.base.cast(), info.size_bytes))
        }
    }

    heap_calls!();
}

/// A heap without a lock: one thread at a time (`Send`, not `Sync`).
pub struct LocalHeap {
    raw: Raw,
    _not_sync: PhantomData<core::cell::Cell<()>>,
}

unsafe impl Send for LocalHeap {}

impl LocalHeap {
    pub fn new(kind: &str, mem: &'static mut [u8]) -> Result<LocalHeap, Error> {
        LocalHeap::with_hardening(kind, mem, Hardening::O1)
    }

    pub fn with_hardening(
        kind: &str,
        mem: &'static mut [u8],
        h: Hardening,
    ) -> Result<LocalHeap, Error> {
        Raw::on_memory(kind, mem, &config(h, sys::RTM_HEAP_LOCK_NONE)).map(|raw| LocalHeap {
            raw,
            _not_sync: PhantomData,
        })
    }

    pub fn on_arena(kind: &str, arena: &ArenaOptions) -> Result<LocalHeap, Error> {
        Raw::on_arena(kind, arena, &config(Hardening::O1, sys::RTM_HEAP_LOCK_NONE)).map(|raw| {
            LocalHeap {
                raw,
                _not_sync: PhantomData,
            }
        })
    }

    heap_calls!();
}

/// Allocator::grow and shrink: the C realloc where the alignment stays,
/// else a new block, the first min(old, new) bytes copied, the old freed.
unsafe fn resize<A: Allocator>(
    a: A,
    h: *mut sys::rtm_heap,
    p: NonNull<u8>,
    old: Layout,
    new: Layout,
) -> Result<NonNull<[u8]>, AllocError> {
    let q = if new.align() == old.align() {
        NonNull::new(realloc_layout(h, p.as_ptr(), old, new.size())).ok_or(AllocError)?
    } else {
        let q = a.allocate(new)?.cast::<u8>();
        ptr::copy_nonoverlapping(p.as_ptr(), q.as_ptr(), old.size().min(new.size()));
        a.deallocate(p, old);
        q
    };
    Ok(NonNull::slice_from_raw_parts(q, new.size()))
}

macro_rules! allocator_impls {
    ($t:ty) => {
        unsafe impl Allocator for &$t {
            fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
                let p = (**self).alloc(layout).ok_or(AllocError)?;
                Ok(NonNull::slice_from_raw_parts(p, layout.size()))
            }

            unsafe fn deallocate(&self, p: NonNull<u8>, _layout: Layout) {
                let _ = (**self).free(p);
            }

            unsafe fn grow(
                &self,
                p: NonNull<u8>,
                old: Layout,
                new: Layout,
            ) -> Result<NonNull<[u8]>, AllocError> {
                resize(*self, (**self).as_ptr(), p, old, new)
            }

            unsafe fn shrink(
                &self,
                p: NonNull<u8>,
                old: Layout,
                new: Layout,
            ) -> Result<NonNull<[u8]>, AllocError> {
                resize(*self, (**self).as_ptr(), p, old, new)
            }
        }

        unsafe impl GlobalAlloc for $t {
            unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
                alloc_layout(self.as_ptr(), layout)
            }
            unsafe fn dealloc(&self, p: *mut u8, _layout: Layout) {
                sys::rtm_heap_free(self.as_ptr(), p.cast());
            }
            unsafe fn realloc(&self, p: *mut u8, layout: Layout, new: usize) -> *mut u8 {
                realloc_layout(self.as_ptr(), p, layout, new)
            }
        }
    };
}

allocator_impls!(Heap);
allocator_impls!(LocalHeap);

const UNINIT: u8 = 0;
const OPENING: u8 = 1;
const READY: u8 = 2;
const FAILED: u8 = 3;

/// A global allocator on a locked arena: `#[global_allocator]`.
///
/// ```no_run
/// // The whole program on a locked TLSF heap (examples/global.rs).
/// #[global_allocator]
/// static HEAP: rtmem::GlobalHeap = rtmem::GlobalHeap::new("tlsf", 64 << 20);
///
/// fn main() {
///     HEAP.init().expect("rtmem's arena");   // at start-up: opens, faults in, locks
///     let v: Vec<u64> = (0..1000).collect(); // std's Vec, from the arena
///     assert!(HEAP.contains(v.as_ptr().cast()));
/// }
/// ```
///
/// The arena (`pool_bytes`, every page faulted in, locked as
/// [`GlobalHeap::lock`] says: `Try` by default) and the heap (with a
/// priority-inheritance lock) are made by [`GlobalHeap::init`] or at the first
/// allocation. When they cannot be, every allocation fails (Rust then aborts
/// with "memory allocation failed"): call `init` first to see why, and
/// before real-time threads start (a thread that finds the heap being
/// opened sleeps until it is). The memory is never given back; it is the
/// program's for its life. Like any locked allocator without fork
/// handlers, a child forked while another thread is inside an allocation
/// would wait for that lock forever: fork before starting threads, or exec
/// at once.
pub struct GlobalHeap {
    kind: &'static str,
    pool_bytes: usize,
    lock: ArenaLock,
    state: AtomicU8,
    heap: AtomicPtr<sys::rtm_heap>,
    errno: core::sync::atomic::AtomicI32,
    arena: UnsafeCell<MaybeUninit<sys::rtm_arena>>,
}

unsafe impl Sync for GlobalHeap {}

impl GlobalHeap {
    pub const fn new(kind: &'static str, pool_bytes: usize) -> GlobalHeap {
        GlobalHeap {
            kind,
            pool_bytes,
            lock: ArenaLock::Try,
            state: AtomicU8::new(UNINIT),
            heap: AtomicPtr::new(ptr::null_mut()),
            errno: core::sync::atomic::AtomicI32::new(0),
            arena: UnsafeCell::new(MaybeUninit::zeroed()),
        }
    }

    /// How the arena is locked (`ArenaLock::Try` by default).
    pub const fn lock(mut self, lock: ArenaLock) -> GlobalHeap {
        self.lock = lock;
        self
    }

    /// Opens the arena and makes the heap, once; later calls say how that
    /// went. Allocates nothing from any other allocator.
    pub fn init(&self) -> Result<(), Error> {
        if self.raw().is_null() {
            Err(Error(self.errno.load(Ordering::Acquire)))
        } else {
            Ok(())
        }
    }

    /// The heap, made on first use; null when it could not be.
    fn raw(&self) -> *mut sys::rtm_heap {
        loop {
            match self.state.load(Ordering::Acquire) {
                READY => return self.heap.load(Ordering::Acquire),
                FAILED => return ptr::null_mut(),
                UNINIT => {
                    if self
                        .state
                        .compare_exchange(UNINIT, OPENING, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        let (h, e) = unsafe { self.open() };
                        self.heap.store(h, Ordering::Release);
                        self.errno.store(e, Ordering::Release);
                        self.state
                            .store(if h.is_null() { FAILED } else { READY }, Ordering::Release);
                    }
                }
                // Another thread opens it: sleep rather than yield, which
                // would never let a lower-priority opener run under
                // SCHED_FIFO.
                _ => std::thread::sleep(std::time::Duration::from_micros(100)),
            }
        }
    }

    unsafe fn open(&self) -> (*mut sys::rtm_heap, i32) {
        // The kind's name as a C string, on the stack: no allocation here.
        let mut name = [0 as c_char; 64];
        if self.kind.len() >= name.len() {
            return (ptr::null_mut(), libc_einval());
        }
        for (d, s) in name.iter_mut().zip(self.kind.bytes()) {
            *d = s as c_char;
        }
        let a = (*self.arena.get()).as_mut_ptr();
        let acfg = arena_config(&ArenaOptions {
            size_bytes: self.pool_bytes,
            lock: self.lock,
            huge_page_bytes: 0,
        });
        let rc = sys::rtm_arena_open(a, &acfg);
        if rc != 0 {
            return (ptr::null_mut(), -rc);
        }
        let cfg = config(Hardening::O1, sys::RTM_HEAP_LOCK_PI);
        let h = sys::rtm_arena_heap(a, name.as_ptr(), &cfg);
        if h.is_null() {
            let e = Error::last().0;
            sys::rtm_arena_close(a);
            return (h, e);
        }
        (h, 0)
    }

    /// The heap, if it is made (never opens it).
    fn ready(&self) -> *mut sys::rtm_heap {
        if self.state.load(Ordering::Acquire) == READY {
            self.heap.load(Ordering::Acquire)
        } else {
            ptr::null_mut()
        }
    }

    /// The heap's statistics, once it is made (None before).
    pub fn stats(&self) -> Option<Stats> {
        let h = self.ready();
        if h.is_null() {
            return None;
        }
        let mut st = Stats::default();
        unsafe { sys::rtm_heap_stats(h, &mut st) };
        Some(st)
    }

    /// What the arena obtained (locked? resident?), once it is open.
    pub fn arena_report(&self) -> Option<sys::rtm_arena_report> {
        if self.ready().is_null() {
            return None;
        }
        Some(unsafe { (*(*self.arena.get()).as_ptr()).report })
    }

    /// Whether p lies in the arena (a block this allocator gave).
    pub fn contains(&self, p: *const u8) -> bool {
        if self.ready().is_null() {
            return false;
        }
        let a = unsafe { &*(*self.arena.get()).as_ptr() };
        let base = a.base as usize;
        (p as usize).wrapping_sub(base) < a.size_bytes
    }

    /// The C heap (null until it is made), for `rtmem_sys` calls.
    pub fn as_ptr(&self) -> *mut sys::rtm_heap {
        self.ready()
    }
}

unsafe impl GlobalAlloc for GlobalHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let h = self.raw();
        if h.is_null() {
            return ptr::null_mut();
        }
        alloc_layout(h, layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let h = self.raw();
        if h.is_null() {
            return ptr::null_mut();
        }
        if layout.align() <= MIN_ALIGN {
            return sys::rtm_heap_calloc(h, 1, layout.size()).cast();
        }
        let p = alloc_layout(h, layout);
        if !p.is_null() {
            ptr::write_bytes(p, 0, layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, _layout: Layout) {
        sys::rtm_heap_free(self.heap.load(Ordering::Acquire), p.cast::<c_void>());
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        realloc_layout(self.heap.load(Ordering::Acquire), p, layout, new)
    }
}
