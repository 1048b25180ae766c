//! The hybrid-access tunnel (`app = "tunnel"`) on the kernel backend: the
//! gateway program of the CPE and of the HAG, as OpenVPN over MPTCP works.
//! Each gateway's namespace gets a TUN device; a policy rule sends every
//! packet arriving on a LAN-side interface (any interface not on a link to
//! the other gateway) into it, instead of forwarding it. The program reads
//! each packet from the TUN, writes it as a length-prefixed frame
//! (`mplab_wire::tunnel`) into the flow's kernel MPTCP (or TCP) socket, and
//! the far gateway's program decodes the frames and writes the packets to
//! its TUN, from where its kernel forwards them on.
//!
//! The program reads the TUN only while the socket takes its frames whole,
//! so a packet waits in the TUN's queue (500 packets) while the send buffer
//! is full, and is dropped there when that queue is full: the same ingress
//! as the simulator's tunnel (crates/sim/src/world/tunnel.rs). Every loop
//! ends at the scenario's duration or on the abort flag.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use mplab_backend::results::TunnelDirection;
use mplab_scenario::network::{App, Flow, Network};
use mplab_wire::tunnel::{encode_frame, FrameDecoder};

use crate::apps::{Clock, FlowState};
use crate::sys;
use crate::userspace::tun::Tun;

/// The TUN device of a gateway's `k`-th tunnel, and the table its rules
/// point at. The rules sit before the main table's (32766) and after
/// `local` (0), so packets for the gateway itself are still delivered to
/// it, and in flow order: a packet goes into the first tunnel whose class
/// it belongs to, as on the simulator.
fn tun_name(k: usize) -> String {
    format!("gwtun{k}")
}
const TUN_TABLE: usize = 210;
const RULE_PRIORITY: usize = 40;

/// A gateway before the run: its TUN, and its socket (the CPE's unconnected
/// client socket, the HAG's listener).
pub struct Gateway {
    pub(crate) tun: Tun,
    /// The connection's socket: TCP or MPTCP, or for MPQUIC a UDP socket
    /// bound to every address of the gateway.
    pub(crate) sock: OwnedFd,
    /// 0: the CPE (`from`), 1: the HAG.
    pub(crate) end: usize,
    pub(crate) mtu: usize,
    ns: String,
    /// Datagram mode: one UDP socket per access link.
    udp: Vec<OwnedFd>,
    /// `sock` is connected already: the program's end of a connection on
    /// mplab's stack (crates/emu/src/userspace/bridge.rs).
    bridged: bool,
}

/// Datagram mode's UDP port (the simulator's): plus the tunnel's index.
const DATAGRAM_PORT: u16 = 1194;
/// Datagram mode: the sequence number ahead of each packet.
const DATAGRAM_HEADER: usize = 8;
/// Datagram mode: sequence numbers remembered to drop second copies.
const SEEN: usize = 1 << 16;

/// How long a gateway's kernel MPTCP connection must have gone without a
/// DATA_ACK for the bytes it holds, up to the end of the run and while its
/// subflows still got TCP acknowledgements, for the run to say the kernel
/// stopped delivering. The far gateway reads whatever arrives at once, so
/// a connection-level acknowledgement that does not come for this long is
/// the far kernel's doing, not the application's: 20 round trips of the
/// slowest bundled access link (100 ms).
const STALL_AFTER_NS: u64 = 2_000_000_000;
/// How often the detector samples the socket.
const STALL_SAMPLE_NS: u64 = 100_000_000;

/// Watches a kernel MPTCP socket for Linux's receive stall: the subflows
/// keep delivering at the TCP level but the connection's DATA_ACK stops
/// for good while bytes wait (seen on Linux 6.18: the receiver holds the
/// data after a hole in its out-of-order queue and keeps its window
/// closed, docs/kernel-backend.md). A pause that ends before the run does
/// (a failover's reinjection) is not one.
struct StallWatch {
    next_ns: u64,
    /// Bytes DATA_ACKed so far: written less what the socket still holds.
    acked: u64,
    queued: u64,
    /// Since when `acked` has not moved with bytes waiting, and the
    /// subflows' TCP-acknowledged bytes then and now.
    since: Option<(u64, u64)>,
    tcp_acked: u64,
}

impl StallWatch {
    fn new() -> Self {
        StallWatch { next_ns: 0, acked: 0, queued: 0, since: None, tcp_acked: 0 }
    }

