//! `mplab sweep`: one scenario over a grid (or list) of `--set` points and
//! several seeds, in parallel, resumable, with per-run rows and statistics
//! across seeds (docs/results.md, "Sweeps").

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant as WallClock;

use indicatif::{ProgressBar, ProgressStyle};
use mplab_scenario::{Network, Scenario};
use serde::Deserialize;

use crate::grid::{self, Param, Point};
use crate::run::RunError;
use crate::table::Table;

/// What to sweep.
#[derive(Clone, Debug, Default)]
pub struct SweepSpec {
    pub scenario: PathBuf,
    /// Applied to every point (before the point's own assignments).
    pub fixed: Vec<(String, String)>,
    pub params: Vec<Param>,
    /// Explicit points (used instead of the grid when given).
    pub points: Vec<Point>,
    pub seeds: Vec<u64>,
    pub plot_x: Option<String>,
    pub plot_series: Option<String>,
    pub plot_flow: Option<String>,
    /// Where the spec came from (a sidecar file), for messages.
    pub spec_file: Option<PathBuf>,
    /// `[sweep.slurm]`: how to submit it to Slurm.
    pub slurm: Option<crate::slurm_options::SlurmOptions>,
}

impl SweepSpec {
    /// The points to run: explicit ones, else the grid, else the scenario as is.
    pub fn expand(&self) -> Vec<Point> {
        if !self.points.is_empty() {
            self.points.clone()
        } else if !self.params.is_empty() {
            grid::grid(&self.params)
        } else {
            vec![Vec::new()]
        }
    }

    /// Parameter paths, in grid order (for explicit points: first-seen order).
    pub fn param_paths(&self) -> Vec<String> {
        let mut out: Vec<String> = self.params.iter().map(|p| p.path.clone()).collect();
        for p in &self.points {
            for (k, _) in p {
                if !out.contains(k) {
                    out.push(k.clone());
                }
            }
        }
        out
    }
}

// ---- sidecar spec files ---------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    sweep: SpecTable,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecTable {
    scenario: toml::Spanned<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    seeds: Option<toml::Spanned<toml::Value>>,
    #[serde(default)]
    set: Option<toml::Table>,
    #[serde(default)]
    param: Vec<ParamTable>,
    #[serde(default)]
    points: Vec<toml::Table>,
    #[serde(default)]
    plot: Option<PlotTable>,
    #[serde(default)]
    slurm: Option<crate::slurm_options::SlurmOptions>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ParamTable {
    path: toml::Spanned<String>,
    values: toml::Spanned<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlotTable {
    x: Option<String>,
    series: Option<String>,
    flow: Option<String>,
}

/// Line and column (1-based) of a byte offset, for errors.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, col)
}

