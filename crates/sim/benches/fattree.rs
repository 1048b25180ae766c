//! Simulator benchmark (prints figures; asserts nothing):
//!
//! 1. a k=8 fat-tree (128 hosts, 10 Gbit/s links, 1 µs per link, 100-packet
//!    drop-tail queues) with a random permutation of TCP bulk flows for
//!    0.2 s simulated — the run htsim's authors use; reference on this
//!    class of machine: htsim ~5.6 M events/s. The RTO floor is 1 ms (as
//!    in htsim and data-centre studies): Linux's 200 ms is 10,000 RTTs
//!    here and would idle a subflow for the whole run after one timeout;
//! 2. the everyday case: two 10 Mbit/s paths for 60 s simulated.
//!
//! `cargo bench -p mplab-sim --bench fattree` (`-- --quick` runs 0.02 s of
//! the fat-tree).

use std::time::Instant as Wall;

use mplab_proto::Instant;
use mplab_scenario::Scenario;
use mplab_sim::World;

/// A derangement of 0..n from a fixed seed (splitmix64 Fisher-Yates).
fn permutation(n: usize, mut seed: u64) -> Vec<usize> {
    let mut next = || {
        seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    loop {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            p.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        if p.iter().enumerate().all(|(i, &j)| i != j) {
            return p;
        }
    }
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

struct Outcome {
    mptcp: bool,
    wall_s: f64,
    events: u64,
    traversals: u64,
    goodputs: Vec<f64>,
}

fn run(toml: &str) -> Outcome {
    let net = Scenario::from_str(toml, "bench.toml").and_then(|s| s.resolve()).unwrap_or_else(|e| panic!("{e}"));
    let end = Instant(net.duration_ns);
    let t = Wall::now();
    let mut w = World::new(net, None).expect("world");
    w.run_until(end);
    let events = w.stats.events;
    let r = w.finish("sim");
    let wall_s = t.elapsed().as_secs_f64();
    // Every packet a link direction serialised is one link traversal.
    let traversals = r.summary.links.iter().map(|l| l.tx_packets).sum();
    let mptcp = toml.contains("transport = \"mptcp\"");
    Outcome { mptcp, wall_s, events, traversals, goodputs: r.summary.flows.iter().map(|f| f.goodput_bps).collect() }
}

fn main() {
    // As `mplab run` does: the simulator's heap on transparent huge pages.
    mplab_sim::hugepages::reexec_with_huge_pages();
    let quick = std::env::args().any(|a| a == "--quick");
    let duration = if quick { "0.02s" } else { "0.2s" };
    let hosts = 128;
    let perm = permutation(hosts, 1);
    let mut toml = format!(
        "name = \"fattree-k8\"\nduration = \"{duration}\"\n[topology]\nkind = \"fattree\"\nk = 8\nrate = \"10Gbit\"\ndelay = \"1us\"\nqueue = {{ kind = \"droptail\", packets = 100 }}\n[transport.tcp]\nrto_min = \"1ms\"\n[probes]\ninterval = \"10ms\"\n"
    );
    for (a, b) in perm.iter().enumerate() {
        toml.push_str(&format!("[[flows]]\nname = \"f{a}\"\nfrom = \"h{a}\"\nto = \"h{b}\"\ntransport = \"tcp\"\n"));
    }
    let o = run(&toml);
    report(&o, &format!("fat-tree k=8, 128 hosts, 10 Gbit/s, permutation TCP, {duration} simulated"));

    // The same permutation with MPTCP, 8 subflows per connection spread
    // over the ECMP paths by their source ports (ndiffports). htsim does
    // this run in ~53 s (3.2 M events/s) and reaches ~90 % of optimal with
    // its coupled congestion control; these subflows are uncoupled.
    let mptcp = toml.replace("transport = \"tcp\"", "transport = \"mptcp\"\npath_manager = \"ndiffports\"\nsubflows = 8");
    let o = run(&mptcp);
    report(&o, &format!("fat-tree k=8, permutation MPTCP (ndiffports, 8 subflows), {duration} simulated"));
    // The same with coupled congestion control (per-ACK cost of LIA /
    // OLIA: the sibling view plus a few floating-point operations).
    // Uncoupled Reno is the fair baseline for the per-segment cost.
    let reno = mptcp.replace("transport = \"mptcp\"", "transport = \"mptcp\"\ncc = \"reno\"");
    let base = run(&reno);
    report(&base, &format!("fat-tree k=8, permutation MPTCP, uncoupled reno, {duration} simulated"));
    for cc in ["lia", "olia"] {
        let o = run(&mptcp.replace("transport = \"mptcp\"", &format!("transport = \"mptcp\"\ncc = \"{cc}\"")));
        report(&o, &format!("fat-tree k=8, permutation MPTCP, {cc}, {duration} simulated"));
        println!(
            "  {cc} vs uncoupled reno: wall {:+.1} %, per event {:+.1} %",
            (o.wall_s / base.wall_s - 1.0) * 100.0,
            (o.wall_s / o.events as f64 / (base.wall_s / base.events as f64) - 1.0) * 100.0
        );
    }
    two_paths();
}

fn report(o: &Outcome, title: &str) {
    let mean = o.goodputs.iter().sum::<f64>() / o.goodputs.len() as f64;
    println!("{title}");
    println!("  wall time            {:>10.2} s", o.wall_s);
    println!("  events               {:>10}", o.events);
    // htsim schedules two events per packet and hop (the queue's service
    // completion and the pipe's delivery); mplab one (the link direction's
    // wake-up delivers). Packet link traversals per second compare the
    // work done: htsim's 5.6 M events/s are about 2.8 M traversals/s.
    println!("  events/s             {:>10.2} M   (htsim ~5.6 M, counting 2 events per hop)", o.events as f64 / o.wall_s / 1e6);
    println!("  link traversals/s    {:>10.2} M   (htsim ~2.8 M)", o.traversals as f64 / o.wall_s / 1e6);
    // Headers cap goodput below the line rate: 1448 of 1500 bytes for TCP
    // with timestamps, 1420 with MPTCP's DSS (data ACK and mapping) too.
    println!("  mean host goodput    {:>10.1} % of 10 Gbit/s (payload ceiling 96.5 % TCP, 94.7 % MPTCP)", mean / 10e9 * 100.0);
    // The optimum a permutation allows: every host sends at its line rate,
    // minus headers (1448 of 1500 bytes with TCP timestamps; 1420 with
    // MPTCP's DSS too). htsim's "90 % of optimal" counts whole packets.
    let ceiling = if o.mptcp { 1420.0 / 1500.0 } else { 1448.0 / 1500.0 };
    println!("  of the optimum       {:>10.1} %", mean / (10e9 * ceiling) * 100.0);
    println!("  peak memory          {:>10.1} MiB", peak_rss_mib());
}

fn two_paths() {
    let two = r#"
name = "two-paths-tcp"
duration = "60s"
[topology]
kind = "parallel"
paths = 2
rate = "10Mbit"
delay = "10ms"
[[flows]]
name = "p0"
from = "client"
to = "server"
transport = "tcp"
[[flows]]
name = "p1"
from = "client"
to = "server"
from_addr = "10.0.1.2"
to_addr = "10.0.1.1"
transport = "tcp"
"#;
    let o = run(two);
    assert!(o.goodputs.iter().all(|&g| g > 9e6), "one TCP flow per path: {:?}", o.goodputs);
    println!("two 10 Mbit/s paths, 60 s simulated: {:.3} s wall, {} events ({:.1} M events/s), {:.0}x faster than real time",
        o.wall_s, o.events, o.events as f64 / o.wall_s / 1e6, 60.0 / o.wall_s);
}
