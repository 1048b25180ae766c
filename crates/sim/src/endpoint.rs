//! A transport endpoint as the simulated host sees it: packets and time in,
//! packets and a timer deadline out, a stream socket for the application.
//! TCP (and MPTCP) connections from crates/proto sit behind this trait, so
//! the host stack is the same for both.

use mplab_proto::Instant;

use crate::apps::StreamSocket;
use crate::packet::Packet;

/// Per-path statistics a probe samples (one entry per subflow; plain TCP has one).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PathStats {
    pub local: String,
    pub remote: String,
    pub backup: bool,
    pub cwnd: u64,
    pub in_flight: u64,
    pub srtt_ns: Option<u64>,
    pub bytes_sent: u64,
    /// Payload bytes this path delivered to the peer (acknowledged).
    pub bytes_acked: u64,
    pub retransmitted_segments: u64,
    pub rto_count: u64,
    pub state: crate::results::SubflowState,
}

impl PathStats {
    /// One TCP connection (a subflow, or plain TCP) as a path.
    pub fn from_tcp(local: impl ToString, remote: impl ToString, backup: bool, s: &mplab_proto::tcp::TcpStats) -> Self {
        PathStats {
            local: local.to_string(),
            remote: remote.to_string(),
            backup,
            cwnd: s.cwnd,
            in_flight: s.in_flight,
            srtt_ns: s.srtt.map(|d| d.as_nanos() as u64),
            bytes_sent: s.bytes_sent,
            bytes_acked: s.bytes_acked,
            retransmitted_segments: s.segments_retransmitted,
            rto_count: s.rto_count,
            state: crate::results::SubflowState::Established,
        }
    }
}

/// What changed after the endpoint processed input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    pub connected: bool,
    pub closed: bool,
    /// A payload was placed at a stream offset different from its tag.
    pub misplaced: bool,
    /// A payload a middlebox had rewritten was accepted: the application
    /// will read wrong bytes.
    pub corrupted: bool,
}

pub trait Endpoint: StreamSocket {
    /// A segment addressed to this endpoint arrived.
    fn on_packet(&mut self, now: Instant, pkt: &Packet) -> Progress;
    /// Writes the next segment to send, if any, into `out` (a slot of the
    /// simulator's packet pool, holding an earlier packet: overwrite all of
    /// it, e.g. with [`Packet::set`]); false when there is nothing to send.
    /// Building the ~400-byte packet where it stays saves moving it twice
    /// per segment.
    fn poll_transmit_into(&mut self, now: Instant, out: &mut Packet) -> bool;
    /// Earliest time `on_timeout` must run.
    fn poll_timeout(&self) -> Option<Instant>;
    fn on_timeout(&mut self, now: Instant) -> Progress;
    fn is_established(&self) -> bool;
    fn fell_back(&self) -> bool {
        false
    }
    fn paths(&self) -> Vec<PathStats>;
    /// A SYN carrying MP_JOIN for this endpoint's token arrived on a new
    /// 4-tuple: true when it became a subflow of this endpoint.
    fn accept_join(&mut self, _now: Instant, _syn: &Packet) -> bool {
        false
    }
    /// Receive side of a multipath connection: bytes in its connection-level
    /// out-of-order queue, and how long (ns) the oldest of them has waited
    /// for the hole before it (0: nothing blocked). None for plain TCP.
    fn reorder_probe(&self, _now: Instant) -> Option<(u64, u64)> {
        None
    }
    /// The MPTCP token MP_JOINs name this endpoint by.
    fn token(&self) -> Option<u32> {
        None
    }
}
