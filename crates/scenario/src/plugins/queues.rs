//! Queue disciplines (`queue = { kind = ... }` of a link direction): what
//! decides whether an arriving packet joins the queue in front of the
//! serialiser. The disciplines run in crates/backend's link model, which
//! the simulator and the real backends' link emulator share; this registry
//! checks the fields.

use super::about::{About, OnKernel};
use crate::error::{diag, Diag};
use crate::network::{Queue, QueueLimit};
use crate::schema::QueueSpec;

/// One queue discipline.
pub struct QueueEntry {
    pub about: About,
    /// Checks the fields and builds the validated discipline.
    pub(crate) resolve: fn(&QueueSpec, &str) -> Result<Queue, Diag>,
}

/// The kernel backend's links are mplab's link emulator, not kernel
/// qdiscs (this kernel has no netem or red), so every discipline runs there.
const EMULATOR: OnKernel = OnKernel::Runs("mplab's link emulator between the namespaces");

/// The disciplines by `kind`; one line each.
pub const REGISTRY: &[QueueEntry] = &[
    QueueEntry { about: About { name: "droptail", params: &["packets", "bytes"], what: "tail drop at a limit in packets or in bytes", kernel: EMULATOR }, resolve: droptail },
    QueueEntry {
        about: About { name: "red", params: &["min_th", "max_th", "max_p", "limit", "weight", "gentle"], what: "Random Early Detection (Floyd & Jacobson), byte thresholds like tc-red", kernel: EMULATOR },
        resolve: red,
    },
];

/// Checks a queue description and turns it into plain numbers.
pub(crate) fn resolve(q: &QueueSpec, path: &str) -> Result<Queue, Diag> {
    let e = REGISTRY.iter().find(|e| e.about.name == q.name()).expect("every schema QueueSpec has a registry entry");
    (e.resolve)(q, path)
}

fn droptail(q: &QueueSpec, path: &str) -> Result<Queue, Diag> {
    let QueueSpec::Droptail { packets, bytes } = *q else { unreachable!("registry entry of another kind") };
    match (packets, bytes) {
        (Some(0), _) => diag(path, "a droptail queue needs room for at least one packet"),
        (_, Some(b)) if b.bytes() == 0 => diag(path, "a droptail queue needs room for at least one packet"),
        (Some(p), None) => Ok(Queue::Droptail { limit: QueueLimit::Packets(p) }),
        (None, Some(b)) => Ok(Queue::Droptail { limit: QueueLimit::Bytes(b.bytes()) }),
        (Some(_), Some(_)) => diag(path, "give a droptail queue `packets` or `bytes`, not both"),
        (None, None) => diag(path, "a droptail queue needs `packets` or `bytes`"),
    }
}

fn red(q: &QueueSpec, path: &str) -> Result<Queue, Diag> {
    let QueueSpec::Red { min_th, max_th, max_p, limit, weight, gentle } = *q else { unreachable!("registry entry of another kind") };
    if min_th.bytes() == 0 || min_th >= max_th {
        return diag(path, format!("RED needs 0 < min_th < max_th (min_th = {min_th}, max_th = {max_th})"));
    }
    if max_th > limit {
        return diag(path, format!("RED needs max_th <= limit (max_th = {max_th}, limit = {limit})"));
    }
    if max_p.value() == 0.0 {
        return diag(path, "RED needs max_p > 0");
    }
    // Floyd's recommended EWMA weight.
    let weight = weight.unwrap_or(0.002);
    if !(weight > 0.0 && weight <= 1.0) {
        return diag(path, format!("RED weight must be in (0, 1], got {weight}"));
    }
    Ok(Queue::Red { min_th_bytes: min_th.bytes(), max_th_bytes: max_th.bytes(), limit_bytes: limit.bytes(), max_p: max_p.value(), weight, gentle })
}
