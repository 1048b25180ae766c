//! The simulator's transports: for every transport a scenario names
//! (`mplab_scenario::plugins::transports`), the engine that creates its
//! endpoints, each in its own file with its endpoint type. A new transport
//! is its file here (its [`Endpoint`] and its [`Engine`]) and one line in
//! [`ENGINES`]; the hosts find it by the flow's transport, and demultiplex
//! its packets by the carrier its registry entry names.

mod mptcp;
mod mptcp_segment;
mod quic;
mod sctp;
mod stream;
mod tcp;
mod udp;

use std::net::Ipv4Addr;

use mplab_proto::Instant;
use mplab_scenario::network::{Flow, Network, Transport};

pub use crate::config::Unsupported;
use crate::endpoint::Endpoint;
use crate::packet::Packet;
pub use self::quic::QuicEndpoint;
pub use self::sctp::SctpEndpoint;
pub use self::stream::StreamEndpoint;
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

/// Every transport the simulator runs, by its scenario name; one line each.
pub static ENGINES: &[(&str, &dyn Engine)] = &[
    ("tcp", &tcp::Tcp),
    ("mptcp", &mptcp::Mptcp),
    ("sctp", &sctp::Sctp),
    ("cmt-sctp", &sctp::Sctp),
    ("udp", &udp::Udp),
    ("quic", &quic::Quic),
];

/// The simulator's engine for `t`.
pub fn engine(t: Transport) -> Option<&'static dyn Engine> {
    ENGINES.iter().find(|(name, _)| *name == t.name()).map(|(_, e)| *e)
}

/// Everything in `net` the simulator cannot run: the stack's unknown
/// names ([`crate::config::unsupported`]) and transports it has no engine for.
pub fn unsupported(net: &Network) -> Vec<Unsupported> {
    let mut out = crate::config::unsupported(net);
    for f in net.flows.iter().filter(|f| engine(f.transport).is_none()) {
        out.push(Unsupported { flow: f.id, field: "transport", message: format!("transport {:?}: it is not implemented by the simulator", f.transport.name()) });
    }
    out
}

/// `World::with_factory` refuses a network [`unsupported`] objects to, so
/// every flow's configuration translates.
const CHECKED: &str = "configuration checked by transport::unsupported";

/// Creates the transport endpoints of a flow: the simulator's engines, or
/// a test's own around them.
pub trait EndpointFactory {
    /// The client end, opening the connection at `now`.
    fn connect(&mut self, net: &Network, flow: &Flow, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>>;
    /// The server end, from the first packet that reached it.
    fn accept(&mut self, net: &Network, flow: &Flow, local: Ipv4Addr, remote: Ipv4Addr, first: &Packet, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>>;
}

/// Each flow's endpoints from its transport's engine. An MPTCP server
/// answers a SYN without MP_CAPABLE as plain TCP (fallback).
#[derive(Default)]
pub struct SimFactory;

impl EndpointFactory for SimFactory {
    fn connect(&mut self, net: &Network, f: &Flow, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        engine(f.transport).expect(CHECKED).connect(net, f, seed, now)
    }

    fn accept(&mut self, net: &Network, f: &Flow, local: Ipv4Addr, remote: Ipv4Addr, first: &Packet, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        engine(f.transport).expect(CHECKED).accept(net, f, local, remote, first, seed, now)
    }
}
