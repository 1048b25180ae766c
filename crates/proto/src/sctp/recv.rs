//! The receive side: a map of received TSNs (cumulative point plus an
//! out-of-order set), the finite receive buffer behind a_rwnd, in-order
//! delivery, duplicate reporting, and the delayed-SACK rules of RFC 9260
//! 6.2 (every second packet or `sack_delay`, at once on gaps and
//! duplicates) with the CMT DAC variant (keep delaying under reordering).
//!
//! It also measures what reordering costs: bytes held out of order, how
//! long they waited for the gap before them to fill, and the buffer
//! occupancy over time.

use core::time::Duration;
use std::collections::{BTreeMap, VecDeque};

use mplab_wire::sctp::chunk::{sack_flags, DataChunk, GapBlock, SackChunk};

use super::tsn;
use crate::time::Instant;

/// Farthest a TSN may lie beyond the cumulative point before it is
/// dropped: bounds the out-of-order map whatever the peer sends.
const MAX_TSN_AHEAD: u64 = 1 << 16;
/// Duplicate TSNs remembered for the next SACK.
const MAX_DUPS: usize = 16;

#[derive(Debug)]
struct Held {
    payload: Vec<u8>,
    ending: bool,
    arrived: Instant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataOutcome {
    InOrder,
    OutOfOrder,
    Duplicate,
    /// No room: not acknowledged, the sender will retransmit.
    Dropped,
}

/// Receiver-side counters.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RecvStats {
    pub delivered_bytes: u64,
    pub delivered_messages: u64,
    pub data_chunks: u64,
    pub duplicates: u64,
    pub dropped_no_space: u64,
    pub sacks_sent: u64,
    /// Bytes that arrived out of order and waited for a gap.
    pub reordered_bytes: u64,
    /// Sum over those bytes of the time they waited, byte-nanoseconds.
    pub reorder_wait_byte_ns: u128,
    pub reorder_wait_max: Duration,
    /// Most bytes ever held (out of order + unread).
    pub buffer_max: u64,
    /// Integral of the occupancy over time, byte-nanoseconds.
    pub buffer_byte_ns: u128,
}

impl RecvStats {
    /// Mean time a reordered byte waited for its gap.
    pub fn reorder_wait_mean(&self) -> Duration {
        if self.reordered_bytes == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos((self.reorder_wait_byte_ns / self.reordered_bytes as u128) as u64)
    }
}

#[derive(Debug)]
pub struct Receiver {
    /// Highest TSN received in order.
    pub cum: u64,
    ooo: BTreeMap<u64, Held>,
    ooo_bytes: u64,
    ready: VecDeque<Vec<u8>>,
    ready_front: usize,
    ready_bytes: u64,
    dups: Vec<u32>,
    capacity: u64,
    pkts_since_sack: u32,
    pub sack_timer: Option<Instant>,
    pub sack_now: bool,
    pub last_advertised: u64,
    last_change: Instant,
    pub stats: RecvStats,
}

impl Receiver {
    pub fn new(peer_initial_tsn: u32, capacity: u64, now: Instant) -> Receiver {
        Receiver {
            cum: tsn::start(peer_initial_tsn) - 1,
            ooo: BTreeMap::new(),
            ooo_bytes: 0,
            ready: VecDeque::new(),
            ready_front: 0,
            ready_bytes: 0,
            dups: Vec::new(),
            capacity,
            pkts_since_sack: 0,
            sack_timer: None,
            sack_now: false,
            last_advertised: capacity,
            last_change: now,
            stats: RecvStats::default(),
        }
    }

    pub fn held(&self) -> u64 {
        self.ooo_bytes + self.ready_bytes
    }
    pub fn rwnd(&self) -> u64 {
        self.capacity.saturating_sub(self.held())
    }
    pub fn readable(&self) -> u64 {
        self.ready_bytes
    }
    /// Bytes held beyond a gap, and how long the oldest of them has
    /// waited for it (zero when nothing is held).
    pub fn reorder_probe(&self, now: Instant) -> (u64, core::time::Duration) {
        let oldest = self.ooo.values().map(|h| h.arrived).min();
        (self.ooo_bytes, oldest.map_or(core::time::Duration::ZERO, |t| now.saturating_since(t)))
    }
    pub fn has_gaps(&self) -> bool {
        !self.ooo.is_empty()
    }

    fn account(&mut self, now: Instant) {
        let dt = now.saturating_since(self.last_change).as_nanos();
        self.stats.buffer_byte_ns += dt * self.held() as u128;
        self.last_change = now;
    }

    fn after_change(&mut self) {
        self.stats.buffer_max = self.stats.buffer_max.max(self.held());
    }

