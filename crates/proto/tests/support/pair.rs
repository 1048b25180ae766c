//! A client and a server MPTCP connection (mplab_proto's sans-IO
//! `Connection`s) driven by a script of operations read from bytes: the
//! stateful fuzz target (crates/proto/fuzz, `mptcp_pair`) and its
//! regression and seeded tests (tests/stateful.rs) share it.
//!
//! Operations: let each side send, deliver / drop / duplicate / reorder a
//! segment in flight, mutate a genuine segment (sequence or ACK number far
//! off, flags, options stripped), inject a forged segment (arbitrary
//! option bytes, payload, sequence numbers) on a subflow's 4-tuple or a
//! new one, advance time and fire timers, write and read application data.
//!
//! Invariants, checked after every operation ([`Pair::check`]):
//! * no panic (the fuzz target's job);
//! * bounded state: at most `MAX_SUBFLOWS` subflows per side;
//! * what the server's application reads is a prefix of what the client
//!   wrote, byte for byte, as long as no forged or mutated segment was in
//!   its receiver's window (what an on-path attacker sends: TCP's limit,
//!   not the stack's);
//! * a forged segment whose sequence number is far outside the subflow's
//!   window (more than 2^30 away from RCV.NXT) changes nothing: no data
//!   placed, no fallback, no priority change, no subflow closed;
//! * a forged MP_JOIN never yields an established subflow: every subflow
//!   the server completes is one the client opened.

#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::ops::Range;

use mplab_proto::mptcp::{path_manager, Connection, LocalAddr, MptcpConfig, PayloadSource, Transmit};
use mplab_proto::Instant;
use mplab_wire::tcp::TcpOptions;
use mplab_wire::TcpHeader;

pub use crate::script::{pattern, Script};
use crate::script::{far_outside, Trace, MAX_WIRE, MS};

pub const MAX_SUBFLOWS: usize = 16;

struct Pattern;
impl PayloadSource for Pattern {
    fn fill(&self, off: u64, buf: &mut [u8]) {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = pattern(off + i as u64);
        }
    }
}

/// A segment in flight.
#[derive(Clone)]
struct Pkt {
    to_server: bool,
    /// Sender's view: local = the sender's address.
    local: SocketAddr,
    remote: SocketAddr,
    header: TcpHeader,
    payload: Vec<u8>,
    /// Not what the genuine sender wrote (forged, or mutated on the way).
    forged: bool,
}

fn addr(a: u8, port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, a, 0, 1)), port)
}

fn cfg(locals: &[IpAddr], checksum: bool) -> MptcpConfig {
    MptcpConfig {
        path_manager: path_manager::lookup("fullmesh").unwrap(),
        locals: locals.iter().enumerate().map(|(i, a)| LocalAddr::plain(i as u8, *a)).collect(),
        checksum,
        ..Default::default()
    }
}

/// What a run did (for the seeded tests' sanity checks).
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    pub ops: usize,
    pub delivered: usize,
    pub forged: usize,
    pub read: u64,
    pub written: u64,
    pub tainted: bool,
}

pub struct Pair {
    client: Connection,
    server: Option<Connection>,
    scfg: MptcpConfig,
    wire: Vec<Pkt>,
    now: Instant,
    written: u64,
    /// Server-side receive buffer (payload bytes at data offsets).
    rx: Vec<u8>,
    read: u64,
    /// A forged or mutated segment had its payload placed: the stream is
    /// no longer the client's alone.
    tainted: bool,
    /// A forged payload was placed: the stream may hold more than was written.
    forged_placed: bool,
    /// Forged segments the server found in its window. From three on (three
    /// option-less ACKs make a lone subflow fall back, as a box stripping
    /// options must) an on-path attacker may make the ends disagree.
    forged_in_window: u32,
    out: Outcome,
    /// The last operations, for the error messages.
    trace: Trace,
}

impl Pair {
    /// `checksum`: DSS checksums on both ends.
    pub fn new(checksum: bool) -> Pair {
        let c_locals = [addr(1, 0).ip(), addr(2, 0).ip()];
        let s_locals = [addr(9, 0).ip()];
        let client = Connection::connect(cfg(&c_locals, checksum), addr(1, 40000), addr(9, 5001), 1, Instant(0));
        Pair { client, server: None, scfg: cfg(&s_locals, checksum), wire: Vec::new(), now: Instant(0), written: 0, rx: Vec::new(), read: 0, tainted: false, forged_placed: false, forged_in_window: 0, out: Outcome::default(), trace: Default::default() }
    }

    fn emit(&mut self) -> Result<(), String> {
        for to_server in [true, false] {
            for _ in 0..64 {
                if self.wire.len() >= MAX_WIRE {
                    return Ok(());
                }
                let c = if to_server { Some(&mut self.client) } else { self.server.as_mut() };
                let Some(c) = c else { break };
                let Some(t): Option<Transmit> = c.poll_transmit(self.now, &Pattern) else { break };
                let Some(n) = t.data.end.checked_sub(t.data.start).filter(|&n| n <= 65535) else {
                    return Err(format!("{} sent a segment with data {:?}: {:?}", if to_server { "client" } else { "server" }, t.data, t.header));
                };
                let mut payload = vec![0u8; n as usize];
                Pattern.fill(t.data.start, &mut payload);
                self.wire.push(Pkt { to_server, local: t.local, remote: t.remote, header: t.header, payload, forged: false });
            }
        }
        Ok(())
    }

