//! One direction of a point-to-point link: a FIFO queue (drop-tail or RED)
//! in front of a serialiser, then propagation delay with optional jitter
//! and random loss.
//!
//! The model is written to be reused outside the simulator (the kernel
//! backend's emulator runs it against a real clock), so it is generic over
//! the packet type, owns no clock (every call takes `now`), schedules
//! nothing itself and only answers [`LinkDirection::next_wakeup`]: "when
//! should I be polled next".
//!
//! # How times are computed
//!
//! Everything about a packet is decided when it is offered, which keeps the
//! outcome independent of *when* the caller polls (an emulator polling late
//! and a simulator polling exactly must agree):
//!
//! * The serialiser's timeline is kept **exactly**, as integer nanoseconds
//!   plus a remainder in units of `1/rate` ns. A packet starts when both it
//!   and the serialiser are ready, `start = max(now, end of previous)`, and
//!   ends `size * 8 * 10^9 / rate` ns later; the remainder carries into the
//!   next packet, so a long busy period has no rounding drift. The end time
//!   reported and used for everything else is the exact end rounded up to
//!   the next whole nanosecond.
//! * Loss (Bernoulli or Gilbert-Elliott) and the jitter sample are drawn at
//!   offer time from the caller's stream and stored with the packet; the
//!   loss takes effect when serialisation ends (a corrupted frame still used
//!   the wire and is counted in `tx_*`).
//! * `arrival = end + delay + jitter`, and without `allow_reorder` also
//!   `>= arrival of the previous packet` so jitter never reorders.
//!
//! Internally there are two FIFOs: `queue` holds one small record per packet
//! that has not finished serialisation (this *is* the queue occupancy), and
//! `flight` holds the packets themselves, ordered by arrival (a `VecDeque`
//! behind an inline oldest entry, or a binary heap when reordering is
//! allowed). A packet that will be lost never enters `flight`, so it never
//! causes a wake-up. Records leave
//! `queue` lazily, whenever the link is called with a `now` past their end;
//! that is all the bookkeeping there is, O(1) amortised per packet, with no
//! allocation once the two deques have grown.
//!
//! Because the bookkeeping is lazy, [`LinkStats::queue_bytes`] and friends
//! describe the queue as of the latest call; call
//! [`LinkDirection::advance`] first for an exact reading at some `now`.
//! Drop decisions are always exact: `offer` advances before deciding.
//!
//! # Changes while running
//!
//! * `set_rate`: the packet being serialised sends its remaining bits at
//!   the new rate (so going from 1 kbit/s to 1 Gbit/s does not leave a
//!   packet stuck for seconds), and every packet waiting behind it is
//!   re-timed. Packets already propagating are unaffected.
//! * `set_delay`: applies to every packet that has not finished
//!   serialisation at `now` (including the one on the serialiser);
//!   packets already propagating keep their arrival time (they are "on the
//!   wire"). Without `allow_reorder` a shorter delay cannot make a packet
//!   overtake one that is propagating.
//! * `set_jitter`, `set_loss`: apply to packets offered afterwards (their
//!   draws happen at offer time).
//! * `set_up(now, false)`: every packet still queued, being serialised or
//!   propagating is dropped and counted in `drops_down`; packets whose
//!   arrival is `<= now` have already arrived and stay pollable. Offers
//!   while down return [`Offer::DroppedDown`]. `set_up(now, true)` resumes
//!   with an idle serialiser.
//!
//! After any `set_*` call the next wake-up may have moved (earlier or
//! later): callers that cache it must ask [`LinkDirection::next_wakeup`]
//! again.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use mplab_proto::Instant;

use crate::rng::SimRng;

const NS_PER_SEC: u64 = 1_000_000_000;

/// Random extra propagation delay per packet. Every distribution is
/// non-negative, so no packet arrives before `end + delay`. A zero scale
/// (`max`, `sigma`, `mean`) means no jitter and costs no draw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Jitter {
    #[default]
    None,
    /// `delay + U[0, max]`, uniform over whole nanoseconds, `max` inclusive
    /// (one draw).
    Uniform { max: Duration },
    /// `delay + |N(0, sigma)|`: half-normal, mean `sigma * sqrt(2/pi)`,
    /// standard deviation `sigma * sqrt(1 - 2/pi)` (two draws, Box-Muller).
    Normal { sigma: Duration },
    /// `delay + X`, X Pareto (type I) with shape [`PARETO_SHAPE`] and the
    /// given mean: `X >= mean * (shape - 1) / shape`, heavy-tailed above
    /// (one draw, by inversion).
    Pareto { mean: Duration },
}

/// Shape (tail index) of [`Jitter::Pareto`]: 3 gives a finite variance
/// (standard deviation `mean / sqrt(3)`) with a visibly heavy tail.
pub const PARETO_SHAPE: f64 = 3.0;

impl Jitter {
    /// The same distribution with another scale (bound, sigma or mean);
    /// `None` becomes `Uniform`. For changing a link's jitter while keeping
    /// its distribution.
    pub fn with_scale(self, scale: Duration) -> Jitter {
        match self {
            Jitter::None | Jitter::Uniform { .. } => Jitter::Uniform { max: scale },
            Jitter::Normal { .. } => Jitter::Normal { sigma: scale },
            Jitter::Pareto { .. } => Jitter::Pareto { mean: scale },
        }
    }

    /// The scale in whole nanoseconds (0 for `None`).
    pub fn scale_ns(self) -> u64 {
        match self {
            Jitter::None => 0,
            Jitter::Uniform { max: d } | Jitter::Normal { sigma: d } | Jitter::Pareto { mean: d } => duration_ns(d),
        }
    }

    /// One sample in nanoseconds, for a scale of `scale_ns` (> 0, the
    /// cached [`Jitter::scale_ns`]).
    #[inline]
    fn sample(self, scale_ns: u64, rng: &mut SimRng) -> u64 {
        match self {
            Jitter::None => 0,
            Jitter::Uniform { .. } => rng.up_to(scale_ns),
            Jitter::Normal { .. } => {
                // Box-Muller: sqrt(-2 ln u1) * cos(2 pi u2) is N(0, 1);
                // u1 in (0, 1] keeps the logarithm finite.
                let u1 = 1.0 - rng.uniform();
                let u2 = rng.uniform();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                to_ns(scale_ns as f64 * z.abs())
            }
            Jitter::Pareto { .. } => {
                // Inversion: x_m * U^(-1/shape), U in (0, 1], has mean
                // x_m * shape / (shape - 1) = the scale.
                let x_m = scale_ns as f64 * (PARETO_SHAPE - 1.0) / PARETO_SHAPE;
                let u = 1.0 - rng.uniform();
                to_ns(x_m * u.powf(-1.0 / PARETO_SHAPE))
            }
        }
    }
}

/// Non-negative float nanoseconds to whole nanoseconds, rounded, saturating
/// (`as` maps NaN to 0 and anything too large to `u64::MAX`).
#[inline]
fn to_ns(x: f64) -> u64 {
    (x + 0.5) as u64
}

/// Random loss applied to each packet after serialisation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum LossModel {
    #[default]
    None,
    /// Independent loss with probability `p`.
    Bernoulli { p: f64 },
    /// The two-state Markov chain: per packet, first a transition (good to
    /// bad with `p_gb`, bad to good with `p_bg`), then loss with
    /// `loss_good` or `loss_bad` depending on the new state. Mean loss is
    /// `(p_bg * loss_good + p_gb * loss_bad) / (p_gb + p_bg)`.
    GilbertElliott { p_gb: f64, p_bg: f64, loss_good: f64, loss_bad: f64 },
}

/// The queueing discipline in front of the serialiser. The packet being
/// serialised counts as queued (it is "accepted but not yet fully sent").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QueueConfig {
    /// At most this many packets; 0 drops everything.
    DropTailPackets(usize),
    /// At most this many bytes.
    DropTailBytes(u64),
    /// Random Early Detection (Floyd & Jacobson 1993) on a byte-counted
    /// queue: thresholds and the average are in bytes; the drop probability
    /// is per packet (not scaled by packet size, unlike ns-2's `bytes_`
    /// option), so small ACKs and full segments are treated alike. `weight` is the EWMA gain w_q, `limit_bytes` a hard
    /// capacity, `gentle` ramps the drop probability from `max_p` to 1
    /// between `max_th` and `2 * max_th` instead of jumping to 1.
    Red { min_th_bytes: u64, max_th_bytes: u64, max_p: f64, weight: f64, limit_bytes: u64, gentle: bool },
}

/// Everything that describes one direction of a link. In declaration
/// order (`repr(C)`): what every `offer` reads first, in adjacent lines.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkParams {
    pub queue: QueueConfig,
    /// Serialisation rate in bit/s; 0 means unlimited (no serialisation time).
    pub rate_bps: u64,
    pub loss: LossModel,
    /// Let jitter reorder packets (netem style) instead of holding a packet
    /// back until its predecessor has arrived.
    pub allow_reorder: bool,
    /// Propagation delay.
    pub delay: Duration,
    pub jitter: Jitter,
    /// Probability that a packet is sent twice ([`LinkDirection::duplicates`]).
    pub duplicate: f64,
}

/// What happened to an offered packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Offer {
    /// Accepted (it may still be lost on the wire later: loss is counted
    /// separately, when its serialisation ends).
    Queued,
    /// Refused by the queue (drop-tail overflow or RED).
    DroppedQueue,
    /// The link is down.
    DroppedDown,
}

/// A packet that has reached the far end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivered<P> {
    pub packet: P,
    /// When it arrived (`<=` the `now` it was polled at).
    pub at: Instant,
}

/// Counters of one link direction. Every offered packet is, at any moment,
/// in exactly one of: dropped (queue, loss or down), queued, propagating
/// (`in_flight_packets`) or delivered; see [`LinkStats::accounted`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LinkStats {
    pub offered_packets: u64,
    pub offered_bytes: u64,
    /// Packets whose serialisation completed (including ones then lost).
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Packets handed out by `poll`.
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    /// Queue occupancy (accepted, not yet fully serialised) as of the last call.
    pub queue_bytes: u64,
    pub queue_packets: u64,
    /// Largest `queue_bytes` ever seen right after accepting a packet.
    pub max_queue_bytes: u64,
    /// Serialised, not lost, not yet delivered.
    pub in_flight_packets: u64,
    /// Refused by the queue discipline (tail drop, RED, RED's hard limit).
    pub queue_drops: u64,
    /// Lost on the wire (loss model).
    pub loss_drops: u64,
    /// Offered while down, or inside the link when it went down.
    pub down_drops: u64,
    /// Copies a duplicating link made (each also counted as offered).
    pub duplicated: u64,
}

