//! The scenario's topology in network namespaces: one namespace per node,
//! one "wire" namespace per run holding the emulator's ends of every link,
//! veth pairs, addresses, routes (ECMP as multipath routes), policy
//! routing rules and forwarding. Every step is checked; a failure names the
//! command and its error. Dropping a [`Topology`] deletes everything it
//! created.

use std::process::Command;

use mplab_scenario::network::{Network, NodeKind, Route, RouteOrigin, MAIN_TABLE};

use crate::sys;

/// Every namespace of every kernel run starts with this.
pub const PREFIX: &str = "mplab-";

/// A fresh run prefix: `mplab-<pid>-<random>`, so parallel runs never
/// collide and `mplab clean` can tell a live run's namespaces from leftovers.
pub fn run_prefix() -> String {
    let mut b = [0u8; 2];
    let _ = std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b));
    let r = u16::from_le_bytes(b) ^ (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0) as u16);
    format!("{PREFIX}{}-{r:04x}", std::process::id())
}

/// Name of link `id`'s end facing endpoint `end` (0 = a, 1 = b) in the
/// wire namespace.
pub fn wire_end(id: usize, end: usize) -> String {
    format!("l{id}{}", if end == 0 { 'a' } else { 'b' })
}

pub struct Topology {
    pub prefix: String,
    /// Namespace of each node, by node id.
    pub node_ns: Vec<String>,
    pub wire_ns: String,
    created: Vec<String>,
}

/// Runs `ip [-n ns] -batch -` with `cmds`; on failure names the command
/// that failed.
pub fn ip_batch(ns: Option<&str>, cmds: &[String]) -> Result<(), String> {
    if cmds.is_empty() {
        return Ok(());
    }
    let mut args: Vec<&str> = Vec::new();
    if let Some(n) = ns {
        args.extend(["-n", n]);
    }
    args.extend(["-batch", "-"]);
    let text = cmds.join("\n") + "\n";
    let out = sys::output_within(Command::new("ip").args(&args), Some(text.as_bytes()), sys::COMMAND_LIMIT).map_err(|e| format!("{e} (ip -batch; install iproute2 if it is missing)"))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    let line = err.lines().find_map(|l| l.split("Command failed -:").nth(1)).and_then(|n| n.trim().parse::<usize>().ok());
    let nsarg = ns.map(|n| format!("-n {n} ")).unwrap_or_default();
    match line.and_then(|n| cmds.get(n.wrapping_sub(1))) {
        Some(c) => Err(format!("`ip {nsarg}{c}` failed: {}", err.lines().next().unwrap_or(""))),
        None => Err(format!("`ip {nsarg}-batch` failed: {err}")),
    }
}

/// `tcp_rto_min_us` for node `node`: the RTO floor of the flows it ends
/// (`transport.tcp.rto_min` is scenario-wide, so they agree).
fn rto_min_us(net: &Network, node: usize) -> Option<String> {
    net.flows.iter().filter(|f| f.from == node || f.to == node).find_map(|f| f.tcp.rto_min_ns).map(|ns| ns.div_ceil(1000).max(1).to_string())
}

fn route_cmd(r: &Route, node: &mplab_scenario::network::Node, table: Option<u32>) -> Option<String> {
    let tbl = table.filter(|&t| t != MAIN_TABLE).map(|t| format!(" table {t}")).unwrap_or_default();
    if r.origin == RouteOrigin::Connected {
        // The kernel adds the main table's connected routes itself.
        table.filter(|&t| t != MAIN_TABLE)?;
        let h = r.nexthops.first()?;
        let src = node.interfaces.get(h.iface).map(|i| format!(" src {}", i.addr)).unwrap_or_default();
        return Some(format!("route replace {} dev {} scope link{src}{tbl}", r.dst, h.iface_name));
    }
    let hop = |h: &mplab_scenario::network::NextHop| match h.gateway {
        Some(g) => format!("via {g} dev {}", h.iface_name),
        None => format!("dev {}", h.iface_name),
    };
    match r.nexthops.as_slice() {
        [] => None,
        [h] => Some(format!("route replace {} {}{}{tbl}", r.dst, hop(h), if h.gateway.is_none() { " scope link" } else { "" })),
        hs => Some(format!("route replace {} {}{tbl}", r.dst, hs.iter().map(|h| format!("nexthop {}", hop(h))).collect::<Vec<_>>().join(" "))),
    }
}

