//! TCP header options: EOL, NOP, MSS, window scale, SACK-permitted, SACK,
//! timestamps, MPTCP and unknown kinds (kept verbatim, not lost).
//!
//! [`TcpOptions`] is a fixed-size value (no heap) so that a parse per segment
//! allocates nothing; it encodes in a canonical order padded with NOPs to a
//! 32-bit boundary, the way Linux lays options out.

use crate::error::WireError;
use crate::mptcp::{MptcpOption, RawBytes, KIND_MPTCP, MAX_OPTION_LEN};

pub mod kind {
    pub const EOL: u8 = 0;
    pub const NOP: u8 = 1;
    pub const MSS: u8 = 2;
    pub const WSCALE: u8 = 3;
    pub const SACK_PERMITTED: u8 = 4;
    pub const SACK: u8 = 5;
    pub const TIMESTAMPS: u8 = 8;
    pub const MPTCP: u8 = super::KIND_MPTCP;
}

/// TCP header flag bits.
pub mod flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const URG: u8 = 0x20;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

/// One SACK block: [left, right) in sequence space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SackBlock {
    pub left: u32,
    pub right: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Timestamps {
    pub tsval: u32,
    pub tsecr: u32,
}

/// At most 4 SACK blocks fit in the option space (2 + 4*8 = 34 bytes).
pub const MAX_SACK_BLOCKS: usize = 4;
/// MPTCP options one segment can carry here (e.g. DSS + ADD_ADDR + MP_PRIO).
pub const MAX_MPTCP_OPTIONS: usize = 4;

/// Options of one TCP segment, typed.
///
/// Laid out in declaration order (`repr(C)`), what every segment's reader
/// looks at first: the small fields, the SACK blocks, then the MPTCP
/// options, whose first slot holds the DSS of a data segment. A simulated
/// packet is read from a cold cache line by its receiver; with this order
/// an ordinary segment's fields share the first few lines instead of being
/// spread over all of them.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TcpOptions {
    sack_len: u8,
    mptcp_len: u8,
    pub sack_permitted: bool,
    pub wscale: Option<u8>,
    pub mss: Option<u16>,
    pub timestamps: Option<Timestamps>,
    sack: [SackBlock; MAX_SACK_BLOCKS],
    mptcp: [Option<MptcpOption>; MAX_MPTCP_OPTIONS],
    /// Unknown options, concatenated kind/length/data as they arrived.
    unknown: Option<RawBytes>,
}

impl core::fmt::Debug for TcpOptions {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut d = f.debug_struct("TcpOptions");
        if let Some(m) = self.mss {
            d.field("mss", &m);
        }
        if let Some(w) = self.wscale {
            d.field("wscale", &w);
        }
        if self.sack_permitted {
            d.field("sack_permitted", &true);
        }
        if let Some(t) = self.timestamps {
            d.field("ts", &t);
        }
        if !self.sack().is_empty() {
            d.field("sack", &self.sack());
        }
        if self.mptcp_len > 0 {
            d.field("mptcp", &self.mptcp().collect::<MptcpDebug>());
        }
        if let Some(u) = &self.unknown {
            d.field("unknown", u);
        }
        d.finish()
    }
}

/// Debug helper that collects without allocating beyond the fixed array.
struct MptcpDebug([Option<MptcpOption>; MAX_MPTCP_OPTIONS]);
impl<'a> FromIterator<&'a MptcpOption> for MptcpDebug {
    fn from_iter<I: IntoIterator<Item = &'a MptcpOption>>(it: I) -> Self {
        let mut a = [None; MAX_MPTCP_OPTIONS];
        for (slot, o) in a.iter_mut().zip(it) {
            *slot = Some(*o);
        }
        MptcpDebug(a)
    }
}
impl core::fmt::Debug for MptcpDebug {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.0.iter().flatten()).finish()
    }
}

impl TcpOptions {
    pub const fn new() -> Self {
        TcpOptions {
            mss: None,
            wscale: None,
            sack_permitted: false,
            timestamps: None,
            sack_len: 0,
            sack: [SackBlock { left: 0, right: 0 }; MAX_SACK_BLOCKS],
            mptcp_len: 0,
            mptcp: [None; MAX_MPTCP_OPTIONS],
            unknown: None,
        }
    }

    pub fn sack(&self) -> &[SackBlock] {
        &self.sack[..self.sack_len as usize]
    }

