//! rtmem::GlobalHeap as the test program's #[global_allocator]: std's
//! collections, from several threads, come from the arena.
use std::collections::BTreeMap;

#[global_allocator]
static HEAP: rtmem::GlobalHeap = rtmem::GlobalHeap::new("tlsf", 64 << 20);

#[test]
fn std_collections_come_from_the_arena() {
    HEAP.init().unwrap();
    let before = HEAP.stats().unwrap();
    let v: Vec<u64> = (0..10_000).collect();
    let mut m = BTreeMap::new();
    for i in 0..1000u32 {
        m.insert(i, format!("value {}", i));
    }
    assert!(HEAP.contains(v.as_ptr().cast()));
    assert!(HEAP.contains(m[&999].as_ptr()));
    let during = HEAP.stats().unwrap();
    assert!(
        during.live_blocks >= before.live_blocks + 1000,
        "{:?}",
        during
    );
    let r = HEAP.arena_report().unwrap();
    assert_eq!(r.resident_bytes, r.size_bytes); // faulted in at init
    drop(m);
    drop(v);
    assert!(HEAP.stats().unwrap().live_blocks < during.live_blocks);
}

#[test]
fn threads_share_the_locked_heap() {
    let handles: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let mut total = 0usize;
                for i in 0..2000 {
                    let s = vec![t as u8; 16 + i % 300];
                    total += s.len();
                    assert!(HEAP.contains(s.as_ptr()));
                }
                total
            })
        })
        .collect();
    for h in handles {
        assert!(h.join().unwrap() > 0);
    }
    assert_eq!(HEAP.stats().unwrap().corruptions, 0);
}
