//! `blest`: BLocking ESTimation (Ferlin, Alay, Mehani, Boreli, "BLEST:
//! Blocking Estimation-based MPTCP Scheduler for Heterogeneous Networks",
//! IFIP Networking 2016).
//!
//! The fastest subflow x_f (lowest RTT) is used whenever it has window
//! space. Otherwise the slower subflow x_s (lowest RTT among those with
//! space) is considered: while one segment sent on x_s is in flight
//! (rtt_s), x_f could send
//!
//! ```text
//! X = MSS_f * (cwnd_f + (rtt_s/rtt_f - 1) / 2) * rtt_s/rtt_f      (bytes)
//! ```
//!
//! (cwnd_f in segments, growing by one per RTT in congestion avoidance).
//! If `X * lambda > send_window - MSS_s * (inflight_s + 1)`, sending on
//! x_s would leave too little of the connection-level send window for
//! x_f (head-of-line blocking at the receiver): wait for x_f. (The window
//! is the whole MPTCP send window |W|, as in the paper and the authors'
//! Linux module: the fast subflow's own outstanding data is what X
//! estimates, so it is not subtracted again.)
//!
//! `lambda` adapts as in the authors' Linux module: it starts at 1.2 and,
//! at most once per RTT of the slow subflow while x_s is being
//! considered, rises by 0.04 if the connection was blocked by its send
//! window since the last update (`SchedContext::window_blocked` grew:
//! the estimate let too much onto x_s) and falls by 0.01 otherwise, kept
//! within [1.0, 1.3].

use super::{active, fastest, SchedContext, Scheduler, SubflowInfo};
use crate::time::Instant;

#[derive(Debug, Clone)]
pub struct Blest {
    pub lambda: f64,
    /// When lambda last changed (None: not yet considered a slow subflow).
    last_update: Option<Instant>,
    /// `window_blocked` at the last update.
    seen_blocked: u64,
}

/// The adaptation of the authors' Linux module (`mptcp_blest.c`):
/// initial value, bounds, and the steps after a blocked / a clean RTT.
pub const LAMBDA_INITIAL: f64 = 1.2;
pub const LAMBDA_MIN: f64 = 1.0;
pub const LAMBDA_MAX: f64 = 1.3;
pub const LAMBDA_BAD: f64 = 0.04;
pub const LAMBDA_GOOD: f64 = 0.01;

impl Default for Blest {
    fn default() -> Self {
        Blest { lambda: LAMBDA_INITIAL, last_update: None, seen_blocked: 0 }
    }
}

/// Bytes the fast subflow can send during one RTT of the slow one.
pub fn fast_bytes(f: &SubflowInfo, s: &SubflowInfo) -> f64 {
    let (Some(rf), Some(rs)) = (f.srtt, s.srtt) else { return 0.0 };
    let ratio = rs.as_secs_f64() / rf.as_secs_f64().max(1e-9);
    f.mss as f64 * (f.cwnd_segments() + (ratio - 1.0) / 2.0) * ratio
}

impl Blest {
    /// Adapts lambda, at most once per RTT of the slow subflow `s`.
    fn update_lambda(&mut self, s: &SubflowInfo, cx: &SchedContext) {
        let Some(last) = self.last_update else {
            self.last_update = Some(cx.now);
            self.seen_blocked = cx.window_blocked;
            return;
        };
        if cx.now.saturating_since(last) < s.rtt() {
            return;
        }
        if cx.window_blocked > self.seen_blocked {
            self.lambda += LAMBDA_BAD;
        } else {
            self.lambda -= LAMBDA_GOOD;
        }
        self.lambda = self.lambda.clamp(LAMBDA_MIN, LAMBDA_MAX);
        self.seen_blocked = cx.window_blocked;
        self.last_update = Some(cx.now);
    }
}

impl Scheduler for Blest {
    fn name(&self) -> &'static str {
        "blest"
    }

    fn schedule(&mut self, sf: &[SubflowInfo], cx: &SchedContext, out: &mut Vec<usize>) {
        let Some(f) = fastest(sf) else { return };
        if f.has_window {
            out.push(f.index);
            return;
        }
        let Some(s) = active(sf).filter(|s| s.has_window).min_by_key(|s| (s.rtt(), s.index)) else { return };
        if cx.reinjection {
            out.push(s.index); // retransmissions are not held back
            return;
        }
        self.update_lambda(s, cx);
        let x = fast_bytes(f, s);
        let inflight_s = (s.in_flight / s.mss.max(1)) as f64;
        let space = cx.send_window as f64 - s.mss as f64 * (inflight_s + 1.0);
        if x * self.lambda > space {
            return; // wait for the fast subflow
        }
        out.push(s.index);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{cx, sf};
    use super::*;

    #[test]
    fn estimate_matches_the_paper() {
        // cwnd_f = 10 segments of 1400 B, rtt_s/rtt_f = 4:
        // X = 1400 * (10 + 1.5) * 4 = 64400 bytes.
        let f = sf(0, 10, false, false);
        let s = sf(1, 40, false, true);
        assert!((fast_bytes(&f, &s) - 64_400.0).abs() < 1e-6);
    }

    #[test]
    fn waits_for_the_fast_subflow_when_the_window_is_tight() {
        let f = sf(0, 10, false, false);
        let s = sf(1, 40, false, true);
        let mut b = Blest::default();
        let mut out = vec![];
        // X * 1.2 = 77280 bytes; a 70 KB window leaves 68.6 KB: wait.
        b.schedule(&[f, s], &SchedContext { send_window: 70_000, ..cx() }, &mut out);
        assert!(out.is_empty());
        // 1 MB window: plenty of room, use the slow subflow.
        b.schedule(&[f, s], &SchedContext { send_window: 1_000_000, ..cx() }, &mut out);
        assert_eq!(out, [1]);
    }

    #[test]
    fn lambda_rises_after_blocking_and_falls_without_once_per_slow_rtt() {
        use core::time::Duration;
        let f = sf(0, 10, false, false);
        let s = sf(1, 40, false, true);
        let mut b = Blest::default();
        let mut out = vec![];
        let at = |ms: u64, blocked: u64| SchedContext { now: Instant::ZERO + Duration::from_millis(ms), window_blocked: blocked, ..cx() };
        b.schedule(&[f, s], &at(0, 0), &mut out); // first look: no change
        assert_eq!(b.lambda, LAMBDA_INITIAL);
        b.schedule(&[f, s], &at(30, 5), &mut out); // within one slow RTT
        assert_eq!(b.lambda, LAMBDA_INITIAL);
        b.schedule(&[f, s], &at(40, 5), &mut out); // blocked since: up
        assert!((b.lambda - (LAMBDA_INITIAL + LAMBDA_BAD)).abs() < 1e-9);
        b.schedule(&[f, s], &at(80, 5), &mut out); // clean RTT: down
        assert!((b.lambda - (LAMBDA_INITIAL + LAMBDA_BAD - LAMBDA_GOOD)).abs() < 1e-9);
        for k in 0..100 {
            b.schedule(&[f, s], &at(120 + 40 * k, 6 + k), &mut out);
        }
        assert_eq!(b.lambda, LAMBDA_MAX);
        for k in 0..100 {
            b.schedule(&[f, s], &at(5000 + 40 * k, 200), &mut out);
        }
        assert_eq!(b.lambda, LAMBDA_MIN);
    }
}
