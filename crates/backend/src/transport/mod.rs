//! Transports as one plug-in axis: for every transport a scenario names
//! (`mplab_scenario::plugins::transports`, its facts), the engine that
//! creates its endpoints. An [`Endpoint`] is sans-IO: model packets
//! ([`crate::packet::Packet`]) and time in, packets and a timer deadline
//! out, a stream socket for the application. The simulator drives every
//! engine; the userspace backend drives them on real packets through its
//! TUN (TCP and MPTCP through the host stack's fast path over the same
//! [`crate::host::StreamConn`]).
//!
//! A new transport is one file here and its `mod` line: the file holds its
//! endpoint, its [`Engine`], and adds both its engine ([`PLUGGED_ENGINES`]) and
//! its facts (`mplab_scenario::plugins::transports::PLUGGED_FACTS`) to the
//! registries from where it stands (transport/fixture_stop_and_wait.rs
//! shows how). The bundled transports' facts are the scenario format's own
//! vocabulary, listed in its registry, and their engines in [`ENGINES`].

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

/// Every bundled transport's engine, by its scenario name; one line each.
pub static ENGINES: &[(&str, &dyn Engine)] = &[
    ("tcp", &tcp::Tcp),
    ("mptcp", &mptcp::Mptcp),
    ("sctp", &sctp::Sctp),
    ("cmt-sctp", &sctp::Sctp),
    ("udp", &udp::Udp),
    ("quic", &quic::Quic),
    ("mpquic", &mpquic::MpQuic),
];

/// The engines of transports plugged in from their own file, which adds
/// its `(name, engine)` here with `#[linkme::distributed_slice(PLUGGED_ENGINES)]`.
#[linkme::distributed_slice]
pub static PLUGGED_ENGINES: [(&'static str, &'static dyn Engine)];

/// The engine for `t`, if one is registered.
pub fn engine(t: Transport) -> Option<&'static dyn Engine> {
    ENGINES.iter().chain(PLUGGED_ENGINES.iter()).find(|(name, _)| *name == t.name()).map(|(_, e)| *e)
}

/// A backend creates endpoints only for networks whose configuration it
/// checked (`config::unsupported` and a registered engine for each flow).
pub const CHECKED: &str = "configuration checked by the backend's unsupported()";

#[cfg(test)]
mod tests {
    use super::*;
    use mplab_scenario::plugins::transports;

    /// The fixture's file, with only its `mod` line beside it, made its
    /// name known to scenario files and its engine to the backends; and
    /// every transport a scenario may name has exactly one engine.
    #[test]
    fn a_transport_file_registers_its_facts_and_its_engine() {
        let t = Transport::from_name("fixture-stop-and-wait").expect("the fixture's facts are plugged in");
        assert!(engine(t).is_some());
        assert!(mplab_scenario::plugins::all().iter().any(|(axis, a)| *axis == "transport" && a.name == "fixture-stop-and-wait"));
        for e in transports::entries() {
            let n = ENGINES.iter().chain(PLUGGED_ENGINES.iter()).filter(|(name, _)| *name == e.about.name).count();
            assert_eq!(n, 1, "transport {}: {n} engines", e.about.name);
        }
    }
}
