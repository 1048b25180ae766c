//! MPTCP scenarios on the simulator: seed 000's lab and firewall, path
//! managers, lossy paths; figures checked against the link rates.

mod support;

use mplab_sim::RunResults;
use support::*;

/// Mean connection goodput (Mbit/s) over samples in (t0, t1].
fn goodput(r: &RunResults, flow: &str, t0: f64, t1: f64) -> f64 {
    let v: Vec<f64> = r.flows.iter().filter(|s| s.flow == flow && s.subflow == "all" && s.time_s > t0 && s.time_s <= t1).map(|s| s.goodput_bps).collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64 / 1e6
}

#[test]
fn seed000_lab1_aggregates_survives_a_cut_and_recovers() {
    let r = bundled("seed000-lab1.toml", &[]);
    let f = &r.summary.flows[0];
    assert!(f.verified && !f.fallback, "{f:?}");
    assert_eq!(f.subflows.len(), 2);
    let (both, cut, back) = (goodput(&r, "iperf", 5.0, 20.0), goodput(&r, "iperf", 21.0, 40.0), goodput(&r, "iperf", 45.0, 60.0));
    assert!(both >= 18.0, "aggregate {both:.2} Mbit/s");
    assert!(cut >= 9.0, "one link left: {cut:.2} Mbit/s");
    assert!(back >= 18.0, "link back at 40 s: {back:.2} Mbit/s from 45 s");
    // Back to the aggregate within 5 s of the restore.
    let first_full = r.flows.iter().filter(|s| s.subflow == "all" && s.time_s > 40.0 && s.goodput_bps >= 18e6).map(|s| s.time_s).next();
    assert!(first_full.is_some_and(|t| t <= 45.0), "recovered at {first_full:?}");
    // The second uplink carried nothing while it was down.
    let wan2: Vec<f64> = r.interfaces.iter().filter(|s| s.node == "client" && s.iface == "eth1" && s.time_s > 21.0 && s.time_s <= 40.0).map(|s| s.tx_bps).collect();
    assert!(wan2.iter().all(|&b| b == 0.0));
    // Its subflow: established, stale while cut (RTOs kept firing), and
    // established again after the restore.
    use mplab_sim::results::SubflowState as S;
    let state_at = |t: f64| r.flows.iter().find(|s| s.subflow == "1" && (s.time_s - t).abs() < 1e-6).and_then(|s| s.state);
    assert_eq!((state_at(15.0), state_at(30.0), state_at(50.0)), (Some(S::Established), Some(S::Stale), Some(S::Established)));
    assert!(f.subflows.iter().all(|s| s.state == Some(S::Established)), "{:?}", f.subflows);
}

/// When the restored wan2 subflow carries data again (Mbit/s over 1 on
/// subflow 1 after the restore at 40 s).
fn wan2_back_at(r: &RunResults) -> Option<f64> {
    r.flows.iter().filter(|s| s.subflow == "1" && s.time_s > 40.0 && s.goodput_bps > 1e6).map(|s| s.time_s).next()
}

