//! Loss recovery: SACK-based loss marking (RFC 6675, FACK-style) with
//! RACK's reordering timer (RFC 8985), NewReno without SACK, proportional
//! rate reduction during fast recovery (RFC 6937), the tail loss probe's
//! arming, and leaving recovery once its point is acknowledged.

use core::time::Duration;

use crate::cc::AckEvent;
use crate::time::Instant;

use super::{Connection, Recovery};

impl Connection {
    /// Arms the tail loss probe: two smoothed RTTs after the last send or
    /// ACK (plus the peer's delayed-ACK allowance when one segment is out),
    /// never after the RTO. Without it a window lost whole (no duplicate
    /// ACK comes back) waits for the RTO: 200 ms at least.
    pub(super) fn arm_tlp(&mut self, now: Instant) {
        self.timers.tlp = None;
        let Some(srtt) = self.rtt.srtt() else { return };
        if !self.sack_ok || self.tlp_done || self.recovery != Recovery::Open || self.board.is_empty() {
            return;
        }
        let mut pto = srtt * 2;
        if self.in_flight() <= self.mss {
            pto = pto.max(srtt * 3 / 2 + self.cfg.delayed_ack_timeout);
        }
        let pto = pto.max(Duration::from_micros(200));
        let at = self.cfg.timer_clock.fires(now, pto);
        if self.timers.rto.is_none_or(|r| at < r) {
            self.timers.tlp = Some(at);
        }
    }

    pub(super) fn after_new_ack(&mut self, now: Instant, acked: u64) {
        match self.recovery {
            Recovery::Fast { recover } => {
                if self.snd_una >= recover {
                    self.recovery = Recovery::Open;
                    self.cc.on_recovery_end(&mut self.cc_state, now);
                } else if !self.sack_ok {
                    // NewReno partial ACK: the next hole is lost too.
                    self.board.mark_head_lost();
                }
                return; // no window growth during fast recovery
            }
            Recovery::Loss { recover } if self.snd_una >= recover => self.recovery = Recovery::Open,
            _ => {}
        }
        self.cc_state.acked_since_loss += acked;
        let ev = AckEvent { now, acked, srtt: self.rtt.srtt(), min_rtt: self.rtt.min_rtt(), cwnd_limited: self.is_cwnd_limited(), coupling: self.coupling.as_ref() };
        self.cc.on_ack(&mut self.cc_state, &ev);
        self.cwnd_limited = false;
    }

    pub(super) fn detect_loss(&mut self, now: Instant) {
        if self.board.is_empty() {
            return;
        }
        if self.sack_ok {
            self.board.mark_lost_by_sack(3 * self.mss);
            // RACK's reordering window: a quarter of the minimum RTT.
            let reo_wnd = self.rtt.min_rtt().unwrap_or_default() / 4;
            self.board.detect_lost_retransmits(reo_wnd);
            let rack_rtt = self.rtt.latest().or(self.rtt.srtt()).unwrap_or_default();
            let (_, timer) = self.board.rack_detect(now, rack_rtt, reo_wnd, 256);
            self.timers.rack = timer;
        }
        if self.recovery == Recovery::Open && self.dupacks >= 3 && self.board.lost() == 0 {
            self.board.mark_head_lost();
        }
        if self.recovery == Recovery::Open && self.board.lost() > 0 {
            let in_flight = self.in_flight() + self.board.lost();
            self.cc_state.acked_last_interval = self.cc_state.acked_since_loss;
            self.cc_state.acked_since_loss = 0;
            self.cc.on_congestion_event(&mut self.cc_state, now, in_flight);
            self.recovery = Recovery::Fast { recover: self.snd_nxt };
            self.rexmit_allowance = true;
            self.stats.fast_recoveries += 1;
            self.recover_fs = self.snd_nxt - self.snd_una;
            self.prr_delivered = 0;
            self.prr_out = 0;
        }
    }

    /// PRR (RFC 6937, with slow-start reduction bound): during recovery the
    /// sender may send about what the peer received, scaled down to
    /// ssthresh, so the window shrinks smoothly instead of going silent and
    /// then bursting a whole window of retransmissions into a full queue.
    pub(super) fn reduce_rate(&mut self, delivered: u64) {
        self.prr_delivered += delivered;
        let pipe = self.in_flight();
        let ssthresh = self.cc_state.ssthresh;
        let sndcnt = if pipe > ssthresh {
            let allowed = (self.prr_delivered as u128 * ssthresh as u128).div_ceil(self.recover_fs.max(1) as u128) as u64;
            allowed.saturating_sub(self.prr_out)
        } else {
            let limit = self.prr_delivered.saturating_sub(self.prr_out).max(delivered) + self.mss;
            (ssthresh - pipe).min(limit)
        };
        self.cc_state.cwnd = (pipe + sndcnt).max(self.mss);
    }
}
