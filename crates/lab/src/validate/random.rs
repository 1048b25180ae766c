//! `mplab validate --random N`: validation cases drawn from a space of
//! networks instead of chosen by hand. A suite the `linux` profile was
//! tuned against cannot say whether the model is right or only fitted;
//! cases nobody chose can, when some of them are kept out of the tuning.
//!
//! The space (docs/validation.md, "Random cases"): two to four direct
//! paths between a client and a server, each with its own rate (1 to
//! 100 Mbit/s, log-uniform), asymmetric down/up rates on half the paths,
//! a one-way delay of 0 to 100 ms, a drop-tail queue of 0.25 to 4
//! bandwidth-delay products or of 5 to 200 ms, and random loss of 0 to
//! 10 % on zero to two paths; an upload or a download, bulk for the run or
//! a sized transfer; default or set socket buffers; cubic or reno; the
//! fullmesh or the endpoints path manager; and in a quarter of the cases
//! one path cut and restored. Every case is an ordinary scenario file, so
//! one can be rerun alone, and the suite written beside them is an
//! ordinary suite file.
//!
//! Each case's role (tuning or held-out) is drawn from its own stream, so
//! drawing more cases from the same seed keeps the earlier cases and their
//! roles.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mplab_proto::rng::{splitmix64, SplitMix64};

use super::suite::{Case, Metric, Role, Subflows, Suite, Tolerance};

/// The tolerance every random case is judged with (widened to the
/// kernel's own spread where that is larger): the target.
pub const TOLERANCE: f64 = 0.10;

/// One in this many cases is a tuning case; the rest are held out.
const TUNING_ONE_IN: u64 = 3;

/// A draw's random numbers, one stream per case.
struct Draw(SplitMix64);

impl Draw {
    fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + (hi.ln() - lo.ln()) * self.unit()).exp()
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n
    }
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

/// One path's drawn parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct PathDraw {
    /// Server to client (download direction), Mbit/s.
    pub down_mbps: f64,
    /// Client to server, Mbit/s.
    pub up_mbps: f64,
    pub delay_ms: f64,
    /// Drop-tail limits in packets, down and up.
    pub queue_down: u32,
    pub queue_up: u32,
    /// How the queue was sized, for the description.
    pub queue_rule: String,
    /// Random loss in both directions (a share).
    pub loss: f64,
}

/// A drawn case: its scenario and what is measured.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseDraw {
    pub name: String,
    pub role: Role,
    pub paths: Vec<PathDraw>,
    /// The server sends (a download) instead of the client.
    pub download: bool,
    /// A sized transfer (bytes), else bulk for the whole run.
    pub bytes: Option<u64>,
    /// Socket buffers (both), else the defaults.
    pub buf_bytes: Option<u64>,
    pub cc: &'static str,
    pub path_manager: &'static str,
    /// The path cut (down at `CUT_DOWN_S`, up at `CUT_UP_S`).
    pub cut: Option<usize>,
}

const MSS_WIRE: f64 = 1500.0 * 8.0;
const CUT_DOWN_S: f64 = 10.0;
const CUT_UP_S: f64 = 20.0;
/// Goodput is averaged from here, after slow start on the slowest paths.
const WARMUP_S: f64 = 3.0;

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// Drop-tail limit in packets for `rate` and the path's round trip: at
/// least 4 packets, whatever the rule gives.
fn packets(mbps: f64, secs: f64) -> u32 {
    ((mbps * 1e6 * secs / MSS_WIRE).round() as u32).max(4)
}

