//! The connection's timer table: the timers Linux keeps in a socket's one
//! retransmission timer slot (`icsk_timeout`), each a deadline or `None`.
//! The delayed ACK is not here: it is part of the ACK the receiver owes
//! (`AckDue::At`).

use crate::time::Instant;

#[derive(Debug, Clone, Default)]
pub(super) struct Timers {
    /// Retransmission timeout (RFC 6298), also the SYN's.
    pub(super) rto: Option<Instant>,
    /// Zero-window probe (persist timer, RFC 9293 3.8.6.1).
    pub(super) persist: Option<Instant>,
    /// Tail loss probe (RFC 8985 7): when to probe.
    pub(super) tlp: Option<Instant>,
    /// RACK's reordering timer: when a segment becomes overdue.
    pub(super) rack: Option<Instant>,
}

impl Timers {
    /// The earliest armed deadline.
    #[inline]
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        [self.rto, self.persist, self.tlp, self.rack].into_iter().flatten().min()
    }
}

/// Disarms `timer` and returns true if it was armed for `now` or earlier.
pub(super) fn expire(timer: &mut Option<Instant>, now: Instant) -> bool {
    if timer.is_some_and(|t| t <= now) {
        *timer = None;
        return true;
    }
    false
}
