//! `mplab trace` on the Linux vectors and on bad input.

use std::path::PathBuf;
use std::process::Command;

fn vector(name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../captures").join(name);
    p.exists().then_some(p)
}

fn mplab(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_mplab")).args(args).output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn json_report_of_join_capture() {
    let Some(p) = vector("linux-6.18-mptcp-join-addaddr.pcap") else { return };
    let (code, out, _) = mplab(&["trace", "--json", p.to_str().unwrap()]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["checks_mismatch"], 0);
    assert_eq!(v["checks_ok"], 10);
    let c = &v["connections"][0];
    assert_eq!(c["client_keys"]["token"], "a0ac44cd");
    assert_eq!(c["server_keys"]["token"], "e0e05a3b");
    assert_eq!(c["server_keys"]["idsn"], "02e43ec59ef27e7b");
    assert_eq!(c["subflows"].as_array().unwrap().len(), 3);
    assert_eq!(c["subflows"][1]["kind"], "MP_JOIN");
    assert_eq!(c["subflows"][1]["initiator"], "client");
    assert_eq!(c["events"][0]["kind"], "ADD_ADDR");
    assert_eq!(c["events"][0]["from"], "server");
    assert!(c["fallback"].is_null());
}

#[test]
fn checksum_capture_verifies_every_checksum() {
    let Some(p) = vector("linux-6.18-mptcp-dss-checksum.pcap") else { return };
    let (code, out, _) = mplab(&["trace", "--checks", p.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(out.contains("DSS checksum dsn ed2e3706d1d93de5 ssn 1 len 27 from client: 2013"));
    assert!(out.contains("checks: 20 ok, 0 MISMATCH"), "{out}");
}

/// By default the verification is a count per kind of check: one line for
/// all the DSS checksums, not one per segment.
#[test]
fn checks_are_summarised_by_kind_unless_asked() {
    let Some(p) = vector("linux-6.18-mptcp-dss-checksum.pcap") else { return };
    let (code, out, _) = mplab(&["trace", p.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(!out.contains("    ok        frame"), "no line per check: {out}");
    let dss: Vec<&str> = out.lines().filter(|l| l.trim_start().starts_with("DSS checksum:")).collect();
    assert_eq!(dss.len(), 1, "{out}");
    assert!(out.contains("checks: 20 ok, 0 MISMATCH") && out.contains("--checks"), "{out}");
    let (_, every, _) = mplab(&["trace", "--checks", p.to_str().unwrap()]);
    assert_eq!(every.lines().filter(|l| l.contains("    ok        frame")).count(), 20);
}

/// `--plots DIR` draws each connection's subflow time-sequence graph, its
/// data-sequence graph and its RTT samples, from the capture's segments.
#[test]
fn time_sequence_and_rtt_plots_from_a_capture() {
    let Some(p) = vector("linux-6.18-mptcp-join-addaddr.pcap") else { return };
    let dir = std::env::temp_dir().join(format!("mplab-trace-plots-{}", std::process::id()));
    let (code, _, err) = mplab(&["trace", p.to_str().unwrap(), "--plots", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    for f in ["conn0_subflow_sequence", "conn0_data_sequence", "conn0_rtt"] {
        let svg = std::fs::read_to_string(dir.join(format!("{f}.svg"))).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(svg.matches("<circle").count() >= 3, "{f} has its samples");
        assert!(dir.join(format!("{f}.png")).exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn not_a_capture_is_a_one_line_error() {
    let (code, out, err) = mplab(&["trace", concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1);
    assert!(err.contains("Cargo.toml") && err.contains("not a pcap"), "{err}");
    let (code, _, err) = mplab(&["trace", "/nonexistent/x.pcap"]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/x.pcap"));
}

#[test]
fn cut_capture_is_reported_and_analysed() {
    let Some(p) = vector("linux-6.18-mptcp-dss-checksum.pcap") else { return };
    let bytes = std::fs::read(&p).unwrap();
    let cut = std::env::temp_dir().join(format!("mplab-cut-{}.pcap", std::process::id()));
    std::fs::write(&cut, &bytes[..3000]).unwrap();
    let (code, out, _) = mplab(&["trace", "--json", cut.to_str().unwrap()]);
    let _ = std::fs::remove_file(&cut);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["truncated"].as_str().unwrap().contains("cut"));
    assert!(v["frames"].as_u64().unwrap() > 10);
    assert_eq!(v["connections"].as_array().unwrap().len(), 1);
}

#[test]
fn corrupted_frames_are_reported_not_fatal() {
    let Some(p) = vector("linux-6.18-mptcp-dss-checksum.pcap") else { return };
    let mut bytes = std::fs::read(&p).unwrap();
    // Frame 1 starts after the 24-byte file header and 16-byte record header;
    // SLL2 is 20 bytes, IPv4 20: make the TCP data offset claim 60 bytes.
    let tcp = 24 + 16 + 20 + 20;
    bytes[tcp + 12] = 0xf0;
    // And in the 14th frame, a DSS checksum byte flipped? Flip payload instead:
    let f = std::env::temp_dir().join(format!("mplab-bad-{}.pcap", std::process::id()));
    std::fs::write(&f, &bytes).unwrap();
    let (code, out, _) = mplab(&["trace", "--json", f.to_str().unwrap()]);
    let _ = std::fs::remove_file(&f);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["malformed"][0]["frame"], 1);
    assert_eq!(v["frames"], 40);
}

#[test]
fn tampered_payload_is_a_mismatch() {
    let Some(p) = vector("linux-6.18-mptcp-dss-checksum.pcap") else { return };
    let mut bytes = std::fs::read(&p).unwrap();
    let needle = b"hello mptcp checksum vector";
    let at = bytes.windows(needle.len()).position(|w| w == needle).unwrap();
    bytes[at] = b'j';
    let f = std::env::temp_dir().join(format!("mplab-tamper-{}.pcap", std::process::id()));
    std::fs::write(&f, &bytes).unwrap();
    let (code, out, _) = mplab(&["trace", f.to_str().unwrap()]);
    let _ = std::fs::remove_file(&f);
    assert_eq!(code, 1, "a mismatch fails the command");
    assert!(out.contains("MISMATCH  frame 14"), "{out}");
}
