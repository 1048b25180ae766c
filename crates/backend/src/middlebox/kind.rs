//! What a middlebox kind of the registry is: what it says about itself,
//! how it reads its fields from a scenario's `[[middleboxes]]` table, and
//! how it builds its boxes.

use std::fmt::Debug;

use mplab_scenario::network::Network;
use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, Resolved};

use super::element::{Built, Place};
use super::segment::ModelPacket;

/// One middlebox kind: its validated parameters, from which it builds the
/// boxes of each place it sits at.
pub trait MiddleboxKind: Sized + Clone + Debug + PartialEq {
    /// Its `kind` in scenario files, its fields, what it models, and what
    /// the kernel backend does with it (runs it, and how, or refuses it,
    /// and why).
    const ABOUT: About;
    /// It may sit on a link direction (`link = ...`).
    const ON_LINK: bool;
    /// It may sit on a router (`node = ...`).
    const ON_ROUTER: bool;

    /// Reads and checks its fields from the middlebox's table (its
    /// placement is not among them): every field first, then `f.finish()?`
    /// (a field it does not take is refused before any value is checked),
    /// then the relations between them. Errors name the table (`f.error`)
    /// or the field (`f.error_at`).
    fn from_fields(f: &mut Fields) -> Result<Self, PluginError>;

    /// Its validated parameters as the resolved network shows them, in
    /// order (`kind` is added in front).
    fn resolved(&self) -> Vec<(&'static str, Resolved)>;

    /// The boxes for one place it sits at (`net` and the place give what a
    /// router's box needs: its interfaces and routes). The registry calls
    /// it only where `ON_LINK` / `ON_ROUTER` allow.
    fn build<P: ModelPacket + 'static>(&self, net: &Network, place: Place) -> Built<P>;
}
