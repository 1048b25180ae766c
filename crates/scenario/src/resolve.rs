//! From a parsed [`Spec`] to a concrete [`Network`]: expand the generator,
//! merge explicit nodes and links, name interfaces, assign addresses, then
//! hand over to `routing` and `workload`.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;

use crate::error::{diag, Diag};
use crate::network::{Interface, Link, LinkDirection, LinkEnd, Network, Node, Prefix, Queue, Routing, DEFAULT_MTU};
use crate::schema::{Cidr, DirectionSpec, Draft, DraftEnd, DraftLink, DraftNode, LinkSpec, RateSpec, Spec};
use crate::topology::{queue_at, resolve_loss};
use crate::{routing, workload};

/// Linux's IFNAMSIZ less the terminating NUL.
const MAX_IFNAME: usize = 15;

pub(crate) fn resolve(spec: &Spec, base: &Path) -> Result<Network, Diag> {
    let mut draft = match &spec.topology {
        Some(t) => t.generate()?,
        None => Draft::default(),
    };
    for (i, n) in spec.nodes.iter().enumerate() {
        draft.nodes.push(DraftNode { name: n.name.clone(), kind: n.kind, stack: n.stack.clone(), origin: format!("nodes[{i}]") });
    }
    for (i, l) in spec.links.iter().enumerate() {
        draft.links.push(link_from_spec(l, &format!("links[{i}]"), base)?);
    }
    // A generator's middleboxes join the file's, after them (so the
    // file's keep their indices in error messages).
    let merged;
    let spec = if draft.middleboxes.is_empty() {
        spec
    } else {
        let mut s = spec.clone();
        s.middleboxes.extend(draft.middleboxes.iter().cloned());
        merged = s;
        &merged
    };
    let (mut nodes, links) = build(&draft)?;
    let anycast = crate::balancer::place(spec, &mut nodes)?;
    routing::compute(&mut nodes, &links, &anycast);
    // A tunnel's CPE (the router opening an `app = "tunnel"` or
    // `"converter"` flow) routes
    // its own subflows by source address, one per access link. The HAG
    // answers by its main table: the reply to a subflow leaves by the link
    // its CPE address is on, whichever of its own addresses it came to.
    for f in spec.flows.iter().filter(|f| f.between_gateways()) {
        if let Some(x) = nodes.iter().position(|n| n.name == f.from && n.kind == crate::schema::NodeKind::Router) {
            routing::source_tables(&mut nodes[x], &links, x);
        }
    }
    routing::apply_static(&spec.routes, &mut nodes)?;
    let mut net = Network {
        name: spec.name.clone(),
        description: spec.description.clone(),
        seed: spec.seed,
        duration_ns: spec.duration.as_nanos(),
        ecmp: spec.ecmp,
        nodes,
        links,
        flows: Vec::new(),
        events: Vec::new(),
        middleboxes: Vec::new(),
        mptcp_endpoints: Vec::new(),
        probes: crate::network::Probes { interval_ns: 0, pcap: Vec::new(), cwnd: false, srtt: false, flows: Vec::new(), queues: Vec::new(), snaplen: 0, qlog: false, out_dir: None },
    };
    workload::resolve(spec, &mut net)?;
    Ok(net)
}

