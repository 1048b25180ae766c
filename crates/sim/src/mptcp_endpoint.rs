//! A crates/proto MPTCP connection as a simulator endpoint: one endpoint,
//! many 4-tuples (its subflows). Payload bytes are never stored: when DSS
//! checksums are on, the bytes of a segment are regenerated from its
//! data-level offset (the stream pattern), with the damage a middlebox
//! did applied, so a checksum catches a modified payload.

use core::ops::Range;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use mplab_proto::mptcp::{Connection, Event, MptcpConfig};
use mplab_proto::Instant;

use crate::apps::{Pattern, StreamSocket};
use crate::endpoint::{Endpoint, PathStats, Progress};
use crate::packet::Packet;

pub struct MptcpEndpoint {
    conn: Connection,
    scratch: Vec<u8>,
}

fn v4(a: SocketAddr) -> Ipv4Addr {
    match a.ip() {
        IpAddr::V4(v) => v,
        IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
    }
}

impl MptcpEndpoint {
    pub fn connect(cfg: MptcpConfig, local: SocketAddr, remote: SocketAddr, seed: u64, now: Instant) -> Self {
        MptcpEndpoint { conn: Connection::connect(cfg, local, remote, seed, now), scratch: Vec::new() }
    }

    pub fn accept(cfg: MptcpConfig, local: SocketAddr, remote: SocketAddr, syn: &Packet, seed: u64, now: Instant) -> Option<Self> {
        Connection::accept(cfg, local, remote, &syn.tcp, seed, now).map(|conn| MptcpEndpoint { conn, scratch: Vec::new() })
    }

    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

impl StreamSocket for MptcpEndpoint {
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

fn addrs(pkt: &Packet) -> (SocketAddr, SocketAddr) {
    (SocketAddr::new(pkt.dst.into(), pkt.tcp.dst_port), SocketAddr::new(pkt.src.into(), pkt.tcp.src_port))
}

impl Endpoint for MptcpEndpoint {
    fn on_packet(&mut self, now: Instant, pkt: &Packet) -> Progress {
        let (local, remote) = addrs(pkt);
        let payload = if self.conn.needs_payload() && pkt.payload_len > 0 {
            self.scratch.resize(pkt.payload_len as usize, 0);
            pkt.fill_payload(&mut self.scratch);
            if pkt.corrupted {
                self.scratch[0] ^= 0xff;
            }
            Some(&self.scratch[..])
        } else {
            None
        };
        let failures = self.conn.stats().checksum_failures;
        let held = self.conn.received_bytes();
        let placed = self.conn.handle_segment(now, local, remote, &pkt.tcp, pkt.payload_len, payload);
        let misplaced = match &placed {
            Some(r) if !r.is_empty() && pkt.payload_len > 0 => r.start != pkt.tag,
            _ => false,
        };
        // Rewritten bytes reach the application unless the DSS checksum
        // caught them and the subflow was reset (its data is then sent
        // again on another). On the only subflow a failed checksum makes
        // the connection fall back and keep the bytes, as Linux does.
        let discarded = self.conn.stats().checksum_failures > failures && self.conn.fallback().is_none();
        // Bytes the connection already held stay as they were (the first
        // copy wins): only a segment that brought new bytes can change any.
        let corrupted = pkt.corrupted && placed.is_some_and(|r| !r.is_empty()) && !discarded && self.conn.received_bytes() > held;
        while let Some(e) = self.conn.poll_event() {
            let _: Event = e;
        }
        Progress { misplaced, corrupted, ..Default::default() }
    }

    fn poll_transmit_into(&mut self, now: Instant, out: &mut Packet) -> bool {
        // The segment goes from where the connection built it straight
        // into the pool slot: one copy of the header.
        self.conn
            .poll_transmit_with(now, &Pattern, |t| {
                let len = (t.data.end - t.data.start) as u32;
                out.set(v4(t.local), v4(t.remote), t.header, len, t.data.start);
            })
            .is_some()
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
        self.conn.was_reset().then_some(false)
    }

    fn fell_back(&self) -> bool {
        self.conn.fallback().is_some()
    }

    fn paths(&self) -> Vec<PathStats> {
        use crate::results::SubflowState as S;
        self.conn
            .subflow_stats()
            .iter()
            .map(|s| {
                let mut p = PathStats::from_tcp(s.local, s.remote, s.backup, &s.tcp);
                p.state = if s.closed || s.finished {
                    S::Closed
                } else if s.stale {
                    S::Stale
                } else if s.established {
                    S::Established
                } else {
                    S::Connecting
                };
                p
            })
            .collect()
    }

    fn accept_join(&mut self, now: Instant, pkt: &Packet) -> bool {
        let (local, remote) = addrs(pkt);
        self.conn.accept_join(now, local, remote, &pkt.tcp).is_ok()
    }

    fn reorder_probe(&self, now: Instant) -> Option<(u64, u64)> {
        let hol = self.conn.hol_delay(now).map_or(0, |d| d.as_nanos() as u64);
        Some((self.conn.ooo_bytes(), hol))
    }

    fn send_buffer_probe(&self) -> Option<(u64, u64)> {
        Some((self.conn.snd_buf(), self.conn.send_queued()))
    }

    fn token(&self) -> Option<u32> {
        Some(self.conn.local_token())
    }

    fn set_addr_in_service(&mut self, addr: Ipv4Addr, in_service: bool) {
        let Some(id) = self.conn.local_addr_id(IpAddr::V4(addr)) else { return };
        if in_service {
            self.conn.add_local(id);
        } else {
            self.conn.remove_local(id);
        }
    }
}
