//! A phone on the move, on the simulator: the mobility events (Wi-Fi lost
//! and regained, handovers, fading, MP_PRIO) and the handover metrics of
//! the summary, on the bundled scenarios seed000-phone.toml and
//! mobile-handover.toml.

mod support;

use mplab_backend::handover::{HandoverEvent, HandoverSummary};
use mplab_sim::RunResults;
use support::*;

fn handover(r: &RunResults) -> &HandoverSummary {
    r.summary.flows[0].handover.as_ref().expect("a flow whose host changes interfaces has handover metrics")
}

fn event<'a>(h: &'a HandoverSummary, at_s: f64, what: &str) -> &'a HandoverEvent {
    h.events.iter().find(|e| (e.at_s - at_s).abs() < 1e-9 && e.event == what).unwrap_or_else(|| panic!("no {what} at {at_s} s in {:?}", h.events))
}

/// Mean goodput (bit/s) of the flow's "all" samples in (from, to].
fn mean_goodput(r: &RunResults, from: f64, to: f64) -> f64 {
    let v: Vec<f64> = r.flows.iter().filter(|s| s.subflow == "all" && s.time_s > from && s.time_s <= to).map(|s| s.goodput_bps).collect();
    v.iter().sum::<f64>() / v.len() as f64
}

/// LTE's downlink, 10 Mbit/s of IP packets, carries at most this much TCP
/// payload (1448 of each 1500 bytes, with timestamps).
const LTE_PAYLOAD_BPS: f64 = 10e6 * 1448.0 / 1500.0;

#[test]
fn the_phone_keeps_its_download_out_of_wifi_and_back() {
    let r = bundled("seed000-phone.toml", &[]);
    let f = &r.summary.flows[0];
    assert!(f.verified && f.bytes_delivered > 50_000_000, "{f:?}");
    // Out of Wi-Fi (15 to 34 s) LTE carries the download, at nearly its
    // payload capacity (10 % for the slow start after the loss).
    let lte_only = mean_goodput(&r, 15.0, 34.0);
    assert!(lte_only > 0.9 * LTE_PAYLOAD_BPS && lte_only <= LTE_PAYLOAD_BPS * 1.01, "{lte_only}");
    // Back in Wi-Fi both paths carry it: more than LTE alone could.
    assert!(mean_goodput(&r, 40.0, 50.0) > 1.3 * LTE_PAYLOAD_BPS);
    let h = handover(&r);
    assert_eq!(h.resolution_s, 0.1);
    // The Wi-Fi loss: the data in flight on it is sent again on LTE once
    // the REMOVE_ADDR (200 ms after the loss) ends the subflow. Bound: the
    // 200 ms, LTE's one-way 42 ms, a 300-packet LTE queue (0.36 s at
    // 10 Mbit/s) and a probe interval each side: 0.8 s.
    let lost = event(h, 14.2, "remove_addr");
    assert!(lost.takes_away && lost.stall_after_s.is_some_and(|s| s <= 0.8), "{lost:?}");
    // The address back at 35.5 s: a join takes 1.5 round trips over Wi-Fi
    // (24 ms) and the first data follows; the first interval with
    // goodput on it is the one the address came back in or the next.
    let back = event(h, 35.5, "add_addr");
    assert!(back.first_byte_after_s.is_some_and(|t| t <= 0.2 + 1e-9), "{back:?}");
    let sf = &f.subflows;
    assert_eq!(sf.iter().filter(|s| s.remote.starts_with("192.168.1.10:")).count(), 2, "the Wi-Fi address carries a new subflow: {sf:?}");
    // Bytes sent again: what the Wi-Fi lost when it went, at least one
    // segment, at most its queue (100 packets) and a few windows more.
    let again = h.bytes_sent_again.unwrap();
    assert!(again >= 1448 && again < 2_000_000, "{again}");
}

