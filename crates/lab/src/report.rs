//! `mplab report DIR`: one self-contained HTML file (inline SVG plots, inline
//! CSS, no scripts, nothing fetched) for a run or a sweep directory.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use crate::figures;
use crate::table::Table;

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

const CSS: &str = "body{font-family:'DejaVu Sans',Arial,sans-serif;margin:24px auto;max-width:1000px;color:#222;background:#fff}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;border-bottom:1px solid #ccc;padding-bottom:3px;margin-top:28px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}pre{background:#f7f7f7;border:1px solid #ddd;padding:8px;font-size:12px;overflow:auto;max-height:420px}
figure{margin:12px 0}figure svg{width:100%;height:auto;border:1px solid #eee}figcaption{font-size:13px;color:#555}
.meta td{text-align:left}.bad{color:#b00;font-weight:bold}";

fn mbit(v: Option<f64>) -> String {
    v.map(|x| format!("{:.3}", x / 1e6)).unwrap_or_else(|| "-".into())
}

fn opt(v: &serde_json::Value, digits: usize) -> String {
    match v {
        serde_json::Value::Number(n) => n.as_f64().map(|x| format!("{x:.digits$}")).unwrap_or_default(),
        serde_json::Value::Bool(b) => {
            if *b {
                "yes".into()
            } else {
                "NO".into()
            }
        }
        serde_json::Value::String(s) => esc(s),
        _ => "-".into(),
    }
}

/// Nested counters (`{"client": {"TCPOrigDataSent": 9}}`) as one
/// "client TCPOrigDataSent 9" line each.
fn counter_lines(v: &serde_json::Value, prefix: &str) -> Vec<String> {
    match v {
        serde_json::Value::Object(m) => m.iter().flat_map(|(k, v)| counter_lines(v, &if prefix.is_empty() { k.clone() } else { format!("{prefix} {k}") })).collect(),
        other => vec![format!("{} {}", esc(prefix), esc(&other.to_string()))],
    }
}

fn meta_table(o: &mut String, meta: &serde_json::Value, extra: &[(&str, String)]) {
    let _ = writeln!(o, "<table class=\"meta\">");
    for (k, v) in extra {
        let _ = writeln!(o, "<tr><th class=\"l\">{}</th><td>{}</td></tr>", esc(k), esc(v));
    }
    if let Some(m) = meta.as_object() {
        for (k, v) in m {
            let s = match v {
                serde_json::Value::String(s) => esc(s),
                serde_json::Value::Number(n) if n.is_f64() => format!("{:.3}", n.as_f64().unwrap_or(0.0)),
                // Counters (tcp_counters): one "name value" line each, not JSON.
                serde_json::Value::Object(_) => counter_lines(v, "").join("<br>"),
                other => esc(&other.to_string()),
            };
            let _ = writeln!(o, "<tr><th class=\"l\">{}</th><td>{}</td></tr>", esc(k), s);
        }
    }
    let _ = writeln!(o, "</table>");
}

fn table_html(t: &Table, max_rows: usize) -> String {
    let mut o = String::from("<table><tr>");
    for h in &t.headers {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    o.push_str("</tr>\n");
    for r in t.rows.iter().take(max_rows) {
        o.push_str("<tr>");
        for c in r {
            let shown = match c.parse::<f64>() {
                Ok(v) if c.contains('.') || c.contains('e') => crate::plot::tick(v),
                _ => c.clone(),
            };
            let _ = write!(o, "<td>{}</td>", esc(&shown));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
    if t.rows.len() > max_rows {
        let _ = writeln!(o, "<p>{} more rows in the CSV.</p>", t.rows.len() - max_rows);
    }
    o
}

fn plots_html(o: &mut String, figs: Vec<figures::Figure>) -> io::Result<()> {
    let _ = writeln!(o, "<h2>Plots</h2>");
    if figs.is_empty() {
        let _ = writeln!(o, "<p>No time series to plot.</p>");
    }
    for f in figs {
        let svg = crate::plot::svg_string(&f.plot).map_err(io::Error::other)?;
        // Drop the XML declaration: the SVG is inlined in HTML.
        let svg = match svg.find("<svg") {
            Some(i) => &svg[i..],
            None => &svg[..],
        };
        let _ = writeln!(o, "<figure id=\"{}\">{}<figcaption>{}</figcaption></figure>", esc(&f.name), svg, esc(f.plot.title()));
    }
    Ok(())
}

fn run_body(o: &mut String, dir: &Path) -> io::Result<String> {
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json"))?).map_err(io::Error::other)?;
    let meta: serde_json::Value = std::fs::read_to_string(dir.join("meta.json")).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    let name = s["scenario"].as_str().unwrap_or("run").to_string();
    let _ = writeln!(o, "<h1>mplab run: {}</h1>", esc(&name));
    let _ = writeln!(o, "<p>{} backend, seed {}, {} s</p>", opt(&s["backend"], 0), opt(&s["seed"], 0), opt(&s["duration_s"], 1));
    let _ = writeln!(o, "<h2>Summary</h2>\n<table><tr><th class=\"l\">flow</th><th>transport</th><th>goodput (Mbit/s)</th><th>bytes</th><th>retrans</th><th>RTOs</th><th>mean srtt (ms)</th><th>completion (s)</th><th>verified</th></tr>");
    for f in s["flows"].as_array().into_iter().flatten() {
        let v = f["verified"] == true;
        let _ = writeln!(
            o,
            "<tr><td class=\"l\">{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td{}>{}</td></tr>",
            opt(&f["name"], 0),
            opt(&f["transport"], 0),
            if f["fallback"] == true { " (fallback)" } else { "" },
            mbit(f["goodput_bps"].as_f64()),
            opt(&f["bytes_delivered"], 0),
            opt(&f["retransmitted_segments"], 0),
            opt(&f["rto_count"], 0),
            opt(&f["mean_srtt_ms"], 1),
            opt(&f["completion_time_s"], 3),
            if v { "" } else { " class=\"bad\"" },
            if v { "yes" } else { "NO" }
        );
        for sf in f["subflows"].as_array().into_iter().flatten().filter(|_| f["subflows"].as_array().is_some_and(|a| a.len() > 1)) {
            let _ = writeln!(
                o,
                "<tr><td class=\"l\">&nbsp;&nbsp;{} → {}{}</td><td></td><td>{}</td><td>{}</td><td>{}</td><td></td><td></td><td></td><td></td></tr>",
                opt(&sf["local"], 0),
                opt(&sf["remote"], 0),
                if sf["backup"] == true { " (backup)" } else { "" },
                mbit(sf["goodput_bps"].as_f64()),
                opt(&sf["bytes_sent"], 0),
                opt(&sf["retransmitted_segments"], 0)
            );
        }
    }
    let _ = writeln!(o, "</table>\n<table><tr><th class=\"l\">interface</th><th>tx (Mbit/s)</th><th>rx (Mbit/s)</th></tr>");
    for i in s["interfaces"].as_array().into_iter().flatten() {
        let _ = writeln!(o, "<tr><td class=\"l\">{}:{}</td><td>{}</td><td>{}</td></tr>", opt(&i["node"], 0), opt(&i["iface"], 0), mbit(i["tx_bps"].as_f64()), mbit(i["rx_bps"].as_f64()));
    }
    let _ = writeln!(o, "</table>");
    for n in s["notes"].as_array().into_iter().flatten() {
        let _ = writeln!(o, "<p>note: {}</p>", opt(n, 0));
    }
    plots_html(o, figures::run_figures(dir)?)?;
    let _ = writeln!(o, "<h2>Links</h2><table><tr><th class=\"l\">link</th><th>dir</th><th>packets</th><th>queue drops</th><th>loss drops</th><th>down drops</th><th>max queue (B)</th></tr>");
    for l in s["links"].as_array().into_iter().flatten() {
        let _ = writeln!(
            o,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            opt(&l["name"], 0),
            opt(&l["direction"], 0),
            opt(&l["tx_packets"], 0),
            opt(&l["drops_queue"], 0),
            opt(&l["drops_loss"], 0),
            opt(&l["drops_down"], 0),
            opt(&l["max_queue_bytes"], 0)
        );
    }
    let _ = writeln!(o, "</table>");
    let _ = writeln!(o, "<h2>Run metadata</h2>");
    // Seed and backend head the page; meta.json has them too.
    let mut extra = vec![("results directory", dir.display().to_string())];
    for k in ["seed", "backend"] {
        if meta.get(k).is_none() {
            extra.push((k, opt(&s[k], 0)));
        }
    }
    meta_table(o, &meta, &extra);
    // The file as its author wrote it (as the sweep report shows it); the
    // resolved document with the overrides applied follows, folded.
    if let Ok(src) = std::fs::read_to_string(dir.join("scenario.source.toml")) {
        let _ = writeln!(o, "<h2>Scenario</h2><pre>{}</pre>", esc(&src));
    }
    if let Ok(sc) = std::fs::read_to_string(dir.join("scenario.toml")) {
        let _ = writeln!(o, "<details><summary>Scenario as run (every default and override applied)</summary><pre>{}</pre></details>", esc(&sc));
    }
    Ok(name)
}

/// What each point cost: wall time per run (mean and max over seeds) and
/// the total, from runs.csv (one "all" row per run).
fn wall_times(o: &mut String, dir: &Path, params: &[String]) {
    let runs = Table::read_csv(&dir.join("runs.csv")).unwrap_or_default();
    let mut per_point: Vec<(String, Vec<f64>)> = Vec::new();
    for r in (0..runs.rows.len()).filter(|&r| runs.str(r, "flow") == "all") {
        let Some(w) = runs.num(r, "wall_time_s") else { continue };
        let label = params.iter().map(|p| format!("{p}={}", runs.str(r, p))).collect::<Vec<_>>().join(", ");
        match per_point.iter_mut().find(|(l, _)| *l == label) {
            Some((_, v)) => v.push(w),
            None => per_point.push((label, vec![w])),
        }
    }
    if per_point.is_empty() {
        return;
    }
    let total: f64 = per_point.iter().flat_map(|(_, v)| v).sum();
    let n: usize = per_point.iter().map(|(_, v)| v.len()).sum();
    let mut t = Table::new(&["point", "runs", "wall per run (s, mean)", "max (s)"]);
    for (l, v) in &per_point {
        let max = v.iter().cloned().fold(0.0, f64::max);
        t.push(vec![l.clone(), v.len().to_string(), format!("{:.2}", v.iter().sum::<f64>() / v.len() as f64), format!("{max:.2}")]);
    }
    let _ = writeln!(o, "<h2>Wall time</h2><p>{n} runs, {total:.1} s of simulation wall time in all (runs in parallel take less).</p>{}", table_html(&t, 400));
}

fn sweep_body(o: &mut String, dir: &Path) -> io::Result<String> {
    let spec: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("sweep.json"))?).map_err(io::Error::other)?;
    let meta: serde_json::Value = std::fs::read_to_string(dir.join("meta.json")).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    let sc = std::fs::read_to_string(dir.join("scenario.toml")).unwrap_or_default();
    let name = sc.parse::<toml::Table>().ok().and_then(|t| t.get("name").and_then(|n| n.as_str()).map(String::from)).unwrap_or_else(|| "sweep".into());
    let _ = writeln!(o, "<h1>mplab sweep: {}</h1>", esc(&name));
    let params: Vec<String> = spec["params"].as_array().into_iter().flatten().filter_map(|p| p.as_str().map(String::from)).collect();
    let _ = writeln!(
        o,
        "<p>{} points × {} seeds; parameters: {}</p>",
        spec["points"].as_array().map(|a| a.len()).unwrap_or(0),
        spec["seeds"].as_array().map(|a| a.len()).unwrap_or(0),
        esc(&params.join(", "))
    );
    // The summary tables: mean ± 95 % CI of goodput per point, for the
    // run's total first (then the plots), and per flow after the plots.
    let agg = Table::read_csv(&dir.join("aggregate.csv")).unwrap_or_default();
    let flows: std::collections::BTreeSet<&str> = (0..agg.rows.len()).map(|r| agg.str(r, "flow")).filter(|f| *f != "all").collect();
    let table = |keep: &dyn Fn(&str) -> bool| {
        let mut t = Table::new(&[]);
        t.headers = params.clone();
        t.headers.extend(["flow", "n", "goodput (Mbit/s)", "± 95 % CI", "stdev", "mean srtt (ms)", "retrans"].iter().map(|s| s.to_string()));
        for r in (0..agg.rows.len()).filter(|&r| keep(agg.str(r, "flow"))) {
            let mut row: Vec<String> = params.iter().map(|p| agg.str(r, p).to_string()).collect();
            row.push(agg.str(r, "flow").into());
            row.push(agg.str(r, "n").into());
            for (c, k) in [("goodput_bps_mean", 1e-6), ("goodput_bps_ci95", 1e-6), ("goodput_bps_stdev", 1e-6), ("mean_srtt_ms_mean", 1.0), ("retransmitted_segments_mean", 1.0)] {
                row.push(agg.num(r, c).map(|v| format!("{:.3}", v * k)).unwrap_or_else(|| "-".into()));
            }
            t.push(row);
        }
        t
    };
    if flows.len() > 1 {
        let _ = writeln!(o, "<h2>Summary: all flows of a run together (mean across seeds)</h2>{}", table_html(&table(&|f| f == "all"), 400));
    } else {
        let _ = writeln!(o, "<h2>Summary (mean across seeds)</h2>{}", table_html(&table(&|f| f != "all"), 400));
    }
    plots_html(o, figures::sweep_figures(dir)?)?;
    if flows.len() > 1 {
        let _ = writeln!(o, "<h2>Per flow (mean across seeds)</h2>{}", table_html(&table(&|f| f != "all"), 1000));
    }
    wall_times(o, dir, &params);
    let _ = writeln!(o, "<h2>Run metadata</h2>");
    meta_table(o, &meta, &[("results directory", dir.display().to_string()), ("seeds", spec["seeds"].to_string()), ("fixed overrides", spec["fixed"].to_string())]);
    let _ = writeln!(o, "<h2>Scenario</h2><pre>{}</pre>", esc(&sc));
    Ok(name)
}

/// A `mplab validate` directory: the table of every case and metric, the
/// simulator's two profiles and the real backends side by side.
fn validate_body(o: &mut String, dir: &Path) -> io::Result<String> {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("validate.json"))?).map_err(io::Error::other)?;
    let name = format!("validate {}", v["suite"].as_str().unwrap_or("?"));
    let _ = writeln!(o, "<h1>mplab {}</h1><p>Suite file {}; the simulator with <code>profile = \"linux\"</code> against the kernel backend (docs/validation.md).</p>", esc(&name), esc(v["file"].as_str().unwrap_or("")));
    let rows = v["rows"].as_array().cloned().unwrap_or_default();
    let cols: Vec<String> = rows.first().and_then(|r| r["cells"].as_array()).into_iter().flatten().filter_map(|c| c["column"].as_str().map(String::from)).collect();
    let _ = write!(o, "<h2>Cases</h2><table><tr><th class=\"l\">case</th><th class=\"l\">metric</th>");
    for c in &cols {
        let _ = write!(o, "<th>{}</th>", esc(c));
    }
    let _ = writeln!(o, "<th>diff</th><th>tolerance</th><th class=\"l\">verdict</th></tr>");
    let f = |x: &serde_json::Value| x.as_f64().map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
    for r in &rows {
        let unit = r["unit"].as_str().unwrap_or("");
        let _ = write!(o, "<tr><td class=\"l\" title=\"{}\">{}</td><td class=\"l\">{}{}</td>", esc(r["description"].as_str().unwrap_or("")), esc(r["case"].as_str().unwrap_or("")), esc(r["metric"].as_str().unwrap_or("")), if unit.is_empty() { String::new() } else { format!(" ({})", esc(unit)) });
        for c in r["cells"].as_array().into_iter().flatten() {
            let cell = match c["missing"].as_str() {
                Some(m) => format!("missing: {}", esc(m)),
                None => format!("{} [{}–{}]", f(&c["mean"]), f(&c["min"]), f(&c["max"])),
            };
            let _ = write!(o, "<td>{cell}</td>");
        }
        let verdict = r["verdict"].as_str().unwrap_or("");
        let cls = if verdict == "pass" { "l" } else { "l bad" };
        let _ = writeln!(o, "<td>{}</td><td>{} {}</td><td class=\"{cls}\">{}</td></tr>", f(&r["diff"]), f(&r["tolerance"]), esc(r["tolerance_from"].as_str().unwrap_or("")), esc(verdict));
    }
    let _ = writeln!(o, "</table>");
    Ok(name)
}

/// Writes the report; returns its path (`DIR/report.html` unless `out` is given).
pub fn write_report(dir: &Path, out: Option<&Path>) -> io::Result<std::path::PathBuf> {
    // A results directory holds one of these; say so rather than name the
    // first file a body reader misses.
    if !["validate.json", "sweep.json", "summary.json"].iter().any(|f| dir.join(f).exists()) {
        let what = if dir.is_dir() { "not a results directory (no summary.json, sweep.json or validate.json: mplab run, sweep or validate writes one)" } else { "no such directory" };
        return Err(io::Error::new(io::ErrorKind::NotFound, what));
    }
    let mut body = String::new();
    let name = if dir.join("validate.json").exists() {
        validate_body(&mut body, dir)?
    } else if figures::is_sweep(dir) {
        sweep_body(&mut body, dir)?
    } else {
        run_body(&mut body, dir)?
    };
    let html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>mplab report: {}</title><style>{CSS}</style></head><body>\n{body}<p style=\"color:#888;font-size:12px\">mplab {} report, self-contained (no external resources).</p></body></html>\n",
        esc(&name),
        env!("CARGO_PKG_VERSION")
    );
    let path = out.map(Path::to_path_buf).unwrap_or_else(|| dir.join("report.html"));
    std::fs::write(&path, html)?;
    Ok(path)
}
