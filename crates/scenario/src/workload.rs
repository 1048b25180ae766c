//! What runs on the network: transport settings, flows, MPTCP endpoints,
//! timed events, middleboxes and probes, checked against the resolved
//! nodes and links.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use crate::error::{diag, Diag};
use crate::names::find_node;
use crate::network::{
    CapturePoint, FlowId, Middlebox, MiddleboxAction, MptcpConfig, MptcpEndpoint, Network, Node, NodeId, Placement,
    Probes, SctpFlowConfig, TcpConfig,
};
use crate::network::Flow;
use crate::schema::{
    Direction, FlowSpec, MptcpSpec, StackProfile, NodeKind, Spec, TcpSpec, Transport,
};
use crate::units::Duration;

/// First listening port handed out (iperf's default).
const FIRST_PORT: u16 = 5001;
/// Client ports are `FIRST_SPORT + flow id`, in the IANA dynamic range.
const FIRST_SPORT: u16 = 49152;

pub(crate) fn resolve(spec: &Spec, net: &mut Network) -> Result<(), Diag> {
    check_tcp(&spec.transport.tcp, "transport.tcp")?;
    check_mptcp(&spec.transport.mptcp, "transport.mptcp")?;
    net.mptcp_endpoints = endpoints(&spec.transport.mptcp, &net.nodes)?;
    for name in spec.transport.mptcp.profiles.keys() {
        let node = find_node(&net.nodes, name, &format!("transport.mptcp.profiles.{name}"))?;
        if node.kind != NodeKind::Host {
            return diag(format!("transport.mptcp.profiles.{name}"), format!("{name:?} is a router; profiles are for the hosts that run MPTCP"));
        }
    }
    net.flows = flows(spec, net)?;
    net.events = crate::events::resolve(spec, net)?;
    net.middleboxes = middleboxes(spec, net)?;
    net.probes = probes(spec, net)?;
    Ok(())
}

// -------------------------------------------------------------- transport

/// Congestion-control and scheduler names are the backend's to check, but
/// they must at least look like a kernel module name.
fn check_ident(s: &str, path: &str, what: &str) -> Result<(), Diag> {
    if s.is_empty() || !s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        return diag(path, format!("invalid {what} {s:?}: expected a name like \"cubic\" (lower-case letters, digits, '_')"));
    }
    Ok(())
}

/// Scheduler names: a name (letters, digits, '_' or '-') with an optional
/// numeric parameter after a colon (`"kbest:3"`), or several separated by
/// '/' (`"weighted:70/30"`).
fn check_scheduler(s: &str, path: &str) -> Result<(), Diag> {
    let (name, param) = match s.split_once(':') {
        Some((n, p)) => (n, Some(p)),
        None => (s, None),
    };
    let name_ok = !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    let param_ok = param.is_none_or(|p| p.split('/').all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit())));
    if !name_ok || !param_ok {
        return diag(path, format!("invalid scheduler {s:?}: expected a name like \"minrtt\", \"kbest:3\" or \"weighted:70/30\" (lower-case letters, digits, '_', '-', optionally ':' and numbers separated by '/')"));
    }
    Ok(())
}

/// Path manager names: a name (letters, digits, '_' or '-'); the backend
/// knows which exist.
fn check_path_manager(s: &str, path: &str) -> Result<(), Diag> {
    if s.is_empty() || !s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-') {
        return diag(path, format!("invalid path manager {s:?}: expected a name like \"fullmesh\" (lower-case letters, digits, '_', '-')"));
    }
    Ok(())
}

fn check_buf(b: Option<crate::units::Size>, path: &str) -> Result<(), Diag> {
    if b.is_some_and(|b| b.bytes() == 0) {
        return diag(path, "must be greater than 0 (leave it out to let the stack autotune)");
    }
    Ok(())
}

