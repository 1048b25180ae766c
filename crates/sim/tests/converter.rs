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

/// With `fast_open` the CPE's request rides the carrier's SYN (TCP Fast
/// Open without cookies): the HAG judges it and connects to the server as
/// the SYN arrives, a round trip of the carrier earlier than without.
/// Every byte still arrives. A download of one initial window shows what
/// that is worth: over a TCP carrier, whose HAG end answers right after
/// its SYN-ACK, the whole round trip; over MPTCP, whose HAG end answers
/// only once the third ACK brings the CPE's key (as Linux: a Linux CPE
/// would fall back to TCP on an earlier answer), only what the HAG did
/// meanwhile: the server's handshake and its first bytes, two round trips
/// of the core link.
#[test]
fn fast_open_puts_the_request_in_the_syn() {
    let fast_open = |text: &str| text.replace("app = \"converter\"", "app = \"converter\"\nfast_open = true");
    let r = run(&fast_open(&with(&[DOWNLOAD])));
    let d = &r.summary.flows[1];
    assert!(d.completed && d.verified, "{d:?}");
    assert_eq!(d.bytes_delivered, 10_000_000);
    let c = converter(&r);
    assert_eq!((c.connections, c.converted, c.fast_open, c.bytes_down, c.message_bytes), (1, 1, 1, 10_000_000, 44));
    assert!(c.errors.is_empty() && c.resets == 0);
    assert_eq!(converter(&run(&with(&[DOWNLOAD]))).fast_open, 0);

    // 10 KB: one flight of the server's initial window. The carrier's
    // first subflow runs on the fixed line (10 ms each way), the HAG
    // reaches the server over the core link (2 ms each way).
    let (carrier_rtt, core_rtt): (f64, f64) = (2.0 * 0.010, 2.0 * 0.002);
    let small = with(&[&DOWNLOAD.replace("10MB", "10KB")]);
    let run_small = |text: &str| {
        let r = run(text);
        let d = &r.summary.flows[1];
        assert!(d.completed && d.verified && d.bytes_delivered == 10_000, "{d:?}");
        assert_eq!(converter(&r).fast_open, u64::from(text.contains("fast_open = true")));
        (d.completion_time_s.unwrap(), serde_json::to_string(&r.summary).unwrap())
    };
    for (transport, saved) in [("tcp", carrier_rtt), ("mptcp", (2.0 * core_rtt).min(carrier_rtt))] {
        let text = small.replace("transport = \"mptcp\"\napp = \"converter\"", &format!("transport = \"{transport}\"\napp = \"converter\""));
        assert!(text.contains(&format!("transport = \"{transport}\"\napp = \"converter\"")));
        let (plain, _) = run_small(&text);
        let (fo, summary) = run_small(&fast_open(&text));
        assert!((plain - fo - saved).abs() < core_rtt / 2.0, "{transport}: {plain} s without Fast Open, {fo} s with");
        assert_eq!(run_small(&fast_open(&text)).1, summary, "{transport}: the same run twice");
    }
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
