//! The flows' drivers: each flow kind ([`FlowKind`]) prepares its ends
//! before time zero (sockets bound and listening, helper processes ready,
//! gateway devices up) and starts its threads at time zero. The ends on
//! mplab's stack are the stack's ([`super::stack::HostStack`]); these are
//! the kernel's sockets and the programs around them.

use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant as Wall};

use mplab_scenario::network::Flow;

use super::options::KernelError;
use super::plan::{FlowKind, Plan};
use super::stack::HostStack;
use crate::apps::{self, Clock, FlowState};
use crate::converter::{Converter, MplabCarriers};
use crate::gateway::Gateway;
use crate::usrsctp::flow::SctpFlow;
use crate::usrsctp::host::PathLine;

/// The order in which the kinds prepare their ends.
const PREPARE_ORDER: [FlowKind; 5] = [FlowKind::Sctp, FlowKind::Datagram, FlowKind::Tunnel, FlowKind::Converter, FlowKind::Stream];

/// The flows, prepared and not yet started. Dropping it (on a set-up
/// error) closes the sockets and ends the helper processes.
#[derive(Default)]
pub struct Flows {
    /// Converters, by flow id.
    converters: Vec<(usize, Converter)>,
    /// Tunnel gateways, (flow id, one end).
    gateways: Vec<(usize, Gateway)>,
    /// Datagram sockets: (flow id, client, socket).
    udp: Vec<(usize, bool, OwnedFd)>,
    /// usrsctp pairs, in flow order; they live until [`Flows::finish`].
    sctp: Vec<SctpFlow>,
    /// Per flow: the client's kernel socket, if its client is the kernel's.
    clients: Vec<Option<OwnedFd>>,
    /// Per flow: the listeners of its kernel servers, (node, listener).
    listeners: Vec<Vec<(usize, Arc<OwnedFd>)>>,
}

/// Per flow: the SCTP sender's latest per-path view, for the probes.
pub type SctpPaths = Vec<Option<Arc<Mutex<Vec<PathLine>>>>>;

fn failed(f: &Flow, e: impl std::fmt::Display) -> KernelError {
    KernelError::Failed(format!("flow {}: {e}", f.name))
}

