//! Option stripping: what seed 000's Cisco ASA did to TCP option 30 (MPTCP),
//! on SYNs only or on every segment. It needs only [`Segment`], so the
//! simulator and the kernel backend's link emulator run this one box.

use mplab_proto::Instant;
use mplab_scenario::network::{Network, StripOn};
use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, OnKernel, Resolved};

use super::element::{Built, Hook, Middlebox, Place};
use super::kind::MiddleboxKind;
use super::segment::{ModelPacket, Segment};

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

/// `strip_mptcp`: every segment (`on = "all"`, the default), or SYNs only
/// (`on = "syn"`).
impl MiddleboxKind for StripMptcp {
    const ABOUT: About = About {
        name: "strip_mptcp",
        params: &["on"],
        what: "removes TCP option 30 (MPTCP) from every segment or only SYNs, like a Cisco ASA",
        kernel: OnKernel::Runs("on a link: the link emulator rewrites the option to NOPs; on a router: iptables TCPOPTSTRIP"),
    };
    const ON_LINK: bool = true;
    const ON_ROUTER: bool = true;

    fn from_fields(f: &mut Fields) -> Result<Self, PluginError> {
        let on: StripOn = f.get_or("on", StripOn::All)?;
        f.finish()?;
        Ok(StripMptcp { syn_only: on == StripOn::Syn })
    }

    fn resolved(&self) -> Vec<(&'static str, Resolved)> {
        vec![("on", Resolved::from(if self.syn_only { "syn" } else { "all" }))]
    }

    fn build<P: ModelPacket + 'static>(&self, _: &Network, _: Place) -> Built<P> {
        Built::One(Box::new(*self))
    }
}
