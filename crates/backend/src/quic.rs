//! QUIC (RFC 9000) for `transport = "quic"`: one end of a connection of
//! quinn-proto, a sans-IO QUIC state machine, as a byte stream for mplab's
//! applications. Datagrams and time in, datagrams and a timer out, so the
//! same code runs on the simulator's virtual clock and on the kernel
//! backend's UDP sockets.
//!
//! Each end writes its bytes on a unidirectional stream it opens with its
//! first write (or its close), and reads the one the peer opens: together
//! a two-way byte stream with the stream pattern in it, checked by the
//! reader like every transport's. TLS 1.3 runs for real, as
//! `quic_common` sets it up: a self-signed Ed25519 certificate the client
//! accepts without a chain of trust but whose handshake signature it
//! verifies.

use core::ops::Range;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use quinn_proto::crypto::rustls::QuicClientConfig;
use quinn_proto::{ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, Event, ServerConfig, StreamEvent, StreamId};

use crate::apps::fill_pattern;
use crate::quic_common::{self, at, ns, rng_seed};

/// The largest UDP payload quinn may send (a 1500-byte path less IPv4 and
/// UDP headers): its path MTU discovery stops there.
const MAX_UDP_PAYLOAD: u16 = 1472;
/// Bytes the reader pulls from quinn ahead of the application.
const READ_AHEAD: usize = 1 << 20;

fn client_config() -> Result<ClientConfig, String> {
    let tls = quic_common::client_tls(quic_common::provider(), None)?;
    let q = QuicClientConfig::try_from(tls).map_err(|e| e.to_string())?;
    let mut c = ClientConfig::new(Arc::new(q));
    c.transport_config(transport());
    Ok(c)
}

fn server_config() -> Result<ServerConfig, String> {
    let tls = quic_common::server_tls(quic_common::provider(), None, None)?;
    let q = quinn_proto::crypto::rustls::QuicServerConfig::try_from(tls).map_err(|e| e.to_string())?;
    let mut c = ServerConfig::with_crypto(Arc::new(q));
    c.transport_config(transport());
    Ok(c)
}

/// quinn's defaults, but MTU discovery may fill a 1500-byte IPv4 path
/// (quinn stops at 1452 by default, an IPv6 path's size).
fn transport() -> Arc<quinn_proto::TransportConfig> {
    let mut mtud = quinn_proto::MtuDiscoveryConfig::default();
    mtud.upper_bound(MAX_UDP_PAYLOAD);
    let mut t = quinn_proto::TransportConfig::default();
    t.mtu_discovery_config(Some(mtud));
    Arc::new(t)
}

fn endpoint_config() -> Arc<EndpointConfig> {
    let mut c = EndpointConfig::default();
    c.max_udp_payload_size(MAX_UDP_PAYLOAD).ok();
    Arc::new(c)
}

/// One end of a QUIC connection.
pub struct QuicEnd {
    ep: Endpoint,
    conn: Option<(ConnectionHandle, Connection)>,
    local: SocketAddr,
    /// Datagrams the endpoint itself answered with (a refused connection).
    responses: VecDeque<(SocketAddr, Vec<u8>)>,
    established: bool,
    /// Why the connection ended, if it did.
    pub closed: Option<String>,
    next_timeout: Option<Instant>,
    tx: Option<StreamId>,
    written: u64,
    blocked: bool,
    finished: bool,
    rx: Option<StreamId>,
    rx_buf: VecDeque<u8>,
    read: u64,
    rx_fin: bool,
    /// A read byte differed from the stream pattern.
    pub mismatch: Option<String>,
    scratch: Vec<u8>,
}

impl QuicEnd {
    fn new(ep: Endpoint, local: SocketAddr) -> QuicEnd {
        QuicEnd {
            ep,
            conn: None,
            local,
            responses: VecDeque::new(),
            established: false,
            closed: None,
            next_timeout: None,
            tx: None,
            written: 0,
            blocked: false,
            finished: false,
            rx: None,
            rx_buf: VecDeque::new(),
            read: 0,
            rx_fin: false,
            mismatch: None,
            scratch: Vec::new(),
        }
    }

    /// The client, sending its first flight at `now_ns`.
    pub fn client(local: SocketAddr, remote: SocketAddr, seed: u64, now_ns: u64) -> Result<QuicEnd, String> {
        let mut ep = Endpoint::new(endpoint_config(), None, true, Some(rng_seed(seed)));
        let conn = ep.connect(at(now_ns), client_config()?, remote, "mplab").map_err(|e| e.to_string())?;
        let mut q = QuicEnd::new(ep, local);
        q.conn = Some(conn);
        q.drive();
        Ok(q)
    }