/// Linux accepts 1 µs ..= INT_MAX µs for `tcp_rto_min_us`; below 1 µs a
/// timeout would fire before any ACK can come back, above a minute it is
/// a typo (RFC 6298 caps the RTO itself at 60 s or more).
fn check_rto_min(d: Option<crate::units::Duration>) -> Result<(), Diag> {
    match d {
        Some(d) if d.as_nanos() < 1_000 => diag("transport.tcp.rto_min", "must be at least 1us"),
        Some(d) if d.as_nanos() > 60_000_000_000 => diag("transport.tcp.rto_min", format!("must be at most 60s, got {}s", d.as_secs_f64())),
        _ => Ok(()),
    }
}

fn check_subflows(n: Option<u32>, path: &str) -> Result<(), Diag> {
    if n.is_some_and(|n| !(1..=32).contains(&n)) {
        return diag(path, format!("must be between 1 and 32, got {}", n.unwrap_or_default()));
    }
    Ok(())
}

fn check_tcp(t: &TcpSpec, path: &str) -> Result<(), Diag> {
    check_ident(&t.cc, &format!("{path}.cc"), "congestion control")?;
    check_buf(t.rcv_buf, &format!("{path}.rcv_buf"))?;
    check_buf(t.snd_buf, &format!("{path}.snd_buf"))?;
    if let Some(mss) = t.mss {
        // 88 is Linux's TCP_MIN_MSS; 65495 fits a 64 KiB IP datagram.
        if !(88..=65495).contains(&mss.bytes()) {
            return diag(format!("{path}.mss"), format!("must be between 88 and 65495 bytes, got {mss}"));
        }
    }
    Ok(())
}

fn check_mptcp(m: &MptcpSpec, path: &str) -> Result<(), Diag> {
    check_scheduler(&m.scheduler, &format!("{path}.scheduler"))?;
    check_path_manager(&m.path_manager, &format!("{path}.path_manager"))?;
    if let Some(cc) = &m.cc {
        check_ident(cc, &format!("{path}.cc"), "congestion control")?;
    }
    check_subflows(m.subflows, &format!("{path}.subflows"))?;
    if m.profile == StackProfile::Linux && (m.opportunistic_retransmit || m.penalize) {
        let field = if m.opportunistic_retransmit { "opportunistic_retransmit" } else { "penalize" };
        return diag(format!("{path}.{field}"), "Linux has no opportunistic retransmission or penalisation; profile = \"linux\" runs without them");
    }
    if let Some(r) = &m.rejoin {
        if m.profile == StackProfile::Linux && r.enabled {
            return diag(format!("{path}.rejoin"), "Linux never opens a reset subflow again; profile = \"linux\" runs without `rejoin`");
        }
        if r.after.as_nanos() == 0 {
            return diag(format!("{path}.rejoin.after"), "the first wait must be above zero");
        }
        if r.max < r.after {
            return diag(format!("{path}.rejoin.max"), format!("the longest wait ({}) is below the first ({})", r.max, r.after));
        }
    }
    Ok(())
}

fn endpoints(m: &MptcpSpec, nodes: &[Node]) -> Result<Vec<MptcpEndpoint>, Diag> {
    let mut out: Vec<MptcpEndpoint> = Vec::new();
    for (i, e) in m.endpoints.iter().enumerate() {
        let path = format!("transport.mptcp.endpoints[{i}]");
        let node = find_node(nodes, &e.node, &format!("{path}.node"))?;
        let iface = match (e.addr, &e.iface) {
            (Some(addr), iface) => {
                let found = node.interfaces.iter().find(|x| x.addr == addr);
                let Some(found) = found else {
                    return diag(format!("{path}.addr"), format!("{addr} is not an address of {}", node.name));
                };
                if iface.as_ref().is_some_and(|n| *n != found.name) {
                    return diag(format!("{path}.iface"), format!("{addr} is on {}, not {}", found.name, iface.as_deref().unwrap_or_default()));
                }
                found
            }
            (None, Some(name)) => node.iface(name).ok_or_else(|| Diag::new(format!("{path}.iface"), format!("{} has no interface {name:?}", node.name)))?,
            (None, None) => return diag(path, "give the endpoint an `addr` or an `iface`"),
        };
        if out.iter().any(|x| x.node == node.id && x.addr == iface.addr) {
            return diag(path, format!("{} already has an endpoint for {}", node.name, iface.addr));
        }
        let id = out.iter().filter(|x| x.node == node.id).count() + 1;
        let id = u8::try_from(id).map_err(|_| Diag::new(&path, "too many endpoints on one node"))?;
        let flags: BTreeSet<_> = e.flags.iter().copied().collect();
        out.push(MptcpEndpoint {
            node: node.id,
            node_name: node.name.clone(),
            id,
            addr: iface.addr,
            iface: iface.index,
            iface_name: iface.name.clone(),
            flags: flags.into_iter().collect(),
        });
    }
    Ok(out)
}

