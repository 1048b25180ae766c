//! `mplab trace-link` on the bundled traces and on bad files.

use std::path::PathBuf;
use std::process::Command;

fn mplab(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_mplab")).args(args).output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn bundled(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/traces").join(name).to_string_lossy().into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mplab-trace-link-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// scenarios/traces/README.md: both traces were made by `mplab trace-gen
/// --mean M --duration 60s`. trace-gen accumulates M/1000 bits a
/// millisecond and writes an opportunity each time 1500 bytes have built
/// up, so a 60 s trace holds M × 60 s / 12000 bit opportunities less what
/// is left over (under one) and at most one more lost to floating-point
/// rounding in the accumulation: within 2 opportunities, 2 × 12000 bit /
/// 60 s = 400 bit/s = 0.0004 Mbit/s of the mean. (The period is the last
/// opportunity's millisecond, 60000 for both, checked too: a trace ending
/// in an outage would be shorter and its mean higher.)
#[test]
fn bundled_traces_have_the_mean_they_were_generated_with() {
    const TOLERANCE_MBPS: f64 = 2.0 * 12_000.0 / 60.0 / 1e6;
    for (file, mean) in [("lte-commuter-10mbit.trace", 10.0), ("lte-steady-5mbit.trace", 5.0)] {
        let (code, out, err) = mplab(&["trace-link", &bundled(file), "--json"]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["kind"], "mahimahi");
        assert_eq!(v["duration_s"].as_f64(), Some(60.0), "{file}");
        let got = v["mean_mbps"].as_f64().unwrap();
        assert!((got - mean).abs() <= TOLERANCE_MBPS, "{file}: mean {got} Mbit/s, generated with {mean}");
        // 600 windows of 100 ms; their mean is the trace's (equal windows).
        let w = v["windows_mbps"].as_array().unwrap();
        assert_eq!(w.len(), 600);
        let avg = w.iter().map(|x| x.as_f64().unwrap()).sum::<f64>() / 600.0;
        assert!((avg - got).abs() < 1e-9, "{avg} vs {got}");
        let p = &v["percentiles"];
        assert!(p["min"].as_f64() <= p["p5"].as_f64() && p["p5"].as_f64() <= p["median"].as_f64() && p["median"].as_f64() <= p["p95"].as_f64() && p["p95"].as_f64() <= p["max"].as_f64(), "{p}");
    }
    // trace-gen: the steady profile has no outages (it stays within
    // ±15 % of its mean); the commuter one has some.
    let (_, out, _) = mplab(&["trace-link", &bundled("lte-steady-5mbit.trace"), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["outages"]["count"], 0);
    assert!(v["percentiles"]["min"].as_f64().unwrap() > 0.8 * 5.0 && v["percentiles"]["max"].as_f64().unwrap() < 1.2 * 5.0, "{}", v["percentiles"]);
    let (_, out, _) = mplab(&["trace-link", &bundled("lte-commuter-10mbit.trace"), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["outages"]["count"].as_u64().unwrap() > 0, "{}", v["outages"]);
}

/// The table, and --plot writing the PNG and the SVG.
#[test]
fn text_report_and_plot() {
    let dir = scratch("plot");
    let (code, out, err) = mplab(&["trace-link", &bundled("lte-steady-5mbit.trace"), "--window", "1s", "--plot", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("mean        5.000 Mbit/s") && out.contains("per 1000 ms window (60 windows)"), "{out}");
    let svg = std::fs::read_to_string(dir.join("lte-steady-5mbit-capacity.svg")).unwrap();
    assert!(svg.contains("capacity (Mbit/s)") && svg.contains("mean 5.00 Mbit/s"));
    assert!(std::fs::metadata(dir.join("lte-steady-5mbit-capacity.png")).unwrap().len() > 1000);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A bad line, a missing file: exit 2, the file and the line named.
#[test]
fn bad_files_exit_nonzero_naming_the_line() {
    let dir = scratch("bad");
    let bad = dir.join("bad.trace");
    std::fs::write(&bad, "1\n2\nabc\n").unwrap();
    let (code, _, err) = mplab(&["trace-link", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.trace:3: \"abc\" is not a whole number of milliseconds"), "{err}");
    let steps = dir.join("rates.csv");
    std::fs::write(&steps, "0s,10Mbit\n5s,0Mbit\n").unwrap();
    let (code, _, err) = mplab(&["trace-link", steps.to_str().unwrap(), "--json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("rates.csv:2: rate must be greater than 0"), "{err}");
    let (code, _, err) = mplab(&["trace-link", dir.join("missing.trace").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read trace") && err.contains("missing.trace"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
