//! Segment arrival: the acceptability check, the state machine's
//! dispatch, payload placement, the FIN, and the ACK field (cumulative
//! ACK, SACK blocks, duplicate ACKs, the peer's window).

use core::ops::Range;
use core::time::Duration;

use mplab_wire::TcpHeader;

use crate::time::Instant;

use super::{now_ms, seq, AckDue, Connection, Recovery, State, OOW_ACK_INTERVAL};

impl Connection {
    /// Whether a segment falls in the receive window once the connection
    /// is synchronized (RFC 9293 3.10.7.4), tolerating old duplicates up
    /// to a window behind RCV.NXT as Linux's tcp_sequence() does. A
    /// segment outside gets an ACK and nothing else: an off-path sender
    /// must guess the sequence number to within a window before anything
    /// it carries is believed (RFC 5961, RFC 7430). Before the handshake
    /// completes the handshake's own checks apply: `true`.
    pub fn acceptable(&self, h: &TcpHeader, payload_len: u32) -> bool {
        if !self.synced {
            return true;
        }
        let nxt = self.rcv.nxt();
        let Some(start) = seq::unwrap(h.seq, self.irs.wrapping_add(1), nxt) else { return false };
        let wnd = self.rcv_window().max(self.adv_right.saturating_sub(nxt));
        let end = start + u64::from(payload_len) + u64::from(h.fin());
        start <= nxt + wnd.max(1) && end + wnd.max(self.mss) >= nxt && (!h.ack_flag() || self.ack_acceptable(h.ack))
    }

    /// Whether an ACK number is one the peer can have sent: from a window
    /// behind SND.UNA up to SND.NXT (RFC 5961 5.2, RFC 9293 3.10.7.4;
    /// Linux drops the segment otherwise, in tcp_ack, before it reads its
    /// MPTCP options). An off-path sender must guess both sequence
    /// numbers before anything its segment carries is believed.
    fn ack_acceptable(&self, ack: u32) -> bool {
        seq::unwrap(ack, self.iss.wrapping_add(1), self.snd_una).is_some_and(|a| a <= self.snd_nxt && a + self.max_peer_wnd.max(self.mss) >= self.snd_una)
    }

    /// The stream offset of sequence number `seq` (relative to the
    /// peer's ISN + 1), once synchronized.
    pub fn rcv_offset(&self, seq: u32) -> Option<u64> {
        if !self.synced {
            return None;
        }
        seq::unwrap(seq, self.irs.wrapping_add(1), self.rcv.nxt())
    }

    /// An unacceptable segment ([`acceptable`](Self::acceptable)): an ACK
    /// goes back (not for a RST), the segment is otherwise dropped.
    pub fn on_unacceptable(&mut self, now: Instant, h: &TcpHeader, payload_len: u32) {
        self.stats.segments_received += 1;
        self.answer_unacceptable(now, h, payload_len);
    }

    /// RFC 9293 3.10.7.4: an unacceptable segment gets an ACK, nothing
    /// else (its ACK number and window are not believed either). Without
    /// data it gets at most one every [`OOW_ACK_INTERVAL`], as Linux's
    /// tcp_oow_rate_limited (net.ipv4.tcp_invalid_ratelimit) gives: each
    /// such ACK repeats our ACK number, a duplicate ACK to the peer, so a
    /// flood of forged segments would otherwise make the peer's sender
    /// retransmit and halve its window (an ACK loop, RFC 5961 10).
    fn answer_unacceptable(&mut self, now: Instant, h: &TcpHeader, payload_len: u32) {
        if h.rst() {
            self.stats.rsts_ignored += 1;
            return;
        }
        let data = payload_len > 0 || h.fin();
        if data || h.syn() {
            self.ack_due = AckDue::Now;
        } else {
            self.challenge_ack(now);
        }
    }

    /// An ACK that repeats where we stand, at most one every
    /// [`OOW_ACK_INTERVAL`].
    fn challenge_ack(&mut self, now: Instant) {
        if self.last_oow_ack.is_some_and(|t| now.0.saturating_sub(t.0) < OOW_ACK_INTERVAL.as_nanos() as u64) {
            self.stats.oow_acks_skipped += 1;
            return;
        }
        self.last_oow_ack = Some(now);
        self.ack_due = AckDue::Now;
    }

