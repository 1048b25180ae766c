//! Fallback to plain TCP (RFC 8684 3.7): when a connection may fall
//! back, the infinite mapping and MP_FAIL, and a fallen-back connection's
//! single subflow carrying the data stream.

use core::ops::Range;

use mplab_wire::mptcp::tcprst_reason;
use mplab_wire::{MptcpOption, TcpHeader};

use super::{Connection, Event, Fallback, Handshake, Origin, OPTIONLESS_ACKS_TO_FALL_BACK};
use crate::tcp;
use crate::time::Instant;

impl Connection {
    /// A segment of a fallen-back connection: subflow `i` is a plain TCP
    /// connection now (kept out of line: the multipath path is the hot one).
    #[cold]
    #[inline(never)]
    pub(super) fn input_as_plain_tcp(&mut self, now: Instant, i: usize, h: &TcpHeader, payload_len: u32) -> Option<Range<u64>> {
        // The subflow's bytes continue the data stream where it stands
        // (read in order and appended at RCV.NXT: an infinite mapping), so
        // a subflow offset is a data offset shifted by what the two had
        // read when the connection fell back. The driver is told the data
        // offset: the subflow's may differ (data sent twice on it, or by
        // other subflows before).
        let (nxt, read) = (self.rcv.nxt(), self.subflows[i].tcp.read_offset());
        let sub_range = self.sub_tcp(i).handle_segment(now, h, payload_len);
        self.after_fallback_input(i, sub_range.clone());
        self.grow_sndbuf_on_input(i);
        self.after_input(now);
        if i != self.fb.sub {
            return None;
        }
        // Subflow bytes from before the data stream's start (the part of
        // the subflow read before the fallback that the stream does not
        // continue) are old: no place for them.
        let r = sub_range?;
        let start = (r.start + nxt).checked_sub(read)?;
        Some(start..start + (r.end - r.start))
    }

    pub(super) fn alive_subflows(&self) -> usize {
        self.subflows.iter().filter(|s| !s.is_closed()).count()
    }

    /// Whether the connection may fall back to plain TCP on subflow `i`:
    /// it is the initial subflow, the only one alive (a late segment on
    /// one already reset says nothing of the one carrying the data now),
    /// and nothing has been sent out of the stream's order. A join of
    /// ours whose SYN nothing answered yet does not count: the peer holds
    /// no subflow there that could carry data, and the fallback gives it
    /// up (Linux keeps `allow_infinite_fallback` until a join completes).
    /// A join the peer opened counts as soon as its SYN arrived: the peer
    /// may already send on it.
    pub(super) fn fallback_possible_on(&self, i: usize) -> bool {
        let others = self.subflows.iter().enumerate().filter(|&(k, s)| k != i && !s.is_closed() && s.tcp.state() != tcp::State::SynSent).count();
        self.fb.allowed && others == 0 && self.subflows[i].origin == Origin::Initial && !self.subflows[i].is_closed()
    }

    /// Payload no mapping places (RFC 8684 3.7): either way the unmapped
    /// bytes are not taken.
    pub(super) fn on_missing_mapping(&mut self, i: usize) {
        self.fall_back_or_reset(i, tcprst_reason::MIDDLEBOX_INTERFERENCE);
    }

    /// A mapping that disagrees with one received before (RFC 8684 3.3),
    /// as Linux's MAPPING_INVALID (`subflow_check_data_avail`, reset
    /// reason MPTCP_RST_EMPTCP); the data level sends the subflow's bytes
    /// again on another.
    pub(super) fn on_invalid_mapping(&mut self, i: usize) {
        self.fall_back_or_reset(i, tcprst_reason::MPTCP_SPECIFIC);
    }

    /// The connection falls back on subflow `i` where it still may, else
    /// that subflow is reset with `reason` (Linux does the same for a
    /// missing and an invalid mapping).
    fn fall_back_or_reset(&mut self, i: usize, reason: u8) {
        self.changed_all();
        if self.fallback_possible_on(i) {
            self.fall_back(Fallback::NoMapping);
        } else {
            self.subflows[i].reset(reason);
        }
    }

    pub(super) fn on_checksum_failure(&mut self, i: usize, dsn: u64) {
        self.changed_all();
        if self.fallback_possible_on(i) {
            // RFC 8684 3.7: tell the sender (MP_FAIL) and go on as TCP.
            self.fb.mp_fail = Some(dsn);
            self.fall_back(Fallback::Checksum);
            self.subflows[i].tcp.ack_now();
        } else {
            self.subflows[i].reset(tcprst_reason::MIDDLEBOX_INTERFERENCE);
        }
    }