fn draw_path(d: &mut Draw) -> PathDraw {
    let down = round1(d.log_uniform(1.0, 100.0));
    let up = if d.chance(0.5) { round1((down * d.log_uniform(0.1, 1.0)).max(1.0)) } else { down };
    let delay = d.uniform(0.0, 100.0).round();
    let rtt = 2.0 * delay / 1e3;
    let (queue_down, queue_up, queue_rule) = if d.chance(0.5) {
        let bdps = d.log_uniform(0.25, 4.0);
        (packets(down, rtt * bdps), packets(up, rtt * bdps), format!("{bdps:.2} BDP"))
    } else {
        let ms = d.log_uniform(5.0, 200.0).round();
        (packets(down, ms / 1e3), packets(up, ms / 1e3), format!("{ms} ms"))
    };
    PathDraw { down_mbps: down, up_mbps: up, delay_ms: delay, queue_down, queue_up, queue_rule, loss: 0.0 }
}

/// Stream `k` of case `i` of the draw from `seed`: one stream per case
/// (and one for its role), so case i is the same whatever N is. Seed, case
/// and stream each go through a SplitMix64 step before the next is mixed
/// in: a start state that is the seed times SplitMix64's own increment
/// made seed s + 1's stream seed s's shifted by one number, and the cases
/// of neighbouring seeds shared paths.
fn stream(seed: u64, i: u64, k: u64) -> SplitMix64 {
    let mut s = seed;
    let mut s = splitmix64(&mut s) ^ i;
    let mut s = splitmix64(&mut s) ^ k;
    SplitMix64::new(splitmix64(&mut s))
}

/// Case `i` of the draw from `seed`.
pub fn draw_case(seed: u64, i: u64) -> CaseDraw {
    let stream = |k: u64| stream(seed, i, k);
    let role = if Draw(stream(1)).below(TUNING_ONE_IN) == 0 { Role::Tuning } else { Role::HeldOut };
    let mut d = Draw(stream(2));
    let n = 2 + d.below(3) as usize;
    let mut paths: Vec<PathDraw> = (0..n).map(|_| draw_path(&mut d)).collect();
    let lossy = (d.below(3) as usize).min(n);
    for _ in 0..lossy {
        let p = d.below(n as u64) as usize;
        paths[p].loss = (d.uniform(0.001, 0.10) * 1000.0).round() / 1000.0;
    }
    let download = d.chance(0.5);
    let cut = d.chance(0.25).then(|| d.below(n as u64) as usize);
    // Sized transfers only without a cut (the cut needs traffic at 20 s):
    // 0.5 to 20 MB, at most what the paths carry in 5 s, a lossy path
    // counted at 1 Mbit/s at most (cubic and reno at a few per cent loss),
    // so that the transfer ends within the run's 30 s.
    let bytes = (cut.is_none() && d.chance(1.0 / 3.0)).then(|| {
        let rate: f64 = paths.iter().map(|p| if download { p.down_mbps } else { p.up_mbps }.min(if p.loss > 0.0 { 1.0 } else { f64::MAX })).sum();
        let cap = rate * 1e6 / 8.0 * 5.0;
        d.log_uniform(0.5e6, 20e6).min(cap).max(100e3).round() as u64
    });
    let buf_bytes = d.chance(0.5).then(|| (d.log_uniform(64e3, 4e6) / 1e3).round() as u64 * 1000);
    let cc = if d.chance(0.5) { "cubic" } else { "reno" };
    let path_manager = if d.chance(0.5) { "fullmesh" } else { "endpoints" };
    CaseDraw { name: format!("r{seed}-{i:03}"), role, paths, download, bytes, buf_bytes, cc, path_manager, cut }
}

impl CaseDraw {
    pub fn duration_s(&self) -> f64 {
        if self.cut.is_some() || self.bytes.is_some() {
            30.0
        } else {
            20.0
        }
    }

