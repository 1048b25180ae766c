//! `mplab sweep`, `plot`, `report` and `compare` end to end on the
//! simulator: a 2 x 2 grid x 2 seeds with its per-run rows, statistics,
//! Parquet files (read back by pandas when it is installed), plots and
//! report; resumption after Ctrl-C; errors with file, line and field.

mod lab_common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lab_common::*;

/// A 2 x 2 grid (rate x delay) x 2 seeds of two-paths, 2 s each, with 1 %
/// loss so that seeds differ.
fn tiny_sweep(tmp: &Scratch, out: &Path, extra: &[&str]) -> Out {
    let mut args = tiny_sweep_args(out);
    args.extend(extra.iter().map(|s| s.to_string()));
    mplab(&tmp.0, &args)
}

#[test]
fn sweep_grid_writes_rows_statistics_parquet_plots_and_report() {
    let tmp = Scratch::new("sweep-grid");
    let out = tmp.join("sw");
    let r = tiny_sweep(&tmp, &out, &[]);
    assert_eq!(r.code, 0, "sweep failed:\n{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("8 of 8 runs finished (8 this time, 0 already there)"), "{}", r.stdout);

    // One results directory per point and seed, each a full run directory.
    let runs_dir = out.join("runs");
    let points: Vec<_> = std::fs::read_dir(&runs_dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(points.len(), 4, "{points:?}");
    for p in &points {
        for s in ["seed-1", "seed-2"] {
            for f in ["summary.json", "flows.csv", "flows.parquet", "interfaces.csv", "meta.json", "scenario.toml"] {
                assert!(p.join(s).join(f).exists(), "{}/{s}/{f} missing", p.display());
            }
        }
    }

    // runs.csv: one row per run and flow plus the run's total (flow "all").
    let (h, rows) = read_csv(&out.join("runs.csv"));
    for c in ["point", "topology.rate", "topology.delay", "seed", "flow", "goodput_bps", "mean_srtt_ms", "retransmitted_segments", "wall_time_s"] {
        col(&h, c);
    }
    // Every run says what it cost (its meta.json's wall time).
    assert!(rows.iter().all(|r| r[col(&h, "wall_time_s")].parse::<f64>().is_ok_and(|w| w > 0.0)), "wall_time_s");
    assert_eq!(rows.len(), 16, "8 runs x (bulk + all)");
    let (rate, delay, seed, flow, gp) = (col(&h, "topology.rate"), col(&h, "topology.delay"), col(&h, "seed"), col(&h, "flow"), col(&h, "goodput_bps"));
    let mut combos: Vec<(String, String, String)> = rows.iter().filter(|r| r[flow] == "bulk").map(|r| (r[rate].clone(), r[delay].clone(), r[seed].clone())).collect();
    combos.sort();
    combos.dedup();
    assert_eq!(combos.len(), 8, "{combos:?}");
    let delays: std::collections::BTreeSet<&str> = rows.iter().map(|r| r[delay].as_str()).collect();
    assert_eq!(delays.into_iter().collect::<Vec<_>>(), ["10ms", "5ms"], "5ms..10ms:5ms expands to 5ms, 10ms");
    // The goodput in runs.csv is the run's summary.json.
    for r in rows.iter().filter(|r| r[flow] == "bulk") {
        let pid = &r[col(&h, "point")];
        let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(runs_dir.join(pid).join(format!("seed-{}", r[seed])).join("summary.json")).unwrap()).unwrap();
        let g = s["flows"][0]["goodput_bps"].as_f64().unwrap();
        assert!((r[gp].parse::<f64>().unwrap() - g).abs() < 1e-6 * g, "{r:?} vs {g}");
        assert_eq!(s["seed"].as_u64().unwrap().to_string(), r[seed]);
        let limit = if r[rate] == "10Mbit" { 2.0 * 10e6 } else { 2.0 * 20e6 };
        assert!(g > 0.3 * limit && g < limit, "goodput {g} for {r:?}");
    }
    // Seeds really differ (1 % loss), so the statistics mean something.
    let g1: Vec<f64> = rows.iter().filter(|r| r[flow] == "bulk" && r[seed] == "1").map(|r| r[gp].parse().unwrap()).collect();
    let g2: Vec<f64> = rows.iter().filter(|r| r[flow] == "bulk" && r[seed] == "2").map(|r| r[gp].parse().unwrap()).collect();
    assert_ne!(g1, g2, "seeds 1 and 2 gave identical goodputs");

    // aggregate.csv: mean, stdev and 95 % CI (t with 1 degree of freedom) per point and flow.
    let (ah, arows) = read_csv(&out.join("aggregate.csv"));
    assert_eq!(arows.len(), 8, "4 points x (bulk + all)");
    for a in &arows {
        assert_eq!(a[col(&ah, "n")], "2");
        let xs: Vec<f64> = rows.iter().filter(|r| r[0] == a[col(&ah, "point")] && r[flow] == a[col(&ah, "flow")]).map(|r| r[gp].parse().unwrap()).collect();
        assert_eq!(xs.len(), 2);
        let mean = (xs[0] + xs[1]) / 2.0;
        let sd = ((xs[0] - mean).powi(2) + (xs[1] - mean).powi(2)).sqrt();
        let ci = 12.706 * sd / 2f64.sqrt();
        let get = |c: &str| a[col(&ah, c)].parse::<f64>().unwrap();
        assert!((get("goodput_bps_mean") - mean).abs() <= 1e-6 * mean, "{a:?}");
        assert!((get("goodput_bps_stdev") - sd).abs() <= 1e-6 * mean, "{a:?}");
        assert!((get("goodput_bps_ci95") - ci).abs() <= 1e-6 * mean, "{a:?}");
    }

    // Parquet twins, plots and the sweep's description.
    for f in ["runs.parquet", "aggregate.parquet"] {
        let b = std::fs::read(out.join(f)).unwrap();
        assert!(b.len() > 8 && &b[..4] == b"PAR1" && &b[b.len() - 4..] == b"PAR1", "{f} is not Parquet");
    }
    let png = std::fs::read(out.join("plots/goodput_vs_rate.png")).expect("goodput_vs_rate.png");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 10_000, "suspiciously small PNG ({} bytes)", png.len());
    let svg = std::fs::read_to_string(out.join("plots/goodput_vs_rate.svg")).unwrap();
    for t in ["topology.rate (Mbit/s)", "goodput (Mbit/s)", "delay=5ms", "delay=10ms"] {
        assert!(svg.contains(t), "plot lacks {t:?}");
    }
    let sweep: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(sweep["points"].as_array().unwrap().len(), 4);
    assert_eq!(sweep["seeds"], serde_json::json!([1, 2]));

    // The report: one self-contained HTML file.
    let r = mplab(&tmp.0, &["report", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.matches("<svg").count() >= 2, "the report has no inline plots");
    for t in ["Summary (mean across seeds)", "Run metadata", "mplab_version", "two-paths", "topology.rate", "Wall time", "wall per run"] {
        assert!(html.contains(t), "report lacks {t:?}");
    }
    for bad in ["src=\"http", "href=\"http", "<script", "<link"] {
        assert!(!html.contains(bad), "the report fetches something: {bad}");
    }

    // A run directory gets its own plots and report too.
    let run = points[0].join("seed-1");
    let r = mplab(&tmp.0, &["plot", run.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for f in ["goodput_time.png", "goodput_time.svg", "interfaces_time.png", "cwnd_time.png", "srtt_time.png"] {
        assert!(run.join("plots").join(f).exists(), "{f} missing");
    }
    let r = mplab(&tmp.0, &["report", run.to_str().unwrap(), "--out", tmp.join("run.html").to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let html = std::fs::read_to_string(tmp.join("run.html")).unwrap();
    for t in ["Goodput over time per flow and subflow", "wall_time_s", "seed", "[topology]"] {
        assert!(html.contains(t), "run report lacks {t:?}");
    }

    // A second sweep with the same arguments runs nothing.
    let r = tiny_sweep(&tmp, &out, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("(0 this time, 8 already there)"), "{}", r.stdout);
}

#[test]
fn parquet_files_load_in_pandas() {
    if !need("python3", &["-c", "import pandas, pyarrow"], "python3 with pandas and pyarrow") {
        return;
    }
    let tmp = Scratch::new("pandas");
    let out = tmp.join("sw");
    let sc = scenario("two-paths.toml");
    let r = mplab(
        &tmp.0,
        &[
            "sweep",
            sc.to_str().unwrap(),
            "--param",
            "transport.mptcp.subflows=1,2",
            "--seeds",
            "2",
            "--set",
            "duration=1s",
            "--set",
            "probes.pcap=[]",
            "--no-plots",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let run = std::fs::read_dir(out.join("runs")).unwrap().next().unwrap().unwrap().path().join("seed-1");
    let script = r#"
import sys, pandas as pd
ok = True
for base in sys.argv[1:]:
    p = pd.read_parquet(base + ".parquet")
    c = pd.read_csv(base + ".csv", keep_default_na=True)
    assert list(p.columns) == list(c.columns), (base, list(p.columns), list(c.columns))
    assert len(p) == len(c), (base, len(p), len(c))
    for col in p.columns:
        if pd.api.types.is_numeric_dtype(c[col]):
            assert pd.api.types.is_numeric_dtype(p[col]), (base, col, p[col].dtype)
            d = (p[col].astype(float) - c[col].astype(float)).abs().max()
            assert not (d > 1e-9 * max(1.0, c[col].abs().max())), (base, col, d)
        else:
            assert (p[col].fillna("").astype(str) == c[col].fillna("").astype(str)).all(), (base, col)
    print(base, len(p), "rows ok", dict(p.dtypes.astype(str)))
"#;
    let args: Vec<String> =
        vec![out.join("runs").display().to_string(), out.join("aggregate").display().to_string(), run.join("flows").display().to_string(), run.join("interfaces").display().to_string()];
    let o = Command::new("python3").arg("-c").arg(script).args(&args).output().unwrap();
    let so = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "pandas could not read the Parquet files:\n{so}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(so.contains("'seed': 'int64'") && so.contains("'goodput_bps': 'float64'"), "{so}");
}

fn finished(out: &Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    for p in std::fs::read_dir(out.join("runs")).into_iter().flatten().flatten() {
        for s in std::fs::read_dir(p.path()).into_iter().flatten().flatten() {
            if s.path().join("summary.json").exists() {
                v.push(s.path());
            }
        }
    }
    v.sort();
    v
}

#[test]
fn interrupted_sweep_resumes_with_only_the_missing_runs() {
    let tmp = Scratch::new("resume");
    let out = tmp.join("sw");
    let sc = scenario("tcp-single.toml");
    let args = [
        "sweep",
        sc.to_str().unwrap(),
        "--param",
        "links.0.rate=20Mbit,21Mbit,22Mbit,23Mbit,24Mbit,25Mbit,26Mbit,27Mbit",
        "--set",
        "duration=20s",
        "--set",
        "probes.pcap=[]",
        "--jobs",
        "1",
        "--no-plots",
        "--out",
        out.to_str().unwrap(),
    ];
    let child = Command::new(env!("CARGO_BIN_EXE_mplab")).args(args).current_dir(&tmp.0).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let t0 = Instant::now();
    while finished(&out).len() < 2 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Ctrl-C.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let kept = finished(&out);
    assert!(kept.len() >= 2 && kept.len() < 8, "{} runs finished before Ctrl-C took effect; the test needs slower runs", kept.len());
    assert_eq!(o.status.code(), Some(1), "an interrupted sweep exits 1: {stderr}");
    assert!(stderr.contains("interrupted") && stderr.contains("run the same command again"), "{stderr}");
    let partial: Vec<_> =
        std::fs::read_dir(out.join("runs")).unwrap().flatten().flat_map(|p| std::fs::read_dir(p.path()).unwrap().flatten()).filter(|e| e.file_name().to_string_lossy().ends_with(".partial")).collect();
    assert!(partial.is_empty(), "half-written runs left behind: {partial:?}");
    let before: Vec<(std::path::PathBuf, String)> = kept.iter().map(|p| (p.clone(), std::fs::read_to_string(p.join("meta.json")).unwrap())).collect();

    // The same command again: only the missing runs.
    let r = mplab(&tmp.0, &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let k = kept.len();
    assert!(r.stdout.contains(&format!("8 of 8 runs finished ({} this time, {k} already there)", 8 - k)), "{}", r.stdout);
    assert!(r.stderr.contains(&format!("{k} already done, {} to run", 8 - k)), "{}", r.stderr);
    for (p, meta) in before {
        assert_eq!(std::fs::read_to_string(p.join("meta.json")).unwrap(), meta, "{} was run again", p.display());
    }
    assert_eq!(finished(&out).len(), 8);
    let (_, rows) = read_csv(&out.join("runs.csv"));
    assert_eq!(rows.len(), 16);

    // Stopping after N runs (--max-runs) and growing the grid reuse what is there.
    let r = mplab(
        &tmp.0,
        &["sweep", sc.to_str().unwrap(), "--param", "links.0.rate=20Mbit,21Mbit,30Mbit", "--set", "duration=20s", "--set", "probes.pcap=[]", "--no-plots", "-q", "--out", out.to_str().unwrap()],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(finished(&out).len(), 9, "only the new point ran");
}

#[test]
fn sweep_errors_name_file_line_and_field() {
    let tmp = Scratch::new("errors");
    let spec = tmp.join("bad.sweep.toml");
    let sc = scenario("tcp-single.toml");
    std::fs::write(&spec, format!("[sweep]\nscenario = {:?}\nseeds = 2\n\n[[sweep.param]]\npath = \"links.0.rate\"\nvalues = \"6..1\"\n", sc.display().to_string())).unwrap();
    let r = mplab(&tmp.0, &["sweep", spec.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("bad.sweep.toml:7:10: sweep.param[0].values:") && r.stderr.contains("below the start"), "{}", r.stderr);

    std::fs::write(&spec, format!("[sweep]\nscenario = {:?}\nseedz = 2\n", sc.display().to_string())).unwrap();
    let r = mplab(&tmp.0, &["sweep", spec.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("bad.sweep.toml:3:1:") && r.stderr.contains("seedz"), "{}", r.stderr);

    // A bad value at one point names the point and the scenario field; nothing runs.
    let out = tmp.join("o");
    let r = mplab(&tmp.0, &["sweep", sc.to_str().unwrap(), "--param", "links.0.rate=10Mbit,10Mbt", "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("point links.0.rate=10Mbt") && r.stderr.contains("tcp-single.toml") && r.stderr.contains("links[0].rate"), "{}", r.stderr);
    assert!(!out.join("runs").exists(), "runs started despite a bad point");

    // An algorithm the simulator lacks is a usage error before anything runs.
    let r = mplab(&tmp.0, &["sweep", sc.to_str().unwrap(), "--param", "transport.tcp.cc=cubic,nosuchcc", "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("not implemented by the simulator") && r.stderr.contains("transport.tcp.cc"), "{}", r.stderr);

    for (args, want) in [(vec!["--param", "links.0.rate"], "PATH=VALUES"), (vec!["--param", "links.0.rate=1..6:0"], "positive"), (vec!["--seeds", "0"], "at least one seed")] {
        let mut a = vec!["sweep", sc.to_str().unwrap()];
        a.extend(args);
        let r = mplab(&tmp.0, &a);
        assert_eq!(r.code, 2, "{a:?}: {}", r.stderr);
        assert!(r.stderr.contains(want), "{a:?}: {}", r.stderr);
    }
}

#[test]
fn compare_two_configurations() {
    let tmp = Scratch::new("compare");
    let sc = scenario("tcp-single.toml");
    for (dir, rate) in [("a", "10Mbit"), ("b", "5Mbit")] {
        let r = mplab(&tmp.0, &["run", sc.to_str().unwrap(), "--set", "duration=3s", "--set", &format!("links.0.rate={rate}"), "-q", "--out", tmp.join(dir).to_str().unwrap()]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let r = mplab(&tmp.0, &["compare", tmp.join("a").to_str().unwrap(), tmp.join("b").to_str().unwrap(), "--out", tmp.join("cmp").to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let line = r.stdout.lines().find(|l| l.starts_with("flow bulk goodput_bps")).unwrap_or_else(|| panic!("{}", r.stdout));
    let pct: f64 = line.split_whitespace().last().unwrap().trim_end_matches('%').parse().unwrap();
    assert!((-55.0..-45.0).contains(&pct), "half the rate, about half the goodput: {line}");
    let (h, rows) = read_csv(&tmp.join("cmp/compare.csv"));
    assert_eq!(h, ["metric", "a", "b", "diff", "rel_diff_pct"]);
    assert!(rows.iter().any(|r| r[0] == "iface client:eth0 tx_bps"));
    for f in ["compare_diff.png", "compare_diff.svg", "compare_goodput_time.png"] {
        assert!(tmp.join("cmp").join(f).exists(), "{f} missing");
    }
    let r = mplab(&tmp.0, &["compare", tmp.join("a").to_str().unwrap(), tmp.join("nowhere").to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("nowhere"), "{}", r.stderr);
}

#[test]
fn help_shows_commands_and_examples() {
    let tmp = Scratch::new("help");
    let r = mplab(&tmp.0, &["--help"]);
    assert_eq!(r.code, 0);
    for t in ["sweep", "report", "compare", "plot", "--quiet", "--verbose", "Examples:", "Exit codes"] {
        assert!(r.stdout.contains(t), "mplab --help lacks {t}:\n{}", r.stdout);
    }
    let r = mplab(&tmp.0, &["sweep", "--help"]);
    assert_eq!(r.code, 0);
    for t in ["--param", "--point", "--seeds", "--jobs", "START..END[:STEP]", "Examples:"] {
        assert!(r.stdout.contains(t), "mplab sweep --help lacks {t}:\n{}", r.stdout);
    }
    assert!(r.stdout.lines().any(|l| l.trim().starts_with("mplab sweep scenarios/two-paths.toml --param")), "{}", r.stdout);
    for cmd in ["report", "compare", "plot"] {
        let r = mplab(&tmp.0, &[cmd, "--help"]);
        assert_eq!(r.code, 0);
        assert!(r.stdout.contains("Example"), "{cmd} --help has no example:\n{}", r.stdout);
    }
    let r = mplab(&tmp.0, &["sweep"]);
    assert_eq!(r.code, 2, "a usage error exits 2");
}

#[test]
fn explicit_points_from_flags_and_a_file() {
    let tmp = Scratch::new("points");
    let sc = scenario("two-paths.toml");
    let pts = tmp.join("points.txt");
    std::fs::write(&pts, "# two points\ntopology.rate=10Mbit; topology.delay=[\"5ms\", \"20ms\"]\ntopology.rate=20Mbit;topology.delay=5ms\n").unwrap();
    let out = tmp.join("o");
    let r = mplab(&tmp.0, &["sweep", sc.to_str().unwrap(), "--points", pts.to_str().unwrap(), "--set", "duration=1s", "--set", "probes.pcap=[]", "-q", "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (h, rows) = read_csv(&out.join("runs.csv"));
    let d = col(&h, "topology.delay");
    let mut got: Vec<&str> = rows.iter().map(|r| r[d].as_str()).collect();
    got.dedup();
    assert_eq!(got, ["[\"5ms\", \"20ms\"]", "5ms"]);
    let r = mplab(
        &tmp.0,
        &[
            "sweep",
            sc.to_str().unwrap(),
            "--point",
            "topology.rate=10Mbit;topology.paths=1",
            "--point",
            "topology.rate=30Mbit",
            "--set",
            "duration=1s",
            "--set",
            "probes.pcap=[]",
            "-q",
            "--out",
            tmp.join("o2").to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (_, rows) = read_csv(&tmp.join("o2/runs.csv"));
    assert_eq!(rows.len(), 4);
}
