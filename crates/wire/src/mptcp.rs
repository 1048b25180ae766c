//! MPTCP v1 option (TCP option kind 30) codec, RFC 8684 section 3.
//!
//! Every subtype is a typed value. Decoding works on the option's bytes
//! *including* the kind and length octets; encoding writes them back. A
//! decoded value re-encodes to the same bytes, and an encoded value decodes to
//! the same value. Nothing here allocates: variable parts (the id list of
//! REMOVE_ADDR, unknown subtypes) live in fixed inline buffers sized by the
//! 40-byte TCP option space.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::WireError;

/// TCP option kind assigned to Multipath TCP.
pub const KIND_MPTCP: u8 = 30;
/// The largest option that fits in a TCP header (60 - 20 bytes).
pub const MAX_OPTION_LEN: usize = 40;

/// MPTCP option subtypes (RFC 8684 section 8, "MPTCP Option Subtypes").
pub mod subtype {
    pub const MP_CAPABLE: u8 = 0x0;
    pub const MP_JOIN: u8 = 0x1;
    pub const DSS: u8 = 0x2;
    pub const ADD_ADDR: u8 = 0x3;
    pub const REMOVE_ADDR: u8 = 0x4;
    pub const MP_PRIO: u8 = 0x5;
    pub const MP_FAIL: u8 = 0x6;
    pub const MP_FASTCLOSE: u8 = 0x7;
    pub const MP_TCPRST: u8 = 0x8;
    pub const MP_EXPERIMENTAL: u8 = 0xf;
}

/// MP_CAPABLE flag bits (the octet after subtype/version).
pub mod capable_flags {
    /// A: checksum required.
    pub const A: u8 = 0x80;
    /// B: extensibility (must be 0 in v1).
    pub const B: u8 = 0x40;
    /// C: do not establish new subflows to the source address of this packet.
    pub const C: u8 = 0x20;
    /// H: HMAC-SHA256 is the crypto algorithm (the only one defined).
    pub const H: u8 = 0x01;
}

/// MP_TCPRST flag bits (low nibble of the subtype octet).
pub mod tcprst_flags {
    pub const U: u8 = 0x8;
    pub const V: u8 = 0x4;
    pub const W: u8 = 0x2;
    /// T: the error is transient, the subflow may be retried.
    pub const T: u8 = 0x1;
}

/// MP_TCPRST reason codes (RFC 8684 section 3.6).
pub mod tcprst_reason {
    pub const UNSPECIFIED: u8 = 0x00;
    pub const MPTCP_SPECIFIC: u8 = 0x01;
    pub const LACK_OF_RESOURCES: u8 = 0x02;
    pub const ADMIN_PROHIBITED: u8 = 0x03;
    pub const TOO_MUCH_OUTSTANDING: u8 = 0x04;
    pub const UNACCEPTABLE_PERFORMANCE: u8 = 0x05;
    pub const MIDDLEBOX_INTERFERENCE: u8 = 0x06;
}

/// MP_CAPABLE, all lengths: SYN (4), SYN/ACK (12), third ACK (20), first data
/// segment carrying both keys and the data-level length (22) plus checksum (24).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MpCapable {
    /// Protocol version; 1 for RFC 8684.
    pub version: u8,
    /// Flag octet; see [`capable_flags`].
    pub flags: u8,
    /// Key of the sender of this segment (SYN/ACK, ACK, data).
    pub sender_key: Option<u64>,
    /// Key of the receiver of this segment (ACK, data); needs `sender_key`.
    pub receiver_key: Option<u64>,
    /// Data-level length of the payload when MP_CAPABLE carries data (22/24).
    pub data_len: Option<u16>,
    /// DSS checksum of that data (24); needs `data_len`.
    pub checksum: Option<u16>,
}

