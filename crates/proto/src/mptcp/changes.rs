//! Change tracking: which subflows an input or a transmit pass changed,
//! so that per-segment work does not grow with the number of subflows
//! (see the comment on `Connection::dirty`).

use super::Connection;

impl Connection {
    /// The `k`-th subflow to look at again (`None` past the last): all
    /// after a rare event, else those inputs changed.
    pub(super) fn changed_at(&self, k: usize) -> Option<usize> {
        if self.dirty_all {
            (k < self.subflows.len()).then_some(k)
        } else {
            self.dirty.get(k).copied()
        }
    }

    /// Any subflow may have changed (rare events): the next pass sweeps all.
    pub(super) fn changed_all(&mut self) {
        self.dirty_all = true;
        self.timeouts_valid = false;
    }

    /// Subflow `i` changed (a segment arrived on it).
    pub(super) fn changed(&mut self, i: usize) {
        if !self.dirty.contains(&i) {
            self.dirty.push(i);
        }
        self.timeouts_valid = false;
    }

    pub(super) fn touch(&mut self, i: usize) {
        if !self.touched.contains(&i) {
            self.touched.push(i);
        }
    }
}
