//! `mplab soak`: a long run of many MPTCP (or Multipath QUIC) connections
//! through faults — link flaps, Gilbert-Elliott loss bursts, reordering,
//! duplication, addresses withdrawn and restored on both ends, a firewall
//! that strips MPTCP's option for a while — on any backend, with
//! every byte verified, the process's memory, file descriptors and threads
//! sampled, and what the run left behind (namespaces, child processes,
//! descriptors) checked afterwards. docs/soak.md has the figures.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use mplab_scenario::Scenario;
use serde::Serialize;

use crate::procstat::{loop_figures, sample, Sample, Sampler};
use crate::run::{self, RunError};

/// A fault repeats every this many seconds (each kind at its own offset).
const CYCLE_S: u64 = 150;
/// A new download starts every this many seconds.
const DOWNLOAD_GAP_S: u64 = 5;
/// Downloads that start this close to the end need not finish.
const TAIL_S: u64 = 60;
const SIZES: [&str; 3] = ["200KB", "1MB", "3MB"];
/// How soon after a fault on the second path ends (the link back up, the
/// firewall gone, an address restored) mplab's long-lived connection must
/// carry data over that path again, when its subflows or paths were lost:
/// the re-creation back-off (1 s, doubling) has tried again within twice
/// the longest fault (10 s), and the flows are sampled every 5 s.
const BACK_WITHIN_S: f64 = 30.0;

/// The soak scenario: a client and a server joined by two paths, 20 Mbit/s
/// with Gilbert-Elliott loss and 10 Mbit/s with jitter, reordering and
/// duplication; a constant-rate upload, a request/response flow and a new
/// download every 5 s for the whole run; every 150 s (half the run if that
/// is shorter, at least 30 s) the second path flaps for 8 s, a firewall on
/// it strips option 30 from every segment for 10 s (the subflows through it
/// are lost, the connections carry on over the first path), the client
/// withdraws and restores its second address (which opens those subflows
/// again), and every other cycle the server does the same with its own.
/// Without `address_churn` the addresses stay: Linux 6.18 can oops in
/// `tcp_tso_segs` while an endpoint is deleted under load (docs/soak.md),
/// which wedges the kernel's MPTCP for every later run on the machine.
/// `transport` is "mptcp" or "mpquic"; Multipath QUIC has neither DSS
/// checksums nor a TCP option a firewall could strip, so it meets every
/// fault but that one.
pub fn scenario(duration_s: u64, seed: u64, client_stack: &str, address_churn: bool, transport: &str) -> String {
    let quic = transport == "mpquic";
    let what = if quic { "Multipath QUIC" } else { "MPTCP" };
    let mut t = two_hosts("soak", &format!("Many {what} connections through link flaps, loss bursts, reordering, duplication and address churn"), duration_s, seed, [client_stack, "kernel"]);
    let _ = write!(
        t,
        r#"
[[links]]
name = "p0"
a = "client:eth0"
b = "server:eth0"
rate = "20Mbit"
delay = "10ms"
queue = {{ kind = "droptail", packets = 60 }}
loss_model = {{ gilbert_elliott = {{ p_gb = 0.001, p_bg = 0.1, loss_good = 0.0, loss_bad = 0.2 }} }}
a_addr = "10.9.0.1/24"
b_addr = "10.9.0.2/24"

[[links]]
name = "p1"
a = "client:eth1"
b = "server:eth1"
rate = "10Mbit"
delay = "25ms"
jitter = "3ms"
reorder = true
duplicate = 0.005
queue = {{ kind = "droptail", packets = 40 }}
a_addr = "10.9.1.1/24"
b_addr = "10.9.1.2/24"

[transport.mptcp]
path_manager = "fullmesh"
checksum = {checksum}

[probes]
interval = "5s"
flows = ["stream", "web"]

[[flows]]
name = "stream"
from = "client"
to = "server"
transport = "{transport}"
app = "rate"
rate = "4Mbit"

[[flows]]
name = "web"
from = "client"
to = "server"
transport = "{transport}"
app = "request"
request_size = "300B"
response_size = "20KB"
interval = "500ms"
"#,
        checksum = !quic,
    );
    let mut i = 0;
    let mut start = 2;
    while start + 1 < duration_s {
        let _ = write!(
            t,
            "\n[[flows]]\nname = \"dl{i}\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"{transport}\"\napp = \"download\"\nbytes = \"{}\"\nstart = \"{start}s\"\n",
            SIZES[i % SIZES.len()]
        );
        i += 1;
        start += DOWNLOAD_GAP_S;
    }
    // The fault cycle: 150 s, shorter for a short run so that it still
    // sees every kind of fault (two cycles at least).
    let c = (duration_s / 2).clamp(30, CYCLE_S);
    let at = |cycle: u64, of150: u64| cycle * c + of150 * c / CYCLE_S;
    let mut cycle = 0;
    let mut boxes = String::new();
    while at(cycle, 40) < duration_s {
        let mut ev = |when: u64, body: &str| {
            if when < duration_s {
                let _ = write!(t, "\n[[events]]\nat = \"{when}s\"\n{body}");
            }
        };
        ev(at(cycle, 40), "link = \"p1\"\naction = \"down\"\n");
        ev(at(cycle, 48), "link = \"p1\"\naction = \"up\"\n");
        if at(cycle, 60) < duration_s && !quic {
            let _ = write!(
                boxes,
                "\n[[middleboxes]]\nkind = \"strip_mptcp\"\nlink = \"p1\"\non = \"all\"\nfrom = \"{}s\"\nuntil = \"{}s\"\n",
                at(cycle, 60),
                at(cycle, 70).min(duration_s)
            );
        }
        if address_churn {
            ev(at(cycle, 90), "node = \"client\"\niface = \"eth1\"\naction = \"remove_addr\"\n");
            ev(at(cycle, 105), "node = \"client\"\niface = \"eth1\"\naction = \"add_addr\"\n");
        }
        if address_churn && cycle % 2 == 1 {
            ev(at(cycle, 120), "node = \"server\"\niface = \"eth1\"\naction = \"remove_addr\"\n");
            ev(at(cycle, 130), "node = \"server\"\niface = \"eth1\"\naction = \"add_addr\"\n");
        }
        cycle += 1;
    }
    t + &boxes
}