/// Stack profiles on seed 000's lab: mplab's stack caps a subflow's RTO
/// backoff at 1 s and uses the restored uplink within about a second;
/// with `profile = "linux"` the subflow backs off as Linux's does (to
/// 120 s), so after the 20 s cut its next retransmission, the first to get
/// through, comes many seconds after the restore (the kernel backend
/// measured 55.5 s: docs/validation.md).
#[test]
fn seed000_lab1_linux_profile_recovers_late() {
    let mplab = bundled("seed000-lab1.toml", &[]);
    let linux = bundled("seed000-lab1.toml", &[("transport.mptcp.profile", "linux")]);
    let (m, l) = (wan2_back_at(&mplab), wan2_back_at(&linux));
    assert!(m.is_some_and(|t| t <= 41.5), "mplab profile: wan2 back at {m:?}");
    // The backed-off timer after a 20 s cut: the retransmission due after
    // 40 s is at least the 6th doubling of an RTO of at least 200 ms after
    // the cut (20 + 0.2 * 63 = 32.6 s, then 45.8 s at the 7th).
    assert!(l.is_some_and(|t| t >= 45.0), "linux profile: wan2 back at {l:?}");
    for (name, r) in [("mplab", &mplab), ("linux", &linux)] {
        assert!(r.summary.flows[0].verified);
        // Within a few seconds of the cut, one uplink's rate.
        let (g25, g21) = (goodput(r, "iperf", 25.0, 40.0), goodput(r, "iperf", 21.0, 40.0));
        let early: Vec<String> = r.flows.iter().filter(|s| s.subflow == "all" && s.time_s > 19.0 && s.time_s <= 24.0).map(|s| format!("{}:{:.1}", s.time_s, s.goodput_bps / 1e6)).collect();
        assert!(g25 >= 9.0 && g21 >= 8.5, "{name}: 25-40 s: {g25:.2}, 21-40 s: {g21:.2} {early:?} seed {}", r.summary.seed);
    }
    // Right after the cut the data level waits on what was lost with wan2
    // until Linux's connection timer has counted that subflow stale: five
    // periods, each as long as the last scheduling pass found its timers
    // (`timer_ival`), not recomputed at each re-arm. The kernel backend,
    // eight runs: 20-25 s at 7.80-8.22 Mbit/s, the stale subflow's data
    // sent again 0.8 s after the cut (docs/validation.md); recomputing the
    // period at every re-arm made it 1.2 s and 7.37 Mbit/s.
    let g_cut = goodput(&linux, "iperf", 20.0, 25.0);
    assert!(g_cut >= 7.6, "linux profile: 20-25 s at {g_cut:.2} Mbit/s");
    // Late recovery costs goodput after the restore: one uplink's rate for
    // the seconds the subflow stays idle.
    let (gm, gl) = (goodput(&mplab, "iperf", 45.0, 60.0), goodput(&linux, "iperf", 45.0, 60.0));
    assert!(gm >= 18.0 && gl < gm - 9.4 * (l.unwrap() - 45.0) / 15.0 + 0.5, "45-60 s: mplab {gm:.2}, linux {gl:.2}");
}

#[test]
fn seed000_firewall_falls_back_to_tcp_and_completes() {
    let r = bundled("seed000-firewall.toml", &[]);
    let f = &r.summary.flows[0];
    assert!(f.fallback && f.completed && f.verified, "{f:?}");
    assert_eq!(f.bytes_delivered, 10_000_000);
    assert_eq!(f.subflows.len(), 1);
    // Without the ASA: MPTCP, two subflows, faster.
    let r = bundled("seed000-firewall.toml", &[("middleboxes", "[]")]);
    let g = &r.summary.flows[0];
    assert!(!g.fallback && g.completed && g.verified, "{g:?}");
    assert_eq!(g.subflows.len(), 2);
    assert!(g.completion_time_s.unwrap() < 0.7 * f.completion_time_s.unwrap());
}

#[test]
fn stripping_only_syns_falls_back_too() {
    let r = bundled("seed000-firewall.toml", &[("middleboxes.0.on", "syn")]);
    assert!(r.summary.flows[0].fallback && r.summary.flows[0].completed);
}

#[test]
fn fullmesh_on_two_by_two_addresses_opens_four_subflows() {
    let r = bundled("two-paths.toml", &[("duration", "10s")]);
    let f = &r.summary.flows[0];
    assert_eq!(f.subflows.len(), 4, "{:?}", f.subflows);
    assert!(f.verified);
    assert!(goodput(&r, "bulk", 3.0, 10.0) >= 18.0);
}

const ONE_PATH: &str = r#"
name = "one"
duration = "10s"
[topology]
kind = "parallel"
paths = 1
rate = "100Mbit"
delay = "5ms"
[[flows]]
name = "f"
from = "client"
to = "server"
transport = "mptcp"
path_manager = "ndiffports"
subflows = 2
"#;

#[test]
fn ndiffports_opens_two_subflows_on_one_address_pair() {
    let r = run(ONE_PATH);
    let f = &r.summary.flows[0];
    assert_eq!(f.subflows.len(), 2);
    let ip = |s: &str| s.split(':').next().unwrap().to_string();
    assert_eq!(ip(&f.subflows[0].local), ip(&f.subflows[1].local));
    assert_ne!(f.subflows[0].local, f.subflows[1].local, "different source ports");
    assert!(f.subflows.iter().all(|s| s.bytes_sent > 1_000_000));
}

