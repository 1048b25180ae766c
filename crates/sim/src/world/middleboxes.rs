//! Running the middleboxes: every kind through one path (a packet in,
//! packets out) and one timer event per box. A place with several boxes
//! chains them in the scenario's order.

use mplab_proto::Instant;
use mplab_scenario::network::{Network, Placement};

use crate::middlebox::{self, Built, Hook, Middlebox, Place};
use crate::packet::Packet;

use super::*;

/// One box and where it sits.
pub(super) struct BoxRt {
    mb: Box<dyn Middlebox<Packet>>,
    place: Place,
    /// The time its timer event is queued for, if one is.
    armed: Option<Instant>,
    /// It acts on packets from this time (ns) until that one; outside,
    /// they pass untouched (its timer still releases what it holds).
    from_ns: u64,
    until_ns: Option<u64>,
}

/// The network's middleboxes, indexed for the per-packet path.
#[derive(Default)]
pub(super) struct Boxes {
    all: Vec<BoxRt>,
    /// Box indices per link direction (`2 * link + dir`) and per node, in
    /// the scenario's order.
    on_link: Vec<Vec<u32>>,
    on_node: Vec<Vec<u32>>,
    /// Some link direction / some node has a box: without them a hop skips
    /// the per-place lookups (each a likely cache miss on large topologies).
    pub(super) any_on_links: bool,
    pub(super) any_on_nodes: bool,
    /// The box sharing state with each box, if any (see
    /// `middlebox::Built::Pair`).
    partner: Vec<Option<u32>>,
    /// Emptied packet vectors, reused so a packet through a box costs no
    /// allocation.
    spare: Vec<Vec<Packet>>,
}

impl Boxes {
    pub(super) fn new(net: &Network) -> Boxes {
        let mut b = Boxes { on_link: vec![Vec::new(); 2 * net.links.len()], on_node: vec![Vec::new(); net.nodes.len()], ..Default::default() };
        for m in &net.middleboxes {
            for place in middlebox::places(&m.placement) {
                match middlebox::build::<Packet>(&m.action, net, place) {
                    Built::One(mb) => {
                        b.insert_window(place, mb, m.from_ns, m.until_ns);
                    }
                    Built::Pair([ab, ba]) => {
                        let Placement::Link { link, .. } = m.placement else { unreachable!("a pair sits on a link") };
                        let x = b.insert_window(Place::Link(2 * link), ab, m.from_ns, m.until_ns);
                        let y = b.insert_window(Place::Link(2 * link + 1), ba, m.from_ns, m.until_ns);
                        b.partner[x as usize] = Some(y);
                        b.partner[y as usize] = Some(x);
                        break;
                    }
                }
            }
        }
        b
    }

    /// Adds a box after those already at `place`, acting for the whole run.
    pub(super) fn insert(&mut self, place: Place, mb: Box<dyn Middlebox<Packet>>) -> u32 {
        self.insert_window(place, mb, 0, None)
    }

    /// Adds a box after those already at `place`, acting from `from_ns`
    /// until `until_ns`.
    fn insert_window(&mut self, place: Place, mb: Box<dyn Middlebox<Packet>>, from_ns: u64, until_ns: Option<u64>) -> u32 {
        let id = self.all.len() as u32;
        self.all.push(BoxRt { mb, place, armed: None, from_ns, until_ns });
        self.partner.push(None);
        match place {
            Place::Link(i) => self.on_link[i].push(id),
            Place::Node(n) => self.on_node[n].push(id),
        }
        self.any_on_links |= matches!(place, Place::Link(_));
        self.any_on_nodes |= matches!(place, Place::Node(_));
        id
    }

    #[inline]
    pub(super) fn on_link(&self, i: usize) -> bool {
        self.any_on_links && !self.on_link[i].is_empty()
    }

    #[inline]
    pub(super) fn on_node(&self, n: usize) -> bool {
        self.any_on_nodes && !self.on_node[n].is_empty()
    }

    fn chain_mut(&mut self, place: Place) -> &mut Vec<u32> {
        match place {
            Place::Link(i) => &mut self.on_link[i],
            Place::Node(n) => &mut self.on_node[n],
        }
    }

    fn spare(&mut self) -> Vec<Packet> {
        self.spare.pop().unwrap_or_default()
    }

    fn give_back(&mut self, mut v: Vec<Packet>) {
        v.clear();
        self.spare.push(v);
    }

    /// The boxes' lines for the run's notes.
    pub(super) fn notes(&self, net: &Network) -> Vec<String> {
        self.all
            .iter()
            .filter_map(|b| {
                let at = match b.place {
                    Place::Link(i) => format!("link {} ({})", net.links[i / 2].name, crate::summary::DIR_NAMES[i % 2]),
                    Place::Node(n) => format!("node {}", net.nodes[n].name),
                };
                b.mb.note(&at)
            })
            .collect()
    }
}

impl Boxes {
    /// Tells every box that `link` went down or came back.
    pub(super) fn link_state(&mut self, link: usize, up: bool) {
        for b in &mut self.all {
            b.mb.on_link_state(link, up);
        }
    }

    /// The attackers' reports: (link, report).
    pub(super) fn attack_reports(&self) -> Vec<(usize, mplab_backend::attack::AttackReport)> {
        self.all
            .iter()
            .filter_map(|b| match b.place {
                Place::Link(i) => b.mb.attack_report().map(|r| (i / 2, r)),
                Place::Node(_) => None,
            })
            .collect()
    }