impl MpCapable {
    pub fn checksum_required(&self) -> bool {
        self.flags & capable_flags::A != 0
    }
    pub fn hmac_sha256(&self) -> bool {
        self.flags & capable_flags::H != 0
    }
    pub fn no_new_subflows_to_source(&self) -> bool {
        self.flags & capable_flags::C != 0
    }
    fn len(&self) -> Result<usize, WireError> {
        Ok(match (self.sender_key, self.receiver_key, self.data_len, self.checksum) {
            (None, None, None, None) => 4,
            (Some(_), None, None, None) => 12,
            (Some(_), Some(_), None, None) => 20,
            (Some(_), Some(_), Some(_), None) => 22,
            (Some(_), Some(_), Some(_), Some(_)) => 24,
            _ => return Err(WireError::Inconsistent("MP_CAPABLE fields")),
        })
    }
}

/// MP_JOIN in its three handshake forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MpJoin {
    /// SYN (12): token of the peer's key and the initiator's nonce.
    Syn { backup: bool, addr_id: u8, token: u32, nonce: u32 },
    /// SYN/ACK (16): leftmost 64 bits of the responder's HMAC and its nonce.
    SynAck { backup: bool, addr_id: u8, hmac: u64, nonce: u32 },
    /// Third ACK (24): leftmost 160 bits of the initiator's HMAC.
    Ack { hmac: [u8; 20] },
}

/// DATA_ACK field of a DSS option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DataAck {
    /// The value carried; when `wide` is false only the low 32 bits exist.
    pub value: u64,
    /// 8 octets on the wire (flag `a`) instead of 4.
    pub wide: bool,
}

/// Mapping part of a DSS option: data sequence number to subflow sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DssMapping {
    /// Data sequence number; when `dsn_wide` is false only the low 32 bits.
    pub dsn: u64,
    /// 8-octet DSN on the wire (flag `m`).
    pub dsn_wide: bool,
    /// Subflow sequence number relative to the subflow's initial sequence.
    pub ssn: u32,
    /// Data-level length; 0 with a DSN of 0 is an infinite mapping.
    pub data_len: u16,
    /// DSS checksum, present when checksums were negotiated.
    pub checksum: Option<u16>,
}

impl DssMapping {
    /// RFC 8684 3.3.1: an infinite mapping (fallback) has data-level length 0.
    pub fn is_infinite(&self) -> bool {
        self.data_len == 0
    }
}

/// DSS: data ACK, mapping and DATA_FIN, in every flag combination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Dss {
    pub data_ack: Option<DataAck>,
    pub mapping: Option<DssMapping>,
    pub data_fin: bool,
}

mod dss_flags {
    pub const DATA_FIN: u8 = 0x10;
    pub const DSN_WIDE: u8 = 0x08;
    pub const MAPPING: u8 = 0x04;
    pub const ACK_WIDE: u8 = 0x02;
    pub const DATA_ACK: u8 = 0x01;
}

impl Dss {
    fn len(&self) -> usize {
        let mut n = 4;
        if let Some(a) = self.data_ack {
            n += if a.wide { 8 } else { 4 };
        }
        if let Some(m) = self.mapping {
            n += if m.dsn_wide { 8 } else { 4 } + 4 + 2;
            if m.checksum.is_some() {
                n += 2;
            }
        }
        n
    }
}

/// ADD_ADDR for IPv4 or IPv6, with or without port, echo or HMAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddAddr {
    /// E flag: this is the echo of an address the peer announced.
    pub echo: bool,
    pub addr_id: u8,
    pub addr: IpAddr,
    pub port: Option<u16>,
    /// Rightmost 64 bits of the HMAC; absent in echoes.
    pub hmac: Option<u64>,
}

/// Up to 37 address ids: the most REMOVE_ADDR can carry in 40 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddrIdList {
    len: u8,
    ids: [u8; MAX_OPTION_LEN - 3],
}

impl AddrIdList {
    pub const CAPACITY: usize = MAX_OPTION_LEN - 3;
    pub const fn new() -> Self {
        AddrIdList { len: 0, ids: [0; MAX_OPTION_LEN - 3] }
    }
    /// Builds a list; `None` when more than [`Self::CAPACITY`] ids are given.
    pub fn from_slice(ids: &[u8]) -> Option<Self> {
        if ids.len() > Self::CAPACITY {
            return None;
        }
        let mut l = Self::new();
        l.ids[..ids.len()].copy_from_slice(ids);
        l.len = ids.len() as u8;
        Some(l)
    }
    pub fn as_slice(&self) -> &[u8] {
        &self.ids[..self.len as usize]
    }
}

