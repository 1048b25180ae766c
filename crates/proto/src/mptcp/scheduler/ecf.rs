//! `ecf`: Earliest Completion First (Lim, Nahum, Towsley, Gibbens, "ECF:
//! An MPTCP Path Scheduler to Manage Heterogeneous Paths", CoNEXT 2017).
//!
//! The fastest subflow x_f is used whenever it has window space. If not,
//! let x_s be the fastest subflow that has, k the data-level bytes still
//! to send (in segments), and delta = max(rttvar_f, rttvar_s). Waiting for
//! x_f finishes the k segments after about `n * rtt_f` with
//! `n = 1 + k / cwnd_f`; using x_s takes at least `rtt_s`. ECF waits for
//! x_f when
//!
//! ```text
//! n * rtt_f < (1 + waiting * beta) * (rtt_s + delta)       and
//! (k / cwnd_s) * rtt_s >= 2 * rtt_f + delta
//! ```
//!
//! (x_s would still be busy when x_f could have finished), with the
//! hysteresis `beta = 0.25` applied while already waiting; otherwise it
//! sends on x_s. Windows are in segments, as in the paper.

use super::{active, fastest, SchedContext, Scheduler, SubflowInfo};

#[derive(Debug, Clone)]
pub struct Ecf {
    pub beta: f64,
    /// The last decision was to wait for the fast subflow.
    waiting: bool,
}

impl Default for Ecf {
    fn default() -> Self {
        Ecf { beta: 0.25, waiting: false }
    }
}

impl Ecf {
    /// ECF's decision for the pair: true = wait for `f`.
    pub fn should_wait(&self, f: &SubflowInfo, s: &SubflowInfo, queued: u64) -> bool {
        let (Some(rf), Some(rs)) = (f.srtt, s.srtt) else { return false };
        let (rf, rs) = (rf.as_secs_f64(), rs.as_secs_f64());
        let delta = f.rttvar.max(s.rttvar).as_secs_f64();
        let k = queued as f64 / f.mss.max(1) as f64;
        let n = 1.0 + k / f.cwnd_segments();
        let w = if self.waiting { 1.0 + self.beta } else { 1.0 };
        n * rf < w * (rs + delta) && (k / s.cwnd_segments()) * rs >= 2.0 * rf + delta
    }
}

impl Scheduler for Ecf {
    fn name(&self) -> &'static str {
        "ecf"
    }

    fn schedule(&mut self, sf: &[SubflowInfo], cx: &SchedContext, out: &mut Vec<usize>) {
        let Some(f) = fastest(sf) else { return };
        if f.has_window {
            self.waiting = false;
            out.push(f.index);
            return;
        }
        let Some(s) = active(sf).filter(|s| s.has_window).min_by_key(|s| (s.rtt(), s.index)) else { return };
        if !cx.reinjection && self.should_wait(f, s, cx.queued) {
            self.waiting = true;
            return;
        }
        self.waiting = false;
        out.push(s.index);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{cx, sf};
    use super::*;

    #[test]
    fn waits_when_the_fast_path_finishes_first() {
        let f = sf(0, 10, false, false); // cwnd 10 segments
        let s = sf(1, 100, false, true);
        let mut e = Ecf::default();
        // k = 20 segments: n = 3, 3 * 10 ms < 100 ms, and 20/10 * 100 ms >= 20 ms: wait.
        assert!(e.should_wait(&f, &s, 28_000));
        let mut out = vec![];
        e.schedule(&[f, s], &SchedContext { queued: 28_000, ..cx() }, &mut out);
        assert!(out.is_empty());
        // k = 200 segments: n = 21, 210 ms > 125 ms: use the slow path too.
        e.schedule(&[f, s], &SchedContext { queued: 280_000, ..cx() }, &mut out);
        assert_eq!(out, [1]);
    }
}