    /// Samples the socket when due; `written`: bytes the gateway has
    /// written into it.
    fn sample(&mut self, fd: RawFd, written: u64, now_ns: u64) {
        if now_ns < self.next_ns {
            return;
        }
        self.next_ns = now_ns + STALL_SAMPLE_NS;
        let Some((_, queued)) = crate::probes::send_buffer(fd) else { return };
        self.tcp_acked = crate::probes::mptcp_full_info(fd).map_or(0, |subs| subs.iter().map(|s| s.info.bytes_acked).sum());
        let acked = written.saturating_sub(queued);
        self.queued = queued;
        if queued == 0 || acked != self.acked {
            self.acked = acked;
            self.since = None;
        } else {
            self.since.get_or_insert((now_ns, self.tcp_acked));
        }
    }

    /// At the end of the run: the stall's description when the connection
    /// has been stuck for at least [`STALL_AFTER_NS`] up to now while its
    /// subflows still got TCP acknowledgements.
    fn stalled(&self, now_ns: u64) -> Option<String> {
        let (since, tcp_then) = self.since?;
        (now_ns.saturating_sub(since) >= STALL_AFTER_NS && self.tcp_acked > tcp_then).then(|| {
            format!(
                "the kernel's MPTCP connection stopped delivering at {:.2} s: no DATA_ACK from then to the end ({:.1} s) with {} bytes queued while its subflows' TCP acknowledged {} bytes (the far kernel kept the data and its receive window closed; Linux receive stall, docs/kernel-backend.md)",
                since as f64 / 1e9,
                (now_ns - since) as f64 / 1e9,
                self.queued,
                self.tcp_acked - tcp_then
            )
        })
    }
}

/// Sets up the gateway `end` of tunnel flow `f` in namespace `ns`; with
/// `bridge`, the flow's connection is that socket (mplab's stack in the
/// gateway) instead of a kernel socket.
pub fn prepare(net: &Network, f: &Flow, end: usize, ns: &str, bridge: Option<OwnedFd>) -> Result<Gateway, String> {
    let App::Tunnel { mtu, class, mode } = f.app else { return Err(format!("flow {} is not a tunnel", f.name)) };
    let datagram = mode == mplab_scenario::network::TunnelMode::Datagram;
    let (node, peer) = if end == 0 { (f.from, f.to) } else { (f.to, f.from) };
    // This tunnel's rank among the tunnels this gateway ends.
    let k = net.flows.iter().filter(|g| matches!(g.app, App::Tunnel { .. }) && (g.from == node || g.to == node)).position(|g| g.id == f.id).unwrap_or(0);
    let name = tun_name(k);
    let lan: Vec<String> = net.nodes[node].interfaces.iter().filter(|i| i.peer != peer).map(|i| i.name.clone()).collect();
    let n2 = name.clone();
    let tun = sys::in_netns(ns, move || {
        let t = Tun::create_plain(&n2)?;
        // Packets come out of the TUN with the far side's source address.
        sys::sysctl_write(&format!("net.ipv4.conf.{n2}.rp_filter"), "0")?;
        sys::sysctl_write("net.ipv4.ip_forward", "1")?;
        Ok(t)
    })
    .map_err(|e| format!("TUN on {}: {e}", net.nodes[node].name))?;
    let (table, prio) = (TUN_TABLE + k, RULE_PRIORITY + k);
    let mut cmds = vec![format!("link set {name} up mtu {mtu} txqueuelen 500"), format!("route replace default dev {name} table {table}")];
    let proto = match class.proto {
        Some(6) => " ipproto tcp",
        Some(17) => " ipproto udp",
        _ => "",
    };
    for i in &lan {
        match class.ports {
            None => cmds.push(format!("rule add priority {prio} iif {i}{proto} table {table}")),
            // The class's port on either side: the server's port is the
            // destination one way and the source the other.
            Some((a, b)) => {
                for dir in ["dport", "sport"] {
                    cmds.push(format!("rule add priority {prio} iif {i}{proto} {dir} {a}-{b} table {table}"));
                }
            }
        }
    }
    crate::topo::ip_batch(Some(ns), &cmds)?;
    // A tunnel narrower than the LAN: the MSS of a TCP SYN going into it
    // is clamped to fit, as on the simulator (OpenVPN's `mssfix`).
    if (mtu as usize) < mplab_scenario::network::DEFAULT_MTU as usize {
        sys::run(&["ip", "netns", "exec", ns, "iptables", "-w", "-t", "mangle", "-A", "FORWARD", "-o", &name, "-p", "tcp", "--tcp-flags", "SYN,RST", "SYN", "-j", "TCPMSS", "--clamp-mss-to-pmtu"])?;
    }
    let bridged = bridge.is_some();
    let mpquic = f.transport == mplab_scenario::plugins::transports::Transport::MPQUIC;
    let sock = match bridge {
        Some(s) => s,
        // Every path's datagrams name their source: the socket is bound to
        // every address, on the flow's port at each end.
        None if mpquic => {
            let port = if end == 0 { f.sport } else { f.dport };
            crate::datagrams::socket(ns, (std::net::Ipv4Addr::UNSPECIFIED, port), None).map_err(|e| format!("tunnel socket on {}: {e}", net.nodes[node].name))?
        }
        None => {
            let s = if end == 0 { crate::apps::client_socket(ns, f) } else { crate::apps::listen(ns, f) }.map_err(|e| format!("tunnel socket on {}: {e}", net.nodes[node].name))?;
            nodelay(s.as_raw_fd()).map_err(|e| format!("tunnel socket on {}: {e}", net.nodes[node].name))?;
            s
        }
    };
    // Datagram mode: a UDP socket on each access address, towards the
    // other gateway's address on the same link; the port is the
    // simulator's, 1194 plus the tunnel's index.
    let mut udp = Vec::new();
    if datagram {
        let t = net.flows.iter().filter(|g| matches!(g.app, App::Tunnel { .. })).position(|g| g.id == f.id).unwrap_or(0);
        let port = DATAGRAM_PORT + t as u16;
        for i in net.nodes[node].interfaces.iter().filter(|i| i.peer == peer) {
            let l = &net.links[i.link];
            let far = if l.a.node == node { l.b.addr } else { l.a.addr };
            let s = crate::datagrams::socket(ns, (i.addr, port), Some((far, port))).map_err(|e| format!("tunnel datagram socket on {}: {e}", net.nodes[node].name))?;
            udp.push(s);
        }
    }
    Ok(Gateway { tun, sock, end, mtu: mtu as usize, ns: ns.to_string(), udp, bridged })
}

