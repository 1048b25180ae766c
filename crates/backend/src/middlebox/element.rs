//! The one element every middlebox kind is, on every backend: a packet in
//! at a [`Hook`], packets out, and one optional timer.

use mplab_proto::Instant;

use crate::attack::AttackReport;
use crate::balancer::BalancerStats;

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

/// Where a box sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A link direction, `2 * link + dir`.
    Link(usize),
    Node(usize),
}

/// The boxes a kind builds for one scenario middlebox at one place.
pub enum Built<P> {
    One(Box<dyn Middlebox<P>>),
    /// A box whose two link directions share one state (an attacker sees
    /// both ways of its link): the box for a→b, then b→a, which a backend
    /// runs as partners. Built once for the link, whatever its place.
    Pair([Box<dyn Middlebox<P>>; 2]),
}

/// A middlebox over packets of type `P` (the simulator's modelled packet,
/// or a frame of the link emulator: see [`super::segment`]). The backend
/// hands it every packet passing its place, at each [`Hook`] of that
/// place; what it pushes to `out` goes on (nothing: the box keeps or drops
/// the packet; several: it split or released some).
pub trait Middlebox<P> {
    /// The kind, as scenario files name it.
    fn kind(&self) -> &'static str;
    fn process(&mut self, now: Instant, at: Hook, pkt: P, out: &mut Vec<P>);
    /// When [`Middlebox::on_timer`] must run next (a held packet's
    /// deadline); None: no timer.
    fn next_deadline(&self) -> Option<Instant> {
        None
    }
    /// The deadline came: what the box releases goes to `out`. On a link
    /// it joins the link's queue; at a node it is routed as forwarded.
    fn on_timer(&mut self, _now: Instant, _out: &mut Vec<P>) {}
    /// A line for the run's notes (`at` names the place), if any.
    fn note(&self, _at: &str) -> Option<String> {
        None
    }
    /// Link `link` of the network went down (`up` false) or came back: a
    /// load balancer's health check takes a backend out or back.
    fn on_link_state(&mut self, _link: usize, _up: bool) {}
    /// A load balancer's counters, for the results.
    fn balancer_stats(&self) -> Option<BalancerStats> {
        None
    }
    /// An attacker's report, for the results (one box of the pair gives it).
    fn attack_report(&self) -> Option<AttackReport> {
        None
    }
}
