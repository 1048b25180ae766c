//! What the plug-in table tests share: a small valid scenario to append a
//! case to, and loading it as every command does.

use mplab_backend::plugins::resolve;
use mplab_scenario::network::Network;
use mplab_scenario::Scenario;

/// Two hosts and a link: lines 1-12. Cases append from line 13 on.
pub const BASE: &str = r#"name = "bad"

[[nodes]]
name = "c"

[[nodes]]
name = "s"

[[links]]
a = "c"
b = "s"
rate = "10Mbit"
"#;

/// The network a run gets from `text`, or the error with its line.
pub fn load(text: &str) -> Result<Network, String> {
    Scenario::from_str(text, "scenario.toml").and_then(|sc| resolve(&sc)).map_err(|e| e.to_string())
}
