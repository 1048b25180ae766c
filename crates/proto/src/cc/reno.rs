//! TCP Reno / NewReno window growth (RFC 5681): slow start, then one MSS
//! per window of acknowledged data; halve on loss.

use super::{avoidance_bytes, AckEvent, CcState, CongestionControl};
use crate::time::Instant;

#[derive(Debug, Clone, Default)]
pub struct Reno {
    /// Bytes acknowledged in congestion avoidance since the last increase.
    acked_acc: u64,
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn on_ack(&mut self, s: &mut CcState, ev: &AckEvent<'_>) {
        let acked = avoidance_bytes(s, ev);
        reno_avoidance(s, &mut self.acked_acc, acked);
    }

    fn on_congestion_event(&mut self, s: &mut CcState, _now: Instant, in_flight: u64) {
        // Linux's tcp_reno_ssthresh: half the window, at least two segments.
        let _ = in_flight;
        s.ssthresh = (s.cwnd / 2).max(s.min_cwnd());
        s.cwnd = s.ssthresh;
        self.acked_acc = 0;
    }
}

/// Additive increase: one MSS per cwnd of acknowledged bytes.
pub(crate) fn reno_avoidance(s: &mut CcState, acc: &mut u64, acked: u64) {
    *acc += acked;
    if *acc >= s.cwnd {
        let n = *acc / s.cwnd;
        *acc -= n * s.cwnd;
        s.cwnd += n * s.mss;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(acked: u64) -> AckEvent<'static> {
        AckEvent { now: Instant(0), acked, srtt: None, min_rtt: None, cwnd_limited: true, coupling: None }
    }

    #[test]
    fn slow_start_doubles_per_window_then_linear() {
        let mut s = CcState::new(1000);
        let mut r = Reno::default();
        s.ssthresh = 40_000;
        r.on_ack(&mut s, &ack(10_000));
        assert_eq!(s.cwnd, 20_000);
        r.on_ack(&mut s, &ack(30_000));
        // 20 KB to reach ssthresh, the other 10 KB go to avoidance (not yet a full window)
        assert_eq!(s.cwnd, 40_000);
        r.on_ack(&mut s, &ack(30_000));
        assert_eq!(s.cwnd, 41_000);
    }

    #[test]
    fn halves_on_loss_and_respects_floor() {
        let mut s = CcState::new(1000);
        let mut r = Reno::default();
        s.cwnd = 50_000;
        r.on_congestion_event(&mut s, Instant(0), 50_000);
        assert_eq!((s.cwnd, s.ssthresh), (25_000, 25_000));
        r.on_rto(&mut s, Instant(0), 1000);
        assert_eq!(s.ssthresh, 12_500);
        s.cwnd = 3000;
        r.on_rto(&mut s, Instant(0), 1000);
        assert_eq!(s.ssthresh, 2000, "floor of two segments");
        assert_eq!(s.cwnd, 1000);
    }

    #[test]
    fn no_growth_when_application_limited() {
        let mut s = CcState::new(1000);
        let mut r = Reno::default();
        r.on_ack(&mut s, &AckEvent { cwnd_limited: false, ..ack(10_000) });
        assert_eq!(s.cwnd, 10_000);
    }
}
