//! One scenario host on mplab's MPTCP stack: a single thread owns the
//! host's TUN, every connection of the flows that end on this host, and
//! their applications. The loop reads packets in batches, verifies IP and
//! TCP checksums (bad packets are dropped), demultiplexes by 4-tuple
//! (joins by token, SYNs to a flow's port start its server end, anything
//! else is answered with a RST), runs the applications, sends what the
//! connections have to send and sleeps in `poll` until the TUN is readable
//! or the next timer (connection timers, application deadlines) is due.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::ops::Range;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant as Wall;

use mplab_proto::mptcp::{Connection, MptcpConfig, PayloadSource};
use mplab_proto::tcp::TcpConfig;
use mplab_proto::Instant;
use mplab_scenario::network::{App, Flow, Network, TransportKind};
use mplab_backend::apps::{pattern_mismatch, App as BackendApp, Pattern, StreamSocket};
use mplab_wire::packet::{build_ip_tcp, tcp_checksum_ok, TcpPacket};
use mplab_wire::{MpJoin, MptcpOption, TcpHeader};
use sha2::{Digest, Sha256};

use super::agenda::Agenda;
use super::bridge::{Bridge, Exchange};
use super::conn::Conn;
use super::gso::{autosize, Batch, Writer};
use super::tun::Tun;
use crate::apps::{Clock, FlowState};
use crate::probes::TcpInfo;

/// Receive ring: at most a power of two above any receive buffer we
/// advertise; it starts at [`MIN_RING`] and doubles as data arrives further
/// ahead, so an idle connection holds a page, not megabytes.
const RING: usize = 16 << 20;
const MIN_RING: usize = 4096;
/// Most packets read per round before the loop runs the apps and sends:
/// in practice everything queued. The peer's ACKs must not wait in the
/// TUN queue behind our sending (an ACK held there inflates the RTT the
/// sender sees, and a window-limited sender slows down by as much).
const BATCH: usize = 2048;
/// Most segments one connection sends per round: the loop then reads
/// the ACKs that came meanwhile before sending more (no sleep in between).
const OUT_BATCH: usize = 128;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    Client,
    Server,
}

/// What a host's loop counts (for meta.json and the docs).
#[derive(Default, Debug, Clone)]
pub struct HostCounters {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub bad_checksum: u64,
    pub not_tcp: u64,
    pub rsts_sent: u64,
    pub tx_dropped: u64,
    pub unplaced_segments: u64,
    pub wakeups: u64,
    /// The longest pass of the packet loop (input, timers, output, probes;
    /// not the wait for packets), and the passes longer than 10 ms: a
    /// stalled loop shows here.
    pub max_pass_ns: u64,
    pub passes_over_10ms: u64,
    /// The most CPU time one pass took: a pass much longer in wall time
    /// than in CPU time waited for a core (a loaded machine), not for work.
    pub max_pass_cpu_ns: u64,
    /// Connections accepted as a server (a balancer's backend counts its own).
    pub connections: u64,
    /// MP_JOIN SYNs answered, and refused (unknown token, or the
    /// connection said no: a join to a VIP behind the C flag).
    pub joins_accepted: u64,
    pub joins_refused: u64,
    /// Per flow end: SHA-256 of the bytes the application read, and how many.
    pub digests: Vec<(String, String, u64, String)>,
    /// Bytes a bridged connection asked for that its bridge no longer
    /// kept (sent as zeros: must stay 0).
    pub bridge_bytes_gone: u64,
    /// Converter carriers made at run time (dialled or accepted).
    pub carriers: u64,
}

/// Receive side of one flow end: a ring the driver fills at each
/// segment's data offset, checked against the pattern as the application
/// reads it, and hashed. The first copy of a byte wins, as in a kernel's
/// receive queue: a later segment placed over bytes already held (a
/// retransmission, or an attacker's overlapping mapping) does not change
/// them.
struct RxRing {
    buf: Vec<u8>,
    /// One bit per ring byte: held since it was last read.
    held: Vec<u64>,
    read: u64,
    hash: Sha256,
}

