//! Convert Protocol codec (RFC 8803 section 6): byte-exact vectors built
//! by hand from the RFC's figures, every malformed case with its error,
//! round trips of arbitrary messages, and no panic on arbitrary bytes.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use mplab_wire::convert::{
    tlv_type, Connect, ConvertError, ConvertMessage, ErrorClass, ErrorCode, ErrorTlv, Tlv, MAX_ECHO_LEN,
    MAX_MESSAGE_LEN,
};
use proptest::prelude::*;

fn msg(tlvs: Vec<Tlv>) -> ConvertMessage {
    ConvertMessage::new(tlvs)
}

/// Encodes `m`, checks it against `bytes`, and decodes `bytes` back to `m`.
fn exact(m: &ConvertMessage, bytes: &[u8]) {
    let enc = m.encode().expect("encodes");
    assert_eq!(enc, bytes, "encoding of {m:?}");
    assert_eq!(m.encoded_len(), bytes.len());
    assert_eq!(ConvertMessage::decode(bytes).expect("decodes"), *m);
}

fn err(bytes: &[u8]) -> ConvertError {
    ConvertMessage::decode(bytes).expect_err("must not decode")
}

// ---------------------------------------------------------------- vectors

#[test]
fn info_request() {
    // Figure 13 (fixed header) + Figure 15 (Info TLV).
    let bytes = [
        0x01, // Version 1
        0x02, // Total Length: 2 words, header included
        0x22, 0x63, // Magic Number
        0x01, // Type: Info
        0x01, // Length: 1 word (Table 1)
        0x00, 0x00, // Zero
    ];
    exact(&ConvertMessage::info(), &bytes);
}

#[test]
fn supported_tcp_extensions_reply() {
    // Figure 16: MPTCP (kind 30) and TFO (kind 34).
    let bytes = [
        0x01, 0x03, 0x22, 0x63, // Version 1, Total Length 3 words, Magic
        0x15, // Type: Supported TCP Extensions
        0x02, // Length: 2 words
        0x00, 0x00, // Unassigned
        0x1e, // Kind #1: 30 (MPTCP)
        0x22, // Kind #2: 34 (TFO)
        0x00, 0x00, // padding to the 32-bit boundary
    ];
    exact(&ConvertMessage::supported_extensions(&[30, 34]).unwrap(), &bytes);

    // One kind: three bytes of padding.
    let one = [0x01, 0x03, 0x22, 0x63, 0x15, 0x02, 0x00, 0x00, 0x1e, 0x00, 0x00, 0x00];
    exact(&ConvertMessage::supported_extensions(&[30]).unwrap(), &one);
    // Four kinds: no padding (Length 2 = 4 + 4 bytes).
    let four = [0x01, 0x03, 0x22, 0x63, 0x15, 0x02, 0x00, 0x00, 0x1e, 0x22, 0x04, 0x08];
    exact(&ConvertMessage::supported_extensions(&[30, 34, 4, 8]).unwrap(), &four);
    // None: the TLV is its first word.
    let none = [0x01, 0x02, 0x22, 0x63, 0x15, 0x01, 0x00, 0x00];
    exact(&ConvertMessage::supported_extensions(&[]).unwrap(), &none);
}

const BASE_CONNECT: [u8; 24] = [
    0x01, 0x06, 0x22, 0x63, // Version 1, Total Length 6 words (4 + 20 bytes), Magic
    0x0a, // Type: Connect
    0x05, // Length: 5 words, a Base Connect TLV
    0x01, 0xbb, // Remote Peer Port 443
    0x00, 0x00, 0x00, 0x00, // Remote Peer IP Address: ::ffff:192.0.2.1,
    0x00, 0x00, 0x00, 0x00, // the IPv4-mapped form of 192.0.2.1
    0x00, 0x00, 0xff, 0xff, //
    0xc0, 0x00, 0x02, 0x01, //
];

#[test]
fn base_connect_ipv4_mapped() {
    // Figure 17.
    let target = SocketAddr::from((Ipv4Addr::new(192, 0, 2, 1), 443));
    let m = ConvertMessage::connect(target, &[]).unwrap();
    exact(&m, &BASE_CONNECT);
    let c = m.connect_tlv().unwrap();
    assert_eq!(c.addr, "::ffff:192.0.2.1".parse::<Ipv6Addr>().unwrap());
    assert_eq!(c.socket_addr(), target);
    assert!(!c.is_extended());
}