impl Default for AddrIdList {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for AddrIdList {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// An option body kept verbatim: unknown MPTCP subtypes and unknown TCP kinds.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RawBytes {
    len: u8,
    bytes: [u8; MAX_OPTION_LEN],
}

impl RawBytes {
    pub fn from_slice(b: &[u8]) -> Option<Self> {
        if b.len() > MAX_OPTION_LEN {
            return None;
        }
        let mut r = RawBytes { len: b.len() as u8, bytes: [0; MAX_OPTION_LEN] };
        r.bytes[..b.len()].copy_from_slice(b);
        Some(r)
    }
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl core::fmt::Debug for RawBytes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for b in self.as_slice() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// One MPTCP option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MptcpOption {
    MpCapable(MpCapable),
    MpJoin(MpJoin),
    Dss(Dss),
    AddAddr(AddAddr),
    RemoveAddr(AddrIdList),
    /// MP_PRIO: change the backup flag of the subflow it is sent on. The
    /// address id exists only in the 4-byte RFC 6824 (v0) form.
    MpPrio { backup: bool, addr_id: Option<u8> },
    /// MP_FAIL: the data sequence number where the checksum failed.
    MpFail { dsn: u64 },
    /// MP_FASTCLOSE: the receiver's key, proving the sender knows it.
    MpFastclose { receiver_key: u64 },
    /// MP_TCPRST: flags (see [`tcprst_flags`]) and reason code.
    MpTcpRst { flags: u8, reason: u8 },
    /// A subtype this codec does not model (or MP_EXPERIMENTAL): kept as is.
    /// `body` holds the bytes after kind, length and the subtype nibble
    /// octet; `low_nibble` is the rest of the subtype octet.
    Unknown { subtype: u8, low_nibble: u8, body: RawBytes },
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}
fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}
fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

impl MptcpOption {
    /// The subtype number on the wire.
    pub fn subtype(&self) -> u8 {
        match self {
            MptcpOption::MpCapable(_) => subtype::MP_CAPABLE,
            MptcpOption::MpJoin(_) => subtype::MP_JOIN,
            MptcpOption::Dss(_) => subtype::DSS,
            MptcpOption::AddAddr(_) => subtype::ADD_ADDR,
            MptcpOption::RemoveAddr(_) => subtype::REMOVE_ADDR,
            MptcpOption::MpPrio { .. } => subtype::MP_PRIO,
            MptcpOption::MpFail { .. } => subtype::MP_FAIL,
            MptcpOption::MpFastclose { .. } => subtype::MP_FASTCLOSE,
            MptcpOption::MpTcpRst { .. } => subtype::MP_TCPRST,
            MptcpOption::Unknown { subtype, .. } => *subtype,
        }
    }

