//! `mplab load`: a scaled-down load on the simulator (every test run) and,
//! as root, on the kernel and userspace backends: every connection opens
//! and carries its bytes, the active ones get what they offered, and the
//! process holds no descriptor or thread per connection on mplab's stack.
//! The full-size figures (10,000 idle and 1,000 active) are in docs/load.md.

mod kernel_support;
mod lab_common;

use lab_common::{mplab, Scratch};

fn load(backend: &str, idle: u64, active: u64) -> serde_json::Value {
    load_over("mptcp", backend, idle, active)
}

fn load_over(transport: &str, backend: &str, idle: u64, active: u64) -> serde_json::Value {
    let tmp = Scratch::new(&format!("load-{backend}-{transport}"));
    let out = tmp.join("r");
    let o = mplab(&tmp.0, &["load", "--backend", backend, "--transport", transport, "--idle", &idle.to_string(), "--active", &active.to_string(), "--out", out.to_str().unwrap()]);
    eprintln!("{}{}", o.stdout, o.stderr);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("load.json")).unwrap()).unwrap();
    assert!(r["failures"].as_array().unwrap().is_empty(), "{}", r["failures"]);
    let n = idle + active;
    assert_eq!(r["established"].as_u64(), Some(n), "{r}");
    assert_eq!(r["verified"].as_u64(), Some(n), "{r}");
    // Fullmesh over two addresses on each end: four subflows a connection;
    // Multipath QUIC has no address announcement, so two paths (one from
    // each client address to the server's first).
    let per = if transport == "mpquic" { 2 } else { 4 };
    assert_eq!(r["subflows"].as_u64(), Some(per * n), "{r}");
    // The active connections offer half the paths' 200 Mbit/s: they get it.
    let (got, offered) = (r["active_mbps"].as_f64().unwrap(), r["offered_mbps"].as_f64().unwrap());
    assert!((offered - 100.0).abs() < 1.0 && got > 0.9 * offered && got < 1.05 * offered, "{got} of {offered}");
    r
}

#[test]
fn two_thousand_idle_and_two_hundred_active_on_the_simulator() {
    let r = load("sim", 2000, 200);
    assert!(r["threads_peak"].as_u64().unwrap() <= 3, "{r}");
}

/// The same load over Multipath QUIC (noq): every connection verified,
/// the active ones get what they offer.
#[test]
fn multipath_quic_load_on_the_simulator() {
    let r = load_over("mpquic", "sim", 500, 50);
    assert!(r["threads_peak"].as_u64().unwrap() <= 3, "{r}");
}

#[test]
fn load_on_the_userspace_backend_needs_no_descriptor_per_connection() {
    let _s = kernel_support::serial();
    if !kernel_support::can_run() {
        return;
    }
    let r = load("userspace", 1000, 100);
    // One TUN per host, the emulator's sockets: not one per connection.
    assert!(r["fds_peak"].as_u64().unwrap() < 100, "{r}");
    assert!(r["max_loop_pass_cpu_ms"].as_f64().is_some(), "{r}");
}

#[test]
fn load_on_the_kernel_backend() {
    let _s = kernel_support::serial();
    if !kernel_support::can_run() {
        return;
    }
    let r = load("kernel", 300, 50);
    // A socket per end, a listener per flow: Linux holds them all.
    assert!(r["fds_peak"].as_u64().unwrap() >= 3 * 350, "{r}");
}