#[test]
fn extended_connect_ipv6() {
    // Figures 18 and 19: ask for a TFO option without value (the Converter
    // generates it: a cookie request).
    let bytes = [
        0x01, 0x07, 0x22, 0x63, // Version 1, Total Length 7 words (4 + 24), Magic
        0x0a, // Type: Connect
        0x06, // Length: 6 words, an Extended Connect TLV
        0x00, 0x50, // Remote Peer Port 80
        0x20, 0x01, 0x0d, 0xb8, // Remote Peer IP Address 2001:db8::80
        0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x80, //
        0x22, // TCPOpt kind 34 (TFO)
        0x02, // TCPOpt Length 2: no value
        0x00, 0x00, // padding
    ];
    let target: SocketAddr = "[2001:db8::80]:80".parse().unwrap();
    let m = ConvertMessage::connect(target, &[0x22, 0x02]).unwrap();
    exact(&m, &bytes);
    let c = m.connect_tlv().unwrap();
    assert!(c.is_extended());
    assert_eq!(c.options().collect::<Vec<_>>(), vec![(34u8, &[][..])]);
    assert_eq!(c.socket_addr(), target);

    // With a value (copied verbatim by the Converter) that ends in a zero
    // octet, which the option's length keeps apart from the padding.
    let cookie = [0x22, 0x0a, 1, 2, 3, 4, 5, 6, 7, 0];
    let bytes = [
        0x01, 0x09, 0x22, 0x63, // Total Length 9 words (4 + 32)
        0x0a, 0x08, 0x00, 0x50, // Connect, Length 8 words, port 80
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, // 2001:db8::80
        0x22, 0x0a, 1, 2, 3, 4, 5, 6, 7, 0, // TFO, Length 10, 8-byte cookie
        0x00, 0x00, // padding
    ];
    let m = ConvertMessage::connect(target, &cookie).unwrap();
    exact(&m, &bytes);
    assert_eq!(m.connect_tlv().unwrap().options().collect::<Vec<_>>(), vec![(34u8, &cookie[2..])]);
}

#[test]
fn extended_tcp_header_reply() {
    // Figure 20: the SYN+ACK's options, MSS 1460, NOP, NOP, SACK-permitted.
    let bytes = [
        0x01, 0x04, 0x22, 0x63, // Version 1, Total Length 4 words, Magic
        0x14, // Type: Extended TCP Header
        0x03, // Length: 3 words
        0x00, 0x00, // Unassigned
        0x02, 0x04, 0x05, 0xb4, // MSS 1460
        0x01, 0x01, 0x04, 0x02, // NOP, NOP, SACK-permitted
    ];
    let m = ConvertMessage::extended_tcp_header(&bytes[8..]).unwrap();
    exact(&m, &bytes);
    let opts = m.tlvs[0].returned_options().unwrap().unwrap();
    assert_eq!(opts.mss, Some(1460));
    assert!(opts.sack_permitted);
}

#[test]
fn cookie_with_connect() {
    // Figure 21 after Figure 17: two TLVs in one SYN.
    let mut bytes = vec![
        0x01, 0x09, 0x22, 0x63, // Total Length 9 words: 4 + 20 + 12
    ];
    bytes.extend_from_slice(&BASE_CONNECT[4..]);
    bytes.extend_from_slice(&[
        0x16, // Type: Cookie
        0x03, // Length: 3 words
        0x00, 0x00, // Zero
        0xc0, 0x0c, 0x1e, 0x00, // Opaque Cookie, 8 bytes
        0xde, 0xad, 0xbe, 0xef, //
    ]);
    let mut m = ConvertMessage::connect(SocketAddr::from((Ipv4Addr::new(192, 0, 2, 1), 443)), &[]).unwrap();
    m.tlvs.push(Tlv::Cookie { cookie: bytes[28..].to_vec() });
    exact(&m, &bytes);
}

#[test]
fn error_tlvs() {
    // Figure 22, one word each: Type 0x1E, Length 1, Error Code, Value.
    let cases: [(ErrorTlv, [u8; 4]); 8] = [
        (ErrorTlv::UnsupportedVersion { versions: vec![1] }, [0x1e, 0x01, 0x00, 0x01]),
        (ErrorTlv::NotAuthorized, [0x1e, 0x01, 0x20, 0x00]),
        (ErrorTlv::UnsupportedTcpOption { kinds: vec![34] }, [0x1e, 0x01, 0x21, 0x22]),
        (ErrorTlv::ResourceExceeded { retry_after_s: 60 }, [0x1e, 0x01, 0x40, 0x3c]),
        (ErrorTlv::NetworkFailure { retry_after_s: 0 }, [0x1e, 0x01, 0x41, 0x00]),
        (ErrorTlv::ConnectionReset, [0x1e, 0x01, 0x60, 0x00]),
        (ErrorTlv::DestinationUnreachable { icmp_code: 3 }, [0x1e, 0x01, 0x61, 0x03]),
        (ErrorTlv::MalformedMessage { echo: vec![] }, [0x1e, 0x01, 0x01, 0x00]),
    ];
    for (e, tlv) in cases {
        let mut bytes = vec![0x01, 0x02, 0x22, 0x63]; // Total Length 2 words
        bytes.extend_from_slice(&tlv);
        exact(&msg(vec![Tlv::Error(e.clone())]), &bytes);
        // The same from the code and the Value field.
        let m = ConvertMessage::error(e.code(), &tlv[3..]).unwrap();
        assert_eq!(m, msg(vec![Tlv::Error(e)]));
    }

    // Lists longer than one octet are padded to the word boundary.
    let versions = [
        0x01, 0x03, 0x22, 0x63, // Total Length 3 words
        0x1e, 0x02, // Error, Length 2 words
        0x00, // Unsupported Version
        0x01, 0x02, // versions 1 and 2
        0x00, 0x00, 0x00, // padding
    ];
    exact(&msg(vec![Tlv::Error(ErrorTlv::UnsupportedVersion { versions: vec![1, 2] })]), &versions);
    let kinds = [
        0x01, 0x03, 0x22, 0x63, // Total Length 3 words
        0x1e, 0x02, 0x21, // Error, Length 2, Unsupported TCP Option
        0x22, 0x1d, 0x08, 0x05, 0x00, // kinds 34, 29, 8, 5, padding
    ];
    exact(&msg(vec![Tlv::Error(ErrorTlv::UnsupportedTcpOption { kinds: vec![34, 29, 8, 5] })]), &kinds);
}

