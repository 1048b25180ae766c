//! Round-trip time estimation and the retransmission timeout (RFC 6298),
//! with Linux's floor: the RTO is at least srtt + min_rto, so a path with a
//! tiny variance still tolerates a delayed ACK.

use core::time::Duration;

#[derive(Debug, Clone)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    min_rtt: Option<Duration>,
    latest: Option<Duration>,
    initial_rto: Duration,
    min_rto: Duration,
    max_rto: Duration,
}

impl RttEstimator {
    pub fn new(initial_rto: Duration, min_rto: Duration) -> Self {
        RttEstimator { srtt: None, rttvar: Duration::ZERO, min_rtt: None, latest: None, initial_rto, min_rto, max_rto: Duration::from_secs(120) }
    }

    pub fn sample(&mut self, r: Duration) {
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                // rttvar = 3/4 rttvar + 1/4 |srtt - r|; srtt = 7/8 srtt + 1/8 r
                let err = s.abs_diff(r);
                self.rttvar = (self.rttvar * 3 + err) / 4;
                self.srtt = Some((s * 7 + r) / 8);
            }
        }
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }
    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }

    /// The RTO before any backoff.
    pub fn rto(&self) -> Duration {
        match self.srtt {
            None => self.initial_rto,
            Some(s) => (s + (self.rttvar * 4).max(self.min_rto)).min(Duration::from_secs(120)),
        }
    }

    /// The RTO after `backoff` consecutive timeouts (doubling, capped).
    pub fn backed_off(&self, backoff: u32) -> Duration {
        super::TimerClock::Exact.backed_off(self.rto(), backoff, self.max_rto)
    }

    /// The ceiling of the backoff.
    pub fn max_backoff(&self) -> Duration {
        self.max_rto
    }

    /// Limits how far backoff can push the timeout (not below the RTO).
    pub fn set_max_backoff(&mut self, max: Duration) {
        self.max_rto = max.min(Duration::from_secs(120));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc6298() {
        let mut e = RttEstimator::new(Duration::from_secs(1), Duration::from_millis(200));
        assert_eq!(e.rto(), Duration::from_secs(1));
        e.sample(Duration::from_millis(100));
        assert_eq!(e.srtt(), Some(Duration::from_millis(100)));
        assert_eq!(e.rttvar(), Duration::from_millis(50));
        assert_eq!(e.rto(), Duration::from_millis(300));
        e.sample(Duration::from_millis(200));
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(e.rttvar(), Duration::from_micros(62_500));
        assert_eq!(e.min_rtt(), Some(Duration::from_millis(100)));
        assert_eq!(e.backed_off(2), e.rto() * 4);
        assert_eq!(e.backed_off(40), Duration::from_secs(120));
    }
}
