//! One scenario host on mplab's MPTCP stack: a single thread owns the
//! host's TUN, every connection of the flows that end on this host, and
//! their applications. The loop reads packets in batches, verifies IP and
//! TCP checksums (bad packets are dropped), demultiplexes by 4-tuple with
//! the shared host stack ([`mplab_backend::host`]: joins by token, SYNs to
//! a flow's port start its server end, anything else is answered with a
//! RST), runs the applications, sends what the connections have to send
//! and sleeps in `poll` until the TUN is readable or the next timer
//! (connection timers, application deadlines) is due.

mod control;
pub mod counters;
mod end;
mod output;
mod rx_ring;

use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant as Wall;

use mplab_backend::host::{write_reset, Arrival, KnownTupleJoin, StreamConn};
use mplab_proto::Instant;
use mplab_scenario::network::Network;
use mplab_wire::packet::{tcp_checksum_ok, TcpPacket};
use mplab_wire::TcpHeader;
use sha2::{Digest, Sha256};

use super::agenda::Agenda;
use super::bridge::{Bridge, Exchange};
use super::gso::Writer;
use super::endpoints::{self, EndpointEnds};
use super::tun::Tun;
use crate::apps::{Clock, FlowState};
pub use counters::{HostCounters, Role};
use end::{app_wait_ns, carrier_end, dial, drive_app, new_end, publish, Demux, End};

/// Most packets read per round before the loop runs the apps and sends:
/// in practice everything queued. The peer's ACKs must not wait in the
/// TUN queue behind our sending (an ACK held there inflates the RTT the
/// sender sees, and a window-limited sender slows down by as much).
const BATCH: usize = 2048;

pub struct HostSpec {
    pub node: usize,
    /// (flow index, role) of every flow end on this host.
    pub ends: Vec<(usize, Role)>,
    /// Ends bridged to a gateway program (the loop's side of the pair).
    pub bridged: Vec<(usize, Role, OwnedFd)>,
    /// Ends whose carriers a converter program dials or accepts.
    pub exchanged: Vec<(usize, Role, Arc<Exchange>)>,
}

/// The loop's state: the host's ends and tables, its TUN and clock, and
/// the scratch buffers of its passes.
struct Host {
    node: usize,
    tun: Tun,
    clk: Clock,
    epoch: Wall,
    /// Ends whose transport is not carried in TCP (SCTP).
    others: EndpointEnds,
    ends: Vec<End>,
    stack: Demux,
    agenda: Agenda,
    /// Ends whose state changed since the last probe (only they publish).
    touched: Vec<bool>,
    /// How often an end whose flow is not probed in detail publishes.
    slow_gap: u64,
    c: HostCounters,
    rbuf: Vec<u8>,
    obuf: Vec<u8>,
    wr: Writer,
    seed0: u64,
    last_probe: u64,
    /// Source ports of the carriers this host dials.
    next_port: u16,
    /// Ends on gateway programs' sockets, and the converters' doorbells:
    /// polled with the TUN.
    gateway_ends: bool,
    /// MPLAB_US_DEBUG=1: the connections' internals every 0.5 s on stderr.
    debug: bool,
    ctl: Option<PathBuf>,
    host_name: String,
}

/// Runs the host until the clock's hard deadline or an abort.
pub fn run(net: &Network, spec: HostSpec, tun: Tun, states: Vec<Arc<FlowState>>, clk: Clock, counters: Arc<Mutex<HostCounters>>) {
    let mut h = Host::new(net, spec, tun, &states, clk);
    // Nothing is sent before time zero (see `Clock::sleep_until`).
    let started = h.clk.wait_start();
    while started && !h.clk.abort.load(Ordering::Relaxed) && h.clk.now_ns() < h.clk.hard_ns {
        let pass_start = std::time::Instant::now();
        let pass_cpu = crate::sys::thread_cpu_ns();
        h.receive_batch();
        // Timers, applications, output: the ends a segment came for and
        // those whose timer is due.
        let now = h.now();
        let t_ns = h.clk.now_ns();
        h.turns(now, t_ns);
        let more = h.agenda.busy();
        // Probes (the sender's subflows), every 20 ms.
        if t_ns >= h.last_probe + 20_000_000 {
            h.probe(t_ns);
        }
        h.wait(more, pass_start, pass_cpu);
    }
    h.finish(&counters);
}

