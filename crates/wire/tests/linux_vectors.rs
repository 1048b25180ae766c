//! Decode the Linux 6.18 captures in ../shared/vectors and check every value
//! their README states: keys -> tokens/IDSNs, MP_JOIN HMACs, ADD_ADDR HMAC,
//! DSS checksums. Every frame of both captures must parse.

use std::fs::File;
use std::path::PathBuf;

use mplab_wire::crypto::{self, KeyMaterial};
use mplab_wire::packet::{Datalink, TcpPacket};
use mplab_wire::{MpJoin, MptcpOption};
use pcap_file::pcap::PcapReader;

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../captures")
}

/// Frames of a capture; None when the shared vectors are not checked out.
fn frames(name: &str) -> Option<(Datalink, Vec<Vec<u8>>)> {
    let path = vectors_dir().join(name);
    let f = File::open(&path).ok()?;
    let mut r = PcapReader::new(f).expect("pcap header");
    let dl = Datalink::from_linktype(u32::from(r.header().datalink)).expect("known linktype");
    let mut out = Vec::new();
    // Raw records: GSO aggregates have orig_len > snaplen, which the
    // validating reader refuses although the capture is fine.
    while let Some(p) = r.next_raw_packet() {
        out.push(p.expect("pcap record").data.into_owned());
    }
    Some((dl, out))
}

const SERVER_KEY: u64 = 0x06036a766d04e1f8;
const CLIENT_KEY: u64 = 0xca7adb59cbcac97d;

#[test]
fn tokens_and_idsns_match_the_kernel() {
    let s = KeyMaterial::from_key(SERVER_KEY);
    assert_eq!(s.token, 0xe0e05a3b);
    assert_eq!(s.idsn, 0x02e43ec59ef27e7b);
    let c = KeyMaterial::from_key(CLIENT_KEY);
    assert_eq!(c.token, 0xa0ac44cd);
    assert_eq!(c.idsn, 0x5487b3594d64d9ee);
}

