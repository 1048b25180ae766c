//! The figures of a results directory: what `mplab plot` writes and
//! `mplab report` inlines. Every CSV column is looked up by name; a figure
//! whose columns are absent or empty is skipped.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use crate::grid;
use crate::plot::{BarPlot, LinePlot, Plot, Series};
use crate::table::Table;

/// A named figure: `name` is the file stem under `plots/`.
pub struct Figure {
    pub name: String,
    pub plot: Plot,
}

const MAX_SERIES: usize = 10;

/// `"20s"`, `"500ms"`, `1.5` (seconds) → seconds.
pub fn duration_s(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        toml::Value::String(s) => {
            let (n, u) = grid::split_number(s)?;
            let k = match u {
                "ns" => 1e-9,
                "us" | "µs" => 1e-6,
                "ms" => 1e-3,
                "s" | "" => 1.0,
                "m" | "min" => 60.0,
                "h" => 3600.0,
                _ => return None,
            };
            Some(n * k)
        }
        _ => None,
    }
}

/// Link events of the scenario as run (`scenario.toml`): (time, "wan2 down").
pub fn events(dir: &Path) -> Vec<(f64, String)> {
    let Ok(text) = std::fs::read_to_string(dir.join("scenario.toml")) else { return Vec::new() };
    let Ok(doc) = text.parse::<toml::Table>() else { return Vec::new() };
    let mut out = Vec::new();
    for e in doc.get("events").and_then(|e| e.as_array()).into_iter().flatten() {
        let Some(at) = e.get("at").and_then(duration_s) else { continue };
        let what = e.get("link").and_then(|v| v.as_str()).map(str::to_string).or_else(|| Some(format!("{}:{}", e.get("node")?.as_str()?, e.get("iface")?.as_str()?))).unwrap_or_default();
        let action = e.get("action").and_then(|v| v.as_str()).unwrap_or("event");
        out.push((at, format!("{what} {action}").trim().to_string()));
    }
    out
}

/// Groups rows by a key, keeping first-seen order.
fn group(t: &Table, key: impl Fn(usize) -> Option<String>) -> Vec<(String, Vec<usize>)> {
    let mut order: Vec<String> = Vec::new();
    let mut m: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for r in 0..t.rows.len() {
        if let Some(k) = key(r) {
            if !m.contains_key(&k) {
                order.push(k.clone());
            }
            m.entry(k).or_default().push(r);
        }
    }
    order
        .into_iter()
        .map(|k| {
            let v = m.remove(&k).unwrap_or_default();
            (k, v)
        })
        .collect()
}

fn series_of(t: &Table, rows: &[usize], x: &str, y: &str, scale: f64) -> Vec<(f64, f64)> {
    rows.iter().filter_map(|&r| Some((t.num(r, x)?, t.num(r, y)? * scale))).collect()
}

/// Keeps the `MAX_SERIES` series with the largest mean; says so in the title.
fn top(mut s: Vec<Series>, title: &mut String) -> Vec<Series> {
    let total = s.len();
    if total > MAX_SERIES {
        let mean = |x: &Series| x.points.iter().map(|p| p.1).sum::<f64>() / x.points.len().max(1) as f64;
        s.sort_by(|a, b| mean(b).total_cmp(&mean(a)));
        s.truncate(MAX_SERIES);
        title.push_str(&format!(" (top {MAX_SERIES} of {total})"));
    }
    s
}

/// Which flows.csv rows describe subflows: for a flow with subflow rows,
/// those; otherwise its `all` rows (TCP).
/// Each subflow's path label (`client:eth1 (wan2)`) by (flow, index),
/// from summary.json: legends name the path, not only `sf1`.
fn path_labels(dir: &Path) -> std::collections::HashMap<(String, String), String> {
    let mut m = std::collections::HashMap::new();
    let Ok(text) = std::fs::read_to_string(dir.join("summary.json")) else { return m };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else { return m };
    for f in v["flows"].as_array().into_iter().flatten() {
        for (i, sf) in f["subflows"].as_array().into_iter().flatten().enumerate() {
            if let (Some(name), Some(p)) = (f["name"].as_str(), sf["path"].as_str()) {
                m.insert((name.to_string(), i.to_string()), p.to_string());
            }
        }
    }
    m
}