// ------------------------------------------------------------------ flows

/// A flow endpoint must be a host with at least one interface.
fn flow_host<'a>(nodes: &'a [Node], name: &str, path: &str) -> Result<&'a Node, Diag> {
    let node = find_node(nodes, name, path)?;
    if node.kind == NodeKind::Router {
        return diag(path, format!("{name:?} is a router; flows run between hosts"));
    }
    if node.interfaces.is_empty() {
        return diag(path, format!("{name:?} has no links"));
    }
    Ok(node)
}

/// An end of a tunnel: a router (it forwards the traffic it carries).
fn gateway<'a>(nodes: &'a [Node], name: &str, path: &str) -> Result<&'a Node, Diag> {
    let node = find_node(nodes, name, path)?;
    if node.kind != NodeKind::Router {
        return diag(path, format!("{name:?} is a host; app = \"tunnel\" and \"converter\" run between two gateway routers (kind = \"router\")"));
    }
    Ok(node)
}

fn flows(spec: &Spec, net: &Network) -> Result<Vec<Flow>, Diag> {
    let duration = spec.duration;
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    // Explicit ports first, so automatic ones step around them.
    let mut ports: BTreeMap<(NodeId, u16), String> = BTreeMap::new();
    for (i, f) in spec.flows.iter().enumerate() {
        if let (Some(port), Some(to)) = (f.port, net.node(&f.to)) {
            let path = format!("flows[{i}].port");
            if port == 0 {
                return diag(path, "port 0 is not a listening port");
            }
            if let Some(other) = ports.insert((to.id, port), format!("flows[{i}]")) {
                return diag(path, format!("port {port} on {} is already used by {other}", f.to));
            }
        }
    }
    let mut out = Vec::new();
    for (i, f) in spec.flows.iter().enumerate() {
        let path = format!("flows[{i}]");
        let name = f.name.clone().unwrap_or_else(|| format!("flow{i}"));
        if let Some(first) = names.insert(name.clone(), i) {
            return diag(format!("{path}.name"), format!("duplicate flow name {name:?} (also flows[{first}])"));
        }
        let tunnel = f.between_gateways();
        let from = if tunnel { gateway(&net.nodes, &f.from, &format!("{path}.from"))? } else { flow_host(&net.nodes, &f.from, &format!("{path}.from"))? };
        // `to` may name a load balancer's router: the flow goes to its VIP
        // and whichever backend the balancer picks serves it.
        let service = balanced_service(spec, net, &f.to);
        let to = match &service {
            Some((_, backends)) => &net.nodes[backends[0]],
            None if tunnel => gateway(&net.nodes, &f.to, &format!("{path}.to"))?,
            None => flow_host(&net.nodes, &f.to, &format!("{path}.to"))?,
        };
        if tunnel && !net.links.iter().any(|l| [l.a.node, l.b.node] == [from.id, to.id] || [l.b.node, l.a.node] == [from.id, to.id]) {
            return diag(format!("{path}.to"), format!("a tunnel's gateways are joined by the access links: {} and {} share none", from.name, to.name));
        }
        if service.is_some() && f.transport.over_udp() {
            return diag(format!("{path}.to"), format!("{} is a load balancer, which balances TCP and MPTCP connections, not UDP or QUIC", f.to));
        }
        let servers = service.as_ref().map_or_else(|| vec![to.id], |(_, b)| b.clone());
        if servers.contains(&from.id) {
            return diag(format!("{path}.to"), "a flow needs two different hosts");
        }
        let dst = match (f.to_addr, &service) {
            (Some(a), Some((vip, _))) if a != *vip => return diag(format!("{path}.to_addr"), format!("{} balances {vip}; leave `to_addr` out or give that", f.to)),
            (_, Some((vip, _))) => *vip,
            (Some(a), None) if !to.owns(a) => return diag(format!("{path}.to_addr"), format!("{a} is not an address of {}", to.name)),
            (Some(a), None) => a,
            (None, None) => to.interfaces[0].addr,
        };
        let src = match f.from_addr {
            Some(a) if !from.owns(a) => return diag(format!("{path}.from_addr"), format!("{a} is not an address of {}", from.name)),
            Some(a) => a,
            // The address the kernel would pick: that of the interface the
            // main table sends `dst` out of.
            None => {
                let route = from.lookup(None, dst).ok_or_else(|| Diag::new(&path, format!("{} has no route to {} ({dst})", from.name, to.name)))?;
                let iface = route.nexthops.first().map_or(0, |h| h.iface);
                from.interfaces[iface].addr
            }
        };
        if let Err(why) = net.trace(from.id, src, dst) {
            return diag(&path, format!("{} ({dst}) is unreachable from {} ({src}): {why}", to.name, from.name));
        }
        let start = f.start.unwrap_or(Duration::ZERO);
        let stop = f.stop.unwrap_or(duration);
        let start_jitter = f.start_jitter.unwrap_or(Duration::ZERO);
        if start_jitter.as_nanos() > 0 && start.as_nanos() + start_jitter.as_nanos() >= stop.as_nanos() {
            return diag(format!("{path}.start_jitter"), format!("start {start} plus a jitter up to {start_jitter} reaches the flow's end ({stop})"));
        }
        if start >= duration {
            return diag(format!("{path}.start"), format!("{start} is not before the end of the scenario (duration = {duration})"));
        }
        if stop > duration {
            return diag(format!("{path}.stop"), format!("{stop} is after the end of the scenario (duration = {duration})"));
        }
        if stop <= start {
            return diag(format!("{path}.stop"), format!("stop ({stop}) must be after start ({start})"));
        }
        let dport = match f.port {
            Some(p) => p,
            None => {
                let mut p = u16::try_from(i).ok().and_then(|i| FIRST_PORT.checked_add(i)).ok_or_else(|| Diag::new(&path, "too many flows"))?;
                while ports.contains_key(&(to.id, p)) {
                    p = p.checked_add(1).ok_or_else(|| Diag::new(&path, "no free port left"))?;
                }
                ports.insert((to.id, p), path.clone());
                p
            }
        };
        let sport = u16::try_from(i).ok().and_then(|i| FIRST_SPORT.checked_add(i)).ok_or_else(|| Diag::new(&path, "too many flows"))?;
        let (tcp, mptcp) = flow_transport(spec, f, &path, [&from.name, &to.name])?;
        let sctp = flow_sctp(spec, f, &path)?;
        out.push(Flow {
            id: i,
            name,
            transport: f.transport,
            from: from.id,
            from_name: from.name.clone(),
            to: to.id,
            to_name: if service.is_some() { f.to.clone() } else { to.name.clone() },
            servers,
            src,
            dst,
            sport,
            dport,
            app: crate::plugins::apps::resolve(f, &path)?,
            start_ns: start.as_nanos(),
            start_jitter_ns: start_jitter.as_nanos(),
            stop_ns: stop.as_nanos(),
            tcp,
            mptcp,
            sctp,
        });
    }
    Ok(out)
}

