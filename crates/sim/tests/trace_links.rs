//! Trace-driven links (`rate = { trace = ... }` / `{ steps = ... }`) on the
//! simulator: Mahimahi mm-link delivery (see crates/backend/src/link/trace.rs)
//! checked against figures computed by hand, rate steps, and the errors for
//! bad trace files.

mod support;

use std::path::PathBuf;

use mplab_scenario::Scenario;
use support::*;

/// A fresh directory holding `files` (name, text) and `scenario.toml`.
fn dir_with(test: &str, files: &[(&str, &str)], toml: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mplab-trace-links-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    for (name, text) in files {
        std::fs::write(d.join(name), text).unwrap();
    }
    std::fs::write(d.join("scenario.toml"), toml).unwrap();
    d
}

fn run_dir(d: &std::path::Path) -> mplab_sim::RunResults {
    run_scenario(Scenario::from_file(d.join("scenario.toml")).unwrap_or_else(|e| panic!("{e}")))
}

/// The resolve error for a scenario in `d`, as printed.
fn error_in(d: &std::path::Path) -> String {
    let sc = Scenario::from_file(d.join("scenario.toml")).unwrap_or_else(|e| panic!("{e}"));
    let e = sc.resolve().expect_err("a bad capacity file must be refused");
    let text = e.to_string();
    text.strip_prefix(&format!("{}/", d.display())).unwrap_or(&text).to_string()
}

/// client -> server over one link whose client-to-server direction has
/// `rate` (20 ms each way; the other direction 100 Mbit/s).
fn one_link(rate: &str, duration: &str, flows: &str) -> String {
    format!(
        r#"name = "trace"
duration = "{duration}"

[[nodes]]
name = "client"

[[nodes]]
name = "server"

[[links]]
name = "cell"
a = "client"
b = "server"
rate = "100Mbit"
delay = "20ms"
queue = {{ kind = "droptail", packets = 1000 }}
[links.ab]
rate = {rate}
{flows}"#
    )
}

const VOIP: &str = "\n[[flows]]\nname = \"call\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"udp\"\napp = \"voip\"\n";
const BULK: &str = "\n[[flows]]\nname = \"bulk\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"tcp\"\napp = \"bulk\"\n\n[probes]\ninterval = \"500ms\"\n";

/// The tiny trace 1,1,2,5,5,5 repeats every 5 ms: opportunities at
/// 1,1,2,5,5,5, 6,6,7,10,10,10, ... ms. A voice packet (160 B payload,
/// 188 B IP, 192 B with mm-link's 4-byte TUN header) is sent every 20 ms
/// from 0. At 20k ms the opportunities of that instant (the 5 ms ones of
/// the previous cycle) are already gone (mm-link runs the schedule up to
/// the arrival before queueing), so each leaves at 20k + 1 ms and arrives
/// 20 ms later: every delay is exactly 21 ms; nothing is lost.
#[test]
fn voice_over_a_tiny_trace_waits_one_ms_for_its_opportunity() {
    let d = dir_with("tiny", &[("tiny.trace", "1\n1\n2\n5\n5\n5\n")], &one_link("{ trace = \"tiny.trace\" }", "20s", VOIP));
    let r = run_dir(&d);
    let s = &r.summary.flows[0].datagrams.as_ref().unwrap().stream;
    assert_eq!((s.sent, s.received, s.late), (951, 951, 0));
    assert!((s.delay_p50_ms - 21.0).abs() < 1e-6 && (s.delay_max_ms - 21.0).abs() < 1e-6, "{} {}", s.delay_p50_ms, s.delay_max_ms);
    assert!(r.summary.notes.iter().any(|n| n == "link cell ab: trace tiny.trace (6 opportunities over 0.005 s, mean 14.400 Mbit/s, looping)"), "{:?}", r.summary.notes);
}

/// One opportunity every 20 ms, at 20, 40, ... ms: the packet sent at 0
/// takes the one at 20 ms; every later one arrives at the instant of an
/// opportunity, which is gone, and waits 20 ms for the next. Every delay
/// is 20 ms of waiting + 20 ms of propagation.
#[test]
fn an_opportunity_at_the_arrival_instant_is_already_gone() {
    let d = dir_with("instant", &[("every20.trace", "20\n")], &one_link("{ trace = \"every20.trace\" }", "20s", VOIP));
    let s = run_dir(&d).summary.flows[0].datagrams.clone().unwrap().stream;
    assert_eq!((s.sent, s.received), (951, 951));
    assert!((s.delay_p50_ms - 40.0).abs() < 1e-6 && (s.delay_max_ms - 40.0).abs() < 1e-6, "{} {}", s.delay_p50_ms, s.delay_max_ms);
}

