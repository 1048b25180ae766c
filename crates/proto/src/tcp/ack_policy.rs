//! The receiver's ACK policy and window: delayed and quick ACKs, the
//! window it advertises (rcv_ssthresh growth, rounding to segments, a cap
//! set from above), window updates, and the SACK blocks it reports.

use core::ops::Range;

use mplab_wire::{SackBlock, TcpOptions};

use crate::time::Instant;

use super::{seq, AckDue, Connection};

impl Connection {
    /// Whether a larger window cap could make this end send a window
    /// update (see `window_update_due`): the window it last advertised is
    /// below half its buffer. A multipath layer raising the shared cap
    /// polls only these subflows again.
    pub fn may_owe_window_update(&self) -> bool {
        self.synced && !self.fin_received && self.adv_right.saturating_sub(self.rcv.nxt()) < self.cfg.rcv_buf / 2
    }

    /// Caps the window this end advertises (MPTCP shares one receive
    /// buffer among subflows); `None` removes the cap.
    pub fn set_window_cap(&mut self, cap: Option<u64>) {
        self.window_cap = cap;
    }

    /// Sends a pure ACK at the next `poll_transmit` (to carry options of a
    /// layer above, or a window update).
    pub fn ack_now(&mut self) {
        if self.synced {
            self.ack_due = AckDue::Now;
        }
    }

    /// In-order data arrived (`quick_acks`): the first, or the first after
    /// a silence longer than the RTO, owes immediate ACKs for as many
    /// segments as the window offered (`offered`) holds pairs of them, at
    /// least 2 and at most 16 (`tcp_incr_quickack`).
    pub(super) fn note_in_order_data(&mut self, now: Instant, offered: u64) {
        const MAX_QUICKACKS: u64 = 16;
        let silent = match self.last_data_rx {
            None => true,
            Some(t) => now.saturating_since(t) > self.rtt.rto(),
        };
        self.last_data_rx = Some(now);
        if silent {
            let wnd = if offered > 0 { offered } else { self.rcv_window() };
            let q = match wnd / (2 * self.rcv_mss.max(1)) {
                0 => 2,
                q => q.min(MAX_QUICKACKS),
            };
            self.quick = self.quick.max(q as u32);
        }
    }

    /// A segment of `len` bytes arrived: while the buffer has room beyond
    /// the threshold, the threshold grows by two segments (at least twice
    /// this one), and the caller ACKs at once (Linux's `tcp_grow_window`
    /// setting `icsk_ack.quick`). Segments under 128 bytes do not count.
    pub(super) fn grow_rcv_ssthresh(&mut self, len: u64) -> bool {
        if len < 128 {
            return false;
        }
        let space = self.rcv_space();
        let room = space.saturating_sub(self.rcv_ssthresh);
        if room == 0 {
            return false;
        }
        self.rcv_ssthresh += room.min((2 * u64::from(self.cfg.mss)).max(2 * len));
        true
    }

    /// The window we can advertise now: buffer space not held by data the
    /// application has not read.
    pub(super) fn rcv_window(&self) -> u64 {
        let space = self.rcv_space();
        if self.cfg.grow_window_gradually {
            space.min(self.rcv_ssthresh)
        } else {
            space
        }
    }

    /// The window the next segment offers: the free space
    /// ([`rcv_window`](Self::rcv_window)), under `round_window_to_mss`
    /// without window scaling a whole number of the peer's segments
    /// (Linux keeps its last offer while that is within one segment of
    /// the free space, else rounds the free space down).
    pub(super) fn window_to_advertise(&self) -> u64 {
        let free = self.rcv_window();
        if !self.cfg.round_window_to_mss || self.rcv_wscale != 0 {
            return free;
        }
        let mss = self.rcv_mss.max(1);
        let offered = self.adv_right.saturating_sub(self.rcv.nxt());
        if offered + mss > free && offered <= free {
            offered
        } else {
            free / mss * mss
        }
    }

    /// Buffer space not held by data the application has not read, within
    /// the cap a layer above set.
    fn rcv_space(&self) -> u64 {
        let own = self.cfg.rcv_buf.saturating_sub(self.rcv.nxt() - self.read_off);
        self.window_cap.map_or(own, |c| own.min(c))
    }

    /// After the application read a lot, tell a sender that may be stalled.
    pub(super) fn window_update_due(&self) -> bool {
        if !self.synced || self.fin_received {
            return false;
        }
        let right = self.rcv.nxt() + self.rcv_window();
        let last_wnd = self.adv_right.saturating_sub(self.rcv.nxt());
        right >= self.adv_right + 2 * self.mss && last_wnd < self.cfg.rcv_buf / 2
    }

    /// A data segment was taken in: whether the ACK goes at once (the
    /// segment was `unusual`: a duplicate, out of order or filling a hole,
    /// or it grew the window; delayed ACKs off; quick ACKs owed), with the
    /// second full segment, or after the delayed-ACK timeout (RFC 9293
    /// 3.8.6.3, RFC 5681 4.2).
    pub(super) fn schedule_ack(&mut self, now: Instant, unusual: bool) {
        if unusual || !self.cfg.delayed_ack || self.quick > 0 {
            self.quick = self.quick.saturating_sub(1);
            self.ack_due = AckDue::Now;
            return;
        }
        self.unacked_segments += 1;
        if self.unacked_segments >= 2 {
            self.ack_due = AckDue::Now;
        } else if self.ack_due == AckDue::None {
            self.ack_due = AckDue::At(now + self.cfg.delayed_ack_timeout);
        }
    }

    /// The SACK blocks (RFC 2018) a segment carries while the receive
    /// queue has holes: three with timestamps, else four.
    pub(super) fn report_sack(&self, o: &mut TcpOptions) {
        if !self.sack_ok || !self.rcv.has_holes() {
            return;
        }
        let mut r: [Range<u64>; 4] = Default::default();
        let max = if self.ts_ok { 3 } else { 4 };
        let n = self.rcv.sack_blocks(&mut r[..max]);
        // A FIN held out of order occupies its sequence number in the
        // block that ends at it, as Linux's receiver reports it (the
        // FIN is part of the queued skb's end_seq): the sender's last
        // segment then counts as SACKed, FIN and all.
        if let Some(fin) = self.rcv_fin {
            for x in r[..n].iter_mut().filter(|x| x.end == fin) {
                x.end += 1;
            }
        }
        let base = self.irs.wrapping_add(1);
        let mut blocks = [SackBlock::default(); 4];
        for (b, x) in blocks.iter_mut().zip(&r[..n]) {
            *b = SackBlock { left: seq::wrap(x.start, base), right: seq::wrap(x.end, base) };
        }
        o.set_sack(&blocks[..n]);
    }
}
