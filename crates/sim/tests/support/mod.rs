//! What the simulator's integration tests share: run a scenario text, a
//! parsed scenario, or a bundled scenario with `--set` overrides.

#![allow(dead_code)]

use mplab_scenario::Scenario;
use mplab_sim::RunResults;

/// Runs a parsed scenario to its end; panics (naming the field) on a
/// scenario error or a setting the simulator refuses.
pub fn run_scenario(sc: Scenario) -> RunResults {
    let net = sc.resolve().unwrap_or_else(|e| panic!("{e}"));
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
