//! A UDP socket with its datagram application (`voip`, `game`) as a
//! transport endpoint. There is no connection: the end is "established"
//! from the start, sends on the application's schedule, and takes every
//! datagram addressed to its port. It offers no byte stream, so the
//! flow's stream application has nothing to do.

use core::ops::Range;
use std::net::Ipv4Addr;

use crate::datagram::DatagramApp;
use mplab_proto::Instant;

use crate::apps::StreamSocket;
use super::endpoint::{Endpoint, PathStats, Progress};
use crate::packet::Packet;
use mplab_scenario::network::{Flow, Network};

use super::{Engine, CHECKED};

pub struct UdpEndpoint {
    app: DatagramApp,
    local: (Ipv4Addr, u16),
    /// Where datagrams go: the flow's far end for the client; the source
    /// of the latest datagram for the server (a game echoes it there).
    remote: Option<(Ipv4Addr, u16)>,
}

impl UdpEndpoint {
    pub fn new(app: DatagramApp, local: (Ipv4Addr, u16), remote: Option<(Ipv4Addr, u16)>) -> UdpEndpoint {
        UdpEndpoint { app, local, remote }
    }
}

/// No byte stream over UDP.
impl StreamSocket for UdpEndpoint {
    fn send_space(&self) -> u64 {
        0
    }
    fn send(&mut self, _: u64) -> u64 {
        0
    }
    fn readable(&self) -> u64 {
        0
    }
    fn recv(&mut self, _: u64) -> Range<u64> {
        0..0
    }
    fn close(&mut self) {}
    fn peer_closed(&self) -> bool {
        false
    }
}

impl Endpoint for UdpEndpoint {
    fn on_packet(&mut self, now: Instant, pkt: &Packet) -> Progress {
        if let Some(b) = pkt.udp.as_deref() {
            self.remote = Some((pkt.src, pkt.tcp.src_port));
            self.app.on_datagram(now, b);
        }
        Progress::default()
    }

    fn poll_transmit_into(&mut self, _now: Instant, out: &mut Packet) -> bool {
        let Some((addr, port)) = self.remote else { return false };
        let Some(d) = self.app.poll_transmit() else { return false };
        out.set_udp(self.local.0, addr, self.local.1, port, d.into_boxed_slice());
        true
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.app.poll_timer()
    }

    fn on_timeout(&mut self, now: Instant) -> Progress {
        self.app.on_timer(now);
        Progress::default()
    }

    fn is_established(&self) -> bool {
        true
    }

    fn paths(&self) -> Vec<PathStats> {
        Vec::new()
    }

    fn datagram_app(&self) -> Option<&DatagramApp> {
        Some(&self.app)
    }
}

/// `transport = "udp"`: a socket with the flow's datagram application.
pub(super) struct Udp;

impl Engine for Udp {
    fn connect(&self, _: &Network, f: &Flow, _seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        let app = DatagramApp::new(&f.app, true, now, Instant(f.stop_ns)).expect(CHECKED);
        Some(Box::new(UdpEndpoint::new(app, (f.src, f.sport), Some((f.dst, f.dport)))))
    }

    /// The socket was bound from the start; this is its first datagram.
    fn accept(&self, _: &Network, f: &Flow, local: Ipv4Addr, remote: Ipv4Addr, first: &Packet, _seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        let app = DatagramApp::new(&f.app, false, now, Instant(f.stop_ns)).expect(CHECKED);
        Some(Box::new(UdpEndpoint::new(app, (local, first.tcp.dst_port), Some((remote, first.tcp.src_port)))))
    }
}
