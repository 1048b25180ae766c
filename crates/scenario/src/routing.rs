//! Static routes for every node, computed once from the topology.
//!
//! For each link subnet a breadth-first search from the *routers* on that
//! link gives every node its hop count to the subnet. Hosts never forward,
//! so the search never passes through one; a host endpoint of a subnet is
//! reachable through the router on the other end (or, between two hosts, only
//! by each other).
//!
//! - Routers keep every neighbour one hop closer as an equal-cost next hop
//!   (ECMP), so a fat-tree edge switch has k/2 ways up.
//! - Single-homed hosts get their connected route and a default route via
//!   their router.
//! - Multi-homed hosts get a main table with a default via their first
//!   router and, for subnets best reached through another interface, a route
//!   with one next hop (lowest interface index wins ties), plus
//!   seed 000's source routing: a table per interface whose default leaves
//!   through it, selected by `from <addr>/32`. Without it the kernel would
//!   send every subflow out of the main table's interface, whatever its
//!   source address.
//!
//! Routes are computed on all links, including those that start down: they
//! are static configuration, and a down link simply drops.

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use crate::error::{diag, Diag};
use crate::network::{
    Link, NextHop, Node, NodeKind, Prefix, Route, RouteOrigin, RouteTable, Rule, MAIN_TABLE, POLICY_RULE_PRIORITY_BASE, POLICY_TABLE_BASE,
};
use crate::schema::{RouteSpec, TableRef};

const UNREACHED: u32 = u32::MAX;

/// A virtual address announced by routers (load balancers' VIP, as BGP
/// anycast would): routes to it lead to the nearest of `at`; `at` itself
/// sends it on to `owners` (its directly linked backends, by ECMP unless a
/// balancer picks), and the owners hold it on their loopback.
#[derive(Debug, Clone)]
pub(crate) struct Anycast {
    pub dst: Prefix,
    pub at: Vec<usize>,
    pub owners: Vec<usize>,
}

pub(crate) fn compute(nodes: &mut [Node], links: &[Link], anycast: &[Anycast]) {
    let n = nodes.len();
    let is_router: Vec<bool> = nodes.iter().map(|x| x.kind == NodeKind::Router).collect();
    let mut computed: Vec<Vec<Route>> = vec![Vec::new(); n];
    let mut bfs = Bfs { dist: vec![UNREACHED; n], queue: VecDeque::new() };

    for link in links {
        let sources: Vec<usize> = [link.a.node, link.b.node].into_iter().filter(|&x| is_router[x]).collect();
        bfs.routes_to(nodes, links, &is_router, &sources, link.subnet, |x| x == link.a.node || x == link.b.node, &mut computed);
    }
    for a in anycast {
        bfs.routes_to(nodes, links, &is_router, &a.at, a.dst, |x| a.at.contains(&x) || a.owners.contains(&x), &mut computed);
        for &lb in &a.at {
            let mut hops: Vec<NextHop> = nodes[lb]
                .interfaces
                .iter()
                .filter(|i| a.owners.contains(&i.peer))
                .map(|i| NextHop { iface: i.index, iface_name: i.name.clone(), gateway: Some(peer_addr(links, i.link, lb)) })
                .collect();
            hops.sort();
            hops.dedup_by_key(|h| h.iface);
            computed[lb].push(Route { dst: a.dst, nexthops: hops, metric: 1, origin: RouteOrigin::Computed });
        }
    }

    for (x, routes) in computed.into_iter().enumerate() {
        let node = &mut nodes[x];
        let connected: Vec<Route> = node
            .interfaces
            .iter()
            .map(|i| Route {
                dst: i.subnet(),
                nexthops: vec![NextHop { iface: i.index, iface_name: i.name.clone(), gateway: None }],
                metric: 0,
                origin: RouteOrigin::Connected,
            })
            .collect();
        let default_via = |i: &crate::network::Interface| Route {
            dst: Prefix::DEFAULT,
            nexthops: vec![NextHop { iface: i.index, iface_name: i.name.clone(), gateway: Some(peer_addr(links, i.link, x)) }],
            metric: 1,
            origin: RouteOrigin::Computed,
        };
        let mut main = connected.clone();
        match (node.kind, node.interfaces.len()) {
            (NodeKind::Router, _) => main.extend(routes),
            (NodeKind::Host, 0) => {}
            (NodeKind::Host, 1) => {
                // Everything not on the link goes to the router; a host peer
                // doesn't forward, so there is nothing beyond it.
                if is_router[node.interfaces[0].peer] {
                    main.push(default_via(&node.interfaces[0]));
                }
            }
            (NodeKind::Host, _) => {
                let default = node.interfaces.iter().find(|i| is_router[i.peer]).map(default_via);
                // A subnet route through the same next hop as the default
                // adds nothing (link subnets never overlap), so only the
                // subnets best reached some other way are listed.
                let redundant = |r: &Route| default.as_ref().is_some_and(|d| d.nexthops == r.nexthops);
                main.extend(routes.into_iter().filter(|r| !redundant(r)));
                main.extend(default);
                source_tables(node, links, x);
            }
        }
        node.routing.main = main;
    }
}

