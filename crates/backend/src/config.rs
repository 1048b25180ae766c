//! The one translation from a resolved scenario into the stack's and the
//! link model's configurations. The simulator, the userspace backend (which
//! both run crates/proto) and the kernel backend's plan (`ip mptcp limits`,
//! endpoints) all read these functions, so a setting means the same thing on
//! every backend.

use core::time::Duration;
use std::net::Ipv4Addr;

use mplab_proto::mptcp::{self, path_manager, LocalAddr, MptcpConfig, PmChoice};
use mplab_proto::sctp::{CmtMode, RtxPolicy, SctpConfig};
use mplab_proto::tcp::TcpConfig;
use mplab_scenario::network::{self, EndpointFlag, Network};
use mplab_scenario::plugins::fields::PluginError;

use crate::link::{Jitter, LinkParams, LossModel, QueueConfig};

/// Linux's `ip mptcp limits` defaults: 2 extra subflows, no ADD_ADDR
/// accepted (net/mptcp/pm_kernel.c). The kernel-like path managers start
/// from these, on every backend.
pub const LINUX_DEFAULT_LIMITS: mptcp::Limits = mptcp::Limits::LINUX_DEFAULT;

/// A scenario setting mplab's stack cannot honour (no backend substitutes
/// silently): the flow, the field, and a message for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Unsupported {
    pub flow: usize,
    pub field: &'static str,
    pub message: String,
}

/// Everything in `net` mplab's stack (the simulator's hosts, the userspace
/// backend's mplab hosts) cannot run as written: names the stack's
/// registries do not know, found by the same lookups the configurations use.
pub fn unsupported(net: &Network) -> Vec<Unsupported> {
    let mut out: Vec<Unsupported> = net.flows.iter().filter(|f| f.transport == network::Transport::MPQUIC).filter_map(|f| mpquic_config(net, f).err().map(|message| Unsupported { flow: f.id, field: "cc", message })).collect();
    let mut check = |flow: usize, field: &'static str, r: Result<(), String>| {
        if let Err(e) = r {
            out.push(Unsupported { flow, field, message: format!("{e}: it is not implemented by the simulator") });
        }
    };
    for f in net.flows.iter().filter(|f| !f.transport.is_sctp() && f.transport != network::Transport::MPQUIC) {
        check(f.id, "cc", mplab_proto::cc::lookup(&f.tcp.cc).map(drop));
        if let Some(m) = &f.mptcp {
            check(f.id, "scheduler", mplab_proto::mptcp::scheduler::lookup(&m.scheduler).map(drop));
            check(f.id, "path_manager", path_manager::lookup(&path_manager(net, f, m).0).map(drop));
            if m.cc != f.tcp.cc {
                check(f.id, "cc", mplab_proto::cc::lookup(&m.cc).map(drop));
            }
        }
    }
    out
}

/// An MPQUIC flow's connection settings: at most as many paths as the
/// path manager's limits allow subflows (the first included), and the
/// per-path congestion control noq has of the flow's `cc`. RFC 10069
/// couples nothing: a coupled controller is refused, not approximated.
pub fn mpquic_config(net: &Network, f: &network::Flow) -> Result<crate::mpquic::MpQuicConfig, String> {
    use crate::mpquic::{MpQuicCc, MpQuicConfig};
    let m = f.mptcp.clone().unwrap_or_else(|| mptcp_defaults(f));
    path_manager::lookup(&path_manager(net, f, &m).0)?;
    let (_, limits) = path_manager(net, f, &m);
    // Per-path controllers, uncoupled: the flow's `cc`, else
    // [transport.tcp]'s ([transport.mptcp]'s is MPTCP's coupled choice).
    let cc = match f.tcp.cc.as_str() {
        "reno" | "newreno" => MpQuicCc::NewReno,
        "cubic" => MpQuicCc::Cubic,
        // noq 1.4 draws BBRv3's probe timing from the OS's random numbers
        // (its seed has no setter): the simulator would not repeat a run.
        "bbr" | "bbr3" => return Err("mpquic with bbr: noq 1.4 draws BBRv3's probe timing from the OS's random numbers, so runs would not repeat; use reno or cubic".into()),
        other => return Err(format!("mpquic runs noq's per-path congestion control: reno or cubic, not {other:?} (RFC 10069 has no coupled congestion control)")),
    };
    Ok(MpQuicConfig { max_paths: limits.subflows + 1, cc, rcv_buf: f.tcp.rcv_buf, snd_buf: f.tcp.snd_buf, ..MpQuicConfig::default() })
}

