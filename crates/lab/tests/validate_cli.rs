//! `mplab validate`: suite errors name their line, the simulator's two
//! profiles side by side, and (as root) the quick suite against the kernel
//! backend, whose every case must pass.

mod lab_common;
mod support;

use lab_common::{mplab, read_csv, repo, Scratch};

fn col(h: &[String], name: &str) -> usize {
    h.iter().position(|c| c == name).unwrap_or_else(|| panic!("no column {name} in {h:?}"))
}

#[test]
fn bad_suites_name_their_line_and_field() {
    let tmp = Scratch::new("validate-bad");
    let write = |body: &str| {
        let p = tmp.join("s.toml");
        std::fs::write(&p, body).unwrap();
        p
    };
    let scen = repo().join("scenarios/tcp-single.toml");
    let head = format!("[suite]\nname = \"t\"\n\n[[case]]\nname = \"a\"\nscenario = \"{}\"\n", scen.display());
    // An unknown metric kind.
    let p = write(&format!("{head}[[case.metric]]\nkind = \"jitter\"\n"));
    let o = mplab(&tmp.0, &["validate".as_ref(), p.as_os_str(), "--backends".as_ref(), "sim".as_ref()]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("s.toml:8:8: unknown variant `jitter`, expected one of `goodput`, `recovery`, `completion`, `fallback`"), "{}", o.stderr);
    // A bad tolerance.
    let p = write(&format!("{head}[[case.metric]]\nkind = \"goodput\"\ntolerance = \"five\"\n"));
    let o = mplab(&tmp.0, &["validate".as_ref(), p.as_os_str(), "--backends".as_ref(), "sim".as_ref()]);
    assert!(o.stderr.contains("s.toml:5:8: case[0].metric[0].tolerance: invalid rate \"five\""), "{}", o.stderr);
    // No runs at all.
    let p = write(&format!("{head}runs = 0\n[[case.metric]]\nkind = \"fallback\"\n"));
    let o = mplab(&tmp.0, &["validate".as_ref(), p.as_os_str(), "--backends".as_ref(), "sim".as_ref()]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("s.toml:7:8: case[0].runs: at least 1 run"), "{}", o.stderr);
    // A missing scenario, an unknown case, an unknown backend.
    let p = write("[suite]\nname = \"t\"\n\n[[case]]\nname = \"a\"\nscenario = \"nope.toml\"\n[[case.metric]]\nkind = \"fallback\"\n");
    let o = mplab(&tmp.0, &["validate".as_ref(), p.as_os_str()]);
    assert!(o.stderr.contains("s.toml:6:12: case[0].scenario: no such scenario file"), "{}", o.stderr);
    let quick = repo().join("scenarios/validate/quick.toml");
    let o = mplab(&tmp.0, &["validate".as_ref(), quick.as_os_str(), "--case".as_ref(), "nope".as_ref(), "--backends".as_ref(), "sim".as_ref()]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("no case \"nope\" (cases: tcp-10mbit, tcp-20kb-buffers, two-equal-paths, seed000-cut, seed000-firewall, lte-trace-tcp, laminar-endpoint)"), "{}", o.stderr);
    let o = mplab(&tmp.0, &["validate".as_ref(), quick.as_os_str(), "--backends".as_ref(), "ns3".as_ref()]);
    assert!(o.stderr.contains("unknown backend \"ns3\""), "{}", o.stderr);
}

/// The simulator alone: both profiles for every case, no verdict without
/// the kernel as reference, and the recovery of seed 000's lab as the
/// profiles make it (mplab within a second and a half of the restore, Linux
/// after its backed-off timer).
#[test]
fn simulator_profiles_side_by_side() {
    let tmp = Scratch::new("validate-sim");
    let full = repo().join("scenarios/validate/full.toml");
    let out = tmp.join("v");
    let o = mplab(&tmp.0, &["validate".as_ref(), full.as_os_str(), "--backends".as_ref(), "sim".as_ref(), "--case".as_ref(), "seed000-cut".as_ref(), "--runs".as_ref(), "1".as_ref(), "--out".as_ref(), out.as_os_str()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("sim linux") && o.stdout.contains("sim mplab") && o.stdout.contains("no reference"), "{}", o.stdout);
    let (h, rows) = read_csv(&out.join("validate.csv"));
    let rec: Vec<&Vec<String>> = rows.iter().filter(|r| r[col(&h, "metric")].starts_with("recovery")).collect();
    assert_eq!(rec.len(), 2);
    let mean = |backend: &str| -> f64 { rec.iter().find(|r| r[col(&h, "backend")] == backend).unwrap()[col(&h, "mean")].parse().unwrap() };
    assert!(mean("sim mplab") <= 1.5, "{}", mean("sim mplab"));
    assert!(mean("sim linux") >= 5.0, "{}", mean("sim linux"));
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("validate.json")).unwrap()).unwrap();
    assert_eq!(json["suite"], "full");
    // goodput 5-20, 20-25, 25-40 s, recovery, goodput 45-60 s
    assert_eq!(json["rows"].as_array().unwrap().len(), 5);
    // And its section in `mplab report`.
    let o = mplab(&tmp.0, &["report".as_ref(), out.as_os_str()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("mplab validate full") && html.contains("recovery sf1 after 40s") && html.contains("sim linux"), "{html}");
}

