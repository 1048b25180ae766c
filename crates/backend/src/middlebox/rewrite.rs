//! Payload rewriting: a box that changes the first payload byte of data
//! segments holding a stream offset that is a multiple of `every`, and fixes
//! the TCP checksum up, so only MPTCP's DSS checksum can notice.

use mplab_proto::Instant;
use mplab_scenario::network::MiddleboxAction;

use super::element::{Built, Hook, Kind, Middlebox};
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

/// `rewrite`: damages a byte every `every` bytes of the stream.
pub fn kind<P: ModelPacket + 'static>() -> Kind<P> {
    Kind {
        name: "rewrite",
        build: |a, _, _| match *a {
            MiddleboxAction::Rewrite { every } => Built::One(Box::new(Rewrite { every: every.max(1) })),
            _ => unreachable!("built by the kind of its action"),
        },
    }
}
