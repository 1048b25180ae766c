//! SCTP codec: round trips of every chunk type and of whole packets,
//! no panic on arbitrary bytes, and hand-checked vectors (CRC32c and its
//! byte order, lengths, padding, malformed input).

use std::net::{Ipv4Addr, Ipv6Addr};

use mplab_wire::sctp::chunk::{ctype, Chunk, DataChunk, GapBlock, InitChunk, SackChunk};
use mplab_wire::sctp::crc32c::{crc32c, packet_checksum};
use mplab_wire::sctp::param::{ErrorCause, InitParam, UnknownAction};
use mplab_wire::sctp::{Packet, SctpError};
use proptest::prelude::*;

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

fn init_param() -> impl Strategy<Value = InitParam> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|a| InitParam::Ipv4(Ipv4Addr::from(a))),
        any::<[u8; 16]>().prop_map(|a| InitParam::Ipv6(Ipv6Addr::from(a))),
        bytes(64).prop_map(InitParam::StateCookie),
        bytes(16).prop_map(InitParam::UnrecognizedParameter),
        any::<u32>().prop_map(InitParam::CookiePreservative),
        proptest::collection::vec(any::<u16>(), 0..5).prop_map(InitParam::SupportedAddressTypes),
        bytes(7).prop_map(InitParam::SupportedExtensions),
        (any::<u16>().prop_filter("unknown", |t| !InitParam::is_known_type(*t)), bytes(13))
            .prop_map(|(param_type, value)| InitParam::Unknown { param_type, value }),
    ]
}

fn cause() -> impl Strategy<Value = ErrorCause> {
    prop_oneof![
        any::<u16>().prop_map(|stream_id| ErrorCause::InvalidStreamId { stream_id }),
        proptest::collection::vec(any::<u16>(), 0..4).prop_map(|types| ErrorCause::MissingMandatoryParameter { types }),
        any::<u32>().prop_map(|staleness_us| ErrorCause::StaleCookie { staleness_us }),
        Just(ErrorCause::OutOfResource),
        bytes(20).prop_map(|chunk| ErrorCause::UnrecognizedChunkType { chunk }),
        bytes(20).prop_map(|params| ErrorCause::UnrecognizedParameters { params }),
        any::<u32>().prop_map(|tsn| ErrorCause::NoUserData { tsn }),
        bytes(9).prop_map(|reason| ErrorCause::UserInitiatedAbort { reason }),
        bytes(9).prop_map(|info| ErrorCause::ProtocolViolation { info }),
        (any::<u16>().prop_filter("unknown", |c| !ErrorCause::is_known_code(*c)), bytes(11))
            .prop_map(|(code, info)| ErrorCause::Other { code, info }),
    ]
}

fn gaps(n: usize) -> impl Strategy<Value = Vec<GapBlock>> {
    proptest::collection::vec((any::<u16>(), any::<u16>()).prop_map(|(start, end)| GapBlock { start, end }), 0..n)
}

fn init() -> impl Strategy<Value = InitChunk> {
    (any::<u32>(), any::<u32>(), any::<u16>(), any::<u16>(), any::<u32>(), proptest::collection::vec(init_param(), 0..6))
        .prop_map(|(initiate_tag, a_rwnd, outbound_streams, inbound_streams, initial_tsn, params)| InitChunk {
            initiate_tag,
            a_rwnd,
            outbound_streams,
            inbound_streams,
            initial_tsn,
            params,
        })
}

