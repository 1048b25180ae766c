//! Write SCTP packets built by the codec into a pcap and let tshark check
//! them: the CRC32c must verify (so its byte order is right) and every
//! chunk must decode without a malformed-packet warning. Skips when
//! tshark is absent.

use std::process::Command;

use mplab_wire::sctp::chunk::{Chunk, DataChunk, GapBlock, InitChunk, SackChunk};
use mplab_wire::sctp::cookie::CookieContents;
use mplab_wire::sctp::param::{ErrorCause, InitParam};
use mplab_wire::sctp::Packet;

fn ipv4(sctp: &[u8]) -> Vec<u8> {
    let total = 20 + sctp.len();
    let mut h = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 1, 0x40, 0, 64, 132, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
    let mut sum: u32 = h.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let c = !(sum as u16);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(sctp);
    h
}

fn pcap(packets: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    // Global header: magic, v2.4, zone, sigfigs, snaplen, LINKTYPE_RAW (101).
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    for v in [0u32, 0, 65535, 101] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for (i, p) in packets.iter().enumerate() {
        for v in [i as u32, 0, p.len() as u32, p.len() as u32] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(p);
    }
    out
}

#[test]
fn tshark_verifies_checksums_and_chunks() {
    if Command::new("tshark").arg("-v").output().is_err() {
        eprintln!("tshark not found: skipped");
        return;
    }
    let cookie = CookieContents { local_tag: 9, peer_addrs: vec!["10.0.0.1".parse().unwrap()], ..Default::default() }.seal(b"k");
    let init = InitChunk {
        initiate_tag: 0x1234_5678,
        a_rwnd: 65536,
        outbound_streams: 10,
        inbound_streams: 10,
        initial_tsn: 1000,
        params: vec![
            InitParam::Ipv4("10.0.0.1".parse().unwrap()),
            InitParam::SupportedAddressTypes(vec![5]),
            InitParam::SupportedExtensions(vec![0x10]),
        ],
    };
    let packets = vec![
        Packet::new(5000, 6000, 0, vec![Chunk::Init(init.clone())]),
        Packet::new(6000, 5000, 0x1234_5678, vec![Chunk::InitAck(InitChunk { params: vec![InitParam::StateCookie(cookie.clone())], ..init })]),
        Packet::new(5000, 6000, 9, vec![Chunk::CookieEcho { cookie }]),
        Packet::new(6000, 5000, 0x1234_5678, vec![Chunk::CookieAck]),
        Packet::new(
            5000,
            6000,
            9,
            vec![
                Chunk::Data(DataChunk { flags: 3, tsn: 1000, stream_id: 0, ssn: 0, ppid: 0, payload: b"hello".to_vec() }),
                Chunk::Data(DataChunk { flags: 3, tsn: 1001, stream_id: 0, ssn: 1, ppid: 0, payload: vec![7; 100] }),
            ],
        ),
        Packet::new(
            6000,
            5000,
            0x1234_5678,
            vec![Chunk::Sack(SackChunk { flags: 0, cum_tsn_ack: 1000, a_rwnd: 60000, gaps: vec![GapBlock { start: 2, end: 3 }], nr_gaps: None, dup_tsns: vec![999] })],
        ),
        Packet::new(
            6000,
            5000,
            0x1234_5678,
            vec![Chunk::Sack(SackChunk {
                flags: 0x80,
                cum_tsn_ack: 1000,
                a_rwnd: 60000,
                gaps: vec![GapBlock { start: 2, end: 3 }, GapBlock { start: 5, end: 5 }],
                nr_gaps: Some(vec![GapBlock { start: 2, end: 3 }]),
                dup_tsns: vec![],
            })],
        ),
        Packet::new(5000, 6000, 9, vec![Chunk::Heartbeat { info: vec![1, 2, 3, 4, 5] }]),
        Packet::new(6000, 5000, 0x1234_5678, vec![Chunk::Error { causes: vec![ErrorCause::StaleCookie { staleness_us: 1000 }] }]),
        Packet::new(5000, 6000, 9, vec![Chunk::Shutdown { cum_tsn_ack: 1000 }]),
        Packet::new(6000, 5000, 0x1234_5678, vec![Chunk::ShutdownAck]),
        Packet::new(5000, 6000, 9, vec![Chunk::ShutdownComplete { t_bit: false }]),
        Packet::new(6000, 5000, 9, vec![Chunk::Abort { t_bit: true, causes: vec![ErrorCause::ProtocolViolation { info: b"x".to_vec() }] }]),
    ];
    let raw: Vec<Vec<u8>> = packets.iter().map(|p| ipv4(&p.encode().unwrap())).collect();
    let dir = std::env::temp_dir().join(format!("mplab-sctp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sctp.pcap");
    std::fs::write(&file, pcap(&raw)).unwrap();
    let out = Command::new("tshark")
        .args(["-r", file.to_str().unwrap(), "-o", "sctp.checksum:CRC-32C", "-T", "fields", "-e", "sctp.checksum.status", "-e", "sctp.chunk_type", "-e", "_ws.malformed", "-e", "sctp.nr_sack_number_of_gap_blocks", "-e", "sctp.nr_sack_number_of_nr_gap_blocks", "-e", "sctp.nr_sack_number_of_duplicated_tsns", "-e", "sctp.nr_sack_cumulative_tsn_ack"])
        .output()
        .expect("tshark runs");
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), packets.len(), "{}", String::from_utf8_lossy(&out.stderr));
    for (l, p) in lines.iter().zip(&packets) {
        let f: Vec<&str> = l.split('\t').collect();
        assert_eq!(f[0], "1", "checksum status good: {l}");
        let types: Vec<u8> = f[1].split(',').map(|t| t.parse().unwrap()).collect();
        assert_eq!(types, p.chunks.iter().map(Chunk::chunk_type).collect::<Vec<_>>(), "{l}");
        assert!(f.get(2).is_none_or(|m| m.is_empty()), "malformed: {l}");
    }
    // The NR-SACK: 2 gap blocks, 1 non-renegable one, no duplicates, in
    // the layout Wireshark expects.
    let nr: Vec<&str> = lines[6].split('\t').collect();
    assert_eq!(&nr[3..7], &["2", "1", "0", "1000"], "{}", lines[6]);
    let _ = std::fs::remove_dir_all(&dir);
}
