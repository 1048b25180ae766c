//! The 0-RTT TCP Convert Protocol (RFC 8803) message codec: the 32-bit
//! fixed header (RFC 8803 6.1) and the Convert TLVs (6.2): Info, Connect
//! (base and extended), Extended TCP Header, Supported TCP Extensions,
//! Cookie and Error, with TLVs of other types kept raw.
//!
//! A Convert message is the first bytes of a TCP bytestream, in the payload
//! of the SYN (Client to Transport Converter) or of the SYN+ACK / first ACK
//! (Converter to Client); the application's own bytes follow it.
//! [`ConvertMessage::decode_prefix`] parses it off the front of a stream and
//! says how many bytes it took; [`ConvertMessage::decode`] wants exactly one
//! message.
//!
//! Typed values in, bytes out, and back. Like the SCTP codec this one
//! allocates (cookies, option lists, echoed messages), bounded by the 1020
//! bytes the 8-bit Total Length allows. Malformed input ends in a
//! [`ConvertError`], never in a panic; [`ConvertError::reply_code`] says
//! which Error TLV a Transport Converter answers it with.
//!
//! Every length on the wire is in 32-bit words. Fields the RFC says a sender
//! sets to zero (the Unassigned and Zero octets, the Zeros octet of an echo
//! or Missing Cookie error, the Value of Not Authorized and Connection
//! Reset) are written as zero and ignored when read, so a decoded value
//! re-encodes to the same bytes except there.
//!
//! The encoder and the decoder accept exactly the same values: whatever
//! decodes re-encodes to bytes that decode to the same value, and whatever
//! encodes decodes back to itself.

use core::net::{IpAddr, Ipv6Addr, SocketAddr};

use thiserror::Error;

use crate::error::WireError;
use crate::tcp::TcpOptions;

/// The one version RFC 8803 defines (0 is reserved, 6.1).
pub const VERSION: u8 = 1;
/// The fixed header's Magic Number (6.1).
pub const MAGIC: u16 = 0x2263;
/// The fixed header: Version, Total Length, Magic Number.
pub const HEADER_LEN: usize = 4;
/// Total Length is 8 bits of 32-bit words, the header included.
pub const MAX_MESSAGE_LEN: usize = 255 * 4;
/// The longest echo an Error TLV can carry in a message of its own:
/// the message less the fixed header and the Error TLV's first word.
pub const MAX_ECHO_LEN: usize = MAX_MESSAGE_LEN - HEADER_LEN - 4;

/// TLV type numbers (6.2.2, Table 1; IANA "Convert TLVs").
pub mod tlv_type {
    /// Reserved: a Converter answers it with Unsupported Message (6.2.2).
    pub const RESERVED: u8 = 0x00;
    pub const INFO: u8 = 0x01;
    pub const CONNECT: u8 = 0x0a;
    pub const EXTENDED_TCP_HEADER: u8 = 0x14;
    pub const SUPPORTED_TCP_EXTENSIONS: u8 = 0x15;
    pub const COOKIE: u8 = 0x16;
    pub const ERROR: u8 = 0x1e;
}

/// Length in bytes of a Base Connect TLV (length 5 words, 6.2.5).
pub const BASE_CONNECT_LEN: usize = 20;

