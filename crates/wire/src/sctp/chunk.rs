//! SCTP chunks (RFC 9260 3.3; NR-SACK from draft-natarajan-tsvwg-sctp-nrsack
//! as usrsctp implements it). Each chunk is a type, a flags octet, a 16-bit
//! length counting the 4-byte header and the value but not the padding to a
//! 4-byte boundary, and the value.

use super::param::{ErrorCause, InitParam, UnknownAction};
use super::{be16, be32, pad4, walk_tlvs, SctpError};

/// Chunk type numbers.
pub mod ctype {
    pub const DATA: u8 = 0;
    pub const INIT: u8 = 1;
    pub const INIT_ACK: u8 = 2;
    pub const SACK: u8 = 3;
    pub const HEARTBEAT: u8 = 4;
    pub const HEARTBEAT_ACK: u8 = 5;
    pub const ABORT: u8 = 6;
    pub const SHUTDOWN: u8 = 7;
    pub const SHUTDOWN_ACK: u8 = 8;
    pub const ERROR: u8 = 9;
    pub const COOKIE_ECHO: u8 = 10;
    pub const COOKIE_ACK: u8 = 11;
    pub const SHUTDOWN_COMPLETE: u8 = 14;
    /// Non-renegable SACK.
    pub const NR_SACK: u8 = 0x10;
}

/// DATA chunk flags (RFC 9260 3.3.1).
pub mod data_flags {
    /// I: the receiver should SACK this chunk at once.
    pub const I: u8 = 0x08;
    /// U: unordered; the SSN is meaningless.
    pub const U: u8 = 0x04;
    /// B: first fragment of a user message.
    pub const B: u8 = 0x02;
    /// E: last fragment of a user message.
    pub const E: u8 = 0x01;
}

/// SACK / NR-SACK flags.
pub mod sack_flags {
    /// CMT Delayed Ack (DAC): set when the SACK acknowledges two (or more)
    /// DATA packets, clear when it acknowledges one. usrsctp's
    /// `SCTP_SACK_CMT_DAC`.
    pub const DAC: u8 = 0x80;
}

/// The T bit of ABORT and SHUTDOWN COMPLETE: the verification tag is the
/// sender's own ("reflected"), not the receiver's.
pub const T_BIT: u8 = 0x01;

/// DATA chunk header length (type, flags, length, TSN, stream, SSN, PPID).
pub const DATA_HEADER_LEN: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DataChunk {
    /// See [`data_flags`]; the upper four bits are kept as received.
    pub flags: u8,
    pub tsn: u32,
    pub stream_id: u16,
    pub ssn: u16,
    pub ppid: u32,
    pub payload: Vec<u8>,
}

impl DataChunk {
    pub fn unordered(&self) -> bool {
        self.flags & data_flags::U != 0
    }
    pub fn beginning(&self) -> bool {
        self.flags & data_flags::B != 0
    }
    pub fn ending(&self) -> bool {
        self.flags & data_flags::E != 0
    }
    pub fn immediate(&self) -> bool {
        self.flags & data_flags::I != 0
    }
}

/// INIT and INIT ACK share their layout.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InitChunk {
    /// The tag the peer must put in every packet it sends to the sender.
    pub initiate_tag: u32,
    pub a_rwnd: u32,
    pub outbound_streams: u16,
    pub inbound_streams: u16,
    pub initial_tsn: u32,
    pub params: Vec<InitParam>,
}

/// A gap ack block: TSNs `cum + start ..= cum + end` were received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GapBlock {
    pub start: u16,
    pub end: u16,
}

/// SACK, and NR-SACK when `nr_gaps` is `Some`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct SackChunk {
    /// See [`sack_flags`]; other bits kept as received.
    pub flags: u8,
    pub cum_tsn_ack: u32,
    pub a_rwnd: u32,
    pub gaps: Vec<GapBlock>,
    /// Non-renegable gap blocks: present iff this is an NR-SACK (0x10).
    pub nr_gaps: Option<Vec<GapBlock>>,
    pub dup_tsns: Vec<u32>,
}