    pub(super) fn fall_back(&mut self, why: Fallback) {
        self.changed_all();
        if self.fb.reason.is_none() {
            self.fb.reason = Some(why);
            // From now on the single subflow's stream is the data stream,
            // shifted by whatever other subflows carried before.
            // The subflow it runs on: the one still open (subflow 0 if
            // none is); any other is closed (RFC 8684 3.7: a connection
            // falls back on a single subflow).
            self.fb.sub = self.subflows.iter().position(|s| !s.is_closed()).unwrap_or(0);
            for (k, s) in self.subflows.iter_mut().enumerate() {
                if k != self.fb.sub && !s.is_closed() {
                    s.tcp.abort();
                }
            }
            if let Some(s) = self.subflows.get_mut(self.fb.sub) {
                // Bytes queued on the subflow but not yet sent (a data-level
                // reinjection, say) would reach the peer as the stream's
                // continuation, whatever data offset their mapping named:
                // take them back and go on from just after the last byte
                // the subflow sent. Bytes already sent under an older
                // mapping would need the MP_FAIL exchange (docs/security.md).
                let sent_end = s.tcp.send_offset() - s.tcp.unsent();
                if s.tcp.retract_unsent() > 0 {
                    s.truncate_tx(sent_end);
                    let cont = if s.sent_high.0 == sent_end && sent_end > 0 { s.sent_high.1 } else { self.data_una };
                    self.sched_nxt = cont.max(self.data_una).min(self.sched_nxt);
                }
                self.fb.delta = self.sched_nxt.wrapping_sub(s.tcp.send_offset());
            }
            self.events.push_back(Event::FellBack(why));
        }
    }

    pub(super) fn after_fallback_input(&mut self, i: usize, _sub_range: Option<Range<u64>>) {
        if i != self.fb.sub {
            return;
        }
        let fb = self.fb.sub;
        let s = &mut self.subflows[fb];
        let avail = s.tcp.readable();
        if avail > 0 {
            let r = s.tcp.recv(avail);
            let off = self.rcv.nxt();
            self.rcv.insert(off..off + (r.end - r.start));
        }
        if s.tcp.peer_closed() {
            self.fin_received = true;
        }
        let una = self.subflows[fb].tcp.snd_una().wrapping_add(self.fb.delta);
        self.data_una = self.data_una.max(una.min(self.app_end));
        if !self.established && self.subflows[fb].tcp.is_established() {
            self.established = true;
            self.events.push_back(Event::Established);
        }
    }

    /// Signs in a segment that the peer went on as plain TCP (or asks this
    /// end to): an MP_FAIL, an ACK without options of the client's first
    /// data, or segments without MPTCP options on a subflow that carried
    /// DSS. Where the connection may fall back (RFC 8684 3.7), it does.
    pub(super) fn check_peer_fallback(&mut self, i: usize, h: &TcpHeader, payload_len: u32) {
        // The peer speaks MPTCP on this subflow if it sent a DSS there; a
        // peer that never did (a box strips option 30 from before its
        // first DSS) shows it reads the subflow as plain TCP when it
        // acknowledges bytes this end sent under a mapping without a
        // DATA_ACK.
        let sf = &self.subflows[i];
        let acked = i64::from(h.ack.wrapping_sub(sf.tcp.iss().wrapping_add(1)) as i32);
        let acks_mapped = sf.tx.front().is_some_and(|m| acked > m.sub as i64);
        let optionless = (sf.saw_dss || acks_mapped) && !h.syn() && !h.rst() && h.ack_flag() && !h.options.has_mptcp() && self.fallback_possible_on(i);
        // A copy of bytes already received carries no news either: it counts
        // as an ACK (a forged duplicate without options must not make the
        // connection fall back; RFC 8684 3.7 is about data to be mapped).
        let old_copy = payload_len > 0 && self.subflows[i].tcp.rcv_offset(h.seq).is_some_and(|off| off + u64::from(payload_len) <= self.subflows[i].tcp.rcv_nxt());
        let pure_ack = (payload_len == 0 || old_copy) && !h.fin();
        let run = &mut self.subflows[i].optionless_acks;
        *run = if optionless && pure_ack { run.saturating_add(1) } else { 0 };
        // The client's first data went with MP_CAPABLE; an ACK of it with
        // no MPTCP option at all says the server fell back (it never got
        // the keys: RFC 8684 3.1, 3.7), so the client falls back too, or
        // what it sends again would reach a plain TCP stream twice.
        let sf = &self.subflows[i];
        let acks_first_data = self.client
            && sf.origin == Origin::Initial
            && sf.handshake == Handshake::ThirdAck
            && !sf.saw_dss
            && h.ack_flag()
            && !h.syn()
            && !h.rst()
            && !h.options.has_mptcp()
            && (h.ack.wrapping_sub(sf.tcp.iss().wrapping_add(1)) as i32) as i64 > sf.syn_tx as i64
            && sf.tx_lookup(sf.syn_tx).is_some();
        // An MP_FAIL the connection cannot honour is ignored (Linux sends
        // no reply; the peer's wait for one times out and it resets).
        if h.options.mptcp().any(|o| matches!(o, MptcpOption::MpFail { .. })) && self.fallback_possible_on(i) {
            self.fall_back(Fallback::Checksum);
        } else if acks_first_data && self.alive_subflows() == 1 {
            self.fall_back(Fallback::NoMapping);
        } else if optionless && (!pure_ack || self.subflows[i].optionless_acks >= OPTIONLESS_ACKS_TO_FALL_BACK) {
            // The peer went on as plain TCP (it fell back, or a box strips
            // option 30 from here on): so do we. Data without a mapping
            // says so at once; pure ACKs only when several in a row come
            // without options, so that one ACK whose options a box
            // dropped (or an attacker's) does not make this end fall back
            // while the peer goes on with MPTCP, and resend as plain TCP
            // what the peer then takes twice.
            self.fall_back(Fallback::NoMapping);
        }
    }

