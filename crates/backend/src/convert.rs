//! RFC 8803 Transport Converters in the hybrid-access gateways
//! (`app = "converter"`), sans-IO: what the CPE writes at the head of the
//! connection it opens to the HAG, what the HAG decides on reading it, and
//! what the CPE makes of the HAG's answer. The simulator and the kernel
//! backend move the bytes; this module owns the protocol, so both take the
//! same decisions and count them the same way.
//!
//! The exchange (RFC 8803 4.2, 5): the CPE's SYN carries, with TCP Fast
//! Open, a Convert message holding a Connect TLV (the destination the
//! client asked for) ahead of the client's first bytes. The HAG connects
//! to that destination; once the server accepted, it answers with a
//! Convert message of its own, an Extended TCP Header TLV carrying the
//! options the server's SYN+ACK agreed to (6.2.6: MSS, window scale, SACK
//! permitted; timestamps are per connection and mean nothing to the
//! client), and from then on both relay bytes. A request the HAG cannot serve
//! gets a Convert message with an Error TLV, and the connection closes:
//! malformed messages (RFC 8803 6.2.8: Unsupported Version, Malformed
//! Message, Unsupported Message), a destination it refuses (Not
//! Authorized), options it does not offer (Unsupported TCP Option), a
//! server that does not answer (Destination Unreachable) or resets
//! (Connection Reset).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use mplab_scenario::network::Prefix;
use mplab_wire::convert::{ConvertError, ConvertMessage, ErrorCode, ErrorTlv, Tlv};
pub use crate::results::ConverterSummary;

/// TCP option kinds a Connect TLV may ask the HAG to use towards the
/// server: the ones Linux negotiates by itself (MSS, window scale, SACK
/// permitted, timestamps). Anything else is refused with Unsupported TCP
/// Option, since a kernel socket cannot be told to send it.
const OPTIONS_OFFERED: [u8; 4] = [2, 3, 4, 8];
/// What an Info request is answered with (Supported TCP Extensions): the
/// converter turns TCP into Multipath TCP (kind 30).
const EXTENSIONS: [u8; 1] = [30];

/// The CPE's request: a Convert message with a base Connect TLV naming
/// where the client's connection was going.
pub fn request(dst: SocketAddrV4) -> Vec<u8> {
    // A base Connect TLV with no options always encodes.
    ConvertMessage::connect(SocketAddr::V4(dst), &[]).and_then(|m| m.encode()).unwrap_or_default()
}

/// The TCP options of the server's SYN+ACK the HAG reports back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerOptions {
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
}

impl ServerOptions {
    /// As TCP options, NOP-padded to a 32-bit boundary.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        if let Some(m) = self.mss {
            b.extend_from_slice(&[2, 4]);
            b.extend_from_slice(&m.to_be_bytes());
        }
        if self.sack_permitted {
            b.extend_from_slice(&[4, 2]);
        }
        if let Some(w) = self.wscale {
            b.extend_from_slice(&[3, 3, w]);
        }
        while b.len() % 4 != 0 {
            b.insert(0, 1);
        }
        b
    }
}

/// The HAG's answer once the server accepted.
pub fn reply_ok(server: ServerOptions) -> Vec<u8> {
    ConvertMessage::extended_tcp_header(&server.encode()).and_then(|m| m.encode()).unwrap_or_default()
}

/// A Convert message carrying one Error TLV.
pub fn reply_error(e: ErrorTlv) -> Vec<u8> {
    ConvertMessage::new(vec![Tlv::Error(e)]).encode().unwrap_or_default()
}

/// What the HAG does with the head of a connection from the CPE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Not a whole message yet: read more.
    NeedMore,
    /// Connect to `dst`; the request took the first `consumed` bytes (the
    /// client's bytes follow).
    Connect { dst: SocketAddrV4, consumed: usize },
    /// Answer with `reply` and close; `code` is the Error TLV's, `None`
    /// for an Info exchange (answered with the extensions offered).
    Answer { reply: Vec<u8>, code: Option<ErrorCode> },
    /// Not a Convert message (bad magic) or a Total Length of zero: reset
    /// the connection without an answer (RFC 8803 6, 6.1).
    Reset { why: ConvertError },
}

