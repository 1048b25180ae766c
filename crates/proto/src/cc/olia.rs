//! OLIA, the Opportunistic Linked Increases Algorithm (Khalili, Gast,
//! Popovic, Le Boudec, "MPTCP is not Pareto-optimal", CoNEXT 2012 /
//! IEEE/ACM ToN 2013; draft-khalili-mptcp-congestion-control).
//!
//! Windows w in segments. For each ACKed segment on path r:
//!
//! ```text
//! w_r += (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2  +  alpha_r / w_r
//! ```
//!
//! where, with l_p = max(bytes between the last two losses, bytes since
//! the last loss), B = the paths maximising l_p / rtt_p^2 (presumably the
//! best), M = the paths with the largest window, and |P| paths:
//! alpha_r = 1 / (|P| |B \ M|) if r is in B \ M; -1 / (|P| |M|) if r is
//! in M and B \ M is not empty; 0 otherwise. The first term is optimal
//! resource pooling (Kelly-Voice), the second re-balances towards the
//! best paths so the connection does not take more than TCP on its best
//! path (RFC 6356 goals). Decrease: halve the window (Reno). Without a
//! coupling it is Reno. The window never goes below the floor through a
//! negative alpha.

use super::coupled::{grow, paths, P};
use super::reno::reno_avoidance;
use super::{avoidance_bytes, AckEvent, CcState, CongestionControl};
use crate::time::Instant;

#[derive(Debug, Clone, Default)]
pub struct Olia {
    acc: f64,
    reno_acc: u64,
    buf: Vec<P>,
}

/// OLIA's alpha_r for path `me` (two passes over the paths, no allocation).
pub fn alpha(p: &[P], me: usize) -> f64 {
    let q = |p: &P| p.l / (p.rtt * p.rtt);
    let (mut wmax, mut qmax) = (0.0f64, 0.0f64);
    for x in p {
        wmax = wmax.max(x.w);
        qmax = qmax.max(q(x));
    }
    let (mut b_not_m, mut m) = (0u32, 0u32);
    for x in p {
        let in_m = x.w >= wmax;
        m += u32::from(in_m);
        b_not_m += u32::from(!in_m && q(x) >= qmax);
    }
    if b_not_m == 0 {
        return 0.0;
    }
    let n = p.len() as f64;
    let r = &p[me];
    if r.w >= wmax {
        -1.0 / (n * f64::from(m))
    } else if q(r) >= qmax {
        1.0 / (n * f64::from(b_not_m))
    } else {
        0.0
    }
}

/// Window increase in segments per ACKed segment on path `me`.
pub fn increase_per_segment(p: &[P], me: usize) -> f64 {
    let sum: f64 = p.iter().map(|p| p.w / p.rtt).sum();
    let r = &p[me];
    (r.w / (r.rtt * r.rtt)) / (sum * sum) + alpha(p, me) / r.w
}

impl CongestionControl for Olia {
    fn name(&self) -> &'static str {
        "olia"
    }
    fn coupled(&self) -> bool {
        true
    }

    fn on_ack(&mut self, s: &mut CcState, ev: &AckEvent<'_>) {
        let acked = avoidance_bytes(s, ev);
        if acked == 0 {
            return;
        }
        let mut buf = std::mem::take(&mut self.buf);
        match paths(ev, s, &mut buf) {
            Some(me) if buf.len() > 1 => {
                let segs = acked as f64 / s.mss as f64;
                let inc = increase_per_segment(&buf, me) * segs * s.mss as f64;
                if inc >= 0.0 {
                    grow(s, &mut self.acc, inc);
                } else {
                    self.acc += inc;
                    if self.acc <= -1.0 {
                        let whole = (-self.acc).floor();
                        self.acc += whole;
                        s.cwnd = s.cwnd.saturating_sub(whole as u64).max(s.min_cwnd());
                    }
                }
            }
            _ => reno_avoidance(s, &mut self.reno_acc, acked),
        }
        self.buf = buf;
    }

    fn on_congestion_event(&mut self, s: &mut CcState, _now: Instant, _in_flight: u64) {
        s.ssthresh = (s.cwnd / 2).max(s.min_cwnd());
        s.cwnd = s.ssthresh;
        self.acc = 0.0;
        self.reno_acc = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_and_increase_by_hand() {
        // Path 0: w 10, rtt 0.1, l 50 KB (best: 50000/0.01 = 5e6);
        // path 1: w 20, rtt 0.1, l 20 KB (largest window).
        let p = [P { w: 10.0, rtt: 0.1, l: 50_000.0 }, P { w: 20.0, rtt: 0.1, l: 20_000.0 }];
        assert!((alpha(&p, 0) - 0.5).abs() < 1e-12, "1 / (2 * 1)");
        assert!((alpha(&p, 1) + 0.5).abs() < 1e-12, "-1 / (2 * 1)");
        // sum w/rtt = 300; path 0: (10/0.01)/90000 + 0.5/10 = 0.011111 + 0.05.
        assert!((increase_per_segment(&p, 0) - (1000.0 / 90_000.0 + 0.05)).abs() < 1e-12);
        assert!((increase_per_segment(&p, 1) - (2000.0 / 90_000.0 - 0.025)).abs() < 1e-12);
        // Best path is also the largest: alpha 0 everywhere.
        let p = [P { w: 20.0, rtt: 0.1, l: 50_000.0 }, P { w: 10.0, rtt: 0.1, l: 20_000.0 }];
        assert_eq!((alpha(&p, 0), alpha(&p, 1)), (0.0, 0.0));
    }

    #[test]
    fn single_path_is_reno() {
        // (w/r^2)/(w/r)^2 = 1/w: one segment per window.
        let p = [P { w: 10.0, rtt: 0.05, l: 0.0 }];
        assert!((increase_per_segment(&p, 0) - 0.1).abs() < 1e-12);
    }
}