    /// The end of a segment's input once a missing mapping made the
    /// connection fall back in the middle of it: the subflow's bytes go on
    /// as the data stream.
    pub(super) fn finish_input_after_fallback(&mut self, now: Instant, i: usize, sub_range: Option<Range<u64>>) -> Option<Range<u64>> {
        self.after_fallback_input(i, sub_range.clone());
        self.after_input(now);
        sub_range
    }

    /// A fallen-back connection's scheduling: everything goes on its one
    /// subflow, in order, and the DATA_FIN becomes the subflow's FIN.
    pub(super) fn schedule_fallen_back(&mut self) {
        let s = &mut self.subflows[self.fb.sub];
        let want = self.app_end - self.sched_nxt;
        if want > 0 && s.tcp.is_established() {
            self.sched_nxt += s.tcp.send(want);
        }
        if self.fin_queued && self.sched_nxt >= self.app_end {
            s.tcp.close();
        }
    }

    /// The data-level offsets of a fallen-back connection's segment on
    /// subflow `i` (subflow-stream bytes `sub`), and the MP_FAIL it owes.
    pub(super) fn decorate_fallen_back(&mut self, i: usize, h: &mut TcpHeader, sub: Range<u64>) -> Range<u64> {
        if i != self.fb.sub {
            return 0..0; // closed when the connection fell back: nothing of the stream
        }
        // Bytes sent before the fallback go again under the mapping they
        // first went out with; the rest continue the data stream.
        let data = match self.subflows[i].tx_lookup(sub.start) {
            Some((d, _)) if sub.start < self.sched_nxt.wrapping_sub(self.fb.delta) => d..d + (sub.end - sub.start),
            _ => sub.start.wrapping_add(self.fb.delta)..sub.end.wrapping_add(self.fb.delta),
        };
        if let Some(dsn) = self.fb.mp_fail.take() {
            let _ = h.options.push_mptcp(MptcpOption::MpFail { dsn });
        }
        data
    }

    /// An infinite mapping arrived on subflow `i`.
    pub(super) fn on_infinite_mapping(&mut self, i: usize) {
        // RFC 8684 3.7: an infinite mapping ends multipath only on a
        // connection that never had more than its initial subflow
        // (Linux: msk->allow_infinite_fallback, cleared when a join
        // completes or data is reinjected). On any other it is an error on
        // this subflow, which is reset: a forged one must not make a
        // connection of several subflows fall back and lose the others'
        // data.
        if !self.fallback_possible_on(i) {
            self.changed_all();
            self.subflows[i].reset(tcprst_reason::MIDDLEBOX_INTERFERENCE);
        } else {
            self.fall_back(Fallback::NoMapping);
        }
    }
}
