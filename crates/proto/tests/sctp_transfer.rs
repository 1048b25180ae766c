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

fn report(name: &str, r: &sctp_net::Result) {
    let s = r.a.stats(r.done_at.unwrap_or_default());
    let rs = r.b.stats(r.done_at.unwrap_or_default()).recv;
    let ps: Vec<String> = r
        .a
        .path_stats()
        .iter()
        .map(|p| format!("[sent {} rtx {} fr {} to {} cwnd {}]", p.bytes_sent, p.retransmissions, p.fast_retransmits, p.timeouts, p.cwnd))
        .collect();
    eprintln!(
        "{name}: {:.2} Mbit/s in {:.2} s; rwnd-blocked {:.3} s, sndbuf-blocked {:.3} s; recv buffer max {} B, reorder wait mean {:?} max {:?}; {}",
        r.goodput_mbps,
        (r.done_at.unwrap_or_default() - r.established_at).as_secs_f64(),
        s.rwnd_blocked.as_secs_f64(),
        s.sndbuf_blocked.as_secs_f64(),
        rs.buffer_max,
        rs.reorder_wait_mean(),
        rs.reorder_wait_max,
        ps.join(" ")
    );
}

#[test]
fn cmt_on_two_equal_paths_doubles_with_large_buffers_not_with_small() {
    let one = run(vec![PathSpec::new(10.0, 20)], CmtMode::Off, 1 << 20, 16 * MB);
    report("1 path", &one);
    let two = || vec![PathSpec::new(10.0, 20), PathSpec::new(10.0, 20)];
    let big = run(two(), CmtMode::Cmt, 1 << 20, 16 * MB);
    report("CMT 2x10 Mbit/s, 1 MB buffers", &big);
    // Small receive buffer, large send buffer: the receiver's window is
    // what limits, and reordering between the paths eats it.
    let data = payload(16 * MB);
    let mut rx = cfg(CmtMode::Cmt, 1 << 20);
    rx.recv_buffer = 32 * 1024;
    let small = Net::new(two()).transfer(rx.clone(), rx, &data);
    assert!(small.received == data);
    report("CMT 2x10 Mbit/s, 32 KB receive buffer", &small);
    assert!(big.goodput_mbps > 1.7 * one.goodput_mbps, "{:.2} vs {:.2}", big.goodput_mbps, one.goodput_mbps);
    assert!(small.goodput_mbps < 0.8 * big.goodput_mbps, "{:.2} vs {:.2}", small.goodput_mbps, big.goodput_mbps);
    // Both paths carried data.
    assert!(big.bytes_per_path.iter().all(|&b| b > 4 * MB as u64));
    let s = small.a.stats(small.done_at.unwrap_or_default());
    assert!(s.rwnd_blocked.as_secs_f64() > 0.1, "receive-buffer blocking shows: {:?}", s.rwnd_blocked);
}

#[test]
fn cmt_on_dissimilar_paths_needs_buffer() {
    // The trend of seed 002 (Fu et al. 2013, fig. 7): on 100 + 10 Mbit/s,
    // CMT with small buffers is worse than the best path alone with the
    // same buffers, and improves with buffer size until it beats it.
    let paths = || vec![PathSpec::new(100.0, 10), PathSpec::new(10.0, 10)];
    let mut rows = Vec::new();
    for buf in [64 * 1024u64, 256 * 1024, 1 << 20, 4 << 20] {
        let single = run(vec![PathSpec::new(100.0, 10)], CmtMode::Off, buf, 16 * MB);
        report(&format!("best path alone, {} KB buffers", buf / 1024), &single);
        let cmt = run(paths(), CmtMode::Cmt, buf, 16 * MB);
        report(&format!("CMT 100+10 Mbit/s, {} KB buffers", buf / 1024), &cmt);
        rows.push((buf, single.goodput_mbps, cmt.goodput_mbps));
    }
    eprintln!("buffer, best single path, CMT (Mbit/s): {rows:?}");
    let (_, s0, c0) = rows[0];
    assert!(c0 < s0, "small buffer: CMT {c0:.2} below the best path {s0:.2}");
    for w in rows.windows(2) {
        assert!(w[1].2 > w[0].2 * 0.95, "CMT improves with buffer: {rows:?}");
    }
    let (_, _, c_last) = rows[rows.len() - 1];
    assert!(c_last > c0 * 2.0, "{rows:?}");
}

