//! The fabric: the packet pool, links and their wake-ups, forwarding with
//! policy routing and ECMP, middleboxes and NAT on the path, interface
//! counters and captures, and the scenario's timed link events.

use std::net::Ipv4Addr;

use mplab_proto::Instant;
use rustc_hash::FxHashMap as HashMap;
use mplab_scenario::network::{self};

use crate::link::{LinkDirection, Offer};
use crate::middlebox::{Hook, Place};
use crate::packet::{flow_hash, Ecmp, NO_ADDR};
use crate::rng::SimRng;
use crate::config;

use super::pool::split_hash;
use super::*;

pub(super) struct LinkRt {
    pub(super) dirs: [LinkDirection<Hop>; 2],
    pub(super) rng: [SimRng; 2],
    /// A cellular radio both directions wait for when it sleeps.
    pub(super) radio: Option<mplab_backend::link::Radio>,
}

/// What a wake-up of link direction `2 * link + dir` needs besides the
/// link itself, kept in small dense arrays (a few kilobytes even for a
/// data centre) that stay in cache, rather than beside the link's queues.
pub(super) struct WakeRt {
    /// The pending wake-up: at most one event in the queue per direction.
    pub(super) at: Option<Instant>,
    /// (node, iface) receiving what this direction delivers.
    pub(super) to: (u32, u32),
}

#[derive(Default, Clone, Copy)]
pub(super) struct IfCounters {
    pub(super) tx_bytes: u64,
    pub(super) rx_bytes: u64,
    pub(super) last_tx: u64,
    pub(super) last_rx: u64,
}

/// One way out of a node: the interface and the link direction behind it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Egress {
    pub(super) link: u32,
    pub(super) iface: u16,
    pub(super) dir: u8,
}

pub(super) struct NodeRt {
    pub(super) router: bool,
    /// Chooses among equal-cost next hops (`Network.ecmp`).
    pub(super) ecmp: Ecmp,
    /// Forwarding cache by destination index (routers, and hosts without
    /// policy rules), filled on first use: see [`FIB_UNKNOWN`].
    pub(super) fib: Vec<u32>,
    /// ECMP next-hop lists the fib points into. Each member carries its
    /// link direction, so a hop does not look the interface up again.
    pub(super) hops: Vec<Egress>,
    /// Policy-routed lookups of hosts: (source, destination index) -> egress.
    pub(super) policy_fib: HashMap<(u32, u32), Box<[Egress]>>,
    pub(super) counters: Vec<IfCounters>,
    /// (link, direction) leaving through each interface.
    pub(super) egress: Vec<(usize, u8)>,
}

impl World {
    // ---- links -----------------------------------------------------------

    #[inline(always)]
    pub(super) fn schedule_link(&mut self, link: usize, dir: usize) {
        if let Some(t) = self.links[link].dirs[dir].next_wakeup() {
            let w = &mut self.wakes[2 * link + dir].at;
            if w.is_none_or(|w| t < w) {
                *w = Some(t);
                self.queue.schedule(t.max(self.now), Ev::LinkWake { link: link as u32, dir: dir as u8 });
            }
        }
    }

    pub(super) fn link_wake(&mut self, link: usize, dir: usize) {
        let w = &mut self.wakes[2 * link + dir];
        if w.at != Some(self.now) {
            // A stale wake-up (an earlier one was scheduled after it).
            if w.at.is_some_and(|w| w > self.now) {
                return;
            }
        }
        w.at = None;
        let (node, iface) = (w.to.0 as usize, w.to.1 as usize);
        while let Some(d) = self.links[link].dirs[dir].deliver(self.now) {
            self.receive(node, iface, d.packet);
        }
        self.schedule_link(link, dir);
    }

    /// Returns to the pool what a link will never deliver.
    #[inline(always)]
    pub(super) fn reclaim(&mut self, link: usize, dir: usize) {
        self.links[link].dirs[dir].take_discarded(&mut self.dropped);
        for h in self.dropped.drain(..) {
            self.pool.free.push(h.id);
        }
    }

