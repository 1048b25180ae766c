//! `redundant`: every chunk on every active subflow (Frömmgen et al.'s
//! redundant scheduler), trading capacity for latency: the receiver keeps
//! the first copy (data-level reassembly drops the others) and DATA_ACKs
//! follow the fastest path. A chunk goes out when at least one subflow has
//! window space; the others queue it (a subflow whose send buffer is full
//! skips the chunk: the connection cannot queue it there).

use super::{active, SchedContext, Scheduler, SubflowInfo};

#[derive(Debug, Clone, Default)]
pub struct Redundant;

impl Scheduler for Redundant {
    fn name(&self) -> &'static str {
        "redundant"
    }

    fn schedule(&mut self, sf: &[SubflowInfo], _cx: &SchedContext, out: &mut Vec<usize>) {
        if !active(sf).any(|s| s.has_window) {
            return;
        }
        out.extend(active(sf).map(|s| s.index));
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{pick, sf};
    use super::*;

    #[test]
    fn every_active_subflow() {
        let s = [sf(0, 10, false, true), sf(1, 50, false, false), sf(2, 90, true, true)];
        assert_eq!(pick(&mut Redundant, &s), [0, 1], "not the backup");
        let s = [sf(0, 10, false, false), sf(1, 50, false, false)];
        assert!(pick(&mut Redundant, &s).is_empty());
    }
}
