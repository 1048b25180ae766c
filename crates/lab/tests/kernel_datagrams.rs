//! UDP flows with the datagram applications (`voip`, `game`) on the kernel
//! backend: kernel UDP sockets in the hosts' namespaces over mplab's link
//! emulator, measured by the same state machine as on the simulator. The
//! figures must match the simulator's within the emulator's accuracy
//! (delays within 1 ms, the same packets lost to a cut).
//! Needs root; each test cleans up its namespaces even when it fails.

mod kernel_support;

use kernel_support::{can_run, run, serial, NsGuard};

const SCENARIO: &str = r#"
name = "datagrams"
duration = "8s"

[[nodes]]
name = "c"

[[nodes]]
name = "s"

[[links]]
name = "wire"
a = "c"
b = "s"
rate = "10Mbit"
delay = "20ms"

[[flows]]
name = "call"
from = "c"
to = "s"
transport = "udp"
app = "voip"

[[flows]]
name = "game"
from = "c"
to = "s"
transport = "udp"
app = "game"

[[events]]
at = "3s"
link = "wire"
action = "down"

[[events]]
at = "4s"
link = "wire"
action = "up"
"#;

#[test]
fn kernel_datagrams_match_the_simulator() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("dgram");
    let k = run(&g, 0, SCENARIO);
    let net = mplab_scenario::Scenario::from_str(SCENARIO, "s.toml").unwrap().resolve().unwrap();
    let sim = mplab_sim::simulate(net).unwrap();
    for i in 0..2 {
        let (kf, sf) = (&k.results.summary.flows[i], &sim.summary.flows[i]);
        let (kd, sd) = (kf.datagrams.as_ref().expect("kernel datagram figures"), sf.datagrams.as_ref().unwrap());
        eprintln!("{}: kernel {:?}\n    sim {:?}", kf.name, kd, sd);
        assert!(kf.verified && kd.malformed == 0, "{kf:?}");
        // The schedule is the application's: the same count on both.
        assert!(kd.stream.sent.abs_diff(sd.stream.sent) <= 1, "{} vs {}", kd.stream.sent, sd.stream.sent);
        // The 1 s cut costs the same packets, give or take one at each edge.
        let (kl, sl) = (kd.stream.sent - kd.stream.received, sd.stream.sent - sd.stream.received);
        assert!(kl.abs_diff(sl) <= 2, "lost: kernel {kl}, sim {sl}");
        assert!((kd.stream.longest_interruption_ms - sd.stream.longest_interruption_ms).abs() <= 45.0, "{} vs {}", kd.stream.longest_interruption_ms, sd.stream.longest_interruption_ms);
        assert!((kd.stream.delay_p50_ms - sd.stream.delay_p50_ms).abs() <= 1.0, "{} vs {}", kd.stream.delay_p50_ms, sd.stream.delay_p50_ms);
    }
    let (kd, sd) = (k.results.summary.flows[1].datagrams.clone().unwrap(), sim.summary.flows[1].datagrams.clone().unwrap());
    assert!((kd.rtt_p50_ms.unwrap() - sd.rtt_p50_ms.unwrap()).abs() <= 1.5, "{:?} vs {:?}", kd.rtt_p50_ms, sd.rtt_p50_ms);
    g.assert_clean();
}

/// Two hosts on one 10 Mbit/s link with `delay` each way and a 100-packet
/// queue, and one flow `c` to `s` with `flow`'s fields.
fn two_hosts(name: &str, duration: &str, delay: &str, flow: &str) -> String {
    format!("name = \"{name}\"\nduration = \"{duration}\"\n[[nodes]]\nname = \"c\"\n[[nodes]]\nname = \"s\"\n[[links]]\na = \"c\"\nb = \"s\"\nrate = \"10Mbit\"\ndelay = \"{delay}\"\nqueue = {{ kind = \"droptail\", packets = 100 }}\n[[flows]]\nname = \"x\"\nfrom = \"c\"\nto = \"s\"\n{flow}")
}

/// QUIC (quinn-proto) over kernel UDP sockets against the simulator's
/// virtual clock: a 5 MB download over 10 Mbit/s and 20 ms, every byte
/// checked, the completion times within 10 %.
#[test]
fn kernel_quic_download_matches_the_simulator() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("quic");
    let text = two_hosts("quic", "10s", "20ms", "transport = \"quic\"\napp = \"download\"\nbytes = \"5MB\"\n");
    let text = text.as_str();
    let k = run(&g, 0, text);
    let sim = mplab_sim::simulate(mplab_scenario::Scenario::from_str(text, "q.toml").unwrap().resolve().unwrap()).unwrap();
    let (kf, sf) = (&k.results.summary.flows[0], &sim.summary.flows[0]);
    eprintln!("QUIC 5 MB: kernel {:?} s, sim {:?} s", kf.completion_time_s, sf.completion_time_s);
    assert!(kf.completed && kf.verified && sf.completed && sf.verified, "{kf:?}\n{sf:?}");
    let (kt, st) = (kf.completion_time_s.unwrap(), sf.completion_time_s.unwrap());
    assert!((kt - st).abs() <= 0.10 * st, "kernel {kt:.2} s, sim {st:.2} s");
    g.assert_clean();
}

/// A transport added by one file and its lines in mplab-backend (the
/// test-only stop-and-wait transport) runs on real packets with no other
/// edit: its engine over kernel UDP sockets, like QUIC's. 100 kB over
/// 10 Mbit/s and 10 ms each way, every byte checked: stop-and-wait takes a
/// round trip (at least the 20 ms of propagation) per 1000-byte datagram,
/// so at least 2 s, and the kernel run's time is the simulator's within
/// 15 % (each round trip adds a few thread wake-ups on real time).
#[test]
fn a_transport_added_by_one_file_runs_on_real_packets() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("fixsw");
    let text = two_hosts("fixsw", "8s", "10ms", "transport = \"fixture-stop-and-wait\"\napp = \"bulk\"\nbytes = \"100kB\"\n");
    let k = run(&g, 1, &text);
    let net = mplab_backend::plugins::resolve(&mplab_scenario::Scenario::from_str(&text, "x.toml").unwrap()).unwrap();
    let sim = mplab_sim::simulate(net).unwrap();
    let (kf, sf) = (&k.results.summary.flows[0], &sim.summary.flows[0]);
    eprintln!("stop-and-wait 100 kB: kernel {:?} s, sim {:?} s", kf.completion_time_s, sf.completion_time_s);
    assert!(kf.completed && kf.verified && kf.bytes_delivered == 100_000, "{kf:?}");
    assert!(sf.completed && sf.verified, "{sf:?}");
    let (kt, st) = (kf.completion_time_s.unwrap(), sf.completion_time_s.unwrap());
    assert!(kt >= 2.0, "kernel {kt:.3} s: faster than one datagram per round trip");
    assert!((kt - st).abs() <= 0.15 * st, "kernel {kt:.3} s, sim {st:.3} s");
    g.assert_clean();
}
