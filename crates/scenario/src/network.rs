//! The resolved, backend-neutral network: what every backend consumes.
//!
//! Everything is concrete (numbers in ns, bit/s, bytes; addresses assigned;
//! routes computed), ordered (Vecs indexed by id, no hash maps) and
//! `Serialize`, so a result file can embed exactly what was run and two
//! resolutions of the same file serialise to identical bytes.

use std::fmt;
use std::net::Ipv4Addr;

use serde::{Serialize, Serializer};

pub use crate::plugins::fields::PluginTable;
pub use crate::plugins::Resolved;

pub use crate::attack::{AttackKind, Moment, Mount};

pub use crate::vocab::{BufferSplitting, CmtVariant, Direction, EcmpMode, EndpointFlag, JitterDistribution, NodeKind, ResegmentMode, SctpProfile, SctpRtxPolicy, StackProfile, StripOn};
pub use crate::plugins::transports::Transport;

pub type NodeId = usize;
pub type LinkId = usize;
pub type FlowId = usize;

/// Routing table id of the main table (as in Linux).
pub const MAIN_TABLE: u32 = 254;
/// Per-interface policy tables of multi-homed hosts are `POLICY_TABLE_BASE + iface index`.
pub const POLICY_TABLE_BASE: u32 = 100;
/// Their `ip rule` priorities are `POLICY_RULE_PRIORITY_BASE + iface index`,
/// ahead of the main table's 32766.
pub const POLICY_RULE_PRIORITY_BASE: u32 = 1000;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Network {
    pub name: String,
    pub description: Option<String>,
    pub seed: u64,
    pub duration_ns: u64,
    /// How routers choose among equal-cost next hops.
    pub ecmp: EcmpMode,
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    pub flows: Vec<Flow>,
    /// Sorted by time; events at the same time keep file order.
    pub events: Vec<Event>,
    pub middleboxes: Vec<Middlebox>,
    pub mptcp_endpoints: Vec<MptcpEndpoint>,
    pub probes: Probes,
}

impl Network {
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }
    pub fn link(&self, name: &str) -> Option<&Link> {
        self.links.iter().find(|l| l.name == name)
    }
    pub fn flow(&self, name: &str) -> Option<&Flow> {
        self.flows.iter().find(|f| f.name == name)
    }
    /// The node and interface that own `addr`.
    pub fn owner_of(&self, addr: Ipv4Addr) -> Option<(NodeId, usize)> {
        self.nodes.iter().find_map(|n| n.interfaces.iter().find(|i| i.addr == addr).map(|i| (n.id, i.index)))
    }
}

/// An IPv4 prefix, serialised as `"10.0.1.0/24"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Prefix {
    pub addr: Ipv4Addr,
    pub len: u8,
}

impl Prefix {
    /// The prefix containing `addr`, host bits cleared.
    pub fn new(addr: Ipv4Addr, len: u8) -> Self {
        Prefix { addr: Ipv4Addr::from(u32::from(addr) & Self::mask(len)), len }
    }
    pub const DEFAULT: Prefix = Prefix { addr: Ipv4Addr::UNSPECIFIED, len: 0 };
    pub fn host(addr: Ipv4Addr) -> Self {
        Prefix { addr, len: 32 }
    }
    pub fn mask(len: u8) -> u32 {
        if len == 0 {
            0
        } else {
            u32::MAX << (32 - len.min(32) as u32)
        }
    }
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & Self::mask(self.len) == u32::from(self.addr)
    }
    pub fn overlaps(&self, other: &Prefix) -> bool {
        self.contains(other.addr) || other.contains(self.addr)
    }
    /// The `n`th address in the prefix (`n = 1` is `.1` of a /24).
    pub fn nth(&self, n: u32) -> Option<Ipv4Addr> {
        let size = 1u64 << (32 - self.len as u32);
        (u64::from(n) < size).then(|| Ipv4Addr::from(u32::from(self.addr) + n))
    }
    /// Whether `ip` is usable by an interface: not the network or broadcast
    /// address, except on /31 (RFC 3021) where both are.
    pub fn is_usable_host(&self, ip: Ipv4Addr) -> bool {
        if !self.contains(ip) || self.len == 32 {
            return false;
        }
        if self.len == 31 {
            return true;
        }
        let host = u32::from(ip) & !Self::mask(self.len);
        host != 0 && host != !Self::mask(self.len)
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.len == 0 && self.addr == Ipv4Addr::UNSPECIFIED {
            return f.write_str("default");
        }
        write!(f, "{}/{}", self.addr, self.len)
    }
}