impl RxRing {
    /// The ring's memory comes with the first bytes, grows with the
    /// distance between what was read and what arrives, and goes when the
    /// connection is over ([`RxRing::release`]): a host with many idle or
    /// finished connections keeps little of it.
    fn new() -> RxRing {
        RxRing { buf: Vec::new(), held: Vec::new(), read: 0, hash: Sha256::new() }
    }
    /// Room for bytes up to offset `end` (exclusive), within [`RING`] of
    /// what was read.
    fn ensure(&mut self, end: u64) {
        let need = (end.saturating_sub(self.read) as usize).clamp(MIN_RING, RING).next_power_of_two();
        if need <= self.buf.len() {
            return;
        }
        let cap = need.max(2 * self.buf.len()).min(RING);
        let mut buf = vec![0u8; cap];
        let mut held = vec![0u64; cap / 64];
        // The held bytes move to their places in the larger ring.
        let old = self.buf.len();
        for off in self.read..self.read + old as u64 {
            let s = (off % old as u64) as usize;
            if self.held[s / 64] & (1u64 << (s % 64)) != 0 {
                let d = (off % cap as u64) as usize;
                buf[d] = self.buf[s];
                held[d / 64] |= 1u64 << (d % 64);
            }
        }
        self.buf = buf;
        self.held = held;
    }
    /// Gives the ring's memory back (everything placed was read).
    fn release(&mut self) {
        self.buf = Vec::new();
        self.held = Vec::new();
    }
    fn put(&mut self, r: &Range<u64>, payload: &[u8]) {
        let end = r.end.min(r.start + payload.len() as u64);
        if end <= self.read {
            return;
        }
        self.ensure(end.min(self.read + RING as u64));
        let cap = self.buf.len();
        let mask = (cap - 1) as u64;
        for (i, &b) in payload.iter().enumerate().take((r.end - r.start) as usize) {
            let off = r.start + i as u64;
            if off < self.read || off >= self.read + cap as u64 {
                continue;
            }
            let s = (off & mask) as usize;
            let (w, bit) = (s / 64, 1u64 << (s % 64));
            if self.held[w] & bit == 0 {
                self.held[w] |= bit;
                self.buf[s] = b;
            }
        }
    }
    /// Hashes `r` (the next bytes in order) and appends them to `out`: a
    /// bridged connection's real bytes, not the pattern.
    fn take_into(&mut self, r: Range<u64>, out: &mut Vec<u8>) {
        self.ensure(r.end);
        let mask = (self.buf.len() - 1) as u64;
        for off in r.clone() {
            let s = (off & mask) as usize;
            self.held[s / 64] &= !(1u64 << (s % 64));
            out.push(self.buf[s]);
        }
        self.hash.update(&out[out.len() - (r.end - r.start) as usize..]);
        self.read = r.end;
    }
    /// Checks and hashes `r` (the next bytes in order); the first mismatch.
    fn take(&mut self, r: Range<u64>) -> Option<String> {
        self.ensure(r.end);
        let cap = self.buf.len();
        let mask = (cap - 1) as u64;
        let mut bad = None;
        let mut off = r.start;
        while off < r.end {
            let s = (off & mask) as usize;
            let n = ((r.end - off) as usize).min(cap - s);
            for k in s..s + n {
                self.held[k / 64] &= !(1u64 << (k % 64));
            }
            let chunk = &self.buf[s..s + n];
            self.hash.update(chunk);
            if bad.is_none() {
                bad = pattern_mismatch(off, chunk);
            }
            off += n as u64;
        }
        self.read = r.end;
        bad
    }
}

/// One flow end on this host.
struct End {
    flow: Flow,
    role: Role,
    st: Arc<FlowState>,
    cfg: MptcpConfig,
    /// Some: a plain TCP flow (`transport = "tcp"`), run on proto's TCP.
    tcp_cfg: Option<TcpConfig>,
    conn: Option<Conn>,
    rx: RxRing,
    /// The application (the simulator's state machine, on run time).
    app: BackendApp,
    /// `app.on_connected` ran.
    started: bool,
    /// Aborted by a control command: the application stops.
    aborted: bool,
    /// The flow's cwnd and srtt are probed: its subflows are published for
    /// the prober every 20 ms, the others' at a quarter of the probe
    /// interval (thousands of connections would otherwise spend the loop
    /// formatting addresses).
    detailed: bool,
    published_ns: u64,
    /// A gateway program's connection: bytes from and to its socket
    /// instead of the application ([`super::bridge`]).
    bridge: Option<Bridge>,
    /// A converter's carriers: this end only stands for the flow; each
    /// carrier dialled or accepted becomes an end of its own.
    exchange: Option<Arc<Exchange>>,
}

pub struct HostSpec {
    pub node: usize,
    /// (flow index, role) of every flow end on this host.
    pub ends: Vec<(usize, Role)>,
    /// Ends bridged to a gateway program (the loop's side of the pair).
    pub bridged: Vec<(usize, Role, OwnedFd)>,
    /// Ends whose carriers a converter program dials or accepts.
    pub exchanged: Vec<(usize, Role, Arc<Exchange>)>,
}

