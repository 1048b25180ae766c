//! The simulator's side of the model packet ([`mplab_backend::packet`],
//! re-exported here): the flow hash a router's ECMP choice is made from.

use rustc_hash::FxHashMap;

use crate::rng::SimRng;
pub use mplab_backend::packet::*;

/// Deterministic 5-tuple hash (splitmix64 finaliser over the tuple),
/// computed once per packet; each router mixes in its own salt with
/// [`ecmp_pick`], so the same flow always takes the same ECMP member and
/// different routers make independent choices like Linux's hash seed does.
pub fn flow_hash(key: (u32, u32, u16, u16)) -> u64 {
    let mut x = (key.0 as u64) << 32 | key.1 as u64;
    x ^= ((key.2 as u64) << 16 | key.3 as u64 | 6 << 40).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    mix(x)
}

/// The ECMP member (of `n`) a router with `salt` picks for a flow hash.
#[inline]
pub fn ecmp_pick(hash: u64, salt: u64, n: usize) -> usize {
    (mix(hash ^ salt) % n as u64) as usize
}

/// Stream ids of the nodes' ECMP draws (`ecmp = "random"`): this base +
/// node id, away from every other element's range.
pub const ECMP_STREAM_BASE: u64 = 0xec_0000_0000;

/// How a node chooses among its equal-cost next hops. Either way one flow
/// (5-tuple) keeps one next hop per node, so TCP sees no reordering.
#[derive(Debug, Clone)]
pub enum Ecmp {
    /// Salted 5-tuple hash ([`ecmp_pick`]): stateless, like Linux's
    /// multipath hash policy 1.
    Hash { salt: u64 },
    /// A uniformly random member the first time the node sees a flow,
    /// drawn from the node's own stream (boxed: only new flows touch it)
    /// and remembered by flow hash.
    Random { rng: Box<SimRng>, flows: FxHashMap<u64, u16> },
}

impl Ecmp {
    pub fn random(rng: SimRng) -> Ecmp {
        Ecmp::Random { rng: Box::new(rng), flows: FxHashMap::default() }
    }

    /// The next hop among `hops` (at least one) for the flow with hash
    /// `flow_hash`; `iface` names a member's egress interface (what a
    /// random-mode node remembers). Allocates only when a random-mode node
    /// meets a new flow (the table grows), never per packet.
    #[inline]
    pub fn pick<T: Copy>(&mut self, flow_hash: u64, hops: &[T], iface: impl Fn(&T) -> u16) -> T {
        match self {
            Ecmp::Hash { salt } => hops[ecmp_pick(flow_hash, *salt, hops.len())],
            Ecmp::Random { rng, flows } => {
                // The remembered choice, unless it is no member here (a
                // 64-bit hash collision with a flow going elsewhere).
                if let Some(h) = flows.get(&flow_hash).and_then(|&i| hops.iter().find(|h| iface(h) == i)) {
                    return *h;
                }
                let h = hops[rng.below(hops.len() as u64) as usize];
                flows.insert(flow_hash, iface(&h));
                h
            }
        }
    }
}

#[inline]
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(n: u32) -> impl Iterator<Item = u64> {
        (0..n).map(|i| flow_hash((0x0a00_0001 + i, 0x0a00_0402, 49152 + (i % 7) as u16, 5001)))
    }

    #[test]
    fn hash_mode_is_the_salted_hash() {
        let hops = [3u16, 5, 9];
        let mut e = Ecmp::Hash { salt: 77 };
        for h in hashes(100) {
            assert_eq!(e.pick(h, &hops, |&x| x), hops[ecmp_pick(h, 77, 3)]);
        }
    }

    #[test]
    fn random_mode_sticks_per_flow_spreads_uniformly_and_repeats() {
        let hops = [0u16, 1, 2, 3];
        let mut e = Ecmp::random(SimRng::new(1, ECMP_STREAM_BASE));
        let first: Vec<u16> = hashes(40_000).map(|h| e.pick(h, &hops, |&x| x)).collect();
        // A flow keeps its next hop ...
        let again: Vec<u16> = hashes(40_000).map(|h| e.pick(h, &hops, |&x| x)).collect();
        assert_eq!(first, again);
        // ... and new flows spread evenly (expected 10000 each, sd 87).
        for k in hops {
            let c = first.iter().filter(|&&x| x == k).count() as i64;
            assert!((c - 10_000).abs() < 450, "hop {k}: {c}");
        }
        // Same stream, same choices; another stream, others.
        let mut f = Ecmp::random(SimRng::new(1, ECMP_STREAM_BASE));
        assert_eq!(first, hashes(40_000).map(|h| f.pick(h, &hops, |&x| x)).collect::<Vec<_>>());
        let mut g = Ecmp::random(SimRng::new(1, ECMP_STREAM_BASE + 1));
        assert_ne!(first, hashes(40_000).map(|h| g.pick(h, &hops, |&x| x)).collect::<Vec<_>>());
        // A remembered hop that is not a member of this route is re-drawn.
        let h = hashes(1).next().unwrap();
        assert!([7u16, 8].contains(&e.pick(h, &[7u16, 8], |&x| x)));
    }
}
