//! What the kernel can and cannot run, and the per-namespace kernel
//! configuration of a scenario: MPTCP sysctls, `ip mptcp limits` and
//! `ip mptcp endpoint`s from the path managers, TCP options sysctls, and
//! the middleboxes (iptables TCPOPTSTRIP, nft masquerade).

use std::collections::BTreeMap;

use mplab_proto::mptcp::path_manager::{self, KernelEndpoints};
use mplab_scenario::network::{App, EndpointFlag, Flow, MiddleboxAction, Network, NodeKind, Placement, Transport};
use mplab_backend::middlebox::{self, MiddleboxConfig};
use mplab_scenario::plugins::OnKernel;
use mplab_scenario::Scenario;

use mplab_proto::registry::{self, Entry, KernelMap};

use crate::sys;
use crate::topo::ip_batch;

/// Congestion controls this kernel offers.
pub fn available_cc() -> Vec<String> {
    sys::sysctl_read("net.ipv4.tcp_available_congestion_control").map(|s| s.split_whitespace().map(String::from).collect()).unwrap_or_default()
}

pub fn available_schedulers() -> Vec<String> {
    sys::sysctl_read("net.mptcp.available_schedulers").map(|s| s.split_whitespace().map(String::from).collect()).unwrap_or_else(|_| vec!["default".into()])
}

/// The kernel's name for an algorithm of mplab's registry `reg` (Err: the
/// reason Linux has none); a name mplab's stack does not know is taken as
/// the kernel's own (`bbr`), for the availability check to judge.
pub fn kernel_name<T: ?Sized>(reg: &[Entry<T>], name: &str) -> Result<String, &'static str> {
    match registry::entry(reg, name).map(|e| e.kernel) {
        Some(KernelMap::Linux(k)) => Ok(k.to_string()),
        Some(KernelMap::Refuse(why)) => Err(why),
        None => Ok(name.to_string()),
    }
}

/// The field a flow setting comes from: the flow's own override if it has
/// one, else the `[transport]` default.
fn flow_path(sc: &Scenario, f: &Flow, field: &str, default: &str) -> String {
    let idx = sc.flows.iter().position(|s| s.name.as_deref() == Some(f.name.as_str())).or_else(|| (f.id < sc.flows.len()).then_some(f.id));
    let own = idx.filter(|&i| {
        let s = &sc.flows[i];
        match field {
            "cc" => s.cc.is_some(),
            "path_manager" => s.path_manager.is_some(),
            "scheduler" => s.scheduler.is_some(),
            "checksum" => s.checksum.is_some(),
            _ => false,
        }
    });
    match own {
        Some(i) => format!("flows[{i}].{field}"),
        None => default.to_string(),
    }
}

/// One kernel setting per namespace: a node's flows must agree.
struct PerNode<T> {
    what: &'static str,
    vals: BTreeMap<usize, (T, String)>,
}

impl<T: PartialEq + std::fmt::Debug> PerNode<T> {
    fn new(what: &'static str) -> Self {
        PerNode { what, vals: BTreeMap::new() }
    }
    /// Records flow `flow`'s wish for `node`; Err when another flow wants otherwise.
    fn want(&mut self, node: usize, node_name: &str, v: T, flow: &str) -> Result<(), String> {
        if let Some((old, by)) = self.vals.get(&node) {
            if *old != v {
                return Err(format!(
                    "flows {by:?} and {flow:?} need different {} on node {node_name:?} ({old:?} vs {v:?}); the kernel has one setting per network namespace",
                    self.what
                ));
            }
            return Ok(());
        }
        self.vals.insert(node, (v, flow.to_string()));
        Ok(())
    }
}

/// Everything in the scenario this backend cannot run as written, as
/// errors located in the scenario file. Empty: the run can go ahead.
/// Every node runs on the kernel here (the kernel backend); see
/// [`unsupported_on`] for runs where some hosts run mplab's stack.
pub fn unsupported(sc: &Scenario, net: &Network) -> Vec<String> {
    let mut out = unsupported_on(sc, net, &vec![true; net.nodes.len()]);
    for n in &net.nodes {
        if let Some(s) = n.stack.as_deref().filter(|s| *s != "kernel") {
            let path = sc.nodes.iter().position(|x| x.name == n.name).map(|i| format!("nodes[{i}].stack")).unwrap_or_else(|| "nodes".into());
            out.push(sc.error_at(&path, format!("node {:?} asks for stack {s:?}; the kernel backend runs every node on the Linux kernel", n.name)).to_string());
        }
    }
    out
}

