//! One scenario on Linux kernel (MP)TCP: topology in namespaces, the link
//! emulator, kernel configuration, applications, probes, and results in
//! the simulator's format (`mplab_backend::results`), with backend "kernel".

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant as Wall};

use mplab_scenario::network::{self, App, Direction, MiddleboxAction, Network, NodeKind, Placement, TransportKind};
use mplab_backend::results::{FlowSample, InterfaceSample, RunResults, SendBufferSample, SubflowState, Summary};
use mplab_backend::summary::{self, FlowOutcome, PathStats};

use crate::apps::{self, Clock, FlowState};
use crate::emulator::{EmuConfig, EmuEvent, EmuLink, Emulator};
use crate::probes::{self, Capture, IfCounters, NetDev, TcpInfo};
use crate::topo::{self, Topology};
use crate::{kconf, sys};

/// How long receivers may keep draining after the scenario's end before
/// every socket is closed.
const GRACE: Duration = Duration::from_secs(3);
/// Set-up margin between starting the emulator and the run's time zero.
const LEAD: Duration = Duration::from_millis(300);

pub struct KernelOptions {
    /// Where pcaps go (`probes.pcap`), if any.
    pub pcap_dir: Option<PathBuf>,
    /// Set by a signal handler (or a test) to end the run early; the run
    /// then tears everything down and returns `Interrupted`.
    pub abort: Arc<AtomicBool>,
    /// Use this namespace prefix instead of a fresh `mplab-<pid>-<rand>`.
    pub prefix: Option<String>,
}

impl Default for KernelOptions {
    fn default() -> Self {
        KernelOptions { pcap_dir: None, abort: Arc::new(AtomicBool::new(false)), prefix: None }
    }
}

#[derive(Debug)]
pub enum KernelError {
    /// Not root, or the scenario asks for something the kernel cannot do.
    Usage(String),
    /// Setting up or running failed (the message names the step).
    Failed(String),
    /// Ended by the abort flag (Ctrl-C); everything was torn down.
    Interrupted,
}

impl std::fmt::Display for KernelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelError::Usage(m) | KernelError::Failed(m) => f.write_str(m),
            KernelError::Interrupted => f.write_str("interrupted; namespaces removed"),
        }
    }
}

pub struct KernelRun {
    pub results: RunResults,
    /// Run facts for meta.json: namespaces prefix, emulator timing, MPTcpExt and TcpExt counters.
    pub meta: serde_json::Value,
}

/// Above this p99 lateness (µs) of the emulator's frames, a real-time run
/// measured the host rather than the scenario: the virtual machine stopped
/// running the emulator's thread for a while. The heaviest test loads on
/// this 2-core machine otherwise stay below 4 ms (docs/kernel-backend.md).
pub const HOST_STALL_P99_US: f64 = 5000.0;

/// The emulator's p99 lateness (µs) when the host stalled the run (see
/// [`HOST_STALL_P99_US`]), read from the run's meta.json; None otherwise.
pub fn host_stall(meta: &serde_json::Value) -> Option<f64> {
    meta["emulator"]["lateness_p99_us"].as_f64().filter(|p99| *p99 > HOST_STALL_P99_US)
}

/// How many times in all a real-time run the host stalled is tried, and
/// the pause before each repeat: the virtual machine's stall spells last a
/// minute or so.
pub const STALL_ATTEMPTS: usize = 3;
pub const STALL_PAUSE: Duration = Duration::from_secs(10);

/// Runs `once(attempt)` (attempt 0, 1, ...) again while the host stalls
/// it ([`host_stall`] on the run's meta.json), at most [`STALL_ATTEMPTS`]
/// times in all, saying so on stderr; the last attempt is returned,
/// stalled or not. For callers whose figures compare real time (tests,
/// `mplab attack`); `mplab run` runs once and leaves meta.json to judge.
pub fn unless_host_stalled<T, E>(once: impl FnMut(usize) -> Result<T, E>, meta: impl Fn(&T) -> &serde_json::Value) -> Result<T, E> {
    repeat_while_stalled(once, meta, STALL_PAUSE)
}

/// [`unless_host_stalled`] with its pause between attempts as a parameter.
fn repeat_while_stalled<T, E>(mut once: impl FnMut(usize) -> Result<T, E>, meta: impl Fn(&T) -> &serde_json::Value, pause: Duration) -> Result<T, E> {
    let mut attempt = 0;
    loop {
        let r = once(attempt)?;
        attempt += 1;
        match host_stall(meta(&r)) {
            Some(p99) if attempt < STALL_ATTEMPTS => {
                eprintln!("host stall: the emulator sent a hundredth of its frames {p99:.0} us late or later; running again in {} s (attempt {} of {STALL_ATTEMPTS})", pause.as_secs(), attempt + 1);
                std::thread::sleep(pause);
            }
            _ => return Ok(r),
        }
    }
}

/// Checks that this process can run the kernel backend.
pub fn preflight() -> Result<(), KernelError> {
    if !sys::is_root() {
        return Err(KernelError::Usage("the kernel backend needs root (it creates network namespaces and veth pairs): run `sudo mplab run --backend kernel ...`".into()));
    }
    if sys::run(&["ip", "-V"]).is_err() {
        return Err(KernelError::Usage("the kernel backend needs iproute2's `ip` (apt-get install iproute2)".into()));
    }
    if !std::path::Path::new("/proc/sys/net/mptcp/enabled").exists() {
        return Err(KernelError::Usage("this kernel has no MPTCP (CONFIG_MPTCP): /proc/sys/net/mptcp is missing".into()));
    }
    // A run holds a few descriptors per flow (sockets, listeners, the
    // accepted ones): thousands of flows need more than a shell's 1024.
    sys::raise_nofile();
    Ok(())
}

