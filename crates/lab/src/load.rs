//! `mplab load`: how many concurrent MPTCP (or Multipath QUIC) connections
//! a backend holds, and
//! what each costs. Thousands of idle connections (a small request and
//! response every 10 s, as a chat or push client keeps) and hundreds of
//! active ones (constant-rate senders offering 100 Mbit/s in all to two
//! 100 Mbit/s paths) between two hosts, every byte verified; the process's
//! memory, descriptors and threads sampled, and the kernel's slab memory.
//! docs/load.md has the figures.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use mplab_scenario::Scenario;
use serde::Serialize;

use crate::procstat::{loop_figures, sample, Sample, Sampler};
use crate::run::{self, RunError};

/// An idle connection opens every this many ms, an active one every
/// `ACTIVE_GAP_MS` after them: a ramp, not a SYN flood.
const IDLE_GAP_MS: u64 = 1;
const ACTIVE_GAP_MS: u64 = 2;
/// Scenario time once every connection is open.
const HOLD_S: u64 = 15;
/// What the active connections send in all (kbit/s): half the two paths.
const OFFERED_KBIT: u64 = 100_000;

/// When the last connection opens (ms).
fn ramp_ms(idle: u64, active: u64) -> u64 {
    idle * IDLE_GAP_MS + active * ACTIVE_GAP_MS
}

/// Each active connection's rate (kbit/s).
fn active_rate_kbit(active: u64) -> u64 {
    (OFFERED_KBIT / active.max(1)).clamp(1, 10_000)
}

/// The load scenario: `idle` request/response connections and `active`
/// constant-rate ones from a client to a server over two paths (100
/// Mbit/s, 5 and 10 ms), `transport` ("mptcp" or "mpquic") over the
/// fullmesh path manager; `stack` on both hosts.
pub fn scenario(idle: u64, active: u64, seed: u64, stack: &str, transport: &str) -> String {
    let duration_s = ramp_ms(idle, active).div_ceil(1000) + HOLD_S;
    let what = if transport == "mpquic" { "Multipath QUIC" } else { "MPTCP" };
    let mut t = crate::soak::two_hosts("load", &format!("{idle} idle and {active} active {what} connections between two hosts"), duration_s, seed, [stack, stack]);
    let _ = write!(
        t,
        r#"
[[links]]
name = "p0"
a = "client:eth0"
b = "server:eth0"
rate = "100Mbit"
delay = "5ms"
a_addr = "10.9.0.1/24"
b_addr = "10.9.0.2/24"

[[links]]
name = "p1"
a = "client:eth1"
b = "server:eth1"
rate = "100Mbit"
delay = "10ms"
a_addr = "10.9.1.1/24"
b_addr = "10.9.1.2/24"

[transport.mptcp]
path_manager = "fullmesh"

[probes]
interval = "5s"
flows = []
"#
    );
    let ms = |v: u64| format!("{}.{:03}s", v / 1000, v % 1000);
    let flow = |name: String, app: &str, start: u64| {
        format!("\n[[flows]]\nname = \"{name}\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"{transport}\"\n{app}start = \"{}\"\n", ms(start))
    };
    for i in 0..idle {
        t += &flow(format!("idle{i}"), "app = \"request\"\nrequest_size = \"100B\"\nresponse_size = \"100B\"\ninterval = \"10s\"\n", i * IDLE_GAP_MS);
    }
    // The active ones together offer half of what the two paths carry:
    // busy links, not an overload in which handshakes starve.
    let rate = format!("app = \"rate\"\nrate = \"{}kbit\"\n", active_rate_kbit(active));
    for j in 0..active {
        t += &flow(format!("active{j}"), &rate, idle * IDLE_GAP_MS + j * ACTIVE_GAP_MS);
    }
    t
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub backend: String,
    pub idle: u64,
    pub active: u64,
    pub duration_s: u64,
    pub wall_s: f64,
    /// Connections that carried data (an idle one: its first exchange).
    pub established: u64,
    pub verified: u64,
    pub fallbacks: u64,
    pub subflows: u64,
    /// The active connections' goodput in all and what they offered (Mbit/s).
    pub active_mbps: f64,
    pub offered_mbps: f64,
    pub bytes_delivered: u64,
    /// The process before the run and at its largest; per connection.
    pub rss_before_mib: f64,
    pub rss_peak_mib: f64,
    pub rss_per_connection_kib: f64,
    /// The kernel's slab before and at its largest; per connection.
    pub slab_before_mib: f64,
    pub slab_peak_mib: f64,
    pub slab_per_connection_kib: f64,
    pub fds_peak: u64,
    pub threads_peak: u64,
    pub max_loop_pass_ms: Option<f64>,
    pub max_loop_pass_cpu_ms: Option<f64>,
    pub loop_passes_over_10ms: Option<u64>,
    pub samples: Vec<Sample>,
    pub failures: Vec<String>,
}

