//! Payload rewriting: a box that changes the first payload byte of data
//! segments holding a stream offset that is a multiple of `every`, and fixes
//! the TCP checksum up, so only MPTCP's DSS checksum can notice.

use mplab_proto::Instant;
use mplab_scenario::network::Network;
use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, OnKernel, Resolved};
use mplab_scenario::Size;

use super::element::{Built, Hook, Middlebox, Place};
use super::kind::MiddleboxKind;
use super::segment::ModelPacket;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rewrite {
    pub every: u64,
}

impl Rewrite {
    /// Whether `p`'s payload covers a multiple of `every` (offset 0, the
    /// start of the stream, excepted). A coalesced packet's tail run counts.
    pub fn hits<P: ModelPacket>(&self, p: &P) -> bool {
        let runs = match p.tail() {
            Some((at, tag2)) => [(p.tag(), at), (tag2, p.payload_len() - at)],
            None => [(p.tag(), p.payload_len()), (0, 0)],
        };
        runs.into_iter().any(|(start, len)| {
            let (lo, end) = (start.max(1), start + u64::from(len));
            lo < end && (end - 1) / self.every > (lo - 1) / self.every
        })
    }
}

impl<P: ModelPacket> Middlebox<P> for Rewrite {
    fn kind(&self) -> &'static str {
        "rewrite"
    }

    fn process(&mut self, _now: Instant, at: Hook, mut p: P, out: &mut Vec<P>) {
        if matches!(at, Hook::Link | Hook::Forward) && self.hits(&p) {
            p.set_corrupted(true);
        }
        out.push(p);
    }
}

/// `rewrite`: damages a byte every `every` bytes of the stream (default
/// 1 MB).
impl MiddleboxKind for Rewrite {
    const ABOUT: About = About {
        name: "rewrite",
        params: &["every"],
        what: "changes payload bytes and fixes the TCP checksum (an application gateway): only MPTCP's DSS checksum can tell",
        kernel: OnKernel::Refuses("payload-rewriting middleboxes are not available on the kernel backend"),
    };
    const ON_LINK: bool = true;
    const ON_ROUTER: bool = true;

    fn from_fields(f: &mut Fields) -> Result<Self, PluginError> {
        let every: Option<Size> = f.get("every")?;
        f.finish()?;
        if every.is_some_and(|s| s.bytes() == 0) {
            return Err(f.error_at("every", "must be greater than 0"));
        }
        Ok(Rewrite { every: every.map_or(1_000_000, |s| s.bytes()) })
    }

    fn resolved(&self) -> Vec<(&'static str, Resolved)> {
        vec![("every", self.every.into())]
    }

    fn build<P: ModelPacket + 'static>(&self, _: &Network, _: Place) -> Built<P> {
        Built::One(Box::new(Rewrite { every: self.every.max(1) }))
    }
}
