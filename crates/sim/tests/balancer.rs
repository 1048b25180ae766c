//! Load balancers on the simulator (seed 003): the MPTCP-aware designs
//! carry a connection's joins to its server, the unaware ones hash them
//! anywhere; several instances behind ECMP break the token design's
//! per-instance state and nothing else. Figures from the link rates: a
//! client has two 50 Mbit/s access links, one carries about 47 Mbit/s of
//! goodput (1448 of every 1500 bytes on the wire, less ramp-up).

mod support;

use mplab_sim::RunResults;
use support::*;

const ONE_LINK: f64 = 50.0 * 1448.0 / 1500.0;

fn mbps(r: &RunResults) -> f64 {
    r.summary.flows.iter().map(|f| f.goodput_bps).sum::<f64>() / 1e6
}

fn all_verified(r: &RunResults) {
    for f in &r.summary.flows {
        assert!(f.verified && f.completed && !f.fallback, "{f:?}");
    }
}

fn joins(r: &RunResults) -> (u64, u64) {
    (r.summary.servers.iter().map(|s| s.joins_accepted).sum(), r.summary.servers.iter().map(|s| s.joins_refused).sum())
}

#[test]
fn seed003_the_aware_balancer_doubles_throughput_and_halves_the_time() {
    let aware = bundled("seed003-lb.toml", &[]);
    let unaware = bundled("seed003-lb-iphash.toml", &[]);
    all_verified(&aware);
    all_verified(&unaware);
    let (a, u) = (mbps(&aware), mbps(&unaware));
    assert!(a > 1.85 * ONE_LINK && a < 2.0 * ONE_LINK, "token: {a:.1} Mbit/s");
    assert!(u > 0.9 * ONE_LINK && u < 1.0 * ONE_LINK, "iphash: {u:.1} Mbit/s");
    let (ta, tu) = (aware.summary.flows[0].completion_time_s.unwrap(), unaware.summary.flows[0].completion_time_s.unwrap());
    assert!(tu > 1.8 * ta, "{tu:.2} s against {ta:.2} s");
    // The aware balancer sent the join by its token; with the unaware one
    // it reached the other server, which reset it.
    let b = &aware.summary.balancers[0];
    assert_eq!((b.stats.joins, b.stats.joins_by_token, b.stats.tokens_learned), (1, 1, 1), "{b:?}");
    assert_eq!(joins(&aware), (1, 0));
    assert_eq!(joins(&unaware), (0, 1));
    assert_eq!(aware.summary.flows[0].subflows.len(), 2);
    assert_eq!(unaware.summary.flows[0].subflows.len(), 1);
}

#[test]
fn stateless_joins_go_to_the_servers_own_address_and_the_c_flag_keeps_them_off_the_vip() {
    let r = bundled("seed003-lb.toml", &[("middleboxes.0.mode", "stateless")]);
    all_verified(&r);
    assert!(mbps(&r) > 1.85 * ONE_LINK, "{:.1}", mbps(&r));
    let b = &r.summary.balancers[0];
    assert_eq!(b.stats.joins, 0, "no join reaches the VIP: {b:?}");
    assert_eq!(joins(&r), (1, 0));
    let locals: Vec<&str> = r.summary.flows[0].subflows.iter().map(|s| s.local.as_str()).collect();
    assert!(locals.contains(&"10.100.0.1:5001") && locals.iter().any(|l| !l.starts_with("10.100.0.1")), "{locals:?}");
}

#[test]
fn fivetuple_is_consistent_but_unaware() {
    let r = bundled("seed003-lb.toml", &[("middleboxes.0.mode", "fivetuple")]);
    all_verified(&r);
    let (acc, refused) = joins(&r);
    assert_eq!(acc + refused, 1);
    // Where the join lands decides everything: one link or two.
    let want = if acc == 1 { 2.0 } else { 1.0 } * ONE_LINK;
    assert!((mbps(&r) - want).abs() < 0.1 * want, "{:.1} with {acc} join accepted", mbps(&r));
}

/// The sum over instances of (joins by token, joins with an unknown token).
fn token_joins(r: &RunResults) -> (u64, u64) {
    (r.summary.balancers.iter().map(|b| b.stats.joins_by_token).sum(), r.summary.balancers.iter().map(|b| b.stats.joins_unknown_token).sum())
}

