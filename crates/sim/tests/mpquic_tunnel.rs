//! The hybrid-access gateways over Multipath QUIC on the simulator
//! (`scenarios/seed004-mpquic.toml`: a tunnel flow with `transport =
//! "mpquic"`): client - CPE = link 1 (10 ms) and link 2 (10 ms unless
//! set), 20/5 Mbit/s down/up = HAG - 2 ms - server; a 10 MB QUIC download
//! and a VoIP call. In `quic-datagram` mode every UDP packet that fits
//! rides a QUIC DATAGRAM frame and everything else the stream.

mod support;

use mplab_backend::results::{FlowSummary, RunResults};
use support::*;

fn flow(r: &RunResults, name: &str) -> FlowSummary {
    r.summary.flows.iter().find(|f| f.name == name).cloned().unwrap()
}

/// Every UDP packet in a DATAGRAM frame, none in the stream; with 5 % loss
/// on link 2 no packet of the call waits for a retransmission: each one
/// that arrives is on time, its delay bounded by the links.
#[test]
fn udp_rides_datagram_frames_and_waits_for_no_retransmission() {
    let r = bundled("seed004-mpquic.toml", &[("links.1.loss", "0.05")]);
    let t = flow(&r, "tunnel").tunnel.unwrap();
    // Only UDP crosses (the QUIC download and the call): no stream frame.
    for d in [&t.upstream, &t.downstream] {
        assert_eq!(d.quic_datagrams, d.datagrams_in, "{t:?}");
        assert_eq!(d.frame_bytes, 0, "{t:?}");
        // 8 bytes of sequence number ahead of each packet.
        assert!(d.quic_datagram_bytes > 8 * d.quic_datagrams, "{t:?}");
    }
    let call = flow(&r, "call").datagrams.unwrap().stream;
    assert_eq!(call.late, 0, "{call:?}");
    // Lost for good only what link 2 lost: at most its 5 %, of the share
    // that took link 2.
    assert!((call.received as f64) >= 0.95 * call.sent as f64, "{call:?}");
    // 10 ms of access link and 2 ms of core, plus waiting behind at most
    // two full-sized packets of the download on the 5 Mbit/s uplink.
    let full_packet_ms = 1500.0 * 8.0 / 5e6 * 1e3;
    assert!(call.delay_max_ms < 12.0 + 2.0 * full_packet_ms + 1.0, "{call:?}");
    let dl = flow(&r, "download");
    assert!(dl.completed && dl.verified, "{dl:?}");
}

/// A TCP download goes through the stream beside the call's DATAGRAM
/// frames: its bytes all arrive (reliable carrier), the call's frames
/// never wait behind them.
#[test]
fn tcp_rides_the_stream_beside_udp_in_datagram_frames() {
    let r = bundled("seed004-mpquic.toml", &[("flows.1.transport", "tcp"), ("duration", "12s")]);
    let t = flow(&r, "tunnel").tunnel.unwrap();
    let dl = flow(&r, "download");
    assert!(dl.completed && dl.verified, "{dl:?}");
    // The download's 10 MB went in frames of the stream, none refused
    // for the tunnel's 1400-byte MTU: the CPE clamped the SYN's MSS.
    assert!(t.downstream.frame_bytes > 10_000_000, "{t:?}");
    assert_eq!((t.upstream.oversize, t.downstream.oversize), (0, 0), "{t:?}");
    let call = flow(&r, "call").datagrams.unwrap().stream;
    // The call went in DATAGRAM frames: one per packet upstream at least.
    assert!(t.upstream.quic_datagrams >= call.sent, "{t:?}");
    assert_eq!((call.late, call.received), (0, call.sent), "{call:?}");
    // Serialising two full frames of the download ahead of it on the
    // 20 Mbit/s downlink is the most a call packet should wait: here it
    // goes upstream, where only the download's ACKs compete.
    assert!(call.delay_p99_ms < 12.0 + 2.0 * 1500.0 * 8.0 / 20e6 * 1e3 + 1.0, "{call:?}");
}

