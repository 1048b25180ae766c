//! The factory that creates the simulator's transport endpoints (TCP and
//! MPTCP from crates/proto, configured by `mplab_backend::config`), and
//! what the simulator refuses to run.

use std::net::{Ipv4Addr, SocketAddr};

use mplab_proto::Instant;
use mplab_scenario::network::{self, Flow, Network};

use crate::endpoint::Endpoint;
use crate::packet::Packet;
use crate::config::{flow_tcp_end_config, mptcp_config, sctp_addrs, sctp_config, sctp_mtu};
use crate::sctp_endpoint::SctpEndpoint;
use crate::tcp_endpoint::StreamEndpoint;
use crate::udp_endpoint::UdpEndpoint;
use crate::quic_endpoint::QuicEndpoint;
use mplab_backend::quic::QuicEnd;
use mplab_backend::datagram::DatagramApp;

pub use crate::config::{unsupported, Unsupported};

/// Middleboxes placed where their kind cannot sit (a Network built by
/// code, not from a scenario file, which checks it): (index, why).
pub fn unsupported_middleboxes(net: &network::Network) -> Vec<(usize, String)> {
    net.middleboxes
        .iter()
        .filter_map(|m| {
            let e = mplab_scenario::plugins::middleboxes::of(&m.action);
            match m.placement {
                network::Placement::Link { .. } if !e.on_link => Some((m.id, format!("a {} middlebox sits on a router: give it `node`, not `link`", e.about.name))),
                network::Placement::Node { .. } if !e.on_router => Some((m.id, format!("a {} middlebox sits on a link: give it `link`, not `node`", e.about.name))),
                _ => None,
            }
        })
        .collect()
}

/// Creates the transport endpoints of a flow. `seed` makes everything
/// random about the endpoint (ISNs, MPTCP keys, nonces, ports).
pub trait EndpointFactory {
    /// The client end, opening the connection at `now`.
    fn connect(&mut self, net: &Network, flow: &Flow, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>>;
    /// The server end, from the SYN that reached it.
    fn accept(&mut self, net: &Network, flow: &Flow, local: Ipv4Addr, remote: Ipv4Addr, syn: &Packet, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>>;
}

/// The flow's association settings, with the host's MTU.
fn sctp_cfg(net: &Network, f: &Flow, node: usize) -> mplab_proto::sctp::SctpConfig {
    let mut cfg = sctp_config(f.sctp.as_ref().expect(CHECKED));
    cfg.mtu = sctp_mtu(net, node);
    cfg
}

/// `World::with_factory` refuses a network [`unsupported`] objects to, so
/// every flow's configuration translates.
const CHECKED: &str = "configuration checked by transport::unsupported";

/// TCP or MPTCP endpoints, as each flow's `transport` says. An MPTCP
/// server answers a SYN without MP_CAPABLE as plain TCP (fallback).
#[derive(Default)]
pub struct SimFactory;

impl EndpointFactory for SimFactory {
    fn connect(&mut self, net: &Network, f: &Flow, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        let local = SocketAddr::new(f.src.into(), f.sport);
        let remote = SocketAddr::new(f.dst.into(), f.dport);
        match f.transport {
            network::TransportKind::Tcp => Some(Box::new(StreamEndpoint::tcp_connect(flow_tcp_end_config(net, f, f.from).expect(CHECKED), local, remote, seed as u32, now))),
            network::TransportKind::Mptcp => {
                let cfg = mptcp_config(net, f, f.from, f.src).expect(CHECKED);
                Some(Box::new(StreamEndpoint::mptcp_connect(cfg, local, remote, seed, now)))
            }
            network::TransportKind::Udp => {
                let app = DatagramApp::new(&f.app, true, now, Instant(f.stop_ns)).expect(CHECKED);
                Some(Box::new(UdpEndpoint::new(app, (f.src, f.sport), Some((f.dst, f.dport)))))
            }
            // A configuration quinn refuses would be a bug of ours: no end.
            network::TransportKind::Quic => QuicEnd::client(local, remote, seed, now.0).ok().map(|q| Box::new(QuicEndpoint::new(q, (f.src, f.sport))) as Box<dyn Endpoint>),
            network::TransportKind::Sctp | network::TransportKind::CmtSctp => {
                Some(Box::new(SctpEndpoint::connect(sctp_cfg(net, f, f.from), sctp_addrs(net, f.from, f.src), f.sport, f.dst, f.dport, seed, now)))
            }
        }
    }

    fn accept(&mut self, net: &Network, f: &Flow, local: Ipv4Addr, remote: Ipv4Addr, syn: &Packet, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        let local_sa = SocketAddr::new(local.into(), syn.tcp.dst_port);
        let remote_sa = SocketAddr::new(remote.into(), syn.tcp.src_port);
        match f.transport {
            network::TransportKind::Tcp => StreamEndpoint::tcp_accept(flow_tcp_end_config(net, f, f.to).expect(CHECKED), local_sa, remote_sa, syn, seed as u32, now).map(|e| Box::new(e) as Box<dyn Endpoint>),
            network::TransportKind::Mptcp => {
                let cfg = mptcp_config(net, f, f.to, local).expect(CHECKED);
                StreamEndpoint::mptcp_accept(cfg, local_sa, remote_sa, syn, seed, now).map(|e| Box::new(e) as Box<dyn Endpoint>)
            }
            network::TransportKind::Quic => {
                // The client's Initial reaches it once it is handed over.
                let q = QuicEnd::server(SocketAddr::new(local.into(), syn.tcp.dst_port), seed).ok()?;
                Some(Box::new(QuicEndpoint::new(q, (local, syn.tcp.dst_port))))
            }
            // The socket was bound from the start; this is its first datagram.
            network::TransportKind::Udp => {
                let app = DatagramApp::new(&f.app, false, now, Instant(f.stop_ns)).expect(CHECKED);
                Some(Box::new(UdpEndpoint::new(app, (local, syn.tcp.dst_port), Some((remote, syn.tcp.src_port)))))
            }
            // The association answers the INIT itself, once it is handed over.
            network::TransportKind::Sctp | network::TransportKind::CmtSctp => {
                Some(Box::new(SctpEndpoint::listen(sctp_cfg(net, f, f.to), sctp_addrs(net, f.to, local), f.dport, seed, now)))
            }
        }
    }
}
