//! Applications: what iperf, iperf3 -b, wget and a request/response client
//! did in the seeds' experiments, as small state machines over a stream
//! socket. They never see packets; the host stack calls them when the socket
//! is connected, writable, readable, or when their own timer fires.
//!
//! Every receiver checks what it got: each chunk must start exactly where
//! the previous one ended (stream-offset continuity), and the host stack
//! flags any payload whose sender-side stream offset differs from where the
//! receiver placed it. A run therefore proves no byte was lost, duplicated
//! or misplaced.

use core::ops::Range;
use core::time::Duration;

use mplab_proto::Instant;

/// What an application needs from a stream socket (TCP or MPTCP alike).
pub trait StreamSocket {
    /// Bytes the socket accepts right now (send buffer space).
    fn send_space(&self) -> u64;
    /// Queues `n` bytes of the stream; returns how many were accepted.
    fn send(&mut self, n: u64) -> u64;
    /// Contiguous bytes ready to be read.
    fn readable(&self) -> u64;
    /// Consumes up to `max` bytes; returns their stream offsets.
    fn recv(&mut self, max: u64) -> Range<u64>;
    /// Half-close after all queued data (FIN / DATA_FIN).
    fn close(&mut self);
    /// The peer closed its side and everything it sent was read.
    fn peer_closed(&self) -> bool;
}

/// Application kinds, in backend-neutral terms.
#[derive(Debug, Clone, PartialEq)]
pub enum AppKind {
    /// Send as fast as the transport allows; `bytes` or until stopped.
    Bulk { bytes: Option<u64> },
    /// Send at `rate_bps` at the application level (iperf3 -b).
    Rate { rate_bps: u64, bytes: Option<u64> },
    /// The server sends `bytes` to the client; completion time is recorded.
    Download { bytes: u64 },
    /// `count` requests of `request` bytes, each answered by `response`
    /// bytes, spaced by `interval` (0 = back-to-back).
    Request { request: u64, response: u64, count: u64, interval: Duration },
    /// No application of its own on the stream: the flow's datagram
    /// application ([`crate::datagram::DatagramApp`]) or the tunnel's
    /// gateways drive the socket; this end only reads what arrives.
    Driven,
}

/// Receiver-side verification and counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Receiver {
    pub delivered: u64,
    /// Set on the first chunk that did not start where the last one ended.
    pub gap_at: Option<u64>,
}

impl Receiver {
    /// Reads everything readable, checking continuity; returns bytes read.
    pub fn drain(&mut self, s: &mut dyn StreamSocket) -> u64 {
        let mut total = 0;
        loop {
            let avail = s.readable();
            if avail == 0 {
                return total;
            }
            let r = s.recv(avail);
            if r.is_empty() {
                return total;
            }
            if r.start != self.delivered && self.gap_at.is_none() {
                self.gap_at = Some(self.delivered);
            }
            self.delivered = r.end.max(self.delivered);
            total += r.end - r.start;
        }
    }

    pub fn ok(&self) -> bool {
        self.gap_at.is_none()
    }
}

/// The application on one end of a flow.
#[derive(Debug, Clone)]
pub struct App {
    pub kind: AppKind,
    /// True on the end that opened the connection (scenario `from`).
    pub client: bool,
    pub stop_at: Option<Instant>,
    /// Bytes handed to the socket.
    pub sent: u64,
    pub rx: Receiver,
    /// Rate sender: earliest time the next chunk may go.
    next_send: Option<Instant>,
    /// Request/response: requests issued and answered, and their latencies.
    pub requests_done: u64,
    request_started: Option<Instant>,
    /// Request client: when the first request went (request k is due
    /// `k * interval` after it), and the next one's due time while it waits.
    first_request: Option<Instant>,
    next_request: Option<Instant>,
    pub latencies: Vec<Duration>,
    /// Request/response: bytes still to send (a request or a response).
    owed: u64,
    /// Server side: requests answered (or being answered) so far.
    promised: u64,
    pub completed_at: Option<Instant>,
    closed: bool,
    /// Rate sender: it was due to send but the socket had no room.
    blocked: bool,
}

/// Chunk size of the rate-limited sender: one MSS-ish write per tick.
const RATE_CHUNK: u64 = 1448;

