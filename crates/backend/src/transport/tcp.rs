//! `transport = "tcp"`: proto's plain TCP engine (the one MPTCP runs per
//! subflow), never an option 30 on the wire.

use std::net::{Ipv4Addr, SocketAddr};

use mplab_proto::Instant;
use mplab_scenario::network::{Flow, Network};

use super::stream::StreamEndpoint;
use super::{Engine, CHECKED};
use crate::config::flow_tcp_end_config;
use super::endpoint::Endpoint;
use crate::packet::Packet;

pub(super) struct Tcp;

impl Engine for Tcp {
    fn connect(&self, net: &Network, f: &Flow, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        let cfg = flow_tcp_end_config(net, f, f.from).expect(CHECKED);
        Some(Box::new(StreamEndpoint::tcp_connect(cfg, SocketAddr::new(f.src.into(), f.sport), SocketAddr::new(f.dst.into(), f.dport), seed as u32, now)))
    }

    fn accept(&self, net: &Network, f: &Flow, local: Ipv4Addr, remote: Ipv4Addr, syn: &Packet, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        let cfg = flow_tcp_end_config(net, f, f.to).expect(CHECKED);
        let (l, r) = (SocketAddr::new(local.into(), syn.tcp.dst_port), SocketAddr::new(remote.into(), syn.tcp.src_port));
        StreamEndpoint::tcp_accept(cfg, l, r, syn, seed as u32, now).map(|e| Box::new(e) as Box<dyn Endpoint>)
    }
}
