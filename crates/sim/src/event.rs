//! The simulator's pending-event queue.
//!
//! Requirements, and how they are met:
//!
//! * **Deterministic ties.** Many events share a timestamp (a link wake-up
//!   and a timer at the same nanosecond, all flows starting at t = 0). They
//!   must pop in a fixed order or two runs with the same seed diverge. Each
//!   event gets a sequence number at `schedule`, and the queue is ordered by
//!   the key `time << 64 | seq`: equal times pop in scheduling (FIFO) order,
//!   whatever the internal layout. Keys are unique, so the order is total.
//! * **Speed at scale.** A fat-tree run keeps tens of thousands of events
//!   pending and processes millions per second; a balanced tree or a
//!   `multimap` (what htsim uses) pays pointer chasing and an allocation per
//!   event, and even a binary heap pays ~log2(n) cache-missing levels per
//!   pop. The main structure here is a **radix heap** (Ahuja, Mehlhorn,
//!   Orlin & Tarjan 1990), which exploits the fact that a simulation's
//!   clock never goes back: an event is filed in bucket `b` = position of
//!   the highest bit in which its key differs from the last minimum, a
//!   plain `Vec` push, O(1). A pop takes the minimum from bucket 0; when
//!   that empties, the lowest non-empty bucket is re-filed relative to its
//!   own minimum, and every entry moves to a strictly lower bucket, so each
//!   entry is touched at most a few times over its life (about log2 of how
//!   far ahead it was scheduled). Entries live inline in the bucket
//!   vectors, whose capacity is kept: no allocation in steady state.
//! * **Dense near future.** On a busy data-centre run most events are
//!   link wake-ups one or two microseconds ahead, about a nanosecond apart:
//!   the radix heap re-files each of them about ten times before it pops
//!   (a sixth of all instructions of the k=8 fat-tree benchmark). Events
//!   due within `WHEEL` (4096) nanoseconds of the last popped one go instead to
//!   a timing wheel (one FIFO list per nanosecond, a bitmap of non-empty
//!   slots): O(1) in and out. The radix heap keeps the rest; a pop takes
//!   the earlier head (see [`EventQueue`] for why FIFO holds across both).
//! * **Any input is accepted.** An event scheduled *before* the radix
//!   heap's reference key (in the past, or between the last pop and the
//!   next pending event) cannot be filed in a bucket; it goes to a small
//!   4-ary min-heap (`early`), all of whose keys are below every key in
//!   the radix part, so `early` simply pops first. In a simulation this
//!   holds only events due before everything else already pending.
//!
//! Measured on the 2-core development machine (release build, 8-byte
//! events, 50 000 pending, "hold" model: pop one, schedule one a random
//! delta later, 10 M times): this queue ~46 ns per pop+schedule (~22 M/s;
//! the radix heap alone was ~50-60 ns), the 4-ary heap alone ~130 ns,
//! `std::collections::BinaryHeap` ~175 ns (23 Nov 2026). The wheel's gain
//! shows on dense runs rather than here: 16 % fewer instructions on the
//! k=8 fat-tree benchmark. Re-measure with the ignored `hold_speed` test:
//! `cargo test -p mplab-sim --lib --release -- --ignored --nocapture hold_speed`.

use mplab_proto::Instant;

/// The ordering key `time << 64 | seq`, kept as two words: a `u128`
/// would force 16-byte alignment and make every entry 32 bytes instead of
/// 24 (entries are copied each time the radix heap re-files them). The
/// derived order compares `time`, then `seq`: the same as the 128-bit key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    time: u64,
    seq: u64,
}

/// One pending event with its ordering key.
#[derive(Clone, Debug)]
struct Entry<E> {
    key: Key,
    ev: E,
}

#[inline(always)]
fn make_key(time: u64, seq: u64) -> Key {
    Key { time, seq }
}

#[inline(always)]
fn key_time(key: Key) -> Instant {
    Instant(key.time)
}

/// Bucket of `key` relative to the reference `last` (`key >= last`): 0 if
/// equal, else 1 + the index of the highest differing bit of the 128-bit
/// key.
#[inline(always)]
fn bucket_of(key: Key, last: Key) -> usize {
    let t = key.time ^ last.time;
    if t != 0 {
        128 - t.leading_zeros() as usize
    } else {
        64 - (key.seq ^ last.seq).leading_zeros() as usize
    }
}