fn emu_config(net: &Network, wire_ns: &str) -> EmuConfig {
    let mut links: Vec<EmuLink> = net
        .links
        .iter()
        .map(|l| EmuLink {
            name: l.name.clone(),
            ends: [topo::wire_end(l.id, 0), topo::wire_end(l.id, 1)],
            params: [mplab_backend::config::link_params(&l.ab), mplab_backend::config::link_params(&l.ba)],
            up: l.up,
            strip: [None, None],
            attack: None,
            mtu: l.mtu,
        })
        .collect();
    for mb in &net.middleboxes {
        if let (MiddleboxAction::Attacker { attack, at_ns, count }, Placement::Link { link, .. }) = (&mb.action, &mb.placement) {
            links[*link].attack = Some((*attack, *at_ns, *count));
        }
        if let (MiddleboxAction::StripMptcp { on }, Placement::Link { link, direction, .. }) = (&mb.action, &mb.placement) {
            let dirs: &[usize] = match direction {
                Direction::Ab => &[0],
                Direction::Ba => &[1],
                Direction::Both => &[0, 1],
            };
            for &d in dirs {
                links[*link].strip[d] = Some(crate::emulator::StripRule { on: *on, from_ns: mb.from_ns, until_ns: mb.until_ns });
            }
        }
    }
    EmuConfig {
        wire_ns: wire_ns.to_string(),
        links,
        events: net.events.iter().map(|e| EmuEvent { at_ns: e.at_ns, link: e.link, action: e.action.clone() }).collect(),
        seed: net.seed,
        probe_interval_ns: net.probes.interval_ns,
        probe_queues: net.probes.queues.clone(),
        duration_ns: net.duration_ns,
    }
}

/// Last known state of one subflow (they vanish when the connection closes).
#[derive(Default, Clone)]
struct SubTrack {
    local: String,
    remote: String,
    info: TcpInfo,
    last_acked: u64,
    /// The kernel's subflow id (MPTCP_FULL_INFO), 1 for the first.
    id: Option<u32>,
    /// Backup (local or remote) as last reported by the kernel's subflow diag.
    backup: Option<bool>,
    /// As last seen; a subflow the sender no longer lists is closed.
    state: SubflowState,
}

#[derive(Default)]
struct FlowTrack {
    subs: Vec<SubTrack>,
    /// The sender namespace's sock_diag socket (MPTCP flows on kernel hosts).
    diag: Option<std::rc::Rc<probes::SharedDiag>>,
    /// A balanced download's backends, (node, namespace): the diag socket
    /// opens in the one that accepts.
    diag_at: Vec<(usize, String)>,
    /// Whether the subflows came from MPTCP_FULL_INFO / flags from sock_diag (meta.json).
    full_info: bool,
    diag_flags: bool,
    srtt_sum_ms: f64,
    srtt_n: u64,
    last_delivered: u64,
}

/// The sender's socket of a flow (the one whose TCP_INFO tells about the data direction).
fn sender_fd(f: &network::Flow, st: &FlowState) -> Option<std::os::fd::RawFd> {
    use std::os::fd::AsRawFd;
    let s = if matches!(f.app, App::Download { .. }) { st.server.get() } else { st.client.get() };
    s.map(|s| s.as_raw_fd())
}

/// Reads the subflows of a flow's sender into the tracker; returns the
/// first subflow's info (for the "all" row).
fn observe(f: &network::Flow, st: &FlowState, tr: &mut FlowTrack, tick: u64) -> Option<TcpInfo> {
    if !st.connected.load(Ordering::Relaxed) {
        return None;
    }
    if tr.diag.is_none() && f.transport == TransportKind::Mptcp {
        if let Some(ns) = st.server_node.get().and_then(|n| tr.diag_at.iter().find(|(k, _)| k == n)).map(|(_, ns)| ns.clone()) {
            tr.diag = probes::SockDiag::open(&ns).ok().map(|d| std::rc::Rc::new(probes::SharedDiag::new(d)));
            tr.diag_at.clear();
        }
    }
    let stack = st.stack_subflows.lock().ok().and_then(|g| g.as_ref().map(|x| x.0.clone()));
    // mplab's stack lists its subflows with their state, as the kernel's
    // TCP_INFO carries it.
    let plain = |l: String, r: String, info: TcpInfo, st: Option<u8>| probes::SubflowInfo { local: l, remote: r, info, id: None, flags: None, tcp_state: st.or(Some(1)) };
    let subs: Vec<probes::SubflowInfo> = if let (None, Some(v)) = (sender_fd(f, st), stack) {
        v.into_iter().map(|(l, r, i, state)| plain(l, r, i, Some(state))).collect()
    } else {
        let fd = sender_fd(f, st)?;
        apps::check_fallback(f, st);
        match (f.transport, probes::mptcp_subflows(fd)) {
            (TransportKind::Mptcp, Some(mut v)) if !v.is_empty() => {
                tr.full_info |= v.iter().any(|s| s.id.is_some());
                // Backup and the other subflow flags are not in
                // MPTCP_FULL_INFO: the kernel reports them per TCP subflow
                // through sock_diag, matched here by addresses and ports.
                if let Some(flags) = tr.diag.as_ref().and_then(|d| d.flags(tick)) {
                    for s in v.iter_mut() {
                        s.flags = flags.get(&(s.local.clone(), s.remote.clone())).copied();
                        tr.diag_flags |= s.flags.is_some();
                    }
                }
                v
            }
            _ => {
                let (info, st) = probes::tcp_info_and_state(fd)?;
                let (l, r) = apps::local_peer(fd);
                vec![plain(l, r, info, st)]
            }
        }
    };
    let mut first = None;
    let mut seen = vec![false; tr.subs.len()];
    for probes::SubflowInfo { local: l, remote: r, info, id, flags, tcp_state } in subs {
        if info.snd_mss == 0 || r.ends_with(":0") {
            // Not usable yet (still connecting: keep what we know) or gone
            // (its addresses read 0: left unseen, so closed below).
            if info.snd_mss == 0 {
                if let Some(k) = id.and_then(|i| tr.subs.iter().position(|s| s.id == Some(i))) {
                    seen[k] = true;
                }
            }
            continue;
        }
        let state = tcp_state.map_or(SubflowState::Established, probes::subflow_state);
        first.get_or_insert(info);
        // A plain TCP connection is one "subflow" (its addresses may read
        // as 0.0.0.0:0 once the peer has gone).
        let tcp = f.transport == TransportKind::Tcp || st.fell_back.load(Ordering::Relaxed);
        // The kernel's id tells a new subflow from an old one that used
        // the same addresses and ports; without ids, the addresses.
        let known = if tcp && !tr.subs.is_empty() {
            Some(0)
        } else if id.is_some() {
            tr.subs.iter().position(|s| s.id == id)
        } else {
            tr.subs.iter().position(|s| s.local == l && s.remote == r)
        };
        let backup = flags.map(|x| x.backup());
        match known {
            Some(k) => {
                let s = &mut tr.subs[k];
                s.info = info;
                s.backup = backup.or(s.backup);
                s.state = state;
                seen[k] = true;
            }
            None => {
                tr.subs.push(SubTrack { local: l, remote: r, info, last_acked: 0, id, backup, state });
                seen.push(true);
                // Creation order, as the simulator numbers its subflows
                // (a stable sort: subflows without ids keep their order).
                let mut both: Vec<(SubTrack, bool)> = std::mem::take(&mut tr.subs).into_iter().zip(seen.drain(..)).collect();
                both.sort_by_key(|(s, _)| s.id.unwrap_or(u32::MAX));
                (tr.subs, seen) = both.into_iter().unzip();
            }
        }
    }
    // The kernel drops a subflow from its list once it is closed.
    for (s, seen) in tr.subs.iter_mut().zip(seen) {
        if !seen {
            s.state = SubflowState::Closed;
        }
    }
    first
}

