//! `mplab run` end to end on the simulator: the results directory of
//! docs/results.md, byte-identical results for a seed, exit codes and
//! error messages that name file, line, column and field, the pcaps as
//! tshark reads them, and the help text. The tshark checks skip when tshark
//! is absent outside CI (scripts/setup.sh installs it).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The 10 Mbit/s link of scenarios/tcp-single.toml.
const LINK_BPS: f64 = 10e6;
/// What a 1500-byte MTU leaves for payload (IP 20 + TCP 20 + timestamps 12).
const PAYLOAD_SHARE: f64 = 1448.0 / 1500.0;

fn scenario(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(name)
}

/// A scratch directory unique to this process and test, removed when the
/// test ends (kept, and named on stderr, when it fails).
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("mplab-run-cli-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }

    fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {} for inspection", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs mplab in `cwd` (so a forgotten --out never writes into the repository).
fn mplab<S: AsRef<OsStr>>(cwd: &Path, args: &[S]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_mplab")).args(args).current_dir(cwd).output().unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// `mplab run scenarios/tcp-single.toml --out OUT --json --set duration=5s
/// EXTRA...`, which must succeed; returns the summary printed on stdout.
fn run_tcp_single(cwd: &Path, out: &Path, extra: &[&str]) -> Value {
    let sc = scenario("tcp-single.toml");
    let mut args: Vec<&OsStr> = vec!["run".as_ref(), sc.as_os_str(), "--out".as_ref(), out.as_os_str(), "--json".as_ref(), "--set".as_ref(), "duration=5s".as_ref()];
    args.extend(extra.iter().map(|s| OsStr::new(*s)));
    let r = mplab(cwd, &args);
    assert_eq!(r.code, 0, "mplab run {extra:?} failed: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", r.stdout))
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&read(p)).unwrap_or_else(|e| panic!("{}: not JSON: {e}", p.display()))
}

/// Header and rows of a CSV file (no quoting in mplab's CSVs).
fn read_csv(p: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = String::from_utf8(read(p)).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap_or_else(|| panic!("{}: empty", p.display())).split(',').map(str::to_string).collect();
    let rows: Vec<Vec<String>> = lines.map(|l| l.split(',').map(str::to_string).collect()).collect();
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.len(), header.len(), "{} row {}: {r:?} does not match header {header:?}", p.display(), i + 1);
    }
    (header, rows)
}

fn num(v: &Value, what: &str) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("{what}: expected a number, got {v}"))
}

fn int(v: &Value, what: &str) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("{what}: expected an unsigned integer, got {v}"))
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-9)
}

/// 1-based line and column of the first `"` on the line containing `needle`.
fn line_col_of(text: &str, needle: &str) -> (usize, usize) {
    let (i, l) = text.lines().enumerate().find(|(_, l)| l.contains(needle)).unwrap_or_else(|| panic!("{needle:?} not in scenario"));
    (i + 1, l.find('"').unwrap() + 1)
}

// ---- 1. the results directory ----------------------------------------------