impl Serialize for Prefix {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

// ------------------------------------------------------------------ nodes

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Node {
    pub id: NodeId,
    pub name: String,
    pub kind: NodeKind,
    pub stack: Option<String>,
    /// In the order of the links that create them; `index` is the position.
    pub interfaces: Vec<Interface>,
    /// Addresses on no link (`lo`): the virtual address of the load
    /// balancers this host is a backend of.
    pub loopback: Vec<Ipv4Addr>,
    pub routing: Routing,
}

impl Node {
    pub fn iface(&self, name: &str) -> Option<&Interface> {
        self.interfaces.iter().find(|i| i.name == name)
    }
    pub fn owns(&self, addr: Ipv4Addr) -> bool {
        self.interfaces.iter().any(|i| i.addr == addr) || self.loopback.contains(&addr)
    }
    /// The route a packet from `src` (if bound) to `dst` takes: policy rules
    /// in priority order, then the main table; longest prefix wins.
    pub fn lookup(&self, src: Option<Ipv4Addr>, dst: Ipv4Addr) -> Option<&Route> {
        let mut rules: Vec<&Rule> = self.routing.rules.iter().collect();
        rules.sort_by_key(|r| r.priority);
        for rule in rules {
            if src.is_some_and(|s| rule.from.contains(s)) {
                let table = self.routing.tables.iter().find(|t| t.id == rule.table);
                if let Some(route) = table.and_then(|t| longest_match(&t.routes, dst)) {
                    return Some(route);
                }
            }
        }
        longest_match(&self.routing.main, dst)
    }
}

fn longest_match(routes: &[Route], dst: Ipv4Addr) -> Option<&Route> {
    routes.iter().filter(|r| r.dst.contains(dst)).max_by_key(|r| r.dst.len)
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interface {
    pub index: usize,
    pub name: String,
    pub addr: Ipv4Addr,
    pub prefix: u8,
    pub link: LinkId,
    pub peer: NodeId,
    pub peer_iface: usize,
    pub mtu: u32,
}

impl Interface {
    pub fn subnet(&self) -> Prefix {
        Prefix::new(self.addr, self.prefix)
    }
}

// ---------------------------------------------------------------- routing

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Routing {
    /// The main table (id 254).
    pub main: Vec<Route>,
    /// Other tables: per-interface policy tables of multi-homed hosts and
    /// tables named by explicit `[[routes]]`.
    pub tables: Vec<RouteTable>,
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteOrigin {
    /// The subnet of one of the node's own interfaces.
    Connected,
    /// Shortest path (hop count) computed by `resolve`.
    Computed,
    /// An explicit `[[routes]]` entry.
    Static,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Route {
    /// `default` (0.0.0.0/0) or a subnet.
    pub dst: Prefix,
    /// One entry except on routers with equal-cost paths (ECMP).
    pub nexthops: Vec<NextHop>,
    /// Hops to the destination subnet (0 for connected routes).
    pub metric: u32,
    pub origin: RouteOrigin,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct NextHop {
    pub iface: usize,
    pub iface_name: String,
    /// `None` for connected routes (the destination is on the link).
    pub gateway: Option<Ipv4Addr>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouteTable {
    pub id: u32,
    pub routes: Vec<Route>,
}

/// `ip rule add from <from> lookup <table> priority <priority>`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rule {
    pub priority: u32,
    pub from: Prefix,
    pub table: u32,
}

// ------------------------------------------------------------------ links

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Link {
    pub id: LinkId,
    pub name: String,
    pub a: LinkEnd,
    pub b: LinkEnd,
    pub subnet: Prefix,
    /// Parameters of traffic from `a` to `b` ...
    pub ab: LinkDirection,
    /// ... and from `b` to `a`.
    pub ba: LinkDirection,
    /// Whether the link starts up (events may change it).
    pub up: bool,
    pub mtu: u32,
    /// A cellular radio that sleeps when idle (both directions share it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub radio: Option<Radio>,
}

/// A link's cellular radio: after `idle_ns` without a packet either way,
/// the next packet waits `promotion_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Radio {
    pub idle_ns: u64,
    pub promotion_ns: u64,
}

impl Link {
    /// The end on `node`, if the link touches it.
    pub fn end_on(&self, node: NodeId) -> Option<&LinkEnd> {
        [&self.a, &self.b].into_iter().find(|e| e.node == node)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkEnd {
    pub node: NodeId,
    pub node_name: String,
    pub iface: usize,
    pub iface_name: String,
    pub addr: Ipv4Addr,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkDirection {
    /// The fixed rate; with a `trace`, the trace's mean (1500 bytes per
    /// opportunity); with `steps`, the first step's rate.
    pub rate_bps: u64,
    /// Capacity from a Mahimahi delivery trace instead of `rate_bps`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<DeliveryTrace>,
    /// Piecewise-constant capacity: the first step is `rate_bps`, the
    /// others become `set` events on this direction (`Network::events`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<RateStep>,
    pub delay_ns: u64,
    /// Scale of the random extra delay: the uniform bound, the normal's σ
    /// or the Pareto mean, per `jitter_distribution`.
    pub jitter_ns: u64,
    pub jitter_distribution: JitterDistribution,
    /// Whether jitter may reorder packets; if not, a packet is held until
    /// the one sent before it has arrived.
    pub reorder: bool,
    /// Independent (Bernoulli) loss probability; 0 when `gilbert_elliott` is set.
    pub loss: f64,
    pub gilbert_elliott: Option<GilbertElliott>,
    /// Probability that a packet is duplicated: the copy is offered to the
    /// link right behind the original (netem's `duplicate`).
    pub duplicate: f64,
    pub queue: Queue,
}

/// A Mahimahi delivery trace (see `docs/mobile.md`): the millisecond of
/// each 1500-byte delivery opportunity from the link's start.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeliveryTrace {
    /// As the scenario names it (relative to the scenario file).
    pub file: String,
    /// Repeat after the last opportunity, shifted by its millisecond; if
    /// not, no capacity after it.
    pub looped: bool,
    pub opportunities: usize,
    /// Non-decreasing, the last one > 0.
    #[serde(skip)]
    pub ms: std::sync::Arc<[u64]>,
}

impl DeliveryTrace {
    /// The last opportunity (the period of a looping trace), in ns.
    pub fn period_ns(&self) -> u64 {
        self.ms.last().copied().unwrap_or(0).saturating_mul(1_000_000)
    }

    /// The mean IP capacity in bit/s.
    pub fn mean_rate_bps(&self) -> u64 {
        let period_ms = u128::from(self.ms.last().copied().unwrap_or(1).max(1));
        u64::try_from(self.ms.len() as u128 * 1500 * 8 * 1000 / period_ms).unwrap_or(u64::MAX)
    }
}

/// One line of a steps file: the rate from `at_ns` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RateStep {
    pub at_ns: u64,
    pub rate_bps: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GilbertElliott {
    pub p_gb: f64,
    pub p_bg: f64,
    pub loss_good: f64,
    pub loss_bad: f64,
}

/// The queue discipline of a link direction, kept as the scenario gave it:
/// the disciplines are a registry of crates/backend
/// (`mplab_backend::link`), which reads and checks the table
/// (`mplab_backend::plugins::check`) and fills in `resolved`.
#[derive(Debug, Clone, PartialEq)]
pub struct Queue {
    /// `kind` and the discipline's fields.
    pub table: PluginTable,
    /// Where the table is in the scenario (`links[1].ab.queue`,
    /// `topology.queue`), for errors about it; empty for the default.
    pub path: String,
    /// The discipline's validated parameters (`kind` first), once the
    /// backend has checked the table.
    pub resolved: Option<Resolved>,
}

impl Default for Queue {
    /// 1000 packets of drop-tail, Linux's default txqueuelen and netem's
    /// default limit.
    fn default() -> Self {
        let mut table = PluginTable::of_kind("droptail");
        table.fields.insert("packets".into(), toml::Value::Integer(1000));
        Queue { table, path: String::new(), resolved: None }
    }
}

impl Queue {
    /// The table found at `path` of the scenario, unchecked.
    pub fn new(table: PluginTable, path: impl Into<String>) -> Self {
        Queue { table, path: path.into(), resolved: None }
    }
}

/// The validated parameters once checked (what a result file's
/// network.json shows: `{"kind":"droptail","limit":{"packets":1000}}`),
/// the table as given before.
impl Serialize for Queue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.resolved {
            Some(r) => r.serialize(s),
            None => self.table.serialize(s),
        }
    }
}

pub const DEFAULT_MTU: u32 = 1500;

// ------------------------------------------------------------------ flows

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flow {
    pub id: FlowId,
    pub name: String,
    pub transport: Transport,
    pub from: NodeId,
    pub from_name: String,
    pub to: NodeId,
    pub to_name: String,
    /// The hosts that may accept the connection: `to` alone, or a load
    /// balancer's backends when `dst` is its VIP (`to` is then the first).
    pub servers: Vec<NodeId>,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    /// Client port: 49152 + flow id (backends that let the OS pick may ignore it).
    pub sport: u16,
    /// Listening port on `to`.
    pub dport: u16,
    pub app: App,
    pub start_ns: u64,
    /// `start_jitter`: a backend adds a random time below this, drawn from
    /// the seed, to `start_ns` before the run (mplab_backend::workload).
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub start_jitter_ns: u64,
    pub stop_ns: u64,
    pub tcp: TcpConfig,
    /// Present for MPTCP flows.
    pub mptcp: Option<MptcpConfig>,
    /// Present for SCTP and CMT-SCTP flows.
    pub sctp: Option<SctpFlowConfig>,
}

/// A flow's application.
#[derive(Debug, Clone, PartialEq)]
pub enum App {
    /// A byte-stream application of crates/backend's registry (`bulk`,
    /// `rate`, `download`, `request`, ...), kept as the scenario gave it.
    Stream(AppTable),
    /// A datagram application of crates/backend's registry (`voip`,
    /// `game`, ...: `mplab_backend::datagram`) over a transport that
    /// delivers datagrams, kept as the scenario gave it.
    Datagram(AppTable),
    /// A tunnel between two gateway routers, carrying the IPv4 packets of
    /// `class` they forward, each up to `mtu` bytes, as `mode` says.
    Tunnel { mtu: u32, class: TrafficClass, mode: TunnelMode },
    /// RFC 8803 Transport Converters in two gateway routers: each TCP
    /// connection of `class` the CPE forwards from its LAN side is ended
    /// there and carried to the HAG in a connection of the flow's
    /// transport, whose first bytes are a Convert message naming the
    /// destination; the HAG opens TCP to it, unless it lies in `refuse`.
    /// With `fast_open` the request rides the carrier's SYN.
    Converter { class: TrafficClass, refuse: Vec<Prefix>, fast_open: bool },
}

/// How a tunnel carries the packets it takes in (`mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunnelMode {
    /// Each behind a 2-byte length in the connection's byte stream.
    Stream,
    /// Each in a UDP datagram on every access link (the connection
    /// carries nothing).
    Datagram,
    /// Over MPQUIC: UDP packets each in a QUIC DATAGRAM frame (RFC 9221),
    /// the others in the stream, as 3GPP ATSSS (Release 18) carries a
    /// phone's UDP over MPQUIC.
    QuicDatagram,
}

/// The scenario's own kinds, as network.json shows them.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum OwnApp<'a> {
    Tunnel {
        mtu: u32,
        class: TrafficClass,
        datagram: bool,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        quic_datagram: bool,
    },
    Converter { class: TrafficClass, refuse: &'a [Prefix], fast_open: bool },
}

impl Serialize for App {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            App::Stream(ref t) | App::Datagram(ref t) => t.serialize(s),
            App::Tunnel { mtu, class, mode } => OwnApp::Tunnel { mtu, class, datagram: mode == TunnelMode::Datagram, quic_datagram: mode == TunnelMode::QuicDatagram }.serialize(s),
            App::Converter { class, ref refuse, fast_open } => OwnApp::Converter { class, refuse, fast_open }.serialize(s),
        }
    }
}

/// A flow's application of a crates/backend registry (the byte-stream
/// applications, `mplab_backend::apps`; the datagram applications,
/// `mplab_backend::datagram`), which reads and checks the table
/// (`mplab_backend::plugins::check`) and fills in `resolved`.
#[derive(Debug, Clone, PartialEq)]
pub struct AppTable {
    /// The `app` name as `kind`, and the application's fields.
    pub table: PluginTable,
    /// The flow's path (`flows[2]`): its fields are the application's.
    pub path: String,
    /// The application's validated parameters (`kind` first), once the
    /// backend has checked the table.
    pub resolved: Option<Resolved>,
}

impl AppTable {
    pub fn new(table: PluginTable, path: impl Into<String>) -> Self {
        AppTable { table, path: path.into(), resolved: None }
    }
}

/// The validated parameters once checked (`{"kind":"bulk","bytes":1000}`),
/// the table as given before.
impl Serialize for AppTable {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.resolved {
            Some(r) => r.serialize(s),
            None => self.table.serialize(s),
        }
    }
}

