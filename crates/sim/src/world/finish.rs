//! The end of a run: captures closed and the summary computed by the
//! backends' shared summary functions.

use mplab_proto::Instant;

use crate::apps::Sends;
use mplab_backend::datagram::DatagramApp;
use crate::results::*;
use crate::summary::{self, FlowOutcome};

use super::*;

impl World {
    /// Final results: summary over the whole run plus the sampled series.
    pub fn finish(mut self, backend: &str) -> RunResults {
        self.sync_if_counters();
        let mut pcaps: Vec<_> = self.pcaps.drain().collect();
        pcaps.sort_by_key(|(k, _)| *k);
        for ((node, iface), c) in pcaps {
            if let Err(e) = c.finish(self.now) {
                let n = &self.net.nodes[node];
                self.results.errors.push(format!("pcap of {}:{}: {e}", n.name, n.interfaces[iface].name));
            }
        }
        let dur = self.now.as_secs_f64();
        let mut s = Summary { scenario: self.net.name.clone(), backend: backend.into(), seed: self.net.seed, duration_s: dur, ..Default::default() };
        s.notes.extend(self.boxes.notes(&self.net));
        s.notes.extend(summary::trace_notes(&self.net, self.now.0));
        self.balancer_summaries(&mut s);
        for (link, r) in self.boxes.attack_reports() {
            let attack = self.net.middleboxes.iter().find_map(|m| match (&m.action, &m.placement) {
                (network::MiddleboxAction::Attacker(m), network::Placement::Link { link: l, .. }) if *l == link => Some(m.attack.name()),
                _ => None,
            });
            s.attacks.push(mplab_backend::results::AttackSummary { link: self.net.links[link].name.clone(), attack: attack.unwrap_or("?").into(), report: r });
        }
        for (fi, f) in self.flows.iter().enumerate().take(self.user_flows) {
            let spec = &self.net.flows[fi];
            let sender = Self::sending_end(f);
            let ep = f.ends[sender].ep.as_ref();
            // Several subflows, yet never two with room at once: the window
            // (buffers, cwnds) decided where each chunk went, not the
            // scheduler, so any scheduler gives this run.
            if let (Some(0), true) = (ep.and_then(|e| e.scheduler_choices()), ep.is_some_and(|e| e.paths().len() > 1)) {
                s.notes.push(format!(
                    "flow {}: the packet scheduler never had a choice (no two subflows had window room at once): every scheduler gives the same run; smaller buffers (transport.tcp.snd_buf / rcv_buf) let it choose",
                    spec.name
                ));
            }
            s.flows.push(summary::flow_summary(FlowOutcome {
                spec,
                start_s: f.start.as_secs_f64(),
                run_end_s: self.now.as_secs_f64(),
                delivered: f.delivered(),
                requests_done: f.ends[0].app.requests_done,
                completed_at_s: self.receiver_done_at(fi).map(|c| c.as_secs_f64()),
                data_ok: f.ends.iter().all(|e| e.app.rx.ok() && !e.misplaced && !e.corrupted),
                fallback: f.ended.as_ref().map_or_else(|| ep.is_some_and(|e| e.fell_back()), |x| x.0),
                latencies_ms: f.ends[0].app.latencies.iter().map(|d| d.as_secs_f64() * 1e3).collect(),
                mean_srtt_ms: (f.srtt_samples > 0).then(|| f.srtt_sum_ns / f.srtt_samples as f64 / 1e6),
                paths: Self::sender_paths(f),
                tunnel: self.tunnel_summary(fi).or_else(|| self.converter_summary(fi)),
                datagrams: match f.ends.each_ref().map(|e| e.ep.as_ref().and_then(|ep| ep.datagram_app())) {
                    [Some(c), Some(s)] => Some(DatagramApp::report(c, s, self.now)),
                    // The server never heard a datagram: report what was sent.
                    [Some(c), None] => DatagramApp::new(&spec.app, false, f.start, Instant(spec.stop_ns)).map(|s| DatagramApp::report(c, &s, self.now)),
                    _ => None,
                },
            }));
        }
        for (ni, n) in self.nodes.iter().enumerate() {
            for (ii, c) in n.counters.iter().enumerate() {
                s.interfaces.push(summary::interface_summary(&self.net.nodes[ni].name, &self.net.nodes[ni].interfaces[ii].name, c.tx_bytes, c.rx_bytes, dur));
            }
        }
        for (li, l) in self.links.iter().enumerate() {
            for d in 0..2 {
                s.links.push(summary::link_summary(&self.net.links[li].name, d, &l.dirs[d].stats()));
            }
        }
        self.results.summary = s;
        mplab_backend::handover::annotate(&self.net, &mut self.results);
        self.results
    }

