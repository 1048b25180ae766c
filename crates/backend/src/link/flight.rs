//! The in-flight pipe: packets on their way to the far end, by arrival
//! time.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use super::serialiser::Ser;

/// A packet on its way to the far end. Packets still waiting for (or in)
/// serialisation are here too, since their arrival is already known; the
/// matching `Ser` record says they still occupy the queue.
///
/// Aligned to 32 bytes: with the simulator's 20-byte packet handle an entry
/// is exactly 32 bytes and never straddles two cache lines (delivering
/// reads the front entry, usually a cache miss already).
#[derive(Debug, Clone, Copy)]
#[repr(align(32))]
pub(super) struct Fly<P> {
    pub at: u64,
    pub size: u32,
    pub pkt: P,
}

/// Heap wrapper: the smallest (arrival, seq) is the greatest; `seq` is the
/// packet's sequence number on the link (ties in sending order, and how a
/// retiming finds the packet's record).
pub(super) struct ByArrival<P> {
    seq: u64,
    fly: Fly<P>,
}

impl<P> ByArrival<P> {
    fn key(&self) -> (u64, u64) {
        (self.fly.at, self.seq)
    }
}
impl<P> PartialEq for ByArrival<P> {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl<P> Eq for ByArrival<P> {}
impl<P> PartialOrd for ByArrival<P> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<P> Ord for ByArrival<P> {
    fn cmp(&self, o: &Self) -> Ordering {
        o.key().cmp(&self.key())
    }
}

/// Packets by arrival time. Without reordering, arrivals are non-decreasing
/// in sending order and a deque suffices (O(1)); with reordering a heap
/// keyed by (arrival, seq) keeps ties in sending order.
///
/// 64 bytes, one cache line: the heap is boxed so that the enum's tag can
/// live in the FIFO ring's never-null pointer.
pub(super) enum Flight<P> {
    Fifo(Fifo<P>),
    Heap(Box<BinaryHeap<ByArrival<P>>>),
}

/// A FIFO flight whose oldest packet sits inline (in the link direction's
/// first cache line) and the others in a ring buffer. Delivering takes the
/// packet from the line the wake-up reads anyway, and routing it overlaps
/// with loading the ring's entry that replaces it; reading the ring's front
/// first was a cache miss before every hop could go on.
pub(super) struct Fifo<P> {
    /// The oldest packet, unless its `at` is [`NO_ARRIVAL`] (empty).
    head: Fly<P>,
    /// The others, oldest first; empty when `head` is.
    pub(super) rest: VecDeque<Fly<P>>,
}

/// The arrival time that marks an empty [`Fifo`] head. No packet arrives
/// then: arrival times saturate one below it (584 years).
pub(super) const NO_ARRIVAL: u64 = u64::MAX;

impl<P: Copy + Default> Default for Fifo<P> {
    fn default() -> Self {
        Fifo { head: Fly { at: NO_ARRIVAL, size: 0, pkt: P::default() }, rest: VecDeque::new() }
    }
}

impl<P: Copy> Fifo<P> {
    #[inline]
    fn full(&self) -> bool {
        self.head.at != NO_ARRIVAL
    }

    #[inline]
    pub fn len(&self) -> usize {
        usize::from(self.full()) + self.rest.len()
    }

    #[inline]
    pub fn front(&self) -> Option<&Fly<P>> {
        self.full().then_some(&self.head)
    }

    #[inline]
    pub fn back(&self) -> Option<&Fly<P>> {
        self.rest.back().or(self.front())
    }

    #[inline]
    pub fn push_back(&mut self, f: Fly<P>) {
        debug_assert!(f.at != NO_ARRIVAL);
        if self.full() {
            self.rest.push_back(f);
        } else {
            self.head = f;
        }
    }

    #[inline]
    pub fn pop_front(&mut self) -> Option<Fly<P>> {
        if !self.full() {
            return None;
        }
        let f = self.head;
        match self.rest.pop_front() {
            Some(next) => self.head = next,
            None => self.head.at = NO_ARRIVAL,
        }
        Some(f)
    }

