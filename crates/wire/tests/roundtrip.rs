//! Property tests: for every option, encode then decode is the identity, and
//! decoding arbitrary bytes never panics nor reads past the buffer.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use mplab_wire::mptcp::{AddAddr, AddrIdList, DataAck, Dss, DssMapping, MpCapable, MpJoin, MptcpOption, RawBytes};
use mplab_wire::packet::{build_ip_tcp, tcp_checksum_ok, TcpHeader, TcpPacket};
use mplab_wire::tcp::{SackBlock, TcpOptions, Timestamps};
use proptest::prelude::*;

fn mp_capable() -> impl Strategy<Value = MpCapable> {
    (0u8..16, any::<u8>(), 0usize..5, any::<u64>(), any::<u64>(), any::<u16>(), any::<u16>()).prop_map(
        |(version, flags, form, k1, k2, dl, ck)| MpCapable {
            version,
            flags,
            sender_key: (form >= 1).then_some(k1),
            receiver_key: (form >= 2).then_some(k2),
            data_len: (form >= 3).then_some(dl),
            checksum: (form >= 4).then_some(ck),
        },
    )
}

fn mp_join() -> impl Strategy<Value = MpJoin> {
    prop_oneof![
        (any::<bool>(), any::<u8>(), any::<u32>(), any::<u32>())
            .prop_map(|(backup, addr_id, token, nonce)| MpJoin::Syn { backup, addr_id, token, nonce }),
        (any::<bool>(), any::<u8>(), any::<u64>(), any::<u32>())
            .prop_map(|(backup, addr_id, hmac, nonce)| MpJoin::SynAck { backup, addr_id, hmac, nonce }),
        any::<[u8; 20]>().prop_map(|hmac| MpJoin::Ack { hmac }),
    ]
}

fn width(wide: bool, v: u64) -> u64 {
    if wide { v } else { v & 0xffff_ffff }
}

fn dss() -> impl Strategy<Value = Dss> {
    let ack = proptest::option::of((any::<u64>(), any::<bool>()).prop_map(|(v, w)| DataAck { value: width(w, v), wide: w }));
    let map = proptest::option::of(
        (any::<u64>(), any::<bool>(), any::<u32>(), any::<u16>(), proptest::option::of(any::<u16>())).prop_map(
            |(dsn, w, ssn, data_len, checksum)| DssMapping { dsn: width(w, dsn), dsn_wide: w, ssn, data_len, checksum },
        ),
    );
    (ack, map, any::<bool>()).prop_map(|(data_ack, mapping, data_fin)| Dss { data_ack, mapping, data_fin })
}

fn ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|a| IpAddr::V4(Ipv4Addr::from(a))),
        any::<[u8; 16]>().prop_map(|a| IpAddr::V6(Ipv6Addr::from(a))),
    ]
}

pub fn mptcp_option() -> impl Strategy<Value = MptcpOption> {
    prop_oneof![
        mp_capable().prop_map(MptcpOption::MpCapable),
        mp_join().prop_map(MptcpOption::MpJoin),
        dss().prop_map(MptcpOption::Dss),
        (any::<bool>(), any::<u8>(), ip(), proptest::option::of(any::<u16>()), proptest::option::of(any::<u64>()))
            .prop_map(|(echo, addr_id, addr, port, hmac)| MptcpOption::AddAddr(AddAddr { echo, addr_id, addr, port, hmac })),
        proptest::collection::vec(any::<u8>(), 1..=37)
            .prop_map(|ids| MptcpOption::RemoveAddr(AddrIdList::from_slice(&ids).unwrap())),
        (any::<bool>(), proptest::option::of(any::<u8>())).prop_map(|(backup, addr_id)| MptcpOption::MpPrio { backup, addr_id }),
        any::<u64>().prop_map(|dsn| MptcpOption::MpFail { dsn }),
        any::<u64>().prop_map(|receiver_key| MptcpOption::MpFastclose { receiver_key }),
        (0u8..16, any::<u8>()).prop_map(|(flags, reason)| MptcpOption::MpTcpRst { flags, reason }),
        (9u8..16, 0u8..16, proptest::collection::vec(any::<u8>(), 0..=37)).prop_map(|(subtype, low_nibble, b)| {
            MptcpOption::Unknown { subtype, low_nibble, body: RawBytes::from_slice(&b).unwrap() }
        }),
    ]
}