/// Runs the host until the clock's hard deadline or an abort.
pub fn run(net: &Network, spec: HostSpec, tun: Tun, states: Vec<Arc<FlowState>>, clk: Clock, counters: Arc<Mutex<HostCounters>>) {
    let epoch = Wall::now();
    let now_i = || Instant(epoch.elapsed().as_nanos() as u64);
    let mut sctp = super::sctp::SctpEnds::new(net, spec.node, &spec.ends, &states);
    let mut spec = spec;
    let mut ends: Vec<End> = spec.ends.iter().filter(|(fi, _)| !net.flows[*fi].transport.is_sctp()).map(|&(fi, role)| new_end(net, spec.node, &net.flows[fi], role, &states[fi], &clk)).collect();
    for (fi, role, fd) in spec.bridged.drain(..) {
        if let Some(e) = ends.iter_mut().find(|e| e.flow.id == fi && e.role == role) {
            e.bridge = Some(Bridge::new(fd));
        }
    }
    for (fi, role, ex) in spec.exchanged.drain(..) {
        if let Some(e) = ends.iter_mut().find(|e| e.flow.id == fi && e.role == role) {
            e.exchange = Some(ex);
        }
    }
    // Ends on gateway programs' sockets, and the converters' doorbells:
    // polled with the TUN.
    let gateway_ends = ends.iter().any(|e| e.bridge.is_some() || e.exchange.is_some());
    // Source ports of the carriers this host dials.
    let mut next_port: u16 = 50_000;
    let mut tuples: HashMap<(SocketAddr, SocketAddr), usize> = HashMap::new();
    let mut tokens: HashMap<u32, usize> = HashMap::new();
    // Server ends by listening port, for a SYN to find its end at once.
    let mut listening: HashMap<u16, Vec<usize>> = HashMap::new();
    for (e, end) in ends.iter().enumerate().filter(|(_, x)| x.role == Role::Server) {
        listening.entry(end.flow.dport).or_default().push(e);
    }
    let mut agenda = Agenda::new(ends.len());
    // Ends whose state changed since the last probe (only they publish).
    let mut touched = vec![true; ends.len()];
    let slow_gap = (net.probes.interval_ns / 4).clamp(20_000_000, 1_000_000_000);
    let mut c = HostCounters::default();
    let mut rbuf = vec![0u8; 65536];
    let mut obuf: Vec<u8> = Vec::with_capacity(2048);
    let mut wr = Writer::default();
    let seed0 = crate::sys::realtime_ns() ^ ((spec.node as u64) << 48);
    let mut last_probe = 0u64;
    // MPLAB_US_DEBUG=1: the connections' internals every 0.5 s on stderr.
    let debug = std::env::var_os("MPLAB_US_DEBUG").is_some();
    let ctl = tun.ns.as_deref().map(super::control_path);
    let host_name = net.nodes[spec.node].name.clone();
    // Nothing is sent before time zero (see `Clock::sleep_until`).
    let started = clk.wait_start();
    loop {
        if !started || clk.abort.load(Ordering::Relaxed) || clk.now_ns() >= clk.hard_ns {
            break;
        }
        let pass_start = std::time::Instant::now();
        let pass_cpu = crate::sys::thread_cpu_ns();
        // ---- input, one batch
        let now = now_i();
        for _ in 0..BATCH {
            let n = match tun.recv(&mut rbuf) {
                Ok(Some(n)) => n,
                Ok(None) => break,
                Err(_) => break,
            };
            c.rx_packets += 1;
            if !sctp.is_empty() && sctp.input(now, &rbuf[..n], &mut c) {
                continue;
            }
            let Ok(p) = TcpPacket::parse_ip(&rbuf[..n]) else {
                c.not_tcp += 1;
                continue;
            };
            if !ip_header_ok(&rbuf[..n]) || p.payload.len() != p.payload_len || !tcp_checksum_ok(p.src, p.dst, tcp_bytes(&rbuf[..n])) {
                c.bad_checksum += 1;
                continue;
            }
            let local = SocketAddr::new(p.dst, p.tcp.dst_port);
            let remote = SocketAddr::new(p.src, p.tcp.src_port);
            let mut idx = tuples.get(&(local, remote)).copied();
            // A SYN: a new connection or join, or a retransmitted one (a
            // join SYN on a known 4-tuple whose subflow died goes to the
            // connection again, which answers or refuses it).
            let is_join = p.tcp.options.mptcp().any(|o| matches!(o, MptcpOption::MpJoin(MpJoin::Syn { .. })));
            if (idx.is_none() || is_join) && p.tcp.syn() && !p.tcp.ack_flag() && !p.tcp.rst() {
                let seed = seed0 ^ c.rx_packets;
                idx = new_subflow(&mut ends, &listening, &mut tokens, &mut tuples, &mut c, spec.node, now, local, remote, &p.tcp, seed);
                while agenda.len() < ends.len() {
                    agenda.add();
                }
                touched.resize(ends.len(), true);
            }
            match idx {
                Some(e) => {
                    agenda.wake(e);
                    let end = &mut ends[e];
                    let Some(conn) = end.conn.as_mut() else { continue };
                    let placed = conn.handle_segment(now, local, remote, &p.tcp, p.payload);
                    match placed {
                        Some(r) if !r.is_empty() => end.rx.put(&r, p.payload),
                        None if p.payload_len > 0 => c.unplaced_segments += 1,
                        _ => {}
                    }
                }
                None => {
                    if let Some(h) = p.tcp.reset_reply(p.payload_len as u32) {
                        if build_ip_tcp(p.dst, p.src, 64, 0, &h, &[], &mut obuf).is_ok() && tun.send(&obuf).unwrap_or(false) {
                            c.rsts_sent += 1;
                        }
                    }
                }
            }
        }
        // ---- timers, applications, output: the ends a segment came for
        // and those whose timer is due
        let now = now_i();
        let t_ns = clk.now_ns();
        let turn = agenda.take(now.0);
        for &ei in &turn {
            let end = &mut ends[ei];
            touched[ei] = true;
            if let Some(conn) = end.conn.as_mut() {
                if conn.poll_timeout().is_some_and(|t| t <= now) {
                    conn.handle_timeout(now);
                }
            }
            drive_app(end, t_ns, &clk, now, seed0 ^ ((ei as u64 + 1) * 0x9e37));
            if let Some(conn) = end.conn.as_ref() {
                if end.role == Role::Client && conn.local_token() != 0 {
                    tokens.insert(conn.local_token(), ei);
                }
            }
            if send_round(end, ei, now, &tun, &mut wr, &mut tuples, &mut c) {
                // More to send: another turn right after reading input.
                agenda.wake(ei);
            }
            let at = end.conn.as_ref().and_then(|c| c.poll_timeout()).map_or(u64::MAX, |t| t.0);
            let app = app_wait_ns(end, t_ns);
            agenda.arm(ei, at.min(now.0.saturating_add(app)));
        }
        agenda.done(turn);
        sctp.poll(now, t_ns, &clk, &tun, &mut c);
        let more = agenda.busy();
        // ---- probes (the sender's subflows), every 20 ms
        if t_ns >= last_probe + 20_000_000 {
            if debug && t_ns / 500_000_000 != last_probe / 500_000_000 {
                for end in &ends {
                    if let Some(conn) = end.conn.as_ref() {
                        eprintln!("mplab {} {:?} {:.2}s tx {} rx {}: {}", end.flow.name, end.role, t_ns as f64 / 1e9, end.app.sent, end.rx.read, conn.debug_line());
                    }
                }
            }
            last_probe = t_ns;
            for (ei, end) in ends.iter_mut().enumerate() {
                if !touched[ei] || (!end.detailed && t_ns < end.published_ns + slow_gap) {
                    continue;
                }
                touched[ei] = false;
                end.published_ns = t_ns;
                publish(end);
                // A connection over on every subflow and read to the end.
                let over = end.conn.as_ref().is_some_and(|c| {
                    let s = c.subflow_stats();
                    !s.is_empty() && s.iter().all(|x| x.closed || x.finished) && c.readable() == 0
                });
                if over && !end.rx.buf.is_empty() {
                    end.rx.release();
                }
            }
            if let Some(text) = ctl.as_ref().and_then(|p| std::fs::read_to_string(p).ok().inspect(|_| drop(std::fs::remove_file(p)))) {
                for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                    agenda.wake_all();
                    let what = control(&mut ends, line);
                    eprintln!("mplab host {host_name}: {:.3} s: {line}: {what}", t_ns as f64 / 1e9);
                }
            }
        }
        // ---- sleep until the TUN is readable or the next timer
        let now = now_i();
        let mut next = agenda.next_deadline().map_or(u64::MAX, |t| t.saturating_sub(now.0));
        next = next.min(sctp.wait_ns(now, clk.now_ns()));
        next = next.min(20_000_000);
        let pass = pass_start.elapsed().as_nanos() as u64;
        c.max_pass_ns = c.max_pass_ns.max(pass);
        c.max_pass_cpu_ns = c.max_pass_cpu_ns.max(crate::sys::thread_cpu_ns().saturating_sub(pass_cpu));
        c.passes_over_10ms += u64::from(pass > 10_000_000);
        if gateway_ends {
            // The TUN, the gateway programs' sockets and the converters'
            // doorbells; without waiting when there is work.
            let wait = if more { 0 } else { next };
            let mut fds = vec![libc::pollfd { fd: tun.raw_fd(), events: libc::POLLIN, revents: 0 }];
            let mut who = Vec::new();
            for (ei, end) in ends.iter().enumerate() {
                let interest = match (&end.bridge, &end.exchange) {
                    (Some(b), _) => b.interest(end.conn.as_ref()),
                    (None, Some(ex)) if end.role == Role::Client => Some((ex.doorbell(), libc::POLLIN)),
                    _ => None,
                };
                if let Some((fd, events)) = interest.filter(|i| i.1 != 0) {
                    fds.push(libc::pollfd { fd, events, revents: 0 });
                    who.push(ei);
                }
            }
            if crate::sys::poll_in(&mut fds, wait).unwrap_or(0) > 0 {
                for (k, &ei) in who.iter().enumerate().filter(|(k, _)| fds[k + 1].revents != 0) {
                    let _ = k;
                    if ends[ei].exchange.is_some() {
                        let seed = seed0 ^ c.carriers.wrapping_mul(0x9e37_79b9);
                        dial(&mut ends, ei, &mut next_port, now_i(), seed, &mut c);
                        while agenda.len() < ends.len() {
                            agenda.add();
                        }
                        touched.resize(ends.len(), true);
                    } else {
                        agenda.wake(ei);
                    }
                }
            }
            c.wakeups += u64::from(wait > 0);
        } else if next > 0 && !more {
            let mut fds = [libc::pollfd { fd: tun.raw_fd(), events: libc::POLLIN, revents: 0 }];
            let _ = crate::sys::poll_in(&mut fds, next);
            c.wakeups += 1;
        }
    }
    c.bridge_bytes_gone = ends.iter().filter_map(|e| e.bridge.as_ref()).map(|b| b.gone.get()).sum();
    for end in &mut ends {
        publish(end);
        let hash = std::mem::replace(&mut end.rx.hash, Sha256::new());
        let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
        c.digests.push((end.flow.name.clone(), format!("{:?}", end.role).to_lowercase(), end.rx.read, hex));
        // Connections still open are dropped silently: the run removes the
        // namespaces (and the kernel peers' sockets are closed with RSTs by
        // the run), so a reset from here would only race the peer's
        // application into an error at its deadline.
    }
    if let Some(p) = &ctl {
        let _ = std::fs::remove_file(p);
    }
    if debug {
        eprintln!("mplab host {host_name}: {} packets out, {} of them in {} GSO super-segments; {} wake-ups", c.tx_packets, wr.gso_segments, wr.gso_writes, c.wakeups);
    }
    if let Ok(mut g) = counters.lock() {
        *g = c;
    }
}