/// `flow sf1 client:eth1 (wan2)`, or `flow sf1` without a label.
fn subflow_name(labels: &std::collections::HashMap<(String, String), String>, f: &str, s: &str) -> String {
    match labels.get(&(f.to_string(), s.to_string())) {
        Some(p) => format!("{f} sf{s} {p}"),
        None => format!("{f} sf{s}"),
    }
}

fn per_subflow(t: &Table, labels: &std::collections::HashMap<(String, String), String>) -> Vec<(String, Vec<usize>)> {
    let has_sub: std::collections::BTreeSet<String> = (0..t.rows.len()).filter(|&r| t.str(r, "subflow") != "all").map(|r| t.str(r, "flow").to_string()).collect();
    group(t, |r| {
        let (f, s) = (t.str(r, "flow"), t.str(r, "subflow"));
        if has_sub.contains(f) {
            (s != "all").then(|| subflow_name(labels, f, s))
        } else {
            Some(f.to_string())
        }
    })
}

fn line(name: &str, title: String, x: &str, y: &str, series: Vec<Series>, events: &[(f64, String)], y_zero: bool) -> Option<Figure> {
    let series: Vec<Series> = series.into_iter().filter(|s| !s.points.is_empty()).collect();
    if series.is_empty() {
        return None;
    }
    let mut title = title;
    let series = top(series, &mut title);
    Some(Figure { name: name.into(), plot: Plot::Line(LinePlot { title, x_label: x.into(), y_label: y.into(), series, events: events.to_vec(), y_zero, ..Default::default() }) })
}