/// One chunk.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Chunk {
    Data(DataChunk),
    Init(InitChunk),
    InitAck(InitChunk),
    /// SACK or NR-SACK (see [`SackChunk::nr_gaps`]).
    Sack(SackChunk),
    /// The Heartbeat Info parameter's value: opaque to the receiver.
    Heartbeat { info: Vec<u8> },
    HeartbeatAck { info: Vec<u8> },
    Abort { t_bit: bool, causes: Vec<ErrorCause> },
    Shutdown { cum_tsn_ack: u32 },
    ShutdownAck,
    ShutdownComplete { t_bit: bool },
    Error { causes: Vec<ErrorCause> },
    CookieEcho { cookie: Vec<u8> },
    CookieAck,
    /// A chunk type this codec does not model, kept raw. The upper two bits
    /// of the type say what a receiver that does not know it must do
    /// ([`Chunk::unknown_action`]).
    Unknown { chunk_type: u8, flags: u8, value: Vec<u8> },
}

/// Parameter type of the Heartbeat Info TLV inside HEARTBEAT (ACK).
const HEARTBEAT_INFO: u16 = 1;

fn bad_chunk(t: u8, len: usize) -> SctpError {
    SctpError::BadChunkLength { chunk_type: t, len: len.min(u16::MAX as usize) as u16 }
}

fn decode_gaps(b: &[u8], n: usize) -> Vec<GapBlock> {
    (0..n).map(|i| GapBlock { start: be16(b, 4 * i), end: be16(b, 4 * i + 2) }).collect()
}

impl Chunk {
    pub fn chunk_type(&self) -> u8 {
        match self {
            Chunk::Data(_) => ctype::DATA,
            Chunk::Init(_) => ctype::INIT,
            Chunk::InitAck(_) => ctype::INIT_ACK,
            Chunk::Sack(s) if s.nr_gaps.is_some() => ctype::NR_SACK,
            Chunk::Sack(_) => ctype::SACK,
            Chunk::Heartbeat { .. } => ctype::HEARTBEAT,
            Chunk::HeartbeatAck { .. } => ctype::HEARTBEAT_ACK,
            Chunk::Abort { .. } => ctype::ABORT,
            Chunk::Shutdown { .. } => ctype::SHUTDOWN,
            Chunk::ShutdownAck => ctype::SHUTDOWN_ACK,
            Chunk::ShutdownComplete { .. } => ctype::SHUTDOWN_COMPLETE,
            Chunk::Error { .. } => ctype::ERROR,
            Chunk::CookieEcho { .. } => ctype::COOKIE_ECHO,
            Chunk::CookieAck => ctype::COOKIE_ACK,
            Chunk::Unknown { chunk_type, .. } => *chunk_type,
        }
    }

    /// Whether the typed form exists for chunk type `t`.
    pub fn is_known_type(t: u8) -> bool {
        matches!(t, 0..=11 | 14 | 0x10)
    }

    /// For an unknown chunk: the action its type's upper two bits code
    /// (RFC 9260 3.2: 00 stop and discard the packet, 01 also report, 10
    /// skip, 11 skip and report). `None` for a modelled chunk.
    pub fn unknown_action(&self) -> Option<UnknownAction> {
        match self {
            Chunk::Unknown { chunk_type, .. } => Some(UnknownAction::from_top_bits(*chunk_type)),
            _ => None,
        }
    }

