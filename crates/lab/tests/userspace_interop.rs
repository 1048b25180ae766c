//! The userspace backend against Linux: mplab's MPTCP stack on a TUN in one
//! scenario host, the kernel's MPTCP in the other, over the link emulator.
//! Every receiver checks every byte against the stream pattern; the mplab
//! ends also hash what they read (SHA-256, in meta.json). Needs root; every
//! test removes its namespaces even when it fails, and every loop is bounded
//! by the scenario's duration.

mod kernel_support;

use std::process::Command;

use kernel_support::topologies::{two_paths, via_router};
use kernel_support::{can_run, ip_within, resolve, serial, tshark_fields, window_mbit, NsGuard};
use mplab_emu::kernel::KernelRun;



const FULLMESH: &str = "[transport.mptcp]\npath_manager = \"fullmesh\"\n";

fn bulk(bytes: Option<&str>) -> String {
    let b = bytes.map(|b| format!("bytes = \"{b}\"\n")).unwrap_or_default();
    format!("[[flows]]\nname = \"up\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"mptcp\"\napp = \"bulk\"\nport = 5001\n{b}")
}

/// A download that starts at `start` (after an earlier flow's slow start:
/// see docs/userspace-backend.md on Linux resetting joins whose first
/// segment after the third ACK is lost).
fn download_at(bytes: &str, start: &str) -> String {
    format!("[[flows]]\nname = \"down\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"mptcp\"\napp = \"download\"\nbytes = \"{bytes}\"\nport = 5002\nstart = \"{start}\"\n")
}

fn download(bytes: &str) -> String {
    download_at(bytes, "0s")
}

/// Runs a scenario text on the userspace backend under the guard's prefix,
/// again if the host stalled it (`kernel_support::unless_stalled`).
fn run_us(g: &NsGuard, i: usize, toml: &str, pcap: Option<&std::path::Path>) -> KernelRun {
    reported(kernel_support::run_userspace_pcap(g, i, toml, pcap))
}

/// [`run_us`] once: for tests whose helpers act on the run's namespaces by
/// name while it runs.
fn run_us_once(g: &NsGuard, i: usize, toml: &str, pcap: Option<&std::path::Path>) -> KernelRun {
    reported(kernel_support::run_userspace_once(g, i, toml, pcap))
}

fn reported(r: KernelRun) -> KernelRun {
    for n in &r.results.summary.notes {
        eprintln!("note: {n}");
    }
    eprintln!("mplab hosts: {}", r.meta["mplab_hosts"]);
    r
}

fn mplab_trace(pcap: &std::path::Path) -> (i32, String) {
    let bin = env!("CARGO_BIN_EXE_mplab");
    let out = Command::new(bin).arg("trace").arg(pcap).output().expect("run mplab trace");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

fn pcap_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mplab-us-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// mplab client -> kernel server: MP_CAPABLE, joins over both paths
/// (client-initiated, and to the address the kernel announces), 2 x 10
/// Mbit/s aggregated, a bounded download the other way, DATA_FIN.
#[test]
fn userspace_mplab_client_kernel_server() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("usck");
    let toml = two_paths("8s", "mplab", "kernel", &format!("{FULLMESH}{}", bulk(None)));
    let r = run_us(&g, 0, &toml, None);
    let f = &r.results.summary.flows[0];
    let agg = window_mbit(&r, "up", 2.0, 8.0);
    eprintln!("mplab -> kernel: {agg:.2} Mbit/s (2..8 s); {f:?}");
    assert!(f.verified && !f.fallback, "{f:?}");
    assert!(f.subflows.len() >= 2, "subflows: {:?}", f.subflows);
    assert!(agg >= 18.0, "aggregate {agg:.2} Mbit/s < 18");
    // mplab's stack reports its send buffer like a kernel socket: the
    // `mplab` profile's fixed 4 MiB, and what it holds within it.
    let sb = &r.results.send_buffers;
    assert!(sb.len() >= 20, "{} send-buffer samples in 8 s", sb.len());
    assert!(sb.iter().all(|s| s.buffer_bytes == 4 << 20 && s.queued_bytes <= s.buffer_bytes), "{sb:?}");
    g.assert_clean();
}

/// kernel client -> mplab server: the kernel opens the joins, data both
/// ways (bulk up, a bounded download), both verified.
#[test]
fn userspace_kernel_client_mplab_server() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("uskc");
    let toml = two_paths("8s", "kernel", "mplab", &format!("{FULLMESH}{}{}", bulk(Some("4MB")), download_at("4MB", "3s")));
    let r = run_us(&g, 0, &toml, None);
    for f in &r.results.summary.flows {
        eprintln!("kernel -> mplab: {f:?}");
        assert!(f.verified && !f.fallback && f.completed, "{f:?}");
        assert_eq!(f.bytes_delivered, 4_000_000, "{f:?}");
    }
    g.assert_clean();
}

/// SHA-256 (hex) of the first `n` bytes of the stream pattern, by `sha256sum`.
fn pattern_sha256(n: u64) -> String {
    use std::io::Write;
    let mut child = Command::new("sha256sum").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().expect("sha256sum");
    {
        let mut i = child.stdin.take().unwrap();
        let block: Vec<u8> = (0..65536u64).map(mplab_backend::apps::pattern_byte).collect();
        let mut left = n;
        while left > 0 {
            let k = left.min(65536) as usize;
            i.write_all(&block[..k]).unwrap();
            left -= k as u64;
        }
    }
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap_or("").to_string()
}

