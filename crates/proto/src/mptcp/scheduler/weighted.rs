//! `weighted:W0/W1/...`: a fixed split of the bytes between subflows, by
//! subflow index (3GPP ATSSS's load-balancing steering mode with fixed
//! percentages, TS 24.193 5.32.8; OpenMPTCProuter's weighted links).
//! `weighted:70/30` gives subflow 0 (say the fixed line) 70 % of the bytes
//! and subflow 1 (cellular) 30 %; subflows without a weight get none;
//! `weighted` alone gives every active subflow an equal share.
//!
//! The split is strict: the chunk goes to the active subflow furthest
//! below its share, and if that subflow has no window the connection
//! waits for it rather than send on another (the split is the operator's
//! policy, not a hint; `primary` is the overflow policy). When no weighted
//! subflow is active (its access is down) the others share equally, as
//! ATSSS moves traffic to the access that remains. Reinjections go to the
//! subflow furthest below its share that has window, and count. The
//! shares count from the last change in the set of active subflows: a
//! path back from an outage does not get the bytes it missed.

use super::{active, SchedContext, Scheduler, SubflowInfo};

#[derive(Debug, Clone)]
pub struct Weighted {
    weights: Vec<u32>,
    /// Bytes scheduled on each subflow index since `members` last changed.
    sent: Vec<u64>,
    /// The active subflows' indices (a bit each, index 63 for the rest).
    members: u64,
}

impl Weighted {
    /// From weights by subflow index; None unless one is positive.
    pub fn new(weights: Vec<u32>) -> Option<Weighted> {
        weights.iter().any(|&w| w > 0).then(|| Weighted { weights, sent: Vec::new(), members: 0 })
    }

    /// `weighted` without weights: every active subflow an equal share.
    pub fn equal() -> Weighted {
        Weighted { weights: Vec::new(), sent: Vec::new(), members: 0 }
    }

    /// `"70/30"`: weights separated by `/`.
    pub fn parse(p: &str) -> Option<Weighted> {
        let w: Option<Vec<u32>> = p.split('/').map(|x| x.trim().parse::<u32>().ok()).collect();
        Weighted::new(w?)
    }

    fn weight(&self, i: usize) -> u32 {
        self.weights.get(i).copied().unwrap_or(0)
    }

    fn sent(&self, i: usize) -> u64 {
        self.sent.get(i).copied().unwrap_or(0)
    }

    /// How far `s` would be past its share after `len` more bytes: bytes
    /// per unit of weight (compared as fractions, exact).
    fn key(&self, s: &SubflowInfo, len: u64, equal: bool) -> (u128, u128) {
        let w = if equal { 1 } else { self.weight(s.index) };
        (u128::from(self.sent(s.index) + len), u128::from(w))
    }
}

/// `a.0 / a.1 < b.0 / b.1` for positive denominators.
fn less(a: (u128, u128), b: (u128, u128)) -> bool {
    a.0 * b.1 < b.0 * a.1
}

impl Scheduler for Weighted {
    fn name(&self) -> &'static str {
        "weighted"
    }

    fn schedule(&mut self, sf: &[SubflowInfo], cx: &SchedContext, out: &mut Vec<usize>) {
        let members = active(sf).fold(0u64, |m, s| m | 1 << s.index.min(63));
        if members != self.members {
            self.members = members;
            self.sent.clear();
        }
        // Weighted subflows, or every active one equally when none is up.
        let equal = !active(sf).any(|s| self.weight(s.index) > 0);
        let candidates = active(sf).filter(|s| equal || self.weight(s.index) > 0).filter(|s| !cx.reinjection || s.has_window);
        let mut best: Option<&SubflowInfo> = None;
        for s in candidates {
            if best.is_none_or(|b| less(self.key(s, cx.len, equal), self.key(b, cx.len, equal))) {
                best = Some(s);
            }
        }
        let Some(s) = best.filter(|s| s.has_window) else { return };
        if self.sent.len() <= s.index {
            self.sent.resize(s.index + 1, 0);
        }
        self.sent[s.index] += cx.len;
        out.push(s.index);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{cx, pick, sf};
    use super::*;

    #[test]
    fn bytes_follow_the_weights() {
        let mut w = Weighted::parse("70/30").unwrap();
        let s = [sf(0, 10, false, true), sf(1, 50, false, true), sf(2, 5, false, true)];
        let mut n = [0; 3];
        for _ in 0..1000 {
            n[pick(&mut w, &s)[0]] += 1;
        }
        assert_eq!(n, [700, 300, 0], "subflow 2 has no weight");
    }

    #[test]
    fn the_split_waits_for_a_full_subflow_rather_than_overflow() {
        let mut w = Weighted::parse("1/1").unwrap();
        let s = [sf(0, 10, false, true), sf(1, 50, false, true)];
        assert_eq!(pick(&mut w, &s), [0]);
        // Subflow 1 is now furthest below its share but has no window.
        let s = [sf(0, 10, false, true), sf(1, 50, false, false)];
        assert!(pick(&mut w, &s).is_empty());
        // A reinjection takes a subflow with window.
        let mut out = vec![];
        w.schedule(&s, &SchedContext { reinjection: true, ..cx() }, &mut out);
        assert_eq!(out, [0]);
    }

    #[test]
    fn when_the_weighted_accesses_are_down_the_others_share() {
        let mut w = Weighted::parse("100/0").unwrap();
        let mut down = sf(0, 10, false, true);
        down.usable = false;
        let s = [down, sf(1, 50, false, true), sf(2, 60, false, true)];
        let seq: Vec<usize> = (0..4).map(|_| pick(&mut w, &s)[0]).collect();
        assert_eq!(seq, [1, 2, 1, 2]);
    }

    /// A subflow back from an outage gets its share from then on, not
    /// the bytes the others carried meanwhile.
    #[test]
    fn an_outage_is_not_paid_back() {
        let mut w = Weighted::parse("1/1").unwrap();
        let both = [sf(0, 10, false, true), sf(1, 50, false, true)];
        let mut down = both;
        down[1].usable = false;
        for _ in 0..100 {
            assert_eq!(pick(&mut w, &down), [0]);
        }
        let seq: Vec<usize> = (0..4).map(|_| pick(&mut w, &both)[0]).collect();
        assert_eq!(seq, [0, 1, 0, 1]);
    }

    #[test]
    fn weights_parse_or_are_refused() {
        assert!(Weighted::parse("70/30").is_some());
        assert!(Weighted::parse("0/1").is_some());
        for bad in ["", "0/0", "70,30", "a/b", "-1/2"] {
            assert!(Weighted::parse(bad).is_none(), "{bad}");
        }
    }
}
