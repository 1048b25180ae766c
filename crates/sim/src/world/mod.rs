//! The simulated world: nodes, links, flows and probes from a resolved
//! scenario, driven by one event queue in virtual time.
//!
//! Event sources are small (htsim's idea): each link direction keeps at most
//! one pending wake-up, each flow end one timer, and packets move between
//! them without any per-hop allocation.
//!
//! Its files by concern: this one holds the world and its event loop;
//! [`fabric`] moves packets (pool, links, forwarding, ECMP, middleboxes);
//! [`middleboxes`] runs the boxes on the path (one trait, one timer
//! event); [`host`] is the hosts' stack (demux, listen, RST); [`flows`] runs the
//! flows' endpoints and applications; [`probes`] samples time series;
//! [`finish`] closes the run and computes the summary.

mod converter;
mod fabric;
mod finish;
mod flows;
mod host;
mod hybrid;
mod middleboxes;
mod pool;
mod probes;
mod tunnel;

use std::net::Ipv4Addr;
use std::path::PathBuf;

use mplab_proto::Instant;
use rustc_hash::FxHashMap as HashMap;
use mplab_scenario::network::{self, Network, NodeKind};

use crate::apps::App;
use crate::capture::Capture;
use crate::event::EventQueue;
use crate::link::LinkDirection;
use crate::packet::{Ecmp, ECMP_STREAM_BASE};
use crate::results::*;
use crate::rng::RngStreams;
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
    /// A middlebox's timer (`Middlebox::next_deadline`).
    BoxTimer { boxid: u32 },
}

use fabric::{IfCounters, LinkRt, NodeRt, WakeRt};
use pool::{Hop, Pool};
use flows::{End, FlowRt};

/// How a run went, for the summary line.
#[derive(Debug, Clone, Default)]
pub struct RunStats {
    pub events: u64,
    pub packets_forwarded: u64,
    /// RSTs the hosts sent for segments no connection wanted.
    pub resets_sent: u64,
    /// SCTP packets for no association and no listening SCTP flow.
    pub sctp_out_of_the_blue: u64,
    /// Segments for a connection both of whose ends were over (and whose
    /// state was dropped): dropped.
    pub segments_after_end: u64,
    /// UDP datagrams for a port no flow listens on: dropped.
    pub udp_no_socket: u64,
}

/// What a host accepted and refused (reported for load balancers' backends).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct HostCounters {
    connections: u64,
    joins_accepted: u64,
    joins_refused: u64,
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
    /// (node, local port) -> the SCTP association there: a multihomed
    /// association is found by port on any of its addresses.
    sctp_ends: HashMap<(u32, u16), (u32, u8)>,
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
    /// (node, address index) of addresses several hosts hold on their
    /// loopback (a load balancer's VIP); their `addr_owner` is `SHARED`.
    shared: std::collections::HashSet<(u32, u32)>,
    /// Per node.
    host_counters: Vec<HostCounters>,
    boxes: middleboxes::Boxes,
    /// Reused buffer for packets a link discarded.
    dropped: Vec<Hop>,
    /// Reused for the segments one endpoint emits in one service call.
    out_buf: Vec<(Hop, Ipv4Addr)>,
    /// The tunnels and converters, and what they keep per node and flow.
    hybrid: hybrid::HybridAccess,
    /// The scenario's flows come first in `flows`; a converter's
    /// connections follow them.
    user_flows: usize,
}

/// `addr_owner` of an address held by several nodes.
const SHARED: u32 = u32::MAX - 1;

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
    pub fn new(mut net: Network, pcap_dir: Option<PathBuf>) -> std::io::Result<World> {
        // Flows' random start times (a no-op when the caller drew them).
        mplab_backend::workload::apply_start_jitter(&mut net);
        mplab_backend::apps::check_flows(&net).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
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
            let params = |d| config::link_params(d).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()));
            let mut dirs = [LinkDirection::new(params(&l.ab)?), LinkDirection::new(params(&l.ba)?)];
            for (d, spec) in dirs.iter_mut().zip([&l.ab, &l.ba]) {
                if let Some(t) = config::link_trace(spec) {
                    d.set_trace(t);
                }
            }
            if !l.up {
                for d in &mut dirs {
                    d.set_up(Instant::ZERO, false);
                }
            }
            let radio = l.radio.map(|r| mplab_backend::link::Radio::new(r.idle_ns, r.promotion_ns));
            links.push(LinkRt { dirs, rng: [rng.stream(0x11_0000 + 2 * l.id as u64), rng.stream(0x11_0001 + 2 * l.id as u64)], radio });
            wakes.push(WakeRt { at: None, to: (ends[1].0 as u32, ends[1].1 as u32) });
            wakes.push(WakeRt { at: None, to: (ends[0].0 as u32, ends[0].1 as u32) });
        }
        let mut listeners = HashMap::default();
        let mut flows = Vec::with_capacity(net.flows.len());
        for f in &net.flows {
            for &server in &f.servers {
                listeners.insert((server as u32, f.dport), f.id as u32);
            }
            let stop = Some(Instant(f.stop_ns));
            let kind = crate::apps::Kind::of(&f.app);
            flows.push(FlowRt {
                server: f.to,
                ends: [
                    End { ep: None, app: App::new(kind.clone(), true, stop), timer_at: None, connected_at: None, misplaced: false, corrupted: false },
                    End { ep: None, app: App::new(kind, false, stop), timer_at: None, connected_at: None, misplaced: false, corrupted: false },
                ],
                start: Instant(f.start_ns),
                last_delivered: 0,
                closed_sampled: Vec::new(),
                ended_sampled: false,
                ended: None,
                srtt_sum_ns: 0.0,
                srtt_samples: 0,
                last_path_acked: Vec::new(),
            });
        }
        let hybrid = hybrid::HybridAccess::new(&net);
        let boxes = middleboxes::Boxes::new(&net);
        let mut pcaps = HashMap::default();
        if let Some(dir) = pcap_dir {
            std::fs::create_dir_all(&dir)?;
            for p in &net.probes.pcap {
                let node = &net.nodes[p.node];
                let name = format!("{}-{}.pcap", node.name, node.interfaces[p.iface].name);
                pcaps.insert((p.node, p.iface), Capture::create(&dir.join(name), net.probes.snaplen)?);
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
        let mut shared = std::collections::HashSet::new();
        for n in &net.nodes {
            for a in &n.loopback {
                let idx = *addr_idx.entry(u32::from(*a)).or_insert_with(|| {
                    addr_owner.push(SHARED);
                    (addr_owner.len() - 1) as u32
                });
                shared.insert((n.id as u32, idx));
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
            sctp_ends: HashMap::default(),
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
            shared,
            host_counters: vec![HostCounters::default(); net.nodes.len()],
            dropped: Vec::new(),
            boxes,
            out_buf: Vec::new(),
            hybrid,
            user_flows: net.flows.len(),
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

    #[inline(always)]
    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::LinkWake { link, dir } => self.link_wake(link as usize, dir as usize),
            Ev::FlowTimer { flow, end } => self.flow_timer(flow as usize, end as usize),
            Ev::FlowStart { flow } => self.flow_start(flow as usize),
            Ev::Scenario { idx } => self.scenario_event(idx as usize),
            Ev::BoxTimer { boxid } => self.box_timer(boxid),
            Ev::Sample => {
                self.sample();
                let next = self.now + std::time::Duration::from_nanos(self.interval.0);
                if next <= self.end {
                    self.queue.schedule(next, Ev::Sample);
                }
            }
        }
    }

}
