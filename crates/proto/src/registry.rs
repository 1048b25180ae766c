//! Plug-in registries: the built-in schedulers and congestion controls by
//! the names scenario files use, and the validated choice a configuration
//! carries. A name is looked up once, when a scenario is translated; an
//! unknown name is an error then, never a silent default later. User code
//! plugs its own algorithm in with [`Choice::custom`], without touching
//! the registry (see `examples/my_scheduler.rs` and `examples/my_cc.rs`).
//!
//! Adding a built-in is one file (the algorithm) plus one [`Entry`] line in
//! its axis' `REGISTRY` (`cc::REGISTRY`, `mptcp::scheduler::REGISTRY`); a
//! path manager's entry carries more facts and is its file's `ENTRIES`
//! (`mptcp::path_manager::registry()`).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// What the kernel backend does with an mplab name: run the kernel's own
/// algorithm of that name, or refuse the scenario, saying why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelMap {
    /// The Linux name (`net.ipv4.tcp_congestion_control`,
    /// `net.mptcp.scheduler`) that does the same job.
    Linux(&'static str),
    /// Linux has no counterpart: the reason, for the error message.
    Refuse(&'static str),
}

/// One built-in algorithm.
pub struct Entry<T: ?Sized> {
    /// The name scenario files use.
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    /// What may follow a colon (`kbest:3`), for messages; empty: nothing.
    pub params: &'static str,
    pub kernel: KernelMap,
    /// Builds one instance; the parameter is the text after the colon.
    /// None: the parameter is invalid.
    pub build: fn(Option<&str>) -> Option<Box<T>>,
}

impl<T: ?Sized> Entry<T> {
    fn answers_to(&self, base: &str) -> bool {
        self.name == base || self.aliases.contains(&base)
    }
}

/// A validated algorithm choice: its name and a factory for one instance
/// per connection (per subflow, for congestion control).
pub struct Choice<T: ?Sized> {
    name: Cow<'static, str>,
    make: Arc<dyn Fn() -> Box<T> + Send + Sync>,
}

impl<T: ?Sized> Choice<T> {
    /// A user's own algorithm: `make` is called for every new instance.
    pub fn custom(name: impl Into<Cow<'static, str>>, make: impl Fn() -> Box<T> + Send + Sync + 'static) -> Self {
        Choice { name: name.into(), make: Arc::new(make) }
    }
    /// The name as the scenario gave it (parameter included).
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn build(&self) -> Box<T> {
        (self.make)()
    }
}

impl<T: ?Sized> Clone for Choice<T> {
    fn clone(&self) -> Self {
        Choice { name: self.name.clone(), make: self.make.clone() }
    }
}

impl<T: ?Sized> fmt::Debug for Choice<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.name)
    }
}

/// Two choices are the same algorithm when their names are.
impl<T: ?Sized> PartialEq for Choice<T> {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

/// Splits `name[:param]`; `_` and `-` are the same in names.
fn split(spec: &str) -> (String, Option<&str>) {
    match spec.split_once(':') {
        Some((b, p)) => (b.replace('_', "-"), Some(p)),
        None => (spec.replace('_', "-"), None),
    }
}

/// The entry `spec` names, if any (whatever its parameter).
pub fn entry<'r, T: ?Sized>(registry: &'r [Entry<T>], spec: &str) -> Option<&'r Entry<T>> {
    let (base, _) = split(spec);
    registry.iter().find(|e| e.answers_to(&base))
}

/// The name `spec` gives without its parameter, `_` read as `-`.
pub fn base_name(spec: &str) -> String {
    split(spec).0
}

/// Every name of a registry, for messages (`kbest[:K]`).
pub fn names<T: ?Sized>(registry: &[Entry<T>]) -> String {
    names_of(registry.iter())
}