/// Runs `net` on the kernel. The caller has checked it with
/// [`kconf::unsupported`].
pub fn run(net: &Network, opts: &KernelOptions) -> Result<KernelRun, KernelError> {
    run_mixed(net, opts, &vec![false; net.nodes.len()])
}

/// Runs `net` with the hosts flagged in `mplab` on mplab's own stack over a
/// TUN (the userspace backend, [`crate::userspace`]) and the rest on the
/// kernel; all `false` is the kernel backend.
pub(crate) fn run_mixed(net: &Network, opts: &KernelOptions, mplab: &[bool]) -> Result<KernelRun, KernelError> {
    use crate::userspace::{host, tun::Tun};
    let userspace = mplab.iter().any(|&m| m);
    preflight()?;
    // The kernel's MPTCP settings concern the kernel's hosts only.
    let on_kernel: Vec<bool> = mplab.iter().map(|&m| !m).collect();
    let mptcp_plan = kconf::mptcp_plan_on(net, &on_kernel).map_err(KernelError::Usage)?;
    if !mptcp_plan.is_empty() {
        sys::mptcp_pm_answers(Duration::from_secs(5)).map_err(KernelError::Failed)?;
    }
    let wall = Wall::now();
    let prefix = opts.prefix.clone().unwrap_or_else(topo::run_prefix);
    let abort = opts.abort.clone();
    let check = || if abort.load(Ordering::SeqCst) { Err(KernelError::Interrupted) } else { Ok(()) };
    let mut topo = Topology::build(net, &prefix).map_err(|e| KernelError::Failed(format!("building the topology: {e}")))?;
    check()?;
    let plan = kconf::apply_on(net, &topo.node_ns, &on_kernel).map_err(|e| KernelError::Failed(format!("configuring the kernel: {e}")))?;
    check()?;
    // Load balancers: their forwarders serve the queues kconf set up.
    let mut forwarders = Vec::new();
    for p in crate::balancer::plans(net) {
        let fw = crate::balancer::Forwarder::start(&topo.node_ns[p.node], &p).map_err(|e| KernelError::Failed(format!("load balancer on {}: {e}", net.nodes[p.node].name)))?;
        forwarders.push((p, fw));
    }
    let mut tuns: Vec<(usize, Tun)> = Vec::new();
    for n in net.nodes.iter().filter(|n| mplab[n.id]) {
        let t = if n.kind == NodeKind::Host { Tun::attach(net, n.id, &topo.node_ns[n.id]) } else { Tun::attach_gateway(net, n.id, &topo.node_ns[n.id]) };
        tuns.push((n.id, t.map_err(|e| KernelError::Failed(format!("mplab stack on {}: {e}", n.name)))?));
    }
    // Gateway routers on mplab's stack: their programs' connections, per
    // node (crates/emu/src/userspace/bridge.rs).
    let mut bridged: Vec<Vec<(usize, host::Role, std::os::fd::OwnedFd)>> = net.nodes.iter().map(|_| Vec::new()).collect();
    let mut exchanged: Vec<Vec<(usize, host::Role, Arc<crate::userspace::bridge::Exchange>)>> = net.nodes.iter().map(|_| Vec::new()).collect();
    let on_stack = |f: &network::Flow, node: usize| mplab[node] && crate::userspace::on_gateway_stack(f);
    let setup_s = wall.elapsed().as_secs_f64();

    // Sockets and counters, all before time zero.
    let hosts: Vec<usize> = net.nodes.iter().filter(|n| n.kind == NodeKind::Host).map(|n| n.id).collect();
    let mut netdev: Vec<NetDev> = Vec::new();
    for n in &net.nodes {
        netdev.push(NetDev::open(&topo.node_ns[n.id]).map_err(|e| KernelError::Failed(format!("counters of {}: {e}", n.name)))?);
    }
    let mut listeners: Vec<Vec<(usize, Arc<std::os::fd::OwnedFd>)>> = Vec::new();
    let mut clients = Vec::new();
    let states: Vec<Arc<FlowState>> = net.flows.iter().map(|_| Arc::new(FlowState::default())).collect();
    let hard_ns = net.duration_ns + GRACE.as_nanos() as u64;
    // SCTP flows: usrsctp host processes in the ends' namespaces, ready
    // (bound, listening) before time zero.
    let mut sctp: Vec<crate::usrsctp::flow::SctpFlow> = Vec::new();
    for (fi, f) in net.flows.iter().enumerate().filter(|(_, f)| f.transport.is_sctp()) {
        let s = crate::usrsctp::flow::SctpFlow::spawn(net, f, &topo.node_ns, hard_ns, states[fi].clone(), [!mplab[f.to], !mplab[f.from]]).map_err(|e| KernelError::Failed(format!("flow {}: {e}", f.name)))?;
        s.wait_ready(Duration::from_secs(5)).map_err(|e| KernelError::Failed(format!("flow {}: {e}", f.name)))?;
        sctp.push(s);
    }
    let sctp_paths: Vec<Option<Arc<std::sync::Mutex<Vec<crate::usrsctp::host::PathLine>>>>> = {
        let mut it = sctp.iter();
        net.flows.iter().map(|f| if f.transport.is_sctp() { it.next().map(|s| s.paths.clone()) } else { None }).collect()
    };
    // UDP flows: both sockets bound before time zero, so the first
    // datagram finds its server.
    let mut udp: Vec<(usize, bool, std::os::fd::OwnedFd)> = Vec::new();
    for f in net.flows.iter().filter(|f| matches!(f.transport, TransportKind::Udp | TransportKind::Quic)) {
        let at = |node: usize, what: &str, e: std::io::Error| KernelError::Failed(format!("flow {}: UDP socket on {} ({what}): {e}", f.name, net.nodes[node].name));
        udp.push((f.id, false, crate::datagrams::socket(&topo.node_ns[f.to], (std::net::Ipv4Addr::UNSPECIFIED, f.dport), None).map_err(|e| at(f.to, "server", e))?));
        udp.push((f.id, true, crate::datagrams::socket(&topo.node_ns[f.from], (f.src, f.sport), Some((f.dst, f.dport))).map_err(|e| at(f.from, "client", e))?));
    }
    // Tunnels: each gateway's TUN, rule and socket, before time zero.
    let mut gateways: Vec<(usize, crate::gateway::Gateway)> = Vec::new();
    for f in net.flows.iter().filter(|f| matches!(f.app, App::Tunnel { .. })) {
        for (end, node) in [(0, f.from), (1, f.to)] {
            let bridge = if on_stack(f, node) {
                let (mine, theirs) = crate::userspace::bridge::pair().map_err(|e| KernelError::Failed(format!("flow {}: socket pair: {e}", f.name)))?;
                bridged[node].push((f.id, if end == 0 { host::Role::Client } else { host::Role::Server }, mine));
                Some(theirs)
            } else {
                None
            };
            gateways.push((f.id, crate::gateway::prepare(net, f, end, &topo.node_ns[node], bridge).map_err(|e| KernelError::Failed(format!("flow {}: {e}", f.name)))?));
        }
    }
    // Converters: Fast Open, the CPE's redirect, both listeners.
    let mut converters: Vec<(usize, crate::converter::Converter)> = Vec::new();
    for f in net.flows.iter().filter(|f| matches!(f.app, App::Converter { .. })) {
        let mut carriers = crate::converter::MplabCarriers::default();
        for (node, role) in [(f.from, host::Role::Client), (f.to, host::Role::Server)] {
            if on_stack(f, node) {
                let ex = Arc::new(crate::userspace::bridge::Exchange::new().map_err(|e| KernelError::Failed(format!("flow {}: eventfd: {e}", f.name)))?);
                exchanged[node].push((f.id, role, ex.clone()));
                *(if role == host::Role::Client { &mut carriers.cpe } else { &mut carriers.hag }) = Some(ex);
            }
        }
        converters.push((f.id, crate::converter::prepare(net, f, &topo.node_ns[f.from], &topo.node_ns[f.to], carriers).map_err(|e| KernelError::Failed(format!("flow {}: {e}", f.name)))?));
    }
    for f in &net.flows {
        if f.transport.is_sctp() || matches!(f.transport, TransportKind::Udp | TransportKind::Quic) || matches!(f.app, App::Tunnel { .. } | App::Converter { .. }) {
            listeners.push(Vec::new());
            clients.push(None);
            continue;
        }
        let mut ls = Vec::new();
        // Every server of the flow (a balanced flow's backends) listens.
        for &srv in f.servers.iter().filter(|&&srv| !mplab[srv]) {
            let name = &net.nodes[srv].name;
            let l = apps::listen(&topo.node_ns[srv], f).map_err(|e| KernelError::Failed(format!("flow {}: listening on {name}:{}: {e}", f.name, f.dport)))?;
            ls.push((srv, Arc::new(l)));
        }
        listeners.push(ls);
        clients.push(if mplab[f.from] { None } else { Some(apps::client_socket(&topo.node_ns[f.from], f).map_err(|e| KernelError::Failed(format!("flow {}: socket on {}: {e}", f.name, f.from_name)))?) });
    }
    let t0 = Wall::now() + LEAD;
    let t0_real = sys::realtime_ns() + LEAD.as_nanos() as u64;
    let emu = Emulator::start(emu_config(net, &topo.wire_ns), t0).map_err(KernelError::Failed)?;
    for (_, fw) in &forwarders {
        fw.start_clock(t0);
    }
    let mut captures = Vec::new();
    if let Some(dir) = &opts.pcap_dir {
        std::fs::create_dir_all(dir).map_err(|e| KernelError::Failed(format!("{}: {e}", dir.display())))?;
        for c in &net.probes.pcap {
            let path = dir.join(format!("{}-{}.pcap", c.node_name, c.iface_name));
            captures.push(Capture::start(&topo.node_ns[c.node], &c.iface_name, &path, t0_real).map_err(KernelError::Failed)?);
        }
    }
    let clk = Clock { t0, end_ns: net.duration_ns, hard_ns, abort: abort.clone(), poll_ns: Clock::poll_step(net.flows.len()) };
    for s in &mut sctp {
        s.start(t0_real);
    }
    let mut threads = Vec::new();
    for (fi, gw) in gateways.drain(..) {
        let (ff, st, c) = (net.flows[fi].clone(), states[fi].clone(), clk.clone());
        threads.push(std::thread::Builder::new().name(format!("gw-{}", ff.name)).spawn(move || crate::gateway::run(ff, gw, st, c)).map_err(|e| KernelError::Failed(e.to_string()))?);
    }
    for (fi, conv) in converters.drain(..) {
        let (ff, st, c) = (net.flows[fi].clone(), states[fi].clone(), clk.clone());
        threads.push(std::thread::Builder::new().name(format!("conv-{}", ff.name)).spawn(move || crate::converter::run(conv, st, c)).map_err(|e| KernelError::Failed(e.to_string()))?);
    }
    for (fi, client, sock) in udp.drain(..) {
        let (ff, st, c) = (net.flows[fi].clone(), states[fi].clone(), clk.clone());
        let name = format!("{}-{}", if client { "cli" } else { "srv" }, ff.name);
        let seed = net.seed ^ (0x155_0000 + 2 * fi as u64 + u64::from(!client));
        let t = if ff.transport == TransportKind::Quic {
            std::thread::Builder::new().name(name).spawn(move || crate::quic::run(ff, sock, client, seed, st, c))
        } else {
            std::thread::Builder::new().name(name).spawn(move || crate::datagrams::run(ff, sock, client, st, c))
        };
        threads.push(t.map_err(|e| KernelError::Failed(e.to_string()))?);
    }
    for (i, f) in net.flows.iter().enumerate() {
        for (node, l) in listeners[i].clone() {
            let (ff, st, c) = (f.clone(), states[i].clone(), clk.clone());
            threads.push(std::thread::Builder::new().name(format!("srv-{}", f.name)).spawn(move || apps::run_server(ff, l, node, st, c)).map_err(|e| KernelError::Failed(e.to_string()))?);
        }
        if let Some(s) = clients[i].take() {
            let (ff, st, c) = (f.clone(), states[i].clone(), clk.clone());
            threads.push(std::thread::Builder::new().name(format!("cli-{}", f.name)).spawn(move || apps::run_client(ff, s, st, c)).map_err(|e| KernelError::Failed(e.to_string()))?);
        }
    }
    // mplab's stack: one thread per host, owning its TUN.
    let mut host_counters = Vec::new();
    for (node, tun) in tuns.drain(..) {
        let mut ends = Vec::new();
        // A gateway router runs only its hybrid-access connections.
        let router = net.nodes[node].kind != NodeKind::Host;
        for (fi, f) in net.flows.iter().enumerate().filter(|(_, f)| !router || on_stack(f, node)) {
            if f.from == node {
                ends.push((fi, host::Role::Client));
            }
            // Every backend of a balanced flow listens; the one the
            // balancer picks takes the connection.
            if f.servers.contains(&node) {
                ends.push((fi, host::Role::Server));
            }
        }
        let counters = Arc::new(std::sync::Mutex::new(host::HostCounters::default()));
        host_counters.push((net.nodes[node].name.clone(), topo.node_ns[node].clone(), counters.clone()));
        let (nn, sts, c) = (net.clone(), states.clone(), clk.clone());
        let spec = host::HostSpec { node, ends, bridged: std::mem::take(&mut bridged[node]), exchanged: std::mem::take(&mut exchanged[node]) };
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

    // Address events (remove_addr / add_addr) at their times.
    let addr_events = crate::addr_events::AddrEvents::new(net, &topo.node_ns, mplab, &plan);
    let addr_thread = if addr_events.is_empty() {
        None
    } else {
        let c = clk.clone();
        Some(std::thread::Builder::new().name("addr-events".into()).spawn(move || addr_events.run(c)).map_err(|e| KernelError::Failed(e.to_string()))?)
    };

    // Probes at every interval until the end.
    let mut results = RunResults::default();
    let wait_until = |ns: u64| -> bool {
        loop {
            if abort.load(Ordering::SeqCst) {
                return false;
            }
            let now = clk.now_ns();
            if now >= ns && Wall::now() >= t0 {
                return true;
            }
            std::thread::sleep(Duration::from_nanos(ns.saturating_sub(now).clamp(100_000, 50_000_000)));
        }
    };
    let mut interrupted = !wait_until(0);
    let base: Vec<BTreeMap<String, IfCounters>> = netdev.iter_mut().map(|d| d.read()).collect();
    let mut last = base.clone();
    // One sock_diag socket per namespace that sends MPTCP data.
    let mut diags: BTreeMap<usize, std::rc::Rc<probes::SharedDiag>> = BTreeMap::new();
    for f in net.flows.iter().filter(|f| f.transport == TransportKind::Mptcp) {
        let sender = if matches!(f.app, App::Download { .. }) { f.to } else { f.from };
        if !mplab[sender] && !(f.servers.len() > 1 && sender != f.from) && !diags.contains_key(&sender) {
            if let Ok(d) = probes::SockDiag::open(&topo.node_ns[sender]) {
                diags.insert(sender, std::rc::Rc::new(probes::SharedDiag::new(d)));
            }
        }
    }
    let mut tracks: Vec<FlowTrack> = net
        .flows
        .iter()
        .map(|f| {
            // The data sender's namespace holds the subflows whose flags we read.
            let sender = if matches!(f.app, App::Download { .. }) { f.to } else { f.from };
            if f.servers.len() > 1 && sender != f.from {
                let diag_at = f.servers.iter().filter(|&&n| !mplab[n]).map(|&n| (n, topo.node_ns[n].clone())).collect();
                return FlowTrack { diag_at, ..Default::default() };
            }
            let diag = (f.transport == TransportKind::Mptcp && !mplab[sender]).then(|| diags.get(&sender).cloned()).flatten();
            FlowTrack { diag, ..Default::default() }
        })
        .collect();
    let interval = net.probes.interval_ns.max(1_000_000);
    let mut k = 1u64;
    while !interrupted && k * interval <= net.duration_ns {
        let t_ns = k * interval;
        if !wait_until(t_ns) {
            interrupted = true;
            break;
        }
        let t = t_ns as f64 / 1e9;
        let secs = interval as f64 / 1e9;
        for &h in &hosts {
            let now = netdev[h].read();
            for i in &net.nodes[h].interfaces {
                let (a, b) = (now.get(&i.name).copied().unwrap_or_default(), last[h].get(&i.name).copied().unwrap_or_default());
                results.interfaces.push(InterfaceSample {
                    time_s: t,
                    node: net.nodes[h].name.clone(),
                    iface: i.name.clone(),
                    tx_bps: a.tx_ip().saturating_sub(b.tx_ip()) as f64 * 8.0 / secs,
                    rx_bps: a.rx_ip().saturating_sub(b.rx_ip()) as f64 * 8.0 / secs,
                });
            }
            last[h] = now;
        }
        for (fi, f) in net.flows.iter().enumerate() {
            // No rows before a flow starts (as the simulator).
            if t * 1e9 + 1.0 < f.start_ns as f64 {
                continue;
            }
            let st = &states[fi];
            let tr = &mut tracks[fi];
            let first = observe(f, st, tr, k);
            let detailed = net.probes.flows.contains(&fi);
            let d = st.delivered.load(Ordering::Relaxed);
            let cw = |i: &TcpInfo| (detailed && net.probes.cwnd).then_some(i.cwnd_bytes());
            let rt = |i: &TcpInfo| (detailed && net.probes.srtt).then_some(i.rtt_us as f64 / 1e3);
            let fl = |i: &TcpInfo| (detailed && net.probes.cwnd).then_some(i.in_flight_bytes());
            results.flows.push(FlowSample {
                time_s: t,
                flow: f.name.clone(),
                subflow: "all".into(),
                goodput_bps: d.saturating_sub(tr.last_delivered) as f64 * 8.0 / secs,
                cwnd_bytes: first.as_ref().and_then(cw),
                srtt_ms: first.as_ref().and_then(rt),
                in_flight_bytes: first.as_ref().and_then(fl),
                state: None,
            });
            tr.last_delivered = d;
            if f.transport == TransportKind::Mptcp && st.connected.load(Ordering::Relaxed) {
                let stack = st.stack_send_buffer.lock().ok().and_then(|g| *g);
                if let Some((buf, queued)) = stack.or_else(|| sender_fd(f, st).and_then(probes::send_buffer)) {
                    results.send_buffers.push(SendBufferSample { row: results.flows.len() - 1, buffer_bytes: buf, queued_bytes: queued });
                }
            }
            // usrsctp's sender: its primary path's cwnd and srtt for the row.
            if let Some(p) = sctp_paths[fi].as_ref().and_then(|m| m.lock().ok().and_then(|g| g.first().cloned())) {
                let row = results.flows.last_mut().expect("just pushed");
                row.cwnd_bytes = (detailed && net.probes.cwnd).then_some(u64::from(p.cwnd));
                row.srtt_ms = (detailed && net.probes.srtt).then_some(f64::from(p.srtt_ms));
                if p.srtt_ms > 0 {
                    tr.srtt_sum_ms += f64::from(p.srtt_ms);
                    tr.srtt_n += 1;
                }
            }
            if let Some(i) = &first {
                if i.rtt_us > 0 {
                    tr.srtt_sum_ms += i.rtt_us as f64 / 1e3;
                    tr.srtt_n += 1;
                }
            }
            if f.transport == TransportKind::Mptcp {
                for (si, s) in tr.subs.iter_mut().enumerate() {
                    let acked = s.info.bytes_acked;
                    results.flows.push(FlowSample {
                        time_s: t,
                        flow: f.name.clone(),
                        // The kernel's id - 1: 0 for the initial subflow,
                        // then in creation order (the simulator's index).
                        subflow: s.id.map_or(si, |id| id.saturating_sub(1) as usize).to_string(),
                        goodput_bps: acked.saturating_sub(s.last_acked) as f64 * 8.0 / secs,
                        cwnd_bytes: cw(&s.info),
                        srtt_ms: rt(&s.info),
                        in_flight_bytes: fl(&s.info),
                        state: Some(s.state),
                    });
                    s.last_acked = acked;
                }
            }
        }
        k += 1;
    }
    if !interrupted {
        interrupted = !wait_until(net.duration_ns);
    }
    // The end of the run: counters and subflows as of now.
    let end: Vec<BTreeMap<String, IfCounters>> = netdev.iter_mut().map(|d| d.read()).collect();
    let tick = k;
    for (fi, f) in net.flows.iter().enumerate() {
        observe(f, &states[fi], &mut tracks[fi], tick);
    }
    if interrupted {
        abort.store(true, Ordering::SeqCst);
    }
    for t in threads {
        let _ = t.join();
    }
    let addr_notes = addr_thread.map(|t| t.join().unwrap_or_default()).unwrap_or_default();
    // The usrsctp hosts end by themselves at the hard deadline at the latest.
    let sctp_deadline = t0 + Duration::from_nanos(hard_ns) + Duration::from_secs(3);
    for s in sctp {
        s.finish(if interrupted { Wall::now() } else { sctp_deadline });
    }
    // Last look at the subflows (retransmissions during the drain count).
    let tick = k + 1;
    for (fi, f) in net.flows.iter().enumerate() {
        observe(f, &states[fi], &mut tracks[fi], tick);
    }
    let mut pcap_errors = Vec::new();
    let mut pcap_packets = 0u64;
    for c in captures {
        match c.finish() {
            Ok(n) => pcap_packets += n,
            Err(e) => pcap_errors.push(e),
        }
    }
    let report = emu.stop();
    let balancer_stats: Vec<(crate::balancer::Plan, std::io::Result<(mplab_backend::balancer::BalancerStats, crate::balancer::ForwarderLoad)>)> = forwarders.into_iter().map(|(p, fw)| (p, fw.stop())).collect();
    for st in &states {
        for s in [st.client.get(), st.server.get()].into_iter().flatten() {
            apps::abortive_close(s);
        }
    }
    // The kernel TCP of mplab's hosts must never have seen our segments:
    // its segment and RST counters, for meta.json.
    let host_kernel_tcp: Vec<serde_json::Value> = host_counters
        .iter()
        .map(|(_, ns, _)| {
            let snmp = crate::sys::in_netns(ns, || std::fs::read_to_string("/proc/thread-self/net/snmp")).unwrap_or_default();
            let mut l = snmp.lines().filter(|l| l.starts_with("Tcp:"));
            let (k, v) = (l.next().unwrap_or(""), l.next().unwrap_or(""));
            let m: serde_json::Map<String, serde_json::Value> = k.split_whitespace().zip(v.split_whitespace()).skip(1).filter(|(k, _)| matches!(*k, "InSegs" | "OutSegs" | "OutRsts" | "AttemptFails")).map(|(k, v)| (k.to_string(), v.parse::<i64>().unwrap_or(0).into())).collect();
            serde_json::Value::Object(m)
        })
        .collect();
    let mut counters: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut tcp_counters: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for &h in &hosts {
        let (m, t) = probes::netstat_counters(&topo.node_ns[h]);
        counters.insert(net.nodes[h].name.clone(), m);
        tcp_counters.insert(net.nodes[h].name.clone(), t);
    }
    // Everything the results need from the flows, then close their sockets
    // so nothing keeps the namespaces alive.
    let states_backup: Vec<Vec<String>> = states.iter().map(|st| st.stack_subflows.lock().ok().and_then(|g| g.as_ref().map(|x| x.1.clone())).unwrap_or_default()).collect();
    let outs: Vec<FlowOut> = states
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
        })
        .collect();
    let server_nodes: Vec<Option<usize>> = states.iter().map(|st| st.server_node.get().copied()).collect();
    drop(states);
    drop(listeners);
    drop(netdev);
    for t in tracks.iter_mut() {
        t.diag = None;
    }
    drop(diags);
    let teardown_errors = topo.teardown();
    if interrupted {
        return Err(KernelError::Interrupted);
    }

    // ---- results -----------------------------------------------------------
    let dur = net.duration_ns as f64 / 1e9;
    let mut s = Summary { scenario: net.name.clone(), backend: if userspace { "userspace" } else { "kernel" }.into(), seed: net.seed, duration_s: dur, ..Default::default() };
    for (li, r) in &report.attacks {
        let attack = net.middleboxes.iter().find_map(|m| match (&m.action, &m.placement) {
            (MiddleboxAction::Attacker { attack, .. }, Placement::Link { link, .. }) if link == li => Some(attack.name()),
            _ => None,
        });
        s.attacks.push(mplab_backend::results::AttackSummary { link: net.links[*li].name.clone(), attack: attack.unwrap_or("?").into(), report: r.clone() });
    }
    s.notes.extend(addr_notes.into_iter().map(|n| format!("address event at {n}")));
    let mut backends: Vec<usize> = Vec::new();
    for (p, st) in balancer_stats {
        let name = net.nodes[p.node].name.clone();
        match st {
            Ok((stats, load)) => {
                s.notes.push(format!(
                    "load balancer on {name}: {} segments through NFQUEUE, {:.1} us of the forwarder thread's CPU each ({:.0} k segments/s per core)",
                    load.segments,
                    load.ns_per_segment() / 1e3,
                    if load.segments > 0 { 1e6 / load.ns_per_segment() } else { 0.0 }
                ));
                s.balancers.push(mplab_backend::results::BalancerSummary { node: name, mode: p.cfg.mode.name().into(), vip: p.vip.to_string(), stats })
            }
            Err(e) => s.notes.push(format!("load balancer on {name}: {e}")),
        }
        for (b, _, _) in p.backends {
            if !backends.contains(&b) {
                backends.push(b);
            }
        }
    }
    for b in backends {
        let name = &net.nodes[b].name;
        if let Some((_, _, hc)) = host_counters.iter().find(|(n, _, _)| n == name) {
            // mplab's stack counts what it accepted and refused itself.
            let hc = hc.lock().map(|g| (g.connections, g.joins_accepted, g.joins_refused)).unwrap_or_default();
            s.servers.push(mplab_backend::results::ServerSummary { node: name.clone(), connections: hc.0, joins_accepted: hc.1, joins_refused: hc.2 });
            continue;
        }
        let c = counters.get(name);
        let mib = |k: &str| c.and_then(|m| m.get(k)).copied().unwrap_or(0);
        s.servers.push(mplab_backend::results::ServerSummary {
            node: name.clone(),
            connections: server_nodes.iter().filter(|&&n| n == Some(b)).count() as u64,
            joins_accepted: mib("MPJoinAckRx"),
            joins_refused: mib("MPJoinNoTokenFound"),
        });
    }
    for (fi, f) in net.flows.iter().enumerate() {
        let st = &outs[fi];
        let tr = &tracks[fi];
        let mismatch = st.mismatch.clone();
        if let Some(m) = &mismatch {
            s.notes.push(format!("flow {}: data did not verify: {m}", f.name));
        }
        for e in &st.errors {
            s.notes.push(format!("flow {}: {e}", f.name));
        }
        let backups = plan.get(&f.from).map(|p| p.backup_addrs.clone()).unwrap_or_default();
        let kernel_sender = !mplab[if matches!(f.app, App::Download { .. }) { f.to } else { f.from }];
        if f.transport == TransportKind::Mptcp && kernel_sender && !st.fell_back && tr.subs.iter().any(|x| x.backup.is_none()) {
            s.notes.push(format!("flow {}: the kernel did not report subflow flags (sock_diag); `backup` comes from the endpoint flags", f.name));
        }
        let stack_backups: Vec<String> = states_backup[fi].clone();
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
                    rto_count: u64::from(x.info.total_rto.unwrap_or(0)),
                    state: x.state,
                    ..Default::default()
                })
                .collect(),
        }));
    }
    for n in &net.nodes {
        for i in &n.interfaces {
            let (a, b) = (end[n.id].get(&i.name).copied().unwrap_or_default(), base[n.id].get(&i.name).copied().unwrap_or_default());
            let (tx, rx) = (a.tx_ip().saturating_sub(b.tx_ip()), a.rx_ip().saturating_sub(b.rx_ip()));
            s.interfaces.push(summary::interface_summary(&n.name, &i.name, tx, rx, dur));
        }
    }
    for (li, l) in net.links.iter().enumerate() {
        for d in 0..2 {
            s.links.push(summary::link_summary(&l.name, d, &report.stats.get(li).map(|x| x[d]).unwrap_or_default()));
        }
    }
    if userspace {
        s.notes.push("userspace backend: hosts on mplab's stack reach their veths through a TUN (the kernel forwards), so their interface counters include the forwarding; their subflow statistics come from the stack itself".into());
    }
    s.notes.push("kernel backend: interface bytes are the veths' counters less 14 bytes of Ethernet header per frame (ARP included); a node's tx counts what it handed to the link, before the emulated queue".into());
    if let (Some(p50), Some(p99)) = (report.lateness.quantile_us(0.5), report.lateness.quantile_us(0.99)) {
        s.notes.push(format!("kernel backend: frames left the emulator {p50:.0} us (median) / {p99:.0} us (p99) after their model arrival time"));
    }
    if report.tx_errors + report.rx_dropped > 0 {
        s.notes.push(format!("kernel backend: {} frames lost outside the link model (emulator send errors or full buffers)", report.tx_errors + report.rx_dropped));
    }
    if net.flows.iter().any(|f| f.transport == TransportKind::Mptcp) {
        s.notes.push("kernel backend: per-subflow goodput is bytes acknowledged on the subflow".into());
    }
    if net.flows.iter().any(|f| f.transport.is_sctp()) {
        s.notes.push("kernel backend: SCTP flows run usrsctp (raw IPv4 protocol 132) in the hosts' namespaces; usrsctp counts no bytes per destination, so SCTP flows have no per-path rows, and cwnd/srtt are the primary path's".into());
    }
    for e in report.errors.iter().chain(&teardown_errors) {
        s.notes.push(format!("kernel backend: {e}"));
    }
    results.queues = report.queue_samples.clone();
    results.errors.extend(pcap_errors);
    results.summary = s;
    let meta = serde_json::json!({
        "namespace_prefix": prefix,
        "setup_s": setup_s,
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
        "pcap_packets": pcap_packets,
        // Where each MPTCP flow's subflow ids and flags came from.
        "subflow_probes": net.flows.iter().zip(&tracks).filter(|(f, _)| f.transport == TransportKind::Mptcp).map(|(f, t)| {
            (f.name.clone(), serde_json::json!({"mptcp_full_info": t.full_info, "sock_diag_flags": t.diag_flags, "ids": t.subs.iter().map(|x| x.id).collect::<Vec<_>>()}))
        }).collect::<serde_json::Map<_, _>>(),
        "mptcp_counters": counters,
        "tcp_counters": tcp_counters,
        "mplab_hosts": host_counters.iter().zip(&host_kernel_tcp).map(|((n, _, c), ktcp)| {
            let c = c.lock().map(|g| g.clone()).unwrap_or_default();
            (n.clone(), serde_json::json!({
                "rx_packets": c.rx_packets, "tx_packets": c.tx_packets, "bad_checksum": c.bad_checksum, "not_tcp": c.not_tcp,
                "kernel_tcp": ktcp, "rsts_sent": c.rsts_sent, "tx_dropped": c.tx_dropped, "unplaced_segments": c.unplaced_segments, "wakeups": c.wakeups,
                "bridge_bytes_gone": c.bridge_bytes_gone, "carriers": c.carriers,
                "max_pass_ms": c.max_pass_ns as f64 / 1e6, "max_pass_cpu_ms": c.max_pass_cpu_ns as f64 / 1e6, "passes_over_10ms": c.passes_over_10ms,
                "streams": c.digests.iter().map(|(f, r, n, h)| serde_json::json!({"flow": f, "end": r, "bytes_read": n, "sha256": h})).collect::<Vec<_>>(),
            }))
        }).collect::<serde_json::Map<_, _>>(),
    });
    Ok(KernelRun { results, meta })
}

