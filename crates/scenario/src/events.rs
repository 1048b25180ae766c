//! `[[events]]` resolved into what the backends apply: link changes
//! (down, up, set) and a host's address changes (remove_addr, add_addr,
//! prio). The mobility vocabulary (`wifi_lost`, `wifi_regained`,
//! `handover`, `fade`) expands here into those, so every backend runs a
//! phone's day without knowing the words.
//!
//! An expansion looks at what the events before it (in time) left: a
//! handover brings its target link up only if it is down, and its address
//! back only if it was withdrawn, because an `up` on a link that is up
//! would reset its serialiser and an `ip mptcp endpoint add` of an address
//! in service fails.

use std::collections::BTreeMap;

use crate::error::{diag, Diag};
use crate::network::{Event, LinkAction, LinkId, Network, Node, NodeId};
use crate::schema::{Direction, EventAction, EventSpec, HandoverMode, NodeKind, Spec};
use crate::units::Duration;
use crate::vocab::EndpointFlag;
use crate::names::find_node;

/// `wifi_regained` without `dhcp`: a DHCP exchange after association
/// takes about a second on a phone.
const DEFAULT_DHCP: Duration = Duration::from_millis(1000);
/// `handover` without `overlap` / `gap`.
const DEFAULT_HANDOVER: Duration = Duration::from_millis(1000);
/// `fade` without `every`.
const DEFAULT_FADE_STEP: Duration = Duration::from_millis(100);

/// The optional fields of an event, and the actions each applies to.
const FIELDS: &[(&str, &[EventAction])] = {
    use EventAction::*;
    &[
        ("direction", &[Set, Fade]),
        ("rate", &[Set, Fade]),
        ("delay", &[Set]),
        ("jitter", &[Set]),
        ("loss", &[Set, Fade]),
        ("backup", &[Prio]),
        ("detect", &[WifiLost]),
        ("dhcp", &[WifiRegained]),
        ("to", &[Handover]),
        ("mode", &[Handover]),
        ("overlap", &[Handover]),
        ("gap", &[Handover]),
        ("over", &[Fade]),
        ("every", &[Fade]),
    ]
};

fn is_set(e: &EventSpec, field: &str) -> bool {
    match field {
        "direction" => e.direction.is_some(),
        "rate" => e.rate.is_some(),
        "delay" => e.delay.is_some(),
        "jitter" => e.jitter.is_some(),
        "loss" => e.loss.is_some(),
        "backup" => e.backup.is_some(),
        "detect" => e.detect.is_some(),
        "dhcp" => e.dhcp.is_some(),
        "to" => e.to.is_some(),
        "mode" => e.mode.is_some(),
        "overlap" => e.overlap.is_some(),
        "gap" => e.gap.is_some(),
        "over" => e.over.is_some(),
        "every" => e.every.is_some(),
        _ => unreachable!("{field} is not in FIELDS"),
    }
}

/// The action as a scenario file writes it.
fn action_name(a: EventAction) -> &'static str {
    use EventAction::*;
    match a {
        Down => "down",
        Up => "up",
        Set => "set",
        RemoveAddr => "remove_addr",
        AddAddr => "add_addr",
        Prio => "prio",
        WifiLost => "wifi_lost",
        WifiRegained => "wifi_regained",
        Handover => "handover",
        Fade => "fade",
    }
}

/// A field set on an action that does not take it.
fn check_fields(e: &EventSpec, path: &str) -> Result<(), Diag> {
    for (field, actions) in FIELDS {
        if is_set(e, field) && !actions.contains(&e.action) {
            let names: Vec<String> = actions.iter().map(|a| format!("{:?}", action_name(*a))).collect();
            return diag(format!("{path}.{field}"), format!("only applies to action = {}", names.join(" or ")));
        }
    }
    Ok(())
}