const BUCKETS: usize = 129;

/// An implicit 4-ary min-heap of entries: half the depth of a binary heap,
/// four adjacent children per node, and Floyd's bottom-up pop (the leaf
/// moved to the root is walked straight down along the smallest children,
/// 3 comparisons per level, then sifted up, which rarely moves it).
#[derive(Clone, Debug)]
struct Heap4<E> {
    v: Vec<Entry<E>>,
}

/// Children per heap node.
const ARITY: usize = 4;

impl<E> Heap4<E> {
    fn new() -> Self {
        Heap4 { v: Vec::new() }
    }

    #[inline]
    fn peek(&self) -> Option<&Entry<E>> {
        self.v.first()
    }

    #[inline]
    fn push(&mut self, e: Entry<E>) {
        self.v.push(e);
        self.sift_up(self.v.len() - 1);
    }

    #[inline]
    fn pop(&mut self) -> Option<Entry<E>> {
        let last = self.v.pop()?;
        if self.v.is_empty() {
            return Some(last);
        }
        let root = std::mem::replace(&mut self.v[0], last);
        self.sift_down_bottom_up();
        Some(root)
    }

    #[inline]
    fn sift_up(&mut self, mut i: usize) {
        let h = &mut self.v;
        let key = h[i].key;
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if h[parent].key <= key {
                break;
            }
            h.swap(i, parent);
            i = parent;
        }
    }

    #[inline]
    fn sift_down_bottom_up(&mut self) {
        let h = &mut self.v;
        let n = h.len();
        let mut i = 0usize;
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            let end = (first + ARITY).min(n);
            let mut best = first;
            let mut best_key = h[first].key;
            for (c, e) in h[first + 1..end].iter().enumerate() {
                if e.key < best_key {
                    best = first + 1 + c;
                    best_key = e.key;
                }
            }
            h.swap(i, best);
            i = best;
        }
        self.sift_up(i);
    }
}

/// The radix heap: a priority queue of events keyed by time, FIFO among
/// equal times, for any times (the far future, and the past).
///
/// Invariants: every key in `early` is below `last`; every key in the
/// buckets is `>= last`, in the bucket given by [`bucket_of`]; and whenever
/// the buckets hold anything, bucket 0 holds exactly the smallest of them
/// (key == `last`). So the minimum is `early`'s top if any, else bucket 0's.
#[derive(Clone, Debug)]
struct RadixQueue<E> {
    buckets: Vec<Vec<Entry<E>>>,
    /// Bit `b - 1` set when bucket `b >= 1` is non-empty.
    mask: u128,
    /// The radix heap's reference key.
    last: Key,
    /// Entries in the buckets.
    radix_len: usize,
    early: Heap4<E>,
    /// Sequence number of the next scheduled event. 64 bits cannot wrap in
    /// any run (10^9 events/s would need 584 years).
    next_seq: u64,
}

impl<E> RadixQueue<E> {
    fn new() -> Self {
        RadixQueue { buckets: (0..BUCKETS).map(|_| Vec::new()).collect(), mask: 0, last: make_key(0, 0), radix_len: 0, early: Heap4::new(), next_seq: 0 }
    }

    /// Number of pending events.
    #[inline]
    fn len(&self) -> usize {
        self.radix_len + self.early.v.len()
    }

    /// Drops every pending event. Sequence numbers keep counting, so
    /// ordering among events scheduled later is unaffected.
    fn clear(&mut self) {
        for b in &mut self.buckets {
            b.clear();
        }
        self.mask = 0;
        self.radix_len = 0;
        self.early.v.clear();
    }

    /// Time of the earliest pending event.
    #[inline]
    fn peek_time(&self) -> Option<Instant> {
        self.peek_entry().map(|e| key_time(e.key))
    }

    /// The earliest pending event, without removing it.
    #[inline]
    fn peek(&self) -> Option<(Instant, &E)> {
        self.peek_entry().map(|e| (key_time(e.key), &e.ev))
    }

    #[inline]
    fn peek_entry(&self) -> Option<&Entry<E>> {
        self.early.peek().or_else(|| self.buckets[0].first())
    }

