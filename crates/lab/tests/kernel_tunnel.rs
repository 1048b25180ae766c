//! The hybrid-access tunnel on the kernel backend (gateway programs over a
//! kernel MPTCP socket, crates/emu/src/gateway/) against the simulator's
//! tunnel, on the bundled seed 004 scenarios shortened. Needs root; each
//! test cleans up its namespaces even when it fails.

mod kernel_support;

use kernel_support::{bundled, can_run, mplab_host, on_linux, run, run_unless_kernel_mptcp_stalled, run_userspace, run_userspace_unless_kernel_mptcp_stalled, serial, sim, NsGuard};

/// Why the call's median may be 2.5 ms off the simulator's on real time: a
/// frame passes two gateway programs, each woken by poll on 2 cores busy
/// with the download (1-2 ms measured), while a frame held back by Nagle or
/// a delayed ACK would add tens of milliseconds.
const TWO_PROGRAMS: &str = "call p50 more than 2.5 ms off the simulator's: more than two programs' wake-ups";

/// A 5 MB download and a call through the tunnel: every byte delivered on
/// both backends, the download's time within 25 % (the kernel's TCP and
/// MPTCP against mplab's), the call's median delay within 2.5 ms, and
/// every frame each gateway wrote taken out at the other.
#[test]
fn kernel_tunnel_carries_a_download_and_a_call_like_the_simulator() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("tun");
    let text = bundled("seed004-tunnel.toml").replace("duration = \"30s\"", "duration = \"8s\"").replace("bytes = \"10MB\"", "bytes = \"5MB\"");
    let k = run_unless_kernel_mptcp_stalled(&g, 0, &text);
    let s = sim(&text);
    let by = |r: &mplab_backend::results::Summary, n: &str| r.flows.iter().find(|f| f.name == n).cloned().unwrap();
    let (kd, sd) = (by(&k.results.summary, "download"), by(&s.summary, "download"));
    eprintln!("download: kernel {:?} s, sim {:?} s", kd.completion_time_s, sd.completion_time_s);
    // What the tunnel's own connection did, before any verdict: a stalled
    // download (seen once in a fresh clone, never reproduced) shows here
    // whether the tunnel stopped carrying or its subflows did.
    let kt_flow = by(&k.results.summary, "tunnel");
    eprintln!("kernel tunnel: {:?}\nkernel tunnel subflows: {:?}", kt_flow.tunnel, kt_flow.subflows);
    assert!(kd.completed && kd.verified && sd.completed && sd.verified, "{kd:?}\n{sd:?}\ntunnel: {:?}\nsubflows: {:?}", kt_flow.tunnel, kt_flow.subflows);
    let (kt, st) = (kd.completion_time_s.unwrap(), sd.completion_time_s.unwrap());
    assert!((kt - st).abs() <= 0.25 * st, "download: kernel {kt:.2} s, sim {st:.2} s");
    let (kc, sc) = (by(&k.results.summary, "call").datagrams.unwrap(), by(&s.summary, "call").datagrams.unwrap());
    eprintln!("call p50: kernel {:.2} ms, sim {:.2} ms", kc.stream.delay_p50_ms, sc.stream.delay_p50_ms);
    assert!((kc.stream.delay_p50_ms - sc.stream.delay_p50_ms).abs() <= 2.5, "{TWO_PROGRAMS}");
    assert_eq!(kc.stream.received, kc.stream.sent, "a reliable carrier loses nothing");
    let t = kt_flow.tunnel.unwrap();
    for d in [&t.upstream, &t.downstream] {
        assert!(d.datagrams_in > 0 && d.datagrams_in - d.datagrams_out <= 2, "{t:?}");
        assert_eq!(d.oversize, 0);
    }
    g.assert_clean();
}

/// The fixed line fails for 3 s during the call: on the kernel nothing is
/// lost, the call is interrupted for a bounded time, and the traffic goes
/// back to the fixed line's subflow after the restore (Linux: seconds
/// later, its retransmission timer having backed off).
#[test]
fn kernel_tunnel_fails_over_and_back() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("tunf");
    let text = bundled("seed004-failover.toml").replace("duration = \"30s\"", "duration = \"16s\"").replace("at = \"10s\"", "at = \"3s\"").replace("at = \"20s\"", "at = \"6s\"");
    let k = run_unless_kernel_mptcp_stalled(&g, 0, &text);
    let call = k.results.summary.flows.iter().find(|f| f.name == "call").unwrap().datagrams.clone().unwrap();
    eprintln!("kernel failover: {call:?}");
    assert_eq!(call.stream.received, call.stream.sent);
    assert!((100.0..5_000.0).contains(&call.stream.longest_interruption_ms), "{}", call.stream.longest_interruption_ms);
    let back = k.results.flows.iter().find(|r| r.flow == "tunnel" && r.subflow == "0" && r.time_s > 6.0 && r.goodput_bps > 0.0).map(|r| r.time_s - 6.0);
    eprintln!("back on the fixed line after {back:?} s");
    assert!(back.is_some_and(|b| b < 9.0), "{back:?}");
    g.assert_clean();
}