/// Runs the load on `backend` and writes the run's results and
/// `load.json` to `out`.
pub fn load(backend: &str, idle: u64, active: u64, seed: u64, transport: &str, out: &Path) -> Result<Report, RunError> {
    let stack = if backend == "userspace" { "mplab" } else { "kernel" };
    let toml = scenario(idle, active, seed, stack, transport);
    std::fs::create_dir_all(out).map_err(|e| RunError::Failed(format!("{}: {e}", out.display())))?;
    std::fs::write(out.join("load.toml"), &toml).map_err(|e| RunError::Failed(format!("{}: {e}", out.display())))?;
    let sc = Scenario::from_str(&toml, "load.toml").map_err(|e| RunError::Usage(e.to_string()))?;
    let net = mplab_backend::plugins::resolve(&sc).map_err(|e| RunError::Usage(e.to_string()))?;
    let duration_s = net.duration_ns / 1_000_000_000;

    let t0 = Instant::now();
    let before = sample(t0);
    let sampler = Sampler::start(t0, before, Duration::from_millis(250));
    let result = if backend == "sim" { run::simulate(&sc, net, out, false, None) } else { run::run_real(backend, &sc, net, out) };
    let samples = sampler.finish();
    let (results, meta) = result?;

    let s = &results.summary;
    let conns = (idle + active).max(1) as f64;
    let mib = |k: u64| k as f64 / 1024.0;
    let peak = |f: fn(&Sample) -> u64| samples.iter().map(f).max().unwrap_or(0);
    let (rss_peak, slab_peak) = (peak(|x| x.rss_kib), peak(|x| x.slab_kib));
    let lf = loop_figures(&meta);
    let mut r = Report {
        backend: backend.into(),
        idle,
        active,
        duration_s,
        wall_s: t0.elapsed().as_secs_f64(),
        established: s.flows.iter().filter(|f| f.bytes_delivered > 0).count() as u64,
        verified: s.flows.iter().filter(|f| f.verified).count() as u64,
        fallbacks: s.flows.iter().filter(|f| f.fallback).count() as u64,
        subflows: s.flows.iter().map(|f| f.subflows.len() as u64).sum(),
        active_mbps: s.flows.iter().filter(|f| f.name.starts_with("active")).map(|f| f.goodput_bps).sum::<f64>() / 1e6,
        offered_mbps: if active == 0 { 0.0 } else { (active_rate_kbit(active) * active) as f64 / 1e3 },
        bytes_delivered: s.flows.iter().map(|f| f.bytes_delivered).sum(),
        rss_before_mib: mib(before.rss_kib),
        rss_peak_mib: mib(rss_peak),
        rss_per_connection_kib: rss_peak.saturating_sub(before.rss_kib) as f64 / conns,
        slab_before_mib: mib(before.slab_kib),
        slab_peak_mib: mib(slab_peak),
        slab_per_connection_kib: slab_peak.saturating_sub(before.slab_kib) as f64 / conns,
        fds_peak: peak(|x| x.fds),
        threads_peak: peak(|x| x.threads),
        max_loop_pass_ms: lf.max_pass_ms,
        max_loop_pass_cpu_ms: lf.max_pass_cpu_ms,
        loop_passes_over_10ms: lf.passes_over_10ms,
        samples,
        failures: Vec::new(),
    };
    let first = |pick: fn(&&mplab_backend::results::FlowSummary) -> bool| s.flows.iter().filter(pick).map(|f| f.name.as_str()).take(5).collect::<Vec<_>>();
    if r.verified < idle + active {
        r.failures.push(format!("{} flows whose bytes did not verify (first: {:?})", idle + active - r.verified, first(|f| !f.verified)));
    }
    if r.established < idle + active {
        r.failures.push(format!("{} connections carried nothing (first: {:?})", idle + active - r.established, first(|f| f.bytes_delivered == 0)));
    }
    if r.fallbacks > 0 {
        r.failures.push(format!("{} connections fell back to a single path", r.fallbacks));
    }
    std::fs::write(out.join("load.json"), serde_json::to_string_pretty(&r).unwrap_or_default() + "\n").map_err(|e| RunError::Failed(format!("{}: {e}", out.display())))?;
    Ok(r)
}

