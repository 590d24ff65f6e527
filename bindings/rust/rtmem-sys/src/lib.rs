//! Raw bindings to rtmem's C API: `rtmem/heap.h`, `lock.h`, `arena.h` and
//! `shared.h`, as the C headers declare them (read those for every
//! contract, bound and error). Each struct is `#[repr(C)]` and its layout is
//! checked against the C compiler's by this crate's tests. The safe crate,
//! `rtmem`, wraps these.
#![no_std]
#![allow(non_camel_case_types)]

use core::ffi::{c_char, c_int, c_uint, c_void};

/// The alignment every block has at least: `alignof(max_align_t)` as gcc
/// has it on each target (the layout test compares it with the C build's).
pub const RTM_HEAP_MIN_ALIGN: usize = if cfg!(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "x86",
    target_arch = "riscv64",
    target_arch = "powerpc64",
    target_arch = "loongarch64",
    target_arch = "s390x"
)) {
    16
} else {
    8
};

pub const RTM_HEAP_HARDEN_O1: c_int = 0;
pub const RTM_HEAP_HARDEN_NONE: c_int = 1;
pub const RTM_HEAP_HARDEN_FULL: c_int = 2;

pub const RTM_HEAP_LOCK_NONE: c_int = 0;
pub const RTM_HEAP_LOCK_PI: c_int = 1;
pub const RTM_HEAP_LOCK_ROBUST_SHARED: c_int = 2;

pub const RTM_ARENA_ANON: c_int = 0;
pub const RTM_ARENA_MEMFD: c_int = 1;
pub const RTM_ARENA_POSIX_SHM: c_int = 2;
pub const RTM_ARENA_SYSV_SHM: c_int = 3;
pub const RTM_ARENA_FILE: c_int = 4;
pub const RTM_ARENA_DEVICE: c_int = 5;
pub const RTM_ARENA_PAGE_2M: usize = 2 << 20;
pub const RTM_ARENA_PAGE_1G: usize = 1 << 30;
pub const RTM_ARENA_EXISTING: c_uint = 0x1;
pub const RTM_ARENA_READ_ONLY: c_uint = 0x2;
pub const RTM_ARENA_PRIVATE: c_uint = 0x4;
pub const RTM_ARENA_THP_DEFAULT: c_int = 0;
pub const RTM_ARENA_THP_ON: c_int = 1;
pub const RTM_ARENA_THP_OFF: c_int = 2;
pub const RTM_ARENA_PREFAULT_NONE: c_int = 0;
pub const RTM_ARENA_PREFAULT_POPULATE: c_int = 1;
pub const RTM_ARENA_PREFAULT_TOUCH: c_int = 2;
pub const RTM_ARENA_LOCK_NONE: c_int = 0;
pub const RTM_ARENA_LOCK_TRY: c_int = 1;
pub const RTM_ARENA_LOCK_MUST: c_int = 2;
pub const RTM_ARENA_UNLOCKED: c_int = 0;
pub const RTM_ARENA_LOCKED: c_int = 1;
pub const RTM_ARENA_LOCKED_HUGETLB: c_int = 2;
pub const RTM_ARENA_LOCK_IGNORED: c_int = 3;
pub const RTM_ARENA_LOCKED_ON_FAULT: c_int = 4;
pub const RTM_ARENA_NAME_BYTES: usize = 257;
pub const RTM_ARENA_MESSAGE_BYTES: usize = 512;

pub const RTM_SHARED_NAME_MAX: usize = 200;
pub const RTM_SHARED_CATALOG_NAME_MAX: usize = 31;
pub const RTM_SHARED_CATALOG_DEFAULT: u32 = 32;
pub const RTM_SHARED_TRUST_ANY_OWNER: c_uint = 1;
pub const RTM_SHARED_TRUST_WORLD_WRITABLE: c_uint = 2;

/// A heap (opaque).
#[repr(C)]
pub struct rtm_heap {
    _private: [u8; 0],
}

