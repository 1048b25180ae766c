//! A SYN flood against a load balancer: forged MP_JOIN SYNs with random
//! tokens from random sources, 10 000 a second for 2 s, into a balancer
//! whose tables hold 500 entries, while eight clients download. The
//! forger is a middlebox on a client's access link that injects segments
//! on its timer. The balancer's tables stay within their bound, every
//! forged join is counted and reset by a server, and the clients' active
//! connections keep their entries (the second chance): every transfer
//! completes with its joins routed by token.

use std::net::Ipv4Addr;

use mplab_proto::Instant;
use mplab_scenario::Scenario;
use mplab_sim::middlebox::{Hook, Middlebox, Place};
use mplab_sim::packet::Packet;
use mplab_sim::World;
use mplab_wire::tcp::flags;
use mplab_wire::{MpJoin, MptcpOption, TcpHeader};

const VIP: Ipv4Addr = Ipv4Addr::new(10, 100, 0, 1);
const FORGED: u64 = 20_000;

struct Forger {
    next_ns: u64,
    gap_ns: u64,
    sent: u64,
    rng: u64,
}

impl Forger {
    fn rand(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }
}

impl Middlebox<Packet> for Forger {
    fn kind(&self) -> &'static str {
        "forger"
    }
    fn process(&mut self, _now: Instant, _at: Hook, pkt: Packet, out: &mut Vec<Packet>) {
        out.push(pkt);
    }
    fn next_deadline(&self) -> Option<Instant> {
        (self.sent < FORGED).then_some(Instant(self.next_ns))
    }
    fn on_timer(&mut self, now: Instant, out: &mut Vec<Packet>) {
        while self.sent < FORGED && self.next_ns <= now.0 {
            let r = self.rand();
            let mut h = TcpHeader { src_port: (r >> 16) as u16 | 1024, dst_port: 5001, seq: r as u32, flags: flags::SYN, window: 65535, ..Default::default() };
            h.options.push_mptcp(MptcpOption::MpJoin(MpJoin::Syn { backup: false, addr_id: 1, token: (r >> 32) as u32, nonce: r as u32 })).unwrap();
            // Sources spoofed over a network nobody routes back to.
            let src = Ipv4Addr::from(0xc612_0000 | (r as u32 & 0xffff));
            out.push(Packet::new(src, VIP, h, 0, 0));
            self.sent += 1;
            self.next_ns += self.gap_ns;
        }
    }
}

#[test]
fn a_join_flood_fills_the_balancer_only_to_its_bound_and_legitimate_transfers_complete() {
    let path = format!("{}/../../scenarios/seed003-lb-ecmp.toml", env!("CARGO_MANIFEST_DIR"));
    let mut sc = Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
    // One instance, tables of 500 entries, clients starting at 1 s (into
    // the flood, which runs from 0.5 s to 2.5 s).
    let mut sets = vec![("topology.balancers", "1".to_string())];
    for i in 0..8 {
        sets.push((["flows.0.start", "flows.1.start", "flows.2.start", "flows.3.start", "flows.4.start", "flows.5.start", "flows.6.start", "flows.7.start"][i], "1s".to_string()));
    }
    sc.set_all(sets.iter().map(|(k, v)| (*k, v.as_str()))).unwrap();
    let mut net = sc.resolve().unwrap_or_else(|e| panic!("{e}"));
    for m in &mut net.middleboxes {
        if let mplab_scenario::network::MiddleboxAction::LoadBalancer { table, .. } = &mut m.action {
            *table = 500;
        }
    }
    let access = net.links.iter().position(|l| l.name == "c7-access0").expect("the generator names access links");
    let end = Instant(net.duration_ns);
    let mut w = World::new(net, None).unwrap();
    w.add_middlebox(Place::Link(2 * access), Box::new(Forger { next_ns: 500_000_000, gap_ns: 100_000, sent: 0, rng: 0x9e37_79b9_7f4a_7c15 }));
    w.run_until(end);
    let r = w.finish("sim");
    let b = &r.summary.balancers[0].stats;
    assert!(b.conn_table.peak <= 500 && b.token_table.peak <= 500, "{b:?}");
    assert!(b.conn_table.evicted > FORGED - 1000, "{b:?}");
    assert_eq!(b.joins, FORGED + 8, "{b:?}");
    assert_eq!(b.joins_by_token, 8, "every legitimate join by its token: {b:?}");
    let refused: u64 = r.summary.servers.iter().map(|s| s.joins_refused).sum();
    assert_eq!(refused, FORGED, "every forged join reset by a server");
    for f in &r.summary.flows {
        assert!(f.completed && f.verified && f.subflows.len() == 2, "{f:?}");
    }
}