impl Topology {
    /// Builds `net` under `prefix`. On error everything created so far is
    /// removed again (the returned error says which step failed).
    pub fn build(net: &Network, prefix: &str) -> Result<Topology, String> {
        let t = Topology::create(net, prefix)?;
        t.address(net)?;
        Ok(t)
    }

    /// The namespaces (one per node and the wire's) and the veth pairs
    /// between them, up. On error everything created so far is removed
    /// again; once returned, dropping the topology removes it.
    pub fn create(net: &Network, prefix: &str) -> Result<Topology, String> {
        let mut t = Topology { prefix: prefix.to_string(), node_ns: Vec::new(), wire_ns: format!("{prefix}~wire"), created: Vec::new() };
        t.create_inner(net)?;
        Ok(t)
    }

    fn add_ns(&mut self, name: &str) -> Result<(), String> {
        sys::run(&["ip", "netns", "add", name])?;
        self.created.push(name.to_string());
        Ok(())
    }

    fn create_inner(&mut self, net: &Network) -> Result<(), String> {
        for n in &net.nodes {
            for i in &n.interfaces {
                if i.name.len() > 15 {
                    return Err(format!("interface name {}:{} is longer than Linux's 15 characters", n.name, i.name));
                }
            }
        }
        let wire = self.wire_ns.clone();
        self.add_ns(&wire)?;
        for n in &net.nodes {
            let ns = format!("{}-{}", self.prefix, n.name);
            self.add_ns(&ns)?;
            self.node_ns.push(ns);
        }
        // Namespace-wide settings first, so interfaces inherit them.
        let all: Vec<(String, Option<bool>, Option<String>)> = std::iter::once((wire.clone(), None, None))
            .chain(net.nodes.iter().map(|n| (self.node_ns[n.id].clone(), Some(n.kind == NodeKind::Router), rto_min_us(net, n.id))))
            .collect();
        for (ns, router, rto_min) in &all {
            let router = *router;
            let rto_min = rto_min.clone();
            let nsn = ns.clone();
            sys::in_netns(ns, move || {
                let mut kv: Vec<(&str, &str)> = vec![
                    ("net.ipv6.conf.all.disable_ipv6", "1"),
                    ("net.ipv6.conf.default.disable_ipv6", "1"),
                    ("net.ipv4.conf.all.rp_filter", "0"),
                    ("net.ipv4.conf.default.rp_filter", "0"),
                ];
                match router {
                    Some(true) => kv.extend([("net.ipv4.ip_forward", "1"), ("net.ipv4.fib_multipath_hash_policy", "1")]),
                    Some(false) => kv.push(("net.ipv4.ip_forward", "0")),
                    None => kv.push(("net.ipv4.ip_forward", "0")),
                }
                // The scenario's RTO floor (per namespace since Linux 6.11).
                if let Some(us) = rto_min.as_deref() {
                    kv.push(("net.ipv4.tcp_rto_min_us", us));
                }
                for (k, v) in kv {
                    sys::sysctl_write(k, v)?;
                }
                Ok(())
            })
            .map_err(|e| format!("namespace {nsn}: {e}"))?;
            ip_batch(Some(ns), &["link set lo up".to_string()])?;
        }
        // veth pairs: node interface <-> wire end.
        let mut veths = Vec::new();
        for l in &net.links {
            for (end, e) in [(0, &l.a), (1, &l.b)] {
                veths.push(format!("link add {} netns {} mtu {} type veth peer name {} netns {} mtu {}", e.iface_name, self.node_ns[e.node], l.mtu, wire_end(l.id, end), wire, l.mtu));
            }
        }
        ip_batch(None, &veths)?;
        // Wire ends: offloads off, up.
        let ends: Vec<String> = net.links.iter().flat_map(|l| [wire_end(l.id, 0), wire_end(l.id, 1)]).collect();
        let e2 = ends.clone();
        sys::in_netns(&wire, move || {
            for e in &e2 {
                sys::offloads_off(e)?;
            }
            Ok(())
        })
        .map_err(|e| format!("namespace {wire}: {e}"))?;
        ip_batch(Some(&wire), &ends.iter().map(|e| format!("link set {e} up")).collect::<Vec<_>>())
    }

