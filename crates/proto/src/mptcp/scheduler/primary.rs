//! `primary` and `primary-standby`.
//!
//! The primary is the first subflow (index 0, the MP_CAPABLE one) when it
//! is usable and not a backup; otherwise the lowest-index usable
//! non-backup subflow. `primary` fills it first and overflows to the
//! others (lowest RTT first) only when its window is full. `primary-standby`
//! is active-standby: the others carry data only while the primary is
//! unusable (down, stale, closed).

use super::{active, SchedContext, Scheduler, SubflowInfo};

#[derive(Debug, Clone)]
pub struct Primary {
    /// Overflow to the other subflows when the primary's window is full.
    pub overflow: bool,
}

impl Primary {
    pub fn overflow() -> Self {
        Primary { overflow: true }
    }
    pub fn standby() -> Self {
        Primary { overflow: false }
    }
}

/// The designated primary subflow (see the module comment).
pub fn primary_of(sf: &[SubflowInfo]) -> Option<&SubflowInfo> {
    sf.iter().find(|s| s.usable && !s.backup)
}

impl Scheduler for Primary {
    fn name(&self) -> &'static str {
        if self.overflow {
            "primary"
        } else {
            "primary-standby"
        }
    }

    fn schedule(&mut self, sf: &[SubflowInfo], _cx: &SchedContext, out: &mut Vec<usize>) {
        match primary_of(sf) {
            Some(p) if p.has_window => out.push(p.index),
            Some(p) if self.overflow => {
                if let Some(s) = active(sf).filter(|s| s.has_window && s.index != p.index).min_by_key(|s| (s.rtt(), s.index)) {
                    out.push(s.index);
                }
            }
            Some(_) => {}
            None => {
                // No usable regular subflow: backups, lowest RTT first.
                if let Some(s) = active(sf).filter(|s| s.has_window).min_by_key(|s| (s.rtt(), s.index)) {
                    out.push(s.index);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{pick, sf};
    use super::*;

    #[test]
    fn primary_first_then_overflow() {
        let s = [sf(0, 50, false, true), sf(1, 10, false, true)];
        assert_eq!(pick(&mut Primary::overflow(), &s), [0]);
        let s = [sf(0, 50, false, false), sf(1, 10, false, true)];
        assert_eq!(pick(&mut Primary::overflow(), &s), [1]);
        assert!(pick(&mut Primary::standby(), &s).is_empty(), "standby waits for the primary");
        let mut down = sf(0, 50, false, true);
        down.usable = false;
        assert_eq!(pick(&mut Primary::standby(), &[down, sf(1, 10, false, true)]), [1]);
    }
}
