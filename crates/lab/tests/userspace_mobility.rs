//! Mobility events on mplab's own stack over real packets (the userspace
//! backend): a make-before-break handover whose MP_PRIOs and REMOVE_ADDR
//! reach the phone's stack through its control file, the same file the
//! kernel backend runs with `ip mptcp endpoint change / delete`
//! (kernel_mobility.rs) and the simulator in crates/sim/tests/mobility.rs.
//! Needs root; the test cleans up its namespaces even when it fails.

mod kernel_support;

use kernel_support::topologies::{phone, MAKE_BEFORE_BREAK, PHONE_BACKUP_LTE};
use kernel_support::{can_run, run_userspace, serial, window_mbit, NsGuard};

/// LTE's downlink (10 Mbit/s of IP packets) as TCP payload, Mbit/s.
const LTE_PAYLOAD_MBIT: f64 = 10.0 * 1448.0 / 1500.0;

#[test]
fn a_make_before_break_handover_on_mplab_s_stack_loses_nothing() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("usmob");
    let k = run_userspace(&g, 0, &phone("10s", PHONE_BACKUP_LTE, MAKE_BEFORE_BREAK));
    let f = &k.results.summary.flows[0];
    assert!(f.verified, "{f:?}");
    // Before: Wi-Fi (20 Mbit/s) carries it, LTE is the backup.
    let before = window_mbit(&k, "dl", 2.0, 5.0);
    assert!(before > 1.3 * LTE_PAYLOAD_MBIT, "{before}");
    // After: LTE at its capacity (20 % for the slow start of a path that
    // was idle as a backup, over a 3 s window).
    let after = window_mbit(&k, "dl", 7.0, 10.0);
    assert!(after >= 0.8 * LTE_PAYLOAD_MBIT && after <= 1.02 * LTE_PAYLOAD_MBIT, "{after}");
    // The backup Wi-Fi subflow carries nothing from half a second after
    // the MP_PRIO to its end (5 % of its rate at most).
    let wifi = f.subflows.iter().position(|s| s.remote.starts_with("192.168.1.10:")).expect("a Wi-Fi subflow").to_string();
    let on_wifi: Vec<f64> = k.results.flows.iter().filter(|s| s.flow == "dl" && s.subflow == wifi && s.time_s > 5.5 && s.time_s <= 6.5).map(|s| s.goodput_bps).collect();
    let mean = on_wifi.iter().sum::<f64>() / on_wifi.len().max(1) as f64 / 1e6;
    assert!(!on_wifi.is_empty() && mean < 1.0, "{mean} Mbit/s on the backup Wi-Fi subflow");
    // Losing the Wi-Fi then costs at most an LTE loss recovery (0.5 s:
    // a round trip of 84 ms behind a full 300-packet queue, 360 ms, and
    // the probe interval); measured: no stall at all.
    let h = f.handover.as_ref().expect("handover metrics");
    let gone = h.events.iter().find(|e| e.event == "down").expect("down in the metrics");
    assert!(gone.stall_after_s.is_some_and(|s| s <= 0.5 + 1e-9), "{h:?}");
    let notes = &k.results.summary.notes;
    assert!(notes.iter().any(|n| n.contains("prio backup 192.168.1.10") && n.contains("control command sent")), "{notes:?}");
    g.assert_clean();
}
