//! The one summary computation: every backend gathers what it measured of
//! a flow, an interface and a link direction, and these functions turn it
//! into the rows of summary.json, so goodput, completion, latency
//! percentiles and verification are defined once.

use mplab_scenario::network;

use crate::config::is_bounded;
use crate::link::LinkStats;
use crate::results::{FlowSummary, InterfaceSummary, LinkSummary, SubflowState, SubflowSummary};

/// Per-path statistics (one entry per subflow; plain TCP has one), as a
/// probe samples them and as the summary totals them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PathStats {
    pub local: String,
    pub remote: String,
    pub backup: bool,
    pub cwnd: u64,
    pub in_flight: u64,
    pub srtt_ns: Option<u64>,
    pub bytes_sent: u64,
    /// Payload bytes this path delivered to the peer (acknowledged).
    pub bytes_acked: u64,
    pub retransmitted_segments: u64,
    /// Payload bytes sent again, where the transport counts them.
    pub retransmitted_bytes: Option<u64>,
    pub rto_count: u64,
    pub state: SubflowState,
    /// Slow start left by HyStart (mplab's stack; the kernel counts these
    /// per host only, in meta.json's `tcp_counters`).
    pub hystart: mplab_proto::cc::hystart::HyStartExits,
}

impl PathStats {
    /// One TCP connection of mplab's stack (a subflow, or plain TCP) as a path.
    pub fn from_tcp(local: impl ToString, remote: impl ToString, backup: bool, s: &mplab_proto::tcp::TcpStats) -> Self {
        PathStats {
            local: local.to_string(),
            remote: remote.to_string(),
            backup,
            cwnd: s.cwnd,
            in_flight: s.in_flight,
            srtt_ns: s.srtt.map(|d| d.as_nanos() as u64),
            bytes_sent: s.bytes_sent,
            bytes_acked: s.bytes_acked,
            retransmitted_segments: s.segments_retransmitted,
            retransmitted_bytes: Some(s.bytes_retransmitted),
            rto_count: s.rto_count,
            state: SubflowState::Established,
            hystart: s.hystart,
        }
    }
}

/// What a backend knows of one flow at the end of a run. Times are seconds
/// from the start of the run.
#[derive(Debug, Clone)]
pub struct FlowOutcome<'a> {
    pub spec: &'a network::Flow,
    /// The flow's start (as the backend started it).
    pub start_s: f64,
    /// The end of the run (the simulator's clock, the scenario's duration).
    pub run_end_s: f64,
    /// Application bytes the receiver read in order.
    pub delivered: u64,
    /// Request/response: requests answered.
    pub requests_done: u64,
    /// When the receiver had the whole transfer, if it did.
    pub completed_at_s: Option<f64>,
    /// Every byte read matched the stream pattern at its offset.
    pub data_ok: bool,
    pub fallback: bool,
    /// Request/response latencies, milliseconds.
    pub latencies_ms: Vec<f64>,
    pub mean_srtt_ms: Option<f64>,
    /// The sending end's paths.
    pub paths: Vec<PathStats>,
    /// A datagram flow's figures ([`crate::datagram::DatagramApp::report`]).
    pub datagrams: Option<crate::datagram::DatagramSummary>,
    /// A tunnel flow's figures.
    pub tunnel: Option<crate::results::TunnelSummary>,
}

/// Mean and 99th percentile (nearest rank) of `v`, which it sorts.
pub fn mean_and_p99(v: &mut [f64]) -> (Option<f64>, Option<f64>) {
    v.sort_by(f64::total_cmp);
    let mean = (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let p99 = v.get(((v.len() as f64 * 0.99).ceil() as usize).saturating_sub(1)).copied();
    (mean, p99)
}

/// Whether the flow's application finished its work.
pub fn completed(app: &network::App, delivered: u64, requests_done: u64) -> bool {
    match app {
        network::App::Stream(_) => crate::apps::Kind::of(app).completed(delivered, requests_done),
        _ => false,
    }
}

pub fn transport_name(t: network::Transport) -> &'static str {
    t.name()
}

