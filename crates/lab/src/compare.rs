//! `mplab compare A B`: two results directories of the same scenario (two
//! backends, two configurations): every metric side by side with its
//! difference, as a table, compare.csv and plots.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use crate::plot::{BarPlot, LinePlot, Plot, Series};
use crate::table::Table;

/// One compared metric.
#[derive(Debug, Clone)]
pub struct Row {
    pub metric: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
}

impl Row {
    pub fn diff(&self) -> Option<f64> {
        Some(self.b? - self.a?)
    }
    pub fn rel_pct(&self) -> Option<f64> {
        let (a, b) = (self.a?, self.b?);
        (a != 0.0).then(|| (b - a) / a.abs() * 100.0)
    }
}

fn summary(dir: &Path) -> io::Result<serde_json::Value> {
    let p = dir.join("summary.json");
    let text = std::fs::read_to_string(&p).map_err(|e| io::Error::new(e.kind(), format!("{}: {e} (not a results directory?)", p.display())))?;
    serde_json::from_str(&text).map_err(|e| io::Error::other(format!("{}: {e}", p.display())))
}

/// The metrics of one run's summary.json, by name.
fn run_metrics(s: &serde_json::Value) -> Vec<(String, Option<f64>)> {
    let mut out = Vec::new();
    for f in s["flows"].as_array().into_iter().flatten() {
        let n = f["name"].as_str().unwrap_or("?");
        for m in ["goodput_bps", "bytes_delivered", "retransmitted_segments", "rto_count", "mean_srtt_ms", "completion_time_s", "mean_latency_ms"] {
            out.push((format!("flow {n} {m}"), f[m].as_f64()));
        }
        out.push((format!("flow {n} subflows"), f["subflows"].as_array().map(|a| a.len() as f64)));
    }
    for i in s["interfaces"].as_array().into_iter().flatten() {
        let n = format!("{}:{}", i["node"].as_str().unwrap_or("?"), i["iface"].as_str().unwrap_or("?"));
        for m in ["tx_bps", "rx_bps"] {
            out.push((format!("iface {n} {m}"), i[m].as_f64()));
        }
    }
    for l in s["links"].as_array().into_iter().flatten() {
        let n = format!("{} {}", l["name"].as_str().unwrap_or("?"), l["direction"].as_str().unwrap_or("?"));
        for m in ["drops_queue", "drops_loss", "max_queue_bytes"] {
            out.push((format!("link {n} {m}"), l[m].as_f64()));
        }
    }
    out
}

/// Sweep directories: the mean of each metric per point and flow.
fn sweep_metrics(dir: &Path) -> io::Result<Vec<(String, Option<f64>)>> {
    let agg = Table::read_csv(&dir.join("aggregate.csv"))?;
    let mut out = Vec::new();
    for r in 0..agg.rows.len() {
        for h in agg.headers.iter().filter(|h| h.ends_with("_mean")) {
            out.push((format!("{} flow {} {}", agg.str(r, "point"), agg.str(r, "flow"), h.trim_end_matches("_mean")), agg.num(r, h)));
        }
    }
    Ok(out)
}

pub fn compare(a: &Path, b: &Path) -> io::Result<Vec<Row>> {
    let (ma, mb) = if crate::figures::is_sweep(a) && crate::figures::is_sweep(b) { (sweep_metrics(a)?, sweep_metrics(b)?) } else { (run_metrics(&summary(a)?), run_metrics(&summary(b)?)) };
    let mut rows: Vec<Row> = ma.iter().map(|(k, v)| Row { metric: k.clone(), a: *v, b: mb.iter().find(|(kb, _)| kb == k).and_then(|x| x.1) }).collect();
    for (k, v) in &mb {
        if !ma.iter().any(|(ka, _)| ka == k) {
            rows.push(Row { metric: k.clone(), a: None, b: *v });
        }
    }
    rows.retain(|r| r.a.is_some() || r.b.is_some());
    Ok(rows)
}

fn cell(v: Option<f64>) -> String {
    v.map(|x| if x.abs() >= 1e5 { format!("{x:.4e}") } else { format!("{x:.3}") }).unwrap_or_else(|| "-".into())
}

/// "DIR (backend sim, seed 1)" for a run directory.
pub fn describe(dir: &Path) -> String {
    match summary(dir) {
        Ok(s) => format!("{} ({} backend, seed {}, scenario {})", dir.display(), s["backend"].as_str().unwrap_or("?"), s["seed"], s["scenario"].as_str().unwrap_or("?")),
        Err(_) => dir.display().to_string(),
    }
}

