//! Option stripping: what seed 000's Cisco ASA did to TCP option 30 (MPTCP),
//! on SYNs only or on every segment. It needs only [`Segment`], so the
//! simulator and the kernel backend's link emulator run this one box.

use mplab_proto::Instant;

use super::element::{Hook, Middlebox};
use super::segment::Segment;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StripMptcp {
    pub syn_only: bool,
}

impl<P: Segment> Middlebox<P> for StripMptcp {
    fn kind(&self) -> &'static str {
        "strip_mptcp"
    }

    fn process(&mut self, _now: Instant, at: Hook, mut p: P, out: &mut Vec<P>) {
        if matches!(at, Hook::Link | Hook::Forward) && (!self.syn_only || p.tcp().syn()) && p.has_mptcp() {
            p.strip_mptcp();
        }
        out.push(p);
    }
}
