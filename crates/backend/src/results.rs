//! The results contract every backend writes (docs/results.md): a JSON
//! summary and tidy CSV time series, so plots, sweeps and `mplab compare`
//! work the same on sim, kernel and userspace runs.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub scenario: String,
    pub backend: String,
    pub seed: u64,
    pub duration_s: f64,
    pub flows: Vec<FlowSummary>,
    pub interfaces: Vec<InterfaceSummary>,
    pub links: Vec<LinkSummary>,
    /// Things the backend could not honour exactly (e.g. a CC it lacks).
    pub notes: Vec<String>,
    /// Load balancers' counters, and the hosts behind them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub balancers: Vec<BalancerSummary>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<ServerSummary>,
    /// Attackers on links (the adversarial matrix): what each did and saw.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attacks: Vec<AttackSummary>,
}

/// One attacker: its link, its attack and its report.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AttackSummary {
    pub link: String,
    pub attack: String,
    #[serde(flatten)]
    pub report: crate::attack::AttackReport,
}

/// One load balancer instance.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct BalancerSummary {
    /// Its router.
    pub node: String,
    pub mode: String,
    pub vip: String,
    #[serde(flatten)]
    pub stats: crate::balancer::BalancerStats,
}

/// A backend host behind a load balancer: what it accepted and refused.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerSummary {
    pub node: String,
    /// Connections (initial subflows) it accepted.
    pub connections: u64,
    /// MP_JOINs it accepted, and refused with a reset (a token it does not
    /// hold: the join reached the wrong backend).
    pub joins_accepted: u64,
    pub joins_refused: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FlowSummary {
    pub name: String,
    /// "tcp" or "mptcp".
    pub transport: String,
    /// Application bytes delivered in order to the receiver, over the
    /// flow's active time (start to completion or end of run).
    pub goodput_bps: f64,
    pub bytes_delivered: u64,
    /// Every delivered byte was checked (continuity and placement).
    pub verified: bool,
    pub fallback: bool,
    pub completed: bool,
    /// Seconds from start to last byte, for bounded transfers.
    pub completion_time_s: Option<f64>,
    pub retransmitted_segments: u64,
    pub rto_count: u64,
    /// Mean smoothed RTT over the probe samples, milliseconds.
    pub mean_srtt_ms: Option<f64>,
    /// Request/response: mean and 99th percentile latency, milliseconds.
    pub mean_latency_ms: Option<f64>,
    pub p99_latency_ms: Option<f64>,
    pub subflows: Vec<SubflowSummary>,
    /// `voip` and `game` flows: what the datagram stream experienced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datagrams: Option<crate::datagram::DatagramSummary>,
    /// `tunnel` flows: what the gateways carried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tunnel: Option<TunnelSummary>,
    /// Flows whose hosts see interfaces change (scenario events): stalls
    /// and the time to use a new path ([`crate::handover`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handover: Option<HandoverSummary>,
}

/// Handover metrics of one flow, computed by [`crate::handover::annotate`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HandoverSummary {
    /// The probe interval the times below are measured in.
    pub resolution_s: f64,
    /// The longest time the flow's application received nothing, between
    /// its first byte and its end (or the end of the run), and when it began.
    pub longest_stall_s: f64,
    pub longest_stall_from_s: Option<f64>,
    pub events: Vec<HandoverEvent>,
    /// Payload bytes the flow's paths sent again (the sum of the subflows'
    /// `retransmitted_bytes`), where the transport counts them.
    pub bytes_sent_again: Option<u64>,
}

/// One interface change of one of the flow's hosts, and what followed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandoverEvent {
    pub at_s: f64,
    /// What happened, as the event is written (`down`, `remove_addr`, ...).
    pub event: String,
    /// `node:iface`.
    pub iface: String,
    /// Whether it takes the interface out of service (else it brings it in).
    pub takes_away: bool,
    /// Brought in: the time to the first goodput on a path from (or to)
    /// the interface's address, if there was any before the end.
    pub first_byte_after_s: Option<f64>,
    /// Taken away: the longest stall of the flow in progress at the event
    /// or beginning within 2 s after it and before the next change (0 when
    /// it never stopped).
    pub stall_after_s: Option<f64>,
}

