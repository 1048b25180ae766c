//! `mplab soak`: a short soak on the simulator (every test run) and, as
//! root, on the kernel and userspace backends: every byte verified, every
//! fault kind injected, nothing left behind. The long runs (an hour on the
//! simulator, ten minutes on the real backends) are in docs/soak.md.

mod kernel_support;
mod lab_common;

use lab_common::{kernel_log, mplab, mplab_within, Scratch};

/// How a soak run ended.
enum Soak {
    Done(serde_json::Value),
    /// Linux oopsed under the run (below); nothing of mplab's was judged.
    KernelOops,
}

/// A soak run; without `address_churn` it passes `--keep-addresses` and
/// checks that no address event ran. On the kernel backend the run is
/// bounded: Linux 6.18 can oops under it (a divide by zero in
/// `tcp_tso_segs` from `mptcp_sendmsg`, docs/soak.md), which leaves the
/// sending thread holding its socket lock and mplab waiting on it forever.
/// Such a run is reported with the kernel's trace and counts as a skip;
/// any other overrun fails.
fn soak(backend: &str, duration: &str, address_churn: bool) -> Soak {
    soak_over("mptcp", backend, duration, address_churn)
}

fn soak_over(transport: &str, backend: &str, duration: &str, address_churn: bool) -> Soak {
    let tmp = Scratch::new(&format!("soak-{backend}-{transport}"));
    let out = tmp.join("r");
    let mut args = vec!["soak", "--backend", backend, "--transport", transport, "--duration", duration, "--out", out.to_str().unwrap()];
    if !address_churn {
        args.push("--keep-addresses");
    }
    let o = if backend == "kernel" {
        let log_before = kernel_log().len();
        match mplab_within(&tmp.0, &args, std::time::Duration::from_secs(300)) {
            Ok(o) => o,
            Err(e) => {
                let log = kernel_log();
                let new = if log.len() >= log_before { &log[log_before..] } else { &log[..] };
                let oops: Vec<&String> = new.iter().filter(|l| l.contains("tcp_tso_segs") || l.contains("divide error") || l.contains("Oops")).collect();
                assert!(!oops.is_empty(), "{e}, and the kernel log shows no oops");
                eprintln!("SKIPPED: the kernel oopsed under the soak ({e}); a Linux 6.18 bug, see docs/soak.md:\n{}", oops.iter().map(|l| l.as_str()).collect::<Vec<_>>().join("\n"));
                return Soak::KernelOops;
            }
        }
    } else {
        mplab(&tmp.0, &args)
    };
    eprintln!("{}{}", o.stdout, o.stderr);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("soak.json")).unwrap()).unwrap();
    assert!(r["failures"].as_array().unwrap().is_empty(), "{}", r["failures"]);
    // Every kind of fault happened, and every download due finished whole.
    let addr_events = r["address_events"].as_u64().unwrap();
    assert!(if address_churn { addr_events >= 6 } else { addr_events == 0 }, "{r}");
    // (No firewall stripping MPTCP's option for Multipath QUIC: it has none.)
    let windows = if transport == "mpquic" { 0 } else { 2 };
    assert!(r["link_flaps"].as_u64().unwrap() >= 2 && r["middlebox_windows"].as_u64().unwrap() >= windows, "{r}");
    assert!(r["duplicated"].as_u64().unwrap() > 0 && r["loss_drops"].as_u64().unwrap() > 0, "{r}");
    assert!(r["flows_unverified"].as_array().unwrap().is_empty() && r["downloads_short"].as_array().unwrap().is_empty(), "{r}");
    Soak::Done(r)
}

fn done(s: Soak) -> serde_json::Value {
    match s {
        Soak::Done(r) => r,
        Soak::KernelOops => panic!("only the kernel backend's soak is bounded"),
    }
}

#[test]
fn soak_on_the_simulator_loses_nothing_and_holds_its_memory() {
    let r = done(soak("sim", "15min", true));
    // 180 downloads over 15 min: those due all completed.
    assert!(r["downloads_due"].as_u64().unwrap() >= 160, "{r}");
    // Finished connections are dropped: memory stays flat after warm-up.
    let (warm, end) = (r["rss_warm_mib"].as_f64().unwrap(), r["rss_end_mib"].as_f64().unwrap());
    assert!(end <= warm * 1.25 + 16.0, "{warm} -> {end} MiB");
    // Subflows that come back: after each of the 20 faults on the second
    // path that end 30 s before the run does (6 flaps, 6 firewall
    // windows, 8 restored addresses), the long-lived connection carried
    // data over it again within 30 s (a failure otherwise).
    assert_eq!(r["back_on_p1"].as_array().map(|v| v.len()), Some(20), "{}", r["back_on_p1"]);
}

/// Multipath QUIC through the same faults for 15 minutes: every byte
/// verified, connections closed when done and dropped once drained, so
/// memory stays flat (a connection left open kept pinging and reopening
/// its paths: 66.8 -> 112.2 MiB over this run).
#[test]
fn multipath_quic_soak_on_the_simulator() {
    let r = done(soak_over("mpquic", "sim", "15min", true));
    assert!(r["downloads_due"].as_u64().unwrap() >= 160, "{r}");
    assert_eq!(r["fallbacks"].as_u64(), Some(0), "{r}");
    let (warm, end) = (r["rss_warm_mib"].as_f64().unwrap(), r["rss_end_mib"].as_f64().unwrap());
    assert!(end <= warm * 1.25 + 16.0, "{warm} -> {end} MiB");
}

#[test]
fn soak_on_the_kernel_backend() {
    let _s = kernel_support::serial();
    if !kernel_support::can_run() {
        return;
    }
    // Without address churn: deleting an endpoint under this load can oops
    // Linux 6.18 (`tcp_tso_segs`, docs/soak.md), and the wedged kernel
    // fails every later root test on the machine.
    if let Soak::KernelOops = soak("kernel", "75s", false) {
        eprintln!("the kernel soak was skipped: Linux oopsed");
    }
}

#[test]
fn soak_on_the_userspace_backend() {
    let _s = kernel_support::serial();
    if !kernel_support::can_run() {
        return;
    }
    let r = done(soak("userspace", "75s", true));
    assert!(r["max_loop_pass_ms"].as_f64().is_some(), "{r}");
}
