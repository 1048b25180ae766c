//! Whole scenarios on the simulator, checked against what the link rates,
//! delays and loss rates say the figures must be.

mod support;

use support::*;

fn one_link(rate: &str, delay: &str, queue_pkts: u32, extra_link: &str, flow: &str, duration: &str) -> String {
    format!(
        r#"
name = "t"
duration = "{duration}"
[[nodes]]
name = "client"
[[nodes]]
name = "server"
[[links]]
name = "l"
a = "client"
b = "server"
rate = "{rate}"
delay = "{delay}"
queue = {{ kind = "droptail", packets = {queue_pkts} }}
{extra_link}
[[flows]]
name = "f"
from = "client"
to = "server"
transport = "tcp"
{flow}
"#
    )
}

fn mbit(bps: f64) -> f64 {
    bps / 1e6
}

#[test]
fn one_tcp_flow_fills_a_10_mbit_link() {
    // BDP = 10 Mbit/s x 40 ms = 50 KB = 34 full packets; queue of one BDP.
    let r = run(&one_link("10Mbit", "20ms", 34, "", "app = \"bulk\"", "30s"));
    let f = &r.summary.flows[0];
    assert!(f.verified);
    assert!(f.goodput_bps >= 0.95 * 10e6, "goodput {:.3} Mbit/s", mbit(f.goodput_bps));
    // Payload cannot beat the link rate times 1448/1500.
    assert!(f.goodput_bps <= 10e6 * 1448.0 / 1500.0 * 1.001);
}

#[test]
fn receive_window_of_a_quarter_bdp_gives_window_over_rtt() {
    let r = run(&one_link("10Mbit", "20ms", 34, "", "app = \"bulk\"\nrcv_buf = \"12500B\"", "30s"));
    let f = &r.summary.flows[0];
    let rtt = f.mean_srtt_ms.unwrap() / 1e3;
    let expect = 12_500.0 * 8.0 / rtt;
    assert!((f.goodput_bps / expect - 1.0).abs() < 0.10, "goodput {:.3} vs window/RTT {:.3} Mbit/s", mbit(f.goodput_bps), mbit(expect));
    assert!((rtt - 0.040).abs() < 0.005, "no queueing: srtt {rtt}");
    assert_eq!(f.retransmitted_segments, 0);
}

fn dumbbell(cc: [&str; 2], rate: &str, delay: &str, duration: &str) -> String {
    format!(
        r#"
name = "db"
duration = "{duration}"
[topology]
kind = "dumbbell"
pairs = 2
access_rate = "1Gbit"
access_delay = "1ms"
bottleneck_rate = "{rate}"
bottleneck_delay = "{delay}"
bottleneck_queue = {{ kind = "droptail", packets = 80 }}
[[flows]]
name = "a"
from = "l0"
to = "r0"
transport = "tcp"
cc = "{}"
[[flows]]
name = "b"
from = "l1"
to = "r1"
transport = "tcp"
cc = "{}"
"#,
        cc[0], cc[1]
    )
}

#[test]
fn two_flows_share_a_bottleneck_fairly() {
    let r = run(&dumbbell(["cubic", "cubic"], "20Mbit", "10ms", "30s"));
    let x: Vec<f64> = r.summary.flows.iter().map(|f| f.goodput_bps).collect();
    let jain = x.iter().sum::<f64>().powi(2) / (2.0 * x.iter().map(|v| v * v).sum::<f64>());
    assert!(jain >= 0.95, "Jain index {jain:.3} for {x:?}");
    let total: f64 = x.iter().sum();
    assert!(total >= 0.9 * 20e6 * 1448.0 / 1500.0, "the pair fills the bottleneck: {:.2}", mbit(total));
    assert!(r.summary.flows.iter().all(|f| f.verified));
}

