//! Probes: interface rates, per-flow and per-subflow goodput, cwnd, RTT
//! and receive-buffer samples, and queue occupancy, every probe interval.

use mplab_scenario::network::{self};

use crate::apps::Sends;
use crate::results::*;
use crate::summary::DIR_NAMES;

use super::*;

impl World {
    // ---- probes ----------------------------------------------------------

    pub(super) fn sample(&mut self) {
        self.sync_if_counters();
        let t = self.now.as_secs_f64();
        let secs = self.interval.as_secs_f64();
        for (ni, n) in self.nodes.iter_mut().enumerate() {
            if n.router {
                continue; // interface probes are per host, like bwm-ng on the end hosts
            }
            for (ii, c) in n.counters.iter_mut().enumerate() {
                let tx = (c.tx_bytes - c.last_tx) as f64 * 8.0 / secs;
                let rx = (c.rx_bytes - c.last_rx) as f64 * 8.0 / secs;
                c.last_tx = c.tx_bytes;
                c.last_rx = c.rx_bytes;
                self.results.interfaces.push(InterfaceSample {
                    time_s: t,
                    node: self.net.nodes[ni].name.clone(),
                    iface: self.net.nodes[ni].interfaces[ii].name.clone(),
                    tx_bps: tx,
                    rx_bps: rx,
                });
            }
        }
        let carriers_download = self.carriers_download();
        let probes = &self.net.probes;
        for (fi, f) in self.flows.iter_mut().enumerate() {
            // No rows before a flow starts (nor, below, after it ended): a
            // long run of many short connections keeps rows for the live
            // ones only.
            if self.now < f.start || f.ended.is_some() {
                continue;
            }
            // Of a converter's connections, the carrier between the
            // gateways has rows; the legs to the client and the server
            // are the user flow's.
            if self.hybrid.relay[fi].is_some_and(|(_, leg)| leg != super::flows::Leg::Carrier) {
                continue;
            }
            let name = &self.net.flows[fi].name;
            let detailed = probes.flows.contains(&fi);
            let cwnd = |v: u64| (detailed && probes.cwnd).then_some(v);
            let srtt = |v: Option<u64>| v.filter(|_| detailed && probes.srtt).map(|n| n as f64 / 1e6);
            let inflight = |v: u64| (detailed && probes.cwnd).then_some(v);
            let delivered = f.delivered();
            let gp = (delivered - f.last_delivered) as f64 * 8.0 / secs;
            f.last_delivered = delivered;
            // A converter's carrier sends the way its user flow does.
            let download = self.hybrid.relay[fi].map_or(f.ends[0].app.kind.sends() == Sends::Server, |(v, _)| carriers_download[v as usize]);
            let sender = if download { 1 } else { 0 };
            let paths = f.ends[sender].ep.as_ref().map(|e| e.paths()).unwrap_or_default();
            // A flow whose subflows are all closed gets one last row.
            let ended = !paths.is_empty() && paths.iter().all(|p| p.state == SubflowState::Closed);
            if ended && f.ended_sampled {
                continue;
            }
            f.ended_sampled = ended;
            let other_over = f.ends[1 - sender].ep.as_ref().is_none_or(|e| e.paths().iter().all(|p| p.state == SubflowState::Closed));
            if ended && other_over && f.ended.is_none() {
                let fell_back = f.ends[sender].ep.as_ref().is_some_and(|e| e.fell_back());
                f.ended = Some((fell_back, paths.clone()));
                for e in &mut f.ends {
                    e.ep = None;
                }
            }
            let first = paths.first();
            if let Some((ooo, hol)) = f.ends[1 - sender].ep.as_ref().and_then(|e| e.reorder_probe(self.now)) {
                self.results.reorder.push(ReorderSample { row: self.results.flows.len(), ooo_bytes: ooo, hol_ms: hol as f64 / 1e6 });
            }
            if let Some((buf, queued)) = f.ends[sender].ep.as_ref().and_then(|e| e.send_buffer_probe()) {
                self.results.send_buffers.push(SendBufferSample { row: self.results.flows.len(), buffer_bytes: buf, queued_bytes: queued });
            }
            self.results.flows.push(FlowSample {
                time_s: t,
                flow: name.clone(),
                subflow: "all".into(),
                goodput_bps: gp,
                cwnd_bytes: first.and_then(|p| cwnd(p.cwnd)),
                srtt_ms: first.and_then(|p| srtt(p.srtt_ns)),
                in_flight_bytes: first.and_then(|p| inflight(p.in_flight)),
                state: None,
            });
            if let Some(s) = first.and_then(|p| p.srtt_ns) {
                f.srtt_sum_ns += s as f64;
                f.srtt_samples += 1;
            }
            f.last_path_acked.resize(paths.len(), 0);
            f.closed_sampled.resize(paths.len(), false);
            if paths.len() > 1 || self.net.flows[fi].transport == network::Transport::MPTCP {
                for (i, p) in paths.iter().enumerate() {
                    let gp = (p.bytes_acked - f.last_path_acked[i].min(p.bytes_acked)) as f64 * 8.0 / secs;
                    f.last_path_acked[i] = p.bytes_acked;
                    // A closed subflow: one row saying so, then none.
                    if p.state == SubflowState::Closed && std::mem::replace(&mut f.closed_sampled[i], true) {
                        continue;
                    }
                    self.results.flows.push(FlowSample {
                        time_s: t,
                        flow: name.clone(),
                        subflow: i.to_string(),
                        goodput_bps: gp,
                        cwnd_bytes: cwnd(p.cwnd),
                        srtt_ms: srtt(p.srtt_ns),
                        in_flight_bytes: inflight(p.in_flight),
                        state: Some(p.state),
                    });
                }
            }
        }
        for &li in &self.net.probes.queues {
            for d in 0..2 {
                self.links[li].dirs[d].advance(self.now);
                let s = self.links[li].dirs[d].stats();
                self.results.queues.push(QueueSample {
                    time_s: t,
                    link: self.net.links[li].name.clone(),
                    direction: DIR_NAMES[d].into(),
                    queue_bytes: s.queue_bytes,
                    drops: s.drops_total(),
                });
            }
        }
    }

}
