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
//! If `X * lambda > send_window - outstanding - MSS_s * (inflight_s + 1)`,
//! sending on x_s would leave too little of the connection-level send
//! window for x_f (head-of-line blocking at the receiver): wait for x_f.
//!
//! Simplification: the paper adapts `lambda` (+/- 0.1 per observed
//! blocking event); here it is fixed at 1.0 (the paper's initial value).

use super::{active, fastest, SchedContext, Scheduler, SubflowInfo};

#[derive(Debug, Clone)]
pub struct Blest {
    pub lambda: f64,
}

impl Default for Blest {
    fn default() -> Self {
        Blest { lambda: 1.0 }
    }
}

/// Bytes the fast subflow can send during one RTT of the slow one.
pub fn fast_bytes(f: &SubflowInfo, s: &SubflowInfo) -> f64 {
    let (Some(rf), Some(rs)) = (f.srtt, s.srtt) else { return 0.0 };
    let ratio = rs.as_secs_f64() / rf.as_secs_f64().max(1e-9);
    f.mss as f64 * (f.cwnd_segments() + (ratio - 1.0) / 2.0) * ratio
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
        let x = fast_bytes(f, s);
        let inflight_s = (s.in_flight / s.mss.max(1)) as f64;
        let space = cx.send_window as f64 - cx.outstanding as f64 - s.mss as f64 * (inflight_s + 1.0);
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
        // Window 100 KB, 50 KB outstanding: 50 KB - 1400 < 64.4 KB: wait.
        b.schedule(&[f, s], &SchedContext { send_window: 100_000, outstanding: 50_000, ..cx() }, &mut out);
        assert!(out.is_empty());
        // 1 MB window: plenty of room, use the slow subflow.
        b.schedule(&[f, s], &SchedContext { send_window: 1_000_000, outstanding: 50_000, ..cx() }, &mut out);
        assert_eq!(out, [1]);
    }
}
