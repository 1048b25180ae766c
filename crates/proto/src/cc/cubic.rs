//! CUBIC (RFC 9438; Linux's default before BBR): the window follows a cubic
//! function of the time since the last loss, centred on the window where
//! that loss happened, so it regains its old rate quickly on long fat
//! paths, with a Reno-friendly lower bound on short ones.

use super::hystart::{HyStart, RttSample};
use super::{avoidance_bytes, AckEvent, CcState, CongestionControl};
use crate::time::Instant;

/// Scaling constant C (segments / s^3).
const C: f64 = 0.4;
/// Multiplicative decrease factor.
const BETA: f64 = 0.7;

#[derive(Debug, Clone, Default)]
pub struct Cubic {
    /// Window (segments) before the last reduction.
    w_max: f64,
    /// Start of the current avoidance epoch.
    epoch: Option<Instant>,
    /// Time (s) the cubic function takes to return to `w_max`.
    k: f64,
    /// Reno-friendly window estimate (segments) for this epoch.
    w_est: f64,
    /// Byte accumulator for fractional increases.
    acc: f64,
    /// Leaves slow start before the first loss (on in Linux's CUBIC).
    hystart: HyStart,
}

impl Cubic {
    fn segments(s: &CcState) -> f64 {
        s.cwnd as f64 / s.mss as f64
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn on_rtt_sample(&mut self, s: &mut CcState, x: &RttSample) {
        // Linux ignores the samples of the first second of an avoidance
        // epoch (right after a recovery).
        if self.epoch.is_some_and(|e| x.now.saturating_since(e) < core::time::Duration::from_secs(1)) {
            return;
        }
        self.hystart.on_sample(s, x);
    }

    fn on_ack(&mut self, s: &mut CcState, ev: &AckEvent<'_>) {
        let acked = avoidance_bytes(s, ev);
        if acked == 0 {
            return;
        }
        let cwnd = Self::segments(s);
        let epoch = *self.epoch.get_or_insert_with(|| {
            // A new epoch starts at the first avoidance ACK after a loss (or
            // after slow start ended without one).
            if self.w_max <= cwnd {
                self.k = 0.0;
                self.w_max = cwnd;
            } else {
                self.k = ((self.w_max - cwnd) / C).cbrt();
            }
            self.w_est = cwnd;
            ev.now
        });
        // RFC 9438 4.2: target the window one RTT ahead.
        let rtt = ev.min_rtt.or(ev.srtt).map(|d| d.as_secs_f64()).unwrap_or(0.1);
        let t = (ev.now - epoch).as_secs_f64() + rtt;
        let target = C * (t - self.k).powi(3) + self.w_max;
        // Reno-friendly region (RFC 9438 4.3): what AIMD with the same beta
        // would have reached.
        self.w_est += 3.0 * (1.0 - BETA) / (1.0 + BETA) * (acked as f64 / s.mss as f64) / cwnd;
        let goal = target.max(self.w_est);
        // Grow by (goal - cwnd) / cwnd segments per acknowledged segment, at
        // most half a segment per segment (1.5x per RTT); on the plateau
        // above the target, one segment per 100 windows (Linux's choice).
        let per_seg = if goal > cwnd { ((goal - cwnd) / cwnd).min(0.5) } else { 0.01 / cwnd };
        self.acc += per_seg * acked as f64;
        if self.acc >= s.mss as f64 {
            let n = (self.acc / s.mss as f64) as u64;
            s.cwnd += n * s.mss;
            self.acc -= (n * s.mss) as f64;
        }
    }

    fn on_congestion_event(&mut self, s: &mut CcState, _now: Instant, _in_flight: u64) {
        let cwnd = Self::segments(s);
        // Fast convergence: release bandwidth to newer flows when the window
        // shrank since the last loss.
        self.w_max = if cwnd < self.w_max { cwnd * (1.0 + BETA) / 2.0 } else { cwnd };
        self.epoch = None;
        self.acc = 0.0;
        s.ssthresh = ((s.cwnd as f64 * BETA) as u64).max(s.min_cwnd());
        s.cwnd = s.ssthresh;
    }

    fn on_rto(&mut self, s: &mut CcState, now: Instant, in_flight: u64) {
        self.on_congestion_event(s, now, in_flight);
        s.cwnd = s.mss;
        self.hystart.restart(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    fn ack(now: Instant, acked: u64) -> AckEvent<'static> {
        AckEvent { now, acked, srtt: Some(Duration::from_millis(100)), min_rtt: Some(Duration::from_millis(100)), cwnd_limited: true, coupling: None }
    }

    /// Drive one window of ACKs per RTT and return the cwnd after `rtts`.
    fn run(cc: &mut dyn CongestionControl, s: &mut CcState, start: Instant, rtts: u32) -> Instant {
        let mut now = start;
        for _ in 0..rtts {
            let segs = s.cwnd / s.mss;
            for _ in 0..segs {
                cc.on_ack(s, &ack(now, s.mss));
            }
            now += Duration::from_millis(100);
        }
        now
    }

    #[test]
    fn reduces_by_beta() {
        let mut s = CcState::new(1000);
        s.cwnd = 100_000;
        let mut c = Cubic::default();
        c.on_congestion_event(&mut s, Instant(0), 100_000);
        assert_eq!(s.cwnd, 70_000);
        assert_eq!(s.ssthresh, 70_000);
    }

    #[test]
    fn regains_w_max_near_k_and_faster_than_reno_on_a_long_fat_path() {
        // A window of 1000 segments (e.g. 120 Mbit/s x 100 ms) after one loss.
        let mut s = CcState::new(1000);
        s.cwnd = 1_000_000;
        let mut c = Cubic::default();
        let w = s.cwnd;
        c.on_congestion_event(&mut s, Instant(0), w);
        let k = ((1000.0 * (1.0 - BETA)) / C).cbrt(); // ~9.1 s
        let now = run(&mut c, &mut s, Instant(0), (k * 10.0) as u32 + 2);
        assert!(s.cwnd >= 980_000, "cubic after K: {}", s.cwnd);
        assert!(now.as_secs_f64() < 10.0);

        let mut r = CcState::new(1000);
        r.cwnd = 1_000_000;
        let mut reno = crate::cc::Reno::default();
        let w = r.cwnd;
        reno.on_congestion_event(&mut r, Instant(0), w);
        run(&mut reno, &mut r, Instant(0), (k * 10.0) as u32 + 2);
        assert!(r.cwnd < 700_000, "reno needs ~500 RTTs to recover: {}", r.cwnd);
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut s = CcState::new(1000);
        s.cwnd = 100_000;
        let mut c = Cubic::default();
        let w = s.cwnd;
        c.on_congestion_event(&mut s, Instant(0), w);
        assert_eq!(c.w_max, 100.0);
        let w = s.cwnd;
        c.on_congestion_event(&mut s, Instant(0), w); // loss again at 70
        assert!((c.w_max - 70.0 * 0.85).abs() < 1e-9);
    }
}