#[test]
fn missing_cookie_error() {
    // 6.2.8: the first Value octet is zero, the cookie follows.
    let bytes = [
        0x01, 0x04, 0x22, 0x63, // Total Length 4 words
        0x1e, // Type: Error
        0x03, // Length: 3 words
        0x03, // Error Code 3: Missing Cookie
        0x00, // first Value octet: zero
        0xc0, 0xff, 0xee, 0x00, // the Cookie computed for this Client
        0x11, 0x22, 0x33, 0x44, //
    ];
    let m = msg(vec![Tlv::Error(ErrorTlv::MissingCookie { cookie: bytes[8..].to_vec() })]);
    exact(&m, &bytes);
    assert_eq!(ConvertMessage::error(ErrorCode::MISSING_COOKIE, &bytes[7..]).unwrap(), m);
}

#[test]
fn malformed_message_echoes_the_request() {
    // A Connect to a loopback address (6.2.5) is answered with Malformed
    // Message echoing it after the Zeros octet (Figure 23).
    let mut request = BASE_CONNECT;
    request[20..24].copy_from_slice(&[127, 0, 0, 1]); // ::ffff:127.0.0.1
    let e = err(&request);
    assert_eq!(e, ConvertError::ForbiddenAddress("::ffff:127.0.0.1".parse().unwrap()));
    assert_eq!(e.reply_code(), Some(ErrorCode::MALFORMED_MESSAGE));

    let mut bytes = vec![
        0x01, 0x08, 0x22, 0x63, // Total Length 8 words: 4 + 4 + 24
        0x1e, // Type: Error
        0x07, // Length: 7 words
        0x01, // Error Code 1: Malformed Message
        0x00, // Zeros
    ];
    bytes.extend_from_slice(&request); // the echo keeps its alignment
    let reply = ConvertMessage::reply_to(&e, &request).unwrap();
    exact(&reply, &bytes);

    // A longer or unaligned echo is padded and cut to fit one message.
    assert_eq!(ErrorTlv::malformed(&[1, 2, 3]), ErrorTlv::MalformedMessage { echo: vec![1, 2, 3, 0] });
    let big = ConvertMessage::new(vec![Tlv::Error(ErrorTlv::unsupported_message(&[7; 2000]))]);
    assert_eq!(big.encode().unwrap().len(), MAX_MESSAGE_LEN);
    assert_eq!(MAX_ECHO_LEN, 1012);
}

#[test]
fn unknown_tlvs_round_trip() {
    // Private-use type 0xc0 (IANA), 6 bytes of value, and unassigned 0x02.
    let bytes = [
        0x01, 0x05, 0x22, 0x63, // Total Length 5 words
        0xc0, 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, // type 0xc0, 2 words
        0x02, 0x01, 0x12, 0x34, // type 0x02, 1 word
        0x01, 0x01, 0x00, 0x00, // and an Info TLV after them
    ];
    let m = msg(vec![
        Tlv::Unknown { tlv_type: 0xc0, value: bytes[6..12].to_vec() },
        Tlv::Unknown { tlv_type: 0x02, value: vec![0x12, 0x34] },
        Tlv::Info,
    ]);
    exact(&m, &bytes);
    // And an unknown error code, its Value kept whole.
    let bytes = [0x01, 0x03, 0x22, 0x63, 0x1e, 0x02, 0x7f, 9, 8, 7, 6, 5];
    exact(&msg(vec![Tlv::Error(ErrorTlv::Other { code: 0x7f, value: vec![9, 8, 7, 6, 5] })]), &bytes);
}

#[test]
fn message_at_the_start_of_a_stream() {
    // 6: the Convert message first, the application's bytes right after.
    let mut syn = BASE_CONNECT.to_vec();
    syn.extend_from_slice(b"GET / HTTP/1.1\r\n");
    let (m, used) = ConvertMessage::decode_prefix(&syn).unwrap();
    assert_eq!(used, 24);
    assert_eq!(&syn[used..], b"GET / HTTP/1.1\r\n");
    assert_eq!(m.connect_tlv().unwrap().port, 443);
    assert_eq!(ConvertMessage::message_len(&syn), Ok(24));
    // decode wants the message alone.
    assert_eq!(err(&syn), ConvertError::LengthMismatch { total: 24, have: 40 });
    // Appending after existing bytes.
    let mut out = b"xx".to_vec();
    assert_eq!(m.encode_to(&mut out), Ok(24));
    assert_eq!(&out[2..], &BASE_CONNECT);
}

