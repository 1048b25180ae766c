//! `mplab run`: one scenario on one backend, a summary table on the
//! terminal and a results directory (docs/results.md) on disk.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant as WallClock;

use indicatif::{ProgressBar, ProgressStyle};
use mplab_proto::Instant;
use mplab_scenario::{Network, Scenario};
use mplab_sim::{RunResults, Summary, Unsupported, World};

/// What the command line asked for.
pub struct RunArgs {
    pub scenario: PathBuf,
    pub backend: String,
    pub seed: Option<u64>,
    pub sets: Vec<String>,
    pub out: Option<PathBuf>,
    pub json: bool,
    pub quiet: bool,
}

/// Why a run did not happen or did not succeed.
pub enum RunError {
    /// Bad scenario, unknown backend, unsupported feature: exit code 2.
    Usage(String),
    /// The run happened but something failed (I/O, unverified data): exit code 1.
    Failed(String),
}

/// Loads the scenario with the overrides applied and resolves it.
pub fn load(args: &RunArgs) -> Result<(Scenario, Network), RunError> {
    let mut sc = Scenario::from_file(&args.scenario).map_err(|e| RunError::Usage(e.to_string()))?;
    let mut sets: Vec<(String, String)> = Vec::new();
    for s in &args.sets {
        let Some((k, v)) = s.split_once('=') else {
            return Err(RunError::Usage(format!("{}: --set {s}: expected path=value, like links.0.rate=50Mbit", args.scenario.display())));
        };
        sets.push((k.trim().to_string(), v.trim().to_string()));
    }
    if let Some(seed) = args.seed {
        sets.push(("seed".into(), seed.to_string()));
    }
    if !sets.is_empty() {
        sc.set_all(sets.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(|e| RunError::Usage(e.to_string()))?;
    }
    let mut net = mplab_backend::plugins::resolve(&sc).map_err(|e| RunError::Usage(e.to_string()))?;
    mplab_backend::workload::apply_start_jitter(&mut net);
    if !args.quiet {
        for w in implausible(&sc, &net) {
            eprintln!("warning: {w}");
        }
        for n in backup_notes(&sc, &net) {
            eprintln!("{n}");
        }
    }
    Ok((sc, net))
}

/// What `backup` endpoints do on each host that has some: a note naming
/// the interface the host's initial subflows leave from (its default
/// route: the first interface, by name, facing a router) and whether its
/// endpoint makes that subflow a backup; a warning when every interface
/// of a host is a backup, so the flag cannot make any path preferred.
pub fn backup_notes(sc: &Scenario, net: &Network) -> Vec<String> {
    let mut out = Vec::new();
    for node in &net.nodes {
        let eps: Vec<(usize, &mplab_scenario::network::MptcpEndpoint)> = net.mptcp_endpoints.iter().enumerate().filter(|(_, e)| e.node == node.id).collect();
        let is_backup = |iface: usize| eps.iter().any(|(_, e)| e.iface == iface && e.flags.contains(&mplab_scenario::network::EndpointFlag::Backup));
        if !eps.iter().any(|(_, e)| is_backup(e.iface)) {
            continue;
        }
        if node.interfaces.len() > 1 && (0..node.interfaces.len()).all(is_backup) {
            let (i, _) = eps.iter().find(|(_, e)| is_backup(e.iface)).expect("one backup endpoint");
            out.push(format!(
                "warning: {}",
                sc.error_at(&format!("transport.mptcp.endpoints[{i}].flags"), format!("every interface of {} is a backup endpoint: no path is preferred, so `backup` changes nothing", node.name))
            ));
            continue;
        }
        let default = node.routing.main.iter().find(|r| r.dst == mplab_scenario::network::Prefix::DEFAULT).and_then(|r| r.nexthops.first()).map(|h| h.iface);
        if let Some(d) = default {
            let what = if is_backup(d) { "its endpoint is flagged backup, so that subflow becomes a backup once established (MP_PRIO, as Linux does)" } else { "a regular path" };
            out.push(format!("note: {}'s initial subflows leave through {} (its default route: the first interface by name that faces a router); {what}", node.name, node.interfaces[d].name));
        }
    }
    out
}

/// Link settings that are valid but rarely meant: a loss rate above 50 %
/// (`loss = "1"` is every packet), a one-way delay above 10 s (`delay =
/// 40` is 40 seconds), a rate below 1 kbit/s. Each names its line and
/// field; the run goes ahead.
pub fn implausible(sc: &Scenario, net: &Network) -> Vec<String> {
    let mut out = Vec::new();
    // Links written in the file are links[i]; generated ones point at the
    // generator.
    let written = sc.topology.is_none();
    for (i, l) in net.links.iter().enumerate() {
        let at = |field: &str| if written { format!("links[{i}].{field}") } else { "topology".to_string() };
        let mut said = std::collections::BTreeSet::new();
        for d in [&l.ab, &l.ba] {
            let mut warn = |field: &str, msg: String| {
                if said.insert(field.to_string()) {
                    out.push(sc.error_at(&at(field), format!("link {:?}: {msg}", l.name)).to_string());
                }
            };
            if d.loss > 0.5 {
                warn("loss", format!("loss {} drops {:.0} % of packets (a fraction: 0.01 is 1 %)", d.loss, d.loss * 100.0));
            }
            if d.delay_ns > 10_000_000_000 {
                warn("delay", format!("one-way delay {:.1} s (a bare number is seconds: \"40ms\" is 40 ms)", d.delay_ns as f64 / 1e9));
            }
            if d.rate_bps > 0 && d.rate_bps < 1000 {
                warn("rate", format!("rate {} bit/s (below 1 kbit/s; \"10Mbit\" is 10 Mbit/s)", d.rate_bps));
            }
        }
    }
    out
}

/// The field path a backend's objection to a flow setting points at: the
/// flow's own override if it has one, else the `[transport]` default.
fn unsupported_error(sc: &Scenario, net: &Network, u: &Unsupported) -> String {
    let flow = &net.flows[u.flow];
    let idx = sc.flows.iter().position(|f| f.name.as_deref() == Some(flow.name.as_str()));
    let own = idx.filter(|&i| match u.field {
        "cc" => sc.flows[i].cc.is_some(),
        "scheduler" => sc.flows[i].scheduler.is_some(),
        "path_manager" => sc.flows[i].path_manager.is_some(),
        "transport" => true,
        _ => false,
    });
    let path = match (own, u.field) {
        (Some(i), f) => format!("flows[{i}].{f}"),
        (None, "scheduler") => "transport.mptcp.scheduler".to_string(),
        (None, "path_manager") => "transport.mptcp.path_manager".to_string(),
        // An MPTCP flow's subflow congestion control comes from
        // [transport.mptcp] when set there.
        (None, "cc") if sc.transport.mptcp.cc.as_deref().is_some_and(|c| u.message.contains(&format!("{c:?}"))) => "transport.mptcp.cc".to_string(),
        (None, f) => format!("transport.tcp.{f}"),
    };
    sc.error_at(&path, u.message.clone()).to_string()
}

pub fn run(args: &RunArgs) -> Result<Summary, RunError> {
    let (sc, net) = load(args)?;
    if args.backend == "kernel" || args.backend == "userspace" {
        return run_kernel(args, &sc, net);
    }
    if args.backend != "sim" {
        return Err(RunError::Usage(format!("backend {:?} is not available yet; use --backend sim or --backend kernel", args.backend)));
    }
    sim_preflight(&sc, &net)?;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("results").join(&net.name));
    let show_bar = !args.quiet && !args.json;
    let (results, meta) = simulate(&sc, net, &out, show_bar, None)?;
    let events = meta["events"].as_u64().unwrap_or(0);
    let wall_s = meta["wall_time_s"].as_f64().unwrap_or(0.0);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results.summary).unwrap_or_default());
    } else if !args.quiet {
        print!("{}", render_summary(&results.summary));
        println!("{} events in {:.2} s wall ({:.1} M events/s); results in {}", events, wall_s, events as f64 / wall_s.max(1e-9) / 1e6, out.display());
    }
    check(&results)?;
    Ok(results.summary)
}

