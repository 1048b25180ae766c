//! The bytes every stream carries: a function of the stream offset, so
//! receivers and capture writers regenerate payloads and no backend stores
//! data to check it.

/// The byte every stream carries at `offset`: receivers and pcap writers
/// regenerate payloads from it, so the simulator never stores data.
#[inline]
pub fn pattern_byte(offset: u64) -> u8 {
    (offset.wrapping_mul(7).wrapping_add(3) & 0xff) as u8
}

/// Fills `out` with the stream bytes starting at `offset`.
pub fn fill_pattern(offset: u64, out: &mut [u8]) {
    for (i, b) in out.iter_mut().enumerate() {
        *b = pattern_byte(offset + i as u64);
    }
}

/// The first byte of `bytes` (the stream from `offset` on) that differs
/// from the pattern, described for the run's notes; None: all match. Every
/// backend that reads real bytes checks them with it.
pub fn pattern_mismatch(offset: u64, bytes: &[u8]) -> Option<String> {
    let i = bytes.iter().enumerate().position(|(i, &b)| b != pattern_byte(offset + i as u64))?;
    let o = offset + i as u64;
    Some(format!("byte at stream offset {o} is {:#04x}, expected {:#04x}", bytes[i], pattern_byte(o)))
}

/// The pattern as the stack's payload source: what every mplab sender
/// writes (the simulator regenerates payload bytes from it, for DSS
/// checksums; the userspace backend sends them).
pub struct Pattern;

impl mplab_proto::mptcp::PayloadSource for Pattern {
    fn fill(&self, off: u64, buf: &mut [u8]) {
        fill_pattern(off, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mismatch_names_its_offset() {
        let mut b = [0u8; 300];
        fill_pattern(1000, &mut b);
        assert_eq!(pattern_mismatch(1000, &b), None);
        b[257] ^= 0xff;
        assert!(pattern_mismatch(1000, &b).unwrap().starts_with("byte at stream offset 1257 "));
    }

    #[test]
    fn pattern_is_offset_derived() {
        let mut a = [0u8; 4];
        fill_pattern(10, &mut a);
        assert_eq!(a, [pattern_byte(10), pattern_byte(11), pattern_byte(12), pattern_byte(13)]);
        assert_ne!(pattern_byte(0), pattern_byte(1));
    }
}