/// The figures of one run's results directory.
pub fn run_figures(dir: &Path) -> io::Result<Vec<Figure>> {
    let mut out = Vec::new();
    let ev = events(dir);
    let flows = Table::read_csv(&dir.join("flows.csv")).unwrap_or_default();
    let labels = path_labels(dir);
    if flows.has("goodput_bps") {
        // Goodput per flow (the connection, thick when it has subflows) and per subflow.
        let has_sub: std::collections::BTreeSet<String> = (0..flows.rows.len()).filter(|&r| flows.str(r, "subflow") != "all").map(|r| flows.str(r, "flow").to_string()).collect();
        let mut s = Vec::new();
        for (k, rows) in group(&flows, |r| Some(format!("{}|{}", flows.str(r, "flow"), flows.str(r, "subflow")))) {
            let (f, sf) = k.split_once('|').unwrap_or((&k, ""));
            let name = if sf == "all" {
                if has_sub.contains(f) {
                    format!("{f} (connection)")
                } else {
                    f.to_string()
                }
            } else {
                subflow_name(&labels, f, sf)
            };
            s.push(Series { name, points: series_of(&flows, &rows, "time_s", "goodput_bps", 1e-6), emphasis: sf == "all" && has_sub.contains(f), ..Default::default() });
        }
        out.extend(line("goodput_time", "Goodput over time per flow and subflow".into(), "time (s)", "goodput (Mbit/s)", s, &ev, true));
    }
    let ifs = Table::read_csv(&dir.join("interfaces.csv")).unwrap_or_default();
    if ifs.has("tx_bps") {
        let mut s = Vec::new();
        for (k, rows) in group(&ifs, |r| Some(format!("{}:{}", ifs.str(r, "node"), ifs.str(r, "iface")))) {
            let tx: f64 = rows.iter().filter_map(|&r| ifs.num(r, "tx_bps")).sum();
            let rx: f64 = rows.iter().filter_map(|&r| ifs.num(r, "rx_bps")).sum();
            let (col, dir_) = if tx >= rx { ("tx_bps", "tx") } else { ("rx_bps", "rx") };
            s.push((tx.max(rx), Series { name: format!("{k} {dir_}"), points: series_of(&ifs, &rows, "time_s", col, 1e-6), ..Default::default() }));
        }
        // Leave out idle interfaces (less than 2 % of the busiest).
        let max = s.iter().map(|x| x.0).fold(0.0, f64::max);
        let s: Vec<Series> = s.into_iter().filter(|x| x.0 > 0.02 * max && x.0 > 0.0).map(|x| x.1).collect();
        out.extend(line("interfaces_time", "Throughput per interface (busier direction, headers included)".into(), "time (s)", "throughput (Mbit/s)", s, &ev, true));
    }
    if flows.has("cwnd_bytes") {
        let s = per_subflow(&flows, &labels).into_iter().map(|(k, rows)| Series { name: k, points: series_of(&flows, &rows, "time_s", "cwnd_bytes", 1e-3), ..Default::default() }).collect();
        out.extend(line("cwnd_time", "Congestion window per subflow".into(), "time (s)", "cwnd (KB)", s, &ev, true));
    }
    if flows.has("srtt_ms") {
        let s = per_subflow(&flows, &labels).into_iter().map(|(k, rows)| Series { name: k, points: series_of(&flows, &rows, "time_s", "srtt_ms", 1.0), ..Default::default() }).collect();
        out.extend(line("srtt_time", "Smoothed RTT per subflow".into(), "time (s)", "srtt (ms)", s, &ev, true));
    }
    // Columns another backend or a later version may add: plotted when present.
    // (`hol_ms` and `hol_delay_ms`: the name the simulator writes, and the one first announced.)
    for (cols, name, title, unit, scale) in [
        (&["ooo_bytes"][..], "ooo_time", "Out-of-order queue at the receiver", "out-of-order bytes (KB)", 1e-3),
        (&["hol_ms", "hol_delay_ms"][..], "hol_time", "Head-of-line blocking delay", "HoL delay (ms)", 1.0),
    ] {
        if let Some(col) = cols.iter().copied().find(|c| flows.has(c)) {
            let s = group(&flows, |r| (flows.str(r, "subflow") == "all").then(|| flows.str(r, "flow").to_string()))
                .into_iter()
                .map(|(k, rows)| Series { name: k, points: series_of(&flows, &rows, "time_s", col, scale), ..Default::default() })
                .collect();
            out.extend(line(name, title.into(), "time (s)", unit, s, &ev, true));
        }
    }
    // The send buffer's size (what autotuning allows) and its occupancy
    // (bytes written and not yet acknowledged), both per connection: a
    // writer is buffer-limited where the two meet.
    if flows.has("snd_buf_bytes") {
        let mut s = Vec::new();
        for (k, rows) in group(&flows, |r| (flows.str(r, "subflow") == "all").then(|| flows.str(r, "flow").to_string())) {
            s.push(Series { name: format!("{k} size"), points: series_of(&flows, &rows, "time_s", "snd_buf_bytes", 1e-3), ..Default::default() });
            if flows.has("snd_queued_bytes") {
                s.push(Series { name: format!("{k} occupancy"), points: series_of(&flows, &rows, "time_s", "snd_queued_bytes", 1e-3), ..Default::default() });
            }
        }
        out.extend(line("sndbuf_time", "Send buffer per connection: size and occupancy".into(), "time (s)", "send buffer (KB)", s, &ev, true));
    }
    let q = Table::read_csv(&dir.join("queues.csv")).unwrap_or_default();
    if q.has("queue_bytes") && !q.rows.is_empty() {
        let s = group(&q, |r| Some(format!("{} {}", q.str(r, "link"), q.str(r, "direction"))))
            .into_iter()
            .map(|(k, rows)| Series { name: k, points: series_of(&q, &rows, "time_s", "queue_bytes", 1e-3), ..Default::default() })
            .collect();
        out.extend(line("queues_time", "Queue occupancy".into(), "time (s)", "queue (KB)", s, &ev, true));
    }
    out.extend(balancer_figure(dir));
    if let Ok(text) = std::fs::read_to_string(dir.join("summary.json")) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
            let g: Vec<f64> = v["flows"].as_array().into_iter().flatten().filter_map(|f| f["goodput_bps"].as_f64()).map(|x| x / 1e6).collect();
            if g.len() >= 3 {
                out.push(Figure { name: "goodput_cdf".into(), plot: cdf_plot("CDF of flow goodput", vec![("flows".into(), g)]) });
            }
        }
    }
    Ok(out)
}

