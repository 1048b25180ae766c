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
//!
//! # Elements
//!
//! Each element of the model is its own module; [`LinkDirection`] composes
//! them, keeping the fields every packet touches in its first cache lines:
//!
//! * `queue`: the queueing disciplines (drop-tail by packets or bytes,
//!   RED), one file each, chosen by [`QueueConfig`], which a scenario's
//!   queue table names ([`QueueConfig::from_table`], [`disciplines`]);
//! * `serialiser`: the per-packet records of the queue and the exact
//!   serialisation timeline, on the arithmetic of `time`;
//! * `loss`: [`LossModel`] (Bernoulli, Gilbert-Elliott);
//! * `jitter`: [`Jitter`] and its distributions;
//! * `flight`: the packets propagating to the far end, by arrival;
//! * `trace`: trace-driven capacity ([`DeliverySchedule`], Mahimahi's
//!   delivery opportunities), which replaces the serialiser's timeline on a
//!   link given one with [`LinkDirection::set_trace`];
//! * `stats`: [`LinkStats`];
//! * `radio`: a cellular radio's idle state ([`Radio`]), beside the two
//!   directions of a link: the caller offers a packet at the time it says.

mod flight;
mod jitter;
mod loss;
mod queue;
mod radio;
mod serialiser;
mod stats;
mod time;
mod trace;

use std::collections::VecDeque;
use std::time::Duration;

use mplab_proto::Instant;

pub use self::jitter::{Jitter, PARETO_SHAPE};
pub use self::loss::LossModel;
pub use self::queue::{disciplines, QueueConfig};
pub use self::radio::Radio;
pub use self::stats::LinkStats;
pub use self::trace::{DeliverySchedule, OPPORTUNITY_BYTES, TUN_HEADER_BYTES};
use self::flight::{Fifo, Flight, Fly, NO_ARRIVAL};
use self::queue::{Backlog, Discipline};
use self::serialiser::{Ser, Serialiser};
use self::time::duration_ns;
use self::trace::{TraceLink, NEVER};
use crate::rng::SimRng;

/// Everything that describes one direction of a link. In declaration
/// order (`repr(C)`): what every `offer` reads first, in adjacent lines;
/// the queue discipline last (a link starts its own copy of it, which
/// `offer` reads instead).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkParams {
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
    pub queue: QueueConfig,
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
    /// When the serialiser finishes everything accepted so far.
    serialiser: Serialiser, // 16
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
    /// The packet limit of a drop-tail queue limited in packets
    /// (`QueueConfig::packet_limit`), `u32::MAX` for the other disciplines
    /// (which `discipline` decides).
    packet_limit: u32,
    up: bool,
    /// `p.loss` is `None`: no draw, no match on the model.
    lossless: bool,
    /// `p.allow_reorder`.
    reorder: bool,
    /// The Gilbert-Elliott chain is in its bad state.
    ge_bad: bool,
    /// `discarded` is not empty (read on every offer, unlike the vector).
    has_discarded: bool,
    /// `jitter_scale_ns` is not zero.
    jittery: bool,
    /// `trace` is set: capacity comes from its opportunities, not `rate_bps`.
    traced: bool,
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
    /// The queue discipline with its state, unless `packet_limit` decides.
    discipline: Discipline,
    /// Trace-driven capacity, if any (`traced`).
    trace: Option<Box<TraceLink>>,
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

