//! What the simulator's integration tests share: run a scenario text, a
//! parsed scenario, or a bundled scenario with `--set` overrides.

#![allow(dead_code)]

use mplab_scenario::Scenario;
use mplab_sim::RunResults;

/// Runs a parsed scenario to its end; panics (naming the field) on a
/// scenario error or a setting the simulator refuses.
pub fn run_scenario(sc: Scenario) -> RunResults {
    let net = mplab_backend::plugins::resolve(&sc).unwrap_or_else(|e| panic!("{e}"));
    mplab_sim::simulate(net).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a scenario given as TOML text.
pub fn run(toml: &str) -> RunResults {
    run_scenario(Scenario::from_str(toml, "test.toml").unwrap_or_else(|e| panic!("{e}")))
}

/// Runs `scenarios/NAME` with `sets` applied as `--set PATH=VALUE` would.
pub fn bundled(name: &str, sets: &[(&str, &str)]) -> RunResults {
    let path = format!("{}/../../scenarios/{name}", env!("CARGO_MANIFEST_DIR"));
    let mut sc = Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
    sc.set_all(sets.iter().copied()).unwrap_or_else(|e| panic!("{e}"));
    run_scenario(sc)
}

/// Hybrid access: client - CPE = two access links (a 20 Mbit/s fixed line
/// of 10 ms, cellular of 25 ms) = HAG - server, the CPE's second address
/// an MPTCP endpoint. The tests of the gateways' tunnel and converters
/// put their flows after it.
pub const HYBRID_ACCESS: &str = r#"
[[nodes]]
name = "client"
[[nodes]]
name = "cpe"
kind = "router"
[[nodes]]
name = "hag"
kind = "router"
[[nodes]]
name = "server"

[[links]]
name = "dsl"
a = "cpe"
b = "hag"
rate = "20Mbit"
delay = "10ms"
queue = { kind = "droptail", packets = 50 }

[[links]]
name = "lte"
a = "cpe"
b = "hag"
rate = "20Mbit"
delay = "25ms"
queue = { kind = "droptail", packets = 100 }

[[links]]
name = "lan"
a = "client"
b = "cpe"
rate = "1Gbit"

[[links]]
name = "core"
a = "hag"
b = "server"
rate = "1Gbit"
delay = "2ms"

[transport.mptcp]
path_manager = "endpoints"

[[transport.mptcp.endpoints]]
node = "cpe"
iface = "eth1"
flags = ["subflow"]

"#;