/// A shared heap's handle (opaque).
#[repr(C)]
pub struct rtm_shared {
    _private: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rtm_heap_stats {
    pub usable_bytes: usize,
    pub used_bytes: usize,
    pub free_bytes: usize,
    pub peak_used_bytes: usize,
    pub largest_free_bytes: usize,
    pub live_blocks: usize,
    pub overhead_bytes: usize,
    pub pool_count: usize,
    pub failed_allocs: u64,
    pub corruptions: u64,
}

#[repr(C)]
pub struct rtm_heap_corruption {
    pub heap: *const rtm_heap,
    pub block: *const c_void,
    pub where_: *const c_void,
    pub what: *const c_char,
}

pub type rtm_heap_corruption_fn =
    Option<unsafe extern "C" fn(c: *const rtm_heap_corruption, arg: *mut c_void)>;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct rtm_heap_config {
    pub hardening: c_int,
    pub check_interval: u32,
    pub on_corruption: rtm_heap_corruption_fn,
    pub on_corruption_arg: *mut c_void,
    pub lock: c_int,
    pub lock_timeout_us: u32,
}

impl Default for rtm_heap_config {
    fn default() -> Self {
        rtm_heap_config {
            hardening: RTM_HEAP_HARDEN_O1,
            check_interval: 0,
            on_corruption: None,
            on_corruption_arg: core::ptr::null_mut(),
            lock: RTM_HEAP_LOCK_NONE,
            lock_timeout_us: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rtm_heap_limits {
    pub max_live: usize,
    pub max_block: usize,
    pub min_block: usize,
    pub max_align: usize,
    pub lock: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rtm_heap_lock_stats {
    pub type_: c_int,
    pub recoverable: c_int,
    pub calls: u64,
    pub contended: u64,
    pub owner_deaths: u64,
    pub recovered: u64,
    pub timeout_us: u32,
    pub timeouts: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct rtm_arena_config {
    pub source: c_int,
    pub size_bytes: usize,
    pub page_bytes: usize,
    pub name: *const c_char,
    pub offset: u64,
    pub sysv_key: c_int,
    pub mode: c_uint,
    pub prefault: c_int,
    pub lock: c_int,
    pub thp: c_int,
    pub flags: c_uint,
}

impl Default for rtm_arena_config {
    fn default() -> Self {
        rtm_arena_config {
            source: RTM_ARENA_ANON,
            size_bytes: 0,
            page_bytes: 0,
            name: core::ptr::null(),
            offset: 0,
            sysv_key: 0,
            mode: 0,
            prefault: RTM_ARENA_PREFAULT_NONE,
            lock: RTM_ARENA_LOCK_NONE,
            thp: 0,
            flags: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rtm_arena_report {
    pub source: c_int,
    pub prefault: c_int,
    pub lock: c_int,
    pub thp: c_int,
    pub asked_bytes: usize,
    pub size_bytes: usize,
    pub page_bytes_asked: usize,
    pub page_bytes: usize,
    pub resident_bytes: usize,
    pub lock_state: c_int,
    pub lock_errno: c_int,
    pub locked_bytes: i64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub anon_huge_bytes: usize,
    pub shmem_pmd_bytes: usize,
    pub file_pmd_bytes: usize,
    pub verified: bool,
}

/// rtmem's own bookkeeping inside `rtm_arena`: never read or write it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct rtm_arena_private {
    pub self_: *const rtm_arena,
    pub map_start: *mut c_void,
    pub map_bytes: usize,
    pub object_dev: u64,
    pub object_ino: u64,
    pub dir_fd: c_int,
    pub creator_pid: c_int,
    pub sysv_key: c_int,
    pub owned: u8,
    pub read_only: u8,
    pub attached: u8,
    pub name: [c_char; RTM_ARENA_NAME_BYTES],
}

/// An arena. Filled by `rtm_arena_open`; never moved or copied while open
/// (it knows its own address).
#[repr(C)]
pub struct rtm_arena {
    pub base: *mut c_void,
    pub size_bytes: usize,
    pub page_bytes: usize,
    pub fd: c_int,
    pub shm_id: c_int,
    pub report: rtm_arena_report,
    pub message: [c_char; RTM_ARENA_MESSAGE_BYTES],
    pub internal: rtm_arena_private,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rtm_shared_config {
    pub mode: c_uint,
    pub catalog_entries: u32,
    pub hardening: c_int,
    pub check_interval: u32,
    pub page_bytes: usize,
    pub prefault: c_int,
    pub lock: c_int,
    pub thp: c_int,
    pub trust: c_uint,
    pub trusted_uid: u32,
    pub lock_timeout_us: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rtm_shared_info {
    pub size_bytes: usize,
    pub page_bytes: usize,
    pub heap_offset: u64,
    pub attach_count: u32,
    pub catalog_entries: u32,
    pub creator_pid: c_int,
    pub kind: *const c_char,
    pub base: *mut c_void,
}

/// A block whose owner no longer runs (`rtm_shared_orphans`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rtm_shared_orphan {
    pub offset: u64,
    pub bytes: usize,
    pub pid: c_int,
}

extern "C" {
    // rtmem/heap.h
    pub fn rtm_heap_kinds() -> *const *const c_char;
    pub fn rtm_heap_create(kind: *const c_char, mem: *mut c_void, size: usize) -> *mut rtm_heap;
    pub fn rtm_heap_create_ex(
        kind: *const c_char,
        mem: *mut c_void,
        size: usize,
        cfg: *const rtm_heap_config,
    ) -> *mut rtm_heap;
    pub fn rtm_heap_set_corruption_handler(
        h: *mut rtm_heap,
        f: rtm_heap_corruption_fn,
        arg: *mut c_void,
    ) -> c_int;
    pub fn rtm_heap_hardening(h: *const rtm_heap) -> c_int;
    pub fn rtm_heap_destroy(h: *mut rtm_heap);
    pub fn rtm_heap_alloc(h: *mut rtm_heap, size: usize) -> *mut c_void;
    pub fn rtm_heap_aligned_alloc(h: *mut rtm_heap, alignment: usize, size: usize) -> *mut c_void;
    pub fn rtm_heap_calloc(h: *mut rtm_heap, n: usize, size: usize) -> *mut c_void;
    pub fn rtm_heap_realloc(h: *mut rtm_heap, p: *mut c_void, size: usize) -> *mut c_void;
    pub fn rtm_heap_free(h: *mut rtm_heap, p: *mut c_void) -> c_int;
    pub fn rtm_heap_usable_size(h: *const rtm_heap, p: *const c_void) -> usize;
    pub fn rtm_heap_add_pool(h: *mut rtm_heap, mem: *mut c_void, size: usize) -> c_int;
    pub fn rtm_heap_stats(h: *const rtm_heap, out: *mut rtm_heap_stats) -> c_int;
    pub fn rtm_heap_check(h: *const rtm_heap) -> c_int;
    pub fn rtm_heap_kind(h: *const rtm_heap) -> *const c_char;
    pub fn rtm_heap_fill_count(h: *const rtm_heap, size: usize) -> usize;
    pub fn rtm_heap_pool_bound(kind: *const c_char, max_live: usize, max_block: usize) -> usize;
    pub fn rtm_heap_pool_bound_ex(kind: *const c_char, lim: *const rtm_heap_limits) -> usize;

    // rtmem/lock.h
    pub fn rtm_heap_lock_type(h: *const rtm_heap) -> c_int;
    pub fn rtm_heap_lock_bytes(kind: *const c_char, lock: c_int, size: usize) -> usize;
    pub fn rtm_heap_set_lock_timeout(h: *mut rtm_heap, timeout_us: u32) -> c_int;
    pub fn rtm_heap_lock_stats(h: *const rtm_heap, out: *mut rtm_heap_lock_stats) -> c_int;

    // rtmem/arena.h
    pub fn rtm_arena_open(a: *mut rtm_arena, cfg: *const rtm_arena_config) -> c_int;
    pub fn rtm_arena_close(a: *mut rtm_arena) -> c_int;
    pub fn rtm_arena_heap(
        a: *mut rtm_arena,
        kind: *const c_char,
        cfg: *const rtm_heap_config,
    ) -> *mut rtm_heap;
    pub fn rtm_arena_describe(a: *const rtm_arena, buf: *mut c_char, size: usize) -> c_int;

    // rtmem/shared.h
    pub fn rtm_shared_create(
        name: *const c_char,
        kind: *const c_char,
        size: usize,
    ) -> *mut rtm_shared;
    pub fn rtm_shared_create_ex(
        name: *const c_char,
        kind: *const c_char,
        size: usize,
        cfg: *const rtm_shared_config,
    ) -> *mut rtm_shared;
    pub fn rtm_shared_attach(name: *const c_char) -> *mut rtm_shared;
    pub fn rtm_shared_attach_ex(
        name: *const c_char,
        cfg: *const rtm_shared_config,
    ) -> *mut rtm_shared;
    pub fn rtm_shared_heap(s: *mut rtm_shared) -> *mut rtm_heap;
    pub fn rtm_shared_detach(s: *mut rtm_shared) -> c_int;
    pub fn rtm_shared_unlink(name: *const c_char) -> c_int;
    pub fn rtm_shared_to_offset(s: *const rtm_shared, p: *const c_void) -> u64;
    pub fn rtm_shared_from_offset(s: *const rtm_shared, off: u64) -> *mut c_void;
    pub fn rtm_shared_get_info(s: *const rtm_shared, out: *mut rtm_shared_info) -> c_int;
    pub fn rtm_shared_publish(s: *mut rtm_shared, name: *const c_char, p: *const c_void) -> c_int;
    pub fn rtm_shared_lookup(s: *mut rtm_shared, name: *const c_char) -> *mut c_void;
    pub fn rtm_shared_unpublish(s: *mut rtm_shared, name: *const c_char) -> c_int;
    pub fn rtm_shared_orphans(s: *mut rtm_shared, out: *mut rtm_shared_orphan, max: usize)
        -> isize;
    pub fn rtm_shared_reclaim(s: *mut rtm_shared, pid: c_int) -> isize;
    pub fn rtm_shared_set_owner(s: *mut rtm_shared, p: *mut c_void, pid: c_int) -> c_int;
    pub fn rtm_shared_owner(s: *mut rtm_shared, p: *const c_void) -> c_int;
}

#[cfg(all(test, rtmem_layout_probe))]
mod layout {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};

    extern "C" {
        static rtmem_sys_layout: [usize; 40];
    }

    #[test]
    fn structs_match_the_c_headers() {
        let rust = [
            size_of::<rtm_heap_stats>(),
            offset_of!(rtm_heap_stats, corruptions),
            size_of::<rtm_heap_config>(),
            offset_of!(rtm_heap_config, lock_timeout_us),
            size_of::<rtm_heap_limits>(),
            size_of::<rtm_heap_lock_stats>(),
            offset_of!(rtm_heap_lock_stats, timeouts),
            size_of::<rtm_arena_config>(),
            offset_of!(rtm_arena_config, flags),
            size_of::<rtm_arena_report>(),
            offset_of!(rtm_arena_report, verified),
            size_of::<rtm_arena>(),
            offset_of!(rtm_arena, report),
            offset_of!(rtm_arena, message),
            offset_of!(rtm_arena, internal),
            align_of::<rtm_arena>(),
            size_of::<rtm_shared_config>(),
            offset_of!(rtm_shared_config, lock_timeout_us),
            size_of::<rtm_shared_info>(),
            offset_of!(rtm_shared_info, base),
            RTM_HEAP_MIN_ALIGN,
            size_of::<rtm_heap_corruption>(),
            offset_of!(rtm_heap_corruption, what),
            offset_of!(rtm_heap_config, on_corruption),
            offset_of!(rtm_heap_config, lock),
            offset_of!(rtm_heap_limits, max_align),
            offset_of!(rtm_heap_limits, lock),
            offset_of!(rtm_heap_lock_stats, timeout_us),
            offset_of!(rtm_arena_config, name),
            offset_of!(rtm_arena_config, sysv_key),
            offset_of!(rtm_arena_config, prefault),
            offset_of!(rtm_arena_config, thp),
            offset_of!(rtm_arena_report, lock_state),
            offset_of!(rtm_arena_report, locked_bytes),
            offset_of!(rtm_arena_report, file_pmd_bytes),
            offset_of!(rtm_shared_config, page_bytes),
            offset_of!(rtm_shared_config, thp),
            offset_of!(rtm_shared_info, creator_pid),
            size_of::<rtm_shared_orphan>(),
            usize::MAX,
        ];
        let c = unsafe { rtmem_sys_layout };
        assert_eq!(
            rust, c,
            "a #[repr(C)] struct no longer matches its C header"
        );
    }
}
