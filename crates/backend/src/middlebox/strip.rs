//! Option stripping: what seed 000's Cisco ASA did to TCP option 30 (MPTCP),
//! on SYNs only or on every segment. It needs only [`Segment`], so the
//! simulator and the kernel backend's link emulator run this one box.

use mplab_proto::Instant;
use mplab_scenario::network::{MiddleboxAction, StripOn};

use super::element::{Built, Hook, Kind, Middlebox};
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

/// `strip_mptcp`: every segment, or SYNs only.
pub fn kind<P: Segment + 'static>() -> Kind<P> {
    Kind {
        name: "strip_mptcp",
        build: |a, _, _| match *a {
            MiddleboxAction::StripMptcp { on } => Built::One(Box::new(StripMptcp { syn_only: on == StripOn::Syn })),
            _ => unreachable!("built by the kind of its action"),
        },
    }
}
