//! TSN serial arithmetic (RFC 9260 1.6) done once: every 32-bit TSN is
//! unwrapped to a 64-bit counter next to a reference the association knows
//! (its cumulative ack), so the rest of the code compares plain integers.

/// Unwrapped TSNs start at 2^32 plus the initial TSN, so that unwrapping
/// one a little below the reference never goes negative.
pub const BASE: u64 = 1 << 32;

/// The 64-bit TSN of an initial 32-bit TSN.
pub fn start(initial: u32) -> u64 {
    BASE + initial as u64
}

/// The 64-bit value of `tsn` that is nearest to `near` (within 2^31).
pub fn unwrap(tsn: u32, near: u64) -> u64 {
    let d = tsn.wrapping_sub(near as u32) as i32 as i64;
    near.wrapping_add_signed(d)
}

/// The 32-bit wire form.
pub fn wire(tsn: u64) -> u32 {
    tsn as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwraps_across_the_wrap() {
        let s = start(u32::MAX - 1);
        assert_eq!(unwrap(u32::MAX, s), s + 1);
        assert_eq!(unwrap(0, s), s + 2);
        assert_eq!(unwrap(5, s + 2), s + 7);
        assert_eq!(unwrap(u32::MAX - 3, s), s - 2);
        assert_eq!(wire(s + 3), 1);
    }
}