impl App {
    pub fn new(kind: AppKind, client: bool, stop_at: Option<Instant>) -> App {
        App {
            kind,
            client,
            stop_at,
            sent: 0,
            rx: Receiver::default(),
            next_send: None,
            requests_done: 0,
            request_started: None,
            first_request: None,
            next_request: None,
            latencies: Vec::new(),
            owed: 0,
            promised: 0,
            completed_at: None,
            closed: false,
            blocked: false,
        }
    }

    /// Total bytes this end will send, if bounded.
    fn send_goal(&self) -> Option<u64> {
        match (&self.kind, self.client) {
            (AppKind::Bulk { bytes }, true) | (AppKind::Rate { bytes, .. }, true) => *bytes,
            (AppKind::Bulk { .. }, false) | (AppKind::Rate { .. }, false) => Some(0),
            (AppKind::Download { .. }, true) => Some(0),
            (AppKind::Download { bytes }, false) => Some(*bytes),
            (AppKind::Request { .. }, _) => None,
            (AppKind::Driven, _) => Some(0),
        }
    }

    /// Bytes this end expects to receive in a bounded transfer.
    fn recv_goal(&self) -> Option<u64> {
        match (&self.kind, self.client) {
            (AppKind::Bulk { bytes }, false) | (AppKind::Rate { bytes, .. }, false) => *bytes,
            (AppKind::Download { bytes }, true) => Some(*bytes),
            (AppKind::Request { count, .. }, true) if self.requests_done >= *count => Some(self.rx.delivered),
            _ => None,
        }
    }

    fn stopped(&self, now: Instant) -> bool {
        self.stop_at.is_some_and(|t| now >= t)
    }

    /// Called when the connection is established.
    pub fn on_connected(&mut self, now: Instant, s: &mut dyn StreamSocket) {
        if let AppKind::Rate { .. } = self.kind {
            self.next_send = Some(now);
        }
        if let AppKind::Request { request, .. } = self.kind {
            if self.client {
                self.owed = request;
                self.request_started = Some(now);
                self.first_request = Some(now);
            }
        }
        self.pump(now, s);
    }

    /// Called whenever the socket may accept more data or has data to read.
    pub fn pump(&mut self, now: Instant, s: &mut dyn StreamSocket) {
        let got = self.rx.drain(s);
        if let AppKind::Request { request, response, count, interval } = self.kind {
            self.request_progress(now, got, request, response, count, interval);
            if self.next_request.is_some_and(|t| t <= now) && !self.stopped(now) {
                self.next_request = None;
                self.owed += request;
                self.request_started = Some(now);
            }
        }
        // A bounded transfer completes when its last byte reaches the receiver.
        if self.completed_at.is_none() && self.recv_goal().is_some_and(|g| self.rx.delivered >= g) {
            self.completed_at = Some(now);
        }
        if self.closed {
            return;
        }
        let stopped = self.stopped(now);
        match self.kind {
            AppKind::Rate { rate_bps, .. } if self.client => {
                if self.blocked && self.room(s) > 0 {
                    // Space again after a full send buffer: go on from now
                    // (like iperf3 -b, no burst to catch up the lost time).
                    self.blocked = false;
                    self.next_send = self.next_send.map(|t| t.max(now));
                }
                while !stopped && self.next_send.is_some_and(|t| t <= now) {
                    let n = if self.room(s) > 0 { s.send(self.room(s).min(RATE_CHUNK)) } else { 0 };
                    if n == 0 {
                        // The send buffer is full: wait for the transport to
                        // drain it (it calls pump again), not for the timer.
                        self.blocked = self.send_goal().is_none_or(|g| self.sent < g);
                        break;
                    }
                    self.sent += n;
                    let gap = Duration::from_nanos(n * 8 * 1_000_000_000 / rate_bps.max(1));
                    self.next_send = self.next_send.map(|t| t + gap);
                }
            }
            AppKind::Request { .. } => {
                if self.owed > 0 {
                    let n = s.send(self.owed.min(s.send_space()));
                    self.owed -= n;
                    self.sent += n;
                }
            }
            _ => {
                if !stopped {
                    let room = self.room(s);
                    if room > 0 {
                        self.sent += s.send(room);
                    }
                }
            }
        }
        // An end that only receives (an iperf server, a wget client) closes
        // after its peer, as the real programs do (and as Linux needs to
        // keep accepting the peer's MP_JOINs). A request client is done
        // when its last request is answered.
        let done_sending = if self.send_goal() == Some(0) {
            s.peer_closed()
        } else {
            stopped || self.send_goal().is_some_and(|g| self.sent >= g) || matches!(self.kind, AppKind::Request { count, .. } if self.client && self.requests_done >= count)
        };
        let request_done = match self.kind {
            AppKind::Request { count, .. } => self.client && self.requests_done >= count,
            _ => true,
        };
        // A request/response end whose peer closed has nothing more to
        // answer or wait for.
        let peer_gone = matches!(self.kind, AppKind::Request { .. }) && self.owed == 0 && s.peer_closed();
        if (done_sending && request_done && self.owed == 0 && !matches!(self.kind, AppKind::Request { .. } if !self.client)) || peer_gone {
            s.close();
            self.closed = true;
        }
    }

