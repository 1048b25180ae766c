//! The BLEST and ECF papers' headline effects on mplab's phone
//! (scenarios/mobile-schedulers.toml: Wi-Fi 10 Mbit/s, 20 ms RTT + LTE,
//! 80 ms RTT, deep queue), as docs/mobile-schedulers.md measured them with
//! the sweeps mobile-blest.sweep.toml and mobile-ecf.sweep.toml (seed 1
//! here; the seeds there differ by under 2 %). Only the directions that
//! are robust there are asserted, with margins well inside the measured
//! effects (stated at each assertion); what the schedulers do not
//! reproduce is in the doc, not here.

mod support;

use mplab_sim::RunResults;
use support::*;

/// Mean out-of-order queue (bytes) over the connection rows in which the
/// receiver read data, as scripts/ooo-summary.py computes it.
fn mean_ooo(r: &RunResults) -> f64 {
    let v: Vec<f64> = r.reorder.iter().filter(|o| r.flows[o.row].subflow == "all" && r.flows[o.row].goodput_bps > 0.0).map(|o| o.ooo_bytes as f64).collect();
    assert!(!v.is_empty(), "no out-of-order samples");
    v.iter().sum::<f64>() / v.len() as f64
}

fn bulk(scheduler: &str, rcv_buf: &str) -> RunResults {
    let r = bundled("mobile-schedulers.toml", &[("transport.mptcp.scheduler", scheduler), ("flows.0.rcv_buf", rcv_buf)]);
    assert!(r.summary.flows[0].verified, "{scheduler} {rcv_buf}");
    r
}

#[test]
fn blest_keeps_the_receivers_reordering_small_at_small_buffers() {
    for buf in ["64KB", "256KB"] {
        let (d, b) = (bulk("default", buf), bulk("blest", buf));
        let (od, ob) = (mean_ooo(&d), mean_ooo(&b));
        let (gd, gb) = (d.summary.flows[0].goodput_bps, b.summary.flows[0].goodput_bps);
        eprintln!("rcv_buf {buf}: mean ooo default {od:.0} B, blest {ob:.0} B; goodput default {:.2}, blest {:.2} Mbit/s", gd / 1e6, gb / 1e6);
        // Measured: 16.7 KB -> 0 at 64 KB, 111 KB -> 28 KB (x0.25) at
        // 256 KB. Asserted: at most half of minRTT's.
        assert!(ob <= 0.5 * od, "{buf}: blest {ob} vs default {od}");
        // Measured: +20 % at both sizes (7.9 -> 9.5 and 9.8 -> 11.8
        // Mbit/s). Asserted: at least +5 %. (At 128 KB BLEST is 2 % below
        // minRTT, and below minRTT with opportunistic retransmission and
        // penalisation from 128 to 512 KB: not asserted, see the doc.)
        assert!(gb >= 1.05 * gd, "{buf}: blest {gb} vs default {gd}");
    }
}

/// Six 1 MB objects, one every 5 s, on one connection; LTE at `lte`.
fn objects(scheduler: &str, lte: &str) -> f64 {
    let flow = r#"{ name = "objects", from = "phone", to = "server", from_addr = "192.168.1.10", transport = "mptcp", app = "request", request_size = "300B", response_size = "1MB", count = 6, interval = "5s", start_jitter = "200ms" }"#;
    let r = bundled("mobile-schedulers.toml", &[("duration", "40s"), ("flows.0", flow), ("links.1.rate", lte), ("transport.mptcp.scheduler", scheduler)]);
    let f = &r.summary.flows[0];
    assert!(f.verified && f.completed, "{scheduler} {lte}: {f:?}");
    f.mean_latency_ms.unwrap()
}

#[test]
fn ecf_downloads_objects_sooner_the_more_the_paths_differ() {
    let (d1, e1) = (objects("default", "1Mbit"), objects("ecf", "1Mbit"));
    let (d10, e10) = (objects("default", "10Mbit"), objects("ecf", "10Mbit"));
    eprintln!("1 MB objects, LTE 1 Mbit/s: default {d1:.0} ms, ecf {e1:.0} ms; LTE 10 Mbit/s: default {d10:.0} ms, ecf {e10:.0} ms");
    // Measured: 1708 -> 1268 ms (-26 %, mean of 3 seeds; seed 1: 1712 ->
    // 1269) with LTE at 1 Mbit/s (Wi-Fi 10:1).
    // Asserted: at least 10 % sooner.
    assert!(e1 <= 0.9 * d1, "ecf {e1} vs default {d1}");
    // Alike paths (10 + 10 Mbit/s): measured 583 and 583 ms (seed 1: 603
    // and 602). Asserted:
    // within 5 % ("never worse", the paper's web result).
    assert!(e10 <= 1.05 * d10, "ecf {e10} vs default {d10}");
}
