//! The simulator's MPTCP on the wire: a capture of seed000-lab1 (fullmesh,
//! DSS checksums on) must verify in `mplab trace` — every token, MP_JOIN
//! HMAC and DSS checksum our stack computed, recomputed independently from
//! the bytes — and decode in tshark without a malformed-packet warning.

use std::path::PathBuf;
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mplab-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn mplab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mplab")).args(args).output().expect("mplab runs")
}

#[test]
fn simulated_mptcp_capture_verifies_and_decodes() {
    let out = scratch("simtrace");
    let scenario = format!("{}/../../scenarios/seed000-lab1.toml", env!("CARGO_MANIFEST_DIR"));
    let o = mplab(&["run", &scenario, "--set", "duration=3s", "--set", "events=[]", "--out", out.to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let pcap = out.join("pcap/server-eth0.pcap");

    let o = mplab(&["trace", "--json", pcap.to_str().unwrap()]);
    assert!(o.status.success(), "trace found a mismatch:\n{}", String::from_utf8_lossy(&mplab(&["trace", pcap.to_str().unwrap()]).stdout));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["checks_mismatch"], 0);
    let conns = v["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 1);
    let c = &conns[0];
    assert!(c["fallback"].is_null());
    assert_eq!(c["checksums"], true);
    assert_eq!(c["subflows"].as_array().unwrap().len(), 2, "the initial subflow and one join");
    let checks = c["checks"].as_array().unwrap();
    let ok = |needle: &str| checks.iter().filter(|ch| ch["what"].as_str().unwrap_or("").contains(needle) && ch["ok"] == true).count();
    assert!(ok("MP_JOIN SYN token") >= 1);
    assert!(ok("MP_JOIN SYN/ACK HMAC") >= 1);
    assert!(ok("MP_JOIN ACK HMAC") >= 1);
    assert!(ok("DSS checksum") >= 100, "DSS checksums verified: {}", ok("DSS checksum"));
    assert!(ok("MP_CAPABLE") >= 1);

    if Command::new("tshark").arg("-v").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "CI installs tshark");
        eprintln!("tshark not installed; skipping the decode check");
        let _ = std::fs::remove_dir_all(&out);
        return;
    }
    let t = Command::new("tshark").args(["-r", pcap.to_str().unwrap(), "-q", "-z", "expert"]).output().unwrap();
    let expert = String::from_utf8_lossy(&t.stdout);
    assert!(!expert.contains("Malformed"), "{expert}");
    // tshark sees the MPTCP options we wrote: keys, a join, DSS mappings.
    let t = Command::new("tshark")
        .args(["-r", pcap.to_str().unwrap(), "-Y", "tcp.options.mptcp.subtype == 1", "-T", "fields", "-e", "tcp.options.mptcp.recvtok"])
        .output()
        .unwrap();
    let tokens = String::from_utf8_lossy(&t.stdout);
    assert!(tokens.lines().any(|l| !l.trim().is_empty()), "tshark decodes the MP_JOIN token");
    let t = Command::new("tshark").args(["-r", pcap.to_str().unwrap(), "-Y", "tcp.options.mptcp.rawdataseqno"]).output().unwrap();
    let mapped = String::from_utf8_lossy(&t.stdout).lines().count();
    assert!(mapped > 1000, "DSS mappings tshark decoded: {mapped}");
    let _ = std::fs::remove_dir_all(&out);
}