    /// Puts a packet on the link behind `iface` of `node`, through the
    /// node's boxes (as it leaves) and the link direction's. Like a Linux
    /// interface counter (and tcpdump), only what the queue accepted counts.
    #[inline(always)]
    pub(super) fn transmit(&mut self, node: usize, out: Egress, h: Hop) {
        let (link, dir, iface) = (out.link as usize, out.dir as usize, out.iface as usize);
        if self.boxes.on_node(node) {
            let local = self.net.nodes[node].owns(self.pool.pkts[h.id as usize].src);
            for h in self.through_boxes(h, Place::Node(node), Hook::Egress { iface, local }) {
                self.onto_link(node, iface, link, dir, h);
            }
            return;
        }
        self.onto_link(node, iface, link, dir, h);
    }

    #[inline(always)]
    fn onto_link(&mut self, node: usize, iface: usize, link: usize, dir: usize, h: Hop) {
        if self.boxes.on_link(2 * link + dir) {
            for h in self.through_boxes(h, Place::Link(2 * link + dir), Hook::Link) {
                self.offer(node, iface, link, dir, h);
            }
            return;
        }
        self.offer(node, iface, link, dir, h);
    }

    /// Recomputes what forwarding keeps about a packet whose addresses or
    /// ports a middlebox rewrote.
    pub(super) fn refresh_hop(&mut self, h: &mut Hop) {
        let p = &self.pool.pkts[h.id as usize];
        h.flow_hash = split_hash(flow_hash(p.flow_key()));
        h.dst_idx = self.addr_idx.get(&u32::from(p.dst)).copied().unwrap_or(NO_ADDR);
        h.set_size_ttl(p.size, h.ttl());
    }

    #[inline(always)]
    pub(super) fn offer(&mut self, node: usize, iface: usize, link: usize, dir: usize, h: Hop) {
        let l = &mut self.links[link];
        if l.dirs[dir].duplicates(&mut l.rng[dir]) {
            // The copy is made before the original may be dropped (its
            // slot freed); it queues right behind it.
            let c = self.pool.copy(h);
            self.offer_one(node, iface, link, dir, h);
            self.offer_one(node, iface, link, dir, c);
            return;
        }
        self.offer_one(node, iface, link, dir, h);
    }

    #[inline(always)]
    fn offer_one(&mut self, node: usize, iface: usize, link: usize, dir: usize, h: Hop) {
        let l = &mut self.links[link];
        let at = l.radio.as_mut().map_or(self.now, |r| Instant(r.offer_at(self.now.0)));
        if let Offer::Queued = l.dirs[dir].offer(at, h, h.size(), &mut l.rng[dir]) {
            let at = l.dirs[dir].last_end();
            self.capture(node, iface, h.id, at);
        }
        self.reclaim(link, dir);
        self.schedule_link(link, dir);
    }

    pub(super) fn capture(&mut self, node: usize, iface: usize, id: u32, at: Instant) {
        if let Some(c) = self.pcaps.get_mut(&(node, iface)) {
            c.record(at, self.now, &self.pool.pkts[id as usize]);
        }
    }

    /// Interface counters are the links': transmitted bytes are those the
    /// outgoing direction serialised by now, received bytes those the
    /// incoming direction delivered (every delivery goes to `receive`).
    /// Reading them here, not counting per packet, spares each hop a write
    /// to the node's counter array (a cache miss on large topologies).
    pub(super) fn sync_if_counters(&mut self) {
        for n in self.nodes.iter_mut() {
            for (c, &(link, dir)) in n.counters.iter_mut().zip(&n.egress) {
                if link == usize::MAX {
                    continue; // an interface without a link
                }
                let out = &mut self.links[link].dirs[dir as usize];
                out.advance(self.now);
                c.tx_bytes = out.stats().tx_bytes;
                c.rx_bytes = self.links[link].dirs[1 - dir as usize].stats().delivered_bytes;
            }
        }
    }