/// Fails a run that had errors or a flow whose data did not verify.
pub fn check(results: &RunResults) -> Result<(), RunError> {
    if !results.errors.is_empty() {
        return Err(RunError::Failed(results.errors.join("; ")));
    }
    // A flow that moved no byte never got past its handshake: that, not
    // the data's verification, is what went wrong.
    let silent = |f: &&mplab_backend::results::FlowSummary| f.bytes_delivered == 0 && f.subflows.iter().all(|s| s.bytes_sent == 0);
    let never: Vec<&str> = results.summary.flows.iter().filter(|f| !f.verified).filter(silent).map(|f| f.name.as_str()).collect();
    let bad: Vec<&str> = results.summary.flows.iter().filter(|f| !f.verified).filter(|f| !silent(f)).map(|f| f.name.as_str()).collect();
    let mut why = Vec::new();
    if !never.is_empty() {
        why.push(format!("flows that never connected (no data sent or delivered: are the links up, and their loss and delay plausible?): {}", never.join(", ")));
    }
    if !bad.is_empty() {
        why.push(format!("flows whose data did not verify: {}", bad.join(", ")));
    }
    if !why.is_empty() {
        return Err(RunError::Failed(why.join("; ")));
    }
    Ok(())
}

/// Checks that the simulator can run this network: an unsupported congestion
/// control or scheduler (exit code 2) names its scenario line.
pub fn sim_preflight(sc: &Scenario, net: &Network) -> Result<(), RunError> {
    if let Some(u) = mplab_sim::unsupported(net).first() {
        return Err(RunError::Usage(unsupported_error(sc, net, u)));
    }
    if let Some((i, why)) = mplab_sim::unsupported_middleboxes(net).into_iter().next() {
        return Err(RunError::Usage(sc.error_at(&format!("middleboxes[{i}].kind"), why).to_string()));
    }
    Ok(())
}

