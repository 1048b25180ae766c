//! Fallback to plain TCP (RFC 8684 3.7): when a connection may fall
//! back, the infinite mapping and MP_FAIL, and a fallen-back connection's
//! single subflow carrying the data stream.

use core::ops::Range;

use mplab_wire::mptcp::tcprst_reason;
use mplab_wire::TcpHeader;

use super::{Connection, Event, Fallback, Origin};
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
        if i != self.fb_sub {
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
    /// and nothing has been sent out of the stream's order.
    pub(super) fn fallback_possible_on(&self, i: usize) -> bool {
        self.may_fall_back && self.alive_subflows() == 1 && self.subflows[i].origin == Origin::Initial && !self.subflows[i].is_closed()
    }

    pub(super) fn on_missing_mapping(&mut self, i: usize) {
        self.changed_all();
        // Where it may not fall back, Linux resets the subflow too
        // (MPTCP_RST_EMPTCP): either way the unmapped bytes are not taken.
        if self.fallback_possible_on(i) {
            self.fall_back(Fallback::NoMapping);
        } else {
            let s = &mut self.subflows[i];
            s.reset_reason = Some(tcprst_reason::MIDDLEBOX_INTERFERENCE);
            s.tcp.abort();
        }
    }

    pub(super) fn on_checksum_failure(&mut self, i: usize, dsn: u64) {
        self.changed_all();
        if self.fallback_possible_on(i) {
            // RFC 8684 3.7: tell the sender (MP_FAIL) and go on as TCP.
            self.mp_fail_pending = Some(dsn);
            self.fall_back(Fallback::Checksum);
            self.subflows[i].tcp.ack_now();
        } else {
            let s = &mut self.subflows[i];
            s.reset_reason = Some(tcprst_reason::MIDDLEBOX_INTERFERENCE);
            s.tcp.abort();
        }
    }

    pub(super) fn fall_back(&mut self, why: Fallback) {
        self.changed_all();
        if self.fallback.is_none() {
            self.fallback = Some(why);
            // From now on the single subflow's stream is the data stream,
            // shifted by whatever other subflows carried before.
            // The subflow it runs on: the one still open (subflow 0 if
            // none is); any other is closed (RFC 8684 3.7: a connection
            // falls back on a single subflow).
            self.fb_sub = self.subflows.iter().position(|s| !s.is_closed()).unwrap_or(0);
            for (k, s) in self.subflows.iter_mut().enumerate() {
                if k != self.fb_sub && !s.is_closed() {
                    s.tcp.abort();
                }
            }
            if let Some(s) = self.subflows.get_mut(self.fb_sub) {
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
                self.fb_delta = self.sched_nxt.wrapping_sub(s.tcp.send_offset());
            }
            self.events.push_back(Event::FellBack(why));
        }
    }

    pub(super) fn after_fallback_input(&mut self, i: usize, _sub_range: Option<Range<u64>>) {
        if i != self.fb_sub {
            return;
        }
        let fb = self.fb_sub;
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
        let una = self.subflows[fb].tcp.snd_una().wrapping_add(self.fb_delta);
        self.data_una = self.data_una.max(una.min(self.app_end));
        if !self.established && self.subflows[fb].tcp.is_established() {
            self.established = true;
            self.events.push_back(Event::Established);
        }
    }
}