    /// Processes one segment addressed to this connection. Returns the
    /// stream offsets its payload belongs at, when it carried payload the
    /// connection accepted (even partly); the driver places the bytes there.
    pub fn handle_segment(&mut self, now: Instant, h: &TcpHeader, payload_len: u32) -> Option<Range<u64>> {
        self.stats.segments_received += 1;
        match self.state {
            State::Closed => {
                // RFC 9293 3.10.7.1: no connection any more, so anything
                // but a RST is answered with one (a peer that missed our
                // reset learns the subflow is gone, as from a host with no
                // socket for it). A connection that ended cleanly is in
                // TIME-WAIT, not here, while the peer may still retransmit.
                if !h.rst() && self.reset {
                    self.rst_reply = Some(if h.ack_flag() {
                        (h.ack, None)
                    } else {
                        (0, Some(h.seq.wrapping_add(payload_len).wrapping_add(u32::from(h.syn()) + u32::from(h.fin()))))
                    });
                }
                None
            }
            State::SynSent => {
                self.on_syn_sent(now, h);
                None
            }
            State::SynReceived => {
                if h.rst() {
                    // RFC 5961 3.2 (all states but SYN-SENT): only a RST at
                    // exactly RCV.NXT (the peer's ISN + 1 here, where a
                    // genuine one answering our SYN-ACK sits) resets; a
                    // blind guess anywhere else is dropped.
                    if h.seq == self.irs.wrapping_add(1) {
                        self.state = State::Closed;
                        self.reset = true;
                    } else {
                        self.stats.rsts_ignored += 1;
                    }
                    return None;
                }
                if h.syn() && !h.ack_flag() {
                    // The SYN itself (a driver hands it over after
                    // `accept`), or a copy: our SYN-ACK was lost.
                    self.syn_due = true;
                    return self.take_syn_data(h, payload_len);
                }
                // The handshake's ACK may also acknowledge data sent early.
                let acked = seq::unwrap(h.ack, self.iss.wrapping_add(1), self.snd_una);
                if !h.ack_flag() || acked.is_none_or(|a| a > self.snd_nxt) {
                    return None;
                }
                self.handshake_done(now);
                self.state = if self.fin_queued { State::FinWait1 } else { State::Established };
                self.on_synced_segment(now, h, payload_len)
            }
            _ if !self.acceptable(h, payload_len) => {
                self.answer_unacceptable(now, h, payload_len);
                None
            }
            _ => self.on_synced_segment(now, h, payload_len),
        }
    }

    fn on_synced_segment(&mut self, now: Instant, h: &TcpHeader, payload_len: u32) -> Option<Range<u64>> {
        let rcv_base = self.irs.wrapping_add(1);
        let seg_start = seq::unwrap(h.seq, rcv_base, self.rcv.nxt());
        if h.rst() {
            // RFC 5961 3.2, as Linux's tcp_validate_incoming: a RST at
            // exactly RCV.NXT resets; one elsewhere in the window gets a
            // challenge ACK (a peer that did reset answers it with a RST at
            // RCV.NXT, from its closed state), rate-limited as any ACK to
            // an unacceptable segment; a blind attacker must guess the one
            // sequence number, not land anywhere in the window.
            let nxt = self.rcv.nxt();
            match seg_start {
                Some(s) if s == nxt => {
                    self.state = State::Closed;
                    self.reset = true;
                }
                Some(s) if s > nxt && s <= self.adv_right.max(nxt) => {
                    self.stats.rsts_ignored += 1;
                    self.challenge_ack(now);
                }
                _ => self.stats.rsts_ignored += 1,
            }
            return None;
        }
        if h.syn() {
            // A retransmitted SYN-ACK: our handshake ACK was lost.
            self.ack_due = AckDue::Now;
            return None;
        }
        if h.ack_flag() {
            self.on_ack(now, h, payload_len == 0 && !h.fin());
        }
        let seg_start = seg_start?;
        let len = payload_len as u64;
        if let (Some(ts), true) = (h.options.timestamps, self.ts_ok) {
            if seg_start <= self.rcv.nxt() {
                self.ts_recent = ts.tsval;
            }
            // Data echoing one of our timestamps: the time since we sent it
            // is a round trip through the data's queues (tcp_rcv_rtt_measure_ts).
            if len > 0 && ts.tsecr != 0 {
                let ms = now_ms(now).wrapping_sub(ts.tsecr);
                if (1..=60_000).contains(&ms) {
                    let m = Duration::from_millis(u64::from(ms));
                    self.rcv_rtt = Some(self.rcv_rtt.map_or(m, |r| (r * 7 + m) / 8));
                }
            }
        }
        let mut placed = None;
        if len > 0 {
            // Only what fits in the window is placed (and reported so: the
            // caller writes the payload where this says).
            placed = self.on_payload(now, seg_start..seg_start + len);
        }
        if h.fin() {
            self.rcv_fin = Some(seg_start + len);
            self.ack_due = AckDue::Now;
        }
        self.check_fin_received();
        placed
    }