    /// Adds `ev` to happen at `at`. Any time is accepted, including one
    /// earlier than events already popped (the queue does not know "now";
    /// such an event simply pops next).
    #[inline]
    fn schedule(&mut self, at: Instant, ev: E) {
        let key = make_key(at.0, self.next_seq);
        self.next_seq = self.next_seq.wrapping_add(1);
        let e = Entry { key, ev };
        if self.radix_len == 0 && self.early.v.is_empty() {
            // Empty: any reference will do, take this key (bucket 0).
            self.last = key;
            self.buckets[0].push(e);
            self.radix_len = 1;
            return;
        }
        if key < self.last {
            self.early.push(e);
            return;
        }
        let b = bucket_of(key, self.last);
        self.buckets[b].push(e);
        if b > 0 {
            self.mask |= 1u128 << (b - 1);
        }
        self.radix_len += 1;
        if self.buckets[0].is_empty() {
            // The buckets were empty (only `early` held events): restore
            // the invariant that bucket 0 holds their minimum.
            self.refill();
        }
    }

    /// Removes and returns the earliest event (FIFO among equal times).
    #[inline]
    fn pop(&mut self) -> Option<(Instant, E)> {
        if let Some(e) = self.early.pop() {
            return Some((key_time(e.key), e.ev));
        }
        let e = self.buckets[0].pop()?;
        self.radix_len -= 1;
        if self.buckets[0].is_empty() {
            self.refill();
        }
        Some((key_time(e.key), e.ev))
    }

    /// Bucket 0 is empty: re-files the lowest non-empty bucket relative to
    /// its minimum, which lands in bucket 0 and becomes the reference. All
    /// of that bucket's keys share their bits above its index with the
    /// minimum, so each moves to a strictly lower bucket.
    fn refill(&mut self) {
        while self.buckets[0].is_empty() && self.mask != 0 {
            self.refill_from_lowest();
        }
    }

    fn refill_from_lowest(&mut self) {
        let b = self.mask.trailing_zeros() as usize + 1;
        self.mask &= !(1u128 << (b - 1));
        let (lower, upper) = self.buckets.split_at_mut(b);
        let src = &mut upper[0];
        let Some(min) = src.iter().map(|e| e.key).min() else { return };
        self.last = min;
        let mut mask = self.mask;
        for e in src.drain(..) {
            let nb = bucket_of(e.key, min);
            if nb > 0 {
                mask |= 1u128 << (nb - 1);
            }
            lower[nb].push(e);
        }
        self.mask = mask;
    }
}


/// Slots of the timing wheel: one per nanosecond of the near future.
const WHEEL: usize = 1 << 12;
const WHEEL_MASK: u64 = WHEEL as u64 - 1;
const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct WNode<E> {
    time: u64,
    next: u32,
    ev: Option<E>,
}

/// A timing wheel for the next `WHEEL` (4096) nanoseconds after the queue's
/// current time: slot `time % WHEEL` holds the events of that nanosecond
/// in a FIFO list (nodes in one arena, reused through a free list), and a
/// bitmap of non-empty slots finds the next one. Scheduling and popping are
/// O(1), where the radix heap re-files each event about log2(how far ahead)
/// times: on a busy data-centre run, where link wake-ups fall one or two
/// microseconds ahead and about a nanosecond apart, that re-filing was a
/// sixth of all instructions.
///
/// Every entry lies in `[cur, cur + WHEEL)` for the owner's current time
/// `cur` (which only grows), so one slot never mixes two times, and a scan
/// from `cur`'s slot around the wheel meets the times in order.
#[derive(Clone, Debug)]
struct Wheel<E> {
    head: Vec<u32>,
    tail: Vec<u32>,
    bits: Vec<u64>,
    nodes: Vec<WNode<E>>,
    /// First free node (a list through `next`).
    free: u32,
    len: usize,
}

impl<E> Wheel<E> {
    fn new() -> Self {
        Wheel { head: vec![NIL; WHEEL], tail: vec![NIL; WHEEL], bits: vec![0; WHEEL / 64], nodes: Vec::new(), free: NIL, len: 0 }
    }

