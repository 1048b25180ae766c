//! The end of a run: what the flows, the link emulator, the balancers and
//! the stacks report, turned into results in the simulator's format
//! (summary rows and notes) and the run's facts for meta.json.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use mplab_backend::results::{AttackSummary, BalancerSummary, RunResults, ServerSummary, Summary, TunnelSummary};
use mplab_backend::summary::{self, FlowOutcome, PathStats};
use mplab_scenario::network::{App, MiddleboxAction, Placement, Transport};

use super::middleboxes::BalancerOutcome;
use super::options::KernelRun;
use super::plan::Plan;
use super::probe::Counters;
use super::stack::HostStack;
use super::track::FlowTrack;
use crate::apps::FlowState;
use crate::emulator::EmuReport;
use crate::sys;

/// What the results need of one flow, read before its sockets close.
pub struct FlowOut {
    delivered: u64,
    completed_ns: u64,
    requests_done: u64,
    latencies: Vec<f64>,
    mismatch: Option<String>,
    errors: Vec<String>,
    fell_back: bool,
    datagrams: Option<mplab_backend::datagram::DatagramSummary>,
    tunnel: Option<TunnelSummary>,
    /// The subflows mplab's stack marked backup ("local|remote").
    stack_backups: Vec<String>,
    /// The node whose listener accepted.
    server_node: Option<usize>,
}

/// Reads every flow's shared state.
pub fn flow_outs(plan: &Plan, states: &[Arc<FlowState>]) -> Vec<FlowOut> {
    let net = plan.net;
    states
        .iter()
        .zip(&net.flows)
        .map(|(st, f)| FlowOut {
            tunnel: matches!(f.app, App::Tunnel { .. } | App::Converter { .. }).then(|| st.tunnel.lock().map(|t| t.clone()).unwrap_or_default()),
            delivered: st.delivered.load(Ordering::Relaxed),
            completed_ns: st.completed_ns.load(Ordering::Relaxed),
            requests_done: st.requests_done.load(Ordering::Relaxed),
            latencies: st.latencies_ms.lock().map(|l| l.clone()).unwrap_or_default(),
            mismatch: st.mismatch.lock().ok().and_then(|m| m.clone()),
            errors: st.errors.lock().map(|e| e.clone()).unwrap_or_default(),
            fell_back: st.fell_back.load(Ordering::Relaxed),
            datagrams: match st.datagram_ends.lock().as_deref() {
                Ok([Some(c), Some(s)]) => Some(mplab_backend::datagram::DatagramApp::report(c, s, mplab_proto::Instant(net.duration_ns))),
                _ => None,
            },
            stack_backups: st.stack_subflows.lock().ok().and_then(|g| g.as_ref().map(|x| x.1.clone())).unwrap_or_default(),
            server_node: st.server_node.get().copied(),
        })
        .collect()
}

/// Per host name: the MPTcpExt counters, and the TcpExt ones.
pub type NetstatCounters = (BTreeMap<String, BTreeMap<String, u64>>, BTreeMap<String, BTreeMap<String, u64>>);

/// The hosts' MPTcpExt and TcpExt counters.
pub fn netstat(plan: &Plan, node_ns: &[String]) -> NetstatCounters {
    let mut counters = BTreeMap::new();
    let mut tcp_counters = BTreeMap::new();
    for &h in &plan.hosts {
        let (m, t) = crate::probes::netstat_counters(&node_ns[h]);
        counters.insert(plan.net.nodes[h].name.clone(), m);
        tcp_counters.insert(plan.net.nodes[h].name.clone(), t);
    }
    (counters, tcp_counters)
}

/// Everything the run gathered after its end.
pub struct Ending {
    pub prefix: String,
    pub setup_s: f64,
    pub report: EmuReport,
    pub balancers: Vec<BalancerOutcome>,
    pub netstat: NetstatCounters,
    pub flows: Vec<FlowOut>,
    pub addr_notes: Vec<String>,
    pub pcap_errors: Vec<String>,
    pub pcap_packets: u64,
    /// Interface counters at time zero and at the end.
    pub base: Counters,
    pub end: Counters,
    pub teardown_errors: Vec<String>,
}

/// The run's results and meta.json facts.
pub fn kernel_run(plan: &Plan, mut results: RunResults, e: Ending, tracks: &[FlowTrack], stacks: &[Box<dyn HostStack>]) -> KernelRun {
    let net = plan.net;
    let mut s = Summary { scenario: net.name.clone(), backend: if plan.userspace { "userspace" } else { "kernel" }.into(), seed: net.seed, duration_s: net.duration_ns as f64 / 1e9, ..Default::default() };
    attacks(plan, &e, &mut s);
    s.notes.extend(e.addr_notes.iter().map(|n| format!("address event at {n}")));
    s.notes.extend(mplab_backend::summary::trace_notes(net, net.duration_ns));
    balancers_and_servers(plan, &e, stacks, &mut s);
    flows(plan, &e, tracks, &mut s);
    interfaces_and_links(plan, &e, &mut s);
    notes(plan, &e, &mut s);
    results.queues = e.report.queue_samples.clone();
    results.errors.extend(e.pcap_errors.iter().cloned());
    results.summary = s;
    mplab_backend::handover::annotate(net, &mut results);
    KernelRun { results, meta: meta(plan, &e, tracks, stacks) }
}

