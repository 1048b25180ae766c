//! The registries of the plug-in axes a scenario file names that live in
//! this crate: transports (their facts), applications, the two middlebox
//! kinds the scenario types itself (and topology generators, in
//! [`crate::topology::REGISTRY`]). Schedulers, congestion controls and path
//! managers are registries of crates/proto, queue disciplines and the other
//! middlebox kinds registries of crates/backend, looked up when a backend
//! translates the scenario.
//!
//! Each entry here holds the name, the fields it takes (any other field of
//! its table is refused, naming the field and its line), what it does, what
//! the kernel backend does with it, and the function that checks the fields
//! and turns them into the validated value the backends receive
//! ([`crate::network::App`], [`crate::network::MiddleboxAction`]).
//! `mplab plugins` lists them all, with the backend's.
//!
//! An axis whose entries live in a crate below the scenario's users (a
//! backend) keeps its table generic instead ([`fields::PluginTable`], as
//! [`crate::network::Queue`] does), lets the entry read it with
//! [`fields::Fields`] and keeps what the entry resolved as a
//! [`Resolved`] (as [`crate::network::MiddleboxPlugin`] does); the entry
//! describes itself with the same [`About`].

mod about;
pub mod apps;
pub mod fields;
pub mod middleboxes;
mod resolved;
pub mod transports;

pub use about::{About, OnKernel};
pub use resolved::Resolved;

/// Every entry of every axis of this crate but the middleboxes: (axis,
/// entry), for listings (`mplab_backend::plugins::all` adds the backend's
/// queues and middleboxes, these two typed kinds with them).
pub fn all() -> Vec<(&'static str, About)> {
    let mut v = Vec::new();
    v.extend(crate::topology::REGISTRY.iter().map(|e| ("topology", About { name: e.name, params: &[], what: e.about, kernel: OnKernel::Runs("the same nodes and links in network namespaces") })));
    v.extend(transports::entries().map(|e| ("transport", e.about)));
    v.extend(apps::REGISTRY.iter().map(|e| ("application", e.about)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names are unique per axis and every entry says what the kernel
    /// backend does with it.
    #[test]
    fn entries_are_unique_and_say_what_the_kernel_does() {
        let mut seen = std::collections::BTreeSet::new();
        for (axis, a) in all() {
            assert!(seen.insert((axis, a.name)), "{axis} {} registered twice", a.name);
            assert!(!a.what.is_empty());
            match a.kernel {
                OnKernel::Runs(how) | OnKernel::Refuses(how) => assert!(how.len() > 10, "{axis} {}: say how or why", a.name),
            }
        }
    }
}
