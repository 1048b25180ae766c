//! Two plain TCP connections (mplab_proto's sans-IO `tcp::Connection`, the
//! engine under every MPTCP subflow) driven by a script of operations read
//! from bytes: the `tcp_pair` fuzz target (crates/proto/fuzz) and its seeded
//! tests (tests/stateful.rs) share it.
//!
//! Operations: let each side send, deliver / drop / duplicate / reorder a
//! segment in flight, mutate a genuine segment (sequence or ACK number far
//! off, flags flipped, window changed), inject a forged segment (arbitrary
//! options, flags, numbers and payload) on the connection's 4-tuple, advance
//! time and fire timers, write on either side, close either side.
//!
//! Invariants, checked after every operation ([`TcpPair::check`]):
//! * no panic (the fuzz target's job);
//! * each side's application reads a prefix of what the other wrote, byte
//!   for byte, as long as no forged or mutated segment was in its
//!   receiver's window (an on-path attacker: TCP's limit, not the stack's);
//! * a forged segment whose sequence number is more than 2^30 from RCV.NXT
//!   changes nothing the peer relies on (RFC 9293 3.10.7.4, RFC 5961):
//!   no data placed, no state change or reset, SND.UNA and the peer's
//!   window untouched;
//! * placed data stays within the window: never 64 MiB past the reader.

#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::ops::Range;

use mplab_proto::tcp::{Connection, TcpConfig};
use mplab_proto::Instant;
use mplab_wire::tcp::TcpOptions;
use mplab_wire::TcpHeader;

use crate::script::{far_outside, pattern, Script, Trace, MAX_WIRE, MS};


fn client_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 1, 0, 1)), 40000)
}

fn server_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 9, 0, 1)), 5001)
}

/// A segment in flight.
#[derive(Clone)]
struct Pkt {
    to_server: bool,
    header: TcpHeader,
    payload: Vec<u8>,
    /// Not what the genuine sender wrote (forged, or mutated on the way).
    forged: bool,
}

/// One direction's receiving application.
#[derive(Default)]
struct Reader {
    /// Payload bytes at stream offsets, as placed.
    rx: Vec<u8>,
    read: u64,
    written: u64,
    /// Something forged was in this receiver's window.
    tainted: bool,
    /// A forged payload was placed: the stream may hold more than was written.
    forged_placed: bool,
}

/// What a run did (for the seeded tests' sanity checks).
#[derive(Debug, Default, Clone)]
pub struct TcpOutcome {
    pub ops: usize,
    pub delivered: usize,
    pub forged: usize,
    /// Bytes read by the server and by the client.
    pub read: [u64; 2],
    pub tainted: bool,
}

pub struct TcpPair {
    client: Connection,
    server: Option<Connection>,
    cfg: TcpConfig,
    server_iss: u32,
    wire: Vec<Pkt>,
    now: Instant,
    /// [0]: what the server reads (the client's stream); [1]: the reverse.
    dir: [Reader; 2],
    out: TcpOutcome,
    trace: Trace,
}

/// What a forged segment far outside the window must leave alone.
#[derive(Debug, PartialEq)]
struct Snapshot {
    state: String,
    reset: bool,
    rcv_nxt: u64,
    snd_una: u64,
    peer_window: u64,
}

impl TcpPair {
    pub fn new(client_iss: u32, server_iss: u32, sack: bool) -> TcpPair {
        let cfg = TcpConfig { sack, ..TcpConfig::default() };
        let client = Connection::connect(cfg.clone(), client_addr(), server_addr(), client_iss, Instant(0));
        TcpPair { client, server: None, cfg, server_iss, wire: Vec::new(), now: Instant(0), dir: Default::default(), out: TcpOutcome::default(), trace: Default::default() }
    }

    fn side(&mut self, server: bool) -> Option<&mut Connection> {
        if server {
            self.server.as_mut()
        } else {
            Some(&mut self.client)
        }
    }

