//! Handover metrics: what a phone's user feels when an interface goes away
//! or comes back. Computed the same way for every backend, from the flow
//! samples (flows.csv) and the scenario's events, so their resolution is
//! the probe interval (`probes.interval`), which the results state.
//!
//! * the longest time the flow delivered nothing to the application
//!   between its first byte and its end (a stall: head-of-line blocking
//!   behind a lost path, or no path at all);
//! * for each event that takes an interface of one of the flow's hosts out
//!   of service (link down, address withdrawn, marked backup) or brings
//!   one in (link up, address back, out of backup): the time from the
//!   event to the first interval with goodput on a path that uses the
//!   interface's address (brought in), or the longest stall in progress
//!   at the event or beginning within 2 s after it, before the next change
//!   (taken out);
//! * bytes sent again (`retransmitted_bytes` of the flow, where the
//!   transport counts them).

use mplab_scenario::network::{LinkAction, Network, NodeId};
use crate::results::{FlowSample, RunResults};
pub use crate::results::{HandoverEvent, HandoverSummary};

/// How long after an interface is taken away a stall that begins is
/// counted as its doing: a sender notices a dead path by its RTO (Linux's
/// minimum 200 ms, backed off once or twice) or by the REMOVE_ADDR.
const AFTER_LOSS_NS: u64 = 2_000_000_000;

/// Adds the handover metrics to every flow whose hosts see an interface
/// change, when the run sampled its flows.
pub fn annotate(net: &Network, r: &mut RunResults) {
    if net.probes.interval_ns == 0 {
        return;
    }
    let res_s = net.probes.interval_ns as f64 / 1e9;
    for f in &net.flows {
        let Some(fs) = r.summary.flows.iter().find(|s| s.name == f.name) else { continue };
        let hosts = [f.from, f.to];
        let changes: Vec<Change> = net.events.iter().filter_map(|e| change(net, &hosts, &e.action, e.link, e.at_ns)).collect();
        if changes.is_empty() {
            continue;
        }
        let samples: Vec<&FlowSample> = r.flows.iter().filter(|s| s.flow == f.name).collect();
        let all: Vec<(f64, f64)> = samples.iter().filter(|s| s.subflow == "all").map(|s| (s.time_s, s.goodput_bps)).collect();
        let end_s = fs.completion_time_s.map(|c| c + f.start_ns as f64 / 1e9);
        let stalls = stalls(&all, end_s, res_s);
        let (longest_stall_s, longest_stall_from_s) = stalls.iter().fold((0.0, None), |acc, &(from, len)| if len > acc.0 { (len, Some(from)) } else { acc });
        let subflow_addrs: Vec<(String, &str, &str)> = fs.subflows.iter().enumerate().map(|(i, s)| (i.to_string(), s.local.as_str(), s.remote.as_str())).collect();
        let events = changes
            .iter()
            .map(|c| {
                let at_s = c.at_ns as f64 / 1e9;
                let (first_byte_after_s, stall_after_s) = if c.takes_away {
                    let next = changes.iter().map(|x| x.at_ns).filter(|&t| t > c.at_ns).min().map_or(f64::INFINITY, |t| t as f64 / 1e9);
                    let until = (at_s + AFTER_LOSS_NS as f64 / 1e9).min(next);
                    let worst = stalls.iter().filter(|(from, len)| *from + len > at_s && *from < until).map(|(_, len)| *len).fold(0.0, f64::max);
                    (None, Some(worst))
                } else {
                    let addr = c.addr.to_string();
                    let on_iface = |sub: &str| subflow_addrs.iter().any(|(i, l, r)| i == sub && (host_of(l) == addr || host_of(r) == addr));
                    // The interval a sample closes began one interval before it.
                    let first = samples.iter().find(|s| s.subflow != "all" && s.goodput_bps > 0.0 && s.time_s - res_s >= at_s - 1e-9 && on_iface(&s.subflow));
                    (first.map(|s| s.time_s - at_s), None)
                };
                HandoverEvent { at_s: us(at_s), event: c.event.into(), iface: c.iface.clone(), takes_away: c.takes_away, first_byte_after_s: first_byte_after_s.map(us), stall_after_s: stall_after_s.map(us) }
            })
            .collect();
        let bytes_sent_again = fs.subflows.iter().map(|s| s.retransmitted_bytes).sum();
        let fs_name = fs.name.clone();
        if let Some(fs) = r.summary.flows.iter_mut().find(|s| s.name == fs_name) { fs.handover = Some(HandoverSummary { resolution_s: res_s, longest_stall_s: us(longest_stall_s), longest_stall_from_s: longest_stall_from_s.map(us), events, bytes_sent_again }); }
    }
}

