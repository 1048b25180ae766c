//! The send side's buffers: messages not yet sent, and the chunks sent and
//! not yet freed, indexed by TSN. A chunk is freed (its bytes leave the
//! send buffer) when the cumulative ack passes it, or at once when an
//! NR-SACK reports it non-renegable; a chunk only gap-acked by a plain
//! SACK stays, since the receiver may still renege on it (RFC 9260 6.2).

use std::collections::VecDeque;

use crate::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutState {
    /// In flight on `dest`.
    Outstanding,
    /// Reported received by a gap block.
    GapAcked,
    /// To be retransmitted (fast retransmit or T3-rtx expiry).
    Marked { fast: bool },
}

#[derive(Debug, Clone)]
pub struct OutChunk {
    pub tsn: u64,
    pub stream: u16,
    pub ssn: u16,
    pub ppid: u32,
    pub flags: u8,
    /// Emptied once freed by an NR-SACK.
    pub data: Vec<u8>,
    pub len: u64,
    pub dest: usize,
    pub sent_at: Instant,
    pub transmissions: u32,
    pub state: OutState,
    pub in_flight: bool,
    pub misses: u32,
    pub fast_retransmitted: bool,
    pub freed: bool,
}

#[derive(Debug, Clone)]
pub struct Pending {
    pub stream: u16,
    pub ssn: u16,
    pub ppid: u32,
    pub flags: u8,
    pub data: Vec<u8>,
}

#[derive(Debug, Default)]
pub struct SendQueue {
    /// Highest TSN cumulatively acked.
    pub cum_ack: u64,
    /// TSN of the next new chunk.
    pub next_tsn: u64,
    /// Chunks cum_ack+1 .. next_tsn-1.
    pub sent: VecDeque<OutChunk>,
    pub unsent: VecDeque<Pending>,
    /// Bytes counted against the send buffer.
    pub buffered: u64,
    /// Chunks in state `Marked`.
    pub marked: usize,
    /// The peer's window as the sender estimates it (RFC 9260 6.2.1).
    pub peer_rwnd: u64,
    /// The a_rwnd of the latest SACK (for receive-buffer splitting).
    pub peer_a_rwnd: u64,
    pub ssn: Vec<u16>,
}

impl SendQueue {
    pub fn new(initial_tsn: u64, streams: u16, peer_rwnd: u64) -> SendQueue {
        SendQueue {
            cum_ack: initial_tsn - 1,
            next_tsn: initial_tsn,
            peer_rwnd,
            peer_a_rwnd: peer_rwnd,
            ssn: vec![0; streams.max(1) as usize],
            ..Default::default()
        }
    }

    pub fn get_mut(&mut self, tsn: u64) -> Option<&mut OutChunk> {
        let i = tsn.checked_sub(self.cum_ack + 1)?;
        self.sent.get_mut(i as usize)
    }

    /// Releases a chunk's bytes from the send buffer.
    pub fn free(&mut self, tsn: u64) {
        if let Some(c) = self.get_mut(tsn) {
            if !c.freed {
                c.freed = true;
                c.data = Vec::new();
                let n = c.len;
                self.buffered = self.buffered.saturating_sub(n);
            }
        }
    }

    pub fn all_acked(&self) -> bool {
        self.sent.is_empty() && self.unsent.is_empty()
    }
}
