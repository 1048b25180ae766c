//! Trace-driven capacity: a link direction whose serialiser is replaced by
//! a schedule of delivery opportunities, as Mahimahi's `mm-link` replays a
//! cellular trace.
//!
//! The semantics follow Mahimahi's `LinkQueue` (ravinet/mahimahi,
//! src/frontend/link_queue.cc, `rationalize` and `use_a_delivery_opportunity`;
//! this is an independent implementation of the same rules):
//!
//! * Each opportunity carries [`OPPORTUNITY_BYTES`] = 1504 bytes, the
//!   largest read from mm-link's TUN device, which counts 4 bytes of packet
//!   information in front of the IP packet ([`TUN_HEADER_BYTES`]): a
//!   packet of `size` IP bytes uses `size + 4` bytes, so one 1500-byte IP
//!   packet fills exactly one opportunity.
//! * Accounting is in bytes: several small packets share an opportunity,
//!   and a packet larger than what is left spills into the next ones. It
//!   leaves at the opportunity that carries its last byte.
//! * Bytes of an opportunity nobody is waiting for are wasted: an
//!   opportunity is only used by packets that arrived strictly before it
//!   (mm-link runs the schedule up to the arrival time before enqueueing),
//!   and what the queue cannot fill at that instant is lost, never banked.
//! * After its last opportunity the trace starts again, shifted by its
//!   last millisecond (the period), unless it does not loop: then the link
//!   has no capacity any more and packets wait in the queue for ever.
//! * The queue limit counts waiting packets, not the one whose bytes have
//!   started to leave: mm-link takes a packet off its queue when the first
//!   opportunity reaches it ([`TraceLink::waiting`]).
//!
//! Every time is decided when a packet is offered (the link model's rule,
//! see the module documentation of `link`), which works because the
//! schedule does not depend on the traffic: the opportunity a packet
//! leaves in follows from the packets ahead of it and their arrival times.

use std::collections::VecDeque;
use std::sync::Arc;

/// Bytes one delivery opportunity carries (mm-link's `PACKET_SIZE`).
pub const OPPORTUNITY_BYTES: u32 = 1504;
/// What mm-link's TUN device adds in front of each IP packet.
pub const TUN_HEADER_BYTES: u32 = 4;
const NS_PER_MS: u64 = 1_000_000;
/// The end of a packet that will never leave (a finished, non-looping trace).
pub(super) const NEVER: u64 = u64::MAX - 1;

/// A schedule of delivery opportunities: milliseconds from the link's
/// start, non-decreasing, the last one > 0 (checked by whoever reads the
/// file; [`DeliverySchedule::new`] refuses anything else).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliverySchedule {
    ms: Arc<[u64]>,
    looped: bool,
}

impl DeliverySchedule {
    /// None unless `ms` is non-empty, non-decreasing and ends after 0.
    pub fn new(ms: Arc<[u64]>, looped: bool) -> Option<Self> {
        let ok = ms.last().is_some_and(|&l| l > 0) && ms.windows(2).all(|w| w[0] <= w[1]);
        ok.then_some(DeliverySchedule { ms, looped })
    }

    pub fn opportunities_ms(&self) -> &[u64] {
        &self.ms
    }

    pub fn looped(&self) -> bool {
        self.looped
    }

    /// The period (the last opportunity's millisecond) in ns.
    pub fn period_ns(&self) -> u64 {
        self.ms.last().copied().unwrap_or(0).saturating_mul(NS_PER_MS)
    }

    /// The mean IP capacity in bit/s: 1500 bytes per opportunity.
    pub fn mean_rate_bps(&self) -> u64 {
        let bits = self.ms.len() as u128 * u128::from(OPPORTUNITY_BYTES - TUN_HEADER_BYTES) * 8;
        let period_ms = u128::from(self.ms.last().copied().unwrap_or(1).max(1));
        u64::try_from(bits * 1000 / period_ms).unwrap_or(u64::MAX)
    }
}

