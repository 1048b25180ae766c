//! Middlebox kinds (`[[middleboxes]] kind = ...`): what a box on a link or
//! a router does to the packets passing it.
//!
//! The kinds are mplab-backend's middlebox registry
//! (crates/backend/src/middlebox/, one file each), which reads each kind's
//! table. This crate types only the two kinds it must understand itself:
//! the load balancer (its VIP takes part in routing, [`crate::balancer`])
//! and the attacker (the adversarial matrix, [`crate::attack`]); their
//! entries are here, and the backend lists them with its own. Every other
//! kind stays a [`MiddleboxPlugin`] until the backend checks it.

use super::about::{About, OnKernel};
use super::fields::{Fields, PluginError};
use crate::attack::{AttackKind, Moment, Mount};
use crate::error::Diag;
use crate::network::{BalancerMode, Direction, MiddleboxAction, MiddleboxPlugin, Placement};
use crate::schema::MiddleboxSpec;

/// What a middlebox kind says about itself: its [`About`] and where it may
/// sit.
#[derive(Debug, Clone, Copy)]
pub struct MiddleboxFacts {
    pub about: About,
    /// It may sit on a link direction (`link = ...`).
    pub on_link: bool,
    /// It may sit on a router (`node = ...`).
    pub on_router: bool,
}

impl MiddleboxFacts {
    /// The error for a box of this kind at `placement`, if it may not sit
    /// there: (the field to name under the box's path, why).
    pub fn misplaced(&self, placement: &Placement) -> Option<(&'static str, String)> {
        match placement {
            Placement::Link { .. } if !self.on_link => Some(("link", format!("a {} middlebox sits on a router: give it `node`, not `link`", self.about.name))),
            Placement::Node { .. } if !self.on_router => Some(("node", format!("a {} middlebox sits on a link: give it `link`, not `node`", self.about.name))),
            _ => None,
        }
    }
}

/// One kind this crate types.
pub struct MiddleboxEntry {
    pub facts: MiddleboxFacts,
    /// Reads and checks the kind's fields into its action.
    resolve: fn(&MiddleboxSpec, &mut Fields) -> Result<MiddleboxAction, PluginError>,
}

/// The kinds this crate types; one line each.
pub const REGISTRY: &[MiddleboxEntry] = &[
    MiddleboxEntry {
        facts: MiddleboxFacts {
            about: About {
                name: "load_balancer",
                params: &["mode", "vip", "backends", "table", "idle"],
                what: "a layer-4 load balancer for `vip` in front of `backends`: iphash, fivetuple (Maglev), token (MPTCP-aware) or stateless (joins to the backends' own addresses)",
                kernel: OnKernel::Runs("an NFQUEUE forwarder in the router's namespace marks each segment to the VIP for its backend's routing table; the VIP on the backends' lo"),
            },
            on_link: false,
            on_router: true,
        },
        resolve: load_balancer,
    },
    MiddleboxEntry {
        facts: MiddleboxFacts {
            about: About {
                name: "attacker",
                params: &["attack", "at", "after", "count"],
                what: "an attacker on a link (both directions) that forges, replays or changes MPTCP segments at `at`, or `at` after a protocol moment it sees on its link (`after`: mp-capable, mp-join, add-addr, data-fin): one row of the adversarial matrix (`mplab attack`)",
                kernel: OnKernel::Runs("in the link emulator, on the frames of that link"),
            },
            on_link: true,
            on_router: false,
        },
        resolve: attacker,
    },
];

/// The entry of a kind this crate types.
pub fn typed(name: &str) -> Option<&'static MiddleboxEntry> {
    REGISTRY.iter().find(|e| e.facts.about.name == name)
}

/// Checks a middlebox's kind-specific fields (not its placement) when this
/// crate types its kind and builds its action; any other kind is kept as
/// its table at `path`, for the backend's registry.
pub(crate) fn resolve(m: &MiddleboxSpec, path: &str) -> Result<MiddleboxAction, Diag> {
    let Some(e) = typed(m.kind()) else {
        return Ok(MiddleboxAction::Plugin(MiddleboxPlugin::new(m.table.clone(), path)));
    };
    let mut f = Fields::new(&m.table, path);
    (e.resolve)(m, &mut f).map_err(|e| Diag::new(e.path, e.message))
}

fn load_balancer(_: &MiddleboxSpec, f: &mut Fields) -> Result<MiddleboxAction, PluginError> {
    let mode: Option<String> = f.get("mode")?;
    let vip = f.get("vip")?;
    let backends: Option<Vec<String>> = f.get("backends")?;
    let table: Option<u64> = f.get("table")?;
    let idle: Option<crate::Duration> = f.get("idle")?;
    f.finish()?;
    let names = || BalancerMode::ALL.map(|m| format!("{:?}", m.name())).join(", ");
    let mode = match mode.as_deref() {
        Some(s) => BalancerMode::from_name(s).ok_or_else(|| f.error_at("mode", format!("unknown mode {s:?} for kind = \"load_balancer\" ({})", names())))?,
        None => return Err(f.error(format!("kind = \"load_balancer\" needs `mode` ({})", names()))),
    };
    let vip = vip.ok_or_else(|| f.error("kind = \"load_balancer\" needs `vip`, the address clients connect to"))?;
    let backends = backends.unwrap_or_default();
    if backends.is_empty() {
        return Err(f.error_at("backends", "a load balancer needs at least one backend host"));
    }
    if backends.len() > 1000 {
        return Err(f.error_at("backends", "at most 1000 backends"));
    }
    if table.is_some_and(|t| t == 0 || t > 1 << 26) {
        return Err(f.error_at("table", "must be between 1 and 67108864 entries"));
    }
    if idle.is_some_and(|d| d.as_nanos() == 0) {
        return Err(f.error_at("idle", "must be greater than 0"));
    }
    Ok(MiddleboxAction::LoadBalancer { mode, vip, backends, table: table.unwrap_or(1 << 20), idle_ns: idle.map_or(300_000_000_000, |d| d.as_nanos()) })
}

fn attacker(m: &MiddleboxSpec, f: &mut Fields) -> Result<MiddleboxAction, PluginError> {
    let attack: Option<String> = f.get("attack")?;
    let at: Option<crate::Duration> = f.get("at")?;
    let after: Option<String> = f.get("after")?;
    let count: Option<u64> = f.get("count")?;
    f.finish()?;
    let attack = match attack.as_deref() {
        Some(s) => AttackKind::from_name(s).ok_or_else(|| f.error_at("attack", format!("unknown attack {s:?} ({})", AttackKind::names())))?,
        None => return Err(f.error(format!("kind = \"attacker\" needs `attack` ({})", AttackKind::names()))),
    };
    let after = match after.as_deref() {
        Some(s) => Some(Moment::from_name(s).ok_or_else(|| f.error_at("after", format!("unknown moment {s:?} ({})", Moment::names())))?),
        None => None,
    };
    // It learns from and forges into both directions of its link.
    if m.direction.is_some_and(|d| d != Direction::Both) {
        return Err(f.error_at("direction", "an attacker sees both directions of its link: leave `direction` out"));
    }
    if count.is_some_and(|c| c == 0 || c > 1_000_000) {
        return Err(f.error_at("count", "must be between 1 and 1000000"));
    }
    // Tied to a moment, `at` is the delay after it (none by default);
    // otherwise the time from the run's start (3 s by default).
    let at_ns = at.map_or(if after.is_some() { 0 } else { 3_000_000_000 }, |d| d.as_nanos());
    Ok(MiddleboxAction::Attacker(Mount { attack, at_ns, after, count: count.map(|c| c as u32) }))
}