    /// Bytes this end may still hand to the socket now.
    fn room(&self, s: &dyn StreamSocket) -> u64 {
        let left = self.send_goal().map(|g| g.saturating_sub(self.sent)).unwrap_or(u64::MAX);
        left.min(s.send_space())
    }

    fn request_progress(&mut self, now: Instant, got: u64, request: u64, response: u64, count: u64, interval: Duration) {
        if got == 0 {
            return;
        }
        if self.client {
            // A response is complete when the received total crosses a multiple of `response`.
            let answered = self.rx.delivered / response.max(1);
            while self.requests_done < answered.min(count) {
                self.requests_done += 1;
                if let Some(t) = self.request_started.take() {
                    self.latencies.push(now - t);
                }
                if self.requests_done < count {
                    // Request k is due `k * interval` after the first
                    // (back to back when the answer comes later than that).
                    let due = self.first_request.map_or(now, |t| t + interval * self.requests_done.min(u64::from(u32::MAX)) as u32);
                    if due <= now {
                        self.owed += request;
                        self.request_started = Some(now);
                    } else {
                        self.next_request = Some(due);
                    }
                }
            }
        } else {
            // Server: answer every request that has fully arrived.
            let asked = self.rx.delivered / request.max(1);
            if asked > self.promised {
                self.owed += (asked - self.promised) * response;
                self.promised = asked;
            }
        }
    }

