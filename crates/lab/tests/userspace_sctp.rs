//! mplab's SCTP association on real packets (the userspace backend: an
//! mplab host's TUN) against usrsctp (the FreeBSD stack, on a kernel host)
//! over the link emulator, both ways, single-path and CMT: the handshake,
//! parameters each side does not know, DATA, SACK / NR-SACK and SHUTDOWN
//! between two independent implementations; every byte checked by the
//! reader. Needs root; removes its namespaces even when it fails.

mod kernel_support;

use kernel_support::topologies::two_paths_with;
use kernel_support::{can_run, run_userspace_pcap, serial, NsGuard};

/// One 10 Mbit/s path carries at most 9.68 Mbit/s of DATA payload.
const ONE_PATH: f64 = 10.0 * 1452.0 / 1500.0;

fn flow(transport: &str) -> String {
    format!("[transport.sctp]\nrcv_buf = \"512KB\"\nsnd_buf = \"512KB\"\n\n[[flows]]\nname = \"x\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"{transport}\"\napp = \"bulk\"\nbytes = \"6MB\"\n\n[probes]\ninterval = \"500ms\"\npcap = [\"client\"]\n")
}

#[test]
fn mplab_sctp_and_usrsctp_interoperate_both_ways() {
    let _s = serial();
    if !can_run() {
        return;
    }
    std::env::set_var("MPLAB_EXE", env!("CARGO_BIN_EXE_mplab"));
    let g = NsGuard::new("ussctp");
    let cases = [("mplab", "kernel", "sctp"), ("kernel", "mplab", "sctp"), ("mplab", "kernel", "cmt-sctp"), ("kernel", "mplab", "cmt-sctp")];
    for (i, (client, server, transport)) in cases.into_iter().enumerate() {
        let toml = two_paths_with("ussctp", "10s", client, server, "10Mbit", Some("10ms"), 40, &flow(transport));
        let dir = std::env::temp_dir().join(format!("mplab-ussctp-{}-{i}", std::process::id()));
        // Repeated if the host stalled the run: the rates below are claims
        // about the stacks, not about the virtual machine's pauses.
        let r = run_userspace_pcap(&g, i, &toml, Some(&dir));
        let f = &r.results.summary.flows[0];
        let gp = f.goodput_bps / 1e6;
        eprintln!("{transport}, client {client}, server {server}: {gp:.2} Mbit/s, {:?}", r.results.summary.notes.iter().filter(|n| n.contains("flow")).collect::<Vec<_>>());
        assert!(f.completed && f.verified && f.bytes_delivered == 6_000_000, "{transport} {client}->{server}: {f:?} {:?}", r.results.summary.notes);
        if transport == "sctp" {
            assert!(gp > 0.8 * ONE_PATH && gp <= ONE_PATH, "{transport} {client}->{server}: {gp:.2} Mbit/s");
        } else {
            // Both paths carry the transfer. The rate itself varies with
            // usrsctp's choice of source address (it sometimes sends its
            // INIT from its second address out of the first interface:
            // 9.9 instead of 12.6 Mbit/s in one of five runs), so the test
            // holds the rate to at least one path's and checks the spread.
            assert!(gp > 0.9 * ONE_PATH, "{transport} {client}->{server}: {gp:.2} Mbit/s");
            let tx = |node: &str, iface: &str| r.results.summary.interfaces.iter().find(|i| i.node == node && i.iface == iface).map_or(0, |i| i.tx_bytes);
            let sender = "client";
            let (a, b) = (tx(sender, "eth0"), tx(sender, "eth1"));
            assert!(a > 1_500_000 && b > 1_500_000, "{transport} {client}->{server}: the client sent {a} and {b} bytes on its two interfaces");
        }
        // Wireshark agrees with both stacks about every packet.
        if std::process::Command::new("tshark").arg("--version").output().is_ok() {
            for iface in ["eth0", "eth1"] {
                let pcap = dir.join(format!("client-{iface}.pcap"));
                let out = std::process::Command::new("tshark").arg("-r").arg(&pcap).args(["-o", "sctp.checksum:TRUE", "-Y", "sctp.checksum.status == 0 || _ws.malformed || icmp || sctp.chunk_type == 6"]).output().unwrap();
                let bad = String::from_utf8_lossy(&out.stdout);
                assert!(bad.trim().is_empty(), "{transport} {client}->{server} {iface}:\n{bad}");
                let data = std::process::Command::new("tshark").arg("-r").arg(&pcap).args(["-Y", "sctp.chunk_type == 0"]).output().unwrap();
                let n = String::from_utf8_lossy(&data.stdout).lines().count();
                if transport == "cmt-sctp" {
                    assert!(n > 500, "{transport} {client}->{server}: {n} DATA packets on {iface}");
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    g.assert_clean();
}