fn attacks(plan: &Plan, e: &Ending, s: &mut Summary) {
    let net = plan.net;
    for (li, r) in &e.report.attacks {
        let attack = net.middleboxes.iter().find_map(|m| match (&m.action, &m.placement) {
            (MiddleboxAction::Attacker(m), Placement::Link { link, .. }) if link == li => Some(m.attack.name()),
            _ => None,
        });
        s.attacks.push(AttackSummary { link: net.links[*li].name.clone(), attack: attack.unwrap_or("?").into(), report: r.clone() });
    }
}

/// The balancers' counts, then their backends' (as their stack counted).
fn balancers_and_servers(plan: &Plan, e: &Ending, stacks: &[Box<dyn HostStack>], s: &mut Summary) {
    let net = plan.net;
    let mut backends: Vec<usize> = Vec::new();
    for (p, st) in plan.balancers.iter().zip(&e.balancers) {
        let name = net.nodes[p.node].name.clone();
        match st {
            Ok((stats, load)) => {
                s.notes.push(format!(
                    "load balancer on {name}: {} segments through NFQUEUE, {:.1} us of the forwarder thread's CPU each ({:.0} k segments/s per core)",
                    load.segments,
                    load.ns_per_segment() / 1e3,
                    if load.segments > 0 { 1e6 / load.ns_per_segment() } else { 0.0 }
                ));
                s.balancers.push(BalancerSummary { node: name, mode: p.cfg.mode.name().into(), vip: p.vip.to_string(), stats: stats.clone() })
            }
            Err(err) => s.notes.push(format!("load balancer on {name}: {err}")),
        }
        for (b, _, _) in &p.backends {
            if !backends.contains(b) {
                backends.push(*b);
            }
        }
    }
    let counters = &e.netstat.0;
    for b in backends {
        let name = &net.nodes[b].name;
        // mplab's stack counts what it accepted and refused itself.
        if let Some(hc) = stacks.iter().find_map(|st| st.server_counts(name)) {
            s.servers.push(ServerSummary { node: name.clone(), connections: hc.0, joins_accepted: hc.1, joins_refused: hc.2 });
            continue;
        }
        let c = counters.get(name);
        let mib = |k: &str| c.and_then(|m| m.get(k)).copied().unwrap_or(0);
        s.servers.push(ServerSummary {
            node: name.clone(),
            connections: e.flows.iter().filter(|o| o.server_node == Some(b)).count() as u64,
            joins_accepted: mib("MPJoinAckRx"),
            joins_refused: mib("MPJoinNoTokenFound"),
        });
    }
}

fn flows(plan: &Plan, e: &Ending, tracks: &[FlowTrack], s: &mut Summary) {
    let net = plan.net;
    for (fi, f) in net.flows.iter().enumerate() {
        let st = &e.flows[fi];
        let tr = &tracks[fi];
        let mismatch = st.mismatch.clone();
        if let Some(m) = &mismatch {
            s.notes.push(format!("flow {}: data did not verify: {m}", f.name));
        }
        for err in &st.errors {
            s.notes.push(format!("flow {}: {err}", f.name));
        }
        let backups = plan.mptcp.get(&f.from).map(|p| p.backup_addrs.clone()).unwrap_or_default();
        let kernel_sender = plan.on_kernel[if mplab_backend::apps::server_sends(&f.app) { f.to } else { f.from }];
        if f.transport == Transport::MPTCP && kernel_sender && !st.fell_back && tr.subs.iter().any(|x| x.backup.is_none()) {
            s.notes.push(format!("flow {}: the kernel did not report subflow flags (sock_diag); `backup` comes from the endpoint flags", f.name));
        }
        let stack_backups = &st.stack_backups;
        let secs = |ns: u64| mplab_proto::Instant(ns).as_secs_f64();
        s.flows.push(summary::flow_summary(FlowOutcome {
            spec: f,
            start_s: secs(f.start_ns),
            run_end_s: secs(net.duration_ns),
            delivered: st.delivered,
            requests_done: st.requests_done,
            completed_at_s: (st.completed_ns > 0).then(|| secs(f.start_ns + st.completed_ns)),
            data_ok: mismatch.is_none(),
            fallback: st.fell_back,
            latencies_ms: st.latencies.clone(),
            datagrams: st.datagrams.clone(),
            tunnel: st.tunnel.clone(),
            mean_srtt_ms: (tr.srtt_n > 0).then(|| tr.srtt_sum_ms / tr.srtt_n as f64),
            paths: tr
                .subs
                .iter()
                .map(|x| PathStats {
                    local: x.local.clone(),
                    remote: x.remote.clone(),
                    backup: x.backup.unwrap_or_else(|| stack_backups.contains(&format!("{}|{}", x.local, x.remote)) || x.local.split(':').next().and_then(|a| a.parse().ok()).is_some_and(|a| backups.contains(&a))),
                    bytes_sent: x.info.bytes_sent,
                    bytes_acked: x.info.bytes_acked,
                    retransmitted_segments: u64::from(x.info.total_retrans),
                    retransmitted_bytes: x.info.bytes_retrans,
                    rto_count: u64::from(x.info.total_rto.unwrap_or(0)),
                    state: x.state,
                    ..Default::default()
                })
                .collect(),
        }));
    }
}

