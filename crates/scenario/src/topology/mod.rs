//! `[topology]` generators: each expands into nodes and links, which are
//! then merged with any explicit `[[nodes]]`/`[[links]]` and resolved like
//! hand-written ones.

mod link_params;

/// The parsed `[topology]` section, defined with the rest of the file schema.
pub use crate::schema::Topology;

pub(crate) use link_params::{queue_at, resolve_loss};

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::schema::Generator;

/// Declares each generator's module, re-exports its spec and lists it in
/// [`REGISTRY`] under its `kind`.
macro_rules! generators {
    ($($module:ident :: $spec:ident ($kind:literal, $about:literal)),* $(,)?) => {
        $(mod $module; pub use $module::$spec;)*

        /// The generators by `kind`.
        pub const REGISTRY: &[GeneratorEntry] = &[$(entry::<$spec>($kind, $about)),*];
    };
}

// A new generator is its own file (a serde struct implementing
// [`Generator`]) plus one line here.
generators! {
    parallel::ParallelSpec("parallel", "N disjoint paths between `client` and `server`, each a direct link of its own"),
    dumbbell::DumbbellSpec("dumbbell", "N sender/receiver pairs sharing one bottleneck"),
    khalili::KhaliliSpec("khalili", "the shared-bottleneck topology of Khalili et al. (OLIA) with its two user types"),
    fattree::FatTreeSpec("fattree", "a k-ary fat tree (Al-Fares et al.) of k^3/4 hosts"),
    star::StarSpec("star", "N hosts around one router (incast, many-to-one)"),
    load_balanced::LoadBalancedSpec("load_balanced", "clients with several access links, load-balancer instances behind ECMP sharing a VIP, and their backends"),
}

/// One generator kind.
pub struct GeneratorEntry {
    pub name: &'static str,
    /// One line for `mplab plugins` and the docs.
    pub about: &'static str,
    parse: fn(&str) -> Result<Arc<dyn Generator>, toml::de::Error>,
}

const fn entry<T: Generator + DeserializeOwned + 'static>(name: &'static str, about: &'static str) -> GeneratorEntry {
    GeneratorEntry { name, about, parse: parse_as::<T> }
}

/// The `[topology]` table of a whole document, for serde's spans.
#[derive(Deserialize)]
struct TopoDoc<T> {
    topology: T,
}

fn parse_as<T: Generator + DeserializeOwned + 'static>(doc: &str) -> Result<Arc<dyn Generator>, toml::de::Error> {
    toml::from_str::<TopoDoc<T>>(doc).map(|d| Arc::new(d.topology) as Arc<dyn Generator>)
}

/// Parses the `[topology]` table of the document `doc` as a `kind`
/// generator. None: no such kind.
pub(crate) fn parse(kind: &str, doc: &str) -> Option<Result<Topology, toml::de::Error>> {
    let e = REGISTRY.iter().find(|e| e.name == kind)?;
    Some((e.parse)(doc).map(|spec| Topology::new(e.name, spec)))
}

/// The kinds, for error messages.
pub(crate) fn kinds() -> String {
    REGISTRY.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
}