    /// The server on `local`, answering the first client that comes.
    pub fn server(local: SocketAddr, seed: u64) -> Result<QuicEnd, String> {
        let ep = Endpoint::new(endpoint_config(), Some(Arc::new(server_config()?)), true, Some(rng_seed(seed)));
        Ok(QuicEnd::new(ep, local))
    }

    /// A UDP datagram from `from` arrived.
    pub fn on_datagram(&mut self, now_ns: u64, from: SocketAddr, data: &[u8]) {
        let now = at(now_ns);
        let mut buf = Vec::new();
        match self.ep.handle(now, from, Some(self.local.ip()), None, data.into(), &mut buf) {
            Some(DatagramEvent::NewConnection(incoming)) => {
                if self.conn.is_some() {
                    // One connection per flow: another is refused.
                    let t = self.ep.refuse(incoming, &mut buf);
                    self.responses.push_back((t.destination, buf[..t.size].to_vec()));
                } else {
                    match self.ep.accept(incoming, now, &mut buf, None) {
                        Ok(c) => self.conn = Some(c),
                        Err(e) => {
                            if let Some(t) = e.response {
                                self.responses.push_back((t.destination, buf[..t.size].to_vec()));
                            }
                        }
                    }
                }
            }
            Some(DatagramEvent::ConnectionEvent(h, ev)) => {
                if let Some((ch, c)) = self.conn.as_mut().filter(|(ch, _)| *ch == h) {
                    let _ = ch;
                    c.handle_event(ev);
                }
            }
            Some(DatagramEvent::Response(t)) => self.responses.push_back((t.destination, buf[..t.size].to_vec())),
            None => {}
        }
        self.drive();
    }

    /// The next datagram to send: (destination, payload).
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<(SocketAddr, Vec<u8>)> {
        if let Some(r) = self.responses.pop_front() {
            return Some(r);
        }
        let (_, c) = self.conn.as_mut()?;
        let mut buf = Vec::new();
        let t = c.poll_transmit(at(now_ns), 1, &mut buf);
        let out = t.map(|t| (t.destination, buf[..t.size].to_vec()));
        self.next_timeout = c.poll_timeout();
        out
    }

    pub fn poll_timeout(&self) -> Option<u64> {
        self.next_timeout.map(ns)
    }

    pub fn on_timeout(&mut self, now_ns: u64) {
        if let Some((_, c)) = self.conn.as_mut() {
            if c.poll_timeout().is_some_and(|t| t <= at(now_ns)) {
                c.handle_timeout(at(now_ns));
            }
        }
        self.drive();
    }

    pub fn is_established(&self) -> bool {
        self.established
    }

    /// After any input: the connection's events, the peer's stream, what
    /// can be read, the next timer.
    fn drive(&mut self) {
        let Some((ch, c)) = self.conn.as_mut() else { return };
        while let Some(ev) = c.poll_endpoint_events() {
            if let Some(back) = self.ep.handle_event(*ch, ev) {
                c.handle_event(back);
            }
        }
        while let Some(ev) = c.poll() {
            match ev {
                Event::Connected => self.established = true,
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    if self.rx.is_none() {
                        self.rx = c.streams().accept(Dir::Uni);
                    }
                }
                Event::Stream(StreamEvent::Writable { .. }) => self.blocked = false,
                Event::ConnectionLost { reason } => self.closed = Some(reason.to_string()),
                _ => {}
            }
        }
        if let Some(id) = self.rx {
            let mut rs = c.recv_stream(id);
            let read = rs.read(true);
            if let Ok(mut chunks) = read {
                while self.rx_buf.len() < READ_AHEAD {
                    match chunks.next(READ_AHEAD - self.rx_buf.len()) {
                        Ok(Some(chunk)) => self.rx_buf.extend(chunk.bytes.iter()),
                        Ok(None) => {
                            self.rx_fin = true;
                            break;
                        }
                        Err(_) => break,
                    }
                }
                let _ = chunks.finalize();
            }
        }
        self.next_timeout = c.poll_timeout();
    }

    /// This end's stream, opened on first use.
    fn tx_stream(&mut self) -> Option<StreamId> {
        if self.tx.is_none() {
            let (_, c) = self.conn.as_mut()?;
            self.tx = c.streams().open(Dir::Uni);
        }
        self.tx
    }

    // The byte stream, as `apps::StreamSocket` wants it.

    pub fn send_space(&self) -> u64 {
        if self.blocked || self.finished || !self.established {
            0
        } else {
            64 * 1024
        }
    }

    pub fn send(&mut self, n: u64) -> u64 {
        if self.send_space() == 0 {
            return 0;
        }
        let Some(id) = self.tx_stream() else { return 0 };
        let n = n.min(64 * 1024) as usize;
        self.scratch.resize(n, 0);
        fill_pattern(self.written, &mut self.scratch);
        let Some((_, c)) = self.conn.as_mut() else { return 0 };
        match c.send_stream(id).write(&self.scratch) {
            Ok(k) => {
                self.written += k as u64;
                self.blocked = k < n;
                k as u64
            }
            Err(_) => {
                self.blocked = true;
                0
            }
        }
    }

    pub fn readable(&self) -> u64 {
        self.rx_buf.len() as u64
    }

    pub fn recv(&mut self, max: u64) -> Range<u64> {
        quic_common::recv_pattern(&mut self.rx_buf, &mut self.read, &mut self.mismatch, max)
    }

    pub fn close(&mut self) {
        if self.finished {
            return;
        }
        if let Some(id) = self.tx_stream() {
            if let Some((_, c)) = self.conn.as_mut() {
                self.finished = c.send_stream(id).finish().is_ok();
            }
        }
    }

    pub fn peer_closed(&self) -> bool {
        self.rx_fin && self.rx_buf.is_empty()
    }

    /// Round-trip time and congestion window, for the probes.
    pub fn path(&self) -> Option<(u64, u64, u64)> {
        let (_, c) = self.conn.as_ref()?;
        let s = c.stats();
        Some((c.rtt().as_nanos() as u64, s.path.cwnd, s.path.lost_packets))
    }
}

