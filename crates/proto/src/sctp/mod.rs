//! A sans-IO SCTP association (RFC 9260) with Concurrent Multipath
//! Transfer: the CMT-SCTP side of the MPTCP comparison.
//!
//! # Driving it
//!
//! Like the TCP engine, the association does no I/O and reads no clock.
//! A driver (the simulator host, a test network, a real backend) feeds it
//! parsed packets and time, and takes packets and a timer deadline out:
//!
//! ```text
//! let mut a = Association::connect(cfg, local_addrs, port, remote_addrs, peer_port, seed, now);
//! // or Association::listen(cfg, local_addrs, port, secret, seed) on the passive side
//! loop {
//!     while let Some(t) = a.poll_transmit(now) {
//!         // t.packet.encode() -> bytes; send from t.src to t.dst
//!     }
//!     // wait until a packet arrives or a.poll_timeout() passes, then:
//!     a.on_packet(now, src, dst, &Packet::decode(&bytes)?);  // or
//!     a.on_timeout(now);
//!     // application side: a.send(now, bytes) / a.send_message(..);
//!     //                   a.recv(now, &mut buf)
//! }
//! ```
//!
//! * [`Association::on_packet`]`(now, src, dst, &Packet)`: one received
//!   packet and the IP addresses it travelled between.
//! * [`Association::poll_transmit`]`(now) -> Option<Transmit>`: the next
//!   packet, with the source and destination address the association chose
//!   (this is where multihoming and CMT show); call until `None`.
//! * [`Association::poll_timeout`]` -> Option<Instant>`: the earliest timer
//!   (T1-init/cookie, T2-shutdown, T3-rtx and heartbeat per destination,
//!   delayed SACK); [`Association::on_timeout`]`(now)` once it has passed.
//! * [`Association::send`] (bytes as a stream, cut into one-packet
//!   messages) or [`Association::send_message`] (one message, fragmented);
//!   [`Association::recv`] reads delivered bytes in order.
//! * [`Association::stats`] and [`Association::path_stats`]: per association
//!   (rwnd-blocked and send-buffer-blocked time, receive buffer occupancy,
//!   reordering wait) and per destination (bytes, retransmissions, fast
//!   retransmits, timeouts, cwnd, srtt).
//!
//! Packets carry real user bytes; the codec is `mplab_wire::sctp`.
//!
//! # Modules
//!
//! * [`config`]: settings ([`SctpConfig`], [`CmtMode`], [`RtxPolicy`]).
//! * [`assoc`]: handshake, tags, dispatch, sending, SACK processing, timers.
//! * [`path`]: per-destination state.
//! * [`cc`]: RFC 9260 congestion control and CMT/RPv1, RPv2, MPTCP-like.
//! * [`cmt`]: SFR and DAC miss indications, retransmission policies.
//! * [`recv`]: receive map, buffer, delayed SACK, SACK/NR-SACK building.
//! * [`send`]: send buffer and outstanding chunks.
//! * [`rto`], [`tsn`]: RTO estimator, TSN serial arithmetic.
//!
//! See `docs/sctp.md` for what is and is not modelled.

pub mod assoc;
pub mod cc;
pub mod cmt;
pub mod config;
pub mod path;
pub mod recv;
pub mod rto;
pub mod send;
pub mod tsn;

#[cfg(test)]
mod tests;

pub use assoc::{AssocStats, Association, CloseReason, State, Transmit};
pub use config::{CmtMode, RtxPolicy, SctpConfig};
pub use path::{PathState, PathStats};
pub use recv::RecvStats;