/// The head of a generated scenario between two hosts, `client` and
/// `server`, running `stacks` (the soak's and the load's).
pub fn two_hosts(name: &str, description: &str, duration_s: u64, seed: u64, stacks: [&str; 2]) -> String {
    format!(
        "name = \"{name}\"\ndescription = \"{description}\"\nduration = \"{duration_s}s\"\nseed = {seed}\n\n[[nodes]]\nname = \"client\"\nstack = \"{}\"\n[[nodes]]\nname = \"server\"\nstack = \"{}\"\n",
        stacks[0], stacks[1]
    )
}

/// Child processes of this one still alive (usrsctp hosts, ip, tcpdump).
fn children() -> Vec<String> {
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // pid (comm) state ppid ...
        let Some(rest) = stat.rsplit_once(") ").map(|x| x.1) else { continue };
        if rest.split_whitespace().nth(1) == Some(me.as_str()) {
            out.push(stat.split_whitespace().take(2).collect::<Vec<_>>().join(" "));
        }
    }
    out
}

fn mplab_namespaces() -> Vec<String> {
    let out = std::process::Command::new("ip").args(["netns", "list"]).output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    let mine = format!("mplab-{}-", std::process::id());
    text.lines().filter_map(|l| l.split_whitespace().next()).filter(|n| n.starts_with(&mine)).map(str::to_string).collect()
}

