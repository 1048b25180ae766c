//! SACK processing on the sender (RFC 9260 6.2.1, 7.2; CMT's CUC, SFR and
//! DAC): the cumulative ack and gap blocks free and mark chunks, each
//! destination learns what was newly acked there, then fast retransmit,
//! window growth, T3-rtx and the peer's window follow.

use core::net::IpAddr;

use mplab_wire::sctp::chunk::{sack_flags, GapBlock, SackChunk};

use crate::sctp::cmt::SackSummary;
use crate::sctp::path::{PathState, SackScratch};
use crate::sctp::send::{OutChunk, OutState};
use crate::sctp::tsn;
use crate::time::Instant;
use super::Association;

/// Gap blocks of one SACK the sender processes at most.
const MAX_GAP_BLOCKS: usize = 256;

impl Association {
    pub(super) fn on_sack(&mut self, now: Instant, src: IpAddr, dst: IpAddr, s: &SackChunk) {
        self.stats.sacks_received += 1;
        let cum = tsn::unwrap(s.cum_tsn_ack, self.snd.cum_ack);
        if cum < self.snd.cum_ack {
            return; // an old SACK, overtaken (RFC 9260 6.2.1 D i)
        }
        if cum >= self.snd.next_tsn {
            // RFC 9260 6.2.1 / 8.x: acking what was never sent.
            self.abort_with(dst, src, "cumulative TSN ack beyond the highest TSN sent");
            return;
        }
        let cmt = self.cfg.cmt.is_cmt();
        self.note_pseudo_cumacks();
        let cum_advanced = cum > self.snd.cum_ack;
        let mut sum = SackSummary { cmt, dac: self.cfg.dac, dac_flag: s.flags & sack_flags::DAC != 0, lowest_newack: u64::MAX, ..Default::default() };
        let mut any_new = self.ack_cumulative(now, cum, &mut sum);
        any_new |= self.ack_gap_blocks(now, cum, &s.gaps, &mut sum);
        if let Some(nr) = &s.nr_gaps {
            self.free_nr_gaps(cum, nr);
        }
        // Miss indications (SFR / DAC) and fast retransmit.
        sum.dests_newly_acked = self.dests.iter().filter(|d| d.sack.saw_newack).count();
        if sum.dests_newly_acked > 0 {
            self.mark_fast_retransmits(&sum);
        }
        self.grow_cwnds(cum_advanced);
        self.after_sack_timers(now);
        if any_new {
            self.assoc_errors = 0;
        }
        self.update_peer_rwnd(s.a_rwnd);
        self.maybe_progress_shutdown(now);
    }

    /// Clears each destination's per-SACK scratch and notes its lowest
    /// outstanding TSN before this SACK (CUC's pseudo-cumack).
    fn note_pseudo_cumacks(&mut self) {
        for d in &mut self.dests {
            d.sack = SackScratch::default();
        }
        let mut missing = self.dests.len();
        for c in &self.snd.sent {
            if missing == 0 {
                break;
            }
            if c.state != OutState::GapAcked {
                let sc = &mut self.dests[c.dest].sack;
                if sc.pseudo_cumack.is_none() {
                    sc.pseudo_cumack = Some(c.tsn);
                    missing -= 1;
                }
            }
        }
    }

    /// The cumulative part: these chunks leave the buffer. Returns whether
    /// any was newly acknowledged.
    fn ack_cumulative(&mut self, now: Instant, cum: u64, sum: &mut SackSummary) -> bool {
        let mut any_new = false;
        while self.snd.cum_ack < cum {
            let Some(c) = self.snd.sent.pop_front() else { break };
            self.snd.cum_ack += 1;
            if c.state != OutState::GapAcked {
                self.newly_acked(now, &c, sum);
                any_new = true;
            }
            if c.state == (OutState::Marked { fast: true }) || c.state == (OutState::Marked { fast: false }) {
                self.snd.marked = self.snd.marked.saturating_sub(1);
            }
            if !c.freed {
                self.snd.buffered = self.snd.buffered.saturating_sub(c.len);
            }
        }
        any_new
    }

