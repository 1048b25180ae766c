//! The scenario file as written: serde types mirroring the TOML schema.
//!
//! Everything here is `deny_unknown_fields` so a typo (`rtae = ...`) is an
//! error with a line number instead of a silently ignored setting. Checks
//! that need more than one field (does the node exist, do subnets overlap)
//! live in `resolve`; this module only describes shapes and defaults.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use serde::de::{self, Deserializer, IgnoredAny, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::topology::Topology;
use crate::units::{Duration, Probability, Rate, Size};

fn default_seed() -> u64 {
    1
}
fn default_duration() -> Duration {
    Duration::from_secs(30)
}
fn yes() -> bool {
    true
}

/// A whole scenario file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// Seeds every random choice a backend makes (loss, jitter, ECMP hash
    /// salt, initial sequence numbers), so a run can be repeated exactly.
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default = "default_duration")]
    pub duration: Duration,
    /// How routers choose among equal-cost next hops.
    #[serde(default)]
    pub ecmp: EcmpMode,
    /// Filled in by a second, kind-specific pass (see `load`): serde's
    /// internally tagged enums buffer their content and lose the spans that
    /// give errors their line numbers.
    #[serde(skip)]
    pub topology: Option<Topology>,
    #[serde(default, rename = "topology")]
    pub(crate) topology_raw: Option<toml::Value>,
    #[serde(default)]
    pub nodes: Vec<NodeSpec>,
    #[serde(default)]
    pub links: Vec<LinkSpec>,
    #[serde(default)]
    pub routes: Vec<RouteSpec>,
    #[serde(default)]
    pub transport: TransportSpec,
    #[serde(default)]
    pub flows: Vec<FlowSpec>,
    #[serde(default)]
    pub events: Vec<EventSpec>,
    #[serde(default)]
    pub middleboxes: Vec<MiddleboxSpec>,
    #[serde(default)]
    pub probes: ProbesSpec,
}

/// How a router chooses among its equal-cost next hops (top-level `ecmp`).
/// Either way a flow (5-tuple) stays on one next hop per router.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EcmpMode {
    /// A hash of the 5-tuple, salted per router from the seed (Linux's
    /// multipath hash policy 1).
    #[default]
    Hash,
    /// A uniformly random next hop the first time the router sees a flow,
    /// drawn from the router's seeded stream and then remembered.
    Random,
}

// ------------------------------------------------------------------ nodes

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// An end system: runs applications, never forwards.
    #[default]
    Host,
    /// Forwards packets; keeps every equal-cost next hop (ECMP).
    Router,
}

impl fmt::Display for NodeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NodeKind::Host => "host",
            NodeKind::Router => "router",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    #[serde(default)]
    pub kind: NodeKind,
    /// Which stack runs on this node when a backend can mix them
    /// (`"kernel"`, `"mplab"`); free text checked by the backend.
    #[serde(default)]
    pub stack: Option<String>,
}

// ------------------------------------------------------------------ links

/// `"node"` or `"node:ifname"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointRef {
    pub node: String,
    pub iface: Option<String>,
}

impl FromStr for EndpointRef {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (node, iface) = match s.split_once(':') {
            Some((n, i)) => (n, Some(i)),
            None => (s, None),
        };
        if node.is_empty() || iface.is_some_and(str::is_empty) {
            return Err(format!("invalid endpoint {s:?}: expected \"node\" or \"node:ifname\""));
        }
        Ok(EndpointRef { node: node.to_string(), iface: iface.map(str::to_string) })
    }
}

impl fmt::Display for EndpointRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.iface {
            Some(i) => write!(f, "{}:{i}", self.node),
            None => f.write_str(&self.node),
        }
    }
}

/// An IPv4 address with a prefix length: `"10.0.1.2/24"`. Without `/len`
/// the prefix is taken from the link's `subnet`, or /24.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cidr {
    pub addr: Ipv4Addr,
    pub prefix: Option<u8>,
}

impl Cidr {
    pub fn new(addr: Ipv4Addr, prefix: u8) -> Self {
        Cidr { addr, prefix: Some(prefix) }
    }
}