/// What a soak found.
#[derive(Debug, Serialize)]
pub struct Report {
    pub backend: String,
    pub duration_s: u64,
    pub wall_s: f64,
    pub connections: usize,
    pub downloads_completed: usize,
    pub downloads_due: usize,
    pub bytes_delivered: u64,
    pub flows_unverified: Vec<String>,
    pub downloads_short: Vec<String>,
    pub link_flaps: usize,
    pub address_events: usize,
    /// Windows in which a firewall stripped option 30 on the second path.
    pub middlebox_windows: usize,
    pub loss_drops: u64,
    pub duplicated: u64,
    pub subflows_opened: usize,
    pub fallbacks: usize,
    /// RSS (MiB) after warm-up (the first quarter) and at the end, and the
    /// highest.
    pub rss_warm_mib: f64,
    pub rss_end_mib: f64,
    pub rss_max_mib: f64,
    pub fds_before: u64,
    pub fds_after: u64,
    pub threads_before: u64,
    pub threads_after: u64,
    pub namespaces_left: Vec<String>,
    pub children_left: Vec<String>,
    /// Userspace backend: the longest packet-loop pass of an mplab host and
    /// the passes over 10 ms.
    pub max_loop_pass_ms: Option<f64>,
    pub loop_passes_over_10ms: Option<u64>,
    /// After each fault on the second path: what ended, when, and how long
    /// until the `stream` connection carried data over it again (None:
    /// not before the end). Checked where mplab's stack is the client.
    pub back_on_p1: Vec<(String, f64, Option<f64>)>,
    pub samples: Vec<Sample>,
    pub failures: Vec<String>,
}

