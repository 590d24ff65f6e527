//! The conformance model, through the Rust API: random sequences of
//! allocations (sizes, alignments), frees and reallocs on every kind,
//! checked after every step against a shadow model of the live blocks:
//! inside the pool, never overlapping, aligned as asked, usable size at
//! least the request and not absurdly larger (at most twice the request
//! plus 64 bytes), contents kept (across reallocs too), statistics that
//! agree; then how many blocks of a size fit in the fresh heap, which must
//! be at least what the heap documents (exactly it for halffit). Seeds are
//! fixed: a failure names its kind, seed and step, and reruns the same.
use core::alloc::Layout;
use core::ptr::NonNull;
use rtmem::LocalHeap;
use std::collections::BTreeMap;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Block {
    layout: Layout,
    usable: usize,
    tag: u8,
}

struct Model<'h> {
    heap: &'h LocalHeap,
    lo: usize,
    hi: usize,
    live: BTreeMap<usize, Block>, // by address
    tag: u8,
}

impl<'h> Model<'h> {
    fn fill(p: NonNull<u8>, n: usize, tag: u8) {
        unsafe { p.as_ptr().write_bytes(tag, n) };
    }

    fn intact(&self, addr: usize, b: &Block, n: usize) -> bool {
        let s = unsafe { core::slice::from_raw_parts(addr as *const u8, n) };
        s.iter().all(|&x| x == b.tag)
    }

    /// Records a block the heap just gave: every property a block must have.
    fn record(&mut self, p: NonNull<u8>, layout: Layout, what: &str) {
        let a = p.as_ptr() as usize;
        let usable = unsafe { self.heap.usable_size(p) };
        let asked = layout.size().max(layout.align());
        assert_eq!(
            a % layout.align().max(rtmem::MIN_ALIGN),
            0,
            "{}: misaligned",
            what
        );
        assert!(
            usable >= layout.size(),
            "{}: usable {} < {}",
            what,
            usable,
            layout.size()
        );
        assert!(
            usable <= 2 * asked + 64,
            "{}: usable {} for {}",
            what,
            usable,
            asked
        );
        assert!(
            a >= self.lo && a + usable <= self.hi,
            "{}: outside the pool",
            what
        );
        if let Some((&pa, pb)) = self.live.range(..a).next_back() {
            assert!(pa + pb.usable <= a, "{}: overlaps the block before", what);
        }
        if let Some((&na, _)) = self.live.range(a..).next() {
            assert!(a + usable <= na, "{}: overlaps the block after", what);
        }
        self.tag = self.tag.wrapping_add(1).max(1);
        Model::fill(p, usable, self.tag);
        self.live.insert(
            a,
            Block {
                layout,
                usable,
                tag: self.tag,
            },
        );
    }

    fn step(&mut self, rng: &mut Rng, what: &str) {
        let op = rng.below(10);
        if op < 5 || self.live.is_empty() {
            let size = match rng.below(10) {
                0 => rng.below(16) as usize,
                1..=6 => 16 + rng.below(1024) as usize,
                7 | 8 => rng.below(8192) as usize,
                _ => rng.below(70_000) as usize,
            };
            let align = if rng.below(8) == 0 {
                1 << (3 + rng.below(10))
            } else {
                8
            };
            let layout = Layout::from_size_align(size, align).unwrap();
            if let Some(p) = self.heap.alloc(layout) {
                self.record(p, layout, what);
            }
        } else {
            let i = rng.below(self.live.len() as u64) as usize;
            let a = *self.live.keys().nth(i).unwrap();
            let b = self.live.remove(&a).unwrap();
            assert!(
                self.intact(a, &b, b.usable),
                "{}: a live block's contents changed",
                what
            );
            let p = NonNull::new(a as *mut u8).unwrap();
            if op < 8 {
                unsafe { self.heap.free(p) }.unwrap_or_else(|e| panic!("{}: free: {}", what, e));
            } else {
                let new = rng.below(6000) as usize;
                match unsafe { self.heap.realloc(p, b.layout, new) } {
                    Some(q) => {
                        let keep = b.layout.size().min(new); // what Rust promises to keep
                        let moved = Block { tag: b.tag, ..b };
                        assert!(
                            self.intact(q.as_ptr() as usize, &moved, keep),
                            "{}: realloc lost data",
                            what
                        );
                        let layout = Layout::from_size_align(new, moved.layout.align()).unwrap();
                        self.record(q, layout, what);
                    }
                    None => {
                        self.live.insert(a, b); // refused: the block stays as it was
                    }
                }
            }
        }
        let st = self.heap.stats();
        assert_eq!(st.live_blocks, self.live.len(), "{}: live_blocks", what);
        assert_eq!(
            st.free_bytes,
            st.usable_bytes - st.used_bytes,
            "{}: free_bytes",
            what
        );
    }
}

fn pool(n: usize) -> &'static mut [u8] {
    Box::leak(vec![0xa5u8; n].into_boxed_slice())
}

#[test]
fn random_sequences_keep_every_property() {
    let steps = std::env::var("RTMEM_MODEL_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    for kind in rtmem::kinds() {
        for seed in 1..=3u64 {
            let mem = pool(4 << 20);
            let (lo, hi) = (mem.as_ptr() as usize, mem.as_ptr() as usize + mem.len());
            let heap = LocalHeap::new(kind, mem).unwrap();
            let mut m = Model {
                heap: &heap,
                lo,
                hi,
                live: BTreeMap::new(),
                tag: 0,
            };
            let mut rng = Rng(seed * 0x1234_5678);
            for i in 0..steps {
                m.step(&mut rng, &format!("{} seed {} step {}", kind, seed, i));
            }
            for (&a, b) in m.live.iter() {
                assert!(m.intact(a, b, b.usable));
                unsafe { heap.free(NonNull::new(a as *mut u8).unwrap()).unwrap() };
            }
            assert_eq!(heap.stats().used_bytes, 0, "{} seed {}", kind, seed);
            heap.check().unwrap();
        }
    }
}

#[test]
fn fill_counts_hold_in_a_fresh_heap() {
    for kind in rtmem::kinds() {
        for size in [16usize, 48, 100, 512, 1000, 4096, 5000, 40_000] {
            let heap = LocalHeap::new(kind, pool(1 << 20)).unwrap();
            let expect = heap.fill_count(size);
            let layout = Layout::from_size_align(size, 8).unwrap();
            let mut got = Vec::new();
            while let Some(p) = heap.alloc(layout) {
                got.push(p);
            }
            assert!(
                got.len() >= expect,
                "{} {}: {} fit, {} documented",
                kind,
                size,
                got.len(),
                expect
            );
            if kind == "halffit" {
                assert_eq!(got.len(), expect, "halffit documents its count exactly");
            }
            let st = heap.stats();
            assert!(got.len() * size <= st.usable_bytes);
            assert!(st.largest_free_bytes < size);
            for p in got {
                unsafe { heap.free(p).unwrap() };
            }
        }
    }
}
