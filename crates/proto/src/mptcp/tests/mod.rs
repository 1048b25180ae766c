//! Two MPTCP endpoints joined by several paths (one per address pair),
//! each with its own delay, rate and drop rule: the connection exercised
//! without any simulator.

use super::*;
use mplab_wire::mptcp::tcprst_reason;
use mplab_wire::{Dss, MpCapable, MpJoin, TcpOptions};
use std::net::Ipv4Addr;

mod subflows;
mod data;
mod linux_profile;
mod signalling;
mod fast_open;
mod windows;

const MS: u64 = 1_000_000;

fn ip(a: u8, b: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, a, b, 1))
}

fn pattern(off: u64) -> u8 {
    (off.wrapping_mul(7).wrapping_add(3) & 0xff) as u8
}

struct Pattern;
impl PayloadSource for Pattern {
    fn fill(&self, off: u64, buf: &mut [u8]) {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = pattern(off + i as u64);
        }
    }
}

struct Pkt {
    at: Instant,
    to_server: bool,
    t: Transmit,
}

/// What a drop rule sees.
struct Seen<'a> {
    /// When the packet would arrive.
    now: Instant,
    to_server: bool,
    t: &'a Transmit,
}

type Rule<'a> = Box<dyn FnMut(&Seen) -> bool + 'a>;
type Mangle<'a> = Box<dyn FnMut(&mut TcpHeader, bool) + 'a>;

struct Net<'a> {
    client: Connection,
    server: Option<Connection>,
    server_cfg: MptcpConfig,
    server_locals: Vec<IpAddr>,
    delay: u64,
    ns_per_byte: u64,
    /// Per (client ip, server ip): when its wire is free, per direction.
    busy: std::collections::HashMap<(IpAddr, IpAddr, bool), Instant>,
    wire: Vec<Pkt>,
    now: Instant,
    drop: Rule<'a>,
    mangle: Mangle<'a>,
    corrupt: Box<dyn FnMut(&Transmit) -> bool + 'a>,
    to_send: u64,
    received: u64,
    misplaced: u64,
    /// A download: bytes the server has still to write, and what the
    /// client read of them (in order) and found misplaced.
    down: u64,
    down_received: u64,
    down_misplaced: u64,
    refused: Vec<JoinRefused>,
    /// Forget what changed before every poll: every transmit pass and
    /// every timer query sweeps all subflows (the reference the change
    /// tracking must match).
    full_passes: bool,
    /// Extra one-way delay (ns) of the paths to one server address.
    skew: Option<(IpAddr, u64)>,
    /// Every segment emitted: (time, from client, header and data).
    log: Vec<String>,
    /// The client keeps the connection open once it wrote everything.
    keep_open: bool,
    /// The server's data-level bytes as a driver holds them (`Some`: kept
    /// and checked): the first copy placed at an offset wins, and every
    /// byte the application reads must have been placed and be the
    /// stream's; `changed` counts those that were not.
    ring: Option<std::collections::HashMap<u64, u8>>,
    changed: u64,
}

fn cfg(locals: &[IpAddr], pm: &str) -> MptcpConfig {
    MptcpConfig {
        path_manager: path_manager::lookup(pm).unwrap(),
        locals: locals.iter().enumerate().map(|(i, a)| LocalAddr::plain(i as u8, *a)).collect(),
        ..Default::default()
    }
}

impl<'a> Net<'a> {
    fn new(client_locals: &[IpAddr], server_locals: &[IpAddr], pm: &str, delay_ms: u64, rate_mbit: u64) -> Self {
        let ccfg = cfg(client_locals, pm);
        let scfg = cfg(server_locals, pm);
        let client = Connection::connect(ccfg, SocketAddr::new(client_locals[0], 40000), SocketAddr::new(server_locals[0], 5001), 1, Instant(0));
        Net {
            client,
            server: None,
            server_cfg: scfg,
            server_locals: server_locals.to_vec(),
            delay: delay_ms * MS,
            ns_per_byte: 8000 / rate_mbit.max(1),
            busy: Default::default(),
            wire: Vec::new(),
            now: Instant(0),
            drop: Box::new(|_| false),
            mangle: Box::new(|_, _| {}),
            corrupt: Box::new(|_| false),
            to_send: 0,
            received: 0,
            misplaced: 0,
            down: 0,
            down_received: 0,
            down_misplaced: 0,
            refused: Vec::new(),
            full_passes: false,
            skew: None,
            log: Vec::new(),
            keep_open: false,
            ring: None,
            changed: 0,
        }
    }

    /// The driver's copy of a segment's payload to where the server placed
    /// it (from the payload's first byte; the first copy wins).
    fn place(&mut self, r: &Range<u64>, payload: &[u8]) {
        if let Some(ring) = self.ring.as_mut() {
            for (k, &b) in payload.iter().enumerate().take((r.end - r.start) as usize) {
                ring.entry(r.start + k as u64).or_insert(b);
            }
        }
    }