/// Applies one control command (see [`super::control_path`]); what it did.
fn control(ends: &mut [End], line: &str) -> String {
    let mut w = line.split_whitespace();
    let verb = w.next().unwrap_or("");
    let arg = w.next();
    let addr: Option<IpAddr> = arg.and_then(|a| a.parse().ok());
    let mut done = Vec::new();
    for end in ends.iter_mut() {
        let name = end.flow.name.clone();
        let Some(conn) = end.conn.as_mut() else { continue };
        match (verb, addr) {
            ("backup" | "nobackup", Some(a)) => {
                let Some(mp) = conn.mptcp() else { continue };
                let idx: Vec<usize> = mp.subflow_stats().iter().enumerate().filter(|(_, s)| s.local.ip() == a && !s.closed).map(|(i, _)| i).collect();
                for &i in &idx {
                    mp.set_backup(i, verb == "backup");
                }
                done.push(format!("{name}: MP_PRIO on {} subflow(s)", idx.len()));
            }
            ("remove" | "add", Some(a)) => {
                let Some(id) = end.cfg.locals.iter().find(|l| l.addr == a).map(|l| l.id) else { continue };
                let Some(mp) = conn.mptcp() else { continue };
                if verb == "add" {
                    mp.add_local(id);
                    done.push(format!("{name}: address id {id} back in service"));
                } else {
                    mp.remove_local(id);
                    done.push(format!("{name}: REMOVE_ADDR id {id}"));
                }
            }
            ("abort", _) if arg.is_none_or(|f| f == name) => {
                conn.abort();
                end.aborted = true;
                done.push(format!("{name}: aborted"));
            }
            _ => {}
        }
    }
    if done.is_empty() {
        "no effect (unknown command, address or flow, or no connection yet)".into()
    } else if done.len() > 4 {
        // Many connections: the first ones and how many in all.
        format!("{}; ... ({} connections)", done[..3].join("; "), done.len())
    } else {
        done.join("; ")
    }
}

