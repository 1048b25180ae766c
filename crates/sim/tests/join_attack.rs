//! A third host tries to attach a subflow to someone else's MPTCP
//! connection (RFC 8684 5.1: the token alone is not enough, the MP_JOIN
//! HMACs prove knowledge of both keys). The attacker is a hand-written
//! endpoint plugged into the simulator through an `EndpointFactory`; it
//! learns the server's token as an on-path observer would.

use std::cell::RefCell;
use std::net::Ipv4Addr;
use std::ops::Range;
use std::rc::Rc;

use mplab_proto::Instant;
use mplab_scenario::network::{Flow, Network};
use mplab_scenario::Scenario;
use mplab_sim::apps::StreamSocket;
use mplab_sim::endpoint::{Endpoint, PathStats, Progress};
use mplab_sim::packet::Packet;
use mplab_sim::transport::{EndpointFactory, SimFactory};
use mplab_sim::World;
use mplab_wire::tcp::flags;
use mplab_wire::{MpJoin, MptcpOption, TcpHeader};

const NET: &str = r#"
name = "join-attack"
duration = "8s"
[[nodes]]
name = "client"
[[nodes]]
name = "eve"
[[nodes]]
name = "r"
kind = "router"
[[nodes]]
name = "server"
[[links]]
a = "client"
b = "r"
rate = "20Mbit"
delay = "5ms"
[[links]]
a = "eve"
b = "r"
rate = "20Mbit"
delay = "5ms"
[[links]]
a = "r"
b = "server"
rate = "20Mbit"
delay = "5ms"
[transport.mptcp]
path_manager = "fullmesh"
# One address per host leaves fullmesh no extra subflow; room for one, so
# that the server checks the attacker's join (as a multihomed one would).
limits = { subflows = 1, add_addr_accepted = 0 }
[[flows]]
name = "dl"
from = "client"
to = "server"
transport = "mptcp"
app = "download"
bytes = "8MB"
[[flows]]
name = "eve"
from = "eve"
to = "server"
transport = "tcp"
port = 6000
start = "1s"
"#;

/// What the attacker saw.
#[derive(Default, Debug)]
struct Seen {
    server_token: Option<u32>,
    syn_acks: u32,
    resets: u32,
    /// Payload bytes the server sent on the attacker's subflow.
    payload: u64,
}

/// MP_JOIN with a token (the server's, or a made-up one), then a third
/// ACK whose HMAC it cannot compute.
struct Attacker {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    sport: u16,
    dport: u16,
    seen: Rc<RefCell<Seen>>,
    queue: Vec<TcpHeader>,
}

impl StreamSocket for Attacker {
    fn send_space(&self) -> u64 {
        0
    }
    fn send(&mut self, _n: u64) -> u64 {
        0
    }
    fn readable(&self) -> u64 {
        0
    }
    fn recv(&mut self, _max: u64) -> Range<u64> {
        0..0
    }
    fn close(&mut self) {}
    fn peer_closed(&self) -> bool {
        false
    }
}

