//! Link-emulator benchmark (root only): raw Ethernet frames from one
//! namespace to another through the emulator (one link, 1 ms delay,
//! unlimited rate, 100k-packet queue).
//!
//! `cargo bench -p mplab-emu --bench emu`
//!
//! Phase 1, per frame size (64 B and 1514 B frames): the sender blasts for
//! 2 s; frames/s and Gbit/s that come out at the far end are the
//! emulator's throughput. Then paced loads of 10, 25 and 50 % of that for
//! 2 s each: the one-way delay error (measured delay minus 1 ms) at p50/p99.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mplab_emu::emulator::{EmuConfig, EmuLink, Emulator};
use mplab_emu::{sys, topo};

const ETHERTYPE: u16 = 0x88b5; // IEEE local experimental: the stacks ignore it
const DELAY_NS: u64 = 1_000_000;

fn main() {
    if !sys::is_root() {
        eprintln!("emu bench: needs root (network namespaces); skipped");
        return;
    }
    let toml = "name = \"bench\"\nduration = \"60s\"\n[[nodes]]\nname = \"a\"\n[[nodes]]\nname = \"b\"\n[[links]]\na = \"a\"\nb = \"b\"\nrate = \"1000Gbit\"\ndelay = \"1ms\"\nqueue = { kind = \"droptail\", packets = 100000 }\n";
    let sc = mplab_scenario::Scenario::from_str(toml, "bench.toml").expect("scenario");
    let net = sc.resolve().expect("resolve");
    let prefix = topo::run_prefix();
    let topo = topo::Topology::build(&net, &prefix).expect("topology");
    let l = &net.links[0];
    let cfg = EmuConfig {
        wire_ns: topo.wire_ns.clone(),
        links: vec![EmuLink {
            name: l.name.clone(),
            ends: [topo::wire_end(0, 0), topo::wire_end(0, 1)],
            params: [mplab_sim::transport::link_params(&l.ab), mplab_sim::transport::link_params(&l.ba)],
            up: true,
            strip: [None, None],
            mtu: 1500,
        }],
        events: vec![],
        seed: 1,
        probe_interval_ns: 1_000_000_000,
        probe_queues: vec![],
        duration_ns: 3_600_000_000_000,
    };
    let epoch = Instant::now();
    let emu = Emulator::start(cfg, epoch).expect("emulator");
    let tx = sys::in_netns(&topo.node_ns[0], || sys::packet_socket("eth0", false, 8 << 20)).expect("tx socket");
    let rx = sys::in_netns(&topo.node_ns[1], || sys::packet_socket("eth0", false, 8 << 20)).expect("rx socket");
    println!("mplab-emu link emulator, one link, 1 ms delay, unlimited rate ({} CPUs)", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    for size in [64usize, 1514] {
        let (pps, gbps, _, _) = phase(&tx, &rx, size, None, epoch);
        println!("  {size:>5} B frames, blast: {:>9.0} frames/s out, {:>6.3} Gbit/s", pps, gbps);
        for frac in [0.1, 0.25, 0.5] {
            let target = (pps * frac).max(1000.0);
            let (pps2, _, p50, p99) = phase(&tx, &rx, size, Some(target), epoch);
            println!("  {size:>5} B frames at {:>3.0} % ({:>7.0} frames/s): delay error p50 {:>8.1} us, p99 {:>8.1} us ({pps2:.0} frames/s out)", frac * 100.0, target, p50, p99);
        }
    }
    let rep = emu.stop();
    println!(
        "  emulator: {} frames sent, lateness vs model p50 {:.0} us / p99 {:.0} us, {} send errors, {} rx drops",
        rep.frames,
        rep.lateness.quantile_us(0.5).unwrap_or(0.0),
        rep.lateness.quantile_us(0.99).unwrap_or(0.0),
        rep.tx_errors,
        rep.rx_dropped
    );
    drop(tx);
    drop(rx);
    drop(topo);
}

/// Sends for 2 s (paced at `pace` frames/s, or as fast as possible),
/// receives at the far end; returns (frames/s out, Gbit/s out, delay error
/// p50 us, p99 us).
fn phase(tx: &OwnedFd, rx: &OwnedFd, size: usize, pace: Option<f64>, epoch: Instant) -> (f64, f64, f64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let rfd = rx.as_raw_fd();
    let st = stop.clone();
    let recv = std::thread::spawn(move || {
        let mut n = 0u64;
        let mut bytes = 0u64;
        let mut delays = Vec::new();
        let mut buf = vec![0u8; 2048];
        let mut first: Option<Instant> = None;
        let mut last = Instant::now();
        let mut seen = Instant::now();
        // Until the sender is done and nothing came for 200 ms.
        while !(st.load(Ordering::Relaxed) && seen.elapsed() > Duration::from_millis(200)) {
            // SAFETY: valid buffer.
            let r = unsafe { libc::recv(rfd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT) };
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
            let got = now.duration_since(epoch).as_nanos() as u64;
            delays.push(got.saturating_sub(sent) as i64 - DELAY_NS as i64);
        }
        let secs = first.map(|f| last.duration_since(f).as_secs_f64()).unwrap_or(0.0).max(1e-9);
        delays.sort_unstable();
        let q = |x: f64| delays.get(((delays.len() as f64 * x) as usize).min(delays.len().saturating_sub(1))).copied().unwrap_or(0) as f64 / 1e3;
        (n as f64 / secs, bytes as f64 * 8.0 / secs / 1e9, q(0.5), q(0.99))
    });
    let mut frame = vec![0u8; size];
    frame[0..6].copy_from_slice(&[0xff; 6]);
    frame[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
    let t0 = Instant::now();
    let mut sent = 0u64;
    let fd = tx.as_raw_fd();
    while t0.elapsed() < Duration::from_secs(2) {
        if let Some(p) = pace {
            let due = t0 + Duration::from_secs_f64(sent as f64 / p);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        let ts = Instant::now().duration_since(epoch).as_nanos() as u64;
        frame[14..22].copy_from_slice(&ts.to_ne_bytes());
        // SAFETY: valid buffer.
        let r = unsafe { libc::send(fd, frame.as_ptr() as *const libc::c_void, frame.len(), 0) };
        if r > 0 {
            sent += 1;
        } else {
            std::thread::yield_now();
        }
    }
    stop.store(true, Ordering::Relaxed);
    recv.join().expect("receiver")
}
