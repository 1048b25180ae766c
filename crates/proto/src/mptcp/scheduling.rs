//! The scheduling pass: data (reinjections first) handed to the subflows
//! the packet scheduler picks, within the peer's window and the send
//! buffer, and opportunistic retransmission and penalisation.

use core::time::Duration;

use super::{sndbuf, subflow, Connection, Origin, SchedContext, Subflow, SubflowInfo};
use crate::time::Instant;

impl Connection {
    pub(super) fn info_of(&self, index: usize) -> SubflowInfo {
        let s = &self.subflows[index];
        let st = s.tcp.cc_state();
        SubflowInfo {
            index,
            srtt: s.tcp.srtt(),
            rttvar: s.tcp.rttvar(),
            cwnd: st.cwnd,
            ssthresh: st.ssthresh,
            in_flight: s.tcp.in_flight(),
            unacked: s.tcp.unacked(),
            mss: s.tcp.mss(),
            backup: s.backup || s.peer_backup,
            usable: s.usable(),
            has_window: s.tcp.can_send() && s.tcp.unsent() == 0,
            unsent: s.tcp.unsent(),
            sndbuf: if self.cfg.snd_autotune {
                s.sndbuf
            } else if self.cfg.subflows_share_snd_buf {
                self.cfg.snd_buf
            } else {
                sndbuf::subflow_sndbuf(0, st.cwnd / s.tcp.mss().max(1), self.cfg.snd_buf)
            },
        }
    }

    /// The scheduler's view of every subflow: rebuilt whole after a rare
    /// event (`full`), else refreshed for the subflows that changed.
    pub(super) fn infos_into(&self, out: &mut Vec<SubflowInfo>, full: bool, changed: &[usize]) {
        if !full && out.len() == self.subflows.len() {
            for &i in changed {
                out[i] = self.info_of(i);
            }
            return;
        }
        out.clear();
        out.extend((0..self.subflows.len()).map(|i| self.info_of(i)));
    }

    /// Tells the usable subflows whose window is full that data waited
    /// (see `tcp::Connection::note_cwnd_limited`); a subflow unchanged
    /// since it was last told needs nothing.
    pub(super) fn note_cwnd_limited(&mut self) {
        for (s, noted) in self.subflows.iter_mut().zip(self.changes.noted.iter_mut()) {
            if !*noted && s.usable() {
                s.tcp.note_cwnd_limited();
                *noted = true;
            }
        }
    }

    /// Hands chunks of data (reinjections first) to the subflows the
    /// scheduler picks, while it picks.
    pub(super) fn schedule(&mut self, now: Instant, full: bool, changed: &[usize]) {
        if self.fb.reason.is_some() {
            self.schedule_fallen_back();
            return;
        }
        if !self.established {
            self.schedule_early();
            return;
        }
        let mut picks = std::mem::take(&mut self.picks);
        let mut infos = std::mem::take(&mut self.infos);
        self.infos_into(&mut infos, full, changed);
        let mut had_data = false;
        let mut had_timer_ival = false;
        self.scheduler.begin_pass();
        for _ in 0..4096 {
            let (range, reinjected) = match self.reinject.front() {
                Some(r) => (r.clone(), true),
                None => {
                    let limit = self.app_end.min(self.data_una + self.peer_wnd());
                    if self.sched_nxt >= limit {
                        break;
                    }
                    (self.sched_nxt..limit, false)
                }
            };
            let mss = infos.iter().filter(|i| i.usable).map(|i| i.mss).min().unwrap_or(1400);
            let len = (range.end - range.start).min(mss);
            had_data = true;
            picks.clear();
            let cx = SchedContext {
                len,
                now,
                reinjection: reinjected,
                queued: self.app_end - self.sched_nxt,
                outstanding: self.sched_nxt - self.data_una,
                send_window: self.peer_wnd().min(self.snd_buf()),
                window_blocked: self.stats.window_blocked,
            };
            if self.cfg.stale_by_periods && !had_timer_ival {
                had_timer_ival = true;
                self.timers.timer_ival = Some(self.timer_ival_now(now));
            }
            if infos.iter().filter(|i| i.usable && i.has_window).nth(1).is_some() {
                self.stats.scheduler_choices += 1;
            }
            self.scheduler.schedule(&infos, &cx, &mut picks);
            if picks.is_empty() {
                // Data waits for windows: the subflows' windows may grow.
                self.note_cwnd_limited();
                break;
            }
            for &p in &picks {
                self.touch(p);
                let Some(s) = self.subflows.get_mut(p) else { continue };
                let sub = s.tcp.send_offset();
                if s.tcp.send_record(len) == len {
                    s.tx.push_back(subflow::TxMap { sub, data: range.start, len });
                }
                // It has data waiting now: what the scheduler sees next.
                if let Some(i) = infos.get_mut(p) {
                    i.unsent += len;
                    i.has_window = false;
                }
            }
            if reinjected {
                self.fb.allowed = false;
                let f = self.reinject.front_mut().expect("front");
                f.start += len;
                if f.is_empty() || f.end <= self.data_una {
                    self.reinject.pop_front();
                }
            } else {
                self.sched_nxt += len;
            }
        }
        if had_data {
            // Data was waiting: a subflow whose window is full was limited
            // by it (even if another subflow took the data), so its window
            // may grow (Linux's tcp_is_cwnd_limited on a full window).
            self.note_cwnd_limited();
        }
        if self.sched_nxt > self.data_una && infos.iter().any(|i| i.usable && i.has_window) {
            let mss = infos.iter().filter(|i| i.usable).map(|i| i.mss).min().unwrap_or(1400);
            if self.window_limited(mss) {
                self.stats.window_blocked += 1;
            }
        }
        if (self.cfg.opportunistic_retransmit || self.cfg.penalize) && self.reinject.is_empty() {
            self.receive_buffer_optimisations(now, &infos);
        }
        self.picks = picks;
        self.infos = infos;
        // Reinjections already acknowledged at the data level are moot.
        while self.reinject.front().is_some_and(|r| r.end <= self.data_una) {
            self.reinject.pop_front();
        }
    }

