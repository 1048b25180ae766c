//! `[[events]]` as written: link and address changes at given times.

use serde::{Deserialize, Serialize};

use crate::units::{Duration, Probability, Rate};
use crate::vocab::Direction;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventAction {
    Down,
    Up,
    Set,
    /// The host withdraws the interface's address from MPTCP (REMOVE_ADDR;
    /// `ip mptcp endpoint delete`); needs `node` and `iface`.
    RemoveAddr,
    /// The host puts it back (`ip mptcp endpoint add`): announced or
    /// joined again, as the path manager does at establishment.
    AddAddr,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    pub at: Duration,
    /// The link by name ...
    #[serde(default)]
    pub link: Option<String>,
    /// ... or by one of its interfaces.
    #[serde(default)]
    pub node: Option<String>,
    #[serde(default)]
    pub iface: Option<String>,
    pub action: EventAction,
    #[serde(default)]
    pub direction: Option<Direction>,
    #[serde(default)]
    pub rate: Option<Rate>,
    #[serde(default)]
    pub delay: Option<Duration>,
    #[serde(default)]
    pub jitter: Option<Duration>,
    #[serde(default)]
    pub loss: Option<Probability>,
}
