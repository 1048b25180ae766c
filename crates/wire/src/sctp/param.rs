//! The two TLV families inside chunks: INIT / INIT ACK parameters
//! (RFC 9260 3.3.2, 3.3.3; RFC 5061 4.2.7 for Supported Extensions) and the
//! error causes of ERROR and ABORT (RFC 9260 3.3.10).

use core::net::{Ipv4Addr, Ipv6Addr};

use super::{be16, be32, put_tlv, walk_tlvs, SctpError};

/// Parameter type numbers.
pub mod ptype {
    pub const IPV4: u16 = 5;
    pub const IPV6: u16 = 6;
    pub const STATE_COOKIE: u16 = 7;
    pub const UNRECOGNIZED: u16 = 8;
    pub const COOKIE_PRESERVATIVE: u16 = 9;
    pub const SUPPORTED_ADDRESS_TYPES: u16 = 12;
    /// RFC 5061: the chunk types beyond RFC 9260 the sender understands.
    pub const SUPPORTED_EXTENSIONS: u16 = 0x8008;
}

/// What a receiver does with a parameter it does not recognise: the upper
/// two bits of the type (RFC 9260 3.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnknownAction {
    /// 00: stop processing this chunk (and, for INIT, discard it).
    Stop,
    /// 01: stop, and report it in an Unrecognized Parameter.
    StopAndReport,
    /// 10: skip it and go on.
    Skip,
    /// 11: skip it, go on, and report it.
    SkipAndReport,
}

impl UnknownAction {
    /// The action coded in the two most significant bits of `bits`' top byte.
    pub fn from_top_bits(top: u8) -> Self {
        match top >> 6 {
            0 => UnknownAction::Stop,
            1 => UnknownAction::StopAndReport,
            2 => UnknownAction::Skip,
            _ => UnknownAction::SkipAndReport,
        }
    }
    pub fn reports(self) -> bool {
        matches!(self, UnknownAction::StopAndReport | UnknownAction::SkipAndReport)
    }
    pub fn stops(self) -> bool {
        matches!(self, UnknownAction::Stop | UnknownAction::StopAndReport)
    }
}

/// One INIT / INIT ACK parameter.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum InitParam {
    Ipv4(Ipv4Addr),
    Ipv6(Ipv6Addr),
    /// Opaque to the peer; only its creator reads it (see [`super::cookie`]).
    StateCookie(Vec<u8>),
    /// In INIT ACK: a parameter of the INIT the responder did not recognise,
    /// kept as the whole TLV (type, length, value) it saw.
    UnrecognizedParameter(Vec<u8>),
    /// Milliseconds of extra cookie lifetime the initiator asks for.
    CookiePreservative(u32),
    /// Address families (parameter types 5, 6, 11) the sender can use.
    SupportedAddressTypes(Vec<u16>),
    /// Chunk types beyond the base protocol the sender understands; NR-SACK
    /// (0x10) is negotiated here.
    SupportedExtensions(Vec<u8>),
    /// Any other parameter, kept raw; [`InitParam::action`] says what to do.
    Unknown { param_type: u16, value: Vec<u8> },
}

fn bad_param(t: u16, l: u16) -> SctpError {
    SctpError::BadParamLength { param_type: t, len: l }
}

impl InitParam {
    pub fn param_type(&self) -> u16 {
        match self {
            InitParam::Ipv4(_) => ptype::IPV4,
            InitParam::Ipv6(_) => ptype::IPV6,
            InitParam::StateCookie(_) => ptype::STATE_COOKIE,
            InitParam::UnrecognizedParameter(_) => ptype::UNRECOGNIZED,
            InitParam::CookiePreservative(_) => ptype::COOKIE_PRESERVATIVE,
            InitParam::SupportedAddressTypes(_) => ptype::SUPPORTED_ADDRESS_TYPES,
            InitParam::SupportedExtensions(_) => ptype::SUPPORTED_EXTENSIONS,
            InitParam::Unknown { param_type, .. } => *param_type,
        }
    }

    /// What to do with this parameter when it is not understood.
    pub fn action(&self) -> UnknownAction {
        UnknownAction::from_top_bits((self.param_type() >> 8) as u8)
    }

    /// Whether the typed form exists for `t` (an `Unknown` with such a type
    /// would decode as the typed form).
    pub fn is_known_type(t: u16) -> bool {
        matches!(
            t,
            ptype::IPV4
                | ptype::IPV6
                | ptype::STATE_COOKIE
                | ptype::UNRECOGNIZED
                | ptype::COOKIE_PRESERVATIVE
                | ptype::SUPPORTED_ADDRESS_TYPES
                | ptype::SUPPORTED_EXTENSIONS
        )
    }

