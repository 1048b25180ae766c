//! proto's TCP and MPTCP connections behind one interface: the verbs a
//! host and its applications use, whichever engine a flow runs on. A
//! `transport = "tcp"` flow runs proto's plain TCP engine (the one MPTCP
//! runs per subflow; never an option 30 on the wire). The applications'
//! [`StreamSocket`] is implemented here once, for every type that holds
//! a [`StreamConn`] ([`AsStreamConn`]).

use std::net::SocketAddr;
use std::ops::Range;

use mplab_proto::mptcp::{self, PayloadSource, SubflowStats};
use mplab_proto::{tcp, Instant};
use mplab_wire::TcpHeader;

use crate::apps::StreamSocket;

pub enum StreamConn {
    /// A plain TCP connection knows only ports; the host keeps its
    /// addresses.
    Tcp { c: Box<tcp::Connection>, local: SocketAddr, remote: SocketAddr },
    Mptcp(Box<mptcp::Connection>),
}

/// A segment to send, whichever engine made it.
pub struct Out {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub header: TcpHeader,
    /// Stream offsets of the payload.
    pub data: Range<u64>,
}

impl StreamConn {
    pub fn tcp_connect(cfg: tcp::TcpConfig, local: SocketAddr, remote: SocketAddr, iss: u32, now: Instant) -> StreamConn {
        StreamConn::Tcp { c: Box::new(tcp::Connection::connect(cfg, local, remote, iss, now)), local, remote }
    }

    pub fn tcp_accept(cfg: tcp::TcpConfig, local: SocketAddr, remote: SocketAddr, syn: &TcpHeader, iss: u32, now: Instant) -> Option<StreamConn> {
        let c = tcp::Connection::accept(cfg, local, remote, syn, iss, now).ok()?;
        Some(StreamConn::Tcp { c: Box::new(c), local, remote })
    }

    pub fn mptcp_connect(cfg: mptcp::MptcpConfig, local: SocketAddr, remote: SocketAddr, seed: u64, now: Instant) -> StreamConn {
        StreamConn::Mptcp(Box::new(mptcp::Connection::connect(cfg, local, remote, seed, now)))
    }

    /// None when the SYN is refused.
    pub fn mptcp_accept(cfg: mptcp::MptcpConfig, local: SocketAddr, remote: SocketAddr, syn: &TcpHeader, seed: u64, now: Instant) -> Option<StreamConn> {
        mptcp::Connection::accept(cfg, local, remote, syn, seed, now).map(|c| StreamConn::Mptcp(Box::new(c)))
    }

    pub fn mptcp(&mut self) -> Option<&mut mptcp::Connection> {
        match self {
            StreamConn::Mptcp(c) => Some(c),
            StreamConn::Tcp { .. } => None,
        }
    }

    /// The segment's payload placement in the stream (see the engines).
    pub fn handle_segment(&mut self, now: Instant, local: SocketAddr, remote: SocketAddr, h: &TcpHeader, payload: &[u8]) -> Option<Range<u64>> {
        match self {
            StreamConn::Mptcp(c) => c.handle_segment(now, local, remote, h, payload.len() as u32, Some(payload)),
            StreamConn::Tcp { c, .. } => c.handle_segment(now, h, payload.len() as u32),
        }
    }

    pub fn poll_transmit(&mut self, now: Instant, src: &dyn PayloadSource) -> Option<Out> {
        match self {
            StreamConn::Mptcp(c) => c.poll_transmit(now, src).map(|t| Out { local: t.local, remote: t.remote, header: t.header, data: t.data }),
            StreamConn::Tcp { c, local, remote } => c.poll_transmit(now).map(|t| Out { local: *local, remote: *remote, header: t.header, data: t.payload }),
        }
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        match self {
            StreamConn::Mptcp(c) => c.poll_timeout(),
            StreamConn::Tcp { c, .. } => c.poll_timeout(),
        }
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        match self {
            StreamConn::Mptcp(c) => c.handle_timeout(now),
            StreamConn::Tcp { c, .. } => c.handle_timeout(now),
        }
    }

    /// Bytes the connection accepts now.
    pub fn send_space(&self) -> u64 {
        match self {
            StreamConn::Mptcp(c) => c.send_space(),
            StreamConn::Tcp { c, .. } => c.send_space(),
        }
    }