/// A TOML value as a `--set` value: strings verbatim, the rest as TOML.
fn set_value(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Is this file a sweep spec (a top-level `[sweep]` table)?
pub fn is_spec_file(text: &str) -> bool {
    text.parse::<toml::Table>().map(|t| t.contains_key("sweep")).unwrap_or(false)
}

/// Reads a sweep spec file (`*.sweep.toml`); errors name file, line, column and field.
pub fn read_spec(path: &Path, text: &str) -> Result<SweepSpec, String> {
    let file = path.display().to_string();
    let f: SpecFile = toml::from_str(text).map_err(|e| {
        let (l, c) = e.span().map(|s| line_col(text, s.start)).unwrap_or((0, 0));
        format!("{file}:{l}:{c}: {}", e.message())
    })?;
    let t = f.sweep;
    let _ = t.description;
    let at = |span: std::ops::Range<usize>, field: &str, msg: String| {
        let (l, c) = line_col(text, span.start);
        format!("{file}:{l}:{c}: {field}: {msg}")
    };
    let base = path.parent().unwrap_or(Path::new("."));
    let scenario = base.join(t.scenario.get_ref());
    if !scenario.exists() {
        return Err(at(t.scenario.span(), "sweep.scenario", format!("no such scenario file {} (paths are relative to this file)", scenario.display())));
    }
    let seeds = match &t.seeds {
        None => vec![1],
        Some(s) => {
            let r = match s.get_ref() {
                toml::Value::Integer(n) if *n > 0 => Ok((1..=*n as u64).collect()),
                toml::Value::String(v) => grid::parse_seeds(v),
                toml::Value::Array(a) => a.iter().map(|x| x.as_integer().filter(|n| *n >= 0).map(|n| n as u64).ok_or_else(|| format!("{x} is not a seed"))).collect(),
                other => Err(format!("{other} is not a seed count or list")),
            };
            r.map_err(|e| at(s.span(), "sweep.seeds", format!("{e} (e.g. seeds = 5, seeds = [1, 2, 3] or seeds = \"1..5\")")))?
        }
    };
    let mut params = Vec::new();
    for (i, p) in t.param.iter().enumerate() {
        let field = format!("sweep.param[{i}].values");
        let values = match p.values.get_ref() {
            toml::Value::String(s) => grid::parse_values(s).map_err(|e| at(p.values.span(), &field, e))?,
            toml::Value::Array(a) if !a.is_empty() => a.iter().map(set_value).collect(),
            toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_) => vec![set_value(p.values.get_ref())],
            _ => return Err(at(p.values.span(), &field, "expected a list string (\"10Mbit,50Mbit\", \"1..6\") or a non-empty array".into())),
        };
        if p.path.get_ref().trim().is_empty() {
            return Err(at(p.path.span(), &format!("sweep.param[{i}].path"), "empty path".into()));
        }
        params.push(Param { path: p.path.get_ref().clone(), values });
    }
    let points = t.points.iter().map(|tab| tab.iter().map(|(k, v)| (k.clone(), set_value(v))).collect()).collect();
    let fixed = t.set.iter().flatten().map(|(k, v)| (k.clone(), set_value(v))).collect();
    let plot = t.plot.unwrap_or(PlotTable { x: None, series: None, flow: None });
    Ok(SweepSpec { scenario, fixed, params, points, seeds, plot_x: plot.x, plot_series: plot.series, plot_flow: plot.flow, spec_file: Some(path.to_path_buf()), slurm: t.slurm })
}

/// The sweep a command line (or a Python call) describes: `file` is a
/// scenario or a spec file; `params` (PATH=VALUES) replace the spec's of
/// the same path; `points` ('PATH=VALUE;...') or a points file replace the
/// grid; `sets` (PATH=VALUE) apply to every point.
pub fn spec_from(file: &Path, params: &[String], points: &[String], points_file: Option<&Path>, seeds: Option<&str>, sets: &[String]) -> Result<SweepSpec, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut spec = if is_spec_file(&text) { read_spec(file, &text)? } else { SweepSpec { scenario: file.to_path_buf(), seeds: vec![1], ..Default::default() } };
    for s in sets {
        let Some((k, v)) = s.split_once('=') else {
            return Err(format!("--set {s}: expected path=value, like duration=10s"));
        };
        spec.fixed.push((k.trim().to_string(), v.trim().to_string()));
    }
    for p in params {
        let p = grid::parse_param(p)?;
        // A --param replaces the spec file's parameter of the same path.
        spec.params.retain(|q| q.path != p.path);
        spec.params.push(p);
    }
    let mut explicit: Vec<Point> = Vec::new();
    for p in points {
        explicit.push(grid::parse_point(p).map_err(|e| format!("--point: {e}"))?);
    }
    if let Some(f) = points_file {
        let t = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        explicit.extend(grid::parse_points_file(&t).map_err(|e| format!("{}: {e}", f.display()))?);
    }
    if !explicit.is_empty() {
        if !params.is_empty() {
            return Err("give either --param (a grid) or --point/--points (a list), not both".into());
        }
        spec.points = explicit;
        spec.params.clear();
    }
    if let Some(s) = seeds {
        spec.seeds = grid::parse_seeds(s)?;
    }
    Ok(spec)
}

/// results/<name>-sweep for a scenario or spec file.
pub fn default_out(file: &Path) -> PathBuf {
    let stem = file.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "sweep".into());
    let stem = stem.trim_end_matches(".toml").trim_end_matches(".sweep").to_string();
    PathBuf::from("results").join(if stem.ends_with("sweep") { stem } else { format!("{stem}-sweep") })
}

// ---- running ----------------------------------------------------------------------

pub struct SweepOptions {
    pub out: PathBuf,
    pub jobs: usize,
    pub quiet: bool,
    pub verbose: bool,
    pub plots: bool,
    /// Stop after this many runs have finished (tests of resumption).
    pub max_runs: Option<usize>,
}