/// Which forwarded packets a tunnel takes: by IP protocol, and by a port
/// range that the source or the destination port falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct TrafficClass {
    /// IP protocol number (6 TCP, 17 UDP); None: any.
    pub proto: Option<u8>,
    pub ports: Option<(u16, u16)>,
}

impl TrafficClass {
    /// Whether a packet of IP protocol `proto` between ports `sport` and
    /// `dport` belongs to the class.
    pub fn matches(&self, proto: u8, sport: u16, dport: u16) -> bool {
        self.proto.is_none_or(|p| p == proto) && self.ports.is_none_or(|(lo, hi)| (lo..=hi).contains(&sport) || (lo..=hi).contains(&dport))
    }

    /// As scenario files write it.
    pub fn name(&self) -> String {
        let proto = match self.proto {
            None => "all",
            Some(6) => "tcp",
            Some(17) => "udp",
            Some(_) => "ip",
        };
        match self.ports {
            None => proto.to_string(),
            Some((a, b)) if a == b => format!("{proto}:{a}"),
            Some((a, b)) => format!("{proto}:{a}-{b}"),
        }
    }
}

impl App {
    /// A datagram application (over `transport = "udp"`), rather than a
    /// byte stream's.
    pub fn is_datagram(&self) -> bool {
        matches!(self, App::Datagram(_))
    }