/// Why bytes did not decode into a Convert message (or a value into bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ConvertError {
    /// The buffer ends before the fixed header, or before the Total Length
    /// it announces (on a stream: wait for more bytes).
    #[error("truncated: need {need} bytes, have {have}")]
    Truncated { need: usize, have: usize },
    /// The Magic Number is not 0x2263: not a Convert message (6.1).
    #[error("bad magic number {0:#06x}, expected 0x2263")]
    BadMagic(u16),
    /// A version other than 1 (0 is reserved; 6.1, 6.2.8).
    #[error("unsupported Convert version {0}")]
    UnsupportedVersion(u8),
    /// Total Length 0 is invalid; the connection must be reset (6.1).
    #[error("Total Length of zero")]
    ZeroTotalLength,
    /// [`ConvertMessage::decode`]: the buffer is longer than the Total Length.
    #[error("Total Length covers {total} bytes, the buffer has {have}")]
    LengthMismatch { total: usize, have: usize },
    /// A fixed header with no TLV after it; a message carries one or more (6).
    #[error("Convert message without TLVs")]
    NoTlvs,
    /// A TLV length of zero, one overrunning the Total Length, or one wrong
    /// for the type (Info not 1 word, Connect under 5). `len` is in words.
    #[error("TLV type {tlv_type:#04x} with bad length {len}")]
    BadTlvLength { tlv_type: u8, len: u8 },
    /// A TLV of the reserved type 0 (6.2.2).
    #[error("TLV type 0 is reserved")]
    ReservedTlvType,
    /// The same TLV type twice in one message (6.2.1: once per connection).
    #[error("TLV type {0:#04x} appears more than once")]
    DuplicateTlv(u8),
    /// Padding that is not zero, or a whole word or more of it (a TLV pads
    /// its Value to the next 32-bit boundary, no further).
    #[error("TLV type {tlv_type:#04x}: padding not zero, or longer than 3 bytes")]
    BadPadding { tlv_type: u8 },
    /// A TCP option kind a TLV must not carry: EOL, NOP, MSS or WS in a
    /// Supported TCP Extensions TLV (6.2.4, 7.1, 7.2); EOL or NOP in a
    /// Connect TLV (6.2.5); EOL in an Unsupported TCP Option error (it
    /// would read as padding).
    #[error("TLV type {tlv_type:#04x}: TCP option kind {kind} not allowed here")]
    ForbiddenKind { tlv_type: u8, kind: u8 },
    /// A TCP option in a Connect TLV with a length octet below 2, missing
    /// (`len` 0), or overrunning the TLV (6.2.5, Figure 19).
    #[error("Connect TLV: TCP option kind {kind} with bad length {len}")]
    BadTcpOption { kind: u8, len: u8 },
    /// A Remote Peer IP Address that is multicast, limited broadcast or
    /// host loopback, IPv4-mapped or not (6.2.5).
    #[error("Connect TLV: multicast, broadcast or loopback address {0}")]
    ForbiddenAddress(Ipv6Addr),
    /// An Error TLV whose Value does not fit its code (6.2.8): an empty or
    /// zero-holding version or option list, or a one-octet Value in more
    /// than one word.
    #[error("Error TLV code {code}: malformed Value")]
    BadErrorValue { code: u8 },
    /// Encoding: a field whose end only the TLV length marks (cookie, echo,
    /// returned TCP header, raw value) does not end on a 32-bit boundary,
    /// so padding it would change it. `len` is the field's length in bytes.
    #[error("TLV type {tlv_type:#04x}: a {len}-byte field does not end on a 32-bit boundary")]
    Unaligned { tlv_type: u8, len: usize },
    /// Encoding: more than 1020 bytes.
    #[error("message of {0} bytes, more than the 1020 Total Length allows")]
    TooLong(usize),
    /// Encoding: a [`Tlv::Unknown`] of a type that has a typed form (it
    /// would decode as that form).
    #[error("TLV type {0:#04x} is modelled; it cannot be sent as an unknown TLV")]
    KnownTlvAsUnknown(u8),
    /// Encoding: an [`ErrorTlv::Other`] of a code that has a typed form.
    #[error("error code {0} is modelled; it cannot be sent as an unknown code")]
    KnownCodeAsOther(u8),
}

impl ConvertError {
    /// What a Transport Converter answers a Client's malformed message
    /// with (6, 6.1, 6.2.1, 6.2.2, 6.2.8): `None` for [`Truncated`] (wait
    /// for more of the stream), [`ZeroTotalLength`] (reset the connection,
    /// 6.1) and [`BadMagic`] (not a Convert message: a SYN without Convert
    /// TLVs is silently ignored, 6); Unsupported Version for a bad version,
    /// Unsupported Message for the reserved TLV type, Malformed Message for
    /// everything else. (A Client resets the connection on any of them.)
    ///
    /// [`Truncated`]: ConvertError::Truncated
    /// [`ZeroTotalLength`]: ConvertError::ZeroTotalLength
    /// [`BadMagic`]: ConvertError::BadMagic
    pub fn reply_code(&self) -> Option<ErrorCode> {
        match self {
            ConvertError::Truncated { .. } | ConvertError::ZeroTotalLength | ConvertError::BadMagic(_) => None,
            ConvertError::UnsupportedVersion(_) => Some(ErrorCode::UNSUPPORTED_VERSION),
            ConvertError::ReservedTlvType => Some(ErrorCode::UNSUPPORTED_MESSAGE),
            _ => Some(ErrorCode::MALFORMED_MESSAGE),
        }
    }
}

/// An Error TLV's Error Code (6.2.8, Table 2; IANA "Convert Errors").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode(pub u8);

/// The four classes of error codes (6.2.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// 0-31: the message was invalid, or held invalid or unknown TLVs.
    MessageValidation,
    /// 32-63: the Client asked for something the Converter does not accept.
    ClientSide,
    /// 64-95: the Converter cannot serve the request (e.g. resources).
    ConverterSide,
    /// 96-127: the destination Server was unreachable or reset.
    DestinationServer,
}

impl ErrorCode {
    pub const UNSUPPORTED_VERSION: ErrorCode = ErrorCode(0);
    pub const MALFORMED_MESSAGE: ErrorCode = ErrorCode(1);
    pub const UNSUPPORTED_MESSAGE: ErrorCode = ErrorCode(2);
    pub const MISSING_COOKIE: ErrorCode = ErrorCode(3);
    pub const NOT_AUTHORIZED: ErrorCode = ErrorCode(32);
    pub const UNSUPPORTED_TCP_OPTION: ErrorCode = ErrorCode(33);
    pub const RESOURCE_EXCEEDED: ErrorCode = ErrorCode(64);
    pub const NETWORK_FAILURE: ErrorCode = ErrorCode(65);
    pub const CONNECTION_RESET: ErrorCode = ErrorCode(96);
    pub const DESTINATION_UNREACHABLE: ErrorCode = ErrorCode(97);

