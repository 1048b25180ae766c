//! HyStart: leaving slow start before the first loss, as Linux's CUBIC does
//! by default (net/ipv4/tcp_cubic.c, `hystart_update`; Ha and Rhee,
//! "Taming the elephants", 2008).
//!
//! Two signals, checked from a window of 16 segments on, on the RTT
//! samples of each round (one window of data):
//! - **ACK train**: ACKs that come back at most 2 ms apart have kept
//!   coming for more than half the minimum RTT (plus a 1 ms cushion for
//!   segmentation offload): the window already holds half a path's worth.
//!   Halved because without pacing the window leaves in one burst.
//! - **Delay**: the least RTT among the round's first 8 samples exceeds
//!   the minimum by an eighth of it, kept between 4 and 16 ms: a queue
//!   is building.
//!
//! Either sets ssthresh to the current window. Without it, slow start runs
//! until the bottleneck queue overflows: on a 1 Mbit/s path with a 40-packet
//! queue the window reaches about 90 segments where Linux leaves at 16 to 30.

use core::time::Duration;

use super::CcState;
use crate::time::Instant;

const LOW_WINDOW: u64 = 16;
const ACK_DELTA: Duration = Duration::from_micros(2000);
const MIN_SAMPLES: u8 = 8;
const DELAY_MIN: Duration = Duration::from_micros(4000);
const DELAY_MAX: Duration = Duration::from_micros(16000);
/// `hystart_ack_delay`'s cap: the offload cushion is at most 1 ms (it is
/// below that only when pacing faster than 2 Gbit/s).
const ACK_CUSHION: Duration = Duration::from_micros(1000);

/// One RTT sample, with where the sender stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttSample {
    pub now: Instant,
    pub rtt: Duration,
    /// Oldest unacknowledged and next sequence to send (bytes).
    pub snd_una: u64,
    pub snd_nxt: u64,
}

/// Slow-start exits by signal, as Linux counts them per host
/// (`TCPHystartTrainDetect` / `TCPHystartTrainCwnd`, and the delay pair):
/// how many, and the windows (segments) summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HyStartExits {
    pub train: u64,
    pub train_cwnd: u64,
    pub delay: u64,
    pub delay_cwnd: u64,
}

impl HyStartExits {
    pub fn add(&mut self, o: &HyStartExits) {
        self.train += o.train;
        self.train_cwnd += o.train_cwnd;
        self.delay += o.delay;
        self.delay_cwnd += o.delay_cwnd;
    }
}

#[derive(Debug, Clone, Default)]
pub struct HyStart {
    /// Slow start was left (until the next timeout).
    found: bool,
    /// Least RTT ever seen.
    delay_min: Option<Duration>,
    round_start: Instant,
    last_ack: Instant,
    /// The round ends when this is acknowledged.
    round_end: u64,
    /// Least RTT among this round's first samples, and how many.
    curr_rtt: Option<Duration>,
    samples: u8,
    /// A timeout asked for a restart at this time; the round's end is set
    /// at the next sample.
    restart: Option<Instant>,
    started: bool,
}

impl HyStart {
    fn new_round(&mut self, now: Instant, snd_nxt: u64) {
        self.round_start = now;
        self.last_ack = now;
        self.round_end = snd_nxt;
        self.curr_rtt = None;
        self.samples = 0;
    }

    /// A retransmission timeout (Linux: `cubictcp_state` on TCP_CA_Loss):
    /// slow start may be left again.
    pub fn restart(&mut self, now: Instant) {
        self.found = false;
        self.restart = Some(now);
    }

    /// An RTT sample (Linux: `cubictcp_acked`); may end slow start.
    pub fn on_sample(&mut self, s: &mut CcState, x: &RttSample) {
        if !self.started {
            self.started = true;
            self.new_round(x.now, x.snd_nxt);
        }
        if let Some(t) = self.restart.take() {
            self.new_round(t, x.snd_nxt);
        }
        let delay = x.rtt.max(Duration::from_micros(1));
        let delay_min = *self.delay_min.get_or_insert(delay);
        let delay_min = if delay < delay_min {
            self.delay_min = Some(delay);
            delay
        } else {
            delay_min
        };
        if self.found || !s.in_slow_start() {
            return;
        }
        if x.snd_una > self.round_end {
            self.new_round(x.now, x.snd_nxt);
        }
        if s.cwnd < LOW_WINDOW * s.mss {
            return;
        }
        if x.now.saturating_since(self.last_ack) <= ACK_DELTA {
            self.last_ack = x.now;
            let threshold = (delay_min + ACK_CUSHION) / 2;
            if x.now.saturating_since(self.round_start) > threshold {
                s.hystart.train += 1;
                s.hystart.train_cwnd += s.cwnd / s.mss.max(1);
                self.leave(s);
            }
        }
        let curr = self.curr_rtt.map_or(delay, |c| c.min(delay));
        self.curr_rtt = Some(curr);
        if self.samples < MIN_SAMPLES {
            self.samples += 1;
        } else if curr > delay_min + (delay_min / 8).clamp(DELAY_MIN, DELAY_MAX) {
            s.hystart.delay += 1;
            s.hystart.delay_cwnd += s.cwnd / s.mss.max(1);
            self.leave(s);
        }
    }