/// An SCTP flow's association settings. The protocol constants the
/// scenario does not set keep RFC 9260's values (`SctpConfig::default`);
/// `cmt` picks the algorithm and with it CMT's companions as configured.
pub fn sctp_config(s: &network::SctpFlowConfig) -> SctpConfig {
    use network::{BufferSplitting as B, CmtVariant as V, SctpRtxPolicy as R};
    let cmt = match s.cmt {
        None => CmtMode::Off,
        Some(V::Cmt) => CmtMode::Cmt,
        Some(V::Rpv1) => CmtMode::RpV1,
        Some(V::Rpv2) => CmtMode::RpV2,
        Some(V::Mptcp) => CmtMode::MptcpLike,
    };
    SctpConfig {
        cmt,
        dac: s.dac,
        nr_sack: s.nr_sack,
        split_send_buffer: matches!(s.buffer_splitting, B::Send | B::Both),
        split_recv_buffer: matches!(s.buffer_splitting, B::Receive | B::Both),
        rtx_policy: match s.rtx_policy {
            R::Same => RtxPolicy::Same,
            R::Cwnd => RtxPolicy::Cwnd,
            R::Ssthresh => RtxPolicy::Ssthresh,
        },
        send_buffer: s.snd_buf,
        recv_buffer: s.rcv_buf,
        rto_min: Duration::from_nanos(s.rto_min_ns),
        rto_initial: Duration::from_nanos(s.rto_initial_ns),
        hb_interval: Duration::from_nanos(s.heartbeat_interval_ns),
        // usrsctp's sctp_peer_chunk_oh default.
        peer_chunk_overhead: if s.profile == network::SctpProfile::Usrsctp { 256 } else { 0 },
        ..SctpConfig::default()
    }
}

/// An SCTP end's address list on `node`: every interface address, `first`
/// (the flow's own) first, so the flow's address pair is the primary path.
pub fn sctp_addrs(net: &Network, node: usize, first: Ipv4Addr) -> Vec<Ipv4Addr> {
    let mut v = vec![first];
    v.extend(net.nodes[node].interfaces.iter().map(|i| i.addr).filter(|&a| a != first && !a.is_unspecified()));
    v
}

/// The path MTU an SCTP end on `node` uses: its smallest interface MTU
/// (no PMTU discovery), 1500 when none is known.
pub fn sctp_mtu(net: &Network, node: usize) -> u32 {
    net.nodes[node].interfaces.iter().map(|i| i.mtu).filter(|&m| m > 0).min().unwrap_or(1500)
}

/// The flow as an end that only acknowledges its data sees it: such an end
/// never runs its congestion control or scheduler, so a name only the
/// peer's stack knows (a kernel sender's `bbr`) is no error there, and the
/// stack's defaults stand in (the kernel backend's receiving ends keep
/// their namespace's defaults the same way).
pub fn receiver_view(f: &network::Flow) -> network::Flow {
    let mut f = f.clone();
    let cc = mplab_proto::cc::CcChoice::default().name().to_string();
    if mplab_proto::cc::lookup(&f.tcp.cc).is_err() {
        f.tcp.cc = cc.clone();
    }
    if let Some(m) = f.mptcp.as_mut() {
        if mplab_proto::cc::lookup(&m.cc).is_err() {
            m.cc = cc;
        }
        if mplab_proto::mptcp::scheduler::lookup(&m.scheduler).is_err() {
            m.scheduler = "default".into();
        }
    }
    f
}