/// What a hybrid-access tunnel carried in each direction.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TunnelSummary {
    pub mtu: u32,
    /// From the CPE (`from`) to the HAG, and back.
    pub upstream: TunnelDirection,
    pub downstream: TunnelDirection,
    /// `converter` flows: what the Transport Converters did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub converter: Option<ConverterSummary>,
}

/// What one pair of converters did, for the flow's summary.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ConverterSummary {
    /// Client connections the CPE took in (and converted).
    pub connections: u64,
    /// Of those, the HAG reached the server for.
    pub converted: u64,
    /// Requests the HAG answered with an Error TLV, by error name.
    pub errors: std::collections::BTreeMap<String, u64>,
    /// Bytes relayed from the clients to the servers, and back.
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// Bytes of Convert messages (both directions).
    pub message_bytes: u64,
    /// Requests that rode the carrier's SYN (TCP Fast Open); the others
    /// followed the handshake.
    #[serde(default)]
    pub fast_open: u64,
    /// Connections the HAG reset without an answer: their first bytes
    /// were no Convert message (RFC 8803 6, 6.1).
    pub resets: u64,
}

impl ConverterSummary {
    pub fn count_error(&mut self, code: mplab_wire::convert::ErrorCode) {
        *self.errors.entry(code.to_string()).or_default() += 1;
    }
}


#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TunnelDirection {
    /// Datagrams the ingress gateway took into the tunnel.
    pub datagrams_in: u64,
    /// Datagrams the egress gateway took out and forwarded.
    pub datagrams_out: u64,
    /// Refused at the ingress: larger than the tunnel's MTU.
    pub oversize: u64,
    /// Dropped at the ingress: its queue (a TUN device's 500 packets)
    /// was full because the connection could not take them.
    pub queue_drops: u64,
    /// Bytes of frames written into the stream (length prefixes included).
    pub frame_bytes: u64,
    /// The most datagrams that waited at the ingress for room in the
    /// connection's send buffer.
    pub max_queue: u64,
    /// Datagram mode: copies that arrived after the first (dropped).
    #[serde(default)]
    pub duplicates: u64,
    /// MPQUIC's `quic-datagram` mode: packets sent in QUIC DATAGRAM
    /// frames, and their bytes (an 8-byte sequence number each, then the
    /// packet); the rest of `datagrams_in` rode the stream.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub quic_datagrams: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub quic_datagram_bytes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Where a subflow is in its life, as a probe sees it.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SubflowState {
    /// Handshake not finished (SYN sent or received, MP_JOIN unconfirmed).
    #[default]
    Connecting,
    Established,
    /// Established, but its retransmission timer kept firing: the
    /// connection sends elsewhere until it recovers (RFC 8684 3.3.6).
    Stale,
    /// Reset or closed.
    Closed,
}

