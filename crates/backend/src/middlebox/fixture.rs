//! A test-only kind: drops every `n`th TCP segment passing it on a link
//! or through a router. It exists to show (and test) that a kind is this
//! file plus its line in the `middleboxes!` list: scenario files name it
//! as `kind = "fixture-drop-every-nth"` with `n = 3`.

use mplab_proto::Instant;
use mplab_scenario::network::Network;
use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, OnKernel, Resolved};

use super::element::{Built, Hook, Middlebox, Place};
use super::kind::MiddleboxKind;
use super::segment::{ModelPacket, Segment};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropEveryNth {
    pub n: u64,
    seen: u64,
    pub dropped: u64,
}

impl DropEveryNth {
    pub fn new(n: u64) -> Self {
        DropEveryNth { n: n.max(1), seen: 0, dropped: 0 }
    }
}

impl MiddleboxKind for DropEveryNth {
    const ABOUT: About = About { name: "fixture-drop-every-nth", params: &["n"], what: "drops every nth TCP segment (tests only)", kernel: OnKernel::Refuses("a test fixture") };
    const ON_LINK: bool = true;
    const ON_ROUTER: bool = true;

    fn from_fields(f: &mut Fields) -> Result<Self, PluginError> {
        let n: Option<u64> = f.get("n")?;
        f.finish()?;
        let n = n.ok_or_else(|| f.missing("n"))?;
        if n == 0 {
            return Err(f.error_at("n", "must be at least 1"));
        }
        Ok(DropEveryNth::new(n))
    }

    fn resolved(&self) -> Vec<(&'static str, Resolved)> {
        vec![("n", self.n.into())]
    }

    fn build<P: ModelPacket + 'static>(&self, _: &Network, _: Place) -> Built<P> {
        Built::One(Box::new(*self))
    }
}

impl<P: Segment> Middlebox<P> for DropEveryNth {
    fn kind(&self) -> &'static str {
        "fixture-drop-every-nth"
    }

    fn process(&mut self, _now: Instant, at: Hook, p: P, out: &mut Vec<P>) {
        if matches!(at, Hook::Link | Hook::Forward) {
            self.seen += 1;
            if self.seen % self.n == 0 {
                self.dropped += 1;
                return;
            }
        }
        out.push(p);
    }

    fn note(&self, at: &str) -> Option<String> {
        Some(format!("fixture at {at}: {} of {} segments dropped", self.dropped, self.seen))
    }
}

#[cfg(test)]
mod tests {
    use mplab_wire::{MptcpOption, TcpHeader};

    use super::super::{build, places};
    use super::super::segment::ModelPacket;
    use super::*;

    /// The model packet every backend's middleboxes see.
    type Pkt = crate::packet::Packet;

    fn scenario(fixture: &str) -> mplab_scenario::Scenario {
        let toml = format!("name = \"t\"\nduration = \"1s\"\n[topology]\nkind = \"parallel\"\npaths = 1\nrate = \"10Mbit\"\ndelay = \"10ms\"\n[[middleboxes]]\nkind = \"strip_mptcp\"\nlink = \"path0\"\n[[middleboxes]]\nkind = \"fixture-drop-every-nth\"\nlink = \"path0\"\ndirection = \"ab\"\n{fixture}\n[[flows]]\nfrom = \"client\"\nto = \"server\"\ntransport = \"tcp\"\napp = \"bulk\"\n");
        mplab_scenario::Scenario::from_str(&toml, "t.toml").unwrap_or_else(|e| panic!("{e}"))
    }

    /// Named by a scenario, the fixture is checked by the registry, shows
    /// its parameters in the resolved network, and its box runs behind the
    /// scenario's option-stripping box the way a backend runs a place's
    /// chain: what one box pushes goes through the next.
    #[test]
    fn a_kind_added_by_one_file_is_chosen_by_its_name() {
        let net = crate::plugins::resolve(&scenario("n = 3")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(serde_json::to_string(&net.middleboxes[1].action).unwrap(), r#"{"kind":"fixture-drop-every-nth","n":3}"#);
        let place = places(&net.middleboxes[1].placement)[0];
        assert_eq!(places(&net.middleboxes[0].placement)[0], place);
        let mut chain: Vec<Box<dyn Middlebox<Pkt>>> = Vec::new();
        for m in &net.middleboxes {
            let Built::One(b) = build::<Pkt>(&m.action, &net, place) else { panic!("one box per place") };
            chain.push(b);
        }
        let mut delivered = Vec::new();
        for seq in 0..9u32 {
            let mut tcp = TcpHeader { seq, ..Default::default() };
            tcp.options.push_mptcp(MptcpOption::MpPrio { backup: true, addr_id: None }).unwrap();
            let mut here = vec![Pkt::new_segment([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), tcp, 100, 0)];
            for mb in chain.iter_mut() {
                let mut next = Vec::new();
                for p in here {
                    mb.process(Instant(0), Hook::Link, p, &mut next);
                }
                here = next;
            }
            delivered.extend(here);
        }
        assert_eq!(chain.iter().map(|b| b.kind()).collect::<Vec<_>>(), ["strip_mptcp", "fixture-drop-every-nth"]);
        assert_eq!(delivered.iter().map(|p| p.tcp.seq).collect::<Vec<_>>(), [0, 1, 3, 4, 6, 7]);
        assert!(delivered.iter().all(|p| !p.tcp.options.has_mptcp()));
        assert_eq!(chain[1].note("l0").as_deref(), Some("fixture at l0: 3 of 9 segments dropped"));
        // At a router's interfaces it lets everything by.
        let mut out = Vec::new();
        Middlebox::<Pkt>::process(&mut DropEveryNth::new(1), Instant(0), Hook::Ingress { iface: 0 }, delivered.remove(0), &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn its_bad_field_is_refused_with_the_line() {
        let e = crate::plugins::resolve(&scenario("n = 0")).unwrap_err();
        assert_eq!(e.to_string(), "t.toml:15:5: middleboxes[1].n: must be at least 1");
        let e = crate::plugins::resolve(&scenario("m = 2")).unwrap_err();
        assert_eq!(e.to_string(), "t.toml:15:5: middleboxes[1].m: does not apply to kind = \"fixture-drop-every-nth\" (it takes n)");
        let e = crate::plugins::resolve(&scenario("")).unwrap_err();
        assert_eq!(e.to_string(), "t.toml:11:1: middleboxes[1]: missing field `n` (kind = \"fixture-drop-every-nth\")");
    }
}