    /// The name scenario files use (the `app` value).
    pub fn name(&self) -> &str {
        match self {
            App::Stream(t) | App::Datagram(t) => &t.table.kind,
            App::Tunnel { .. } => "tunnel",
            App::Converter { .. } => "converter",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TcpConfig {
    pub cc: String,
    pub rcv_buf: Option<u64>,
    pub snd_buf: Option<u64>,
    pub mss: Option<u32>,
    pub sack: bool,
    pub timestamps: bool,
    pub delayed_ack: bool,
    pub wscale: bool,
    /// Floor of the retransmission timeout; `None`: the stack's default
    /// (200 ms, as Linux).
    pub rto_min_ns: Option<u64>,
    /// The stack profile of each end (sender, receiver): the `linux`
    /// profile's TCP behaviour applies to plain TCP flows as to MPTCP
    /// subflows (an MPTCP flow's are also in `MptcpConfig::profiles`).
    pub profiles: [StackProfile; 2],
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MptcpConfig {
    /// The path manager's name as the scenario gave it; the backend looks
    /// it up (`mplab_proto::mptcp::path_manager`).
    pub path_manager: String,
    pub subflows: Option<u32>,
    pub checksum: bool,
    pub scheduler: String,
    /// Congestion control of the subflows (the TCP `cc` unless set).
    pub cc: String,
    pub max_subflows: Option<u32>,
    pub add_addr_accepted: Option<u32>,
    /// Opportunistic retransmission of the data blocking the window head.
    pub opportunistic_retransmit: bool,
    /// Penalisation of the subflow holding up the window head.
    pub penalize: bool,
    /// The stack profile of each end: `[from, to]`.
    pub profiles: [StackProfile; 2],
    /// Re-creation of subflows that were reset or timed out.
    pub rejoin: Rejoin,
}

/// Whether and when a subflow that was reset or timed out is opened again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum Rejoin {
    /// As the stack profile does (mplab: from 1 s to 30 s; Linux: never).
    #[default]
    Profile,
    Never,
    /// First wait and longest wait, in nanoseconds.
    After { first_ns: u64, max_ns: u64 },
}

/// An SCTP flow's settings, `[transport.sctp]` with the flow's overrides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SctpFlowConfig {
    /// `None`: plain SCTP (`transport = "sctp"`).
    pub cmt: Option<CmtVariant>,
    pub dac: bool,
    pub nr_sack: bool,
    pub buffer_splitting: BufferSplitting,
    pub rtx_policy: SctpRtxPolicy,
    pub heartbeat_interval_ns: u64,
    pub rcv_buf: u64,
    pub snd_buf: u64,
    pub rto_min_ns: u64,
    pub rto_initial_ns: u64,
    pub profile: SctpProfile,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MptcpEndpoint {
    pub node: NodeId,
    pub node_name: String,
    /// 1-based per node, in file order (the kernel's endpoint id).
    pub id: u8,
    pub addr: Ipv4Addr,
    pub iface: usize,
    pub iface_name: String,
    pub flags: Vec<EndpointFlag>,
}

// ---------------------------------------------------------------- events

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub at_ns: u64,
    pub link: LinkId,
    pub link_name: String,
    pub action: LinkAction,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LinkAction {
    Down,
    Up,
    /// Change parameters; `None` keeps the current value.
    Set { direction: Direction, rate_bps: Option<u64>, delay_ns: Option<u64>, jitter_ns: Option<u64>, loss: Option<f64> },
    /// `node` withdraws its address on this link from MPTCP (REMOVE_ADDR);
    /// the link itself is untouched.
    RemoveAddr { node: NodeId, node_name: String, iface: usize, iface_name: String, addr: Ipv4Addr },
    /// `node` puts that address back in service.
    AddAddr { node: NodeId, node_name: String, iface: usize, iface_name: String, addr: Ipv4Addr },
    /// `node` marks that address backup or not: MP_PRIO on its subflows.
    Prio { node: NodeId, node_name: String, iface: usize, iface_name: String, addr: Ipv4Addr, backup: bool },
}

impl LinkAction {
    /// Whether the event changes the link (not a host's addresses).
    pub fn is_link_change(&self) -> bool {
        matches!(self, LinkAction::Down | LinkAction::Up | LinkAction::Set { .. })
    }

    /// The host address an address event is about: (node, address).
    pub fn host_addr(&self) -> Option<(NodeId, Ipv4Addr)> {
        match self {
            LinkAction::RemoveAddr { node, addr, .. } | LinkAction::AddAddr { node, addr, .. } | LinkAction::Prio { node, addr, .. } => Some((*node, *addr)),
            _ => None,
        }
    }
}

// ------------------------------------------------------------ middleboxes

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Middlebox {
    pub id: usize,
    pub action: MiddleboxAction,
    pub placement: Placement,
    /// The box acts on packets from `from_ns` until `until_ns` (None:
    /// to the end); outside that window packets pass it untouched.
    pub from_ns: u64,
    pub until_ns: Option<u64>,
}

impl Middlebox {
    /// Whether the box acts on a packet passing at `now_ns`.
    pub fn active_at(&self, now_ns: u64) -> bool {
        now_ns >= self.from_ns && self.until_ns.is_none_or(|u| now_ns < u)
    }

    /// Whether the box is there for only part of the run.
    pub fn has_window(&self) -> bool {
        self.from_ns > 0 || self.until_ns.is_some()
    }
}

/// What a middlebox does. The scenario types the two kinds it must
/// understand itself (a load balancer's VIP takes part in routing; the
/// attacker is the adversarial matrix's); every other kind is a plug-in of
/// crates/backend, kept as its table.
#[derive(Debug, Clone, PartialEq)]
pub enum MiddleboxAction {
    /// A layer-4 load balancer for `vip` in front of `backends` (hosts
    /// linked to its router, each holding `vip` on its loopback).
    LoadBalancer { mode: BalancerMode, vip: Ipv4Addr, backends: Vec<String>, table: u64, idle_ns: u64 },
    /// An attacker on a link, seeing both directions (the attack, when and
    /// how often it strikes).
    Attacker(Mount),
    /// A kind of mplab-backend's middlebox registry (option stripping,
    /// NAT, resegmenting, rewriting, ...).
    Plugin(MiddleboxPlugin),
}

/// A middlebox of a kind the backends' registry holds, kept as the
/// scenario gave it: `mplab_backend::plugins::check` reads and checks the
/// table and fills in `resolved`, as for a [`Queue`].
#[derive(Debug, Clone, PartialEq)]
pub struct MiddleboxPlugin {
    /// `kind` and the kind's fields.
    pub table: PluginTable,
    /// Where the table is in the scenario (`middleboxes[2]`), for errors.
    pub path: String,
    /// The kind's validated parameters (`kind` first), once checked.
    pub resolved: Option<Resolved>,
}

impl MiddleboxPlugin {
    /// The table found at `path` of the scenario, unchecked.
    pub fn new(table: PluginTable, path: impl Into<String>) -> Self {
        MiddleboxPlugin { table, path: path.into(), resolved: None }
    }
}

/// The typed kinds' fields as they serialise, `kind` first.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum TypedAction<'a> {
    LoadBalancer { mode: BalancerMode, vip: Ipv4Addr, backends: &'a [String], table: u64, idle_ns: u64 },
    Attacker {
        attack: AttackKind,
        at_ns: u64,
        count: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        after: Option<Moment>,
    },
}

/// `kind` first, then its validated parameters (a plug-in's table as given
/// until the backend has checked it).
impl Serialize for MiddleboxAction {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MiddleboxAction::LoadBalancer { mode, vip, backends, table, idle_ns } => TypedAction::LoadBalancer { mode: *mode, vip: *vip, backends, table: *table, idle_ns: *idle_ns }.serialize(s),
            MiddleboxAction::Attacker(m) => TypedAction::Attacker { attack: m.attack, at_ns: m.at_ns, count: m.count, after: m.after }.serialize(s),
            MiddleboxAction::Plugin(p) => match &p.resolved {
                Some(r) => r.serialize(s),
                None => p.table.serialize(s),
            },
        }
    }
}

/// How a load balancer picks a backend (see mplab-backend's `balancer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BalancerMode {
    /// Hash of (source IP, destination IP): unaware of MPTCP.
    IpHash,
    /// Maglev consistent hashing of the 5-tuple and a connection table.
    FiveTuple,
    /// MPTCP-aware: MP_JOINs by the token of the server's key.
    Token,
    /// Joins bypass the balancer: backends refuse joins to the VIP (the C
    /// flag) and announce their own address.
    Stateless,
}

