//! Shared by the kernel-backend tests: root check, one kernel run at a time
//! per test binary, a namespace guard that removes the run's namespaces
//! even when the test panics, and a helper to run a scenario text.

#![allow(dead_code)]

pub mod topologies;

use std::sync::{Mutex, MutexGuard};

use mplab_emu::kernel::{self, KernelOptions, KernelRun};
use mplab_scenario::{Network, Scenario};

/// Kernel runs share 2 cores: one at a time within a test binary (cargo
/// runs test binaries one after another).
pub fn serial() -> MutexGuard<'static, ()> {
    static M: Mutex<()> = Mutex::new(());
    M.lock().unwrap_or_else(|e| e.into_inner())
}

/// True when the test can run; false (and a message) when it must skip.
/// CI runs as root, so there a skip is a failure.
pub fn can_run() -> bool {
    if mplab_emu::sys::is_root() && std::path::Path::new("/proc/sys/net/mptcp/enabled").exists() {
        kernel_answers();
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("CI must run the kernel-backend tests as root on a kernel with MPTCP");
    }
    eprintln!("skipping: needs root and a kernel with MPTCP");
    false
}

/// Fails the test at once when the kernel's MPTCP path manager does not
/// answer (a Linux oops left its netlink mutex held, docs/soak.md): every
/// `ip mptcp` would then block forever, and a suite that waits on one
/// hangs until CI's time limit instead of saying why. Checked once per
/// test binary.
fn kernel_answers() {
    static ANSWER: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    if let Err(e) = ANSWER.get_or_init(|| mplab_emu::sys::mptcp_pm_answers(std::time::Duration::from_secs(10))) {
        panic!("{e}");
    }
}

/// `ip ARGS` bounded in time (a wedged kernel can block `ip mptcp` in
/// state D forever): its stdout, or None when it failed or took over 20 s.
pub fn ip_within(args: &[&str]) -> Option<String> {
    let out = mplab_emu::sys::output_within(std::process::Command::new("ip").args(args), None, std::time::Duration::from_secs(20)).ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Namespaces whose name starts with `prefix`.
pub fn namespaces_with(prefix: &str) -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with(prefix)).collect())
        .unwrap_or_default()
}

/// Removes every namespace of one test's runs on drop (also on panic).
pub struct NsGuard {
    pub prefix: String,
}

impl NsGuard {
    pub fn new(tag: &str) -> NsGuard {
        NsGuard { prefix: format!("mplab-{}-{tag}", std::process::id()) }
    }
    /// A prefix for the `i`th run of this test.
    pub fn run_prefix(&self, i: usize) -> String {
        format!("{}{i}", self.prefix)
    }
    pub fn assert_clean(&self) {
        let left = namespaces_with(&self.prefix);
        assert!(left.is_empty(), "namespaces left behind: {left:?}");
    }
}

impl Drop for NsGuard {
    fn drop(&mut self) {
        for n in namespaces_with(&self.prefix) {
            let _ = mplab_emu::topo::delete_ns(&n);
        }
    }
}

pub fn resolve(toml: &str) -> (Scenario, Network) {
    let sc = Scenario::from_str(toml, "test.toml").unwrap_or_else(|e| panic!("{e}"));
    let net = sc.resolve().unwrap_or_else(|e| panic!("{e}"));
    (sc, net)
}