/// Seconds to the microsecond: times here are sums of sample times.
fn us(s: f64) -> f64 {
    (s * 1e6).round() / 1e6
}

fn host_of(addr_port: &str) -> &str {
    addr_port.rsplit_once(':').map_or(addr_port, |(a, _)| a)
}

struct Change {
    at_ns: u64,
    event: &'static str,
    iface: String,
    addr: std::net::Ipv4Addr,
    takes_away: bool,
}

/// The event as an interface change of one of `hosts`, if it is one.
fn change(net: &Network, hosts: &[NodeId], a: &LinkAction, link: usize, at_ns: u64) -> Option<Change> {
    let iface_of = |node: NodeId, iface: usize| {
        let n = &net.nodes[node];
        (format!("{}:{}", n.name, n.interfaces[iface].name), n.interfaces[iface].addr)
    };
    let (event, takes_away, node, iface) = match a {
        LinkAction::RemoveAddr { node, iface, .. } => ("remove_addr", true, *node, *iface),
        LinkAction::AddAddr { node, iface, .. } => ("add_addr", false, *node, *iface),
        LinkAction::Prio { node, iface, backup, .. } => (if *backup { "prio backup" } else { "prio nobackup" }, *backup, *node, *iface),
        LinkAction::Down | LinkAction::Up => {
            // A link down or up at one of the hosts' interfaces.
            let (node, iface) = hosts.iter().find_map(|&h| net.nodes[h].interfaces.iter().find(|i| i.link == link).map(|i| (h, i.index)))?;
            (if matches!(a, LinkAction::Down) { "down" } else { "up" }, matches!(a, LinkAction::Down), node, iface)
        }
        LinkAction::Set { .. } => return None,
    };
    if !hosts.contains(&node) {
        return None;
    }
    let (iface, addr) = iface_of(node, iface);
    Some(Change { at_ns, event, iface, addr, takes_away })
}

/// Runs of intervals without goodput between the first byte and `end_s`
/// (the completion, else the last sample): (start, length) in seconds.
fn stalls(all: &[(f64, f64)], end_s: Option<f64>, res_s: f64) -> Vec<(f64, f64)> {
    let Some(first) = all.iter().position(|&(_, g)| g > 0.0) else { return Vec::new() };
    let end = end_s.unwrap_or(f64::INFINITY);
    let mut out = Vec::new();
    let mut run: Option<f64> = None;
    for &(t, g) in &all[first..] {
        // The sample at t covers (t - res, t]: past the end it is idle by design.
        if t - res_s >= end - 1e-9 {
            break;
        }
        match (g > 0.0, run) {
            (false, None) => run = Some(t - res_s),
            (true, Some(from)) => {
                out.push((from, t - res_s - from));
                run = None;
            }
            _ => {}
        }
    }
    if let (Some(from), Some(&(t, _))) = (run, all.last()) {
        out.push((from, t.min(end) - from));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stalls_are_runs_of_empty_intervals_after_the_first_byte() {
        let all = [(0.1, 0.0), (0.2, 5.0), (0.3, 0.0), (0.4, 0.0), (0.5, 3.0), (0.6, 0.0), (0.7, 1.0)];
        let s = stalls(&all, None, 0.1);
        assert_eq!(s.len(), 2);
        assert!((s[0].0 - 0.2).abs() < 1e-9 && (s[0].1 - 0.2).abs() < 1e-9, "{s:?}");
        assert!((s[1].0 - 0.5).abs() < 1e-9 && (s[1].1 - 0.1).abs() < 1e-9, "{s:?}");
        // After completion at 0.5 s the idle intervals are not stalls.
        assert_eq!(stalls(&all, Some(0.5), 0.1).len(), 1);
        // A flow that never delivered has no stall to speak of.
        assert!(stalls(&[(0.1, 0.0), (0.2, 0.0)], None, 0.1).is_empty());
        // A stall that lasts to the end of the run counts to the last sample.
        let s = stalls(&[(0.1, 1.0), (0.2, 0.0), (0.3, 0.0)], None, 0.1);
        assert!((s[0].1 - 0.2).abs() < 1e-9, "{s:?}");
    }
}
