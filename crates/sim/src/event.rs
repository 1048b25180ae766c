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
//! * **Any input is accepted.** An event scheduled *before* the radix
//!   heap's reference key (in the past, or between the last pop and the
//!   next pending event) cannot be filed in a bucket; it goes to a small
//!   4-ary min-heap (`early`), all of whose keys are below every key in
//!   the radix part, so `early` simply pops first. In a simulation this
//!   holds only events due before everything else already pending.
//!
//! Measured on the 2-core development machine (release build, 8-byte
//! events, 50 000 pending, "hold" model: pop one, schedule one a random
//! delta later, 10 M times): this queue ~50 ns per pop+schedule (~20 M/s),
//! the 4-ary heap alone ~100-117 ns, `std::collections::BinaryHeap` ~143
//! ns. Re-measure with the ignored `hold_speed` test:
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

/// A priority queue of events keyed by time, FIFO among equal times.
///
/// Invariants: every key in `early` is below `last`; every key in the
/// buckets is `>= last`, in the bucket given by [`bucket_of`]; and whenever
/// the buckets hold anything, bucket 0 holds exactly the smallest of them
/// (key == `last`). So the minimum is `early`'s top if any, else bucket 0's.
#[derive(Clone, Debug)]
pub struct EventQueue<E> {
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

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue { buckets: (0..BUCKETS).map(|_| Vec::new()).collect(), mask: 0, last: make_key(0, 0), radix_len: 0, early: Heap4::new(), next_seq: 0 }
    }

    /// Number of pending events.
    #[inline]
    pub fn len(&self) -> usize {
        self.radix_len + self.early.v.len()
    }

    /// True when nothing is pending.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every pending event. Sequence numbers keep counting, so
    /// ordering among events scheduled later is unaffected.
    pub fn clear(&mut self) {
        for b in &mut self.buckets {
            b.clear();
        }
        self.mask = 0;
        self.radix_len = 0;
        self.early.v.clear();
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<Instant> {
        self.peek_entry().map(|e| key_time(e.key))
    }

    /// The earliest pending event, without removing it.
    #[inline]
    pub fn peek(&self) -> Option<(Instant, &E)> {
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
    pub fn schedule(&mut self, at: Instant, ev: E) {
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
    pub fn pop(&mut self) -> Option<(Instant, E)> {
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
        println!("EventQueue radix: {:.1} M hold ops/s ({:.1} ns/op) [{checksum}]", ops as f64 / dt / 1e6, dt * 1e9 / ops as f64);

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
