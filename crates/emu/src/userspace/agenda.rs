//! Which flow ends of an mplab host need a turn of its loop: those a
//! segment arrived for, and those whose timer (the connection's, or the
//! application's) is due. A host holding ten thousand mostly idle
//! connections then spends a pass on the few that have something to do,
//! not on all of them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Ends needing a turn now, and every end's next deadline.
pub struct Agenda {
    /// Ends to run this pass, each once.
    ready: Vec<usize>,
    queued: Vec<bool>,
    /// (deadline ns, end), earliest first; an entry whose deadline is no
    /// longer the end's `armed` one is stale and skipped.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    armed: Vec<u64>,
}

impl Agenda {
    /// `n` ends, every one of them ready (each gets a first turn).
    pub fn new(n: usize) -> Agenda {
        Agenda { ready: (0..n).collect(), queued: vec![true; n], heap: BinaryHeap::new(), armed: vec![u64::MAX; n] }
    }

    /// A new end (made at run time: a converter's carrier), ready for its
    /// first turn; its index.
    pub fn add(&mut self) -> usize {
        let e = self.queued.len();
        self.queued.push(true);
        self.armed.push(u64::MAX);
        self.ready.push(e);
        e
    }

    /// How many ends it knows.
    pub fn len(&self) -> usize {
        self.queued.len()
    }

    /// End `e` gets a turn this pass.
    pub fn wake(&mut self, e: usize) {
        if !self.queued[e] {
            self.queued[e] = true;
            self.ready.push(e);
        }
    }

    /// Every end gets a turn (a control command touched them all).
    pub fn wake_all(&mut self) {
        for e in 0..self.queued.len() {
            self.wake(e);
        }
    }

    /// End `e` next needs a turn at `at_ns` (u64::MAX: only when a segment
    /// comes).
    pub fn arm(&mut self, e: usize, at_ns: u64) {
        if self.armed[e] != at_ns {
            self.armed[e] = at_ns;
            if at_ns != u64::MAX {
                self.heap.push(Reverse((at_ns, e)));
            }
        }
    }

    /// The ends due by `now_ns` become ready; returns this pass's ends
    /// (the caller gives them back with [`Agenda::done`]).
    pub fn take(&mut self, now_ns: u64) -> Vec<usize> {
        while let Some(&Reverse((at, e))) = self.heap.peek() {
            if at > now_ns {
                break;
            }
            self.heap.pop();
            if self.armed[e] == at {
                self.armed[e] = u64::MAX;
                self.wake(e);
            }
        }
        let v = std::mem::take(&mut self.ready);
        for &e in &v {
            self.queued[e] = false;
        }
        v
    }

    /// Hands back the vector [`Agenda::take`] gave (its allocation is
    /// reused).
    pub fn done(&mut self, mut v: Vec<usize>) {
        if self.ready.is_empty() {
            v.clear();
            self.ready = v;
        }
    }

    /// Some end is ready already (the loop must not sleep).
    pub fn busy(&self) -> bool {
        !self.ready.is_empty()
    }

    /// The earliest live deadline, if any.
    pub fn next_deadline(&mut self) -> Option<u64> {
        while let Some(&Reverse((at, e))) = self.heap.peek() {
            if self.armed[e] == at {
                return Some(at);
            }
            self.heap.pop();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_added_end_gets_a_turn() {
        let mut a = Agenda::new(1);
        let v = a.take(0);
        a.done(v);
        assert_eq!(a.add(), 1);
        assert_eq!(a.take(0), [1]);
        a.arm(1, 10);
        a.wake(0);
        assert_eq!(a.take(20), [0, 1]);
    }

    #[test]
    fn every_end_starts_ready_then_only_woken_or_due_ones() {
        let mut a = Agenda::new(3);
        let v = a.take(0);
        assert_eq!(v, [0, 1, 2]);
        a.done(v);
        assert!(!a.busy() && a.take(0).is_empty());
        a.arm(2, 100);
        a.arm(0, 50);
        a.wake(1);
        a.wake(1);
        assert_eq!(a.next_deadline(), Some(50));
        assert_eq!(a.take(10), [1]);
        assert_eq!(a.take(60), [0]);
        assert_eq!(a.next_deadline(), Some(100));
        // Re-armed later: the earlier entry is stale.
        a.arm(2, 200);
        assert_eq!(a.next_deadline(), Some(200));
        assert!(a.take(150).is_empty());
        assert_eq!(a.take(200), [2]);
        assert_eq!(a.next_deadline(), None);
        // Disarmed.
        a.arm(1, 10);
        a.arm(1, u64::MAX);
        assert!(a.take(1000).is_empty());
        a.wake_all();
        assert_eq!(a.take(1000).len(), 3);
    }
}
