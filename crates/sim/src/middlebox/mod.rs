//! Middleboxes: anything on the path that looks at packets and changes,
//! holds, splits or drops them — what seed 000's Cisco ASA did to option
//! 30, NAT, TSO-like resegmenting, payload rewriting, and the balancers and
//! tunnel endpoints to come. Each kind is one [`Middlebox`] in its own file
//! and one line in [`build`]; the world runs every kind the same way: a
//! packet in, packets out, and one optional timer per box.

use mplab_proto::Instant;
use mplab_scenario::network::{Direction, MiddleboxAction, Network, Placement, ResegmentMode, StripOn};

use crate::packet::{Packet, IPV4_HEADER};

pub mod attacker;
pub mod balancer;
pub mod coalesce;
pub mod nat;
pub mod rewrite;
pub mod split;
pub mod strip;

/// Where in a packet's way a box sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// On a link direction, as the sending node hands the packet over
    /// (before the queue).
    Link,
    /// At a node: a packet arriving on interface `iface`, before the node
    /// delivers or routes it.
    Ingress { iface: usize },
    /// At a node: a packet it forwards, before routing.
    Forward,
    /// At a node: a packet leaving by `iface`, after routing; `local` when
    /// the node itself sent it.
    Egress { iface: usize, local: bool },
}

/// A middlebox. The world hands it every packet passing its place, at each
/// [`Hook`] of that place; what it pushes to `out` goes on (nothing: the
/// box keeps or drops the packet; several: it split or released some).
pub trait Middlebox {
    /// The kind, as scenario files name it.
    fn kind(&self) -> &'static str;
    fn process(&mut self, now: Instant, at: Hook, pkt: Packet, out: &mut Vec<Packet>);
    /// When [`Middlebox::on_timer`] must run next (a held packet's
    /// deadline); None: no timer.
    fn next_deadline(&self) -> Option<Instant> {
        None
    }
    /// The deadline came: what the box releases goes to `out`. On a link
    /// it joins the link's queue; at a node it is routed as forwarded.
    fn on_timer(&mut self, _now: Instant, _out: &mut Vec<Packet>) {}
    /// A line for the run's notes (`at` names the place), if any.
    fn note(&self, _at: &str) -> Option<String> {
        None
    }
    /// Link `link` of the network went down (`up` false) or came back: a
    /// load balancer's health check takes a backend out or back.
    fn on_link_state(&mut self, _link: usize, _up: bool) {}
    /// A load balancer's counters, for the results.
    fn balancer_stats(&self) -> Option<mplab_backend::balancer::BalancerStats> {
        None
    }
    /// An attacker's report, for the results (one box of the pair gives it).
    fn attack_report(&self) -> Option<mplab_backend::attack::AttackReport> {
        None
    }
}

/// Where a box sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A link direction, `2 * link + dir`.
    Link(usize),
    Node(usize),
}

/// The middlebox kinds by the scenario's kind: one line each. A box on
/// both directions of a link is one instance per direction.
pub fn build(action: &MiddleboxAction, net: &Network, place: Place) -> Box<dyn Middlebox> {
    match *action {
        MiddleboxAction::StripMptcp { on } => Box::new(strip::StripMptcp { syn_only: on == StripOn::Syn }),
        MiddleboxAction::Resegment { mode: ResegmentMode::Split, size, .. } => Box::new(split::Split { size: size.unwrap_or(536).clamp(1, u64::from(u32::MAX)) as u32 }),
        MiddleboxAction::Resegment { mode: ResegmentMode::Coalesce, size, hold_ns } => Box::new(coalesce::Coalescer::new(
            size.unwrap_or(coalesce::DEFAULT_SIZE).clamp(1, u64::from(u16::MAX)) as u32,
            hold_ns.unwrap_or(coalesce::DEFAULT_HOLD_NS),
        )),
        MiddleboxAction::Rewrite { every } => Box::new(rewrite::Rewrite { every: every.max(1) }),
        MiddleboxAction::Nat { addr } => Box::new(nat::Nat::new(net, match place {
            Place::Node(n) => n,
            Place::Link(_) => unreachable!("transport::unsupported_middleboxes refuses a middlebox where its registry entry says it cannot sit"),
        }, addr)),
        MiddleboxAction::LoadBalancer { mode, vip, ref backends, table, idle_ns } => match place {
            Place::Node(n) => Box::new(balancer::LoadBalancer::new(net, n, mode, vip, backends, table, idle_ns)),
            Place::Link(_) => unreachable!("the scenario puts a load balancer on a router"),
        },
        MiddleboxAction::Attacker { .. } => unreachable!("an attacker's two boxes come from `build_pair`"),
    }
}

/// The boxes of a middlebox whose directions share one state (an
/// attacker sees both ways of its link): the box for a→b, then b→a, which
/// the world runs as partners (each one's timer is re-armed when the other
/// ran). None: the kind builds one box per place with [`build`].
pub fn build_pair(action: &MiddleboxAction, net: &Network, link: usize) -> Option<[Box<dyn Middlebox>; 2]> {
    match *action {
        MiddleboxAction::Attacker { attack, at_ns, count } => {
            let [a, b] = attacker::AttackerBox::pair(mplab_backend::attack::Attacker::new(attack, at_ns, count, net.seed, link));
            Some([Box::new(a), Box::new(b)])
        }
        _ => None,
    }
}

/// The places a scenario middlebox sits at.
pub fn places(p: &Placement) -> Vec<Place> {
    match p {
        Placement::Link { link, direction, .. } => match direction {
            Direction::Ab => vec![Place::Link(2 * link)],
            Direction::Ba => vec![Place::Link(2 * link + 1)],
            Direction::Both => vec![Place::Link(2 * link), Place::Link(2 * link + 1)],
        },
        Placement::Node { node, .. } => vec![Place::Node(*node)],
    }
}

/// Recomputes a packet's wire size after a box changed its options or
/// payload length.
pub fn resize(p: &mut Packet) {
    let thl = p.tcp.wire_len().unwrap_or(60) as u32;
    p.size = IPV4_HEADER + thl + p.payload_len;
}