    /// Before the connection is established only a Fast Open client
    /// moves data: its first SYN carries what was written before it. A
    /// server that took a SYN's bytes still waits for the third ACK to
    /// answer: RFC 8684 Appendix B.3 lets it send mappings without a
    /// DATA_ACK before, but a Linux client (6.18, options.c
    /// check_fully_established) takes a first in-sequence segment with
    /// neither a DATA_ACK nor MP_CAPABLE as a reason to fall back to TCP,
    /// and Linux's server does not send before then either (its subflow
    /// is not yet ESTABLISHED, `__mptcp_subflow_active`).
    pub(super) fn schedule_early(&mut self) {
        if !self.client || self.fb.reason.is_some() || self.closing || self.reset {
            return;
        }
        let Some(s) = self.subflows.first_mut() else { return };
        if s.origin != Origin::Initial || s.is_closed() || self.sched_nxt != 0 || !s.tx.is_empty() {
            return;
        }
        let n = self.app_end.min(s.tcp.syn_data_room());
        if n > 0 && s.tcp.send_record(n) == n {
            s.tx.push_back(subflow::TxMap { sub: 0, data: 0, len: n });
            self.sched_nxt = n;
            self.touch(0);
        }
    }

    /// New data is held back by the connection-level window: the peer's
    /// receive window is full, or everything the application wrote is
    /// out and the send buffer has no room for another segment.
    pub(super) fn window_limited(&self, mss: u64) -> bool {
        let una = self.data_una;
        let rwnd_limited = self.app_end > self.sched_nxt && self.sched_nxt + mss > una + self.peer_wnd();
        let sndbuf_limited = self.sched_nxt == self.app_end && self.snd_buf().saturating_sub(self.app_end - una) < mss;
        rwnd_limited || sndbuf_limited
    }

    /// Opportunistic retransmission and penalisation (Raiciu et al., "How
    /// hard can it be?", NSDI 2012, section 4.2), run after scheduling when
    /// no new data could go out because of the window or the send buffer.
    pub(super) fn receive_buffer_optimisations(&mut self, now: Instant, infos: &[SubflowInfo]) {
        let una = self.data_una;
        if self.sched_nxt <= una {
            return;
        }
        let mss = infos.iter().filter(|i| i.usable).map(|i| i.mss).min().unwrap_or(1400);
        if !self.window_limited(mss) {
            return;
        }
        // The subflow holding the window head (not yet acked at its level).
        let holds = |s: &Subflow| s.tx.iter().any(|m| m.data <= una && una < m.data + m.len && m.sub + (una - m.data) >= s.tcp.snd_una());
        let Some(h) = self.subflows.iter().position(&holds) else { return };
        let h_rtt = infos.get(h).map_or(Duration::MAX, |i| i.rtt());
        // A faster subflow with window space that does not hold it yet.
        let cand = infos
            .iter()
            .filter(|i| i.usable && i.has_window && i.index != h && i.rtt() < h_rtt && !holds(&self.subflows[i.index]))
            .min_by_key(|i| (i.rtt(), i.index))
            .map(|i| i.index);
        let Some(c) = cand else { return };
        if self.cfg.penalize {
            let s = &mut self.subflows[h];
            let rtt = s.tcp.srtt().unwrap_or(Duration::from_millis(200));
            if s.penalized_at.is_none_or(|t| now.saturating_since(t) >= rtt) {
                self.touch(h); // its window shrank
                let s = &mut self.subflows[h];
                s.penalized_at = Some(now);
                s.tcp.penalize();
                self.stats.penalties += 1;
            }
        }
        if self.cfg.opportunistic_retransmit && self.opp_done != Some(una) {
            // The mapping chunk that starts at (or contains) the head.
            let end = self.subflows[h].tx.iter().find(|m| m.data <= una && una < m.data + m.len).map_or(una + mss, |m| m.data + m.len);
            let len = (end - una).min(mss).min(self.sched_nxt - una);
            self.touch(c);
            let s = &mut self.subflows[c];
            let sub = s.tcp.send_offset();
            if len > 0 && s.tcp.send_record(len) == len {
                s.tx.push_back(subflow::TxMap { sub, data: una, len });
                self.opp_done = Some(una);
                self.stats.opportunistic_bytes += len;
            }
        }
    }
}