/// How a sweep ended.
pub struct SweepOutcome {
    pub total: usize,
    pub skipped: usize,
    pub ran: usize,
    pub failed: Vec<String>,
    pub interrupted: bool,
    /// `--max-runs` stopped it with runs left (they run next time).
    pub stopped_early: bool,
}

pub fn load_point(spec: &SweepSpec, point: &Point, seed: Option<u64>) -> Result<(Scenario, Network), String> {
    let mut sc = Scenario::from_file(&spec.scenario).map_err(|e| e.to_string())?;
    let mut sets: Vec<(String, String)> = spec.fixed.clone();
    sets.extend(grid::point_sets(point));
    if let Some(s) = seed {
        sets.push(("seed".into(), s.to_string()));
    }
    if !sets.is_empty() {
        sc.set_all(sets.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(|e| e.to_string())?;
    }
    let mut net = mplab_backend::plugins::resolve(&sc).map_err(|e| e.to_string())?;
    mplab_backend::workload::apply_start_jitter(&mut net);
    // Hundreds of runs of whole packets fill a disk: a sweep's pcaps keep
    // the headers unless the scenario or the sweep set a snap length.
    if net.probes.snaplen == 0 {
        net.probes.snaplen = SWEEP_SNAPLEN;
    }
    Ok((sc, net))
}

/// A sweep's default snap length: IPv4 (20) and TCP with a full 40 bytes
/// of options (60), with room for an SCTP chunk header or a tunnel's.
pub const SWEEP_SNAPLEN: u32 = 128;

/// What one run of `net` writes to its pcaps, about: each captured
/// interface at its link's faster direction's rate for the whole run, in
/// full-sized packets of `snaplen` bytes plus the 16-byte record header.
pub fn pcap_bytes_per_run(net: &Network) -> u64 {
    let secs = net.duration_ns as f64 / 1e9;
    let per_packet = net.probes.snaplen.clamp(1, 1500) as f64 + 16.0;
    let bytes: f64 = net
        .probes
        .pcap
        .iter()
        .filter_map(|p| net.links.iter().find(|l| (l.a.node == p.node && l.a.iface == p.iface) || (l.b.node == p.node && l.b.iface == p.iface)))
        // Both directions are captured: each at most its rate.
        .map(|l| (l.ab.rate_bps + l.ba.rate_bps) as f64 / 8.0 * secs / 1500.0 * per_packet)
        .sum();
    bytes as u64
}

pub fn run_dir(out: &Path, point: &Point, seed: u64) -> PathBuf {
    out.join("runs").join(grid::point_id(point)).join(format!("seed-{seed}"))
}

/// A sweep directory made ready: every point checked, `sweep.json` and
/// the scenario written, and the runs still missing.
pub struct Prepared {
    pub points: Vec<Point>,
    /// (point index, seed) of each run without results.
    pub missing: Vec<(usize, u64)>,
    pub skipped: usize,
    pub total: usize,
    pub base_hash: String,
}

/// Checks every point (a typo or an algorithm the simulator lacks is a
/// usage error, exit 2, not 40 failed runs), refuses a directory holding
/// another sweep, writes sweep.json and lists the runs left to do.
pub fn prepare(spec: &SweepSpec, out: &Path) -> Result<Prepared, RunError> {
    let points = spec.expand();
    for p in &points {
        let (sc, net) = load_point(spec, p, None).map_err(|e| RunError::Usage(if p.is_empty() { e } else { format!("point {}: {e}", grid::point_label(p)) }))?;
        crate::run::sim_preflight(&sc, &net).map_err(|e| match e {
            RunError::Usage(m) => RunError::Usage(if p.is_empty() { m } else { format!("point {}: {m}", grid::point_label(p)) }),
            other => other,
        })?;
    }
    let io = |e: std::io::Error| RunError::Failed(format!("{}: {e}", out.display()));
    // Finished runs are reused only for the same scenario and fixed overrides.
    let base = base_hash(spec).map_err(|e| RunError::Usage(format!("{}: {e}", spec.scenario.display())))?;
    if let Ok(old) = std::fs::read_to_string(out.join("sweep.json")) {
        let old: serde_json::Value = serde_json::from_str(&old).unwrap_or_default();
        if old["base_hash"].as_str().is_some_and(|h| h != base) {
            return Err(RunError::Usage(format!("{} holds a sweep of another scenario text or other --set overrides (its runs would not match); give another --out or delete it", out.display())));
        }
    }
    std::fs::create_dir_all(out.join("runs")).map_err(io)?;
    std::fs::copy(&spec.scenario, out.join("scenario.toml")).map_err(io)?;
    write_sweep_json(spec, &points, out, &base).map_err(io)?;
    let mut missing = Vec::new();
    let mut skipped = 0;
    for (i, p) in points.iter().enumerate() {
        for &s in &spec.seeds {
            if run_dir(out, p, s).join("summary.json").exists() {
                skipped += 1;
            } else {
                missing.push((i, s));
            }
        }
    }
    let total = points.len() * spec.seeds.len();
    Ok(Prepared { points, missing, skipped, total, base_hash: base })
}

/// How one run of a sweep ended.
pub enum RunOutcome {
    /// Its results are in place; the total goodput (bit/s).
    Done(f64),
    /// Its results are in place but something in them failed (a flow's
    /// data did not verify, a run error), or it produced none.
    Failed(String),
    /// Stopped by Ctrl-C: nothing kept.
    Interrupted,
}

/// Runs one point and seed into a `.partial` directory and renames it into
/// place when whole: a run's results are complete or absent, whatever
/// kills the process meanwhile (the next attempt removes the partial one).
pub fn run_one(spec: &SweepSpec, out: &Path, point: &Point, seed: u64, abort: Option<&std::sync::atomic::AtomicBool>) -> RunOutcome {
    let dir = run_dir(out, point, seed);
    let tmp = dir.with_file_name(format!("seed-{seed}.partial"));
    let _ = std::fs::remove_dir_all(&tmp);
    let r = load_point(spec, point, Some(seed)).map_err(RunError::Usage).and_then(|(sc, net)| crate::run::simulate(&sc, net, &tmp, false, abort));
    match r {
        Ok((res, _)) => {
            let _ = std::fs::remove_dir_all(&dir);
            if let Err(e) = std::fs::rename(&tmp, &dir) {
                return RunOutcome::Failed(e.to_string());
            }
            let bad: Vec<&str> = res.summary.flows.iter().filter(|f| !f.verified).map(|f| f.name.as_str()).collect();
            if !bad.is_empty() {
                RunOutcome::Failed(format!("flows whose data did not verify: {}", bad.join(", ")))
            } else if !res.errors.is_empty() {
                RunOutcome::Failed(res.errors.join("; "))
            } else {
                RunOutcome::Done(res.summary.flows.iter().map(|f| f.goodput_bps).sum())
            }
        }
        Err(RunError::Failed(m)) if m == "interrupted" => {
            let _ = std::fs::remove_dir_all(&tmp);
            RunOutcome::Interrupted
        }
        Err(RunError::Failed(m)) | Err(RunError::Usage(m)) => {
            let _ = std::fs::remove_dir_all(&tmp);
            RunOutcome::Failed(m)
        }
    }
}

/// A run's label in messages.
pub fn run_label(point: &Point, seed: u64) -> String {
    format!("{}seed {seed}", if point.is_empty() { String::new() } else { format!("{}; ", grid::point_label(point)) })
}

/// Aggregates what is on disk, writes meta.json (`meta` plus the run
/// counts) and the plots; returns the number of runs present.
pub fn finish(out: &Path, plots: bool, mut meta: serde_json::Value) -> std::io::Result<usize> {
    let n = aggregate(out)?;
    meta["mplab_version"] = env!("CARGO_PKG_VERSION").into();
    meta["backend"] = "sim".into();
    meta["runs_present"] = n.into();
    std::fs::write(out.join("meta.json"), serde_json::to_string_pretty(&meta).unwrap_or_default() + "\n")?;
    if plots && n > 0 {
        crate::figures::write_all(out)?;
    }
    Ok(n)
}

/// Runs the sweep on this machine; `Err` is a usage error (exit 2) found
/// before any run.
pub fn sweep(spec: &SweepSpec, opt: &SweepOptions) -> Result<SweepOutcome, RunError> {
    let prep = prepare(spec, &opt.out)?;
    let Prepared { points, missing: jobs, skipped, total, .. } = prep;
    let io = |e: std::io::Error| RunError::Failed(format!("{}: {e}", opt.out.display()));
    if !opt.quiet {
        eprintln!(
            "sweep: {} point{} x {} seed{} = {total} runs; {skipped} already done, {} to run on {} thread{}",
            points.len(),
            if points.len() == 1 { "" } else { "s" },
            spec.seeds.len(),
            if spec.seeds.len() == 1 { "" } else { "s" },
            jobs.len(),
            opt.jobs.min(jobs.len()).max(1),
            if opt.jobs.min(jobs.len()) == 1 { "" } else { "s" }
        );
        // Say what the runs will write before they write it.
        if let (Some(p), false) = (points.first(), jobs.is_empty()) {
            if let Ok((_, net)) = load_point(spec, p, None) {
                let per = pcap_bytes_per_run(&net);
                if per > 0 {
                    let snap = if net.probes.snaplen >= 1500 { "whole packets".to_string() } else { format!("{} B of each packet", net.probes.snaplen) };
                    eprintln!(
                        "sweep: pcaps of {} interface{} per run ({snap}): up to {:.1} MB a run, {:.1} MB for the {} runs to do (probes.snaplen sets it)",
                        net.probes.pcap.len(),
                        if net.probes.pcap.len() == 1 { "" } else { "s" },
                        per as f64 / 1e6,
                        per as f64 * jobs.len() as f64 / 1e6,
                        jobs.len()
                    );
                }
            }
        }
    }
    let abort = mplab_emu::signal::install();
    let bar = (!opt.quiet && std::io::stderr().is_terminal() && !jobs.is_empty()).then(|| {
        let b = ProgressBar::new(jobs.len() as u64);
        if let Ok(st) = ProgressStyle::with_template("{spinner} {pos}/{len} runs [{bar:40}] {percent}% elapsed {elapsed_precise} eta {eta_precise} {msg}") {
            b.set_style(st.progress_chars("=> "));
        }
        b.enable_steady_tick(std::time::Duration::from_millis(200));
        b
    });
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failed: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let wall = WallClock::now();
    let threads = opt.jobs.max(1).min(jobs.len().max(1));
    let stop_after = opt.max_runs;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                if abort.load(Ordering::SeqCst) || stop_after.is_some_and(|m| done.load(Ordering::SeqCst) >= m) {
                    break;
                }
                let k = next.fetch_add(1, Ordering::SeqCst);
                let Some(&(pi, seed)) = jobs.get(k) else { break };
                let p = &points[pi];
                let label = run_label(p, seed);
                match run_one(spec, &opt.out, p, seed, Some(&abort)) {
                    RunOutcome::Done(g) => {
                        done.fetch_add(1, Ordering::SeqCst);
                        if opt.verbose {
                            let msg = format!("done {label}: total goodput {:.2} Mbit/s", g / 1e6);
                            match &bar {
                                Some(b) => b.println(msg),
                                None => eprintln!("{msg}"),
                            }
                        }
                    }
                    RunOutcome::Failed(m) => failed.lock().unwrap().push(format!("{label}: {m}")),
                    RunOutcome::Interrupted => {}
                }
                if let Some(b) = &bar {
                    b.inc(1);
                }
            });
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let ran = done.load(Ordering::SeqCst);
    let interrupted = abort.load(Ordering::SeqCst);
    let stopped_early = !interrupted && ran + failed.lock().unwrap().len() < jobs.len();
    let meta = serde_json::json!({
        "executor": "local",
        "wall_time_s": wall.elapsed().as_secs_f64(),
        "threads": threads,
        "runs_total": total,
        "runs_skipped": skipped,
        "runs_this_time": ran,
        "runs_failed": failed.lock().unwrap().len(),
        "interrupted": interrupted,
    });
    finish(&opt.out, opt.plots, meta).map_err(io)?;
    if !opt.quiet {
        if let Some(note) = seeds_without_effect(&opt.out) {
            eprintln!("note: {note}");
        }
    }
    let failed = failed.into_inner().unwrap();
    Ok(SweepOutcome { total, skipped, ran, failed, interrupted, stopped_early })
}

