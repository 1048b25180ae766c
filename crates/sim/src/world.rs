//! The simulated world: nodes, links, flows and probes from a resolved
//! scenario, driven by one event queue in virtual time.
//!
//! Event sources are small (htsim's idea): each link direction keeps at most
//! one pending wake-up, each flow end one timer, and packets move between
//! them without any per-hop allocation.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use mplab_proto::Instant;
use rustc_hash::FxHashMap as HashMap;
use mplab_scenario::network::{self, Network, NodeKind};

use crate::apps::{App, AppKind};
use crate::capture::Capture;
use crate::endpoint::{Endpoint, Progress};
use crate::event::EventQueue;
use crate::link::{LinkDirection, Offer};
use crate::middlebox::Place;
use crate::packet::{flow_hash, Ecmp, Packet, ECMP_STREAM_BASE, NO_ADDR};
use crate::results::*;
use crate::rng::{RngStreams, SimRng};
use crate::summary::{self, FlowOutcome, DIR_NAMES};
use crate::transport::{self, EndpointFactory};
use crate::config;

/// Everything that happens in the simulation.
#[derive(Debug, Clone, Copy)]
enum Ev {
    /// A link direction may have a packet to deliver or to start sending.
    LinkWake { link: u32, dir: u8 },
    /// Transport or application timer of one flow end (0 = client).
    FlowTimer { flow: u32, end: u8 },
    FlowStart { flow: u32 },
    /// A scheduled scenario event (link down/up/set).
    Scenario { idx: u32 },
    Sample,
    /// A coalescing middlebox's flush timer for one of its held segments.
    CoalesceFlush { boxid: u32, slot: u32 },
}

/// Packets in flight live here; links and queues move [`Hop`] handles,
/// not 400-byte packets (htsim's packet pool, for the same reason).
#[derive(Default)]
struct Pool {
    pkts: Vec<Packet>,
    free: Vec<u32>,
}

/// What forwarding needs of a packet, carried by value through the links'
/// queues beside the packet's pool slot: a router hop reads the 20 bytes
/// that arrive with the link's delivery and never touches the packet (a
/// separate metadata array cost a cache miss per hop on large runs).
///
/// 20 bytes with 4-byte alignment (the hash kept as two halves, size and
/// TTL sharing a word), so that a link's flight entry (arrival, size, hop)
/// is exactly 32 bytes: two entries per cache line, none across two.
#[derive(Clone, Copy, Debug, Default)]
struct Hop {
    /// [`flow_hash`] of the 5-tuple, low half first.
    flow_hash: [u32; 2],
    /// Pool slot of the packet.
    id: u32,
    dst_idx: u32,
    /// Wire size (bytes) `<< 8` | the IP TTL. Routers decrement the TTL
    /// here rather than in the packet.
    size_ttl: u32,
}

/// The largest wire size a [`Hop`] carries (24 bits). Segments are at most
/// 64 KiB (the MSS is a 16-bit option), coalesced ones twice that.
const HOP_MAX_SIZE: u32 = (1 << 24) - 1;

impl Hop {
    fn of(id: u32, p: &Packet) -> Hop {
        let mut h = Hop { flow_hash: split_hash(flow_hash(p.flow_key())), id, dst_idx: p.dst_idx, size_ttl: 0 };
        h.set_size_ttl(p.size, p.ttl);
        h
    }

    #[inline]
    fn flow_hash(&self) -> u64 {
        u64::from(self.flow_hash[1]) << 32 | u64::from(self.flow_hash[0])
    }

    #[inline]
    fn size(&self) -> u32 {
        self.size_ttl >> 8
    }

    #[inline]
    fn ttl(&self) -> u8 {
        self.size_ttl as u8
    }

    #[inline]
    fn set_size_ttl(&mut self, size: u32, ttl: u8) {
        debug_assert!(size <= HOP_MAX_SIZE, "packet of {size} bytes");
        self.size_ttl = size.min(HOP_MAX_SIZE) << 8 | u32::from(ttl);
    }
}

#[inline]
fn split_hash(h: u64) -> [u32; 2] {
    [h as u32, (h >> 32) as u32]
}

const _: () = assert!(std::mem::size_of::<Hop>() == 20);

impl Pool {
    fn put(&mut self, p: Packet) -> Hop {
        match self.free.pop() {
            Some(id) => {
                let h = Hop::of(id, &p);
                self.pkts[id as usize] = p;
                h
            }
            None => {
                let id = self.pkts.len() as u32;
                let h = Hop::of(id, &p);
                self.pkts.push(p);
                h
            }
        }
    }
    /// A slot to build a packet in (see `Endpoint::poll_transmit_into`);
    /// handed back with `unalloc` if nothing was built. The free list ends
    /// as `put` would leave it, so slot numbers do not change.
    fn alloc(&mut self) -> u32 {
        match self.free.pop() {
            Some(id) => id,
            None => {
                self.pkts.push(Packet::new(Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, mplab_wire::TcpHeader::default(), 0, 0));
                (self.pkts.len() - 1) as u32
            }
        }
    }
    fn unalloc(&mut self, id: u32) {
        self.free.push(id);
    }
    fn release(&mut self, h: Hop) {
        self.free.push(h.id);
    }
}

