//! A transport added by one file and its `mod` line in mplab-backend (the
//! test-only `fixture-stop-and-wait`, which registers its facts and its
//! engine itself; compiled for tests by the `test-fixtures` feature),
//! named by a scenario and run on the simulator like every bundled
//! transport: nothing else in the simulator or the scenario crate changed.

use mplab_proto::Instant;
use mplab_scenario::Scenario;
use mplab_sim::World;

/// 200 kB over one 10 Mbit/s path with 10 ms one-way delay, `loss` on both
/// directions.
fn run(loss: &str) -> mplab_sim::RunResults {
    let text = format!(
        r#"
name = "fixture-transport"
duration = "60s"
[topology]
kind = "parallel"
paths = 1
rate = "10Mbit"
delay = "10ms"
loss = "{loss}"
[[flows]]
from = "client"
to = "server"
transport = "fixture-stop-and-wait"
app = "bulk"
bytes = "200kB"
"#
    );
    let sc = Scenario::from_str(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    let net = mplab_backend::plugins::resolve(&sc).unwrap_or_else(|e| panic!("{e}"));
    assert!(mplab_sim::unsupported(&net).is_empty(), "{:?}", mplab_sim::unsupported(&net));
    let end = Instant(net.duration_ns);
    let mut w = World::new(net, None).unwrap();
    w.run_until(end);
    w.finish("sim")
}

#[test]
fn a_transport_added_by_one_file_carries_a_checked_stream_on_the_simulator() {
    let r = run("0%");
    let f = &r.summary.flows[0];
    assert!(f.completed && f.verified, "{f:?}");
    assert_eq!(f.bytes_delivered, 200_000);
    // Stop-and-wait: 200 datagrams of 1000 bytes, each waiting a round
    // trip of at least 20 ms (the propagation delay alone), so the
    // transfer cannot take less than 4 s; with nothing lost it takes that
    // plus the serialisation (~0.85 ms per datagram and ACK) and the
    // HELLO's round trip: under 4.5 s.
    let t = f.completion_time_s.unwrap_or_else(|| panic!("{f:?}"));
    assert!((4.0..4.5).contains(&t), "completion {t} s");
}

#[test]
fn it_recovers_every_lost_datagram_one_timeout_each() {
    let clean = run("0%").summary.flows[0].completion_time_s.unwrap();
    let r = run("3%");
    let f = &r.summary.flows[0];
    assert!(f.completed && f.verified, "{f:?}");
    assert_eq!(f.bytes_delivered, 200_000);
    // 3 % of ~400 datagrams (DATA one way, ACK the other) are lost; each
    // loss, of a DATA or of its ACK, costs one 200 ms timeout in place of
    // nothing, and the datagram is sent again: the transfer takes the
    // lossless time plus 200 ms per timeout, within a few serialisation
    // times (0.85 ms each).
    let t = f.completion_time_s.unwrap();
    assert!(f.rto_count > 0, "nothing was lost: {f:?}");
    let expected = clean + 0.2 * f.rto_count as f64;
    assert!((t - expected).abs() < 0.01, "completion {t} s, expected {expected} s ({} timeouts)", f.rto_count);
}
