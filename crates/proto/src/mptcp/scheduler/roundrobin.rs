//! `roundrobin`: the subflows take turns, one chunk each, skipping those
//! without window space (the out-of-tree Linux `roundrobin` scheduler with
//! `num_segments = 1`).

use super::{active, SchedContext, Scheduler, SubflowInfo};

#[derive(Debug, Clone, Default)]
pub struct RoundRobin {
    /// Index of the subflow that sent last.
    last: Option<usize>,
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &'static str {
        "roundrobin"
    }

    fn schedule(&mut self, sf: &[SubflowInfo], _cx: &SchedContext, out: &mut Vec<usize>) {
        let start = self.last.map_or(0, |l| l + 1);
        // The first subflow with window at or after `start`, wrapping.
        let pick = active(sf).filter(|s| s.has_window).min_by_key(|s| (s.index < start, s.index));
        if let Some(s) = pick {
            self.last = Some(s.index);
            out.push(s.index);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{pick, sf};
    use super::*;

    #[test]
    fn takes_turns_and_skips_full_ones() {
        let mut r = RoundRobin::default();
        let s = [sf(0, 10, false, true), sf(1, 50, false, true), sf(2, 90, false, true)];
        let seq: Vec<usize> = (0..6).map(|_| pick(&mut r, &s)[0]).collect();
        assert_eq!(seq, [0, 1, 2, 0, 1, 2]);
        let s = [sf(0, 10, false, true), sf(1, 50, false, false), sf(2, 90, false, true)];
        let seq: Vec<usize> = (0..4).map(|_| pick(&mut r, &s)[0]).collect();
        assert_eq!(seq, [0, 2, 0, 2]);
    }
}
