//! Mobility events on Linux's MPTCP (the kernel backend): a phone's Wi-Fi
//! lost and regained, and a make-before-break handover whose MP_PRIO is
//! `ip mptcp endpoint change id N backup|nobackup` in the phone's
//! namespace. The same files run on the simulator in
//! crates/sim/tests/mobility.rs. Needs root; each test cleans up its
//! namespaces even when it fails.

mod kernel_support;

use kernel_support::topologies::{phone, MAKE_BEFORE_BREAK, PHONE_BACKUP_LTE};
use kernel_support::{can_run, run, serial, window_mbit, NsGuard};
use mplab_backend::handover::HandoverSummary;

/// LTE's downlink (10 Mbit/s of IP packets) as TCP payload, Mbit/s.
const LTE_PAYLOAD_MBIT: f64 = 10.0 * 1448.0 / 1500.0;
/// What a window of LTE alone must reach: the emulator keeps the rate to
/// a packet (docs/emulator.md), Linux's cubic over a 300-packet queue keeps
/// it busy; 20 % covers a loss recovery within a 2-3 s window.
const LTE_ALONE_MIN: f64 = 0.8 * LTE_PAYLOAD_MBIT;

fn handover(r: &mplab_emu::kernel::KernelRun) -> &HandoverSummary {
    r.results.summary.flows[0].handover.as_ref().expect("handover metrics")
}

#[test]
fn linux_keeps_the_download_when_the_wifi_is_lost_and_joins_it_again() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("mob");
    let events = r#"
[[events]]
at = "4s"
node = "phone"
iface = "wlan0"
action = "wifi_lost"
detect = "200ms"

[[events]]
at = "9s"
node = "phone"
iface = "wlan0"
action = "wifi_regained"
dhcp = "1s"
"#;
    let text = phone("15s", "[transport.mptcp]\npath_manager = \"fullmesh\"", events);
    let k = run(&g, 0, &text);
    let f = &k.results.summary.flows[0];
    assert!(f.verified, "{f:?}");
    // Out of Wi-Fi, LTE carries the download.
    let lte = window_mbit(&k, "dl", 5.5, 9.0);
    assert!(lte >= LTE_ALONE_MIN && lte <= LTE_PAYLOAD_MBIT * 1.02, "{lte} Mbit/s on LTE alone");
    // The address is back at 10 s: the path manager opens a subflow from
    // it again and both paths carry the download (more than LTE could).
    let h = handover(&k);
    let back = h.events.iter().find(|e| e.event == "add_addr").expect("add_addr in the metrics");
    assert!(back.first_byte_after_s.is_some_and(|t| t <= 1.0), "{h:?}");
    let both = window_mbit(&k, "dl", 12.0, 15.0);
    assert!(both > 1.3 * LTE_PAYLOAD_MBIT, "{both} Mbit/s with Wi-Fi back");
    // The run says what it did in the phone's namespace.
    let notes = &k.results.summary.notes;
    assert!(notes.iter().any(|n| n.contains("remove_addr 192.168.1.10") && n.contains("endpoint delete")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("add_addr 192.168.1.10") && n.contains("endpoint add")), "{notes:?}");
    // A new subflow from the Wi-Fi address, beside the one that ended.
    let sf = &f.subflows;
    assert_eq!(sf.iter().filter(|s| s.remote.starts_with("192.168.1.10:")).count(), 2, "{sf:?}");
    g.assert_clean();
}