    fn decode(t: u16, v: &[u8]) -> Result<Self, SctpError> {
        let exact = |n: usize| if v.len() == n { Ok(()) } else { Err(bad_param(t, (v.len() + 4) as u16)) };
        Ok(match t {
            ptype::IPV4 => {
                exact(4)?;
                InitParam::Ipv4(Ipv4Addr::new(v[0], v[1], v[2], v[3]))
            }
            ptype::IPV6 => {
                exact(16)?;
                let mut a = [0u8; 16];
                a.copy_from_slice(v);
                InitParam::Ipv6(Ipv6Addr::from(a))
            }
            ptype::STATE_COOKIE => InitParam::StateCookie(v.to_vec()),
            ptype::UNRECOGNIZED => InitParam::UnrecognizedParameter(v.to_vec()),
            ptype::COOKIE_PRESERVATIVE => {
                exact(4)?;
                InitParam::CookiePreservative(be32(v, 0))
            }
            ptype::SUPPORTED_ADDRESS_TYPES => {
                if !v.len().is_multiple_of(2) {
                    return Err(bad_param(t, (v.len() + 4) as u16));
                }
                InitParam::SupportedAddressTypes(v.chunks_exact(2).map(|c| be16(c, 0)).collect())
            }
            ptype::SUPPORTED_EXTENSIONS => InitParam::SupportedExtensions(v.to_vec()),
            _ => InitParam::Unknown { param_type: t, value: v.to_vec() },
        })
    }

    /// Appends the parameter with its padding; returns the padding length.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<usize, SctpError> {
        let t = self.param_type();
        match self {
            InitParam::Ipv4(a) => put_tlv(out, t, &a.octets(), "IPv4 parameter"),
            InitParam::Ipv6(a) => put_tlv(out, t, &a.octets(), "IPv6 parameter"),
            InitParam::StateCookie(v)
            | InitParam::UnrecognizedParameter(v)
            | InitParam::SupportedExtensions(v)
            | InitParam::Unknown { value: v, .. } => put_tlv(out, t, v, "parameter"),
            InitParam::CookiePreservative(ms) => put_tlv(out, t, &ms.to_be_bytes(), "cookie preservative"),
            InitParam::SupportedAddressTypes(ts) => {
                let v: Vec<u8> = ts.iter().flat_map(|x| x.to_be_bytes()).collect();
                put_tlv(out, t, &v, "supported address types")
            }
        }
    }

    /// Decodes a parameter list (the tail of an INIT / INIT ACK).
    pub fn decode_list(b: &[u8]) -> Result<Vec<InitParam>, SctpError> {
        let mut out = Vec::new();
        walk_tlvs(b, bad_param, |t, v| {
            out.push(InitParam::decode(t, v)?);
            Ok(())
        })?;
        Ok(out)
    }
}

/// Error cause codes (RFC 9260 3.3.10).
pub mod cause {
    pub const INVALID_STREAM_ID: u16 = 1;
    pub const MISSING_MANDATORY_PARAMETER: u16 = 2;
    pub const STALE_COOKIE: u16 = 3;
    pub const OUT_OF_RESOURCE: u16 = 4;
    pub const UNRECOGNIZED_CHUNK_TYPE: u16 = 6;
    pub const UNRECOGNIZED_PARAMETERS: u16 = 8;
    pub const NO_USER_DATA: u16 = 9;
    pub const USER_INITIATED_ABORT: u16 = 12;
    pub const PROTOCOL_VIOLATION: u16 = 13;
}

/// One error cause of an ERROR or ABORT chunk.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorCause {
    InvalidStreamId { stream_id: u16 },
    MissingMandatoryParameter { types: Vec<u16> },
    /// How late the cookie was, in microseconds.
    StaleCookie { staleness_us: u32 },
    OutOfResource,
    /// The whole unrecognised chunk (header included), as received.
    UnrecognizedChunkType { chunk: Vec<u8> },
    /// The unrecognised parameters (whole TLVs), as received.
    UnrecognizedParameters { params: Vec<u8> },
    NoUserData { tsn: u32 },
    UserInitiatedAbort { reason: Vec<u8> },
    ProtocolViolation { info: Vec<u8> },
    /// Any other cause, kept raw.
    Other { code: u16, info: Vec<u8> },
}

fn bad_cause(t: u16, l: u16) -> SctpError {
    SctpError::BadCauseLength { code: t, len: l }
}