    /// Takes in a segment's payload; returns the part inside the window
    /// (from the segment's first byte), `None` if none is.
    fn on_payload(&mut self, now: Instant, r: Range<u64>) -> Option<Range<u64>> {
        // Accept what fits in the window we advertised (or could advertise).
        let right = self.adv_right.max(self.rcv.nxt() + self.rcv_window());
        if r.start >= right {
            self.ack_due = AckDue::Now;
            return None;
        }
        let r = r.start..r.end.min(right);
        let placed = Some(r.clone());
        let len = r.end - r.start;
        if len >= self.rcv_mss {
            self.rcv_mss = len.min(u64::from(self.cfg.mss));
        }
        let offered = self.adv_right.saturating_sub(self.rcv.nxt());
        let in_order = r.start == self.rcv.nxt();
        let ins = self.rcv.insert(r);
        self.stats.bytes_received += ins.advanced;
        if self.cfg.quick_acks && in_order && !ins.duplicate {
            self.note_in_order_data(now, offered);
        }
        let grew = self.cfg.grow_window_gradually && !ins.duplicate && self.grow_rcv_ssthresh(len);
        if grew && self.cfg.quick_acks {
            // `icsk_ack.quick |= 1`: one more quick ACK only when the count
            // is even, so a run under way is kept going, not lengthened.
            self.quick |= 1;
        }
        self.schedule_ack(now, ins.duplicate || ins.out_of_order || ins.had_holes || grew);
        placed
    }

    fn check_fin_received(&mut self) {
        if self.fin_received || self.rcv_fin != Some(self.rcv.nxt()) {
            return;
        }
        self.fin_received = true;
        self.ack_due = AckDue::Now;
        self.state = match self.state {
            State::Established => State::CloseWait,
            State::FinWait1 if self.fin_acked() => State::TimeWait,
            State::FinWait1 => State::Closing,
            State::FinWait2 => State::TimeWait,
            s => s,
        };
    }

    fn fin_acked(&self) -> bool {
        self.fin_sent && self.snd_una > self.app_end
    }

    /// The RTT the segment's timestamp echo measures: from our clock's
    /// value it echoes to now, at least the clock's 1 ms tick.
    fn echoed_rtt(&self, now: Instant, h: &TcpHeader) -> Option<Duration> {
        let ts = h.options.timestamps.filter(|t| self.ts_ok && t.tsecr != 0)?;
        let ms = now_ms(now).wrapping_sub(ts.tsecr);
        // An echo from the future is a peer's mistake or a forgery.
        (ms < i32::MAX as u32).then(|| Duration::from_millis(u64::from(ms.max(1))))
    }

