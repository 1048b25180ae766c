//! Receive-side reassembly in stream offsets: the in-order edge (`nxt`) and
//! the out-of-order ranges beyond it. Only offsets are kept; the payload
//! bytes, when there are any, live in the driver's buffer at the same
//! offsets. The ranges also give the SACK blocks to advertise (RFC 2018).

use core::ops::Range;

/// What inserting one segment's range changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inserted {
    /// Bytes by which the in-order edge advanced.
    pub advanced: u64,
    /// The segment lay (at least partly) beyond a hole.
    pub out_of_order: bool,
    /// Out-of-order data was waiting before this segment (so it may have
    /// filled a hole; the receiver should ACK at once).
    pub had_holes: bool,
    /// Every byte had been received before.
    pub duplicate: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Reassembly {
    nxt: u64,
    /// Disjoint, sorted, non-adjacent ranges above `nxt`.
    ooo: Vec<Range<u64>>,
    /// Start of the out-of-order range that grew most recently (first SACK block).
    recent: Option<u64>,
    /// The sum of `ooo`'s lengths, kept as it changes: drivers ask for it
    /// on every segment.
    held: u64,
}

impl Reassembly {
    pub fn new(nxt: u64) -> Self {
        Reassembly { nxt, ooo: Vec::new(), recent: None, held: 0 }
    }

    /// The next in-order offset expected.
    pub fn nxt(&self) -> u64 {
        self.nxt
    }

    pub fn has_holes(&self) -> bool {
        !self.ooo.is_empty()
    }

    /// Bytes held out of order above `nxt`.
    pub fn ooo_bytes(&self) -> u64 {
        self.held
    }

    /// Highest offset received so far (in order or not).
    pub fn highest(&self) -> u64 {
        self.ooo.last().map_or(self.nxt, |r| r.end)
    }

    pub fn insert(&mut self, r: Range<u64>) -> Inserted {
        let had_holes = self.has_holes();
        if r.end <= self.nxt || r.is_empty() {
            return Inserted { duplicate: !r.is_empty(), had_holes, ..Default::default() };
        }
        let start = r.start.max(self.nxt);
        let end = r.end;
        if start == self.nxt {
            // Extend the in-order edge, swallowing every range it reaches.
            let mut new_nxt = end;
            let mut n = 0;
            while n < self.ooo.len() && self.ooo[n].start <= new_nxt {
                new_nxt = new_nxt.max(self.ooo[n].end);
                self.held -= self.ooo[n].end - self.ooo[n].start;
                n += 1;
            }
            self.ooo.drain(..n);
            if self.recent.is_some_and(|s| s < new_nxt) {
                self.recent = None;
            }
            let advanced = new_nxt - self.nxt;
            self.nxt = new_nxt;
            return Inserted { advanced, out_of_order: false, had_holes, duplicate: false };
        }
        // Beyond a hole: merge with the ranges it touches.
        let first = self.ooo.partition_point(|x| x.end < start);
        let mut last = first;
        let mut merged = start..end;
        let mut covered = false;
        while last < self.ooo.len() && self.ooo[last].start <= end {
            let x = &self.ooo[last];
            covered |= x.start <= start && x.end >= end;
            self.held -= x.end - x.start;
            merged.start = merged.start.min(x.start);
            merged.end = merged.end.max(x.end);
            last += 1;
        }
        self.recent = Some(merged.start);
        self.held += merged.end - merged.start;
        self.ooo.splice(first..last, core::iter::once(merged));
        Inserted { advanced: 0, out_of_order: true, had_holes, duplicate: covered }
    }

    /// Up to `out.len()` SACK blocks: the most recently changed range
    /// first (RFC 2018 4), then the others from the highest down.
    pub fn sack_blocks(&self, out: &mut [Range<u64>]) -> usize {
        let mut n = 0;
        if let Some(rs) = self.recent {
            if let Some(r) = self.ooo.iter().find(|r| r.start == rs) {
                if n < out.len() {
                    out[n] = r.clone();
                    n += 1;
                }
            }
        }
        for r in self.ooo.iter().rev() {
            if n >= out.len() {
                break;
            }
            if Some(r.start) != self.recent {
                out[n] = r.clone();
                n += 1;
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn in_order_hole_and_fill() {
        let mut r = Reassembly::new(0);
        assert_eq!(r.insert(0..100).advanced, 100);
        let i = r.insert(200..300);
        assert!(i.out_of_order && !i.had_holes);
        let mut b = [0..0, 0..0, 0..0];
        assert_eq!(r.sack_blocks(&mut b), 1);
        assert_eq!(b[0], 200..300);
        let i = r.insert(100..200);
        assert_eq!(i.advanced, 200);
        assert!(i.had_holes);
        assert!(!r.has_holes());
        assert!(r.insert(50..150).duplicate);
    }

    #[test]
    fn most_recent_block_first() {
        let mut r = Reassembly::new(0);
        r.insert(100..200);
        r.insert(300..400);
        r.insert(500..600);
        r.insert(200..250); // grows the first range
        let mut b = [0..0, 0..0, 0..0];
        assert_eq!(r.sack_blocks(&mut b), 3);
        assert_eq!(b, [100..250, 500..600, 300..400]);
    }

    proptest! {
        /// Whatever order segments arrive in, the result is the union.
        #[test]
        fn reassembles_any_order(mut segs in proptest::collection::vec((0u64..2000, 1u64..200), 1..60), seed: u64) {
            // Shuffle deterministically.
            let n = segs.len();
            let mut x = seed | 1;
            for i in (1..n).rev() {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                segs.swap(i, (x % (i as u64 + 1)) as usize);
            }
            let mut r = Reassembly::new(0);
            let mut have = vec![false; 2300];
            for &(s, l) in &segs {
                r.insert(s..s + l);
                for b in &mut have[s as usize..(s + l) as usize] { *b = true; }
            }
            let expect = have.iter().position(|b| !b).unwrap() as u64;
            prop_assert_eq!(r.nxt(), expect);
            prop_assert_eq!(r.ooo_bytes(), r.ooo.iter().map(|x| x.end - x.start).sum::<u64>());
            for w in r.ooo.windows(2) {
                prop_assert!(w[0].end < w[1].start);
            }
            for x in &r.ooo {
                prop_assert!(x.start > r.nxt());
                for i in x.clone() { prop_assert!(have[i as usize]); }
            }
        }
    }
}