impl Endpoint for Attacker {
    fn on_packet(&mut self, _now: Instant, pkt: &Packet) -> Progress {
        let mut seen = self.seen.borrow_mut();
        seen.payload += u64::from(pkt.payload_len);
        if pkt.tcp.rst() {
            seen.resets += 1;
        } else if pkt.tcp.syn() && pkt.tcp.ack_flag() && pkt.tcp.options.mptcp().any(|o| matches!(o, MptcpOption::MpJoin(MpJoin::SynAck { .. }))) {
            seen.syn_acks += 1;
            let mut h = TcpHeader { src_port: self.sport, dst_port: self.dport, seq: pkt.tcp.ack, ack: pkt.tcp.seq.wrapping_add(1), flags: flags::ACK, window: 65535, ..Default::default() };
            // A guess: without both keys the HMAC is as good as random.
            h.options.push_mptcp(MptcpOption::MpJoin(MpJoin::Ack { hmac: [0x5a; 20] })).unwrap();
            self.queue.push(h);
        }
        Progress::default()
    }
    fn poll_transmit_into(&mut self, _now: Instant, out: &mut Packet) -> bool {
        let Some(h) = self.queue.pop() else { return false };
        out.set(self.src, self.dst, &h, 0, 0);
        true
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn on_timeout(&mut self, _now: Instant) -> Progress {
        Progress::default()
    }
    fn is_established(&self) -> bool {
        false
    }
    fn paths(&self) -> Vec<PathStats> {
        Vec::new()
    }
}

/// The simulator's endpoints, except the attacker's flow; remembers the
/// server's token.
struct Factory {
    inner: SimFactory,
    seen: Rc<RefCell<Seen>>,
    /// Use the stolen token (else a made-up one).
    stolen: bool,
}

impl EndpointFactory for Factory {
    fn connect(&mut self, net: &Network, flow: &Flow, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        if flow.name != "eve" {
            return self.inner.connect(net, flow, seed, now);
        }
        let real = self.seen.borrow().server_token.expect("the server's token was seen before t = 1 s");
        let token = if self.stolen { real } else { real ^ 0x0101_0101 };
        let mut syn = TcpHeader { src_port: flow.sport, dst_port: flow.dport, seq: 77, flags: flags::SYN, window: 65535, ..Default::default() };
        syn.options.push_mptcp(MptcpOption::MpJoin(MpJoin::Syn { backup: false, addr_id: 9, token, nonce: 0xfeed })).unwrap();
        Some(Box::new(Attacker { src: flow.src, dst: flow.dst, sport: flow.sport, dport: flow.dport, seen: self.seen.clone(), queue: vec![syn] }))
    }
    fn accept(&mut self, net: &Network, flow: &Flow, local: Ipv4Addr, remote: Ipv4Addr, syn: &Packet, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        let ep = self.inner.accept(net, flow, local, remote, syn, seed, now)?;
        if flow.name == "dl" {
            self.seen.borrow_mut().server_token = ep.token();
        }
        Some(ep)
    }
}

fn attack(stolen: bool) -> (Rc<RefCell<Seen>>, mplab_sim::RunResults, u32) {
    let net = Scenario::from_str(NET, "attack.toml").and_then(|s| s.resolve()).unwrap_or_else(|e| panic!("{e}"));
    let end = Instant(net.duration_ns);
    let seen = Rc::new(RefCell::new(Seen::default()));
    let f = Factory { inner: SimFactory, seen: seen.clone(), stolen };
    let mut w = World::with_factory(net, Box::new(f), None).unwrap();
    w.run_until(end);
    let r = w.finish("sim");
    let token = seen.borrow().server_token.unwrap_or_default();
    (seen, r, token)
}

#[test]
fn a_join_with_the_right_token_but_no_keys_is_reset_and_never_attached() {
    let (seen, r, _) = attack(true);
    let s = seen.borrow();
    // The token finds the connection, which answers the SYN (it cannot
    // tell yet) ...
    assert_eq!(s.syn_acks, 1, "{s:?}");
    // ... and resets the subflow at the wrong third-ACK HMAC.
    assert_eq!(s.resets, 1, "{s:?}");
    // Never a byte of the download on the attacker's subflow, and the
    // download itself is untouched.
    assert_eq!(s.payload, 0);
    let dl = r.summary.flows.iter().find(|f| f.name == "dl").unwrap();
    assert!(dl.completed && dl.verified && !dl.fallback, "{dl:?}");
    assert_eq!(dl.bytes_delivered, 8_000_000);
    // The half-open subflow shows in the server's list (it was reset
    // there), but it never carried a byte.
    let eve = eve_addr(&r);
    let on_eve: Vec<_> = dl.subflows.iter().filter(|p| p.remote.starts_with(&eve)).collect();
    assert!(on_eve.iter().all(|p| p.bytes_sent == 0 && p.goodput_bps == 0.0), "{:?}", dl.subflows);
}

#[test]
fn a_join_with_an_unknown_token_is_refused_with_a_reset() {
    let (seen, r, _) = attack(false);
    let s = seen.borrow();
    assert_eq!((s.syn_acks, s.resets, s.payload), (0, 1, 0), "{s:?}");
    let dl = r.summary.flows.iter().find(|f| f.name == "dl").unwrap();
    assert!(dl.completed && dl.verified, "{dl:?}");
}

/// Eve's address (the first address of its only link), as a prefix.
fn eve_addr(r: &mplab_sim::RunResults) -> String {
    let _ = r;
    let net = Scenario::from_str(NET, "attack.toml").and_then(|s| s.resolve()).unwrap();
    let eve = net.nodes.iter().find(|n| n.name == "eve").unwrap();
    format!("{}:", eve.interfaces[0].addr)
}