#[test]
fn loss_on_one_path_recovers() {
    let mut p = PathSpec::new(10.0, 20);
    p.loss = 0.01;
    let r = run(vec![p, PathSpec::new(10.0, 20)], CmtMode::Cmt, 1 << 20, 4 * MB);
    report("CMT, 1% loss on path 0", &r);
    assert!(r.a.path_stats()[0].fast_retransmits > 0);
    let r = run(vec![p], CmtMode::Off, 1 << 20, 2 * MB);
    report("single path, 1% loss", &r);
}

#[test]
fn path_failure_fails_over_and_completes() {
    for mode in [CmtMode::Cmt, CmtMode::Off] {
        let data = payload(4 * MB);
        let mut net = Net::new(vec![PathSpec::new(10.0, 20), PathSpec::new(10.0, 20)]);
        // Path 0 is the primary of plain SCTP: fail it.
        net.fail = Some((0, std::time::Duration::from_millis(800)));
        let r = net.transfer(cfg(mode, 1 << 20), cfg(mode, 1 << 20), &data);
        assert!(r.done_at.is_some(), "{mode:?}: {} bytes", r.received.len());
        assert!(r.received == data);
        report(&format!("{mode:?}, path 0 fails at 0.8 s"), &r);
        assert!(r.a.path_stats()[0].timeouts > 0);
        assert_ne!(r.a.path_state(0), Some(mplab_proto::sctp::PathState::Active));
    }
}

#[test]
fn every_cc_variant_and_option_completes() {
    for mode in [CmtMode::Cmt, CmtMode::RpV1, CmtMode::RpV2, CmtMode::MptcpLike] {
        for (dac, nr) in [(false, false), (true, true)] {
            let mut c = cfg(mode, 256 * 1024);
            c.dac = dac;
            c.nr_sack = nr;
            let data = payload(2 * MB);
            let r = Net::new(vec![PathSpec::new(20.0, 10), PathSpec::new(10.0, 30)]).transfer(c.clone(), c, &data);
            assert!(r.received == data, "{mode:?} dac {dac} nr {nr}");
            assert_eq!(r.a.nr_sack_negotiated(), nr);
            report(&format!("{mode:?} dac={dac} nr-sack={nr}"), &r);
        }
    }
}

#[test]
fn deterministic() {
    let go = || {
        let mut p = PathSpec::new(10.0, 20);
        p.loss = 0.02;
        let r = run(vec![p, PathSpec::new(5.0, 40)], CmtMode::RpV2, 128 * 1024, MB);
        (r.done_at, r.packets, r.a.path_stats(), r.a.stats(r.done_at.unwrap_or_default()))
    };
    assert_eq!(go(), go());
}

#[test]
fn rtx_policy_decides_where_losses_are_repaired() {
    let mut lossy = PathSpec::new(10.0, 20);
    lossy.loss = 0.01;
    for (policy, on_lossy_path) in [(mplab_proto::sctp::RtxPolicy::Same, true), (mplab_proto::sctp::RtxPolicy::Ssthresh, false)] {
        let mut c = cfg(CmtMode::Cmt, 1 << 20);
        c.rtx_policy = policy;
        let data = payload(4 * MB);
        let r = Net::new(vec![lossy, PathSpec::new(10.0, 20)]).transfer(c.clone(), c, &data);
        assert!(r.received == data);
        let p = r.a.path_stats();
        report(&format!("{policy:?}, 1% loss on path 0"), &r);
        assert!(p[0].fast_retransmits > 0);
        if on_lossy_path {
            assert!(p[0].retransmissions >= p[0].fast_retransmits, "{policy:?}: {p:?}");
        } else {
            assert!(p[1].retransmissions > p[0].retransmissions, "{policy:?}: {p:?}");
        }
    }
}

#[test]
fn buffer_splitting_completes_and_bounds_each_path() {
    for (send, recv) in [(true, false), (false, true), (true, true)] {
        let mut c = cfg(CmtMode::Cmt, 128 * 1024);
        c.split_send_buffer = send;
        c.split_recv_buffer = recv;
        let data = payload(2 * MB);
        let r = Net::new(vec![PathSpec::new(50.0, 5), PathSpec::new(5.0, 40)]).transfer(c.clone(), c, &data);
        assert!(r.received == data);
        report(&format!("buffer splitting send={send} recv={recv}"), &r);
    }
}