    /// Bytes ready to be read in order.
    pub fn readable(&self) -> u64 {
        match self {
            StreamConn::Mptcp(c) => c.readable(),
            StreamConn::Tcp { c, .. } => c.readable(),
        }
    }

    pub fn send(&mut self, n: u64) -> u64 {
        match self {
            StreamConn::Mptcp(c) => c.send(n),
            StreamConn::Tcp { c, .. } => c.send(n),
        }
    }

    pub fn recv(&mut self, max: u64) -> Range<u64> {
        match self {
            StreamConn::Mptcp(c) => c.recv(max),
            StreamConn::Tcp { c, .. } => c.recv(max),
        }
    }

    pub fn close(&mut self) {
        match self {
            StreamConn::Mptcp(c) => c.close(),
            StreamConn::Tcp { c, .. } => c.close(),
        }
    }

    /// MP_FASTCLOSE for MPTCP, a RST for plain TCP.
    pub fn abort(&mut self) {
        match self {
            StreamConn::Mptcp(c) => c.abort(),
            StreamConn::Tcp { c, .. } => c.abort(),
        }
    }

    pub fn is_established(&self) -> bool {
        match self {
            StreamConn::Mptcp(c) => c.is_established(),
            StreamConn::Tcp { c, .. } => c.is_established(),
        }
    }

    /// MPTCP that fell back to TCP (never true for a plain TCP flow).
    pub fn fell_back(&self) -> bool {
        match self {
            StreamConn::Mptcp(c) => c.fallback().is_some(),
            StreamConn::Tcp { .. } => false,
        }
    }

    /// The peer closed its side (whether or not everything was read).
    pub fn peer_closed(&self) -> bool {
        match self {
            StreamConn::Mptcp(c) => c.peer_closed(),
            StreamConn::Tcp { c, .. } => c.peer_closed(),
        }
    }

    /// Stream offset below which every byte was acknowledged (DATA_ACKed).
    pub fn acked_offset(&self) -> u64 {
        match self {
            StreamConn::Mptcp(c) => c.acked_offset(),
            StreamConn::Tcp { c, .. } => c.snd_una(),
        }
    }

    /// Ended by a reset from the peer (MP_FASTCLOSE or a RST).
    pub fn was_reset(&self) -> bool {
        match self {
            StreamConn::Mptcp(c) => c.was_reset(),
            StreamConn::Tcp { c, .. } => c.was_reset(),
        }
    }

    /// Our MPTCP token (0: none, plain TCP).
    pub fn local_token(&self) -> u32 {
        match self {
            StreamConn::Mptcp(c) => c.local_token(),
            StreamConn::Tcp { .. } => 0,
        }
    }

    /// An MPTCP connection's send buffer and what it holds (None for TCP).
    pub fn send_buffer(&self) -> Option<(u64, u64)> {
        match self {
            StreamConn::Mptcp(c) => Some((c.snd_buf(), c.send_queued())),
            StreamConn::Tcp { .. } => None,
        }
    }

    /// Per subflow; plain TCP is one "subflow".
    pub fn subflow_stats(&self) -> Vec<SubflowStats> {
        match self {
            StreamConn::Mptcp(c) => c.subflow_stats(),
            StreamConn::Tcp { c, local, remote } => vec![SubflowStats {
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
            StreamConn::Mptcp(c) => c.debug_line(),
            StreamConn::Tcp { c, .. } => c.debug_line(),
        }
    }
}

/// A type whose stream is a [`StreamConn`]: the connection as the
/// applications see it.
pub trait AsStreamConn {
    fn stream_conn(&self) -> &StreamConn;
    fn stream_conn_mut(&mut self) -> &mut StreamConn;
}

impl AsStreamConn for StreamConn {
    fn stream_conn(&self) -> &StreamConn {
        self
    }
    fn stream_conn_mut(&mut self) -> &mut StreamConn {
        self
    }
}

impl<T: AsStreamConn> StreamSocket for T {
    fn send_space(&self) -> u64 {
        self.stream_conn().send_space()
    }
    fn send(&mut self, n: u64) -> u64 {
        self.stream_conn_mut().send(n)
    }
    fn readable(&self) -> u64 {
        self.stream_conn().readable()
    }
    fn recv(&mut self, max: u64) -> Range<u64> {
        self.stream_conn_mut().recv(max)
    }
    fn close(&mut self) {
        self.stream_conn_mut().close()
    }
    fn peer_closed(&self) -> bool {
        self.stream_conn().peer_closed()
    }
}
