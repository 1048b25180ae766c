//! SCTP flow ends on an mplab host of the userspace backend: the
//! association of crates/proto on real packets (raw IPv4 protocol 132
//! through the host's TUN), its peer usrsctp on a kernel host or another
//! mplab host. The client writes the stream pattern (`bytes`, app bulk)
//! and shuts down; the server checks every byte it reads.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use mplab_backend::apps::{fill_pattern, pattern_mismatch};
use mplab_proto::sctp::Association;
use mplab_proto::Instant;
use mplab_scenario::network::{Flow, Network};
use mplab_wire::sctp::Packet as SctpPacket;

use super::host::counters::{HostCounters, Role};
use super::tun::Tun;
use crate::apps::{Clock, FlowState};

/// IP protocol number of SCTP.
pub const PROTO: u8 = 132;

struct End {
    flow: Flow,
    role: Role,
    st: Arc<FlowState>,
    assoc: Option<Association>,
    /// Local addresses, the flow's own first.
    local: Vec<IpAddr>,
    cfg: mplab_proto::sctp::SctpConfig,
    written: u64,
    read: u64,
    shut: bool,
    buf: Vec<u8>,
}

/// Every SCTP end on one host.
#[derive(Default)]
pub struct SctpEnds {
    ends: Vec<End>,
    out: Vec<u8>,
}

fn v4(a: IpAddr) -> Ipv4Addr {
    match a {
        IpAddr::V4(v) => v,
        IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
    }
}