impl FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("invalid address {s:?}: expected an IPv4 address like \"10.0.1.2/24\"");
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: Ipv4Addr = a.trim().parse().map_err(|_| bad())?;
        let prefix = match p {
            Some(p) => {
                let n: u8 = p.trim().parse().map_err(|_| bad())?;
                if n > 32 {
                    return Err(format!("invalid address {s:?}: prefix length must be at most 32"));
                }
                Some(n)
            }
            None => None,
        };
        Ok(Cidr { addr, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.prefix {
            Some(p) => write!(f, "{}/{p}", self.addr),
            None => write!(f, "{}", self.addr),
        }
    }
}

/// Deserialises any `FromStr<Err = String>` type from a TOML string.
macro_rules! string_deserialize {
    ($ty:ty, $expecting:expr) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$ty, E> {
                        v.parse().map_err(E::custom)
                    }
                }
                d.deserialize_str(V)
            }
        }
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    };
}

string_deserialize!(EndpointRef, "a node name or \"node:ifname\"");
string_deserialize!(Cidr, "an IPv4 address like \"10.0.1.2/24\"");

/// Loss process on a link direction.
#[derive(Debug, Clone, Copy, PartialEq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum LossModel {
    /// Each packet is lost independently with probability `loss`.
    #[default]
    Bernoulli,
    /// Two-state Markov chain (netem `loss gemodel`): `p_gb` good→bad,
    /// `p_bg` bad→good, and the loss probability in each state.
    GilbertElliott { p_gb: Probability, p_bg: Probability, loss_good: Probability, loss_bad: Probability },
}

/// Shape of a link's jitter: the random extra delay added to each packet,
/// never negative, so no packet arrives before the propagation delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JitterDistribution {
    /// Uniform in [0, jitter].
    #[default]
    Uniform,
    /// Half-normal: |N(0, jitter)|, `jitter` is the normal's σ (mean
    /// 0.80·jitter, standard deviation 0.60·jitter).
    Normal,
    /// Pareto (type I) with shape 3 and mean `jitter`: at least
    /// 2/3·jitter, heavy-tailed above (standard deviation 0.58·jitter).
    Pareto,
}

/// Queue at the sending side of a link direction.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueSpec {
    /// Tail drop with a limit in packets or in bytes (exactly one).
    Droptail {
        #[serde(default)]
        packets: Option<u64>,
        #[serde(default)]
        bytes: Option<Size>,
    },
    /// Random Early Detection (Floyd & Jacobson), thresholds in bytes like
    /// tc-red: `min_th`, `max_th`, hard `limit`, `max_p` at `max_th`,
    /// EWMA `weight` (default 0.002) and `gentle` (default false).
    Red {
        min_th: Size,
        max_th: Size,
        max_p: Probability,
        limit: Size,
        #[serde(default)]
        weight: Option<f64>,
        #[serde(default)]
        gentle: bool,
    },
}

impl QueueSpec {
    /// The name scenario files use (the registry's key).
    pub fn name(&self) -> &'static str {
        match self {
            QueueSpec::Droptail { .. } => "droptail",
            QueueSpec::Red { .. } => "red",
        }
    }
}