    /// The name RFC 8803 Table 2 gives the code; `None` for the others.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "Unsupported Version",
            1 => "Malformed Message",
            2 => "Unsupported Message",
            3 => "Missing Cookie",
            32 => "Not Authorized",
            33 => "Unsupported TCP Option",
            64 => "Resource Exceeded",
            65 => "Network Failure",
            96 => "Connection Reset",
            97 => "Destination Unreachable",
            _ => return None,
        })
    }

    /// Whether RFC 8803 defines the code (and [`ErrorTlv`] has a typed form).
    pub fn is_known(self) -> bool {
        self.name().is_some()
    }

    /// The class the code's range puts it in; `None` above 127.
    pub fn class(self) -> Option<ErrorClass> {
        match self.0 {
            0..=31 => Some(ErrorClass::MessageValidation),
            32..=63 => Some(ErrorClass::ClientSide),
            64..=95 => Some(ErrorClass::ConverterSide),
            96..=127 => Some(ErrorClass::DestinationServer),
            _ => None,
        }
    }
}

impl core::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n} ({})", self.0),
            None => write!(f, "error code {}", self.0),
        }
    }
}

/// The Connect TLV (6.2.5): where the Converter should connect to (or, on
/// an incoming connection, where the Server's SYN came from), and the TCP
/// options the Client wants in the Converter's SYN.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Connect {
    pub port: u16,
    /// As on the wire: an IPv4 address is IPv4-mapped (`::ffff:a.b.c.d`).
    pub addr: Ipv6Addr,
    /// The TCP Options field without its padding: whole options, each kind,
    /// length (>= 2, covering kind and length), value. Empty: a Base Connect
    /// TLV; otherwise an Extended Connect TLV. A length of 2 asks the
    /// Converter to generate the value; a longer one is copied verbatim
    /// into the Converter's SYN.
    pub tcp_options: Vec<u8>,
}

impl Connect {
    /// `addr`'s IP and port; an IPv4 address is stored IPv4-mapped. The
    /// address and options are checked as the decoder checks them.
    pub fn new(addr: SocketAddr, tcp_options: &[u8]) -> Result<Connect, ConvertError> {
        let ip = match addr.ip() {
            IpAddr::V4(a) => a.to_ipv6_mapped(),
            IpAddr::V6(a) => a,
        };
        let c = Connect { port: addr.port(), addr: ip, tcp_options: tcp_options.to_vec() };
        c.check()?;
        Ok(c)
    }

    /// The remote peer: an IPv4-mapped address as IPv4.
    pub fn socket_addr(&self) -> SocketAddr {
        SocketAddr::new(self.addr.to_canonical(), self.port)
    }

    /// An Extended Connect TLV (one with TCP options).
    pub fn is_extended(&self) -> bool {
        !self.tcp_options.is_empty()
    }

    /// The requested options as (kind, value) pairs, value without the kind
    /// and length octets (empty: the Converter generates it). Stops at the
    /// first malformed option (a checked `Connect` has none).
    pub fn options(&self) -> impl Iterator<Item = (u8, &[u8])> + '_ {
        let b = &self.tcp_options[..];
        let mut p = 0;
        core::iter::from_fn(move || {
            let kind = *b.get(p)?;
            let len = *b.get(p + 1)? as usize;
            if len < 2 || p + len > b.len() {
                return None;
            }
            let v = &b[p + 2..p + len];
            p += len;
            Some((kind, v))
        })
    }

    fn check(&self) -> Result<(), ConvertError> {
        if forbidden_address(&self.addr) {
            return Err(ConvertError::ForbiddenAddress(self.addr));
        }
        let n = scan_options(&self.tcp_options, false)?;
        debug_assert_eq!(n, self.tcp_options.len());
        Ok(())
    }

    fn wire_len(&self) -> usize {
        BASE_CONNECT_LEN + pad4(self.tcp_options.len())
    }
}

/// Multicast, limited broadcast or host loopback (RFC 6890), looking
/// through an IPv4-mapped address (RFC 8803 6.2.5).
fn forbidden_address(a: &Ipv6Addr) -> bool {
    match a.to_ipv4_mapped() {
        Some(v4) => v4.is_multicast() || v4.is_broadcast() || v4.is_loopback(),
        None => a.is_multicast() || a.is_loopback(),
    }
}

/// Walks a Connect TLV's TCP Options field: whole options of kind >= 2 and
/// length >= 2. Returns the length of the options. When `padded`, a zero
/// octet where an option would start begins the padding, which must be
/// zeros and shorter than a word; otherwise (a value to encode) EOL is an
/// error like NOP.
fn scan_options(b: &[u8], padded: bool) -> Result<usize, ConvertError> {
    let mut p = 0;
    while p < b.len() {
        let kind = b[p];
        if kind == 0 && padded {
            break;
        }
        if kind <= 1 {
            return Err(ConvertError::ForbiddenKind { tlv_type: tlv_type::CONNECT, kind });
        }
        let Some(&len) = b.get(p + 1) else {
            return Err(ConvertError::BadTcpOption { kind, len: 0 });
        };
        if len < 2 || p + len as usize > b.len() {
            return Err(ConvertError::BadTcpOption { kind, len });
        }
        p += len as usize;
    }
    check_padding(&b[p..], tlv_type::CONNECT)?;
    Ok(p)
}