/// The HAG's policy: which destinations it serves.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Refused by configuration (`refuse = [...]`).
    pub refuse: Vec<Prefix>,
    /// The gateways' own addresses: a converter is no way into its own
    /// network elements.
    pub own: Vec<Ipv4Addr>,
}

impl Policy {
    /// Judges the first bytes the CPE sent (RFC 8803 5).
    pub fn judge(&self, head: &[u8]) -> Decision {
        let (msg, consumed) = match ConvertMessage::decode_prefix(head) {
            Ok(x) => x,
            Err(e) if incomplete(&e, head) => return Decision::NeedMore,
            Err(e) => {
                let Some(code) = e.reply_code() else { return Decision::Reset { why: e } };
                let reply = ConvertMessage::reply_to(&e, head).and_then(|m| m.encode().ok()).unwrap_or_else(|| reply_error(ErrorTlv::malformed(&[])));
                return Decision::Answer { reply, code: Some(code) };
            }
        };
        let Some(connect) = msg.connect_tlv() else {
            if msg.tlv(mplab_wire::convert::tlv_type::INFO).is_some() {
                let reply = ConvertMessage::supported_extensions(&EXTENSIONS).and_then(|m| m.encode()).unwrap_or_default();
                return Decision::Answer { reply, code: None };
            }
            // A message from a client must ask for something (6.2.5).
            return refuse(ErrorTlv::unsupported_message(&head[..consumed]));
        };
        // TLVs only a converter sends, and types this one does not know.
        if msg.tlvs.iter().any(|t| matches!(t, Tlv::Error(_) | Tlv::ExtendedTcpHeader { .. } | Tlv::SupportedTcpExtensions { .. } | Tlv::Unknown { .. })) {
            return refuse(ErrorTlv::unsupported_message(&head[..consumed]));
        }
        let unsupported: Vec<u8> = connect.options().map(|(kind, _)| kind).filter(|k| !OPTIONS_OFFERED.contains(k)).collect();
        if !unsupported.is_empty() {
            return refuse(ErrorTlv::UnsupportedTcpOption { kinds: unsupported });
        }
        let dst = match connect.socket_addr() {
            SocketAddr::V4(a) => a,
            // The emulated networks are IPv4 only: no route (ICMP code 0).
            SocketAddr::V6(_) => return refuse(ErrorTlv::DestinationUnreachable { icmp_code: 0 }),
        };
        if !self.allows(*dst.ip()) || dst.port() == 0 {
            return refuse(ErrorTlv::NotAuthorized);
        }
        Decision::Connect { dst, consumed }
    }

    /// Whether the HAG connects to `ip` for a client.
    pub fn allows(&self, ip: Ipv4Addr) -> bool {
        let special = ip.is_unspecified() || ip.is_loopback() || ip.is_multicast() || ip.is_broadcast();
        !special && !self.own.contains(&ip) && !self.refuse.iter().any(|p| p.contains(ip))
    }
}

fn refuse(e: ErrorTlv) -> Decision {
    Decision::Answer { code: Some(e.code()), reply: reply_error(e) }
}

/// Whether decoding failed only because the message is not all there yet.
fn incomplete(e: &ConvertError, head: &[u8]) -> bool {
    ConvertMessage::message_len(head).map_or(matches!(e, ConvertError::Truncated { .. }) && head.len() < mplab_wire::convert::HEADER_LEN, |n| head.len() < n)
}

/// What the CPE makes of the head of the HAG's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    NeedMore,
    /// The server accepted: the reply took `consumed` bytes, the server's
    /// bytes follow.
    Connected { consumed: usize, server: ServerOptions },
    /// The HAG refused or failed: reset the client.
    Refused { code: ErrorCode },
    /// Not a Convert message, or not an answer to a Connect.
    Malformed,
}

