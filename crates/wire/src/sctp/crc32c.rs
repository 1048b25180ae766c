//! CRC32c (Castagnoli), the SCTP checksum (RFC 9260 6.8 and Appendix B).
//!
//! The reflected form of polynomial 0x1EDC6F41 (0x82F63B78 reversed), with
//! initial value and final XOR of all ones: crc32c("123456789") =
//! 0xE3069283. SCTP puts this value in the common header *least significant
//! byte first*: Appendix B's reference code byte-swaps the reflected result
//! and then stores it in network order, which cancels out to a
//! little-endian store (Linux declares the field `__le32`).

/// Reflected Castagnoli polynomial.
const POLY: u32 = 0x82F6_3B78;

const fn make_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static TABLE: [u32; 256] = make_table();

/// Feeds `data` into a running (not yet inverted) CRC state.
pub fn update(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc = TABLE[((crc ^ b as u32) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// The CRC32c of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    !update(!0, data)
}

/// The SCTP checksum of a whole packet, computed as if its checksum field
/// (bytes 8..12) were zero. `None` if the packet is shorter than the
/// 12-byte common header.
pub fn packet_checksum(packet: &[u8]) -> Option<u32> {
    if packet.len() < 12 {
        return None;
    }
    let c = update(!0, &packet[..8]);
    let c = update(c, &[0; 4]);
    Some(!update(c, &packet[12..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
        // RFC 3720 B.4 vector: 32 bytes of zeros.
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
    }
}
