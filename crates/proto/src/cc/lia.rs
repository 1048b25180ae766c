//! LIA, the Linked Increases Algorithm (RFC 6356), the first coupled
//! congestion control of MPTCP.
//!
//! In congestion avoidance each ACK of `acked` bytes on subflow i grows
//! its window (bytes) by
//!
//! ```text
//! min( alpha * acked * mss_i / cwnd_total ,  acked * mss_i / cwnd_i )
//! alpha = cwnd_total * max_i(cwnd_i / rtt_i^2) / (sum_i cwnd_i / rtt_i)^2
//! ```
//!
//! (seed 002's formula). The first term makes the connection as a whole no
//! more aggressive than one TCP on its best path (goals 1 and 2 of the
//! RFC); the second caps each subflow at what TCP would do on it. Slow
//! start and the decrease on loss are Reno's, per subflow. Without a
//! coupling (plain TCP) it is Reno.

use super::coupled::{grow, paths, P};
use super::reno::reno_avoidance;
use super::{avoidance_bytes, AckEvent, CcState, CongestionControl};
use crate::time::Instant;

#[derive(Debug, Clone, Default)]
pub struct Lia {
    acc: f64,
    reno_acc: u64,
    buf: Vec<P>,
}

/// RFC 6356's alpha for windows in any unit (the formula is homogeneous).
pub fn alpha(p: &[P]) -> f64 {
    let total: f64 = p.iter().map(|p| p.w).sum();
    let best = p.iter().map(|p| p.w / (p.rtt * p.rtt)).fold(0.0, f64::max);
    let sum: f64 = p.iter().map(|p| p.w / p.rtt).sum();
    if sum <= 0.0 {
        return 1.0;
    }
    total * best / (sum * sum)
}

/// Window increase in bytes for `acked` bytes on path `me` (windows of
/// `p` in segments of `mss` bytes).
pub fn increase(p: &[P], me: usize, acked: f64, mss: f64) -> f64 {
    let total: f64 = p.iter().map(|p| p.w).sum::<f64>() * mss;
    let own = p[me].w * mss;
    (alpha(p) * acked * mss / total).min(acked * mss / own)
}

impl CongestionControl for Lia {
    fn name(&self) -> &'static str {
        "lia"
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
            Some(me) if buf.len() > 1 => grow(s, &mut self.acc, increase(&buf, me, acked as f64, s.mss as f64)),
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
    use crate::cc::{Coupling, PathState};
    use core::time::Duration;

    fn ps(cwnd: u64, rtt_ms: u64) -> PathState {
        PathState { cwnd, ssthresh: 1, mss: 1000, srtt: Some(Duration::from_millis(rtt_ms)), loss_interval: 0 }
    }

    #[test]
    fn alpha_by_hand() {
        // Two equal paths: alpha = 2w * (w/r^2) / (2w/r)^2 = 1/2.
        let p = [P { w: 10.0, rtt: 0.1, l: 0.0 }, P { w: 10.0, rtt: 0.1, l: 0.0 }];
        assert!((alpha(&p) - 0.5).abs() < 1e-12);
        // w = 10, 20 and rtt = 0.1, 0.2: total 30, max(1000, 500) = 1000,
        // sum = 100 + 100 = 200: alpha = 30 * 1000 / 40000 = 0.75.
        let p = [P { w: 10.0, rtt: 0.1, l: 0.0 }, P { w: 20.0, rtt: 0.2, l: 0.0 }];
        assert!((alpha(&p) - 0.75).abs() < 1e-12);
        // Increase on path 0 for 1000 B acked, mss 1000: min(0.75 * 1000 * 1000 / 30000, 1000 * 1000 / 10000) = min(25, 100).
        assert!((increase(&p, 0, 1000.0, 1000.0) - 25.0).abs() < 1e-9);
    }

    #[test]
    fn coupled_growth_and_reno_without_coupling() {
        let c = Coupling { me: 0, paths: vec![ps(10_000, 100), ps(10_000, 100)] };
        let mut s = CcState::new(1000);
        s.ssthresh = 1;
        let mut l = Lia::default();
        let ev = AckEvent { now: Instant(0), acked: 10_000, srtt: Some(Duration::from_millis(100)), min_rtt: None, cwnd_limited: true, coupling: Some(&c) };
        l.on_ack(&mut s, &ev);
        // alpha 1/2, total 20 KB: 0.5 * 10000 * 1000 / 20000 = 250 bytes (Reno: 1000).
        assert_eq!(s.cwnd, 10_250);
        let mut s = CcState::new(1000);
        s.ssthresh = 1;
        l.on_ack(&mut s, &AckEvent { coupling: None, ..ev });
        assert_eq!(s.cwnd, 11_000);
    }
}