/// Every stream an mplab end read hashes like the pattern (SHA-256).
fn assert_digests(r: &KernelRun) {
    for (_, h) in r.meta["mplab_hosts"].as_object().unwrap() {
        for s in h["streams"].as_array().unwrap() {
            let n = s["bytes_read"].as_u64().unwrap();
            if n > 0 {
                assert_eq!(s["sha256"].as_str().unwrap(), pattern_sha256(n), "stream {s}");
            }
        }
        assert_eq!(h["bad_checksum"].as_u64(), Some(0), "{h}");
        // The host's own kernel TCP never answered for mplab's addresses.
        assert_eq!(h["kernel_tcp"]["OutRsts"].as_i64(), Some(0), "{h}");
        assert_eq!(h["rsts_sent"].as_u64(), Some(0), "{h}");
    }
}

/// Both directions with DSS checksums on (the mplab end asks for them).
#[test]
fn userspace_checksums_both_ways() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("uscs");
    let cs = "[transport.mptcp]\npath_manager = \"fullmesh\"\nchecksum = true\n";
    for (i, (c, s)) in [("mplab", "kernel"), ("kernel", "mplab")].into_iter().enumerate() {
        let toml = two_paths("7s", c, s, &format!("{cs}{}{}", bulk(Some("3MB")), download_at("3MB", "3s")));
        let r = run_us(&g, i, &toml, None);
        for f in &r.results.summary.flows {
            eprintln!("checksums, {c} client -> {s} server: {f:?}");
            assert!(f.verified && !f.fallback && f.completed && f.bytes_delivered == 3_000_000, "{c}->{s}: {f:?}");
            assert!(f.subflows.len() >= 2, "{c}->{s}: {:?}", f.subflows);
        }
        assert_digests(&r);
    }
    g.assert_clean();
}

/// Option 30 stripped on both paths: plain TCP, both ways, data verified.
#[test]
fn userspace_fallback_when_option_stripped() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("usfb");
    let strip = "[[middleboxes]]\nkind = \"strip_mptcp\"\nlink = \"p0\"\non = \"all\"\n[[middleboxes]]\nkind = \"strip_mptcp\"\nlink = \"p1\"\non = \"all\"\n";
    for (i, (c, s)) in [("mplab", "kernel"), ("kernel", "mplab")].into_iter().enumerate() {
        let toml = two_paths("7s", c, s, &format!("{strip}{}{}", bulk(Some("2MB")), download_at("2MB", "3s")));
        let r = run_us(&g, i, &toml, None);
        for f in &r.results.summary.flows {
            eprintln!("stripped, {c} client -> {s} server: {f:?}");
            assert!(f.fallback, "{c}->{s}: no fallback: {f:?}");
            assert!(f.verified && f.completed && f.bytes_delivered == 2_000_000, "{c}->{s}: {f:?}");
        }
        assert_digests(&r);
    }
    g.assert_clean();
}

/// A path cut at 3 s and restored at 6 s: the connection goes on over the
/// other path and uses both again afterwards (mplab client, kernel server,
/// then the reverse).
#[test]
fn userspace_link_cut_and_recovery() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("uscut");
    // The mplab host's connection internals every 0.5 s go to stderr, shown
    // when the test fails: a stall after the restore (seen once in CI, a
    // 4 s one) then names the subflow and timer holding the data level up.
    // (The tests of this binary run one at a time, under `serial`.)
    std::env::set_var("MPLAB_US_DEBUG", "1");
    struct Unset;
    impl Drop for Unset {
        fn drop(&mut self) {
            std::env::remove_var("MPLAB_US_DEBUG");
        }
    }
    let _unset = Unset;
    let ev = "[[events]]\nat = \"3s\"\nlink = \"p1\"\naction = \"down\"\n[[events]]\nat = \"6s\"\nlink = \"p1\"\naction = \"up\"\n";
    for (i, (c, s)) in [("mplab", "kernel"), ("kernel", "mplab")].into_iter().enumerate() {
        let toml = two_paths("12s", c, s, &format!("{FULLMESH}{ev}{}", bulk(None)));
        let r = run_us(&g, i, &toml, None);
        let f = &r.results.summary.flows[0];
        for x in r.results.flows.iter().filter(|x| x.subflow == "all") {
            eprint!("{:.2}:{:.1} ", x.time_s, x.goodput_bps / 1e6);
        }
        let before = window_mbit(&r, "up", 1.0, 3.0);
        // The best second of the cut (3.75-6 s, before the restore): when
        // the sender moves its stuck data to the live path depends on where
        // its retransmission timers stood at the cut (a Linux sender took
        // until 5.0 s once, mplab's 4.0 s), not on the receiver; once it
        // has, the live path runs full.
        let cut = (0..=5).map(|k| window_mbit(&r, "up", 3.75 + 0.25 * k as f64, 4.75 + 0.25 * k as f64)).fold(0.0, f64::max);
        let after = window_mbit(&r, "up", 9.0, 12.0);
        eprintln!("\ncut, {c} -> {s}: before {before:.2} best second of the cut {cut:.2} after {after:.2}; {f:?}");
        assert!(f.verified, "{f:?}");
        assert!(cut >= 7.0, "{c}->{s}: {cut:.2} Mbit/s at best on one path");
        assert!(after >= 15.0, "{c}->{s}: {after:.2} Mbit/s after the restore");
    }
    g.assert_clean();
}

