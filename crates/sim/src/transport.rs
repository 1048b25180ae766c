//! Glue between the resolved scenario and the simulator's pieces: link
//! parameters, application kinds, and the factory that creates transport
//! endpoints (TCP now; MPTCP plugs in through the same trait).

use core::time::Duration;
use std::net::{Ipv4Addr, SocketAddr};

use mplab_proto::Instant;
use mplab_scenario::network::{self, Flow, Network};

use crate::apps::AppKind;
use crate::endpoint::Endpoint;
use crate::link::{Jitter, LinkParams, LossModel, QueueConfig};
use crate::packet::Packet;
use crate::mptcp_endpoint::{mptcp_config, MptcpEndpoint};
use crate::tcp_endpoint::TcpEndpoint;

/// A scenario setting the simulator cannot honour (it never substitutes
/// silently): the flow, the field, and a message for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Unsupported {
    pub flow: usize,
    pub field: &'static str,
    pub message: String,
}

/// Everything in `net` this simulator cannot run as written.
pub fn unsupported(net: &network::Network) -> Vec<Unsupported> {
    let mut out = Vec::new();
    for f in &net.flows {
        if mplab_proto::cc::CcAlgorithm::from_name(&f.tcp.cc).is_none() {
            out.push(Unsupported {
                flow: f.id,
                field: "cc",
                message: format!("congestion control {:?} is not implemented by the simulator (it has {})", f.tcp.cc, mplab_proto::cc::NAMES.join(", ")),
            });
        }
        if let Some(m) = &f.mptcp {
            if mplab_proto::mptcp::scheduler::by_name(&m.scheduler).is_none() {
                out.push(Unsupported { flow: f.id, field: "scheduler", message: format!("scheduler {:?} is not implemented by the simulator (it has {})", m.scheduler, mplab_proto::mptcp::scheduler::NAMES.join(", ")) });
            }
            if mplab_proto::cc::CcAlgorithm::from_name(&m.cc).is_none() {
                out.push(Unsupported { flow: f.id, field: "cc", message: format!("congestion control {:?} is not implemented by the simulator (it has {})", m.cc, mplab_proto::cc::NAMES.join(", ")) });
            }
        }
    }
    out
}

/// Middleboxes the simulator cannot model yet: (index in the file, why).
pub fn unsupported_middleboxes(net: &network::Network) -> Vec<(usize, String)> {
    net.middleboxes
        .iter()
        .filter_map(|m| match m.action {
            network::MiddleboxAction::Nat { .. } if !matches!(m.placement, network::Placement::Node { .. }) => {
                Some((m.id, "a NAT sits on a router: give it `node`, not `link`".to_string()))
            }
            _ => None,
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

/// TCP or MPTCP endpoints, as each flow's `transport` says. An MPTCP
/// server answers a SYN without MP_CAPABLE as plain TCP (fallback).
#[derive(Default)]
pub struct SimFactory;

impl EndpointFactory for SimFactory {
    fn connect(&mut self, net: &Network, f: &Flow, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        let local = SocketAddr::new(f.src.into(), f.sport);
        let remote = SocketAddr::new(f.dst.into(), f.dport);
        match f.transport {
            network::TransportKind::Tcp => Some(Box::new(TcpEndpoint::connect(&f.tcp, local, remote, seed as u32, now))),
            network::TransportKind::Mptcp => {
                let cfg = mptcp_config(net, f, f.from, f.src);
                Some(Box::new(MptcpEndpoint::connect(cfg, local, remote, seed, now)))
            }
        }
    }

    fn accept(&mut self, net: &Network, f: &Flow, local: Ipv4Addr, remote: Ipv4Addr, syn: &Packet, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        let local_sa = SocketAddr::new(local.into(), syn.tcp.dst_port);
        let remote_sa = SocketAddr::new(remote.into(), syn.tcp.src_port);
        match f.transport {
            network::TransportKind::Tcp => TcpEndpoint::accept(&f.tcp, local_sa, remote_sa, syn, seed as u32, now).map(|e| Box::new(e) as Box<dyn Endpoint>),
            network::TransportKind::Mptcp => {
                let cfg = mptcp_config(net, f, f.to, local);
                MptcpEndpoint::accept(cfg, local_sa, remote_sa, syn, seed, now).map(|e| Box::new(e) as Box<dyn Endpoint>)
            }
        }
    }
}

/// Uniform jitter up to `ns` (0: none).
pub fn jitter(ns: u64) -> Jitter {
    jitter_with(ns, network::JitterDistribution::Uniform)
}

/// Jitter of scale `ns` (uniform bound, normal sigma or Pareto mean) with
/// the given distribution. A zero scale is no jitter (and no draws); the
/// non-uniform kinds keep their variant so a later change of scale
/// ([`Jitter::with_scale`]) keeps the distribution.
pub fn jitter_with(ns: u64, dist: network::JitterDistribution) -> Jitter {
    let d = Duration::from_nanos(ns);
    match dist {
        network::JitterDistribution::Uniform if ns == 0 => Jitter::None,
        network::JitterDistribution::Uniform => Jitter::Uniform { max: d },
        network::JitterDistribution::Normal => Jitter::Normal { sigma: d },
        network::JitterDistribution::Pareto => Jitter::Pareto { mean: d },
    }
}

pub fn loss_model(p: f64, ge: Option<&network::GilbertElliott>) -> LossModel {
    match ge {
        Some(g) => LossModel::GilbertElliott { p_gb: g.p_gb, p_bg: g.p_bg, loss_good: g.loss_good, loss_bad: g.loss_bad },
        None if p > 0.0 => LossModel::Bernoulli { p },
        None => LossModel::None,
    }
}

/// One direction of a scenario link as the link model wants it.
pub fn link_params(d: &network::LinkDirection) -> LinkParams {
    let queue = match d.queue {
        network::Queue::Droptail { limit: network::QueueLimit::Packets(n) } => QueueConfig::DropTailPackets(n as usize),
        network::Queue::Droptail { limit: network::QueueLimit::Bytes(n) } => QueueConfig::DropTailBytes(n),
        network::Queue::Red { min_th_bytes, max_th_bytes, limit_bytes, max_p, weight, gentle } => QueueConfig::Red {
            min_th_bytes,
            max_th_bytes,
            max_p,
            weight,
            limit_bytes,
            gentle,
        },
    };
    LinkParams {
        rate_bps: d.rate_bps,
        delay: Duration::from_nanos(d.delay_ns),
        jitter: jitter_with(d.jitter_ns, d.jitter_distribution),
        loss: loss_model(d.loss, d.gilbert_elliott.as_ref()),
        queue,
        allow_reorder: d.reorder,
    }
}

pub fn app_kind(a: &network::App) -> AppKind {
    match *a {
        network::App::Bulk { bytes } => AppKind::Bulk { bytes },
        network::App::Rate { rate_bps, bytes } => AppKind::Rate { rate_bps, bytes },
        network::App::Download { bytes } => AppKind::Download { bytes },
        network::App::Request { request_bytes, response_bytes, count, interval_ns } => AppKind::Request {
            request: request_bytes,
            response: response_bytes,
            count: count.unwrap_or(u64::MAX),
            interval: Duration::from_nanos(interval_ns),
        },
    }
}

/// Bytes a bounded transfer delivers in total, if bounded.
pub fn is_bounded(a: &network::App) -> Option<u64> {
    match *a {
        network::App::Bulk { bytes } | network::App::Rate { bytes, .. } => bytes,
        network::App::Download { bytes } => Some(bytes),
        network::App::Request { .. } => None,
    }
}