/// The report as a table.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "load on {}: {} idle + {} active connections, {} s of scenario time in {:.1} s wall", r.backend, r.idle, r.active, r.duration_s, r.wall_s);
    let _ = writeln!(o, "  connections       {} carried data, {} verified, {} fell back, {} subflows", r.established, r.verified, r.fallbacks, r.subflows);
    let _ = writeln!(o, "  active goodput    {:.1} Mbit/s in all, {:.1} offered ({} bytes delivered)", r.active_mbps, r.offered_mbps, r.bytes_delivered);
    let _ = writeln!(o, "  process memory    {:.1} -> {:.1} MiB at most: {:.1} KiB per connection", r.rss_before_mib, r.rss_peak_mib, r.rss_per_connection_kib);
    let _ = writeln!(o, "  kernel slab       {:.1} -> {:.1} MiB at most: {:.1} KiB per connection", r.slab_before_mib, r.slab_peak_mib, r.slab_per_connection_kib);
    let _ = writeln!(o, "  descriptors       {} at most, threads {} at most", r.fds_peak, r.threads_peak);
    if let (Some(ms), Some(cpu), Some(n)) = (r.max_loop_pass_ms, r.max_loop_pass_cpu_ms, r.loop_passes_over_10ms) {
        let _ = writeln!(o, "  mplab host loop   longest pass {ms:.2} ms ({cpu:.2} ms of CPU at most), {n} passes over 10 ms");
    }
    if r.failures.is_empty() {
        let _ = writeln!(o, "  verdict           pass");
    } else {
        for f in &r.failures {
            let _ = writeln!(o, "  FAIL              {f}");
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scenario_ramps_then_holds() {
        let text = scenario(3, 2, 1, "kernel", "mptcp");
        let net = Scenario::from_str(&text, "load.toml").unwrap().resolve().unwrap();
        assert_eq!(net.flows.len(), 5);
        let quic = scenario(3, 2, 1, "kernel", "mpquic");
        assert_eq!(quic.matches("transport = \"mpquic\"").count(), 5);
        assert_eq!(net.duration_ns, 16_000_000_000);
        let starts: Vec<u64> = net.flows.iter().map(|f| f.start_ns / 1_000_000).collect();
        assert_eq!(starts, [0, 1, 2, 3, 5]);
        assert!(text.contains("rate = \"50000kbit\"") || text.contains("rate = \"10000kbit\""));
        assert_eq!(active_rate_kbit(1000), 100);
        assert_eq!(active_rate_kbit(2), 10_000);
    }
}
