//! Validation suite files: the cases `mplab validate` runs, each a scenario
//! with overrides and the metrics compared across backends, each metric with
//! its tolerance. Errors name the file, line, column and field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mplab_scenario::units::{Duration, Rate};
use serde::Deserialize;

use crate::sweep::line_col;

/// A parsed suite.
#[derive(Debug, Clone)]
pub struct Suite {
    pub name: String,
    pub file: PathBuf,
    /// Runs per backend (kernel runs; simulator seeds 1..=runs).
    pub runs: u32,
    pub cases: Vec<Case>,
}

#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub description: String,
    pub scenario: PathBuf,
    /// `--set` overrides, in file order.
    pub sets: Vec<(String, String)>,
    pub metrics: Vec<Metric>,
    /// Runs per backend for this case, over the suite's (`runs` in the
    /// case): a metric that reads the phase of a sawtooth at one instant
    /// needs more kernel runs before their spread says how far it varies.
    pub runs: Option<u32>,
    /// Whether the stack profile may be tuned while looking at this case.
    pub role: Role,
}

/// A case's part in keeping the model honest: the `linux` profile may be
/// changed while looking at the fixed suite and the tuning cases; held-out
/// cases are only run afterwards, and their error is what is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Role {
    #[default]
    Tuning,
    HeldOut,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Tuning => "tuning",
            Role::HeldOut => "held-out",
        }
    }
}

/// Which subflows a recovery metric watches.
#[derive(Debug, Clone, PartialEq)]
pub enum Subflows {
    /// The subflow with this index in the results.
    Index(u32),
    /// Every subflow leaving over this link (its `path` label names it),
    /// their goodput summed: how subflows are numbered differs between
    /// stacks, the link they take does not.
    Link(String),
}

/// What is measured on every run of a case.
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    /// Mean goodput (Mbit/s) of `flow` (all flows summed if None) over the
    /// samples in (from, to], or the whole run.
    Goodput { flow: Option<String>, window: Option<(f64, f64)>, tolerance: Tolerance },
    /// Seconds from `after` until the subflows `on` of `flow` carry more
    /// than `threshold` Mbit/s again (a restored path back in use).
    Recovery { flow: Option<String>, on: Subflows, after: f64, threshold_mbps: f64, tolerance: Tolerance },
    /// Completion time (s) of a bounded transfer.
    Completion { flow: Option<String>, tolerance: Tolerance },
    /// 1 if the connection fell back to TCP, else 0; must be equal.
    Fallback { flow: Option<String> },
    /// How many of the client's links carry the flow (each with at least
    /// a 5 % share of its bytes): which subflows the path manager opened;
    /// must be equal.
    LinksUsed { flow: Option<String> },
}

impl Metric {
    /// Its name in tables: `goodput 5-20s`, `recovery sf1 after 40s`.
    pub fn label(&self) -> String {
        let flow = |f: &Option<String>| f.as_ref().map(|f| format!(" {f}")).unwrap_or_default();
        match self {
            Metric::Goodput { flow: f, window, .. } => match window {
                Some((a, b)) => format!("goodput{} {a}-{b}s", flow(f)),
                None => format!("goodput{}", flow(f)),
            },
            Metric::Recovery { flow: f, on: Subflows::Index(i), after, .. } => format!("recovery{} sf{i} after {after}s", flow(f)),
            Metric::Recovery { flow: f, on: Subflows::Link(l), after, .. } => format!("recovery{} {l} after {after}s", flow(f)),
            Metric::Completion { flow: f, .. } => format!("completion{}", flow(f)),
            Metric::Fallback { flow: f } => format!("fallback{}", flow(f)),
            Metric::LinksUsed { flow: f } => format!("links used{}", flow(f)),
        }
    }

    pub fn unit(&self) -> &'static str {
        match self {
            Metric::Goodput { .. } => "Mbit/s",
            Metric::Recovery { .. } | Metric::Completion { .. } => "s",
            Metric::Fallback { .. } | Metric::LinksUsed { .. } => "",
        }
    }

    pub fn tolerance(&self) -> Tolerance {
        match self {
            Metric::Goodput { tolerance, .. } | Metric::Recovery { tolerance, .. } | Metric::Completion { tolerance, .. } => *tolerance,
            Metric::Fallback { .. } | Metric::LinksUsed { .. } => Tolerance::Absolute(0.0),
        }
    }
}

/// How far the simulator may be from the kernel: a share of the kernel's
/// value, or an amount in the metric's unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    Relative(f64),
    Absolute(f64),
}

impl Tolerance {
    /// The allowed difference around `reference`.
    pub fn allowed(self, reference: f64) -> f64 {
        match self {
            Tolerance::Relative(r) => r * reference.abs(),
            Tolerance::Absolute(a) => a,
        }
    }