    /// One line for tables.
    pub fn description(&self) -> String {
        let mut s = String::new();
        for (i, p) in self.paths.iter().enumerate() {
            let rate = if p.up_mbps == p.down_mbps { format!("{}", p.down_mbps) } else { format!("{}/{}", p.down_mbps, p.up_mbps) };
            let _ = write!(s, "{}{rate} Mbit/s {} ms q {}", if i > 0 { " + " } else { "" }, p.delay_ms, p.queue_rule);
            if p.loss > 0.0 {
                let _ = write!(s, " loss {:.1}%", p.loss * 100.0);
            }
        }
        let what = match self.bytes {
            Some(b) => format!("{:.1} MB", b as f64 / 1e6),
            None => "bulk".into(),
        };
        let _ = write!(s, "; {} {what}; {}; {}", if self.download { "download" } else { "upload" }, self.cc, self.path_manager);
        if let Some(b) = self.buf_bytes {
            let _ = write!(s, "; buffers {} KB", b / 1000);
        }
        if let Some(c) = self.cut {
            let _ = write!(s, "; path{c} cut {CUT_DOWN_S}-{CUT_UP_S} s");
        }
        s
    }

    /// The scenario file.
    pub fn scenario(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# Drawn by `mplab validate --random` (docs/validation.md, \"Random cases\").");
        let _ = writeln!(s, "name = {:?}", self.name);
        let _ = writeln!(s, "description = {:?}", self.description());
        let _ = writeln!(s, "duration = \"{}s\"", self.duration_s());
        let _ = writeln!(s, "\n[[nodes]]\nname = \"client\"\n\n[[nodes]]\nname = \"server\"");
        for (i, p) in self.paths.iter().enumerate() {
            let _ = writeln!(s, "\n[[links]]\nname = \"path{i}\"\na = \"client:eth{i}\"\nb = \"server:eth{i}\"");
            let _ = writeln!(s, "a_addr = \"10.0.{i}.2/24\"\nb_addr = \"10.0.{i}.1/24\"");
            let _ = writeln!(s, "delay = \"{}ms\"", p.delay_ms);
            if p.loss > 0.0 {
                let _ = writeln!(s, "loss = {}", p.loss);
            }
            // `ab` is client to server (up), `ba` server to client (down).
            let _ = writeln!(s, "rate = \"{}Mbit\"", p.up_mbps);
            let _ = writeln!(s, "queue = {{ kind = \"droptail\", packets = {} }}", p.queue_up);
            let _ = writeln!(s, "[links.ba]\nrate = \"{}Mbit\"\nqueue = {{ kind = \"droptail\", packets = {} }}", p.down_mbps, p.queue_down);
        }
        let _ = writeln!(s, "\n[transport.tcp]\ncc = {:?}", self.cc);
        if let Some(b) = self.buf_bytes {
            let _ = writeln!(s, "rcv_buf = \"{}KB\"\nsnd_buf = \"{}KB\"", b / 1000, b / 1000);
        }
        let _ = writeln!(s, "\n[transport.mptcp]\npath_manager = {:?}\ncc = {:?}", self.path_manager, self.cc);
        if self.path_manager == "fullmesh" {
            // Every pair, within Linux's limit of 8 extra subflows.
            let n = self.paths.len() as u32;
            let _ = writeln!(s, "limits = {{ subflows = {}, add_addr_accepted = {} }}", (n * n - 1).min(8), n - 1);
        }
        if self.path_manager == "endpoints" {
            // The client's other interfaces are subflow endpoints, the
            // server's other addresses are announced: one subflow a path.
            for i in 1..self.paths.len() {
                let _ = writeln!(s, "\n[[transport.mptcp.endpoints]]\nnode = \"client\"\niface = \"eth{i}\"\nflags = [\"subflow\"]");
            }
        }
        let _ = writeln!(s, "\n[[flows]]\nname = \"x\"\nfrom = \"client\"\nto = \"server\"\ntransport = \"mptcp\"");
        let _ = writeln!(s, "start_jitter = \"20ms\"");
        match (self.download, self.bytes) {
            (false, None) => {
                let _ = writeln!(s, "app = \"bulk\"");
            }
            (false, Some(b)) => {
                let _ = writeln!(s, "app = \"bulk\"\nbytes = \"{b}B\"");
            }
            (true, b) => {
                // A download is always sized: a bulk one is larger than
                // the run can carry.
                let big = self.paths.iter().map(|p| p.down_mbps).sum::<f64>() * 1e6 / 8.0 * self.duration_s() * 2.0;
                let _ = writeln!(s, "app = \"download\"\nbytes = \"{}B\"", b.unwrap_or(big as u64));
            }
        }
        if let Some(c) = self.cut {
            let _ = writeln!(s, "\n[[events]]\nat = \"{CUT_DOWN_S}s\"\nlink = \"path{c}\"\naction = \"down\"");
            let _ = writeln!(s, "\n[[events]]\nat = \"{CUT_UP_S}s\"\nlink = \"path{c}\"\naction = \"up\"");
        }
        let _ = writeln!(s, "\n[probes]\ninterval = \"100ms\"\npcap = []");
        s
    }