#[test]
fn add_addr_from_the_server_leads_to_a_join() {
    // Linux-style endpoints: the server signals its second address; the
    // client accepts one ADD_ADDR and joins it.
    let toml = r#"
name = "signal"
duration = "10s"
[topology]
kind = "parallel"
paths = 2
rate = "10Mbit"
delay = "10ms"
[transport.mptcp]
path_manager = "endpoints"
limits = { subflows = 2, add_addr_accepted = 1 }
endpoints = [ { node = "server", iface = "eth1", flags = ["signal"] } ]
[[flows]]
name = "f"
from = "client"
to = "server"
transport = "mptcp"
"#;
    let r = run(toml);
    let f = &r.summary.flows[0];
    assert_eq!(f.subflows.len(), 2, "{:?}", f.subflows);
    assert!(f.subflows[1].remote.starts_with("10.0.1.1"), "joined the announced address: {:?}", f.subflows[1]);
    assert!(f.verified);
}

#[test]
fn five_percent_loss_on_one_path_still_delivers_every_byte() {
    let toml = r#"
name = "lossy"
duration = "60s"
[topology]
kind = "parallel"
paths = 2
rate = "10Mbit"
delay = "10ms"
loss = [0.0, 0.05]
[transport.mptcp]
path_manager = "fullmesh"
checksum = true
[[flows]]
name = "f"
from = "client"
to = "server"
from_addr = "10.0.0.2"
to_addr = "10.0.0.1"
transport = "mptcp"
app = "bulk"
bytes = "20MB"
"#;
    let r = run(toml);
    let f = &r.summary.flows[0];
    assert!(f.completed && f.verified && !f.fallback, "{f:?}");
    assert_eq!(f.bytes_delivered, 20_000_000);
    assert!(f.retransmitted_segments > 0);
}

#[test]
fn mptcp_runs_are_deterministic() {
    let a = bundled("two-paths.toml", &[("duration", "5s"), ("topology.loss", "0.01")]);
    let b = bundled("two-paths.toml", &[("duration", "5s"), ("topology.loss", "0.01")]);
    assert_eq!(a, b);
    let c = bundled("two-paths.toml", &[("duration", "5s"), ("topology.loss", "0.01"), ("seed", "9")]);
    assert_ne!(a.summary, c.summary);
}

