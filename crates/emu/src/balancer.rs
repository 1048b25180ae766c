//! The load balancer on the kernel backend: a thread in the balancer
//! router's namespace serves an NFQUEUE that an nftables rule feeds with
//! every TCP segment to or from the VIP, asks the shared balancer core
//! (mplab-backend's `balancer`) where each goes, and accepts it with the
//! firewall mark of that backend; `ip rule fwmark` then routes it through
//! that backend's table. The same decisions as the simulator's middlebox,
//! on real kernel packets.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant as Wall;

use mplab_backend::balancer::{Balancer, BalancerConfig, BalancerStats, FlowKey, MptcpSeen, Segment, Verdict};
use mplab_scenario::network::{MiddleboxAction, Network, Placement};

use crate::nfqueue::{NfQueue, NfVerdict};
use crate::sys;

/// The netfilter queue every balancer uses (one per namespace).
pub const QUEUE: u16 = 7;
/// Bytes of each packet copied to the balancer: IP and TCP headers with
/// options.
const COPY: u32 = 128;
/// Firewall mark of backend `i` is `MARK_BASE + i`; its routing table
/// `TABLE_BASE + i`.
pub const MARK_BASE: u32 = 0x4d50_0000;
pub const TABLE_BASE: u32 = 300;

/// One balancer of the scenario as the kernel backend sets it up.
#[derive(Debug, Clone)]
pub struct Plan {
    pub node: usize,
    pub cfg: BalancerConfig,
    pub vip: Ipv4Addr,
    /// Per backend: its node, the balancer's interface towards it and the
    /// backend's address on that link (the next hop).
    pub backends: Vec<(usize, String, Ipv4Addr)>,
    /// The backends' link states over the run: (ns since the start,
    /// backend, up), in time order, the initial states at 0. The
    /// simulator's balancer takes a backend out of service when its link
    /// goes down; this one does the same at the same scenario times.
    pub link_states: Vec<(u64, usize, bool)>,
}

/// The balancers of `net`.
pub fn plans(net: &Network) -> Vec<Plan> {
    let mut out = Vec::new();
    for m in &net.middleboxes {
        let (MiddleboxAction::LoadBalancer { mode, vip, backends, table, idle_ns }, Placement::Node { node, .. }) = (&m.action, &m.placement) else { continue };
        let router = &net.nodes[*node];
        let mut bs = Vec::new();
        let mut link_states = Vec::new();
        for name in backends {
            let Some(b) = net.node(name) else { continue };
            let Some(i) = router.interfaces.iter().find(|i| i.peer == b.id) else { continue };
            let addr = b.interfaces[i.peer_iface].addr;
            let k = bs.len();
            bs.push((b.id, i.name.clone(), addr));
            if net.links.get(i.link).is_some_and(|l| !l.up) {
                link_states.push((0, k, false));
            }
            for e in net.events.iter().filter(|e| e.link == i.link) {
                match e.action {
                    mplab_scenario::network::LinkAction::Down => link_states.push((e.at_ns, k, false)),
                    mplab_scenario::network::LinkAction::Up => link_states.push((e.at_ns, k, true)),
                    _ => {}
                }
            }
        }
        link_states.sort_by_key(|x| x.0);
        let mut cfg = BalancerConfig::new(*mode, bs.len());
        cfg.conn_capacity = *table as usize;
        cfg.token_capacity = *table as usize;
        cfg.idle_ns = *idle_ns;
        cfg.seed = net.seed;
        out.push(Plan { node: *node, cfg, vip: *vip, backends: bs, link_states });
    }
    out
}

/// `ip` commands for the balancer's namespace: a rule and a table per
/// backend.
pub fn ip_commands(p: &Plan) -> Vec<String> {
    let mut v = Vec::new();
    for (b, (_, iface, addr)) in p.backends.iter().enumerate() {
        let table = TABLE_BASE + b as u32;
        v.push(format!("rule add fwmark {:#x} priority 50 table {table}", MARK_BASE + b as u32));
        v.push(format!("route add {}/32 via {addr} dev {iface} table {table}", p.vip));
    }
    v
}