/// `[transport.sctp]` with the flow's buffers, for SCTP flows; MPTCP's and
/// TCP's per-flow knobs are refused on them.
fn flow_sctp(spec: &Spec, f: &FlowSpec, path: &str) -> Result<Option<SctpFlowConfig>, Diag> {
    if !f.transport.is_sctp() {
        return Ok(None);
    }
    let tcp_only = [
        ("cc", f.cc.is_some()),
        ("path_manager", f.path_manager.is_some()),
        ("subflows", f.subflows.is_some()),
        ("scheduler", f.scheduler.is_some()),
        ("checksum", f.checksum.is_some()),
        ("profile", f.profile.is_some()),
    ];
    if let Some((field, _)) = tcp_only.iter().find(|(_, set)| *set) {
        return diag(format!("{path}.{field}"), format!("does not apply to transport = \"{}\" (see [transport.sctp])", f.transport.name()));
    }
    let s = &spec.transport.sctp;
    check_buf(s.rcv_buf, "transport.sctp.rcv_buf")?;
    check_buf(s.snd_buf, "transport.sctp.snd_buf")?;
    let ms = |d: Option<crate::units::Duration>, field: &str, default_ms: u64| -> Result<u64, Diag> {
        match d {
            Some(d) if d.as_nanos() < 1_000_000 => diag(format!("transport.sctp.{field}"), "must be at least 1ms"),
            Some(d) => Ok(d.as_nanos()),
            None => Ok(default_ms * 1_000_000),
        }
    };
    const DEFAULT_BUF: u64 = 256 * 1024;
    Ok(Some(SctpFlowConfig {
        cmt: (f.transport == Transport::CMT_SCTP).then_some(s.cmt),
        dac: s.dac,
        nr_sack: s.nr_sack,
        buffer_splitting: s.buffer_splitting,
        rtx_policy: s.rtx_policy,
        heartbeat_interval_ns: ms(s.heartbeat_interval, "heartbeat_interval", 30_000)?,
        rcv_buf: f.rcv_buf.or(s.rcv_buf).map_or(DEFAULT_BUF, |b| b.bytes()),
        snd_buf: f.snd_buf.or(s.snd_buf).map_or(DEFAULT_BUF, |b| b.bytes()),
        rto_min_ns: ms(s.rto_min, "rto_min", 1000)?,
        rto_initial_ns: ms(s.rto_initial, "rto_initial", 1000)?,
        profile: s.profile,
    }))
}