/// Identifies what every run of a sweep shares: the scenario text and the fixed overrides.
pub fn base_hash(spec: &SweepSpec) -> std::io::Result<String> {
    let mut text = std::fs::read_to_string(&spec.scenario)?;
    for (k, v) in &spec.fixed {
        text.push_str(&format!("\n--set {k}={v}"));
    }
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    Ok(format!("{h:016x}"))
}

fn write_sweep_json(spec: &SweepSpec, points: &[Point], out: &Path, base: &str) -> std::io::Result<()> {
    let v = serde_json::json!({
        "base_hash": base,
        "scenario": spec.scenario.display().to_string(),
        "spec_file": spec.spec_file.as_ref().map(|p| p.display().to_string()),
        "params": spec.param_paths(),
        "fixed": spec.fixed.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
        "seeds": spec.seeds,
        "plot": { "x": spec.plot_x, "series": spec.plot_series, "flow": spec.plot_flow },
        "points": points.iter().map(|p| serde_json::json!({
            "id": grid::point_id(p),
            "set": p.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
        })).collect::<Vec<_>>(),
    });
    std::fs::write(out.join("sweep.json"), serde_json::to_string_pretty(&v).unwrap_or_default() + "\n")
}

/// Per-flow metrics of a run's summary.json, plus a flow `all` (sums; srtt averaged).
/// Those after the first seven are a datagram flow's (`voip`, `game`),
/// from its summary's `datagrams`.
const METRICS: [&str; 14] = [
    "goodput_bps",
    "bytes_delivered",
    "retransmitted_segments",
    "rto_count",
    "mean_srtt_ms",
    "completion_time_s",
    "mean_latency_ms",
    "datagram_loss_ratio",
    "datagram_delay_p50_ms",
    "datagram_delay_p99_ms",
    "datagram_jitter_ms",
    "datagram_longest_interruption_ms",
    "datagram_mos",
    "datagram_rtt_p99_ms",
];

