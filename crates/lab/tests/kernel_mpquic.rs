//! Multipath QUIC (`transport = "mpquic"`, noq) on real packets: the same
//! noq code the simulator runs, over kernel UDP sockets bound to every
//! address of the hosts (IP_PKTINFO picks each path's source), through
//! mplab's link emulator. Needs root; each test cleans up its namespaces
//! even when it fails.

mod kernel_support;

use kernel_support::{can_run, run, run_userspace, serial, sim, NsGuard};

/// A client with two 10 Mbit/s, 10 ms access links to a router, the
/// server behind it: each path one access link both ways.
fn two_paths(duration: &str, flow: &str) -> String {
    format!(
        r#"
name = "mpquic"
duration = "{duration}"

[[nodes]]
name = "client"
[[nodes]]
name = "router"
kind = "router"
[[nodes]]
name = "server"

[[links]]
name = "path0"
a = "client:eth0"
b = "router"
rate = "10Mbit"
delay = "10ms"
queue = {{ kind = "droptail", packets = 40 }}

[[links]]
name = "path1"
a = "client:eth1"
b = "router"
rate = "10Mbit"
delay = "10ms"
queue = {{ kind = "droptail", packets = 40 }}

[[links]]
name = "core"
a = "router"
b = "server"
rate = "1Gbit"

[transport.mptcp]
path_manager = "fullmesh"

[[flows]]
name = "q"
from = "client"
to = "server"
transport = "mpquic"
{flow}
"#
    )
}

/// Why the kernel's time may be 10 % off the simulator's: the same noq
/// code on both, the emulator's frames within a millisecond of the model
/// (its notes), and the rest is wall-clock timer and scheduling delay on
/// 2 cores, a few milliseconds per round trip of 20 ms (QUIC over the
/// kernel backend measured within 2 % of the simulator, kernel_datagrams).
const TOLERANCE: f64 = 0.10;

/// A 5 MB download over both paths: every byte verified on both backends,
/// both paths carry a share (over 30 % each), the time within
/// [`TOLERANCE`] of the simulator's.
#[test]
fn an_mpquic_download_over_two_paths_runs_like_the_simulator() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("mpq");
    let text = two_paths("8s", "app = \"download\"\nbytes = \"5MB\"");
    let k = run(&g, 0, &text);
    let s = sim(&text);
    let (kf, sf) = (&k.results.summary.flows[0], &s.summary.flows[0]);
    assert!(kf.completed && kf.verified && !kf.fallback && sf.completed && sf.verified, "{kf:?}\n{sf:?}");
    let (kt, st) = (kf.completion_time_s.unwrap(), sf.completion_time_s.unwrap());
    eprintln!("mpquic 5 MB: kernel {kt:.3} s, sim {st:.3} s; kernel paths {:?}", kf.subflows.iter().map(|p| (&p.local, &p.remote, p.bytes_sent)).collect::<Vec<_>>());
    assert!((kt - st).abs() <= TOLERANCE * st, "kernel {kt:.3} s, sim {st:.3} s");
    let total: u64 = kf.subflows.iter().map(|p| p.bytes_sent).sum();
    assert!(kf.subflows.len() == 2 && kf.subflows.iter().all(|p| p.bytes_sent * 10 > total * 3), "{:?}", kf.subflows);
    g.assert_clean();
}

/// Path 1's link fails for 5 s: the transfer goes on over path 0, every
/// byte verified; noq abandons the dead path after its idle timeout (the
/// stream waits for the data sent on it until then), and after the link
/// returns the client opens a new path that carries data again: the
/// goodput is both links' before, one link's once the path is abandoned,
/// both links' again after the reopen (back-off 1 s, then 2 s).
#[test]
fn an_mpquic_path_cut_and_restored_on_real_packets() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("mpqc");
    let events = "[[events]]\nat = \"2s\"\nlink = \"path1\"\naction = \"down\"\n\n[[events]]\nat = \"7s\"\nlink = \"path1\"\naction = \"up\"";
    let text = two_paths("16s", &format!("app = \"bulk\"\nbytes = \"25MB\"\n\n{events}\n\n[probes]\ninterval = \"500ms\""));
    let k = run(&g, 0, &text);
    let f = &k.results.summary.flows[0];
    assert!(f.completed && f.verified, "{f:?}");
    let rate = |from: f64, to: f64| {
        let rows: Vec<f64> = k.results.flows.iter().filter(|x| x.flow == "q" && x.subflow == "all" && x.time_s > from && x.time_s <= to).map(|x| x.goodput_bps).collect();
        rows.iter().sum::<f64>() / rows.len().max(1) as f64 / 1e6
    };
    let (before, one, after) = (rate(0.5, 2.0), rate(5.0, 7.0), rate(10.0, 14.0));
    eprintln!("mpquic cut on the kernel: before {before:.2}, one path {one:.2}, after {after:.2} Mbit/s, done at {:?} s", f.completion_time_s);
    // Two 10 Mbit/s links carry ~19.2 Mbit/s of QUIC goodput, one ~9.6.
    assert!(before > 17.0 && (8.5..11.0).contains(&one) && after > 17.0, "before {before:.2}, one path {one:.2}, after {after:.2}");
    g.assert_clean();
}