/// An explicit `[[links]]` entry as a draft: per-direction parameters are
/// the link's own, overridden by `[links.ab]` / `[links.ba]`.
fn link_from_spec(l: &LinkSpec, path: &str, base: &Path) -> Result<DraftLink, Diag> {
    let ab = direction(l, l.ab.as_ref(), path, "ab", base)?;
    let ba = direction(l, l.ba.as_ref(), path, "ba", base)?;
    let mtu = l.mtu.unwrap_or(DEFAULT_MTU);
    if !(68..=65535).contains(&mtu) {
        return diag(format!("{path}.mtu"), format!("must be between 68 and 65535, got {mtu}"));
    }
    Ok(DraftLink {
        name: l.name.clone().unwrap_or_else(|| format!("{}-{}", l.a.node, l.b.node)),
        a: DraftEnd { node: l.a.node.clone(), iface: l.a.iface.clone(), addr: l.a_addr, host: 1 },
        b: DraftEnd { node: l.b.node.clone(), iface: l.b.iface.clone(), addr: l.b_addr, host: 2 },
        subnet: l.subnet,
        ab,
        ba,
        up: l.up,
        mtu,
        radio: match l.radio {
            Some(r) if r.idle.as_nanos() == 0 => return diag(format!("{path}.radio.idle"), "must be greater than 0 (the radio sleeps after this long without a packet)"),
            Some(r) => Some(crate::network::Radio { idle_ns: r.idle.as_nanos(), promotion_ns: r.promotion.as_nanos() }),
            None => None,
        },
        origin: path.to_string(),
    })
}

fn direction(l: &LinkSpec, o: Option<&DirectionSpec>, path: &str, dir: &str, base: &Path) -> Result<LinkDirection, Diag> {
    let o = o.cloned().unwrap_or_default();
    // Errors point at the override when it supplied the bad value.
    let field = |name: &str, overridden: bool| if overridden { format!("{path}.{dir}.{name}") } else { format!("{path}.{name}") };
    let rate_field = field("rate", o.rate.is_some());
    let Some(rate) = o.rate.or_else(|| l.rate.clone()) else {
        return diag(format!("{path}.rate"), "missing: every link needs a rate (e.g. rate = \"10Mbit\")");
    };
    let (rate_bps, trace, steps) = match rate {
        RateSpec::Fixed(r) if r.bps() == 0 => {
            return diag(rate_field, "must be greater than 0 (use up = false or a `down` event for a dead link)");
        }
        RateSpec::Fixed(r) => (r.bps(), None, Vec::new()),
        RateSpec::Trace { path: file, looped } => {
            let t = crate::capacity::read_trace(base, &file, looped, &rate_field)?;
            (t.mean_rate_bps(), Some(t), Vec::new())
        }
        RateSpec::Steps { path: file } => {
            let s = crate::capacity::read_steps(base, &file, &rate_field)?;
            (s[0].rate_bps, None, s)
        }
    };
    let queue = match (&o.queue, &l.queue) {
        (Some(q), _) => queue_at(q, &field("queue", true)),
        (None, Some(q)) => queue_at(q, &field("queue", false)),
        (None, None) => Queue::default(),
    };
    let model_overridden = o.loss_model.is_some() || o.loss.is_some();
    let (loss, gilbert_elliott) = resolve_loss(o.loss.or(l.loss), o.loss_model.or(l.loss_model), &if model_overridden { format!("{path}.{dir}") } else { path.to_string() })?;
    Ok(LinkDirection {
        rate_bps,
        trace,
        steps,
        delay_ns: o.delay.or(l.delay).unwrap_or_default().as_nanos(),
        jitter_ns: o.jitter.or(l.jitter).unwrap_or_default().as_nanos(),
        jitter_distribution: o.jitter_distribution.or(l.jitter_distribution).unwrap_or_default(),
        reorder: o.reorder.or(l.reorder).unwrap_or(false),
        loss,
        gilbert_elliott,
        duplicate: o.duplicate.or(l.duplicate).map_or(0.0, |p| p.value()),
        queue,
    })
}

/// Names of nodes, links and interfaces: no separators our own syntax uses
/// (`node:iface`), no whitespace, nothing a shell or netns name would choke on.
fn check_name(name: &str, path: &str, what: &str) -> Result<(), Diag> {
    let ok = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !ok {
        return diag(path, format!("invalid {what} name {name:?}: use letters, digits, '_', '-' and '.'"));
    }
    Ok(())
}

/// Sort key that puts `eth2` before `eth10`.
fn natural_key(name: &str) -> (String, u64, String) {
    let digits_at = name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, num) = name.split_at(digits_at);
    (stem.to_string(), num.parse().unwrap_or(0), name.to_string())
}

