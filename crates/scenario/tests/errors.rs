//! Bad files produce one error naming file, line, column and field.

mod common;

use common::error;

/// Two hosts and a link: lines 1-12. Cases append from line 13 on.
const BASE: &str = r#"name = "bad"

[[nodes]]
name = "c"

[[nodes]]
name = "s"

[[links]]
a = "c"
b = "s"
rate = "10Mbit"
"#;

fn with(extra: &str) -> String {
    format!("{BASE}{extra}")
}

#[test]
fn base_is_valid() {
    common::net(BASE);
}

#[test]
fn invalid_unit_value() {
    let e = error(&with("\n[[links]]\nname = \"two\"\na = \"c\"\nb = \"s\"\nrate = \"10Mbt\"\n"));
    assert_eq!(e, r#"scenario.toml:18:8: links[1].rate: invalid rate "10Mbt": expected a number with unit bit/kbit/Mbit/Gbit (e.g. "10Mbit")"#);
}

#[test]
fn unit_errors_say_what_was_expected() {
    assert_eq!(
        error("name = \"x\"\nduration = \"30\"\n"),
        r#"scenario.toml:2:12: duration: invalid duration "30": missing unit; expected a number with unit ns/us/ms/s/m/h (e.g. "20ms", "1.5s")"#
    );
    assert_eq!(
        error(&with("delay = \"-3ms\"\n")),
        r#"scenario.toml:13:9: links[0].delay: invalid duration "-3ms": must not be negative"#
    );
    assert_eq!(
        error(&with("loss = \"150%\"\n")),
        r#"scenario.toml:13:8: links[0].loss: invalid probability "150%": expected a probability between 0 and 1 or a percentage (e.g. 0.01 or "1%")"#
    );
    assert_eq!(
        error("name = \"x\"\n[transport.tcp]\nrcv_buf = \"256K\"\n"),
        r#"scenario.toml:3:11: transport.tcp.rcv_buf: invalid size "256K": ambiguous unit "K": write KB (powers of 1000) or KiB (powers of 1024)"#
    );
    assert_eq!(
        error("name = \"x\"\nduration = [1]\n"),
        r#"scenario.toml:2:12: duration: invalid type: sequence, expected a duration such as "20ms" or a number of seconds"#
    );
}

#[test]
fn unknown_field_points_at_the_key() {
    let e = error(&with("ratee = \"10Mbit\"\n"));
    assert!(e.starts_with("scenario.toml:13:1: links[0].ratee: unknown field `ratee`, expected one of `name`, `a`, `b`, `rate`"), "{e}");
    let e = error("name = \"x\"\nduratoin = \"3s\"\n");
    assert!(e.starts_with("scenario.toml:2:1: duratoin: unknown field `duratoin`"), "{e}");
}

#[test]
fn unknown_enum_value_inside_dotted_table() {
    let e = error("name = \"x\"\n\n[transport.mptcp]\nprofile = \"linuxx\"\n");
    assert_eq!(e, "scenario.toml:4:11: transport.mptcp.profile: unknown variant `linuxx`, expected `mplab` or `linux`");
    // Path managers are a registry of the backends (like schedulers): the
    // file format checks the name's shape, a backend whether it exists.
    let e = error("name = \"x\"\n\n[transport.mptcp]\npath_manager = \"Full mesh\"\n");
    assert!(e.starts_with("scenario.toml:4:16: transport.mptcp.path_manager: invalid path manager \"Full mesh\""), "{e}");
}

#[test]
fn missing_fields() {
    assert_eq!(error("duration = \"3s\"\n"), "scenario.toml:1:1: missing field `name`");
    // A link without a rate points at its [[links]] header.
    assert_eq!(
        error(&with("\n[[links]]\nname = \"two\"\na = \"c\"\nb = \"s\"\n")),
        r#"scenario.toml:14:1: links[1].rate: missing: every link needs a rate (e.g. rate = "10Mbit")"#
    );
    assert_eq!(error(&with("\n[[links]]\nname = \"two\"\na = \"c\"\nrate = 1\n")), "scenario.toml:14:1: links[1]: missing field `b`");
}

#[test]
fn syntax_error() {
    assert_eq!(error("name = \"x\"\nduration = \"3s\n"), "scenario.toml:2:15: invalid basic string");
}

#[test]
fn unknown_node_in_link() {
    let e = error(&with("\n[[links]]\nname = \"two\"\na = \"c\"\nb = \"nowhere\"\nrate = \"1Mbit\"\n"));
    assert_eq!(e, r#"scenario.toml:17:5: links[1].b: unknown node "nowhere""#);
}

#[test]
fn unknown_interface_syntax() {
    let e = error(&with("\n[[links]]\nname = \"two\"\na = \"c:\"\nb = \"s\"\nrate = \"1Mbit\"\n"));
    assert_eq!(e, r#"scenario.toml:16:5: links[1].a: invalid endpoint "c:": expected "node" or "node:ifname""#);
}

#[test]
fn duplicate_names() {
    assert_eq!(error(&with("\n[[nodes]]\nname = \"c\"\n")), r#"scenario.toml:15:8: nodes[2].name: duplicate node name "c" (already defined by nodes[0])"#);
    assert_eq!(
        error(&with("\n[[links]]\na = \"c\"\nb = \"s\"\nrate = \"1Mbit\"\n")),
        r#"scenario.toml:14:1: links[1].name: duplicate link name "c-s" (also links[0]); give one of them a `name`"#
    );
    let e = error("name = \"x\"\n[topology]\nkind = \"parallel\"\npaths = 1\nrate = \"1Mbit\"\n\n[[nodes]]\nname = \"server\"\n");
    assert_eq!(e, r#"scenario.toml:8:8: nodes[0].name: duplicate node name "server" (already defined by the topology generator)"#);
    let flows = "\n[[flows]]\nname = \"f\"\nfrom = \"c\"\nto = \"s\"\ntransport = \"tcp\"\n";
    let e = error(&with(&format!("{flows}{flows}")));
    assert_eq!(e, r#"scenario.toml:21:8: flows[1].name: duplicate flow name "f" (also flows[0])"#);
}

#[test]
fn duplicate_interface() {
    let link = |n: &str| format!("\n[[links]]\nname = \"{n}\"\na = \"c:wlan0\"\nb = \"s\"\nrate = \"1Mbit\"\n");
    let e = error(&with(&format!("{}{}", link("l1"), link("l2"))));
    assert_eq!(e, "scenario.toml:22:5: links[2].a: interface c:wlan0 is already used by links[1]");
}

#[test]
fn flow_from_a_router() {
    let e = error(&with("\n[[nodes]]\nname = \"r\"\nkind = \"router\"\n\n[[flows]]\nfrom = \"r\"\nto = \"s\"\ntransport = \"tcp\"\n"));
    assert_eq!(e, r#"scenario.toml:19:8: flows[0].from: "r" is a router; flows run between hosts"#);
}

#[test]
fn flow_checks() {
    let flow = "\n[[flows]]\nfrom = \"c\"\nto = \"s\"\ntransport = \"tcp\"\n";
    assert_eq!(error(&with(&format!("{flow}subflows = 2\n"))), r#"scenario.toml:18:12: flows[0].subflows: only applies to transport = "mptcp" or "mpquic""#);
    assert_eq!(error(&with(&format!("{flow}stop = \"40s\"\n"))), "scenario.toml:18:8: flows[0].stop: 40s is after the end of the scenario (duration = 30s)");
    assert_eq!(error(&with(&format!("{flow}to_addr = \"10.9.9.9\"\n"))), "scenario.toml:18:11: flows[0].to_addr: 10.9.9.9 is not an address of s");
    assert_eq!(error(&with(&format!("{flow}cc = \"Cubic!\"\n"))), r#"scenario.toml:18:6: flows[0].cc: invalid congestion control "Cubic!": expected a name like "cubic" (lower-case letters, digits, '_')"#);
    let e = error(&with(&format!("{flow}port = 6000\n{flow}port = 6000\n")));
    assert_eq!(e, "scenario.toml:24:8: flows[1].port: port 6000 on s is already used by flows[0]");
}

#[test]
fn unreachable_flow() {
    // Two islands: c-s and x-y.
    let e = error(&with("\n[[nodes]]\nname = \"x\"\n\n[[nodes]]\nname = \"y\"\n\n[[links]]\na = \"x\"\nb = \"y\"\nrate = 1000\n\n[[flows]]\nfrom = \"c\"\nto = \"y\"\ntransport = \"tcp\"\n"));
    assert_eq!(e, "scenario.toml:25:1: flows[0]: c has no route to y (10.0.1.2)");
}

#[test]
fn events_on_unknown_links_and_late_events() {
    let ev = "\n[[events]]\nat = \"5s\"\naction = \"down\"\n";
    assert_eq!(error(&with(&format!("{ev}link = \"nolink\"\n"))), r#"scenario.toml:17:8: events[0].link: unknown link "nolink""#);
    assert_eq!(
        error(&with("\n[[events]]\nat = \"50s\"\nlink = \"c-s\"\naction = \"down\"\n")),
        "scenario.toml:15:6: events[0].at: 50s is after the end of the scenario (duration = 30s)"
    );
    assert_eq!(error(&with(&format!("{ev}link = \"c-s\"\nrate = \"1Mbit\"\n"))), r#"scenario.toml:18:8: events[0].rate: only applies to action = "set" or "fade""#);
    assert_eq!(error(&with(&format!("{ev}node = \"c\"\niface = \"eth7\"\n"))), r#"scenario.toml:18:9: events[0].iface: c has no interface "eth7""#);
    assert_eq!(error(&with(&format!("{ev}"))), "scenario.toml:14:1: events[0]: name the link with `link` or with `node` and `iface`");
}

#[test]
fn overlapping_addresses() {
    let e = error(&with("subnet = \"10.0.0.0/16\"\n\n[[links]]\nname = \"l2\"\na = \"c\"\nb = \"s\"\nrate = \"1Mbit\"\nsubnet = \"10.0.5.0/24\"\n"));
    assert_eq!(e, "scenario.toml:20:10: links[1].subnet: subnet 10.0.5.0/24 overlaps 10.0.0.0/16 of links[0]");
    let e = error(&with("a_addr = \"10.1.0.1/24\"\nb_addr = \"10.1.1.2/24\"\n"));
    assert_eq!(e, "scenario.toml:14:10: links[0].b_addr: 10.1.1.2/24 is not in a_addr's subnet 10.1.0.0/24");
    let e = error(&with("subnet = \"10.1.0.5/24\"\n"));
    assert_eq!(e, "scenario.toml:13:10: links[0].subnet: subnet 10.1.0.5/24 has host bits set; did you mean 10.1.0.0/24?");
    let e = error(&with("a_addr = \"10.1.0.255/24\"\n"));
    assert_eq!(e, "scenario.toml:13:10: links[0].a_addr: 10.1.0.255 is the network or broadcast address of 10.1.0.0/24");
}

#[test]
fn per_direction_override_errors() {
    let e = error(&with("\n[links.ba]\nrate = \"0Mbit\"\n"));
    assert_eq!(e, "scenario.toml:15:8: links[0].ba.rate: must be greater than 0 (use up = false or a `down` event for a dead link)");
}

#[test]
fn jitter_distribution_errors_name_the_field() {
    assert_eq!(
        error(&with("jitter = \"5ms\"\njitter_distribution = \"gaussian\"\n")),
        "scenario.toml:14:23: links[0].jitter_distribution: unknown variant `gaussian`, expected one of `uniform`, `normal`, `pareto`"
    );
    assert_eq!(
        error(&with("\n[links.ba]\njitter_distribution = \"Normal\"\n")),
        "scenario.toml:15:23: links[0].ba.jitter_distribution: unknown variant `Normal`, expected one of `uniform`, `normal`, `pareto`"
    );
    assert_eq!(error(&with("reorder = \"yes\"\n")), r#"scenario.toml:13:11: links[0].reorder: invalid type: string "yes", expected a boolean"#);
    let t = |body: &str| error(&format!("name = \"t\"\n\n[topology]\nkind = \"parallel\"\npaths = 2\nrate = \"1Mbit\"\n{body}"));
    assert_eq!(
        t("jitter_distribution = [\"normal\", \"cauchy\"]\n"),
        "scenario.toml:7:34: topology.jitter_distribution[1]: unknown variant `cauchy`, expected one of `uniform`, `normal`, `pareto`"
    );
    assert_eq!(
        t("jitter_distribution = [\"normal\"]\n"),
        "scenario.toml:7:23: topology.jitter_distribution: has 1 entries but paths = 2; give one value or one per path"
    );
}

#[test]
fn ecmp_errors_name_the_field() {
    assert_eq!(error("name = \"x\"\necmp = \"ospf\"\n"), "scenario.toml:2:8: ecmp: unknown variant `ospf`, expected `hash` or `random`");
    assert_eq!(error("name = \"x\"\necmp = true\n"), "scenario.toml:2:8: ecmp: wanted string or table");
}

#[test]
fn topology_errors() {
    let t = |body: &str| error(&format!("name = \"t\"\n\n[topology]\n{body}"));
    assert_eq!(t("kind = \"ring\"\n"), r#"scenario.toml:4:8: topology.kind: unknown topology kind "ring": expected one of parallel, dumbbell, khalili, fattree, star, load_balanced"#);
    assert_eq!(t("paths = 2\n"), "scenario.toml:3:1: topology: missing field `kind` (one of parallel, dumbbell, khalili, fattree, star, load_balanced)");
    assert_eq!(t("kind = \"star\"\n"), "scenario.toml:3:1: topology: missing field `hosts`");
    assert_eq!(t("kind = \"star\"\nhosts = 1\nrate = \"1Mbit\"\n"), "scenario.toml:5:9: topology.hosts: hosts must be between 2 and 1024, got 1");
    assert_eq!(t("kind = \"parallel\"\npaths = 2\n"), "scenario.toml:3:1: topology: missing field `rate`");
    assert_eq!(
        t("kind = \"parallel\"\npaths = 2\nrate = [\"1Mbit\", \"2Mbt\"]\n"),
        r#"scenario.toml:6:18: topology.rate[1]: invalid rate "2Mbt": expected a number with unit bit/kbit/Mbit/Gbit (e.g. "10Mbit")"#
    );
    let e = t("kind = \"parallel\"\npaths = 2\nrate = \"1Mbit\"\nbottleneck_rate = \"1Mbit\"\n");
    assert!(e.starts_with("scenario.toml:7:1: topology.bottleneck_rate: unknown field `bottleneck_rate`, expected one of `kind`, `paths`"), "{e}");
    assert_eq!(t("kind = \"parallel\"\npaths = 0\nrate = \"1Mbit\"\n"), "scenario.toml:5:9: topology.paths: paths must be between 1 and 256, got 0");
    assert_eq!(t("kind = \"khalili\"\nn1 = 0\nn2 = 0\nap1_rate = 1\nap2_rate = 1\n"), "scenario.toml:3:1: topology: n1 + n2 must be at least 1");
}

#[test]
fn middlebox_errors() {
    let e = error(&with("\n[[middleboxes]]\nkind = \"strip_mptcp\"\nnode = \"c\"\n"));
    assert_eq!(e, r#"scenario.toml:16:8: middleboxes[0].node: "c" is a host; put middleboxes on a router or a link"#);
    // The placement is typed here: a bad value is refused at its line.
    let e = error(&with("\n[[middleboxes]]\nkind = \"strip_mptcp\"\nlink = \"c-s\"\ndirection = \"sideways\"\n"));
    assert!(e.starts_with("scenario.toml:17:13: middleboxes[0].direction: unknown variant `sideways`"), "{e}");
    let e = error(&with("\n[[middleboxes]]\nlink = \"c-s\"\n"));
    assert!(e.starts_with("scenario.toml:14:1: middleboxes[0]: missing field `kind`"), "{e}");
    // The typed kinds' placement is checked here; the backend's kinds'
    // fields and placement by the backend (crates/backend/tests/middleboxes.rs).
    let e = error(&with("\n[[middleboxes]]\nkind = \"attacker\"\nnode = \"c\"\nattack = \"rst-on-path\"\n"));
    assert_eq!(e, r#"scenario.toml:16:8: middleboxes[0].node: "c" is a host; put middleboxes on a router or a link"#);
    let net = common::net(&with("\n[[middleboxes]]\nkind = \"nat\"\nlink = \"c-s\"\nmode = \"split\"\n"));
    assert_eq!(net.middleboxes[0].action.kind(), "nat");
}

#[test]
fn probe_errors() {
    let e = error(&with("\n[probes]\npcap = [\"c:eth0\", \"s:eth9\"]\n"));
    assert_eq!(e, r#"scenario.toml:15:19: probes.pcap[1]: s has no interface "eth9""#);
    let e = error(&with("\n[probes]\nflows = [\"nope\"]\n"));
    assert_eq!(e, r#"scenario.toml:15:10: probes.flows[0]: unknown flow "nope""#);
}

#[test]
fn static_route_errors() {
    let e = error(&with("\n[[routes]]\nnode = \"c\"\ndst = \"10.9.0.0/16\"\nvia = \"10.7.0.1\"\n"));
    assert_eq!(e, "scenario.toml:17:7: routes[0].via: 10.7.0.1 is not on any subnet of c");
    let e = error(&with("\n[[routes]]\nnode = \"c\"\ndst = \"10.9.0.0\"\ndev = \"eth0\"\n"));
    assert_eq!(e, r#"scenario.toml:16:7: routes[0].dst: "10.9.0.0" needs a prefix length (e.g. "10.9.0.0/24", or "10.9.0.0/32" for one host)"#);
}

#[test]
fn errors_keep_the_file_name() {
    let e = mplab_scenario::Scenario::from_str("name = 1\n", "exp/sweep.toml").unwrap_err();
    assert_eq!(e.to_string(), "exp/sweep.toml:1:8: name: invalid type: integer `1`, expected a string");
    assert_eq!(e.line(), Some(1));
    assert_eq!(e.path, "name");
    let e = mplab_scenario::Scenario::from_file("/nonexistent/x.toml").unwrap_err();
    assert!(e.to_string().starts_with("/nonexistent/x.toml: cannot read: "), "{e}");
}

proptest::proptest! {
    /// Arbitrary edits never panic the parser or the resolver.
    #[test]
    fn mangled_files_never_panic(cut in 0usize..400, junk in "[a-z0-9=\"\\[\\]. \n]{0,12}") {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/two-paths.toml")).unwrap();
        let cut = cut.min(text.len());
        let cut = (0..=cut).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        let mangled = format!("{}{}{}", &text[..cut], junk, &text[cut..]);
        let _ = mplab_scenario::Scenario::from_str(&mangled, "m.toml").and_then(|s| s.resolve());
    }
}

#[test]
fn rto_min_out_of_range_names_the_field() {
    let flow = "\n[[flows]]\nfrom = \"c\"\nto = \"s\"\ntransport = \"tcp\"\n";
    let e = error(&with(&format!("\n[transport.tcp]\nrto_min = \"0.1us\"\n{flow}")));
    assert_eq!(e, "scenario.toml:15:11: transport.tcp.rto_min: must be at least 1us");
    let e = error(&with(&format!("\n[transport.tcp]\nrto_min = \"2m\"\n{flow}")));
    assert_eq!(e, "scenario.toml:15:11: transport.tcp.rto_min: must be at most 60s, got 120s");
    let net = common::net(&with(&format!("\n[transport.tcp]\nrto_min = \"1ms\"\n{flow}")));
    assert_eq!(net.flows[0].tcp.rto_min_ns, Some(1_000_000));
}

/// A client, a router and two servers, the router linked to each: lines
/// 1-29; cases append a load balancer from line 30 on.
const LB_BASE: &str = r#"name = "lb"

[[nodes]]
name = "c"

[[nodes]]
name = "r"
kind = "router"

[[nodes]]
name = "s0"

[[nodes]]
name = "s1"

[[links]]
a = "c"
b = "r"
rate = "1Gbit"

[[links]]
a = "r"
b = "s0"
rate = "1Gbit"

[[links]]
a = "r"
b = "s1"
rate = "1Gbit"
"#;

#[test]
fn load_balancer_errors_name_the_field() {
    let lb = |fields: &str| error(&format!("{LB_BASE}\n[[middleboxes]]\nkind = \"load_balancer\"\nnode = \"r\"\n{fields}"));
    assert_eq!(lb("mode = \"round\"\nvip = \"10.100.0.1\"\nbackends = [\"s0\"]\n"), r#"scenario.toml:34:8: middleboxes[0].mode: unknown mode "round" for kind = "load_balancer" ("iphash", "fivetuple", "token", "stateless")"#);
    assert_eq!(lb("mode = \"token\"\nbackends = [\"s0\"]\n"), r#"scenario.toml:31:1: middleboxes[0]: kind = "load_balancer" needs `vip`, the address clients connect to"#);
    assert_eq!(lb("mode = \"token\"\nvip = \"10.100.0.1\"\nbackends = [\"s0\", \"r\"]\n"), r#"scenario.toml:36:19: middleboxes[0].backends[1]: "r" is a router; backends are hosts"#);
    assert_eq!(lb("mode = \"token\"\nvip = \"10.100.0.1\"\nbackends = [\"s0\", \"nope\"]\n"), r#"scenario.toml:36:19: middleboxes[0].backends[1]: unknown node "nope""#);
    assert_eq!(lb("mode = \"token\"\nvip = \"10.0.0.1\"\nbackends = [\"s0\"]\n"), r#"scenario.toml:35:7: middleboxes[0].vip: 10.0.0.1 is on a link subnet of c; a VIP must be an address of its own"#);
    assert_eq!(lb("mode = \"token\"\nvip = \"10.100.0.1\"\nbackends = []\n"), r#"scenario.toml:36:12: middleboxes[0].backends: a load balancer needs at least one backend host"#);
    assert_eq!(lb("mode = \"token\"\nvip = \"10.100.0.1\"\nbackends = [\"s0\"]\nsize = \"1KB\"\n"), r#"scenario.toml:37:8: middleboxes[0].size: does not apply to kind = "load_balancer" (it takes backends, idle, mode, table, vip)"#);
}

#[test]
fn address_events_name_a_host_interface() {
    let ev = "\n[[events]]\nat = \"5s\"\naction = \"remove_addr\"\n";
    assert_eq!(error(&with(&format!("{ev}link = \"c-s\"\n"))), r#"scenario.toml:14:1: events[0]: action = "remove_addr" names the host's interface with `node` and `iface`"#);
    assert_eq!(error(&with(&format!("{ev}node = \"c\"\niface = \"eth0\"\nloss = 0.1\n"))), r#"scenario.toml:19:8: events[0].loss: only applies to action = "set" or "fade""#);
    let net = common::net(&with(&format!("{ev}node = \"c\"\niface = \"eth0\"\n")));
    assert!(matches!(&net.events[0].action, mplab_scenario::network::LinkAction::RemoveAddr { node_name, iface_name, .. } if node_name == "c" && iface_name == "eth0"));
}

#[test]
fn middlebox_windows_are_checked() {
    let e = error(&with("\n[[middleboxes]]\nkind = \"strip_mptcp\"\nlink = \"c-s\"\nfrom = \"3s\"\nuntil = \"2s\"\n"));
    assert!(e.ends_with("middleboxes[0].until: must be later than `from` (3 s)"), "{e}");
    let e = error(&with("\n[[middleboxes]]\nkind = \"strip_mptcp\"\nlink = \"c-s\"\nuntil = \"0s\"\n"));
    assert!(e.ends_with("middleboxes[0].until: must be later than `from` (0 s)"), "{e}");
    let e = error(&with("\n[[middleboxes]]\nkind = \"attacker\"\nlink = \"c-s\"\nattack = \"join-unknown-token\"\nfrom = \"1s\"\n"));
    assert!(e.ends_with("middleboxes[0].from: an attacker strikes at `at`: it takes no `from` / `until`"), "{e}");
    // A window is every other kind's.
    let ok = with("\n[[middleboxes]]\nkind = \"resegment\"\nlink = \"c-s\"\nmode = \"split\"\nfrom = \"1s\"\nuntil = \"2s\"\n");
    let net = mplab_scenario::Scenario::from_str(&ok, "scenario.toml").unwrap().resolve().unwrap();
    let m = &net.middleboxes[0];
    assert_eq!((m.from_ns, m.until_ns), (1_000_000_000, Some(2_000_000_000)));
    assert!(!m.active_at(999_999_999) && m.active_at(1_000_000_000) && !m.active_at(2_000_000_000));
}

/// UDP flows refuse the stream knobs at the field (their datagram
/// applications are the backend's registry: crates/backend/tests/apps.rs).
#[test]
fn udp_flows_and_datagram_apps() {
    let flow = |extra: &str| with(&format!("\n[[flows]]\nfrom = \"c\"\nto = \"s\"\n{extra}"));
    // Lines: 14 [[flows]], 15 from, 16 to, 17 on.
    assert_eq!(error(&flow("transport = \"udp\"\napp = \"voip\"\ncc = \"reno\"\n")), r#"scenario.toml:19:6: flows[0].cc: does not apply to transport = "udp" (no congestion control, no buffers)"#);
    assert_eq!(error(&flow("transport = \"udp\"\napp = \"voip\"\nscheduler = \"redundant\"\n")), r#"scenario.toml:19:13: flows[0].scheduler: only applies to transport = "mptcp""#);
    // The transport registry: an unknown name lists the known ones, and a
    // field of another transport names the ones that take it.
    // (A workspace test build lists the test-only fixture transport after these.)
    let e = error(&flow("transport = \"tcpp\"\n"));
    assert!(e.starts_with("scenario.toml:17:13: flows[0].transport: unknown transport `tcpp`, expected one of `mptcp`, `tcp`, `sctp`, `cmt-sctp`, `udp`, `quic`"), "{e}");
    assert_eq!(error(&flow("transport = \"sctp\"\ncc = \"reno\"\n")), r#"scenario.toml:18:6: flows[0].cc: does not apply to transport = "sctp" (see [transport.sctp])"#);
    // Over UDP the application is read as a datagram one.
    let ok = common::net(&flow("transport = \"udp\"\napp = \"game\"\npacket_size = \"100B\"\n"));
    assert!(ok.flows[0].app.is_datagram() && ok.flows[0].app.name() == "game");
}

/// A tunnel runs between two routers that share a link, over TCP or
/// MPTCP, with a sane MTU.
#[test]
fn tunnel_flows() {
    let gw = "\n[[nodes]]\nname = \"cpe\"\nkind = \"router\"\n\n[[nodes]]\nname = \"hag\"\nkind = \"router\"\n\n[[links]]\na = \"c\"\nb = \"cpe\"\nrate = \"1Gbit\"\n";
    let flow = |to: &str, extra: &str| with(&format!("{gw}\n[[flows]]\nfrom = \"cpe\"\nto = \"{to}\"\napp = \"tunnel\"\n{extra}"));
    assert_eq!(error(&flow("s", "transport = \"mptcp\"\n")), r#"scenario.toml:29:6: flows[0].to: "s" is a host; app = "tunnel" and "converter" run between two gateway routers (kind = "router")"#);
    assert_eq!(error(&flow("hag", "transport = \"mptcp\"\n")), r#"scenario.toml:29:6: flows[0].to: a tunnel's gateways are joined by the access links: cpe and hag share none"#);
    let linked = |extra: &str| flow("hag", &format!("transport = \"mptcp\"\n{extra}\n[[links]]\na = \"cpe\"\nb = \"hag\"\nrate = \"10Mbit\"\n"));
    common::net(&linked(""));
    assert_eq!(error(&linked("mtu = 40\n")), r#"scenario.toml:32:7: flows[0].mtu: must be between 68 and 65535, got 40"#);
    let over = |t: &str| linked("").replace("transport = \"mptcp\"", &format!("transport = \"{t}\""));
    assert_eq!(error(&over("sctp")), r#"scenario.toml:31:13: flows[0].transport: a tunnel rides a TCP, MPTCP or MPQUIC connection"#);
    assert_eq!(error(&over("quic")), r#"scenario.toml:31:13: flows[0].transport: a tunnel rides a TCP, MPTCP or MPQUIC connection"#);
    assert_eq!(error(&over("udp")), r#"scenario.toml:30:7: flows[0].app: app = "tunnel" needs a byte stream; over transport = "udp" use app = "voip" or "game""#);
    // UDP in QUIC DATAGRAM frames: over MPQUIC only.
    let net = common::net(&linked("mode = \"quic-datagram\"\n").replace("transport = \"mptcp\"", "transport = \"mpquic\""));
    assert!(matches!(net.flows[0].app, mplab_scenario::network::App::Tunnel { mode: mplab_scenario::network::TunnelMode::QuicDatagram, .. }));
    common::net(&linked("mode = \"stream\"\n").replace("transport = \"mptcp\"", "transport = \"mpquic\""));
    assert_eq!(error(&linked("mode = \"quic-datagram\"\n")), r#"scenario.toml:32:8: flows[0].mode: "quic-datagram" puts UDP in QUIC DATAGRAM frames: it needs transport = "mpquic", not "mptcp""#);
    assert_eq!(
        error(&linked("mode = \"masque\"\n")),
        r#"scenario.toml:32:8: flows[0].mode: "masque": expected "stream" (frames in the byte stream), "datagram" (UDP on every access link) or, over MPQUIC, "quic-datagram" (UDP in QUIC DATAGRAM frames, the rest in the stream)"#
    );
}

/// Converters convert TCP, between two linked routers, and refuse
/// destinations given as prefixes.
#[test]
fn converter_flows() {
    let gw = "\n[[nodes]]\nname = \"cpe\"\nkind = \"router\"\n\n[[nodes]]\nname = \"hag\"\nkind = \"router\"\n\n[[links]]\na = \"c\"\nb = \"cpe\"\nrate = \"1Gbit\"\n\n[[links]]\na = \"cpe\"\nb = \"hag\"\nrate = \"10Mbit\"\n";
    // Lines: 32 [[flows]], 33 from, 34 to, 35 app, 36 transport, 37 on.
    let flow = |extra: &str| with(&format!("{gw}\n[[flows]]\nfrom = \"cpe\"\nto = \"hag\"\napp = \"converter\"\ntransport = \"mptcp\"\n{extra}"));
    let net = common::net(&flow("refuse = [\"10.0.0.0/8\", \"192.0.2.7\"]\n"));
    let mplab_scenario::network::App::Converter { class, refuse, fast_open } = &net.flows[0].app else { panic!("{:?}", net.flows[0].app) };
    assert_eq!((class.name().as_str(), *fast_open), ("tcp", false));
    assert_eq!(refuse.iter().map(|p| p.to_string()).collect::<Vec<_>>(), ["10.0.0.0/8", "192.0.2.7/32"]);
    assert_eq!(error(&flow("carries = \"udp\"\n")), r#"scenario.toml:37:11: flows[0].carries: "udp": a converter converts TCP connections: give "tcp" or "tcp:PORT[-PORT]""#);
    assert_eq!(error(&flow("refuse = [\"10.0.0.1/8\"]\n")), r#"scenario.toml:37:11: flows[0].refuse[0]: 10.0.0.1/8 has host bits set; did you mean 10.0.0.0/8?"#);
    assert_eq!(error(&flow("mtu = 1400\n")), r#"scenario.toml:37:7: flows[0].mtu: does not apply to app = "converter" (it takes carries, fast_open, refuse)"#);
    assert_eq!(error(&flow("").replace("transport = \"mptcp\"", "transport = \"sctp\"")), r#"scenario.toml:36:13: flows[0].transport: converters talk over a TCP or MPTCP connection"#);
}

#[test]
fn quic_flows_take_the_stream_apps_but_not_tcps_knobs() {
    let flow = |extra: &str| with(&format!("\n[[flows]]\nfrom = \"c\"\nto = \"s\"\ntransport = \"quic\"\n{extra}"));
    assert_eq!(error(&flow("cc = \"reno\"\n")), r#"scenario.toml:18:6: flows[0].cc: does not apply to transport = "quic" (quinn's own congestion control and flow control)"#);
    common::net(&flow("app = \"download\"\nbytes = \"1MB\"\n"));
}
