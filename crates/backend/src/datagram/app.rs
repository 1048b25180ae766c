//! One end of a datagram application (`voip`, `game`, ...: its kind's
//! facts in [`super::DatagramKind`]) as a sans-IO state machine: time and
//! datagrams in, datagrams and a timer out, shared by every backend (the
//! simulator's UDP endpoints and the kernel backend's UDP sockets run the
//! same code).
//!
//! Every datagram starts with mplab's 20-byte header, the same idea as
//! RTP's sequence number and timestamp: magic `0x6d70`, a type (data or
//! echo), one reserved byte, the sequence number and the sender's send
//! time (ns, the run's clock: virtual time in the simulator, the
//! namespaces' shared monotonic clock on the kernel backend). The rest is
//! a pattern derived from the sequence number, which the receiver checks.
//!
//! The sender keeps to its schedule: datagram `k` is due at
//! `start + k * interval`, whatever the network does (a voice codec does
//! not slow down). A receiver notes when each sequence number first
//! arrived; [`DatagramApp::report`] joins the two ends' notes into the
//! stream's [`CallQuality`] and, for a game, its round-trip times.

use mplab_proto::Instant;
use mplab_scenario::network;
use serde::{Deserialize, Serialize};

use crate::apps::fill_pattern;
use crate::call_quality::{assess, CallQuality, Codec, Datagram};

use super::{DatagramConfig, DatagramKind};

/// Bytes of mplab's datagram header.
pub const HEADER: usize = 20;
const MAGIC: u16 = 0x6d70;
const DATA: u8 = 0;
const ECHO: u8 = 1;
/// A sequence number this far past the highest seen is not believed (a
/// forged or corrupted header must not make the receiver allocate).
const SEQ_WINDOW: u64 = 1 << 20;
/// Datagrams sent this close to the end of the run are left out of the
/// report: they may still be on their way.
const IN_FLIGHT_GRACE_NS: u64 = 1_000_000_000;

/// What a datagram header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub echo: bool,
    pub seq: u64,
    pub sent_ns: u64,
}

impl Header {
    pub fn write(&self, buf: &mut [u8]) {
        buf[0..2].copy_from_slice(&MAGIC.to_be_bytes());
        buf[2] = if self.echo { ECHO } else { DATA };
        buf[3] = 0;
        buf[4..12].copy_from_slice(&self.seq.to_be_bytes());
        buf[12..20].copy_from_slice(&self.sent_ns.to_be_bytes());
    }

    /// None for anything that is not one of mplab's datagrams.
    pub fn parse(buf: &[u8]) -> Option<Header> {
        if buf.len() < HEADER || buf[0..2] != MAGIC.to_be_bytes() || buf[2] > ECHO {
            return None;
        }
        Some(Header { echo: buf[2] == ECHO, seq: u64::from_be_bytes(buf[4..12].try_into().ok()?), sent_ns: u64::from_be_bytes(buf[12..20].try_into().ok()?) })
    }
}

/// Where a datagram's pattern starts: far enough apart per sequence
/// number that two datagrams never share one.
fn pattern_offset(seq: u64) -> u64 {
    seq.wrapping_mul(1 << 17)
}

/// A datagram of `len` bytes (at least [`HEADER`]).
pub fn build(h: Header, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len.max(HEADER)];
    h.write(&mut b);
    fill_pattern(pattern_offset(h.seq), &mut b[HEADER..]);
    b
}

/// The payload after the header is the pattern of its sequence number.
fn payload_ok(h: &Header, buf: &[u8]) -> bool {
    let mut want = vec![0u8; buf.len() - HEADER];
    fill_pattern(pattern_offset(h.seq), &mut want);
    want[..] == buf[HEADER..]
}