impl<P: Copy + Default> LinkDirection<P> {
    /// An idle, up link direction.
    pub fn new(p: LinkParams) -> Self {
        LinkDirection {
            rate_bps: p.rate_bps,
            // A limit too large for the copy is left to the discipline.
            packet_limit: p.queue.packet_limit().map_or(u32::MAX, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            lossless: p.loss == LossModel::None,
            reorder: p.allow_reorder,
            delay_ns: duration_ns(p.delay),
            jitter_scale_ns: p.jitter.scale_ns(),
            jittery: p.jitter.scale_ns() != 0,
            traced: false,
            trace: None,
            flight_last_at: 0,
            up: true,
            queue: VecDeque::new(),
            queued_live: 0,
            flight: if p.allow_reorder { Flight::Heap(Box::default()) } else { Flight::Fifo(Fifo::default()) },
            serialiser: Serialiser::default(),
            next_seq: 0,
            ge_bad: false,
            discipline: p.queue.discipline(),
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

    /// Replaces the rate by a schedule of delivery opportunities (time 0 of
    /// the schedule is time 0 of the link). Call before offering anything.
    /// `rate_bps` stays as the mean rate for what reads it (RED's idle
    /// correction).
    pub fn set_trace(&mut self, sched: DeliverySchedule) {
        let mean = sched.mean_rate_bps();
        self.p.rate_bps = mean;
        self.rate_bps = mean;
        self.trace = Some(Box::new(TraceLink::new(sched)));
        self.traced = true;
    }

    /// The schedule replayed, if the link is trace-driven.
    pub fn trace(&self) -> Option<&DeliverySchedule> {
        self.trace.as_deref().map(TraceLink::schedule)
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
        let lost = !self.lossless && self.p.loss.draw(&mut self.ge_bad, rng);
        let jitter = if lost || !self.jittery { 0 } else { self.p.jitter.sample(self.jitter_scale_ns, rng) };

        let (end_ns, end_rem, lost) = if self.traced {
            let end = self.trace.as_mut().map_or(NEVER, |t| t.offer(now, size));
            // A packet the trace will never carry stays queued for ever
            // (never retired, so never counted as lost), with no flight entry.
            (end, 0, lost || end == NEVER)
        } else {
            let (end_ns, end_rem) = self.serialiser.schedule(now, size, self.rate_bps);
            (end_ns, end_rem, lost)
        };
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
            self.serialiser.abort(now);
            if let Some(t) = self.trace.as_mut() {
                t.abort(now);
            }
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
        if self.traced {
            // A fixed rate replaces the trace: packets already scheduled
            // keep their opportunities, later ones queue behind them.
            self.traced = false;
            self.trace = None;
            self.serialiser.abort(self.last_end_ns.max(now));
            self.p.rate_bps = rate_bps;
            self.rate_bps = rate_bps;
            return;
        }
        let old = self.p.rate_bps;
        self.p.rate_bps = rate_bps;
        self.rate_bps = rate_bps;
        if old == rate_bps {
            return;
        }
        self.serialiser.retime(&mut self.queue, now, old, rate_bps);
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
        if !self.p.loss.keeps_state(l) {
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
        let (packets, bytes) = if self.traced { self.trace_backlog(now) } else { (self.queue.len(), self.queue_bytes) };
        if self.packet_limit != u32::MAX {
            return packets < self.packet_limit as usize;
        }
        let backlog = Backlog { packets, bytes, idle_since: self.idle_since, rate_bps: self.rate_bps };
        self.discipline.admit(backlog, now, size, rng)
    }

    /// The backlog a trace-driven link's queue limit sees (see `trace`).
    #[cold]
    fn trace_backlog(&mut self, now: u64) -> (usize, u64) {
        let head = self.queue.front().map_or(0, |r| r.size);
        match self.trace.as_mut() {
            Some(t) => t.waiting(now, self.queue.len(), self.queue_bytes, head),
            None => (self.queue.len(), self.queue_bytes),
        }
    }

    /// Recomputes the arrival of every packet still in the queue from its
    /// (possibly new) end and the current delay.
    fn retime_arrivals(&mut self) {
        if self.queued_live == 0 {
            return;
        }
        let delay = self.delay_ns;
        let reorder = self.p.allow_reorder;
        let arrival = |r: &Ser, prev: u64| {
            let at = r.end().saturating_add(delay).saturating_add(r.jitter_ns).min(NO_ARRIVAL - 1);
            if reorder {
                at
            } else {
                at.max(prev)
            }
        };
        let first_seq = self.next_seq - self.queue.len() as u64;
        self.flight.retime_queued(&self.queue, first_seq, self.queued_live, arrival);
        self.flight_last_at = self.flight.last_at();
    }
}

#[cfg(test)]
mod tests;
