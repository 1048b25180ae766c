//! The middlebox kinds, one line each, and the boxes of a scenario's
//! middleboxes built from them.

use mplab_scenario::network::{Direction, MiddleboxAction, Network, Placement};

use super::element::{Built, Kind, Place};
use super::segment::ModelPacket;
use super::{attacker, balancer, nat, rewrite, split, strip};

/// Every kind a scenario file can name, for packets of type `P`.
pub fn kinds<P: ModelPacket + 'static>() -> Vec<Kind<P>> {
    #[allow(unused_mut)]
    let mut all = vec![strip::kind(), nat::kind(), split::kind(), rewrite::kind(), balancer::kind(), attacker::kind()];
    #[cfg(test)]
    all.push(super::fixture::kind());
    all
}

/// The boxes of a scenario middlebox at `place` (the first of
/// [`places`]; a [`Built::Pair`] covers both directions of its link).
pub fn build<P: ModelPacket + 'static>(action: &MiddleboxAction, net: &Network, place: Place) -> Built<P> {
    let name = action.kind();
    let kind = kinds::<P>().into_iter().find(|k| k.name == name).expect("every scenario kind is in the registry");
    (kind.build)(action, net, place)
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