/// One round of output for `end`: what its connection sends now, batched
/// per subflow into GSO super-segments where the TUN takes them. True when
/// it stopped at [`OUT_BATCH`] segments with more to send.
fn send_round(end: &mut End, ei: usize, now: Instant, tun: &Tun, wr: &mut Writer, tuples: &mut HashMap<(SocketAddr, SocketAddr), usize>, c: &mut HostCounters) -> bool {
    let Some(conn) = end.conn.as_mut() else { return false };
    // The bytes: a bridge's real ones, or the applications' pattern.
    let src: &dyn PayloadSource = match &end.bridge {
        Some(b) => b,
        None => &Pattern,
    };
    let mut more = false;
    let mut batches: Vec<Batch> = Vec::new();
    // Super-segment sizes per subflow, from its rate (once a round).
    let sizes: Vec<((SocketAddr, SocketAddr), u64)> = if tun.gso() { conn.subflow_stats().iter().map(|s| ((s.local, s.remote), autosize(s.tcp.cwnd, s.tcp.srtt))).collect() } else { Vec::new() };
    for k in 0..=OUT_BATCH {
        if k == OUT_BATCH {
            more = true;
            break;
        }
        let Some(t) = conn.poll_transmit(now, src) else { break };
        tuples.entry((t.local, t.remote)).or_insert(ei);
        // Merged into its subflow's batch; or that batch goes out
        // and `t` starts the next (or goes out alone). One batch
        // per subflow: schedulers interleave the subflows.
        if !tun.gso() {
            wr.single(tun, &t, c, src);
            continue;
        }
        let key = (t.local, t.remote);
        // A retransmission goes alone, under the mapping its bytes
        // first went out with, after the subflow's pending batch.
        let t = match wr.remap(t) {
            Ok(t) => t,
            Err(t) => {
                if let Some(i) = batches.iter().position(|b| b.key() == key) {
                    wr.flush(tun, batches.swap_remove(i), c, src);
                }
                wr.single(tun, &t, c, src);
                continue;
            }
        };
        let t = match batches.iter().position(|b| b.key() == key) {
            Some(i) => match batches[i].push(t) {
                Ok(()) => {
                    if batches[i].full() {
                        wr.flush(tun, batches.swap_remove(i), c, src);
                    }
                    continue;
                }
                Err(t) => {
                    // Whatever follows on this subflow goes after
                    // the batch, never before it.
                    wr.flush(tun, batches.swap_remove(i), c, src);
                    t
                }
            },
            None => t,
        };
        let limit = sizes.iter().find(|(k, _)| *k == key).map_or(0, |x| x.1);
        match Batch::start(t, limit) {
            Ok(b) => batches.push(b),
            Err(t) => wr.single(tun, &t, c, src),
        }
    }
    for b in batches.drain(..) {
        wr.flush(tun, b, c, src);
    }
    more
}