/// Seed 000's source routing on `node` (id `x`): a table per interface
/// whose default leaves through it, selected by `from <addr>/32`. Multi-
/// homed hosts get it; so do the gateways of a tunnel, routers whose own
/// connection must leave by the access link its subflow's address is on
/// (forwarded packets never carry a gateway's address as their source).
pub(crate) fn source_tables(node: &mut Node, links: &[Link], x: usize) {
    if !node.routing.rules.is_empty() {
        return;
    }
    for iface in &node.interfaces {
        let table = POLICY_TABLE_BASE + iface.index as u32;
        let hop = |gateway| vec![NextHop { iface: iface.index, iface_name: iface.name.clone(), gateway }];
        let connected = Route { dst: iface.subnet(), nexthops: hop(None), metric: 0, origin: RouteOrigin::Connected };
        let default = Route { dst: Prefix::DEFAULT, nexthops: hop(Some(peer_addr(links, iface.link, x))), metric: 1, origin: RouteOrigin::Computed };
        node.routing.tables.push(RouteTable { id: table, routes: vec![connected, default] });
        node.routing.rules.push(Rule { priority: POLICY_RULE_PRIORITY_BASE + iface.index as u32, from: Prefix::host(iface.addr), table });
    }
}

struct Bfs {
    dist: Vec<u32>,
    queue: VecDeque<usize>,
}

impl Bfs {
    /// Routes towards `dst`, reachable at the routers `sources`, for every
    /// node but those `skip` names: hop counts by breadth-first search
    /// through routers; routers keep every neighbour one hop closer (ECMP),
    /// hosts the first.
    #[allow(clippy::too_many_arguments)]
    fn routes_to(&mut self, nodes: &[Node], links: &[Link], is_router: &[bool], sources: &[usize], dst: Prefix, skip: impl Fn(usize) -> bool, computed: &mut [Vec<Route>]) {
        let dist = &mut self.dist;
        dist.iter_mut().for_each(|d| *d = UNREACHED);
        self.queue.clear();
        for &x in sources {
            dist[x] = 0;
            self.queue.push_back(x);
        }
        while let Some(y) = self.queue.pop_front() {
            // Only routers forward, and only routers are in the queue.
            for iface in &nodes[y].interfaces {
                let x = iface.peer;
                if dist[x] == UNREACHED {
                    dist[x] = dist[y] + 1;
                    if is_router[x] {
                        self.queue.push_back(x);
                    }
                }
            }
        }
        for (x, node) in nodes.iter().enumerate() {
            if skip(x) || dist[x] == UNREACHED {
                continue;
            }
            let mut hops: Vec<NextHop> = node
                .interfaces
                .iter()
                .filter(|i| is_router[i.peer] && dist[i.peer] != UNREACHED && dist[i.peer] + 1 == dist[x])
                .map(|i| NextHop { iface: i.index, iface_name: i.name.clone(), gateway: Some(peer_addr(links, i.link, x)) })
                .collect();
            hops.sort();
            if !is_router[x] {
                hops.truncate(1);
            }
            computed[x].push(Route { dst, nexthops: hops, metric: dist[x], origin: RouteOrigin::Computed });
        }
    }
}