    fn emit(&mut self) -> Result<(), String> {
        for to_server in [true, false] {
            for _ in 0..64 {
                if self.wire.len() >= MAX_WIRE {
                    return Ok(());
                }
                let now = self.now;
                let Some(c) = self.side(!to_server) else { break };
                let Some(t) = c.poll_transmit(now) else { break };
                let Some(n) = t.payload.end.checked_sub(t.payload.start).filter(|&n| n <= 65535) else {
                    return Err(format!("{} sent a segment with payload {:?}: {:?}", if to_server { "client" } else { "server" }, t.payload, t.header));
                };
                let payload = (0..n).map(|i| pattern(t.payload.start + i)).collect();
                self.wire.push(Pkt { to_server, header: t.header, payload, forged: false });
            }
        }
        Ok(())
    }

    /// Hands `p` to its receiver; returns where its payload was placed.
    fn deliver(&mut self, p: Pkt) -> Result<Option<Range<u64>>, String> {
        self.out.delivered += 1;
        let h = &p.header;
        let note = format!("deliver to_server={} forged={} flags={:#x} seq={} ack={} wnd={} len={}", p.to_server, p.forged, h.flags, h.seq, h.ack, h.window, p.payload.len());
        self.note(note);
        let len = p.payload.len() as u32;
        if p.to_server && self.server.is_none() {
            match Connection::accept(self.cfg.clone(), server_addr(), client_addr(), &p.header, self.server_iss, self.now) {
                Ok(c) => self.server = Some(c),
                Err(_) => return Ok(None),
            }
            return Ok(None);
        }
        let now = self.now;
        let Some(c) = self.side(p.to_server) else { return Ok(None) };
        // A forged segment its receiver finds in the window is what an
        // on-path attacker sends: from then on the stream may carry its bytes.
        let in_window = c.acceptable(&p.header, len);
        let r = c.handle_segment(now, &p.header, len);
        let d = &mut self.dir[usize::from(!p.to_server)];
        if p.forged && in_window {
            d.tainted = true;
        }
        if let Some(r) = &r {
            if r.end > r.start {
                if p.forged {
                    d.tainted = true;
                    d.forged_placed = true;
                }
                if r.end > d.read + (64 << 20) {
                    return Err(format!("data placed at {r:?}, far beyond what was read ({}); forged {}: {:?}", d.read, p.forged, p.header));
                }
                if (r.end - r.start) as usize > p.payload.len() {
                    return Err(format!("placed {r:?} from a payload of {} bytes", p.payload.len()));
                }
                if d.rx.len() < r.end as usize {
                    d.rx.resize(r.end as usize, 0);
                }
                let n = (r.end - r.start) as usize;
                d.rx[r.start as usize..r.end as usize].copy_from_slice(&p.payload[..n]);
            }
        }
        self.note(format!("  -> placed {r:?}"));
        Ok(r)
    }

    /// A segment from an attacker on the connection's 4-tuple: numbers,
    /// flags, window, options and payload from the script.
    fn forge(&mut self, s: &mut Script) -> Pkt {
        let to_server = s.u8() & 1 == 0;
        let (src, dst) = if to_server { (client_addr(), server_addr()) } else { (server_addr(), client_addr()) };
        let olen = (s.u8() % 41) as usize;
        let options = TcpOptions::parse_lenient(s.bytes(olen)).unwrap_or_default();
        let header = TcpHeader { src_port: src.port(), dst_port: dst.port(), seq: s.u32(), ack: s.u32(), flags: s.u8(), window: s.u16(), urgent: 0, options };
        // Forged bytes are never the stream's: they show wherever placed.
        let n = (s.u8() as usize) * 8;
        let payload = (0..n).map(|i| !pattern(i as u64)).collect();
        self.out.forged += 1;
        Pkt { to_server, header, payload, forged: true }
    }

    fn receiver(&self, to_server: bool) -> Option<&Connection> {
        if to_server {
            self.server.as_ref()
        } else {
            Some(&self.client)
        }
    }