#[test]
fn a_make_before_break_handover_moves_linux_off_the_wifi_before_it_goes() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("mbb");
    let text = phone("10s", PHONE_BACKUP_LTE, MAKE_BEFORE_BREAK);
    let k = run(&g, 0, &text);
    let f = &k.results.summary.flows[0];
    assert!(f.verified, "{f:?}");
    let notes = &k.results.summary.notes;
    assert!(notes.iter().any(|n| n.contains("prio nobackup 10.64.0.10") && n.contains("endpoint change")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("prio backup 192.168.1.10") && n.contains("endpoint change")), "{notes:?}");
    // Before: Wi-Fi carries the download (LTE is a backup, idle).
    let before = window_mbit(&k, "dl", 2.0, 5.0);
    assert!(before > 1.3 * LTE_PAYLOAD_MBIT, "{before} Mbit/s on Wi-Fi");
    // After the MP_PRIOs, and after Wi-Fi is gone: LTE carries it, with
    // no stall when Wi-Fi goes (the server had left it already).
    let after = window_mbit(&k, "dl", 7.0, 10.0);
    assert!(after >= LTE_ALONE_MIN && after <= LTE_PAYLOAD_MBIT * 1.02, "{after} Mbit/s on LTE");
    // The MP_PRIO took the Wi-Fi subflow out of the server's choice: from
    // half a second after it (every packet sent before it acknowledged)
    // to the Wi-Fi's end it carries almost nothing (5 % of its rate).
    let wifi = f.subflows.iter().position(|s| s.remote.starts_with("192.168.1.10:")).expect("a Wi-Fi subflow").to_string();
    let on_wifi: Vec<f64> = k.results.flows.iter().filter(|s| s.flow == "dl" && s.subflow == wifi && s.time_s > 5.5 && s.time_s <= 6.5).map(|s| s.goodput_bps).collect();
    let mean = on_wifi.iter().sum::<f64>() / on_wifi.len().max(1) as f64 / 1e6;
    assert!(!on_wifi.is_empty() && mean < 1.0, "{mean} Mbit/s on the backup Wi-Fi subflow");
    // Losing the Wi-Fi costs no more than a loss recovery on LTE alone
    // can (in-order delivery waits a round trip, 84 ms, behind up to a
    // full 300-packet queue, 360 ms: 0.5 s with the probe interval); a
    // break-before-make would stall for its whole gap.
    let h = handover(&k);
    let gone = h.events.iter().find(|e| e.event == "down").expect("down in the metrics");
    assert!(gone.stall_after_s.is_some_and(|s| s <= 0.5 + 1e-9), "{h:?}");
    g.assert_clean();
}

/// One 10 Mbit/s link of 10 ms each way with `radio`, a Linux client's
/// 100 B request answered with 10 KB every 3 s, four times.
fn requests(radio: &str) -> String {
    format!(
        r#"
name = "kernel-radio"
duration = "14s"

[[nodes]]
name = "phone"
[[nodes]]
name = "server"

[[links]]
a = "phone"
b = "server"
rate = "10Mbit"
delay = "10ms"
{radio}

[[flows]]
from = "phone"
to = "server"
transport = "tcp"
app = "request"
request_size = "100B"
response_size = "10KB"
count = 4
interval = "3s"
start = "1s"
"#
    )
}

/// The link emulator holds a sleeping radio's packets as the simulator
/// does: three requests of four (the handshake woke the radio for the
/// first) wait the 300 ms promotion, 225 ms on the mean latency. The
/// emulator keeps its times within a millisecond (docs/emulator.md); two
/// runs' mean latencies on 2 cores, 15 ms.
#[test]
fn a_sleeping_radio_delays_linux_requests_like_the_simulator() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("rad");
    let latency = |k: &mplab_emu::kernel::KernelRun| k.results.summary.flows[0].mean_latency_ms.expect("latencies");
    let wired = latency(&run(&g, 0, &requests("")));
    let sleepy = latency(&run(&g, 1, &requests("radio = { idle = \"1s\", promotion = \"300ms\" }")));
    assert!((sleepy - wired - 225.0).abs() < 15.0, "{sleepy} ms with the radio, {wired} ms without");
    let sim = kernel_support::sim(&requests("radio = { idle = \"1s\", promotion = \"300ms\" }"));
    let sim_wired = kernel_support::sim(&requests(""));
    let sim_delta = sim.summary.flows[0].mean_latency_ms.unwrap() - sim_wired.summary.flows[0].mean_latency_ms.unwrap();
    assert!((sim_delta - 225.0).abs() < 1.0, "{sim_delta}");
    g.assert_clean();
}