/// A flow's metric in its summary.json row.
fn metric<'a>(fl: &'a serde_json::Value, m: &str) -> &'a serde_json::Value {
    match m.strip_prefix("datagram_") {
        Some(k) => &fl["datagrams"][k],
        None => &fl[m],
    }
}

fn f(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::Bool(b) => b.to_string(),
        serde_json::Value::String(s) => s.clone(),
        _ => String::new(),
    }
}

/// When several seeds gave every point the very same goodput, the
/// scenario has nothing random in it (no loss, no jitter, no random start):
/// its standard deviations and confidence intervals of 0 say so, and this
/// says why and what to do.
pub fn seeds_without_effect(out: &Path) -> Option<String> {
    let agg = Table::read_csv(&out.join("aggregate.csv")).ok()?;
    let all: Vec<usize> = (0..agg.rows.len()).filter(|&r| agg.str(r, "flow") == "all" && agg.num(r, "n").is_some_and(|n| n >= 2.0)).collect();
    (!all.is_empty() && all.iter().all(|&r| agg.num(r, "goodput_bps_stdev") == Some(0.0))).then(|| {
        "every seed gave each point the same results (stdev and CI 0): nothing in this scenario draws on the seed (no loss, jitter or random start). \
         Give the flows a `start_jitter` (e.g. \"100ms\") to start them at random times, or run one seed"
            .to_string()
    })
}