    // ---- nodes -----------------------------------------------------------

    pub(super) fn receive(&mut self, node: usize, iface: usize, h: Hop) {
        self.capture(node, iface, h.id, self.now);
        if h.dst_idx == NO_ADDR {
            self.pool.release(h); // nobody has that address
            return;
        }
        if self.hybrid.converter_at[node].is_some() && self.converter_takes(node, iface, h) {
            self.deliver_local(node, h.id);
            self.pool.release(h);
            return;
        }
        if !self.hybrid.gateways[node].is_empty() && self.tunnel_ingress(node, iface, h) {
            return;
        }
        if self.boxes.on_node(node) {
            for h in self.through_boxes(h, Place::Node(node), Hook::Ingress { iface }) {
                self.deliver_or_forward(node, h);
            }
            return;
        }
        self.deliver_or_forward(node, h);
    }

    /// Whether `node` holds the address of index `idx`.
    pub(super) fn owns(&self, node: usize, idx: u32) -> bool {
        let o = self.addr_owner[idx as usize];
        o == node as u32 || (o == super::SHARED && self.shared.contains(&(node as u32, idx)))
    }

    #[inline(always)]
    fn deliver_or_forward(&mut self, node: usize, mut h: Hop) {
        if h.dst_idx != NO_ADDR && self.owns(node, h.dst_idx) {
            self.deliver_local(node, h.id);
            self.pool.release(h);
            return;
        }
        if !self.nodes[node].router || h.ttl() <= 1 || h.dst_idx == NO_ADDR {
            // Hosts do not forward; an expired TTL is dropped (no ICMP here).
            self.pool.release(h);
            return;
        }
        h.set_size_ttl(h.size(), h.ttl() - 1);
        self.stats.packets_forwarded += 1;
        if self.boxes.on_node(node) {
            for h in self.through_boxes(h, Place::Node(node), Hook::Forward) {
                self.route_out(node, None, h);
            }
            return;
        }
        self.route_out(node, None, h);
    }