/// Per-direction overrides of a link (`[links.ab]`, `[links.ba]`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionSpec {
    #[serde(default)]
    pub rate: Option<Rate>,
    #[serde(default)]
    pub delay: Option<Duration>,
    #[serde(default)]
    pub jitter: Option<Duration>,
    #[serde(default)]
    pub jitter_distribution: Option<JitterDistribution>,
    #[serde(default)]
    pub reorder: Option<bool>,
    #[serde(default)]
    pub loss: Option<Probability>,
    #[serde(default)]
    pub loss_model: Option<LossModel>,
    /// Probability that a packet is sent twice (netem's `duplicate`).
    #[serde(default)]
    pub duplicate: Option<Probability>,
    #[serde(default)]
    pub queue: Option<QueueSpec>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Defaults to `"a-b"` with the node names.
    #[serde(default)]
    pub name: Option<String>,
    pub a: EndpointRef,
    pub b: EndpointRef,
    #[serde(default)]
    pub rate: Option<Rate>,
    /// One-way, applied in each direction (like netem on both ends).
    #[serde(default)]
    pub delay: Option<Duration>,
    #[serde(default)]
    pub jitter: Option<Duration>,
    /// `uniform` (default), `normal` or `pareto`; see [`JitterDistribution`].
    #[serde(default)]
    pub jitter_distribution: Option<JitterDistribution>,
    /// Let jitter reorder packets (default false: a packet never arrives
    /// before the one sent ahead of it).
    #[serde(default)]
    pub reorder: Option<bool>,
    #[serde(default)]
    pub loss: Option<Probability>,
    #[serde(default)]
    pub loss_model: Option<LossModel>,
    /// Probability that a packet is sent twice (netem's `duplicate`).
    #[serde(default)]
    pub duplicate: Option<Probability>,
    #[serde(default)]
    pub queue: Option<QueueSpec>,
    #[serde(default)]
    pub a_addr: Option<Cidr>,
    #[serde(default)]
    pub b_addr: Option<Cidr>,
    #[serde(default)]
    pub subnet: Option<Cidr>,
    #[serde(default)]
    pub mtu: Option<u32>,
    #[serde(default)]
    pub ab: Option<DirectionSpec>,
    #[serde(default)]
    pub ba: Option<DirectionSpec>,
    #[serde(default = "yes")]
    pub up: bool,
}

// ----------------------------------------------------------------- routes

/// `"main"` or a table number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableRef {
    Main,
    Id(u32),
}

impl<'de> Deserialize<'de> for TableRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TableRef;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"main\" or a routing table number")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TableRef, E> {
                match v {
                    "main" => Ok(TableRef::Main),
                    _ => v.parse().map(TableRef::Id).map_err(|_| E::custom(format!("invalid table {v:?}: expected \"main\" or a number"))),
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<TableRef, E> {
                u32::try_from(v).map(TableRef::Id).map_err(|_| E::custom(format!("invalid table {v}: expected 1..=4294967295")))
            }
        }
        d.deserialize_any(V)
    }
}

/// An explicit route; replaces a computed route to the same destination in
/// the same table, or adds one.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    pub node: String,
    /// `"10.0.2.0/24"` or `"default"`.
    pub dst: String,
    #[serde(default)]
    pub via: Option<Ipv4Addr>,
    #[serde(default)]
    pub dev: Option<String>,
    #[serde(default)]
    pub table: Option<TableRef>,
}

// -------------------------------------------------------------- transport

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransportSpec {
    #[serde(default)]
    pub tcp: TcpSpec,
    #[serde(default)]
    pub mptcp: MptcpSpec,
    #[serde(default)]
    pub sctp: SctpSpec,
}

