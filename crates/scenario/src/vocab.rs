//! The words the scenario file and the resolved network share: enums a
//! file names by value (`transport = "mptcp"`, `direction = "ab"`) and the
//! backends read unchanged from the [`Network`](crate::Network). Both
//! `schema` and `network` re-export them, so either path names the same type.

use std::fmt;

use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------- routing

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

// ------------------------------------------------------------------ links

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

// ------------------------------------------------------------------ mptcp

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndpointFlag {
    Signal,
    Subflow,
    Backup,
    Fullmesh,
    /// Linux 6.18: the address is used once, for a subflow to an address
    /// the peer announces (instead of the one routing picks).
    Laminar,
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

// ------------------------------------------------------------ middleboxes

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
