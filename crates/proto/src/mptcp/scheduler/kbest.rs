//! `kbest` / `kbest:K`: seed 001's scheduler. Round-robin over the K
//! subflows with the lowest smoothed RTT (K = 2 unless given). The ranking
//! is taken once and kept until every member has sent once, then re-taken,
//! so a momentary RTT spike does not reshuffle the set mid-round.

use super::{active, SchedContext, Scheduler, SubflowInfo};

#[derive(Debug, Clone)]
pub struct KBest {
    pub k: usize,
    /// The current members, best first.
    members: Vec<usize>,
    /// Members that have sent in this round.
    sent: Vec<bool>,
    /// Position of the next member to try.
    next: usize,
}

impl KBest {
    pub fn new(k: usize) -> Self {
        KBest { k: k.max(1), members: Vec::new(), sent: Vec::new(), next: 0 }
    }

    fn rerank(&mut self, sf: &[SubflowInfo]) {
        let mut v: Vec<&SubflowInfo> = active(sf).collect();
        v.sort_by_key(|s| (s.rtt(), s.index));
        self.members.clear();
        self.members.extend(v.iter().take(self.k).map(|s| s.index));
        self.sent.clear();
        self.sent.resize(self.members.len(), false);
        self.next = 0;
    }
}

impl Scheduler for KBest {
    fn name(&self) -> &'static str {
        "kbest"
    }

    fn schedule(&mut self, sf: &[SubflowInfo], _cx: &SchedContext, out: &mut Vec<usize>) {
        let usable = |i: usize| sf.get(i).is_some_and(|s| s.usable);
        // A new round when everyone sent, when a member died, or when the set
        // could grow (subflows joined since).
        let grow = self.members.len() < self.k && active(sf).count() > self.members.len();
        if self.members.is_empty() || self.sent.iter().all(|&b| b) || self.members.iter().any(|&i| !usable(i)) || grow {
            self.rerank(sf);
        }
        let n = self.members.len();
        for step in 0..n {
            let pos = (self.next + step) % n;
            let i = self.members[pos];
            if sf[i].has_window {
                self.sent[pos] = true;
                self.next = (pos + 1) % n;
                out.push(i);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{pick, sf};
    use super::*;

    #[test]
    fn round_robin_over_the_k_fastest() {
        let mut k = KBest::new(3);
        let s = [sf(0, 552, false, true), sf(1, 34, false, true), sf(2, 137, false, true), sf(3, 38, false, true), sf(4, 43, false, true)];
        let seq: Vec<usize> = (0..6).map(|_| pick(&mut k, &s)[0]).collect();
        assert_eq!(seq, [1, 3, 4, 1, 3, 4]);
    }

    #[test]
    fn reranks_after_a_full_round() {
        let mut k = KBest::new(1);
        let mut s = [sf(0, 10, false, true), sf(1, 20, false, true)];
        assert_eq!(pick(&mut k, &s), [0]);
        s[0].srtt = Some(core::time::Duration::from_millis(30));
        assert_eq!(pick(&mut k, &s), [1], "the round ended: re-ranked");
    }
}
