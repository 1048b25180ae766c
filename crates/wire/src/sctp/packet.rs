//! An SCTP packet: the 12-byte common header (RFC 9260 3.1) and its chunks.

use super::chunk::Chunk;
use super::crc32c::packet_checksum;
use super::{be16, be32, pad4, SctpError};

/// Length of the common header.
pub const COMMON_HEADER_LEN: usize = 12;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CommonHeader {
    pub src_port: u16,
    pub dst_port: u16,
    pub verification_tag: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Packet {
    pub header: CommonHeader,
    pub chunks: Vec<Chunk>,
}

impl Packet {
    pub fn new(src_port: u16, dst_port: u16, verification_tag: u32, chunks: Vec<Chunk>) -> Packet {
        Packet { header: CommonHeader { src_port, dst_port, verification_tag }, chunks }
    }

    /// Serialises the packet and fills in its CRC32c.
    pub fn encode(&self) -> Result<Vec<u8>, SctpError> {
        let mut out = Vec::with_capacity(COMMON_HEADER_LEN + self.chunks.iter().map(Chunk::wire_len).sum::<usize>());
        out.extend_from_slice(&self.header.src_port.to_be_bytes());
        out.extend_from_slice(&self.header.dst_port.to_be_bytes());
        out.extend_from_slice(&self.header.verification_tag.to_be_bytes());
        out.extend_from_slice(&[0; 4]);
        for c in &self.chunks {
            c.encode(&mut out)?;
        }
        let sum = packet_checksum(&out).unwrap_or(0);
        // Least significant byte first: see the `crc32c` module.
        out[8..12].copy_from_slice(&sum.to_le_bytes());
        Ok(out)
    }

    /// Parses and checks the CRC32c.
    pub fn decode(b: &[u8]) -> Result<Packet, SctpError> {
        Self::decode_inner(b, true)
    }

    /// Parses without checking the CRC32c (for captures with offloaded
    /// checksums, or a simulator that does not corrupt packets).
    pub fn decode_unchecked(b: &[u8]) -> Result<Packet, SctpError> {
        Self::decode_inner(b, false)
    }

    /// The checksum field as the packet carries it.
    pub fn stored_checksum(b: &[u8]) -> Option<u32> {
        (b.len() >= COMMON_HEADER_LEN).then(|| u32::from_le_bytes([b[8], b[9], b[10], b[11]]))
    }

    fn decode_inner(b: &[u8], verify: bool) -> Result<Packet, SctpError> {
        if b.len() < COMMON_HEADER_LEN {
            return Err(SctpError::Truncated { need: COMMON_HEADER_LEN, have: b.len() });
        }
        if verify {
            let stored = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
            let computed = packet_checksum(b).unwrap_or(0);
            if stored != computed {
                return Err(SctpError::BadChecksum { stored, computed });
            }
        }
        let header = CommonHeader { src_port: be16(b, 0), dst_port: be16(b, 2), verification_tag: be32(b, 4) };
        let mut chunks = Vec::new();
        let mut off = COMMON_HEADER_LEN;
        while off < b.len() {
            let rest = &b[off..];
            if rest.len() < 4 {
                return Err(SctpError::Truncated { need: 4, have: rest.len() });
            }
            let (t, flags, len) = (rest[0], rest[1], be16(rest, 2) as usize);
            if len < 4 || len > rest.len() {
                return Err(SctpError::BadChunkLength { chunk_type: t, len: len as u16 });
            }
            chunks.push(Chunk::decode(t, flags, &rest[4..len])?);
            // The last chunk's padding may be missing; tolerate it.
            off += pad4(len).min(rest.len());
        }
        Ok(Packet { header, chunks })
    }
}
