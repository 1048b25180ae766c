//! UDP flows with the datagram applications (`voip`, `game`) on the
//! simulator. Expected figures come from the link: 20 ms one way at
//! 10 Mbit/s, so a datagram of P payload bytes (P + 28 on the wire) is
//! delayed 20 ms + (P + 28) * 8 / 10 Mbit/s.

mod support;

use support::*;

fn link_delay_ms(payload: f64) -> f64 {
    20.0 + (payload + 28.0) * 8.0 / 10e6 * 1e3
}

fn scenario(flows: &str, extra: &str) -> String {
    format!(
        r#"
name = "datagrams"
duration = "20s"

[[nodes]]
name = "client"

[[nodes]]
name = "server"

[[links]]
name = "wire"
a = "client"
b = "server"
rate = "10Mbit"
delay = "20ms"
queue = {{ kind = "droptail", packets = 100 }}
{flows}
{extra}
"#
    )
}

const VOIP: &str = r#"
[[flows]]
name = "call"
from = "client"
to = "server"
transport = "udp"
app = "voip"
"#;

const GAME: &str = r#"
[[flows]]
name = "game"
from = "client"
to = "server"
transport = "udp"
app = "game"
"#;

/// A clean call: every packet on time, at the link's delay, no jitter.
#[test]
fn a_clean_call_arrives_at_the_link_delay() {
    let r = run(&scenario(VOIP, ""));
    let f = &r.summary.flows[0];
    let d = f.datagrams.as_ref().expect("datagram figures");
    // One every 20 ms from 0 s; those sent in the last second are left out.
    assert_eq!((d.app.as_str(), d.stream.sent, d.stream.received, d.stream.late), ("voip", 951, 951, 0));
    assert!((d.stream.delay_p50_ms - link_delay_ms(160.0)).abs() < 1e-3, "{}", d.stream.delay_p50_ms);
    assert!((d.stream.delay_max_ms - d.stream.delay_p50_ms).abs() < 1e-3, "no queueing, no spread");
    assert_eq!(d.stream.longest_interruption_ms, 0.0);
    assert!(d.stream.mos > 4.3, "{}", d.stream.mos);
    assert!(f.verified && d.malformed == 0 && d.duplicates == 0);
    // 50 datagrams/s of 160 B: all but the last (sent at 19.98 s) arrived
    // by the end.
    assert_eq!(f.bytes_delivered, 999 * 160);
}

/// A 1 s cut of the only link: 50 packets lost in one burst, and the
/// listener hears nothing for 1 s.
#[test]
fn a_cut_is_a_burst_loss_and_an_interruption() {
    let cut = "[[events]]\nat = \"5s\"\nlink = \"wire\"\naction = \"down\"\n\n[[events]]\nat = \"6s\"\nlink = \"wire\"\naction = \"up\"\n";
    let r = run(&scenario(VOIP, cut));
    let d = r.summary.flows[0].datagrams.clone().unwrap();
    let lost = d.stream.sent - d.stream.received;
    // Sent in [5 s, 6 s), plus at most one on the wire when it went down.
    assert!((50..=51).contains(&lost), "{lost}");
    assert!((d.stream.longest_interruption_ms - lost as f64 * 20.0).abs() < 1e-6, "{}", d.stream.longest_interruption_ms);
    assert!(d.stream.burst_ratio > 10.0, "{}", d.stream.burst_ratio);
    assert!(d.stream.mos < 4.0, "{}", d.stream.mos);
}

/// A game's updates come back after two link delays.
#[test]
fn game_round_trips_are_two_link_delays() {
    let r = run(&scenario(GAME, ""));
    let d = r.summary.flows[0].datagrams.clone().unwrap();
    let rtt = 2.0 * link_delay_ms(64.0);
    for p in [d.rtt_p50_ms, d.rtt_p99_ms, d.rtt_max_ms] {
        assert!((p.unwrap() - rtt).abs() < 1e-3, "{p:?} vs {rtt}");
    }
    assert_eq!(d.echo_loss_ratio, Some(0.0));
    // Every 30 ms for 19 s.
    assert_eq!(d.stream.sent, 634);
}

/// Beside a bulk TCP flow the call waits in the link's queue: its delay
/// grows by up to the queue's 100 packets (120 ms at 10 Mbit/s), no more.
#[test]
fn a_bulk_flow_queues_the_call() {
    let bulk = "[[flows]]\nname = \"bulk\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"tcp\"\napp = \"bulk\"\n";
    let r = run(&scenario(&format!("{VOIP}{bulk}"), ""));
    let d = r.summary.flows[0].datagrams.clone().unwrap();
    let queue_ms = 100.0 * 1500.0 * 8.0 / 10e6 * 1e3;
    assert!(d.stream.delay_p99_ms > link_delay_ms(160.0) + queue_ms / 2.0, "{}", d.stream.delay_p99_ms);
    assert!(d.stream.delay_max_ms <= link_delay_ms(160.0) + queue_ms + 1.3, "{}", d.stream.delay_max_ms);
    assert!(d.stream.jitter_max_ms > 1.0);
    assert!(r.summary.flows[1].goodput_bps > 9e6);
}

/// Same seed, same bits.
#[test]
fn datagram_runs_are_deterministic() {
    let text = scenario(&format!("{VOIP}{GAME}"), "").replace("delay = \"20ms\"", "delay = \"20ms\"\nloss = 0.02\njitter = \"3ms\"");
    assert!(text.contains("jitter"));
    let a = serde_json::to_string(&run(&text).summary).unwrap();
    let b = serde_json::to_string(&run(&text).summary).unwrap();
    assert_eq!(a, b);
}