/// TCP settings of a scenario flow in the engine's terms; Err names an
/// algorithm mplab's stack does not have.
pub fn tcp_config(t: &network::TcpConfig) -> Result<TcpConfig, String> {
    let mut c = TcpConfig::default();
    if let Some(m) = t.mss {
        c.mss = m.min(u16::MAX as u32) as u16;
    }
    c.sack = t.sack;
    c.timestamps = t.timestamps;
    c.delayed_ack = t.delayed_ack;
    c.wscale = t.wscale;
    if let Some(ns) = t.rto_min_ns {
        c.min_rto = Duration::from_nanos(ns);
    }
    if let Some(b) = t.rcv_buf {
        c.rcv_buf = b;
    }
    if let Some(b) = t.snd_buf {
        c.snd_buf = b;
    }
    c.cc = mplab_proto::cc::lookup(&t.cc)?;
    Ok(c)
}

/// The TCP settings of flow `f`'s connections (each subflow's, for
/// MPTCP): the scenario's `[transport.tcp]`, and TCP Fast Open at both
/// ends of a converter flow's carriers with `fast_open = true` (the
/// Convert request rides the SYN; the HAG takes it from there).
pub fn flow_tcp_config(f: &network::Flow) -> Result<TcpConfig, String> {
    let mut c = tcp_config(&f.tcp)?;
    c.fast_open = matches!(f.app, network::App::Converter { fast_open: true, .. });
    Ok(c)
}

/// The TCP settings of `node`'s end of plain TCP flow `f`: the flow's
/// (`flow_tcp_config`) with that end's stack profile applied.
pub fn flow_tcp_end_config(net: &Network, f: &network::Flow, node: usize) -> Result<TcpConfig, String> {
    let mut c = flow_tcp_config(f)?;
    let p = stack_profile(f.tcp.profiles[usize::from(node != f.from)]);
    p.apply_to_tcp(&mut c);
    set_socket_buffers(&mut c, &f.tcp, p);
    c.timer_clock = p.timer_clock(jiffies_phase(net.seed));
    Ok(c)
}

/// The buffers an application set (the scenario's `snd_buf` / `rcv_buf`)
/// as `p`'s stack takes them: Linux doubles SO_SNDBUF / SO_RCVBUF.
fn set_socket_buffers(c: &mut TcpConfig, t: &network::TcpConfig, p: mptcp::Profile) {
    if let Some(b) = t.snd_buf {
        c.snd_buf = p.send_buffer_set_by_application(b);
    }
    if let Some(b) = t.rcv_buf {
        c.rcv_buf = p.receive_window_set_by_application(b);
        c.window_scale_space = p.window_scale_space(Some(c.rcv_buf));
        // Whole segments of the MSS less the timestamp option, as Linux's
        // `tcp_openreq_init_rwin` rounds.
        let seg = u64::from(c.mss) - if c.timestamps { 12 } else { 0 };
        if let Some(r) = p.initial_receive_threshold(c.rcv_buf, seg) {
            c.initial_rcv_ssthresh = r;
        }
    }
}

fn stack_profile(p: network::StackProfile) -> mptcp::Profile {
    match p {
        network::StackProfile::Mplab => mptcp::Profile::Mplab,
        network::StackProfile::Linux => mptcp::Profile::Linux,
    }
}

/// The path manager of an MPTCP flow, by its registry name (`ndiffports:N`
/// with its count), and the limits both of its ends use: what the scenario
/// set, else the defaults of that manager (its registry entry's). `ip mptcp
/// limits` counts extra subflows; the scenario's `subflows` counts all of
/// them, the first included. A name the registry lacks keeps Linux's
/// limits; [`unsupported`] and [`mptcp_config`] report it.
pub fn path_manager(net: &Network, f: &network::Flow, m: &network::MptcpConfig) -> (String, mptcp::Limits) {
    let addrs = path_manager::AddrCounts { local: net.nodes[f.from].interfaces.len() as u32, remote: net.nodes[f.to].interfaces.len() as u32 };
    let (pm, dflt) = match path_manager::entry(&m.path_manager) {
        Some(e) => match e.subflows_param {
            Some(default) => {
                let n = m.subflows.unwrap_or(default);
                (format!("{}:{n}", m.path_manager), (e.limits)(addrs, Some(n)))
            }
            None => (m.path_manager.clone(), (e.limits)(addrs, m.subflows)),
        },
        None => (m.path_manager.clone(), path_manager::linux_limits(addrs, m.subflows)),
    };
    let limits = mptcp::Limits { subflows: m.max_subflows.unwrap_or(dflt.subflows), add_addr_accepted: m.add_addr_accepted.unwrap_or(dflt.add_addr_accepted) };
    (pm, limits)
}

