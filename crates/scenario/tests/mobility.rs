//! The mobility vocabulary of `[[events]]` (wifi_lost, wifi_regained,
//! handover, fade, prio): what each expands into, and the errors of a bad one.

mod common;

use mplab_scenario::network::{Event, LinkAction};

/// A phone with Wi-Fi (wlan0) and LTE (rmnet0), LTE a backup endpoint.
const PHONE: &str = r#"
name = "phone"
duration = "60s"

[[nodes]]
name = "phone"
[[nodes]]
name = "r"
kind = "router"
[[nodes]]
name = "s"

[[links]]
name = "wifi"
a = "phone:wlan0"
b = "r"
rate = "20Mbit"
loss = 0.01

[[links]]
name = "lte"
a = "phone:rmnet0"
b = "r"
rate = "10Mbit"

[[links]]
a = "r"
b = "s"
rate = "1Gbit"

[transport.mptcp]
path_manager = "endpoints"

[[transport.mptcp.endpoints]]
node = "phone"
iface = "wlan0"
flags = ["subflow"]

[[transport.mptcp.endpoints]]
node = "phone"
iface = "rmnet0"
flags = ["subflow", "backup"]

[[flows]]
from = "phone"
to = "s"
transport = "mptcp"
"#;

fn events(extra: &str) -> Vec<Event> {
    common::net(&format!("{PHONE}{extra}")).events
}

/// Each event as "time kind link/iface", for compact comparisons.
fn brief(evs: &[Event]) -> Vec<String> {
    evs.iter()
        .map(|e| {
            let what = match &e.action {
                LinkAction::Down => format!("down {}", e.link_name),
                LinkAction::Up => format!("up {}", e.link_name),
                LinkAction::RemoveAddr { iface_name, .. } => format!("remove_addr {iface_name}"),
                LinkAction::AddAddr { iface_name, .. } => format!("add_addr {iface_name}"),
                LinkAction::Prio { iface_name, backup, .. } => format!("prio {iface_name} {}", if *backup { "backup" } else { "nobackup" }),
                LinkAction::Set { rate_bps, loss, .. } => format!("set {} {rate_bps:?} {loss:?}", e.link_name),
            };
            format!("{:.3} {what}", e.at_ns as f64 / 1e9)
        })
        .collect()
}

#[test]
fn wifi_lost_and_regained() {
    let evs = events(
        r#"
[[events]]
at = "10s"
node = "phone"
iface = "wlan0"
action = "wifi_lost"
detect = "300ms"

[[events]]
at = "20s"
node = "phone"
iface = "wlan0"
action = "wifi_regained"
dhcp = "2s"

[[events]]
at = "30s"
node = "phone"
iface = "wlan0"
action = "wifi_regained"
"#,
    );
    // The second wifi_regained finds the Wi-Fi in service: nothing to do.
    assert_eq!(brief(&evs), ["10.000 down wifi", "10.300 remove_addr wlan0", "20.000 up wifi", "22.000 add_addr wlan0"]);
    // Without dhcp, the address is back a second after association.
    let evs = events("[[events]]\nat = \"5s\"\nnode = \"phone\"\niface = \"wlan0\"\naction = \"wifi_lost\"\n[[events]]\nat = \"8s\"\nnode = \"phone\"\niface = \"wlan0\"\naction = \"wifi_regained\"\n");
    assert_eq!(brief(&evs), ["5.000 down wifi", "5.000 remove_addr wlan0", "8.000 up wifi", "9.000 add_addr wlan0"]);
}

#[test]
fn make_before_break_moves_traffic_before_the_old_link_goes() {
    let evs = events("[[events]]\nat = \"10s\"\nnode = \"phone\"\niface = \"wlan0\"\naction = \"handover\"\nto = \"rmnet0\"\nmode = \"make_before_break\"\noverlap = \"2s\"\n");
    // LTE is up and in service but a backup endpoint: out of backup at
    // once, Wi-Fi into backup, and Wi-Fi gone 2 s later.
    assert_eq!(brief(&evs), ["10.000 prio rmnet0 nobackup", "10.000 prio wlan0 backup", "12.000 down wifi", "12.000 remove_addr wlan0"]);
}

#[test]
fn break_before_make_leaves_a_gap() {
    let lte_down = "[[events]]\nat = \"1s\"\nnode = \"phone\"\niface = \"rmnet0\"\naction = \"wifi_lost\"\n";
    let evs = events(&format!("{lte_down}[[events]]\nat = \"10s\"\nnode = \"phone\"\niface = \"wlan0\"\naction = \"handover\"\nto = \"rmnet0\"\nmode = \"break_before_make\"\ngap = \"500ms\"\n"));
    assert_eq!(
        brief(&evs),
        ["1.000 down lte", "1.000 remove_addr rmnet0", "10.000 down wifi", "10.000 remove_addr wlan0", "10.500 up lte", "10.500 add_addr rmnet0", "10.500 prio rmnet0 nobackup"]
    );
}

