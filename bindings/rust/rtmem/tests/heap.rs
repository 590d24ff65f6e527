//! rtmem::Heap and LocalHeap on every kind: blocks, statistics, errors.
use core::alloc::Layout;
use rtmem::{ArenaOptions, Hardening, Heap, LocalHeap};

fn mem(n: usize) -> &'static mut [u8] {
    Box::leak(vec![0u8; n].into_boxed_slice())
}

#[test]
fn kinds_are_listed_tlsf_first() {
    let k = rtmem::kinds();
    assert_eq!(k[0], "tlsf");
    for want in ["halffit", "heapmem", "xnheap"] {
        assert!(k.contains(&want), "{} missing from {:?}", want, k);
    }
}

#[test]
fn every_kind_allocates_frees_and_counts() {
    for kind in rtmem::kinds() {
        let h = Heap::new(kind, mem(1 << 20)).unwrap();
        assert_eq!(h.kind(), kind);
        let l = Layout::from_size_align(100, 8).unwrap();
        let p = h.alloc(l).unwrap();
        assert_eq!(p.as_ptr() as usize % rtmem::MIN_ALIGN, 0);
        assert!(unsafe { h.usable_size(p) } >= 100);
        assert_eq!(h.stats().live_blocks, 1);
        // a page kind (xvheap) serves a page's block at most: its alignment
        // and growth stay inside one
        let largest = h.stats().largest_free_bytes;
        let (align, grow) = if largest > 8192 {
            (4096, 5000)
        } else {
            (1024, 3000)
        };
        let wide = Layout::from_size_align(40, align).unwrap();
        let q = h.alloc(wide).unwrap();
        assert_eq!(q.as_ptr() as usize % align, 0, "{}", kind);
        let r = unsafe { h.realloc(p, l, grow) }.unwrap();
        assert!(unsafe { h.usable_size(r) } >= grow);
        unsafe {
            h.free(r).unwrap();
            h.free(q).unwrap();
        }
        let st = h.stats();
        assert_eq!((st.live_blocks, st.used_bytes, st.corruptions), (0, 0, 0));
        h.check().unwrap();
        assert!(h.fill_count(64) > 1000);
    }
}

#[test]
fn errors_are_errno_values() {
    let e = Heap::new("no-such-kind", mem(4096)).err().unwrap();
    assert_eq!(e.errno(), 2); // ENOENT
    let e = Heap::new("tlsf", mem(16)).err().unwrap();
    assert_eq!(e.errno(), 12); // ENOMEM
    let h = LocalHeap::new("tlsf", mem(64 << 10)).unwrap();
    assert!(h
        .alloc(Layout::from_size_align(1 << 20, 8).unwrap())
        .is_none());
    assert_eq!(h.stats().failed_allocs, 1);
    let stranger = Box::new(0u64);
    let p = core::ptr::NonNull::from(&*stranger).cast::<u8>();
    assert_eq!(unsafe { h.free(p) }.err().unwrap().errno(), 22); // EINVAL: no block of this heap
}

#[test]
fn hardening_levels_and_an_overflow_refused() {
    let h = LocalHeap::with_hardening("tlsf", mem(1 << 20), Hardening::None).unwrap();
    let l = Layout::from_size_align(100, 8).unwrap();
    let p = h.alloc(l).unwrap();
    unsafe { h.free(p).unwrap() };
    let h = LocalHeap::new("tlsf", mem(1 << 20)).unwrap();
    let a = h.alloc(l).unwrap();
    let _b = h.alloc(l).unwrap();
    unsafe {
        let n = h.usable_size(a);
        *a.as_ptr().add(n) = 0x41; // one byte past: the next header
        assert_eq!(h.free(a).err().unwrap().errno(), 14); // EFAULT
    }
    assert_eq!(h.stats().corruptions, 1);
}

#[test]
fn a_heap_on_a_faulted_in_arena() {
    let h = Heap::on_arena("halffit", &ArenaOptions::new(4 << 20)).unwrap();
    let r = h.arena_report().unwrap();
    assert_eq!(r.resident_bytes, r.size_bytes);
    assert!(r.size_bytes >= 4 << 20);
    let p = h.alloc(Layout::new::<[u64; 100]>()).unwrap();
    unsafe { h.free(p).unwrap() };
}

#[test]
fn a_locked_heap_serves_many_threads() {
    let h: &'static Heap = Box::leak(Box::new(Heap::new("tlsf", mem(4 << 20)).unwrap()));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let l = Layout::from_size_align(24 + t * 8, 8).unwrap();
                for _ in 0..2000 {
                    let p = h.alloc(l).unwrap();
                    unsafe {
                        p.as_ptr().write_bytes(t as u8, l.size());
                        assert_eq!(*p.as_ptr().add(l.size() - 1), t as u8);
                        h.free(p).unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(h.stats().live_blocks, 0);
    h.check().unwrap();
}
