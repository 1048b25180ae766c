//! mplab's stack as a run's [`HostStack`]: a TUN per host (and per
//! gateway router that ends hybrid-access connections), the gateway
//! programs' connections bridged into the host loop, one loop thread per
//! host, and its counters for the results.

use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use mplab_scenario::network::{Flow, Network, NodeKind};

use super::bridge::{self, Exchange};
use super::choice::on_gateway_stack;
use super::host::{self, HostCounters, Role};
use super::tun::Tun;
use crate::addr_events::ControlFn;
use crate::apps::{Clock, FlowState};
use crate::converter::MplabCarriers;
use crate::run::{FlowKind, HostStack, KernelError, Plan};

/// mplab's stack on the nodes flagged in `mplab`.
pub struct UserspaceStack {
    mplab: Vec<bool>,
    /// Each host's TUN, until its loop takes it.
    tuns: Vec<(usize, Tun)>,
    /// Per node: the gateway programs' connections (the loop's ends).
    bridged: Vec<Vec<(usize, Role, OwnedFd)>>,
    /// Per node: the converters' carriers.
    exchanged: Vec<Vec<(usize, Role, Arc<Exchange>)>>,
    /// Each host's (name, namespace, counters), in start order.
    hosts: Vec<(String, String, Arc<Mutex<HostCounters>>)>,
    /// Each host's kernel TCP counters at the end, in `hosts` order.
    kernel_tcp: Vec<serde_json::Value>,
}

impl UserspaceStack {
    pub fn new(net: &Network, mplab: Vec<bool>) -> UserspaceStack {
        UserspaceStack {
            mplab,
            tuns: Vec::new(),
            bridged: net.nodes.iter().map(|_| Vec::new()).collect(),
            exchanged: net.nodes.iter().map(|_| Vec::new()).collect(),
            hosts: Vec::new(),
            kernel_tcp: Vec::new(),
        }
    }

    /// Whether `node` ends gateway flow `f` on this stack.
    fn on_stack(&self, f: &Flow, node: usize) -> bool {
        self.mplab[node] && on_gateway_stack(f)
    }
}

impl HostStack for UserspaceStack {
    fn nodes(&self) -> Vec<bool> {
        self.mplab.clone()
    }

    /// The TUNs: a host's carries all its TCP, a gateway router's only its
    /// own connections'.
    fn open(&mut self, plan: &Plan, node_ns: &[String]) -> Result<(), KernelError> {
        for n in plan.net.nodes.iter().filter(|n| self.mplab[n.id]) {
            let t = if n.kind == NodeKind::Host { Tun::attach(plan.net, n.id, &node_ns[n.id]) } else { Tun::attach_gateway(plan.net, n.id, &node_ns[n.id]) };
            self.tuns.push((n.id, t.map_err(|e| KernelError::Failed(format!("mplab stack on {}: {e}", n.name)))?));
        }
        Ok(())
    }

    fn tunnel_end(&mut self, f: &Flow, end: usize, node: usize) -> Result<Option<OwnedFd>, String> {
        if !self.on_stack(f, node) {
            return Ok(None);
        }
        let (mine, theirs) = bridge::pair().map_err(|e| format!("flow {}: socket pair: {e}", f.name))?;
        self.bridged[node].push((f.id, if end == 0 { Role::Client } else { Role::Server }, mine));
        Ok(Some(theirs))
    }

    fn converter_ends(&mut self, f: &Flow, carriers: &mut MplabCarriers) -> Result<(), String> {
        for (node, role) in [(f.from, Role::Client), (f.to, Role::Server)] {
            if self.on_stack(f, node) {
                let ex = Arc::new(Exchange::new().map_err(|e| format!("flow {}: eventfd: {e}", f.name))?);
                self.exchanged[node].push((f.id, role, ex.clone()));
                *(if role == Role::Client { &mut carriers.cpe } else { &mut carriers.hag }) = Some(ex);
            }
        }
        Ok(())
    }

