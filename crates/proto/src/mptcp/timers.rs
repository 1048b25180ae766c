//! Timers: the subflows' timers, the join initiator's third-ACK resend,
//! the DATA_FIN resend and the connection-level retransmission timer
//! (RFC 8684 3.3.6), with Linux's staleness by retransmission periods.

use core::ops::Range;
use core::time::Duration;

use super::{subflow, Alone, Connection, Handshake, Subflow};
use crate::time::Instant;

/// What the Linux profile's connection-level timer resends at once: one
/// data fragment (`mptcp_data_frag`, carved from 32 KiB page fragments).
const HEAD_RETRANSMIT: u64 = 32 * 1024;

impl Connection {
    /// Data the subflows sent and had acknowledged (nothing in flight or
    /// queued on any subflow) but the peer has not DATA_ACKed: a receiver
    /// may drop such data (Linux prunes its MPTCP-level queue under memory
    /// pressure), so after an RTO without progress it is reinjected, like
    /// Linux's MPTCP retransmit timer (RFC 8684 3.3.6). With
    /// `head_retransmit_on_idle` (the Linux profile) the timer runs as soon
    /// as one usable subflow is idle, and resends only the head chunk.
    pub(super) fn arm_data_rto(&mut self, now: Instant) {
        // The cheap conditions first: the subflow sweep only when needed.
        let idle = |s: &Subflow| s.tcp.in_flight() == 0 && s.tcp.unsent() == 0;
        let ready = || {
            if self.cfg.stale_by_periods {
                // Linux's timer runs whenever the data level makes no
                // progress: it also counts stale periods.
                true
            } else if self.cfg.head_retransmit_on_idle {
                self.subflows.iter().any(|s| s.usable() && idle(s))
            } else {
                self.subflows.iter().filter(|s| !s.is_closed()).all(idle)
            }
        };
        if !(self.established && self.fb.reason.is_none() && self.data_una < self.sched_nxt && self.reinject.is_empty() && ready()) {
            self.timers.data_rto = None;
        } else if self.timers.data_rto.is_none_or(|(_, una)| una != self.data_una) {
            let rto = if self.cfg.stale_by_periods {
                self.timers.timer_ival.unwrap_or_else(|| self.timer_ival_now(now))
            } else {
                self.subflows.iter().filter(|s| s.usable()).map(|s| s.tcp.stats().rto).min().unwrap_or(Duration::from_secs(1))
            };
            self.timers.data_rto = Some((now + rto, self.data_una));
        }
    }

    /// Linux's `timer_ival` (`__mptcp_set_timeout`): the longest time left
    /// on the timer of a subflow not yet counting stale periods, else
    /// TCP_RTO_MIN.
    pub(super) fn timer_ival_now(&self, now: Instant) -> Duration {
        let left = self.subflows.iter().filter(|s| s.usable() && s.stale_count == 0).filter_map(|s| s.tcp.retransmit_slot_deadline()).map(|t| t.saturating_since(now)).max();
        left.filter(|d| !d.is_zero()).unwrap_or(self.cfg.tcp.min_rto)
    }

    /// The unacknowledged data the connection-level timer sends again.
    pub(super) fn data_rto_range(&self) -> Range<u64> {
        if self.cfg.head_retransmit_on_idle {
            // Linux's head data fragment: its send path packs the stream
            // into 32 KiB page fragments.
            self.data_una..(self.data_una + HEAD_RETRANSMIT).min(self.sched_nxt)
        } else {
            self.data_una..self.sched_nxt
        }
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        // ADD_ADDR resends, then the connection's own timers.
        let own = self.announces_pending().map(|a| a.next_at).chain(self.timers.next()).chain(self.rejoin_deadline()).min();
        let subs = if self.changes.timeouts_valid {
            self.changes.timeouts.iter().flatten().min().copied()
        } else {
            (0..self.subflows.len()).filter_map(|i| self.subflow_timeout(i)).min()
        };
        own.into_iter().chain(subs).min()
    }