    /// Decodes one chunk from its type, flags and value (the bytes after the
    /// 4-byte header, up to the chunk length).
    pub fn decode(t: u8, flags: u8, v: &[u8]) -> Result<Chunk, SctpError> {
        let len = v.len() + 4;
        let at_least = |n: usize| if v.len() >= n { Ok(()) } else { Err(bad_chunk(t, len)) };
        let exact = |n: usize| if v.len() == n { Ok(()) } else { Err(bad_chunk(t, len)) };
        Ok(match t {
            ctype::DATA => {
                at_least(DATA_HEADER_LEN - 4)?;
                Chunk::Data(DataChunk {
                    flags,
                    tsn: be32(v, 0),
                    stream_id: be16(v, 4),
                    ssn: be16(v, 6),
                    ppid: be32(v, 8),
                    payload: v[12..].to_vec(),
                })
            }
            ctype::INIT | ctype::INIT_ACK => {
                at_least(16)?;
                let c = InitChunk {
                    initiate_tag: be32(v, 0),
                    a_rwnd: be32(v, 4),
                    outbound_streams: be16(v, 8),
                    inbound_streams: be16(v, 10),
                    initial_tsn: be32(v, 12),
                    params: InitParam::decode_list(&v[16..])?,
                };
                if t == ctype::INIT { Chunk::Init(c) } else { Chunk::InitAck(c) }
            }
            ctype::SACK => {
                at_least(12)?;
                let (ng, nd) = (be16(v, 8) as usize, be16(v, 10) as usize);
                exact(12 + 4 * ng + 4 * nd)?;
                Chunk::Sack(SackChunk {
                    flags,
                    cum_tsn_ack: be32(v, 0),
                    a_rwnd: be32(v, 4),
                    gaps: decode_gaps(&v[12..], ng),
                    nr_gaps: None,
                    dup_tsns: (0..nd).map(|i| be32(v, 12 + 4 * ng + 4 * i)).collect(),
                })
            }
            ctype::NR_SACK => {
                // cum, a_rwnd, #gaps, #nr-gaps, #dups, reserved.
                at_least(16)?;
                let (ng, nn, nd) = (be16(v, 8) as usize, be16(v, 10) as usize, be16(v, 12) as usize);
                exact(16 + 4 * (ng + nn + nd))?;
                let dups_at = 16 + 4 * (ng + nn);
                Chunk::Sack(SackChunk {
                    flags,
                    cum_tsn_ack: be32(v, 0),
                    a_rwnd: be32(v, 4),
                    gaps: decode_gaps(&v[16..], ng),
                    nr_gaps: Some(decode_gaps(&v[16 + 4 * ng..], nn)),
                    dup_tsns: (0..nd).map(|i| be32(v, dups_at + 4 * i)).collect(),
                })
            }
            ctype::HEARTBEAT | ctype::HEARTBEAT_ACK => {
                let mut info = None;
                walk_tlvs(
                    v,
                    |p, l| SctpError::BadParamLength { param_type: p, len: l },
                    |p, val| {
                        // Exactly one Heartbeat Info parameter (RFC 9260 3.3.5).
                        if p != HEARTBEAT_INFO || info.is_some() {
                            return Err(bad_chunk(t, len));
                        }
                        info = Some(val.to_vec());
                        Ok(())
                    },
                )?;
                let info = info.ok_or(bad_chunk(t, len))?;
                if t == ctype::HEARTBEAT { Chunk::Heartbeat { info } } else { Chunk::HeartbeatAck { info } }
            }
            ctype::ABORT => Chunk::Abort { t_bit: flags & T_BIT != 0, causes: ErrorCause::decode_list(v)? },
            ctype::SHUTDOWN => {
                exact(4)?;
                Chunk::Shutdown { cum_tsn_ack: be32(v, 0) }
            }
            ctype::SHUTDOWN_ACK => {
                exact(0)?;
                Chunk::ShutdownAck
            }
            ctype::SHUTDOWN_COMPLETE => {
                exact(0)?;
                Chunk::ShutdownComplete { t_bit: flags & T_BIT != 0 }
            }
            ctype::ERROR => Chunk::Error { causes: ErrorCause::decode_list(v)? },
            ctype::COOKIE_ECHO => Chunk::CookieEcho { cookie: v.to_vec() },
            ctype::COOKIE_ACK => {
                exact(0)?;
                Chunk::CookieAck
            }
            _ => Chunk::Unknown { chunk_type: t, flags, value: v.to_vec() },
        })
    }

