//! A crates/proto TCP connection as a simulator endpoint.

use core::ops::Range;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use mplab_proto::tcp::{Connection, TcpConfig, Transmit};
use mplab_proto::Instant;

use crate::apps::StreamSocket;
use crate::endpoint::{Endpoint, PathStats, Progress};
use crate::packet::Packet;

pub struct TcpEndpoint {
    conn: Connection,
    local: SocketAddr,
    remote: SocketAddr,
}

fn v4(a: SocketAddr) -> Ipv4Addr {
    match a.ip() {
        IpAddr::V4(v) => v,
        IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
    }
}

impl TcpEndpoint {
    pub fn connect(cfg: TcpConfig, local: SocketAddr, remote: SocketAddr, iss: u32, now: Instant) -> TcpEndpoint {
        TcpEndpoint { conn: Connection::connect(cfg, local, remote, iss, now), local, remote }
    }

    pub fn accept(cfg: TcpConfig, local: SocketAddr, remote: SocketAddr, syn: &Packet, iss: u32, now: Instant) -> Option<TcpEndpoint> {
        let conn = Connection::accept(cfg, local, remote, &syn.tcp, iss, now).ok()?;
        Some(TcpEndpoint { conn, local, remote })
    }
}

impl StreamSocket for TcpEndpoint {
    fn send_space(&self) -> u64 {
        self.conn.send_space()
    }
    fn send(&mut self, n: u64) -> u64 {
        self.conn.send(n)
    }
    fn readable(&self) -> u64 {
        self.conn.readable()
    }
    fn recv(&mut self, max: u64) -> Range<u64> {
        self.conn.recv(max)
    }
    fn close(&mut self) {
        self.conn.close()
    }
    fn peer_closed(&self) -> bool {
        self.conn.peer_closed()
    }
}

impl Endpoint for TcpEndpoint {
    fn on_packet(&mut self, now: Instant, pkt: &Packet) -> Progress {
        let placed = self.conn.handle_segment(now, &pkt.tcp, pkt.payload_len);
        let misplaced = match &placed {
            Some(r) if !r.is_empty() => r.start != pkt.tag,
            _ => false,
        };
        // TCP's own checksum was fixed up by the box: nothing notices.
        let corrupted = pkt.corrupted && placed.is_some_and(|r| !r.is_empty());
        Progress { misplaced, corrupted, ..Default::default() }
    }

    fn poll_transmit_into(&mut self, now: Instant, out: &mut Packet) -> bool {
        // Built on the stack (in cache), copied once into the pool slot.
        let t = &mut Transmit::default();
        if !self.conn.poll_transmit_into(now, t) {
            return false;
        }
        let len = (t.payload.end - t.payload.start) as u32;
        out.set(v4(self.local), v4(self.remote), &t.header, len, t.payload.start);
        true
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.conn.poll_timeout()
    }

    fn on_timeout(&mut self, now: Instant) -> Progress {
        self.conn.handle_timeout(now);
        Progress::default()
    }

    fn is_established(&self) -> bool {
        self.conn.is_established()
    }

    fn abort(&mut self) {
        self.conn.abort();
    }

    fn failure(&self) -> Option<bool> {
        self.conn.was_reset().then(|| self.conn.syn_timed_out())
    }

    fn paths(&self) -> Vec<PathStats> {
        let mut p = PathStats::from_tcp(self.local, self.remote, false, &self.conn.stats());
        p.state = tcp_state(self.conn.state());
        vec![p]
    }
}

/// A TCP state as a probe reports it: data can still flow while either
/// side is closing, so those count as established.
pub fn tcp_state(s: mplab_proto::tcp::State) -> crate::results::SubflowState {
    use crate::results::SubflowState as S;
    use mplab_proto::tcp::State::*;
    match s {
        SynSent | SynReceived => S::Connecting,
        Established | FinWait1 | FinWait2 | CloseWait | Closing | LastAck => S::Established,
        TimeWait | Closed => S::Closed,
    }
}
