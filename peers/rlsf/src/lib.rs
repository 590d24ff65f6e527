//! rlsf (a TLSF in Rust, crates.io) behind rtmem's heap plugin ABI
//! (include/rtmem/plugin.h), so that rtmem's tools measure it side by side
//! with rtmem's kinds. No checks: rlsf trusts its metadata.
#![allow(non_upper_case_globals)]
use core::alloc::Layout;
use core::ffi::{c_char, c_int, c_void};
use core::mem::{align_of, size_of};
use core::ptr::{null_mut, NonNull};
use rlsf::Tlsf;

type Heap = Tlsf<'static, u32, u32, 28, 32>;
const ALIGN: usize = 16;

#[repr(C)]
pub struct RtmHeapPlugin {
    abi_version: u32,
    name: *const c_char,
    description: *const c_char,
    alignment: usize,
    create: unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void,
    destroy: unsafe extern "C" fn(*mut c_void),
    alloc: unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void,
    free: unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int,
    usable_size: unsafe extern "C" fn(*mut c_void, *const c_void) -> usize,
    aligned_alloc: Option<unsafe extern "C" fn(*mut c_void, usize, usize) -> *mut c_void>,
    realloc: Option<unsafe extern "C" fn(*mut c_void, *mut c_void, usize) -> *mut c_void>,
    stats: Option<unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int>,
    check: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
}
unsafe impl Sync for RtmHeapPlugin {}

unsafe extern "C" fn create(mem: *mut c_void, size: usize) -> *mut c_void {
    let base = mem as usize;
    let at = (base + align_of::<Heap>() - 1) & !(align_of::<Heap>() - 1);
    if mem.is_null() || at - base + size_of::<Heap>() + 64 > size {
        return null_mut();
    }
    let t = at as *mut Heap;
    t.write(Tlsf::new());
    let rest = at + size_of::<Heap>();
    let len = base + size - rest;
    let slice = core::ptr::slice_from_raw_parts_mut(rest as *mut u8, len);
    match (*t).insert_free_block_ptr(NonNull::new_unchecked(slice)) {
        Some(_) => t as *mut c_void,
        None => null_mut(),
    }
}
unsafe extern "C" fn destroy(_h: *mut c_void) {}
unsafe extern "C" fn alloc(h: *mut c_void, n: usize) -> *mut c_void {
    let t = &mut *(h as *mut Heap);
    match Layout::from_size_align(n, ALIGN) {
        Ok(l) => t.allocate(l).map_or(null_mut(), |p| p.as_ptr() as *mut c_void),
        Err(_) => null_mut(),
    }
}
unsafe extern "C" fn free(h: *mut c_void, p: *mut c_void) -> c_int {
    let t = &mut *(h as *mut Heap);
    match NonNull::new(p as *mut u8) {
        Some(p) => {
            t.deallocate(p, ALIGN);
            0
        }
        None => 0,
    }
}
unsafe extern "C" fn usable_size(_h: *mut c_void, p: *const c_void) -> usize {
    match NonNull::new(p as *mut u8) {
        Some(p) => Heap::allocation_usable_size(p),
        None => 0,
    }
}

#[no_mangle]
pub static rtm_heap_plugin: RtmHeapPlugin = RtmHeapPlugin {
    abi_version: 1,
    name: b"rlsf\0".as_ptr() as *const c_char,
    description: b"rlsf 0.2.3 (crates.io), a TLSF in Rust, no checks\0".as_ptr() as *const c_char,
    alignment: ALIGN,
    create,
    destroy,
    alloc,
    free,
    usable_size,
    aligned_alloc: None,
    realloc: None,
    stats: None,
    check: None,
};
