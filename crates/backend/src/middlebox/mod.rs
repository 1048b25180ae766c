//! Middleboxes: anything on the path that looks at packets and changes,
//! holds, splits or drops them — what seed 000's Cisco ASA did to option
//! 30, NAT, TSO-like resegmenting, payload rewriting, load balancers and
//! attackers. Each box is one [`Middlebox`] in its own file, written once
//! over the packet view it needs ([`Segment`] or [`ModelPacket`]), and
//! every backend runs it over its own packets: the simulator over its
//! modelled packets, the link emulator over Ethernet frames.
//!
//! A kind scenario files name is one file implementing [`MiddleboxKind`]
//! (what it says about itself, where it may sit, how it reads its fields
//! and builds its boxes) and its line in the `middleboxes!` list below,
//! which declares its module too; nothing outside the file names it. The
//! load balancer and the attacker, which the scenario types itself, are
//! built from their typed actions ([`build`]).

mod element;
mod kind;
mod registry;
mod segment;

pub mod attacker;
pub mod balancer;
pub mod coalesce;
pub mod split;

registry::middleboxes! {
    strip::StripMptcp,
    nat::SourceNat,
    resegment::Resegment,
    rewrite::Rewrite,
    #[cfg(any(test, feature = "test-fixtures"))]
    fixture::DropEveryNth,
}

pub use element::{Built, Hook, Middlebox, Place};
pub use kind::MiddleboxKind;
pub use registry::{all, build, facts_of, places};
pub use segment::{ModelPacket, Segment};
