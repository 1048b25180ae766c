//! Queue tables of scenario files, checked by the backend's registry of
//! disciplines when a scenario is loaded for a run: an error names the
//! field and its line, and the resolved network shows each discipline's
//! validated parameters.

mod common;

use common::{load, BASE};

fn error(extra: &str) -> String {
    load(&format!("{BASE}{extra}")).expect_err("a bad queue")
}

fn queue_json(text: &str, link: &str, dir: &str) -> String {
    let net = load(text).unwrap_or_else(|e| panic!("{e}"));
    let l = net.link(link).unwrap_or_else(|| panic!("no link {link}"));
    serde_json::to_string(if dir == "ab" { &l.ab.queue } else { &l.ba.queue }).unwrap()
}

#[test]
fn queue_errors_name_the_queue() {
    let e = error("queue = { kind = \"red\", min_th = \"30KB\", max_th = \"20KB\", max_p = 0.1, limit = \"400KB\" }\n");
    assert_eq!(e, "scenario.toml:13:9: links[0].queue: RED needs 0 < min_th < max_th (min_th = 30KB, max_th = 20KB)");
    let e = error("queue = { kind = \"red\", min_th = \"30KB\", max_th = \"90KB\", max_p = 0.1, limit = \"60KB\" }\n");
    assert_eq!(e, "scenario.toml:13:9: links[0].queue: RED needs max_th <= limit (max_th = 90KB, limit = 60KB)");
    let e = error("queue = { kind = \"droptail\", packets = 10, bytes = \"10KB\" }\n");
    assert_eq!(e, "scenario.toml:13:9: links[0].queue: give a droptail queue `packets` or `bytes`, not both");
    let e = error("queue = { kind = \"droptail\", packets = 0 }\n");
    assert_eq!(e, "scenario.toml:13:9: links[0].queue: a droptail queue needs room for at least one packet");
    let e = error("queue = { kind = \"fifo\" }\n");
    assert_eq!(e, "scenario.toml:13:18: links[0].queue.kind: unknown variant `fifo`, expected `droptail` or `red`");
}

/// A field the kind does not take is named before any value is checked;
/// a field it needs is asked for; a value is parsed as everywhere else.
#[test]
fn queue_fields_are_checked_by_name() {
    let e = error("queue = { kind = \"droptail\", packet = 10 }\n");
    assert_eq!(e, "scenario.toml:13:39: links[0].queue.packet: does not apply to kind = \"droptail\" (it takes bytes, packets)");
    let e = error("queue = { kind = \"red\", min_th = \"30KB\", max_p = 0.1, limit = \"400KB\" }\n");
    assert_eq!(e, "scenario.toml:13:9: links[0].queue: missing field `max_th` (kind = \"red\")");
    let e = error("queue = { kind = \"droptail\", bytes = \"10 apples\" }\n");
    assert!(e.starts_with("scenario.toml:13:38: links[0].queue.bytes: invalid size \"10 apples\""), "{e}");
}

#[test]
fn per_direction_override_errors() {
    let e = error("\n[links.ab]\nqueue = { kind = \"droptail\" }\n");
    assert_eq!(e, "scenario.toml:15:9: links[0].ab.queue: a droptail queue needs `packets` or `bytes`");
}

/// A generator's queue is checked at `topology.<field>`.
#[test]
fn generator_queue_errors_name_the_generator_field() {
    let text = "name = \"s\"\n[topology]\nkind = \"star\"\nhosts = 2\nrate = \"10Mbit\"\nqueue = { kind = \"droptail\", bytes = \"0KB\" }\n";
    assert_eq!(load(text).unwrap_err(), "scenario.toml:6:9: topology.queue: a droptail queue needs room for at least one packet");
}

/// The resolved network shows each discipline's validated parameters,
/// the default (1000 packets of drop-tail) included.
#[test]
fn the_resolved_network_shows_validated_parameters() {
    assert_eq!(queue_json(BASE, "c-s", "ab"), r#"{"kind":"droptail","limit":{"packets":1000}}"#);
    let star = "name = \"s\"\n[topology]\nkind = \"star\"\nhosts = 4\nrate = \"10Mbit\"\nqueue = { kind = \"droptail\", bytes = \"64KB\" }\n";
    assert_eq!(queue_json(star, "h3-hub", "ba"), r#"{"kind":"droptail","limit":{"bytes":64000}}"#);
    let dumbbell = "name = \"d\"\n[topology]\nkind = \"dumbbell\"\npairs = 1\naccess_rate = \"100Mbit\"\nbottleneck_rate = \"10Mbit\"\nbottleneck_queue = { kind = \"red\", min_th = \"30KB\", max_th = \"90KB\", max_p = 0.1, limit = \"400KB\" }\n";
    assert_eq!(
        queue_json(dumbbell, "left-right", "ab"),
        r#"{"kind":"red","min_th_bytes":30000,"max_th_bytes":90000,"limit_bytes":400000,"max_p":0.1,"weight":0.002,"gentle":false}"#
    );
}

/// Every discipline of the registry is listed, with what the kernel
/// backend does with it.
#[test]
fn every_discipline_is_listed() {
    let names: Vec<&str> = mplab_backend::plugins::all().into_iter().filter(|(axis, _)| *axis == "queue").map(|(_, a)| a.name).collect();
    assert_eq!(names, ["droptail", "red"]);
}
