//! The application's side: queueing bytes to send (as a stream or as
//! records), reading in-order bytes, closing and aborting.

use core::ops::Range;

use super::{Connection, State};

impl Connection {
    /// Bytes the send buffer accepts now.
    pub fn send_space(&self) -> u64 {
        if self.fin_queued || matches!(self.state, State::Closed) {
            return 0;
        }
        self.cfg.snd_buf.saturating_sub(self.app_end - self.snd_una)
    }

    /// Queues `n` more stream bytes; returns how many were taken.
    pub fn send(&mut self, n: u64) -> u64 {
        let n = n.min(self.send_space());
        self.app_end += n;
        n
    }

    /// Queues `n` bytes as one record: segments never span two records (a
    /// layer above maps each record somewhere else, like MPTCP's DSS).
    /// Returns how many were taken (all or nothing).
    pub fn send_record(&mut self, n: u64) -> u64 {
        if n == 0 || n > self.send_space() {
            return 0;
        }
        self.app_end += n;
        self.record_ends.push_back(self.app_end);
        n
    }

    /// Takes back the bytes queued but never sent, for a layer above to
    /// place again (MPTCP at fallback, where the subflow's stream becomes
    /// the data stream). Returns how many; none once a FIN is queued (its
    /// sequence number is fixed).
    pub fn retract_unsent(&mut self) -> u64 {
        if self.fin_queued {
            return 0;
        }
        let n = self.unsent();
        self.app_end -= n;
        let end = self.app_end;
        self.record_ends.retain(|&e| e <= end);
        n
    }

    /// Bytes queued but never sent.
    pub fn unsent(&self) -> u64 {
        self.app_end.saturating_sub(self.snd_nxt.min(self.app_end))
    }

    /// Whether a full segment of new data would go out now (congestion and
    /// receive windows permitting): what a multipath scheduler asks.
    pub fn can_send(&self) -> bool {
        self.synced
            && matches!(self.state, State::Established | State::CloseWait)
            && !self.fin_queued
            && self.in_flight() + self.mss <= self.cc_state.cwnd
            && self.snd_nxt + self.mss <= self.snd_una + self.peer_wnd.max(self.mss)
    }

    /// Stream offset of the next byte `send` will queue.
    pub fn send_offset(&self) -> u64 {
        self.app_end
    }

    /// In-order bytes ready for the application.
    pub fn readable(&self) -> u64 {
        self.rcv.nxt() - self.read_off
    }

    /// Consumes up to `max` in-order bytes; returns their stream offsets.
    pub fn recv(&mut self, max: u64) -> Range<u64> {
        let n = max.min(self.readable());
        let r = self.read_off..self.read_off + n;
        self.read_off += n;
        r
    }

    /// Closes the sending direction after the queued data (FIN).
    pub fn close(&mut self) {
        if self.fin_queued {
            return;
        }
        self.fin_queued = true;
        self.state = match self.state {
            State::Established => State::FinWait1,
            State::CloseWait => State::LastAck,
            // Before the handshake completes the FIN waits for it (the data
            // queued so far is still sent).
            s => s,
        };
    }

    /// Aborts: the next `poll_transmit` is a RST, then nothing. In
    /// TIME-WAIT the peer is done too: no RST (RFC 9293 3.10.5).
    pub fn abort(&mut self) {
        if self.state != State::Closed {
            self.rst_due = (self.synced || self.state == State::SynReceived) && self.state != State::TimeWait;
            self.state = State::Closed;
        }
    }
}
