//! Per-destination congestion state after a SACK (RFC 9260 7.2, CMT's
//! split fast retransmit and CUC): which chunks are missed often enough to
//! resend, fast recovery per destination (CMT) or per association (plain
//! SCTP), window growth, and the T3-rtx restart.

use crate::sctp::cc::{self, PathView};
use crate::sctp::cmt::{self, SackSummary};
use crate::sctp::path::PathState;
use crate::sctp::send::OutState;
use crate::time::Instant;
use super::Association;

impl Association {
    pub(super) fn aggregate(&self) -> cc::Aggregate {
        cc::aggregate(self.dests.iter().filter(|d| d.state != PathState::Inactive).map(|d| PathView {
            cwnd: d.cwnd,
            ssthresh: d.ssthresh,
            srtt: d.rto.srtt().map(|r| r.as_secs_f64()),
        }))
    }

    /// Miss indications (SFR, with DAC's counts) for the chunks below the
    /// highest newly acked TSN (per destination under CMT); a chunk missed
    /// three times is marked for fast retransmit once, and its destination
    /// enters fast recovery.
    pub(super) fn mark_fast_retransmits(&mut self, sum: &SackSummary) {
        let limit = if sum.cmt { self.dests.iter().map(|d| d.sack.highest_newack).max().unwrap_or(0) } else { sum.highest_newack };
        let mut fr_dests: Vec<usize> = Vec::new();
        for c in self.snd.sent.iter_mut() {
            if c.tsn >= limit {
                break;
            }
            if c.state != OutState::Outstanding {
                continue;
            }
            let inc = cmt::miss_increment(sum, c.tsn, &self.dests[c.dest].sack);
            c.misses += inc;
            if c.misses >= 3 && !c.fast_retransmitted {
                c.state = OutState::Marked { fast: true };
                c.fast_retransmitted = true;
                if c.in_flight {
                    c.in_flight = false;
                    self.dests[c.dest].flight = self.dests[c.dest].flight.saturating_sub(c.len);
                }
                self.snd.marked += 1;
                self.dests[c.dest].stats.fast_retransmits += 1;
                if !fr_dests.contains(&c.dest) {
                    fr_dests.push(c.dest);
                }
            }
        }
        for d in fr_dests {
            self.enter_fast_recovery(d);
        }
    }

    fn enter_fast_recovery(&mut self, i: usize) {
        let cmt = self.cfg.cmt.is_cmt();
        let already = if cmt { self.dests[i].recover.is_some() } else { self.recover.is_some() };
        if already {
            return;
        }
        let agg = self.aggregate();
        let mtu = self.cfg.max_payload() as u64;
        let high = self.snd.next_tsn - 1;
        let d = &mut self.dests[i];
        let me = PathView { cwnd: d.cwnd, ssthresh: d.ssthresh, srtt: d.rto.srtt().map(|r| r.as_secs_f64()) };
        d.ssthresh = cc::ssthresh_after_loss(self.cfg.cmt, &agg, &me, mtu);
        d.cwnd = d.ssthresh;
        d.partial_bytes_acked = 0;
        if cmt {
            d.recover = Some(high);
        } else {
            self.recover = Some(high);
        }
        self.fr_bypass = true;
    }

    /// Congestion window growth for the bytes each destination had newly
    /// acked (`cum_advanced`: the SACK moved the cumulative ack).
    pub(super) fn grow_cwnds(&mut self, cum_advanced: bool) {
        let cmt = self.cfg.cmt.is_cmt();
        let agg = self.aggregate();
        let mtu = self.cfg.max_payload() as u64;
        let mode = self.cfg.cmt;
        let in_recovery = self.recover.is_some();
        for i in 0..self.dests.len() {
            let d = &mut self.dests[i];
            let net_ack = d.sack.net_ack;
            if net_ack == 0 {
                continue;
            }
            // CUC: with CMT a destination grows when its own pseudo-cumack
            // moves; plain SCTP when the cumulative ack moves, outside
            // fast recovery (RFC 9260 7.2.1, 7.2.4).
            let may_grow = if cmt { d.sack.new_pseudo_cumack } else { cum_advanced && !in_recovery };
            let fully_used = d.flight + net_ack >= d.cwnd;
            if may_grow && fully_used {
                let me = PathView { cwnd: d.cwnd, ssthresh: d.ssthresh, srtt: d.rto.srtt().map(|r| r.as_secs_f64()) };
                if d.cwnd <= d.ssthresh {
                    d.cwnd += cc::slow_start_increase(mode, &agg, &me, net_ack, mtu, self.cfg.abc_l as u64);
                } else {
                    d.partial_bytes_acked += net_ack;
                    if d.partial_bytes_acked >= d.cwnd {
                        d.partial_bytes_acked -= d.cwnd;
                        d.cwnd += cc::avoidance_increase(mode, &agg, &me, mtu);
                    }
                }
                d.stats.max_cwnd = d.stats.max_cwnd.max(d.cwnd);
            }
            if d.flight == 0 {
                d.partial_bytes_acked = 0;
            }
        }
    }

    /// Leaves fast recovery once its TSN is acked, and stops or restarts
    /// each destination's T3-rtx (RFC 9260 6.3.2 R2, R3).
    pub(super) fn after_sack_timers(&mut self, now: Instant) {
        if self.recover.is_some_and(|r| self.snd.cum_ack >= r) {
            self.recover = None;
        }
        let cum_now = self.snd.cum_ack;
        for d in &mut self.dests {
            if d.recover.is_some_and(|r| cum_now >= r) {
                d.recover = None;
            }
            if d.flight == 0 {
                d.t3 = None;
            } else if d.sack.new_pseudo_cumack || (d.sack.saw_newack && d.t3.is_none()) {
                d.t3 = Some(now + d.rto.rto());
            }
        }
    }
}
