//! Addressing and routes: seed 000's multi-homed client with source
//! routing, explicit routes, automatic addresses.

mod common;

use common::{ip, net};
use mplab_scenario::network::{Network, Prefix, RouteOrigin, MAIN_TABLE};

fn seed000() -> Network {
    net(include_str!("data/two-gateways.toml"))
}

fn prefix(s: &str) -> Prefix {
    let (a, l) = s.split_once('/').unwrap();
    Prefix::new(ip(a), l.parse().unwrap())
}

#[test]
fn multi_homed_host_gets_per_source_tables() {
    let n = seed000();
    let client = n.node("client").unwrap();
    assert_eq!(client.interfaces[0].addr, ip("10.0.220.2"));
    assert_eq!(client.interfaces[1].addr, ip("10.0.221.2"));

    // ip rule add from 10.0.220.2 table 100 / from 10.0.221.2 table 101
    let rules: Vec<_> = client.routing.rules.iter().map(|r| (r.priority, r.from.to_string(), r.table)).collect();
    assert_eq!(rules, [(1000, "10.0.220.2/32".to_string(), 100), (1001, "10.0.221.2/32".to_string(), 101)]);

    // Each table: the interface's subnet plus a default via its gateway.
    for (i, gw) in [(0usize, "10.0.220.1"), (1, "10.0.221.1")] {
        let t = &client.routing.tables[i];
        assert_eq!(t.id, 100 + i as u32);
        assert_eq!(t.routes.len(), 2);
        assert_eq!(t.routes[0].dst, client.interfaces[i].subnet());
        assert_eq!(t.routes[0].origin, RouteOrigin::Connected);
        assert_eq!(t.routes[1].dst, Prefix::DEFAULT);
        assert_eq!(t.routes[1].nexthops[0].iface, i);
        assert_eq!(t.routes[1].nexthops[0].gateway, Some(ip(gw)));
    }

    // Main table: seed's "default via 10.0.220.1 dev eth0", the connected
    // subnets, and only the subnets better reached another way: gw2-fw.
    let main = &client.routing.main;
    let dsts: Vec<_> = main.iter().map(|r| r.dst.to_string()).collect();
    assert_eq!(dsts, ["10.0.220.0/24", "10.0.221.0/24", "10.0.3.0/24", "default"]);
    let default = &main[3];
    assert_eq!(default.nexthops.len(), 1);
    assert_eq!(default.nexthops[0].gateway, Some(ip("10.0.220.1")));
    let gw2_fw = &main[2];
    assert_eq!(gw2_fw.metric, 1);
    assert_eq!(gw2_fw.nexthops.len(), 1, "hosts keep a single next hop");
    assert_eq!(gw2_fw.nexthops[0].iface_name, "eth1");
    // The server's subnet is equally far both ways: eth0 (the default) wins.
    assert_eq!(client.lookup(None, ip("10.0.222.2")).unwrap().dst, Prefix::DEFAULT);

    // A packet bound to eth1's address leaves through gw2.
    let server = ip("10.0.222.2");
    let path = n.trace(client.id, ip("10.0.221.2"), server).unwrap();
    let names: Vec<_> = path.iter().map(|&i| n.nodes[i].name.as_str()).collect();
    assert_eq!(names, ["client", "gw2", "fw", "server"]);
    let path = n.trace(client.id, ip("10.0.220.2"), server).unwrap();
    assert_eq!(n.nodes[path[1]].name, "gw1");

    // The server is single-homed: connected + default, no policy tables.
    let s = n.node("server").unwrap();
    assert_eq!(s.routing.main.len(), 2);
    assert!(s.routing.tables.is_empty() && s.routing.rules.is_empty());

    // The firewall reaches the client's two subnets through the two gateways.
    let fw = n.node("fw").unwrap();
    let via = |p: &str| fw.routing.main.iter().find(|r| r.dst == prefix(p)).unwrap().nexthops[0].gateway.unwrap();
    assert_eq!(n.owner_of(via("10.0.220.0/24")).map(|(node, _)| n.nodes[node].name.as_str()), Some("gw1"));
    assert_eq!(n.owner_of(via("10.0.221.0/24")).map(|(node, _)| n.nodes[node].name.as_str()), Some("gw2"));
}

#[test]
fn flow_and_events_resolve_like_the_seed() {
    let n = seed000();
    let f = &n.flows[0];
    assert_eq!((f.src, f.dst, f.dport), (ip("10.0.220.2"), ip("10.0.222.2"), 5001));
    let m = f.mptcp.as_ref().unwrap();
    assert!(m.checksum);
    assert_eq!(m.cc, "cubic");
    let wan2 = n.link("wan2").unwrap().id;
    let ev: Vec<_> = n.events.iter().map(|e| (e.at_ns, e.link)).collect();
    assert_eq!(ev, [(190_000_000_000, wan2), (395_000_000_000, wan2)]);
    assert_eq!(n.probes.pcap[0].node_name, "server");
    assert_eq!(n.probes.interval_ns, 1_000_000_000);
}

