//! The codec sits in every packet's path: parsing and serialising a segment
//! must not touch the heap. A counting global allocator proves it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use mplab_wire::samples::segment_mix;
use mplab_wire::TcpHeader;

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
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
    for (h, b) in mix.iter().zip(bufs.iter_mut()) {
        let n = h.encode(b).unwrap();
        let (back, m) = TcpHeader::decode(&b[..n]).unwrap();
        assert_eq!(m, n);
        total += back.options.mptcp().count();
    }
    let after = ALLOCS.load(Ordering::Relaxed);
    assert_eq!(after - before, 0, "allocations on the codec hot path");
    assert!(total >= mix.len());
}
