//! The plug-in axes whose entries live in this crate and that scenario
//! files name by `kind` or `app`: queue disciplines
//! (crates/backend/src/link/queue/), byte-stream and datagram applications
//! (crates/backend/src/apps/, crates/backend/src/datagram/) and middleboxes
//! (crates/backend/src/middlebox/). The scenario keeps their tables as
//! written ([`mplab_scenario::network::Queue`],
//! [`mplab_scenario::network::AppTable`],
//! [`mplab_scenario::network::MiddleboxPlugin`]);
//! this module checks them against the registry when a scenario is loaded
//! for a run, so that a bad table is refused with its line on every
//! backend, and fills in what each resolved to (what network.json shows).

use mplab_scenario::network::{self, MiddleboxAction, Network};
use mplab_scenario::plugins::apps::needs_a_stream;
use mplab_scenario::plugins::transports::Delivery;
use mplab_scenario::plugins::fields::PluginError;
use mplab_scenario::plugins::About;
use mplab_scenario::{Scenario, ScenarioError};

use crate::apps;
use crate::datagram;
use crate::link::{disciplines, QueueConfig};
use crate::middlebox::{self, MiddleboxConfig};

/// The scenario resolved into the network a backend runs: the scenario's
/// own resolution, then every plug-in table checked ([`check`]), an error
/// located at the line of its field. Every command that runs or checks a
/// scenario loads it through here.
pub fn resolve(sc: &Scenario) -> Result<Network, ScenarioError> {
    let mut net = sc.resolve()?;
    check(&mut net).map_err(|e| sc.plugin_error(&e))?;
    Ok(net)
}

/// Checks every plug-in table of `net` against this crate's registries
/// (a middlebox's kind also where it sits) and records what each resolved
/// to; the first problem names its field (for a network built by code,
/// which has no file to locate it in).
pub fn check(net: &mut Network) -> Result<(), PluginError> {
    for l in &mut net.links {
        for d in [&mut l.ab, &mut l.ba] {
            d.queue.resolved = Some(QueueConfig::of(&d.queue)?.resolved());
        }
    }
    for f in &mut net.flows {
        match &mut f.app {
            // The scenario reads an application as the flow's transport
            // delivers (a stream here), so a datagram application lands
            // here when the transport is the wrong one.
            network::App::Stream(t) if datagram::kind_of(&t.table.kind).is_some() => {
                return Err(PluginError::new(format!("{}.transport", t.path), format!("app = {:?} sends datagrams: give transport = \"udp\"", t.table.kind)));
            }
            network::App::Stream(t) => {
                apps::check(t)?;
                if f.transport.delivery() == Delivery::Datagrams {
                    return Err(PluginError::new(format!("{}.app", t.path), needs_a_stream(&t.table.kind)));
                }
            }
            network::App::Datagram(t) if datagram::kind_of(&t.table.kind).is_none() && apps::applications().iter().any(|a| a.name == t.table.kind) => {
                return Err(PluginError::new(format!("{}.app", t.path), needs_a_stream(&t.table.kind)));
            }
            network::App::Datagram(t) if datagram::kind_of(&t.table.kind).is_none() => return Err(apps::unknown_app(&t.table, &t.path)),
            network::App::Datagram(t) => datagram::check(t)?,
            _ => {}
        }
    }
    for m in &mut net.middleboxes {
        let MiddleboxAction::Plugin(p) = &mut m.action else { continue };
        let c = MiddleboxConfig::of(p)?;
        if let Some((field, why)) = c.facts().misplaced(&m.placement) {
            return Err(PluginError::new(format!("{}.{field}", p.path), why));
        }
        p.resolved = Some(c.resolved());
    }
    Ok(())
}

/// Every entry of every axis scenario files name by `kind`, this crate's
/// with the scenario's ([`mplab_scenario::plugins::all`]): (axis, entry),
/// for `mplab plugins`.
pub fn all() -> Vec<(&'static str, About)> {
    let mut v = mplab_scenario::plugins::all();
    // The byte-stream applications before the scenario's own.
    let at = v.iter().position(|(axis, _)| *axis == "application").unwrap_or(v.len());
    v.splice(at..at, apps::applications().into_iter().chain(datagram::applications()).map(|a| ("application", a)));
    // Queues, then middleboxes, after the applications, as the scenario's
    // reference lists them.
    v.extend(disciplines().into_iter().map(|a| ("queue", a)));
    v.extend(middlebox::all().into_iter().map(|k| ("middlebox", k.about)));
    v
}

#[cfg(test)]
mod tests {
    use mplab_scenario::plugins::OnKernel;

    /// Names are unique per axis and every entry says what the kernel
    /// backend does with it.
    #[test]
    fn entries_are_unique_and_say_what_the_kernel_does() {
        let mut seen = std::collections::BTreeSet::new();
        for (axis, a) in super::all() {
            assert!(seen.insert((axis, a.name)), "{axis} {} registered twice", a.name);
            assert!(!a.what.is_empty());
            match a.kernel {
                OnKernel::Runs(how) | OnKernel::Refuses(how) => assert!(how.len() > 10, "{axis} {}: say how or why", a.name),
            }
        }
        let axes: Vec<&str> = super::all().iter().map(|(axis, _)| *axis).collect();
        let first = |axis: &str| axes.iter().position(|a| *a == axis).unwrap();
        assert!(first("application") < first("queue") && first("queue") < first("middlebox"), "{axes:?}");
    }
}