/// The link named by `link = "..."` or by `node` + `iface`.
fn link_ref(net: &Network, e: &EventSpec, path: &str) -> Result<LinkId, Diag> {
    match (&e.link, &e.node, &e.iface) {
        (Some(name), None, None) => net.link(name).map(|l| l.id).ok_or_else(|| Diag::new(format!("{path}.link"), format!("unknown link {name:?}"))),
        (None, Some(node), Some(iface)) => {
            let n = find_node(&net.nodes, node, &format!("{path}.node"))?;
            n.iface(iface).map(|i| i.link).ok_or_else(|| Diag::new(format!("{path}.iface"), format!("{node} has no interface {iface:?}")))
        }
        (Some(_), _, _) => diag(path, "name the link with `link` or with `node` and `iface`, not both"),
        _ => diag(path, "name the link with `link` or with `node` and `iface`"),
    }
}

/// A host's interface, for the events about its address.
#[derive(Clone)]
struct HostIface {
    node: NodeId,
    node_name: String,
    iface: usize,
    iface_name: String,
    addr: std::net::Ipv4Addr,
    link: LinkId,
}

fn host_iface(n: &Node, iface: &str, path: &str, field: &str) -> Result<HostIface, Diag> {
    let i = n.iface(iface).ok_or_else(|| Diag::new(format!("{path}.{field}"), format!("{} has no interface {iface:?}", n.name)))?;
    Ok(HostIface { node: n.id, node_name: n.name.clone(), iface: i.index, iface_name: i.name.clone(), addr: i.addr, link: i.link })
}

/// The host interface named by `node` and `iface`.
fn host_ref(net: &Network, e: &EventSpec, path: &str) -> Result<HostIface, Diag> {
    let (Some(node), Some(iface)) = (&e.node, &e.iface) else {
        return diag(path, format!("action = {:?} names the host's interface with `node` and `iface`", action_name(e.action)));
    };
    let n = find_node(&net.nodes, node, &format!("{path}.node"))?;
    if n.kind == NodeKind::Router {
        return diag(format!("{path}.node"), format!("{node:?} is a router; only hosts have MPTCP addresses"));
    }
    host_iface(n, iface, path, "iface")
}

/// What the events resolved so far leave, for the expansions to read.
struct State {
    /// Links taken down (every link starts up).
    down: Vec<bool>,
    /// Host addresses withdrawn, by (node, iface).
    withdrawn: BTreeMap<(NodeId, usize), bool>,
    /// Host addresses marked backup, by (node, iface); starts from the
    /// MPTCP endpoints' `backup` flag.
    backup: BTreeMap<(NodeId, usize), bool>,
    /// Each link direction's rate and loss, [ab, ba].
    rate: Vec<[u64; 2]>,
    loss: Vec<[f64; 2]>,
}

impl State {
    fn new(net: &Network) -> State {
        let mut backup = BTreeMap::new();
        for ep in &net.mptcp_endpoints {
            backup.insert((ep.node, ep.iface), ep.flags.contains(&EndpointFlag::Backup));
        }
        State {
            down: vec![false; net.links.len()],
            withdrawn: BTreeMap::new(),
            backup,
            rate: net.links.iter().map(|l| [l.ab.rate_bps, l.ba.rate_bps]).collect(),
            loss: net.links.iter().map(|l| [l.ab.loss, l.ba.loss]).collect(),
        }
    }
}

/// The events a resolution emits, with the state they leave.
struct Out<'a> {
    net: &'a Network,
    state: State,
    events: Vec<Event>,
}