    /// Subflow `i`'s next timer: its TCP timers, and the join initiator's
    /// third-ACK resend.
    pub(super) fn subflow_timeout(&self, i: usize) -> Option<Instant> {
        let s = &self.subflows[i];
        let third = (s.handshake == Handshake::ThirdAck && s.is_join()).then(|| s.third_ack_at.map(|t| t + s.tcp.stats().rto)).flatten();
        s.tcp.poll_timeout().into_iter().chain(third).min()
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        self.changed_all();
        let cap = self.win_cap;
        for s in &mut self.subflows {
            if s.tcp.poll_timeout().is_some_and(|t| t <= now) {
                s.tcp.set_window_cap(cap);
                s.tcp.handle_timeout(now);
            }
            if s.handshake == Handshake::ThirdAck && s.is_join() && s.third_ack_at.is_some_and(|t| t + s.tcp.stats().rto <= now) {
                s.third_ack_at = Some(now);
                s.tcp.ack_now();
            }
        }
        if self.timers.fin_resend.is_some_and(|t| t <= now) {
            self.timers.fin_resend = None; // poll_transmit resends it
        }
        if self.timers.data_rto.is_some_and(|(t, una)| t <= now && una == self.data_una) {
            self.timers.data_rto = None;
            if self.cfg.stale_by_periods {
                self.count_stale_periods();
            }
            if !self.cfg.head_retransmit_on_idle {
                let r = self.data_rto_range();
                self.reinject.push_back(r);
            } else if let Some(p) = self.retransmit_subflow() {
                let r = self.data_rto_range();
                self.retransmit_head_on(p, r);
            }
        }
        if matches!(self.timers.alone, Alone::Until(t) if t <= now) {
            // Checked again below: the connection ends if no attempt is open.
            self.timers.alone = Alone::Over;
        }
        if self.rejoin_deadline().is_some_and(|t| t <= now) {
            self.run_rejoins(now);
        }
        self.update_subflows(now);
        self.arm_data_rto(now);
        self.arm_idle_probe(now);
    }

    /// The subflow Linux sends the head of the unacknowledged data again on
    /// (`mptcp_subflow_get_retrans`): one with nothing queued, a non-backup
    /// first; a backup only once every subflow holding data has gone more
    /// than one retransmission period without hearing from the peer
    /// (`min_stale_count > 1`); else none, and the timer runs again.
    pub(super) fn retransmit_subflow(&self) -> Option<usize> {
        let idle = |s: &Subflow| s.usable() && s.tcp.in_flight() == 0 && s.tcp.unsent() == 0;
        let is_backup = |s: &Subflow| s.backup || s.peer_backup;
        if let Some(p) = self.subflows.iter().position(|s| idle(s) && !is_backup(s)) {
            return Some(p);
        }
        let min_stale = self.subflows.iter().filter(|s| s.usable() && !idle(s)).map(|s| s.stale_count).min().unwrap_or(u32::MAX);
        self.subflows.iter().position(|s| idle(s) && is_backup(s)).filter(|_| min_stale > 1)
    }

    /// Queues `r` on subflow `p`, in segments, as a retransmission.
    pub(super) fn retransmit_head_on(&mut self, p: usize, r: Range<u64>) {
        let mss = u64::from(self.subflows[p].tcp.mss()).max(1);
        let mut at = r.start;
        while at < r.end {
            let len = (r.end - at).min(mss);
            let s = &mut self.subflows[p];
            let sub = s.tcp.send_offset();
            if s.tcp.send_record(len) != len {
                break;
            }
            s.tx.push_back(subflow::TxMap { sub, data: at, len });
            at += len;
            self.fb.allowed = false;
        }
        self.stats.reinjected_bytes += at - r.start;
        self.touch(p);
    }

    /// Linux's staleness (`mptcp_pm_subflow_chk_stale`, run from the
    /// connection-level retransmission): each period a subflow spends with
    /// data outstanding and nothing received counts; past `stale_after`,
    /// if another subflow is healthy (fewer than `stale_after - 2` such
    /// periods), it is stale and everything unacknowledged at the data
    /// level is sent again.
    pub(super) fn count_stale_periods(&mut self) {
        for s in &mut self.subflows {
            if !s.usable() || (s.tcp.in_flight() == 0 && s.tcp.unsent() == 0) {
                continue;
            }
            let rx = s.tcp.segments_received();
            if s.stale_count == 0 {
                s.stale_rx = rx;
                s.stale_count = 1;
            } else if s.stale_rx == rx {
                s.stale_count = s.stale_count.saturating_add(1);
            } else {
                s.stale_count = 0;
            }
        }
        let healthy = self.cfg.stale_after.saturating_sub(2).max(1);
        for i in 0..self.subflows.len() {
            let s = &self.subflows[i];
            if !s.usable() || s.stale_count < self.cfg.stale_after || (s.tcp.in_flight() == 0 && s.tcp.unsent() == 0) {
                continue;
            }
            let alternative = self.subflows.iter().enumerate().any(|(j, o)| j != i && o.usable() && o.stale_count < healthy);
            if alternative {
                self.subflows[i].stale = true;
                self.changed(i);
                self.push_reinject(self.data_una..self.sched_nxt);
            }
        }
    }
}