/// The iptables rules of the balancer's namespace (nft's `queue` needs
/// nft_queue, which this kernel lacks): TCP to the VIP, and the backends'
/// SYN/ACKs (where the token mode learns server keys), go to the queue
/// before routing. Without a reader the kernel drops them (fail closed: a
/// dead balancer shows).
pub fn iptables_rules(p: &Plan) -> Vec<Vec<String>> {
    let (vip, q) = (p.vip.to_string(), QUEUE.to_string());
    let base = |dir: &str| -> Vec<String> { ["-w", "-t", "mangle", "-A", "PREROUTING", dir, &vip, "-p", "tcp"].map(String::from).to_vec() };
    let mut to = base("-d");
    to.extend(["-j", "NFQUEUE", "--queue-num", &q].map(String::from));
    let mut from = base("-s");
    from.extend(["--tcp-flags", "SYN,ACK", "SYN,ACK", "-j", "NFQUEUE", "--queue-num", &q].map(String::from));
    vec![to, from]
}

/// A TCP/IPv4 segment's balancer view from its first bytes.
fn segment(ip: &[u8]) -> Option<Segment> {
    if ip.len() < 20 || ip[0] >> 4 != 4 || ip[9] != 6 {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let t = ip.get(ihl..)?;
    if ihl < 20 || t.len() < 20 {
        return None;
    }
    let doff = usize::from(t[12] >> 4) * 4;
    let opts = t.get(20..doff.max(20)).unwrap_or(&[]);
    let mptcp = if doff > t.len() { MptcpSeen::Malformed } else { MptcpSeen::from_option_bytes(opts) };
    Some(Segment {
        key: FlowKey {
            src: Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]),
            dst: Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]),
            sport: u16::from_be_bytes([t[0], t[1]]),
            dport: u16::from_be_bytes([t[2], t[3]]),
        },
        syn: t[13] & 0x02 != 0,
        ack: t[13] & 0x10 != 0,
        mptcp,
    })
}

/// A running balancer.
pub struct Forwarder {
    stop: Arc<AtomicBool>,
    /// The run's time zero, once known: link states apply from it.
    epoch: Arc<std::sync::OnceLock<Wall>>,
    handle: Option<JoinHandle<std::io::Result<(BalancerStats, ForwarderLoad)>>>,
}

/// What forwarding cost on real packets: every segment the queue handed
/// over (to the VIP and the backends' replies) and the forwarder thread's
/// CPU time, user and system (the netlink round trip included; the
/// kernel's queueing in softirq context is not).
#[derive(Debug, Clone, Copy, Default)]
pub struct ForwarderLoad {
    pub segments: u64,
    pub cpu_ns: u64,
}

impl ForwarderLoad {
    /// CPU per segment (ns), 0 without segments.
    pub fn ns_per_segment(&self) -> f64 {
        if self.segments == 0 { 0.0 } else { self.cpu_ns as f64 / self.segments as f64 }
    }
}

