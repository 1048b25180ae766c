//! `[transport]` as written: the TCP, MPTCP and SCTP settings every flow
//! starts from.

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::units::{Duration, Size};
use crate::vocab::{BufferSplitting, CmtVariant, EndpointFlag, SctpProfile, SctpRtxPolicy, StackProfile};

fn yes() -> bool {
    true
}

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
#[serde(deny_unknown_fields)]
pub struct MptcpLimits {
    /// Extra subflows per connection (`ip mptcp limits subflows`).
    #[serde(default)]
    pub subflows: Option<u32>,
    #[serde(default)]
    pub add_addr_accepted: Option<u32>,
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

fn default_path_manager() -> String {
    "default".to_string()
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MptcpSpec {
    /// Path manager name (`"default"`, `"fullmesh"`, `"ndiffports"`,
    /// `"endpoints"`, ...), validated by the backend.
    #[serde(default = "default_path_manager")]
    pub path_manager: String,
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
    /// How a subflow that was reset or timed out is opened again (mplab
    /// profile); unset: the profile's choice.
    #[serde(default)]
    pub rejoin: Option<RejoinSpec>,
}

/// `rejoin = { after = "1s", max = "30s" }`, or `{ enabled = false }`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RejoinSpec {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The first wait after a subflow went down.
    #[serde(default = "rejoin_after")]
    pub after: Duration,
    /// The longest wait (each attempt that does not hold doubles it).
    #[serde(default = "rejoin_max")]
    pub max: Duration,
}

fn rejoin_after() -> Duration {
    Duration::from_nanos(1_000_000_000)
}

fn rejoin_max() -> Duration {
    Duration::from_nanos(30_000_000_000)
}

impl Default for MptcpSpec {
    fn default() -> Self {
        MptcpSpec {
            path_manager: default_path_manager(),
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
            rejoin: None,
        }
    }
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