/// The MPTCP settings of a flow without a `[transport.mptcp]` of its own.
fn mptcp_defaults(f: &network::Flow) -> network::MptcpConfig {
    network::MptcpConfig {
        path_manager: "default".into(),
        subflows: None,
        checksum: false,
        scheduler: "default".into(),
        cc: f.tcp.cc.clone(),
        max_subflows: None,
        add_addr_accepted: None,
        opportunistic_retransmit: false,
        penalize: false,
        profiles: f.tcp.profiles,
        rejoin: network::Rejoin::Profile,
    }
}

/// The stack profile of `node`'s end of flow `f`.
pub fn profile(f: &network::Flow, m: &network::MptcpConfig, node: usize) -> mptcp::Profile {
    stack_profile(if node == f.from { m.profiles[0] } else { m.profiles[1] })
}

/// The connection settings of flow `f` on node `node` (its addresses, the
/// scenario's endpoints and limits), in the engine's terms. `first` is the
/// address the connection starts from (it gets id 0, as in Linux). Err
/// names a scheduler or congestion control mplab's stack does not have.
pub fn mptcp_config(net: &Network, f: &network::Flow, node: usize, first: Ipv4Addr) -> Result<MptcpConfig, String> {
    let m = f.mptcp.clone().unwrap_or_else(|| mptcp_defaults(f));
    let mut tcp = flow_tcp_config(f)?;
    tcp.cc = mplab_proto::cc::lookup(&m.cc)?;
    let eps: Vec<&network::MptcpEndpoint> = net.mptcp_endpoints.iter().filter(|e| e.node == node).collect();
    let mut locals = vec![LocalAddr::plain(0, first.into())];
    // The address the connection starts from keeps id 0; of its endpoint
    // only `backup` applies (Linux accounts the endpoint as used and marks
    // the initial subflow backup with MP_PRIO, pm_kernel.c).
    locals[0].backup = eps.iter().any(|e| e.addr == first && e.flags.contains(&EndpointFlag::Backup));
    // A laminar endpoint on it is never available (the initial subflow
    // uses it) but still puts the manager in laminar mode, as in Linux.
    locals[0].laminar = eps.iter().any(|e| e.addr == first && e.flags.contains(&EndpointFlag::Laminar));
    for (k, i) in net.nodes[node].interfaces.iter().enumerate() {
        if i.addr == first {
            continue;
        }
        let mut l = LocalAddr::plain(k as u8 + 1, i.addr.into());
        if let Some(e) = eps.iter().find(|e| e.addr == i.addr) {
            l.id = e.id;
            l.signal = e.flags.contains(&EndpointFlag::Signal);
            l.subflow = e.flags.contains(&EndpointFlag::Subflow);
            l.backup = e.flags.contains(&EndpointFlag::Backup);
            l.fullmesh = e.flags.contains(&EndpointFlag::Fullmesh);
            l.laminar = e.flags.contains(&EndpointFlag::Laminar);
        }
        locals.push(l);
    }
    // A backend of a stateless load balancer refuses joins to the VIP (the
    // C flag) and announces its own addresses, which route to it directly.
    let stateless_backend = stateless_backend(net, node);
    if stateless_backend {
        for l in locals.iter_mut().filter(|l| l.addr != std::net::IpAddr::from(first)) {
            l.signal = true;
        }
    }
    let (pm, limits) = path_manager(net, f, &m);
    let path_manager: PmChoice = path_manager::lookup(&pm)?;
    let profile = profile(f, &m, node);
    // `default` is the profile's default scheduler, on every backend.
    let scheduler = match (m.scheduler.as_str(), profile) {
        ("default", mptcp::Profile::Linux) => profile.default_scheduler(),
        (s, _) => s,
    };
    let mut cfg = MptcpConfig {
        tcp,
        checksum: m.checksum,
        snd_buf: f.tcp.snd_buf.map_or(4 << 20, |b| profile.send_buffer_set_by_application(b)),
        rcv_buf: f.tcp.rcv_buf.map_or(6 << 20, |b| profile.receive_window_set_by_application(b)),
        scheduler: mplab_proto::mptcp::scheduler::lookup(scheduler)?,
        path_manager,
        limits,
        locals,
        opportunistic_retransmit: m.opportunistic_retransmit,
        penalize: m.penalize,
        ..MptcpConfig::default()
    }
    .with_profile(profile);
    set_socket_buffers(&mut cfg.tcp, &f.tcp, profile);
    cfg.tcp.timer_clock = profile.timer_clock(jiffies_phase(net.seed));
    // A buffer the scenario sets is fixed (SO_SNDBUF / SO_RCVBUF lock it).
    cfg.snd_autotune &= f.tcp.snd_buf.is_none();
    cfg.rcv_autotune &= f.tcp.rcv_buf.is_none();
    cfg.deny_join_initial = stateless_backend;
    match m.rejoin {
        network::Rejoin::Profile => {}
        network::Rejoin::Never => cfg.rejoin = None,
        network::Rejoin::After { first_ns, max_ns } => {
            cfg.rejoin = cfg.rejoin.map(|_| mptcp::RejoinBackoff { first: std::time::Duration::from_nanos(first_ns), max: std::time::Duration::from_nanos(max_ns) });
        }
    }
    Ok(cfg)
}

