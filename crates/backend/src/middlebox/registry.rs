//! The `middleboxes!` macro: its list (in `middlebox/mod.rs`, one line per
//! kind) declares each kind's module, [`super::MiddleboxConfig`] (a checked
//! middlebox of any kind, dispatched with a `match`) and [`super::kinds`].

use mplab_scenario::plugins::middleboxes::MiddleboxFacts;

use super::kind::MiddleboxKind;

/// Declares each kind's module, [`super::MiddleboxConfig`] (the enum of every
/// kind with its validated parameters) with its static dispatch, and
/// [`super::kinds`].
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

/// What a kind says about itself, as the registry lists it.
pub(super) fn facts<K: MiddleboxKind>() -> MiddleboxFacts {
    MiddleboxFacts { about: K::ABOUT, on_link: K::ON_LINK, on_router: K::ON_ROUTER }
}
