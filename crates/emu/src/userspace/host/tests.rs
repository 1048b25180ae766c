use super::*;
use mplab_wire::packet::build_ip_tcp;
use std::net::IpAddr;
use mplab_wire::tcp::flags;
use std::net::Ipv4Addr;

fn packet(payload: &[u8]) -> Vec<u8> {
    let h = TcpHeader { src_port: 5001, dst_port: 40000, seq: 7, ack: 9, flags: flags::ACK, window: 100, ..Default::default() };
    let mut out = Vec::new();
    build_ip_tcp(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 64, 1, &h, payload, &mut out).unwrap();
    out
}

#[test]
fn checksums_verified_and_damage_detected() {
    let mut p = packet(b"hello world");
    let t = TcpPacket::parse_ip(&p).unwrap();
    assert!(ip_header_ok(&p) && tcp_checksum_ok(t.src, t.dst, tcp_bytes(&p)));
    let n = p.len();
    p[n - 1] ^= 1; // payload damaged
    let t = TcpPacket::parse_ip(&p).unwrap();
    assert!(!tcp_checksum_ok(t.src, t.dst, tcp_bytes(&p)));
    let mut q = packet(b"x");
    q[8] ^= 1; // TTL: IP header checksum now wrong
    assert!(!ip_header_ok(&q));
}