/// Where a run's load balancers sent connections and joins, and what each
/// backend made of them (balancers.csv, servers.csv): one bar per count.
fn balancer_figure(dir: &Path) -> Option<Figure> {
    let b = Table::read_csv(&dir.join("balancers.csv")).ok()?;
    let s = Table::read_csv(&dir.join("servers.csv")).ok()?;
    let mut bars = Vec::new();
    for r in 0..b.rows.len() {
        let node = b.str(r, "node");
        for (col, what) in [("connections", "connections"), ("joins_by_token", "joins by token"), ("joins_unknown_token", "joins, unknown token"), ("token_collisions", "token collisions")] {
            if let Some(v) = b.num(r, col) {
                bars.push((format!("{node}: {what}"), v));
            }
        }
    }
    for r in 0..s.rows.len() {
        let node = s.str(r, "node");
        for (col, what) in [("connections", "connections"), ("joins_accepted", "joins accepted"), ("joins_refused", "joins refused")] {
            if let Some(v) = s.num(r, col) {
                bars.push((format!("{node}: {what}"), v));
            }
        }
    }
    (!bars.is_empty()).then(|| Figure { name: "load_balancing".into(), plot: Plot::Bar(BarPlot { title: "Load balancers and their backends: connections and joins".into(), x_label: "count".into(), bars }) })
}

/// Empirical CDFs, one line per sample set (goodputs in Mbit/s).
pub fn cdf_plot(title: &str, sets: Vec<(String, Vec<f64>)>) -> Plot {
    let series = sets
        .into_iter()
        .map(|(name, mut xs)| {
            xs.sort_by(f64::total_cmp);
            let n = xs.len() as f64;
            let mut pts = vec![(xs.first().copied().unwrap_or(0.0), 0.0)];
            pts.extend(xs.iter().enumerate().map(|(i, &x)| (x, (i + 1) as f64 / n)));
            Series { name, points: pts, step: true, ..Default::default() }
        })
        .collect();
    Plot::Line(LinePlot { title: title.into(), x_label: "flow goodput (Mbit/s)".into(), y_label: "fraction of flows".into(), series, y_range: Some((0.0, 1.05)), ..Default::default() })
}

/// A swept value as a number on a readable scale, with the axis unit:
/// rates in Mbit/s, durations in ms, sizes in KB.
pub fn axis_value(v: &str) -> Option<(f64, &'static str)> {
    let (n, u) = grid::split_number(v)?;
    let r = match u {
        "" => (n, ""),
        "bit" | "bps" => (n / 1e6, "Mbit/s"),
        "kbit" | "kbps" | "Kbps" => (n / 1e3, "Mbit/s"),
        "Mbit" | "Mbps" | "Mbit/s" | "Mb/s" | "mbit" => (n, "Mbit/s"),
        "Gbit" | "Gbps" | "gbit" => (n * 1e3, "Mbit/s"),
        "ns" => (n / 1e6, "ms"),
        "us" | "µs" => (n / 1e3, "ms"),
        "ms" => (n, "ms"),
        "s" => (n * 1e3, "ms"),
        "B" => (n / 1e3, "KB"),
        "KB" => (n, "KB"),
        "KiB" => (n * 1.024, "KB"),
        "MB" => (n * 1e3, "KB"),
        "MiB" => (n * 1048.576, "KB"),
        "%" => (n, "%"),
        _ => return None,
    };
    Some(r)
}