impl ErrorCause {
    pub fn code(&self) -> u16 {
        match self {
            ErrorCause::InvalidStreamId { .. } => cause::INVALID_STREAM_ID,
            ErrorCause::MissingMandatoryParameter { .. } => cause::MISSING_MANDATORY_PARAMETER,
            ErrorCause::StaleCookie { .. } => cause::STALE_COOKIE,
            ErrorCause::OutOfResource => cause::OUT_OF_RESOURCE,
            ErrorCause::UnrecognizedChunkType { .. } => cause::UNRECOGNIZED_CHUNK_TYPE,
            ErrorCause::UnrecognizedParameters { .. } => cause::UNRECOGNIZED_PARAMETERS,
            ErrorCause::NoUserData { .. } => cause::NO_USER_DATA,
            ErrorCause::UserInitiatedAbort { .. } => cause::USER_INITIATED_ABORT,
            ErrorCause::ProtocolViolation { .. } => cause::PROTOCOL_VIOLATION,
            ErrorCause::Other { code, .. } => *code,
        }
    }

    /// Whether the typed form exists for `code`.
    pub fn is_known_code(code: u16) -> bool {
        matches!(code, 1 | 2 | 3 | 4 | 6 | 8 | 9 | 12 | 13)
    }

    fn decode(code: u16, v: &[u8]) -> Result<Self, SctpError> {
        let exact = |n: usize| if v.len() == n { Ok(()) } else { Err(bad_cause(code, (v.len() + 4) as u16)) };
        Ok(match code {
            cause::INVALID_STREAM_ID => {
                // Stream id, then 16 reserved bits.
                exact(4)?;
                ErrorCause::InvalidStreamId { stream_id: be16(v, 0) }
            }
            cause::MISSING_MANDATORY_PARAMETER => {
                if v.len() < 4 {
                    return Err(bad_cause(code, (v.len() + 4) as u16));
                }
                let n = be32(v, 0) as usize;
                let rest = &v[4..];
                if rest.len() / 2 != n || !rest.len().is_multiple_of(2) {
                    return Err(bad_cause(code, (v.len() + 4) as u16));
                }
                ErrorCause::MissingMandatoryParameter { types: rest.chunks_exact(2).map(|c| be16(c, 0)).collect() }
            }
            cause::STALE_COOKIE => {
                exact(4)?;
                ErrorCause::StaleCookie { staleness_us: be32(v, 0) }
            }
            cause::OUT_OF_RESOURCE => {
                exact(0)?;
                ErrorCause::OutOfResource
            }
            cause::UNRECOGNIZED_CHUNK_TYPE => ErrorCause::UnrecognizedChunkType { chunk: v.to_vec() },
            cause::UNRECOGNIZED_PARAMETERS => ErrorCause::UnrecognizedParameters { params: v.to_vec() },
            cause::NO_USER_DATA => {
                exact(4)?;
                ErrorCause::NoUserData { tsn: be32(v, 0) }
            }
            cause::USER_INITIATED_ABORT => ErrorCause::UserInitiatedAbort { reason: v.to_vec() },
            cause::PROTOCOL_VIOLATION => ErrorCause::ProtocolViolation { info: v.to_vec() },
            _ => ErrorCause::Other { code, info: v.to_vec() },
        })
    }

    /// Appends the cause with its padding; returns the padding length.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<usize, SctpError> {
        let c = self.code();
        match self {
            ErrorCause::InvalidStreamId { stream_id } => {
                let mut v = [0u8; 4];
                v[..2].copy_from_slice(&stream_id.to_be_bytes());
                put_tlv(out, c, &v, "invalid stream id")
            }
            ErrorCause::MissingMandatoryParameter { types } => {
                let mut v = (types.len() as u32).to_be_bytes().to_vec();
                v.extend(types.iter().flat_map(|t| t.to_be_bytes()));
                put_tlv(out, c, &v, "missing mandatory parameter")
            }
            ErrorCause::StaleCookie { staleness_us } => put_tlv(out, c, &staleness_us.to_be_bytes(), "stale cookie"),
            ErrorCause::OutOfResource => put_tlv(out, c, &[], "out of resource"),
            ErrorCause::NoUserData { tsn } => put_tlv(out, c, &tsn.to_be_bytes(), "no user data"),
            ErrorCause::UnrecognizedChunkType { chunk: v }
            | ErrorCause::UnrecognizedParameters { params: v }
            | ErrorCause::UserInitiatedAbort { reason: v }
            | ErrorCause::ProtocolViolation { info: v }
            | ErrorCause::Other { info: v, .. } => put_tlv(out, c, v, "error cause"),
        }
    }

    /// Decodes the cause list of an ERROR or ABORT chunk.
    pub fn decode_list(b: &[u8]) -> Result<Vec<ErrorCause>, SctpError> {
        let mut out = Vec::new();
        walk_tlvs(b, bad_cause, |t, v| {
            out.push(ErrorCause::decode(t, v)?);
            Ok(())
        })?;
        Ok(out)
    }
}
