//! Packet schedulers: which subflow carries the next chunk of data.
//!
//! A scheduler sees a read-only view of every subflow ([`SubflowInfo`]) and
//! names the subflow(s) that should carry the next chunk of new data; the
//! connection does the rest (mapping, sending, reinjection). Writing a new
//! one is one file implementing [`Scheduler`]; see `docs/` for examples.

use core::fmt::Debug;
use core::time::Duration;

use crate::time::Instant;

/// What a scheduler may know about one subflow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SubflowInfo {
    /// Position in the connection's subflow list (stable while it lives).
    pub index: usize,
    pub srtt: Option<Duration>,
    pub cwnd: u64,
    pub in_flight: u64,
    /// Payload bytes per full segment.
    pub mss: u64,
    /// Either end asked for this subflow to be used only as a backup.
    pub backup: bool,
    /// Established, joined and not stale: it can carry data.
    pub usable: bool,
    /// A full segment would go out now (cwnd and receive window permit).
    pub has_window: bool,
    /// Bytes queued on it and not yet sent.
    pub unsent: u64,
}

/// The scheduler's decision for one chunk of data.
pub trait Scheduler: Debug {
    fn name(&self) -> &'static str;
    /// Picks the subflows that carry the next `len` bytes of new data: push
    /// their indices into `out` (one for most schedulers, several for a
    /// redundant one); leave it empty to wait until windows open.
    fn schedule(&mut self, subflows: &[SubflowInfo], len: u64, now: Instant, out: &mut Vec<usize>);
}

/// Lowest smoothed RTT among the subflows with window space; backup
/// subflows only when no other subflow is usable (Linux's default before
/// 5.x's "burst" scheduler, and the algorithm seed 001 reads).
#[derive(Debug, Clone, Default)]
pub struct MinRtt;

impl Scheduler for MinRtt {
    fn name(&self) -> &'static str {
        "minrtt"
    }

    fn schedule(&mut self, sf: &[SubflowInfo], _len: u64, _now: Instant, out: &mut Vec<usize>) {
        let any_regular = sf.iter().any(|s| s.usable && !s.backup);
        let best = sf
            .iter()
            .filter(|s| s.usable && s.has_window && !(any_regular && s.backup))
            .min_by_key(|s| (s.srtt.unwrap_or(Duration::MAX), s.index));
        if let Some(s) = best {
            out.push(s.index);
        }
    }
}

/// Builds a scheduler by scenario name.
pub fn by_name(name: &str) -> Option<Box<dyn Scheduler>> {
    match name {
        "minrtt" | "default" => Some(Box::new(MinRtt)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sf(index: usize, rtt_ms: u64, backup: bool, has_window: bool) -> SubflowInfo {
        SubflowInfo {
            index,
            srtt: Some(Duration::from_millis(rtt_ms)),
            cwnd: 10_000,
            in_flight: 0,
            mss: 1400,
            backup,
            usable: true,
            has_window,
            unsent: 0,
        }
    }

    fn pick(s: &[SubflowInfo]) -> Option<usize> {
        let mut out = vec![];
        MinRtt.schedule(s, 1400, Instant(0), &mut out);
        out.first().copied()
    }

    #[test]
    fn lowest_rtt_with_window_wins() {
        assert_eq!(pick(&[sf(0, 40, false, true), sf(1, 10, false, true)]), Some(1));
        assert_eq!(pick(&[sf(0, 40, false, true), sf(1, 10, false, false)]), Some(0));
        assert_eq!(pick(&[sf(0, 40, false, false), sf(1, 10, false, false)]), None);
    }

    #[test]
    fn backups_only_when_no_regular_subflow_is_usable() {
        assert_eq!(pick(&[sf(0, 40, false, false), sf(1, 10, true, true)]), None, "a regular subflow exists, wait for it");
        let mut down = sf(0, 40, false, true);
        down.usable = false;
        assert_eq!(pick(&[down, sf(1, 10, true, true)]), Some(1));
    }
}