#[test]
fn largest_message() {
    // Total Length 255 words: 4 + 4 + 1012 bytes of cookie.
    let m = msg(vec![Tlv::Cookie { cookie: vec![0x5a; 1012] }]);
    let b = m.encode().unwrap();
    assert_eq!(b.len(), 1020);
    assert_eq!(&b[..8], &[0x01, 0xff, 0x22, 0x63, 0x16, 0xfe, 0x00, 0x00]);
    assert_eq!(ConvertMessage::decode(&b).unwrap(), m);
    let m = msg(vec![Tlv::Cookie { cookie: vec![0x5a; 1016] }]);
    assert_eq!(m.encode(), Err(ConvertError::TooLong(1024)));
}

#[test]
fn error_code_names_and_classes() {
    let table = [
        (0, "Unsupported Version", ErrorClass::MessageValidation),
        (1, "Malformed Message", ErrorClass::MessageValidation),
        (2, "Unsupported Message", ErrorClass::MessageValidation),
        (3, "Missing Cookie", ErrorClass::MessageValidation),
        (32, "Not Authorized", ErrorClass::ClientSide),
        (33, "Unsupported TCP Option", ErrorClass::ClientSide),
        (64, "Resource Exceeded", ErrorClass::ConverterSide),
        (65, "Network Failure", ErrorClass::ConverterSide),
        (96, "Connection Reset", ErrorClass::DestinationServer),
        (97, "Destination Unreachable", ErrorClass::DestinationServer),
    ];
    for (code, name, class) in table {
        let c = ErrorCode(code);
        assert_eq!(c.name(), Some(name));
        assert_eq!(c.class(), Some(class));
        assert!(c.is_known());
    }
    let known = table.map(|t| t.0);
    assert_eq!((0..=255u8).filter(|c| ErrorCode(*c).is_known()).count(), known.len());
    assert_eq!(ErrorCode(98).name(), None);
    assert_eq!(ErrorCode(128).class(), None);
    assert_eq!(ErrorCode::UNSUPPORTED_TCP_OPTION.to_string(), "Unsupported TCP Option (33)");
}

// ---------------------------------------------------------------- malformed

#[test]
fn header_errors() {
    assert_eq!(err(&[]), ConvertError::Truncated { need: 4, have: 0 });
    assert_eq!(err(&[0x01, 0x02, 0x22]), ConvertError::Truncated { need: 4, have: 3 });
    // Total Length 2 words, 6 bytes there.
    assert_eq!(err(&[0x01, 0x02, 0x22, 0x63, 0x01, 0x01]), ConvertError::Truncated { need: 8, have: 6 });
    assert_eq!(err(&[0x01, 0x00, 0x22, 0x63]), ConvertError::ZeroTotalLength);
    assert_eq!(err(&[0x01, 0x02, 0x63, 0x22, 0x01, 0x01, 0, 0]), ConvertError::BadMagic(0x6322));
    assert_eq!(err(&[0x00, 0x02, 0x22, 0x63, 0x01, 0x01, 0, 0]), ConvertError::UnsupportedVersion(0));
    assert_eq!(err(&[0x02, 0x02, 0x22, 0x63, 0x01, 0x01, 0, 0]), ConvertError::UnsupportedVersion(2));
    // The magic is checked before the version: not Convert at all.
    assert_eq!(err(&[0x02, 0x02, 0x22, 0x64]), ConvertError::BadMagic(0x2264));
    assert_eq!(err(&[0x01, 0x01, 0x22, 0x63]), ConvertError::NoTlvs);
    assert_eq!(
        err(&[0x01, 0x02, 0x22, 0x63, 0x01, 0x01, 0, 0, 0]),
        ConvertError::LengthMismatch { total: 8, have: 9 }
    );
}

#[test]
fn replies_to_header_errors() {
    assert_eq!(ConvertError::Truncated { need: 8, have: 6 }.reply_code(), None);
    assert_eq!(ConvertError::ZeroTotalLength.reply_code(), None);
    assert_eq!(ConvertError::BadMagic(0x4745).reply_code(), None);
    assert_eq!(ConvertMessage::reply_to(&err(b"GET / HTTP/1.1\r\n"), b"GET / HTTP/1.1\r\n"), None);
    assert_eq!(ConvertError::NoTlvs.reply_code(), Some(ErrorCode::MALFORMED_MESSAGE));
    let v2 = [0x02, 0x02, 0x22, 0x63, 0x01, 0x01, 0, 0];
    let e = err(&v2);
    assert_eq!(e.reply_code(), Some(ErrorCode::UNSUPPORTED_VERSION));
    let reply = ConvertMessage::reply_to(&e, &v2).unwrap().encode().unwrap();
    assert_eq!(reply, [0x01, 0x02, 0x22, 0x63, 0x1e, 0x01, 0x00, 0x01]);
    assert_eq!(ConvertMessage::reply_to(&ConvertError::ZeroTotalLength, &[1, 0, 0x22, 0x63]), None);
}

