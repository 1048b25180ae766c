//! `mplab validate`: a suite of cases, each run on the simulator with the
//! `linux` stack profile and on the kernel backend (several runs each), one
//! table of every metric with each backend's mean and spread, the
//! difference, the tolerance and a verdict. The simulator's `mplab` profile
//! and the userspace backend (mplab's stack on real packets) are shown
//! beside them: where mplab's own stack differs from Linux, and by how
//! much. docs/validation.md has the bundled suites' tables.

pub mod heldout;
pub mod metric;
pub mod random;
pub mod suite;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mplab_scenario::Scenario;
use serde::Serialize;

use crate::run::{self, RunError};
use suite::{Case, Suite};

/// A column of the table: a backend, with the stack profile the simulator
/// runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// The simulator with `profile = "linux"`: what is validated.
    SimLinux,
    /// The simulator with mplab's own profile.
    SimMplab,
    /// Linux's stack (the reference).
    Kernel,
    /// mplab's stack on real packets.
    Userspace,
}

impl Column {
    pub fn name(self) -> &'static str {
        match self {
            Column::SimLinux => "sim linux",
            Column::SimMplab => "sim mplab",
            Column::Kernel => "kernel",
            Column::Userspace => "userspace",
        }
    }

    fn dir(self) -> &'static str {
        match self {
            Column::SimLinux => "sim-linux",
            Column::SimMplab => "sim-mplab",
            Column::Kernel => "kernel",
            Column::Userspace => "userspace",
        }
    }
}

/// The columns `--backends` asks for (`sim` is both profiles).
pub fn columns(backends: &str) -> Result<Vec<Column>, String> {
    let mut cols = Vec::new();
    for b in backends.split(',').map(str::trim).filter(|b| !b.is_empty()) {
        match b {
            "sim" => cols.extend([Column::SimLinux, Column::SimMplab]),
            "kernel" => cols.push(Column::Kernel),
            "userspace" => cols.push(Column::Userspace),
            other => return Err(format!("unknown backend {other:?} in --backends (sim, kernel, userspace)")),
        }
    }
    if cols.is_empty() {
        return Err("--backends names no backend (sim, kernel, userspace)".into());
    }
    Ok(cols)
}

pub struct Options {
    pub columns: Vec<Column>,
    /// Runs per backend; None: the suite's.
    pub runs: Option<u32>,
    /// Only these cases (all when empty).
    pub cases: Vec<String>,
    pub out: PathBuf,
    pub quiet: bool,
}

/// One backend's values of one metric.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub column: &'static str,
    /// Per run; None where the run did not reach the metric (a subflow
    /// that never recovered).
    pub values: Vec<Option<f64>>,
    pub mean: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Why the cell has no values (the backend could not run the case).
    pub missing: Option<String>,
}

impl Cell {
    fn new(column: Column, values: Vec<Option<f64>>, missing: Option<String>) -> Cell {
        let got: Vec<f64> = values.iter().flatten().copied().collect();
        // A run that never reached the metric makes the mean meaningless.
        let complete = !got.is_empty() && got.len() == values.len();
        let mean = complete.then(|| got.iter().sum::<f64>() / got.len() as f64);
        let min = got.iter().copied().reduce(f64::min);
        let max = got.iter().copied().reduce(f64::max);
        Cell { column: column.name(), values, mean, min, max, missing }
    }

    fn render(&self) -> String {
        if let Some(m) = &self.missing {
            return format!("missing ({})", short(m));
        }
        let never = self.values.iter().filter(|v| v.is_none()).count();
        match (self.mean, self.min, self.max) {
            (Some(m), Some(a), Some(b)) if self.values.len() > 1 => format!("{} [{}-{}]", num(m), num(a), num(b)),
            (Some(m), _, _) => num(m),
            _ if never > 0 => format!("not reached in {never}/{} runs", self.values.len()),
            _ => "-".into(),
        }
    }
}

/// One metric of one case across the columns, with the verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub case: String,
    pub description: String,
    pub metric: String,
    pub unit: &'static str,
    pub cells: Vec<Cell>,
    /// sim linux minus kernel.
    pub diff: Option<f64>,
    /// The allowed difference: the stated tolerance or the kernel's own
    /// spread over at least 3 runs, whichever is wider.
    pub tolerance: Option<f64>,
    pub tolerance_from: String,
    /// `pass`, `FAIL`, or `missing: why`.
    pub verdict: String,
}

fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn short(s: &str) -> String {
    let s = s.lines().next().unwrap_or_default();
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(57).collect::<String>())
    } else {
        s.to_string()
    }
}

/// Runs one case on one column: its results per run, or why it cannot run.
fn run_case(case: &Case, col: Column, runs: u32, out: &Path, quiet: bool) -> Result<Vec<mplab_sim::RunResults>, String> {
    let mut results = Vec::new();
    for run in 1..=runs {
        let mut sc = Scenario::from_file(&case.scenario).map_err(|e| e.to_string())?;
        let mut sets: Vec<(String, String)> = case.sets.clone();
        sets.push(("seed".into(), run.to_string()));
        match col {
            Column::SimLinux => sets.push(("transport.mptcp.profile".into(), "linux".into())),
            Column::SimMplab => sets.push(("transport.mptcp.profile".into(), "mplab".into())),
            Column::Kernel | Column::Userspace => {}
        }
        sc.set_all(sets.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(|e| e.to_string())?;
        let mut net = mplab_backend::plugins::resolve(&sc).map_err(|e| e.to_string())?;
        if col == Column::Userspace {
            receivers_on_the_kernel(&mut net);
        }
        let dir = out.join(&case.name).join(format!("{}-{run}", col.dir()));
        if !quiet {
            eprintln!("validate: {} on {} (run {run}/{runs}) ...", case.name, col.name());
        }
        let r = match col {
            Column::SimLinux | Column::SimMplab => run::simulate(&sc, net, &dir, false, None),
            Column::Kernel => run::run_real("kernel", &sc, net, &dir),
            Column::Userspace => run::run_real("userspace", &sc, net, &dir),
        };
        let r = r.map_err(|e| match e {
            RunError::Usage(m) | RunError::Failed(m) => m,
        })?;
        run::check(&r.0).map_err(|e| match e {
            RunError::Usage(m) | RunError::Failed(m) => format!("run {run}: {m}"),
        })?;
        results.push(r.0);
    }
    Ok(results)
}

/// The userspace column compares mplab's stack with Linux's where it
/// sends: every host that only receives keeps the kernel's stack (an
/// explicit `stack` in the scenario wins), so mplab's sender talks to a
/// Linux receiver, as beside a kernel-to-kernel run.
fn receivers_on_the_kernel(net: &mut mplab_scenario::network::Network) {
    use mplab_emu::kconf::end_sends;
    let mut sends = vec![false; net.nodes.len()];
    for f in &net.flows {
        sends[f.from] |= end_sends(&f.app, true);
        sends[f.to] |= end_sends(&f.app, false);
    }
    let ends: Vec<usize> = net.flows.iter().flat_map(|f| [f.from, f.to]).collect();
    for n in ends {
        if !sends[n] && net.nodes[n].stack.is_none() {
            net.nodes[n].stack = Some("kernel".into());
        }
    }
}

/// Runs the suite; the rows of the table.
pub fn validate(suite: &Suite, opt: &Options) -> Result<Vec<Row>, String> {
    for c in &opt.cases {
        if !suite.cases.iter().any(|k| &k.name == c) {
            let names: Vec<&str> = suite.cases.iter().map(|k| k.name.as_str()).collect();
            return Err(format!("{}: no case {c:?} (cases: {})", suite.file.display(), names.join(", ")));
        }
    }
    let runs = opt.runs.unwrap_or(suite.runs).max(1);
    // A backend that cannot run at all (no root) is missing everywhere,
    // said once.
    let mut unavailable: Vec<(Column, String)> = Vec::new();
    for &c in &opt.columns {
        if matches!(c, Column::Kernel | Column::Userspace) {
            if let Err(e) = mplab_emu::kernel::preflight() {
                unavailable.push((c, e.to_string()));
            }
        }
    }
    let mut rows = Vec::new();
    for case in suite.cases.iter().filter(|c| opt.cases.is_empty() || opt.cases.contains(&c.name)) {
        let mut per_col: Vec<(Column, Result<Vec<mplab_sim::RunResults>, String>)> = Vec::new();
        for &col in &opt.columns {
            let r = match unavailable.iter().find(|(c, _)| *c == col) {
                Some((_, why)) => Err(why.clone()),
                // `--runs` sets every case's count; else a case's own.
                None => run_case(case, col, opt.runs.or(case.runs).unwrap_or(runs).max(1), &opt.out, opt.quiet),
            };
            per_col.push((col, r));
        }
        for m in &case.metrics {
            let mut cells = Vec::new();
            for (col, r) in &per_col {
                let cell = match r {
                    Err(why) => Cell::new(*col, Vec::new(), Some(why.clone())),
                    Ok(results) => {
                        let vals: Result<Vec<Option<f64>>, String> = results.iter().map(|r| metric::value(m, r)).collect();
                        match vals {
                            Ok(v) => Cell::new(*col, v, None),
                            Err(e) => Cell::new(*col, Vec::new(), Some(e)),
                        }
                    }
                };
                cells.push(cell);
            }
            rows.push(verdict(case, m, cells));
        }
    }
    Ok(rows)
}

/// Compares the simulator's `linux` profile with the kernel.
fn verdict(case: &Case, m: &suite::Metric, cells: Vec<Cell>) -> Row {
    let get = |c: Column| cells.iter().find(|x| x.column == c.name());
    let (sim, kernel) = (get(Column::SimLinux), get(Column::Kernel));
    let mut row = Row { case: case.name.clone(), description: case.description.clone(), metric: m.label(), unit: m.unit(), cells: cells.clone(), diff: None, tolerance: None, tolerance_from: String::new(), verdict: String::new() };
    let (Some(sim), Some(kernel)) = (sim, kernel) else {
        row.verdict = "no reference (needs --backends sim,kernel)".into();
        return row;
    };
    let why_missing = |c: &Cell| c.missing.clone().unwrap_or_else(|| format!("{} did not reach the metric in every run", c.column));
    let (Some(s), Some(k)) = (sim.mean, kernel.mean) else {
        row.verdict = format!("missing: {}", if sim.mean.is_none() { why_missing(sim) } else { why_missing(kernel) });
        return row;
    };
    let stated = m.tolerance().allowed(k);
    let spread = match (kernel.min, kernel.max) {
        (Some(a), Some(b)) if kernel.values.len() >= 3 => b - a,
        _ => 0.0,
    };
    let (tol, from) = if spread > stated { (spread, "kernel spread".to_string()) } else { (stated, m.tolerance().describe()) };
    row.diff = Some(s - k);
    row.tolerance = Some(tol);
    row.tolerance_from = from;
    row.verdict = if (s - k).abs() <= tol + 1e-9 { "pass".into() } else { "FAIL".into() };
    row
}

/// The table, aligned.
pub fn render(rows: &[Row]) -> String {
    let Some(first) = rows.first() else { return String::new() };
    let mut head: Vec<String> = vec!["case".into(), "metric".into()];
    head.extend(first.cells.iter().map(|c| c.column.to_string()));
    head.extend(["diff".into(), "tolerance".into(), "verdict".into()]);
    let mut table = vec![head];
    for r in rows {
        let mut line = vec![r.case.clone(), if r.unit.is_empty() { r.metric.clone() } else { format!("{} ({})", r.metric, r.unit) }];
        line.extend(r.cells.iter().map(Cell::render));
        line.push(r.diff.map(|d| format!("{d:+.2}")).unwrap_or_default());
        line.push(r.tolerance.map(|t| format!("{} ({})", num(t), r.tolerance_from)).unwrap_or_default());
        line.push(r.verdict.clone());
        table.push(line);
    }
    let widths: Vec<usize> = (0..table[0].len()).map(|i| table.iter().map(|l| l[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for l in &table {
        let cells: Vec<String> = l.iter().zip(&widths).map(|(c, w)| format!("{c:w$}")).collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}

/// validate.csv (one line per case, metric and backend) and validate.json.
pub fn write(rows: &[Row], suite: &Suite, out: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(out)?;
    let mut csv = String::from("case,metric,unit,backend,runs,mean,min,max,missing,diff,tolerance,tolerance_from,verdict\n");
    let f = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
    let q = |s: &str| if s.contains([',', '"']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() };
    for r in rows {
        for c in &r.cells {
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{},{},{},{},{},{},{}",
                q(&r.case),
                q(&r.metric),
                r.unit,
                c.column,
                c.values.len(),
                f(c.mean),
                f(c.min),
                f(c.max),
                q(c.missing.as_deref().unwrap_or("")),
                f(r.diff),
                f(r.tolerance),
                q(&r.tolerance_from),
                q(&r.verdict)
            );
        }
    }
    std::fs::write(out.join("validate.csv"), csv)?;
    let json = serde_json::json!({ "suite": suite.name, "file": suite.file.display().to_string(), "rows": rows });
    std::fs::write(out.join("validate.json"), serde_json::to_string_pretty(&json).unwrap_or_default())
}