    /// Hands `p` to its receiver; returns where its payload was placed.
    fn deliver(&mut self, p: Pkt) -> Result<Option<Range<u64>>, String> {
        self.out.delivered += 1;
        let note = format!("deliver to_server={} forged={} {}:{} flags={:#x} seq={} ack={} len={} mptcp={:?}", p.to_server, p.forged, p.local, p.remote, p.header.flags, p.header.seq, p.header.ack, p.payload.len(), p.header.options.mptcp().collect::<Vec<_>>());
        self.note(note);
        let (local, remote) = (p.remote, p.local);
        let len = p.payload.len() as u32;
        // A forged segment its receiver finds in the window is what an
        // on-path attacker sends: from then on the connection may do
        // anything TCP would (fall back, reset, take the bytes).
        if p.forged {
            let rx = if p.to_server { self.server.as_ref() } else { Some(&self.client) };
            let in_window = rx.and_then(|c| c.subflows().iter().find(|x| x.local == local && x.remote == remote)).map_or(true, |x| x.tcp.acceptable(&p.header, len));
            if in_window {
                self.tainted = true;
                if p.to_server {
                    self.forged_in_window += 1;
                }
            }
        }
        if p.to_server {
            if self.server.is_none() {
                if local.ip() != addr(9, 0).ip() || local.port() != 5001 {
                    return Ok(None);
                }
                self.server = Connection::accept(self.scfg.clone(), local, remote, &p.header, 2, self.now);
                if self.server.is_none() {
                    return Ok(None);
                }
            }
            let s = self.server.as_mut().unwrap();
            let known = s.subflows().iter().any(|x| x.local == local && x.remote == remote);
            if !known {
                if !(p.header.syn() && !p.header.ack_flag()) || s.accept_join(self.now, local, remote, &p.header).is_err() {
                    return Ok(None);
                }
            }
            let payload = s.needs_payload().then_some(&p.payload[..]);
            let r = s.handle_segment(self.now, local, remote, &p.header, len, payload);
            let placed_note = format!("  -> placed {r:?}, server readable {}", s.readable());
            self.note(placed_note);
            if let Some(r) = &r {
                // Placed: the bytes go where the connection says.
                if r.end > r.start {
                    if p.forged {
                        self.tainted = true;
                        self.forged_placed = true;
                    }
                    let n = (r.end - r.start) as usize;
                    if r.end > self.read + (64 << 20) {
                        return Err(format!("data placed at {r:?}, far beyond what was read ({}); forged {}: {:?}", self.read, p.forged, p.header));
                    }
                    if self.rx.len() < r.end as usize {
                        self.rx.resize(r.end as usize, 0);
                    }
                    let src = &p.payload[..n.min(p.payload.len())];
                    self.rx[r.start as usize..r.start as usize + src.len()].copy_from_slice(src);
                }
            }
            Ok(r)
        } else {
            let payload = self.client.needs_payload().then_some(&p.payload[..]);
            Ok(self.client.handle_segment(self.now, local, remote, &p.header, len, payload))
        }
    }

    /// A segment from an attacker: header fields, options and payload from
    /// the script, on a subflow's 4-tuple (or the initial one).
    fn forge(&mut self, s: &mut Script) -> Pkt {
        let to_server = s.u8() & 1 == 0;
        let sub = s.u8() as usize;
        let (local, remote) = {
            let c = if to_server { Some(&self.client) } else { self.server.as_ref() };
            match c.and_then(|c| c.subflows().get(sub % c.subflows().len().max(1))) {
                Some(x) => (x.local, x.remote),
                None if to_server => (addr(1, 40000), addr(9, 5001)),
                None => (addr(9, 5001), addr(1, 40000)),
            }
        };
        let olen = (s.u8() % 41) as usize;
        let options = TcpOptions::parse_lenient(s.bytes(olen)).unwrap_or_default();
        let header = TcpHeader { src_port: local.port(), dst_port: remote.port(), seq: s.u32(), ack: s.u32(), flags: s.u8(), window: s.u16(), urgent: 0, options };
        // Forged bytes are never the stream's: they show wherever placed.
        let n = (s.u8() as usize) * 8;
        let payload = (0..n).map(|i| !pattern(i as u64)).collect();
        self.out.forged += 1;
        Pkt { to_server, local, remote, header, payload, forged: true }
    }

    /// The receiver's RCV.NXT on the packet's subflow, if it is synchronized.
    fn rcv_nxt(&self, p: &Pkt) -> Option<u32> {
        let c = if p.to_server { self.server.as_ref()? } else { &self.client };
        c.subflows().iter().find(|x| x.local == p.remote && x.remote == p.local).filter(|x| x.tcp.is_established()).map(|x| x.tcp.rcv_nxt_seq())
    }

