//! Change tracking: which subflows an input or a transmit pass changed,
//! so that per-segment work does not grow with the number of subflows
//! (see `Changes`).

use super::Connection;

impl Connection {
    /// The `k`-th subflow to look at again (`None` past the last): all
    /// after a rare event, else those inputs changed.
    pub(super) fn changed_at(&self, k: usize) -> Option<usize> {
        if self.changes.dirty_all {
            (k < self.subflows.len()).then_some(k)
        } else {
            self.changes.dirty.get(k).copied()
        }
    }

    /// Any subflow may have changed (rare events): the next pass sweeps all.
    pub(super) fn changed_all(&mut self) {
        self.changes.dirty_all = true;
        self.changes.timeouts_valid = false;
    }

    /// Subflow `i` changed (a segment arrived on it).
    pub(super) fn changed(&mut self, i: usize) {
        if !self.changes.dirty.contains(&i) {
            self.changes.dirty.push(i);
        }
        self.changes.timeouts_valid = false;
    }

    pub(super) fn touch(&mut self, i: usize) {
        if !self.changes.touched.contains(&i) {
            self.changes.touched.push(i);
        }
    }
}