/// The opportunity cursor of one link direction and the start times of
/// the packets it has scheduled.
#[derive(Clone, Debug)]
pub(super) struct TraceLink {
    sched: DeliverySchedule,
    period_ns: u64,
    /// Index in the schedule of the next unused opportunity, in the cycle
    /// that starts at `base_ns`.
    next: usize,
    base_ns: u64,
    /// A non-looping trace has run out.
    finished: bool,
    /// The opportunity the last scheduled packet left in, and the bytes it
    /// has left for a packet that arrived before it.
    last_ns: u64,
    left: u32,
    /// When each packet still in the record queue got its first byte
    /// sent, oldest first (trimmed lazily to the record queue's length).
    starts: VecDeque<u64>,
}

/// How many opportunities of `ms` (a cycle starting at `base` ns) are at
/// or before `now`. Galloping from the front: a busy link's next
/// opportunity is almost always the first or one of the next few, and a
/// binary search over the whole trace touches a cache line per step.
fn past(ms: &[u64], base: u64, now: u64) -> usize {
    let gone = |m: u64| base + m * NS_PER_MS <= now;
    let mut hi = 1;
    while hi <= ms.len() && gone(ms[hi - 1]) {
        hi *= 2;
    }
    let lo = hi / 2;
    let hi = hi.min(ms.len());
    lo + ms[lo..hi].partition_point(|&m| gone(m))
}

impl TraceLink {
    pub fn new(sched: DeliverySchedule) -> Self {
        TraceLink { period_ns: sched.period_ns(), sched, next: 0, base_ns: 0, finished: false, last_ns: 0, left: 0, starts: VecDeque::new() }
    }

    pub fn schedule(&self) -> &DeliverySchedule {
        &self.sched
    }

    #[inline]
    fn at(&self, i: usize) -> u64 {
        self.base_ns + self.sched.ms[i] * NS_PER_MS
    }

    /// Moves past every opportunity at or before `now`: nobody was waiting
    /// for them.
    fn skip_to(&mut self, now: u64) {
        if self.finished {
            return;
        }
        // Whole idle cycles at once; their last opportunity is at the next
        // cycle's base.
        if now >= self.base_ns + self.period_ns {
            if !self.sched.looped {
                self.finished = true;
                return;
            }
            let cycles = (now - self.base_ns) / self.period_ns;
            self.base_ns += cycles * self.period_ns;
            self.next = 0;
        }
        self.next += past(&self.sched.ms[self.next..], self.base_ns, now);
        if self.next == self.sched.ms.len() {
            self.wrap();
            // The new cycle's opportunities at its base (at most `now`).
            if !self.finished {
                self.next = past(&self.sched.ms, self.base_ns, now);
            }
        }
    }

    fn wrap(&mut self) {
        self.next = 0;
        if self.sched.looped {
            self.base_ns += self.period_ns;
        } else {
            self.finished = true;
        }
    }

    /// Takes the next opportunity; None once a non-looping trace is over.
    fn take(&mut self) -> Option<u64> {
        if self.finished {
            return None;
        }
        let t = self.at(self.next);
        self.next += 1;
        if self.next == self.sched.ms.len() {
            self.wrap();
        }
        Some(t)
    }

    /// Schedules a packet of `size` IP bytes offered at `now`, behind every
    /// packet scheduled before it; returns when its last byte leaves
    /// ([`NEVER`] if the trace runs out first).
    pub fn offer(&mut self, now: u64, size: u32) -> u64 {
        let mut need = size.saturating_add(TUN_HEADER_BYTES);
        let mut start = None;
        if self.last_ns > now && self.left > 0 {
            // The packet ahead leaves in an opportunity after `now`: this
            // one is queued by then and takes the rest of it.
            start = Some(self.last_ns);
            if need <= self.left {
                self.left -= need;
                self.starts.push_back(self.last_ns);
                return self.last_ns;
            }
            need -= self.left;
            self.left = 0;
        } else {
            self.skip_to(now);
        }
        loop {
            let Some(t) = self.take() else {
                self.left = 0;
                self.starts.push_back(start.unwrap_or(NEVER));
                return NEVER;
            };
            start.get_or_insert(t);
            if need <= OPPORTUNITY_BYTES {
                self.left = OPPORTUNITY_BYTES - need;
                self.last_ns = t;
                self.starts.push_back(start.unwrap_or(t));
                return t;
            }
            need -= OPPORTUNITY_BYTES;
        }
    }

