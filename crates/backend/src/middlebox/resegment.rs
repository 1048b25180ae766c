//! `resegment`: a box that splits segments ([`Split`], `mode = "split"`,
//! as TSO does) or coalesces them ([`Coalescer`], `mode = "coalesce"`, as
//! LRO/GRO or a normalising proxy does).

use mplab_scenario::network::{Network, ResegmentMode};
use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, OnKernel, Resolved};
use mplab_scenario::{Duration, Size};

use super::coalesce::{Coalescer, DEFAULT_HOLD_NS, DEFAULT_SIZE};
use super::element::{Built, Place};
use super::kind::MiddleboxKind;
use super::segment::ModelPacket;
use super::split::Split;

/// The box's mode and its limits as the scenario gave them (None: the
/// mode's default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resegment {
    pub mode: ResegmentMode,
    /// Largest segment payload it leaves (split: 536 B; coalesce: what
    /// fits an IPv4 packet).
    pub size: Option<u64>,
    /// Coalesce only: how long a segment waits for the next of its flow.
    pub hold_ns: Option<u64>,
}

impl MiddleboxKind for Resegment {
    const ABOUT: About = About {
        name: "resegment",
        params: &["mode", "size", "hold"],
        what: "splits segments or coalesces them (TSO/GRO, proxies)",
        kernel: OnKernel::Refuses("resegmenting middleboxes are not available on the kernel backend"),
    };
    const ON_LINK: bool = true;
    const ON_ROUTER: bool = true;

    fn from_fields(f: &mut Fields) -> Result<Self, PluginError> {
        let mode: Option<String> = f.get("mode")?;
        let size: Option<Size> = f.get("size")?;
        let hold: Option<Duration> = f.get("hold")?;
        f.finish()?;
        let mode = match mode.as_deref() {
            Some("coalesce") => ResegmentMode::Coalesce,
            Some("split") => ResegmentMode::Split,
            Some(other) => return Err(f.error_at("mode", format!("unknown mode {other:?} for kind = \"resegment\" (\"coalesce\" or \"split\")"))),
            None => return Err(f.error("kind = \"resegment\" needs `mode` (\"coalesce\" or \"split\")")),
        };
        if size.is_some_and(|s| s.bytes() == 0) {
            return Err(f.error_at("size", "must be greater than 0"));
        }
        if hold.is_some() && mode != ResegmentMode::Coalesce {
            return Err(f.error_at("hold", "only applies to mode = \"coalesce\""));
        }
        if hold.is_some_and(|h| h.as_nanos() == 0 || h.as_nanos() > 1_000_000_000) {
            return Err(f.error_at("hold", "must be greater than 0 and at most 1s"));
        }
        Ok(Resegment { mode, size: size.map(|s| s.bytes()), hold_ns: hold.map(|h| h.as_nanos()) })
    }

    fn resolved(&self) -> Vec<(&'static str, Resolved)> {
        let mode = match self.mode {
            ResegmentMode::Coalesce => "coalesce",
            ResegmentMode::Split => "split",
        };
        vec![("mode", mode.into()), ("size", self.size.into()), ("hold_ns", self.hold_ns.into())]
    }

    fn build<P: ModelPacket + 'static>(&self, _: &Network, _: Place) -> Built<P> {
        match self.mode {
            ResegmentMode::Split => Built::One(Box::new(Split { size: self.size.unwrap_or(536).clamp(1, u64::from(u32::MAX)) as u32 })),
            ResegmentMode::Coalesce => Built::One(Box::new(Coalescer::<P>::new(self.size.unwrap_or(DEFAULT_SIZE).clamp(1, u64::from(u16::MAX)) as u32, self.hold_ns.unwrap_or(DEFAULT_HOLD_NS)))),
        }
    }
}