fn ip_header_ok(pkt: &[u8]) -> bool {
    if pkt.first().map(|b| b >> 4) != Some(4) {
        return false;
    }
    let ihl = (pkt[0] & 0x0f) as usize * 4;
    if pkt.len() < ihl || ihl < 20 {
        return false;
    }
    let mut acc = 0u32;
    for ch in pkt[..ihl].chunks_exact(2) {
        acc += u16::from_be_bytes([ch[0], ch[1]]) as u32;
    }
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc == 0xffff
}

fn tcp_bytes(pkt: &[u8]) -> &[u8] {
    let ihl = (pkt[0] & 0x0f) as usize * 4;
    let total = u16::from_be_bytes([pkt[2], pkt[3]]) as usize;
    &pkt[ihl..total.min(pkt.len())]
}

/// Flow `f`'s end in role `role` on `node`, before its connection.
fn new_end(net: &Network, node: usize, f: &Flow, role: Role, st: &Arc<FlowState>, clk: &Clock) -> End {
    let first = if role == Role::Client { f.src } else { f.dst };
    let sends = crate::kconf::end_sends(&f.app, role == Role::Client);
    let fc = if sends { f.clone() } else { mplab_backend::config::receiver_view(f) };
    // userspace::run refused the scenario before the run if a sending
    // end's configuration does not translate.
    const CHECKED: &str = "configuration checked by config::unsupported";
    let cfg = mplab_backend::config::mptcp_config(net, &fc, node, first).expect(CHECKED);
    let tcp_cfg = (f.transport == TransportKind::Tcp).then(|| mplab_backend::config::flow_tcp_end_config(net, &fc, node).expect(CHECKED));
    // Sending stops at the flow's stop or the end of the run.
    let stop = Instant(f.stop_ns.min(clk.end_ns));
    let app = BackendApp::new(mplab_backend::config::app_kind(&f.app), role == Role::Client, Some(stop));
    let detailed = net.probes.flows.contains(&f.id);
    End { flow: f.clone(), role, st: st.clone(), cfg, tcp_cfg, conn: None, rx: RxRing::new(), app, started: false, aborted: false, detailed, published_ns: 0, bridge: None, exchange: None }
}

/// A carrier of a converter end (`tmpl`), made at run time on a new
/// socket pair: the loop keeps one side, the program gets the other.
fn carrier_end(tmpl: &End, c: &mut HostCounters) -> Option<(End, OwnedFd)> {
    let (mine, theirs) = super::bridge::pair().ok()?;
    let e = End {
        flow: tmpl.flow.clone(),
        role: tmpl.role,
        st: tmpl.st.clone(),
        cfg: tmpl.cfg.clone(),
        tcp_cfg: tmpl.tcp_cfg.clone(),
        conn: None,
        rx: RxRing::new(),
        app: BackendApp::new(mplab_backend::config::app_kind(&tmpl.flow.app), tmpl.role == Role::Client, None),
        started: false,
        aborted: false,
        detailed: false,
        published_ns: 0,
        bridge: Some(Bridge::new(mine)),
        exchange: None,
    };
    c.carriers += 1;
    Some((e, theirs))
}

/// A SYN for a 4-tuple we do not know: a join (by token) or a flow's
/// server end accepting its connection.
#[allow(clippy::too_many_arguments)]
fn new_subflow(ends: &mut Vec<End>, listening: &HashMap<u16, Vec<usize>>, tokens: &mut HashMap<u32, usize>, tuples: &mut HashMap<(SocketAddr, SocketAddr), usize>, c: &mut HostCounters, node: usize, now: Instant, local: SocketAddr, remote: SocketAddr, syn: &TcpHeader, seed: u64) -> Option<usize> {
    let join = syn.options.mptcp().find_map(|o| match o {
        MptcpOption::MpJoin(MpJoin::Syn { token, .. }) => Some(*token),
        _ => None,
    });
    if let Some(token) = join {
        let accepted = tokens.get(&token).copied().filter(|&e| ends[e].conn.as_mut().and_then(|x| x.mptcp()).is_some_and(|conn| conn.accept_join(now, local, remote, syn).is_ok()));
        let Some(e) = accepted else {
            c.joins_refused += 1;
            return None;
        };
        c.joins_accepted += 1;
        tuples.insert((local, remote), e);
        return Some(e);
    }
    let mut e = *listening.get(&local.port())?.iter().find(|&&e| ends[e].conn.is_none())?;
    let mut handed = None;
    if let Some(ex) = ends[e].exchange.clone() {
        // A converter's carrier: an end of its own, its socket for the program.
        let (carrier, theirs) = carrier_end(&ends[e], c)?;
        ends.push(carrier);
        e = ends.len() - 1;
        handed = Some((ex, theirs));
    }
    let end = &mut ends[e];
    let conn = match &end.tcp_cfg {
        Some(t) => Conn::tcp_accept(t.clone(), local, remote, syn, seed as u32, now)?,
        None => Conn::Mp(Box::new(Connection::accept(end.cfg.clone(), local, remote, syn, seed, now)?)),
    };
    tokens.insert(conn.local_token(), e);
    end.conn = Some(conn);
    end.st.connected.store(true, Ordering::Relaxed);
    // A balanced flow has a server end on each backend: this one took it.
    let _ = end.st.server_node.set(node);
    c.connections += 1;
    tuples.insert((local, remote), e);
    if let Some((ex, theirs)) = handed {
        ex.hand_over(theirs);
    }
    Some(e)
}

