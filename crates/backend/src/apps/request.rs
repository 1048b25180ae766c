//! `app = "request"`: the client sends `count` requests of `request_size`
//! bytes, one every `interval` (back to back when an answer comes later),
//! the server answers each with `response_size` bytes; the results are
//! the requests' latencies.

use core::time::Duration;

use mplab_proto::Instant;
use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, Resolved};
use mplab_scenario::{Duration as DurationValue, Size};

use super::{Application, EndState, Sends, StreamApp, StreamSocket, EVERYWHERE};

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    request: u64,
    response: u64,
    /// None: until stop.
    count: Option<u64>,
    interval: Duration,
    /// When the request being answered went.
    started: Option<Instant>,
    /// When the first request went (request k is due `k * interval` after
    /// it), and the next one's due time while it waits.
    first: Option<Instant>,
    next: Option<Instant>,
    /// Bytes still to send (a request or a response).
    owed: u64,
    /// Server: requests answered (or being answered) so far.
    promised: u64,
}

impl Application for Request {
    const ABOUT: About = About {
        name: "request",
        params: &["request_size", "response_size", "count", "interval"],
        what: "`count` request/response exchanges, one every `interval`; the results are their latencies",
        kernel: EVERYWHERE,
    };
    const SENDS: Sends = Sends::Both;
    const TIMED: bool = true;

    fn from_fields(f: &mut Fields) -> Result<Self, PluginError> {
        let request = f.get::<Size>("request_size")?;
        let response = f.get::<Size>("response_size")?;
        let count = f.get::<u64>("count")?;
        let interval = f.get::<DurationValue>("interval")?;
        f.finish()?;
        if count == Some(0) {
            return Err(f.error_at("count", "must be at least 1 (leave it out to repeat until stop)"));
        }
        Ok(Request {
            request: super::need(f, request, "request_size")?,
            response: super::need(f, response, "response_size")?,
            count,
            interval: Duration::from_nanos(interval.unwrap_or_default().as_nanos()),
            started: None,
            first: None,
            next: None,
            owed: 0,
            promised: 0,
        })
    }

    fn resolved(&self) -> Vec<(&'static str, Resolved)> {
        vec![
            ("request_bytes", self.request.into()),
            ("response_bytes", self.response.into()),
            ("count", self.count.into()),
            ("interval_ns", (self.interval.as_nanos() as u64).into()),
        ]
    }

    fn completed(&self, _: u64, requests_done: u64) -> bool {
        self.count.is_some_and(|c| requests_done >= c)
    }
}

impl Request {
    fn count(&self) -> u64 {
        self.count.unwrap_or(u64::MAX)
    }

    /// Client: the responses now complete; server: the requests to answer.
    fn progress(&mut self, end: &mut EndState, now: Instant) {
        let count = self.count();
        if end.client {
            // A response is complete when the received total crosses a
            // multiple of `response`.
            let answered = end.rx.delivered / self.response.max(1);
            while end.requests_done < answered.min(count) {
                end.requests_done += 1;
                if let Some(t) = self.started.take() {
                    end.latencies.push(now - t);
                }
                if end.requests_done < count {
                    // Request k is due `k * interval` after the first (back
                    // to back when the answer comes later than that).
                    let due = self.first.map_or(now, |t| t + self.interval * end.requests_done.min(u64::from(u32::MAX)) as u32);
                    if due <= now {
                        self.owed += self.request;
                        self.started = Some(now);
                    } else {
                        self.next = Some(due);
                    }
                }
            }
        } else {
            // Answer every request that has fully arrived.
            let asked = end.rx.delivered / self.request.max(1);
            if asked > self.promised {
                self.owed += (asked - self.promised) * self.response;
                self.promised = asked;
            }
        }
    }
}

impl StreamApp for Request {
    fn send_goal(&self, _: &EndState) -> Option<u64> {
        None
    }

    fn recv_goal(&self, end: &EndState) -> Option<u64> {
        (end.client && end.requests_done >= self.count()).then_some(end.rx.delivered)
    }

    fn on_connected(&mut self, end: &mut EndState, now: Instant) {
        if end.client {
            self.owed = self.request;
            self.started = Some(now);
            self.first = Some(now);
        }
    }

    fn on_read(&mut self, end: &mut EndState, now: Instant, got: u64) {
        if got > 0 {
            self.progress(end, now);
        }
        if self.next.is_some_and(|t| t <= now) && !end.stopped(now) {
            self.next = None;
            self.owed += self.request;
            self.started = Some(now);
        }
    }

    fn write(&mut self, end: &mut EndState, _: Instant, s: &mut dyn StreamSocket) {
        if self.owed > 0 {
            let n = s.send(self.owed.min(s.send_space()));
            self.owed -= n;
            end.sent += n;
        }
    }

    /// The client when its last request is answered; either end when its
    /// peer closed and nothing is owed to it.
    fn closes(&self, end: &EndState, _: Instant, s: &dyn StreamSocket) -> bool {
        self.owed == 0 && ((end.client && end.requests_done >= self.count()) || s.peer_closed())
    }

    fn timer(&self, end: &EndState) -> Option<Instant> {
        if end.client { self.next } else { None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::tests::{app, Loop};

    #[test]
    fn requests_are_spaced_by_the_interval() {
        // The loop socket answers a request at once (what is sent is read
        // back), so the client issues request k at k * 200 ms, no earlier.
        let mut s = Loop { space: u64::MAX / 2, ..Default::default() };
        let mut a = app("kind = \"request\"\nrequest_size = 100\nresponse_size = 100\ncount = 3\ninterval = \"200ms\"", true);
        a.on_connected(Instant(0), &mut s);
        a.pump(Instant(1_000), &mut s);
        assert_eq!((a.requests_done, a.sent), (1, 100));
        assert_eq!(a.poll_timer(), Some(Instant(200_000_000)), "request 1 waits for its slot");
        a.pump(Instant(100_000_000), &mut s);
        assert_eq!(a.sent, 100);
        let mut at = vec![];
        while let Some(t) = a.poll_timer() {
            a.pump(t, &mut s);
            a.pump(t, &mut s);
            at.push(t.0 / 1_000_000);
        }
        assert_eq!(at, [200, 400]);
        assert_eq!(a.requests_done, 3);
        assert!(s.closed);
    }
}
