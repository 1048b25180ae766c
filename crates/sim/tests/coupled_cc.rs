//! Coupled congestion control on the simulator: RFC 6356's goal 2 on a
//! shared bottleneck, and Khalili et al.'s testbed (seed 001, fig. 6).

mod support;

use mplab_sim::RunResults;
use support::*;

/// Mean goodput (Mbit/s) of a flow's connection over samples in (t0, t1].
fn goodput(r: &RunResults, flow: &str, t0: f64, t1: f64) -> f64 {
    let v: Vec<f64> = r.flows.iter().filter(|s| s.flow == flow && s.subflow == "all" && s.time_s > t0 && s.time_s <= t1).map(|s| s.goodput_bps).collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64 / 1e6
}

/// One MPTCP connection (2 subflows, ndiffports) and one Reno TCP flow
/// through a 20 Mbit/s bottleneck; returns (MPTCP, TCP) goodput, Mbit/s.
fn shared_bottleneck(cc: &str) -> (f64, f64) {
    let toml = format!(
        r#"
name = "goal2"
duration = "60s"
[topology]
kind = "dumbbell"
pairs = 2
access_rate = "1Gbit"
access_delay = "1ms"
bottleneck_rate = "20Mbit"
bottleneck_delay = "20ms"
bottleneck_queue = {{ kind = "red", min_th = "30KB", max_th = "90KB", max_p = 0.1, limit = "200KB" }}
[transport.tcp]
cc = "reno"
[transport.mptcp]
path_manager = "ndiffports"
subflows = 2
cc = "{cc}"
[[flows]]
name = "mp"
from = "l0"
to = "r0"
transport = "mptcp"
[[flows]]
name = "tcp"
from = "l1"
to = "r1"
transport = "tcp"
"#
    );
    let r = run(&toml);
    assert!(r.summary.flows.iter().all(|f| f.verified));
    assert_eq!(r.summary.flows[0].subflows.len(), 2);
    (goodput(&r, "mp", 10.0, 60.0), goodput(&r, "tcp", 10.0, 60.0))
}

#[test]
fn coupled_cc_takes_one_share_of_a_shared_bottleneck() {
    let res: Vec<_> = ["lia", "olia", "balia"].iter().map(|&cc| (cc, shared_bottleneck(cc))).collect();
    for &(cc, (mp, tcp)) in &res {
        eprintln!("{cc}: mptcp {mp:.2} Mbit/s, tcp {tcp:.2} Mbit/s, ratio {:.2}", mp / tcp);
    }
    for &(cc, (mp, tcp)) in &res {
        assert!(mp + tcp >= 0.85 * 20.0, "{cc}: the bottleneck is used");
        assert!(mp <= 1.15 * tcp, "{cc}: mptcp {mp:.2} vs tcp {tcp:.2}");
    }
}

#[test]
fn uncoupled_reno_takes_two_shares() {
    let (mp, tcp) = shared_bottleneck("reno");
    eprintln!("reno: mptcp {mp:.2} Mbit/s, tcp {tcp:.2} Mbit/s, ratio {:.2}", mp / tcp);
    assert!(mp >= 1.6 * tcp, "mptcp {mp:.2} vs tcp {tcp:.2}");
}

/// Khalili's scenario A: N1 = 5 multipath users with ap1 to themselves and
/// ap2 shared with N2 = 5 TCP users; both APs 5 Mbit/s per user. Returns
/// (mean MPTCP user, mean TCP user) goodput, Mbit/s.
pub fn khalili(cc: &str) -> (f64, f64) {
    let (n1, n2) = (5, 5);
    let mut toml = format!(
        r#"
name = "khalili"
duration = "60s"
[topology]
kind = "khalili"
n1 = {n1}
n2 = {n2}
ap1_rate = "25Mbit"
ap2_rate = "25Mbit"
ap_delay = "10ms"
ap_queue = {{ kind = "droptail", packets = 100 }}
[transport.tcp]
cc = "reno"
[transport.mptcp]
path_manager = "fullmesh"
cc = "{cc}"
"#
    );
    for i in 0..n1 {
        toml += &format!("[[flows]]\nname = \"mp{i}\"\nfrom = \"mp{i}\"\nto = \"server\"\ntransport = \"mptcp\"\n");
    }
    for j in 0..n2 {
        toml += &format!("[[flows]]\nname = \"tcp{j}\"\nfrom = \"tcp{j}\"\nto = \"server\"\ntransport = \"tcp\"\n");
    }
    let r = run(&toml);
    assert!(r.summary.flows.iter().all(|f| f.verified));
    let mean = |p: &str, n: usize| (0..n).map(|i| goodput(&r, &format!("{p}{i}"), 10.0, 60.0)).sum::<f64>() / n as f64;
    (mean("mp", n1), mean("tcp", n2))
}

#[test]
fn khalili_olia_leaves_tcp_users_more_than_lia() {
    let (lia_mp, lia_tcp) = khalili("lia");
    let (olia_mp, olia_tcp) = khalili("olia");
    eprintln!("khalili lia: mptcp users {lia_mp:.2}, tcp users {lia_tcp:.2} Mbit/s");
    eprintln!("khalili olia: mptcp users {olia_mp:.2}, tcp users {olia_tcp:.2} Mbit/s");
    // Both fill the two 25 Mbit/s access points (50 Mbit/s for 10 users).
    assert!(5.0 * (lia_mp + lia_tcp) >= 0.85 * 50.0);
    assert!(olia_tcp > lia_tcp, "olia {olia_tcp:.2} vs lia {lia_tcp:.2}");
}