/// The VIP and backends of the load balancer on router `name`, if any.
fn balanced_service(spec: &Spec, net: &Network, name: &str) -> Option<(Ipv4Addr, Vec<NodeId>)> {
    let m = spec.middleboxes.iter().find(|m| m.kind() == "load_balancer" && m.node.as_deref() == Some(name))?;
    let vip = m.field::<Ipv4Addr>("vip")?;
    let backends: Option<Vec<NodeId>> = m.field::<Vec<String>>("backends")?.iter().map(|b| net.node(b).map(|n| n.id)).collect();
    backends.filter(|b| !b.is_empty()).map(|b| (vip, b))
}

/// `[transport]` defaults with the flow's overrides applied.
fn flow_transport(spec: &Spec, f: &FlowSpec, path: &str, ends: [&str; 2]) -> Result<(TcpConfig, Option<MptcpConfig>), Diag> {
    let t = &spec.transport.tcp;
    let m = &spec.transport.mptcp;
    f.transport.check_fields(
        &[
            ("cc", f.cc.is_some()),
            ("rcv_buf", f.rcv_buf.is_some()),
            ("snd_buf", f.snd_buf.is_some()),
            ("path_manager", f.path_manager.is_some()),
            ("subflows", f.subflows.is_some()),
            ("scheduler", f.scheduler.is_some()),
            ("checksum", f.checksum.is_some()),
            ("profile", f.profile.is_some()),
        ],
        path,
    )?;
    if let Some(cc) = &f.cc {
        check_ident(cc, &format!("{path}.cc"), "congestion control")?;
    }
    check_buf(f.rcv_buf, &format!("{path}.rcv_buf"))?;
    check_buf(f.snd_buf, &format!("{path}.snd_buf"))?;
    check_subflows(f.subflows, &format!("{path}.subflows"))?;
    check_rto_min(t.rto_min)?;
    if let Some(s) = &f.scheduler {
        check_scheduler(s, &format!("{path}.scheduler"))?;
    }
    if let Some(pm) = &f.path_manager {
        check_path_manager(pm, &format!("{path}.path_manager"))?;
    }
    let tcp = TcpConfig {
        cc: f.cc.clone().unwrap_or_else(|| t.cc.clone()),
        rcv_buf: f.rcv_buf.or(t.rcv_buf).map(|b| b.bytes()),
        snd_buf: f.snd_buf.or(t.snd_buf).map(|b| b.bytes()),
        mss: t.mss.map(|m| m.bytes() as u32),
        sack: t.sack,
        timestamps: t.timestamps,
        delayed_ack: t.delayed_ack,
        wscale: t.wscale,
        rto_min_ns: t.rto_min.map(|d| d.as_nanos()),
        // The flow's own, else the host's, else every host's.
        profiles: ends.map(|n| f.profile.or_else(|| m.profiles.get(n).copied()).unwrap_or(m.profile)),
    };
    // The multipath settings, for every transport whose paths a path
    // manager opens (MPTCP's subflows, MPQUIC's paths).
    if !f.transport.takes("path_manager") {
        return Ok((tcp, None));
    }
    // A per-flow cc is the flow's subflow cc too; otherwise mptcp.cc, else tcp.cc.
    let cc = f.cc.clone().or_else(|| m.cc.clone()).unwrap_or_else(|| t.cc.clone());
    let path_manager = f.path_manager.clone().unwrap_or_else(|| m.path_manager.clone());
    // What `subflows` means (a cap, or ndiffports' count and its default)
    // is the path manager's: the backend's translation applies it.
    let subflows = f.subflows.or(m.subflows);
    let profiles = tcp.profiles;
    Ok((
        tcp,
        Some(MptcpConfig {
            path_manager,
            subflows,
            checksum: f.checksum.unwrap_or(m.checksum),
            scheduler: f.scheduler.clone().unwrap_or_else(|| m.scheduler.clone()),
            cc,
            max_subflows: m.limits.subflows,
            add_addr_accepted: m.limits.add_addr_accepted,
            opportunistic_retransmit: m.opportunistic_retransmit,
            penalize: m.penalize,
            profiles,
            rejoin: match m.rejoin {
                None => crate::network::Rejoin::Profile,
                Some(r) if !r.enabled => crate::network::Rejoin::Never,
                Some(r) => crate::network::Rejoin::After { first_ns: r.after.as_nanos(), max_ns: r.max.as_nanos() },
            },
        }),
    ))
}