impl SubflowState {
    pub fn as_str(self) -> &'static str {
        match self {
            SubflowState::Connecting => "connecting",
            SubflowState::Established => "established",
            SubflowState::Stale => "stale",
            SubflowState::Closed => "closed",
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SubflowSummary {
    pub local: String,
    pub remote: String,
    /// Where the subflow leaves: the local interface and its link
    /// (`client:eth1 (wan2)`), when the address is one of the network's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub bytes_sent: u64,
    pub goodput_bps: f64,
    pub backup: bool,
    pub retransmitted_segments: u64,
    /// Payload bytes sent again (TCP's `bytes_retrans`), where the
    /// transport counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmitted_bytes: Option<u64>,
    /// At the end of the run (absent: the backend could not tell).
    #[serde(default)]
    pub state: Option<SubflowState>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct InterfaceSummary {
    pub node: String,
    pub iface: String,
    pub tx_bps: f64,
    pub rx_bps: f64,
    pub tx_bytes: u64,
    pub rx_bytes: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LinkSummary {
    pub name: String,
    /// "ab" or "ba".
    pub direction: String,
    pub tx_packets: u64,
    pub drops_queue: u64,
    pub drops_loss: u64,
    pub drops_down: u64,
    pub max_queue_bytes: u64,
    /// Copies made by a duplicating link (`duplicate`).
    #[serde(default)]
    pub duplicated: u64,
}

/// One row of flows.csv.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FlowSample {
    pub time_s: f64,
    pub flow: String,
    /// Subflow index, or "all" for the connection total.
    pub subflow: String,
    pub goodput_bps: f64,
    pub cwnd_bytes: Option<u64>,
    pub srtt_ms: Option<f64>,
    pub in_flight_bytes: Option<u64>,
    /// Subflow rows: the subflow's state when sampled.
    #[serde(default)]
    pub state: Option<SubflowState>,
}

/// The receive-buffer columns of one flows.csv row (MPTCP `all` rows;
/// kept beside [`FlowSample`] so backends that do not measure them need
/// not know them).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct ReorderSample {
    /// Index of the row in [`RunResults::flows`].
    pub row: usize,
    /// Bytes in the receiver's connection-level out-of-order queue.
    pub ooo_bytes: u64,
    /// How long the oldest out-of-order byte had waited (head-of-line
    /// blocking), milliseconds; 0 when nothing is blocked.
    pub hol_ms: f64,
}

/// The send-buffer columns of one flows.csv row (MPTCP `all` rows, from
/// the sending end), kept beside [`FlowSample`] like [`ReorderSample`].
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct SendBufferSample {
    /// Index of the row in [`RunResults::flows`].
    pub row: usize,
    /// The connection's send buffer, bytes (Linux: the MPTCP socket's
    /// `SO_SNDBUF`, autotuned from its subflows' windows).
    pub buffer_bytes: u64,
    /// What it holds: written by the application and not yet DATA_ACKed
    /// (Linux: SIOCOUTQ).
    pub queued_bytes: u64,
}

/// One row of interfaces.csv.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InterfaceSample {
    pub time_s: f64,
    pub node: String,
    pub iface: String,
    pub tx_bps: f64,
    pub rx_bps: f64,
}

/// One row of queues.csv.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct QueueSample {
    pub time_s: f64,
    pub link: String,
    pub direction: String,
    pub queue_bytes: u64,
    pub drops: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunResults {
    pub summary: Summary,
    pub flows: Vec<FlowSample>,
    pub interfaces: Vec<InterfaceSample>,
    pub queues: Vec<QueueSample>,
    /// ooo_bytes / hol_ms of flows.csv rows, by row (sorted).
    pub reorder: Vec<ReorderSample>,
    /// snd_buf_bytes / snd_queued_bytes of flows.csv rows, by row (sorted).
    pub send_buffers: Vec<SendBufferSample>,
    /// Problems writing outputs during the run (a pcap that could not be
    /// written): the run's data is incomplete and the caller must say so.
    pub errors: Vec<String>,
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map(|x| x.to_string()).unwrap_or_default()
}

impl RunResults {
    pub fn flows_csv(&self) -> String {
        let mut s = String::from("time_s,flow,subflow,goodput_bps,cwnd_bytes,srtt_ms,in_flight_bytes,ooo_bytes,hol_ms,state,snd_buf_bytes,snd_queued_bytes\n");
        let mut extra = self.reorder.iter().peekable();
        let mut sndbuf = self.send_buffers.iter().peekable();
        for (i, r) in self.flows.iter().enumerate() {
            let srtt = opt(&r.srtt_ms.map(|v| format!("{v:.3}")));
            while extra.peek().is_some_and(|e| e.row < i) {
                extra.next();
            }
            let (ooo, hol) = match extra.peek() {
                Some(e) if e.row == i => (e.ooo_bytes.to_string(), format!("{:.3}", e.hol_ms)),
                _ => (String::new(), String::new()),
            };
            while sndbuf.peek().is_some_and(|e| e.row < i) {
                sndbuf.next();
            }
            let (buf, queued) = match sndbuf.peek() {
                Some(e) if e.row == i => (e.buffer_bytes.to_string(), e.queued_bytes.to_string()),
                _ => (String::new(), String::new()),
            };
            let state = r.state.map_or("", SubflowState::as_str);
            let _ = writeln!(s, "{:.3},{},{},{:.0},{},{},{},{},{},{},{},{}", r.time_s, r.flow, r.subflow, r.goodput_bps, opt(&r.cwnd_bytes), srtt, opt(&r.in_flight_bytes), ooo, hol, state, buf, queued);
        }
        s
    }