/// The text of a bundled scenario (scenarios/NAME).
pub fn bundled(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../../scenarios/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The same scenario text on the simulator, for a kernel run to compare with.
pub fn sim(toml: &str) -> mplab_sim::RunResults {
    mplab_sim::simulate(resolve(toml).1).unwrap()
}

/// Runs a scenario text on the kernel under the guard's prefix (see
/// [`unless_stalled`]).
pub fn run(guard: &NsGuard, i: usize, toml: &str) -> KernelRun {
    let (sc, net) = resolve(toml);
    let errs = mplab_emu::kconf::unsupported(&sc, &net);
    assert!(errs.is_empty(), "{errs:?}");
    unless_stalled(guard, i, |prefix| {
        let opts = KernelOptions { prefix: Some(prefix), ..Default::default() };
        let r = kernel::run(&net, &opts).unwrap_or_else(|e| panic!("kernel run failed: {e}"));
        for n in &r.results.summary.notes {
            eprintln!("note: {n}");
        }
        r
    })
}

/// What the hybrid-access gateways note when Linux's MPTCP receive stall
/// held their tunnel (crates/emu/src/gateway/, docs/kernel-backend.md).
pub const KERNEL_MPTCP_STALL: &str = "MPTCP connection stopped delivering";

/// [`run`], repeated (at most three runs in all) while a gateway noted
/// Linux's MPTCP receive stall: such a run measured a kernel bug (about one
/// run in twenty of the tunnel test on 6.18.44), not the tunnel, and the
/// note says so; three in a row fail the test with that note.
pub fn run_unless_kernel_mptcp_stalled(guard: &NsGuard, i: usize, toml: &str) -> KernelRun {
    unless_kernel_mptcp_stalled(|attempt| run(guard, i + 100 * attempt, toml))
}

/// [`run_userspace`], repeated as [`run_unless_kernel_mptcp_stalled`] is:
/// for a userspace run with a gateway on Linux's MPTCP.
pub fn run_userspace_unless_kernel_mptcp_stalled(guard: &NsGuard, i: usize, toml: &str) -> KernelRun {
    unless_kernel_mptcp_stalled(|attempt| run_userspace(guard, i + 100 * attempt, toml))
}

/// Runs `once(attempt)` again (three runs at most) while a gateway noted
/// Linux's MPTCP receive stall.
fn unless_kernel_mptcp_stalled(once: impl Fn(usize) -> KernelRun) -> KernelRun {
    let mut attempt = 0;
    loop {
        let r = once(attempt);
        let stall = r.results.summary.notes.iter().find(|n| n.contains(KERNEL_MPTCP_STALL)).cloned();
        attempt += 1;
        match stall {
            Some(n) if attempt < 3 => eprintln!("kernel MPTCP stall, running again (attempt {} of 3): {n}", attempt + 1),
            _ => return r,
        }
    }
}

/// Runs `once` (given a namespace prefix) and checks it left no namespace
/// behind; a run during which the host stopped running the emulator
/// measured the host, not the scenario, and is repeated
/// ([`kernel::unless_host_stalled`]). Repeats use run indexes from 500 on,
/// so they never share a prefix with the test's other runs.
pub fn unless_stalled(guard: &NsGuard, i: usize, once: impl Fn(String) -> KernelRun) -> KernelRun {
    let run = |attempt: usize| {
        let prefix = guard.run_prefix(if attempt == 0 { i } else { 500 + 10 * i + attempt });
        let r = once(prefix.clone());
        let left = namespaces_with(&prefix);
        assert!(left.is_empty(), "the run left namespaces behind: {left:?}");
        Ok::<_, std::convert::Infallible>(r)
    };
    match kernel::unless_host_stalled(run, |r| &r.meta) {
        Ok(r) => r,
        Err(never) => match never {},
    }
}

/// Runs a scenario text on the userspace backend (mplab's stack on the
/// nodes `mplab_emu::userspace::mplab_nodes` names) under the guard's prefix.
pub fn run_userspace(guard: &NsGuard, i: usize, toml: &str) -> KernelRun {
    run_userspace_pcap(guard, i, toml, None)
}

/// [`run_userspace`], writing the scenario's `probes.pcap` captures into `pcap`.
pub fn run_userspace_pcap(guard: &NsGuard, i: usize, toml: &str, pcap: Option<&std::path::Path>) -> KernelRun {
    let net = userspace_network(toml);
    unless_stalled(guard, i, |prefix| userspace_run(&net, prefix, pcap))
}

/// [`run_userspace_pcap`] once, stalled or not: for a test whose helpers
/// act on the run's namespaces by name while it runs (a repeat would get
/// another prefix).
pub fn run_userspace_once(guard: &NsGuard, i: usize, toml: &str, pcap: Option<&std::path::Path>) -> KernelRun {
    let r = userspace_run(&userspace_network(toml), guard.run_prefix(i), pcap);
    let left = namespaces_with(&guard.run_prefix(i));
    assert!(left.is_empty(), "the run left namespaces behind: {left:?}");
    r
}

fn userspace_network(toml: &str) -> Network {
    let (sc, net) = resolve(toml);
    let errs = mplab_emu::userspace::unsupported(&sc, &net);
    assert!(errs.is_empty(), "{errs:?}");
    net
}

fn userspace_run(net: &Network, prefix: String, pcap: Option<&std::path::Path>) -> KernelRun {
    let opts = KernelOptions { prefix: Some(prefix), pcap_dir: pcap.map(|p| p.to_path_buf()), ..Default::default() };
    mplab_emu::userspace::run(net, &opts).unwrap_or_else(|e| panic!("userspace run failed: {e}"))
}

/// `text` with its hosts `names` on Linux's stack (`stack = "kernel"`),
/// for a userspace run whose mplab nodes are the gateways only.
pub fn on_linux(text: &str, names: &[&str]) -> String {
    names.iter().fold(text.to_string(), |t, n| t.replace(&format!("name = \"{n}\"\n"), &format!("name = \"{n}\"\nstack = \"kernel\"\n")))
}

/// What an mplab node's loop counted (meta.json's `mplab_hosts`).
pub fn mplab_host<'a>(r: &'a KernelRun, node: &str) -> &'a serde_json::Value {
    &r.meta["mplab_hosts"][node]
}