    /// What is compared: completion time of a sized transfer, else goodput
    /// after the warm-up (before the cut, and the recovery after it).
    pub fn metrics(&self) -> Vec<Metric> {
        let rel = Tolerance::Relative(TOLERANCE);
        if self.bytes.is_some() {
            return vec![Metric::Completion { flow: None, tolerance: rel }];
        }
        match self.cut {
            None => vec![Metric::Goodput { flow: None, window: Some((WARMUP_S, self.duration_s())), tolerance: rel }],
            Some(c) => {
                let p = &self.paths[c];
                let rate = if self.download { p.down_mbps } else { p.up_mbps };
                vec![
                    Metric::Goodput { flow: None, window: Some((WARMUP_S, CUT_DOWN_S)), tolerance: rel },
                    // Back in use: a third of its rate (at most 1 Mbit/s);
                    // within a second of the kernel, or its spread.
                    Metric::Recovery { flow: None, on: Subflows::Link(format!("path{c}")), after: CUT_UP_S, threshold_mbps: ((rate / 3.0).min(1.0) * 1000.0).round() / 1000.0, tolerance: Tolerance::Absolute(1.0) },
                ]
            }
        }
    }

    /// The suite file's entry for this case.
    fn suite_entry(&self) -> String {
        let mut s = format!("\n[[case]]\nname = {:?}\ndescription = {:?}\nscenario = \"cases/{}.toml\"\nrole = \"{}\"\n", self.name, self.description(), self.name, self.role.name());
        for m in self.metrics() {
            let tol = |t: Tolerance| match t {
                Tolerance::Relative(r) => format!("{}%", r * 100.0),
                Tolerance::Absolute(a) => format!("{a}s"),
            };
            match m {
                Metric::Goodput { window: Some((a, b)), tolerance, .. } => {
                    let _ = write!(s, "[[case.metric]]\nkind = \"goodput\"\nwindow = [\"{a}s\", \"{b}s\"]\ntolerance = \"{}\"\n", tol(tolerance));
                }
                Metric::Completion { tolerance, .. } => {
                    let _ = write!(s, "[[case.metric]]\nkind = \"completion\"\ntolerance = \"{}\"\n", tol(tolerance));
                }
                Metric::Recovery { on: Subflows::Link(l), after, threshold_mbps, tolerance, .. } => {
                    let _ = write!(s, "[[case.metric]]\nkind = \"recovery\"\nlink = \"{l}\"\nafter = \"{after}s\"\nthreshold = \"{}kbit\"\ntolerance = \"{}\"\n", (threshold_mbps * 1000.0).round(), tol(tolerance));
                }
                _ => unreachable!("random cases use goodput windows, completion and recovery by link"),
            }
        }
        s
    }
}