/// The address of the other end of `link`, seen from `node`.
fn peer_addr(links: &[Link], link: usize, node: usize) -> Ipv4Addr {
    let l = &links[link];
    if l.a.node == node {
        l.b.addr
    } else {
        l.a.addr
    }
}

/// Applies explicit `[[routes]]`: a route to the same destination in the
/// same table is replaced, otherwise the route is added.
pub(crate) fn apply_static(specs: &[RouteSpec], nodes: &mut [Node]) -> Result<(), Diag> {
    for (i, r) in specs.iter().enumerate() {
        let path = format!("routes[{i}]");
        let Some(node) = nodes.iter_mut().find(|n| n.name == r.node) else {
            return diag(format!("{path}.node"), format!("unknown node {:?}", r.node));
        };
        let dst = parse_dst(&r.dst).map_err(|m| Diag::new(format!("{path}.dst"), m))?;
        let iface = match (&r.dev, r.via) {
            (Some(dev), _) => node.iface(dev).ok_or_else(|| Diag::new(format!("{path}.dev"), format!("{} has no interface {dev:?}", r.node)))?,
            (None, Some(via)) => node
                .interfaces
                .iter()
                .find(|i| i.subnet().contains(via))
                .ok_or_else(|| Diag::new(format!("{path}.via"), format!("{via} is not on any subnet of {}", r.node)))?,
            (None, None) => return diag(path, "give `via` (a gateway address) and/or `dev` (an interface)"),
        };
        if let Some(via) = r.via {
            if !iface.subnet().contains(via) {
                return diag(format!("{path}.via"), format!("{via} is not on {}'s subnet {}", iface.name, iface.subnet()));
            }
            if via == iface.addr {
                return diag(format!("{path}.via"), format!("{via} is {}'s own address", r.node));
            }
        }
        let route = Route {
            dst,
            nexthops: vec![NextHop { iface: iface.index, iface_name: iface.name.clone(), gateway: r.via }],
            metric: 0,
            origin: RouteOrigin::Static,
        };
        let table = match r.table {
            None | Some(TableRef::Main) => MAIN_TABLE,
            Some(TableRef::Id(0)) => return diag(format!("{path}.table"), "table 0 is reserved"),
            Some(TableRef::Id(n)) => n,
        };
        let routes = if table == MAIN_TABLE {
            &mut node.routing.main
        } else {
            let tables = &mut node.routing.tables;
            let pos = match tables.iter().position(|t| t.id == table) {
                Some(p) => p,
                None => {
                    tables.push(RouteTable { id: table, routes: Vec::new() });
                    tables.len() - 1
                }
            };
            &mut tables[pos].routes
        };
        match routes.iter_mut().find(|x| x.dst == dst) {
            Some(existing) => *existing = route,
            None => routes.push(route),
        }
    }
    Ok(())
}

fn parse_dst(s: &str) -> Result<Prefix, String> {
    if s == "default" {
        return Ok(Prefix::DEFAULT);
    }
    parse_prefix(s)
}

/// `"a.b.c.d/len"` with no host bits set.
pub(crate) fn parse_prefix(s: &str) -> Result<Prefix, String> {
    let c: crate::schema::Cidr = s.parse()?;
    let Some(len) = c.prefix else {
        return Err(format!("{s:?} needs a prefix length (e.g. \"{s}/24\", or \"{s}/32\" for one host)"));
    };
    let p = Prefix::new(c.addr, len);
    if p.addr != c.addr {
        return Err(format!("{s} has host bits set; did you mean {p}?"));
    }
    Ok(p)
}