#[test]
fn cubic_recovers_faster_than_reno_on_a_long_fat_path() {
    // 200 Mbit/s x 100 ms RTT = 2.5 MB in flight; one loss in 100 000
    // packets. Reno regains one segment per RTT after halving (~860 RTTs
    // to get back), Cubic gets back in K = cbrt(W_max * 0.3 / 0.4) s.
    let link = |cc: &str| one_link("200Mbit", "50ms", 2000, "loss = 0.00001", &format!("app = \"bulk\"\ncc = \"{cc}\""), "60s");
    let reno = run(&link("reno")).summary.flows[0].goodput_bps;
    let cubic = run(&link("cubic")).summary.flows[0].goodput_bps;
    assert!(cubic > 1.3 * reno, "cubic {:.1} vs reno {:.1} Mbit/s", mbit(cubic), mbit(reno));
}

#[test]
fn one_percent_loss_gives_mathis_throughput() {
    // 100 Mbit/s so the link is never the limit; RTT 40 ms; p = 1 %.
    let r = run(&one_link("100Mbit", "20ms", 1000, "loss = 0.01", "app = \"bulk\"\ncc = \"reno\"", "60s"));
    let f = &r.summary.flows[0];
    let p: f64 = 0.01;
    let rtt = f.mean_srtt_ms.unwrap() / 1e3;
    // Mathis et al.: MSS/RTT * C/sqrt(p), C between sqrt(3/4) (delayed
    // ACKs) and sqrt(3/2); with margin for timeouts and SACK.
    let base = 1448.0 * 8.0 / rtt / p.sqrt();
    let (lo, hi) = (0.75f64.sqrt() * base * 0.7, 1.5f64.sqrt() * base * 1.3);
    assert!(f.goodput_bps >= lo && f.goodput_bps <= hi, "goodput {:.2} Mbit/s outside [{:.2}, {:.2}]", mbit(f.goodput_bps), mbit(lo), mbit(hi));
    assert!(f.verified);
}

