//! Middleboxes in the simulator. The kinds and their registry are
//! mplab-backend's ([`mplab_backend::middlebox`], one file each, shared
//! with the link emulator); here the simulator's packet provides the view
//! they work on ([`view`]). The world (`world/middleboxes.rs`) builds a
//! scenario's boxes from the registry and runs every kind the same way: a
//! packet in, packets out, and one optional timer per box.

pub use mplab_backend::middlebox::{attacker, balancer, coalesce, nat, rewrite, split, strip};
pub use mplab_backend::middlebox::{build, places, Built, Hook, Middlebox, ModelPacket, Place, Segment};

mod view;
pub use view::resize;

use mplab_scenario::network::{Network, Placement};

/// Middleboxes placed where their kind cannot sit (a Network built by
/// code, not from a scenario file, which checks it): (index, why).
pub fn unsupported_middleboxes(net: &Network) -> Vec<(usize, String)> {
    net.middleboxes
        .iter()
        .filter_map(|m| {
            let e = mplab_scenario::plugins::middleboxes::of(&m.action);
            match m.placement {
                Placement::Link { .. } if !e.on_link => Some((m.id, format!("a {} middlebox sits on a router: give it `node`, not `link`", e.about.name))),
                Placement::Node { .. } if !e.on_router => Some((m.id, format!("a {} middlebox sits on a link: give it `link`, not `node`", e.about.name))),
                _ => None,
            }
        })
        .collect()
}
#[cfg(test)]
mod tests;
