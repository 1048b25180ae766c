//! `--set path=value` overrides and resolution determinism.

mod common;

use mplab_scenario::Scenario;

const TWO_PATHS: &str = include_str!("../../../scenarios/two-paths.toml");
const FREE: &str = include_str!("data/two-gateways.toml");

fn two_paths() -> Scenario {
    Scenario::from_str(TWO_PATHS, "two-paths.toml").unwrap()
}

#[test]
fn set_changes_values_before_validation() {
    let mut sc = Scenario::from_str(FREE, "gw.toml").unwrap();
    sc.set("links.0.rate", "50Mbit").unwrap();
    sc.set_arg("duration=500s").unwrap();
    sc.set("transport.mptcp.subflows", "4").unwrap();
    sc.set("flows[0].cc", "olia").unwrap();
    let n = sc.resolve().unwrap();
    assert_eq!(n.links[0].ab.rate_bps, 50_000_000);
    assert_eq!(n.links[0].ba.rate_bps, 50_000_000);
    assert_eq!(n.duration_ns, 500_000_000_000);
    let m = n.flows[0].mptcp.as_ref().unwrap();
    assert_eq!(m.subflows, Some(4));
    assert_eq!(m.cc, "olia");
    assert!(sc.effective_toml().contains("subflows = 4"));
}

#[test]
fn set_generator_parameters() {
    let mut sc = two_paths();
    sc.set_all([("topology.paths", "3"), ("topology.rate", "[\"10Mbit\", \"20Mbit\", \"30Mbit\"]")]).unwrap();
    let n = sc.resolve().unwrap();
    assert_eq!(n.links.len(), 3);
    assert_eq!(n.links[2].ab.rate_bps, 30_000_000);
    sc.set("transport.mptcp.path_manager", "ndiffports").unwrap();
    let n = sc.resolve().unwrap();
    let m = n.flows[0].mptcp.as_ref().unwrap();
    // ndiffports' default count (2) is its registry entry's, applied by the backend.
    assert_eq!((m.path_manager.as_str(), m.subflows), ("ndiffports", None));
}

#[test]
fn unknown_path_is_an_error_naming_it() {
    let mut sc = two_paths();
    let e = sc.set("transport.tcp.rcv_buff", "5").unwrap_err().to_string();
    assert!(e.starts_with("two-paths.toml: --set transport.tcp.rcv_buff=5: transport.tcp.rcv_buff: unknown field `rcv_buff`, expected one of"), "{e}");
    let e = sc.set("links.0.rate", "5Mbit").unwrap_err().to_string();
    assert_eq!(e, "two-paths.toml: --set links.0.rate=5Mbit: links[0].rate: there is no links array to index");
    let e = sc.set("flows.3.rate", "5Mbit").unwrap_err().to_string();
    assert_eq!(e, "two-paths.toml: --set flows.3.rate=5Mbit: flows[3].rate: flows has 1 entries; index 3 is out of range");
    let e = sc.set("topology.paths.x", "1").unwrap_err().to_string();
    assert_eq!(e, "two-paths.toml: --set topology.paths.x=1: topology.paths.x: topology.paths is a single value; it has no fields");
    let e = sc.set("durration", "1s").unwrap_err().to_string();
    assert!(e.starts_with("two-paths.toml: --set durration=1s: durration: unknown field `durration`"), "{e}");
    let e = sc.set_arg("duration").unwrap_err().to_string();
    assert_eq!(e, "two-paths.toml: --set duration: expected path=value, like links.0.rate=50Mbit");
    // A failed set leaves the scenario unchanged.
    assert_eq!(sc.resolve().unwrap(), two_paths().resolve().unwrap());
}

#[test]
fn bad_values_name_the_set() {
    let mut sc = two_paths();
    let e = sc.set("topology.rate", "10Mbt").unwrap_err().to_string();
    assert_eq!(
        e,
        r#"two-paths.toml: --set topology.rate=10Mbt: topology.rate: invalid rate "10Mbt": expected a number with unit bit/kbit/Mbit/Gbit (e.g. "10Mbit")"#
    );
    // Semantic checks run at resolve time, and still name the --set.
    sc.set("topology.paths", "0").unwrap();
    let e = sc.resolve().unwrap_err().to_string();
    assert_eq!(e, "two-paths.toml: --set topology.paths=0: topology.paths: paths must be between 1 and 256, got 0");
}

#[test]
fn errors_elsewhere_still_point_into_the_file() {
    // Shortening the run makes the (untouched) 395 s event invalid: the
    // error names the event's line in the file, not the --set.
    let mut sc = Scenario::from_str(FREE, "gw.toml").unwrap();
    sc.set("duration", "300s").unwrap();
    let e = sc.resolve().unwrap_err().to_string();
    assert_eq!(e, "gw.toml:79:6: events[1].at: 395s is after the end of the scenario (duration = 300s)");
    // ... while a bad value introduced by --set names the --set.
    let mut sc = Scenario::from_str(FREE, "gw.toml").unwrap();
    sc.set("flows.0.to", "gw1").unwrap();
    let e = sc.resolve().unwrap_err().to_string();
    assert_eq!(e, r#"gw.toml: --set flows.0.to=gw1: flows[0].to: "gw1" is a router; flows run between hosts"#);
}

#[test]
fn resolving_is_deterministic() {
    for text in [TWO_PATHS, FREE, "name = \"ft\"\n[topology]\nkind = \"fattree\"\nk = 4\nrate = \"10Mbit\"\n"] {
        let a = Scenario::from_str(text, "a.toml").unwrap().resolve().unwrap();
        let b = Scenario::from_str(text, "a.toml").unwrap().resolve().unwrap();
        let ja = serde_json::to_string(&a).unwrap();
        assert_eq!(ja, serde_json::to_string(&b).unwrap());
        let sc = Scenario::from_str(text, "a.toml").unwrap();
        assert_eq!(ja, serde_json::to_string(&sc.resolve().unwrap()).unwrap());
        assert_eq!(ja, serde_json::to_string(&sc.resolve().unwrap()).unwrap());
    }
}