    /// The ACK field and window of a segment (the sender's half).
    pub(super) fn on_ack(&mut self, now: Instant, h: &TcpHeader, pure: bool) {
        let Some(ack) = seq::unwrap(h.ack, self.iss.wrapping_add(1), self.snd_una) else { return };
        if ack > self.snd_nxt {
            self.ack_due = AckDue::Now; // acks what we never sent
            return;
        }
        if ack < self.snd_una {
            return; // old
        }
        let old_wnd = self.peer_wnd;
        self.peer_wnd = (h.window as u64) << self.snd_wscale;
        self.max_peer_wnd = self.max_peer_wnd.max(self.peer_wnd);
        if self.peer_wnd > 0 {
            self.timers.persist = None;
        }
        let outstanding_before = self.snd_nxt - self.snd_una;
        let (una_before, sacked_before) = (self.snd_una, self.board.sacked());
        let newly_sacked = self.take_sack_blocks(h, ack);

        if ack > self.snd_una {
            let a = self.board.ack(ack);
            let payload = a.bytes - u64::from(self.fin_sent && ack > self.app_end && self.snd_una <= self.app_end);
            self.stats.bytes_acked += payload;
            self.snd_una = ack;
            self.dupacks = 0;
            self.dup_credit = self.dup_credit.saturating_sub(a.bytes);
            if let Some(t) = a.rtt_from {
                self.rtt.sample_at(now - t, ack, self.snd_nxt);
                self.cc_rtt_sample(now, now - t);
            } else if let (true, Some(rtt)) = (a.retrans_acked, self.echoed_rtt(now, h)) {
                // Retransmitted data acknowledged: the timestamp echo
                // names the copy that arrived (RFC 7323 4.1; Linux's
                // tcp_ack_update_rtt). The congestion control gets no
                // sample from it, as in Linux.
                self.rtt.sample_at(rtt, ack, self.snd_nxt);
            }
            self.backoff = 0;
            self.stalled_since = None;
            self.tlp_done = false;
            self.timers.rto = if self.board.is_empty() { None } else { Some(now + self.rtt.rto()) };
            self.after_new_ack(now, a.bytes);
        } else if pure && outstanding_before > 0 && self.peer_wnd == old_wnd && (!self.sack_ok || newly_sacked > 0 || !h.options.sack().is_empty()) {
            // With SACK a duplicate ACK reports a hole (RFC 6675 2 asks
            // for new SACKed data; a receiver repeating its blocks still
            // reports one, and Linux's do while a retransmission is lost).
            // A pure ACK with no SACK block at all only carries options —
            // MPTCP's ADD_ADDR, its echo, DATA_ACK updates — and three of
            // those must not look like a loss.
            self.dupacks += 1;
            if !self.sack_ok {
                self.dup_credit = (self.dup_credit + self.mss).min(outstanding_before);
            }
        } else if newly_sacked > 0 {
            // A SACK with a window update still reports a hole.
            self.dupacks += 1;
        }

        self.detect_loss(now);
        self.arm_tlp(now);
        if let Recovery::Fast { .. } = self.recovery {
            let delivered = (self.snd_una - una_before + self.board.sacked()).saturating_sub(sacked_before);
            self.reduce_rate(delivered);
        }

        if self.fin_acked() {
            self.state = match self.state {
                State::FinWait1 => State::FinWait2,
                State::Closing => State::TimeWait,
                State::LastAck => State::Closed,
                s => s,
            };
        }
    }

    /// Marks the ranges the segment's SACK blocks report (clipped to what
    /// is outstanding above `ack`) on the scoreboard; returns the bytes
    /// newly SACKed.
    fn take_sack_blocks(&mut self, h: &TcpHeader, ack: u64) -> u64 {
        if !self.sack_ok || h.options.sack().is_empty() {
            return 0;
        }
        let mut blocks: [Range<u64>; 4] = Default::default();
        let mut n = 0;
        for b in h.options.sack() {
            let (Some(l), Some(r)) = (seq::unwrap(b.left, self.iss.wrapping_add(1), self.snd_una), seq::unwrap(b.right, self.iss.wrapping_add(1), self.snd_una)) else {
                continue;
            };
            let (l, r) = (l.max(ack), r.min(self.snd_nxt));
            if l < r {
                blocks[n] = l..r;
                n += 1;
            }
        }
        self.board.sack(&blocks[..n])
    }
}
