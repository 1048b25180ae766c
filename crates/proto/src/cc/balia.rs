//! BALIA, the Balanced Linked Adaptation algorithm (Peng, Walid, Hwang,
//! Low, "Multipath TCP: Analysis, Design, and Implementation", IEEE/ACM
//! ToN 2016), as Linux's out-of-tree `mptcp_balia` implements it.
//!
//! With x_k = w_k / rtt_k (windows in segments) and
//! alpha_r = max_k x_k / x_r, each ACKed segment on path r grows w_r by
//!
//! ```text
//! (x_r / rtt_r) / (sum_k x_k)^2 * (1 + alpha_r) / 2 * (4 + alpha_r) / 5
//! ```
//!
//! and a loss on r shrinks it by `w_r / 2 * min(alpha_r, 1.5)`. It balances
//! LIA's friendliness and OLIA's responsiveness; on one path (alpha = 1)
//! it is Reno.

use super::coupled::{grow, paths, P};
use super::reno::reno_avoidance;
use super::{slow_start, AckEvent, CcState, CongestionControl};
use crate::time::Instant;

#[derive(Debug, Clone, Default)]
pub struct Balia {
    acc: f64,
    reno_acc: u64,
    buf: Vec<P>,
    /// alpha_r at the last coupled ACK (used by the decrease).
    last_alpha: Option<f64>,
}

pub fn alpha(p: &[P], me: usize) -> f64 {
    let xmax = p.iter().map(|p| p.w / p.rtt).fold(0.0, f64::max);
    xmax / (p[me].w / p[me].rtt)
}

/// Window increase in segments per ACKed segment on path `me`.
pub fn increase_per_segment(p: &[P], me: usize) -> f64 {
    let sum: f64 = p.iter().map(|p| p.w / p.rtt).sum();
    let r = &p[me];
    let a = alpha(p, me);
    (r.w / r.rtt / r.rtt) / (sum * sum) * (1.0 + a) / 2.0 * (4.0 + a) / 5.0
}

/// The window after a loss (segments).
pub fn decrease(w: f64, alpha: f64) -> f64 {
    w - w / 2.0 * alpha.min(1.5)
}

impl CongestionControl for Balia {
    fn name(&self) -> &'static str {
        "balia"
    }
    fn coupled(&self) -> bool {
        true
    }

    fn on_ack(&mut self, s: &mut CcState, ev: &AckEvent<'_>) {
        if !ev.cwnd_limited {
            return;
        }
        let mut acked = ev.acked;
        if s.in_slow_start() {
            acked = slow_start(s, acked);
        }
        let mut buf = std::mem::take(&mut self.buf);
        match paths(ev, s, &mut buf) {
            Some(me) if buf.len() > 1 => {
                self.last_alpha = Some(alpha(&buf, me));
                if acked > 0 {
                    let segs = acked as f64 / s.mss as f64;
                    grow(s, &mut self.acc, increase_per_segment(&buf, me) * segs * s.mss as f64);
                }
            }
            _ => {
                self.last_alpha = None;
                reno_avoidance(s, &mut self.reno_acc, acked);
            }
        }
        self.buf = buf;
    }

    fn on_congestion_event(&mut self, s: &mut CcState, _now: Instant, _in_flight: u64) {
        let a = self.last_alpha.unwrap_or(1.0);
        let w = decrease(s.cwnd as f64, a);
        s.ssthresh = (w as u64).max(s.min_cwnd());
        s.cwnd = s.ssthresh;
        self.acc = 0.0;
        self.reno_acc = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_by_hand() {
        // x = 100 and 50 per second: alpha_0 = 1, alpha_1 = 2.
        let p = [P { w: 10.0, rtt: 0.1, l: 0.0 }, P { w: 10.0, rtt: 0.2, l: 0.0 }];
        assert!((alpha(&p, 1) - 2.0).abs() < 1e-12);
        // path 0: (100/0.1)/150^2 * 1 * 1 = 1000/22500.
        assert!((increase_per_segment(&p, 0) - 1000.0 / 22_500.0).abs() < 1e-12);
        // path 1: (50/0.2)/22500 * 1.5 * 1.2 = 250/22500 * 1.8.
        assert!((increase_per_segment(&p, 1) - 250.0 / 22_500.0 * 1.8).abs() < 1e-12);
        assert!((decrease(20.0, 2.0) - 5.0).abs() < 1e-12, "20 - 10 * 1.5");
        assert!((decrease(20.0, 1.0) - 10.0).abs() < 1e-12);
        // One path: Reno's 1/w.
        assert!((increase_per_segment(&p[..1], 0) - 0.1).abs() < 1e-12);
    }
}