#[test]
fn parallel_instances_break_only_the_token_design() {
    let run = |mode: &str, n: &str, seed: &str| bundled("seed003-lb-ecmp.toml", &[("topology.mode", mode), ("topology.balancers", n), ("seed", seed)]);
    // One instance: the token design gets every join through.
    let one = run("token", "1", "3");
    all_verified(&one);
    assert_eq!(token_joins(&one), (8, 0));
    assert_eq!(joins(&one), (8, 0));
    // Four: joins that ECMP sends to another instance find no token there.
    let four = run("token", "4", "3");
    all_verified(&four);
    let (by_token, unknown) = token_joins(&four);
    assert_eq!(by_token + unknown, 8);
    assert!(unknown >= 2, "{unknown} unknown tokens of 8");
    assert!(joins(&four).1 >= 1, "{:?}", joins(&four));
    assert!(mbps(&four) < mbps(&one) - 0.5 * ONE_LINK, "{:.0} vs {:.0}", mbps(&four), mbps(&one));
    // The stateless design does not care how many instances there are.
    for n in ["1", "4"] {
        let r = run("stateless", n, "3");
        all_verified(&r);
        assert_eq!(joins(&r), (8, 0), "{n} instances");
        assert!((mbps(&r) - mbps(&one)).abs() < 0.02 * mbps(&one));
    }
    // Maglev is the same table on every instance: the five-tuple design
    // routes each join alike with one instance or four.
    let (f1, f4) = (run("fivetuple", "1", "3"), run("fivetuple", "4", "3"));
    assert_eq!(joins(&f1), joins(&f4));
    let conns = |r: &RunResults| r.summary.servers.iter().map(|s| s.connections).collect::<Vec<_>>();
    assert_eq!(conns(&f1), conns(&f4));
}

#[test]
fn direct_server_return_token_mode_learns_keys_from_the_third_ack() {
    let r = bundled("seed003-lb-ecmp.toml", &[("topology.mode", "token"), ("topology.return", "direct"), ("topology.balancers", "1")]);
    all_verified(&r);
    // Without the SYN/ACK the key comes with the client's third ACK, which
    // leaves the client together with its join (on the other link): a
    // join that reaches the balancer first has a token it does not know
    // yet. Every token is learned in the end.
    let b = &r.summary.balancers[0];
    assert_eq!(b.stats.tokens_learned, 8);
    let (by_token, unknown) = token_joins(&r);
    assert_eq!(by_token + unknown, 8);
    assert!(by_token >= 4, "{by_token} of 8 by token");
    // Replies bypass the balancer: they leave the backends by their edge
    // links (listed first, eth0), and the balancer sends nothing back.
    let tx = |node: &str, iface: &str| r.summary.interfaces.iter().filter(|i| i.node.starts_with(node) && i.iface == iface).map(|i| i.tx_bytes).sum::<u64>();
    let delivered: u64 = r.summary.flows.iter().map(|f| f.bytes_delivered).sum();
    assert!(tx("srv", "eth0") > delivered, "{} of {delivered} bytes", tx("srv", "eth0"));
    assert_eq!(tx("lb0", "eth0"), 0);
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let a = bundled("seed003-lb-ecmp.toml", &[("topology.mode", "token"), ("topology.balancers", "2")]);
    let b = bundled("seed003-lb-ecmp.toml", &[("topology.mode", "token"), ("topology.balancers", "2")]);
    assert_eq!(a.summary, b.summary);
}

#[test]
fn a_backend_that_disappears_gets_no_new_connections() {
    // srv0's link to the balancer fails at 1 s; four clients start at 3 s.
    let mut sets = vec![("topology.balancers", "1"), ("events", r#"[{ at = "1s", link = "lb0-srv0", action = "down" }]"#)];
    for f in 4..8 {
        sets.push((["flows.4.start", "flows.5.start", "flows.6.start", "flows.7.start"][f - 4], "3s"));
    }
    let r = bundled("seed003-lb-ecmp.toml", &sets);
    let b = &r.summary.balancers[0];
    let late = &r.summary.flows[4..];
    for f in late {
        assert!(f.completed && f.verified && f.goodput_bps > 1.85 * ONE_LINK * 1e6, "{f:?}");
    }
    // The late connections all went to srv1; segments of connections that
    // were on srv0 were sent to srv1 instead (which resets them), and none
    // of the flows cut short delivered a wrong byte.
    let on_srv0 = b.stats.connections_to[0];
    assert_eq!(b.stats.connections_to[1], 8 - on_srv0);
    assert!(on_srv0 >= 1 && on_srv0 <= 4, "{:?}", b.stats.connections_to);
    assert!(b.stats.rerouted > 0, "{b:?}");
    let cut = r.summary.flows.iter().filter(|f| !f.completed).count() as u64;
    assert_eq!(cut, on_srv0, "the connections on srv0 are lost");
    assert!(r.summary.flows.iter().all(|f| f.verified));
}

#[test]
fn balancer_counters_are_written_as_csv() {
    let r = bundled("seed003-lb-ecmp.toml", &[("topology.balancers", "2")]);
    let b = r.balancers_csv();
    let lines: Vec<&str> = b.lines().collect();
    assert_eq!(lines.len(), 3, "{b}");
    assert!(lines[0].starts_with("node,mode,vip,packets,connections,joins,joins_by_token"));
    assert!(lines[1].starts_with("lb0,token,10.100.0.1,") && lines[2].starts_with("lb1,token,"), "{b}");
    let s = r.servers_csv();
    assert_eq!(s.lines().count(), 3, "{s}");
    let accepted: u64 = s.lines().skip(1).map(|l| l.split(',').nth(2).unwrap().parse::<u64>().unwrap()).sum();
    assert_eq!(accepted, joins(&r).0);
}