fn tcp_options() -> impl Strategy<Value = TcpOptions> {
    (
        proptest::option::of(any::<u16>()),
        proptest::option::of(0u8..15),
        any::<bool>(),
        proptest::option::of((any::<u32>(), any::<u32>())),
        proptest::collection::vec((any::<u32>(), any::<u32>()), 0..=4),
        proptest::collection::vec(mptcp_option(), 0..=2),
        proptest::option::of((40u8..=254, proptest::collection::vec(any::<u8>(), 0..6))),
    )
        .prop_filter_map("fits in 40 bytes", |(mss, ws, sp, ts, sack, mp, unk)| {
            let mut o = TcpOptions::new();
            o.mss = mss;
            o.wscale = ws;
            o.sack_permitted = sp;
            o.timestamps = ts.map(|(tsval, tsecr)| Timestamps { tsval, tsecr });
            let blocks: Vec<SackBlock> = sack.into_iter().map(|(left, right)| SackBlock { left, right }).collect();
            o.set_sack(&blocks);
            for m in mp {
                o.push_mptcp(m).ok()?;
            }
            if let Some((k, data)) = unk {
                let mut tlv = vec![k, 2 + data.len() as u8];
                tlv.extend(data);
                o.push_unknown(&tlv).ok()?;
            }
            o.wire_len().ok()?;
            Some(o)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn mptcp_option_roundtrip(o in mptcp_option()) {
        let mut buf = [0u8; 64];
        let n = o.encode(&mut buf).unwrap();
        prop_assert_eq!(n, o.wire_len().unwrap());
        prop_assert_eq!(buf[1] as usize, n);
        let back = MptcpOption::decode(&buf[..n]).unwrap();
        prop_assert_eq!(back, o);
        // and bytes -> value -> bytes is the identity too
        let mut again = [0u8; 64];
        let m = back.encode(&mut again).unwrap();
        prop_assert_eq!(&buf[..n], &again[..m]);
    }

    #[test]
    fn tcp_options_roundtrip(o in tcp_options()) {
        let mut buf = [0u8; 40];
        let n = o.encode(&mut buf).unwrap();
        prop_assert_eq!(n % 4, 0);
        let back = TcpOptions::parse(&buf[..n]).unwrap();
        prop_assert_eq!(back, o);
    }

    #[test]
    fn mptcp_decode_never_panics(mut b in proptest::collection::vec(any::<u8>(), 0..48)) {
        if b.len() >= 2 { b[0] = 30; }
        let _ = MptcpOption::decode(&b);
    }

    #[test]
    fn options_parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..48)) {
        let _ = TcpOptions::parse(&b);
        let _ = TcpOptions::parse_lenient(&b);
    }

    #[test]
    fn packet_parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = TcpPacket::parse_ip(&b);
        for dl in [mplab_wire::Datalink::Ethernet, mplab_wire::Datalink::LinuxSll, mplab_wire::Datalink::LinuxSll2] {
            let _ = TcpPacket::parse_frame(dl, &b);
        }
    }

    #[test]
    fn packet_build_parse_roundtrip(o in tcp_options(), v6 in any::<bool>(), seq in any::<u32>(), payload in proptest::collection::vec(any::<u8>(), 0..100)) {
        let (s, d): (IpAddr, IpAddr) = if v6 { ("fd00::1".parse().unwrap(), "fd00::2".parse().unwrap()) } else { ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap()) };
        let h = TcpHeader { src_port: 1234, dst_port: 80, seq, ack: 7, flags: 0x18, window: 100, urgent: 0, options: o };
        let mut out = Vec::new();
        build_ip_tcp(s, d, 64, 1, &h, &payload, &mut out).unwrap();
        let p = TcpPacket::parse_ip(&out).unwrap();
        prop_assert_eq!(p.tcp, h);
        prop_assert_eq!(p.payload, &payload[..]);
        prop_assert_eq!(p.src, s);
        let ip_hlen = if v6 { 40 } else { 20 };
        prop_assert!(tcp_checksum_ok(s, d, &out[ip_hlen..]));
    }
}

