//! Nodes and links before addressing and routing: what a `[topology]`
//! generator expands into, and what the file's own `[[nodes]]` and
//! `[[links]]` are merged into before both are resolved alike.

use super::middleboxes::MiddleboxSpec;
use super::nodes::Cidr;
use crate::network::{LinkDirection, DEFAULT_MTU};
use crate::vocab::NodeKind;

/// Nodes and links before addressing and routing, from a generator or from
/// the file. `origin` is the field path errors about the item point at.
#[derive(Debug, Clone, Default)]
pub(crate) struct Draft {
    pub nodes: Vec<DraftNode>,
    pub links: Vec<DraftLink>,
    /// Middleboxes a generator places (after the file's own).
    pub middleboxes: Vec<MiddleboxSpec>,
}

#[derive(Debug, Clone)]
pub(crate) struct DraftNode {
    pub name: String,
    pub kind: NodeKind,
    pub stack: Option<String>,
    pub origin: String,
}

#[derive(Debug, Clone)]
pub(crate) struct DraftLink {
    pub name: String,
    pub a: DraftEnd,
    pub b: DraftEnd,
    pub subnet: Option<Cidr>,
    pub ab: LinkDirection,
    pub ba: LinkDirection,
    pub up: bool,
    pub mtu: u32,
    pub radio: Option<crate::network::Radio>,
    pub origin: String,
}

#[derive(Debug, Clone)]
pub(crate) struct DraftEnd {
    pub node: String,
    pub iface: Option<String>,
    pub addr: Option<Cidr>,
    /// Host number used when the address is assigned automatically
    /// (`.1` for `a`, `.2` for `b` unless a generator says otherwise).
    pub host: u32,
}

impl Draft {
    pub fn node(&mut self, name: impl Into<String>, kind: NodeKind) {
        self.nodes.push(DraftNode { name: name.into(), kind, stack: None, origin: "topology".into() });
    }

    /// A symmetric generated link `a`–`b` named `"a-b"`.
    pub fn link(&mut self, a: &str, b: &str, params: LinkDirection) {
        self.links.push(DraftLink {
            name: format!("{a}-{b}"),
            a: DraftEnd { node: a.into(), iface: None, addr: None, host: 1 },
            b: DraftEnd { node: b.into(), iface: None, addr: None, host: 2 },
            subnet: None,
            ab: params.clone(),
            ba: params,
            up: true,
            mtu: DEFAULT_MTU,
            radio: None,
            origin: "topology".into(),
        });
    }
}