    /// The nodes' interfaces: offloads off, addresses, up; then their
    /// routes, policy tables and rules.
    pub fn address(&self, net: &Network) -> Result<(), String> {
        for n in &net.nodes {
            let ns = self.node_ns[n.id].clone();
            let ifs: Vec<String> = n.interfaces.iter().map(|i| i.name.clone()).collect();
            sys::in_netns(&ns, move || {
                for i in &ifs {
                    sys::offloads_off(i)?;
                }
                Ok(())
            })
            .map_err(|e| format!("namespace {ns}: {e}"))?;
            let mut cmds = Vec::new();
            for i in &n.interfaces {
                cmds.push(format!("addr add {}/{} dev {}", i.addr, i.prefix, i.name));
                cmds.push(format!("link set {} up", i.name));
            }
            ip_batch(Some(&ns), &cmds)?;
            let mut cmds = Vec::new();
            for r in &n.routing.main {
                cmds.extend(route_cmd(r, n, None));
            }
            for t in &n.routing.tables {
                for r in &t.routes {
                    cmds.extend(route_cmd(r, n, Some(t.id)));
                }
            }
            for r in &n.routing.rules {
                cmds.push(format!("rule add from {} priority {} table {}", if r.from.len == 0 { "all".to_string() } else { r.from.to_string() }, r.priority, r.table));
            }
            ip_batch(Some(&ns), &cmds)?;
        }
        Ok(())
    }

    /// Deletes every namespace this run created (their veths go with them)
    /// after killing any process left inside. Idempotent.
    pub fn teardown(&mut self) -> Vec<String> {
        let mut errs = Vec::new();
        for ns in self.created.drain(..).rev() {
            if let Err(e) = delete_ns(&ns) {
                errs.push(e);
            }
        }
        errs
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for e in self.teardown() {
            eprintln!("mplab: teardown: {e}");
        }
    }
}

/// Kills the processes inside `ns` (never this one) and deletes it.
pub fn delete_ns(ns: &str) -> Result<(), String> {
    if let Ok(out) = sys::run(&["ip", "netns", "pids", ns]) {
        let me = std::process::id();
        for pid in out.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
            if pid as u32 != me {
                // SAFETY: plain kill.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
    sys::run(&["ip", "netns", "del", ns]).map(|_| ())
}

/// Namespaces that kernel runs left behind: every `mplab-*` namespace whose
/// run (the pid in its name) is gone, or all of them with `force`. Returns
/// (removed, kept because their run is alive, errors).
pub fn clean(force: bool) -> (Vec<String>, Vec<String>, Vec<String>) {
    let (mut removed, mut kept, mut errs) = (Vec::new(), Vec::new(), Vec::new());
    let Ok(rd) = std::fs::read_dir("/run/netns") else { return (removed, kept, errs) };
    let mut names: Vec<String> = rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with(PREFIX)).collect();
    names.sort();
    for n in names {
        let pid = n[PREFIX.len()..].split('-').next().and_then(|p| p.parse::<u32>().ok());
        let alive = pid.is_some_and(|p| p != std::process::id() && std::path::Path::new(&format!("/proc/{p}")).exists());
        if alive && !force {
            kept.push(n);
            continue;
        }
        match delete_ns(&n) {
            Ok(()) => removed.push(n),
            Err(e) => errs.push(e),
        }
    }
    (removed, kept, errs)
}