/// Creates the results directory `out` and tells the endpoints of `net`
/// that they write there (`probes.out_dir`: qlog traces, the TLS key log);
/// what an earlier run left of those is removed, the key log being
/// appended to.
fn prepare_out(out: &Path, net: &mut Network) -> Result<(), RunError> {
    std::fs::create_dir_all(out).map_err(|e| RunError::Failed(format!("{}: {e}", out.display())))?;
    let _ = std::fs::remove_dir_all(out.join("qlog"));
    let _ = std::fs::remove_file(out.join("pcap").join(mplab_backend::quic_artefacts::KEYLOG_FILE));
    net.probes.out_dir = Some(out.to_path_buf());
    Ok(())
}

/// Runs `net` on the simulator and writes the results directory `out`
/// (docs/results.md), Parquet copies of the CSVs included. `abort` is polled
/// between slices of simulated time: when it is set the run stops and
/// nothing is written (`RunError::Failed("interrupted")`).
pub fn simulate(sc: &Scenario, mut net: Network, out: &Path, show_bar: bool, abort: Option<&AtomicBool>) -> Result<(RunResults, serde_json::Value), RunError> {
    sim_preflight(sc, &net)?;
    prepare_out(out, &mut net)?;
    let pcap_dir = (!net.probes.pcap.is_empty()).then(|| out.join("pcap"));
    let wall = WallClock::now();
    let duration = Instant(net.duration_ns);
    let effective = sc.effective_toml();
    let network_json = serde_json::to_string_pretty(&net).unwrap_or_default();
    let labels = path_labels(&net);
    let mut world = World::new(net, pcap_dir).map_err(|e| RunError::Failed(format!("{}: {e}", out.display())))?;

    let bar = progress_bar(duration, !show_bar);
    // Run in slices of simulated time so the bar moves; results do not
    // depend on the slicing.
    let slices = 200u64;
    for i in 1..=slices {
        let t = Instant(duration.0 / slices * i);
        world.run_until(if i == slices { duration } else { t });
        if let Some(b) = &bar {
            b.set_position(world.now().0 / 1_000_000);
        }
        if abort.is_some_and(|a| a.load(Ordering::SeqCst)) {
            if let Some(b) = &bar {
                b.finish_and_clear();
            }
            return Err(RunError::Failed("interrupted".into()));
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let stats = world.stats.clone();
    let tcp_counters = world.tcp_counters();
    let mut results = world.finish("sim");
    label_paths(&mut results, &labels);
    let wall_s = wall.elapsed().as_secs_f64();
    // Everything that varies between identical runs goes to meta.json, so
    // summary.json and the CSVs are byte-identical for the same seed.
    let meta = serde_json::json!({
        "mplab_version": env!("CARGO_PKG_VERSION"),
        "backend": "sim",
        "seed": results.summary.seed,
        "wall_time_s": wall_s,
        "events": stats.events,
        "events_per_s": stats.events as f64 / wall_s.max(1e-9),
        "packets_forwarded": stats.packets_forwarded,
        "segments_after_end": stats.segments_after_end,
        "tcp_counters": tcp_counters,
    });
    write_results(out, &results, &effective, &sc.source_text(), &network_json, &meta).map_err(|e| RunError::Failed(format!("{}: {e}", out.display())))?;
    Ok((results, meta))
}

/// `--backend kernel`: the scenario on Linux kernel (MP)TCP in network
/// namespaces over mplab's link emulator (crates/emu). Needs root; Ctrl-C
/// tears everything down.
fn run_kernel(args: &RunArgs, sc: &Scenario, net: Network) -> Result<Summary, RunError> {
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("results").join(&net.name));
    if !args.quiet && !args.json {
        eprintln!("running {} on the {} for {:.1} s ...", net.name, if args.backend == "userspace" { "userspace stack" } else { "kernel" }, net.duration_ns as f64 / 1e9);
    }
    let (results, meta) = run_real(&args.backend, sc, net, &out)?;
    let wall_s = meta["wall_time_s"].as_f64().unwrap_or(0.0);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results.summary).unwrap_or_default());
    } else if !args.quiet {
        print!("{}", render_summary(&results.summary));
        println!("{:.2} s wall; results in {}", wall_s, out.display());
    }
    check(&results)?;
    Ok(results.summary)
}