/// Whether `node` is a backend of a load balancer in `stateless` mode.
pub fn stateless_backend(net: &Network, node: usize) -> bool {
    let name = &net.nodes[node].name;
    net.middleboxes.iter().any(|m| matches!(&m.action, network::MiddleboxAction::LoadBalancer { mode: network::BalancerMode::Stateless, backends, .. } if backends.contains(name)))
}

/// Where the `linux` profile's jiffies counter stands at time zero: one
/// value per run (all hosts of a kernel run share one kernel), drawn from
/// the seed, below 4096 jiffies (the bucket width of the longest RTO).
fn jiffies_phase(seed: u64) -> u32 {
    (seed.wrapping_add(0x9E37_79B9_7F4A_7C15).wrapping_mul(0xBF58_476D_1CE4_E5B9) >> 52) as u32
}

/// Uniform jitter up to `ns` (0: none).
pub fn jitter(ns: u64) -> Jitter {
    jitter_with(ns, network::JitterDistribution::Uniform)
}

/// Jitter of scale `ns` (uniform bound, normal sigma or Pareto mean) with
/// the given distribution. A zero scale is no jitter (and no draws); the
/// non-uniform kinds keep their variant so a later change of scale
/// ([`Jitter::with_scale`]) keeps the distribution.
pub fn jitter_with(ns: u64, dist: network::JitterDistribution) -> Jitter {
    let d = Duration::from_nanos(ns);
    match dist {
        network::JitterDistribution::Uniform if ns == 0 => Jitter::None,
        network::JitterDistribution::Uniform => Jitter::Uniform { max: d },
        network::JitterDistribution::Normal => Jitter::Normal { sigma: d },
        network::JitterDistribution::Pareto => Jitter::Pareto { mean: d },
    }
}

pub fn loss_model(p: f64, ge: Option<&network::GilbertElliott>) -> LossModel {
    match ge {
        Some(g) => LossModel::GilbertElliott { p_gb: g.p_gb, p_bg: g.p_bg, loss_good: g.loss_good, loss_bad: g.loss_bad },
        None if p > 0.0 => LossModel::Bernoulli { p },
        None => LossModel::None,
    }
}

