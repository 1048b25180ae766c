//! crates/proto's TCP and MPTCP connections as transport endpoints: one
//! [`StreamEndpoint`] over the backends' shared [`StreamConn`] (which is
//! also the application's stream socket), for the `tcp` and `mptcp`
//! engines; what is MPTCP's own in handling a segment is in
//! [`super::mptcp_segment`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::host::{AsStreamConn, StreamConn};
use mplab_proto::mptcp::MptcpConfig;
use mplab_proto::tcp::{TcpConfig, Transmit};
use mplab_proto::Instant;

use super::endpoint::{Endpoint, PathStats, Progress};
use super::mptcp_segment as mp;
use crate::packet::Packet;

pub struct StreamEndpoint {
    conn: StreamConn,
    /// Regenerated payloads for MPTCP's DSS checksums.
    scratch: Vec<u8>,
    placed: mp::PlacedBytes,
}

fn v4(a: SocketAddr) -> Ipv4Addr {
    match a.ip() {
        IpAddr::V4(v) => v,
        IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
    }
}

impl StreamEndpoint {
    fn new(conn: StreamConn) -> StreamEndpoint {
        StreamEndpoint { conn, scratch: Vec::new(), placed: Default::default() }
    }

    pub fn tcp_connect(cfg: TcpConfig, local: SocketAddr, remote: SocketAddr, iss: u32, now: Instant) -> StreamEndpoint {
        Self::new(StreamConn::tcp_connect(cfg, local, remote, iss, now))
    }

    pub fn tcp_accept(cfg: TcpConfig, local: SocketAddr, remote: SocketAddr, syn: &Packet, iss: u32, now: Instant) -> Option<StreamEndpoint> {
        StreamConn::tcp_accept(cfg, local, remote, &syn.tcp, iss, now).map(Self::new)
    }

    pub fn mptcp_connect(cfg: MptcpConfig, local: SocketAddr, remote: SocketAddr, seed: u64, now: Instant) -> StreamEndpoint {
        Self::new(StreamConn::mptcp_connect(cfg, local, remote, seed, now))
    }

    pub fn mptcp_accept(cfg: MptcpConfig, local: SocketAddr, remote: SocketAddr, syn: &Packet, seed: u64, now: Instant) -> Option<StreamEndpoint> {
        StreamConn::mptcp_accept(cfg, local, remote, &syn.tcp, seed, now).map(Self::new)
    }

    pub fn connection(&self) -> &StreamConn {
        &self.conn
    }
}

impl AsStreamConn for StreamEndpoint {
    fn stream_conn(&self) -> &StreamConn {
        &self.conn
    }
    fn stream_conn_mut(&mut self) -> &mut StreamConn {
        &mut self.conn
    }
}

impl Endpoint for StreamEndpoint {
    fn on_packet(&mut self, now: Instant, pkt: &Packet) -> Progress {
        let conn = match &mut self.conn {
            StreamConn::Mptcp(c) => return mp::on_packet(c, &mut self.scratch, &mut self.placed, now, pkt),
            StreamConn::Tcp { c, .. } => c,
        };
        let placed = conn.handle_segment(now, &pkt.tcp, pkt.payload_len);
        let misplaced = match &placed {
            Some(r) if !r.is_empty() => r.start != pkt.tag,
            _ => false,
        };
        // TCP's own checksum was fixed up by the box: nothing notices.
        let corrupted = pkt.corrupted && placed.is_some_and(|r| !r.is_empty());
        Progress { misplaced, corrupted, ..Default::default() }
    }

    fn poll_transmit_into(&mut self, now: Instant, out: &mut Packet) -> bool {
        let (conn, local, remote) = match &mut self.conn {
            StreamConn::Mptcp(c) => return mp::poll_transmit_into(c, now, out),
            StreamConn::Tcp { c, local, remote } => (c, *local, *remote),
        };
        // Built on the stack (in cache), copied once into the pool slot.
        let t = &mut Transmit::default();
        if !conn.poll_transmit_into(now, t) {
            return false;
        }
        let len = (t.payload.end - t.payload.start) as u32;
        out.set(v4(local), v4(remote), &t.header, len, t.payload.start);
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
        match &self.conn {
            StreamConn::Mptcp(c) => c.was_reset().then_some(false),
            StreamConn::Tcp { c, .. } => c.was_reset().then(|| c.syn_timed_out()),
        }
    }

    fn fell_back(&self) -> bool {
        self.conn.fell_back()
    }

    fn paths(&self) -> Vec<PathStats> {
        match &self.conn {
            StreamConn::Mptcp(c) => mp::paths(c),
            StreamConn::Tcp { c, local, remote } => {
                let mut p = PathStats::from_tcp(*local, *remote, false, &c.stats());
                p.state = tcp_state(c.state());
                vec![p]
            }
        }
    }

    fn accept_join(&mut self, now: Instant, pkt: &Packet) -> bool {
        let StreamConn::Mptcp(c) = &mut self.conn else { return false };
        let (local, remote) = mp::addrs(pkt);
        c.accept_join(now, local, remote, &pkt.tcp).is_ok()
    }

    fn reorder_probe(&self, now: Instant) -> Option<(u64, u64)> {
        let StreamConn::Mptcp(c) = &self.conn else { return None };
        Some(mp::reorder_probe(c, now))
    }

    fn send_buffer_probe(&self) -> Option<(u64, u64)> {
        self.conn.send_buffer()
    }

    fn scheduler_choices(&self) -> Option<u64> {
        let StreamConn::Mptcp(c) = &self.conn else { return None };
        Some(c.stats().scheduler_choices)
    }

    fn token(&self) -> Option<u32> {
        let StreamConn::Mptcp(c) = &self.conn else { return None };
        Some(c.local_token())
    }

    fn set_addr_in_service(&mut self, addr: Ipv4Addr, in_service: bool) {
        if let StreamConn::Mptcp(c) = &mut self.conn {
            mp::set_addr_in_service(c, addr, in_service);
        }
    }

    fn set_addr_backup(&mut self, addr: Ipv4Addr, backup: bool) {
        if let StreamConn::Mptcp(c) = &mut self.conn {
            mp::set_addr_backup(c, addr, backup);
        }
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

