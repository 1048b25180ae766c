//! The codec sits in every packet's path: parsing and serialising a segment
//! must not touch the heap. A counting global allocator proves it.
//!
//! Only the measuring thread's allocations count: the test harness's own
//! threads allocate whenever they like, and counted they made the test
//! fail by luck.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use mplab_wire::samples::segment_mix;
use mplab_wire::TcpHeader;

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Set on the measuring thread while it measures.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // `try_with`: a thread being torn down has no locals left.
        if COUNTING.try_with(|c| c.get()).unwrap_or(false) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

#[test]
fn parse_and_encode_do_not_allocate() {
    let mix = segment_mix();
    let mut bufs = vec![[0u8; 60]; mix.len()];
    let before = ALLOCS.load(Ordering::Relaxed);
    let mut total = 0;
    COUNTING.with(|c| c.set(true));
    for (h, b) in mix.iter().zip(bufs.iter_mut()) {
        let n = h.encode(b).unwrap();
        let (back, m) = TcpHeader::decode(&b[..n]).unwrap();
        assert_eq!(m, n);
        total += back.options.mptcp().count();
    }
    COUNTING.with(|c| c.set(false));
    let after = ALLOCS.load(Ordering::Relaxed);
    assert_eq!(after - before, 0, "allocations on the codec hot path");
    assert!(total >= mix.len());
}
