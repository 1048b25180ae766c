//! Time-varying capacity files a link's `rate` may name: Mahimahi delivery
//! traces (`{ trace = "FILE" }`) and CSVs of rate steps (`{ steps = "FILE" }`).
//! Read when the scenario is resolved; every error names the file and line.

use std::path::Path;
use std::sync::Arc;

use crate::error::{diag, Diag};
use crate::network::{DeliveryTrace, RateStep};
use crate::units::{Duration, Rate};

/// Reads the file at `file` (relative to `base`, the scenario's directory).
fn read(base: &Path, file: &str, what: &str, field: &str) -> Result<String, Diag> {
    std::fs::read_to_string(base.join(file)).map_err(|e| Diag::new(field, format!("cannot read {what} {file}: {e}")))
}

/// A Mahimahi trace: one line per 1500-byte delivery opportunity, the
/// millisecond it occurs, non-decreasing; the last one must be after 0
/// (it is the period of a looping trace). The same checks as mm-link's
/// (ravinet/mahimahi, src/frontend/link_queue.cc), plus a per-line reason.
pub(crate) fn read_trace(base: &Path, file: &str, looped: bool, field: &str) -> Result<DeliveryTrace, Diag> {
    let text = read(base, file, "trace", field)?;
    let mut ms: Vec<u64> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = |msg: String| Diag::new(field, format!("trace {file}:{}: {msg}", i + 1));
        let line = line.trim();
        if line.is_empty() {
            return Err(at("empty line (each line is the millisecond of one delivery opportunity)".into()));
        }
        let t: u64 = line.parse().map_err(|_| at(format!("{line:?} is not a whole number of milliseconds")))?;
        if let Some(&prev) = ms.last() {
            if t < prev {
                return Err(at(format!("times must not decrease: {t} after {prev}")));
            }
        }
        ms.push(t);
    }
    match ms.last() {
        None => diag(field, format!("trace {file}: empty (no delivery opportunities)")),
        Some(0) => diag(field, format!("trace {file}: must last more than 0 ms (its last line is its period)")),
        Some(_) => Ok(DeliveryTrace { file: file.to_string(), looped, opportunities: ms.len(), ms: Arc::from(ms) }),
    }
}

/// A CSV of `time,rate` lines (`0s,10Mbit`), the rate holding from its
/// time until the next line's; times increasing from 0. Blank lines and
/// `#` comments are skipped.
pub(crate) fn read_steps(base: &Path, file: &str, field: &str) -> Result<Vec<RateStep>, Diag> {
    let text = read(base, file, "steps", field)?;
    let mut steps: Vec<RateStep> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = |msg: String| Diag::new(field, format!("steps {file}:{}: {msg}", i + 1));
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((t, r)) = line.split_once(',') else {
            return Err(at(format!("{line:?}: expected time,rate (e.g. 2.5s,1Mbit)")));
        };
        let t: Duration = t.trim().parse().map_err(|e| at(format!("{e}")))?;
        let r: Rate = r.trim().parse().map_err(|e| at(format!("{e}")))?;
        if r.bps() == 0 {
            return Err(at("rate must be greater than 0 (use a `down` event for a dead link)".into()));
        }
        match steps.last() {
            None if t.as_nanos() != 0 => return Err(at(format!("the first step must be at 0s, not {t}"))),
            Some(p) if t.as_nanos() <= p.at_ns => return Err(at(format!("times must increase: {t} after {}", Duration::from_nanos(p.at_ns)))),
            _ => {}
        }
        steps.push(RateStep { at_ns: t.as_nanos(), rate_bps: r.bps() });
    }
    if steps.is_empty() {
        return diag(field, format!("steps {file}: empty (no time,rate lines)"));
    }
    Ok(steps)
}

/// Reads a Mahimahi trace file on its own, outside a scenario (`mplab
/// trace-link`), with [`read_trace`]'s checks; the error names the file
/// and, for a bad line, its number (`trace t.trace:3: times must not
/// decrease: 3 after 5`).
pub fn read_trace_file(path: &Path) -> Result<DeliveryTrace, String> {
    read_trace(Path::new(""), &path.to_string_lossy(), true, "").map_err(|d| d.message)
}

/// Reads a steps CSV on its own, outside a scenario, with [`read_steps`]'s
/// checks; the error names the file and line.
pub fn read_steps_file(path: &Path) -> Result<Vec<RateStep>, String> {
    read_steps(Path::new(""), &path.to_string_lossy(), "").map_err(|d| d.message)
}