/// What a datagram flow measured, in the flow's summary.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DatagramSummary {
    /// "voip" or "game".
    pub app: String,
    /// The stream from `from` to `to` (for a voice call, what the listener
    /// heard; its r_factor and mos apply to voice only).
    #[serde(flatten)]
    pub stream: CallQuality,
    /// Game: round-trip times of the updates whose echo came back, ms.
    pub rtt_p50_ms: Option<f64>,
    pub rtt_p95_ms: Option<f64>,
    pub rtt_p99_ms: Option<f64>,
    pub rtt_max_ms: Option<f64>,
    /// Game: updates whose echo never came back, over those sent.
    pub echo_loss_ratio: Option<f64>,
    /// Datagrams received more than once (copies are not counted again).
    pub duplicates: u64,
    /// Datagrams that were not mplab's (no header), or whose payload
    /// differed from what was sent: dropped and counted.
    pub malformed: u64,
}

/// One end of a datagram flow.
#[derive(Debug, Clone)]
pub struct DatagramApp {
    kind: &'static DatagramKind,
    /// The end that sends on its own schedule (`from`).
    client: bool,
    packet_bytes: usize,
    interval_ns: u64,
    start: Instant,
    stop: Instant,
    /// Sender: the next sequence number to send.
    next_seq: u64,
    /// Sender: send time of each sequence number.
    sent_ns: Vec<u64>,
    /// Receiver (and game client, for echoes): first arrival of each
    /// sequence number, with the send time its header carried.
    arrived: Vec<Option<(u64, u64)>>,
    /// Datagrams waiting to go (the sender's due ones, the server's echoes).
    out: std::collections::VecDeque<Vec<u8>>,
    pub bytes_received: u64,
    pub duplicates: u64,
    pub malformed: u64,
}

impl DatagramApp {
    /// The end of `app` (a datagram application) that is the `client`
    /// (`from`) or not, active from `start` to `stop`.
    /// None: not a datagram application, or one whose table does not
    /// check (a network that [`crate::plugins::check`] passed has none).
    pub fn new(app: &network::App, client: bool, start: Instant, stop: Instant) -> Option<DatagramApp> {
        let network::App::Datagram(t) = app else { return None };
        let c = DatagramConfig::of(t).ok()?;
        Some(DatagramApp {
            kind: c.kind,
            client,
            packet_bytes: (c.packet_bytes as usize).max(HEADER),
            interval_ns: c.interval_ns.max(1),
            start,
            stop,
            next_seq: 0,
            sent_ns: Vec::new(),
            arrived: Vec::new(),
            out: Default::default(),
            bytes_received: 0,
            duplicates: 0,
            malformed: 0,
        })
    }