/// Runs `net` on a real backend (`kernel`: Linux's stack; `userspace`:
/// mplab's stack on TUN) and writes the results directory `out`.
pub fn run_real(backend: &str, sc: &Scenario, net: Network, out: &Path) -> Result<(RunResults, serde_json::Value), RunError> {
    use mplab_emu::kernel::{self, KernelError, KernelOptions};
    kernel::preflight().map_err(|e| RunError::Usage(e.to_string()))?;
    let userspace = backend == "userspace";
    let errs = if userspace { mplab_emu::userspace::unsupported(sc, &net) } else { mplab_emu::kconf::unsupported(sc, &net) };
    if let Some(e) = errs.into_iter().next() {
        return Err(RunError::Usage(e));
    }
    let mut net = net;
    prepare_out(out, &mut net)?;
    let pcap_dir = (!net.probes.pcap.is_empty()).then(|| out.join("pcap"));
    let opts = KernelOptions { pcap_dir, abort: mplab_emu::signal::install(), prefix: None };
    let wall = WallClock::now();
    let run = if userspace { mplab_emu::userspace::run(&net, &opts) } else { kernel::run(&net, &opts) };
    let mut run = run.map_err(|e| match e {
        KernelError::Usage(m) => RunError::Usage(m),
        KernelError::Failed(m) => RunError::Failed(m),
        KernelError::Interrupted => RunError::Failed("interrupted: the run's namespaces were removed".into()),
    })?;
    let wall_s = wall.elapsed().as_secs_f64();
    let mut meta = run.meta.clone();
    if let Some(m) = meta.as_object_mut() {
        m.insert("mplab_version".into(), env!("CARGO_PKG_VERSION").into());
        m.insert("backend".into(), backend.into());
        m.insert("wall_time_s".into(), wall_s.into());
    }
    let network_json = serde_json::to_string_pretty(&net).unwrap_or_default();
    label_paths(&mut run.results, &path_labels(&net));
    write_results(out, &run.results, &sc.effective_toml(), &sc.source_text(), &network_json, &meta).map_err(|e| RunError::Failed(format!("{}: {e}", out.display())))?;
    Ok((run.results, meta))
}

fn progress_bar(duration: Instant, quiet: bool) -> Option<ProgressBar> {
    // Only worth a bar on a terminal, and only for runs that take a while.
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let b = ProgressBar::new(duration.0 / 1_000_000);
    b.set_style(ProgressStyle::with_template("{spinner} simulated {pos}/{len} ms [{bar:40}] {percent}% eta {eta}").ok()?.progress_chars("=> "));
    Some(b)
}