    pub fn interfaces_csv(&self) -> String {
        let mut s = String::from("time_s,node,iface,tx_bps,rx_bps\n");
        for r in &self.interfaces {
            let _ = writeln!(s, "{:.3},{},{},{:.0},{:.0}", r.time_s, r.node, r.iface, r.tx_bps, r.rx_bps);
        }
        s
    }

    pub fn queues_csv(&self) -> String {
        let mut s = String::from("time_s,link,direction,queue_bytes,drops\n");
        for r in &self.queues {
            let _ = writeln!(s, "{:.3},{},{},{},{}", r.time_s, r.link, r.direction, r.queue_bytes, r.drops);
        }
        s
    }

    /// One row per load-balancer instance (empty without balancers).
    pub fn balancers_csv(&self) -> String {
        let mut s = String::from(
            "node,mode,vip,packets,connections,joins,joins_by_token,joins_unknown_token,tokens_learned,token_collisions,conn_misses,rerouted,malformed_options,dropped,conn_table_size,conn_table_peak,conn_table_evicted,conn_table_expired,token_table_size,token_table_peak,token_table_evicted,token_table_expired\n",
        );
        for b in &self.summary.balancers {
            let t = &b.stats;
            let (c, k) = (&t.conn_table, &t.token_table);
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                b.node,
                b.mode,
                b.vip,
                t.packets,
                t.connections_to.iter().sum::<u64>(),
                t.joins,
                t.joins_by_token,
                t.joins_unknown_token,
                t.tokens_learned,
                t.token_collisions,
                t.conn_misses,
                t.rerouted,
                t.malformed_options,
                t.dropped,
                c.size,
                c.peak,
                c.evicted,
                c.expired,
                k.size,
                k.peak,
                k.evicted,
                k.expired
            );
        }
        s
    }

    /// One row per backend host behind a balancer.
    pub fn servers_csv(&self) -> String {
        let mut s = String::from("node,connections,joins_accepted,joins_refused\n");
        for v in &self.summary.servers {
            let _ = writeln!(s, "{},{},{},{}", v.node, v.connections, v.joins_accepted, v.joins_refused);
        }
        s
    }

    /// Writes summary.json, flows.csv, interfaces.csv and queues.csv into
    /// `dir` (and balancers.csv, servers.csv when the run has balancers).
    pub fn write_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let json = serde_json::to_string_pretty(&self.summary).map_err(io::Error::other)?;
        std::fs::write(dir.join("summary.json"), json + "\n")?;
        std::fs::write(dir.join("flows.csv"), self.flows_csv())?;
        std::fs::write(dir.join("interfaces.csv"), self.interfaces_csv())?;
        std::fs::write(dir.join("queues.csv"), self.queues_csv())?;
        if !self.summary.balancers.is_empty() {
            std::fs::write(dir.join("balancers.csv"), self.balancers_csv())?;
            std::fs::write(dir.join("servers.csv"), self.servers_csv())?;
        }
        Ok(())
    }
}