    pub fn describe(self) -> String {
        match self {
            Tolerance::Relative(r) => format!("{}%", r * 100.0),
            Tolerance::Absolute(a) => format!("{a}"),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    suite: Head,
    #[serde(rename = "case", default)]
    cases: Vec<CaseSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Head {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    runs: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseSpec {
    name: toml::Spanned<String>,
    #[serde(default)]
    description: Option<String>,
    scenario: toml::Spanned<String>,
    #[serde(default)]
    runs: Option<toml::Spanned<u32>>,
    #[serde(default)]
    role: Option<toml::Spanned<String>>,
    #[serde(default)]
    set: BTreeMap<String, toml::Value>,
    #[serde(rename = "metric")]
    metrics: Vec<MetricSpec>,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum MetricSpec {
    Goodput {
        #[serde(default)]
        flow: Option<String>,
        #[serde(default)]
        window: Option<[Duration; 2]>,
        tolerance: String,
    },
    Recovery {
        #[serde(default)]
        flow: Option<String>,
        #[serde(default)]
        subflow: Option<u32>,
        #[serde(default)]
        link: Option<String>,
        after: Duration,
        #[serde(default)]
        threshold: Option<Rate>,
        tolerance: String,
    },
    Completion {
        #[serde(default)]
        flow: Option<String>,
        tolerance: String,
    },
    Fallback {
        #[serde(default)]
        flow: Option<String>,
    },
    LinksUsed {
        #[serde(default)]
        flow: Option<String>,
    },
}

/// `"5%"`, or an amount in the metric's unit (`"1s"` for times, `"0.5Mbit"`
/// for goodput).
fn tolerance(s: &str, time: bool) -> Result<Tolerance, String> {
    if let Some(p) = s.strip_suffix('%') {
        return p.trim().parse::<f64>().ok().filter(|v| *v >= 0.0 && v.is_finite()).map(|v| Tolerance::Relative(v / 100.0)).ok_or_else(|| format!("invalid percentage {s:?}"));
    }
    if time {
        s.parse::<Duration>().map(|d| Tolerance::Absolute(d.as_secs_f64())).map_err(|e| format!("{e} (a percentage like \"5%\" or a time like \"1s\")"))
    } else {
        s.parse::<Rate>().map(|r| Tolerance::Absolute(r.bps() as f64 / 1e6)).map_err(|e| format!("{e} (a percentage like \"5%\" or a rate like \"0.5Mbit\")"))
    }
}

/// Reads a suite file; scenario paths are relative to the file.
pub fn read(path: &Path) -> Result<Suite, String> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{file}: cannot read: {e}"))?;
    let f: File = toml::from_str(&text).map_err(|e| {
        let (l, c) = e.span().map(|s| line_col(&text, s.start)).unwrap_or((0, 0));
        format!("{file}:{l}:{c}: {}", e.message().trim())
    })?;
    let at = |span: std::ops::Range<usize>, field: &str, msg: String| {
        let (l, c) = line_col(&text, span.start);
        format!("{file}:{l}:{c}: {field}: {msg}")
    };
    let _ = f.suite.description;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut cases = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for (i, c) in f.cases.into_iter().enumerate() {
        let name = c.name.get_ref().clone();
        if !names.insert(name.clone()) {
            return Err(at(c.name.span(), &format!("case[{i}].name"), format!("duplicate case name {name:?}")));
        }
        let scenario = base.join(c.scenario.get_ref());
        if !scenario.exists() {
            return Err(at(c.scenario.span(), &format!("case[{i}].scenario"), format!("no such scenario file {} (paths are relative to this file)", scenario.display())));
        }
        if let Some(r) = &c.runs {
            if *r.get_ref() == 0 {
                return Err(at(r.span(), &format!("case[{i}].runs"), "at least 1 run".into()));
            }
        }
        if c.metrics.is_empty() {
            return Err(at(c.name.span(), &format!("case[{i}]"), "a case needs at least one [[case.metric]]".into()));
        }
        let mut metrics = Vec::new();
        for (j, m) in c.metrics.into_iter().enumerate() {
            let field = format!("case[{i}].metric[{j}].tolerance");
            // (Spans do not survive serde's tagged enums: point at the case.)
            let tol = |t: &String, time: bool| tolerance(t, time).map_err(|e| at(c.name.span(), &field, e));
            metrics.push(match m {
                MetricSpec::Goodput { flow, window, tolerance } => {
                    let window = window.map(|[a, b]| (a.as_secs_f64(), b.as_secs_f64()));
                    if window.is_some_and(|(a, b)| b <= a) {
                        return Err(at(c.name.span(), &format!("case[{i}].metric[{j}].window"), "the window's end must be after its start".into()));
                    }
                    Metric::Goodput { flow, window, tolerance: tol(&tolerance, false)? }
                }
                MetricSpec::Recovery { flow, subflow, link, after, threshold, tolerance } => Metric::Recovery {
                    flow,
                    on: match (subflow, link) {
                        (Some(i), None) => Subflows::Index(i),
                        (None, Some(l)) => Subflows::Link(l),
                        _ => return Err(at(c.name.span(), &format!("case[{i}].metric[{j}]"), "a recovery metric names `subflow` (an index) or `link`, one of them".into())),
                    },
                    after: after.as_secs_f64(),
                    threshold_mbps: threshold.map_or(1.0, |r| r.bps() as f64 / 1e6),
                    tolerance: tol(&tolerance, true)?,
                },
                MetricSpec::Completion { flow, tolerance } => Metric::Completion { flow, tolerance: tol(&tolerance, true)? },
                MetricSpec::Fallback { flow } => Metric::Fallback { flow },
                MetricSpec::LinksUsed { flow } => Metric::LinksUsed { flow },
            });
        }
        let role = match c.role.as_ref().map(|r| (r.get_ref().as_str(), r.span())) {
            None | Some(("tuning", _)) => Role::Tuning,
            Some(("held-out", _)) => Role::HeldOut,
            Some((other, span)) => return Err(at(span, &format!("case[{i}].role"), format!("unknown role {other:?} (tuning, held-out)"))),
        };
        let sets = c.set.iter().map(|(k, v)| (k.clone(), set_value(v))).collect();
        cases.push(Case { name, description: c.description.unwrap_or_default(), scenario, sets, metrics, runs: c.runs.map(|r| *r.get_ref()), role });
    }
    if cases.is_empty() {
        return Err(format!("{file}: no [[case]] in the suite"));
    }
    Ok(Suite { name: f.suite.name, file: path.to_path_buf(), runs: f.suite.runs.unwrap_or(3).max(1), cases })
}

/// A TOML value as a `--set` value: strings verbatim, the rest as TOML.
fn set_value(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
