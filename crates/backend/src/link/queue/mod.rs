//! The queueing discipline in front of the serialiser: which arriving
//! packets join the queue.
//!
//! Each discipline is one file implementing [`QueueDiscipline`] for its
//! state; [`QueueConfig`] (the public parameters) and the `disciplines!`
//! list below name them. The link dispatches with a `match`, not a trait
//! object: the verdict is on every packet's path.

mod drop_tail;
mod red;

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
pub(super) struct Backlog {
    pub packets: usize,
    pub bytes: u64,
    /// When the queue last became empty.
    pub idle_since: u64,
    /// The serialisation rate in bit/s (0 = unlimited).
    pub rate_bps: u64,
}

/// One queueing discipline: its parameters and running state.
pub(super) trait QueueDiscipline: Sized {
    /// The discipline's state for `config`, if `config` selects it.
    fn from_config(config: &QueueConfig) -> Option<Self>;

    /// Whether a `size`-byte packet arriving at `now` joins `backlog`.
    /// Any random draw comes from `rng`, only when needed.
    fn admit(&mut self, backlog: Backlog, now: u64, size: u32, rng: &mut SimRng) -> bool;
}

/// Declares [`Discipline`], the enum of every discipline's state, and its
/// static dispatch.
macro_rules! disciplines {
    ($($name:ident($state:ty)),* $(,)?) => {
        /// The discipline a link runs, with its state.
        #[derive(Clone, Debug)]
        pub(super) enum Discipline {
            $($name($state),)*
        }

        impl Discipline {
            pub fn new(config: &QueueConfig) -> Self {
                $(if let Some(d) = <$state as QueueDiscipline>::from_config(config) {
                    return Discipline::$name(d);
                })*
                unreachable!("no queue discipline for {config:?}")
            }

            #[inline]
            pub fn admit(&mut self, backlog: Backlog, now: u64, size: u32, rng: &mut SimRng) -> bool {
                match self {
                    $(Discipline::$name(d) => d.admit(backlog, now, size, rng),)*
                }
            }
        }
    };
}

disciplines! {
    DropTailPackets(drop_tail::PacketLimit),
    DropTailBytes(drop_tail::ByteLimit),
    Red(red::Red),
}
