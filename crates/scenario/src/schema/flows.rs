//! `[[flows]]` as written: who talks to whom, over which transport, running
//! which application.

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::units::{Duration, Rate, Size};
use crate::plugins::transports::Transport;
use crate::vocab::StackProfile;

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
    pub transport: Transport,
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
    /// The start moves later by a random time below this, drawn from the
    /// seed: runs with other seeds then differ even without loss (as ns-3
    /// users start applications at random times).
    #[serde(default)]
    pub start_jitter: Option<Duration>,
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
    pub path_manager: Option<String>,
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
