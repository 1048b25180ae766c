//! Middleboxes in the simulator. The kinds and their registry are
//! mplab-backend's ([`mplab_backend::middlebox`], one file each, shared
//! with the link emulator), working on the model packet
//! ([`mplab_backend::packet::Packet`]) as their view. The world (`world/middleboxes.rs`) builds a
//! scenario's boxes from the registry and runs every kind the same way: a
//! packet in, packets out, and one optional timer per box.

pub use mplab_backend::middlebox::{attacker, balancer, coalesce, nat, resegment, rewrite, split, strip};
pub use mplab_backend::middlebox::{build, places, Built, Hook, Middlebox, ModelPacket, Place, Segment};

pub use mplab_backend::packet::resize;

use mplab_scenario::network::Network;

/// Middleboxes of a kind no registry has, or placed where their kind
/// cannot sit, by the registry's facts (a Network built by code, not from
/// a scenario file, which is checked): (index, why).
pub fn unsupported_middleboxes(net: &Network) -> Vec<(usize, String)> {
    net.middleboxes
        .iter()
        .filter_map(|m| match mplab_backend::middlebox::facts_of(&m.action) {
            None => Some((m.id, format!("no middlebox kind {:?}", m.action.kind()))),
            Some(f) => f.misplaced(&m.placement).map(|(_, why)| (m.id, why)),
        })
        .collect()
}
#[cfg(test)]
mod tests;
