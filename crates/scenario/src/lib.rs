//! mplab scenario files: one backend-neutral TOML description of an
//! experiment (topology, links, transport settings, flows, events,
//! middleboxes, probes), parsed, validated and resolved into a concrete
//! [`Network`] that the simulator, the kernel/netns emulator and the
//! userspace stack all consume.
//!
//! ```no_run
//! use mplab_scenario::Scenario;
//! let mut sc = Scenario::from_file("scenarios/two-paths.toml")?;
//! sc.set("links.0.rate", "50Mbit").ok(); // --set, before validation
//! let net = sc.resolve()?;
//! println!("{} nodes, {} links", net.nodes.len(), net.links.len());
//! # Ok::<(), mplab_scenario::ScenarioError>(())
//! ```
//!
//! Every error names the file, line, column and field:
//! `two-paths.toml:12:8: links[1].rate: invalid rate "10Mbt": expected ...`.
//! See `docs/scenario.md` for the format.

pub mod attack;
mod balancer;
mod capacity;
mod error;
mod events;
mod names;
pub mod network;
mod overrides;
pub mod plugins;
mod resolve;
mod routing;
pub mod schema;
pub mod topology;
pub mod units;
mod vocab;
mod workload;

use std::ops::Deref;
use std::path::Path;


pub use capacity::{read_steps_file, read_trace_file};
pub use error::{At, ScenarioError};
use error::{line_col, parse_path, render_path, Diag, LocTree};
pub use network::Network;
use overrides::Override;
pub use schema::Spec;
pub use topology::Topology;
pub use units::{Duration, Probability, Rate, Size};


/// A parsed and checked scenario file, plus what is needed to report
/// errors against it and to apply `--set` overrides.
#[derive(Debug, Clone)]
pub struct Scenario {
    spec: Spec,
    source: Source,
}

#[derive(Debug, Clone)]
struct Source {
    file: String,
    /// The text as read, for line numbers.
    text: String,
    tree: LocTree,
    /// The document with every override applied.
    doc: toml::Table,
    overrides: Vec<Override>,
}

impl Scenario {
    /// Reads and parses a scenario file; errors are reported with the path
    /// as given.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ScenarioError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError::whole_file(&name, format!("cannot read: {e}")))?;
        Self::from_str(&text, &name)
    }

    /// Parses scenario text; `file_name` is only used in error messages.
    #[allow(clippy::should_implement_trait)] // needs the file name too
    pub fn from_str(text: &str, file_name: &str) -> Result<Self, ScenarioError> {
        let doc: toml::Table = toml::from_str(text).map_err(|e| {
            let at = e.span().map_or(At::File, |s| {
                let (line, col) = line_col(text, s.start);
                At::Line { line, col }
            });
            ScenarioError { file: file_name.to_string(), at, path: String::new(), message: flatten(e.message()) }
        })?;
        let source = Source { file: file_name.to_string(), text: text.to_string(), tree: LocTree::build(text).unwrap_or_default(), doc, overrides: Vec::new() };
        let spec = source.load()?;
        Ok(Scenario { spec, source })
    }

    /// The typed scenario (also reachable through `Deref`).
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The file name errors are reported against.
    pub fn file(&self) -> &str {
        &self.source.file
    }

    /// The file as written, headed by the `--set` overrides applied to it
    /// (as comments): what a reader of a results directory recognises.
    pub fn source_text(&self) -> String {
        let mut s = String::new();
        // By path (stable: a path set twice keeps its order), so the same
        // overrides given in another order (a sweep's Slurm task and its
        // local run) head the file alike.
        let mut args: Vec<&str> = self.source.overrides.iter().map(|o| o.arg.as_str()).collect();
        args.sort_by_key(|a| a.split('=').next().unwrap_or(a));
        for a in args {
            s.push_str(&format!("# run with --set {a}\n"));
        }
        s.push_str(&self.source.text);
        s
    }

    /// The document with all overrides applied, as TOML text: what a result
    /// file should record next to the resolved network.
    pub fn effective_toml(&self) -> String {
        toml::to_string(&self.source.doc).unwrap_or_default()
    }

    /// Applies one `--set path=value` override (`links.0.rate`, `50Mbit`)
    /// and re-checks the scenario. On error nothing changes.
    pub fn set(&mut self, path: &str, value: &str) -> Result<(), ScenarioError> {
        self.set_all([(path, value)])
    }

    /// `set` for an argument in `path=value` form.
    pub fn set_arg(&mut self, arg: &str) -> Result<(), ScenarioError> {
        let Some((path, value)) = arg.split_once('=') else {
            return Err(ScenarioError {
                file: self.source.file.clone(),
                at: At::Set(arg.to_string()),
                path: String::new(),
                message: "expected path=value, like links.0.rate=50Mbit".into(),
            });
        };
        self.set(path.trim(), value.trim())
    }

    /// Applies several overrides at once and checks only the result, so a
    /// sweep can change fields that are only valid together (say
    /// `topology.kind` and its parameters).
    pub fn set_all<'a>(&mut self, sets: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<(), ScenarioError> {
        let mut source = self.source.clone();
        for (path, value) in sets {
            let ov = overrides::apply(&mut source.doc, path, value).map_err(|(shown, message)| ScenarioError {
                file: source.file.clone(),
                at: At::Set(format!("{path}={value}")),
                path: shown,
                message,
            })?;
            source.overrides.push(ov);
        }
        let spec = source.load()?;
        *self = Scenario { spec, source };
        Ok(())
    }

    /// An error about the field at `path` (`flows[0].cc`), located in the
    /// file (or the `--set` that introduced it): for backends that reject a
    /// value the scenario format allows, like a congestion control they lack.
    pub fn error_at(&self, path: &str, message: impl Into<String>) -> ScenarioError {
        self.source.error(Diag::new(path, message))
    }

    /// A plug-in's error about its table ([`plugins::fields::PluginError`]),
    /// located in the file like every other scenario error.
    pub fn plugin_error(&self, e: &plugins::fields::PluginError) -> ScenarioError {
        self.error_at(&e.path, e.message.clone())
    }

    /// Expands generators, assigns addresses, computes routes and resolves
    /// flows, events, middleboxes and probes.
    pub fn resolve(&self) -> Result<Network, ScenarioError> {
        // Files a scenario names (traces) are relative to it.
        let base = Path::new(&self.source.file).parent().unwrap_or(Path::new(""));
        resolve::resolve(&self.spec, base).map_err(|d| self.source.error(d))
    }
}