#[test]
fn tlv_length_errors() {
    // Length zero.
    assert_eq!(err(&[1, 2, 0x22, 0x63, 0x01, 0x00, 0, 0]), ConvertError::BadTlvLength { tlv_type: 1, len: 0 });
    // Past the Total Length (2 words of TLV in a 1-word body) ...
    assert_eq!(err(&[1, 2, 0x22, 0x63, 0x15, 0x02, 0, 0]), ConvertError::BadTlvLength { tlv_type: 0x15, len: 2 });
    // ... even when the stream has the bytes: they are application data.
    let stream = [1, 2, 0x22, 0x63, 0x15, 0x02, 0, 0, 0x1e, 0, 0, 0];
    assert_eq!(
        ConvertMessage::decode_prefix(&stream),
        Err(ConvertError::BadTlvLength { tlv_type: 0x15, len: 2 })
    );
    // Past the buffer, the Total Length saying so too.
    assert_eq!(err(&[1, 3, 0x22, 0x63, 0x16, 0x09, 0, 0, 0, 0, 0, 0]), ConvertError::BadTlvLength { tlv_type: 0x16, len: 9 });
    // Info is one word (Table 1).
    assert_eq!(err(&[1, 3, 0x22, 0x63, 0x01, 0x02, 0, 0, 0, 0, 0, 0]), ConvertError::BadTlvLength { tlv_type: 1, len: 2 });
    // A Connect TLV is at least 5 words.
    let mut short = BASE_CONNECT[..20].to_vec();
    short[1] = 5;
    short[5] = 4;
    assert_eq!(err(&short), ConvertError::BadTlvLength { tlv_type: 0x0a, len: 4 });
}

#[test]
fn tlv_type_errors() {
    let e = err(&[1, 2, 0x22, 0x63, 0x00, 0x01, 0, 0]);
    assert_eq!(e, ConvertError::ReservedTlvType);
    assert_eq!(e.reply_code(), Some(ErrorCode::UNSUPPORTED_MESSAGE));
    assert_eq!(err(&[1, 3, 0x22, 0x63, 0x01, 0x01, 0, 0, 0x01, 0x01, 0, 0]), ConvertError::DuplicateTlv(1));
    assert_eq!(err(&[1, 3, 0x22, 0x63, 0xc0, 0x01, 0, 0, 0xc0, 0x01, 0, 0]), ConvertError::DuplicateTlv(0xc0));
}

/// A Connect TLV message to 2001:db8::1 port 80 whose TCP Options field
/// (padding included) is `area`.
fn connect_with_area(area: &[u8]) -> Vec<u8> {
    assert!(area.len().is_multiple_of(4));
    let words = 5 + area.len() / 4;
    let mut b = vec![1, (words + 1) as u8, 0x22, 0x63, 0x0a, words as u8, 0x00, 0x50];
    b.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
    b.extend_from_slice(area);
    b
}

#[test]
fn connect_option_errors() {
    let ok = connect_with_area(&[0x22, 0x02, 0x00, 0x00]);
    assert!(ConvertMessage::decode(&ok).is_ok());
    let kind = |kind| ConvertError::ForbiddenKind { tlv_type: tlv_type::CONNECT, kind };
    // NOP (and EOL where an option is expected when encoding) are not allowed.
    assert_eq!(err(&connect_with_area(&[0x01, 0x22, 0x02, 0x00])), kind(1));
    // Option length below 2, overrunning, or missing.
    assert_eq!(err(&connect_with_area(&[0x22, 0x01, 0x00, 0x00])), ConvertError::BadTcpOption { kind: 34, len: 1 });
    assert_eq!(err(&connect_with_area(&[0x22, 0x0a, 0x00, 0x00])), ConvertError::BadTcpOption { kind: 34, len: 10 });
    assert_eq!(err(&connect_with_area(&[0x08, 0x03, 0x00, 0x22])), ConvertError::BadTcpOption { kind: 34, len: 0 });
    // Padding must be zeros, and less than a word.
    let pad = ConvertError::BadPadding { tlv_type: tlv_type::CONNECT };
    assert_eq!(err(&connect_with_area(&[0x22, 0x02, 0x00, 0x01])), pad);
    assert_eq!(err(&connect_with_area(&[0x00, 0x00, 0x00, 0x00])), pad);
    assert_eq!(err(&connect_with_area(&[0x22, 0x02, 0, 0, 0, 0, 0, 0])), pad);

    // The encoder refuses the same.
    let to: SocketAddr = "[2001:db8::1]:80".parse().unwrap();
    assert_eq!(ConvertMessage::connect(to, &[0x01, 0x22, 0x02]), Err(kind(1)));
    assert_eq!(ConvertMessage::connect(to, &[0x00, 0x22, 0x02]), Err(kind(0)));
    assert_eq!(ConvertMessage::connect(to, &[0x22, 0x02, 0x00]), Err(kind(0)));
    assert_eq!(ConvertMessage::connect(to, &[0x22]), Err(ConvertError::BadTcpOption { kind: 34, len: 0 }));
    assert_eq!(ConvertMessage::connect(to, &[0x22, 0x03]), Err(ConvertError::BadTcpOption { kind: 34, len: 3 }));
    let bad = msg(vec![Tlv::Connect(Connect { port: 80, addr: "2001:db8::1".parse().unwrap(), tcp_options: vec![1] })]);
    assert_eq!(bad.encode(), Err(kind(1)));
}

