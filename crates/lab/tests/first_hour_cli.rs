//! What a new user meets on the command line in the first hour: a closed
//! pipe, a wrong directory, a file that is not a capture.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn scenario(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(name)
}

/// `mplab run ... | head -1`: the reader goes away after one line. The
/// program ends quietly by SIGPIPE, as Unix tools do, not with a panic
/// ("failed printing to stdout", exit 101).
#[test]
fn closed_stdout_ends_quietly() {
    let out = std::env::temp_dir().join(format!("mplab-pipe-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_mplab"))
        .args(["run", scenario("tcp-single.toml").to_str().unwrap(), "--set", "duration=2s", "--out", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close our end of stdout before the program prints its table.
    drop(child.stdout.take());
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&out);
    assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{err}");
    use std::os::unix::process::ExitStatusExt;
    assert!(status.success() || status.signal() == Some(libc::SIGPIPE), "{status:?} {err}");
}

#[test]
fn report_on_a_directory_without_results_says_so() {
    let dir = std::env::temp_dir().join(format!("mplab-notresults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_mplab")).args(["report", dir.to_str().unwrap()]).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("not a results directory") && !err.contains("os error"), "{err}");
}

#[test]
fn trace_of_a_text_file_shows_what_it_starts_with() {
    let o = Command::new(env!("CARGO_BIN_EXE_mplab")).args(["trace", concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("5b 70 61 63 \"[pac\""), "hex and the text it spells: {err}");
}

/// `loss = 1` (every packet) and `delay = 40` (seconds) are valid but
/// rarely meant: a warning names the line and field, and a flow that moved
/// no byte is reported as never connected, not as unverified data.
#[test]
fn implausible_links_are_warned_and_a_dead_flow_never_connected() {
    let out = std::env::temp_dir().join(format!("mplab-implausible-{}", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_mplab"))
        .args(["run", scenario("tcp-single.toml").to_str().unwrap(), "--set", "duration=3s", "--set", "links.0.loss=1", "--set", "links.0.delay=40", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let warns: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert!(warns.iter().any(|w| w.contains("tcp-single.toml:") && w.contains("loss") && w.contains("100 %")), "{err}");
    assert!(warns.iter().any(|w| w.contains("delay") && w.contains("40.0 s")), "{err}");
    assert!(err.contains("never connected") && !err.contains("did not verify"), "{err}");
}

/// `mplab compare` says how A and B differ before their metrics: here the
/// duration, with a warning that totals are not comparable.
#[test]
fn compare_names_what_differs_and_warns_on_durations() {
    let base = std::env::temp_dir().join(format!("mplab-cmp-{}", std::process::id()));
    let run = |d: &str, dur: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_mplab"))
            .args(["run", scenario("tcp-single.toml").to_str().unwrap(), "--quiet", "--set", &format!("duration={dur}"), "--out", base.join(d).to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    run("a", "2s");
    run("b", "3s");
    let o = Command::new(env!("CARGO_BIN_EXE_mplab")).args(["compare", base.join("a").to_str().unwrap(), base.join("b").to_str().unwrap()]).output().unwrap();
    let _ = std::fs::remove_dir_all(&base);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("duration_s: A 2.0 / B 3.0"), "{out}");
    assert!(out.contains("warning: A ran 2 s and B 3 s"), "{out}");
}

/// Every record of a pcap: (captured length, original length).
fn records(path: &std::path::Path) -> Vec<(usize, u32)> {
    let mut r = pcap_file::pcap::PcapReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut out = Vec::new();
    // Raw records: pcap-file's checked ones refuse an original length
    // above the snap length, which is what a snap length is for.
    while let Some(p) = r.next_raw_packet() {
        let p = p.unwrap();
        out.push((p.data.len(), p.orig_len));
    }
    out
}

/// `probes.snaplen` keeps the headers of each packet (its record says how
/// long the packet was); a sweep does so unless told otherwise, and says
/// what its pcaps will take before it starts.
#[test]
fn snap_length_in_runs_and_sweeps() {
    let base = std::env::temp_dir().join(format!("mplab-snap-{}", std::process::id()));
    let scen = scenario("tcp-single.toml");
    let o = Command::new(env!("CARGO_BIN_EXE_mplab")).args(["run", scen.to_str().unwrap(), "--quiet", "--set", "duration=1s", "--set", "probes.snaplen=128", "--out", base.join("run").to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let pcap = std::fs::read_dir(base.join("run/pcap")).unwrap().next().unwrap().unwrap().path();
    let recs = records(&pcap);
    assert!(recs.iter().all(|&(n, _)| n <= 128) && recs.iter().any(|&(_, orig)| orig >= 1400), "{:?}", &recs[..recs.len().min(5)]);
    // mplab trace reads a headers-only capture (what needs payload is not checked).
    let t = Command::new(env!("CARGO_BIN_EXE_mplab")).args(["trace", pcap.to_str().unwrap()]).output().unwrap();
    assert!(t.status.success() && String::from_utf8_lossy(&t.stdout).contains("0 MISMATCH"), "{}", String::from_utf8_lossy(&t.stderr));
    let o = Command::new(env!("CARGO_BIN_EXE_mplab"))
        .args(["sweep", scen.to_str().unwrap(), "--param", "links.0.rate=5Mbit,10Mbit", "--set", "duration=1s", "--no-plots", "--out", base.join("sweep").to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("128 B of each packet") && err.contains("MB for the 2 runs"), "{err}");
    let mut seen = 0;
    for entry in walk(&base.join("sweep/runs")) {
        if entry.extension().is_some_and(|e| e == "pcap") {
            assert!(records(&entry).iter().all(|&(n, _)| n <= 128), "{}", entry.display());
            seen += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&base);
    assert!(seen >= 2, "each run wrote its pcap");
}

fn walk(d: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Subflow rows and plot legends name the path (interface and link), not
/// only `sf0` and an address.
#[test]
fn subflows_are_named_by_their_interface_and_link() {
    let out = std::env::temp_dir().join(format!("mplab-paths-{}", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_mplab")).args(["run", scenario("seed000-lab1.toml").to_str().unwrap(), "--plots", "--out", out.to_str().unwrap()]).output().unwrap();
    let table = String::from_utf8_lossy(&o.stdout).to_string();
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap_or_default();
    let legend = std::fs::read_to_string(out.join("plots/goodput_time.svg")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for p in ["client:eth0 (wan1)", "client:eth1 (wan2)"] {
        assert!(table.contains(p) && summary.contains(p) && legend.contains(p), "{p} missing: {table}");
    }
}

/// Seeds that cannot change a loss-free run are named as such; a flow's
/// `start_jitter` draws its start from the seed, so seeds then differ, and
/// the same seed gives the same start.
#[test]
fn seeds_without_effect_are_named_and_start_jitter_gives_them_one() {
    let base = std::env::temp_dir().join(format!("mplab-seeds-{}", std::process::id()));
    let scen = scenario("tcp-single.toml");
    let sweep = |d: &str, extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_mplab"))
            .args(["sweep", scen.to_str().unwrap(), "--seeds", "3", "--set", "duration=2s", "--set", "probes.pcap=[]", "--no-plots", "--out", base.join(d).to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    let err = sweep("plain", &[]);
    assert!(err.contains("note: every seed gave each point the same results") && err.contains("start_jitter"), "{err}");
    let err = sweep("jitter", &["--set", "flows[0].start_jitter=500ms"]);
    assert!(!err.contains("note: every seed"), "{err}");
    // The start each seed drew: network.json of each run, and again.
    let start = |seed: u64| -> u64 {
        let out = base.join(format!("run-{seed}"));
        let o = Command::new(env!("CARGO_BIN_EXE_mplab"))
            .args(["run", scen.to_str().unwrap(), "--quiet", "--seed", &seed.to_string(), "--set", "duration=2s", "--set", "flows[0].start_jitter=500ms", "--out", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let net: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("network.json")).unwrap()).unwrap();
        net["flows"][0]["start_ns"].as_u64().unwrap()
    };
    let (a, b, a2) = (start(1), start(2), start(1));
    let _ = std::fs::remove_dir_all(&base);
    assert!(a < 500_000_000 && b < 500_000_000 && a != b, "{a} {b}");
    assert_eq!(a, a2, "the same seed, the same start");
}

/// With seed 000's 4 MB buffers every chunk has one subflow with room, so
/// the scheduler never chooses: the run says so. With 200 KB buffers it
/// chooses, and no such note appears.
#[test]
fn a_scheduler_that_never_chose_is_named() {
    let base = std::env::temp_dir().join(format!("mplab-choice-{}", std::process::id()));
    let run = |d: &str, extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_mplab"))
            .args(["run", scenario("seed000-lab1.toml").to_str().unwrap(), "--set", "transport.mptcp.scheduler=blest", "--out", base.join(d).to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let big = run("big", &[]);
    let small = run("small", &["--set", "transport.tcp.rcv_buf=200KB", "--set", "transport.tcp.snd_buf=200KB"]);
    let _ = std::fs::remove_dir_all(&base);
    assert!(big.contains("note: flow iperf: the packet scheduler never had a choice"), "{big}");
    assert!(!small.contains("never had a choice"), "{small}");
}

/// A phone on LTE (`rmnet0`) and Wi-Fi (`wlan0`): `rmnet0` comes first by
/// name, so the default route and the initial subflow go over LTE; its
/// endpoint says `backup`. Once established the initial subflow becomes a
/// backup (MP_PRIO, as Linux 6.18 does) and the Wi-Fi subflow carries the
/// transfer.
#[test]
fn a_backup_endpoint_on_the_default_route_takes_effect() {
    let dir = std::env::temp_dir().join(format!("mplab-backup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scen = dir.join("phone.toml");
    std::fs::write(
        &scen,
        r#"name = "phone"
duration = "10s"
[[nodes]]
name = "phone"
[[nodes]]
name = "r"
kind = "router"
[[nodes]]
name = "server"
[[links]]
name = "lte"
a = "phone:rmnet0"
b = "r"
rate = "8Mbit"
delay = "20ms"
[[links]]
name = "wifi"
a = "phone:wlan0"
b = "r"
rate = "20Mbit"
delay = "5ms"
[[links]]
a = "r"
b = "server"
rate = "1Gbit"
[transport.mptcp]
path_manager = "endpoints"
[[transport.mptcp.endpoints]]
node = "phone"
iface = "rmnet0"
flags = ["subflow", "backup"]
[[transport.mptcp.endpoints]]
node = "phone"
iface = "wlan0"
flags = ["subflow"]
[[flows]]
name = "dl"
from = "phone"
to = "server"
transport = "mptcp"
"#,
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_mplab")).args(["run", scen.to_str().unwrap(), "--json", "--out", dir.join("out").to_str().unwrap()]).output().unwrap();
    // Both interfaces backup: the flag cannot prefer a path, and says so.
    let all = Command::new(env!("CARGO_BIN_EXE_mplab"))
        .args(["run", scen.to_str().unwrap(), "--json", "--set", "transport.mptcp.endpoints[1].flags=[\"subflow\", \"backup\"]", "--out", dir.join("all").to_str().unwrap()])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let warn = String::from_utf8_lossy(&all.stderr);
    assert!(warn.contains("warning:") && warn.contains("every interface of phone is a backup endpoint"), "{warn}");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("note: phone's initial subflows leave through rmnet0") && err.contains("becomes a backup"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let sf = v["flows"][0]["subflows"].as_array().unwrap();
    let lte = sf.iter().find(|s| s["path"].as_str().unwrap_or("").contains("rmnet0")).expect("the LTE subflow");
    let wifi = sf.iter().find(|s| s["path"].as_str().unwrap_or("").contains("wlan0")).expect("the Wi-Fi subflow");
    assert_eq!(lte["backup"], true, "{sf:?}");
    assert_eq!(wifi["backup"], false);
    let (l, w) = (lte["bytes_sent"].as_u64().unwrap(), wifi["bytes_sent"].as_u64().unwrap());
    // Only what went out before MP_PRIO (the first round trips) uses LTE.
    assert!(l * 20 < w, "LTE {l} B, Wi-Fi {w} B");
}