struct LinkRt {
    dirs: [LinkDirection<Hop>; 2],
    rng: [SimRng; 2],
}

/// What a wake-up of link direction `2 * link + dir` needs besides the
/// link itself, kept in small dense arrays (a few kilobytes even for a
/// data centre) that stay in cache, rather than beside the link's queues.
struct WakeRt {
    /// The pending wake-up: at most one event in the queue per direction.
    at: Option<Instant>,
    /// (node, iface) receiving what this direction delivers.
    to: (u32, u32),
}

#[derive(Default, Clone, Copy)]
struct IfCounters {
    tx_bytes: u64,
    rx_bytes: u64,
    last_tx: u64,
    last_rx: u64,
}

/// One way out of a node: the interface and the link direction behind it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Egress {
    link: u32,
    iface: u16,
    dir: u8,
}

struct NodeRt {
    router: bool,
    /// Chooses among equal-cost next hops (`Network.ecmp`).
    ecmp: Ecmp,
    /// Forwarding cache by destination index (routers, and hosts without
    /// policy rules), filled on first use: see [`FIB_UNKNOWN`].
    fib: Vec<u32>,
    /// ECMP next-hop lists the fib points into. Each member carries its
    /// link direction, so a hop does not look the interface up again.
    hops: Vec<Egress>,
    /// Policy-routed lookups of hosts: (source, destination index) -> egress.
    policy_fib: HashMap<(u32, u32), Box<[Egress]>>,
    counters: Vec<IfCounters>,
    /// (link, direction) leaving through each interface.
    egress: Vec<(usize, u8)>,
}

/// Runtime state of one flow end.
struct End {
    ep: Option<Box<dyn Endpoint>>,
    app: App,
    timer_at: Option<Instant>,
    connected_at: Option<Instant>,
    misplaced: bool,
    /// Rewritten payload was accepted (see [`Progress::corrupted`]).
    corrupted: bool,
}

struct FlowRt {
    ends: [End; 2],
    start: Instant,
    last_delivered: u64,
    srtt_sum_ns: f64,
    srtt_samples: u64,
    last_path_acked: Vec<u64>,
}

/// How a run went, for the summary line.
#[derive(Debug, Clone, Default)]
pub struct RunStats {
    pub events: u64,
    pub packets_forwarded: u64,
    /// RSTs the hosts sent for segments no connection wanted.
    pub resets_sent: u64,
}

pub struct World {
    now: Instant,
    end: Instant,
    queue: EventQueue<Ev>,
    net: Network,
    links: Vec<LinkRt>,
    /// Per link direction, `2 * link + dir`.
    wakes: Vec<WakeRt>,
    nodes: Vec<NodeRt>,
    flows: Vec<FlowRt>,
    /// (node, local ip, local port, remote ip, remote port) -> (flow, end).
    demux: HashMap<DemuxKey, (u32, u8)>,
    /// (node, MPTCP token) -> (flow, end): how an MP_JOIN finds its connection.
    tokens: HashMap<(u32, u32), (u32, u8)>,
    /// (node, local port) -> flow listening there.
    listeners: HashMap<(u32, u16), u32>,
    factory: Box<dyn EndpointFactory>,
    rng: RngStreams,
    interval: Instant,
    results: RunResults,
    pcaps: HashMap<(usize, usize), Capture>,
    pub stats: RunStats,
    pool: Pool,
    /// Every interface address -> dense index; and the node owning each.
    addr_idx: HashMap<u32, u32>,
    addr_owner: Vec<u32>,
    mbox: crate::middlebox::Middleboxes,
    /// Some link direction / some node has a middlebox, some node a NAT:
    /// without them a hop skips those per-place lookups (each a likely
    /// cache miss on large topologies).
    boxes_on_links: bool,
    boxes_on_nodes: bool,
    any_nat: bool,
    nats: Vec<Option<crate::nat::Nat>>,
    /// Reused buffer for packets a link discarded.
    dropped: Vec<Hop>,
    /// Reused for the segments one endpoint emits in one service call.
    out_buf: Vec<(Hop, Ipv4Addr)>,
}


/// (node, local ip, local port, remote ip, remote port).
type DemuxKey = (u32, u32, u16, u32, u16);

/// A fib entry not looked up yet. Otherwise an entry is `start << 8 |
/// count`: the egress interfaces are `hops[start..start + count]`
/// (count 0: no route).
const FIB_UNKNOWN: u32 = u32::MAX;