#[test]
fn connect_address_errors() {
    let forbidden: [SocketAddr; 7] = [
        "224.0.0.1:80".parse().unwrap(),       // IPv4 multicast
        "239.1.2.3:80".parse().unwrap(),       // IPv4 multicast
        "255.255.255.255:80".parse().unwrap(), // limited broadcast
        "127.0.0.1:80".parse().unwrap(),       // host loopback
        "127.9.9.9:80".parse().unwrap(),       // host loopback (127/8)
        "[::1]:80".parse().unwrap(),           // IPv6 loopback
        "[ff02::1]:80".parse().unwrap(),       // IPv6 multicast
    ];
    for a in forbidden {
        let e = ConvertMessage::connect(a, &[]).unwrap_err();
        assert!(matches!(e, ConvertError::ForbiddenAddress(_)), "{a}: {e:?}");
        // On the wire too.
        let mut b = BASE_CONNECT;
        let ip = match a {
            SocketAddr::V4(v) => v.ip().to_ipv6_mapped(),
            SocketAddr::V6(v) => *v.ip(),
        };
        b[8..24].copy_from_slice(&ip.octets());
        assert_eq!(err(&b), ConvertError::ForbiddenAddress(ip), "{a}");
    }
    // Not listed in 6.2.5, so allowed: unspecified, link-local, private.
    for a in ["0.0.0.0:1", "[::]:1", "[fe80::1]:1", "10.0.0.1:1", "192.168.1.255:1"] {
        assert!(ConvertMessage::connect(a.parse().unwrap(), &[]).is_ok(), "{a}");
    }
}

#[test]
fn supported_extensions_errors() {
    let t = tlv_type::SUPPORTED_TCP_EXTENSIONS;
    // EOL, NOP, MSS and WS must not be announced (6.2.4, 7.1, 7.2).
    for k in 1..=3u8 {
        assert_eq!(ConvertMessage::supported_extensions(&[30, k]), Err(ConvertError::ForbiddenKind { tlv_type: t, kind: k }));
        assert_eq!(err(&[1, 3, 0x22, 0x63, t, 2, 0, 0, 30, k, 0, 0]), ConvertError::ForbiddenKind { tlv_type: t, kind: k });
    }
    assert_eq!(ConvertMessage::supported_extensions(&[0, 30]), Err(ConvertError::ForbiddenKind { tlv_type: t, kind: 0 }));
    // A zero before the last kind is EOL, not padding.
    assert_eq!(err(&[1, 3, 0x22, 0x63, t, 2, 0, 0, 30, 0, 34, 0]), ConvertError::ForbiddenKind { tlv_type: t, kind: 0 });
    // A whole word of padding.
    assert_eq!(
        err(&[1, 4, 0x22, 0x63, t, 3, 0, 0, 30, 0, 0, 0, 0, 0, 0, 0]),
        ConvertError::BadPadding { tlv_type: t }
    );
    assert_eq!(err(&[1, 3, 0x22, 0x63, t, 2, 0, 0, 0, 0, 0, 0]), ConvertError::BadPadding { tlv_type: t });
}

#[test]
fn error_tlv_errors() {
    let e = |code: u8, value: &[u8]| {
        let mut b = vec![1, 0, 0x22, 0x63, 0x1e, 0, code];
        b.extend_from_slice(value);
        b[1] = (b.len() / 4) as u8;
        b[5] = b[1] - 1;
        err(&b)
    };
    // One-octet Values in a longer TLV.
    for code in [32, 64, 65, 96, 97] {
        assert_eq!(e(code, &[0, 0, 0, 0, 0]), ConvertError::BadErrorValue { code });
    }
    // Empty or zero-holding lists.
    assert_eq!(e(0, &[0]), ConvertError::BadErrorValue { code: 0 });
    assert_eq!(e(33, &[0]), ConvertError::BadErrorValue { code: 33 });
    assert_eq!(e(0, &[1, 0, 2, 0, 0]), ConvertError::BadErrorValue { code: 0 });
    assert_eq!(e(33, &[0, 34, 0, 0, 0]), ConvertError::BadErrorValue { code: 33 });
    // Too much padding.
    assert_eq!(e(0, &[1, 0, 0, 0, 0]), ConvertError::BadPadding { tlv_type: 0x1e });
    // The builder applies the same rules.
    assert_eq!(ConvertMessage::error(ErrorCode::NOT_AUTHORIZED, &[0, 0]), Err(ConvertError::BadErrorValue { code: 32 }));
    assert_eq!(ConvertMessage::error(ErrorCode::UNSUPPORTED_VERSION, &[]), Err(ConvertError::BadErrorValue { code: 0 }));
    // Not Authorized / Connection Reset: a non-zero Value is ignored.
    assert_eq!(
        ConvertMessage::decode(&[1, 2, 0x22, 0x63, 0x1e, 1, 96, 7]).unwrap(),
        msg(vec![Tlv::Error(ErrorTlv::ConnectionReset)])
    );
}