/// With the tunnel's MTU at 1500, the inner QUIC's 1500-byte packets do
/// not fit in a DATAGRAM frame (the path MTU less QUIC's overhead): they
/// ride the stream, the small ones (ACKs, the call) frames; nothing is
/// lost either way.
#[test]
fn packets_too_large_for_a_datagram_frame_ride_the_stream() {
    let r = bundled("seed004-mpquic.toml", &[("flows.0.mtu", "1500"), ("duration", "10s")]);
    let t = flow(&r, "tunnel").tunnel.unwrap();
    assert!(t.downstream.frame_bytes > 9_000_000, "{t:?}");
    assert!(t.downstream.quic_datagrams < t.downstream.datagrams_in / 10, "{t:?}");
    assert!(t.upstream.quic_datagrams > t.upstream.datagrams_in / 2, "{t:?}");
    for d in [&t.upstream, &t.downstream] {
        assert!(d.datagrams_in - d.datagrams_out <= 1, "{t:?}");
    }
    assert!(flow(&r, "download").completed);
}

/// The inner QUIC's congestion control meets the paths' reordering: with
/// link 2 15 ms slower, the few datagrams noq sends there arrive after
/// later ones on link 1 and the download's QUIC counts them lost
/// (RFC 9002's packet threshold), though the tunnel lost none. With link
/// 2 a standby path (active-standby steering) every datagram takes link
/// 1, in order, and the download is several times faster.
#[test]
fn datagrams_reordered_across_paths_slow_the_inner_quic() {
    let both = bundled("seed004-mpquic.toml", &[("links.1.delay", "25ms")]);
    let t = flow(&both, "tunnel").tunnel.unwrap();
    assert_eq!(t.downstream.datagrams_in, t.downstream.datagrams_out, "the tunnel lost nothing: {t:?}");
    let dl = flow(&both, "download");
    assert!(dl.retransmitted_segments > 20, "{dl:?}");
    let standby = bundled("seed004-mpquic.toml", &[("links.1.delay", "25ms"), ("transport.mptcp.endpoints.0.flags", "[\"subflow\", \"backup\"]")]);
    let sb = flow(&standby, "download");
    let (a, b) = (dl.completion_time_s.unwrap(), sb.completion_time_s.unwrap());
    assert!(a > 2.0 * b, "both paths {a:.2} s, link 2 standby {b:.2} s");
    // Standby: one 20 Mbit/s link carries 10 MB in no less than 4 s.
    assert!(b >= 4.0, "{b}");
}

/// Stream mode over MPQUIC carries what the MPTCP tunnel does: the
/// download within 10 % of the MPTCP tunnel's time on the same links.
#[test]
fn stream_mode_carries_the_download_like_the_mptcp_tunnel() {
    let q = bundled("seed004-mpquic.toml", &[("flows.0.mode", "stream")]);
    let m = bundled("seed004-mpquic.toml", &[("flows.0.mode", "stream"), ("flows.0.transport", "mptcp")]);
    let (a, b) = (flow(&q, "download").completion_time_s.unwrap(), flow(&m, "download").completion_time_s.unwrap());
    // Both bounded by 10 MB over 40 Mbit/s of links: 2 s.
    assert!(a > 2.0 && b > 2.0);
    assert!((a - b).abs() <= 0.1 * b, "MPQUIC {a:.2} s, MPTCP {b:.2} s");
    let t = flow(&q, "tunnel").tunnel.unwrap();
    assert_eq!((t.upstream.quic_datagrams, t.downstream.quic_datagrams), (0, 0));
}

#[test]
fn mpquic_tunnel_runs_are_deterministic() {
    let sets = [("links.1.loss", "0.02"), ("duration", "8s")];
    let (a, b) = (bundled("seed004-mpquic.toml", &sets), bundled("seed004-mpquic.toml", &sets));
    assert_eq!(serde_json::to_string(&a.summary).unwrap(), serde_json::to_string(&b.summary).unwrap());
}