    /// The backlog the queue limit sees at `now` given the record queue
    /// (`queued` packets, `bytes`, the oldest of `head_size` bytes): the
    /// packet whose bytes have started to leave is no longer waiting.
    pub fn waiting(&mut self, now: u64, queued: usize, bytes: u64, head_size: u32) -> (usize, u64) {
        while self.starts.len() > queued {
            self.starts.pop_front();
        }
        match self.starts.front() {
            Some(&s) if s <= now => (queued - 1, bytes - u64::from(head_size)),
            _ => (queued, bytes),
        }
    }

    /// The link went down at `now`: the packet being sent is cut and what
    /// is left of its opportunity is wasted; the schedule runs on.
    pub fn abort(&mut self, now: u64) {
        self.left = 0;
        self.last_ns = self.last_ns.min(now);
        self.starts.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = NS_PER_MS;

    fn link(ms: &[u64], looped: bool) -> TraceLink {
        TraceLink::new(DeliverySchedule::new(ms.into(), looped).unwrap())
    }

    /// The galloping search finds what a binary search over the whole
    /// slice finds, at every instant around every opportunity.
    #[test]
    fn galloping_agrees_with_a_binary_search() {
        let ms: Vec<u64> = (0..300u64).map(|i| 1 + i / 3 + (i % 7) * (i % 2)).scan(0, |a, d| { *a = (*a).max(d); Some(*a) }).collect();
        for start in [0, 1, 5, 100, 299, 300] {
            let tail = &ms[start..];
            for now_ms in 0..=ms[299] + 1 {
                for now in [(now_ms * MS).saturating_sub(1), now_ms * MS, now_ms * MS + 1] {
                    let want = tail.partition_point(|&m| 7 + m * MS <= now);
                    assert_eq!(past(tail, 7, now), want, "start {start} now {now}");
                }
            }
        }
    }

    #[test]
    fn refuses_bad_schedules() {
        assert!(DeliverySchedule::new(Arc::from([] as [u64; 0]), true).is_none());
        assert!(DeliverySchedule::new(Arc::from([0u64, 0]), true).is_none());
        assert!(DeliverySchedule::new(Arc::from([3u64, 2]), true).is_none());
        assert_eq!(DeliverySchedule::new(Arc::from([1u64, 1, 2, 5, 5, 5]), true).unwrap().mean_rate_bps(), 6 * 1500 * 8 * 1000 / 5);
    }

    /// Full-size packets: one per opportunity; the trace 1,1,2,5,5,5
    /// repeats every 5 ms (6,6,7,10,10,10, ...).
    #[test]
    fn full_packets_take_one_opportunity_each_and_loop() {
        let mut l = link(&[1, 1, 2, 5, 5, 5], true);
        let ends: Vec<u64> = (0..9).map(|_| l.offer(0, 1500) / MS).collect();
        assert_eq!(ends, [1, 1, 2, 5, 5, 5, 6, 6, 7]);
    }

    /// 1000-byte packets (1004 with the TUN header): the second one takes
    /// the first's 500 spare bytes and 504 of the next opportunity.
    #[test]
    fn small_packets_share_and_span_opportunities() {
        let mut l = link(&[1, 1, 2, 5, 5, 5], true);
        let ends: Vec<u64> = (0..4).map(|_| l.offer(0, 1000) / MS).collect();
        // bytes: 1004 (opp0 left 500) | 500+504 (opp1 left 1000) | 1000+4 (opp2 left 1500) | 1004 of opp2
        assert_eq!(ends, [1, 1, 2, 2]);
        // Tiny packets fill what is left of an opportunity.
        let mut l = link(&[10], true);
        let ends: Vec<u64> = (0..30).map(|_| l.offer(0, 96) / MS).collect();
        // 15 packets of 100 bytes per 1504-byte opportunity.
        assert_eq!(ends.iter().filter(|&&e| e == 10).count(), 15);
        assert_eq!(ends.iter().filter(|&&e| e == 20).count(), 15);
    }

    /// An opportunity nobody waits for is wasted, including its leftover,
    /// and one at the arrival instant is already gone.
    #[test]
    fn unused_opportunities_are_wasted() {
        let mut l = link(&[1, 1, 2, 5, 5, 5], true);
        assert_eq!(l.offer(0, 100), MS); // leaves 1400 bytes of opp at 1 ms
        // Arrives at 1 ms exactly: the 1 ms opportunities are gone.
        assert_eq!(l.offer(MS, 100), 2 * MS);
        // Idle through 5..=10 ms; arrives at 10.5 ms: next is 11 ms.
        assert_eq!(l.offer(10 * MS + MS / 2, 1500), 11 * MS);
        // Long idle: many whole cycles skipped at once (cycle at 1000 ms).
        assert_eq!(l.offer(1000 * MS, 1500), 1001 * MS);
    }

    #[test]
    fn a_finished_trace_never_delivers() {
        let mut l = link(&[1, 2], false);
        assert_eq!(l.offer(0, 1500), MS);
        assert_eq!(l.offer(0, 1500), 2 * MS);
        assert_eq!(l.offer(0, 1500), NEVER);
        let mut l = link(&[1, 2], false);
        assert_eq!(l.offer(5 * MS, 1500), NEVER);
    }

    /// A 1000-byte packet spanning two opportunities is "in transit"
    /// between them and does not count against the queue limit.
    #[test]
    fn the_packet_in_transit_is_not_waiting() {
        let mut l = link(&[1, 3, 5], true);
        l.offer(0, 1000);
        l.offer(0, 1000); // starts at 1 ms, ends at 3 ms
        // Before 1 ms both wait.
        assert_eq!(l.waiting(MS / 2, 2, 2000, 1000), (2, 2000));
        // At 2 ms the first has left (retired by the caller); one record,
        // in transit.
        assert_eq!(l.waiting(2 * MS, 1, 1000, 1000), (0, 0));
    }

    /// Through the whole link model: delay added after the opportunity, a
    /// drop-tail limit of 2 packets that does not count the one in transit.
    #[test]
    fn link_direction_replays_the_trace() {
        use crate::link::{Jitter, LinkDirection, LinkParams, LossModel, Offer, QueueConfig};
        use crate::rng::SimRng;
        use mplab_proto::Instant;
        let p = LinkParams {
            rate_bps: 1,
            delay: std::time::Duration::from_millis(10),
            jitter: Jitter::None,
            loss: LossModel::None,
            queue: QueueConfig::drop_tail_packets(2),
            allow_reorder: false,
            duplicate: 0.0,
        };
        let mut l = LinkDirection::<u32>::new(p);
        l.set_trace(DeliverySchedule::new(Arc::from([1u64, 1, 2, 5, 5, 5]), true).unwrap());
        let mut rng = SimRng::new(1, 1);
        // Three full packets at 0: the third is refused (two waiting).
        let offers: Vec<Offer> = (0..3).map(|i| l.offer(Instant(0), i, 1500, &mut rng)).collect();
        assert_eq!(offers, [Offer::Queued, Offer::Queued, Offer::DroppedQueue]);
        // 1000 + 1000 at 1.5 ms: 10 leaves at 2 ms, 11 starts then; at
        // 2.5 ms 11 is in transit (it ends at 5 ms), so two more fit.
        assert_eq!(l.offer(Instant(3 * MS / 2), 10, 1000, &mut rng), Offer::Queued);
        assert_eq!(l.offer(Instant(3 * MS / 2), 11, 1000, &mut rng), Offer::Queued);
        assert_eq!(l.offer(Instant(5 * MS / 2), 12, 1000, &mut rng), Offer::Queued);
        assert_eq!(l.offer(Instant(5 * MS / 2), 13, 1000, &mut rng), Offer::Queued);
        assert_eq!(l.offer(Instant(5 * MS / 2), 14, 1000, &mut rng), Offer::DroppedQueue);
        let mut got = Vec::new();
        while let Some(t) = l.next_wakeup() {
            while let Some(d) = l.poll(t) {
                got.push((d.packet, d.at.0 / MS));
            }
        }
        // 10: opp 2 ms (1004, 500 left); 11: 500 + 504 of the first 5 ms
        // opportunity; 12: the 1000 left there + 4 of the second; 13: 1004
        // of the second's 1500. All plus 10 ms of delay.
        assert_eq!(got, [(0, 11), (1, 11), (10, 12), (11, 15), (12, 15), (13, 15)]);
    }
}
