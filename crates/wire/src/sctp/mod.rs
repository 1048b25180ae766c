//! SCTP (RFC 9260) packet codec: the common header with its CRC32c
//! checksum, and the chunks a CMT-SCTP comparison needs (DATA, INIT,
//! INIT ACK, SACK, NR-SACK, HEARTBEAT, ABORT, SHUTDOWN*, ERROR, COOKIE*),
//! with unknown chunks, parameters and error causes kept raw.
//!
//! Typed values in, bytes out, and back. Unlike the TCP option codec this
//! one allocates: chunks carry user data and parameter lists whose size the
//! packet decides. Every allocation is bounded by the length of the input
//! (decoding) or of the value (encoding); malformed input ends in an
//! [`SctpError`], never in a panic.
//!
//! * [`crc32c`]: the checksum (Castagnoli, reflected, table driven).
//! * [`chunk`]: the chunk types and their codec.
//! * [`param`]: INIT/INIT ACK parameters and error causes (both TLVs).
//! * [`packet`]: common header + chunks, checksum computed and verified.
//! * [`cookie`]: the state cookie, sealed with HMAC-SHA256.

pub mod chunk;
pub mod cookie;
pub mod crc32c;
pub mod packet;
pub mod param;

pub use chunk::{Chunk, DataChunk, GapBlock, InitChunk, SackChunk};
pub use packet::{CommonHeader, Packet};
pub use param::{ErrorCause, InitParam};

use thiserror::Error;

/// Why bytes did not decode into an SCTP packet (or a value into bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SctpError {
    /// The buffer ends before the structure it should hold.
    #[error("truncated: need {need} bytes, have {have}")]
    Truncated { need: usize, have: usize },
    /// A chunk length below 4, overrunning the packet, or wrong for its type.
    #[error("chunk type {chunk_type} with bad length {len}")]
    BadChunkLength { chunk_type: u8, len: u16 },
    /// A parameter length below 4, overrunning its chunk, or wrong for its type.
    #[error("parameter type {param_type:#06x} with bad length {len}")]
    BadParamLength { param_type: u16, len: u16 },
    /// An error cause length below 4, overrunning its chunk, or wrong for its code.
    #[error("error cause {code} with bad length {len}")]
    BadCauseLength { code: u16, len: u16 },
    /// The CRC32c in the common header does not match the packet.
    #[error("bad checksum: header has {stored:#010x}, packet sums to {computed:#010x}")]
    BadChecksum { stored: u32, computed: u32 },
    /// A value too large for its 16-bit length field.
    #[error("value too long to encode: {0}")]
    TooLong(&'static str),
}

pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Rounds a length up to the 4-byte boundary chunks and parameters align to.
pub(crate) fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// Walks a list of type-length-value items (parameters, error causes): each
/// is padded to 4 bytes, except that the last one's padding may be missing
/// (RFC 9260 3.2: the chunk length does not count it). `bad` builds the
/// error for an item whose length is below 4 or overruns the list.
pub(crate) fn walk_tlvs<'a>(
    mut b: &'a [u8],
    bad: fn(u16, u16) -> SctpError,
    mut item: impl FnMut(u16, &'a [u8]) -> Result<(), SctpError>,
) -> Result<(), SctpError> {
    while !b.is_empty() {
        if b.len() < 4 {
            return Err(SctpError::Truncated { need: 4, have: b.len() });
        }
        let t = be16(b, 0);
        let l = be16(b, 2) as usize;
        if l < 4 || l > b.len() {
            return Err(bad(t, l as u16));
        }
        item(t, &b[4..l])?;
        b = &b[pad4(l).min(b.len())..];
    }
    Ok(())
}

/// Appends one TLV with its padding; returns the number of padding bytes
/// (which a chunk length leaves out when the TLV is the chunk's last).
pub(crate) fn put_tlv(out: &mut Vec<u8>, t: u16, value: &[u8], what: &'static str) -> Result<usize, SctpError> {
    let len = 4 + value.len();
    if len > u16::MAX as usize {
        return Err(SctpError::TooLong(what));
    }
    out.extend_from_slice(&t.to_be_bytes());
    out.extend_from_slice(&(len as u16).to_be_bytes());
    out.extend_from_slice(value);
    let pad = pad4(len) - len;
    out.resize(out.len() + pad, 0);
    Ok(pad)
}
