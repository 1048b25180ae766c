//! SCTP and CMT-SCTP flows on the simulator: the association of
//! crates/proto on simulated hosts, with real bytes checked at the reader.
//! Figures come from the link rates: two 10 Mbit/s, 10 ms paths; a DATA
//! chunk in a 1500-byte packet carries 1452 bytes (20 IP + 12 common
//! header + 16 chunk header), so one path carries at most 9.68 Mbit/s.

mod support;

use mplab_scenario::Scenario;
use mplab_sim::RunResults;
use support::*;

const ONE_PATH: f64 = 10.0 * 1452.0 / 1500.0;

fn two_paths(transport: &str, extra: &str) -> String {
    format!(
        r#"
name = "sctp-two-paths"
duration = "20s"

[topology]
kind = "parallel"
paths = 2
rate = "10Mbit"
delay = "10ms"
queue = {{ kind = "droptail", packets = 40 }}

[transport.sctp]
rcv_buf = "512KB"
snd_buf = "512KB"

[[flows]]
name = "x"
from = "client"
to = "server"
transport = "{transport}"
app = "bulk"
bytes = "12MB"

[probes]
interval = "100ms"
{extra}
"#
    )
}

fn flow(r: &RunResults) -> &mplab_sim::results::FlowSummary {
    &r.summary.flows[0]
}

/// Mean goodput of path `i` while the flow ran (per-path rows of flows.csv).
fn path_mbit(r: &RunResults, i: usize) -> f64 {
    let end = flow(r).completion_time_s.unwrap_or(20.0);
    let v: Vec<f64> = r.results_rows(i, end);
    v.iter().sum::<f64>() / v.len().max(1) as f64 / 1e6
}

trait Rows {
    fn results_rows(&self, path: usize, until: f64) -> Vec<f64>;
}

impl Rows for RunResults {
    fn results_rows(&self, path: usize, until: f64) -> Vec<f64> {
        let id = path.to_string();
        self.flows.iter().filter(|s| s.subflow == id && s.time_s > 1.0 && s.time_s <= until).map(|s| s.goodput_bps).collect()
    }
}

#[test]
fn cmt_sctp_aggregates_both_paths() {
    let r = run(&two_paths("cmt-sctp", ""));
    let f = flow(&r);
    assert!(f.completed && f.verified && f.bytes_delivered == 12_000_000, "{f:?}");
    let gp = f.goodput_bps / 1e6;
    eprintln!("cmt: {gp:.2} Mbit/s, paths {:.2} / {:.2}", path_mbit(&r, 0), path_mbit(&r, 1));
    assert!(gp > 1.8 * ONE_PATH && gp <= 2.0 * ONE_PATH, "CMT over two paths: {gp:.2} Mbit/s");
    assert_eq!(f.subflows.len(), 2, "one row per destination: {:?}", f.subflows);
    for i in 0..2 {
        let p = path_mbit(&r, i);
        assert!(p > 0.85 * ONE_PATH && p <= 1.01 * ONE_PATH, "path {i}: {p:.2} Mbit/s");
    }
}

#[test]
fn plain_sctp_sends_new_data_to_the_primary_only() {
    let r = run(&two_paths("sctp", ""));
    let f = flow(&r);
    assert!(f.completed && f.verified, "{f:?}");
    let gp = f.goodput_bps / 1e6;
    eprintln!("sctp: {gp:.2} Mbit/s");
    assert!(gp > 0.85 * ONE_PATH && gp <= ONE_PATH, "SCTP on its primary path: {gp:.2} Mbit/s");
    assert!(path_mbit(&r, 1) < 0.01, "the alternate path carried data");
}

/// The primary path goes down for good: RFC 9260 6.4.1 retransmits to an
/// alternate destination after the T3-rtx timeout, and the path's error
/// count marks it inactive, so the transfer completes on the other path.
#[test]
fn plain_sctp_fails_over_when_the_primary_path_is_cut() {
    let r = run(&two_paths("sctp", "\n[[events]]\nat = \"3s\"\nlink = \"path0\"\naction = \"down\"\n"));
    let f = flow(&r);
    assert!(f.completed && f.verified && f.bytes_delivered == 12_000_000, "{f:?}");
    assert!(f.rto_count > 0, "the cut went unnoticed: {f:?}");
    let t = f.completion_time_s.unwrap();
    eprintln!("failover: completed at {t:.2} s, {} timeouts", f.rto_count);
    // 3 s at one path's rate, then the rest on the other after at most a
    // few seconds of timeouts (RTO.Min 1 s, doubling).
    assert!(t < 12.0, "failover took too long: completed at {t:.2} s");
    assert!(r.flows.iter().any(|s| s.subflow == "1" && s.time_s > 6.0 && s.goodput_bps > 0.8 * ONE_PATH * 1e6), "the alternate path never carried the transfer");
}

#[test]
fn every_cmt_variant_completes_and_uses_both_paths() {
    for v in ["cmt", "rpv1", "rpv2", "mptcp"] {
        let mut sc = Scenario::from_str(&two_paths("cmt-sctp", ""), "t.toml").unwrap();
        sc.set_all([("transport.sctp.cmt", v)]).unwrap();
        let r = run_scenario(sc);
        let f = flow(&r);
        assert!(f.completed && f.verified, "{v}: {f:?}");
        let gp = f.goodput_bps / 1e6;
        eprintln!("{v}: {gp:.2} Mbit/s");
        assert!(gp > 1.5 * ONE_PATH, "{v}: {gp:.2} Mbit/s");
    }
}