/// A flow's row of summary.json. Goodput counts the flow's active time:
/// from its start to its completion, or to its stop or the end of the run.
pub fn flow_summary(mut o: FlowOutcome) -> FlowSummary {
    let spec = o.spec;
    let done = completed(&spec.app, o.delivered, o.requests_done);
    let stop_s = network_secs(spec.stop_ns);
    let last = if done { o.completed_at_s.unwrap_or(o.run_end_s) } else { o.run_end_s.min(stop_s) };
    let active = (last - o.start_s).max(1e-9);
    let (mean_latency_ms, p99_latency_ms) = mean_and_p99(&mut o.latencies_ms);
    let bounded = is_bounded(&spec.app);
    FlowSummary {
        name: spec.name.clone(),
        transport: transport_name(spec.transport).into(),
        goodput_bps: o.delivered as f64 * 8.0 / active,
        bytes_delivered: o.delivered,
        // A datagram flow verifies each datagram's payload; a stream flow
        // its continuity and placement.
        // (A tunnel in datagram mode carries nothing in its stream, nor
        // does a converter's flow: its connections are the gateways'.)
        verified: o.data_ok && (o.delivered > 0 || bounded == Some(0) || matches!(spec.app, network::App::Tunnel { mode: network::TunnelMode::Datagram | network::TunnelMode::QuicDatagram, .. } | network::App::Converter { .. })) && o.datagrams.as_ref().is_none_or(|d| d.malformed == 0),
        fallback: o.fallback,
        completed: done,
        completion_time_s: done.then(|| o.completed_at_s.map(|c| c - o.start_s).unwrap_or(active)),
        retransmitted_segments: o.paths.iter().map(|p| p.retransmitted_segments).sum(),
        rto_count: o.paths.iter().map(|p| p.rto_count).sum(),
        mean_srtt_ms: o.mean_srtt_ms,
        mean_latency_ms,
        p99_latency_ms,
        subflows: o
            .paths
            .iter()
            .map(|p| SubflowSummary {
                local: p.local.clone(),
                remote: p.remote.clone(),
                path: None,
                bytes_sent: p.bytes_sent,
                goodput_bps: p.bytes_acked as f64 * 8.0 / active,
                backup: p.backup,
                retransmitted_segments: p.retransmitted_segments,
                retransmitted_bytes: p.retransmitted_bytes,
                state: Some(p.state),
            })
            .collect(),
        datagrams: o.datagrams,
        tunnel: o.tunnel,
        handover: None,
    }
}

/// Nanoseconds of run time as the seconds the summary uses (exactly as
/// `Instant::as_secs_f64`, so the simulator's figures keep their bits).
fn network_secs(ns: u64) -> f64 {
    mplab_proto::Instant(ns).as_secs_f64()
}

/// An interface's row: bytes over the run's duration.
pub fn interface_summary(node: &str, iface: &str, tx_bytes: u64, rx_bytes: u64, duration_s: f64) -> InterfaceSummary {
    InterfaceSummary {
        node: node.into(),
        iface: iface.into(),
        tx_bps: tx_bytes as f64 * 8.0 / duration_s.max(1e-9),
        rx_bps: rx_bytes as f64 * 8.0 / duration_s.max(1e-9),
        tx_bytes,
        rx_bytes,
    }
}

/// The names of a link's two directions in results.
pub const DIR_NAMES: [&str; 2] = ["ab", "ba"];

/// A link direction's row, from the link model's counters.
pub fn link_summary(name: &str, dir: usize, st: &LinkStats) -> LinkSummary {
    LinkSummary {
        name: name.into(),
        direction: DIR_NAMES[dir].into(),
        tx_packets: st.tx_packets,
        drops_queue: st.drops_queue(),
        drops_loss: st.drops_loss(),
        drops_down: st.drops_down(),
        max_queue_bytes: st.max_queue_bytes,
        duplicated: st.duplicated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p99_is_the_nearest_rank() {
        let mut v: Vec<f64> = (1..=200).rev().map(f64::from).collect();
        assert_eq!(mean_and_p99(&mut v), (Some(100.5), Some(198.0)));
        assert_eq!(mean_and_p99(&mut []), (None, None));
        assert_eq!(mean_and_p99(&mut [7.0]), (Some(7.0), Some(7.0)));
    }

    #[test]
    fn completion_follows_the_application() {
        let app = |fields: &str| network::App::Stream(network::AppTable::new(toml::from_str(fields).unwrap(), "flows[0]"));
        let bulk = app("kind = \"bulk\"\nbytes = 1000");
        assert!(completed(&bulk, 1000, 0));
        assert!(!completed(&bulk, 999, 0));
        assert!(!completed(&app("kind = \"bulk\""), u64::MAX, 0));
        let req = app("kind = \"request\"\nrequest_size = 10\nresponse_size = 10\ncount = 3");
        assert!(completed(&req, 0, 3) && !completed(&req, 0, 2));
        assert!(!completed(&app("kind = \"request\"\nrequest_size = 10\nresponse_size = 10"), 0, 1 << 40));
        assert!(!completed(&crate::datagram::datagram_app("voip", ""), u64::MAX, 0));
    }
}

/// Notes on trace-driven link directions: what each replays and, for a
/// trace that does not loop, when it ran out within the run (no capacity
/// after that: packets stay queued).
pub fn trace_notes(net: &network::Network, run_end_ns: u64) -> Vec<String> {
    let mut notes = Vec::new();
    for l in &net.links {
        for (dir, d) in [("ab", &l.ab), ("ba", &l.ba)] {
            let Some(t) = &d.trace else { continue };
            let period_s = t.period_ns() as f64 / 1e9;
            let mean = t.mean_rate_bps() as f64 / 1e6;
            let how = if t.looped { "looping" } else { "once" };
            notes.push(format!("link {} {dir}: trace {} ({} opportunities over {period_s:.3} s, mean {mean:.3} Mbit/s, {how})", l.name, t.file, t.opportunities));
            if !t.looped && t.period_ns() < run_end_ns {
                notes.push(format!("link {} {dir}: trace {} ended at {period_s:.3} s; no capacity after it", l.name, t.file));
            }
        }
    }
    notes
}
