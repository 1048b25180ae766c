//! A test-only transport, added as a newcomer adds one: this file and its
//! `mod` line. The file registers its facts (what a scenario may name) and
//! its engine itself, at its end. A stop-and-wait byte stream over UDP, each way: one
//! datagram of at most [`MSS`] bytes in flight, sent again after a fixed
//! timeout until its acknowledgement arrives. The client's HELLO makes the
//! server's end (its first datagram) and establishes the connection.
//!
//! Datagram: kind (1 byte), offset (8 bytes, big-endian), then for DATA
//! the stream bytes at that offset. ACK and FIN_ACK carry the next offset
//! expected; FIN the sender's final offset.

use core::ops::Range;
use core::time::Duration;
use std::net::Ipv4Addr;

use mplab_proto::Instant;
use mplab_scenario::network::{Flow, Network};
use mplab_scenario::plugins::transports::{Carrier, Delivery, TransportEntry};
use mplab_scenario::plugins::{About, OnKernel};

use super::endpoint::{Endpoint, PathStats, Progress};
use super::Engine;
use crate::apps::{fill_pattern, pattern_mismatch, StreamSocket};
use crate::packet::Packet;
use crate::results::SubflowState;

/// Stream bytes per DATA datagram.
pub const MSS: u64 = 1000;
/// Bytes the application may have written and not yet had acknowledged.
const SEND_BUFFER: u64 = 256 * 1024;
/// Fixed retransmission timeout.
const RTO: Duration = Duration::from_millis(200);

const HELLO: u8 = 0;
const HELLO_ACK: u8 = 1;
const DATA: u8 = 2;
const ACK: u8 = 3;
const FIN: u8 = 4;
const FIN_ACK: u8 = 5;

/// What is in flight: the one unit the sender waits to have acknowledged.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Hello,
    Data { offset: u64, len: u64 },
    Fin { offset: u64 },
}

pub struct StopAndWait {
    local: (Ipv4Addr, u16),
    remote: (Ipv4Addr, u16),
    established: bool,
    /// Stream offsets the application wrote, and the peer acknowledged.
    written: u64,
    acked: u64,
    flight: Option<Unit>,
    /// When `flight` is sent again; None: send it at the next transmit.
    deadline: Option<Instant>,
    close_wanted: bool,
    closed_acked: bool,
    /// An acknowledgement (kind, offset) to send at the next transmit.
    reply: Option<(u8, u64)>,
    /// Stream offsets received in order, and read by the application.
    next: u64,
    read: u64,
    peer_fin: bool,
    mismatch: Option<String>,
    reported: bool,
    bytes_sent: u64,
    retransmissions: u64,
}

impl StopAndWait {
    fn new(local: (Ipv4Addr, u16), remote: (Ipv4Addr, u16), client: bool) -> StopAndWait {
        StopAndWait {
            local,
            remote,
            established: !client,
            written: 0,
            acked: 0,
            flight: client.then_some(Unit::Hello),
            deadline: None,
            close_wanted: false,
            closed_acked: false,
            reply: None,
            next: 0,
            read: 0,
            peer_fin: false,
            mismatch: None,
            reported: false,
            bytes_sent: 0,
            retransmissions: 0,
        }
    }

    fn progress(&mut self) -> Progress {
        let corrupted = self.mismatch.is_some() && !self.reported;
        self.reported |= corrupted;
        Progress { corrupted, ..Default::default() }
    }

    /// The next unit to put in flight, when nothing is.
    fn next_unit(&self) -> Option<Unit> {
        if !self.established {
            return None;
        }
        if self.acked < self.written {
            return Some(Unit::Data { offset: self.acked, len: (self.written - self.acked).min(MSS) });
        }
        (self.close_wanted && !self.closed_acked).then_some(Unit::Fin { offset: self.written })
    }

    fn acknowledged(&mut self) {
        self.flight = None;
        self.deadline = None;
    }
}

fn datagram(kind: u8, offset: u64, payload: usize) -> Vec<u8> {
    let mut d = Vec::with_capacity(9 + payload);
    d.push(kind);
    d.extend_from_slice(&offset.to_be_bytes());
    d
}

impl StreamSocket for StopAndWait {
    fn send_space(&self) -> u64 {
        if self.close_wanted {
            return 0;
        }
        SEND_BUFFER - (self.written - self.acked)
    }
    fn send(&mut self, n: u64) -> u64 {
        let took = n.min(self.send_space());
        self.written += took;
        took
    }
    fn readable(&self) -> u64 {
        self.next - self.read
    }
    fn recv(&mut self, max: u64) -> Range<u64> {
        let r = self.read..self.read + max.min(self.readable());
        self.read = r.end;
        r
    }
    fn close(&mut self) {
        self.close_wanted = true;
    }
    fn peer_closed(&self) -> bool {
        self.peer_fin && self.readable() == 0
    }
}