#[test]
fn fade_steps_rate_geometrically_and_loss_linearly() {
    let evs = events("[[events]]\nat = \"10s\"\nlink = \"wifi\"\naction = \"fade\"\nrate = \"5Mbit\"\nloss = 0.05\nover = \"1s\"\nevery = \"500ms\"\ndirection = \"ba\"\n");
    // 20 -> 10 -> 5 Mbit/s (halfway in log rate), loss 1 % -> 3 % -> 5 %.
    let b = brief(&evs);
    assert_eq!(b.len(), 2, "{b:?}");
    let LinkAction::Set { rate_bps: Some(r1), loss: Some(p1), direction, .. } = evs[0].action else { panic!("{b:?}") };
    assert_eq!(direction, mplab_scenario::schema::Direction::Ba);
    assert_eq!(r1, 10_000_000);
    assert!((p1 - 0.03).abs() < 1e-12);
    let LinkAction::Set { rate_bps: Some(r2), loss: Some(p2), .. } = evs[1].action else { panic!("{b:?}") };
    assert_eq!((r2, evs[1].at_ns), (5_000_000, 11_000_000_000));
    assert!((p2 - 0.05).abs() < 1e-12);
    // A later fade starts from where this one ended.
    let evs = events("[[events]]\nat = \"10s\"\nlink = \"wifi\"\naction = \"fade\"\nrate = \"5Mbit\"\nover = \"1s\"\nevery = \"1s\"\n[[events]]\nat = \"20s\"\nlink = \"wifi\"\naction = \"fade\"\nrate = \"20Mbit\"\nover = \"2s\"\nevery = \"1s\"\ndirection = \"ab\"\n");
    let rates: Vec<u64> = evs.iter().filter_map(|e| if let LinkAction::Set { rate_bps, .. } = e.action { rate_bps } else { None }).collect();
    assert_eq!(rates, [5_000_000, 5_000_000, 10_000_000, 20_000_000]);
}

#[test]
fn prio_marks_an_address() {
    let evs = events("[[events]]\nat = \"3s\"\nnode = \"phone\"\niface = \"rmnet0\"\naction = \"prio\"\nbackup = false\n");
    assert!(matches!(&evs[0].action, LinkAction::Prio { backup: false, iface_name, .. } if iface_name == "rmnet0"));
}

#[test]
fn bad_mobility_events_name_the_field() {
    let err = |extra: &str| common::error(&format!("{PHONE}{extra}"));
    let ev = "[[events]]\nat = \"10s\"\nnode = \"phone\"\niface = \"wlan0\"\n";
    assert_eq!(err(&format!("{ev}action = \"prio\"\n")), r#"scenario.toml:48:1: events[0]: action = "prio" needs `backup = true` or `backup = false`"#);
    assert_eq!(err(&format!("{ev}action = \"wifi_lost\"\ndhcp = \"1s\"\n")), r#"scenario.toml:53:8: events[0].dhcp: only applies to action = "wifi_regained""#);
    assert_eq!(err(&format!("{ev}action = \"handover\"\nmode = \"make_before_break\"\n")), r#"scenario.toml:48:1: events[0]: action = "handover" names the interface taken with `to`"#);
    assert_eq!(err(&format!("{ev}action = \"handover\"\nto = \"wlan0\"\nmode = \"make_before_break\"\n")), r#"scenario.toml:53:6: events[0].to: hands over from "wlan0" to itself"#);
    assert_eq!(err(&format!("{ev}action = \"handover\"\nto = \"eth9\"\nmode = \"make_before_break\"\n")), r#"scenario.toml:53:6: events[0].to: phone has no interface "eth9""#);
    assert_eq!(err(&format!("{ev}action = \"handover\"\nto = \"rmnet0\"\n")), r#"scenario.toml:48:1: events[0]: action = "handover" needs mode = "make_before_break" or "break_before_make""#);
    assert_eq!(
        err(&format!("{ev}action = \"handover\"\nto = \"rmnet0\"\nmode = \"make_before_break\"\ngap = \"1s\"\n")),
        r#"scenario.toml:55:7: events[0].gap: applies to mode = "break_before_make" (make-before-break overlaps: `overlap`)"#
    );
    assert!(err(&format!("{ev}action = \"handover\"\nto = \"rmnet0\"\nmode = \"sideways\"\n")).starts_with("scenario.toml:54:8: events[0].mode: unknown variant `sideways`"));
    assert_eq!(err(&format!("{ev}action = \"fade\"\nrate = \"1Mbit\"\n")), r#"scenario.toml:48:1: events[0]: action = "fade" needs `over`, the time the change takes"#);
    assert_eq!(err(&format!("{ev}action = \"fade\"\nover = \"1s\"\n")), r#"scenario.toml:48:1: events[0]: action = "fade" needs `rate` or `loss` (or both), the values it fades to"#);
    assert_eq!(err(&format!("{ev}action = \"fade\"\nrate = \"1Mbit\"\nover = \"55s\"\n")), r#"scenario.toml:54:8: events[0].over: the fade ends at 65s, after the end of the scenario (duration = 60s)"#);
    assert_eq!(err(&format!("{ev}action = \"fade\"\nrate = \"1Mbit\"\nover = \"1s\"\nevery = \"2s\"\n")), r#"scenario.toml:55:9: events[0].every: must be greater than 0 and at most `over` (1s)"#);
    assert_eq!(err("[[events]]\nat = \"1s\"\nnode = \"r\"\niface = \"eth0\"\naction = \"wifi_lost\"\n"), r#"scenario.toml:50:8: events[0].node: "r" is a router; only hosts have MPTCP addresses"#);
}

#[test]
fn a_radio_needs_an_idle_time() {
    let with_radio = |radio: &str| PHONE.replace("name = \"lte\"\n", &format!("name = \"lte\"\nradio = {radio}\n"));
    let net = common::net(&with_radio("{ idle = \"11600ms\", promotion = \"260ms\" }"));
    let lte = net.link("lte").unwrap();
    assert_eq!(lte.radio, Some(mplab_scenario::network::Radio { idle_ns: 11_600_000_000, promotion_ns: 260_000_000 }));
    assert_eq!(common::error(&with_radio("{ idle = \"0s\", promotion = \"260ms\" }")), "scenario.toml:22:18: links[1].radio.idle: must be greater than 0 (the radio sleeps after this long without a packet)");
    assert!(common::error(&with_radio("{ idle = \"1s\" }")).contains("missing field `promotion`"));
}
