//! Middleboxes: anything on the path that looks at packets and changes,
//! holds, splits or drops them — what seed 000's Cisco ASA did to option
//! 30, NAT, TSO-like resegmenting, payload rewriting, load balancers and
//! attackers. Each box is one [`Middlebox`] in its own file, written once
//! over the packet view it needs ([`Segment`] or [`ModelPacket`]), and
//! every backend runs it over its own packets: the simulator over its
//! modelled packets, the link emulator over Ethernet frames.
//!
//! A kind scenario files name is one file implementing [`MiddleboxKind`]
//! (what it says about itself, where it may sit, how it reads its fields
//! and builds its boxes) and its line in the `middleboxes!` list below,
//! which declares its module too; nothing outside the file names it. The
//! load balancer and the attacker, which the scenario types itself, are
//! built from their typed actions ([`build`]). Below the list: what every
//! backend asks of a scenario's middleboxes (their facts, their boxes and
//! the places they sit at).

mod element;
mod kind;
mod registry;
mod segment;

pub mod attacker;
pub mod balancer;
pub mod coalesce;
pub mod split;

registry::middleboxes! {
    strip::StripMptcp,
    nat::SourceNat,
    resegment::Resegment,
    rewrite::Rewrite,
    #[cfg(any(test, feature = "test-fixtures"))]
    fixture::DropEveryNth,
}

pub use element::{Built, Hook, Middlebox, Place};
pub use kind::MiddleboxKind;
pub use segment::{ModelPacket, Segment};

use mplab_scenario::network::{Direction, MiddleboxAction, MiddleboxPlugin, Network, Placement};
use mplab_scenario::plugins::fields::{unknown_kind, Fields, PluginError, PluginTable};
use mplab_scenario::plugins::middleboxes::{self as typed, MiddleboxFacts};
use mplab_scenario::plugins::Resolved;

use self::attacker::AttackerBox;
use self::balancer::LoadBalancer;
use crate::attack::Attacker;

impl MiddleboxConfig {
    /// The kind a scenario's middlebox table names, its fields read and
    /// checked; errors name the field under `path` (`middleboxes[2].size`).
    pub fn from_table(table: &PluginTable, path: &str) -> Result<MiddleboxConfig, PluginError> {
        let mut f = Fields::new(table, path);
        let Some(c) = MiddleboxConfig::from_fields(&mut f) else {
            let names: Vec<&str> = all().iter().map(|k| k.about.name).collect();
            return Err(unknown_kind(table, path, &names));
        };
        let c = c?;
        f.finish()?;
        Ok(c)
    }

    /// The kind of a resolved network's middlebox.
    pub fn of(m: &MiddleboxPlugin) -> Result<MiddleboxConfig, PluginError> {
        MiddleboxConfig::from_table(&m.table, &m.path)
    }

    /// Its validated parameters, `kind` first, as the resolved network
    /// shows them.
    pub fn resolved(&self) -> Resolved {
        Resolved::map(std::iter::once(("kind", Resolved::from(self.facts().about.name))).chain(self.fields()))
    }
}

/// Every middlebox kind a scenario file can name: the registry's, then the
/// two the scenario types itself (the load balancer and the attacker), for
/// `mplab plugins` and the error naming an unknown kind.
pub fn all() -> Vec<MiddleboxFacts> {
    let mut v = kinds();
    v.extend(typed::REGISTRY.iter().map(|e| e.facts));
    v
}

/// The facts of a scenario middlebox's kind (None: a kind no registry has,
/// in a network built by code).
pub fn facts_of(action: &MiddleboxAction) -> Option<MiddleboxFacts> {
    match action {
        MiddleboxAction::Plugin(p) => kinds().into_iter().find(|k| k.about.name == p.table.kind),
        typed_kind => typed::typed(typed_kind.kind()).map(|e| e.facts),
    }
}

/// The boxes of a scenario middlebox at `place` (the first of [`places`];
/// a [`Built::Pair`] covers both directions of its link). The network has
/// been checked (`mplab_backend::plugins::check`): a kind it cannot build
/// is a bug of the caller.
pub fn build<P: ModelPacket + 'static>(action: &MiddleboxAction, net: &Network, place: Place) -> Built<P> {
    match (action, place) {
        (MiddleboxAction::LoadBalancer { mode, vip, backends, table, idle_ns }, Place::Node(n)) => Built::One(Box::new(LoadBalancer::new(net, n, *mode, *vip, backends, *table, *idle_ns))),
        (MiddleboxAction::Attacker(m), Place::Link(dir)) => {
            let [ab, ba] = AttackerBox::pair(Attacker::new(m, net.seed, dir / 2));
            Built::Pair([Box::new(ab), Box::new(ba)])
        }
        (MiddleboxAction::Plugin(p), _) => match MiddleboxConfig::of(p) {
            Ok(c) => c.build(net, place),
            Err(e) => panic!("{e} (check the network with mplab_backend::plugins::check first)"),
        },
        (a, _) => unreachable!("the scenario places a {} middlebox where its entry allows", a.kind()),
    }
}

/// The places a scenario middlebox sits at.
pub fn places(p: &Placement) -> Vec<Place> {
    match p {
        Placement::Link { link, direction, .. } => match direction {
            Direction::Ab => vec![Place::Link(2 * link)],
            Direction::Ba => vec![Place::Link(2 * link + 1)],
            Direction::Both => vec![Place::Link(2 * link), Place::Link(2 * link + 1)],
        },
        Placement::Node { node, .. } => vec![Place::Node(*node)],
    }
}
