//! What a Multipath QUIC run leaves for the QUIC tools (issue 52): a qlog
//! trace per connection end with `probes.qlog`, and the TLS key log beside
//! the pcaps, on the simulator through `mplab run`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn scenario() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/mpquic-two-paths.toml").to_string_lossy().into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mplab-quic-artefacts-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A 1 MB MPQUIC download over both paths with qlog and a capture of both
/// client interfaces; `extra` are more `--set`s.
fn run(out: &Path, extra: &[&str]) {
    let mut args = vec!["run".to_string(), scenario(), "--out".into(), out.to_string_lossy().into_owned()];
    for s in ["probes.qlog=true", r#"probes.pcap=["client:eth0","client:eth1"]"#, "flows.0.bytes=1MB", "duration=3s"].iter().chain(extra) {
        args.extend(["--set".to_string(), s.to_string()]);
    }
    let o = Command::new(env!("CARGO_BIN_EXE_mplab")).args(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The records of a JSON-SEQ file (RFC 7464: each starts with 0x1E).
fn records(path: &Path) -> Vec<serde_json::Value> {
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(raw.first(), Some(&0x1e), "{}: not JSON-SEQ", path.display());
    raw.split(|&b| b == 0x1e).filter(|r| !r.iter().all(u8::is_ascii_whitespace)).map(|r| serde_json::from_slice(r).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).collect()
}

/// Each end's qlog is a whole qlog JSON-SEQ trace from its vantage point,
/// titled with the flow, with packets sent and received and the multipath
/// transport parameter; the same seed writes the same bytes.
#[test]
fn qlog_per_connection_end_in_the_results_directory() {
    let (a, b) = (scratch("qlog-a"), scratch("qlog-b"));
    run(&a, &[]);
    run(&b, &[]);
    for side in ["client", "server"] {
        let file = format!("qlog/q-{side}.qlog");
        let recs = records(&a.join(&file));
        assert_eq!(recs[0]["file_schema"], "urn:ietf:params:qlog:file:sequential");
        assert_eq!(recs[0]["trace"]["vantage_point"]["type"], side);
        assert_eq!(recs[0]["title"], format!("mplab flow q ({side})"));
        let count = |name: &str| recs.iter().filter(|r| r["name"] == name).count();
        assert!(count("quic:packet_sent") > 100 && count("quic:packet_received") > 100, "{side}: {} records", recs.len());
        let params = recs.iter().find(|r| r["name"] == "quic:parameters_set" && r["data"]["initial_max_path_id"].is_number());
        assert!(params.is_some(), "{side}: no initial_max_path_id in the transport parameters");
        assert_eq!(std::fs::read(a.join(&file)).unwrap(), std::fs::read(b.join(&file)).unwrap(), "{side}: same seed, other qlog");
    }
    // A run without qlog leaves none, and none of the last run's.
    run(&a, &["probes.qlog=false"]);
    assert!(!a.join("qlog").exists());
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

/// pcap/keys.log holds the five TLS 1.3 secrets of the one connection in
/// the NSS key log format (the client logs; a run starts the file anew),
/// and with it tshark decrypts the QUIC packets of the capture that it
/// cannot read without it.
#[test]
fn key_log_beside_the_pcaps_decrypts_the_capture() {
    let d = scratch("keys");
    run(&d, &[]);
    run(&d, &[]);
    let keys = std::fs::read_to_string(d.join("pcap/keys.log")).unwrap();
    let labels: Vec<&str> = keys.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(labels, ["CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0", "EXPORTER_SECRET"], "{keys}");
    for l in keys.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        // Client random 32 bytes; a secret is the suite's hash long (32
        // bytes for SHA-256, 48 for SHA-384).
        assert!(f.len() == 3 && f[1].len() == 64 && [64, 96].contains(&f[2].len()) && f[1..].iter().all(|h| h.bytes().all(|b| b.is_ascii_hexdigit())), "{l}");
    }
    let tshark = |keylog: bool| -> Option<usize> {
        let pcap = d.join("pcap/client-eth0.pcap");
        let mut c = Command::new("tshark");
        c.args(["-r", &pcap.to_string_lossy(), "-d", "udp.port==5001,quic", "-Y", "quic.stream_data", "-T", "fields", "-e", "frame.number"]);
        if keylog {
            c.args(["-o", &format!("tls.keylog_file:{}", d.join("pcap/keys.log").display())]);
        }
        let o = c.output().ok()?;
        o.status.success().then(|| String::from_utf8_lossy(&o.stdout).lines().count())
    };
    match (tshark(false), tshark(true)) {
        (Some(without), Some(with)) => {
            eprintln!("tshark: packets with STREAM frames on path 0: {without} without the key log, {with} with it");
            assert!(without == 0 && with > 10, "without {without}, with {with}");
        }
        _ => eprintln!("tshark not found: the decryption is not checked"),
    }
    let _ = std::fs::remove_dir_all(&d);
}
