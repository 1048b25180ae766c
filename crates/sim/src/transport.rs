//! Glue between the resolved scenario and the simulator's pieces: link
//! parameters, application kinds, and the factory that creates transport
//! endpoints (TCP now; MPTCP plugs in through the same trait).

use core::time::Duration;
use std::net::{Ipv4Addr, SocketAddr};

use mplab_proto::Instant;
use mplab_scenario::network::{self, Flow};

use crate::apps::AppKind;
use crate::endpoint::Endpoint;
use crate::link::{Jitter, LinkParams, LossModel, QueueConfig};
use crate::packet::Packet;
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
                message: format!("congestion control {:?} is not implemented by the simulator (it has reno, cubic)", f.tcp.cc),
            });
        }
        if f.transport == network::TransportKind::Mptcp {
            out.push(Unsupported {
                flow: f.id,
                field: "transport",
                message: "MPTCP flows are not simulated yet: the MPTCP connection layer is still being built; use transport = \"tcp\"".into(),
            });
        }
    }
    out
}

/// Creates the transport endpoints of a flow.
pub trait EndpointFactory {
    /// The client end, opening the connection at `now`.
    fn connect(&mut self, flow: &Flow, iss: u32, now: Instant) -> Option<Box<dyn Endpoint>>;
    /// The server end, from the SYN that reached it.
    fn accept(&mut self, flow: &Flow, local: Ipv4Addr, remote: Ipv4Addr, syn: &Packet, iss: u32, now: Instant) -> Option<Box<dyn Endpoint>>;
}

/// Plain TCP for every flow.
#[derive(Default)]
pub struct TcpFactory;

impl EndpointFactory for TcpFactory {
    fn connect(&mut self, f: &Flow, iss: u32, now: Instant) -> Option<Box<dyn Endpoint>> {
        let local = SocketAddr::new(f.src.into(), f.sport);
        let remote = SocketAddr::new(f.dst.into(), f.dport);
        Some(Box::new(TcpEndpoint::connect(&f.tcp, local, remote, iss, now)))
    }

    fn accept(&mut self, f: &Flow, local: Ipv4Addr, remote: Ipv4Addr, syn: &Packet, iss: u32, now: Instant) -> Option<Box<dyn Endpoint>> {
        let local = SocketAddr::new(local.into(), syn.tcp.dst_port);
        let remote = SocketAddr::new(remote.into(), syn.tcp.src_port);
        TcpEndpoint::accept(&f.tcp, local, remote, syn, iss, now).map(|e| Box::new(e) as Box<dyn Endpoint>)
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