// ------------------------------------------------------------ middleboxes

fn middleboxes(spec: &Spec, net: &Network) -> Result<Vec<Middlebox>, Diag> {
    let mut out = Vec::new();
    for (i, m) in spec.middleboxes.iter().enumerate() {
        let path = format!("middleboxes[{i}]");
        let action = crate::plugins::middleboxes::resolve(m, &path)?;
        let placement = match (&m.link, &m.node) {
            (Some(name), None) => {
                let link = net.link(name).ok_or_else(|| Diag::new(format!("{path}.link"), format!("unknown link {name:?}")))?;
                Placement::Link { link: link.id, link_name: link.name.clone(), direction: m.direction.unwrap_or(Direction::Both) }
            }
            (None, Some(name)) => {
                if m.direction.is_some() {
                    return diag(format!("{path}.direction"), "only applies to a middlebox on a `link`");
                }
                let node = find_node(&net.nodes, name, &format!("{path}.node"))?;
                if node.kind != NodeKind::Router {
                    return diag(format!("{path}.node"), format!("{name:?} is a host; put middleboxes on a router or a link"));
                }
                Placement::Node { node: node.id, node_name: node.name.clone() }
            }
            (Some(_), Some(_)) => return diag(path, "place the middlebox on a `link` or a `node`, not both"),
            (None, None) => return diag(path, "place the middlebox on a `link` (with optional `direction`) or a router `node`"),
        };
        // A kind of the backend's registry is placed by its facts when the
        // backend checks it (mplab_backend::plugins::check).
        if let Some((field, why)) = crate::plugins::middleboxes::typed(m.kind()).and_then(|e| e.facts.misplaced(&placement)) {
            return diag(format!("{path}.{field}"), why);
        }
        let from_ns = m.from.map_or(0, |d| d.as_nanos());
        let until_ns = m.until.map(|d| d.as_nanos());
        if m.from.is_some() || m.until.is_some() {
            if matches!(action, MiddleboxAction::LoadBalancer { .. } | MiddleboxAction::Attacker { .. }) {
                let field = if m.from.is_some() { "from" } else { "until" };
                let why = if matches!(action, MiddleboxAction::Attacker { .. }) { "an attacker strikes at `at`" } else { "a load balancer serves the whole run" };
                return diag(format!("{path}.{field}"), format!("{why}: it takes no `from` / `until`"));
            }
            if let Some(u) = until_ns {
                if u <= from_ns {
                    return diag(format!("{path}.until"), format!("must be later than `from` ({} s)", from_ns as f64 / 1e9));
                }
            }
        }
        out.push(Middlebox { id: i, action, placement, from_ns, until_ns });
    }
    Ok(out)
}

