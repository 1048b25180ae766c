//! A middlebox written outside mplab's source, placed with
//! `World::add_middlebox`: a delay line that holds every packet for 15 ms
//! and releases it on its timer. It exercises the generic middlebox path
//! (packet in, packets out, one timer per box) end to end.

use std::collections::VecDeque;

use mplab_proto::Instant;
use mplab_scenario::Scenario;
use mplab_sim::middlebox::{Hook, Middlebox, Place};
use mplab_sim::packet::Packet;
use mplab_sim::World;

/// Holds each packet for `hold_ns` (a FIFO: deadlines only grow).
struct DelayLine {
    hold_ns: u64,
    held: VecDeque<(u64, Packet)>,
    released: u64,
}

impl Middlebox<Packet> for DelayLine {
    fn kind(&self) -> &'static str {
        "delay-line"
    }
    fn process(&mut self, now: Instant, _at: Hook, pkt: Packet, _out: &mut Vec<Packet>) {
        self.held.push_back((now.0 + self.hold_ns, pkt));
    }
    fn next_deadline(&self) -> Option<Instant> {
        self.held.front().map(|(t, _)| Instant(*t))
    }
    fn on_timer(&mut self, now: Instant, out: &mut Vec<Packet>) {
        while self.held.front().is_some_and(|(t, _)| *t <= now.0) {
            out.push(self.held.pop_front().unwrap().1);
            self.released += 1;
        }
    }
    fn note(&self, at: &str) -> Option<String> {
        Some(format!("delay line at {at}: {} packets released", self.released))
    }
}

const NET: &str = r#"
name = "delay-line"
duration = "10s"
[topology]
kind = "parallel"
paths = 1
rate = "10Mbit"
delay = "10ms"
[[flows]]
from = "client"
to = "server"
transport = "tcp"
app = "rate"
rate = "2Mbit"
bytes = "1MB"
[probes]
interval = "100ms"
srtt = true
"#;

fn run(delay_box: bool) -> mplab_sim::RunResults {
    let net = Scenario::from_str(NET, "t.toml").and_then(|s| s.resolve()).unwrap_or_else(|e| panic!("{e}"));
    let end = Instant(net.duration_ns);
    let mut w = World::new(net, None).unwrap();
    if delay_box {
        // The data direction of the only link (client -> server).
        w.add_middlebox(Place::Link(0), Box::new(DelayLine { hold_ns: 15_000_000, held: VecDeque::new(), released: 0 }));
    }
    w.run_until(end);
    w.finish("sim")
}

#[test]
fn a_user_middlebox_with_a_timer_delays_every_packet_and_loses_none() {
    let plain = run(false);
    let held = run(true);
    let (p, h) = (&plain.summary.flows[0], &held.summary.flows[0]);
    assert!(p.completed && p.verified && h.completed && h.verified, "{p:?}\n{h:?}");
    assert_eq!(h.bytes_delivered, 1_000_000);
    // 15 ms more one way (the 2 Mbit/s sender builds no queue): the
    // smoothed RTT grows by about that much.
    let (rp, rh) = (p.mean_srtt_ms.unwrap(), h.mean_srtt_ms.unwrap());
    eprintln!("srtt {rp:.1} ms -> {rh:.1} ms");
    assert!(rh - rp > 12.0 && rh - rp < 25.0, "srtt {rp:.1} ms -> {rh:.1} ms");
    let note = held.summary.notes.iter().find(|n| n.starts_with("delay line at link")).expect("the box's note");
    let released: u64 = note.rsplit(": ").next().unwrap().split(' ').next().unwrap().parse().unwrap();
    eprintln!("{note}");
    assert!(released > 680, "{note}");
}