/// One end of a link after checks: node id and chosen interface name.
struct End {
    node: usize,
    iface: String,
}

fn build(d: &Draft) -> Result<(Vec<Node>, Vec<Link>), Diag> {
    // Nodes: unique names.
    let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
    for (id, n) in d.nodes.iter().enumerate() {
        check_name(&n.name, &format!("{}.name", n.origin), "node")?;
        if let Some(&first) = by_name.get(n.name.as_str()) {
            let first = &d.nodes[first].origin;
            let by = if first == "topology" { "the topology generator".to_string() } else { first.clone() };
            return diag(format!("{}.name", n.origin), format!("duplicate node name {:?} (already defined by {by})", n.name));
        }
        by_name.insert(&n.name, id);
    }

    // Links: unique names, known distinct endpoints.
    let mut link_names: BTreeMap<&str, &str> = BTreeMap::new();
    let mut ends: Vec<[End; 2]> = Vec::new();
    for l in &d.links {
        let name_path = if l.origin == "topology" { l.origin.clone() } else { format!("{}.name", l.origin) };
        check_name(&l.name, &name_path, "link")?;
        if let Some(first) = link_names.insert(&l.name, &l.origin) {
            let hint = if l.origin.starts_with("links[") { "; give one of them a `name`" } else { "" };
            return diag(name_path, format!("duplicate link name {:?} (also {first}){hint}", l.name));
        }
        let mut pair = Vec::new();
        for (side, e) in [("a", &l.a), ("b", &l.b)] {
            let path = format!("{}.{side}", l.origin);
            let Some(&node) = by_name.get(e.node.as_str()) else {
                return diag(path, format!("unknown node {:?}", e.node));
            };
            if let Some(i) = &e.iface {
                check_name(i, &path, "interface")?;
                if i.len() > MAX_IFNAME {
                    return diag(path, format!("interface name {i:?} is longer than {MAX_IFNAME} characters"));
                }
            }
            pair.push(End { node, iface: e.iface.clone().unwrap_or_default() });
        }
        if pair[0].node == pair[1].node {
            return diag(format!("{}.b", l.origin), format!("a link needs two different nodes, both ends are {:?}", l.a.node));
        }
        let b = pair.pop().expect("two ends");
        let a = pair.pop().expect("two ends");
        ends.push([a, b]);
    }

    assign_iface_names(d, &mut ends)?;
    let addrs = assign_addresses(d)?;

    // Interfaces, ordered naturally by name so `eth{i}` has index i.
    let mut node_ifaces: Vec<Vec<(String, usize, usize)>> = vec![Vec::new(); d.nodes.len()]; // (name, link, side)
    for (lid, pair) in ends.iter().enumerate() {
        for (side, e) in pair.iter().enumerate() {
            node_ifaces[e.node].push((e.iface.clone(), lid, side));
        }
    }
    let mut index_of: BTreeMap<(usize, usize), usize> = BTreeMap::new(); // (link, side) -> iface index
    for ifaces in &mut node_ifaces {
        ifaces.sort_by_key(|(name, _, _)| natural_key(name));
        for (idx, (_, lid, side)) in ifaces.iter().enumerate() {
            index_of.insert((*lid, *side), idx);
        }
    }

    let links: Vec<Link> = d
        .links
        .iter()
        .enumerate()
        .map(|(lid, l)| {
            let (subnet, addr_a, addr_b) = addrs[lid];
            let end = |side: usize, addr: Ipv4Addr| {
                let e = &ends[lid][side];
                LinkEnd { node: e.node, node_name: d.nodes[e.node].name.clone(), iface: index_of[&(lid, side)], iface_name: e.iface.clone(), addr }
            };
            Link { id: lid, name: l.name.clone(), a: end(0, addr_a), b: end(1, addr_b), subnet, ab: l.ab.clone(), ba: l.ba.clone(), up: l.up, mtu: l.mtu, radio: l.radio }
        })
        .collect();

    let nodes = d
        .nodes
        .iter()
        .enumerate()
        .map(|(id, n)| {
            let interfaces = node_ifaces[id]
                .iter()
                .enumerate()
                .map(|(index, (name, lid, side))| {
                    let link = &links[*lid];
                    let (me, peer) = if *side == 0 { (&link.a, &link.b) } else { (&link.b, &link.a) };
                    Interface { index, name: name.clone(), addr: me.addr, prefix: link.subnet.len, link: *lid, peer: peer.node, peer_iface: peer.iface, mtu: link.mtu }
                })
                .collect();
            Node { id, name: n.name.clone(), kind: n.kind, stack: n.stack.clone(), interfaces, loopback: Vec::new(), routing: Routing::default() }
        })
        .collect();
    Ok((nodes, links))
}