impl crate::apps::StreamSocket for QuicEnd {
    fn send_space(&self) -> u64 {
        QuicEnd::send_space(self)
    }
    fn send(&mut self, n: u64) -> u64 {
        QuicEnd::send(self, n)
    }
    fn readable(&self) -> u64 {
        QuicEnd::readable(self)
    }
    fn recv(&mut self, max: u64) -> Range<u64> {
        QuicEnd::recv(self, max)
    }
    fn close(&mut self) {
        QuicEnd::close(self)
    }
    fn peer_closed(&self) -> bool {
        QuicEnd::peer_closed(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Two ends joined by a 10 ms path with no loss and no rate limit:
    /// the server sends `bytes`, closes; returns the sizes of every
    /// datagram sent, in order, and what the client read.
    fn transfer(bytes: u64, seed: u64) -> (Vec<usize>, u64, Option<String>, u64) {
        let (ca, sa): (SocketAddr, SocketAddr) = ("10.0.0.1:49152".parse().unwrap(), "10.0.0.2:5001".parse().unwrap());
        let mut c = QuicEnd::client(ca, sa, seed, 0).unwrap();
        let mut s = QuicEnd::server(sa, seed + 1).unwrap();
        // (arrival time, to the server?, from, bytes)
        let mut wire: Vec<(u64, bool, SocketAddr, Vec<u8>)> = Vec::new();
        let mut sizes = Vec::new();
        let mut now = 0;
        let mut sent = 0;
        let mut got = 0;
        let mut done_at = None;
        for _ in 0..200_000 {
            for (end, to_server, from) in [(&mut c, true, ca), (&mut s, false, sa)] {
                while let Some((_, d)) = end.poll_transmit(now) {
                    sizes.push(d.len());
                    wire.push((now + 10 * MS, to_server, from, d));
                }
            }
            if s.is_established() && sent < bytes {
                sent += s.send(bytes - sent);
                if sent == bytes {
                    s.close();
                }
            }
            got += c.recv(c.readable()).end - got;
            if c.peer_closed() && done_at.is_none() {
                done_at = Some(now);
                break;
            }
            let next_wire = wire.iter().map(|w| w.0).min();
            let next = [next_wire, c.poll_timeout(), s.poll_timeout()].into_iter().flatten().min();
            let Some(t) = next else { break };
            now = t.max(now);
            let (due, rest): (Vec<_>, Vec<_>) = wire.into_iter().partition(|w| w.0 <= now);
            wire = rest;
            for (_, to_server, from, d) in due {
                if to_server { s.on_datagram(now, from, &d) } else { c.on_datagram(now, from, &d) }
            }
            if c.poll_timeout().is_some_and(|t| t <= now) {
                c.on_timeout(now);
            }
            if s.poll_timeout().is_some_and(|t| t <= now) {
                s.on_timeout(now);
            }
        }
        (sizes, got, c.mismatch.clone(), done_at.unwrap_or(u64::MAX))
    }

    #[test]
    fn a_download_arrives_whole_and_runs_the_same_every_time() {
        let (sizes, got, mismatch, done) = transfer(2_000_000, 7);
        assert_eq!(got, 2_000_000);
        assert_eq!(mismatch, None);
        assert!(done < 2_000 * MS, "{done}");
        // MTU discovery grows the datagrams to the 1472-byte payload.
        assert_eq!(sizes.iter().max(), Some(&1472));
        let (again, ..) = transfer(2_000_000, 7);
        assert_eq!(sizes, again, "the same datagrams in the same order");
    }
}
