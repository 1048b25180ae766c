//! Every `[topology]` generator: node and link counts, names, addresses,
//! and that the computed routes deliver between every pair of hosts.

mod common;

use common::{count_paths, error, ip, net};
use mplab_scenario::network::{Network, NodeKind, Queue};

/// The queue a generator passes on: its table as written and where it is
/// (crates/backend checks it; tests/queues.rs there).
fn queue(table: &str, path: &str) -> Queue {
    Queue::new(toml::from_str(table).unwrap(), path)
}

fn count(net: &Network, kind: NodeKind, prefix: &str) -> usize {
    net.nodes.iter().filter(|n| n.kind == kind && n.name.starts_with(prefix)).count()
}

/// Every host reaches every other host's first address.
fn all_hosts_reach_each_other(net: &Network) {
    let hosts: Vec<_> = net.nodes.iter().filter(|n| n.kind == NodeKind::Host).collect();
    for a in &hosts {
        for b in &hosts {
            if a.id == b.id {
                continue;
            }
            let src = a.interfaces[0].addr;
            let dst = b.interfaces[0].addr;
            if let Err(e) = net.trace(a.id, src, dst) {
                panic!("{} -> {}: {e}", a.name, b.name);
            }
        }
    }
}

#[test]
fn parallel_paths_with_per_path_lists() {
    let n = net(r#"
name = "p"
[topology]
kind = "parallel"
paths = 3
rate = ["10Mbit", "20Mbit", "5Mbit"]
delay = "10ms"
loss = ["0%", "1%", "0%"]
queue = { kind = "droptail", packets = 50 }
"#);
    assert_eq!(n.nodes.len(), 2);
    assert_eq!(n.links.len(), 3);
    let client = n.node("client").unwrap();
    let server = n.node("server").unwrap();
    for i in 0..3 {
        let l = &n.links[i];
        assert_eq!(l.name, format!("path{i}"));
        assert_eq!(l.a.node_name, "client");
        assert_eq!(l.a.iface_name, format!("eth{i}"));
        assert_eq!(l.b.iface_name, format!("eth{i}"));
        // seed convention: server .1, client .2
        assert_eq!(client.interfaces[i].addr, ip(&format!("10.0.{i}.2")));
        assert_eq!(server.interfaces[i].addr, ip(&format!("10.0.{i}.1")));
        assert_eq!(l.ab.delay_ns, 10_000_000);
        assert_eq!(l.ab.queue, queue("kind = \"droptail\"\npackets = 50", "topology.queue"));
    }
    assert_eq!(n.links[1].ab.rate_bps, 20_000_000);
    assert_eq!(n.links[1].ba.loss, 0.01);
    assert_eq!(n.links[2].ba.rate_bps, 5_000_000);
    // Both hosts are multi-homed: one policy table per interface.
    assert_eq!(client.routing.tables.len(), 3);
    assert_eq!(client.routing.rules.len(), 3);
    all_hosts_reach_each_other(&n);
}

#[test]
fn parallel_list_length_must_match_paths() {
    let e = error("name = \"p\"\n[topology]\nkind = \"parallel\"\npaths = 3\nrate = [\"10Mbit\", \"20Mbit\"]\n");
    assert_eq!(e, "scenario.toml:5:8: topology.rate: has 2 entries but paths = 3; give one value or one per path");
}

#[test]
fn dumbbell() {
    let n = net(r#"
name = "d"
[topology]
kind = "dumbbell"
pairs = 3
access_rate = "100Mbit"
access_delay = "1ms"
bottleneck_rate = "10Mbit"
bottleneck_delay = "20ms"
bottleneck_queue = { kind = "red", min_th = "30KB", max_th = "90KB", max_p = 0.1, limit = "400KB" }
"#);
    assert_eq!(count(&n, NodeKind::Host, "l"), 3);
    assert_eq!(count(&n, NodeKind::Host, "r"), 3);
    assert_eq!(count(&n, NodeKind::Router, ""), 2);
    assert_eq!(n.links.len(), 7);
    let b = n.link("left-right").unwrap();
    assert_eq!(b.ab.rate_bps, 10_000_000);
    assert_eq!(b.ab.queue, queue("kind = \"red\"\nmin_th = \"30KB\"\nmax_th = \"90KB\"\nmax_p = 0.1\nlimit = \"400KB\"", "topology.bottleneck_queue"));
    assert_eq!(n.link("l0-left").unwrap().ab.queue, Queue::default(), "no access_queue: the default");
    assert!(n.link("l2-left").is_some() && n.link("right-r0").is_some());
    all_hosts_reach_each_other(&n);
    let path = n.trace(n.node("l0").unwrap().id, ip("10.0.0.1"), n.node("r2").unwrap().interfaces[0].addr).unwrap();
    let names: Vec<_> = path.iter().map(|&i| n.nodes[i].name.as_str()).collect();
    assert_eq!(names, ["l0", "left", "right", "r2"]);
}

#[test]
fn star() {
    let n = net(r#"
name = "s"
[topology]
kind = "star"
hosts = 4
rate = "10Mbit"
delay = "2ms"
queue = { kind = "droptail", bytes = "64KB" }
"#);
    assert_eq!(count(&n, NodeKind::Host, "h"), 4);
    assert_eq!(count(&n, NodeKind::Router, "hub"), 1);
    assert_eq!(n.links.len(), 4);
    let l = n.link("h3-hub").unwrap();
    assert_eq!((l.ab.rate_bps, l.ba.delay_ns), (10_000_000, 2_000_000));
    assert_eq!(l.ba.queue, queue("kind = \"droptail\"\nbytes = \"64KB\"", "topology.queue"));
    all_hosts_reach_each_other(&n);
    let path = n.trace(n.node("h1").unwrap().id, n.node("h1").unwrap().interfaces[0].addr, n.node("h2").unwrap().interfaces[0].addr).unwrap();
    let names: Vec<_> = path.iter().map(|&i| n.nodes[i].name.as_str()).collect();
    assert_eq!(names, ["h1", "hub", "h2"]);
}

#[test]
fn khalili_shared_bottleneck() {
    let n = net(r#"
name = "k"
[topology]
kind = "khalili"
n1 = 2
n2 = 3
ap1_rate = "20Mbit"
ap2_rate = "30Mbit"
ap_delay = "10ms"
"#);
    assert_eq!(count(&n, NodeKind::Host, "mp"), 2);
    assert_eq!(count(&n, NodeKind::Host, "tcp"), 3);
    assert_eq!(count(&n, NodeKind::Router, "ap"), 2);
    assert_eq!(n.nodes.len(), 2 + 3 + 3 + 1);
    assert_eq!(n.links.len(), 2 * 2 + 3 + 3);
    let mp0 = n.node("mp0").unwrap();
    assert_eq!(mp0.interfaces.len(), 2);
    assert_eq!(n.links[mp0.interfaces[0].link].name, "mp0-ap1");
    assert_eq!(n.links[mp0.interfaces[1].link].name, "mp0-ap2");
    assert_eq!(n.node("tcp2").unwrap().interfaces.len(), 1);
    assert_eq!(n.link("ap2-core").unwrap().ab.rate_bps, 30_000_000);
    assert_eq!(n.link("core-server").unwrap().ab.rate_bps, 1_000_000_000);
    all_hosts_reach_each_other(&n);
    // A multipath user's second address really leaves through ap2, where
    // it shares the bottleneck with the TCP users.
    let server = n.node("server").unwrap().interfaces[0].addr;
    let path = n.trace(mp0.id, mp0.interfaces[1].addr, server).unwrap();
    assert_eq!(n.nodes[path[1]].name, "ap2");
    let path = n.trace(mp0.id, mp0.interfaces[0].addr, server).unwrap();
    assert_eq!(n.nodes[path[1]].name, "ap1");
}

fn fattree(k: u32) -> Network {
    net(&format!("name = \"ft\"\n[topology]\nkind = \"fattree\"\nk = {k}\nrate = \"10Mbit\"\ndelay = \"1ms\"\n"))
}

#[test]
fn fattree_k4_counts_and_reachability() {
    let n = fattree(4);
    assert_eq!(count(&n, NodeKind::Host, "h"), 16);
    assert_eq!(count(&n, NodeKind::Router, "core"), 4);
    assert_eq!(count(&n, NodeKind::Router, "agg"), 8);
    assert_eq!(count(&n, NodeKind::Router, "edge"), 8);
    assert_eq!(n.links.len(), 16 + 16 + 16);
    for r in n.nodes.iter().filter(|x| x.kind == NodeKind::Router) {
        assert_eq!(r.interfaces.len(), 4, "{} has k ports", r.name);
    }
    all_hosts_reach_each_other(&n);
}

#[test]
fn fattree_k8_counts() {
    let n = fattree(8);
    assert_eq!(count(&n, NodeKind::Host, "h"), 128);
    assert_eq!(count(&n, NodeKind::Router, "core"), 16);
    assert_eq!(count(&n, NodeKind::Router, "agg"), 32);
    assert_eq!(count(&n, NodeKind::Router, "edge"), 32);
    assert_eq!(n.links.len(), 3 * 128);
    // Reachability from one host in each pod to every host.
    let hosts: Vec<_> = n.nodes.iter().filter(|x| x.kind == NodeKind::Host).collect();
    for a in hosts.iter().step_by(16) {
        for b in &hosts {
            if a.id != b.id {
                n.trace(a.id, a.interfaces[0].addr, b.interfaces[0].addr).unwrap();
            }
        }
    }
}

#[test]
fn fattree_ecmp_has_half_k_squared_paths_between_pods() {
    for k in [4u32, 8] {
        let n = fattree(k);
        let half = (k / 2) as usize;
        let h = |i: u32| n.node(&format!("h{i}")).unwrap();
        let per_pod = k * k / 4;
        let src = h(0);
        let other_pod = h(per_pod * (k - 1) + 1);
        let same_pod_other_edge = h(k / 2);
        let same_edge = h(1);
        let paths = |dst: &mplab_scenario::network::Node| count_paths(&n, src.id, Some(src.interfaces[0].addr), dst.interfaces[0].addr, 0);
        assert_eq!(paths(other_pod), half * half, "k={k}: between pods");
        assert_eq!(paths(same_pod_other_edge), half, "k={k}: within a pod");
        assert_eq!(paths(same_edge), 1, "k={k}: same edge");

        // Next-hop counts along the way to another pod's host subnet.
        let subnet = other_pod.interfaces[0].subnet();
        let route_on = |name: &str| n.node(name).unwrap().routing.main.iter().find(|r| r.dst == subnet).unwrap().nexthops.len();
        assert_eq!(route_on("edge0_0"), half, "edge goes up through every aggregation switch");
        assert_eq!(route_on("agg0_0"), half, "aggregation goes up through its k/2 cores");
        assert_eq!(route_on("core0"), 1, "a core has one way down");
        // All (k/2)^2 cores carry the flow: each is one hop from the destination pod.
        for j in 0..half * half {
            let core = n.node(&format!("core{j}")).unwrap();
            assert_eq!(core.routing.main.iter().find(|r| r.dst == subnet).unwrap().metric, 2);
        }
    }
}

#[test]
fn fattree_k_must_be_even() {
    let e = error("name = \"ft\"\n\n[topology]\nkind = \"fattree\"\nk = 5\nrate = \"10Mbit\"\n");
    assert_eq!(e, "scenario.toml:5:5: topology.k: a fat-tree needs an even k between 2 and 12, got 5");
}

#[test]
fn generator_combines_with_explicit_nodes_and_links() {
    // A dumbbell plus a third router hanging off `right`, with a server behind it.
    let n = net(r#"
name = "combo"
[topology]
kind = "dumbbell"
pairs = 1
access_rate = "100Mbit"
bottleneck_rate = "10Mbit"

[[nodes]]
name = "fw"
kind = "router"

[[nodes]]
name = "srv"

[[links]]
a = "right"
b = "fw"
rate = "1Gbit"

[[links]]
a = "fw"
b = "srv"
rate = "1Gbit"

[[middleboxes]]
kind = "strip_mptcp"
node = "fw"
on = "syn"

[[flows]]
from = "l0"
to = "srv"
transport = "mptcp"
"#);
    assert_eq!(n.nodes.len(), 6);
    assert_eq!(n.links.len(), 5);
    assert_eq!(n.links[3].name, "right-fw");
    // right's explicit link becomes its third interface
    assert_eq!(n.node("right").unwrap().iface("eth2").unwrap().link, 3);
    let f = &n.flows[0];
    let path = n.trace(f.from, f.src, f.dst).unwrap();
    assert_eq!(path.len(), 5);
    all_hosts_reach_each_other(&n);
}