impl Host {
    fn new(net: &Network, mut spec: HostSpec, tun: Tun, states: &[Arc<FlowState>], clk: Clock) -> Host {
        let others = EndpointEnds::new(net, spec.node, &spec.ends, states, &clk);
        let mut ends: Vec<End> = spec.ends.iter().filter(|(fi, _)| !endpoints::takes(&net.flows[*fi])).map(|&(fi, role)| new_end(net, spec.node, &net.flows[fi], role, &states[fi], &clk)).collect();
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
        let gateway_ends = ends.iter().any(|e| e.bridge.is_some() || e.exchange.is_some());
        // Server ends by listening port, for a SYN to find its end at once.
        let mut stack = Demux::new();
        for (e, end) in ends.iter().enumerate().filter(|(_, x)| x.role == Role::Server) {
            stack.listeners.entry(end.flow.dport).or_default().push(e);
        }
        let n = ends.len();
        let ctl = tun.ns.as_deref().map(super::control_path);
        Host {
            node: spec.node,
            tun,
            clk,
            epoch: Wall::now(),
            others,
            ends,
            stack,
            agenda: Agenda::new(n),
            touched: vec![true; n],
            slow_gap: (net.probes.interval_ns / 4).clamp(20_000_000, 1_000_000_000),
            c: HostCounters::default(),
            rbuf: vec![0u8; 65536],
            obuf: Vec::with_capacity(2048),
            wr: Writer::default(),
            seed0: crate::sys::realtime_ns() ^ ((spec.node as u64) << 48),
            last_probe: 0,
            next_port: 50_000,
            gateway_ends,
            debug: std::env::var_os("MPLAB_US_DEBUG").is_some(),
            ctl,
            host_name: net.nodes[spec.node].name.clone(),
        }
    }

    fn now(&self) -> Instant {
        Instant(self.epoch.elapsed().as_nanos() as u64)
    }

    /// Ends made at run time (converter carriers) get their agenda slot
    /// and a first probe.
    fn grown(&mut self) {
        while self.agenda.len() < self.ends.len() {
            self.agenda.add();
        }
        self.touched.resize(self.ends.len(), true);
    }

    /// Reads what the TUN holds, at most [`BATCH`] packets, and hands
    /// each valid segment to its connection.
    fn receive_batch(&mut self) {
        let now = self.now();
        let mut rbuf = std::mem::take(&mut self.rbuf);
        for _ in 0..BATCH {
            let n = match self.tun.recv(&mut rbuf) {
                Ok(Some(n)) => n,
                Ok(None) => break,
                Err(_) => break,
            };
            self.c.rx_packets += 1;
            if !self.others.is_empty() && self.others.input(now, &rbuf[..n], &mut self.c) {
                continue;
            }
            let Ok(p) = TcpPacket::parse_ip(&rbuf[..n]) else {
                self.c.not_tcp += 1;
                continue;
            };
            if !ip_header_ok(&rbuf[..n]) || p.payload.len() != p.payload_len || !tcp_checksum_ok(p.src, p.dst, tcp_bytes(&rbuf[..n])) {
                self.c.bad_checksum += 1;
                continue;
            }
            self.deliver(now, &p);
        }
        self.rbuf = rbuf;
    }

    /// One valid segment: to its connection, a new one, a join, or
    /// answered with a RST.
    fn deliver(&mut self, now: Instant, p: &TcpPacket) {
        let local = SocketAddr::new(p.dst, p.tcp.dst_port);
        let remote = SocketAddr::new(p.src, p.tcp.src_port);
        // A join SYN on a known 4-tuple whose subflow died goes to its
        // connection again, which answers or refuses it.
        let idx = match self.stack.arrival(&(local, remote), &p.tcp, KnownTupleJoin::Token) {
            Arrival::Connection(e) => Some(e),
            Arrival::Join { conn, .. } => {
                let accepted = conn.filter(|&e| self.ends[e].conn.as_mut().and_then(StreamConn::mptcp).is_some_and(|m| m.accept_join(now, local, remote, &p.tcp).is_ok()));
                if accepted.is_some() {
                    self.c.joins_accepted += 1;
                } else {
                    self.c.joins_refused += 1;
                }
                self.stack.join_decided((local, remote), accepted)
            }
            Arrival::Open => {
                let seed = self.seed0 ^ self.c.rx_packets;
                let e = self.open(now, local, remote, &p.tcp, seed);
                self.grown();
                e
            }
            Arrival::Reset | Arrival::Drop => None,
        };
        match idx {
            Some(e) => {
                self.agenda.wake(e);
                let end = &mut self.ends[e];
                let Some(conn) = end.conn.as_mut() else { return };
                let placed = conn.handle_segment(now, local, remote, &p.tcp, p.payload);
                match placed {
                    Some(r) if !r.is_empty() => end.rx.put(&r, p.payload),
                    None if p.payload_len > 0 => self.c.unplaced_segments += 1,
                    _ => {}
                }
            }
            None => {
                if write_reset(p.src, p.dst, &p.tcp, p.payload_len as u32, &mut self.obuf) && self.tun.send(&self.obuf).unwrap_or(false) {
                    self.c.rsts_sent += 1;
                }
            }
        }
    }