    /// Gap blocks: the chunks they cover are acked but stay buffered (the
    /// receiver may renege). At most MAX_GAP_BLOCKS blocks are looked at:
    /// bounds the work a hostile SACK can cause. Returns whether any chunk
    /// was newly acknowledged.
    fn ack_gap_blocks(&mut self, now: Instant, cum: u64, gaps: &[GapBlock], sum: &mut SackSummary) -> bool {
        let mut any_new = false;
        for g in gaps.iter().take(MAX_GAP_BLOCKS) {
            if g.start == 0 || g.start > g.end {
                continue;
            }
            let (lo, hi) = (cum + g.start as u64, (cum + g.end as u64).min(self.snd.next_tsn - 1));
            if lo > hi {
                continue;
            }
            for t in lo..=hi {
                let Some(c) = self.snd.get_mut(t) else { break };
                if c.state == OutState::GapAcked {
                    continue;
                }
                let was_marked = matches!(c.state, OutState::Marked { .. });
                c.state = OutState::GapAcked;
                let c = c.clone_meta();
                if was_marked {
                    self.snd.marked = self.snd.marked.saturating_sub(1);
                }
                self.newly_acked(now, &c, sum);
                if let Some(cc) = self.snd.get_mut(t) {
                    cc.in_flight = false;
                }
                any_new = true;
            }
        }
        any_new
    }

    /// Non-renegable gaps (NR-SACK): the data is freed at once.
    fn free_nr_gaps(&mut self, cum: u64, nr: &[GapBlock]) {
        for g in nr.iter().take(MAX_GAP_BLOCKS) {
            if g.start == 0 || g.start > g.end {
                continue;
            }
            let hi = (cum + g.end as u64).min(self.snd.next_tsn - 1);
            for t in cum + g.start as u64..=hi {
                let before = self.snd.buffered;
                self.snd.free(t);
                self.stats.nr_freed_bytes += before - self.snd.buffered;
            }
        }
    }

    fn newly_acked(&mut self, now: Instant, c: &OutChunk, sum: &mut SackSummary) {
        let d = &mut self.dests[c.dest];
        if c.in_flight {
            d.flight = d.flight.saturating_sub(c.len);
        }
        d.sack.net_ack += c.len;
        d.sack.saw_newack = true;
        d.sack.highest_newack = d.sack.highest_newack.max(c.tsn);
        if d.sack.pseudo_cumack == Some(c.tsn) {
            d.sack.new_pseudo_cumack = true;
        }
        d.stats.bytes_acked += c.len;
        if let Some((t, at)) = d.rtt_probe {
            if t == c.tsn {
                if c.transmissions == 1 {
                    d.rto.on_sample(now.saturating_since(at));
                }
                d.rtt_probe = None;
            }
        }
        d.error_count = 0;
        if d.state != PathState::Active && d.hb_outstanding.is_none() {
            d.state = PathState::Active;
        }
        sum.lowest_newack = sum.lowest_newack.min(c.tsn);
        sum.highest_newack = sum.highest_newack.max(c.tsn);
    }

    /// The peer's window (RFC 9260 6.2.1): a_rwnd less what is still in
    /// flight (and the per-chunk overhead a FreeBSD-like sender charges).
    fn update_peer_rwnd(&mut self, a_rwnd: u32) {
        let flight: u64 = self.dests.iter().map(|d| d.flight).sum();
        let overhead = match self.cfg.peer_chunk_overhead {
            0 => 0,
            oh => self.snd.sent.iter().filter(|c| c.in_flight).count() as u64 * u64::from(oh),
        };
        self.snd.peer_a_rwnd = a_rwnd as u64;
        self.snd.peer_rwnd = (a_rwnd as u64).saturating_sub(flight + overhead);
    }
}

impl OutChunk {
    /// A copy without the payload, for accounting.
    fn clone_meta(&self) -> OutChunk {
        OutChunk {
            tsn: self.tsn,
            stream: self.stream,
            ssn: self.ssn,
            ppid: self.ppid,
            flags: self.flags,
            data: Vec::new(),
            len: self.len,
            dest: self.dest,
            sent_at: self.sent_at,
            transmissions: self.transmissions,
            state: self.state,
            in_flight: self.in_flight,
            misses: self.misses,
            fast_retransmitted: self.fast_retransmitted,
            freed: self.freed,
        }
    }
}