#[test]
fn tcp_single_writes_the_results_directory() {
    let tmp = Scratch::new("results-dir");
    let out = tmp.join("out");
    let v = run_tcp_single(&tmp.0, &out, &[]);

    // --json prints exactly summary.json.
    assert_eq!(v, read_json(&out.join("summary.json")), "stdout differs from summary.json");
    assert_eq!(v["scenario"], "tcp-single");
    assert_eq!(v["backend"], "sim");
    assert_eq!(v["seed"], 1, "the scenario's default seed");
    assert_eq!(num(&v["duration_s"], "duration_s"), 5.0);

    // The flow.
    let flows = v["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 1);
    let f = &flows[0];
    assert_eq!(f["name"], "bulk");
    assert_eq!(f["transport"], "tcp");
    assert_eq!(f["verified"], true);
    assert_eq!(f["fallback"], false);
    assert_eq!(f["completed"], false, "an unbounded bulk flow never completes");
    let goodput = num(&f["goodput_bps"], "goodput_bps");
    assert!((0.85 * LINK_BPS..=0.97 * LINK_BPS).contains(&goodput), "goodput {:.3} Mbit/s on a 10 Mbit/s link", goodput / 1e6);
    assert!(goodput <= LINK_BPS * PAYLOAD_SHARE * 1.001, "goodput {goodput} beats the payload share of the link");
    let delivered = int(&f["bytes_delivered"], "bytes_delivered");
    assert!(delivered > 0);
    assert!(close(goodput, delivered as f64 * 8.0 / 5.0, 1e-3), "goodput {goodput} is not bytes_delivered x 8 / 5 s ({delivered})");
    let retrans = int(&f["retransmitted_segments"], "retransmitted_segments");
    int(&f["rto_count"], "rto_count");
    let srtt = num(&f["mean_srtt_ms"], "mean_srtt_ms");
    // 40 ms of propagation, at most 70 packets x 1.2 ms of queue on top.
    assert!((40.0..=130.0).contains(&srtt), "mean srtt {srtt} ms");

    let subflows = f["subflows"].as_array().unwrap();
    assert_eq!(subflows.len(), 1, "a TCP flow is one subflow");
    let sf = &subflows[0];
    assert_eq!(sf["local"], "10.0.0.1:49152");
    assert_eq!(sf["remote"], "10.0.0.2:5001");
    assert_eq!(sf["backup"], false);
    let sent = int(&sf["bytes_sent"], "bytes_sent");
    assert!(sent >= delivered, "sent {sent} < delivered {delivered}");
    let sf_goodput = num(&sf["goodput_bps"], "subflow goodput_bps");
    assert!(close(sf_goodput, goodput, 0.05), "subflow goodput {sf_goodput} vs flow {goodput}");
    assert_eq!(int(&sf["retransmitted_segments"], "subflow retransmitted_segments"), retrans, "flow retransmissions are summed over subflows");

    // Interfaces: every interface of every node.
    let ifs = v["interfaces"].as_array().unwrap();
    let names: Vec<String> = ifs.iter().map(|i| format!("{}:{}", i["node"].as_str().unwrap(), i["iface"].as_str().unwrap())).collect();
    assert_eq!(names, ["client:eth0", "server:eth0"]);
    for i in ifs {
        for (bps, bytes) in [("tx_bps", "tx_bytes"), ("rx_bps", "rx_bytes")] {
            let r = num(&i[bps], bps);
            let b = int(&i[bytes], bytes);
            assert!(close(r, b as f64 * 8.0 / 5.0, 1e-6), "{i}: {bps} is not {bytes} x 8 / 5 s");
        }
    }
    let client = &ifs[0];
    let server = &ifs[1];
    assert!(int(&client["tx_bytes"], "tx_bytes") >= delivered, "headers included, the client sends more than is delivered");
    assert!(int(&server["rx_bytes"], "rx_bytes") <= int(&client["tx_bytes"], "tx_bytes"));
    assert!(num(&client["rx_bps"], "rx_bps") > 0.0, "the client receives ACKs");
    assert!(num(&client["tx_bps"], "tx_bps") <= LINK_BPS * 1.001, "client sends {} bit/s on average on a 10 Mbit/s link", client["tx_bps"]);

    // Links: both directions; the only drops are the queue's, and every
    // retransmission repairs one (nothing reorders or corrupts here).
    let links = v["links"].as_array().unwrap();
    assert_eq!(links.len(), 2);
    let mut drops = 0;
    for l in links {
        assert_eq!(l["name"], "client-server");
        assert_eq!(l["drops_loss"], 0, "{l}");
        assert_eq!(l["drops_down"], 0, "{l}");
        assert!(int(&l["max_queue_bytes"], "max_queue_bytes") <= 70 * 1500, "{l}: queue of 70 packets");
        drops += int(&l["drops_queue"], "drops_queue");
    }
    assert!(retrans <= drops, "{retrans} retransmissions but only {drops} packets dropped: spurious retransmissions");
    assert!(v["notes"].is_array());

    // flows.csv: one row per 100 ms probe over 5 s.
    let (h, rows) = read_csv(&out.join("flows.csv"));
    assert_eq!(h[..4], ["time_s", "flow", "subflow", "goodput_bps"], "flows.csv header {h:?}");
    assert_eq!(rows.len(), 50, "flows.csv rows");
    let mut sum = 0.0;
    for (i, r) in rows.iter().enumerate() {
        let t: f64 = r[0].parse().unwrap();
        assert!((t - 0.1 * (i + 1) as f64).abs() < 1e-6, "row {}: time_s {t}", i + 1);
        assert_eq!((r[1].as_str(), r[2].as_str()), ("bulk", "all"), "row {}", i + 1);
        sum += r[3].parse::<f64>().unwrap();
    }
    assert!(close(sum / 50.0, goodput, 0.01), "flows.csv goodput averages {} but the summary says {goodput}", sum / 50.0);

    // interfaces.csv: both host interfaces at every probe.
    let (h, rows) = read_csv(&out.join("interfaces.csv"));
    assert_eq!(h[..5], ["time_s", "node", "iface", "tx_bps", "rx_bps"], "interfaces.csv header {h:?}");
    assert_eq!(rows.len(), 100, "interfaces.csv: 50 probes x 2 interfaces");
    let mut client_tx = 0.0;
    for (i, pair) in rows.chunks(2).enumerate() {
        let t = 0.1 * (i + 1) as f64;
        let mut seen: Vec<String> = pair.iter().map(|r| format!("{}:{}", r[1], r[2])).collect();
        seen.sort();
        assert_eq!(seen, ["client:eth0", "server:eth0"], "probe {i}");
        for r in pair {
            assert!((r[0].parse::<f64>().unwrap() - t).abs() < 1e-6, "{r:?} at probe {t}");
            if r[1] == "client" {
                client_tx += r[3].parse::<f64>().unwrap();
            }
        }
    }
    let tx = num(&client["tx_bps"], "tx_bps");
    assert!(close(client_tx / 50.0, tx, 0.01), "interfaces.csv client tx averages {} but the summary says {tx}", client_tx / 50.0);

    // queues.csv: no queues probed, just the header.
    let (h, rows) = read_csv(&out.join("queues.csv"));
    assert_eq!(h, ["time_s", "link", "direction", "queue_bytes", "drops"]);
    assert!(rows.is_empty());

    // The scenario as run, with the --set applied.
    let toml = String::from_utf8(read(&out.join("scenario.toml"))).unwrap();
    assert!(toml.contains("duration = \"5s\"") && !toml.contains("30s"), "scenario.toml lacks the --set:\n{toml}");
    // The file as written, headed by the override that changed it.
    let src = String::from_utf8(read(&out.join("scenario.source.toml"))).unwrap();
    assert!(src.starts_with("# run with --set duration=5s\n") && src.ends_with(&std::fs::read_to_string(scenario("tcp-single.toml")).unwrap()), "{src}");
    let net = read_json(&out.join("network.json"));
    assert_eq!(net["name"], "tcp-single");
    assert_eq!(net["duration_ns"], 5_000_000_000u64);
    assert_eq!(net["nodes"][0]["name"], "client");
    assert_eq!(net["nodes"][1]["name"], "server");
    assert_eq!(net["flows"][0]["sport"], 49152);
    assert_eq!(net["flows"][0]["dport"], 5001);
    let meta = read_json(&out.join("meta.json"));
    assert_eq!(meta["backend"], "sim");
    assert!(meta["wall_time_s"].is_number(), "{meta}");
    // The one CUBIC sender left slow start once, by one of HyStart's two
    // signals, at a window of at least its 16-segment floor; under Linux's
    // counter names, as the kernel backend reports them.
    let hs = &meta["tcp_counters"]["client"];
    let count = |k: &str| hs[k].as_u64().unwrap_or(0);
    let exits = count("TCPHystartTrainDetect") + count("TCPHystartDelayDetect");
    let cwnd = count("TCPHystartTrainCwnd") + count("TCPHystartDelayCwnd");
    assert!(exits == 1 && cwnd >= 16, "slow-start exits: {meta}");
    assert!(meta["tcp_counters"].get("server").is_none(), "the receiver left no slow start: {meta}");

    // The pcap of client:eth0, and nothing else.
    let mut pcaps: Vec<String> = std::fs::read_dir(out.join("pcap")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    pcaps.sort();
    assert_eq!(pcaps, ["client-eth0.pcap"]);
    let pcap = out.join("pcap/client-eth0.pcap");
    let bytes = read(&pcap);
    assert!(!bytes.is_empty());
    let mut r = pcap_file::pcap::PcapReader::new(&bytes[..]).unwrap();
    let hdr = r.header();
    assert_eq!(hdr.datalink, pcap_file::DataLink::RAW, "raw IP");
    assert_eq!(hdr.ts_resolution, pcap_file::TsResolution::NanoSecond);
    let (mut n, mut last, mut from_client, mut from_server) = (0u64, std::time::Duration::ZERO, 0u64, 0u64);
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        n += 1;
        assert!(p.timestamp >= last && p.timestamp <= std::time::Duration::from_secs(5), "packet {n} at {:?}", p.timestamp);
        last = p.timestamp;
        let d = &p.data;
        assert_eq!(p.orig_len as usize, d.len(), "packet {n} truncated");
        assert_eq!((d[0] >> 4, d[9]), (4, 6), "packet {n}: IPv4 TCP");
        assert_eq!(u16::from_be_bytes([d[2], d[3]]) as usize, d.len(), "packet {n}: IP total length");
        match (&d[12..16], &d[16..20]) {
            ([10, 0, 0, 1], [10, 0, 0, 2]) => from_client += d.len() as u64,
            ([10, 0, 0, 2], [10, 0, 0, 1]) => from_server += d.len() as u64,
            (s, t) => panic!("packet {n}: {s:?} -> {t:?}"),
        }
    }
    assert!(n > 1000, "{n} packets in 5 s at 10 Mbit/s");
    // The capture and the interface counters see the same packets.
    assert_eq!(from_client, int(&client["tx_bytes"], "tx_bytes"), "bytes the client sent in the pcap vs tx_bytes");
    assert_eq!(from_server, int(&client["rx_bytes"], "rx_bytes"), "bytes the client received in the pcap vs rx_bytes");
}

// ---- 2. determinism -----------------------------------------------------------

#[test]
fn same_seed_gives_identical_results_and_another_seed_does_not() {
    let tmp = Scratch::new("determinism");
    let lossy = ["--set", "links.0.loss=0.01", "--set", "links.0.jitter=1ms", "-q"];
    let run = |dir: &str, seed: &str| {
        let mut args = vec!["--seed", seed];
        args.extend(lossy);
        let v = run_tcp_single(&tmp.0, &tmp.join(dir), &args);
        assert_eq!(v["seed"], seed.parse::<u64>().unwrap(), "--seed overrides the scenario's seed");
        v
    };
    let a = run("a", "7");
    run("b", "7");
    run("c", "8");
    // The variant really is random: otherwise this test proves nothing.
    let lost: u64 = a["links"].as_array().unwrap().iter().map(|l| int(&l["drops_loss"], "drops_loss")).sum();
    assert!(lost > 0, "1% loss dropped nothing: {}", a["links"]);
    assert_eq!(a["flows"][0]["verified"], true);

    let files = ["summary.json", "flows.csv", "interfaces.csv", "queues.csv", "pcap/client-eth0.pcap"];
    for f in files {
        let (x, y) = (read(&tmp.join("a").join(f)), read(&tmp.join("b").join(f)));
        assert!(!x.is_empty(), "{f} is empty");
        assert!(x == y, "{f} differs between two runs with seed 7");
    }
    assert!(tmp.join("a/meta.json").exists() && tmp.join("b/meta.json").exists());
    for f in ["summary.json", "flows.csv", "pcap/client-eth0.pcap"] {
        assert!(read(&tmp.join("a").join(f)) != read(&tmp.join("c").join(f)), "{f} is the same for seeds 7 and 8");
    }
    // Not just the seed field: the run itself differs.
    let c = read_json(&tmp.join("c/summary.json"));
    assert_ne!(a["flows"], c["flows"], "seeds 7 and 8 give the same flow results");
}

// ---- 3. errors ------------------------------------------------------------------

/// Writes tcp-single.toml with `edit` applied into `tmp`, returns its path and text.
fn edited_scenario(tmp: &Scratch, file: &str, edit: impl Fn(&str) -> String) -> (PathBuf, String) {
    let text = edit(&String::from_utf8(read(&scenario("tcp-single.toml"))).unwrap());
    let p = tmp.join(file);
    std::fs::write(&p, &text).unwrap();
    (p, text)
}

/// Runs a scenario that must be rejected: exit 2, nothing on stdout, no
/// results directory; returns stderr.
fn rejected(tmp: &Scratch, args: &[&OsStr]) -> String {
    let out = tmp.join("out");
    let mut all: Vec<&OsStr> = vec!["run".as_ref()];
    all.extend_from_slice(args);
    all.extend(["--out".as_ref(), out.as_os_str()]);
    let r = mplab(&tmp.0, &all);
    assert_eq!(r.code, 2, "{args:?}: expected exit 2; stderr: {}", r.stderr);
    assert!(r.stdout.is_empty(), "{args:?}: stdout {:?}", r.stdout);
    assert!(!r.stderr.trim().is_empty(), "{args:?}: no message");
    assert!(!out.exists(), "{args:?}: a rejected run left a results directory");
    r.stderr
}

#[test]
fn rate_typo_names_file_line_column_and_field() {
    let tmp = Scratch::new("rate-typo");
    let (p, text) = edited_scenario(&tmp, "typo.toml", |t| t.replacen("rate = \"10Mbit\"", "rate = \"10Mbt\"", 1));
    let (line, col) = line_col_of(&text, "10Mbt");
    let err = rejected(&tmp, &[p.as_os_str()]);
    let at = format!("{}:{line}:{col}:", p.display());
    assert!(err.contains(&at), "expected {at} in: {err}");
    assert!(err.contains("links[0].rate") && err.contains("10Mbt"), "{err}");

    // A misspelt key is an error too, not silently ignored.
    let (p, text) = edited_scenario(&tmp, "key.toml", |t| t.replacen("delay = \"20ms\"", "delya = \"20ms\"", 1));
    let (line, _) = line_col_of(&text, "delya");
    let err = rejected(&tmp, &[p.as_os_str()]);
    assert!(err.contains(&format!("{}:{line}:", p.display())), "expected line {line} in: {err}");
    assert!(err.contains("links[0].delya"), "{err}");
}

#[test]
fn bad_set_names_the_set_and_the_field() {
    let tmp = Scratch::new("bad-set");
    let sc = scenario("tcp-single.toml");
    let err = rejected(&tmp, &[sc.as_os_str(), "--set".as_ref(), "links.0.rate=fast".as_ref()]);
    assert!(err.contains("--set links.0.rate=fast"), "{err}");
    assert!(err.contains("links[0].rate") && err.contains("fast"), "{err}");
    assert!(err.contains("tcp-single.toml"), "{err}");

    let err = rejected(&tmp, &[sc.as_os_str(), "--set".as_ref(), "links.0.ratee=5Mbit".as_ref()]);
    assert!(err.contains("links[0].ratee"), "{err}");
    let err = rejected(&tmp, &[sc.as_os_str(), "--set".as_ref(), "duration".as_ref()]);
    assert!(err.contains("duration"), "{err}");
}

#[test]
fn unsupported_congestion_control_names_its_line() {
    let tmp = Scratch::new("bbr");
    // On the flow.
    let (p, text) = edited_scenario(&tmp, "flow-bbr.toml", |t| t.replacen("app = \"bulk\"", "app = \"bulk\"\ncc = \"bbr\"", 1));
    let (line, col) = line_col_of(&text, "\"bbr\"");
    let err = rejected(&tmp, &[p.as_os_str()]);
    let at = format!("{}:{line}:{col}:", p.display());
    assert!(err.contains(&at), "expected {at} in: {err}");
    assert!(err.contains("flows[0].cc") && err.contains("bbr"), "{err}");
    // As the [transport.tcp] default.
    let (p, text) = edited_scenario(&tmp, "transport-bbr.toml", |t| t.replacen("cc = \"cubic\"", "cc = \"bbr\"", 1));
    let (line, _) = line_col_of(&text, "\"bbr\"");
    let err = rejected(&tmp, &[p.as_os_str()]);
    assert!(err.contains(&format!("{}:{line}:", p.display())), "expected line {line} in: {err}");
    assert!(err.contains("transport.tcp.cc") && err.contains("bbr"), "{err}");
    // Through --set: the message names the --set.
    let sc = scenario("tcp-single.toml");
    let err = rejected(&tmp, &[sc.as_os_str(), "--set".as_ref(), "transport.tcp.cc=bbr".as_ref()]);
    assert!(err.contains("bbr"), "{err}");
}

#[test]
fn missing_scenario_file_names_the_file() {
    let tmp = Scratch::new("missing");
    let p = tmp.join("no-such-scenario.toml");
    let err = rejected(&tmp, &[p.as_os_str()]);
    assert!(err.contains(&p.display().to_string()), "{err}");
}

/// The userspace backend runs (tests/userspace_interop.rs); what it cannot
/// run is refused before anything is set up, naming the line and field.
#[test]
fn userspace_backend_refuses_an_unknown_stack() {
    let tmp = Scratch::new("userspace");
    let (p, text) = edited_scenario(&tmp, "stack.toml", |t| t.replacen("name = \"client\"", "name = \"client\"\nstack = \"lwip\"", 1));
    let err = rejected(&tmp, &[p.as_os_str(), "--backend".as_ref(), "userspace".as_ref()]);
    let (line, _) = line_col_of(&text, "lwip");
    assert!(err.contains(&format!("stack.toml:{line}:")) && err.contains("nodes[0].stack") && err.contains("lwip"), "{err}");
}

// ---- 4. tshark ------------------------------------------------------------------

fn have_tshark() -> bool {
    if Command::new("tshark").arg("-v").output().is_ok_and(|o| o.status.success()) {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("CI must install tshark (scripts/setup.sh)");
    }
    eprintln!("skipping: tshark is not on PATH");
    false
}

fn tshark(pcap: &Path, args: &[&str]) -> String {
    let o = Command::new("tshark").arg("-r").arg(pcap).args(args).output().unwrap();
    assert!(o.status.success(), "tshark {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// Frames matching a display filter.
fn tshark_count(pcap: &Path, filter: &str) -> usize {
    tshark(pcap, &["-Y", filter]).lines().count()
}

#[test]
fn tshark_reads_the_capture_cleanly() {
    if !have_tshark() {
        return;
    }
    let tmp = Scratch::new("tshark");
    let out = tmp.join("out");
    let v = run_tcp_single(&tmp.0, &out, &[]);
    let pcap = out.join("pcap/client-eth0.pcap");
    let f = &v["flows"][0];

    // TCP segments, all of one connection, starting with the handshake.
    let fields = tshark(&pcap, &["-T", "fields", "-e", "tcp.stream", "-e", "tcp.len", "-e", "_ws.expert.message"]);
    let lines: Vec<Vec<&str>> = fields.lines().map(|l| l.split('\t').collect()).collect();
    assert!(lines.len() > 1000, "{} frames", lines.len());
    assert!(lines[0][2].contains("SYN"), "first frame: {:?}", lines[0]);
    let mut payload = 0u64;
    for l in &lines {
        assert_eq!(l[0], "0", "one TCP connection: {l:?}");
        payload += l[1].parse::<u64>().unwrap_or_else(|_| panic!("no tcp.len in {l:?}"));
    }
    let delivered = int(&f["bytes_delivered"], "bytes_delivered");
    let sent = int(&f["subflows"][0]["bytes_sent"], "bytes_sent");
    assert!(payload >= delivered && payload <= sent, "tshark counts {payload} payload bytes; delivered {delivered}, sent {sent}");

    // Nothing malformed, every checksum right.
    let expert = tshark(&pcap, &["-q", "-z", "expert"]);
    assert!(!expert.lines().any(|l| l.contains("Malformed")), "{expert}");
    let sums = tshark(&pcap, &["-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE", "-T", "fields", "-e", "ip.checksum.status", "-e", "tcp.checksum.status"]);
    assert_eq!(sums.lines().count(), lines.len());
    assert!(sums.lines().all(|l| l == "1\t1"), "bad or unverified checksums: {:?}", sums.lines().find(|l| *l != "1\t1"));

    // The drop-tail queue overflows (CUBIC fills any buffer), so there are
    // retransmissions; tshark sees those the queue let through, and none is
    // spurious.
    let retrans = int(&f["retransmitted_segments"], "retransmitted_segments") as usize;
    let seen = tshark_count(&pcap, "tcp.analysis.retransmission or tcp.analysis.out_of_order");
    assert!(seen <= retrans, "tshark sees {seen} retransmissions, the summary says {retrans}");
    assert_eq!(seen > 0, retrans > 0, "tshark sees {seen} retransmissions, the summary says {retrans}");
    assert_eq!(tshark_count(&pcap, "tcp.analysis.spurious_retransmission"), 0);
}

#[test]
fn lossless_run_has_no_retransmissions_in_summary_or_capture() {
    // A 100 KB receive window stays below the BDP (50 KB) plus the queue
    // (105 KB): the link stays full and nothing is ever dropped.
    let tmp = Scratch::new("lossless");
    let out = tmp.join("out");
    let v = run_tcp_single(&tmp.0, &out, &["--set", "transport.tcp.rcv_buf=100KB"]);
    let f = &v["flows"][0];
    assert_eq!(f["retransmitted_segments"], 0, "{f}");
    assert_eq!(f["rto_count"], 0, "{f}");
    for l in v["links"].as_array().unwrap() {
        assert_eq!((&l["drops_queue"], &l["drops_loss"]), (&Value::from(0), &Value::from(0)), "{l}");
    }
    let goodput = num(&f["goodput_bps"], "goodput_bps");
    assert!(goodput >= 0.85 * LINK_BPS, "goodput {goodput}");
    if !have_tshark() {
        return;
    }
    let pcap = out.join("pcap/client-eth0.pcap");
    let retrans = tshark(&pcap, &["-Y", "tcp.analysis.retransmission"]);
    assert!(retrans.trim().is_empty(), "tshark finds retransmissions:\n{retrans}");
    assert_eq!(tshark_count(&pcap, "tcp.analysis.lost_segment or tcp.analysis.out_of_order"), 0);
}

// ---- 5. help ---------------------------------------------------------------------

#[test]
fn run_help_lists_the_options() {
    let tmp = Scratch::new("help");
    let r = mplab(&tmp.0, &["run", "--help"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for opt in ["--seed", "--set", "--out", "--json", "--backend"] {
        assert!(r.stdout.contains(opt), "run --help lacks {opt}:\n{}", r.stdout);
    }
    assert!(r.stdout.contains("sim"), "{}", r.stdout);
}

#[test]

fn run_help_keeps_examples_on_their_own_lines() {
    let tmp = Scratch::new("help-examples");
    let r = mplab(&tmp.0, &["run", "--help"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.lines().any(|l| l.trim() == "mplab run scenarios/tcp-single.toml"), "examples run together:\n{}", r.stdout);
}

// ---- what an interface can send --------------------------------------------------

#[test]

fn interface_never_sends_faster_than_its_link() {
    let tmp = Scratch::new("wire-rate");
    let out = tmp.join("out");
    run_tcp_single(&tmp.0, &out, &["-q"]);

    // interfaces.csv, "what bwm-ng shows": at most the link rate, give or
    // take one 1500-byte packet per 100 ms interval.
    let (_, rows) = read_csv(&out.join("interfaces.csv"));
    let slack = 1500.0 * 8.0 / 0.1;
    let over: Vec<String> = rows
        .iter()
        .filter(|r| r[1] == "client" && r[3].parse::<f64>().unwrap() > LINK_BPS + slack)
        .map(|r| format!("t={} tx {} bit/s", r[0], r[3]))
        .collect();
    assert!(over.is_empty(), "client:eth0 sends faster than its 10 Mbit/s link: {over:?}");

    // The pcap: a packet cannot start before the previous one is on the wire.
    let bytes = read(&out.join("pcap/client-eth0.pcap"));
    let mut r = pcap_file::pcap::PcapReader::new(&bytes[..]).unwrap();
    let mut prev: Option<(std::time::Duration, usize)> = None;
    let mut overlaps = 0;
    let mut first = None;
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        if p.data[12..16] != [10, 0, 0, 1] {
            continue;
        }
        if let Some((t, len)) = prev {
            let wire = std::time::Duration::from_nanos((len as f64 * 8.0 / LINK_BPS * 1e9) as u64 - 1);
            if p.timestamp < t + wire {
                overlaps += 1;
                first.get_or_insert(p.timestamp);
            }
        }
        prev = Some((p.timestamp, p.data.len()));
    }
    assert_eq!(overlaps, 0, "{overlaps} client packets start before the previous one finished serialising (first at {first:?})");
}
