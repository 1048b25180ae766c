//! Retransmission timeout of one destination (RFC 9260 6.3.1): SRTT and
//! RTTVAR with alpha = 1/8, beta = 1/4, RTO = SRTT + 4 RTTVAR clamped to
//! [RTO.min, RTO.max], doubled on each expiry (6.3.3 E2).

use core::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rto {
    srtt: Option<Duration>,
    rttvar: Duration,
    rto: Duration,
    min: Duration,
    max: Duration,
}

/// Clock granularity G of RFC 9260 6.3.1 C3: RTTVAR never drops below it.
const GRANULARITY: Duration = Duration::from_millis(1);

impl Rto {
    pub fn new(initial: Duration, min: Duration, max: Duration) -> Rto {
        Rto { srtt: None, rttvar: Duration::ZERO, rto: initial.clamp(min, max.max(min)), min, max: max.max(min) }
    }
    pub fn on_sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let diff = s.abs_diff(r);
                self.rttvar = (self.rttvar * 3 + diff) / 4;
                self.srtt = Some((s * 7 + r) / 8);
            }
        }
        if self.rttvar < GRANULARITY {
            self.rttvar = GRANULARITY;
        }
        let s = self.srtt.unwrap_or(r);
        self.rto = (s + 4 * self.rttvar).clamp(self.min, self.max);
    }
    pub fn backoff(&mut self) {
        self.rto = (self.rto * 2).min(self.max);
    }
    pub fn rto(&self) -> Duration {
        self.rto
    }
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc_9260_6_3_1() {
        let ms = Duration::from_millis;
        let mut r = Rto::new(ms(1000), ms(100), ms(60_000));
        assert_eq!(r.rto(), ms(1000));
        r.on_sample(ms(200));
        // SRTT = 200, RTTVAR = 100, RTO = 600.
        assert_eq!(r.rto(), ms(600));
        r.on_sample(ms(200));
        // RTTVAR = 75, SRTT = 200.
        assert_eq!(r.rto(), ms(500));
        r.backoff();
        assert_eq!(r.rto(), ms(1000));
        let mut r = Rto::new(ms(1000), ms(1000), ms(60_000));
        r.on_sample(ms(20));
        assert_eq!(r.rto(), ms(1000), "RTO.min holds");
    }
}