/// Mean of the flow's `all` goodput samples with `from < time_s <= to`, Mbit/s.
pub fn window_mbit(r: &KernelRun, flow: &str, from: f64, to: f64) -> f64 {
    let v: Vec<f64> = r.results.flows.iter().filter(|s| s.flow == flow && s.subflow == "all" && s.time_s > from + 1e-9 && s.time_s <= to + 1e-9).map(|s| s.goodput_bps).collect();
    assert!(!v.is_empty(), "no samples in ({from}, {to}]");
    v.iter().sum::<f64>() / v.len() as f64 / 1e6
}

/// The fields of the packets of `pcap` that match tshark's display filter
/// `filter`, one line per packet, fields separated by tabs.
pub fn tshark_fields(pcap: &std::path::Path, filter: &str, fields: &[&str]) -> Vec<String> {
    let mut args = vec!["-r".to_string(), pcap.display().to_string(), "-Y".into(), filter.into(), "-T".into(), "fields".into()];
    for f in fields {
        args.extend(["-e".to_string(), f.to_string()]);
    }
    let out = std::process::Command::new("tshark").args(&args).output().expect("tshark (scripts/setup.sh installs it)");
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

/// A call that no packet of which waited for a retransmission, judged on a
/// real-time run against the simulator's (which must be exact: nothing
/// lost, nothing late). `lossy_rtt_ms` is the round trip of the lossy
/// path: a packet held behind a lost one waits at least that long.
///
/// Only the claim is checked, not the host's tail: on real time each call
/// packet passes gateway programs and emulated hops on 2 cores busy with
/// the rest of the scenario, which moves the kernel's p99 by 1-27 ms from
/// run to run (seed004-hybrid with 5 % loss: 14.1-39.0 ms against the
/// simulator's 12.4), so its p99 is no figure to hold.
pub fn assert_call_without_head_of_line_blocking(kernel: &mplab_backend::call_quality::CallQuality, sim: &mplab_backend::call_quality::CallQuality, lossy_rtt_ms: f64) {
    eprintln!("call, kernel: {kernel:?}\ncall, sim: {sim:?}");
    assert_eq!((sim.late, sim.received), (0, sim.sent), "sim: the call lost packets or had late ones");
    assert_eq!(kernel.received, kernel.sent, "kernel: call packets lost");
    assert!((kernel.delay_p50_ms - sim.delay_p50_ms).abs() <= 2.0, "call p50: kernel {:.2} ms, sim {:.2} ms", kernel.delay_p50_ms, sim.delay_p50_ms);
    assert!(kernel.delay_p95_ms < sim.delay_p95_ms + lossy_rtt_ms, "call p95: kernel {:.2} ms, sim {:.2} ms: a twentieth of the packets waited about a round trip of the lossy path ({lossy_rtt_ms} ms), as behind a retransmission", kernel.delay_p95_ms, sim.delay_p95_ms);
    assert!(kernel.late * 100 <= kernel.sent, "kernel: {} of {} call packets late", kernel.late, kernel.sent);
}