#[test]
fn encode_errors() {
    assert_eq!(msg(vec![]).encode(), Err(ConvertError::NoTlvs));
    assert_eq!(msg(vec![Tlv::Info, Tlv::Info]).encode(), Err(ConvertError::DuplicateTlv(1)));
    assert_eq!(
        msg(vec![Tlv::Cookie { cookie: vec![1, 2, 3, 4, 5] }]).encode(),
        Err(ConvertError::Unaligned { tlv_type: 0x16, len: 5 })
    );
    assert_eq!(
        msg(vec![Tlv::ExtendedTcpHeader { options: vec![1] }]).encode(),
        Err(ConvertError::Unaligned { tlv_type: 0x14, len: 1 })
    );
    assert_eq!(
        msg(vec![Tlv::Error(ErrorTlv::MissingCookie { cookie: vec![1, 2] })]).encode(),
        Err(ConvertError::Unaligned { tlv_type: 0x1e, len: 2 })
    );
    assert_eq!(
        msg(vec![Tlv::Error(ErrorTlv::Other { code: 200, value: vec![1, 2] })]).encode(),
        Err(ConvertError::Unaligned { tlv_type: 0x1e, len: 2 })
    );
    assert_eq!(
        msg(vec![Tlv::Error(ErrorTlv::Other { code: 1, value: vec![0] })]).encode(),
        Err(ConvertError::KnownCodeAsOther(1))
    );
    assert_eq!(
        msg(vec![Tlv::Unknown { tlv_type: 0x55, value: vec![1] }]).encode(),
        Err(ConvertError::Unaligned { tlv_type: 0x55, len: 1 })
    );
    assert_eq!(msg(vec![Tlv::Unknown { tlv_type: 1, value: vec![0, 0] }]).encode(), Err(ConvertError::KnownTlvAsUnknown(1)));
    assert_eq!(msg(vec![Tlv::Unknown { tlv_type: 0, value: vec![0, 0] }]).encode(), Err(ConvertError::ReservedTlvType));
    // A failed encode leaves the output as it was.
    let mut out = vec![9];
    assert!(msg(vec![Tlv::Info, Tlv::Info]).encode_to(&mut out).is_err());
    assert_eq!(out, [9]);
}

// ---------------------------------------------------------------- properties

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

/// Whole 32-bit words.
fn words(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<[u8; 4]>(), 0..max).prop_map(|w| w.concat())
}

fn tcp_options() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec((2u8..=255, bytes(10)), 0..4).prop_map(|os| {
        os.into_iter().flat_map(|(k, v)| [vec![k, (v.len() + 2) as u8], v].concat()).collect()
    })
}

fn connect() -> impl Strategy<Value = Connect> {
    let ip = prop_oneof![
        any::<[u8; 4]>().prop_map(|a| Ipv4Addr::from(a).to_ipv6_mapped()),
        any::<[u8; 16]>().prop_map(Ipv6Addr::from),
    ];
    (any::<u16>(), ip, tcp_options())
        .prop_filter_map("forbidden address", |(port, ip, opts)| Connect::new(SocketAddr::from((ip, port)), &opts).ok())
}

fn list(min: u8) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(min..=255u8, 1..9)
}

fn error_tlv() -> impl Strategy<Value = ErrorTlv> {
    prop_oneof![
        list(1).prop_map(|versions| ErrorTlv::UnsupportedVersion { versions }),
        words(12).prop_map(|echo| ErrorTlv::MalformedMessage { echo }),
        words(12).prop_map(|echo| ErrorTlv::UnsupportedMessage { echo }),
        words(5).prop_map(|cookie| ErrorTlv::MissingCookie { cookie }),
        Just(ErrorTlv::NotAuthorized),
        list(1).prop_map(|kinds| ErrorTlv::UnsupportedTcpOption { kinds }),
        any::<u8>().prop_map(|retry_after_s| ErrorTlv::ResourceExceeded { retry_after_s }),
        any::<u8>().prop_map(|retry_after_s| ErrorTlv::NetworkFailure { retry_after_s }),
        Just(ErrorTlv::ConnectionReset),
        any::<u8>().prop_map(|icmp_code| ErrorTlv::DestinationUnreachable { icmp_code }),
        (any::<u8>().prop_filter("unknown code", |c| !ErrorCode(*c).is_known()), any::<u8>(), words(4)).prop_map(
            |(code, first, rest)| ErrorTlv::Other { code, value: [vec![first], rest].concat() }
        ),
    ]
}

