//! RFC 8803 Transport Converters in the hybrid-access gateways on the
//! simulator: client - CPE = two access links = HAG - server; the CPE ends
//! each client TCP connection and carries it to the HAG in an MPTCP
//! connection led by a Convert message, the HAG connects to the server.
//! Expected figures come from the links: two 20 Mbit/s access links.

mod support;

use support::*;

const HEAD: &str = "name = \"converter\"\nduration = \"20s\"\n";

const CONVERTER: &str = r#"
[[flows]]
name = "converter"
from = "cpe"
to = "hag"
transport = "mptcp"
app = "converter"
"#;

const DOWNLOAD: &str = "\n[[flows]]\nname = \"download\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"tcp\"\napp = \"download\"\nbytes = \"10MB\"\nstart = \"1s\"\n";
const UPLOAD: &str = "\n[[flows]]\nname = \"upload\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"tcp\"\napp = \"bulk\"\nbytes = \"5MB\"\nstart = \"1s\"\n";

fn with(parts: &[&str]) -> String {
    let mut s = format!("{HEAD}{HYBRID_ACCESS}{CONVERTER}");
    for p in parts {
        s += p;
    }
    s
}

fn converter(r: &mplab_sim::RunResults) -> mplab_backend::results::ConverterSummary {
    r.summary.flows[0].tunnel.as_ref().and_then(|t| t.converter.clone()).expect("converter figures")
}

/// A client's plain TCP download becomes one MPTCP connection between the
/// gateways, which fills both access links: every byte arrives, faster
/// than either link alone could carry it.
#[test]
fn a_download_is_converted_and_uses_both_access_links() {
    let r = run(&with(&[DOWNLOAD]));
    let d = &r.summary.flows[1];
    assert!(d.completed && d.verified, "{d:?}");
    assert_eq!(d.bytes_delivered, 10_000_000);
    let c = converter(&r);
    assert_eq!((c.connections, c.converted, c.bytes_down), (1, 1, 10_000_000));
    assert!(c.errors.is_empty() && c.resets == 0);
    // The request (header and base Connect TLV, 24 B) and the answer
    // (header and an Extended TCP Header TLV of 12 option bytes, 20 B).
    assert_eq!(c.message_bytes, 44);
    // 10 MB over 40 Mbit/s of access is 2.0 s at the links' rate; one link
    // alone needs 4.0 s. Headers and slow start cost the rest.
    let t = d.completion_time_s.unwrap();
    assert!((2.0..2.6).contains(&t), "{t}");
    // Both subflows of the carrier carried data.
    let per_subflow: Vec<u64> = ["0", "1"].iter().map(|s| r.flows.iter().filter(|x| x.flow == "converter~download" && x.subflow == *s).map(|x| x.goodput_bps as u64).sum()).collect();
    assert!(per_subflow.iter().all(|&g| g > 50_000_000), "{per_subflow:?}");
}

/// An upload goes the other way through the same converters.
#[test]
fn an_upload_is_converted_too() {
    let r = run(&with(&[UPLOAD]));
    let u = &r.summary.flows[1];
    assert!(u.completed && u.verified, "{u:?}");
    let c = converter(&r);
    assert_eq!((c.connections, c.converted, c.bytes_up, c.bytes_down), (1, 1, 5_000_000, 0));
}

/// A destination the HAG refuses: the answer is an Error TLV (Not
/// Authorized), counted, and the client's connection is reset; the other
/// flow through the same converters is served.
#[test]
fn a_refused_destination_is_answered_and_counted() {
    let other = "\n[[nodes]]\nname = \"other\"\n\n[[links]]\nname = \"core2\"\na = \"hag\"\nb = \"other\"\nrate = \"1Gbit\"\n\n[[flows]]\nname = \"refused\"\nfrom = \"client\"\nto = \"other\"\ntransport = \"tcp\"\napp = \"download\"\nbytes = \"1MB\"\nstart = \"1s\"\n";
    let base = with(&[DOWNLOAD, other]);
    let net = mplab_scenario::Scenario::from_str(&base, "t.toml").unwrap().resolve().unwrap();
    let other_addr = net.flows[2].dst;
    let r = run(&base.replace("app = \"converter\"", &format!("app = \"converter\"\nrefuse = [\"{other_addr}\"]")));
    let c = converter(&r);
    assert_eq!((c.connections, c.converted), (2, 1));
    assert_eq!(c.errors.get("Not Authorized (32)"), Some(&1), "{c:?}");
    let (served, refused) = (&r.summary.flows[1], &r.summary.flows[2]);
    assert!(served.completed && served.verified);
    assert!(!refused.completed && refused.bytes_delivered == 0, "{refused:?}");
}

/// A server that never answers: the HAG's SYNs time out and the answer
/// is Destination Unreachable.
#[test]
fn an_unreachable_server_is_answered_destination_unreachable() {
    let down = "\n[[events]]\nat = \"0s\"\nlink = \"core\"\naction = \"down\"\n";
    let r = run(&with(&[DOWNLOAD, down]).replace("duration = \"20s\"", "duration = \"200s\""));
    let c = converter(&r);
    assert_eq!((c.connections, c.converted), (1, 0));
    assert_eq!(c.errors.get("Destination Unreachable (97)"), Some(&1), "{c:?}");
    assert!(!r.summary.flows[1].completed);
}

/// The request in the SYN (TCP Fast Open) is the kernel backend's; the
/// simulator refuses it by name rather than run something else.
#[test]
fn fast_open_is_refused_by_name() {
    let net = mplab_scenario::Scenario::from_str(&with(&[DOWNLOAD]).replace("app = \"converter\"", "app = \"converter\"\nfast_open = true"), "t.toml").unwrap().resolve().unwrap();
    let e = mplab_sim::simulate(net).err().expect("refused").to_string();
    assert!(e.contains("fast_open") && e.contains("not implemented by the simulator"), "{e}");
}

/// Hybrid access as deployed (the bundled seed004-hybrid): TCP through
/// the converters, UDP in a datagram-mode tunnel beside them. With 5 %
/// loss on cellular the call crosses at a link's delay, untouched by the
/// download's recoveries; in the stream of an MPTCP tunnel it waits
/// behind the tunnel's own.
#[test]
fn a_call_in_the_datagram_tunnel_beside_converted_tcp() {
    let r = bundled("seed004-hybrid.toml", &[("links.1.loss", "0.05")]);
    let by = |r: &mplab_sim::RunResults, n: &str| r.summary.flows.iter().find(|f| f.name == n).cloned().unwrap();
    let (d, call) = (by(&r, "download"), by(&r, "call").datagrams.unwrap().stream);
    assert!(d.completed && d.verified, "{d:?}");
    assert_eq!((call.late, call.received), (0, call.sent));
    // 10 ms on either access link and 2 ms of core; at most a packet's
    // time queued behind the download's acknowledgements.
    assert!(call.delay_p99_ms < 13.0, "{call:?}");
    let s = bundled("seed004-hybrid.toml", &[("links.1.loss", "0.05"), ("flows.0.mode", "stream")]);
    let late = by(&s, "call").datagrams.unwrap().stream;
    assert!(late.late > 0 && late.delay_p99_ms > 40.0, "{late:?}");
}

/// The same seed gives the same run, byte for byte.
#[test]
fn converted_runs_are_deterministic() {
    let a = run(&with(&[DOWNLOAD, UPLOAD]));
    let b = run(&with(&[DOWNLOAD, UPLOAD]));
    assert_eq!(serde_json::to_string(&a.summary).unwrap(), serde_json::to_string(&b.summary).unwrap());
    assert_eq!(converter(&a).connections, 2);
}
