//! What a queueing discipline is: its parameters ([`QueueConfig`]), what
//! it sees of the queue ([`Backlog`]) and what it decides
//! ([`QueueDiscipline`]).

use crate::rng::SimRng;

/// The queueing discipline in front of the serialiser. The packet being
/// serialised counts as queued (it is "accepted but not yet fully sent").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QueueConfig {
    /// At most this many packets; 0 drops everything.
    DropTailPackets(usize),
    /// At most this many bytes.
    DropTailBytes(u64),
    /// Random Early Detection (Floyd & Jacobson 1993) on a byte-counted
    /// queue: thresholds and the average are in bytes; the drop probability
    /// is per packet (not scaled by packet size, unlike ns-2's `bytes_`
    /// option), so small ACKs and full segments are treated alike. `weight` is the EWMA gain w_q, `limit_bytes` a hard
    /// capacity, `gentle` ramps the drop probability from `max_p` to 1
    /// between `max_th` and `2 * max_th` instead of jumping to 1.
    Red { min_th_bytes: u64, max_th_bytes: u64, max_p: f64, weight: f64, limit_bytes: u64, gentle: bool },
}

/// The queue as a packet arrives (after retiring every packet whose
/// serialisation has ended).
#[derive(Clone, Copy, Debug)]
pub(in crate::link) struct Backlog {
    pub packets: usize,
    pub bytes: u64,
    /// When the queue last became empty.
    pub idle_since: u64,
    /// The serialisation rate in bit/s (0 = unlimited).
    pub rate_bps: u64,
}

/// One queueing discipline: its parameters and running state.
pub(in crate::link) trait QueueDiscipline: Sized {
    /// The discipline's state for `config`, if `config` selects it.
    fn from_config(config: &QueueConfig) -> Option<Self>;

    /// Whether a `size`-byte packet arriving at `now` joins `backlog`.
    /// Any random draw comes from `rng`, only when needed.
    fn admit(&mut self, backlog: Backlog, now: u64, size: u32, rng: &mut SimRng) -> bool;
}
