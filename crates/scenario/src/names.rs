//! Looking up a node by the name a scenario gives it, for the resolvers of
//! the workload and of the events: an unknown name is an error at the
//! field that wrote it.

use crate::error::Diag;
use crate::network::Node;

/// The node called `name`, or an error at `path` naming it.
pub(crate) fn find_node<'a>(nodes: &'a [Node], name: &str, path: &str) -> Result<&'a Node, Diag> {
    nodes.iter().find(|n| n.name == name).ok_or_else(|| Diag::new(path, format!("unknown node {name:?}")))
}