#[test]
fn link_down_for_5s_stalls_backs_off_and_resumes_without_losing_a_byte() {
    let events = r#"
[[events]]
at = "5s"
link = "l"
action = "down"
[[events]]
at = "10s"
link = "l"
action = "up"
"#;
    let mut toml = one_link("10Mbit", "20ms", 34, "", "app = \"bulk\"\nbytes = \"15MB\"", "40s");
    toml.push_str(events);
    toml.push_str("[probes]\ninterval = \"500ms\"\n");
    let r = run(&toml);
    let f = &r.summary.flows[0];
    assert!(f.completed && f.verified, "{f:?}");
    assert_eq!(f.bytes_delivered, 15_000_000);
    assert!(f.rto_count >= 3, "backed-off timeouts during the outage: {}", f.rto_count);
    // Nothing crosses while the link is down ...
    let rx = |t0: f64, t1: f64| -> f64 {
        let v: Vec<f64> = r.interfaces.iter().filter(|s| s.node == "server" && s.time_s > t0 && s.time_s <= t1).map(|s| s.rx_bps).collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    assert!(rx(5.5, 10.0) < 1.0, "silence during the outage");
    // ... and the flow is back at full rate within a few seconds of the
    // link's return (the RTO backoff can reach 3.2 s + 1.6 s).
    assert!(rx(5.0 + 5.0 + 5.0, 17.0) > 9e6, "resumed: {:.2} Mbit/s", mbit(rx(15.0, 17.0)));
    // Completion: 15 MB at ~9.6 Mbit/s is 12.5 s, plus the outage and the backoff.
    let ct = f.completion_time_s.unwrap();
    assert!(ct > 17.5 && ct < 25.0, "completion {ct} s");
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let toml = one_link("10Mbit", "20ms", 34, "loss = 0.01\njitter = \"2ms\"", "app = \"bulk\"", "10s");
    let a = run(&toml);
    let b = run(&toml);
    assert_eq!(a, b);
    assert_eq!(a.flows_csv(), b.flows_csv());
    assert_eq!(a.interfaces_csv(), b.interfaces_csv());
    let c = run(&format!("seed = 99\n{toml}"));
    assert_ne!(a.summary, c.summary);
}

#[test]
fn fat_tree_ecmp_spreads_flows_over_every_core() {
    // k = 4: 16 hosts, 4 cores. A permutation of cross-pod flows.
    let mut toml = String::from("name = \"ft\"\nduration = \"2s\"\n[topology]\nkind = \"fattree\"\nk = 4\nrate = \"100Mbit\"\ndelay = \"10us\"\n");
    for i in 0..16 {
        let j = (i + 4) % 16; // always another pod
        toml.push_str(&format!("[[flows]]\nname = \"f{i}\"\nfrom = \"h{i}\"\nto = \"h{j}\"\ntransport = \"tcp\"\n"));
    }
    let r = run(&toml);
    for core in 0..4 {
        let through: u64 = r.summary.links.iter().filter(|l| l.name.ends_with(&format!("-core{core}"))).map(|l| l.tx_packets).sum();
        assert!(through > 1000, "core{core} carried {through} packets");
    }
    assert!(r.summary.flows.iter().all(|f| f.verified && f.bytes_delivered > 1_000_000));
}

#[test]
fn download_records_its_completion_time() {
    // 5 MB from server to client over 10 Mbit/s, 20 ms: ~4.2 s of transfer
    // plus slow start and the handshake.
    let r = run(&one_link("10Mbit", "20ms", 34, "", "app = \"download\"\nbytes = \"5MB\"", "20s"));
    let f = &r.summary.flows[0];
    assert!(f.completed && f.verified, "{f:?}");
    assert_eq!(f.bytes_delivered, 5_000_000);
    let ct = f.completion_time_s.unwrap();
    let ideal = 5e6 * 8.0 / (10e6 * 1448.0 / 1500.0);
    assert!(ct > ideal && ct < ideal + 1.5, "completion {ct:.2} s vs ideal {ideal:.2} s");
    // The data went server -> client.
    let server_tx = r.summary.interfaces.iter().find(|i| i.node == "server").unwrap().tx_bytes;
    assert!(server_tx > 5_000_000);
}

#[test]
fn request_response_latency_is_one_rtt_plus_transmission() {
    // 100 requests of 300 B answered by 10 KB every 200 ms: each exchange
    // takes one RTT (40 ms) plus the response's serialisation (~8.3 ms).
    let app = "app = \"request\"\nrequest_size = \"300B\"\nresponse_size = \"10KB\"\ncount = 100\ninterval = \"200ms\"";
    let r = run(&one_link("10Mbit", "20ms", 100, "", app, "30s"));
    let f = &r.summary.flows[0];
    assert!(f.completed && f.verified, "{f:?}");
    let mean = f.mean_latency_ms.unwrap();
    let expect = 40.0 + 10_000.0 * 1500.0 / 1448.0 * 8.0 / 10e6 * 1e3;
    assert!(mean > 40.0 && mean < expect + 5.0, "mean latency {mean:.2} ms, expected about {expect:.1}");
    assert!(f.p99_latency_ms.unwrap() >= mean);
}

#[test]
fn rate_limited_sender_gets_its_rate_not_the_link() {
    let r = run(&one_link("100Mbit", "10ms", 1000, "", "app = \"rate\"\nrate = \"7.5Mbit\"", "20s"));
    let f = &r.summary.flows[0];
    assert!((f.goodput_bps / 7.5e6 - 1.0).abs() < 0.03, "goodput {:.3} Mbit/s", mbit(f.goodput_bps));
    assert_eq!(f.retransmitted_segments, 0);
    // An application-limited sender does not grow its window without bound.
    let cwnd_max = r.flows.iter().filter_map(|s| s.cwnd_bytes).max().unwrap();
    assert!(cwnd_max < 200_000, "cwnd grew to {cwnd_max} bytes while app-limited");
}

#[test]
fn red_keeps_the_average_queue_between_its_thresholds() {
    // Four flows through a 20 Mbit/s RED bottleneck (thresholds 30 KB / 90 KB).
    let mut toml = String::from(
        r#"
name = "red"
duration = "30s"
[topology]
kind = "dumbbell"
pairs = 4
access_rate = "1Gbit"
access_delay = "1ms"
bottleneck_rate = "20Mbit"
bottleneck_delay = "10ms"
bottleneck_queue = { kind = "red", min_th = "30KB", max_th = "90KB", limit = "300KB", max_p = 0.1 }
[probes]
interval = "100ms"
queues = ["left-right"]
"#,
    );
    for i in 0..4 {
        toml.push_str(&format!("[[flows]]\nname = \"f{i}\"\nfrom = \"l{i}\"\nto = \"r{i}\"\ntransport = \"tcp\"\n"));
    }
    let r = run(&toml);
    let q: Vec<u64> = r.queues.iter().filter(|s| s.direction == "ab" && s.time_s > 5.0).map(|s| s.queue_bytes).collect();
    let mean = q.iter().sum::<u64>() as f64 / q.len() as f64;
    assert!(mean > 10_000.0 && mean < 120_000.0, "mean queue {mean:.0} B");
    let bl = r.summary.links.iter().find(|l| l.name == "left-right" && l.direction == "ab").unwrap();
    assert!(bl.drops_queue > 0 && bl.max_queue_bytes < 300_000, "{bl:?}");
    let total: f64 = r.summary.flows.iter().map(|f| f.goodput_bps).sum();
    assert!(total > 0.9 * 20e6 * 1448.0 / 1500.0, "RED keeps the link busy: {:.2}", mbit(total));
}

#[test]
fn duplicated_packets_are_sent_twice_and_the_stream_arrives_once() {
    // 5 % of the packets each way go twice (netem's `duplicate`): the copies
    // take their own place in the queue, the receiver takes each byte once.
    let r = run(&one_link("10Mbit", "20ms", 34, "duplicate = 0.05", "app = \"bulk\"\nbytes = \"5MB\"", "20s"));
    let f = &r.summary.flows[0];
    assert!(f.completed && f.verified && f.bytes_delivered == 5_000_000, "{f:?}");
    for l in &r.summary.links {
        let share = l.duplicated as f64 / (l.tx_packets - l.duplicated) as f64;
        assert!((share - 0.05).abs() < 0.01, "{}: {} copies of {} packets", l.direction, l.duplicated, l.tx_packets);
    }
    // The copies of data segments cost link time: at most 1/1.05 of the
    // payload rate is left for the stream.
    let ct = f.completion_time_s.unwrap();
    let goodput = 5e6 * 8.0 / ct;
    assert!(goodput < 10e6 * 1448.0 / 1500.0 / 1.04, "goodput {:.2} Mbit/s", mbit(goodput));
    let again = run(&one_link("10Mbit", "20ms", 34, "duplicate = 0.05", "app = \"bulk\"\nbytes = \"5MB\"", "20s"));
    assert_eq!(r, again, "deterministic");
}

/// A network built by code, never checked against the applications'
/// registry, is refused when the world is built, naming the field.
#[test]
fn the_world_refuses_an_application_it_has_no_entry_for() {
    let text = one_link("10Mbit", "10ms", 100, "", "app = \"download\"\nbytes = \"1MB\"\n", "5s");
    let mut net = mplab_scenario::Scenario::from_str(&text, "t.toml").unwrap().resolve().unwrap();
    let mplab_scenario::network::App::Stream(t) = &mut net.flows[0].app else { panic!() };
    t.table.kind = "upload".into();
    let e = mplab_sim::World::new(net, None).err().expect("refused").to_string();
    assert!(e.starts_with("flows[0].app: unknown variant `upload`, expected one of `bulk`"), "{e}");
}
