//! Linux's receive stall, watched from a gateway's kernel MPTCP socket.

use std::os::fd::RawFd;

/// How long a gateway's kernel MPTCP connection must have gone without a
/// DATA_ACK for the bytes it holds, up to the end of the run and while its
/// subflows still got TCP acknowledgements, for the run to say the kernel
/// stopped delivering. The far gateway reads whatever arrives at once, so
/// a connection-level acknowledgement that does not come for this long is
/// the far kernel's doing, not the application's: 20 round trips of the
/// slowest bundled access link (100 ms).
const STALL_AFTER_NS: u64 = 2_000_000_000;
/// How often the detector samples the socket.
const STALL_SAMPLE_NS: u64 = 100_000_000;

/// Watches a kernel MPTCP socket for Linux's receive stall: the subflows
/// keep delivering at the TCP level but the connection's DATA_ACK stops
/// for good while bytes wait (seen on Linux 6.18: the receiver holds the
/// data after a hole in its out-of-order queue and keeps its window
/// closed, docs/kernel-backend.md). A pause that ends before the run does
/// (a failover's reinjection) is not one.
pub(crate) struct StallWatch {
    next_ns: u64,
    /// Bytes DATA_ACKed so far: written less what the socket still holds.
    acked: u64,
    queued: u64,
    /// Since when `acked` has not moved with bytes waiting, and the
    /// subflows' TCP-acknowledged bytes then and now.
    since: Option<(u64, u64)>,
    tcp_acked: u64,
}

impl StallWatch {
    pub(crate) fn new() -> Self {
        StallWatch { next_ns: 0, acked: 0, queued: 0, since: None, tcp_acked: 0 }
    }

    /// Samples the socket when due; `written`: bytes the gateway has
    /// written into it.
    pub(crate) fn sample(&mut self, fd: RawFd, written: u64, now_ns: u64) {
        if now_ns < self.next_ns {
            return;
        }
        self.next_ns = now_ns + STALL_SAMPLE_NS;
        let Some((_, queued)) = crate::probes::send_buffer(fd) else { return };
        self.tcp_acked = crate::probes::mptcp_full_info(fd).map_or(0, |subs| subs.iter().map(|s| s.info.bytes_acked).sum());
        let acked = written.saturating_sub(queued);
        self.queued = queued;
        if queued == 0 || acked != self.acked {
            self.acked = acked;
            self.since = None;
        } else {
            self.since.get_or_insert((now_ns, self.tcp_acked));
        }
    }

    /// At the end of the run: the stall's description when the connection
    /// has been stuck for at least [`STALL_AFTER_NS`] up to now while its
    /// subflows still got TCP acknowledgements.
    pub(crate) fn stalled(&self, now_ns: u64) -> Option<String> {
        let (since, tcp_then) = self.since?;
        (now_ns.saturating_sub(since) >= STALL_AFTER_NS && self.tcp_acked > tcp_then).then(|| {
            format!(
                "the kernel's MPTCP connection stopped delivering at {:.2} s: no DATA_ACK from then to the end ({:.1} s) with {} bytes queued while its subflows' TCP acknowledged {} bytes (the far kernel kept the data and its receive window closed; Linux receive stall, docs/kernel-backend.md)",
                since as f64 / 1e9,
                (now_ns - since) as f64 / 1e9,
                self.queued,
                self.tcp_acked - tcp_then
            )
        })
    }
}