/// Rebuilds runs.csv / aggregate.csv (and their Parquet twins) from every
/// finished run on disk; returns the number of runs found.
pub fn aggregate(out: &Path) -> std::io::Result<usize> {
    let spec: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json"))?).map_err(std::io::Error::other)?;
    let params: Vec<String> = spec["params"].as_array().into_iter().flatten().filter_map(|p| p.as_str().map(String::from)).collect();
    let mut headers: Vec<String> = vec!["point".into()];
    headers.extend(params.iter().cloned());
    for h in ["seed", "flow", "transport", "verified", "fallback", "subflows"] {
        headers.push(h.into());
    }
    headers.extend(METRICS.iter().map(|s| s.to_string()));
    // What the run cost (the same on every row of a run).
    headers.push("wall_time_s".into());
    let mut runs = Table { headers, rows: Vec::new() };
    let mut n = 0;
    for pt in spec["points"].as_array().into_iter().flatten() {
        let id = pt["id"].as_str().unwrap_or_default();
        let mut seeds: Vec<u64> = spec["seeds"].as_array().into_iter().flatten().filter_map(|s| s.as_u64()).collect();
        seeds.sort();
        for seed in seeds {
            let p = out.join("runs").join(id).join(format!("seed-{seed}")).join("summary.json");
            let Ok(text) = std::fs::read_to_string(&p) else { continue };
            let Ok(s) = serde_json::from_str::<serde_json::Value>(&text) else { continue };
            n += 1;
            let meta: serde_json::Value = std::fs::read_to_string(p.with_file_name("meta.json")).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
            let wall = f(&meta["wall_time_s"]);
            let prefix = |row: &mut Vec<String>| {
                row.push(id.to_string());
                for k in &params {
                    row.push(f(&pt["set"][k]));
                }
                row.push(seed.to_string());
            };
            let flows = s["flows"].as_array().cloned().unwrap_or_default();
            for fl in &flows {
                let mut row = Vec::new();
                prefix(&mut row);
                row.extend([f(&fl["name"]), f(&fl["transport"]), f(&fl["verified"]), f(&fl["fallback"]), fl["subflows"].as_array().map(|a| a.len()).unwrap_or(0).to_string()]);
                row.extend(METRICS.iter().map(|m| f(metric(fl, m))));
                row.push(wall.clone());
                runs.push(row);
            }
            let mut row = Vec::new();
            prefix(&mut row);
            let sum = |m: &str| flows.iter().filter_map(|x| x[m].as_f64()).sum::<f64>();
            let srtts: Vec<f64> = flows.iter().filter_map(|x| x["mean_srtt_ms"].as_f64()).collect();
            row.extend([
                "all".to_string(),
                String::new(),
                flows.iter().all(|x| x["verified"] == true).to_string(),
                flows.iter().any(|x| x["fallback"] == true).to_string(),
                flows.iter().map(|x| x["subflows"].as_array().map(|a| a.len()).unwrap_or(0)).sum::<usize>().to_string(),
            ]);
            row.push(format!("{}", sum("goodput_bps")));
            row.push(format!("{}", sum("bytes_delivered") as u64));
            row.push(format!("{}", sum("retransmitted_segments") as u64));
            row.push(format!("{}", sum("rto_count") as u64));
            row.push(if srtts.is_empty() { String::new() } else { format!("{}", srtts.iter().sum::<f64>() / srtts.len() as f64) });
            let ct: Vec<f64> = flows.iter().filter_map(|x| x["completion_time_s"].as_f64()).collect();
            row.push(if ct.len() == flows.len() && !ct.is_empty() { format!("{}", ct.iter().cloned().fold(0.0, f64::max)) } else { String::new() });
            row.push(String::new());
            // Datagram figures do not add up across flows.
            row.extend(METRICS[7..].iter().map(|_| String::new()));
            row.push(wall);
            runs.push(row);
        }
    }
    runs.write_csv(&out.join("runs.csv"))?;
    crate::parq::write_table(&runs, &out.join("runs.parquet"))?;

    // Statistics across seeds, per point and flow.
    let mut headers: Vec<String> = vec!["point".into()];
    headers.extend(params.iter().cloned());
    headers.push("flow".into());
    headers.push("n".into());
    for m in METRICS {
        for s in ["mean", "stdev", "ci95"] {
            headers.push(format!("{m}_{s}"));
        }
    }
    let mut agg = Table { headers, rows: Vec::new() };
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in 0..runs.rows.len() {
        let k = (runs.str(r, "point").to_string(), runs.str(r, "flow").to_string());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (pid, flow) in keys {
        let rows: Vec<usize> = (0..runs.rows.len()).filter(|&r| runs.str(r, "point") == pid && runs.str(r, "flow") == flow).collect();
        let mut row = vec![pid.clone()];
        for k in &params {
            row.push(runs.str(rows[0], k).to_string());
        }
        row.push(flow.clone());
        row.push(rows.len().to_string());
        for m in METRICS {
            let xs: Vec<f64> = rows.iter().filter_map(|&r| runs.num(r, m)).collect();
            match grid::stats(&xs) {
                Some(s) => row.extend([s.mean, s.stdev, s.ci95].iter().map(|v| format!("{v}"))),
                None => row.extend([String::new(), String::new(), String::new()]),
            }
        }
        agg.push(row);
    }
    agg.write_csv(&out.join("aggregate.csv"))?;
    crate::parq::write_table(&agg, &out.join("aggregate.parquet"))?;
    Ok(n)
}