impl Forwarder {
    /// Starts serving `ns`'s queue; returns once the queue is bound.
    pub fn start(ns: &str, p: &Plan) -> std::io::Result<Forwarder> {
        let stop = Arc::new(AtomicBool::new(false));
        let epoch: Arc<std::sync::OnceLock<Wall>> = Arc::new(std::sync::OnceLock::new());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (ns, p, stop2, epoch2) = (ns.to_string(), p.clone(), stop.clone(), epoch.clone());
        let handle = std::thread::Builder::new().name("mplab-balancer".into()).spawn(move || -> std::io::Result<(BalancerStats, ForwarderLoad)> {
            let setup = (|| {
                sys::enter_netns(&ns)?;
                let q = NfQueue::open(QUEUE, COPY)?;
                // Interface indexes of the links to the backends, in this namespace.
                let idx: Vec<u32> = p
                    .backends
                    .iter()
                    .map(|(_, iface, _)| {
                        let c = std::ffi::CString::new(iface.as_str()).unwrap_or_default();
                        // SAFETY: a valid C string.
                        unsafe { libc::if_nametoindex(c.as_ptr()) }
                    })
                    .collect();
                Ok::<_, std::io::Error>((q, idx))
            })();
            let (mut q, idx) = match setup {
                Ok(x) => {
                    let _ = ready_tx.send(Ok(()));
                    x
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(std::io::Error::new(e.kind(), e.to_string())));
                    return Err(e);
                }
            };
            let mut lb = Balancer::new(p.cfg);
            let t0 = Wall::now();
            let mut seen = 0u64;
            let mut segments = 0u64;
            let cpu0 = sys::thread_cpu_ns();
            let mut next_state = 0;
            while !stop2.load(Ordering::Relaxed) {
                // Backends whose link went down (or came back) by now; the
                // queue is served at least every 50 ms.
                if let Some(e) = epoch2.get() {
                    while let Some(&(at, b, up)) = p.link_states.get(next_state) {
                        if Wall::now() < *e + std::time::Duration::from_nanos(at) {
                            break;
                        }
                        lb.set_up(b, up);
                        next_state += 1;
                    }
                }
                q.serve(50, |pkt| {
                    segments += 1;
                    let Some(seg) = segment(pkt.payload) else { return NfVerdict::Accept(None) };
                    let now = t0.elapsed().as_nanos() as u64;
                    if seg.key.dst == p.vip {
                        seen += 1;
                        if seen % 1024 == 0 {
                            lb.housekeeping(now);
                        }
                        match lb.forward(now, &seg) {
                            Verdict::Backend(b) => NfVerdict::Accept(Some(MARK_BASE + b as u32)),
                            Verdict::Drop => NfVerdict::Drop,
                        }
                    } else {
                        if let Some(b) = idx.iter().position(|&i| i == pkt.indev && i != 0) {
                            lb.observe_reply(now, b, &seg);
                        }
                        NfVerdict::Accept(None)
                    }
                })?;
            }
            Ok((lb.stats(), ForwarderLoad { segments, cpu_ns: sys::thread_cpu_ns() - cpu0 }))
        })?;
        ready_rx.recv().map_err(|_| std::io::Error::other("balancer thread ended before binding its queue"))??;
        Ok(Forwarder { stop, epoch, handle: Some(handle) })
    }

    /// The run starts at `t0`: the plan's link states apply from then on.
    pub fn start_clock(&self, t0: Wall) {
        let _ = self.epoch.set(t0);
    }

    /// Stops serving and returns the counters and the load.
    pub fn stop(mut self) -> std::io::Result<(BalancerStats, ForwarderLoad)> {
        self.stop.store(true, Ordering::Relaxed);
        let h = self.handle.take().expect("started");
        h.join().map_err(|_| std::io::Error::other("balancer thread panicked"))?
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_parse_from_headers_and_junk_does_not() {
        let mut ip = vec![0x45, 0, 0, 60, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 100, 0, 1];
        let mut tcp = vec![0xc0, 0x00, 0x13, 0x89, 0, 0, 0, 1, 0, 0, 0, 0, 0x80, 0x02, 0xff, 0xff, 0, 0, 0, 0];
        tcp.extend_from_slice(&[30, 12, 0x10, 0, 0xab, 0xcd, 0x01, 0x23, 0, 0, 0, 9]);
        tcp.extend_from_slice(&[1; 8]);
        ip.extend_from_slice(&tcp);
        let s = segment(&ip).unwrap();
        assert_eq!((s.key.src, s.key.dst, s.key.sport, s.key.dport, s.syn, s.ack), (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 100, 0, 1), 49152, 5001, true, false));
        assert_eq!(s.mptcp, MptcpSeen::JoinSyn { token: 0xabcd_0123 });
        assert!(segment(&ip[..30]).is_none());
        assert!(segment(&[0x60; 40]).is_none(), "IPv6");
        // A data offset past the copied bytes: the option is not trusted.
        let mut cut = ip.clone();
        cut.truncate(20 + 24);
        assert_eq!(segment(&cut).unwrap().mptcp, MptcpSeen::Malformed);
    }
}