    /// The app's own timer (rate sender pacing), if any.
    pub fn poll_timer(&self) -> Option<Instant> {
        // A closed end has nothing to time; one that only receives waits
        // for its peer, not for the clock.
        if self.closed || self.send_goal() == Some(0) {
            return None;
        }
        match self.kind {
            AppKind::Rate { .. } if self.client && self.blocked => self.stop_at,
            AppKind::Rate { .. } if self.client => self.next_send.map(|t| match self.stop_at {
                Some(s) => t.min(s),
                None => t,
            }),
            AppKind::Bulk { .. } | AppKind::Download { .. } => self.stop_at,
            AppKind::Request { .. } if self.client => self.next_request,
            _ => None,
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }
}

/// The byte every stream carries at `offset`: receivers and pcap writers
/// regenerate payloads from it, so the simulator never stores data.
#[inline]
pub fn pattern_byte(offset: u64) -> u8 {
    (offset.wrapping_mul(7).wrapping_add(3) & 0xff) as u8
}

/// Fills `out` with the stream bytes starting at `offset`.
pub fn fill_pattern(offset: u64, out: &mut [u8]) {
    for (i, b) in out.iter_mut().enumerate() {
        *b = pattern_byte(offset + i as u64);
    }
}

/// The first byte of `bytes` (the stream from `offset` on) that differs
/// from the pattern, described for the run's notes; None: all match. Every
/// backend that reads real bytes checks them with it.
pub fn pattern_mismatch(offset: u64, bytes: &[u8]) -> Option<String> {
    let i = bytes.iter().enumerate().position(|(i, &b)| b != pattern_byte(offset + i as u64))?;
    let o = offset + i as u64;
    Some(format!("byte at stream offset {o} is {:#04x}, expected {:#04x}", bytes[i], pattern_byte(o)))
}

/// The pattern as the stack's payload source: what every mplab sender
/// writes (the simulator regenerates payload bytes from it, for DSS
/// checksums; the userspace backend sends them).
pub struct Pattern;

impl mplab_proto::mptcp::PayloadSource for Pattern {
    fn fill(&self, off: u64, buf: &mut [u8]) {
        fill_pattern(off, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket with an infinite pipe to itself: what is sent becomes readable.
    #[derive(Default)]
    struct Loop {
        queued: u64,
        read: u64,
        space: u64,
        closed: bool,
    }
    impl StreamSocket for Loop {
        fn send_space(&self) -> u64 {
            self.space
        }
        fn send(&mut self, n: u64) -> u64 {
            let n = n.min(self.space);
            self.queued += n;
            n
        }
        fn readable(&self) -> u64 {
            self.queued - self.read
        }
        fn recv(&mut self, max: u64) -> Range<u64> {
            let n = max.min(self.readable());
            let r = self.read..self.read + n;
            self.read += n;
            r
        }
        fn close(&mut self) {
            self.closed = true;
        }
        fn peer_closed(&self) -> bool {
            false
        }
    }

    #[test]
    fn bulk_sends_its_bytes_then_closes() {
        let mut s = Loop { space: 1000, ..Default::default() };
        let mut a = App::new(AppKind::Bulk { bytes: Some(2500) }, true, None);
        a.on_connected(Instant(0), &mut s);
        assert_eq!(a.sent, 1000);
        for _ in 0..3 {
            a.pump(Instant(1), &mut s);
        }
        assert_eq!(a.sent, 2500);
        assert!(s.closed);
        assert!(a.rx.ok());
    }

    #[test]
    fn rate_sender_paces() {
        let mut s = Loop { space: u64::MAX / 2, ..Default::default() };
        // 8 Mbit/s: 1448 B every 1.448 ms.
        let mut a = App::new(AppKind::Rate { rate_bps: 8_000_000, bytes: None }, true, None);
        a.on_connected(Instant(0), &mut s);
        let mut t = Instant(0);
        while t < Instant::from_secs_f64(1.0) {
            t = a.poll_timer().unwrap();
            a.pump(t, &mut s);
        }
        let expect = 1_000_000.0;
        assert!((a.sent as f64 - expect).abs() < 2.0 * RATE_CHUNK as f64, "sent {}", a.sent);
    }

    #[test]
    fn requests_are_spaced_by_the_interval() {
        // The loop socket answers a request at once (what is sent is read
        // back), so the client issues request k at k * 200 ms, no earlier.
        let mut s = Loop { space: u64::MAX / 2, ..Default::default() };
        let kind = AppKind::Request { request: 100, response: 100, count: 3, interval: Duration::from_millis(200) };
        let mut a = App::new(kind, true, None);
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

    #[test]
    fn receiver_flags_a_gap() {
        struct Gappy(u32);
        impl StreamSocket for Gappy {
            fn send_space(&self) -> u64 {
                0
            }
            fn send(&mut self, _: u64) -> u64 {
                0
            }
            fn readable(&self) -> u64 {
                if self.0 < 2 { 10 } else { 0 }
            }
            fn recv(&mut self, _: u64) -> Range<u64> {
                self.0 += 1;
                if self.0 == 1 { 0..10 } else { 20..30 }
            }
            fn close(&mut self) {}
            fn peer_closed(&self) -> bool {
                false
            }
        }
        let mut r = Receiver::default();
        r.drain(&mut Gappy(0));
        assert_eq!(r.gap_at, Some(10));
        assert!(!r.ok());
    }

    #[test]
    fn a_mismatch_names_its_offset() {
        let mut b = [0u8; 300];
        fill_pattern(1000, &mut b);
        assert_eq!(pattern_mismatch(1000, &b), None);
        b[257] ^= 0xff;
        assert!(pattern_mismatch(1000, &b).unwrap().starts_with("byte at stream offset 1257 "));
    }

    #[test]
    fn pattern_is_offset_derived() {
        let mut a = [0u8; 4];
        fill_pattern(10, &mut a);
        assert_eq!(a, [pattern_byte(10), pattern_byte(11), pattern_byte(12), pattern_byte(13)]);
        assert_ne!(pattern_byte(0), pattern_byte(1));
    }
}
