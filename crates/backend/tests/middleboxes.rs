//! Middlebox tables of scenario files, checked by the backend's registry
//! of kinds when a scenario is loaded for a run: an error names the field
//! and its line, a kind sits only where its facts allow, and the resolved
//! network shows each kind's validated parameters.

mod common;

use common::{load, BASE};

fn error(extra: &str) -> String {
    load(&format!("{BASE}{extra}")).expect_err("a bad middlebox")
}

fn action_json(extra: &str) -> String {
    let net = load(&format!("{BASE}{extra}")).unwrap_or_else(|e| panic!("{e}"));
    serde_json::to_string(&net.middleboxes[0].action).unwrap()
}

/// A field the kind does not take is named with the ones it takes; a
/// value is checked at its field.
#[test]
fn middlebox_fields_are_checked_by_the_kind() {
    let e = error("\n[[middleboxes]]\nkind = \"strip_mptcp\"\nlink = \"c-s\"\nmode = \"split\"\n");
    assert_eq!(e, r#"scenario.toml:17:8: middleboxes[0].mode: does not apply to kind = "strip_mptcp" (it takes on)"#);
    let e = error("\n[[middleboxes]]\nkind = \"strip_mptcp\"\nlink = \"c-s\"\nevery = \"1MB\"\n");
    assert_eq!(e, r#"scenario.toml:17:9: middleboxes[0].every: does not apply to kind = "strip_mptcp" (it takes on)"#);
    let e = error("\n[[middleboxes]]\nkind = \"strip_mptcp\"\nlink = \"c-s\"\non = \"fin\"\n");
    assert!(e.starts_with("scenario.toml:17:6: middleboxes[0].on: unknown variant `fin`"), "{e}");
    let e = error("\n[[middleboxes]]\nkind = \"resegment\"\nlink = \"c-s\"\nmode = \"split\"\nhold = \"1ms\"\n");
    assert_eq!(e, r#"scenario.toml:18:8: middleboxes[0].hold: only applies to mode = "coalesce""#);
    let e = error("\n[[middleboxes]]\nkind = \"resegment\"\nlink = \"c-s\"\n");
    assert_eq!(e, r#"scenario.toml:14:1: middleboxes[0]: kind = "resegment" needs `mode` ("coalesce" or "split")"#);
    let e = error("\n[[middleboxes]]\nkind = \"rewrite\"\nlink = \"c-s\"\nevery = \"0B\"\n");
    assert_eq!(e, "scenario.toml:17:9: middleboxes[0].every: must be greater than 0");
    let e = error("\n[[middleboxes]]\nkind = \"firewall\"\nlink = \"c-s\"\n");
    // (With the test-fixtures feature, which a workspace test build turns
    // on, the fixture kind is listed among them.)
    assert!(e.starts_with("scenario.toml:15:8: middleboxes[0].kind: unknown variant `firewall`, expected one of `strip_mptcp`, `nat`, `resegment`, `rewrite`, "), "{e}");
    assert!(e.ends_with("`load_balancer`, `attacker`"), "{e}");
}

/// Where a kind may sit is its registry entry's.
#[test]
fn a_kind_sits_where_its_entry_says() {
    let e = error("\n[[middleboxes]]\nkind = \"nat\"\nlink = \"c-s\"\n");
    assert_eq!(e, "scenario.toml:16:8: middleboxes[0].link: a nat middlebox sits on a router: give it `node`, not `link`");
}

/// The resolved network shows each kind's validated parameters, `kind`
/// first, unset ones as null.
#[test]
fn the_resolved_network_shows_each_kinds_parameters() {
    assert_eq!(action_json("\n[[middleboxes]]\nkind = \"strip_mptcp\"\nlink = \"c-s\"\n"), r#"{"kind":"strip_mptcp","on":"all"}"#);
    assert_eq!(action_json("\n[[middleboxes]]\nkind = \"strip_mptcp\"\nlink = \"c-s\"\non = \"syn\"\n"), r#"{"kind":"strip_mptcp","on":"syn"}"#);
    assert_eq!(action_json("\n[[middleboxes]]\nkind = \"resegment\"\nlink = \"c-s\"\nmode = \"coalesce\"\nsize = \"9000B\"\n"), r#"{"kind":"resegment","mode":"coalesce","size":9000,"hold_ns":null}"#);
    assert_eq!(action_json("\n[[middleboxes]]\nkind = \"rewrite\"\nlink = \"c-s\"\n"), r#"{"kind":"rewrite","every":1000000}"#);
    let router = "\n[[nodes]]\nname = \"r\"\nkind = \"router\"\n\n[[links]]\na = \"s\"\nb = \"r\"\nrate = \"10Mbit\"\n\n[[middleboxes]]\nkind = \"nat\"\nnode = \"r\"\n";
    assert_eq!(action_json(router), r#"{"kind":"nat","addr":null}"#);
    assert_eq!(action_json(&format!("{router}addr = \"10.9.9.9\"\n")), r#"{"kind":"nat","addr":"10.9.9.9"}"#);
}