impl Out<'_> {
    fn push(&mut self, at_ns: u64, link: LinkId, action: LinkAction) {
        match &action {
            LinkAction::Down => self.state.down[link] = true,
            LinkAction::Up => self.state.down[link] = false,
            LinkAction::RemoveAddr { node, iface, .. } => {
                self.state.withdrawn.insert((*node, *iface), true);
            }
            LinkAction::AddAddr { node, iface, .. } => {
                self.state.withdrawn.insert((*node, *iface), false);
            }
            LinkAction::Prio { node, iface, backup, .. } => {
                self.state.backup.insert((*node, *iface), *backup);
            }
            LinkAction::Set { direction, rate_bps, loss, .. } => {
                for &d in dirs(*direction) {
                    if let Some(r) = rate_bps {
                        self.state.rate[link][d] = *r;
                    }
                    if let Some(p) = loss {
                        self.state.loss[link][d] = *p;
                    }
                }
            }
        }
        self.events.push(Event { at_ns, link, link_name: self.net.links[link].name.clone(), action });
    }

    fn addr(&mut self, at_ns: u64, h: &HostIface, kind: AddrChange) {
        let (node, node_name, iface, iface_name, addr) = (h.node, h.node_name.clone(), h.iface, h.iface_name.clone(), h.addr);
        let action = match kind {
            AddrChange::Remove => LinkAction::RemoveAddr { node, node_name, iface, iface_name, addr },
            AddrChange::Add => LinkAction::AddAddr { node, node_name, iface, iface_name, addr },
            AddrChange::Prio(backup) => LinkAction::Prio { node, node_name, iface, iface_name, addr, backup },
        };
        self.push(at_ns, h.link, action);
    }

    /// Takes `h` out of service: its link goes down, its address is
    /// withdrawn `detect` later; what is already so is left alone.
    fn take_away(&mut self, at_ns: u64, detect_ns: u64, h: &HostIface) {
        if !self.state.down[h.link] {
            self.push(at_ns, h.link, LinkAction::Down);
        }
        if !self.withdrawn(h) {
            self.addr(at_ns + detect_ns, h, AddrChange::Remove);
        }
    }

    /// Brings `h` into service: its link up, its address back `dhcp`
    /// later, out of backup if it was marked so.
    fn bring_in(&mut self, at_ns: u64, dhcp_ns: u64, h: &HostIface, prio: bool) {
        if self.state.down[h.link] {
            self.push(at_ns, h.link, LinkAction::Up);
        }
        let addr_at = if self.withdrawn(h) {
            self.addr(at_ns + dhcp_ns, h, AddrChange::Add);
            at_ns + dhcp_ns
        } else {
            at_ns
        };
        if prio && self.is_backup(h) {
            self.addr(addr_at, h, AddrChange::Prio(false));
        }
    }

    fn withdrawn(&self, h: &HostIface) -> bool {
        self.state.withdrawn.get(&(h.node, h.iface)).copied().unwrap_or(false)
    }

    fn is_backup(&self, h: &HostIface) -> bool {
        self.state.backup.get(&(h.node, h.iface)).copied().unwrap_or(false)
    }
}

#[derive(Clone, Copy)]
enum AddrChange {
    Remove,
    Add,
    Prio(bool),
}

fn dirs(d: Direction) -> &'static [usize] {
    match d {
        Direction::Ab => &[0],
        Direction::Ba => &[1],
        Direction::Both => &[0, 1],
    }
}

