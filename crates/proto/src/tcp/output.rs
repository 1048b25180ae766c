//! Segment departure: what goes next (RST, SYN, retransmission, tail
//! loss probe, new data, zero-window probe, ACK) and the segment builder
//! every one of them uses.

use mplab_wire::tcp::flags;
use mplab_wire::{TcpHeader, TcpOptions, Timestamps};

use crate::time::Instant;

use super::{now_ms, seq, AckDue, Connection, State, Transmit};

impl Connection {
    /// The next segment to send, if any. Call until it returns `None`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let mut t = Transmit::default();
        self.poll_transmit_into(now, &mut t).then_some(t)
    }

    /// [`poll_transmit`](Self::poll_transmit) into the caller's `t`: the
    /// segment is built where the caller keeps it (a multipath layer adds
    /// its options there), not returned up through every layer. Returns
    /// false (and leaves `t` unspecified) when there is nothing to send.
    pub fn poll_transmit_into(&mut self, now: Instant, t: &mut Transmit) -> bool {
        match self.state {
            State::Closed if self.rst_due => {
                self.rst_due = false;
                self.segment(now, self.snd_nxt, 0, flags::RST | flags::ACK, false, t);
                t.header.options = TcpOptions::new();
                return true;
            }
            State::Closed => {
                let Some((seq, ack)) = self.rst_reply.take() else { return false };
                self.segment(now, self.snd_nxt, 0, flags::RST, false, t);
                t.header.seq = seq;
                t.header.options = TcpOptions::new();
                t.header.window = 0;
                match ack {
                    Some(a) => {
                        t.header.flags |= flags::ACK;
                        t.header.ack = a;
                    }
                    None => t.header.ack = 0,
                }
                return true;
            }
            State::SynSent | State::SynReceived if !self.synced => {
                if self.syn_due {
                    self.syn_segment(now, t);
                    return true;
                }
                if !self.sends_early() {
                    return false;
                }
            }
            _ => {}
        }
        if self.retransmit(now, t) {
            return true;
        }
        if self.tlp_due && self.tail_loss_probe(now, t) {
            return true;
        }
        if self.new_data(now, t) {
            return true;
        }
        if self.probe_due {
            self.probe_due = false;
            self.zero_window_probe(now, t);
            return true;
        }
        if self.ack_due == AckDue::Now || self.window_update_due() {
            self.segment(now, self.snd_nxt, 0, flags::ACK, false, t);
            return true;
        }
        false
    }

    /// The tail loss probe (RFC 8985 7.3): new data if there is some (the
    /// window is ignored once), else the last segment again.
    fn tail_loss_probe(&mut self, now: Instant, t: &mut Transmit) -> bool {
        self.tlp_due = false;
        self.probe_new_data = true;
        let sent = self.new_data(now, t);
        self.probe_new_data = false;
        if sent {
            return true;
        }
        let Some(r) = self.board.probe_tail() else { return false };
        let len = r.range.end - r.range.start;
        let payload = len - u64::from(r.fin);
        self.stats.segments_retransmitted += 1;
        self.stats.bytes_retransmitted += payload;
        let fl = flags::ACK | if r.fin { flags::FIN } else { 0 };
        self.segment(now, r.range.start, payload, fl, true, t);
        true
    }

    fn retransmit(&mut self, now: Instant, t: &mut Transmit) -> bool {
        let Some(r) = self.board.next_resend() else { return false };
        let len = r.range.end - r.range.start;
        if self.in_flight() + len > self.cc_state.cwnd && !self.rexmit_allowance {
            self.cwnd_limited = true;
            return false;
        }
        self.rexmit_allowance = false;
        self.board.resent(r.range.start, now);
        self.prr_out += len;
        let payload = len - u64::from(r.fin);
        self.stats.segments_retransmitted += 1;
        self.stats.bytes_retransmitted += payload;
        if self.timers.rto.is_none() {
            self.timers.rto = Some(self.timer_after_rto(now, self.backoff));
        }
        let fl = flags::ACK | if r.fin { flags::FIN } else { 0 };
        self.segment(now, r.range.start, payload, fl, true, t);
        true
    }

    fn new_data(&mut self, now: Instant, t: &mut Transmit) -> bool {
        let avail = self.app_end.saturating_sub(self.snd_nxt);
        // No FIN before the handshake completes (a Fast Open server's
        // early data): the state machine takes it from ESTABLISHED.
        let fin_now = self.fin_queued && !self.fin_sent && self.synced;
        if avail == 0 && !(fin_now && self.snd_nxt == self.app_end) {
            return false;
        }
        let mut len = avail.min(self.mss);
        while self.record_ends.front().is_some_and(|&e| e <= self.snd_nxt) {
            self.record_ends.pop_front();
        }
        if let Some(&e) = self.record_ends.front() {
            len = len.min(e - self.snd_nxt);
        }
        let wnd_end = self.snd_una + self.peer_wnd;
        if len > 0 && self.snd_nxt + len > wnd_end {
            if self.snd_nxt >= wnd_end || (wnd_end - self.snd_nxt < self.mss && self.snd_nxt > self.snd_una) {
                // Receiver-limited. With nothing in flight no ACK will come
                // to reopen the window: probe it when the persist timer fires.
                if self.board.is_empty() && self.timers.persist.is_none() {
                    self.timers.persist = Some(self.timer_after_rto(now, self.backoff));
                }
                return false;
            }
            len = wnd_end - self.snd_nxt;
        }
        if self.cfg.slow_start_after_idle && self.snd_nxt == self.snd_una {
            self.restart_after_idle(now);
        }
        if len > 0 && self.in_flight() + len > self.cc_state.cwnd && !self.probe_new_data {
            self.cwnd_limited = true;
            if self.cfg.cwnd_limited_per_round {
                self.validate_cwnd(true);
            }
            return false;
        }
        let fin = fin_now && self.snd_nxt + len == self.app_end;
        let start = self.snd_nxt;
        let seq_len = len + u64::from(fin);
        self.board.push(start..start + seq_len, fin, now);
        self.snd_nxt += seq_len;
        self.prr_out += seq_len;
        if fin {
            self.fin_sent = true;
        }
        if self.timers.rto.is_none() {
            self.timers.rto = Some(self.timer_after_rto(now, self.backoff));
        }
        self.arm_tlp(now);
        if self.cfg.cwnd_limited_per_round {
            let full = self.in_flight() + self.mss > self.cc_state.cwnd;
            self.validate_cwnd(full);
        }
        let fl = flags::ACK | if fin { flags::FIN } else { 0 } | if len > 0 && self.snd_nxt >= self.app_end { flags::PSH } else { 0 };
        self.segment(now, start, len, fl, false, t);
        true
    }

    /// One byte beyond a zero window (RFC 9293 3.8.6.1); it is sent as new
    /// data and retransmitted like any other when the window reopens.
    fn zero_window_probe(&mut self, now: Instant, t: &mut Transmit) {
        self.timers.persist = Some(self.timer_after_rto(now, self.backoff + 1));
        self.backoff = (self.backoff + 1).min(15);
        if self.snd_nxt < self.app_end && self.board.is_empty() {
            let start = self.snd_nxt;
            self.board.push(start..start + 1, false, now);
            self.snd_nxt += 1;
            self.timers.rto = Some(self.timer_after_rto(now, self.backoff));
            return self.segment(now, start, 1, flags::ACK, false, t);
        }
        self.segment(now, self.snd_nxt, 0, flags::ACK, false, t);
    }

    /// Builds a segment starting at data offset `start` with `len` payload
    /// bytes; every segment carries the current ACK and window.
    fn segment(&mut self, now: Instant, start: u64, len: u64, fl: u8, retransmission: bool, t: &mut Transmit) {
        if len > 0 {
            self.last_data_tx = Some(now);
        }
        let wnd = self.window_to_advertise();
        let right = (self.rcv.nxt() + wnd).max(self.adv_right);
        self.adv_right = right;
        let field = ((right - self.rcv.nxt()) >> self.rcv_wscale).min(65535) as u16;
        let rcv_seq = self.rcv.nxt() + u64::from(self.fin_received);
        // Built in the caller's slot, options filled in place: the header
        // is ~350 bytes and every segment of a simulation is made here.
        *t = Transmit {
            header: TcpHeader {
                src_port: self.local_port,
                dst_port: self.remote_port,
                seq: seq::wrap(start, self.iss.wrapping_add(1)),
                ack: seq::wrap(rcv_seq, self.irs.wrapping_add(1)),
                flags: fl,
                window: field,
                urgent: 0,
                options: TcpOptions::new(),
            },
            payload: start..start + len,
            retransmission,
        };
        let o = &mut t.header.options;
        if self.ts_ok {
            o.timestamps = Some(Timestamps { tsval: now_ms(now), tsecr: self.ts_recent });
        }
        self.report_sack(o);
        self.ack_due = AckDue::None;
        self.unacked_segments = 0;
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len;
    }
}