    /// Name as RFC 8684 spells it.
    pub fn name(&self) -> &'static str {
        match self {
            MptcpOption::MpCapable(_) => "MP_CAPABLE",
            MptcpOption::MpJoin(_) => "MP_JOIN",
            MptcpOption::Dss(_) => "DSS",
            MptcpOption::AddAddr(_) => "ADD_ADDR",
            MptcpOption::RemoveAddr(_) => "REMOVE_ADDR",
            MptcpOption::MpPrio { .. } => "MP_PRIO",
            MptcpOption::MpFail { .. } => "MP_FAIL",
            MptcpOption::MpFastclose { .. } => "MP_FASTCLOSE",
            MptcpOption::MpTcpRst { .. } => "MP_TCPRST",
            MptcpOption::Unknown { .. } => "MPTCP_UNKNOWN",
        }
    }

    /// Encoded length in bytes, including kind and length octets.
    pub fn wire_len(&self) -> Result<usize, WireError> {
        Ok(match self {
            MptcpOption::MpCapable(c) => c.len()?,
            MptcpOption::MpJoin(MpJoin::Syn { .. }) => 12,
            MptcpOption::MpJoin(MpJoin::SynAck { .. }) => 16,
            MptcpOption::MpJoin(MpJoin::Ack { .. }) => 24,
            MptcpOption::Dss(d) => d.len(),
            MptcpOption::AddAddr(a) => {
                let base = if a.addr.is_ipv4() { 8 } else { 20 };
                base + if a.port.is_some() { 2 } else { 0 } + if a.hmac.is_some() { 8 } else { 0 }
            }
            MptcpOption::RemoveAddr(ids) => {
                if ids.as_slice().is_empty() {
                    return Err(WireError::Inconsistent("REMOVE_ADDR without ids"));
                }
                3 + ids.as_slice().len()
            }
            MptcpOption::MpPrio { addr_id, .. } => 3 + addr_id.is_some() as usize,
            MptcpOption::MpFail { .. } | MptcpOption::MpFastclose { .. } => 12,
            MptcpOption::MpTcpRst { .. } => 4,
            MptcpOption::Unknown { body, .. } => {
                let n = 3 + body.as_slice().len();
                if n > MAX_OPTION_LEN {
                    return Err(WireError::Inconsistent("unknown MPTCP option too long"));
                }
                n
            }
        })
    }

    /// Decodes one MPTCP option. `opt` starts at the kind octet and is exactly
    /// the option's length long (the TCP option walker guarantees that).
    pub fn decode(opt: &[u8]) -> Result<MptcpOption, WireError> {
        let len = opt.len();
        if len < 3 || opt[0] != KIND_MPTCP || opt[1] as usize != len {
            return Err(WireError::BadLength { kind: KIND_MPTCP, len: opt.get(1).copied().unwrap_or(0) });
        }
        let st = opt[2] >> 4;
        let low = opt[2] & 0x0f;
        let bad = || WireError::BadLength { kind: KIND_MPTCP, len: len as u8 };
        Ok(match st {
            subtype::MP_CAPABLE => {
                if len < 4 {
                    return Err(bad());
                }
                let mut c = MpCapable {
                    version: low,
                    flags: opt[3],
                    sender_key: None,
                    receiver_key: None,
                    data_len: None,
                    checksum: None,
                };
                match len {
                    4 => {}
                    12 => c.sender_key = Some(be64(&opt[4..])),
                    20 | 22 | 24 => {
                        c.sender_key = Some(be64(&opt[4..]));
                        c.receiver_key = Some(be64(&opt[12..]));
                        if len >= 22 {
                            c.data_len = Some(be16(&opt[20..]));
                        }
                        if len == 24 {
                            c.checksum = Some(be16(&opt[22..]));
                        }
                    }
                    _ => return Err(bad()),
                }
                MptcpOption::MpCapable(c)
            }
            subtype::MP_JOIN => {
                let backup = low & 0x1 != 0;
                match len {
                    12 => MptcpOption::MpJoin(MpJoin::Syn {
                        backup,
                        addr_id: opt[3],
                        token: be32(&opt[4..]),
                        nonce: be32(&opt[8..]),
                    }),
                    16 => MptcpOption::MpJoin(MpJoin::SynAck {
                        backup,
                        addr_id: opt[3],
                        hmac: be64(&opt[4..]),
                        nonce: be32(&opt[12..]),
                    }),
                    24 => {
                        let mut hmac = [0u8; 20];
                        hmac.copy_from_slice(&opt[4..24]);
                        MptcpOption::MpJoin(MpJoin::Ack { hmac })
                    }
                    _ => return Err(bad()),
                }
            }
            subtype::DSS => {
                if len < 4 {
                    return Err(bad());
                }
                let f = opt[3];
                let mut at = 4;
                let mut dss = Dss { data_fin: f & dss_flags::DATA_FIN != 0, ..Dss::default() };
                if f & dss_flags::DATA_ACK != 0 {
                    let wide = f & dss_flags::ACK_WIDE != 0;
                    let n = if wide { 8 } else { 4 };
                    if len < at + n {
                        return Err(bad());
                    }
                    let value = if wide { be64(&opt[at..]) } else { be32(&opt[at..]) as u64 };
                    dss.data_ack = Some(DataAck { value, wide });
                    at += n;
                }
                if f & dss_flags::MAPPING != 0 {
                    let dsn_wide = f & dss_flags::DSN_WIDE != 0;
                    let n = if dsn_wide { 8 } else { 4 };
                    if len < at + n + 6 {
                        return Err(bad());
                    }
                    let dsn = if dsn_wide { be64(&opt[at..]) } else { be32(&opt[at..]) as u64 };
                    at += n;
                    let ssn = be32(&opt[at..]);
                    let data_len = be16(&opt[at + 4..]);
                    at += 6;
                    let checksum = match len - at {
                        0 => None,
                        2 => {
                            at += 2;
                            Some(be16(&opt[at - 2..]))
                        }
                        _ => return Err(bad()),
                    };
                    dss.mapping = Some(DssMapping { dsn, dsn_wide, ssn, data_len, checksum });
                }
                if at != len {
                    return Err(bad());
                }
                MptcpOption::Dss(dss)
            }
            subtype::ADD_ADDR => {
                let echo = low & 0x1 != 0;
                // v1 dropped the IPVer field: the family follows from the length.
                let (v6, port, hmac) = match len {
                    8 => (false, false, false),
                    10 => (false, true, false),
                    16 => (false, false, true),
                    18 => (false, true, true),
                    20 => (true, false, false),
                    22 => (true, true, false),
                    28 => (true, false, true),
                    30 => (true, true, true),
                    _ => return Err(bad()),
                };
                let mut at = 4;
                let addr = if v6 {
                    let mut a = [0u8; 16];
                    a.copy_from_slice(&opt[4..20]);
                    at += 16;
                    IpAddr::V6(Ipv6Addr::from(a))
                } else {
                    at += 4;
                    IpAddr::V4(Ipv4Addr::new(opt[4], opt[5], opt[6], opt[7]))
                };
                let port = if port {
                    at += 2;
                    Some(be16(&opt[at - 2..]))
                } else {
                    None
                };
                let hmac = if hmac { Some(be64(&opt[at..])) } else { None };
                MptcpOption::AddAddr(AddAddr { echo, addr_id: opt[3], addr, port, hmac })
            }
            subtype::REMOVE_ADDR => {
                if len < 4 {
                    return Err(bad());
                }
                // Length is bounded by the caller's 40-byte window.
                MptcpOption::RemoveAddr(AddrIdList::from_slice(&opt[3..]).ok_or_else(bad)?)
            }
            subtype::MP_PRIO => match len {
                3 => MptcpOption::MpPrio { backup: low & 1 != 0, addr_id: None },
                4 => MptcpOption::MpPrio { backup: low & 1 != 0, addr_id: Some(opt[3]) },
                _ => return Err(bad()),
            },
            subtype::MP_FAIL => {
                if len != 12 {
                    return Err(bad());
                }
                MptcpOption::MpFail { dsn: be64(&opt[4..]) }
            }
            subtype::MP_FASTCLOSE => {
                if len != 12 {
                    return Err(bad());
                }
                MptcpOption::MpFastclose { receiver_key: be64(&opt[4..]) }
            }
            subtype::MP_TCPRST => {
                if len != 4 {
                    return Err(bad());
                }
                MptcpOption::MpTcpRst { flags: low, reason: opt[3] }
            }
            _ => MptcpOption::Unknown {
                subtype: st,
                low_nibble: low,
                body: RawBytes::from_slice(&opt[3..]).ok_or_else(bad)?,
            },
        })
    }

    /// Encodes into `buf`, returning the number of bytes written.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let len = self.wire_len()?;
        if buf.len() < len {
            return Err(WireError::BufferTooSmall { need: len, have: buf.len() });
        }
        let b = &mut buf[..len];
        b.fill(0);
        b[0] = KIND_MPTCP;
        b[1] = len as u8;
        let st = self.subtype() << 4;
        match self {
            MptcpOption::MpCapable(c) => {
                if c.version > 0xf {
                    return Err(WireError::Inconsistent("MP_CAPABLE version > 15"));
                }
                b[2] = st | c.version;
                b[3] = c.flags;
                if let Some(k) = c.sender_key {
                    b[4..12].copy_from_slice(&k.to_be_bytes());
                }
                if let Some(k) = c.receiver_key {
                    b[12..20].copy_from_slice(&k.to_be_bytes());
                }
                if let Some(l) = c.data_len {
                    b[20..22].copy_from_slice(&l.to_be_bytes());
                }
                if let Some(s) = c.checksum {
                    b[22..24].copy_from_slice(&s.to_be_bytes());
                }
            }
            MptcpOption::MpJoin(j) => match *j {
                MpJoin::Syn { backup, addr_id, token, nonce } => {
                    b[2] = st | backup as u8;
                    b[3] = addr_id;
                    b[4..8].copy_from_slice(&token.to_be_bytes());
                    b[8..12].copy_from_slice(&nonce.to_be_bytes());
                }
                MpJoin::SynAck { backup, addr_id, hmac, nonce } => {
                    b[2] = st | backup as u8;
                    b[3] = addr_id;
                    b[4..12].copy_from_slice(&hmac.to_be_bytes());
                    b[12..16].copy_from_slice(&nonce.to_be_bytes());
                }
                MpJoin::Ack { hmac } => {
                    b[2] = st;
                    b[4..24].copy_from_slice(&hmac);
                }
            },
            MptcpOption::Dss(d) => {
                b[2] = st;
                let mut f = 0;
                let mut at = 4;
                if d.data_fin {
                    f |= dss_flags::DATA_FIN;
                }
                if let Some(a) = d.data_ack {
                    f |= dss_flags::DATA_ACK;
                    if a.wide {
                        f |= dss_flags::ACK_WIDE;
                        b[at..at + 8].copy_from_slice(&a.value.to_be_bytes());
                        at += 8;
                    } else {
                        b[at..at + 4].copy_from_slice(&(a.value as u32).to_be_bytes());
                        at += 4;
                    }
                }
                if let Some(m) = d.mapping {
                    f |= dss_flags::MAPPING;
                    if m.dsn_wide {
                        f |= dss_flags::DSN_WIDE;
                        b[at..at + 8].copy_from_slice(&m.dsn.to_be_bytes());
                        at += 8;
                    } else {
                        b[at..at + 4].copy_from_slice(&(m.dsn as u32).to_be_bytes());
                        at += 4;
                    }
                    b[at..at + 4].copy_from_slice(&m.ssn.to_be_bytes());
                    b[at + 4..at + 6].copy_from_slice(&m.data_len.to_be_bytes());
                    at += 6;
                    if let Some(c) = m.checksum {
                        b[at..at + 2].copy_from_slice(&c.to_be_bytes());
                    }
                }
                b[3] = f;
            }
            MptcpOption::AddAddr(a) => {
                b[2] = st | a.echo as u8;
                b[3] = a.addr_id;
                let mut at = 4;
                match a.addr {
                    IpAddr::V4(v4) => {
                        b[4..8].copy_from_slice(&v4.octets());
                        at += 4;
                    }
                    IpAddr::V6(v6) => {
                        b[4..20].copy_from_slice(&v6.octets());
                        at += 16;
                    }
                }
                if let Some(p) = a.port {
                    b[at..at + 2].copy_from_slice(&p.to_be_bytes());
                    at += 2;
                }
                if let Some(h) = a.hmac {
                    b[at..at + 8].copy_from_slice(&h.to_be_bytes());
                }
            }
            MptcpOption::RemoveAddr(ids) => {
                b[2] = st;
                b[3..].copy_from_slice(ids.as_slice());
            }
            MptcpOption::MpPrio { backup, addr_id } => {
                b[2] = st | *backup as u8;
                if let Some(id) = addr_id {
                    b[3] = *id;
                }
            }
            MptcpOption::MpFail { dsn } => {
                b[2] = st;
                b[4..12].copy_from_slice(&dsn.to_be_bytes());
            }
            MptcpOption::MpFastclose { receiver_key } => {
                b[2] = st;
                b[4..12].copy_from_slice(&receiver_key.to_be_bytes());
            }
            MptcpOption::MpTcpRst { flags, reason } => {
                b[2] = st | (flags & 0xf);
                b[3] = *reason;
            }
            MptcpOption::Unknown { subtype, low_nibble, body } => {
                b[2] = (subtype << 4) | (low_nibble & 0xf);
                b[3..].copy_from_slice(body.as_slice());
            }
        }
        Ok(len)
    }
}
