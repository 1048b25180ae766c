//! Link-emulator benchmark (root only): raw Ethernet frames from one
//! namespace to another through the emulator (one link, 1 ms delay,
//! unlimited rate, 100k-packet queue).
//!
//! `cargo bench -p mplab-emu --bench emu`
//!
//! Per frame size (64 B and 1514 B frames):
//!
//! * blast: the sender sends as fast as it can for 2 s; the frames/s and
//!   Gbit/s that come out at the far end are the emulator's throughput;
//! * paced loads for 2 s each (fixed rates, the highest at >= 1 Gbit/s of
//!   1514 B frames, then a share of the blast rate for 64 B): the delay
//!   error p50/p99/max, i.e. how late frames left the emulator compared with
//!   their model departure time (kernel receive timestamp + 1 ms), from the
//!   emulator's own per-frame record; and, measured independently of it,
//!   the wire delay error: the receiving veth's kernel timestamp minus the
//!   sender's send time minus 1 ms (the sender's own path adds a few µs).
//!
//! * trace replay (1514 B frames): the link's `ab` direction replays a
//!   Mahimahi trace (docs/mobile.md) instead of its rate, the sender paced
//!   above the trace's capacity so that every opportunity has a frame
//!   waiting: the bundled `lte-commuter-10mbit.trace` (about 350 frames/s
//!   in its first 2 s, sent 1000/s) and a constant trace of 8 opportunities
//!   every millisecond (96 Mbit/s of 1500 B packets, sent 9000/s), beside
//!   the fixed-rate load of 8.3 k frames/s. Each millisecond's frames are
//!   due at the same instant, so the emulator sends them back to back.
//!   Their delay error (p50/p99/max, the emulator's record) is the
//!   figure; the wire column is left out (the frames queue by design).
//!   `EMU_BENCH_TRACE=1` runs only these two and the fixed-rate 8.3 k load.
//!
//! A fresh emulator runs each phase, so each phase's figures are its own.
//! Sender, receiver and emulator share the machine's cores (2 here); other
//! load on the machine shows in the p99s: run it a few times.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mplab_emu::emulator::{EmuConfig, EmuLink, EmuReport, Emulator};
use mplab_emu::{sys, topo};

const ETHERTYPE: u16 = 0x88b5; // IEEE local experimental: the stacks ignore it
const DELAY_NS: u64 = 1_000_000;
const PHASE: Duration = Duration::from_secs(2);

