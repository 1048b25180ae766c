//! What a trace-driven link costs the simulator (prints figures; asserts
//! nothing): a bulk TCP download over one link whose downlink is a fixed
//! rate, then the same link replaying a trace: a constant one of the same
//! capacity (the replay's own cost), and the bundled 10 Mbit/s commuter
//! trace against 10 Mbit/s fixed; measured in one run and printed as the
//! wall time per link traversal relative to the fixed rate (issue 53 asks
//! for at most 1.10x).
//!
//! `cargo bench -p mplab-sim --bench trace_links` (`-- --quick`: 10 s).

use std::time::Instant as Wall;

use mplab_proto::Instant;
use mplab_scenario::Scenario;
use mplab_sim::World;

fn scenario(duration: &str, rate: &str) -> String {
    format!(
        r#"
name = "trace-bench"
duration = "{duration}"
[[nodes]]
name = "client"
[[nodes]]
name = "server"
[[links]]
name = "cell"
a = "client"
b = "server"
rate = "10Mbit"
delay = "30ms"
queue = {{ kind = "droptail", packets = 200 }}
[links.ba]
rate = {rate}
[[flows]]
name = "bulk"
from = "client"
to = "server"
transport = "tcp"
app = "download"
bytes = "10GB"
"#
    )
}

/// Wall seconds, link traversals and goodput of one run; the fastest of
/// `reps` (the others paid for page faults and caches).
fn run(toml: &str, reps: usize) -> (f64, u64, f64) {
    // Relative trace paths resolve against the scenarios directory.
    let name = format!("{}/../../scenarios/bench.toml", env!("CARGO_MANIFEST_DIR"));
    let mut best = (f64::INFINITY, 0, 0.0);
    for _ in 0..reps {
        let net = Scenario::from_str(toml, &name).and_then(|s| s.resolve()).unwrap_or_else(|e| panic!("{e}"));
        let end = Instant(net.duration_ns);
        let t = Wall::now();
        let mut w = World::new(net, None).expect("world");
        w.run_until(end);
        let r = w.finish("sim");
        let wall = t.elapsed().as_secs_f64();
        if wall < best.0 {
            best = (wall, r.summary.links.iter().map(|l| l.tx_packets).sum(), r.summary.flows[0].goodput_bps);
        }
    }
    best
}

fn main() {
    mplab_sim::hugepages::reexec_with_huge_pages();
    let quick = std::env::args().any(|a| a == "--quick");
    let duration = if quick { "10s" } else { "60s" };
    println!("one link, bulk TCP download, {duration} simulated, best of 5; each trace against the fixed rate above it");
    println!("{:<28} {:>9} {:>11} {:>12} {:>12} {:>8}", "downlink", "wall (s)", "goodput", "traversals", "ns/traversal", "vs fixed");
    // A constant trace, one opportunity every millisecond (12 Mbit/s of
    // IP packets), is the same capacity as a fixed 12 Mbit/s: the same
    // TCP run, so their ratio is the cost of replaying alone. The bundled
    // traces vary, and TCP's run over them differs too.
    let constant = std::env::temp_dir().join(format!("mplab-bench-constant-{}.trace", std::process::id()));
    std::fs::write(&constant, (1..=1000).map(|m| format!("{m}\n")).collect::<String>()).expect("write the constant trace");
    let cases = [
        ("fixed 12 Mbit/s", "\"12Mbit\"".to_string()),
        ("constant trace (12 Mbit/s)", format!("{{ trace = \"{}\" }}", constant.display())),
        ("fixed 10 Mbit/s", "\"10Mbit\"".to_string()),
        ("commuter trace (10 Mbit/s)", "{ trace = \"traces/lte-commuter-10mbit.trace\" }".to_string()),
    ];
    let mut fixed = None;
    for (what, rate) in &cases {
        let (wall, traversals, goodput) = run(&scenario(duration, rate), 5);
        let per = wall * 1e9 / traversals as f64;
        if what.starts_with("fixed") {
            fixed = Some(per);
        }
        let base = fixed.expect("a fixed rate first");
        println!("{what:<28} {wall:>9.3} {:>8.2} Mb {traversals:>12} {per:>12.0} {:>7.2}x", goodput / 1e6, per / base);
    }
    let _ = std::fs::remove_file(&constant);
}