fn check_padding(pad: &[u8], tlv_type: u8) -> Result<(), ConvertError> {
    if pad.len() >= 4 || pad.iter().any(|&x| x != 0) {
        return Err(ConvertError::BadPadding { tlv_type });
    }
    Ok(())
}

/// Splits a zero-padded list of non-zero octets (TCP option kinds,
/// versions) into the list and its padding, which must be shorter than a
/// word. The list ends at its last non-zero octet; the caller rejects a
/// zero inside it.
fn split_list(area: &[u8], tlv_type: u8) -> Result<&[u8], ConvertError> {
    let n = area.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1);
    check_padding(&area[n..], tlv_type)?;
    Ok(&area[..n])
}

/// Rounds up to the 32-bit boundary every TLV ends on.
fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// The Error TLV (6.2.8), by Error Code. On the wire: Type, Length, Error
/// Code, then the Value field (one octet and whatever follows, up to the
/// TLV length).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorTlv {
    /// 0: the versions the sender supports, one octet each, none zero, at
    /// least one. Padded with zeros to the word boundary.
    UnsupportedVersion { versions: Vec<u8> },
    /// 1: the received message that could not be parsed or validated,
    /// echoed after a Zeros octet (Figure 23), so it keeps its alignment.
    /// A whole number of words; [`ErrorTlv::malformed`] pads one.
    MalformedMessage { echo: Vec<u8> },
    /// 2: a message type the Converter does not support, echoed as for 1.
    UnsupportedMessage { echo: Vec<u8> },
    /// 3: the Cookie the Converter computed for this Client, after a zero
    /// octet. A whole number of words.
    MissingCookie { cookie: Vec<u8> },
    /// 32: authorization failed or an invalid Cookie. Value zero.
    NotAuthorized,
    /// 33: the requested TCP option kinds the Converter will not use, at
    /// least one, none zero; padded with zeros to the word boundary.
    UnsupportedTcpOption { kinds: Vec<u8> },
    /// 64: the Converter is out of resources. `retry_after_s`: seconds the
    /// Client should wait before asking again; 0 means at least 30.
    ResourceExceeded { retry_after_s: u8 },
    /// 65: the Converter cannot forward. `retry_after_s` as for 64.
    NetworkFailure { retry_after_s: u8 },
    /// 96: the Server answered with a RST. Value zero.
    ConnectionReset,
    /// 97: an ICMP hard error came back; the ICMP message's Code field.
    DestinationUnreachable { icmp_code: u8 },
    /// Any other code: the Value field as received, its padding included
    /// (so its length is 1 more than a multiple of 4).
    Other { code: u8, value: Vec<u8> },
}

impl ErrorTlv {
    pub fn code(&self) -> ErrorCode {
        ErrorCode(match self {
            ErrorTlv::UnsupportedVersion { .. } => 0,
            ErrorTlv::MalformedMessage { .. } => 1,
            ErrorTlv::UnsupportedMessage { .. } => 2,
            ErrorTlv::MissingCookie { .. } => 3,
            ErrorTlv::NotAuthorized => 32,
            ErrorTlv::UnsupportedTcpOption { .. } => 33,
            ErrorTlv::ResourceExceeded { .. } => 64,
            ErrorTlv::NetworkFailure { .. } => 65,
            ErrorTlv::ConnectionReset => 96,
            ErrorTlv::DestinationUnreachable { .. } => 97,
            ErrorTlv::Other { code, .. } => *code,
        })
    }

    /// Malformed Message echoing `received` (the bytes of the offending
    /// message), zero-padded to a word and cut at [`MAX_ECHO_LEN`] so the
    /// reply fits in one Convert message.
    pub fn malformed(received: &[u8]) -> ErrorTlv {
        ErrorTlv::MalformedMessage { echo: echo_of(received) }
    }

    /// Unsupported Message echoing `received`, as [`ErrorTlv::malformed`].
    pub fn unsupported_message(received: &[u8]) -> ErrorTlv {
        ErrorTlv::UnsupportedMessage { echo: echo_of(received) }
    }

    /// Parses an Error TLV from its code and its Value field (everything
    /// after the Error Code octet up to the end of the TLV, padding
    /// included; at least one octet).
    fn decode(code: u8, v: &[u8]) -> Result<ErrorTlv, ConvertError> {
        let bad = ConvertError::BadErrorValue { code };
        let single = || if v.len() == 1 { Ok(v[0]) } else { Err(bad) };
        Ok(match ErrorCode(code) {
            ErrorCode::UNSUPPORTED_VERSION => {
                let l = split_list(v, tlv_type::ERROR)?;
                if l.is_empty() || l.contains(&0) {
                    return Err(bad);
                }
                ErrorTlv::UnsupportedVersion { versions: l.to_vec() }
            }
            ErrorCode::MALFORMED_MESSAGE => ErrorTlv::MalformedMessage { echo: v[1..].to_vec() },
            ErrorCode::UNSUPPORTED_MESSAGE => ErrorTlv::UnsupportedMessage { echo: v[1..].to_vec() },
            ErrorCode::MISSING_COOKIE => ErrorTlv::MissingCookie { cookie: v[1..].to_vec() },
            ErrorCode::NOT_AUTHORIZED => {
                single()?;
                ErrorTlv::NotAuthorized
            }
            ErrorCode::UNSUPPORTED_TCP_OPTION => {
                let l = split_list(v, tlv_type::ERROR)?;
                if l.is_empty() || l.contains(&0) {
                    return Err(bad);
                }
                ErrorTlv::UnsupportedTcpOption { kinds: l.to_vec() }
            }
            ErrorCode::RESOURCE_EXCEEDED => ErrorTlv::ResourceExceeded { retry_after_s: single()? },
            ErrorCode::NETWORK_FAILURE => ErrorTlv::NetworkFailure { retry_after_s: single()? },
            ErrorCode::CONNECTION_RESET => {
                single()?;
                ErrorTlv::ConnectionReset
            }
            ErrorCode::DESTINATION_UNREACHABLE => ErrorTlv::DestinationUnreachable { icmp_code: single()? },
            _ => ErrorTlv::Other { code, value: v.to_vec() },
        })
    }

