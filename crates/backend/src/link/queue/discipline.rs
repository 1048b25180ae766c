//! What a queueing discipline is: what it says about itself and reads from
//! a scenario ([`QueueDiscipline`]), what it sees of the queue
//! ([`Backlog`]) and what it decides.

use std::fmt::Debug;

use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, OnKernel, Resolved};

use crate::rng::SimRng;

/// The kernel backend's links are mplab's link emulator, not kernel qdiscs
/// (this kernel has no netem or red), so every discipline runs there.
pub(in crate::link) const EMULATOR: OnKernel = OnKernel::Runs("mplab's link emulator between the namespaces");

/// The queue as a packet arrives (after retiring every packet whose
/// serialisation has ended). The packet being serialised counts as queued
/// (it is "accepted but not yet fully sent").
#[derive(Clone, Copy, Debug)]
pub(in crate::link) struct Backlog {
    pub packets: usize,
    pub bytes: u64,
    /// When the queue last became empty.
    pub idle_since: u64,
    /// The serialisation rate in bit/s (0 = unlimited).
    pub rate_bps: u64,
}

/// One queueing discipline: its parameters and running state, as a value
/// a link copies when it starts (so `Copy`).
pub(in crate::link) trait QueueDiscipline: Sized + Copy + Debug + PartialEq {
    /// Its `kind` in scenario files, its fields, what it models, and what
    /// the kernel backend does with it (usually [`EMULATOR`]).
    const ABOUT: About;

    /// Reads and checks its fields from a scenario's queue table: every
    /// field first, then `f.finish()?` (a field it does not take is refused
    /// before any value is checked, as for every other table of a
    /// scenario), then the relations between them. Errors name the table
    /// (`f.error`) or the field (`f.error_at`).
    fn from_fields(f: &mut Fields) -> Result<Self, PluginError>;

    /// Its validated parameters as the resolved network shows them: its
    /// fields in order (`kind` is added in front).
    fn resolved(&self) -> Vec<(&'static str, Resolved)>;

    /// A plain limit in packets, which the link checks inline without
    /// calling [`QueueDiscipline::admit`].
    fn packet_limit(&self) -> Option<u64> {
        None
    }

    /// Whether a `size`-byte packet arriving at `now` joins `backlog`.
    /// Any random draw comes from `rng`, only when needed.
    fn admit(&mut self, backlog: Backlog, now: u64, size: u32, rng: &mut SimRng) -> bool;
}