    pub fn kind(&self) -> &'static DatagramKind {
        self.kind
    }

    fn due(&self, seq: u64) -> Instant {
        Instant(self.start.0 + seq * self.interval_ns)
    }

    /// When [`DatagramApp::on_timer`] must run next.
    pub fn poll_timer(&self) -> Option<Instant> {
        if !self.client {
            return None;
        }
        let t = self.due(self.next_seq);
        (t < self.stop).then_some(t)
    }

    /// Queues every datagram due by `now` (stamped `now`: a late timer
    /// sends late, as a real application would).
    pub fn on_timer(&mut self, now: Instant) {
        while self.client && self.due(self.next_seq) <= now && self.due(self.next_seq) < self.stop {
            let h = Header { echo: false, seq: self.next_seq, sent_ns: now.0 };
            self.out.push_back(build(h, self.packet_bytes));
            self.sent_ns.push(now.0);
            self.next_seq += 1;
        }
    }

    /// The next datagram to send, if any.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.out.pop_front()
    }

    /// A datagram arrived at `now`.
    pub fn on_datagram(&mut self, now: Instant, buf: &[u8]) {
        let Some(h) = Header::parse(buf).filter(|h| payload_ok(h, buf)) else {
            self.malformed += 1;
            return;
        };
        // The client takes only echoes (of what it sent), the server only data.
        let fits = if self.client { h.echo && self.kind.echoes && h.seq < self.next_seq } else { !h.echo && h.seq < self.arrived.len() as u64 + SEQ_WINDOW };
        if !fits {
            self.malformed += 1;
            return;
        }
        let i = h.seq as usize;
        if self.arrived.len() <= i {
            self.arrived.resize(i + 1, None);
        }
        if self.arrived[i].is_some() {
            self.duplicates += 1;
            return;
        }
        self.arrived[i] = Some((h.sent_ns, now.0));
        self.bytes_received += buf.len() as u64;
        if !self.client && self.kind.echoes {
            self.out.push_back(build(Header { echo: true, ..h }, buf.len()));
        }
    }

    /// The flow's figures from its two ends, leaving out what was sent in
    /// the last second before `run_end` (it may still be on its way).
    pub fn report(client: &DatagramApp, server: &DatagramApp, run_end: Instant) -> DatagramSummary {
        let horizon = run_end.0.saturating_sub(IN_FLIGHT_GRACE_NS);
        let counted = client.sent_ns.iter().take_while(|&&t| t <= horizon).count();
        let upstream: Vec<Datagram> = (0..counted)
            .map(|i| Datagram { seq: i as u64, sent_ns: client.sent_ns[i], arrived_ns: server.arrived.get(i).copied().flatten().map(|a| a.1) })
            .collect();
        let stream = assess(&upstream, client.kind.playout_ms, &Codec::G711_PLC);
        let mut s = DatagramSummary {
            app: client.kind.about.name.into(),
            stream,
            duplicates: client.duplicates + server.duplicates,
            malformed: client.malformed + server.malformed,
            ..Default::default()
        };
        if client.kind.echoes {
            let mut rtts: Vec<f64> = (0..counted).filter_map(|i| client.arrived.get(i).copied().flatten().map(|(_, a)| (a - client.sent_ns[i]) as f64 / 1e6)).collect();
            rtts.sort_by(f64::total_cmp);
            let pct = |p: f64| (!rtts.is_empty()).then(|| rtts[((rtts.len() as f64 * p).ceil() as usize).clamp(1, rtts.len()) - 1]);
            s.rtt_p50_ms = pct(0.50);
            s.rtt_p95_ms = pct(0.95);
            s.rtt_p99_ms = pct(0.99);
            s.rtt_max_ms = rtts.last().copied();
            s.echo_loss_ratio = (counted > 0).then(|| 1.0 - rtts.len() as f64 / counted as f64);
        }
        s
    }

    /// Payload bytes this end received (unique datagrams).
    pub fn delivered(&self) -> u64 {
        self.bytes_received
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datagram::datagram_app;

    const MS: u64 = 1_000_000;

    fn voip() -> network::App {
        datagram_app("voip", "")
    }

    /// Runs a sender to `until`, delivering each datagram to `rx` after
    /// `delay(seq)` (None: lost).
    fn pass(tx: &mut DatagramApp, rx: &mut DatagramApp, until: u64, delay: impl Fn(u64) -> Option<u64>) {
        let mut seq = 0;
        while let Some(t) = tx.poll_timer().filter(|t| t.0 <= until) {
            tx.on_timer(t);
            while let Some(d) = tx.poll_transmit() {
                assert_eq!(d.len(), 160);
                if let Some(dl) = delay(seq) {
                    rx.on_datagram(Instant(t.0 + dl), &d);
                }
                seq += 1;
            }
        }
    }

    #[test]
    fn header_round_trips_and_strangers_are_refused() {
        let h = Header { echo: true, seq: 0x0102_0304_0506, sent_ns: 77 };
        let b = build(h, 64);
        assert_eq!(Header::parse(&b), Some(h));
        assert!(payload_ok(&h, &b));
        assert_eq!(Header::parse(&b[..19]), None);
        let mut bad = b.clone();
        bad[0] ^= 1;
        assert_eq!(Header::parse(&bad), None);
        let mut bad = b.clone();
        bad[2] = 7;
        assert_eq!(Header::parse(&bad), None);
    }

    #[test]
    fn a_clean_call_is_on_schedule_and_scores_high() {
        let stop = Instant(10_000 * MS);
        let mut tx = DatagramApp::new(&voip(), true, Instant(MS), stop).unwrap();
        let mut rx = DatagramApp::new(&voip(), false, Instant(MS), stop).unwrap();
        pass(&mut tx, &mut rx, stop.0, |_| Some(25 * MS));
        assert_eq!(tx.sent_ns.len(), 500, "one every 20 ms from 1 ms to 10 s");
        assert_eq!(tx.sent_ns[1] - tx.sent_ns[0], 20 * MS);
        let r = DatagramApp::report(&tx, &rx, Instant(20_000 * MS));
        assert_eq!((r.stream.sent, r.stream.received, r.malformed, r.duplicates), (500, 500, 0, 0));
        assert_eq!(r.stream.delay_p99_ms, 25.0);
        assert_eq!(r.stream.longest_interruption_ms, 0.0);
        assert!(r.stream.mos > 4.3, "{}", r.stream.mos);
        assert_eq!(rx.delivered(), 500 * 160);
    }

    #[test]
    fn an_outage_shows_as_loss_and_interruption_and_the_tail_is_left_out() {
        let stop = Instant(10_000 * MS);
        let mut tx = DatagramApp::new(&voip(), true, Instant::ZERO, stop).unwrap();
        let mut rx = DatagramApp::new(&voip(), false, Instant::ZERO, stop).unwrap();
        // 1 s of silence from 2 s: 50 packets.
        pass(&mut tx, &mut rx, stop.0, |s| (!(100..150).contains(&s)).then_some(10 * MS));
        let r = DatagramApp::report(&tx, &rx, Instant(10_500 * MS));
        assert_eq!(r.stream.sent, 476, "sent after 9.5 s is still in flight");
        assert_eq!(r.stream.received, 426);
        assert!((r.stream.longest_interruption_ms - 1000.0).abs() < 1e-6, "{}", r.stream.longest_interruption_ms);
        assert!(r.stream.burst_ratio > 10.0);
    }

    #[test]
    fn game_echoes_give_round_trips_and_copies_and_garbage_are_counted() {
        let app = datagram_app("game", "");
        let stop = Instant(3_000 * MS);
        let mut c = DatagramApp::new(&app, true, Instant::ZERO, stop).unwrap();
        let mut s = DatagramApp::new(&app, false, Instant::ZERO, stop).unwrap();
        while let Some(t) = c.poll_timer() {
            c.on_timer(t);
            while let Some(d) = c.poll_transmit() {
                let seq = Header::parse(&d).unwrap().seq;
                s.on_datagram(Instant(t.0 + 10 * MS), &d);
                s.on_datagram(Instant(t.0 + 11 * MS), &d); // a copy
                while let Some(e) = s.poll_transmit() {
                    // Every 10th echo is lost; the others take 20 ms + seq us.
                    if seq % 10 != 0 {
                        c.on_datagram(Instant(t.0 + 30 * MS + seq * 1000), &e);
                    }
                }
            }
        }
        s.on_datagram(Instant(stop.0), b"not one of ours, but long enough to parse");
        c.on_datagram(Instant(stop.0), &build(Header { echo: true, seq: 1 << 40, sent_ns: 0 }, 64));
        let r = DatagramApp::report(&c, &s, Instant(10_000 * MS));
        assert_eq!(r.stream.sent, 100);
        assert_eq!(r.stream.received, 100);
        assert_eq!(r.duplicates, 100);
        assert_eq!(r.malformed, 2);
        assert!((r.echo_loss_ratio.unwrap() - 0.1).abs() < 1e-9);
        assert!((r.rtt_max_ms.unwrap() - 30.099).abs() < 1e-9);
        assert!(r.rtt_p50_ms.unwrap() >= 30.0 && r.rtt_p50_ms.unwrap() < 30.1);
    }
}