/// Draws `n` cases from `seed`, writes their scenarios under `dir/cases/`
/// and the suite file `dir/random.toml`, and returns the suite.
pub fn write_suite(n: u32, seed: u64, runs: u32, dir: &Path) -> Result<Suite, String> {
    let cases_dir = dir.join("cases");
    std::fs::create_dir_all(&cases_dir).map_err(|e| format!("{}: {e}", cases_dir.display()))?;
    let draws: Vec<CaseDraw> = (0..u64::from(n)).map(|i| draw_case(seed, i)).collect();
    let mut suite = format!(
        "# {n} cases drawn by `mplab validate --random {n} --seed {seed}`; rerun one with\n#   mplab validate THIS_FILE --case NAME\n\n[suite]\nname = \"random-{seed}\"\ndescription = \"Cases drawn from the space of docs/validation.md (seed {seed})\"\nruns = {runs}\n"
    );
    for c in &draws {
        let path = cases_dir.join(format!("{}.toml", c.name));
        std::fs::write(&path, c.scenario()).map_err(|e| format!("{}: {e}", path.display()))?;
        suite.push_str(&c.suite_entry());
    }
    let file = dir.join("random.toml");
    std::fs::write(&file, &suite).map_err(|e| format!("{}: {e}", file.display()))?;
    // Read back: what runs is exactly what a rerun of the file runs.
    let s = super::suite::read(&file)?;
    debug_assert_eq!(s.cases.len(), draws.len());
    Ok(s)
}

/// The scenario of a case (for tests and `--case`): where it was written.
pub fn case_path(dir: &Path, case: &Case) -> PathBuf {
    dir.join("cases").join(format!("{}.toml", case.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_is_the_same_whatever_the_number_drawn() {
        assert_eq!(draw_case(7, 3), draw_case(7, 3));
        assert_ne!(draw_case(7, 3), draw_case(8, 3));
    }

    /// Neighbouring seeds and cases draw unrelated numbers: no stream is
    /// another's shifted (the first eight numbers of 50 seeds x 50 cases x
    /// both streams, 40,000 numbers, are all different).
    #[test]
    fn no_stream_is_another_shifted() {
        let mut seen = std::collections::HashSet::new();
        for seed in 1..=50 {
            for i in 0..50 {
                for k in 1..=2 {
                    let mut s = stream(seed, i, k);
                    for n in 0..8 {
                        let v = s.next_u64();
                        assert!(seen.insert(v), "seed {seed}, case {i}, stream {k}: number {n} drawn before");
                    }
                }
            }
        }
    }

    #[test]
    fn draws_stay_inside_the_documented_space() {
        let mut roles = [0; 2];
        for i in 0..300 {
            let c = draw_case(1, i);
            assert!((2..=4).contains(&c.paths.len()));
            assert!(c.paths.iter().filter(|p| p.loss > 0.0).count() <= 2);
            for p in &c.paths {
                assert!((1.0..=100.0).contains(&p.down_mbps) && (1.0..=p.down_mbps).contains(&p.up_mbps), "{p:?}");
                assert!((0.0..=100.0).contains(&p.delay_ms) && (0.0..=0.1).contains(&p.loss));
                assert!(p.queue_down >= 4 && p.queue_up >= 4);
            }
            if let Some(b) = c.bytes {
                assert!(c.cut.is_none() && (100_000..=20_000_000).contains(&b));
            }
            roles[(c.role == Role::HeldOut) as usize] += 1;
        }
        // One in three tuning, drawn: 100 expected of 300.
        assert!((70..=130).contains(&roles[0]), "{roles:?}");
    }

    /// Every drawn scenario is a valid scenario file, and the suite file
    /// written beside them reads back with the roles and metrics drawn.
    #[test]
    fn cases_are_ordinary_scenarios_and_the_suite_reads_back() {
        let dir = std::env::temp_dir().join(format!("mplab-random-{}", std::process::id()));
        let suite = write_suite(12, 5, 2, &dir).unwrap();
        assert_eq!(suite.cases.len(), 12);
        assert_eq!(suite.runs, 2);
        for (i, case) in suite.cases.iter().enumerate() {
            let d = draw_case(5, i as u64);
            assert_eq!(case.role, d.role);
            assert_eq!(case.metrics, d.metrics());
            let sc = mplab_scenario::Scenario::from_file(&case_path(&dir, case)).unwrap_or_else(|e| panic!("{e}"));
            let net = sc.resolve().unwrap_or_else(|e| panic!("{}: {e}", case.name));
            assert_eq!(net.links.len(), d.paths.len());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
