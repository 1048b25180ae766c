//! What goes out next (control packets, SACK, heartbeats, retransmissions,
//! new data), to which destination, and how DATA chunks are bundled into
//! one packet.

use mplab_wire::sctp::chunk::{data_flags, Chunk, DataChunk, DATA_HEADER_LEN};

use crate::sctp::cmt::{self, RtxView};
use crate::sctp::path::{Destination, PathState};
use crate::sctp::send::{OutChunk, OutState};
use crate::sctp::tsn;
use crate::time::Instant;
use super::{Association, State, Transmit};

impl Association {
    /// The next packet to send, if any.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if let Some(t) = self.ctrl.pop_front() {
            return Some(t);
        }
        if self.state == State::Closed || self.dests.is_empty() {
            return None;
        }
        // SACK, to where the latest DATA came from.
        if self.rcv.as_ref().is_some_and(|r| r.sack_now) {
            let nr = self.nr_sack;
            let dac = self.cfg.dac && self.cfg.cmt.is_cmt();
            let max_blocks = (self.cfg.mtu as usize).saturating_sub(64) / 8;
            let (src, dst) = self.reply_to.unwrap_or((self.dests[self.primary].local, self.dests[self.primary].remote));
            if let Some(r) = &mut self.rcv {
                let s = r.build_sack(nr, dac, max_blocks.max(1));
                return Some(self.wrap(src, dst, vec![Chunk::Sack(s)]));
            }
        }
        // Heartbeats.
        if let Some(i) = self.dests.iter().position(|d| d.hb_pending) {
            return Some(self.heartbeat(now, i));
        }
        if !matches!(self.state, State::Established | State::ShutdownPending | State::ShutdownReceived) {
            return None;
        }
        if let Some(t) = self.retransmit(now) {
            return Some(t);
        }
        self.send_new(now)
    }

    fn rtx_views(&self) -> Vec<RtxView> {
        self.dests.iter().map(|d| RtxView { state: d.state, cwnd: d.cwnd, ssthresh: d.ssthresh }).collect()
    }

    fn data_chunk(c: &OutChunk) -> Chunk {
        Chunk::Data(DataChunk { flags: c.flags, tsn: tsn::wire(c.tsn), stream_id: c.stream, ssn: c.ssn, ppid: c.ppid, payload: c.data.clone() })
    }

    fn retransmit(&mut self, now: Instant) -> Option<Transmit> {
        if self.snd.marked == 0 {
            return None;
        }
        let views = self.rtx_views();
        let cmt = self.cfg.cmt.is_cmt();
        let max = self.cfg.max_payload() + DATA_HEADER_LEN;
        let mut target: Option<usize> = None;
        let mut chunks = Vec::new();
        let mut size = 0;
        for idx in 0..self.snd.sent.len() {
            let c = &self.snd.sent[idx];
            let OutState::Marked { fast } = c.state else { continue };
            let to = cmt::rtx_destination(cmt, self.cfg.rtx_policy, !fast, c.dest, &views);
            match target {
                None => {
                    let d = &self.dests[to];
                    if !(self.fr_bypass || d.flight < d.cwnd) || d.burst == 0 {
                        return None;
                    }
                    target = Some(to);
                }
                Some(t) if t != to => continue,
                _ => {}
            }
            let clen = DATA_HEADER_LEN + c.data.len().div_ceil(4) * 4;
            if size + clen > max && !chunks.is_empty() {
                break;
            }
            size += clen;
            let c = &mut self.snd.sent[idx];
            c.state = OutState::Outstanding;
            c.in_flight = true;
            c.transmissions += 1;
            c.sent_at = now;
            c.misses = 0;
            let old = c.dest;
            c.dest = to;
            let len = c.len;
            chunks.push(Self::data_chunk(c));
            let tsn_ = c.tsn;
            self.snd.marked = self.snd.marked.saturating_sub(1);
            if self.dests[old].rtt_probe.is_some_and(|(t, _)| t == tsn_) {
                self.dests[old].rtt_probe = None;
            }
            let d = &mut self.dests[to];
            d.flight += len;
            d.stats.retransmissions += 1;
            d.stats.bytes_retransmitted += len;
            d.stats.bytes_sent += len;
        }
        let to = target?;
        self.fr_bypass = false;
        let d = &mut self.dests[to];
        d.burst -= 1;
        d.stats.packets_sent += 1;
        d.last_send = now;
        if d.t3.is_none() {
            d.t3 = Some(now + d.rto.rto());
        }
        let (src, dst) = (d.local, d.remote);
        Some(self.wrap(src, dst, chunks))
    }

    /// Picks the destination for new data, or says why none.
    fn pick_destination(&self) -> Option<usize> {
        let n = self.dests.len();
        let active = self.dests.iter().filter(|d| d.state == PathState::Active).count().max(1) as u64;
        let ok = |d: &Destination| {
            d.burst > 0
                && d.flight < d.cwnd
                && (!self.cfg.split_send_buffer || d.flight < self.cfg.send_buffer / active)
                && (!self.cfg.split_recv_buffer || d.flight < self.snd.peer_a_rwnd / active)
        };
        if self.cfg.cmt.is_cmt() {
            for want in [PathState::Active, PathState::PotentiallyFailed] {
                if want == PathState::PotentiallyFailed && self.dests.iter().any(|d| d.state == PathState::Active) {
                    break;
                }
                for k in 0..n {
                    let i = (self.rr_next + k) % n;
                    if self.dests[i].state == want && ok(&self.dests[i]) {
                        return Some(i);
                    }
                }
            }
            return None;
        }
        // Plain SCTP: the primary, or the first usable alternate.
        let order = (0..n).map(|k| (self.primary + k) % n);
        let chosen = order
            .clone()
            .find(|&i| self.dests[i].state == PathState::Active)
            .or_else(|| order.clone().find(|&i| self.dests[i].state == PathState::PotentiallyFailed))
            .unwrap_or(self.primary);
        ok(&self.dests[chosen]).then_some(chosen)
    }

    fn send_new(&mut self, now: Instant) -> Option<Transmit> {
        // Blocked by the peer's window only when there is data and a
        // destination whose cwnd would take it.
        let Some(first_len) = self.snd.unsent.front().map(|p| p.data.len() as u64) else {
            self.rwnd_block.set(now, false);
            return None;
        };
        let Some(i) = self.pick_destination() else {
            self.rwnd_block.set(now, false);
            return None;
        };
        let total_flight: u64 = self.dests.iter().map(|d| d.flight).sum();
        // RFC 9260 6.1 A: no new data beyond the peer's window, except one
        // chunk when nothing is in flight (zero window probe).
        if first_len > self.snd.peer_rwnd && total_flight > 0 {
            self.rwnd_block.set(now, true);
            return None;
        }
        self.rwnd_block.set(now, false);
        let max = self.cfg.max_payload() + DATA_HEADER_LEN;
        let mut chunks = Vec::new();
        let mut size = 0;
        let mut sent_bytes = 0;
        while let Some(p) = self.snd.unsent.front() {
            let len = p.data.len() as u64;
            let clen = DATA_HEADER_LEN + p.data.len().div_ceil(4) * 4;
            if !chunks.is_empty() && (size + clen > max || len > self.snd.peer_rwnd) {
                break;
            }
            let Some(p) = self.snd.unsent.pop_front() else { break };
            size += clen;
            let tsn_ = self.snd.next_tsn;
            self.snd.next_tsn += 1;
            let c = OutChunk {
                tsn: tsn_,
                stream: p.stream,
                ssn: p.ssn,
                ppid: p.ppid,
                flags: p.flags,
                len,
                data: p.data,
                dest: i,
                sent_at: now,
                transmissions: 1,
                state: OutState::Outstanding,
                in_flight: true,
                misses: 0,
                fast_retransmitted: false,
                freed: false,
            };
            chunks.push(Self::data_chunk(&c));
            let ending = c.flags & data_flags::E != 0;
            self.snd.sent.push_back(c);
            self.snd.peer_rwnd = self.snd.peer_rwnd.saturating_sub(len + u64::from(self.cfg.peer_chunk_overhead));
            sent_bytes += len;
            let d = &mut self.dests[i];
            d.stats.messages_sent += ending as u64;
            if d.rtt_probe.is_none() {
                d.rtt_probe = Some((tsn_, now));
            }
        }
        let d = &mut self.dests[i];
        d.flight += sent_bytes;
        d.stats.bytes_sent += sent_bytes;
        d.stats.packets_sent += 1;
        d.burst -= 1;
        d.last_send = now;
        if d.t3.is_none() {
            d.t3 = Some(now + d.rto.rto());
        }
        let (src, dst) = (d.local, d.remote);
        self.rr_next = (i + 1) % self.dests.len();
        Some(self.wrap(src, dst, chunks))
    }
}
