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
//! A burst ends with its push: Linux 6.x chooses again at every push
//! (`__mptcp_push_pending` calls `mptcp_subflow_get_send` each time; the
//! 5.x reuse of `msk->last_snd` while a burst lasted is gone).

use super::{active, SchedContext, Scheduler, SubflowInfo};

/// The kernel's burst: `MPTCP_SEND_BURST_SIZE`, 64 KiB less headers.
pub const BURST: u64 = 64 * 1024 - 20 - 40 - 40 - 8;

#[derive(Debug, Clone, Default)]
pub struct Linux {
    /// The subflow of the burst under way and the bytes it may still take.
    burst: Option<(usize, u64)>,
    /// Per subflow: the pacing rate the linger time divides by, bytes/s
    /// (`avg_pacing_rate`), 0 until the subflow is first considered.
    avg_pace: Vec<u64>,
}

/// TCP's pacing rate, bytes/s (`tcp_update_pacing_rate`,
/// net/ipv4/tcp_input.c): 200 % of max(cwnd, packets out) per smoothed RTT
/// while the window is below half the slow-start threshold, 120 % beyond.
/// Counting the packets out, SACKed and lost ones too, a subflow in
/// recovery looks faster than its window says.
pub fn pacing_rate(s: &SubflowInfo) -> Option<u64> {
    let srtt = s.srtt?.as_nanos().max(1);
    let ratio: u128 = if s.cwnd < s.ssthresh / 2 { 200 } else { 120 };
    let bytes = s.cwnd.max(s.unacked) as u128;
    Some((bytes * ratio * 10_000_000 / srtt).min(u64::MAX as u128) as u64)
}

/// What a subflow holds (`sk_wmem_queued`): everything not yet
/// cumulatively acknowledged, and what waits unsent.
fn queued(s: &SubflowInfo) -> u64 {
    s.unacked.max(s.in_flight) + s.unsent
}

/// Linger time in nanoseconds: the queued bytes at the given rate.
fn linger_at(s: &SubflowInfo, pace: u64) -> u128 {
    if pace == 0 {
        return 0; // no RTT sample yet: like an idle subflow
    }
    queued(s) as u128 * 1_000_000_000 / pace as u128
}

/// Linger time in nanoseconds at the subflow's current pacing rate.
pub fn linger_ns(s: &SubflowInfo) -> u128 {
    linger_at(s, pacing_rate(s).unwrap_or(0))
}

/// The subflow's send buffer has room: Linux's `sk_stream_memory_free`,
/// what it holds against its buffer (autotuned by the `linux` profile to
/// two of its largest windows of worst-case socket buffers, see
/// `mptcp/sndbuf.rs`), counted as payload: subflow skbs share the
/// connection's pages.
pub fn memory_free(s: &SubflowInfo) -> bool {
    queued(s) < s.sndbuf
}

impl Linux {
    /// The subflow's smoothed pacing rate, started from its current one.
    fn avg_pace(&mut self, s: &SubflowInfo) -> u64 {
        if self.avg_pace.len() <= s.index {
            self.avg_pace.resize(s.index + 1, 0);
        }
        if self.avg_pace[s.index] == 0 {
            self.avg_pace[s.index] = pacing_rate(s).unwrap_or(0);
        }
        self.avg_pace[s.index]
    }
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
        // send buffer is full rather than taking the next one. A tie goes
        // to the subflow first in the connection's list (creation order):
        // Linux keeps the first with a strictly smaller linger time. Ties
        // are common, since every idle subflow lingers 0: after a DATA_ACK
        // jump the initial subflow, not the fastest, takes the first burst.
        let mut best: Option<(u128, usize)> = None;
        for s in active(sf) {
            let key = (linger_at(s, self.avg_pace(s)), s.index);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
        let Some(s) = best.and_then(|(_, i)| sf.iter().find(|s| s.index == i)).filter(|s| memory_free(s)) else { return };
        if !cx.reinjection {
            // Linux bounds a burst by the peer's window
            // (`mptcp_wnd_end - snd_nxt`) and ends it with the push
            // (`begin_pass` below).
            let burst = BURST.min(cx.send_window.saturating_sub(cx.outstanding));
            if burst > 0 {
                // Linux blends the rate in as the burst is queued, weighted
                // by what the subflow already holds.
                let wmem = queued(s) as u128;
                let now = pacing_rate(s).unwrap_or(0) as u128;
                let avg = &mut self.avg_pace[s.index];
                *avg = ((*avg as u128 * wmem + now * burst as u128) / (burst as u128 + wmem)) as u64;
            }
            self.burst = Some((s.index, burst.saturating_sub(cx.len)));
        }
        out.push(s.index);
    }

