//! The byte-stream applications of flows, checked by the backend's
//! registry when a scenario is loaded for a run: an error names the field
//! and its line, and the resolved network shows each application's
//! validated parameters.

mod common;

use common::{load, BASE};
use mplab_backend::apps::{sends, Kind, Sends};
use mplab_backend::plugins::resolve;
use mplab_scenario::Scenario;

/// Lines 14-17: `[[flows]]`, from, to, transport; `extra` from line 18.
fn flow(transport: &str, extra: &str) -> String {
    format!("{BASE}\n[[flows]]\nfrom = \"c\"\nto = \"s\"\ntransport = \"{transport}\"\n{extra}")
}

fn error(text: &str) -> String {
    load(text).expect_err("a bad application")
}

fn app_json(text: &str) -> String {
    let net = load(text).unwrap_or_else(|e| panic!("{e}"));
    serde_json::to_string(&net.flows[0].app).unwrap()
}

#[test]
fn application_errors_name_the_field_and_line() {
    assert_eq!(error(&flow("tcp", "app = \"rate\"\n")), r#"scenario.toml:14:1: flows[0]: missing field `rate` (app = "rate")"#);
    assert_eq!(error(&flow("tcp", "rate = \"1Mbit\"\n")), r#"scenario.toml:18:8: flows[0].rate: does not apply to app = "bulk" (it takes bytes)"#);
    assert_eq!(error(&flow("tcp", "packet_size = \"100B\"\n")), r#"scenario.toml:18:15: flows[0].packet_size: does not apply to app = "bulk" (it takes bytes)"#);
    assert_eq!(error(&flow("tcp", "bytes = \"0B\"\n")), r#"scenario.toml:18:9: flows[0].bytes: must be greater than 0 (leave it out to send until stop)"#);
    assert_eq!(error(&flow("tcp", "bytes = \"ten\"\n")), r#"scenario.toml:18:9: flows[0].bytes: invalid size "ten": expected a number with unit B/KB/MB/GB (powers of 1000) or KiB/MiB/GiB (powers of 1024) (e.g. "64KB")"#);
    assert_eq!(error(&flow("mptcp", "app = \"request\"\nrequest_size = \"1KB\"\n")), r#"scenario.toml:14:1: flows[0]: missing field `response_size` (app = "request")"#);
    let e = error(&flow("tcp", "app = \"bulkk\"\n"));
    assert!(e.starts_with("scenario.toml:18:7: flows[0].app: unknown variant `bulkk`, expected one of `bulk`, `rate`, `download`, `request`, `voip`, `game`, `tunnel`, `converter`"), "{e}");
    // Over datagrams a byte-stream application cannot run.
    assert_eq!(error(&flow("udp", "")), r#"scenario.toml:14:1: flows[0].app: app = "bulk" needs a byte stream; over transport = "udp" use app = "voip" or "game""#);
}

/// The datagram applications (crates/backend/src/datagram/) go over UDP,
/// name their bad fields with the line, and show their validated
/// parameters in the resolved network.
#[test]
fn datagram_applications_go_over_udp_and_name_their_fields() {
    assert_eq!(error(&flow("tcp", "app = \"voip\"\n")), r#"scenario.toml:17:13: flows[0].transport: app = "voip" sends datagrams: give transport = "udp""#);
    assert_eq!(error(&flow("quic", "app = \"voip\"\n")), r#"scenario.toml:17:13: flows[0].transport: app = "voip" sends datagrams: give transport = "udp""#);
    assert_eq!(
        error(&flow("udp", "app = \"voip\"\npacket_size = \"19B\"\n")),
        r#"scenario.toml:19:15: flows[0].packet_size: must be 20 B (its sequence number and send time) to 65507 B (UDP over IPv4), got 19 B"#
    );
    assert_eq!(error(&flow("udp", "app = \"game\"\ninterval = \"0ms\"\n")), r#"scenario.toml:19:12: flows[0].interval: must be 1ms to 10s"#);
    assert_eq!(error(&flow("udp", "app = \"voip\"\nrate = \"1Mbit\"\n")), r#"scenario.toml:19:8: flows[0].rate: does not apply to app = "voip" (it takes interval, packet_size)"#);
    let e = error(&flow("udp", "app = \"voipp\"\n"));
    assert!(e.starts_with("scenario.toml:18:7: flows[0].app: unknown variant `voipp`, expected one of `bulk`, `rate`, `download`, `request`, `voip`, `game`, `tunnel`, `converter`"), "{e}");
    assert_eq!(error(&flow("udp", "app = \"download\"\n")), r#"scenario.toml:18:7: flows[0].app: app = "download" needs a byte stream; over transport = "udp" use app = "voip" or "game""#);
    assert_eq!(app_json(&flow("udp", "app = \"game\"\npacket_size = \"100B\"\ninterval = \"15ms\"\n")), r#"{"kind":"game","packet_bytes":100,"interval_ns":15000000}"#);
    assert_eq!(app_json(&flow("udp", "app = \"voip\"\n")), r#"{"kind":"voip","packet_bytes":160,"interval_ns":20000000}"#);
    // The server of a game echoes: both ends send; a call's listener does not.
    let net = load(&flow("udp", "app = \"game\"\n")).unwrap();
    assert!(sends(&net.flows[0].app, true) && sends(&net.flows[0].app, false));
    let net = load(&flow("udp", "app = \"voip\"\n")).unwrap();
    assert!(sends(&net.flows[0].app, true) && !sends(&net.flows[0].app, false));
}

/// A field set by `--set` that the application does not take is refused
/// at the override.
#[test]
fn an_override_the_application_does_not_take_is_refused() {
    let mut sc = Scenario::from_str(&flow("tcp", ""), "scenario.toml").unwrap();
    sc.set("flows.0.ratee", "5").unwrap();
    let e = resolve(&sc).unwrap_err().to_string();
    assert_eq!(e, r#"scenario.toml: --set flows.0.ratee=5: flows[0].ratee: does not apply to app = "bulk" (it takes bytes)"#);
}

/// network.json shows what each application resolved to, in the order of
/// its parameters.
#[test]
fn the_resolved_network_shows_each_applications_parameters() {
    assert_eq!(app_json(&flow("tcp", "")), r#"{"kind":"bulk","bytes":null}"#);
    assert_eq!(app_json(&flow("tcp", "bytes = \"10MB\"\n")), r#"{"kind":"bulk","bytes":10000000}"#);
    assert_eq!(app_json(&flow("tcp", "app = \"rate\"\nrate = \"7.5Mbit\"\n")), r#"{"kind":"rate","rate_bps":7500000,"bytes":null}"#);
    assert_eq!(app_json(&flow("tcp", "app = \"download\"\nbytes = \"10MB\"\n")), r#"{"kind":"download","bytes":10000000}"#);
    assert_eq!(
        app_json(&flow("mptcp", "app = \"request\"\nrequest_size = \"100B\"\nresponse_size = \"1MiB\"\ninterval = \"10ms\"\n")),
        r#"{"kind":"request","request_bytes":100,"response_bytes":1048576,"count":null,"interval_ns":10000000}"#
    );
}

#[test]
fn each_application_says_which_end_writes() {
    let app = |extra: &str| load(&flow("tcp", extra)).unwrap().flows.remove(0).app;
    let dl = app("app = \"download\"\nbytes = \"1MB\"\n");
    assert_eq!(Kind::of(&dl).sends(), Sends::Server);
    assert!(!sends(&dl, true) && sends(&dl, false));
    assert!(sends(&app(""), true) && !sends(&app(""), false));
    assert_eq!(Kind::of(&dl).bounded(), Some(1_000_000));
}