/// Runs the soak on `backend` for `duration_s` seconds of scenario time and
/// writes the run's results and `soak.json` to `out`; `address_churn` as
/// in [`scenario`].
pub fn soak(backend: &str, duration_s: u64, seed: u64, address_churn: bool, transport: &str, out: &Path) -> Result<Report, RunError> {
    let client_stack = if backend == "userspace" { "mplab" } else { "kernel" };
    let toml = scenario(duration_s, seed, client_stack, address_churn, transport);
    std::fs::create_dir_all(out).map_err(|e| RunError::Failed(format!("{}: {e}", out.display())))?;
    std::fs::write(out.join("soak.toml"), &toml).map_err(|e| RunError::Failed(format!("{}: {e}", out.display())))?;
    let sc = Scenario::from_str(&toml, "soak.toml").map_err(|e| RunError::Usage(e.to_string()))?;
    let net = mplab_backend::plugins::resolve(&sc).map_err(|e| RunError::Usage(e.to_string()))?;
    let flaps = net.events.iter().filter(|e| matches!(e.action, mplab_scenario::network::LinkAction::Down)).count();
    let addr_events = net.events.iter().filter(|e| !e.action.is_link_change()).count();
    let windows = net.middleboxes.iter().filter(|m| m.has_window()).count();
    let net_events = fault_ends(&net);

    let t0 = Instant::now();
    let before = sample(t0);
    // Ten samples a second (thinned on a long run).
    let sampler = Sampler::start(t0, before, Duration::from_millis(100));
    let result = if backend == "sim" { run::simulate(&sc, net, out, false, None) } else { run::run_real(backend, &sc, net, out) };
    let samples = sampler.finish();
    let (results, meta) = result?;
    let wall_s = t0.elapsed().as_secs_f64();
    // Give the run's last threads and processes a moment to be reaped.
    std::thread::sleep(Duration::from_millis(300));
    let after = sample(t0);

    let s = &results.summary;
    let dls: Vec<_> = s.flows.iter().filter(|f| f.name.starts_with("dl")).collect();
    let due = |name: &str| -> bool {
        let i: u64 = name[2..].parse().unwrap_or(0);
        2 + i * DOWNLOAD_GAP_S + TAIL_S <= duration_s
    };
    let size = |name: &str| -> u64 {
        let i: usize = name[2..].parse().unwrap_or(0);
        [200_000, 1_000_000, 3_000_000][i % SIZES.len()]
    };
    let mut r = Report {
        backend: backend.into(),
        duration_s,
        wall_s,
        connections: s.flows.len(),
        downloads_completed: dls.iter().filter(|f| f.completed).count(),
        downloads_due: dls.iter().filter(|f| due(&f.name)).count(),
        bytes_delivered: s.flows.iter().map(|f| f.bytes_delivered).sum(),
        flows_unverified: s.flows.iter().filter(|f| !f.verified).map(|f| f.name.clone()).collect(),
        downloads_short: dls.iter().filter(|f| due(&f.name) && !(f.completed && f.bytes_delivered == size(&f.name))).map(|f| format!("{} ({} of {} bytes)", f.name, f.bytes_delivered, size(&f.name))).collect(),
        link_flaps: flaps,
        address_events: addr_events,
        middlebox_windows: windows,
        loss_drops: s.links.iter().map(|l| l.drops_loss).sum(),
        duplicated: s.links.iter().map(|l| l.duplicated).sum(),
        subflows_opened: s.flows.iter().map(|f| f.subflows.len()).sum(),
        fallbacks: s.flows.iter().filter(|f| f.fallback).count(),
        rss_warm_mib: 0.0,
        rss_end_mib: 0.0,
        rss_max_mib: samples.iter().map(|x| x.rss_kib).max().unwrap_or(0) as f64 / 1024.0,
        fds_before: before.fds,
        fds_after: after.fds,
        threads_before: before.threads,
        threads_after: after.threads,
        namespaces_left: mplab_namespaces(),
        children_left: children(),
        max_loop_pass_ms: None,
        loop_passes_over_10ms: None,
        back_on_p1: back_on_p1(&net_events, &results, duration_s),
        samples,
        failures: Vec::new(),
    };
    // Warm: the largest RSS over the second quarter of the run; end: over
    // the last quarter. Growth past warm-up beyond what the recorded time
    // series account for is a leak.
    let n = r.samples.len();
    let max_in = |a: usize, b: usize| r.samples[a.min(n)..b.min(n)].iter().map(|x| x.rss_kib).max().unwrap_or(0) as f64 / 1024.0;
    r.rss_warm_mib = max_in(n / 4, n / 2);
    r.rss_end_mib = max_in(3 * n / 4, n);
    let lf = loop_figures(&meta);
    (r.max_loop_pass_ms, r.loop_passes_over_10ms) = (lf.max_pass_ms, lf.passes_over_10ms);
    let mut fail = |m: String| r.failures.push(m);
    if !r.flows_unverified.is_empty() {
        fail(format!("flows whose bytes did not verify: {:?}", r.flows_unverified));
    }
    if !r.downloads_short.is_empty() {
        fail(format!("downloads due to finish that did not deliver every byte: {:?}", r.downloads_short));
    }
    if r.rss_warm_mib > 0.0 && r.rss_end_mib > r.rss_warm_mib * 1.25 + 16.0 {
        fail(format!("memory grew after warm-up: {:.1} MiB -> {:.1} MiB", r.rss_warm_mib, r.rss_end_mib));
    }
    if r.fds_after > r.fds_before {
        fail(format!("file descriptors left open: {} before, {} after", r.fds_before, r.fds_after));
    }
    if r.threads_after > r.threads_before {
        fail(format!("threads left running: {} before, {} after", r.threads_before, r.threads_after));
    }
    if !r.namespaces_left.is_empty() {
        fail(format!("namespaces left: {:?}", r.namespaces_left));
    }
    if !r.children_left.is_empty() {
        fail(format!("child processes left: {:?}", r.children_left));
    }
    // Linux never re-creates a subflow; mplab's stack (the simulator's
    // hosts, the userspace backend's client) must.
    if backend != "kernel" {
        for (what, at, back) in &r.back_on_p1 {
            if back.is_none_or(|b| b > BACK_WITHIN_S) {
                fail(format!("the stream connection was not back on p1 within {BACK_WITHIN_S} s of {what} at {at:.0} s ({back:?})"));
            }
        }
    }
    std::fs::write(out.join("soak.json"), serde_json::to_string_pretty(&r).unwrap_or_default() + "\n").map_err(|e| RunError::Failed(format!("{}: {e}", out.display())))?;
    Ok(r)
}