impl BalancerMode {
    pub const ALL: [BalancerMode; 4] = [BalancerMode::IpHash, BalancerMode::FiveTuple, BalancerMode::Token, BalancerMode::Stateless];

    pub fn name(self) -> &'static str {
        match self {
            BalancerMode::IpHash => "iphash",
            BalancerMode::FiveTuple => "fivetuple",
            BalancerMode::Token => "token",
            BalancerMode::Stateless => "stateless",
        }
    }

    pub fn from_name(s: &str) -> Option<BalancerMode> {
        BalancerMode::ALL.into_iter().find(|m| m.name() == s)
    }
}

impl MiddleboxAction {
    /// The kind's name, as scenario files write it.
    pub fn kind(&self) -> &str {
        match self {
            MiddleboxAction::LoadBalancer { .. } => "load_balancer",
            MiddleboxAction::Attacker(_) => "attacker",
            MiddleboxAction::Plugin(p) => &p.table.kind,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Placement {
    Link { link: LinkId, link_name: String, direction: Direction },
    Node { node: NodeId, node_name: String },
}

// ----------------------------------------------------------------- probes

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probes {
    pub interval_ns: u64,
    pub pcap: Vec<CapturePoint>,
    pub cwnd: bool,
    pub srtt: bool,
    /// Flows whose cwnd/srtt are sampled.
    pub flows: Vec<FlowId>,
    /// Links whose queue lengths are sampled.
    pub queues: Vec<LinkId>,
    /// Bytes of each packet a pcap keeps; 0: whole packets.
    #[serde(skip_serializing_if = "is_zero")]
    pub snaplen: u32,
    /// Multipath QUIC ends write a qlog trace each (`qlog/` in `out_dir`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub qlog: bool,
    /// The results directory of the run, set by whoever runs it (not part
    /// of the scenario): where endpoints write what they record themselves
    /// (qlog traces, the TLS key log beside the pcaps). None: nowhere.
    #[serde(skip)]
    pub out_dir: Option<std::path::PathBuf>,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapturePoint {
    pub node: NodeId,
    pub node_name: String,
    pub iface: usize,
    pub iface_name: String,
}

impl Network {
    /// The nodes a packet from `src` (an address of node `from`) to `dst`
    /// visits, following the first next hop of each route (ECMP spreads
    /// flows over the others). `Err` says where delivery fails.
    pub fn trace(&self, from: NodeId, src: Ipv4Addr, dst: Ipv4Addr) -> Result<Vec<NodeId>, String> {
        let mut at = from;
        let mut path = vec![from];
        // A loop-free path visits each node at most once.
        for _ in 0..=self.nodes.len() {
            let node = self.nodes.get(at).ok_or_else(|| format!("no node {at}"))?;
            if node.owns(dst) {
                return Ok(path);
            }
            if at != from && node.kind == NodeKind::Host {
                return Err(format!("{} is a host and does not forward to {dst}", node.name));
            }
            let bound = (at == from).then_some(src);
            let route = node.lookup(bound, dst).ok_or_else(|| format!("{} has no route to {dst}", node.name))?;
            let hop = route.nexthops.first().ok_or_else(|| format!("{}'s route to {} has no next hop", node.name, route.dst))?;
            let iface = node.interfaces.get(hop.iface).ok_or_else(|| format!("{} has no interface {}", node.name, hop.iface))?;
            at = iface.peer;
            path.push(at);
        }
        Err(format!("routing loop towards {dst}"))
    }
}
