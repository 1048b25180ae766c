//! The `[topology]` section: the generator its `kind` names, with the
//! parameters parsed. The generators themselves live in `crate::topology`;
//! this is the handle the parsed [`Spec`](super::Spec) holds.

use std::fmt;
use std::sync::Arc;

use super::draft::Draft;
use crate::error::Diag;

/// What a generator does: expand its parameters into nodes and links,
/// checking them (errors name `topology.<field>`).
pub(crate) trait Generator: fmt::Debug + Send + Sync {
    fn generate(&self) -> Result<Draft, Diag>;
}

/// A `[topology]` section: its kind and the parsed parameters.
#[derive(Clone)]
pub struct Topology {
    kind: &'static str,
    spec: Arc<dyn Generator>,
}

impl Topology {
    pub(crate) fn new(kind: &'static str, spec: Arc<dyn Generator>) -> Self {
        Topology { kind, spec }
    }

    pub fn kind(&self) -> &'static str {
        self.kind
    }

    pub(crate) fn generate(&self) -> Result<Draft, Diag> {
        self.spec.generate()
    }
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.spec.fmt(f)
    }
}

/// Two sections are equal when they parsed to the same parameters.
impl PartialEq for Topology {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && format!("{:?}", self.spec) == format!("{:?}", other.spec)
    }
}