/// The second path as a backup (join with the B bit, endpoints path
/// manager): the sender keeps data off it while the first path works.
#[test]
fn userspace_backup_subflow_honoured() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("usbk");
    // The receiver (client of a download) marks its second address backup.
    let eps = "[transport.mptcp]\npath_manager = \"endpoints\"\n[[transport.mptcp.endpoints]]\nnode = \"client\"\niface = \"eth1\"\nflags = [\"subflow\", \"backup\"]\n";
    for (i, (c, s)) in [("mplab", "kernel"), ("kernel", "mplab")].into_iter().enumerate() {
        let toml = via_router("6s", c, s, &format!("{eps}{}", download("5MB")));
        let r = run_us(&g, i, &toml, None);
        let f = &r.results.summary.flows[0];
        eprintln!("backup, {c} client -> {s} server: {f:?}");
        assert!(f.verified && f.completed, "{f:?}");
        assert!(f.subflows.len() >= 2, "no backup subflow: {:?}", f.subflows);
        let main: u64 = f.subflows.iter().filter(|x| !x.remote.starts_with("10.9.1.1:")).map(|x| x.bytes_sent).sum();
        let bk: u64 = f.subflows.iter().filter(|x| x.remote.starts_with("10.9.1.1:")).map(|x| x.bytes_sent).sum();
        assert!(bk * 20 < main, "{c}->{s}: backup path carried {bk} bytes vs {main}");
    }
    g.assert_clean();
}

