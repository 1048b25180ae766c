//! Flows, MPTCP endpoints, events, middleboxes and probes resolve to ids
//! and plain numbers.

mod common;

use common::{ip, net};
use mplab_scenario::network::{App, Direction, EndpointFlag, LinkAction, MiddleboxAction, Placement};

const GW: &str = include_str!("data/two-gateways.toml");

#[test]
fn flows_apps_ports_and_overrides() {
    let n = net(&format!(
        r#"{GW}
[transport.tcp]
rcv_buf = "2MB"

[[flows]]
name = "dl"
from = "client"
to = "server"
transport = "tcp"
app = "download"
bytes = "10MB"
start = "1s"
stop = "20s"

[[flows]]
name = "rated"
from = "client"
to = "server"
from_addr = "10.0.221.2"
transport = "mptcp"
app = "rate"
rate = "7.5Mbit"
path_manager = "ndiffports"
subflows = 3
snd_buf = "85.3KB"

[[flows]]
name = "rr"
from = "server"
to = "client"
transport = "mptcp"
app = "request"
request_size = "100B"
response_size = "1MiB"
"#
    ));
    // flow 0 took 5001 explicitly; dl (index 1) gets 5002, rated 5003
    let ports: Vec<_> = n.flows.iter().map(|f| (f.name.as_str(), f.sport, f.dport)).collect();
    assert_eq!(ports, [("iperf", 49152, 5001), ("dl", 49153, 5002), ("rated", 49154, 5003), ("rr", 49155, 5004)]);
    let dl = n.flow("dl").unwrap();
    // A byte-stream application keeps its fields for crates/backend's
    // registry (which checks them: crates/backend/tests/apps.rs).
    let App::Stream(t) = &dl.app else { panic!("{:?}", dl.app) };
    assert_eq!((t.table.kind.as_str(), t.path.as_str()), ("download", "flows[1]"));
    assert_eq!(t.table.fields.get("bytes").and_then(|v| v.as_str()), Some("10MB"));
    assert_eq!((dl.start_ns, dl.stop_ns), (1_000_000_000, 20_000_000_000));
    assert_eq!(dl.tcp.rcv_buf, Some(2_000_000));
    assert!(dl.mptcp.is_none());
    let rated = n.flow("rated").unwrap();
    assert_eq!(rated.src, ip("10.0.221.2"));
    assert_eq!(rated.app.name(), "rate");
    assert_eq!(rated.tcp.snd_buf, Some(85_300));
    assert_eq!(rated.mptcp.as_ref().unwrap().subflows, Some(3));
    assert_eq!(rated.stop_ns, n.duration_ns);
    let rr = n.flow("rr").unwrap();
    assert_eq!((rr.src, rr.dst), (ip("10.0.222.2"), ip("10.0.220.2")));
    let App::Stream(t) = &rr.app else { panic!("{:?}", rr.app) };
    assert_eq!(t.table.fields.keys().collect::<Vec<_>>(), ["request_size", "response_size"]);
    // probes default to every flow
    assert_eq!(n.probes.flows, [0, 1, 2, 3]);
}

#[test]
fn endpoints_events_middleboxes_probes() {
    let n = net(&format!(
        r#"{GW}
[[transport.mptcp.endpoints]]
node = "client"
iface = "eth1"
flags = ["subflow", "backup", "subflow"]

[[transport.mptcp.endpoints]]
node = "client"
addr = "10.0.220.2"
flags = ["signal"]

[[events]]
at = "100s"
node = "client"
iface = "eth0"
action = "set"
rate = "2Mbit"
delay = "50ms"
direction = "ab"

[[events]]
at = "190s"
link = "wan1"
action = "set"
loss = "5%"

[[middleboxes]]
kind = "strip_mptcp"
node = "fw"

[[middleboxes]]
kind = "resegment"
link = "lan"
direction = "ba"
mode = "coalesce"
size = "9000B"

[[middleboxes]]
kind = "nat"
node = "fw"
"#
    ));
    let eps: Vec<_> = n.mptcp_endpoints.iter().map(|e| (e.id, e.addr, e.iface_name.as_str(), e.flags.clone())).collect();
    assert_eq!(
        eps,
        [(1, ip("10.0.221.2"), "eth1", vec![EndpointFlag::Subflow, EndpointFlag::Backup]), (2, ip("10.0.220.2"), "eth0", vec![EndpointFlag::Signal])]
    );

    // Sorted by time; the two 190 s events keep file order.
    let ev: Vec<_> = n.events.iter().map(|e| (e.at_ns / 1_000_000_000, e.link_name.as_str())).collect();
    assert_eq!(ev, [(100, "wan1"), (190, "wan2"), (190, "wan1"), (395, "wan2")]);
    assert_eq!(
        n.events[0].action,
        LinkAction::Set { direction: Direction::Ab, rate_bps: Some(2_000_000), delay_ns: Some(50_000_000), jitter_ns: None, loss: None }
    );
    assert!(matches!(n.events[2].action, LinkAction::Set { loss: Some(l), direction: Direction::Both, .. } if l == 0.05));

    let fw = n.node("fw").unwrap().id;
    // The backend's kinds stay their tables, with the path errors name.
    let table = |i: usize| match &n.middleboxes[i].action {
        MiddleboxAction::Plugin(p) => (p.table.kind.as_str(), p.table.fields.clone(), p.path.as_str()),
        other => panic!("{other:?}"),
    };
    assert_eq!(table(0), ("strip_mptcp", toml::Table::new(), "middleboxes[0]"));
    assert_eq!(n.middleboxes[0].placement, Placement::Node { node: fw, node_name: "fw".into() });
    assert!(matches!(&n.middleboxes[1].placement, Placement::Link { link_name, direction: Direction::Ba, .. } if link_name == "lan"));
    assert_eq!(table(1).1.get("size").and_then(|v| v.as_str()), Some("9000B"));
    assert_eq!(table(2).0, "nat");
    assert_eq!(n.middleboxes[2].placement, Placement::Node { node: fw, node_name: "fw".into() });

    let p = &n.probes.pcap[0];
    assert_eq!((p.node_name.as_str(), p.iface, p.iface_name.as_str()), ("server", 0, "eth0"));
}

#[test]
fn resolved_network_serialises_plain_numbers() {
    let n = net(GW);
    let v = serde_json::to_value(&n).unwrap();
    assert_eq!(v["links"][0]["ab"]["rate_bps"], 10_000_000);
    assert_eq!(v["links"][0]["ab"]["delay_ns"], 1_000_000);
    // Unchecked, a queue shows its table (the backend's check resolves it:
    // crates/backend/tests/queues.rs).
    assert_eq!(v["links"][0]["ab"]["queue"]["kind"], "droptail");
    assert_eq!(v["links"][0]["ab"]["queue"]["packets"], 1000);
    assert_eq!(v["links"][0]["subnet"], "10.0.220.0/24");
    assert_eq!(v["nodes"][0]["interfaces"][1]["addr"], "10.0.221.2");
    assert_eq!(v["nodes"][0]["routing"]["rules"][1]["from"], "10.0.221.2/32");
    assert_eq!(v["events"][0]["action"]["kind"], "down");
    assert_eq!(v["flows"][0]["mptcp"]["path_manager"], "fullmesh");
}