    fn snapshot(&self, to_server: bool) -> Option<Snapshot> {
        let c = self.receiver(to_server)?;
        Some(Snapshot { state: format!("{:?}", c.state()), reset: c.was_reset(), rcv_nxt: c.rcv_nxt(), snd_una: c.snd_una(), peer_window: c.peer_window() })
    }

    /// Whether `p`'s sequence number is more than 2^30 from its receiver's
    /// RCV.NXT (the receiver synchronized).
    fn far_outside(&self, p: &Pkt) -> bool {
        self.receiver(p.to_server).filter(|c| c.is_established()).is_some_and(|c| far_outside(p.header.seq, c.rcv_nxt_seq()))
    }

    fn note(&mut self, s: String) {
        self.trace.note(s);
    }

    /// The last operations, one per line.
    pub fn trace(&self) -> String {
        self.trace.lines()
    }

    pub fn check(&mut self) -> Result<(), String> {
        for server in [true, false] {
            let Some(c) = self.side(server) else { continue };
            let r = c.recv(u64::MAX);
            let d = &mut self.dir[usize::from(!server)];
            let who = if server { "server" } else { "client" };
            if r.start != d.read {
                return Err(format!("{who}: reads not contiguous: {} then {r:?}", d.read));
            }
            if r.end > d.written && !d.forged_placed {
                return Err(format!("{who}: read up to {} of {} written", r.end, d.written));
            }
            if !d.tainted {
                for off in r.clone() {
                    let got = d.rx.get(off as usize).copied();
                    if got != Some(pattern(off)) {
                        return Err(format!("{who}: byte {off}: read {got:?}, written {}", pattern(off)));
                    }
                }
            }
            d.read = r.end;
        }
        Ok(())
    }

    /// One operation of the script.
    pub fn step(&mut self, s: &mut Script) -> Result<(), String> {
        self.out.ops += 1;
        let op = s.u8();
        let k = s.u8() as usize;
        match op % 12 {
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
                let v = s.u16();
                let p = &mut self.wire[i];
                match how % 4 {
                    0 => p.header.seq = p.header.seq.wrapping_add(far),
                    1 => p.header.ack = p.header.ack.wrapping_add(far),
                    2 => p.header.flags ^= v as u8,
                    _ => p.header.window = v,
                }
                p.forged = true;
            }
            7 => {
                let p = self.forge(s);
                let far = self.far_outside(&p);
                let to_server = p.to_server;
                let before = self.snapshot(to_server);
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
                let now = self.now;
                for server in [false, true] {
                    if let Some(c) = self.side(server) {
                        if c.poll_timeout().is_some_and(|t| t <= now) {
                            c.handle_timeout(now);
                        }
                    }
                }
            }
            9 | 10 => {
                let server = op % 12 == 10;
                let n = u64::from(s.u16()) * 16;
                if let Some(c) = self.side(server) {
                    let sent = c.send(n);
                    self.dir[usize::from(server)].written += sent;
                }
            }
            11 => {
                let server = k & 1 == 1;
                if let Some(c) = self.side(server) {
                    c.close();
                }
            }
            _ => {}
        }
        self.check()
    }

    pub fn outcome(&self) -> TcpOutcome {
        TcpOutcome { read: [self.dir[0].read, self.dir[1].read], tainted: self.dir.iter().any(|d| d.tainted), ..self.out.clone() }
    }
}

/// Runs a whole script (at most `max_ops` operations).
pub fn run(data: &[u8], max_ops: usize) -> Result<TcpOutcome, String> {
    let mut s = Script::new(data);
    let (ciss, siss) = (s.u32(), s.u32());
    let sack = s.u8() & 1 == 0;
    let mut p = TcpPair::new(ciss, siss, sack);
    for _ in 0..max_ops {
        if s.done() {
            break;
        }
        p.step(&mut s).map_err(|e| format!("{e}\nlast operations:\n{}", p.trace()))?;
    }
    Ok(p.outcome())
}