impl LinkStats {
    pub fn drops_queue(&self) -> u64 {
        self.queue_drops
    }
    pub fn drops_loss(&self) -> u64 {
        self.loss_drops
    }
    pub fn drops_down(&self) -> u64 {
        self.down_drops
    }
    pub fn drops_total(&self) -> u64 {
        self.queue_drops + self.loss_drops + self.down_drops
    }
    /// Packets accounted for: delivered + dropped + still inside. Always
    /// equals `offered_packets` (a consistency check for tests and tools).
    pub fn accounted(&self) -> u64 {
        self.delivered_packets + self.drops_total() + self.queue_packets + self.in_flight_packets
    }
}

/// Per-packet record of a packet that has not finished serialisation.
///
/// 32 bytes, aligned to 32: two records per cache line and none across
/// two lines (each `offer` reads the front record; one straddling a line
/// boundary cost a second cache miss). The record's sequence number is not
/// stored: records are retired from the front in order, so the front's is
/// `next_seq - queue.len()`.
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
struct Ser {
    /// Exact end of serialisation: `end_ns + end_rem / rate`.
    end_ns: u64,
    end_rem: u64,
    /// Pre-drawn jitter, kept to recompute the arrival on set_rate/set_delay.
    jitter_ns: u64,
    size: u32,
    /// Pre-drawn loss decision (the packet itself is not kept).
    lost: bool,
}

impl Ser {
    #[inline]
    fn end(&self) -> u64 {
        ceil_ns(self.end_ns, self.end_rem)
    }
}

/// An exact time `ns + rem/rate` rounded up to whole nanoseconds.
#[inline]
fn ceil_ns(ns: u64, rem: u64) -> u64 {
    ns.saturating_add(u64::from(rem != 0))
}

/// Advances the exact time `(ns, rem)` by the serialisation time of `bits`
/// at `rate` (> 0). The common case stays in 64-bit arithmetic; huge
/// packets at tiny rates fall back to 128 bits and saturate.
#[inline]
fn add_bits(ns: u64, rem: u64, bits: u64, rate: u64) -> (u64, u64) {
    if rate == 0 {
        return (ns, 0);
    }
    match bits.checked_mul(NS_PER_SEC).and_then(|b| b.checked_add(rem)) {
        Some(num) => (ns.saturating_add(num / rate), num % rate),
        None => div_128(ns, u128::from(bits) * u128::from(NS_PER_SEC) + u128::from(rem), rate),
    }
}

/// `ns + num / rate`, remainder `num % rate`, saturating.
fn div_128(ns: u64, num: u128, rate: u64) -> (u64, u64) {
    let r = u128::from(rate.max(1));
    let q = u64::try_from(num / r).unwrap_or(u64::MAX);
    (ns.saturating_add(q), (num % r) as u64)
}

/// A packet on its way to the far end. Packets still waiting for (or in)
/// serialisation are here too, since their arrival is already known; the
/// matching `Ser` record says they still occupy the queue.
///
/// Aligned to 32 bytes: with the simulator's 20-byte packet handle an entry
/// is exactly 32 bytes and never straddles two cache lines (delivering
/// reads the front entry, usually a cache miss already).
#[derive(Debug, Clone, Copy)]
#[repr(align(32))]
struct Fly<P> {
    at: u64,
    size: u32,
    pkt: P,
}

/// Heap wrapper: the smallest (arrival, seq) is the greatest; `seq` is the
/// packet's sequence number on the link (ties in sending order, and how a
/// retiming finds the packet's record).
struct ByArrival<P> {
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
enum Flight<P> {
    Fifo(Fifo<P>),
    Heap(Box<BinaryHeap<ByArrival<P>>>),
}

/// A FIFO flight whose oldest packet sits inline (in the link direction's
/// first cache line) and the others in a ring buffer. Delivering takes the
/// packet from the line the wake-up reads anyway, and routing it overlaps
/// with loading the ring's entry that replaces it; reading the ring's front
/// first was a cache miss before every hop could go on.
struct Fifo<P> {
    /// The oldest packet, unless its `at` is [`NO_ARRIVAL`] (empty).
    head: Fly<P>,
    /// The others, oldest first; empty when `head` is.
    rest: VecDeque<Fly<P>>,
}

/// The arrival time that marks an empty [`Fifo`] head. No packet arrives
/// then: arrival times saturate one below it (584 years).
const NO_ARRIVAL: u64 = u64::MAX;

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
    fn len(&self) -> usize {
        usize::from(self.full()) + self.rest.len()
    }

    #[inline]
    fn front(&self) -> Option<&Fly<P>> {
        self.full().then_some(&self.head)
    }

    #[inline]
    fn back(&self) -> Option<&Fly<P>> {
        self.rest.back().or(self.front())
    }

    #[inline]
    fn push_back(&mut self, f: Fly<P>) {
        debug_assert!(f.at != NO_ARRIVAL);
        if self.full() {
            self.rest.push_back(f);
        } else {
            self.head = f;
        }
    }

