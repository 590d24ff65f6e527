//! std's Vec and BTreeMap with rtmem as the global allocator, against the
//! system allocator (the C library's malloc), side by side in one run
//! (make bench-rust; docs/rust.md quotes it).
//!
//!     cargo run --release --example bench [ROUNDS]   (default 300)
//!
//! The program's global allocator hands each allocation to the contender
//! whose turn it is: the system allocator, or one rtmem kind (a GlobalHeap
//! each, 32 MiB locked arenas); a free goes back to whoever gave the block.
//! A round: a Vec<u64> grown to 20,000 elements by push; a BTreeMap<u32,
//! String> of 2,000 entries (40-byte strings), half removed, then all
//! dropped. The contenders take their rounds in turn; each is timed with
//! Instant. Prints the median round time, the 10th-90th percentile and the
//! worst, the median of the per-turn ratio to the system allocator, the
//! timer's cost and an empty round (the floor).
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rtmem::GlobalHeap;

const MIB: usize = 1 << 20;
static HEAPS: [GlobalHeap; 4] = [
    GlobalHeap::new("tlsf", 32 * MIB),
    GlobalHeap::new("halffit", 32 * MIB),
    GlobalHeap::new("heapmem", 32 * MIB),
    GlobalHeap::new("xnheap", 32 * MIB),
];
/// 0: the system allocator; k: HEAPS[k - 1].
static TURN: AtomicUsize = AtomicUsize::new(0);

struct Switch;

unsafe impl GlobalAlloc for Switch {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        match TURN.load(Ordering::Relaxed) {
            0 => System.alloc(l),
            k => HEAPS[k - 1].alloc(l),
        }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        for h in HEAPS.iter() {
            if h.contains(p) {
                return h.dealloc(p, l);
            }
        }
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        for h in HEAPS.iter() {
            if h.contains(p) {
                return h.realloc(p, l, new);
            }
        }
        System.realloc(p, l, new)
    }
}

#[global_allocator]
static ALLOC: Switch = Switch;

fn round() {
    let mut v = Vec::new();
    for i in 0..20_000u64 {
        v.push(i);
    }
    let mut m = BTreeMap::new();
    for i in 0..2000u32 {
        m.insert(i * 7919 % 2000, "x".repeat(40));
    }
    for i in (0..2000u32).step_by(2) {
        m.remove(&i);
    }
    black_box((&v, &m));
}

fn pct(x: &[f64], p: f64) -> f64 {
    let mut s = x.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    s[(p * (s.len() - 1) as f64).round() as usize]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    for h in HEAPS.iter() {
        if let Err(e) = h.init() {
            eprintln!("bench: an rtmem arena: {}", e);
            std::process::exit(1);
        }
    }
    let locked = HEAPS
        .iter()
        .all(|h| h.arena_report().is_some_and(|r| r.lock_state == 1));
    let names = [
        "system (malloc)",
        "tlsf",
        "halffit",
        "heapmem",
        "xnheap",
        "empty round (floor)",
    ];
    let mut us: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds + 1); names.len()];
    for r in 0..=rounds {
        for (k, times) in us.iter_mut().enumerate() {
            let t0 = Instant::now();
            if k < 5 {
                TURN.store(k, Ordering::Relaxed);
                round();
                TURN.store(0, Ordering::Relaxed);
            }
            let dt = t0.elapsed().as_secs_f64() * 1e6;
            if r > 0 {
                times.push(dt); // round 0 is the warm-up
            }
        }
    }
    let t0 = Instant::now();
    for _ in 0..100_000 {
        black_box(Instant::now());
    }
    let timer_ns = t0.elapsed().as_secs_f64() * 1e9 / 100_000.0;
    println!(
        "bench: {} rounds each, in turn; arenas {}",
        rounds,
        if locked {
            "locked"
        } else {
            "not locked (run as root to lock them)"
        }
    );
    println!(
        "{:<22} {:>10} {:>19} {:>10} {:>12}",
        "allocator", "median us", "p10-p90 us", "worst us", "vs system"
    );
    for (k, name) in names.iter().enumerate() {
        let ratio: Vec<f64> = us[k].iter().zip(&us[0]).map(|(a, b)| a / b).collect();
        println!(
            "{:<22} {:>10.1} {:>8.1} - {:>8.1} {:>10.1} {:>11.2}x",
            name,
            pct(&us[k], 0.5),
            pct(&us[k], 0.1),
            pct(&us[k], 0.9),
            pct(&us[k], 1.0),
            pct(&ratio, 0.5)
        );
    }
    println!("timer: {:.0} ns per Instant::now", timer_ns);
    for h in HEAPS.iter() {
        let st = h.stats().unwrap();
        if st.corruptions != 0 {
            eprintln!("bench: corruption reported: {:?}", st);
            std::process::exit(1);
        }
    }
}