/// Whether the `from` (client) or the `to` (server) end of a flow writes
/// stream data, as opposed to only acknowledging it: the sender is the end
/// whose congestion control and MPTCP scheduler shape the transfer.
pub fn end_sends(app: &App, client: bool) -> bool {
    mplab_backend::apps::sends(app, client)
}

/// What the kernel cannot run of `net` when only the nodes with
/// `kernel[node]` run on it (the others run mplab's stack, which the
/// kernel's limits do not concern). Per flow end on a kernel node:
///
/// * congestion control and MPTCP scheduler are the sender's business:
///   they must exist in this kernel only where the kernel end writes data
///   (a kernel end that only acknowledges keeps its namespace's default,
///   see [`apply_on`] and `apps::configure`);
/// * ndiffports is the initiator's path manager: refused when the client
///   is a kernel node (a kernel server just accepts the extra joins);
/// * delayed ACKs are the receiver's: refused where a kernel end reads;
/// * one value per namespace (SACK, timestamps, window scaling, MPTCP
///   checksums, scheduler) is checked among the kernel nodes only.
pub fn unsupported_on(sc: &Scenario, net: &Network, kernel: &[bool]) -> Vec<String> {
    let mut out = Vec::new();
    let mut err = |path: &str, msg: String| out.push(sc.error_at(path, msg).to_string());
    let ccs = available_cc();
    let scheds = available_schedulers();
    let mut sack = PerNode::new("transport.tcp.sack");
    let mut ts = PerNode::new("transport.tcp.timestamps");
    let mut ws = PerNode::new("transport.tcp.wscale");
    let mut csum = PerNode::new("MPTCP checksum settings");
    let mut sched = PerNode::new("MPTCP schedulers");
    let is_k = |n: usize| kernel.get(n).copied().unwrap_or(true);
    for f in &net.flows {
        if f.transport.is_sctp() {
            // No SCTP in this kernel: its ends run usrsctp (crate::usrsctp).
            if is_k(f.from) || is_k(f.to) {
                if let Some(why) = crate::usrsctp::unsupported(f) {
                    err(&format!("flows[{}]", f.id), why);
                } else if let Err(why) = crate::usrsctp::ffi::Usrsctp::load() {
                    err(&format!("flows[{}].transport", f.id), format!("{} on the kernel backend runs usrsctp: {why}", f.transport.name()));
                }
            }
            continue;
        }
        if let OnKernel::Refuses(why) = f.transport.entry().about.kernel {
            err(&format!("flows[{}].transport", f.id), format!("transport = {:?}: {why}", f.transport.name()));
            continue;
        }
        let about = match &f.app {
            App::Stream(_) => mplab_backend::apps::Kind::of(&f.app).about(),
            App::Datagram(t) => mplab_backend::datagram::kind_of(&t.table.kind).map(|k| k.about),
            _ => mplab_scenario::plugins::apps::REGISTRY.iter().find(|e| e.about.name == f.app.name()).map(|e| e.about),
        };
        if let Some(OnKernel::Refuses(why)) = about.map(|a| a.kernel) {
            err(&format!("flows[{}].app", f.id), format!("app = {:?}: {why}", f.app.name()));
            continue;
        }
        if f.transport.over_udp() {
            // UDP sockets of the host's namespace on every backend
            // (datagrams.rs, endpoint_flow.rs): QUIC, Multipath QUIC and the
            // datagram applications are user-space code over UDP, the same
            // code the simulator runs, and an mplab host's TUN takes only
            // its TCP and SCTP (userspace/tun.rs).
            continue;
        }
        let ends = [(f.from, &f.from_name, true), (f.to, &f.to_name, false)];
        let k_send = ends.iter().any(|&(n, _, cli)| is_k(n) && end_sends(&f.app, cli));
        let k_recv = ends.iter().any(|&(n, _, cli)| is_k(n) && end_sends(&f.app, !cli));
        let (cc, cc_path) = match &f.mptcp {
            Some(m) if sc.transport.mptcp.cc.is_some() => (m.cc.clone(), "transport.mptcp.cc".to_string()),
            Some(m) => (m.cc.clone(), flow_path(sc, f, "cc", "transport.tcp.cc")),
            None => (f.tcp.cc.clone(), flow_path(sc, f, "cc", "transport.tcp.cc")),
        };
        match kernel_name(mplab_proto::cc::REGISTRY, &cc) {
            Err(why) if k_send => err(&cc_path, format!("congestion control {cc:?} cannot run on the kernel: {why}")),
            Ok(k) if k_send && !ccs.contains(&k) => err(&cc_path, format!("congestion control {cc:?} is not available in this kernel (it has {})", ccs.join(", "))),
            _ => {}
        }
        if k_recv && !f.tcp.delayed_ack {
            err("transport.tcp.delayed_ack", "the kernel backend cannot turn delayed ACKs off (Linux has no per-connection switch)".into());
        }
        for &(node, name, _) in ends.iter().filter(|e| is_k(e.0)) {
            for (p, v) in [(&mut sack, f.tcp.sack), (&mut ts, f.tcp.timestamps), (&mut ws, f.tcp.wscale)] {
                if let Err(m) = p.want(node, name, v, &f.name) {
                    err(&format!("flows[{}]", f.id), m);
                }
            }
        }
        let Some(m) = &f.mptcp else { continue };
        // The path manager is the initiator's: a kernel server just accepts
        // the joins of an mplab client's ndiffports.
        let (pm, _) = mplab_backend::config::path_manager(net, f, m);
        if let (Some(KernelMap::Refuse(why)), true) = (path_manager::entry(&pm).map(|e| e.entry.kernel), is_k(f.from)) {
            err(&flow_path(sc, f, "path_manager", "transport.mptcp.path_manager"), why.into());
        }
        match kernel_name(mplab_proto::mptcp::scheduler::REGISTRY, &m.scheduler) {
            Err(why) if k_send => err(&flow_path(sc, f, "scheduler", "transport.mptcp.scheduler"), format!("MPTCP scheduler {:?} cannot run on the kernel: {why}", m.scheduler)),
            Ok(k) if k_send && !scheds.contains(&k) => {
                err(&flow_path(sc, f, "scheduler", "transport.mptcp.scheduler"), format!("MPTCP scheduler {:?} is not available in this kernel (it has {})", m.scheduler, scheds.join(", ")))
            }
            _ => {}
        }
        for &(node, name, cli) in ends.iter().filter(|e| is_k(e.0)) {
            if let Err(msg) = csum.want(node, name, m.checksum, &f.name) {
                err(&flow_path(sc, f, "checksum", "transport.mptcp.checksum"), msg);
            }
            // Kept for every kernel end, sending or not (as the kernel
            // backend always did): one sysctl per namespace.
            let _ = cli;
            if let Err(msg) = sched.want(node, name, m.scheduler.clone(), &f.name) {
                err(&flow_path(sc, f, "scheduler", "transport.mptcp.scheduler"), msg);
            }
        }
    }
    if let Err(m) = mptcp_plan_on(net, kernel) {
        err("transport.mptcp", m);
    }
    // Queue disciplines run in mplab's link emulator: a table no
    // discipline reads is refused at its field, a discipline by its reason
    // (once per table: a generator's serves many links).
    let mut queues: Vec<&mplab_scenario::network::Queue> = Vec::new();
    for q in net.links.iter().flat_map(|l| [&l.ab.queue, &l.ba.queue]) {
        if queues.contains(&q) {
            continue;
        }
        queues.push(q);
        match mplab_backend::link::QueueConfig::of(q) {
            Err(e) => err(&e.path, e.message),
            Ok(c) => {
                if let OnKernel::Refuses(why) = c.about().kernel {
                    err(&format!("{}.kind", q.path), why.into());
                }
            }
        }
    }
    for (i, mb) in net.middleboxes.iter().enumerate() {
        // A kind's table is checked again, as a queue's: a network built
        // by code has not been through mplab_backend::plugins::check.
        let facts = match &mb.action {
            MiddleboxAction::Plugin(p) => match MiddleboxConfig::of(p) {
                Ok(c) => Some(c.facts()),
                Err(e) => {
                    err(&e.path, e.message);
                    None
                }
            },
            typed => middlebox::facts_of(typed),
        };
        if let Some(OnKernel::Refuses(why)) = facts.map(|f| f.about.kernel) {
            err(&format!("middleboxes[{i}].kind"), why.into());
        }
        if mb.has_window() && matches!(mb.placement, Placement::Node { .. }) {
            let field = if mb.from_ns > 0 { "from" } else { "until" };
            err(&format!("middleboxes[{i}].{field}"), "on the real backends only a middlebox on a link acts for part of the run (a router's rules stay for the whole run): put it on a link".into());
        }
    }
    if net.ecmp == mplab_scenario::network::EcmpMode::Random {
        let has_ecmp = net.nodes.iter().any(|n| n.routing.main.iter().chain(n.routing.tables.iter().flat_map(|t| &t.routes)).any(|r| r.nexthops.len() > 1));
        if has_ecmp {
            err("ecmp", "the kernel spreads flows over equal-cost paths by hash (fib_multipath_hash_policy=1); `ecmp = \"random\"` is simulator-only".into());
        }
    }
    out
}