/// Explicit interface names stay; the others get the lowest free `eth{n}`
/// on their node, in link order.
fn assign_iface_names(d: &Draft, ends: &mut [[End; 2]]) -> Result<(), Diag> {
    let mut used: BTreeMap<(usize, String), String> = BTreeMap::new();
    for (lid, pair) in ends.iter().enumerate() {
        for (side, e) in pair.iter().enumerate() {
            if e.iface.is_empty() {
                continue;
            }
            let origin = &d.links[lid].origin;
            let path = format!("{origin}.{}", if side == 0 { "a" } else { "b" });
            if let Some(first) = used.insert((e.node, e.iface.clone()), origin.clone()) {
                return diag(path, format!("interface {}:{} is already used by {first}", d.nodes[e.node].name, e.iface));
            }
        }
    }
    let mut next: BTreeMap<usize, u32> = BTreeMap::new();
    for (lid, pair) in ends.iter_mut().enumerate() {
        for e in pair.iter_mut() {
            if !e.iface.is_empty() {
                continue;
            }
            let n = next.entry(e.node).or_insert(0);
            while used.contains_key(&(e.node, format!("eth{n}"))) {
                *n += 1;
            }
            e.iface = format!("eth{n}");
            used.insert((e.node, e.iface.clone()), d.links[lid].origin.clone());
            *n += 1;
        }
    }
    Ok(())
}

/// Subnet and both addresses of every link.
///
/// Links with any explicit addressing are checked first (and against each
/// other for overlaps); the rest get `10.(L>>8).(L&255).0/24` for link id L,
/// moving on to the next free /24 if that one collides with an explicit one.
fn assign_addresses(d: &Draft) -> Result<Vec<(Prefix, Ipv4Addr, Ipv4Addr)>, Diag> {
    let mut out: Vec<Option<(Prefix, Ipv4Addr, Ipv4Addr)>> = vec![None; d.links.len()];
    let mut explicit: Vec<(Prefix, usize)> = Vec::new();
    for (lid, l) in d.links.iter().enumerate() {
        if let Some(subnet) = explicit_subnet(l)? {
            let path = subnet_path(l);
            if let Some((other, olid)) = explicit.iter().find(|(p, _)| p.overlaps(&subnet)) {
                return diag(path, format!("subnet {subnet} overlaps {other} of {}", d.links[*olid].origin));
            }
            explicit.push((subnet, lid));
            out[lid] = Some(addresses_in(l, subnet)?);
        }
    }
    let mut candidate: u32 = 0;
    for (lid, l) in d.links.iter().enumerate() {
        if out[lid].is_some() {
            continue;
        }
        candidate = candidate.max(lid as u32);
        let subnet = loop {
            if candidate > 0xffff {
                return diag(&l.origin, "no free 10.x.y.0/24 subnet left for automatic addressing; give links explicit `subnet`s");
            }
            let p = Prefix::new(Ipv4Addr::new(10, (candidate >> 8) as u8, (candidate & 0xff) as u8, 0), 24);
            candidate += 1;
            if !explicit.iter().any(|(e, _)| e.overlaps(&p)) {
                break p;
            }
        };
        out[lid] = Some(addresses_in(l, subnet)?);
    }
    Ok(out.into_iter().map(|o| o.expect("every link addressed")).collect())
}