    fn get_mut(&mut self, i: usize) -> Option<&mut Fly<P>> {
        match i {
            0 if self.full() => Some(&mut self.head),
            _ if self.full() => self.rest.get_mut(i - 1),
            _ => None,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Fly<P>> {
        self.front().into_iter().chain(self.rest.iter())
    }

    /// Removes the packets arriving after `now` (a suffix: arrivals are in
    /// order) into `out`.
    pub fn drain_after(&mut self, now: u64, out: &mut Vec<P>) {
        if !self.full() {
            return;
        }
        if self.head.at > now {
            out.push(self.head.pkt);
            out.extend(self.rest.drain(..).map(|f| f.pkt));
            self.head.at = NO_ARRIVAL;
        } else {
            let keep = self.rest.partition_point(|f| f.at <= now);
            out.extend(self.rest.drain(keep..).map(|f| f.pkt));
        }
    }
}

impl<P: Copy> Flight<P> {
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Flight::Fifo(d) => d.len(),
            Flight::Heap(h) => h.len(),
        }
    }

    #[inline]
    pub fn last_at(&self) -> u64 {
        match self {
            Flight::Fifo(d) => d.back().map_or(0, |f| f.at),
            Flight::Heap(_) => 0,
        }
    }

    /// Adds the packet with sequence number `seq` on the link.
    #[inline]
    pub fn push(&mut self, seq: u64, fly: Fly<P>) {
        match self {
            Flight::Fifo(d) => d.push_back(fly),
            Flight::Heap(h) => h.push(ByArrival { seq, fly }),
        }
    }

    #[inline]
    pub fn next_at(&self) -> Option<u64> {
        match self {
            Flight::Fifo(d) => d.front().map(|f| f.at),
            Flight::Heap(h) => h.peek().map(|f| f.fly.at),
        }
    }

    #[inline]
    pub fn pop_due(&mut self, now: u64) -> Option<Fly<P>> {
        match self {
            Flight::Fifo(d) => {
                if d.front()?.at <= now {
                    d.pop_front()
                } else {
                    None
                }
            }
            Flight::Heap(h) => {
                if h.peek()?.fly.at <= now {
                    h.pop().map(|b| b.fly)
                } else {
                    None
                }
            }
        }
    }

    /// Removes every packet arriving after `now` into `out`; returns how many.
    pub fn drop_after(&mut self, now: u64, out: &mut Vec<P>) -> usize {
        let before = self.len();
        match self {
            Flight::Fifo(d) => d.drain_after(now, out),
            Flight::Heap(h) => {
                let (keep, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut **h).into_vec().into_iter().partition(|f| f.fly.at <= now);
                **h = keep.into();
                out.extend(gone.into_iter().map(|f| f.fly.pkt));
            }
        }
        before - self.len()
    }

    /// Recomputes the arrival of every packet still in the queue: `queue`
    /// holds their records, the first with sequence number `first_seq`,
    /// `live` of them not lost (and so here); `arrival(record, prev)` is a
    /// record's arrival given the previous packet's.
    pub fn retime_queued(&mut self, queue: &VecDeque<Ser>, first_seq: u64, live: usize, arrival: impl Fn(&Ser, u64) -> u64) {
        match self {
            Flight::Fifo(d) => {
                // The live queued packets are the last `live` entries, in
                // the same order as their records.
                let base = d.len().saturating_sub(live);
                let mut prev = if base > 0 { d.iter().nth(base - 1).map_or(0, |f| f.at) } else { 0 };
                for (j, r) in (base..).zip(queue.iter().filter(|r| !r.lost)) {
                    if let Some(f) = d.get_mut(j) {
                        f.at = arrival(r, prev);
                        prev = f.at;
                    }
                }
            }
            Flight::Heap(h) => {
                // Rare path (reordering links only): rebuild the heap.
                // The records are consecutive sequence numbers.
                let new: Vec<(u64, u64)> =
                    (first_seq..).zip(queue.iter()).filter(|(_, r)| !r.lost).map(|(seq, r)| (seq, arrival(r, 0))).collect();
                let mut v = std::mem::take(&mut **h).into_vec();
                for f in &mut v {
                    if let Ok(i) = new.binary_search_by_key(&f.seq, |e| e.0) {
                        f.fly.at = new[i].1;
                    }
                }
                **h = BinaryHeap::from(v);
            }
        }
    }
}