pub fn read_reply(head: &[u8]) -> Reply {
    match ConvertMessage::decode_prefix(head) {
        Ok((m, consumed)) => match (m.error_tlv(), m.tlv(mplab_wire::convert::tlv_type::EXTENDED_TCP_HEADER)) {
            (Some(e), _) => Reply::Refused { code: e.code() },
            (None, Some(t)) => match t.returned_options() {
                Some(Ok(o)) => Reply::Connected { consumed, server: ServerOptions { mss: o.mss, wscale: o.wscale, sack_permitted: o.sack_permitted } },
                _ => Reply::Malformed,
            },
            (None, None) => Reply::Malformed,
        },
        Err(e) if incomplete(&e, head) => Reply::NeedMore,
        Err(_) => Reply::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dst() -> SocketAddrV4 {
        SocketAddrV4::new(Ipv4Addr::new(10, 9, 0, 2), 5001)
    }

    #[test]
    fn a_request_is_served_and_the_client_bytes_follow_it() {
        let mut head = request(dst());
        let n = head.len();
        assert_eq!(n, 4 + 20, "fixed header and a base Connect TLV");
        head.extend_from_slice(b"GET /");
        assert_eq!(Policy::default().judge(&head), Decision::Connect { dst: dst(), consumed: n });
        let server = ServerOptions { mss: Some(1460), wscale: Some(7), sack_permitted: true };
        let ok = reply_ok(server);
        assert_eq!(ok.len(), 4 + 4 + 12, "header, TLV header, MSS + SACK-permitted + window scale + NOP");
        assert_eq!(read_reply(&[ok, b"HTTP".to_vec()].concat()), Reply::Connected { consumed: 20, server });
    }

    #[test]
    fn every_prefix_of_a_request_asks_for_more() {
        let head = request(dst());
        for k in 0..head.len() {
            assert_eq!(Policy::default().judge(&head[..k]), Decision::NeedMore, "{k} bytes");
        }
        let ok = reply_ok(ServerOptions::default());
        for k in 0..ok.len() {
            assert_eq!(read_reply(&ok[..k]), Reply::NeedMore);
        }
    }

    fn code_of(d: Decision) -> Option<ErrorCode> {
        match d {
            Decision::Answer { reply, code } => {
                // The answer is a well-formed message carrying that code.
                if let Some(c) = code {
                    assert_eq!(read_reply(&reply), Reply::Refused { code: c });
                }
                code
            }
            other => panic!("expected an answer, got {other:?}"),
        }
    }

    #[test]
    fn bad_magic_version_and_length_get_their_error_tlv() {
        let good = request(dst());
        let mut magic = good.clone();
        magic[2] ^= 0xff;
        assert!(matches!(Policy::default().judge(&magic), Decision::Reset { why: ConvertError::BadMagic(_) }));
        let mut zero = good.clone();
        zero[1] = 0;
        assert!(matches!(Policy::default().judge(&zero), Decision::Reset { why: ConvertError::ZeroTotalLength }));
        let mut version = good.clone();
        version[0] = 7;
        assert_eq!(code_of(Policy::default().judge(&version)), Some(ErrorCode::UNSUPPORTED_VERSION));
        let mut length = good.clone();
        length[1] = 2; // ends inside the Connect TLV
        assert_eq!(code_of(Policy::default().judge(&length)), Some(ErrorCode::MALFORMED_MESSAGE));
        assert_eq!(read_reply(&magic), Reply::Malformed);
    }

    #[test]
    fn a_message_without_connect_or_with_converter_tlvs_is_unsupported() {
        let header_only = [1, 1, 0x22, 0x63];
        assert_eq!(code_of(Policy::default().judge(&header_only)), Some(ErrorCode::MALFORMED_MESSAGE));
        let ext = reply_ok(ServerOptions::default());
        assert_eq!(code_of(Policy::default().judge(&ext)), Some(ErrorCode::UNSUPPORTED_MESSAGE));
        let err = reply_error(ErrorTlv::NetworkFailure { retry_after_s: 0 });
        assert_eq!(code_of(Policy::default().judge(&err)), Some(ErrorCode::UNSUPPORTED_MESSAGE));
        // An unknown TLV type in a client's message.
        let mut unknown = request(dst());
        unknown.extend_from_slice(&[0xc0, 1, 0, 0]);
        unknown[1] += 1;
        assert_eq!(code_of(Policy::default().judge(&unknown)), Some(ErrorCode::UNSUPPORTED_MESSAGE));
    }

    #[test]
    fn an_info_request_is_answered_with_the_extensions() {
        let info = ConvertMessage::info().encode().unwrap();
        let Decision::Answer { reply, code: None } = Policy::default().judge(&info) else { panic!() };
        let m = ConvertMessage::decode(&reply).unwrap();
        assert!(m.tlv(mplab_wire::convert::tlv_type::SUPPORTED_TCP_EXTENSIONS).is_some());
    }

    #[test]
    fn refused_destinations_and_options() {
        let p = Policy { refuse: vec![Prefix::new(Ipv4Addr::new(10, 9, 0, 0), 16)], own: vec![Ipv4Addr::new(10, 1, 0, 2)] };
        assert_eq!(code_of(p.judge(&request(dst()))), Some(ErrorCode::NOT_AUTHORIZED));
        assert_eq!(code_of(p.judge(&request(SocketAddrV4::new(Ipv4Addr::new(10, 1, 0, 2), 80)))), Some(ErrorCode::NOT_AUTHORIZED));
        assert_eq!(code_of(p.judge(&request(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 80)))), Some(ErrorCode::NOT_AUTHORIZED));
        assert_eq!(code_of(p.judge(&request(SocketAddrV4::new(Ipv4Addr::new(10, 8, 0, 2), 0)))), Some(ErrorCode::NOT_AUTHORIZED));
        // Loopback, broadcast and multicast do not even encode: the codec
        // refuses them (6.2.5), and a Connect naming one is malformed.
        let mut lo = request(SocketAddrV4::new(Ipv4Addr::new(10, 8, 0, 2), 80));
        lo[4 + 8..4 + 20].copy_from_slice(&Ipv4Addr::LOCALHOST.to_ipv6_mapped().octets()[4..]);
        assert!(matches!(p.judge(&lo), Decision::Answer { code: Some(_), .. }));
        assert!(matches!(p.judge(&request(SocketAddrV4::new(Ipv4Addr::new(10, 8, 0, 2), 80))), Decision::Connect { .. }));
        // A Connect asking for TCP-AO (kind 29) is refused; MSS is fine.
        let ao = ConvertMessage::connect(SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 8, 0, 2), 80)), &[29, 4, 0, 0]).unwrap().encode().unwrap();
        assert_eq!(code_of(p.judge(&ao)), Some(ErrorCode::UNSUPPORTED_TCP_OPTION));
        let mss = ConvertMessage::connect(SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 8, 0, 2), 80)), &[2, 4, 5, 0xb4]).unwrap().encode().unwrap();
        assert!(matches!(p.judge(&mss), Decision::Connect { .. }));
    }

    proptest::proptest! {
        /// Any bytes at the head of a carrier: no panic; an answer is a
        /// message the CPE reads as a refusal (or, for an Info request,
        /// a well-formed message); a connect takes a whole message.
        #[test]
        fn any_head_gets_a_decision_the_cpe_can_read(head in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64), valid_prefix in proptest::prelude::any::<bool>()) {
            let head = if valid_prefix { [request(dst()), head].concat() } else { head };
            match Policy::default().judge(&head) {
                Decision::Answer { reply, code: Some(code) } => proptest::prop_assert_eq!(read_reply(&reply), Reply::Refused { code }),
                Decision::Answer { reply, code: None } => proptest::prop_assert!(ConvertMessage::decode(&reply).is_ok()),
                Decision::Connect { consumed, .. } => proptest::prop_assert!(consumed <= head.len() && ConvertMessage::decode(&head[..consumed]).is_ok()),
                Decision::NeedMore => proptest::prop_assert!(head.len() < mplab_wire::convert::MAX_MESSAGE_LEN),
                Decision::Reset { .. } => {}
            }
            // And the CPE's reading of any bytes never panics either.
            let _ = read_reply(&head);
        }
    }

    #[test]
    fn the_error_replies_name_their_code() {
        for e in [ErrorTlv::ConnectionReset, ErrorTlv::DestinationUnreachable { icmp_code: 1 }, ErrorTlv::NotAuthorized] {
            assert_eq!(read_reply(&reply_error(e.clone())), Reply::Refused { code: e.code() });
        }
        let mut s = ConverterSummary::default();
        s.count_error(ErrorCode::NOT_AUTHORIZED);
        s.count_error(ErrorCode::NOT_AUTHORIZED);
        assert_eq!(s.errors.get("Not Authorized (32)"), Some(&2));
    }
}
