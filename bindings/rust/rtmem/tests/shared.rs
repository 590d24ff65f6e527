//! A shared heap between two processes: this test runs itself again as the
//! second process (RTMEM_SHARED_CHILD), which attaches at its own address,
//! finds the published array, checks it and writes its answer.
use core::alloc::Layout;
use rtmem::{ArenaLock, Heap};
use std::process::Command;

const N: usize = 1000;

fn child(name: &str) {
    let h = Heap::attach_shared(name, ArenaLock::Try).unwrap();
    let p = h.lookup("numbers").unwrap().cast::<u64>();
    let a = unsafe { core::slice::from_raw_parts_mut(p.as_ptr(), N) };
    for (i, x) in a.iter_mut().enumerate() {
        assert_eq!(*x, i as u64);
        *x *= 2;
    }
    let q = h.alloc(Layout::new::<u64>()).unwrap().cast::<u64>();
    unsafe { q.as_ptr().write(0x600d) };
    h.publish("answer", q.as_ptr().cast()).unwrap();
}

#[test]
fn two_processes_use_one_heap() {
    if let Ok(name) = std::env::var("RTMEM_SHARED_CHILD") {
        child(&name);
        return;
    }
    let name = format!("rtmem-rust-test-{}", std::process::id());
    let _ = Heap::unlink(&name);
    struct Unlink(String);
    impl Drop for Unlink {
        fn drop(&mut self) {
            let _ = Heap::unlink(&self.0);
        }
    }
    let _guard = Unlink(name.clone());
    let h = Heap::create_shared(&name, "tlsf", 1 << 20, ArenaLock::Try).unwrap();
    let p = h
        .alloc(Layout::array::<u64>(N).unwrap())
        .unwrap()
        .cast::<u64>();
    for i in 0..N {
        unsafe { p.as_ptr().add(i).write(i as u64) };
    }
    h.publish("numbers", p.as_ptr().cast()).unwrap();
    let st = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "two_processes_use_one_heap",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RTMEM_SHARED_CHILD", &name)
        .status()
        .unwrap();
    assert!(st.success(), "the second process failed: {}", st);
    let a = unsafe { core::slice::from_raw_parts(p.as_ptr(), N) };
    assert!(a.iter().enumerate().all(|(i, &x)| x == 2 * i as u64));
    let q = h.lookup("answer").unwrap().cast::<u64>();
    assert_eq!(unsafe { q.as_ptr().read() }, 0x600d);
    let (base, size) = h.shared_mapping().unwrap();
    assert!((q.as_ptr() as usize).wrapping_sub(base as usize) < size);
    assert_eq!(h.stats().live_blocks, 2);
    h.check().unwrap();
}
