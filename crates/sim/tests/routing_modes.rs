//! ECMP modes on a k = 4 fat-tree: `ecmp = "hash"` and `ecmp = "random"`
//! both spread cross-pod flows over every core router, choose differently,
//! and repeat exactly for a seed.

mod support;

use mplab_scenario::network::EcmpMode;
use mplab_scenario::Scenario;
use mplab_sim::RunResults;
use support::*;

/// 16 TCP flows, each host to the host four ahead (always another pod).
fn fat_tree(ecmp: &str, seed: u64) -> String {
    let mut toml = format!(
        "name = \"ft-{ecmp}\"\nseed = {seed}\nduration = \"1s\"\necmp = \"{ecmp}\"\n\
         [topology]\nkind = \"fattree\"\nk = 4\nrate = \"100Mbit\"\ndelay = \"10us\"\n"
    );
    for i in 0..16 {
        let j = (i + 4) % 16;
        toml.push_str(&format!("[[flows]]\nname = \"f{i}\"\nfrom = \"h{i}\"\nto = \"h{j}\"\ntransport = \"tcp\"\n"));
    }
    toml
}

/// Packets serialised on the links to each core (both directions).
fn per_core(r: &RunResults) -> [u64; 4] {
    let mut out = [0; 4];
    for (core, n) in out.iter_mut().enumerate() {
        *n = r.summary.links.iter().filter(|l| l.name.ends_with(&format!("-core{core}"))).map(|l| l.tx_packets).sum();
    }
    out
}

#[test]
fn ecmp_mode_is_resolved() {
    let net = |mode| Scenario::from_str(&fat_tree(mode, 1), "ft.toml").unwrap().resolve().unwrap().ecmp;
    assert_eq!(net("hash"), EcmpMode::Hash);
    assert_eq!(net("random"), EcmpMode::Random);
}

#[test]
fn hash_and_random_both_use_every_core_differently_and_repeat() {
    let mut cores = Vec::new();
    for mode in ["hash", "random"] {
        let toml = fat_tree(mode, 1);
        let r = run(&toml);
        let c = per_core(&r);
        assert!(c.iter().all(|&n| n > 1000), "{mode}: per-core packets {c:?}");
        // Random choices may stack flows on one path; none starves outright.
        assert!(r.summary.flows.iter().all(|f| f.verified && f.bytes_delivered > 100_000), "{mode}: {:?}", r.summary.flows);
        // Same seed, same everything.
        assert_eq!(r, run(&toml), "{mode} is not deterministic");
        cores.push(c);
    }
    assert_ne!(cores[0], cores[1], "hash and random chose identically: {cores:?}");
}

#[test]
fn random_choices_follow_the_seed() {
    let a = per_core(&run(&fat_tree("random", 1)));
    let b = per_core(&run(&fat_tree("random", 2)));
    assert_ne!(a, b, "another seed, other random choices");
}

/// Incast on the star generator: three senders into one host share its
/// 10 Mbit/s access link (the hub's queue toward h0), so their goodputs
/// add up to that link's rate less header overhead, and each gets a share.
#[test]
fn star_incast_shares_the_receivers_link() {
    let flows: String = (1..=3).map(|i| format!("[[flows]]\nfrom = \"h{i}\"\nto = \"h0\"\ntransport = \"tcp\"\napp = \"bulk\"\nstart = \"0s\"\n")).collect();
    let r = support::run(&format!(
        "name = \"incast\"\nduration = \"20s\"\nseed = 3\n[topology]\nkind = \"star\"\nhosts = 4\nrate = \"10Mbit\"\ndelay = \"5ms\"\nqueue = {{ kind = \"droptail\", packets = 50 }}\n{flows}"
    ));
    let g: Vec<f64> = r.summary.flows.iter().map(|f| f.goodput_bps / 1e6).collect();
    let total: f64 = g.iter().sum();
    // 1448 payload bytes in 1500-byte packets: at most 9.65 Mbit/s of goodput.
    assert!(total > 9.0 && total <= 9.66, "aggregate goodput {total:.2} Mbit/s ({g:?})");
    assert!(g.iter().all(|&x| x > 1.0), "every sender gets a share: {g:?}");
    assert!(r.summary.flows.iter().all(|f| f.verified));
}