impl SctpEnds {
    pub fn new(net: &Network, node: usize, ends: &[(usize, Role)], states: &[Arc<FlowState>]) -> SctpEnds {
        let mut me = SctpEnds::default();
        for &(fi, role) in ends.iter().filter(|(fi, _)| net.flows[*fi].transport.is_sctp()) {
            let f = net.flows[fi].clone();
            let first = if role == Role::Client { f.src } else { f.dst };
            let local: Vec<IpAddr> = mplab_backend::config::sctp_addrs(net, node, first).into_iter().map(IpAddr::V4).collect();
            let mut cfg = mplab_backend::config::sctp_config(f.sctp.as_ref().expect("an SCTP flow has its settings"));
            cfg.mtu = mplab_backend::config::sctp_mtu(net, node);
            let seed = crate::sys::realtime_ns() ^ ((fi as u64) << 40) ^ node as u64;
            let assoc = (role == Role::Server).then(|| {
                let mut secret = [0u8; 32];
                for (i, c) in secret.chunks_mut(8).enumerate() {
                    c.copy_from_slice(&(seed.rotate_left(i as u32 * 13) ^ 0x5bd1_e995).to_be_bytes());
                }
                Association::listen(cfg.clone(), local.clone(), f.dport, secret, seed)
            });
            me.ends.push(End { flow: f, role, st: states[fi].clone(), assoc, local, cfg, written: 0, read: 0, shut: false, buf: Vec::new() });
        }
        me
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// One received IPv4 packet: true when it was SCTP (taken, or dropped
    /// as malformed or for no association).
    pub fn input(&mut self, now: Instant, ip: &[u8], c: &mut HostCounters) -> bool {
        if ip.len() < 20 || ip[0] >> 4 != 4 || ip[9] != PROTO {
            return false;
        }
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        if ihl < 20 || total < ihl || total > ip.len() {
            c.bad_checksum += 1;
            return true;
        }
        let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
        let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
        // A bad CRC32c or malformed chunks: discarded (RFC 9260 6.8).
        let Ok(p) = SctpPacket::decode(&ip[ihl..total]) else {
            c.bad_checksum += 1;
            return true;
        };
        let port = p.header.dst_port;
        match self.ends.iter_mut().find(|e| e.assoc.is_some() && if e.role == Role::Server { e.flow.dport == port } else { e.flow.sport == port }) {
            Some(e) => {
                if let Some(a) = e.assoc.as_mut() {
                    a.on_packet(now, IpAddr::V4(src), IpAddr::V4(dst), &p);
                }
            }
            None => c.unplaced_segments += 1,
        }
        true
    }

    /// Timers, applications and output of every end.
    pub fn poll(&mut self, now: Instant, t_ns: u64, clk: &Clock, tun: &Tun, c: &mut HostCounters) {
        for e in &mut self.ends {
            if e.role == Role::Client && e.assoc.is_none() && t_ns >= e.flow.start_ns && t_ns < e.flow.stop_ns {
                let seed = crate::sys::realtime_ns() ^ u64::from(e.flow.sport);
                e.assoc = Some(Association::connect(e.cfg.clone(), e.local.clone(), e.flow.sport, vec![IpAddr::V4(e.flow.dst)], e.flow.dport, seed, now));
            }
            let Some(a) = e.assoc.as_mut() else { continue };
            if a.poll_timeout().is_some_and(|t| t <= now) {
                a.on_timeout(now);
            }
            if a.is_established() && e.role == Role::Client {
                e.st.connected.store(true, Ordering::Relaxed);
            }
            match e.role {
                Role::Client => {
                    let limit = match mplab_backend::apps::bulk_transfer(&e.flow.app) {
                        Some(bytes) => bytes.unwrap_or(u64::MAX),
                        None => 0,
                    };
                    let sending = t_ns < e.flow.stop_ns.min(clk.end_ns);
                    while sending && a.is_established() && e.written < limit {
                        let n = (limit - e.written).min(a.send_space()).min(64 * 1024) as usize;
                        if n == 0 {
                            break;
                        }
                        e.buf.resize(n, 0);
                        fill_pattern(e.written, &mut e.buf);
                        let took = a.send(now, &e.buf);
                        e.written += took as u64;
                        if took < n {
                            break;
                        }
                    }
                    if !e.shut && a.is_established() && (e.written >= limit || !sending) {
                        a.shutdown(now);
                        e.shut = true;
                    }
                }
                Role::Server => {
                    while a.readable() > 0 {
                        e.buf.resize(64 * 1024, 0);
                        let n = a.recv(now, &mut e.buf);
                        if n == 0 {
                            break;
                        }
                        if let Some(m) = pattern_mismatch(e.read, &e.buf[..n]) {
                            if let Ok(mut g) = e.st.mismatch.lock() {
                                g.get_or_insert(m);
                            }
                        }
                        e.read += n as u64;
                        e.st.connected.store(true, Ordering::Relaxed);
                        if t_ns <= clk.end_ns {
                            e.st.delivered.store(e.read, Ordering::Relaxed);
                        }
                        if let Some(Some(b)) = mplab_backend::apps::bulk_transfer(&e.flow.app) {
                            if e.read >= b && e.st.completed_ns.load(Ordering::Relaxed) == 0 {
                                e.st.completed_ns.store(t_ns.saturating_sub(e.flow.start_ns).max(1), Ordering::Relaxed);
                            }
                        }
                    }
                }
            }
            while let Some(t) = a.poll_transmit(now) {
                let Ok(bytes) = t.packet.encode() else { continue };
                self.out.clear();
                if mplab_wire::packet::build_ipv4(v4(t.src), v4(t.dst), 64, 0, PROTO, &bytes, &mut self.out).is_ok() && tun.send(&self.out).unwrap_or(false) {
                    c.tx_packets += 1;
                } else {
                    c.tx_dropped += 1;
                }
            }
        }
    }

    /// Time until the earliest association timer or client start (ns).
    pub fn wait_ns(&self, now: Instant, t_ns: u64) -> u64 {
        let mut next = u64::MAX;
        for e in &self.ends {
            match &e.assoc {
                Some(a) => {
                    if let Some(t) = a.poll_timeout() {
                        next = next.min(t.0.saturating_sub(now.0));
                    }
                }
                None if e.role == Role::Client && t_ns < e.flow.start_ns => next = next.min(e.flow.start_ns - t_ns),
                None => {}
            }
        }
        next
    }
}