/// One direction of a scenario link as the link model wants it. Its
/// queue table is read by the registry of disciplines (an error names the
/// field; `plugins::resolve` has located it in the file at load time).
pub fn link_params(d: &network::LinkDirection) -> Result<LinkParams, PluginError> {
    let queue = QueueConfig::of(&d.queue)?;
    Ok(LinkParams {
        rate_bps: d.rate_bps,
        delay: Duration::from_nanos(d.delay_ns),
        jitter: jitter_with(d.jitter_ns, d.jitter_distribution),
        loss: loss_model(d.loss, d.gilbert_elliott.as_ref()),
        queue,
        allow_reorder: d.reorder,
        duplicate: d.duplicate,
    })
}

/// The delivery schedule of a trace-driven direction, for
/// [`crate::link::LinkDirection::set_trace`].
pub fn link_trace(d: &network::LinkDirection) -> Option<crate::link::DeliverySchedule> {
    d.trace.as_ref().and_then(|t| crate::link::DeliverySchedule::new(t.ms.clone(), t.looped))
}

/// Bytes a bounded transfer delivers in total, if bounded.
pub fn is_bounded(a: &network::App) -> Option<u64> {
    match a {
        network::App::Stream(_) => crate::apps::Kind::of(a).bounded(),
        network::App::Datagram(_) | network::App::Tunnel { .. } | network::App::Converter { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(pm: &str, extra: &str) -> Network {
        let toml = format!(
            "name = \"t\"\nduration = \"1s\"\n[topology]\nkind = \"parallel\"\npaths = 2\nrate = \"10Mbit\"\ndelay = \"10ms\"\n[transport.mptcp]\npath_manager = \"{pm}\"\n{extra}\n[[flows]]\nfrom = \"client\"\nto = \"server\"\ntransport = \"mptcp\"\napp = \"bulk\"\n"
        );
        mplab_scenario::Scenario::from_str(&toml, "t.toml").unwrap_or_else(|e| panic!("{e}")).resolve().unwrap_or_else(|e| panic!("{e}"))
    }

    fn limits(n: &Network) -> mptcp::Limits {
        let f = &n.flows[0];
        path_manager(n, f, f.mptcp.as_ref().unwrap()).1
    }

    #[test]
    fn kernel_like_managers_start_from_linux_defaults() {
        assert_eq!(limits(&net("default", "")), LINUX_DEFAULT_LIMITS);
        assert_eq!(limits(&net("endpoints", "")), LINUX_DEFAULT_LIMITS);
        assert_eq!(limits(&net("endpoints", "limits = { subflows = 4, add_addr_accepted = 3 }")), mptcp::Limits { subflows: 4, add_addr_accepted: 3 });
    }

    #[test]
    fn fullmesh_allows_every_address_pair() {
        // 2 x 2 addresses: 3 extra subflows, 1 announced address.
        assert_eq!(limits(&net("fullmesh", "")), mptcp::Limits { subflows: 3, add_addr_accepted: 1 });
        assert_eq!(limits(&net("fullmesh", "subflows = 2")), mptcp::Limits { subflows: 1, add_addr_accepted: 1 });
    }

    /// A scenario's `snd_buf` / `rcv_buf` are what the application asks
    /// for: the `linux` profile gets what Linux gives (twice as much, a
    /// window of the doubled buffer less its overhead, every subflow the
    /// whole send buffer, no window scaling for a small one); mplab's
    /// stack takes the values as they are.
    #[test]
    fn socket_buffers_set_by_the_scenario_are_doubled_as_linux_does() {
        let bufs = "[transport.tcp]\nrcv_buf = \"32KB\"\nsnd_buf = \"32KB\"\n[transport.mptcp]\npath_manager = \"fullmesh\"\n";
        for (profile, snd, rcv, shared, scale_space) in [("mplab", 32_000, 32_000, false, None), ("linux", 64_000, 39_000, true, Some(39_000))] {
            let toml = format!("name = \"t\"\nduration = \"1s\"\n[topology]\nkind = \"parallel\"\npaths = 2\nrate = \"10Mbit\"\ndelay = \"10ms\"\n{}profile = \"{profile}\"\n[[flows]]\nfrom = \"client\"\nto = \"server\"\ntransport = \"mptcp\"\napp = \"bulk\"\n[[flows]]\nfrom = \"client\"\nto = \"server\"\ntransport = \"tcp\"\napp = \"bulk\"\nprofile = \"{profile}\"\n", bufs);
            let n = mplab_scenario::Scenario::from_str(&toml, "t.toml").unwrap_or_else(|e| panic!("{e}")).resolve().unwrap_or_else(|e| panic!("{e}"));
            let (mp, tcp) = (&n.flows[0], &n.flows[1]);
            let c = mptcp_config(&n, mp, mp.from, Ipv4Addr::new(10, 0, 0, 2)).unwrap();
            assert_eq!((c.snd_buf, c.rcv_buf, c.subflows_share_snd_buf, c.snd_autotune, c.rcv_autotune), (snd, rcv, shared, false, false), "{profile}");
            assert_eq!((c.tcp.snd_buf, c.tcp.rcv_buf, c.tcp.window_scale_space), (snd, rcv, scale_space), "{profile} subflows");
            let t = flow_tcp_end_config(&n, tcp, tcp.to).unwrap();
            assert_eq!((t.snd_buf, t.rcv_buf, t.window_scale_space, t.round_window_to_mss), (snd, rcv, scale_space, profile == "linux"), "{profile} TCP");
            // A 39 KB window is offered whole under the default threshold.
            assert_eq!(t.initial_rcv_ssthresh, mplab_proto::tcp::INITIAL_RCV_SSTHRESH);
        }
    }

    /// A receive buffer the application set is offered whole from the
    /// first ACK under the `linux` profile (Linux's first `rcv_ssthresh`
    /// is the set buffer's window in whole segments), where the default
    /// buffer's window starts at 64 KiB and grows.
    #[test]
    fn a_large_receive_buffer_set_by_the_application_is_offered_at_once() {
        let toml = "name = \"t\"\nduration = \"1s\"\n[topology]\nkind = \"parallel\"\npaths = 2\nrate = \"10Mbit\"\ndelay = \"10ms\"\n[transport.tcp]\nrcv_buf = \"1388KB\"\n[transport.mptcp]\npath_manager = \"fullmesh\"\nprofile = \"linux\"\n[[flows]]\nfrom = \"client\"\nto = \"server\"\ntransport = \"mptcp\"\napp = \"bulk\"\n";
        let n = mplab_scenario::Scenario::from_str(toml, "t.toml").unwrap_or_else(|e| panic!("{e}")).resolve().unwrap_or_else(|e| panic!("{e}"));
        let f = &n.flows[0];
        let c = mptcp_config(&n, f, f.to, Ipv4Addr::new(10, 0, 0, 1)).unwrap();
        let t = c.tcp.initial_rcv_ssthresh;
        assert!(t > 1_300_000 && t <= c.tcp.rcv_buf && t % 1448 == 0, "{t} of a {} window", c.tcp.rcv_buf);
    }

    #[test]
    fn ndiffports_opens_its_count() {
        let n = net("ndiffports", "subflows = 5");
        let f = &n.flows[0];
        assert_eq!(path_manager(&n, f, f.mptcp.as_ref().unwrap()), ("ndiffports:5".to_string(), mptcp::Limits { subflows: 4, add_addr_accepted: 0 }));
    }

    /// An unknown path manager is reported as an unknown scheduler is: the
    /// flow and the field, with the registry's names.
    #[test]
    fn an_unknown_path_manager_is_unsupported_by_name() {
        let n = net("fullmess", "");
        let u = unsupported(&n);
        assert_eq!(u.len(), 1, "{u:?}");
        assert_eq!((u[0].flow, u[0].field), (0, "path_manager"));
        assert!(u[0].message.contains("unknown path manager \"fullmess\"") && u[0].message.contains("ndiffports[:N]"), "{}", u[0].message);
        assert!(unsupported(&net("fullmesh", "")).is_empty());
    }
}
