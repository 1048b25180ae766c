//! A QUIC connection end (`transport = "quic"`, crates/backend `quic`) as a
//! transport endpoint: its datagrams travel as the simulator's UDP packets
//! (real bytes, encrypted), and it is a byte stream for the flow's
//! application, whose reads are checked against the stream pattern.

use core::ops::Range;
use std::net::{Ipv4Addr, SocketAddr};

use crate::quic::QuicEnd;
use mplab_proto::Instant;

use crate::apps::StreamSocket;
use super::endpoint::{Endpoint, PathStats, Progress};
use crate::packet::Packet;
use mplab_scenario::network::{Flow, Network};

use super::Engine;
use crate::results::SubflowState;

pub struct QuicEndpoint {
    q: QuicEnd,
    local: (Ipv4Addr, u16),
    reported: bool,
    sent: u64,
}

impl QuicEndpoint {
    pub fn new(q: QuicEnd, local: (Ipv4Addr, u16)) -> QuicEndpoint {
        QuicEndpoint { q, local, reported: false, sent: 0 }
    }

    fn progress(&mut self) -> Progress {
        let corrupted = self.q.mismatch.is_some() && !self.reported;
        self.reported |= corrupted;
        Progress { corrupted, ..Default::default() }
    }
}

impl StreamSocket for QuicEndpoint {
    fn send_space(&self) -> u64 {
        self.q.send_space()
    }
    fn send(&mut self, n: u64) -> u64 {
        self.q.send(n)
    }
    fn readable(&self) -> u64 {
        self.q.readable()
    }
    fn recv(&mut self, max: u64) -> Range<u64> {
        self.q.recv(max)
    }
    fn close(&mut self) {
        self.q.close()
    }
    fn peer_closed(&self) -> bool {
        self.q.peer_closed()
    }
}

impl Endpoint for QuicEndpoint {
    fn read_mismatch(&self) -> Option<&str> {
        self.q.mismatch.as_deref()
    }

    fn on_packet(&mut self, now: Instant, pkt: &Packet) -> Progress {
        if let Some(b) = pkt.udp.as_deref() {
            self.q.on_datagram(now.0, SocketAddr::new(pkt.src.into(), pkt.tcp.src_port), b);
        }
        self.progress()
    }

    fn poll_transmit_into(&mut self, now: Instant, out: &mut Packet) -> bool {
        let Some((to, d)) = self.q.poll_transmit(now.0) else { return false };
        let std::net::IpAddr::V4(dst) = to.ip() else { return false };
        self.sent += d.len() as u64;
        out.set_udp(self.local.0, dst, self.local.1, to.port(), d.into_boxed_slice());
        true
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.q.poll_timeout().map(Instant)
    }

    fn on_timeout(&mut self, now: Instant) -> Progress {
        self.q.on_timeout(now.0);
        self.progress()
    }

    fn is_established(&self) -> bool {
        self.q.is_established()
    }

    fn paths(&self) -> Vec<PathStats> {
        let Some((rtt, cwnd, lost)) = self.q.path() else { return Vec::new() };
        vec![PathStats {
            local: format!("{}:{}", self.local.0, self.local.1),
            remote: String::new(),
            backup: false,
            cwnd,
            in_flight: 0,
            srtt_ns: Some(rtt),
            bytes_sent: self.sent,
            bytes_acked: 0,
            retransmitted_segments: lost,
                retransmitted_bytes: None,
            rto_count: 0,
            state: if self.q.closed.is_some() { SubflowState::Closed } else { SubflowState::Established },
            hystart: Default::default(),
        }]
    }
}

/// `transport = "quic"`: quinn's connection ends (crates/backend `quic`).
pub(super) struct Quic;

impl Engine for Quic {
    /// A configuration quinn refuses would be a bug of ours: no end.
    fn connect(&self, _: &Network, f: &Flow, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        let q = QuicEnd::client(SocketAddr::new(f.src.into(), f.sport), SocketAddr::new(f.dst.into(), f.dport), seed, now.0).ok()?;
        Some(Box::new(QuicEndpoint::new(q, (f.src, f.sport))))
    }

    /// The client's Initial reaches the server once it is handed over.
    fn accept(&self, _: &Network, _: &Flow, local: Ipv4Addr, _remote: Ipv4Addr, first: &Packet, seed: u64, _now: Instant) -> Option<Box<dyn Endpoint>> {
        let q = QuicEnd::server(SocketAddr::new(local.into(), first.tcp.dst_port), seed).ok()?;
        Some(Box::new(QuicEndpoint::new(q, (local, first.tcp.dst_port))))
    }
}