fn default_cc() -> String {
    "cubic".to_string()
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpSpec {
    /// Congestion control name (`"cubic"`, `"reno"`, `"bbr"`, ...); the
    /// backend says which it has.
    #[serde(default = "default_cc")]
    pub cc: String,
    /// Socket buffers, like `iperf -w`; unset means the stack autotunes.
    #[serde(default)]
    pub rcv_buf: Option<Size>,
    #[serde(default)]
    pub snd_buf: Option<Size>,
    #[serde(default)]
    pub mss: Option<Size>,
    #[serde(default = "yes")]
    pub sack: bool,
    #[serde(default = "yes")]
    pub timestamps: bool,
    #[serde(default = "yes")]
    pub delayed_ack: bool,
    #[serde(default = "yes")]
    pub wscale: bool,
    /// Floor of the retransmission timeout (Linux: 200 ms). Data-centre
    /// scenarios lower it, as htsim and DCTCP studies do, since a 200 ms
    /// timeout in a 100 µs network stalls a flow for 2000 RTTs.
    #[serde(default)]
    pub rto_min: Option<Duration>,
}

impl Default for TcpSpec {
    fn default() -> Self {
        TcpSpec { cc: default_cc(), rcv_buf: None, snd_buf: None, mss: None, sack: true, timestamps: true, delayed_ack: true, wscale: true, rto_min: None }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PathManager {
    /// The backend's stock behaviour.
    #[default]
    Default,
    /// A subflow between every pair of local and remote addresses.
    Fullmesh,
    /// `subflows` subflows over the same address pair, different ports.
    Ndiffports,
    /// Exactly what `[[transport.mptcp.endpoints]]` says (`ip mptcp endpoint`).
    Endpoints,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MptcpLimits {
    /// Extra subflows per connection (`ip mptcp limits subflows`).
    #[serde(default)]
    pub subflows: Option<u32>,
    #[serde(default)]
    pub add_addr_accepted: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndpointFlag {
    Signal,
    Subflow,
    Backup,
    Fullmesh,
}

/// An MPTCP endpoint (`ip mptcp endpoint add ADDR dev IFACE FLAGS`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointSpec {
    pub node: String,
    #[serde(default)]
    pub addr: Option<Ipv4Addr>,
    #[serde(default)]
    pub iface: Option<String>,
    #[serde(default)]
    pub flags: Vec<EndpointFlag>,
}

fn default_scheduler() -> String {
    "default".to_string()
}

/// Whose choices an MPTCP end makes where mplab's stack and Linux differ
/// (RTO backoff of subflows, stale subflows, the default scheduler,
/// opportunistic retransmission): docs/validation.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StackProfile {
    #[default]
    Mplab,
    Linux,
}

impl StackProfile {
    pub fn name(self) -> &'static str {
        match self {
            StackProfile::Mplab => "mplab",
            StackProfile::Linux => "linux",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MptcpSpec {
    #[serde(default)]
    pub path_manager: PathManager,
    /// ndiffports: how many subflows to open; other path managers: the most
    /// subflows a connection may have.
    #[serde(default)]
    pub subflows: Option<u32>,
    #[serde(default)]
    pub checksum: bool,
    /// Packet scheduler name (`"default"`, `"minrtt"`, `"roundrobin"`, ...),
    /// validated by the backend.
    #[serde(default = "default_scheduler")]
    pub scheduler: String,
    /// Coupled congestion control for MPTCP subflows (`"lia"`, `"olia"`,
    /// ...); unset means the TCP `cc`.
    #[serde(default)]
    pub cc: Option<String>,
    #[serde(default)]
    pub limits: MptcpLimits,
    #[serde(default)]
    pub endpoints: Vec<EndpointSpec>,
    /// Opportunistic retransmission (Raiciu et al., NSDI 2012): reinject
    /// the data blocking the window head on a faster subflow.
    #[serde(default)]
    pub opportunistic_retransmit: bool,
    /// Halve the cwnd of the subflow holding up the window head, at most
    /// once per RTT (same paper).
    #[serde(default)]
    pub penalize: bool,
    /// The stack profile of every host (`"mplab"` or `"linux"`).
    #[serde(default)]
    pub profile: StackProfile,
    /// Per-host profiles, by node name, over `profile`.
    #[serde(default)]
    pub profiles: std::collections::BTreeMap<String, StackProfile>,
}

impl Default for MptcpSpec {
    fn default() -> Self {
        MptcpSpec {
            path_manager: PathManager::Default,
            subflows: None,
            checksum: false,
            scheduler: default_scheduler(),
            cc: None,
            limits: MptcpLimits::default(),
            endpoints: Vec::new(),
            opportunistic_retransmit: false,
            penalize: false,
            profile: StackProfile::Mplab,
            profiles: std::collections::BTreeMap::new(),
        }
    }
}

/// Which CMT algorithm a `cmt-sctp` flow runs (usrsctp's
/// `sctp_cmt_on_off` 1 to 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CmtVariant {
    /// Iyengar et al.: an uncoupled RFC 9260 window per destination.
    #[default]
    Cmt,
    /// Resource pooling (Dreibholz et al.), shares of the summed ssthresh.
    Rpv1,
    /// Resource pooling, shares weighted by cwnd / srtt.
    Rpv2,
    /// The coupled increase of RFC 6356 (LIA), as MPTCP.
    Mptcp,
}

/// Buffer splitting of CMT-SCTP (usrsctp's `sctp_buffer_splitting`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferSplitting {
    #[default]
    Off,
    /// Each destination may fill send_buffer / destinations.
    Send,
    /// Each destination may fill the peer's a_rwnd / destinations.
    Receive,
    Both,
}

/// Where CMT retransmits (Iyengar et al. 2006, section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SctpRtxPolicy {
    /// To the destination of the original transmission.
    Same,
    /// To the active destination with the largest cwnd.
    Cwnd,
    /// To the active destination with the largest ssthresh (recommended).
    #[default]
    Ssthresh,
}

/// Whose choices the simulator's SCTP makes where RFC 9260 leaves room or
/// the FreeBSD stack departs from it (docs/sctp.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SctpProfile {
    /// RFC 9260 as written.
    #[default]
    Rfc,
    /// As usrsctp 0.9.5 (the kernel backend's SCTP): 256 bytes charged
    /// against the peer's window per outstanding chunk.
    Usrsctp,
}

/// `[transport.sctp]`: settings of `sctp` and `cmt-sctp` flows.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SctpSpec {
    #[serde(default)]
    pub cmt: CmtVariant,
    /// CMT delayed ack.
    #[serde(default = "yes")]
    pub dac: bool,
    #[serde(default = "yes")]
    pub nr_sack: bool,
    #[serde(default)]
    pub buffer_splitting: BufferSplitting,
    /// CMT's retransmission policy (plain SCTP retransmits after a timeout
    /// to an alternate destination, RFC 9260 6.4.1).
    #[serde(default)]
    pub rtx_policy: SctpRtxPolicy,
    /// Heartbeat interval of idle destinations (RFC 9260: 30 s).
    #[serde(default)]
    pub heartbeat_interval: Option<Duration>,
    /// Socket buffers (SO_RCVBUF / SO_SNDBUF); a flow's `rcv_buf` /
    /// `snd_buf` override them. Unset: 256 KB each.
    #[serde(default)]
    pub rcv_buf: Option<Size>,
    #[serde(default)]
    pub snd_buf: Option<Size>,
    /// RTO.Min and RTO.Initial (RFC 9260: 1 s each).
    #[serde(default)]
    pub rto_min: Option<Duration>,
    #[serde(default)]
    pub rto_initial: Option<Duration>,
    /// The simulator's stack profile (the kernel backend runs usrsctp
    /// whatever this says).
    #[serde(default)]
    pub profile: SctpProfile,
}

