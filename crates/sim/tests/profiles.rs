//! The `linux` stack profile on plain TCP flows: the host's profile applies
//! to its TCP connections as to its MPTCP subflows.

mod support;

use support::*;

/// Packets each way on the bundled single link over the first second.
fn packets(profile: &str) -> (u64, u64) {
    let r = bundled("tcp-single.toml", &[("duration", "1s"), ("probes.pcap", "[]"), ("transport.mptcp.profile", profile)]);
    assert!(r.summary.flows[0].verified);
    let tx = |d: &str| r.summary.links.iter().filter(|l| l.direction == d).map(|l| l.tx_packets).max().unwrap_or(0);
    (tx("ab"), tx("ba"))
}

/// A Linux receiver ACKs every segment while its window opens (all of the
/// first second here: 745 ACKs for 762 segments), mplab's every second one
/// plus window updates (509 for 760).
#[test]
fn a_linux_tcp_receiver_acks_every_segment_while_its_window_opens() {
    let (data_m, acks_m) = packets("mplab");
    let (data_l, acks_l) = packets("linux");
    let (rm, rl) = (acks_m as f64 / data_m as f64, acks_l as f64 / data_l as f64);
    assert!(rm < 0.75, "mplab: {acks_m} ACKs for {data_m} segments");
    assert!(rl > 0.95, "linux: {acks_l} ACKs for {data_l} segments");
}