fn interfaces_and_links(plan: &Plan, e: &Ending, s: &mut Summary) {
    let net = plan.net;
    let dur = net.duration_ns as f64 / 1e9;
    for n in &net.nodes {
        for i in &n.interfaces {
            let (a, b) = (e.end[n.id].get(&i.name).copied().unwrap_or_default(), e.base[n.id].get(&i.name).copied().unwrap_or_default());
            let (tx, rx) = (a.tx_ip().saturating_sub(b.tx_ip()), a.rx_ip().saturating_sub(b.rx_ip()));
            s.interfaces.push(summary::interface_summary(&n.name, &i.name, tx, rx, dur));
        }
    }
    for (li, l) in net.links.iter().enumerate() {
        for d in 0..2 {
            s.links.push(summary::link_summary(&l.name, d, &e.report.stats.get(li).map(|x| x[d]).unwrap_or_default()));
        }
    }
}

/// What the reader of a real-packet run's summary should know.
fn notes(plan: &Plan, e: &Ending, s: &mut Summary) {
    let (net, report) = (plan.net, &e.report);
    if plan.userspace {
        s.notes.push("userspace backend: hosts on mplab's stack reach their veths through a TUN (the kernel forwards), so their interface counters include the forwarding; their subflow statistics come from the stack itself".into());
    }
    s.notes.push("kernel backend: interface bytes are the veths' counters less 14 bytes of Ethernet header per frame (ARP included); a node's tx counts what it handed to the link, before the emulated queue".into());
    if let (Some(p50), Some(p99)) = (report.lateness.quantile_us(0.5), report.lateness.quantile_us(0.99)) {
        s.notes.push(format!("kernel backend: frames left the emulator {p50:.0} us (median) / {p99:.0} us (p99) after their model arrival time"));
    }
    if report.tx_errors + report.rx_dropped > 0 {
        s.notes.push(format!("kernel backend: {} frames lost outside the link model (emulator send errors or full buffers)", report.tx_errors + report.rx_dropped));
    }
    if net.flows.iter().any(|f| f.transport == Transport::MPTCP) {
        s.notes.push("kernel backend: per-subflow goodput is bytes acknowledged on the subflow".into());
    }
    if net.flows.iter().any(|f| f.transport.is_sctp()) {
        s.notes.push("kernel backend: SCTP flows run usrsctp (raw IPv4 protocol 132) in the hosts' namespaces; usrsctp counts no bytes per destination, so SCTP flows have no per-path rows, and cwnd/srtt are the primary path's".into());
    }
    for err in report.errors.iter().chain(&e.teardown_errors) {
        s.notes.push(format!("kernel backend: {err}"));
    }
}

fn meta(plan: &Plan, e: &Ending, tracks: &[FlowTrack], stacks: &[Box<dyn HostStack>]) -> serde_json::Value {
    let report = &e.report;
    let mut hosts = serde_json::Map::new();
    for st in stacks {
        hosts.extend(st.meta());
    }
    serde_json::json!({
        "namespace_prefix": e.prefix,
        "setup_s": e.setup_s,
        "kernel": sys::run(&["uname", "-r"]).unwrap_or_default().trim(),
        "emulator": {
            "frames": report.frames,
            "lateness_p50_us": report.lateness.quantile_us(0.5),
            "lateness_p99_us": report.lateness.quantile_us(0.99),
            "lateness_max_us": report.lateness.max_ns as f64 / 1e3,
            "lateness_within_200us": report.lateness.share_within_us(200),
            // Diagnosis of the lateness: frames read late (stalls before the
            // emulator got to them), timed wake-ups late, CPU and time the
            // thread waited for a CPU.
            "read_delay_p99_us": report.read_delay.quantile_us(0.99),
            "oversleep_p99_us": report.oversleep.quantile_us(0.99),
            "cpu_s": report.cpu_ns as f64 / 1e9,
            "run_delay_ms": report.run_delay_ns as f64 / 1e6,
            "send_errors": report.tx_errors,
            "rx_dropped": report.rx_dropped,
        },
        "pcap_packets": e.pcap_packets,
        // Where each MPTCP flow's subflow ids and flags came from.
        "subflow_probes": plan.net.flows.iter().zip(tracks).filter(|(f, _)| f.transport == Transport::MPTCP).map(|(f, t)| {
            (f.name.clone(), serde_json::json!({"mptcp_full_info": t.full_info, "sock_diag_flags": t.diag_flags, "ids": t.subs.iter().map(|x| x.id).collect::<Vec<_>>()}))
        }).collect::<serde_json::Map<_, _>>(),
        "mptcp_counters": e.netstat.0,
        "tcp_counters": e.netstat.1,
        "mplab_hosts": hosts,
    })
}