fn tlv() -> impl Strategy<Value = Tlv> {
    prop_oneof![
        Just(Tlv::Info),
        connect().prop_map(Tlv::Connect),
        words(10).prop_map(|options| Tlv::ExtendedTcpHeader { options }),
        proptest::collection::vec(4u8..=255, 0..12).prop_map(|kinds| Tlv::SupportedTcpExtensions { kinds }),
        words(10).prop_map(|cookie| Tlv::Cookie { cookie }),
        error_tlv().prop_map(Tlv::Error),
        (any::<u8>().prop_filter("unknown type", |t| *t != 0 && !Tlv::is_known_type(*t)), any::<[u8; 2]>(), words(6))
            .prop_map(|(tlv_type, head, rest)| Tlv::Unknown { tlv_type, value: [head.to_vec(), rest].concat() }),
    ]
}

/// One to six TLVs, each type once, within the 1020-byte limit.
fn message() -> impl Strategy<Value = ConvertMessage> {
    proptest::collection::vec(tlv(), 1..7)
        .prop_map(|ts| {
            let mut tlvs: Vec<Tlv> = Vec::new();
            for t in ts {
                if tlvs.iter().all(|x| x.tlv_type() != t.tlv_type()) {
                    tlvs.push(t);
                }
            }
            ConvertMessage::new(tlvs)
        })
        .prop_filter("fits in 1020 bytes", |m| m.encoded_len() <= MAX_MESSAGE_LEN)
}

/// A TLV type, the modelled ones (and the reserved 0) more often.
fn tlv_type_any() -> impl Strategy<Value = u8> {
    prop_oneof![
        3 => prop::sample::select(vec![0u8, 0x01, 0x0a, 0x14, 0x15, 0x16, 0x1e]),
        1 => any::<u8>(),
    ]
}

/// Decodes `b` from the front of a stream; when that works, the message
/// re-encodes to as many bytes and decodes back to itself.
fn decode_reencode(b: &[u8]) {
    match ConvertMessage::decode_prefix(b) {
        Ok((m, used)) => {
            let enc = m.encode().expect("a decoded message re-encodes");
            assert_eq!(enc.len(), used);
            assert_eq!(m.encoded_len(), used);
            assert_eq!(ConvertMessage::decode(&enc).expect("re-encoded message decodes"), m);
            // Only fields ignored on receipt may differ.
            assert_eq!(enc[..4], b[..4]);
        }
        Err(e) => {
            if let Some(reply) = ConvertMessage::reply_to(&e, b) {
                let r = reply.encode().expect("a reply encodes");
                assert_eq!(ConvertMessage::decode(&r).unwrap(), reply);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn messages_round_trip(m in message(), tail in bytes(20)) {
        let b = m.encode().unwrap();
        prop_assert_eq!(b.len(), m.encoded_len());
        prop_assert!(b.len().is_multiple_of(4));
        prop_assert_eq!(b[1] as usize * 4, b.len());
        prop_assert_eq!(&ConvertMessage::decode(&b).unwrap(), &m);
        // What follows in the stream is left alone.
        let mut stream = b.clone();
        stream.extend_from_slice(&tail);
        let (back, used) = ConvertMessage::decode_prefix(&stream).unwrap();
        prop_assert_eq!(back, m);
        prop_assert_eq!(used, b.len());
    }

    #[test]
    fn canonical_bytes_round_trip(m in message()) {
        // Bytes the encoder wrote re-encode to themselves.
        let b = m.encode().unwrap();
        prop_assert_eq!(ConvertMessage::decode(&b).unwrap().encode().unwrap(), b);
    }

    #[test]
    fn arbitrary_bytes_do_not_panic(b in bytes(1100)) {
        decode_reencode(&b);
    }

    #[test]
    fn arbitrary_bodies_do_not_panic(words in 0u8..=255, body in bytes(1100)) {
        // Past the header checks, into the TLV walk.
        let b = [vec![0x01, words, 0x22, 0x63], body].concat();
        decode_reencode(&b);
    }

    #[test]
    fn arbitrary_sized_bodies_do_not_panic(body in (1usize..=255).prop_flat_map(|w| proptest::collection::vec(any::<u8>(), (w - 1) * 4))) {
        // A Total Length that matches the buffer.
        let b = [vec![0x01, (1 + body.len() / 4) as u8, 0x22, 0x63], body].concat();
        decode_reencode(&b);
    }

    #[test]
    fn arbitrary_tlvs_do_not_panic(tlvs in proptest::collection::vec((tlv_type_any(), 1u8..8, bytes(30)), 1..6)) {
        // Well-framed TLVs with arbitrary contents, mostly of the known types.
        let mut body = Vec::new();
        for (t, w, v) in tlvs {
            let mut x = vec![t, w];
            x.extend_from_slice(&v);
            x.resize(w as usize * 4, 0);
            body.extend_from_slice(&x);
        }
        let b = [vec![0x01, (1 + body.len() / 4) as u8, 0x22, 0x63], body].concat();
        decode_reencode(&b);
    }

    #[test]
    fn mutated_messages_do_not_panic(m in message(), at in any::<prop::sample::Index>(), x in any::<u8>()) {
        let mut b = m.encode().unwrap();
        let i = at.index(b.len());
        b[i] = x;
        decode_reencode(&b);
    }
}
