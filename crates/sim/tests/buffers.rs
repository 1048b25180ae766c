//! Seed 002: MPTCP throughput against the send/receive buffer size, on
//! equal (70 + 70 Mbit/s) and unequal (100 + 10 Mbit/s) paths with RED
//! queues and no added delay, and what opportunistic retransmission +
//! penalisation (Raiciu et al. 2012) or BLEST / ECF change. The measured
//! curve is in docs/buffers.md (`cargo test --release -p mplab-sim --test
//! buffers -- --nocapture` prints it).

mod support;

use mplab_sim::RunResults;
use support::*;

const SECS: f64 = 8.0;

/// Goodput (Mbit/s) from 2 s to the end.
fn goodput(r: &RunResults) -> f64 {
    let v: Vec<f64> = r.flows.iter().filter(|s| s.subflow == "all" && s.time_s > 2.0).map(|s| s.goodput_bps).collect();
    assert!(r.summary.flows[0].verified);
    v.iter().sum::<f64>() / v.len().max(1) as f64 / 1e6
}

#[derive(Clone, Copy, Debug)]
enum Mode {
    /// TCP on path 0 alone (the best single path).
    Tcp,
    /// MPTCP, LIA, with the given scheduler and receive-buffer options.
    Mptcp { scheduler: &'static str, opt: bool },
}

fn one(rates: [&str; 2], queues: &str, buf_kb: u64, mode: Mode) -> f64 {
    let (transport, mptcp) = match mode {
        Mode::Tcp => ("tcp", String::new()),
        Mode::Mptcp { scheduler, opt } => (
            "mptcp",
            format!(
                "[transport.mptcp]\npath_manager = \"endpoints\"\ncc = \"lia\"\nscheduler = \"{scheduler}\"\nopportunistic_retransmit = {opt}\npenalize = {opt}\nlimits = {{ subflows = 1 }}\nendpoints = [ {{ node = \"client\", iface = \"eth1\", flags = [\"subflow\"] }} ]\n"
            ),
        ),
    };
    let toml = format!(
        r#"
name = "buffers"
duration = "{SECS}s"
[topology]
kind = "parallel"
paths = 2
rate = ["{}", "{}"]
delay = "0ms"
queue = {queues}
[probes]
interval = "500ms"
[transport.tcp]
cc = "reno"
rcv_buf = "{buf_kb}KB"
snd_buf = "{buf_kb}KB"
{mptcp}
[[flows]]
name = "bulk"
from = "client"
to = "server"
from_addr = "10.0.0.2"
to_addr = "10.0.0.1"
transport = "{transport}"
"#,
        rates[0], rates[1]
    );
    let r = run(&toml);
    if std::env::var("BUF_DEBUG").is_ok() {
        eprintln!("{kb} {mode:?}: {:?}", r.summary.flows[0].subflows.iter().map(|s| s.bytes_sent).collect::<Vec<_>>(), kb = buf_kb);
    }
    goodput(&r)
}

const RED_EQUAL: &str = r#"{ kind = "red", min_th = "30KB", max_th = "90KB", max_p = 0.1, limit = "300KB" }"#;
const RED_UNEQUAL: &str = r#"[
  { kind = "red", min_th = "30KB", max_th = "90KB", max_p = 0.1, limit = "300KB" },
  { kind = "red", min_th = "5KB", max_th = "15KB", max_p = 0.1, limit = "60KB" },
]"#;

#[test]
fn equal_paths_double_tcp_once_buffers_exceed_35kb() {
    println!("| buffer | TCP 70 Mbit/s | MPTCP 70+70 | ratio |\n|---|---|---|---|");
    for kb in [10, 20, 35, 50, 100] {
        let tcp = one(["70Mbit", "70Mbit"], RED_EQUAL, kb, Mode::Tcp);
        let mp = one(["70Mbit", "70Mbit"], RED_EQUAL, kb, Mode::Mptcp { scheduler: "minrtt", opt: false });
        println!("| {kb} KB | {tcp:.1} | {mp:.1} | {:.2} |", mp / tcp);
        if kb >= 35 {
            assert!(tcp >= 0.9 * 70.0, "{kb} KB: tcp {tcp:.1}");
            assert!(mp >= 1.8 * tcp, "{kb} KB: mptcp {mp:.1} vs tcp {tcp:.1}");
        }
    }
}

#[test]
fn unequal_paths_crossover_comes_earlier_with_the_buffer_mechanisms() {
    let bufs = [50, 100, 200, 350, 500, 1000, 2000];
    let modes: [(&str, Mode); 5] = [
        ("MPTCP minrtt", Mode::Mptcp { scheduler: "minrtt", opt: false }),
        ("+ opp. retx + penalisation", Mode::Mptcp { scheduler: "minrtt", opt: true }),
        ("BLEST", Mode::Mptcp { scheduler: "blest", opt: false }),
        ("ECF", Mode::Mptcp { scheduler: "ecf", opt: false }),
        ("linux", Mode::Mptcp { scheduler: "linux", opt: false }),
    ];
    println!("| buffer | TCP 100 Mbit/s | {} |", modes.map(|m| m.0).join(" | "));
    println!("|---|---|{}", "---|".repeat(modes.len()));
    // First buffer at which each mode beats the best single path (by 5 %).
    let mut crossover: Vec<Option<u64>> = vec![None; modes.len()];
    for kb in bufs {
        let tcp = one(["100Mbit", "10Mbit"], RED_UNEQUAL, kb, Mode::Tcp);
        let mut row = format!("| {kb} KB | {tcp:.1} |");
        for (i, &(_, m)) in modes.iter().enumerate() {
            let g = one(["100Mbit", "10Mbit"], RED_UNEQUAL, kb, m);
            row += &format!(" {g:.1} |");
            if g > 1.05 * tcp && crossover[i].is_none() {
                crossover[i] = Some(kb);
            }
        }
        println!("{row}");
    }
    println!("crossover (KB): {:?}", modes.iter().map(|m| m.0).zip(&crossover).collect::<Vec<_>>());
    let plain = crossover[0].unwrap_or(u64::MAX);
    let opt = crossover[1].unwrap_or(u64::MAX);
    assert!(opt < plain, "with the mechanisms {opt} KB, without {plain} KB");
}