/// [`names`] over entries held elsewhere (an axis whose entries carry
/// more than an [`Entry`]).
pub fn names_of<'r, T: ?Sized + 'r>(entries: impl Iterator<Item = &'r Entry<T>>) -> String {
    entries
        .flat_map(|e| std::iter::once(e.name).chain(e.aliases.iter().copied()).map(move |n| if e.params.is_empty() { n.to_string() } else { format!("{n}[:{}]", e.params) }))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Looks `spec` up: a choice that builds, or an error naming what exists.
pub fn lookup<T: ?Sized + 'static>(registry: &'static [Entry<T>], what: &str, spec: &str) -> Result<Choice<T>, String> {
    let Some(e) = entry(registry, spec) else {
        return Err(format!("unknown {what} {spec:?} (mplab's stack has {})", names(registry)));
    };
    choose(e, what, spec)
}

/// The choice `spec` makes of entry `e` (found by its name): one that
/// builds, or an error about its parameter.
pub fn choose<T: ?Sized + 'static>(e: &'static Entry<T>, what: &str, spec: &str) -> Result<Choice<T>, String> {
    let param = split(spec).1.map(str::to_string);
    if (e.build)(param.as_deref()).is_none() {
        return Err(format!("invalid parameter in {what} {spec:?}{}", if e.params.is_empty() { " (it takes none)".to_string() } else { format!(" (expected {}:{})", e.name, e.params) }));
    }
    let build = e.build;
    Ok(Choice {
        name: Cow::Owned(spec.to_string()),
        make: Arc::new(move || build(param.as_deref()).expect("parameter validated by lookup")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every built-in builds under its name and each alias, and names what
    /// the kernel backend does with it.
    #[test]
    fn registry_entries_build_and_map() {
        fn check<T: ?Sized + 'static>(reg: &'static [Entry<T>], what: &str) {
            let mut seen = std::collections::BTreeSet::new();
            for e in reg {
                for n in std::iter::once(e.name).chain(e.aliases.iter().copied()) {
                    assert!(seen.insert(n), "{what} {n} registered twice");
                    let c = lookup(reg, what, n).unwrap_or_else(|m| panic!("{m}"));
                    let _ = c.build();
                }
                match e.kernel {
                    KernelMap::Linux(k) => assert!(!k.is_empty()),
                    KernelMap::Refuse(why) => assert!(why.len() > 10, "{what} {}: say why", e.name),
                }
            }
        }
        check(crate::cc::REGISTRY, "congestion control");
        check(crate::mptcp::scheduler::REGISTRY, "scheduler");
        // Path managers' entries sit inside their `PmEntry`: copied into a
        // slice of plain entries for the same checks.
        let pms: &'static [Entry<dyn crate::mptcp::PathManager>] = Box::leak(crate::mptcp::path_manager::registry().map(|e| Entry { ..e.entry }).collect::<Vec<_>>().into_boxed_slice());
        check(pms, "path manager");
    }

    #[test]
    fn unknown_names_and_bad_parameters_are_errors() {
        let e = crate::cc::lookup("bbr").unwrap_err();
        assert!(e.contains("\"bbr\"") && e.contains("cubic"), "{e}");
        assert!(crate::cc::lookup("cubic:2").unwrap_err().contains("takes none"));
        assert!(crate::mptcp::scheduler::lookup("kbest:0").unwrap_err().contains("kbest:K"));
        assert_eq!(crate::mptcp::scheduler::lookup("primary_standby").unwrap().build().name(), "primary-standby");
        assert_eq!(crate::mptcp::path_manager::lookup("ndiffports:8").unwrap().build().name(), "ndiffports");
        assert!(crate::mptcp::path_manager::lookup("ndiffports:0").is_err());
    }

    #[test]
    fn a_custom_choice_builds_fresh_instances() {
        let c = crate::cc::CcChoice::custom("mine", || Box::new(crate::cc::Reno::default()));
        assert_eq!(c.name(), "mine");
        assert_eq!(c.build().name(), "reno");
        assert_eq!(c.clone(), c);
        assert_ne!(c, crate::cc::CcChoice::default());
    }
}
