//! The shipped scenarios and every complete example in docs/scenario.md
//! parse and resolve.

use std::path::PathBuf;

use mplab_scenario::network::{App, NodeKind, Transport};
use mplab_scenario::Scenario;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_scenario_file_resolves() {
    let mut seen = 0;
    let mut entries: Vec<_> = std::fs::read_dir(root().join("scenarios")).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    // `*.sweep.toml` are sweep specs for `mplab sweep`, not scenarios.
    for path in entries.iter().filter(|p| p.extension().is_some_and(|e| e == "toml") && !p.to_string_lossy().ends_with(".sweep.toml")) {
        let net = Scenario::from_file(path).and_then(|s| s.resolve()).unwrap_or_else(|e| panic!("{e}"));
        assert!(!net.flows.is_empty(), "{}: no flows", path.display());
        seen += 1;
    }
    assert!(seen >= 2, "expected the shipped scenarios");
}

#[test]
fn tcp_single() {
    let net = Scenario::from_file(root().join("scenarios/tcp-single.toml")).unwrap().resolve().unwrap();
    assert_eq!(net.duration_ns, 30_000_000_000);
    assert_eq!(net.links.len(), 1);
    assert_eq!((net.links[0].ab.rate_bps, net.links[0].ab.delay_ns), (10_000_000, 20_000_000));
    let f = &net.flows[0];
    assert_eq!((f.transport, f.app.name()), (Transport::TCP, "bulk"));
    assert!(matches!(&f.app, App::Stream(t) if t.table.fields.is_empty()), "{:?}", f.app);
    assert_eq!((f.src.to_string(), f.dst.to_string(), f.dport), ("10.0.0.1".into(), "10.0.0.2".into(), 5001));
    assert_eq!(net.probes.interval_ns, 100_000_000);
}

#[test]
fn two_paths() {
    let net = Scenario::from_file(root().join("scenarios/two-paths.toml")).unwrap().resolve().unwrap();
    assert_eq!(net.links.len(), 2);
    assert!(net.links.iter().all(|l| l.ab.rate_bps == 10_000_000 && l.ba.delay_ns == 10_000_000));
    let f = &net.flows[0];
    assert_eq!(f.transport, Transport::MPTCP);
    assert_eq!(f.mptcp.as_ref().unwrap().path_manager, "fullmesh");
    assert_eq!((f.src.to_string(), f.dst.to_string()), ("10.0.0.2".into(), "10.0.0.1".into()));
    assert_eq!(net.probes.pcap.len(), 2);
    assert!(net.nodes.iter().all(|n| n.kind == NodeKind::Host));
}

/// ```toml blocks of the doc that start with `name = ` are complete files.
#[test]
fn documented_examples_resolve() {
    let doc = std::fs::read_to_string(root().join("docs/scenario.md")).unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        match (&mut current, line.trim_start()) {
            (None, "```toml") => current = Some(String::new()),
            (Some(b), "```") => {
                blocks.push(std::mem::take(b));
                current = None;
            }
            (Some(b), _) => {
                b.push_str(line);
                b.push('\n');
            }
            _ => {}
        }
    }
    let complete: Vec<_> = blocks.iter().filter(|b| b.starts_with("name = ")).collect();
    assert!(complete.len() >= 7, "found {} complete examples", complete.len());
    for (i, text) in complete.iter().enumerate() {
        let name = format!("docs example {i}");
        let net = Scenario::from_str(text, &name).and_then(|s| s.resolve()).unwrap_or_else(|e| panic!("{e}\n{text}"));
        for f in &net.flows {
            net.trace(f.from, f.src, f.dst).unwrap();
        }
    }
    // Fragments must at least be valid TOML.
    for b in blocks.iter().filter(|b| !b.starts_with("name = ")) {
        b.parse::<toml::Table>().unwrap_or_else(|e| panic!("{e}\n{b}"));
    }
}

#[test]
fn documented_fragments_fit_the_free_form_example() {
    // The ASA middlebox, explicit route, transport and flow fragments are
    // valid when appended to the seed-000 example.
    let doc = std::fs::read_to_string(root().join("docs/scenario.md")).unwrap();
    let base = include_str!("data/two-gateways.toml");
    for fragment in [
        "[[middleboxes]]\nkind = \"strip_mptcp\"\nnode = \"fw\"\non = \"all\"\n",
        "[[routes]]\nnode = \"client\"\ndst = \"default\"\nvia = \"10.0.221.1\"\ndev = \"eth1\"\ntable = \"main\"\n",
        "[[flows]]\nname = \"web\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"mptcp\"\napp = \"request\"\nrequest_size = \"300B\"\nresponse_size = \"64KB\"\ncount = 100\ninterval = \"200ms\"\nscheduler = \"minrtt\"\n",
    ] {
        assert!(doc.contains(fragment.lines().last().unwrap()), "fragment not in doc");
        let text = format!("{base}\n{fragment}");
        Scenario::from_str(&text, "x").and_then(|s| s.resolve()).unwrap_or_else(|e| panic!("{e}"));
    }
}
