//! allocator-api2's collections on rtmem heaps.
use allocator_api2::boxed::Box as ABox;
use allocator_api2::vec::Vec as AVec;
use rtmem::{Heap, LocalHeap};

fn mem(n: usize) -> &'static mut [u8] {
    Box::leak(vec![0u8; n].into_boxed_slice())
}

#[test]
fn vec_and_box_in_each_kind() {
    for kind in rtmem::kinds() {
        let h = LocalHeap::new(kind, mem(2 << 20)).unwrap();
        // as many as the largest request holds twice over (xvheap's is a page's)
        let n = (h.stats().largest_free_bytes / 8).min(20_000) as u32;
        {
            let mut v = AVec::new_in(&h);
            for i in 0..n {
                v.push(i);
            }
            let b = ABox::new_in([7u8; 300], &h);
            assert_eq!(h.stats().live_blocks, 2, "{}", kind);
            assert_eq!(v[n as usize - 1], n - 1);
            assert_eq!(b[299], 7);
            v.truncate(10);
            v.shrink_to_fit(); // shrink through realloc
            assert_eq!(v.len(), 10);
        }
        assert_eq!(h.stats().live_blocks, 0, "{}", kind);
    }
}

#[repr(align(256))]
struct Wide([u8; 8]);

#[test]
fn over_aligned_elements() {
    let h = Heap::new("tlsf", mem(1 << 20)).unwrap();
    let mut v = AVec::new_in(&h);
    for _ in 0..100 {
        v.push(Wide([1; 8]));
        assert_eq!(v.as_ptr() as usize % 256, 0);
    }
    assert_eq!(v[99].0[0], 1);
}

#[test]
fn a_full_heap_is_an_error_not_a_crash() {
    let h = LocalHeap::new("tlsf", mem(64 << 10)).unwrap();
    let mut v: AVec<u8, &LocalHeap> = AVec::new_in(&h);
    assert!(v.try_reserve(1 << 20).is_err());
    assert!(v.try_reserve(1000).is_ok());
}