    /// The length of the Value field as encoded, padding included.
    fn value_len(&self) -> usize {
        match self {
            ErrorTlv::UnsupportedVersion { versions: l } | ErrorTlv::UnsupportedTcpOption { kinds: l } => {
                pad4(3 + l.len()) - 3
            }
            ErrorTlv::MalformedMessage { echo: b }
            | ErrorTlv::UnsupportedMessage { echo: b }
            | ErrorTlv::MissingCookie { cookie: b } => 1 + pad4(b.len()),
            ErrorTlv::Other { value, .. } => pad4(3 + value.len()) - 3,
            _ => 1,
        }
    }

    fn check(&self) -> Result<(), ConvertError> {
        let code = self.code().0;
        match self {
            ErrorTlv::UnsupportedVersion { versions: l } | ErrorTlv::UnsupportedTcpOption { kinds: l }
                if l.is_empty() || l.contains(&0) =>
            {
                Err(ConvertError::BadErrorValue { code })
            }
            ErrorTlv::MalformedMessage { echo: b }
            | ErrorTlv::UnsupportedMessage { echo: b }
            | ErrorTlv::MissingCookie { cookie: b }
                if !b.len().is_multiple_of(4) =>
            {
                Err(ConvertError::Unaligned { tlv_type: tlv_type::ERROR, len: b.len() })
            }
            ErrorTlv::Other { .. } if ErrorCode(code).is_known() => Err(ConvertError::KnownCodeAsOther(code)),
            ErrorTlv::Other { value, .. } if value.len() % 4 != 1 => {
                Err(ConvertError::Unaligned { tlv_type: tlv_type::ERROR, len: value.len() })
            }
            _ => Ok(()),
        }
    }

    /// Appends the Value field (the caller has written Type, Length, Code).
    fn encode_value(&self, out: &mut Vec<u8>) {
        let start = out.len();
        match self {
            ErrorTlv::UnsupportedVersion { versions: l } | ErrorTlv::UnsupportedTcpOption { kinds: l } => {
                out.extend_from_slice(l)
            }
            ErrorTlv::MalformedMessage { echo: b }
            | ErrorTlv::UnsupportedMessage { echo: b }
            | ErrorTlv::MissingCookie { cookie: b } => {
                out.push(0);
                out.extend_from_slice(b);
            }
            ErrorTlv::NotAuthorized | ErrorTlv::ConnectionReset => out.push(0),
            ErrorTlv::ResourceExceeded { retry_after_s: x }
            | ErrorTlv::NetworkFailure { retry_after_s: x }
            | ErrorTlv::DestinationUnreachable { icmp_code: x } => out.push(*x),
            ErrorTlv::Other { value, .. } => out.extend_from_slice(value),
        }
        out.resize(start + self.value_len(), 0);
    }
}

fn echo_of(received: &[u8]) -> Vec<u8> {
    let mut e = received[..received.len().min(MAX_ECHO_LEN)].to_vec();
    e.resize(pad4(e.len()), 0);
    e
}

/// One Convert TLV (6.2).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Tlv {
    /// 0x1 (6.2.3): the Client asks which TCP extensions the Converter
    /// supports. Always one word.
    Info,
    /// 0xa (6.2.5).
    Connect(Connect),
    /// 0x14 (6.2.6): the TCP options of the Server's SYN+ACK, returned to
    /// the Client as received (a TCP header's options, so a whole number of
    /// words). [`Tlv::returned_options`] parses them.
    ExtendedTcpHeader { options: Vec<u8> },
    /// 0x15 (6.2.4): the TCP option kinds the Converter converts. Not EOL,
    /// NOP, MSS or WS (6.2.4, 7.1, 7.2). Padded with zeros to the word
    /// boundary.
    SupportedTcpExtensions { kinds: Vec<u8> },
    /// 0x16 (6.2.7): an opaque cookie, a whole number of words.
    Cookie { cookie: Vec<u8> },
    /// 0x1e (6.2.8).
    Error(ErrorTlv),
    /// Any other type but 0: the bytes after Type and Length, padding
    /// included (so their length is 2 more than a multiple of 4).
    Unknown { tlv_type: u8, value: Vec<u8> },
}

