//! `minrtt` (alias `default`): the lowest smoothed RTT among the subflows
//! with window space; backup subflows only when no other subflow is usable.
//! Linux's default scheduler before 5.x, and the algorithm seed 001 reads.

use super::{active, SchedContext, Scheduler, SubflowInfo};

#[derive(Debug, Clone, Default)]
pub struct MinRtt;

impl Scheduler for MinRtt {
    fn name(&self) -> &'static str {
        "minrtt"
    }

    fn schedule(&mut self, sf: &[SubflowInfo], _cx: &SchedContext, out: &mut Vec<usize>) {
        if let Some(s) = active(sf).filter(|s| s.has_window).min_by_key(|s| (s.rtt(), s.index)) {
            out.push(s.index);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{pick, sf};
    use super::*;

    fn p(s: &[SubflowInfo]) -> Option<usize> {
        pick(&mut MinRtt, s).first().copied()
    }

    #[test]
    fn lowest_rtt_with_window_wins() {
        assert_eq!(p(&[sf(0, 40, false, true), sf(1, 10, false, true)]), Some(1));
        assert_eq!(p(&[sf(0, 40, false, true), sf(1, 10, false, false)]), Some(0));
        assert_eq!(p(&[sf(0, 40, false, false), sf(1, 10, false, false)]), None);
    }

    #[test]
    fn backups_only_when_no_regular_subflow_is_usable() {
        assert_eq!(p(&[sf(0, 40, false, false), sf(1, 10, true, true)]), None, "a regular subflow exists, wait for it");
        let mut down = sf(0, 40, false, true);
        down.usable = false;
        assert_eq!(p(&[down, sf(1, 10, true, true)]), Some(1));
    }
}