#[test]
fn join_addaddr_capture_verifies() {
    let Some((dl, frames)) = frames("linux-6.18-mptcp-join-addaddr.pcap") else {
        eprintln!("shared/vectors not present; skipping");
        return;
    };
    assert_eq!(frames.len(), 411);
    let mut keys_seen = (false, false);
    let mut join_syns = Vec::new();
    let mut synack_ok = 0;
    let mut ack_ok = 0;
    let mut add_addr_ok = 0;
    let mut first_dsn = Vec::new();
    for f in &frames {
        let p = TcpPacket::parse_frame(dl, f).expect("every frame is IP/TCP and parses");
        for o in p.tcp.options.mptcp() {
            match o {
                MptcpOption::MpCapable(c) => {
                    assert_eq!(c.version, 1);
                    assert!(c.hmac_sha256());
                    if let Some(k) = c.sender_key {
                        if k == SERVER_KEY {
                            keys_seen.1 = true;
                        }
                        if k == CLIENT_KEY {
                            keys_seen.0 = true;
                        }
                    }
                }
                MptcpOption::MpJoin(MpJoin::Syn { token, nonce, .. }) => {
                    // The client joins towards the server: token of the server key.
                    assert_eq!(*token, crypto::token(SERVER_KEY));
                    join_syns.push(*nonce);
                }
                MptcpOption::MpJoin(MpJoin::SynAck { hmac, nonce, .. }) => {
                    let r_a = *join_syns.last().expect("SYN before SYN/ACK");
                    assert_eq!(*hmac, crypto::join_synack_hmac(SERVER_KEY, CLIENT_KEY, *nonce, r_a));
                    if r_a == 0xdba6b50b {
                        assert_eq!(*nonce, 0xcfff41fd);
                        assert_eq!(*hmac, 0xa9f53d9056d029f4);
                    }
                    join_syns.push(*nonce);
                    synack_ok += 1;
                }
                MptcpOption::MpJoin(MpJoin::Ack { hmac }) => {
                    let r_b = join_syns[join_syns.len() - 1];
                    let r_a = join_syns[join_syns.len() - 2];
                    assert_eq!(*hmac, crypto::join_ack_hmac(CLIENT_KEY, SERVER_KEY, r_a, r_b));
                    if r_a == 0xdba6b50b {
                        let want: [u8; 20] = [
                            0xec, 0x25, 0x92, 0xbf, 0x2d, 0xa0, 0x02, 0xdc, 0xed, 0x54, 0x0e, 0x63, 0x0b, 0xfa,
                            0x53, 0xb5, 0x9e, 0x14, 0xcf, 0x3a,
                        ];
                        assert_eq!(*hmac, want);
                    }
                    ack_ok += 1;
                }
                MptcpOption::AddAddr(a) if !a.echo => {
                    assert_eq!(a.addr, "10.0.2.1".parse::<std::net::IpAddr>().unwrap());
                    assert_eq!(a.addr_id, 1);
                    assert_eq!(a.port, None);
                    let h = crypto::add_addr_hmac(SERVER_KEY, CLIENT_KEY, a.addr_id, a.addr, a.port);
                    assert_eq!(h, 0x92be6b7a049df4d8);
                    assert_eq!(a.hmac, Some(h));
                    add_addr_ok += 1;
                }
                MptcpOption::Dss(d) => {
                    if let Some(m) = d.mapping {
                        if m.data_len > 0 {
                            first_dsn.push((p.src, m.dsn));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    assert!(keys_seen.0 && keys_seen.1, "both keys appear in MP_CAPABLE");
    assert!(synack_ok >= 2, "two MP_JOIN SYN/ACKs verified, got {synack_ok}");
    assert!(ack_ok >= 2, "two MP_JOIN ACK HMACs verified, got {ack_ok}");
    assert!(add_addr_ok >= 1);
    // First data DSN on each side is IDSN + 1.
    let c = crypto::idsn(CLIENT_KEY).wrapping_add(1);
    let s = crypto::idsn(SERVER_KEY).wrapping_add(1);
    let client_first = first_dsn.iter().find(|(ip, _)| ip.to_string().starts_with("10.0.1.2") || ip.to_string().starts_with("10.0.2.2"));
    let (_, dsn) = client_first.expect("client sent data");
    // The kernel may use 32-bit DSNs: compare in the width carried.
    assert!(*dsn == c || *dsn == c & 0xffff_ffff, "client first DSN {dsn:x} vs IDSN+1 {c:x}");
    let server_first = first_dsn.iter().find(|(ip, _)| ip.to_string() == "10.0.1.1" || ip.to_string() == "10.0.2.1");
    if let Some((_, dsn)) = server_first {
        assert!(*dsn == s || *dsn == s & 0xffff_ffff, "server first DSN {dsn:x} vs IDSN+1 {s:x}");
    }
}

#[test]
fn dss_checksum_capture_verifies() {
    let Some((dl, frames)) = frames("linux-6.18-mptcp-dss-checksum.pcap") else {
        eprintln!("shared/vectors not present; skipping");
        return;
    };
    let mut checked = Vec::new();
    for f in &frames {
        let p = TcpPacket::parse_frame(dl, f).expect("every frame parses");
        for o in p.tcp.options.mptcp() {
            let (dsn, ssn, len, ck) = match o {
                MptcpOption::Dss(d) => match d.mapping {
                    Some(m) if m.data_len > 0 => (m.dsn, m.ssn, m.data_len, m.checksum.expect("checksums negotiated")),
                    _ => continue,
                },
                _ => continue,
            };
            // A DATA_FIN takes one octet of data sequence space and no payload.
            let fin_only = match o {
                MptcpOption::Dss(d) => d.data_fin && p.payload.is_empty() && len == 1,
                _ => false,
            };
            if !fin_only {
                assert_eq!(p.payload.len(), len as usize, "mapping covers this segment");
            }
            assert!(crypto::dss_checksum_ok(dsn, ssn, len, p.payload, ck));
            checked.push((dsn, ssn, len, ck, p.payload.to_vec()));
        }
    }
    let hello = checked.iter().find(|c| c.4 == b"hello mptcp checksum vector").expect("client data");
    assert_eq!((hello.0, hello.1, hello.2, hello.3), (0xed2e3706d1d93de5, 1, 27, 0x2013));
    let ok = checked.iter().find(|c| c.4 == b"ok").expect("server reply");
    assert_eq!(ok.3, 0x56fe);
}