impl Tlv {
    pub fn tlv_type(&self) -> u8 {
        match self {
            Tlv::Info => tlv_type::INFO,
            Tlv::Connect(_) => tlv_type::CONNECT,
            Tlv::ExtendedTcpHeader { .. } => tlv_type::EXTENDED_TCP_HEADER,
            Tlv::SupportedTcpExtensions { .. } => tlv_type::SUPPORTED_TCP_EXTENSIONS,
            Tlv::Cookie { .. } => tlv_type::COOKIE,
            Tlv::Error(_) => tlv_type::ERROR,
            Tlv::Unknown { tlv_type, .. } => *tlv_type,
        }
    }

    /// Whether the typed form exists for type `t` (an `Unknown` with such
    /// a type would decode as the typed form).
    pub fn is_known_type(t: u8) -> bool {
        matches!(
            t,
            tlv_type::INFO
                | tlv_type::CONNECT
                | tlv_type::EXTENDED_TCP_HEADER
                | tlv_type::SUPPORTED_TCP_EXTENSIONS
                | tlv_type::COOKIE
                | tlv_type::ERROR
        )
    }

    /// For an Extended TCP Header TLV: its options, parsed by the TCP option
    /// codec. `None` for other TLVs.
    pub fn returned_options(&self) -> Option<Result<TcpOptions, WireError>> {
        match self {
            Tlv::ExtendedTcpHeader { options } => Some(TcpOptions::parse(options)),
            _ => None,
        }
    }

    /// Encoded length in bytes (a multiple of 4).
    pub fn wire_len(&self) -> usize {
        match self {
            Tlv::Info => 4,
            Tlv::Connect(c) => c.wire_len(),
            Tlv::ExtendedTcpHeader { options: b } | Tlv::Cookie { cookie: b } => 4 + pad4(b.len()),
            Tlv::SupportedTcpExtensions { kinds } => pad4(4 + kinds.len()),
            Tlv::Error(e) => 3 + e.value_len(),
            Tlv::Unknown { value, .. } => pad4(2 + value.len()),
        }
    }

    /// Decodes one TLV from its type and the bytes after its Type and
    /// Length octets, up to its length (at least 2).
    fn decode(t: u8, v: &[u8]) -> Result<Tlv, ConvertError> {
        let bad_len = || ConvertError::BadTlvLength { tlv_type: t, len: ((v.len() + 2) / 4) as u8 };
        Ok(match t {
            tlv_type::RESERVED => return Err(ConvertError::ReservedTlvType),
            tlv_type::INFO => {
                // Table 1: length 1. The Zero octets are not checked.
                if v.len() != 2 {
                    return Err(bad_len());
                }
                Tlv::Info
            }
            tlv_type::CONNECT => {
                if v.len() < BASE_CONNECT_LEN - 2 {
                    return Err(bad_len());
                }
                let mut a = [0u8; 16];
                a.copy_from_slice(&v[2..18]);
                let addr = Ipv6Addr::from(a);
                if forbidden_address(&addr) {
                    return Err(ConvertError::ForbiddenAddress(addr));
                }
                let opts = &v[18..];
                let n = scan_options(opts, true)?;
                Tlv::Connect(Connect { port: u16::from_be_bytes([v[0], v[1]]), addr, tcp_options: opts[..n].to_vec() })
            }
            tlv_type::EXTENDED_TCP_HEADER => Tlv::ExtendedTcpHeader { options: v[2..].to_vec() },
            tlv_type::SUPPORTED_TCP_EXTENSIONS => {
                // Padding and kind 0 look alike: the list ends at its last
                // non-zero octet, and a zero before that is EOL.
                let kinds = split_list(&v[2..], t)?;
                if let Some(&kind) = kinds.iter().find(|&&k| k <= 3) {
                    return Err(ConvertError::ForbiddenKind { tlv_type: t, kind });
                }
                Tlv::SupportedTcpExtensions { kinds: kinds.to_vec() }
            }
            tlv_type::COOKIE => Tlv::Cookie { cookie: v[2..].to_vec() },
            tlv_type::ERROR => Tlv::Error(ErrorTlv::decode(v[0], &v[1..])?),
            _ => Tlv::Unknown { tlv_type: t, value: v.to_vec() },
        })
    }

    /// Checks that the value has an encoding, the one the decoder accepts.
    fn check(&self) -> Result<(), ConvertError> {
        let t = self.tlv_type();
        match self {
            Tlv::Info => {}
            Tlv::Connect(c) => c.check()?,
            Tlv::ExtendedTcpHeader { options: b } | Tlv::Cookie { cookie: b } => {
                if !b.len().is_multiple_of(4) {
                    return Err(ConvertError::Unaligned { tlv_type: t, len: b.len() });
                }
            }
            Tlv::SupportedTcpExtensions { kinds } => {
                if let Some(&kind) = kinds.iter().find(|&&k| k <= 3) {
                    return Err(ConvertError::ForbiddenKind { tlv_type: t, kind });
                }
            }
            Tlv::Error(e) => e.check()?,
            Tlv::Unknown { tlv_type: 0, .. } => return Err(ConvertError::ReservedTlvType),
            Tlv::Unknown { tlv_type, value } => {
                if Tlv::is_known_type(*tlv_type) {
                    return Err(ConvertError::KnownTlvAsUnknown(*tlv_type));
                }
                if value.len() % 4 != 2 {
                    return Err(ConvertError::Unaligned { tlv_type: t, len: value.len() });
                }
            }
        }
        Ok(())
    }

