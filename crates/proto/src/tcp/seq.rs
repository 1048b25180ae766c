//! 32-bit sequence numbers on the wire, 64-bit stream offsets inside.
//!
//! The connection keeps every position as a 64-bit offset from its initial
//! sequence number, so comparisons never wrap; only the header codec sees
//! 32-bit values. A received sequence number is unwrapped to the offset
//! nearest a reference the connection already knows (RFC 9293's modular
//! comparison, made explicit).

/// The 64-bit offset whose low 32 bits (relative to `base`) are `seq`,
/// nearest to `near`. `None` when that would lie before offset 0.
pub fn unwrap(seq: u32, base: u32, near: u64) -> Option<u64> {
    let near_seq = base.wrapping_add(near as u32);
    let diff = seq.wrapping_sub(near_seq) as i32 as i64;
    let v = near as i64 + diff;
    (v >= 0).then_some(v as u64)
}

/// The 32-bit sequence number of offset `off` relative to `base`.
pub fn wrap(off: u64, base: u32) -> u32 {
    base.wrapping_add(off as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn unwraps_across_the_32_bit_boundary() {
        let base = u32::MAX - 10;
        assert_eq!(unwrap(wrap(20, base), base, 0), Some(20));
        assert_eq!(unwrap(wrap(5_000_000_000, base), base, 4_999_999_000), Some(5_000_000_000));
        assert_eq!(unwrap(base.wrapping_sub(1), base, 0), None);
    }

    proptest! {
        #[test]
        fn roundtrip_near(base: u32, off in 0u64..1 << 50, delta in -(1i64 << 30)..(1i64 << 30)) {
            let near = (off as i64 + delta).max(0) as u64;
            prop_assert_eq!(unwrap(wrap(off, base), base, near), Some(off));
        }
    }
}