impl Gateway {
    /// 0: the CPE, 1: the HAG.
    pub fn end(&self) -> usize {
        self.end
    }
}

/// What one gateway counted: its ingress direction, and the far side's
/// datagrams it took out.
#[derive(Default)]
pub(crate) struct Counts {
    pub(crate) ingress: TunnelDirection,
    pub(crate) egress_out: u64,
    /// Datagram mode: second copies dropped at the egress (over MPQUIC:
    /// DATAGRAM frames too short to hold a packet).
    pub(crate) duplicates: u64,
}

/// Runs the gateway until the end of the scenario; adds its counts to
/// the flow's tunnel summary. `net` and `seed` make an MPQUIC tunnel's
/// connection end.
pub fn run(net: Arc<Network>, f: Flow, gw: Gateway, seed: u64, st: Arc<FlowState>, clk: Clock) {
    if f.transport == mplab_scenario::plugins::transports::Transport::MPQUIC {
        let mut c = crate::gateway_mpquic::carry(&net, &f, &gw, seed, &st, &clk);
        c.ingress.queue_drops = tun_drops(&gw.ns, &gw.tun.name);
        record(&st, gw.end, gw.mtu, &c);
        return;
    }
    let Some(conn) = open(&f, &gw, &st, &clk) else { return };
    let (c, broken) = if gw.udp.is_empty() { carry_stream(&gw, conn.as_raw_fd(), &st, &clk) } else { (carry_datagrams(&gw, &clk), None) };
    if let Some(why) = broken {
        if let Ok(mut v) = st.errors.lock() {
            v.push(why.to_string());
        }
    }
    let mut c = c;
    c.ingress.queue_drops = tun_drops(&gw.ns, &gw.tun.name);
    record(&st, gw.end, gw.mtu, &c);
}