impl World {
    /// Builds the world with TCP on every host; `pcap_dir` receives one
    /// capture per probed interface.
    /// A network with a setting the simulator cannot honour
    /// ([`transport::unsupported`]) is refused here, never run with a
    /// substitute.
    pub fn new(net: Network, pcap_dir: Option<PathBuf>) -> std::io::Result<World> {
        if let Some(u) = transport::unsupported(&net).into_iter().next() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("flow {}: {}: {}", u.flow, u.field, u.message)));
        }
        Self::with_factory(net, Box::new(transport::SimFactory), pcap_dir)
    }

    /// Builds the world with the given transport endpoints.
    pub fn with_factory(net: Network, factory: Box<dyn EndpointFactory>, pcap_dir: Option<PathBuf>) -> std::io::Result<World> {
        let rng = RngStreams::new(net.seed);
        let mut nodes: Vec<NodeRt> = net
            .nodes
            .iter()
            .map(|n| NodeRt {
                router: n.kind == NodeKind::Router,
                ecmp: match net.ecmp {
                    network::EcmpMode::Hash => Ecmp::Hash { salt: rng.stream(0x5a17_0000 + n.id as u64).next_u64() },
                    network::EcmpMode::Random => Ecmp::random(rng.stream(ECMP_STREAM_BASE + n.id as u64)),
                },
                fib: Vec::new(),
                hops: Vec::new(),
                policy_fib: HashMap::default(),
                counters: vec![IfCounters::default(); n.interfaces.len()],
                egress: vec![(usize::MAX, 0); n.interfaces.len()],
            })
            .collect();
        let mut links = Vec::with_capacity(net.links.len());
        let mut wakes = Vec::with_capacity(2 * net.links.len());
        for l in &net.links {
            let ends = [(l.a.node, l.a.iface), (l.b.node, l.b.iface)];
            nodes[l.a.node].egress[l.a.iface] = (l.id, 0);
            nodes[l.b.node].egress[l.b.iface] = (l.id, 1);
            let mut dirs = [LinkDirection::new(config::link_params(&l.ab)), LinkDirection::new(config::link_params(&l.ba))];
            if !l.up {
                for d in &mut dirs {
                    d.set_up(Instant::ZERO, false);
                }
            }
            links.push(LinkRt { dirs, rng: [rng.stream(0x11_0000 + 2 * l.id as u64), rng.stream(0x11_0001 + 2 * l.id as u64)] });
            wakes.push(WakeRt { at: None, to: (ends[1].0 as u32, ends[1].1 as u32) });
            wakes.push(WakeRt { at: None, to: (ends[0].0 as u32, ends[0].1 as u32) });
        }
        let mut listeners = HashMap::default();
        let mut flows = Vec::with_capacity(net.flows.len());
        for f in &net.flows {
            listeners.insert((f.to as u32, f.dport), f.id as u32);
            let stop = Some(Instant(f.stop_ns));
            let kind = config::app_kind(&f.app);
            flows.push(FlowRt {
                ends: [
                    End { ep: None, app: App::new(kind.clone(), true, stop), timer_at: None, connected_at: None, misplaced: false, corrupted: false },
                    End { ep: None, app: App::new(kind, false, stop), timer_at: None, connected_at: None, misplaced: false, corrupted: false },
                ],
                start: Instant(f.start_ns),
                last_delivered: 0,
                srtt_sum_ns: 0.0,
                srtt_samples: 0,
                last_path_acked: Vec::new(),
            });
        }
        let mbox = crate::middlebox::Middleboxes::new(&net);
        let boxes_on_links = mbox.on_link.iter().any(|a| !a.is_empty()) || mbox.coalesce_link.iter().any(Option::is_some);
        let boxes_on_nodes = mbox.on_node.iter().any(|a| !a.is_empty()) || mbox.coalesce_node.iter().any(Option::is_some);
        let nats = crate::nat::build(&net);
        let mut pcaps = HashMap::default();
        if let Some(dir) = pcap_dir {
            std::fs::create_dir_all(&dir)?;
            for p in &net.probes.pcap {
                let node = &net.nodes[p.node];
                let name = format!("{}-{}.pcap", node.name, node.interfaces[p.iface].name);
                pcaps.insert((p.node, p.iface), Capture::create(&dir.join(name))?);
            }
        }
        let mut addr_idx = HashMap::default();
        let mut addr_owner = Vec::new();
        for n in &net.nodes {
            for i in &n.interfaces {
                addr_idx.entry(u32::from(i.addr)).or_insert_with(|| {
                    addr_owner.push(n.id as u32);
                    (addr_owner.len() - 1) as u32
                });
            }
        }
        let interval = Instant(net.probes.interval_ns.max(1));
        let mut w = World {
            now: Instant::ZERO,
            end: Instant(net.duration_ns),
            queue: EventQueue::new(),
            links,
            wakes,
            nodes,
            flows,
            demux: HashMap::default(),
            tokens: HashMap::default(),
            listeners,
            factory,
            rng,
            interval,
            results: RunResults::default(),
            pcaps,
            stats: RunStats::default(),
            pool: Pool::default(),
            addr_idx,
            addr_owner,
            dropped: Vec::new(),
            mbox,
            boxes_on_links,
            boxes_on_nodes,
            any_nat: nats.iter().any(Option::is_some),
            nats,
            out_buf: Vec::new(),
            net,
        };
        for f in 0..w.flows.len() {
            let at = w.flows[f].start;
            w.queue.schedule(at, Ev::FlowStart { flow: f as u32 });
        }
        for (i, e) in w.net.events.iter().enumerate() {
            w.queue.schedule(Instant(e.at_ns), Ev::Scenario { idx: i as u32 });
        }
        w.queue.schedule(interval, Ev::Sample);
        Ok(w)
    }

    pub fn now(&self) -> Instant {
        self.now
    }

    /// Runs until the scenario's duration (or until `until`, for progress
    /// reporting in slices); returns true when the run is complete.
    pub fn run_until(&mut self, until: Instant) -> bool {
        let stop = until.min(self.end);
        while let Some((t, ev)) = self.queue.pop_until(stop) {
            self.now = t;
            self.stats.events += 1;
            self.dispatch(ev);
        }
        self.now = stop;
        stop >= self.end
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::LinkWake { link, dir } => self.link_wake(link as usize, dir as usize),
            Ev::FlowTimer { flow, end } => self.flow_timer(flow as usize, end as usize),
            Ev::FlowStart { flow } => self.flow_start(flow as usize),
            Ev::Scenario { idx } => self.scenario_event(idx as usize),
            Ev::CoalesceFlush { boxid, slot } => self.coalesce_flush(boxid as usize, slot),
            Ev::Sample => {
                self.sample();
                let next = self.now + std::time::Duration::from_nanos(self.interval.0);
                if next <= self.end {
                    self.queue.schedule(next, Ev::Sample);
                }
            }
        }
    }

    // ---- links -----------------------------------------------------------

    fn schedule_link(&mut self, link: usize, dir: usize) {
        if let Some(t) = self.links[link].dirs[dir].next_wakeup() {
            let w = &mut self.wakes[2 * link + dir].at;
            if w.is_none_or(|w| t < w) {
                *w = Some(t);
                self.queue.schedule(t.max(self.now), Ev::LinkWake { link: link as u32, dir: dir as u8 });
            }
        }
    }

    fn link_wake(&mut self, link: usize, dir: usize) {
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
    fn reclaim(&mut self, link: usize, dir: usize) {
        self.links[link].dirs[dir].take_discarded(&mut self.dropped);
        for h in self.dropped.drain(..) {
            self.pool.free.push(h.id);
        }
    }

    /// Puts a packet on the link behind `iface` of `node`. Like a Linux
    /// interface counter (and tcpdump), only what the queue accepted counts.
    fn transmit(&mut self, node: usize, out: Egress, mut h: Hop) {
        let (link, dir, iface) = (out.link as usize, out.dir as usize, out.iface as usize);
        if let Some(nat) = if self.any_nat { self.nats[node].as_mut() } else { None } {
            let p = &mut self.pool.pkts[h.id as usize];
            if iface == nat.outside && !self.net.nodes[node].owns(p.src) {
                nat.outbound(p);
                self.refresh_hop(&mut h);
            }
        }
        if self.boxes_on_links && (!self.mbox.on_link[2 * link + dir].is_empty() || self.mbox.coalesce_link[2 * link + dir].is_some()) {
            for h in self.through_middleboxes(h, Place::Link(2 * link + dir)) {
                self.offer(node, iface, link, dir, h);
            }
            return;
        }
        self.offer(node, iface, link, dir, h);
    }

    /// Recomputes what forwarding keeps about a packet whose addresses or
    /// ports a middlebox rewrote.
    fn refresh_hop(&mut self, h: &mut Hop) {
        let p = &self.pool.pkts[h.id as usize];
        h.flow_hash = split_hash(flow_hash(p.flow_key()));
        h.dst_idx = self.addr_idx.get(&u32::from(p.dst)).copied().unwrap_or(NO_ADDR);
        h.set_size_ttl(p.size, h.ttl());
    }

    /// Runs a packet through the middleboxes at `at`; returns the packets
    /// that come out now (more than one when a box splits it or flushes
    /// a held segment, none when a coalescer keeps it).
    fn through_middleboxes(&mut self, h: Hop, at: Place) -> Vec<Hop> {
        let (actions, coalescer) = match at {
            Place::Link(i) => (&self.mbox.on_link[i], self.mbox.coalesce_link[i]),
            Place::Node(n) => (&self.mbox.on_node[n], self.mbox.coalesce_node[n]),
        };
        let mut extra = Vec::new();
        let mut p = self.pool.pkts[h.id as usize].clone();
        p.ttl = h.ttl();
        crate::middlebox::apply(actions, &mut p, &mut extra);
        self.pool.release(h);
        let mut pkts = vec![p];
        pkts.append(&mut extra);
        if let Some(c) = coalescer {
            let mut out = Vec::new();
            for p in pkts {
                if let Some(f) = self.mbox.coalescers[c as usize].1.offer(self.now.0, p, &mut out) {
                    self.queue.schedule(Instant(f.at), Ev::CoalesceFlush { boxid: c, slot: f.slot });
                }
            }
            pkts = out;
        }
        pkts.into_iter().map(|q| self.pool.put(q)).collect()
    }

    /// A coalescer's timer: its held segment goes on where it was going.
    fn coalesce_flush(&mut self, boxid: usize, slot: u32) {
        let (place, c) = &mut self.mbox.coalescers[boxid];
        let place = *place;
        let Some(p) = c.expire(slot, self.now.0) else { return };
        let h = self.pool.put(p);
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

    fn offer(&mut self, node: usize, iface: usize, link: usize, dir: usize, h: Hop) {
        let l = &mut self.links[link];
        if let Offer::Queued = l.dirs[dir].offer(self.now, h, h.size(), &mut l.rng[dir]) {
            let at = l.dirs[dir].last_end();
            self.capture(node, iface, h.id, at);
        }
        self.reclaim(link, dir);
        self.schedule_link(link, dir);
    }

    fn capture(&mut self, node: usize, iface: usize, id: u32, at: Instant) {
        if let Some(c) = self.pcaps.get_mut(&(node, iface)) {
            c.record(at, self.now, &self.pool.pkts[id as usize]);
        }
    }

    /// Interface counters are the links': transmitted bytes are those the
    /// outgoing direction serialised by now, received bytes those the
    /// incoming direction delivered (every delivery goes to `receive`).
    /// Reading them here, not counting per packet, spares each hop a write
    /// to the node's counter array (a cache miss on large topologies).
    fn sync_if_counters(&mut self) {
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

    fn receive(&mut self, node: usize, iface: usize, mut h: Hop) {
        self.capture(node, iface, h.id, self.now);
        if h.dst_idx == NO_ADDR {
            self.pool.release(h); // nobody has that address
            return;
        }
        let mut translated = false;
        if let Some(nat) = if self.any_nat { self.nats[node].as_ref() } else { None } {
            let p = &mut self.pool.pkts[h.id as usize];
            if iface == nat.outside && p.dst == nat.addr && nat.inbound(p) {
                translated = true;
                self.refresh_hop(&mut h);
            }
        }
        if !translated && self.addr_owner[h.dst_idx as usize] == node as u32 {
            self.deliver_local(node, h.id);
            self.pool.release(h);
            return;
        }
        if !self.nodes[node].router || h.ttl() <= 1 {
            // Hosts do not forward; an expired TTL is dropped (no ICMP here).
            self.pool.release(h);
            return;
        }
        h.set_size_ttl(h.size(), h.ttl() - 1);
        self.stats.packets_forwarded += 1;
        if self.boxes_on_nodes && (!self.mbox.on_node[node].is_empty() || self.mbox.coalesce_node[node].is_some()) {
            for h in self.through_middleboxes(h, Place::Node(node)) {
                self.route_out(node, None, h);
            }
            return;
        }
        self.route_out(node, None, h);
    }

    /// Chooses the egress interface (policy routing by source on hosts,
    /// ECMP per flow on routers, by salted hash or remembered random
    /// choice) and transmits.
    fn route_out(&mut self, node: usize, policy_src: Option<Ipv4Addr>, h: Hop) {
        let (flow_hash, dst_idx, id) = (h.flow_hash(), h.dst_idx, h.id);
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

    fn deliver_local(&mut self, node: usize, id: u32) {
        let pkt = &self.pool.pkts[id as usize];
        let key = (node as u32, u32::from(pkt.dst), pkt.tcp.dst_port, u32::from(pkt.src), pkt.tcp.src_port);
        let (flow, end) = match self.demux.get(&key) {
            Some(&fe) => fe,
            None => match self.new_connection(node, id, key) {
                Some(fe) => fe,
                None => {
                    self.send_rst(node, id);
                    return;
                }
            },
        };
        let pkt = &self.pool.pkts[id as usize];
        let e = &mut self.flows[flow as usize].ends[end as usize];
        let Some(ep) = e.ep.as_mut() else { return };
        let p = ep.on_packet(self.now, pkt);
        self.after_input(flow as usize, end as usize, p);
    }

    /// A segment for no known 4-tuple: a SYN may open a connection on a
    /// listening port, or join one by its MPTCP token. `None`: refused.
    fn new_connection(&mut self, node: usize, id: u32, key: DemuxKey) -> Option<(u32, u8)> {
        let pkt = &self.pool.pkts[id as usize];
        if !pkt.tcp.syn() || pkt.tcp.ack_flag() || pkt.tcp.rst() {
            return None;
        }
        let join_token = pkt.tcp.options.mptcp().find_map(|o| match o {
            mplab_wire::MptcpOption::MpJoin(mplab_wire::MpJoin::Syn { token, .. }) => Some(*token),
            _ => None,
        });
        if let Some(token) = join_token {
            // The token names the connection (a per-host token table, as in
            // Linux); a wrong one, or a refused join, gets a reset.
            let &(flow, end) = self.tokens.get(&(node as u32, token))?;
            let ep = self.flows[flow as usize].ends[end as usize].ep.as_mut()?;
            if !ep.accept_join(self.now, pkt) {
                return None;
            }
            self.demux.insert(key, (flow, end));
            return Some((flow, end));
        }
        let &flow = self.listeners.get(&(node as u32, pkt.tcp.dst_port))?;
        if self.flows[flow as usize].ends[1].ep.is_some() {
            return None; // one connection per flow: a stray SYN is refused
        }
        let f = &self.net.flows[flow as usize];
        let seed = self.rng.stream(0x155_0000 + 2 * flow as u64 + 1).next_u64();
        let ep = self.factory.accept(&self.net, f, pkt.dst, pkt.src, pkt, seed, self.now)?;
        if let Some(t) = ep.token() {
            self.tokens.insert((node as u32, t), (flow, 1));
        }
        self.demux.insert(key, (flow, 1));
        self.flows[flow as usize].ends[1].ep = Some(ep);
        Some((flow, 1))
    }

    /// Answers a segment nobody wants with a RST (RFC 9293 3.10.7.1).
    fn send_rst(&mut self, node: usize, id: u32) {
        let p = &self.pool.pkts[id as usize];
        if p.tcp.rst() {
            return;
        }
        let mut h = mplab_wire::TcpHeader { src_port: p.tcp.dst_port, dst_port: p.tcp.src_port, ..Default::default() };
        if p.tcp.ack_flag() {
            h.seq = p.tcp.ack;
            h.flags = mplab_wire::tcp::flags::RST;
        } else {
            h.ack = p.tcp.seq.wrapping_add(p.payload_len + u32::from(p.tcp.syn()) + u32::from(p.tcp.fin()));
            h.flags = mplab_wire::tcp::flags::RST | mplab_wire::tcp::flags::ACK;
        }
        let mut rst = Packet::new(p.dst, p.src, h, 0, 0);
        rst.dst_idx = self.addr_idx.get(&u32::from(rst.dst)).copied().unwrap_or(NO_ADDR);
        let src = rst.src;
        let rh = self.pool.put(rst);
        self.stats.resets_sent += 1;
        self.route_out(node, Some(src), rh);
    }

    // ---- flows -----------------------------------------------------------

    fn flow_start(&mut self, flow: usize) {
        let f = &self.net.flows[flow];
        let seed = self.rng.stream(0x155_0000 + 2 * flow as u64).next_u64();
        let Some(ep) = self.factory.connect(&self.net, f, seed, self.now) else { return };
        if let Some(t) = ep.token() {
            self.tokens.insert((f.from as u32, t), (flow as u32, 0));
        }
        let key = (f.from as u32, u32::from(f.src), f.sport, u32::from(f.dst), f.dport);
        self.demux.insert(key, (flow as u32, 0));
        self.flows[flow].ends[0].ep = Some(ep);
        self.service(flow, 0);
    }

    fn flow_timer(&mut self, flow: usize, end: usize) {
        let e = &mut self.flows[flow].ends[end];
        if e.timer_at != Some(self.now) {
            return; // superseded by an earlier or later timer
        }
        e.timer_at = None;
        let mut p = Progress::default();
        if let Some(ep) = e.ep.as_mut() {
            if ep.poll_timeout().is_some_and(|t| t <= self.now) {
                p = ep.on_timeout(self.now);
            }
        }
        self.after_input(flow, end, p);
    }

    fn after_input(&mut self, flow: usize, end: usize, p: Progress) {
        let e = &mut self.flows[flow].ends[end];
        e.misplaced |= p.misplaced;
        e.corrupted |= p.corrupted;
        if let Some(ep) = e.ep.as_mut() {
            if e.connected_at.is_none() && ep.is_established() {
                e.connected_at = Some(self.now);
                e.app.on_connected(self.now, ep.as_mut());
            }
        }
        self.service(flow, end);
    }

    /// Lets the application read/write, sends what the endpoint has, and
    /// re-arms the end's single timer.
    fn service(&mut self, flow: usize, end: usize) {
        let node = if end == 0 { self.net.flows[flow].from } else { self.net.flows[flow].to };
        let mut out = std::mem::take(&mut self.out_buf);
        {
            let e = &mut self.flows[flow].ends[end];
            let Some(ep) = e.ep.as_mut() else {
                self.out_buf = out;
                return;
            };
            if e.connected_at.is_some() {
                e.app.pump(self.now, ep.as_mut());
            }
            // Into the pool at once (one copy of each packet fewer); routed
            // below, once the endpoint is no longer borrowed. Nothing is
            // delivered while routing, so the order of the two is free.
            loop {
                let id = self.pool.alloc();
                let pkt = &mut self.pool.pkts[id as usize];
                if !ep.poll_transmit_into(self.now, pkt) {
                    self.pool.unalloc(id);
                    break;
                }
                if pkt.tcp.syn() && !pkt.tcp.ack_flag() {
                    // A new subflow's first segment: its replies come back here.
                    let key = (node as u32, u32::from(pkt.src), pkt.tcp.src_port, u32::from(pkt.dst), pkt.tcp.dst_port);
                    self.demux.entry(key).or_insert((flow as u32, end as u8));
                }
                pkt.dst_idx = self.addr_idx.get(&u32::from(pkt.dst)).copied().unwrap_or(NO_ADDR);
                out.push((Hop::of(id, pkt), pkt.src));
            }
        }
        for &(h, src) in &out {
            self.route_out(node, Some(src), h);
        }
        out.clear();
        self.out_buf = out;
        let e = &mut self.flows[flow].ends[end];
        // The application acts only once connected (`pump` above): a stop
        // time that passes while a connection never opens must not re-arm
        // the timer at the same instant forever.
        let app_timer = e.connected_at.and_then(|_| e.app.poll_timer());
        let t = match (e.ep.as_ref().and_then(|ep| ep.poll_timeout()), app_timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(t) = t {
            let t = t.max(self.now);
            if e.timer_at.is_none_or(|cur| t < cur || cur < self.now) {
                e.timer_at = Some(t);
                self.queue.schedule(t, Ev::FlowTimer { flow: flow as u32, end: end as u8 });
            }
        }
    }

    // ---- scenario events -------------------------------------------------

    fn scenario_event(&mut self, idx: usize) {
        let ev = self.net.events[idx].clone();
        let now = self.now;
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
            }
            self.reclaim(ev.link, d);
            self.schedule_link(ev.link, d);
        }
    }

    // ---- probes ----------------------------------------------------------

    fn sample(&mut self) {
        self.sync_if_counters();
        let t = self.now.as_secs_f64();
        let secs = self.interval.as_secs_f64();
        for (ni, n) in self.nodes.iter_mut().enumerate() {
            if n.router {
                continue; // interface probes are per host, like bwm-ng on the end hosts
            }
            for (ii, c) in n.counters.iter_mut().enumerate() {
                let tx = (c.tx_bytes - c.last_tx) as f64 * 8.0 / secs;
                let rx = (c.rx_bytes - c.last_rx) as f64 * 8.0 / secs;
                c.last_tx = c.tx_bytes;
                c.last_rx = c.rx_bytes;
                self.results.interfaces.push(InterfaceSample {
                    time_s: t,
                    node: self.net.nodes[ni].name.clone(),
                    iface: self.net.nodes[ni].interfaces[ii].name.clone(),
                    tx_bps: tx,
                    rx_bps: rx,
                });
            }
        }
        let probes = &self.net.probes;
        for (fi, f) in self.flows.iter_mut().enumerate() {
            let name = &self.net.flows[fi].name;
            let detailed = probes.flows.contains(&fi);
            let cwnd = |v: u64| (detailed && probes.cwnd).then_some(v);
            let srtt = |v: Option<u64>| v.filter(|_| detailed && probes.srtt).map(|n| n as f64 / 1e6);
            let inflight = |v: u64| (detailed && probes.cwnd).then_some(v);
            let delivered = f.ends[0].app.rx.delivered + f.ends[1].app.rx.delivered;
            let gp = (delivered - f.last_delivered) as f64 * 8.0 / secs;
            f.last_delivered = delivered;
            let sender = if matches!(f.ends[0].app.kind, AppKind::Download { .. }) { 1 } else { 0 };
            let paths = f.ends[sender].ep.as_ref().map(|e| e.paths()).unwrap_or_default();
            let first = paths.first();
            if let Some((ooo, hol)) = f.ends[1 - sender].ep.as_ref().and_then(|e| e.reorder_probe(self.now)) {
                self.results.reorder.push(ReorderSample { row: self.results.flows.len(), ooo_bytes: ooo, hol_ms: hol as f64 / 1e6 });
            }
            self.results.flows.push(FlowSample {
                time_s: t,
                flow: name.clone(),
                subflow: "all".into(),
                goodput_bps: gp,
                cwnd_bytes: first.and_then(|p| cwnd(p.cwnd)),
                srtt_ms: first.and_then(|p| srtt(p.srtt_ns)),
                in_flight_bytes: first.and_then(|p| inflight(p.in_flight)),
                state: None,
            });
            if let Some(s) = first.and_then(|p| p.srtt_ns) {
                f.srtt_sum_ns += s as f64;
                f.srtt_samples += 1;
            }
            f.last_path_acked.resize(paths.len(), 0);
            if paths.len() > 1 || self.net.flows[fi].transport == network::TransportKind::Mptcp {
                for (i, p) in paths.iter().enumerate() {
                    let gp = (p.bytes_acked - f.last_path_acked[i].min(p.bytes_acked)) as f64 * 8.0 / secs;
                    f.last_path_acked[i] = p.bytes_acked;
                    self.results.flows.push(FlowSample {
                        time_s: t,
                        flow: name.clone(),
                        subflow: i.to_string(),
                        goodput_bps: gp,
                        cwnd_bytes: cwnd(p.cwnd),
                        srtt_ms: srtt(p.srtt_ns),
                        in_flight_bytes: inflight(p.in_flight),
                        state: Some(p.state),
                    });
                }
            }
        }
        for &li in &self.net.probes.queues {
            for d in 0..2 {
                self.links[li].dirs[d].advance(self.now);
                let s = self.links[li].dirs[d].stats();
                self.results.queues.push(QueueSample {
                    time_s: t,
                    link: self.net.links[li].name.clone(),
                    direction: DIR_NAMES[d].into(),
                    queue_bytes: s.queue_bytes,
                    drops: s.drops_total(),
                });
            }
        }
    }

    /// Final results: summary over the whole run plus the sampled series.
    pub fn finish(mut self, backend: &str) -> RunResults {
        self.sync_if_counters();
        let mut pcaps: Vec<_> = self.pcaps.drain().collect();
        pcaps.sort_by_key(|(k, _)| *k);
        for ((node, iface), c) in pcaps {
            if let Err(e) = c.finish(self.now) {
                let n = &self.net.nodes[node];
                self.results.errors.push(format!("pcap of {}:{}: {e}", n.name, n.interfaces[iface].name));
            }
        }
        let dur = self.now.as_secs_f64();
        let mut s = Summary { scenario: self.net.name.clone(), backend: backend.into(), seed: self.net.seed, duration_s: dur, ..Default::default() };
        for (place, c) in &self.mbox.coalescers {
            let at = match *place {
                Place::Link(i) => format!("link {} ({})", self.net.links[i / 2].name, if i % 2 == 0 { "ab" } else { "ba" }),
                Place::Node(n) => format!("node {}", self.net.nodes[n].name),
            };
            s.notes.push(format!("coalescing middlebox at {at}: {} segments merged into others", c.merged));
        }
        for (fi, f) in self.flows.iter().enumerate() {
            let spec = &self.net.flows[fi];
            let sender = if matches!(f.ends[0].app.kind, AppKind::Download { .. }) { 1 } else { 0 };
            let ep = f.ends[sender].ep.as_ref();
            s.flows.push(summary::flow_summary(FlowOutcome {
                spec,
                start_s: f.start.as_secs_f64(),
                run_end_s: self.now.as_secs_f64(),
                delivered: f.ends[0].app.rx.delivered + f.ends[1].app.rx.delivered,
                requests_done: f.ends[0].app.requests_done,
                completed_at_s: self.receiver_done_at(fi).map(|c| c.as_secs_f64()),
                data_ok: f.ends.iter().all(|e| e.app.rx.ok() && !e.misplaced && !e.corrupted),
                fallback: ep.is_some_and(|e| e.fell_back()),
                latencies_ms: f.ends[0].app.latencies.iter().map(|d| d.as_secs_f64() * 1e3).collect(),
                mean_srtt_ms: (f.srtt_samples > 0).then(|| f.srtt_sum_ns / f.srtt_samples as f64 / 1e6),
                paths: ep.map(|e| e.paths()).unwrap_or_default(),
            }));
        }
        for (ni, n) in self.nodes.iter().enumerate() {
            for (ii, c) in n.counters.iter().enumerate() {
                s.interfaces.push(summary::interface_summary(&self.net.nodes[ni].name, &self.net.nodes[ni].interfaces[ii].name, c.tx_bytes, c.rx_bytes, dur));
            }
        }
        for (li, l) in self.links.iter().enumerate() {
            for d in 0..2 {
                s.links.push(summary::link_summary(&self.net.links[li].name, d, &l.dirs[d].stats()));
            }
        }
        self.results.summary = s;
        self.results
    }

    fn receiver_done_at(&self, flow: usize) -> Option<Instant> {
        let f = &self.flows[flow];
        f.ends[0].app.completed_at.or(f.ends[1].app.completed_at)
    }
}
