//! mplab's stack against the kernel on an unshaped path (root only).
//!
//! `cargo bench -p mplab-emu --bench userspace`
//!
//! Two hosts joined by two direct links with no rate limit and no delay
//! (veths, the link emulator in between; on the mplab side a TUN). A 6 s
//! bulk MPTCP transfer, one subflow and two subflows, for kernel client ->
//! kernel server and for mplab client -> kernel server; prints Gbit/s (the
//! receiver's verified goodput from 1 s to the end), the ratio mplab /
//! kernel, and CPU: busy CPU-seconds of the whole machine (all cores,
//! /proc/stat) per Gbit delivered. The machine's other load counts too.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use mplab_emu::kernel::KernelOptions;

// The root tests' scenario builders, shared with this benchmark.
#[path = "../../lab/tests/kernel_support/topologies.rs"]
mod topologies;

/// Two unshaped direct paths (veths, the emulator with no rate limit), one
/// bulk MPTCP flow on one or two subflows.
fn scenario(client: &str, subflows: u32) -> String {
    let pm = if subflows == 1 { "[transport.mptcp]\npath_manager = \"default\"\n" } else { "[transport.mptcp]\npath_manager = \"fullmesh\"\nlimits = { subflows = 1, add_addr_accepted = 0 }\n" };
    let flow = "[[flows]]\nname = \"bulk\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"mptcp\"\napp = \"bulk\"\n[probes]\ninterval = \"500ms\"\n";
    topologies::two_paths_with("bench", "6s", client, "kernel", "1000Gbit", None, 10000, &format!("{pm}{flow}"))
}

/// Busy and total jiffies over all CPUs.
fn cpu() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let v: Vec<u64> = s.lines().next().unwrap_or("").split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    let total: u64 = v.iter().sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

fn main() {
    if !mplab_emu::sys::is_root() {
        eprintln!("userspace bench: needs root; skipped");
        return;
    }
    let hz = 100.0; // USER_HZ
    let mut rows = Vec::new();
    for subflows in [1u32, 2] {
        let mut gbps = [0.0f64; 2];
        for (k, client) in ["kernel", "mplab"].into_iter().enumerate() {
            let sc = mplab_scenario::Scenario::from_str(&scenario(client, subflows), "bench.toml").expect("scenario");
            let net = sc.resolve().expect("resolve");
            let opts = KernelOptions { pcap_dir: None, abort: Arc::new(AtomicBool::new(false)), prefix: None };
            let (b0, _) = cpu();
            let r = mplab_emu::userspace::run(&net, &opts).expect("run");
            let (b1, _) = cpu();
            let f = &r.results.summary.flows[0];
            let late: Vec<f64> = r.results.flows.iter().filter(|s| s.subflow == "all" && s.time_s > 1.0).map(|s| s.goodput_bps).collect();
            let g = late.iter().sum::<f64>() / late.len().max(1) as f64 / 1e9;
            gbps[k] = g;
            let cpu_s = (b1 - b0) as f64 / hz;
            let gbit = f.bytes_delivered as f64 * 8.0 / 1e9;
            let line = format!(
                "{client:>6} client -> kernel server, {subflows} subflow(s): {g:.3} Gbit/s (verified {}), {} subflows seen, {:.2} CPU-s per Gbit ({:.2} cores busy over the run)",
                f.verified,
                f.subflows.len(),
                cpu_s / gbit.max(1e-9),
                cpu_s / (net.duration_ns as f64 / 1e9 + 3.5)
            );
            println!("{line}");
            rows.push(line);
        }
        println!("  ratio mplab / kernel, {subflows} subflow(s): {:.2}", gbps[1] / gbps[0].max(1e-12));
    }
}