pub(crate) fn resolve(spec: &Spec, net: &Network) -> Result<Vec<Event>, Diag> {
    let mut out = Out { net, state: State::new(net), events: Vec::new() };
    // In time order, so that an expansion sees what the earlier events
    // left (stable: same-time events keep file order).
    let mut order: Vec<usize> = (0..spec.events.len()).collect();
    order.sort_by_key(|&i| spec.events[i].at);
    for i in order {
        let e = &spec.events[i];
        let path = format!("events[{i}]");
        let link = link_ref(net, e, &path)?;
        if e.at > spec.duration {
            return diag(format!("{path}.at"), format!("{} is after the end of the scenario (duration = {})", e.at, spec.duration));
        }
        check_fields(e, &path)?;
        let at = e.at.as_nanos();
        match e.action {
            EventAction::Down => out.push(at, link, LinkAction::Down),
            EventAction::Up => out.push(at, link, LinkAction::Up),
            EventAction::Set => set(&mut out, e, link, &path)?,
            EventAction::RemoveAddr => {
                let h = host_ref(net, e, &path)?;
                out.addr(at, &h, AddrChange::Remove);
            }
            EventAction::AddAddr => {
                let h = host_ref(net, e, &path)?;
                out.addr(at, &h, AddrChange::Add);
            }
            EventAction::Prio => {
                let h = host_ref(net, e, &path)?;
                let Some(backup) = e.backup else {
                    return diag(path, "action = \"prio\" needs `backup = true` or `backup = false`");
                };
                out.addr(at, &h, AddrChange::Prio(backup));
            }
            EventAction::WifiLost => {
                let h = host_ref(net, e, &path)?;
                out.take_away(at, e.detect.map_or(0, |d| d.as_nanos()), &h);
            }
            EventAction::WifiRegained => {
                let h = host_ref(net, e, &path)?;
                out.bring_in(at, e.dhcp.unwrap_or(DEFAULT_DHCP).as_nanos(), &h, false);
            }
            EventAction::Handover => handover(&mut out, e, &path)?,
            EventAction::Fade => fade(&mut out, spec, e, link, &path)?,
        }
    }
    // A steps file's later lines are rate changes of their direction.
    for l in &net.links {
        for (direction, d) in [(Direction::Ab, &l.ab), (Direction::Ba, &l.ba)] {
            for s in d.steps.iter().skip(1) {
                let action = LinkAction::Set { direction, rate_bps: Some(s.rate_bps), delay_ns: None, jitter_ns: None, loss: None };
                out.events.push(Event { at_ns: s.at_ns, link: l.id, link_name: l.name.clone(), action });
            }
        }
    }
    // Stable: same-time events keep the order they were made in.
    out.events.sort_by_key(|e| e.at_ns);
    Ok(out.events)
}

fn set(out: &mut Out, e: &EventSpec, link: LinkId, path: &str) -> Result<(), Diag> {
    if e.rate.is_none() && e.delay.is_none() && e.jitter.is_none() && e.loss.is_none() {
        return diag(path, "action = \"set\" needs at least one of rate, delay, jitter, loss");
    }
    if e.rate.is_some_and(|r| r.bps() == 0) {
        return diag(format!("{path}.rate"), "must be greater than 0 (use action = \"down\")");
    }
    let direction = e.direction.unwrap_or(Direction::Both);
    check_rate_settable(out.net, e, link, direction, path)?;
    let action = LinkAction::Set {
        direction,
        rate_bps: e.rate.map(|r| r.bps()),
        delay_ns: e.delay.map(|d| d.as_nanos()),
        jitter_ns: e.jitter.map(|d| d.as_nanos()),
        loss: e.loss.map(|p| p.value()),
    };
    out.push(e.at.as_nanos(), link, action);
    Ok(())
}

/// A trace or a steps file owns its direction's rate.
fn check_rate_settable(net: &Network, e: &EventSpec, link: LinkId, direction: Direction, path: &str) -> Result<(), Diag> {
    let l = &net.links[link];
    let traced = dirs(direction).iter().any(|&d| {
        let d = if d == 0 { &l.ab } else { &l.ba };
        d.trace.is_some() || !d.steps.is_empty()
    });
    if e.rate.is_some() && traced {
        return diag(format!("{path}.rate"), format!("link {:?} takes its capacity from a trace or steps file; {:?} cannot change its rate", l.name, action_name(e.action)));
    }
    Ok(())
}