    /// The load balancers' counters: (router, counters).
    pub(super) fn balancer_stats(&self) -> Vec<(usize, mplab_backend::balancer::BalancerStats)> {
        self.all
            .iter()
            .filter_map(|b| match b.place {
                Place::Node(n) => b.mb.balancer_stats().map(|s| (n, s)),
                Place::Link(_) => None,
            })
            .collect()
    }
}

impl World {
    /// Places a middlebox of the caller's own (one the scenario format does
    /// not know) after the scenario's boxes at `place`; call it before the
    /// run starts.
    pub fn add_middlebox(&mut self, place: Place, mb: Box<dyn Middlebox<Packet>>) {
        // A box with a deadline of its own (one that injects packets) gets
        // its timer now, not when a first packet passes it.
        let id = self.boxes.insert(place, mb);
        self.arm(id);
    }

    /// Runs a packet through the boxes at `place`, seen at hook `at`;
    /// returns what comes out now (none when a box keeps it, several when
    /// one splits it or releases held ones).
    pub(super) fn through_boxes(&mut self, h: Hop, place: Place, at: Hook) -> Vec<Hop> {
        let mut pkts = self.boxes.spare();
        let mut p = self.pool.pkts[h.id as usize].clone();
        p.ttl = h.ttl();
        self.pool.release(h);
        pkts.push(p);
        self.run_chain(place, 0, at, &mut pkts);
        self.into_hops(pkts)
    }

    /// Runs `pkts` through the boxes at `place` from position `from` of its
    /// chain on; `pkts` holds what comes out.
    fn run_chain(&mut self, place: Place, from: usize, at: Hook, pkts: &mut Vec<Packet>) {
        // Boxes are only added before the run, and a box never calls back
        // into the world, so the chain can be lent out while it runs.
        let chain = std::mem::take(self.boxes.chain_mut(place));
        let now_ns = self.now.as_nanos();
        for &b in chain.iter().skip(from) {
            let rt = &self.boxes.all[b as usize];
            if now_ns < rt.from_ns || rt.until_ns.is_some_and(|u| now_ns >= u) {
                continue;
            }
            let mut out = self.boxes.spare();
            for p in pkts.drain(..) {
                // Every middlebox kind models a TCP device (options, sequence
                // numbers, 4-tuples of TCP connections): SCTP and UDP go
                // through them untouched, as through a box that forwards
                // what it does not parse.
                if !p.is_tcp() {
                    out.push(p);
                    continue;
                }
                self.boxes.all[b as usize].mb.process(self.now, at, p, &mut out);
            }
            self.arm(b);
            if let Some(p) = self.boxes.partner[b as usize] {
                self.arm(p);
            }
            let done = std::mem::replace(pkts, out);
            self.boxes.give_back(done);
        }
        *self.boxes.chain_mut(place) = chain;
    }

    /// Back into the pool, with what forwarding keeps recomputed (a box may
    /// have rewritten addresses, ports or sizes).
    fn into_hops(&mut self, mut pkts: Vec<Packet>) -> Vec<Hop> {
        let mut hops = Vec::with_capacity(pkts.len());
        for q in pkts.drain(..) {
            let mut h = self.pool.put(q);
            self.refresh_hop(&mut h);
            hops.push(h);
        }
        self.boxes.give_back(pkts);
        hops
    }

    /// Queues box `b`'s timer if it wants one sooner than the one queued.
    fn arm(&mut self, b: u32) {
        let rt = &mut self.boxes.all[b as usize];
        if let Some(d) = rt.mb.next_deadline() {
            // A deadline already past fires now, and is remembered as now,
            // or `box_timer` would never clear it and no later one arm.
            let d = d.max(self.now);
            if rt.armed.map_or(true, |a| d < a) {
                rt.armed = Some(d);
                self.queue.schedule(d, Ev::BoxTimer { boxid: b });
            }
        }
    }

    /// Box `b`'s timer: what it releases continues through the boxes after
    /// it, then onto its link, or is routed by its node as forwarded.
    pub(super) fn box_timer(&mut self, b: u32) {
        let rt = &mut self.boxes.all[b as usize];
        if rt.armed == Some(self.now) {
            rt.armed = None;
        }
        let place = rt.place;
        let mut out = Vec::new();
        rt.mb.on_timer(self.now, &mut out);
        self.arm(b);
        if let Some(p) = self.boxes.partner[b as usize] {
            self.arm(p);
        }
        if out.is_empty() {
            return;
        }
        let chain = self.boxes.chain_mut(place);
        let next = chain.iter().position(|&x| x == b).map_or(chain.len(), |i| i + 1);
        let at = if matches!(place, Place::Link(_)) { Hook::Link } else { Hook::Forward };
        self.run_chain(place, next, at, &mut out);
        for h in self.into_hops(out) {
            match place {
                Place::Link(i) => {
                    let (link, dir) = (i / 2, i % 2);
                    let l = &self.net.links[link];
                    let end = if dir == 0 { &l.a } else { &l.b };
                    let (node, iface) = (end.node, end.iface);
                    self.offer(node, iface, link, dir, h);
                }
                Place::Node(n) => self.route_out(n, None, h),
            }
        }
    }
}