    fn emit(&mut self, from_client: bool) {
        loop {
            let c = if from_client { Some(&mut self.client) } else { self.server.as_mut() };
            let Some(c) = c else { return };
            if self.full_passes {
                c.changed_all();
            }
            let Some(mut t) = c.poll_transmit(self.now, &Pattern) else { return };
            self.log.push(format!("{:?} {from_client} {:?} {:?}", self.now, t.header, t.data));
            (self.mangle)(&mut t.header, from_client);
            let (cip, sip) = if from_client { (t.local.ip(), t.remote.ip()) } else { (t.remote.ip(), t.local.ip()) };
            let len = t.data.end - t.data.start;
            let b = self.busy.entry((cip, sip, from_client)).or_insert(Instant(0));
            let start = (*b).max(self.now);
            let done = start + Duration::from_nanos((len + 60) * self.ns_per_byte);
            *b = done;
            let extra = self.skew.filter(|&(a, _)| a == sip).map_or(0, |(_, d)| d);
            let at = done + Duration::from_nanos(self.delay + extra);
            if (self.drop)(&Seen { now: at, to_server: from_client, t: &t }) {
                continue;
            }
            self.wire.push(Pkt { at, to_server: from_client, t });
        }
    }

    fn app(&mut self) {
        let n = self.client.send(self.to_send);
        self.to_send -= n;
        if self.to_send == 0 && !self.keep_open {
            self.client.close();
        }
        if let Some(s) = self.server.as_mut() {
            let r = s.recv(u64::MAX);
            assert_eq!(r.start, self.received, "reads are contiguous");
            self.received = r.end;
            if let Some(ring) = self.ring.as_mut() {
                for off in r {
                    if ring.remove(&off) != Some(pattern(off)) {
                        self.changed += 1;
                    }
                }
            }
            let n = s.send(self.down);
            self.down -= n;
            if s.peer_closed() && self.down == 0 {
                s.close();
            }
        }
        let r = self.client.recv(u64::MAX);
        if !r.is_empty() {
            assert_eq!(r.start, self.down_received, "reads are contiguous");
            self.down_received = r.end;
        }
    }

    fn deliver(&mut self, p: Pkt) {
        let Pkt { t, to_server, .. } = p;
        let len = (t.data.end - t.data.start) as u32;
        let mut bytes = vec![0u8; len as usize];
        Pattern.fill(t.data.start, &mut bytes);
        if len > 0 && (self.corrupt)(&t) {
            bytes[0] ^= 0x55;
        }
        if to_server {
            let (local, remote) = (t.remote, t.local);
            if self.server.is_none() {
                if !self.server_locals.contains(&local.ip()) {
                    return;
                }
                self.server = Connection::accept(self.server_cfg.clone(), local, remote, &t.header, 2, self.now);
            }
            let s = self.server.as_mut().unwrap();
            let known = s.subflows().iter().any(|x| x.local == local && x.remote == remote);
            if !known && t.header.syn() && !t.header.ack_flag() {
                if let Err(e) = s.accept_join(self.now, local, remote, &t.header) {
                    self.refused.push(e);
                    return;
                }
            }
            let payload = s.needs_payload().then_some(&bytes[..]);
            if let Some(r) = s.handle_segment(self.now, local, remote, &t.header, len, payload) {
                if r.start != t.data.start && len > 0 {
                    self.misplaced += 1;
                }
                self.place(&r, &bytes);
            }
        } else {
            let payload = self.client.needs_payload().then_some(&bytes[..]);
            if let Some(r) = self.client.handle_segment(self.now, t.remote, t.local, &t.header, len, payload) {
                if r.start != t.data.start && len > 0 {
                    self.down_misplaced += 1;
                }
            }
        }
    }

    fn run(&mut self, limit_ms: u64) {
        let limit = Instant(limit_ms * MS);
        for _ in 0..20_000_000 {
            self.app();
            self.emit(true);
            self.emit(false);
            let next_pkt = self.wire.iter().map(|p| p.at).min();
            if self.full_passes {
                self.client.changes.timeouts_valid = false;
                if let Some(s) = self.server.as_mut() {
                    s.changes.timeouts_valid = false;
                }
            }
            let timers = [self.client.poll_timeout(), self.server.as_ref().and_then(|s| s.poll_timeout())];
            let next_timer = timers.iter().flatten().min().copied();
            let Some(next) = [next_pkt, next_timer].into_iter().flatten().min() else { return };
            if next > limit {
                self.now = limit;
                return;
            }
            self.now = self.now.max(next);
            if next_pkt == Some(next) {
                let i = self.wire.iter().position(|p| p.at == next).unwrap();
                let p = self.wire.remove(i);
                self.deliver(p);
            } else {
                self.client.handle_timeout(self.now);
                if let Some(s) = self.server.as_mut() {
                    s.handle_timeout(self.now);
                }
            }
            let done = |c: &Connection| c.subflows().iter().all(|s| s.tcp.is_finished()) && !c.waits_for_a_subflow();
            if done(&self.client) && self.server.as_ref().is_some_and(done) {
                return;
            }
        }
        panic!("event budget exhausted");
    }

    fn server(&self) -> &Connection {
        self.server.as_ref().expect("server exists")
    }
}

fn bytes_on(c: &Connection) -> Vec<u64> {
    c.subflow_stats().iter().map(|s| s.tcp.bytes_acked).collect()
}