impl Endpoint for StopAndWait {
    fn on_packet(&mut self, _now: Instant, pkt: &Packet) -> Progress {
        // Anything shorter than a header is not ours: dropped.
        let Some(d) = pkt.udp.as_deref().filter(|d| d.len() >= 9) else { return self.progress() };
        let offset = u64::from_be_bytes(d[1..9].try_into().expect("9 bytes checked"));
        match d[0] {
            HELLO => self.reply = Some((HELLO_ACK, 0)),
            HELLO_ACK if self.flight == Some(Unit::Hello) => {
                self.established = true;
                self.acknowledged();
            }
            DATA => {
                let bytes = &d[9..];
                if offset == self.next && !self.peer_fin {
                    if self.mismatch.is_none() {
                        self.mismatch = pattern_mismatch(offset, bytes);
                    }
                    self.next += bytes.len() as u64;
                }
                self.reply = Some((ACK, self.next));
            }
            ACK => {
                if let Some(Unit::Data { offset: o, len }) = self.flight {
                    if offset >= o + len {
                        self.acked = o + len;
                        self.acknowledged();
                    }
                }
            }
            FIN => {
                if offset == self.next {
                    self.peer_fin = true;
                }
                self.reply = Some((FIN_ACK, self.next));
            }
            FIN_ACK if matches!(self.flight, Some(Unit::Fin { .. })) => {
                self.closed_acked = true;
                self.acknowledged();
            }
            _ => {}
        }
        self.progress()
    }

    fn poll_transmit_into(&mut self, now: Instant, out: &mut Packet) -> bool {
        let d = if let Some((kind, offset)) = self.reply.take() {
            datagram(kind, offset, 0)
        } else {
            if self.flight.is_none() {
                self.flight = self.next_unit();
            }
            let Some(unit) = self.flight.filter(|_| self.deadline.is_none()) else { return false };
            self.deadline = Some(now + RTO);
            match unit {
                Unit::Hello => datagram(HELLO, 0, 0),
                Unit::Fin { offset } => datagram(FIN, offset, 0),
                Unit::Data { offset, len } => {
                    let mut d = datagram(DATA, offset, len as usize);
                    d.resize(9 + len as usize, 0);
                    fill_pattern(offset, &mut d[9..]);
                    self.bytes_sent += len;
                    d
                }
            }
        };
        out.set_udp(self.local.0, self.remote.0, self.local.1, self.remote.1, d.into_boxed_slice());
        true
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.deadline
    }

    /// The unit in flight was not acknowledged in time: sent again.
    fn on_timeout(&mut self, now: Instant) -> Progress {
        if self.deadline.is_some_and(|t| t <= now) {
            self.deadline = None;
            self.retransmissions += 1;
        }
        self.progress()
    }

    fn is_established(&self) -> bool {
        self.established
    }

    fn paths(&self) -> Vec<PathStats> {
        vec![PathStats {
            local: self.local.0.to_string(),
            remote: self.remote.0.to_string(),
            backup: false,
            cwnd: MSS,
            in_flight: match self.flight {
                Some(Unit::Data { len, .. }) => len,
                _ => 0,
            },
            srtt_ns: None,
            bytes_sent: self.bytes_sent,
            bytes_acked: self.acked,
            retransmitted_segments: self.retransmissions,
            retransmitted_bytes: None,
            rto_count: self.retransmissions,
            state: if self.established { SubflowState::Established } else { SubflowState::Connecting },
            hystart: Default::default(),
        }]
    }

    fn read_mismatch(&self) -> Option<&str> {
        self.mismatch.as_deref()
    }
}

/// Its facts: scenario files name it `transport = "fixture-stop-and-wait"`.
#[linkme::distributed_slice(mplab_scenario::plugins::transports::PLUGGED_FACTS)]
static FACTS: &TransportEntry = &TransportEntry {
    about: About { name: "fixture-stop-and-wait", params: &[], what: "test fixture: a stop-and-wait byte stream over UDP", kernel: OnKernel::Runs("its engine over kernel UDP sockets") },
    aliases: &[],
    carrier: Carrier::Udp,
    delivery: Delivery::Stream,
    own_control: Some("one datagram in flight, a fixed timeout"),
    settings: None,
};

#[linkme::distributed_slice(super::PLUGGED_ENGINES)]
static ENGINE: (&str, &dyn Engine) = ("fixture-stop-and-wait", &StopAndWaitEngine);

struct StopAndWaitEngine;

impl Engine for StopAndWaitEngine {
    fn connect(&self, _: &Network, f: &Flow, _seed: u64, _now: Instant) -> Option<Box<dyn Endpoint>> {
        Some(Box::new(StopAndWait::new((f.src, f.sport), (f.dst, f.dport), true)))
    }

    fn accept(&self, _: &Network, _f: &Flow, local: Ipv4Addr, remote: Ipv4Addr, first: &Packet, _seed: u64, _now: Instant) -> Option<Box<dyn Endpoint>> {
        Some(Box::new(StopAndWait::new((local, first.tcp.dst_port), (remote, first.tcp.src_port), false)))
    }
}