    /// Appends the TLV with its padding. The caller has checked it, and
    /// that it fits in a message.
    fn encode_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let len = self.wire_len();
        out.extend_from_slice(&[self.tlv_type(), (len / 4) as u8]);
        match self {
            Tlv::Info => out.extend_from_slice(&[0, 0]),
            Tlv::Connect(c) => {
                out.extend_from_slice(&c.port.to_be_bytes());
                out.extend_from_slice(&c.addr.octets());
                out.extend_from_slice(&c.tcp_options);
            }
            Tlv::ExtendedTcpHeader { options: b } | Tlv::Cookie { cookie: b } => {
                out.extend_from_slice(&[0, 0]);
                out.extend_from_slice(b);
            }
            Tlv::SupportedTcpExtensions { kinds } => {
                out.extend_from_slice(&[0, 0]);
                out.extend_from_slice(kinds);
            }
            Tlv::Error(e) => {
                out.push(e.code().0);
                e.encode_value(out);
            }
            Tlv::Unknown { value, .. } => out.extend_from_slice(value),
        }
        out.resize(start + len, 0);
    }
}

/// A Convert message: the fixed header (version 1, Total Length, Magic
/// Number) and one or more TLVs, each type at most once.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ConvertMessage {
    pub tlvs: Vec<Tlv>,
}

impl ConvertMessage {
    pub fn new(tlvs: Vec<Tlv>) -> ConvertMessage {
        ConvertMessage { tlvs }
    }

    /// A Client's Info request (6.2.3).
    pub fn info() -> ConvertMessage {
        ConvertMessage::new(vec![Tlv::Info])
    }

    /// A Client's Connect request (6.2.5) to `addr` (IPv4 sent IPv4-mapped),
    /// asking for `tcp_options` (whole options, no EOL, NOP or padding) in
    /// the Converter's SYN; empty `tcp_options` gives a Base Connect TLV.
    pub fn connect(addr: SocketAddr, tcp_options: &[u8]) -> Result<ConvertMessage, ConvertError> {
        Ok(ConvertMessage::new(vec![Tlv::Connect(Connect::new(addr, tcp_options)?)]))
    }

    /// A Converter's answer to Info (6.2.4): the TCP option kinds it
    /// converts (e.g. 30 for MPTCP, 34 for TFO).
    pub fn supported_extensions(kinds: &[u8]) -> Result<ConvertMessage, ConvertError> {
        let t = Tlv::SupportedTcpExtensions { kinds: kinds.to_vec() };
        t.check()?;
        Ok(ConvertMessage::new(vec![t]))
    }

    /// A Converter's answer to a Connect the Server accepted, for an
    /// Extended Connect (6.2.6): the SYN+ACK's TCP options, as received.
    pub fn extended_tcp_header(options: &[u8]) -> Result<ConvertMessage, ConvertError> {
        let t = Tlv::ExtendedTcpHeader { options: options.to_vec() };
        t.check()?;
        Ok(ConvertMessage::new(vec![t]))
    }

    /// An Error TLV message (6.2.8) from the code and the Value field as
    /// the RFC lays it out for that code, everything after the Error Code
    /// octet without the padding: `[1]` (versions) for Unsupported Version,
    /// `[0, echo..]` for Malformed / Unsupported Message, `[0, cookie..]`
    /// for Missing Cookie, `[0]` for Not Authorized and Connection Reset,
    /// the kinds for Unsupported TCP Option, `[seconds]` for Resource
    /// Exceeded and Network Failure, `[icmp code]` for Destination
    /// Unreachable. Padded with zeros to the word boundary, then checked as
    /// the decoder checks it. An empty `value` is one zero octet.
    pub fn error(code: ErrorCode, value: &[u8]) -> Result<ConvertMessage, ConvertError> {
        let mut v = value.to_vec();
        v.resize(pad4(3 + v.len().max(1)) - 3, 0);
        let t = Tlv::Error(ErrorTlv::decode(code.0, &v)?);
        t.check()?;
        Ok(ConvertMessage::new(vec![t]))
    }

    /// The message a Transport Converter answers a Client's undecodable
    /// message with ([`ConvertError::reply_code`]): Unsupported Version
    /// listing version 1, or Malformed / Unsupported Message echoing
    /// `received` (the Client's bytes, cut at the Total Length when it is
    /// known). `None` when the Converter resets, waits or ignores instead.
    pub fn reply_to(err: &ConvertError, received: &[u8]) -> Option<ConvertMessage> {
        let received = match ConvertMessage::message_len(received) {
            Ok(n) => &received[..n.min(received.len())],
            Err(_) => received,
        };
        let e = match err.reply_code()? {
            ErrorCode::UNSUPPORTED_VERSION => ErrorTlv::UnsupportedVersion { versions: vec![VERSION] },
            ErrorCode::UNSUPPORTED_MESSAGE => ErrorTlv::unsupported_message(received),
            _ => ErrorTlv::malformed(received),
        };
        Some(ConvertMessage::new(vec![Tlv::Error(e)]))
    }