    /// One thread per host, owning its TUN.
    fn start(&mut self, plan: &Plan, node_ns: &[String], states: &[Arc<FlowState>], clk: &Clock) -> Result<Vec<JoinHandle<()>>, KernelError> {
        let net = plan.net;
        let mut threads = Vec::new();
        for (node, tun) in self.tuns.drain(..) {
            let mut ends = Vec::new();
            // A gateway router runs only its hybrid-access connections; a
            // host every end but those carried over UDP, which run on the
            // namespace's UDP sockets (crate::run::flows::datagram).
            let router = net.nodes[node].kind != NodeKind::Host;
            let here = |fi: usize, f: &Flow| if router { self.mplab[node] && on_gateway_stack(f) } else { plan.kinds[fi] != FlowKind::Datagram };
            for (fi, f) in net.flows.iter().enumerate().filter(|&(fi, f)| here(fi, f)) {
                if f.from == node {
                    ends.push((fi, Role::Client));
                }
                // Every backend of a balanced flow listens; the one the
                // balancer picks takes the connection.
                if f.servers.contains(&node) {
                    ends.push((fi, Role::Server));
                }
            }
            let counters = Arc::new(Mutex::new(HostCounters::default()));
            self.hosts.push((net.nodes[node].name.clone(), node_ns[node].clone(), counters.clone()));
            let (nn, sts, c) = (net.clone(), states.to_vec(), clk.clone());
            let spec = host::HostSpec { node, ends, bridged: std::mem::take(&mut self.bridged[node]), exchanged: std::mem::take(&mut self.exchanged[node]) };
            threads.push(
                std::thread::Builder::new()
                    .name(format!("mplab-{}", net.nodes[node].name))
                    .spawn(move || {
                        crate::sys::tight_timer_slack();
                        host::run(&nn, spec, tun, sts, c, counters)
                    })
                    .map_err(|e| KernelError::Failed(e.to_string()))?,
            );
        }
        Ok(threads)
    }

    fn control(&self) -> Option<ControlFn> {
        Some(super::control::send_control)
    }

    /// The kernel TCP of mplab's hosts must never have seen our segments:
    /// its segment and RST counters, for meta.json.
    fn finish(&mut self) {
        self.kernel_tcp = self
            .hosts
            .iter()
            .map(|(_, ns, _)| {
                let snmp = crate::sys::in_netns(ns, || std::fs::read_to_string("/proc/thread-self/net/snmp")).unwrap_or_default();
                let mut l = snmp.lines().filter(|l| l.starts_with("Tcp:"));
                let (k, v) = (l.next().unwrap_or(""), l.next().unwrap_or(""));
                let m: serde_json::Map<String, serde_json::Value> = k.split_whitespace().zip(v.split_whitespace()).skip(1).filter(|(k, _)| matches!(*k, "InSegs" | "OutSegs" | "OutRsts" | "AttemptFails")).map(|(k, v)| (k.to_string(), v.parse::<i64>().unwrap_or(0).into())).collect();
                serde_json::Value::Object(m)
            })
            .collect();
    }

    fn server_counts(&self, node: &str) -> Option<(u64, u64, u64)> {
        let (_, _, hc) = self.hosts.iter().find(|(n, _, _)| n == node)?;
        Some(hc.lock().map(|g| (g.connections, g.joins_accepted, g.joins_refused)).unwrap_or_default())
    }

    fn meta(&self) -> serde_json::Map<String, serde_json::Value> {
        self.hosts
            .iter()
            .zip(&self.kernel_tcp)
            .map(|((n, _, c), ktcp)| {
                let c = c.lock().map(|g| g.clone()).unwrap_or_default();
                (
                    n.clone(),
                    serde_json::json!({
                        "rx_packets": c.rx_packets, "tx_packets": c.tx_packets, "bad_checksum": c.bad_checksum, "not_tcp": c.not_tcp,
                        "kernel_tcp": ktcp, "rsts_sent": c.rsts_sent, "tx_dropped": c.tx_dropped, "unplaced_segments": c.unplaced_segments, "wakeups": c.wakeups,
                        "bridge_bytes_gone": c.bridge_bytes_gone, "carriers": c.carriers,
                        "max_pass_ms": c.max_pass_ns as f64 / 1e6, "max_pass_cpu_ms": c.max_pass_cpu_ns as f64 / 1e6, "passes_over_10ms": c.passes_over_10ms,
                        "streams": c.digests.iter().map(|(f, r, n, h)| serde_json::json!({"flow": f, "end": r, "bytes_read": n, "sha256": h})).collect::<Vec<_>>(),
                    }),
                )
            })
            .collect()
    }
}
