//! Counters of one link direction.

/// Counters of one link direction. Every offered packet is, at any moment,
/// in exactly one of: dropped (queue, loss or down), queued, propagating
/// (`in_flight_packets`) or delivered; see [`LinkStats::accounted`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LinkStats {
    pub offered_packets: u64,
    pub offered_bytes: u64,
    /// Packets whose serialisation completed (including ones then lost).
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Packets handed out by `poll`.
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    /// Queue occupancy (accepted, not yet fully serialised) as of the last call.
    pub queue_bytes: u64,
    pub queue_packets: u64,
    /// Largest `queue_bytes` ever seen right after accepting a packet.
    pub max_queue_bytes: u64,
    /// Serialised, not lost, not yet delivered.
    pub in_flight_packets: u64,
    /// Refused by the queue discipline (tail drop, RED, RED's hard limit).
    pub queue_drops: u64,
    /// Lost on the wire (loss model).
    pub loss_drops: u64,
    /// Offered while down, or inside the link when it went down.
    pub down_drops: u64,
    /// Copies a duplicating link made (each also counted as offered).
    pub duplicated: u64,
}

impl LinkStats {
    pub fn drops_queue(&self) -> u64 {
        self.queue_drops
    }
    pub fn drops_loss(&self) -> u64 {
        self.loss_drops
    }
    pub fn drops_down(&self) -> u64 {
        self.down_drops
    }
    pub fn drops_total(&self) -> u64 {
        self.queue_drops + self.loss_drops + self.down_drops
    }
    /// Packets accounted for: delivered + dropped + still inside. Always
    /// equals `offered_packets` (a consistency check for tests and tools).
    pub fn accounted(&self) -> u64 {
        self.delivered_packets + self.drops_total() + self.queue_packets + self.in_flight_packets
    }
}
