//! Load balancers' virtual addresses: before routes are computed, each
//! `load_balancer` middlebox's VIP goes on its backends' loopback and is
//! announced by the balancer routers (several instances of one VIP share
//! the traffic by ECMP, as behind a router running BGP).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use crate::error::{diag, Diag};
use crate::network::{Node, NodeKind, Prefix};
use crate::routing::Anycast;
use crate::schema::Spec;

pub(crate) fn place(spec: &Spec, nodes: &mut [Node]) -> Result<Vec<Anycast>, Diag> {
    let mut by_vip: BTreeMap<Ipv4Addr, (Vec<usize>, Vec<usize>, String)> = BTreeMap::new();
    for (i, m) in spec.middleboxes.iter().enumerate() {
        if m.kind() != "load_balancer" {
            continue;
        }
        let path = format!("middleboxes[{i}]");
        // Missing fields are reported with the middlebox's other checks.
        let (Some(vip), Some(lb_name), Some(backends)) = (m.field::<Ipv4Addr>("vip"), m.node.as_ref(), m.field::<Vec<String>>("backends")) else { continue };
        let Some(lb) = nodes.iter().position(|n| &n.name == lb_name) else { continue };
        if nodes[lb].kind != NodeKind::Router {
            continue;
        }
        if let Some(owner) = nodes.iter().find(|n| n.interfaces.iter().any(|x| x.addr == vip || x.subnet().contains(vip))) {
            return diag(format!("{path}.vip"), format!("{vip} is on a link subnet of {}; a VIP must be an address of its own", owner.name));
        }
        let mut ids = Vec::new();
        for (j, b) in backends.iter().enumerate() {
            let bpath = format!("{path}.backends[{j}]");
            let id = nodes.iter().position(|n| &n.name == b).ok_or_else(|| Diag::new(&bpath, format!("unknown node {b:?}")))?;
            if nodes[id].kind != NodeKind::Host {
                return diag(bpath, format!("{b:?} is a router; backends are hosts"));
            }
            if !nodes[lb].interfaces.iter().any(|x| x.peer == id) {
                return diag(bpath, format!("{b:?} has no link to the balancer's router {lb_name:?}"));
            }
            if ids.contains(&id) {
                return diag(bpath, format!("{b:?} is listed twice"));
            }
            ids.push(id);
        }
        let e = by_vip.entry(vip).or_insert_with(|| (Vec::new(), ids.clone(), path.clone()));
        let (mut a, mut b) = (e.1.clone(), ids.clone());
        a.sort_unstable();
        b.sort_unstable();
        if a != b {
            return diag(format!("{path}.backends"), format!("another balancer of {vip} ({}) has other backends; instances of one VIP share theirs", e.2));
        }
        if e.0.contains(&lb) {
            return diag(format!("{path}.node"), format!("{lb_name:?} already balances {vip}"));
        }
        e.0.push(lb);
    }
    let mut out = Vec::new();
    for (vip, (at, owners, _)) in by_vip {
        for &b in &owners {
            if !nodes[b].loopback.contains(&vip) {
                nodes[b].loopback.push(vip);
            }
        }
        out.push(Anycast { dst: Prefix::host(vip), at, owners });
    }
    Ok(out)
}