    fn leave(&mut self, s: &mut CcState) {
        self.found = true;
        s.ssthresh = s.cwnd;
    }

    /// Whether slow start was left by HyStart since the last timeout.
    pub fn found(&self) -> bool {
        self.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn sample(ms: f64, rtt_ms: f64, una: u64, nxt: u64) -> RttSample {
        RttSample { now: Instant((ms * 1e6) as u64), rtt: Duration::from_secs_f64(rtt_ms / 1e3), snd_una: una, snd_nxt: nxt }
    }

    #[test]
    fn a_growing_queue_ends_slow_start() {
        let mut h = HyStart::default();
        let mut s = CcState::new(MSS);
        s.cwnd = 20 * MSS;
        // ACKs 5 ms apart (no train), the RTT 40 ms, then 46 ms (> 40 + 5).
        let mut t = 0.0;
        for i in 0..9 {
            h.on_sample(&mut s, &sample(t, 40.0, i * MSS, 40 * MSS));
            t += 5.0;
        }
        assert!(!h.found() && s.in_slow_start());
        // The next round: the queue adds 6 ms to every sample.
        for i in 0..9 {
            h.on_sample(&mut s, &sample(t, 46.0, (41 + i) * MSS, 80 * MSS));
            t += 5.0;
        }
        assert!(h.found(), "delay signal");
        assert_eq!(s.ssthresh, s.cwnd);
        assert_eq!(s.hystart, HyStartExits { delay: 1, delay_cwnd: 20, ..Default::default() });
    }

    #[test]
    fn small_windows_and_steady_delay_do_not_end_it() {
        let mut h = HyStart::default();
        let mut s = CcState::new(MSS);
        s.cwnd = 10 * MSS; // below the low window
        for i in 0..40 {
            h.on_sample(&mut s, &sample(i as f64 * 5.0, 40.0 + i as f64, i * MSS, 100 * MSS));
        }
        assert!(!h.found(), "window below 16 segments");
        s.cwnd = 20 * MSS;
        let mut h = HyStart::default();
        for i in 0..40 {
            h.on_sample(&mut s, &sample(i as f64 * 5.0, 40.0, i * MSS, 100 * MSS));
        }
        assert!(!h.found(), "RTT steady, ACKs spread out");
    }

    #[test]
    fn a_long_ack_train_ends_slow_start() {
        let mut h = HyStart::default();
        let mut s = CcState::new(MSS);
        s.cwnd = 32 * MSS;
        // min RTT 20 ms: a train of ACKs 1 ms apart lasting over 10.5 ms.
        h.on_sample(&mut s, &sample(0.0, 20.0, 0, 64 * MSS));
        for i in 1..=10 {
            h.on_sample(&mut s, &sample(i as f64, 20.0, i * MSS, 64 * MSS));
        }
        assert!(!h.found(), "10 ms of train is not past (20 + 1) / 2");
        h.on_sample(&mut s, &sample(11.0, 20.0, 11 * MSS, 64 * MSS));
        assert!(h.found(), "train");
        assert_eq!(s.hystart, HyStartExits { train: 1, train_cwnd: 32, ..Default::default() });
    }

    #[test]
    fn a_timeout_allows_it_again() {
        let mut h = HyStart::default();
        let mut s = CcState::new(MSS);
        s.cwnd = 32 * MSS;
        for i in 0..=11 {
            h.on_sample(&mut s, &sample(i as f64, 20.0, i * MSS, 64 * MSS));
        }
        assert!(h.found());
        h.restart(Instant(100_000_000));
        assert!(!h.found());
    }
}
