//! Graceful close (RFC 9260 9.2): SHUTDOWN or SHUTDOWN ACK once all
//! outstanding data is acknowledged.

use mplab_wire::sctp::chunk::Chunk;
use mplab_wire::sctp::Packet;

use crate::sctp::tsn;
use crate::time::Instant;
use super::{Association, State, Transmit};

impl Association {
    /// Graceful close: SHUTDOWN once everything written is acknowledged.
    pub fn shutdown(&mut self, now: Instant) {
        self.close_requested = true;
        if self.state == State::Established {
            self.state = State::ShutdownPending;
        }
        self.maybe_progress_shutdown(now);
    }

    pub(super) fn maybe_progress_shutdown(&mut self, now: Instant) {
        if !self.snd.all_acked() {
            return;
        }
        let Some(d) = self.dests.get(self.primary) else { return };
        let (src, dst) = (d.local, d.remote);
        match self.state {
            State::ShutdownPending => {
                let cum = self.rcv.as_ref().map_or(0, |r| tsn::wire(r.cum));
                let t = Transmit { src, dst, packet: Packet::new(self.local_port, self.peer_port, self.peer_tag, vec![Chunk::Shutdown { cum_tsn_ack: cum }]) };
                self.state = State::ShutdownSent;
                let rto = d.rto.rto();
                self.send_with_t1(t, now, rto);
            }
            State::ShutdownReceived => {
                let t = Transmit { src, dst, packet: Packet::new(self.local_port, self.peer_port, self.peer_tag, vec![Chunk::ShutdownAck]) };
                self.state = State::ShutdownAckSent;
                let rto = d.rto.rto();
                self.send_with_t1(t, now, rto);
            }
            _ => {}
        }
    }
}