    fn snapshot(&self, to_server: bool) -> Option<(bool, Vec<(bool, bool)>)> {
        let c = if to_server { self.server.as_ref()? } else { &self.client };
        Some((c.fallback().is_some(), c.subflows().iter().map(|x| (x.peer_backup, x.tcp.is_closed())).collect()))
    }

    fn note(&mut self, s: String) {
        self.trace.note(s);
    }

    /// The last operations, one per line.
    pub fn trace(&self) -> String {
        self.trace.lines()
    }

    pub fn check(&mut self) -> Result<(), String> {
        for (who, c) in [("client", Some(&self.client)), ("server", self.server.as_ref())] {
            if let Some(c) = c {
                if c.subflows().len() > MAX_SUBFLOWS {
                    return Err(format!("{who}: {} subflows", c.subflows().len()));
                }
            }
        }
        if let Some(s) = self.server.as_mut() {
            // Every subflow the server completed is one the client opened
            // (a forged MP_JOIN never completes).
            for x in s.subflows().iter().filter(|x| x.tcp.is_established()) {
                if !self.client.subflows().iter().any(|c| c.local == x.remote && c.remote == x.local) {
                    return Err(format!("the server completed a subflow {} <- {} the client never opened", x.local, x.remote));
                }
            }
            let r = s.recv(u64::MAX);
            if !r.is_empty() {
                self.trace.note(format!("  read {r:?}"));
            }
            if r.start != self.read {
                return Err(format!("reads not contiguous: {} then {r:?}", self.read));
            }
            if !self.tainted {
                for off in r.clone() {
                    let got = self.rx.get(off as usize).copied();
                    if got != Some(pattern(off)) {
                        return Err(format!("byte {off}: read {got:?}, written {}", pattern(off)));
                    }
                }
            }
            if r.end > self.written && !self.forged_placed && self.forged_in_window < 3 {
                return Err(format!("read up to {} of {} written", r.end, self.written));
            }
            self.read = r.end;
        }
        Ok(())
    }

    /// One operation of the script.
    pub fn step(&mut self, s: &mut Script) -> Result<(), String> {
        self.out.ops += 1;
        let op = s.u8();
        let k = s.u8() as usize;
        match op % 10 {
            0 | 1 => self.emit()?,
            2 | 3 if !self.wire.is_empty() => {
                let p = self.wire.remove(k % self.wire.len());
                self.deliver(p)?;
            }
            4 if !self.wire.is_empty() => {
                self.wire.remove(k % self.wire.len());
            }
            5 if !self.wire.is_empty() && self.wire.len() < MAX_WIRE => {
                let p = self.wire[k % self.wire.len()].clone();
                self.wire.push(p);
            }
            6 if !self.wire.is_empty() => {
                let i = k % self.wire.len();
                let how = s.u8();
                let far = s.u32() | (1 << 30);
                let p = &mut self.wire[i];
                match how % 4 {
                    0 => p.header.seq = p.header.seq.wrapping_add(far),
                    1 => p.header.ack = p.header.ack.wrapping_add(far),
                    2 => p.header.flags ^= s.u8(),
                    _ => p.header.options.clear_mptcp(),
                }
                p.forged = true;
            }
            7 => {
                let p = self.forge(s);
                // Far outside the window: must change nothing.
                let far = self.rcv_nxt(&p).is_some_and(|n| far_outside(p.header.seq, n));
                let before = self.snapshot(p.to_server);
                let to_server = p.to_server;
                let placed = self.deliver(p)?;
                if far {
                    if placed.as_ref().is_some_and(|r| r.end > r.start) {
                        return Err(format!("a segment 2^30 outside the window had its payload placed at {placed:?}"));
                    }
                    let after = self.snapshot(to_server);
                    if before != after {
                        return Err(format!("a segment 2^30 outside the window changed the connection: {before:?} -> {after:?}"));
                    }
                }
            }
            8 => {
                self.now = self.now + std::time::Duration::from_nanos((u64::from(s.u8()) + 1) * MS);
                if self.client.poll_timeout().is_some_and(|t| t <= self.now) {
                    self.client.handle_timeout(self.now);
                }
                if let Some(sv) = self.server.as_mut() {
                    if sv.poll_timeout().is_some_and(|t| t <= self.now) {
                        sv.handle_timeout(self.now);
                    }
                }
            }
            9 => {
                let n = self.client.send(u64::from(s.u16()) * 16);
                self.written += n;
            }
            _ => {}
        }
        self.check()
    }

    pub fn outcome(&self) -> Outcome {
        Outcome { read: self.read, written: self.written, tainted: self.tainted, ..self.out.clone() }
    }
}

/// Runs a whole script (at most `max_ops` operations).
pub fn run(data: &[u8], max_ops: usize) -> Result<Outcome, String> {
    let mut s = Script::new(data);
    let checksum = s.u8() & 1 == 1;
    let mut p = Pair::new(checksum);
    for _ in 0..max_ops {
        if s.done() {
            break;
        }
        p.step(&mut s).map_err(|e| format!("{e}\nlast operations:\n{}", p.trace()))?;
    }
    Ok(p.outcome())
}