/// When each fault on the second path ends, in the scenario's time: the
/// link back up, an address restored, a firewall window over.
fn fault_ends(net: &mplab_scenario::Network) -> Vec<(String, f64)> {
    use mplab_scenario::network::{LinkAction, Placement};
    let p1 = net.links.iter().position(|l| l.name == "p1");
    let mut out: Vec<(String, f64)> = Vec::new();
    for e in &net.events {
        let what = match &e.action {
            LinkAction::Up if Some(e.link) == p1 => "p1 up",
            LinkAction::AddAddr { .. } => "an address restored",
            _ => continue,
        };
        out.push((what.into(), e.at_ns as f64 / 1e9));
    }
    for m in &net.middleboxes {
        if let (Placement::Link { link, .. }, Some(until)) = (&m.placement, m.until_ns) {
            if Some(*link) == p1 {
                out.push(("the firewall gone".into(), until as f64 / 1e9));
            }
        }
    }
    out.sort_by(|a, b| a.1.total_cmp(&b.1));
    out
}

/// For each fault end at least [`BACK_WITHIN_S`] before the run's end, how
/// long until the `stream` flow had goodput on a subflow (or path) over p1.
fn back_on_p1(ends: &[(String, f64)], r: &mplab_sim::RunResults, duration_s: u64) -> Vec<(String, f64, Option<f64>)> {
    let Some(f) = r.summary.flows.iter().find(|f| f.name == "stream") else { return Vec::new() };
    let on_p1: Vec<String> = f.subflows.iter().enumerate().filter(|(_, s)| s.path.as_deref().is_some_and(|p| p.contains("(p1)"))).map(|(i, _)| i.to_string()).collect();
    ends.iter()
        .filter(|(_, at)| at + BACK_WITHIN_S <= duration_s as f64)
        .map(|(what, at)| {
            let back = r.flows.iter().filter(|x| x.flow == "stream" && on_p1.contains(&x.subflow) && x.time_s > *at && x.goodput_bps > 0.0).map(|x| x.time_s - at).reduce(f64::min);
            (what.clone(), *at, back)
        })
        .collect()
}

/// The report as a table.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "soak on {}: {} s of scenario time in {:.1} s wall", r.backend, r.duration_s, r.wall_s);
    let _ = writeln!(o, "  connections       {} ({} downloads completed, {} due)", r.connections, r.downloads_completed, r.downloads_due);
    let _ = writeln!(o, "  bytes delivered   {} (unverified flows: {}, short downloads: {})", r.bytes_delivered, r.flows_unverified.len(), r.downloads_short.len());
    let _ = writeln!(o, "  faults            {} link flaps, {} address events, {} stripping windows, {} packets lost in bursts, {} duplicated", r.link_flaps, r.address_events, r.middlebox_windows, r.loss_drops, r.duplicated);
    let _ = writeln!(o, "  subflows          {} opened, {} connections fell back", r.subflows_opened, r.fallbacks);
    let _ = writeln!(o, "  memory (RSS)      {:.1} MiB after warm-up, {:.1} MiB at the end, {:.1} MiB at most", r.rss_warm_mib, r.rss_end_mib, r.rss_max_mib);
    let _ = writeln!(o, "  left behind       fds {} -> {}, threads {} -> {}, namespaces {}, child processes {}", r.fds_before, r.fds_after, r.threads_before, r.threads_after, r.namespaces_left.len(), r.children_left.len());
    if let (Some(ms), Some(n)) = (r.max_loop_pass_ms, r.loop_passes_over_10ms) {
        let _ = writeln!(o, "  mplab host loop   longest pass {ms:.2} ms, {n} passes over 10 ms");
    }
    if !r.back_on_p1.is_empty() {
        let backs: Vec<f64> = r.back_on_p1.iter().filter_map(|b| b.2).collect();
        let longest = backs.iter().copied().fold(0.0, f64::max);
        let _ = writeln!(o, "  back on p1        after {} of {} faults on it ended, within {longest:.0} s at most", backs.len(), r.back_on_p1.len());
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
