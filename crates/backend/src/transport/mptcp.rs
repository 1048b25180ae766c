//! `transport = "mptcp"`: proto's MPTCP connection, configured by the flow
//! and its host. A server answers a SYN without MP_CAPABLE as plain TCP
//! (fallback).

use std::net::{Ipv4Addr, SocketAddr};

use mplab_proto::Instant;
use mplab_scenario::network::{Flow, Network};

use super::stream::StreamEndpoint;
use super::{Engine, CHECKED};
use crate::config::mptcp_config;
use super::endpoint::Endpoint;
use crate::packet::Packet;

pub(super) struct Mptcp;

impl Engine for Mptcp {
    fn connect(&self, net: &Network, f: &Flow, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        let cfg = mptcp_config(net, f, f.from, f.src).expect(CHECKED);
        Some(Box::new(StreamEndpoint::mptcp_connect(cfg, SocketAddr::new(f.src.into(), f.sport), SocketAddr::new(f.dst.into(), f.dport), seed, now)))
    }

    fn accept(&self, net: &Network, f: &Flow, local: Ipv4Addr, remote: Ipv4Addr, syn: &Packet, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        let cfg = mptcp_config(net, f, f.to, local).expect(CHECKED);
        let (l, r) = (SocketAddr::new(local.into(), syn.tcp.dst_port), SocketAddr::new(remote.into(), syn.tcp.src_port));
        StreamEndpoint::mptcp_accept(cfg, l, r, syn, seed, now).map(|e| Box::new(e) as Box<dyn Endpoint>)
    }
}