#[test]
fn mptcp_survives_a_nat() {
    // The ASA masquerades instead of stripping: both subflows reach the
    // server from the NAT's address with different ports, and the join
    // still finds its connection by token.
    let r = bundled("seed000-firewall.toml", &[("middleboxes", r#"[{ kind = "nat", node = "asa" }]"#)]);
    let f = &r.summary.flows[0];
    assert!(!f.fallback && f.completed && f.verified, "{f:?}");
    assert_eq!(f.subflows.len(), 2);
    // The server's side of the capture would show 10.0.222.1 (the ASA):
    // its interface received everything from one address.
    let asa_out = r.summary.interfaces.iter().find(|i| i.node == "asa" && i.tx_bytes > 10_000_000);
    assert!(asa_out.is_some(), "{:?}", r.summary.interfaces);
}

#[test]
fn fullmesh_subflows_caps_the_total() {
    for (n, want) in [(1, 1), (2, 2), (3, 3)] {
        let r = bundled("two-paths.toml", &[("duration", "2s"), ("transport.mptcp.subflows", &n.to_string())]);
        assert_eq!(r.summary.flows[0].subflows.len(), want, "subflows = {n}");
    }
}

#[test]
fn a_rate_sender_faster_than_its_paths_does_not_spin() {
    // 30 Mbit/s offered to one 10 Mbit/s path: the send buffer fills and the
    // application waits for room instead of re-arming a timer in the past.
    let toml = r#"
name = "overload"
duration = "5s"
[topology]
kind = "parallel"
paths = 1
rate = "10Mbit"
delay = "10ms"
[[flows]]
name = "f"
from = "client"
to = "server"
transport = "tcp"
app = "rate"
rate = "30Mbit"
"#;
    let r = run(toml);
    let f = &r.summary.flows[0];
    assert!(f.verified && f.goodput_bps > 9e6, "{f:?}");
}

/// Seed 000's firewall scenario with a box that merges segments in place
/// of the option stripper, on the single path the connection has. It sits
/// on the sender's uplink and holds a segment 3 ms: the ACK clock spaces
/// segments by the 10 Mbit/s bottleneck's 1.2 ms, which the default 1 ms
/// hold would merge only in slow-start bursts (and CUBIC's HyStart keeps
/// those few).
fn coalesced(extra: &[(&str, &str)]) -> RunResults {
    let mut sets = vec![("middleboxes", r#"[{ kind = "resegment", mode = "coalesce", link = "wan1", direction = "ab", hold = "3ms" }]"#), ("transport.mptcp.subflows", "1")];
    sets.extend_from_slice(extra);
    bundled("seed000-firewall.toml", &sets)
}

#[test]
fn coalescing_box_on_the_only_path_makes_mptcp_fall_back() {
    // The merged segments keep the first DSS only: the rest of their
    // payload has no mapping, so the receiver falls back to TCP (RFC 8684
    // 3.7) instead of stalling, and every byte still arrives in order.
    for csum in ["false", "true"] {
        let r = coalesced(&[("transport.mptcp.checksum", csum)]);
        let f = &r.summary.flows[0];
        assert!(f.fallback && f.completed && f.verified, "checksum {csum}: {f:?}");
        assert_eq!(f.bytes_delivered, 10_000_000);
        let merged: Option<u64> = r.summary.notes.iter().find_map(|n| n.split(": ").nth(1)?.split(' ').next()?.parse().ok());
        assert!(merged.is_some_and(|m| m > 100), "{:?}", r.summary.notes);
    }
}

#[test]
fn coalescing_box_on_one_of_two_paths_costs_only_that_subflow() {
    // The box sits on the client's second uplink: the subflow there is
    // reset (MP_TCPRST, middlebox interference) and its data reinjected;
    // the connection stays MPTCP on the first uplink and delivers all.
    let r = bundled(
        "seed000-firewall.toml",
        &[("middleboxes", r#"[{ kind = "resegment", mode = "coalesce", link = "wan2", direction = "ab", hold = "3ms" }]"#), ("transport.mptcp.checksum", "true")],
    );
    let f = &r.summary.flows[0];
    assert!(!f.fallback && f.completed && f.verified, "{f:?}");
    assert_eq!(f.bytes_delivered, 10_000_000);
    // Without the box the uplinks share the 10 MB about equally; with it
    // the second one stops at the first merged segment (in its first
    // second here, seed 1).
    let via = |net: &str| f.subflows.iter().filter(|s| s.local.starts_with(net)).map(|s| s.bytes_sent).sum::<u64>();
    assert!(via("10.0.220.") >= 9_000_000, "{:?}", f.subflows);
    assert!(via("10.0.221.") < 2_500_000, "{:?}", f.subflows);
    // Mid-transfer the probes show it closed beside the working one.
    use mplab_sim::results::SubflowState as S;
    let state_at = |sub: &str, t: f64| r.flows.iter().find(|s| s.subflow == sub && (s.time_s - t).abs() < 1e-6).and_then(|s| s.state);
    assert_eq!(state_at("0", 3.0), Some(S::Established));
    // A closed subflow gets one row saying so, and no more.
    let last = r.flows.iter().filter(|s| s.subflow == "1").last().expect("rows of subflow 1");
    assert!(last.state == Some(S::Closed) && last.time_s < 3.0, "the reset subflow is closed: {last:?}");
}

#[test]
fn splitting_box_is_harmless_to_mptcp() {
    // Split pieces carry a copy of the segment's DSS (as TSO does), so the
    // mapping still covers every byte: MPTCP goes on over both uplinks.
    for csum in ["false", "true"] {
        let r = bundled(
            "seed000-firewall.toml",
            &[("middleboxes", r#"[{ kind = "resegment", mode = "split", size = "500B", node = "asa" }]"#), ("transport.mptcp.checksum", csum)],
        );
        let f = &r.summary.flows[0];
        assert!(!f.fallback && f.completed && f.verified, "checksum {csum}: {f:?}");
        assert_eq!(f.subflows.len(), 2);
    }
}

#[test]
fn a_flow_whose_connection_never_opens_stops_at_its_stop_time() {
    // The only link is down all along: the SYNs go nowhere, the stop time
    // passes with no connection, and the run still ends (it used to re-arm
    // the application's past stop timer at the same instant forever).
    for transport in ["tcp", "mptcp"] {
        let r = bundled(
            "tcp-single.toml",
            &[
                ("duration", "10s"),
                ("flows.0.transport", transport),
                ("flows.0.stop", "5s"),
                ("events", r#"[{ at = "0s", link = "client-server", action = "down" }]"#),
            ],
        );
        let f = &r.summary.flows[0];
        assert_eq!(f.bytes_delivered, 0);
        assert!(!f.completed, "{f:?}");
    }
}

#[test]
fn four_equal_paths_are_all_used_and_nothing_waits_long_out_of_order() {
    // Seed 001's topology A with four 10 Mbit/s paths and LIA. The server's
    // ADD_ADDRs used to count as duplicate ACKs and halve the first
    // subflow's window at its start, after which LIA's coupled increase
    // left it at ~1.5 Mbit/s for the whole run.
    let r = bundled("seed001-topoA.toml", &[("topology.paths", "4"), ("transport.mptcp.subflows", "4"), ("duration", "10s")]);
    let f = &r.summary.flows[0];
    assert_eq!(f.subflows.len(), 4);
    assert!(f.subflows.iter().all(|s| s.goodput_bps > 8.5e6), "{:?}", f.subflows);
    // Equal paths: data waits out of order for a fraction of an RTT, not
    // for seconds (hol_ms is the oldest waiting byte's age).
    let hol = r.reorder.iter().filter(|x| r.flows[x.row].time_s > 3.0).map(|x| x.hol_ms).fold(0.0, f64::max);
    assert!(hol < 40.0, "head-of-line delay up to {hol:.1} ms on four equal 40 ms-RTT paths");
}

/// Seed 000's firewall scenario with a box on the second uplink that
/// edits one byte per megabyte of stream (and fixes the TCP checksum).
fn rewritten(csum: &str, extra: &[(&str, &str)]) -> RunResults {
    let mut sets = vec![("middleboxes", r#"[{ kind = "rewrite", link = "wan2", direction = "ab", every = "1MB" }]"#), ("transport.mptcp.checksum", csum)];
    sets.extend_from_slice(extra);
    bundled("seed000-firewall.toml", &sets)
}

#[test]
fn dss_checksums_catch_a_rewriting_box_and_the_data_goes_around_it() {
    // With checksums the damaged subflow is reset and its data sent again
    // on the other uplink: every byte arrives intact.
    let r = rewritten("true", &[]);
    let f = &r.summary.flows[0];
    assert!(f.completed && f.verified && !f.fallback, "{f:?}");
    assert_eq!(f.bytes_delivered, 10_000_000);
    // Without them nothing notices and the application reads wrong bytes.
    let r = rewritten("false", &[]);
    let f = &r.summary.flows[0];
    assert!(f.completed && !f.verified, "the rewrite went unnoticed: {f:?}");
}

#[test]
fn a_checksum_failure_on_the_only_subflow_falls_back_like_linux() {
    // One subflow, on the rewritten uplink: MP_FAIL, fallback to TCP, and
    // the transfer completes, but the damaged bytes are the application's
    // (RFC 8684 3.7's infinite mapping; Linux's MP_FAIL selftest expects
    // the inverted bytes in the file too).
    let r = bundled(
        "seed000-firewall.toml",
        &[("middleboxes", r#"[{ kind = "rewrite", link = "wan1", direction = "ab", every = "1MB" }]"#), ("transport.mptcp.checksum", "true"), ("transport.mptcp.subflows", "1")],
    );
    let f = &r.summary.flows[0];
    assert!(f.completed && f.fallback && !f.verified, "{f:?}");
}

/// Two 10 Mbit/s paths, fullmesh; `who` withdraws its second address at
/// 3 s and puts it back at 6 s (scenario events remove_addr / add_addr).
fn withdrawn_and_restored(who: &str, addr_of: &str) -> RunResults {
    let mut toml = String::from("name = \"addr\"\nduration = \"12s\"\n[[nodes]]\nname = \"client\"\n[[nodes]]\nname = \"server\"\n");
    for i in 0..2 {
        toml += &format!("[[links]]\nname = \"p{i}\"\na = \"client:eth{i}\"\nb = \"server:eth{i}\"\nrate = \"10Mbit\"\ndelay = \"10ms\"\nqueue = {{ kind = \"droptail\", packets = 40 }}\na_addr = \"10.9.{i}.1/24\"\nb_addr = \"10.9.{i}.2/24\"\n");
    }
    toml += "[probes]\ninterval = \"250ms\"\n[transport.mptcp]\npath_manager = \"fullmesh\"\n";
    for (at, action) in [("3s", "remove_addr"), ("6s", "add_addr")] {
        toml += &format!("[[events]]\nat = \"{at}\"\nnode = \"{who}\"\niface = \"eth1\"\naction = \"{action}\"\n");
    }
    toml += "[[flows]]\nname = \"up\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"mptcp\"\napp = \"bulk\"\n";
    let r = run(&toml);
    let f = &r.summary.flows[0];
    assert!(f.verified && !f.fallback, "{f:?}");
    // flows.csv names subflows by their index in the summary's list.
    let uses = |i: usize| f.subflows.get(i).is_some_and(|s| s.local.starts_with(&format!("{addr_of}:")) || s.remote.starts_with(&format!("{addr_of}:")));
    let on = |t0: f64| {
        r.flows.iter().filter(|s| s.flow == "up" && s.subflow.parse::<usize>().is_ok_and(uses) && s.time_s > t0 && s.time_s <= t0 + 2.0).map(|s| s.goodput_bps).sum::<f64>()
    };
    // While withdrawn, no subflow uses the address; after, one does again.
    assert_eq!(on(3.5), 0.0, "{addr_of} still carries data while withdrawn");
    assert!(on(8.0) > 0.0, "{addr_of} unused after it came back");
    r
}

#[test]
fn a_client_address_withdrawn_and_restored_is_left_then_joined_again() {
    let r = withdrawn_and_restored("client", "10.9.1.1");
    // Both subflows left use path 0 (the source address picks the path):
    // one path's rate while withdrawn, both paths' before and after.
    let (before, during, after) = (goodput(&r, "up", 1.0, 3.0), goodput(&r, "up", 4.0, 6.0), goodput(&r, "up", 8.0, 12.0));
    assert!(before > 17.5 && after > 17.5, "{before} {after} Mbit/s");
    assert!((during / 9.5 - 1.0).abs() < 0.05, "{during} Mbit/s");
    let f = &r.summary.flows[0];
    assert!(f.subflows.iter().filter(|s| s.local.starts_with("10.9.1.1:")).count() >= 3, "new subflows from the restored address: {:?}", f.subflows);
}

#[test]
fn a_server_address_withdrawn_and_restored_is_announced_and_joined_again() {
    let r = withdrawn_and_restored("server", "10.9.1.2");
    let f = &r.summary.flows[0];
    assert!(f.subflows.iter().filter(|s| s.remote.starts_with("10.9.1.2:")).count() >= 3, "joins to the re-announced address: {:?}", f.subflows);
}

/// Two 10 Mbit/s paths and a strip_mptcp box on `link` acting from
/// `from` until `until` (`on`: "syn" or "all"), and `flows` after.
fn firewall_for_a_while(link: &str, on: &str, from: &str, until: &str, flows: &str) -> RunResults {
    run(&format!(
        "name = \"fw-window\"\nduration = \"12s\"\n[topology]\nkind = \"parallel\"\npaths = 2\nrate = \"10Mbit\"\ndelay = \"10ms\"\n\
         [transport.mptcp]\npath_manager = \"fullmesh\"\n\
         [[middleboxes]]\nkind = \"strip_mptcp\"\nlink = \"{link}\"\non = \"{on}\"\nfrom = \"{from}\"\nuntil = \"{until}\"\n{flows}"
    ))
}

#[test]
fn a_syn_stripping_rule_in_place_for_a_second_makes_only_the_connections_opened_then_fall_back() {
    let flow = |name: &str, start: &str| format!("[[flows]]\nname = \"{name}\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"mptcp\"\napp = \"bulk\"\nbytes = \"2MB\"\nstart = \"{start}\"\n");
    let r = firewall_for_a_while("path0", "syn", "0s", "1s", &(flow("early", "0s") + &flow("late", "2s")));
    let (early, late) = (&r.summary.flows[0], &r.summary.flows[1]);
    assert!(early.fallback && early.completed && early.verified, "{early:?}");
    assert_eq!(early.subflows.len(), 1);
    assert!(!late.fallback && late.completed && late.verified, "{late:?}");
    assert!(late.subflows.len() >= 2, "{late:?}");
}

#[test]
fn options_stripped_mid_connection_on_one_path_cost_that_path_only() {
    let bulk = "[[flows]]\nname = \"bulk\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"mptcp\"\napp = \"bulk\"\nbytes = \"12MB\"\n";
    let r = firewall_for_a_while("path1", "all", "2s", "5s", bulk);
    let f = &r.summary.flows[0];
    assert!(f.completed && f.verified && !f.fallback, "{f:?}");
    // Both paths before the box acts; the path without it while it does
    // (its subflows through the box are closed: data without a mapping).
    let (before, during) = (goodput(&r, "bulk", 0.5, 2.0), goodput(&r, "bulk", 2.5, 5.0));
    assert!(before > 1.6 * 9.5, "both paths before: {before:.2}");
    assert!(during < 10.0 && during > 0.8 * 9.5, "one path while the box acts: {during:.2}");
}

/// flows.csv's send-buffer columns: under the `linux` profile the
/// connection's buffer is Linux's autotuned one (4 KiB plus each subflow's
/// twice its largest window of 2304-byte segments: it only grows), and on
/// a 1 Mbit/s path beside a 50 Mbit/s one the slow subflow holds up the
/// DATA_ACK, so the connection runs with its buffer full. mplab's profile
/// keeps the fixed 4 MiB buffer.
#[test]
fn send_buffer_columns_show_linux_autotuning() {
    let sets = |p: &'static str| [("duration", "3s"), ("probes.pcap", "[]"), ("topology.rate", "[\"1Mbit\", \"50Mbit\"]"), ("transport.mptcp.profile", p)];
    let r = bundled("two-paths.toml", &sets("linux"));
    let all: Vec<usize> = (0..r.flows.len()).filter(|&i| r.flows[i].subflow == "all").collect();
    assert_eq!(r.send_buffers.iter().map(|s| s.row).collect::<Vec<_>>(), all, "one sample per connection row");
    let bufs: Vec<u64> = r.send_buffers.iter().map(|s| s.buffer_bytes).collect();
    assert!(bufs.windows(2).all(|w| w[0] <= w[1]), "the autotuned buffer never shrinks: {bufs:?}");
    let last = *bufs.last().unwrap();
    assert!(bufs[0] < last / 2, "it grows with the windows: {bufs:?}");
    assert_eq!((last - 4096) % 4608, 0, "4 KiB plus whole windows of 2 x 2304 bytes: {last}");
    for s in &r.send_buffers {
        assert!(s.queued_bytes <= s.buffer_bytes, "{s:?}");
    }
    let full = r.send_buffers.iter().filter(|s| r.flows[s.row].time_s > 1.5).filter(|s| s.queued_bytes * 10 >= s.buffer_bytes * 7).count();
    let late = r.send_buffers.iter().filter(|s| r.flows[s.row].time_s > 1.5).count();
    assert!(full * 10 >= late * 8, "send-buffer limited: {full} of {late} rows at 70 % or more");
    let m = bundled("two-paths.toml", &sets("mplab"));
    assert!(m.send_buffers.iter().all(|s| s.buffer_bytes == 4 << 20), "mplab keeps snd_buf");
}

/// `scenarios/laminar.toml`: the server announces its second address;
/// with the client's second address a `laminar` endpoint the join leaves
/// from it (one subflow per access link, both links' goodput), without
/// the flag from the client's first address (both subflows on its first
/// link, one link's goodput).
#[test]
fn a_laminar_endpoint_joins_the_announced_address() {
    let locals = |r: &RunResults| r.summary.flows[0].subflows.iter().map(|s| s.local.split(':').next().unwrap().to_string()).collect::<Vec<_>>();
    let lam = bundled("laminar.toml", &[]);
    assert_eq!(locals(&lam), ["10.0.0.1", "10.0.1.1"], "{:?}", lam.summary.flows[0].subflows);
    let plain = bundled("laminar.toml", &[("transport.mptcp.endpoints.1.flags", "[]")]);
    assert_eq!(locals(&plain), ["10.0.0.1", "10.0.0.1"]);
    // Two 10 Mbit/s access links against one.
    let (a, b) = (lam.summary.flows[0].goodput_bps / 1e6, plain.summary.flows[0].goodput_bps / 1e6);
    assert!(a > 18.0 && b < 10.0, "laminar {a:.2}, routing's choice {b:.2} Mbit/s");
}
