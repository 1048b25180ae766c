//! Transports as one plug-in axis: for every transport a scenario names
//! (`mplab_scenario::plugins::transports`, its facts), the engine that
//! creates its endpoints. An [`Endpoint`] is sans-IO: model packets
//! ([`crate::packet::Packet`]) and time in, packets and a timer deadline
//! out, a stream socket for the application. The simulator drives every
//! engine; the userspace backend drives them on real packets through its
//! TUN (TCP and MPTCP through the host stack's fast path over the same
//! [`crate::host::StreamConn`]).
//!
//! A new transport is one file here (its endpoint and its [`Engine`]) and
//! one line in [`ENGINES`], beside its facts line in the scenario's
//! transport registry.

pub mod endpoint;
#[cfg(any(test, feature = "test-fixtures"))]
mod fixture_stop_and_wait;
mod mpquic;
mod mptcp;
pub mod mptcp_segment;
mod quic;
mod sctp;
mod stream;
mod tcp;
mod udp;

use std::net::Ipv4Addr;

use mplab_proto::Instant;
use mplab_scenario::network::{Flow, Network, Transport};

pub use self::endpoint::{Endpoint, PathStats, Progress};
use crate::packet::Packet;
pub use self::mpquic::MpQuicEndpoint;
pub use self::quic::QuicEndpoint;
pub use self::sctp::SctpEndpoint;
pub use self::stream::{tcp_state, StreamEndpoint};
pub use self::udp::UdpEndpoint;

/// What creates the endpoints of one transport's flows. `seed` makes
/// everything random about an endpoint (ISNs, MPTCP keys, nonces).
pub trait Engine: Sync {
    /// The client end, opening the connection at `now`.
    fn connect(&self, net: &Network, flow: &Flow, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>>;
    /// The server end, from the first packet that reached it (a SYN, an
    /// INIT, a first datagram) at `local` from `remote`.
    fn accept(&self, net: &Network, flow: &Flow, local: Ipv4Addr, remote: Ipv4Addr, first: &Packet, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>>;
}

/// Every transport with an engine, by its scenario name; one line each.
pub static ENGINES: &[(&str, &dyn Engine)] = &[
    ("tcp", &tcp::Tcp),
    ("mptcp", &mptcp::Mptcp),
    ("sctp", &sctp::Sctp),
    ("cmt-sctp", &sctp::Sctp),
    ("udp", &udp::Udp),
    ("quic", &quic::Quic),
    ("mpquic", &mpquic::MpQuic),
    #[cfg(any(test, feature = "test-fixtures"))]
    ("fixture-stop-and-wait", &fixture_stop_and_wait::StopAndWaitEngine),
];

/// The engine for `t`, if one is registered.
pub fn engine(t: Transport) -> Option<&'static dyn Engine> {
    ENGINES.iter().find(|(name, _)| *name == t.name()).map(|(_, e)| *e)
}

/// A backend creates endpoints only for networks whose configuration it
/// checked (`config::unsupported` and a registered engine for each flow).
pub const CHECKED: &str = "configuration checked by the backend's unsupported()";