/// MPTCP configuration of one host namespace.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MptcpNode {
    /// `ip mptcp limits set subflow S add_addr_accepted A`.
    pub limits: Option<(u32, u32)>,
    /// `ip mptcp endpoint add ...` arguments.
    pub endpoints: Vec<String>,
    /// Addresses whose endpoints carry the backup flag.
    pub backup_addrs: Vec<std::net::Ipv4Addr>,
}

fn flags_str(flags: &[EndpointFlag]) -> String {
    flags
        .iter()
        .map(|f| match f {
            EndpointFlag::Signal => "signal",
            EndpointFlag::Subflow => "subflow",
            EndpointFlag::Backup => "backup",
            EndpointFlag::Fullmesh => "fullmesh",
            EndpointFlag::Laminar => "laminar",
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The most `ip mptcp limits` accepts for either limit (MPTCP_PM_ADDR_MAX).
const LINUX_PM_MAX: u32 = 8;

/// Per-node MPTCP settings from the flows' path managers. Err when two
/// flows need different settings on one node (the kernel's are per
/// namespace).
pub fn mptcp_plan(net: &Network) -> Result<BTreeMap<usize, MptcpNode>, String> {
    mptcp_plan_on(net, &vec![true; net.nodes.len()])
}

/// [`mptcp_plan`] for the nodes with `kernel[node]` only: mplab's hosts
/// configure their own connections, so their flows may disagree.
pub fn mptcp_plan_on(net: &Network, kernel: &[bool]) -> Result<BTreeMap<usize, MptcpNode>, String> {
    let mut plan: BTreeMap<usize, (MptcpNode, String)> = BTreeMap::new();
    for f in net.flows.iter().filter(|f| f.transport == Transport::MPTCP) {
        let Some(m) = &f.mptcp else { continue };
        let cli = &net.nodes[f.from];
        // The limits every backend uses for this flow (mplab_backend::config).
        let (_, lim) = mplab_backend::config::path_manager(net, f, m);
        if lim.subflows > LINUX_PM_MAX || lim.add_addr_accepted > LINUX_PM_MAX {
            return Err(format!(
                "flow {:?} needs limits of {} extra subflows and {} accepted ADD_ADDRs; Linux allows at most {LINUX_PM_MAX} of each (set `subflows` or `limits` lower)",
                f.name, lim.subflows, lim.add_addr_accepted
            ));
        }
        let limits = Some((lim.subflows, lim.add_addr_accepted));
        let mut c = MptcpNode { limits, ..Default::default() };
        let mut servers: Vec<(usize, MptcpNode)> = f.servers.iter().map(|&n| (n, MptcpNode { limits, ..Default::default() })).collect();
        match path_manager::entry(&m.path_manager).map_or(KernelEndpoints::None, |e| e.kernel_endpoints) {
            KernelEndpoints::None => {}
            KernelEndpoints::EveryAddress { client, server } => {
                // No `dev` (see the manager's entry): the per-source
                // policy routes pick the interface.
                for i in &cli.interfaces {
                    c.endpoints.push(format!("endpoint add {} {client}", i.addr));
                }
                for (srv, s) in servers.iter_mut() {
                    for i in net.nodes[*srv].interfaces.iter().filter(|i| i.addr != f.dst) {
                        s.endpoints.push(format!("endpoint add {} {server}", i.addr));
                    }
                }
            }
            KernelEndpoints::Scenario => {
                // No `dev` either: with it, a join from eth1 to the
                // server's eth0 address is reset when its SYN/ACK comes
                // back on eth0 (docs/validation.md).
                for (node, plan) in std::iter::once((cli.id, &mut c)).chain(servers.iter_mut().map(|(n, s)| (*n, s))) {
                    for e in net.mptcp_endpoints.iter().filter(|e| e.node == node) {
                        plan.endpoints.push(format!("endpoint add {} id {} {}", e.addr, e.id, flags_str(&e.flags)));
                        if e.flags.contains(&EndpointFlag::Backup) {
                            plan.backup_addrs.push(e.addr);
                        }
                    }
                }
            }
        }
        // A stateless balancer's backends announce their own addresses
        // (mplab_backend::config does the same for mplab's stack).
        for (srv, s) in servers.iter_mut() {
            if mplab_backend::config::stateless_backend(net, *srv) {
                for i in &net.nodes[*srv].interfaces {
                    let e = format!("endpoint add {} signal", i.addr);
                    if !s.endpoints.iter().any(|x| x.starts_with(&format!("endpoint add {} ", i.addr))) {
                        s.endpoints.push(e);
                    }
                }
            }
        }
        for (node, want) in std::iter::once((f.from, c)).chain(servers) {
            if !kernel.get(node).copied().unwrap_or(true) {
                continue;
            }
            match plan.get(&node) {
                Some((have, by)) if *have != want => {
                    return Err(format!(
                        "MPTCP flows {by:?} and {:?} need different path-manager settings on node {:?}; the kernel's endpoints and limits are per network namespace",
                        f.name, net.nodes[node].name
                    ))
                }
                Some(_) => {}
                None => {
                    plan.insert(node, (want, f.name.clone()));
                }
            }
        }
    }
    Ok(plan.into_iter().map(|(k, (v, _))| (k, v)).collect())
}

/// Applies the kernel settings to the namespaces of `net`'s nodes
/// (`ns[node id]`).
pub fn apply(net: &Network, ns: &[String]) -> Result<BTreeMap<usize, MptcpNode>, String> {
    apply_on(net, ns, &vec![true; net.nodes.len()])
}

/// [`apply`] where only the nodes with `kernel[node]` run the kernel's
/// (MP)TCP: mplab's hosts get no MPTCP settings (their kernel never sees
/// their TCP), and a kernel end gets the flow's scheduler only if this
/// kernel has it (else it only acknowledges data: [`unsupported_on`]).
pub fn apply_on(net: &Network, ns: &[String], kernel: &[bool]) -> Result<BTreeMap<usize, MptcpNode>, String> {
    let plan = mptcp_plan_on(net, kernel)?;
    apply_hosts(net, ns, kernel, &plan)?;
    apply_middleboxes(net, ns, &crate::balancer::plans(net))?;
    Ok(plan)
}

/// The kernel hosts' part of [`apply_on`]: sysctls, and the MPTCP limits
/// and endpoints of `plan` (from [`mptcp_plan_on`]).
pub fn apply_hosts(net: &Network, ns: &[String], kernel: &[bool], plan: &BTreeMap<usize, MptcpNode>) -> Result<(), String> {
    let scheds = available_schedulers();
    // Hosts, and the routers a flow ends on (a tunnel's gateways).
    let runs_flows = |id: usize| net.flows.iter().any(|f| f.from == id || f.to == id);
    for n in net.nodes.iter().filter(|n| (n.kind == NodeKind::Host || runs_flows(n.id)) && kernel.get(n.id).copied().unwrap_or(true)) {
        let mut kv: Vec<(String, String)> = vec![("net.mptcp.enabled".into(), "1".into()), ("net.mptcp.blackhole_timeout".into(), "0".into())];
        if let Some(f) = net.flows.iter().find(|f| f.from == n.id || f.to == n.id) {
            kv.push(("net.ipv4.tcp_sack".into(), u8::from(f.tcp.sack).to_string()));
            kv.push(("net.ipv4.tcp_timestamps".into(), u8::from(f.tcp.timestamps).to_string()));
            kv.push(("net.ipv4.tcp_window_scaling".into(), u8::from(f.tcp.wscale).to_string()));
        }
        if let Some(m) = net.flows.iter().filter(|f| f.from == n.id || f.to == n.id).find_map(|f| f.mptcp.as_ref()) {
            kv.push(("net.mptcp.checksum_enabled".into(), u8::from(m.checksum).to_string()));
            if let Some(k) = kernel_name(mplab_proto::mptcp::scheduler::REGISTRY, &m.scheduler).ok().filter(|k| scheds.contains(k)) {
                kv.push(("net.mptcp.scheduler".into(), k));
            }
        }
        let name = ns[n.id].clone();
        sys::in_netns(&name, move || {
            for (k, v) in &kv {
                sys::sysctl_write(k, v)?;
            }
            Ok(())
        })
        .map_err(|e| format!("namespace {}: {e}", ns[n.id]))?;
        let mut cmds = Vec::new();
        // Endpoints with a flag this iproute2 lacks (`laminar`): over
        // netlink, after the others, in the scenario's order among
        // themselves.
        let mut by_netlink = Vec::new();
        if let Some(p) = plan.get(&n.id) {
            if let Some((s, a)) = p.limits {
                cmds.push(format!("mptcp limits set subflow {s} add_addr_accepted {a}"));
            }
            for e in &p.endpoints {
                if crate::mptcp_netlink::needs_netlink(e) {
                    by_netlink.push(e.clone());
                } else {
                    cmds.push(format!("mptcp {e}"));
                }
            }
        }
        ip_batch(Some(&ns[n.id]), &cmds)?;
        for e in &by_netlink {
            crate::mptcp_netlink::add_endpoint(&ns[n.id], e)?;
        }
    }
    Ok(())
}

/// The middleboxes' part of [`apply_on`]: the rules of the middleboxes on
/// nodes (MPTCP stripping, NAT, the load balancers of `balancers`, from
/// `balancer::plans`). The balancers' forwarder threads start separately.
pub fn apply_middleboxes(net: &Network, ns: &[String], balancers: &[crate::balancer::Plan]) -> Result<(), String> {
    for mb in &net.middleboxes {
        let Placement::Node { node, .. } = &mb.placement else { continue };
        let nsn = &ns[*node];
        let config = match &mb.action {
            MiddleboxAction::Plugin(p) => Some(MiddleboxConfig::of(p).map_err(|e| e.to_string())?),
            _ => None,
        };
        match (&mb.action, &config) {
            (_, Some(MiddleboxConfig::StripMptcp(strip))) => {
                for chain in ["PREROUTING", "OUTPUT"] {
                    let mut a = vec!["ip", "netns", "exec", nsn, "iptables", "-w", "-t", "mangle", "-A", chain, "-p", "tcp"];
                    if strip.syn_only {
                        a.extend(["--tcp-flags", "SYN", "SYN"]);
                    }
                    a.extend(["-j", "TCPOPTSTRIP", "--strip-options", "30"]);
                    sys::run(&a)?;
                }
            }
            (MiddleboxAction::LoadBalancer { .. }, _) => {
                // The forwarder thread starts with the run (run/middleboxes.rs);
                // here: its routing tables, its queue rule, the VIP on the
                // backends' loopback, and the stateless mode's sysctl.
                for p in balancers.iter().filter(|p| p.node == *node) {
                    ip_batch(Some(nsn), &crate::balancer::ip_commands(p))?;
                    for rule in crate::balancer::iptables_rules(p) {
                        let mut a = vec!["ip", "netns", "exec", nsn.as_str(), "iptables"];
                        a.extend(rule.iter().map(String::as_str));
                        sys::run(&a)?;
                    }
                    for (b, _, _) in &p.backends {
                        let bns = &ns[*b];
                        let _ = ip_batch(Some(bns), &[format!("addr add {}/32 dev lo", p.vip)]);
                        if p.cfg.mode == mplab_scenario::network::BalancerMode::Stateless {
                            sys::in_netns(bns, || sys::sysctl_write("net.mptcp.allow_join_initial_addr_port", "0")).map_err(|e| format!("namespace {bns}: {e}"))?;
                        }
                    }
                }
            }
            (_, Some(MiddleboxConfig::SourceNat(nat))) => {
                let action = match nat.addr {
                    Some(a) => format!("snat to {a}"),
                    None => "masquerade".to_string(),
                };
                sys::run(&["ip", "netns", "exec", nsn, "nft", "add table ip mplab_nat"])?;
                sys::run(&["ip", "netns", "exec", nsn, "nft", "add chain ip mplab_nat post { type nat hook postrouting priority 100 ; policy accept ; }"])?;
                sys::run(&["ip", "netns", "exec", nsn, "nft", &format!("add rule ip mplab_nat post {action}")])?;
            }
            (other, _) => {
                let why = match middlebox::facts_of(other).map(|f| f.about.kernel) {
                    Some(OnKernel::Refuses(why)) => why,
                    _ => "the kernel backend has no rule for this middlebox kind",
                };
                return Err(why.into());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(mptcp: &str) -> Network {
        let toml = format!(
            "name = \"t\"\nduration = \"1s\"\n[topology]\nkind = \"parallel\"\npaths = 2\nrate = \"10Mbit\"\ndelay = \"10ms\"\n[transport.mptcp]\n{mptcp}\n[[flows]]\nfrom = \"client\"\nto = \"server\"\ntransport = \"mptcp\"\napp = \"bulk\"\n"
        );
        Scenario::from_str(&toml, "t.toml").unwrap_or_else(|e| panic!("{e}")).resolve().unwrap_or_else(|e| panic!("{e}"))
    }

    /// `ip mptcp limits` on both ends are the limits mplab's stack runs
    /// with on the other backends, for every path manager.
    #[test]
    fn plan_limits_are_the_shared_translation() {
        for pm in [
            "path_manager = \"default\"",
            "path_manager = \"endpoints\"",
            "path_manager = \"endpoints\"\nlimits = { subflows = 3, add_addr_accepted = 2 }",
            "path_manager = \"fullmesh\"",
            "path_manager = \"fullmesh\"\nsubflows = 1",
            "path_manager = \"fullmesh\"\nsubflows = 3",
        ] {
            let n = net(pm);
            let f = &n.flows[0];
            let (_, lim) = mplab_backend::config::path_manager(&n, f, f.mptcp.as_ref().unwrap());
            let plan = mptcp_plan(&n).unwrap();
            for node in [f.from, f.to] {
                assert_eq!(plan[&node].limits, Some((lim.subflows, lim.add_addr_accepted)), "{pm}");
            }
        }
    }

    /// The endpoints each manager's entry asks for: fullmesh's on every
    /// client address and the server's other addresses, none for
    /// `default`, the scenario's own for `endpoints`.
    #[test]
    fn plan_endpoints_come_from_the_path_manager_entry() {
        let n = net("path_manager = \"fullmesh\"");
        let f = &n.flows[0];
        let plan = mptcp_plan(&n).unwrap();
        let client = &plan[&f.from].endpoints;
        assert_eq!(client.len(), 2, "{client:?}");
        assert!(client.iter().all(|e| e.starts_with("endpoint add ") && e.ends_with(" subflow fullmesh")), "{client:?}");
        assert_eq!(plan[&f.to].endpoints, vec![format!("endpoint add {} signal", n.nodes[f.to].interfaces.iter().find(|i| i.addr != f.dst).unwrap().addr)]);
        let plan = mptcp_plan(&net("path_manager = \"default\"")).unwrap();
        assert!(plan.values().all(|p| p.endpoints.is_empty()));
    }

    #[test]
    fn limits_beyond_linux_are_refused_not_capped() {
        let e = mptcp_plan(&net("path_manager = \"fullmesh\"\nlimits = { subflows = 12, add_addr_accepted = 1 }")).unwrap_err();
        assert!(e.contains("at most 8"), "{e}");
    }

    /// SCTP flows run usrsctp on kernel hosts: bulk transfers to one
    /// server are accepted (where the library loads), anything else is
    /// refused naming the flow.
    #[test]
    fn sctp_flows_beyond_bulk_are_refused_on_the_kernel() {
        let sctp = |app: &str| {
            let toml = format!("name = \"t\"\nduration = \"1s\"\n[topology]\nkind = \"parallel\"\npaths = 2\nrate = \"10Mbit\"\n[[flows]]\nfrom = \"client\"\nto = \"server\"\ntransport = \"cmt-sctp\"\n{app}\n");
            let sc = Scenario::from_str(&toml, "t.toml").unwrap_or_else(|e| panic!("{e}"));
            let net = sc.resolve().unwrap_or_else(|e| panic!("{e}"));
            unsupported_on(&sc, &net, &[true; 2])
        };
        let e = sctp("app = \"download\"\nbytes = \"1MB\"");
        assert!(e.len() == 1 && e[0].contains("flows[0]") && e[0].contains("bulk"), "{e:?}");
        let ok = sctp("app = \"bulk\"");
        let loads = crate::usrsctp::ffi::Usrsctp::load().is_ok();
        assert_eq!(ok.is_empty(), loads, "{ok:?}");
        if !loads {
            assert!(ok[0].contains("libusrsctp"), "{ok:?}");
        }
    }

    /// The kernel backend refuses exactly the middlebox kinds whose
    /// registry entry says so, with the entry's reason, and accepts the
    /// others.
    #[test]
    fn middlebox_refusals_come_from_the_registry() {
        let with_box = |body: &str| {
            let toml = format!(
                "name = \"t\"\nduration = \"1s\"\n[topology]\nkind = \"dumbbell\"\npairs = 1\naccess_rate = \"10Mbit\"\nbottleneck_rate = \"10Mbit\"\n[[flows]]\nfrom = \"l0\"\nto = \"r0\"\ntransport = \"tcp\"\n[[middleboxes]]\n{body}\n"
            );
            let sc = Scenario::from_str(&toml, "t.toml").unwrap_or_else(|e| panic!("{e}"));
            let n = mplab_backend::plugins::resolve(&sc).unwrap_or_else(|e| panic!("{e}"));
            unsupported(&sc, &n)
        };
        for e in middlebox::all() {
            let body = match e.about.name {
                "strip_mptcp" => "kind = \"strip_mptcp\"\nnode = \"left\"",
                "nat" => "kind = \"nat\"\nnode = \"left\"",
                "resegment" => "kind = \"resegment\"\nmode = \"split\"\nnode = \"left\"",
                "rewrite" => "kind = \"rewrite\"\nnode = \"left\"",
                "load_balancer" => "kind = \"load_balancer\"\nnode = \"left\"\nmode = \"token\"\nvip = \"10.100.0.1\"\nbackends = [\"l0\"]",
                "attacker" => "kind = \"attacker\"\nlink = \"left-right\"\nattack = \"rst-on-path\"",
                // With mplab-backend's test-fixtures feature (a workspace test build).
                "fixture-drop-every-nth" => "kind = \"fixture-drop-every-nth\"\nlink = \"left-right\"\nn = 2",
                other => panic!("add a case for the new middlebox kind {other}"),
            };
            let errs = with_box(body);
            match e.about.kernel {
                OnKernel::Runs(_) => assert!(errs.is_empty(), "{}: {errs:?}", e.about.name),
                OnKernel::Refuses(why) => assert!(errs.len() == 1 && errs[0].contains(why), "{}: {errs:?}", e.about.name),
            }
        }
        // A window: on a link (the emulator) yes, on a router no, with the
        // line of the field.
        assert!(with_box("kind = \"strip_mptcp\"\nlink = \"left-right\"\nfrom = \"1s\"\nuntil = \"2s\"").is_empty());
        let errs = with_box("kind = \"strip_mptcp\"\nnode = \"left\"\nuntil = \"2s\"");
        assert!(errs.len() == 1 && errs[0].starts_with("t.toml:15:") && errs[0].contains("middleboxes[0].until: on the real backends only a middlebox on a link"), "{errs:?}");
    }
}