/// Each interface address's path label, `client:eth1 (wan2)`: the node,
/// the interface and its link.
pub fn path_labels(net: &Network) -> std::collections::HashMap<std::net::IpAddr, String> {
    let mut m = std::collections::HashMap::new();
    for n in &net.nodes {
        for i in &n.interfaces {
            m.insert(std::net::IpAddr::V4(i.addr), format!("{}:{} ({})", n.name, i.name, net.links[i.link].name));
        }
    }
    m
}

/// Names each subflow's path from its local address, so tables and
/// legends say which path it is.
pub fn label_paths(r: &mut RunResults, labels: &std::collections::HashMap<std::net::IpAddr, String>) {
    for sf in r.summary.flows.iter_mut().flat_map(|f| f.subflows.iter_mut()) {
        if let Ok(a) = sf.local.parse::<std::net::SocketAddr>() {
            sf.path = labels.get(&a.ip()).cloned();
        }
    }
}

fn write_results(dir: &Path, r: &RunResults, scenario_toml: &str, source_toml: &str, network_json: &str, meta: &serde_json::Value) -> std::io::Result<()> {
    r.write_dir(dir)?;
    // Parquet twins of the CSVs (same columns), for pandas / R arrow.
    for name in ["flows", "interfaces", "queues"] {
        let csv = dir.join(format!("{name}.csv"));
        if csv.exists() {
            let t = crate::table::Table::read_csv(&csv)?;
            crate::parq::write_table(&t, &dir.join(format!("{name}.parquet")))?;
        }
    }
    std::fs::write(dir.join("meta.json"), serde_json::to_string_pretty(meta).unwrap_or_default() + "\n")?;
    std::fs::write(dir.join("scenario.toml"), scenario_toml)?;
    std::fs::write(dir.join("scenario.source.toml"), source_toml)?;
    std::fs::write(dir.join("network.json"), network_json)?;
    Ok(())
}

fn mbit(bps: f64) -> String {
    format!("{:.2}", bps / 1e6)
}

/// The table printed after a run: flows (with subflows), then interfaces.
/// A flow's handover metrics, under its row.
fn render_handover(o: &mut String, h: &mplab_backend::handover::HandoverSummary) {
    let from = h.longest_stall_from_s.map(|t| format!(" from {t:.1} s")).unwrap_or_default();
    let again = h.bytes_sent_again.map(|b| format!(", {b} B sent again")).unwrap_or_default();
    let _ = writeln!(o, "  handover: longest stall {:.1} s{from}{again} (to {:.0} ms, the probe interval)", h.longest_stall_s, h.resolution_s * 1e3);
    for e in &h.events {
        let what = match (e.takes_away, e.first_byte_after_s, e.stall_after_s) {
            (true, _, Some(st)) => format!("stall {st:.1} s"),
            (false, Some(t), _) => format!("first byte on it {t:.1} s later"),
            (false, None, _) => "not used before the end".into(),
            _ => String::new(),
        };
        let _ = writeln!(o, "    {:>7.2} s {:<14} {:<16} {what}", e.at_s, e.event, e.iface);
    }
}

