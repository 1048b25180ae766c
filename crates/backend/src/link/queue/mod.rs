//! The queueing discipline in front of the serialiser: which arriving
//! packets join the queue.
//!
//! Each discipline is one file implementing [`QueueDiscipline`] for its
//! parameters and state. A new one is that file, its variant of
//! [`QueueConfig`] (what a scenario chooses) and one line in the
//! `disciplines!` list below. The link dispatches with a `match`, not a
//! trait object: the verdict is on every packet's path.

mod discipline;
mod drop_tail;
mod red;

pub use self::discipline::QueueConfig;
pub(super) use self::discipline::Backlog;
use self::discipline::QueueDiscipline;
use crate::rng::SimRng;

/// Declares [`Discipline`], the enum of every discipline's state, and its
/// static dispatch.
macro_rules! disciplines {
    ($($name:ident($state:ty)),* $(,)?) => {
        /// The discipline a link runs, with its state.
        #[derive(Clone, Debug)]
        pub(super) enum Discipline {
            $($name($state),)*
        }

        impl Discipline {
            pub fn new(config: &QueueConfig) -> Self {
                $(if let Some(d) = <$state as QueueDiscipline>::from_config(config) {
                    return Discipline::$name(d);
                })*
                unreachable!("no queue discipline for {config:?}")
            }

            #[inline]
            pub fn admit(&mut self, backlog: Backlog, now: u64, size: u32, rng: &mut SimRng) -> bool {
                match self {
                    $(Discipline::$name(d) => d.admit(backlog, now, size, rng),)*
                }
            }
        }
    };
}

disciplines! {
    DropTailPackets(drop_tail::PacketLimit),
    DropTailBytes(drop_tail::ByteLimit),
    Red(red::Red),
}