    /// A SYN for a listening port: the first server end on it without a
    /// connection accepts it (a converter's end makes a carrier of its own
    /// for it). None: refused.
    fn open(&mut self, now: Instant, local: SocketAddr, remote: SocketAddr, syn: &TcpHeader, seed: u64) -> Option<usize> {
        let mut e = *self.stack.listeners.get(&local.port())?.iter().find(|&&e| self.ends[e].conn.is_none())?;
        let mut handed = None;
        if let Some(ex) = self.ends[e].exchange.clone() {
            // A converter's carrier: an end of its own, its socket for the program.
            let (carrier, theirs) = carrier_end(&self.ends[e], &mut self.c)?;
            self.ends.push(carrier);
            e = self.ends.len() - 1;
            handed = Some((ex, theirs));
        }
        let node = self.node;
        let end = &mut self.ends[e];
        let conn = match &end.tcp_cfg {
            Some(t) => StreamConn::tcp_accept(t.clone(), local, remote, syn, seed as u32, now)?,
            None => StreamConn::mptcp_accept(end.cfg.clone(), local, remote, syn, seed, now)?,
        };
        self.stack.tokens.insert(conn.local_token(), e);
        end.conn = Some(conn);
        end.st.connected.store(true, Ordering::Relaxed);
        // A balanced flow has a server end on each backend: this one took it.
        let _ = end.st.server_node.set(node);
        self.c.connections += 1;
        self.stack.demux.insert((local, remote), e);
        if let Some((ex, theirs)) = handed {
            ex.hand_over(theirs);
        }
        Some(e)
    }

    /// A turn for each end that needs one: its connection's timer, its
    /// application, a send round; then the SCTP associations'.
    fn turns(&mut self, now: Instant, t_ns: u64) {
        let turn = self.agenda.take(now.0);
        for &ei in &turn {
            let end = &mut self.ends[ei];
            self.touched[ei] = true;
            if let Some(conn) = end.conn.as_mut() {
                if conn.poll_timeout().is_some_and(|t| t <= now) {
                    conn.handle_timeout(now);
                }
            }
            drive_app(end, t_ns, &self.clk, now, self.seed0 ^ ((ei as u64 + 1) * 0x9e37));
            if let Some(conn) = end.conn.as_ref() {
                if end.role == Role::Client && conn.local_token() != 0 {
                    self.stack.tokens.insert(conn.local_token(), ei);
                }
            }
            if output::send_round(end, ei, now, &self.tun, &mut self.wr, &mut self.stack, &mut self.c) {
                // More to send: another turn right after reading input.
                self.agenda.wake(ei);
            }
            let at = end.conn.as_ref().and_then(|c| c.poll_timeout()).map_or(u64::MAX, |t| t.0);
            let app = app_wait_ns(end, t_ns);
            self.agenda.arm(ei, at.min(now.0.saturating_add(app)));
        }
        self.agenda.done(turn);
        self.others.poll(now, t_ns, &self.clk, &self.tun, &mut self.c);
    }