fn main() {
    if !sys::is_root() {
        eprintln!("emu bench: needs root (network namespaces); skipped");
        return;
    }
    let toml = "name = \"bench\"\nduration = \"60s\"\n[[nodes]]\nname = \"a\"\n[[nodes]]\nname = \"b\"\n[[links]]\na = \"a\"\nb = \"b\"\nrate = \"1000Gbit\"\ndelay = \"1ms\"\nqueue = { kind = \"droptail\", packets = 100000 }\n";
    let sc = mplab_scenario::Scenario::from_str(toml, "bench.toml").expect("scenario");
    let net = mplab_backend::plugins::resolve(&sc).expect("resolve");
    let prefix = topo::run_prefix();
    let topo = topo::Topology::build(&net, &prefix).expect("topology");
    let l = &net.links[0];
    let cfg = EmuConfig {
        wire_ns: topo.wire_ns.clone(),
        links: vec![EmuLink {
            name: l.name.clone(),
            ends: [topo::wire_end(0, 0), topo::wire_end(0, 1)],
            params: [mplab_backend::config::link_params(&l.ab).expect("checked"), mplab_backend::config::link_params(&l.ba).expect("checked")],
            traces: [None, None],
            up: true,
            strip: [None, None],
            attack: None,
            mtu: 1500,
            radio: None,
        }],
        events: vec![],
        seed: 1,
        probe_interval_ns: 1_000_000_000,
        probe_queues: vec![],
        duration_ns: 3_600_000_000_000,
    };
    let tx = sys::in_netns(&topo.node_ns[0], || sys::packet_socket("eth0", false, 8 << 20)).expect("tx socket");
    let rx = sys::in_netns(&topo.node_ns[1], || sys::packet_socket("eth0", false, 8 << 20)).expect("rx socket");
    println!("mplab-emu link emulator, one link, 1 ms delay, unlimited rate ({} CPUs)", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    println!("  delay error = departure from the emulator minus model departure time (emulator's record); wire = receiving veth's timestamp minus send time minus 1 ms");
    // EMU_BENCH_QUICK=1: only the 1514 B loads of 0.5 and 1 Gbit/s, no
    // blast (for comparing emulator settings back to back).
    let quick = std::env::var_os("EMU_BENCH_QUICK").is_some();
    let trace_only = std::env::var_os("EMU_BENCH_TRACE").is_some();
    // Idle: the emulator sleeps when nothing is due (it runs at real-time
    // priority, so it must).
    {
        let emu = Emulator::start(cfg.clone(), Instant::now()).expect("emulator");
        std::thread::sleep(Duration::from_secs(1));
        let rep = emu.stop();
        println!("  idle for 1 s: emulator CPU {:.2} ms{}", rep.cpu_ns as f64 / 1e6, drops(&rep));
    }
    for size in if trace_only { vec![] } else if quick { vec![1514usize] } else { vec![64, 1514] } {
        let (blast, rep) = if quick { (Out { pps: 200_000.0, gbps: 0.0, wire_p50_us: 0.0, wire_p99_us: 0.0 }, EmuReport::default()) } else { phase(&cfg, &tx, &rx, size, None) };
        if !quick {
            println!("  {size:>5} B blast: {:>8.0} frames/s out, {:>6.3} Gbit/s (frames incl. Ethernet header){}", blast.pps, blast.gbps, drops(&rep));
        }
        // 1514 B: fixed rates up to >= 1 Gbit/s (83 k frames/s = 1.006
        // Gbit/s of 1514 B frames); 64 B: shares of its blast rate.
        let loads: Vec<f64> = if quick { vec![41_500.0, 83_000.0] } else if size >= 1000 { vec![8_300.0, 41_500.0, 83_000.0, 100_000.0] } else { [0.1, 0.25, 0.5].iter().map(|f| (blast.pps * f).round()).collect() };
        for target in loads {
            let (o, rep) = phase(&cfg, &tx, &rx, size, Some(target));
            let q = |x: f64| rep.lateness.quantile_us(x).unwrap_or(f64::NAN);
            println!(
                "  {size:>5} B at {:>7.0} frames/s ({:>5.3} Gbit/s, {:>3.0} % of blast): delay error p50 {:>6.1} us, p99 {:>7.1} us, max {:>7.0} us, {:>6.2} % < 0.2 ms; wire p50 {:>6.1} us, p99 {:>7.1} us; read p99 {:>6.0} us, oversleep p99 {:>5.0} max {:>5.0} us; cpu {:.2} s, run delay {:.1} ms, {} preemptions ({:.0} frames/s out){}",
                target,
                target * size as f64 * 8.0 / 1e9,
                target / blast.pps * 100.0,
                q(0.5),
                q(0.99),
                rep.lateness.max_ns as f64 / 1e3,
                rep.lateness.share_within_us(200).unwrap_or(f64::NAN) * 100.0,
                o.wire_p50_us,
                o.wire_p99_us,
                rep.read_delay.quantile_us(0.99).unwrap_or(f64::NAN),
                rep.oversleep.quantile_us(0.99).unwrap_or(f64::NAN),
                rep.oversleep.max_ns as f64 / 1e3,
                rep.cpu_ns as f64 / 1e9,
                rep.run_delay_ns as f64 / 1e6,
                rep.involuntary_switches,
                o.pps,
                drops(&rep)
            );
        }
    }
    if !quick {
        trace_phases(&cfg, &tx, &rx, trace_only);
    }
    drop(tx);
    drop(rx);
    drop(topo);
}

/// The trace replays: the `ab` direction's rate replaced by a delivery
/// schedule, the sender paced above its capacity.
fn trace_phases(cfg: &EmuConfig, tx: &OwnedFd, rx: &OwnedFd, with_fixed: bool) {
    let bundled = format!("{}/../../scenarios/traces/lte-commuter-10mbit.trace", env!("CARGO_MANIFEST_DIR"));
    let commuter: Vec<u64> = std::fs::read_to_string(&bundled).expect("bundled trace").lines().map(|l| l.trim().parse().expect("trace line")).collect();
    // 8 opportunities at every millisecond from 1 to 1000, looped.
    let constant: Vec<u64> = (1..=1000u64).flat_map(|m| [m; 8]).collect();
    let mut phases: Vec<(&str, Option<Vec<u64>>, f64)> = vec![("lte-commuter-10mbit.trace", Some(commuter), 1_000.0), ("8 per ms (96 Mbit/s)", Some(constant), 9_000.0)];
    if with_fixed {
        phases.insert(0, ("fixed rate (unlimited)", None, 8_300.0));
    }
    for (name, ms, pace) in phases {
        let mut c = cfg.clone();
        c.links[0].traces[0] = ms.map(|ms| mplab_backend::link::DeliverySchedule::new(ms.into(), true).expect("a valid trace"));
        let (o, rep) = phase(&c, tx, rx, 1514, Some(pace));
        let q = |x: f64| rep.lateness.quantile_us(x).unwrap_or(f64::NAN);
        println!(
            "   1514 B, {name}, sent {pace:.0} frames/s: {:.0} frames/s out; delay error p50 {:>6.1} us, p99 {:>7.1} us, max {:>7.0} us, {:>6.2} % < 0.2 ms; oversleep p99 {:>5.0} us; cpu {:.2} s{}",
            o.pps,
            q(0.5),
            q(0.99),
            rep.lateness.max_ns as f64 / 1e3,
            rep.lateness.share_within_us(200).unwrap_or(f64::NAN) * 100.0,
            rep.oversleep.quantile_us(0.99).unwrap_or(f64::NAN),
            rep.cpu_ns as f64 / 1e9,
            drops(&rep)
        );
    }
}

fn drops(rep: &EmuReport) -> String {
    let mut s = String::new();
    if rep.tx_errors + rep.rx_dropped > 0 {
        s += &format!(" [{} send errors, {} rx drops]", rep.tx_errors, rep.rx_dropped);
    }
    for e in &rep.errors {
        s += &format!(" [{e}]");
    }
    s
}

struct Out {
    pps: f64,
    gbps: f64,
    wire_p50_us: f64,
    wire_p99_us: f64,
}

/// One phase with its own emulator: sends for [`PHASE`] (paced at `pace`
/// frames/s, or as fast as possible), receives at the far end.
fn phase(cfg: &EmuConfig, tx: &OwnedFd, rx: &OwnedFd, size: usize, pace: Option<f64>) -> (Out, EmuReport) {
    let epoch = Instant::now();
    let emu = Emulator::start(cfg.clone(), epoch).expect("emulator");
    // Run clock = realtime - offset (the receiver's kernel timestamps are realtime).
    let real_offset = sys::realtime_ns() as i128 - epoch.elapsed().as_nanos() as i128;
    // Drain what an earlier phase left in the receiver's socket.
    let mut buf = vec![0u8; 2048];
    // SAFETY: valid buffer.
    while unsafe { libc::recv(rx.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT) } > 0 {}
    let stop = Arc::new(AtomicBool::new(false));
    let rfd = rx.as_raw_fd();
    let st = stop.clone();
    let recv = std::thread::spawn(move || receive(rfd, &st, epoch, real_offset));
    send(tx, size, pace, epoch);
    stop.store(true, Ordering::Relaxed);
    let out = recv.join().expect("receiver");
    (out, emu.stop())
}

fn send(tx: &OwnedFd, size: usize, pace: Option<f64>, epoch: Instant) {
    sys::tight_timer_slack();
    let mut frame = vec![0u8; size];
    frame[0..6].copy_from_slice(&[0xff; 6]);
    frame[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
    let t0 = Instant::now();
    let mut sent = 0u64;
    let fd = tx.as_raw_fd();
    loop {
        let el = t0.elapsed();
        if el >= PHASE {
            break;
        }
        if let Some(p) = pace {
            // Everything due by now goes out back to back; then sleep to
            // the next one (a sleep is ~60 µs here, so high rates go out
            // in short bursts at the right average rate).
            let due = (el.as_secs_f64() * p) as u64;
            if sent >= due {
                let next = Duration::from_secs_f64((sent + 1) as f64 / p);
                std::thread::sleep(next.saturating_sub(t0.elapsed()));
                continue;
            }
        }
        let ts = epoch.elapsed().as_nanos() as u64;
        frame[14..22].copy_from_slice(&ts.to_ne_bytes());
        // SAFETY: valid buffer.
        let r = unsafe { libc::send(fd, frame.as_ptr() as *const libc::c_void, frame.len(), 0) };
        if r > 0 {
            sent += 1;
        } else {
            std::thread::yield_now();
        }
    }
}

fn receive(rfd: i32, stop: &AtomicBool, epoch: Instant, real_offset: i128) -> Out {
    let mut n = 0u64;
    let mut bytes = 0u64;
    let mut delays = Vec::with_capacity(1 << 20);
    let mut buf = vec![0u8; 2048];
    let mut cbuf = [0u64; 16];
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    let mut seen = Instant::now();
    // Until the sender is done and nothing came for 200 ms.
    while !(stop.load(Ordering::Relaxed) && seen.elapsed() > Duration::from_millis(200)) {
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
        // SAFETY: zeroed msghdr is valid; it points at live buffers.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&cbuf);
        // SAFETY: msg describes valid buffers.
        let r = unsafe { libc::recvmsg(rfd, &mut msg, libc::MSG_DONTWAIT) };
        if r <= 0 {
            let mut p = [libc::pollfd { fd: rfd, events: libc::POLLIN, revents: 0 }];
            let _ = sys::poll_in(&mut p, 10_000_000);
            continue;
        }
        seen = Instant::now();
        let r = r as usize;
        if r < 22 || u16::from_be_bytes([buf[12], buf[13]]) != ETHERTYPE {
            continue;
        }
        let now = Instant::now();
        first.get_or_insert(now);
        last = now;
        n += 1;
        bytes += r as u64;
        let sent = u64::from_ne_bytes(buf[14..22].try_into().unwrap());
        // The receiving veth's timestamp, not this thread's wake-up.
        let mut got = now.duration_since(epoch).as_nanos() as i128;
        // SAFETY: walking the control messages the kernel wrote into cbuf.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let t = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                    got = i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec) - real_offset;
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        delays.push((got - sent as i128 - DELAY_NS as i128) as i64);
    }
    let secs = first.map(|f| last.duration_since(f).as_secs_f64()).unwrap_or(0.0).max(1e-9);
    delays.sort_unstable();
    let q = |x: f64| delays.get(((delays.len() as f64 * x) as usize).min(delays.len().saturating_sub(1))).copied().unwrap_or(0) as f64 / 1e3;
    Out { pps: n as f64 / secs, gbps: bytes as f64 * 8.0 / secs / 1e9, wire_p50_us: q(0.5), wire_p99_us: q(0.99) }
}
