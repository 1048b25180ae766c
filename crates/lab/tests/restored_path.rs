//! Seed 000's lab (crates/lab/tests/../../scenarios/seed000-lab1.toml):
//! wan2 is down from 20 to 40 s. With every scheduler of the registry, the
//! restored path carries data again, and its subflow's smoothed RTT after
//! the restore is the path's, not the outage's: the ACK that acknowledges
//! the data resent after the outage gives no sample of the outage (Karn).

use std::path::PathBuf;
use std::process::Command;

/// wan2's rate (Mbit/s) in seed000-lab1.toml.
const WAN2_MBIT: f64 = 10.0;

#[test]
fn every_scheduler_uses_the_restored_path_again() {
    let scen = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/seed000-lab1.toml");
    let base = std::env::temp_dir().join(format!("mplab-restored-{}", std::process::id()));
    for e in mplab_proto::mptcp::scheduler::REGISTRY {
        // A standby path carries nothing while the primary works: by design.
        if e.name == "primary-standby" {
            continue;
        }
        let out = base.join(e.name);
        // Buffers small enough that the scheduler chooses (the default 4 MB
        // let every path fill regardless).
        let o = Command::new(env!("CARGO_BIN_EXE_mplab"))
            .args(["run", scen.to_str().unwrap(), "--quiet", "--set", &format!("transport.mptcp.scheduler={}", e.name)])
            .args(["--set", "transport.tcp.rcv_buf=200KB", "--set", "transport.tcp.snd_buf=200KB", "--out", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}: {}", e.name, String::from_utf8_lossy(&o.stderr));
        let text = std::fs::read_to_string(out.join("flows.csv")).unwrap();
        let mut lines = text.lines();
        let head: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
        let (t, sf, g, srtt) = (col("time_s"), col("subflow"), col("goodput_bps"), col("srtt_ms"));
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        // Subflow 1 is the join over wan2 (the client's second address).
        let of = |lo: f64, hi: f64, c: usize| -> Vec<f64> { rows.iter().filter(|r| r[sf] == "1").filter(|r| (lo..hi).contains(&r[t].parse::<f64>().unwrap())).filter_map(|r| r[c].parse().ok()).collect() };
        let after = of(45.0, 60.0, g);
        let mean = after.iter().sum::<f64>() / after.len().max(1) as f64 / 1e6;
        assert!(mean > WAN2_MBIT / 2.0, "{}: {mean:.2} Mbit/s on wan2 after the restore", e.name);
        let worst = of(41.0, 60.0, srtt).into_iter().fold(0.0, f64::max);
        // The path's RTT is tens of ms; an outage-long sample (20 s) would
        // put the srtt above a second.
        assert!(worst < 500.0, "{}: srtt {worst} ms after the restore", e.name);
    }
    let _ = std::fs::remove_dir_all(&base);
}