/// Datagram mode: each packet from the TUN goes out on every access link
/// behind a sequence number; of what arrives, the first copy of each goes
/// to the TUN.
fn carry_datagrams(gw: &Gateway, clk: &Clock) -> Counts {
    let mut c = Counts::default();
    let mut seq = 0u64;
    let mut seen: std::collections::HashSet<u64> = Default::default();
    let mut order: std::collections::VecDeque<u64> = Default::default();
    let mut buf = vec![0u8; 65_536];
    while !clk.over() && clk.now_ns() < clk.end_ns {
        let mut p: Vec<libc::pollfd> = std::iter::once(gw.tun.raw_fd()).chain(gw.udp.iter().map(|s| s.as_raw_fd())).map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
        let _ = sys::poll_in(&mut p, clk.poll_ns.min(10_000_000));
        for _ in 0..256 {
            let n = match gw.tun.recv(&mut buf[DATAGRAM_HEADER..]) {
                Ok(Some(n)) => n,
                _ => break,
            };
            if n > gw.mtu {
                c.ingress.oversize += 1;
                continue;
            }
            buf[..DATAGRAM_HEADER].copy_from_slice(&seq.to_be_bytes());
            seq += 1;
            c.ingress.datagrams_in += 1;
            for s in &gw.udp {
                // SAFETY: valid buffer; a connected socket.
                let r = unsafe { libc::send(s.as_raw_fd(), buf.as_ptr() as *const libc::c_void, DATAGRAM_HEADER + n, libc::MSG_DONTWAIT) };
                if r > 0 {
                    // On the wire: the packet, the sequence number, UDP and IP.
                    c.ingress.frame_bytes += r as u64 + 28;
                }
            }
        }
        for s in &gw.udp {
            for _ in 0..256 {
                // SAFETY: valid buffer.
                let r = unsafe { libc::recv(s.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT) };
                if r < DATAGRAM_HEADER as isize {
                    break;
                }
                let n = u64::from_be_bytes(buf[..DATAGRAM_HEADER].try_into().unwrap_or_default());
                if !seen.insert(n) {
                    c.duplicates += 1;
                    continue;
                }
                order.push_back(n);
                if order.len() > SEEN {
                    if let Some(old) = order.pop_front() {
                        seen.remove(&old);
                    }
                }
                if gw.tun.send(&buf[DATAGRAM_HEADER..r as usize]).unwrap_or(false) {
                    c.egress_out += 1;
                }
            }
        }
    }
    c
}

/// Stream mode: frames in the connection's byte stream.
fn carry_stream(gw: &Gateway, fd: RawFd, st: &FlowState, clk: &Clock) -> (Counts, Option<&'static str>) {
    let mut c = Counts::default();
    let mut dec = FrameDecoder::new(gw.mtu);
    let mut pkt = vec![0u8; 65_536];
    let mut rx = vec![0u8; 65_536];
    // A frame the socket took in part: the rest, before anything else.
    let mut out: Vec<u8> = Vec::new();
    let mut sent = 0usize;
    let mut broken: Option<&'static str> = None;
    let mut watch = StallWatch::new();
    let mut written = 0u64;
    while broken.is_none() && !clk.over() && clk.now_ns() < clk.end_ns {
        let mut p = [libc::pollfd { fd, events: libc::POLLIN | if sent < out.len() { libc::POLLOUT } else { 0 }, revents: 0 }, libc::pollfd { fd: gw.tun.raw_fd(), events: if sent < out.len() { 0 } else { libc::POLLIN }, revents: 0 }];
        let _ = sys::poll_in(&mut p, clk.poll_ns.min(10_000_000));
        // Ingress: from the TUN into the stream, while the socket takes it.
        for _ in 0..256 {
            if sent < out.len() {
                match send(fd, &out[sent..]) {
                    Some(n) => {
                        sent += n;
                        written += n as u64;
                    }
                    None => {
                        broken = Some("the tunnel's connection broke (send)");
                        break;
                    }
                }
                if sent < out.len() {
                    break;
                }
            }
            out.clear();
            sent = 0;
            let n = match gw.tun.recv(&mut pkt) {
                Ok(Some(n)) => n,
                _ => break,
            };
            if encode_frame(&pkt[..n], gw.mtu, &mut out).is_err() {
                c.ingress.oversize += 1;
                continue;
            }
            c.ingress.datagrams_in += 1;
            c.ingress.frame_bytes += out.len() as u64;
        }
        if !gw.bridged {
            watch.sample(fd, written, clk.now_ns());
        }
        // Egress: whole frames out of the stream, onto the TUN.
        for _ in 0..64 {
            // SAFETY: valid buffer.
            let r = unsafe { libc::recv(fd, rx.as_mut_ptr() as *mut libc::c_void, rx.len(), libc::MSG_DONTWAIT) };
            if r == 0 {
                broken = Some("the other gateway closed the tunnel");
                break;
            }
            if r < 0 {
                break;
            }
            if clk.now_ns() <= clk.end_ns {
                st.delivered.fetch_add(r as u64, Ordering::Relaxed);
            }
            dec.push(&rx[..r as usize]);
            while let Some(d) = dec.next_frame() {
                // A frame the decoder refused is counted by it; the stream
                // stays in step.
                if let Ok(d) = d {
                    if gw.tun.send(&d).unwrap_or(false) {
                        c.egress_out += 1;
                    }
                }
            }
        }
    }
    if let Some(why) = watch.stalled(clk.now_ns()) {
        st.errors.lock().map(|mut v| v.push(why)).ok();
    }
    (c, broken)
}