    /// Takes one DATA chunk.
    pub fn on_data(&mut self, now: Instant, d: &DataChunk) -> DataOutcome {
        self.stats.data_chunks += 1;
        let t = tsn::unwrap(d.tsn, self.cum);
        if t <= self.cum || self.ooo.contains_key(&t) {
            self.stats.duplicates += 1;
            if self.dups.len() < MAX_DUPS {
                self.dups.push(d.tsn);
            }
            return DataOutcome::Duplicate;
        }
        let len = d.payload.len() as u64;
        let highest = self.ooo.keys().next_back().copied().unwrap_or(self.cum);
        // Room in the buffer; a chunk that fills a hole below the highest TSN
        // is taken even beyond it (up to twice the buffer), or the
        // association could deadlock on a full buffer of out-of-order data.
        let fits = self.held() + len <= self.capacity || (t < highest && self.held() + len <= 2 * self.capacity);
        if t > self.cum + MAX_TSN_AHEAD || !fits {
            self.stats.dropped_no_space += 1;
            return DataOutcome::Dropped;
        }
        self.account(now);
        let outcome = if t == self.cum + 1 {
            self.push_ready(d.payload.clone(), d.ending());
            self.cum = t;
            // Drain what the gap held back.
            while let Some(h) = self.ooo.remove(&(self.cum + 1)) {
                let n = h.payload.len() as u64;
                self.ooo_bytes -= n;
                let waited = now.saturating_since(h.arrived);
                self.stats.reordered_bytes += n;
                self.stats.reorder_wait_byte_ns += waited.as_nanos() * n as u128;
                self.stats.reorder_wait_max = self.stats.reorder_wait_max.max(waited);
                self.push_ready(h.payload, h.ending);
                self.cum += 1;
            }
            DataOutcome::InOrder
        } else {
            self.ooo_bytes += len;
            self.ooo.insert(t, Held { payload: d.payload.clone(), ending: d.ending(), arrived: now });
            DataOutcome::OutOfOrder
        };
        self.after_change();
        outcome
    }

    fn push_ready(&mut self, p: Vec<u8>, ending: bool) {
        self.stats.delivered_bytes += p.len() as u64;
        self.stats.delivered_messages += ending as u64;
        self.ready_bytes += p.len() as u64;
        if !p.is_empty() {
            self.ready.push_back(p);
        }
    }

    /// Copies delivered bytes out, in order.
    pub fn read(&mut self, now: Instant, buf: &mut [u8]) -> usize {
        self.account(now);
        let mut n = 0;
        while n < buf.len() {
            let Some(front) = self.ready.front() else { break };
            let avail = &front[self.ready_front..];
            let k = avail.len().min(buf.len() - n);
            buf[n..n + k].copy_from_slice(&avail[..k]);
            n += k;
            self.ready_front += k;
            if self.ready_front == front.len() {
                self.ready.pop_front();
                self.ready_front = 0;
            }
        }
        self.ready_bytes -= n as u64;
        n
    }

    /// Delayed-SACK decision at the end of a packet that carried DATA
    /// (RFC 9260 6.2; DAC after usrsctp's `sctp_sack_check`).
    #[allow(clippy::too_many_arguments)]
    pub fn end_of_packet(
        &mut self,
        now: Instant,
        had_gap: bool,
        dup: bool,
        immediate: bool,
        dac: bool,
        freq: u32,
        delay: Duration,
    ) {
        self.pkts_since_sack += 1;
        let gap = self.has_gaps();
        if dac {
            // DAC: reordering alone does not hurry the SACK; every second
            // packet (or the timer) still does.
            if dup || immediate || self.sack_timer.is_some() || self.pkts_since_sack >= freq {
                self.sack_now = true;
            } else {
                self.sack_timer = Some(now + delay);
            }
            return;
        }
        if dup || immediate || gap || had_gap || self.pkts_since_sack >= freq {
            self.sack_now = true;
        } else if self.sack_timer.is_none() {
            self.sack_timer = Some(now + delay);
        }
    }

    /// Builds the SACK (NR-SACK when `nr`) and resets the delayed-ack state.
    /// Nothing is ever reneged here, so with NR-SACK every gap block is
    /// also reported non-renegable.
    pub fn build_sack(&mut self, nr: bool, dac: bool, max_blocks: usize) -> SackChunk {
        let mut gaps: Vec<GapBlock> = Vec::new();
        for &t in self.ooo.keys() {
            let off = t - self.cum;
            if off > u16::MAX as u64 {
                break;
            }
            let off = off as u16;
            match gaps.last_mut() {
                Some(g) if g.end.wrapping_add(1) == off => g.end = off,
                _ => {
                    if gaps.len() == max_blocks {
                        break;
                    }
                    gaps.push(GapBlock { start: off, end: off })
                }
            }
        }
        let flags = if dac && self.pkts_since_sack >= 2 { sack_flags::DAC } else { 0 };
        let rwnd = self.rwnd();
        self.last_advertised = rwnd;
        self.pkts_since_sack = 0;
        self.sack_timer = None;
        self.sack_now = false;
        self.stats.sacks_sent += 1;
        SackChunk {
            flags,
            cum_tsn_ack: tsn::wire(self.cum),
            a_rwnd: rwnd.min(u32::MAX as u64) as u32,
            nr_gaps: nr.then(|| gaps.clone()),
            gaps,
            dup_tsns: core::mem::take(&mut self.dups),
        }
    }

    /// After the application read: whether the window opened enough to be
    /// worth a SACK on its own (a quarter of the buffer, as usrsctp's
    /// `rwnd_req`).
    pub fn window_update_due(&self) -> bool {
        self.rwnd() >= self.last_advertised + (self.capacity / 4).max(1)
    }

    pub fn finish_stats(&mut self, now: Instant) -> RecvStats {
        self.account(now);
        self.stats
    }
}