/// A receive buffer smaller than the bandwidth-delay product bounds the
/// rate at about buffer / RTT (16 KB / 20 ms = 6.6 Mbit/s over both paths).
#[test]
fn a_small_receive_buffer_bounds_cmt() {
    let mut sc = Scenario::from_str(&two_paths("cmt-sctp", ""), "t.toml").unwrap();
    sc.set_all([("transport.sctp.rcv_buf", "16KB"), ("flows.0.bytes", "4MB")]).unwrap();
    let r = run_scenario(sc);
    let f = flow(&r);
    assert!(f.completed && f.verified, "{f:?}");
    let gp = f.goodput_bps / 1e6;
    let bound = 16.0 * 1024.0 * 8.0 / 0.020 / 1e6;
    eprintln!("16 KB buffer: {gp:.2} Mbit/s, bound {bound:.2}");
    assert!(gp < 1.1 * bound && gp > 0.5 * bound, "{gp:.2} Mbit/s against buffer/RTT {bound:.2}");
}

#[test]
fn same_seed_same_results() {
    let a = run(&two_paths("cmt-sctp", ""));
    let b = run(&two_paths("cmt-sctp", ""));
    assert_eq!(serde_json::to_string(&a.summary).unwrap(), serde_json::to_string(&b.summary).unwrap());
    assert_eq!(a.flows.len(), b.flows.len());
}

#[test]
fn tcp_knobs_on_an_sctp_flow_are_errors_that_name_the_field() {
    let text = two_paths("sctp", "").replace("app = \"bulk\"", "app = \"bulk\"\ncc = \"reno\"");
    let e = Scenario::from_str(&text, "t.toml").unwrap().resolve().unwrap_err().to_string();
    assert!(e.contains("flows[0].cc") && e.contains("[transport.sctp]"), "{e}");
    let text = two_paths("cmt-sctp", "").replace("rcv_buf = \"512KB\"", "rcv_buf = \"512KB\"\ncmt = \"cmt3\"");
    let e = Scenario::from_str(&text, "t.toml").unwrap_err().to_string();
    assert!(e.contains("t.toml:14") && e.contains("transport.sctp.cmt") && e.contains("rpv1"), "{e}");
}

/// The simulator's SCTP captures are what tshark reads as SCTP: the
/// four-way handshake, DATA and SACK/NR-SACK, no malformed packet and no
/// bad CRC32c. Skipped (with a note) where tshark is not installed.
#[test]
fn sctp_capture_decodes_in_tshark() {
    if std::process::Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("tshark not installed: skipped");
        return;
    }
    let text = two_paths("cmt-sctp", "pcap = [\"client\"]").replace("bytes = \"12MB\"", "bytes = \"300KB\"");
    let net = Scenario::from_str(&text, "t.toml").unwrap().resolve().unwrap();
    let dir = std::env::temp_dir().join(format!("mplab-sctp-pcap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let end = mplab_proto::Instant(net.duration_ns);
    let mut w = mplab_sim::World::new(net, Some(dir.clone())).unwrap();
    w.run_until(end);
    let r = w.finish("sim");
    assert!(flow(&r).verified, "{:?}", flow(&r));
    let tshark = |file: &str, args: &[&str]| {
        let out = std::process::Command::new("tshark").arg("-r").arg(dir.join(file)).args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let chunks = tshark("client-eth0.pcap", &["-T", "fields", "-e", "sctp.chunk_type"]);
    let first: Vec<&str> = chunks.lines().take(4).collect();
    assert_eq!(first, ["1", "2", "10", "11"], "INIT, INIT ACK, COOKIE ECHO, COOKIE ACK");
    assert!(chunks.lines().any(|l| l.split(',').any(|c| c == "0")), "no DATA");
    assert!(chunks.lines().any(|l| l.split(',').any(|c| c == "16")), "no NR-SACK (negotiated by default)");
    let bad = tshark("client-eth0.pcap", &["-o", "sctp.checksum:TRUE", "-Y", "sctp.checksum.status == 0 || _ws.malformed || _ws.expert.severity >= error"]);
    assert!(bad.trim().is_empty(), "tshark flags packets:\n{bad}");
    // The second path carries DATA too (CMT), from the client's other address.
    let second = tshark("client-eth1.pcap", &["-Y", "sctp.chunk_type == 0", "-T", "fields", "-e", "ip.src"]);
    assert!(second.lines().count() > 10 && second.lines().all(|l| l == "10.0.1.2"), "{second}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `profile = "usrsctp"` charges 256 bytes per outstanding chunk against
/// the peer's window, as FreeBSD's sctp_peer_chunk_oh does: where the
/// receive buffer limits the rate, it carries about 1452 / (1452 + 256) =
/// 85 % of what RFC 9260's accounting carries.
#[test]
fn the_usrsctp_profile_charges_chunk_overhead_against_the_window() {
    let rate = |profile: &str| {
        let mut sc = Scenario::from_str(&two_paths("sctp", ""), "t.toml").unwrap();
        sc.set_all([("transport.sctp.rcv_buf", "12KB"), ("flows.0.bytes", "2MB"), ("transport.sctp.profile", profile)]).unwrap();
        let r = run_scenario(sc);
        assert!(flow(&r).verified, "{profile}: {:?}", flow(&r));
        flow(&r).goodput_bps / 1e6
    };
    let (rfc, us) = (rate("rfc"), rate("usrsctp"));
    eprintln!("12 KB window: rfc {rfc:.2}, usrsctp {us:.2} Mbit/s ({:.2})", us / rfc);
    let expect = 1452.0 / (1452.0 + 256.0);
    assert!((us / rfc - expect).abs() < 0.06, "ratio {:.3}, expected about {expect:.3}", us / rfc);
}