impl Default for SctpSpec {
    fn default() -> Self {
        SctpSpec {
            cmt: CmtVariant::Cmt,
            dac: true,
            nr_sack: true,
            buffer_splitting: BufferSplitting::Off,
            rtx_policy: SctpRtxPolicy::Ssthresh,
            heartbeat_interval: None,
            rcv_buf: None,
            snd_buf: None,
            rto_min: None,
            rto_initial: None,
            profile: SctpProfile::Rfc,
        }
    }
}

// ------------------------------------------------------------------ flows

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportKind {
    Tcp,
    Mptcp,
    /// SCTP (RFC 9260): multihomed, new data to the primary destination.
    Sctp,
    /// SCTP with Concurrent Multipath Transfer over every destination.
    #[serde(rename = "cmt-sctp", alias = "cmt_sctp")]
    CmtSctp,
    /// UDP datagrams (RFC 768), for the real-time applications (`voip`,
    /// `game`): no connection, no retransmission, no congestion control.
    Udp,
    /// QUIC (RFC 9000) over UDP, quinn's stack: a byte stream each way for
    /// the stream applications, with QUIC's own congestion control and
    /// loss recovery.
    Quic,
}

impl TransportKind {
    /// The name scenario files use.
    pub fn name(self) -> &'static str {
        match self {
            TransportKind::Tcp => "tcp",
            TransportKind::Mptcp => "mptcp",
            TransportKind::Sctp => "sctp",
            TransportKind::CmtSctp => "cmt-sctp",
            TransportKind::Udp => "udp",
            TransportKind::Quic => "quic",
        }
    }
    pub fn is_sctp(self) -> bool {
        matches!(self, TransportKind::Sctp | TransportKind::CmtSctp)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AppKind {
    /// Send as fast as possible, `bytes` or until `stop` (iperf).
    #[default]
    Bulk,
    /// Send at `rate` (iperf3 -b).
    Rate,
    /// `to` sends `bytes` back to `from`; the result is the completion time.
    Download,
    /// `count` request/response exchanges of `request_size`/`response_size`,
    /// one every `interval`.
    Request,
    /// A constant-bit-rate voice stream over UDP, `from` to `to`: one
    /// `packet_size` datagram every `interval`; the result is the call's
    /// quality (loss, delay, jitter, interruptions, MOS).
    Voip,
    /// A game-like stream over UDP: `from` sends a small `packet_size`
    /// update every `interval`, `to` echoes each; the results are the
    /// round-trip latency percentiles and the loss.
    Game,
    /// A hybrid-access tunnel between two gateway routers (`from`: the
    /// CPE, `to`: the HAG): the IPv4 packets they forward between their
    /// other interfaces travel in this connection's byte stream, each
    /// behind a 2-byte length, up to `mtu` bytes.
    Tunnel,
    /// A pair of RFC 8803 Transport Converters in two gateway routers
    /// (`from`: the CPE, `to`: the HAG): each TCP connection the CPE
    /// forwards from its LAN side becomes one connection of this flow's
    /// transport (MPTCP) to the HAG, which opens plain TCP to the server.
    Converter,
}

impl AppKind {
    /// Runs between two gateway routers rather than two hosts.
    pub fn between_gateways(self) -> bool {
        matches!(self, AppKind::Tunnel | AppKind::Converter)
    }

    /// The name scenario files use (the registry's key).
    pub fn name(self) -> &'static str {
        match self {
            AppKind::Bulk => "bulk",
            AppKind::Rate => "rate",
            AppKind::Download => "download",
            AppKind::Request => "request",
            AppKind::Voip => "voip",
            AppKind::Game => "game",
            AppKind::Tunnel => "tunnel",
            AppKind::Converter => "converter",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// Defaults to `flow{index}`.
    #[serde(default)]
    pub name: Option<String>,
    /// The node that opens the connection (the iperf client).
    pub from: String,
    /// The node that listens.
    pub to: String,
    #[serde(default)]
    pub from_addr: Option<Ipv4Addr>,
    #[serde(default)]
    pub to_addr: Option<Ipv4Addr>,
    pub transport: TransportKind,
    #[serde(default)]
    pub app: AppKind,
    #[serde(default)]
    pub bytes: Option<Size>,
    #[serde(default)]
    pub rate: Option<Rate>,
    #[serde(default)]
    pub request_size: Option<Size>,
    #[serde(default)]
    pub response_size: Option<Size>,
    #[serde(default)]
    pub count: Option<u64>,
    #[serde(default)]
    pub interval: Option<Duration>,
    /// UDP payload of each datagram of a `voip` or `game` flow.
    #[serde(default)]
    pub packet_size: Option<Size>,
    /// The largest datagram a `tunnel` carries (its IPv4 packet), bytes.
    #[serde(default)]
    pub mtu: Option<u32>,
    /// The traffic class a `tunnel` carries: "all" (the default), "udp",
    /// "tcp", or either with a port or port range ("udp:5001",
    /// "udp:5000-5099", matching the source or destination port).
    #[serde(default)]
    pub carries: Option<String>,
    /// How a `tunnel` carries its packets: "stream" (frames in the
    /// connection's byte stream, the default) or "datagram" (each packet
    /// in a UDP datagram on every access link, the first copy forwarded).
    #[serde(default)]
    pub mode: Option<String>,
    /// Destinations a `converter` refuses (RFC 8803 Not Authorized), as
    /// prefixes ("192.0.2.0/24", or an address).
    #[serde(default)]
    pub refuse: Option<Vec<String>>,
    /// A `converter`'s CPE sends its Convert request in the SYN (TCP Fast
    /// Open, RFC 8803's 0-RTT) rather than after the handshake.
    #[serde(default)]
    pub fast_open: Option<bool>,
    #[serde(default)]
    pub start: Option<Duration>,
    #[serde(default)]
    pub stop: Option<Duration>,
    /// Listening port on `to`; assigned from 5001 up when unset.
    #[serde(default)]
    pub port: Option<u16>,
    // Per-flow overrides of [transport].
    #[serde(default)]
    pub cc: Option<String>,
    #[serde(default)]
    pub rcv_buf: Option<Size>,
    #[serde(default)]
    pub snd_buf: Option<Size>,
    #[serde(default)]
    pub path_manager: Option<PathManager>,
    #[serde(default)]
    pub subflows: Option<u32>,
    #[serde(default)]
    pub scheduler: Option<String>,
    #[serde(default)]
    pub checksum: Option<bool>,
    /// Stack profile of both ends, over the hosts' (`[transport.mptcp]`).
    #[serde(default)]
    pub profile: Option<StackProfile>,
}

// ----------------------------------------------------------------- events

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventAction {
    Down,
    Up,
    Set,
    /// The host withdraws the interface's address from MPTCP (REMOVE_ADDR;
    /// `ip mptcp endpoint delete`); needs `node` and `iface`.
    RemoveAddr,
    /// The host puts it back (`ip mptcp endpoint add`): announced or
    /// joined again, as the path manager does at establishment.
    AddAddr,
}

/// Which direction(s) of a link something applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// From endpoint `a` to endpoint `b`.
    Ab,
    Ba,
    #[default]
    Both,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    pub at: Duration,
    /// The link by name ...
    #[serde(default)]
    pub link: Option<String>,
    /// ... or by one of its interfaces.
    #[serde(default)]
    pub node: Option<String>,
    #[serde(default)]
    pub iface: Option<String>,
    pub action: EventAction,
    #[serde(default)]
    pub direction: Option<Direction>,
    #[serde(default)]
    pub rate: Option<Rate>,
    #[serde(default)]
    pub delay: Option<Duration>,
    #[serde(default)]
    pub jitter: Option<Duration>,
    #[serde(default)]
    pub loss: Option<Probability>,
}

// ------------------------------------------------------------ middleboxes

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MiddleboxKind {
    /// Removes TCP option 30 (like a Cisco ASA without `tcp-options range 30 30 allow`).
    StripMptcp,
    /// Source NAT.
    Nat,
    /// Splits or coalesces segments (TSO/GRO, proxies).
    Resegment,
    /// Changes payload bytes and fixes the TCP checksum (an application
    /// gateway editing content): only MPTCP's DSS checksum can tell.
    Rewrite,
    /// A layer-4 load balancer in front of backends sharing a VIP.
    LoadBalancer,
    /// An attacker on a link (both directions): forges, replays or
    /// changes MPTCP segments (the adversarial matrix, `mplab attack`).
    Attacker,
}

impl MiddleboxKind {
    /// The name scenario files use (the registry's key).
    pub fn name(self) -> &'static str {
        match self {
            MiddleboxKind::StripMptcp => "strip_mptcp",
            MiddleboxKind::Nat => "nat",
            MiddleboxKind::Resegment => "resegment",
            MiddleboxKind::Rewrite => "rewrite",
            MiddleboxKind::LoadBalancer => "load_balancer",
            MiddleboxKind::Attacker => "attacker",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StripOn {
    /// Only SYN and SYN/ACK: the handshake falls back to plain TCP.
    Syn,
    /// Every segment.
    #[default]
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResegmentMode {
    Coalesce,
    Split,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MiddleboxSpec {
    pub kind: MiddleboxKind,
    /// Placement on a link (and `direction`) ...
    #[serde(default)]
    pub link: Option<String>,
    #[serde(default)]
    pub direction: Option<Direction>,
    /// ... or on a router.
    #[serde(default)]
    pub node: Option<String>,
    /// strip_mptcp: which segments lose the option (default all).
    #[serde(default)]
    pub on: Option<StripOn>,
    /// resegment: "coalesce" or "split"; load_balancer: "iphash",
    /// "fivetuple", "token" or "stateless".
    #[serde(default)]
    pub mode: Option<String>,
    /// resegment: largest coalesced / split segment payload.
    #[serde(default)]
    pub size: Option<Size>,
    /// resegment, coalesce: how long a segment waits at the box for the
    /// next one of its flow (default 1 ms, an LRO-like flush timer).
    #[serde(default)]
    pub hold: Option<Duration>,
    /// rewrite: one changed byte per this many stream bytes (default 1 MB).
    #[serde(default)]
    pub every: Option<Size>,
    /// nat: the address sources are rewritten to (default: the outgoing
    /// interface's address).
    #[serde(default)]
    pub addr: Option<Ipv4Addr>,
    /// load_balancer: the virtual address clients connect to.
    #[serde(default)]
    pub vip: Option<Ipv4Addr>,
    /// load_balancer: the hosts behind it (each linked to its router).
    #[serde(default)]
    pub backends: Option<Vec<String>>,
    /// load_balancer: entries of its connection table and of its token
    /// table, each (default 1048576).
    #[serde(default)]
    pub table: Option<u64>,
    /// load_balancer: how long an unused entry stays (default 300s).
    #[serde(default)]
    pub idle: Option<Duration>,
    /// attacker: which attack (see `mplab attack --list`).
    #[serde(default)]
    pub attack: Option<String>,
    /// attacker: when it strikes (default 3s).
    #[serde(default)]
    pub at: Option<Duration>,
    /// attacker: how many segments it forges or changes where the attack
    /// repeats (a flood, blind guesses, rewriting; each has its default).
    #[serde(default)]
    pub count: Option<u64>,
    /// When the box starts acting on packets (default: from the start);
    /// before, packets pass it untouched, as if it were not there.
    #[serde(default)]
    pub from: Option<Duration>,
    /// When it stops acting (default: never): a firewall rule added and
    /// removed, a path moved through another box.
    #[serde(default)]
    pub until: Option<Duration>,
}

// ----------------------------------------------------------------- probes

fn default_interval() -> Duration {
    Duration::from_millis(100)
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbesSpec {
    #[serde(default = "default_interval")]
    pub interval: Duration,
    /// `"node:iface"` or `"node"` (every interface of the node).
    #[serde(default)]
    pub pcap: Vec<EndpointRef>,
    /// Sample congestion windows / smoothed RTTs of the probed flows.
    #[serde(default = "yes")]
    pub cwnd: bool,
    #[serde(default = "yes")]
    pub srtt: bool,
    /// Flows to sample (default: all).
    #[serde(default)]
    pub flows: Option<Vec<String>>,
    /// Links whose queue lengths are sampled.
    #[serde(default)]
    pub queues: Vec<String>,
}

impl Default for ProbesSpec {
    fn default() -> Self {
        ProbesSpec { interval: default_interval(), pcap: Vec::new(), cwnd: true, srtt: true, flows: None, queues: Vec::new() }
    }
}

// ------------------------------------------------------------- per-path

/// A generator parameter given once for every path or as a list with one
/// entry per path: `rate = "10Mbit"` or `rate = ["10Mbit", "5Mbit"]`.
#[derive(Debug, Clone, PartialEq)]
pub enum PerPath<T> {
    All(T),
    Each(Vec<T>),
}

impl<T> PerPath<T> {
    /// The value for path `i`; callers check the length first.
    pub fn get(&self, i: usize) -> Option<&T> {
        match self {
            PerPath::All(v) => Some(v),
            PerPath::Each(v) => v.get(i),
        }
    }
    pub fn len(&self) -> Option<usize> {
        match self {
            PerPath::All(_) => None,
            PerPath::Each(v) => Some(v.len()),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for PerPath<T> {
    // Hand-written instead of `#[serde(untagged)]`, which would replace the
    // element's own error ("invalid rate ...") with "did not match any
    // variant" and lose the span.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::value::{BoolDeserializer, F64Deserializer, I64Deserializer, MapAccessDeserializer, StrDeserializer, U64Deserializer};
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = PerPath<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value or a list with one value per path")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PerPath<T>, E> {
                T::deserialize(StrDeserializer::<E>::new(v)).map(PerPath::All)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<PerPath<T>, E> {
                T::deserialize(I64Deserializer::<E>::new(v)).map(PerPath::All)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<PerPath<T>, E> {
                T::deserialize(U64Deserializer::<E>::new(v)).map(PerPath::All)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<PerPath<T>, E> {
                T::deserialize(F64Deserializer::<E>::new(v)).map(PerPath::All)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<PerPath<T>, E> {
                T::deserialize(BoolDeserializer::<E>::new(v)).map(PerPath::All)
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<PerPath<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(PerPath::All)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<PerPath<T>, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = seq.next_element()? {
                    v.push(x);
                }
                Ok(PerPath::Each(v))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Accepts and ignores the `kind` key inside a generator table: the kind
/// was already read to choose the struct.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct KindTag;

impl<'de> Deserialize<'de> for KindTag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| KindTag)
    }
}