    /// Per sending host, how its TCP connections and subflows left slow
    /// start, under the names of Linux's TcpExt counters (the kernel
    /// backend's meta.json `tcp_counters`): compared side by side in
    /// docs/validation.md.
    pub fn tcp_counters(&self) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>> {
        let mut per_node: std::collections::BTreeMap<usize, mplab_proto::cc::hystart::HyStartExits> = Default::default();
        for (fi, f) in self.flows.iter().enumerate().take(self.user_flows) {
            let node = if Self::sending_end(f) == 0 { self.net.flows[fi].from } else { f.server };
            let h = per_node.entry(node).or_default();
            for p in &Self::sender_paths(f) {
                h.add(&p.hystart);
            }
        }
        per_node
            .into_iter()
            .map(|(n, h)| {
                let c = [("TCPHystartTrainDetect", h.train), ("TCPHystartTrainCwnd", h.train_cwnd), ("TCPHystartDelayDetect", h.delay), ("TCPHystartDelayCwnd", h.delay_cwnd)];
                (self.net.nodes[n].name.clone(), c.into_iter().filter(|(_, v)| *v != 0).map(|(k, v)| (k.to_string(), v)).collect())
            })
            .collect()
    }

    /// Which end of a flow sends its data: the server for a download.
    fn sending_end(f: &FlowRt) -> usize {
        if f.ends[0].app.kind.sends() == Sends::Server { 1 } else { 0 }
    }

    /// The sending end's paths: as kept when the flow ended, else live.
    fn sender_paths(f: &FlowRt) -> Vec<crate::summary::PathStats> {
        f.ended.as_ref().map_or_else(|| f.ends[Self::sending_end(f)].ep.as_ref().map(|e| e.paths()).unwrap_or_default(), |x| x.1.clone())
    }

    /// The load balancers' counters and what each backend accepted.
    fn balancer_summaries(&self, s: &mut Summary) {
        let mut backends: Vec<usize> = Vec::new();
        for (node, stats) in self.boxes.balancer_stats() {
            let m = self.net.middleboxes.iter().find_map(|m| match (&m.action, &m.placement) {
                (network::MiddleboxAction::LoadBalancer { mode, vip, backends, .. }, network::Placement::Node { node: n, .. }) if *n == node => Some((*mode, *vip, backends)),
                _ => None,
            });
            let Some((mode, vip, names)) = m else { continue };
            for name in names {
                if let Some(b) = self.net.node(name) {
                    if !backends.contains(&b.id) {
                        backends.push(b.id);
                    }
                }
            }
            s.balancers.push(BalancerSummary { node: self.net.nodes[node].name.clone(), mode: mode.name().into(), vip: vip.to_string(), stats });
        }
        for b in backends {
            let c = self.host_counters[b];
            s.servers.push(ServerSummary { node: self.net.nodes[b].name.clone(), connections: c.connections, joins_accepted: c.joins_accepted, joins_refused: c.joins_refused });
        }
    }

    pub(super) fn receiver_done_at(&self, flow: usize) -> Option<Instant> {
        let f = &self.flows[flow];
        f.ends[0].app.completed_at.or(f.ends[1].app.completed_at)
    }
}