/// Throughput against the swept parameter `x`, with 95 % confidence
/// intervals, one line per value of the other parameters (`aggregate.csv`).
pub fn sweep_figures(dir: &Path) -> io::Result<Vec<Figure>> {
    let mut out = Vec::new();
    let agg = Table::read_csv(&dir.join("aggregate.csv"))?;
    let spec: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("sweep.json"))?).map_err(io::Error::other)?;
    let params: Vec<String> = spec["params"].as_array().into_iter().flatten().filter_map(|p| p.as_str().map(String::from)).collect();
    if params.is_empty() || agg.rows.is_empty() {
        return Ok(out);
    }
    let x = spec["plot"]["x"].as_str().map(String::from).filter(|x| params.contains(x)).unwrap_or_else(|| params[0].clone());
    let series_params: Vec<String> = match spec["plot"]["series"].as_str() {
        Some(s) if params.iter().any(|p| p == s) => vec![s.to_string()],
        _ => params.iter().filter(|p| **p != x).cloned().collect(),
    };
    let flows: Vec<String> = group(&agg, |r| Some(agg.str(r, "flow").to_string())).into_iter().map(|(k, _)| k).filter(|f| f != "all").collect();
    let flow_sel: Vec<String> = match spec["plot"]["flow"].as_str() {
        Some(f) => vec![f.to_string()],
        None if flows.len() > 1 && flows.len() <= 3 => flows.clone(),
        None => vec!["all".to_string()],
    };
    let xs: Vec<String> = group(&agg, |r| Some(agg.str(r, &x).to_string())).into_iter().map(|(k, _)| k).collect();
    let numeric: Option<Vec<(f64, &str)>> = xs.iter().map(|v| axis_value(v)).collect();
    let unit = numeric.as_ref().and_then(|n| n.first().map(|p| p.1)).unwrap_or("");
    let numeric = numeric.filter(|n| n.iter().all(|p| p.1 == unit));
    let xpos = |v: &str| -> Option<f64> {
        match &numeric {
            Some(_) => axis_value(v).map(|p| p.0),
            None => xs.iter().position(|s| s == v).map(|i| i as f64),
        }
    };
    let x_log = numeric.as_ref().is_some_and(|n| {
        let (lo, hi) = n.iter().fold((f64::INFINITY, 0.0f64), |(a, b), p| (a.min(p.0), b.max(p.0)));
        lo > 0.0 && hi / lo >= 20.0
    });
    // Request/response flows also get their mean latency (one exchange's
    // time: an object's download time); it has values on the flows' rows
    // only, so `[sweep.plot] flow` must name the flow.
    for (metric, mlabel, scale, stem) in [("goodput_bps", "goodput (Mbit/s)", 1e-6, "goodput"), ("mean_srtt_ms", "mean srtt (ms)", 1.0, "srtt"), ("mean_latency_ms", "mean latency (ms)", 1.0, "latency")] {
        if !agg.has(&format!("{metric}_mean")) {
            continue;
        }
        let mut series = Vec::new();
        for (key, rows) in group(&agg, |r| {
            let f = agg.str(r, "flow");
            if !flow_sel.iter().any(|s| s == f) {
                return None;
            }
            let mut k: Vec<String> = series_params.iter().map(|p| format!("{}={}", short(p), agg.str(r, p))).collect();
            if flow_sel.len() > 1 {
                k.push(f.to_string());
            }
            Some(k.join(", "))
        }) {
            let mut pts = Vec::new();
            let mut err = Vec::new();
            for r in rows {
                let (Some(xv), Some(m)) = (xpos(agg.str(r, &x)), agg.num(r, &format!("{metric}_mean"))) else { continue };
                pts.push((xv, m * scale));
                err.push(agg.num(r, &format!("{metric}_ci95")).unwrap_or(0.0) * scale);
            }
            let mut idx: Vec<usize> = (0..pts.len()).collect();
            idx.sort_by(|&a, &b| pts[a].0.total_cmp(&pts[b].0));
            series.push(Series {
                name: if key.is_empty() { "total".into() } else { key },
                points: idx.iter().map(|&i| pts[i]).collect(),
                err: Some(idx.iter().map(|&i| err[i]).collect()),
                markers: true,
                ..Default::default()
            });
        }
        if series.iter().all(|s| s.points.is_empty()) {
            continue;
        }
        let seeds = spec["seeds"].as_array().map(|a| a.len()).unwrap_or(1);
        let what = if flow_sel == ["all"] && metric == "goodput_bps" { "total " } else { "" };
        let mlabel_cap = if what.is_empty() { capitalise(mlabel) } else { mlabel.to_string() };
        let stat = if seeds == 1 { "1 seed".to_string() } else { format!("mean of {seeds} seeds, 95 % CI") };
        let title = format!("{}{} vs {} ({stat})", if what.is_empty() { "" } else { "Total " }, mlabel_cap.split(" (").next().unwrap_or(mlabel), short(&x));
        let x_label = if unit.is_empty() { x.clone() } else { format!("{x} ({unit}{})", if x_log { ", log scale" } else { "" }) };
        // Category labels: TOML lists compacted (`[5ms,10ms]`).
        let categories = numeric.is_none().then(|| xs.iter().map(|v| v.chars().filter(|c| *c != '"' && *c != '\'' && *c != ' ').collect()).collect());
        out.push(Figure {
            name: format!("{stem}_vs_{}", short(&x)),
            plot: Plot::Line(LinePlot { title, x_label, y_label: mlabel.into(), series, categories, x_log, y_zero: metric == "goodput_bps", ..Default::default() }),
        });
    }
    // Many flows per run (fat-tree): the distribution of flow goodput per point.
    if let Ok(runs) = Table::read_csv(&dir.join("runs.csv")) {
        let per_point = group(&runs, |r| (runs.str(r, "flow") != "all").then(|| params.iter().map(|p| format!("{}={}", short(p), runs.str(r, p))).collect::<Vec<_>>().join(", ")));
        let n_flows = per_point.first().map(|(_, rows)| rows.len() / spec["seeds"].as_array().map(|a| a.len()).unwrap_or(1).max(1)).unwrap_or(0);
        if n_flows >= 4 {
            let sets = per_point.into_iter().take(MAX_SERIES).map(|(k, rows)| (k, rows.iter().filter_map(|&r| runs.num(r, "goodput_bps")).map(|v| v / 1e6).collect())).collect();
            out.push(Figure { name: "goodput_cdf".into(), plot: cdf_plot("CDF of flow goodput (all seeds)", sets) });
        }
    }
    Ok(out)
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
}