    /// Replaces the SACK blocks; keeps the first [`MAX_SACK_BLOCKS`].
    pub fn set_sack(&mut self, blocks: &[SackBlock]) {
        let n = blocks.len().min(MAX_SACK_BLOCKS);
        self.sack = [SackBlock::default(); MAX_SACK_BLOCKS];
        self.sack[..n].copy_from_slice(&blocks[..n]);
        self.sack_len = n as u8;
    }

    pub fn mptcp(&self) -> impl Iterator<Item = &MptcpOption> + '_ {
        self.mptcp[..self.mptcp_len as usize].iter().flatten()
    }

    pub fn has_mptcp(&self) -> bool {
        self.mptcp_len > 0
    }

    pub fn push_mptcp(&mut self, o: MptcpOption) -> Result<(), WireError> {
        if self.mptcp_len as usize >= MAX_MPTCP_OPTIONS {
            return Err(WireError::TooMany("MPTCP"));
        }
        self.mptcp[self.mptcp_len as usize] = Some(o);
        self.mptcp_len += 1;
        Ok(())
    }

    /// Drops every MPTCP option, as an option-stripping middlebox does.
    pub fn clear_mptcp(&mut self) {
        self.mptcp = [None; MAX_MPTCP_OPTIONS];
        self.mptcp_len = 0;
    }

    /// Unknown options exactly as received (kind, length, data, ...).
    pub fn unknown(&self) -> &[u8] {
        self.unknown.as_ref().map(|u| u.as_slice()).unwrap_or(&[])
    }

    /// Appends an unknown option given as its full TLV bytes.
    pub fn push_unknown(&mut self, tlv: &[u8]) -> Result<(), WireError> {
        if tlv.len() < 2 || tlv[1] as usize != tlv.len() {
            return Err(WireError::BadLength { kind: tlv.first().copied().unwrap_or(0), len: tlv.get(1).copied().unwrap_or(0) });
        }
        let mut buf = [0u8; MAX_OPTION_LEN];
        let cur = self.unknown();
        let n = cur.len() + tlv.len();
        if n > MAX_OPTION_LEN {
            return Err(WireError::OptionsTooLong(n));
        }
        buf[..cur.len()].copy_from_slice(cur);
        buf[cur.len()..n].copy_from_slice(tlv);
        self.unknown = RawBytes::from_slice(&buf[..n]);
        Ok(())
    }

    /// Parses the option bytes of a TCP header (after the 20 fixed bytes).
    ///
    /// A known kind with an impossible length is an error (RFC 9293 3.1: the
    /// segment is malformed); an unknown kind is kept verbatim. A malformed
    /// MPTCP option is an error too: callers that prefer to ignore it can use
    /// [`TcpOptions::parse_lenient`].
    pub fn parse(bytes: &[u8]) -> Result<TcpOptions, WireError> {
        Self::parse_inner(bytes, false)
    }

    /// Like [`parse`](Self::parse) but a malformed MPTCP option is skipped,
    /// the way a stack treats an option it cannot understand (RFC 8684 3.1:
    /// an invalid MPTCP option is ignored, and the segment still carries TCP).
    pub fn parse_lenient(bytes: &[u8]) -> Result<TcpOptions, WireError> {
        Self::parse_inner(bytes, true)
    }

    fn parse_inner(bytes: &[u8], lenient: bool) -> Result<TcpOptions, WireError> {
        if bytes.len() > MAX_OPTION_LEN {
            return Err(WireError::OptionsTooLong(bytes.len()));
        }
        let mut o = TcpOptions::new();
        let mut i = 0;
        while i < bytes.len() {
            let k = bytes[i];
            match k {
                kind::EOL => break,
                kind::NOP => {
                    i += 1;
                    continue;
                }
                _ => {}
            }
            let Some(&l) = bytes.get(i + 1) else {
                return Err(WireError::Truncated { need: i + 2, have: bytes.len() });
            };
            let l = l as usize;
            if l < 2 || i + l > bytes.len() {
                return Err(WireError::BadLength { kind: k, len: l as u8 });
            }
            let opt = &bytes[i..i + l];
            let bad = WireError::BadLength { kind: k, len: l as u8 };
            match k {
                kind::MSS => {
                    if l != 4 {
                        return Err(bad);
                    }
                    o.mss = Some(u16::from_be_bytes([opt[2], opt[3]]));
                }
                kind::WSCALE => {
                    if l != 3 {
                        return Err(bad);
                    }
                    o.wscale = Some(opt[2]);
                }
                kind::SACK_PERMITTED => {
                    if l != 2 {
                        return Err(bad);
                    }
                    o.sack_permitted = true;
                }
                kind::SACK => {
                    if !(l - 2).is_multiple_of(8) || l == 2 || (l - 2) / 8 > MAX_SACK_BLOCKS {
                        return Err(bad);
                    }
                    // A later SACK option replaces an earlier one; `set_sack`
                    // clears the unused slots so equal headers compare equal.
                    let n = (l - 2) / 8;
                    let mut blocks = [SackBlock::default(); MAX_SACK_BLOCKS];
                    for (b, block) in blocks.iter_mut().enumerate().take(n) {
                        let p = 2 + b * 8;
                        *block = SackBlock {
                            left: u32::from_be_bytes([opt[p], opt[p + 1], opt[p + 2], opt[p + 3]]),
                            right: u32::from_be_bytes([opt[p + 4], opt[p + 5], opt[p + 6], opt[p + 7]]),
                        };
                    }
                    o.set_sack(&blocks[..n]);
                }
                kind::TIMESTAMPS => {
                    if l != 10 {
                        return Err(bad);
                    }
                    o.timestamps = Some(Timestamps {
                        tsval: u32::from_be_bytes([opt[2], opt[3], opt[4], opt[5]]),
                        tsecr: u32::from_be_bytes([opt[6], opt[7], opt[8], opt[9]]),
                    });
                }
                kind::MPTCP => match MptcpOption::decode(opt) {
                    Ok(m) => o.push_mptcp(m)?,
                    Err(e) if !lenient => return Err(e),
                    Err(_) => {}
                },
                _ => o.push_unknown(opt)?,
            }
            i += l;
        }
        Ok(o)
    }

    /// Encoded length, padded to a multiple of 4.
    pub fn wire_len(&self) -> Result<usize, WireError> {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4;
        }
        if self.sack_permitted {
            n += 2;
        }
        if self.timestamps.is_some() {
            n += 10;
        }
        if self.wscale.is_some() {
            n += 3;
        }
        for m in self.mptcp() {
            n += m.wire_len()?;
        }
        if self.sack_len > 0 {
            n += 2 + 8 * self.sack_len as usize;
        }
        n += self.unknown().len();
        let padded = (n + 3) & !3;
        if padded > MAX_OPTION_LEN {
            return Err(WireError::OptionsTooLong(padded));
        }
        Ok(padded)
    }

    /// Writes the options into `buf` (NOP padded to 32 bits); returns the length.
    ///
    /// Layout follows Linux: MSS, SACK-permitted+timestamps, window scale,
    /// MPTCP, SACK, then unknown options.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let total = self.wire_len()?;
        if buf.len() < total {
            return Err(WireError::BufferTooSmall { need: total, have: buf.len() });
        }
        let b = &mut buf[..total];
        let mut at = 0;
        if let Some(mss) = self.mss {
            b[at..at + 4].copy_from_slice(&[kind::MSS, 4, (mss >> 8) as u8, mss as u8]);
            at += 4;
        }
        if self.sack_permitted {
            b[at..at + 2].copy_from_slice(&[kind::SACK_PERMITTED, 2]);
            at += 2;
        }
        if let Some(ts) = self.timestamps {
            b[at] = kind::TIMESTAMPS;
            b[at + 1] = 10;
            b[at + 2..at + 6].copy_from_slice(&ts.tsval.to_be_bytes());
            b[at + 6..at + 10].copy_from_slice(&ts.tsecr.to_be_bytes());
            at += 10;
        }
        if let Some(ws) = self.wscale {
            b[at..at + 3].copy_from_slice(&[kind::WSCALE, 3, ws]);
            at += 3;
        }
        for m in self.mptcp() {
            at += m.encode(&mut b[at..])?;
        }
        if self.sack_len > 0 {
            b[at] = kind::SACK;
            b[at + 1] = 2 + 8 * self.sack_len;
            at += 2;
            for s in self.sack() {
                b[at..at + 4].copy_from_slice(&s.left.to_be_bytes());
                b[at + 4..at + 8].copy_from_slice(&s.right.to_be_bytes());
                at += 8;
            }
        }
        let u = self.unknown();
        b[at..at + u.len()].copy_from_slice(u);
        at += u.len();
        b[at..].fill(kind::NOP);
        Ok(total)
    }
}
