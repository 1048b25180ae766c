//! Round-trip time estimation and the retransmission timeout (RFC 6298),
//! with Linux's floor: the RTO is at least srtt + min_rto, so a path with a
//! tiny variance still tolerates a delayed ACK.
//!
//! The `linux` profile estimates the variation as Linux does
//! (net/ipv4/tcp_input.c `tcp_rtt_estimator`, `__tcp_set_rto`): RTT
//! samples below the smoothed RTT move the deviation with an eighth of the
//! usual gain, and the RTO adds to srtt the largest deviation of the last
//! round of data (at least min_rto), which then decays by a quarter of its
//! excess per round. A path whose queue fills and drains keeps the RTO of
//! its worst round: on a 1 Mbit/s path with a 40-packet queue `ss` shows
//! rto 1020 ms at srtt 431 ms, where RFC 6298's rule gives about 610.

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
    /// Linux's variation (`tcp_rtt_estimator`) when set.
    linux: Option<LinuxVar>,
}

/// Linux's deviation state: `mdev_us` (four times the mean deviation),
/// `mdev_max_us` (its largest this round), `rttvar_us` (what the RTO adds
/// to srtt) and `rtt_seq` (the round ends when snd_una passes it).
#[derive(Debug, Clone, Copy, Default)]
struct LinuxVar {
    mdev: Duration,
    mdev_max: Duration,
    rttvar: Duration,
    rtt_seq: u64,
}

impl RttEstimator {
    pub fn new(initial_rto: Duration, min_rto: Duration) -> Self {
        RttEstimator { srtt: None, rttvar: Duration::ZERO, min_rtt: None, latest: None, initial_rto, min_rto, max_rto: Duration::from_secs(120), linux: None }
    }

    /// Linux's estimator of the variation from now on (see the module).
    pub fn use_linux_variation(&mut self) {
        self.linux = Some(LinuxVar::default());
    }

    /// A sample taken when the sender stood at `snd_una` / `snd_nxt`: the
    /// Linux variation counts rounds of data by them.
    pub fn sample_at(&mut self, r: Duration, snd_una: u64, snd_nxt: u64) {
        let Some(mut v) = self.linux else {
            self.sample(r);
            return;
        };
        self.record(r);
        match self.srtt {
            None => {
                self.srtt = Some(r);
                v.mdev = r * 2;
                v.rttvar = v.mdev.max(self.min_rto);
                v.mdev_max = v.rttvar;
                v.rtt_seq = snd_nxt;
            }
            Some(s) => {
                let quarter = v.mdev / 4;
                if r < s {
                    // A falling RTT: an eighth of the gain (Eifel-like).
                    let err = s - r;
                    v.mdev = if err > quarter { v.mdev + (err - quarter) / 8 } else { v.mdev - (quarter - err) };
                } else {
                    let err = r - s;
                    v.mdev = if err > quarter { v.mdev + (err - quarter) } else { v.mdev - (quarter - err) };
                }
                self.srtt = Some(if r < s { s - (s - r) / 8 } else { s + (r - s) / 8 });
                if v.mdev > v.mdev_max {
                    v.mdev_max = v.mdev;
                    v.rttvar = v.rttvar.max(v.mdev_max);
                }
                if snd_una > v.rtt_seq {
                    if v.mdev_max < v.rttvar {
                        v.rttvar -= (v.rttvar - v.mdev_max) / 4;
                    }
                    v.rtt_seq = snd_nxt;
                    v.mdev_max = self.min_rto;
                }
            }
        }
        self.rttvar = v.mdev / 4;
        self.linux = Some(v);
    }

    /// The latest and least samples, whichever estimator runs.
    fn record(&mut self, r: Duration) {
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
    }

    pub fn sample(&mut self, r: Duration) {
        self.record(r);
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
        match (self.srtt, self.linux) {
            (None, _) => self.initial_rto,
            (Some(s), Some(v)) => (s + v.rttvar).min(Duration::from_secs(120)),
            (Some(s), None) => (s + (self.rttvar * 4).max(self.min_rto)).min(Duration::from_secs(120)),
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

    /// Linux's variation: the first sample gives rttvar = max(2 rtt,
    /// min_rto); a rising sample raises the round's maximum and the RTO
    /// with it, a falling one barely moves it; at the end of a round the
    /// RTO decays by a quarter of its excess over that round's maximum.
    #[test]
    fn follows_linux_tcp_rtt_estimator() {
        let ms = Duration::from_millis;
        let mut e = RttEstimator::new(Duration::from_secs(1), ms(200));
        e.use_linux_variation();
        e.sample_at(ms(100), 0, 10);
        assert_eq!(e.rto(), ms(100) + ms(200), "rttvar = max(2 x 100, 200)");
        // Within the round: 500 ms lands, err 400 over mdev/4 = 50: mdev
        // 200 + 350 = 550, the new maximum, and the RTO's variation.
        e.sample_at(ms(500), 5, 20);
        assert_eq!(e.srtt(), Some(ms(150)));
        assert_eq!(e.rto(), ms(150) + ms(550));
        // Falling to 150 (err 0 below mdev/4 = 137.5): mdev drops by
        // 137.5; still the same round, the RTO keeps the maximum.
        e.sample_at(ms(150), 8, 20);
        assert_eq!(e.rto(), ms(150) + ms(550));
        // The round (rtt_seq 10) is over: the RTO's variation decays by a
        // quarter of its excess over the round's maximum (550: none), and
        // the next round's maximum restarts at min_rto.
        e.sample_at(ms(150), 12, 30);
        assert_eq!(e.rto(), ms(150) + ms(550));
        // Another round passes at a steady 150 ms: mdev has fallen to
        // 232.03 ms (a quarter of itself per sample), this round's maximum;
        // the variation decays by a quarter of its excess over it:
        // 550 - (550 - 232.03) / 4 = 470.51 ms.
        e.sample_at(ms(150), 31, 40);
        let want = ms(150) + Duration::from_nanos(470_507_812);
        assert!(e.rto().abs_diff(want) < Duration::from_micros(1), "{:?}", e.rto());
        // Against RFC 6298 on the same samples.
        let mut r = RttEstimator::new(Duration::from_secs(1), ms(200));
        for (x, una, nxt) in [(100, 0, 10), (500, 5, 20), (150, 8, 20), (150, 12, 30), (150, 31, 40)] {
            r.sample_at(ms(x), una, nxt);
        }
        assert!(r.rto() < e.rto(), "{:?} vs {:?}", r.rto(), e.rto());
    }
}
