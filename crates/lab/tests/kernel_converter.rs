//! RFC 8803 Transport Converters on the kernel backend (converter programs
//! over kernel sockets, crates/emu/src/converter.rs) against the
//! simulator's, on the bundled seed004-convert scenario shortened. Needs
//! root; each test cleans up its namespaces even when it fails.

mod kernel_support;

use kernel_support::{bundled, can_run, mplab_host, on_linux, run, run_userspace, run_userspace_pcap, serial, sim, tshark_fields, NsGuard};

fn converter(s: &mplab_backend::results::Summary) -> mplab_backend::results::ConverterSummary {
    s.flows[0].tunnel.as_ref().and_then(|t| t.converter.clone()).expect("converter figures")
}

/// A 10 MB download converted to MPTCP between the gateways: every byte
/// delivered on both backends, the same Convert messages (24 B request,
/// 20 B answer), and the download's time within 10 % of the simulator's
/// (two 20 Mbit/s access links: 2.0 s at their rate). Then on the kernel
/// with `fast_open = true`: the request rides the carrier's SYN.
#[test]
fn kernel_converter_carries_a_download_like_the_simulator() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("cnv");
    let text = bundled("seed004-convert.toml").replace("duration = \"30s\"", "duration = \"6s\"");
    let k = run(&g, 0, &text);
    let s = sim(&text);
    let (kd, sd) = (&k.results.summary.flows[1], &s.summary.flows[1]);
    eprintln!("download: kernel {:?} s, sim {:?} s", kd.completion_time_s, sd.completion_time_s);
    assert!(kd.completed && kd.verified && sd.completed && sd.verified, "{kd:?}\n{sd:?}");
    let (kt, st) = (kd.completion_time_s.unwrap(), sd.completion_time_s.unwrap());
    assert!((kt - st).abs() <= 0.10 * st, "download: kernel {kt:.2} s, sim {st:.2} s");
    let (kc, sc) = (converter(&k.results.summary), converter(&s.summary));
    eprintln!("kernel {kc:?}\nsim {sc:?}");
    assert_eq!((kc.connections, kc.converted, kc.bytes_down, kc.message_bytes), (1, 1, 10_000_000, 44));
    assert_eq!((sc.connections, sc.converted, sc.bytes_down, sc.message_bytes), (1, 1, 10_000_000, 44));
    assert_eq!(kc.fast_open, 0);
    let k = run(&g, 1, &text.replace("carries = \"tcp\"", "carries = \"tcp\"\nfast_open = true"));
    let (kd, kc) = (&k.results.summary.flows[1], converter(&k.results.summary));
    assert!(kd.completed && kd.verified, "{kd:?}");
    assert_eq!((kc.fast_open, kc.message_bytes), (1, 44), "the request rides the SYN");
    g.assert_clean();
}

/// A destination the HAG refuses: answered Not Authorized on both
/// backends, the client's connection reset, nothing delivered.
#[test]
fn kernel_converter_refuses_like_the_simulator() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("cnr");
    let text = bundled("seed004-convert.toml").replace("duration = \"30s\"", "duration = \"3s\"").replace("carries = \"tcp\"", "carries = \"tcp\"\nrefuse = [\"10.0.3.0/24\"]");
    let k = run(&g, 0, &text);
    let s = sim(&text);
    for (name, r) in [("kernel", &k.results.summary), ("sim", &s.summary)] {
        let c = converter(r);
        eprintln!("{name}: {c:?}");
        assert_eq!((c.connections, c.converted), (1, 0), "{name}");
        assert_eq!(c.errors.get("Not Authorized (32)"), Some(&1), "{name}");
        assert_eq!(c.message_bytes, 24 + 8, "{name}: the request and an 8-byte Error message");
        assert_eq!(r.flows[1].bytes_delivered, 0, "{name}");
    }
    g.assert_clean();
}

/// Hybrid access as deployed (seed004-hybrid): the download through the
/// converters and a call in a datagram-mode tunnel, with 5 % loss on
/// cellular. On both backends every byte and every call packet arrives;
/// no call packet waits behind a retransmission (none late on the
/// simulator; on the kernel, see `assert_call_without_head_of_line_blocking`).
#[test]
fn kernel_converter_beside_a_datagram_tunnel() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("cnh");
    let text = bundled("seed004-hybrid.toml").replace("duration = \"30s\"", "duration = \"8s\"").replace("[probes]", "[[events]]\nat = \"0s\"\nlink = \"link2\"\naction = \"set\"\nloss = 0.05\n\n[probes]");
    let k = run(&g, 0, &text);
    let s = sim(&text);
    let call = |r: &mplab_backend::results::Summary| r.flows.iter().find(|f| f.name == "call").and_then(|f| f.datagrams.clone()).unwrap().stream;
    for (name, r) in [("kernel", &k.results.summary), ("sim", &s.summary)] {
        let d = r.flows.iter().find(|f| f.name == "download").unwrap();
        eprintln!("{name}: download {:?} s", d.completion_time_s);
        assert!(d.completed && d.verified, "{name}: {d:?}");
    }
    // The lossy link (cellular, link2) has 10 ms each way.
    kernel_support::assert_call_without_head_of_line_blocking(&call(&k.results.summary), &call(&s.summary), 20.0);
    g.assert_clean();
}

