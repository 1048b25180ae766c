//! Load balancers on the kernel backend (seed 003 on Linux MPTCP): the
//! balancer is mplab's NFQUEUE forwarder in the router's namespace, the
//! servers are kernel MPTCP hosts holding the VIP on their loopback. The
//! same scenario files as the simulator's tests; the seed's factor 2 must
//! show. Needs root; removes its namespaces even when it fails.

mod kernel_support;

use kernel_support::{can_run, run, serial, NsGuard};
use mplab_emu::kernel::KernelRun;

/// One 50 Mbit/s link's goodput at most (1448 of 1500 bytes).
const ONE_LINK: f64 = 50.0 * 1448.0 / 1500.0;

fn scenario(file: &str, sets: &[(&str, &str)]) -> String {
    let path = format!("{}/../../scenarios/{file}", env!("CARGO_MANIFEST_DIR"));
    let mut sc = mplab_scenario::Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
    sc.set_all(sets.iter().copied()).unwrap_or_else(|e| panic!("{e}"));
    sc.effective_toml()
}

fn mbps(r: &KernelRun) -> f64 {
    r.results.summary.flows.iter().map(|f| f.goodput_bps).sum::<f64>() / 1e6
}

fn joins(r: &KernelRun) -> (u64, u64) {
    let s = &r.results.summary.servers;
    (s.iter().map(|x| x.joins_accepted).sum(), s.iter().map(|x| x.joins_refused).sum())
}

#[test]
fn kernel_seed003_aware_balancer_doubles_throughput() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("lb");
    // 20 MB: about 3.5 s on both links, 7 s on one.
    let sets = [("duration", "12s"), ("flows.0.bytes", "20MB")];
    let token = run(&g, 0, &scenario("seed003-lb.toml", &sets));
    let iphash = run(&g, 1, &scenario("seed003-lb-iphash.toml", &sets));
    let stateless = run(&g, 2, &scenario("seed003-lb.toml", &[sets[0], sets[1], ("middleboxes.0.mode", "stateless")]));
    for (name, r) in [("token", &token), ("iphash", &iphash), ("stateless", &stateless)] {
        let f = &r.results.summary.flows[0];
        eprintln!("{name}: {:.1} Mbit/s, {:?} s, joins {:?}, balancer {:?}, servers {:?}", mbps(r), f.completion_time_s, joins(r), r.results.summary.balancers, r.results.summary.servers);
        assert!(f.completed && f.verified && !f.fallback, "{name}: {f:?}");
    }
    assert!(mbps(&token) > 1.7 * ONE_LINK, "token {:.1}", mbps(&token));
    assert!(mbps(&stateless) > 1.7 * ONE_LINK, "stateless {:.1}", mbps(&stateless));
    assert!(mbps(&iphash) < 1.05 * ONE_LINK, "iphash {:.1}", mbps(&iphash));
    let (t_tok, t_ip) = (token.results.summary.flows[0].completion_time_s.unwrap(), iphash.results.summary.flows[0].completion_time_s.unwrap());
    assert!(t_ip > 1.6 * t_tok, "{t_ip:.2} s against {t_tok:.2} s");
    // The kernel's counters say where the joins went.
    let b = &token.results.summary.balancers[0].stats;
    assert_eq!((b.joins, b.joins_by_token), (1, 1), "{b:?}");
    assert_eq!(joins(&token), (1, 0));
    assert_eq!(joins(&iphash), (0, 1), "the other server reset the join");
    assert_eq!(stateless.results.summary.balancers[0].stats.joins, 0, "stateless joins bypass the VIP");
    assert_eq!(joins(&stateless), (1, 0));
    g.assert_clean();
}

/// mplab's stack as the client (userspace backend) against Linux backends
/// behind the same balancer: its join goes by token, and it honours the
/// C flag Linux sets for the stateless design (no join to the VIP, one to
/// the address the server announces).
#[test]
fn userspace_mplab_client_behind_the_balancer() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("lbus");
    let base = [("duration", "12s"), ("flows.0.bytes", "20MB"), ("nodes.1.stack", "kernel"), ("nodes.2.stack", "kernel"), ("nodes.3.stack", "kernel")];
    for (i, mode) in ["token", "stateless"].into_iter().enumerate() {
        let mut sets = base.to_vec();
        sets.push(("middleboxes.0.mode", mode));
        let (sc, net) = kernel_support::resolve(&scenario("seed003-lb.toml", &sets));
        let errs = mplab_emu::userspace::unsupported(&sc, &net);
        assert!(errs.is_empty(), "{errs:?}");
        let opts = mplab_emu::kernel::KernelOptions { prefix: Some(g.run_prefix(i)), ..Default::default() };
        let r = mplab_emu::userspace::run(&net, &opts).unwrap_or_else(|e| panic!("userspace run failed: {e}"));
        assert_eq!(r.meta["mplab_hosts"].as_object().map(|h| h.len()), Some(1), "{}", r.meta["mplab_hosts"]);
        let f = &r.results.summary.flows[0];
        eprintln!("mplab client, {mode}: {:.1} Mbit/s, {:?}, servers {:?}", mbps(&r), f.subflows, r.results.summary.servers);
        assert!(f.completed && f.verified && !f.fallback, "{mode}: {f:?}");
        assert!(mbps(&r) > 1.7 * ONE_LINK, "{mode}: {:.1}", mbps(&r));
        assert_eq!(joins(&r), (1, 0), "{mode}");
        let to_vip = f.subflows.iter().filter(|s| s.local.starts_with("10.100.0.1:")).count();
        assert_eq!(to_vip, if mode == "stateless" { 1 } else { 2 }, "{mode}: {:?}", f.subflows);
    }
    g.assert_clean();
}