// ----------------------------------------------------------------- probes

fn probes(spec: &Spec, net: &Network) -> Result<Probes, Diag> {
    let p = &spec.probes;
    if p.interval == Duration::ZERO {
        return diag("probes.interval", "must be greater than 0");
    }
    let mut pcap = Vec::new();
    for (i, ep) in p.pcap.iter().enumerate() {
        let path = format!("probes.pcap[{i}]");
        let node = find_node(&net.nodes, &ep.node, &path)?;
        let ifaces: Vec<_> = match &ep.iface {
            Some(name) => vec![node.iface(name).ok_or_else(|| Diag::new(&path, format!("{} has no interface {name:?}", node.name)))?],
            None => node.interfaces.iter().collect(),
        };
        for iface in ifaces {
            let point = CapturePoint { node: node.id, node_name: node.name.clone(), iface: iface.index, iface_name: iface.name.clone() };
            if !pcap.contains(&point) {
                pcap.push(point);
            }
        }
    }
    let flows: Vec<FlowId> = match &p.flows {
        None => net.flows.iter().map(|f| f.id).collect(),
        Some(names) => names
            .iter()
            .enumerate()
            .map(|(i, n)| net.flow(n).map(|f| f.id).ok_or_else(|| Diag::new(format!("probes.flows[{i}]"), format!("unknown flow {n:?}"))))
            .collect::<Result<_, _>>()?,
    };
    let queues = p
        .queues
        .iter()
        .enumerate()
        .map(|(i, n)| net.link(n).map(|l| l.id).ok_or_else(|| Diag::new(format!("probes.queues[{i}]"), format!("unknown link {n:?}"))))
        .collect::<Result<_, _>>()?;
    Ok(Probes { interval_ns: p.interval.as_nanos(), pcap, cwnd: p.cwnd, srtt: p.srtt, flows, queues, snaplen: p.snaplen, qlog: p.qlog, out_dir: None })
}