/// Waits for namespace `ns` to exist (it appears ~0.3 s before the run's
/// time zero). Bounded: false after 20 s.
fn netns_appears(ns: &str) -> bool {
    let t = std::time::Instant::now();
    while !std::path::Path::new(&format!("/run/netns/{ns}")).exists() {
        if t.elapsed() > std::time::Duration::from_secs(20) {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}

/// `ip -n NS mptcp endpoint VERB id ID REST...` for the endpoint of `addr`,
/// `after` into the run's scenario time. Bounded: gives up after 20 s
/// waiting for the namespace, and after 20 s per `ip` command.
fn endpoint_later(ns: String, addr: &'static str, after: std::time::Duration, verb: &'static [&'static str]) -> std::thread::JoinHandle<Option<String>> {
    std::thread::spawn(move || {
        if !netns_appears(&ns) {
            return None;
        }
        std::thread::sleep(after + std::time::Duration::from_millis(600));
        let text = ip_within(&["-n", &ns, "mptcp", "endpoint", "show"])?;
        let id = text.lines().find(|l| l.starts_with(&format!("{addr} ")))?.split_whitespace().skip_while(|w| *w != "id").nth(1)?.to_string();
        ip_within(&[&["-n", &ns, "mptcp", "endpoint", verb[0], "id", &id][..], verb[1..].as_ref()].concat())?;
        Some(format!("{verb:?} {addr} id {id} in {ns}: {text}"))
    })
}

/// The run's per-interface captures merged into one (`mergecap`), so every
/// subflow's both directions are in one file.
fn merged_pcap(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut pcaps: Vec<_> = std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "pcap")).collect();
    pcaps.sort();
    assert!(!pcaps.is_empty(), "no capture in {}", dir.display());
    let out = dir.join("merged.pcapng");
    let ok = Command::new("mergecap").arg("-w").arg(&out).args(&pcaps).status().map(|s| s.success()).unwrap_or(false);
    if ok {
        vec![out]
    } else {
        pcaps
    }
}

/// Segments of `pcap` matching a tshark display filter.
fn tshark_count(pcap: &std::path::Path, filter: &str) -> usize {
    let out = Command::new("tshark").args(["-r"]).arg(pcap).args(["-Y", filter]).output().expect("tshark");
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// When each data-carrying subflow on `addr` was over for mplab's end
/// (seconds into the capture): its first FIN or RST, or the kernel's first
/// RST on it (a kernel receiver that deleted its endpoint resets the data
/// still arriving, and a reset subflow owes no answer); the latest of
/// these, infinity when a subflow never ended.
fn closed_by(pcap: &std::path::Path, addr: &str) -> f64 {
    let fields = |filter: String| -> Vec<Vec<String>> {
        let out = Command::new("tshark").arg("-r").arg(pcap).args(["-Y", &filter, "-T", "fields", "-e", "tcp.stream", "-e", "frame.time_relative"]).output().expect("tshark");
        String::from_utf8_lossy(&out.stdout).lines().map(|l| l.split('\t').map(str::to_string).collect()).collect()
    };
    let mut streams: Vec<String> = fields(format!("ip.addr == {addr} && tcp.len > 0")).into_iter().map(|v| v[0].clone()).collect();
    streams.sort();
    streams.dedup();
    assert!(!streams.is_empty(), "no data on {addr} in {}", pcap.display());
    let ends = fields(format!("ip.addr == {addr} && ((ip.src != {addr} && (tcp.flags.fin == 1 || tcp.flags.reset == 1)) || (ip.src == {addr} && tcp.flags.reset == 1))"));
    streams
        .iter()
        .map(|st| ends.iter().filter(|v| &v[0] == st).filter_map(|v| v.get(1)?.parse::<f64>().ok()).fold(f64::INFINITY, f64::min))
        .fold(0.0, f64::max)
}

/// Drops, in namespace `ns`, every segment leaving with a REMOVE_ADDR
/// (kind 30, length 4, subtype 4) at any 4-byte option offset after the
/// timestamps: nft's `tcp option mptcp subtype` reads only the first MPTCP
/// option, which is the DSS in front of it. Bounded: 20 s.
fn drop_remove_addr_from(ns: String) -> std::thread::JoinHandle<Option<String>> {
    std::thread::spawn(move || {
        if !netns_appears(&ns) {
            return None;
        }
        let mut rules = String::from("table inet mplab_test {\n chain out {\n  type filter hook output priority 0;\n");
        for byte in (32..60).step_by(4) {
            rules += &format!("  tcp doff > {} @th,{},8 30 @th,{},8 4 @th,{},4 4 drop\n", byte / 4, byte * 8, (byte + 1) * 8, (byte + 2) * 8);
        }
        rules += " }\n}\n";
        let mut child = Command::new("ip").args(["netns", "exec", &ns, "nft", "-f", "-"]).stdin(std::process::Stdio::piped()).spawn().ok()?;
        use std::io::Write;
        child.stdin.take()?.write_all(rules.as_bytes()).ok()?;
        child.wait().ok()?.success().then(|| format!("REMOVE_ADDR dropped in {ns}"))
    })
}

/// An address is withdrawn mid-transfer (a scenario `remove_addr` event at
/// 3 s, `ip mptcp endpoint delete` on the kernel's side): mplab stops using
/// it and the data goes on over the rest, verified. Kernel server
/// withdrawing its second address from an mplab client; a kernel client
/// withdrawing its own from an mplab server; and the same again with the
/// client's REMOVE_ADDR dropped on its way out. The kernel end that
/// withdraws is always the receiver: Linux 6.18 can oops when an endpoint
/// is deleted while its own host sends on it (docs/soak.md), and the
/// wedged kernel would fail every later root test. REMOVE_ADDR rides one ACK
/// and nothing repeats it (RFC 8684 3.4.2), so a full queue can lose it:
/// then mplab learns of the withdrawal only from the kernel's FINs on
/// those subflows, and must close its side at once all the same. Every
/// run is captured and checked with `mplab trace` and tshark.
#[test]
fn userspace_remove_addr_and_trace() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("usrm");
    let cases = [("mplab", "kernel", "server", "10.9.1.2", false), ("kernel", "mplab", "client", "10.9.1.1", false), ("kernel", "mplab", "client", "10.9.1.1", true)];
    for (i, (c, s, who, addr, lose_it)) in cases.into_iter().enumerate() {
        let dir = pcap_dir(&format!("rm{i}"));
        let mplab_node = if c == "mplab" { "client" } else { "server" };
        let ev = format!("[[events]]\nat = \"3s\"\nnode = \"{who}\"\niface = \"eth1\"\naction = \"remove_addr\"\n");
        // The withdrawing kernel host receives: the mplab end sends.
        let (flow, traffic) = if who == "client" { ("down", download("200MB")) } else { ("up", bulk(None)) };
        // Text before the first table header of `extra` belongs to [probes].
        let toml = two_paths("8s", c, s, &format!("pcap = [\"{mplab_node}\"]\n{FULLMESH}{ev}{traffic}"));
        let dropper = lose_it.then(|| drop_remove_addr_from(format!("{}-{who}", g.run_prefix(i))));
        let r = run_us_once(&g, i, &toml, Some(&dir));
        if let Some(d) = dropper {
            assert!(d.join().ok().flatten().is_some(), "could not install the REMOVE_ADDR drop rules");
        }
        let notes: Vec<&String> = r.results.summary.notes.iter().filter(|n| n.starts_with("address event")).collect();
        assert!(notes.len() == 1 && notes[0].contains("endpoint delete"), "{notes:?}");
        let counters = &r.meta["mptcp_counters"][who];
        eprintln!("case {i}: {notes:?}; {who}'s MPTcpExt: {counters}");
        let f = &r.results.summary.flows[0];
        let after = window_mbit(&r, flow, 5.0, 8.0);
        eprintln!("remove_addr, {c} -> {s}: after {after:.2} Mbit/s; {f:?}");
        assert!(f.verified && !f.fallback, "{f:?}");
        assert!(after >= 7.0, "{c}->{s}: {after:.2} Mbit/s after REMOVE_ADDR");
        // The subflows of the withdrawn address end closed in the results
        // (whichever end sends: mplab's stack or the kernel).
        let gone: Vec<_> = f.subflows.iter().filter(|x| x.local.starts_with(&format!("{addr}:")) || x.remote.starts_with(&format!("{addr}:"))).collect();
        assert!(!gone.is_empty() && gone.iter().all(|x| x.state == Some(mplab_backend::results::SubflowState::Closed)), "{c}->{s}: {gone:?}");
        let pcaps = merged_pcap(&dir);
        let mut removes = 0;
        let mut closed_at: f64 = 0.0;
        for p in &pcaps {
            let (code, text) = mplab_trace(p);
            eprintln!("mplab trace {}: exit {code}\n{}", p.display(), text.lines().take(40).collect::<Vec<_>>().join("\n"));
            assert_eq!(code, 0, "mplab trace found a mismatch in {}:\n{text}", p.display());
            assert!(text.contains(" 0 MISMATCH"), "{text}");
            removes += tshark_count(p, "tcp.options.mptcp.subtype == 4");
            assert!(tshark_count(p, "tcp.options.mptcp.subtype == 2") > 100, "no DSS in {}", p.display());
            assert_eq!(tshark_count(p, "tcp.checksum.status == \"Bad\""), 0);
            closed_at = closed_at.max(closed_by(p, addr));
        }
        let sent = counters["RmAddrTx"].as_u64().unwrap_or(0) + counters["RmAddrTxDrop"].as_u64().unwrap_or(0);
        eprintln!("case {i}: {removes} REMOVE_ADDR captured, {sent} sent by the kernel; mplab's side closed by {closed_at:.2} s");
        if lose_it {
            assert_eq!(removes, 0, "the drop rules let a REMOVE_ADDR through");
        }
        // A lost REMOVE_ADDR is Linux's behaviour, not a fault, only where
        // the kernel says it sent one.
        assert!(removes > 0 || (who == "client" && sent > 0), "no REMOVE_ADDR captured, and the kernel {who} counted none sent: {counters}");
        assert!(closed_at < 5.0, "mplab's side of the subflows on {addr} closed only at {closed_at:.2} s, 2 s after the withdrawal");
        // After the removal no data flows to/from the withdrawn address.
        let late = pcaps.iter().map(|p| tshark_count(p, &format!("ip.addr == {addr} && tcp.len > 0 && frame.time_relative > 5.5"))).sum::<usize>();
        assert!(late < 5, "{late} data segments on {addr} after its removal");
        let _ = std::fs::remove_dir_all(&dir);
    }
    g.assert_clean();
}

/// A Linux client joins an mplab server running the `linux` profile: the
/// server answers each join's third ACK (MP_JOIN with its HMAC) with the
/// fourth ACK at once (RFC 8684 3.2), so the client may use the subflow one
/// round trip later. Read on the server's interfaces, the gap between the
/// third ACK and the server's next segment on that subflow is well below
/// the 20 ms round trip; before the fix it was the client's resend of the
/// third ACK, one RTO (84-93 ms measured).
#[test]
fn userspace_fourth_ack_answers_the_kernels_join() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("us4a");
    let dir = pcap_dir("4ack");
    let profile = "[transport.mptcp]\npath_manager = \"fullmesh\"\nprofile = \"linux\"\n";
    let toml = two_paths("4s", "kernel", "mplab", &format!("pcap = [\"server\"]\n{profile}{}", bulk(Some("4MB"))));
    let r = run_us(&g, 0, &toml, Some(&dir));
    let f = &r.results.summary.flows[0];
    assert!(f.verified && !f.fallback, "{f:?}");
    let mut joins = 0;
    for p in merged_pcap(&dir) {
        let fields = ["tcp.stream", "frame.time_relative", "ip.src", "tcp.flags.syn", "tcp.options.mptcp.subtype"];
        let rows: Vec<Vec<String>> = tshark_fields(&p, "tcp", &fields).iter().map(|l| l.split('\t').map(str::to_string).collect()).collect();
        let from_client = |v: &Vec<String>| v[2].starts_with("10.9.0.1") || v[2].starts_with("10.9.1.1");
        for (k, v) in rows.iter().enumerate() {
            let third_ack = v.len() >= 5 && from_client(v) && v[3] == "0" && v[4].split(',').any(|t| t == "1");
            if !third_ack {
                continue;
            }
            let at: f64 = v[1].parse().unwrap();
            let answer = rows[k + 1..].iter().find(|w| w[0] == v[0] && !from_client(w)).and_then(|w| w[1].parse::<f64>().ok());
            let gap = answer.map(|a| a - at).unwrap_or(f64::INFINITY);
            eprintln!("stream {}: third ACK at {at:.4} s, the server's next segment {gap:.4} s later", v[0]);
            assert!(gap < 0.03, "stream {}: the server answered the join's third ACK after {gap:.4} s", v[0]);
            joins += 1;
        }
    }
    assert!(joins >= 1, "no join third ACK captured in {}", dir.display());
    let _ = std::fs::remove_dir_all(&dir);
    g.assert_clean();
}

