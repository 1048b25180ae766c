//! `linux`: the Linux 6.x in-kernel scheduler (`mptcp_subflow_get_send`,
//! net/mptcp/protocol.c).
//!
//! Each subflow's *linger time* is the time its queued bytes (in flight +
//! not yet sent) need at its pacing rate, approximated as cwnd / srtt:
//! `linger = (in_flight + unsent) * srtt / cwnd`. The chunk goes to the
//! subflow with the least linger time among those whose send buffer has
//! room (`sk_stream_memory_free`; Linux sizes a subflow's send buffer to
//! two windows of worst-case socket buffers, `tcp_sndbuf_expand`); backups only
//! when no non-backup subflow is active. The chosen subflow then gets a
//! burst of up to 64 KiB (`MPTCP_SEND_BURST_SIZE`) before the choice is
//! made again: data that waits in that subflow's queue, beyond its window.
//! On a slow path that queue is what holds the receiver's window (head-of-
//! line blocking), so the burst is part of what Linux does, not only of how.

use super::{active, SchedContext, Scheduler, SubflowInfo};

/// The kernel's burst: `MPTCP_SEND_BURST_SIZE`, 64 KiB less headers.
pub const BURST: u64 = 64 * 1024 - 20 - 40 - 40 - 8;

#[derive(Debug, Clone, Default)]
pub struct Linux {
    /// The subflow of the burst under way and the bytes it may still take.
    burst: Option<(usize, u64)>,
}

/// Linger time in nanoseconds (u128 to stay exact).
pub fn linger_ns(s: &SubflowInfo) -> u128 {
    let Some(srtt) = s.srtt else { return 0 }; // no sample yet: like an idle subflow
    let queued = (s.in_flight + s.unsent) as u128;
    queued * srtt.as_nanos() / s.cwnd.max(1) as u128
}

/// The subflow's send buffer has room: Linux's `sk_stream_memory_free`,
/// the buffer autotuned to two windows of worst-case socket buffers
/// (`tcp_sndbuf_expand`, see `mptcp/sndbuf.rs`), the data queued counted
/// as its payload (subflow skbs share the connection's pages).
pub fn memory_free(s: &SubflowInfo) -> bool {
    let segs = s.cwnd / s.mss.max(1);
    s.in_flight + s.unsent < crate::mptcp::sndbuf::subflow_sndbuf(0, segs, 4 << 20)
}

impl Scheduler for Linux {
    fn name(&self) -> &'static str {
        "linux"
    }

    fn schedule(&mut self, sf: &[SubflowInfo], cx: &SchedContext, out: &mut Vec<usize>) {
        // Reinjections are chosen afresh (Linux's retransmission path picks
        // its own subflow) and do not use up a burst.
        if !cx.reinjection {
            if let Some((i, left)) = self.burst {
                if left >= cx.len && active(sf).any(|s| s.index == i && memory_free(s)) {
                    self.burst = Some((i, left - cx.len));
                    out.push(i);
                    return;
                }
                self.burst = None;
            }
        }
        // The least lingering subflow, full or not: Linux waits when its
        // send buffer is full rather than taking the next one.
        if let Some(s) = active(sf).min_by_key(|s| (linger_ns(s), s.rtt(), s.index)).filter(|s| memory_free(s)) {
            if !cx.reinjection {
                self.burst = Some((s.index, BURST.min(cx.send_window.saturating_sub(cx.outstanding)).saturating_sub(cx.len)));
            }
            out.push(s.index);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{pick, sf};
    use super::*;

    #[test]
    fn least_linger_time_wins() {
        // 10 ms with 14 KB queued of a 14 KB window lingers 10 ms;
        // 40 ms with nothing queued lingers 0.
        let mut a = sf(0, 10, false, true);
        a.in_flight = 14_000;
        let b = sf(1, 40, false, true);
        assert_eq!(pick(&mut Linux::default(), &[a, b]), vec![1]);
        a.in_flight = 1_000; // 0.71 ms
        let mut b = b;
        b.in_flight = 1_000; // 2.9 ms
        assert_eq!(pick(&mut Linux::default(), &[a, b]), vec![0]);
        assert_eq!(linger_ns(&a), 1_000 * 10_000_000 / 14_000);
    }

    /// The chosen subflow keeps the chunks of its 64 KiB burst even once
    /// another one lingers less; then the choice is made again.
    #[test]
    fn a_burst_stays_on_its_subflow() {
        let mut l = Linux::default();
        let mut a = sf(0, 10, false, true);
        let b = sf(1, 40, false, true);
        a.cwnd = 1 << 20;
        let cx = |_| SchedContext { len: 1400, now: crate::time::Instant(0), reinjection: false, queued: 1 << 30, outstanding: 0, send_window: 1 << 30, window_blocked: 0 };
        let mut out = Vec::new();
        let mut picks = Vec::new();
        for k in 0..60u64 {
            out.clear();
            // Subflow 0 fills up; its linger time soon exceeds subflow 1's.
            a.unsent = k * 1400;
            l.schedule(&[a, b], &cx(k), &mut out);
            picks.push(out[0]);
        }
        // 46 chunks of 1400 bytes fit in the burst, the first included;
        // then subflow 1, which lingers less by then.
        let burst_chunks = (BURST / 1400) as usize;
        assert!(picks[..burst_chunks].iter().all(|&p| p == 0), "{picks:?}");
        assert_eq!(picks[burst_chunks], 1, "{picks:?}");
    }

    /// When the least lingering subflow's send buffer is full, Linux waits
    /// (`mptcp_subflow_get_send` returns no subflow) rather than taking a
    /// slower one.
    #[test]
    fn a_full_best_subflow_means_waiting() {
        let mut a = sf(0, 10, false, true);
        a.cwnd = 1448; // one segment: buffer of ten (46 080 bytes)
        a.in_flight = 1448;
        a.unsent = 46_080;
        let mut b = sf(1, 400, false, true);
        b.in_flight = 2_000_000; // lingers far longer
        assert!(linger_ns(&a) < linger_ns(&b));
        assert_eq!(pick(&mut Linux::default(), &[a, b]), Vec::<usize>::new());
    }

    /// A subflow whose queue fills its autotuned send buffer is skipped.
    #[test]
    fn full_send_buffer_is_skipped() {
        let mut a = sf(0, 10, false, true);
        a.unsent = crate::mptcp::sndbuf::subflow_sndbuf(0, a.cwnd / a.mss, 4 << 20);
        let b = sf(1, 40, false, true);
        assert_eq!(pick(&mut Linux::default(), &[a, b]), vec![1]);
    }
}
