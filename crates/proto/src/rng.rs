//! The one deterministic generator of mplab: SplitMix64 (Steele, Lea and
//! Flood, OOPSLA 2014). The sans-IO cores draw their keys, initial
//! sequence numbers, nonces and ports from it, seeded by the run; the
//! backends expand the run seed into their random streams' keys with it.
//! Written here rather than taken from a crate so that a seed's numbers
//! can never change under a library upgrade: published runs stay
//! reproducible.

/// One SplitMix64 step: advances `state` and returns the next value.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A SplitMix64 stream.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        splitmix64(&mut self.0)
    }

    /// A value other than 0 (SCTP's verification tags must not be 0).
    pub fn nonzero_u32(&mut self) -> u32 {
        loop {
            let v = self.next_u64() as u32;
            if v != 0 {
                return v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference sequence for seed 0 (the algorithm's published
    /// test values).
    #[test]
    fn known_values() {
        let mut s = SplitMix64::new(0);
        assert_eq!(s.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(s.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(s.next_u64(), 0x06C4_5D18_8009_454F);
    }
}
