//! Middleboxes in the simulator. The kinds are mplab-backend's
//! ([`mplab_backend::middlebox`], one file each, shared with the link
//! emulator); here the simulator's packet provides the view they work on
//! ([`view`]), and [`build`] makes a scenario's boxes. The world runs every
//! kind the same way: a packet in, packets out, and one optional timer per
//! box.

use mplab_scenario::network::{Direction, MiddleboxAction, Network, Placement, ResegmentMode, StripOn};

pub use mplab_backend::middlebox::{attacker, balancer, coalesce, nat, rewrite, split, strip};
pub use mplab_backend::middlebox::{Hook, Middlebox, ModelPacket, Segment};

use crate::packet::Packet;

mod view;
pub use view::resize;
#[cfg(test)]
mod tests;

/// Where a box sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A link direction, `2 * link + dir`.
    Link(usize),
    Node(usize),
}

/// The middlebox kinds by the scenario's kind: one line each. A box on
/// both directions of a link is one instance per direction.
pub fn build(action: &MiddleboxAction, net: &Network, place: Place) -> Box<dyn Middlebox<Packet>> {
    match *action {
        MiddleboxAction::StripMptcp { on } => Box::new(strip::StripMptcp { syn_only: on == StripOn::Syn }),
        MiddleboxAction::Resegment { mode: ResegmentMode::Split, size, .. } => Box::new(split::Split { size: size.unwrap_or(536).clamp(1, u64::from(u32::MAX)) as u32 }),
        MiddleboxAction::Resegment { mode: ResegmentMode::Coalesce, size, hold_ns } => Box::new(coalesce::Coalescer::<Packet>::new(
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
pub fn build_pair(action: &MiddleboxAction, net: &Network, link: usize) -> Option<[Box<dyn Middlebox<Packet>>; 2]> {
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
