//! Drop-tail: a packet joins unless the queue would exceed its limit, in
//! packets or in bytes.

use super::discipline::{Backlog, QueueConfig, QueueDiscipline};
use crate::rng::SimRng;

/// At most this many packets.
#[derive(Clone, Copy, Debug)]
pub(in crate::link) struct PacketLimit(usize);

impl QueueDiscipline for PacketLimit {
    fn from_config(config: &QueueConfig) -> Option<Self> {
        match *config {
            QueueConfig::DropTailPackets(n) => Some(PacketLimit(n)),
            _ => None,
        }
    }

    #[inline]
    fn admit(&mut self, backlog: Backlog, _now: u64, _size: u32, _rng: &mut SimRng) -> bool {
        backlog.packets < self.0
    }
}

/// At most this many bytes.
#[derive(Clone, Copy, Debug)]
pub(in crate::link) struct ByteLimit(u64);

impl QueueDiscipline for ByteLimit {
    fn from_config(config: &QueueConfig) -> Option<Self> {
        match *config {
            QueueConfig::DropTailBytes(b) => Some(ByteLimit(b)),
            _ => None,
        }
    }

    #[inline]
    fn admit(&mut self, backlog: Backlog, _now: u64, size: u32, _rng: &mut SimRng) -> bool {
        backlog.bytes.saturating_add(u64::from(size)) <= self.0
    }
}