struct FlowOut {
    delivered: u64,
    completed_ns: u64,
    requests_done: u64,
    latencies: Vec<f64>,
    mismatch: Option<String>,
    errors: Vec<String>,
    fell_back: bool,
    datagrams: Option<mplab_backend::datagram::DatagramSummary>,
    tunnel: Option<mplab_backend::results::TunnelSummary>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_stalled_when_a_hundredth_of_its_frames_left_over_5_ms_late() {
        let meta = |p99: serde_json::Value| serde_json::json!({ "emulator": { "lateness_p99_us": p99 } });
        assert_eq!(host_stall(&meta(6300.0.into())), Some(6300.0));
        assert_eq!(host_stall(&meta(3800.0.into())), None, "the heaviest test loads on a quiet host");
        assert_eq!(host_stall(&meta(HOST_STALL_P99_US.into())), None);
        assert_eq!(host_stall(&meta(serde_json::Value::Null)), None, "no frames: nothing to judge");
        assert_eq!(host_stall(&serde_json::json!({})), None);
    }

    #[test]
    fn a_stalled_run_is_repeated_at_most_three_times_in_all() {
        let meta = |p99: f64| serde_json::json!({ "emulator": { "lateness_p99_us": p99 } });
        // The pause is the real one's business; here 1 ms.
        let pause = Duration::from_millis(1);
        let mut calls = 0;
        let r = repeat_while_stalled(|a| { calls += 1; Ok::<_, ()>((a, meta(100.0))) }, |r| &r.1, pause);
        assert_eq!((r.unwrap().0, calls), (0, 1), "a clean run is not repeated");
        let r = repeat_while_stalled(|_| Err::<(usize, serde_json::Value), _>("setup failed"), |r| &r.1, pause);
        assert_eq!(r.unwrap_err(), "setup failed");
        // Two stalled attempts, then a clean one.
        let r = repeat_while_stalled(|a| Ok::<_, ()>((a, meta(if a < 2 { 9000.0 } else { 100.0 }))), |r| &r.1, pause);
        assert_eq!(r.unwrap().0, 2);
        // Stalled throughout: the third attempt is the caller's.
        let mut calls = 0;
        let r = repeat_while_stalled(|a| { calls += 1; Ok::<_, ()>((a, meta(9000.0))) }, |r| &r.1, pause);
        assert_eq!((r.unwrap().0, calls), (STALL_ATTEMPTS - 1, STALL_ATTEMPTS));
    }
}