    fn begin_pass(&mut self) {
        self.burst = None;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{pick, sf};
    use super::*;

    #[test]
    fn least_linger_time_wins() {
        // In slow start (cwnd below half of ssthresh) the pacing rate is
        // 200 % of 14 KB per RTT: 2.8 MB/s at 10 ms, 0.7 MB/s at 40 ms.
        // 14 KB queued at 10 ms lingers 5 ms; nothing queued lingers 0.
        let mut a = sf(0, 10, false, true);
        a.in_flight = 14_000;
        let b = sf(1, 40, false, true);
        assert_eq!(pick(&mut Linux::default(), &[a, b]), vec![1]);
        a.in_flight = 1_000; // 0.36 ms
        let mut b = b;
        b.in_flight = 1_000; // 1.4 ms
        assert_eq!(pick(&mut Linux::default(), &[a, b]), vec![0]);
        assert_eq!(pacing_rate(&a), Some(2_800_000));
        assert_eq!(linger_ns(&a), 1_000 * 1_000_000_000 / 2_800_000);
    }

    /// `tcp_update_pacing_rate`: 120 % once the window reaches half the
    /// slow-start threshold, and the packets out (SACKed and lost ones
    /// too) count when they exceed the window, as in recovery.
    #[test]
    fn pacing_rate_follows_tcp() {
        let mut a = sf(0, 10, false, true);
        a.ssthresh = 28_000; // cwnd 14 000 is half: avoidance ratio
        assert_eq!(pacing_rate(&a), Some(14_000 * 120 / 100 * 100));
        a.ssthresh = 28_002; // half is 14 001: the window is below it
        assert_eq!(pacing_rate(&a), Some(14_000 * 2 * 100));
        a.ssthresh = 20_000;
        a.unacked = 42_000; // three windows out after a loss
        assert_eq!(pacing_rate(&a), Some(42_000 * 120 / 100 * 100));
        a.srtt = None;
        assert_eq!(pacing_rate(&a), None);
        assert_eq!(linger_ns(&a), 0, "no sample yet: like an idle subflow");
    }

    /// The rate a subflow is judged by is blended in as bursts are queued
    /// (`avg_pacing_rate`), weighted by what it already holds: a subflow
    /// whose window was just cut keeps looking faster for a while.
    #[test]
    fn the_pacing_rate_is_averaged_over_bursts() {
        let mut l = Linux::default();
        let mut a = sf(0, 10, false, true);
        let cx = SchedContext { len: 1400, now: crate::time::Instant(0), reinjection: false, queued: 1 << 30, outstanding: 0, send_window: 1 << 30, window_blocked: 0 };
        let mut out = Vec::new();
        l.schedule(&[a], &cx, &mut out);
        assert_eq!(l.avg_pace[0], 2_800_000, "starts at the current rate");
        // The window is cut to a quarter with 40 KB queued: the next
        // burst's choice blends 40 KB of the old rate with a burst of the new.
        a.cwnd = 3_500;
        a.ssthresh = 3_500;
        a.unsent = 40_000;
        l.burst = None;
        l.schedule(&[a], &cx, &mut out);
        let now = 3_500 * 120 / 100 * 100;
        let want = (2_800_000u128 * 40_000 + now as u128 * BURST as u128) / (40_000 + BURST as u128);
        assert_eq!(l.avg_pace[0] as u128, want);
        assert!(l.avg_pace[0] > 3 * now, "still three times the new rate");
    }

    /// Idle subflows all linger 0: the first in the connection's list
    /// wins, whatever its RTT (`linger_time < send_info.linger_time` over
    /// `conn_list`), so a slow initial subflow takes the first burst.
    #[test]
    fn a_tie_goes_to_the_first_subflow_in_the_list() {
        let (slow, fast) = (sf(0, 400, false, true), sf(1, 10, false, true));
        assert_eq!((linger_ns(&slow), linger_ns(&fast)), (0, 0));
        assert_eq!(pick(&mut Linux::default(), &[slow, fast]), vec![0], "the slow initial subflow");
        let (fast, slow) = (sf(0, 10, false, true), sf(1, 400, false, true));
        assert_eq!(pick(&mut Linux::default(), &[fast, slow]), vec![0], "by position, not RTT");
    }

    /// The chosen subflow keeps the chunks of its 64 KiB burst even once
    /// another one lingers less; then the choice is made again.
    #[test]
    fn a_burst_stays_on_its_subflow() {
        let mut l = Linux::default();
        let mut a = sf(0, 10, false, true);
        let b = sf(1, 40, false, true);
        a.cwnd = 1 << 20;
        a.sndbuf = 4 << 20; // a large window's buffer: room for the burst
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

    /// A burst does not outlive its push: the next pass chooses afresh,
    /// here the subflow that lingers less by then.
    #[test]
    fn a_new_pass_chooses_again() {
        let mut l = Linux::default();
        let mut a = sf(0, 10, false, true);
        let b = sf(1, 40, false, true);
        a.cwnd = 1 << 20;
        a.sndbuf = 4 << 20;
        let cx = SchedContext { len: 1400, now: crate::time::Instant(0), reinjection: false, queued: 1 << 30, outstanding: 0, send_window: 1 << 30, window_blocked: 0 };
        let mut out = Vec::new();
        l.begin_pass();
        l.schedule(&[a, b], &cx, &mut out);
        assert_eq!(out, vec![0]);
        // Subflow 0 now holds 40 chunks: it lingers longer than subflow 1.
        a.unsent = 40 * 1400;
        assert!(linger_ns(&a) > linger_ns(&b));
        out.clear();
        l.schedule(&[a, b], &cx, &mut out);
        assert_eq!(out, vec![0], "within the pass the burst goes on");
        out.clear();
        l.begin_pass();
        l.schedule(&[a, b], &cx, &mut out);
        assert_eq!(out, vec![1], "a new pass chooses again");
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
        a.unsent = a.sndbuf;
        let b = sf(1, 40, false, true);
        assert_eq!(pick(&mut Linux::default(), &[a, b]), vec![1]);
    }
}
