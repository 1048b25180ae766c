//! Link jitter distribution, reordering and the ECMP mode: parsing,
//! defaults, per-direction overrides, generators, `--set` and the resolved
//! network's serialisation.

mod common;

use common::net;
use mplab_scenario::network::{EcmpMode, JitterDistribution};
use mplab_scenario::Scenario;

/// Two hosts and a link with 5 ms jitter; `extra` goes into the link.
fn one_link(top: &str, extra: &str) -> String {
    format!(
        r#"name = "j"
{top}
[[nodes]]
name = "c"

[[nodes]]
name = "s"

[[links]]
a = "c"
b = "s"
rate = "10Mbit"
delay = "20ms"
jitter = "5ms"
{extra}
"#
    )
}

#[test]
fn defaults_are_uniform_in_order_and_hash() {
    let n = net(&one_link("", ""));
    assert_eq!(n.ecmp, EcmpMode::Hash);
    for d in [&n.links[0].ab, &n.links[0].ba] {
        assert_eq!(d.jitter_ns, 5_000_000);
        assert_eq!(d.jitter_distribution, JitterDistribution::Uniform);
        assert!(!d.reorder);
    }
    // Generated links too.
    let ft = net("name = \"ft\"\n[topology]\nkind = \"fattree\"\nk = 4\nrate = \"10Mbit\"\n");
    assert!(ft.links.iter().all(|l| l.ab.jitter_distribution == JitterDistribution::Uniform && !l.ab.reorder && !l.ba.reorder));
    assert_eq!(ft.ecmp, EcmpMode::Hash);
}

#[test]
fn every_distribution_parses() {
    for (name, want) in [("uniform", JitterDistribution::Uniform), ("normal", JitterDistribution::Normal), ("pareto", JitterDistribution::Pareto)] {
        let n = net(&one_link("", &format!("jitter_distribution = \"{name}\"\nreorder = true")));
        for d in [&n.links[0].ab, &n.links[0].ba] {
            assert_eq!(d.jitter_distribution, want);
            assert!(d.reorder);
        }
    }
}

#[test]
fn ecmp_modes_parse() {
    assert_eq!(net(&one_link("ecmp = \"hash\"", "")).ecmp, EcmpMode::Hash);
    assert_eq!(net(&one_link("ecmp = \"random\"", "")).ecmp, EcmpMode::Random);
}

#[test]
fn per_direction_overrides() {
    let n = net(&one_link(
        "",
        "jitter_distribution = \"normal\"\n\n[links.ab]\njitter_distribution = \"pareto\"\nreorder = true\n\n[links.ba]\njitter = \"1ms\"\n",
    ));
    let l = &n.links[0];
    assert_eq!((l.ab.jitter_ns, l.ab.jitter_distribution, l.ab.reorder), (5_000_000, JitterDistribution::Pareto, true));
    // ba overrides only the scale: the link's distribution and order stay.
    assert_eq!((l.ba.jitter_ns, l.ba.jitter_distribution, l.ba.reorder), (1_000_000, JitterDistribution::Normal, false));
    // A direction can also turn reordering off again.
    let n = net(&one_link("", "reorder = true\n\n[links.ba]\nreorder = false\n"));
    assert!(n.links[0].ab.reorder && !n.links[0].ba.reorder);
}

#[test]
fn parallel_generator_takes_values_or_lists() {
    let n = net(
        r#"name = "p"
[topology]
kind = "parallel"
paths = 3
rate = "10Mbit"
jitter = ["1ms", "2ms", "3ms"]
jitter_distribution = ["uniform", "normal", "pareto"]
reorder = true
"#,
    );
    let got: Vec<_> = n.links.iter().map(|l| (l.ab.jitter_ns, l.ab.jitter_distribution, l.ab.reorder, l.ba.jitter_distribution)).collect();
    assert_eq!(
        got,
        [
            (1_000_000, JitterDistribution::Uniform, true, JitterDistribution::Uniform),
            (2_000_000, JitterDistribution::Normal, true, JitterDistribution::Normal),
            (3_000_000, JitterDistribution::Pareto, true, JitterDistribution::Pareto),
        ]
    );
    let n = net("name = \"p\"\n[topology]\nkind = \"parallel\"\npaths = 2\nrate = \"1Mbit\"\njitter_distribution = \"normal\"\nreorder = [false, true]\n");
    assert!(n.links.iter().all(|l| l.ab.jitter_distribution == JitterDistribution::Normal));
    assert_eq!((n.links[0].ab.reorder, n.links[1].ba.reorder), (false, true));
}

#[test]
fn set_overrides_reach_the_new_fields() {
    let mut sc = Scenario::from_str(&one_link("", ""), "j.toml").unwrap();
    sc.set_all([("ecmp", "random"), ("links.0.jitter_distribution", "pareto"), ("links.0.ba.reorder", "true")]).unwrap();
    let n = sc.resolve().unwrap();
    assert_eq!(n.ecmp, EcmpMode::Random);
    assert_eq!((n.links[0].ab.jitter_distribution, n.links[0].ab.reorder), (JitterDistribution::Pareto, false));
    assert_eq!((n.links[0].ba.jitter_distribution, n.links[0].ba.reorder), (JitterDistribution::Pareto, true));
    let e = sc.set("links.0.jitter_distribution", "lognormal").unwrap_err().to_string();
    assert_eq!(e, "j.toml: --set links.0.jitter_distribution=lognormal: links[0].jitter_distribution: unknown variant `lognormal`, expected one of `uniform`, `normal`, `pareto`");
}

#[test]
fn resolved_fields_serialise_as_lower_case_names_deterministically() {
    let text = one_link("ecmp = \"random\"", "jitter_distribution = \"normal\"\n\n[links.ba]\nreorder = true\n");
    let n = net(&text);
    let v = serde_json::to_value(&n).unwrap();
    assert_eq!(v["ecmp"], "random");
    assert_eq!(v["links"][0]["ab"]["jitter_ns"], 5_000_000);
    assert_eq!(v["links"][0]["ab"]["jitter_distribution"], "normal");
    assert_eq!(v["links"][0]["ab"]["reorder"], false);
    assert_eq!(v["links"][0]["ba"]["reorder"], true);
    let a = serde_json::to_string(&n).unwrap();
    assert_eq!(a, serde_json::to_string(&net(&text)).unwrap());
    // Field order is fixed: ecmp right after duration_ns, the jitter fields together.
    assert!(a.contains(r#""duration_ns":30000000000,"ecmp":"random","nodes":"#), "{a}");
    assert!(a.contains(r#""jitter_ns":5000000,"jitter_distribution":"normal","reorder":false,"loss":"#), "{a}");
}
