//! A transport endpoint as a host stack sees it: model packets and time in,
//! packets and a timer deadline out, a stream socket for the application.
//! Every transport's connections (crates/proto's TCP, MPTCP and SCTP, QUIC,
//! UDP datagram applications) sit behind this trait, so the host stack
//! driving them is the same for all.

use mplab_proto::Instant;

use crate::apps::StreamSocket;
use crate::packet::Packet;

pub use crate::summary::PathStats;

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
    /// Send side of a multipath connection: its send buffer and the bytes
    /// it holds (written, not yet acknowledged at the connection level).
    /// None for single-path transports.
    fn send_buffer_probe(&self) -> Option<(u64, u64)> {
        None
    }
    /// A multipath sender's count of scheduling decisions with a choice
    /// (`MptcpStats::scheduler_choices`); None for single-path transports.
    fn scheduler_choices(&self) -> Option<u64> {
        None
    }
    /// Whether the first packet this endpoint sends on an address pair the
    /// host has not seen opens it for replies (MPQUIC's new paths); SCTP's
    /// and a SYN's are opened by the host on their own.
    fn binds_new_tuples(&self) -> bool {
        false
    }
    /// The MPTCP token MP_JOINs name this endpoint by.
    fn token(&self) -> Option<u32> {
        None
    }
    /// The host withdrew its address `addr` from MPTCP (`false`) or put it
    /// back (`true`): scenario events `remove_addr` / `add_addr`. Nothing
    /// for single-path transports.
    fn set_addr_in_service(&mut self, _addr: std::net::Ipv4Addr, _in_service: bool) {}
    /// The host marked its address `addr` backup or not (scenario event
    /// `prio`: MPTCP's MP_PRIO). Nothing for single-path transports.
    fn set_addr_backup(&mut self, _addr: std::net::Ipv4Addr, _backup: bool) {}
    /// Aborts the connection (TCP: a RST; MPTCP: MP_FASTCLOSE).
    fn abort(&mut self) {}
    /// Why the connection ended without being closed: `Some(true)` when
    /// its handshake timed out, `Some(false)` when it was reset.
    fn failure(&self) -> Option<bool> {
        None
    }
    /// The first byte the application read that differs from the stream
    /// pattern, described (transports that carry real bytes check them).
    fn read_mismatch(&self) -> Option<&str> {
        None
    }
    /// Writes real bytes into the stream (a tunnel's frames on the
    /// real-packet backends), for transports that carry bytes rather than
    /// the applications' pattern; returns how many were taken.
    fn write_bytes(&mut self, _data: &[u8]) -> usize {
        0
    }
    /// Moves up to `max` bytes of the peer's stream, as they came, to
    /// `out`; returns how many.
    fn read_bytes(&mut self, _max: usize, _out: &mut Vec<u8>) -> usize {
        0
    }
    /// Queues one unreliable datagram beside the stream (MPQUIC's
    /// DATAGRAM frames, RFC 9221); false when the transport has none or
    /// cannot take this one now (too large, not connected).
    fn send_datagram(&mut self, _data: &[u8]) -> bool {
        false
    }
    /// The largest datagram [`Self::send_datagram`] takes now; None when
    /// the transport has none.
    fn max_datagram(&mut self) -> Option<usize> {
        None
    }
    /// The next datagram the peer sent beside the stream.
    fn recv_datagram(&mut self) -> Option<Vec<u8>> {
        None
    }
    /// A UDP endpoint's datagram application (what it sent and received).
    fn datagram_app(&self) -> Option<&crate::datagram::DatagramApp> {
        None
    }
}
