//! Drop-tail: a packet joins unless the queue would exceed its limit, in
//! packets or in bytes.

use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, Resolved};
use mplab_scenario::Size;

use super::discipline::{Backlog, QueueDiscipline, EMULATOR};
use crate::rng::SimRng;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(in crate::link) enum DropTail {
    /// At most this many packets; 0 drops everything.
    Packets(u64),
    /// At most this many bytes.
    Bytes(u64),
}

impl QueueDiscipline for DropTail {
    const ABOUT: About = About { name: "droptail", params: &["packets", "bytes"], what: "tail drop at a limit in packets or in bytes", kernel: EMULATOR };

    fn from_fields(f: &mut Fields) -> Result<Self, PluginError> {
        let packets: Option<u64> = f.get("packets")?;
        let bytes: Option<Size> = f.get("bytes")?;
        f.finish()?;
        match (packets, bytes) {
            (Some(0), _) => Err(f.error("a droptail queue needs room for at least one packet")),
            (_, Some(b)) if b.bytes() == 0 => Err(f.error("a droptail queue needs room for at least one packet")),
            (Some(p), None) => Ok(DropTail::Packets(p)),
            (None, Some(b)) => Ok(DropTail::Bytes(b.bytes())),
            (Some(_), Some(_)) => Err(f.error("give a droptail queue `packets` or `bytes`, not both")),
            (None, None) => Err(f.error("a droptail queue needs `packets` or `bytes`")),
        }
    }

    fn resolved(&self) -> Vec<(&'static str, Resolved)> {
        let limit = match *self {
            DropTail::Packets(n) => ("packets", n),
            DropTail::Bytes(n) => ("bytes", n),
        };
        vec![("limit", Resolved::map([(limit.0, limit.1.into())]))]
    }

    fn packet_limit(&self) -> Option<u64> {
        match *self {
            DropTail::Packets(n) => Some(n),
            DropTail::Bytes(_) => None,
        }
    }

    #[inline]
    fn admit(&mut self, backlog: Backlog, _now: u64, size: u32, _rng: &mut SimRng) -> bool {
        match *self {
            DropTail::Packets(n) => (backlog.packets as u64) < n,
            DropTail::Bytes(n) => backlog.bytes.saturating_add(u64::from(size)) <= n,
        }
    }
}
