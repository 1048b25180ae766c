//! A test fixture, compiled only for tests: a manager that never opens a
//! subflow beyond the first nor announces anything. It is here to show
//! (and test) that a path manager is this one file plus its line in the
//! `path_managers!` list.

use super::{linux_limits, no_param, KernelEndpoints, PathManager, PmAction, PmEntry, PmView, RemoteAddr};
use crate::registry::{Entry, KernelMap};

/// Its entries in the registry.
pub const ENTRIES: &[PmEntry] = &[ENTRY];

pub const ENTRY: PmEntry = PmEntry {
    entry: Entry { name: "fixture-first-only", aliases: &[], params: "", kernel: KernelMap::Refuse("a test fixture, not a kernel path manager"), build: |p| no_param(p, || FirstOnly) },
    limits: linux_limits,
    subflows_param: None,
    kernel_endpoints: KernelEndpoints::None,
};

#[derive(Debug, Clone, Default)]
pub struct FirstOnly;

impl PathManager for FirstOnly {
    fn name(&self) -> &'static str {
        "fixture-first-only"
    }
    fn on_established(&mut self, _v: &PmView, _out: &mut Vec<PmAction>) {}
    fn on_add_addr(&mut self, _v: &PmView, _addr: RemoteAddr, _out: &mut Vec<PmAction>) {}
}