/// MP_PRIO: the kernel client marks its second address backup at 3 s
/// (`ip mptcp endpoint change ... backup`); mplab, sending a download,
/// moves the data off the subflows from that address.
#[test]
fn userspace_mp_prio_from_kernel() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("usprio");
    let dir = pcap_dir("prio");
    let toml = via_router("7s", "kernel", "mplab", &format!("pcap = [\"server\"]\n{FULLMESH}{}", download("200MB")));
    let chg = endpoint_later(format!("{}-client", g.run_prefix(0)), "10.9.1.1", std::time::Duration::from_secs(3), &["change", "backup"]);
    let r = run_us_once(&g, 0, &toml, Some(&dir));
    let changed = chg.join().ok().flatten();
    eprintln!("{changed:?}");
    assert!(changed.is_some(), "could not change the endpoint");
    let f = &r.results.summary.flows[0];
    eprintln!("mp_prio: {f:?}");
    assert!(f.verified, "{f:?}");
    let pcaps = merged_pcap(&dir);
    let prio: usize = pcaps.iter().map(|p| tshark_count(p, "tcp.options.mptcp.subtype == 5")).sum();
    let before: usize = pcaps.iter().map(|p| tshark_count(p, "ip.dst == 10.9.1.1 && tcp.len > 0 && frame.time_relative > 1.5 && frame.time_relative < 3.0")).sum();
    let after: usize = pcaps.iter().map(|p| tshark_count(p, "ip.dst == 10.9.1.1 && tcp.len > 0 && frame.time_relative > 4.5")).sum();
    eprintln!("MP_PRIO segments {prio}; data to 10.9.1.1: {before} in 1.5..3 s, {after} after 4.5 s");
    assert!(prio > 0, "no MP_PRIO captured");
    assert!(before > 200, "the second path was not used before: {before}");
    assert!(after < before / 20, "backup path still carries data: {after} segments after MP_PRIO");
    let _ = std::fs::remove_dir_all(&dir);
    g.assert_clean();
}

/// `mplab run --backend userspace` on a mixed scenario file (kernel client,
/// mplab server): exit 0, backend "userspace", verified, results written.
#[test]
fn userspace_cli_mixed_run() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("uscli");
    let dir = pcap_dir("cli");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("mixed.toml");
    std::fs::write(&file, two_paths("5s", "kernel", "mplab", &format!("{FULLMESH}{}", bulk(Some("5MB"))))).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_mplab"))
        .args(["run", "--backend", "userspace", "--json", "--out"])
        .arg(dir.join("res"))
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("mplab run");
    // The CLI names its namespaces after its pid: removed even if it fails.
    let cli = NsGuard { prefix: format!("mplab-{}-", child.id()) };
    let out = child.wait_with_output().expect("mplab run");
    cli.assert_clean();
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).expect("summary json");
    assert_eq!(v["backend"], "userspace");
    assert_eq!(v["flows"][0]["verified"], true, "{v}");
    assert_eq!(v["flows"][0]["bytes_delivered"], 5_000_000, "{v}");
    let meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("res/meta.json")).unwrap()).unwrap();
    assert_eq!(meta["backend"], "userspace");
    assert_eq!(meta["mplab_hosts"]["server"]["kernel_tcp"]["OutRsts"], 0, "{meta}");
    let _ = std::fs::remove_dir_all(&dir);
    g.assert_clean();
}

