//! rpmalloc's entry points under names of rtmem's, for rtmem's tools to
//! load with dlopen as a peer allocator (tools/common/alloc_load.c). Each
//! forwards to rpmalloc's own function; nothing else is done here.
#![allow(clippy::missing_safety_doc)]

use std::os::raw::{c_char, c_int, c_void};

/// rpmalloc made ready when this object is loaded, for the thread that
/// loads it (another thread makes its heap on its first call: the crate's
/// "preload" build), and also where the crate linked a system librpmalloc
/// built without it.
#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;

extern "C" fn init() {
    unsafe {
        rpmalloc_sys::rpmalloc_initialize();
    }
}

#[no_mangle]
pub unsafe extern "C" fn rtm_rp_malloc(size: usize) -> *mut c_void {
    rpmalloc_sys::rpmalloc(size)
}

#[no_mangle]
pub unsafe extern "C" fn rtm_rp_free(p: *mut c_void) {
    rpmalloc_sys::rpfree(p)
}

#[no_mangle]
pub unsafe extern "C" fn rtm_rp_usable_size(p: *mut c_void) -> usize {
    rpmalloc_sys::rpmalloc_usable_size(p)
}

#[no_mangle]
pub unsafe extern "C" fn rtm_rp_realloc(p: *mut c_void, size: usize) -> *mut c_void {
    rpmalloc_sys::rprealloc(p, size)
}

#[no_mangle]
pub unsafe extern "C" fn rtm_rp_posix_memalign(
    out: *mut *mut c_void,
    alignment: usize,
    size: usize,
) -> c_int {
    rpmalloc_sys::rpposix_memalign(out, alignment, size)
}

/// The version of rpmalloc built in: the crate's, whose build metadata is
/// rpmalloc's commit.
#[no_mangle]
pub extern "C" fn rtm_rp_version() -> *const c_char {
    concat!("rpmalloc-sys 0.2.3+b097fd0", "\0").as_ptr() as *const c_char
}
