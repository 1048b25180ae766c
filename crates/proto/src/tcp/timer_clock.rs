//! How a TCP's retransmission, loss-probe and persist timers are
//! quantised.
//!
//! mplab arms them at exact instants. Linux keeps the RTO in jiffies
//! (`icsk_rto`, rounded up from microseconds by `usecs_to_jiffies`, doubled
//! on each backoff) and arms a `timer_list`, which the timer wheel
//! (kernel/time/timer.c, `calc_wheel_index` / `calc_index`) fires at the
//! end of a bucket whose width grows with the timeout: 1 jiffy below 63
//! jiffies, 8 below 504, 64 below 4032, 512 below 32256. At HZ = 250 a
//! backed-off RTO of 17 s therefore fires up to 2 s late, depending on where
//! the jiffies counter stands; after a long outage that is most of the
//! run-to-run spread of a restored subflow's return (docs/validation.md).

use core::time::Duration;

use crate::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimerClock {
    /// Timers fire when asked.
    #[default]
    Exact,
    /// Linux's jiffies and timer wheel: `hz` ticks a second, and the
    /// jiffies counter stood at `phase` (mod the wheel's coarsest bucket
    /// used) when this clock's [`Instant`] was zero.
    Jiffies { hz: u32, phase: u32 },
}

/// Bits per wheel level (`LVL_CLK_SHIFT`) and slots per level (`LVL_SIZE`).
const LVL_CLK_SHIFT: u32 = 3;
const LVL_SIZE: u64 = 64;

impl TimerClock {
    fn jiffy_ns(hz: u32) -> u64 {
        1_000_000_000 / u64::from(hz.max(1))
    }

    /// The timeout after `backoff` doublings of `rto`, never above `max`
    /// (nor below `rto`).
    pub fn backed_off(&self, rto: Duration, backoff: u32, max: Duration) -> Duration {
        let doubled = |x: u64| x.saturating_mul(1u64 << backoff.min(16));
        match *self {
            TimerClock::Exact => rto.saturating_mul(1u32 << backoff.min(16)).min(max.max(rto)),
            TimerClock::Jiffies { hz, .. } => {
                let j = Self::jiffy_ns(hz);
                let rto_j = (rto.as_nanos() as u64).div_ceil(j);
                let max_j = (max.as_nanos() as u64).div_ceil(j).max(rto_j);
                Duration::from_nanos(doubled(rto_j).min(max_j) * j)
            }
        }
    }

    /// When a timer armed at `now` to run `after` from now fires.
    pub fn fires(&self, now: Instant, after: Duration) -> Instant {
        match *self {
            TimerClock::Exact => now + after,
            TimerClock::Jiffies { hz, phase } => {
                let j = Self::jiffy_ns(hz);
                let offset = u64::from(phase) * j;
                let clk = (now.0 + offset) / j;
                let delta = (after.as_nanos() as u64).div_ceil(j);
                let expires = clk + delta;
                let lvl = wheel_level(delta);
                let shift = lvl * LVL_CLK_SHIFT;
                // Round up to the level's granularity so the timer never
                // fires early (calc_index).
                let bucket = ((expires >> shift) + 1) << shift;
                Instant((bucket * j).saturating_sub(offset).max(now.0))
            }
        }
    }
}

/// The wheel level a timer `delta` jiffies away goes to: level n holds
/// timeouts below `LVL_START(n + 1)` = 63 << (3 n).
fn wheel_level(delta: u64) -> u32 {
    let mut lvl = 0;
    while lvl < 8 && delta >= (LVL_SIZE - 1) << (lvl * LVL_CLK_SHIFT) {
        lvl += 1;
    }
    lvl
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn exact_fires_when_asked_and_caps_the_backoff() {
        let c = TimerClock::Exact;
        assert_eq!(c.fires(Instant(5), Duration::from_millis(3)), Instant(5 + 3 * MS));
        assert_eq!(c.backed_off(Duration::from_millis(250), 3, Duration::from_secs(120)), Duration::from_secs(2));
        assert_eq!(c.backed_off(Duration::from_millis(250), 10, Duration::from_secs(1)), Duration::from_secs(1));
    }

    #[test]
    fn jiffies_round_the_rto_up_before_doubling() {
        // 261 ms is 66 jiffies at HZ = 250 (264 ms); 7 doublings of that,
        // not of 261 ms: 33.792 s.
        let c = TimerClock::Jiffies { hz: 250, phase: 0 };
        assert_eq!(c.backed_off(Duration::from_millis(261), 0, Duration::from_secs(120)), Duration::from_millis(264));
        assert_eq!(c.backed_off(Duration::from_millis(261), 7, Duration::from_secs(120)), Duration::from_millis(264 * 128));
        assert_eq!(c.backed_off(Duration::from_millis(261), 15, Duration::from_secs(120)), Duration::from_secs(120));
    }

    #[test]
    fn the_wheel_levels_are_linuxs() {
        assert_eq!(wheel_level(1), 0);
        assert_eq!(wheel_level(62), 0);
        assert_eq!(wheel_level(63), 1);
        assert_eq!(wheel_level(503), 1);
        assert_eq!(wheel_level(504), 2);
        assert_eq!(wheel_level(4031), 2);
        assert_eq!(wheel_level(4032), 3);
    }

    #[test]
    fn long_timers_fire_late_by_up_to_a_bucket_never_early() {
        let c = TimerClock::Jiffies { hz: 250, phase: 0 };
        // 17.408 s = 4352 jiffies: level 3, buckets of 512 jiffies (2.048 s).
        let after = Duration::from_millis(17_408);
        for start_ms in (0..4096).step_by(4) {
            let now = Instant(start_ms * MS);
            let at = c.fires(now, after);
            let late = at.0 - (now.0 + after.as_nanos() as u64);
            assert!(late <= 2_048 * MS, "{start_ms}: {late}");
            assert_eq!(at.0 % (2_048 * MS), 0, "on a bucket boundary");
        }
        // A short one is late by at most a jiffy or two.
        let at = c.fires(Instant(1_000 * MS + 1), Duration::from_millis(40));
        assert!(at.0 >= 1_040 * MS + 1 && at.0 <= 1_048 * MS, "{at:?}");
    }

    #[test]
    fn the_phase_moves_the_buckets() {
        let a = TimerClock::Jiffies { hz: 250, phase: 0 }.fires(Instant(0), Duration::from_secs(17));
        let b = TimerClock::Jiffies { hz: 250, phase: 256 }.fires(Instant(0), Duration::from_secs(17));
        assert_ne!(a, b);
    }
}
