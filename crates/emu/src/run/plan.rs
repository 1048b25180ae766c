//! The run's plan: everything derived once from the `Network` before any
//! namespace exists — which stack each node runs, the kernel hosts' MPTCP
//! settings, the load balancers, how each flow runs, the probes' choices
//! and the link emulator's configuration. The phases read the plan instead
//! of deriving these again.

use std::collections::BTreeMap;
use std::time::Duration;

use mplab_backend::middlebox::MiddleboxConfig;
use mplab_scenario::network::{App, Direction, Flow, MiddleboxAction, Network, NodeKind, Placement, StripOn};

use mplab_backend::link::LinkParams;

use super::options::KernelError;
use crate::emulator::{EmuConfig, EmuEvent, EmuLink, StripRule};
use crate::kconf::{self, MptcpNode};
use crate::{balancer, topo};

/// How long receivers may keep draining after the scenario's end before
/// every socket is closed.
pub const GRACE: Duration = Duration::from_secs(3);
/// Set-up margin between starting the emulator and the run's time zero.
pub const LEAD: Duration = Duration::from_millis(300);

/// How a flow runs on real packets: which driver prepares its ends before
/// time zero and starts them (crate::run::flows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowKind {
    /// usrsctp host processes in the ends' namespaces.
    Sctp,
    /// UDP sockets: the datagram applications, or QUIC.
    Datagram,
    /// A hybrid-access tunnel: a gateway program at each end.
    Tunnel,
    /// A converter pair (CPE and HAG programs).
    Converter,
    /// A TCP or MPTCP byte stream between sockets (or mplab's stack).
    Stream,
}

impl FlowKind {
    pub fn of(f: &Flow) -> FlowKind {
        match (&f.app, f.transport) {
            (_, t) if t.is_sctp() => FlowKind::Sctp,
            // Whatever its transport (an MPQUIC tunnel's is UDP).
            (App::Tunnel { .. }, _) => FlowKind::Tunnel,
            (_, t) if t.over_udp() => FlowKind::Datagram,
            (App::Converter { .. }, _) => FlowKind::Converter,
            _ => FlowKind::Stream,
        }
    }
}

pub struct Plan<'n> {
    pub net: &'n Network,
    /// Per node: mplab's own stack over a TUN (the userspace backend)
    /// rather than the kernel's (MP)TCP.
    pub mplab: Vec<bool>,
    /// Per node: the kernel's (MP)TCP (`!mplab`).
    pub on_kernel: Vec<bool>,
    /// Some node runs mplab's stack: the userspace backend.
    pub userspace: bool,
    /// The MPTCP limits and endpoints of the kernel's hosts.
    pub mptcp: BTreeMap<usize, MptcpNode>,
    /// The load balancers' forwarding plans.
    pub balancers: Vec<balancer::Plan>,
    /// The hosts (their interfaces are probed, their counters reported).
    pub hosts: Vec<usize>,
    /// Per flow: how it runs.
    pub kinds: Vec<FlowKind>,
    /// Every loop's hard stop after time zero: the end plus [`GRACE`].
    pub hard_ns: u64,
    /// Per link: the link model of each direction (a -> b, b -> a).
    pub link_params: Vec<[LinkParams; 2]>,
}

impl<'n> Plan<'n> {
    /// The plan of `net` with the nodes flagged in `mplab` on mplab's
    /// stack. Fails when the kernel hosts' MPTCP settings conflict or a
    /// link's queue table or a flow's application names none mplab has.
    pub fn new(net: &'n Network, mplab: Vec<bool>) -> Result<Plan<'n>, KernelError> {
        // The kernel's MPTCP settings concern the kernel's hosts only.
        let on_kernel: Vec<bool> = mplab.iter().map(|&m| !m).collect();
        mplab_backend::apps::check_flows(net).map_err(|e| KernelError::Usage(e.to_string()))?;
        let mptcp = kconf::mptcp_plan_on(net, &on_kernel).map_err(KernelError::Usage)?;
        let params = |d| mplab_backend::config::link_params(d).map_err(|e| KernelError::Usage(e.to_string()));
        let link_params = net.links.iter().map(|l| Ok([params(&l.ab)?, params(&l.ba)?])).collect::<Result<_, KernelError>>()?;
        Ok(Plan {
            userspace: mplab.iter().any(|&m| m),
            mplab,
            on_kernel,
            mptcp,
            balancers: balancer::plans(net),
            hosts: net.nodes.iter().filter(|n| n.kind == NodeKind::Host).map(|n| n.id).collect(),
            kinds: net.flows.iter().map(FlowKind::of).collect(),
            hard_ns: net.duration_ns + GRACE.as_nanos() as u64,
            link_params,
            net,
        })
    }

    /// The node that sends flow `f`'s data (its TCP_INFO tells about the
    /// data direction).
    pub fn sender(f: &Flow) -> usize {
        if mplab_backend::apps::server_sends(&f.app) {
            f.to
        } else {
            f.from
        }
    }

    /// The flows of one kind, in flow order.
    pub fn flows_of(&self, kind: FlowKind) -> impl Iterator<Item = &'n Flow> + '_ {
        self.net.flows.iter().filter(move |f| self.kinds[f.id] == kind)
    }

    /// The link emulator's configuration: the links' models, the attacks
    /// and MPTCP stripping on links, the link events.
    pub fn emu_config(&self, wire_ns: &str) -> EmuConfig {
        let net = self.net;
        let mut links: Vec<EmuLink> = net
            .links
            .iter()
            .map(|l| EmuLink {
                name: l.name.clone(),
                ends: [topo::wire_end(l.id, 0), topo::wire_end(l.id, 1)],
                params: self.link_params[l.id],
                traces: [mplab_backend::config::link_trace(&l.ab), mplab_backend::config::link_trace(&l.ba)],
                up: l.up,
                strip: [None, None],
                attack: None,
                mtu: l.mtu,
                radio: l.radio.map(|r| (r.idle_ns, r.promotion_ns)),
            })
            .collect();
        for mb in &net.middleboxes {
            if let (MiddleboxAction::Attacker(m), Placement::Link { link, .. }) = (&mb.action, &mb.placement) {
                links[*link].attack = Some(*m);
            }
            if let (MiddleboxAction::Plugin(p), Placement::Link { link, direction, .. }) = (&mb.action, &mb.placement) {
                // The link emulator strips the option itself; the kinds it
                // does not run are refused by kconf::unsupported.
                let Ok(MiddleboxConfig::StripMptcp(strip)) = MiddleboxConfig::of(p) else { continue };
                let on = if strip.syn_only { StripOn::Syn } else { StripOn::All };
                let dirs: &[usize] = match direction {
                    Direction::Ab => &[0],
                    Direction::Ba => &[1],
                    Direction::Both => &[0, 1],
                };
                for &d in dirs {
                    links[*link].strip[d] = Some(StripRule { on, from_ns: mb.from_ns, until_ns: mb.until_ns });
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
}
