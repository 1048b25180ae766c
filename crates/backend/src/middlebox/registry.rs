//! The registry of middlebox kinds: the `middleboxes!` macro, whose list
//! (in `middlebox/mod.rs`, one line per kind) declares each kind's module,
//! [`MiddleboxConfig`] (a checked middlebox of any kind) and [`kinds`];
//! and what every backend asks of a scenario's middleboxes: their facts,
//! their boxes and the places they sit at.

use mplab_scenario::network::{Direction, MiddleboxAction, MiddleboxPlugin, Network, Placement};
use mplab_scenario::plugins::fields::{unknown_kind, Fields, PluginError, PluginTable};
use mplab_scenario::plugins::middleboxes::{self as typed, MiddleboxFacts};
use mplab_scenario::plugins::Resolved;

use super::attacker::AttackerBox;
use super::balancer::LoadBalancer;
use super::element::{Built, Place};
use super::kind::MiddleboxKind;
use super::segment::ModelPacket;
use super::{kinds, MiddleboxConfig};
use crate::attack::Attacker;

/// Declares each kind's module, [`MiddleboxConfig`] (the enum of every
/// kind with its validated parameters) with its static dispatch, and
/// [`kinds`].
macro_rules! middleboxes {
    ($($(#[$attr:meta])* $module:ident :: $kind:ident),* $(,)?) => {
        $($(#[$attr])* pub mod $module;)*

        /// A middlebox of one of the registry's kinds, its fields read and
        /// checked.
        #[derive(Clone, Debug, PartialEq)]
        pub enum MiddleboxConfig {
            $($(#[$attr])* $kind($module::$kind),)*
        }

        impl MiddleboxConfig {
            /// The kind `f`'s table names, its fields read and checked;
            /// `None` when the registry has no kind of that name.
            fn from_fields(f: &mut mplab_scenario::plugins::fields::Fields) -> Option<Result<MiddleboxConfig, mplab_scenario::plugins::fields::PluginError>> {
                $($(#[$attr])* {
                    if f.kind() == <$module::$kind as $crate::middlebox::MiddleboxKind>::ABOUT.name {
                        return Some(<$module::$kind as $crate::middlebox::MiddleboxKind>::from_fields(f).map(MiddleboxConfig::$kind));
                    }
                })*
                None
            }

            /// What its kind says about itself and where it may sit.
            pub fn facts(&self) -> mplab_scenario::plugins::middleboxes::MiddleboxFacts {
                match self {
                    $($(#[$attr])* MiddleboxConfig::$kind(_) => $crate::middlebox::registry::facts::<$module::$kind>(),)*
                }
            }

            fn fields(&self) -> Vec<(&'static str, mplab_scenario::plugins::Resolved)> {
                match self {
                    $($(#[$attr])* MiddleboxConfig::$kind(k) => $crate::middlebox::MiddleboxKind::resolved(k),)*
                }
            }

            /// The boxes at `place`, for packets of type `P`.
            pub fn build<P: $crate::middlebox::ModelPacket + 'static>(&self, net: &mplab_scenario::network::Network, place: $crate::middlebox::Place) -> $crate::middlebox::Built<P> {
                match self {
                    $($(#[$attr])* MiddleboxConfig::$kind(k) => $crate::middlebox::MiddleboxKind::build(k, net, place),)*
                }
            }
        }

        /// Every kind of the registry, in the list's order.
        pub fn kinds() -> Vec<mplab_scenario::plugins::middleboxes::MiddleboxFacts> {
            let mut v = Vec::new();
            $($(#[$attr])* v.push($crate::middlebox::registry::facts::<$module::$kind>());)*
            v
        }
    };
}

pub(super) use middleboxes;

pub(super) fn facts<K: MiddleboxKind>() -> MiddleboxFacts {
    MiddleboxFacts { about: K::ABOUT, on_link: K::ON_LINK, on_router: K::ON_ROUTER }
}

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
        (&MiddleboxAction::Attacker { attack, at_ns, count }, Place::Link(dir)) => {
            let [ab, ba] = AttackerBox::pair(Attacker::new(attack, at_ns, count, net.seed, dir / 2));
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
