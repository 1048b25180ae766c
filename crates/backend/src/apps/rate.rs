//! `app = "rate"`: the client writes at `rate` at the application level,
//! `bytes` or until `stop` (iperf3 -b); the server reads.

use core::time::Duration;

use mplab_proto::Instant;
use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, Resolved};
use mplab_scenario::{Rate as RateValue, Size};

use super::{Application, EndState, Sends, StreamApp, StreamSocket, EVERYWHERE};

/// One MSS-ish write per tick.
const CHUNK: u64 = 1448;

#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    rate_bps: u64,
    bytes: Option<u64>,
    /// Earliest time the next chunk may go.
    next_send: Option<Instant>,
    /// It was due to send but the socket had no room.
    blocked: bool,
}

impl Application for Rate {
    const ABOUT: About = About { name: "rate", params: &["bytes", "rate"], what: "send at `rate` at the application level (iperf3 -b)", kernel: EVERYWHERE };
    const SENDS: Sends = Sends::Client;

    fn from_fields(f: &mut Fields) -> Result<Self, PluginError> {
        let bytes = f.get::<Size>("bytes")?;
        let rate = f.get::<RateValue>("rate")?;
        f.finish()?;
        let rate = rate.ok_or_else(|| f.missing("rate"))?;
        if rate.bps() == 0 {
            return Err(f.error_at("rate", "must be greater than 0"));
        }
        Ok(Rate { rate_bps: rate.bps(), bytes: super::positive_or_until_stop(f, bytes)?, next_send: None, blocked: false })
    }

    fn resolved(&self) -> Vec<(&'static str, Resolved)> {
        vec![("rate_bps", self.rate_bps.into()), ("bytes", self.bytes.into())]
    }

    fn bounded(&self) -> Option<u64> {
        self.bytes
    }
}

impl StreamApp for Rate {
    fn send_goal(&self, end: &EndState) -> Option<u64> {
        if end.client { self.bytes } else { Some(0) }
    }

    fn recv_goal(&self, end: &EndState) -> Option<u64> {
        if end.client { None } else { self.bytes }
    }

    fn on_connected(&mut self, _: &mut EndState, now: Instant) {
        self.next_send = Some(now);
    }

    fn write(&mut self, end: &mut EndState, now: Instant, s: &mut dyn StreamSocket) {
        if !end.client {
            return super::write_all(self.send_goal(end), end, now, s);
        }
        let goal = self.send_goal(end);
        if self.blocked && end.room(goal, s) > 0 {
            // Space again after a full send buffer: go on from now (like
            // iperf3 -b, no burst to catch up the lost time).
            self.blocked = false;
            self.next_send = self.next_send.map(|t| t.max(now));
        }
        let stopped = end.stopped(now);
        while !stopped && self.next_send.is_some_and(|t| t <= now) {
            let room = end.room(goal, s);
            let n = if room > 0 { s.send(room.min(CHUNK)) } else { 0 };
            if n == 0 {
                // The send buffer is full: wait for the transport to drain
                // it (it calls pump again), not for the timer.
                self.blocked = goal.is_none_or(|g| end.sent < g);
                break;
            }
            end.sent += n;
            let gap = Duration::from_nanos(n * 8 * 1_000_000_000 / self.rate_bps.max(1));
            self.next_send = self.next_send.map(|t| t + gap);
        }
    }

    fn timer(&self, end: &EndState) -> Option<Instant> {
        if !end.client {
            return None;
        }
        if self.blocked {
            return end.stop_at;
        }
        self.next_send.map(|t| match end.stop_at {
            Some(s) => t.min(s),
            None => t,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::tests::{app, Loop};

    #[test]
    fn rate_sender_paces() {
        let mut s = Loop { space: u64::MAX / 2, ..Default::default() };
        // 8 Mbit/s: 1448 B every 1.448 ms.
        let mut a = app("kind = \"rate\"\nrate = \"8Mbit\"", true);
        a.on_connected(Instant(0), &mut s);
        let mut t = Instant(0);
        while t < Instant::from_secs_f64(1.0) {
            t = a.poll_timer().unwrap();
            a.pump(t, &mut s);
        }
        let expect = 1_000_000.0;
        assert!((a.sent as f64 - expect).abs() < 2.0 * CHUNK as f64, "sent {}", a.sent);
    }
}
