//! `linux`: the Linux 6.x in-kernel scheduler (`mptcp_subflow_get_send`).
//!
//! Each subflow's *linger time* is the time its queued bytes (in flight +
//! not yet sent) need at its pacing rate, approximated as cwnd / srtt:
//! `linger = (in_flight + unsent) * srtt / cwnd`. The chunk goes to the
//! subflow with the least linger time among those that can send; backups
//! only when no non-backup subflow is active. Linux then pushes a burst of
//! up to 64 KiB on that subflow; here the decision is re-taken per segment,
//! which picks the same subflow for as long as its linger time stays the
//! least (the burst is an optimisation of the kernel's locking, not a
//! policy).

use super::{active, SchedContext, Scheduler, SubflowInfo};

/// The kernel's burst size (documentation; see the module comment).
pub const BURST: u64 = 64 * 1024;

#[derive(Debug, Clone, Default)]
pub struct Linux;

/// Linger time in nanoseconds (u128 to stay exact).
pub fn linger_ns(s: &SubflowInfo) -> u128 {
    let Some(srtt) = s.srtt else { return 0 }; // no sample yet: like an idle subflow
    let queued = (s.in_flight + s.unsent) as u128;
    queued * srtt.as_nanos() / s.cwnd.max(1) as u128
}

impl Scheduler for Linux {
    fn name(&self) -> &'static str {
        "linux"
    }

    fn schedule(&mut self, sf: &[SubflowInfo], _cx: &SchedContext, out: &mut Vec<usize>) {
        if let Some(s) = active(sf).filter(|s| s.has_window).min_by_key(|s| (linger_ns(s), s.rtt(), s.index)) {
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
        assert_eq!(pick(&mut Linux, &[a, b]), vec![1]);
        a.in_flight = 1_000; // 0.71 ms
        let mut b = b;
        b.in_flight = 1_000; // 2.9 ms
        assert_eq!(pick(&mut Linux, &[a, b]), vec![0]);
        assert_eq!(linger_ns(&a), 1_000 * 10_000_000 / 14_000);
    }
}
