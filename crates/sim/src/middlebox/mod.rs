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
#[cfg(test)]
mod tests;
