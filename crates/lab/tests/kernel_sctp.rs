//! SCTP on the kernel backend: usrsctp (the FreeBSD stack as a library) in
//! the hosts' namespaces over mplab's link emulator, against the
//! simulator's model on the same scenario. Two 10 Mbit/s, 10 ms paths: a
//! DATA chunk in a 1500-byte packet carries 1452 bytes, so one path
//! carries at most 9.68 Mbit/s of payload. Needs root; removes its
//! namespaces even when it fails.

mod kernel_support;

use kernel_support::{can_run, run, serial, NsGuard};

const ONE_PATH: f64 = 10.0 * 1452.0 / 1500.0;

/// scenarios/sctp-two-paths.toml (12 MB over two 10 Mbit/s, 10 ms paths,
/// 512 KB buffers) with `transport`.
fn scenario(transport: &str) -> String {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/sctp-two-paths.toml")).unwrap();
    text.replace("transport = \"cmt-sctp\"", &format!("transport = \"{transport}\""))
}

fn sim_mbit(toml: &str) -> f64 {
    let (_, net) = kernel_support::resolve(toml);
    mplab_sim::simulate(net).unwrap().summary.flows[0].goodput_bps / 1e6
}

fn use_this_mplab() {
    // The SCTP hosts are `mplab usrsctp-host` processes; this test binary
    // is not mplab.
    std::env::set_var("MPLAB_EXE", env!("CARGO_BIN_EXE_mplab"));
}

#[test]
fn usrsctp_single_path_agrees_with_the_model_and_cmt_uses_both_paths() {
    let _s = serial();
    if !can_run() {
        return;
    }
    use_this_mplab();
    let g = NsGuard::new("sctp");

    let toml = scenario("sctp");
    let r = run(&g, 0, &toml);
    let f = &r.results.summary.flows[0];
    let (k, s) = (f.goodput_bps / 1e6, sim_mbit(&toml));
    eprintln!("sctp: usrsctp {k:.2} Mbit/s, model {s:.2}: {:+.1} %", 100.0 * (k / s - 1.0));
    assert!(f.completed && f.verified && f.bytes_delivered == 12_000_000, "{f:?} {:?}", r.results.summary.notes);
    assert!(k > 0.85 * ONE_PATH && k <= ONE_PATH, "usrsctp on one path: {k:.2} Mbit/s");
    assert!((k / s - 1.0).abs() <= 0.10, "usrsctp {k:.2} against the model's {s:.2} Mbit/s: outside ±10 %");

    let toml = scenario("cmt-sctp");
    let r = run(&g, 1, &toml);
    let f = &r.results.summary.flows[0];
    let (k, s) = (f.goodput_bps / 1e6, sim_mbit(&toml));
    eprintln!("cmt-sctp: usrsctp {k:.2} Mbit/s, model {s:.2}: {:+.1} %", 100.0 * (k / s - 1.0));
    assert!(f.completed && f.verified && f.bytes_delivered == 12_000_000, "{f:?}");
    // CMT spreads data over both client interfaces.
    let tx = |iface: &str| r.results.summary.interfaces.iter().find(|i| i.node == "client" && i.iface == iface).map(|i| i.tx_bps / 1e6).unwrap_or(0.0);
    let (a, b) = (tx("eth0"), tx("eth1"));
    eprintln!("cmt-sctp: client eth0 {a:.2}, eth1 {b:.2} Mbit/s over the run");
    // usrsctp's CMT rate varies from run to run (15.1–15.2 Mbit/s in four
    // runs, 10.75 in one with long T3 stalls: docs/sctp.md), so the test
    // holds it to at least one path's and checks that both paths carried it.
    assert!(k > 0.9 * ONE_PATH, "usrsctp CMT over two paths: {k:.2} Mbit/s");
    assert!(a > 1.0 && b > 1.0, "one path idle: eth0 {a:.2}, eth1 {b:.2}");
    g.assert_clean();
}
