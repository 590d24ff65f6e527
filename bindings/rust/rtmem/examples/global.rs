//! rtmem as a program's global allocator: every Box, Vec and String of the
//! program comes from a TLSF heap on a 64 MiB arena, faulted in and locked
//! (when the process may), opened before main's real work starts.
//!
//!     cargo run --example global
use std::collections::BTreeMap;

#[global_allocator]
static HEAP: rtmem::GlobalHeap = rtmem::GlobalHeap::new("tlsf", 64 << 20);

fn main() {
    if let Err(e) = HEAP.init() {
        eprintln!("global: no arena for the heap: {}", e);
        std::process::exit(1);
    }
    let report = HEAP.arena_report().unwrap();
    let mut m = BTreeMap::new();
    for i in 0..1000u32 {
        m.insert(i, format!("entry {}", i));
    }
    let st = HEAP.stats().unwrap();
    println!(
        "{} live blocks, {} of {} bytes used; arena {} ({} bytes resident)",
        st.live_blocks,
        st.used_bytes,
        st.usable_bytes,
        if report.lock_state == rtmem::sys::RTM_ARENA_LOCKED {
            "locked"
        } else {
            "not locked"
        },
        report.resident_bytes
    );
    assert!(HEAP.contains(m[&999].as_ptr()));
}
