//! A test-only discipline: refuses every `n`th arriving packet, whatever
//! the backlog. It exists to show (and test) that a discipline is this
//! file plus its line in the `disciplines!` list: scenario files name it
//! as `queue = { kind = "fixture-drop-every-nth", n = 3 }`.

use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, Resolved};

use super::discipline::{Backlog, QueueDiscipline, EMULATOR};
use crate::rng::SimRng;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(in crate::link) struct FixtureDropEveryNth {
    n: u64,
    /// Packets offered so far.
    seen: u64,
}

impl QueueDiscipline for FixtureDropEveryNth {
    const ABOUT: About = About { name: "fixture-drop-every-nth", params: &["n"], what: "refuses every nth arriving packet (tests only)", kernel: EMULATOR };

    fn from_fields(f: &mut Fields) -> Result<Self, PluginError> {
        let n: Option<u64> = f.get("n")?;
        f.finish()?;
        let n = n.ok_or_else(|| f.missing("n"))?;
        if n == 0 {
            return Err(f.error_at("n", "must be at least 1"));
        }
        Ok(FixtureDropEveryNth { n, seen: 0 })
    }

    fn resolved(&self) -> Vec<(&'static str, Resolved)> {
        vec![("n", self.n.into())]
    }

    fn admit(&mut self, _backlog: Backlog, _now: u64, _size: u32, _rng: &mut SimRng) -> bool {
        self.seen += 1;
        self.seen % self.n != 0
    }
}

#[cfg(test)]
mod tests {
    use mplab_scenario::Scenario;

    use crate::link::{LinkDirection, Offer};
    use crate::rng::SimRng;

    fn scenario(queue: &str) -> Scenario {
        let toml = format!("name = \"t\"\n[[nodes]]\nname = \"a\"\n[[nodes]]\nname = \"b\"\n[[links]]\na = \"a\"\nb = \"b\"\nrate = \"10Mbit\"\nqueue = {queue}\n");
        Scenario::from_str(&toml, "t.toml").unwrap_or_else(|e| panic!("{e}"))
    }

    /// Named by a scenario, the fixture is checked by the registry, shows
    /// its parameters in the resolved network and runs on a link.
    #[test]
    fn a_discipline_added_by_one_file_is_chosen_by_its_name() {
        let net = crate::plugins::resolve(&scenario("{ kind = \"fixture-drop-every-nth\", n = 3 }")).unwrap_or_else(|e| panic!("{e}"));
        let json = serde_json::to_string(&net.links[0].ab.queue).unwrap();
        assert_eq!(json, r#"{"kind":"fixture-drop-every-nth","n":3}"#);
        let mut link = LinkDirection::<u32>::new(crate::config::link_params(&net.links[0].ab).unwrap());
        let mut rng = SimRng::new(1, 0);
        let verdicts: Vec<bool> = (0..9).map(|i| link.offer(mplab_proto::Instant(0), i, 100, &mut rng) == Offer::Queued).collect();
        assert_eq!(verdicts, [true, true, false, true, true, false, true, true, false]);
        assert_eq!(link.stats().queue_drops, 3);
    }

    #[test]
    fn its_bad_field_is_refused_with_the_line() {
        let e = crate::plugins::resolve(&scenario("{ kind = \"fixture-drop-every-nth\", n = 0 }")).unwrap_err();
        assert_eq!(e.to_string(), "t.toml:10:48: links[0].queue.n: must be at least 1");
        let e = crate::plugins::resolve(&scenario("{ kind = \"fixture-drop-every-nth\", m = 2 }")).unwrap_err();
        assert_eq!(e.to_string(), "t.toml:10:48: links[0].queue.m: does not apply to kind = \"fixture-drop-every-nth\" (it takes n)");
    }
}
