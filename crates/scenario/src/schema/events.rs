//! `[[events]]` as written: link and address changes at given times, and
//! the mobility vocabulary (Wi-Fi association, handovers, fading) that
//! resolves into them.

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
    /// The host marks its address as backup or not (`backup = true|false`):
    /// MP_PRIO on every subflow from it (`ip mptcp endpoint change id N
    /// backup|nobackup`); subflows it opens later carry the flag.
    Prio,
    /// A phone leaves the Wi-Fi cell: the link goes down, and the host
    /// withdraws the address `detect` later (default at once).
    WifiLost,
    /// It is back in the cell: the link comes up, and the address returns
    /// `dhcp` later (the DHCP exchange; default 1 s).
    WifiRegained,
    /// The host moves its traffic from `iface` to `to`: make-before-break
    /// brings `to` into service (and out of backup), marks `iface` backup,
    /// and `overlap` later takes `iface` away; break-before-make takes
    /// `iface` away and brings `to` in `gap` later.
    Handover,
    /// The signal fades: rate and loss move from their current values to
    /// `rate` and `loss` over `over`, a step every `every` (default 100 ms).
    Fade,
}

/// How a [`EventAction::Handover`] orders the two interfaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HandoverMode {
    MakeBeforeBreak,
    BreakBeforeMake,
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
    /// `prio`: the flag to set.
    #[serde(default)]
    pub backup: Option<bool>,
    /// `wifi_lost`: how long the host takes to notice and withdraw the address.
    #[serde(default)]
    pub detect: Option<Duration>,
    /// `wifi_regained`: how long until the address is back.
    #[serde(default)]
    pub dhcp: Option<Duration>,
    /// `handover`: the interface taken (on the same node).
    #[serde(default)]
    pub to: Option<String>,
    #[serde(default)]
    pub mode: Option<HandoverMode>,
    /// `handover`, make-before-break: time both are in service.
    #[serde(default)]
    pub overlap: Option<Duration>,
    /// `handover`, break-before-make: time neither is.
    #[serde(default)]
    pub gap: Option<Duration>,
    /// `fade`: how long the change takes ...
    #[serde(default)]
    pub over: Option<Duration>,
    /// ... in steps this far apart.
    #[serde(default)]
    pub every: Option<Duration>,
}