#[test]
fn make_before_break_hands_over_without_a_stall_and_break_before_make_with_its_gap() {
    let mbb = bundled("mobile-handover.toml", &[("events.2.mode", "make_before_break")]);
    let bbm = bundled("mobile-handover.toml", &[("events.2.mode", "break_before_make")]);
    for r in [&mbb, &bbm] {
        assert!(r.summary.flows[0].verified);
    }
    // Make-before-break: LTE joins at 10 s and the Wi-Fi address turns
    // backup (MP_PRIO): the server moves the data to LTE before Wi-Fi goes
    // at 11 s, so losing it costs nothing.
    let h = handover(&mbb);
    assert!(event(h, 10.0, "prio backup").takes_away);
    assert_eq!(event(h, 11.0, "down").stall_after_s, Some(0.0), "{h:?}");
    let wifi_after_prio: f64 = mbb.flows.iter().filter(|s| s.subflow == "0" && s.time_s > 10.5 && s.time_s <= 11.0).map(|s| s.goodput_bps).sum();
    assert_eq!(wifi_after_prio, 0.0, "a backup subflow carries nothing while a regular one works");
    let lte = event(h, 10.0, "add_addr").first_byte_after_s.expect("LTE carries data");
    // The join over LTE: 1.5 round trips of 2 x 42 ms, and the interval.
    assert!(lte <= 0.3 + 1e-9, "{lte}");
    // Break-before-make: nothing for the 1 s gap and the LTE join after it.
    let hb = handover(&bbm);
    let stall = event(hb, 10.0, "down").stall_after_s.unwrap();
    assert!((1.0..=1.5).contains(&stall), "{hb:?}");
    assert!(h.longest_stall_s < stall, "make-before-break {} s, break-before-make {stall} s", h.longest_stall_s);
    assert!(mean_goodput(&mbb, 10.0, 12.0) > mean_goodput(&bbm, 10.0, 12.0));
}

#[test]
fn a_fade_lowers_the_wifi_share_step_by_step() {
    // Seed 000's phone walks away from the access point from 10 to 14 s:
    // the Wi-Fi subflow's goodput falls with the rate.
    let r = bundled("seed000-phone.toml", &[]);
    let wifi = |from: f64, to: f64| {
        let v: Vec<f64> = r.flows.iter().filter(|s| s.subflow == "0" && s.time_s > from && s.time_s <= to).map(|s| s.goodput_bps).collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let (before, during, late) = (wifi(8.0, 10.0), wifi(11.0, 12.0), wifi(13.0, 14.0));
    assert!(before > 8e6 && during < before && late < during, "{before} {during} {late}");
    // At 13-14 s the Wi-Fi is at 1-2 Mbit/s with 4-5 % loss.
    assert!(late < 2e6, "{late}");
}

#[test]
fn handover_metrics_are_deterministic() {
    let a = bundled("mobile-handover.toml", &[("events.2.mode", "break_before_make")]);
    let b = bundled("mobile-handover.toml", &[("events.2.mode", "break_before_make")]);
    assert_eq!(a.summary.flows[0].handover, b.summary.flows[0].handover);
}

/// One 10 Mbit/s link of 10 ms each way; `radio` the link's radio table
/// (or nothing), a request of 100 B answered with 10 KB every `interval`.
fn requests(radio: &str, interval: &str) -> RunResults {
    run(&format!(
        r#"name = "radio"
duration = "30s"

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
count = 5
interval = "{interval}"
start = "1s"
"#
    ))
}

#[test]
fn a_sleeping_radio_delays_the_first_packet_after_silence() {
    let radio = "radio = { idle = \"2s\", promotion = \"300ms\" }";
    let latency = |r: &RunResults| r.summary.flows[0].mean_latency_ms.unwrap();
    let wired = latency(&requests("", "5s"));
    // Requests 5 s apart, the radio asleep after 2 s: each request but the
    // first (the handshake just woke the radio) waits the 300 ms promotion
    // once (the response follows within it): 4 x 300 ms over 5 requests.
    let sleepy = latency(&requests(radio, "5s"));
    assert!((sleepy - wired - 240.0).abs() < 1.0, "{sleepy} ms against {wired} ms");
    // 1 s apart the radio stays awake: the requests pay nothing (the
    // handshake woke it at 1 s, before the first request).
    let awake = latency(&requests(radio, "1s"));
    assert!((awake - latency(&requests("", "1s"))).abs() < 1.0, "{awake}");
}