    /// Chooses the egress interface (policy routing by source on hosts,
    /// ECMP per flow on routers, by salted hash or remembered random
    /// choice) and transmits.
    #[inline]
    pub(super) fn route_out(&mut self, node: usize, policy_src: Option<Ipv4Addr>, h: Hop) {
        let (flow_hash, dst_idx, id) = (h.flow_hash(), h.dst_idx, h.id);
        // A middlebox here may have chosen the interface (a balancer's
        // backend); only nodes with boxes look, so plain hops never touch
        // the packet.
        if self.boxes.on_node(node) {
            if let Some(iface) = self.pool.pkts[id as usize].via.take() {
                let (link, dir) = self.nodes[node].egress[iface as usize];
                self.transmit(node, Egress { link: link as u32, iface, dir }, h);
                return;
            }
        }
        let spec = &self.net.nodes[node];
        let n = &mut self.nodes[node];
        let dst = || self.pool.pkts[id as usize].dst;
        let egress = &n.egress;
        let lookup = |src: Option<Ipv4Addr>| -> Box<[Egress]> {
            match spec.lookup(src, dst()) {
                Some(r) => r
                    .nexthops
                    .iter()
                    .map(|h| {
                        let (link, dir) = egress[h.iface];
                        Egress { link: link as u32, iface: h.iface as u16, dir }
                    })
                    .collect(),
                None => Box::new([]),
            }
        };
        let iface = match policy_src {
            // Only multi-homed hosts have policy rules; the others share the fib.
            Some(src) if !spec.routing.rules.is_empty() => {
                let hops = n.policy_fib.entry((u32::from(src), dst_idx)).or_insert_with(|| lookup(Some(src)));
                match hops.len() {
                    0 => None,
                    1 => Some(hops[0]),
                    _ => Some(n.ecmp.pick(flow_hash, hops, |e| e.iface)),
                }
            }
            // An address no node has (a reset to a spoofed source): looked up
            // afresh, not cached, so it leaves by the route to it and the
            // next router drops it.
            _ if dst_idx == NO_ADDR => {
                let hops = lookup(None);
                match hops.len() {
                    0 => None,
                    1 => Some(hops[0]),
                    _ => Some(n.ecmp.pick(flow_hash, &hops, |e| e.iface)),
                }
            }
            _ => {
                let di = dst_idx as usize;
                if n.fib.len() <= di {
                    n.fib.resize(self.addr_owner.len(), FIB_UNKNOWN);
                }
                if n.fib[di] == FIB_UNKNOWN {
                    let hops = lookup(None);
                    let hops = &hops[..hops.len().min(255)];
                    // Destinations reached the same way (every address up
                    // an edge or aggregation switch) share one copy of
                    // their next hops, so the table stays a few lines.
                    let start = match n.hops.windows(hops.len().max(1)).position(|w| w == hops) {
                        Some(at) if !hops.is_empty() => at,
                        _ => {
                            n.hops.extend_from_slice(hops);
                            n.hops.len() - hops.len()
                        }
                    };
                    n.fib[di] = (start as u32) << 8 | hops.len() as u32;
                }
                let e = n.fib[di];
                let (start, k) = ((e >> 8) as usize, (e & 0xff) as usize);
                match k {
                    0 => None,
                    1 => Some(n.hops[start]),
                    k => Some(n.ecmp.pick(flow_hash, &n.hops[start..start + k], |e| e.iface)),
                }
            }
        };
        match iface {
            Some(out) => self.transmit(node, out, h),
            None => self.pool.release(h), // no route: dropped like an ICMP unreachable would say
        }
    }

    // ---- scenario events -------------------------------------------------

    pub(super) fn scenario_event(&mut self, idx: usize) {
        let ev = self.net.events[idx].clone();
        let now = self.now;
        match ev.action {
            network::LinkAction::RemoveAddr { node, addr, .. } => return self.set_addr_in_service(node, addr, false),
            network::LinkAction::AddAddr { node, addr, .. } => return self.set_addr_in_service(node, addr, true),
            network::LinkAction::Prio { node, addr, backup, .. } => return self.set_addr_backup(node, addr, backup),
            _ => {}
        }
        let dirs: &[usize] = match &ev.action {
            network::LinkAction::Set { direction: network::Direction::Ab, .. } => &[0],
            network::LinkAction::Set { direction: network::Direction::Ba, .. } => &[1],
            _ => &[0, 1],
        };
        for &d in dirs {
            let l = &mut self.links[ev.link].dirs[d];
            match ev.action {
                network::LinkAction::Down => l.set_up(now, false),
                network::LinkAction::Up => l.set_up(now, true),
                network::LinkAction::Set { rate_bps, delay_ns, jitter_ns, loss, .. } => {
                    if let Some(r) = rate_bps {
                        l.set_rate(now, r);
                    }
                    if let Some(dl) = delay_ns {
                        l.set_delay(now, std::time::Duration::from_nanos(dl));
                    }
                    if let Some(j) = jitter_ns {
                        l.set_jitter(l.params().jitter.with_scale(std::time::Duration::from_nanos(j)));
                    }
                    if let Some(p) = loss {
                        l.set_loss(config::loss_model(p, None));
                    }
                }
                network::LinkAction::RemoveAddr { .. } | network::LinkAction::AddAddr { .. } | network::LinkAction::Prio { .. } => {}
            }
            self.reclaim(ev.link, d);
            self.schedule_link(ev.link, d);
        }
        if let network::LinkAction::Down | network::LinkAction::Up = ev.action {
            // What a router's health checks would see.
            self.boxes.link_state(ev.link, matches!(ev.action, network::LinkAction::Up));
        }
    }

}