/// A flow end's connection as its application sees it: what it reads is
/// checked against the pattern and hashed on the way.
struct Sock<'a> {
    conn: &'a mut Conn,
    rx: &'a mut RxRing,
    st: &'a FlowState,
}

impl StreamSocket for Sock<'_> {
    fn send_space(&self) -> u64 {
        self.conn.send_space()
    }
    fn send(&mut self, n: u64) -> u64 {
        self.conn.send(n)
    }
    fn readable(&self) -> u64 {
        self.conn.readable()
    }
    fn recv(&mut self, max: u64) -> Range<u64> {
        let r = self.conn.recv(max);
        if let Some(m) = self.rx.take(r.clone()) {
            if let Ok(mut v) = self.st.mismatch.lock() {
                v.get_or_insert(m);
            }
        }
        r
    }
    fn close(&mut self) {
        self.conn.close();
    }
    fn peer_closed(&self) -> bool {
        self.conn.peer_closed() && self.conn.readable() == 0
    }
}

/// One step of the flow end's application: the client connects at the
/// flow's start; once connected, the application runs on the run's clock.
fn drive_app(end: &mut End, t_ns: u64, clk: &Clock, now: Instant, seed: u64) {
    if end.aborted || end.exchange.is_some() {
        return;
    }
    let f = &end.flow;
    if end.role == Role::Client && end.conn.is_none() {
        if t_ns < f.start_ns || t_ns >= f.stop_ns {
            return;
        }
        connect(end, now, seed);
    }
    let Some(conn) = end.conn.as_mut() else { return };
    if !conn.is_established() && !conn.fell_back() {
        return;
    }
    if end.role == Role::Client {
        end.st.connected.store(true, Ordering::Relaxed);
        if conn.fell_back() {
            end.st.fell_back.store(true, Ordering::Relaxed);
        }
    }
    if let Some(b) = end.bridge.as_mut() {
        let rx = &mut end.rx;
        b.pump(conn, |conn, n, out| rx.take_into(conn.recv(n), out));
        return;
    }
    let before = crate::apps::progress(&end.app);
    let at = Instant(t_ns);
    let mut sock = Sock { conn, rx: &mut end.rx, st: &end.st };
    if end.started {
        end.app.pump(at, &mut sock);
    } else {
        end.app.on_connected(at, &mut sock);
        end.started = true;
    }
    // What the run reports counts up to its end, like the kernel's apps.
    crate::apps::report(&end.app, before, &end.st, t_ns, clk, end.flow.start_ns);
}

/// Opens the connection of client end `end`.
fn connect(end: &mut End, now: Instant, seed: u64) {
    let f = &end.flow;
    let local = SocketAddr::new(IpAddr::V4(f.src), f.sport);
    let remote = SocketAddr::new(IpAddr::V4(f.dst), f.dport);
    end.conn = Some(match &end.tcp_cfg {
        Some(t) => Conn::tcp_connect(t.clone(), local, remote, (seed ^ (seed >> 32)) as u32, now),
        None => Conn::Mp(Box::new(Connection::connect(end.cfg.clone(), local, remote, seed, now))),
    });
}

/// The carriers the converter program asked converter end `tmpl` for:
/// each an end of its own with a new source port, connecting now with
/// the program's first bytes written (in the SYN with Fast Open).
fn dial(ends: &mut Vec<End>, tmpl: usize, next_port: &mut u16, now: Instant, seed: u64, c: &mut HostCounters) {
    let Some(ex) = ends[tmpl].exchange.clone() else { return };
    for (k, d) in ex.take_dials().into_iter().enumerate() {
        let Some((mut e, theirs)) = carrier_end(&ends[tmpl], c) else {
            let _ = d.reply.send(None);
            continue;
        };
        e.flow.sport = *next_port;
        *next_port = next_port.checked_add(1).unwrap_or(50_000);
        connect(&mut e, now, seed ^ k as u64);
        let in_syn = fast_open(&e);
        if let (Some(b), Some(conn)) = (e.bridge.as_mut(), e.conn.as_mut()) {
            b.preload(conn, &d.first);
        }
        if d.reply.send(Some((theirs, in_syn))).is_ok() {
            ends.push(e);
        }
    }
}

/// Whether the end's SYN carries what was written before it.
fn fast_open(e: &End) -> bool {
    e.tcp_cfg.as_ref().map_or(e.cfg.tcp.fast_open, |t| t.fast_open)
}