/// Bytes an end's subflows sent, split by whether the subflow's local or
/// remote address is on the `10.9.1.` path: (that path, the others).
fn split_bytes(f: &mplab_backend::results::FlowSummary, path: &str) -> (u64, u64) {
    let on = |x: &&mplab_backend::results::SubflowSummary| x.local.starts_with(path) || x.remote.starts_with(path);
    (f.subflows.iter().filter(on).map(|x| x.bytes_sent).sum(), f.subflows.iter().filter(|x| !on(x)).map(|x| x.bytes_sent).sum())
}

/// Scheduler and congestion control chosen per scenario on mplab's stack,
/// also where the kernel has neither: an mplab client with OLIA (coupled,
/// not in Linux) and the `roundrobin` scheduler (not in Linux) sends a
/// 4 Mbit/s stream to a kernel server over a 20 ms and a 120 ms path. The
/// same run with `minrtt` keeps (almost) everything on the fast path, as
/// the stream fits there; roundrobin must put a large share on the slow
/// one. Then mplab <-> mplab with LIA, `blest` and ndiffports (none of
/// which the kernel has) over the two paths. Digests verified throughout.
#[test]
fn userspace_scheduler_and_cc_on_mplab_hosts() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("ussch");
    let eps = "[[transport.mptcp.endpoints]]\nnode = \"client\"\niface = \"eth1\"\nflags = [\"subflow\"]\n";
    let slow = "[[events]]\nat = \"0s\"\nlink = \"p1\"\naction = \"set\"\ndelay = \"60ms\"\n";
    let mut share = Vec::new();
    let mut slow_bytes = Vec::new();
    for (i, sched) in ["minrtt", "roundrobin"].into_iter().enumerate() {
        let tm = format!("[transport.mptcp]\npath_manager = \"endpoints\"\ncc = \"olia\"\nscheduler = \"{sched}\"\n{eps}");
        let flow = "[[flows]]\nname = \"up\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"mptcp\"\napp = \"rate\"\nrate = \"4Mbit\"\nport = 5001\n";
        let toml = via_router("6s", "mplab", "kernel", &format!("{tm}{slow}{flow}"));
        // The kernel backend refuses this scenario (OLIA, roundrobin) ...
        let (sc, net) = resolve(&toml);
        let kerr = mplab_emu::kconf::unsupported(&sc, &net);
        assert!(kerr.iter().any(|e| e.contains("olia")) && kerr.iter().any(|e| e.contains(&format!("scheduler {sched:?}"))), "{kerr:?}");
        // ... the userspace backend runs it (checked in run_us).
        let r = run_us(&g, i, &toml, None);
        let f = &r.results.summary.flows[0];
        let (slow_b, fast_b) = split_bytes(f, "10.9.1.");
        let s = slow_b as f64 / (slow_b + fast_b).max(1) as f64;
        eprintln!("olia + {sched}: {:.2} Mbit/s, slow path share {s:.2} ({slow_b} vs {fast_b}); {f:?}", f.goodput_bps / 1e6);
        assert!(f.verified && !f.fallback && f.subflows.len() == 2, "{sched}: {f:?}");
        // 4 Mbit/s for ~6 s: at least 2.5 MB, whichever scheduler.
        assert!(f.bytes_delivered > 2_500_000, "{sched}: {f:?}");
        assert_digests(&r);
        share.push(s);
        slow_bytes.push(slow_b);
    }
    // Roundrobin takes the slow subflow whenever its window has room, so
    // its share follows that window under OLIA's coupling: 0.57-0.70 in
    // most runs, lower in three fresh-clone runs (0.30, 0.13 and 0.04:
    // the slow subflow stopped after its first two windows, without a
    // retransmission; why is not known yet, docs/userspace-backend.md).
    // What the test guards is that the scheduler chosen is the one that
    // runs: minrtt never uses the slow subflow beyond its first window
    // (53928 bytes in every run), roundrobin at least twice that in every
    // run seen, so 1.5 times is the bound.
    let (rr, mr) = (slow_bytes[1] as f64, slow_bytes[0] as f64);
    assert!(rr >= 1.5 * mr.max(1.0), "roundrobin put {rr} bytes on the slow path, minrtt {mr} (shares {:.2} / {:.2})", share[1], share[0]);

    // mplab <-> mplab: LIA, blest and ndiffports (3 subflows on one path
    // pair), a bounded bulk transfer: completes and verifies.
    let tm = "[transport.mptcp]\npath_manager = \"ndiffports\"\nsubflows = 3\ncc = \"lia\"\nscheduler = \"blest\"\n";
    let toml = two_paths("6s", "mplab", "mplab", &format!("{tm}{}", bulk(Some("4MB"))));
    let r = run_us(&g, 2, &toml, None);
    let f = &r.results.summary.flows[0];
    eprintln!("mplab <-> mplab, lia + blest + ndiffports: {f:?}");
    assert!(f.verified && f.completed && f.bytes_delivered == 4_000_000, "{f:?}");
    assert_eq!(f.subflows.len(), 3, "ndiffports subflows: {:?}", f.subflows);
    assert_digests(&r);
    g.assert_clean();
}