impl Deref for Scenario {
    type Target = Spec;
    fn deref(&self) -> &Spec {
        &self.spec
    }
}

impl Source {
    /// Text whose spans the serde errors refer to: the file itself, or the
    /// document re-serialised after overrides.
    fn current_text(&self) -> Result<(String, Option<LocTree>), ScenarioError> {
        if self.overrides.is_empty() {
            return Ok((self.text.clone(), None));
        }
        let text = toml::to_string(&self.doc).map_err(|e| ScenarioError::whole_file(&self.file, format!("cannot apply --set: {e}")))?;
        let tree = LocTree::build(&text).unwrap_or_default();
        Ok((text, Some(tree)))
    }

    fn load(&self) -> Result<Spec, ScenarioError> {
        let (text, tree) = self.current_text()?;
        let tree = tree.as_ref();
        let mut spec: Spec = toml::from_str(&text).map_err(|e| self.serde_error(&e, &text, tree))?;
        if let Some(raw) = spec.topology_raw.take() {
            let kind = match &raw {
                toml::Value::Table(t) => t.get("kind"),
                _ => return Err(self.error(Diag::new("topology", "expected a table, like [topology] with kind = \"parallel\""))),
            };
            let kinds = topology::kinds();
            let parsed = match kind.map(|k| k.as_str()) {
                None => return Err(self.error(Diag::new("topology", format!("missing field `kind` (one of {kinds})")))),
                Some(Some(k)) => topology::parse(k, &text),
                Some(None) => None,
            };
            let topo = match parsed {
                Some(t) => t,
                None => {
                    let other = kind.and_then(|k| k.as_str());
                    let shown = other.map_or_else(|| kind.map(|k| k.to_string()).unwrap_or_default(), |s| format!("{s:?}"));
                    return Err(self.error(Diag::new("topology.kind", format!("unknown topology kind {shown}: expected one of {kinds}"))));
                }
            };
            spec.topology = Some(topo.map_err(|e| self.serde_error(&e, &text, tree))?);
        }
        Ok(spec)
    }

    /// A serde error: the field path from its span, the line either from the
    /// span directly (file text) or from the path (re-serialised text).
    fn serde_error(&self, e: &toml::de::Error, text: &str, tree: Option<&LocTree>) -> ScenarioError {
        let message = flatten(e.message());
        let Some(span) = e.span() else {
            return ScenarioError { file: self.file.clone(), at: At::File, path: String::new(), message };
        };
        match tree {
            None => {
                let (line, col) = line_col(text, span.start);
                let path = render_path(&self.tree.path_at(span.clone()));
                ScenarioError { file: self.file.clone(), at: At::Line { line, col }, path, message }
            }
            Some(tree) => self.error(Diag { path: render_path(&tree.path_at(span.clone())), message }),
        }
    }

    /// A semantic error located by its field path.
    fn error(&self, d: Diag) -> ScenarioError {
        ScenarioError { file: self.file.clone(), at: self.locate(&d.path), path: d.path, message: d.message }
    }

    fn locate(&self, path: &str) -> At {
        let Some(segs) = parse_path(path).filter(|s| !s.is_empty()) else {
            return At::File;
        };
        // Latest override first: a value set twice came from the last --set.
        let by_override = |pred: &dyn Fn(&[error::Seg]) -> bool| self.overrides.iter().rev().find(|o| pred(&o.segs)).map(|o| At::Set(o.arg.clone()));
        if let Some(at) = by_override(&|o| segs.starts_with(o)) {
            return at;
        }
        let (offset, exact) = self.tree.locate(&segs);
        if !exact {
            // Created by an override (e.g. a table it added)?
            if let Some(at) = by_override(&|o| o.starts_with(&segs)) {
                return at;
            }
        }
        let (line, col) = line_col(&self.text, offset);
        At::Line { line, col }
    }
}

/// toml's messages can span lines; errors are one line each.
fn flatten(msg: &str) -> String {
    msg.trim().lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}
