//! A middlebox kind added by one file and its line in the backend's
//! `middleboxes!` list (the test-only `fixture-drop-every-nth`, compiled
//! for tests by mplab-backend's `test-fixtures` feature), named by a
//! scenario and run on the simulator like every bundled kind.

use mplab_proto::Instant;
use mplab_scenario::Scenario;
use mplab_sim::World;

fn scenario(fixture: &str) -> String {
    format!(
        r#"
name = "fixture"
duration = "20s"
[topology]
kind = "parallel"
paths = 1
rate = "10Mbit"
delay = "10ms"
{fixture}
[[flows]]
from = "client"
to = "server"
transport = "tcp"
app = "bulk"
bytes = "2MB"
"#
    )
}

fn run(fixture: &str) -> mplab_sim::RunResults {
    let sc = Scenario::from_str(&scenario(fixture), "t.toml").unwrap_or_else(|e| panic!("{e}"));
    let net = mplab_backend::plugins::resolve(&sc).unwrap_or_else(|e| panic!("{e}"));
    assert!(mplab_sim::unsupported_middleboxes(&net).is_empty());
    let end = Instant(net.duration_ns);
    let mut w = World::new(net, None).unwrap();
    w.run_until(end);
    w.finish("sim")
}

#[test]
fn a_kind_added_by_one_file_runs_on_the_simulator_by_its_name() {
    let r = run("[[middleboxes]]\nkind = \"fixture-drop-every-nth\"\nlink = \"path0\"\ndirection = \"ab\"\nn = 100\n");
    let f = &r.summary.flows[0];
    assert!(f.completed && f.verified, "{f:?}");
    assert_eq!(f.bytes_delivered, 2_000_000);
    let note = r.summary.notes.iter().find(|n| n.starts_with("fixture at ")).unwrap_or_else(|| panic!("{:?}", r.summary.notes));
    let dropped: u64 = note.split(": ").nth(1).and_then(|s| s.split(' ').next()).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{note}"));
    // Every 100th of the ~1400 data segments, and TCP recovers each.
    assert!(dropped >= 10, "{note}");
    let plain = run("");
    assert!(plain.summary.notes.iter().all(|n| !n.starts_with("fixture at ")));
}

#[test]
fn its_bad_field_is_refused_with_the_line() {
    let sc = Scenario::from_str(&scenario("[[middleboxes]]\nkind = \"fixture-drop-every-nth\"\nlink = \"path0\"\nn = 0\n"), "t.toml").unwrap();
    let e = mplab_backend::plugins::resolve(&sc).unwrap_err();
    assert_eq!(e.to_string(), "t.toml:12:5: middleboxes[0].n: must be at least 1");
}
