//! `mplab trace CAPTURE`: MPTCP connections, subflows, signalling and
//! verification of every token, HMAC and DSS checksum in a capture.

mod analyze;
pub mod model;
pub mod plots;

use std::fmt::Write as _;
use std::path::Path;

pub use analyze::analyze;
use model::{Direction, TraceReport};

use crate::capture;

/// Reads and analyses a capture file.
pub fn trace_file(path: &Path) -> Result<TraceReport, capture::CaptureError> {
    let cap = capture::read(path)?;
    Ok(analyze(&path.display().to_string(), &cap))
}

fn dir(d: &Direction) -> String {
    let retx = if d.retransmitted_bytes > 0 { format!(", {} B retransmitted", d.retransmitted_bytes) } else { String::new() };
    format!("{} B in {} segments{retx}", d.bytes, d.segments)
}

/// The kind of a check, without its instance's numbers: "DSS checksum"
/// for every "DSS checksum dsn … ssn … len … from …".
fn check_kind(what: &str) -> &str {
    let head = what.split([',', '(']).next().unwrap_or(what);
    head.split(" dsn ").next().unwrap_or(head).trim()
}

/// How much of the verification `render` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// Per connection, one line per kind of check with its count; every
    /// mismatch on a line of its own.
    Summary,
    /// Every check on a line of its own.
    EveryCheck,
}

/// Human-readable rendering, one block per connection.
pub fn render(r: &TraceReport, detail: Detail) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}: {} frames, {} TCP segments, {} other, {} duplicate copies, {} malformed",
        r.file,
        r.frames,
        r.tcp_segments,
        r.other_frames,
        r.duplicates,
        r.malformed.len()
    );
    if let Some(t) = &r.truncated {
        let _ = writeln!(o, "warning: {t}");
    }
    for m in &r.malformed {
        let _ = writeln!(o, "  frame {}: malformed: {}", m.frame, m.error);
    }
    for c in &r.connections {
        let _ = writeln!(o, "\nMPTCP connection {}: {} -> {} (v{}, DSS checksums {})", c.id, c.client, c.server, c.version, if c.checksums { "on" } else { "off" });
        for (side, k) in [("client", &c.client_keys), ("server", &c.server_keys)] {
            let _ = writeln!(
                o,
                "  {side} key {}  token {}  IDSN {}",
                k.key.as_deref().unwrap_or("?"),
                k.token.as_deref().unwrap_or("?"),
                k.idsn.as_deref().unwrap_or("?")
            );
        }
        let _ = writeln!(o, "  subflows:");
        for s in &c.subflows {
            let ids = format!(
                "addr id {}/{}",
                s.local_addr_id.map(|i| i.to_string()).unwrap_or("-".into()),
                s.remote_addr_id.map(|i| i.to_string()).unwrap_or("-".into())
            );
            let _ = writeln!(
                o,
                "    #{} {:<10} {} -> {}  by {}, {ids}{}{}",
                s.index,
                s.kind,
                s.src,
                s.dst,
                s.initiator,
                if s.backup { ", backup" } else { "" },
                if s.established { "" } else { ", not established" }
            );
            let _ = writeln!(o, "       -> {}; <- {}; {} DSS mappings", dir(&s.forward), dir(&s.reverse), s.dss_mappings);
            if let Some(cl) = &s.closed_by {
                let _ = writeln!(o, "       closed: {cl}");
            }
        }
        if !c.events.is_empty() {
            let _ = writeln!(o, "  events:");
            for e in &c.events {
                let _ = writeln!(o, "    {:>10.6}s frame {:<5} {:<12} from {} on subflow {}: {}", e.time, e.frame, e.kind, e.from, e.subflow, e.detail);
            }
        }
        let _ = writeln!(o, "  DSS mappings: {}{}", c.dss_mappings, if c.data_fin.is_empty() { String::new() } else { format!("; {}", c.data_fin.join(", ")) });
        let _ = writeln!(o, "  fallback: {}", c.fallback.as_deref().unwrap_or("no"));
        let _ = writeln!(o, "  verification:");
        if detail == Detail::Summary {
            // Kinds in the order they first appear, with their counts.
            let mut kinds: Vec<(&str, usize, usize)> = Vec::new();
            for ch in &c.checks {
                let k = check_kind(&ch.what);
                let i = kinds.iter().position(|e| e.0 == k).unwrap_or_else(|| {
                    kinds.push((k, 0, 0));
                    kinds.len() - 1
                });
                if ch.ok {
                    kinds[i].1 += 1;
                } else {
                    kinds[i].2 += 1;
                }
            }
            for (k, ok, bad) in &kinds {
                let bad = if *bad > 0 { format!(", {bad} MISMATCH") } else { String::new() };
                let _ = writeln!(o, "    {k}: {ok} ok{bad}");
            }
        }
        for ch in &c.checks {
            if !ch.ok {
                let _ = writeln!(o, "    MISMATCH  frame {:<5} {}: expected {}, got {}", ch.frame, ch.what, ch.expected, ch.got);
            } else if detail == Detail::EveryCheck {
                let _ = writeln!(o, "    ok        frame {:<5} {}: {}", ch.frame, ch.what, ch.got);
            }
        }
    }
    if !r.tcp_flows.is_empty() {
        let _ = writeln!(o, "\nplain TCP flows:");
        for f in &r.tcp_flows {
            let _ = writeln!(o, "  {} -> {} ({}): -> {}; <- {}", f.src, f.dst, f.note, dir(&f.forward), dir(&f.reverse));
        }
    }
    let _ = writeln!(o, "\nchecks: {} ok, {} MISMATCH", r.checks_ok, r.checks_mismatch);
    if detail == Detail::Summary && r.checks_ok > 0 {
        let _ = writeln!(o, "(every check on its own line: --checks)");
    }
    o
}
