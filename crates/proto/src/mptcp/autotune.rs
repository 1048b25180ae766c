//! Receive-buffer autotuning of the Linux profile (dynamic right-sizing,
//! `mptcp_rcv_space_adjust` and `mptcp_rcvbuf_grow`, net/mptcp/protocol.c):
//! the window a connection advertises starts small and, once per RTT,
//! grows to about twice what the application read in that RTT, up to the
//! configured buffer. mplab's own profile advertises the whole buffer from
//! the start. The difference shows where a window fills: after a subflow
//! dies with data in flight, a Linux receiver's small window fills within
//! an RTT or two, the sending subflows go idle, and the connection-level
//! retransmission resends the missing data (see `Profile`).

use core::time::Duration;

use crate::time::Instant;

/// The window Linux advertises for `space` bytes of receive buffer: the
/// buffer less the skb overhead `tcp_win_from_space` takes off at the
/// ratio of payload to truesize it measured on received segments (156/256
/// with this kernel's truesize per segment).
pub const fn window_from_space(space: u64) -> u64 {
    space * 156 / 256
}

/// Linux's receive window once data flows: `tcp_rmem[1]` (128 KiB) as a
/// window; 79872 bytes is what Linux 6.18 receivers advertise in their
/// first ACKs here.
pub const INITIAL_WINDOW: u64 = window_from_space(131072);

/// One connection's autotuning state.
#[derive(Debug, Clone)]
pub struct RcvAutotune {
    /// The window the receiver advertises at most now.
    window: u64,
    /// Bytes read in the last measured RTT (`rcvq_space.space`).
    space: u64,
    /// Read offset and time at the start of the current measurement.
    seq: u64,
    since: Option<Instant>,
}

impl RcvAutotune {
    pub fn new(max: u64) -> RcvAutotune {
        RcvAutotune { window: INITIAL_WINDOW.min(max), space: 10 * 1448, seq: 0, since: None }
    }

    pub fn window(&self) -> u64 {
        self.window
    }

    /// The application has read up to `read_off` at `now`; `rtt` is the
    /// connection's RTT estimate, `max` the buffer's size. Once per RTT the
    /// window grows to twice what was read in it, and more while that
    /// amount itself grows (the sender may still double its rate).
    pub fn on_read(&mut self, now: Instant, read_off: u64, rtt: Option<Duration>, max: u64) {
        let Some(since) = self.since else {
            self.since = Some(now);
            self.seq = read_off;
            return;
        };
        let Some(rtt) = rtt else { return };
        if now.saturating_since(since) < rtt {
            return;
        }
        let copied = read_off - self.seq;
        if copied > self.space {
            let mut win = copied.saturating_mul(2);
            win = win.saturating_add(win.saturating_mul(copied - self.space) / self.space.max(1) * 2);
            self.window = self.window.max(win.min(max));
            self.space = copied;
        }
        self.seq = read_off;
        self.since = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A reader at a steady 10 Mbit/s over a 50 ms RTT (62.5 KB per RTT)
    /// ends with a window of about twice that; a faster one grows further.
    #[test]
    fn window_follows_twice_the_bytes_read_per_rtt() {
        let mut a = RcvAutotune::new(6 << 20);
        assert_eq!(a.window(), INITIAL_WINDOW);
        let rtt = Some(Duration::from_millis(50));
        let per_rtt = 62_500;
        for k in 0..=40u64 {
            a.on_read(Instant(k * 50 * MS), k * per_rtt, rtt, 6 << 20);
        }
        assert_eq!(a.window(), 2 * per_rtt + 2 * 2 * per_rtt * (per_rtt - 14_480) / 14_480);
        let before = a.window();
        for k in 41..=80u64 {
            a.on_read(Instant(k * 50 * MS), 41 * per_rtt + (k - 41) * 4 * per_rtt, rtt, 6 << 20);
        }
        assert!(a.window() > before);
        assert!(a.window() <= 6 << 20);
    }

    #[test]
    fn never_beyond_the_buffer() {
        let mut a = RcvAutotune::new(100_000);
        let rtt = Some(Duration::from_millis(10));
        for k in 0..100u64 {
            a.on_read(Instant(k * 10 * MS), k * 1_000_000, rtt, 100_000);
        }
        assert_eq!(a.window(), 100_000);
    }
}