    /// Appends the chunk (header, value, padding to 4 bytes).
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), SctpError> {
        let start = out.len();
        let mut flags = 0u8;
        out.extend_from_slice(&[self.chunk_type(), 0, 0, 0]);
        // Padding of the last TLV inside the chunk: not counted in its length.
        let mut last_pad = 0;
        match self {
            Chunk::Data(d) => {
                flags = d.flags;
                out.extend_from_slice(&d.tsn.to_be_bytes());
                out.extend_from_slice(&d.stream_id.to_be_bytes());
                out.extend_from_slice(&d.ssn.to_be_bytes());
                out.extend_from_slice(&d.ppid.to_be_bytes());
                out.extend_from_slice(&d.payload);
            }
            Chunk::Init(c) | Chunk::InitAck(c) => {
                out.extend_from_slice(&c.initiate_tag.to_be_bytes());
                out.extend_from_slice(&c.a_rwnd.to_be_bytes());
                out.extend_from_slice(&c.outbound_streams.to_be_bytes());
                out.extend_from_slice(&c.inbound_streams.to_be_bytes());
                out.extend_from_slice(&c.initial_tsn.to_be_bytes());
                for p in &c.params {
                    last_pad = p.encode(out)?;
                }
            }
            Chunk::Sack(s) => {
                flags = s.flags;
                let count = |n: usize| u16::try_from(n).map_err(|_| SctpError::TooLong("SACK block count"));
                out.extend_from_slice(&s.cum_tsn_ack.to_be_bytes());
                out.extend_from_slice(&s.a_rwnd.to_be_bytes());
                out.extend_from_slice(&count(s.gaps.len())?.to_be_bytes());
                if let Some(nr) = &s.nr_gaps {
                    out.extend_from_slice(&count(nr.len())?.to_be_bytes());
                    out.extend_from_slice(&count(s.dup_tsns.len())?.to_be_bytes());
                    out.extend_from_slice(&[0, 0]);
                } else {
                    out.extend_from_slice(&count(s.dup_tsns.len())?.to_be_bytes());
                }
                for g in s.gaps.iter().chain(s.nr_gaps.iter().flatten()) {
                    out.extend_from_slice(&g.start.to_be_bytes());
                    out.extend_from_slice(&g.end.to_be_bytes());
                }
                for d in &s.dup_tsns {
                    out.extend_from_slice(&d.to_be_bytes());
                }
            }
            Chunk::Heartbeat { info } | Chunk::HeartbeatAck { info } => {
                last_pad = super::put_tlv(out, HEARTBEAT_INFO, info, "heartbeat info")?;
            }
            Chunk::Abort { t_bit, causes } => {
                flags = if *t_bit { T_BIT } else { 0 };
                for c in causes {
                    last_pad = c.encode(out)?;
                }
            }
            Chunk::Error { causes } => {
                for c in causes {
                    last_pad = c.encode(out)?;
                }
            }
            Chunk::Shutdown { cum_tsn_ack } => out.extend_from_slice(&cum_tsn_ack.to_be_bytes()),
            Chunk::ShutdownComplete { t_bit } => flags = if *t_bit { T_BIT } else { 0 },
            Chunk::ShutdownAck | Chunk::CookieAck => {}
            Chunk::CookieEcho { cookie } => out.extend_from_slice(cookie),
            Chunk::Unknown { flags: f, value, .. } => {
                flags = *f;
                out.extend_from_slice(value);
            }
        }
        let len = out.len() - start - last_pad;
        if len > u16::MAX as usize {
            out.truncate(start);
            return Err(SctpError::TooLong("chunk"));
        }
        out[start + 1] = flags;
        out[start + 2..start + 4].copy_from_slice(&(len as u16).to_be_bytes());
        out.resize(start + pad4(out.len() - start), 0);
        Ok(())
    }

    /// Encoded size including padding.
    pub fn wire_len(&self) -> usize {
        if let Chunk::Data(d) = self {
            return DATA_HEADER_LEN + pad4(d.payload.len());
        }
        let mut v = Vec::new();
        match self.encode(&mut v) {
            Ok(()) => v.len(),
            Err(_) => usize::MAX,
        }
    }
}
