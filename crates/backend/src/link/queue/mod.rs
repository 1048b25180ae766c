//! The queueing discipline in front of the serialiser: which arriving
//! packets join the queue.
//!
//! Each discipline is one file implementing [`QueueDiscipline`]: what it
//! says about itself (`ABOUT`: its `kind` in scenario files, its fields,
//! what the kernel backend does with it), how it reads and checks its
//! fields from a scenario's queue table, its parameters and state, and its
//! verdict on each arrival. A new one is that file and its line in the
//! `disciplines!` list below (which declares the module too); nothing
//! outside the file names it. The link dispatches with a `match` on the
//! enum the list declares, not a trait object: the verdict is on every
//! packet's path.

mod discipline;

use mplab_scenario::network::{PluginTable, Queue};
use mplab_scenario::plugins::fields::{unknown_kind, Fields, PluginError};
use mplab_scenario::plugins::{About, Resolved};

pub(super) use self::discipline::Backlog;
use self::discipline::QueueDiscipline;
use crate::rng::SimRng;

/// Declares each discipline's module, [`Discipline`] (the enum of every
/// discipline with its state) with its static dispatch, and the registry
/// by name ([`disciplines`], [`QueueConfig::from_table`]).
macro_rules! disciplines {
    ($($(#[$attr:meta])* $module:ident :: $kind:ident),* $(,)?) => {
        $($(#[$attr])* mod $module;)*

        /// The discipline a link runs, with its state.
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub(super) enum Discipline {
            $($(#[$attr])* $kind($module::$kind),)*
        }

        impl Discipline {
            /// The discipline `f`'s table names, its fields read and
            /// checked; `None` when no discipline has that name.
            fn from_fields(f: &mut Fields) -> Option<Result<Discipline, PluginError>> {
                $($(#[$attr])* {
                    if f.kind() == <$module::$kind as QueueDiscipline>::ABOUT.name {
                        return Some(<$module::$kind as QueueDiscipline>::from_fields(f).map(Discipline::$kind));
                    }
                })*
                None
            }

            fn about(&self) -> About {
                match self {
                    $($(#[$attr])* Discipline::$kind(_) => <$module::$kind as QueueDiscipline>::ABOUT,)*
                }
            }

            fn resolved(&self) -> Vec<(&'static str, Resolved)> {
                match self {
                    $($(#[$attr])* Discipline::$kind(d) => d.resolved(),)*
                }
            }

            fn packet_limit(&self) -> Option<u64> {
                match self {
                    $($(#[$attr])* Discipline::$kind(d) => d.packet_limit(),)*
                }
            }

            #[inline]
            pub fn admit(&mut self, backlog: Backlog, now: u64, size: u32, rng: &mut SimRng) -> bool {
                match self {
                    $($(#[$attr])* Discipline::$kind(d) => d.admit(backlog, now, size, rng),)*
                }
            }
        }

        /// Every discipline, in the list's order (for `mplab plugins`).
        pub fn disciplines() -> Vec<About> {
            let mut v = Vec::new();
            $($(#[$attr])* v.push(<$module::$kind as QueueDiscipline>::ABOUT);)*
            v
        }
    };
}

disciplines! {
    drop_tail::DropTail,
    red::Red,
    #[cfg(test)]
    fixture_drop_every_nth::FixtureDropEveryNth,
}

/// The queueing discipline of a link direction, as configured: a
/// discipline's parameters with its state before the first packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueueConfig(Discipline);

impl QueueConfig {
    /// The discipline a scenario's queue table names, its fields read and
    /// checked; errors name the field at `path` (`links[1].ab.queue.max_p`).
    pub fn from_table(table: &PluginTable, path: &str) -> Result<QueueConfig, PluginError> {
        let mut f = Fields::new(table, path);
        let Some(d) = Discipline::from_fields(&mut f) else {
            let names: Vec<&str> = disciplines().iter().map(|a| a.name).collect();
            return Err(unknown_kind(table, path, &names));
        };
        let d = d?;
        f.finish()?;
        Ok(QueueConfig(d))
    }

    /// The discipline of a resolved network's queue.
    pub fn of(q: &Queue) -> Result<QueueConfig, PluginError> {
        QueueConfig::from_table(&q.table, &q.path)
    }

    /// Its validated parameters, `kind` first, as the resolved network
    /// shows them.
    pub fn resolved(&self) -> Resolved {
        Resolved::map(std::iter::once(("kind", Resolved::from(self.0.about().name))).chain(self.0.resolved()))
    }

    /// What the discipline says about itself (its name, what the kernel
    /// backend does with it).
    pub fn about(&self) -> About {
        self.0.about()
    }

    /// A plain limit in packets (drop-tail's), which the link checks
    /// without the discipline.
    pub fn packet_limit(&self) -> Option<u64> {
        self.0.packet_limit()
    }

    /// The discipline with its state, for a link starting with it.
    pub(super) fn discipline(&self) -> Discipline {
        self.0
    }
}

/// Constructors for the link's tests, which set parameters no scenario
/// check would allow.
#[cfg(test)]
impl QueueConfig {
    pub(super) fn drop_tail_packets(n: u64) -> Self {
        QueueConfig(Discipline::DropTail(drop_tail::DropTail::Packets(n)))
    }
    pub(super) fn drop_tail_bytes(n: u64) -> Self {
        QueueConfig(Discipline::DropTail(drop_tail::DropTail::Bytes(n)))
    }
    pub(super) fn red(min_th: u64, max_th: u64, limit_bytes: u64, max_p: f64, weight: f64, gentle: bool) -> Self {
        QueueConfig(Discipline::Red(red::Red::new(min_th, max_th, limit_bytes, max_p, weight, gentle)))
    }
}
