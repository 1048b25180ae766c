//! `ndiffports`: several subflows over one address pair.

use super::{AddrCounts, KernelEndpoints, Limits, PathManager, PmAction, PmEntry, PmView, RemoteAddr};
use crate::registry::{Entry, KernelMap};

/// The scenario's `subflows` is its count (`ndiffports:N`), 2 when unset
/// as in the out-of-tree kernel.
/// Its entries in the registry.
pub const ENTRIES: &[PmEntry] = &[ENTRY];

pub const ENTRY: PmEntry = PmEntry {
    entry: Entry {
        name: "ndiffports",
        aliases: &[],
        params: "N",
        kernel: KernelMap::Refuse("the Linux kernel has no ndiffports path manager (its in-kernel path manager does default, fullmesh and explicit endpoints)"),
        build: |p| match p {
            None => Some(Box::new(NDiffPorts { n: 2 })),
            Some(n) => n.parse::<u32>().ok().filter(|&n| n > 0).map(|n| Box::new(NDiffPorts { n }) as Box<dyn PathManager>),
        },
    },
    limits,
    subflows_param: Some(2),
    kernel_endpoints: KernelEndpoints::None,
};

/// Room for its count, nothing announced.
fn limits(_: AddrCounts, subflows: Option<u32>) -> Limits {
    Limits { subflows: subflows.unwrap_or(2).saturating_sub(1), add_addr_accepted: 0 }
}

/// `n` subflows between the same two addresses, differing in source port
/// (the out-of-tree kernel's `mptcp_ndiffports`): spreads one address pair
/// over ECMP paths.
#[derive(Debug, Clone)]
pub struct NDiffPorts {
    pub n: u32,
}

impl PathManager for NDiffPorts {
    fn name(&self) -> &'static str {
        "ndiffports"
    }

    fn on_established(&mut self, v: &PmView, out: &mut Vec<PmAction>) {
        let (Some(&(l, _)), Some(r)) = (v.subflows.first(), v.remotes.first()) else { return };
        if !v.client {
            return;
        }
        for _ in v.subflows.len() as u32..self.n {
            if v.closing {
                break;
            }
            out.push(PmAction::Open { local: l.ip(), remote: *r, backup: false });
        }
    }

    fn on_add_addr(&mut self, _v: &PmView, _addr: RemoteAddr, _out: &mut Vec<PmAction>) {}
}