/// loop = false: after 5 ms the link has no capacity. Only the packet
/// sent at 0 (opportunity at 1 ms) gets through; the results say when the
/// trace ended. Looping, every packet gets through.
#[test]
fn a_trace_that_does_not_loop_leaves_no_capacity_after_its_end() {
    let d = dir_with("once", &[("tiny.trace", "1\n1\n2\n5\n5\n5\n")], &one_link("{ trace = \"tiny.trace\", loop = false }", "20s", VOIP));
    let r = run_dir(&d);
    let s = &r.summary.flows[0].datagrams.as_ref().unwrap().stream;
    assert_eq!((s.sent, s.received), (951, 1));
    assert!(r.summary.notes.iter().any(|n| n == "link cell ab: trace tiny.trace ended at 0.005 s; no capacity after it"), "{:?}", r.summary.notes);
}

/// One 1500-byte opportunity per ms is 12 Mbit/s of IP packets; a bulk
/// TCP flow of 1500-byte segments (1448 B of payload) fills it: goodput
/// 12 * 1448 / 1500 = 11.58 Mbit/s over the run, less slow start
/// (measured 11.445).
#[test]
fn bulk_tcp_fills_a_constant_trace() {
    let d = dir_with("bulk", &[("1ms.trace", "1\n")], &one_link("{ trace = \"1ms.trace\" }", "10s", BULK));
    let g = run_dir(&d).summary.flows[0].goodput_bps / 1e6;
    eprintln!("constant trace: {g:.3} Mbit/s");
    assert!((11.0..=11.59).contains(&g), "{g}");
}

/// Mean goodput of the flow's connection rows with time in (from, to].
fn goodput_between(r: &mplab_sim::RunResults, from: f64, to: f64) -> f64 {
    let v: Vec<f64> = r.flows.iter().filter(|s| s.subflow == "all" && s.time_s > from && s.time_s <= to).map(|s| s.goodput_bps).collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64 / 1e6
}

/// 10 -> 1 -> 10 Mbit/s at 5 s and 10 s: past 1.5 s of settling after each
/// change the goodput is what TCP gets of the link, 1448 / 1500 of it:
/// 9.65, 0.965, 9.65 Mbit/s, within 5 % (measured 9.651, 0.966, 9.654).
#[test]
fn goodput_follows_rate_steps() {
    let d = dir_with("steps", &[("steps.csv", "0s,10Mbit\n5s,1Mbit\n10s,10Mbit\n")], &one_link("{ steps = \"steps.csv\" }", "15s", BULK));
    let r = run_dir(&d);
    let eff = 1448.0 / 1500.0;
    for (from, to, rate) in [(1.5, 5.0, 10.0), (6.5, 10.0, 1.0), (11.5, 15.0, 10.0)] {
        let g = goodput_between(&r, from, to);
        eprintln!("steps ({from}, {to}] s: {g:.3} Mbit/s");
        assert!((g - rate * eff).abs() <= 0.05 * rate * eff, "({from}, {to}] s: {g} Mbit/s, expected {}", rate * eff);
    }
}

fn bad(test: &str, file: &str, text: &str, rate: &str) -> String {
    let files: Vec<(&str, &str)> = if text.is_empty() && file == "missing" { vec![] } else { vec![(file, text)] };
    error_in(&dir_with(test, &files, &one_link(rate, "1s", VOIP)))
}

#[test]
fn bad_trace_files_name_the_field_the_file_and_the_line() {
    let cases = [
        (
            bad("missing", "missing", "", "{ trace = \"nope.trace\" }"),
            "scenario.toml:18:8: links[0].ab.rate: cannot read trace nope.trace: No such file or directory (os error 2)",
        ),
        (
            bad("decreasing", "d.trace", "1\n5\n3\n", "{ trace = \"d.trace\" }"),
            "scenario.toml:18:8: links[0].ab.rate: trace d.trace:3: times must not decrease: 3 after 5",
        ),
        (bad("empty", "e.trace", "", "{ trace = \"e.trace\" }"), "scenario.toml:18:8: links[0].ab.rate: trace e.trace: empty (no delivery opportunities)"),
        (
            bad("nan", "n.trace", "1\n2\nabc\n", "{ trace = \"n.trace\" }"),
            "scenario.toml:18:8: links[0].ab.rate: trace n.trace:3: \"abc\" is not a whole number of milliseconds",
        ),
        (
            bad("zero", "z.trace", "0\n0\n", "{ trace = \"z.trace\" }"),
            "scenario.toml:18:8: links[0].ab.rate: trace z.trace: must last more than 0 ms (its last line is its period)",
        ),
        (
            bad("negative", "s.csv", "0s,10Mbit\n1s,-1Mbit\n", "{ steps = \"s.csv\" }"),
            "scenario.toml:18:8: links[0].ab.rate: steps s.csv:2: invalid rate \"-1Mbit\": must not be negative",
        ),
        (
            bad("unparsable", "s.csv", "0s,10Mbit\n1s,fast\n", "{ steps = \"s.csv\" }"),
            "scenario.toml:18:8: links[0].ab.rate: steps s.csv:2: invalid rate \"fast\": expected a number with unit bit/kbit/Mbit/Gbit (e.g. \"10Mbit\")",
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
}