fn handover(out: &mut Out, e: &EventSpec, path: &str) -> Result<(), Diag> {
    let from = host_ref(out.net, e, path)?;
    let Some(to_name) = &e.to else {
        return diag(path, "action = \"handover\" names the interface taken with `to`");
    };
    let node = &out.net.nodes[from.node];
    let to = host_iface(node, to_name, path, "to")?;
    if to.iface == from.iface {
        return diag(format!("{path}.to"), format!("hands over from {to_name:?} to itself"));
    }
    let Some(mode) = e.mode else {
        return diag(path, "action = \"handover\" needs mode = \"make_before_break\" or \"break_before_make\"");
    };
    let at = e.at.as_nanos();
    match mode {
        HandoverMode::MakeBeforeBreak => {
            if e.gap.is_some() {
                return diag(format!("{path}.gap"), "applies to mode = \"break_before_make\" (make-before-break overlaps: `overlap`)");
            }
            let overlap = e.overlap.unwrap_or(DEFAULT_HANDOVER).as_nanos();
            // The new interface comes in and out of backup; the old one
            // turns backup at once, so the scheduler moves the traffic
            // before the old link goes.
            out.bring_in(at, 0, &to, true);
            if !out.withdrawn(&from) && !out.is_backup(&from) {
                out.addr(at, &from, AddrChange::Prio(true));
            }
            out.take_away(at + overlap, 0, &from);
        }
        HandoverMode::BreakBeforeMake => {
            if e.overlap.is_some() {
                return diag(format!("{path}.overlap"), "applies to mode = \"make_before_break\" (break-before-make waits: `gap`)");
            }
            let gap = e.gap.unwrap_or(DEFAULT_HANDOVER).as_nanos();
            out.take_away(at, 0, &from);
            out.bring_in(at + gap, 0, &to, true);
        }
    }
    Ok(())
}

fn fade(out: &mut Out, spec: &Spec, e: &EventSpec, link: LinkId, path: &str) -> Result<(), Diag> {
    let Some(over) = e.over else {
        return diag(path, "action = \"fade\" needs `over`, the time the change takes");
    };
    if e.rate.is_none() && e.loss.is_none() {
        return diag(path, "action = \"fade\" needs `rate` or `loss` (or both), the values it fades to");
    }
    if e.rate.is_some_and(|r| r.bps() == 0) {
        return diag(format!("{path}.rate"), "must be greater than 0 (a fade to nothing is action = \"down\" at its end)");
    }
    let every = e.every.unwrap_or(DEFAULT_FADE_STEP);
    if every.as_nanos() == 0 || over.as_nanos() < every.as_nanos() {
        return diag(format!("{path}.every"), format!("must be greater than 0 and at most `over` ({over})"));
    }
    if e.at.as_nanos() + over.as_nanos() > spec.duration.as_nanos() {
        return diag(format!("{path}.over"), format!("the fade ends at {}, after the end of the scenario (duration = {})", Duration::from_nanos(e.at.as_nanos() + over.as_nanos()), spec.duration));
    }
    let direction = e.direction.unwrap_or(Direction::Both);
    check_rate_settable(out.net, e, link, direction, path)?;
    let steps = over.as_nanos() / every.as_nanos();
    for &d in dirs(direction) {
        let (r0, p0) = (out.state.rate[link][d], out.state.loss[link][d]);
        let direction = if d == 0 { Direction::Ab } else { Direction::Ba };
        for k in 1..=steps {
            let f = k as f64 / steps as f64;
            // A fade is exponential in rate (a signal loses dB at a steady
            // pace; capacity follows the SNR roughly logarithmically) and
            // linear in loss.
            let rate_bps = e.rate.map(|r| if r0 == 0 { r.bps() } else { ((r0 as f64).ln() * (1.0 - f) + (r.bps() as f64).ln() * f).exp().round().max(1.0) as u64 });
            let loss = e.loss.map(|p| p0 + (p.value() - p0) * f);
            let at = e.at.as_nanos() + k * every.as_nanos();
            out.push(at, link, LinkAction::Set { direction, rate_bps, delay_ns: None, jitter_ns: None, loss });
        }
    }
    Ok(())
}