    #[inline]
    fn push(&mut self, time: u64, ev: E) {
        let n = if self.free != NIL {
            let n = self.free;
            let node = &mut self.nodes[n as usize];
            self.free = node.next;
            *node = WNode { time, next: NIL, ev: Some(ev) };
            n
        } else {
            self.nodes.push(WNode { time, next: NIL, ev: Some(ev) });
            (self.nodes.len() - 1) as u32
        };
        let s = (time & WHEEL_MASK) as usize;
        if self.head[s] == NIL {
            self.head[s] = n;
            self.bits[s / 64] |= 1 << (s % 64);
        } else {
            let t = self.tail[s] as usize;
            self.nodes[t].next = n;
        }
        self.tail[s] = n;
        self.len += 1;
    }

    /// The first non-empty slot at or after `cur`'s, around the wheel.
    #[inline]
    fn first_slot(&self, cur: u64) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let from = (cur & WHEEL_MASK) as usize;
        let (w0, b0) = (from / 64, from % 64);
        let m = self.bits[w0] & (!0u64 << b0);
        if m != 0 {
            return Some(w0 * 64 + m.trailing_zeros() as usize);
        }
        let words = WHEEL / 64;
        for i in 1..=words {
            let w = (w0 + i) % words;
            let m = if w == w0 { self.bits[w] & !(!0u64 << b0) } else { self.bits[w] };
            if m != 0 {
                return Some(w * 64 + m.trailing_zeros() as usize);
            }
        }
        None
    }

    #[inline]
    fn peek_at(&self, slot: usize) -> (u64, &E) {
        let n = &self.nodes[self.head[slot] as usize];
        (n.time, n.ev.as_ref().expect("queued node holds its event"))
    }

    #[inline]
    fn pop_at(&mut self, slot: usize) -> (u64, E) {
        let n = self.head[slot];
        let node = &mut self.nodes[n as usize];
        let (time, ev, next) = (node.time, node.ev.take().expect("queued node holds its event"), node.next);
        node.next = self.free;
        self.free = n;
        self.head[slot] = next;
        if next == NIL {
            self.tail[slot] = NIL;
            self.bits[slot / 64] &= !(1 << (slot % 64));
        }
        self.len -= 1;
        (time, ev)
    }

    fn clear(&mut self) {
        self.head.fill(NIL);
        self.tail.fill(NIL);
        self.bits.fill(0);
        self.nodes.clear();
        self.free = NIL;
        self.len = 0;
    }
}