    /// The first TLV of type `t`.
    pub fn tlv(&self, t: u8) -> Option<&Tlv> {
        self.tlvs.iter().find(|x| x.tlv_type() == t)
    }

    /// The Error TLV, if the message has one.
    pub fn error_tlv(&self) -> Option<&ErrorTlv> {
        self.tlvs.iter().find_map(|t| match t {
            Tlv::Error(e) => Some(e),
            _ => None,
        })
    }

    /// The Connect TLV, if the message has one.
    pub fn connect_tlv(&self) -> Option<&Connect> {
        self.tlvs.iter().find_map(|t| match t {
            Tlv::Connect(c) => Some(c),
            _ => None,
        })
    }

    /// Encoded length in bytes, the fixed header included (more than
    /// [`MAX_MESSAGE_LEN`] when the message cannot be encoded).
    pub fn encoded_len(&self) -> usize {
        HEADER_LEN + self.tlvs.iter().map(Tlv::wire_len).sum::<usize>()
    }

    /// Serialises the message.
    pub fn encode(&self) -> Result<Vec<u8>, ConvertError> {
        let mut out = Vec::with_capacity(self.encoded_len().min(MAX_MESSAGE_LEN));
        self.encode_to(&mut out)?;
        Ok(out)
    }

    /// Appends the message to `out` (say, before the application's bytes
    /// in a SYN's payload); returns its length. On error `out` is unchanged.
    pub fn encode_to(&self, out: &mut Vec<u8>) -> Result<usize, ConvertError> {
        if self.tlvs.is_empty() {
            return Err(ConvertError::NoTlvs);
        }
        let len = self.encoded_len();
        if len > MAX_MESSAGE_LEN {
            return Err(ConvertError::TooLong(len));
        }
        let mut seen = [0u64; 4];
        for t in &self.tlvs {
            let ty = t.tlv_type();
            if !mark(&mut seen, ty) {
                return Err(ConvertError::DuplicateTlv(ty));
            }
            t.check()?;
        }
        let start = out.len();
        out.push(VERSION);
        out.push((len / 4) as u8);
        out.extend_from_slice(&MAGIC.to_be_bytes());
        for t in &self.tlvs {
            t.encode_to(out);
        }
        debug_assert_eq!(out.len() - start, len);
        Ok(len)
    }

    /// From the first four bytes of a stream, the length in bytes of the
    /// Convert message they begin (what to wait for before decoding).
    /// Checks the Magic Number, then the Version, then that the Total
    /// Length is not zero.
    pub fn message_len(b: &[u8]) -> Result<usize, ConvertError> {
        if b.len() < HEADER_LEN {
            return Err(ConvertError::Truncated { need: HEADER_LEN, have: b.len() });
        }
        let magic = u16::from_be_bytes([b[2], b[3]]);
        if magic != MAGIC {
            return Err(ConvertError::BadMagic(magic));
        }
        if b[0] != VERSION {
            return Err(ConvertError::UnsupportedVersion(b[0]));
        }
        if b[1] == 0 {
            return Err(ConvertError::ZeroTotalLength);
        }
        Ok(b[1] as usize * 4)
    }

    /// Decodes exactly one message: `b` must be as long as its Total Length
    /// (shorter: [`ConvertError::Truncated`]; longer:
    /// [`ConvertError::LengthMismatch`]).
    pub fn decode(b: &[u8]) -> Result<ConvertMessage, ConvertError> {
        let (m, n) = Self::decode_prefix(b)?;
        if n != b.len() {
            return Err(ConvertError::LengthMismatch { total: n, have: b.len() });
        }
        Ok(m)
    }

    /// Decodes the message at the start of a bytestream; returns it and the
    /// number of bytes it took (what follows is the application's data).
    pub fn decode_prefix(b: &[u8]) -> Result<(ConvertMessage, usize), ConvertError> {
        let total = Self::message_len(b)?;
        if b.len() < total {
            return Err(ConvertError::Truncated { need: total, have: b.len() });
        }
        let body = &b[HEADER_LEN..total];
        if body.is_empty() {
            return Err(ConvertError::NoTlvs);
        }
        let mut tlvs = Vec::new();
        let mut seen = [0u64; 4];
        let mut off = 0;
        // Everything here is whole words, so a TLV's first word is there.
        while off < body.len() {
            let (t, words) = (body[off], body[off + 1]);
            let len = words as usize * 4;
            if len == 0 || off + len > body.len() {
                return Err(ConvertError::BadTlvLength { tlv_type: t, len: words });
            }
            if !mark(&mut seen, t) {
                return Err(ConvertError::DuplicateTlv(t));
            }
            tlvs.push(Tlv::decode(t, &body[off + 2..off + len])?);
            off += len;
        }
        Ok((ConvertMessage { tlvs }, total))
    }
}

/// Sets bit `t`; false if it was already set.
fn mark(seen: &mut [u64; 4], t: u8) -> bool {
    let (w, bit) = ((t >> 6) as usize, 1u64 << (t & 63));
    let fresh = seen[w] & bit == 0;
    seen[w] |= bit;
    fresh
}
