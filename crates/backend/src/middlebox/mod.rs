//! Middleboxes: anything on the path that looks at packets and changes,
//! holds, splits or drops them — what seed 000's Cisco ASA did to option
//! 30, NAT, TSO-like resegmenting, payload rewriting, load balancers and
//! attackers. Each kind is one [`Middlebox`] in its own file, written once
//! over the packet view it needs ([`Segment`] or [`ModelPacket`]), and
//! every backend runs it over its own packets: the simulator over its
//! modelled packets, the link emulator over Ethernet frames.

mod element;
mod registry;
mod segment;

pub mod attacker;
pub mod balancer;
pub mod coalesce;
pub mod nat;
pub mod rewrite;
pub mod split;
pub mod strip;
#[cfg(test)]
pub mod fixture;

pub use element::{Built, Hook, Kind, Middlebox, Place};
pub use registry::{build, kinds, places};
pub use segment::{ModelPacket, Segment};
