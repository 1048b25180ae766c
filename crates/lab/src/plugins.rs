//! `mplab plugins`: every registry's entries, with what the kernel backend
//! does with each, so a user sees what a scenario may name without reading
//! the source.

use std::fmt::Write as _;

use mplab_proto::registry::{Entry, KernelMap};
use mplab_scenario::plugins::OnKernel;

/// One row: axis, name with aliases and parameter, what the kernel backend does.
type Row = (&'static str, String, String);

fn proto_rows<'r, T: ?Sized + 'r>(axis: &'static str, reg: impl IntoIterator<Item = &'r Entry<T>>) -> Vec<Row> {
    reg.into_iter()
        .map(|e| {
            let mut name = e.name.to_string();
            if !e.params.is_empty() {
                let _ = write!(name, "[:{}]", e.params);
            }
            if !e.aliases.is_empty() {
                let _ = write!(name, " ({})", e.aliases.join(", "));
            }
            let kernel = match e.kernel {
                KernelMap::Linux(n) => format!("runs Linux's {n}"),
                KernelMap::Refuse(why) => format!("refused: {why}"),
            };
            (axis, name, kernel)
        })
        .collect()
}

/// The listing, one aligned line per entry.
pub fn render() -> String {
    let mut rows = proto_rows("scheduler", mplab_proto::mptcp::scheduler::REGISTRY);
    rows.extend(proto_rows("congestion control", mplab_proto::cc::REGISTRY));
    rows.extend(proto_rows("path manager", mplab_proto::mptcp::path_manager::entries()));
    for (axis, a) in mplab_backend::plugins::all() {
        let name = if a.params.is_empty() { a.name.to_string() } else { format!("{} ({})", a.name, a.params.join(", ")) };
        let kernel = match a.kernel {
            OnKernel::Runs(how) => how.to_string(),
            OnKernel::Refuses(why) => format!("refused: {why}"),
        };
        rows.push((axis, format!("{name}: {}", a.what), kernel));
    }
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let mut out = String::new();
    let mut last = "";
    for (axis, name, kernel) in &rows {
        if *axis != last && !last.is_empty() {
            out.push('\n');
        }
        last = axis;
        let _ = writeln!(out, "{axis:w0$}  {name}\n{:w0$}  kernel backend: {kernel}", "");
    }
    out
}

#[cfg(test)]
mod tests {
    /// Every axis of the registries appears.
    #[test]
    fn lists_every_axis() {
        let s = super::render();
        for axis in ["scheduler", "congestion control", "path manager", "topology", "application", "queue", "middlebox"] {
            assert!(s.lines().any(|l| l.starts_with(axis)), "{axis} missing:\n{s}");
        }
        assert!(s.contains("refused: resegmenting middleboxes are not available on the kernel backend"));
    }

    /// The parallel generator's description matches what it builds: direct
    /// links between client and server, no routers.
    #[test]
    fn parallel_paths_are_described_as_direct_links() {
        let s = super::render();
        let line = s.lines().find(|l| l.contains("parallel:")).expect("the parallel generator");
        assert!(line.contains("direct link") && !line.contains("router"), "{line}");
        let net = mplab_scenario::Scenario::from_str("name = \"p\"\n[topology]\nkind = \"parallel\"\npaths = 2\nrate = \"10Mbit\"\ndelay = \"10ms\"\n", "p.toml").unwrap().resolve().unwrap();
        assert_eq!(net.nodes.len(), 2, "client and server only");
        assert_eq!(net.links.len(), 2);
    }
}