/// The userspace backend: the hosts run mplab's stack over their TUNs for
/// TCP and MPTCP, and Multipath QUIC over the namespaces' UDP sockets (the
/// same noq code; the TUN takes no UDP). A 5 MB MPQUIC download, then at
/// 4 s a 5 MB MPTCP one on mplab's stack over the same two paths: both
/// verified, each spreads over both paths (over 30 % each), and the
/// MPQUIC download's time within [`TOLERANCE`] of the simulator's (it
/// ends before the MPTCP flow starts, in both runs).
#[test]
fn mpquic_beside_mplabs_mptcp_on_the_userspace_backend() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("mpqu");
    let mptcp = "[[flows]]\nname = \"t\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"mptcp\"\napp = \"download\"\nbytes = \"5MB\"\nstart = \"4s\"";
    let text = two_paths("10s", &format!("app = \"download\"\nbytes = \"5MB\"\n\n{mptcp}"));
    let u = run_userspace(&g, 0, &text);
    let s = sim(&text);
    for (name, f) in ["q", "t"].iter().zip(&u.results.summary.flows) {
        assert!(f.completed && f.verified && !f.fallback, "{name}: {f:?}");
        let total: u64 = f.subflows.iter().map(|p| p.bytes_sent).sum();
        eprintln!("userspace {name}: {:?} s, paths {:?}", f.completion_time_s, f.subflows.iter().map(|p| (&p.local, &p.remote, p.bytes_sent)).collect::<Vec<_>>());
        assert!(f.subflows.len() == 2 && f.subflows.iter().all(|p| p.bytes_sent * 10 > total * 3), "{name}: {:?}", f.subflows);
    }
    let (ut, st) = (u.results.summary.flows[0].completion_time_s.unwrap(), s.summary.flows[0].completion_time_s.unwrap());
    eprintln!("mpquic 5 MB: userspace {ut:.3} s, sim {st:.3} s");
    assert!(st < 4.0 && (ut - st).abs() <= TOLERANCE * st, "userspace {ut:.3} s, sim {st:.3} s");
    g.assert_clean();
}

/// Seed 004's gateways over Multipath QUIC on real packets
/// (`seed004-mpquic.toml`, crates/emu/src/gateway/mpquic.rs): the CPE's
/// and the HAG's programs carry a 5 MB QUIC download and a call through
/// one MPQUIC connection, every UDP packet in a QUIC DATAGRAM frame and
/// nothing in the stream, as on the simulator; the download verified
/// before the run's end and the call on time, its median delay within
/// 2.5 ms of the simulator's (two gateway programs' wake-ups, as the
/// MPTCP tunnel's test allows). Then a TCP download through the stream,
/// its SYN's MSS clamped to the tunnel's 1400 bytes: none refused, its
/// time within 25 % of the simulator's (the MPTCP tunnel's tolerance: the
/// kernel's TCP at the ends against mplab's).
#[test]
fn mpquic_gateways_carry_udp_in_datagram_frames_and_tcp_in_the_stream() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("mpqg");
    let base = kernel_support::bundled("seed004-mpquic.toml").replace("duration = \"30s\"", "duration = \"10s\"").replace("bytes = \"10MB\"", "bytes = \"5MB\"");
    let k = run(&g, 0, &base);
    let s = sim(&base);
    let by = |r: &mplab_backend::results::Summary, n: &str| r.flows.iter().find(|f| f.name == n).cloned().unwrap();
    let t = by(&k.results.summary, "tunnel").tunnel.unwrap();
    eprintln!("kernel mpquic tunnel: {t:?}");
    for d in [&t.upstream, &t.downstream] {
        assert!(d.datagrams_in > 0 && d.quic_datagrams == d.datagrams_in && d.frame_bytes == 0, "{t:?}");
    }
    let dl = by(&k.results.summary, "download");
    assert!(dl.completed && dl.verified, "{dl:?}");
    let (kc, sc) = (by(&k.results.summary, "call").datagrams.unwrap().stream, by(&s.summary, "call").datagrams.unwrap().stream);
    eprintln!("call: kernel {kc:?}\n  sim {sc:?}");
    assert_eq!(kc.late, 0, "{kc:?}");
    assert!((kc.delay_p50_ms - sc.delay_p50_ms).abs() <= 2.5, "call p50: kernel {:.2} ms, sim {:.2} ms", kc.delay_p50_ms, sc.delay_p50_ms);

    let tcp = base.replace("transport = \"quic\"", "transport = \"tcp\"");
    let k = run(&g, 1, &tcp);
    let s = sim(&tcp);
    let (kd, sd) = (by(&k.results.summary, "download"), by(&s.summary, "download"));
    let t = by(&k.results.summary, "tunnel").tunnel.unwrap();
    eprintln!("tcp through the stream: kernel {:?} s, sim {:?} s; {t:?}", kd.completion_time_s, sd.completion_time_s);
    assert!(kd.completed && kd.verified && sd.completed, "{kd:?}");
    assert_eq!((t.upstream.oversize, t.downstream.oversize), (0, 0), "{t:?}");
    assert!(t.downstream.frame_bytes > 5_000_000, "{t:?}");
    let (kt, st) = (kd.completion_time_s.unwrap(), sd.completion_time_s.unwrap());
    assert!((kt - st).abs() <= 0.25 * st, "tcp download: kernel {kt:.2} s, sim {st:.2} s");
    g.assert_clean();
}
