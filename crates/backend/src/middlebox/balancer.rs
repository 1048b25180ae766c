//! The load balancer on a router: segments to its VIP go to the backend
//! the shared balancer core picks ([`crate::balancer`]), by setting
//! the packet's egress interface as a fwmark rule would on Linux; replies
//! from a backend that pass it teach the token mode the server's key.

use std::net::Ipv4Addr;

use mplab_proto::Instant;
use mplab_scenario::network::{BalancerMode, Network};

use super::element::{Hook, Middlebox};
use super::segment::ModelPacket;
use crate::balancer::{Balancer, BalancerConfig, BalancerStats, FlowKey, MptcpSeen, Segment as Seen, Verdict};

/// Idle entries are swept every this many segments (bounded work each).
const SWEEP_EVERY: u64 = 1024;

pub struct LoadBalancer {
    lb: Balancer,
    vip: Ipv4Addr,
    /// The router's interface towards backend `i`.
    iface_of: Vec<u16>,
    /// The backend behind each of the router's interfaces.
    backend_at: Vec<Option<usize>>,
    /// The link to backend `i` (its health: up or down).
    link_of: Vec<usize>,
    seen: u64,
}

impl LoadBalancer {
    /// `node` is the balancer's router; every backend has a link to it
    /// (the scenario checks).
    pub fn new(net: &Network, node: usize, mode: BalancerMode, vip: Ipv4Addr, backends: &[String], table: u64, idle_ns: u64) -> Self {
        let router = &net.nodes[node];
        let mut backend_at = vec![None; router.interfaces.len()];
        let iface_of: Vec<u16> = backends
            .iter()
            .enumerate()
            .map(|(b, name)| {
                let id = net.node(name).map(|n| n.id);
                let i = router.interfaces.iter().find(|i| Some(i.peer) == id).map_or(0, |i| i.index);
                backend_at[i] = Some(b);
                i as u16
            })
            .collect();
        let link_of = iface_of.iter().map(|&i| router.interfaces[usize::from(i)].link).collect();
        let mut cfg = BalancerConfig::new(mode, backends.len());
        cfg.conn_capacity = table as usize;
        cfg.token_capacity = table as usize;
        cfg.idle_ns = idle_ns;
        // Every instance of one scenario hashes alike: ECMP may send a
        // connection's segments through any of them.
        cfg.seed = net.seed;
        LoadBalancer { lb: Balancer::new(cfg), vip, iface_of, backend_at, link_of, seen: 0 }
    }

    pub fn stats(&self) -> BalancerStats {
        self.lb.stats()
    }
}

fn segment<P: ModelPacket>(p: &P) -> Seen {
    let t = p.tcp();
    Seen {
        key: FlowKey { src: p.src(), dst: p.dst(), sport: t.src_port, dport: t.dst_port },
        syn: t.syn(),
        ack: t.ack_flag(),
        mptcp: MptcpSeen::from_options(&t.options),
    }
}

impl<P: ModelPacket> Middlebox<P> for LoadBalancer {
    fn kind(&self) -> &'static str {
        "load_balancer"
    }

    fn process(&mut self, now: Instant, at: Hook, mut pkt: P, out: &mut Vec<P>) {
        let Hook::Ingress { iface } = at else {
            out.push(pkt);
            return;
        };
        let t = now.as_nanos();
        if pkt.dst() == self.vip {
            self.seen += 1;
            if self.seen % SWEEP_EVERY == 0 {
                self.lb.housekeeping(t);
            }
            match self.lb.forward(t, &segment(&pkt)) {
                Verdict::Backend(b) => {
                    pkt.set_egress(self.iface_of[b]);
                    out.push(pkt);
                }
                Verdict::Drop => {}
            }
            return;
        }
        if pkt.src() == self.vip {
            if let Some(b) = self.backend_at.get(iface).copied().flatten() {
                self.lb.observe_reply(t, b, &segment(&pkt));
            }
        }
        out.push(pkt);
    }

    fn note(&self, at: &str) -> Option<String> {
        let s = self.lb.stats();
        Some(format!(
            "load balancer at {at} ({}): {} connections {:?}, {} joins ({} by token, {} unknown token), {} token collisions, connection table {} (peak {}, {} evicted, {} expired)",
            self.lb.mode().name(),
            s.connections_to.iter().sum::<u64>(),
            s.connections_to,
            s.joins,
            s.joins_by_token,
            s.joins_unknown_token,
            s.token_collisions,
            s.conn_table.size,
            s.conn_table.peak,
            s.conn_table.evicted,
            s.conn_table.expired
        ))
    }

    /// A health check that sees a backend's link state at once (real ones
    /// take a few probe intervals).
    fn on_link_state(&mut self, link: usize, up: bool) {
        for (b, &l) in self.link_of.iter().enumerate() {
            if l == link {
                self.lb.set_up(b, up);
            }
        }
    }

    fn balancer_stats(&self) -> Option<BalancerStats> {
        Some(self.lb.stats())
    }
}