/// The tunnel's connection: the CPE connects at the flow's start, the HAG
/// accepts it.
fn open(f: &Flow, gw: &Gateway, st: &FlowState, clk: &Clock) -> Option<Arc<OwnedFd>> {
    let fd = gw.sock.as_raw_fd();
    if gw.bridged {
        // The host loop connects (or accepts) at the flow's start; frames
        // written earlier wait in the socket pair.
        if !clk.sleep_until(if gw.end == 0 { f.start_ns } else { 0 }) {
            return None;
        }
        // SAFETY: dup of a valid fd, owned by the new OwnedFd.
        return Some(Arc::new(unsafe { OwnedFd::from_raw_fd(libc::dup(fd)) }));
    }
    if gw.end == 0 {
        if !clk.sleep_until(f.start_ns) {
            return None;
        }
        let sa = libc::sockaddr_in { sin_family: libc::AF_INET as u16, sin_port: f.dport.to_be(), sin_addr: libc::in_addr { s_addr: u32::from(f.dst).to_be() }, sin_zero: [0; 8] };
        // Blocking connect bounded by the socket's SO_SNDTIMEO (100 ms),
        // retried until the flow's stop.
        loop {
            // SAFETY: valid sockaddr.
            let r = unsafe { libc::connect(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as u32) };
            let e = std::io::Error::last_os_error();
            if r == 0 || e.raw_os_error() == Some(libc::EISCONN) {
                break;
            }
            if clk.over() || clk.now_ns() >= f.stop_ns {
                st.errors.lock().map(|mut v| v.push(format!("tunnel connect {}:{}: {e}", f.dst, f.dport))).ok();
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // SAFETY: dup of a valid fd, owned by the new OwnedFd.
        let c = Arc::new(unsafe { OwnedFd::from_raw_fd(libc::dup(fd)) });
        let _ = st.client.set(c.clone());
        st.connected.store(true, Ordering::Relaxed);
        Some(c)
    } else {
        loop {
            if clk.over() {
                return None;
            }
            let mut p = [libc::pollfd { fd, events: libc::POLLIN, revents: 0 }];
            if sys::poll_in(&mut p, 50_000_000).unwrap_or(0) == 0 {
                continue;
            }
            // SAFETY: accept on a listening socket with a connection ready.
            let c = unsafe { libc::accept4(fd, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC) };
            if c >= 0 {
                // SAFETY: fresh fd.
                let c = Arc::new(unsafe { OwnedFd::from_raw_fd(c) });
                let _ = nodelay(c.as_raw_fd());
                let _ = st.server.set(c.clone());
                return Some(c);
            }
        }
    }
}

/// A frame goes out at once: a tunnel of calls and games must not hold
/// small frames back for an acknowledgement (Nagle), and mplab's stack,
/// the simulator's gateway, never does.
fn nodelay(fd: RawFd) -> std::io::Result<()> {
    sys::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1i32, "TCP_NODELAY")
}

/// Writes what the socket takes now; None on a broken connection.
fn send(fd: RawFd, b: &[u8]) -> Option<usize> {
    // SAFETY: valid buffer.
    let r = unsafe { libc::send(fd, b.as_ptr() as *const libc::c_void, b.len(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
    if r >= 0 {
        return Some(r as usize);
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EINTR) => Some(0),
        _ => None,
    }
}

/// Packets the TUN's queue dropped (it was full while the socket could
/// not take them).
fn tun_drops(ns: &str, tun: &str) -> u64 {
    let path = format!("/sys/class/net/{tun}/statistics/tx_dropped");
    sys::in_netns(ns, move || Ok(std::fs::read_to_string(&path).unwrap_or_default().trim().parse().unwrap_or(0))).unwrap_or(0)
}

/// Adds a gateway's counts to the flow's summary: its ingress is the
/// direction it writes (the CPE's upstream), its egress the other.
fn record(st: &FlowState, end: usize, mtu: usize, c: &Counts) {
    let Ok(mut t) = st.tunnel.lock() else { return };
    t.mtu = mtu as u32;
    let t = &mut *t;
    let (mine, far) = if end == 0 { (&mut t.upstream, &mut t.downstream) } else { (&mut t.downstream, &mut t.upstream) };
    mine.datagrams_in += c.ingress.datagrams_in;
    mine.oversize += c.ingress.oversize;
    mine.queue_drops += c.ingress.queue_drops;
    mine.frame_bytes += c.ingress.frame_bytes;
    mine.quic_datagrams += c.ingress.quic_datagrams;
    mine.quic_datagram_bytes += c.ingress.quic_datagram_bytes;
    far.datagrams_out += c.egress_out;
    far.duplicates += c.duplicates;
}