pub fn render_summary(s: &Summary) -> String {
    let mut o = String::new();
    let what = if s.backend == "sim" { "simulated" } else { "run" };
    let _ = writeln!(o, "scenario {} on {} (seed {}), {:.1} s {what}", s.scenario, s.backend, s.seed, s.duration_s);
    let _ = writeln!(o, "\n{:<20} {:<6} {:>12} {:>14} {:>9} {:>8} {:>9}  {:<8}  {}", "flow", "proto", "goodput Mb/s", "bytes", "retrans", "rtos", "srtt ms", "verified", "done");
    for f in &s.flows {
        // A bounded transfer's time to its last byte; "-" for one that ran
        // to the end of the run (a bulk flow, or a transfer not finished).
        let done = match (f.completed, f.completion_time_s) {
            (true, Some(t)) => format!("{t:.2} s"),
            (true, None) => "yes".to_string(),
            _ => "-".to_string(),
        };
        let srtt = f.mean_srtt_ms.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into());
        let transport = if f.fallback { format!("{}*", f.transport) } else { f.transport.clone() };
        let _ = writeln!(
            o,
            "{:<20} {:<6} {:>12} {:>14} {:>9} {:>8} {:>9}  {:<8}  {}",
            f.name,
            transport,
            mbit(f.goodput_bps),
            f.bytes_delivered,
            f.retransmitted_segments,
            f.rto_count,
            srtt,
            if f.verified { "yes" } else { "NO" },
            done
        );
        if let Some(c) = f.tunnel.as_ref().and_then(|t| t.converter.as_ref()) {
            let errors: Vec<String> = c.errors.iter().map(|(e, n)| format!("{n} {e}")).collect();
            let _ = writeln!(
                o,
                "  converter: {} connections, {} reached their server, refused: {}, {} reset (no Convert message); {} B up, {} B down, {} B of Convert messages, {} requests in the SYN",
                c.connections,
                c.converted,
                if errors.is_empty() { "none".to_string() } else { errors.join(", ") },
                c.resets,
                c.bytes_up,
                c.bytes_down,
                c.message_bytes,
                c.fast_open
            );
        } else if let Some(t) = &f.tunnel {
            for (dir, d) in [("up", &t.upstream), ("down", &t.downstream)] {
                let _ = write!(
                    o,
                    "  tunnel {dir}: {} datagrams in, {} out, {} over the {} B MTU, {} dropped at a full ingress (most waiting {}), {} B of frames",
                    d.datagrams_in, d.datagrams_out, d.oversize, t.mtu, d.queue_drops, d.max_queue, d.frame_bytes
                );
                if d.quic_datagrams > 0 {
                    let _ = write!(o, "; {} in QUIC DATAGRAM frames ({} B)", d.quic_datagrams, d.quic_datagram_bytes);
                }
                let _ = writeln!(o);
            }
        }
        if let Some(d) = &f.datagrams {
            let q = &d.stream;
            let _ = writeln!(
                o,
                "  {}: {} sent, {:.2} % lost or late ({} late), one-way delay p50 {:.1} / p99 {:.1} / max {:.1} ms, jitter {:.2} ms, longest gap {:.0} ms",
                d.app,
                q.sent,
                q.loss_ratio * 100.0,
                q.late,
                q.delay_p50_ms,
                q.delay_p99_ms,
                q.delay_max_ms,
                q.jitter_ms,
                q.longest_interruption_ms
            );
            if d.app == "voip" {
                let _ = writeln!(o, "  voip: E-model R {:.1}, MOS {:.2}", q.r_factor, q.mos);
            }
            if let (Some(p50), Some(p95), Some(p99), Some(max)) = (d.rtt_p50_ms, d.rtt_p95_ms, d.rtt_p99_ms, d.rtt_max_ms) {
                let _ = writeln!(o, "  game: round trip p50 {p50:.1} / p95 {p95:.1} / p99 {p99:.1} / max {max:.1} ms, {:.2} % of echoes lost", d.echo_loss_ratio.unwrap_or(0.0) * 100.0);
            }
            if d.malformed + d.duplicates > 0 {
                let _ = writeln!(o, "  {}: {} malformed, {} duplicate datagrams", d.app, d.malformed, d.duplicates);
            }
        }
        if let Some(h) = &f.handover {
            render_handover(&mut o, h);
        }
        if f.subflows.len() > 1 {
            for sf in &f.subflows {
                let _ = writeln!(o, "  {:<40} {:>12}  {}{}", format!("{} -> {}", sf.local, sf.remote), mbit(sf.goodput_bps), sf.path.as_deref().unwrap_or(""), if sf.backup { " backup" } else { "" });
            }
        }
    }
    if s.flows.iter().any(|f| f.fallback) {
        let _ = writeln!(o, "(proto*: the connection fell back to plain TCP, RFC 8684 3.7)");
    }
    let _ = writeln!(o, "\n{:<24} {:>12} {:>12}", "interface", "tx Mb/s", "rx Mb/s");
    for i in &s.interfaces {
        let _ = writeln!(o, "{:<24} {:>12} {:>12}", format!("{}:{}", i.node, i.iface), mbit(i.tx_bps), mbit(i.rx_bps));
    }
    for n in &s.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}