/// How A and B differ before any metric: backend, seed, duration, and the
/// scenario files' lines that differ (`-` A's, `+` B's). A duration that
/// differs is a warning: totals (bytes, segments) then differ by design.
pub fn differences(a: &Path, b: &Path) -> String {
    let mut o = String::new();
    let (Ok(sa), Ok(sb)) = (summary(a), summary(b)) else { return o };
    for key in ["backend", "seed", "duration_s"] {
        if sa[key] != sb[key] {
            let _ = writeln!(o, "{key}: A {} / B {}", sa[key], sb[key]);
        }
    }
    if let (Some(da), Some(db)) = (sa["duration_s"].as_f64(), sb["duration_s"].as_f64()) {
        if (da - db).abs() > 1e-9 {
            let _ = writeln!(o, "warning: A ran {da} s and B {db} s: compare rates (Mbit/s), not totals (bytes, segments)");
        }
    }
    let read = |d: &Path| std::fs::read_to_string(d.join("scenario.toml")).unwrap_or_default();
    let (ta, tb) = (read(a), read(b));
    if ta != tb && !ta.is_empty() && !tb.is_empty() {
        let la: Vec<&str> = ta.lines().collect();
        let lb: Vec<&str> = tb.lines().collect();
        let only_a: Vec<&&str> = la.iter().filter(|l| !lb.contains(l)).collect();
        let only_b: Vec<&&str> = lb.iter().filter(|l| !la.contains(l)).collect();
        let _ = writeln!(o, "scenario lines that differ ({} in A only, {} in B only):", only_a.len(), only_b.len());
        const SHOWN: usize = 20;
        for l in only_a.iter().take(SHOWN) {
            let _ = writeln!(o, "  - {l}");
        }
        for l in only_b.iter().take(SHOWN) {
            let _ = writeln!(o, "  + {l}");
        }
        if only_a.len().max(only_b.len()) > SHOWN {
            let _ = writeln!(o, "  (more: diff {0}/scenario.toml {1}/scenario.toml)", a.display(), b.display());
        }
    }
    if !o.is_empty() {
        o.push('\n');
    }
    o
}

pub fn render(rows: &[Row], a: &str, b: &str) -> String {
    let w = rows.iter().map(|r| r.metric.len()).max().unwrap_or(6).max(6);
    let mut o = String::new();
    let _ = writeln!(o, "A = {a}\nB = {b}\n");
    let _ = writeln!(o, "{:<w$} {:>14} {:>14} {:>14} {:>9}", "metric", "A", "B", "B - A", "B/A - 1");
    for r in rows {
        let _ = writeln!(o, "{:<w$} {:>14} {:>14} {:>14} {:>9}", r.metric, cell(r.a), cell(r.b), cell(r.diff()), r.rel_pct().map(|p| format!("{p:+.1}%")).unwrap_or_else(|| "-".into()));
    }
    o
}

/// compare.csv, and the plots: relative difference per metric, goodput over
/// time of both runs (run directories).
pub fn write(rows: &[Row], a: &Path, b: &Path, out: &Path) -> io::Result<Vec<String>> {
    std::fs::create_dir_all(out)?;
    let mut t = Table::new(&["metric", "a", "b", "diff", "rel_diff_pct"]);
    for r in rows {
        let f = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        t.push(vec![r.metric.clone(), f(r.a), f(r.b), f(r.diff()), f(r.rel_pct())]);
    }
    t.write_csv(&out.join("compare.csv"))?;
    crate::parq::write_table(&t, &out.join("compare.parquet"))?;
    let mut names = Vec::new();
    let bars: Vec<(String, f64)> = rows.iter().filter(|r| !r.metric.starts_with("link ")).filter_map(|r| Some((r.metric.clone(), r.rel_pct()?))).take(40).collect();
    if !bars.is_empty() {
        let p = Plot::Bar(BarPlot { title: "Relative difference per metric (B vs A)".into(), x_label: "B / A − 1 (%)".into(), bars });
        crate::plot::write(&p, &out.join("compare_diff"))?;
        names.push("compare_diff".to_string());
    }
    let fa = Table::read_csv(&a.join("flows.csv"));
    let fb = Table::read_csv(&b.join("flows.csv"));
    if let (Ok(fa), Ok(fb)) = (fa, fb) {
        let mut series = Vec::new();
        let backend = |d: &Path| summary(d).ok().and_then(|s| s["backend"].as_str().map(|b| format!(" ({b}, seed {})", s["seed"]))).unwrap_or_default();
        let (ta, tb) = (format!("A{}", backend(a)), format!("B{}", backend(b)));
        for (tag, t) in [(ta.as_str(), &fa), (tb.as_str(), &fb)] {
            let mut flows: Vec<String> = Vec::new();
            for r in 0..t.rows.len() {
                let f = t.str(r, "flow").to_string();
                if t.str(r, "subflow") == "all" && !flows.contains(&f) {
                    flows.push(f);
                }
            }
            for f in flows.iter().take(5) {
                let pts = (0..t.rows.len()).filter(|&r| t.str(r, "flow") == f && t.str(r, "subflow") == "all").filter_map(|r| Some((t.num(r, "time_s")?, t.num(r, "goodput_bps")? * 1e-6))).collect();
                series.push(Series { name: format!("{tag}: {f}"), points: pts, ..Default::default() });
            }
        }
        if series.iter().any(|s| !s.points.is_empty()) {
            let p = Plot::Line(LinePlot { title: "Goodput over time, A and B".into(), x_label: "time (s)".into(), y_label: "goodput (Mbit/s)".into(), series, y_zero: true, ..Default::default() });
            crate::plot::write(&p, &out.join("compare_goodput_time"))?;
            names.push("compare_goodput_time".to_string());
        }
    }
    Ok(names)
}