fn spawn(name: String, body: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, KernelError> {
    std::thread::Builder::new().name(name).spawn(body).map_err(|e| KernelError::Failed(e.to_string()))
}

impl Flows {
    /// Prepares every flow's ends, kind by kind ([`PREPARE_ORDER`]).
    pub fn prepare(plan: &Plan, node_ns: &[String], states: &[Arc<FlowState>], stacks: &mut [&mut dyn HostStack]) -> Result<Flows, KernelError> {
        let n = plan.net.flows.len();
        let mut fl = Flows { clients: (0..n).map(|_| None).collect(), listeners: vec![Vec::new(); n], ..Default::default() };
        for kind in PREPARE_ORDER {
            for f in plan.flows_of(kind) {
                match kind {
                    FlowKind::Sctp => fl.prepare_sctp(plan, f, node_ns, &states[f.id])?,
                    FlowKind::Datagram => fl.prepare_datagram(plan, f, node_ns)?,
                    FlowKind::Tunnel => fl.prepare_tunnel(plan, f, node_ns, stacks)?,
                    FlowKind::Converter => fl.prepare_converter(plan, f, node_ns, stacks)?,
                    FlowKind::Stream => fl.prepare_stream(plan, f, node_ns)?,
                }
            }
        }
        Ok(fl)
    }

    /// usrsctp host processes in the ends' namespaces, ready (bound,
    /// listening) before time zero.
    fn prepare_sctp(&mut self, plan: &Plan, f: &Flow, node_ns: &[String], st: &Arc<FlowState>) -> Result<(), KernelError> {
        let s = SctpFlow::spawn(plan.net, f, node_ns, plan.hard_ns, st.clone(), [plan.on_kernel[f.to], plan.on_kernel[f.from]]).map_err(|e| failed(f, e))?;
        s.wait_ready(Duration::from_secs(5)).map_err(|e| failed(f, e))?;
        self.sctp.push(s);
        Ok(())
    }

    /// Both UDP sockets bound before time zero, so the first datagram
    /// finds its server.
    fn prepare_datagram(&mut self, plan: &Plan, f: &Flow, node_ns: &[String]) -> Result<(), KernelError> {
        let at = |node: usize, what: &str, e: std::io::Error| failed(f, format!("UDP socket on {} ({what}): {e}", plan.net.nodes[node].name));
        self.udp.push((f.id, false, crate::datagrams::socket(&node_ns[f.to], (std::net::Ipv4Addr::UNSPECIFIED, f.dport), None).map_err(|e| at(f.to, "server", e))?));
        self.udp.push((f.id, true, crate::datagrams::socket(&node_ns[f.from], (f.src, f.sport), Some((f.dst, f.dport))).map_err(|e| at(f.from, "client", e))?));
        Ok(())
    }

    /// Each gateway's TUN, rule and socket (or its stack's end).
    fn prepare_tunnel(&mut self, plan: &Plan, f: &Flow, node_ns: &[String], stacks: &mut [&mut dyn HostStack]) -> Result<(), KernelError> {
        for (end, node) in [(0, f.from), (1, f.to)] {
            let mut bridge = None;
            for s in stacks.iter_mut() {
                if let Some(fd) = s.tunnel_end(f, end, node).map_err(KernelError::Failed)? {
                    bridge = Some(fd);
                    break;
                }
            }
            self.gateways.push((f.id, crate::gateway::prepare(plan.net, f, end, &node_ns[node], bridge).map_err(|e| failed(f, e))?));
        }
        Ok(())
    }

    /// Fast Open, the CPE's redirect, both listeners (or their stacks' carriers).
    fn prepare_converter(&mut self, plan: &Plan, f: &Flow, node_ns: &[String], stacks: &mut [&mut dyn HostStack]) -> Result<(), KernelError> {
        let mut carriers = MplabCarriers::default();
        for s in stacks.iter_mut() {
            s.converter_ends(f, &mut carriers).map_err(KernelError::Failed)?;
        }
        self.converters.push((f.id, crate::converter::prepare(plan.net, f, &node_ns[f.from], &node_ns[f.to], carriers).map_err(|e| failed(f, e))?));
        Ok(())
    }

    /// Every kernel server of the flow (a balanced flow's backends)
    /// listens; a kernel client has its socket.
    fn prepare_stream(&mut self, plan: &Plan, f: &Flow, node_ns: &[String]) -> Result<(), KernelError> {
        let mut ls = Vec::new();
        for &srv in f.servers.iter().filter(|&&srv| plan.on_kernel[srv]) {
            let name = &plan.net.nodes[srv].name;
            let l = apps::listen(&node_ns[srv], f).map_err(|e| failed(f, format!("listening on {name}:{}: {e}", f.dport)))?;
            ls.push((srv, Arc::new(l)));
        }
        self.listeners[f.id] = ls;
        if plan.on_kernel[f.from] {
            self.clients[f.id] = Some(apps::client_socket(&node_ns[f.from], f).map_err(|e| failed(f, format!("socket on {}: {e}", f.from_name)))?);
        }
        Ok(())
    }

    /// The SCTP senders' per-path views, per flow.
    pub fn sctp_paths(&self, plan: &Plan) -> SctpPaths {
        let mut it = self.sctp.iter();
        plan.net.flows.iter().map(|f| if f.transport.is_sctp() { it.next().map(|s| s.paths.clone()) } else { None }).collect()
    }

    /// Tells the usrsctp hosts time zero (`t0_real`, CLOCK_REALTIME) and
    /// starts the other kinds' threads: gateways, converters, datagram
    /// ends, then each stream's servers and client.
    pub fn start(&mut self, plan: &Plan, states: &[Arc<FlowState>], clk: &Clock, t0_real: u64) -> Result<Vec<JoinHandle<()>>, KernelError> {
        let net = plan.net;
        for s in &mut self.sctp {
            s.start(t0_real);
        }
        let mut threads = Vec::new();
        // The transport endpoints' engines configure ends from the network.
        let shared = self.udp.iter().any(|&(fi, _, _)| crate::endpoint_flow::takes(&net.flows[fi])).then(|| Arc::new(net.clone()));
        for (fi, gw) in self.gateways.drain(..) {
            let (ff, st, c) = (net.flows[fi].clone(), states[fi].clone(), clk.clone());
            threads.push(spawn(format!("gw-{}", ff.name), move || crate::gateway::run(ff, gw, st, c))?);
        }
        for (fi, conv) in self.converters.drain(..) {
            let (ff, st, c) = (net.flows[fi].clone(), states[fi].clone(), clk.clone());
            threads.push(spawn(format!("conv-{}", ff.name), move || crate::converter::run(conv, st, c))?);
        }
        for (fi, client, sock) in self.udp.drain(..) {
            let (ff, st, c) = (net.flows[fi].clone(), states[fi].clone(), clk.clone());
            let name = format!("{}-{}", if client { "cli" } else { "srv" }, ff.name);
            let seed = net.seed ^ (0x155_0000 + 2 * fi as u64 + u64::from(!client));
            threads.push(match shared.clone().filter(|_| crate::endpoint_flow::takes(&ff)) {
                Some(n) => spawn(name, move || crate::endpoint_flow::run(n, ff, sock, client, seed, st, c))?,
                None => spawn(name, move || crate::datagrams::run(ff, sock, client, st, c))?,
            });
        }
        for (i, f) in net.flows.iter().enumerate() {
            for (node, l) in self.listeners[i].clone() {
                let (ff, st, c) = (f.clone(), states[i].clone(), clk.clone());
                threads.push(spawn(format!("srv-{}", f.name), move || apps::run_server(ff, l, node, st, c))?);
            }
            if let Some(s) = self.clients[i].take() {
                let (ff, st, c) = (f.clone(), states[i].clone(), clk.clone());
                threads.push(spawn(format!("cli-{}", f.name), move || apps::run_client(ff, s, st, c))?);
            }
        }
        Ok(threads)
    }

    /// Waits for the usrsctp hosts to end (they end by themselves at the
    /// hard deadline at the latest) until `deadline`.
    pub fn finish(&mut self, deadline: Wall) {
        for s in self.sctp.drain(..) {
            s.finish(deadline);
        }
    }

    /// Drops the listeners (nothing may keep the namespaces alive).
    pub fn close_listeners(&mut self) {
        self.listeners.clear();
    }
}
