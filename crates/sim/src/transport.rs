//! The simulator's transports: the backend's engines
//! ([`mplab_backend::transport`], one file and one `ENGINES` line per
//! transport), which the hosts find by the flow's transport and whose
//! packets they demultiplex by the carrier its registry entry names; and
//! the factory a test can put around them.

use std::net::Ipv4Addr;

use mplab_proto::Instant;
use mplab_scenario::network::{Flow, Network};

pub use crate::config::Unsupported;
use crate::packet::Packet;
pub use mplab_backend::transport::{engine, Endpoint, Engine, QuicEndpoint, SctpEndpoint, StreamEndpoint, UdpEndpoint, ENGINES};
use mplab_backend::transport::CHECKED;

/// Everything in `net` the simulator cannot run: the stack's unknown
/// names ([`crate::config::unsupported`]) and transports it has no engine for.
pub fn unsupported(net: &Network) -> Vec<Unsupported> {
    let mut out = crate::config::unsupported(net);
    for f in net.flows.iter().filter(|f| engine(f.transport).is_none()) {
        out.push(Unsupported { flow: f.id, field: "transport", message: format!("transport {:?}: it is not implemented by the simulator", f.transport.name()) });
    }
    out
}

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