/// The userspace backend, every TCP end on mplab's stack (the client, the
/// server, and the converters' carriers in both gateways, bridged to the
/// converter programs): the download within 5 % of the simulator's, whose
/// ends all run that stack, one carrier dialled at the CPE and accepted at
/// the HAG, nothing lost by a bridge. Then with Linux's MPTCP in the HAG
/// (mplab's carrier against Linux's listener), and a refused destination
/// answered through mplab's carrier.
#[test]
fn userspace_converter_on_mplab_gateways() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("ucnv");
    let text = bundled("seed004-convert.toml").replace("duration = \"30s\"", "duration = \"5s\"");
    let u = run_userspace(&g, 0, &text);
    let s = sim(&text);
    let (ud, sd) = (&u.results.summary.flows[1], &s.summary.flows[1]);
    eprintln!("download: userspace {:?} s, sim {:?} s", ud.completion_time_s, sd.completion_time_s);
    assert!(ud.completed && ud.verified, "{ud:?}");
    let (ut, st) = (ud.completion_time_s.unwrap(), sd.completion_time_s.unwrap());
    assert!((ut - st).abs() <= 0.05 * st, "download: userspace {ut:.3} s, sim {st:.3} s");
    let uc = converter(&u.results.summary);
    assert_eq!((uc.connections, uc.converted, uc.bytes_down, uc.message_bytes), (1, 1, 10_000_000, 44), "{uc:?}");
    for gw in ["cpe", "hag"] {
        let h = mplab_host(&u, gw);
        eprintln!("{gw}: {h}");
        assert_eq!((h["carriers"].as_u64(), h["bridge_bytes_gone"].as_u64()), (Some(1), Some(0)), "{gw}");
    }
    let m = run_userspace(&g, 1, &on_linux(&text, &["hag"]));
    let md = &m.results.summary.flows[1];
    eprintln!("Linux HAG: download {:?} s", md.completion_time_s);
    assert!(md.completed && md.verified, "{md:?}");
    assert!(m.meta["mplab_hosts"].get("hag").is_none());
    let r = run_userspace(&g, 2, &text.replace("carries = \"tcp\"", "carries = \"tcp\"\nrefuse = [\"10.0.3.0/24\"]").replace("duration = \"5s\"", "duration = \"3s\""));
    let c = converter(&r.results.summary);
    eprintln!("refused: {c:?}");
    assert_eq!((c.connections, c.converted, c.errors.get("Not Authorized (32)")), (1, 0, Some(&1)));
    assert_eq!(r.results.summary.flows[1].bytes_delivered, 0);
    g.assert_clean();
}

/// TCP Fast Open on mplab's stack: with `fast_open = true` the CPE's
/// carrier SYN carries the 24-byte Convert request and the HAG's SYN+ACK
/// acknowledges it (tshark on the CPE's link 1), the download within 5 %
/// of the simulator's, which runs the same stack. Then Linux's CPE
/// (`sendto(MSG_FASTOPEN)`) against mplab's HAG: the request rides the
/// SYN and an upload through the converters arrives whole.
#[test]
fn userspace_converter_fast_open() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("ucfo");
    let dir = std::env::temp_dir().join(format!("mplab-ucfo-{}", std::process::id()));
    let text = bundled("seed004-convert.toml").replace("duration = \"30s\"", "duration = \"5s\"").replace("carries = \"tcp\"", "carries = \"tcp\"\nfast_open = true").replace("[probes]\n", "[probes]\npcap = [\"cpe:eth0\"]\n");
    let u = run_userspace_pcap(&g, 0, &text, Some(&dir));
    let s = sim(&text);
    let (ud, sd) = (&u.results.summary.flows[1], &s.summary.flows[1]);
    eprintln!("download: userspace {:?} s, sim {:?} s", ud.completion_time_s, sd.completion_time_s);
    assert!(ud.completed && ud.verified, "{ud:?}");
    let (ut, st) = (ud.completion_time_s.unwrap(), sd.completion_time_s.unwrap());
    assert!((ut - st).abs() <= 0.05 * st, "download: userspace {ut:.3} s, sim {st:.3} s");
    let (uc, sc) = (converter(&u.results.summary), converter(&s.summary));
    assert_eq!((uc.fast_open, uc.message_bytes, sc.fast_open), (1, 44, 1), "{uc:?}");
    let pcap = dir.join("cpe-eth0.pcap");
    let syn = tshark_fields(&pcap, "tcp.flags.syn == 1 && tcp.flags.ack == 0", &["tcp.len"]);
    let syn_ack = tshark_fields(&pcap, "tcp.flags.syn == 1 && tcp.flags.ack == 1", &["tcp.len", "tcp.ack"]);
    eprintln!("SYN {syn:?}, SYN+ACK {syn_ack:?}");
    assert_eq!((syn.as_slice(), syn_ack.as_slice()), (&["24".to_string()][..], &["0\t25".to_string()][..]), "the SYN carries the request, the SYN+ACK acknowledges it");
    let up = text.replace("app = \"download\"", "app = \"bulk\"").replace("bytes = \"10MB\"", "bytes = \"2MB\"");
    let m = run_userspace(&g, 1, &on_linux(&up, &["cpe"]));
    let (md, mc) = (&m.results.summary.flows[1], converter(&m.results.summary));
    eprintln!("Linux CPE, upload: {:?} s, {mc:?}", md.completion_time_s);
    assert!(md.completed && md.verified && md.bytes_delivered == 2_000_000, "{md:?}");
    assert_eq!((mc.fast_open, mc.bytes_up), (1, 2_000_000));
    let _ = std::fs::remove_dir_all(&dir);
    g.assert_clean();
}