/// Where errors about a link's addressing point.
fn subnet_path(l: &DraftLink) -> String {
    if l.subnet.is_some() {
        format!("{}.subnet", l.origin)
    } else if l.a.addr.is_some() {
        format!("{}.a_addr", l.origin)
    } else {
        format!("{}.b_addr", l.origin)
    }
}

/// The subnet a link's explicit `subnet` / `a_addr` / `b_addr` imply, if any.
fn explicit_subnet(l: &DraftLink) -> Result<Option<Prefix>, Diag> {
    let from_addr = |c: &Cidr, len: u8| Prefix::new(c.addr, c.prefix.unwrap_or(len));
    if let Some(s) = l.subnet {
        let path = format!("{}.subnet", l.origin);
        let len = s.prefix.ok_or_else(|| Diag::new(&path, format!("subnet {s} needs a prefix length, e.g. \"{}/24\"", s.addr)))?;
        let p = Prefix::new(s.addr, len);
        if p.addr != s.addr {
            return diag(path, format!("subnet {s} has host bits set; did you mean {p}?"));
        }
        if len > 31 {
            return diag(path, format!("subnet {s} has no room for two addresses (use /31 or shorter)"));
        }
        return Ok(Some(p));
    }
    let a = l.a.addr.map(|c| from_addr(&c, 24));
    let b = l.b.addr.map(|c| from_addr(&c, 24));
    match (a, b) {
        (Some(a), Some(b)) if a != b => diag(format!("{}.b_addr", l.origin), format!("{} is not in a_addr's subnet {a}", l.b.addr.expect("set"))),
        (Some(p), _) | (None, Some(p)) if p.len > 31 => diag(subnet_path(l), format!("prefix /{} leaves no room for the other end (use /31 or shorter)", p.len)),
        (Some(p), _) | (None, Some(p)) => Ok(Some(p)),
        (None, None) => Ok(None),
    }
}

/// Both ends' addresses inside `subnet`: explicit ones checked, missing
/// ones from the end's preferred host number or the first free host.
fn addresses_in(l: &DraftLink, subnet: Prefix) -> Result<(Prefix, Ipv4Addr, Ipv4Addr), Diag> {
    let check = |e: &DraftEnd, field: &str| -> Result<Option<Ipv4Addr>, Diag> {
        let Some(c) = e.addr else { return Ok(None) };
        let path = format!("{}.{field}", l.origin);
        if c.prefix.is_some_and(|p| p != subnet.len) || !subnet.contains(c.addr) {
            return diag(path, format!("{c} is not in the link's subnet {subnet}"));
        }
        if !subnet.is_usable_host(c.addr) {
            return diag(path, format!("{} is the network or broadcast address of {subnet}", c.addr));
        }
        Ok(Some(c.addr))
    };
    let a = check(&l.a, "a_addr")?;
    let b = check(&l.b, "b_addr")?;
    if a.is_some() && a == b {
        return diag(format!("{}.b_addr", l.origin), "both ends have the same address");
    }
    let pick = |e: &DraftEnd, taken: Option<Ipv4Addr>| -> Result<Ipv4Addr, Diag> {
        let preferred = subnet.nth(e.host).filter(|ip| subnet.is_usable_host(*ip) && Some(*ip) != taken);
        let first_free = || (0..4u32).filter_map(|n| subnet.nth(n)).find(|ip| subnet.is_usable_host(*ip) && Some(*ip) != taken);
        preferred.or_else(first_free).ok_or_else(|| Diag::new(subnet_path(l), format!("no free address in {subnet}")))
    };
    let a = match a {
        Some(a) => a,
        None => pick(&l.a, b)?,
    };
    let b = match b {
        Some(b) => b,
        None => pick(&l.b, Some(a))?,
    };
    Ok((subnet, a, b))
}