/// A priority queue of events keyed by time, FIFO among equal times.
///
/// Two parts: a timing wheel for the next `WHEEL` (4096) nanoseconds after the
/// time of the last popped event (`cur`), and the radix heap for everything
/// else (the farther future, and the past: any time is accepted). An event
/// goes to the wheel when its time falls in that window, else to the heap;
/// a pop takes the earlier of the two heads. FIFO holds across the two:
/// an event of time `t` goes to the heap only while `t` is beyond the
/// window, and once `t` is inside it stays inside (`cur` only grows), so
/// every heap event of time `t` was scheduled before every wheel event of
/// time `t`: on equal times the heap's goes first.
#[derive(Clone, Debug)]
pub struct EventQueue<E> {
    wheel: Wheel<E>,
    far: RadixQueue<E>,
    cur: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue { wheel: Wheel::new(), far: RadixQueue::new(), cur: 0 }
    }

    /// Number of pending events.
    #[inline]
    pub fn len(&self) -> usize {
        self.wheel.len + self.far.len()
    }

    /// True when nothing is pending.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every pending event. Ordering among events scheduled later is
    /// unaffected.
    pub fn clear(&mut self) {
        self.wheel.clear();
        self.far.clear();
    }

    /// Adds `ev` to happen at `at`. Any time is accepted, including one
    /// earlier than events already popped (the queue does not know "now";
    /// such an event simply pops next).
    #[inline]
    pub fn schedule(&mut self, at: Instant, ev: E) {
        if at.0 >= self.cur && at.0 - self.cur < WHEEL as u64 {
            self.wheel.push(at.0, ev);
        } else {
            self.far.schedule(at, ev);
        }
    }

    /// Which part holds the earliest event: `Some(Ok(slot))` the wheel's
    /// slot, `Some(Err(()))` the heap (also on equal times, see above).
    #[inline]
    fn earliest(&self) -> Option<Result<usize, ()>> {
        let slot = self.wheel.first_slot(self.cur);
        match (slot, self.far.peek_time()) {
            (None, None) => None,
            (Some(s), None) => Some(Ok(s)),
            (None, Some(_)) => Some(Err(())),
            (Some(s), Some(f)) => Some(if f.0 <= self.wheel.peek_at(s).0 { Err(()) } else { Ok(s) }),
        }
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<Instant> {
        self.peek().map(|(t, _)| t)
    }

    /// The earliest pending event, without removing it.
    #[inline]
    pub fn peek(&self) -> Option<(Instant, &E)> {
        match self.earliest()? {
            Ok(s) => {
                let (t, ev) = self.wheel.peek_at(s);
                Some((Instant(t), ev))
            }
            Err(()) => self.far.peek(),
        }
    }

    /// Removes and returns the earliest event (FIFO among equal times).
    #[inline]
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        self.pop_until(Instant(u64::MAX))
    }

    /// Removes and returns the earliest event if it is due by `limit`.
    #[inline]
    pub fn pop_until(&mut self, limit: Instant) -> Option<(Instant, E)> {
        let (t, ev) = match self.earliest()? {
            Ok(s) => {
                if self.wheel.peek_at(s).0 > limit.0 {
                    return None;
                }
                let (t, ev) = self.wheel.pop_at(s);
                (Instant(t), ev)
            }
            Err(()) => {
                if self.far.peek_time().is_some_and(|t| t > limit) {
                    return None;
                }
                self.far.pop()?
            }
        };
        self.cur = self.cur.max(t.0);
        Some((t, ev))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pops_in_time_order() {
        let mut q = EventQueue::new();
        assert!(q.is_empty());
        assert_eq!(q.pop(), None);
        assert_eq!(q.peek_time(), None);
        for t in [50u64, 10, 40, 20, 30, 0, u64::MAX] {
            q.schedule(Instant(t), t);
        }
        assert_eq!(q.len(), 7);
        assert_eq!(q.peek_time(), Some(Instant(0)));
        assert_eq!(q.peek(), Some((Instant(0), &0)));
        let out: Vec<u64> = std::iter::from_fn(|| {
            q.pop().map(|(t, e)| {
                assert_eq!(t.0, e);
                e
            })
        })
        .collect();
        assert_eq!(out, vec![0, 10, 20, 30, 40, 50, u64::MAX]);
        assert!(q.is_empty());
    }

    #[test]
    fn equal_times_pop_fifo() {
        let mut q = EventQueue::new();
        for i in 0..1000u32 {
            // Three timestamps, interleaved, scheduled in index order.
            q.schedule(Instant(u64::from(i % 3)), i);
        }
        let mut last = (0u64, None::<u32>);
        while let Some((t, i)) = q.pop() {
            if t.0 == last.0 {
                if let Some(prev) = last.1 {
                    assert!(i > prev, "FIFO broken at t={} ({prev} then {i})", t.0);
                }
            } else {
                assert!(t.0 > last.0);
            }
            last = (t.0, Some(i));
        }
    }

    #[test]
    fn interleaved_schedule_and_pop() {
        // A discrete-event loop: each popped event schedules two more, some
        // at the same time (must come after everything already at that time).
        let mut q = EventQueue::new();
        q.schedule(Instant(0), (0u64, 0u32));
        let mut id = 1u32;
        let mut popped = Vec::new();
        let mut now = 0;
        while let Some((t, (at, i))) = q.pop() {
            assert_eq!(t.0, at);
            assert!(t.0 >= now);
            now = t.0;
            popped.push((t.0, i));
            if id < 5000 {
                q.schedule(Instant(now), (now, id));
                q.schedule(Instant(now + u64::from(id % 7)), (now + u64::from(id % 7), id + 1));
                id += 2;
            }
        }
        assert_eq!(popped.len(), id as usize);
        // Among equal times, ids (= scheduling order) increase.
        for w in popped.windows(2) {
            assert!(w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1), "{w:?}");
        }
    }

    /// An event beyond the wheel's window goes to the heap; another of the
    /// same time, scheduled once the window has moved over that time, goes
    /// to the wheel: the first must still pop first.
    #[test]
    fn equal_times_across_wheel_and_heap_pop_fifo() {
        let mut q = EventQueue::new();
        let t = WHEEL as u64 + 5;
        q.schedule(Instant(t), 'a'); // beyond the window: the heap
        q.schedule(Instant(10), 'x');
        assert_eq!(q.pop(), Some((Instant(10), 'x'))); // the window moves
        q.schedule(Instant(t), 'b'); // inside it now: the wheel
        q.schedule(Instant(t - 1), 'c');
        assert_eq!(q.len(), 3);
        assert_eq!(q.peek(), Some((Instant(t - 1), &'c')));
        assert_eq!(q.pop(), Some((Instant(t - 1), 'c')));
        assert_eq!(q.pop(), Some((Instant(t), 'a')));
        assert_eq!(q.pop(), Some((Instant(t), 'b')));
        assert_eq!(q.pop(), None);
        // pop_until leaves what is not due yet.
        q.schedule(Instant(t + 100), 'd');
        assert_eq!(q.pop_until(Instant(t + 99)), None);
        assert_eq!(q.pop_until(Instant(t + 100)), Some((Instant(t + 100), 'd')));
    }

    #[test]
    fn scheduling_in_the_past_is_accepted() {
        let mut q = EventQueue::new();
        q.schedule(Instant(100), 'a');
        assert_eq!(q.pop(), Some((Instant(100), 'a')));
        q.schedule(Instant(200), 'b');
        q.schedule(Instant(5), 'c');
        assert_eq!(q.pop(), Some((Instant(5), 'c')));
        assert_eq!(q.pop(), Some((Instant(200), 'b')));
        q.schedule(Instant(1), 'd');
        q.clear();
        assert!(q.is_empty());
    }

    /// A long discrete-event-like run (hold model with bursts of equal
    /// times and occasional events in the past) against a BTreeSet model:
    /// exercises deep buckets, refills and the `early` heap together.
    #[test]
    fn matches_reference_model_at_scale() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut q = EventQueue::new();
        let mut model = std::collections::BTreeSet::new();
        let mut seq = 0u64;
        let mut now = 0u64;
        for step in 0..200_000u32 {
            let r = rnd();
            let n_sched = if model.len() < 3000 { 2 } else { (r % 2) as usize };
            for k in 0..n_sched {
                let t = match (r >> (8 * k)) % 16 {
                    0 => now,                              // same time: FIFO
                    1 => now.saturating_sub(rnd() % 1000), // in the past
                    2 => rnd(),                            // anywhere
                    _ => now + ((rnd() % 1_000_000) >> (rnd() % 20)),
                };
                q.schedule(Instant(t), seq);
                model.insert((t, seq));
                seq += 1;
            }
            if step % 3 != 0 {
                let want = model.pop_first();
                let got = q.pop().map(|(t, s)| (t.0, s));
                assert_eq!(got, want, "step {step}");
                if let Some((t, _)) = got {
                    now = t;
                }
            }
            assert_eq!(q.len(), model.len());
            assert_eq!(q.peek_time().map(|t| t.0), model.first().map(|p| p.0));
        }
        while let Some((t, s)) = q.pop() {
            assert_eq!(Some((t.0, s)), model.pop_first());
        }
        assert!(model.is_empty());
    }

    proptest! {
        /// Random mixes of schedules and pops: every pop returns the
        /// smallest (time, scheduling order) among pending events, checked
        /// against a sorted reference model.
        #[test]
        fn pops_sorted_by_time_then_seq(ops in proptest::collection::vec((any::<bool>(), prop_oneof![0u64..50, any::<u64>()]), 0..400)) {
            let mut q = EventQueue::new();
            let mut model: std::collections::BTreeSet<(u64, u64)> = Default::default();
            let mut seq = 0u64;
            for (is_pop, t) in ops {
                if is_pop {
                    let want = model.pop_first();
                    let got = q.pop().map(|(t, s)| (t.0, s));
                    prop_assert_eq!(got, want);
                } else {
                    q.schedule(Instant(t), seq);
                    model.insert((t, seq));
                    seq += 1;
                }
                prop_assert_eq!(q.len(), model.len());
                prop_assert_eq!(q.peek_time().map(|t| t.0), model.first().map(|p| p.0));
            }
            let mut prev = None;
            while let Some((t, s)) = q.pop() {
                prop_assert_eq!(Some((t.0, s)), model.pop_first());
                if let Some(p) = prev { prop_assert!(p < (t.0, s)); }
                prev = Some((t.0, s));
            }
        }
    }

    /// An 8-byte event like the world's.
    #[derive(Clone, Copy, Debug)]
    #[allow(dead_code)]
    enum Ev {
        Wake { link: u32, dir: u8 },
        Timer { flow: u32 },
    }

    /// The "hold" benchmark: `pending` events in the queue, then `ops`
    /// times pop one and schedule one at now + random delta (exponential-ish
    /// spread via a cheap xorshift). Prints schedule+pop pairs per second.
    /// `cargo test -p mplab-sim --lib --release -- --ignored --nocapture hold_speed`
    #[test]
    #[ignore]
    fn hold_speed() {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let pending = 50_000usize;
        let ops = 10_000_000usize;
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let deltas: Vec<u64> = (0..1 << 16).map(|_| (rnd() % 1_000_000) >> (rnd() % 12)).collect();

        let mut q = EventQueue::new();
        for i in 0..pending {
            q.schedule(Instant(deltas[i & 0xffff]), Ev::Wake { link: i as u32, dir: 0 });
        }
        let t0 = std::time::Instant::now();
        let mut checksum = 0u64;
        for i in 0..ops {
            let (t, ev) = q.pop().unwrap();
            if let Ev::Wake { link, .. } = ev {
                checksum = checksum.wrapping_add(u64::from(link));
            }
            q.schedule(t + std::time::Duration::from_nanos(deltas[i & 0xffff]), Ev::Timer { flow: i as u32 });
        }
        let dt = t0.elapsed().as_secs_f64();
        println!("EventQueue (wheel + radix): {:.1} M hold ops/s ({:.1} ns/op) [{checksum}]", ops as f64 / dt / 1e6, dt * 1e9 / ops as f64);

        // The 4-ary heap alone (the `early` part).
        let mut h4 = Heap4::new();
        let mut seq = 0u64;
        for i in 0..pending {
            h4.push(Entry { key: make_key(deltas[i & 0xffff], seq), ev: Ev::Wake { link: i as u32, dir: 0 } });
            seq += 1;
        }
        let t0 = std::time::Instant::now();
        let mut checksum = 0u64;
        for i in 0..ops {
            let e = h4.pop().unwrap();
            if let Ev::Wake { link, .. } = e.ev {
                checksum = checksum.wrapping_add(u64::from(link));
            }
            let t = e.key.time + deltas[i & 0xffff];
            h4.push(Entry { key: make_key(t, seq), ev: Ev::Timer { flow: i as u32 } });
            seq += 1;
        }
        let dt = t0.elapsed().as_secs_f64();
        println!("4-ary heap:       {:.1} M hold ops/s ({:.1} ns/op) [{checksum}]", ops as f64 / dt / 1e6, dt * 1e9 / ops as f64);

        // Reference: std BinaryHeap keyed by Reverse((time, seq)).
        #[derive(PartialEq, Eq, PartialOrd, Ord)]
        struct K(Reverse<u128>, u64);
        let mut h = BinaryHeap::with_capacity(pending + 1);
        let mut seq = 0u64;
        for i in 0..pending {
            h.push(K(Reverse(u128::from(deltas[i & 0xffff]) << 64 | u128::from(seq)), i as u64));
            seq += 1;
        }
        let t0 = std::time::Instant::now();
        let mut checksum = 0u64;
        for i in 0..ops {
            let K(Reverse(k), v) = h.pop().unwrap();
            checksum = checksum.wrapping_add(v);
            let t = (k >> 64) as u64 + deltas[i & 0xffff];
            h.push(K(Reverse(u128::from(t) << 64 | u128::from(seq)), i as u64));
            seq += 1;
        }
        let dt = t0.elapsed().as_secs_f64();
        println!("std BinaryHeap:   {:.1} M hold ops/s ({:.1} ns/op) [{checksum}]", ops as f64 / dt / 1e6, dt * 1e9 / ops as f64);
    }
}