/// Plain TCP (`transport = "tcp"`) on mplab's stack (proto's TCP engine)
/// against the kernel's TCP, both ways, with data both directions (bulk
/// up, a download later), every byte verified and hashed, and no MPTCP
/// option anywhere on the wire (tshark on the capture).
#[test]
fn userspace_plain_tcp_both_ways() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("ustcp");
    for (i, (c, s)) in [("mplab", "kernel"), ("kernel", "mplab")].into_iter().enumerate() {
        let dir = pcap_dir(&format!("tcp{i}"));
        let flows = "[[flows]]\nname = \"up\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"tcp\"\napp = \"bulk\"\nbytes = \"3MB\"\nport = 5001\n\
                     [[flows]]\nname = \"down\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"tcp\"\napp = \"download\"\nbytes = \"3MB\"\nport = 5002\nstart = \"2s\"\n";
        let toml = two_paths("6s", c, s, &format!("pcap = [\"client\"]\n{flows}"));
        let r = run_us(&g, i, &toml, Some(&dir));
        for f in &r.results.summary.flows {
            eprintln!("plain TCP, {c} client -> {s} server: {f:?}");
            assert!(f.verified && f.completed && f.bytes_delivered == 3_000_000, "{c}->{s}: {f:?}");
            assert_eq!(f.transport, "tcp");
            assert!(f.subflows.len() <= 1, "{f:?}");
        }
        assert_digests(&r);
        let streams: u64 = r.meta["mplab_hosts"].as_object().unwrap().values().flat_map(|h| h["streams"].as_array().unwrap().iter()).map(|s| s["bytes_read"].as_u64().unwrap()).sum();
        assert_eq!(streams, 3_000_000, "the mplab end read one of the two streams");
        let pcaps = merged_pcap(&dir);
        let all: usize = pcaps.iter().map(|p| tshark_count(p, "tcp")).sum();
        let mptcp: usize = pcaps.iter().map(|p| tshark_count(p, "tcp.option_kind == 30")).sum();
        eprintln!("{all} TCP segments captured, {mptcp} with option 30");
        assert!(all > 1000, "capture too small: {all}");
        assert_eq!(mptcp, 0, "option 30 on a plain TCP flow");
        let _ = std::fs::remove_dir_all(&dir);
    }
    g.assert_clean();
}