/// `transport.mptcp.subflows` → `subflows`.
pub fn short(path: &str) -> &str {
    let first = path.split('+').next().unwrap_or(path);
    first.rsplit('.').find(|s| s.parse::<usize>().is_err()).unwrap_or(first)
}

/// Is this a sweep directory (rather than one run's)?
pub fn is_sweep(dir: &Path) -> bool {
    dir.join("sweep.json").exists()
}

/// Writes every figure of `dir` (a run or a sweep) as PNG and SVG under
/// `dir/plots/`; returns the files' stems.
pub fn write_all(dir: &Path) -> io::Result<Vec<String>> {
    write_all_at(dir, crate::plot::DEFAULT_DPI)
}

/// `write_all` with PNGs at `dpi` dots per inch.
pub fn write_all_at(dir: &Path, dpi: u32) -> io::Result<Vec<String>> {
    let figs = if is_sweep(dir) { sweep_figures(dir)? } else { run_figures(dir)? };
    let mut names = Vec::new();
    for f in figs {
        crate::plot::write_at(&f.plot, &dir.join("plots").join(&f.name), dpi)?;
        names.push(f.name);
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_values_and_short_names() {
        assert_eq!(axis_value("10Mbit"), Some((10.0, "Mbit/s")));
        assert_eq!(axis_value("1Gbit"), Some((1000.0, "Mbit/s")));
        assert_eq!(axis_value("20ms"), Some((20.0, "ms")));
        assert_eq!(axis_value("64KB"), Some((64.0, "KB")));
        assert_eq!(axis_value("3"), Some((3.0, "")));
        assert_eq!(axis_value("minrtt"), None);
        assert_eq!(short("transport.mptcp.subflows"), "subflows");
        assert_eq!(short("topology.delay.1"), "delay");
        assert_eq!(short("transport.tcp.rcv_buf+transport.tcp.snd_buf"), "rcv_buf");
        assert_eq!(duration_s(&toml::Value::String("500ms".into())), Some(0.5));
    }
}

#[cfg(test)]
mod column_tests {
    use super::*;

    /// Columns another engineer adds to flows.csv (ooo_bytes, hol_delay_ms)
    /// are plotted when present and skipped when absent.
    #[test]
    fn optional_flow_columns_are_plotted_when_present() {
        let d = std::env::temp_dir().join(format!("mplab-figcols-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("flows.csv"), "time_s,flow,subflow,goodput_bps,cwnd_bytes,srtt_ms,in_flight_bytes,ooo_bytes,hol_delay_ms\n0.1,f,all,1000000,10000,20.5,5000,3000,1.5\n0.2,f,all,2000000,12000,21.0,6000,,2.5\n0.1,f,0,1000000,10000,20.5,5000,,\n").unwrap();
        let names: Vec<String> = run_figures(&d).unwrap().into_iter().map(|f| f.name).collect();
        assert!(names.contains(&"ooo_time".to_string()) && names.contains(&"hol_time".to_string()), "{names:?}");
        std::fs::write(d.join("flows.csv"), "time_s,flow,subflow,goodput_bps\n0.1,f,all,1000000\n").unwrap();
        let names: Vec<String> = run_figures(&d).unwrap().into_iter().map(|f| f.name).collect();
        let _ = std::fs::remove_dir_all(&d);
        assert_eq!(names, ["goodput_time"], "absent columns are skipped");
    }

    /// The send-buffer figure names what it shows: the buffer's size and
    /// its occupancy, one series each per connection.
    #[test]
    fn send_buffer_figure_shows_size_and_occupancy() {
        let d = std::env::temp_dir().join(format!("mplab-figsnd-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("flows.csv"), "time_s,flow,subflow,goodput_bps,snd_buf_bytes,snd_queued_bytes\n0.1,f,all,1000000,46080,30000\n0.2,f,all,1000000,92160,90000\n").unwrap();
        let figs = run_figures(&d).unwrap();
        let _ = std::fs::remove_dir_all(&d);
        let f = figs.iter().find(|f| f.name == "sndbuf_time").expect("a send-buffer figure");
        let Plot::Line(l) = &f.plot else { panic!("a line plot") };
        assert!(l.title.contains("size and occupancy"), "{}", l.title);
        let names: Vec<&str> = l.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["f size", "f occupancy"]);
        assert_eq!(l.series[1].points[1], (0.2, 90.0));
    }
}

#[cfg(test)]
mod balancer_tests {
    use super::*;

    /// A run with load balancers gets a bar chart of its connections and
    /// joins; a run without gets none.
    #[test]
    fn balancer_counts_are_plotted_when_present() {
        let d = std::env::temp_dir().join(format!("mplab-figlb-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("flows.csv"), "time_s,flow,subflow,goodput_bps\n0.1,f,all,1000000\n").unwrap();
        assert!(run_figures(&d).unwrap().iter().all(|f| f.name != "load_balancing"));
        std::fs::write(d.join("balancers.csv"), "node,mode,vip,packets,connections,joins,joins_by_token,joins_unknown_token,tokens_learned,token_collisions\nlb0,token,10.100.0.1,10,1,1,1,0,1,0\n").unwrap();
        std::fs::write(d.join("servers.csv"), "node,connections,joins_accepted,joins_refused\nsrv0,1,1,0\nsrv1,0,0,1\n").unwrap();
        let figs = run_figures(&d).unwrap();
        let _ = std::fs::remove_dir_all(&d);
        let f = figs.iter().find(|f| f.name == "load_balancing").expect("a load-balancing figure");
        let Plot::Bar(b) = &f.plot else { panic!("a bar chart") };
        assert!(b.bars.contains(&("srv1: joins refused".to_string(), 1.0)), "{:?}", b.bars);
        assert!(b.bars.contains(&("lb0: joins by token".to_string(), 1.0)), "{:?}", b.bars);
        assert_eq!(b.bars.len(), 4 + 6);
    }
}