/// How long the application of `end` may sleep: until the client's start,
/// or the application's own timer (a rate sender's next chunk, a request
/// due, its stop).
fn app_wait_ns(end: &End, t_ns: u64) -> u64 {
    let f = &end.flow;
    if end.role == Role::Client && end.conn.is_none() {
        return if t_ns < f.start_ns { f.start_ns - t_ns } else { u64::MAX };
    }
    // Only a running application has timers (a dead connection's would
    // fire forever).
    if end.bridge.is_some() || end.exchange.is_some() {
        // The program's bytes wake the end through the loop's poll.
        return u64::MAX;
    }
    let live = end.started && !end.aborted && end.conn.as_ref().is_some_and(|c| c.is_established() || c.fell_back());
    match end.app.poll_timer() {
        Some(t) if live => t.0.saturating_sub(t_ns),
        _ => u64::MAX,
    }
}

/// The sender's subflows for the prober (as TCP_INFO would give them).
fn publish(end: &End) {
    let sender = match end.flow.app {
        App::Download { .. } => Role::Server,
        _ => Role::Client,
    };
    if end.role != sender {
        return;
    }
    let Some(conn) = end.conn.as_ref() else { return };
    let v: Vec<crate::apps::StackSubflow> = conn
        .subflow_stats()
        .into_iter()
        .filter(|s| s.established || s.tcp.bytes_sent > 0)
        .map(|s| {
            let info = TcpInfo {
                rtt_us: s.tcp.srtt.map_or(0, |d| d.as_micros() as u32),
                snd_cwnd: s.tcp.cwnd.min(u32::MAX as u64) as u32,
                snd_mss: 1,
                unacked: s.tcp.in_flight.min(u32::MAX as u64) as u32,
                total_retrans: s.tcp.segments_retransmitted as u32,
                bytes_acked: s.tcp.bytes_acked,
                bytes_sent: s.tcp.bytes_sent,
                total_rto: Some(s.tcp.rto_count.min(u16::MAX as u64) as u16),
            };
            // Linux's TCP_ESTABLISHED / TCP_CLOSE.
            (s.local.to_string(), s.remote.to_string(), info, if s.closed { 7 } else { 1 })
        })
        .collect();
    if let Ok(mut g) = end.st.stack_subflows.lock() {
        *g = Some((v, conn.subflow_stats().iter().filter(|s| s.backup).map(|s| format!("{}|{}", s.local, s.remote)).collect()));
    }
    if let Ok(mut g) = end.st.stack_send_buffer.lock() {
        *g = conn.send_buffer();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mplab_backend::apps::fill_pattern;
    use mplab_wire::tcp::flags;
    use std::net::Ipv4Addr;

    fn packet(payload: &[u8]) -> Vec<u8> {
        let h = TcpHeader { src_port: 5001, dst_port: 40000, seq: 7, ack: 9, flags: flags::ACK, window: 100, ..Default::default() };
        let mut out = Vec::new();
        build_ip_tcp(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 64, 1, &h, payload, &mut out).unwrap();
        out
    }

    #[test]
    fn checksums_verified_and_damage_detected() {
        let mut p = packet(b"hello world");
        let t = TcpPacket::parse_ip(&p).unwrap();
        assert!(ip_header_ok(&p) && tcp_checksum_ok(t.src, t.dst, tcp_bytes(&p)));
        let n = p.len();
        p[n - 1] ^= 1; // payload damaged
        let t = TcpPacket::parse_ip(&p).unwrap();
        assert!(!tcp_checksum_ok(t.src, t.dst, tcp_bytes(&p)));
        let mut q = packet(b"x");
        q[8] ^= 1; // TTL: IP header checksum now wrong
        assert!(!ip_header_ok(&q));
    }

    #[test]
    fn ring_checks_and_hashes_in_order() {
        let mut ring = RxRing::new();
        let mut a = vec![0u8; 3000];
        fill_pattern(1000, &mut a);
        let mut b = vec![0u8; 1000];
        fill_pattern(0, &mut b);
        ring.put(&(1000..4000), &a); // out of order first
        ring.put(&(0..1000), &b);
        assert_eq!(ring.take(0..4000), None);
        let mut bad = vec![0u8; 10];
        fill_pattern(4000, &mut bad);
        bad[3] ^= 0xff;
        ring.put(&(4000..4010), &bad);
        assert!(ring.take(4000..4010).unwrap().contains("offset 4003"));
        // Grows with the data ahead of what was read, keeping what it held.
        let mut far = vec![0u8; 100];
        fill_pattern(200_000, &mut far);
        ring.put(&(200_000..200_100), &far);
        assert!(ring.buf.len() >= 256 * 1024 && ring.buf.len() <= RING, "{}", ring.buf.len());
        let mut near = vec![0u8; 195_990];
        fill_pattern(4010, &mut near);
        ring.put(&(4010..200_000), &near);
        assert_eq!(ring.take(4010..200_100), None);
        // Wraps around the ring.
        let start = ring.buf.len() as u64 * 3 - 5;
        ring.read = start;
        let mut w = vec![0u8; 20];
        fill_pattern(start, &mut w);
        ring.put(&(start..start + 20), &w);
        assert_eq!(ring.take(start..start + 20), None);
    }
}