/// Sends control commands to the mplab host in `ns` `after` into the run
/// (the namespace appears ~0.3 s before time zero). Bounded: 20 s.
fn control_later(ns: String, cmd: &'static str, after: std::time::Duration) -> std::thread::JoinHandle<Option<String>> {
    std::thread::spawn(move || {
        if !netns_appears(&ns) {
            return None;
        }
        std::thread::sleep(after + std::time::Duration::from_millis(300));
        mplab_emu::userspace::send_control(&ns, cmd).ok()?;
        // Picked up within the host's 20 ms probe period.
        for _ in 0..100 {
            if !mplab_emu::userspace::control_path(&ns).exists() {
                return Some(format!("{cmd} -> {ns}"));
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        None
    })
}

/// mplab-initiated control towards Linux, each in its own run against a
/// kernel server sending a download to the mplab client (so the kernel's
/// reaction shows in what it sends):
/// * MP_PRIO: at 3 s mplab marks its subflow from 10.9.1.1 backup; the
///   kernel moves the data off it;
/// * REMOVE_ADDR: at 3 s mplab withdraws 10.9.1.1; the kernel closes the
///   subflow (nothing more on that address) and goes on over the other;
/// * MP_FASTCLOSE: at 2 s mplab aborts a bulk upload; the kernel server's
///   socket sees a reset.
#[test]
fn userspace_mplab_initiated_control() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("usctl");
    let s3 = std::time::Duration::from_secs(3);
    // MP_PRIO, router topology (two uplinks), as userspace_mp_prio_from_kernel.
    {
        let dir = pcap_dir("ctlprio");
        let toml = via_router("7s", "mplab", "kernel", &format!("pcap = [\"client\"]\n{FULLMESH}{}", download("200MB")));
        let ctl = control_later(format!("{}-client", g.run_prefix(0)), "backup 10.9.1.1", s3);
        let r = run_us_once(&g, 0, &toml, Some(&dir));
        let sent = ctl.join().ok().flatten();
        assert!(sent.is_some(), "the control command was not picked up");
        let f = &r.results.summary.flows[0];
        eprintln!("mplab MP_PRIO: {f:?}");
        assert!(f.verified, "{f:?}");
        let pcaps = merged_pcap(&dir);
        let prio: usize = pcaps.iter().map(|p| tshark_count(p, "tcp.options.mptcp.subtype == 5 && ip.src == 10.9.1.1")).sum();
        let before: usize = pcaps.iter().map(|p| tshark_count(p, "ip.dst == 10.9.1.1 && tcp.len > 0 && frame.time_relative > 1.5 && frame.time_relative < 3.0")).sum();
        let after: usize = pcaps.iter().map(|p| tshark_count(p, "ip.dst == 10.9.1.1 && tcp.len > 0 && frame.time_relative > 4.5")).sum();
        eprintln!("MP_PRIO from mplab: {prio}; kernel data to 10.9.1.1: {before} in 1.5..3 s, {after} after 4.5 s");
        assert!(prio > 0, "no MP_PRIO from 10.9.1.1 captured");
        assert!(before > 200, "the second path was not used before: {before}");
        assert!(after < before / 20, "the kernel still sends on the backup subflow: {after} segments after MP_PRIO");
        assert_digests(&r);
        let _ = std::fs::remove_dir_all(&dir);
    }
    // REMOVE_ADDR, two direct paths (fullmesh: the subflows from
    // 10.9.1.1 go to both server addresses).
    {
        let dir = pcap_dir("ctlrm");
        let toml = two_paths("8s", "mplab", "kernel", &format!("pcap = [\"client\"]\n{FULLMESH}{}", download("200MB")));
        let ctl = control_later(format!("{}-client", g.run_prefix(1)), "remove 10.9.1.1", s3);
        let r = run_us_once(&g, 1, &toml, Some(&dir));
        assert!(ctl.join().ok().flatten().is_some(), "the control command was not picked up");
        let f = &r.results.summary.flows[0];
        let after_mbit = window_mbit(&r, "down", 5.0, 8.0);
        eprintln!("mplab REMOVE_ADDR: {after_mbit:.2} Mbit/s after; {f:?}");
        assert!(f.verified && !f.fallback, "{f:?}");
        assert!(after_mbit >= 7.0, "{after_mbit:.2} Mbit/s after REMOVE_ADDR");
        let pcaps = merged_pcap(&dir);
        let removes: usize = pcaps.iter().map(|p| tshark_count(p, "tcp.options.mptcp.subtype == 4")).sum();
        let before: usize = pcaps.iter().map(|p| tshark_count(p, "ip.addr == 10.9.1.1 && frame.time_relative > 1.5 && frame.time_relative < 3.0")).sum();
        let late: usize = pcaps.iter().map(|p| tshark_count(p, "ip.addr == 10.9.1.1 && frame.time_relative > 4.5")).sum();
        eprintln!("REMOVE_ADDR segments {removes}; segments on 10.9.1.1: {before} in 1.5..3 s, {late} after 4.5 s");
        assert!(removes > 0, "no REMOVE_ADDR captured");
        assert!(before > 200, "10.9.1.1 was not used before: {before}");
        assert!(late < 5, "{late} segments on 10.9.1.1 after its removal");
        assert_digests(&r);
        let _ = std::fs::remove_dir_all(&dir);
    }
    // MP_FASTCLOSE: the kernel server's read fails with a reset.
    {
        let dir = pcap_dir("ctlfc");
        let toml = two_paths("5s", "mplab", "kernel", &format!("pcap = [\"client\"]\n{FULLMESH}{}", bulk(None)));
        let ctl = control_later(format!("{}-client", g.run_prefix(2)), "abort", std::time::Duration::from_secs(2));
        let r = run_us_once(&g, 2, &toml, Some(&dir));
        assert!(ctl.join().ok().flatten().is_some(), "the control command was not picked up");
        let f = &r.results.summary.flows[0];
        let late = window_mbit(&r, "up", 3.0, 5.0);
        eprintln!("mplab MP_FASTCLOSE: {late:.2} Mbit/s after; notes {:?}; {f:?}", r.results.summary.notes);
        assert!(f.verified && f.bytes_delivered > 1_000_000, "{f:?}");
        assert!(late < 0.1, "data still delivered after the abort: {late:.2} Mbit/s");
        let reset = r.results.summary.notes.iter().any(|n| n.contains("flow up") && n.to_lowercase().contains("reset"));
        assert!(reset, "the kernel server saw no reset: {:?}", r.results.summary.notes);
        let pcaps = merged_pcap(&dir);
        let fc: usize = pcaps.iter().map(|p| tshark_count(p, "tcp.options.mptcp.subtype == 7")).sum();
        assert!(fc > 0, "no MP_FASTCLOSE captured");
        let _ = std::fs::remove_dir_all(&dir);
    }
    g.assert_clean();
}

/// Scenario events remove_addr / add_addr on the real backends: the
/// client withdraws its eth1 address at 3 s and puts it back at 6 s, on
/// the kernel's stack (`ip mptcp endpoint delete` / `add`) and on mplab's
/// (control commands). Both leave the address, carry on over path 0, and
/// join from it again, as the simulator does. The kernel client receives
/// (a download) while it deletes its endpoint: deleted under its own
/// sending, Linux 6.18 can oops (docs/soak.md). mplab's server then still
/// sends over both links on its subflow from 10.9.1.2 to the client's
/// first address, which the withdrawal leaves alone: the rate goes on, it
/// does not halve.
#[test]
fn address_withdrawn_and_restored_on_kernel_and_mplab_clients() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("usaddr");
    let ev = "[[events]]\nat = \"3s\"\nnode = \"client\"\niface = \"eth1\"\naction = \"remove_addr\"\n[[events]]\nat = \"6s\"\nnode = \"client\"\niface = \"eth1\"\naction = \"add_addr\"\n";
    for (i, c) in ["kernel", "mplab"].into_iter().enumerate() {
        let (flow, traffic) = if c == "kernel" { ("down", download("400MB")) } else { ("up", bulk(None)) };
        let toml = two_paths("12s", c, "kernel", &format!("{FULLMESH}{ev}{traffic}"));
        let r = run_us(&g, i, &toml, None);
        let f = &r.results.summary.flows[0];
        let (before, during, after) = (window_mbit(&r, flow, 1.0, 3.0), window_mbit(&r, flow, 4.0, 6.0), window_mbit(&r, flow, 8.0, 12.0));
        let notes: Vec<&String> = r.results.summary.notes.iter().filter(|n| n.starts_with("address event")).collect();
        eprintln!("{c} client: before {before:.2} withdrawn {during:.2} restored {after:.2} Mbit/s; {notes:?}; {:?}", f.subflows);
        assert!(f.verified && !f.fallback, "{f:?}");
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes.iter().all(|n| !n.contains("failed") && !n.contains("nothing")), "{notes:?}");
        if c == "kernel" {
            assert!(during >= 9.5 * 0.9, "{c}: {during:.2} Mbit/s while withdrawn");
        } else {
            assert!((during / 9.5 - 1.0).abs() < 0.1, "{c}: {during:.2} Mbit/s while withdrawn");
        }
        assert!(after >= 15.0, "{c}: {after:.2} Mbit/s after the address came back");
        let on_addr: Vec<_> = f.subflows.iter().filter(|s| s.local.starts_with("10.9.1.1:") || s.remote.starts_with("10.9.1.1:")).collect();
        let closed = on_addr.iter().filter(|s| s.state == Some(mplab_backend::results::SubflowState::Closed)).count();
        assert!(closed >= 1, "{c}: no subflow of the withdrawn address closed: {on_addr:?}");
        assert!(on_addr.len() > closed, "{c}: no new subflow from the restored address: {on_addr:?}");
        assert!(on_addr.len() >= 3, "{c}: no new subflow from the restored address: {:?}", f.subflows);
    }
    g.assert_clean();
}
