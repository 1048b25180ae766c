//! Whole transfers between two associations over the test network.

#[path = "sctp_net.rs"]
mod sctp_net;

use mplab_proto::sctp::{CmtMode, SctpConfig};
use sctp_net::{payload, Net, PathSpec};

const MB: usize = 1 << 20;

fn cfg(mode: CmtMode, buf: u64) -> SctpConfig {
    let mut c = if mode == CmtMode::Off { SctpConfig::default() } else { SctpConfig::cmt(mode) };
    c.send_buffer = buf;
    c.recv_buffer = buf;
    c
}

fn run(paths: Vec<PathSpec>, mode: CmtMode, buf: u64, size: usize) -> sctp_net::Result {
    let data = payload(size);
    let r = Net::new(paths).transfer(cfg(mode, buf), cfg(mode, buf), &data);
    assert!(r.done_at.is_some(), "transfer did not finish: {} of {} bytes", r.received.len(), size);
    assert!(r.received == data, "bytes delivered out of order or corrupted");
    r
}

#[test]
fn single_path_reaches_the_link_rate() {
    let r = run(vec![PathSpec::new(10.0, 20)], CmtMode::Off, 1 << 20, 4 * MB);
    eprintln!("single path 10 Mbit/s 20 ms: {:.2} Mbit/s, {:?}", r.goodput_mbps, r.a.path_stats()[0]);
    assert!(r.goodput_mbps > 8.5, "{:.2} Mbit/s", r.goodput_mbps);
}
