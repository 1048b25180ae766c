//! What one packet costs the simulator per transport (prints figures;
//! asserts nothing): the same two 10 Mbit/s access links and a 60 s bulk
//! upload as TCP on one path, MPTCP and MPQUIC over both (MPQUIC encrypts
//! and authenticates every packet for real, TLS 1.3 AES-128-GCM, and runs
//! noq's state machine), measured in one run and printed as ratios to
//! TCP's cost per link traversal.
//!
//! `cargo bench -p mplab-sim --bench transports` (`-- --quick`: 10 s).

use std::time::Instant as Wall;

use mplab_proto::Instant;
use mplab_scenario::Scenario;
use mplab_sim::World;

fn scenario(duration: &str, transport: &str) -> String {
    format!(
        r#"
name = "transports"
duration = "{duration}"
[[nodes]]
name = "client"
[[nodes]]
name = "router"
kind = "router"
[[nodes]]
name = "server"
[[links]]
name = "path0"
a = "client:eth0"
b = "router"
rate = "10Mbit"
delay = "10ms"
queue = {{ kind = "droptail", packets = 40 }}
[[links]]
name = "path1"
a = "client:eth1"
b = "router"
rate = "10Mbit"
delay = "10ms"
queue = {{ kind = "droptail", packets = 40 }}
[[links]]
name = "core"
a = "router"
b = "server"
rate = "1Gbit"
[transport.mptcp]
path_manager = "fullmesh"
[[flows]]
name = "bulk"
from = "client"
to = "server"
transport = "{transport}"
"#
    )
}

struct Cost {
    wall_s: f64,
    traversals: u64,
    goodput_bps: f64,
}

fn run(toml: &str) -> Cost {
    let net = Scenario::from_str(toml, "bench.toml").and_then(|s| s.resolve()).unwrap_or_else(|e| panic!("{e}"));
    let end = Instant(net.duration_ns);
    let t = Wall::now();
    let mut w = World::new(net, None).expect("world");
    w.run_until(end);
    let r = w.finish("sim");
    let wall_s = t.elapsed().as_secs_f64();
    Cost { wall_s, traversals: r.summary.links.iter().map(|l| l.tx_packets).sum(), goodput_bps: r.summary.flows[0].goodput_bps }
}

fn main() {
    mplab_sim::hugepages::reexec_with_huge_pages();
    let duration = if std::env::args().any(|a| a == "--quick") { "10s" } else { "60s" };
    println!("two 10 Mbit/s access links, bulk upload, {duration} simulated");
    println!("{:<8} {:>9} {:>11} {:>14} {:>12} {:>10}", "", "wall (s)", "goodput", "traversals", "ns/traversal", "vs TCP");
    let mut tcp_cost = None;
    for transport in ["tcp", "mptcp", "mpquic"] {
        let c = run(&scenario(duration, transport));
        let per = c.wall_s * 1e9 / c.traversals as f64;
        let base = *tcp_cost.get_or_insert(per);
        println!("{transport:<8} {:>9.3} {:>8.1} Mb {:>14} {:>12.0} {:>9.2}x", c.wall_s, c.goodput_bps / 1e6, c.traversals, per, per / base);
    }
}
