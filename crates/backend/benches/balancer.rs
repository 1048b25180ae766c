//! The load balancer's decision per segment, per mode, with its tables
//! holding a million connections (and four million for the stateful
//! modes): nanoseconds per segment and millions of segments per second on
//! one core, the MPTCP option read from the raw option bytes as the
//! kernel backend's forwarder does. Prints one table with each mode's cost
//! relative to iphash (the stateless hash), measured in the same run.
//!
//! Run: `cargo bench -p mplab-backend --bench balancer`.

use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::Instant;

use mplab_backend::balancer::{Balancer, BalancerConfig, FlowKey, Mode, MptcpSeen, Segment};

const VIP: Ipv4Addr = Ipv4Addr::new(10, 100, 0, 1);

fn key(i: u64) -> FlowKey {
    // Spread clients over a /8 and ports, as many clients would be.
    FlowKey { src: Ipv4Addr::from(0x0a00_0000 | (i as u32 & 0x00ff_ffff)), dst: VIP, sport: 1024 + (i >> 24) as u16 + (i as u16 % 50_000), dport: 443 }
}

/// Raw option bytes of a data segment's DSS (the common case), of an
/// MP_JOIN SYN and of an MP_CAPABLE third ACK.
fn dss_bytes() -> Vec<u8> {
    vec![1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 30, 8, 0x20, 0x01, 0, 0, 0, 7]
}

fn join_bytes(token: u32) -> Vec<u8> {
    let t = token.to_be_bytes();
    vec![30, 12, 0x10, 0, t[0], t[1], t[2], t[3], 0, 0, 0, 9]
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Nanoseconds per segment over `n` segments of established connections
/// (1 in 64 a join of a known connection), tables preloaded with `conns`.
fn measure(mode: Mode, conns: u64, n: u64) -> f64 {
    let mut cfg = BalancerConfig::new(mode, 16);
    cfg.conn_capacity = conns as usize + 1024;
    cfg.token_capacity = conns as usize + 1024;
    let mut lb = Balancer::new(cfg);
    let syn = |k| Segment { key: k, syn: true, ack: false, mptcp: MptcpSeen::Capable { sender_key: None, receiver_key: None } };
    for i in 0..conns {
        lb.forward(i, &syn(key(i)));
        if mode == Mode::Token {
            // The third ACK: both keys; the server key stands for the token.
            lb.forward(i, &Segment { key: key(i), syn: false, ack: true, mptcp: MptcpSeen::Capable { sender_key: Some(i), receiver_key: Some(i) } });
        }
    }
    let dss = dss_bytes();
    let tokens: Vec<u32> = (0..1024).map(mplab_wire::crypto::token).collect();
    let joins: Vec<Vec<u8>> = tokens.iter().map(|&t| join_bytes(t)).collect();
    let mut rng = 7u64;
    let t0 = Instant::now();
    let mut sum = 0usize;
    for j in 0..n {
        let r = splitmix(&mut rng);
        let i = r % conns;
        let (k, opts, syn) = if j % 64 == 0 { (key(i ^ 0x5a5a), &joins[(r >> 40) as usize % 1024][..], true) } else { (key(i), &dss[..], false) };
        let seg = Segment { key: k, syn, ack: !syn, mptcp: MptcpSeen::from_option_bytes(black_box(opts)) };
        if let mplab_backend::balancer::Verdict::Backend(b) = lb.forward(conns + j, black_box(&seg)) {
            sum += b;
        }
    }
    black_box(sum);
    t0.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let n = 4_000_000;
    println!("load balancer, one core, {n} segments per row (1 in 64 an MP_JOIN SYN), options read from raw bytes");
    println!("{:<10} {:>12} {:>10} {:>8} {:>14}", "mode", "connections", "ns/seg", "Mpps", "vs iphash");
    let base = measure(Mode::IpHash, 1_000_000, n);
    for (mode, conns) in [(Mode::IpHash, 1_000_000), (Mode::FiveTuple, 1_000_000), (Mode::Token, 1_000_000), (Mode::Stateless, 1_000_000), (Mode::FiveTuple, 4_000_000), (Mode::Token, 4_000_000)] {
        let ns = if mode == Mode::IpHash { base } else { measure(mode, conns, n) };
        println!("{:<10} {:>12} {:>10.1} {:>8.2} {:>13.2}x", mode.name(), conns, ns, 1e3 / ns, ns / base);
    }
}