    #[inline]
    fn pop_front(&mut self) -> Option<Fly<P>> {
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

    fn iter(&self) -> impl Iterator<Item = &Fly<P>> {
        self.front().into_iter().chain(self.rest.iter())
    }

    /// Removes the packets arriving after `now` (a suffix: arrivals are in
    /// order) into `out`.
    fn drain_after(&mut self, now: u64, out: &mut Vec<P>) {
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
    fn len(&self) -> usize {
        match self {
            Flight::Fifo(d) => d.len(),
            Flight::Heap(h) => h.len(),
        }
    }

    #[inline]
    fn last_at(&self) -> u64 {
        match self {
            Flight::Fifo(d) => d.back().map_or(0, |f| f.at),
            Flight::Heap(_) => 0,
        }
    }

    /// Adds the packet with sequence number `seq` on the link.
    #[inline]
    fn push(&mut self, seq: u64, fly: Fly<P>) {
        match self {
            Flight::Fifo(d) => d.push_back(fly),
            Flight::Heap(h) => h.push(ByArrival { seq, fly }),
        }
    }

    #[inline]
    fn next_at(&self) -> Option<u64> {
        match self {
            Flight::Fifo(d) => d.front().map(|f| f.at),
            Flight::Heap(h) => h.peek().map(|f| f.fly.at),
        }
    }

    #[inline]
    fn pop_due(&mut self, now: u64) -> Option<Fly<P>> {
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

    /// Drops every packet arriving after `now`; returns how many.
    /// Removes every packet arriving after `now` into `out`; returns how many.
    fn drop_after(&mut self, now: u64, out: &mut Vec<P>) -> usize {
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
}

/// RED's running state.
#[derive(Clone, Copy, Debug)]
struct RedState {
    avg: f64,
    /// Packets since the last drop while in the ramp (-1 below min_th).
    count: i64,
}

/// Packet size assumed by RED's idle-time correction: an idle period is
/// treated as if `idle / tx_time(500 B)` empty-queue arrivals had happened
/// (ns-2's `mean_pktsize` default).
const RED_TYPICAL_PACKET_BYTES: f64 = 500.0;

/// Clamps a probability-like parameter into [0, 1]; NaN becomes 0.
fn unit(x: f64) -> f64 {
    if x > 0.0 {
        x.min(1.0)
    } else {
        0.0
    }
}

/// One direction of a link. See the module documentation for the model.
///
/// Fields in declaration order (`repr(C)`), hottest first: a simulated hop
/// reads this struct from a cold cache line. For a drop-tail link without
/// loss, `deliver` touches lines 0 and 1 and `offer` lines 0 to 3 (sizes
/// in the comments; the parameters those calls need are copied there from
/// `p`), neighbours the hardware tends to fetch in pairs. Counters that
/// follow from others are not kept but derived in [`LinkDirection::stats`]:
/// every per-packet write would be another line.
/// Aligned to a cache line so that these lines are the hardware's lines.
#[repr(C, align(64))]
pub struct LinkDirection<P> {
    // Line 0: the packets on their way, the oldest inline.
    flight: Flight<P>, // 64
    // Line 1: the rest of what delivering touches, and offering.
    delivered_packets: u64,
    delivered_bytes: u64,
    /// Exact time the serialiser finishes everything accepted so far.
    free_ns: u64,
    free_rem: u64,
    queue: VecDeque<Ser>, // 32
    // Line 2.
    /// `p.rate_bps`.
    rate_bps: u64,
    /// When the last accepted packet's last bit leaves.
    last_end_ns: u64,
    /// Packets accepted so far (the next one's sequence number).
    next_seq: u64,
    /// `p.delay` in ns.
    delay_ns: u64,
    /// Records in `queue` that are not lost (they have a `flight` entry,
    /// the last `queued_live` ones of a FIFO flight).
    queued_live: usize,
    /// Bytes of the records in `queue`.
    queue_bytes: u64,
    max_queue_bytes: u64,
    /// Bytes of every packet accepted so far.
    accepted_bytes: u64,
    // Line 3.
    /// When the queue last became empty (RED idle correction).
    idle_since: u64,
    /// Arrival time of the packet last put in `flight` (a FIFO flight's
    /// back, kept here so that offering does not read the flight's
    /// buffer). Once that packet has arrived the value is at most `now`,
    /// below any new arrival, so it need not be cleared.
    flight_last_at: u64,
    /// The packet limit of a `DropTailPackets` queue, `u32::MAX` for the
    /// other disciplines (which read `p.queue`).
    packet_limit: u32,
    up: bool,
    /// `p.loss` is `None`: no draw, no match on the model.
    lossless: bool,
    /// `p.allow_reorder`.
    reorder: bool,
    ge_bad: bool,
    /// `discarded` is not empty (read on every offer, unlike the vector).
    has_discarded: bool,
    /// `jitter_scale_ns` is not zero.
    jittery: bool,
    // Cold.
    /// The jitter scale in ns.
    jitter_scale_ns: u64,
    /// Offered but refused (queue full, RED, link down).
    refused_packets: u64,
    refused_bytes: u64,
    /// Accepted, then dropped from the queue by a link-down.
    aborted_packets: u64,
    aborted_bytes: u64,
    queue_drops: u64,
    loss_drops: u64,
    down_drops: u64,
    duplicated: u64,
    p: LinkParams,
    red: RedState,
    /// Packets that will never be delivered (refused, lost on the wire,
    /// cut by a link-down), handed back so that a caller owning them
    /// elsewhere (the simulator's packet pool) can reclaim them.
    discarded: Vec<P>,
}

impl<P: Copy + Default> std::fmt::Debug for LinkDirection<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkDirection")
            .field("params", &self.p)
            .field("up", &self.up)
            .field("queued", &self.queue.len())
            .field("flight", &self.flight.len())
            .field("stats", &self.stats())
            .finish()
    }
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl<P: Copy + Default> LinkDirection<P> {
    /// An idle, up link direction.
    pub fn new(p: LinkParams) -> Self {
        LinkDirection {
            rate_bps: p.rate_bps,
            packet_limit: match p.queue {
                // A limit too large for the copy stays in `p.queue`.
                QueueConfig::DropTailPackets(n) => u32::try_from(n).unwrap_or(u32::MAX),
                _ => u32::MAX,
            },
            lossless: p.loss == LossModel::None,
            reorder: p.allow_reorder,
            delay_ns: duration_ns(p.delay),
            jitter_scale_ns: p.jitter.scale_ns(),
            jittery: p.jitter.scale_ns() != 0,
            flight_last_at: 0,
            up: true,
            queue: VecDeque::new(),
            queued_live: 0,
            flight: if p.allow_reorder { Flight::Heap(Box::default()) } else { Flight::Fifo(Fifo::default()) },
            free_ns: 0,
            free_rem: 0,
            next_seq: 0,
            ge_bad: false,
            red: RedState { avg: 0.0, count: -1 },
            idle_since: 0,
            delivered_packets: 0,
            delivered_bytes: 0,
            queue_bytes: 0,
            max_queue_bytes: 0,
            accepted_bytes: 0,
            has_discarded: false,
            refused_packets: 0,
            refused_bytes: 0,
            aborted_packets: 0,
            aborted_bytes: 0,
            queue_drops: 0,
            loss_drops: 0,
            down_drops: 0,
            duplicated: 0,
            discarded: Vec::new(),
            last_end_ns: 0,
            p,
        }
    }

    /// When the last bit of the packet accepted by the last successful
    /// `offer` leaves (after the packets queued before it): the moment it
    /// counts in `tx_bytes`.
    pub fn last_end(&self) -> Instant {
        Instant(self.last_end_ns)
    }

    /// Hands over the packets that will never be delivered, oldest first.
    /// They pile up until taken: a long-running caller takes them after
    /// every `offer` and `set_up` (the simulator returns their pool slots).
    pub fn take_discarded(&mut self, out: &mut Vec<P>) {
        if !self.has_discarded {
            return;
        }
        self.has_discarded = false;
        out.append(&mut self.discarded);
    }

    /// The current parameters (after any `set_*`).
    pub fn params(&self) -> &LinkParams {
        &self.p
    }

    /// A packet of `size` bytes (on-the-wire size) enters the queue at `now`.
    /// All of its random draws (RED, loss, jitter, in that order, each only
    /// when needed) come from `rng` now, so the outcome does not depend on
    /// when the caller polls.
    pub fn offer(&mut self, now: Instant, pkt: P, size: u32, rng: &mut SimRng) -> Offer {
        let now = now.0;
        if !self.up {
            self.down_drops += 1;
            self.refuse(pkt, size);
            return Offer::DroppedDown;
        }
        self.advance_ns(now);
        if !self.admit(now, size, rng) {
            self.queue_drops += 1;
            self.refuse(pkt, size);
            return Offer::DroppedQueue;
        }
        let lost = self.draw_loss(rng);
        let jitter = if lost || !self.jittery { 0 } else { self.p.jitter.sample(self.jitter_scale_ns, rng) };

        // Serialisation starts when both the packet and the serialiser are
        // ready. Comparing (now, 0) with the exact free time keeps the
        // carried remainder when the serialiser is busy.
        let (s_ns, s_rem) = if (now, 0) >= (self.free_ns, self.free_rem) { (now, 0) } else { (self.free_ns, self.free_rem) };
        let (end_ns, end_rem) = add_bits(s_ns, s_rem, u64::from(size) * 8, self.rate_bps);
        self.free_ns = end_ns;
        self.free_rem = end_rem;
        let seq = self.next_seq;
        self.next_seq += 1;
        let rec = Ser { end_ns, end_rem, jitter_ns: jitter, size, lost };
        let end = rec.end();
        self.last_end_ns = end;
        self.queue.push_back(rec);
        self.queue_bytes += u64::from(size);
        self.accepted_bytes += u64::from(size);
        if lost {
            self.discard(pkt);
        } else {
            let at = self.arrival(end, jitter, self.flight_last_at);
            self.flight_last_at = at;
            self.flight.push(seq, Fly { at, size, pkt });
            self.queued_live += 1;
        }
        if end <= now {
            // Unlimited rate (or an empty packet): already on the wire.
            self.advance_ns(now);
        }
        self.max_queue_bytes = self.max_queue_bytes.max(self.queue_bytes);
        Offer::Queued
    }

    /// Whether the packet about to be offered is sent twice (netem's
    /// `duplicate`). The caller then copies it and offers the copy right
    /// behind the original: the copy takes its own place in the queue and
    /// its own loss and jitter draws. Only a duplicating link draws.
    pub fn duplicates(&mut self, rng: &mut SimRng) -> bool {
        let dup = self.p.duplicate > 0.0 && self.up && rng.uniform() < self.p.duplicate;
        self.duplicated += u64::from(dup);
        dup
    }

    fn refuse(&mut self, pkt: P, size: u32) {
        self.refused_packets += 1;
        self.refused_bytes += u64::from(size);
        self.discard(pkt);
    }

    fn discard(&mut self, pkt: P) {
        self.discarded.push(pkt);
        self.has_discarded = true;
    }

    /// Earliest time a packet arrives at the far end; None when nothing is
    /// on its way (lost packets never cause a wake-up).
    #[inline]
    pub fn next_wakeup(&self) -> Option<Instant> {
        self.flight.next_at().map(Instant)
    }

    /// Returns the next packet that has arrived at the far end by `now`
    /// (call repeatedly until None). Packets come out in arrival order,
    /// ties in sending order.
    pub fn poll(&mut self, now: Instant) -> Option<Delivered<P>> {
        self.advance_ns(now.0);
        let f = self.flight.pop_due(now.0)?;
        self.delivered_packets += 1;
        self.delivered_bytes += u64::from(f.size);
        Some(Delivered { packet: f.pkt, at: Instant(f.at) })
    }

    /// [`poll`](Self::poll) without the queue bookkeeping: the records of
    /// packets that finished serialisation are retired by the next call
    /// that needs them (`offer`, `advance`, any `set_*`), not here. What
    /// comes out is the same; only [`stats`](Self::stats) lags until
    /// `advance(now)` (which a reader must call first anyway). The
    /// simulator delivers this way: retiring touches the record queue, a
    /// cache miss per hop on large topologies that nothing needs then.
    #[inline]
    pub fn deliver(&mut self, now: Instant) -> Option<Delivered<P>> {
        let f = self.flight.pop_due(now.0)?;
        self.delivered_packets += 1;
        self.delivered_bytes += u64::from(f.size);
        Some(Delivered { packet: f.pkt, at: Instant(f.at) })
    }

    /// Brings the queue bookkeeping (and so [`LinkDirection::stats`]) up to
    /// `now`. Never needed for correctness, only for exact statistics.
    pub fn advance(&mut self, now: Instant) {
        self.advance_ns(now.0);
    }

    /// Takes the link down or up. See the module documentation.
    pub fn set_up(&mut self, now: Instant, up: bool) {
        if up == self.up {
            return;
        }
        let now = now.0;
        if !up {
            self.advance_ns(now);
            let queued = self.queue.len();
            let removed = self.flight.drop_after(now, &mut self.discarded);
            self.flight_last_at = self.flight.last_at();
            self.has_discarded = !self.discarded.is_empty();
            // `removed` includes the live queued packets' flight entries.
            let propagating = removed.saturating_sub(self.queued_live);
            self.down_drops += (queued + propagating) as u64;
            self.aborted_packets += queued as u64;
            self.aborted_bytes += self.queue_bytes;
            self.queue.clear();
            self.queued_live = 0;
            self.queue_bytes = 0;
            // The frame on the serialiser is aborted: idle from now.
            self.free_ns = now;
            self.free_rem = 0;
            self.idle_since = now;
        }
        self.up = up;
    }

    pub fn is_up(&self) -> bool {
        self.up
    }

    /// Changes the serialisation rate at `now` (0 = unlimited): the frame
    /// being serialised sends its remaining bits at the new rate and the
    /// packets behind it are re-timed.
    pub fn set_rate(&mut self, now: Instant, rate_bps: u64) {
        let now = now.0;
        self.advance_ns(now);
        let old = self.p.rate_bps;
        self.p.rate_bps = rate_bps;
        self.rate_bps = rate_bps;
        if old == rate_bps {
            return;
        }
        self.retime_serialisation(now, old);
        self.retime_arrivals();
        // With an unlimited new rate everything queued is sent at once.
        self.advance_ns(now);
    }

    /// Changes the propagation delay for every packet not yet fully
    /// serialised at `now`; propagating packets keep their arrival time.
    pub fn set_delay(&mut self, now: Instant, d: Duration) {
        self.advance_ns(now.0);
        self.p.delay = d;
        self.delay_ns = duration_ns(d);
        self.retime_arrivals();
    }

    /// Changes the jitter for packets offered from now on.
    pub fn set_jitter(&mut self, j: Jitter) {
        self.p.jitter = j;
        self.jitter_scale_ns = j.scale_ns();
        self.jittery = self.jitter_scale_ns != 0;
    }

    /// Changes the loss model for packets offered from now on. Switching
    /// between Gilbert-Elliott parameter sets keeps the chain's state (the
    /// channel does not forget it is in a burst); any other change restarts
    /// it in the good state.
    pub fn set_loss(&mut self, l: LossModel) {
        let keep = matches!((self.p.loss, l), (LossModel::GilbertElliott { .. }, LossModel::GilbertElliott { .. }));
        if !keep {
            self.ge_bad = false;
        }
        self.p.loss = l;
        self.lossless = l == LossModel::None;
    }

    /// Counters, with the queue as of the latest call (see [`advance`](Self::advance)).
    pub fn stats(&self) -> LinkStats {
        let queued = self.queue.len() as u64;
        LinkStats {
            offered_packets: self.next_seq + self.refused_packets,
            offered_bytes: self.accepted_bytes + self.refused_bytes,
            tx_packets: self.next_seq - queued - self.aborted_packets,
            tx_bytes: self.accepted_bytes - self.queue_bytes - self.aborted_bytes,
            delivered_packets: self.delivered_packets,
            delivered_bytes: self.delivered_bytes,
            queue_bytes: self.queue_bytes,
            queue_packets: queued,
            max_queue_bytes: self.max_queue_bytes,
            in_flight_packets: self.flight.len().saturating_sub(self.queued_live) as u64,
            queue_drops: self.queue_drops,
            loss_drops: self.loss_drops,
            down_drops: self.down_drops,
            duplicated: self.duplicated,
        }
    }

    // ---- internals ----------------------------------------------------

    /// Retires every record whose serialisation has ended by `now`.
    #[inline]
    fn advance_ns(&mut self, now: u64) {
        while let Some(front) = self.queue.front() {
            let end = front.end();
            if end > now {
                break;
            }
            let (size, lost) = (front.size, front.lost);
            self.queue.pop_front();
            self.queue_bytes -= u64::from(size);
            if lost {
                self.loss_drops += 1;
            } else {
                self.queued_live -= 1;
            }
            if self.queue.is_empty() {
                self.idle_since = end;
            }
        }
    }

    /// Arrival time for a packet ending serialisation at `end`, never
    /// before `prev` unless reordering is allowed.
    #[inline]
    fn arrival(&self, end: u64, jitter: u64, prev: u64) -> u64 {
        let at = end.saturating_add(self.delay_ns).saturating_add(jitter).min(NO_ARRIVAL - 1);
        if self.reorder {
            at
        } else {
            at.max(prev)
        }
    }

    /// The queue discipline's verdict on a `size`-byte arrival at `now`.
    #[inline]
    fn admit(&mut self, now: u64, size: u32, rng: &mut SimRng) -> bool {
        if self.packet_limit != u32::MAX {
            return self.queue.len() < self.packet_limit as usize;
        }
        let q = self.queue_bytes;
        match self.p.queue {
            QueueConfig::DropTailPackets(n) => self.queue.len() < n,
            QueueConfig::DropTailBytes(b) => q.saturating_add(u64::from(size)) <= b,
            QueueConfig::Red { min_th_bytes, max_th_bytes, max_p, weight, limit_bytes, gentle } => {
                let early = self.red_drop(now, min_th_bytes, max_th_bytes, max_p, weight, gentle, rng);
                !early && q.saturating_add(u64::from(size)) <= limit_bytes
            }
        }
    }

    /// RED's early-drop decision (Floyd & Jacobson 1993, section 4).
    #[allow(clippy::too_many_arguments)]
    fn red_drop(&mut self, now: u64, min_th: u64, max_th: u64, max_p: f64, weight: f64, gentle: bool, rng: &mut SimRng) -> bool {
        let w = unit(weight);
        if self.queue.is_empty() {
            // Idle-period correction: without it, the average would stay
            // at its last busy value through an idle period and the first
            // packets after it would be dropped for congestion long gone.
            let idle = now.saturating_sub(self.idle_since) as f64;
            let m = if self.p.rate_bps == 0 {
                if idle > 0.0 {
                    f64::INFINITY
                } else {
                    0.0
                }
            } else {
                idle / (RED_TYPICAL_PACKET_BYTES * 8.0 * 1e9 / self.p.rate_bps as f64)
            };
            self.red.avg *= (1.0 - w).powf(m);
        }
        let q = self.queue_bytes as f64;
        self.red.avg = (1.0 - w) * self.red.avg + w * q;
        let avg = self.red.avg;
        let (min, max) = (min_th as f64, max_th as f64);
        let max_p = unit(max_p);
        let pb = if avg < min {
            self.red.count = -1;
            return false;
        } else if avg < max {
            max_p * (avg - min) / (max - min)
        } else if gentle && avg < 2.0 * max {
            max_p + (1.0 - max_p) * (avg - max) / max
        } else {
            self.red.count = 0;
            return true;
        };
        self.red.count += 1;
        // Spread drops evenly: the probability grows with the number of
        // packets since the last drop (pa = pb / (1 - count * pb)).
        let c = self.red.count as f64 * pb;
        let pa = if c >= 1.0 { 1.0 } else { pb / (1.0 - c) };
        if rng.bernoulli(pa) {
            self.red.count = 0;
            true
        } else {
            false
        }
    }

    /// Draws the loss decision of one accepted packet.
    #[inline]
    fn draw_loss(&mut self, rng: &mut SimRng) -> bool {
        if self.lossless {
            return false;
        }
        match self.p.loss {
            LossModel::None => false,
            LossModel::Bernoulli { p } => rng.bernoulli(p),
            LossModel::GilbertElliott { p_gb, p_bg, loss_good, loss_bad } => {
                if self.ge_bad {
                    if rng.bernoulli(p_bg) {
                        self.ge_bad = false;
                    }
                } else if rng.bernoulli(p_gb) {
                    self.ge_bad = true;
                }
                rng.bernoulli(if self.ge_bad { loss_bad } else { loss_good })
            }
        }
    }

    /// Recomputes serialisation ends after a rate change at `now`
    /// (`advance_ns(now)` already done, `p.rate_bps` already the new rate).
    fn retime_serialisation(&mut self, now: u64, old_rate: u64) {
        let rate = self.p.rate_bps;
        let mut it = self.queue.iter_mut();
        let Some(head) = it.next() else {
            // Idle: the serialiser is free by now; drop the remainder (it
            // was in units of the old rate), rounding the free time up.
            self.free_ns = ceil_ns(self.free_ns, self.free_rem);
            self.free_rem = 0;
            return;
        };
        // The head is being serialised: it has `(end - now) * old_rate`
        // bit-nanoseconds (i.e. bits * 10^9) left, exactly.
        let left =
            if old_rate == 0 { 0 } else { u128::from(head.end_ns.saturating_sub(now)) * u128::from(old_rate) + u128::from(head.end_rem) };
        let (mut ns, mut rem) = if rate == 0 { (now, 0) } else { div_128(now, left, rate) };
        head.end_ns = ns;
        head.end_rem = rem;
        for r in it {
            (ns, rem) = add_bits(ns, rem, u64::from(r.size) * 8, rate);
            r.end_ns = ns;
            r.end_rem = rem;
        }
        self.free_ns = ns;
        self.free_rem = rem;
    }

    /// Recomputes the arrival of every packet still in the queue from its
    /// (possibly new) end and the current delay.
    fn retime_arrivals(&mut self) {
        if self.queued_live == 0 {
            return;
        }
        let delay = self.delay_ns;
        let reorder = self.p.allow_reorder;
        let compute = |r: &Ser, prev: u64| {
            let at = r.end().saturating_add(delay).saturating_add(r.jitter_ns).min(NO_ARRIVAL - 1);
            if reorder {
                at
            } else {
                at.max(prev)
            }
        };
        match &mut self.flight {
            Flight::Fifo(d) => {
                // The live queued packets are the last `queued_live`
                // entries, in the same order as their records.
                let base = d.len().saturating_sub(self.queued_live);
                let mut prev = if base > 0 { d.iter().nth(base - 1).map_or(0, |f| f.at) } else { 0 };
                for (j, r) in (base..).zip(self.queue.iter().filter(|r| !r.lost)) {
                    if let Some(f) = d.get_mut(j) {
                        f.at = compute(r, prev);
                        prev = f.at;
                    }
                }
            }
            Flight::Heap(h) => {
                // Rare path (reordering links only): rebuild the heap.
                // The records are consecutive sequence numbers ending
                // just before `next_seq`.
                let first = self.next_seq - self.queue.len() as u64;
                let new: Vec<(u64, u64)> =
                    (first..).zip(self.queue.iter()).filter(|(_, r)| !r.lost).map(|(seq, r)| (seq, compute(r, 0))).collect();
                let mut v = std::mem::take(&mut **h).into_vec();
                for f in &mut v {
                    if let Ok(i) = new.binary_search_by_key(&f.seq, |e| e.0) {
                        f.fly.at = new[i].1;
                    }
                }
                **h = BinaryHeap::from(v);
            }
        }
        self.flight_last_at = self.flight.last_at();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    fn params(rate_bps: u64, delay_ns: u64, queue: QueueConfig) -> LinkParams {
        LinkParams {
            rate_bps,
            delay: Duration::from_nanos(delay_ns),
            jitter: Jitter::None,
            loss: LossModel::None,
            queue,
            allow_reorder: false,
            duplicate: 0.0,
        }
    }

    fn unbounded() -> QueueConfig {
        QueueConfig::DropTailPackets(usize::MAX)
    }

    /// Polls at every wake-up until the link is empty; returns (id, at).
    fn drain<P: Copy + Default>(l: &mut LinkDirection<P>) -> Vec<(P, u64)> {
        let mut out = Vec::new();
        while let Some(t) = l.next_wakeup() {
            let mut got = false;
            while let Some(d) = l.poll(t) {
                out.push((d.packet, d.at.0));
                got = true;
            }
            assert!(got, "a wake-up must deliver something");
        }
        out
    }

    /// What `deliver` touches stays in lines 0 and 1, and what `offer`
    /// touches in lines 0 to 3 (see the struct's comment); a field added in
    /// front would silently push them out.
    #[test]
    fn hot_fields_fill_the_first_four_lines() {
        use std::mem::{offset_of, size_of};
        type L = LinkDirection<u64>;
        assert_eq!(size_of::<Flight<[u32; 5]>>(), 64);
        assert_eq!(offset_of!(L, delivered_packets), 64);
        assert!(offset_of!(L, delivered_bytes) + 8 <= 128);
        assert!(offset_of!(L, free_rem) + 8 <= 128);
        assert_eq!(offset_of!(L, queue) + 32, 128);
        assert_eq!(offset_of!(L, rate_bps), 128);
        assert!(offset_of!(L, accepted_bytes) + 8 <= 192);
        assert_eq!(offset_of!(L, idle_since), 192);
        assert!(offset_of!(L, has_discarded) < 256);
        assert!(offset_of!(L, jittery) < 256);
        assert!(offset_of!(L, flight_last_at) + 8 <= 256);
    }

    proptest! {
        /// The FIFO flight with its inline head behaves as a plain deque:
        /// same order, length, front and back under any pushes, pops and
        /// cuts.
        #[test]
        fn fifo_with_inline_head_is_a_deque(ops in proptest::collection::vec((0u8..4, 1u64..50), 0..200)) {
            let mut f = Fifo::<u32>::default();
            let mut model: VecDeque<(u64, u32)> = VecDeque::new();
            let mut at = 0u64;
            for (i, (op, x)) in ops.into_iter().enumerate() {
                match op {
                    0 | 1 => {
                        at += x;
                        f.push_back(Fly { at, size: 1, pkt: i as u32 });
                        model.push_back((at, i as u32));
                    }
                    2 => prop_assert_eq!(f.pop_front().map(|f| (f.at, f.pkt)), model.pop_front()),
                    _ => {
                        let cut = at.saturating_sub(x);
                        let mut out = Vec::new();
                        f.drain_after(cut, &mut out);
                        let keep = model.partition_point(|e| e.0 <= cut);
                        let gone: Vec<u32> = model.drain(keep..).map(|e| e.1).collect();
                        prop_assert_eq!(out, gone);
                    }
                }
                prop_assert_eq!(f.len(), model.len());
                prop_assert_eq!(f.front().map(|f| f.pkt), model.front().map(|e| e.1));
                prop_assert_eq!(f.back().map(|f| f.pkt), model.back().map(|e| e.1));
                prop_assert_eq!(f.iter().map(|f| f.pkt).collect::<Vec<_>>(), model.iter().map(|e| e.1).collect::<Vec<_>>());
            }
        }
    }

    /// Queue records and flight entries (with a handle of up to 20 bytes,
    /// the simulator's) are 32 bytes and 32-aligned: two per cache line,
    /// none across a line boundary.
    #[test]
    fn records_never_straddle_a_cache_line() {
        use std::mem::{align_of, size_of};
        assert_eq!((size_of::<Ser>(), align_of::<Ser>()), (32, 32));
        assert_eq!((size_of::<Fly<[u32; 5]>>(), align_of::<Fly<[u32; 5]>>()), (32, 32));
        let mut l = LinkDirection::<[u32; 5]>::new(params(10_000_000_000, 1_000, unbounded()));
        let mut rng = SimRng::new(1, 1);
        for i in 0..50u32 {
            l.offer(Instant(u64::from(i)), [i; 5], 1500, &mut rng);
        }
        let Flight::Fifo(d) = &l.flight else { panic!("a FIFO link") };
        let (a, b) = d.rest.as_slices();
        assert!(a.iter().chain(b).chain(d.front()).all(|f| (f as *const Fly<_> as usize) % 32 == 0));
        assert!(l.queue.iter().all(|r| (r as *const Ser as usize) % 32 == 0));
    }

    /// `deliver` hands out exactly what `poll` does, and once advanced the
    /// statistics agree, including across a rate change and a link cut.
    #[test]
    fn deliver_matches_poll_once_advanced() {
        let p = params(10_000_000, MS, QueueConfig::DropTailPackets(20));
        let (mut a, mut b) = (LinkDirection::new(p), LinkDirection::new(p));
        let (mut ra, mut rb) = (SimRng::new(3, 1), SimRng::new(3, 1));
        let mut got = (Vec::new(), Vec::new());
        for i in 0..400u64 {
            let now = Instant(i * MS);
            if i == 150 {
                a.set_rate(now, 2_000_000);
                b.set_rate(now, 2_000_000);
            }
            if i == 300 {
                a.set_up(now, false);
                b.set_up(now, false);
            }
            if i == 320 {
                a.set_up(now, true);
                b.set_up(now, true);
            }
            let size = 200 + (i as u32 % 7) * 200;
            assert_eq!(a.offer(now, i, size, &mut ra), b.offer(now, i, size, &mut rb));
            while let Some(d) = a.poll(now) {
                got.0.push((d.packet, d.at));
            }
            while let Some(d) = b.deliver(now) {
                got.1.push((d.packet, d.at));
            }
            b.advance(now);
            assert_eq!(a.stats(), b.stats(), "at offer {i}");
            assert_eq!(b.stats().accounted(), b.stats().offered_packets);
        }
        assert_eq!(got.0, got.1);
        assert!(got.0.len() > 150, "{}", got.0.len());
    }

    #[test]
    fn single_packet_serialisation_plus_delay() {
        // 1500 B at 10 Mbit/s = 12000 bits / 1e7 = 1.2 ms; plus 20 ms.
        let mut l = LinkDirection::new(params(10_000_000, 20 * MS, unbounded()));
        let mut rng = SimRng::new(1, 1);
        let t0 = 5 * MS;
        assert_eq!(l.offer(Instant(t0), 'a', 1500, &mut rng), Offer::Queued);
        let want = t0 + 1_200_000 + 20 * MS;
        assert_eq!(l.next_wakeup(), Some(Instant(want)));
        assert_eq!(l.stats().queue_bytes, 1500);
        assert_eq!(l.poll(Instant(want - 1)), None);
        // Serialisation ended at t0 + 1.2 ms: no longer queued.
        let s = l.stats();
        assert_eq!((s.queue_bytes, s.queue_packets, s.tx_packets, s.tx_bytes, s.in_flight_packets), (0, 0, 1, 1500, 1));
        assert_eq!(l.poll(Instant(want)), Some(Delivered { packet: 'a', at: Instant(want) }));
        assert_eq!(l.next_wakeup(), None);
        assert_eq!(l.stats().delivered_packets, 1);
    }

    #[test]
    fn back_to_back_packets_spaced_by_tx_time() {
        let mut l = LinkDirection::new(params(10_000_000, 20 * MS, unbounded()));
        let mut rng = SimRng::new(1, 1);
        for i in 0..10u64 {
            l.offer(Instant::ZERO, i, 1500, &mut rng);
        }
        assert_eq!(l.stats().queue_packets, 10);
        assert_eq!(l.stats().max_queue_bytes, 15_000);
        let out = drain(&mut l);
        for (k, (id, at)) in out.iter().enumerate() {
            assert_eq!(*id, k as u64);
            assert_eq!(*at, (k as u64 + 1) * 1_200_000 + 20 * MS);
        }
        // A packet offered while the link is idle starts immediately.
        let t = 1000 * MS;
        l.offer(Instant(t), 99, 1500, &mut rng);
        assert_eq!(l.next_wakeup(), Some(Instant(t + 1_200_000 + 20 * MS)));
    }

    #[test]
    fn long_run_has_no_drift() {
        // 1500 B at 7 Mbit/s = 1714285.714... ns: rounding each packet up
        // would gain 0.29 ns per packet (29 us over 100k packets).
        let rate = 7_000_000u64;
        let n = 100_000u64;
        let mut l = LinkDirection::new(params(rate, 3 * MS, unbounded()));
        let mut rng = SimRng::new(1, 1);
        for i in 0..n {
            l.offer(Instant::ZERO, i, 1500, &mut rng);
        }
        let out = drain(&mut l);
        assert_eq!(out.len() as u64, n);
        for (k, (_, at)) in out.iter().enumerate() {
            let bits = (k as u128 + 1) * 12_000 * 1_000_000_000;
            let exact_end = bits.div_ceil(rate as u128) as u64;
            assert_eq!(*at, exact_end + 3 * MS, "packet {k}");
        }
        // So throughput over the run is the rate (the last end is the exact
        // total rounded up by less than 1 ns).
        let last = out.last().unwrap().1 - 3 * MS;
        let tput = (n * 12_000) as f64 / (last as f64 / 1e9);
        assert!((tput - rate as f64).abs() < 1e-3, "{tput}");
        let s = l.stats();
        assert_eq!((s.tx_packets, s.tx_bytes, s.delivered_packets), (n, n * 1500, n));
    }

    #[test]
    fn backlogged_sender_keeps_exact_timeline() {
        // A sender that keeps one packet waiting, topping up at every
        // delivery (like a window-limited TCP): the remainder carries across
        // offers made while the serialiser is busy.
        let rate = 3_000_000u64; // 1000 B = 2666666.67 ns
        let mut l = LinkDirection::new(params(rate, 0, QueueConfig::DropTailPackets(2)));
        let mut rng = SimRng::new(1, 1);
        l.offer(Instant::ZERO, 1u128, 1000, &mut rng);
        l.offer(Instant::ZERO, 2u128, 1000, &mut rng);
        for k in 1..=30_000u128 {
            let t = l.next_wakeup().unwrap();
            let d = l.poll(t).unwrap();
            assert_eq!(d.packet, k);
            assert_eq!(u128::from(d.at.0), (k * 8000 * 1_000_000_000).div_ceil(u128::from(rate)));
            assert_eq!(l.offer(t, k + 2, 1000, &mut rng), Offer::Queued);
        }
    }

    #[test]
    fn idle_link_restarts_at_offer_time() {
        // A packet offered after the serialiser went idle starts at its own
        // offer time (the link cannot bank idle time).
        let mut l = LinkDirection::new(params(3_000_000, 0, unbounded()));
        let mut rng = SimRng::new(1, 1);
        l.offer(Instant::ZERO, 1, 1000, &mut rng);
        assert_eq!(l.next_wakeup(), Some(Instant(2_666_667)));
        l.offer(Instant(2_666_667), 2, 1000, &mut rng);
        assert_eq!(drain(&mut l), vec![(1, 2_666_667), (2, 2 * 2_666_667)]);
    }

    #[test]
    fn unlimited_rate_has_no_serialisation() {
        let mut l = LinkDirection::new(params(0, 7, QueueConfig::DropTailPackets(1)));
        let mut rng = SimRng::new(1, 1);
        for i in 0..5 {
            assert_eq!(l.offer(Instant(100), i, 9000, &mut rng), Offer::Queued);
        }
        assert_eq!(l.stats().queue_bytes, 0);
        assert_eq!(l.stats().max_queue_bytes, 0);
        let out = drain(&mut l);
        assert_eq!(out, (0..5).map(|i| (i, 107)).collect::<Vec<_>>());
    }

    #[test]
    fn drop_tail_packets_drops_exactly_the_overflow() {
        let mut l = LinkDirection::new(params(1_000_000, MS, QueueConfig::DropTailPackets(10)));
        let mut rng = SimRng::new(1, 1);
        let res: Vec<Offer> = (0..25).map(|i| l.offer(Instant::ZERO, i, 100, &mut rng)).collect();
        assert!(res[..10].iter().all(|o| *o == Offer::Queued));
        assert!(res[10..].iter().all(|o| *o == Offer::DroppedQueue));
        let s = l.stats();
        assert_eq!((s.queue_packets, s.queue_drops, s.drops_total()), (10, 15, 15));
        // One tx time later (100 B at 1 Mbit/s = 800 us) one slot is free.
        assert_eq!(l.offer(Instant(800_000 - 1), 100, 100, &mut rng), Offer::DroppedQueue);
        assert_eq!(l.offer(Instant(800_000), 101, 100, &mut rng), Offer::Queued);
        let ids: Vec<u32> = drain(&mut l).into_iter().map(|x| x.0).collect();
        assert_eq!(ids, (0..10).chain([101]).collect::<Vec<_>>());
        assert_eq!(l.stats().accounted(), l.stats().offered_packets);
    }

    #[test]
    fn drop_tail_bytes_drops_exactly_the_overflow() {
        let mut l = LinkDirection::new(params(1_000_000, MS, QueueConfig::DropTailBytes(10_000)));
        let mut rng = SimRng::new(1, 1);
        for i in 0..6 {
            assert_eq!(l.offer(Instant::ZERO, i, 1500, &mut rng), Offer::Queued);
            // 9000
        }
        assert_eq!(l.offer(Instant::ZERO, 6, 1500, &mut rng), Offer::DroppedQueue); // 10500
        assert_eq!(l.offer(Instant::ZERO, 7, 1000, &mut rng), Offer::Queued); // exactly 10000
        assert_eq!(l.offer(Instant::ZERO, 8, 1, &mut rng), Offer::DroppedQueue);
        let s = l.stats();
        assert_eq!((s.queue_bytes, s.max_queue_bytes, s.queue_drops), (10_000, 10_000, 2));
        assert_eq!(drain(&mut l).len(), 7);
    }

    #[test]
    fn bernoulli_loss_rate() {
        let mut p = params(0, 0, unbounded());
        p.loss = LossModel::Bernoulli { p: 0.01 };
        let mut l = LinkDirection::new(p);
        let mut rng = SimRng::new(77, 3);
        let n = 200_000u64;
        let mut delivered = 0;
        for i in 0..n {
            l.offer(Instant(i), i, 100, &mut rng);
            while l.poll(Instant(i)).is_some() {
                delivered += 1;
            }
        }
        let s = l.stats();
        let lost = s.drops_loss();
        assert_eq!(lost + delivered, n);
        assert_eq!(s.tx_packets, n, "lost frames still used the wire");
        let sigma = (n as f64 * 0.01 * 0.99).sqrt();
        assert!((lost as f64 - n as f64 * 0.01).abs() < 4.0 * sigma, "lost {lost}");
    }

    #[test]
    fn gilbert_elliott_matches_stationary_loss() {
        let (p_gb, p_bg, lg, lb) = (0.01, 0.1, 0.001, 0.5);
        let mut p = params(0, 0, unbounded());
        p.loss = LossModel::GilbertElliott { p_gb, p_bg, loss_good: lg, loss_bad: lb };
        let mut l = LinkDirection::new(p);
        let mut rng = SimRng::new(5, 6);
        let n = 500_000u64;
        let mut lost_flags = Vec::with_capacity(n as usize);
        for i in 0..n {
            l.offer(Instant(i), i, 100, &mut rng);
            let got = l.poll(Instant(i)).is_some();
            lost_flags.push(!got);
        }
        let lost = lost_flags.iter().filter(|x| **x).count() as f64;
        assert_eq!(lost as u64, l.stats().loss_drops);
        let pi_bad = p_gb / (p_gb + p_bg);
        let want = (1.0 - pi_bad) * lg + pi_bad * lb;
        let got = lost / n as f64;
        assert!((got - want).abs() < 0.1 * want, "got {got}, want {want}");
        // Losses are bursty: P(loss | previous lost) far above the mean.
        let after_loss = lost_flags.windows(2).filter(|w| w[0]).count() as f64;
        let both = lost_flags.windows(2).filter(|w| w[0] && w[1]).count() as f64;
        assert!(both / after_loss > 3.0 * want, "conditional {}", both / after_loss);
    }

    fn jitter_run(allow_reorder: bool) -> Vec<(u32, u64)> {
        let mut p = params(100_000_000, 5 * MS, unbounded());
        p.jitter = Jitter::Uniform { max: Duration::from_millis(10) };
        p.allow_reorder = allow_reorder;
        let mut l = LinkDirection::new(p);
        let mut rng = SimRng::new(3, 3);
        // 1500 B every 200 us at 100 Mbit/s (120 us each): no queueing.
        for i in 0..2000u32 {
            l.offer(Instant(u64::from(i) * 200_000), i, 1500, &mut rng);
        }
        let out = drain(&mut l);
        assert_eq!(out.len(), 2000);
        for (id, at) in &out {
            let base = u64::from(*id) * 200_000 + 120_000 + 5 * MS;
            assert!(*at >= base);
            if allow_reorder {
                assert!(*at <= base + 10 * MS);
            }
        }
        // Delivered in arrival order either way.
        assert!(out.windows(2).all(|w| w[0].1 <= w[1].1));
        out
    }

    #[test]
    fn jitter_never_reorders_unless_allowed() {
        let fifo = jitter_run(false);
        assert!(fifo.windows(2).all(|w| w[0].0 < w[1].0));
        let re = jitter_run(true);
        let inversions = re.windows(2).filter(|w| w[0].0 > w[1].0).count();
        assert!(inversions > 100, "{inversions}");
        // Jitter is spread over [0, 10ms]: some arrivals well above the base.
        assert!(re.iter().any(|(id, at)| *at > u64::from(*id) * 200_000 + 120_000 + 13 * MS));
    }

    /// The extra delay (arrival - offer - delay) of `n` packets on an
    /// unlimited-rate link that may reorder, so nothing holds a packet back:
    /// exactly the jitter samples.
    fn jitter_samples(j: Jitter, n: u64, seed: u64) -> Vec<u64> {
        let delay = 7 * MS;
        let mut p = params(0, delay, unbounded());
        p.jitter = j;
        p.allow_reorder = true;
        let mut l = LinkDirection::new(p);
        let mut rng = SimRng::new(seed, 17);
        let sent = |i: u64| i * 1_000;
        for i in 0..n {
            assert_eq!(l.offer(Instant(sent(i)), i, 1500, &mut rng), Offer::Queued);
        }
        let out = drain(&mut l);
        assert_eq!(out.len() as u64, n);
        let mut extra = vec![0u64; n as usize];
        for (id, at) in out {
            assert!(at >= sent(id) + delay, "packet {id} arrived before the propagation delay");
            extra[id as usize] = at - sent(id) - delay;
        }
        extra
    }

    /// Sample mean and standard deviation.
    fn mean_sd(x: &[u64]) -> (f64, f64) {
        let n = x.len() as f64;
        let mean = x.iter().map(|&v| v as f64).sum::<f64>() / n;
        let var = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var.sqrt())
    }

    fn fraction(x: &[u64], pred: impl Fn(u64) -> bool) -> f64 {
        x.iter().filter(|&&v| pred(v)).count() as f64 / x.len() as f64
    }

    const JITTER_N: u64 = 100_000;

    #[test]
    fn uniform_jitter_statistics() {
        let j = 4 * MS;
        let x = jitter_samples(Jitter::Uniform { max: Duration::from_nanos(j) }, JITTER_N, 1);
        let (mean, sd) = mean_sd(&x);
        let (want_mean, want_sd) = (j as f64 / 2.0, j as f64 / 12f64.sqrt());
        // sd of the sample mean = want_sd / sqrt(n) = 0.09% of j: 1% is > 10 sigma.
        assert!((mean / want_mean - 1.0).abs() < 0.01, "mean {mean} vs {want_mean}");
        assert!((sd / want_sd - 1.0).abs() < 0.02, "sd {sd} vs {want_sd}");
        assert!(x.iter().all(|&v| v <= j));
        assert!(fraction(&x, |v| v < j / 4) > 0.24 && fraction(&x, |v| v > 3 * j / 4) > 0.24);
    }

    #[test]
    fn normal_jitter_is_half_normal_with_sigma() {
        let sigma = 3 * MS;
        let x = jitter_samples(Jitter::Normal { sigma: Duration::from_nanos(sigma) }, JITTER_N, 2);
        let (mean, sd) = mean_sd(&x);
        let s = sigma as f64;
        let want_mean = s * (2.0 / std::f64::consts::PI).sqrt();
        let want_sd = s * (1.0 - 2.0 / std::f64::consts::PI).sqrt();
        // sd of the sample mean = 0.6 sigma / sqrt(n) = 0.24% of the mean.
        assert!((mean / want_mean - 1.0).abs() < 0.01, "mean {mean} vs {want_mean}");
        assert!((sd / want_sd - 1.0).abs() < 0.02, "sd {sd} vs {want_sd}");
        // |Z| < 1 with probability 0.6827, |Z| < 2 with 0.9545 (sd of a
        // fraction over 100k is <= 0.0016).
        assert!((fraction(&x, |v| v < sigma) - 0.6827).abs() < 0.008);
        assert!((fraction(&x, |v| v < 2 * sigma) - 0.9545).abs() < 0.005);
        // Mass near zero (the half-normal's mode), nothing absurd in the tail.
        assert!(fraction(&x, |v| v < sigma / 10) > 0.07);
        assert!(x.iter().all(|&v| v < 9 * sigma));
    }

    #[test]
    fn pareto_jitter_has_the_mean_and_a_heavy_tail() {
        let m = 2 * MS;
        let x = jitter_samples(Jitter::Pareto { mean: Duration::from_nanos(m) }, JITTER_N, 3);
        let (mean, sd) = mean_sd(&x);
        let m_f = m as f64;
        let x_m = m_f * 2.0 / 3.0;
        // sd of the sample mean = (m / sqrt 3) / sqrt(n) = 0.18% of m.
        assert!((mean / m_f - 1.0).abs() < 0.015, "mean {mean} vs {m_f}");
        // The sample sd of a shape-3 Pareto converges slowly (infinite
        // fourth moment): a loose check, the quantiles below are exact.
        assert!((sd / (m_f / 3f64.sqrt()) - 1.0).abs() < 0.25, "sd {sd}");
        // Never below the scale x_m = 2/3 mean; median x_m * 2^(1/3);
        // P(X > 2 m) = (x_m / 2m)^3 = 1/27.
        assert!(x.iter().all(|&v| v as f64 >= x_m - 1.0), "min {}", x.iter().min().unwrap());
        let mut sorted = x.clone();
        sorted.sort_unstable();
        let median = sorted[sorted.len() / 2] as f64;
        assert!((median / (x_m * 2f64.cbrt()) - 1.0).abs() < 0.01, "median {median}");
        assert!((fraction(&x, |v| v > 2 * m) - 1.0 / 27.0).abs() < 0.003);
        // Heavy tail: some packets wait many times the mean.
        assert!(sorted[sorted.len() - 1] > 10 * m, "max {}", sorted[sorted.len() - 1]);
    }

    #[test]
    fn jitter_draws_are_deterministic_and_zero_scale_draws_nothing() {
        for j in [Jitter::Uniform { max: Duration::from_millis(3) }, Jitter::Normal { sigma: Duration::from_millis(3) }, Jitter::Pareto { mean: Duration::from_millis(3) }] {
            let a = jitter_samples(j, 2000, 9);
            assert_eq!(a, jitter_samples(j, 2000, 9), "{j:?}");
            assert_ne!(a, jitter_samples(j, 2000, 10), "{j:?}");
            // A zero scale is no jitter and leaves the stream untouched.
            let zero = j.with_scale(Duration::ZERO);
            assert_eq!(zero.scale_ns(), 0);
            let mut l = LinkDirection::new(LinkParams { jitter: zero, ..params(0, MS, unbounded()) });
            let mut rng = SimRng::new(1, 1);
            let before = rng.clone();
            for i in 0..100 {
                l.offer(Instant(i), i, 100, &mut rng);
            }
            assert_eq!(rng.next_u64(), before.clone().next_u64());
            assert!(drain(&mut l).iter().all(|&(i, at)| at == i + MS));
        }
    }

    #[test]
    fn with_scale_keeps_the_distribution() {
        let d = Duration::from_millis(4);
        assert_eq!(Jitter::None.with_scale(d), Jitter::Uniform { max: d });
        assert_eq!(Jitter::Normal { sigma: Duration::ZERO }.with_scale(d), Jitter::Normal { sigma: d });
        assert_eq!(Jitter::Pareto { mean: MS_D }.with_scale(d), Jitter::Pareto { mean: d });
        assert_eq!(Jitter::Pareto { mean: d }.scale_ns(), 4 * MS);
    }

    const MS_D: Duration = Duration::from_millis(1);

    /// 3000 packets of 1500 B every 200 us on a 100 Mbit/s link (120 us
    /// each, so no queueing) with jitter far above the spacing.
    fn jitter_order_run(j: Jitter, allow_reorder: bool) -> Vec<(u32, u64)> {
        let mut p = params(100_000_000, 5 * MS, unbounded());
        p.jitter = j;
        p.allow_reorder = allow_reorder;
        let mut l = LinkDirection::new(p);
        let mut rng = SimRng::new(4, 4);
        for i in 0..3000u32 {
            l.offer(Instant(u64::from(i) * 200_000), i, 1500, &mut rng);
        }
        let out = drain(&mut l);
        assert_eq!(out.len(), 3000);
        for (id, at) in &out {
            assert!(*at >= u64::from(*id) * 200_000 + 120_000 + 5 * MS, "{j:?}: {id} early");
        }
        assert!(out.windows(2).all(|w| w[0].1 <= w[1].1), "delivered in arrival order");
        out
    }

    #[test]
    fn no_distribution_reorders_unless_allowed() {
        for j in [Jitter::Uniform { max: Duration::from_millis(10) }, Jitter::Normal { sigma: Duration::from_millis(5) }, Jitter::Pareto { mean: Duration::from_millis(5) }] {
            let fifo = jitter_order_run(j, false);
            assert!(fifo.windows(2).all(|w| w[0].0 < w[1].0), "{j:?} reordered");
            let re = jitter_order_run(j, true);
            let inversions = re.windows(2).filter(|w| w[0].0 > w[1].0).count();
            assert!(inversions > 100, "{j:?}: only {inversions} inversions with reorder");
        }
    }

    fn red(gentle: bool, weight: f64) -> QueueConfig {
        QueueConfig::Red { min_th_bytes: 10_000, max_th_bytes: 20_000, max_p: 0.2, weight, limit_bytes: 1_000_000, gentle }
    }

    /// Offers `n` 100-byte packets to a 1 kbit/s link (nothing leaves the
    /// queue during the test); returns (average used for the decision,
    /// outcome) per offer.
    fn red_trace(gentle: bool, weight: f64, n: usize) -> (LinkDirection<()>, Vec<(f64, Offer)>) {
        let mut l = LinkDirection::new(params(1000, 0, red(gentle, weight)));
        let mut rng = SimRng::new(8, u64::from(gentle));
        let trace = (0..n as u64)
            .map(|t| {
                let o = l.offer(Instant(t), (), 100, &mut rng);
                (l.red.avg, o)
            })
            .collect();
        (l, trace)
    }

    #[test]
    fn red_instantaneous_average_regions() {
        // weight 1: avg = queue before the arrival, so the regions are exact.
        let (l, trace) = red_trace(false, 1.0, 3000);
        let below: Vec<_> = trace.iter().filter(|r| r.0 < 10_000.0).collect();
        assert_eq!(below.len(), 100);
        assert!(below.iter().all(|r| r.1 == Offer::Queued));
        let between: Vec<_> = trace.iter().filter(|r| (10_000.0..20_000.0).contains(&r.0)).collect();
        assert_eq!(between.iter().filter(|r| r.1 == Offer::Queued).count(), 100);
        assert!(between.iter().filter(|r| r.1 == Offer::DroppedQueue).count() > 5);
        // Once at max_th (non-gentle) every packet is dropped.
        let above: Vec<_> = trace.iter().filter(|r| r.0 >= 20_000.0).collect();
        assert!(above.len() > 1000);
        assert!(above.iter().all(|r| r.1 == Offer::DroppedQueue));
        assert_eq!(l.stats().queue_bytes, 20_000);
    }

    #[test]
    fn red_averaged_regions() {
        // A slow average (w = 0.001) lags the queue by ~1000 packets, so the
        // queue overshoots and the average crosses every region.
        for gentle in [false, true] {
            let (l, trace) = red_trace(gentle, 0.001, 8000);
            let region = |lo: f64, hi: f64| trace.iter().filter(move |r| r.0 >= lo && r.0 < hi);
            assert!(region(0.0, 10_000.0).all(|r| r.1 == Offer::Queued));
            assert!(region(10_000.0, 20_000.0).any(|r| r.1 == Offer::Queued));
            assert!(region(10_000.0, 20_000.0).any(|r| r.1 == Offer::DroppedQueue));
            if gentle {
                // Gentle: between max_th and 2 max_th, drops ramp to 1.
                assert!(region(20_000.0, 40_000.0).any(|r| r.1 == Offer::Queued));
                assert!(region(20_000.0, 40_000.0).any(|r| r.1 == Offer::DroppedQueue));
                assert!(region(40_000.0, f64::INFINITY).count() > 100);
                assert!(region(40_000.0, f64::INFINITY).all(|r| r.1 == Offer::DroppedQueue));
            } else {
                assert!(region(20_000.0, f64::INFINITY).count() > 100);
                assert!(region(20_000.0, f64::INFINITY).all(|r| r.1 == Offer::DroppedQueue));
            }
            assert!(l.stats().queue_bytes > 40_000, "the queue overshoots: {}", l.stats().queue_bytes);
        }
    }

    #[test]
    fn red_average_decays_when_idle_and_limit_holds() {
        let q = QueueConfig::Red { min_th_bytes: 5_000, max_th_bytes: 10_000, max_p: 0.1, weight: 0.5, limit_bytes: 12_000, gentle: false };
        let mut l = LinkDirection::new(params(8_000_000, 0, q)); // 1000 B = 1 ms
        let mut rng = SimRng::new(1, 2);
        for _ in 0..40 {
            l.offer(Instant::ZERO, (), 1000, &mut rng);
        }
        assert!(l.stats().queue_bytes <= 12_000);
        assert!(l.stats().queue_drops > 0);
        // The queue drains by 12 ms; after a long idle the average has
        // decayed and the next burst below min_th is accepted in full.
        assert!(l.red.avg > 5_000.0);
        let t = Instant(1000 * MS);
        assert_eq!(l.offer(t, (), 1000, &mut rng), Offer::Queued);
        assert!(l.red.avg < 1.0, "decayed over the idle period: {}", l.red.avg);
        for _ in 0..4 {
            assert_eq!(l.offer(t, (), 1000, &mut rng), Offer::Queued);
        }
    }

    #[test]
    fn link_down_drops_everything_inside_and_up_resumes() {
        // 1000 B at 8 Mbit/s = 1 ms; delay 10 ms.
        let mut l = LinkDirection::new(params(8_000_000, 10 * MS, unbounded()));
        let mut rng = SimRng::new(1, 1);
        for i in 0..5 {
            l.offer(Instant::ZERO, i, 1000, &mut rng);
        }
        // At 11.5 ms: #0 arrived (11 ms), #1..#4 serialised (2..5 ms),
        // propagating (arrive 12..15 ms).
        let t = Instant(11 * MS + MS / 2);
        l.set_up(t, false);
        assert!(!l.is_up());
        let s = l.stats();
        // #0 has arrived but is not polled yet: still counted as inside.
        assert_eq!((s.down_drops, s.queue_packets, s.in_flight_packets), (4, 0, 1));
        // The packet that had already arrived is still handed out.
        assert_eq!(l.poll(t).map(|d| d.packet), Some(0));
        assert_eq!(l.stats().in_flight_packets, 0);
        assert_eq!(l.next_wakeup(), None);
        assert_eq!(l.offer(t, 9, 1000, &mut rng), Offer::DroppedDown);
        assert_eq!(l.stats().down_drops, 5);

        // Queued (not yet serialised) packets are dropped too.
        l.set_up(Instant(20 * MS), true);
        for i in 10..15 {
            assert_eq!(l.offer(Instant(20 * MS), i, 1000, &mut rng), Offer::Queued);
        }
        l.set_up(Instant(22 * MS + 1), false);
        let s = l.stats();
        assert_eq!((s.down_drops, s.queue_packets, s.queue_bytes), (10, 0, 0));
        assert_eq!(s.tx_packets, 5 + 2);
        // Up again: the serialiser is idle, a new packet starts right away.
        l.set_up(Instant(30 * MS), true);
        l.offer(Instant(30 * MS), 20, 1000, &mut rng);
        assert_eq!(drain(&mut l), vec![(20, 41 * MS)]);
        let s = l.stats();
        assert_eq!(s.accounted(), s.offered_packets);
    }

    #[test]
    fn set_rate_mid_queue_retimes() {
        // 1500 B at 10 Mbit/s = 1.2 ms each.
        let mut l = LinkDirection::new(params(10_000_000, 20 * MS, unbounded()));
        let mut rng = SimRng::new(1, 1);
        for i in 0..3 {
            l.offer(Instant::ZERO, i, 1500, &mut rng);
        }
        // At 0.6 ms, #0 has 6000 bits left: at 20 Mbit/s that is 0.3 ms.
        l.set_rate(Instant(600_000), 20_000_000);
        let out = drain(&mut l);
        let ends = [900_000, 1_500_000, 2_100_000];
        assert_eq!(out, (0..3).map(|i| (i, ends[i as usize] + 20 * MS)).collect::<Vec<_>>());

        // Slower, with non-integer times: 20 -> 7 Mbit/s half way through
        // the first packet (0.6 ms at 20 Mbit/s). The 6000 bits left and the
        // 12000 bits of each following packet go out at 7 Mbit/s, exactly.
        let t = 100 * MS;
        for i in 0..3 {
            l.offer(Instant(t), i, 1500, &mut rng);
        }
        l.set_rate(Instant(t + 300_000), 7_000_000);
        let out = drain(&mut l);
        let want: Vec<_> = (0..3u64)
            .map(|i| (i, t + 300_000 + (u128::from(6000 + 12000 * i) * 1_000_000_000).div_ceil(7_000_000) as u64 + 20 * MS))
            .collect();
        assert_eq!(out, want);

        // To unlimited: everything queued leaves at once.
        for i in 0..3 {
            l.offer(Instant(200 * MS), i, 1500, &mut rng);
        }
        l.set_rate(Instant(200 * MS + 1), 0);
        assert_eq!(l.stats().queue_packets, 0);
        let out = drain(&mut l);
        assert_eq!(out, (0..3).map(|i| (i, 220 * MS + 1)).collect::<Vec<_>>());
        // And back from unlimited.
        l.set_rate(Instant(300 * MS), 10_000_000);
        l.offer(Instant(300 * MS), 7, 1500, &mut rng);
        assert_eq!(drain(&mut l), vec![(7, 300 * MS + 1_200_000 + 20 * MS)]);
    }

    #[test]
    fn set_delay_applies_to_unsent_packets_only() {
        // 1000 B at 8 Mbit/s = 1 ms; delay 10 ms.
        let mut l = LinkDirection::new(params(8_000_000, 10 * MS, unbounded()));
        let mut rng = SimRng::new(1, 1);
        for i in 0..4 {
            l.offer(Instant::ZERO, i, 1000, &mut rng);
        }
        // At 2.5 ms #0, #1 are propagating (arrive 11, 12 ms); #2 is on the
        // serialiser (ends 3 ms), #3 waiting (ends 4 ms). New delay 1 ms:
        // #2 and #3 would arrive at 4 and 5 ms but may not overtake #1, so
        // both are held to 12 ms.
        l.set_delay(Instant(2 * MS + MS / 2), Duration::from_millis(1));
        assert_eq!(drain(&mut l), vec![(0, 11 * MS), (1, 12 * MS), (2, 12 * MS), (3, 12 * MS)]);
        // Longer delay.
        for i in 0..2 {
            l.offer(Instant(100 * MS), i, 1000, &mut rng);
        }
        l.set_delay(Instant(100 * MS + MS / 2), Duration::from_millis(50));
        assert_eq!(drain(&mut l), vec![(0, 151 * MS), (1, 152 * MS)]);
    }

    #[test]
    fn set_delay_with_reordering_allowed() {
        let mut p = params(8_000_000, 10 * MS, unbounded());
        p.allow_reorder = true;
        let mut l = LinkDirection::new(p);
        let mut rng = SimRng::new(1, 1);
        for i in 0..4 {
            l.offer(Instant::ZERO, i, 1000, &mut rng);
        }
        l.set_delay(Instant(2 * MS + MS / 2), Duration::from_millis(1));
        assert_eq!(drain(&mut l), vec![(2, 4 * MS), (3, 5 * MS), (0, 11 * MS), (1, 12 * MS)]);
        for i in 0..3 {
            l.offer(Instant(100 * MS), i, 1000, &mut rng);
        }
        l.set_rate(Instant(100 * MS + MS / 2), 16_000_000);
        assert_eq!(drain(&mut l), vec![(0, 101 * MS + 750_000), (1, 101 * MS + 1_250_000), (2, 101 * MS + 1_750_000)]);
    }

    fn lossy_run(seed: u64) -> (Vec<(u32, u64)>, LinkStats) {
        let mut p = params(50_000_000, 2 * MS, red(true, 0.01));
        p.jitter = Jitter::Uniform { max: Duration::from_micros(300) };
        p.loss = LossModel::GilbertElliott { p_gb: 0.02, p_bg: 0.2, loss_good: 0.001, loss_bad: 0.3 };
        p.allow_reorder = true;
        let mut l = LinkDirection::new(p);
        let mut rng = SimRng::new(seed, 42);
        let mut out = Vec::new();
        let mut now = 0u64;
        for i in 0..20_000u32 {
            // Bursty arrivals, faster than the link on average.
            now += if i % 10 == 0 { 1_000_000 } else { 50_000 };
            if let Some(w) = l.next_wakeup() {
                if w.0 <= now {
                    while let Some(d) = l.poll(Instant(now)) {
                        out.push((d.packet, d.at.0));
                    }
                }
            }
            l.offer(Instant(now), i, 1200, &mut rng);
        }
        out.extend(drain(&mut l));
        (out, l.stats())
    }

    #[test]
    fn same_seed_same_deliveries() {
        let (a, sa) = lossy_run(11);
        let (b, sb) = lossy_run(11);
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        assert!(sa.queue_drops > 0 && sa.loss_drops > 0, "{sa:?}");
        let (c, _) = lossy_run(12);
        assert_ne!(a, c);
    }

    #[test]
    fn degenerate_parameters_do_not_panic() {
        let mut rng = SimRng::new(0, 0);
        let queues = [
            QueueConfig::DropTailPackets(0),
            QueueConfig::DropTailBytes(0),
            QueueConfig::DropTailBytes(u64::MAX),
            QueueConfig::Red { min_th_bytes: 9, max_th_bytes: 3, max_p: f64::NAN, weight: f64::NAN, limit_bytes: 0, gentle: true },
            QueueConfig::Red { min_th_bytes: 0, max_th_bytes: 0, max_p: 7.0, weight: -1.0, limit_bytes: u64::MAX, gentle: true },
            QueueConfig::Red { min_th_bytes: 0, max_th_bytes: u64::MAX, max_p: 1.0, weight: 1.0, limit_bytes: u64::MAX, gentle: false },
        ];
        for q in queues {
            for rate in [0, 1, u64::MAX] {
                let mut p = params(rate, u64::MAX, q);
                p.delay = Duration::MAX;
                p.jitter = [Jitter::Uniform { max: Duration::MAX }, Jitter::Normal { sigma: Duration::MAX }, Jitter::Pareto { mean: Duration::MAX }]
                    [rate as usize % 3];
                p.loss = LossModel::GilbertElliott { p_gb: f64::NAN, p_bg: 2.0, loss_good: -1.0, loss_bad: f64::INFINITY };
                let mut l = LinkDirection::new(p);
                for (i, size) in [0u32, 1, u32::MAX, 1500].into_iter().enumerate() {
                    l.offer(Instant(i as u64), size, size, &mut rng);
                    l.offer(Instant::MAX, size, size, &mut rng);
                    l.offer(Instant::ZERO, size, size, &mut rng); // time going backwards
                }
                l.set_rate(Instant(5), 3);
                l.set_rate(Instant(5), u64::MAX);
                l.set_delay(Instant(6), Duration::ZERO);
                l.set_loss(LossModel::Bernoulli { p: f64::NAN });
                let _ = l.next_wakeup();
                while l.poll(Instant::MAX).is_some() {}
                l.set_up(Instant(1), false);
                l.set_up(Instant(1), true);
                let s = l.stats();
                assert_eq!(s.accounted(), s.offered_packets, "{q:?} {rate}");
            }
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Offer { dt: u64, size: u32 },
        Poll { dt: u64 },
        PollAtWakeup,
        Rate(u64),
        Delay(u64),
        Down,
        Up,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            8 => (0u64..3_000_000, 0u32..3000).prop_map(|(dt, size)| Op::Offer { dt, size }),
            3 => (0u64..5_000_000).prop_map(|dt| Op::Poll { dt }),
            4 => Just(Op::PollAtWakeup),
            1 => prop_oneof![Just(0u64), 1_000u64..100_000_000].prop_map(Op::Rate),
            1 => (0u64..10_000_000).prop_map(Op::Delay),
            1 => Just(Op::Down),
            1 => Just(Op::Up),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        /// Random offer/poll/reconfigure sequences: FIFO delivery without
        /// reordering, delivery in arrival order always, nothing before
        /// offer + delay, nothing after it was due, wake-ups exact, and the
        /// counters always add up.
        #[test]
        fn fifo_timing_and_accounting(
            rate in prop_oneof![Just(0u64), 100_000u64..1_000_000_000],
            delay in 0u64..20_000_000,
            jitter in prop_oneof![Just(0u64), 1u64..5_000_000],
            jitter_kind in 0u8..3,
            loss in 0.0f64..0.3,
            limit in 1u64..40,
            queue_kind in 0u8..4,
            reorder in any::<bool>(),
            ops in proptest::collection::vec(op(), 1..300),
            seed in any::<u64>(),
        ) {
            let queue = match queue_kind {
                0 => QueueConfig::DropTailPackets(limit as usize),
                1 => QueueConfig::DropTailBytes(limit * 1000),
                k => QueueConfig::Red {
                    min_th_bytes: limit * 200, max_th_bytes: limit * 600, max_p: 0.3, weight: 0.2,
                    limit_bytes: limit * 1000, gentle: k == 3,
                },
            };
            let mut p = params(rate, delay, queue);
            let scale = Duration::from_nanos(jitter);
            p.jitter = match jitter_kind {
                _ if jitter == 0 => Jitter::None,
                0 => Jitter::Uniform { max: scale },
                1 => Jitter::Normal { sigma: scale },
                _ => Jitter::Pareto { mean: scale },
            };
            p.loss = LossModel::Bernoulli { p: loss };
            p.allow_reorder = reorder;
            let mut l = LinkDirection::new(p);
            let mut rng = SimRng::new(seed, 0);
            let mut now = 0u64;
            let mut sent_at: Vec<u64> = Vec::new();
            let mut last_id: Option<usize> = None;
            let mut last_at = 0u64;
            // Smallest delay in force since each packet was offered.
            let mut min_delay_since: Vec<u64> = Vec::new();
            let mut cur_delay = delay;
            let mut check = |l: &mut LinkDirection<usize>, t: u64, sent_at: &[u64], min_delay_since: &[u64]| -> Result<(), TestCaseError> {
                while let Some(d) = l.poll(Instant(t)) {
                    let id = d.packet;
                    prop_assert!(d.at.0 <= t);
                    prop_assert!(d.at.0 >= sent_at[id] + min_delay_since[id], "early: {} < {} + {}", d.at.0, sent_at[id], min_delay_since[id]);
                    if let (Some(prev), false) = (last_id, reorder) { prop_assert!(id > prev, "reordered {} after {}", id, prev); }
                    prop_assert!(d.at.0 >= last_at);
                    last_id = Some(id);
                    last_at = d.at.0;
                }
                // Nothing is overdue after a poll.
                if let Some(w) = l.next_wakeup() { prop_assert!(w.0 > t); }
                let s = l.stats();
                prop_assert_eq!(s.accounted(), s.offered_packets);
                Ok(())
            };
            for o in ops {
                match o {
                    Op::Offer { dt, size } => {
                        now += dt;
                        let id = sent_at.len();
                        sent_at.push(now);
                        min_delay_since.push(cur_delay);
                        let _ = l.offer(Instant(now), id, size, &mut rng);
                    }
                    Op::Poll { dt } => { now += dt; check(&mut l, now, &sent_at, &min_delay_since)?; }
                    Op::PollAtWakeup => {
                        if let Some(w) = l.next_wakeup() {
                            now = now.max(w.0);
                            let before = l.stats().delivered_packets;
                            check(&mut l, now, &sent_at, &min_delay_since)?;
                            prop_assert!(l.stats().delivered_packets > before);
                        }
                    }
                    Op::Rate(r) => l.set_rate(Instant(now), r),
                    Op::Delay(d) => {
                        l.set_delay(Instant(now), Duration::from_nanos(d));
                        cur_delay = d;
                        for m in min_delay_since.iter_mut() { *m = (*m).min(d); }
                    }
                    Op::Down => l.set_up(Instant(now), false),
                    Op::Up => l.set_up(Instant(now), true),
                }
                let s = l.stats();
                prop_assert_eq!(s.accounted(), s.offered_packets);
            }
            check(&mut l, u64::MAX, &sent_at, &min_delay_since)?;
            let s = l.stats();
            prop_assert_eq!(s.queue_packets + s.in_flight_packets, 0);
            prop_assert_eq!(s.offered_packets, s.delivered_packets + s.drops_total());
        }
    }

    /// Per-packet cost of the common path (offer + wake-up poll).
    /// `cargo test -p mplab-sim --lib --release -- --ignored --nocapture link_speed`
    #[test]
    #[ignore]
    fn link_speed() {
        let mut p = params(10_000_000_000, 10_000, QueueConfig::DropTailPackets(1000));
        p.loss = LossModel::Bernoulli { p: 0.001 };
        let mut l = LinkDirection::new(p);
        let mut rng = SimRng::new(1, 1);
        let n = 20_000_000u64;
        let t0 = std::time::Instant::now();
        let mut got = 0u64;
        for i in 0..n {
            let now = Instant(i * 1_000);
            l.offer(now, i, 1500, &mut rng);
            while let Some(d) = l.poll(now) {
                got += d.packet & 1;
            }
        }
        let dt = t0.elapsed().as_secs_f64();
        println!("link: {:.1} ns/packet ({got})", dt * 1e9 / n as f64);
    }
}
