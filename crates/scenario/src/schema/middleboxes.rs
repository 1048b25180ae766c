//! `[[middleboxes]]` as written: the box's kind, where it sits and its
//! settings (checked per kind by [`crate::plugins::middleboxes`]).

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::units::{Duration, Size};
use crate::vocab::{Direction, StripOn};

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
