//! The kernel backend's load balancer on real packets (root only).
//!
//! `cargo bench -p mplab-emu --bench forwarder`
//!
//! Three namespaces: a sender, the balancer (iptables NFQUEUE rules and
//! the fwmark routing tables of `mplab_emu::balancer`, its `Forwarder`
//! thread) and a backend that drops what it gets (no VIP, no
//! forwarding). The sender writes TCP segments to the VIP as fast as a raw
//! socket goes, over 65536 connections (a SYN each, then data segments),
//! for 3 s per mode. Printed per mode: segments offered, segments the
//! forwarder decided (the rest the queue dropped, full), its rate, and the
//! forwarder thread's CPU per segment (user + system: the netlink round
//! trip included) with the rate one core would reach at that cost. The
//! decision alone is `cargo bench -p mplab-backend --bench balancer`.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mplab_backend::balancer::BalancerConfig;
use mplab_emu::balancer::{self, Forwarder, Plan};
use mplab_emu::sys;
use mplab_scenario::network::BalancerMode;

const PREFIX: &str = "mplabfwb";
const VIP: Ipv4Addr = Ipv4Addr::new(10, 100, 0, 1);
const SECONDS: u64 = 3;
const CONNECTIONS: u32 = 65536;

fn ns(n: &str) -> String {
    format!("{PREFIX}-{n}")
}

/// Removes the namespaces (and with them the veths and rules).
struct Cleanup;
impl Drop for Cleanup {
    fn drop(&mut self) {
        for n in ["src", "lb", "be"] {
            let _ = sys::run(&["ip", "netns", "del", &ns(n)]);
        }
    }
}

fn sh(args: &[&str]) {
    if let Err(e) = sys::run(args) {
        panic!("{}: {e}", args.join(" "));
    }
}

fn setup() {
    for n in ["src", "lb", "be"] {
        let _ = sys::run(&["ip", "netns", "del", &ns(n)]);
        sh(&["ip", "netns", "add", &ns(n)]);
        sh(&["ip", "-n", &ns(n), "link", "set", "lo", "up"]);
    }
    let (src, lb, be) = (ns("src"), ns("lb"), ns("be"));
    sh(&["ip", "link", "add", "s0", "netns", &src, "type", "veth", "peer", "name", "l0", "netns", &lb]);
    sh(&["ip", "link", "add", "l1", "netns", &lb, "type", "veth", "peer", "name", "b0", "netns", &be]);
    for (n, dev, addr) in [(&src, "s0", "10.9.0.1/24"), (&lb, "l0", "10.9.0.2/24"), (&lb, "l1", "10.9.1.1/24"), (&be, "b0", "10.9.1.2/24")] {
        sh(&["ip", "-n", n, "addr", "add", addr, "dev", dev]);
        sh(&["ip", "-n", n, "link", "set", dev, "up"]);
    }
    sh(&["ip", "-n", &src, "route", "add", "default", "via", "10.9.0.2"]);
    sh(&["ip", "netns", "exec", &lb, "sysctl", "-qw", "net.ipv4.ip_forward=1"]);
}

fn plan(mode: BalancerMode) -> Plan {
    let mut cfg = BalancerConfig::new(mode, 1);
    cfg.conn_capacity = 1 << 20;
    cfg.token_capacity = 1 << 20;
    Plan { node: 0, cfg, vip: VIP, backends: vec![(0, "l1".into(), Ipv4Addr::new(10, 9, 1, 2))], link_states: Vec::new() }
}

/// An IPv4/TCP segment to the VIP from connection `c` (the kernel fills
/// in the IP checksum; nobody checks the TCP one on this path).
fn segment(c: u32, syn: bool, buf: &mut Vec<u8>) {
    buf.clear();
    let total = 20 + 20 + if syn { 0 } else { 64 };
    buf.extend_from_slice(&[0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 9, 0, 1]);
    buf.extend_from_slice(&VIP.octets());
    let sport = 1024 + (c % 60000) as u16;
    let dport = 5001 + (c / 60000) as u16;
    buf.extend_from_slice(&sport.to_be_bytes());
    buf.extend_from_slice(&dport.to_be_bytes());
    buf.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0x50, if syn { 0x02 } else { 0x10 }, 0xff, 0xff, 0, 0, 0, 0]);
    buf.resize(total, 0xab);
}

/// Sends until `stop`; returns the segments written.
fn sender(stop: Arc<AtomicBool>, sent: Arc<AtomicU64>) -> std::io::Result<()> {
    sys::enter_netns(&ns("src"))?;
    // SAFETY: plain socket call.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let to = libc::sockaddr_in { sin_family: libc::AF_INET as u16, sin_port: 0, sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(VIP.octets()) }, sin_zero: [0; 8] };
    let mut buf = Vec::with_capacity(128);
    let mut k: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let c = (k % u64::from(CONNECTIONS)) as u32;
        segment(c, k < u64::from(CONNECTIONS), &mut buf);
        // SAFETY: a valid buffer and address.
        let r = unsafe { libc::sendto(fd, buf.as_ptr().cast(), buf.len(), 0, (&to as *const libc::sockaddr_in).cast(), std::mem::size_of::<libc::sockaddr_in>() as u32) };
        if r > 0 {
            k += 1;
        }
    }
    sent.store(k, Ordering::Relaxed);
    // SAFETY: our fd.
    unsafe { libc::close(fd) };
    Ok(())
}

fn main() {
    if !sys::is_root() {
        println!("forwarder bench: needs root (network namespaces, iptables); skipped");
        return;
    }
    let _c = Cleanup;
    setup();
    let lb = ns("lb");
    println!("| mode | offered (kpps) | decided (kpps) | dropped by the full queue | CPU per segment | one core at that cost |");
    println!("|---|---|---|---|---|---|");
    for mode in [BalancerMode::IpHash, BalancerMode::FiveTuple, BalancerMode::Token, BalancerMode::Stateless] {
        let p = plan(mode);
        let _ = sys::run(&["ip", "netns", "exec", &lb, "iptables", "-w", "-t", "mangle", "-F"]);
        for c in balancer::ip_commands(&p) {
            let mut a = vec!["ip", "-n", lb.as_str()];
            a.extend(c.split_whitespace());
            let _ = sys::run(&a);
        }
        for rule in balancer::iptables_rules(&p) {
            let mut a = vec!["ip", "netns", "exec", lb.as_str(), "iptables"];
            a.extend(rule.iter().map(String::as_str));
            sh(&a);
        }
        let fw = Forwarder::start(&lb, &p).expect("forwarder");
        fw.start_clock(Instant::now());
        let (stop, sent) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
        let (s2, n2) = (stop.clone(), sent.clone());
        let t = std::thread::spawn(move || sender(s2, n2));
        std::thread::sleep(Duration::from_secs(SECONDS));
        stop.store(true, Ordering::Relaxed);
        t.join().expect("sender thread").expect("sender");
        // Let the queue drain before stopping the forwarder.
        std::thread::sleep(Duration::from_millis(200));
        let (stats, load) = fw.stop().expect("forwarder stop");
        let offered = sent.load(Ordering::Relaxed);
        let secs = SECONDS as f64;
        println!(
            "| {} | {:.0} | {:.0} | {:.1} % | {:.2} us | {:.0} kpps |",
            mode.name(),
            offered as f64 / secs / 1e3,
            stats.packets as f64 / secs / 1e3,
            100.0 * offered.saturating_sub(stats.packets) as f64 / offered.max(1) as f64,
            load.ns_per_segment() / 1e3,
            1e6 / load.ns_per_segment().max(1.0)
        );
    }
}
