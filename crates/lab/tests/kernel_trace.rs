//! Capture a real Linux kernel MPTCP transfer (two subflows, ADD_ADDR, DSS
//! checksums on) between two namespaces, and check that `mplab trace --json`
//! verifies every token, HMAC and checksum the kernel produced.
//! Needs root, iproute2, tcpdump and python3 (installed by .ci/run).

mod support;

use std::time::Duration;

use support::netns::{have, is_root, Lab};

const PEER: &str = r#"
import hashlib, socket, sys, time
IPPROTO_MPTCP = 262
role, size = sys.argv[1], int(sys.argv[2])
if role == "server":
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 5001)); s.listen(1); s.settimeout(20)
    c, _ = s.accept(); c.settimeout(20)
    h, n = hashlib.sha256(), 0
    while True:
        b = c.recv(65536)
        if not b: break
        h.update(b); n += len(b)
    c.sendall(("%d %s" % (n, h.hexdigest())).encode()); c.close()
else:
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP); c.settimeout(20)
    c.connect(("10.0.1.1", 5001))
    time.sleep(0.5)  # let the ADD_ADDR and the joins happen before the bulk
    data = bytes((i * 7 + 3) & 0xff for i in range(size))
    c.sendall(data); c.shutdown(socket.SHUT_WR)
    reply = b""
    while True:
        b = c.recv(4096)
        if not b: break
        reply += b
    want = "%d %s" % (size, hashlib.sha256(data).hexdigest())
    print(reply.decode()); sys.exit(0 if reply.decode() == want else 3)
"#;

#[test]
fn kernel_mptcp_capture_verifies_in_trace() {
    if !is_root() || !have("tcpdump") || !have("python3") {
        if std::env::var_os("CI").is_some() {
            panic!("CI must run this test as root with tcpdump and python3 installed");
        }
        eprintln!("skipping: needs root, tcpdump, python3");
        return;
    }
    let mut lab = Lab::new("tr");
    let cli = lab.ns("cli");
    let srv = lab.ns("srv");
    lab.link(&cli, "eth0", "10.0.1.2/24", &srv, "eth0", "10.0.1.1/24");
    lab.link(&cli, "eth1", "10.0.2.2/24", &srv, "eth1", "10.0.2.1/24");
    for ns in [&cli, &srv] {
        lab.exec(ns, "sysctl -qw net.mptcp.enabled=1 net.mptcp.checksum_enabled=1");
        support::netns::sh(&format!("ip -n {ns} mptcp limits set subflow 2 add_addr_accepted 2"));
    }
    // Unshaped veths move gigabits per second; tcpdump on two busy cores
    // then drops frames. 100 Mbit/s per path keeps the capture complete.
    for dev in ["eth0", "eth1"] {
        lab.exec(&cli, &format!("tc qdisc add dev {dev} root tbf rate 100mbit burst 32kb latency 50ms"));
    }
    support::netns::sh(&format!("ip -n {srv} mptcp endpoint add 10.0.2.1 dev eth1 signal"));
    support::netns::sh(&format!("ip -n {cli} mptcp endpoint add 10.0.2.2 dev eth1 subflow"));

    let dir = std::env::temp_dir().join(format!("{}-trace", lab.prefix));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("peer.py");
    std::fs::write(&script, PEER).unwrap();
    let pcap = dir.join("kernel.pcap");
    let cap = lab.spawn(&cli, &["tcpdump", "-i", "any", "-U", "--immediate-mode", "-B", "32768", "-s", "0", "-w", pcap.to_str().unwrap(), "tcp port 5001"]);
    std::thread::sleep(Duration::from_millis(700));
    let server = lab.spawn(&srv, &["python3", script.to_str().unwrap(), "server", "0"]);
    std::thread::sleep(Duration::from_millis(300));
    let client = lab.spawn(&cli, &["python3", script.to_str().unwrap(), "client", "3000000"]);
    let (ok, out, err) = lab.wait(client, Duration::from_secs(30));
    assert!(ok, "kernel transfer failed: {out} {err}");
    let _ = lab.wait(server, Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(300));
    lab.stop(cap);

    let o = std::process::Command::new(env!("CARGO_BIN_EXE_mplab")).args(["trace", "--json"]).arg(&pcap).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("json: {e}\n{text}"));
    let human = std::process::Command::new(env!("CARGO_BIN_EXE_mplab")).arg("trace").arg(&pcap).output().unwrap();
    eprintln!("{}", String::from_utf8_lossy(&human.stdout));
    assert_eq!(v["checks_mismatch"], 0, "every kernel value verifies");
    let conns = v["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 1);
    let c = &conns[0];
    assert!(c["checksums"].as_bool().unwrap());
    assert!(c["fallback"].is_null());
    assert!(c["subflows"].as_array().unwrap().len() >= 2, "a join happened");
    let checks = c["checks"].as_array().unwrap();
    let count = |needle: &str| checks.iter().filter(|ch| ch["what"].as_str().unwrap().contains(needle) && ch["ok"] == true).count();
    assert!(count("MP_JOIN SYN token") >= 1);
    assert!(count("MP_JOIN SYN/ACK HMAC") >= 1);
    assert!(count("MP_JOIN ACK HMAC") >= 1);
    assert!(count("ADD_ADDR HMAC") >= 1);
    assert!(count("DSS checksum") >= 10, "DSS checksums verified: {}", count("DSS checksum"));
    assert!(count("first DSN") >= 1);
    let bytes: u64 = c["subflows"].as_array().unwrap().iter().map(|s| s["forward"]["bytes"].as_u64().unwrap()).sum();
    assert!(bytes >= 3_000_000, "all client bytes seen on the wire: {bytes}");
    let _ = std::fs::remove_dir_all(&dir);
}