#[test]
fn automatic_addresses_skip_explicit_subnets() {
    let n = seed000();
    // links 2 and 3 are automatic: 10.0.2.0/24 and 10.0.3.0/24
    assert_eq!(n.links[2].subnet, prefix("10.0.2.0/24"));
    assert_eq!(n.links[2].a.addr, ip("10.0.2.1"));
    assert_eq!(n.links[2].b.addr, ip("10.0.2.2"));
    // An explicit subnet on the automatic slot of a later link pushes it on.
    let text = include_str!("data/two-gateways.toml").replace("name = \"lan\"", "name = \"lan\"\nsubnet = \"10.0.3.0/24\"").replace(
        "a_addr = \"10.0.222.1/24\"\nb_addr = \"10.0.222.2/24\"",
        "",
    );
    let n = net(&text);
    assert_eq!(n.link("lan").unwrap().subnet, prefix("10.0.3.0/24"));
    assert_eq!(n.links[3].subnet, prefix("10.0.4.0/24"));
    // Only one end given: the other takes the first free host.
    let n = net(&include_str!("data/two-gateways.toml").replace("b_addr = \"10.0.220.1/24\"\n", ""));
    assert_eq!(n.link("wan1").unwrap().b.addr, ip("10.0.220.1"));
}

#[test]
fn explicit_routes_replace_or_add() {
    let text = format!(
        "{}\n[[routes]]\nnode = \"client\"\ndst = \"default\"\nvia = \"10.0.221.1\"\n\n[[routes]]\nnode = \"gw1\"\ndst = \"192.168.0.0/16\"\ndev = \"eth1\"\n\n[[routes]]\nnode = \"client\"\ndst = \"172.16.0.0/12\"\nvia = \"10.0.220.1\"\ntable = 7\n",
        include_str!("data/two-gateways.toml")
    );
    let n = net(&text);
    let client = n.node("client").unwrap();
    let defaults: Vec<_> = client.routing.main.iter().filter(|r| r.dst == Prefix::DEFAULT).collect();
    assert_eq!(defaults.len(), 1);
    assert_eq!(defaults[0].origin, RouteOrigin::Static);
    assert_eq!(defaults[0].nexthops[0].iface_name, "eth1");
    let gw1 = n.node("gw1").unwrap();
    let r = gw1.routing.main.iter().find(|r| r.dst == prefix("192.168.0.0/16")).unwrap();
    assert_eq!((r.nexthops[0].iface_name.as_str(), r.nexthops[0].gateway), ("eth1", None));
    let t7 = client.routing.tables.iter().find(|t| t.id == 7).unwrap();
    assert_eq!(t7.routes[0].dst, prefix("172.16.0.0/12"));
    assert_ne!(t7.id, MAIN_TABLE);
}

#[test]
fn interfaces_sort_naturally_and_auto_names_fill_gaps() {
    let mut text = String::from("name = \"x\"\n[[nodes]]\nname = \"r\"\nkind = \"router\"\n");
    for i in 0..12 {
        text += &format!("[[nodes]]\nname = \"h{i}\"\n[[links]]\na = \"r\"\nb = \"h{i}\"\nrate = 1000\n");
    }
    text += "[[nodes]]\nname = \"z\"\n[[links]]\na = \"r:eth1\"\nb = \"z\"\nrate = 1000\n";
    let n = net(&text);
    let r = n.node("r").unwrap();
    let names: Vec<_> = r.interfaces.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["eth0", "eth1", "eth2", "eth3", "eth4", "eth5", "eth6", "eth7", "eth8", "eth9", "eth10", "eth11", "eth12"]);
    // eth1 was taken explicitly by the last link, so h1's link got eth2.
    assert_eq!(n.links[r.iface("eth1").unwrap().link].b.node_name, "z");
    assert_eq!(n.links[r.iface("eth2").unwrap().link].b.node_name, "h1");
    for (i, iface) in r.interfaces.iter().enumerate() {
        assert_eq!(iface.index, i);
        let link = &n.links[iface.link];
        assert_eq!(link.end_on(r.id).unwrap().iface, i);
    }
}

#[test]
fn asymmetric_links() {
    let n = net(
        "name = \"a\"\n[[nodes]]\nname = \"c\"\n[[nodes]]\nname = \"s\"\n[[links]]\na = \"c\"\nb = \"s\"\nrate = \"100Mbit\"\ndelay = \"5ms\"\n[links.ab]\nrate = \"10Mbit\"\nloss = \"1%\"\n[links.ba]\ndelay = \"50ms\"\nloss_model = { gilbert_elliott = { p_gb = 0.01, p_bg = 0.3, loss_good = 0, loss_bad = 0.5 } }\n",
    );
    let l = &n.links[0];
    assert_eq!((l.ab.rate_bps, l.ab.delay_ns, l.ab.loss), (10_000_000, 5_000_000, 0.01));
    assert_eq!((l.ba.rate_bps, l.ba.delay_ns, l.ba.loss), (100_000_000, 50_000_000, 0.0));
    assert_eq!(l.ba.gilbert_elliott.unwrap().loss_bad, 0.5);
    assert!(l.ab.gilbert_elliott.is_none());
}