    /// Publishes the touched ends for the prober, gives back the rings of
    /// connections that are over, and runs the control commands waiting.
    fn probe(&mut self, t_ns: u64) {
        if self.debug && t_ns / 500_000_000 != self.last_probe / 500_000_000 {
            for end in &self.ends {
                if let Some(conn) = end.conn.as_ref() {
                    eprintln!("mplab {} {:?} {:.2}s tx {} rx {}: {}", end.flow.name, end.role, t_ns as f64 / 1e9, end.app.sent, end.rx.read, conn.debug_line());
                }
            }
        }
        self.last_probe = t_ns;
        for (ei, end) in self.ends.iter_mut().enumerate() {
            if !self.touched[ei] || (!end.detailed && t_ns < end.published_ns + self.slow_gap) {
                continue;
            }
            self.touched[ei] = false;
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
        if let Some(text) = self.ctl.as_ref().and_then(|p| std::fs::read_to_string(p).ok().inspect(|_| drop(std::fs::remove_file(p)))) {
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                self.agenda.wake_all();
                let what = control::control(&mut self.ends, line);
                eprintln!("mplab host {}: {:.3} s: {line}: {what}", self.host_name, t_ns as f64 / 1e9);
            }
        }
    }

    /// Ends the pass (its duration counted) and sleeps until the TUN is
    /// readable or the next timer; with gateway ends, their sockets and
    /// doorbells wake it too. No sleep when there is work (`more`).
    fn wait(&mut self, more: bool, pass_start: std::time::Instant, pass_cpu: u64) {
        let now = self.now();
        let mut next = self.agenda.next_deadline().map_or(u64::MAX, |t| t.saturating_sub(now.0));
        next = next.min(self.others.wait_ns(now, self.clk.now_ns()));
        next = next.min(20_000_000);
        let c = &mut self.c;
        let pass = pass_start.elapsed().as_nanos() as u64;
        c.max_pass_ns = c.max_pass_ns.max(pass);
        c.max_pass_cpu_ns = c.max_pass_cpu_ns.max(crate::sys::thread_cpu_ns().saturating_sub(pass_cpu));
        c.passes_over_10ms += u64::from(pass > 10_000_000);
        if self.gateway_ends {
            self.wait_with_gateways(if more { 0 } else { next });
        } else if next > 0 && !more {
            let mut fds = [libc::pollfd { fd: self.tun.raw_fd(), events: libc::POLLIN, revents: 0 }];
            let _ = crate::sys::poll_in(&mut fds, next);
            self.c.wakeups += 1;
        }
    }

    /// Polls the TUN, the gateway programs' sockets and the converters'
    /// doorbells for up to `wait` ns: a ready socket wakes its end, a
    /// doorbell dials the carriers asked for.
    fn wait_with_gateways(&mut self, wait: u64) {
        let mut fds = vec![libc::pollfd { fd: self.tun.raw_fd(), events: libc::POLLIN, revents: 0 }];
        let mut who = Vec::new();
        for (ei, end) in self.ends.iter().enumerate() {
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
            for (_, &ei) in who.iter().enumerate().filter(|(k, _)| fds[k + 1].revents != 0) {
                if self.ends[ei].exchange.is_some() {
                    let seed = self.seed0 ^ self.c.carriers.wrapping_mul(0x9e37_79b9);
                    let now = self.now();
                    dial(&mut self.ends, ei, &mut self.next_port, now, seed, &mut self.c);
                    self.grown();
                } else {
                    self.agenda.wake(ei);
                }
            }
        }
        self.c.wakeups += u64::from(wait > 0);
    }

    /// The run is over: the ends' last probes and digests into the
    /// counters.
    fn finish(mut self, counters: &Mutex<HostCounters>) {
        let c = &mut self.c;
        c.bridge_bytes_gone = self.ends.iter().filter_map(|e| e.bridge.as_ref()).map(|b| b.gone.get()).sum();
        for end in &mut self.ends {
            publish(end);
            let hash = std::mem::replace(&mut end.rx.hash, Sha256::new());
            let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
            c.digests.push((end.flow.name.clone(), format!("{:?}", end.role).to_lowercase(), end.rx.read, hex));
            // Connections still open are dropped silently: the run removes the
            // namespaces (and the kernel peers' sockets are closed with RSTs by
            // the run), so a reset from here would only race the peer's
            // application into an error at its deadline.
        }
        if let Some(p) = &self.ctl {
            let _ = std::fs::remove_file(p);
        }
        if self.debug {
            eprintln!("mplab host {}: {} packets out, {} of them in {} GSO super-segments; {} wake-ups", self.host_name, c.tx_packets, self.wr.gso_segments, self.wr.gso_writes, c.wakeups);
        }
        if let Ok(mut g) = counters.lock() {
            *g = std::mem::take(&mut self.c);
        }
    }
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

#[cfg(test)]
mod tests;