#[test]
fn malformed_lengths_are_errors() {
    // MP_CAPABLE of length 13, DSS claiming a data ACK but too short, ADD_ADDR of 9.
    assert!(MptcpOption::decode(&[30, 13, 0x01, 0x81, 0, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());
    assert!(MptcpOption::decode(&[30, 6, 0x20, 0x01, 0, 0]).is_err());
    assert!(MptcpOption::decode(&[30, 9, 0x30, 1, 10, 0, 0, 1, 0]).is_err());
    // An option whose length runs past the header.
    assert!(TcpOptions::parse(&[2, 4, 5]).is_err());
    assert!(TcpOptions::parse(&[30, 20, 0x00]).is_err());
    // Length 0 or 1 would loop forever in a naive walker.
    assert!(TcpOptions::parse(&[99, 0, 1, 1]).is_err());
    assert!(TcpOptions::parse(&[99, 1, 1, 1]).is_err());
    // Lenient parsing drops the bad MPTCP option, keeps the rest.
    let o = TcpOptions::parse_lenient(&[2, 4, 5, 0xb4, 30, 5, 0x00, 0x81, 0]).unwrap();
    assert_eq!(o.mss, Some(1460));
    assert!(!o.has_mptcp());
}

#[test]
fn unknown_subtype_and_version_are_kept() {
    let b = [30u8, 6, 0xe3, 1, 2, 3];
    let o = MptcpOption::decode(&b).unwrap();
    assert!(matches!(o, MptcpOption::Unknown { subtype: 0xe, low_nibble: 3, .. }));
    let mut out = [0u8; 6];
    o.encode(&mut out).unwrap();
    assert_eq!(out, b);
    // MP_CAPABLE version 0 SYN (RFC 6824) carries a key: decodes with version 0.
    let v0 = [30u8, 12, 0x00, 0x81, 1, 2, 3, 4, 5, 6, 7, 8];
    match MptcpOption::decode(&v0).unwrap() {
        MptcpOption::MpCapable(c) => {
            assert_eq!(c.version, 0);
            assert_eq!(c.sender_key, Some(0x0102030405060708));
        }
        o => panic!("{o:?}"),
    }
    // Unknown TCP kinds survive a parse/encode cycle.
    let opts = TcpOptions::parse(&[254, 4, 0xab, 0xcd]).unwrap();
    assert_eq!(opts.unknown(), &[254, 4, 0xab, 0xcd]);
}

#[test]
fn known_layouts_match_rfc_8684() {
    // MP_CAPABLE SYN of Linux: 1e 04 01 81 (v1, flags A? no: H=1 plus A when checksums)
    let syn = MptcpOption::MpCapable(MpCapable { version: 1, flags: 0x81, sender_key: None, receiver_key: None, data_len: None, checksum: None });
    let mut b = [0u8; 4];
    syn.encode(&mut b).unwrap();
    assert_eq!(b, [0x1e, 0x04, 0x01, 0x81]);
    // DSS with 8-byte DSN, 4-byte ack, mapping and checksum = 4+4+8+4+2+2 = 24? (A, M, m)
    let d = MptcpOption::Dss(Dss {
        data_ack: Some(DataAck { value: 0x01020304, wide: false }),
        mapping: Some(DssMapping { dsn: 0x1122334455667788, dsn_wide: true, ssn: 1, data_len: 27, checksum: Some(0x2013) }),
        data_fin: false,
    });
    let mut b = [0u8; 24];
    assert_eq!(d.encode(&mut b).unwrap(), 24);
    assert_eq!(&b[..4], &[0x1e, 24, 0x20, 0x0d]);
    // MP_TCPRST: subtype 8 with T flag and reason "middlebox interference".
    let r = MptcpOption::MpTcpRst { flags: 1, reason: 6 };
    let mut b = [0u8; 4];
    r.encode(&mut b).unwrap();
    assert_eq!(b, [0x1e, 4, 0x81, 6]);
    // REMOVE_ADDR of ids 1,2
    let r = MptcpOption::RemoveAddr(AddrIdList::from_slice(&[1, 2]).unwrap());
    let mut b = [0u8; 5];
    r.encode(&mut b).unwrap();
    assert_eq!(b, [0x1e, 5, 0x40, 1, 2]);
}

/// Found by the fuzzer: two SACK options in one header, the second shorter.
/// The header must equal itself after encode + decode (no stale blocks).
#[test]
fn a_second_shorter_sack_option_leaves_no_stale_blocks() {
    let mut raw = vec![5u8, 18, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4];
    raw.extend_from_slice(&[5, 10, 0, 0, 0, 9, 0, 0, 0, 10]);
    while raw.len() % 4 != 0 {
        raw.push(1);
    }
    let o = mplab_wire::TcpOptions::parse(&raw).unwrap();
    assert_eq!(o.sack().len(), 1);
    let mut buf = [0u8; 40];
    let n = o.encode(&mut buf).unwrap();
    assert_eq!(mplab_wire::TcpOptions::parse(&buf[..n]).unwrap(), o);
}