pub fn chunk() -> impl Strategy<Value = Chunk> {
    prop_oneof![
        (any::<u8>(), any::<u32>(), any::<u16>(), any::<u16>(), any::<u32>(), bytes(100)).prop_map(
            |(flags, tsn, stream_id, ssn, ppid, payload)| Chunk::Data(DataChunk { flags, tsn, stream_id, ssn, ppid, payload })
        ),
        init().prop_map(Chunk::Init),
        init().prop_map(Chunk::InitAck),
        (any::<u8>(), any::<u32>(), any::<u32>(), gaps(6), proptest::option::of(gaps(6)), proptest::collection::vec(any::<u32>(), 0..5))
            .prop_map(|(flags, cum_tsn_ack, a_rwnd, gaps, nr_gaps, dup_tsns)| Chunk::Sack(SackChunk {
                flags,
                cum_tsn_ack,
                a_rwnd,
                gaps,
                nr_gaps,
                dup_tsns
            })),
        bytes(40).prop_map(|info| Chunk::Heartbeat { info }),
        bytes(40).prop_map(|info| Chunk::HeartbeatAck { info }),
        (any::<bool>(), proptest::collection::vec(cause(), 0..4)).prop_map(|(t_bit, causes)| Chunk::Abort { t_bit, causes }),
        any::<u32>().prop_map(|cum_tsn_ack| Chunk::Shutdown { cum_tsn_ack }),
        Just(Chunk::ShutdownAck),
        any::<bool>().prop_map(|t_bit| Chunk::ShutdownComplete { t_bit }),
        proptest::collection::vec(cause(), 0..4).prop_map(|causes| Chunk::Error { causes }),
        bytes(80).prop_map(|cookie| Chunk::CookieEcho { cookie }),
        Just(Chunk::CookieAck),
        (any::<u8>().prop_filter("unknown", |t| !Chunk::is_known_type(*t)), any::<u8>(), bytes(30))
            .prop_map(|(chunk_type, flags, value)| Chunk::Unknown { chunk_type, flags, value }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn every_chunk_round_trips(c in chunk()) {
        let mut b = Vec::new();
        c.encode(&mut b).unwrap();
        prop_assert_eq!(b.len() % 4, 0, "padded to 4");
        prop_assert_eq!(b.len(), c.wire_len());
        let len = u16::from_be_bytes([b[2], b[3]]) as usize;
        prop_assert!(len >= 4 && len <= b.len() && b.len() - len < 4);
        let back = Chunk::decode(b[0], b[1], &b[4..len]).unwrap();
        prop_assert_eq!(back, c);
    }

    #[test]
    fn packets_round_trip(sp in any::<u16>(), dp in any::<u16>(), tag in any::<u32>(),
                          chunks in proptest::collection::vec(chunk(), 0..6)) {
        let p = Packet::new(sp, dp, tag, chunks);
        let b = p.encode().unwrap();
        prop_assert_eq!(Packet::decode(&b).unwrap(), p);
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in bytes(300)) {
        let _ = Packet::decode(&b);
        if let Ok(p) = Packet::decode_unchecked(&b) {
            // What parsed re-encodes and parses back to the same value.
            let again = p.encode().unwrap();
            prop_assert_eq!(Packet::decode(&again).unwrap(), p);
        }
    }

    #[test]
    fn any_bit_flip_is_caught_by_the_checksum(c in chunk(), bit in any::<usize>()) {
        let b = Packet::new(1, 2, 3, vec![c]).encode().unwrap();
        let mut t = b.clone();
        let i = bit % (t.len() * 8);
        t[i / 8] ^= 1 << (i % 8);
        prop_assert!(Packet::decode(&t).is_err());
    }
}

#[test]
fn crc32c_check_value_and_byte_order() {
    assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    // A header-only packet: the checksum field holds the CRC32c of the
    // packet with the field zeroed, least significant byte first.
    let b = Packet::new(5000, 5001, 0xdead_beef, vec![]).encode().unwrap();
    let mut zeroed = b.clone();
    zeroed[8..12].fill(0);
    let crc = crc32c(&zeroed);
    assert_eq!(&b[8..12], &crc.to_le_bytes());
    assert_eq!(packet_checksum(&b), Some(crc));
    // Fixed vector: ports 5000 -> 5001, tag 0xdeadbeef, no chunks.
    assert_eq!(&b[..8], &[0x13, 0x88, 0x13, 0x89, 0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(crc, crc32c(&[0x13, 0x88, 0x13, 0x89, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0]));
    // Same checksum stored big-endian is refused (unless it is a palindrome).
    let mut be = b.clone();
    be[8..12].copy_from_slice(&crc.to_be_bytes());
    if crc.swap_bytes() != crc {
        assert!(matches!(Packet::decode(&be), Err(SctpError::BadChecksum { .. })));
    }
}

#[test]
fn data_chunk_vector() {
    let c = Chunk::Data(DataChunk { flags: 0x03, tsn: 0x0102_0304, stream_id: 7, ssn: 9, ppid: 51, payload: b"hello".to_vec() });
    let mut b = Vec::new();
    c.encode(&mut b).unwrap();
    assert_eq!(
        b,
        [0, 3, 0, 21, 1, 2, 3, 4, 0, 7, 0, 9, 0, 0, 0, 51, b'h', b'e', b'l', b'l', b'o', 0, 0, 0]
    );
}

#[test]
fn nr_sack_layout() {
    let c = Chunk::Sack(SackChunk {
        flags: 0x80,
        cum_tsn_ack: 100,
        a_rwnd: 4000,
        gaps: vec![GapBlock { start: 2, end: 3 }],
        nr_gaps: Some(vec![GapBlock { start: 2, end: 2 }]),
        dup_tsns: vec![99],
    });
    let mut b = Vec::new();
    c.encode(&mut b).unwrap();
    assert_eq!(b[0], ctype::NR_SACK);
    assert_eq!(b[1], 0x80);
    assert_eq!(u16::from_be_bytes([b[2], b[3]]), 4 + 16 + 12);
    // #gaps, #nr-gaps, #dups, reserved.
    assert_eq!(&b[12..20], &[0, 1, 0, 1, 0, 1, 0, 0]);
    assert_eq!(&b[20..28], &[0, 2, 0, 3, 0, 2, 0, 2]);
    assert_eq!(&b[28..32], &99u32.to_be_bytes());
}

#[test]
fn last_parameter_padding_is_not_counted() {
    let c = Chunk::Init(InitChunk {
        initiate_tag: 1,
        a_rwnd: 2,
        outbound_streams: 3,
        inbound_streams: 4,
        initial_tsn: 5,
        params: vec![InitParam::StateCookie(vec![1, 2, 3, 4, 5]), InitParam::SupportedExtensions(vec![0x10])],
    });
    let mut b = Vec::new();
    c.encode(&mut b).unwrap();
    // 20 fixed + 12 (cookie, 9 padded) + 5 (extensions, unpadded as last).
    assert_eq!(u16::from_be_bytes([b[2], b[3]]), 20 + 12 + 5);
    assert_eq!(b.len(), 20 + 12 + 8);
}

fn packet_with(chunk_bytes: &[u8]) -> Vec<u8> {
    let mut b = vec![0x13, 0x88, 0x13, 0x89, 0, 0, 0, 1, 0, 0, 0, 0];
    b.extend_from_slice(chunk_bytes);
    let s = packet_checksum(&b).unwrap();
    b[8..12].copy_from_slice(&s.to_le_bytes());
    b
}

#[test]
fn malformed_input_is_a_typed_error() {
    assert_eq!(Packet::decode(&[0; 5]), Err(SctpError::Truncated { need: 12, have: 5 }));
    // Chunk length 2 < 4.
    assert!(matches!(Packet::decode(&packet_with(&[0xc0, 0, 0, 2])), Err(SctpError::BadChunkLength { len: 2, .. })));
    // Chunk length overruns the packet.
    assert!(matches!(Packet::decode(&packet_with(&[11, 0, 0, 40])), Err(SctpError::BadChunkLength { len: 40, .. })));
    // Three stray bytes after a chunk.
    assert!(matches!(Packet::decode(&packet_with(&[11, 0, 0, 4, 1, 2, 3])), Err(SctpError::Truncated { .. })));
    // COOKIE ACK with a value.
    assert!(matches!(Packet::decode(&packet_with(&[11, 0, 0, 8, 0, 0, 0, 0])), Err(SctpError::BadChunkLength { .. })));
    // DATA shorter than its header.
    assert!(matches!(Packet::decode(&packet_with(&[0, 3, 0, 8, 0, 0, 0, 1])), Err(SctpError::BadChunkLength { .. })));
    // SACK claiming 5 gap blocks it does not have.
    let sack = [3, 0, 0, 16, 0, 0, 0, 1, 0, 0, 16, 0, 0, 5, 0, 0];
    assert!(matches!(Packet::decode(&packet_with(&sack)), Err(SctpError::BadChunkLength { .. })));
    // INIT with an IPv4 address parameter of length 7, and one of length 300.
    let mut init = vec![1, 0, 0, 27, 0, 0, 0, 1, 0, 0, 16, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 5, 0, 7, 10, 0, 0, 0];
    assert!(matches!(Packet::decode(&packet_with(&init)), Err(SctpError::BadParamLength { param_type: 5, len: 7 })));
    init[22..24].copy_from_slice(&300u16.to_be_bytes());
    assert!(matches!(Packet::decode(&packet_with(&init)), Err(SctpError::BadParamLength { param_type: 5, len: 300 })));
    // ERROR with a stale-cookie cause of the wrong length.
    let err = [9, 0, 0, 10, 0, 3, 0, 6, 0, 0, 0, 0];
    assert!(matches!(Packet::decode(&packet_with(&err)), Err(SctpError::BadCauseLength { code: 3, len: 6 })));
    // HEARTBEAT without its info parameter.
    assert!(matches!(Packet::decode(&packet_with(&[4, 0, 0, 4])), Err(SctpError::BadChunkLength { .. })));
    // Bad checksum.
    let mut good = packet_with(&[11, 0, 0, 4]);
    assert!(Packet::decode(&good).is_ok());
    good[9] ^= 1;
    assert!(matches!(Packet::decode(&good), Err(SctpError::BadChecksum { .. })));
}

#[test]
fn unknown_chunk_actions_from_the_upper_bits() {
    let act = |t: u8| Chunk::Unknown { chunk_type: t, flags: 0, value: vec![] }.unknown_action();
    assert_eq!(act(0x3f), Some(UnknownAction::Stop));
    assert_eq!(act(0x40), Some(UnknownAction::StopAndReport));
    assert_eq!(act(0x80), Some(UnknownAction::Skip));
    assert_eq!(act(0xc1), Some(UnknownAction::SkipAndReport));
    assert_eq!(Chunk::CookieAck.unknown_action(), None);
    let p = InitParam::Unknown { param_type: 0xc000, value: vec![] };
    assert_eq!(p.action(), UnknownAction::SkipAndReport);
    // Unknown chunks survive a round trip with type, flags and value.
    let b = packet_with(&[0x81, 0x5a, 0, 6, 0xaa, 0xbb, 0, 0]);
    let p = Packet::decode(&b).unwrap();
    assert_eq!(p.chunks, vec![Chunk::Unknown { chunk_type: 0x81, flags: 0x5a, value: vec![0xaa, 0xbb] }]);
}