/// Datagram mode on the kernel: with 5 % loss on the cellular link the
/// call, in its own tunnel, arrives whole (the first of two copies) and no
/// packet of it waits behind a retransmission.
#[test]
fn kernel_tunnel_datagram_mode() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("tund");
    let mut sc = mplab_scenario::Scenario::from_str(&bundled("seed004-classes.toml"), "seed004-classes.toml").unwrap();
    sc.set_all([("events", "[]"), ("duration", "10s"), ("links.1.loss", "0.05"), ("flows.0.scheduler", "default"), ("flows.0.mode", "datagram"), ("flows.2.bytes", "5MB")]).unwrap();
    let text = sc.effective_toml();
    let k = run(&g, 0, &text);
    let s = sim(&text);
    let call = |r: &mplab_backend::results::Summary| r.flows.iter().find(|f| f.name == "call").unwrap().datagrams.clone().unwrap();
    let (kc, sc) = (call(&k.results.summary), call(&s.summary));
    eprintln!("datagram mode: kernel {kc:?}\n  sim {sc:?}");
    // The lossy link (link2) has 25 ms each way.
    kernel_support::assert_call_without_head_of_line_blocking(&kc.stream, &sc.stream, 50.0);
    let t = k.results.summary.flows.iter().find(|f| f.name == "voice").unwrap().tunnel.clone().unwrap();
    assert!(t.upstream.duplicates > t.upstream.datagrams_in / 2, "{t:?}");
    g.assert_clean();
}

/// The userspace backend with both gateways on mplab's stack (the tunnel's
/// connection bridged to the gateway programs) and Linux end hosts: the
/// 5 MB download and the call as on the simulator, whose gateways run the
/// same stack (within 15 % and 2.5 ms); no carrier segment reached the
/// gateways' own TCP, every byte the stack sent was the program's, and
/// each end read the frames the other wrote.
#[test]
fn userspace_tunnel_on_mplab_gateways_like_the_simulator() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("utun");
    let text = on_linux(&bundled("seed004-tunnel.toml").replace("duration = \"30s\"", "duration = \"6s\"").replace("bytes = \"10MB\"", "bytes = \"5MB\""), &["client", "server"]);
    let u = run_userspace(&g, 0, &text);
    let s = sim(&text);
    let by = |r: &mplab_backend::results::Summary, n: &str| r.flows.iter().find(|f| f.name == n).cloned().unwrap();
    let (ud, sd) = (by(&u.results.summary, "download"), by(&s.summary, "download"));
    eprintln!("download: userspace {:?} s, sim {:?} s", ud.completion_time_s, sd.completion_time_s);
    assert!(ud.completed && ud.verified, "{ud:?}");
    let (ut, st) = (ud.completion_time_s.unwrap(), sd.completion_time_s.unwrap());
    assert!((ut - st).abs() <= 0.15 * st, "download: userspace {ut:.3} s, sim {st:.3} s");
    let (uc, sc) = (by(&u.results.summary, "call").datagrams.unwrap(), by(&s.summary, "call").datagrams.unwrap());
    eprintln!("call p50: userspace {:.2} ms, sim {:.2} ms", uc.stream.delay_p50_ms, sc.stream.delay_p50_ms);
    assert!((uc.stream.delay_p50_ms - sc.stream.delay_p50_ms).abs() <= 2.5, "{TWO_PROGRAMS}");
    assert_eq!(uc.stream.received, uc.stream.sent);
    let t = by(&u.results.summary, "tunnel").tunnel.unwrap();
    for (gw, read, wrote) in [("cpe", &t.downstream, "downstream"), ("hag", &t.upstream, "upstream")] {
        let h = mplab_host(&u, gw);
        eprintln!("{gw}: {h}");
        assert_eq!(h["kernel_tcp"]["InSegs"], 0, "{gw}: carrier segments reached Linux's TCP");
        assert_eq!(h["bridge_bytes_gone"], 0, "{gw}");
        // All of them but at most two frames still in flight at the end.
        let got = h["streams"][0]["bytes_read"].as_u64().unwrap();
        assert!(got <= read.frame_bytes && got + 2 * 1520 >= read.frame_bytes, "{gw}: read {got} B of the {} B of {wrote} frames", read.frame_bytes);
    }
    g.assert_clean();
}

/// mplab's stack in the CPE against Linux's MPTCP in the HAG (and the
/// other way round): the tunnel interoperates, the download completes
/// with every byte.
#[test]
fn userspace_tunnel_mplab_and_linux_gateways() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("utmx");
    let text = on_linux(&bundled("seed004-tunnel.toml").replace("duration = \"30s\"", "duration = \"5s\"").replace("bytes = \"10MB\"", "bytes = \"5MB\""), &["client", "server"]);
    for (i, linux) in ["hag", "cpe"].into_iter().enumerate() {
        // One end of the tunnel is Linux's MPTCP: its receive stall
        // (docs/kernel-backend.md) is a kernel bug, run again.
        let u = run_userspace_unless_kernel_mptcp_stalled(&g, i, &on_linux(&text, &[linux]));
        let d = u.results.summary.flows.iter().find(|f| f.name == "download").unwrap();
        eprintln!("Linux {linux}: download {:?} s", d.completion_time_s);
        assert!(d.completed && d.verified, "Linux {linux}: {d:?}");
        assert!(u.meta["mplab_hosts"].get(linux).is_none(), "{linux} ran Linux's stack");
    }
    g.assert_clean();
}
