//! One flow end's connection on mplab's stack: an MPTCP connection
//! (`mptcp::Connection`) or, for `transport = "tcp"` flows, proto's plain
//! TCP engine (`tcp::Connection`, the same engine MPTCP runs per subflow;
//! never an option 30 on the wire). The host loop drives both through
//! this one interface, so the applications, verification and probes are
//! the same for either.

use std::net::SocketAddr;
use std::ops::Range;

use mplab_proto::mptcp::{self, PayloadSource, SubflowStats};
use mplab_proto::{tcp, Instant};
use mplab_wire::TcpHeader;

pub enum Conn {
    Mp(Box<mptcp::Connection>),
    /// A plain TCP connection knows only ports; the driver keeps its
    /// addresses.
    Tcp { c: Box<tcp::Connection>, local: SocketAddr, remote: SocketAddr },
}

/// A segment to send, whichever engine made it.
pub struct Out {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub header: TcpHeader,
    /// Stream offsets of the payload.
    pub data: Range<u64>,
}

impl Conn {
    pub fn tcp_connect(cfg: tcp::TcpConfig, local: SocketAddr, remote: SocketAddr, iss: u32, now: Instant) -> Conn {
        Conn::Tcp { c: Box::new(tcp::Connection::connect(cfg, local, remote, iss, now)), local, remote }
    }

    pub fn tcp_accept(cfg: tcp::TcpConfig, local: SocketAddr, remote: SocketAddr, syn: &TcpHeader, iss: u32, now: Instant) -> Option<Conn> {
        let c = tcp::Connection::accept(cfg, local, remote, syn, iss, now).ok()?;
        Some(Conn::Tcp { c: Box::new(c), local, remote })
    }

    pub fn mptcp(&mut self) -> Option<&mut mptcp::Connection> {
        match self {
            Conn::Mp(c) => Some(c),
            Conn::Tcp { .. } => None,
        }
    }

    /// The segment's payload placement in the stream (see the engines).
    pub fn handle_segment(&mut self, now: Instant, local: SocketAddr, remote: SocketAddr, h: &TcpHeader, payload: &[u8]) -> Option<Range<u64>> {
        match self {
            Conn::Mp(c) => c.handle_segment(now, local, remote, h, payload.len() as u32, Some(payload)),
            Conn::Tcp { c, .. } => c.handle_segment(now, h, payload.len() as u32),
        }
    }

    pub fn poll_transmit(&mut self, now: Instant, src: &dyn PayloadSource) -> Option<Out> {
        match self {
            Conn::Mp(c) => c.poll_transmit(now, src).map(|t| Out { local: t.local, remote: t.remote, header: t.header, data: t.data }),
            Conn::Tcp { c, local, remote } => c.poll_transmit(now).map(|t| Out { local: *local, remote: *remote, header: t.header, data: t.payload }),
        }
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Conn::Mp(c) => c.poll_timeout(),
            Conn::Tcp { c, .. } => c.poll_timeout(),
        }
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        match self {
            Conn::Mp(c) => c.handle_timeout(now),
            Conn::Tcp { c, .. } => c.handle_timeout(now),
        }
    }

    /// Bytes the connection accepts now.
    pub fn send_space(&self) -> u64 {
        match self {
            Conn::Mp(c) => c.send_space(),
            Conn::Tcp { c, .. } => c.send_space(),
        }
    }

    /// Bytes ready to be read in order.
    pub fn readable(&self) -> u64 {
        match self {
            Conn::Mp(c) => c.readable(),
            Conn::Tcp { c, .. } => c.readable(),
        }
    }

    pub fn send(&mut self, n: u64) -> u64 {
        match self {
            Conn::Mp(c) => c.send(n),
            Conn::Tcp { c, .. } => c.send(n),
        }
    }

    pub fn recv(&mut self, max: u64) -> Range<u64> {
        match self {
            Conn::Mp(c) => c.recv(max),
            Conn::Tcp { c, .. } => c.recv(max),
        }
    }

    pub fn close(&mut self) {
        match self {
            Conn::Mp(c) => c.close(),
            Conn::Tcp { c, .. } => c.close(),
        }
    }

    /// MP_FASTCLOSE for MPTCP, a RST for plain TCP.
    pub fn abort(&mut self) {
        match self {
            Conn::Mp(c) => c.abort(),
            Conn::Tcp { c, .. } => c.abort(),
        }
    }

    pub fn is_established(&self) -> bool {
        match self {
            Conn::Mp(c) => c.is_established(),
            Conn::Tcp { c, .. } => c.is_established(),
        }
    }

    /// MPTCP that fell back to TCP (never true for a plain TCP flow).
    pub fn fell_back(&self) -> bool {
        match self {
            Conn::Mp(c) => c.fallback().is_some(),
            Conn::Tcp { .. } => false,
        }
    }

    pub fn peer_closed(&self) -> bool {
        match self {
            Conn::Mp(c) => c.peer_closed(),
            Conn::Tcp { c, .. } => c.peer_closed(),
        }
    }

    /// Stream offset below which every byte was acknowledged (DATA_ACKed).
    pub fn acked_offset(&self) -> u64 {
        match self {
            Conn::Mp(c) => c.acked_offset(),
            Conn::Tcp { c, .. } => c.snd_una(),
        }
    }

    /// Ended by a reset from the peer (MP_FASTCLOSE or a RST).
    pub fn was_reset(&self) -> bool {
        match self {
            Conn::Mp(c) => c.was_reset(),
            Conn::Tcp { c, .. } => c.was_reset(),
        }
    }

    /// Our MPTCP token (0: none, plain TCP).
    pub fn local_token(&self) -> u32 {
        match self {
            Conn::Mp(c) => c.local_token(),
            Conn::Tcp { .. } => 0,
        }
    }

    /// Per subflow; plain TCP is one "subflow".
    /// An MPTCP connection's send buffer and what it holds (None for TCP).
    pub fn send_buffer(&self) -> Option<(u64, u64)> {
        match self {
            Conn::Mp(c) => Some((c.snd_buf(), c.send_queued())),
            Conn::Tcp { .. } => None,
        }
    }

    pub fn subflow_stats(&self) -> Vec<SubflowStats> {
        match self {
            Conn::Mp(c) => c.subflow_stats(),
            Conn::Tcp { c, local, remote } => vec![SubflowStats {
                local: *local,
                remote: *remote,
                backup: false,
                established: c.is_established(),
                closed: c.is_closed(),
                finished: c.is_finished(),
                stale: false,
                tcp: c.stats(),
            }],
        }
    }

    pub fn debug_line(&self) -> String {
        match self {
            Conn::Mp(c) => c.debug_line(),
            Conn::Tcp { c, .. } => c.debug_line(),
        }
    }
}