/// A case's own `runs` decides how often it runs, over the suite's;
/// `--runs` overrides both.
#[test]
fn a_case_sets_its_own_number_of_runs() {
    let tmp = Scratch::new("validate-runs");
    let scen = repo().join("scenarios/tcp-single.toml");
    let p = tmp.join("s.toml");
    let body = format!(
        "[suite]\nname = \"t\"\nruns = 2\n\n[[case]]\nname = \"four\"\nscenario = \"{0}\"\nruns = 4\nset = {{ duration = \"2s\", \"probes.pcap\" = [] }}\n[[case.metric]]\nkind = \"goodput\"\ntolerance = \"5%\"\n\n[[case]]\nname = \"two\"\nscenario = \"{0}\"\nset = {{ duration = \"2s\", \"probes.pcap\" = [] }}\n[[case.metric]]\nkind = \"goodput\"\ntolerance = \"5%\"\n",
        scen.display()
    );
    std::fs::write(&p, body).unwrap();
    let runs_of = |extra: &[&str]| -> Vec<(String, String)> {
        let out = tmp.join("v");
        let mut args: Vec<&std::ffi::OsStr> = vec!["validate".as_ref(), p.as_os_str(), "--backends".as_ref(), "sim".as_ref(), "--out".as_ref(), out.as_os_str()];
        args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
        let o = mplab(&tmp.0, &args);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let (h, rows) = read_csv(&out.join("validate.csv"));
        rows.iter().filter(|r| r[col(&h, "backend")] == "sim linux").map(|r| (r[col(&h, "case")].clone(), r[col(&h, "runs")].clone())).collect()
    };
    assert_eq!(runs_of(&[]), vec![("four".to_string(), "4".to_string()), ("two".to_string(), "2".to_string())]);
    assert_eq!(runs_of(&["--runs", "1"]), vec![("four".to_string(), "1".to_string()), ("two".to_string(), "1".to_string())]);
}

/// `--random`: the cases drawn from a seed are ordinary scenario files and
/// an ordinary suite (with their roles), the same for the same seed; the
/// simulator runs them and the report and its plots are written.
#[test]
fn random_cases_are_drawn_written_and_reported() {
    let tmp = Scratch::new("validate-random");
    let run = |out: &std::path::Path| mplab(&tmp.0, &["validate".as_ref(), "--random".as_ref(), "3".as_ref(), "--seed".as_ref(), "11".as_ref(), "--backends".as_ref(), "sim".as_ref(), "--runs".as_ref(), "1".as_ref(), "--out".as_ref(), out.as_os_str(), "-q".as_ref()]);
    let (a, b) = (tmp.join("a"), tmp.join("b"));
    let o = run(&a);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert_eq!(run(&b).code, 0);
    for f in ["random.toml", "cases/r11-000.toml", "cases/r11-002.toml"] {
        assert!(std::fs::read(a.join(f)).unwrap() == std::fs::read(b.join(f)).unwrap(), "{f}: the same draw");
    }
    let suite = std::fs::read_to_string(a.join("random.toml")).unwrap();
    assert_eq!(suite.matches("[[case]]").count(), 3);
    assert!(suite.contains("role = \"held-out\"") || suite.contains("role = \"tuning\""), "{suite}");
    for f in ["random.md", "errors.json", "scatter.svg", "scatter.png", "error-cdf.svg", "validate.csv"] {
        assert!(a.join(f).exists(), "{f}");
    }
    // Without the kernel there is nothing to judge, and the report says so.
    let md = std::fs::read_to_string(a.join("random.md")).unwrap();
    assert!(md.contains("| held-out |") && md.contains("no verdict"), "{md}");
    // A drawn case reruns from the written suite.
    let o = mplab(&tmp.0, &["validate".as_ref(), a.join("random.toml").as_os_str(), "--case".as_ref(), "r11-001".as_ref(), "--backends".as_ref(), "sim".as_ref(), "--runs".as_ref(), "1".as_ref(), "--out".as_ref(), tmp.join("c").as_os_str(), "-q".as_ref()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("r11-001"), "{}", o.stdout);
}

/// The quick suite against Linux: every case within its tolerance, three
/// kernel runs each. Root only (CI is root); about seven minutes.
#[test]
fn quick_suite_agrees_with_the_kernel() {
    if !support::netns::root_or_skip() {
        return;
    }
    let tmp = Scratch::new("validate-kernel");
    let out = tmp.join("v");
    let o = mplab(&repo(), &["validate".as_ref(), "--out".as_ref(), out.as_os_str(), "-q".as_ref()]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let (h, rows) = read_csv(&out.join("validate.csv"));
    let kernel: Vec<&Vec<String>> = rows.iter().filter(|r| r[col(&h, "backend")] == "kernel").collect();
    assert_eq!(kernel.len(), 10, "{rows:?}");
    assert!(kernel.iter().all(|r| r[col(&h, "runs")] == "3" && r[col(&h, "missing")].is_empty()), "{kernel:?}");
    assert!(rows.iter().all(|r| r[col(&h, "verdict")] == "pass"), "{}", o.stdout);
}
