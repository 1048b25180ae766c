//! Congestion window bookkeeping around the congestion control: whether
//! the window was the limit (Linux's tcp_cwnd_validate), the restart after
//! idle, RTT samples for the algorithm, and MPTCP's penalisation.

use core::time::Duration;

use crate::time::Instant;

use super::{Connection, Recovery};

impl Connection {
    /// Halves the congestion window and sets ssthresh to it (MPTCP's
    /// subflow penalisation, Raiciu et al. NSDI 2012), at least two segments.
    pub fn penalize(&mut self) {
        let s = &mut self.cc_state;
        s.cwnd = (s.cwnd / 2).max(s.min_cwnd());
        s.ssthresh = s.cwnd;
    }

    /// A layer above had data for this connection but its congestion window
    /// was full: the window may grow on the next ACK (as when `send`
    /// itself is blocked by cwnd).
    pub fn note_cwnd_limited(&mut self) {
        if self.in_flight() + self.mss > self.cc_state.cwnd {
            self.cwnd_limited = true;
            if self.cfg.cwnd_limited_per_round {
                self.validate_cwnd(true);
            }
        }
    }

    /// After an attempt to send new data: whether the window was the
    /// limit, remembered for the round (Linux's `tcp_cwnd_validate`).
    pub(super) fn validate_cwnd(&mut self, limited: bool) {
        let out = self.snd_nxt - self.snd_una;
        if self.snd_una >= self.round_end || limited || (!self.round_limited && out > self.round_max_out) {
            self.round_limited = limited;
            self.round_max_out = out;
            self.round_end = self.snd_nxt;
        }
    }

    /// Whether an ACK may grow the window.
    pub(super) fn is_cwnd_limited(&self) -> bool {
        if !self.cfg.cwnd_limited_per_round {
            return self.cwnd_limited;
        }
        if self.round_limited {
            return true;
        }
        // Slow start: let the window reach twice what the round had out.
        self.cc_state.in_slow_start() && self.cc_state.cwnd < 2 * self.round_max_out
    }

    /// Nothing is outstanding and new data is about to go: after more than
    /// an RTO of silence the window is halved once per RTO elapsed, not
    /// below the initial window, and ssthresh keeps three quarters of the
    /// old window (Linux's `tcp_cwnd_restart`).
    pub(super) fn restart_after_idle(&mut self, now: Instant) {
        let Some(last) = self.last_data_tx else { return };
        let rto = self.rtt.rto().as_nanos() as u64;
        let mut idle = now.saturating_since(last).as_nanos() as u64;
        if rto == 0 || idle <= rto {
            return;
        }
        let cc = &mut self.cc_state;
        if matches!(self.recovery, Recovery::Open) {
            cc.ssthresh = cc.ssthresh.max(cc.cwnd / 2 + cc.cwnd / 4);
        }
        let restart = (crate::cc::INITIAL_WINDOW_SEGMENTS * cc.mss).min(cc.cwnd);
        let mut cwnd = cc.cwnd;
        while idle > rto && cwnd > restart {
            idle -= rto;
            cwnd /= 2;
        }
        cc.cwnd = cwnd.max(restart);
        // Restarted once: the next check measures from here.
        self.last_data_tx = Some(now);
    }

    pub(super) fn cc_rtt_sample(&mut self, now: Instant, rtt: Duration) {
        let x = crate::cc::hystart::RttSample { now, rtt, snd_una: self.snd_una, snd_nxt: self.snd_nxt };
        self.cc.on_rtt_sample(&mut self.cc_state, &x);
    }
}
